//! The users' routes: their organizations, the switch of the organization their session
//! works in (a fresh token pair whose access token carries `org_id`, `org_role` and
//! `org_permissions`), and a mailed invitation looked at and accepted (for apps with their
//! own pages; the hosted page at the invitation's link does the same).

use axum::{extract::State, Json};
use serde::{Deserialize, Serialize};
use tessera_actors::{
    password::Password,
    tenant::organizations::msg::{OrgAnswer, OrgCmd},
};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{call, unexpected};
use crate::{
    app::AppState,
    http::{
        accounts::{not_weak, password_field, token_field},
        bearer::UserBearer,
        error::{ApiError, ErrorBody, FieldErrors},
        extract::{ApiJson, ApiTenant, RequestCtx},
        path_id::{not_found_as, path_id},
        responses::{token_pair, TokenPair},
    },
};

/// One of the caller's organizations.
#[derive(Serialize, ToSchema)]
pub struct MyOrganizationResponse {
    pub id: Uuid,
    pub name: String,
    pub role: String,
    pub permissions: Vec<String>,
    /// The caller's session works in it: its access tokens carry its claims.
    pub active: bool,
}

#[derive(Serialize, ToSchema)]
pub struct MyOrganizationList {
    pub data: Vec<MyOrganizationResponse>,
}

/// The caller's organizations, with their role and what it grants.
#[utoipa::path(get, path = "/v1/auth/organizations", tag = "organizations",
    security(("api_key" = [], "bearer" = [])),
    responses(
        (status = 200, description = "The caller's organizations", body = MyOrganizationList),
        (status = 401, description = "`auth/missing_token`, `auth/invalid_token`", body = ErrorBody),
    ))]
pub async fn mine(
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
) -> Result<Json<MyOrganizationList>, ApiError> {
    match call(&user.tenant, &ctx, OrgCmd::Mine(user.bearer)).await? {
        OrgAnswer::Mine(all) => Ok(Json(MyOrganizationList {
            data: all
                .into_iter()
                .map(|o| MyOrganizationResponse {
                    id: o.id,
                    name: o.name,
                    role: o.role,
                    permissions: o.permissions,
                    active: o.active,
                })
                .collect(),
        })),
        _ => Err(unexpected()),
    }
}

/// The session's current refresh token, which the switch rotates.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SwitchRequest {
    #[serde(default)]
    #[schema(min_length = 1, required = true)]
    pub refresh_token: String,
}

async fn switched(
    state: &AppState,
    (user, ctx): (UserBearer, tessera_actors::tenant::audit::AuditContext),
    req: SwitchRequest,
    org: Option<Uuid>,
) -> Result<Json<TokenPair>, ApiError> {
    let mut e = FieldErrors::new();
    e.check(
        "refresh_token",
        !req.refresh_token.is_empty(),
        "must not be empty",
    );
    e.finish()?;
    let cmd = OrgCmd::Switch {
        bearer: user.bearer,
        refresh_token: req.refresh_token,
        org,
    };
    let answer = call(&user.tenant, &ctx, cmd)
        .await
        .map_err(|e| not_found_as("organization", e))?;
    match answer {
        OrgAnswer::Grant(grant) => Ok(Json(token_pair(state, &user.tenant, *grant).await?)),
        _ => Err(unexpected()),
    }
}

/// Moves the caller's session into one of their organizations: a refresh with the session's
/// current refresh token (it rotates, as at `/v1/auth/refresh`), whose new access token
/// carries `org_id`, `org_role` and `org_permissions`, as every later refresh of the session
/// does while the membership lasts.
#[utoipa::path(post, path = "/v1/auth/organizations/{org_id}/switch", tag = "organizations",
    security(("api_key" = [], "bearer" = [])),
    params(("org_id" = String, Path, description = "The organization's id")),
    request_body = SwitchRequest,
    responses(
        (status = 200, description = "A new pair, in the organization", body = TokenPair),
        (status = 401, description = "`auth/missing_token`, `auth/invalid_token`; `auth/invalid_refresh_token` (not the current refresh token of the bearer's session)", body = ErrorBody),
        (status = 403, description = "`auth/user_blocked`", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: no such organization, or the caller is not a member", body = ErrorBody),
    ))]
pub async fn switch(
    State(state): State<AppState>,
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
    axum::extract::Path(org_id): axum::extract::Path<String>,
    ApiJson(req): ApiJson<SwitchRequest>,
) -> Result<Json<TokenPair>, ApiError> {
    let org = path_id(&org_id, "organization")?;
    switched(&state, (user, ctx), req, Some(org)).await
}

/// Takes the caller's session out of its organization: a refresh (as the switch) whose new
/// access token carries no organization claims.
#[utoipa::path(post, path = "/v1/auth/organizations/switch-out", tag = "organizations",
    security(("api_key" = [], "bearer" = [])),
    request_body = SwitchRequest,
    responses(
        (status = 200, description = "A new pair, in no organization", body = TokenPair),
        (status = 401, description = "`auth/missing_token`, `auth/invalid_token`; `auth/invalid_refresh_token` (not the current refresh token of the bearer's session)", body = ErrorBody),
        (status = 403, description = "`auth/user_blocked`", body = ErrorBody),
    ))]
