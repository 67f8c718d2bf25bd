//! The pages of a hosted sign-in: the sign-in page with its forms (password, a code or a
//! link by e-mail, the passkey button, the social buttons), the page that takes a code, and
//! what follows a sign-in (the second step of a user with MFA, or the sign-in cookie and back
//! to the authorize page).
//!
//! Its own file: every way of signing in ends on these pages, whichever module took the
//! sign-in's form.

use axum::{
    http::{header, HeaderValue, StatusCode},
    response::Response,
};
use tessera_actors::{
    tenant::messages::{LoginOutcome, PasswordlessLogin},
    CallError, TenantError,
};

use super::{super::hosted::sign_in_cookie, flow::Flow};
use crate::{
    app::AppState,
    http::pages::{
        see_other, ButtonView, FieldView, FormView, LinkView, PasskeyButton, Problem, Reader,
        SocialButtons, PASSWORD_MAX,
    },
};

/// What the sign-in page shows besides its forms: an error, and what the user typed.
#[derive(Default)]
pub struct Shown {
    pub error: Option<String>,
    pub email: String,
    /// The password form must carry a solved CAPTCHA (it shows the widget, when one is
    /// configured).
    pub captcha: bool,
}

impl Shown {
    /// The reader's words for `key` as the error, and the address the user typed.
    pub fn error(reader: &Reader, key: &str, email: String) -> Self {
        Shown {
            error: Some(reader.t(key)),
            email,
            captcha: false,
        }
    }
}

/// The e-mail address field of one of the sign-in page's forms.
fn email_field(reader: &Reader, id: &'static str, value: &str) -> FieldView {
    let mut input = FieldView::input(
        id,
        "email",
        "email",
        reader.t("login-email-label"),
        "username",
    );
    input.value = value.to_owned();
    input
}

pub fn sign_in_page(
    state: &AppState,
    reader: &Reader,
    flow: &Flow,
    shown: Shown,
    status: StatusCode,
) -> Response {
    let client = flow.audience();
    let mut page = reader.page("login-title");
    page.error_summary = shown.error;
    page.paragraphs
        .push(reader.t_with("login-intro", &[("client", client)]));
    let email = if shown.email.is_empty() {
        flow.params.get("login_hint").unwrap_or("").to_owned()
    } else {
        shown.email
    };
    page.passkey = flow.view.passkeys.then(|| PasskeyButton {
        begin: format!("/oauth/{}/passkey/begin?{}", flow.tenant.slug, flow.query),
        finish: format!("/oauth/{}/passkey/finish?{}", flow.tenant.slug, flow.query),
        csrf: reader.csrf(&flow.authorize_path(), &flow.query),
        heading: reader.t("login-passkey-heading"),
        button: reader.t("login-passkey-button"),
        failed: reader.t("login-passkey-failed"),
    });
    if !flow.view.social.is_empty() {
        // Each goes to the social sign-in's authorize route, which returns to
        // `social-return` with this request.
        let links = flow
            .view
            .social
            .iter()
            .map(|p| {
                let query = form_urlencoded::Serializer::new(String::new())
                    .append_pair("tenant_id", &flow.tenant.id.0.to_string())
                    .append_pair("hosted", &flow.query)
                    .finish();
                LinkView {
                    href: format!("/oauth/{}/authorize?{query}", p.as_str()),
                    label: reader.t_with("login-social-button", &[("provider", p.display_name())]),
                }
            })
            .collect();
        page.social = Some(SocialButtons {
            heading: reader.t("login-social-heading"),
            links,
        });
    }
    // One address for every way in: the password's button first, then the others as
    // secondary buttons of the same form.
    let mut form = FormView::new(
        reader.csrf(&flow.authorize_path(), &flow.query),
        reader.t("login-button"),
    );
    form.buttons[0].name = "step";
    form.buttons[0].value = "password".to_owned();
    let mut password = FieldView::input(
        "password",
        "password",
        "password",
        reader.t("login-password-label"),
        "current-password",
    );
    password.max = PASSWORD_MAX;
    form.fields = vec![email_field(reader, "email", &email), password];
    if let Some(widget) = state.captcha.widget().filter(|_| shown.captcha) {
        form.captcha = Some(widget.site_key.to_owned());
        page.captcha_script = Some(widget.script.to_owned());
    }
    // The mailed ways in need no CAPTCHA widget only when none is configured (the form runs
    // no script); the account's own ways are always there.
    let by_mail = [
        (flow.view.email_otp_enabled, "email_code", "login-code-send"),
        (
            flow.view.magic_link_enabled,
            "magic_link",
            "login-link-send",
        ),
    ]
    .into_iter()
    .filter(|_| !state.captcha.required());
    let account = [
        (flow.view.sso, "sso", "login-sso-button"),
        (true, "forgot_password", "login-forgot-button"),
        (true, "sign_up_page", "login-signup-button"),
    ];
    for (on, step, button) in by_mail.chain(account) {
        if on {
            form.buttons.push(ButtonView {
                name: "step",
                value: step.to_owned(),
                label: reader.t(button),
                secondary: true,
            });
        }
    }
    page.forms.push(form);
    // Its forms end, through this server's redirects, at the client.
    reader.answer(status, page, &flow.form_targets())
}

