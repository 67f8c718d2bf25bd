//! The refusals of minor protection (ages, guardians' consent, their links).
//!
//! `TenantError::Guardian` carries one; the HTTP layer maps each beside the flow's routes.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum GuardianError {
    #[error("the age verification token is unknown, used or expired")]
    AgeTokenInvalid,
    #[error("the tenant's minor protection needs a date of birth or an age verification token")]
    DateOfBirthRequired,
    #[error(
        "the tenant protects minors: accounts are created by registration with a date of birth"
    )]
    AgeRequired,
    #[error("the account waits for a guardian's consent")]
    ConsentPending,
    #[error("a guardian declined consent for the account")]
    ConsentDeclined,
    #[error("the account does not wait for a guardian's consent")]
    ConsentNotPending,
    #[error("the guardian link or its form is invalid")]
    Invalid,
    #[error("another guardian consented for this account")]
    OtherGuardian,
}
