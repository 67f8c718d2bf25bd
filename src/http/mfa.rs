//! MFA routes (`/v1/auth/mfa/...`): TOTP setup and confirmation, the second step of a login
//! (or of a TOTP step-up), disabling MFA and new recovery codes. The login answers that MFA
//! and the tenant's MFA policy add are in `responses.rs`.
//!
//! Passwords are checked off the tenant actor (`reauth::check_current_password`); codes are
//! checked by the actor, which owns the seeds, the recovery codes and the single-use
//! challenges.

use axum::http::StatusCode;
use tessera_actors::MfaError;

use axum::{
    extract::{FromRequestParts, State},
    http::{request::Parts, HeaderMap},
    Json,
};
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::MfaMsg;
use tessera_actors::{
    tenant::{
        credentials::Credential,
        messages::{Bearer, MfaManage, MfaVerified, MfaWho},
    },
    TenantHandle,
};
use utoipa::ToSchema;

use super::{
    bearer::{bearer_header, verify, BearerHeader, UserBearer},
    error::{invalid_token, len_between, ApiError, ErrorBody, FieldErrors},
    extract::{ApiJson, ApiTenant, RequestCtx},
    fields::six_digits,
    new_credential::{require_confirmed_address, signed_in},
    reauth::{
        check_current_password, require_step_up, sign_step_up, StepUpHeader, StepUpTokenResponse,
    },
    responses::{resume, token_pair, TokenPair},
};
use crate::app::AppState;

/// The caller of an MFA setup route: a signed-in user (an access token) or the holder of an
/// enrolment token (opaque, no dots).
pub struct MfaCaller {
    pub tenant: TenantHandle,
    pub who: MfaWho,
    /// The signed-in user, when the caller is one.
    pub user: Option<UserBearer>,
}

impl FromRequestParts<AppState> for MfaCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token = match bearer_header(&parts.headers) {
            BearerHeader::Token(t) => Some(t.to_owned()),
            BearerHeader::Absent | BearerHeader::Malformed => None,
        };
        match token {
            // Anything else (no token, a malformed header, a JWT) is refused or verified by
            // `UserBearer`.
            Some(t) if !t.contains('.') => {
                let ApiTenant(tenant) = ApiTenant::from_request_parts(parts, state).await?;
                if t.len() > 256 {
                    return Err(invalid_token());
                }
                Ok(MfaCaller {
                    tenant,
                    who: MfaWho::Enrollment(t),
                    user: None,
                })
            }
            _ => {
                let user = UserBearer::from_request_parts(parts, state).await?;
                Ok(MfaCaller {
                    tenant: user.tenant.clone(),
                    who: MfaWho::Session(user.bearer),
                    user: Some(user),
                })
            }
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct MfaSetupResponse {
    /// The TOTP seed, base32 without padding, for manual entry.
    pub secret: String,
    /// `otpauth://totp/...` for a QR code: SHA-1, 6 digits, 30 seconds, the tenant as issuer.
    pub otpauth_uri: String,
}

/// Starts TOTP setup: a new secret, pending until confirmed with a code. With an access
/// token the request is step-up gated (`X-Step-Up-Token`): whoever holds a stolen access
/// token must not be able to bind their own authenticator to the account. An enrolment token
/// (a password login just now) needs none.
#[utoipa::path(post, path = "/v1/auth/mfa/setup", tag = "mfa",
    security(("api_key" = [], "bearer" = [])),
    params(("X-Step-Up-Token" = Option<String>, Header, description = "A step-up token of this session (not with an enrolment token)")),
    responses(
        (status = 200, description = "The pending secret; calling again replaces it", body = MfaSetupResponse),
        (status = 401, description = "`account_linking/mfa_required` (the step-up challenge, see the step-up gate), `invalid_or_expired_token`, `auth/missing_token`, `auth/invalid_token` (an access token or an enrolment token)", body = ErrorBody),
        (status = 403, description = "`mfa/unavailable`: guests cannot set up MFA; `auth/email_unconfirmed`: the account's address is not confirmed (no authenticator until it is)", body = ErrorBody),
        (status = 409, description = "`mfa/already_enabled`", body = ErrorBody),
    ))]
