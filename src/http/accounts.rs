//! End-user accounts (`/v1/auth/...` with `X-API-Key`): register, verify, login, refresh,
//! logout, me, password reset and change, sessions.
//!
//! Answers never tell whether an address has an account: register answers the same body for
//! a new, an existing and a policy-blocked address; resend and forgot always answer 202; a
//! wrong password and an unknown address are the same 401 after the same argon2 work.

use axum::{
    body::Bytes,
    extract::{Path, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use ractor::RpcReplyPort;
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::{AccountsMsg, GuestsMsg, SessionsMsg};
use tessera_actors::{
    policy::is_weak_password,
    tenant::messages::{Credential, LoginAttempt, Registration, SessionView},
    Password, TenantError, TenantHandle,
};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{
    bearer::{bearer_header, verify, BearerHeader, UserBearer},
    error::{invalid_token, len_between, ApiError, ErrorBody, FieldErrors},
    extract::{ApiJson, ApiTenant, ClientIp, RequestCtx},
    fields::{email_field, is_past_date, redirect_to_field},
    paging::Pagination,
    reauth::{
        check_current_password, login_captcha, password_login, require_step_up, StepUpHeader,
    },
    responses::{login_answer, token_pair, LoginResponse, TokenPair, UserResponse},
};
use crate::app::AppState;

pub(crate) fn password_field(errors: &mut FieldErrors, field: &str, value: &str) {
    errors.check(
        field,
        len_between(value, 12, 128),
        "must be 12-128 characters",
    );
}

pub(crate) fn weak_password() -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "auth/weak_password",
        "this password is too common; choose another",
    )
}

/// A new password the policy takes: [`weak_password`] for one too common.
pub(crate) fn not_weak(password: &str) -> Result<(), ApiError> {
    if is_weak_password(password) {
        return Err(weak_password());
    }
    Ok(())
}

/// Spec 2.2 RegisterRequest.
#[derive(Deserialize, ToSchema)]
pub struct RegisterRequest {
    #[serde(default)]
    #[schema(format = "email", required = true)]
    pub email: String,
    #[serde(default)]
    #[schema(min_length = 12, max_length = 128, required = true)]
    pub password: String,
    /// Must be true.
    #[serde(default)]
    #[schema(schema_with = crate::http::fields::must_be_true, required = true)]
    pub consent: bool,
    /// `YYYY-MM-DD`, a real past date. Stored encrypted; never echoed.
    #[schema(pattern = r"^\d{4}-\d{2}-\d{2}$")]
    pub date_of_birth: Option<String>,
    #[schema(min_length = 1, max_length = 512)]
    pub age_verification_token: Option<String>,
    /// Where the verification page sends the user once the address is confirmed: the
    /// tenant's site URL or one of its redirect URLs, exactly (`settings/urls`). Default: the
    /// site URL.
    #[schema(format = "uri", max_length = 2048)]
    pub redirect_to: Option<String>,
    /// The language of the user's mail: `en`, `pl`, `de`, `fr` or `es`. Default: the best
    /// match of the request's `Accept-Language`, else the tenant's `default_locale`.
    #[schema(pattern = "^(en|pl|de|fr|es)$")]
    pub locale: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct RegisteredUser {
    pub id: Uuid,
    #[schema(format = "email")]
    pub email: Option<String>,
    pub email_verified: bool,
    pub is_anonymous: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// The same body for a new, an existing and a policy-blocked address.
#[derive(Serialize, ToSchema)]
pub struct RegisterResponse {
    pub user: RegisteredUser,
    /// Always true.
    pub verification_sent: bool,
}

/// Registers an end user and sends the verification mail.
#[utoipa::path(post, path = "/v1/auth/register", tag = "accounts",
    security(("api_key" = [])),
    request_body = RegisterRequest,
    responses(
        (status = 403, description = "`auth/sso_required`: the address's domain signs in only through its organization's single sign-on (`details.connection_id`)", body = ErrorBody),
        (status = 200, description = "Registered; the same answer when the address already has an account or is blocked by the tenant's policy. With a guest's `Authorization: Bearer`, the guest is claimed: same user id, sessions and metadata kept", body = RegisterResponse),
        (status = 400, description = "`validation/invalid_request`, `auth/weak_password`", body = ErrorBody),
        (status = 401, description = "`auth/missing_api_key`, `auth/invalid_api_key`, `auth/invalid_token` (the bearer, or a malformed Authorization header)", body = ErrorBody),
        (status = 409, description = "`anonymous/already_claimed`: the bearer's user is not a guest (any more)", body = ErrorBody),
        (status = 429, description = "`auth/rate_limited`: 5 a minute per client address", body = ErrorBody),
    ))]
