//! Agents: non-human OAuth clients a tenant's owners register and that both they and the
//! users an agent acts for can revoke.
//!
//! An agent authenticates at the token endpoint with its secret (kept as its SHA-256, like a
//! confidential client's) and gets short-lived access tokens by four grants: as itself
//! (client credentials), or on a user's behalf (RFC 8693 token exchange with the user's access
//! token, CIBA poll mode, or the RFC 8628 device code). A token on a user's behalf names the
//! agent in `act` and lives at most [`ON_BEHALF_MAX_TTL`]. Agent tokens have no refresh
//! tokens: an agent asks again.
//!
//! Every token issued is kept (`agent id | jti` -> its expiry) until it expires: so the actor
//! knows how many are live (`max_concurrent_tokens`), and revoking the agent denylists each
//! one for its remaining lifetime in the same batch as the revocation. The HTTP edge checks
//! every agent token it is shown against the published registry (a revoked agent) and the
//! denylist, without a hop.
//!
//! A user's consent to an agent is the OAuth consent store's record for (user, agent client
//! id), kept per resource (RFC 8707) as an OAuth client's is: approving a CIBA request or a
//! device code adds the scopes approved under the resource the request named (`""`: none).
//! Token exchange grants only those, for that resource; a poll issues only while the approval
//! still stands; a token acting for a user is live at introspection and userinfo only while
//! the consent covers its resource and scopes. An account whose address is not confirmed
//! approves nothing: a consent outlives the session. A user's revocation of an agent
//! (`gdpr_art_7_withdrawal`) is kept per (user, agent) and makes token exchange and CIBA
//! refuse that pair until the user restores it.
//!
//! What an agent did is kept in its activity feed (`agent id | time | sequence`), for
//! `agents.activity_retention_days`, with keyed hashes of the client address and user agent
//! of which only 12-character prefixes are ever shown.

pub mod memory;

use std::{
    collections::{BinaryHeap, HashMap, HashSet},
    sync::Arc,
    time::Instant,
};

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde::{Deserialize, Serialize};
use tessera_storage::{ct_eq, sha256, Kind, Record, TenantBatch, TenantRecord, TenantStore};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::{
    audit::AuditContext,
    messages::{Bearer, UserView},
    oauth::{ClientAuth, ConsentRecord, OAuthFailure},
    oauth_clients::TokenAuthMethod,
    state::TenantState,
};
use crate::{
    error::TenantError,
    outbound::{MailJob, MailKind},
    records::Tier,
};

/// The longest an agent token on a user's behalf lives.
pub const ON_BEHALF_MAX_TTL: i64 = 900;
/// Agents a tenant may register (revoked ones included).
pub const MAX_AGENTS: usize = 500;
/// How much a `slow_down` adds to a flow's polling interval (RFC 8628 3.5).
pub const SLOW_DOWN_STEP: u32 = 5;
/// Letters of a device flow's user code (RFC 8628 6.1: no vowels, no look-alikes).
pub const USER_CODE_ALPHABET: &[u8] = b"BCDFGHJKLMNPQRSTVWXZ";
/// User codes one user may look up on the device page per minute (RFC 8628 5.1: the codes
/// are short, so guessing is slowed).
pub const USER_CODE_TRIES_PER_MINUTE: u32 = 20;
/// Pending CIBA requests of one agent mailed to one user at a time.
const MAILED_REQUESTS_PER_USER: usize = 3;
/// Live CIBA and device requests one agent may hold.
const MAX_PENDING_REQUESTS: usize = 1000;

/// The four grants an agent may be registered for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentGrant {
    ClientCredentials,
    TokenExchange,
    Ciba,
    DeviceCode,
}

impl AgentGrant {
    pub const ALL: [AgentGrant; 4] = [
        AgentGrant::ClientCredentials,
        AgentGrant::TokenExchange,
        AgentGrant::Ciba,
        AgentGrant::DeviceCode,
    ];

    /// The `grant_type` value of the token endpoint.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentGrant::ClientCredentials => "client_credentials",
            AgentGrant::TokenExchange => "urn:ietf:params:oauth:grant-type:token-exchange",
            AgentGrant::Ciba => "urn:openid:params:grant-type:ciba",
            AgentGrant::DeviceCode => "urn:ietf:params:oauth:grant-type:device_code",
        }
    }

    pub fn parse(s: &str) -> Option<AgentGrant> {
        AgentGrant::ALL.into_iter().find(|g| g.as_str() == s)
    }

    /// The per-minute limit that counts this grant's token requests.
    fn limit(self) -> AgentLimit {
        match self {
            AgentGrant::ClientCredentials => AgentLimit::ClientCredentials,
            AgentGrant::TokenExchange => AgentLimit::TokenExchange,
            AgentGrant::Ciba => AgentLimit::CibaInitiate,
            AgentGrant::DeviceCode => AgentLimit::DeviceCode,
        }
    }
}

/// What an agent's per-minute limits count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AgentLimit {
    /// Uses of its tokens at the tenant's endpoints (userinfo).
    ApiCalls,
    TokenExchange,
    CibaInitiate,
    DeviceCode,
    ClientCredentials,
}

impl AgentLimit {
    pub fn name(self) -> &'static str {
        match self {
            AgentLimit::ApiCalls => "api_calls_per_min",
            AgentLimit::TokenExchange => "token_exchange_per_min",
            AgentLimit::CibaInitiate => "ciba_initiate_per_min",
            AgentLimit::DeviceCode => "device_code_per_min",
            AgentLimit::ClientCredentials => "client_credentials_per_min",
        }
    }
}

/// The per-minute limits an owner set; `None`: the platform's ceiling.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRateLimits {
    pub api_calls_per_min: Option<u32>,
    pub token_exchange_per_min: Option<u32>,
    pub ciba_initiate_per_min: Option<u32>,
    pub device_code_per_min: Option<u32>,
    pub client_credentials_per_min: Option<u32>,
}

impl AgentRateLimits {
    fn get(&self, limit: AgentLimit) -> Option<u32> {
        match limit {
            AgentLimit::ApiCalls => self.api_calls_per_min,
            AgentLimit::TokenExchange => self.token_exchange_per_min,
            AgentLimit::CibaInitiate => self.ciba_initiate_per_min,
            AgentLimit::DeviceCode => self.device_code_per_min,
            AgentLimit::ClientCredentials => self.client_credentials_per_min,
        }
    }
}

/// The platform's ceilings and timings for agents (`[agents]` in the configuration).
#[derive(Clone, Copy, Debug)]
pub struct AgentPolicy {
    pub api_calls_per_min: u32,
    pub token_exchange_per_min: u32,
    pub ciba_initiate_per_min: u32,
    pub device_code_per_min: u32,
    pub client_credentials_per_min: u32,
    pub max_concurrent_tokens: u32,
    /// The longest `agent_token_max_ttl_sec` an owner may set.
    pub max_token_ttl_secs: u32,
    /// The polling interval CIBA and device flows start with.
    pub poll_interval_secs: u32,
    pub ciba_ttl_secs: u32,
    pub device_code_ttl_secs: u32,
    pub activity_retention_days: u32,
    /// RFC 7591 registrations per client address per hour.
    pub registrations_per_ip_hourly: u32,
}

impl Default for AgentPolicy {
    fn default() -> Self {
        AgentPolicy {
            api_calls_per_min: 6000,
            token_exchange_per_min: 600,
            ciba_initiate_per_min: 60,
            device_code_per_min: 60,
            client_credentials_per_min: 600,
            max_concurrent_tokens: 1000,
            max_token_ttl_secs: 86_400,
            poll_interval_secs: 5,
            ciba_ttl_secs: 300,
            device_code_ttl_secs: 600,
            activity_retention_days: 90,
            registrations_per_ip_hourly: 10,
        }
    }
}

impl AgentPolicy {
    fn ceiling(&self, limit: AgentLimit) -> u32 {
        match limit {
            AgentLimit::ApiCalls => self.api_calls_per_min,
            AgentLimit::TokenExchange => self.token_exchange_per_min,
            AgentLimit::CibaInitiate => self.ciba_initiate_per_min,
            AgentLimit::DeviceCode => self.device_code_per_min,
            AgentLimit::ClientCredentials => self.client_credentials_per_min,
        }
    }
}

/// An agent's limits in force: each its owner's value clamped to the platform's ceiling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct EffectiveLimits {
    pub api_calls_per_min: u32,
    pub token_exchange_per_min: u32,
    pub ciba_initiate_per_min: u32,
    pub device_code_per_min: u32,
    pub client_credentials_per_min: u32,
    pub max_concurrent_tokens: u32,
}

/// A registered agent, keyed by its id (a UUID v7, so the registry scans oldest first).
#[derive(Clone, Serialize, Deserialize)]
pub struct AgentRecord {
    pub id: Uuid,
    /// `agt_...`: what it authenticates with and what its tokens name.
    pub client_id: String,
    pub name: String,
    pub description: Option<String>,
    pub agent_class: Option<String>,
    pub logo_url: Option<String>,
    pub scopes: Vec<String>,
    pub grant_types: Vec<AgentGrant>,
    pub token_ttl_secs: u32,
    pub rate_limits: AgentRateLimits,
    pub max_concurrent_tokens: Option<u32>,
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

impl Record for AgentRecord {
    const KIND: Kind = Kind::Agent;
    const NAME: &'static str = "agent";
    const VERSION: u16 = 1;
}
impl TenantRecord for AgentRecord {}

impl AgentRecord {
    pub fn allows(&self, grant: AgentGrant) -> bool {
        self.grant_types.contains(&grant)
    }

    pub fn secret_matches(&self, secret: &str) -> bool {
        ct_eq(&self.secret_hash, &sha256(secret.as_bytes()))
    }

