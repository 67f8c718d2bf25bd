//! A tenant's public token metadata: its JWKS and OpenID discovery document. No API key:
//! apps and resource servers fetch these to verify access tokens themselves.

use axum::{
    extract::{Path, State},
    http::{header, HeaderValue},
    response::{IntoResponse, Response},
    Json,
};
use serde::Serialize;
use tessera_actors::TenantHandle;
use utoipa::ToSchema;

use super::{
    bearer::issuer,
    error::{ApiError, ErrorBody},
};
use crate::app::AppState;

fn tenant(state: &AppState, slug: &str) -> Result<TenantHandle, ApiError> {
    state
        .directory
        .tenant_for_slug(slug)
        .ok_or_else(|| ApiError::not_found("tenant"))
}

/// Short enough that a rotation is seen soon; the previous key stays published meanwhile.
const CACHE: HeaderValue = HeaderValue::from_static("public, max-age=60");

/// The tenant's public signing keys: the current one and any retired one whose tokens may
/// still be alive.
#[utoipa::path(get, path = "/v1/tenants/{slug}/.well-known/jwks.json", tag = "tokens",
    params(("slug" = String, Path, description = "The tenant's slug")),
    responses(
        (status = 200, description = "A JWK Set (RFC 7517) of ES256 keys", body = Object),
        (status = 404, description = "`resource/not_found`", body = ErrorBody),
    ))]
pub async fn jwks(
    State(state): State<AppState>,
    Path(slug): Path<String>,
) -> Result<Response, ApiError> {
    let keys = tenant(&state, &slug)?.keys().await?;
    let mut resp = Json(keys.jwks().clone()).into_response();
    resp.headers_mut().insert(header::CACHE_CONTROL, CACHE);
    Ok(resp)
}

/// OpenID Provider metadata for the tenant's issuer. It lists only what is served now.
#[derive(Serialize, ToSchema)]
pub struct DiscoveryDocument {
    pub issuer: String,
    pub jwks_uri: String,
    pub subject_types_supported: Vec<&'static str>,
    pub id_token_signing_alg_values_supported: Vec<&'static str>,
    pub claims_supported: Vec<&'static str>,
    pub acr_values_supported: Vec<&'static str>,
}

/// OpenID discovery for the tenant's issuer.
#[utoipa::path(get, path = "/v1/tenants/{slug}/.well-known/openid-configuration", tag = "tokens",
    params(("slug" = String, Path, description = "The tenant's slug")),
    responses(
        (status = 200, description = "The discovery document", body = DiscoveryDocument),
        (status = 404, description = "`resource/not_found`", body = ErrorBody),
    ))]
pub async fn openid_configuration(
    State(state): State<AppState>,
    Path(slug): Path<String>,
) -> Result<Response, ApiError> {
    let t = tenant(&state, &slug)?;
    let iss = issuer(&state, &t.slug);
    let doc = DiscoveryDocument {
        jwks_uri: format!("{iss}/.well-known/jwks.json"),
        issuer: iss,
        subject_types_supported: vec!["public"],
        id_token_signing_alg_values_supported: vec!["ES256"],
        claims_supported: vec![
            "iss",
            "sub",
            "aud",
            "exp",
            "iat",
            "jti",
            "sid",
            "tid",
            "is_anonymous",
            "aal",
            "acr",
            "amr",
        ],
        acr_values_supported: vec!["aal1", "aal2"],
    };
    let mut resp = Json(doc).into_response();
    resp.headers_mut().insert(header::CACHE_CONTROL, CACHE);
    Ok(resp)
}
