//! The end user's account page at `{accounts_url}/oauth/{slug}/account`: a person signed in
//! on the tenant's hosted sign-in sees and changes their own account there (profile, password,
//! two-step verification, passkeys, sessions, connected apps and agents, their data), with no
//! app of the tenant in between.
//!
//! - It lives under the tenant's `/oauth/{slug}/` because the hosted sign-in cookie does (see
//!   [`super::hosted`]): the cookie names a first-party session, and that session is the
//!   page's caller. Without a live one the page sends the browser to the hosted sign-in with
//!   no client ([`super::hosted::ACCOUNT_QUERY`]), which comes back here.
//! - Every action goes through the same functions as the API's routes for the signed-in user
//!   (`accounts`, `mfa`, `passkeys`, `users_me`, `my_agents`, `oauth::consents`), with the
//!   session as their [`UserBearer`]: the same checks, throttles, audit events and step-up
//!   gates. A gated action's form carries the password; the page steps up with it
//!   (`step_up::password`) and passes the gate with that token, as an API caller would.
//! - Every form carries the CSRF value of [`crate::http::pages`], bound to its target and the
//!   session; the page runs no script.
//!
//! The modules: [`page`] (the page itself), [`security`] (password, two-step verification,
//! passkeys), [`activity`] (sessions, apps, agents, signing out), [`data`] (export, erasure).

mod activity;
mod data;
mod page;
mod security;

use std::collections::HashMap;

use askama::Template;
use axum::{
    body::Bytes,
    extract::{FromRequest, FromRequestParts, Path, Query, Request, State},
    http::{header, request::Parts, HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::{get, post},
    Router,
};
use serde::Deserialize;
use tessera_actors::{tenant::audit::AuditContext, tenant::SessionsMsg, CallError};
use tessera_wire::User;

use super::hosted::{
    account_path, account_sign_in_path, clear_sign_in_cookie, page_tenant, signed_in,
};
use crate::{
    app::AppState,
    http::{
        bearer::UserBearer,
        error::ApiError,
        extract::ApiJson,
        extract::RequestCtx,
        pages::{field, form_fields, see_other, Problem, Reader},
        reauth::StepUpHeader,
        sections::{Control, Form, Section},
        step_up::{self, StepUpEmailOtpVerifyRequest, StepUpPasswordRequest},
    },
};

/// The account page's routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/account", get(entry))
        .route("/oauth/{slug}/account", get(page::page))
        .route("/oauth/{slug}/account/password", post(security::password))
        .route("/oauth/{slug}/account/email", post(security::email))
        .route("/oauth/{slug}/account/mfa/setup", post(security::mfa_setup))
        .route(
            "/oauth/{slug}/account/mfa/confirm",
            post(security::mfa_confirm),
        )
        .route(
            "/oauth/{slug}/account/mfa/disable",
            post(security::mfa_disable),
        )
        .route("/oauth/{slug}/account/mfa/codes", post(security::mfa_codes))
        .route(
            "/oauth/{slug}/account/passkeys/remove",
            post(security::passkey_remove),
        )
        .route(
            "/oauth/{slug}/account/passkeys/add",
            post(security::passkey_add),
        )
        .route(
            "/oauth/{slug}/account/passkeys/finish",
            post(security::passkey_finish),
        )
        .route(
            "/oauth/{slug}/account/sessions/end",
            post(activity::end_session),
        )
        .route(
            "/oauth/{slug}/account/sessions/others",
            post(activity::end_others),
        )
        .route(
            "/oauth/{slug}/account/apps/withdraw",
            post(activity::withdraw),
        )
        .route(
            "/oauth/{slug}/account/agents/revoke",
            post(activity::revoke_agent),
        )
        .route("/oauth/{slug}/account/sign-out", post(activity::sign_out))
        .route("/oauth/{slug}/account/export", post(data::export))
        .route("/oauth/{slug}/account/delete", post(data::delete))
}

#[derive(Deserialize)]
struct EntryQuery {
    tenant: Option<String>,
}

/// `GET {accounts_url}/account?tenant={slug}`: the short address of a tenant's account page,
/// for apps to link to; it sends the browser to the page. Without a tenant it names (a slug's
/// letters, digits and hyphens), the invalid-request page.
async fn entry(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    Query(q): Query<EntryQuery>,
) -> Response {
    let reader = Reader::new(&state, &headers, None);
    match q.tenant.filter(|t| {
        !t.is_empty()
            && t.len() <= 64
            && t.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    }) {
        Some(slug) => see_other(&reader, &account_path(&slug), StatusCode::SEE_OTHER),
        None => reader.problem(Problem::Invalid),
    }
}

