//! The pages the dashboard's own mails link to, at the accounts URL: confirming the address
//! (`/dashboard/verify-email`), asking for a reset link (`/dashboard/forgot-password`),
//! choosing a new password (`/dashboard/reset-password`) and accepting an invitation
//! (`/dashboard/accept-invite`).
//!
//! - `GET` uses nothing (mail scanners fetch links): it looks at the link, when there is one,
//!   and shows its form.
//! - A form's `POST` carries the page's CSRF value (bound to the browser's cookie, the page
//!   and the link's token, [`super::super::pages`]) and runs the same functions as the JSON
//!   routes (`account.rs`, `members.rs`): the same checks, throttles, audit and mail.
//! - A verification link counts only with the account's own proof: the API takes the
//!   session, the page the account's password (checked with the sign-in throttles).
//!
//! The pages are HTML for people, not API: they are not in the OpenAPI document.

use axum::{
    extract::FromRequestParts,
    http::{request::Parts, StatusCode},
    response::Response,
    routing::get,
    Form, Router,
};
use serde::Deserialize;
use tessera_actors::Password;

use super::{
    account::{mail_reset_link, reset_link_alive, reset_with_link, verify_with_link},
    check_password,
    members::{accept_invitation, invitation},
    DetachedTenantRef,
};
use crate::app::AppState;
use crate::http::{
    error::{is_email, len_between, ApiError},
    extract::{ClientIp, RequestCtx},
    pages::{
        new_password_errors, new_password_fields, FieldView, FormView, LinkVisit, PageTemplate,
        Problem, Reader,
    },
};

const VERIFY: &str = "/dashboard/verify-email";
const FORGOT: &str = "/dashboard/forgot-password";
const RESET: &str = "/dashboard/reset-password";
const INVITE: &str = "/dashboard/accept-invite";

/// The dashboard mails' pages.
pub fn router() -> Router<AppState> {
    Router::new()
        .route(VERIFY, get(verify_page).post(verify_submit))
        .route(FORGOT, get(forgot_page).post(forgot_submit))
        .route(RESET, get(reset_page).post(reset_submit))
        .route(INVITE, get(invite_page).post(invite_submit))
}

/// What every page reads first: the reader (language, CSRF secret) and the link's token
/// (empty on the page that has none), from the mailed links' [`LinkVisit`].
struct Visit {
    state: AppState,
    reader: Reader,
    token: String,
}

impl FromRequestParts<AppState> for Visit {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let LinkVisit { state, headers, q } = LinkVisit::from_request_parts(parts, state).await?;
        Ok(Visit {
            reader: Reader::new(&state, &headers, q.lang.as_deref()),
            token: q.token.unwrap_or_default(),
            state,
        })
    }
}

impl Visit {
    /// The CSRF value of the form on the page at `path`.
    fn csrf(&self, path: &str) -> String {
        self.reader.csrf(path, &self.token)
    }

    /// A `POST` whose CSRF value is not this page's is refused before anything is used.
    #[allow(
        clippy::result_large_err,
        reason = "a page's refusal is the page itself, the handler's own answer"
    )]
    fn check(&self, path: &str, sent: &str) -> Result<(), Response> {
        if self.reader.csrf_ok(path, &self.token, sent) {
            Ok(())
        } else {
            Err(self.reader.problem(Problem::Csrf))
        }
    }

    /// A link the page needs: none at all is an invalid link.
    #[allow(
        clippy::result_large_err,
        reason = "a page's refusal is the page itself, the handler's own answer"
    )]
    fn link(&self) -> Result<String, Response> {
        if len_between(&self.token, 1, 512) {
            Ok(self.token.clone())
        } else {
            Err(self.reader.problem(Problem::Invalid))
        }
    }

    /// The page that says why the dashboard refused (a dead link, too many attempts, ...).
    fn refused(&self, e: &ApiError) -> Response {
        let r = &self.reader;
        match (e.status, e.code.as_str()) {
            (_, "dashboard/token_invalid" | "dashboard/invite_invalid") => {
                r.problem_page(StatusCode::GONE, "error-expired-title", "dashboard-expired")
            }
            (_, "dashboard/already_member") => r.problem_page(
                StatusCode::CONFLICT,
                "dashboard-invite-title",
                "dashboard-invite-member",
            ),
            (StatusCode::BAD_REQUEST, _) => r.problem(Problem::Invalid),
            (StatusCode::TOO_MANY_REQUESTS, _) => r.problem(Problem::TooMany),
            (StatusCode::SERVICE_UNAVAILABLE, _) => r.problem(Problem::Busy),
            _ => r.problem(Problem::Internal),
        }
    }

    /// A page of one paragraph, after an action.
    fn done(&self, title: &str, paragraph: String) -> Response {
        let mut page = self.reader.page(title);
        page.paragraphs.push(paragraph);
        self.reader.answer(StatusCode::OK, page, &[])
    }
}

