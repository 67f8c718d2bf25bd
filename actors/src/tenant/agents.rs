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
//!
//! Its parts, one job a file: `policy.rs` (the grants, the per-minute limits and the
//! platform's ceilings), `records.rs` (what is stored, and its keys), `registry.rs` (the
//! owners' registry and what is published to the edge), `counters.rs` (the per-minute
//! windows and the live tokens), `activity.rs` (the feed), `grants.rs` (client credentials
//! and token exchange, and the issue of every token), `requests.rs` (CIBA and device
//! requests, polled and decided), `user_agents.rs` (a user's agents and revocation),
//! `upkeep.rs` (what erasure, blocking and the daily sweep ask of agents) and `commands.rs`
//! (`AgentCmd`, its answers and its dispatch).

mod error;
pub mod memory;

mod activity;
mod commands;
mod counters;
mod grants;
mod policy;
mod records;
mod registry;
mod requests;
mod upkeep;
mod user_agents;

#[cfg(test)]
pub(super) use self::records::{index_key, token_key, user_agent_key};
pub use self::{
    activity::{ActionView, ActivityPage, ActivityQuery},
    commands::{AgentAnswer, AgentCmd},
    counters::AgentCounters,
    grants::{AgentIssued, OnBehalf, ON_BEHALF_MAX_TTL},
    policy::{AgentGrant, AgentLimit, AgentPolicy, AgentRateLimits, EffectiveLimits, PerMinute},
    records::{
        AgentActionRecord, AgentRecord, AgentRequestIndex, AgentRequestRecord, AgentTokenRecord,
        DeniedTokenRecord, NewAgent, RequestFlow, RequestStatus, UserAgentRecord,
    },
    registry::{AgentPatch, IssuedAgent, PublishedAgents, MAX_AGENTS},
    requests::{
        normalize_user_code, PollRefusal, RequestStarted, RequestView, SLOW_DOWN_STEP,
        USER_CODE_ALPHABET, USER_CODE_TRIES_PER_MINUTE,
    },
    user_agents::{Restored, UserAgentView},
};
pub use error::AgentError;

#[cfg(test)]
mod tests;