pub async fn register(
    State(state): State<AppState>,
    ApiTenant(tenant): ApiTenant,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    headers: HeaderMap,
    ApiJson(req): ApiJson<RegisterRequest>,
) -> Result<Json<RegisterResponse>, ApiError> {
    // With a guest's bearer, the registration claims that guest; a malformed Authorization
    // header is refused like an invalid token, never taken as "no guest".
    let guest = match bearer_header(&headers) {
        BearerHeader::Absent => None,
        BearerHeader::Malformed => return Err(invalid_token()),
        BearerHeader::Token(token) => {
            let keys = tenant.keys().await?;
            Some(verify(&state, &tenant, &keys, token)?.1)
        }
    };
    let mut errors = FieldErrors::new();
    let email = email_field(&mut errors, &req.email);
    password_field(&mut errors, "password", &req.password);
    errors.check("consent", req.consent, "must be true");
    if let Some(dob) = &req.date_of_birth {
        errors.check(
            "date_of_birth",
            is_past_date(dob),
            "must be a real past date, YYYY-MM-DD",
        );
    }
    if let Some(t) = &req.age_verification_token {
        errors.check(
            "age_verification_token",
            len_between(t, 1, 512),
            "must be 1-512 characters",
        );
    }
    let edge = tenant.edge().await?;
    let redirect_to = redirect_to_field(&mut errors, &edge.urls, req.redirect_to.as_deref());
    if let Some(l) = &req.locale {
        errors.check(
            "locale",
            crate::i18n::LOCALES.contains(&l.as_str()),
            "must be one of en, pl, de, fr, es",
        );
    }
    errors.finish()?;
    // The body's choice, else the browser's languages; else the tenant's default applies.
    let locale = req.locale.clone().or_else(|| {
        let accept = headers
            .get(axum::http::header::ACCEPT_LANGUAGE)
            .and_then(|v| v.to_str().ok())?;
        let chosen = crate::i18n::negotiate(&[], Some(accept), "");
        (!chosen.is_empty()).then(|| chosen.to_owned())
    });
    let email = email.unwrap_or_default();
    not_weak(&req.password)?;
    tenant
        .call(|reply| AccountsMsg::RegisterAdmit { ip, reply })
        .await?;
    let password_hash = state.hasher.hash(&Password::new(req.password)).await?;
    let registration = Registration {
        email,
        password_hash,
        date_of_birth: req.date_of_birth,
        age_verification_token: req.age_verification_token,
        redirect_to,
        locale,
    };
    let user = match guest {
        None => {
            tenant
                .call(|reply| AccountsMsg::Register {
                    registration: registration.clone(),
                    ctx: ctx.clone(),
                    reply,
                })
                .await?
        }
        Some(bearer) => {
            tenant
                .call(|reply| GuestsMsg::Claim {
                    bearer,
                    registration: registration.clone(),
                    ctx: ctx.clone(),
                    reply,
                })
                .await?
        }
    };
    Ok(Json(RegisterResponse {
        user: RegisteredUser {
            id: user.id,
            email: user.email,
            email_verified: user.email_verified,
            is_anonymous: user.is_anonymous,
            created_at: user.created_at,
        },
        verification_sent: true,
    }))
}

