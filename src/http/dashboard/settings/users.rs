//! What users may do about their own accounts, and their default language.
//!
//! One section of the dashboard's settings, in a file of its own as every section is: its
//! request and answer types, the rules of its fields and its read and write routes.

use axum::Json;
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::{
    settings::{rules::SettingsFaults, SettingsChange},
    SettingsView,
};
use utoipa::ToSchema;

use super::Caller;
use crate::http::{
    error::{ApiError, ErrorBody},
    extract::ApiJson,
    path_id::TenantSlug,
};

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchUserSettingsRequest {
    /// Whether `DELETE /v1/users/me` lets a user erase their own account (default true).
    pub self_service_deletion_enabled: Option<bool>,
    /// The language of mail and hosted pages for users who chose none: `en` (default),
    /// `pl`, `de`, `fr` or `es`.
    #[schema(pattern = "^(en|pl|de|fr|es)$")]
    pub default_locale: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct UserSettingsResponse {
    pub self_service_deletion_enabled: bool,
    pub default_locale: String,
}

fn user_settings_response(v: SettingsView) -> UserSettingsResponse {
    UserSettingsResponse {
        self_service_deletion_enabled: v.settings.users.self_service_deletion_enabled,
        default_locale: v.settings.users.default_locale,
    }
}

/// What users may do about their own accounts (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/settings/users", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    responses(
        (status = 200, description = "The settings", body = UserSettingsResponse),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_users(caller: Caller) -> Result<Json<UserSettingsResponse>, ApiError> {
    Ok(Json(user_settings_response(caller.read().await?)))
}

/// Changes what users may do about their own accounts (owner); audited as
/// `settings.users.updated`.
#[utoipa::path(patch, path = "/v1/auth/dashboard/tenants/{slug}/settings/users", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    request_body = PatchUserSettingsRequest,
    responses(
        (status = 200, description = "The settings as they are now", body = UserSettingsResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn patch_users(
    caller: Caller,
    ApiJson(req): ApiJson<PatchUserSettingsRequest>,
) -> Result<Json<UserSettingsResponse>, ApiError> {
    // The languages are the pages' and the mail's, which the edge has.
    let mut f = SettingsFaults::new();
    if let Some(l) = &req.default_locale {
        f.one_of("default_locale", l, &crate::i18n::LOCALES);
    }
    let change = SettingsChange::Users {
        self_service_deletion_enabled: req.self_service_deletion_enabled,
        default_locale: req.default_locale,
    };
    Ok(Json(user_settings_response(caller.apply(f, change).await?)))
}
