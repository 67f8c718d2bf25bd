//! Management keys as credentials: `Authorization: Bearer tmk_...` on `/v1/management/...`,
//! the routes a tenant's back end manages the tenant's users with. No API key, no cookie, no
//! CSRF (and no CORS: a browser must never hold such a key). The key names its tenant and its
//! role; an unknown, revoked or expired key gets one answer.

use axum::{
    extract::{FromRequestParts, State},
    http::{request::Parts, StatusCode},
    Json,
};
use serde::Serialize;
use tessera_actors::{
    directory::MANAGEMENT_KEY_PREFIX, records::Role, tenant::audit::AuditContext, DirectoryMsg,
    TenantHandle, TenantMsg,
};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{
    bearer::{bearer_header, BearerHeader},
    dashboard::management_keys::ManagementKeyResponse,
    error::ApiError,
    extract::audit_context,
};
use crate::app::AppState;
use crate::http::error_responses::InvalidManagementKey;

/// A request made with a management key.
pub struct Management {
    pub tenant: TenantHandle,
    pub role: Role,
    pub key_id: Uuid,
    /// Records the key as the actor.
    pub ctx: AuditContext,
}

fn invalid_key() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "management/invalid_key",
        "the management key is unknown, revoked or expired",
    )
}

impl Management {
    /// 403 `management/forbidden`: a viewer key asked to write.
    pub fn forbidden() -> ApiError {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "management/forbidden",
            "this management key's role does not allow this",
        )
    }
}

impl FromRequestParts<AppState> for Management {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let key = match bearer_header(&parts.headers) {
            BearerHeader::Absent => {
                return Err(ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "auth/missing_token",
                    "send the management key as Authorization: Bearer tmk_...",
                ))
            }
            BearerHeader::Malformed => {
                return Err(ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "auth/invalid_token",
                    "the Authorization header is malformed",
                ))
            }
            BearerHeader::Token(t) => t,
        };
        if !key.starts_with(MANAGEMENT_KEY_PREFIX) || key.len() > 128 {
            return Err(invalid_key());
        }
        let (tenant, grant) = state
            .directory
            .management_key(key)
            .ok_or_else(invalid_key)?;
        if grant
            .expires_at
            .is_some_and(|t| t <= OffsetDateTime::now_utc())
        {
            return Err(invalid_key());
        }
        tracing::Span::current().record("tenant", tenant.slug.as_str());
        let mut ctx = audit_context(state, parts, None);
        ctx.management_key = Some(grant.id);
        Ok(Management {
            tenant,
            role: grant.role,
            key_id: grant.id,
            ctx,
        })
    }
}

#[derive(Serialize, ToSchema)]
pub struct KeyTenant {
    pub slug: String,
    pub name: String,
}

/// The calling key and its tenant.
#[derive(Serialize, ToSchema)]
pub struct CurrentKeyResponse {
    #[serde(flatten)]
    pub key: ManagementKeyResponse,
    pub tenant: KeyTenant,
}

/// The calling management key and its tenant: a back end's check of its configuration.
#[utoipa::path(get, path = "/v1/management/key", tag = "management",
    security(("management_key" = [])),
    responses(
        (status = 200, description = "The key (never the secret) and its tenant", body = CurrentKeyResponse),
        InvalidManagementKey,
    ))]
pub async fn current_key(
    State(state): State<AppState>,
    key: Management,
) -> Result<Json<CurrentKeyResponse>, ApiError> {
    let tenant = key.tenant.id;
    let keys = state
        .directory
        .request(|reply| DirectoryMsg::ListManagementKeys { tenant, reply })
        .await?;
    let record = keys
        .into_iter()
        .find(|k| k.id == key.key_id && k.revoked_at.is_none())
        .ok_or_else(invalid_key)?;
    let overview = key
        .tenant
        .call(|reply| TenantMsg::GetOverview { reply })
        .await?;
    Ok(Json(CurrentKeyResponse {
        key: record.into(),
        tenant: KeyTenant {
            slug: overview.info.slug,
            name: overview.info.name,
        },
    }))
}