/// Spec 2.2 VerifyEmailRequest (and the token of a reset link, below).
#[derive(Deserialize, ToSchema)]
pub struct VerifyEmailRequest {
    #[serde(default)]
    #[schema(min_length = 1, required = true)]
    pub token: String,
}

#[derive(Serialize, ToSchema)]
pub struct VerifyEmailResponse {
    pub verified: bool,
}

pub(crate) fn token_field(errors: &mut FieldErrors, token: &str) {
    errors.check(
        "token",
        len_between(token, 1, 512),
        "must be 1-512 characters",
    );
}

/// Confirms an address with the token of its verification link (single use, 24 hours).
#[utoipa::path(post, path = "/v1/auth/verify-email", tag = "accounts",
    security(("api_key" = [])),
    request_body = VerifyEmailRequest,
    responses(
        (status = 200, description = "Confirmed", body = VerifyEmailResponse),
        (status = 400, description = "`validation/invalid_request`, `auth/invalid_or_expired_token`", body = ErrorBody),
    ))]
pub async fn verify_email(
    ApiTenant(tenant): ApiTenant,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<VerifyEmailRequest>,
) -> Result<Json<VerifyEmailResponse>, ApiError> {
    let mut errors = FieldErrors::new();
    token_field(&mut errors, &req.token);
    errors.finish()?;
    tenant
        .call(|reply| AccountsMsg::VerifyEmail {
            token: req.token.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok(Json(VerifyEmailResponse { verified: true }))
}

/// Spec 2.2 ResendVerificationRequest and ForgotPasswordRequest.
#[derive(Deserialize, ToSchema)]
pub struct EmailRequest {
    #[serde(default)]
    #[schema(format = "email", required = true)]
    pub email: String,
    /// Where the link's hosted page sends the user afterwards: the tenant's site URL or one
    /// of its redirect URLs, exactly. Default: the site URL.
    #[schema(format = "uri", max_length = 2048)]
    pub redirect_to: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct Accepted {
    /// Always true: the answer does not tell whether the address has an account.
    pub accepted: bool,
}

/// Validates the address, sends the command built for it, and answers 202 whatever happened.
async fn accept_email(
    tenant: &TenantHandle,
    req: EmailRequest,
    build: impl Fn(String, Option<String>, RpcReplyPort<Result<(), TenantError>>) -> AccountsMsg,
) -> Result<Response, ApiError> {
    let mut errors = FieldErrors::new();
    let email = email_field(&mut errors, &req.email);
    let edge = tenant.edge().await?;
    let redirect_to = redirect_to_field(&mut errors, &edge.urls, req.redirect_to.as_deref());
    errors.finish()?;
    let email = email.unwrap_or_default();
    tenant
        .call(|reply| build(email.clone(), redirect_to.clone(), reply))
        .await?;
    Ok((StatusCode::ACCEPTED, Json(Accepted { accepted: true })).into_response())
}

/// Sends a new verification link when the address has an unverified account. Always 202.
#[utoipa::path(post, path = "/v1/auth/resend-verification", tag = "accounts",
    security(("api_key" = [])),
    request_body = EmailRequest,
    responses(
        (status = 202, description = "Accepted, whether or not the address has an account", body = Accepted),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
    ))]
pub async fn resend_verification(
    ApiTenant(tenant): ApiTenant,
    ApiJson(req): ApiJson<EmailRequest>,
) -> Result<Response, ApiError> {
    accept_email(&tenant, req, |email, redirect_to, reply| {
        AccountsMsg::ResendVerification {
            email,
            redirect_to,
            reply,
        }
    })
    .await
}

/// Spec 2.2 LoginRequest.
#[derive(Deserialize, ToSchema)]
pub struct LoginRequest {
    #[serde(default)]
    #[schema(format = "email", required = true)]
    pub email: String,
    #[serde(default)]
    #[schema(min_length = 12, max_length = 128, required = true)]
    pub password: String,
    /// The `device_token` an earlier sign-in to this account answered on this device: with
    /// it, the account's lockout does not apply (the device's own, stricter count does).
    #[schema(max_length = 256)]
    pub device_token: Option<String>,
    /// A solved CAPTCHA's token, after an answer `auth/captcha_required` (when the server
    /// verifies CAPTCHAs).
    #[schema(max_length = 2048)]
    pub captcha_token: Option<String>,
    /// An organization of the user's: the session works in it from the start (its access
    /// tokens carry `org_id`, `org_role`, `org_permissions`), as after a switch.
    #[schema(format = "uuid")]
    pub organization_id: Option<String>,
}

/// Password login.
#[utoipa::path(post, path = "/v1/auth/login", tag = "accounts",
    security(("api_key" = [])),
    request_body = LoginRequest,
    responses(
        (status = 200, description = "Signed in (with `mfa_enrollment_required_by` during the tenant's MFA grace period, and a new `device_token` unless a valid one was sent); or, for a user with MFA, `{mfa_required, mfa_challenge_token, available_methods}`; or, past the grace period, `{mfa_enrollment_required, enrollment_token}`", body = LoginResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 401, description = "`auth/invalid_credentials`: wrong password or unknown address, alike", body = ErrorBody),
        (status = 403, description = "`auth/email_not_verified`; `auth/sso_required`: the address's domain signs in only through its organization's single sign-on", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: `organization_id` names no organization of the user's (only once the password is right)", body = ErrorBody),
        (status = 400, description = "`auth/captcha_failed`: the `captcha_token` was refused by the verifier", body = ErrorBody),
        (status = 429, description = "`auth/too_many_attempts` with `Retry-After`: 5 consecutive failures of this account from this address, 10 from any address (each block 15 s, doubling to 15 minutes), or `security.login_failures_per_address` failures from this address in 15 minutes (100 by default) when no CAPTCHA is configured; with a valid `device_token`, 3 consecutive failures of that device instead of the account's and address's rules. `auth/captcha_required`: past the address's count with a CAPTCHA configured: solve it and send `captcha_token`", body = ErrorBody),
        (status = 503, description = "`service/unavailable`: every core is checking passwords and the queue is full (`security.hashing_queue_max`); `Retry-After: 1`", body = ErrorBody),
    ))]
