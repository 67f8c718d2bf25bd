//! The refusals of the agents flow (registration, keys, revocation).
//!
//! `TenantError::Agent` carries one; the HTTP layer maps each beside the flow's routes.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum AgentError {
    #[error("agents are not available on the free tier")]
    TierUnauthorized,
    #[error("the tenant has as many agents as it may")]
    Limit,
    #[error("the agent is revoked")]
    AlreadyRevoked,
    #[error("the user revoked this agent")]
    RevokedByUser,
}
