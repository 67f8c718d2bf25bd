//! The refusals of TOTP and recovery codes.
//!
//! `TenantError::Mfa` carries one; the HTTP layer maps each beside the flow's routes.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum MfaError {
    #[error("the MFA code is wrong")]
    InvalidCode,
    #[error("MFA is already enabled")]
    AlreadyEnabled,
    #[error("MFA is not enabled")]
    NotEnabled,
    #[error("MFA setup was not started")]
    SetupNotStarted,
    #[error("MFA is not available to this user")]
    Unavailable,
}