/// What a gated form carries besides its password, posted again with a mailed code.
const CARRIED: [&str; 3] = ["email", "passkey", "confirm"];

#[derive(Template)]
#[template(path = "hosted/account.html")]
pub struct AccountPage {
    pub lang: &'static str,
    pub title: String,
    pub skip: String,
    pub tenant: Option<String>,
    pub logo: Option<String>,
    pub brand_css: Option<String>,
    /// Who is signed in, and the sign-out form.
    pub who: String,
    pub sign_out: Form,
    pub notice: Option<String>,
    pub error_summary: Option<String>,
    pub paragraphs: Vec<String>,
    pub sections: Vec<Section>,
    /// Back to the account page (on the pages that follow an action).
    pub back: Option<(String, String)>,
    /// The "add a passkey" step: the one part of the page that runs script.
    pub passkey_add: Option<PasskeyAdd>,
}

/// The "add a passkey" step (`/hosted/passkey-add.js`): the creation options, where the
/// credential goes, and the words.
pub struct PasskeyAdd {
    /// The API's creation options (`publicKey`), as JSON.
    pub options: String,
    pub finish: String,
    pub csrf: String,
    pub failed: String,
    pub name_label: String,
    pub button: String,
    pub no_script: String,
}

/// What every request of the account page reads first: the reader (the tenant's name,
/// language and branding), the signed-in user of the hosted sign-in cookie with the account as
/// the session sees it, and the request's audit context. No live session: the sign-in.
pub struct Account {
    pub state: AppState,
    pub reader: Reader,
    pub user: UserBearer,
    pub me: User,
    pub ctx: AuditContext,
    pub slug: String,
    /// The tenant has a passkey domain: passkeys can be added here.
    pub passkeys_on: bool,
}

impl FromRequestParts<AppState> for Account {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let mut reader = Reader::of_request(parts, state).await;
        let Path(params) = Path::<HashMap<String, String>>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let slug = params.get("slug").cloned().unwrap_or_default();
        let (tenant, view) = page_tenant(state, &mut reader, &slug).await?;
        let sign_in = account_sign_in_path(&slug);
        let Some(bearer) = signed_in(state, &tenant, &parts.headers) else {
            return Err(see_other(&reader, &sign_in, StatusCode::SEE_OTHER));
        };
        let me = tenant
            .call(|reply| SessionsMsg::Authenticate { bearer, reply })
            .await;
        let me = match me {
            Ok(me) => me,
            // The session ended (signed out, a password change elsewhere, a block): the
            // cookie goes, and the sign-in follows.
            Err(CallError::Failed(_)) => {
                let mut resp = see_other(&reader, &sign_in, StatusCode::SEE_OTHER);
                if let Some(c) = clear_sign_in_cookie(&tenant) {
                    resp.headers_mut().append(header::SET_COOKIE, c);
                }
                return Err(resp);
            }
            Err(e) => return Err(reader.problem(e.into())),
        };
        let RequestCtx(ctx) = RequestCtx::from_request_parts(parts, state)
            .await
            .map_err(|_| reader.problem(Problem::Invalid))?;
        Ok(Account {
            state: state.clone(),
            reader,
            user: UserBearer { tenant, bearer },
            me,
            ctx,
            slug,
            passkeys_on: view.passkeys,
        })
    }
}

/// A form posted to the account page: the account, and the form's fields once its CSRF value
/// (bound to the form's target and the session) is right; refused (403) before anything is
/// used otherwise.
pub struct Posted {
    pub account: Account,
    pub form: HashMap<String, String>,
}

impl FromRequest<AppState> for Posted {
    type Rejection = Response;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Response> {
        let (mut parts, body) = req.into_parts();
        let account = Account::from_request_parts(&mut parts, state).await?;
        let path = parts.uri.path().to_owned();
        let req = Request::from_parts(parts, body);
        let body = Bytes::from_request(req, state)
            .await
            .map_err(|_| account.reader.problem(Problem::Invalid))?;
        let form = form_fields(&body);
        if !account.csrf_ok(&path, field(&form, "csrf")) {
            return Err(account.reader.problem(Problem::Csrf));
        }
        Ok(Posted { account, form })
    }
}

impl Account {
    pub fn t(&self, id: &str) -> String {
        self.reader.t(id)
    }

    pub fn t_with(&self, id: &str, args: &[(&str, &str)]) -> String {
        self.reader.t_with(id, args)
    }

