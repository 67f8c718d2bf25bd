//! RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0): a relying party sends the
//! browser here with the ID token it got (`id_token_hint`, recommended) or its `client_id`,
//! and one of its registered post-logout URIs; the sign-in session ends, and the browser goes
//! back to that URI with `state`.
//!
//! - An API caller (not a browser's navigation) names the session by `id_token_hint`, which
//!   it must send: that session ends at once, answered by a 302 to the post-logout URI or
//!   `{"signed_out": true}`, and every fault is the service's JSON error.
//! - A browser's navigation (see [`is_navigation`]) is sent (302) to the hosted page at the
//!   accounts URL, `{accounts_url}/oauth/{slug}/logout` with the same query, under the path
//!   of the tenant's hosted sign-in cookie, where every answer is a page. A hint whose
//!   session is the cookie's ends it without asking. Anything else (no hint, a hint of
//!   another session, no cookie) shows a confirmation page whose button ends the cookie's
//!   session and the hint's, then sends the browser to the post-logout URI (303) or shows the
//!   signed-out page. Its form's CSRF value is the pages' own, bound to the whole request.

use std::sync::Arc;

use axum::{
    body::Bytes,
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde::Serialize;
use tessera_actors::{
    tenant::{
        audit::AuditContext, messages::Bearer, oauth::OAuthCmd, oauth_clients::OAuthClientRecord,
    },
    CallError, TenantError, TenantHandle,
};
use utoipa::ToSchema;

use super::{
    hosted::{clear_sign_in_cookie, dress, signed_in, Visit},
    oauth,
    request::{is_navigation, redirect_with},
    Params,
};
use crate::{
    app::AppState,
    http::{
        bearer::issuer,
        error::{ApiError, ErrorBody},
        extract::{tenant_by_slug, RequestCtx},
        pages::{field, form_fields, see_other, FormView, Problem, Reader},
        path_id::TenantSlug,
        responses::found,
    },
};

fn bad(code: &str, message: &str) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, code, message)
}

/// Answered when no post-logout URI was given.
#[derive(Serialize, ToSchema)]
pub struct SignedOut {
    /// Always true.
    pub signed_out: bool,
}

/// A logout request, checked.
struct Asked {
    /// The relying party: the hint's audience, else `client_id`.
    client: Option<Arc<OAuthClientRecord>>,
    /// One of the client's registered post-logout URIs, exactly.
    back: Option<String>,
    state: Option<String>,
    /// The sign-in session (and its user) that the hint names.
    hinted: Option<Bearer>,
}

impl Asked {
    /// The post-logout URI with `state`.
    fn back_with_state(&self) -> Option<String> {
        let uri = self.back.as_deref()?;
        Some(match &self.state {
            Some(s) => redirect_with(uri, &[("state", s)]),
            None => uri.to_owned(),
        })
    }

    fn client_id(&self) -> Option<String> {
        self.client.as_ref().map(|c| c.client_id.clone())
    }
}

/// The rules of a logout request, for the API and the pages alike: a hint must be an ID
/// token of this tenant (expired or not) whose client still exists and is `client_id` when
/// both are sent; a post-logout URI needs the client and must be one of its registered ones.
async fn check(state: &AppState, tenant: &TenantHandle, p: &Params) -> Result<Asked, ApiError> {
    let claims = match p.get("id_token_hint") {
        None => None,
        Some(hint) => {
            let keys = tenant.keys().await?;
            let claims = keys
                .verify_id_token_hint(hint, &issuer(state, &tenant.slug))
                .map_err(|_| {
                    bad(
                        "oauth/invalid_request",
                        "id_token_hint is not an ID token of this tenant",
                    )
                })?;
            Some(claims)
        }
    };
    let client_id = p.get("client_id");
    if let (Some(c), Some(id)) = (&claims, client_id) {
        if id != c.aud {
            return Err(bad(
                "oauth/invalid_client",
                "client_id is not the ID token's client",
            ));
        }
    }
    let clients = tenant.oauth_clients().await?;
    let client = match (&claims, client_id) {
        (Some(c), _) => Some(clients.get(&c.aud).cloned().ok_or_else(|| {
            bad(
                "oauth/invalid_client",
                "the ID token's client no longer exists",
            )
        })?),
        (None, Some(id)) => Some(clients.get(id).cloned().ok_or_else(|| {
            bad(
                "oauth/invalid_client",
                "client_id is not a client of this tenant",
            )
        })?),
        (None, None) => None,
    };
    let back = match (p.get("post_logout_redirect_uri"), &client) {
        (None, _) => None,
        (Some(uri), Some(c)) if c.profile.post_logout_redirect_uris.iter().any(|u| u == uri) => {
            Some(uri.to_owned())
        }
        (Some(_), Some(_)) => {
            return Err(bad(
                "oauth/invalid_post_logout_redirect_uri",
                "post_logout_redirect_uri is not one of the client's registered post-logout URIs, exactly",
            ))
        }
        (Some(_), None) => {
            return Err(bad(
                "oauth/invalid_request",
                "post_logout_redirect_uri needs its client: send client_id or id_token_hint",
            ))
        }
    };
    let hinted = claims.and_then(|c| {
        Some(Bearer {
            user_id: c.sub.parse().ok()?,
            session_id: c.sid?.parse().ok()?,
        })
    });
    Ok(Asked {
        client,
        back,
        state: p.get("state").map(str::to_owned),
        hinted,
    })
}

