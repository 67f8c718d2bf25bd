//! The signed-in dashboard account in the console: its address and second factor; setting
//! TOTP up (a QR code and the secret, a code to confirm, the recovery codes shown once) and
//! taking it off, both after a re-authentication, through the dashboard API's handlers
//! (`dashboard::factors`).

use axum::{extract::State, http::StatusCode, response::Response};

use super::{sign_in::reauth_page, Control, DoneQuery, Section, SignedInPost, Visit};
use crate::http::{
    dashboard::factors::{self as api, DashboardTotpConfirmRequest, DashboardTotpSetupResponse},
    extract::ApiJson,
    pages::{qr_svg, FieldView},
};

const PAGE: &str = "/console/account";
const SETUP: &str = "/console/account/mfa/setup";
const CONFIRM: &str = "/console/account/mfa/confirm";
const REMOVE: &str = "/console/account/mfa/remove";

/// The account: its address and second factor, with the form that changes the factor.
pub async fn page(
    visit: Visit,
    axum::extract::Query(q): axum::extract::Query<DoneQuery>,
) -> Response {
    let auth = match visit.signed_in() {
        Ok(a) => a,
        Err(r) => return r,
    };
    let s = &auth.session;
    let mut page = visit.page("console-account");
    page.notice = match q.done.as_deref() {
        Some("removed") => Some(visit.t("console-mfa-removed")),
        _ => None,
    };
    let yes_no = |b: bool| visit.t(if b { "console-yes" } else { "console-no" });
    let mut section = Section {
        facts: vec![
            (visit.t("console-email"), s.email.clone()),
            (
                visit.t("console-account-verified"),
                yes_no(s.email_verified),
            ),
            (visit.t("console-account-mfa"), yes_no(s.mfa_enabled)),
        ],
        ..Section::default()
    };
    if s.mfa_enabled {
        section.paragraphs.push(visit.t_with(
            "console-account-recovery-left",
            &[("count", &s.recovery_codes_left.to_string())],
        ));
        let mut off = visit.button(REMOVE.to_owned(), visit.t("console-mfa-remove"), true);
        off.inline = false;
        section.forms.push(off);
    } else if s.email_verified {
        section.paragraphs.push(visit.t("console-mfa-why"));
        section
            .forms
            .push(visit.form(SETUP.to_owned(), visit.t("console-mfa-setup")));
    } else {
        section.paragraphs.push(visit.t("console-mfa-verify-first"));
    }
    page.sections.push(section);
    visit.answer(StatusCode::OK, page)
}

/// The set-up page: the QR code, the secret, and the form for the first code.
fn setup_page(visit: &Visit, secret: &str, uri: &str, error: Option<String>) -> Response {
    let mut page = visit.page("console-mfa-setup");
    page.error_summary = error.clone();
    let mut form = visit.form(CONFIRM.to_owned(), visit.t("console-mfa-confirm"));
    form.hidden.push(("secret", secret.to_owned()));
    form.hidden.push(("uri", uri.to_owned()));
    let mut code = FieldView::input(
        "code",
        "code",
        "text",
        visit.t("console-code"),
        "one-time-code",
    );
    code.inputmode = "numeric";
    code.min = 6;
    code.max = 6;
    code.error = error;
    form.controls.push(Control::Input(code));
    page.sections.push(Section {
        paragraphs: vec![visit.t("console-mfa-scan")],
        qr: qr_svg(uri),
        ..Section::default()
    });
    page.sections.push(Section {
        paragraphs: vec![visit.t("console-mfa-type")],
        codes: vec![secret.to_owned()],
        forms: vec![form],
        ..Section::default()
    });
    visit.answer_page(page)
}

/// Starts the set-up (after a re-authentication): a new seed, shown on the set-up page.
pub async fn setup(p: SignedInPost) -> Response {
    let SignedInPost { visit, auth, .. } = p;
    match api::totp_setup(State(visit.state.clone()), auth).await {
        Ok(axum::Json(DashboardTotpSetupResponse {
            secret,
            otpauth_uri,
        })) => setup_page(&visit, &secret, &otpauth_uri, None),
        Err(e) if e.code == "dashboard/reauth_required" => reauth_page(&visit, PAGE, None),
        Err(e) => visit.refused(&e),
    }
}

/// Confirms the seed with a code: the recovery codes, shown once.
pub async fn confirm(p: SignedInPost) -> Response {
    let SignedInPost { visit, form, auth } = p;
    let req = DashboardTotpConfirmRequest {
        code: form.one("code").trim().to_owned(),
    };
    match api::totp_confirm(State(visit.state.clone()), auth, ApiJson(req)).await {
        Ok(axum::Json(codes)) => {
            let mut page = visit.page("console-mfa-on");
            page.notice = Some(visit.t("console-mfa-on-notice"));
            page.sections.push(Section {
                heading: Some(visit.t("console-recovery-codes")),
                paragraphs: vec![visit.t("console-recovery-codes-intro")],
                codes: codes.recovery_codes,
                links: vec![super::Link {
                    href: PAGE.to_owned(),
                    label: visit.t("console-recovery-codes-saved"),
                }],
                ..Section::default()
            });
            visit.answer(StatusCode::OK, page)
        }
        Err(e) if e.status == StatusCode::BAD_REQUEST => {
            // A wrong code: the same seed, asked again (the secret is the reader's own).
            let (secret, uri) = (form.one("secret"), form.one("uri"));
            if secret.len() > 128 || !uri.starts_with("otpauth://") || uri.len() > 1024 {
                return visit.refused(&e);
            }
            setup_page(&visit, &secret, &uri, Some(visit.t("console-code-failed")))
        }
        Err(e) => visit.refused(&e),
    }
}

/// Takes the second factor off (after a re-authentication).
pub async fn remove(p: SignedInPost) -> Response {
    let SignedInPost { visit, auth, .. } = p;
    match api::totp_remove(State(visit.state.clone()), auth).await {
        Ok(_) => visit.go("/console/account?done=removed"),
        Err(e) if e.code == "dashboard/reauth_required" => reauth_page(&visit, PAGE, None),
        Err(e) => visit.refused(&e),
    }
}
