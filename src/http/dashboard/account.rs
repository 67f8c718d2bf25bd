//! A dashboard account's own address: verifying it, and a new password through it.
//!
//! An address is proven by a mailed single-use link. A verification link counts only together
//! with the account's own session: whoever holds the mailbox but not the password (the real
//! owner of an address someone else signed up with) must not vouch for that other person's
//! password by clicking. A password reset proves the mailbox alone, so it also takes an
//! account over: the old password, its sessions and its mailed links stop working, and an
//! account never verified is detached from the tenants it was a member of (its creator's).

use axum::{extract::State, http::StatusCode, Json};
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use tessera_actors::tenant::audit::AuditContext;
use tessera_actors::{
    directory::dashboard::{AccountReset, AccountTarget, DetachedTenant},
    records::AccountTokenPurpose,
    DirectoryMsg, Password,
};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{
    audit_detached, audit_in, check_token_and_password, detached_refs, token_errors, Dashboard,
    DetachedTenantRef,
};
use crate::app::AppState;
use crate::http::{
    error::{is_email, ApiError, ErrorBody, FieldErrors},
    extract::{ApiJson, ClientIp, RequestCtx},
};

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DashboardTokenRequest {
    /// The token from the mailed link.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 512, required = true)]
    pub token: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DashboardForgotPasswordRequest {
    #[serde(default)]
    #[schema(format = "email", required = true)]
    pub email: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DashboardResetPasswordRequest {
    /// The token from the mailed link.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 512, required = true)]
    pub token: String,
    /// The new password, 12-128 characters.
    #[serde(default)]
    #[schema(min_length = 12, max_length = 128, required = true)]
    pub password: String,
}

#[derive(Serialize, ToSchema)]
pub struct VerifiedResponse {
    pub verified: bool,
}

#[derive(Serialize, ToSchema)]
pub struct AcceptedResponse {
    pub accepted: bool,
}

#[derive(Serialize, ToSchema)]
pub struct PasswordResetResponse {
    /// The password was replaced; every earlier session of the account has ended.
    pub reset: bool,
    /// When the account had never been verified, the reset took it over, and the account
    /// was detached from every tenant it was a member of (the one its creator made at
    /// sign-up): those tenants keep running for whoever holds their API keys, without this
    /// account. Empty otherwise.
    pub detached_tenants: Vec<DetachedTenantRef>,
}

fn check_token(token: &str) -> Result<(), ApiError> {
    token_errors(token).finish()
}

/// Verifies the session's address with the token from the mailed link.
#[utoipa::path(post, path = "/v1/auth/dashboard/verify-email", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    request_body = DashboardTokenRequest,
    responses(
        (status = 200, description = "The address is verified: invitations can be accepted", body = VerifiedResponse),
        (status = 400, description = "`validation/invalid_request`, or `dashboard/token_invalid`: unknown, used, expired, or mailed to another account", body = ErrorBody),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 403, description = "`dashboard/csrf_failed`", body = ErrorBody),
    ))]
pub async fn verify_email(
    State(state): State<AppState>,
    auth: Dashboard,
    ApiJson(req): ApiJson<DashboardTokenRequest>,
) -> Result<Json<VerifiedResponse>, ApiError> {
    verify_with_link(&state, req.token, auth.session.account_id).await?;
    Ok(Json(VerifiedResponse { verified: true }))
}

/// Verifies the address of `account_id`, whose proof the caller checked (its session, or its
/// password on the page), with the mailed `token`: the route's and the page's one way.
pub(super) async fn verify_with_link(
    state: &AppState,
    token: String,
    account_id: Uuid,
) -> Result<(), ApiError> {
    check_token(&token)?;
    state
        .directory
        .request(|reply| DirectoryMsg::VerifyAccount {
            token,
            account_id,
            reply,
        })
        .await
        .map_err(ApiError::from)
}

/// Mails the session's account a new verification link (none when already verified).
#[utoipa::path(post, path = "/v1/auth/dashboard/resend-verification", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    responses(
        (status = 202, description = "A link was mailed unless the address is already verified", body = AcceptedResponse),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 403, description = "`dashboard/csrf_failed`", body = ErrorBody),
        (status = 429, description = "`dashboard/rate_limited` (5 an hour), with `Retry-After`", body = ErrorBody),
    ))]
pub async fn resend_verification(
    State(state): State<AppState>,
    auth: Dashboard,
) -> Result<(StatusCode, Json<AcceptedResponse>), ApiError> {
    let account_id = auth.session.account_id;
    let mailed = state
        .directory
        .request(|reply| DirectoryMsg::IssueAccountToken {
            target: AccountTarget::Id(account_id),
            purpose: AccountTokenPurpose::Verify,
            reply,
        })
        .await?;
    if let Some(t) = mailed {
        state.mail_verification(&t).await;
    }
    Ok((
        StatusCode::ACCEPTED,
        Json(AcceptedResponse { accepted: true }),
    ))
}

