//! Passwordless login by e-mail (`/v1/auth/magic-link`, `/v1/auth/email-otp`) and by a texted
//! code (`/v1/auth/sms-otp`): requests answer 202 whatever the address or number, before the
//! message is sent (by the postman or the courier, with retries); verifying a link or code
//! signs in (or, for `login_or_create`, signs up). With `oauth_params` the request also
//! answers a `resume_binding` that the verify must present, and the verify answers
//! `redirect_to`, which resumes the OAuth authorize flow.

use std::net::IpAddr;
use tessera_actors::tenant::{HostedMsg, PasswordlessMsg, SmsMsg};
use tessera_actors::SmsError;

use axum::{extract::State, http::StatusCode, response::Response, Json};
use serde::Deserialize;
use tessera_actors::{
    tenant::{
        audit::AuditContext,
        challenges::{OAuthParams, OAuthResume},
        messages::{HostedReturn, PasswordlessLogin},
    },
    TenantHandle, TenantMsg,
};
use tessera_storage::{random_token, sha256};
use utoipa::ToSchema;

use super::{
    error::{len_between, ApiError, ErrorBody, FieldErrors},
    extract::{ApiJson, ApiTenant, ClientIp, RequestCtx},
    fields::{
        checked_phone, code_challenge_field, code_verifier_field, email_field, phone_and_code,
        phone_field, redirect_to_field, six_digits,
    },
    responses::{accepted, login_answer, resume, LoginResponse, PasswordlessAccepted},
};
use crate::http::error_responses::PasswordlessDisabled;
use crate::{
    app::{App, AppState},
    captcha::CaptchaOutcome,
};

/// Spec 2.4 `oauth_params`: the authorize request a passwordless login resumes.
#[derive(Deserialize, ToSchema)]
pub struct OAuthParamsBody {
    #[schema(min_length = 1, max_length = 256)]
    pub client_id: String,
    /// An absolute `http(s)` URI.
    #[schema(format = "uri")]
    pub redirect_uri: String,
    pub response_type: Option<String>,
    pub code_challenge: Option<String>,
    pub code_challenge_method: Option<String>,
    pub scope: Option<String>,
    pub state: Option<String>,
    pub nonce: Option<String>,
    pub resource: Option<String>,
}

/// Validates `oauth_params` into `errors`.
fn check_oauth(errors: &mut FieldErrors, p: &OAuthParamsBody) {
    errors.check(
        "oauth_params.client_id",
        len_between(&p.client_id, 1, 256),
        "must be 1-256 characters",
    );
    let uri_ok = p.redirect_uri.len() <= 2048
        && reqwest::Url::parse(&p.redirect_uri)
            .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
    errors.check(
        "oauth_params.redirect_uri",
        uri_ok,
        "must be an absolute http(s) URI of at most 2048 characters",
    );
    for (name, v) in optional_params(p) {
        errors.check(
            &format!("oauth_params.{name}"),
            v.is_none_or(|v| v.len() <= 2048),
            "must be at most 2048 characters",
        );
    }
}

fn optional_params(p: &OAuthParamsBody) -> [(&'static str, Option<&str>); 7] {
    [
        ("response_type", p.response_type.as_deref()),
        ("code_challenge", p.code_challenge.as_deref()),
        ("code_challenge_method", p.code_challenge_method.as_deref()),
        ("scope", p.scope.as_deref()),
        ("state", p.state.as_deref()),
        ("nonce", p.nonce.as_deref()),
        ("resource", p.resource.as_deref()),
    ]
}

/// The OAuth parameters to store and the `resume_binding` to hand the browser: only its
/// hash is stored.
fn bind(p: Option<OAuthParamsBody>) -> (Option<OAuthResume>, Option<String>) {
    let Some(p) = p else {
        return (None, None);
    };
    let binding = random_token(32);
    let resume = OAuthResume {
        params: OAuthParams {
            client_id: p.client_id,
            redirect_uri: p.redirect_uri,
            response_type: p.response_type,
            code_challenge: p.code_challenge,
            code_challenge_method: p.code_challenge_method,
            scope: p.scope,
            state: p.state,
            nonce: p.nonce,
            resource: p.resource,
        },
        binding_hash: hex::encode(sha256(binding.as_bytes())),
    };
    (Some(resume), Some(binding))
}

/// Spec 2.4 UserMagicLinkRequest.
#[derive(Deserialize, ToSchema)]
pub struct UserMagicLinkRequest {
    #[serde(default)]
    #[schema(format = "email", required = true)]
    pub email: String,
    pub oauth_params: Option<OAuthParamsBody>,
    /// Where the link's hosted page sends the user with `?code=`: the tenant's site URL or
    /// one of its redirect URLs, exactly. Default: the site URL.
    #[schema(format = "uri", max_length = 2048)]
    pub redirect_to: Option<String>,
    /// PKCE (RFC 7636): the S256 challenge of a verifier the app keeps. Needed for the hosted
    /// page to finish the sign-in: its `code` is exchanged at `POST /v1/auth/token/exchange`
    /// with the verifier.
    #[schema(min_length = 43, max_length = 43, pattern = "^[A-Za-z0-9_-]{43}$")]
    pub code_challenge: Option<String>,
    /// `S256`, the only method, when sent.
    #[schema(pattern = "^S256$")]
    pub code_challenge_method: Option<String>,
}

/// Mails a single-use login link (10 minutes) when the address has an account. Always 202.
#[utoipa::path(post, path = "/v1/auth/magic-link", tag = "passwordless",
    security(("api_key" = [])),
    request_body = UserMagicLinkRequest,
    responses(
        (status = 403, description = "`auth/sso_required`: the address's domain signs in only through its organization's single sign-on (`details.connection_id`)", body = ErrorBody),
        (status = 202, description = "Accepted, whether or not the address has an account; the link is `{accounts_url}/magic-link?token=...`", body = PasswordlessAccepted),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        PasswordlessDisabled,
        (status = 429, description = "`auth/rate_limited`: one request per address a minute", body = ErrorBody),
    ))]