    pub fn effective_limits(&self, policy: &AgentPolicy) -> EffectiveLimits {
        let clamp = |l: AgentLimit| {
            self.rate_limits
                .get(l)
                .map_or(policy.ceiling(l), |v| v.min(policy.ceiling(l)))
        };
        EffectiveLimits {
            api_calls_per_min: clamp(AgentLimit::ApiCalls),
            token_exchange_per_min: clamp(AgentLimit::TokenExchange),
            ciba_initiate_per_min: clamp(AgentLimit::CibaInitiate),
            device_code_per_min: clamp(AgentLimit::DeviceCode),
            client_credentials_per_min: clamp(AgentLimit::ClientCredentials),
            max_concurrent_tokens: self
                .max_concurrent_tokens
                .map_or(policy.max_concurrent_tokens, |v| {
                    v.min(policy.max_concurrent_tokens)
                }),
        }
    }

    fn limit_of(&self, limit: AgentLimit, policy: &AgentPolicy) -> u32 {
        let e = self.effective_limits(policy);
        match limit {
            AgentLimit::ApiCalls => e.api_calls_per_min,
            AgentLimit::TokenExchange => e.token_exchange_per_min,
            AgentLimit::CibaInitiate => e.ciba_initiate_per_min,
            AgentLimit::DeviceCode => e.device_code_per_min,
            AgentLimit::ClientCredentials => e.client_credentials_per_min,
        }
    }
}

/// The registry and the denylist as the HTTP edge reads them ([`super::runtime::TenantCells`]).
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

/// A token an agent holds, keyed `agent id | jti`, until it expires.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AgentTokenRecord {
    pub exp: i64,
    pub user: Option<Uuid>,
}

impl Record for AgentTokenRecord {
    const KIND: Kind = Kind::AgentToken;
    const NAME: &'static str = "agent token";
    const VERSION: u16 = 1;
}
impl TenantRecord for AgentTokenRecord {}

/// A denylisted agent token, keyed by its `jti`, until it would have expired.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeniedTokenRecord {
    pub exp: i64,
}

impl Record for DeniedTokenRecord {
    const KIND: Kind = Kind::AgentDenied;
    const NAME: &'static str = "denied agent token";
    const VERSION: u16 = 1;
}
impl TenantRecord for DeniedTokenRecord {}

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

impl Record for AgentActionRecord {
    const KIND: Kind = Kind::AgentAction;
    const NAME: &'static str = "agent action";
    const VERSION: u16 = 1;
}
impl TenantRecord for AgentActionRecord {}

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

impl Record for UserAgentRecord {
    const KIND: Kind = Kind::UserAgent;
    const NAME: &'static str = "user agent";
    const VERSION: u16 = 1;
}
impl TenantRecord for UserAgentRecord {}

pub(super) fn user_agent_key(user: Uuid, agent: Uuid) -> Vec<u8> {
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

impl Record for AgentRequestRecord {
    const KIND: Kind = Kind::AgentRequest;
    const NAME: &'static str = "agent request";
    const VERSION: u16 = 1;
}
impl TenantRecord for AgentRequestRecord {}

/// Finds a request by another handle: `u` + user code, `l` + link hash, `i` + request id.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AgentRequestIndex {
    pub key: [u8; 32],
}

impl Record for AgentRequestIndex {
    const KIND: Kind = Kind::AgentRequestIndex;
    const NAME: &'static str = "agent request index";
    const VERSION: u16 = 1;
}
impl TenantRecord for AgentRequestIndex {}

pub(super) fn index_key(tag: u8, value: &[u8]) -> Vec<u8> {
    let mut k = vec![tag];
    k.extend_from_slice(value);
    k
}

/// An agent as registered, validated by the caller.
#[derive(Clone, Debug)]
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

/// What the activity feed is asked for.
#[derive(Clone, Debug, Default)]
pub struct ActivityQuery {
    pub cursor: Option<Vec<u8>>,
    pub limit: usize,
    pub since: Option<OffsetDateTime>,
    pub until: Option<OffsetDateTime>,
    pub actor_user_id: Option<Uuid>,
    pub action_type: Option<String>,
    /// A non-owner: only actions with no user, or their own.
    pub only_actor: Option<Option<Uuid>>,
}

/// One action as the feed shows it.
#[derive(Clone, Debug)]
pub struct ActionView {
    pub record: AgentActionRecord,
    pub actor_user_email: Option<String>,
}

#[derive(Clone, Debug)]
pub struct ActivityPage {
    pub actions: Vec<ActionView>,
    pub next_cursor: Option<Vec<u8>>,
}

/// A token to sign: the edge signs it with the tenant's keys.
#[derive(Clone, Debug)]
pub struct AgentIssued {
    pub client_id: String,
    /// The user it acts for (`sub`), or `None`: the agent as itself.
    pub user: Option<Uuid>,
    pub scopes: Vec<String>,
    pub resource: Option<String>,
    pub jti: Uuid,
    pub iat: i64,
    pub exp: i64,
}

/// A request as a user sees it before deciding.
#[derive(Clone, Debug)]
pub struct RequestView {
    pub id: Uuid,
    pub flow: RequestFlow,
    pub client_id: String,
    pub agent_name: String,
    pub agent_logo_url: Option<String>,
    pub binding_message: Option<String>,
    pub scopes: Vec<String>,
    /// The RFC 8707 resource the scopes are asked for (`None`: the request names none).
    pub resource: Option<String>,
    pub created_at: OffsetDateTime,
    pub expires_at: OffsetDateTime,
    pub tenant_name: String,
    pub default_locale: String,
}

/// What an agent token acting for a user claims, as the user's consent must still cover it.
#[derive(Clone, Debug)]
pub struct OnBehalf {
    pub user: Uuid,
    /// Its audience when that is a resource; `None`: the token names none.
    pub resource: Option<String>,
    pub scopes: Vec<String>,
}

/// A started CIBA or device request.
// Holds secrets (a client secret, a poll handle, a mailed token): no `Debug`.
#[derive(Clone)]
pub struct RequestStarted {
    /// `auth_req_id` or `device_code`.
    pub secret: String,
    pub user_code: Option<String>,
    pub expires_in: i64,
    pub interval: u32,
}

/// How polling went when it issued nothing (RFC 8628 3.5, CIBA 11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollRefusal {
    Pending,
    SlowDown,
    Denied,
    Expired,
}

/// An agent as a user sees it.
#[derive(Clone, Debug)]
pub struct UserAgentView {
    pub client_id: String,
    pub name: String,
    pub logo_url: Option<String>,
    pub agent_class: Option<String>,
    pub last_action_at: Option<OffsetDateTime>,
    pub action_count: u64,
    pub revoked_at: Option<OffsetDateTime>,
    pub agent_revoked_at: Option<OffsetDateTime>,
}

#[derive(Clone, Debug)]
pub struct Restored {
    pub restored_at: OffsetDateTime,
    pub newly_restored: bool,
    pub still_blocked_by_tenant: bool,
}

/// What the dashboard, the token endpoint, the users and the hosted pages ask of agents.
// Holds secrets (a client secret, a poll handle, a mailed token): no `Debug`.
#[derive(Clone)]
pub enum AgentCmd {
    Register(NewAgent),
    List {
        after: Option<Uuid>,
        limit: usize,
        include_revoked: bool,
    },
    Get(Uuid),
    Update(Uuid, AgentPatch),
    RotateSecret(Uuid),
    /// The owners' addresses, for the revocation's mail.
    Revoke {
        id: Uuid,
        owners: Vec<String>,
    },
    Activity(Uuid, ActivityQuery),
    ClientCredentials {
        agent: Arc<AgentRecord>,
        scopes: Option<Vec<String>>,
        resource: Option<String>,
    },
    /// `subject` from a verified access token of the user (`client`: the OAuth client it was
    /// issued to, if any).
    Exchange {
        agent: Arc<AgentRecord>,
        subject: Bearer,
        subject_client: Option<String>,
        scopes: Option<Vec<String>>,
        resource: Option<String>,
    },
    Backchannel {
        agent: Arc<AgentRecord>,
        login_hint: String,
        scopes: Vec<String>,
        binding_message: Option<String>,
        resource: Option<String>,
    },
    DeviceAuthorize {
        agent: Arc<AgentRecord>,
        scopes: Vec<String>,
        resource: Option<String>,
    },
    Poll {
        agent: Arc<AgentRecord>,
        flow: RequestFlow,
        secret: String,
    },
    /// An agent token was introspected (recorded in its feed). Acting for a user and live at
    /// the edge, it stays active only while the user's consent covers it.
    Introspected {
        client_id: String,
        jti: String,
        active: bool,
        on_behalf: Option<OnBehalf>,
    },
    /// An agent token is used at one of the tenant's endpoints: counted against
    /// `api_calls_per_min`; acting for a user, the user's view while the user's consent
    /// covers it.
    UseToken {
        client_id: String,
        on_behalf: Option<OnBehalf>,
    },
    /// RFC 7009 by the agent: its token denylisted until `exp`.
    RevokeToken {
        client_id: String,
        jti: String,
        exp: i64,
    },
    MyAgents {
        bearer: Bearer,
    },
    RevokeMine {
        bearer: Bearer,
        client_id: String,
    },
    RestoreMine {
        bearer: Bearer,
        client_id: String,
    },
    MyRequests {
        bearer: Bearer,
    },
    Decide {
        bearer: Bearer,
        id: Uuid,
        approve: bool,
    },
    /// The hosted page of a mailed CIBA link.
    PeekLink {
        token: String,
    },
    DecideLink {
        token: String,
        approve: bool,
    },
    /// The hosted device page, signed in.
    PeekUserCode {
        bearer: Bearer,
        user_code: String,
    },
    DecideUserCode {
        bearer: Bearer,
        user_code: String,
        approve: bool,
    },
}

impl AgentCmd {
    /// Whether the answer need not wait for the disk: the command only reads, or (an
    /// introspection's feed entry) writes what may be lost with a crash.
    pub fn reads_only(&self) -> bool {
        matches!(
            self,
            AgentCmd::List { .. }
                | AgentCmd::Introspected { .. }
                | AgentCmd::Get(_)
                | AgentCmd::Activity(..)
                | AgentCmd::UseToken { .. }
                | AgentCmd::MyAgents { .. }
                | AgentCmd::MyRequests { .. }
                | AgentCmd::PeekLink { .. }
                | AgentCmd::PeekUserCode { .. }
        )
    }
}

