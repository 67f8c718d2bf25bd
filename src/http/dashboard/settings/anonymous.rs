//! Guest sign-ins: on or off, and how long an inactive guest is kept.
//!
//! One section of the dashboard's settings, in a file of its own as every section is: its
//! request and answer types, the rules of its fields and its read and write routes.

use axum::{http::HeaderMap, Json};
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::{
    settings::{
        rules::{SettingsFaults, GUEST_TTL_DAYS},
        SettingsChange,
    },
    SettingsView,
};
use utoipa::ToSchema;

use super::{confirmed, not_null, Caller};
use crate::http::{
    error::{ApiError, ErrorBody},
    extract::ApiJson,
    fields::nullable,
    path_id::TenantSlug,
};

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateTenantAnonymousSettingsRequest {
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = bool, required = false)]
    pub anonymous_signins_enabled: Option<Option<bool>>,
    /// 1-180.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = i64, required = false, minimum = 1, maximum = 180)]
    pub anonymous_user_ttl_days: Option<Option<i64>>,
}

#[derive(Serialize, ToSchema)]
pub struct AnonymousSettingsResponse {
    pub anonymous_signins_enabled: bool,
    pub anonymous_user_ttl_days: u32,
}

fn anonymous_response(v: SettingsView) -> AnonymousSettingsResponse {
    AnonymousSettingsResponse {
        anonymous_signins_enabled: v.settings.anonymous.anonymous_signins_enabled,
        anonymous_user_ttl_days: v.settings.anonymous.anonymous_user_ttl_days,
    }
}

/// Guest sign-in settings (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/settings/anonymous", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    responses(
        (status = 200, description = "Guest sign-in settings", body = AnonymousSettingsResponse),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_anonymous(caller: Caller) -> Result<Json<AnonymousSettingsResponse>, ApiError> {
    Ok(Json(anonymous_response(caller.read().await?)))
}

/// Updates guest sign-in settings (owner). Enabling them for the first time while the default
/// role grants more than read access needs `X-Service-Confirm: privileged-default-role`.
#[utoipa::path(patch, path = "/v1/auth/dashboard/tenants/{slug}/settings/anonymous", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("X-Service-Confirm" = Option<String>, Header, description = "`privileged-default-role` to confirm"),
    ),
    request_body = UpdateTenantAnonymousSettingsRequest,
    responses(
        (status = 200, description = "The updated settings", body = AnonymousSettingsResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
        (status = 409, description = "`anonymous/privileged_default_role_unconfirmed`", body = ErrorBody),
    ))]
pub async fn patch_anonymous(
    caller: Caller,
    headers: HeaderMap,
    ApiJson(req): ApiJson<UpdateTenantAnonymousSettingsRequest>,
) -> Result<Json<AnonymousSettingsResponse>, ApiError> {
    caller.owner()?;
    let mut f = SettingsFaults::new();
    let enabled = not_null(
        &mut f,
        "anonymous_signins_enabled",
        &req.anonymous_signins_enabled,
    );
    let ttl = not_null(
        &mut f,
        "anonymous_user_ttl_days",
        &req.anonymous_user_ttl_days,
    );
    let ttl_days = ttl.and_then(|v| GUEST_TTL_DAYS.take(&mut f, "anonymous_user_ttl_days", v));
    let confirmed_privileged = confirmed(&headers, "privileged-default-role");
    let change = SettingsChange::Anonymous {
        enabled,
        ttl_days,
        confirmed_privileged,
    };
    Ok(Json(anonymous_response(caller.apply(f, change).await?)))
}
