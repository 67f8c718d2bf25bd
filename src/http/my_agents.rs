//! The agents side of `/v1/users/me` (spec 4.5): the agents that acted for the signed-in user,
//! the user's own revocation of one (GDPR art. 7(3)) and its restoration, and the CIBA
//! requests waiting for the user's decision.

use axum::{extract::Path, Json};
use serde::Serialize;
use tessera_actors::tenant::{
    agents::{AgentAnswer, AgentCmd, RequestView},
    audit::AuditContext,
    messages::Bearer,
};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{
    bearer::UserBearer,
    error::{ApiError, ErrorBody},
    extract::RequestCtx,
    path_id::path_id,
};

/// The reason recorded for a user's revocation.
pub const USER_REVOCATION_REASON: &str = "gdpr_art_7_withdrawal";

/// One of the signed-in user's agent commands (`cmd` makes it of the user's bearer); an
/// unknown agent (or request) is 404 naming `what`.
async fn call(
    user: &UserBearer,
    ctx: &AuditContext,
    cmd: impl FnOnce(Bearer) -> AgentCmd,
    what: &str,
) -> Result<AgentAnswer, ApiError> {
    super::oauth::agents::call_api(&user.tenant, ctx, cmd(user.bearer), what).await
}

/// An agent as the user it acted for sees it (spec 2.11 UserAgentResponse).
#[derive(Serialize, ToSchema)]
pub struct UserAgentResponse {
    pub agent_client_id: String,
    pub agent_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_logo_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_class: Option<String>,
    #[serde(
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub last_action_at: Option<OffsetDateTime>,
    pub action_count: u64,
    /// When this user revoked it.
    #[serde(
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub revoked_at: Option<OffsetDateTime>,
    /// When the tenant's admins revoked it.
    #[serde(
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub agent_revoked_at: Option<OffsetDateTime>,
}

#[derive(Serialize, ToSchema)]
pub struct UserAgentList {
    /// Latest action first.
    pub data: Vec<UserAgentResponse>,
}

/// The agents that acted for the signed-in user (an approval or a token), latest first.
#[utoipa::path(get, path = "/v1/users/me/agents", tag = "agents",
    security(("api_key" = [], "bearer" = [])),
    responses(
        (status = 200, description = "The agents", body = UserAgentList),
        (status = 401, description = "`auth/invalid_token`", body = ErrorBody),
    ))]
pub async fn list(
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
) -> Result<Json<UserAgentList>, ApiError> {
    let cmd = |bearer| AgentCmd::MyAgents { bearer };
    let AgentAnswer::UserAgents(list) = call(&user, &ctx, cmd, "agent").await? else {
        return Err(ApiError::internal("unexpected agent answer"));
    };
    Ok(Json(UserAgentList {
        data: list
            .into_iter()
            .map(|a| UserAgentResponse {
                agent_client_id: a.client_id,
                agent_name: a.name,
                agent_logo_url: a.logo_url,
                agent_class: a.agent_class,
                last_action_at: a.last_action_at,
                action_count: a.action_count,
                revoked_at: a.revoked_at,
                agent_revoked_at: a.agent_revoked_at,
            })
            .collect(),
    }))
}

/// The answer of a user's revocation (spec 2.11).
#[derive(Serialize, ToSchema)]
pub struct RevokeMyAgentResponse {
    pub agent_client_id: String,
    /// Unchanged on a repeat call.
    #[serde(with = "time::serde::rfc3339")]
    pub revoked_at: OffsetDateTime,
    /// `gdpr_art_7_withdrawal`.
    pub reason: &'static str,
}

/// The signed-in user revokes an agent: token exchange and CIBA refuse it for this user at
/// once; tokens already issued on the user's behalf live out their at most 900 seconds.
/// Idempotent.
#[utoipa::path(delete, path = "/v1/users/me/agents/{agent_client_id}", tag = "agents",
    security(("api_key" = [], "bearer" = [])),
    params(("agent_client_id" = String, Path, description = "The agent's client id")),
    responses(
        (status = 200, description = "Revoked (now or before)", body = RevokeMyAgentResponse),
        (status = 401, description = "`auth/invalid_token`", body = ErrorBody),
        (status = 404, description = "No such agent", body = ErrorBody),
    ))]
pub async fn revoke(
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
    Path(client_id): Path<String>,
) -> Result<Json<RevokeMyAgentResponse>, ApiError> {
    let cmd = |bearer| AgentCmd::RevokeMine {
        bearer,
        client_id: client_id.clone(),
    };
    let AgentAnswer::RevokedMine(revoked_at) = call(&user, &ctx, cmd, "agent").await? else {
        return Err(ApiError::internal("unexpected agent answer"));
    };
    Ok(Json(RevokeMyAgentResponse {
        agent_client_id: client_id,
        revoked_at,
        reason: USER_REVOCATION_REASON,
    }))
}

/// The answer of a restoration (spec 2.11 RestoreMyAgentResponse).
#[derive(Serialize, ToSchema)]
pub struct RestoreMyAgentResponse {
    pub agent_client_id: String,
    /// Now, also on a no-op.
    #[serde(with = "time::serde::rfc3339")]
    pub restored_at: OffsetDateTime,
    /// False when this user had not revoked it (nothing is written then).
    pub newly_restored: bool,
    /// `tenant` when the tenant's admins revoked the agent: it stays unusable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub still_blocked_by: Option<&'static str>,
}

