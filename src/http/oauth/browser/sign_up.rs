//! The hosted sign-in's sign-up: "Create an account" shows a form (the address, a new
//! password twice, the date of birth when the tenant protects minors, the consent, and the
//! CAPTCHA widget when one is configured), and its post registers as `POST /v1/auth/register`
//! does: the same rules, the same 5 a minute per client address, the same answer whether or not
//! the address can be registered. The verification mail's page continues to this authorize
//! request, where the new account signs in.
//!
//! Its own file: the one way of getting an account on the hosted pages.

use std::collections::HashMap;

use axum::{http::StatusCode, response::Response};
use tessera_actors::{
    password::Password,
    policy::normalize_email,
    tenant::{audit::AuditContext, messages::Registration, AccountsMsg},
};

use super::flow::Flow;
use crate::{
    app::AppState,
    captcha::{CaptchaOutcome, WIDGET_FIELD},
    http::{
        error::is_email,
        fields::is_past_date,
        pages::{
            field, new_password_errors, new_password_fields, ButtonView, CheckView, FieldView,
            FormView, LinkView, Problem, Reader,
        },
    },
};

/// The longest authorize request an account link returns to; a longer one returns to the
/// tenant's site URL instead.
pub const MAX_RETURN: usize = 2048;

/// Where an account link asked for on this page returns: this authorize request, unless it is
/// too long to keep.
pub fn way_back(state: &AppState, flow: &Flow) -> Option<String> {
    let back = format!("{}{}", state.accounts_base(), flow.again());
    (back.len() <= MAX_RETURN).then_some(back)
}

/// What the sign-up page shows again after a refused post: what was typed (never the
/// password) and the error of each field.
#[derive(Default)]
pub struct Typed {
    email: String,
    date_of_birth: String,
    summary: Option<String>,
    email_error: Option<String>,
    password_errors: [Option<String>; 2],
    date_error: Option<String>,
    consent_error: Option<String>,
}

impl Typed {
    /// The address the sign-in page's form carried, for a first look at the sign-up page.
    pub fn email(email: String) -> Self {
        Typed {
            email,
            ..Typed::default()
        }
    }

    fn has_errors(&self) -> bool {
        self.email_error.is_some()
            || self.password_errors.iter().any(Option::is_some)
            || self.date_error.is_some()
            || self.consent_error.is_some()
    }
}

/// The sign-up page.
pub fn sign_up_page(
    state: &AppState,
    reader: &Reader,
    flow: &Flow,
    typed: Typed,
    status: StatusCode,
) -> Response {
    let mut page = reader.page("signup-title");
    let refused = typed.has_errors();
    page.error_summary = typed
        .summary
        .or_else(|| refused.then(|| reader.t("signup-error-summary")));
    page.paragraphs.push(reader.t("signup-intro"));
    // What the consent agrees to, where the tenant links it.
    let documents = [
        (&reader.brand.terms_url, "signup-terms"),
        (&reader.brand.privacy_url, "signup-privacy"),
    ];
    for (url, label) in documents {
        if let Some(href) = url {
            page.links.push(LinkView {
                href: href.clone(),
                label: reader.t(label),
            });
        }
    }
    let mut form = FormView::new(
        reader.csrf(&flow.authorize_path(), &flow.query),
        reader.t("signup-button"),
    );
    form.buttons = vec![ButtonView {
        name: "step",
        value: "sign_up".to_owned(),
        label: reader.t("signup-button"),
        secondary: false,
    }];
    let label = reader.t("login-email-label");
    form.fields.push(
        FieldView::input("email", "email", "email", label, "email")
            .filled(typed.email, typed.email_error),
    );
    form.fields
        .extend(new_password_fields(reader, typed.password_errors));
    if flow.view.minor_protection {
        let label = reader.t("signup-dob-label");
        let mut dob = FieldView::input("date_of_birth", "date_of_birth", "date", label, "bday")
            .filled(typed.date_of_birth, typed.date_error);
        dob.max = 10;
        form.fields.push(dob);
    }
    form.checks.push(CheckView {
        name: "consent",
        id: "consent".to_owned(),
        value: "true".to_owned(),
        label: reader.t("signup-consent"),
        checked: false,
    });
    if let Some(e) = typed.consent_error {
        page.paragraphs.push(e);
    }
    if let Some(widget) = state.captcha.widget() {
        form.captcha = Some(widget.site_key.to_owned());
        page.captcha_script = Some(widget.script.to_owned());
    }
    page.forms.push(form);
    page.link = Some(LinkView {
        href: flow.again(),
        label: reader.t("signup-back"),
    });
    // Its form ends on this server: the page that says a mail is on its way.
    reader.answer(status, page, &[])
}

/// The sign-up page's post: registers, then says a verification mail is on its way (the same
/// page whether or not the address could be registered).
pub async fn sign_up_submit(
    state: &AppState,
    reader: &Reader,
    flow: &Flow,
    form: &HashMap<String, String>,
    (ip, ctx): (std::net::IpAddr, AuditContext),
) -> Response {
    let email = field(form, "email").trim().to_owned();
    let password = field(form, "password");
    let date_of_birth = field(form, "date_of_birth").trim().to_owned();
    let mut typed = Typed {
        email: email.clone(),
        date_of_birth: date_of_birth.clone(),
        email_error: (!is_email(&email)).then(|| reader.t("login-error-email")),
        password_errors: new_password_errors(reader, password, field(form, "password_confirm")),
        date_error: (flow.view.minor_protection && !is_past_date(&date_of_birth))
            .then(|| reader.t("signup-error-dob")),
        consent_error: (field(form, "consent") != "true").then(|| reader.t("signup-error-consent")),
        summary: None,
    };
    if typed.has_errors() {
        return sign_up_page(state, reader, flow, typed, StatusCode::BAD_REQUEST);
    }
    if state.captcha.required() {
        match state
            .captcha
            .verify(Some(field(form, WIDGET_FIELD)), ip)
            .await
        {
            CaptchaOutcome::Passed => {}
            CaptchaOutcome::Failed => {
                typed.summary = Some(reader.t("login-error-captcha"));
                return sign_up_page(state, reader, flow, typed, StatusCode::BAD_REQUEST);
            }
            CaptchaOutcome::Unreachable(e) => {
                tracing::warn!(error = %e, "CAPTCHA verifier unreachable");
                return reader.problem(Problem::Busy);
            }
        }
    }
    if let Err(e) = flow
        .tenant
        .call(|reply| AccountsMsg::RegisterAdmit { ip, reply })
        .await
    {
        return reader.problem(e.into());
    }
    let Ok(password_hash) = state.hasher.hash(&Password::new(password.to_owned())).await else {
        return reader.problem(Problem::Busy);
    };
    let email = normalize_email(&email).unwrap_or(email);
    let registration = Registration {
        email: email.clone(),
        password_hash,
        date_of_birth: flow.view.minor_protection.then_some(date_of_birth),
        age_verification_token: None,
        redirect_to: way_back(state, flow),
        locale: reader.requested.map(str::to_owned),
    };
    let registered = flow
        .tenant
        .call(|reply| AccountsMsg::Register {
            registration: registration.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await;
    if let Err(e) = registered {
        return reader.problem(e.into());
    }
    let mut page = reader.page("signup-sent-title");
    page.paragraphs
        .push(reader.t_with("signup-sent", &[("email", &email)]));
    reader.answer(StatusCode::OK, page, &[])
}
