//! Social sign-in (spec 4.2): the authorize route and the callback at the accounts URL, and
//! the exchange of the callback's token for a session.
//!
//! 1. `GET {accounts_url}/oauth/{provider}/authorize?tenant_id=&redirect_uri=` (an optional
//!    guest's bearer token in `Authorization`): the tenant's actor stores the flow (state,
//!    nonce, PKCE verifier, where to go back, the guest) for 10 minutes under the hash of its
//!    `state`; the browser gets a cookie binding the flow to it (`HttpOnly`,
//!    `SameSite=Lax`; `None` and `Secure` for Apple, whose answer is a cross-site form post)
//!    and a 302 to the provider.
//! 2. `GET|POST {accounts_url}/oauth/{provider}/callback`: the `state` names its tenant; the
//!    actor takes the flow once, in the browser holding its cookie; the code is exchanged and
//!    the ID token checked (or the provider's API read) here, off the actor; the actor decides
//!    who the user is; the browser goes back to `redirect_uri?access_token=<exchange token>`
//!    (ES256, `typ` exchange+jwt, 60 seconds, single-use), or `?error=`.
//! 3. `POST /v1/auth/social/{provider}/session` (API key): the app's back end trades the
//!    exchange token for the token pair (`amr` `["fed"]`), or the MFA step.

use axum::{
    extract::{Path, Query, RawQuery, State},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::Response,
    Json,
};
use serde::Deserialize;
use tessera_actors::{
    tenant::{
        keys::ExchangeClaims,
        social::{
            Provider, SocialAnswer, SocialCmd, SocialFinished, SocialPending, SocialStart,
            EXCHANGE_TTL,
        },
    },
    CallError, TenantError, TenantHandle, TenantMsg,
};
use tessera_actors::{GuestError, SocialError};
use tessera_storage::{sha256, TenantId};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{
    bearer::{bearer_header, issuer, verify, BearerHeader},
    error::{invalid_token, len_between, ApiError, ErrorBody, FieldErrors},
    extract::{served_here, ApiJson, ApiTenant, ClientIp, RequestCtx},
    pages::{cookie, with_query, LinkView, Problem, Reader},
    reauth::{exchange_audience, exchange_sign_in, SOCIAL_DONE_COOKIE},
    responses::{self, login_answer, LoginResponse},
};
use crate::app::{App, AppState};
use crate::http::error_responses::{InvalidRequest, UserBlocked};
use crate::social::Exchange;

/// Whether a `GET /oauth/{name}/authorize` is a social sign-in: a provider's name and a
/// `tenant_id` (the authorization server's hosted sign-in page of a tenant whose slug is a
/// provider's name never has one).
pub fn is_social_authorize(name: &str, query: Option<&str>) -> bool {
    Provider::parse(name).is_some()
        && query
            .is_some_and(|q| form_urlencoded::parse(q.as_bytes()).any(|(k, _)| k == "tenant_id"))
}

#[derive(Deserialize)]
pub struct AuthorizeQuery {
    tenant_id: Option<String>,
    redirect_uri: Option<String>,
    /// Set by the authorization server's hosted sign-in page: its authorize request, which
    /// the sign-in returns to (`/oauth/<slug>/social-return?<it>`) instead of an app URL.
    hosted: Option<String>,
    /// From `POST /v1/users/me/link/{provider}`: the flow links to that user and returns to
    /// the URL the link request named.
    link_ticket: Option<String>,
    /// The link confirmation page's value, bound to the browser that saw the page.
    csrf: Option<String>,
}

/// The provider of a path; 404 for any other name.
fn provider_of(name: &str) -> Result<Provider, ApiError> {
    Provider::parse(name).ok_or_else(|| ApiError::not_found("social provider"))
}

fn callback_url(app: &App, p: Provider) -> String {
    format!("{}/oauth/{}/callback", app.accounts_base(), p.as_str())
}

/// The name of the cookie that binds the flow of `state` to the browser.
fn cookie_name(state: &str) -> String {
    format!(
        "tessera_social_{}",
        &hex::encode(sha256(state.as_bytes()))[..16]
    )
}

