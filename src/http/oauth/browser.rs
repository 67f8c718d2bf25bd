//! Browser mode of the authorization endpoint: the hosted sign-in and consent pages at the
//! accounts URL, for relying parties that send the user's browser to
//! `/v1/tenants/{slug}/oauth/authorize` with no Tessera code of their own.
//!
//! The API's authorize answers a plain navigation (no bearer, `Accept` naming `text/html`)
//! with a `302` to `{accounts_url}/oauth/{slug}/authorize` with the same query, where the same
//! [`check`] and the same actor command decide, with the user of the tenant's hosted sign-in
//! cookie instead of a bearer token:
//!
//! - no cookie (or `prompt=login`, or a sign-in older than `max_age`): the sign-in page
//!   (password, then the TOTP step for a user with MFA; or a code by e-mail, which is the
//!   passwordless flow with the request as its `oauth_params`, resumed here with its binding);
//!   a sign-in sets the cookie and sends the browser back to the authorize page;
//! - consent on file (or a first-party client): `302` to the client with the code;
//! - otherwise the consent page, whose decision `303`s to the client with a code or
//!   `error=access_denied`.
//!
//! The hosted sign-in cookie (`tessera_signin_<tenant id>`, `Path=/oauth/<slug>/`, `HttpOnly`,
//! `SameSite=Lax`, `Secure` when the accounts URL is https) names a first-party session opened
//! by the sign-in, with a keyed hash of the tenant, the session and the user: nothing is
//! stored for it, and whatever ends the session (RP-initiated logout on the hosted logout page
//! of [`super::logout`] or through an ID token's `sid`, a password change, the user revoking
//! it, a block) ends it. Its refresh token is never handed out.
//!
//! Every form carries the CSRF value of [`super::super::pages`], bound to the page and the
//! whole authorize request; the pages run no script.

use std::collections::HashMap;
use tessera_actors::tenant::{HostedMsg, MfaMsg, PasskeysMsg, PasswordlessMsg};

use axum::{
    body::Bytes,
    extract::{Path, Query, RawQuery, State},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    routing::{get, post},
    Json, Router,
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use tessera_actors::{
    known_devices::DEVICE_TOKEN_TTL,
    login_guard::Captcha,
    password::Password,
    policy::normalize_email,
    tenant::{
        audit::AuditContext,
        hosted::oauth_link_return_path,
        messages::{
            Bearer, Grant, HostedReturn, LoginAttempt, LoginOutcome, MfaVerified, OAuthParams,
            OAuthResume, PasswordlessLogin, SignInView,
        },
        oauth::{s256, AuthorizeOutcome, ConsentNeeded, OAuthAnswer, OAuthCmd, OAuthFailure},
    },
    CallError, TenantError, TenantHandle,
};
use tessera_storage::{ct_eq, random_token, sha256};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    authorize::{
        check, code_redirect, custom_scopes, decide, error_redirect, query_without_login, Checked,
        RawRequest, Refusal,
    },
    oauth, Params,
};
use crate::{
    app::AppState,
    captcha::{CaptchaOutcome, WIDGET_FIELD},
    http::{
        bearer::issuer,
        error::{is_email, ApiError},
        extract::{ClientIp, RequestCtx},
        pages::{
            cookie, field, form_fields, protect, see_other, ButtonView, CheckView, FieldView,
            FormView, LinkView, PasskeyButton, Problem, Reader, SocialButtons, PASSWORD_MAX,
        },
        reauth::{exchange_sign_in, password_login, SOCIAL_DONE_COOKIE},
        responses::authorize_query,
    },
};

/// The hosted pages of the authorization server.
pub fn router() -> Router<AppState> {
    Router::new()
        // GET is `http::hosted_authorize`, which shares the path with social sign-in.
        .route("/oauth/{slug}/authorize", post(sign_in_submit))
        .route("/oauth/{slug}/consent", post(consent_submit))
        .route("/oauth/{slug}/link", get(link_return))
        .route("/oauth/{slug}/passkey/begin", post(passkey_begin))
        .route("/oauth/{slug}/passkey/finish", post(passkey_finish))
        .route("/oauth/{slug}/social-return", get(social_return))
}

/// Where a browser-mode authorize request is served.
pub fn hosted_authorize_url(state: &AppState, slug: &str, query: &str) -> String {
    format!("{}/oauth/{slug}/authorize?{query}", state.accounts_base())
}

/// Whether a request to the authorize endpoint is a plain browser navigation: no bearer token,
/// and an `Accept` that names HTML.
pub fn is_navigation(headers: &HeaderMap) -> bool {
    headers.get(header::AUTHORIZATION).is_none()
        && headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.contains("text/html"))
}

// ---------------------------------------------------------------- the sign-in cookie

const COOKIE_PREFIX: &str = "tessera_signin_";

fn cookie_name(tenant: &TenantHandle) -> String {
    format!("{COOKIE_PREFIX}{}", tenant.id.0.simple())
}

