//! What the authorization server keeps: a grant's part of its session, the consents per
//! (user, client), and the authorization codes, kept past their use to catch a second one.

use serde::{Deserialize, Serialize};
use tessera_storage::Kind;
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

/// How long after its expiry an exchanged code is still recognised when presented again.
pub const CODE_REUSE_WATCH: Duration = Duration::minutes(10);

/// What a grant session carries besides the session itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OAuthGrant {
    pub client_id: String,
    /// The scopes granted, in the order asked.
    pub scopes: Vec<String>,
    /// The RFC 8707 resource the tokens are for (their `aud`).
    pub resource: Option<String>,
    /// When the user last signed in (the ID token's `auth_time`).
    #[serde(with = "time::serde::rfc3339")]
    pub auth_time: OffsetDateTime,
    /// The user's sign-in session the authorization came from (the ID token's `sid`, which
    /// RP-initiated logout ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sign_in_session: Option<Uuid>,
}

impl OAuthGrant {
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

/// What a user has granted a client, keyed `user id | client id`: for each resource (`""` for
/// requests that name none) the scopes granted for it. A scope granted for one resource is
/// not granted for another.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConsentRecord {
    pub user_id: Uuid,
    pub client_id: String,
    /// Resource URI (or `""`) -> its scopes, sorted, no duplicates.
    pub grants: std::collections::BTreeMap<String, Vec<String>>,
    #[serde(with = "time::serde::rfc3339")]
    pub granted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl ConsentRecord {
    /// The scopes granted for `resource` (none: the requests that name no resource).
    pub fn scopes_for(&self, resource: Option<&str>) -> &[String] {
        self.grants
            .get(resource.unwrap_or(""))
            .map_or(&[], Vec::as_slice)
    }

    /// Every scope granted, for any resource.
    pub fn all_scopes(&self) -> Vec<String> {
        let all: Vec<String> = self.grants.values().flatten().cloned().collect();
        sorted_union(&all, &[])
    }

    /// The resources named in a grant.
    pub fn resources(&self) -> Vec<String> {
        self.grants
            .keys()
            .filter(|k| !k.is_empty())
            .cloned()
            .collect()
    }
}

tessera_storage::record!(
    ConsentRecord in TenantRecord: Kind::OAuthConsent, "oauth_consent", version 1
);

/// Whether a client id is an agent's (`agt_...`): its consents are agent consents.
pub fn is_agent_client(client_id: &str) -> bool {
    client_id.starts_with("agt_")
}

pub(in crate::tenant) fn consent_key(user: Uuid, client_id: &str) -> Vec<u8> {
    let mut k = user.as_bytes().to_vec();
    k.extend_from_slice(client_id.as_bytes());
    k
}

/// A code that was exchanged: when, and the grant it opened.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExchangedCode {
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    pub grant: Uuid,
}

/// An authorization code, keyed by its SHA-256.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AuthCodeRecord {
    pub client_id: String,
    pub redirect_uri: String,
    /// The PKCE S256 challenge the exchange's verifier must match.
    pub code_challenge: String,
    pub user_id: Uuid,
    pub scopes: Vec<String>,
    pub resource: Option<String>,
    pub nonce: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub auth_time: OffsetDateTime,
    pub aal: u8,
    pub amr: Vec<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    #[serde(default)]
    pub exchanged: Option<ExchangedCode>,
    /// The sign-in session that authorized.
    #[serde(default)]
    pub sign_in_session: Option<Uuid>,
    /// The organization the grant's tokens are for.
    #[serde(default)]
    pub organization: Option<Uuid>,
}

tessera_storage::record!(AuthCodeRecord in TenantRecord: Kind::OAuthCode, "oauth_code", version 1);

pub(super) fn sorted_union(a: &[String], b: &[String]) -> Vec<String> {
    let mut out: Vec<String> = a.iter().chain(b).cloned().collect();
    out.sort();
    out.dedup();
    out
}
