//! Members of a tenant: the list with pending invitations, invitations by e-mail (always a
//! mailed single-use link), accepting one, revoking one, role changes and removal.

use axum::{
    extract::{Path, State},
    http::StatusCode,
    Json,
};
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use tessera_actors::{
    directory::dashboard::{AcceptedInvite, InviteProof, InviteTarget, MemberInfo},
    records::Role,
    tenant::audit::AuditContext,
    CallError, DirectoryError, DirectoryMsg, Password,
};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{
    audit_detached, audit_in, check_password, check_token_and_password, detached_refs, members_of,
    token_errors, DetachedTenantRef, TenantCaller,
};
use crate::app::AppState;
use crate::http::{
    error::{is_email, ApiError, ErrorBody, FieldErrors},
    extract::{ApiJson, ClientIp, RequestCtx},
    path_id::TenantSlug,
};

#[derive(Serialize, ToSchema)]
pub struct Member {
    pub account_id: Uuid,
    pub email: String,
    /// `owner`, `admin` or `viewer`.
    pub role: String,
    #[serde(with = "time::serde::rfc3339")]
    pub added_at: OffsetDateTime,
}

impl From<MemberInfo> for Member {
    fn from(m: MemberInfo) -> Self {
        Member {
            account_id: m.account_id,
            email: m.email,
            role: m.role.as_str().to_owned(),
            added_at: m.added_at,
        }
    }
}

/// A pending invitation.
#[derive(Serialize, ToSchema)]
pub struct PendingInvitation {
    pub email: String,
    /// `owner`, `admin` or `viewer`.
    pub role: String,
    /// The account that sent it.
    pub invited_by: Uuid,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

#[derive(Serialize, ToSchema)]
pub struct MemberList {
    pub data: Vec<Member>,
    /// Invitations sent and not yet accepted, revoked or expired.
    pub invitations: Vec<PendingInvitation>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InviteMemberRequest {
    #[serde(default)]
    #[schema(format = "email", required = true)]
    pub email: String,
    /// `owner`, `admin` or `viewer`.
    #[serde(default)]
    #[schema(schema_with = role_schema, required = true)]
    pub role: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateMemberRequest {
    /// `owner`, `admin` or `viewer`.
    #[serde(default)]
    #[schema(schema_with = role_schema, required = true)]
    pub role: String,
}

/// The roles `Role::parse` takes, for the document (the handler reads the role as text so a
/// bad one is a field error naming it).
fn role_schema() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::Type::String)
        .enum_values(Some(["owner", "admin", "viewer"]))
        .build()
}

fn parse_role(role: &str) -> Result<Role, ApiError> {
    Role::parse(role)
        .ok_or_else(|| ApiError::invalid_field("role", "must be owner, admin or viewer"))
}

#[derive(Serialize, ToSchema)]
pub struct InviteMemberResponse {
    /// Always `invited`: a single-use link was e-mailed, whether or not the address has an
    /// account. Nobody becomes a member before accepting it.
    pub status: String,
    pub email: String,
    pub role: String,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    /// Whether the invitation e-mail was handed to the mail transport.
    pub email_sent: bool,
    /// A pending invitation of the same address was replaced; its link no longer works.
    pub replaced: bool,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AcceptInviteRequest {
    #[serde(default)]
    #[schema(min_length = 1, max_length = 512, required = true)]
    pub token: String,
    /// 8-128 characters. When the invited address has a verified dashboard account: that
    /// account's password (its login proves it is the invitee). Otherwise, 12-128 characters:
    /// the password of the account the invitation creates, or, for an account never
    /// verified, its new password (the link proves the mailbox; the old password and
    /// sessions end, and the account is detached from the tenants it was a member of:
    /// `detached_tenants`).
    #[serde(default)]
    #[schema(min_length = 8, max_length = 128, required = true)]
    pub password: String,
}

#[derive(Serialize, ToSchema)]
pub struct AcceptInviteResponse {
    pub account_id: Uuid,
    pub email: String,
    pub tenant_slug: String,
    pub role: String,
    /// When the invited address had an account never verified, the invitee took it over,
    /// and the account was detached from every tenant it was a member of (the one
    /// its creator made at sign-up): those tenants keep running for whoever holds their API
    /// keys, without this account. Empty otherwise.
    pub detached_tenants: Vec<DetachedTenantRef>,
}

/// The tenant's members and pending invitations (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/members", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    responses(
        (status = 200, description = "Members and pending invitations", body = MemberList),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    caller: TenantCaller,
) -> Result<Json<MemberList>, ApiError> {
    let (m, _) = caller.member(&state)?;
    let list = members_of(&state, m.tenant).await?;
    Ok(Json(MemberList {
        data: list.members.into_iter().map(Member::from).collect(),
        invitations: list
            .invitations
            .into_iter()
            .map(|p| PendingInvitation {
                email: p.email,
                role: p.terms.role.as_str().to_owned(),
                invited_by: p.terms.invited_by,
                created_at: p.terms.created_at,
                expires_at: p.terms.expires_at,
            })
            .collect(),
    }))
}

/// Invites someone by e-mail with a role (owner): a single-use link is mailed, whether or not
/// the address has an account. Inviting an address again replaces its pending invitation.
#[utoipa::path(post, path = "/v1/auth/dashboard/tenants/{slug}/members", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    request_body = InviteMemberRequest,
    responses(
        (status = 201, description = "Invited: the link was mailed", body = InviteMemberResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
        (status = 409, description = "`dashboard/already_member`", body = ErrorBody),
    ))]