pub async fn magic_link(
    ApiTenant(tenant): ApiTenant,
    ApiJson(req): ApiJson<UserMagicLinkRequest>,
) -> Result<Response, ApiError> {
    let mut errors = FieldErrors::new();
    let email = email_field(&mut errors, &req.email);
    if let Some(p) = &req.oauth_params {
        check_oauth(&mut errors, p);
    }
    let edge = tenant.edge().await?;
    let hosted = HostedReturn {
        redirect_to: redirect_to_field(&mut errors, &edge.urls, req.redirect_to.as_deref()),
        code_challenge: code_challenge_field(
            &mut errors,
            req.code_challenge.as_deref(),
            req.code_challenge_method.as_deref(),
        ),
    };
    errors.finish()?;
    let email = email.unwrap_or_default();
    let (oauth, binding) = bind(req.oauth_params);
    tenant
        .call(|reply| PasswordlessMsg::MagicLinkRequest {
            email: email.clone(),
            oauth: oauth.clone(),
            hosted: hosted.clone(),
            reply,
        })
        .await?;
    Ok(accepted(binding))
}

/// Spec 2.4 UserMagicLinkVerifyRequest.
#[derive(Deserialize, ToSchema)]
pub struct UserMagicLinkVerifyRequest {
    #[serde(default)]
    #[schema(min_length = 1, required = true)]
    pub token: String,
    #[schema(max_length = 64)]
    pub resume_binding: Option<String>,
}

fn binding_field(errors: &mut FieldErrors, binding: Option<&str>) -> Option<String> {
    if let Some(b) = binding {
        errors.check(
            "resume_binding",
            b.len() <= 64,
            "must be at most 64 characters",
        );
    }
    binding.map(|b| hex::encode(sha256(b.as_bytes())))
}

/// The answer to a verify: the login's, plus `redirect_to` when it resumes an OAuth flow.
async fn verified(
    app: &App,
    tenant: &TenantHandle,
    login: PasswordlessLogin,
) -> Result<Json<LoginResponse>, ApiError> {
    let mut answer = login_answer(app, tenant, login.outcome).await?;
    if let LoginResponse::Tokens(pair) = &mut answer {
        resume(app, &tenant.slug, pair, login.oauth);
    }
    Ok(Json(answer))
}

/// Signs in with a login link: the token pair (AMR `mca`); the address counts as confirmed.
#[utoipa::path(post, path = "/v1/auth/magic-link/verify", tag = "passwordless",
    security(("api_key" = [])),
    request_body = UserMagicLinkVerifyRequest,
    responses(
        (status = 200, description = "Signed in (with `redirect_to` when the link resumes an OAuth flow), or the MFA challenge for a user with MFA", body = LoginResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 401, description = "`invalid_or_expired_token`: used, expired or unknown link, or a wrong `resume_binding`", body = ErrorBody),
        PasswordlessDisabled,
        (status = 404, description = "`resource/not_found`: another tenant's link", body = ErrorBody),
    ))]
