//! Single-use challenges: the MFA login challenge, the MFA enrolment token, the step-up
//! challenges (TOTP, e-mail OTP, magic link) and issued step-up tokens.
//!
//! Every challenge is one record keyed `slot (16 bytes) | purpose (1 byte)`. Session-bound
//! challenges use the session id as their slot, so a session holds at most one of each kind and
//! a new one replaces the old; the others get a fresh random slot. A challenge's secret is
//! stored only as a hash. The token handed out is `base64url(tenant id | slot | purpose |
//! secret)`: it names its tenant (another tenant's token is answered 404 without a lookup) and
//! its record (no index by hash is needed).
//!
//! Invariant: a challenge is checked and consumed inside one actor message, and its removal is
//! in the same batch as whatever the success writes, so of any number of concurrent uses
//! exactly one wins and a crash can never bring a consumed challenge back.
//!
//! A typed code (e-mailed or texted) that was just consumed is remembered, as its keyed hash,
//! until it would have expired (`ConsumedCodes`, with the throttles): the same code sent again (a double
//! submit, a retry after a lost answer, twenty tabs at once) is answered as a used code, never
//! counted as a wrong guess, so it cannot lock the address out.
//!
//! Typed codes (e-mailed and texted login codes, phone confirmation, e-mailed step-up) are all
//! checked by [`TenantCtx::check_code`] and consumed by [`TenantCtx::consume_code`]; each
//! caller decides only what a wrong or missing code counts against. Links and tokens carry
//! their record's key ([`TenantCtx::find_challenge`]).
//!
//! Which record a mailed single-use secret gets: a `LinkTokenRecord` (keyed by the token's
//! SHA-256, one per user and purpose, held on the user record) for the account links that
//! must die with the account's password epoch or be replaced per account (e-mail verification,
//! password reset); a `ChallengeRecord` for everything that signs in or steps up (login links
//! and codes, step-up, MFA), because those need the failure count, the OAuth resume, the
//! session binding and the sweep of expired ones.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use tessera_storage::{ct_eq, sha256, Kind, TenantBatch};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::records::UserRecord;
use crate::error::TenantError;

/// RFC 7636 S256: `BASE64URL(SHA256(ASCII(code_verifier)))` (the PKCE of OAuth codes, of the
/// hosted login link's code and of social sign-in).
pub fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(sha256(verifier.as_bytes()))
}
pub use crate::throttle::ConsumedCodes;

pub use super::messages::{OAuthParams, OAuthResume};
use crate::tenant::ctx::TenantCtx;

/// Wrong answers one challenge takes before it dies.
pub const MAX_CHALLENGE_FAILURES: u32 = 5;
/// How a typed code compares with the code kept for it.
pub(super) enum CodeVerdict {
    /// No live code there: none, one the caller does not accept, or an expired one.
    /// `resubmitted`: the code just consumed from there, sent again before it would have
    /// expired (no guess).
    Missing { resubmitted: bool },
    /// A live code that this one does not match; `resubmitted` as for `Missing`.
    Wrong { found: Found, resubmitted: bool },
    /// The code matches (not consumed yet: see [`TenantCtx::consume_code`]).
    Right(Found),
}

/// What a challenge is for. The discriminant is the key's last byte and the token's 33rd.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum Purpose {
    /// A password login of an MFA user waiting for its second factor.
    MfaLogin = 1,
    /// A login past the MFA grace period: allows MFA setup only.
    MfaEnrollment = 2,
    /// The gate's `mfa_challenge_token`: a TOTP step-up of one session.
    StepUpTotp = 3,
    /// An e-mailed one-time code of one session.
    StepUpEmailOtp = 4,
    /// An e-mailed step-up link of one session.
    StepUpMagicLink = 5,
    /// An issued step-up token (in its session's slot), until a gated request consumes it.
    StepUpToken = 6,
    /// A passwordless login link (in the user's slot).
    LoginMagicLink = 7,
    /// A passwordless login code (in the address's slot: the account may not exist yet).
    LoginEmailOtp = 8,
    /// A texted login code (in the number's slot).
    LoginSmsOtp = 9,
    /// A texted code confirming a signed-in user's number (in the user's slot).
    PhoneVerify = 10,
    /// The one-minute code the hosted login-link page hands the app (in a fresh slot),
    /// exchanged with its PKCE verifier for the token pair.
    HostedCode = 11,
}

impl Purpose {
    fn from_byte(b: u8) -> Option<Self> {
        Some(match b {
            1 => Purpose::MfaLogin,
            2 => Purpose::MfaEnrollment,
            3 => Purpose::StepUpTotp,
            4 => Purpose::StepUpEmailOtp,
            5 => Purpose::StepUpMagicLink,
            6 => Purpose::StepUpToken,
            7 => Purpose::LoginMagicLink,
            8 => Purpose::LoginEmailOtp,
            9 => Purpose::LoginSmsOtp,
            10 => Purpose::PhoneVerify,
            11 => Purpose::HostedCode,
            _ => return None,
        })
    }
}