pub async fn invite(
    State(state): State<AppState>,
    caller: TenantCaller,
    ApiJson(req): ApiJson<InviteMemberRequest>,
) -> Result<(StatusCode, Json<InviteMemberResponse>), ApiError> {
    let (m, _) = caller.owner(&state)?;
    let role = Role::parse(&req.role);
    let mut e = FieldErrors::new();
    e.check(
        "email",
        is_email(&req.email),
        "must be a valid e-mail address",
    )
    .check("role", role.is_some(), "must be owner, admin or viewer");
    e.finish()?;
    let role = parse_role(&req.role)?;
    let email = req.email.to_lowercase();
    let invitation = state
        .directory
        .request(|reply| DirectoryMsg::InviteMember {
            tenant: m.tenant,
            email,
            role,
            invited_by: caller.auth.session.account_id,
            reply,
        })
        .await?;
    let text = format!(
        "You have been invited to administer \"{}\" on Tessera as {}.\n\n\
         Accept the invitation here (the link works once, for 7 days). If you already have a \
         Tessera dashboard account, accept with its password; otherwise choose one:\n\
         {}/dashboard/accept-invite?token={}\n\n\
         If you did not expect this, ignore this message.\n",
        m.name,
        role.as_str(),
        state.accounts_base(),
        invitation.token,
    );
    let sent = state
        .mail_account(
            &invitation.email,
            "Your invitation to a Tessera dashboard",
            text,
        )
        .await;
    audit_in(
        &state,
        vec![caller.slug],
        "member.invited",
        &caller.auth.ctx,
        serde_json::json!({"role": role, "replaced": invitation.replaced}),
    )
    .await;
    Ok((
        StatusCode::CREATED,
        Json(InviteMemberResponse {
            status: "invited".into(),
            email: invitation.email,
            role: role.as_str().into(),
            expires_at: invitation.expires_at,
            email_sent: sent,
            replaced: invitation.replaced,
        }),
    ))
}

/// Withdraws a pending invitation (owner); its link stops working.
#[utoipa::path(delete, path = "/v1/auth/dashboard/tenants/{slug}/invitations/{email}", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("email" = String, Path, description = "The invited address"),
    ),
    responses(
        (status = 204, description = "Revoked"),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants, or no pending invitation of that address", body = ErrorBody),
    ))]
pub async fn revoke(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, email)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let (m, _) = caller.owner(&state)?;
    if email.len() > 254 {
        // No invitation has such an address; answered as the directory answers any other.
        return Err(CallError::Failed(DirectoryError::NotFound).into());
    }
    state
        .directory
        .request(|reply| DirectoryMsg::RevokeInvite {
            tenant: m.tenant,
            email,
            reply,
        })
        .await?;
    audit_in(
        &state,
        vec![caller.slug],
        "member.invitation_revoked",
        &caller.auth.ctx,
        serde_json::json!({}),
    )
    .await;
    Ok(StatusCode::NO_CONTENT)
}

/// Changes a member's role (owner). The last owner cannot be demoted.
#[utoipa::path(patch, path = "/v1/auth/dashboard/tenants/{slug}/members/{account_id}", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("account_id" = Uuid, Path, description = "The member's account id"),
    ),
    request_body = UpdateMemberRequest,
    responses(
        (status = 200, description = "The member with the new role", body = Member),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants, or not a member", body = ErrorBody),
        (status = 409, description = "`dashboard/last_owner`", body = ErrorBody),
    ))]
pub async fn update(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, account_id)): Path<(String, String)>,
    ApiJson(req): ApiJson<UpdateMemberRequest>,
) -> Result<Json<Member>, ApiError> {
    let (m, _) = caller.owner(&state)?;
    let role = parse_role(&req.role)?;
    let account_id = member_id(&account_id);
    let change = state
        .directory
        .request(|reply| DirectoryMsg::ChangeMember {
            tenant: m.tenant,
            account_id,
            role: Some(role),
            reply,
        })
        .await?;
    audit_in(
        &state,
        vec![caller.slug],
        "member.role_changed",
        &caller.auth.ctx,
        serde_json::json!({"member": account_id, "from": change.previous, "to": role}),
    )
    .await;
    let list = members_of(&state, m.tenant).await?;
    list.members
        .into_iter()
        .find(|x| x.account_id == account_id)
        .map(|x| Json(Member::from(x)))
        .ok_or_else(|| ApiError::not_found("member"))
}

