//! Passkeys (WebAuthn, spec 2.6 and 4.1; paths of the route map): registration behind the
//! step-up gate, sign-in with or without a user handle, the owner's list, rename and delete,
//! and the passkey step-up. The WebAuthn checks are the tenant actor's (`tenant/passkeys.rs`);
//! these handlers validate the JSON shapes and sign the tokens.
//!
//! The browser's objects travel as their JSON form (`PublicKeyCredential.toJSON()`: binary
//! fields base64url), and the options answered are the `publicKey` member that
//! `PublicKeyCredential.parseCreationOptionsFromJSON` / `parseRequestOptionsFromJSON` take.
//! A finish finds its ceremony by the challenge inside `clientDataJSON`: no handle to keep.

use axum::{
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::PasskeysMsg;
use tessera_actors::PasskeyError;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{
    bearer::UserBearer,
    error::{len_between, ApiError, ErrorBody, FieldErrors},
    extract::{ApiJson, ApiTenant, ClientIp, RequestCtx},
    path_id::path_id,
    reauth::{passkey_login, require_step_up, sign_step_up, StepUpHeader, StepUpTokenResponse},
    responses::{login_answer, LoginResponse},
};
use crate::app::AppState;
use crate::http::error_responses::{
    EmailUnconfirmed, InvalidRequest, InvalidToken, TooManyAttempts, UserBlocked,
};

/// WebAuthn options for `navigator.credentials.create()` or `.get()`, in their JSON form.
#[derive(Serialize, ToSchema)]
pub struct PasskeyOptionsResponse {
    /// `PublicKeyCredentialCreationOptionsJSON` (registration) or
    /// `PublicKeyCredentialRequestOptionsJSON` (sign-in, step-up): binary fields base64url.
    #[serde(rename = "publicKey")]
    #[schema(value_type = Object)]
    pub public_key: serde_json::Value,
}

/// A passkey as its owner sees it (never the key).
#[derive(Serialize, ToSchema)]
pub struct PasskeyResponse {
    pub id: Uuid,
    /// 1-64 characters, or null.
    pub nickname: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub last_used_at: Option<String>,
    /// The credential may live on several devices (a synced passkey: `amr` `swk`).
    pub backup_eligible: bool,
    /// It is backed up or synced now.
    pub backed_up: bool,
    /// How a browser reaches the authenticator (`internal`, `hybrid`, `usb`, `nfc`, `ble`).
    pub transports: Vec<String>,
    /// The authenticator model's AAGUID (zeros when it does not say).
    pub aaguid: Uuid,
    /// A sign-in showed a signature counter that did not increase: the passkey may have been
    /// copied; it signs nobody in until deleted.
    pub suspected_clone: bool,
}

impl From<tessera_actors::tenant::messages::PasskeyView> for PasskeyResponse {
    fn from(v: tessera_actors::tenant::messages::PasskeyView) -> Self {
        let fmt = |t: time::OffsetDateTime| {
            t.format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default()
        };
        PasskeyResponse {
            id: v.id,
            nickname: v.nickname,
            created_at: fmt(v.created_at),
            last_used_at: v.last_used_at.map(fmt),
            backup_eligible: v.backup_eligible,
            backed_up: v.backed_up,
            transports: v.transports,
            aaguid: v.aaguid,
            suspected_clone: v.suspected_clone,
        }
    }
}

/// `{passkeys: [...]}`.
#[derive(Serialize, ToSchema)]
pub struct PasskeyListResponse {
    pub passkeys: Vec<PasskeyResponse>,
}

/// A WebAuthn response object as the browser's `toJSON()` gives it: an object.
fn credential_field(
    errors: &mut FieldErrors,
    name: &str,
    value: Option<serde_json::Value>,
) -> serde_json::Value {
    match value {
        Some(v @ serde_json::Value::Object(_)) => v,
        Some(_) => {
            errors.check(name, false, "must be the credential's JSON object");
            serde_json::Value::Null
        }
        None => {
            errors.check(name, false, "is required: the credential's JSON object");
            serde_json::Value::Null
        }
    }
}

fn nickname_ok(nickname: &str) -> bool {
    len_between(nickname, 1, 64)
        && !nickname.chars().any(char::is_control)
        && !nickname.trim().is_empty()
}

const NICKNAME_RULE: &str = "must be 1-64 characters, not blank, without control characters";

/// Starts registering a passkey for the signed-in user. Passes the step-up gate (and uses
/// its token): the finish then needs only the same session.
#[utoipa::path(post, path = "/v1/auth/passkeys/register/begin", tag = "passkeys",
    security(("api_key" = [], "bearer" = [])),
    params(StepUpHeader),
    responses(
        (status = 200, description = "Creation options: a resident key, user verification preferred, no attestation, the user's passkeys excluded; valid 5 minutes", body = PasskeyOptionsResponse),
        (status = 401, description = "`account_linking/mfa_required` (no step-up token: the step-up challenge); `invalid_or_expired_token` (a bad step-up token); `auth/invalid_token`", body = ErrorBody),
        (status = 403, description = "`auth/anonymous_not_allowed`: a guest; `auth/email_unconfirmed`: the account's address is not confirmed (no passkey until it is)", body = ErrorBody),
        (status = 404, description = "The step-up token is another tenant's", body = ErrorBody),
        (status = 409, description = "`passkey/limit_reached`: 10 passkeys already", body = ErrorBody),
    ))]
