//! The owners' registry of agents: register, update, rotate a secret, revoke, list; and
//! `PublishedAgents`, the registry and the denylist as the HTTP edge reads them, replaced in
//! memory after each committed change.

use crate::tenant::agents::memory::Agents;
use crate::tenant::ctx::TenantCtx;

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use tessera_storage::{sha256, TenantStore};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    activity::Action,
    policy::{AgentGrant, AgentPolicy, AgentRateLimits},
    records::{AgentRecord, AgentTokenRecord, DeniedTokenRecord, NewAgent},
};
use crate::error::AgentError;
use crate::{
    error::TenantError,
    outbound::{MailJob, MailKind},
    records::Tier,
    tenant::{
        audit::AuditContext,
        oauth::{ClientAuth, OAuthFailure},
        oauth_clients::TokenAuthMethod,
    },
};

/// Agents a tenant may register (revoked ones included).
pub const MAX_AGENTS: usize = 500;

/// A change to an agent; `None` leaves a field. Validated by the caller.
#[derive(Clone, Debug, Default)]
pub struct AgentPatch {
    pub name: Option<String>,
    pub description: Option<Option<String>>,
    pub agent_class: Option<Option<String>>,
    pub logo_url: Option<Option<String>>,
    pub scopes: Option<Vec<String>>,
    pub grant_types: Option<Vec<AgentGrant>>,
    pub token_ttl_secs: Option<u32>,
    pub rate_limits: Option<AgentRateLimits>,
    pub max_concurrent_tokens: Option<Option<u32>>,
}

/// An agent with its new secret: the only time the secret is anywhere but with its caller.
// Holds secrets (a client secret, a poll handle, a mailed token): no `Debug`.
#[derive(Clone)]
pub struct IssuedAgent {
    pub record: AgentRecord,
    pub client_secret: String,
}

/// The registry and the denylist as the HTTP edge reads them
/// ([`crate::tenant::runtime::TenantCells`]).
#[derive(Debug, Default)]
pub struct PublishedAgents {
    by_client: HashMap<String, Arc<AgentRecord>>,
    denied: HashSet<Uuid>,
}

impl PublishedAgents {
    pub fn load(store: &TenantStore) -> Result<Self, TenantError> {
        let mut by_client = HashMap::new();
        for item in store.scan::<AgentRecord>(b"") {
            let (_, a) = item?;
            by_client.insert(a.client_id.clone(), Arc::new(a));
        }
        let mut denied = HashSet::new();
        for item in store.scan::<DeniedTokenRecord>(b"") {
            let (key, _) = item?;
            if let Ok(jti) = Uuid::from_slice(&key) {
                denied.insert(jti);
            }
        }
        Ok(PublishedAgents { by_client, denied })
    }

    pub fn get(&self, client_id: &str) -> Option<&Arc<AgentRecord>> {
        self.by_client.get(client_id)
    }

    /// This set with `agent` as it is now and `denied` added to the denylist.
    fn with(&self, agent: Option<&AgentRecord>, denied: &[Uuid]) -> Self {
        let mut next = PublishedAgents {
            by_client: self.by_client.clone(),
            denied: self.denied.clone(),
        };
        if let Some(a) = agent {
            next.by_client
                .insert(a.client_id.clone(), Arc::new(a.clone()));
        }
        next.denied.extend(denied.iter().copied());
        next
    }

    /// Whether the token `jti` was denylisted.
    pub fn is_denied(&self, jti: &str) -> bool {
        Uuid::parse_str(jti).is_ok_and(|j| self.denied.contains(&j))
    }

    /// The agent presenting `auth`: its secret by HTTP Basic or in the body. A revoked
    /// agent's secret authenticates nothing.
    pub fn authenticate(&self, auth: &ClientAuth) -> Result<Arc<AgentRecord>, OAuthFailure> {
        let agent = self
            .get(&auth.client_id)
            .ok_or(OAuthFailure::InvalidClient)?;
        let method_ok = matches!(
            auth.method,
            TokenAuthMethod::ClientSecretBasic | TokenAuthMethod::ClientSecretPost
        );
        if method_ok
            && agent.revoked_at.is_none()
            && auth
                .secret
                .as_deref()
                .is_some_and(|s| agent.secret_matches(s))
        {
            Ok(agent.clone())
        } else {
            Err(OAuthFailure::InvalidClient)
        }
    }
}

/// A fresh secret: `tas_` and 32 random bytes; its hash and its first 12 characters.
fn new_secret() -> (String, [u8; 32], String) {
    let bytes: [u8; 32] = rand::random();
    let secret = format!("tas_{}", URL_SAFE_NO_PAD.encode(bytes));
    let prefix = secret.chars().take(12).collect();
    let hash = sha256(secret.as_bytes());
    (secret, hash, prefix)
}

fn new_client_id() -> String {
    let bytes: [u8; 16] = rand::random();
    format!("agt_{}", hex::encode(bytes))
}

