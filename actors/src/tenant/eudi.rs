//! EU digital identity wallet sign-in and age verification (OpenID4VP 1.0): the verifier's
//! identity, the transactions and what a verified presentation does.
//!
//! A transaction has three handles, each known to one party only:
//! - the **request id** (`<tenant>.<random>`) names it in the wallet URL, the QR page and the
//!   request object's URL, and (as the JWE `kid` of its encryption key) in the wallet's
//!   answer: anyone who sees the QR code knows it;
//! - the OpenID4VP **`state`** and **`nonce`** inside the signed request object, which the
//!   wallet echoes and signs;
//! - the client's **poll `state`** (the spec's correlation handle), kept as its SHA-256 and
//!   never put in the request object, so a result can be fetched by the client that began
//!   the transaction and by nobody who merely saw the QR code. Same-device flows also need
//!   the `response_code` the wallet's redirect hands the browser.
//!
//! The cryptography (JWE decryption, SD-JWT and mdoc checks, issuer keys and status lists)
//! runs off the actor, in the HTTP layer; the actor opens a transaction's key for it
//! ([`EudiCmd::Open`], which changes nothing: a forged answer cannot end a flow) and takes the
//! checked outcome exactly once ([`EudiCmd::Complete`]): a replayed answer finds the
//! transaction no longer pending.

pub mod memory;

use std::{net::IpAddr, sync::Arc};

use serde::{Deserialize, Serialize};
use tessera_eudi::jose::{EncryptionKey, SigningKey};
use tessera_storage::{ct_eq, random_token, sha256, Kind, Record, Sealed, TenantRecord};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;
use zeroize::Zeroizing;

use super::{
    audit::AuditContext,
    messages::LoginOutcome,
    records::UserRecord,
    sessions::Proof,
    settings::{AssuranceKind, EudiAgeConfig, EudiConfig},
    state::TenantState,
};
use crate::{error::TenantError, throttle::throttle_ip};

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
const VERIFIER_KEY: &[u8] = b"verifier";

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

impl Record for EudiVerifierRecord {
    const KIND: Kind = Kind::EudiVerifier;
    const NAME: &'static str = "wallet verifier identity";
    const VERSION: u16 = 1;
}
impl TenantRecord for EudiVerifierRecord {}

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

impl Record for EudiTxRecord {
    const KIND: Kind = Kind::EudiTx;
    const NAME: &'static str = "wallet transaction";
    const VERSION: u16 = 1;
}
impl TenantRecord for EudiTxRecord {}

/// SHA-256 of a client's poll `state` -> the transaction's key.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EudiPollIndex {
    pub tx_key: Vec<u8>,
}

impl Record for EudiPollIndex {
    const KIND: Kind = Kind::EudiPoll;
    const NAME: &'static str = "wallet poll handle";
    const VERSION: u16 = 1;
}
impl TenantRecord for EudiPollIndex {}

/// A wallet identity linked to a user: keyed by the keyed hash of issuer and identifier.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EudiSubjectRecord {
    pub user_id: Uuid,
    pub issuer: String,
    #[serde(with = "time::serde::rfc3339")]
    pub linked_at: OffsetDateTime,
}

impl Record for EudiSubjectRecord {
    const KIND: Kind = Kind::EudiSubject;
    const NAME: &'static str = "wallet subject";
    const VERSION: u16 = 1;
}
impl TenantRecord for EudiSubjectRecord {}

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

impl Record for EudiClaimsRecord {
    const KIND: Kind = Kind::EudiClaims;
    const NAME: &'static str = "wallet-verified claims";
    const VERSION: u16 = 1;
}
impl TenantRecord for EudiClaimsRecord {}

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

impl Record for AgeTokenRecord {
    const KIND: Kind = Kind::AgeToken;
    const NAME: &'static str = "age verification token";
    const VERSION: u16 = 1;
}
impl TenantRecord for AgeTokenRecord {}

/// Why a wallet command was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EudiRefusal {
    /// Wallet sign-in (or age verification) is off for the tenant.
    Disabled,
    /// No verifier certificate is set.
    VerifierMissing,
    /// The verifier certificate has expired.
    VerifierExpired,
    /// `redirect_uri` is not one of the tenant's URLs.
    RedirectNotAllowed,
    /// Unknown, finished or expired request id.
    RequestUnknown,
    /// The transaction was already answered.
    Replayed,
    /// The wallet's identity links to a blocked account.
    AccountBlocked,
    /// The wallet's address belongs to another account.
    EmailExists,
    /// The credential's assurance is below the tenant's floor.
    BelowFloor,
    /// A same-device result polled without its `response_code` (or with a wrong one).
    ResponseCodeMismatch,
    /// Minor protection: a new account for a wallet whose birth date is below the consent age
    /// (or undisclosed).
    AgeRequired,
}