/// Ends `sessions` (those still live first-party sessions of their users).
async fn end(
    tenant: &TenantHandle,
    ctx: AuditContext,
    sessions: Vec<Bearer>,
    asked: &Asked,
) -> Result<(), CallError<TenantError>> {
    if sessions.is_empty() {
        return Ok(());
    }
    let cmd = OAuthCmd::EndSession {
        sessions,
        client_id: asked.client_id(),
    };
    oauth(tenant, ctx, cmd).await.map(|_| ())
}

/// Drops the tenant's hosted sign-in cookie: its session is over, and where the accounts URL
/// shares this host the browser forgets it.
fn clear_cookie(tenant: &TenantHandle, resp: &mut Response) {
    if let Some(c) = clear_sign_in_cookie(tenant) {
        resp.headers_mut().append(header::SET_COOKIE, c);
    }
}

/// Ends the sign-in session named by `id_token_hint` (an ID token of this tenant, expired or
/// not) and sends the caller to `post_logout_redirect_uri` (one of the client's registered
/// post-logout URIs, exactly) with `state`. A browser's navigation goes to the hosted logout
/// page instead, which asks before it ends a session the browser is not signed in with.
#[utoipa::path(get, path = "/v1/tenants/{slug}/oauth/end_session", tag = "oauth",
    params(
        TenantSlug,
        ("id_token_hint" = Option<String>, Query, description = "An ID token this tenant issued (expired or not). Required of API callers; a browser without it is asked"),
        ("client_id" = Option<String>, Query, description = "The client; with a hint, it must be the ID token's audience"),
        ("post_logout_redirect_uri" = Option<String>, Query, description = "One of the client's post_logout_redirect_uris, exactly; needs `client_id` or `id_token_hint`"),
        ("state" = Option<String>, Query, description = "Returned unchanged"),
    ),
    responses(
        (status = 302, description = "To the post-logout URI; or, for a browser's navigation (no `Authorization`, an `Accept` that names `text/html`), to the hosted logout page `{accounts_url}/oauth/{slug}/logout` with the same query, which answers HTML only: the session ends there at once when the hint's session is the browser's hosted sign-in, else after a confirmation page"),
        (status = 200, description = "Signed out; no post-logout URI was asked for", body = SignedOut),
        (status = 400, description = "`oauth/invalid_request` (no or a bad `id_token_hint`, one naming no session, a post-logout URI without its client, a repeated parameter), `oauth/invalid_client` (`client_id` is not the token's client, or the client is gone), `oauth/invalid_post_logout_redirect_uri`", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: no such tenant", body = ErrorBody),
    ))]
pub async fn end_session(visit: Visit, RequestCtx(ctx): RequestCtx) -> Result<Response, ApiError> {
    let (state, slug, query, headers) = visit.into_parts();
    if is_navigation(&headers) {
        return Ok(to_hosted(&state, &headers, &slug, query.as_deref()));
    }
    let tenant = tenant_by_slug(&state, &slug)?;
    let p = Params::parse(query.unwrap_or_default().as_bytes())
        .map_err(|e| bad("oauth/invalid_request", &e))?;
    if p.get("id_token_hint").is_none() {
        return Err(bad(
            "oauth/invalid_request",
            "id_token_hint is required: the ID token the client was given (a browser is asked instead)",
        ));
    }
    let asked = check(&state, &tenant, &p).await?;
    let Some(session) = asked.hinted else {
        return Err(bad(
            "oauth/invalid_request",
            "id_token_hint names no sign-in session",
        ));
    };
    end(&tenant, ctx, vec![session], &asked).await?;
    let mut resp = match asked.back_with_state() {
        Some(to) => found(&to).map_err(ApiError::internal)?,
        None => Json(SignedOut { signed_out: true }).into_response(),
    };
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    clear_cookie(&tenant, &mut resp);
    Ok(resp)
}

/// The hosted logout page's path (under the hosted sign-in cookie's path).
fn hosted_path(slug: &str) -> String {
    format!("/oauth/{slug}/logout")
}

/// `302` to the hosted logout page with the same query; a page when there is no such tenant.
fn to_hosted(state: &AppState, headers: &HeaderMap, slug: &str, query: Option<&str>) -> Response {
    let Some(tenant) = state.directory.tenant_for_slug(slug) else {
        let reader = Reader::new(state, headers, None);
        return reader.problem_page(
            StatusCode::NOT_FOUND,
            "logout-invalid-title",
            "logout-invalid",
        );
    };
    let mut to = format!("{}{}", state.accounts_base(), hosted_path(&tenant.slug));
    if let Some(q) = query.filter(|q| !q.is_empty()) {
        to.push('?');
        to.push_str(q);
    }
    found(&to).unwrap_or_else(|_| Reader::new(state, headers, None).problem(Problem::Invalid))
}