pub async fn login(
    State(state): State<AppState>,
    ApiTenant(tenant): ApiTenant,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<LoginRequest>,
) -> Result<Json<LoginResponse>, ApiError> {
    let mut errors = FieldErrors::new();
    let email = email_field(&mut errors, &req.email);
    password_field(&mut errors, "password", &req.password);
    errors.check(
        "device_token",
        req.device_token.as_ref().is_none_or(|t| t.len() <= 256),
        "must be at most 256 characters",
    );
    errors.check(
        "captcha_token",
        req.captcha_token.as_ref().is_none_or(|t| t.len() <= 2048),
        "must be at most 2048 characters",
    );
    let organization = req
        .organization_id
        .as_deref()
        .map(uuid::Uuid::try_parse)
        .transpose();
    errors.check(
        "organization_id",
        organization.is_ok(),
        "an organization's id",
    );
    errors.finish()?;
    let captcha = login_captcha(&state, req.captcha_token.as_deref(), ip).await?;
    let attempt = LoginAttempt {
        email: email.unwrap_or_default(),
        ip,
        device_token: req.device_token.filter(|t| !t.is_empty()),
        captcha,
        organization: organization.ok().flatten(),
    };
    let password = Password::new(req.password);
    let signed = password_login(&state, &tenant, attempt, password, &ctx).await?;
    let mut answer = login_answer(&state, &tenant, signed.outcome).await?;
    if let LoginResponse::Tokens(pair) = &mut answer {
        pair.device_token = signed.device_token;
    }
    Ok(Json(answer))
}

/// Spec 2.2 RefreshTokenRequest.
#[derive(Deserialize, ToSchema)]
pub struct RefreshTokenRequest {
    #[serde(default)]
    #[schema(min_length = 1, required = true)]
    pub refresh_token: String,
}

