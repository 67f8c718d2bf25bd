//! Members of a tenant: the list, invitations by e-mail, and accepting an invitation.

use axum::{
    extract::{Path, State},
    http::StatusCode,
    Json,
};
use serde::{Deserialize, Serialize};
use tessera_actors::{
    directory::dashboard::{AcceptedInvite, InviteOutcome, MemberInfo},
    records::Role,
    DirectoryMsg, Password,
};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{session::audit_in, Dashboard, RequestContext};
use crate::{
    delivery::mail::Mail,
    http::{
        error::{is_email, len_between, ApiError, ErrorBody, FieldErrors},
        extract::ApiJson,
        AppState,
    },
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

#[derive(Serialize, ToSchema)]
pub struct MemberList {
    pub data: Vec<Member>,
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

/// The roles `Role::parse` takes, for the document (the handler reads the role as text so a
/// bad one is a field error naming it).
fn role_schema() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::Type::String)
        .enum_values(Some(["owner", "admin", "viewer"]))
        .build()
}

#[derive(Serialize, ToSchema)]
pub struct InviteMemberResponse {
    /// `added` (the e-mail had an account: it is a member now) or `invited` (a single-use link
    /// was e-mailed).
    pub status: String,
    pub email: String,
    pub role: String,
    pub member: Option<Member>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    /// Whether the invitation e-mail was handed to the mail transport.
    pub email_sent: bool,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AcceptInviteRequest {
    #[serde(default)]
    #[schema(min_length = 1, max_length = 512, required = true)]
    pub token: String,
    /// The new account's password (8-128), unused when the e-mail already has an account.
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
}

/// The tenant's members (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/members", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(("slug" = String, Path, description = "The tenant's slug")),
    responses(
        (status = 200, description = "Members", body = MemberList),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
) -> Result<Json<MemberList>, ApiError> {
    let (m, _) = auth.member(&state, &slug)?;
    let members = state
        .directory
        .request(|reply| DirectoryMsg::ListMembers {
            tenant: m.tenant,
            reply,
        })
        .await?;
    Ok(Json(MemberList {
        data: members.into_iter().map(Member::from).collect(),
    }))
}

/// Invites someone by e-mail with a role (owner).
#[utoipa::path(post, path = "/v1/auth/dashboard/tenants/{slug}/members", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(("slug" = String, Path, description = "The tenant's slug")),
    request_body = InviteMemberRequest,
    responses(
        (status = 201, description = "Added or invited", body = InviteMemberResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
        (status = 409, description = "`dashboard/already_member`", body = ErrorBody),
    ))]
pub async fn invite(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
    ApiJson(req): ApiJson<InviteMemberRequest>,
) -> Result<(StatusCode, Json<InviteMemberResponse>), ApiError> {
    let (m, _) = auth.owner(&state, &slug)?;
    let role = Role::parse(&req.role);
    let mut e = FieldErrors::new();
    e.check(
        "email",
        is_email(&req.email),
        "must be a valid e-mail address",
    )
    .check("role", role.is_some(), "must be owner, admin or viewer");
    e.finish()?;
    let role = role.ok_or_else(|| ApiError::invalid_field("role", "invalid"))?;
    let email = req.email.to_lowercase();
    let outcome = state
        .directory
        .request(|reply| DirectoryMsg::InviteMember {
            tenant: m.tenant,
            email: email.clone(),
            role,
            invited_by: auth.session.account_id,
            reply,
        })
        .await?;
    let response = match outcome {
        InviteOutcome::Added(member) => {
            audit_in(
                &state,
                vec![slug],
                "member.added",
                &auth.ctx,
                serde_json::json!({"role": role}),
            )
            .await;
            InviteMemberResponse {
                status: "added".into(),
                email: member.email.clone(),
                role: role.as_str().into(),
                member: Some(member.into()),
                expires_at: None,
                email_sent: false,
            }
        }
        InviteOutcome::Invited {
            token,
            email,
            role,
            expires_at,
        } => {
            let base = if state.config.server.accounts_url.is_empty() {
                state.base_url.clone()
            } else {
                state
                    .config
                    .server
                    .accounts_url
                    .trim_end_matches('/')
                    .to_owned()
            };
            let text = format!(
                "You have been invited to administer \"{}\" on Tessera as {}.\n\n\
                 Accept the invitation and choose a password here (the link works once, for 7 days):\n\
                 {base}/dashboard/accept-invite?token={token}\n\n\
                 If you did not expect this, ignore this message.\n",
                m.name,
                role.as_str()
            );
            let sent = state
                .mailer
                .send(Mail {
                    to: &email,
                    subject: "Your invitation to a Tessera dashboard",
                    text,
                })
                .await;
            if let Err(e) = &sent {
                tracing::error!(error = %e, "the invitation e-mail could not be sent");
            }
            audit_in(
                &state,
                vec![slug],
                "member.invited",
                &auth.ctx,
                serde_json::json!({"role": role}),
            )
            .await;
            InviteMemberResponse {
                status: "invited".into(),
                email,
                role: role.as_str().into(),
                member: None,
                expires_at: Some(expires_at),
                email_sent: sent.is_ok(),
            }
        }
    };
    Ok((StatusCode::CREATED, Json(response)))
}

/// Accepts an invitation: creates the account (with this password) and the membership.
#[utoipa::path(post, path = "/v1/auth/dashboard/accept-invite", tag = "dashboard",
    request_body = AcceptInviteRequest,
    responses(
        (status = 200, description = "The membership now exists", body = AcceptInviteResponse),
        (status = 400, description = "`validation/invalid_request` or `dashboard/invite_invalid`", body = ErrorBody),
        (status = 409, description = "`dashboard/already_member`", body = ErrorBody),
    ))]
pub async fn accept(
    State(state): State<AppState>,
    RequestContext(mut ctx): RequestContext,
    ApiJson(req): ApiJson<AcceptInviteRequest>,
) -> Result<Json<AcceptInviteResponse>, ApiError> {
    let mut e = FieldErrors::new();
    e.check(
        "token",
        len_between(&req.token, 1, 512),
        "must be 1-512 characters",
    )
    .check(
        "password",
        len_between(&req.password, 8, 128),
        "must be 8-128 characters",
    );
    e.finish()?;
    let password_hash = state.hasher.hash(&Password::new(req.password)).await?;
    let token = req.token;
    let accepted: AcceptedInvite = state
        .directory
        .request(|reply| DirectoryMsg::AcceptInvite {
            token,
            password_hash,
            reply,
        })
        .await?;
    ctx.actor = Some(accepted.account_id);
    audit_in(
        &state,
        vec![accepted.tenant_slug.clone()],
        "member.joined",
        &ctx,
        serde_json::json!({"role": accepted.role}),
    )
    .await;
    Ok(Json(AcceptInviteResponse {
        account_id: accepted.account_id,
        email: accepted.email,
        tenant_slug: accepted.tenant_slug,
        role: accepted.role.as_str().to_owned(),
    }))
}