// Holds secrets (a client secret, a poll handle, a mailed token): no `Debug`.
#[derive(Clone)]
pub enum AgentAnswer {
    Issued(Box<IssuedAgent>),
    One(Box<AgentRecord>),
    Page(Vec<AgentRecord>, Option<Uuid>),
    Activity(ActivityPage),
    Token(AgentIssued),
    Started(RequestStarted),
    NotYet(PollRefusal),
    Used(Option<UserView>),
    /// Whether an introspected token is active.
    Active(bool),
    Done,
    UserAgents(Vec<UserAgentView>),
    RevokedMine(OffsetDateTime),
    Restored(Restored),
    Requests(Vec<RequestView>),
    Request(Box<RequestView>),
}

/// Per-agent per-minute windows and the live tokens, in memory. A restart forgets the
/// windows (as it forgets the other throttles); the live tokens are read back from the store
/// when first needed.
#[derive(Default)]
pub struct AgentCounters {
    windows: HashMap<(Uuid, AgentLimit), Window>,
    /// Expiry times of each agent's unexpired tokens (a min-heap).
    live: HashMap<Uuid, BinaryHeap<std::cmp::Reverse<i64>>>,
    /// When each agent's refusal at `max_concurrent_tokens` was last reported.
    cap_reported: HashMap<Uuid, Instant>,
    /// Each polled request's last poll and current interval (by the key of its record): a
    /// poll writes nothing; a restart starts each from its record.
    polls: HashMap<[u8; 32], (OffsetDateTime, u32)>,
}

struct Window {
    start: Instant,
    count: u32,
    reported: bool,
}

/// A refused request over an agent's limit: the seconds until it may ask again, and whether
/// this is the window's first refusal (its event is written once).
struct OverLimit {
    retry_after: u64,
    first: bool,
    limit: u32,
    name: &'static str,
}

impl AgentCounters {
    /// Whether a refusal at the concurrency cap is the first of its minute for `agent`.
    fn cap_first(&mut self, agent: Uuid, now: Instant) -> bool {
        let minute = std::time::Duration::from_secs(60);
        if self.cap_reported.len() > 10_000 {
            self.cap_reported
                .retain(|_, at| now.duration_since(*at) < minute);
        }
        match self.cap_reported.get(&agent) {
            Some(at) if now.duration_since(*at) < minute => false,
            _ => {
                self.cap_reported.insert(agent, now);
                true
            }
        }
    }

    fn hit(
        &mut self,
        agent: Uuid,
        limit: AgentLimit,
        max: u32,
        now: Instant,
    ) -> Result<(), OverLimit> {
        if self.windows.len() > 10_000 {
            self.windows
                .retain(|_, w| now.duration_since(w.start) < std::time::Duration::from_secs(60));
        }
        let w = self.windows.entry((agent, limit)).or_insert(Window {
            start: now,
            count: 0,
            reported: false,
        });
        let elapsed = now.duration_since(w.start);
        if elapsed >= std::time::Duration::from_secs(60) {
            *w = Window {
                start: now,
                count: 0,
                reported: false,
            };
        }
        if w.count >= max {
            let left =
                std::time::Duration::from_secs(60).saturating_sub(now.duration_since(w.start));
            let first = !w.reported;
            w.reported = true;
            return Err(OverLimit {
                retry_after: left.as_secs_f64().ceil().max(1.0) as u64,
                first,
                limit: max,
                name: limit.name(),
            });
        }
        w.count += 1;
        Ok(())
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

/// A random user code: 8 letters of [`USER_CODE_ALPHABET`] (about 34 bits).
fn new_user_code() -> String {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    (0..8)
        .map(|_| USER_CODE_ALPHABET[rng.gen_range(0..USER_CODE_ALPHABET.len())] as char)
        .collect()
}

/// A user code as typed: letters only, upper-cased (the dash and spaces dropped).
pub fn normalize_user_code(typed: &str) -> String {
    typed
        .chars()
        .filter(|c| c.is_ascii_alphabetic())
        .map(|c| c.to_ascii_uppercase())
        .collect()
}

fn action_key(agent: Uuid, at: OffsetDateTime, seq: u32) -> Vec<u8> {
    let mut k = agent.as_bytes().to_vec();
    k.extend_from_slice(&super::audit::event_key(at, seq));
    k
}

pub(super) fn token_key(agent: Uuid, jti: Uuid) -> Vec<u8> {
    let mut k = agent.as_bytes().to_vec();
    k.extend_from_slice(jti.as_bytes());
    k
}

/// What one agent action records.
struct Action<'a> {
    action: &'a str,
    user: Option<Uuid>,
    resource: Option<&'a str>,
    method: Option<&'a str>,
    jti: Option<Uuid>,
    scopes: Option<&'a [String]>,
}

impl<'a> Action<'a> {
    fn new(action: &'a str) -> Self {
        Action {
            action,
            user: None,
            resource: None,
            method: None,
            jti: None,
            scopes: None,
        }
    }
}

fn sorted_scopes(scopes: &[String]) -> Vec<String> {
    let mut s = scopes.to_vec();
    s.sort();
    s.dedup();
    s
}

impl TenantState {
    fn agent_policy(&self) -> AgentPolicy {
        self.cx.runtime.agents
    }

    /// Publishes a change just committed to the registry (and tokens just denylisted) for
    /// the HTTP edge: in memory, so it cannot fail once the change is durable.
    fn publish_agent(&self, agent: Option<&AgentRecord>, denied: &[Uuid]) {
        let next = self.cx.cells.agents.load().with(agent, denied);
        self.cx.cells.agents.store(Arc::new(next));
    }

    fn agent(&self, id: Uuid) -> Result<AgentRecord, TenantError> {
        self.cx
            .store
            .get::<AgentRecord>(id.as_bytes())?
            .ok_or(TenantError::NotFound)
    }

    /// The current record of an agent the edge authenticated: gone or re-keyed since, it
    /// gets nothing.
    /// The actor publishes every change before it answers, so its cell is the registry.
    fn current_agent(&self, agent: &AgentRecord) -> Result<Arc<AgentRecord>, TenantError> {
        self.cx
            .cells
            .agents
            .load()
            .get(&agent.client_id)
            .filter(|a| {
                a.id == agent.id && a.revoked_at.is_none() && a.secret_hash == agent.secret_hash
            })
            .cloned()
            .ok_or(TenantError::OAuth(OAuthFailure::InvalidClient))
    }

    /// Records one action in the agent's feed (into `batch`).
    fn record_action(
        &mut self,
        batch: &mut TenantBatch,
        agent: Uuid,
        a: Action<'_>,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<(), TenantError> {
        let seq = self.next_action_seq();
        let record = AgentActionRecord {
            id: Uuid::now_v7(),
            action: a.action.to_owned(),
            actor_user_id: a.user.or(ctx.actor),
            resource: a.resource.map(str::to_owned),
            method_or_event: a.method.map(str::to_owned),
            jti: a.jti.map(|j| j.to_string()),
            scope_used: a.scopes.map(|s| s.join(" ")),
            ip_hash: ctx.ip_hash.clone(),
            ua_hash: ctx.ua_hash.clone(),
            created_at: now,
        };
        batch.put(&action_key(agent, now, seq), &record)?;
        Ok(())
    }

    /// Counts a user's dealing with an agent (into `batch`).
    fn touch_user_agent(
        &self,
        batch: &mut TenantBatch,
        user: Uuid,
        agent: &AgentRecord,
        now: OffsetDateTime,
    ) -> Result<(), TenantError> {
        let key = user_agent_key(user, agent.id);
        let mut rec = self
            .cx
            .store
            .get::<UserAgentRecord>(&key)?
            .unwrap_or(UserAgentRecord {
                agent_id: agent.id,
                client_id: agent.client_id.clone(),
                action_count: 0,
                last_action_at: None,
                revoked_at: None,
            });
        rec.action_count += 1;
        rec.last_action_at = Some(now);
        batch.put(&key, &rec)?;
        Ok(())
    }

    fn user_revoked(&self, user: Uuid, agent: Uuid) -> Result<bool, TenantError> {
        Ok(self
            .cx
            .store
            .get::<UserAgentRecord>(&user_agent_key(user, agent))?
            .is_some_and(|r| r.revoked_at.is_some()))
    }

    /// Counts a request against the agent's per-minute `limit`; over it, writes the window's
    /// one `agent.rate_limited` event and answers 429.
    fn agent_rate(
        &mut self,
        agent: &AgentRecord,
        limit: AgentLimit,
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        let max = agent.limit_of(limit, &self.agent_policy());
        match self
            .agents
            .counters
            .hit(agent.id, limit, max, Instant::now())
        {
            Ok(()) => Ok(()),
            Err(over) => Err(self.over_limit(agent, over, ctx)),
        }
    }

    /// The refusal of a request over a limit, after the window's one event.
    fn over_limit(
        &mut self,
        agent: &AgentRecord,
        over: OverLimit,
        ctx: &AuditContext,
    ) -> TenantError {
        if over.first {
            if let Err(e) = self.write_rate_limited(agent, &over, ctx) {
                return e;
            }
        }
        TenantError::RateLimited {
            retry_after: over.retry_after,
        }
    }

    fn write_rate_limited(
        &mut self,
        agent: &AgentRecord,
        over: &OverLimit,
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        {
            let now = OffsetDateTime::now_utc();
            let mut fx = self.effects();
            self.audit_into(
                &mut fx.batch,
                "agent.rate_limited",
                ctx,
                serde_json::json!({
                    "agent_id": agent.id,
                    "client_id": agent.client_id,
                    "scope": over.name,
                    "limit": over.limit,
                }),
            )?;
            let mut a = Action::new("agent.rate_limited");
            a.method = Some(over.name);
            self.record_action(&mut fx.batch, agent.id, a, ctx, now)?;
            self.commit(fx)?;
        }
        Ok(())
    }

