//! Signing in to the console with a dashboard account (the dashboard's login rules: the
//! throttles, the known device in `console_device`, the second factor), signing out, and
//! re-authenticating before a sensitive action.

use axum::{http::StatusCode, response::Response};
use tessera_actors::{
    directory::dashboard::{LoginStep, NewSession},
    error::DirectoryError,
    known_devices::DEVICE_TOKEN_TTL,
    CallError, DirectoryMsg, Password,
};

use super::{
    redirect_with, Control, Posted, Section, SignedInPost, Visit, DEVICE_COOKIE, SESSION_COOKIE,
};
use crate::http::{
    dashboard::{check_password, mfa_login},
    error::{is_email, len_between, ApiError},
    pages::{cookie, FieldView, Problem, PASSWORD_MAX},
};

const SIGN_IN: &str = "/console/sign-in";
const CODE: &str = "/console/sign-in/code";
const REAUTH: &str = "/console/reauth";

/// The sign-in form; a signed-in reader goes to the tenants.
pub async fn page(visit: Visit) -> Response {
    if visit.auth.is_some() {
        return visit.go("/console");
    }
    sign_in_form(&visit, StatusCode::OK, "", None)
}

fn sign_in_form(visit: &Visit, status: StatusCode, email: &str, error: Option<String>) -> Response {
    let mut page = visit.page("console-sign-in-title");
    page.error_summary = error;
    page.paragraphs.push(visit.t("console-sign-in-intro"));
    let mut form = visit.form(SIGN_IN.to_owned(), visit.t("console-sign-in"));
    let mut e = FieldView::input(
        "email",
        "email",
        "email",
        visit.t("console-email"),
        "username",
    );
    e.value = email.to_owned();
    e.min = 3;
    let p = FieldView::current_password("password", visit.t("console-password"), 8);
    form.controls = vec![Control::Input(e), Control::Input(p)];
    page.sections.push(Section {
        forms: vec![form],
        links: vec![
            super::Link {
                href: "/dashboard/forgot-password".to_owned(),
                label: visit.t("console-forgot"),
            },
            super::Link {
                href: "/console/sign-up".to_owned(),
                label: visit.t("console-no-account"),
            },
        ],
        ..Section::default()
    });
    visit.answer(status, page)
}

fn code_form(
    visit: &Visit,
    status: StatusCode,
    challenge: &str,
    error: Option<String>,
) -> Response {
    let mut page = visit.page("console-code-title");
    page.paragraphs.push(visit.t("console-code-intro"));
    let mut form = visit.form(CODE.to_owned(), visit.t("console-continue"));
    form.hidden.push(("challenge", challenge.to_owned()));
    // A recovery code has letters too.
    let mut f = FieldView::one_time_code("code", "code", visit.t("console-code"), (6, 32));
    f.inputmode = "text";
    f.error = error.clone();
    form.controls = vec![Control::Input(f)];
    page.error_summary = error;
    page.sections.push(Section {
        forms: vec![form],
        ..Section::default()
    });
    visit.answer(status, page)
}

/// Checks the password with the dashboard's login rules; a session (its cookie set), or the
/// second factor's form.
pub async fn submit(p: Posted) -> Response {
    let Posted { visit, form } = p;
    let email = form.one("email").trim().to_owned();
    let typed = form.one("password");
    if !is_email(&email) || !len_between(&typed, 8, PASSWORD_MAX) {
        let error = Some(visit.t("console-sign-in-failed"));
        return sign_in_form(&visit, StatusCode::UNAUTHORIZED, &email, error);
    }
    let Some(ip) = visit.ip else {
        return visit.reader.problem(Problem::Invalid);
    };
    let device = cookie(&visit.headers, DEVICE_COOKIE).map(str::to_owned);
    let password = Password::new(typed);
    let checked =
        match check_password(&visit.state, &email, &password, (ip, device.as_deref())).await {
            Ok(c) => c,
            Err(e) if e.code == "dashboard/invalid_credentials" => {
                let error = Some(visit.t("console-sign-in-failed"));
                return sign_in_form(&visit, StatusCode::UNAUTHORIZED, &email, error);
            }
            Err(e) => return visit.refused(&e),
        };
    let step = checked.next_step(&visit.state, ip).await;
    match step {
        Ok(LoginStep::Session(session)) => signed_in(&visit, session),
        Ok(LoginStep::Mfa { challenge, .. }) => code_form(&visit, StatusCode::OK, &challenge, None),
        Err(e) => visit.refused(&ApiError::from(e)),
    }
}