impl EudiRefusal {
    pub fn as_str(self) -> &'static str {
        match self {
            EudiRefusal::Disabled => "disabled",
            EudiRefusal::VerifierMissing => "verifier_not_configured",
            EudiRefusal::VerifierExpired => "verifier_certificate_expired",
            EudiRefusal::RedirectNotAllowed => "redirect_not_allowed",
            EudiRefusal::RequestUnknown => "request_not_found",
            EudiRefusal::Replayed => "response_replayed",
            EudiRefusal::AccountBlocked => "account_blocked",
            EudiRefusal::EmailExists => "email_exists",
            EudiRefusal::BelowFloor => "assurance_below_floor",
            EudiRefusal::ResponseCodeMismatch => "response_code_mismatch",
            EudiRefusal::AgeRequired => "age_required",
        }
    }
}

/// A transaction as the request object is built from it.
#[derive(Clone, Debug)]
pub struct TxView {
    pub purpose: EudiPurpose,
    pub request_id: String,
    pub oid_state: String,
    pub nonce: String,
    /// The public half of the transaction's encryption key, `kid` = the request id.
    pub enc_jwk: serde_json::Value,
    pub expires_at: OffsetDateTime,
    pub same_device: bool,
    pub verifier: Arc<VerifierIdentity>,
    /// The tenant's wallet configuration (what the DCQL query asks for), and its purpose text.
    pub config: EudiConfig,
    pub purpose_text: Option<String>,
    /// For the QR page.
    pub tenant_name: String,
    pub default_locale: String,
}

/// What the response route needs to check an answer.
pub struct Opening {
    pub tx: TxView,
    pub enc_key: Zeroizing<Vec<u8>>,
    pub config: EudiConfig,
    pub age: EudiAgeConfig,
}

impl std::fmt::Debug for Opening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Opening(..)")
    }
}

/// A verified wallet identity.
#[derive(Clone)]
pub struct WalletIdentity {
    /// The trust anchor's `issuer`.
    pub issuer: String,
    /// What identifies the person at that issuer (hashed, never stored as is).
    pub identifier: String,
    /// The requested attributes the wallet disclosed.
    pub claims: serde_json::Map<String, serde_json::Value>,
    /// The lower of the anchor's and the credential's level.
    pub level: Eidas,
    /// An attested address, normalized by the actor.
    pub email: Option<String>,
}

/// Names and attributes stay out of logs.
impl std::fmt::Debug for WalletIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WalletIdentity")
            .field("issuer", &self.issuer)
            .field("level", &self.level)
            .finish_non_exhaustive()
    }
}

/// The checked outcome of a wallet's answer.
#[derive(Clone, Debug)]
pub enum WalletOutcome {
    Login(Box<WalletIdentity>),
    /// `Some(over)`: age established against [`AGE_THRESHOLD`]; `None`: not determinable.
    Age(Option<bool>),
}

#[derive(Clone)]
pub enum EudiCmd {
    /// The admin CLI sets the verifier's key (PKCS#8 DER) and chain (checked by the caller).
    SetVerifier {
        key_pkcs8: Zeroizing<Vec<u8>>,
        chain: Vec<Vec<u8>>,
        not_after: i64,
        development: bool,
    },
    /// The verifier identity, if set.
    Verifier,
    /// Begins a transaction (same-device when `redirect_uri` is given).
    Begin {
        purpose: EudiPurpose,
        redirect_uri: Option<String>,
        ip: IpAddr,
    },
    /// A live, pending transaction for its request object or its QR page.
    Request { request_id: String, ip: IpAddr },
    /// A live, pending transaction and its decryption key, for the wallet's answer.
    Open { request_id: String, ip: IpAddr },
    /// The wallet's error answer (the user declined, or it holds nothing that fits), which
    /// names its transaction by the OpenID4VP `state` alone.
    Declined { state: String, ip: IpAddr },
    /// The checked outcome of the answer: taken once.
    Complete {
        request_id: String,
        outcome: WalletOutcome,
    },
    /// The client's poll.
    Result {
        purpose: EudiPurpose,
        state: String,
        response_code: Option<String>,
    },
}

