//! The hosted pages at the accounts URL: where every link Tessera mails to a tenant's users
//! opens. Served for all tenants at one address; the token in the link names its tenant
//! (`challenges::tenant_of_token`).
//!
//! - `GET` never uses a link: mail scanners and link previews fetch links. It shows the tenant
//!   and a button; the button `POST`s.
//! - Each form's CSRF value, the headers and the language are [`super::pages`]': the CSRF
//!   value is bound to the page and its link's token.
//!
//! The page of an organization's invitation (`/join-organization`) is in its own file,
//! `hosted_join.rs`, merged beside these by `http::app`.
//!
//! The pages are HTML for people, not API: they are not in the OpenAPI document.

use axum::{
    extract::Query,
    http::{header, StatusCode},
    response::{IntoResponse, Response},
    routing::get,
    Form, Router,
};
use ractor::RpcReplyPort;
use serde::Deserialize;
use tessera_actors::tenant::{AccountsMsg, HostedMsg};
use tessera_actors::{
    password::Password,
    tenant::{
        audit::AuditContext,
        messages::{HostedLink, HostedView},
    },
    CallError, TenantError, TenantHandle, TenantMsg, UserError,
};

use super::{
    extract::{served_here, RequestCtx},
    mailed_links::tenant_of_link,
    pages::{
        new_password_errors, new_password_fields, see_other, with_query, FormView, LinkView,
        LinkVisit as Visit, NewPasswordForm, PageTemplate, Problem, Reader, BRAND_CSS_PATH,
    },
};
use crate::app::AppState;

/// The hosted pages' routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/verify-email", get(verify_page).post(verify_submit))
        .route("/confirm-email", get(change_page).post(change_submit))
        .route("/reset-password", get(reset_page).post(reset_submit))
        .route("/magic-link", get(magic_page).post(magic_submit))
        .route("/step-up/magic-link", get(step_up_page))
        .route("/hosted/style.css", get(stylesheet))
        .route("/hosted/passkey.js", get(passkey_script))
        .route("/hosted/passkey-add.js", get(passkey_add_script))
        .route("/hosted/webauthn.js", get(webauthn_script))
        .route("/hosted/favicon.svg", get(favicon))
        .route(BRAND_CSS_PATH, get(brand_stylesheet))
        .route("/favicon.ico", get(favicon))
}

const STYLESHEET: &str = include_str!("../../assets/hosted.css");
const PASSKEY_SCRIPT: &str = include_str!("../../assets/passkey.js");
const PASSKEY_ADD_SCRIPT: &str = include_str!("../../assets/passkey-add.js");
const WEBAUTHN_SCRIPT: &str = include_str!("../../assets/webauthn.js");
const FAVICON: &str = include_str!("../../assets/favicon.svg");

async fn passkey_script() -> Response {
    asset("text/javascript; charset=utf-8", PASSKEY_SCRIPT)
}

/// What both passkey scripts share, loaded before either.
async fn webauthn_script() -> Response {
    asset("text/javascript; charset=utf-8", WEBAUTHN_SCRIPT)
}

/// The account page's "add a passkey" step.
async fn passkey_add_script() -> Response {
    asset("text/javascript; charset=utf-8", PASSKEY_ADD_SCRIPT)
}

/// The pages' icon; also at `/favicon.ico`, where browsers and tools look without a link.
async fn favicon() -> Response {
    asset("image/svg+xml", FAVICON)
}

#[derive(Deserialize)]
struct BrandQuery {
    c: Option<String>,
}

/// The primary buttons in a tenant's colour (`?c=rrggbb`, the settings' checked value); any
/// other query is 404. Cached a day: a new colour is a new URL.
async fn brand_stylesheet(Query(q): Query<BrandQuery>) -> Response {
    let Some(c) =
        q.c.filter(|c| c.len() == 6 && c.bytes().all(|b| b.is_ascii_hexdigit()))
    else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let css = format!(
        "button:not(.secondary), .button:not(.secondary) {{ background: #{c}; }}\n\
         button:not(.secondary):hover, .button:not(.secondary):hover {{ background: #{c}; filter: brightness(0.85); }}\n"
    );
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=86400"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        css,
    )
        .into_response()
}

async fn stylesheet() -> Response {
    asset("text/css; charset=utf-8", STYLESHEET)
}

/// One of the pages' static files, cached an hour.
fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "public, max-age=3600"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}

/// The page of a live link: its reader, the tenant the token names, the look at the link and
/// the token.
struct Opened {
    reader: Reader,
    tenant: TenantHandle,
    view: HostedView,
    token: String,
}

