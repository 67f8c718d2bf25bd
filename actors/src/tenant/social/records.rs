//! What social sign-in keeps in the store: flows under way, link tickets, exchange records,
//! linked accounts with their per-user index, kept provider tokens; and their keys.

use serde::{Deserialize, Serialize};
use tessera_storage::{Kind, Record, Sealed, TenantRecord};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::providers::Provider;

/// How long a sign-in may stay at the provider.
pub const SOCIAL_STATE_TTL: Duration = Duration::minutes(10);

/// How long a callback's exchange token may wait for the app's back end.
pub const EXCHANGE_TTL: Duration = Duration::seconds(60);

/// A sign-in under way at a provider, keyed by the SHA-256 of its `state`: single use, for
/// [`SOCIAL_STATE_TTL`], in the browser holding the binding cookie.
#[derive(Clone, Serialize, Deserialize)]
pub struct SocialStateRecord {
    pub provider: Provider,
    /// Where the browser goes back to (one of the tenant's URLs when it was asked for).
    pub redirect_uri: String,
    pub nonce: String,
    pub pkce_verifier: String,
    /// SHA-256 of the cookie value that binds the flow to the browser that began it.
    pub binding_hash: [u8; 32],
    /// The guest whose bearer came with the authorize request: claimed in place by a trusted
    /// provider.
    pub guest: Option<Uuid>,
    /// Begun on the authorization server's hosted sign-in page, whose return page
    /// `redirect_uri` is.
    #[serde(default)]
    pub hosted: bool,
    /// The signed-in user the provider account is to be linked to (explicit linking).
    #[serde(default)]
    pub link_user: Option<Uuid>,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

impl std::fmt::Debug for SocialStateRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SocialStateRecord")
            .field("provider", &self.provider)
            .finish_non_exhaustive()
    }
}

impl Record for SocialStateRecord {
    const KIND: Kind = Kind::SocialState;
    const NAME: &'static str = "social sign-in state";
    const VERSION: u16 = 1;
}
impl TenantRecord for SocialStateRecord {}

/// A signed-in user's leave to link a provider (`POST /v1/users/me/link/{provider}`, past
/// the step-up gate), keyed by the SHA-256 of the ticket its authorize URL carries: single
/// use, [`SOCIAL_STATE_TTL`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SocialLinkTicketRecord {
    pub user_id: Uuid,
    pub provider: Provider,
    pub redirect_uri: String,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

impl Record for SocialLinkTicketRecord {
    const KIND: Kind = Kind::SocialLinkTicket;
    const NAME: &'static str = "social link ticket";
    const VERSION: u16 = 1;
}
impl TenantRecord for SocialLinkTicketRecord {}

/// A callback's outcome waiting for the exchange, keyed by the exchange token's `jti`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SocialExchangeRecord {
    pub user_id: Uuid,
    pub provider: Provider,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

impl Record for SocialExchangeRecord {
    const KIND: Kind = Kind::SocialExchange;
    const NAME: &'static str = "social exchange";
    const VERSION: u16 = 1;
}
impl TenantRecord for SocialExchangeRecord {}

/// A provider account linked to a user, keyed `provider | 0 | subject`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SocialIdentityRecord {
    pub user_id: Uuid,
    pub provider: Provider,
    /// The provider's id of the account.
    pub subject: String,
    /// The address the provider gave when it was linked.
    pub email: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub linked_at: OffsetDateTime,
}

impl Record for SocialIdentityRecord {
    const KIND: Kind = Kind::SocialIdentity;
    const NAME: &'static str = "social identity";
    const VERSION: u16 = 1;
}
impl TenantRecord for SocialIdentityRecord {}

/// `user id | provider` -> the subject: a user's linked provider accounts.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct UserIdentityIndex {
    pub subject: String,
}

impl Record for UserIdentityIndex {
    const KIND: Kind = Kind::UserIdentity;
    const NAME: &'static str = "user identity index";
    const VERSION: u16 = 1;
}
impl TenantRecord for UserIdentityIndex {}

pub(in crate::tenant) fn identity_key(provider: Provider, subject: &str) -> Vec<u8> {
    let mut k = provider.as_str().as_bytes().to_vec();
    k.push(0);
    k.extend_from_slice(subject.as_bytes());
    k
}

pub(in crate::tenant) fn user_identity_key(user: Uuid, provider: Provider) -> Vec<u8> {
    let mut k = user.as_bytes().to_vec();
    k.extend_from_slice(provider.as_str().as_bytes());
    k
}

/// A linked account's provider tokens, sealed, keyed as its [`SocialIdentityRecord`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SocialTokenRecord {
    pub sealed: Sealed,
}

impl Record for SocialTokenRecord {
    const KIND: Kind = Kind::SocialToken;
    const NAME: &'static str = "social provider tokens";
    const VERSION: u16 = 1;
}
impl TenantRecord for SocialTokenRecord {}