pub async fn magic_link_verify(
    State(state): State<AppState>,
    ApiTenant(tenant): ApiTenant,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<UserMagicLinkVerifyRequest>,
) -> Result<Json<LoginResponse>, ApiError> {
    let mut errors = FieldErrors::new();
    errors.check(
        "token",
        len_between(&req.token, 1, 512),
        "must be 1-512 characters",
    );
    let binding_hash = binding_field(&mut errors, req.resume_binding.as_deref());
    errors.finish()?;
    let login = tenant
        .call(|reply| PasswordlessMsg::MagicLinkVerify {
            token: req.token.clone(),
            binding_hash: binding_hash.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    verified(&state, &tenant, login).await
}

/// The hosted login-link page's code and the app's PKCE verifier.
#[derive(Deserialize, ToSchema)]
pub struct TokenExchangeRequest {
    /// The `code` the hosted page appended to `redirect_to`.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 512, required = true)]
    pub code: String,
    /// The verifier whose S256 transform was the magic-link request's `code_challenge`.
    #[serde(default)]
    #[schema(
        min_length = 43,
        max_length = 128,
        pattern = "^[A-Za-z0-9._~-]{43,128}$",
        required = true
    )]
    pub code_verifier: String,
}

/// Exchanges the code of a hosted login-link page (single use, 60 seconds, this tenant's)
/// and the PKCE verifier for what the link signs in to: the token pair, or the MFA challenge
/// for a user with MFA. Any attempt uses the code up.
#[utoipa::path(post, path = "/v1/auth/token/exchange", tag = "passwordless",
    security(("api_key" = [])),
    request_body = TokenExchangeRequest,
    responses(
        (status = 200, description = "Signed in (AMR `mca`), or the MFA challenge for a user with MFA", body = LoginResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 401, description = "`invalid_or_expired_token`: a used, expired, unknown or another tenant's code, or a verifier that does not match", body = ErrorBody),
        PasswordlessDisabled,
    ))]
pub async fn token_exchange(
    State(state): State<AppState>,
    ApiTenant(tenant): ApiTenant,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<TokenExchangeRequest>,
) -> Result<Json<LoginResponse>, ApiError> {
    let mut errors = FieldErrors::new();
    errors.check(
        "code",
        len_between(&req.code, 1, 512),
        "must be 1-512 characters",
    );
    code_verifier_field(&mut errors, &req.code_verifier);
    errors.finish()?;
    let login = tenant
        .call(|reply| HostedMsg::ExchangeCode {
            code: req.code.clone(),
            code_verifier: req.code_verifier.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    verified(&state, &tenant, login).await
}

/// Spec 2.4 UserEmailOtpRequest.
#[derive(Deserialize, ToSchema)]
pub struct UserEmailOtpRequest {
    #[serde(default)]
    #[schema(format = "email", required = true)]
    pub email: String,
    /// `login` (default): only to existing accounts; `login_or_create`: to any address, the
    /// account is created at the first verify.
    #[schema(pattern = "^(login|login_or_create)$")]
    pub mode: Option<String>,
    pub oauth_params: Option<OAuthParamsBody>,
    /// Checked when the server has a CAPTCHA provider configured.
    pub captcha_token: Option<String>,
}

/// Mails a 6-digit login code (10 minutes) per `mode`. Always 202.
#[utoipa::path(post, path = "/v1/auth/email-otp", tag = "passwordless",
    security(("api_key" = [])),
    request_body = UserEmailOtpRequest,
    responses(
        (status = 403, description = "`auth/sso_required`: the address's domain signs in only through its organization's single sign-on (`details.connection_id`)", body = ErrorBody),
        (status = 202, description = "Accepted, whatever the address", body = PasswordlessAccepted),
        (status = 400, description = "`validation/invalid_request`, `passwordless/captcha_failed`", body = ErrorBody),
        PasswordlessDisabled,
        (status = 429, description = "`auth/rate_limited`: one request per address a minute", body = ErrorBody),
        (status = 503, description = "`service/unavailable`: the CAPTCHA verifier cannot be reached", body = ErrorBody),
    ))]
