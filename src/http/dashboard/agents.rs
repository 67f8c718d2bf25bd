//! The tenant's agents (spec 4.4): registered, changed, re-keyed and revoked by owners (a
//! secret is made only after a re-authentication within 5 minutes, and shown once), read by
//! any member; and each agent's activity feed.
//!
//! Agents are for paying tiers: registering one on the free tier is 403
//! `agent/tier_unauthorized`. An agent has no redirect URIs (it never sends a browser
//! anywhere), so a non-empty `redirect_uris` is 422 `agent/invalid_field`, and a grant other
//! than the four agent grants is 422 `agent/invalid_grant_type`.

use axum::{
    extract::{Path, Query, State},
    http::StatusCode,
    response::Response,
    Json,
};
use serde::{Deserialize, Serialize};
use tessera_actors::AgentError;
use tessera_actors::{
    records::Role,
    tenant::agents::{
        ActivityQuery, AgentAnswer, AgentCmd, AgentGrant, AgentPatch, AgentRateLimits, AgentRecord,
        EffectiveLimits, IssuedAgent, NewAgent,
    },
    TenantHandle, TenantMsg,
};
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::{created, hash_prefix, members_of, Dashboard, TenantCaller};
use crate::app::AppState;
use crate::http::error_responses::ReauthRequired;
use crate::http::error_responses::{
    ForbiddenCsrf, InvalidFields, InvalidRequest, NoSuchAgent, NotCallersTenant, Unauthenticated,
};
use crate::http::{
    error::{len_between, ApiError, ErrorBody, FieldErrors},
    extract::ApiJson,
    fields::{check_description, check_logo, dedup, nullable, scope_ok, PROTOCOL_SCOPES},
    paging::{self, Pagination},
    path_id::TenantSlug,
};

/// Scopes an agent may be registered for.
const MAX_SCOPES: usize = 50;

/// The per-minute limits an owner sets (each at least 1; clamped to the platform's ceiling).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RateLimitsBody {
    #[schema(minimum = 1)]
    pub api_calls_per_min: Option<u32>,
    #[schema(minimum = 1)]
    pub token_exchange_per_min: Option<u32>,
    #[schema(minimum = 1)]
    pub ciba_initiate_per_min: Option<u32>,
    #[schema(minimum = 1)]
    pub device_code_per_min: Option<u32>,
    #[schema(minimum = 1)]
    pub client_credentials_per_min: Option<u32>,
}

/// An agent's settings (spec 2.11 `agent_settings`).
#[derive(Clone, Debug, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentSettingsBody {
    #[serde(default)]
    pub rate_limits: RateLimitsBody,
    /// Unexpired tokens the agent may hold at once (at least 1).
    #[schema(minimum = 1)]
    pub max_concurrent_tokens: Option<u32>,
}

/// The register-agent body (spec 2.11).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterAgentRequest {
    /// 1-64 characters, shown to users.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 64, required = true)]
    pub name: String,
    /// At most 500 characters.
    pub description: Option<String>,
    /// What kind of agent it is, e.g. `mcp-server` (1-64 characters).
    pub agent_class: Option<String>,
    /// An https URL of at most 2,048 characters.
    pub logo_url: Option<String>,
    /// At most 50 scopes it may ask for: protocol scopes or resource scope names.
    #[serde(default)]
    #[schema(max_items = 50)]
    pub scopes: Vec<String>,
    /// 1-4 of `client_credentials`, `urn:ietf:params:oauth:grant-type:token-exchange`,
    /// `urn:openid:params:grant-type:ciba`, `urn:ietf:params:oauth:grant-type:device_code`.
    #[serde(default)]
    #[schema(min_items = 1, max_items = 4, required = true)]
    pub grant_types: Vec<String>,
    /// Must be empty: an agent never sends a browser anywhere.
    #[serde(default)]
    #[schema(max_items = 0)]
    pub redirect_uris: Vec<String>,
    /// The longest its tokens live, 60 s up to the platform's ceiling (default 3600). On a
    /// user's behalf: 900 s at most whatever this says.
    #[schema(minimum = 60)]
    pub agent_token_max_ttl_sec: Option<u32>,
    #[serde(default)]
    pub agent_settings: AgentSettingsBody,
}