/// Keys and handles stay out of logs: the command's name only.
impl std::fmt::Debug for EudiCmd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EudiCmd::SetVerifier { .. } => "EudiCmd::SetVerifier",
            EudiCmd::Verifier => "EudiCmd::Verifier",
            EudiCmd::Begin { .. } => "EudiCmd::Begin",
            EudiCmd::Request { .. } => "EudiCmd::Request",
            EudiCmd::Open { .. } => "EudiCmd::Open",
            EudiCmd::Declined { .. } => "EudiCmd::Declined",
            EudiCmd::Complete { .. } => "EudiCmd::Complete",
            EudiCmd::Result { .. } => "EudiCmd::Result",
        })
    }
}

/// What a poll finds.
pub enum PollAnswer {
    Pending,
    Expired,
    NotFound,
    /// The sign-in, on the first poll after the wallet answered; `None` afterwards.
    Consumed(Option<Box<LoginOutcome>>),
    /// The token on the first poll after the wallet answered; `None` afterwards.
    Determined(Option<String>),
    Fallback,
}

pub enum EudiAnswer {
    VerifierSet(Arc<VerifierIdentity>),
    Verifier(Option<Arc<VerifierIdentity>>),
    Begun {
        tx: TxView,
        state: String,
    },
    Tx(TxView),
    Opened(Box<Opening>),
    /// Same-device: where the wallet sends the browser.
    Completed {
        redirect_uri: Option<String>,
    },
    Poll(PollAnswer),
}

/// Tokens, poll handles and sessions stay out of logs: the variant's name only.
impl std::fmt::Debug for PollAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PollAnswer::Pending => "Pending",
            PollAnswer::Expired => "Expired",
            PollAnswer::NotFound => "NotFound",
            PollAnswer::Consumed(_) => "Consumed",
            PollAnswer::Determined(_) => "Determined",
            PollAnswer::Fallback => "Fallback",
        })
    }
}

impl std::fmt::Debug for EudiAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EudiAnswer::VerifierSet(_) => "VerifierSet",
            EudiAnswer::Verifier(_) => "Verifier",
            EudiAnswer::Begun { .. } => "Begun",
            EudiAnswer::Tx(_) => "Tx",
            EudiAnswer::Opened(_) => "Opened",
            EudiAnswer::Completed { .. } => "Completed",
            EudiAnswer::Poll(_) => "Poll",
        })
    }
}

/// The request id's random part: the key of its transaction.
fn tx_key(request_id: &str, tenant: &str) -> Option<Vec<u8>> {
    let (t, random) = request_id.split_once('.')?;
    (t == tenant && !random.is_empty() && random.len() <= 64).then(|| random.as_bytes().to_vec())
}

/// The tenant id (simple form) a request id names.
pub fn tenant_of_request(request_id: &str) -> Option<&str> {
    request_id.split_once('.').map(|(t, _)| t)
}

/// The level a floor asks for: an eIDAS level, or an AAL (`aal2`, `AAL2` or `2`): AAL2 and
/// above need two factors, which eIDAS substantial and high are.
fn floor_level(kind: AssuranceKind, value: &str) -> Eidas {
    match kind {
        AssuranceKind::Eidas => Eidas::parse(value).unwrap_or(Eidas::High),
        AssuranceKind::Aal => {
            let v = value.to_ascii_lowercase();
            match v.trim_start_matches("aal").parse::<u8>() {
                Ok(n) if n >= 2 => Eidas::Substantial,
                _ => Eidas::Low,
            }
        }
    }
}

impl TenantState {
    /// Opens the stored verifier identity (at load and after the CLI sets one).
    pub(super) fn load_verifier(&self) -> Result<Option<Arc<VerifierIdentity>>, TenantError> {
        let Some(record) = self.cx.store.get::<EudiVerifierRecord>(VERIFIER_KEY)? else {
            return Ok(None);
        };
        let der = self
            .cx
            .master_key
            .open(&self.secret_aad(b"eudi-verifier"), &record.sealed_key)?;
        let key = SigningKey::from_pkcs8(&der)
            .map_err(|e| TenantError::Internal(format!("the verifier key: {e}")))?;
        let leaf = record
            .chain
            .first()
            .ok_or_else(|| TenantError::Internal("an empty verifier chain".into()))?;
        Ok(Some(Arc::new(VerifierIdentity {
            key,
            client_id: format!("x509_hash:{}", tessera_eudi::x509::x509_hash(leaf)),
            chain: record.chain,
            not_after: record.not_after,
            development: record.development,
        })))
    }

