//! The refusals of social sign-in (providers, state, linking).
//!
//! `TenantError::Social` carries one; the HTTP layer maps each beside the flow's routes.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum SocialError {
    #[error("the social provider is not configured")]
    NotConfigured,
    #[error("the redirect URI is not one of the tenant's URLs")]
    RedirectNotAllowed,
    #[error("the sign-in state is unknown, used or expired")]
    StateInvalid,
    #[error("the sign-in was begun in another browser")]
    StateForeign { redirect_uri: String, hosted: bool },
    #[error("the social sign-in was refused: {}", .0.as_str())]
    Refused(crate::tenant::social::SocialRefusal),
    #[error("the exchange token is unknown, used or expired")]
    ExchangeInvalid,
    #[error("the provider is the user's only way to sign in")]
    LastMethod,
    #[error("{field}: {reason}")]
    CredentialMissing {
        field: &'static str,
        reason: &'static str,
    },
}
