//! Text messages over HTTP: passwordless login by a texted code (`/v1/auth/sms-otp`), phone
//! confirmation for a signed-in user (`/v1/users/me/phone/...`) and the dashboard's test
//! message (`/v1/auth/dashboard/sms-test`).
//!
//! Numbers are parsed with `phonenumber` (libphonenumber's metadata) in international form and
//! normalised to E.164; the tenant actor then checks the country, the limits and the monthly
//! cap. Requests answer before the message is sent (by the courier, with retries), except the
//! dashboard's test, which is sent here once so the owner sees the provider's answer.

use axum::{
    extract::State,
    http::{HeaderMap, StatusCode},
    response::Response,
    Json,
};
use serde::{Deserialize, Serialize};
use tessera_actors::{outbound::SmsJob, TenantMsg};
use utoipa::ToSchema;

use super::{
    bearer::UserBearer,
    dashboard::Dashboard,
    error::{ApiError, ErrorBody, FieldErrors},
    extract::{ApiJson, ApiTenant, ClientIp, RequestCtx},
    fields::{phone_field, six_digits},
    passwordless::{bind, binding_field, check_oauth, create_mode, verified, OAuthParamsBody},
    reauth::require_step_up,
    responses::{accepted, LoginResponse, PasswordlessAccepted, UserResponse},
};
use crate::app::AppState;

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
        (status = 403, description = "`passwordless/disabled`", body = ErrorBody),
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
    let Some(phone) = phone else {
        return Err(ApiError::internal("a checked phone number is missing"));
    };
    let (oauth, binding) = bind(req.oauth_params);
    tenant
        .call(|reply| TenantMsg::SmsOtpRequest {
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
        (status = 403, description = "`passwordless/disabled`", body = ErrorBody),
        (status = 429, description = "`auth/too_many_attempts`: wrong codes count as failed logins of the number and the client", body = ErrorBody),
    ))]
pub async fn sms_otp_verify(
    State(state): State<AppState>,
    ApiTenant(tenant): ApiTenant,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<UserSmsOtpVerifyRequest>,
) -> Result<Json<LoginResponse>, ApiError> {
    let mut errors = FieldErrors::new();
    let phone = phone_field(&mut errors, "phone", &req.phone);
    six_digits(&mut errors, "code", &req.code);
    let binding_hash = binding_field(&mut errors, req.resume_binding.as_deref());
    errors.finish()?;
    let e164 = phone.map(|p| p.e164).unwrap_or_default();
    let login = tenant
        .call(|reply| TenantMsg::SmsOtpVerify {
            phone: e164.clone(),
            code: req.code.clone(),
            binding_hash: binding_hash.clone(),
            ip,
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    verified(&state, &tenant, login).await
}

/// Spec 2.4 PhoneVerifyRequest.
#[derive(Deserialize, ToSchema)]
pub struct PhoneVerifyRequest {
    #[serde(default)]
    #[schema(min_length = 5, required = true, example = "+33612345678")]
    pub phone: String,
}

/// Texts the signed-in user a 6-digit code (10 minutes) confirming this number.
#[utoipa::path(post, path = "/v1/users/me/phone/verify", tag = "accounts",
    security(("api_key" = [], "bearer" = [])),
    request_body = PhoneVerifyRequest,
    responses(
        (status = 202, description = "The code is on its way", body = PasswordlessAccepted),
        (status = 400, description = "`validation/invalid_request`, `sms/country_not_allowed`", body = ErrorBody),
        (status = 401, description = "`auth/missing_token`, `auth/invalid_token`", body = ErrorBody),
        (status = 403, description = "`auth/anonymous_not_allowed`: a guest", body = ErrorBody),
        (status = 429, description = "`auth/rate_limited`, `sms/monthly_cap_reached`", body = ErrorBody),
    ))]
pub async fn phone_verify(
    user: UserBearer,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<PhoneVerifyRequest>,
) -> Result<Response, ApiError> {
    let mut errors = FieldErrors::new();
    let phone = phone_field(&mut errors, "phone", &req.phone);
    errors.finish()?;
    let Some(phone) = phone else {
        return Err(ApiError::internal("a checked phone number is missing"));
    };
    let bearer = user.bearer;
    user.tenant
        .call(|reply| TenantMsg::PhoneVerifyRequest {
            bearer,
            phone: phone.clone(),
            ip,
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok(accepted(None))
}

/// Spec 2.4 PhoneVerifyConfirmRequest.
#[derive(Deserialize, ToSchema)]
pub struct PhoneVerifyConfirmRequest {
    #[serde(default)]
    #[schema(min_length = 5, required = true)]
    pub phone: String,
    #[serde(default)]
    #[schema(pattern = r"^\d{6}$", required = true)]
    pub code: String,
}

/// Confirms the number with its code: it becomes the user's `phone` (`phone_verified: true`)
/// and signs this user in by SMS from now on; another user who had it loses it. Step-up gated
/// (`X-Step-Up-Token`), as MFA setup is: a confirmed number is a way in, and whoever holds a
/// stolen access token must not be able to attach their own.
#[utoipa::path(post, path = "/v1/users/me/phone/confirm", tag = "accounts",
    security(("api_key" = [], "bearer" = [])),
    params(("X-Step-Up-Token" = Option<String>, Header, description = "A step-up token of this session")),
    request_body = PhoneVerifyConfirmRequest,
    responses(
        (status = 200, description = "The user record, with the number", body = UserResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 401, description = "`account_linking/mfa_required` (no step-up token: the step-up challenge, see the step-up gate); `invalid_or_expired_token`: wrong, used or expired code, another number, or a bad step-up token; `auth/invalid_token`", body = ErrorBody),
        (status = 403, description = "`auth/anonymous_not_allowed` (a guest), `auth/email_not_verified` (the account's address is not confirmed)", body = ErrorBody),
        (status = 404, description = "The step-up token is another tenant's", body = ErrorBody),
    ))]