pub async fn register_begin(
    State(state): State<AppState>,
    user: UserBearer,
    step_up: StepUpHeader,
) -> Result<Json<PasskeyOptionsResponse>, ApiError> {
    // The options first: a guest or a user at the limit is refused before the gate, so the
    // step-up token is not used up on a request that cannot succeed. Options answered with
    // the gate's refusal are never sent; the session's next begin replaces them.
    let options = user
        .call(|bearer, reply| PasskeysMsg::PasskeyRegisterBegin { bearer, reply })
        .await?;
    require_step_up(&state, &user, &step_up).await?;
    Ok(Json(PasskeyOptionsResponse {
        public_key: options,
    }))
}

/// Spec 2.6 PasskeyRegisterFinishRequest.
#[derive(Deserialize, ToSchema)]
pub struct PasskeyRegisterFinishRequest {
    /// The `PublicKeyCredential` from `navigator.credentials.create()`, as `toJSON()` gives
    /// it. Required here.
    #[schema(value_type = Object)]
    pub response: Option<serde_json::Value>,
    /// 1-64 characters.
    #[schema(min_length = 1, max_length = 64)]
    pub nickname: Option<String>,
}

/// Finishes a registration begun by this session: checks the origin, the relying party,
/// the challenge and the attestation, and stores the passkey.
#[utoipa::path(post, path = "/v1/auth/passkeys/register/finish", tag = "passkeys",
    security(("api_key" = [], "bearer" = [])),
    request_body = PasskeyRegisterFinishRequest,
    responses(
        (status = 201, description = "The passkey", body = PasskeyResponse),
        (status = 400, description = "`validation/invalid_request`; `passkey/invalid_registration` (wrong origin or relying party, a malformed credential)", body = ErrorBody),
        InvalidToken, EmailUnconfirmed,
        (status = 404, description = "`passkey/ceremony_not_found`: expired, used, or another session's", body = ErrorBody),
        (status = 409, description = "`passkey/limit_reached`; `passkey/already_registered`", body = ErrorBody),
    ))]
pub async fn register_finish(
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<PasskeyRegisterFinishRequest>,
) -> Result<Response, ApiError> {
    let mut errors = FieldErrors::new();
    let response = credential_field(&mut errors, "response", req.response);
    if let Some(n) = &req.nickname {
        errors.check("nickname", nickname_ok(n), NICKNAME_RULE);
    }
    errors.finish()?;
    let view = user
        .call(|bearer, reply| PasskeysMsg::PasskeyRegisterFinish {
            bearer,
            response: response.clone(),
            nickname: req.nickname.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok((StatusCode::CREATED, Json(PasskeyResponse::from(view))).into_response())
}

/// Spec 2.6 PasskeyAssertBeginRequest.
#[derive(Deserialize, ToSchema, Default)]
pub struct PasskeyAssertBeginRequest {
    /// The user's WebAuthn user handle (the user id's 16 bytes, base64url, as the
    /// authenticator returns it; the id's text form is accepted too). Absent: a
    /// username-less sign-in with a discoverable credential.
    #[schema(max_length = 64)]
    pub user_handle: Option<String>,
}

/// Starts a passkey sign-in: with `user_handle`, for that user's passkeys (an unknown user
/// gets options alike, which no credential answers); without, any discoverable credential.
/// User verification required.
#[utoipa::path(post, path = "/v1/auth/passkeys/assert/begin", tag = "passkeys",
    security(("api_key" = [])),
    request_body = PasskeyAssertBeginRequest,
    responses(
        (status = 200, description = "Request options, valid 5 minutes", body = PasskeyOptionsResponse),
        InvalidRequest,
        (status = 429, description = "`auth/too_many_attempts` (the address's failed sign-ins); `auth/rate_limited` (60 options per address a minute)", body = ErrorBody),
    ))]
