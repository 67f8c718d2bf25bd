//! A tenant's public token metadata: its JWKS and OpenID discovery document. No API key:
//! apps and resource servers fetch these to verify access tokens themselves.

use super::extract::tenant_by_slug;
use axum::{
    extract::{Path, State},
    http::{header, HeaderValue},
    response::{IntoResponse, Response},
    Json,
};
use serde::Serialize;
use utoipa::ToSchema;

use super::{
    bearer::issuer,
    error::{ApiError, ErrorBody},
};
use crate::app::AppState;
use crate::http::path_id::TenantSlug;

/// Short enough that a rotation is seen soon; the previous key stays published meanwhile.
const CACHE: HeaderValue = HeaderValue::from_static("public, max-age=60");

/// `body` as JSON, cached for [`CACHE`].
fn cached(body: impl Serialize) -> Response {
    let mut resp = Json(body).into_response();
    resp.headers_mut().insert(header::CACHE_CONTROL, CACHE);
    resp
}

/// The tenant's public signing keys: the current one and any retired one whose tokens may
/// still be alive.
#[utoipa::path(get, path = "/v1/tenants/{slug}/.well-known/jwks.json", tag = "tokens",
    params(TenantSlug),
    responses(
        (status = 200, description = "A JWK Set (RFC 7517) of ES256 keys", body = Object),
        (status = 404, description = "`resource/not_found`", body = ErrorBody),
    ))]
pub async fn jwks(
    State(state): State<AppState>,
    Path(slug): Path<String>,
) -> Result<Response, ApiError> {
    let keys = tenant_by_slug(&state, &slug)?.keys().await?;
    Ok(cached(keys.jwks()))
}

/// OpenID Provider metadata for the tenant's issuer. It lists only what is served now.
#[derive(Serialize, ToSchema)]
pub struct DiscoveryDocument {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub userinfo_endpoint: String,
    pub revocation_endpoint: String,
    pub introspection_endpoint: String,
    pub end_session_endpoint: String,
    /// RFC 8628.
    pub device_authorization_endpoint: String,
    /// CIBA (poll mode).
    pub backchannel_authentication_endpoint: String,
    pub backchannel_token_delivery_modes_supported: Vec<&'static str>,
    pub backchannel_user_code_parameter_supported: bool,
    /// RFC 7591; present only while the tenant allows dynamic registration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registration_endpoint: Option<String>,
    /// RFC 8707 resource indicators are taken at the authorization and token endpoints.
    pub resource_indicators_supported: bool,
    pub jwks_uri: String,
    pub scopes_supported: Vec<&'static str>,
    pub response_types_supported: Vec<&'static str>,
    pub response_modes_supported: Vec<&'static str>,
    pub grant_types_supported: Vec<&'static str>,
    pub code_challenge_methods_supported: Vec<&'static str>,
    pub token_endpoint_auth_methods_supported: Vec<&'static str>,
    pub revocation_endpoint_auth_methods_supported: Vec<&'static str>,
    pub introspection_endpoint_auth_methods_supported: Vec<&'static str>,
    pub subject_types_supported: Vec<&'static str>,
    pub id_token_signing_alg_values_supported: Vec<&'static str>,
    pub claims_supported: Vec<&'static str>,
    pub acr_values_supported: Vec<&'static str>,
    pub prompt_values_supported: Vec<&'static str>,
    pub authorization_response_iss_parameter_supported: bool,
    pub request_parameter_supported: bool,
    pub request_uri_parameter_supported: bool,
}

/// OpenID discovery for the tenant's issuer.
#[utoipa::path(get, path = "/v1/tenants/{slug}/.well-known/openid-configuration", tag = "tokens",
    params(TenantSlug),
    responses(
        (status = 200, description = "The discovery document", body = DiscoveryDocument),
        (status = 404, description = "`resource/not_found`", body = ErrorBody),
    ))]
pub async fn openid_configuration(
    State(state): State<AppState>,
    Path(slug): Path<String>,
) -> Result<Response, ApiError> {
    metadata(&state, &slug).await
}

