//! A tenant's management keys: secrets (`tmk_...`) its back end calls `/v1/management/...`
//! with. Listed by any member, created (after a re-authentication within 5 minutes) and
//! revoked by owners; the key itself is shown once.

use axum::{
    extract::{Path, State},
    response::Response,
    Json,
};
use serde::{Deserialize, Serialize};
use tessera_actors::{
    directory::messages::NewManagementKey,
    records::{ManagementKeyRecord, Role},
    DirectoryMsg,
};
use time::{format_description::well_known::Rfc3339, OffsetDateTime};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{audit_in, created, TenantCaller};
use crate::app::AppState;
use crate::http::error_responses::ReauthRequired;
use crate::http::{
    error::{len_between, ApiError, ErrorBody, FieldErrors},
    extract::ApiJson,
    path_id::{not_found_as, TenantSlug},
};

/// A management key as listed: never the key itself.
#[derive(Serialize, ToSchema)]
pub struct ManagementKeyResponse {
    pub id: Uuid,
    pub name: String,
    /// `admin` or `viewer`.
    pub role: String,
    /// The key's first 12 characters.
    pub prefix: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// The dashboard account that created it.
    pub created_by: Uuid,
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub revoked_at: Option<OffsetDateTime>,
}

impl From<ManagementKeyRecord> for ManagementKeyResponse {
    fn from(k: ManagementKeyRecord) -> Self {
        ManagementKeyResponse {
            id: k.id,
            name: k.name,
            role: k.role.as_str().to_owned(),
            prefix: k.prefix,
            created_at: k.created_at,
            created_by: k.created_by,
            expires_at: k.expires_at,
            revoked_at: k.revoked_at,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct ManagementKeyList {
    /// Newest first, revoked keys included.
    pub data: Vec<ManagementKeyResponse>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateManagementKeyRequest {
    /// 1-64 characters, for people.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 64, required = true)]
    pub name: String,
    /// `admin` (reads and writes users) or `viewer` (reads).
    #[serde(default)]
    #[schema(required = true)]
    pub role: String,
    /// RFC 3339, in the future; none: the key lives until revoked.
    pub expires_at: Option<String>,
}

/// A new key: the only answer that holds the key itself.
#[derive(Serialize, ToSchema)]
pub struct CreatedManagementKeyResponse {
    #[serde(flatten)]
    pub record: ManagementKeyResponse,
    /// `tmk_...`: keep it secret, on the back end only. Shown once.
    pub key: String,
}

/// The tenant's management keys (any member).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/management-keys", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    responses(
        (status = 200, description = "The keys, never their secrets", body = ManagementKeyList),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    caller: TenantCaller,
) -> Result<Json<ManagementKeyList>, ApiError> {
    let (_, tenant) = caller.member(&state)?;
    let tenant = tenant.id;
    let keys = state
        .directory
        .request(|reply| DirectoryMsg::ListManagementKeys { tenant, reply })
        .await?;
    Ok(Json(ManagementKeyList {
        data: keys.into_iter().map(Into::into).collect(),
    }))
}

/// Creates a management key (owner, re-authenticated in the last 5 minutes); the key is in
/// this answer only. At most 20 unrevoked keys a tenant.
#[utoipa::path(post, path = "/v1/auth/dashboard/tenants/{slug}/management-keys", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    request_body = CreateManagementKeyRequest,
    responses(
        (status = 201, description = "The key, shown once", body = CreatedManagementKeyResponse),
        (status = 400, description = "`validation/invalid_request` naming each bad field", body = ErrorBody),
        ReauthRequired,
        (status = 403, description = "`dashboard/forbidden` (not an owner), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
        (status = 409, description = "`management_key/limit_reached`", body = ErrorBody),
    ))]
pub async fn create(
    State(state): State<AppState>,
    caller: TenantCaller,
    ApiJson(req): ApiJson<CreateManagementKeyRequest>,
) -> Result<Response, ApiError> {
    let (_, tenant) = caller.owner(&state)?;
    let mut e = FieldErrors::new();
    let name = req.name.trim().to_owned();
    e.check("name", len_between(&name, 1, 64), "must be 1-64 characters");
    let role = match Role::parse(&req.role) {
        Some(r @ (Role::Admin | Role::Viewer)) => Some(r),
        _ => None,
    };
    e.check("role", role.is_some(), "must be admin or viewer");
    let now = OffsetDateTime::now_utc();
    let expires_at = req
        .expires_at
        .as_deref()
        .map(|t| OffsetDateTime::parse(t, &Rfc3339).ok().filter(|t| *t > now));
    e.check(
        "expires_at",
        expires_at.as_ref().is_none_or(Option::is_some),
        "must be an RFC 3339 date-time in the future",
    );
    e.finish()?;
    caller.auth.require_recent_reauth()?;
    let key = NewManagementKey {
        tenant: tenant.id,
        name,
        role: role.unwrap_or(Role::Viewer),
        expires_at: expires_at.flatten(),
        created_by: caller.auth.session.account_id,
    };
    let made = state
        .directory
        .request(|reply| DirectoryMsg::CreateManagementKey {
            key: key.clone(),
            reply,
        })
        .await?;
    let rec = &made.record;
    audit_in(
        &state,
        vec![caller.slug],
        "management_key.created",
        &caller.auth.ctx,
        serde_json::json!({
            "key_id": rec.id,
            "name": rec.name,
            "role": rec.role.as_str(),
            "prefix": rec.prefix,
        }),
    )
    .await;
    Ok(created(CreatedManagementKeyResponse {
        record: made.record.into(),
        key: made.key,
    }))
}

/// Revokes a management key (owner): it stops working at once. Revoking it again answers
/// the same record.
#[utoipa::path(delete, path = "/v1/auth/dashboard/tenants/{slug}/management-keys/{id}", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("id" = String, Path, description = "The key's id"),
    ),
    responses(
        (status = 200, description = "The revoked key", body = ManagementKeyResponse),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` (not an owner), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "No such key of this tenant, or not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn revoke(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, id)): Path<(String, String)>,
) -> Result<Json<ManagementKeyResponse>, ApiError> {
    let (_, tenant, id) = caller.owner_item(&state, &id, "management key")?;
    let tenant = tenant.id;
    let (rec, revoked_now) = state
        .directory
        .request(|reply| DirectoryMsg::RevokeManagementKey { tenant, id, reply })
        .await
        .map_err(|e| not_found_as("management key", e))?;
    if revoked_now {
        audit_in(
            &state,
            vec![caller.slug],
            "management_key.revoked",
            &caller.auth.ctx,
            serde_json::json!({ "key_id": rec.id, "name": rec.name, "role": rec.role.as_str() }),
        )
        .await;
    }
    Ok(Json(rec.into()))
}