/// The flow's cookie: `value` for 10 minutes, or cleared (`None`).
fn flow_cookie(app: &App, p: Provider, state: &str, value: Option<&str>) -> Option<HeaderValue> {
    let secure = app.accounts_base().starts_with("https://");
    // Apple answers with a cross-site form post, which carries only a `SameSite=None` cookie
    // (and browsers take those only with `Secure`).
    let same_site = if p == Provider::Apple && secure {
        "None"
    } else {
        "Lax"
    };
    let mut c = format!(
        "{}={}; Path=/oauth/{}/callback; HttpOnly; SameSite={same_site}; Max-Age={}",
        cookie_name(state),
        value.unwrap_or(""),
        p.as_str(),
        if value.is_some() { 600 } else { 0 },
    );
    if secure {
        c.push_str("; Secure");
    }
    HeaderValue::from_str(&c).ok()
}

/// The cookie that hands a hosted flow's outcome to the hosted sign-in page (see
/// [`SOCIAL_DONE_COOKIE`]): `t.<token>` for `access_token`, `e.<error>` for `error`.
fn done_cookie(app: &App, slug: &str, name: &str, value: &str) -> Option<HeaderValue> {
    let tag = if name == "access_token" { "t" } else { "e" };
    let mut c = format!(
        "{SOCIAL_DONE_COOKIE}={tag}.{value}; Path=/oauth/{slug}/social-return; HttpOnly; SameSite=Lax; Max-Age=60"
    );
    if app.accounts_base().starts_with("https://") {
        c.push_str("; Secure");
    }
    HeaderValue::from_str(&c).ok()
}

/// `to` with `name=value` added to its query (`to` as it is when it is no URL).
fn with_param(to: &str, name: &str, value: &str) -> String {
    with_query(to, name, value).unwrap_or_else(|| to.to_owned())
}

fn not_configured(p: Provider) -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "account_linking/provider_not_configured",
        format!("{} sign-in is not enabled for this tenant", p.as_str()),
    )
}

fn invalid_state() -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "social/invalid_state",
        "this sign-in is unknown, already finished or expired: start again from the app",
    )
}