/// OAuth 2.0 authorization server metadata (RFC 8414) for the tenant's issuer: the same
/// document as OpenID discovery, for MCP clients and other OAuth clients.
#[utoipa::path(get, path = "/v1/tenants/{slug}/.well-known/oauth-authorization-server", tag = "tokens",
    params(TenantSlug),
    responses(
        (status = 200, description = "The metadata", body = DiscoveryDocument),
        (status = 404, description = "`resource/not_found`", body = ErrorBody),
    ))]
pub async fn authorization_server(
    State(state): State<AppState>,
    Path(slug): Path<String>,
) -> Result<Response, ApiError> {
    metadata(&state, &slug).await
}

/// The same at RFC 8414 3.1's own place: `/.well-known/oauth-authorization-server` followed
/// by the issuer's path.
#[utoipa::path(get, path = "/.well-known/oauth-authorization-server/v1/tenants/{slug}", tag = "tokens",
    params(TenantSlug),
    responses(
        (status = 200, description = "The metadata", body = DiscoveryDocument),
        (status = 404, description = "`resource/not_found`", body = ErrorBody),
    ))]
pub async fn authorization_server_root(
    State(state): State<AppState>,
    Path(slug): Path<String>,
) -> Result<Response, ApiError> {
    metadata(&state, &slug).await
}

async fn metadata(state: &AppState, slug: &str) -> Result<Response, ApiError> {
    let t = tenant_by_slug(state, slug)?;
    let dcr = t
        .call(|reply| tessera_actors::TenantMsg::GetOverview { reply })
        .await?
        .settings
        .dynamic_client_registration;
    let iss = issuer(state, &t.slug);
    let oauth = format!("{iss}/oauth");
    let secret_methods = vec!["client_secret_basic", "client_secret_post"];
    let doc = DiscoveryDocument {
        authorization_endpoint: format!("{oauth}/authorize"),
        token_endpoint: format!("{oauth}/token"),
        userinfo_endpoint: format!("{oauth}/userinfo"),
        revocation_endpoint: format!("{oauth}/revoke"),
        introspection_endpoint: format!("{oauth}/introspect"),
        end_session_endpoint: format!("{oauth}/end_session"),
        device_authorization_endpoint: format!("{oauth}/device_authorization"),
        backchannel_authentication_endpoint: format!("{oauth}/bc-authorize"),
        backchannel_token_delivery_modes_supported: vec!["poll"],
        backchannel_user_code_parameter_supported: false,
        registration_endpoint: dcr.then(|| format!("{oauth}/register")),
        resource_indicators_supported: true,
        jwks_uri: format!("{iss}/.well-known/jwks.json"),
        issuer: iss,
        scopes_supported: vec!["openid", "email", "phone", "offline_access"],
        response_types_supported: vec!["code"],
        response_modes_supported: vec!["query"],
        grant_types_supported: vec![
            "authorization_code",
            "refresh_token",
            "client_credentials",
            "urn:ietf:params:oauth:grant-type:token-exchange",
            "urn:openid:params:grant-type:ciba",
            "urn:ietf:params:oauth:grant-type:device_code",
        ],
        code_challenge_methods_supported: vec!["S256"],
        token_endpoint_auth_methods_supported: vec![
            "client_secret_basic",
            "client_secret_post",
            "none",
        ],
        revocation_endpoint_auth_methods_supported: vec![
            "client_secret_basic",
            "client_secret_post",
            "none",
        ],
        introspection_endpoint_auth_methods_supported: secret_methods,
        subject_types_supported: vec!["public"],
        id_token_signing_alg_values_supported: vec!["RS256", "ES256"],
        claims_supported: vec![
            "iss",
            "sub",
            "aud",
            "exp",
            "iat",
            "auth_time",
            "nonce",
            "acr",
            "amr",
            "azp",
            "at_hash",
            "email",
            "email_verified",
            "phone_number",
            "phone_number_verified",
            "jti",
            "sid",
            "tid",
            "client_id",
            "scope",
            "act",
            "is_anonymous",
            "aal",
        ],
        acr_values_supported: vec!["aal1", "aal2"],
        prompt_values_supported: vec!["none", "login", "consent"],
        authorization_response_iss_parameter_supported: true,
        request_parameter_supported: false,
        request_uri_parameter_supported: false,
    };
    Ok(cached(doc))
}