/// Rotates a refresh token: single use; the previous token presented again within
/// `tokens.refresh_reuse_grace_secs` answers the current pair, later it revokes the session.
#[utoipa::path(post, path = "/v1/auth/refresh", tag = "accounts",
    security(("api_key" = [])),
    request_body = RefreshTokenRequest,
    responses(
        (status = 200, description = "A new pair", body = TokenPair),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 401, description = "`auth/invalid_refresh_token`; `auth/refresh_token_reused` (the session is revoked)", body = ErrorBody),
    ))]
pub async fn refresh(
    State(state): State<AppState>,
    ApiTenant(tenant): ApiTenant,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<RefreshTokenRequest>,
) -> Result<Json<TokenPair>, ApiError> {
    let mut errors = FieldErrors::new();
    errors.check(
        "refresh_token",
        !req.refresh_token.is_empty(),
        "must not be empty",
    );
    errors.finish()?;
    let grant = tenant
        .call(|reply| SessionsMsg::Refresh {
            token: req.refresh_token.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok(Json(token_pair(&state, &tenant, grant).await?))
}

/// The signed-in user.
#[utoipa::path(get, path = "/v1/auth/me", tag = "accounts",
    security(("api_key" = [], "bearer" = [])),
    responses(
        (status = 200, description = "The user record", body = UserResponse),
        (status = 401, description = "`auth/missing_token`, `auth/invalid_token` (also for a revoked session)", body = ErrorBody),
    ))]
pub async fn me(user: UserBearer) -> Result<Json<UserResponse>, ApiError> {
    let view = user
        .call(|bearer, reply| SessionsMsg::Authenticate { bearer, reply })
        .await?;
    Ok(Json(view))
}

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct LogoutRequest {
    /// `local` (default): this session; `global`: every session of the user.
    #[schema(pattern = "^(local|global)$")]
    pub scope: Option<String>,
}

/// Ends the session (or, with `global`, every session of the user).
#[utoipa::path(post, path = "/v1/auth/logout", tag = "accounts",
    security(("api_key" = [], "bearer" = [])),
    request_body(content = Option<LogoutRequest>, description = "optional"),
    responses(
        (status = 204, description = "Signed out"),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 401, description = "`auth/missing_token`, `auth/invalid_token`", body = ErrorBody),
    ))]
