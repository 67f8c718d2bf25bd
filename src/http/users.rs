//! User management for the tenant's admins: one set of operations served twice, to dashboard
//! members under `/v1/auth/dashboard/tenants/{slug}/users` and to tenant back ends holding a
//! management key under `/v1/management/users` (see [`Manager`]).
//!
//! Order of checks: the caller (session or key), membership (404), the role for writes
//! (403), the body (400), then a recent dashboard re-authentication for the sensitive
//! actions (deleting a user, resetting MFA, changing an e-mail address). A management key is
//! itself the back end's credential: it has no re-authentication to show.

use axum::{
    extract::{Path, Query, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use serde::{Deserialize, Deserializer, Serialize};
use tessera_actors::tenant::UsersMsg;
use tessera_actors::UserError;
use tessera_actors::{
    records::Role,
    tenant::{
        audit::AuditContext,
        messages::{NewUser, UserAction, UserDetail, UserPatch, UserQuery, UserStatus},
    },
    Password, TenantHandle,
};
use tessera_wire::ManagedUser;
use time::{format_description::well_known::Rfc3339, OffsetDateTime};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::{
    dashboard::{reauth_required, Dashboard, TenantCaller},
    error::{len_between, ApiError, ErrorBody, FieldErrors},
    extract::ApiJson,
    fields::{email_field, metadata_field, phone_field},
    management::Management,
    paging::{self, Pagination},
    path_id::{path_id, TenantSlug},
};
use crate::http::error_responses::{InvalidManagementKey, ReauthRequired};
use crate::{
    app::AppState,
    http::accounts::{password_field, weak_password},
};
use tessera_actors::policy::is_weak_password;

/// Who manages the users: a dashboard member or a management key, with what they may do.
pub struct Manager {
    pub(crate) tenant: TenantHandle,
    can_write: bool,
    forbidden: fn() -> ApiError,
    /// Whether the sensitive actions may go ahead (a dashboard re-authentication within 5
    /// minutes; always for a management key).
    fresh: bool,
    pub(crate) ctx: AuditContext,
}

impl Manager {
    fn dashboard(state: &AppState, caller: &TenantCaller) -> Result<Self, ApiError> {
        Self::member(state, &caller.auth, &caller.slug)
    }

    /// A dashboard session acting in the tenant `slug` (the API's routes and the console's).
    pub fn member(state: &AppState, auth: &Dashboard, slug: &str) -> Result<Self, ApiError> {
        let (member, tenant) = auth.member(state, slug)?;
        Ok(Manager {
            tenant,
            can_write: member.role != Role::Viewer,
            forbidden: ApiError::forbidden,
            fresh: auth.require_recent_reauth().is_ok(),
            ctx: auth.ctx.clone(),
        })
    }

    pub(crate) fn key(key: Management) -> Self {
        Manager {
            can_write: key.role != Role::Viewer,
            tenant: key.tenant,
            forbidden: Management::forbidden,
            fresh: true,
            ctx: key.ctx,
        }
    }

    pub(crate) fn sensitive(&self) -> Result<(), ApiError> {
        if self.fresh {
            Ok(())
        } else {
            Err(reauth_required())
        }
    }

    pub(crate) fn write(&self) -> Result<(), ApiError> {
        if self.can_write {
            Ok(())
        } else {
            Err((self.forbidden)())
        }
    }
}

// ---------------------------------------------------------------- shapes

#[derive(Serialize, ToSchema)]
pub struct ManagedUserList {
    pub data: Vec<ManagedUser>,
    pub pagination: Pagination,
}

#[derive(Serialize, ToSchema)]
pub struct UserFactorsResponse {
    pub totp_enabled: bool,
    pub recovery_codes_remaining: usize,
    pub passkeys: usize,
    pub linked_providers: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub struct ManagedSession {
    pub id: Uuid,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub last_used_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    pub aal: u8,
    pub amr: Vec<String>,
    /// The client family that opened it (`Chrome`, `curl`, ...).
    pub device: Option<String>,
    /// The first 12 characters of the keyed hash of the client address that opened it.
    pub ip_hash_prefix: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct UserActivityResponse {
    #[serde(with = "time::serde::rfc3339")]
    pub last_active_at: OffsetDateTime,
    /// `YYYY-MM` (UTC).
    pub month: String,
    /// Whether the user counts in this month's active users.
    pub active_this_month: bool,
}

/// Everything an admin sees of one user.
#[derive(Serialize, ToSchema)]
pub struct ManagedUserDetail {
    #[serde(flatten)]
    pub user: ManagedUser,
    pub factors: UserFactorsResponse,
    /// Live sessions, newest first.
    pub sessions: Vec<ManagedSession>,
    pub activity: UserActivityResponse,
}

impl From<UserDetail> for ManagedUserDetail {
    fn from(d: UserDetail) -> Self {
        ManagedUserDetail {
            user: d.summary,
            factors: UserFactorsResponse {
                totp_enabled: d.factors.totp_enabled,
                recovery_codes_remaining: d.factors.recovery_codes_remaining,
                passkeys: d.factors.passkeys,
                linked_providers: d.factors.linked_providers,
            },
            sessions: d
                .sessions
                .into_iter()
                .map(|s| ManagedSession {
                    id: s.session.id,
                    created_at: s.session.created_at,
                    last_used_at: s.session.last_active_at,
                    expires_at: s.session.expires_at,
                    aal: s.session.aal,
                    amr: s.session.amr,
                    device: s.device,
                    ip_hash_prefix: s.ip_hash_prefix,
                })
                .collect(),
            activity: UserActivityResponse {
                last_active_at: d.activity.last_active_at,
                month: d.activity.month,
                active_this_month: d.activity.active_this_month,
            },
        }
    }
}

#[derive(Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UsersQuery {
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// 1-200, default 50.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 200)]
    pub limit: Option<String>,
    /// The start of the address, any case.
    pub email: Option<String>,
    /// A phone number in international form: the user who confirmed it.
    pub phone: Option<String>,
    /// `active`, `blocked`, `held`, `anonymous` or `unverified`.
    pub status: Option<String>,
    /// RFC 3339.
    pub created_after: Option<String>,
    /// RFC 3339.
    pub created_before: Option<String>,
    /// RFC 3339: users whose last sign-in is before this (never signed in: not listed).
    pub last_sign_in_before: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateUserRequest {
    #[serde(default)]
    #[schema(format = "email", required = true)]
    pub email: String,
    /// 12-128 characters; leave it out to invite instead or to let the user reset it.
    #[schema(min_length = 12, max_length = 128)]
    pub password: Option<String>,
    /// Mark the address confirmed now (default false: a verification link is mailed).
    #[serde(default)]
    pub email_verified: bool,
    /// Mail a single-use link (7 days) to choose a password, which also confirms the
    /// address. Not with `password`.
    #[serde(default)]
    pub invite: bool,
}

/// Reads a present field as `Some` (even `null`), so an absent one stays `None`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateUserRequest {
    /// A new address: unconfirmed and mailed a verification link, unless `email_verified`
    /// is true. Needs a dashboard re-authentication within 5 minutes.
    #[schema(format = "email")]
    pub email: Option<String>,
    pub email_verified: Option<bool>,
    /// A number in international form, confirmed by this call (it then signs the user in by
    /// text message); `null` removes it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, nullable = true)]
    pub phone: Option<Option<String>>,
    /// Admin-only object, at most 16 KiB; the `app_metadata` claim of access tokens.
    #[schema(value_type = Option<Object>)]
    pub app_metadata: Option<serde_json::Value>,
    #[schema(value_type = Option<Object>)]
    pub public_metadata: Option<serde_json::Value>,
}

// ---------------------------------------------------------------- operations

fn parse_time(e: &mut FieldErrors, name: &str, v: Option<&str>) -> Option<OffsetDateTime> {
    let v = v?;
    let t = OffsetDateTime::parse(v, &Rfc3339).ok();
    e.check(name, t.is_some(), "must be an RFC 3339 date-time");
    t
}

pub async fn list(m: Manager, q: UsersQuery) -> Result<Json<ManagedUserList>, ApiError> {
    let mut e = FieldErrors::new();
    let limit = paging::limit(&mut e, q.limit.as_deref(), 50, 200);
    let cursor = paging::cursor(&mut e, q.cursor.as_deref(), paging::key_cursor(24));
    let email_prefix = q.email.as_deref().map(|p| p.trim().to_lowercase());
    if let Some(p) = &email_prefix {
        e.check("email", len_between(p, 1, 254), "must be 1-254 characters");
    }
    let phone = q
        .phone
        .as_deref()
        .map(|p| phone_field(&mut e, "phone", p).map(|p| p.e164));
    let status = q.status.as_deref().map(UserStatus::parse);
    e.check(
        "status",
        status.is_none_or(|s| s.is_some()),
        "must be active, blocked, held, anonymous or unverified",
    );
    let created_after = parse_time(&mut e, "created_after", q.created_after.as_deref());
    let created_before = parse_time(&mut e, "created_before", q.created_before.as_deref());
    let last_sign_in_before = parse_time(
        &mut e,
        "last_sign_in_before",
        q.last_sign_in_before.as_deref(),
    );
    e.finish()?;
    let query = UserQuery {
        email_prefix,
        phone: phone.flatten(),
        status: status.flatten(),
        created_after,
        created_before,
        last_sign_in_before,
        cursor,
        limit,
    };
    let page = m
        .tenant
        .call(|reply| UsersMsg::ListUsers {
            query: query.clone(),
            reply,
        })
        .await?;
    Ok(Json(ManagedUserList {
        data: page.users,
        pagination: Pagination::next(page.next_cursor.map(hex::encode)),
    }))
}

fn not_found_user(e: ApiError) -> ApiError {
    if e.status == StatusCode::NOT_FOUND {
        ApiError::not_found("user")
    } else {
        e
    }
}

pub async fn show(m: Manager, id: &str) -> Result<Json<ManagedUserDetail>, ApiError> {
    let id = path_id(id, "user")?;
    let detail = m
        .tenant
        .call(|reply| UsersMsg::GetUser { id, reply })
        .await
        .map_err(|e| not_found_user(e.into()))?;
    Ok(Json(detail.into()))
}

async fn create(
    state: &AppState,
    m: Manager,
    req: CreateUserRequest,
) -> Result<Response, ApiError> {
    m.write()?;
    let mut e = FieldErrors::new();
    let email = email_field(&mut e, &req.email);
    if let Some(p) = &req.password {
        password_field(&mut e, "password", p);
    }
    e.check(
        "invite",
        !(req.invite && req.password.is_some()),
        "cannot be true with a password: the invitee chooses it",
    );
    e.finish()?;
    if req.password.as_deref().is_some_and(is_weak_password) {
        return Err(weak_password());
    }
    let password_hash = match req.password {
        Some(p) => Some(state.hasher.hash(&Password::new(p)).await?),
        None => None,
    };
    let user = NewUser {
        email: email.unwrap_or_default(),
        password_hash,
        email_verified: req.email_verified,
        invite: req.invite,
    };
    let ctx = m.ctx.clone();
    let detail = m
        .tenant
        .call(|reply| UsersMsg::CreateUser {
            user: user.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok((StatusCode::CREATED, Json(ManagedUserDetail::from(detail))).into_response())
}

async fn update(
    m: Manager,
    id: &str,
    req: UpdateUserRequest,
) -> Result<Json<ManagedUserDetail>, ApiError> {
    m.write()?;
    let id = path_id(id, "user")?;
    let mut e = FieldErrors::new();
    let email = req.email.as_deref().map(|v| email_field(&mut e, v));
    let phone = match req.phone {
        None => None,
        Some(None) => Some(None),
        Some(Some(p)) => phone_field(&mut e, "phone", &p).map(|p| Some(p.e164)),
    };
    let app_metadata = req
        .app_metadata
        .map(|v| metadata_field(&mut e, "app_metadata", v));
    let public_metadata = req
        .public_metadata
        .map(|v| metadata_field(&mut e, "public_metadata", v));
    e.finish()?;
    if email.is_some() {
        m.sensitive()?;
    }
    let patch = UserPatch {
        email: email.flatten(),
        email_verified: req.email_verified,
        phone,
        app_metadata: app_metadata.flatten(),
        public_metadata: public_metadata.flatten(),
    };
    let ctx = m.ctx.clone();
    let detail = m
        .tenant
        .call(|reply| UsersMsg::UpdateUser {
            id,
            patch: patch.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await
        .map_err(|e| not_found_user(e.into()))?;
    Ok(Json(detail.into()))
}

pub async fn act(
    m: Manager,
    id: &str,
    action: UserAction,
) -> Result<Json<ManagedUserDetail>, ApiError> {
    m.write()?;
    let id = path_id(id, "user")?;
    if action == UserAction::ResetMfa {
        m.sensitive()?;
    }
    let ctx = m.ctx.clone();
    let detail = m
        .tenant
        .call(|reply| UsersMsg::ActOnUser {
            id,
            action,
            ctx: ctx.clone(),
            reply,
        })
        .await
        .map_err(|e| not_found_user(e.into()))?;
    Ok(Json(detail.into()))
}

pub async fn delete(m: Manager, id: &str) -> Result<StatusCode, ApiError> {
    m.write()?;
    let id = path_id(id, "user")?;
    m.sensitive()?;
    let ctx = m.ctx.clone();
    m.tenant
        .call(|reply| UsersMsg::DeleteUser {
            id,
            ctx: ctx.clone(),
            reply,
        })
        .await
        .map_err(|e| not_found_user(e.into()))?;
    Ok(StatusCode::NO_CONTENT)
}

// ---------------------------------------------------------------- dashboard routes

/// The tenant's users, newest first (any member). A page can hold fewer than `limit` users
/// while `has_more` is true: each page reads a bounded number of users; follow `next_cursor`.
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/users", tag = "users",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug, UsersQuery),
    responses(
        (status = 200, description = "A page of users", body = ManagedUserList),
        (status = 400, description = "`validation/invalid_request` naming each bad filter", body = ErrorBody),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn dashboard_list(
    State(state): State<AppState>,
    caller: TenantCaller,
    Query(q): Query<UsersQuery>,
) -> Result<Json<ManagedUserList>, ApiError> {
    list(Manager::dashboard(&state, &caller)?, q).await
}

/// Creates a user (admin, owner): with a password, or invited by mail to choose one.
#[utoipa::path(post, path = "/v1/auth/dashboard/tenants/{slug}/users", tag = "users",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    request_body = CreateUserRequest,
    responses(
        (status = 201, description = "The new user", body = ManagedUserDetail),
        (status = 400, description = "`validation/invalid_request`, `auth/weak_password`", body = ErrorBody),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` (viewer), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
        (status = 409, description = "`user/email_in_use`", body = ErrorBody),
        (status = 503, description = "`service/unavailable`: the password hashing queue is full", body = ErrorBody),
    ))]
pub async fn dashboard_create(
    State(state): State<AppState>,
    caller: TenantCaller,
    ApiJson(req): ApiJson<CreateUserRequest>,
) -> Result<Response, ApiError> {
    create(&state, Manager::dashboard(&state, &caller)?, req).await
}

/// One user: profile, factors, live sessions and this month's activity (any member).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/users/{id}", tag = "users",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug, ("id" = String, Path, description = "The user's id")),
    responses(
        (status = 200, description = "The user", body = ManagedUserDetail),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 404, description = "No such user in this tenant, or not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn dashboard_show(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, id)): Path<(String, String)>,
) -> Result<Json<ManagedUserDetail>, ApiError> {
    show(Manager::dashboard(&state, &caller)?, &id).await
}

/// Changes a user's address, number or metadata (admin, owner). A new address needs a
/// re-authentication within 5 minutes. Confirming an address the account held unconfirmed
/// (`email_verified: true`, for it or a new address) hands the account to the address's
/// owner: whoever held it keeps no way in (password, sessions, grants, passkeys, MFA, number,
/// linked accounts, wallets, consents: `auth.account.recovered` lists them) and the address is
/// mailed a reset link.
#[utoipa::path(patch, path = "/v1/auth/dashboard/tenants/{slug}/users/{id}", tag = "users",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug, ("id" = String, Path, description = "The user's id")),
    request_body = UpdateUserRequest,
    responses(
        (status = 200, description = "The user as it is now", body = ManagedUserDetail),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 401, description = "`dashboard/unauthenticated`, `dashboard/reauth_required` (a new address)", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` (viewer), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "No such user in this tenant, or not one of the caller's tenants", body = ErrorBody),
        (status = 409, description = "`user/email_in_use`, `user/phone_in_use`, `user/no_email`", body = ErrorBody),
    ))]
pub async fn dashboard_update(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, id)): Path<(String, String)>,
    ApiJson(req): ApiJson<UpdateUserRequest>,
) -> Result<Json<ManagedUserDetail>, ApiError> {
    update(Manager::dashboard(&state, &caller)?, &id, req).await
}

/// Erases a user and everything keyed to them (admin, owner; a re-authentication within 5
/// minutes). The audit log keeps `user.deleted` with the id only.
#[utoipa::path(delete, path = "/v1/auth/dashboard/tenants/{slug}/users/{id}", tag = "users",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug, ("id" = String, Path, description = "The user's id")),
    responses(
        (status = 204, description = "Erased"),
        ReauthRequired,
        (status = 403, description = "`dashboard/forbidden` (viewer), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "No such user in this tenant, or not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn dashboard_delete(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    delete(Manager::dashboard(&state, &caller)?, &id).await
}

/// Blocks, unblocks, signs out everywhere, resets MFA or mails a password-reset link (admin,
/// owner; `reset-mfa` needs a re-authentication within 5 minutes). A blocked user's sessions
/// end; signing in is then 403 `auth/user_blocked`, answered only after a correct credential.
#[utoipa::path(post, path = "/v1/auth/dashboard/tenants/{slug}/users/{id}/{action}", tag = "users",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("id" = String, Path, description = "The user's id"),
        ("action" = String, Path, description = "`block`, `unblock`, `sign-out`, `reset-mfa` or `send-password-reset`"),
    ),
    responses(
        (status = 200, description = "The user as it is now", body = ManagedUserDetail),
        (status = 401, description = "`dashboard/unauthenticated`, `dashboard/reauth_required` (reset-mfa)", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` (viewer), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "No such user or action, or not one of the caller's tenants", body = ErrorBody),
        (status = 409, description = "`user/no_email` (send-password-reset)", body = ErrorBody),
    ))]
pub async fn dashboard_act(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, id, action)): Path<(String, String, String)>,
) -> Result<Json<ManagedUserDetail>, ApiError> {
    let m = Manager::dashboard(&state, &caller)?;
    act(m, &id, action_of(&action)?).await
}

pub fn action_of(name: &str) -> Result<UserAction, ApiError> {
    Ok(match name {
        "block" => UserAction::Block,
        "unblock" => UserAction::Unblock,
        "sign-out" => UserAction::SignOut,
        "reset-mfa" => UserAction::ResetMfa,
        "send-password-reset" => UserAction::SendPasswordReset,
        _ => return Err(ApiError::for_status(StatusCode::NOT_FOUND)),
    })
}

// ---------------------------------------------------------------- management-key routes

/// The tenant's users, newest first (any management key); as the dashboard's list.
#[utoipa::path(get, path = "/v1/management/users", tag = "management",
    security(("management_key" = [])),
    params(UsersQuery),
    responses(
        (status = 200, description = "A page of users", body = ManagedUserList),
        (status = 400, description = "`validation/invalid_request` naming each bad filter", body = ErrorBody),
        InvalidManagementKey,
    ))]
pub async fn key_list(
    key: Management,
    Query(q): Query<UsersQuery>,
) -> Result<Json<ManagedUserList>, ApiError> {
    list(Manager::key(key), q).await
}

/// Creates a user (admin key).
#[utoipa::path(post, path = "/v1/management/users", tag = "management",
    security(("management_key" = [])),
    request_body = CreateUserRequest,
    responses(
        (status = 201, description = "The new user", body = ManagedUserDetail),
        (status = 400, description = "`validation/invalid_request`, `auth/weak_password`", body = ErrorBody),
        InvalidManagementKey,
        (status = 403, description = "`management/forbidden` (viewer key)", body = ErrorBody),
        (status = 409, description = "`user/email_in_use`", body = ErrorBody),
        (status = 503, description = "`service/unavailable`: the password hashing queue is full", body = ErrorBody),
    ))]
pub async fn key_create(
    State(state): State<AppState>,
    key: Management,
    ApiJson(req): ApiJson<CreateUserRequest>,
) -> Result<Response, ApiError> {
    create(&state, Manager::key(key), req).await
}

/// One user (any management key).
#[utoipa::path(get, path = "/v1/management/users/{id}", tag = "management",
    security(("management_key" = [])),
    params(("id" = String, Path, description = "The user's id")),
    responses(
        (status = 200, description = "The user", body = ManagedUserDetail),
        InvalidManagementKey,
        (status = 404, description = "No such user in the key's tenant", body = ErrorBody),
    ))]
pub async fn key_show(
    key: Management,
    Path(id): Path<String>,
) -> Result<Json<ManagedUserDetail>, ApiError> {
    show(Manager::key(key), &id).await
}

/// Changes a user's address, number or metadata (admin key). Confirming an address the
/// account held unconfirmed hands the account to the address's owner, as on the dashboard's
/// route.
#[utoipa::path(patch, path = "/v1/management/users/{id}", tag = "management",
    security(("management_key" = [])),
    params(("id" = String, Path, description = "The user's id")),
    request_body = UpdateUserRequest,
    responses(
        (status = 200, description = "The user as it is now", body = ManagedUserDetail),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        InvalidManagementKey,
        (status = 403, description = "`management/forbidden` (viewer key)", body = ErrorBody),
        (status = 404, description = "No such user in the key's tenant", body = ErrorBody),
        (status = 409, description = "`user/email_in_use`, `user/phone_in_use`, `user/no_email`", body = ErrorBody),
    ))]
pub async fn key_update(
    key: Management,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<UpdateUserRequest>,
) -> Result<Json<ManagedUserDetail>, ApiError> {
    update(Manager::key(key), &id, req).await
}

/// Erases a user (admin key).
#[utoipa::path(delete, path = "/v1/management/users/{id}", tag = "management",
    security(("management_key" = [])),
    params(("id" = String, Path, description = "The user's id")),
    responses(
        (status = 204, description = "Erased"),
        InvalidManagementKey,
        (status = 403, description = "`management/forbidden` (viewer key)", body = ErrorBody),
        (status = 404, description = "No such user in the key's tenant", body = ErrorBody),
    ))]
pub async fn key_delete(key: Management, Path(id): Path<String>) -> Result<StatusCode, ApiError> {
    delete(Manager::key(key), &id).await
}

/// Blocks, unblocks, signs out everywhere, resets MFA or mails a password-reset link (admin
/// key).
#[utoipa::path(post, path = "/v1/management/users/{id}/{action}", tag = "management",
    security(("management_key" = [])),
    params(
        ("id" = String, Path, description = "The user's id"),
        ("action" = String, Path, description = "`block`, `unblock`, `sign-out`, `reset-mfa` or `send-password-reset`"),
    ),
    responses(
        (status = 200, description = "The user as it is now", body = ManagedUserDetail),
        InvalidManagementKey,
        (status = 403, description = "`management/forbidden` (viewer key)", body = ErrorBody),
        (status = 404, description = "No such user or action", body = ErrorBody),
        (status = 409, description = "`user/no_email` (send-password-reset)", body = ErrorBody),
    ))]
pub async fn key_act(
    key: Management,
    Path((id, action)): Path<(String, String)>,
) -> Result<Json<ManagedUserDetail>, ApiError> {
    let action = action_of(&action)?;
    act(Manager::key(key), &id, action).await
}

/// How user management's refusals answer.
impl From<UserError> for ApiError {
    fn from(e: UserError) -> Self {
        match e {
            UserError::EmailInUse => ApiError::new(
                StatusCode::CONFLICT,
                "user/email_in_use",
                "another user of this tenant has this e-mail address",
            ),
            UserError::PhoneInUse => ApiError::new(
                StatusCode::CONFLICT,
                "user/phone_in_use",
                "another user of this tenant has confirmed this phone number",
            ),
            UserError::NoEmail => ApiError::new(
                StatusCode::CONFLICT,
                "user/no_email",
                "the user has no e-mail address to send to",
            ),
            UserError::SelfDeletionDisabled => ApiError::new(
                StatusCode::FORBIDDEN,
                "user/self_deletion_disabled",
                "this app does not let users delete their own accounts; ask its support",
            ),
        }
    }
}
