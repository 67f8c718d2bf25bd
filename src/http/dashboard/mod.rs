//! The tenant dashboard API (`/v1/auth/dashboard`): sessions, the caller's tenants, members,
//! settings, API-key rotation and the audit log.
//!
//! Order of checks on every tenant route: a session (401), the CSRF header for a
//! cookie-authenticated write (403 `dashboard/csrf_failed`), membership of the tenant (404,
//! as if it did not exist), the role (403 `dashboard/forbidden`), then the body (400).

pub mod account;
pub mod activity;
pub mod agents;
pub mod audit;
pub mod factors;
pub mod management_keys;
pub mod members;
pub mod oauth_clients;
pub mod pages;
pub mod session;
pub mod settings;
pub mod sms_test;
pub mod social;
pub mod webhooks;

use axum::{
    extract::{FromRequestParts, RawPathParams},
    http::{header, request::Parts, Method, StatusCode},
    response::{IntoResponse, Response},
};
use serde::Serialize;
use std::net::IpAddr;
use tessera_actors::{
    directory::dashboard::{
        DetachedTenant, LoginGate, LoginStep, MemberList, MemberOf, NewSession, SessionInfo,
    },
    error::DirectoryError,
    records::Role,
    tenant::audit::AuditContext,
    CallError, DirectoryMsg, Password, TenantHandle, TenantMsg,
};

use tessera_storage::TenantId;
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{
    bearer::{bearer_header, BearerHeader},
    error::{len_between, ApiError, FieldErrors},
    extract::audit_context,
    path_id::path_id,
};
use crate::app::AppState;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "dashboard_session";
/// The cookie that keeps a browser's dashboard device token (see `known_devices`).
pub const DEVICE_COOKIE: &str = "dashboard_device";
/// How recent a re-authentication must be for sensitive changes.
pub const REAUTH_WINDOW: time::Duration = time::Duration::minutes(5);

/// An authenticated dashboard caller.
#[derive(Clone)]
pub struct Dashboard {
    pub session: SessionInfo,
    pub token: String,
    pub ctx: AuditContext,
}

fn cookie(parts: &Parts, name: &str) -> Option<String> {
    parts
        .headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
        .filter(|v| !v.is_empty())
}

impl FromRequestParts<AppState> for Dashboard {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        // A malformed Authorization header is refused, even with a session cookie: the
        // request meant to send a credential, and is not served by another one instead.
        let (token, via_cookie) = match bearer_header(&parts.headers) {
            BearerHeader::Token(t) => (t.to_owned(), false),
            BearerHeader::Malformed => return Err(ApiError::unauthenticated()),
            BearerHeader::Absent => match cookie(parts, SESSION_COOKIE) {
                Some(t) => (t, true),
                None => return Err(ApiError::unauthenticated()),
            },
        };
        if token.len() > 256 {
            return Err(ApiError::unauthenticated());
        }
        let session = state
            .directory
            .request(|reply| DirectoryMsg::Authenticate {
                token: token.clone(),
                reply,
            })
            .await?;
        let writes = !matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS);
        if via_cookie && writes {
            let ok = parts
                .headers
                .get("x-csrf-token")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| session.csrf_matches(v));
            if !ok {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "dashboard/csrf_failed",
                    "a cookie-authenticated write needs the X-CSRF-Token header of the session",
                ));
            }
        }
        let ctx = audit_context(state, parts, Some(session.account_id));
        Ok(Dashboard {
            session,
            token,
            ctx,
        })
    }
}

impl Dashboard {
    /// The caller's membership of `slug` and the tenant's handle; 404 when not a member.
    pub fn member(
        &self,
        state: &AppState,
        slug: &str,
    ) -> Result<(MemberOf, TenantHandle), ApiError> {
        let m = self
            .session
            .role_in(slug)
            .cloned()
            .ok_or_else(|| ApiError::not_found("tenant"))?;
        let tenant = state
            .directory
            .tenant_for_slug(slug)
            .ok_or_else(|| ApiError::not_found("tenant"))?;
        tracing::Span::current().record("tenant", slug);
        Ok((m, tenant))
    }

    /// Like [`Dashboard::member`], and the caller must be an owner (403 otherwise).
    pub fn owner(
        &self,
        state: &AppState,
        slug: &str,
    ) -> Result<(MemberOf, TenantHandle), ApiError> {
        let (m, t) = self.member(state, slug)?;
        if m.role != Role::Owner {
            return Err(ApiError::forbidden());
        }
        Ok((m, t))
    }

