//! What the authorization server's form endpoints share (the token endpoint, revocation,
//! introspection, CIBA's `bc-authorize` and the device authorization endpoint), and the
//! answers of the resources tokens are shown to (userinfo, an agent's refused token): the
//! form request read ([`FormRequest`]: its tenant, its parameters, the client authentication
//! it carries, and the client or agent it authenticates, [`Caller`]), required parameters,
//! `Cache-Control: no-store`, and RFC 6750 errors.
//!
//! Its own file, below the client endpoints (`token.rs`) and the agents' (`agents.rs`), so
//! the token endpoint calls into the agents' grants one way only.

use axum::{
    body::Bytes,
    extract::{FromRequest, FromRequestParts, Path, Request},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use std::sync::Arc;

use tessera_actors::{
    tenant::{
        agents::AgentRecord,
        oauth::{ClientAuth, OAuthFailure},
        oauth_clients::OAuthClientRecord,
    },
    TenantError, TenantHandle,
};

use super::{client_auth, OAuthError, Params};
use crate::{app::AppState, http::extract::tenant_by_slug};

/// The tenant a `/v1/tenants/{slug}/oauth/...` route names; `invalid_request` for none.
pub(super) fn tenant_of(state: &AppState, slug: &str) -> Result<TenantHandle, OAuthError> {
    tenant_by_slug(state, slug).map_err(|_| OAuthError::invalid_request("no such tenant"))
}

/// A form body (`application/x-www-form-urlencoded`), each parameter at most once.
pub(super) fn form(headers: &HeaderMap, body: &[u8]) -> Result<Params, OAuthError> {
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| {
            m.trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        });
    if !is_form {
        return Err(OAuthError::invalid_request(
            "the body must be application/x-www-form-urlencoded",
        ));
    }
    Params::parse(body).map_err(OAuthError::invalid_request)
}

pub(super) fn required<'a>(p: &'a Params, name: &str) -> Result<&'a str, OAuthError> {
    p.get(name)
        .ok_or_else(|| OAuthError::invalid_request(format!("{name} is required")))
}

/// A form request to one of the tenant's form endpoints: the tenant its `{slug}` names, its
/// parameters (a form body, each at most once) and the client authentication it carries,
/// read in that order and not yet checked against the tenant's clients or agents (the handler
/// does, with [`FormRequest::caller`] or [`FormRequest::agent`]). A body the server refuses to
/// read is answered as before any handler; the rest speak RFC 6749 5.2.
pub struct FormRequest {
    pub tenant: TenantHandle,
    pub params: Params,
    pub auth: ClientAuth,
}

impl FromRequest<AppState> for FormRequest {
    type Rejection = Response;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Response> {
        let (mut parts, body) = req.into_parts();
        let Path(slug) = Path::<String>::from_request_parts(&mut parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let headers = parts.headers.clone();
        let body = Bytes::from_request(Request::from_parts(parts, body), state)
            .await
            .map_err(IntoResponse::into_response)?;
        let read = || {
            let tenant = tenant_of(state, &slug)?;
            let params = form(&headers, &body)?;
            let auth = client_auth(&headers, &params)?;
            Ok::<_, OAuthError>(FormRequest {
                tenant,
                params,
                auth,
            })
        };
        read().map_err(IntoResponse::into_response)
    }
}

/// Who called a form endpoint: an OAuth client or an agent.
pub(super) enum Caller {
    Client(Arc<OAuthClientRecord>),
    Agent(Arc<AgentRecord>),
}

impl FormRequest {
    /// The request's tenant, its parameters, and its caller, authenticated against the
    /// tenant's published clients, else its agents (`agt_...`).
    pub(super) async fn caller(self) -> Result<(TenantHandle, Params, Caller), OAuthError> {
        if self.auth.client_id.starts_with("agt_") {
            let (tenant, params, agent) = self.agent().await?;
            return Ok((tenant, params, Caller::Agent(agent)));
        }
        let client = self
            .tenant
            .oauth_clients()
            .await?
            .authenticate(&self.auth)
            .map_err(refused)?;
        Ok((self.tenant, self.params, Caller::Client(client)))
    }

    /// The request's tenant, its parameters, and the agent it authenticates (the CIBA and
    /// device endpoints take agents only).
    pub(super) async fn agent(
        self,
    ) -> Result<(TenantHandle, Params, Arc<AgentRecord>), OAuthError> {
        let agent = self
            .tenant
            .agents()
            .await?
            .authenticate(&self.auth)
            .map_err(refused)?;
        Ok((self.tenant, self.params, agent))
    }
}

/// A client authentication the tenant refused, in RFC 6749 5.2 words.
fn refused(f: OAuthFailure) -> OAuthError {
    OAuthError::from(TenantError::OAuth(f))
}

pub(super) fn no_store(mut resp: Response) -> Response {
    let h = resp.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    resp
}

/// An RFC 6750 error: 401 `invalid_token` or 403 `insufficient_scope`.
pub(super) fn bearer_error(status: StatusCode, error: &str, description: &str) -> Response {
    let challenge = format!("Bearer error=\"{error}\", error_description=\"{description}\"");
    with_challenge(
        (
            status,
            Json(serde_json::json!({ "error": error, "error_description": description })),
        )
            .into_response(),
        &challenge,
    )
}

/// 401 `invalid_token` for a token that is no live token of the tenant.
pub(super) fn invalid_bearer() -> Response {
    bearer_error(
        StatusCode::UNAUTHORIZED,
        "invalid_token",
        "the access token is missing, invalid, expired or revoked",
    )
}

/// Adds `WWW-Authenticate` for a refused bearer to a response (unused header values are
/// dropped).
fn with_challenge(mut resp: Response, challenge: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(challenge) {
        resp.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    resp
}