async fn social(
    tenant: &TenantHandle,
    ctx: &tessera_actors::tenant::audit::AuditContext,
    cmd: SocialCmd,
) -> Result<SocialAnswer, CallError<TenantError>> {
    tenant
        .call(|reply| TenantMsg::Social {
            cmd: cmd.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await
}

/// What both routes that start a social sign-in read, in this order: the state, the
/// provider's name, the query, the browser's headers, its address and the audit context.
type Start = (
    State<AppState>,
    Path<String>,
    Query<AuthorizeQuery>,
    HeaderMap,
    ClientIp,
    RequestCtx,
);

/// Starts a social sign-in: stores the flow and sends the browser to the provider. A link
/// ticket's URL first shows the confirmation page (see [`link_confirm`]).
pub async fn authorize(start: Start) -> Result<Response, ApiError> {
    let (State(state), Path(name), Query(q), headers, ClientIp(ip), RequestCtx(ctx)) = start;
    if q.hosted.is_none() {
        if let (Some(ticket), Some(tenant)) = (&q.link_ticket, &q.tenant_id) {
            return link_page(&state, &name, tenant, ticket, &headers, ctx).await;
        }
    }
    begin(&state, &name, q, &headers, ip, ctx).await
}

/// The path the link confirmation page posts to.
fn link_confirm_path(p: Provider) -> String {
    format!("/oauth/{}/link-confirm", p.as_str())
}

/// The tenant of a `tenant_id` parameter.
fn tenant_of_id(app: &App, id: &str) -> Result<TenantHandle, ApiError> {
    let tenant = Uuid::try_parse(id)
        .ok()
        .and_then(|id| app.directory.tenant_by_id(TenantId(id)))
        .ok_or_else(|| ApiError::not_found("tenant"))?;
    served_here(app, tenant.id)?;
    Ok(tenant)
}

/// The page a link ticket's URL opens: which account the provider account will be linked
/// to, and a button (a form bound to this browser) that starts it. Nothing is used here, so a
/// link opened by someone else (sent by whoever asked for the ticket) does nothing unless
/// they confirm linking their provider account to an account they can see is not theirs.
async fn link_page(
    app: &AppState,
    name: &str,
    tenant_id: &str,
    ticket: &str,
    headers: &HeaderMap,
    ctx: tessera_actors::tenant::audit::AuditContext,
) -> Result<Response, ApiError> {
    let p = provider_of(name)?;
    let tenant = tenant_of_id(app, tenant_id)?;
    let peek = social(
        &tenant,
        &ctx,
        SocialCmd::PeekTicket {
            provider: p,
            ticket: ticket.to_owned(),
        },
    )
    .await;
    let mut reader = Reader::new(app, headers, None);
    let view = match peek {
        Ok(SocialAnswer::TicketView(v)) => *v,
        Ok(_) => return Err(ApiError::internal("unexpected social answer")),
        Err(CallError::Failed(TenantError::Social(SocialError::StateInvalid))) => {
            return Err(invalid_ticket())
        }
        Err(e) => return Err(e.into()),
    };
    reader.set_tenant(&view.tenant_name, &view.default_locale);
    let provider = p.display_name();
    let mut page = reader.page("link-confirm-title");
    page.title = reader.t_with("link-confirm-title", &[("provider", provider)]);
    page.paragraphs.push(reader.t_with(
        "link-confirm-intro",
        &[("provider", provider), ("account", &view.account)],
    ));
    page.paragraphs
        .push(reader.t_with("link-confirm-warning", &[("provider", provider)]));
    // A link, not a form: the provider and then the app answer with redirects, which a
    // form's `form-action` policy would have to list one by one.
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("tenant_id", tenant_id)
        .append_pair("link_ticket", ticket)
        .append_pair("csrf", &reader.csrf(&link_confirm_path(p), ticket))
        .finish();
    page.link = Some(LinkView {
        href: format!("{}?{query}", link_confirm_path(p)),
        label: reader.t_with("link-confirm-button", &[("provider", provider)]),
    });
    Ok(reader.answer(StatusCode::OK, page, &[]))
}

/// The link confirmation page's button: its CSRF value (only the browser that saw the page
/// has it: it is bound to that browser's cookie), then the flow as any other. A GET, since it
/// starts a chain of redirects; the ticket it uses was never mailed.
pub async fn link_confirm(start: Start) -> Result<Response, ApiError> {
    let (State(state), Path(name), Query(q), headers, ClientIp(ip), RequestCtx(ctx)) = start;
    let p = provider_of(&name)?;
    let ticket = q.link_ticket.clone().unwrap_or_default();
    let sent = q.csrf.clone().unwrap_or_default();
    let reader = Reader::new(&state, &headers, None);
    if q.hosted.is_some() || !reader.csrf_ok(&link_confirm_path(p), &ticket, &sent) {
        return Ok(reader.problem(Problem::Csrf));
    }
    begin(&state, &name, q, &headers, ip, ctx).await
}

fn invalid_ticket() -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "social/invalid_link_ticket",
        "this link request is unknown, already used or expired: ask again",
    )
}