/// A pending challenge.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChallengeRecord {
    pub purpose: Purpose,
    pub user_id: Uuid,
    /// The session the challenge is bound to, if any.
    pub session_id: Option<Uuid>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    /// Hex SHA-256 of the token's secret, or the keyed hash of an e-mailed code; empty for a
    /// step-up token (its signature is the proof).
    pub secret_hash: String,
    pub failures: u32,
    /// The user's password epoch when issued: a password change kills an MFA login challenge.
    pub epoch: u32,
    /// For a step-up token: the assurance it grants.
    #[serde(default)]
    pub aal: u8,
    /// For a step-up token: the methods it proves; for an MFA login challenge: the first
    /// factor's.
    #[serde(default)]
    pub amr: Vec<String>,
    /// For a passwordless code: the address it was sent to (normalised).
    #[serde(default)]
    pub email: Option<String>,
    /// For a passwordless challenge started by an OAuth authorize flow: where to resume.
    #[serde(default)]
    pub oauth: Option<OAuthResume>,
    /// For a texted code: the number (E.164) it was sent to.
    #[serde(default)]
    pub phone: Option<String>,
    /// For a mailed link: where the hosted page sends the user afterwards.
    #[serde(default)]
    pub redirect_to: Option<String>,
    /// For a login link (and the hosted page's code it turns into): the PKCE S256 challenge
    /// the exchange's `code_verifier` must match.
    #[serde(default)]
    pub code_challenge: Option<String>,
    /// For an MFA login challenge: the known device the password step presented (its count,
    /// not the account's, holds the second step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<Uuid>,
    /// For an MFA login challenge after a single sign-on: the organization and connection
    /// the session will work in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sso: Option<(Uuid, Uuid)>,
}

impl ChallengeRecord {
    /// A challenge for `user` (and `session`), living `ttl` from `now`; no secret yet.
    pub fn new(
        purpose: Purpose,
        user: &UserRecord,
        session_id: Option<Uuid>,
        ttl: Duration,
        now: OffsetDateTime,
    ) -> Self {
        ChallengeRecord {
            purpose,
            user_id: user.id,
            session_id,
            created_at: now,
            expires_at: now + ttl,
            secret_hash: String::new(),
            failures: 0,
            epoch: user.password_epoch,
            aal: 0,
            amr: Vec::new(),
            email: None,
            oauth: None,
            phone: None,
            redirect_to: None,
            code_challenge: None,
            device: None,
            sso: None,
        }
    }
}

tessera_storage::record!(ChallengeRecord in TenantRecord: Kind::Challenge, "challenge", version 1);

pub fn challenge_key(slot: Uuid, purpose: Purpose) -> Vec<u8> {
    let mut k = slot.as_bytes().to_vec();
    k.push(purpose as u8);
    k
}

const TOKEN_LEN: usize = 16 + 16 + 1 + 32;

/// The tenant a mailed token names: challenge tokens and link tokens both begin with the
/// tenant's id (see `TenantCtx::link_token`), which is how the hosted pages, served for
/// every tenant at one address, find the tenant without a key. `None` for anything shorter
/// or not base64url; the tenant's actor still checks the rest.
pub fn tenant_of_token(token: &str) -> Option<Uuid> {
    if token.len() > 128 {
        return None;
    }
    let raw = URL_SAFE_NO_PAD.decode(token.trim()).ok()?;
    if raw.len() < 48 {
        return None;
    }
    Uuid::from_slice(&raw[..16]).ok()
}

/// What a presented token turned out to be.
enum Presented {
    Ours {
        slot: Uuid,
        purpose: Purpose,
        secret: [u8; 32],
    },
    /// Well-formed, but another tenant's.
    Foreign,
    Malformed,
}

fn parse_token(token: &str, tenant: &[u8; 16]) -> Presented {
    if token.len() > 128 {
        return Presented::Malformed;
    }
    let Ok(raw) = URL_SAFE_NO_PAD.decode(token.trim()) else {
        return Presented::Malformed;
    };
    if raw.len() != TOKEN_LEN {
        return Presented::Malformed;
    }
    let (Ok(slot), Some(purpose), Ok(secret)) = (
        Uuid::from_slice(&raw[16..32]),
        Purpose::from_byte(raw[32]),
        <[u8; 32]>::try_from(&raw[33..]),
    ) else {
        return Presented::Malformed;
    };
    if raw[..16] != tenant[..] {
        return Presented::Foreign;
    }
    Presented::Ours {
        slot,
        purpose,
        secret,
    }
}