    /// The agent's unexpired tokens, read back from the store the first time.
    fn live_tokens(
        &mut self,
        agent: Uuid,
        now: i64,
    ) -> Result<&mut BinaryHeap<std::cmp::Reverse<i64>>, TenantError> {
        if !self.agents.counters.live.contains_key(&agent) {
            let mut heap = BinaryHeap::new();
            for item in self.cx.store.scan::<AgentTokenRecord>(agent.as_bytes()) {
                let (_, t) = item?;
                if t.exp > now {
                    heap.push(std::cmp::Reverse(t.exp));
                }
            }
            self.agents.counters.live.insert(agent, heap);
        }
        let heap = self
            .agents
            .counters
            .live
            .get_mut(&agent)
            .ok_or_else(|| TenantError::Internal("live tokens".into()))?;
        while heap
            .peek()
            .is_some_and(|std::cmp::Reverse(exp)| *exp <= now)
        {
            heap.pop();
        }
        Ok(heap)
    }

    /// Issues a token to `agent` (for `user`), with its record and its feed entry, after
    /// the concurrency cap.
    #[allow(clippy::too_many_arguments)]
    fn issue_agent_token(
        &mut self,
        agent: &AgentRecord,
        grant: AgentGrant,
        user: Option<Uuid>,
        scopes: Vec<String>,
        resource: Option<String>,
        ctx: &AuditContext,
        extra: impl FnOnce(&Self, &mut TenantBatch) -> Result<(), TenantError>,
    ) -> Result<AgentIssued, TenantError> {
        let now = OffsetDateTime::now_utc();
        let iat = now.unix_timestamp();
        let cap = agent
            .effective_limits(&self.agent_policy())
            .max_concurrent_tokens;
        let live = self.live_tokens(agent.id, iat)?;
        if live.len() >= cap as usize {
            let retry_after = live
                .peek()
                .map_or(1, |std::cmp::Reverse(exp)| (exp - iat).max(1) as u64);
            let over = OverLimit {
                retry_after,
                first: self.agents.counters.cap_first(agent.id, Instant::now()),
                limit: cap,
                name: "max_concurrent_tokens",
            };
            return Err(self.over_limit(agent, over, ctx));
        }
        // The platform's ceiling may have come down since the agent was registered.
        let mut ttl = i64::from(
            agent
                .token_ttl_secs
                .min(self.agent_policy().max_token_ttl_secs),
        );
        if user.is_some() {
            ttl = ttl.min(ON_BEHALF_MAX_TTL);
        }
        let exp = iat + ttl;
        let jti = Uuid::new_v4();
        let mut fx = self.effects();
        fx.batch
            .put(&token_key(agent.id, jti), &AgentTokenRecord { exp, user })?;
        let mut a = Action::new("token.issued");
        a.user = user;
        a.method = Some(grant.as_str());
        a.jti = Some(jti);
        a.scopes = Some(&scopes);
        a.resource = resource.as_deref();
        self.record_action(&mut fx.batch, agent.id, a, ctx, now)?;
        if let Some(u) = user {
            self.touch_user_agent(&mut fx.batch, u, agent, now)?;
        }
        extra(self, &mut fx.batch)?;
        self.commit(fx)?;
        self.live_tokens(agent.id, iat)?
            .push(std::cmp::Reverse(exp));
        Ok(AgentIssued {
            client_id: agent.client_id.clone(),
            user,
            scopes,
            resource,
            jti,
            iat,
            exp,
        })
    }

    /// A refused grant: recorded in the feed, then the error.
    fn refuse_grant(
        &mut self,
        agent: &AgentRecord,
        grant: AgentGrant,
        user: Option<Uuid>,
        ctx: &AuditContext,
        err: TenantError,
    ) -> Result<AgentIssued, TenantError> {
        let mut fx = self.effects();
        let mut a = Action::new("token.refused");
        a.user = user;
        a.method = Some(grant.as_str());
        self.record_action(&mut fx.batch, agent.id, a, ctx, OffsetDateTime::now_utc())?;
        self.commit(fx)?;
        Err(err)
    }

    /// The scopes asked for (all of the agent's by default), each one the agent's.
    fn agent_scopes(
        agent: &AgentRecord,
        asked: Option<Vec<String>>,
    ) -> Result<Vec<String>, TenantError> {
        match asked {
            None => Ok(agent.scopes.clone()),
            Some(asked) if asked.iter().all(|s| agent.scopes.contains(s)) => Ok(asked),
            Some(_) => Err(TenantError::OAuth(OAuthFailure::InvalidScope)),
        }
    }

    fn client_credentials(
        &mut self,
        agent: &AgentRecord,
        scopes: Option<Vec<String>>,
        resource: Option<String>,
        ctx: &AuditContext,
    ) -> Result<AgentIssued, TenantError> {
        let agent = self.current_agent(agent)?;
        let grant = AgentGrant::ClientCredentials;
        if !agent.allows(grant) {
            return self.refuse_grant(&agent, grant, None, ctx, unauthorized());
        }
        self.agent_rate(&agent, grant.limit(), ctx)?;
        let scopes = match Self::agent_scopes(&agent, scopes) {
            Ok(s) => s,
            Err(e) => return self.refuse_grant(&agent, grant, None, ctx, e),
        };
        self.issue_agent_token(&agent, grant, None, scopes, resource, ctx, |_, _| Ok(()))
    }

    /// The user's consent to this agent: per resource, the scopes approved for it.
    fn agent_consent(
        &self,
        user: Uuid,
        agent: &AgentRecord,
    ) -> Result<Option<ConsentRecord>, TenantError> {
        let mut key = user.as_bytes().to_vec();
        key.extend_from_slice(agent.client_id.as_bytes());
        Ok(self.cx.store.get::<ConsentRecord>(&key)?)
    }

    /// Whether a token acting for a user still stands: the user is there and not suspended,
    /// and the user's consent to the agent covers the token's resource (none: the grant that
    /// names none) with every scope in it.
    fn on_behalf_stands(&self, agent: &AgentRecord, t: &OnBehalf) -> Result<bool, TenantError> {
        if self.user(t.user)?.is_none_or(|u| u.suspended()) {
            return Ok(false);
        }
        let Some(consent) = self.agent_consent(t.user, agent)? else {
            return Ok(false);
        };
        Ok(consent
            .grants
            .get(t.resource.as_deref().unwrap_or(""))
            .is_some_and(|granted| t.scopes.iter().all(|s| granted.contains(s))))
    }

    fn exchange(
        &mut self,
        agent: &AgentRecord,
        subject: Bearer,
        subject_client: Option<String>,
        scopes: Option<Vec<String>>,
        resource: Option<String>,
        ctx: &AuditContext,
    ) -> Result<AgentIssued, TenantError> {
        let agent = self.current_agent(agent)?;
        let grant = AgentGrant::TokenExchange;
        if !agent.allows(grant) {
            return self.refuse_grant(&agent, grant, None, ctx, unauthorized());
        }
        self.agent_rate(&agent, grant.limit(), ctx)?;
        let now = OffsetDateTime::now_utc();
        let alive = match &subject_client {
            Some(c) => self.live_grant(subject, c, now).map(|(_, u)| u),
            None => self.live_session(subject, now).map(|(_, u)| u),
        };
        let user = match alive {
            Ok(u) if !u.suspended() => u,
            Ok(_) | Err(TenantError::InvalidSession) => {
                return self.refuse_grant(&agent, grant, None, ctx, invalid_grant())
            }
            Err(e) => return Err(e),
        };
        if self.user_revoked(user.id, agent.id)? {
            return self.refuse_grant(&agent, grant, Some(user.id), ctx, invalid_grant());
        }
        let Some(consent) = self
            .agent_consent(user.id, &agent)?
            .filter(|c| c.grants.values().any(|s| !s.is_empty()))
        else {
            return self.refuse_grant(&agent, grant, Some(user.id), ctx, invalid_grant());
        };
        // RFC 8707: what the user approved for one resource is not approved for another, and
        // a token naming no resource comes only from what was approved naming none.
        let consented = consent.scopes_for(resource.as_deref());
        if consented.is_empty() {
            let e = TenantError::OAuth(OAuthFailure::InvalidTarget);
            return self.refuse_grant(&agent, grant, Some(user.id), ctx, e);
        }
        let scopes = match scopes {
            None => agent
                .scopes
                .iter()
                .filter(|s| consented.contains(s))
                .cloned()
                .collect(),
            Some(asked)
                if asked
                    .iter()
                    .all(|s| consented.contains(s) && agent.scopes.contains(s)) =>
            {
                asked
            }
            Some(_) => {
                let e = TenantError::OAuth(OAuthFailure::InvalidScope);
                return self.refuse_grant(&agent, grant, Some(user.id), ctx, e);
            }
        };
        self.issue_agent_token(
            &agent,
            grant,
            Some(user.id),
            scopes,
            resource,
            ctx,
            |_, _| Ok(()),
        )
    }

    /// A new CIBA or device request: its record and its indexes (into a new batch).
    fn start_request(
        &mut self,
        agent: &AgentRecord,
        flow: RequestFlow,
        user: Option<Uuid>,
        scopes: Vec<String>,
        resource: Option<String>,
        binding_message: Option<String>,
    ) -> Result<(super::effects::Effects, RequestStarted, AgentRequestRecord), TenantError> {
        let now = OffsetDateTime::now_utc();
        let pending = self
            .cx
            .store
            .scan::<AgentRequestRecord>(b"")
            .filter_map(Result::ok)
            .filter(|(_, r)| r.agent_id == agent.id && r.expires_at > now)
            .count();
        if pending >= MAX_PENDING_REQUESTS {
            return Err(TenantError::RateLimited { retry_after: 60 });
        }
        let policy = self.agent_policy();
        let ttl = match flow {
            RequestFlow::Ciba => policy.ciba_ttl_secs,
            RequestFlow::Device => policy.device_code_ttl_secs,
        };
        let bytes: [u8; 32] = rand::random();
        let secret = URL_SAFE_NO_PAD.encode(bytes);
        let key = sha256(secret.as_bytes());
        let mut fx = self.effects();
        let user_code = if flow == RequestFlow::Device {
            let mut code = new_user_code();
            while self
                .cx
                .store
                .get::<AgentRequestIndex>(&index_key(b'u', code.as_bytes()))?
                .is_some()
            {
                code = new_user_code();
            }
            fx.batch.put(
                &index_key(b'u', code.as_bytes()),
                &AgentRequestIndex { key },
            )?;
            Some(code)
        } else {
            None
        };
        let record = AgentRequestRecord {
            id: Uuid::now_v7(),
            flow,
            agent_id: agent.id,
            client_id: agent.client_id.clone(),
            user,
            scopes,
            resource,
            binding_message,
            user_code: user_code.clone(),
            link_hash: None,
            created_at: now,
            expires_at: now + Duration::seconds(i64::from(ttl)),
            interval_secs: policy.poll_interval_secs,
            last_poll_at: now,
            status: RequestStatus::Pending,
        };
        fx.batch.put(
            &index_key(b'i', record.id.as_bytes()),
            &AgentRequestIndex { key },
        )?;
        Ok((
            fx,
            RequestStarted {
                secret,
                user_code,
                expires_in: i64::from(ttl),
                interval: policy.poll_interval_secs,
            },
            record,
        ))
    }