/// The page that takes a code: the e-mailed one (`step=verify_code`) or the TOTP or recovery
/// code of a user with MFA (`step=mfa`).
pub fn code_page(
    reader: &Reader,
    flow: &Flow,
    step: &'static str,
    hidden: Vec<(&'static str, String)>,
    error: Option<String>,
    email: Option<&str>,
) -> Response {
    let (title, intro) = match step {
        "mfa" => ("mfa-title", reader.t("mfa-intro")),
        _ => (
            "code-title",
            reader.t_with("code-intro", &[("email", email.unwrap_or(""))]),
        ),
    };
    let status = if error.is_some() {
        StatusCode::UNAUTHORIZED
    } else {
        StatusCode::OK
    };
    let mut page = reader.page(title);
    page.error_summary = error;
    page.paragraphs.push(intro);
    let mut form = FormView::new(
        reader.csrf(&flow.authorize_path(), &flow.query),
        reader.t("code-button"),
    );
    // Also after a login link, whose page has another address.
    form.action = Some(format!("{}?{}", flow.authorize_path(), flow.query));
    form.hidden.push(("step", step.to_owned()));
    form.hidden.extend(hidden);
    let mut code = FieldView::input(
        "code",
        "code",
        "text",
        reader.t("code-label"),
        "one-time-code",
    );
    code.max = 64;
    if step != "mfa" {
        code.inputmode = "numeric";
        code.max = 6;
    }
    form.fields = vec![code];
    page.forms.push(form);
    reader.answer(status, page, &flow.form_targets())
}

/// The page after a code or a link could not be sent: the sign-in page again when the
/// address asked too often, else what went wrong.
pub fn unsent(
    state: &AppState,
    reader: &Reader,
    flow: &Flow,
    email: String,
    e: CallError<TenantError>,
) -> Response {
    match e {
        CallError::Failed(
            TenantError::RateLimited { retry_after } | TenantError::TooManyAttempts { retry_after },
        ) => throttled(state, reader, flow, email, retry_after),
        // The address's domain signs in only through its organization.
        CallError::Failed(TenantError::Sso(tessera_actors::SsoError::Required { connection })) => {
            sso_continue_page(reader, flow, connection, &email)
        }
        e => reader.problem(e.into()),
    }
}

/// The page that sends the browser on to an organization's identity provider: at once (an
/// instant refresh to this server's start of the single sign-on, which redirects to the
/// provider), with a link for whoever stays. A refresh and a link rather than a redirect of
/// the sign-in form's post: the form's `form-action` would have to name the provider.
pub fn sso_continue_page(
    reader: &Reader,
    flow: &Flow,
    connection: uuid::Uuid,
    email: &str,
) -> Response {
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("hosted", &flow.query)
        .append_pair("login_hint", email)
        .finish();
    let to = format!("/sso/{}/{connection}/start?{query}", flow.tenant.slug);
    let mut page = reader.page("sso-continue-title");
    page.paragraphs.push(reader.t("sso-continue"));
    page.link = Some(LinkView {
        href: to.clone(),
        label: reader.t("sso-continue-button"),
    });
    page.refresh = Some(to);
    reader.answer(StatusCode::OK, page, &[])
}

/// The sign-in page again with the reason, 429 and `Retry-After`, when the client address or
/// the account tried too often.
pub fn throttled(
    state: &AppState,
    reader: &Reader,
    flow: &Flow,
    email: String,
    retry_after: u64,
) -> Response {
    let shown = Shown::error(reader, "error-busy", email);
    let mut resp = sign_in_page(state, reader, flow, shown, StatusCode::TOO_MANY_REQUESTS);
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after.max(1)));
    resp
}

/// After a sign-in: the second step of a user with MFA, or the sign-in cookie and back to the
/// authorize page.
pub fn signed(
    state: &AppState,
    reader: &Reader,
    flow: &Flow,
    login: PasswordlessLogin,
) -> Response {
    // A resumed code flow must be this request's.
    if let Some(p) = &login.oauth {
        let Some(req) = flow.checked.as_ref().map(|c| &c.request) else {
            return reader.problem(Problem::Invalid);
        };
        if p.client_id != req.client_id || p.redirect_uri != req.redirect_uri {
            return reader.problem(Problem::Invalid);
        }
    }
    let grant = match login.outcome {
        LoginOutcome::Signed { grant, .. } => grant,
        LoginOutcome::MfaRequired { challenge, .. } => {
            return code_page(
                reader,
                flow,
                "mfa",
                vec![("challenge", challenge)],
                None,
                None,
            )
        }
        LoginOutcome::EnrollmentRequired { .. } => {
            return reader.problem_page(StatusCode::FORBIDDEN, "mfa-enrol-title", "mfa-enrol")
        }
    };
    let mut resp = see_other(reader, &flow.again(), StatusCode::SEE_OTHER);
    match sign_in_cookie(state, &flow.tenant, &grant) {
        Some(c) => {
            resp.headers_mut().append(header::SET_COOKIE, c);
            resp
        }
        None => reader.problem(Problem::Internal),
    }
}
