//! `GET /v1/tenants/{slug}/oauth/authorize` and `POST /v1/tenants/{slug}/oauth/consent`, the
//! API mode of the authorization endpoint.
//!
//! Both run the one check of a request ([`super::request::check`]); a request that passes
//! goes to the tenant's actor with the signed-in user (the `Authorization: Bearer` access
//! token of the tenant's own app), which answers with a code, the consent screen's payload,
//! or that a sign-in is needed. A plain browser navigation is sent on to the hosted pages
//! (`browser/`).

use axum::{
    extract::{Path, State},
    http::{header, HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde::{Deserialize, Serialize};
use tessera_actors::{
    tenant::{
        messages::Bearer,
        oauth::{AuthorizeOutcome, OAuthAnswer, OAuthCmd, OAuthFailure},
    },
    CallError, TenantError, TenantHandle,
};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::{
    hosted::Visit,
    oauth,
    request::{
        check, code_redirect, custom_scopes, decide, error_redirect, hosted_authorize_url,
        is_navigation, query_without_login, CustomScope, RawRequest, Refusal,
    },
    Params, MAX_PARAM,
};
use crate::{
    app::AppState,
    http::{
        bearer::{bearer_header, issuer, missing_token, verify, BearerHeader},
        error::{invalid_token, ApiError, ErrorBody},
        extract::{tenant_by_slug, ApiJson, RequestCtx},
        path_id::TenantSlug,
        responses::found,
    },
};

/// Spec 2.12: no one is signed in (or must sign in again).
#[derive(Serialize, ToSchema)]
pub struct LoginRequiredResponse {
    /// Always true.
    pub login_required: bool,
    /// The authorize request to repeat once the user has signed in.
    pub authorize_url: String,
}

/// The client as the consent screen shows it.
#[derive(Serialize, ToSchema)]
pub struct ConsentClient {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logo_url: Option<String>,
    /// `first_party`, `attested` or `unverified`.
    pub verification: &'static str,
    pub registered_seconds_ago: i64,
}

#[derive(Serialize, ToSchema)]
pub struct AgentScope {
    pub scope: String,
}

/// Spec 2.12: what the consent screen shows, and the request the decision carries back.
#[derive(Serialize, ToSchema)]
pub struct ConsentRequiredResponse {
    /// Always true.
    pub consent_required: bool,
    pub client: ConsentClient,
    /// Every scope asked for.
    pub scopes: Vec<String>,
    /// Not granted before.
    pub new_scopes: Vec<String>,
    /// Granted before.
    pub unchanged_scopes: Vec<String>,
    pub custom_scopes: Vec<CustomScope>,
    /// A consent is on file and this request asks for more.
    pub is_re_consent: bool,
    /// `first_consent`, `new_scopes`, `new_resources` or `prompt_consent`.
    pub change_reason: &'static str,
    pub resources: Vec<String>,
    pub new_resources: Vec<String>,
    pub resource: Option<String>,
    /// Carry it back in the decision: it binds the decision to this request and this user.
    pub resource_commitment: String,
    /// The organization the request names (carry it back too).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub organization: Option<String>,
    pub redirect_uri: String,
    pub state: Option<String>,
    pub client_id: String,
    pub code_challenge: String,
    /// Always `S256`.
    pub code_challenge_method: &'static str,
    /// Always `code`.
    pub response_type: &'static str,
    /// Space-separated.
    pub scope: String,
    pub nonce: Option<String>,
    /// Agent capabilities offered for individual approval; none for a client that is not an
    /// agent.
    pub agent_scopes: Vec<AgentScope>,
}

/// Where the browser goes next: the client's redirect URI with a code or an error.
#[derive(Serialize, ToSchema)]
pub struct RedirectResponse {
    pub redirect_to: String,
}

/// What authorize answers (for the OpenAPI document): one of the three.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum AuthorizeResponse {
    LoginRequired(LoginRequiredResponse),
    ConsentRequired(Box<ConsentRequiredResponse>),
    Redirect(RedirectResponse),
}

/// The signed-in user of the tenant's own app, if the request carries a valid access token.
async fn signed_in(
    state: &AppState,
    tenant: &TenantHandle,
    headers: &HeaderMap,
) -> Result<Option<Bearer>, ApiError> {
    let BearerHeader::Token(token) = bearer_header(headers) else {
        return Ok(None);
    };
    let keys = tenant.keys().await?;
    Ok(verify(state, tenant, &keys, token).ok().map(|(_, b)| b))
}

fn redirect(to: String) -> Response {
    no_store(Json(RedirectResponse { redirect_to: to }).into_response())
}

fn no_store(mut resp: Response) -> Response {
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    resp
}

/// The authorize request to repeat after a sign-in: the same, without `prompt=login`.
fn repeat_url(state: &AppState, slug: &str, params: &Params) -> String {
    format!(
        "{}/oauth/authorize?{}",
        issuer(state, slug),
        query_without_login(params)
    )
}

/// The authorization endpoint (RFC 6749 4.1.1, OpenID Connect Core 3.1.2). A plain browser
/// navigation goes on to the hosted sign-in and consent pages (browser mode); the tenant's own
/// sign-in UI sends the user's access token (if any) and renders what comes back (API mode).
#[utoipa::path(get, path = "/v1/tenants/{slug}/oauth/authorize", tag = "oauth",
    params(
        TenantSlug,
        ("client_id" = String, Query, description = "A client of the tenant"),
        ("redirect_uri" = String, Query, description = "One of the client's redirect URIs, exactly"),
        ("response_type" = String, Query, description = "`code`"),
        ("scope" = String, Query, description = "Space-separated; each among the client's allowed scopes, resource scopes approved in the catalog"),
        ("code_challenge" = String, Query, description = "PKCE S256 challenge"),
        ("code_challenge_method" = String, Query, description = "`S256`"),
        ("state" = Option<String>, Query, description = "Returned unchanged"),
        ("nonce" = Option<String>, Query, description = "Put in the ID token"),
        ("prompt" = Option<String>, Query, description = "`none`, or `login` and/or `consent`"),
        ("max_age" = Option<u64>, Query, description = "Seconds since the user's sign-in after which a new one is needed"),
        ("resource" = Option<String>, Query, description = "RFC 8707: the URI of one of the tenant's registered resources; the access token's audience"),
        ("login_hint" = Option<String>, Query, description = "Passed on to the sign-in"),
    ),
    security((), ("bearer" = [])),
    responses(
        (status = 302, description = "Browser mode (no `Authorization`, an `Accept` that names `text/html`): to the hosted sign-in and consent pages, `{accounts_url}/oauth/{slug}/authorize` with the same query", headers(("Location" = String, description = "The hosted authorize page"))),
        (status = 200, description = "`LoginRequiredResponse`, `ConsentRequiredResponse`, or `{redirect_to}`: the client's redirect URI with a code, or with an RFC 6749 error (`invalid_request`, `unsupported_response_type`, `invalid_scope`, `invalid_target`, `login_required`, `consent_required`), `state` and `iss`", body = AuthorizeResponse),
        (status = 400, description = "`oauth/invalid_client` (unknown client), `oauth/invalid_redirect_uri` (not registered), `oauth/invalid_request` (a parameter repeated or too long): never redirected", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: no such tenant", body = ErrorBody),
    ))]
