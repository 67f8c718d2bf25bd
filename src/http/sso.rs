//! Single sign-on through an organization's identity provider, over HTTP: home-realm
//! discovery and the exchange for a session (the app's back end, with its API key), and the
//! browser's way out and back at the accounts URL, one path per connection:
//!
//! 1. `GET {accounts_url}/sso/{slug}/{connection_id}/start?redirect_uri=[&login_hint=]`: the
//!    tenant's actor stores the flow (10 minutes, under the hash of its `state`); the browser
//!    gets a cookie binding the flow to it (`HttpOnly`; `SameSite=None; Secure` over https,
//!    since a SAML response comes back as a cross-site form post) and a 302 to the provider:
//!    its authorization endpoint (OpenID: code, PKCE S256, nonce) or its SingleSignOnService
//!    (SAML: an AuthnRequest by the HTTP-Redirect binding, the `state` as RelayState).
//! 2. `GET .../callback` (OpenID) or `POST .../acs` (SAML): the actor takes the flow once, in
//!    the browser holding its cookie; the provider's answer is checked here, off the actor
//!    (the ID token; the SAML response's signature, issuer, audience, destination,
//!    recipient, `InResponseTo` and validity window, by `tessera-saml`); the actor decides who
//!    the user is and answers a single-use exchange code; the browser goes back to
//!    `redirect_uri?code=<it>`, or `?error=`.
//! 3. `POST /v1/auth/sso/session` (API key): the app's back end trades the code (60 seconds)
//!    for the token pair of a session that works in the organization (`amr` `["fed"]`), or
//!    the MFA step.
//!
//! `GET .../metadata` is the connection's SAML service-provider metadata (its entity id is
//! that URL).

