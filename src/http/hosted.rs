//! The hosted pages at the accounts URL: where every link Tessera mails to a tenant's users
//! opens. Served for all tenants at one address; the token in the link names its tenant
//! (`challenges::tenant_of_token`).
//!
//! - `GET` never uses a link: mail scanners and link previews fetch links. It shows the tenant
//!   and a button; the button `POST`s.
//! - Each form carries a per-page CSRF value: a hash of the browser's `tessera_csrf` cookie
//!   (random, `HttpOnly`, `SameSite=Lax`), the page and its token. A `POST` whose value does
//!   not match its cookie is refused (403) before anything is used.
//! - Every page answers with a strict `Content-Security-Policy` (no script at all),
//!   `frame-ancestors 'none'`, `X-Frame-Options: DENY`, `Referrer-Policy: no-referrer` (the
//!   token is in the URL) and `Cache-Control: no-store`.
//! - Pages speak the reader's language: `?lang=`, else `Accept-Language`, else English.
//!
//! The pages are HTML for people, not API: they are not in the OpenAPI document.

use askama::Template;
use axum::{
    extract::{Query, State},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    routing::get,
    Form, Router,
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde::Deserialize;
use tessera_actors::{
    password::Password,
    policy::is_weak_password,
    tenant::{
        audit::AuditContext,
        challenges::tenant_of_token,
        messages::{HostedLink, HostedView},
    },
    CallError, TenantError, TenantHandle, TenantMsg,
};
use tessera_storage::{ct_eq, random_token, sha256, TenantId};

use super::{error::len_between, extract::RequestCtx};
use crate::{app::AppState, i18n};

/// The hosted pages' routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/verify-email", get(verify_page).post(verify_submit))
        .route("/reset-password", get(reset_page).post(reset_submit))
        .route("/magic-link", get(magic_page).post(magic_submit))
        .route("/step-up/magic-link", get(step_up_page))
        .route("/hosted/style.css", get(stylesheet))
}

const STYLESHEET: &str = include_str!("../../assets/hosted.css");
const CSRF_COOKIE: &str = "tessera_csrf";
/// The shortest and longest passwords, as the API takes them.
const PASSWORD_MIN: usize = 12;
const PASSWORD_MAX: usize = 128;

async fn stylesheet() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        STYLESHEET,
    )
        .into_response()
}

// ---------------------------------------------------------------- the page

#[derive(Template)]
#[template(path = "hosted/page.html")]
struct PageTemplate {
    lang: &'static str,
    tenant: Option<String>,
    title: String,
    skip: String,
    footer: Option<String>,
    error_summary: Option<String>,
    paragraphs: Vec<String>,
    form: Option<FormView>,
    link: Option<LinkView>,
}

struct FormView {
    csrf: String,
    button: String,
    fields: Vec<FieldView>,
}

struct FieldView {
    name: &'static str,
    label: String,
    hint: Option<String>,
    error: Option<String>,
    min: usize,
}

struct LinkView {
    href: String,
    label: String,
}

/// One request's page context: the reader's language, the tenant, the browser's CSRF secret.
struct Reader {
    lang: &'static str,
    /// The reader's own choice (`?lang=`, `Accept-Language`), if it is one of the five.
    requested: Option<&'static str>,
    tenant: Option<String>,
    /// The browser's secret, and whether it must be set (it was absent or malformed).
    secret: (String, bool),
    secure_cookie: bool,
}

impl Reader {
    fn new(state: &AppState, headers: &HeaderMap, lang: Option<&str>) -> Self {
        let accept = headers
            .get(header::ACCEPT_LANGUAGE)
            .and_then(|v| v.to_str().ok());
        let secret = cookie(headers, CSRF_COOKIE)
            .filter(|v| v.len() == 43 && URL_SAFE_NO_PAD.decode(v).is_ok())
            .map_or_else(|| (random_token(32), true), |v| (v.to_owned(), false));
        let requested = Some(i18n::negotiate(&[lang], accept, "")).filter(|l| !l.is_empty());
        Reader {
            lang: requested.unwrap_or("en"),
            requested,
            tenant: None,
            secret,
            secure_cookie: state.accounts_base().starts_with("https://"),
        }
    }

    fn t(&self, id: &str) -> String {
        let tenant = self.tenant.as_deref().unwrap_or("");
        i18n::PAGES.text(
            self.lang,
            id,
            &[("tenant", tenant), ("min", &PASSWORD_MIN.to_string())],
        )
    }