impl Visit {
    /// The page of `link`: the tenant its token names and a look at the link; or the page
    /// that says why not.
    async fn open(&self, link: HostedLink) -> Result<Opened, Response> {
        let mut reader = Reader::new(&self.state, &self.headers, self.q.lang.as_deref());
        let (tenant, token) = self
            .q
            .token
            .as_deref()
            .and_then(|t| Some((tenant_of_link(&self.state, t)?, t)))
            .ok_or_else(|| reader.problem(Problem::Invalid))?;
        served_here(&self.state, tenant.id).map_err(IntoResponse::into_response)?;
        let view = tenant
            .call(|reply| HostedMsg::HostedPeek {
                link,
                token: token.to_owned(),
                reply,
            })
            .await
            .map_err(|e| reader.problem(e.into()))?;
        reader.set_tenant(&view.tenant_name, &view.default_locale);
        reader.brand(&tenant).await;
        if view.live.is_none() {
            return Err(reader.problem(Problem::Expired));
        }
        Ok(Opened {
            reader,
            tenant,
            view,
            token: token.to_owned(),
        })
    }

    /// [`Visit::open`] for a form's POST, whose `csrf` must match the browser's cookie; a
    /// POST that does not is refused before anything is used.
    async fn submitted(&self, link: HostedLink, csrf: &str) -> Result<Opened, Response> {
        let opened = self.open(link).await?;
        if !opened.reader.csrf_ok(page_path(link), &opened.token, csrf) {
            return Err(opened.reader.problem(Problem::Csrf));
        }
        Ok(opened)
    }
}

impl Opened {
    /// The link's own command, `msg` with the link's token and the request's audit context;
    /// a refusal is the page that says it.
    async fn spend<T: Send + 'static, M: Into<TenantMsg>>(
        &self,
        ctx: &AuditContext,
        msg: fn(String, AuditContext, RpcReplyPort<Result<T, TenantError>>) -> M,
    ) -> Result<T, Response> {
        self.tenant
            .call(|reply| msg(self.token.clone(), ctx.clone(), reply))
            .await
            .map_err(|e| self.reader.problem(e.into()))
    }

    /// A page of the link's own words: `title` and `paragraph`, and, when the link has one,
    /// a "continue" button to its destination.
    fn done(&self, title: &str, paragraph: &str) -> Response {
        let mut page = self.reader.page(title);
        page.paragraphs.push(self.reader.t(paragraph));
        page.link = continue_link(&self.reader, &self.view);
        self.reader.answer(StatusCode::OK, page, &[])
    }
}

/// The path of the page of `link` (what its CSRF value is bound to).
fn page_path(link: HostedLink) -> &'static str {
    match link {
        HostedLink::VerifyEmail => "/verify-email",
        HostedLink::ChangeEmail => "/confirm-email",
        HostedLink::ResetPassword => "/reset-password",
        HostedLink::MagicLink => "/magic-link",
        HostedLink::StepUp => "/step-up/magic-link",
    }
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

async fn verify_page(visit: Visit) -> Result<Response, Response> {
    let Opened { reader, token, .. } = visit.open(HostedLink::VerifyEmail).await?;
    let mut page = reader.page("verify-title");
    page.paragraphs.push(reader.t("verify-intro"));
    page.forms.push(FormView::new(
        reader.csrf(page_path(HostedLink::VerifyEmail), &token),
        reader.t("verify-button"),
    ));
    Ok(reader.answer(StatusCode::OK, page, &[]))
}

#[derive(Deserialize)]
struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

async fn verify_submit(
    visit: Visit,
    RequestCtx(ctx): RequestCtx,
    Form(form): Form<CsrfForm>,
) -> Result<Response, Response> {
    let opened = visit.submitted(HostedLink::VerifyEmail, &form.csrf).await?;
    opened
        .spend(&ctx, |token, ctx, reply| AccountsMsg::VerifyEmail {
            token,
            ctx,
            reply,
        })
        .await?;
    Ok(opened.done("verify-done-title", "verify-done"))
}

// ---------------------------------------------------------------- address change

/// The page of an address-change link: a button moves the account (GET uses nothing).
async fn change_page(visit: Visit) -> Result<Response, Response> {
    let Opened { reader, token, .. } = visit.open(HostedLink::ChangeEmail).await?;
    let mut page = reader.page("change-email-title");
    page.paragraphs.push(reader.t("change-email-intro"));
    page.forms.push(FormView::new(
        reader.csrf(page_path(HostedLink::ChangeEmail), &token),
        reader.t("change-email-button"),
    ));
    Ok(reader.answer(StatusCode::OK, page, &[]))
}