/// A change to an agent: any of the register fields but `redirect_uris`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateAgentRequest {
    #[schema(min_length = 1, max_length = 64)]
    pub name: Option<String>,
    /// Null clears it.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>, nullable)]
    pub description: Option<Option<String>>,
    /// Null clears it.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>, nullable)]
    pub agent_class: Option<Option<String>>,
    /// Null clears it.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>, nullable)]
    pub logo_url: Option<Option<String>>,
    #[schema(max_items = 50)]
    pub scopes: Option<Vec<String>>,
    #[schema(min_items = 1, max_items = 4)]
    pub grant_types: Option<Vec<String>>,
    /// Must be empty when given.
    #[schema(max_items = 0)]
    pub redirect_uris: Option<Vec<String>>,
    #[schema(minimum = 60)]
    pub agent_token_max_ttl_sec: Option<u32>,
    /// Replaces the settings as a whole.
    pub agent_settings: Option<AgentSettingsBody>,
}

/// An agent as the dashboard shows it: never its secret.
#[derive(Serialize, ToSchema)]
pub struct AgentResponse {
    pub id: Uuid,
    /// `agt_...`: what it authenticates with at the token endpoint.
    pub client_id: String,
    pub name: String,
    pub description: Option<String>,
    pub agent_class: Option<String>,
    pub logo_url: Option<String>,
    pub scopes: Vec<String>,
    pub grant_types: Vec<String>,
    /// Always empty.
    pub redirect_uris: Vec<String>,
    pub agent_token_max_ttl_sec: u32,
    pub agent_settings: AgentSettingsBody,
    /// The limits in force: each of `agent_settings` clamped to the platform's ceiling, or
    /// the ceiling where none is set.
    #[schema(value_type = Object)]
    pub effective_limits: EffectiveLimits,
    /// The secret's first 12 characters.
    pub secret_prefix: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub secret_rotated_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub revoked_at: Option<OffsetDateTime>,
    /// 1 at registration; bumped by every PATCH.
    pub agent_metadata_version: u32,
}

impl AgentResponse {
    fn of(state: &AppState, a: AgentRecord) -> Self {
        let effective_limits = a.effective_limits(&state.config.agents.policy());
        AgentResponse {
            id: a.id,
            client_id: a.client_id,
            name: a.profile.name,
            description: a.profile.description,
            agent_class: a.profile.agent_class,
            logo_url: a.profile.logo_url,
            scopes: a.profile.scopes,
            grant_types: a
                .profile
                .grant_types
                .iter()
                .map(|g| g.as_str().to_owned())
                .collect(),
            redirect_uris: Vec::new(),
            agent_token_max_ttl_sec: a.profile.token_ttl_secs,
            agent_settings: AgentSettingsBody {
                rate_limits: RateLimitsBody {
                    api_calls_per_min: a.profile.rate_limits.api_calls_per_min,
                    token_exchange_per_min: a.profile.rate_limits.token_exchange_per_min,
                    ciba_initiate_per_min: a.profile.rate_limits.ciba_initiate_per_min,
                    device_code_per_min: a.profile.rate_limits.device_code_per_min,
                    client_credentials_per_min: a.profile.rate_limits.client_credentials_per_min,
                },
                max_concurrent_tokens: a.profile.max_concurrent_tokens,
            },
            effective_limits,
            secret_prefix: a.secret_prefix,
            created_at: a.created_at,
            updated_at: a.updated_at,
            secret_rotated_at: a.secret_rotated_at,
            revoked_at: a.revoked_at,
            agent_metadata_version: a.metadata_version,
        }
    }
}

/// An agent with its new secret: the answer of a registration and of a secret rotation.
#[derive(Serialize, ToSchema)]
pub struct IssuedAgentResponse {
    #[serde(flatten)]
    pub agent: AgentResponse,
    /// `tas_...`: shown once; keep it with the agent.
    pub client_secret: String,
}