use axum::{
    extract::{Path, Query, RawQuery, State},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde::{Deserialize, Serialize};
use tessera_actors::{
    tenant::sso::{
        finish::SsoIdentity,
        flow::{SsoPending, SsoStart},
        msg::{SsoAnswer, SsoCmd},
        records::{Attributes, SamlSettings, SsoProtocol},
        SsoError,
    },
    CallError, TenantError, TenantHandle,
};
use tessera_storage::sha256;
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{
    error::{is_email, len_between, ApiError, ErrorBody, FieldErrors},
    extract::{served_here, tenant_by_slug, ApiJson, ApiTenant, ClientIp, RequestCtx},
    pages::{cookie, with_query},
    responses::{found_quietly as found, login_answer, LoginResponse},
};
use crate::{
    app::{App, AppState},
    http::error_responses::{InvalidRequest, UserBlocked},
    oidc_rp::OidcRp,
};

/// How far a SAML response's clocks may be off ours.
const SAML_SKEW: time::Duration = time::Duration::seconds(120);

fn unexpected() -> ApiError {
    ApiError::internal("unexpected single sign-on answer")
}

/// The base of a connection's browser paths.
pub fn connection_base(app: &App, slug: &str, connection: Uuid) -> String {
    format!("{}/sso/{slug}/{connection}", app.accounts_base())
}

/// A connection's SAML service provider: its entity id (the metadata URL) and ACS URL,
/// expecting `pending`'s IdP.
fn sp_config(app: &App, slug: &str, pending: &SsoPending) -> Option<tessera_saml::SpConfig> {
    let SsoProtocol::Saml(s) = &pending.connection.protocol else {
        return None;
    };
    let base = connection_base(app, slug, pending.connection.id);
    let mut sp = sp_of(&base, s);
    sp.idp_certs = s.idp_certificates.clone();
    sp.decryption_key_pem = Some(pending.secret.clone());
    Some(sp)
}

/// The service provider a connection at `base` is, for `s`'s IdP (no certificates, no key:
/// what a request and the metadata need).
fn sp_of(base: &str, s: &SamlSettings) -> tessera_saml::SpConfig {
    tessera_saml::SpConfig {
        entity_id: format!("{base}/metadata"),
        acs_url: format!("{base}/acs"),
        idp_entity_id: s.idp_entity_id.clone(),
        idp_certs: Vec::new(),
        decryption_key_pem: None,
        skew: SAML_SKEW,
    }
}

/// The name of the cookie that binds the flow of `state` to the browser.
fn cookie_name(state: &str) -> String {
    format!(
        "tessera_sso_{}",
        &hex::encode(sha256(state.as_bytes()))[..16]
    )
}

/// The flow's cookie: `value` for 10 minutes, or cleared (`None`). Over https it is
/// `SameSite=None` (a SAML response is a cross-site form post, which carries no other).
fn flow_cookie(app: &App, path: &str, state: &str, value: Option<&str>) -> Option<HeaderValue> {
    let secure = app.accounts_base().starts_with("https://");
    let mut c = format!(
        "{}={}; Path={path}; HttpOnly; SameSite={}; Max-Age={}",
        cookie_name(state),
        value.unwrap_or(""),
        if secure { "None" } else { "Lax" },
        if value.is_some() { 600 } else { 0 },
    );
    if secure {
        c.push_str("; Secure");
    }
    HeaderValue::from_str(&c).ok()
}

/// Back to the app with `name=value`.
fn back(to: &str, name: &str, value: &str) -> Response {
    found(&with_query(to, name, value).unwrap_or_else(|| to.to_owned()))
}

/// The path's tenant (served here) and connection; 404 otherwise.
fn tenant_and_connection(
    app: &AppState,
    slug: &str,
    connection: &str,
) -> Result<(TenantHandle, Uuid), ApiError> {
    let tenant = tenant_by_slug(app, slug)?;
    served_here(app, tenant.id)?;
    let id = Uuid::try_parse(connection).map_err(|_| ApiError::not_found("connection"))?;
    Ok((tenant, id))
}

/// A refusal of the browser routes: a JSON error (there is no app to go back to yet).
fn flow_error(e: CallError<TenantError>) -> ApiError {
    match e {
        CallError::Failed(TenantError::Sso(SsoError::UnknownConnection)) => {
            ApiError::not_found("connection")
        }
        CallError::Failed(TenantError::Sso(SsoError::StateInvalid)) => invalid_state(),
        e => e.into(),
    }
}

fn invalid_state() -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "sso/invalid_state",
        "this sign-in is unknown, already finished or expired: start again from the app",
    )
}

#[derive(Deserialize)]
pub struct StartQuery {
    redirect_uri: Option<String>,
    login_hint: Option<String>,
    /// Set by the authorization server's hosted sign-in page: its authorize request, which
    /// the sign-in returns to (`/oauth/<slug>/sso-return?<it>`) instead of an app URL.
    hosted: Option<String>,
}

/// The cookie that hands a hosted sign-in's outcome to the hosted sign-in page:
/// `c.<exchange code>` or `e.<error>` (60 seconds, `Path=/oauth/<slug>/sso-return`).
pub const SSO_DONE_COOKIE: &str = "tessera_sso_done";

/// The hosted sign-in page's return path.
pub fn sso_return_path(slug: &str) -> String {
    format!("/oauth/{slug}/sso-return")
}