/// The second factor: a session, the form again for a wrong code, or the sign-in form when
/// the challenge is gone.
pub async fn code(p: Posted) -> Response {
    let Posted { visit, form } = p;
    let (challenge, code) = (form.one("challenge"), form.one("code").trim().to_owned());
    let Some(ip) = visit.ip else {
        return visit.reader.problem(Problem::Invalid);
    };
    if !len_between(&challenge, 1, 256) {
        let error = Some(visit.t("console-code-expired"));
        return sign_in_form(&visit, StatusCode::UNAUTHORIZED, "", error);
    }
    if !len_between(&code, 1, 32) {
        let error = Some(visit.t("console-code-failed"));
        return code_form(&visit, StatusCode::UNAUTHORIZED, &challenge, error);
    }
    let again = challenge.clone();
    let answer = mfa_login(&visit.state, challenge, code, ip).await;
    match answer {
        Ok(session) => signed_in(&visit, session),
        Err(CallError::Failed(DirectoryError::InvalidCredentials)) => {
            let error = Some(visit.t("console-code-failed"));
            code_form(&visit, StatusCode::UNAUTHORIZED, &again, error)
        }
        Err(CallError::Failed(DirectoryError::TokenInvalid)) => {
            let error = Some(visit.t("console-code-expired"));
            sign_in_form(&visit, StatusCode::UNAUTHORIZED, "", error)
        }
        Err(e) => visit.refused(&ApiError::from(e)),
    }
}

/// The session's cookie (and the new device's), then the tenants.
fn signed_in(visit: &Visit, session: NewSession) -> Response {
    let max_age = visit.state.config.dashboard.absolute_timeout_secs as i64;
    let mut cookies: Vec<_> = visit
        .cookie(SESSION_COOKIE, &session.token, max_age)
        .into_iter()
        .collect();
    if let Some(token) = &session.device_token {
        cookies.extend(visit.cookie(DEVICE_COOKIE, token, DEVICE_TOKEN_TTL.whole_seconds()));
    }
    redirect_with(visit, "/console", cookies)
}

/// Ends the session and clears its cookie.
pub async fn sign_out(p: Posted) -> Response {
    let visit = p.visit;
    if let Some(auth) = &visit.auth {
        let token = auth.token.clone();
        if let Err(e) = visit
            .state
            .directory
            .request(|reply| DirectoryMsg::Logout { token, reply })
            .await
        {
            return visit.refused(&ApiError::from(e));
        }
    }
    let cleared = visit.cookie(SESSION_COOKIE, "", 0).into_iter().collect();
    redirect_with(&visit, SIGN_IN, cleared)
}

/// The page that asks for the password again before a sensitive action, then returns to
/// `back` (a console page).
pub fn reauth_page(visit: &Visit, back: &str, error: Option<String>) -> Response {
    let mut page = visit.page("console-reauth-title");
    page.paragraphs.push(visit.t("console-reauth-intro"));
    page.error_summary = error.clone();
    let mut form = visit.form(REAUTH.to_owned(), visit.t("console-reauth"));
    form.hidden.push(("back", back.to_owned()));
    let mut p = FieldView::current_password("reauth-password", visit.t("console-password"), 8);
    p.error = error;
    form.controls = vec![Control::Input(p)];
    page.sections.push(Section {
        forms: vec![form],
        ..Section::default()
    });
    let status = if page.error_summary.is_some() {
        StatusCode::UNAUTHORIZED
    } else {
        StatusCode::OK
    };
    visit.answer(status, page)
}

/// Re-authenticates the session with its password (the dashboard's rules), then goes back.
pub async fn reauth(p: SignedInPost) -> Response {
    let SignedInPost { visit, form, auth } = p;
    let back = Some(form.one("back"))
        .filter(|b| is_console_path(b))
        .unwrap_or_else(|| "/console".to_owned());
    let typed = form.one("password");
    let Some(ip) = visit.ip else {
        return visit.reader.problem(Problem::Invalid);
    };
    if !len_between(&typed, 8, PASSWORD_MAX) {
        return reauth_page(&visit, &back, Some(visit.t("console-reauth-failed")));
    }
    let password = Password::new(typed);
    match check_password(&visit.state, &auth.session.email, &password, (ip, None)).await {
        Ok(_) => {}
        Err(e) if e.code == "dashboard/invalid_credentials" => {
            return reauth_page(&visit, &back, Some(visit.t("console-reauth-failed")));
        }
        Err(e) => return visit.refused(&e),
    }
    let token = auth.token.clone();
    match visit
        .state
        .directory
        .request(|reply| DirectoryMsg::MarkReauth { token, reply })
        .await
    {
        Ok(_) => visit.go(&back),
        Err(e) => visit.refused(&ApiError::from(e)),
    }
}

/// Whether `path` is a page of the console and only that: no other origin (`//`), no dot
/// segment or backslash that a browser would resolve elsewhere.
fn is_console_path(path: &str) -> bool {
    path.starts_with("/console/")
        && path.len() <= 512
        && !path.contains("//")
        && !path.contains('\\')
        && !path
            .split(['/', '?', '#'])
            .any(|seg| seg == ".." || seg == ".")
        && !path.contains("%2e")
        && !path.contains("%2E")
}

#[cfg(test)]
mod tests {
    use super::is_console_path;

    #[test]
    fn the_way_back_stays_in_the_console() {
        assert!(is_console_path("/console/t/acme/users/1"));
        for away in [
            "/console",
            "https://evil.example/",
            "//evil.example/console/",
            "/console//evil.example",
            "/console/../x",
            "/console/%2e%2e/x",
            "/console/\\evil.example",
            "/x",
        ] {
            assert!(!is_console_path(away), "{away}");
        }
    }
}