    fn backchannel(
        &mut self,
        agent: &AgentRecord,
        login_hint: &str,
        scopes: Vec<String>,
        binding_message: Option<String>,
        resource: Option<String>,
        ctx: &AuditContext,
    ) -> Result<(RequestStarted, Vec<MailJob>), TenantError> {
        let agent = self.current_agent(agent)?;
        if !agent.allows(AgentGrant::Ciba) {
            return Err(unauthorized());
        }
        if scopes.iter().any(|s| !agent.scopes.contains(s)) {
            return Err(TenantError::OAuth(OAuthFailure::InvalidScope));
        }
        self.agent_rate(&agent, AgentLimit::CibaInitiate, ctx)?;
        // An address with no account gets a request all the same, which nobody can approve:
        // the answer does not tell whether the account exists.
        // A user who revoked this agent is treated alike: no request reaches them.
        let now = OffsetDateTime::now_utc();
        let user = match self.user_by_email(login_hint)?.filter(|u| !u.suspended()) {
            Some(u) if !self.user_revoked(u.id, agent.id)? => Some(u),
            _ => None,
        };
        // At most a few requests of one agent wait in one mailbox; more are listed for the
        // user in the API but not mailed.
        let mailed_pending = match &user {
            Some(u) => self
                .cx
                .store
                .scan::<AgentRequestRecord>(b"")
                .filter_map(Result::ok)
                .filter(|(_, r)| {
                    r.agent_id == agent.id
                        && r.user == Some(u.id)
                        && r.link_hash.is_some()
                        && r.status == RequestStatus::Pending
                        && r.expires_at > now
                })
                .count(),
            None => 0,
        };
        let (mut fx, started, mut record) = self.start_request(
            &agent,
            RequestFlow::Ciba,
            user.as_ref().map(|u| u.id),
            scopes,
            resource,
            binding_message,
        )?;
        if let Some(u) = user
            .as_ref()
            .filter(|_| mailed_pending < MAILED_REQUESTS_PER_USER)
        {
            if let Some(email) = &u.email {
                let token = self.link_token();
                let link_hash = sha256(token.as_bytes());
                record.link_hash = Some(link_hash);
                fx.batch.put(
                    &index_key(b'l', &link_hash),
                    &AgentRequestIndex {
                        key: sha256(started.secret.as_bytes()),
                    },
                )?;
                let link = self.link("agent-request", &token);
                self.queue_mail(
                    &mut fx,
                    email,
                    MailKind::AgentRequest {
                        link,
                        agent_name: agent.name.clone(),
                        binding_message: record.binding_message.clone(),
                    },
                )?;
            }
        }
        fx.batch.put(&sha256(started.secret.as_bytes()), &record)?;
        let mut a = Action::new("ciba.requested");
        a.user = record.user;
        a.scopes = Some(&record.scopes);
        a.resource = record.resource.as_deref();
        self.record_action(&mut fx.batch, agent.id, a, ctx, now)?;
        if record.link_hash.is_none() {
            // Nobody is mailed (an unknown address, a user who revoked the agent, a full
            // mailbox): seal and write as much as a mailed request does, so the answer's time
            // does not tell the cases apart.
            let link = self.link("agent-request", &self.link_token());
            let kind = MailKind::AgentRequest {
                link,
                agent_name: agent.name.clone(),
                binding_message: record.binding_message.clone(),
            };
            self.write_decoy(&self.decoy_of(login_hint, kind, &[])?)?;
        }
        let mail = self.commit(fx)?;
        Ok((started, mail))
    }

    fn device_authorize(
        &mut self,
        agent: &AgentRecord,
        scopes: Vec<String>,
        resource: Option<String>,
        ctx: &AuditContext,
    ) -> Result<RequestStarted, TenantError> {
        let agent = self.current_agent(agent)?;
        if !agent.allows(AgentGrant::DeviceCode) {
            return Err(unauthorized());
        }
        if scopes.iter().any(|s| !agent.scopes.contains(s)) {
            return Err(TenantError::OAuth(OAuthFailure::InvalidScope));
        }
        self.agent_rate(&agent, AgentLimit::DeviceCode, ctx)?;
        let (mut fx, started, record) =
            self.start_request(&agent, RequestFlow::Device, None, scopes, resource, None)?;
        fx.batch.put(&sha256(started.secret.as_bytes()), &record)?;
        let mut a = Action::new("device.requested");
        a.scopes = Some(&record.scopes);
        a.resource = record.resource.as_deref();
        self.record_action(&mut fx.batch, agent.id, a, ctx, OffsetDateTime::now_utc())?;
        self.commit(fx)?;
        Ok(started)
    }

    /// Removes a request and its indexes (into `batch`).
    fn remove_request(&self, batch: &mut TenantBatch, key: &[u8; 32], r: &AgentRequestRecord) {
        batch.remove(Kind::AgentRequest, key);
        batch.remove(Kind::AgentRequestIndex, &index_key(b'i', r.id.as_bytes()));
        if let Some(code) = &r.user_code {
            batch.remove(Kind::AgentRequestIndex, &index_key(b'u', code.as_bytes()));
        }
        if let Some(h) = &r.link_hash {
            batch.remove(Kind::AgentRequestIndex, &index_key(b'l', h));
        }
    }

    /// The agent polls a CIBA or device request.
    fn poll(
        &mut self,
        agent: &AgentRecord,
        flow: RequestFlow,
        secret: &str,
        ctx: &AuditContext,
    ) -> Result<Result<AgentIssued, PollRefusal>, TenantError> {
        let agent = self.current_agent(agent)?;
        let grant = match flow {
            RequestFlow::Ciba => AgentGrant::Ciba,
            RequestFlow::Device => AgentGrant::DeviceCode,
        };
        if !agent.allows(grant) {
            return Err(unauthorized());
        }
        let key = sha256(secret.as_bytes());
        let Some(record) = self.cx.store.get::<AgentRequestRecord>(&key)?.filter(|r| {
            r.agent_id == agent.id && r.flow == flow && r.status != RequestStatus::Issued
        }) else {
            return Err(invalid_grant());
        };
        let now = OffsetDateTime::now_utc();
        if record.expires_at <= now {
            let mut fx = self.effects();
            self.remove_request(&mut fx.batch, &key, &record);
            self.commit(fx)?;
            return Ok(Err(PollRefusal::Expired));
        }
        if record.status == RequestStatus::Denied {
            let mut fx = self.effects();
            self.remove_request(&mut fx.batch, &key, &record);
            self.commit(fx)?;
            return Ok(Err(PollRefusal::Denied));
        }
        let polls = &mut self.agents.counters.polls;
        if polls.len() > 10_000 {
            polls.retain(|_, (at, _)| now - *at < Duration::hours(1));
        }
        let (last, mut interval) = polls
            .get(&key)
            .copied()
            .unwrap_or((record.last_poll_at, record.interval_secs));
        let too_soon = now - last < Duration::seconds(i64::from(interval));
        if too_soon {
            interval = interval.saturating_add(SLOW_DOWN_STEP);
        }
        polls.insert(key, (now, interval));
        if too_soon {
            return Ok(Err(PollRefusal::SlowDown));
        }
        if record.status == RequestStatus::Pending {
            return Ok(Err(PollRefusal::Pending));
        }
        self.agents.counters.polls.remove(&key);
        // Approved: one token, once.
        let Some(user) = record.user else {
            return Err(invalid_grant());
        };
        // The approval stands while the user's consent for the request's resource still holds
        // every scope it approved (a withdrawal since ends it).
        let approved = self.agent_consent(user, &agent)?.is_some_and(|c| {
            c.grants
                .get(record.resource.as_deref().unwrap_or(""))
                .is_some_and(|granted| record.scopes.iter().all(|s| granted.contains(s)))
        });
        if !approved
            || self.user_revoked(user, agent.id)?
            || self.user(user)?.is_none_or(|u| u.suspended())
        {
            let mut fx = self.effects();
            self.remove_request(&mut fx.batch, &key, &record);
            self.commit(fx)?;
            return Ok(Err(PollRefusal::Denied));
        }
        // What the agent may still ask for (its scopes may have changed since).
        let scopes: Vec<String> = record
            .scopes
            .iter()
            .filter(|s| agent.scopes.contains(s))
            .cloned()
            .collect();
        let resource = record.resource.clone();
        let issued = self.issue_agent_token(
            &agent,
            grant,
            Some(user),
            scopes,
            resource,
            ctx,
            |s, batch| {
                s.remove_request(batch, &key, &record);
                Ok(())
            },
        )?;
        Ok(Ok(issued))
    }

    /// A request by one of its handles, pending and unexpired.
    fn request_by_index(
        &self,
        tag: u8,
        value: &[u8],
    ) -> Result<Option<([u8; 32], AgentRequestRecord)>, TenantError> {
        let Some(ix) = self
            .cx
            .store
            .get::<AgentRequestIndex>(&index_key(tag, value))?
        else {
            return Ok(None);
        };
        let now = OffsetDateTime::now_utc();
        Ok(self
            .cx
            .store
            .get::<AgentRequestRecord>(&ix.key)?
            .filter(|r| r.status == RequestStatus::Pending && r.expires_at > now)
            .map(|r| (ix.key, r)))
    }