fn cookie_path(slug: &str) -> String {
    format!("/oauth/{slug}/")
}

fn cookie_tag(state: &AppState, tenant: &TenantHandle, bearer: Bearer) -> [u8; 32] {
    let mut m = tenant.id.0.as_bytes().to_vec();
    m.extend_from_slice(bearer.session_id.as_bytes());
    m.extend_from_slice(bearer.user_id.as_bytes());
    state.sign_in_hasher.hash(&m)
}

/// The user and session of the tenant's sign-in cookie, when its tag is right (whether the
/// session is still alive is the actor's check).
pub(crate) fn signed_in(
    state: &AppState,
    tenant: &TenantHandle,
    headers: &HeaderMap,
) -> Option<Bearer> {
    let raw = URL_SAFE_NO_PAD
        .decode(cookie(headers, &cookie_name(tenant))?)
        .ok()?;
    if raw.len() != 64 {
        return None;
    }
    let bearer = Bearer {
        session_id: Uuid::from_slice(&raw[..16]).ok()?,
        user_id: Uuid::from_slice(&raw[16..32]).ok()?,
    };
    ct_eq(&cookie_tag(state, tenant, bearer), &raw[32..]).then_some(bearer)
}

/// The `Set-Cookie` of a sign-in that opened `grant`.
pub(crate) fn sign_in_cookie(
    state: &AppState,
    tenant: &TenantHandle,
    grant: &Grant,
) -> Option<HeaderValue> {
    let bearer = Bearer {
        session_id: grant.session_id,
        user_id: grant.user.id,
    };
    let mut raw = bearer.session_id.as_bytes().to_vec();
    raw.extend_from_slice(bearer.user_id.as_bytes());
    raw.extend_from_slice(&cookie_tag(state, tenant, bearer));
    let max_age = (grant.session_expires_at - OffsetDateTime::now_utc())
        .whole_seconds()
        .max(0);
    let secure = if state.accounts_base().starts_with("https://") {
        "; Secure"
    } else {
        ""
    };
    HeaderValue::from_str(&format!(
        "{}={}; Path={}; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}",
        cookie_name(tenant),
        URL_SAFE_NO_PAD.encode(raw),
        cookie_path(&tenant.slug),
    ))
    .ok()
}

/// The `Set-Cookie` that removes the tenant's sign-in cookie (RP-initiated logout).
pub fn clear_sign_in_cookie(tenant: &TenantHandle) -> Option<HeaderValue> {
    HeaderValue::from_str(&format!(
        "{}=; Path={}; HttpOnly; SameSite=Lax; Max-Age=0",
        cookie_name(tenant),
        cookie_path(&tenant.slug),
    ))
    .ok()
}

// ---------------------------------------------------------------- one request

/// A hosted authorize request, checked: the tenant, what its page shows, the request.
struct Flow {
    tenant: TenantHandle,
    view: SignInView,
    query: String,
    params: Params,
    checked: Checked,
}

impl Flow {
    fn authorize_path(&self) -> String {
        format!("/oauth/{}/authorize", self.tenant.slug)
    }

    fn consent_path(&self) -> String {
        format!("/oauth/{}/consent", self.tenant.slug)
    }

    fn iss(&self, state: &AppState) -> String {
        issuer(state, &self.tenant.slug)
    }

    fn redirect_uri(&self) -> &str {
        &self.checked.request.redirect_uri
    }

    /// The authorize page again, without `prompt=login` (the user has just signed in).
    fn again(&self) -> String {
        format!(
            "{}?{}",
            self.authorize_path(),
            query_without_login(&self.params)
        )
    }

    /// The client's redirect URI with an error, `state` and `iss`.
    fn error_to_client(&self, state: &AppState, error: &str, description: &str) -> String {
        error_redirect(
            &self.iss(state),
            self.redirect_uri(),
            self.checked.request.state.as_deref(),
            error,
            description,
        )
    }
}

/// The request behind a hosted page, checked as the API checks it; or the answer already due
/// (a page that shows a fault, or the redirect that sends one to the client).
async fn open(
    state: &AppState,
    reader: &mut Reader,
    slug: &str,
    query: Option<String>,
) -> Result<Flow, Response> {
    let tenant = state
        .directory
        .tenant_for_slug(slug)
        .ok_or_else(|| reader.problem(Problem::Invalid))?;
    let view = tenant
        .call(|reply| HostedMsg::SignInView { reply })
        .await
        .map_err(|e| reader.problem(e.into()))?;
    reader.set_tenant(&view.tenant_name, &view.default_locale);
    let query = query.unwrap_or_default();
    let params = Params::parse(query.as_bytes())
        .map_err(|e| shown(reader, &ApiError::new(StatusCode::BAD_REQUEST, "", e)))?;
    let checked = match check(state, &tenant, &RawRequest::of(&params)).await {
        Ok(c) => c,
        Err(Refusal::Shown(e)) => return Err(shown(reader, &e)),
        Err(Refusal::Redirect(to)) => return Err(to_client(reader, &to)),
    };
    Ok(Flow {
        tenant,
        view,
        query,
        params,
        checked,
    })
}