    pub fn eudi_cmd(
        &mut self,
        cmd: EudiCmd,
        ctx: &AuditContext,
    ) -> Result<EudiAnswer, TenantError> {
        let now = OffsetDateTime::now_utc();
        match cmd {
            EudiCmd::SetVerifier {
                key_pkcs8,
                chain,
                not_after,
                development,
            } => {
                let sealed_key = self
                    .cx
                    .master_key
                    .seal(&self.secret_aad(b"eudi-verifier"), &key_pkcs8)?;
                let record = EudiVerifierRecord {
                    sealed_key,
                    chain,
                    not_after,
                    development,
                    set_at: now,
                };
                let mut fx = self.effects();
                fx.batch.put(VERIFIER_KEY, &record)?;
                self.audit_into(
                    &mut fx.batch,
                    "eudi.verifier_set",
                    ctx,
                    serde_json::json!({ "development": development, "not_after": not_after }),
                )?;
                self.commit(fx)?;
                self.eudi.verifier = self.load_verifier()?;
                let v =
                    self.eudi.verifier.clone().ok_or_else(|| {
                        TenantError::Internal("the verifier was not stored".into())
                    })?;
                Ok(EudiAnswer::VerifierSet(v))
            }
            EudiCmd::Verifier => Ok(EudiAnswer::Verifier(self.eudi.verifier.clone())),
            EudiCmd::Begin {
                purpose,
                redirect_uri,
                ip,
            } => self.eudi_begin(purpose, redirect_uri, ip, now, None),
            EudiCmd::Request { request_id, ip } => {
                self.wallet_call(ip)?;
                let (_, tx) = self.live_tx(&request_id, now)?;
                Ok(EudiAnswer::Tx(self.tx_view(&tx)?))
            }
            EudiCmd::Open { request_id, ip } => {
                self.wallet_call(ip)?;
                let (_, tx) = self.live_tx(&request_id, now)?;
                let enc_key = self
                    .cx
                    .master_key
                    .open(&self.tx_aad(&tx.request_id), &tx.enc_key)?;
                Ok(EudiAnswer::Opened(Box::new(Opening {
                    tx: self.tx_view(&tx)?,
                    enc_key,
                    config: self.cx.settings.eudi.clone(),
                    age: self.cx.settings.eudi_age.clone(),
                })))
            }
            EudiCmd::Complete {
                request_id,
                outcome,
            } => self.eudi_complete(&request_id, outcome, ctx, now),
            EudiCmd::Declined { state, ip } => {
                self.wallet_call(ip)?;
                let request_id = state.rsplit_once('.').map_or("", |(r, _)| r).to_owned();
                let (_, tx) = self.live_tx(&request_id, now)?;
                if !ct_eq(tx.oid_state.as_bytes(), state.as_bytes()) {
                    return Err(TenantError::Eudi(EudiRefusal::RequestUnknown));
                }
                match tx.purpose {
                    // The app can ask for the date of birth now instead of waiting.
                    EudiPurpose::Age => {
                        self.eudi_complete(&request_id, WalletOutcome::Age(None), ctx, now)
                    }
                    // A sign-in stays open: the user may try again, with another wallet too.
                    EudiPurpose::Login => Ok(EudiAnswer::Completed { redirect_uri: None }),
                }
            }
            EudiCmd::Result {
                purpose,
                state,
                response_code,
            } => self.eudi_result(purpose, &state, response_code.as_deref(), ctx, now),
        }
    }

    /// Counts a call of a wallet-facing route from `ip` (they need no key, and each costs a
    /// signature or a key agreement).
    fn wallet_call(&mut self, ip: IpAddr) -> Result<(), TenantError> {
        self.eudi
            .wallet_calls
            .hit(&throttle_ip(ip), std::time::Instant::now())
            .map_err(|retry_after| TenantError::RateLimited { retry_after })
    }

    fn tx_aad(&self, request_id: &str) -> Vec<u8> {
        self.secret_aad(format!("eudi-tx/{request_id}").as_bytes())
    }

