//! Branding: the logo and the primary colour of the tenant's hosted pages, and the app's terms
//! and privacy policy that the hosted sign-up links.
//!
//! One section of the dashboard's settings, in a file of its own as every section is: its
//! request and answer types and its read and write routes; the rules of its fields are the
//! settings' own (`settings/rules.rs`), checked by the tenant actor.

use axum::Json;
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::{
    settings::{BrandingPatch, SettingsChange},
    SettingsView,
};
use utoipa::ToSchema;

use super::Caller;
use crate::http::{
    error::{ApiError, ErrorBody},
    extract::ApiJson,
    fields::nullable,
    path_id::TenantSlug,
};

/// How the tenant's hosted pages look.
#[derive(Serialize, ToSchema)]
pub struct BrandingResponse {
    /// Shown above each hosted page; null: the tenant's name alone.
    pub logo_url: Option<String>,
    /// The primary buttons' colour, `#rrggbb`; null: the pages' own blue.
    pub primary_color: Option<String>,
    /// The app's terms, linked from the hosted sign-up's consent; null: not linked.
    pub terms_url: Option<String>,
    /// The app's privacy policy, linked from the hosted sign-up's consent; null: not linked.
    pub privacy_url: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchBrandingRequest {
    /// An https URL of at most 2048 characters; null clears it.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>, nullable, max_length = 2048)]
    pub logo_url: Option<Option<String>>,
    /// `#rrggbb`, dark enough for white text on it (a contrast of 4.5:1, WCAG AA); null
    /// clears it.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>, nullable, pattern = "^#[0-9A-Fa-f]{6}$")]
    pub primary_color: Option<Option<String>>,
    /// An https URL of at most 2048 characters; null clears it.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>, nullable, max_length = 2048)]
    pub terms_url: Option<Option<String>>,
    /// An https URL of at most 2048 characters; null clears it.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>, nullable, max_length = 2048)]
    pub privacy_url: Option<Option<String>>,
}

fn branding_response(v: SettingsView) -> BrandingResponse {
    let b = v.settings.branding;
    BrandingResponse {
        logo_url: b.logo_url,
        primary_color: b.primary_color,
        terms_url: b.terms_url,
        privacy_url: b.privacy_url,
    }
}

/// The hosted pages' branding (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/settings/branding", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    responses(
        (status = 200, description = "The branding", body = BrandingResponse),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_branding(caller: Caller) -> Result<Json<BrandingResponse>, ApiError> {
    Ok(Json(branding_response(caller.read().await?)))
}

/// Changes the hosted pages' logo or colour (owner); audited as
/// `settings.branding.updated`. The pages show it at once.
#[utoipa::path(patch, path = "/v1/auth/dashboard/tenants/{slug}/settings/branding", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    request_body = PatchBrandingRequest,
    responses(
        (status = 200, description = "The stored branding", body = BrandingResponse),
        (status = 400, description = "`validation/invalid_request` naming each bad field", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn patch_branding(
    caller: Caller,
    ApiJson(req): ApiJson<PatchBrandingRequest>,
) -> Result<Json<BrandingResponse>, ApiError> {
    let change = SettingsChange::Branding(Box::new(BrandingPatch {
        logo_url: req.logo_url,
        primary_color: req.primary_color,
        terms_url: req.terms_url,
        privacy_url: req.privacy_url,
    }));
    Ok(Json(branding_response(caller.update(change).await?)))
}