    /// The account page's path, or one of its actions'.
    pub fn path(&self, action: &str) -> String {
        let base = account_path(&self.slug);
        if action.is_empty() {
            base
        } else {
            format!("{base}/{action}")
        }
    }

    /// What a form's CSRF value is bound to besides the browser and the target: the session.
    fn subject(&self) -> String {
        self.user.bearer.session_id.to_string()
    }

    fn csrf_ok(&self, path: &str, sent: &str) -> bool {
        self.reader.csrf_ok(path, &self.subject(), sent)
    }

    /// The CSRF value of the form (or script) that posts to the action `action`.
    pub fn csrf(&self, action: &str) -> String {
        self.reader.csrf(&self.path(action), &self.subject())
    }

    /// A `POST` form to the action `action` with one button.
    pub fn form(&self, action: &str, button: &str, secondary: bool) -> Form {
        let path = self.path(action);
        let csrf = self.reader.csrf(&path, &self.subject());
        Form::post(path, csrf, self.t(button), secondary)
    }

    /// A page titled `title` (a text id), with the bar of the signed-in user.
    pub fn page(&self, title: &str) -> AccountPage {
        let shown = self
            .me
            .email
            .clone()
            .or_else(|| self.me.phone.clone())
            .unwrap_or_else(|| self.t("account-guest"));
        let mut sign_out = self.form("sign-out", "account-sign-out", true);
        sign_out.inline = true;
        let base = self.reader.page(title);
        AccountPage {
            lang: self.reader.lang,
            title: base.title,
            skip: base.skip,
            tenant: base.tenant,
            logo: base.logo,
            brand_css: base.brand_css,
            who: self.t_with("account-signed-in-as", &[("who", &shown)]),
            sign_out,
            notice: None,
            error_summary: None,
            paragraphs: Vec::new(),
            sections: Vec::new(),
            back: None,
            passkey_add: None,
        }
    }

    /// A page that follows an action, with the way back to the account page.
    pub fn after(&self, title: &str) -> AccountPage {
        let mut page = self.page(title);
        page.back = Some((self.path(""), self.t("account-back")));
        page
    }