/// Stores the flow and sends the browser to the provider.
async fn begin(
    state: &AppState,
    name: &str,
    q: AuthorizeQuery,
    headers: &HeaderMap,
    ip: std::net::IpAddr,
    ctx: tessera_actors::tenant::audit::AuditContext,
) -> Result<Response, ApiError> {
    let p = provider_of(name)?;
    let mut e = FieldErrors::new();
    let tenant_id = q.tenant_id.as_deref().and_then(|t| Uuid::try_parse(t).ok());
    e.check("tenant_id", tenant_id.is_some(), "a tenant's id (UUID)");
    let redirect_uri = q.redirect_uri.unwrap_or_default();
    match (&q.hosted, &q.link_ticket) {
        (Some(_), Some(_)) => e.check("link_ticket", false, "not with hosted"),
        (Some(h), None) => e.check("hosted", len_between(h, 1, 4096), "1-4096 characters"),
        (None, Some(t)) => e.check("link_ticket", len_between(t, 1, 128), "1-128 characters"),
        (None, None) => e.check(
            "redirect_uri",
            len_between(&redirect_uri, 1, 2048),
            "one of the tenant's URLs (settings/urls)",
        ),
    };
    e.finish()?;
    let tenant = tenant_id
        .and_then(|id| state.directory.tenant_by_id(TenantId(id)))
        .ok_or_else(|| ApiError::not_found("tenant"))?;
    served_here(state, tenant.id)?;
    // The hosted page's return page is this server's, whatever the tenant's URLs are.
    let hosted = q.hosted.is_some();
    let redirect_uri = match &q.hosted {
        Some(h) => format!(
            "{}/oauth/{}/social-return?{h}",
            state.accounts_base(),
            tenant.slug
        ),
        None => redirect_uri,
    };
    let guest = match bearer_header(headers) {
        BearerHeader::Absent => None,
        BearerHeader::Malformed => return Err(invalid_token()),
        BearerHeader::Token(t) => {
            let keys = tenant.keys().await?;
            Some(verify(state, &tenant, &keys, t)?.1)
        }
    };
    let begun = social(
        &tenant,
        &ctx,
        SocialCmd::Begin {
            provider: p,
            redirect_uri: redirect_uri.clone(),
            hosted,
            guest,
            link_ticket: q.link_ticket.clone(),
            ip,
        },
    )
    .await;
    let start: SocialStart = match begun {
        Ok(SocialAnswer::Started(s)) => *s,
        Ok(_) => return Err(ApiError::internal("unexpected social answer")),
        Err(CallError::Failed(TenantError::Social(SocialError::NotConfigured))) => {
            return Err(not_configured(p))
        }
        Err(CallError::Failed(TenantError::Social(SocialError::RedirectNotAllowed))) => {
            return Err(ApiError::invalid_field(
                "redirect_uri",
                "must be one of the tenant's URLs (settings/urls), exactly",
            ))
        }
        Err(CallError::Failed(TenantError::Guest(GuestError::AlreadyClaimed))) => {
            return Ok(responses::found_quietly(&with_param(
                &redirect_uri,
                "error",
                "already_claimed",
            )))
        }
        Err(CallError::Failed(TenantError::InvalidSession)) => return Err(invalid_token()),
        Err(CallError::Failed(TenantError::Social(SocialError::StateInvalid))) => {
            return Err(invalid_ticket())
        }
        Err(e) => return Err(e.into()),
    };
    let to = match state
        .social
        .authorize_url(p, &start, &callback_url(state, p))
        .await
    {
        Ok(u) => u,
        Err(err) => {
            tracing::warn!(provider = p.as_str(), error = %err, "a social sign-in could not start");
            return Ok(responses::found_quietly(&with_param(
                &start.redirect_uri,
                "error",
                err.code(),
            )));
        }
    };
    let mut resp = responses::found_quietly(&to);
    if let Some(c) = flow_cookie(state, p, &start.state, Some(&start.binding)) {
        resp.headers_mut().append(header::SET_COOKIE, c);
    }
    Ok(resp)
}