/// A hosted logout request: its tenant, its query (what the form's CSRF value binds), and
/// what it asks.
struct Hosted {
    tenant: TenantHandle,
    query: String,
    asked: Asked,
}

impl Hosted {
    fn action(&self) -> String {
        let path = hosted_path(&self.tenant.slug);
        if self.query.is_empty() {
            path
        } else {
            format!("{path}?{}", self.query)
        }
    }
}

/// The page's reader and the request behind the hosted page, checked; or the page that says
/// what is wrong with it.
async fn open(visit: &Visit) -> Result<(Reader, Hosted), Response> {
    let state = &visit.state;
    let mut reader = Reader::new(state, &visit.headers, None);
    let tenant = state
        .directory
        .tenant_for_slug(&visit.slug)
        .ok_or_else(|| {
            reader.problem_page(
                StatusCode::NOT_FOUND,
                "logout-invalid-title",
                "logout-invalid",
            )
        })?;
    dress(&mut reader, &tenant).await?;
    let query = visit.query.clone().unwrap_or_default();
    let p = Params::parse(query.as_bytes())
        .map_err(|e| refused(&reader, &bad("oauth/invalid_request", &e)))?;
    let asked = check(state, &tenant, &p)
        .await
        .map_err(|e| refused(&reader, &e))?;
    let hosted = Hosted {
        tenant,
        query,
        asked,
    };
    Ok((reader, hosted))
}

/// A request the page will not carry out: said, never redirected.
fn refused(reader: &Reader, e: &ApiError) -> Response {
    match e.status {
        StatusCode::BAD_REQUEST => {
            let mut page = reader.page("logout-invalid-title");
            page.paragraphs.push(reader.t("logout-invalid"));
            page.paragraphs.push(e.message.clone());
            reader.answer(StatusCode::BAD_REQUEST, page, &[])
        }
        StatusCode::SERVICE_UNAVAILABLE => reader.problem(Problem::Busy),
        _ => reader.problem(Problem::Internal),
    }
}

/// The hosted logout page (`GET {accounts_url}/oauth/{slug}/logout`): a hint of the browser's
/// own sign-in ends it at once; anything else is asked.
pub async fn logout_page(visit: Visit, RequestCtx(ctx): RequestCtx) -> Response {
    let (reader, req) = match open(&visit).await {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let cookie = signed_in(&visit.state, &req.tenant, &visit.headers);
    match (req.asked.hinted, cookie) {
        (Some(h), Some(c)) if h.session_id == c.session_id && h.user_id == c.user_id => {
            signed_out(&reader, &req, ctx, vec![c], StatusCode::FOUND).await
        }
        _ => confirm_page(&reader, &req),
    }
}

/// Asks whether to sign out of the tenant in this browser.
fn confirm_page(reader: &Reader, req: &Hosted) -> Response {
    let mut page = reader.page("logout-title");
    page.paragraphs.push(match &req.asked.client {
        Some(c) => reader.t_with("logout-intro-client", &[("client", &c.profile.name)]),
        None => reader.t("logout-intro"),
    });
    let csrf = reader.csrf(&hosted_path(&req.tenant.slug), &req.query);
    let mut form = FormView::new(csrf, reader.t("logout-button"));
    form.action = Some(req.action());
    page.forms.push(form);
    // After the post the browser goes on to the post-logout URI.
    let targets: Vec<&str> = req.asked.back.as_deref().into_iter().collect();
    reader.answer(StatusCode::OK, page, &targets)
}

/// The confirmation's post: ends the browser's hosted sign-in and the hint's session.
pub async fn logout_submit(visit: Visit, RequestCtx(ctx): RequestCtx, body: Bytes) -> Response {
    let (reader, req) = match open(&visit).await {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let form = form_fields(&body);
    if !reader.csrf_ok(
        &hosted_path(&req.tenant.slug),
        &req.query,
        field(&form, "csrf"),
    ) {
        return reader.problem(Problem::Csrf);
    }
    let mut sessions: Vec<Bearer> = signed_in(&visit.state, &req.tenant, &visit.headers)
        .into_iter()
        .collect();
    sessions.extend(req.asked.hinted);
    signed_out(&reader, &req, ctx, sessions, StatusCode::SEE_OTHER).await
}

/// Ends `sessions`, drops the sign-in cookie, and sends the browser to the post-logout URI
/// with `status`, or shows that it is signed out.
async fn signed_out(
    reader: &Reader,
    req: &Hosted,
    ctx: AuditContext,
    sessions: Vec<Bearer>,
    status: StatusCode,
) -> Response {
    if let Err(e) = end(&req.tenant, ctx, sessions, &req.asked).await {
        return reader.problem(e.into());
    }
    let mut resp = match req.asked.back_with_state() {
        Some(to) => see_other(reader, &to, status),
        None => {
            let mut page = reader.page("logout-done-title");
            page.paragraphs.push(reader.t("logout-done"));
            reader.answer(StatusCode::OK, page, &[])
        }
    };
    clear_cookie(&req.tenant, &mut resp);
    resp
}