pub async fn email_otp(
    State(state): State<AppState>,
    ApiTenant(tenant): ApiTenant,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<UserEmailOtpRequest>,
) -> Result<Response, ApiError> {
    let mut errors = FieldErrors::new();
    let email = email_field(&mut errors, &req.email);
    let create = create_mode(&mut errors, req.mode.as_deref());
    if let Some(p) = &req.oauth_params {
        check_oauth(&mut errors, p);
    }
    errors.finish()?;
    match state.captcha.verify(req.captcha_token.as_deref(), ip).await {
        CaptchaOutcome::Passed => {}
        CaptchaOutcome::Failed => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "passwordless/captcha_failed",
                "the CAPTCHA check failed; solve it again",
            ))
        }
        CaptchaOutcome::Unreachable(e) => {
            tracing::warn!(error = %e, "CAPTCHA verifier unreachable");
            return Err(ApiError::unavailable());
        }
    }
    let email = email.unwrap_or_default();
    let (oauth, binding) = bind(req.oauth_params);
    tenant
        .call(|reply| PasswordlessMsg::EmailOtpRequest {
            email: email.clone(),
            create,
            oauth: oauth.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok(accepted(binding))
}

/// Where a login code went: the address it was mailed to, or the number it was texted to.
enum SentTo {
    Email(String),
    Phone(String),
}

/// Signs in with a login code sent `to` an address or a number; answers as [`verified`].
async fn code_verified(
    app: &App,
    tenant: &TenantHandle,
    to: SentTo,
    code: &str,
    binding_hash: Option<String>,
    ip: IpAddr,
    ctx: &AuditContext,
) -> Result<Json<LoginResponse>, ApiError> {
    let login = tenant
        .call(|reply| match &to {
            SentTo::Email(email) => TenantMsg::from(PasswordlessMsg::EmailOtpVerify {
                email: email.clone(),
                code: code.to_owned(),
                binding_hash: binding_hash.clone(),
                ip,
                ctx: ctx.clone(),
                reply,
            }),
            SentTo::Phone(phone) => TenantMsg::from(SmsMsg::SmsOtpVerify {
                phone: phone.clone(),
                code: code.to_owned(),
                binding_hash: binding_hash.clone(),
                ip,
                ctx: ctx.clone(),
                reply,
            }),
        })
        .await?;
    verified(app, tenant, login).await
}

/// Whether `mode` is `login_or_create` (`login`, the default, is false).
fn create_mode(errors: &mut FieldErrors, mode: Option<&str>) -> bool {
    errors.check(
        "mode",
        matches!(mode, None | Some("login" | "login_or_create")),
        "must be login or login_or_create",
    );
    mode == Some("login_or_create")
}

/// Spec 2.4 UserEmailOtpVerifyRequest.
#[derive(Deserialize, ToSchema)]
pub struct UserEmailOtpVerifyRequest {
    #[serde(default)]
    #[schema(format = "email", required = true)]
    pub email: String,
    #[serde(default)]
    #[schema(pattern = r"^\d{6}$", required = true)]
    pub code: String,
    #[schema(max_length = 64)]
    pub resume_binding: Option<String>,
}

/// Signs in (or signs up, for `login_or_create`) with a login code: the token pair (AMR
/// `otp`); the address counts as confirmed. Five wrong codes kill the code.
#[utoipa::path(post, path = "/v1/auth/email-otp/verify", tag = "passwordless",
    security(("api_key" = [])),
    request_body = UserEmailOtpVerifyRequest,
    responses(
        (status = 200, description = "Signed in (with `redirect_to` when the code resumes an OAuth flow), or the MFA challenge for a user with MFA", body = LoginResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 401, description = "`invalid_or_expired_token`: wrong, used, expired or no code, or a wrong `resume_binding`", body = ErrorBody),
        PasswordlessDisabled,
        (status = 429, description = "`auth/too_many_attempts`: wrong codes count as failed logins of the address", body = ErrorBody),
    ))]
pub async fn email_otp_verify(
    State(state): State<AppState>,
    ApiTenant(tenant): ApiTenant,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<UserEmailOtpVerifyRequest>,
) -> Result<Json<LoginResponse>, ApiError> {
    let mut errors = FieldErrors::new();
    let email = email_field(&mut errors, &req.email);
    six_digits(&mut errors, "code", &req.code);
    let binding_hash = binding_field(&mut errors, req.resume_binding.as_deref());
    errors.finish()?;
    let to = SentTo::Email(email.unwrap_or_default());
    code_verified(&state, &tenant, to, &req.code, binding_hash, ip, &ctx).await
}

/// Spec 2.4 UserSmsOtpRequest.
#[derive(Deserialize, ToSchema)]
pub struct UserSmsOtpRequest {
    #[serde(default)]
    #[schema(min_length = 5, required = true, example = "+33612345678")]
    pub phone: String,
    /// `login` (default): only to numbers a user has confirmed; `login_or_create`: to any
    /// number, the account is created at the first verify.
    #[schema(pattern = "^(login|login_or_create)$")]
    pub mode: Option<String>,
    /// Only `sms`.
    #[schema(pattern = "^sms$")]
    pub channel: Option<String>,
    pub oauth_params: Option<OAuthParamsBody>,
}