/// Where a sign-in ends: back to the app with `code` or `error`, or for a hosted one to the
/// sign-in page's return page with the outcome in [`SSO_DONE_COOKIE`].
fn outcome(app: &App, slug: &str, pending: &SsoPending, done: Result<&str, &str>) -> Response {
    if !pending.hosted {
        return match done {
            Ok(code) => back(&pending.redirect_uri, "code", code),
            Err(why) => back(&pending.redirect_uri, "error", why),
        };
    }
    let value = match done {
        Ok(code) => format!("c.{code}"),
        Err(why) => format!("e.{why}"),
    };
    let mut c = format!(
        "{SSO_DONE_COOKIE}={value}; Path={}; HttpOnly; SameSite=Lax; Max-Age=60",
        sso_return_path(slug)
    );
    if app.accounts_base().starts_with("https://") {
        c.push_str("; Secure");
    }
    let mut resp = found(&pending.redirect_uri);
    if let Ok(v) = HeaderValue::from_str(&c) {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
    resp
}

/// `GET /sso/{slug}/{connection_id}/start`: stores the flow and sends the browser to the
/// provider.
pub async fn start(
    State(state): State<AppState>,
    Path((slug, connection)): Path<(String, String)>,
    Query(q): Query<StartQuery>,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
) -> Result<Response, ApiError> {
    let (tenant, id) = tenant_and_connection(&state, &slug, &connection)?;
    let hint = q.login_hint.filter(|h| !h.is_empty());
    let mut e = FieldErrors::new();
    let redirect_uri = match &q.hosted {
        Some(h) => {
            e.check("redirect_uri", q.redirect_uri.is_none(), "not with hosted");
            e.check("hosted", len_between(h, 1, 4096), "1-4096 characters");
            format!("{}{}?{h}", state.accounts_base(), sso_return_path(&slug))
        }
        None => {
            let r = q.redirect_uri.unwrap_or_default();
            e.check(
                "redirect_uri",
                len_between(&r, 1, 2048),
                "one of the tenant's URLs (settings/urls)",
            );
            r
        }
    };
    if let Some(h) = &hint {
        e.check("login_hint", len_between(h, 1, 254), "1-254 characters");
    }
    e.finish()?;
    let cmd = SsoCmd::Begin {
        connection: id,
        redirect_uri,
        hosted: q.hosted.is_some(),
        ip,
    };
    let start: SsoStart = match tenant.sso(&ctx, cmd).await {
        Ok(SsoAnswer::Start(s)) => *s,
        Ok(_) => return Err(unexpected()),
        Err(CallError::Failed(TenantError::Sso(SsoError::RedirectNotAllowed))) => {
            return Err(ApiError::invalid_field(
                "redirect_uri",
                "must be one of the tenant's URLs (settings/urls), exactly",
            ))
        }
        Err(e) => return Err(flow_error(e)),
    };
    let base = connection_base(&state, &slug, id);
    let to = match &start.connection.protocol {
        SsoProtocol::Oidc(o) => {
            let secret = String::new();
            let rp = OidcRp {
                issuer: &o.issuer,
                client_id: &o.client_id,
                client_secret: &secret,
                scopes: &o.scopes,
            };
            let flow = (
                start.state.as_str(),
                start.nonce.as_str(),
                start.code_challenge.as_str(),
            );
            state
                .federation
                .authorize_url(&rp, flow, &format!("{base}/callback"), hint.as_deref())
                .await
                .map_err(|e| e.to_string())
        }
        SsoProtocol::Saml(s) => {
            let sp = sp_of(&base, s);
            tessera_saml::authn_request(
                &sp,
                &s.idp_sso_url,
                &start.nonce,
                &start.state,
                OffsetDateTime::now_utc(),
            )
            .map_err(|e| e.to_string())
        }
    };
    let to = match to {
        Ok(to) => to,
        Err(err) => {
            tracing::warn!(connection = %id, error = %err, "a single sign-on could not start");
            // The flow stays unused and expires.
            return Err(provider_unavailable());
        }
    };
    let mut resp = found(&to);
    let path = format!("/sso/{slug}/{id}/");
    if let Some(c) = flow_cookie(&state, &path, &start.state, Some(&start.binding)) {
        resp.headers_mut().append(header::SET_COOKIE, c);
    }
    Ok(resp)
}

fn provider_unavailable() -> ApiError {
    ApiError::new(
        StatusCode::BAD_GATEWAY,
        "sso/provider_unavailable",
        "the organization's identity provider could not be reached; try again later",
    )
}

/// Takes the flow of `state`, for this browser: the pending sign-in, or the response that
/// ends the browser's visit (back to the app with `error`, or an error page).
async fn take(
    (tenant, id, slug): (&TenantHandle, Uuid, &str),
    flow_state: &str,
    headers: &HeaderMap,
    ctx: &tessera_actors::tenant::audit::AuditContext,
) -> Result<SsoPending, Response> {
    let binding = cookie(headers, &cookie_name(flow_state))
        .unwrap_or_default()
        .to_owned();
    let cmd = SsoCmd::Take {
        connection: id,
        state: flow_state.to_owned(),
        binding,
    };
    match tenant.sso(ctx, cmd).await {
        Ok(SsoAnswer::Pending(p)) => Ok(*p),
        Ok(_) => Err(unexpected().into_response()),
        Err(CallError::Failed(TenantError::Sso(SsoError::StateForeign { redirect_uri }))) => {
            // The app learns it; a hosted page's return finds no outcome and says so.
            tracing::warn!(tenant = %slug, connection = %id, "a single sign-on came back to another browser");
            Err(back(&redirect_uri, "error", "invalid_state"))
        }
        Err(e) => Err(flow_error(e).into_response()),
    }
}

/// The actor's decision on `identity`, as the browser's way back to the app.
async fn finish(
    app: &App,
    (tenant, pending, slug): (&TenantHandle, &SsoPending, &str),
    flow_state: Option<&str>,
    identity: SsoIdentity,
    ctx: &tessera_actors::tenant::audit::AuditContext,
) -> Response {
    let cmd = SsoCmd::Finish {
        connection: pending.connection.id,
        identity,
    };
    let mut resp = match tenant.sso(ctx, cmd).await {
        Ok(SsoAnswer::Finished(f)) => outcome(app, slug, pending, Ok(&f.code)),
        Ok(_) => unexpected().into_response(),
        Err(CallError::Failed(TenantError::Sso(SsoError::Refused(why)))) => {
            outcome(app, slug, pending, Err(why.as_str()))
        }
        Err(CallError::Failed(TenantError::Sso(SsoError::Disabled))) => {
            outcome(app, slug, pending, Err("connection_disabled"))
        }
        Err(e) => ApiError::from(e).into_response(),
    };
    if let Some(s) = flow_state {
        let path = format!("/sso/{slug}/{}/", pending.connection.id);
        if let Some(c) = flow_cookie(app, &path, s, None) {
            resp.headers_mut().append(header::SET_COOKIE, c);
        }
    }
    resp
}

/// `GET /sso/{slug}/{connection_id}/callback`: the OpenID provider's redirect.
pub async fn callback(
    State(state): State<AppState>,
    Path((slug, connection)): Path<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    RequestCtx(ctx): RequestCtx,
) -> Result<Response, ApiError> {
    let (tenant, id) = tenant_and_connection(&state, &slug, &connection)?;
    let mut code = None;
    let mut flow_state = None;
    let mut error = None;
    for (k, v) in form_urlencoded::parse(query.as_deref().unwrap_or("").as_bytes()) {
        let slot = match k.as_ref() {
            "code" => &mut code,
            "state" => &mut flow_state,
            "error" => &mut error,
            _ => continue,
        };
        slot.get_or_insert_with(|| v.into_owned());
    }
    let flow_state = flow_state.unwrap_or_default();
    let pending = match take((&tenant, id, &slug), &flow_state, &headers, &ctx).await {
        Ok(p) => p,
        Err(resp) => return Ok(resp),
    };
    let SsoProtocol::Oidc(o) = &pending.connection.protocol else {
        return Err(invalid_state());
    };
    let Some(code) = code.filter(|_| error.is_none()) else {
        let why = if error.as_deref() == Some("access_denied") {
            "access_denied"
        } else {
            "provider_error"
        };
        return Ok(outcome(&state, &slug, &pending, Err(why)));
    };
    let rp = OidcRp {
        issuer: &o.issuer,
        client_id: &o.client_id,
        client_secret: &pending.secret,
        scopes: &o.scopes,
    };
    let callback = format!("{}/callback", connection_base(&state, &slug, id));
    let nonce = pending.nonce.clone().unwrap_or_default();
    let claims = match state
        .federation
        .claims(&rp, &code, &callback, (&nonce, &pending.pkce_verifier))
        .await
    {
        Ok(c) => c,
        Err(err) => {
            tracing::warn!(tenant = %slug, connection = %id, error = %err, "an OpenID sign-in was refused");
            return Ok(outcome(&state, &slug, &pending, Err(err.code())));
        }
    };
    let identity = oidc_identity(&pending, &claims);
    let Some(identity) = identity else {
        return Ok(outcome(&state, &slug, &pending, Err("provider_error")));
    };
    Ok(finish(
        &state,
        (&tenant, &pending, &slug),
        Some(&flow_state),
        identity,
        &ctx,
    )
    .await)
}

/// Who an ID token's claims say the user is, through the connection's mapping; `None`
/// without a usable `sub`.
fn oidc_identity(
    pending: &SsoPending,
    claims: &serde_json::Map<String, serde_json::Value>,
) -> Option<SsoIdentity> {
    use serde_json::Value;
    let subject = claims
        .get("sub")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty() && s.len() <= 255)?;
    let mut attributes = Attributes::new();
    for (k, v) in claims {
        let values: Vec<String> = match v {
            Value::String(s) => vec![s.clone()],
            Value::Array(a) => a
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            Value::Bool(b) => vec![b.to_string()],
            _ => continue,
        };
        attributes.insert(k.clone(), values);
    }
    let email = claims.get("email").and_then(Value::as_str);
    let mut identity = pending
        .connection
        .mapping
        .identity(subject, email, &attributes);
    identity.email_verified = match claims.get("email_verified") {
        Some(Value::Bool(b)) => Some(*b),
        Some(Value::String(s)) => Some(s == "true"),
        _ => None,
    };
    Some(identity)
}

