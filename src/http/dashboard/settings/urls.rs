//! Where browsers come from and go back to: the origins allowed to call the end-user API,
//! and the app's site and redirect URLs.
//!
//! One section of the dashboard's settings, in a file of its own as every section is: its
//! request and answer types, the rules of its fields and its read and write routes.

use crate::origin::normalize_origin;
use axum::Json;
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::{
    settings::{
        rules::{SettingsFaults, MAX_ALLOWED_ORIGINS, MAX_REDIRECT_URLS},
        SettingsChange, UrlSettings,
    },
    SettingsView,
};
use utoipa::ToSchema;

use super::{normalize_entries, Caller};
use crate::http::{
    error::{ApiError, ErrorBody},
    extract::ApiJson,
    fields::is_app_url,
    path_id::TenantSlug,
};

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutCorsRequest {
    /// Exact browser origins (`scheme://host[:port]`, no path) that may call the end-user
    /// API; at most 50. Empty: any origin (the API key is public and end-user calls carry no
    /// cookie, so an origin check guards against other sites reusing the key, not against
    /// credential theft). Required; the list replaces the stored one.
    #[schema(max_items = 50)]
    pub allowed_origins: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub struct CorsResponse {
    /// Normalized: lowercase scheme and host, punycode, no default port; de-duplicated.
    pub allowed_origins: Vec<String>,
}

fn cors_response(v: SettingsView) -> CorsResponse {
    CorsResponse {
        allowed_origins: v.settings.allowed_origins,
    }
}

/// The browser origins allowed to call the end-user API (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/settings/cors", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    responses(
        (status = 200, description = "The list; empty: any origin", body = CorsResponse),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_cors(caller: Caller) -> Result<Json<CorsResponse>, ApiError> {
    Ok(Json(cors_response(caller.read().await?)))
}

/// Replaces the list of browser origins allowed to call the end-user API (owner). A request
/// from another origin with this tenant's key is then refused with 403
/// `cors/origin_not_allowed` before anything happens.
#[utoipa::path(put, path = "/v1/auth/dashboard/tenants/{slug}/settings/cors", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    request_body = PutCorsRequest,
    responses(
        (status = 200, description = "The stored list", body = CorsResponse),
        (status = 400, description = "`validation/invalid_request` naming each bad entry", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn put_cors(
    caller: Caller,
    ApiJson(req): ApiJson<PutCorsRequest>,
) -> Result<Json<CorsResponse>, ApiError> {
    caller.owner()?;
    let mut f = SettingsFaults::new();
    let origins = normalize_entries(
        &mut f,
        "allowed_origins",
        &req.allowed_origins,
        MAX_ALLOWED_ORIGINS,
        normalize_origin,
        |shown| format!("{shown:?} is not an origin (scheme://host[:port], no path)"),
    );
    let change = SettingsChange::AllowedOrigins(origins);
    Ok(Json(cors_response(caller.apply(f, change).await?)))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutUrlsRequest {
    /// The app's address: where the hosted pages send users when a link names no
    /// `redirect_to`. An absolute `https` URL (`http` only for `localhost` and `127.0.0.1`),
    /// without a fragment or user info; `null`: none. Required.
    #[schema(format = "uri", max_length = 2048)]
    pub site_url: Option<String>,
    /// Other exact URLs a request's `redirect_to` may name (the same rules); at most 50.
    /// Required; the list replaces the stored one.
    #[schema(max_items = 50)]
    pub redirect_urls: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub struct UrlsResponse {
    pub site_url: Option<String>,
    pub redirect_urls: Vec<String>,
}

fn urls_response(v: SettingsView) -> UrlsResponse {
    UrlsResponse {
        site_url: v.settings.urls.site_url,
        redirect_urls: v.settings.urls.redirect_urls,
    }
}

/// The tenant's site URL and redirect URLs (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/settings/urls", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    responses(
        (status = 200, description = "The URLs", body = UrlsResponse),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_urls(caller: Caller) -> Result<Json<UrlsResponse>, ApiError> {
    Ok(Json(urls_response(caller.read().await?)))
}

/// Replaces the tenant's site URL and redirect URLs (owner); audited as
/// `settings.urls.updated`. Links mailed earlier with a `redirect_to` that is no longer
/// listed then end at the site URL.
#[utoipa::path(put, path = "/v1/auth/dashboard/tenants/{slug}/settings/urls", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    request_body = PutUrlsRequest,
    responses(
        (status = 200, description = "The stored URLs", body = UrlsResponse),
        (status = 400, description = "`validation/invalid_request` naming each bad entry", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn put_urls(
    caller: Caller,
    ApiJson(req): ApiJson<PutUrlsRequest>,
) -> Result<Json<UrlsResponse>, ApiError> {
    caller.owner()?;
    let mut f = SettingsFaults::new();
    const WHY: &str = "must be an absolute https URL (http only for localhost and 127.0.0.1), \
                       without user info or fragment, at most 2048 characters";
    if let Some(site) = &req.site_url {
        f.check("site_url", is_app_url(site), WHY);
    }
    let redirect_urls = normalize_entries(
        &mut f,
        "redirect_urls",
        &req.redirect_urls,
        MAX_REDIRECT_URLS,
        |u| is_app_url(u).then(|| u.to_owned()),
        |shown| format!("{shown:?} {WHY}"),
    );
    let change = SettingsChange::Urls(UrlSettings {
        site_url: req.site_url,
        redirect_urls,
    });
    Ok(Json(urls_response(caller.apply(f, change).await?)))
}