    /// The CSRF value of the page at `path` for link `token`.
    fn csrf(&self, path: &str, token: &str) -> String {
        let mut m = self.secret.0.as_bytes().to_vec();
        m.push(0);
        m.extend_from_slice(path.as_bytes());
        m.push(0);
        m.extend_from_slice(token.as_bytes());
        URL_SAFE_NO_PAD.encode(sha256(&m))
    }

    fn csrf_ok(&self, path: &str, token: &str, sent: &str) -> bool {
        // A secret made for this request (no cookie came) matches nothing sent.
        !self.secret.1 && ct_eq(self.csrf(path, token).as_bytes(), sent.as_bytes())
    }

    fn page(&self, title: &str) -> PageTemplate {
        PageTemplate {
            lang: self.lang,
            tenant: self.tenant.clone(),
            title: self.t(title),
            skip: self.t("skip-to-content"),
            footer: self.tenant.as_ref().map(|_| self.t("page-footer")),
            error_summary: None,
            paragraphs: Vec::new(),
            form: None,
            link: None,
        }
    }

    /// The page as an answer with `status` and the security headers; `form_target` is where
    /// a form on it may lead besides this server (the login link's 303 to the app).
    fn answer(
        &self,
        status: StatusCode,
        page: PageTemplate,
        form_target: Option<&str>,
    ) -> Response {
        let Ok(html) = page.render() else {
            return (StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response();
        };
        let form_action = match form_target.and_then(origin_of) {
            Some(o) => format!("'self' {o}"),
            None => "'self'".to_owned(),
        };
        let csp = format!(
            "default-src 'none'; style-src 'self'; img-src 'self'; form-action {form_action}; \
             frame-ancestors 'none'; base-uri 'none'"
        );
        let mut resp = (status, html).into_response();
        let h = resp.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        if let Ok(v) = HeaderValue::from_str(&csp) {
            h.insert(header::CONTENT_SECURITY_POLICY, v);
        }
        h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        h.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        h.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        h.insert(
            header::CONTENT_LANGUAGE,
            HeaderValue::from_static(self.lang),
        );
        if self.secret.1 {
            let secure = if self.secure_cookie { "; Secure" } else { "" };
            let c = format!(
                "{CSRF_COOKIE}={}; Path=/; HttpOnly; SameSite=Lax; Max-Age=86400{secure}",
                self.secret.0
            );
            if let Ok(v) = HeaderValue::from_str(&c) {
                h.append(header::SET_COOKIE, v);
            }
        }
        resp
    }

    /// A page that says what went wrong, with its status.
    fn problem(&self, problem: Problem) -> Response {
        let (status, title, text) = match problem {
            Problem::Invalid => (
                StatusCode::BAD_REQUEST,
                "error-invalid-title",
                "error-invalid",
            ),
            Problem::Expired => (StatusCode::GONE, "error-expired-title", "error-expired"),
            Problem::Csrf => (StatusCode::FORBIDDEN, "error-csrf-title", "error-csrf"),
            Problem::Disabled => (
                StatusCode::FORBIDDEN,
                "error-disabled-title",
                "error-disabled",
            ),
            Problem::Busy => (
                StatusCode::SERVICE_UNAVAILABLE,
                "error-busy-title",
                "error-busy",
            ),
            Problem::Internal => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "error-internal-title",
                "error-internal",
            ),
        };
        let mut page = self.page(title);
        page.paragraphs.push(self.t(text));
        let mut resp = self.answer(status, page, None);
        if status == StatusCode::SERVICE_UNAVAILABLE {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("60"));
        }
        resp
    }
}

/// What can go wrong on a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Problem {
    /// No token, or one that names no tenant.
    Invalid,
    /// Used, expired or unknown.
    Expired,
    Csrf,
    Disabled,
    Busy,
    Internal,
}

impl From<CallError<TenantError>> for Problem {
    fn from(e: CallError<TenantError>) -> Self {
        match e {
            CallError::Failed(
                TenantError::InvalidLinkToken
                | TenantError::InvalidChallenge
                | TenantError::NotFound,
            ) => Problem::Expired,
            CallError::Failed(TenantError::PasswordlessDisabled) => Problem::Disabled,
            CallError::Failed(
                TenantError::RateLimited { .. } | TenantError::TooManyAttempts { .. },
            )
            | CallError::Unavailable => Problem::Busy,
            CallError::Failed(other) => {
                tracing::error!(error = %other, "a hosted page failed");
                Problem::Internal
            }
        }
    }
}