    fn tx_view(&self, tx: &EudiTxRecord) -> Result<TxView, TenantError> {
        let verifier = self
            .eudi
            .verifier
            .clone()
            .ok_or(TenantError::Eudi(EudiRefusal::VerifierMissing))?;
        let enc = self
            .cx
            .master_key
            .open(&self.tx_aad(&tx.request_id), &tx.enc_key)?;
        let enc_jwk = EncryptionKey::from_bytes(&enc)
            .and_then(|k| k.public_jwk(&tx.request_id))
            .map_err(|e| TenantError::Internal(format!("a transaction key: {e}")))?;
        Ok(TxView {
            purpose: tx.purpose,
            request_id: tx.request_id.clone(),
            oid_state: tx.oid_state.clone(),
            nonce: tx.nonce.clone(),
            enc_jwk,
            expires_at: tx.expires_at,
            same_device: tx.redirect_uri.is_some(),
            verifier,
            config: self.cx.settings.eudi.clone(),
            purpose_text: self.cx.settings.eudi.purpose.clone(),
            tenant_name: self.cx.info.name.clone(),
            default_locale: self.cx.settings.users.default_locale.clone(),
        })
    }

    /// A pending transaction the wallet may still answer.
    fn live_tx(
        &self,
        request_id: &str,
        now: OffsetDateTime,
    ) -> Result<(Vec<u8>, EudiTxRecord), TenantError> {
        let unknown = || TenantError::Eudi(EudiRefusal::RequestUnknown);
        let key = tx_key(
            request_id,
            &self.cx.store.tenant_id().0.simple().to_string(),
        )
        .ok_or_else(unknown)?;
        match self.cx.store.get::<EudiTxRecord>(&key)? {
            Some(tx) if tx.expires_at > now && matches!(tx.outcome, TxOutcome::Pending) => {
                Ok((key, tx))
            }
            Some(tx) if tx.expires_at > now => Err(TenantError::Eudi(EudiRefusal::Replayed)),
            _ => Err(unknown()),
        }
    }

    pub(super) fn eudi_begin(
        &mut self,
        purpose: EudiPurpose,
        redirect_uri: Option<String>,
        ip: IpAddr,
        now: OffsetDateTime,
        guardian_link: Option<[u8; 32]>,
    ) -> Result<EudiAnswer, TenantError> {
        let enabled = match purpose {
            EudiPurpose::Login => self.cx.settings.eudi.enabled,
            EudiPurpose::Age => self.cx.settings.eudi_age.age_verification_enabled,
        };
        if !enabled {
            return Err(TenantError::Eudi(EudiRefusal::Disabled));
        }
        match &self.eudi.verifier {
            None => return Err(TenantError::Eudi(EudiRefusal::VerifierMissing)),
            // Wallets refuse a request signed under an expired certificate.
            Some(v) if v.not_after <= now.unix_timestamp() => {
                return Err(TenantError::Eudi(EudiRefusal::VerifierExpired))
            }
            Some(_) => {}
        }
        if let Some(uri) = &redirect_uri {
            if !self.cx.settings.urls.allows(uri) {
                return Err(TenantError::Eudi(EudiRefusal::RedirectNotAllowed));
            }
        }
        self.eudi
            .begins
            .hit(&throttle_ip(ip), std::time::Instant::now())
            .map_err(|retry_after| TenantError::RateLimited { retry_after })?;
        let random = random_token(24);
        let request_id = format!("{}.{random}", self.cx.store.tenant_id().0.simple());
        let state = random_token(32);
        let key = EncryptionKey::generate()
            .map_err(|e| TenantError::Internal(format!("a transaction key: {e}")))?;
        let scalar = key
            .to_bytes()
            .map_err(|e| TenantError::Internal(format!("a transaction key: {e}")))?;
        let enc_key = self
            .cx
            .master_key
            .seal(&self.tx_aad(&request_id), &scalar)?;
        let poll_hash = sha256(state.as_bytes());
        let tx = EudiTxRecord {
            purpose,
            request_id: request_id.clone(),
            poll_hash,
            // The request id leads from an unencrypted error answer (which carries only
            // this) back to its transaction.
            oid_state: format!("{request_id}.{}", random_token(24)),
            nonce: random_token(24),
            enc_key,
            redirect_uri,
            response_code_hash: None,
            created_at: now,
            expires_at: now + self.cx.runtime.eudi_request_ttl,
            outcome: TxOutcome::Pending,
            guardian_link,
        };
        let mut fx = self.effects();
        fx.batch.put(random.as_bytes(), &tx)?;
        fx.batch.put(
            &poll_hash,
            &EudiPollIndex {
                tx_key: random.as_bytes().to_vec(),
            },
        )?;
        self.commit(fx)?;
        Ok(EudiAnswer::Begun {
            tx: self.tx_view(&tx)?,
            state,
        })
    }