impl AgentRecord {
    /// A new agent as `new` describes it, registered at `now` with a fresh client id, and
    /// its secret.
    pub(super) fn register(new: NewAgent, now: OffsetDateTime) -> (AgentRecord, String) {
        let (secret, hash, prefix) = new_secret();
        let record = AgentRecord {
            id: Uuid::now_v7(),
            client_id: new_client_id(),
            profile: new,
            secret_hash: hash,
            secret_prefix: prefix,
            created_at: now,
            updated_at: now,
            secret_rotated_at: None,
            revoked_at: None,
            metadata_version: 1,
        };
        (record, secret)
    }
}

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    pub(super) fn agent_policy(&self) -> AgentPolicy {
        self.runtime.agents
    }

    /// Publishes a change just committed to the registry (and tokens just denylisted) for
    /// the HTTP edge: in memory, so it cannot fail once the change is durable.
    pub(in crate::tenant) fn publish_agent(&self, agent: Option<&AgentRecord>, denied: &[Uuid]) {
        let next = self.cells.agents.load().with(agent, denied);
        self.cells.agents.store(Arc::new(next));
    }
}

impl Agents {
    pub(super) fn agent(&self, cx: &TenantCtx, id: Uuid) -> Result<AgentRecord, TenantError> {
        cx.store
            .get::<AgentRecord>(id.as_bytes())?
            .ok_or(TenantError::NotFound)
    }

    /// The current record of an agent the edge authenticated: gone or re-keyed since, it
    /// gets nothing.
    /// The actor publishes every change before it answers, so its cell is the registry.
    pub(super) fn current_agent(
        &self,
        cx: &TenantCtx,
        agent: &AgentRecord,
    ) -> Result<Arc<AgentRecord>, TenantError> {
        cx.cells
            .agents
            .load()
            .get(&agent.client_id)
            .filter(|a| {
                a.id == agent.id && a.revoked_at.is_none() && a.secret_hash == agent.secret_hash
            })
            .cloned()
            .ok_or(TenantError::OAuth(OAuthFailure::InvalidClient))
    }

    pub(super) fn agent_by_client(
        &self,
        cx: &TenantCtx,
        client_id: &str,
    ) -> Result<AgentRecord, TenantError> {
        cx.cells
            .agents
            .load()
            .get(client_id)
            .map(|a| (**a).clone())
            .ok_or(TenantError::NotFound)
    }

    fn write_agent(
        &mut self,
        cx: &mut TenantCtx,
        agent: &AgentRecord,
        event: &str,
        ctx: &AuditContext,
        extra: serde_json::Value,
    ) -> Result<(), TenantError> {
        let mut fx = cx.effects();
        fx.batch.put(agent.id.as_bytes(), agent)?;
        let mut metadata = serde_json::json!({
            "agent_id": agent.id,
            "client_id": agent.client_id,
            "name": agent.profile.name,
        });
        if let (Some(m), serde_json::Value::Object(extra)) = (metadata.as_object_mut(), extra) {
            m.extend(extra);
        }
        cx.audit_into(&mut fx.batch, event, ctx, metadata)?;
        cx.commit(fx)?;
        cx.publish_agent(Some(agent), &[]);
        Ok(())
    }

    pub(super) fn register_agent(
        &mut self,
        cx: &mut TenantCtx,
        new: NewAgent,
        ctx: &AuditContext,
    ) -> Result<IssuedAgent, TenantError> {
        if cx.info.tier == Tier::Free {
            return Err(TenantError::Agent(AgentError::TierUnauthorized));
        }
        if cx.store.scan::<AgentRecord>(b"").count() >= MAX_AGENTS {
            return Err(TenantError::Agent(AgentError::Limit));
        }
        let (record, secret) = AgentRecord::register(new, OffsetDateTime::now_utc());
        let extra = serde_json::json!({
            "scopes": record.profile.scopes,
            "grant_types": record.profile.grant_types.iter().map(|g| g.as_str()).collect::<Vec<_>>(),
        });
        self.write_agent(cx, &record, "agent.registered", ctx, extra)?;
        Ok(IssuedAgent {
            record,
            client_secret: secret,
        })
    }

