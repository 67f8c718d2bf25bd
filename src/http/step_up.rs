//! Step-up re-authentication (spec 4.1 and 5) and the gate that protects sensitive routes.
//!
//! A signed-in user proves again who they are and receives a step-up token: an ES256 JWT
//! (`typ` `step-up+jwt`, audience `<slug>/step-up`) carrying `aal`, `acr` and `amr`, bound to
//! the session and single-use. A gated route calls [`require_step_up`]: without the
//! `X-Step-Up-Token` header it answers the RFC 9470 challenge; with one it verifies the
//! signature here and has the tenant actor consume the token (atomically, once).

use std::time::Instant;

use axum::{
    body::Bytes,
    extract::{Path, State},
    http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde::{Deserialize, Serialize};
use tessera_actors::{
    tenant::{
        keys::StepUpClaims,
        messages::{StepUpGrant, StepUpUse},
    },
    TenantHandle, TenantMsg,
};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::{
    accounts::check_current_password,
    bearer::{issuer, UserBearer},
    error::{len_between, ApiError, ErrorBody, FieldErrors},
    extract::{optional_json, ApiJson, RequestCtx},
};
use crate::app::{App, AppState};

/// The header a gated request carries its step-up token in.
pub const STEP_UP_HEADER: HeaderName = HeaderName::from_static("x-step-up-token");

/// The audience of a tenant's step-up tokens: never the access tokens' audience.
fn step_up_audience(slug: &str) -> String {
    format!("{slug}/step-up")
}

/// Spec 2.6: the step-up token answer.
#[derive(Serialize, ToSchema)]
pub struct StepUpTokenResponse {
    /// A JWT: `aal` (1 or 2), `acr` (`aal1`/`aal2`), `amr`, `sid`; single-use, for this
    /// session only. Send it as `X-Step-Up-Token` on the gated request.
    pub step_up_token: String,
    /// Always `StepUp`.
    pub token_type: &'static str,
    pub expires_in: i64,
}

/// Signs the step-up token of `grant`.
pub async fn sign_step_up(
    app: &App,
    tenant: &TenantHandle,
    grant: &StepUpGrant,
) -> Result<StepUpTokenResponse, ApiError> {
    let keys = tenant.keys().await?;
    let aal = grant.aal.clamp(1, 2);
    let claims = StepUpClaims {
        iss: issuer(app, &tenant.slug),
        sub: grant.user_id.to_string(),
        aud: step_up_audience(&tenant.slug),
        exp: grant.expires_at.unix_timestamp(),
        iat: grant.issued_at.unix_timestamp(),
        jti: grant.jti.to_string(),
        sid: grant.session_id.to_string(),
        tid: tenant.id.to_string(),
        aal,
        acr: format!("aal{aal}"),
        amr: grant.amr.clone(),
    };
    let token = keys.sign_step_up(&claims).map_err(ApiError::internal)?;
    Ok(StepUpTokenResponse {
        step_up_token: token,
        token_type: "StepUp",
        // The token's own lifetime, `exp - iat`: it was issued an instant ago.
        expires_in: (claims.exp - claims.iat).max(0),
    })
}

/// 401 `invalid_or_expired_token` (spec 7).
fn invalid_step_up() -> ApiError {
    tessera_actors::TenantError::InvalidChallenge.into()
}

/// The `tid` claim of a token whose signature did not verify here: only to tell another
/// tenant's token (404, spec 5 rule 2) from a bad one (401). It decides nothing else.
fn unverified_tenant(token: &str) -> Option<String> {
    let payload = token.split('.').nth(1)?;
    let bytes = URL_SAFE_NO_PAD.decode(payload).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    v.get("tid")?.as_str().map(str::to_owned)
}

/// The step-up gate: passes (consuming the token) when the request carries a valid step-up
/// token of the caller's session; otherwise answers 401 with the RFC 9470 challenge and the
/// methods the user can step up with. Every gated route calls this first.
pub async fn require_step_up(
    app: &App,
    user: &UserBearer,
    headers: &HeaderMap,
) -> Result<StepUpUse, ApiError> {
    let tenant = &user.tenant;
    let bearer = user.bearer;
    // A header that is there but unreadable or blank is a bad token, not a missing one.
    let presented = headers
        .get(&STEP_UP_HEADER)
        .map(|v| v.to_str().map(str::trim).unwrap_or(""));
    if presented == Some("") {
        return Err(invalid_step_up());
    }
    let Some(token) = presented else {
        let challenge = tenant
            .call(|reply| TenantMsg::StepUpGate { bearer, reply })
            .await?;
        let p = &app.config.tokens.acr_urn_prefix;
        let www = format!(
            "Bearer error=\"insufficient_user_authentication\", acr_values=\"{p}:aal1 {p}:aal2\""
        );
        let www = HeaderValue::from_str(&www).map_err(ApiError::internal)?;
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "account_linking/mfa_required",
            "this action needs a fresh re-authentication: step up with one of the available methods and send the step-up token in X-Step-Up-Token",
        )
        .with_details(serde_json::json!({
            "next_action": "verify_mfa",
            "mfa_challenge_token": challenge.mfa_challenge_token,
            "available_methods": challenge.available_methods,
        }))
        .with_header(header::WWW_AUTHENTICATE, www));
    };
    let keys = tenant.keys().await?;
    let now = OffsetDateTime::now_utc().unix_timestamp();
    let claims = match keys.verify_step_up(
        token,
        &issuer(app, &tenant.slug),
        &step_up_audience(&tenant.slug),
        now,
    ) {
        Ok(c) => c,
        Err(_) => {
            return Err(match unverified_tenant(token) {
                Some(tid) if tid != tenant.id.to_string() => ApiError::not_found("step-up token"),
                _ => invalid_step_up(),
            });
        }
    };
    let bound = claims.tid == tenant.id.to_string()
        && claims.sid == bearer.session_id.to_string()
        && claims.sub == bearer.user_id.to_string();
    let Some(jti) = claims.jti.parse().ok().filter(|_| bound) else {
        return Err(invalid_step_up());
    };
    Ok(tenant
        .call(|reply| TenantMsg::ConsumeStepUp { bearer, jti, reply })
        .await?)
}

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
    let bearer = user.bearer;
    let (credential, password_ok) = check_current_password(&state, &user, req.password).await?;
    let latency_ms = i128::try_from(started.elapsed().as_millis()).unwrap_or(i128::MAX);
    let grant = user
        .tenant
        .call(|reply| TenantMsg::StepUpPassword {
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
    let req: StepUpInitiateRequest = optional_json(headers, body)?;
    if let Some(hint) = &req.action_hint {
        let mut errors = FieldErrors::new();
        errors.check(
            "action_hint",
            len_between(hint, 0, 80) && !hint.chars().any(char::is_control),
            "must be at most 80 characters, without control characters",
        );
        errors.finish()?;
    }
    let bearer = user.bearer;
    let masked = user
        .tenant
        .call(|reply| TenantMsg::StepUpMailInitiate {
            bearer,
            link,
            action_hint: req.action_hint.clone().filter(|h| !h.trim().is_empty()),
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
    let bearer = user.bearer;
    let grant = user
        .tenant
        .call(|reply| TenantMsg::StepUpEmailVerify {
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
    request_body(content = Option<StepUpInitiateRequest>, description = "optional"),
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
    let bearer = user.bearer;
    let grant = user
        .tenant
        .call(|reply| TenantMsg::StepUpLinkVerify {
            bearer,
            token: req.token.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok(Json(sign_step_up(&state, &user.tenant, &grant).await?))
}

/// Starts linking a social provider to the signed-in user: gated by step-up (spec 4.1).
/// No social provider can be configured yet, so past the gate the answer is
/// `account_linking/provider_not_configured`.
#[utoipa::path(post, path = "/v1/users/me/link/{provider}", tag = "step-up",
    security(("api_key" = [], "bearer" = [])),
    params(
        ("provider" = String, Path, description = "Lowercase provider name"),
        ("X-Step-Up-Token" = Option<String>, Header, description = "A step-up token of this session"),
    ),
    responses(
        (status = 400, description = "`account_linking/provider_not_configured` (after the gate passed and consumed the token)", body = ErrorBody),
        (status = 401, description = "`account_linking/mfa_required` with `WWW-Authenticate: Bearer error=\"insufficient_user_authentication\", acr_values=\"...\"` and `details` {next_action, mfa_challenge_token, available_methods}; `invalid_or_expired_token`; `auth/invalid_token`", body = ErrorBody),
        (status = 403, description = "`account_linking/disabled`: the tenant does not allow explicit linking", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: another tenant's step-up token", body = ErrorBody),
    ))]
pub async fn link_provider(
    State(state): State<AppState>,
    user: UserBearer,
    headers: HeaderMap,
    Path(provider): Path<String>,
) -> Result<Response, ApiError> {
    let overview = user
        .tenant
        .call(|reply| TenantMsg::GetOverview { reply })
        .await?;
    if !overview.settings.security.explicit_account_linking_enabled {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "account_linking/disabled",
            "this tenant does not allow linking more sign-in providers",
        ));
    }
    require_step_up(&state, &user, &headers).await?;
    let shown: String = provider.chars().take(32).collect();
    Err(ApiError::new(
        StatusCode::BAD_REQUEST,
        "account_linking/provider_not_configured",
        format!("no sign-in provider {shown:?} is configured for this tenant"),
    ))
}