/// A form page: `title`, `intro`, then the form with `fields` and its button; an error
/// summary when a field has an error.
fn form_page(
    visit: &Visit,
    (title, intro): (&str, String),
    path: &str,
    fields: Vec<FieldView>,
    button: &str,
) -> PageTemplate {
    let r = &visit.reader;
    let mut page = r.page(title);
    if fields.iter().any(|f| f.error.is_some()) {
        page.error_summary = Some(r.t("dashboard-error-summary"));
    }
    page.paragraphs.push(intro);
    let mut form = FormView::new(visit.csrf(path), r.t(button));
    form.fields = fields;
    page.forms.push(form);
    page
}

fn email_field(r: &Reader, value: &str, error: Option<String>) -> FieldView {
    let label = r.t("login-email-label");
    FieldView::input("email", "email", "email", label, "email").filled(value.to_owned(), error)
}

fn password_field(r: &Reader, error: Option<String>) -> FieldView {
    let mut f = FieldView::current_password("password", r.t("login-password-label"), 1);
    f.error = error;
    f
}

/// The page after a new password: `title` and `done`, and, when the password took over an
/// account never verified, the tenants it no longer reaches.
fn taken_over(
    r: &Reader,
    (title, done): (&str, String),
    detached: Vec<DetachedTenantRef>,
) -> Response {
    let mut page = r.page(title);
    page.paragraphs.push(done);
    if !detached.is_empty() {
        page.paragraphs.push(r.t("dashboard-detached"));
        page.items = detached
            .into_iter()
            .map(|t| format!("{} ({})", t.name, t.slug))
            .collect();
    }
    r.answer(StatusCode::OK, page, &[])
}

#[derive(Deserialize)]
struct CredentialsForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    password_confirm: String,
}

// ---------------------------------------------------------------- verification

fn verify_form(visit: &Visit, email: &str, errors: [Option<String>; 2]) -> PageTemplate {
    let r = &visit.reader;
    let [email_error, password_error] = errors;
    let fields = vec![
        email_field(r, email, email_error),
        password_field(r, password_error),
    ];
    let intro = ("dashboard-verify-title", r.t("dashboard-verify-intro"));
    form_page(visit, intro, VERIFY, fields, "dashboard-verify-button")
}

async fn verify_page(visit: Visit) -> Result<Response, Response> {
    visit.link()?;
    let page = verify_form(&visit, "", [None, None]);
    Ok(visit.reader.answer(StatusCode::OK, page, &[]))
}

async fn verify_submit(
    visit: Visit,
    ClientIp(ip): ClientIp,
    Form(form): Form<CredentialsForm>,
) -> Result<Response, Response> {
    visit.check(VERIFY, &form.csrf)?;
    let token = visit.link()?;
    let r = &visit.reader;
    if !is_email(&form.email) || form.password.is_empty() {
        let errors = [
            (!is_email(&form.email)).then(|| r.t("login-error-email")),
            form.password
                .is_empty()
                .then(|| r.t("login-error-credentials")),
        ];
        let page = verify_form(&visit, &form.email, errors);
        return Ok(r.answer(StatusCode::BAD_REQUEST, page, &[]));
    }
    let password = Password::new(form.password);
    let checked = match check_password(&visit.state, &form.email, &password, (ip, None)).await {
        Ok(c) => c,
        Err(e) if e.status == StatusCode::UNAUTHORIZED => {
            let errors = [None, Some(r.t("login-error-credentials"))];
            let page = verify_form(&visit, &form.email, errors);
            return Ok(r.answer(StatusCode::UNAUTHORIZED, page, &[]));
        }
        Err(e) => return Err(visit.refused(&e)),
    };
    verify_with_link(&visit.state, token, checked.account_id)
        .await
        .map_err(|e| visit.refused(&e))?;
    Ok(visit.done("dashboard-verify-done-title", r.t("dashboard-verify-done")))
}

// ---------------------------------------------------------------- forgotten password

fn forgot_form(visit: &Visit, email: &str, error: Option<String>) -> PageTemplate {
    let r = &visit.reader;
    let intro = ("dashboard-forgot-title", r.t("dashboard-forgot-intro"));
    let fields = vec![email_field(r, email, error)];
    form_page(visit, intro, FORGOT, fields, "dashboard-forgot-button")
}

async fn forgot_page(visit: Visit) -> Response {
    let page = forgot_form(&visit, "", None);
    visit.reader.answer(StatusCode::OK, page, &[])
}

