//! The tenant's OAuth 2.1 / OpenID Connect authorization server, under
//! `/v1/tenants/{slug}/oauth`: the one check of an authorization request ([`request`]),
//! authorize and the consent decision ([`authorize`]), the hosted sign-in and consent pages
//! ([`browser`]), the token, revocation, introspection and userinfo endpoints ([`token`]),
//! and the user's own consents ([`consents`]).
//!
//! The token, revocation and introspection endpoints speak RFC 6749 section 5.2
//! (`{"error", "error_description"}`, form-encoded requests), as every OAuth client library
//! expects; the others speak the service's error shape.

pub mod account;
pub mod agent_pages;
pub mod agents;
pub mod authorize;
pub mod browser;
pub mod consents;
pub mod form;
pub mod hosted;
pub mod logout;
pub mod register;
pub mod request;
pub mod token;

use std::collections::BTreeMap;
use tessera_actors::GuestError;

use axum::{
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use base64::{engine::general_purpose::STANDARD, Engine};
use serde::Serialize;
use tessera_actors::{
    directory::catalog::{CatalogScopeRecord, ScopeStatus, TenantResource},
    directory::messages::DirectoryMsg,
    tenant::{
        mailbox::TenantMsg,
        oauth::{ClientAuth, OAuthAnswer, OAuthCmd, OAuthFailure},
        oauth_clients::TokenAuthMethod,
    },
    CallError, TenantError, TenantHandle,
};
use utoipa::ToSchema;

use super::{error::ApiError, fields::PROTOCOL_SCOPES};
use crate::app::AppState;

/// The most characters of any one request parameter (a `state`, a `nonce`, a token).
pub const MAX_PARAM: usize = 2048;

/// An error of the token, revocation and introspection endpoints (RFC 6749 5.2).
#[derive(Debug)]
pub struct OAuthError {
    status: StatusCode,
    error: &'static str,
    description: String,
    /// A 429's `Retry-After`, in seconds.
    retry_after: Option<u64>,
}

/// The error body of the token, revocation and introspection endpoints.
#[derive(Serialize, ToSchema)]
pub struct OAuthErrorBody {
    /// RFC 6749 5.2 code: `invalid_request`, `invalid_client`, `invalid_grant`,
    /// `unauthorized_client`, `unsupported_grant_type`, `invalid_scope`.
    pub error: &'static str,
    pub error_description: String,
}

/// A 401 from a protected resource of the provider (userinfo): RFC 6750's `invalid_token`, or,
/// with no access token at all, the bare challenge and the service's `auth/missing_token` body.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum BearerUnauthorizedBody {
    Invalid(OAuthErrorBody),
    Missing(super::error::ErrorBody),
}

impl OAuthError {
    pub fn new(error: &'static str, description: impl Into<String>) -> Self {
        let status = match error {
            "invalid_client" => StatusCode::UNAUTHORIZED,
            "server_error" => StatusCode::INTERNAL_SERVER_ERROR,
            "temporarily_unavailable" => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::BAD_REQUEST,
        };
        OAuthError {
            status,
            error,
            description: description.into(),
            retry_after: None,
        }
    }

    /// 429 `rate_limited` with `Retry-After` (an agent over one of its limits).
    pub fn rate_limited(retry_after: u64) -> Self {
        OAuthError {
            status: StatusCode::TOO_MANY_REQUESTS,
            error: "rate_limited",
            description: "too many requests; retry after the number of seconds in Retry-After"
                .into(),
            retry_after: Some(retry_after.max(1)),
        }
    }

    pub fn invalid_request(description: impl Into<String>) -> Self {
        OAuthError::new("invalid_request", description)
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let mut resp = (
            self.status,
            Json(OAuthErrorBody {
                error: self.error,
                error_description: self.description,
            }),
        )
            .into_response();
        let h = resp.headers_mut();
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if self.error == "invalid_client" {
            h.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"oauth\""),
            );
        }
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            h.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        if let Some(v) = self
            .retry_after
            .and_then(|s| HeaderValue::from_str(&s.to_string()).ok())
        {
            h.insert(header::RETRY_AFTER, v);
        }
        resp
    }
}

impl From<CallError<TenantError>> for OAuthError {
    fn from(e: CallError<TenantError>) -> Self {
        match e {
            CallError::Unavailable => {
                OAuthError::new("temporarily_unavailable", "try again in a moment")
            }
            CallError::Failed(e) => e.into(),
        }
    }
}