pub async fn logout(
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
    headers: HeaderMap,
    body: Bytes,
) -> Result<StatusCode, ApiError> {
    let req: LogoutRequest = super::extract::optional_json(&headers, &body)?;
    let global = match req.scope.as_deref() {
        None | Some("local") => false,
        Some("global") => true,
        Some(_) => return Err(ApiError::invalid_field("scope", "must be local or global")),
    };
    user.call(|bearer, reply| SessionsMsg::Logout {
        bearer,
        global,
        ctx: ctx.clone(),
        reply,
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Serialize, ToSchema)]
pub struct SessionResponse {
    pub id: Uuid,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub last_active_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    /// `AAL1` or `AAL2`, as in the session's access tokens.
    pub aal: String,
    pub amr: Vec<String>,
    /// The session of the token that asked.
    pub current: bool,
}

impl From<SessionView> for SessionResponse {
    fn from(s: SessionView) -> Self {
        SessionResponse {
            id: s.session.id,
            created_at: s.session.created_at,
            last_active_at: s.session.last_active_at,
            expires_at: s.session.expires_at,
            aal: format!("AAL{}", s.session.aal),
            amr: s.session.amr,
            current: s.current,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct SessionList {
    pub data: Vec<SessionResponse>,
    /// One page holds every live session.
    pub pagination: Pagination,
}

/// The user's live sessions, newest first.
#[utoipa::path(get, path = "/v1/auth/sessions", tag = "accounts",
    security(("api_key" = [], "bearer" = [])),
    responses(
        (status = 200, description = "The sessions", body = SessionList),
        (status = 401, description = "`auth/missing_token`, `auth/invalid_token`", body = ErrorBody),
    ))]
pub async fn sessions(user: UserBearer) -> Result<Json<SessionList>, ApiError> {
    let list = user
        .call(|bearer, reply| SessionsMsg::ListSessions { bearer, reply })
        .await?;
    Ok(Json(SessionList {
        data: list.into_iter().map(Into::into).collect(),
        pagination: Pagination::next(None),
    }))
}

/// Ends one of the user's sessions; its tokens stop working at once.
#[utoipa::path(delete, path = "/v1/auth/sessions/{id}", tag = "accounts",
    security(("api_key" = [], "bearer" = [])),
    params(("id" = Uuid, Path, description = "A session id from the list")),
    responses(
        (status = 204, description = "Revoked"),
        (status = 401, description = "`auth/missing_token`, `auth/invalid_token`", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: not one of the user's sessions (an id that is not a UUID is answered alike)", body = ErrorBody),
    ))]
pub async fn revoke_session(
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    // An id that is not a UUID names no session: it goes to the actor as the nil UUID (never
    // a session's id), so the answer is the one for an unknown session in every respect,
    // including the check that the caller's own session is alive.
    let session_id: Uuid = id.parse().unwrap_or(Uuid::nil());
    user.call(|bearer, reply| SessionsMsg::RevokeSession {
        bearer,
        session_id,
        ctx: ctx.clone(),
        reply,
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Sends a password-reset link (single use, 1 hour) when the address has an account.
/// Always 202.
#[utoipa::path(post, path = "/v1/auth/forgot-password", tag = "accounts",
    security(("api_key" = [])),
    request_body = EmailRequest,
    responses(
        (status = 202, description = "Accepted, whether or not the address has an account", body = Accepted),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
    ))]
pub async fn forgot_password(
    ApiTenant(tenant): ApiTenant,
    ApiJson(req): ApiJson<EmailRequest>,
) -> Result<Response, ApiError> {
    accept_email(&tenant, req, |email, redirect_to, reply| {
        AccountsMsg::ForgotPassword {
            email,
            redirect_to,
            reply,
        }
    })
    .await
}

/// Spec 2.2 ResetPasswordRequest.
#[derive(Deserialize, ToSchema)]
pub struct ResetPasswordRequest {
    #[serde(default)]
    #[schema(min_length = 1, required = true)]
    pub token: String,
    #[serde(default)]
    #[schema(min_length = 12, max_length = 128, required = true)]
    pub password: String,
}

#[derive(Serialize, ToSchema)]
pub struct ResetPasswordResponse {
    pub reset: bool,
}

/// Sets a new password with a reset link; every session of the user ends.
#[utoipa::path(post, path = "/v1/auth/reset-password", tag = "accounts",
    security(("api_key" = [])),
    request_body = ResetPasswordRequest,
    responses(
        (status = 200, description = "Password set", body = ResetPasswordResponse),
        (status = 400, description = "`validation/invalid_request`, `auth/weak_password`, `auth/invalid_or_expired_token`", body = ErrorBody),
    ))]
pub async fn reset_password(
    State(state): State<AppState>,
    ApiTenant(tenant): ApiTenant,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<ResetPasswordRequest>,
) -> Result<Json<ResetPasswordResponse>, ApiError> {
    let mut errors = FieldErrors::new();
    token_field(&mut errors, &req.token);
    password_field(&mut errors, "password", &req.password);
    errors.finish()?;
    not_weak(&req.password)?;
    // The link first: a guessed token must not cost an argon2 hash.
    tenant
        .call(|reply| AccountsMsg::CheckResetLink {
            token: req.token.clone(),
            reply,
        })
        .await?;
    let password_hash = state.hasher.hash(&Password::new(req.password)).await?;
    tenant
        .call(|reply| AccountsMsg::ResetPassword {
            token: req.token.clone(),
            password_hash: password_hash.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok(Json(ResetPasswordResponse { reset: true }))
}

/// Spec 2.2 ChangePasswordRequest.
#[derive(Deserialize, ToSchema)]
pub struct ChangePasswordRequest {
    #[serde(default)]
    #[schema(min_length = 1, required = true)]
    pub current_password: String,
    #[serde(default)]
    #[schema(min_length = 12, max_length = 128, required = true)]
    pub new_password: String,
}

#[derive(Serialize, ToSchema)]
pub struct ChangePasswordResponse {
    pub changed: bool,
}

/// Changes the signed-in user's password; the user's other sessions end.
#[utoipa::path(post, path = "/v1/auth/change-password", tag = "accounts",
    security(("api_key" = [], "bearer" = [])),
    request_body = ChangePasswordRequest,
    responses(
        (status = 200, description = "Changed", body = ChangePasswordResponse),
        (status = 400, description = "`validation/invalid_request`, `auth/weak_password`", body = ErrorBody),
        (status = 401, description = "`auth/invalid_credentials` (wrong current password), `auth/missing_token`, `auth/invalid_token`", body = ErrorBody),
        (status = 429, description = "`auth/too_many_attempts`", body = ErrorBody),
    ))]
