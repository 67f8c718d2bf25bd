//! The refusals of the OAuth client registry.
//!
//! `TenantError::OAuthClient` carries one; the HTTP layer maps each beside the flow's routes.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum OAuthClientError {
    #[error("the tenant has as many OAuth clients as it may")]
    Limit,
    #[error("a public client has no secret")]
    Public,
}