/// A hosted form's POST: the request checked as [`open`] does, then the form's CSRF value for
/// the page at `page` (refused, 403, before anything is used).
async fn open_form(
    state: &AppState,
    headers: &HeaderMap,
    slug: &str,
    query: Option<String>,
    body: &[u8],
    page: fn(&Flow) -> String,
) -> Result<(Reader, Flow, HashMap<String, String>), Response> {
    let mut reader = Reader::new(state, headers, None);
    let flow = open(state, &mut reader, slug, query).await?;
    let form = form_fields(body);
    if !reader.csrf_ok(&page(&flow), &flow.query, field(&form, "csrf")) {
        return Err(reader.problem(Problem::Csrf));
    }
    Ok((reader, flow, form))
}

/// A fault about the client or its redirect URI: shown, never redirected.
fn shown(reader: &Reader, e: &ApiError) -> Response {
    if e.status != StatusCode::BAD_REQUEST {
        return reader.problem(Problem::Busy);
    }
    let mut page = reader.page("oauth-invalid-title");
    page.paragraphs.push(reader.t("oauth-invalid"));
    page.paragraphs.push(e.message.clone());
    reader.answer(StatusCode::BAD_REQUEST, page, &[])
}

/// `302 Found` to the client (RFC 6749 4.1.2).
fn to_client(reader: &Reader, location: &str) -> Response {
    see_other(reader, location, StatusCode::FOUND)
}

// ---------------------------------------------------------------- GET: the state machine

pub async fn authorize_page(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    RequestCtx(ctx): RequestCtx,
) -> Response {
    let mut reader = Reader::new(&state, &headers, None);
    let flow = match open(&state, &mut reader, &slug, query).await {
        Ok(f) => f,
        Err(resp) => return resp,
    };
    let bearer = if flow.checked.prompt.login {
        None
    } else {
        signed_in(&state, &flow.tenant, &headers)
    };
    decide_for(&state, &reader, &flow, bearer, ctx).await
}

/// What authorize answers for the user of the cookie: the sign-in page, a code for the
/// client, or the consent page.
async fn decide_for(
    state: &AppState,
    reader: &Reader,
    flow: &Flow,
    bearer: Option<Bearer>,
    ctx: AuditContext,
) -> Response {
    let login_required = || {
        if flow.checked.prompt.none {
            let to = flow.error_to_client(state, "login_required", "the user is not signed in");
            return to_client(reader, &to);
        }
        sign_in_page(state, reader, flow, Shown::default(), StatusCode::OK)
    };
    let Some(bearer) = bearer else {
        return login_required();
    };
    let cmd = OAuthCmd::Authorize {
        bearer,
        request: flow.checked.request.clone(),
        max_age: flow.checked.max_age,
        force_consent: flow.checked.prompt.consent,
        no_prompt: flow.checked.prompt.none,
    };
    match oauth(&flow.tenant, ctx, cmd).await {
        Ok(OAuthAnswer::Authorize(AuthorizeOutcome::LoginRequired)) => login_required(),
        Ok(OAuthAnswer::Authorize(AuthorizeOutcome::Code(code))) => {
            let to = code_redirect(
                &flow.iss(state),
                flow.redirect_uri(),
                flow.checked.request.state.as_deref(),
                &code,
            );
            to_client(reader, &to)
        }
        Ok(OAuthAnswer::Authorize(AuthorizeOutcome::Consent(needed))) => {
            consent_page(reader, flow, &needed)
        }
        Ok(_) => reader.problem(Problem::Internal),
        Err(CallError::Failed(TenantError::OAuth(OAuthFailure::ConsentRequired))) => {
            let to = flow.error_to_client(
                state,
                "consent_required",
                "the user has not consented to this request",
            );
            to_client(reader, &to)
        }
        Err(e) => reader.problem(e.into()),
    }
}

// ---------------------------------------------------------------- the sign-in page

/// What the sign-in page shows besides its forms: an error, and what the user typed.
#[derive(Default)]
struct Shown {
    error: Option<String>,
    email: String,
    /// The password form must carry a solved CAPTCHA (it shows the widget, when one is
    /// configured).
    captcha: bool,
}

