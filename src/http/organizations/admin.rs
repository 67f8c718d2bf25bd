//! The tenant's admins' routes: organizations, members, invitations and roles. Each is
//! documented at its dashboard path; its management-key copy is derived ([`super::mirror`]).
//! Any member (any key) reads; admins and owners (admin keys) write.

use axum::{extract::Query, http::StatusCode, response::Response, Json};
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::organizations::{
    msg::{OrgAnswer, OrgCmd},
    NewOrganization, OrganizationPatch,
};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::{
    external_id_field, name_field, permissions_field, role_field, unexpected, OrgAdmin,
    Organization, OrganizationInvitation, OrganizationMember, OrganizationRole,
};
use crate::http::{
    dashboard::created,
    error::{ApiError, ErrorBody, FieldErrors},
    error_responses::{InvalidFields, NoSessionOrReauth},
    extract::ApiJson,
    fields::{email_field, metadata_field, nullable},
    paging::{self, Pagination},
    path_id::{not_found_as, TenantSlug},
};

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// 1-100 (default 50).
    pub limit: Option<String>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

impl PageQuery {
    fn read(&self) -> Result<(usize, Option<Uuid>), ApiError> {
        let mut e = FieldErrors::new();
        let limit = paging::limit(&mut e, self.limit.as_deref(), 50, 100);
        let cursor = paging::cursor(&mut e, self.cursor.as_deref(), |c| Uuid::parse_str(c).ok());
        e.finish()?;
        Ok((limit, cursor))
    }
}

#[derive(Serialize, ToSchema)]
pub struct OrganizationList {
    pub data: Vec<Organization>,
    pub pagination: Pagination,
}

#[derive(Serialize, ToSchema)]
pub struct OrganizationMemberList {
    pub data: Vec<OrganizationMember>,
    pub pagination: Pagination,
}

#[derive(Serialize, ToSchema)]
pub struct OrganizationInvitationList {
    pub data: Vec<OrganizationInvitation>,
}