    pub(super) fn update_agent(
        &mut self,
        cx: &mut TenantCtx,
        id: Uuid,
        patch: AgentPatch,
        ctx: &AuditContext,
    ) -> Result<AgentRecord, TenantError> {
        let mut a = self.agent(cx, id)?;
        if a.revoked_at.is_some() {
            return Err(TenantError::Agent(AgentError::AlreadyRevoked));
        }
        let mut changed: Vec<&str> = Vec::new();
        macro_rules! set {
            ($field:ident, $value:expr, $name:literal) => {
                if let Some(v) = $value {
                    if v != a.profile.$field {
                        changed.push($name);
                    }
                    a.profile.$field = v;
                }
            };
        }
        set!(name, patch.name, "name");
        set!(description, patch.description, "description");
        set!(agent_class, patch.agent_class, "agent_class");
        set!(logo_url, patch.logo_url, "logo_url");
        set!(scopes, patch.scopes, "scopes");
        set!(grant_types, patch.grant_types, "grant_types");
        set!(
            token_ttl_secs,
            patch.token_ttl_secs,
            "agent_token_max_ttl_sec"
        );
        set!(rate_limits, patch.rate_limits, "rate_limits");
        set!(
            max_concurrent_tokens,
            patch.max_concurrent_tokens,
            "max_concurrent_tokens"
        );
        a.metadata_version += 1;
        a.updated_at = OffsetDateTime::now_utc();
        self.write_agent(
            cx,
            &a,
            "agent.updated",
            ctx,
            serde_json::json!({ "changed": changed, "agent_metadata_version": a.metadata_version }),
        )?;
        Ok(a)
    }

    pub(super) fn rotate_agent_secret(
        &mut self,
        cx: &mut TenantCtx,
        id: Uuid,
        ctx: &AuditContext,
    ) -> Result<IssuedAgent, TenantError> {
        let mut a = self.agent(cx, id)?;
        if a.revoked_at.is_some() {
            return Err(TenantError::Agent(AgentError::AlreadyRevoked));
        }
        let (secret, hash, prefix) = new_secret();
        let now = OffsetDateTime::now_utc();
        a.secret_hash = hash;
        a.secret_prefix = prefix;
        a.secret_rotated_at = Some(now);
        a.updated_at = now;
        self.write_agent(
            cx,
            &a,
            "agent.secret_rotated",
            ctx,
            serde_json::json!({ "secret_prefix": a.secret_prefix }),
        )?;
        Ok(IssuedAgent {
            record: a,
            client_secret: secret,
        })
    }

    /// Revokes an agent, once: denylists its live tokens, writes the HIGH audit event, mails
    /// the owners and records the outbound event, all in one batch.
    pub(super) fn revoke_agent(
        &mut self,
        cx: &mut TenantCtx,
        id: Uuid,
        owners: &[String],
        ctx: &AuditContext,
    ) -> Result<(AgentRecord, Vec<MailJob>), TenantError> {
        let mut a = self.agent(cx, id)?;
        if a.revoked_at.is_some() {
            return Ok((a, Vec::new()));
        }
        let now = OffsetDateTime::now_utc();
        a.revoked_at = Some(now);
        a.updated_at = now;
        let mut fx = cx.effects();
        fx.batch.put(a.id.as_bytes(), &a)?;
        let mut denied = Vec::new();
        for item in cx.store.scan::<AgentTokenRecord>(a.id.as_bytes()) {
            let (key, t) = item?;
            if t.exp <= now.unix_timestamp() {
                continue;
            }
            if let Ok(jti) = Uuid::from_slice(&key[16..]) {
                fx.batch
                    .put(jti.as_bytes(), &DeniedTokenRecord { exp: t.exp })?;
                denied.push(jti);
            }
        }
        cx.audit_into(
            &mut fx.batch,
            "agent.revoked",
            ctx,
            serde_json::json!({
                "severity": "HIGH",
                "agent_id": a.id,
                "client_id": a.client_id,
                "name": a.profile.name,
                "tokens_denylisted": denied.len(),
            }),
        )?;
        let mut action = Action::new("agent.revoked");
        action.method = Some("admin");
        self.record_action(&mut fx.batch, a.id, action, ctx, now)?;
        cx.emit_event(
            &mut fx.batch,
            "agent.revoked",
            serde_json::json!({
                "agent_id": a.id,
                "client_id": a.client_id,
                "name": a.profile.name,
                "revoked_at": now.format(&time::format_description::well_known::Rfc3339).unwrap_or_default(),
            }),
        )?;
        for owner in owners {
            cx.queue_mail(
                &mut fx,
                owner,
                MailKind::AgentRevoked {
                    agent_name: a.profile.name.clone(),
                    client_id: a.client_id.clone(),
                },
            )?;
        }
        let mail = cx.commit(fx)?;
        self.counters.live.remove(&a.id);
        cx.publish_agent(Some(&a), &denied);
        Ok((a, mail))
    }

    pub(super) fn list_agents(
        &self,
        cx: &TenantCtx,
        after: Option<Uuid>,
        limit: usize,
        include_revoked: bool,
    ) -> Result<(Vec<AgentRecord>, Option<Uuid>), TenantError> {
        let mut out = Vec::new();
        let mut more = false;
        for item in cx.store.scan::<AgentRecord>(b"") {
            let (_, a) = item?;
            if after.is_some_and(|c| a.id <= c) {
                continue;
            }
            if a.revoked_at.is_some() && !include_revoked {
                continue;
            }
            if out.len() == limit {
                more = true;
                break;
            }
            out.push(a);
        }
        let next = if more { out.last().map(|a| a.id) } else { None };
        Ok((out, next))
    }
}
