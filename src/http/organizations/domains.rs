//! An organization's domains over HTTP (the tenant's admins; served twice like the other
//! organization routes): claimed, proven by a DNS TXT record the server looks up when asked
//! (`[dns]`), set to add the users who sign in at them, removed.

use axum::{http::StatusCode, response::Response, Json};
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::organizations::{
    domains::{proof_name, proof_value, DomainChange},
    msg::{OrgAnswer, OrgCmd},
    OrgDomainRecord,
};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::{unexpected, OrgAdmin};
use crate::{
    app::AppState,
    http::{
        dashboard::created,
        error::{ApiError, ErrorBody, FieldErrors},
        error_responses::InvalidFields,
        extract::ApiJson,
        fields::normalize_domain,
        path_id::{not_found_as, TenantSlug},
    },
};

/// A domain an organization claims.
#[derive(Serialize, ToSchema)]
pub struct OrganizationDomain {
    pub domain: String,
    /// Proven: a TXT record at `txt_name` held `txt_value` when last checked.
    pub verified: bool,
    #[serde(with = "time::serde::rfc3339::option")]
    pub verified_at: Option<OffsetDateTime>,
    /// Where the TXT record goes.
    #[schema(example = "_tessera-verification.example.com")]
    pub txt_name: String,
    /// What it must hold.
    #[schema(example = "tessera-verification=5f2c...")]
    pub txt_value: String,
    /// Users who sign in with a confirmed address at the domain join as `member` (once it
    /// is proven).
    pub auto_join: bool,
    /// Addresses at the domain sign in only through the organization's single sign-on (once
    /// it is proven and the organization has an enabled connection): password sign-in,
    /// registration and mailed codes and links refuse them with 403 `auth/sso_required`.
    pub sso_only: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl From<OrgDomainRecord> for OrganizationDomain {
    fn from(d: OrgDomainRecord) -> Self {
        OrganizationDomain {
            txt_name: proof_name(&d.domain),
            txt_value: proof_value(&d.token),
            verified: d.verified_at.is_some(),
            verified_at: d.verified_at,
            auto_join: d.auto_join,
            sso_only: d.sso_only,
            created_at: d.created_at,
            domain: d.domain,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct OrganizationDomainList {
    pub data: Vec<OrganizationDomain>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddDomainRequest {
    /// A domain name of at least two labels (an internationalised one is stored as punycode).
    #[serde(default)]
    #[schema(min_length = 1, max_length = 253, required = true)]
    pub domain: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateDomainRequest {
    /// Unchanged when absent.
    #[serde(default)]
    pub auto_join: Option<bool>,
    /// Unchanged when absent.
    #[serde(default)]
    pub sso_only: Option<bool>,
}

fn domain_of(answer: OrgAnswer) -> Result<OrganizationDomain, ApiError> {
    match answer {
        OrgAnswer::Domain(d) => Ok((*d).into()),
        _ => Err(unexpected()),
    }
}

/// The path's domain, normalised; 404 when it cannot be one.
fn path_domain(a: &OrgAdmin) -> Result<String, ApiError> {
    normalize_domain(a.param("domain")?).ok_or_else(|| ApiError::not_found("domain"))
}

/// An organization's domains (any member).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/organizations/{org_id}/domains", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug, ("org_id" = String, Path, description = "The organization's id")),
    responses(
        (status = 200, description = "The domains", body = OrganizationDomainList),
        (status = 404, description = "`resource/not_found`: no such organization; or not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn list(a: OrgAdmin) -> Result<Json<OrganizationDomainList>, ApiError> {
    let org = a.id("org_id", "organization")?;
    match a
        .call(OrgCmd::Domains(org))
        .await
        .map_err(|e| not_found_as("organization", e))?
    {
        OrgAnswer::Domains(all) => Ok(Json(OrganizationDomainList {
            data: all.into_iter().map(Into::into).collect(),
        })),
        _ => Err(unexpected()),
    }
}

/// Claims a domain (admin, owner): the answer names the TXT record that proves it.
#[utoipa::path(post, path = "/v1/auth/dashboard/tenants/{slug}/organizations/{org_id}/domains", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug, ("org_id" = String, Path, description = "The organization's id")),
    request_body = AddDomainRequest,
    responses(
        (status = 201, description = "The claim, not proven yet", body = OrganizationDomain),
        InvalidFields,
        (status = 403, description = "`dashboard/forbidden` (viewer), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: no such organization; or not one of the caller's tenants", body = ErrorBody),
        (status = 409, description = "`organization/domain_claimed` (by this organization); `organization/domain_taken` (proven by another); `organization/limit_reached` (20 domains)", body = ErrorBody),
    ))]
pub async fn add(
    a: OrgAdmin,
    ApiJson(req): ApiJson<AddDomainRequest>,
) -> Result<Response, ApiError> {
    a.m.write()?;
    let org = a.id("org_id", "organization")?;
    let mut e = FieldErrors::new();
    let domain = normalize_domain(req.domain.trim());
    e.check(
        "domain",
        domain.is_some(),
        "must be a domain name of at least two labels",
    );
    e.finish()?;
    let cmd = OrgCmd::AddDomain {
        org,
        domain: domain.unwrap_or_default(),
    };
    let d = domain_of(
        a.call(cmd)
            .await
            .map_err(|e| not_found_as("organization", e))?,
    )?;
    Ok(created(d))
}

/// Looks the claim's TXT record up now and, when it holds the claim's value, marks the domain
/// proven (admin, owner). A domain proven by another organization of the tenant stays its.
#[utoipa::path(post, path = "/v1/auth/dashboard/tenants/{slug}/organizations/{org_id}/domains/{domain}/verify", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("org_id" = String, Path, description = "The organization's id"),
        ("domain" = String, Path, description = "The claimed domain"),
    ),
    responses(
        (status = 200, description = "The domain, proven", body = OrganizationDomain),
        (status = 403, description = "`dashboard/forbidden` (viewer), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: no such claim; or not one of the caller's tenants", body = ErrorBody),
        (status = 409, description = "`organization/domain_unproven` (`details.txt_name` and `details.txt_value` say what to publish); `organization/domain_taken`", body = ErrorBody),
        (status = 502, description = "`organization/dns_unavailable`: no nameserver answered", body = ErrorBody),
    ))]
pub async fn verify(
    axum::extract::State(state): axum::extract::State<AppState>,
    a: OrgAdmin,
) -> Result<Json<OrganizationDomain>, ApiError> {
    a.m.write()?;
    let org = a.id("org_id", "domain")?;
    let domain = path_domain(&a)?;
    // The claim first: no lookup for a domain the organization does not claim.
    let claimed = match a
        .call(OrgCmd::Domains(org))
        .await
        .map_err(|e| not_found_as("domain", e))?
    {
        OrgAnswer::Domains(all) => all.into_iter().any(|d| d.domain == domain),
        _ => return Err(unexpected()),
    };
    if !claimed {
        return Err(ApiError::not_found("domain"));
    }
    let values = state.dns.txt(&proof_name(&domain)).await.map_err(|e| {
        tracing::warn!(domain = %domain, error = %e, "a domain proof could not be looked up");
        ApiError::new(
            StatusCode::BAD_GATEWAY,
            "organization/dns_unavailable",
            "no nameserver answered the lookup; try again later",
        )
    })?;
    let cmd = OrgCmd::VerifyDomain {
        org,
        domain,
        values,
    };
    Ok(Json(domain_of(
        a.call(cmd).await.map_err(|e| not_found_as("domain", e))?,
    )?))
}

/// Sets whether the users who sign in with a confirmed address at the domain join the
/// organization as `member`, and whether they sign in only through its single sign-on
/// (admin, owner); both take effect once the domain is proven. A member an admin removed is
/// not added again by the domain.
#[utoipa::path(patch, path = "/v1/auth/dashboard/tenants/{slug}/organizations/{org_id}/domains/{domain}", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("org_id" = String, Path, description = "The organization's id"),
        ("domain" = String, Path, description = "The claimed domain"),
    ),
    request_body = UpdateDomainRequest,
    responses(
        (status = 200, description = "The domain", body = OrganizationDomain),
        InvalidFields,
        (status = 403, description = "`dashboard/forbidden` (viewer), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: no such claim; or not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn update(
    a: OrgAdmin,
    ApiJson(req): ApiJson<UpdateDomainRequest>,
) -> Result<Json<OrganizationDomain>, ApiError> {
    a.m.write()?;
    let org = a.id("org_id", "domain")?;
    let domain = path_domain(&a)?;
    let cmd = OrgCmd::UpdateDomain {
        org,
        domain,
        change: DomainChange {
            auto_join: req.auto_join,
            sso_only: req.sso_only,
        },
    };
    Ok(Json(domain_of(
        a.call(cmd).await.map_err(|e| not_found_as("domain", e))?,
    )?))
}

/// Removes a claim (admin, owner); a proven domain is free for another organization then.
#[utoipa::path(delete, path = "/v1/auth/dashboard/tenants/{slug}/organizations/{org_id}/domains/{domain}", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("org_id" = String, Path, description = "The organization's id"),
        ("domain" = String, Path, description = "The claimed domain"),
    ),
    responses(
        (status = 204, description = "Removed"),
        (status = 403, description = "`dashboard/forbidden` (viewer), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: no such claim; or not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn remove(a: OrgAdmin) -> Result<StatusCode, ApiError> {
    a.m.write()?;
    let org = a.id("org_id", "domain")?;
    let domain = path_domain(&a)?;
    a.call(OrgCmd::RemoveDomain { org, domain })
        .await
        .map_err(|e| not_found_as("domain", e))?;
    Ok(StatusCode::NO_CONTENT)
}
