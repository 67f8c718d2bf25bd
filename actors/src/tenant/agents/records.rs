//! What agents keep in the store: the registered agent, its live and denylisted tokens, its
//! activity feed, what it did for each user, and the CIBA and device requests with their
//! indexes; and the keys they are stored under.

use serde::{Deserialize, Serialize};
use tessera_storage::{ct_eq, sha256, Kind};
use time::OffsetDateTime;
use uuid::Uuid;

use super::policy::{
    AgentGrant, AgentLimit, AgentPolicy, AgentRateLimits, EffectiveLimits, PerMinute,
};
use crate::tenant::audit::event_key;

/// An agent as registered, validated by the caller; its record keeps it as its profile.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NewAgent {
    pub name: String,
    pub description: Option<String>,
    pub agent_class: Option<String>,
    pub logo_url: Option<String>,
    pub scopes: Vec<String>,
    pub grant_types: Vec<AgentGrant>,
    pub token_ttl_secs: u32,
    pub rate_limits: AgentRateLimits,
    pub max_concurrent_tokens: Option<u32>,
}

/// A registered agent, keyed by its id (a UUID v7, so the registry scans oldest first).
#[derive(Clone, Serialize, Deserialize)]
pub struct AgentRecord {
    pub id: Uuid,
    /// `agt_...`: what it authenticates with and what its tokens name.
    pub client_id: String,
    /// What its owner registered and may change.
    #[serde(flatten)]
    pub profile: NewAgent,
    pub secret_hash: [u8; 32],
    pub secret_prefix: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub secret_rotated_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub revoked_at: Option<OffsetDateTime>,
    pub metadata_version: u32,
}

impl std::fmt::Debug for AgentRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRecord")
            .field("id", &self.id)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

tessera_storage::record!(AgentRecord in TenantRecord: Kind::Agent, "agent", version 1);

impl AgentRecord {
    pub fn allows(&self, grant: AgentGrant) -> bool {
        self.profile.grant_types.contains(&grant)
    }

    pub fn secret_matches(&self, secret: &str) -> bool {
        ct_eq(&self.secret_hash, &sha256(secret.as_bytes()))
    }

    pub fn effective_limits(&self, policy: &AgentPolicy) -> EffectiveLimits {
        EffectiveLimits {
            per_minute: PerMinute::from_fn(|l| self.limit_of(l, policy)),
            max_concurrent_tokens: self
                .profile
                .max_concurrent_tokens
                .map_or(policy.max_concurrent_tokens, |v| {
                    v.min(policy.max_concurrent_tokens)
                }),
        }
    }

    /// One per-minute limit in force: its owner's value clamped to the platform's ceiling.
    pub(super) fn limit_of(&self, limit: AgentLimit, policy: &AgentPolicy) -> u32 {
        self.profile
            .rate_limits
            .get(limit)
            .map_or(policy.ceilings.get(limit), |v| {
                v.min(policy.ceilings.get(limit))
            })
    }
}

/// A token an agent holds, keyed `agent id | jti`, until it expires.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AgentTokenRecord {
    pub exp: i64,
    pub user: Option<Uuid>,
}

tessera_storage::record!(
    AgentTokenRecord in TenantRecord: Kind::AgentToken, "agent token", version 1
);

/// A denylisted agent token, keyed by its `jti`, until it would have expired.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeniedTokenRecord {
    pub exp: i64,
}

tessera_storage::record!(
    DeniedTokenRecord in TenantRecord: Kind::AgentDenied, "denied agent token", version 1
);

/// One entry of an agent's activity feed, keyed `agent id | time (ns) | sequence`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AgentActionRecord {
    pub id: Uuid,
    pub action: String,
    pub actor_user_id: Option<Uuid>,
    pub resource: Option<String>,
    pub method_or_event: Option<String>,
    pub jti: Option<String>,
    pub scope_used: Option<String>,
    /// Keyed hashes (hex); only 12-character prefixes leave the actor's answer.
    pub ip_hash: Option<String>,
    pub ua_hash: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

tessera_storage::record!(
    AgentActionRecord in TenantRecord: Kind::AgentAction, "agent action", version 1
);

/// What a user and an agent have to do with each other, keyed `user id | agent id`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UserAgentRecord {
    pub agent_id: Uuid,
    pub client_id: String,
    pub action_count: u64,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_action_at: Option<OffsetDateTime>,
    /// The user's own revocation (GDPR art. 7(3)).
    #[serde(with = "time::serde::rfc3339::option")]
    pub revoked_at: Option<OffsetDateTime>,
}

tessera_storage::record!(UserAgentRecord in TenantRecord: Kind::UserAgent, "user agent", version 1);

pub(in crate::tenant) fn user_agent_key(user: Uuid, agent: Uuid) -> Vec<u8> {
    let mut k = user.as_bytes().to_vec();
    k.extend_from_slice(agent.as_bytes());
    k
}

/// The way a user is asked to approve an agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestFlow {
    /// CIBA: the agent names the user; the user approves through a mailed link or the API.
    Ciba,
    /// RFC 8628: the user types the code on the hosted page, signed in.
    Device,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestStatus {
    Pending,
    Approved,
    Denied,
    /// Approved and its token handed out.
    Issued,
}

/// A CIBA or device request, keyed by the SHA-256 of what the agent polls with
/// (`auth_req_id` or `device_code`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AgentRequestRecord {
    pub id: Uuid,
    pub flow: RequestFlow,
    pub agent_id: Uuid,
    pub client_id: String,
    /// The user asked (CIBA: `None` for an address with no account) or who approved (device).
    pub user: Option<Uuid>,
    pub scopes: Vec<String>,
    pub resource: Option<String>,
    pub binding_message: Option<String>,
    /// Device flow: the 8 letters, without the dash.
    pub user_code: Option<String>,
    /// CIBA: the SHA-256 of the mailed link's token.
    pub link_hash: Option<[u8; 32]>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    pub interval_secs: u32,
    #[serde(with = "time::serde::rfc3339")]
    pub last_poll_at: OffsetDateTime,
    pub status: RequestStatus,
}

tessera_storage::record!(
    AgentRequestRecord in TenantRecord: Kind::AgentRequest, "agent request", version 1
);

/// Finds a request by another handle: `u` + user code, `l` + link hash, `i` + request id.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AgentRequestIndex {
    pub key: [u8; 32],
}

tessera_storage::record!(
    AgentRequestIndex in TenantRecord: Kind::AgentRequestIndex, "agent request index", version 1
);

pub(in crate::tenant) fn index_key(tag: u8, value: &[u8]) -> Vec<u8> {
    let mut k = vec![tag];
    k.extend_from_slice(value);
    k
}

pub(super) fn action_key(agent: Uuid, at: OffsetDateTime, seq: u32) -> Vec<u8> {
    let mut k = agent.as_bytes().to_vec();
    k.extend_from_slice(&event_key(at, seq));
    k
}

pub(in crate::tenant) fn token_key(agent: Uuid, jti: Uuid) -> Vec<u8> {
    let mut k = agent.as_bytes().to_vec();
    k.extend_from_slice(jti.as_bytes());
    k
}