    /// 401 `dashboard/reauth_required` unless the caller re-authenticated in the last five
    /// minutes.
    pub fn require_recent_reauth(&self) -> Result<(), ApiError> {
        let fresh = self
            .session
            .reauth_at
            .is_some_and(|t| OffsetDateTime::now_utc() - t <= REAUTH_WINDOW);
        if fresh {
            Ok(())
        } else {
            Err(reauth_required())
        }
    }
}

/// A dashboard caller on one of a tenant's routes (`/tenants/{slug}/...`): the session, then
/// the route's `{slug}`. Whether the caller is a member (404) or an owner (403) is the
/// handler's to ask, with [`TenantCaller::member`] or [`TenantCaller::owner`], once the rest of
/// the request (its query, its body) has been read. A route with ids after the slug reads them
/// with `Path` beside this.
#[derive(Clone)]
pub struct TenantCaller {
    pub auth: Dashboard,
    pub slug: String,
}

impl FromRequestParts<AppState> for TenantCaller {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let auth = Dashboard::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let params = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let slug = params
            .iter()
            .find(|(name, _)| *name == "slug")
            .map(|(_, value)| value.to_owned())
            .ok_or_else(|| ApiError::internal("a tenant route without {slug}").into_response())?;
        Ok(TenantCaller { auth, slug })
    }
}

impl TenantCaller {
    /// The caller's membership of the route's tenant and the tenant's handle; 404 when not a
    /// member.
    pub fn member(&self, state: &AppState) -> Result<(MemberOf, TenantHandle), ApiError> {
        self.auth.member(state, &self.slug)
    }

    /// Like [`TenantCaller::member`], and the caller must be an owner (403 otherwise).
    pub fn owner(&self, state: &AppState) -> Result<(MemberOf, TenantHandle), ApiError> {
        self.auth.owner(state, &self.slug)
    }

    /// [`TenantCaller::member`], then the id of the item the route names after the slug
    /// (`raw`; 404 naming `what` when it is not an id).
    pub fn member_item(
        &self,
        state: &AppState,
        raw: &str,
        what: &str,
    ) -> Result<(MemberOf, TenantHandle, Uuid), ApiError> {
        let (m, tenant) = self.member(state)?;
        Ok((m, tenant, path_id(raw, what)?))
    }

    /// [`TenantCaller::owner`], then the id of the item the route names after the slug, as
    /// [`TenantCaller::member_item`] reads it.
    pub fn owner_item(
        &self,
        state: &AppState,
        raw: &str,
        what: &str,
    ) -> Result<(MemberOf, TenantHandle, Uuid), ApiError> {
        let (m, tenant) = self.owner(state)?;
        Ok((m, tenant, path_id(raw, what)?))
    }
}

/// The tenant's members and pending invitations.
pub async fn members_of(state: &AppState, tenant: TenantId) -> Result<MemberList, ApiError> {
    Ok(state
        .directory
        .request(|reply| DirectoryMsg::ListMembers { tenant, reply })
        .await?)
}

/// What the dashboard shows of a keyed hash (of a client address, of a User-Agent): its first
/// 12 characters.
pub fn hash_prefix(hash: Option<String>) -> Option<String> {
    hash.map(|h| h.chars().take(12).collect())
}

/// 201 with `body`: the answer of a route that made something.
pub fn created(body: impl Serialize) -> Response {
    (StatusCode::CREATED, axum::Json(body)).into_response()
}

/// 401 `dashboard/reauth_required`.
pub fn reauth_required() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "dashboard/reauth_required",
        "re-authenticate (POST /v1/auth/dashboard/reauth) and retry within 5 minutes",
    )
}

// Shared by the dashboard's handlers.

fn invalid_credentials() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "dashboard/invalid_credentials",
        "wrong e-mail or password",
    )
}

/// Checks `password` for `email` with the throttles; on success answers the account id.
pub async fn check_password(
    state: &AppState,
    email: &str,
    password: &Password,
    (ip, device_token): (std::net::IpAddr, Option<&str>),
) -> Result<CheckedPassword, ApiError> {
    let device_token = device_token.map(str::to_owned);
    let gate = state
        .directory
        .call(|reply| DirectoryMsg::BeginLogin {
            email: email.to_owned(),
            ip,
            device_token: device_token.clone(),
            reply,
        })
        .await?;
    let cred = match gate {
        LoginGate::Throttled { retry_after_secs } => {
            return Err(ApiError::rate_limited(
                "dashboard/rate_limited",
                retry_after_secs,
            ))
        }
        LoginGate::Proceed(cred) => cred,
    };
    // Unknown accounts are hashed against a dummy: the answer takes as long either way.
    let ok = state
        .hasher
        .verify(password, cred.as_ref().map(|c| c.password_hash.as_str()))
        .await?;
    let device = cred.as_ref().and_then(|c| c.device);
    match (ok, cred) {
        (true, Some(c)) => Ok(CheckedPassword {
            account_id: c.account_id,
            device,
        }),
        _ => {
            let failed = email.to_owned();
            state
                .directory
                .call(|reply| DirectoryMsg::LoginFailed {
                    email: failed,
                    ip,
                    device,
                    reply,
                })
                .await?;
            Err(invalid_credentials())
        }
    }
}