    fn request_view(&self, r: &AgentRequestRecord) -> Result<RequestView, TenantError> {
        let agent = self.agent(r.agent_id)?;
        Ok(RequestView {
            id: r.id,
            flow: r.flow,
            client_id: r.client_id.clone(),
            agent_name: agent.name,
            agent_logo_url: agent.logo_url,
            binding_message: r.binding_message.clone(),
            scopes: r.scopes.clone(),
            resource: r.resource.clone(),
            created_at: r.created_at,
            expires_at: r.expires_at,
            tenant_name: self.cx.info.name.clone(),
            default_locale: self.cx.settings.users.default_locale.clone(),
        })
    }

    /// `user` approves or denies a pending request: approving adds its scopes to the user's
    /// consent to the agent for the resource the request named (`""`: none). An account whose
    /// address is not confirmed may deny but not approve: a consent is durable.
    fn decide_request(
        &mut self,
        key: [u8; 32],
        mut record: AgentRequestRecord,
        user: Uuid,
        approve: bool,
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        let agent = self.agent(record.agent_id)?;
        if agent.revoked_at.is_some() {
            return Err(TenantError::NotFound);
        }
        if approve && self.user_revoked(user, agent.id)? {
            return Err(TenantError::AgentRevokedByUser);
        }
        if approve {
            let holder = self.user(user)?.ok_or(TenantError::NotFound)?;
            if holder.email.is_some() && !holder.email_verified {
                return Err(TenantError::EmailUnconfirmed {
                    credential: super::credentials::Credential::AgentConsents,
                });
            }
        }
        let now = OffsetDateTime::now_utc();
        let mut fx = self.effects();
        record.user = Some(user);
        record.status = if approve {
            RequestStatus::Approved
        } else {
            RequestStatus::Denied
        };
        fx.batch.put(&key, &record)?;
        if approve {
            let mut ckey = user.as_bytes().to_vec();
            ckey.extend_from_slice(agent.client_id.as_bytes());
            let mut consent = self
                .cx
                .store
                .get::<ConsentRecord>(&ckey)?
                .unwrap_or(ConsentRecord {
                    user_id: user,
                    client_id: agent.client_id.clone(),
                    grants: Default::default(),
                    granted_at: now,
                    updated_at: now,
                });
            let entry = consent
                .grants
                .entry(record.resource.clone().unwrap_or_default())
                .or_default();
            entry.extend(record.scopes.iter().cloned());
            *entry = sorted_scopes(entry);
            consent.updated_at = now;
            fx.batch.put(&ckey, &consent)?;
            self.touch_user_agent(&mut fx.batch, user, &agent, now)?;
        }
        let action = if approve {
            "request.approved"
        } else {
            "request.denied"
        };
        let mut a = Action::new(action);
        a.user = Some(user);
        a.method = Some(match record.flow {
            RequestFlow::Ciba => AgentGrant::Ciba.as_str(),
            RequestFlow::Device => AgentGrant::DeviceCode.as_str(),
        });
        a.scopes = Some(&record.scopes);
        a.resource = record.resource.as_deref();
        self.record_action(&mut fx.batch, agent.id, a, ctx, now)?;
        self.audit_into(
            &mut fx.batch,
            if approve {
                "agent.request.approved"
            } else {
                "agent.request.denied"
            },
            ctx,
            serde_json::json!({
                "user_id": user,
                "agent_id": agent.id,
                "client_id": agent.client_id,
                "scopes": record.scopes,
                "resource": record.resource,
            }),
        )?;
        self.commit(fx)?;
        Ok(())
    }

    fn my_requests(&self, user: Uuid) -> Result<Vec<RequestView>, TenantError> {
        let now = OffsetDateTime::now_utc();
        let mut out = Vec::new();
        for item in self.cx.store.scan::<AgentRequestRecord>(b"") {
            let (_, r) = item?;
            if r.flow == RequestFlow::Ciba
                && r.user == Some(user)
                && r.status == RequestStatus::Pending
                && r.expires_at > now
            {
                let revoked = self
                    .cx
                    .store
                    .get::<AgentRecord>(r.agent_id.as_bytes())?
                    .is_none_or(|a| a.revoked_at.is_some());
                if !revoked {
                    out.push(self.request_view(&r)?);
                }
            }
        }
        out.sort_by_key(|r| std::cmp::Reverse(r.created_at));
        Ok(out)
    }

    fn my_agents(&self, user: Uuid) -> Result<Vec<UserAgentView>, TenantError> {
        let mut out = Vec::new();
        for item in self.cx.store.scan::<UserAgentRecord>(user.as_bytes()) {
            let (_, r) = item?;
            let Some(agent) = self.cx.store.get::<AgentRecord>(r.agent_id.as_bytes())? else {
                continue;
            };
            out.push(UserAgentView {
                client_id: agent.client_id,
                name: agent.name,
                logo_url: agent.logo_url,
                agent_class: agent.agent_class,
                last_action_at: r.last_action_at,
                action_count: r.action_count,
                revoked_at: r.revoked_at,
                agent_revoked_at: agent.revoked_at,
            });
        }
        out.sort_by_key(|a| std::cmp::Reverse(a.last_action_at));
        Ok(out)
    }

    /// The agents that acted for `user`, as the user's data export lists them.
    pub(super) fn agents_of_user(&self, user: Uuid) -> Result<serde_json::Value, TenantError> {
        let rfc3339 = |t: Option<OffsetDateTime>| {
            t.and_then(|t| {
                t.format(&time::format_description::well_known::Rfc3339)
                    .ok()
            })
        };
        let list: Vec<serde_json::Value> = self
            .my_agents(user)?
            .into_iter()
            .map(|a| {
                serde_json::json!({
                    "agent_client_id": a.client_id,
                    "agent_name": a.name,
                    "action_count": a.action_count,
                    "last_action_at": rfc3339(a.last_action_at),
                    "revoked_at": rfc3339(a.revoked_at),
                    "agent_revoked_at": rfc3339(a.agent_revoked_at),
                })
            })
            .collect();
        Ok(serde_json::Value::Array(list))
    }

    fn agent_by_client(&self, client_id: &str) -> Result<AgentRecord, TenantError> {
        self.cx
            .cells
            .agents
            .load()
            .get(client_id)
            .map(|a| (**a).clone())
            .ok_or(TenantError::NotFound)
    }

    fn revoke_mine(
        &mut self,
        user: Uuid,
        client_id: &str,
        ctx: &AuditContext,
    ) -> Result<OffsetDateTime, TenantError> {
        let agent = self.agent_by_client(client_id)?;
        let key = user_agent_key(user, agent.id);
        let mut rec = self
            .cx
            .store
            .get::<UserAgentRecord>(&key)?
            .unwrap_or(UserAgentRecord {
                agent_id: agent.id,
                client_id: agent.client_id.clone(),
                action_count: 0,
                last_action_at: None,
                revoked_at: None,
            });
        if let Some(at) = rec.revoked_at {
            return Ok(at);
        }
        let now = OffsetDateTime::now_utc();
        rec.revoked_at = Some(now);
        let mut fx = self.effects();
        fx.batch.put(&key, &rec)?;
        let mut a = Action::new("agent.revoked_by_user");
        a.user = Some(user);
        a.method = Some("gdpr_art_7_withdrawal");
        self.record_action(&mut fx.batch, agent.id, a, ctx, now)?;
        self.audit_into(
            &mut fx.batch,
            "agent.revoked_by_user",
            ctx,
            serde_json::json!({
                "user_id": user,
                "agent_id": agent.id,
                "client_id": agent.client_id,
                "reason": "gdpr_art_7_withdrawal",
            }),
        )?;
        self.commit(fx)?;
        Ok(now)
    }

    fn restore_mine(
        &mut self,
        user: Uuid,
        client_id: &str,
        ctx: &AuditContext,
    ) -> Result<Restored, TenantError> {
        let agent = self.agent_by_client(client_id)?;
        let key = user_agent_key(user, agent.id);
        let now = OffsetDateTime::now_utc();
        let still_blocked_by_tenant = agent.revoked_at.is_some();
        let Some(mut rec) = self
            .cx
            .store
            .get::<UserAgentRecord>(&key)?
            .filter(|r| r.revoked_at.is_some())
        else {
            return Ok(Restored {
                restored_at: now,
                newly_restored: false,
                still_blocked_by_tenant,
            });
        };
        rec.revoked_at = None;
        let mut fx = self.effects();
        fx.batch.put(&key, &rec)?;
        let mut a = Action::new("agent.restored_by_user");
        a.user = Some(user);
        self.record_action(&mut fx.batch, agent.id, a, ctx, now)?;
        self.audit_into(
            &mut fx.batch,
            "agent.restored_by_user",
            ctx,
            serde_json::json!({
                "user_id": user,
                "agent_id": agent.id,
                "client_id": agent.client_id,
            }),
        )?;
        self.commit(fx)?;
        Ok(Restored {
            restored_at: now,
            newly_restored: true,
            still_blocked_by_tenant,
        })
    }

    fn write_agent(
        &mut self,
        agent: &AgentRecord,
        event: &str,
        ctx: &AuditContext,
        extra: serde_json::Value,
    ) -> Result<(), TenantError> {
        let mut fx = self.effects();
        fx.batch.put(agent.id.as_bytes(), agent)?;
        let mut metadata = serde_json::json!({
            "agent_id": agent.id,
            "client_id": agent.client_id,
            "name": agent.name,
        });
        if let (Some(m), serde_json::Value::Object(extra)) = (metadata.as_object_mut(), extra) {
            m.extend(extra);
        }
        self.audit_into(&mut fx.batch, event, ctx, metadata)?;
        self.commit(fx)?;
        self.publish_agent(Some(agent), &[]);
        Ok(())
    }

