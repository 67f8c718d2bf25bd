//! The refusals of user management (addresses, numbers, self-deletion).
//!
//! `TenantError::User` carries one; the HTTP layer maps each beside the flow's routes.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum UserError {
    #[error("another user has this e-mail address")]
    EmailInUse,
    #[error("another user has confirmed this phone number")]
    PhoneInUse,
    #[error("the user has no e-mail address")]
    NoEmail,
    #[error("users cannot delete their own accounts in this tenant")]
    SelfDeletionDisabled,
}