/// Reverses the signed-in user's revocation of an agent.
#[utoipa::path(post, path = "/v1/users/me/agents/{agent_client_id}/restore", tag = "agents",
    security(("api_key" = [], "bearer" = [])),
    params(("agent_client_id" = String, Path, description = "The agent's client id")),
    responses(
        (status = 200, description = "Restored, or nothing to restore", body = RestoreMyAgentResponse),
        (status = 401, description = "`auth/invalid_token`", body = ErrorBody),
        (status = 404, description = "No such agent", body = ErrorBody),
    ))]
pub async fn restore(
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
    Path(client_id): Path<String>,
) -> Result<Json<RestoreMyAgentResponse>, ApiError> {
    let cmd = |bearer| AgentCmd::RestoreMine {
        bearer,
        client_id: client_id.clone(),
    };
    let AgentAnswer::Restored(r) = call(&user, &ctx, cmd, "agent").await? else {
        return Err(ApiError::internal("unexpected agent answer"));
    };
    Ok(Json(RestoreMyAgentResponse {
        agent_client_id: client_id,
        restored_at: r.restored_at,
        newly_restored: r.newly_restored,
        still_blocked_by: r.still_blocked_by_tenant.then_some("tenant"),
    }))
}

/// A CIBA request waiting for the user.
#[derive(Serialize, ToSchema)]
pub struct AgentRequestResponse {
    pub id: Uuid,
    pub agent_client_id: String,
    pub agent_name: String,
    /// What the agent shows on its side; the user checks they match.
    pub binding_message: Option<String>,
    pub scopes: Vec<String>,
    /// The RFC 8707 resource the scopes are asked for: an approval consents to them for this
    /// resource only. `null`: the request names none (its tokens are for no resource).
    pub resource: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

impl From<RequestView> for AgentRequestResponse {
    fn from(r: RequestView) -> Self {
        AgentRequestResponse {
            id: r.id,
            agent_client_id: r.client_id,
            agent_name: r.agent_name,
            binding_message: r.binding_message,
            scopes: r.scopes,
            resource: r.resource,
            created_at: r.created_at,
            expires_at: r.expires_at,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct AgentRequestList {
    /// Newest first.
    pub data: Vec<AgentRequestResponse>,
}

/// The CIBA requests of agents waiting for the signed-in user's decision.
#[utoipa::path(get, path = "/v1/users/me/agent-requests", tag = "agents",
    security(("api_key" = [], "bearer" = [])),
    responses(
        (status = 200, description = "Pending, unexpired requests", body = AgentRequestList),
        (status = 401, description = "`auth/invalid_token`", body = ErrorBody),
    ))]
pub async fn requests(
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
) -> Result<Json<AgentRequestList>, ApiError> {
    let cmd = |bearer| AgentCmd::MyRequests { bearer };
    let AgentAnswer::Requests(list) = call(&user, &ctx, cmd, "agent").await? else {
        return Err(ApiError::internal("unexpected agent answer"));
    };
    Ok(Json(AgentRequestList {
        data: list.into_iter().map(Into::into).collect(),
    }))
}

/// A decision on a request.
#[derive(Serialize, ToSchema)]
pub struct AgentRequestDecision {
    pub id: Uuid,
    /// `approved` or `denied`.
    pub status: &'static str,
}

async fn decide(
    user: UserBearer,
    ctx: AuditContext,
    id: String,
    approve: bool,
) -> Result<Json<AgentRequestDecision>, ApiError> {
    let id = path_id(&id, "agent request")?;
    let cmd = |bearer| AgentCmd::Decide {
        bearer,
        id,
        approve,
    };
    call(&user, &ctx, cmd, "agent request").await?;
    Ok(Json(AgentRequestDecision {
        id,
        status: if approve { "approved" } else { "denied" },
    }))
}

/// Approves a request: the agent's next poll gets a token on the user's behalf, and the
/// user's consent to the agent gains the request's scopes for the request's `resource` only
/// (what token exchange grants for that resource). An account whose e-mail address is not
/// confirmed cannot approve.
#[utoipa::path(post, path = "/v1/users/me/agent-requests/{id}/approve", tag = "agents",
    security(("api_key" = [], "bearer" = [])),
    params(("id" = String, Path, description = "The request's id")),
    responses(
        (status = 200, description = "Approved", body = AgentRequestDecision),
        (status = 401, description = "`auth/invalid_token`", body = ErrorBody),
        (status = 403, description = "`auth/email_unconfirmed`: the account's e-mail address is not confirmed (`details.credential`: `agent_consents`)", body = ErrorBody),
        (status = 404, description = "No such pending request of this user", body = ErrorBody),
        (status = 409, description = "`agent/revoked_by_user`: restore the agent first", body = ErrorBody),
    ))]
pub async fn approve(
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
    Path(id): Path<String>,
) -> Result<Json<AgentRequestDecision>, ApiError> {
    decide(user, ctx, id, true).await
}

/// Denies a request: the agent's next poll gets `access_denied`.
#[utoipa::path(post, path = "/v1/users/me/agent-requests/{id}/deny", tag = "agents",
    security(("api_key" = [], "bearer" = [])),
    params(("id" = String, Path, description = "The request's id")),
    responses(
        (status = 200, description = "Denied", body = AgentRequestDecision),
        (status = 401, description = "`auth/invalid_token`", body = ErrorBody),
        (status = 404, description = "No such pending request of this user", body = ErrorBody),
    ))]
pub async fn deny(
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
    Path(id): Path<String>,
) -> Result<Json<AgentRequestDecision>, ApiError> {
    decide(user, ctx, id, false).await
}