impl IssuedAgentResponse {
    fn of(state: &AppState, i: IssuedAgent) -> Self {
        IssuedAgentResponse {
            agent: AgentResponse::of(state, i.record),
            client_secret: i.client_secret,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct AgentList {
    /// Oldest first.
    pub data: Vec<AgentResponse>,
    pub pagination: Pagination,
}

/// The answer of a revocation (spec 4.4).
#[derive(Serialize, ToSchema)]
pub struct RevokedAgentResponse {
    pub id: Uuid,
    pub name: String,
    #[serde(with = "time::serde::rfc3339")]
    pub revoked_at: OffsetDateTime,
    pub agent_metadata_version: u32,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// 1-100, default 20.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// Also revoked agents (default false).
    #[param(value_type = Option<bool>)]
    pub include_revoked: Option<String>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ActivityParams {
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// 1-200, default 50.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 200)]
    pub limit: Option<String>,
    /// RFC 3339: only actions at or after.
    pub since: Option<String>,
    /// RFC 3339: only actions at or before.
    pub until: Option<String>,
    /// Only actions of this user (owners only, for another user than themselves).
    pub actor_user_id: Option<String>,
    /// Only actions of this type (`token.issued`, `token.refused`, `token.introspected`,
    /// `token.revoked`, `request.approved`, `request.denied`, `ciba.requested`,
    /// `device.requested`, `agent.revoked`, `agent.revoked_by_user`,
    /// `agent.restored_by_user`, `agent.rate_limited`).
    pub action_type: Option<String>,
}

/// One thing an agent did or had done to it (spec 2.11 AgentActionResponse).
#[derive(Serialize, ToSchema)]
pub struct AgentActionResponse {
    pub id: Uuid,
    pub action: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor_user_id: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor_user_email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// The grant type of a token, or what happened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method_or_event: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jti: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope_used: Option<String>,
    /// The first 12 characters of the keyed hash of the client address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_hash_prefix: Option<String>,
    /// The first 12 characters of the keyed hash of the User-Agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_agent_hash_prefix: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

#[derive(Serialize, ToSchema)]
pub struct AgentActivity {
    pub data: Vec<AgentActionResponse>,
    pub pagination: Pagination,
}

/// One agent command on the tenant's actor; an unknown agent is 404 `resource/not_found`.
async fn agents(
    tenant: &TenantHandle,
    ctx: &tessera_actors::tenant::audit::AuditContext,
    cmd: AgentCmd,
) -> Result<AgentAnswer, ApiError> {
    crate::http::oauth::agents::call_api(tenant, ctx, cmd, "agent").await
}

fn one(answer: AgentAnswer) -> Result<AgentRecord, ApiError> {
    match answer {
        AgentAnswer::One(a) => Ok(*a),
        AgentAnswer::Issued(i) => Ok(i.record),
        _ => Err(ApiError::internal("unexpected agent answer")),
    }
}

fn issued(answer: AgentAnswer) -> Result<IssuedAgent, ApiError> {
    match answer {
        AgentAnswer::Issued(i) => Ok(*i),
        _ => Err(ApiError::internal("unexpected agent answer")),
    }
}

/// The agent, unless it is revoked (409 `agent/already_revoked`, before anything about the
/// request is checked: nothing changes a revoked agent).
async fn live_agent(tenant: &TenantHandle, auth: &Dashboard, id: Uuid) -> Result<(), ApiError> {
    let a = one(agents(tenant, &auth.ctx, AgentCmd::Get(id)).await?)?;
    if a.revoked_at.is_some() {
        return Err(ApiError::from(tessera_actors::CallError::Failed(
            tessera_actors::TenantError::Agent(AgentError::AlreadyRevoked),
        )));
    }
    Ok(())
}

/// 422 with `code`.
fn unprocessable(code: &str, message: &str) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
}

fn check_name(e: &mut FieldErrors, name: &str) {
    e.check("name", len_between(name, 1, 64), "must be 1-64 characters");
}

fn check_class(e: &mut FieldErrors, class: Option<&str>) {
    e.check(
        "agent_class",
        class.is_none_or(|c| {
            len_between(c, 1, 64)
                && c.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }),
        "must be 1-64 letters, digits, '-', '_' or '.'",
    );
}

fn check_scopes(e: &mut FieldErrors, scopes: &[String]) {
    e.check("scopes", scopes.len() <= MAX_SCOPES, "at most 50 scopes");
    for (i, s) in scopes.iter().enumerate() {
        e.check(
            &format!("scopes[{i}]"),
            scope_ok(s)
                && (PROTOCOL_SCOPES.contains(&s.as_str()) || !crate::http::catalog::reserved(s)),
            "must be openid, profile, email, phone, address, offline_access or match ^[a-z][a-z0-9_.:-]{0,63}$ outside the reserved namespaces (mcp:, tessera:, sso:, agent:)",
        );
    }
}

fn check_ttl(e: &mut FieldErrors, state: &AppState, ttl: u32) {
    let max = state.config.agents.max_token_ttl_secs;
    e.check(
        "agent_token_max_ttl_sec",
        (60..=max).contains(&ttl),
        format!("must be 60-{max}"),
    );
}

fn check_settings(e: &mut FieldErrors, s: &AgentSettingsBody) {
    let r = &s.rate_limits;
    for (name, v) in [
        ("api_calls_per_min", r.api_calls_per_min),
        ("token_exchange_per_min", r.token_exchange_per_min),
        ("ciba_initiate_per_min", r.ciba_initiate_per_min),
        ("device_code_per_min", r.device_code_per_min),
        ("client_credentials_per_min", r.client_credentials_per_min),
    ] {
        e.check(
            &format!("agent_settings.rate_limits.{name}"),
            v.is_none_or(|v| v >= 1),
            "must be at least 1",
        );
    }
    e.check(
        "agent_settings.max_concurrent_tokens",
        s.max_concurrent_tokens.is_none_or(|v| v >= 1),
        "must be at least 1",
    );
}

/// The grant types, each one of the four: else 422 `agent/invalid_grant_type`.
fn grants(e: &mut FieldErrors, raw: &[String]) -> Result<Vec<AgentGrant>, ApiError> {
    let parsed: Option<Vec<AgentGrant>> = raw.iter().map(|g| AgentGrant::parse(g)).collect();
    let Some(mut parsed) = parsed else {
        return Err(unprocessable(
            "agent/invalid_grant_type",
            "grant_types may hold only client_credentials, urn:ietf:params:oauth:grant-type:token-exchange, urn:openid:params:grant-type:ciba and urn:ietf:params:oauth:grant-type:device_code",
        ));
    };
    parsed.dedup();
    let mut seen = Vec::new();
    parsed.retain(|g| {
        let new = !seen.contains(g);
        seen.push(*g);
        new
    });
    e.check(
        "grant_types",
        !parsed.is_empty(),
        "must name at least one grant type",
    );
    Ok(parsed)
}

fn no_redirects(uris: &[String]) -> Result<(), ApiError> {
    if uris.is_empty() {
        Ok(())
    } else {
        Err(unprocessable(
            "agent/invalid_field",
            "redirect_uris must be empty for an agent",
        ))
    }
}

fn limits_of(s: &AgentSettingsBody) -> AgentRateLimits {
    let r = &s.rate_limits;
    AgentRateLimits {
        api_calls_per_min: r.api_calls_per_min,
        token_exchange_per_min: r.token_exchange_per_min,
        ciba_initiate_per_min: r.ciba_initiate_per_min,
        device_code_per_min: r.device_code_per_min,
        client_credentials_per_min: r.client_credentials_per_min,
    }
}

/// The tenant's agents, oldest first (any member).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/agents", tag = "agents",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug, ListQuery),
    responses(
        (status = 200, description = "A page of agents, never their secrets", body = AgentList),
        (status = 400, description = "`validation/invalid_request` (cursor, limit, include_revoked)", body = ErrorBody),
        Unauthenticated, NotCallersTenant,
    ))]
pub async fn list(
    State(state): State<AppState>,
    caller: TenantCaller,
    Query(q): Query<ListQuery>,
) -> Result<Json<AgentList>, ApiError> {
    let (_, tenant) = caller.member(&state)?;
    let mut e = FieldErrors::new();
    let limit = paging::limit(&mut e, q.limit.as_deref(), 20, 100);
    let after = paging::cursor(&mut e, q.cursor.as_deref(), paging::id_cursor);
    let include_revoked = match q.include_revoked.as_deref() {
        None | Some("false") => Some(false),
        Some("true") => Some(true),
        Some(_) => None,
    };
    e.check(
        "include_revoked",
        include_revoked.is_some(),
        "must be true or false",
    );
    e.finish()?;
    let cmd = AgentCmd::List {
        after,
        limit,
        include_revoked: include_revoked.unwrap_or(false),
    };
    let AgentAnswer::Page(page, next) = agents(&tenant, &caller.auth.ctx, cmd).await? else {
        return Err(ApiError::internal("unexpected agent answer"));
    };
    Ok(Json(AgentList {
        data: page
            .into_iter()
            .map(|a| AgentResponse::of(&state, a))
            .collect(),
        pagination: Pagination::next(next.map(|n| n.to_string())),
    }))
}

/// Registers an agent (owner, re-authenticated in the last 5 minutes; not on the free tier).
/// Its secret is in this answer only.
#[utoipa::path(post, path = "/v1/auth/dashboard/tenants/{slug}/agents", tag = "agents",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    request_body = RegisterAgentRequest,
    responses(
        (status = 201, description = "The agent, with its secret (shown once)", body = IssuedAgentResponse),
        InvalidFields, NotCallersTenant,
        ReauthRequired,
        (status = 403, description = "`agent/tier_unauthorized` (free tier), `dashboard/forbidden` (not an owner), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 409, description = "`agent/limit_reached`", body = ErrorBody),
        (status = 422, description = "`agent/invalid_grant_type`, `agent/invalid_field` (non-empty `redirect_uris`)", body = ErrorBody),
    ))]
pub async fn create(
    State(state): State<AppState>,
    caller: TenantCaller,
    ApiJson(req): ApiJson<RegisterAgentRequest>,
) -> Result<Response, ApiError> {
    let (_, tenant) = caller.owner(&state)?;
    // The tier first: on the free tier nothing else about the request matters.
    let overview = tenant
        .call(|reply| TenantMsg::GetOverview { reply })
        .await?;
    if overview.info.tier == tessera_actors::records::Tier::Free {
        return Err(ApiError::from(tessera_actors::CallError::Failed(
            tessera_actors::TenantError::Agent(AgentError::TierUnauthorized),
        )));
    }
    no_redirects(&req.redirect_uris)?;
    let mut e = FieldErrors::new();
    let grant_types = grants(&mut e, &req.grant_types)?;
    let name = req.name.trim().to_owned();
    check_name(&mut e, &name);
    check_description(&mut e, req.description.as_deref());
    check_logo(&mut e, req.logo_url.as_deref());
    check_class(&mut e, req.agent_class.as_deref());
    check_scopes(&mut e, &req.scopes);
    let ttl = req.agent_token_max_ttl_sec.unwrap_or(3600);
    check_ttl(&mut e, &state, ttl);
    check_settings(&mut e, &req.agent_settings);
    e.finish()?;
    caller.auth.require_recent_reauth()?;
    let new = NewAgent {
        name,
        description: req.description,
        agent_class: req.agent_class,
        logo_url: req.logo_url,
        scopes: dedup(req.scopes),
        grant_types,
        token_ttl_secs: ttl,
        rate_limits: limits_of(&req.agent_settings),
        max_concurrent_tokens: req.agent_settings.max_concurrent_tokens,
    };
    let issued_agent = issued(agents(&tenant, &caller.auth.ctx, AgentCmd::Register(new)).await?)?;
    Ok(created(IssuedAgentResponse::of(&state, issued_agent)))
}

/// One agent (any member).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/agents/{agent_id}", tag = "agents",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("agent_id" = String, Path, description = "The agent's id"),
    ),
    responses(
        (status = 200, description = "The agent", body = AgentResponse),
        Unauthenticated,
        (status = 404, description = "No such agent of this tenant, or not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn show(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, id)): Path<(String, String)>,
) -> Result<Json<AgentResponse>, ApiError> {
    let (_, tenant, id) = caller.member_item(&state, &id, "agent")?;
    let a = one(agents(&tenant, &caller.auth.ctx, AgentCmd::Get(id)).await?)?;
    Ok(Json(AgentResponse::of(&state, a)))
}

/// Changes an agent (owner); every change bumps `agent_metadata_version`.
#[utoipa::path(patch, path = "/v1/auth/dashboard/tenants/{slug}/agents/{agent_id}", tag = "agents",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("agent_id" = String, Path, description = "The agent's id"),
    ),
    request_body = UpdateAgentRequest,
    responses(
        (status = 200, description = "The agent as changed", body = AgentResponse),
        InvalidRequest, Unauthenticated, ForbiddenCsrf, NoSuchAgent,
        (status = 409, description = "`agent/already_revoked`", body = ErrorBody),
        (status = 422, description = "`agent/invalid_grant_type`, `agent/invalid_field`", body = ErrorBody),
    ))]
