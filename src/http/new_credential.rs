//! What a route that adds a way in to the signed-in user's account (an authenticator, a
//! phone number, a linked provider) checks before its step-up gate: the account's own
//! record, and that the account has confirmed its address. Refusals that need no step-up
//! come first, so no step-up token is spent on a request that cannot pass; the actor checks
//! them again.
//!
//! Its own module: the MFA and `/v1/users/me` routes share these checks, and neither owns
//! them.

use tessera_actors::tenant::SessionsMsg;
use tessera_actors::{
    tenant::{credentials::Credential, messages::User},
    TenantError,
};

use super::{bearer::UserBearer, error::ApiError};

/// The signed-in user's record.
pub async fn signed_in(user: &UserBearer) -> Result<User, ApiError> {
    Ok(user
        .call(|bearer, reply| SessionsMsg::Authenticate { bearer, reply })
        .await?)
}

/// 403 `auth/email_unconfirmed` (naming `credential`) when the account has an address it has
/// not confirmed: no new way in until it has.
pub fn require_confirmed_address(me: &User, credential: Credential) -> Result<(), ApiError> {
    if me.email.is_some() && !me.email_verified {
        return Err(TenantError::EmailUnconfirmed { credential }.into());
    }
    Ok(())
}
