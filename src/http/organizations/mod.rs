//! Organizations over HTTP: the tenant's admins manage organizations, their members,
//! invitations and the roles (`admin.rs`), served twice like user management: to dashboard
//! members under `/v1/auth/dashboard/tenants/{slug}/...` and to back ends holding a management
//! key under `/v1/management/...` (one handler each, [`OrgAdmin`] telling the two apart; the
//! document describes the dashboard's routes and [`mirror`] derives the management key's);
//! and users list theirs, switch the organization their session works in and accept
//! invitations (`me.rs`).
//!
//! Order of checks: the caller (session or key), membership of the tenant (404), the role
//! for writes (403), the body (400), a recent dashboard re-authentication for deleting an
//! organization, then the organization, member or role (404).

pub mod admin;
pub mod connections;
pub mod domains;
pub mod me;
mod mirror;

use axum::{
    extract::{FromRequestParts, RawPathParams},
    http::{request::Parts, StatusCode},
    response::{IntoResponse, Response},
};
use serde::Serialize;
use tessera_actors::{
    tenant::organizations::{
        msg::{OrgAnswer, OrgCmd},
        policy::{valid_permission, valid_role_name, MAX_PERMISSIONS},
        InviteView, MemberView, OrganizationRecord, RoleView,
    },
    OrgError, TenantHandle,
};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

pub use mirror::mirror;

use super::{
    dashboard::TenantCaller,
    error::{len_between, ApiError, FieldErrors},
    management::Management,
    users::Manager,
};
use crate::app::AppState;

/// Where the management key's copies of the dashboard's organization routes are served.
pub const MANAGEMENT_PREFIX: &str = "/v1/management";
/// Where the dashboard's organization routes are, before `/organizations` or
/// `/organization-roles`.
pub const DASHBOARD_PREFIX: &str = "/v1/auth/dashboard/tenants/{slug}";

/// Who manages organizations: a dashboard member of the route's tenant, or a management key
/// (on the `/v1/management/` copies), with the route's path parameters.
pub struct OrgAdmin {
    pub m: Manager,
    params: Vec<(String, String)>,
}

impl FromRequestParts<AppState> for OrgAdmin {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let m = if parts.uri.path().starts_with("/v1/management/") {
            let key = Management::from_request_parts(parts, state)
                .await
                .map_err(IntoResponse::into_response)?;
            Manager::key(key)
        } else {
            let caller = TenantCaller::from_request_parts(parts, state).await?;
            Manager::member(state, &caller.auth, &caller.slug)
                .map_err(IntoResponse::into_response)?
        };
        let params = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?
            .iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        Ok(OrgAdmin { m, params })
    }
}

impl OrgAdmin {
    /// A dashboard session acting in tenant `slug`, with the path's values `params` (the
    /// console's pages, which call these handlers with what their own paths hold).
    pub(crate) fn member(
        state: &AppState,
        auth: &super::dashboard::Dashboard,
        slug: &str,
        params: &[(&str, &str)],
    ) -> Result<Self, ApiError> {
        Ok(OrgAdmin {
            m: Manager::member(state, auth, slug)?,
            params: params
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        })
    }

    /// The path parameter `name` (the router only matches with it).
    fn param(&self, name: &str) -> Result<&str, ApiError> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .ok_or_else(|| ApiError::internal(format!("a route without {{{name}}}")))
    }

    /// The id in the path parameter `name`; 404 naming `what` when it is not one.
    fn id(&self, name: &str, what: &str) -> Result<Uuid, ApiError> {
        super::path_id::path_id(self.param(name)?, what)
    }

    /// Carries out `cmd` on the tenant's actor.
    async fn call(&self, cmd: OrgCmd) -> Result<OrgAnswer, ApiError> {
        call(&self.m.tenant, &self.m.ctx, cmd).await
    }
}

/// Carries out `cmd` on `tenant`'s actor.
pub(crate) async fn call(
    tenant: &TenantHandle,
    ctx: &tessera_actors::tenant::audit::AuditContext,
    cmd: OrgCmd,
) -> Result<OrgAnswer, ApiError> {
    Ok(tenant.organizations(ctx, cmd).await?)
}

/// An answer of another kind than the command's.
fn unexpected() -> ApiError {
    ApiError::internal("unexpected organizations answer")
}

// ---------------------------------------------------------------- shapes

