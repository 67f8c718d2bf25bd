//! The guardian routes an app calls with its API key: the child's request for consent
//! (`POST /v1/auth/parental-consent`: a held child, proven by its password, has a consent link
//! mailed to a guardian) and the portal link (`POST /v1/guardian/management-link`: always
//! 202; the link goes only to the guardian who consented for that child).
//!
//! Its own file: the two routes that mail a guardian a link, apart from the link's pages.

use axum::{extract::State, http::StatusCode, Json};
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::AccountsMsg;
use tessera_actors::{
    login_guard::Captcha,
    password::{HashError, Password},
    tenant::{
        guardian::{GuardianAnswer, GuardianCmd},
        messages::LoginAttempt,
    },
    TenantMsg,
};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::link::{address, guardian};
use crate::{
    app::AppState,
    http::{
        error::{len_between, ApiError, ErrorBody, FieldErrors},
        extract::{ApiJson, ApiTenant, ClientIp, RequestCtx},
    },
};

/// Spec 2.7 ParentalConsentRequest.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ParentalConsentRequest {
    #[schema(format = "email", max_length = 254)]
    pub email: String,
    #[schema(min_length = 1, max_length = 1024)]
    pub password: String,
    #[schema(format = "email", max_length = 254)]
    pub guardian_email: String,
}

#[derive(Serialize, ToSchema)]
pub struct ParentalConsentResponse {
    /// Always `consent_requested`.
    pub status: &'static str,
    /// Until when the mailed consent link works (7 days).
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

/// A held minor asks a parent or guardian for consent: the child's password proves it is
/// them, and the guardian is mailed a consent link (7 days, single use; a new request
/// replaces the previous link).
#[utoipa::path(post, path = "/v1/auth/parental-consent", tag = "guardian",
    security(("api_key" = [])),
    request_body = ParentalConsentRequest,
    responses(
        (status = 202, description = "The consent link was mailed to the guardian", body = ParentalConsentResponse),
        (status = 400, description = "`validation/invalid_request` (also when `guardian_email` is the child's own address)", body = ErrorBody),
        (status = 401, description = "`auth/invalid_credentials`, `auth/missing_api_key`, `auth/invalid_api_key`", body = ErrorBody),
        (status = 403, description = "`auth/user_blocked`: blocked by the tenant's admins", body = ErrorBody),
        (status = 409, description = "`guardian/consent_not_pending`: the account does not wait for consent; `guardian/other_guardian`: a guardian consented before (and withdrew), and only that guardian can be asked again", body = ErrorBody),
        (status = 429, description = "`auth/too_many_attempts` (the login throttles); `auth/rate_limited` (three requests an hour per child)", body = ErrorBody),
    ))]
pub async fn parental_consent(
    State(state): State<AppState>,
    ApiTenant(tenant): ApiTenant,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<ParentalConsentRequest>,
) -> Result<(StatusCode, Json<ParentalConsentResponse>), ApiError> {
    let mut errors = FieldErrors::new();
    let email = address(&mut errors, "email", &req.email);
    errors.check(
        "password",
        len_between(&req.password, 1, 1024),
        "must be 1-1024 characters",
    );
    let guardian_email = address(&mut errors, "guardian_email", &req.guardian_email);
    if email.is_some() && email == guardian_email {
        errors.check(
            "guardian_email",
            false,
            "must be the guardian's own address, not the child's",
        );
    }
    errors.finish()?;
    let (email, guardian_email) = (
        email.unwrap_or_default(),
        guardian_email.unwrap_or_default(),
    );
    let credential = tenant
        .call(|reply| AccountsMsg::LoginBegin {
            attempt: LoginAttempt {
                email: email.clone(),
                ip,
                device_token: None,
                captcha: Captcha::Off,
                organization: None,
            },
            reply,
        })
        .await?;
    let password_ok = state
        .hasher
        .verify(
            &Password::new(req.password),
            credential.password_hash.as_deref(),
        )
        .await
        .map_err(|e| match e {
            HashError::Busy => ApiError::unavailable(),
            HashError::Failed(cause) => ApiError::internal(cause),
        })?;
    let cmd = GuardianCmd::Request {
        email,
        credential,
        password_ok,
        guardian: guardian_email,
        ip,
    };
    match guardian(&tenant, (ctx, ip), cmd).await? {
        GuardianAnswer::Requested { expires_at } => Ok((
            StatusCode::ACCEPTED,
            Json(ParentalConsentResponse {
                status: "consent_requested",
                expires_at,
            }),
        )),
        _ => Err(ApiError::internal("unexpected guardian answer")),
    }
}

/// Spec 2.7 GuardianManagementLinkRequest.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GuardianManagementLinkRequest {
    #[schema(format = "email", max_length = 254)]
    pub child_email: String,
    #[schema(format = "email", max_length = 254)]
    pub guardian_email: String,
}

/// Mails a guardian portal link (an hour) to `guardian_email` when that guardian consented
/// for the account at `child_email`. Always 202: the answer tells nothing about either.
#[utoipa::path(post, path = "/v1/guardian/management-link", tag = "guardian",
    security(("api_key" = [])),
    request_body = GuardianManagementLinkRequest,
    responses(
        (status = 202, description = "Accepted, whatever the addresses"),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 401, description = "`auth/missing_api_key`, `auth/invalid_api_key`", body = ErrorBody),
        (status = 429, description = "`auth/rate_limited`: 120 calls of the guardian routes a minute per address", body = ErrorBody),
    ))]
pub async fn management_link(
    ApiTenant(tenant): ApiTenant,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<GuardianManagementLinkRequest>,
) -> Result<StatusCode, ApiError> {
    let mut errors = FieldErrors::new();
    let child = address(&mut errors, "child_email", &req.child_email);
    let guardian = address(&mut errors, "guardian_email", &req.guardian_email);
    errors.finish()?;
    tenant
        .call(|reply| TenantMsg::GuardianManagementLink {
            child_email: child.clone().unwrap_or_default(),
            guardian_email: guardian.clone().unwrap_or_default(),
            ip,
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok(StatusCode::ACCEPTED)
}