/// Removes a member: an owner removes anyone, any member may leave. The last owner can do
/// neither.
#[utoipa::path(delete, path = "/v1/auth/dashboard/tenants/{slug}/members/{account_id}", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("account_id" = Uuid, Path, description = "The member's account id (the caller's own to leave)"),
    ),
    responses(
        (status = 204, description = "Removed"),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants, or not a member", body = ErrorBody),
        (status = 409, description = "`dashboard/last_owner`", body = ErrorBody),
    ))]
pub async fn remove(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, account_id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let (m, _) = caller.member(&state)?;
    let account_id = member_id(&account_id);
    let leaving = account_id == caller.auth.session.account_id;
    if !leaving && m.role != Role::Owner {
        return Err(ApiError::forbidden());
    }
    let change = state
        .directory
        .request(|reply| DirectoryMsg::ChangeMember {
            tenant: m.tenant,
            account_id,
            role: None,
            reply,
        })
        .await?;
    audit_in(
        &state,
        vec![caller.slug],
        if leaving {
            "member.left"
        } else {
            "member.removed"
        },
        &caller.auth.ctx,
        serde_json::json!({"member": account_id, "role": change.previous}),
    )
    .await;
    Ok(StatusCode::NO_CONTENT)
}

/// A member id from the path. Anything that is not a UUID is the nil UUID, which is no
/// account's id: the request then gets exactly the answer of an unknown member.
fn member_id(raw: &str) -> Uuid {
    Uuid::parse_str(raw).unwrap_or(Uuid::nil())
}

/// Accepts an invitation. The token proves the invitee holds the mailbox; an address with a
/// verified account must also give that account's password. For a new address the account
/// is created with this password; an account that was never verified is taken over (its old
/// password and sessions end: whoever created it did not hold the mailbox), and detached
/// from the tenants it was a member of, which the answer lists in `detached_tenants`.
#[utoipa::path(post, path = "/v1/auth/dashboard/accept-invite", tag = "dashboard",
    request_body = AcceptInviteRequest,
    responses(
        (status = 200, description = "The membership now exists; `detached_tenants` lists the tenants a taken-over account no longer reaches", body = AcceptInviteResponse),
        (status = 400, description = "`validation/invalid_request` or `dashboard/invite_invalid`", body = ErrorBody),
        (status = 401, description = "`dashboard/invalid_credentials`: not the password of the invited address's account", body = ErrorBody),
        (status = 409, description = "`dashboard/already_member`", body = ErrorBody),
        (status = 429, description = "`dashboard/rate_limited`, with `Retry-After`", body = ErrorBody),
    ))]
pub async fn accept(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<AcceptInviteRequest>,
) -> Result<Json<AcceptInviteResponse>, ApiError> {
    Ok(Json(
        accept_invitation(&state, (ip, ctx), req.token, req.password).await?,
    ))
}

/// Who an invitation's `token` invites, using nothing: its address, and whether a verified
/// account holds it (whose own password must then be given).
pub(super) async fn invitation(state: &AppState, token: &str) -> Result<InviteTarget, ApiError> {
    token_errors(token).finish()?;
    state
        .directory
        .request(|reply| DirectoryMsg::InviteTarget {
            token: token.to_owned(),
            reply,
        })
        .await
        .map_err(ApiError::from)
}

/// Accepts the invitation of `token` with `password` (the verified account's own, or the new
/// account's), and audits it: the route's and the page's one way.
pub(super) async fn accept_invitation(
    state: &AppState,
    (ip, mut ctx): (IpAddr, AuditContext),
    token: String,
    password: String,
) -> Result<AcceptInviteResponse, ApiError> {
    check_token_and_password(&token, &password, 8)?;
    let target = invitation(state, &token).await?;
    let password = Password::new(password);
    let proof = if target.verified_account {
        let account_id = check_password(state, &target.email, &password, (ip, None))
            .await?
            .account_id;
        InviteProof::Login { account_id }
    } else {
        // A new account's password follows a dashboard reset's rule: 12-128 characters.
        check_token_and_password(&token, password.expose(), 12)?;
        InviteProof::NewPassword {
            password_hash: state.hasher.hash(&password).await?,
        }
    };
    let accepted: AcceptedInvite = state
        .directory
        .request(|reply| DirectoryMsg::AcceptInvite {
            token,
            proof,
            reply,
        })
        .await?;
    ctx.actor = Some(accepted.account_id);
    audit_in(
        state,
        vec![accepted.tenant_slug.clone()],
        "member.joined",
        &ctx,
        serde_json::json!({"role": accepted.role, "account_reclaimed": accepted.reclaimed}),
    )
    .await;
    audit_detached(
        state,
        accepted.account_id,
        &accepted.detached,
        &ctx,
        "invitation",
    )
    .await;
    Ok(AcceptInviteResponse {
        account_id: accepted.account_id,
        email: accepted.email,
        tenant_slug: accepted.tenant_slug,
        role: accepted.role.as_str().to_owned(),
        detached_tenants: detached_refs(&accepted.detached),
    })
}
