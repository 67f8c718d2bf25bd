//! The hosted pages where users decide on agents:
//!
//! - `{accounts_url}/agent-request?token=` opens a CIBA request's mailed link: it shows the
//!   agent, what it asks for, the resource it asks it for and its binding message, and two
//!   buttons; nothing is decided on `GET`. The link's token names its tenant and its request.
//! - `{accounts_url}/oauth/{slug}/device` is RFC 8628's verification page: the user signs in
//!   (the tenant's hosted sign-in cookie, or a password and, with MFA, the TOTP step on this
//!   page), types the code the device shows (or follows `verification_uri_complete`), checks
//!   the agent, what it asks for and the resource it asks it for, and approves or denies. It
//!   lives under the tenant's `/oauth/{slug}/` so that the hosted sign-in cookie reaches it.
//!
//! Every form carries the CSRF value of [`crate::http::pages`], bound to the page. An account
//! whose address is not confirmed may deny but not approve: that refusal is a page too.

use axum::{
    body::Bytes,
    extract::{Path, Query, State},
    http::{header, HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use serde::Deserialize;
use tessera_actors::tenant::MfaMsg;
use tessera_actors::{
    login_guard::Captcha,
    password::Password,
    policy::normalize_email,
    tenant::{
        agents::{normalize_user_code, AgentAnswer, AgentCmd, RequestView},
        audit::AuditContext,
        messages::{Bearer, LoginAttempt, LoginOutcome, MfaVerified},
    },
    CallError, TenantError, TenantHandle,
};
use tessera_actors::{AgentError, MfaError};

use super::{
    agents::call,
    hosted::{page_tenant, scope_text, sign_in_cookie, signed_in},
};
use crate::{
    app::AppState,
    http::{
        error::is_email,
        extract::{served_here, ClientIp, RequestCtx},
        mailed_links::tenant_of_link,
        pages::{
            field, form_fields, see_other, ButtonView, FieldView, FormView, Problem, Reader,
            PASSWORD_MAX,
        },
        reauth::password_login,
    },
};

const REQUEST_PATH: &str = "/agent-request";

/// The request's agent, what it asks for, the resource it asks it for (an approval holds for
/// that resource only) and its binding message, as paragraphs and items.
fn describe(reader: &Reader, page: &mut crate::http::pages::PageTemplate, view: &RequestView) {
    page.title = reader.t_with("agent-request-title", &[("agent", &view.agent_name)]);
    page.paragraphs
        .push(reader.t_with("agent-request-intro", &[("agent", &view.agent_name)]));
    page.items = view.scopes.iter().map(|s| scope_text(reader, s)).collect();
    if let Some(r) = &view.resource {
        page.paragraphs
            .push(reader.t_with("agent-request-resource", &[("resource", r)]));
    }
    if let Some(m) = &view.binding_message {
        page.paragraphs
            .push(reader.t_with("agent-request-binding", &[("message", m)]));
    }
}

fn decision_buttons(reader: &Reader, form: &mut FormView) {
    form.buttons = vec![
        ButtonView {
            name: "decision",
            value: "approve".to_owned(),
            label: reader.t("agent-request-approve"),
            secondary: false,
        },
        ButtonView {
            name: "decision",
            value: "deny".to_owned(),
            label: reader.t("agent-request-deny"),
            secondary: true,
        },
    ];
}

/// A refused decision as its page: the agent revoked by the user, an account whose address
/// is not confirmed; anything else, the problem it is.
fn refused(reader: &Reader, agent: &str, e: CallError<TenantError>) -> Response {
    match e {
        CallError::Failed(TenantError::Agent(AgentError::RevokedByUser)) => {
            let mut page = reader.page("agent-request-blocked-title");
            page.paragraphs
                .push(reader.t_with("agent-request-blocked", &[("agent", agent)]));
            reader.answer(StatusCode::CONFLICT, page, &[])
        }
        CallError::Failed(TenantError::EmailUnconfirmed { .. }) => reader.problem_page(
            StatusCode::FORBIDDEN,
            "agent-request-unconfirmed-title",
            "agent-request-unconfirmed",
        ),
        e => reader.problem(e.into()),
    }
}

fn decided(reader: &Reader, agent: &str, approved: bool) -> Response {
    let (title, text) = if approved {
        ("agent-request-approved-title", "agent-request-approved")
    } else {
        ("agent-request-denied-title", "agent-request-denied")
    };
    let mut page = reader.page(title);
    page.paragraphs
        .push(reader.t_with(text, &[("agent", agent)]));
    reader.answer(StatusCode::OK, page, &[])
}

// ---------------------------------------------------------------- the mailed CIBA link

#[derive(Deserialize)]
pub struct LinkQuery {
    token: Option<String>,
    lang: Option<String>,
}

/// The tenant and the pending request of a mailed link; or the page that says why not.
async fn open_request(
    state: &AppState,
    reader: &mut Reader,
    token: Option<&str>,
) -> Result<(TenantHandle, RequestView, String), Response> {
    let (tenant, token) = token
        .and_then(|t| Some((tenant_of_link(state, t)?, t)))
        .ok_or_else(|| reader.problem(Problem::Invalid))?;
    served_here(state, tenant.id).map_err(IntoResponse::into_response)?;
    let cmd = AgentCmd::PeekLink {
        token: token.to_owned(),
    };
    let view = match call(&tenant, AuditContext::default(), cmd).await {
        Ok(AgentAnswer::Request(v)) => *v,
        Ok(_) => return Err(reader.problem(Problem::Internal)),
        Err(e) => return Err(reader.problem(e.into())),
    };
    reader.set_tenant(&view.tenant_name, &view.default_locale);
    reader.brand(&tenant).await;
    Ok((tenant, view, token.to_owned()))
}

/// `GET /agent-request?token=`: the request and the two buttons.
pub async fn request_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<LinkQuery>,
) -> Result<Response, Response> {
    let mut reader = Reader::new(&state, &headers, q.lang.as_deref());
    let (_, view, token) = open_request(&state, &mut reader, q.token.as_deref()).await?;
    let mut page = reader.page("agent-request-title");
    describe(&reader, &mut page, &view);
    let mut form = FormView::new(reader.csrf(REQUEST_PATH, &token), String::new());
    decision_buttons(&reader, &mut form);
    page.forms.push(form);
    Ok(reader.answer(StatusCode::OK, page, &[]))
}

/// `POST /agent-request?token=`: the decision.
pub async fn request_submit(
    State(state): State<AppState>,
    headers: HeaderMap,
    RequestCtx(ctx): RequestCtx,
    Query(q): Query<LinkQuery>,
    body: Bytes,
) -> Result<Response, Response> {
    let mut reader = Reader::new(&state, &headers, q.lang.as_deref());
    let (tenant, view, token) = open_request(&state, &mut reader, q.token.as_deref()).await?;
    let form = form_fields(&body);
    if !reader.csrf_ok(REQUEST_PATH, &token, field(&form, "csrf")) {
        return Err(reader.problem(Problem::Csrf));
    }
    let approve = match field(&form, "decision") {
        "approve" => true,
        "deny" => false,
        _ => return Err(reader.problem(Problem::Invalid)),
    };
    let cmd = AgentCmd::DecideLink { token, approve };
    Ok(match call(&tenant, ctx, cmd).await {
        Ok(_) => decided(&reader, &view.agent_name, approve),
        Err(e) => refused(&reader, &view.agent_name, e),
    })
}

// ---------------------------------------------------------------- the device page

#[derive(Deserialize)]
pub struct DeviceQuery {
    user_code: Option<String>,
    lang: Option<String>,
}

fn device_path(slug: &str) -> String {
    format!("/oauth/{slug}/device")
}

/// A form of the device page, posting `step` with `user_code` kept.
fn device_form(reader: &Reader, slug: &str, step: &str, code: &str, button: String) -> FormView {
    let mut form = FormView::new(reader.csrf(&device_path(slug), "device"), button);
    form.action = Some(device_path(slug));
    form.hidden.push(("step", step.to_owned()));
    form.hidden.push(("user_code", code.to_owned()));
    form
}

/// One step of the device page: its title, the reader's words for its error when one is
/// due (answered with `bad`, else 200), its intro and its form.
fn device_step(
    reader: &Reader,
    title: &str,
    error: Option<(&str, StatusCode)>,
    intro: &str,
    form: FormView,
) -> Response {
    let mut page = reader.page(title);
    page.error_summary = error.map(|(e, _)| reader.t(e));
    page.paragraphs.push(reader.t(intro));
    page.forms.push(form);
    let status = error.map_or(StatusCode::OK, |(_, status)| status);
    reader.answer(status, page, &[])
}

/// A one-time code's field, of at most `max` characters.
fn code_field(reader: &Reader, name: &'static str, label: &str, max: usize) -> FieldView {
    let mut field = FieldView::input(name, name, "text", reader.t(label), "one-time-code");
    field.max = max;
    field
}

/// The sign-in form (password), with an error when one is due.
fn sign_in_form(
    reader: &Reader,
    slug: &str,
    code: &str,
    error: Option<(&str, StatusCode)>,
) -> Response {
    let mut form = device_form(reader, slug, "password", code, reader.t("login-button"));
    form.fields = vec![
        FieldView::input(
            "email",
            "email",
            "email",
            reader.t("login-email-label"),
            "username",
        ),
        FieldView::new_password("password", reader.t("login-password-label"), None),
    ];
    device_step(reader, "device-title", error, "device-signin-intro", form)
}

/// The TOTP step of a sign-in with MFA.
fn mfa_form(reader: &Reader, slug: &str, code: &str, challenge: &str, error: bool) -> Response {
    let mut form = device_form(reader, slug, "mfa", code, reader.t("code-button"));
    form.hidden.push(("challenge", challenge.to_owned()));
    form.fields = vec![code_field(reader, "code", "code-label", 64)];
    let error = error.then_some(("mfa-error", StatusCode::UNAUTHORIZED));
    device_step(reader, "mfa-title", error, "mfa-intro", form)
}

/// The code entry form.
fn code_form(reader: &Reader, slug: &str, error: bool) -> Response {
    let mut form = device_form(reader, slug, "code", "", reader.t("device-code-button"));
    form.fields = vec![code_field(reader, "user_code", "device-code-label", 16)];
    form.hidden.retain(|(n, _)| *n != "user_code");
    let error = error.then_some(("device-code-error", StatusCode::BAD_REQUEST));
    device_step(reader, "device-title", error, "device-intro", form)
}

/// What the signed-in user sees for `code`: the request and the decision, or the code form.
async fn confirm_page(
    reader: &Reader,
    tenant: &TenantHandle,
    bearer: Bearer,
    code: &str,
) -> Result<Response, ()> {
    let cmd = AgentCmd::PeekUserCode {
        bearer,
        user_code: code.to_owned(),
    };
    match call(tenant, AuditContext::default(), cmd).await {
        Ok(AgentAnswer::Request(view)) => {
            let mut page = reader.page("agent-request-title");
            describe(reader, &mut page, &view);
            page.paragraphs
                .push(reader.t_with("device-confirm-check", &[("code", code)]));
            let mut form = device_form(reader, &tenant.slug, "decide", code, String::new());
            decision_buttons(reader, &mut form);
            page.forms.push(form);
            Ok(reader.answer(StatusCode::OK, page, &[]))
        }
        Err(CallError::Failed(TenantError::InvalidSession)) => Err(()),
        Err(CallError::Failed(TenantError::NotFound)) => Ok(code_form(reader, &tenant.slug, true)),
        Ok(_) => Ok(reader.problem(Problem::Internal)),
        Err(e) => Ok(reader.problem(e.into())),
    }
}

/// A user code as shown (`XXXX-XXXX`), from what was typed or linked.
fn shown_code(raw: Option<&str>) -> String {
    let c = normalize_user_code(raw.unwrap_or(""));
    if c.len() == 8 {
        format!("{}-{}", &c[..4], &c[4..])
    } else {
        c
    }
}

/// `GET /oauth/{slug}/device[?user_code=]`.
pub async fn device_page(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    headers: HeaderMap,
    Query(q): Query<DeviceQuery>,
) -> Result<Response, Response> {
    let mut reader = Reader::new(&state, &headers, q.lang.as_deref());
    let (tenant, _) = page_tenant(&state, &mut reader, &slug).await?;
    let code = shown_code(q.user_code.as_deref());
    let Some(bearer) = signed_in(&state, &tenant, &headers) else {
        return Ok(sign_in_form(&reader, &slug, &code, None));
    };
    if code.is_empty() {
        return Ok(code_form(&reader, &slug, false));
    }
    Ok(match confirm_page(&reader, &tenant, bearer, &code).await {
        Ok(page) => page,
        Err(()) => sign_in_form(&reader, &slug, &code, None),
    })
}

/// Back to the page for `code`, signed in by `grant` (its cookie set).
fn signed_back(
    state: &AppState,
    reader: &Reader,
    tenant: &TenantHandle,
    grant: &tessera_actors::tenant::messages::Grant,
    code: &str,
) -> Response {
    let location = if code.is_empty() {
        device_path(&tenant.slug)
    } else {
        format!("{}?user_code={code}", device_path(&tenant.slug))
    };
    let mut resp = see_other(reader, &location, StatusCode::SEE_OTHER);
    if let Some(c) = sign_in_cookie(state, tenant, grant) {
        resp.headers_mut().append(header::SET_COOKIE, c);
    }
    resp
}

/// `POST /oauth/{slug}/device`: a sign-in step, a typed code, or the decision.
pub async fn device_submit(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    headers: HeaderMap,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    body: Bytes,
) -> Result<Response, Response> {
    let mut reader = Reader::new(&state, &headers, None);
    let (tenant, _) = page_tenant(&state, &mut reader, &slug).await?;
    let form = form_fields(&body);
    if !reader.csrf_ok(&device_path(&slug), "device", field(&form, "csrf")) {
        return Err(reader.problem(Problem::Csrf));
    }
    let code = shown_code(Some(field(&form, "user_code")));
    // The sign-in form again, with the reader's words for what went wrong.
    let sign_in_again =
        |key: &str, status: StatusCode| sign_in_form(&reader, &slug, &code, Some((key, status)));
    let expired = || sign_in_again("login-error-expired", StatusCode::UNAUTHORIZED);
    match field(&form, "step") {
        "password" => {
            let email = field(&form, "email").trim();
            let password = field(&form, "password");
            let normalized = normalize_email(email).filter(|e| is_email(e));
            let Some(email) =
                normalized.filter(|_| !password.is_empty() && password.len() <= PASSWORD_MAX)
            else {
                return Ok(sign_in_again(
                    "login-error-credentials",
                    StatusCode::UNAUTHORIZED,
                ));
            };
            let password = Password::new(password.to_owned());
            // The device page keeps no device token and shows no CAPTCHA.
            let attempt = LoginAttempt {
                email,
                ip,
                device_token: None,
                captcha: if state.captcha.required() {
                    Captcha::Unsolved
                } else {
                    Captcha::Off
                },
                organization: None,
            };
            let signed = password_login(&state, &tenant, attempt, password, &ctx).await;
            match signed.map(|s| s.outcome) {
                Ok(LoginOutcome::Signed { grant, .. }) => {
                    Ok(signed_back(&state, &reader, &tenant, &grant, &code))
                }
                Ok(LoginOutcome::MfaRequired { challenge, .. }) => {
                    Ok(mfa_form(&reader, &slug, &code, &challenge, false))
                }
                Ok(LoginOutcome::EnrollmentRequired { .. }) => {
                    let mut page = reader.page("mfa-enrol-title");
                    page.paragraphs.push(reader.t("mfa-enrol"));
                    Ok(reader.answer(StatusCode::FORBIDDEN, page, &[]))
                }
                Err(CallError::Failed(
                    TenantError::InvalidCredentials | TenantError::UserBlocked,
                )) => Ok(sign_in_again(
                    "login-error-credentials",
                    StatusCode::UNAUTHORIZED,
                )),
                Err(CallError::Failed(TenantError::EmailNotVerified)) => Ok(sign_in_again(
                    "login-error-unverified",
                    StatusCode::FORBIDDEN,
                )),
                Err(e) => Err(reader.problem(e.into())),
            }
        }
        "mfa" => {
            let challenge = field(&form, "challenge").to_owned();
            let verified = tenant
                .call(|reply| MfaMsg::MfaVerify {
                    challenge: challenge.clone(),
                    code: field(&form, "code").trim().to_owned(),
                    bearer: None,
                    ctx: ctx.clone(),
                    reply,
                })
                .await;
            match verified {
                Ok(MfaVerified::Login(l)) => {
                    Ok(signed_back(&state, &reader, &tenant, &l.grant, &code))
                }
                Ok(MfaVerified::StepUp(_)) => Err(reader.problem(Problem::Invalid)),
                Err(CallError::Failed(TenantError::Mfa(MfaError::InvalidCode))) => {
                    Ok(mfa_form(&reader, &slug, &code, &challenge, true))
                }
                Err(CallError::Failed(TenantError::InvalidChallenge)) => Ok(expired()),
                Err(e) => Err(reader.problem(e.into())),
            }
        }
        "code" => {
            let location = format!("{}?user_code={code}", device_path(&slug));
            Ok(see_other(&reader, &location, StatusCode::SEE_OTHER))
        }
        "decide" => {
            let Some(bearer) = signed_in(&state, &tenant, &headers) else {
                return Ok(expired());
            };
            let approve = match field(&form, "decision") {
                "approve" => true,
                "deny" => false,
                _ => return Err(reader.problem(Problem::Invalid)),
            };
            let peek = AgentCmd::PeekUserCode {
                bearer,
                user_code: code.clone(),
            };
            let agent = match call(&tenant, AuditContext::default(), peek).await {
                Ok(AgentAnswer::Request(v)) => v.agent_name,
                Err(CallError::Failed(TenantError::NotFound)) => {
                    return Ok(code_form(&reader, &slug, true))
                }
                Err(CallError::Failed(TenantError::InvalidSession)) => return Ok(expired()),
                Ok(_) => return Err(reader.problem(Problem::Internal)),
                Err(e) => return Err(reader.problem(e.into())),
            };
            let cmd = AgentCmd::DecideUserCode {
                bearer,
                user_code: code.clone(),
                approve,
            };
            Ok(match call(&tenant, ctx, cmd).await {
                Ok(_) => decided(&reader, &agent, approve),
                Err(CallError::Failed(TenantError::NotFound)) => code_form(&reader, &slug, true),
                Err(e) => refused(&reader, &agent, e),
            })
        }
        _ => Err(reader.problem(Problem::Invalid)),
    }
}