fn sign_in_page(
    state: &AppState,
    reader: &Reader,
    flow: &Flow,
    shown: Shown,
    status: StatusCode,
) -> Response {
    let client = &flow.checked.client.name;
    let mut page = reader.page("login-title");
    page.error_summary = shown.error;
    page.paragraphs
        .push(reader.t_with("login-intro", &[("client", client)]));
    let csrf = reader.csrf(&flow.authorize_path(), &flow.query);
    let email = if shown.email.is_empty() {
        flow.params.get("login_hint").unwrap_or("").to_owned()
    } else {
        shown.email
    };
    page.passkey = Some(PasskeyButton {
        begin: format!("/oauth/{}/passkey/begin?{}", flow.tenant.slug, flow.query),
        finish: format!("/oauth/{}/passkey/finish?{}", flow.tenant.slug, flow.query),
        csrf: csrf.clone(),
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
    let mut form = FormView::new(csrf.clone(), reader.t("login-button"));
    form.heading = Some(reader.t("login-password-heading"));
    form.hidden.push(("step", "password".to_owned()));
    let mut email_input = FieldView::input(
        "email",
        "email",
        "email",
        reader.t("login-email-label"),
        "username",
    );
    email_input.value = email.clone();
    let mut password = FieldView::input(
        "password",
        "password",
        "password",
        reader.t("login-password-label"),
        "current-password",
    );
    password.max = PASSWORD_MAX;
    form.fields = vec![email_input, password];
    if let Some(widget) = state.captcha.widget().filter(|_| shown.captcha) {
        form.captcha = Some(widget.site_key.to_owned());
        page.captcha_script = Some(widget.script.to_owned());
    }
    page.forms.push(form);
    // A code by e-mail needs no CAPTCHA widget only when none is configured (the pages run no
    // script).
    if flow.view.email_otp_enabled && !state.captcha.required() {
        let mut form = FormView::new(csrf, reader.t("login-code-send"));
        form.heading = Some(reader.t("login-code-heading"));
        form.hidden.push(("step", "email_code".to_owned()));
        let mut email_input = FieldView::input(
            "code-email",
            "email",
            "email",
            reader.t("login-email-label"),
            "username",
        );
        email_input.value = email.clone();
        form.fields = vec![email_input];
        page.forms.push(form);
    }
    if flow.view.magic_link_enabled && !state.captcha.required() {
        let mut form = FormView::new(
            reader.csrf(&flow.authorize_path(), &flow.query),
            reader.t("login-link-send"),
        );
        form.heading = Some(reader.t("login-link-heading"));
        form.hidden.push(("step", "magic_link".to_owned()));
        let mut email_input = FieldView::input(
            "link-email",
            "email",
            "email",
            reader.t("login-email-label"),
            "username",
        );
        email_input.value = email;
        form.fields = vec![email_input];
        page.forms.push(form);
    }
    // Its forms end, through this server's redirects, at the client.
    reader.answer(status, page, &[flow.redirect_uri()])
}

/// The page that takes a code: the e-mailed one (`step=verify_code`) or the TOTP or recovery
/// code of a user with MFA (`step=mfa`).
fn code_page(
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
    reader.answer(status, page, &[flow.redirect_uri()])
}

// ---------------------------------------------------------------- POST: signing in

async fn sign_in_submit(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    body: Bytes,
) -> Response {
    let (reader, flow, form) =
        match open_form(&state, &headers, &slug, query, &body, Flow::authorize_path).await {
            Ok(found) => found,
            Err(resp) => return resp,
        };
    let email = field(&form, "email").trim().to_owned();
    let retry = |key: &str, status: StatusCode| {
        let shown = Shown {
            error: Some(reader.t(key)),
            email: email.clone(),
            captcha: false,
        };
        sign_in_page(&state, &reader, &flow, shown, status)
    };
    // The sign-in page again, its password form asking for a CAPTCHA.
    let with_captcha = |key: &str, status: StatusCode| {
        let shown = Shown {
            error: Some(reader.t(key)),
            email: email.clone(),
            captcha: true,
        };
        sign_in_page(&state, &reader, &flow, shown, status)
    };
    // A password sign-in's device token, kept in this browser's cookie.
    let mut device_token: Option<String> = None;
    let login = match field(&form, "step") {
        "password" => {
            let password = field(&form, "password");
            if !is_email(&email) || password.is_empty() || password.len() > PASSWORD_MAX {
                return retry("login-error-credentials", StatusCode::UNAUTHORIZED);
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
                        return with_captcha("login-error-captcha", StatusCode::BAD_REQUEST)
                    }
                    CaptchaOutcome::Unreachable(e) => {
                        tracing::warn!(error = %e, "CAPTCHA verifier unreachable");
                        return reader.problem(Problem::Busy);
                    }
                },
            };
            let attempt = LoginAttempt {
                email: normalized,
                ip,
                device_token: cookie(&headers, &device_cookie_name(&flow.tenant))
                    .map(str::to_owned),
                captcha,
            };
            password_login(&state, &flow.tenant, attempt, password, &ctx)
                .await
                .map(|signed| {
                    device_token = signed.device_token;
                    PasswordlessLogin {
                        outcome: signed.outcome,
                        oauth: None,
                    }
                })
        }
        "email_code" => {
            if !is_email(&email) {
                return retry("login-error-email", StatusCode::BAD_REQUEST);
            }
            return request_code(&state, &reader, &flow, &email, ctx).await;
        }
        "magic_link" => {
            if !is_email(&email) {
                return retry("login-error-email", StatusCode::BAD_REQUEST);
            }
            return request_link(&state, &reader, &flow, &email).await;
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
            match login {
                Err(CallError::Failed(TenantError::InvalidChallenge)) => {
                    let hidden = vec![("email", email.clone()), ("binding", binding)];
                    let error = Some(reader.t("code-error"));
                    return code_page(&reader, &flow, "verify_code", hidden, error, Some(&email));
                }
                other => other,
            }
        }
        "mfa" => {
            let challenge = field(&form, "challenge").to_owned();
            let verified = flow
                .tenant
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
                    device_token = l.device_token;
                    Ok(PasswordlessLogin {
                        outcome: LoginOutcome::Signed {
                            grant: l.grant,
                            enrollment_required_by: None,
                        },
                        oauth: l.oauth,
                    })
                }
                Ok(MfaVerified::StepUp(_)) => return reader.problem(Problem::Invalid),
                Err(CallError::Failed(TenantError::InvalidMfaCode)) => {
                    let error = Some(reader.t("mfa-error"));
                    return code_page(
                        &reader,
                        &flow,
                        "mfa",
                        vec![("challenge", challenge)],
                        error,
                        None,
                    );
                }
                Err(e) => Err(e),
            }
        }
        _ => return reader.problem(Problem::Invalid),
    };
    let login = match login {
        Ok(l) => l,
        Err(CallError::Failed(TenantError::InvalidCredentials | TenantError::UserBlocked)) => {
            return retry("login-error-credentials", StatusCode::UNAUTHORIZED)
        }
        Err(CallError::Failed(TenantError::EmailNotVerified)) => {
            return retry("login-error-unverified", StatusCode::FORBIDDEN)
        }
        Err(CallError::Failed(TenantError::InvalidChallenge | TenantError::InvalidLinkToken)) => {
            return retry("login-error-expired", StatusCode::UNAUTHORIZED)
        }
        Err(CallError::Failed(
            TenantError::RateLimited { retry_after } | TenantError::TooManyAttempts { retry_after },
        )) => return throttled(&state, &reader, &flow, email, retry_after),
        // Past the address's count: the widget when there is one, else only a known
        // device goes on.
        Err(CallError::Failed(TenantError::CaptchaRequired)) => {
            return match state.captcha.widget() {
                Some(_) => with_captcha(
                    "login-error-captcha-required",
                    StatusCode::TOO_MANY_REQUESTS,
                ),
                None => retry("login-error-network", StatusCode::TOO_MANY_REQUESTS),
            };
        }
        Err(e) => return reader.problem(e.into()),
    };
    let mut resp = signed(&state, &reader, &flow, login);
    if let Some(token) = device_token {
        let secure = if reader.secure_cookie { "; Secure" } else { "" };
        let c = format!(
            "{}={token}; Path={}; HttpOnly; SameSite=Lax; Max-Age={}{secure}",
            device_cookie_name(&flow.tenant),
            cookie_path(&flow.tenant.slug),
            DEVICE_TOKEN_TTL.whole_seconds(),
        );
        match HeaderValue::from_str(&c) {
            Ok(v) => {
                resp.headers_mut().append(header::SET_COOKIE, v);
            }
            Err(_) => return reader.problem(Problem::Internal),
        }
    }
    resp
}