pub async fn authorize(visit: Visit, RequestCtx(ctx): RequestCtx) -> Result<Response, ApiError> {
    let (state, slug, query, headers) = visit.into_parts();
    let tenant = tenant_by_slug(&state, &slug)?;
    let query = query.unwrap_or_default();
    if is_navigation(&headers) {
        // Browser mode: the hosted pages at the accounts URL take it from here.
        let to = hosted_authorize_url(&state, &tenant.slug, &query);
        return found(&to)
            .map_err(|_| ApiError::internal("an authorize URL that is not a header value"));
    }
    let params = Params::parse(query.as_bytes())
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "oauth/invalid_request", e))?;
    let checked = match check(&state, &tenant, &RawRequest::of(&params)).await {
        Ok(c) => c,
        Err(Refusal::Shown(e)) => return Err(e),
        Err(Refusal::Redirect(to)) => return Ok(redirect(to)),
    };
    let iss = issuer(&state, &tenant.slug);
    let req = &checked.request;
    let login_required = || -> Response {
        if checked.prompt.none {
            return redirect(error_redirect(
                &iss,
                &req.redirect_uri,
                req.state.as_deref(),
                "login_required",
                "the user is not signed in",
            ));
        }
        no_store(
            Json(LoginRequiredResponse {
                login_required: true,
                authorize_url: repeat_url(&state, &slug, &params),
            })
            .into_response(),
        )
    };
    let user = if checked.prompt.login {
        None
    } else {
        signed_in(&state, &tenant, &headers).await?
    };
    let Some(bearer) = user else {
        return Ok(login_required());
    };
    let cmd = OAuthCmd::Authorize {
        bearer,
        request: req.clone(),
        max_age: checked.max_age,
        force_consent: checked.prompt.consent,
        no_prompt: checked.prompt.none,
    };
    let outcome = match oauth(&tenant, ctx, cmd).await {
        Ok(OAuthAnswer::Authorize(o)) => o,
        Ok(_) => return Err(ApiError::internal("an unexpected answer to authorize")),
        Err(CallError::Failed(TenantError::OAuth(
            f @ (OAuthFailure::ConsentRequired | OAuthFailure::AccessDenied),
        ))) => {
            return Ok(redirect(error_redirect(
                &iss,
                &req.redirect_uri,
                req.state.as_deref(),
                f.code(),
                super::failure_text(f),
            )))
        }
        Err(e) => return Err(e.into()),
    };
    let needed = match outcome {
        AuthorizeOutcome::LoginRequired => return Ok(login_required()),
        AuthorizeOutcome::Code(code) => {
            return Ok(redirect(code_redirect(
                &iss,
                &req.redirect_uri,
                req.state.as_deref(),
                &code,
            )))
        }
        AuthorizeOutcome::Consent(n) => n,
    };
    let lang = crate::i18n::negotiate(
        &[],
        headers
            .get(header::ACCEPT_LANGUAGE)
            .and_then(|v| v.to_str().ok()),
        "en",
    );
    let change_reason = if !needed.is_re_consent && needed.unchanged_scopes.is_empty() {
        "first_consent"
    } else if !needed.new_scopes.is_empty() {
        "new_scopes"
    } else if !needed.new_resources.is_empty() {
        "new_resources"
    } else {
        "prompt_consent"
    };
    let client = &needed.client;
    let body = ConsentRequiredResponse {
        consent_required: true,
        client: ConsentClient {
            name: client.profile.name.clone(),
            description: client.profile.description.clone(),
            logo_url: client.profile.logo_url.clone(),
            verification: client.verification(),
            registered_seconds_ago: (OffsetDateTime::now_utc() - client.created_at)
                .whole_seconds()
                .max(0),
        },
        scopes: req.scopes.clone(),
        new_scopes: needed.new_scopes.clone(),
        unchanged_scopes: needed.unchanged_scopes.clone(),
        custom_scopes: custom_scopes(&checked, lang),
        is_re_consent: needed.is_re_consent,
        change_reason,
        resources: req.resource.iter().cloned().collect(),
        new_resources: needed.new_resources.clone(),
        resource: req.resource.clone(),
        resource_commitment: needed.commitment.clone(),
        organization: req.organization.map(|o| o.to_string()),
        redirect_uri: req.redirect_uri.clone(),
        state: req.state.clone(),
        client_id: req.client_id.clone(),
        code_challenge: req.code_challenge.clone(),
        code_challenge_method: "S256",
        response_type: "code",
        scope: req.scopes.join(" "),
        nonce: req.nonce.clone(),
        agent_scopes: Vec::new(),
    };
    Ok(no_store(Json(body).into_response()))
}