    fn register_agent(
        &mut self,
        new: NewAgent,
        ctx: &AuditContext,
    ) -> Result<IssuedAgent, TenantError> {
        if self.cx.info.tier == Tier::Free {
            return Err(TenantError::AgentTierUnauthorized);
        }
        if self.cx.store.scan::<AgentRecord>(b"").count() >= MAX_AGENTS {
            return Err(TenantError::AgentLimit);
        }
        let now = OffsetDateTime::now_utc();
        let (secret, hash, prefix) = new_secret();
        let record = AgentRecord {
            id: Uuid::now_v7(),
            client_id: new_client_id(),
            name: new.name,
            description: new.description,
            agent_class: new.agent_class,
            logo_url: new.logo_url,
            scopes: new.scopes,
            grant_types: new.grant_types,
            token_ttl_secs: new.token_ttl_secs,
            rate_limits: new.rate_limits,
            max_concurrent_tokens: new.max_concurrent_tokens,
            secret_hash: hash,
            secret_prefix: prefix,
            created_at: now,
            updated_at: now,
            secret_rotated_at: None,
            revoked_at: None,
            metadata_version: 1,
        };
        let extra = serde_json::json!({
            "scopes": record.scopes,
            "grant_types": record.grant_types.iter().map(|g| g.as_str()).collect::<Vec<_>>(),
        });
        self.write_agent(&record, "agent.registered", ctx, extra)?;
        Ok(IssuedAgent {
            record,
            client_secret: secret,
        })
    }