async fn forgot_submit(
    visit: Visit,
    ClientIp(ip): ClientIp,
    Form(form): Form<CredentialsForm>,
) -> Result<Response, Response> {
    visit.check(FORGOT, &form.csrf)?;
    let r = &visit.reader;
    if !is_email(&form.email) {
        let page = forgot_form(&visit, &form.email, Some(r.t("login-error-email")));
        return Ok(r.answer(StatusCode::BAD_REQUEST, page, &[]));
    }
    mail_reset_link(&visit.state, form.email, ip)
        .await
        .map_err(|e| visit.refused(&e))?;
    Ok(visit.done("dashboard-forgot-done-title", r.t("dashboard-forgot-done")))
}

// ---------------------------------------------------------------- password reset

fn reset_form(visit: &Visit, errors: [Option<String>; 2]) -> PageTemplate {
    let r = &visit.reader;
    let intro = ("dashboard-reset-title", r.t("dashboard-reset-intro"));
    let fields = new_password_fields(r, errors);
    form_page(visit, intro, RESET, fields, "reset-button")
}

async fn reset_page(visit: Visit) -> Result<Response, Response> {
    let token = visit.link()?;
    reset_link_alive(&visit.state, &token)
        .await
        .map_err(|e| visit.refused(&e))?;
    let page = reset_form(&visit, [None, None]);
    Ok(visit.reader.answer(StatusCode::OK, page, &[]))
}

async fn reset_submit(
    visit: Visit,
    RequestCtx(ctx): RequestCtx,
    Form(form): Form<CredentialsForm>,
) -> Result<Response, Response> {
    visit.check(RESET, &form.csrf)?;
    let token = visit.link()?;
    let r = &visit.reader;
    let errors = new_password_errors(r, &form.password, &form.password_confirm);
    if errors.iter().any(Option::is_some) {
        let page = reset_form(&visit, errors);
        return Ok(r.answer(StatusCode::BAD_REQUEST, page, &[]));
    }
    let reset = reset_with_link(&visit.state, ctx, token, form.password)
        .await
        .map_err(|e| visit.refused(&e))?;
    let done = r.t("dashboard-reset-done");
    Ok(taken_over(
        r,
        ("dashboard-reset-done-title", done),
        reset.detached_tenants,
    ))
}

// ---------------------------------------------------------------- invitation

/// The invitation's page: the address's own password when a verified account holds it, else
/// a new password twice.
fn invite_form(
    visit: &Visit,
    (email, verified): (&str, bool),
    errors: [Option<String>; 2],
) -> PageTemplate {
    let r = &visit.reader;
    let (intro, fields) = if verified {
        let [_, error] = errors;
        ("dashboard-invite-existing", vec![password_field(r, error)])
    } else {
        ("dashboard-invite-new", new_password_fields(r, errors))
    };
    let intro = (
        "dashboard-invite-title",
        r.t_with(intro, &[("email", email)]),
    );
    form_page(visit, intro, INVITE, fields, "dashboard-invite-button")
}

async fn invite_page(visit: Visit) -> Result<Response, Response> {
    let token = visit.link()?;
    let target = invitation(&visit.state, &token)
        .await
        .map_err(|e| visit.refused(&e))?;
    let page = invite_form(
        &visit,
        (&target.email, target.verified_account),
        [None, None],
    );
    Ok(visit.reader.answer(StatusCode::OK, page, &[]))
}

async fn invite_submit(
    visit: Visit,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    Form(form): Form<CredentialsForm>,
) -> Result<Response, Response> {
    visit.check(INVITE, &form.csrf)?;
    let token = visit.link()?;
    let r = &visit.reader;
    let target = invitation(&visit.state, &token)
        .await
        .map_err(|e| visit.refused(&e))?;
    let shown = (target.email.as_str(), target.verified_account);
    let errors = if target.verified_account {
        [
            None,
            form.password
                .is_empty()
                .then(|| r.t("login-error-credentials")),
        ]
    } else {
        new_password_errors(r, &form.password, &form.password_confirm)
    };
    if errors.iter().any(Option::is_some) {
        let page = invite_form(&visit, shown, errors);
        return Ok(r.answer(StatusCode::BAD_REQUEST, page, &[]));
    }
    let accepted = match accept_invitation(&visit.state, (ip, ctx), token, form.password).await {
        Ok(a) => a,
        Err(e) if e.status == StatusCode::UNAUTHORIZED => {
            let errors = [None, Some(r.t("login-error-credentials"))];
            let page = invite_form(&visit, shown, errors);
            return Ok(r.answer(StatusCode::UNAUTHORIZED, page, &[]));
        }
        Err(e) => return Err(visit.refused(&e)),
    };
    let done = r.t_with(
        "dashboard-invite-done",
        &[
            ("slug", accepted.tenant_slug.as_str()),
            ("role", accepted.role.as_str()),
            ("email", accepted.email.as_str()),
        ],
    );
    Ok(taken_over(
        r,
        ("dashboard-invite-done-title", done),
        accepted.detached_tenants,
    ))
}
