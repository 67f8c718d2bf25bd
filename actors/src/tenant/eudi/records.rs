//! What wallet sign-in and age verification keep: the verifier's identity (its key
//! sealed), the transactions with their poll index, the wallet identities linked to users and
//! their attested claims, and the age tokens registration spends; their timings and keys.

use serde::{Deserialize, Serialize};
use tessera_eudi::jose::SigningKey;
use tessera_storage::{Kind, Sealed};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

/// How long a wallet has to answer by default (the request object's `exp` too;
/// `eudi.request_ttl_secs`).
pub const TX_TTL: Duration = Duration::minutes(5);
/// How long a finished transaction's outcome is kept for the poll (then `not_found`).
pub const RESULT_TTL: Duration = Duration::minutes(10);
/// How long an age-verification token is good for registering.
pub const AGE_TOKEN_TTL: Duration = Duration::minutes(30);
/// Transactions one client address may begin per minute.
pub const BEGINS_PER_MINUTE: u32 = 30;
/// Calls of the wallets' routes (request object, answer, QR page) one client address may
/// make per minute.
pub const WALLET_CALLS_PER_MINUTE: u32 = 120;
/// The age the age verification establishes.
pub const AGE_THRESHOLD: u8 = 18;
pub(super) const VERIFIER_KEY: &[u8] = b"verifier";

/// An eIDAS level of assurance, as a wallet sign-in's `acr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Eidas {
    #[serde(rename = "eidas_low")]
    Low,
    #[serde(rename = "eidas_substantial")]
    Substantial,
    #[serde(rename = "eidas_high")]
    High,
}

impl Eidas {
    /// `low`, `substantial` or `high` (a trust anchor's `maxAssuranceLevel`); anything else
    /// is none.
    pub fn parse(level: &str) -> Option<Eidas> {
        match level {
            "low" => Some(Eidas::Low),
            "substantial" => Some(Eidas::Substantial),
            "high" => Some(Eidas::High),
            _ => None,
        }
    }

    /// The `acr` claim value.
    pub fn acr(self) -> &'static str {
        match self {
            Eidas::Low => "eidas_low",
            Eidas::Substantial => "eidas_substantial",
            Eidas::High => "eidas_high",
        }
    }
}

/// What a transaction is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EudiPurpose {
    Login,
    Age,
}

/// The tenant's verifier identity: the key that signs request objects and its certificate
/// chain (leaf first, without the root).
#[derive(Clone, Serialize, Deserialize)]
pub struct EudiVerifierRecord {
    pub sealed_key: Sealed,
    pub chain: Vec<Vec<u8>>,
    /// The leaf's notAfter, Unix seconds.
    pub not_after: i64,
    /// Made by `eudi dev-cert`: no real wallet trusts it.
    pub development: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub set_at: OffsetDateTime,
}

impl std::fmt::Debug for EudiVerifierRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EudiVerifierRecord")
            .field("not_after", &self.not_after)
            .field("development", &self.development)
            .finish_non_exhaustive()
    }
}

tessera_storage::record!(
    EudiVerifierRecord in TenantRecord: Kind::EudiVerifier, "wallet verifier identity", version 1
);

/// The verifier identity, opened, as the request objects are signed with it.
pub struct VerifierIdentity {
    pub key: SigningKey,
    pub chain: Vec<Vec<u8>>,
    /// `x509_hash:<base64url SHA-256 of the leaf>` (HAIP).
    pub client_id: String,
    pub not_after: i64,
    pub development: bool,
}

impl std::fmt::Debug for VerifierIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifierIdentity")
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// Where a transaction stands.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum TxOutcome {
    Pending,
    /// A wallet sign-in verified: the session opens when the client polls.
    SignedIn {
        user_id: Uuid,
        acr: Eidas,
    },
    /// The poll took the session.
    Consumed,
    /// Age established (or not: `over` false means under the threshold).
    Determined {
        over: bool,
        token_hash: [u8; 32],
        /// The token itself, sealed, handed out on the first poll only.
        sealed_token: Option<Sealed>,
    },
    /// Nothing usable came back: the client asks for the date of birth instead.
    Fallback,
}

/// One wallet transaction, keyed by its request id's random part.
#[derive(Clone, Serialize, Deserialize)]
pub struct EudiTxRecord {
    pub purpose: EudiPurpose,
    pub request_id: String,
    /// SHA-256 of the client's poll `state` (the key of its index entry).
    pub poll_hash: [u8; 32],
    pub oid_state: String,
    pub nonce: String,
    /// The per-transaction ECDH private key, sealed.
    pub enc_key: Sealed,
    /// Same-device: where the wallet sends the browser back (one of the tenant's URLs).
    pub redirect_uri: Option<String>,
    /// Same-device: SHA-256 of the `response_code` the redirect carries.
    pub response_code_hash: Option<[u8; 32]>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    pub outcome: TxOutcome,
    /// An age check a guardian started from a consent link: the SHA-256 of that link's token,
    /// which a proof of adulthood marks.
    #[serde(default)]
    pub guardian_link: Option<[u8; 32]>,
}

impl std::fmt::Debug for EudiTxRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EudiTxRecord")
            .field("purpose", &self.purpose)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

tessera_storage::record!(
    EudiTxRecord in TenantRecord: Kind::EudiTx, "wallet transaction", version 1
);

/// SHA-256 of a client's poll `state` -> the transaction's key.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EudiPollIndex {
    pub tx_key: Vec<u8>,
}

tessera_storage::record!(
    EudiPollIndex in TenantRecord: Kind::EudiPoll, "wallet poll handle", version 1
);

/// A wallet identity linked to a user: keyed by the keyed hash of issuer and identifier.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EudiSubjectRecord {
    pub user_id: Uuid,
    pub issuer: String,
    #[serde(with = "time::serde::rfc3339")]
    pub linked_at: OffsetDateTime,
}

tessera_storage::record!(
    EudiSubjectRecord in TenantRecord: Kind::EudiSubject, "wallet subject", version 1
);

/// The attributes a wallet attested for a user, sealed (keyed by the user id).
#[derive(Clone, Serialize, Deserialize)]
pub struct EudiClaimsRecord {
    pub sealed: Sealed,
    /// The wallet subjects linked to the user (so erasing the user unlinks them).
    pub subjects: Vec<[u8; 32]>,
    pub acr: Eidas,
    pub issuer: String,
    #[serde(with = "time::serde::rfc3339")]
    pub verified_at: OffsetDateTime,
}

impl std::fmt::Debug for EudiClaimsRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EudiClaimsRecord")
            .field("acr", &self.acr)
            .finish_non_exhaustive()
    }
}

tessera_storage::record!(
    EudiClaimsRecord in TenantRecord: Kind::EudiClaims, "wallet-verified claims", version 1
);

/// An age-verification token not yet used (keyed by its SHA-256).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AgeTokenRecord {
    pub over: bool,
    pub threshold: u8,
    #[serde(with = "time::serde::rfc3339")]
    pub verified_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

tessera_storage::record!(
    AgeTokenRecord in TenantRecord: Kind::AgeToken, "age verification token", version 1
);

/// The request id's random part: the key of its transaction.
pub(super) fn tx_key(request_id: &str, tenant: &str) -> Option<Vec<u8>> {
    let (t, random) = request_id.split_once('.')?;
    (t == tenant && !random.is_empty() && random.len() <= 64).then(|| random.as_bytes().to_vec())
}

/// The tenant id (simple form) a request id names.
pub fn tenant_of_request(request_id: &str) -> Option<&str> {
    request_id.split_once('.').map(|(t, _)| t)
}