/// The provider's answer: `code` and `state`, or `error`; Apple's first answer also carries
/// `user` (the name), which is not kept.
#[derive(Default)]
struct CallbackParams {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

impl CallbackParams {
    /// The parameters of a query or a form body; a repeated one keeps its first value.
    fn parse(raw: &[u8]) -> Self {
        let mut p = CallbackParams::default();
        for (k, v) in form_urlencoded::parse(raw) {
            let slot = match k.as_ref() {
                "code" => &mut p.code,
                "state" => &mut p.state,
                "error" => &mut p.error,
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some(v.into_owned());
            }
        }
        p
    }
}

/// `GET /oauth/{provider}/callback`: the provider's redirect.
pub async fn callback_get(
    State(state): State<AppState>,
    Path(name): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    RequestCtx(ctx): RequestCtx,
) -> Result<Response, ApiError> {
    let params = CallbackParams::parse(query.as_deref().unwrap_or("").as_bytes());
    callback(&state, &name, params, &headers, ctx).await
}

/// `POST /oauth/{provider}/callback`: the provider's form post (Apple's `form_post`).
pub async fn callback_post(
    State(state): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
    RequestCtx(ctx): RequestCtx,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let params = CallbackParams::parse(&body);
    callback(&state, &name, params, &headers, ctx).await
}

async fn callback(
    app: &AppState,
    name: &str,
    params: CallbackParams,
    headers: &HeaderMap,
    ctx: tessera_actors::tenant::audit::AuditContext,
) -> Result<Response, ApiError> {
    let p = provider_of(name)?;
    let flow_state = params.state.unwrap_or_default();
    let tenant = flow_state
        .split_once('.')
        .and_then(|(id, _)| Uuid::try_parse(id).ok())
        .and_then(|id| app.directory.tenant_by_id(TenantId(id)))
        .ok_or_else(invalid_state)?;
    served_here(app, tenant.id)?;
    let binding = cookie(headers, &cookie_name(&flow_state))
        .unwrap_or_default()
        .to_owned();
    let taken = social(
        &tenant,
        &ctx,
        SocialCmd::Take {
            provider: p,
            state: flow_state.clone(),
            binding,
        },
    )
    .await;
    let clear = flow_cookie(app, p, &flow_state, None);
    let pending: SocialPending = match taken {
        Ok(SocialAnswer::Pending(p)) => *p,
        Ok(_) => return Err(ApiError::internal("unexpected social answer")),
        Err(CallError::Failed(TenantError::Social(SocialError::StateInvalid))) => {
            return Err(invalid_state())
        }
        Err(CallError::Failed(TenantError::Social(SocialError::StateForeign {
            redirect_uri,
            hosted,
        }))) => {
            if hosted {
                return Err(invalid_state());
            }
            let mut resp =
                responses::found_quietly(&with_param(&redirect_uri, "error", "invalid_state"));
            if let Some(c) = &clear {
                resp.headers_mut().append(header::SET_COOKIE, c.clone());
            }
            return Ok(resp);
        }
        Err(CallError::Failed(TenantError::Social(SocialError::NotConfigured))) => {
            return Err(not_configured(p))
        }
        Err(e) => return Err(e.into()),
    };
    // Back to the app with `name=value` in the query, or to the hosted sign-in page with it
    // in a cookie.
    let done = |name: &str, value: &str| {
        let to = &pending.redirect_uri;
        let mut resp = if pending.hosted {
            let mut resp = responses::found_quietly(to);
            if let Some(c) = done_cookie(app, &tenant.slug, name, value) {
                resp.headers_mut().append(header::SET_COOKIE, c);
            }
            resp
        } else {
            responses::found_quietly(&with_param(to, name, value))
        };
        if let Some(c) = &clear {
            resp.headers_mut().append(header::SET_COOKIE, c.clone());
        }
        resp
    };
    if let Some(error) = params.error {
        let code = match error.as_str() {
            "access_denied" | "user_cancelled_authorize" => "access_denied",
            _ => "provider_error",
        };
        return Ok(done("error", code));
    }
    let Some(code) = params.code.filter(|c| !c.is_empty() && c.len() <= 2048) else {
        return Ok(done("error", "provider_error"));
    };
    let identity = match app
        .social
        .identity(Exchange {
            provider: p,
            pending: &pending,
            code: &code,
            callback: &callback_url(app, p),
        })
        .await
    {
        Ok(i) => i,
        Err(err) => {
            tracing::warn!(provider = p.as_str(), error = %err, "a social sign-in failed at the provider");
            return Ok(done("error", err.code()));
        }
    };
    let finished = social(
        &tenant,
        &ctx,
        SocialCmd::Finish {
            provider: p,
            identity,
            guest: pending.guest,
            link_user: pending.link_user,
        },
    )
    .await;
    let finished: SocialFinished = match finished {
        Ok(SocialAnswer::Finished(f)) => f,
        Ok(SocialAnswer::Linked) => return Ok(done("linked", p.as_str())),
        Ok(_) => return Err(ApiError::internal("unexpected social answer")),
        Err(CallError::Failed(TenantError::Social(SocialError::Refused(why)))) => {
            return Ok(done("error", why.as_str()))
        }
        Err(e) => return Err(e.into()),
    };
    let token = exchange_token(app, &tenant, p, &finished).await?;
    Ok(done("access_token", &token))
}

async fn exchange_token(
    app: &App,
    tenant: &TenantHandle,
    p: Provider,
    f: &SocialFinished,
) -> Result<String, ApiError> {
    let keys = tenant.keys().await?;
    let exp = f.expires_at.unix_timestamp();
    let claims = ExchangeClaims {
        iss: issuer(app, &tenant.slug),
        sub: f.user_id.to_string(),
        aud: exchange_audience(&tenant.slug),
        exp,
        iat: exp - EXCHANGE_TTL.whole_seconds(),
        jti: f.jti.to_string(),
        tid: tenant.id.0.to_string(),
        provider: p.as_str().to_owned(),
    };
    keys.sign_exchange(&claims).map_err(ApiError::internal)
}

/// Spec 2.1's social session request.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SocialSessionRequest {
    /// The exchange token the callback put in `redirect_uri?access_token=`.
    #[serde(default)]
    #[schema(min_length = 1, required = true)]
    pub access_token: String,
    /// The tenant the app expects (checked against the API key's); null: the API key's.
    #[serde(default)]
    #[schema(min_length = 1, required = true)]
    pub tenant_slug: Option<String>,
}