    fn update_agent(
        &mut self,
        id: Uuid,
        patch: AgentPatch,
        ctx: &AuditContext,
    ) -> Result<AgentRecord, TenantError> {
        let mut a = self.agent(id)?;
        if a.revoked_at.is_some() {
            return Err(TenantError::AgentAlreadyRevoked);
        }
        let mut changed: Vec<&str> = Vec::new();
        macro_rules! set {
            ($field:ident, $value:expr, $name:literal) => {
                if let Some(v) = $value {
                    if v != a.$field {
                        changed.push($name);
                    }
                    a.$field = v;
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
            &a,
            "agent.updated",
            ctx,
            serde_json::json!({ "changed": changed, "agent_metadata_version": a.metadata_version }),
        )?;
        Ok(a)
    }

    fn rotate_agent_secret(
        &mut self,
        id: Uuid,
        ctx: &AuditContext,
    ) -> Result<IssuedAgent, TenantError> {
        let mut a = self.agent(id)?;
        if a.revoked_at.is_some() {
            return Err(TenantError::AgentAlreadyRevoked);
        }
        let (secret, hash, prefix) = new_secret();
        let now = OffsetDateTime::now_utc();
        a.secret_hash = hash;
        a.secret_prefix = prefix;
        a.secret_rotated_at = Some(now);
        a.updated_at = now;
        self.write_agent(
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
    fn revoke_agent(
        &mut self,
        id: Uuid,
        owners: &[String],
        ctx: &AuditContext,
    ) -> Result<(AgentRecord, Vec<MailJob>), TenantError> {
        let mut a = self.agent(id)?;
        if a.revoked_at.is_some() {
            return Ok((a, Vec::new()));
        }
        let now = OffsetDateTime::now_utc();
        a.revoked_at = Some(now);
        a.updated_at = now;
        let mut fx = self.effects();
        fx.batch.put(a.id.as_bytes(), &a)?;
        let mut denied = Vec::new();
        for item in self.cx.store.scan::<AgentTokenRecord>(a.id.as_bytes()) {
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
        self.audit_into(
            &mut fx.batch,
            "agent.revoked",
            ctx,
            serde_json::json!({
                "severity": "HIGH",
                "agent_id": a.id,
                "client_id": a.client_id,
                "name": a.name,
                "tokens_denylisted": denied.len(),
            }),
        )?;
        let mut action = Action::new("agent.revoked");
        action.method = Some("admin");
        self.record_action(&mut fx.batch, a.id, action, ctx, now)?;
        self.emit_event(
            &mut fx.batch,
            "agent.revoked",
            serde_json::json!({
                "agent_id": a.id,
                "client_id": a.client_id,
                "name": a.name,
                "revoked_at": now.format(&time::format_description::well_known::Rfc3339).unwrap_or_default(),
            }),
        )?;
        for owner in owners {
            self.queue_mail(
                &mut fx,
                owner,
                MailKind::AgentRevoked {
                    agent_name: a.name.clone(),
                    client_id: a.client_id.clone(),
                },
            )?;
        }
        let mail = self.commit(fx)?;
        self.agents.counters.live.remove(&a.id);
        self.publish_agent(Some(&a), &denied);
        Ok((a, mail))
    }

    fn list_agents(
        &self,
        after: Option<Uuid>,
        limit: usize,
        include_revoked: bool,
    ) -> Result<(Vec<AgentRecord>, Option<Uuid>), TenantError> {
        let mut out = Vec::new();
        let mut more = false;
        for item in self.cx.store.scan::<AgentRecord>(b"") {
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

    fn activity(&self, id: Uuid, q: &ActivityQuery) -> Result<ActivityPage, TenantError> {
        self.agent(id)?;
        let mut before = match &q.cursor {
            Some(c) => {
                let mut k = id.as_bytes().to_vec();
                k.extend_from_slice(c);
                k
            }
            None => {
                let mut k = id.as_bytes().to_vec();
                k.extend_from_slice(&[0xFF; 12]);
                k
            }
        };
        let mut actions = Vec::new();
        let mut more = false;
        let mut emails: HashMap<Uuid, Option<String>> = HashMap::new();
        'scan: loop {
            let chunk = self
                .cx
                .store
                .scan_rev::<AgentActionRecord>(Some(&before), 256)?;
            let exhausted = chunk.len() < 256;
            for (key, r) in chunk {
                if !key.starts_with(id.as_bytes()) {
                    break 'scan;
                }
                before = key.clone();
                if q.since.is_some_and(|s| r.created_at < s) {
                    break 'scan;
                }
                if q.until.is_some_and(|u| r.created_at > u)
                    || q.actor_user_id.is_some_and(|u| r.actor_user_id != Some(u))
                    || q.action_type.as_deref().is_some_and(|t| t != r.action)
                    || q.only_actor
                        .is_some_and(|me| r.actor_user_id.is_some() && r.actor_user_id != me)
                {
                    continue;
                }
                if actions.len() == q.limit {
                    more = true;
                    break 'scan;
                }
                let email = match r.actor_user_id {
                    Some(u) => emails
                        .entry(u)
                        .or_insert_with(|| self.user(u).ok().flatten().and_then(|u| u.email))
                        .clone(),
                    None => None,
                };
                actions.push((
                    key[16..].to_vec(),
                    ActionView {
                        record: r,
                        actor_user_email: email,
                    },
                ));
            }
            if exhausted {
                break;
            }
        }
        let next_cursor = if more {
            actions.last().map(|(k, _)| k.clone())
        } else {
            None
        };
        Ok(ActivityPage {
            actions: actions.into_iter().map(|(_, a)| a).collect(),
            next_cursor,
        })
    }

    /// The keys of what `user` and each agent have to do with each other (counts, the user's
    /// own revocation).
    pub(super) fn user_agent_keys(&self, user: Uuid) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        let mut out = Vec::new();
        for item in self.cx.store.scan::<UserAgentRecord>(user.as_bytes()) {
            out.push((Kind::UserAgent, item?.0));
        }
        Ok(out)
    }

    /// The CIBA and device requests naming any of `users` (waiting, or approved and not yet
    /// polled), with their indexes.
    pub(super) fn agent_request_keys(
        &self,
        users: &std::collections::HashSet<Uuid>,
    ) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        let mut out = Vec::new();
        for item in self.cx.store.scan::<AgentRequestRecord>(b"") {
            let (key, r) = item?;
            if !r.user.is_some_and(|u| users.contains(&u)) {
                continue;
            }
            out.push((Kind::AgentRequestIndex, index_key(b'i', r.id.as_bytes())));
            if let Some(code) = &r.user_code {
                out.push((Kind::AgentRequestIndex, index_key(b'u', code.as_bytes())));
            }
            if let Some(h) = &r.link_hash {
                out.push((Kind::AgentRequestIndex, index_key(b'l', h)));
            }
            out.push((Kind::AgentRequest, key));
        }
        Ok(out)
    }

    /// The live tokens agents hold to act for any of `users`: `(key, jti, exp)`.
    pub(super) fn agent_tokens_for(
        &self,
        users: &std::collections::HashSet<Uuid>,
        now: OffsetDateTime,
    ) -> Result<Vec<(Vec<u8>, Uuid, i64)>, TenantError> {
        let mut out = Vec::new();
        for item in self.cx.store.scan::<AgentTokenRecord>(b"") {
            let (key, t) = item?;
            if t.exp <= now.unix_timestamp() || !t.user.is_some_and(|u| users.contains(&u)) {
                continue;
            }
            if let Ok(jti) = Uuid::from_slice(key.get(16..).unwrap_or_default()) {
                out.push((key, jti, t.exp));
            }
        }
        Ok(out)
    }

    /// Denylists agent tokens (`(key, jti, exp)`, from [`Self::agent_tokens_for`]) into
    /// `batch`; the caller publishes the denylist once the batch is durable
    /// ([`Self::publish_denied`]).
    pub(super) fn deny_agent_tokens(
        &self,
        batch: &mut TenantBatch,
        tokens: &[(Vec<u8>, Uuid, i64)],
    ) -> Result<(), TenantError> {
        for (key, jti, exp) in tokens {
            batch.put(jti.as_bytes(), &DeniedTokenRecord { exp: *exp })?;
            batch.remove(Kind::AgentToken, key);
        }
        Ok(())
    }

    /// Publishes denylisted token ids to the edge, and forgets the counts of live tokens
    /// (read back from the store on next use).
    pub(super) fn publish_denied(&mut self, denied: &[Uuid]) {
        if denied.is_empty() {
            return;
        }
        self.agents.counters.live.clear();
        self.publish_agent(None, denied);
    }

    /// Removes expired token records, denylist entries and requests, and actions past the
    /// retention (at most `limit` of each); answers how many.
    pub(super) fn sweep_agents(
        &self,
        batch: &mut TenantBatch,
        now: OffsetDateTime,
        limit: usize,
    ) -> Result<usize, TenantError> {
        let ts = now.unix_timestamp();
        let retention = Duration::days(i64::from(self.agent_policy().activity_retention_days));
        let cutoff = now - retention;
        let mut n = self.sweep_kind::<AgentTokenRecord>(
            limit,
            |_, t| t.exp <= ts,
            |k, _| batch.remove(Kind::AgentToken, k),
        )?;
        n += self.sweep_kind::<DeniedTokenRecord>(
            limit,
            |_, t| t.exp <= ts,
            |k, _| batch.remove(Kind::AgentDenied, k),
        )?;
        n += self.sweep_kind::<AgentRequestRecord>(
            limit,
            |k, r| r.expires_at <= now && k.len() == 32,
            |k, r| {
                if let Ok(k) = <[u8; 32]>::try_from(k) {
                    self.remove_request(batch, &k, r);
                }
            },
        )?;
        n += self.sweep_kind::<AgentActionRecord>(
            limit,
            |_, r| r.created_at < cutoff,
            |k, _| batch.remove(Kind::AgentAction, k),
        )?;
        Ok(n)
    }

    /// Hands at most `limit` records of one kind that are `due` to `remove`; answers how many.
    pub(super) fn sweep_kind<R: TenantRecord>(
        &self,
        limit: usize,
        due: impl Fn(&[u8], &R) -> bool,
        mut remove: impl FnMut(&[u8], &R),
    ) -> Result<usize, TenantError> {
        let mut n = 0;
        for item in self.cx.store.scan::<R>(b"") {
            if n >= limit {
                break;
            }
            let (key, record) = item?;
            if due(&key, &record) {
                remove(&key, &record);
                n += 1;
            }
        }
        Ok(n)
    }

    /// Carries out one command; answers with the mail it queued.
    pub fn agent_cmd(
        &mut self,
        cmd: AgentCmd,
        ctx: &AuditContext,
    ) -> Result<(AgentAnswer, Vec<MailJob>), TenantError> {
        Ok(match cmd {
            AgentCmd::Revoke { id, owners } => {
                let (a, mail) = self.revoke_agent(id, &owners, ctx)?;
                (AgentAnswer::One(Box::new(a)), mail)
            }
            AgentCmd::Backchannel {
                agent,
                login_hint,
                scopes,
                binding_message,
                resource,
            } => {
                let (started, mail) =
                    self.backchannel(&agent, &login_hint, scopes, binding_message, resource, ctx)?;
                (AgentAnswer::Started(started), mail)
            }
            other => (self.agent_cmd_quiet(other, ctx)?, Vec::new()),
        })
    }

    /// The commands that mail nobody.
    fn agent_cmd_quiet(
        &mut self,
        cmd: AgentCmd,
        ctx: &AuditContext,
    ) -> Result<AgentAnswer, TenantError> {
        Ok(match cmd {
            AgentCmd::Register(new) => {
                AgentAnswer::Issued(Box::new(self.register_agent(new, ctx)?))
            }
            AgentCmd::List {
                after,
                limit,
                include_revoked,
            } => {
                let (page, next) = self.list_agents(after, limit, include_revoked)?;
                AgentAnswer::Page(page, next)
            }
            AgentCmd::Get(id) => AgentAnswer::One(Box::new(self.agent(id)?)),
            AgentCmd::Update(id, patch) => {
                AgentAnswer::One(Box::new(self.update_agent(id, patch, ctx)?))
            }
            AgentCmd::RotateSecret(id) => {
                AgentAnswer::Issued(Box::new(self.rotate_agent_secret(id, ctx)?))
            }
            AgentCmd::Revoke { .. } | AgentCmd::Backchannel { .. } => {
                return Err(TenantError::Internal("a mailing agent command".into()))
            }
            AgentCmd::Activity(id, q) => AgentAnswer::Activity(self.activity(id, &q)?),
            AgentCmd::ClientCredentials {
                agent,
                scopes,
                resource,
            } => AgentAnswer::Token(self.client_credentials(&agent, scopes, resource, ctx)?),
            AgentCmd::Exchange {
                agent,
                subject,
                subject_client,
                scopes,
                resource,
            } => AgentAnswer::Token(self.exchange(
                &agent,
                subject,
                subject_client,
                scopes,
                resource,
                ctx,
            )?),
            AgentCmd::DeviceAuthorize {
                agent,
                scopes,
                resource,
            } => AgentAnswer::Started(self.device_authorize(&agent, scopes, resource, ctx)?),
            AgentCmd::Poll {
                agent,
                flow,
                secret,
            } => match self.poll(&agent, flow, &secret, ctx)? {
                Ok(t) => AgentAnswer::Token(t),
                Err(r) => AgentAnswer::NotYet(r),
            },
            AgentCmd::Introspected {
                client_id,
                jti,
                active,
                on_behalf,
            } => {
                let agent = self.agent_by_client(&client_id)?;
                let active = match &on_behalf {
                    Some(t) if active => self.on_behalf_stands(&agent, t)?,
                    _ => active,
                };
                let mut fx = self.effects();
                let mut a = Action::new("token.introspected");
                a.method = Some(if active { "active" } else { "inactive" });
                a.jti = Uuid::parse_str(&jti).ok();
                self.record_action(&mut fx.batch, agent.id, a, ctx, OffsetDateTime::now_utc())?;
                self.commit(fx)?;
                AgentAnswer::Active(active)
            }
            AgentCmd::UseToken {
                client_id,
                on_behalf,
            } => {
                let agent = self.agent_by_client(&client_id)?;
                self.agent_rate(&agent, AgentLimit::ApiCalls, ctx)?;
                let view = match on_behalf {
                    Some(t) => {
                        if !self.on_behalf_stands(&agent, &t)? {
                            return Err(TenantError::InvalidSession);
                        }
                        Some(
                            self.user(t.user)?
                                .ok_or(TenantError::InvalidSession)?
                                .view(),
                        )
                    }
                    None => None,
                };
                AgentAnswer::Used(view)
            }
            AgentCmd::RevokeToken {
                client_id,
                jti,
                exp,
            } => {
                let agent = self.agent_by_client(&client_id)?;
                if let Ok(jti) = Uuid::parse_str(&jti) {
                    let mut fx = self.effects();
                    fx.batch.put(jti.as_bytes(), &DeniedTokenRecord { exp })?;
                    fx.batch.remove(Kind::AgentToken, &token_key(agent.id, jti));
                    let mut a = Action::new("token.revoked");
                    a.jti = Some(jti);
                    self.record_action(&mut fx.batch, agent.id, a, ctx, OffsetDateTime::now_utc())?;
                    self.commit(fx)?;
                    self.agents.counters.live.remove(&agent.id);
                    self.publish_agent(None, &[jti]);
                }
                AgentAnswer::Done
            }
            AgentCmd::MyAgents { bearer } => {
                let (_, user) = self.live_session(bearer, OffsetDateTime::now_utc())?;
                AgentAnswer::UserAgents(self.my_agents(user.id)?)
            }
            AgentCmd::RevokeMine { bearer, client_id } => {
                let (_, user) = self.live_session(bearer, OffsetDateTime::now_utc())?;
                AgentAnswer::RevokedMine(self.revoke_mine(user.id, &client_id, ctx)?)
            }
            AgentCmd::RestoreMine { bearer, client_id } => {
                let (_, user) = self.live_session(bearer, OffsetDateTime::now_utc())?;
                AgentAnswer::Restored(self.restore_mine(user.id, &client_id, ctx)?)
            }
            AgentCmd::MyRequests { bearer } => {
                let (_, user) = self.live_session(bearer, OffsetDateTime::now_utc())?;
                AgentAnswer::Requests(self.my_requests(user.id)?)
            }
            AgentCmd::Decide {
                bearer,
                id,
                approve,
            } => {
                let (_, user) = self.live_session(bearer, OffsetDateTime::now_utc())?;
                let (key, record) = self
                    .request_by_index(b'i', id.as_bytes())?
                    .filter(|(_, r)| r.flow == RequestFlow::Ciba && r.user == Some(user.id))
                    .ok_or(TenantError::NotFound)?;
                self.decide_request(key, record, user.id, approve, ctx)?;
                AgentAnswer::Done
            }
            AgentCmd::PeekLink { token } => {
                let (_, record) = self
                    .request_by_index(b'l', &sha256(token.as_bytes()))?
                    .ok_or(TenantError::InvalidLinkToken)?;
                AgentAnswer::Request(Box::new(self.request_view(&record)?))
            }
            AgentCmd::DecideLink { token, approve } => {
                let (key, record) = self
                    .request_by_index(b'l', &sha256(token.as_bytes()))?
                    .ok_or(TenantError::InvalidLinkToken)?;
                let user = record.user.ok_or(TenantError::InvalidLinkToken)?;
                self.decide_request(key, record, user, approve, ctx)?;
                AgentAnswer::Done
            }
            AgentCmd::PeekUserCode { bearer, user_code } => {
                let (_, user) = self.live_session(bearer, OffsetDateTime::now_utc())?;
                self.agents
                    .user_code_tries
                    .hit(&user.id, Instant::now())
                    .map_err(|retry_after| TenantError::RateLimited { retry_after })?;
                let (_, record) = self
                    .request_by_index(b'u', normalize_user_code(&user_code).as_bytes())?
                    .ok_or(TenantError::NotFound)?;
                AgentAnswer::Request(Box::new(self.request_view(&record)?))
            }
            AgentCmd::DecideUserCode {
                bearer,
                user_code,
                approve,
            } => {
                let (_, user) = self.live_session(bearer, OffsetDateTime::now_utc())?;
                let (key, record) = self
                    .request_by_index(b'u', normalize_user_code(&user_code).as_bytes())?
                    .ok_or(TenantError::NotFound)?;
                self.decide_request(key, record, user.id, approve, ctx)?;
                AgentAnswer::Done
            }
        })
    }
}

fn unauthorized() -> TenantError {
    TenantError::OAuth(OAuthFailure::UnauthorizedClient)
}

fn invalid_grant() -> TenantError {
    TenantError::OAuth(OAuthFailure::InvalidGrant)
}

#[cfg(test)]
mod tests;
