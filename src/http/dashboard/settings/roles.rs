//! The default role of new end users.
//!
//! One section of the dashboard's settings, in a file of its own as every section is: its
//! request and answer types, the rules of its fields and its read and write routes.

use axum::Json;
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::{
    settings::{DefaultRole, SettingsChange},
    SettingsView,
};
use utoipa::{openapi::Object, ToSchema};

use super::{enum_schema, Caller};
use crate::http::{
    error::{ApiError, ErrorBody},
    extract::ApiJson,
    path_id::TenantSlug,
};

fn default_role_schema() -> Object {
    enum_schema(&["reader", "member", "admin"]).build()
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateTenantRolesRequest {
    /// `reader` (read access only), `member` or `admin`.
    #[serde(default)]
    #[schema(schema_with = default_role_schema, required = true)]
    pub default_role: String,
}

#[derive(Serialize, ToSchema)]
pub struct RolesResponse {
    /// The role new end users get.
    pub default_role: DefaultRoleName,
}

/// `reader`, `member` or `admin`.
#[derive(Serialize, ToSchema)]
#[serde(transparent)]
pub struct DefaultRoleName(pub String);

fn roles_response(v: SettingsView) -> RolesResponse {
    let name = match v.settings.default_role {
        DefaultRole::Reader => "reader",
        DefaultRole::Member => "member",
        DefaultRole::Admin => "admin",
    };
    RolesResponse {
        default_role: DefaultRoleName(name.into()),
    }
}

/// The default role of new end users (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/settings/roles", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    responses(
        (status = 200, description = "The default role", body = RolesResponse),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_roles(caller: Caller) -> Result<Json<RolesResponse>, ApiError> {
    Ok(Json(roles_response(caller.read().await?)))
}

/// Sets the default role of new end users (owner).
#[utoipa::path(patch, path = "/v1/auth/dashboard/tenants/{slug}/settings/roles", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    request_body = UpdateTenantRolesRequest,
    responses(
        (status = 200, description = "The default role", body = RolesResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn patch_roles(
    caller: Caller,
    ApiJson(req): ApiJson<UpdateTenantRolesRequest>,
) -> Result<Json<RolesResponse>, ApiError> {
    caller.owner()?;
    let role = match req.default_role.as_str() {
        "reader" => DefaultRole::Reader,
        "member" => DefaultRole::Member,
        "admin" => DefaultRole::Admin,
        _ => {
            return Err(ApiError::invalid_field(
                "default_role",
                "must be reader, member or admin",
            ))
        }
    };
    let change = SettingsChange::DefaultRole(role);
    Ok(Json(roles_response(caller.update(change).await?)))
}
