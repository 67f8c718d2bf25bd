//! RFC 7591 dynamic client registration, for MCP clients and other public apps that arrive
//! without an owner registering them: only while the tenant turns it on
//! (`settings/agents`), only public clients (PKCE, no secret), limited per client address,
//! and never attested, so the consent screen calls them `unverified`.

use axum::{
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::oauth_clients::{
    ClientType, NewOAuthClient, OAuthClientAnswer, OAuthClientCmd, OAuthClientProfile,
    TokenAuthMethod,
};
use utoipa::ToSchema;

use super::{split_scopes, OAuthError, OAuthErrorBody};
use crate::http::path_id::TenantSlug;
use crate::{
    app::AppState,
    http::{
        dashboard::oauth_clients::{ensure_id_token_key, id_token_alg, registry},
        error::{len_between, ApiError, ErrorBody},
        extract::{tenant_by_slug, ApiJson, ClientIp, RequestCtx},
        fields::{dedup, redirect_uri_ok, scope_ok},
    },
};

/// The client metadata a registration may carry (RFC 7591 2); other members are ignored.
#[derive(Deserialize, ToSchema)]
pub struct RegistrationRequest {
    /// 1-20 exact redirect URIs (https, http on a loopback host, or a private-use scheme).
    #[serde(default)]
    pub redirect_uris: Vec<String>,
    /// `none` (the default): only public clients register themselves.
    pub token_endpoint_auth_method: Option<String>,
    /// `authorization_code` (the default) and `refresh_token`.
    pub grant_types: Option<Vec<String>>,
    /// `code` (the default).
    pub response_types: Option<Vec<String>>,
    /// 1-64 characters, shown (marked unverified) on the consent screen.
    pub client_name: Option<String>,
    /// An https URL.
    pub logo_uri: Option<String>,
    /// Space-separated; default `openid`.
    pub scope: Option<String>,
    /// `RS256` (the default, OpenID Connect Registration's) or `ES256`.
    pub id_token_signed_response_alg: Option<String>,
}

/// The registered client (RFC 7591 3.2.1).
#[derive(Serialize, ToSchema)]
pub struct RegistrationResponse {
    pub client_id: String,
    pub client_id_issued_at: i64,
    pub client_name: String,
    pub redirect_uris: Vec<String>,
    pub token_endpoint_auth_method: &'static str,
    pub grant_types: Vec<String>,
    pub response_types: Vec<String>,
    pub scope: String,
    pub id_token_signed_response_alg: &'static str,
}

fn metadata(description: &str) -> OAuthError {
    OAuthError::new("invalid_client_metadata", description)
}

/// Registers a public client (RFC 7591), while the tenant allows it.
#[utoipa::path(post, path = "/v1/tenants/{slug}/oauth/register", tag = "agents",
    params(TenantSlug),
    request_body = RegistrationRequest,
    responses(
        (status = 201, description = "The client", body = RegistrationResponse),
        (status = 400, description = "`invalid_redirect_uri`, `invalid_client_metadata`", body = OAuthErrorBody),
        (status = 404, description = "`resource/not_found`: no such tenant, or dynamic registration is off", body = ErrorBody),
        (status = 429, description = "Too many registrations from this address", body = ErrorBody),
    ))]
pub async fn register(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    body: Result<ApiJson<RegistrationRequest>, ApiError>,
) -> Result<Response, Response> {
    let tenant = tenant_by_slug(&state, &slug).map_err(IntoResponse::into_response)?;
    let fail = |e: OAuthError| e.into_response();
    // Metadata that does not parse is RFC 7591's `invalid_client_metadata`; a body that is
    // not JSON at all, or too large, is answered as everywhere else (415, 413).
    let req = match body {
        Ok(ApiJson(req)) => req,
        Err(e) if e.status == StatusCode::BAD_REQUEST => return Err(fail(metadata(&e.message))),
        Err(e) => return Err(e.into_response()),
    };
    let method = req.token_endpoint_auth_method.as_deref().unwrap_or("none");
    if method != "none" {
        return Err(fail(metadata(
            "only public clients register themselves: token_endpoint_auth_method must be none",
        )));
    }
    if req.redirect_uris.is_empty()
        || req.redirect_uris.len() > 20
        || !req.redirect_uris.iter().all(|u| redirect_uri_ok(u))
    {
        return Err(fail(OAuthError::new(
            "invalid_redirect_uri",
            "1-20 redirect URIs: absolute, no fragment; https, http on a loopback host, or a private-use scheme with a dot",
        )));
    }
    let grant_types = req
        .grant_types
        .unwrap_or_else(|| vec!["authorization_code".to_owned()]);
    if grant_types.is_empty()
        || !grant_types
            .iter()
            .all(|g| g == "authorization_code" || g == "refresh_token")
    {
        return Err(fail(metadata(
            "grant_types may hold authorization_code and refresh_token",
        )));
    }
    let response_types = req
        .response_types
        .unwrap_or_else(|| vec!["code".to_owned()]);
    if response_types != ["code"] {
        return Err(fail(metadata("response_types must be [\"code\"]")));
    }
    let name = req
        .client_name
        .as_deref()
        .map(str::trim)
        .unwrap_or("MCP client")
        .to_owned();
    if !len_between(&name, 1, 64) {
        return Err(fail(metadata("client_name must be 1-64 characters")));
    }
    if req.logo_uri.as_deref().is_some_and(|l| {
        l.len() > 2048 || url::Url::parse(l).map_or(true, |u| u.scheme() != "https")
    }) {
        return Err(fail(metadata("logo_uri must be an https URL")));
    }
    let scopes = split_scopes(req.scope.as_deref().unwrap_or("openid"));
    if scopes.is_empty() || scopes.len() > 50 || !scopes.iter().all(|s| scope_ok(s)) {
        return Err(fail(metadata(
            "scope must name 1-50 protocol scopes or resource scope names",
        )));
    }
    let Some(alg) = id_token_alg(req.id_token_signed_response_alg.as_deref()) else {
        return Err(fail(metadata(
            "id_token_signed_response_alg must be RS256 or ES256",
        )));
    };
    ensure_id_token_key(&tenant, alg)
        .await
        .map_err(IntoResponse::into_response)?;
    let new = NewOAuthClient {
        profile: OAuthClientProfile {
            name,
            description: None,
            logo_url: req.logo_uri,
            client_type: ClientType::Public,
            token_endpoint_auth_method: Some(TokenAuthMethod::None),
            redirect_uris: dedup(req.redirect_uris),
            post_logout_redirect_uris: Vec::new(),
            allowed_scopes: scopes,
            first_party: false,
        },
        id_token_signed_response_alg: alg,
    };
    let answer = registry(&tenant, &ctx, OAuthClientCmd::Register(new, ip))
        .await
        .map_err(|e| match e.status {
            StatusCode::NOT_FOUND => ApiError::not_found("resource").into_response(),
            _ => e.into_response(),
        })?;
    let OAuthClientAnswer::Issued(issued) = answer else {
        return Err(ApiError::internal("unexpected registry answer").into_response());
    };
    let c = issued.record;
    let alg = c.id_token_alg().as_str();
    let body = RegistrationResponse {
        client_id: c.client_id,
        client_id_issued_at: c.created_at.unix_timestamp(),
        client_name: c.profile.name,
        redirect_uris: c.profile.redirect_uris,
        token_endpoint_auth_method: "none",
        grant_types,
        response_types,
        scope: c.profile.allowed_scopes.join(" "),
        id_token_signed_response_alg: alg,
    };
    Ok((StatusCode::CREATED, Json(body)).into_response())
}
