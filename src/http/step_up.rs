//! Step-up re-authentication routes (spec 4.1 and 5, `/v1/auth/step-up/...`): a signed-in user
//! proves again who they are (password, e-mailed code or link) and receives a step-up token.
//! Signing it and the gate that consumes it are in `reauth.rs`.

use std::time::Instant;
use tessera_actors::tenant::StepUpMsg;

use axum::{
    body::Bytes,
    extract::State,
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{
    bearer::UserBearer,
    error::{len_between, ApiError, ErrorBody, FieldErrors},
    extract::{optional_json, ApiJson, RequestCtx},
    fields::redirect_to_field,
    reauth::{check_current_password, sign_step_up, StepUpTokenResponse},
};
use crate::app::AppState;

/// Spec 2.6 StepUpPasswordRequest.
#[derive(Deserialize, ToSchema)]
pub struct StepUpPasswordRequest {
    #[serde(default)]
    #[schema(min_length = 1, max_length = 256, required = true)]
    pub password: String,
}

/// Step-up with the password: AAL 2, AMR `pwd`. Only for users with a password.
#[utoipa::path(post, path = "/v1/auth/step-up/password", tag = "step-up",
    security(("api_key" = [], "bearer" = [])),
    request_body = StepUpPasswordRequest,
    responses(
        (status = 200, description = "A step-up token", body = StepUpTokenResponse),
        (status = 400, description = "`validation/invalid_request`, `step_up/method_unavailable`", body = ErrorBody),
        (status = 401, description = "`auth/invalid_credentials`, `auth/invalid_token`", body = ErrorBody),
        (status = 429, description = "`auth/too_many_attempts`", body = ErrorBody),
        (status = 503, description = "`service/unavailable`: the password-checking queue is full; `Retry-After: 1`", body = ErrorBody),
    ))]
pub async fn password(
    State(state): State<AppState>,
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<StepUpPasswordRequest>,
) -> Result<Json<StepUpTokenResponse>, ApiError> {
    let started = Instant::now();
    let mut errors = FieldErrors::new();
    errors.check(
        "password",
        len_between(&req.password, 1, 256),
        "must be 1-256 characters",
    );
    errors.finish()?;
    let (credential, password_ok) = check_current_password(&state, &user, req.password).await?;
    let latency_ms = i128::try_from(started.elapsed().as_millis()).unwrap_or(i128::MAX);
    let grant = user
        .call(|bearer, reply| StepUpMsg::StepUpPassword {
            bearer,
            credential: credential.clone(),
            password_ok,
            latency_ms,
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok(Json(sign_step_up(&state, &user.tenant, &grant).await?))
}

/// Spec 2.6 StepUpEmailOtpInitiateRequest and StepUpMagicLinkInitiateRequest.
#[derive(Deserialize, ToSchema, Default)]
pub struct StepUpInitiateRequest {
    /// What the user is confirming, shown in the e-mail (at most 80 characters, no control
    /// characters).
    #[schema(max_length = 80, pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$")]
    pub action_hint: Option<String>,
}

/// Spec 2.6 StepUpMagicLinkInitiateRequest, with where the link's hosted page hands its token.
#[derive(Deserialize, ToSchema, Default)]
pub struct StepUpMagicLinkInitiateRequest {
    /// What the user is confirming, shown in the e-mail (at most 80 characters, no control
    /// characters).
    #[schema(max_length = 80, pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$")]
    pub action_hint: Option<String>,
    /// Where the link's hosted page sends the user with `?token=`, for the app to call the
    /// verify route with the session that asked: the tenant's site URL or one of its
    /// redirect URLs, exactly. Default: the site URL.
    #[schema(format = "uri", max_length = 2048)]
    pub redirect_to: Option<String>,
}

/// Spec 4.1: `{status: "sent", email_masked}`.
#[derive(Serialize, ToSchema)]
pub struct StepUpSentResponse {
    /// Always `sent`.
    pub status: &'static str,
    /// The address written to, masked (`a***@example.com`).
    pub email_masked: String,
}

async fn initiate(
    user: UserBearer,
    ctx: tessera_actors::tenant::audit::AuditContext,
    headers: &HeaderMap,
    body: &Bytes,
    link: bool,
) -> Result<Response, ApiError> {
    let req: StepUpMagicLinkInitiateRequest = optional_json(headers, body)?;
    let mut errors = FieldErrors::new();
    if let Some(hint) = &req.action_hint {
        errors.check(
            "action_hint",
            len_between(hint, 0, 80) && !hint.chars().any(char::is_control),
            "must be at most 80 characters, without control characters",
        );
    }
    let redirect_to = if link {
        let edge = user.tenant.edge().await?;
        redirect_to_field(&mut errors, &edge.urls, req.redirect_to.as_deref())
    } else {
        errors.check(
            "redirect_to",
            req.redirect_to.is_none(),
            "only a step-up link takes redirect_to",
        );
        None
    };
    errors.finish()?;
    let masked = user
        .call(|bearer, reply| StepUpMsg::StepUpMailInitiate {
            bearer,
            link,
            action_hint: req.action_hint.clone().filter(|h| !h.trim().is_empty()),
            redirect_to: redirect_to.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(StepUpSentResponse {
            status: "sent",
            email_masked: masked,
        }),
    )
        .into_response())
}

/// Mails a 6-digit code (5 minutes) to the user's confirmed address; a new one replaces the
/// previous. The mail warns not to act on it unless the user asked.
#[utoipa::path(post, path = "/v1/auth/step-up/email-otp/initiate", tag = "step-up",
    security(("api_key" = [], "bearer" = [])),
    request_body(content = Option<StepUpInitiateRequest>, description = "optional"),
    responses(
        (status = 202, description = "Sent", body = StepUpSentResponse),
        (status = 400, description = "`validation/invalid_request`, `step_up/method_unavailable` (no confirmed address)", body = ErrorBody),
        (status = 401, description = "`auth/invalid_token`", body = ErrorBody),
        (status = 429, description = "`auth/rate_limited`: 5 step-up mails per session per 10 minutes", body = ErrorBody),
    ))]