pub async fn update(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, id)): Path<(String, String)>,
    ApiJson(req): ApiJson<UpdateAgentRequest>,
) -> Result<Json<AgentResponse>, ApiError> {
    let (_, tenant, id) = caller.owner_item(&state, &id, "agent")?;
    live_agent(&tenant, &caller.auth, id).await?;
    if let Some(uris) = &req.redirect_uris {
        no_redirects(uris)?;
    }
    let mut e = FieldErrors::new();
    let grant_types = match &req.grant_types {
        Some(g) => Some(grants(&mut e, g)?),
        None => None,
    };
    let name = req.name.as_ref().map(|n| n.trim().to_owned());
    if let Some(n) = &name {
        check_name(&mut e, n);
    }
    if let Some(d) = &req.description {
        check_description(&mut e, d.as_deref());
    }
    if let Some(l) = &req.logo_url {
        check_logo(&mut e, l.as_deref());
    }
    if let Some(c) = &req.agent_class {
        check_class(&mut e, c.as_deref());
    }
    if let Some(s) = &req.scopes {
        check_scopes(&mut e, s);
    }
    if let Some(t) = req.agent_token_max_ttl_sec {
        check_ttl(&mut e, &state, t);
    }
    if let Some(s) = &req.agent_settings {
        check_settings(&mut e, s);
    }
    e.finish()?;
    let patch = AgentPatch {
        name,
        description: req.description,
        agent_class: req.agent_class,
        logo_url: req.logo_url,
        scopes: req.scopes.map(dedup),
        grant_types,
        token_ttl_secs: req.agent_token_max_ttl_sec,
        rate_limits: req.agent_settings.as_ref().map(limits_of),
        max_concurrent_tokens: req.agent_settings.map(|s| s.max_concurrent_tokens),
    };
    let a = one(agents(&tenant, &caller.auth.ctx, AgentCmd::Update(id, patch)).await?)?;
    Ok(Json(AgentResponse::of(&state, a)))
}