pub async fn switch_out(
    State(state): State<AppState>,
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<SwitchRequest>,
) -> Result<Json<TokenPair>, ApiError> {
    switched(&state, (user, ctx), req, None).await
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InvitationTokenRequest {
    /// The `token` of the mailed link.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 512, required = true)]
    pub token: String,
}

/// What a mailed invitation asks.
#[derive(Serialize, ToSchema)]
pub struct InvitationPreview {
    pub organization_id: Uuid,
    pub organization_name: String,
    #[schema(format = "email")]
    pub email: String,
    pub role: String,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    /// The address has no account, or one that never confirmed it: accepting needs a
    /// `password` (the account is made, or recovered from whoever registered the address).
    /// Otherwise the account joins as it is, and a password is refused.
    pub needs_password: bool,
}

/// A look at a mailed invitation (nothing is used); the link's token is the proof.
#[utoipa::path(post, path = "/v1/auth/organizations/invitations/preview", tag = "organizations",
    security(("api_key" = [])),
    request_body = InvitationTokenRequest,
    responses(
        (status = 200, description = "The invitation", body = InvitationPreview),
        (status = 400, description = "`validation/invalid_request`; `auth/invalid_or_expired_token`", body = ErrorBody),
    ))]
pub async fn preview(
    ApiTenant(tenant): ApiTenant,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<InvitationTokenRequest>,
) -> Result<Json<InvitationPreview>, ApiError> {
    let mut e = FieldErrors::new();
    token_field(&mut e, &req.token);
    e.finish()?;
    match call(&tenant, &ctx, OrgCmd::PreviewInvite { token: req.token }).await? {
        OrgAnswer::Preview(p) => Ok(Json(InvitationPreview {
            organization_id: p.organization_id,
            organization_name: p.organization_name,
            email: p.email,
            role: p.role,
            expires_at: p.expires_at,
            needs_password: p.needs_password,
        })),
        _ => Err(unexpected()),
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AcceptInvitationRequest {
    #[serde(default)]
    #[schema(min_length = 1, max_length = 512, required = true)]
    pub token: String,
    /// Only when the preview says `needs_password`.
    #[schema(min_length = 12, max_length = 128)]
    pub password: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct AcceptedInvitation {
    pub organization_id: Uuid,
    pub user_id: Uuid,
    /// The invitation made the account (its address confirmed); the user signs in next.
    pub account_created: bool,
}

/// Uses a mailed invitation: the account of its address joins the organization with the
/// invitation's role. An address without an account gets one with `password`; an account
/// that never confirmed its address is recovered first (every way in its registrant had
/// ends) and gets `password`; a confirmed account joins as it is. The user signs in next.
#[utoipa::path(post, path = "/v1/auth/organizations/invitations/accept", tag = "organizations",
    security(("api_key" = [])),
    request_body = AcceptInvitationRequest,
    responses(
        (status = 200, description = "Joined", body = AcceptedInvitation),
        (status = 400, description = "`validation/invalid_request`; `auth/weak_password`; `auth/invalid_or_expired_token`; `organization/password_required`; `organization/password_not_wanted`", body = ErrorBody),
        (status = 403, description = "`auth/user_blocked`", body = ErrorBody),
        (status = 409, description = "`organization/limit_reached`", body = ErrorBody),
    ))]
pub async fn accept(
    State(state): State<AppState>,
    ApiTenant(tenant): ApiTenant,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<AcceptInvitationRequest>,
) -> Result<Json<AcceptedInvitation>, ApiError> {
    let mut e = FieldErrors::new();
    token_field(&mut e, &req.token);
    if let Some(p) = &req.password {
        password_field(&mut e, "password", p);
    }
    e.finish()?;
    if let Some(p) = &req.password {
        not_weak(p)?;
    }
    // The invitation first: a guessed token must not cost an argon2 hash.
    let preview = call(
        &tenant,
        &ctx,
        OrgCmd::PreviewInvite {
            token: req.token.clone(),
        },
    )
    .await?;
    let OrgAnswer::Preview(preview) = preview else {
        return Err(unexpected());
    };
    let password_hash = match req.password {
        Some(_) if !preview.needs_password => {
            return Err(tessera_actors::OrgError::PasswordNotWanted.into())
        }
        Some(p) => Some(state.hasher.hash(&Password::new(p)).await?),
        None => None,
    };
    let cmd = OrgCmd::AcceptInvite {
        token: req.token,
        password_hash,
    };
    match call(&tenant, &ctx, cmd).await? {
        OrgAnswer::Accepted(a) => Ok(Json(AcceptedInvitation {
            organization_id: a.organization_id,
            user_id: a.user_id,
            account_created: a.account_created,
        })),
        _ => Err(unexpected()),
    }
}
