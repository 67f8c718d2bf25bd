//! `POST /oauth/{slug}/authorize`: the sign-in page's forms. A password (with the login
//! throttles' CAPTCHA and this browser's device token), the TOTP step of a user with MFA, and
//! the two ways by e-mail: a code carrying this request as its OAuth flow, bound to a secret
//! only the page holds, or a login link whose page hands its code back to `/link`; and a
//! forgotten password's reset link, whose page returns to this request; and the sign-up
//! (`sign_up.rs`).
//!
//! Its own file: the one route that signs in from the page's forms, whatever step they post.

use std::net::IpAddr;

use axum::{
    body::Bytes,
    http::{header, StatusCode},
    response::Response,
};
use tessera_actors::tenant::sso::msg::{SsoAnswer, SsoCmd};
use tessera_actors::tenant::{AccountsMsg, MfaMsg, PasswordlessMsg};
use tessera_actors::{
    known_devices::DEVICE_TOKEN_TTL,
    login_guard::Captcha,
    password::Password,
    policy::normalize_email,
    tenant::{
        audit::AuditContext,
        hosted::oauth_link_return_path,
        messages::{
            HostedReturn, LoginAttempt, LoginOutcome, MfaVerified, OAuthParams, OAuthResume,
            PasswordlessLogin,
        },
        oauth::s256,
    },
    CallError, TenantError,
};
use tessera_actors::{MfaError, SsoError};
use tessera_storage::{random_token, sha256};

use super::{
    super::hosted::{cookie_path, device_cookie_name, link_cookie_name, set_cookie},
    flow::{Flow, Visit},
    pages::{code_page, sign_in_page, signed, sso_continue_page, throttled, unsent, Shown},
    sign_up::{sign_up_page, sign_up_submit, way_back, Typed},
};
use crate::{
    app::AppState,
    captcha::{CaptchaOutcome, WIDGET_FIELD},
    http::{
        error::is_email,
        extract::{ClientIp, RequestCtx},
        pages::{cookie, field, Problem, Reader, PASSWORD_MAX},
        reauth::password_login,
    },
};