pub async fn phone_confirm(
    State(state): State<AppState>,
    user: UserBearer,
    headers: HeaderMap,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<PhoneVerifyConfirmRequest>,
) -> Result<Json<UserResponse>, ApiError> {
    let mut errors = FieldErrors::new();
    let phone = phone_field(&mut errors, "phone", &req.phone);
    six_digits(&mut errors, "code", &req.code);
    errors.finish()?;
    // Refusals that need no step-up come first (the actor checks them again).
    let bearer = user.bearer;
    let me = user
        .tenant
        .call(|reply| TenantMsg::Authenticate { bearer, reply })
        .await?;
    if me.is_anonymous {
        return Err(tessera_actors::TenantError::GuestNotAllowed.into());
    }
    if me.email.is_some() && !me.email_verified {
        return Err(tessera_actors::TenantError::EmailNotVerified.into());
    }
    require_step_up(&state, &user, &headers).await?;
    let e164 = phone.map(|p| p.e164).unwrap_or_default();
    let bearer = user.bearer;
    let view = user
        .tenant
        .call(|reply| TenantMsg::PhoneConfirm {
            bearer,
            phone: e164.clone(),
            code: req.code.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok(Json(view.into()))
}

/// Spec 2.4 SmsTestRequest.
#[derive(Deserialize, ToSchema)]
pub struct SmsTestRequest {
    #[serde(default, rename = "tenantSlug")]
    #[schema(min_length = 1, required = true)]
    pub tenant_slug: String,
    #[serde(default)]
    #[schema(required = true, example = "+33612345678")]
    pub phone: String,
}

/// What the provider answered a test message.
#[derive(Serialize, ToSchema)]
pub struct SmsTestResponse {
    /// The provider's message id (the outbox file's id with the outbox).
    pub message_id: String,
    /// `outbox`, `platform` (the platform's account) or `byok` (the tenant's own).
    pub provider: String,
}

/// Sends a test message through the tenant's provider, once, and answers the provider's
/// message id or its error. Counts in the tenant's monthly cap; does not need SMS login on.
#[utoipa::path(post, path = "/v1/auth/dashboard/sms-test", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    request_body = SmsTestRequest,
    responses(
        (status = 200, description = "Sent", body = SmsTestResponse),
        (status = 400, description = "`validation/invalid_request`, `sms/country_not_allowed`", body = ErrorBody),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` (not the owner) or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
        (status = 429, description = "`auth/rate_limited` (per number), `sms/monthly_cap_reached`", body = ErrorBody),
        (status = 502, description = "`sms/provider_error`: the provider refused or could not be reached; the message says why", body = ErrorBody),
    ))]
pub async fn sms_test(
    State(state): State<AppState>,
    auth: Dashboard,
    ApiJson(req): ApiJson<SmsTestRequest>,
) -> Result<Json<SmsTestResponse>, ApiError> {
    let mut errors = FieldErrors::new();
    errors.check(
        "tenantSlug",
        !req.tenant_slug.is_empty() && req.tenant_slug.len() <= 64,
        "must be 1-64 characters",
    );
    let phone = phone_field(&mut errors, "phone", &req.phone);
    errors.finish()?;
    let Some(phone) = phone else {
        return Err(ApiError::internal("a checked phone number is missing"));
    };
    let (_, tenant) = auth.owner(&state, &req.tenant_slug)?;
    let ctx = auth.ctx.clone();
    let job: SmsJob = tenant
        .call(|reply| TenantMsg::SmsTest {
            phone: phone.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    let provider = state.texter.provider(&job);
    match state.texter.send(&job).await {
        Ok(message_id) => Ok(Json(SmsTestResponse {
            message_id,
            provider: provider.to_owned(),
        })),
        Err(e) => {
            tracing::warn!(job = %job.id, provider, error = %e, "test text message not sent");
            // The provider's own words only for the tenant's own account: about the platform's
            // account they are the operator's business.
            let message = match (&e.provider_message, provider) {
                (Some(m), "byok") => format!("{e}: {m}"),
                _ => e.to_string(),
            };
            Err(ApiError::new(
                StatusCode::BAD_GATEWAY,
                "sms/provider_error",
                message,
            ))
        }
    }
}