/// A new secret (owner, re-authenticated in the last 5 minutes); the old one stops working at
/// once.
#[utoipa::path(post, path = "/v1/auth/dashboard/tenants/{slug}/agents/{agent_id}/rotate-secret", tag = "agents",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("agent_id" = String, Path, description = "The agent's id"),
    ),
    responses(
        (status = 200, description = "The agent with its new secret (shown once)", body = IssuedAgentResponse),
        ReauthRequired,
        ForbiddenCsrf, NoSuchAgent,
        (status = 409, description = "`agent/already_revoked`", body = ErrorBody),
    ))]
pub async fn rotate_secret(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, id)): Path<(String, String)>,
) -> Result<Json<IssuedAgentResponse>, ApiError> {
    let (_, tenant, id) = caller.owner_item(&state, &id, "agent")?;
    live_agent(&tenant, &caller.auth, id).await?;
    caller.auth.require_recent_reauth()?;
    let i = issued(agents(&tenant, &caller.auth.ctx, AgentCmd::RotateSecret(id)).await?)?;
    Ok(Json(IssuedAgentResponse::of(&state, i)))
}

/// Revokes an agent (owner). The first call revokes it at once: its secret stops working,
/// every token it holds is denylisted for the rest of its life, an `agent.revoked` audit event
/// (severity HIGH) is written, every owner of the tenant is mailed, and an `agent.revoked`
/// event is recorded for the tenant's webhooks. A repeat answers the same `revoked_at` and
/// does nothing else.
#[utoipa::path(delete, path = "/v1/auth/dashboard/tenants/{slug}/agents/{agent_id}", tag = "agents",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("agent_id" = String, Path, description = "The agent's id"),
    ),
    responses(
        (status = 200, description = "Revoked (now or before)", body = RevokedAgentResponse),
        Unauthenticated, ForbiddenCsrf, NoSuchAgent,
    ))]
