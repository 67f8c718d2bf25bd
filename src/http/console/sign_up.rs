//! Creating an account and a first tenant from the console, through the onboarding route's
//! own handler (`POST /v1/onboarding/signup`: the per-address limit, the CAPTCHA when the
//! server asks for one, the password rules): the new owner is signed in, and the tenant's
//! API key is shown once.

use axum::{extract::State, http::StatusCode, response::Response};
use serde_json::Value;
use tessera_actors::directory::dashboard::LoginStep;

use super::{
    field_errors, json_body, CheckGroup, CheckOption, Control, Link, Posted, Section, Visit,
    SESSION_COOKIE,
};
use crate::{
    captcha::WIDGET_FIELD,
    http::{
        dashboard::password_accepted,
        error::ApiError,
        extract::{ApiJson, ClientIp},
        onboarding::{signup, OnboardingSignupRequest},
        pages::{FieldView, Problem, PASSWORD_MIN},
    },
};

const SIGN_UP: &str = "/console/sign-up";

/// What the reader typed, and what was wrong with it, field by field.
#[derive(Default)]
struct Typed {
    email: String,
    tenant_name: String,
    errors: std::collections::HashMap<String, String>,
    summary: Option<String>,
}

/// The sign-up form; a signed-in reader goes to the tenants.
pub async fn page(visit: Visit) -> Response {
    if visit.auth.is_some() {
        return visit.go("/console");
    }
    form_page(&visit, StatusCode::OK, Typed::default())
}

fn form_page(visit: &Visit, status: StatusCode, typed: Typed) -> Response {
    let mut page = visit.page("console-sign-up-title");
    page.error_summary = typed.summary.clone();
    page.paragraphs.push(visit.t("console-sign-up-intro"));
    let error = |name: &str| {
        typed
            .errors
            .get(name)
            .map(|e| visit.t_with("console-not-accepted", &[("reason", e)]))
    };
    let mut form = visit.form(SIGN_UP.to_owned(), visit.t("console-sign-up"));
    let label = visit.t("console-email");
    let email = FieldView::input("email", "email", "email", label, "username")
        .sized(3, 254)
        .filled(typed.email.clone(), error("email"));
    let mut password = FieldView::new_password(
        "password",
        visit.t("console-password"),
        Some(visit.t_with(
            "console-password-hint",
            &[("min", &PASSWORD_MIN.to_string())],
        )),
    );
    password.error = error("password");
    let label = visit.t("console-tenant-name");
    let mut tenant = FieldView::input("tenant-name", "tenant_name", "text", label, "organization")
        .sized(2, 50)
        .filled(typed.tenant_name.clone(), error("tenant_name"));
    tenant.hint = Some(visit.t("console-tenant-name-hint"));
    let consent_error = error("consent_terms").or_else(|| error("consent_privacy"));
    form.controls = vec![
        Control::Input(email),
        Control::Input(password),
        Control::Input(tenant),
        Control::Checks(CheckGroup {
            legend: visit.t("console-consent"),
            name: "consent".to_owned(),
            options: [
                ("terms", "console-consent-terms"),
                ("privacy", "console-consent-privacy"),
            ]
            .iter()
            .map(|(value, label)| CheckOption {
                id: format!("consent-{value}"),
                value: (*value).to_owned(),
                label: visit.t(label),
                checked: false,
            })
            .collect(),
            error: consent_error,
        }),
    ];
    if let Some(widget) = visit.state.captcha.widget() {
        form.captcha = Some(widget.site_key.to_owned());
        page.captcha_script = Some(widget.script.to_owned());
    }
    page.sections.push(Section {
        forms: vec![form],
        links: vec![Link {
            href: "/console/sign-in".to_owned(),
            label: visit.t("console-have-account"),
        }],
        ..Section::default()
    });
    visit.answer(status, page)
}

/// Creates the account and its tenant with the onboarding route's handler, signs the owner
/// in, and shows the API key once.
pub async fn submit(p: Posted) -> Response {
    let Posted { visit, form } = p;
    let one = |name: &str| form.one(name);
    let consent = form.all("consent");
    let ticked = |value: &str| consent.iter().any(|v| v == value);
    let Some(ip) = visit.ip else {
        return visit.reader.problem(Problem::Invalid);
    };
    let req = OnboardingSignupRequest {
        email: one("email").trim().to_owned(),
        password: one("password"),
        tenant_name: one("tenant_name").trim().to_owned(),
        consent_terms: ticked("terms"),
        consent_privacy: ticked("privacy"),
        consent_marketing: false,
        idempotency_key: None,
        website: None,
        turnstile_token: Some(one(WIDGET_FIELD)).filter(|t| !t.is_empty()),
    };
    let mut typed = Typed {
        email: req.email.clone(),
        tenant_name: req.tenant_name.clone(),
        ..Typed::default()
    };
    let answer = match signup(State(visit.state.clone()), ClientIp(ip), ApiJson(req)).await {
        Ok(resp) => resp,
        Err(e) => return refused(&visit, e, typed),
    };
    let created = json_body(answer).await.unwrap_or(Value::Null);
    let (Some(api_key), Some(owner), Some(slug)) = (
        created["api_key"].as_str(),
        created["owner"]["id"]
            .as_str()
            .and_then(|i| uuid::Uuid::parse_str(i).ok()),
        created["tenant"]["slug"].as_str(),
    ) else {
        typed.summary = Some(visit.t("console-sign-up-failed"));
        return form_page(&visit, StatusCode::INTERNAL_SERVER_ERROR, typed);
    };
    // The owner's password was just set: the session opens without asking it again.
    let step = password_accepted(&visit.state, owner, ip, None).await;
    let Ok(LoginStep::Session(session)) = step else {
        return visit.go("/console/sign-in");
    };
    let mut page = visit.page("console-sign-up-done");
    page.sign_out = None;
    page.sections.push(Section {
        paragraphs: vec![
            visit.t("console-sign-up-verify"),
            visit.t("console-api-key-intro"),
            visit.t("console-key-once"),
        ],
        codes: vec![api_key.to_owned()],
        links: vec![Link {
            href: super::tenant_path(slug),
            label: visit.t("console-sign-up-continue"),
        }],
        ..Section::default()
    });
    let max_age = visit.state.config.dashboard.absolute_timeout_secs as i64;
    let mut resp = visit.answer(StatusCode::CREATED, page);
    if let Some(c) = visit.cookie(SESSION_COOKIE, &session.token, max_age) {
        resp.headers_mut().append(axum::http::header::SET_COOKIE, c);
    }
    resp
}

/// The form again with the refusal's reasons, or the console's refusal.
fn refused(visit: &Visit, e: ApiError, mut typed: Typed) -> Response {
    match (e.status, e.code.as_str()) {
        (StatusCode::BAD_REQUEST, "validation/invalid_request") => {
            typed.errors = field_errors(&e);
            typed.summary = Some(visit.t("console-settings-refused"));
            form_page(visit, StatusCode::BAD_REQUEST, typed)
        }
        (StatusCode::BAD_REQUEST, _) => {
            typed.summary = Some(visit.t("console-sign-up-rejected"));
            form_page(visit, StatusCode::BAD_REQUEST, typed)
        }
        (StatusCode::CONFLICT, _) => {
            typed.summary = Some(visit.t("console-sign-up-exists"));
            form_page(visit, StatusCode::CONFLICT, typed)
        }
        _ => visit.refused(&e),
    }
}