const DEVICE_COOKIE_PREFIX: &str = "tessera_device_";

/// The cookie that keeps this browser's device token for the tenant: it lets the browser
/// past the account's lockout (see `login_guard`), and signs nobody in by itself.
fn device_cookie_name(tenant: &TenantHandle) -> String {
    format!("{DEVICE_COOKIE_PREFIX}{}", tenant.id.0.simple())
}

/// This request as the OAuth flow a passwordless sign-in resumes, bound to a fresh secret
/// (answered with it).
fn resume_of(flow: &Flow) -> (OAuthResume, String) {
    let binding = random_token(32);
    let req = &flow.checked.request;
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
    (resume, binding)
}

const LINK_COOKIE_PREFIX: &str = "tessera_oauth_link_";

fn link_cookie_name(tenant: &TenantHandle) -> String {
    format!("{LINK_COOKIE_PREFIX}{}", tenant.id.0.simple())
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
            oauth: Some(resume.clone()),
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
    let secure = if reader.secure_cookie { "; Secure" } else { "" };
    let c = format!(
        "{}={verifier}; Path={}; HttpOnly; SameSite=Lax; Max-Age=600{secure}",
        link_cookie_name(&flow.tenant),
        cookie_path(&flow.tenant.slug),
    );
    match HeaderValue::from_str(&c) {
        Ok(v) => {
            resp.headers_mut().append(header::SET_COOKIE, v);
            resp
        }
        Err(_) => reader.problem(Problem::Internal),
    }
}