pub async fn setup(
    State(state): State<AppState>,
    caller: MfaCaller,
    step_up: StepUpHeader,
) -> Result<Json<MfaSetupResponse>, ApiError> {
    if let Some(user) = &caller.user {
        // Refusals that need no step-up come first.
        let me = signed_in(user).await?;
        if me.is_anonymous {
            return Err(tessera_actors::TenantError::Mfa(MfaError::Unavailable).into());
        }
        if me.mfa_enabled {
            return Err(tessera_actors::TenantError::Mfa(MfaError::AlreadyEnabled).into());
        }
        require_confirmed_address(&me, Credential::Totp)?;
        require_step_up(&state, user, &step_up).await?;
    }
    let who = caller.who;
    let secret = caller
        .tenant
        .call(|reply| MfaMsg::MfaSetup {
            who: who.clone(),
            reply,
        })
        .await?;
    Ok(Json(MfaSetupResponse {
        secret: secret.secret,
        otpauth_uri: secret.otpauth_uri,
    }))
}

/// Spec 2.3 MfaVerifySetupRequest.
#[derive(Deserialize, ToSchema)]
pub struct MfaVerifySetupRequest {
    #[serde(default)]
    #[schema(pattern = r"^\d{6}$", required = true)]
    pub code: String,
}

#[derive(Serialize, ToSchema)]
pub struct RecoveryCodesResponse {
    /// Ten single-use codes, shown this once; each replaces a TOTP code once.
    pub recovery_codes: Vec<String>,
}

/// Confirms the pending secret with a current code: MFA is on, and the recovery codes are
/// answered once.
#[utoipa::path(post, path = "/v1/auth/mfa/verify-setup", tag = "mfa",
    security(("api_key" = [], "bearer" = [])),
    request_body = MfaVerifySetupRequest,
    responses(
        (status = 200, description = "MFA enabled", body = RecoveryCodesResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 401, description = "`mfa/invalid_code`, `auth/invalid_token`", body = ErrorBody),
        (status = 403, description = "`auth/email_unconfirmed`: the account's address is not confirmed", body = ErrorBody),
        (status = 409, description = "`mfa/setup_not_started`, `mfa/already_enabled`", body = ErrorBody),
        (status = 429, description = "`auth/too_many_attempts`", body = ErrorBody),
    ))]
pub async fn verify_setup(
    caller: MfaCaller,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<MfaVerifySetupRequest>,
) -> Result<Json<RecoveryCodesResponse>, ApiError> {
    let mut errors = FieldErrors::new();
    six_digits(&mut errors, "code", &req.code);
    errors.finish()?;
    let who = caller.who;
    let codes = caller
        .tenant
        .call(|reply| MfaMsg::MfaVerifySetup {
            who: who.clone(),
            code: req.code.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok(Json(RecoveryCodesResponse {
        recovery_codes: codes,
    }))
}

/// Spec 2.3 MfaVerifyLoginRequest.
#[derive(Deserialize, ToSchema)]
pub struct MfaVerifyLoginRequest {
    #[serde(default)]
    #[schema(min_length = 1, required = true)]
    pub mfa_challenge_token: String,
    /// A current TOTP code, or an unused recovery code.
    #[serde(default)]
    #[schema(min_length = 1, required = true)]
    pub code: String,
}

/// The answer of the MFA verify flow.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum MfaVerifyResponse {
    /// A login challenge: the session's tokens, AAL2.
    Tokens(Box<TokenPair>),
    /// The gate's TOTP challenge: a step-up token, AAL2.
    StepUp(StepUpTokenResponse),
}

/// The second step of a login (TOTP or recovery code): the token pair at AAL2. With the
/// gate's `mfa_challenge_token` and the bearer of the session that got it: a step-up token.
#[utoipa::path(post, path = "/v1/auth/mfa/verify", tag = "mfa",
    security(("api_key" = []), ("api_key" = [], "bearer" = [])),
    request_body = MfaVerifyLoginRequest,
    responses(
        (status = 200, description = "Signed in (`aal` AAL2, `amr` pwd+otp; with `redirect_to` when the first step resumes an OAuth flow), or a step-up token (aal 2, amr otp)", body = MfaVerifyResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 401, description = "`mfa/invalid_code`; `invalid_or_expired_token` (unknown, used, expired or dead challenge; a step-up challenge from another session)", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: another tenant's challenge", body = ErrorBody),
        (status = 429, description = "`auth/too_many_attempts`", body = ErrorBody),
    ))]
