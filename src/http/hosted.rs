//! The hosted pages at the accounts URL: where every link Tessera mails to a tenant's users
//! opens. Served for all tenants at one address; the token in the link names its tenant
//! (`challenges::tenant_of_token`).
//!
//! - `GET` never uses a link: mail scanners and link previews fetch links. It shows the tenant
//!   and a button; the button `POST`s.
//! - Each form's CSRF value, the headers and the language are [`super::pages`]': the CSRF
//!   value is bound to the page and its link's token.
//!
//! The pages are HTML for people, not API: they are not in the OpenAPI document.

use axum::{
    extract::{Query, State},
    http::{header, HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::get,
    Form, Router,
};
use serde::Deserialize;
use tessera_actors::tenant::{AccountsMsg, HostedMsg};
use tessera_actors::{
    password::Password,
    policy::is_weak_password,
    tenant::{
        audit::AuditContext,
        challenges::tenant_of_token,
        messages::{HostedLink, HostedView},
    },
    TenantHandle,
};
use tessera_storage::TenantId;

use super::{
    error::len_between,
    extract::{served_here, RequestCtx},
    pages::{
        see_other, with_query, FieldView, FormView, LinkView, PageTemplate, Problem, Reader,
        PASSWORD_MAX, PASSWORD_MIN,
    },
};
use crate::app::AppState;

/// The hosted pages' routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/verify-email", get(verify_page).post(verify_submit))
        .route("/reset-password", get(reset_page).post(reset_submit))
        .route("/magic-link", get(magic_page).post(magic_submit))
        .route("/step-up/magic-link", get(step_up_page))
        .route("/hosted/style.css", get(stylesheet))
        .route("/hosted/passkey.js", get(passkey_script))
}

const STYLESHEET: &str = include_str!("../../assets/hosted.css");
const PASSKEY_SCRIPT: &str = include_str!("../../assets/passkey.js");

async fn passkey_script() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        PASSKEY_SCRIPT,
    )
        .into_response()
}

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
    served_here(state, tenant.id).map_err(IntoResponse::into_response)?;
    let view = tenant
        .call(|reply| HostedMsg::HostedPeek {
            link,
            token: token.to_owned(),
            reply,
        })
        .await
        .map_err(|e| reader.problem(e.into()))?;
    reader.set_tenant(&view.tenant_name, &view.default_locale);
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
    page.forms.push(FormView::new(
        reader.csrf(page_path(HostedLink::VerifyEmail), &token),
        reader.t("verify-button"),
    ));
    reader.answer(StatusCode::OK, page, &[])
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
        .call(|reply| AccountsMsg::VerifyEmail {
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
    reader.answer(StatusCode::OK, page, &[])
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
    let mut password = FieldView::new_password(
        "password",
        reader.t("reset-password-label"),
        Some(reader.t("reset-password-hint")),
    );
    password.error = first;
    let mut confirm =
        FieldView::new_password("password_confirm", reader.t("reset-confirm-label"), None);
    confirm.error = second;
    form.fields = vec![password, confirm];
    page.forms.push(form);
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
    reader.answer(StatusCode::OK, page, &[])
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
        return reader.answer(StatusCode::BAD_REQUEST, page, &[]);
    }
    match reset(&state, &tenant, &token, form.password, ctx).await {
        Ok(()) => {
            let mut page = reader.page("reset-done-title");
            page.paragraphs.push(reader.t("reset-done"));
            page.link = continue_link(&reader, &view);
            reader.answer(StatusCode::OK, page, &[])
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
        return reader.answer(StatusCode::OK, page, &[]);
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
    reader.answer(StatusCode::OK, page, &targets)
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
        .call(|reply| HostedMsg::HostedMagicLink {
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
    see_other(&reader, &location, StatusCode::SEE_OTHER)
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
        return reader.answer(StatusCode::OK, page, &[]);
    };
    let mut page = reader.page("stepup-title");
    page.paragraphs.push(reader.t("stepup-intro"));
    page.link = Some(LinkView {
        href,
        label: reader.t("stepup-button"),
    });
    reader.answer(StatusCode::OK, page, &[])
}
