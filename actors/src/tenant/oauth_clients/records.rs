//! A registered OAuth client as stored: its type, the secret method it registered, its
//! URIs, scopes and verification, and the check of its secret.

use serde::{Deserialize, Serialize};
use tessera_storage::{ct_eq, sha256, Kind};
use time::OffsetDateTime;

use crate::tenant::keys::KeyAlg;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientType {
    /// Runs where a secret cannot be kept (a browser, a phone): PKCE only.
    Public,
    /// Runs on a server: authenticates at the token endpoint with its secret.
    Confidential,
}

impl ClientType {
    pub fn as_str(self) -> &'static str {
        match self {
            ClientType::Public => "public",
            ClientType::Confidential => "confidential",
        }
    }
}

/// How a client authenticates at the token endpoint (RFC 7591 names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenAuthMethod {
    ClientSecretBasic,
    ClientSecretPost,
    None,
}

impl TokenAuthMethod {
    pub fn parse(s: &str) -> Option<TokenAuthMethod> {
        match s {
            "client_secret_basic" => Some(TokenAuthMethod::ClientSecretBasic),
            "client_secret_post" => Some(TokenAuthMethod::ClientSecretPost),
            "none" => Some(TokenAuthMethod::None),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TokenAuthMethod::ClientSecretBasic => "client_secret_basic",
            TokenAuthMethod::ClientSecretPost => "client_secret_post",
            TokenAuthMethod::None => "none",
        }
    }
}

/// What a client registers and its owners may change; its record carries it flattened.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OAuthClientProfile {
    pub name: String,
    pub description: Option<String>,
    pub logo_url: Option<String>,
    pub client_type: ClientType,
    /// The one method a confidential client registered with; `None`: registered without one,
    /// so either secret method (`client_secret_basic` or `client_secret_post`) is taken.
    pub token_endpoint_auth_method: Option<TokenAuthMethod>,
    /// Compared byte for byte with an authorization request's `redirect_uri`.
    pub redirect_uris: Vec<String>,
    /// Where RP-initiated logout may send the browser back to.
    #[serde(default)]
    pub post_logout_redirect_uris: Vec<String>,
    pub allowed_scopes: Vec<String>,
    /// The tenant's own app: its consent screen says so.
    pub first_party: bool,
}

/// A registered client, keyed by its client id.
#[derive(Clone, Serialize, Deserialize)]
pub struct OAuthClientRecord {
    pub client_id: String,
    #[serde(flatten)]
    pub profile: OAuthClientProfile,
    /// Set by the operator (`tessera admin oauth-client attest`) for a third party it checked.
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub attested_at: Option<OffsetDateTime>,
    /// SHA-256 of the secret; `None` for a public client.
    pub secret_hash: Option<[u8; 32]>,
    /// The secret's first 12 characters, to tell secrets apart.
    pub secret_prefix: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub secret_rotated_at: Option<OffsetDateTime>,
    /// Registered by itself (RFC 7591), not by an owner.
    #[serde(default)]
    pub dynamic: bool,
    /// The algorithm of the client's ID tokens (OpenID Connect's `id_token_signed_response_alg`);
    /// `None` for clients registered before RS256 was offered, whose ID tokens stay ES256.
    #[serde(default)]
    pub id_token_signed_response_alg: Option<KeyAlg>,
}

impl std::fmt::Debug for OAuthClientRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClientRecord")
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

tessera_storage::record!(
    OAuthClientRecord in TenantRecord: Kind::OAuthClient, "oauth_client", version 1
);

impl OAuthClientRecord {
    /// The algorithm its ID tokens are signed with.
    pub fn id_token_alg(&self) -> KeyAlg {
        self.id_token_signed_response_alg.unwrap_or(KeyAlg::ES256)
    }

    /// What the consent screen says of the client (spec 2.12 `verification`).
    pub fn verification(&self) -> &'static str {
        if self.profile.first_party {
            "first_party"
        } else if self.attested_at.is_some() {
            "attested"
        } else {
            "unverified"
        }
    }

    /// Whether a confidential client may present its secret by `method`: the one it
    /// registered with, else either secret method.
    pub fn takes_method(&self, method: TokenAuthMethod) -> bool {
        match self.profile.token_endpoint_auth_method {
            Some(registered) => method == registered,
            None => matches!(
                method,
                TokenAuthMethod::ClientSecretBasic | TokenAuthMethod::ClientSecretPost
            ),
        }
    }

    /// Whether `secret` is this client's secret (constant time).
    pub fn secret_matches(&self, secret: &str) -> bool {
        self.secret_hash
            .is_some_and(|h| ct_eq(&h, &sha256(secret.as_bytes())))
    }
}