pub async fn email_otp_initiate(
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    initiate(user, ctx, &headers, &body, false).await
}

/// Spec 2.6 StepUpEmailOtpVerifyRequest.
#[derive(Deserialize, ToSchema)]
pub struct StepUpEmailOtpVerifyRequest {
    #[serde(default)]
    #[schema(min_length = 1, max_length = 8, required = true)]
    pub otp: String,
}

/// Checks the e-mailed code from the session that asked for it: AAL 1, AMR `otp`.
#[utoipa::path(post, path = "/v1/auth/step-up/email-otp/verify", tag = "step-up",
    security(("api_key" = [], "bearer" = [])),
    request_body = StepUpEmailOtpVerifyRequest,
    responses(
        (status = 200, description = "A step-up token", body = StepUpTokenResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 401, description = "`invalid_or_expired_token` (wrong, used, expired, or another session's code); `auth/invalid_token`", body = ErrorBody),
        (status = 429, description = "`auth/too_many_attempts`: five wrong codes in a row block the user's codes for a while (15 s doubling to 15 minutes)", body = ErrorBody),
    ))]
pub async fn email_otp_verify(
    State(state): State<AppState>,
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<StepUpEmailOtpVerifyRequest>,
) -> Result<Json<StepUpTokenResponse>, ApiError> {
    let mut errors = FieldErrors::new();
    errors.check("otp", len_between(&req.otp, 1, 8), "must be 1-8 characters");
    errors.finish()?;
    let grant = user
        .call(|bearer, reply| StepUpMsg::StepUpEmailVerify {
            bearer,
            otp: req.otp.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok(Json(sign_step_up(&state, &user.tenant, &grant).await?))
}

/// Mails a single-use step-up link (10 minutes) to the user's confirmed address; a new one
/// replaces the previous. The mail warns not to act on it unless the user asked.
#[utoipa::path(post, path = "/v1/auth/step-up/magic-link/initiate", tag = "step-up",
    security(("api_key" = [], "bearer" = [])),
    request_body(content = Option<StepUpMagicLinkInitiateRequest>, description = "optional"),
    responses(
        (status = 202, description = "Sent; the link is `{accounts_url}/step-up/magic-link?token=...`", body = StepUpSentResponse),
        (status = 400, description = "`validation/invalid_request`, `step_up/method_unavailable` (no confirmed address)", body = ErrorBody),
        (status = 401, description = "`auth/invalid_token`", body = ErrorBody),
        (status = 429, description = "`auth/rate_limited`: 5 step-up mails per session per 10 minutes", body = ErrorBody),
    ))]
pub async fn magic_link_initiate(
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    initiate(user, ctx, &headers, &body, true).await
}

/// Spec 2.6 StepUpMagicLinkVerifyRequest.
#[derive(Deserialize, ToSchema)]
pub struct StepUpMagicLinkVerifyRequest {
    #[serde(default)]
    #[schema(min_length = 1, max_length = 256, required = true)]
    pub token: String,
}

/// Checks a step-up link's token from the session that asked for it: AAL 1, AMR `mca`.
#[utoipa::path(post, path = "/v1/auth/step-up/magic-link/verify", tag = "step-up",
    security(("api_key" = [], "bearer" = [])),
    request_body = StepUpMagicLinkVerifyRequest,
    responses(
        (status = 200, description = "A step-up token", body = StepUpTokenResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 401, description = "`invalid_or_expired_token` (used, expired, or another session's link); `auth/invalid_token`", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: another tenant's link", body = ErrorBody),
    ))]
pub async fn magic_link_verify(
    State(state): State<AppState>,
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<StepUpMagicLinkVerifyRequest>,
) -> Result<Json<StepUpTokenResponse>, ApiError> {
    let mut errors = FieldErrors::new();
    errors.check(
        "token",
        len_between(&req.token, 1, 256),
        "must be 1-256 characters",
    );
    errors.finish()?;
    let grant = user
        .call(|bearer, reply| StepUpMsg::StepUpLinkVerify {
            bearer,
            token: req.token.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok(Json(sign_step_up(&state, &user.tenant, &grant).await?))
}
