//! The dashboard account itself and its second factor: TOTP set up with a code (recovery
//! codes shown once), and taken off; both need a re-authentication within 5 minutes, and
//! each is recorded in the audit log of every tenant the account is a member of
//! (`dashboard.mfa.enabled`, `dashboard.mfa.disabled`). Once
//! on, every login asks for a code (`POST /v1/auth/dashboard/login/mfa`). An operator takes
//! a lost factor off with `tessera admin dashboard reset-mfa EMAIL`.

use axum::{extract::State, http::StatusCode, Json};
use serde::{Deserialize, Serialize};
use tessera_actors::{directory::dashboard::TotpSecret, DirectoryMsg};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{audit_in, Dashboard};
use crate::http::error_responses::NoSessionOrReauth;

/// The tenants an account's own changes are recorded in: each it is a member of (the
/// dashboard's audit is per tenant, as its login's is).
fn slugs_of(auth: &Dashboard) -> Vec<String> {
    auth.session
        .memberships
        .iter()
        .map(|m| m.slug.clone())
        .collect()
}
use crate::app::AppState;
use crate::http::{
    error::{len_between, ApiError, ErrorBody, FieldErrors},
    extract::ApiJson,
};

#[derive(Serialize, ToSchema)]
pub struct DashboardAccountResponse {
    pub id: Uuid,
    pub email: String,
    pub email_verified: bool,
    /// Whether logins ask for a TOTP code.
    pub mfa_enabled: bool,
    /// Unused recovery codes (0 without MFA).
    pub recovery_codes_left: usize,
}

#[derive(Serialize, ToSchema)]
pub struct DashboardTotpSetupResponse {
    /// The seed in base32, for typing into an authenticator app. Shown once.
    pub secret: String,
    /// The `otpauth://totp/...` URI (what a QR code carries).
    pub otpauth_uri: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DashboardTotpConfirmRequest {
    /// The authenticator's current 6-digit code.
    #[serde(default)]
    #[schema(
        min_length = 6,
        max_length = 6,
        pattern = "^[0-9]{6}$",
        required = true
    )]
    pub code: String,
}

#[derive(Serialize, ToSchema)]
pub struct DashboardRecoveryCodes {
    /// Ten single-use codes for a lost authenticator, shown once.
    pub recovery_codes: Vec<String>,
}

/// The signed-in dashboard account.
#[utoipa::path(get, path = "/v1/auth/dashboard/account", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    responses(
        (status = 200, description = "The account", body = DashboardAccountResponse),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
    ))]
pub async fn account(auth: Dashboard) -> Json<DashboardAccountResponse> {
    let s = &auth.session;
    Json(DashboardAccountResponse {
        id: s.account_id,
        email: s.email.clone(),
        email_verified: s.email_verified,
        mfa_enabled: s.mfa_enabled,
        recovery_codes_left: s.recovery_codes_left,
    })
}

/// Starts setting up TOTP (a verified address; re-authenticated in the last 5 minutes).
/// Starting again replaces the seed not yet confirmed.
#[utoipa::path(post, path = "/v1/auth/dashboard/mfa/totp", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    responses(
        (status = 200, description = "The seed, to confirm with a code", body = DashboardTotpSetupResponse),
        NoSessionOrReauth,
        (status = 403, description = "`dashboard/email_unverified` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 409, description = "`dashboard/mfa_already_enabled`", body = ErrorBody),
    ))]
pub async fn totp_setup(
    State(state): State<AppState>,
    auth: Dashboard,
) -> Result<Json<DashboardTotpSetupResponse>, ApiError> {
    auth.require_recent_reauth()?;
    let account_id = auth.session.account_id;
    let TotpSecret {
        secret,
        otpauth_uri,
    } = state
        .directory
        .request(|reply| DirectoryMsg::TotpSetup { account_id, reply })
        .await?;
    Ok(Json(DashboardTotpSetupResponse {
        secret,
        otpauth_uri,
    }))
}

/// Confirms the seed with the authenticator's current code: MFA is on from the next login.
#[utoipa::path(post, path = "/v1/auth/dashboard/mfa/totp/confirm", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    request_body = DashboardTotpConfirmRequest,
    responses(
        (status = 200, description = "On; the recovery codes, shown once", body = DashboardRecoveryCodes),
        (status = 400, description = "`validation/invalid_request` or `dashboard/invalid_code`", body = ErrorBody),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 403, description = "`dashboard/csrf_failed`", body = ErrorBody),
        (status = 409, description = "`dashboard/mfa_setup_not_started` or `dashboard/mfa_already_enabled`", body = ErrorBody),
    ))]
pub async fn totp_confirm(
    State(state): State<AppState>,
    auth: Dashboard,
    ApiJson(req): ApiJson<DashboardTotpConfirmRequest>,
) -> Result<Json<DashboardRecoveryCodes>, ApiError> {
    let mut e = FieldErrors::new();
    e.check(
        "code",
        len_between(&req.code, 6, 6) && req.code.bytes().all(|b| b.is_ascii_digit()),
        "must be 6 digits",
    );
    e.finish()?;
    let account_id = auth.session.account_id;
    let code = req.code;
    let recovery_codes = state
        .directory
        .request(|reply| DirectoryMsg::TotpConfirm {
            account_id,
            code,
            reply,
        })
        .await?;
    audit_in(
        &state,
        slugs_of(&auth),
        "dashboard.mfa.enabled",
        &auth.ctx,
        serde_json::json!({ "method": "totp" }),
    )
    .await;
    Ok(Json(DashboardRecoveryCodes { recovery_codes }))
}

/// Takes the second factor off (re-authenticated in the last 5 minutes).
#[utoipa::path(delete, path = "/v1/auth/dashboard/mfa/totp", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    responses(
        (status = 204, description = "Off: logins ask for the password only"),
        NoSessionOrReauth,
        (status = 403, description = "`dashboard/csrf_failed`", body = ErrorBody),
        (status = 409, description = "`dashboard/mfa_not_enabled`", body = ErrorBody),
    ))]
pub async fn totp_remove(
    State(state): State<AppState>,
    auth: Dashboard,
) -> Result<StatusCode, ApiError> {
    auth.require_recent_reauth()?;
    let account_id = auth.session.account_id;
    let had = state
        .directory
        .request(|reply| DirectoryMsg::TotpRemove { account_id, reply })
        .await?;
    if had {
        audit_in(
            &state,
            slugs_of(&auth),
            "dashboard.mfa.disabled",
            &auth.ctx,
            serde_json::json!({ "method": "totp" }),
        )
        .await;
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::new(
            StatusCode::CONFLICT,
            "dashboard/mfa_not_enabled",
            "the account has no second factor",
        ))
    }
}