pub async fn sign_in_submit(
    visit: Visit,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    body: Bytes,
) -> Result<Response, Response> {
    let state = &visit.state;
    let (reader, flow, form) = visit.form(&body, Flow::authorize_path).await?;
    let email = field(&form, "email").trim().to_owned();
    // The sign-in page again with an error; its password form asks for a CAPTCHA when
    // `captcha`.
    let again = |key: &str, status: StatusCode, captcha: bool| {
        let shown = Shown {
            captcha,
            ..Shown::error(&reader, key, email.clone())
        };
        sign_in_page(state, &reader, &flow, shown, status)
    };
    // A password sign-in's device token, kept in this browser's cookie.
    let mut device_token: Option<String> = None;
    let login = match field(&form, "step") {
        "password" => {
            let password = field(&form, "password");
            if !is_email(&email) || password.is_empty() || password.len() > PASSWORD_MAX {
                return Err(again(
                    "login-error-credentials",
                    StatusCode::UNAUTHORIZED,
                    false,
                ));
            }
            let normalized = normalize_email(&email).unwrap_or_default();
            let password = Password::new(password.to_owned());
            // The widget, shown once the address is past its count, fills this field.
            let captcha = match field(&form, WIDGET_FIELD) {
                _ if !state.captcha.required() => Captcha::Off,
                "" => Captcha::Unsolved,
                token => match state.captcha.verify(Some(token), ip).await {
                    CaptchaOutcome::Passed => Captcha::Solved,
                    CaptchaOutcome::Failed => {
                        return Err(again("login-error-captcha", StatusCode::BAD_REQUEST, true))
                    }
                    CaptchaOutcome::Unreachable(e) => {
                        tracing::warn!(error = %e, "CAPTCHA verifier unreachable");
                        return Err(reader.problem(Problem::Busy));
                    }
                },
            };
            let attempt = LoginAttempt {
                email: normalized,
                ip,
                device_token: cookie(&visit.headers, &device_cookie_name(&flow.tenant))
                    .map(str::to_owned),
                captcha,
                organization: None,
            };
            password_login(state, &flow.tenant, attempt, password, &ctx)
                .await
                .map(|signed| {
                    device_token = signed.device_token;
                    PasswordlessLogin {
                        outcome: signed.outcome,
                        oauth: None,
                    }
                })
        }
        "sign_up_page" => {
            let typed = Typed::email(email);
            return Ok(sign_up_page(state, &reader, &flow, typed, StatusCode::OK));
        }
        "sign_up" => {
            return Ok(sign_up_submit(state, &reader, &flow, &form, (ip, ctx)).await);
        }
        "sso" => {
            if !is_email(&email) {
                return Err(again("login-error-email", StatusCode::BAD_REQUEST, false));
            }
            let normalized = normalize_email(&email).unwrap_or_default();
            let cmd = SsoCmd::Discover {
                email: normalized,
                ip,
            };
            let found = flow.tenant.sso(&ctx, cmd).await;
            return match found {
                Ok(SsoAnswer::Realm(Some(r))) => {
                    Ok(sso_continue_page(&reader, &flow, r.connection_id, &email))
                }
                Ok(_) => Err(again("login-sso-none", StatusCode::BAD_REQUEST, false)),
                Err(e) => Err(reader.problem(e.into())),
            };
        }
        step @ ("email_code" | "magic_link" | "forgot_password") => {
            if !is_email(&email) {
                return Err(again("login-error-email", StatusCode::BAD_REQUEST, false));
            }
            return Ok(match step {
                "email_code" => request_code(state, &reader, &flow, &email, ctx).await,
                "magic_link" => request_link(state, &reader, &flow, &email).await,
                _ => request_reset(state, &reader, &flow, &email, ip).await,
            });
        }
        "verify_code" => {
            let binding = field(&form, "binding").to_owned();
            let login = flow
                .tenant
                .call(|reply| PasswordlessMsg::EmailOtpVerify {
                    email: email.clone(),
                    code: field(&form, "code").trim().to_owned(),
                    binding_hash: Some(hex::encode(sha256(binding.as_bytes()))),
                    ip,
                    ctx: ctx.clone(),
                    reply,
                })
                .await;
            if let Err(CallError::Failed(TenantError::InvalidChallenge)) = login {
                let hidden = vec![("email", email.clone()), ("binding", binding)];
                let error = Some(reader.t("code-error"));
                return Err(code_page(
                    &reader,
                    &flow,
                    "verify_code",
                    hidden,
                    error,
                    Some(&email),
                ));
            }
            login
        }
        "mfa" => {
            let challenge = field(&form, "challenge").to_owned();
            let code = field(&form, "code").trim().to_owned();
            match mfa_verify(&flow, &challenge, code, &ctx).await {
                Ok(MfaVerified::Login(l)) => {
                    device_token = l.device_token;
                    Ok(PasswordlessLogin {
                        outcome: LoginOutcome::Signed {
                            grant: l.grant,
                            enrollment_required_by: None,
                        },
                        oauth: l.oauth,
                    })
                }
                Ok(MfaVerified::StepUp(_)) => return Err(reader.problem(Problem::Invalid)),
                Err(CallError::Failed(TenantError::Mfa(MfaError::InvalidCode))) => {
                    let error = Some(reader.t("mfa-error"));
                    let hidden = vec![("challenge", challenge)];
                    return Err(code_page(&reader, &flow, "mfa", hidden, error, None));
                }
                Err(e) => Err(e),
            }
        }
        _ => return Err(reader.problem(Problem::Invalid)),
    };
    let login = match login {
        Ok(l) => l,
        Err(CallError::Failed(TenantError::InvalidCredentials | TenantError::UserBlocked)) => {
            return Err(again(
                "login-error-credentials",
                StatusCode::UNAUTHORIZED,
                false,
            ))
        }
        // The address's domain signs in only through its organization: on to its provider.
        Err(CallError::Failed(TenantError::Sso(SsoError::Required { connection }))) => {
            return Ok(sso_continue_page(&reader, &flow, connection, &email));
        }
        Err(CallError::Failed(TenantError::EmailNotVerified)) => {
            return Err(again(
                "login-error-unverified",
                StatusCode::FORBIDDEN,
                false,
            ))
        }
        Err(CallError::Failed(TenantError::InvalidChallenge | TenantError::InvalidLinkToken)) => {
            return Err(again(
                "login-error-expired",
                StatusCode::UNAUTHORIZED,
                false,
            ))
        }
        Err(CallError::Failed(
            TenantError::RateLimited { retry_after } | TenantError::TooManyAttempts { retry_after },
        )) => return Err(throttled(state, &reader, &flow, email, retry_after)),
        // Past the address's count: the widget when there is one, else only a known
        // device goes on.
        Err(CallError::Failed(TenantError::CaptchaRequired)) => {
            return Err(match state.captcha.widget() {
                Some(_) => again(
                    "login-error-captcha-required",
                    StatusCode::TOO_MANY_REQUESTS,
                    true,
                ),
                None => again("login-error-network", StatusCode::TOO_MANY_REQUESTS, false),
            });
        }
        Err(e) => return Err(reader.problem(e.into())),
    };
    let mut resp = signed(state, &reader, &flow, login);
    if let Some(token) = device_token {
        let c = set_cookie(
            &device_cookie_name(&flow.tenant),
            &token,
            &cookie_path(&flow.tenant.slug),
            DEVICE_TOKEN_TTL.whole_seconds(),
            reader.secure_cookie,
        );
        match c {
            Some(v) => {
                resp.headers_mut().append(header::SET_COOKIE, v);
            }
            None => return Err(reader.problem(Problem::Internal)),
        }
    }
    Ok(resp)
}