/// The user's decision on the consent screen, with the request it was shown for.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OAuthConsentRequest {
    pub client_id: String,
    pub redirect_uri: String,
    pub response_type: String,
    pub scope: String,
    pub state: Option<String>,
    pub nonce: Option<String>,
    pub code_challenge: String,
    pub code_challenge_method: String,
    pub resource: Option<String>,
    /// As the consent screen's payload gave it, when it gave one.
    pub organization: Option<String>,
    /// As the consent screen's payload gave it.
    pub resource_commitment: String,
    /// `approve` or `deny`.
    pub decision: String,
    /// The scopes approved (default: all asked). Only the individually checkable ones (the
    /// `custom_scopes` of the payload) may be left out.
    pub granted_scopes: Option<Vec<String>>,
}

/// Takes the user's consent decision and answers where the browser goes: the client's
/// redirect URI with a code, or with `error=access_denied`.
#[utoipa::path(post, path = "/v1/tenants/{slug}/oauth/consent", tag = "oauth",
    params(TenantSlug),
    security(("bearer" = [])),
    request_body = OAuthConsentRequest,
    responses(
        (status = 200, description = "Where to send the browser", body = RedirectResponse),
        (status = 400, description = "`validation/invalid_request`; `oauth/invalid_client`, `oauth/invalid_redirect_uri`; `oauth/consent_mismatch` (the commitment is not the one shown to this user for this request)", body = ErrorBody),
        (status = 401, description = "`auth/missing_token`, `auth/invalid_token`", body = ErrorBody),
        (status = 403, description = "`auth/email_unconfirmed`: the account's address is not confirmed (an approval stores no consent until it is; a denial is taken)", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: no such tenant", body = ErrorBody),
    ))]