pub async fn assert_begin(
    ApiTenant(tenant): ApiTenant,
    ClientIp(ip): ClientIp,
    ApiJson(req): ApiJson<PasskeyAssertBeginRequest>,
) -> Result<Json<PasskeyOptionsResponse>, ApiError> {
    let mut errors = FieldErrors::new();
    if let Some(h) = &req.user_handle {
        errors.check(
            "user_handle",
            len_between(h, 1, 64),
            "must be 1-64 characters",
        );
    }
    errors.finish()?;
    let options = tenant
        .call(|reply| PasskeysMsg::PasskeyAssertBegin {
            user_handle: req.user_handle.clone(),
            ip,
            reply,
        })
        .await?;
    Ok(Json(PasskeyOptionsResponse {
        public_key: options,
    }))
}

/// Spec 2.6 PasskeyAssertFinishRequest.
#[derive(Deserialize, ToSchema)]
pub struct PasskeyAssertFinishRequest {
    /// The `PublicKeyCredential` from `navigator.credentials.get()`, as `toJSON()` gives it.
    /// Required here.
    #[schema(value_type = Object)]
    pub response: Option<serde_json::Value>,
}

/// Signs in with a passkey assertion: the token pair at AAL2, `amr` `["hwk"]` for a
/// device-bound credential or `["swk"]` for a synced one. The passkey is both factors: no
/// MFA challenge follows. Every refusal is the same 401 and counts against the client
/// address's login throttle.
#[utoipa::path(post, path = "/v1/auth/passkeys/assert/finish", tag = "passkeys",
    security(("api_key" = [])),
    request_body = PasskeyAssertFinishRequest,
    responses(
        (status = 200, description = "Signed in", body = LoginResponse),
        InvalidRequest, UserBlocked, TooManyAttempts,
        (status = 401, description = "`passkey/invalid_assertion`", body = ErrorBody),
        (status = 404, description = "`passkey/ceremony_not_found`: expired (5 minutes), used, or another tenant's", body = ErrorBody),
    ))]
pub async fn assert_finish(
    State(state): State<AppState>,
    ApiTenant(tenant): ApiTenant,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<PasskeyAssertFinishRequest>,
) -> Result<Json<LoginResponse>, ApiError> {
    let mut errors = FieldErrors::new();
    let response = credential_field(&mut errors, "response", req.response);
    errors.finish()?;
    let outcome = passkey_login(&tenant, response, ip, &ctx).await?;
    Ok(Json(login_answer(&state, &tenant, outcome).await?))
}

/// The signed-in user's passkeys, oldest first.
#[utoipa::path(get, path = "/v1/users/me/passkeys", tag = "passkeys",
    security(("api_key" = [], "bearer" = [])),
    responses(
        (status = 200, description = "The passkeys", body = PasskeyListResponse),
        InvalidToken,
    ))]
pub async fn list(user: UserBearer) -> Result<Json<PasskeyListResponse>, ApiError> {
    let views = user
        .call(|bearer, reply| PasskeysMsg::PasskeyList { bearer, reply })
        .await?;
    Ok(Json(PasskeyListResponse {
        passkeys: views.into_iter().map(PasskeyResponse::from).collect(),
    }))
}

/// Spec 2.6 PasskeyUpdateRequest.
#[derive(Deserialize, ToSchema)]
pub struct PasskeyUpdateRequest {
    #[serde(default)]
    #[schema(min_length = 1, max_length = 64, required = true)]
    pub nickname: String,
}