pub async fn verify_mfa(
    State(state): State<AppState>,
    ApiTenant(tenant): ApiTenant,
    RequestCtx(ctx): RequestCtx,
    headers: HeaderMap,
    ApiJson(req): ApiJson<MfaVerifyLoginRequest>,
) -> Result<Json<MfaVerifyResponse>, ApiError> {
    let mut errors = FieldErrors::new();
    errors.check(
        "mfa_challenge_token",
        len_between(&req.mfa_challenge_token, 1, 256),
        "must be 1-256 characters",
    );
    any_code(&mut errors, &req.code);
    errors.finish()?;
    // The bearer matters only for a step-up challenge (which then needs this session's);
    // a stale one sent along with a login challenge is ignored.
    let bearer: Option<Bearer> = match bearer_header(&headers) {
        BearerHeader::Absent | BearerHeader::Malformed => None,
        BearerHeader::Token(token) => {
            let keys = tenant.keys().await?;
            verify(&state, &tenant, &keys, token).ok().map(|(_, b)| b)
        }
    };
    let verified = tenant
        .call(|reply| MfaMsg::MfaVerify {
            challenge: req.mfa_challenge_token.clone(),
            code: req.code.clone(),
            bearer,
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok(Json(match verified {
        MfaVerified::Login(login) => {
            let mut pair = token_pair(&state, &tenant, login.grant).await?;
            resume(&state, &tenant.slug, &mut pair, login.oauth);
            pair.device_token = login.device_token;
            MfaVerifyResponse::Tokens(Box::new(pair))
        }
        MfaVerified::StepUp(grant) => {
            MfaVerifyResponse::StepUp(sign_step_up(&state, &tenant, &grant).await?)
        }
    }))
}

/// Spec 2.3 MfaDisableRequest.
#[derive(Deserialize, ToSchema)]
pub struct MfaManageRequest {
    /// A TOTP or recovery code.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 64, required = true)]
    pub code: String,
    #[serde(default)]
    #[schema(min_length = 1, max_length = 1024, required = true)]
    pub password: String,
}

/// Spec 2.3 MfaRegenerateCodesRequest: a TOTP code, not a recovery code.
#[derive(Deserialize, ToSchema)]
pub struct MfaRegenerateCodesRequest {
    #[serde(default)]
    #[schema(pattern = r"^\d{6}$", required = true)]
    pub code: String,
    #[serde(default)]
    #[schema(min_length = 1, max_length = 1024, required = true)]
    pub password: String,
}

/// A TOTP code or a recovery code (1-64 characters: their own checks are the actor's).
fn any_code(errors: &mut FieldErrors, code: &str) {
    errors.check("code", len_between(code, 1, 64), "must be 1-64 characters");
}

/// What a change of MFA brings once its fields are checked: the password's verdict (reached
/// off the actor) and the code, for the actor to weigh with the session it is made in.
struct Proof {
    credential: tessera_actors::tenant::messages::Credential,
    password_ok: bool,
    code: String,
}

impl Proof {
    fn manage(&self, bearer: Bearer) -> MfaManage {
        MfaManage {
            bearer,
            credential: self.credential.clone(),
            password_ok: self.password_ok,
            code: self.code.clone(),
        }
    }
}

/// Checks the fields, then the password off the actor.
async fn check_password(
    state: &AppState,
    user: &UserBearer,
    req: &MfaManageRequest,
    totp_only: bool,
) -> Result<Proof, ApiError> {
    let mut errors = FieldErrors::new();
    if totp_only {
        six_digits(&mut errors, "code", &req.code);
    } else {
        any_code(&mut errors, &req.code);
    }
    errors.check(
        "password",
        len_between(&req.password, 1, 1024),
        "must be 1-1024 characters",
    );
    errors.finish()?;
    let (credential, password_ok) =
        check_current_password(state, user, req.password.clone()).await?;
    Ok(Proof {
        credential,
        password_ok,
        code: req.code.clone(),
    })
}

#[derive(Serialize, ToSchema)]
pub struct MfaDisabledResponse {
    /// Always false.
    pub mfa_enabled: bool,
}

/// Turns MFA off; needs the password and a code. The seed and recovery codes are erased.
#[utoipa::path(post, path = "/v1/auth/mfa/disable", tag = "mfa",
    security(("api_key" = [], "bearer" = [])),
    request_body = MfaManageRequest,
    responses(
        (status = 200, description = "MFA disabled", body = MfaDisabledResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 401, description = "`auth/invalid_credentials`, `mfa/invalid_code`, `auth/invalid_token`", body = ErrorBody),
        (status = 409, description = "`mfa/not_enabled`", body = ErrorBody),
        (status = 429, description = "`auth/too_many_attempts`", body = ErrorBody),
    ))]
