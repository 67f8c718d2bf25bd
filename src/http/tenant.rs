//! The tenant of the calling API key.

use axum::{extract::Path, Json};
use serde::Serialize;
use tessera_actors::{tenant::TenantOverview, TenantMsg};
use time::OffsetDateTime;
use utoipa::{IntoResponses, ToSchema};
use uuid::Uuid;

use super::{
    error::{ApiError, ErrorBody},
    extract::ApiTenant,
};
use crate::http::path_id::TenantSlug;

#[derive(Serialize, ToSchema)]
pub struct ApiKeyInfo {
    /// The visible start of the key; the key itself is never shown again.
    pub prefix: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

#[derive(Serialize, ToSchema)]
pub struct TenantResponse {
    pub id: Uuid,
    pub slug: String,
    pub name: String,
    /// `free`, `pro` or `enterprise`.
    pub tier: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub api_key: ApiKeyInfo,
}

impl From<TenantOverview> for TenantResponse {
    fn from(o: TenantOverview) -> Self {
        TenantResponse {
            id: o.info.id.0,
            slug: o.info.slug,
            name: o.info.name,
            tier: o.info.tier.as_str().to_owned(),
            created_at: o.info.created_at,
            api_key: ApiKeyInfo {
                prefix: o.info.api_key_prefix,
                created_at: o.info.api_key_created_at,
            },
        }
    }
}

/// What both routes answer alike: the tenant, or 401 for a missing or unknown API key.
#[derive(IntoResponses)]
pub enum CallersTenant {
    #[response(status = 200, description = "The caller's tenant")]
    Tenant(TenantResponse),
    #[response(
        status = 401,
        description = "`auth/missing_api_key` or `auth/invalid_api_key`"
    )]
    Unauthorized(ErrorBody),
}

/// The tenant that owns the API key.
#[utoipa::path(get, path = "/v1/tenant", tag = "tenant",
    security(("api_key" = [])),
    responses(
        CallersTenant,
        (status = 503, description = "`service/unavailable`", body = ErrorBody),
    ))]
pub async fn current_tenant(
    ApiTenant(tenant): ApiTenant,
) -> Result<Json<TenantResponse>, ApiError> {
    let overview = tenant
        .call(|reply| TenantMsg::GetOverview { reply })
        .await?;
    Ok(Json(overview.into()))
}

/// A tenant by slug: only the key's own tenant is visible; any other slug is 404.
#[utoipa::path(get, path = "/v1/tenants/{slug}", tag = "tenant",
    security(("api_key" = [])),
    params(TenantSlug),
    responses(
        CallersTenant,
        (status = 404, description = "`resource/not_found`: not the key's tenant", body = ErrorBody),
    ))]
pub async fn tenant_by_slug(
    ApiTenant(tenant): ApiTenant,
    Path(slug): Path<String>,
) -> Result<Json<TenantResponse>, ApiError> {
    if slug != tenant.slug {
        return Err(ApiError::not_found("tenant"));
    }
    current_tenant(ApiTenant(tenant)).await
}
