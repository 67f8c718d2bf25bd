//! Dashboard login, logout, re-authentication, the caller's tenants, and API-key rotation.

use axum::{
    extract::State,
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde::{Deserialize, Serialize};
use tessera_actors::{
    directory::{
        dashboard::{LoginStep, NewSession},
        RotatedKey,
    },
    error::DirectoryError,
    known_devices::DEVICE_TOKEN_TTL,
    tenant::audit::AuditContext,
    CallError, DirectoryMsg, Password,
};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{
    audit_in, check_password, mfa_login, Dashboard, TenantCaller, DEVICE_COOKIE, SESSION_COOKIE,
};
use crate::app::AppState;
use crate::http::error_responses::NoSessionOrReauth;
use crate::http::{
    error::{is_email, len_between, ApiError, ErrorBody, FieldErrors},
    extract::{ApiJson, ClientIp, RequestCtx},
    pages::cookie,
    path_id::TenantSlug,
};

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DashboardLoginRequest {
    #[serde(default)]
    #[schema(format = "email", required = true)]
    pub email: String,
    #[serde(default)]
    #[schema(min_length = 8, max_length = 128, required = true)]
    pub password: String,
    /// The `device_token` an earlier login to this account answered on this device (a
    /// browser sends the `dashboard_device` cookie instead): the account's lockout does not
    /// apply to it, the device's own count does.
    #[schema(max_length = 256)]
    pub device_token: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DashboardMfaLoginRequest {
    /// The login's `mfa_challenge_token`.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 256, required = true)]
    pub mfa_challenge_token: String,
    /// A 6-digit TOTP code, or an unused recovery code (`xxxxx-xxxxx`, case and dashes
    /// ignored).
    #[serde(default)]
    #[schema(min_length = 1, max_length = 32, required = true)]
    pub code: String,
}

/// A login whose password was right, to an account with MFA: no session yet.
#[derive(Serialize, ToSchema)]
pub struct DashboardMfaChallenge {
    /// Always true.
    pub mfa_required: bool,
    /// For `POST /v1/auth/dashboard/login/mfa`: single use, 5 minutes, 5 codes at most.
    pub mfa_challenge_token: String,
    /// `totp`, `recovery_code`.
    pub available_methods: Vec<String>,
    pub expires_in: i64,
}

/// The answer to a dashboard login: a session, or the second step's challenge.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum DashboardLoginAnswer {
    Session(DashboardLoginResponse),
    MfaRequired(DashboardMfaChallenge),
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DashboardReauthRequest {
    #[serde(default)]
    #[schema(min_length = 8, max_length = 128, required = true)]
    pub password: String,
}

#[derive(Serialize, ToSchema)]
pub struct DashboardReauthResponse {
    /// When the re-authentication was recorded (RFC 3339).
    #[serde(with = "time::serde::rfc3339")]
    pub verified_at: OffsetDateTime,
}

#[derive(Serialize, ToSchema)]
pub struct AccountRef {
    pub id: Uuid,
    pub email: String,
    /// Whether the address is verified. Until it is, the account reaches only the tenant it
    /// created at onboarding and cannot accept invitations with its password.
    pub email_verified: bool,
}

#[derive(Serialize, ToSchema)]
pub struct DashboardLoginResponse {
    /// The session token; also set as the HttpOnly cookie `dashboard_session`. Send it as
    /// `Authorization: Bearer` or let the browser send the cookie.
    pub session_token: String,
    /// Send as `X-CSRF-Token` with every cookie-authenticated write.
    pub csrf_token: String,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    pub account: AccountRef,
    pub tenants: Vec<TenantMembership>,
    /// From a device that sent no valid `device_token`: keep it (also set as the HttpOnly
    /// cookie `dashboard_device`) and send it with this device's next logins, so others'
    /// failed guesses do not lock it out. Opaque, 180 days; it signs nobody in by itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^tdv_")]
    pub device_token: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct TenantMembership {
    pub id: Uuid,
    pub slug: String,
    pub name: String,
    /// `owner`, `admin` or `viewer`.
    pub role: String,
}

#[derive(Serialize, ToSchema)]
pub struct TenantList {
    pub data: Vec<TenantMembership>,
}

#[derive(Serialize, ToSchema)]
pub struct RotatedApiKeyResponse {
    pub tenant: TenantMembership,
    /// The new key, shown once. The old key stopped working.
    pub api_key: String,
}

fn memberships(s: &tessera_actors::directory::dashboard::SessionInfo) -> Vec<TenantMembership> {
    s.memberships
        .iter()
        .map(|m| TenantMembership {
            id: m.tenant.0,
            slug: m.slug.clone(),
            name: m.name.clone(),
            role: m.role.as_str().to_owned(),
        })
        .collect()
}

/// A dashboard cookie (the session's, or the device token's): out of scripts' reach, sent
/// only to the dashboard's routes.
fn dashboard_cookie(state: &AppState, name: &str, value: &str, max_age: i64) -> HeaderValue {
    let secure = if state.base_url.starts_with("https://") {
        "; Secure"
    } else {
        ""
    };
    let cookie = format!(
        "{name}={value}; HttpOnly; SameSite=Strict; Path=/v1/auth/dashboard; Max-Age={max_age}{secure}"
    );
    HeaderValue::from_str(&cookie).unwrap_or(HeaderValue::from_static(""))
}

/// Logs in to the dashboard.
#[utoipa::path(post, path = "/v1/auth/dashboard/login", tag = "dashboard",
    request_body = DashboardLoginRequest,
    responses(
        (status = 200, description = "A session (token in the body and in the `dashboard_session` cookie); for an account with MFA, the challenge for `POST /v1/auth/dashboard/login/mfa` instead", body = DashboardLoginAnswer),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 401, description = "`dashboard/invalid_credentials`", body = ErrorBody),
        (status = 429, description = "`dashboard/rate_limited`, with `Retry-After`: 5 consecutive failures of the account from this address, 10 from any, or `security.login_failures_per_address` from this address in 15 minutes; with a valid device token, 3 of that device instead", body = ErrorBody),
    ))]