#[derive(Serialize, ToSchema)]
pub struct OrganizationRoleList {
    pub data: Vec<OrganizationRole>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateOrganizationRequest {
    /// 1-200 characters.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 200, required = true)]
    pub name: String,
    /// 1-200 characters, unique in the tenant.
    #[schema(min_length = 1, max_length = 200)]
    pub external_id: Option<String>,
    /// An object of at most 16 KiB serialised.
    #[serde(default)]
    pub metadata: serde_json::Value,
}

/// The fields to change; an absent field is unchanged.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateOrganizationRequest {
    #[schema(min_length = 1, max_length = 200)]
    pub name: Option<String>,
    /// `null` removes it.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(min_length = 1, max_length = 200, nullable)]
    pub external_id: Option<Option<String>>,
    pub metadata: Option<serde_json::Value>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddMemberRequest {
    /// A user of the tenant with a confirmed address.
    #[serde(default)]
    #[schema(required = true)]
    pub user_id: String,
    /// Default `member`.
    #[schema(pattern = "^[a-z][a-z0-9_-]{0,39}$")]
    pub role: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateMemberRequest {
    #[serde(default)]
    #[schema(pattern = "^[a-z][a-z0-9_-]{0,39}$", required = true)]
    pub role: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InviteRequest {
    #[serde(default)]
    #[schema(format = "email", required = true)]
    pub email: String,
    /// Default `member`.
    #[schema(pattern = "^[a-z][a-z0-9_-]{0,39}$")]
    pub role: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutRoleRequest {
    /// At most 200 characters.
    #[schema(max_length = 200)]
    pub description: Option<String>,
    /// At most 100, each 1-100 of `a-z`, `0-9` and `:._*-`.
    #[schema(max_items = 100)]
    pub permissions: Vec<String>,
}

fn org(answer: OrgAnswer) -> Result<Organization, ApiError> {
    match answer {
        OrgAnswer::Organization(o) => Ok((*o).into()),
        _ => Err(unexpected()),
    }
}

fn member(answer: OrgAnswer) -> Result<OrganizationMember, ApiError> {
    match answer {
        OrgAnswer::Member(m) => Ok((*m).into()),
        _ => Err(unexpected()),
    }
}

/// The organization of the path, 404 `resource/not_found` when the actor knows none.
fn no_org(e: ApiError) -> ApiError {
    not_found_as("organization", e)
}

// ---------------------------------------------------------------- organizations

/// The tenant's organizations, newest first (any member).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/organizations", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug, PageQuery),
    responses(
        (status = 200, description = "A page of organizations", body = OrganizationList),
        InvalidFields,
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn list(
    a: OrgAdmin,
    Query(q): Query<PageQuery>,
) -> Result<Json<OrganizationList>, ApiError> {
    let (limit, before) = q.read()?;
    match a.call(OrgCmd::List { before, limit }).await? {
        OrgAnswer::Organizations(page, next) => Ok(Json(OrganizationList {
            data: page.into_iter().map(Organization::from).collect(),
            pagination: Pagination::next(next.map(|n| n.to_string())),
        })),
        _ => Err(unexpected()),
    }
}

/// Creates an organization (admin, owner).
#[utoipa::path(post, path = "/v1/auth/dashboard/tenants/{slug}/organizations", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    request_body = CreateOrganizationRequest,
    responses(
        (status = 201, description = "The organization", body = Organization),
        InvalidFields,
        (status = 403, description = "`dashboard/forbidden` (viewer), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
        (status = 409, description = "`organization/limit_reached` (the tier's organizations); `organization/external_id_in_use`", body = ErrorBody),
    ))]
pub async fn create(
    a: OrgAdmin,
    ApiJson(req): ApiJson<CreateOrganizationRequest>,
) -> Result<Response, ApiError> {
    a.m.write()?;
    let mut e = FieldErrors::new();
    let name = name_field(&mut e, "name", &req.name);
    let external_id = req
        .external_id
        .as_deref()
        .map(|x| external_id_field(&mut e, x));
    let metadata = metadata_field(&mut e, "metadata", req.metadata);
    e.finish()?;
    let new = NewOrganization {
        name,
        external_id,
        metadata: metadata.unwrap_or_default(),
    };
    Ok(created(org(a.call(OrgCmd::Create(new)).await?)?))
}

/// One organization (any member).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/organizations/{org_id}", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug, ("org_id" = String, Path, description = "The organization's id")),
    responses(
        (status = 200, description = "The organization", body = Organization),
        (status = 404, description = "`resource/not_found`: no such organization; or not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn show(a: OrgAdmin) -> Result<Json<Organization>, ApiError> {
    let id = a.id("org_id", "organization")?;
    Ok(Json(org(a.call(OrgCmd::Get(id)).await.map_err(no_org)?)?))
}

/// Changes an organization's name, external id or metadata (admin, owner).
#[utoipa::path(patch, path = "/v1/auth/dashboard/tenants/{slug}/organizations/{org_id}", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug, ("org_id" = String, Path, description = "The organization's id")),
    request_body = UpdateOrganizationRequest,
    responses(
        (status = 200, description = "The organization", body = Organization),
        InvalidFields,
        (status = 403, description = "`dashboard/forbidden` (viewer), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: no such organization; or not one of the caller's tenants", body = ErrorBody),
        (status = 409, description = "`organization/external_id_in_use`", body = ErrorBody),
    ))]
pub async fn update(
    a: OrgAdmin,
    ApiJson(req): ApiJson<UpdateOrganizationRequest>,
) -> Result<Json<Organization>, ApiError> {
    a.m.write()?;
    let id = a.id("org_id", "organization")?;
    let mut e = FieldErrors::new();
    let patch = OrganizationPatch {
        name: req.name.as_deref().map(|n| name_field(&mut e, "name", n)),
        external_id: req
            .external_id
            .map(|x| x.as_deref().map(|x| external_id_field(&mut e, x))),
        metadata: req
            .metadata
            .and_then(|m| metadata_field(&mut e, "metadata", m)),
    };
    e.finish()?;
    Ok(Json(org(a
        .call(OrgCmd::Update(id, patch))
        .await
        .map_err(no_org)?)?))
}

/// Deletes an organization with its memberships and invitations; its members' sessions that
/// work in it end (admin, owner; re-authenticated within 5 minutes).
#[utoipa::path(delete, path = "/v1/auth/dashboard/tenants/{slug}/organizations/{org_id}", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug, ("org_id" = String, Path, description = "The organization's id")),
    responses(
        (status = 204, description = "Deleted"),
        NoSessionOrReauth,
        (status = 403, description = "`dashboard/forbidden` (viewer), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: no such organization; or not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn delete(a: OrgAdmin) -> Result<StatusCode, ApiError> {
    a.m.write()?;
    let id = a.id("org_id", "organization")?;
    a.m.sensitive()?;
    a.call(OrgCmd::Delete(id)).await.map_err(no_org)?;
    Ok(StatusCode::NO_CONTENT)
}

// ---------------------------------------------------------------- members

/// An organization's members by user id (any member).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/organizations/{org_id}/members", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug, ("org_id" = String, Path, description = "The organization's id"), PageQuery),
    responses(
        (status = 200, description = "A page of members", body = OrganizationMemberList),
        InvalidFields,
        (status = 404, description = "`resource/not_found`: no such organization; or not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn members(
    a: OrgAdmin,
    Query(q): Query<PageQuery>,
) -> Result<Json<OrganizationMemberList>, ApiError> {
    let org_id = a.id("org_id", "organization")?;
    let (limit, after) = q.read()?;
    let cmd = OrgCmd::Members {
        org: org_id,
        after,
        limit,
    };
    match a.call(cmd).await.map_err(no_org)? {
        OrgAnswer::Members(page, next) => Ok(Json(OrganizationMemberList {
            data: page.into_iter().map(OrganizationMember::from).collect(),
            pagination: Pagination::next(next.map(|n| n.to_string())),
        })),
        _ => Err(unexpected()),
    }
}

/// Adds a user of the tenant whose address is confirmed (admin, owner).
#[utoipa::path(post, path = "/v1/auth/dashboard/tenants/{slug}/organizations/{org_id}/members", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug, ("org_id" = String, Path, description = "The organization's id")),
    request_body = AddMemberRequest,
    responses(
        (status = 201, description = "The membership", body = OrganizationMember),
        (status = 400, description = "`validation/invalid_request` naming each bad field; `organization/unknown_role`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` (viewer), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: no such organization or user; or not one of the caller's tenants", body = ErrorBody),
        (status = 409, description = "`organization/already_member`; `organization/email_unconfirmed`; `organization/guest`; `organization/limit_reached`", body = ErrorBody),
    ))]
pub async fn add_member(
    a: OrgAdmin,
    ApiJson(req): ApiJson<AddMemberRequest>,
) -> Result<Response, ApiError> {
    a.m.write()?;
    let org_id = a.id("org_id", "organization")?;
    let mut e = FieldErrors::new();
    let user = Uuid::parse_str(&req.user_id).ok();
    e.check("user_id", user.is_some(), "must be a user id");
    let role = role_field(&mut e, req.role.as_deref().unwrap_or("member"));
    e.finish()?;
    let cmd = OrgCmd::AddMember {
        org: org_id,
        user: user.unwrap_or_default(),
        role,
    };
    let m = member(
        a.call(cmd)
            .await
            .map_err(|e| not_found_as("organization or user", e))?,
    )?;
    Ok(created(m))
}

/// Changes a member's role (admin, owner); their tokens carry it from their next refresh.
#[utoipa::path(patch, path = "/v1/auth/dashboard/tenants/{slug}/organizations/{org_id}/members/{user_id}", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("org_id" = String, Path, description = "The organization's id"),
        ("user_id" = String, Path, description = "The member's user id"),
    ),
    request_body = UpdateMemberRequest,
    responses(
        (status = 200, description = "The membership", body = OrganizationMember),
        (status = 400, description = "`validation/invalid_request` naming each bad field; `organization/unknown_role`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` (viewer), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: no such member; or not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn update_member(
    a: OrgAdmin,
    ApiJson(req): ApiJson<UpdateMemberRequest>,
) -> Result<Json<OrganizationMember>, ApiError> {
    a.m.write()?;
    let (org_id, user) = (a.id("org_id", "member")?, a.id("user_id", "member")?);
    let mut e = FieldErrors::new();
    let role = role_field(&mut e, &req.role);
    e.finish()?;
    let cmd = OrgCmd::UpdateMember {
        org: org_id,
        user,
        role,
    };
    Ok(Json(member(
        a.call(cmd).await.map_err(|e| not_found_as("member", e))?,
    )?))
}

/// Removes a member (admin, owner): their sessions that work in the organization end at once.
#[utoipa::path(delete, path = "/v1/auth/dashboard/tenants/{slug}/organizations/{org_id}/members/{user_id}", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("org_id" = String, Path, description = "The organization's id"),
        ("user_id" = String, Path, description = "The member's user id"),
    ),
    responses(
        (status = 204, description = "Removed"),
        (status = 403, description = "`dashboard/forbidden` (viewer), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: no such member; or not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn remove_member(a: OrgAdmin) -> Result<StatusCode, ApiError> {
    a.m.write()?;
    let (org_id, user) = (a.id("org_id", "member")?, a.id("user_id", "member")?);
    let cmd = OrgCmd::RemoveMember { org: org_id, user };
    a.call(cmd).await.map_err(|e| not_found_as("member", e))?;
    Ok(StatusCode::NO_CONTENT)
}

// ---------------------------------------------------------------- invitations

/// An organization's pending invitations (any member).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/organizations/{org_id}/invitations", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug, ("org_id" = String, Path, description = "The organization's id")),
    responses(
        (status = 200, description = "The invitations waiting", body = OrganizationInvitationList),
        (status = 404, description = "`resource/not_found`: no such organization; or not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn invitations(a: OrgAdmin) -> Result<Json<OrganizationInvitationList>, ApiError> {
    let org_id = a.id("org_id", "organization")?;
    match a.call(OrgCmd::Invitations(org_id)).await.map_err(no_org)? {
        OrgAnswer::Invites(all) => Ok(Json(OrganizationInvitationList {
            data: all.into_iter().map(OrganizationInvitation::from).collect(),
        })),
        _ => Err(unexpected()),
    }
}

/// Mails an invitation (single use, 7 days) to an address, replacing a pending one of the
/// same address (admin, owner).
#[utoipa::path(post, path = "/v1/auth/dashboard/tenants/{slug}/organizations/{org_id}/invitations", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug, ("org_id" = String, Path, description = "The organization's id")),
    request_body = InviteRequest,
    responses(
        (status = 201, description = "The invitation, on its way", body = OrganizationInvitation),
        (status = 400, description = "`validation/invalid_request` naming each bad field; `organization/unknown_role`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` (viewer), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: no such organization; or not one of the caller's tenants", body = ErrorBody),
        (status = 409, description = "`organization/already_member` (the address's account is a member); `organization/limit_reached` (500 pending)", body = ErrorBody),
    ))]
pub async fn invite(
    a: OrgAdmin,
    ApiJson(req): ApiJson<InviteRequest>,
) -> Result<Response, ApiError> {
    a.m.write()?;
    let org_id = a.id("org_id", "organization")?;
    let mut e = FieldErrors::new();
    let email = email_field(&mut e, &req.email);
    let role = role_field(&mut e, req.role.as_deref().unwrap_or("member"));
    e.finish()?;
    let cmd = OrgCmd::Invite {
        org: org_id,
        email: email.unwrap_or_default(),
        role,
    };
    match a.call(cmd).await.map_err(no_org)? {
        OrgAnswer::Invite(i) => Ok(created(OrganizationInvitation::from(*i))),
        _ => Err(unexpected()),
    }
}

/// Withdraws the pending invitation of an address (admin, owner).
#[utoipa::path(delete, path = "/v1/auth/dashboard/tenants/{slug}/organizations/{org_id}/invitations/{email}", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("org_id" = String, Path, description = "The organization's id"),
        ("email" = String, Path, description = "The invited address"),
    ),
    responses(
        (status = 204, description = "Withdrawn"),
        (status = 403, description = "`dashboard/forbidden` (viewer), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: no pending invitation of that address; or not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn revoke_invitation(a: OrgAdmin) -> Result<StatusCode, ApiError> {
    a.m.write()?;
    let org_id = a.id("org_id", "invitation")?;
    let email = tessera_actors::policy::normalize_email(a.param("email")?)
        .ok_or_else(|| ApiError::not_found("invitation"))?;
    let cmd = OrgCmd::RevokeInvite { org: org_id, email };
    a.call(cmd)
        .await
        .map_err(|e| not_found_as("invitation", e))?;
    Ok(StatusCode::NO_CONTENT)
}

// ---------------------------------------------------------------- roles

/// The roles of the tenant's organizations: the built-in ones, then the tenant's (any member).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/organization-roles", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    responses(
        (status = 200, description = "The roles", body = OrganizationRoleList),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn roles(a: OrgAdmin) -> Result<Json<OrganizationRoleList>, ApiError> {
    match a.call(OrgCmd::Roles).await? {
        OrgAnswer::Roles(all) => Ok(Json(OrganizationRoleList {
            data: all.into_iter().map(OrganizationRole::from).collect(),
        })),
        _ => Err(unexpected()),
    }
}

/// Creates a role, or sets what a role grants (a built-in one too) (admin, owner). Members'
/// tokens carry the new permissions from their next refresh.
#[utoipa::path(put, path = "/v1/auth/dashboard/tenants/{slug}/organization-roles/{role}", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug, ("role" = String, Path, description = "The role's name: 1-40 of a-z, 0-9, _ and -, starting with a letter")),
    request_body = PutRoleRequest,
    responses(
        (status = 200, description = "The role", body = OrganizationRole),
        InvalidFields,
        (status = 403, description = "`dashboard/forbidden` (viewer), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
        (status = 409, description = "`organization/limit_reached` (50 roles of the tenant's own)", body = ErrorBody),
    ))]
pub async fn put_role(
    a: OrgAdmin,
    ApiJson(req): ApiJson<PutRoleRequest>,
) -> Result<Json<OrganizationRole>, ApiError> {
    a.m.write()?;
    let name = a.param("role")?.to_owned();
    let mut e = FieldErrors::new();
    e.check(
        "role",
        tessera_actors::tenant::organizations::policy::valid_role_name(&name),
        "must be a role name: 1-40 of a-z, 0-9, _ and -, starting with a letter",
    );
    if let Some(d) = &req.description {
        e.check(
            "description",
            d.chars().count() <= 200,
            "must be at most 200 characters",
        );
    }
    let permissions = permissions_field(&mut e, req.permissions);
    e.finish()?;
    let cmd = OrgCmd::PutRole {
        name,
        description: req.description,
        permissions,
    };
    match a.call(cmd).await? {
        OrgAnswer::Role(r) => Ok(Json((*r).into())),
        _ => Err(unexpected()),
    }
}

/// Deletes one of the tenant's roles that no member and no pending invitation holds (admin,
/// owner).
#[utoipa::path(delete, path = "/v1/auth/dashboard/tenants/{slug}/organization-roles/{role}", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug, ("role" = String, Path, description = "The role's name")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 403, description = "`dashboard/forbidden` (viewer), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: no such role of the tenant's own; or not one of the caller's tenants", body = ErrorBody),
        (status = 409, description = "`organization/built_in_role`; `organization/role_in_use`", body = ErrorBody),
    ))]
pub async fn delete_role(a: OrgAdmin) -> Result<StatusCode, ApiError> {
    a.m.write()?;
    let name = a.param("role")?.to_owned();
    match a.call(OrgCmd::DeleteRole(name)).await {
        Ok(_) => Ok(StatusCode::NO_CONTENT),
        Err(e) if e.code == "organization/unknown_role" => Err(ApiError::not_found("role")),
        Err(e) => Err(e),
    }
}