pub async fn revoke(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, id)): Path<(String, String)>,
) -> Result<Json<RevokedAgentResponse>, ApiError> {
    let (m, tenant, id) = caller.owner_item(&state, &id, "agent")?;
    let owners = members_of(&state, m.tenant)
        .await?
        .members
        .into_iter()
        .filter(|m| m.role == Role::Owner)
        .map(|m| m.email)
        .collect();
    let a = one(agents(&tenant, &caller.auth.ctx, AgentCmd::Revoke { id, owners }).await?)?;
    let revoked_at = a
        .revoked_at
        .ok_or_else(|| ApiError::internal("a revoked agent without revoked_at"))?;
    Ok(Json(RevokedAgentResponse {
        id: a.id,
        name: a.profile.name,
        revoked_at,
        agent_metadata_version: a.metadata_version,
    }))
}

/// What an agent did, newest first (any member; only owners see other users' actions).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/agents/{agent_id}/activity", tag = "agents",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("agent_id" = String, Path, description = "The agent's id"),
        ActivityParams,
    ),
    responses(
        (status = 200, description = "A page of actions", body = AgentActivity),
        InvalidRequest, Unauthenticated, NoSuchAgent,
    ))]
pub async fn activity(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, id)): Path<(String, String)>,
    Query(q): Query<ActivityParams>,
) -> Result<Json<AgentActivity>, ApiError> {
    let (m, tenant, id) = caller.member_item(&state, &id, "agent")?;
    let mut e = FieldErrors::new();
    let limit = paging::limit(&mut e, q.limit.as_deref(), 50, 200);
    let cursor = paging::cursor(&mut e, q.cursor.as_deref(), paging::key_cursor(12));
    let time = |v: &Option<String>| match v {
        None => Some(None),
        Some(t) => OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339)
            .ok()
            .map(Some),
    };
    let (since, until) = (time(&q.since), time(&q.until));
    let actor = match q.actor_user_id.as_deref() {
        None => Some(None),
        Some(u) => Uuid::parse_str(u).ok().map(Some),
    };
    e.check("since", since.is_some(), "must be an RFC 3339 time")
        .check("until", until.is_some(), "must be an RFC 3339 time")
        .check("actor_user_id", actor.is_some(), "must be a user id");
    if let Some(t) = &q.action_type {
        e.check(
            "action_type",
            (1..=100).contains(&t.len()),
            "must be 1-100 characters",
        );
    }
    e.finish()?;
    let query = ActivityQuery {
        cursor,
        limit,
        since: since.flatten(),
        until: until.flatten(),
        actor_user_id: actor.flatten(),
        action_type: q.action_type,
        only_actor: (m.role != Role::Owner).then_some(Some(caller.auth.session.account_id)),
    };
    let AgentAnswer::Activity(page) =
        agents(&tenant, &caller.auth.ctx, AgentCmd::Activity(id, query)).await?
    else {
        return Err(ApiError::internal("unexpected agent answer"));
    };
    let data = page
        .actions
        .into_iter()
        .map(|v| {
            let r = v.record;
            AgentActionResponse {
                id: r.id,
                action: r.action,
                actor_user_id: r.actor_user_id,
                actor_user_email: v.actor_user_email,
                resource: r.resource,
                method_or_event: r.method_or_event,
                jti: r.jti,
                scope_used: r.scope_used,
                ip_hash_prefix: hash_prefix(r.ip_hash),
                user_agent_hash_prefix: hash_prefix(r.ua_hash),
                created_at: r.created_at,
            }
        })
        .collect();
    Ok(Json(AgentActivity {
        data,
        pagination: Pagination::next(page.next_cursor.map(hex::encode)),
    }))
}

/// How the agents flow's refusals answer.
impl From<AgentError> for ApiError {
    fn from(e: AgentError) -> Self {
        match e {
            AgentError::TierUnauthorized => ApiError::new(
                StatusCode::FORBIDDEN,
                "agent/tier_unauthorized",
                "agents are not available on the free tier",
            ),
            AgentError::Limit => ApiError::new(
                StatusCode::CONFLICT,
                "agent/limit_reached",
                "the tenant has as many agents as it may (500, revoked ones included)",
            ),
            AgentError::AlreadyRevoked => ApiError::new(
                StatusCode::CONFLICT,
                "agent/already_revoked",
                "the agent is revoked; it cannot be changed or re-keyed",
            ),
            AgentError::RevokedByUser => ApiError::new(
                StatusCode::CONFLICT,
                "agent/revoked_by_user",
                "you revoked this agent; restore it first",
            ),
        }
    }
}
