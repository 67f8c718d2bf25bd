//! The refusals of guest sign-ins and claims.
//!
//! `TenantError::Guest` carries one; the HTTP layer maps each beside the flow's routes.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum GuestError {
    #[error("guest sign-ins are disabled")]
    Disabled,
    #[error("guest sign-ins rate limited")]
    RateLimited { retry_after: u64 },
    #[error("the monthly active user cap is reached")]
    MauExhausted,
    #[error("the guest was already claimed")]
    AlreadyClaimed,
}