    fn eudi_complete(
        &mut self,
        request_id: &str,
        outcome: WalletOutcome,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<EudiAnswer, TenantError> {
        let (key, mut tx) = self.live_tx(request_id, now)?;
        let mut fx = self.effects();
        let kind = match (tx.purpose, outcome) {
            (EudiPurpose::Login, WalletOutcome::Login(identity)) => {
                match self.wallet_user(&mut fx, &identity, ctx, now) {
                    Ok((user, acr)) => {
                        tx.outcome = TxOutcome::SignedIn { user_id: user, acr };
                        "eudi.login.verified"
                    }
                    Err(e) => return self.fail(fx, e),
                }
            }
            (EudiPurpose::Age, WalletOutcome::Age(Some(over))) => {
                let token = random_token(32);
                let sealed = self
                    .cx
                    .master_key
                    .seal(&self.tx_aad(&tx.request_id), token.as_bytes())?;
                let token_hash = sha256(token.as_bytes());
                fx.batch.put(
                    &token_hash,
                    &AgeTokenRecord {
                        over,
                        threshold: AGE_THRESHOLD,
                        verified_at: now,
                        expires_at: now + AGE_TOKEN_TTL,
                    },
                )?;
                tx.outcome = TxOutcome::Determined {
                    over,
                    token_hash,
                    sealed_token: Some(sealed),
                };
                if over {
                    if let Some(link) = tx.guardian_link {
                        self.mark_guardian_adult(&mut fx.batch, &link, now)?;
                    }
                }
                "eudi.age.determined"
            }
            (EudiPurpose::Age, _) => {
                tx.outcome = TxOutcome::Fallback;
                "eudi.age.fallback"
            }
            (EudiPurpose::Login, WalletOutcome::Age(_)) => {
                return Err(TenantError::Internal("an age outcome for a sign-in".into()))
            }
        };
        // Same-device: the browser comes back with a code the poll must show.
        let redirect = match &tx.redirect_uri {
            Some(uri) => {
                let code = random_token(24);
                tx.response_code_hash = Some(sha256(code.as_bytes()));
                let sep = if uri.contains('#') { '&' } else { '#' };
                Some(format!("{uri}{sep}response_code={code}"))
            }
            None => None,
        };
        tx.expires_at = tx.expires_at.max(now + RESULT_TTL);
        fx.batch.put(&key, &tx)?;
        self.audit_into(
            &mut fx.batch,
            kind,
            ctx,
            match &tx.outcome {
                TxOutcome::SignedIn { user_id, acr } => {
                    serde_json::json!({ "user_id": user_id, "acr": acr.acr() })
                }
                _ => serde_json::json!({}),
            },
        )?;
        self.commit(fx)?;
        Ok(EudiAnswer::Completed {
            redirect_uri: redirect,
        })
    }

    /// The user a verified wallet identity signs in as: the one linked to it; else the
    /// account of its attested address when automatic linking allows; else a new account.
    /// Answers the user and the `acr`.
    fn wallet_user(
        &mut self,
        fx: &mut super::effects::Effects,
        identity: &WalletIdentity,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<(Uuid, Eidas), TenantError> {
        let acr = identity.level;
        if let Some(floor) = &self.cx.settings.eudi.required_assurance_floor {
            if acr < floor_level(floor.kind, &floor.value) {
                return Err(TenantError::Eudi(EudiRefusal::BelowFloor));
            }
        }
        let mut subject_input = identity.issuer.as_bytes().to_vec();
        subject_input.push(0);
        subject_input.extend_from_slice(identity.identifier.as_bytes());
        let subject = self.cx.eudi_hasher.hash(&subject_input);
        let linked = match self.cx.store.get::<EudiSubjectRecord>(&subject)? {
            Some(l) => self.user(l.user_id)?,
            None => None,
        };
        let email = identity
            .email
            .as_deref()
            .and_then(crate::policy::normalize_email);
        // A wallet identity signs in only as the account it made: a PID's e-mail address is
        // the holder's say-so (issuers need not check it), so it never opens another account,
        // and an address an account holds is not taken over.
        let user: UserRecord = if let Some(user) = linked {
            user
        } else if match &email {
            Some(e) => self.user_by_email(e)?.is_some(),
            None => false,
        } {
            return Err(TenantError::Eudi(EudiRefusal::EmailExists));
        } else {
            if match &email {
                Some(e) => self.registration_blocked(fx, e, ctx)?,
                None => !self.cx.settings.email_domains.allowlist.is_empty(),
            } {
                return Err(TenantError::Eudi(EudiRefusal::EmailExists));
            }
            let mut user = UserRecord::blank(Uuid::now_v7(), now);
            // Minor protection: the PID's birth date must show the consent age.
            let born = identity.claims.get("birth_date").and_then(|v| v.as_str());
            if self.cx.settings.minors.minor_protection_enabled {
                if !born.is_some_and(|b| self.adult_for_consent(b, now)) {
                    return Err(TenantError::Eudi(EudiRefusal::AgeRequired));
                }
                user.date_of_birth = born
                    .map(|b| {
                        self.cx
                            .master_key
                            .seal(&self.user_aad(user.id, "date_of_birth"), b.as_bytes())
                    })
                    .transpose()?;
            }
            self.count_active(&mut fx.batch, None, now)?;
            // Kept unconfirmed: the account's confirmation rule applies as to any address.
            user.email = email.clone();
            user.email_verified = false;
            self.put_new_user(&mut fx.batch, &user)?;
            self.emit_user_created(&mut fx.batch, &user, "eudi_wallet")?;
            self.audit_into(
                &mut fx.batch,
                "auth.register",
                ctx,
                serde_json::json!({ "user_id": user.id, "method": "eudi_wallet" }),
            )?;
            user
        };
        if user.blocked_at.is_some() {
            return Err(TenantError::Eudi(EudiRefusal::AccountBlocked));
        }
        fx.batch.put(
            &subject,
            &EudiSubjectRecord {
                user_id: user.id,
                issuer: identity.issuer.clone(),
                linked_at: now,
            },
        )?;
        let mut subjects = self
            .cx
            .store
            .get::<EudiClaimsRecord>(user.id.as_bytes())?
            .map(|c| c.subjects)
            .unwrap_or_default();
        if !subjects.contains(&subject) {
            subjects.push(subject);
        }
        let plain = serde_json::to_vec(&identity.claims)
            .map_err(|e| TenantError::Internal(e.to_string()))?;
        let sealed = self
            .cx
            .master_key
            .seal(&self.user_aad(user.id, "eudi_claims"), &plain)?;
        fx.batch.put(
            user.id.as_bytes(),
            &EudiClaimsRecord {
                sealed,
                subjects,
                acr,
                issuer: identity.issuer.clone(),
                verified_at: now,
            },
        )?;
        Ok((user.id, acr))
    }

    fn eudi_result(
        &mut self,
        purpose: EudiPurpose,
        state: &str,
        response_code: Option<&str>,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<EudiAnswer, TenantError> {
        let poll = |a| Ok(EudiAnswer::Poll(a));
        let Some(ix) = self
            .cx
            .store
            .get::<EudiPollIndex>(&sha256(state.as_bytes()))?
        else {
            return poll(PollAnswer::NotFound);
        };
        let Some(mut tx) = self.cx.store.get::<EudiTxRecord>(&ix.tx_key)? else {
            return poll(PollAnswer::NotFound);
        };
        if tx.purpose != purpose {
            return poll(PollAnswer::NotFound);
        }
        if tx.expires_at <= now {
            return poll(PollAnswer::Expired);
        }
        if matches!(tx.outcome, TxOutcome::Pending) {
            return poll(PollAnswer::Pending);
        }
        if let Some(expected) = &tx.response_code_hash {
            let shown = response_code.map(|c| sha256(c.as_bytes()));
            if !shown.is_some_and(|s| ct_eq(&s, expected)) {
                return Err(TenantError::Eudi(EudiRefusal::ResponseCodeMismatch));
            }
        }
        let mut fx = self.effects();
        let answer = match std::mem::replace(&mut tx.outcome, TxOutcome::Consumed) {
            TxOutcome::SignedIn { user_id, acr } => {
                let Some(mut user) = self.user(user_id)? else {
                    return poll(PollAnswer::NotFound);
                };
                let high_enough = acr >= Eidas::Substantial;
                let mut proof = Proof::first_factor("pop", "eudi_wallet");
                proof.acr = Some(acr);
                proof.audit.insert("acr".into(), acr.acr().into());
                // eIDAS substantial and high are two-factor by definition (wallet key and
                // the holder's unlock): the session is AAL2 and no MFA step follows.
                let login = if high_enough {
                    proof.aal = 2;
                    self.signed_in(&mut fx, &mut user, proof, ctx, now)
                        .map(|grant| LoginOutcome::Signed {
                            grant,
                            enrollment_required_by: None,
                        })
                } else {
                    self.sign_in(&mut fx, &mut user, proof, ctx, now)
                        .map(|l| l.outcome)
                };
                match login {
                    Ok(l) => PollAnswer::Consumed(Some(Box::new(l))),
                    Err(e) => return self.fail(fx, e),
                }
            }
            TxOutcome::Consumed => PollAnswer::Consumed(None),
            TxOutcome::Determined {
                over,
                token_hash,
                sealed_token,
            } => {
                let token = match &sealed_token {
                    Some(sealed) => {
                        let plain = self
                            .cx
                            .master_key
                            .open(&self.tx_aad(&tx.request_id), sealed)?;
                        Some(String::from_utf8_lossy(&plain).into_owned())
                    }
                    None => None,
                };
                tx.outcome = TxOutcome::Determined {
                    over,
                    token_hash,
                    sealed_token: None,
                };
                PollAnswer::Determined(token)
            }
            TxOutcome::Fallback => {
                tx.outcome = TxOutcome::Fallback;
                PollAnswer::Fallback
            }
            TxOutcome::Pending => return poll(PollAnswer::Pending),
        };
        fx.batch.put(&ix.tx_key, &tx)?;
        self.commit(fx)?;
        poll(answer)
    }

    /// What wallets attested for the user (the data export): issuer, level, when, and the
    /// disclosed attributes; `null` for a user who never signed in with a wallet.
    pub(super) fn wallet_claims_of(&self, user: Uuid) -> Result<serde_json::Value, TenantError> {
        let Some(c) = self.cx.store.get::<EudiClaimsRecord>(user.as_bytes())? else {
            return Ok(serde_json::Value::Null);
        };
        let plain = self
            .cx
            .master_key
            .open(&self.user_aad(user, "eudi_claims"), &c.sealed)?;
        let claims: serde_json::Value =
            serde_json::from_slice(&plain).map_err(|e| TenantError::Internal(e.to_string()))?;
        Ok(serde_json::json!({
            "issuer": c.issuer,
            "acr": c.acr.acr(),
            "verified_at": c.verified_at
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            "claims": claims,
        }))
    }

    /// The records of the user's wallet identities: each link to the user and what wallets
    /// attested.
    pub(super) fn wallet_link_keys(&self, user: Uuid) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        let mut out = Vec::new();
        if let Some(c) = self.cx.store.get::<EudiClaimsRecord>(user.as_bytes())? {
            for subject in &c.subjects {
                let linked = self.cx.store.get::<EudiSubjectRecord>(subject)?;
                if linked.is_some_and(|l| l.user_id == user) {
                    out.push((Kind::EudiSubject, subject.to_vec()));
                }
            }
            out.push((Kind::EudiClaims, user.as_bytes().to_vec()));
        }
        Ok(out)
    }

    /// The wallet sign-ins that completed for any of `users` and wait for the client's poll
    /// (the transaction and its poll index: the poll then finds nothing).
    pub(super) fn wallet_sign_in_keys(
        &self,
        users: &std::collections::HashSet<Uuid>,
    ) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        let mut out = Vec::new();
        for item in self.cx.store.scan::<EudiTxRecord>(b"") {
            let (key, tx) = item?;
            if matches!(tx.outcome, TxOutcome::SignedIn { user_id, .. } if users.contains(&user_id))
            {
                out.push((Kind::EudiTx, key));
                out.push((Kind::EudiPoll, tx.poll_hash.to_vec()));
            }
        }
        Ok(out)
    }

    /// Deletes transactions past their result's keeping and unused age tokens past their
    /// expiry (at most `limit` of each); answers how many.
    pub(super) fn sweep_eudi(
        &self,
        batch: &mut tessera_storage::TenantBatch,
        now: OffsetDateTime,
        limit: usize,
    ) -> Result<usize, TenantError> {
        let mut n = self.sweep_kind::<EudiTxRecord>(
            limit,
            |_, tx| tx.expires_at + RESULT_TTL <= now,
            |k, tx| {
                batch.remove(Kind::EudiTx, k);
                batch.remove(Kind::EudiPoll, &tx.poll_hash);
            },
        )?;
        n += self.sweep_kind::<AgeTokenRecord>(
            limit,
            |_, t| t.expires_at <= now,
            |k, _| batch.remove(Kind::AgeToken, k),
        )?;
        Ok(n)
    }
}

#[cfg(test)]
mod tests;