#[derive(serde::Deserialize)]
struct LinkReturn {
    code: Option<String>,
}

/// Where a login link asked for on the sign-in page returns: its code exchanged with the
/// verifier this browser kept, then on as any sign-in.
async fn link_return(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    Query(q): Query<LinkReturn>,
    headers: HeaderMap,
    RequestCtx(ctx): RequestCtx,
) -> Response {
    let mut reader = Reader::new(&state, &headers, None);
    let Some(tenant) = state.directory.tenant_for_slug(&slug) else {
        return reader.problem(Problem::Invalid);
    };
    let Some(code) = q.code.filter(|c| !c.is_empty() && c.len() <= 512) else {
        return reader.problem(Problem::Invalid);
    };
    let Some(verifier) = cookie(&headers, &link_cookie_name(&tenant)).map(str::to_owned) else {
        if let Ok(view) = tenant.call(|reply| HostedMsg::SignInView { reply }).await {
            reader.set_tenant(&view.tenant_name, &view.default_locale);
        }
        return reader.problem_page(
            StatusCode::BAD_REQUEST,
            "link-elsewhere-title",
            "link-elsewhere",
        );
    };
    let login = tenant
        .call(|reply| HostedMsg::ExchangeCode {
            code: code.clone(),
            code_verifier: verifier.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await;
    let login = match login {
        Ok(l) => l,
        Err(e) => return reader.problem(e.into()),
    };
    let Some(params) = login.oauth.clone() else {
        return reader.problem(Problem::Invalid);
    };
    let flow = match open(&state, &mut reader, &slug, Some(authorize_query(&params))).await {
        Ok(f) => f,
        Err(resp) => return resp,
    };
    let mut resp = signed(&state, &reader, &flow, login);
    let clear = format!(
        "{}=; Path={}; HttpOnly; SameSite=Lax; Max-Age=0",
        link_cookie_name(&tenant),
        cookie_path(&slug),
    );
    if let Ok(v) = HeaderValue::from_str(&clear) {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
    resp
}

/// The page after a code or a link could not be sent: the sign-in page again when the
/// address asked too often, else what went wrong.
fn unsent(
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
        e => reader.problem(e.into()),
    }
}

/// The sign-in page again with the reason, 429 and `Retry-After`, when the client address or
/// the account tried too often.
fn throttled(
    state: &AppState,
    reader: &Reader,
    flow: &Flow,
    email: String,
    retry_after: u64,
) -> Response {
    let shown = Shown {
        error: Some(reader.t("error-busy")),
        email,
        captcha: false,
    };
    let mut resp = sign_in_page(state, reader, flow, shown, StatusCode::TOO_MANY_REQUESTS);
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after.max(1)));
    resp
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
            oauth: Some(resume.clone()),
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

/// After a sign-in: the second step of a user with MFA, or the sign-in cookie and back to the
/// authorize page.
fn signed(state: &AppState, reader: &Reader, flow: &Flow, login: PasswordlessLogin) -> Response {
    // A resumed code flow must be this request's.
    if let Some(p) = &login.oauth {
        let req = &flow.checked.request;
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

// ---------------------------------------------------------------- social sign-in

/// Where a social sign-in begun on the sign-in page comes back: its outcome is in the
/// [`SOCIAL_DONE_COOKIE`] (an exchange token, traded here as the API's session route does,
/// or the error), the authorize request in the query. Then as after any sign-in.
async fn social_return(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    RequestCtx(ctx): RequestCtx,
) -> Response {
    let mut reader = Reader::new(&state, &headers, None);
    let flow = match open(&state, &mut reader, &slug, query).await {
        Ok(f) => f,
        Err(resp) => return resp,
    };
    let failed = |key: &str| {
        let shown = Shown {
            error: Some(reader.t(key)),
            email: String::new(),
            captcha: false,
        };
        sign_in_page(&state, &reader, &flow, shown, StatusCode::UNAUTHORIZED)
    };
    let done = cookie(&headers, SOCIAL_DONE_COOKIE);
    let mut resp = match done.and_then(|v| v.split_once('.')) {
        Some(("t", token)) => {
            match exchange_sign_in(&state, &flow.tenant, token, None, &ctx).await {
                Ok(login) => signed(&state, &reader, &flow, login),
                Err(e) if e.status == StatusCode::SERVICE_UNAVAILABLE => {
                    reader.problem(Problem::Busy)
                }
                Err(_) => failed("login-social-failed"),
            }
        }
        Some(("e", "email_exists")) => failed("login-social-email-exists"),
        _ => failed("login-social-failed"),
    };
    let clear = format!(
        "{SOCIAL_DONE_COOKIE}=; Path=/oauth/{slug}/social-return; HttpOnly; SameSite=Lax; Max-Age=0"
    );
    if let Ok(v) = HeaderValue::from_str(&clear) {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
    resp
}

// ---------------------------------------------------------------- passkeys

/// A JSON answer of the passkey script's calls: `{error}` with the reader's words.
fn script_error(reader: &Reader, status: StatusCode, key: &str) -> Response {
    let mut resp = (status, Json(serde_json::json!({ "error": reader.t(key) }))).into_response();
    protect(resp.headers_mut());
    resp
}

fn script_refusal(reader: &Reader, e: CallError<TenantError>) -> Response {
    match e {
        CallError::Failed(
            TenantError::RateLimited { .. } | TenantError::TooManyAttempts { .. },
        ) => script_error(reader, StatusCode::TOO_MANY_REQUESTS, "error-busy"),
        CallError::Unavailable => {
            script_error(reader, StatusCode::SERVICE_UNAVAILABLE, "error-busy")
        }
        CallError::Failed(
            TenantError::PasskeyInvalidAssertion
            | TenantError::PasskeyCeremonyNotFound
            | TenantError::UserBlocked,
        ) => script_error(reader, StatusCode::UNAUTHORIZED, "login-passkey-failed"),
        CallError::Failed(TenantError::GuardianConsentPending) => {
            script_error(reader, StatusCode::FORBIDDEN, "error-guardian-pending")
        }
        CallError::Failed(TenantError::GuardianConsentDeclined) => {
            script_error(reader, StatusCode::FORBIDDEN, "error-guardian-declined")
        }
        CallError::Failed(e) => {
            tracing::error!(error = %e, "a hosted passkey sign-in failed");
            script_error(reader, StatusCode::INTERNAL_SERVER_ERROR, "error-internal")
        }
    }
}

/// The passkey button's options: a username-less sign-in (any discoverable credential).
async fn passkey_begin(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    ClientIp(ip): ClientIp,
    body: Bytes,
) -> Response {
    let (reader, flow, _) =
        match open_form(&state, &headers, &slug, query, &body, Flow::authorize_path).await {
            Ok(found) => found,
            Err(resp) => return resp,
        };
    let options = flow
        .tenant
        .call(|reply| PasskeysMsg::PasskeyAssertBegin {
            user_handle: None,
            ip,
            reply,
        })
        .await;
    match options {
        Ok(o) => {
            let mut resp = Json(serde_json::json!({ "publicKey": o })).into_response();
            protect(resp.headers_mut());
            resp
        }
        Err(e) => script_refusal(&reader, e),
    }
}

/// The passkey button's assertion: checked as `POST /v1/auth/passkeys/assert/finish` checks
/// it (the signature off the actor); a sign-in sets the cookie and answers where to go.
async fn passkey_finish(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    body: Bytes,
) -> Response {
    let (reader, flow, form) =
        match open_form(&state, &headers, &slug, query, &body, Flow::authorize_path).await {
            Ok(found) => found,
            Err(resp) => return resp,
        };
    let response = match serde_json::from_str::<serde_json::Value>(field(&form, "credential")) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        _ => return script_error(&reader, StatusCode::BAD_REQUEST, "login-passkey-failed"),
    };
    let check = flow
        .tenant
        .call(|reply| PasskeysMsg::PasskeyAssertTake {
            response: response.clone(),
            ip,
            ctx: ctx.clone(),
            reply,
        })
        .await;
    let check = match check {
        Ok(c) => c,
        Err(e) => return script_refusal(&reader, e),
    };
    // The P-256 verification runs here, off the tenant's actor.
    let verdict = check.verify();
    let passkey = check.passkey;
    let outcome = flow
        .tenant
        .call(|reply| PasskeysMsg::PasskeyAssertFinish {
            passkey: passkey.clone(),
            verdict,
            ip,
            ctx: ctx.clone(),
            reply,
        })
        .await;
    let grant = match outcome {
        Ok(LoginOutcome::Signed { grant, .. }) => grant,
        Ok(LoginOutcome::MfaRequired { .. } | LoginOutcome::EnrollmentRequired { .. }) => {
            return script_error(&reader, StatusCode::FORBIDDEN, "mfa-enrol")
        }
        Err(e) => return script_refusal(&reader, e),
    };
    let Some(cookie) = sign_in_cookie(&state, &flow.tenant, &grant) else {
        return script_error(&reader, StatusCode::INTERNAL_SERVER_ERROR, "error-internal");
    };
    let mut resp = Json(serde_json::json!({ "redirect_to": flow.again() })).into_response();
    protect(resp.headers_mut());
    resp.headers_mut().append(header::SET_COOKIE, cookie);
    resp
}

// ---------------------------------------------------------------- the consent page

/// The words for a protocol scope.
pub(crate) fn scope_text(reader: &Reader, scope: &str) -> String {
    match scope {
        "openid" | "profile" | "email" | "phone" | "address" | "offline_access" => {
            reader.t(&format!("scope-{scope}"))
        }
        other => reader.t_with("scope-other", &[("scope", other)]),
    }
}

fn consent_page(reader: &Reader, flow: &Flow, needed: &ConsentNeeded) -> Response {
    let client = needed.client.name.as_str();
    let req = &flow.checked.request;
    let mut page = reader.page("consent-title");
    page.title = reader.t_with("consent-title", &[("client", client)]);
    if needed.client.verification() == "unverified" {
        page.paragraphs
            .push(reader.t_with("consent-unverified", &[("client", client)]));
    }
    let intro = if needed.is_re_consent {
        "consent-reconsent"
    } else {
        "consent-intro"
    };
    page.paragraphs
        .push(reader.t_with(intro, &[("client", client)]));
    let checkable = custom_scopes(&flow.checked, reader.lang);
    for s in req
        .scopes
        .iter()
        .filter(|s| !checkable.iter().any(|c| &c.scope == *s))
    {
        let text = scope_text(reader, s);
        page.items.push(if needed.unchanged_scopes.contains(s) {
            reader.t_with("consent-unchanged", &[("scope", &text)])
        } else {
            text
        });
    }
    if let Some(r) = &req.resource {
        page.paragraphs
            .push(reader.t_with("consent-resource", &[("resource", r)]));
    }
    let mut form = FormView::new(
        reader.csrf(&flow.consent_path(), &flow.query),
        reader.t("consent-allow"),
    );
    form.action = Some(format!("{}?{}", flow.consent_path(), flow.query));
    form.hidden.push(("commitment", needed.commitment.clone()));
    form.checks = checkable
        .iter()
        .enumerate()
        .map(|(i, c)| CheckView {
            name: "scope",
            id: format!("scope-{i}"),
            value: c.scope.clone(),
            label: c.display_name.clone(),
            checked: true,
        })
        .collect();
    if !form.checks.is_empty() {
        form.heading = Some(reader.t("consent-optional"));
    }
    form.buttons = vec![
        ButtonView {
            name: "decision",
            value: "approve".to_owned(),
            label: reader.t("consent-allow"),
            secondary: false,
        },
        ButtonView {
            name: "decision",
            value: "deny".to_owned(),
            label: reader.t("consent-deny"),
            secondary: true,
        },
    ];
    page.forms.push(form);
    reader.answer(StatusCode::OK, page, &[&req.redirect_uri])
}

async fn consent_submit(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    RequestCtx(ctx): RequestCtx,
    body: Bytes,
) -> Response {
    let (reader, flow, form) =
        match open_form(&state, &headers, &slug, query, &body, Flow::consent_path).await {
            Ok(found) => found,
            Err(resp) => return resp,
        };
    let Some(bearer) = signed_in(&state, &flow.tenant, &headers) else {
        return see_other(&reader, &flow.again(), StatusCode::SEE_OTHER);
    };
    let approve = match field(&form, "decision") {
        "approve" => true,
        "deny" => false,
        _ => return reader.problem(Problem::Invalid),
    };
    // The boxes left checked, and every scope that has no box.
    let req = &flow.checked.request;
    let checked_boxes: Vec<String> = form_urlencoded::parse(&body)
        .filter(|(k, _)| k == "scope")
        .map(|(_, v)| v.into_owned())
        .collect();
    let checkable = custom_scopes(&flow.checked, "en");
    let granted: Vec<String> = req
        .scopes
        .iter()
        .filter(|s| !checkable.iter().any(|c| &c.scope == *s) || checked_boxes.contains(s))
        .cloned()
        .collect();
    let decision = match decide(&flow.checked, approve, Some(granted)) {
        Ok(d) => d,
        Err(_) => return reader.problem(Problem::Invalid),
    };
    let cmd = OAuthCmd::Consent {
        bearer,
        request: req.clone(),
        commitment: field(&form, "commitment").to_owned(),
        decision,
    };
    match oauth(&flow.tenant, ctx, cmd).await {
        Ok(OAuthAnswer::Decided(Some(code))) => {
            let to = code_redirect(
                &flow.iss(&state),
                flow.redirect_uri(),
                req.state.as_deref(),
                &code,
            );
            see_other(&reader, &to, StatusCode::SEE_OTHER)
        }
        Ok(OAuthAnswer::Decided(None)) => {
            let to = flow.error_to_client(&state, "access_denied", "the user denied the request");
            see_other(&reader, &to, StatusCode::SEE_OTHER)
        }
        Ok(_) => reader.problem(Problem::Internal),
        // Not the request or the user the page was shown for.
        Err(CallError::Failed(TenantError::OAuth(OAuthFailure::InvalidRequest))) => {
            reader.problem(Problem::Csrf)
        }
        Err(CallError::Failed(TenantError::InvalidSession)) => {
            see_other(&reader, &flow.again(), StatusCode::SEE_OTHER)
        }
        Err(e) => reader.problem(e.into()),
    }
}