/// Mails a password-reset link to the address if it has a dashboard account. The answer is
/// the same either way, and comes before the mail is sent.
#[utoipa::path(post, path = "/v1/auth/dashboard/forgot-password", tag = "dashboard",
    request_body = DashboardForgotPasswordRequest,
    responses(
        (status = 202, description = "Accepted, whether or not the address has an account", body = AcceptedResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 429, description = "`dashboard/rate_limited`: too many requests from this client, with `Retry-After`", body = ErrorBody),
    ))]
pub async fn forgot_password(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    ApiJson(req): ApiJson<DashboardForgotPasswordRequest>,
) -> Result<(StatusCode, Json<AcceptedResponse>), ApiError> {
    mail_reset_link(&state, req.email, ip).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(AcceptedResponse { accepted: true }),
    ))
}

/// Mails a reset link to `email` when it has an account, off the request: the route's and
/// the page's one way. Succeeds alike for an address without one.
pub(super) async fn mail_reset_link(
    state: &AppState,
    email: String,
    ip: IpAddr,
) -> Result<(), ApiError> {
    let mut e = FieldErrors::new();
    e.check("email", is_email(&email), "must be a valid e-mail address");
    e.finish()?;
    let mailed = state
        .directory
        .request(|reply| DirectoryMsg::IssueAccountToken {
            target: AccountTarget::Email { email, ip },
            purpose: AccountTokenPurpose::Reset,
            reply,
        })
        .await?;
    if let Some(t) = mailed {
        // Off the request: the SMTP exchange must not tell a known address from an unknown.
        let app = state.clone();
        tokio::spawn(async move {
            let text = format!(
                "Someone asked to reset the password of the Tessera dashboard account of this \
                 address.\n\nChoose a new password here (the link works once, for 1 hour):\n\
                 {}/dashboard/reset-password?token={}\n\n\
                 Every session of the account ends. If you did not ask for this, ignore this \
                 message: the password stays as it is.\n{}",
                app.accounts_base(),
                t.token,
                detaches_notice(&t.detaches),
            );
            app.mail_account(&t.email, "Reset your Tessera dashboard password", text)
                .await;
        });
    }
    Ok(())
}

/// What a reset mail says when the account was never verified: a new password takes it over
/// and detaches it from its tenants, named here before the reader chooses.
fn detaches_notice(detaches: &[DetachedTenant]) -> String {
    if detaches.is_empty() {
        return String::new();
    }
    let names: Vec<String> = detaches
        .iter()
        .map(|d| format!("\"{}\" ({})", d.name, d.slug))
        .collect();
    format!(
        "\nThis address was never confirmed on this account, so whoever created it may not \
         be you. A new password makes the account yours and detaches it from the tenants it \
         is a member of: {}. They keep running for whoever holds their API keys; you will \
         not be their member.\n",
        names.join(", ")
    )
}

/// Sets a new password with the token from the mailed link. The mailbox is proven: the
/// address becomes verified, and every session and earlier link of the account ends. An
/// account never verified is taken over and detached from the tenants it was a member of,
/// which the answer lists in `detached_tenants`.
#[utoipa::path(post, path = "/v1/auth/dashboard/reset-password", tag = "dashboard",
    request_body = DashboardResetPasswordRequest,
    responses(
        (status = 200, description = "The password was replaced; `detached_tenants` lists the tenants a taken-over account no longer reaches", body = PasswordResetResponse),
        (status = 400, description = "`validation/invalid_request` or `dashboard/token_invalid`", body = ErrorBody),
    ))]
pub async fn reset_password(
    State(state): State<AppState>,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<DashboardResetPasswordRequest>,
) -> Result<Json<PasswordResetResponse>, ApiError> {
    Ok(Json(
        reset_with_link(&state, ctx, req.token, req.password).await?,
    ))
}

/// Whether a mailed reset link is alive, using nothing: the page asks before it shows its
/// form, and the reset before it hashes (guessing tokens costs no argon2).
pub(super) async fn reset_link_alive(state: &AppState, token: &str) -> Result<(), ApiError> {
    check_token(token)?;
    state
        .directory
        .request(|reply| DirectoryMsg::CheckAccountToken {
            token: token.to_owned(),
            purpose: AccountTokenPurpose::Reset,
            reply,
        })
        .await
        .map_err(ApiError::from)
}

/// Replaces the password through the mailed `token`, and audits it: the route's and the
/// page's one way.
pub(super) async fn reset_with_link(
    state: &AppState,
    mut ctx: AuditContext,
    token: String,
    password: String,
) -> Result<PasswordResetResponse, ApiError> {
    check_token_and_password(&token, &password, 12)?;
    reset_link_alive(state, &token).await?;
    let password_hash = state.hasher.hash(&Password::new(password)).await?;
    let reset: AccountReset = state
        .directory
        .request(|reply| DirectoryMsg::ResetPassword {
            token,
            password_hash,
            reply,
        })
        .await?;
    ctx.actor = Some(reset.account_id);
    audit_in(
        state,
        reset.slugs,
        "dashboard.password_reset",
        &ctx,
        serde_json::json!({"account_reclaimed": reset.reclaimed}),
    )
    .await;
    audit_detached(
        state,
        reset.account_id,
        &reset.detached,
        &ctx,
        "password_reset",
    )
    .await;
    Ok(PasswordResetResponse {
        reset: true,
        detached_tenants: detached_refs(&reset.detached),
    })
}