/// `POST /sso/{slug}/{connection_id}/acs`: the SAML response, posted by the browser.
pub async fn acs(
    State(state): State<AppState>,
    Path((slug, connection)): Path<(String, String)>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    RequestCtx(ctx): RequestCtx,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let (tenant, id) = tenant_and_connection(&state, &slug, &connection)?;
    let mut response = None;
    let mut relay = None;
    for (k, v) in form_urlencoded::parse(&body) {
        let slot = match k.as_ref() {
            "SAMLResponse" => &mut response,
            "RelayState" => &mut relay,
            _ => continue,
        };
        slot.get_or_insert_with(|| v.into_owned());
    }
    let Some(response) = response.filter(|r| !r.is_empty()) else {
        return Err(ApiError::invalid_field(
            "SAMLResponse",
            "the IdP's response",
        ));
    };
    let relay = relay.filter(|r| !r.is_empty());
    // With a RelayState: the flow this browser began; without: an unsolicited response,
    // when the connection takes them.
    let pending = match &relay {
        Some(r) => match take((&tenant, id, &slug), r, &headers, &ctx).await {
            Ok(p) => p,
            Err(resp) => return Ok(resp),
        },
        None => match tenant
            .sso(&ctx, SsoCmd::Unsolicited { connection: id, ip })
            .await
        {
            Ok(SsoAnswer::Pending(p)) => *p,
            Ok(_) => return Err(unexpected()),
            Err(CallError::Failed(TenantError::Sso(SsoError::UnsolicitedRefused))) => {
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "sso/unsolicited",
                    "this connection takes no unsolicited (IdP-initiated) responses",
                ))
            }
            Err(e) => return Err(flow_error(e)),
        },
    };
    let path = format!("/sso/{slug}/{id}/");
    let Some(sp) = sp_config(&state, &slug, &pending) else {
        return Err(invalid_state());
    };
    let now = OffsetDateTime::now_utc();
    let assertion = match tessera_saml::verify_response(
        &response,
        &sp,
        pending.nonce.as_deref(),
        now,
    ) {
        Ok(a) => a,
        Err(err) => {
            tracing::warn!(tenant = %slug, connection = %id, code = err.code(), error = %err, "a SAML response was refused");
            let mut resp = outcome(&state, &slug, &pending, Err("invalid_assertion"));
            if let Some(r) = &relay {
                if let Some(c) = flow_cookie(&state, &path, r, None) {
                    resp.headers_mut().append(header::SET_COOKIE, c);
                }
            }
            return Ok(resp);
        }
    };
    let mut identity = pending.connection.mapping.identity(
        &assertion.name_id,
        Some(&assertion.name_id),
        &assertion.attributes,
    );
    identity.assertion = Some((assertion.id.clone(), assertion.not_on_or_after));
    Ok(finish(
        &state,
        (&tenant, &pending, &slug),
        relay.as_deref(),
        identity,
        &ctx,
    )
    .await)
}