/// Texts a 6-digit login code (10 minutes) per `mode`. Always 202 for an admitted number.
#[utoipa::path(post, path = "/v1/auth/sms-otp", tag = "passwordless",
    security(("api_key" = [])),
    request_body = UserSmsOtpRequest,
    responses(
        (status = 202, description = "Accepted, whether or not the number has an account", body = PasswordlessAccepted),
        (status = 400, description = "`validation/invalid_request` (also an invalid number), `sms/country_not_allowed`", body = ErrorBody),
        PasswordlessDisabled,
        (status = 429, description = "`auth/rate_limited` (one a minute and 5 an hour per number, 10 an hour per client), `sms/monthly_cap_reached`", body = ErrorBody),
    ))]
pub async fn sms_otp(
    ApiTenant(tenant): ApiTenant,
    ClientIp(ip): ClientIp,
    ApiJson(req): ApiJson<UserSmsOtpRequest>,
) -> Result<Response, ApiError> {
    let mut errors = FieldErrors::new();
    let phone = phone_field(&mut errors, "phone", &req.phone);
    let create = create_mode(&mut errors, req.mode.as_deref());
    errors.check(
        "channel",
        req.channel.as_deref().is_none_or(|c| c == "sms"),
        "must be sms",
    );
    if let Some(p) = &req.oauth_params {
        check_oauth(&mut errors, p);
    }
    errors.finish()?;
    let phone = checked_phone(phone)?;
    let (oauth, binding) = bind(req.oauth_params);
    tenant
        .call(|reply| SmsMsg::SmsOtpRequest {
            phone: phone.clone(),
            create,
            oauth: oauth.clone(),
            ip,
            reply,
        })
        .await?;
    Ok(accepted(binding))
}

/// Spec 2.4 UserSmsOtpVerifyRequest.
#[derive(Deserialize, ToSchema)]
pub struct UserSmsOtpVerifyRequest {
    #[serde(default)]
    #[schema(min_length = 5, required = true)]
    pub phone: String,
    #[serde(default)]
    #[schema(pattern = r"^\d{6}$", required = true)]
    pub code: String,
    #[schema(max_length = 64)]
    pub resume_binding: Option<String>,
}

/// Signs in (or signs up, for `login_or_create`) with a texted code: the token pair (AMR
/// `sms`). Five wrong codes kill the code.
#[utoipa::path(post, path = "/v1/auth/sms-otp/verify", tag = "passwordless",
    security(("api_key" = [])),
    request_body = UserSmsOtpVerifyRequest,
    responses(
        (status = 200, description = "Signed in (with `redirect_to` when the code resumes an OAuth flow), or the MFA challenge for a user with MFA", body = LoginResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 401, description = "`invalid_or_expired_token`: wrong, used, expired or no code, or a wrong `resume_binding`", body = ErrorBody),
        PasswordlessDisabled,
        (status = 429, description = "`auth/too_many_attempts`: wrong codes count as failed logins of the number and the client", body = ErrorBody),
    ))]
pub async fn sms_otp_verify(
    State(state): State<AppState>,
    ApiTenant(tenant): ApiTenant,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<UserSmsOtpVerifyRequest>,
) -> Result<Json<LoginResponse>, ApiError> {
    let (mut errors, phone) = phone_and_code(&req.phone, &req.code);
    let binding_hash = binding_field(&mut errors, req.resume_binding.as_deref());
    errors.finish()?;
    let to = SentTo::Phone(phone.map(|p| p.e164).unwrap_or_default());
    code_verified(&state, &tenant, to, &req.code, binding_hash, ip, &ctx).await
}

/// How text messages' refusals answer.
impl From<SmsError> for ApiError {
    fn from(e: SmsError) -> Self {
        match e {
            SmsError::CountryNotAllowed => ApiError::new(
                StatusCode::BAD_REQUEST,
                "sms/country_not_allowed",
                "text messages to this number's country are not allowed for this tenant",
            ),
            SmsError::CapReached { retry_after } => {
                let mut e = ApiError::rate_limited("sms/monthly_cap_reached", retry_after);
                e.message = "this tenant's monthly text message cap is reached".into();
                e
            }
            SmsError::CapAboveTier { max, tier } => ApiError::invalid_field(
                "sms_otp_monthly_cap",
                format!(
                    "must be 0-{max} while messages go through the platform's SMS account (tier {}); with the tenant's own provider account, up to 100000",
                    tier.as_str()
                ),
            ),
        }
    }
}