/// A dashboard password that checked out: its account, and the known device it came from.
pub struct CheckedPassword {
    pub account_id: Uuid,
    pub device: Option<Uuid>,
}

impl CheckedPassword {
    /// The login's next step after the password, from `ip`: a session, or the second
    /// factor's challenge.
    pub async fn next_step(
        &self,
        state: &AppState,
        ip: IpAddr,
    ) -> Result<LoginStep, DirectoryCall> {
        password_accepted(state, self.account_id, ip, self.device).await
    }
}

/// What a call to the directory answers when it fails.
pub type DirectoryCall = CallError<DirectoryError>;

/// The login's next step once `account_id`'s password is known good (from `ip`, on the
/// known `device`): a session, or the second factor's challenge.
pub async fn password_accepted(
    state: &AppState,
    account_id: Uuid,
    ip: IpAddr,
    device: Option<Uuid>,
) -> Result<LoginStep, DirectoryCall> {
    state
        .directory
        .request(|reply| DirectoryMsg::PasswordAccepted {
            account_id,
            ip,
            device,
            reply,
        })
        .await
}

/// A login's second factor: the `code` for its `challenge` (from `ip`) opens the session.
pub async fn mfa_login(
    state: &AppState,
    challenge: String,
    code: String,
    ip: IpAddr,
) -> Result<NewSession, DirectoryCall> {
    state
        .directory
        .request(|reply| DirectoryMsg::MfaLogin {
            challenge,
            code,
            ip,
            reply,
        })
        .await
}

/// Records one event in each listed tenant's audit log (best effort: logged when it fails).
pub async fn audit_in(
    state: &AppState,
    slugs: Vec<String>,
    event_type: &str,
    ctx: &AuditContext,
    metadata: serde_json::Value,
) {
    for slug in slugs {
        let Some(tenant) = state.directory.tenant_for_slug(&slug) else {
            continue;
        };
        let result = tenant
            .call(|reply| TenantMsg::AppendAudit {
                event_type: event_type.to_owned(),
                ctx: ctx.clone(),
                fields: Vec::new(),
                metadata: metadata.clone(),
                reply,
            })
            .await;
        if result.is_err() {
            tracing::error!(tenant = %slug, event_type, "could not write an audit event");
        }
    }
}

/// A tenant the account was detached from when a mailbox proof took it over: the account
/// had never been verified, so whoever created it (and holds the tenant's API key) made the
/// tenant, not the holder of the address. The tenant keeps running; the account is no longer
/// its member.
#[derive(Serialize, ToSchema)]
pub struct DetachedTenantRef {
    pub slug: String,
    pub name: String,
}

/// The answers' view of the detached tenants.
pub fn detached_refs(detached: &[DetachedTenant]) -> Vec<DetachedTenantRef> {
    detached
        .iter()
        .map(|d| DetachedTenantRef {
            slug: d.slug.clone(),
            name: d.name.clone(),
        })
        .collect()
}

/// Records `member.detached` in the audit log of each tenant a takeover detached the account
/// from (`via`: `invitation` or `password_reset`, the proof that took it over).
pub async fn audit_detached(
    state: &AppState,
    account_id: Uuid,
    detached: &[DetachedTenant],
    ctx: &AuditContext,
    via: &str,
) {
    for d in detached {
        audit_in(
            state,
            vec![d.slug.clone()],
            "member.detached",
            ctx,
            serde_json::json!({
                "member": account_id,
                "role": d.role,
                "reason": "account_reclaimed",
                "via": via,
            }),
        )
        .await;
    }
}

/// The field errors of a mailed token (1-512 characters).
pub fn token_errors(token: &str) -> FieldErrors {
    let mut e = FieldErrors::new();
    e.check(
        "token",
        len_between(token, 1, 512),
        "must be 1-512 characters",
    );
    e
}

/// A mailed token and a password of `min`-128 characters, every bad field at once.
pub fn check_token_and_password(token: &str, password: &str, min: usize) -> Result<(), ApiError> {
    let mut e = token_errors(token);
    e.check(
        "password",
        len_between(password, min, 128),
        format!("must be {min}-128 characters"),
    );
    e.finish()
}