/// Renames one of the user's passkeys (step-up gated).
#[utoipa::path(patch, path = "/v1/users/me/passkeys/{id}", tag = "passkeys",
    security(("api_key" = [], "bearer" = [])),
    params(
        ("id" = Uuid, Path, description = "The passkey"),
        StepUpHeader,
    ),
    request_body = PasskeyUpdateRequest,
    responses(
        (status = 200, description = "The passkey", body = PasskeyResponse),
        InvalidRequest,
        (status = 401, description = "`account_linking/mfa_required` (no step-up token); `invalid_or_expired_token`; `auth/invalid_token`", body = ErrorBody),
        (status = 404, description = "No such passkey of this user, or another tenant's step-up token", body = ErrorBody),
    ))]
pub async fn rename(
    State(state): State<AppState>,
    user: UserBearer,
    step_up: StepUpHeader,
    Path(id): Path<String>,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<PasskeyUpdateRequest>,
) -> Result<Json<PasskeyResponse>, ApiError> {
    let mut errors = FieldErrors::new();
    errors.check("nickname", nickname_ok(&req.nickname), NICKNAME_RULE);
    errors.finish()?;
    let id = path_id(&id, "passkey")?;
    require_step_up(&state, &user, &step_up).await?;
    let view = user
        .call(|bearer, reply| PasskeysMsg::PasskeyRename {
            bearer,
            id,
            nickname: req.nickname.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok(Json(view.into()))
}

/// Deletes one of the user's passkeys (step-up gated). The account's last way to sign in
/// (no password, no confirmed address or number, no other passkey) is refused.
#[utoipa::path(delete, path = "/v1/users/me/passkeys/{id}", tag = "passkeys",
    security(("api_key" = [], "bearer" = [])),
    params(
        ("id" = Uuid, Path, description = "The passkey"),
        StepUpHeader,
    ),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "`account_linking/mfa_required` (no step-up token); `invalid_or_expired_token`; `auth/invalid_token`", body = ErrorBody),
        (status = 404, description = "No such passkey of this user, or another tenant's step-up token", body = ErrorBody),
        (status = 409, description = "`passkey/last_credential`", body = ErrorBody),
    ))]
pub async fn delete(
    State(state): State<AppState>,
    user: UserBearer,
    step_up: StepUpHeader,
    Path(id): Path<String>,
    RequestCtx(ctx): RequestCtx,
) -> Result<StatusCode, ApiError> {
    let id = path_id(&id, "passkey")?;
    require_step_up(&state, &user, &step_up).await?;
    user.call(|bearer, reply| PasskeysMsg::PasskeyDelete {
        bearer,
        id,
        ctx: ctx.clone(),
        reply,
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The step-up options: the user's passkeys in `allowCredentials`, user verification
/// required. The body, if any, is ignored. New options replace the session's earlier ones.
#[utoipa::path(post, path = "/v1/auth/step-up/passkey/options", tag = "step-up",
    security(("api_key" = [], "bearer" = [])),
    responses(
        (status = 200, description = "Request options, valid 5 minutes", body = PasskeyOptionsResponse),
        (status = 400, description = "`step_up/method_unavailable`: the user has no passkey", body = ErrorBody),
        InvalidToken,
        (status = 429, description = "`auth/rate_limited`: 20 options per session a minute", body = ErrorBody),
    ))]
pub async fn step_up_options(
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
) -> Result<Json<PasskeyOptionsResponse>, ApiError> {
    let options = user
        .call(|bearer, reply| PasskeysMsg::PasskeyStepUpOptions {
            bearer,
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok(Json(PasskeyOptionsResponse {
        public_key: options,
    }))
}

/// Spec 2.6: the assertion's `response` member.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct AssertionResponseJson {
    #[serde(rename = "clientDataJSON")]
    pub client_data_json: String,
    #[serde(rename = "authenticatorData")]
    pub authenticator_data: String,
    pub signature: String,
    #[serde(rename = "userHandle", skip_serializing_if = "Option::is_none")]
    pub user_handle: Option<String>,
}

/// Spec 2.6: a `PublicKeyCredential` from `navigator.credentials.get()`, as `toJSON()`
/// gives it.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct AssertionJson {
    pub id: String,
    #[serde(rename = "rawId")]
    pub raw_id: String,
    #[serde(rename = "type")]
    pub type_: String,
    pub response: AssertionResponseJson,
    #[serde(
        rename = "clientExtensionResults",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<Object>)]
    pub client_extension_results: Option<serde_json::Value>,
    #[serde(
        rename = "authenticatorAttachment",
        skip_serializing_if = "Option::is_none"
    )]
    pub authenticator_attachment: Option<String>,
}