impl From<TenantError> for OAuthError {
    fn from(e: TenantError) -> Self {
        match e {
            TenantError::OAuth(f) => OAuthError::new(f.code(), failure_text(f)),
            TenantError::InvalidRefreshToken | TenantError::RefreshTokenReused => OAuthError::new(
                "invalid_grant",
                "the refresh token is invalid, expired, revoked or not this client's",
            ),
            TenantError::RateLimited { retry_after } => OAuthError::rate_limited(retry_after),
            TenantError::Guest(GuestError::MauExhausted) => OAuthError::new(
                "temporarily_unavailable",
                "the tenant's monthly active user cap is reached",
            ),
            TenantError::Internal(_) => {
                let e = ApiError::from(e);
                OAuthError::new("server_error", e.message)
            }
            other => OAuthError::new("invalid_request", other.to_string()),
        }
    }
}

impl From<ApiError> for OAuthError {
    fn from(e: ApiError) -> Self {
        match e.status {
            StatusCode::SERVICE_UNAVAILABLE => {
                OAuthError::new("temporarily_unavailable", "try again in a moment")
            }
            s if s.is_server_error() => OAuthError::new("server_error", e.message),
            _ => OAuthError::invalid_request(e.message),
        }
    }
}

pub(crate) fn failure_text(f: OAuthFailure) -> &'static str {
    match f {
        OAuthFailure::InvalidClient => {
            "client authentication failed: unknown client, wrong secret, or not the method it is registered for"
        }
        OAuthFailure::InvalidGrant => {
            "the code is invalid, expired, already used, or not issued to this client and redirect_uri with this code_verifier"
        }
        OAuthFailure::InvalidScope => "a scope asked for was not granted",
        OAuthFailure::InvalidTarget => "the resource asked for is not one the grant covers",
        OAuthFailure::ConsentRequired => "the user has not consented to this request",
        OAuthFailure::InvalidRequest => "the consent does not match the request shown",
        OAuthFailure::UnauthorizedClient => {
            "the client may not use this grant or endpoint (introspection: confidential clients and agents only)"
        }
        OAuthFailure::AccessDenied => "the user is not a member of the organization asked for",
    }
}

/// Request parameters (a query string or a form body), each at most once: RFC 6749 3.1 and
/// 3.2 refuse a repeated parameter. Empty values count as absent.
pub struct Params(BTreeMap<String, String>);

impl Params {
    pub fn parse(raw: &[u8]) -> Result<Params, String> {
        let mut map = BTreeMap::new();
        for (k, v) in form_urlencoded::parse(raw) {
            if v.len() > MAX_PARAM {
                return Err(format!("{k} is longer than {MAX_PARAM} characters"));
            }
            if v.is_empty() {
                continue;
            }
            if map.insert(k.to_string(), v.into_owned()).is_some() {
                return Err(format!("{k} is repeated"));
            }
        }
        Ok(Params(map))
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &String)> {
        self.0.iter()
    }
}

/// The scopes of a space-separated `scope`, in order, without repeats.
pub fn split_scopes(raw: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in raw.split(' ').filter(|s| !s.is_empty()) {
        if !out.iter().any(|o| o == s) {
            out.push(s.to_owned());
        }
    }
    out
}

pub fn is_protocol_scope(s: &str) -> bool {
    PROTOCOL_SCOPES.contains(&s)
}

/// How a client authenticates (RFC 6749 2.3.1): HTTP Basic with its id and secret (both
/// form-urlencoded first), or `client_id` and `client_secret` in the body, or a public client's
/// `client_id` alone. Using two methods at once is refused.
pub fn client_auth(headers: &HeaderMap, params: &Params) -> Result<ClientAuth, OAuthError> {
    let basic = match headers.get(header::AUTHORIZATION) {
        None => None,
        Some(v) => {
            let v = v.to_str().map_err(|_| invalid_basic())?;
            match v.split_once(' ') {
                Some((scheme, creds)) if scheme.eq_ignore_ascii_case("basic") => {
                    Some(parse_basic(creds.trim())?)
                }
                _ => return Err(invalid_basic()),
            }
        }
    };
    let body_id = params.get("client_id");
    let body_secret = params.get("client_secret");
    match (basic, body_secret) {
        (Some(_), Some(_)) => Err(OAuthError::invalid_request(
            "use one client authentication method, not two",
        )),
        (Some((id, secret)), None) => {
            if body_id.is_some_and(|b| b != id) {
                return Err(OAuthError::invalid_request(
                    "client_id differs from the one authenticated",
                ));
            }
            Ok(ClientAuth {
                client_id: id,
                secret: Some(secret),
                method: TokenAuthMethod::ClientSecretBasic,
            })
        }
        (None, secret) => {
            let id = body_id.ok_or_else(|| {
                OAuthError::new("invalid_client", "client authentication is required")
            })?;
            Ok(ClientAuth {
                client_id: id.to_owned(),
                secret: secret.map(str::to_owned),
                method: if secret.is_some() {
                    TokenAuthMethod::ClientSecretPost
                } else {
                    TokenAuthMethod::None
                },
            })
        }
    }
}