/// `scheme://host[:port]` of an absolute URL.
fn origin_of(url: &str) -> Option<String> {
    let u = url::Url::parse(url).ok()?;
    Some(u.origin().ascii_serialization()).filter(|o| o != "null")
}

/// The value of cookie `name` in the request.
fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// `url` with `name=value` added to its query.
fn with_query(url: &str, name: &str, value: &str) -> Option<String> {
    let mut u = url::Url::parse(url).ok()?;
    u.query_pairs_mut().append_pair(name, value);
    Some(u.into())
}

#[derive(Deserialize)]
struct LinkQuery {
    token: Option<String>,
    lang: Option<String>,
}

/// The tenant a link's token names, and a look at the link; or the page that says why not.
async fn open_link(
    state: &AppState,
    reader: &mut Reader,
    link: HostedLink,
    token: Option<&str>,
) -> Result<(TenantHandle, HostedView, String), Response> {
    let token = token
        .filter(|t| len_between(t, 1, 512))
        .ok_or_else(|| reader.problem(Problem::Invalid))?;
    let tenant = tenant_of_token(token)
        .and_then(|id| state.directory.tenant_by_id(TenantId(id)))
        .ok_or_else(|| reader.problem(Problem::Invalid))?;
    let view = tenant
        .call(|reply| TenantMsg::HostedPeek {
            link,
            token: token.to_owned(),
            reply,
        })
        .await
        .map_err(|e| reader.problem(e.into()))?;
    reader.tenant = Some(clean_name(&view.tenant_name));
    if reader.requested.is_none() {
        reader.lang = i18n::supported(&view.default_locale).unwrap_or("en");
    }
    if view.live.is_none() {
        return Err(reader.problem(Problem::Expired));
    }
    Ok((tenant, view, token.to_owned()))
}

/// The path of the page of `link` (what its CSRF value is bound to).
fn page_path(link: HostedLink) -> &'static str {
    match link {
        HostedLink::VerifyEmail => "/verify-email",
        HostedLink::ResetPassword => "/reset-password",
        HostedLink::MagicLink => "/magic-link",
        HostedLink::StepUp => "/step-up/magic-link",
    }
}

/// [`open_link`] for a form's POST, whose `csrf` must match the browser's cookie; a POST
/// that does not is refused before anything is used.
async fn open_submitted(
    state: &AppState,
    reader: &mut Reader,
    link: HostedLink,
    token: Option<&str>,
    csrf: &str,
) -> Result<(TenantHandle, HostedView, String), Response> {
    let found = open_link(state, reader, link, token).await?;
    if !reader.csrf_ok(page_path(link), &found.2, csrf) {
        return Err(reader.problem(Problem::Csrf));
    }
    Ok(found)
}

/// The tenant's name as shown: control characters become spaces.
fn clean_name(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_owned()
}

/// A "continue" button to the link's destination, when it has one.
fn continue_link(reader: &Reader, view: &HostedView) -> Option<LinkView> {
    let href = view.live.as_ref()?.destination.clone()?;
    Some(LinkView {
        href,
        label: reader.t("continue"),
    })
}

// ---------------------------------------------------------------- verification

async fn verify_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<LinkQuery>,
) -> Response {
    let mut reader = Reader::new(&state, &headers, q.lang.as_deref());
    let (_, _, token) = match open_link(
        &state,
        &mut reader,
        HostedLink::VerifyEmail,
        q.token.as_deref(),
    )
    .await
    {
        Ok(found) => found,
        Err(page) => return page,
    };
    let mut page = reader.page("verify-title");
    page.paragraphs.push(reader.t("verify-intro"));
    page.form = Some(FormView {
        csrf: reader.csrf(page_path(HostedLink::VerifyEmail), &token),
        button: reader.t("verify-button"),
        fields: Vec::new(),
    });
    reader.answer(StatusCode::OK, page, None)
}

#[derive(Deserialize)]
struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

