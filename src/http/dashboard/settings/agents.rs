//! Agent settings: RFC 7591 dynamic registration of public clients.
//!
//! One section of the dashboard's settings, in a file of its own as every section is: its
//! request and answer types, the rules of its fields and its read and write routes.

use axum::Json;
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::{settings::SettingsChange, SettingsView};
use utoipa::ToSchema;

use super::Caller;
use crate::http::{
    error::{ApiError, ErrorBody},
    extract::ApiJson,
    path_id::TenantSlug,
};

/// The tenant's agent settings.
#[derive(Serialize, ToSchema)]
pub struct AgentSettingsResponse {
    /// Whether public clients (MCP clients) may register themselves at
    /// `/v1/tenants/{slug}/oauth/register` (RFC 7591). Such clients are `unverified` on the
    /// consent screen and registrations are limited per client address.
    pub dynamic_client_registration: bool,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchAgentSettingsRequest {
    pub dynamic_client_registration: Option<bool>,
}

fn agents_response(v: SettingsView) -> AgentSettingsResponse {
    AgentSettingsResponse {
        dynamic_client_registration: v.settings.dynamic_client_registration,
    }
}

/// The tenant's agent settings (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/settings/agents", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    responses(
        (status = 200, description = "The settings", body = AgentSettingsResponse),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_agents(caller: Caller) -> Result<Json<AgentSettingsResponse>, ApiError> {
    Ok(Json(agents_response(caller.read().await?)))
}

/// Changes the tenant's agent settings (owner); audited as `settings.agents.updated`.
#[utoipa::path(patch, path = "/v1/auth/dashboard/tenants/{slug}/settings/agents", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    request_body = PatchAgentSettingsRequest,
    responses(
        (status = 200, description = "The stored settings", body = AgentSettingsResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn patch_agents(
    caller: Caller,
    ApiJson(req): ApiJson<PatchAgentSettingsRequest>,
) -> Result<Json<AgentSettingsResponse>, ApiError> {
    caller.owner()?;
    let Some(on) = req.dynamic_client_registration else {
        return Ok(Json(agents_response(caller.read().await?)));
    };
    let change = SettingsChange::Agents {
        dynamic_client_registration: on,
    };
    Ok(Json(agents_response(caller.update(change).await?)))
}