pub async fn consent(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    headers: HeaderMap,
    RequestCtx(ctx): RequestCtx,
    ApiJson(body): ApiJson<OAuthConsentRequest>,
) -> Result<Response, ApiError> {
    let tenant = tenant_by_slug(&state, &slug)?;
    let bearer = match bearer_header(&headers) {
        BearerHeader::Absent => return Err(missing_token()),
        BearerHeader::Malformed => return Err(invalid_token()),
        BearerHeader::Token(t) => {
            let keys = tenant.keys().await?;
            verify(&state, &tenant, &keys, t)?.1
        }
    };
    let too_long = [
        body.state.as_deref(),
        body.nonce.as_deref(),
        Some(body.redirect_uri.as_str()),
        Some(body.scope.as_str()),
    ]
    .into_iter()
    .flatten()
    .any(|s| s.len() > MAX_PARAM);
    if too_long {
        return Err(ApiError::invalid_field(
            "state",
            format!("parameters are at most {MAX_PARAM} characters"),
        ));
    }
    let decision = match body.decision.as_str() {
        "approve" => true,
        "deny" => false,
        _ => {
            return Err(ApiError::invalid_field(
                "decision",
                "must be approve or deny",
            ))
        }
    };
    let raw = RawRequest {
        client_id: Some(&body.client_id),
        redirect_uri: Some(&body.redirect_uri),
        response_type: Some(&body.response_type),
        scope: Some(&body.scope),
        state: body.state.as_deref(),
        nonce: body.nonce.as_deref(),
        code_challenge: Some(&body.code_challenge),
        code_challenge_method: Some(&body.code_challenge_method),
        resource: body.resource.as_deref(),
        organization: body.organization.as_deref(),
        ..RawRequest::default()
    };
    let checked = match check(&state, &tenant, &raw).await {
        Ok(c) => c,
        Err(Refusal::Shown(e)) => return Err(e),
        Err(Refusal::Redirect(to)) => return Ok(redirect(to)),
    };
    let req = &checked.request;
    let decision = decide(&checked, decision, body.granted_scopes.clone())?;
    let cmd = OAuthCmd::Consent {
        bearer,
        request: req.clone(),
        commitment: body.resource_commitment.clone(),
        decision,
    };
    let iss = issuer(&state, &tenant.slug);
    match oauth(&tenant, ctx, cmd).await {
        Ok(OAuthAnswer::Decided(Some(code))) => Ok(redirect(code_redirect(
            &iss,
            &req.redirect_uri,
            req.state.as_deref(),
            &code,
        ))),
        Ok(OAuthAnswer::Decided(None)) => Ok(redirect(error_redirect(
            &iss,
            &req.redirect_uri,
            req.state.as_deref(),
            "access_denied",
            "the user denied the request",
        ))),
        Ok(_) => Err(ApiError::internal("an unexpected answer to a consent")),
        Err(CallError::Failed(TenantError::OAuth(OAuthFailure::AccessDenied))) => {
            Ok(redirect(error_redirect(
                &iss,
                &req.redirect_uri,
                req.state.as_deref(),
                "access_denied",
                super::failure_text(OAuthFailure::AccessDenied),
            )))
        }
        Err(CallError::Failed(TenantError::OAuth(OAuthFailure::InvalidRequest))) => {
            Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "oauth/consent_mismatch",
                "resource_commitment is not the one shown to this user for this request",
            ))
        }
        Err(CallError::Failed(TenantError::InvalidSession)) => Err(invalid_token()),
        Err(e) => Err(e.into()),
    }
}
