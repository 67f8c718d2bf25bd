//! Social sign-in providers: the ten the platform speaks to, the protocol of each and how far
//! its e-mail addresses are trusted, and each tenant's configuration of them (the tenant's
//! client id at the provider, its client secret or, for Apple, the key that signs one, sealed
//! under the master key, and the scopes asked for).
//!
//! Trust decides what a provider's e-mail address may do (spec 4.2): `always_verified`
//! providers only hand out addresses they own or checked; `provider_verified` ones say per
//! address whether it was checked; `never_trust` ones say nothing reliable, so their address
//! never links to, or claims, an existing account.
//!
//! Its parts, one job a file: `providers.rs` (the ten providers and their traits),
//! `config.rs` (each tenant's configuration of them), `records.rs` (the flows' and the links'
//! records and keys), `flow.rs` (a sign-in begun and taken back at the callback),
//! `finish.rs` (who the provider's account signs in as, and the exchange for a session),
//! `identities.rs` (linked accounts and their kept tokens), `linking.rs` (explicit linking
//! and unlinking), `upkeep.rs` (erasure's keys and the daily sweep) and `commands.rs`
//! (`SocialCmd`, its answers and its dispatch).

mod error;
pub mod memory;

mod commands;
mod config;
mod finish;
mod flow;
mod identities;
mod linking;
mod providers;
mod records;
mod upkeep;

#[cfg(test)]
pub(super) use self::records::{identity_key, user_identity_key};
pub use self::{
    commands::{SocialAnswer, SocialCmd},
    config::{SocialConfigCmd, SocialConfigPut, SocialProviderRecord, SocialProviderView},
    finish::{SocialFinished, SocialRefusal},
    flow::{SocialPending, SocialStart},
    identities::{ProviderTokens, SocialIdentity},
    linking::TicketView,
    providers::{apple_key_signs, pkcs8_der, AppleKeyId, EmailTrust, Protocol, Provider},
    records::{
        SocialExchangeRecord, SocialIdentityRecord, SocialLinkTicketRecord, SocialStateRecord,
        SocialTokenRecord, UserIdentityIndex, EXCHANGE_TTL, SOCIAL_STATE_TTL,
    },
};
pub use error::SocialError;

#[cfg(test)]
mod tests;