pub async fn disable(
    State(state): State<AppState>,
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<MfaManageRequest>,
) -> Result<Json<MfaDisabledResponse>, ApiError> {
    let proof = check_password(&state, &user, &req, false).await?;
    user.call(|bearer, reply| MfaMsg::MfaDisable {
        manage: proof.manage(bearer),
        ctx: ctx.clone(),
        reply,
    })
    .await?;
    Ok(Json(MfaDisabledResponse { mfa_enabled: false }))
}

/// Ten new recovery codes; the old ones stop working. Needs the password and a TOTP code.
#[utoipa::path(post, path = "/v1/auth/mfa/recovery-codes", tag = "mfa",
    security(("api_key" = [], "bearer" = [])),
    request_body = MfaRegenerateCodesRequest,
    responses(
        (status = 200, description = "The new codes, shown once", body = RecoveryCodesResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 401, description = "`auth/invalid_credentials`, `mfa/invalid_code`, `auth/invalid_token`", body = ErrorBody),
        (status = 403, description = "`auth/email_unconfirmed`: the account's address is not confirmed", body = ErrorBody),
        (status = 409, description = "`mfa/not_enabled`", body = ErrorBody),
        (status = 429, description = "`auth/too_many_attempts`", body = ErrorBody),
    ))]
pub async fn recovery_codes(
    State(state): State<AppState>,
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<MfaRegenerateCodesRequest>,
) -> Result<Json<RecoveryCodesResponse>, ApiError> {
    let req = MfaManageRequest {
        code: req.code,
        password: req.password,
    };
    let proof = check_password(&state, &user, &req, true).await?;
    let codes = user
        .call(|bearer, reply| MfaMsg::MfaRegenerateCodes {
            manage: proof.manage(bearer),
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok(Json(RecoveryCodesResponse {
        recovery_codes: codes,
    }))
}

/// How MFA's refusals answer.
impl From<MfaError> for ApiError {
    fn from(e: MfaError) -> Self {
        match e {
            MfaError::InvalidCode => ApiError::new(
                StatusCode::UNAUTHORIZED,
                "mfa/invalid_code",
                "the code is wrong, expired or already used",
            ),
            MfaError::AlreadyEnabled => ApiError::new(
                StatusCode::CONFLICT,
                "mfa/already_enabled",
                "MFA is already enabled; disable it first to set up a new authenticator",
            ),
            MfaError::NotEnabled => ApiError::new(
                StatusCode::CONFLICT,
                "mfa/not_enabled",
                "MFA is not enabled for this user",
            ),
            MfaError::SetupNotStarted => ApiError::new(
                StatusCode::CONFLICT,
                "mfa/setup_not_started",
                "start with POST /v1/auth/mfa/setup",
            ),
            MfaError::Unavailable => ApiError::new(
                StatusCode::FORBIDDEN,
                "mfa/unavailable",
                "guests cannot set up MFA; register first",
            ),
        }
    }
}