pub async fn login(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    RequestCtx(mut ctx): RequestCtx,
    headers: HeaderMap,
    ApiJson(req): ApiJson<DashboardLoginRequest>,
) -> Result<Response, ApiError> {
    let mut e = FieldErrors::new();
    e.check(
        "email",
        is_email(&req.email),
        "must be a valid e-mail address",
    )
    .check(
        "password",
        len_between(&req.password, 8, 128),
        "must be 8-128 characters",
    )
    .check(
        "device_token",
        req.device_token.as_ref().is_none_or(|t| t.len() <= 256),
        "must be at most 256 characters",
    );
    e.finish()?;
    let password = Password::new(req.password);
    let device_token = req
        .device_token
        .filter(|t| !t.is_empty())
        .or_else(|| cookie(&headers, DEVICE_COOKIE).map(str::to_owned));
    let checked =
        check_password(&state, &req.email, &password, (ip, device_token.as_deref())).await?;
    let account_id = checked.account_id;
    let step = checked.next_step(&state, ip).await?;
    match step {
        LoginStep::Session(session) => {
            ctx.actor = Some(account_id);
            Ok(session_answer(&state, session, &ctx, "password").await)
        }
        LoginStep::Mfa {
            challenge,
            expires_in,
        } => {
            let body = DashboardMfaChallenge {
                mfa_required: true,
                mfa_challenge_token: challenge,
                available_methods: vec!["totp".to_owned(), "recovery_code".to_owned()],
                expires_in,
            };
            let mut resp = Json(body).into_response();
            resp.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            Ok(resp)
        }
    }
}

/// The second step of a login to an account with MFA: a TOTP code or a recovery code.
#[utoipa::path(post, path = "/v1/auth/dashboard/login/mfa", tag = "dashboard",
    request_body = DashboardMfaLoginRequest,
    responses(
        (status = 200, description = "A session, as a login without MFA answers it", body = DashboardLoginResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 401, description = "`dashboard/invalid_credentials` (a wrong or used code: it counts as a failed login), `dashboard/mfa_challenge_invalid` (unknown, used, expired, or five wrong codes)", body = ErrorBody),
        (status = 429, description = "`dashboard/rate_limited`, with `Retry-After`: the login lockout, which wrong codes feed; or 30 unknown, used or expired challenges from this address (IPv6: its /64) in 15 minutes", body = ErrorBody),
    ))]
pub async fn login_mfa(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    RequestCtx(mut ctx): RequestCtx,
    ApiJson(req): ApiJson<DashboardMfaLoginRequest>,
) -> Result<Response, ApiError> {
    let mut e = FieldErrors::new();
    e.check(
        "mfa_challenge_token",
        len_between(&req.mfa_challenge_token, 1, 256),
        "must be 1-256 characters",
    )
    .check(
        "code",
        len_between(&req.code, 1, 32),
        "must be 1-32 characters",
    );
    e.finish()?;
    let session = mfa_login(&state, req.mfa_challenge_token, req.code, ip)
        .await
        .map_err(|e| match e {
            CallError::Failed(DirectoryError::TokenInvalid) => mfa_challenge_invalid(),
            e => e.into(),
        })?;
    ctx.actor = Some(session.info.account_id);
    Ok(session_answer(&state, session, &ctx, "mfa").await)
}

/// 401 `dashboard/mfa_challenge_invalid`.
pub fn mfa_challenge_invalid() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "dashboard/mfa_challenge_invalid",
        "the login's second step is unknown, used or expired: log in again",
    )
}

