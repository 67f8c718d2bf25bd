//! The refusals of passkeys (ceremonies, the relying party, deletion).
//!
//! `TenantError::Passkey` carries one; the HTTP layer maps each beside the flow's routes.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum PasskeyError {
    #[error("the user has as many passkeys as they may")]
    Limit,
    #[error("no such passkey ceremony")]
    CeremonyNotFound,
    #[error("the passkey assertion was refused")]
    InvalidAssertion,
    #[error("the passkey registration was refused")]
    InvalidRegistration,
    #[error("this credential is already registered")]
    AlreadyRegistered,
    #[error("the passkey assertion lacks user verification")]
    StepUpRequired,
    #[error("the last way to sign in cannot be deleted")]
    LastCredential,
    #[error("users hold passkeys under the current relying-party id")]
    RpIdInUse { passkeys: usize },
}