/// The TOTP or recovery code of a user with MFA, checked against the sign-in's challenge.
async fn mfa_verify(
    flow: &Flow,
    challenge: &str,
    code: String,
    ctx: &AuditContext,
) -> Result<MfaVerified, CallError<TenantError>> {
    flow.tenant
        .call(|reply| MfaMsg::MfaVerify {
            challenge: challenge.to_owned(),
            code: code.clone(),
            bearer: None,
            ctx: ctx.clone(),
            reply,
        })
        .await
}

/// This request as the OAuth flow a passwordless sign-in resumes, bound to a fresh secret
/// (answered with it); none on the account page's sign-in, whose code or link signs in as the
/// API's do.
fn resume_of(flow: &Flow) -> (Option<OAuthResume>, String) {
    let binding = random_token(32);
    let Some(req) = flow.checked.as_ref().map(|c| &c.request) else {
        return (None, binding);
    };
    let resume = OAuthResume {
        params: OAuthParams {
            client_id: req.client_id.clone(),
            redirect_uri: req.redirect_uri.clone(),
            response_type: Some("code".to_owned()),
            code_challenge: Some(req.code_challenge.clone()),
            code_challenge_method: Some("S256".to_owned()),
            scope: Some(req.scopes.join(" ")),
            state: req.state.clone(),
            nonce: req.nonce.clone(),
            resource: req.resource.clone(),
        },
        binding_hash: hex::encode(sha256(binding.as_bytes())),
    };
    (Some(resume), binding)
}

/// Mails a password-reset link (the API's forgot-password, for an account only, and at most 20
/// asks an hour from one client address) whose page,
/// once the new password is set, returns to this authorize request to sign in with it; the
/// same page follows whether or not the address has an account.
async fn request_reset(
    state: &AppState,
    reader: &Reader,
    flow: &Flow,
    email: &str,
    ip: IpAddr,
) -> Response {
    let email = normalize_email(email).unwrap_or_default();
    let back = way_back(state, flow);
    // Each ask writes a record (the link, or a decoy of its size): 20 an hour per client
    // address, before the API's one mail a minute per account.
    let admitted = flow
        .tenant
        .call(|reply| AccountsMsg::ResetAdmit { ip, reply })
        .await;
    let sent = match admitted {
        Ok(()) => {
            flow.tenant
                .call(|reply| AccountsMsg::ForgotPassword {
                    email: email.clone(),
                    redirect_to: back.clone(),
                    reply,
                })
                .await
        }
        Err(e) => Err(e),
    };
    if let Err(e) = sent {
        return unsent(state, reader, flow, email, e);
    }
    let mut page = reader.page("forgot-sent-title");
    page.paragraphs
        .push(reader.t_with("forgot-sent", &[("email", &email)]));
    reader.answer(StatusCode::OK, page, &[])
}

/// Mails a login link whose page hands its code back to this server's return page, bound
/// (PKCE) to a verifier kept in this browser's cookie: the link finishes only here.
async fn request_link(state: &AppState, reader: &Reader, flow: &Flow, email: &str) -> Response {
    let email = normalize_email(email).unwrap_or_default();
    let (resume, _) = resume_of(flow);
    let verifier = random_token(32);
    let hosted = HostedReturn {
        redirect_to: Some(format!(
            "{}{}",
            state.accounts_base(),
            oauth_link_return_path(&flow.tenant.slug)
        )),
        code_challenge: Some(s256(&verifier)),
    };
    let sent = flow
        .tenant
        .call(|reply| PasswordlessMsg::MagicLinkRequest {
            email: email.clone(),
            oauth: resume.clone(),
            hosted: hosted.clone(),
            reply,
        })
        .await;
    if let Err(e) = sent {
        return unsent(state, reader, flow, email, e);
    }
    let mut page = reader.page("link-sent-title");
    page.paragraphs
        .push(reader.t_with("link-sent", &[("email", &email)]));
    let mut resp = reader.answer(StatusCode::OK, page, &[]);
    let c = set_cookie(
        &link_cookie_name(&flow.tenant),
        &verifier,
        &cookie_path(&flow.tenant.slug),
        600,
        reader.secure_cookie,
    );
    match c {
        Some(v) => {
            resp.headers_mut().append(header::SET_COOKIE, v);
            resp
        }
        None => reader.problem(Problem::Internal),
    }
}

/// Mails a login code carrying this request as its OAuth flow, bound to a secret only this
/// page holds; the same page follows whether or not the address has an account.
async fn request_code(
    state: &AppState,
    reader: &Reader,
    flow: &Flow,
    email: &str,
    ctx: AuditContext,
) -> Response {
    let email = normalize_email(email).unwrap_or_default();
    let (resume, binding) = resume_of(flow);
    let sent = flow
        .tenant
        .call(|reply| PasswordlessMsg::EmailOtpRequest {
            email: email.clone(),
            create: false,
            oauth: resume.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await;
    if let Err(e) = sent {
        return unsent(state, reader, flow, email, e);
    }
    let hidden = vec![("email", email.clone()), ("binding", binding)];
    code_page(reader, flow, "verify_code", hidden, None, Some(&email))
}