/// A new session's answer: the body, the session cookie (and the device's, when new), and
/// the `dashboard.login` audit event in each of the account's tenants.
async fn session_answer(
    state: &AppState,
    session: NewSession,
    ctx: &AuditContext,
    method: &str,
) -> Response {
    let slugs: Vec<String> = session
        .info
        .memberships
        .iter()
        .map(|m| m.slug.clone())
        .collect();
    audit_in(
        state,
        slugs,
        "dashboard.login",
        ctx,
        serde_json::json!({ "method": method }),
    )
    .await;
    let max_age = state.config.dashboard.absolute_timeout_secs as i64;
    let body = DashboardLoginResponse {
        session_token: session.token.clone(),
        csrf_token: session.csrf,
        expires_at: session.info.expires_at,
        account: AccountRef {
            id: session.info.account_id,
            email: session.info.email.clone(),
            email_verified: session.info.email_verified,
        },
        tenants: memberships(&session.info),
        device_token: session.device_token.clone(),
    };
    let mut resp = Json(body).into_response();
    resp.headers_mut().insert(
        header::SET_COOKIE,
        dashboard_cookie(state, SESSION_COOKIE, &session.token, max_age),
    );
    if let Some(token) = &session.device_token {
        resp.headers_mut().append(
            header::SET_COOKIE,
            dashboard_cookie(
                state,
                DEVICE_COOKIE,
                token,
                DEVICE_TOKEN_TTL.whole_seconds(),
            ),
        );
    }
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// Ends the session.
#[utoipa::path(post, path = "/v1/auth/dashboard/logout", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    responses(
        (status = 204, description = "Logged out; the cookie is cleared"),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 403, description = "`dashboard/csrf_failed`", body = ErrorBody),
    ))]
pub async fn logout(State(state): State<AppState>, auth: Dashboard) -> Result<Response, ApiError> {
    let token = auth.token.clone();
    state
        .directory
        .request(|reply| DirectoryMsg::Logout { token, reply })
        .await?;
    let mut resp = StatusCode::NO_CONTENT.into_response();
    resp.headers_mut().insert(
        header::SET_COOKIE,
        dashboard_cookie(&state, SESSION_COOKIE, "", 0),
    );
    Ok(resp)
}

/// Re-authenticates with the password, for sensitive changes in the next five minutes.
#[utoipa::path(post, path = "/v1/auth/dashboard/reauth", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    request_body = DashboardReauthRequest,
    responses(
        (status = 200, description = "Re-authenticated", body = DashboardReauthResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 401, description = "`dashboard/unauthenticated` or `dashboard/invalid_credentials`", body = ErrorBody),
        (status = 429, description = "`dashboard/rate_limited`", body = ErrorBody),
    ))]
pub async fn reauth(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    auth: Dashboard,
    ApiJson(req): ApiJson<DashboardReauthRequest>,
) -> Result<Json<DashboardReauthResponse>, ApiError> {
    let mut e = FieldErrors::new();
    e.check(
        "password",
        len_between(&req.password, 8, 128),
        "must be 8-128 characters",
    );
    e.finish()?;
    let password = Password::new(req.password);
    check_password(&state, &auth.session.email, &password, (ip, None)).await?;
    let token = auth.token.clone();
    let verified_at = state
        .directory
        .request(|reply| DirectoryMsg::MarkReauth { token, reply })
        .await?;
    Ok(Json(DashboardReauthResponse { verified_at }))
}

/// The caller's tenants and role in each.
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    responses(
        (status = 200, description = "The caller's tenants", body = TenantList),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
    ))]
pub async fn tenants(auth: Dashboard) -> Json<TenantList> {
    Json(TenantList {
        data: memberships(&auth.session),
    })
}

/// One of the caller's tenants; another tenant is 404.
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    responses(
        (status = 200, description = "The tenant and the caller's role", body = TenantMembership),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn tenant(
    State(state): State<AppState>,
    caller: TenantCaller,
) -> Result<Json<TenantMembership>, ApiError> {
    let (m, _) = caller.member(&state)?;
    Ok(Json(TenantMembership {
        id: m.tenant.0,
        slug: m.slug,
        name: m.name,
        role: m.role.as_str().to_owned(),
    }))
}

/// Replaces the tenant's API key (owner; re-authenticated in the last 5 minutes).
#[utoipa::path(post, path = "/v1/auth/dashboard/tenants/{slug}/api-key/rotate", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    responses(
        (status = 200, description = "The new key, shown once", body = RotatedApiKeyResponse),
        NoSessionOrReauth,
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn rotate_api_key(
    State(state): State<AppState>,
    caller: TenantCaller,
) -> Result<Json<RotatedApiKeyResponse>, ApiError> {
    let (m, _) = caller.owner(&state)?;
    caller.auth.require_recent_reauth()?;
    let target = caller.slug.clone();
    let rotated: RotatedKey = state
        .directory
        .request(|reply| DirectoryMsg::RotateApiKey {
            slug: target,
            reply,
        })
        .await?;
    audit_in(
        &state,
        vec![caller.slug],
        "api_key.rotated",
        &caller.auth.ctx,
        serde_json::Value::Null,
    )
    .await;
    Ok(Json(RotatedApiKeyResponse {
        tenant: TenantMembership {
            id: m.tenant.0,
            slug: m.slug,
            name: m.name,
            role: m.role.as_str().to_owned(),
        },
        api_key: rotated.api_key,
    }))
}