/// Spec 2.6 StepUpPasskeyVerifyRequest.
#[derive(Deserialize, ToSchema)]
pub struct StepUpPasskeyVerifyRequest {
    pub assertion: AssertionJson,
}

/// A passkey step-up: AAL 2, AMR `hwk` or `swk`; user presence and user verification both
/// required (UV false: `passkey/step_up_required`, nothing issued).
#[utoipa::path(post, path = "/v1/auth/step-up/passkey/verify", tag = "step-up",
    security(("api_key" = [], "bearer" = [])),
    request_body = StepUpPasskeyVerifyRequest,
    responses(
        (status = 200, description = "A step-up token", body = StepUpTokenResponse),
        InvalidRequest,
        (status = 401, description = "`passkey/step_up_required` (no user verification); `passkey/invalid_assertion`; `invalid_or_expired_token` (no pending options of this session); `auth/invalid_token`", body = ErrorBody),
    ))]
pub async fn step_up_verify(
    State(state): State<AppState>,
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<StepUpPasskeyVerifyRequest>,
) -> Result<Json<StepUpTokenResponse>, ApiError> {
    let mut errors = FieldErrors::new();
    errors.check(
        "assertion.type",
        req.assertion.type_ == "public-key",
        "must be public-key",
    );
    errors.finish()?;
    let assertion = serde_json::to_value(&req.assertion).map_err(ApiError::internal)?;
    let check = user
        .call(|bearer, reply| PasskeysMsg::PasskeyStepUpTake {
            bearer,
            assertion: assertion.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    // The P-256 verification runs here, off the tenant's actor, as at sign-in.
    let verdict = check.verify();
    let passkey = check.passkey;
    let grant = user
        .call(|bearer, reply| PasskeysMsg::PasskeyStepUpFinish {
            bearer,
            passkey: passkey.clone(),
            verdict,
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok(Json(sign_step_up(&state, &user.tenant, &grant).await?))
}

/// How the passkey flow's refusals answer.
impl From<PasskeyError> for ApiError {
    fn from(e: PasskeyError) -> Self {
        match e {
            PasskeyError::Limit => ApiError::new(
                StatusCode::CONFLICT,
                "passkey/limit_reached",
                "a user may hold at most 10 passkeys; delete one first",
            ),
            PasskeyError::CeremonyNotFound => ApiError::new(
                StatusCode::NOT_FOUND,
                "passkey/ceremony_not_found",
                "no pending passkey ceremony has this challenge: it expired (5 minutes), was already used, or belongs elsewhere; begin again",
            ),
            PasskeyError::InvalidAssertion => ApiError::new(
                StatusCode::UNAUTHORIZED,
                "passkey/invalid_assertion",
                "the passkey assertion was not accepted",
            ),
            PasskeyError::InvalidRegistration => ApiError::new(
                StatusCode::BAD_REQUEST,
                "passkey/invalid_registration",
                "the new credential was not accepted: wrong origin or relying party, a mismatched challenge, or a malformed response",
            ),
            PasskeyError::AlreadyRegistered => ApiError::new(
                StatusCode::CONFLICT,
                "passkey/already_registered",
                "this credential is already registered",
            ),
            PasskeyError::StepUpRequired => ApiError::new(
                StatusCode::UNAUTHORIZED,
                "passkey/step_up_required",
                "the authenticator did not verify the user (PIN or biometric); try again with user verification",
            ),
            PasskeyError::LastCredential => ApiError::new(
                StatusCode::CONFLICT,
                "passkey/last_credential",
                "this passkey is the account's last way to sign in: add a password, a confirmed address or another passkey first",
            ),
            PasskeyError::RpIdInUse { passkeys } => ApiError::new(
                StatusCode::CONFLICT,
                "passkey/rp_id_in_use",
                "users hold passkeys under the current relying-party id; changing it stops them working. Send X-Service-Confirm: passkey-rp-id-change to go ahead",
            )
            .with_details(serde_json::json!({
                "passkeys": passkeys,
                "required_header": "X-Service-Confirm: passkey-rp-id-change",
            })),
        }
    }
}
