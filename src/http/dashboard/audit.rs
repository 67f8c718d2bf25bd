//! `GET .../audit-events`: the tenant's audit log, newest first.

use axum::{
    extract::{Query, State},
    Json,
};
use serde::{Deserialize, Serialize};
use tessera_actors::TenantMsg;
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::{hash_prefix, Dashboard, TenantCaller};
use crate::app::AppState;
use crate::http::{
    error::{ApiError, ErrorBody, FieldErrors},
    paging::{self, Pagination},
    path_id::TenantSlug,
};

#[derive(Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// 1-200, default 50. Read as text so a bad value is a named field error.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 200)]
    pub limit: Option<String>,
    /// Only events of this type, e.g. `settings.security.updated`.
    #[serde(rename = "type")]
    #[param(rename = "type")]
    pub event_type: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct AuditEventResponse {
    /// Also usable as a cursor.
    pub id: String,
    #[serde(rename = "type")]
    pub event_type: String,
    /// The dashboard account that acted.
    pub actor_account_id: Option<Uuid>,
    /// The management key that acted (a tenant's back end).
    pub actor_management_key_id: Option<Uuid>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Names of the changed fields; never their secret values.
    pub fields: Vec<String>,
    /// The first 12 characters of the keyed hash of the client address.
    pub ip_hash_prefix: Option<String>,
    pub ua_family: Option<String>,
    #[schema(value_type = Object)]
    pub metadata: serde_json::Value,
}

#[derive(Serialize, ToSchema)]
pub struct AuditEventList {
    pub data: Vec<AuditEventResponse>,
    pub pagination: Pagination,
}

/// The tenant's audit events, newest first (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/audit-events", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug, AuditQuery),
    responses(
        (status = 200, description = "A page of events", body = AuditEventList),
        (status = 400, description = "`validation/invalid_request` (cursor, limit)", body = ErrorBody),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    caller: TenantCaller,
    Query(q): Query<AuditQuery>,
) -> Result<Json<AuditEventList>, ApiError> {
    page(&state, &caller.auth, &caller.slug, &q).await.map(Json)
}

/// One page of the audit log of `slug` for a member (the API's route and the console's).
pub async fn page(
    state: &AppState,
    auth: &Dashboard,
    slug: &str,
    q: &AuditQuery,
) -> Result<AuditEventList, ApiError> {
    let (_, tenant) = auth.member(state, slug)?;
    let mut e = FieldErrors::new();
    let limit = paging::limit(&mut e, q.limit.as_deref(), 50, 200);
    let cursor = paging::cursor(&mut e, q.cursor.as_deref(), paging::key_cursor(12));
    if let Some(t) = &q.event_type {
        e.check(
            "type",
            (1..=100).contains(&t.len()),
            "must be 1-100 characters",
        );
    }
    e.finish()?;
    let page = tenant
        .call(|reply| TenantMsg::ListAudit {
            cursor: cursor.clone(),
            limit,
            event_type: q.event_type.clone(),
            reply,
        })
        .await?;
    let data = page
        .events
        .into_iter()
        .map(|(key, ev)| AuditEventResponse {
            id: hex::encode(key),
            event_type: ev.event_type,
            actor_account_id: ev.actor,
            actor_management_key_id: ev.management_key,
            created_at: ev.at,
            fields: ev.fields,
            ip_hash_prefix: hash_prefix(ev.ip_hash),
            ua_family: ev.ua_family,
            // Always an object (spec 6): events recorded without context carry `null`.
            metadata: match ev.metadata {
                serde_json::Value::Object(_) => ev.metadata,
                _ => serde_json::Value::Object(serde_json::Map::new()),
            },
        })
        .collect();
    Ok(AuditEventList {
        data,
        pagination: Pagination::next(page.next_cursor.map(hex::encode)),
    })
}