/// `GET /sso/{slug}/{connection_id}/metadata`: the connection's SAML service-provider
/// metadata (entity id, ACS, the certificate assertions are encrypted to).
pub async fn metadata(
    State(state): State<AppState>,
    Path((slug, connection)): Path<(String, String)>,
    RequestCtx(ctx): RequestCtx,
) -> Result<Response, ApiError> {
    let (tenant, id) = tenant_and_connection(&state, &slug, &connection)?;
    let c = match tenant.sso(&ctx, SsoCmd::Describe { connection: id }).await {
        Ok(SsoAnswer::Connection(c)) => *c,
        Ok(_) => return Err(unexpected()),
        Err(e) => return Err(flow_error(e)),
    };
    let SsoProtocol::Saml(s) = &c.protocol else {
        return Err(ApiError::not_found("connection"));
    };
    let base = connection_base(&state, &slug, id);
    let xml = tessera_saml::sp_metadata(&sp_of(&base, s), Some(&s.sp_certificate));
    Ok((
        [
            (header::CONTENT_TYPE, "application/samlmetadata+xml"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        xml,
    )
        .into_response())
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DiscoverRequest {
    /// The address the user typed.
    #[serde(default)]
    #[schema(min_length = 3, max_length = 254, required = true)]
    pub email: String,
}

/// Where an address signs in.
#[derive(Serialize, ToSchema)]
pub struct DiscoverResponse {
    /// The address's domain signs in through an organization's single sign-on.
    pub sso: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub organization_id: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection_id: Option<Uuid>,
    /// `saml` or `oidc`.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub protocol: Option<&'static str>,
    /// The domain signs in only this way (passwords, mailed codes and registration refuse
    /// it).
    pub sso_only: bool,
    /// Where to send the browser, with `redirect_uri` (one of the tenant's URLs) added.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_url: Option<String>,
}

/// Home-realm discovery: whether the address's domain signs in through an organization's
/// single sign-on, and where the browser starts it. Only a domain an organization proved
/// routes anywhere; the answer is the same whether or not the address has an account.
#[utoipa::path(post, path = "/v1/auth/sso/discover", tag = "organizations",
    security(("api_key" = [])),
    request_body = DiscoverRequest,
    responses(
        (status = 200, description = "Where the address signs in", body = DiscoverResponse),
        InvalidRequest,
        (status = 429, description = "`auth/rate_limited` with `Retry-After`: 60 a minute per client address", body = ErrorBody),
    ))]
pub async fn discover(
    State(state): State<AppState>,
    ApiTenant(tenant): ApiTenant,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<DiscoverRequest>,
) -> Result<Json<DiscoverResponse>, ApiError> {
    let email = tessera_actors::policy::normalize_email(req.email.trim());
    let mut e = FieldErrors::new();
    e.check(
        "email",
        email.as_deref().is_some_and(is_email),
        "an e-mail address",
    );
    e.finish()?;
    let cmd = SsoCmd::Discover {
        email: email.unwrap_or_default(),
        ip,
    };
    let realm = match tenant.sso(&ctx, cmd).await? {
        SsoAnswer::Realm(r) => r,
        _ => return Err(unexpected()),
    };
    Ok(Json(match realm {
        Some(r) => DiscoverResponse {
            sso: true,
            organization_id: Some(r.organization_id),
            connection_id: Some(r.connection_id),
            protocol: Some(r.protocol),
            sso_only: r.sso_only,
            start_url: Some(format!(
                "{}/start",
                connection_base(&state, &tenant.slug, r.connection_id)
            )),
        },
        None => DiscoverResponse {
            sso: false,
            organization_id: None,
            connection_id: None,
            protocol: None,
            sso_only: false,
            start_url: None,
        },
    }))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SsoSessionRequest {
    /// The code the sign-in put in `redirect_uri?code=`.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 128, required = true)]
    pub code: String,
}

/// Trades a single sign-on's exchange code (60 seconds, single-use) for the token pair of a
/// session that works in the connection's organization (`amr` `["fed"]`; the access token
/// carries `org_id`, `org_role`, `org_permissions`), or the MFA step the tenant's policy
/// asks for.
#[utoipa::path(post, path = "/v1/auth/sso/session", tag = "organizations",
    security(("api_key" = [])),
    request_body = SsoSessionRequest,
    responses(
        (status = 200, description = "Signed in, or the MFA step", body = LoginResponse),
        InvalidRequest, UserBlocked,
        (status = 401, description = "`auth/invalid_token`: not an exchange code of this tenant, expired, or already used", body = ErrorBody),
    ))]