/// Trades a social sign-in's exchange token (60 seconds, single-use) for the token pair
/// (`amr` `["fed"]`, `aal` AAL1), or the MFA step the tenant's policy asks for.
#[utoipa::path(post, path = "/v1/auth/social/{provider}/session", tag = "social",
    security(("api_key" = [])),
    params(("provider" = String, Path, description = "google, apple, microsoft, gitlab, linkedin, slack, github, discord, facebook or x")),
    request_body = SocialSessionRequest,
    responses(
        (status = 200, description = "Signed in, or the MFA step", body = LoginResponse),
        InvalidRequest, UserBlocked,
        (status = 401, description = "`auth/invalid_token`: not an exchange token of this tenant and provider, expired, or already used", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: an unknown provider, or another tenant's token or `tenant_slug`", body = ErrorBody),
    ))]
pub async fn session(
    State(state): State<AppState>,
    ApiTenant(tenant): ApiTenant,
    Path(name): Path<String>,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<SocialSessionRequest>,
) -> Result<Json<LoginResponse>, ApiError> {
    let p = provider_of(&name)?;
    let mut e = FieldErrors::new();
    e.check(
        "access_token",
        len_between(&req.access_token, 1, 4096),
        "the exchange token, 1-4096 characters",
    );
    if let Some(slug) = &req.tenant_slug {
        e.check("tenant_slug", len_between(slug, 1, 64), "1-64 characters");
    }
    e.finish()?;
    if req.tenant_slug.as_deref().is_some_and(|s| s != tenant.slug) {
        return Err(ApiError::not_found("tenant"));
    }
    let login = exchange_sign_in(&state, &tenant, &req.access_token, Some(p), &ctx).await?;
    Ok(Json(login_answer(&state, &tenant, login.outcome).await?))
}

/// How social sign-in's refusals answer.
impl From<SocialError> for ApiError {
    fn from(e: SocialError) -> Self {
        match e {
            SocialError::CredentialMissing { field, reason } => {
                ApiError::invalid_field(field, reason)
            }
            // The routes answer the others themselves; one reaching here is a fault.
            other => ApiError::internal(other),
        }
    }
}