async fn verify_submit(
    State(state): State<AppState>,
    headers: HeaderMap,
    RequestCtx(ctx): RequestCtx,
    Query(q): Query<LinkQuery>,
    Form(form): Form<CsrfForm>,
) -> Response {
    let mut reader = Reader::new(&state, &headers, q.lang.as_deref());
    let found = open_submitted(
        &state,
        &mut reader,
        HostedLink::VerifyEmail,
        q.token.as_deref(),
        &form.csrf,
    )
    .await;
    let (tenant, view, token) = match found {
        Ok(found) => found,
        Err(page) => return page,
    };
    let done = tenant
        .call(|reply| TenantMsg::VerifyEmail {
            token: token.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await;
    if let Err(e) = done {
        return reader.problem(e.into());
    }
    let mut page = reader.page("verify-done-title");
    page.paragraphs.push(reader.t("verify-done"));
    page.link = continue_link(&reader, &view);
    reader.answer(StatusCode::OK, page, None)
}

// ---------------------------------------------------------------- password reset

fn reset_form(reader: &Reader, token: &str, errors: [Option<String>; 2]) -> PageTemplate {
    let [first, second] = errors;
    let mut page = reader.page("reset-title");
    if first.is_some() || second.is_some() {
        page.error_summary = Some(reader.t("reset-error-summary"));
    }
    page.paragraphs.push(reader.t("reset-intro"));
    page.form = Some(FormView {
        csrf: reader.csrf(page_path(HostedLink::ResetPassword), token),
        button: reader.t("reset-button"),
        fields: vec![
            FieldView {
                name: "password",
                label: reader.t("reset-password-label"),
                hint: Some(reader.t("reset-password-hint")),
                error: first,
                min: PASSWORD_MIN,
            },
            FieldView {
                name: "password_confirm",
                label: reader.t("reset-confirm-label"),
                hint: None,
                error: second,
                min: PASSWORD_MIN,
            },
        ],
    });
    page
}

async fn reset_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<LinkQuery>,
) -> Response {
    let mut reader = Reader::new(&state, &headers, q.lang.as_deref());
    let (_, _, token) = match open_link(
        &state,
        &mut reader,
        HostedLink::ResetPassword,
        q.token.as_deref(),
    )
    .await
    {
        Ok(found) => found,
        Err(page) => return page,
    };
    let page = reset_form(&reader, &token, [None, None]);
    reader.answer(StatusCode::OK, page, None)
}

#[derive(Deserialize)]
struct ResetForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    password_confirm: String,
}

async fn reset_submit(
    State(state): State<AppState>,
    headers: HeaderMap,
    RequestCtx(ctx): RequestCtx,
    Query(q): Query<LinkQuery>,
    Form(form): Form<ResetForm>,
) -> Response {
    let mut reader = Reader::new(&state, &headers, q.lang.as_deref());
    let found = open_submitted(
        &state,
        &mut reader,
        HostedLink::ResetPassword,
        q.token.as_deref(),
        &form.csrf,
    )
    .await;
    let (tenant, view, token) = match found {
        Ok(found) => found,
        Err(page) => return page,
    };
    // The API's rules, in the API's order: the length, then the common-password list.
    let first = if !len_between(&form.password, PASSWORD_MIN, PASSWORD_MAX) {
        Some(reader.t("reset-error-length"))
    } else if is_weak_password(&form.password) {
        Some(reader.t("reset-error-weak"))
    } else {
        None
    };
    let second = (first.is_none() && form.password != form.password_confirm)
        .then(|| reader.t("reset-error-mismatch"));
    if first.is_some() || second.is_some() {
        let page = reset_form(&reader, &token, [first, second]);
        return reader.answer(StatusCode::BAD_REQUEST, page, None);
    }
    match reset(&state, &tenant, &token, form.password, ctx).await {
        Ok(()) => {
            let mut page = reader.page("reset-done-title");
            page.paragraphs.push(reader.t("reset-done"));
            page.link = continue_link(&reader, &view);
            reader.answer(StatusCode::OK, page, None)
        }
        Err(problem) => reader.problem(problem),
    }
}