async fn change_submit(
    visit: Visit,
    RequestCtx(ctx): RequestCtx,
    Form(form): Form<CsrfForm>,
) -> Result<Response, Response> {
    let opened = visit.submitted(HostedLink::ChangeEmail, &form.csrf).await?;
    let moved = opened
        .tenant
        .call(|reply| AccountsMsg::ConfirmEmailChange {
            token: opened.token.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await;
    match moved {
        Ok(()) => Ok(opened.done("change-email-done-title", "change-email-done")),
        Err(CallError::Failed(TenantError::User(UserError::EmailInUse))) => {
            Err(opened.reader.problem_page(
                StatusCode::CONFLICT,
                "change-email-taken-title",
                "change-email-taken",
            ))
        }
        Err(e) => Err(opened.reader.problem(e.into())),
    }
}

// ---------------------------------------------------------------- password reset

fn reset_form(reader: &Reader, token: &str, errors: [Option<String>; 2]) -> PageTemplate {
    let [first, second] = errors;
    let mut page = reader.page("reset-title");
    if first.is_some() || second.is_some() {
        page.error_summary = Some(reader.t("reset-error-summary"));
    }
    page.paragraphs.push(reader.t("reset-intro"));
    let mut form = FormView::new(
        reader.csrf(page_path(HostedLink::ResetPassword), token),
        reader.t("reset-button"),
    );
    form.fields = new_password_fields(reader, [first, second]);
    page.forms.push(form);
    page
}

async fn reset_page(visit: Visit) -> Result<Response, Response> {
    let Opened { reader, token, .. } = visit.open(HostedLink::ResetPassword).await?;
    let page = reset_form(&reader, &token, [None, None]);
    Ok(reader.answer(StatusCode::OK, page, &[]))
}

async fn reset_submit(
    visit: Visit,
    RequestCtx(ctx): RequestCtx,
    Form(form): Form<NewPasswordForm>,
) -> Result<Response, Response> {
    let opened = visit
        .submitted(HostedLink::ResetPassword, &form.csrf)
        .await?;
    let reader = &opened.reader;
    let errors = new_password_errors(reader, &form.password, &form.password_confirm);
    if errors.iter().any(Option::is_some) {
        let page = reset_form(reader, &opened.token, errors);
        return Ok(reader.answer(StatusCode::BAD_REQUEST, page, &[]));
    }
    reset(
        &visit.state,
        &opened.tenant,
        &opened.token,
        form.password,
        ctx,
    )
    .await
    .map_err(|problem| reader.problem(problem))?;
    Ok(opened.done("reset-done-title", "reset-done"))
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
        .call(|reply| AccountsMsg::CheckResetLink {
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
        .call(|reply| AccountsMsg::ResetPassword {
            token: token.to_owned(),
            password_hash: password_hash.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok(())
}

// ---------------------------------------------------------------- login link

async fn magic_page(visit: Visit) -> Result<Response, Response> {
    let Opened {
        reader,
        view,
        token,
        ..
    } = visit.open(HostedLink::MagicLink).await?;
    if !view.magic_link_enabled {
        return Err(reader.problem(Problem::Disabled));
    }
    let live = view.live.as_ref();
    let Some(destination) = live
        .filter(|l| l.code_flow)
        .and_then(|l| l.destination.as_deref())
    else {
        let mut page = reader.page("magic-unusable-title");
        page.paragraphs.push(reader.t("magic-unusable"));
        return Ok(reader.answer(StatusCode::OK, page, &[]));
    };
    let mut page = reader.page("magic-title");
    page.paragraphs.push(reader.t("magic-intro"));
    page.forms.push(FormView::new(
        reader.csrf(page_path(HostedLink::MagicLink), &token),
        reader.t("magic-button"),
    ));
    // The post goes to the destination; when that is the authorization server's return
    // page, its redirects end at the client.
    let mut targets = vec![destination];
    targets.extend(live.and_then(|l| l.then.as_deref()));
    Ok(reader.answer(StatusCode::OK, page, &targets))
}

async fn magic_submit(
    visit: Visit,
    RequestCtx(ctx): RequestCtx,
    Form(form): Form<CsrfForm>,
) -> Result<Response, Response> {
    let opened = visit.submitted(HostedLink::MagicLink, &form.csrf).await?;
    let (code, destination) = opened
        .spend(&ctx, |token, ctx, reply| HostedMsg::HostedMagicLink {
            token,
            ctx,
            reply,
        })
        .await?;
    let reader = &opened.reader;
    let Some(location) = with_query(&destination, "code", &code) else {
        return Err(reader.problem(Problem::Internal));
    };
    Ok(see_other(reader, &location, StatusCode::SEE_OTHER))
}

// ---------------------------------------------------------------- step-up link

async fn step_up_page(visit: Visit) -> Result<Response, Response> {
    let Opened {
        reader,
        view,
        token,
        ..
    } = visit.open(HostedLink::StepUp).await?;
    let href = view
        .live
        .as_ref()
        .and_then(|l| l.destination.as_deref())
        .and_then(|d| with_query(d, "token", &token));
    let mut page = reader.page("stepup-title");
    let Some(href) = href else {
        page.paragraphs.push(reader.t("stepup-unusable"));
        return Ok(reader.answer(StatusCode::OK, page, &[]));
    };
    page.paragraphs.push(reader.t("stepup-intro"));
    page.link = Some(LinkView {
        href,
        label: reader.t("stepup-button"),
    });
    Ok(reader.answer(StatusCode::OK, page, &[]))
}