/// A live challenge found for a token, with its key.
pub(super) struct Found {
    pub key: Vec<u8>,
    pub record: ChallengeRecord,
}

impl TenantCtx {
    /// Writes a new challenge into `batch` and answers its token (whose secret only the
    /// caller ever sees). A session-bound challenge takes the session's slot, any other the
    /// user's, replacing the one there: a session or user holds at most one of each kind, so
    /// the records cannot pile up however often they are issued.
    pub(super) fn issue_challenge(
        &self,
        batch: &mut TenantBatch,
        purpose: Purpose,
        user: &UserRecord,
        session_id: Option<Uuid>,
        ttl: Duration,
        now: OffsetDateTime,
    ) -> Result<String, TenantError> {
        let record = ChallengeRecord::new(purpose, user, session_id, ttl, now);
        self.store_challenge(batch, session_id.unwrap_or(user.id), record)
    }

    /// Gives `record` a fresh secret, writes it into `slot` and answers its token.
    pub(super) fn store_challenge(
        &self,
        batch: &mut TenantBatch,
        slot: Uuid,
        mut record: ChallengeRecord,
    ) -> Result<String, TenantError> {
        let mut secret = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut secret);
        record.secret_hash = hex::encode(sha256(&secret));
        batch.put(&challenge_key(slot, record.purpose), &record)?;
        let mut raw = Vec::with_capacity(TOKEN_LEN);
        raw.extend_from_slice(self.store.tenant_id().as_bytes());
        raw.extend_from_slice(slot.as_bytes());
        raw.push(record.purpose as u8);
        raw.extend_from_slice(&secret);
        Ok(URL_SAFE_NO_PAD.encode(raw))
    }

    /// The live challenge a token names, if its purpose is one of `purposes` and its secret
    /// matches. Another tenant's token is `NotFound`; anything else that fails is
    /// `InvalidChallenge`. The secret is compared in constant time, and a malformed token or
    /// a missing record is compared against a dummy, so the time taken tells nothing.
    pub(super) fn find_challenge(
        &self,
        token: &str,
        purposes: &[Purpose],
        now: OffsetDateTime,
    ) -> Result<Found, TenantError> {
        let (slot, purpose, secret) = match parse_token(token, self.store.tenant_id().as_bytes()) {
            Presented::Ours {
                slot,
                purpose,
                secret,
            } => (slot, purpose, secret),
            Presented::Foreign => return Err(TenantError::NotFound),
            Presented::Malformed => {
                let _ = ct_eq(&sha256(token.as_bytes()), &[0u8; 32]);
                return Err(TenantError::InvalidChallenge);
            }
        };
        let key = challenge_key(slot, purpose);
        let record = if purposes.contains(&purpose) {
            self.store.get::<ChallengeRecord>(&key)?
        } else {
            None
        };
        let presented = hex::encode(sha256(&secret));
        let stored = record
            .as_ref()
            .map_or_else(|| "0".repeat(64), |r| r.secret_hash.clone());
        let matches = ct_eq(presented.as_bytes(), stored.as_bytes());
        match record {
            Some(r) if matches && r.expires_at > now && r.purpose == purpose => {
                Ok(Found { key, record: r })
            }
            _ => Err(TenantError::InvalidChallenge),
        }
    }

    /// The keyed hash of a typed code kept in `slot`: codes are stored and remembered only as
    /// this.
    pub(super) fn otp_hash(&self, slot: Uuid, code: &str) -> String {
        let mut m = slot.as_bytes().to_vec();
        m.extend_from_slice(code.as_bytes());
        hex::encode(self.otp_hasher.hash(&m))
    }

    /// Compares the typed `code` with the code kept at `slot` for `purpose`, when `accept`
    /// takes its record: in constant time whatever was sent, against a dummy when there is
    /// none, so neither the input's shape nor the code's absence shows in the timing. A code
    /// expires at `expiry_now`.
    pub(super) fn check_code(
        &self,
        (slot, purpose): (Uuid, Purpose),
        code: &str,
        accept: impl Fn(&ChallengeRecord) -> bool,
        expiry_now: OffsetDateTime,
    ) -> Result<CodeVerdict, TenantError> {
        let key = challenge_key(slot, purpose);
        let record = self
            .store
            .get::<ChallengeRecord>(&key)?
            .filter(|r| accept(r));
        let presented = self.otp_hash(slot, code);
        let stored = record
            .as_ref()
            .map_or_else(|| "0".repeat(64), |r| r.secret_hash.clone());
        let matches = ct_eq(presented.as_bytes(), stored.as_bytes());
        let resubmitted = !matches
            && self
                .consumed_codes
                .is_resubmission(&key, &presented, expiry_now);
        Ok(match record.filter(|r| r.expires_at > expiry_now) {
            None => CodeVerdict::Missing { resubmitted },
            Some(record) if matches => CodeVerdict::Right(Found { key, record }),
            Some(record) => CodeVerdict::Wrong {
                found: Found { key, record },
                resubmitted,
            },
        })
    }

    /// Consumes a right code: removed in `batch`, and remembered until it would have expired
    /// so that sending it again is answered as a used code, not counted as a guess.
    pub(super) fn consume_code(
        &mut self,
        batch: &mut TenantBatch,
        found: &Found,
        expiry_now: OffsetDateTime,
    ) {
        batch.remove(Kind::Challenge, &found.key);
        self.consumed_codes.remember(
            &found.key,
            &found.record.secret_hash,
            found.record.expires_at,
            expiry_now,
        );
    }

    /// Records one wrong answer to a challenge: it dies at the limit.
    pub(super) fn challenge_failed(
        &self,
        batch: &mut TenantBatch,
        found: &mut Found,
    ) -> Result<(), TenantError> {
        found.record.failures += 1;
        if found.record.failures >= MAX_CHALLENGE_FAILURES {
            batch.remove(Kind::Challenge, &found.key);
        } else {
            batch.put(&found.key, &found.record)?;
        }
        Ok(())
    }

    /// The keys of the challenges and step-up tokens of any of `users`, live or not.
    pub(super) fn challenge_keys(
        &self,
        users: &std::collections::HashSet<Uuid>,
    ) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        self.keys_where::<ChallengeRecord>(|c| users.contains(&c.user_id))
    }

    /// Removes expired challenges (at most `limit`); answers how many.
    pub(super) fn sweep_challenges(
        &self,
        batch: &mut TenantBatch,
        now: OffsetDateTime,
        limit: usize,
    ) -> Result<usize, TenantError> {
        self.sweep_kind::<ChallengeRecord>(
            limit,
            |_, r| r.expires_at <= now,
            |k, _| batch.remove(Kind::Challenge, k),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::throttle::CONSUMED_PRUNE_AT;

    fn token(tenant: [u8; 16], slot: Uuid, purpose: u8) -> String {
        let mut raw = tenant.to_vec();
        raw.extend_from_slice(slot.as_bytes());
        raw.push(purpose);
        raw.extend_from_slice(&[7u8; 32]);
        URL_SAFE_NO_PAD.encode(raw)
    }

    #[test]
    fn a_consumed_code_is_remembered_per_key_until_it_would_have_expired() {
        let now = OffsetDateTime::now_utc();
        let mut c = ConsumedCodes::default();
        let key = challenge_key(Uuid::new_v4(), Purpose::LoginEmailOtp);
        c.remember(&key, "aa", now + Duration::minutes(10), now);
        assert!(c.is_resubmission(&key, "aa", now));
        assert!(
            !c.is_resubmission(&key, "ab", now),
            "another code is a guess"
        );
        let other = challenge_key(Uuid::new_v4(), Purpose::LoginEmailOtp);
        assert!(
            !c.is_resubmission(&other, "aa", now),
            "another slot is a guess"
        );
        assert!(!c.is_resubmission(&key, "aa", now + Duration::minutes(10)));
        // Past the pruning size, only the live ones stay.
        for i in 0..CONSUMED_PRUNE_AT {
            let k = challenge_key(Uuid::from_u128(i as u128), Purpose::LoginSmsOtp);
            c.remember(
                &k,
                "x",
                now - Duration::seconds(1),
                now - Duration::minutes(1),
            );
        }
        c.remember(&other, "bb", now + Duration::minutes(1), now);
        assert!(c.remembered() <= 3, "{}", c.remembered());
        assert!(c.is_resubmission(&key, "aa", now));
        assert!(c.is_resubmission(&other, "bb", now));
    }

    #[test]
    fn tokens_name_their_tenant_slot_and_purpose() {
        let tenant = [1u8; 16];
        let slot = Uuid::new_v4();
        match parse_token(&token(tenant, slot, 4), &tenant) {
            Presented::Ours {
                slot: s,
                purpose,
                secret,
            } => {
                assert_eq!(s, slot);
                assert_eq!(purpose, Purpose::StepUpEmailOtp);
                assert_eq!(secret, [7u8; 32]);
            }
            _ => panic!("not parsed"),
        }
        assert!(matches!(
            parse_token(&token([2u8; 16], slot, 4), &tenant),
            Presented::Foreign
        ));
        assert!(matches!(
            parse_token(&token(tenant, slot, 12), &tenant),
            Presented::Malformed
        ));
        let t = token(tenant, slot, 1);
        assert!(matches!(
            parse_token(&t[2..], &tenant),
            Presented::Malformed
        ));
        assert!(matches!(parse_token("", &tenant), Presented::Malformed));
        assert!(matches!(
            parse_token(&"A".repeat(400), &tenant),
            Presented::Malformed
        ));
    }
}
