//! What social sign-in keeps in the store: flows under way, link tickets, exchange records,
//! linked accounts with their per-user index, kept provider tokens; and their keys.

use serde::{Deserialize, Serialize};
use tessera_storage::{Kind, Sealed};
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

tessera_storage::record!(
    SocialStateRecord in TenantRecord: Kind::SocialState, "social sign-in state", version 1
);

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

tessera_storage::record!(
    SocialLinkTicketRecord in TenantRecord: Kind::SocialLinkTicket, "social link ticket", version 1
);

/// A callback's outcome waiting for the exchange, keyed by the exchange token's `jti`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SocialExchangeRecord {
    pub user_id: Uuid,
    pub provider: Provider,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

tessera_storage::record!(
    SocialExchangeRecord in TenantRecord: Kind::SocialExchange, "social exchange", version 1
);

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

tessera_storage::record!(
    SocialIdentityRecord in TenantRecord: Kind::SocialIdentity, "social identity", version 1
);

/// `user id | provider` -> the subject: a user's linked provider accounts.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct UserIdentityIndex {
    pub subject: String,
}

tessera_storage::record!(
    UserIdentityIndex in TenantRecord: Kind::UserIdentity, "user identity index", version 1
);

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

tessera_storage::record!(
    SocialTokenRecord in TenantRecord: Kind::SocialToken, "social provider tokens", version 1
);