    /// The page as an answer with `status` and the hosted pages' headers: its own styles,
    /// forms to itself, the tenant's logo the one image from elsewhere, no script.
    pub fn answer(&self, status: StatusCode, page: AccountPage) -> Response {
        let logo = page
            .logo
            .as_deref()
            .and_then(crate::http::pages::source_of)
            .map(|o| format!(" {o}"))
            .unwrap_or_default();
        // Script only for the passkey step: this server's one file, calling this server.
        let script = if page.passkey_add.is_some() {
            "script-src 'self'; connect-src 'self'; "
        } else {
            ""
        };
        let csp = format!(
            "default-src 'none'; {script}style-src 'self'; img-src 'self'{logo}; \
             form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        );
        match page.render() {
            Ok(html) => self.reader.html(status, html, &csp),
            Err(_) => self.reader.problem(Problem::Internal),
        }
    }

    /// Back to the account page with the notice `done`.
    pub fn done(&self, done: &str) -> Response {
        see_other(
            &self.reader,
            &format!("{}?done={done}", self.path("")),
            StatusCode::SEE_OTHER,
        )
    }

    /// The answer to a refused action: the sign-in when the session ended under it, the
    /// busy pages as the hosted pages show them, else the account page with the reason.
    pub async fn refused(&self, e: &ApiError) -> Response {
        match (e.status, e.code.as_str()) {
            (StatusCode::UNAUTHORIZED, "auth/invalid_token" | "auth/missing_token") => {
                let to = account_sign_in_path(&self.slug);
                see_other(&self.reader, &to, StatusCode::SEE_OTHER)
            }
            (StatusCode::SERVICE_UNAVAILABLE, _) => self.reader.problem(Problem::Busy),
            (s, _) if s.is_server_error() => self.reader.problem(Problem::Internal),
            _ => page::page_with_error(self, e.status, self.reason(e)).await,
        }
    }

    /// Why an action was refused, in the reader's words where the refusal has them.
    fn reason(&self, e: &ApiError) -> String {
        let key = match e.code.as_str() {
            "auth/invalid_credentials" => "account-error-password",
            "mfa/invalid_code" | "invalid_or_expired_token" => "account-error-code",
            "auth/weak_password" => "account-error-weak",
            "step_up/method_unavailable" => "account-error-no-password",
            "user/self_deletion_disabled" => "account-error-deletion-off",
            "auth/too_many_attempts" | "rate_limit/exceeded" => "account-error-busy",
            "auth/email_unconfirmed" => "account-error-unconfirmed",
            "mfa/already_enabled" | "mfa/not_enabled" | "mfa/setup_not_started" => {
                "account-error-stale"
            }
            _ if e.status == StatusCode::NOT_FOUND => "account-error-stale",
            _ if e.status == StatusCode::TOO_MANY_REQUESTS => "account-error-busy",
            _ => return format!("{} {}", self.t("account-error-invalid"), e.message),
        };
        self.t(key)
    }

    /// What the API's functions for the signed-in user take: the state, the user and the
    /// request's audit context.
    pub fn api(&self) -> (State<AppState>, UserBearer, RequestCtx) {
        (
            State(self.state.clone()),
            self.user.clone(),
            RequestCtx(self.ctx.clone()),
        )
    }

    /// Back to the page with the notice `done` once `answer` is a success, else the page
    /// that says why not.
    pub async fn finish<T>(&self, answer: Result<T, ApiError>, done: &str) -> Response {
        match answer {
            Ok(_) => self.done(done),
            Err(e) => self.refused(&e).await,
        }
    }

    /// A step-up token for the gated form posted to `action`, its refusal already the page
    /// that says why: with the password the form carries; or, when the reader chose a code
    /// by e-mail (an account without a password), the page that asks for the mailed code and
    /// posts the form again with it; then with that code.
    pub async fn stepped(
        &self,
        form: &HashMap<String, String>,
        action: &str,
    ) -> Result<StepUpHeader, Response> {
        let code = field(form, "step_up_code").trim().to_owned();
        let answer = if !code.is_empty() {
            let (state, user, ctx) = self.api();
            step_up::email_otp_verify(
                state,
                user,
                ctx,
                ApiJson(StepUpEmailOtpVerifyRequest { otp: code }),
            )
            .await
            .map(|axum::Json(t)| StepUpHeader::token(t.step_up_token))
        } else if field(form, "via") == "code" {
            let (_, user, ctx) = self.api();
            let sent = step_up::email_otp_initiate(user, ctx, HeaderMap::new(), Bytes::new()).await;
            return Err(match sent {
                Ok(_) => self.code_page(form, action),
                Err(e) => self.refused(&e).await,
            });
        } else {
            self.step_up(form).await
        };
        match answer {
            Ok(s) => Ok(s),
            Err(e) => Err(self.refused(&e).await),
        }
    }

    /// The page that takes the code mailed for a step-up, and posts the form to `action`
    /// again with it (what the form carried besides its password, as hidden fields).
    fn code_page(&self, posted: &HashMap<String, String>, action: &str) -> Response {
        let mut page = self.after("account-mail-code-title");
        page.paragraphs.push(self.t("account-mail-code-intro"));
        let mut form = self.form(action, "account-mail-code-continue", false);
        for name in CARRIED {
            if let Some(v) = posted.get(name) {
                form.hidden.push((name, v.clone()));
            }
        }
        let label = self.t("account-mail-code");
        let code = crate::http::pages::FieldView::one_time_code(
            "step-up-code",
            "step_up_code",
            label,
            (6, 8),
        );
        form.controls.push(Control::Input(code));
        page.sections.push(Section {
            forms: vec![form],
            ..Section::default()
        });
        self.answer(StatusCode::OK, page)
    }

    /// Offers a gated form's other way to confirm: a code by e-mail instead of the password.
    pub fn or_code(&self, form: &mut Form) {
        form.buttons.push(crate::http::pages::ButtonView {
            name: "via",
            value: "code".to_owned(),
            label: self.t("account-or-code"),
            secondary: true,
        });
    }

    /// A step-up token of this session, from the password the form carries (the gate of the
    /// API's routes then passes as for any caller).
    pub async fn step_up(&self, form: &HashMap<String, String>) -> Result<StepUpHeader, ApiError> {
        let req = StepUpPasswordRequest {
            password: field(form, "password").to_owned(),
        };
        let axum::Json(token) = step_up::password(
            State(self.state.clone()),
            self.user.clone(),
            RequestCtx(self.ctx.clone()),
            ApiJson(req),
        )
        .await?;
        Ok(StepUpHeader::token(token.step_up_token))
    }

    /// A password field ("confirm with your password"), for a gated form.
    pub fn password_field(&self, id: &str) -> Control {
        Control::Input(crate::http::pages::FieldView::current_password(
            id,
            self.t("account-password-confirm"),
            1,
        ))
    }
}
