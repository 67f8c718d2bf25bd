//! What single sign-on keeps in the store: the connections (with their per-organization
//! index), the sign-ins under way, the SAML replay cache, the links of identity provider
//! accounts to users (with their per-user index) and the exchange codes; and their keys.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tessera_storage::{sha256, Kind, Sealed};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

/// How long a sign-in may stay at the identity provider.
pub const SSO_STATE_TTL: Duration = Duration::minutes(10);

/// How long an exchange code may wait for the app's back end.
pub const SSO_EXCHANGE_TTL: Duration = Duration::seconds(60);

/// The most expired flows, codes and replay-cache entries of each kind one daily run
/// removes: anyone may begin flows (30 a minute per address), so a cap below what a day can
/// write would let them pile up.
pub const SSO_SWEEP_MAX: usize = 200_000;

/// An organization's connection to its identity provider, keyed by its id.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SsoConnectionRecord {
    pub id: Uuid,
    pub organization: Uuid,
    pub name: String,
    pub enabled: bool,
    pub protocol: SsoProtocol,
    /// A provider account without a user gets one (else the sign-in is refused).
    pub jit: bool,
    /// Where the provider's attributes (SAML) or claims (OpenID) are read from.
    pub mapping: AttributeMapping,
    /// Group -> organization role, first match wins; no match: `default_role`.
    pub group_roles: Vec<GroupRole>,
    pub default_role: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

tessera_storage::record!(
    SsoConnectionRecord in TenantRecord: Kind::SsoConnection, "single sign-on connection", version 1
);

/// The protocol of a connection and what it needs.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SsoProtocol {
    Saml(SamlSettings),
    Oidc(OidcSettings),
}

impl SsoProtocol {
    pub fn as_str(&self) -> &'static str {
        match self {
            SsoProtocol::Saml(_) => "saml",
            SsoProtocol::Oidc(_) => "oidc",
        }
    }
}

/// A SAML 2.0 identity provider, and this service provider's own key for it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SamlSettings {
    pub idp_entity_id: String,
    /// Its SingleSignOnService of the HTTP-Redirect binding.
    pub idp_sso_url: String,
    /// Its signing certificates (PEM).
    pub idp_certificates: Vec<String>,
    /// Where its metadata was read, when it was given by URL.
    #[serde(default)]
    pub metadata_url: Option<String>,
    /// The key assertions are encrypted to (PKCS#8 PEM), sealed.
    pub sp_key: Sealed,
    /// Its self-signed certificate (PEM), published in the service provider's metadata.
    pub sp_certificate: String,
    /// Unsolicited responses are taken (off by default).
    #[serde(default)]
    pub allow_idp_initiated: bool,
    /// Where an unsolicited sign-in goes (one of the tenant's allowed URLs).
    #[serde(default)]
    pub idp_initiated_redirect_uri: Option<String>,
}

/// An OpenID provider.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OidcSettings {
    pub issuer: String,
    pub client_id: String,
    /// Sealed.
    pub client_secret: Sealed,
    pub scopes: Vec<String>,
}

/// The names of the attributes (claims) a connection reads.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct AttributeMapping {
    /// Empty: the SAML NameID (OpenID: the `email` claim).
    pub email: String,
    pub given_name: String,
    pub family_name: String,
    pub groups: String,
}

/// One line of a connection's group mapping.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct GroupRole {
    pub group: String,
    pub role: String,
}

/// `organization id | connection id` -> (): an organization's connections.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct OrgConnectionIndex {}

tessera_storage::record!(
    OrgConnectionIndex in TenantRecord: Kind::OrgConnection, "organization connection", version 1
);

/// A sign-in under way at an identity provider, keyed by the SHA-256 of its `state`
/// (SAML: the RelayState): single use, [`SSO_STATE_TTL`], in the browser holding the
/// binding cookie.
#[derive(Clone, Serialize, Deserialize)]
pub struct SsoStateRecord {
    pub connection: Uuid,
    pub redirect_uri: String,
    /// OpenID: the nonce and PKCE verifier; SAML: the AuthnRequest's ID in `nonce`.
    pub nonce: String,
    pub pkce_verifier: String,
    pub binding_hash: [u8; 32],
    /// Begun on the authorization server's hosted sign-in page, whose return page
    /// `redirect_uri` is.
    #[serde(default)]
    pub hosted: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

impl std::fmt::Debug for SsoStateRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SsoStateRecord")
            .field("connection", &self.connection)
            .finish_non_exhaustive()
    }
}

tessera_storage::record!(
    SsoStateRecord in TenantRecord: Kind::SsoState, "single sign-on state", version 1
);

/// A SAML assertion ID seen, until it would no longer be accepted anyway.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SsoReplayRecord {
    #[serde(with = "time::serde::rfc3339")]
    pub until: OffsetDateTime,
}

tessera_storage::record!(
    SsoReplayRecord in TenantRecord: Kind::SsoReplay, "SAML assertion seen", version 1
);

/// `connection id | SHA-256 of the subject` -> the user it signs in as.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SsoIdentityRecord {
    pub user_id: Uuid,
    /// The provider's subject (SAML NameID, OpenID `sub`).
    pub subject: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub last_used_at: OffsetDateTime,
}

tessera_storage::record!(
    SsoIdentityRecord in TenantRecord: Kind::SsoIdentity, "single sign-on identity", version 1
);

/// `user id | connection id` -> the subject's hash: a user's links, for erasure and export.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UserSsoIndex {
    pub subject_hash: [u8; 32],
}

tessera_storage::record!(UserSsoIndex in TenantRecord: Kind::UserSso, "user single sign-on link", version 1);

/// A completed sign-in waiting for the app's back end, keyed by the SHA-256 of its code:
/// single use, [`SSO_EXCHANGE_TTL`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SsoExchangeRecord {
    pub user_id: Uuid,
    pub connection: Uuid,
    pub organization: Uuid,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

tessera_storage::record!(
    SsoExchangeRecord in TenantRecord: Kind::SsoExchange, "single sign-on exchange", version 1
);

/// `a | b` for two ids.
pub fn id_pair(a: Uuid, b: Uuid) -> Vec<u8> {
    let mut k = a.as_bytes().to_vec();
    k.extend_from_slice(b.as_bytes());
    k
}

/// `connection id | SHA-256 of the subject`.
pub fn identity_key(connection: Uuid, subject: &str) -> Vec<u8> {
    let mut k = connection.as_bytes().to_vec();
    k.extend_from_slice(&sha256(subject.as_bytes()));
    k
}

/// SHA-256 of `connection id | assertion ID`.
pub fn replay_key(connection: Uuid, assertion_id: &str) -> [u8; 32] {
    let mut m = connection.as_bytes().to_vec();
    m.extend_from_slice(assertion_id.as_bytes());
    sha256(&m)
}

/// The attributes an identity provider said of a user, by name.
pub type Attributes = BTreeMap<String, Vec<String>>;