pub async fn change_password(
    State(state): State<AppState>,
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<ChangePasswordRequest>,
) -> Result<Json<ChangePasswordResponse>, ApiError> {
    let mut errors = FieldErrors::new();
    errors.check(
        "current_password",
        len_between(&req.current_password, 1, 1024),
        "must be 1-1024 characters",
    );
    password_field(&mut errors, "new_password", &req.new_password);
    errors.finish()?;
    not_weak(&req.new_password)?;
    let (credential, current_ok) =
        check_current_password(&state, &user, req.current_password).await?;
    let new_hash = if current_ok {
        state.hasher.hash(&Password::new(req.new_password)).await?
    } else {
        String::new()
    };
    let credential: Credential = credential;
    user.call(|bearer, reply| AccountsMsg::ChangePassword {
        bearer,
        credential: credential.clone(),
        current_ok,
        new_hash: new_hash.clone(),
        ctx: ctx.clone(),
        reply,
    })
    .await?;
    Ok(Json(ChangePasswordResponse { changed: true }))
}

/// A change of the signed-in user's address.
#[derive(Deserialize, ToSchema)]
pub struct ChangeEmailRequest {
    /// The new address.
    #[serde(default)]
    #[schema(format = "email", required = true)]
    pub email: String,
}

/// Asks to move the signed-in user's account to another address (step-up gated): the new
/// address gets a single-use link (1 hour; a password change kills it) whose hosted page
/// (`{accounts_url}/confirm-email`) moves the account, confirmed; the current address is told.
/// An address another account holds gets a mail saying so instead, and one the tenant's
/// e-mail policy refuses gets nothing: the answer is 202 every time. At most one such mail a
/// minute per account.
#[utoipa::path(post, path = "/v1/auth/change-email", tag = "accounts",
    security(("api_key" = [], "bearer" = [])),
    params(StepUpHeader),
    request_body = ChangeEmailRequest,
    responses(
        (status = 202, description = "Accepted, whatever the address", body = Accepted),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 401, description = "`account_linking/mfa_required` (the step-up gate) with `WWW-Authenticate: Bearer error=\"insufficient_user_authentication\"` and the methods in `details`; `invalid_or_expired_token`; `auth/missing_token`, `auth/invalid_token`", body = ErrorBody),
        (status = 403, description = "`auth/anonymous_not_allowed`: a guest has no address to change", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: another tenant's step-up token", body = ErrorBody),
    ))]
pub async fn change_email(
    State(state): State<AppState>,
    user: UserBearer,
    step_up: StepUpHeader,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<ChangeEmailRequest>,
) -> Result<Response, ApiError> {
    let mut errors = FieldErrors::new();
    let email = email_field(&mut errors, &req.email);
    errors.finish()?;
    let new_email = email.unwrap_or_default();
    require_step_up(&state, &user, &step_up).await?;
    user.call(|bearer, reply| AccountsMsg::ChangeEmail {
        bearer,
        new_email: new_email.clone(),
        ctx: ctx.clone(),
        reply,
    })
    .await?;
    Ok((StatusCode::ACCEPTED, Json(Accepted { accepted: true })).into_response())
}
