//! The tenant's OAuth 2.1 / OpenID Connect authorization server: consents, authorization
//! codes, and the grants the token endpoint opens.
//!
//! A grant is a session ([`SessionRecord`]) that carries [`OAuthGrant`]: its refresh token
//! rotates exactly as a first-party session's does, its access tokens name it in `sid`, and
//! whatever ends a user's sessions (a password change, a block, an erasure) ends its grants
//! too. First-party routes refuse grant sessions, and the token endpoint refuses first-party
//! ones, so neither kind of token stands in for the other.
//!
//! An authorization code is 32 random bytes, kept only as its SHA-256, single-use and alive
//! `tokens.authorization_code_ttl_secs` (60 s). An exchanged code is kept (marked with the grant it opened) until it would have
//! expired plus [`CODE_REUSE_WATCH`], so a second exchange is recognised and ends that grant
//! (RFC 6749 4.1.2: a code used twice revokes what it issued).
//!
//! Consent is kept per (user, client): the scopes and resources granted so far. A request for
//! nothing new is answered with a code at once; anything new asks again, showing what is new
//! and what is unchanged. First-party clients are the tenant's own apps and are not asked.
//! A consent decision must carry the commitment the server answered with the consent screen
//! (a keyed hash of the whole request and the user), so only what was shown can be approved.
//!
//! [`SessionRecord`]: crate::tenant::records::SessionRecord
//!
//! Its parts, one job a file: `records.rs` (grants, consents and codes as stored),
//! `failure.rs` (`OAuthFailure`, a refusal in RFC 6749 terms), `authorize.rs` (an
//! authorization request, its consent and its code), `token.rs` (the token endpoint: a code
//! exchanged, a grant refreshed), `revocation.rs` (revocation, introspection and
//! RP-initiated logout), `consents.rs` (a user's consents and their withdrawal), `upkeep.rs`
//! (erasure's keys and the daily sweep) and `commands.rs` (`OAuthCmd`, its answers and its
//! dispatch).

mod authorize;
mod commands;
mod consents;
mod failure;
mod records;
mod revocation;
mod token;
mod upkeep;

/// The OAuth provider's flow: it keeps nothing in memory and works on the context.
#[derive(Default)]
pub struct OAuth;

#[cfg(test)]
pub(super) use self::records::consent_key;
pub use self::{
    authorize::{AuthorizeOutcome, AuthzRequest, ConsentDecision, ConsentNeeded},
    commands::{OAuthAnswer, OAuthCmd, PresentedToken},
    consents::ConsentView,
    failure::OAuthFailure,
    records::{
        is_agent_client, AuthCodeRecord, ConsentRecord, ExchangedCode, OAuthGrant, CODE_REUSE_WATCH,
    },
    token::{verifier_ok, ClientAuth, OAuthIssued, TokenGrant},
};

pub use super::challenges::s256;

#[cfg(test)]
mod tests;