/// The API's reset: the link checked before argon2 runs, then the new password set.
async fn reset(
    state: &AppState,
    tenant: &TenantHandle,
    token: &str,
    password: String,
    ctx: AuditContext,
) -> Result<(), Problem> {
    tenant
        .call(|reply| TenantMsg::CheckResetLink {
            token: token.to_owned(),
            reply,
        })
        .await?;
    let password_hash = state
        .hasher
        .hash(&Password::new(password))
        .await
        .map_err(|_| Problem::Busy)?;
    tenant
        .call(|reply| TenantMsg::ResetPassword {
            token: token.to_owned(),
            password_hash: password_hash.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok(())
}

// ---------------------------------------------------------------- login link

async fn magic_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<LinkQuery>,
) -> Response {
    let mut reader = Reader::new(&state, &headers, q.lang.as_deref());
    let (_, view, token) = match open_link(
        &state,
        &mut reader,
        HostedLink::MagicLink,
        q.token.as_deref(),
    )
    .await
    {
        Ok(found) => found,
        Err(page) => return page,
    };
    if !view.magic_link_enabled {
        return reader.problem(Problem::Disabled);
    }
    let live = view.live.as_ref();
    let Some(destination) = live
        .filter(|l| l.code_flow)
        .and_then(|l| l.destination.as_deref())
    else {
        let mut page = reader.page("magic-unusable-title");
        page.paragraphs.push(reader.t("magic-unusable"));
        return reader.answer(StatusCode::OK, page, None);
    };
    let mut page = reader.page("magic-title");
    page.paragraphs.push(reader.t("magic-intro"));
    page.form = Some(FormView {
        csrf: reader.csrf(page_path(HostedLink::MagicLink), &token),
        button: reader.t("magic-button"),
        fields: Vec::new(),
    });
    reader.answer(StatusCode::OK, page, Some(destination))
}

async fn magic_submit(
    State(state): State<AppState>,
    headers: HeaderMap,
    RequestCtx(ctx): RequestCtx,
    Query(q): Query<LinkQuery>,
    Form(form): Form<CsrfForm>,
) -> Response {
    let mut reader = Reader::new(&state, &headers, q.lang.as_deref());
    let found = open_submitted(
        &state,
        &mut reader,
        HostedLink::MagicLink,
        q.token.as_deref(),
        &form.csrf,
    )
    .await;
    let (tenant, _, token) = match found {
        Ok(found) => found,
        Err(page) => return page,
    };
    let issued = tenant
        .call(|reply| TenantMsg::HostedMagicLink {
            token: token.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await;
    let (code, destination) = match issued {
        Ok(v) => v,
        Err(e) => return reader.problem(e.into()),
    };
    let Some(location) = with_query(&destination, "code", &code) else {
        return reader.problem(Problem::Internal);
    };
    let mut resp = StatusCode::SEE_OTHER.into_response();
    let h = resp.headers_mut();
    match HeaderValue::from_str(&location) {
        Ok(v) => h.insert(header::LOCATION, v),
        Err(_) => return reader.problem(Problem::Internal),
    };
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    resp
}

// ---------------------------------------------------------------- step-up link

async fn step_up_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<LinkQuery>,
) -> Response {
    let mut reader = Reader::new(&state, &headers, q.lang.as_deref());
    let (_, view, token) =
        match open_link(&state, &mut reader, HostedLink::StepUp, q.token.as_deref()).await {
            Ok(found) => found,
            Err(page) => return page,
        };
    let href = view
        .live
        .as_ref()
        .and_then(|l| l.destination.as_deref())
        .and_then(|d| with_query(d, "token", &token));
    let Some(href) = href else {
        let mut page = reader.page("stepup-title");
        page.paragraphs.push(reader.t("stepup-unusable"));
        return reader.answer(StatusCode::OK, page, None);
    };
    let mut page = reader.page("stepup-title");
    page.paragraphs.push(reader.t("stepup-intro"));
    page.link = Some(LinkView {
        href,
        label: reader.t("stepup-button"),
    });
    reader.answer(StatusCode::OK, page, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_found_by_exact_name() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; tessera_csrf_x=2; tessera_csrf=three"),
        );
        assert_eq!(cookie(&h, CSRF_COOKIE), Some("three"));
        assert_eq!(cookie(&h, "b"), None);
    }

    #[test]
    fn the_code_is_added_to_the_destination_query() {
        assert_eq!(
            with_query("https://app.test/cb?x=1", "code", "a b").as_deref(),
            Some("https://app.test/cb?x=1&code=a+b")
        );
        assert_eq!(
            origin_of("http://127.0.0.1:9/cb?x").as_deref(),
            Some("http://127.0.0.1:9")
        );
    }
}