pub async fn session(
    State(state): State<AppState>,
    ApiTenant(tenant): ApiTenant,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<SsoSessionRequest>,
) -> Result<Json<LoginResponse>, ApiError> {
    let mut e = FieldErrors::new();
    e.check(
        "code",
        len_between(&req.code, 1, 128),
        "the exchange code, 1-128 characters",
    );
    e.finish()?;
    let login = match tenant.sso(&ctx, SsoCmd::Session { code: req.code }).await {
        Ok(SsoAnswer::Login(l)) => *l,
        Ok(_) => return Err(unexpected()),
        Err(CallError::Failed(TenantError::Sso(SsoError::ExchangeInvalid))) => {
            return Err(super::error::invalid_token())
        }
        Err(e) => return Err(e.into()),
    };
    Ok(Json(login_answer(&state, &tenant, login.outcome).await?))
}

/// How single sign-on's refusals answer where no route answered them itself.
impl From<SsoError> for ApiError {
    fn from(e: SsoError) -> Self {
        match e {
            SsoError::UnknownConnection => ApiError::not_found("connection"),
            SsoError::Disabled => ApiError::new(
                StatusCode::BAD_REQUEST,
                "sso/connection_disabled",
                "the connection is disabled",
            ),
            SsoError::ConnectionLimit { limit } => ApiError::new(
                StatusCode::CONFLICT,
                "organization/limit_reached",
                format!("an organization has at most {limit} connections"),
            ),
            SsoError::StateInvalid | SsoError::StateForeign { .. } => invalid_state(),
            SsoError::UnsolicitedRefused => ApiError::new(
                StatusCode::BAD_REQUEST,
                "sso/unsolicited",
                "this connection takes no unsolicited (IdP-initiated) responses",
            ),
            SsoError::RedirectNotAllowed => ApiError::invalid_field(
                "redirect_uri",
                "must be one of the tenant's URLs (settings/urls), exactly",
            ),
            SsoError::Refused(why) => ApiError::new(
                StatusCode::FORBIDDEN,
                format!("sso/{}", why.as_str()),
                "the sign-in was refused",
            ),
            SsoError::ExchangeInvalid => super::error::invalid_token(),
            SsoError::Incomplete { field } => {
                ApiError::invalid_field(field, "required for this connection")
            }
            SsoError::NotTenantUrl { field } => {
                ApiError::invalid_field(field, "must be one of the tenant's URLs (settings/urls)")
            }
            SsoError::Required { connection } => ApiError::new(
                StatusCode::FORBIDDEN,
                "auth/sso_required",
                "this address signs in with its organization's single sign-on",
            )
            .with_details(serde_json::json!({ "connection_id": connection })),
        }
    }
}