/// An organization.
#[derive(Serialize, ToSchema)]
pub struct Organization {
    pub id: Uuid,
    pub name: String,
    /// What the app's own systems call it; unique in the tenant.
    pub external_id: Option<String>,
    /// What the tenant's admins keep on it (an object).
    pub metadata: serde_json::Value,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl From<OrganizationRecord> for Organization {
    fn from(o: OrganizationRecord) -> Self {
        Organization {
            id: o.id,
            name: o.name,
            external_id: o.external_id,
            metadata: o.metadata,
            created_at: o.created_at,
            updated_at: o.updated_at,
        }
    }
}

/// A member of an organization.
#[derive(Serialize, ToSchema)]
pub struct OrganizationMember {
    pub user_id: Uuid,
    #[schema(format = "email")]
    pub email: Option<String>,
    pub role: String,
    /// `admin` (added by an admin), `invitation` or `domain` (signed in at a proven domain
    /// that adds members).
    #[schema(example = "invitation")]
    pub joined_via: &'static str,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl From<MemberView> for OrganizationMember {
    fn from(m: MemberView) -> Self {
        OrganizationMember {
            user_id: m.user_id,
            email: m.email,
            role: m.role,
            joined_via: m.joined_via,
            created_at: m.created_at,
            updated_at: m.updated_at,
        }
    }
}

/// A pending invitation.
#[derive(Serialize, ToSchema)]
pub struct OrganizationInvitation {
    #[schema(format = "email")]
    pub email: String,
    pub role: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

impl From<InviteView> for OrganizationInvitation {
    fn from(i: InviteView) -> Self {
        OrganizationInvitation {
            email: i.email,
            role: i.role,
            created_at: i.created_at,
            expires_at: i.expires_at,
        }
    }
}

/// A role of the tenant's organizations and the permissions it grants.
#[derive(Serialize, ToSchema)]
pub struct OrganizationRole {
    pub name: String,
    pub description: Option<String>,
    pub permissions: Vec<String>,
    /// `owner`, `admin` and `member`: their permissions can change, they cannot be deleted.
    pub built_in: bool,
}

impl From<RoleView> for OrganizationRole {
    fn from(r: RoleView) -> Self {
        OrganizationRole {
            name: r.name,
            description: r.description,
            permissions: r.permissions,
            built_in: r.built_in,
        }
    }
}

// ---------------------------------------------------------------- fields

/// A name: 1-200 characters after trimming.
fn name_field(e: &mut FieldErrors, field: &str, raw: &str) -> String {
    let name = raw.trim().to_owned();
    e.check(
        field,
        len_between(&name, 1, 200),
        "must be 1-200 characters",
    );
    name
}

/// An external id: 1-200 characters, no control characters.
fn external_id_field(e: &mut FieldErrors, raw: &str) -> String {
    e.check(
        "external_id",
        len_between(raw, 1, 200) && !raw.chars().any(char::is_control),
        "must be 1-200 characters without control characters",
    );
    raw.to_owned()
}

/// A role's name as a field: its shape (whether it exists is the actor's to say).
fn role_field(e: &mut FieldErrors, raw: &str) -> String {
    e.check(
        "role",
        valid_role_name(raw),
        "must be a role name: 1-40 of a-z, 0-9, _ and -, starting with a letter",
    );
    raw.to_owned()
}

/// A role's permissions: at most 100, each its shape, without repeats.
fn permissions_field(e: &mut FieldErrors, raw: Vec<String>) -> Vec<String> {
    e.check(
        "permissions",
        raw.len() <= MAX_PERMISSIONS,
        format!("must hold at most {MAX_PERMISSIONS} permissions"),
    );
    for (i, p) in raw.iter().enumerate() {
        e.check(
            &format!("permissions[{i}]"),
            valid_permission(p),
            "must be 1-100 of a-z, 0-9 and :._*-, starting with a letter or digit",
        );
    }
    super::fields::dedup(raw)
}

/// How the refusals of organizations answer.
impl From<OrgError> for ApiError {
    fn from(e: OrgError) -> Self {
        let (status, code) = match &e {
            OrgError::OrganizationLimit { .. }
            | OrgError::MemberLimit { .. }
            | OrgError::MembershipLimit { .. }
            | OrgError::InviteLimit { .. }
            | OrgError::RoleLimit { .. } => (StatusCode::CONFLICT, "organization/limit_reached"),
            OrgError::UnknownRole => (StatusCode::BAD_REQUEST, "organization/unknown_role"),
            OrgError::BuiltInRole => (StatusCode::CONFLICT, "organization/built_in_role"),
            OrgError::RoleInUse => (StatusCode::CONFLICT, "organization/role_in_use"),
            OrgError::ExternalIdInUse => (StatusCode::CONFLICT, "organization/external_id_in_use"),
            OrgError::AlreadyMember => (StatusCode::CONFLICT, "organization/already_member"),
            OrgError::NotMember => (StatusCode::NOT_FOUND, "resource/not_found"),
            OrgError::AddressUnconfirmed => {
                (StatusCode::CONFLICT, "organization/email_unconfirmed")
            }
            OrgError::Guest => (StatusCode::CONFLICT, "organization/guest"),
            OrgError::PasswordRequired => {
                (StatusCode::BAD_REQUEST, "organization/password_required")
            }
            OrgError::PasswordNotWanted => {
                (StatusCode::BAD_REQUEST, "organization/password_not_wanted")
            }
            OrgError::DomainClaimed => (StatusCode::CONFLICT, "organization/domain_claimed"),
            OrgError::DomainTaken => (StatusCode::CONFLICT, "organization/domain_taken"),
            OrgError::DomainLimit { .. } => (StatusCode::CONFLICT, "organization/limit_reached"),
            OrgError::DomainUnproven { name, value } => {
                let details = serde_json::json!({ "txt_name": name, "txt_value": value });
                return ApiError::new(
                    StatusCode::CONFLICT,
                    "organization/domain_unproven",
                    e.to_string(),
                )
                .with_details(details);
            }
        };
        ApiError::new(status, code, e.to_string())
    }
}