fn invalid_basic() -> OAuthError {
    OAuthError::new(
        "invalid_client",
        "the Authorization header is not HTTP Basic credentials",
    )
}

fn parse_basic(creds: &str) -> Result<(String, String), OAuthError> {
    let raw = STANDARD.decode(creds).map_err(|_| invalid_basic())?;
    let text = String::from_utf8(raw).map_err(|_| invalid_basic())?;
    let (id, secret) = text.split_once(':').ok_or_else(invalid_basic)?;
    // Each part is form-urlencoded (RFC 6749 2.3.1); a bare '&' is taken as itself.
    let decode = |s: &str| {
        form_urlencoded::parse(format!("v={}", s.replace('&', "%26")).as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    };
    Ok((decode(id), decode(secret)))
}

/// Sends one command to the tenant's authorization server.
pub async fn oauth(
    tenant: &TenantHandle,
    ctx: tessera_actors::tenant::audit::AuditContext,
    cmd: OAuthCmd,
) -> Result<OAuthAnswer, CallError<TenantError>> {
    tenant
        .call(|reply| TenantMsg::OAuth {
            cmd: cmd.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await
}

/// The tenant's resources and their catalog entries.
pub async fn tenant_catalog(
    state: &AppState,
    tenant: &TenantHandle,
) -> Result<Vec<TenantResource>, ApiError> {
    let id = tenant.id;
    Ok(state
        .directory
        .request(|reply| DirectoryMsg::TenantCatalog { tenant: id, reply })
        .await?)
}

/// The approved catalog entries a request for `resource` may ask for (none without a
/// resource: a resource scope is only ever granted for its resource).
pub fn grantable<'a>(
    catalog: &'a [TenantResource],
    resource: Option<&str>,
) -> Vec<&'a CatalogScopeRecord> {
    let Some(uri) = resource else {
        return Vec::new();
    };
    catalog
        .iter()
        .filter(|r| r.resource.uri == uri)
        .flat_map(|r| r.scopes.iter())
        .filter(|s| s.status == ScopeStatus::Approved)
        .collect()
}

/// `scopes` without the resource scopes that are no longer approved in the catalog (deleted
/// since they were granted): what a new access token may carry, for a client's grant and an
/// agent's alike. Only resource scopes can have left the catalog: it is read only when there
/// is one.
pub async fn still_grantable(
    state: &AppState,
    tenant: &TenantHandle,
    resource: Option<&str>,
    scopes: Vec<String>,
) -> Result<Vec<String>, ApiError> {
    if scopes.iter().all(|s| is_protocol_scope(s)) {
        return Ok(scopes);
    }
    let catalog = tenant_catalog(state, tenant).await?;
    let approved = grantable(&catalog, resource);
    Ok(scopes
        .into_iter()
        .filter(|s| is_protocol_scope(s) || approved.iter().any(|a| &a.scope_name == s))
        .collect())
}

/// How the OAuth provider's refusals answer (its own endpoints answer RFC 6749's shape
/// themselves).
impl From<OAuthFailure> for ApiError {
    fn from(f: OAuthFailure) -> Self {
        ApiError::new(
            if f == OAuthFailure::InvalidClient {
                StatusCode::UNAUTHORIZED
            } else {
                StatusCode::BAD_REQUEST
            },
            format!("oauth/{}", f.code()),
            "the OAuth request was refused",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_parameters_are_refused_and_empty_ones_ignored() {
        assert!(Params::parse(b"a=1&a=2").is_err());
        let p = Params::parse(b"a=1&b=&c=x%20y").unwrap();
        assert_eq!(p.get("a"), Some("1"));
        assert_eq!(p.get("b"), None);
        assert_eq!(p.get("c"), Some("x y"));
    }

    #[test]
    fn basic_credentials_are_form_decoded() {
        let creds = STANDARD.encode("tc_1:a%2Bb%3Ac+d");
        assert_eq!(
            parse_basic(&creds).unwrap(),
            ("tc_1".to_owned(), "a+b:c d".to_owned())
        );
        assert!(parse_basic("not base64!").is_err());
        assert!(parse_basic(&STANDARD.encode("no-colon")).is_err());
    }

    #[test]
    fn scopes_keep_their_order_without_repeats() {
        assert_eq!(split_scopes(" openid  email openid "), ["openid", "email"]);
    }
}
