//! The records of a tenant's end users: users, their e-mail index, sessions, single-use link
//! tokens and queued mail. Secrets are sealed or hashed; nothing here holds a bearer token.

use serde::{Deserialize, Serialize};
use tessera_storage::{Kind, Record, Sealed, TenantRecord};
use time::OffsetDateTime;
use uuid::Uuid;

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(Default::default())
}

/// An end user of the tenant's app.
#[derive(Clone, Serialize, Deserialize)]
pub struct UserRecord {
    pub id: Uuid,
    /// Normalised: lowercase, domain in punycode. `None` for a guest.
    pub email: Option<String>,
    pub email_verified: bool,
    /// Argon2id PHC string; `None` for accounts without a password.
    pub password_hash: Option<String>,
    /// Bumped by every password change; reset links carry the epoch they were issued in.
    pub password_epoch: u32,
    pub phone: Option<String>,
    pub phone_verified: bool,
    pub is_anonymous: bool,
    pub mfa_enabled: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_sign_in_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub last_active_at: OffsetDateTime,
    #[serde(default = "empty_object")]
    pub public_metadata: serde_json::Value,
    /// `YYYY-MM-DD`, sealed; never in a token, a log or a response.
    pub date_of_birth: Option<Sealed>,
    /// An age-verification token from registration, sealed, kept for later use.
    pub age_verification_token: Option<Sealed>,
    /// Hashes of the newest unused verification and reset tokens: issuing a new one retires the
    /// old, so at most one of each is alive and stored.
    pub verify_token: Option<String>,
    pub reset_token: Option<String>,
    /// The TOTP seed in use (sealed), while MFA is enabled.
    #[serde(default)]
    pub totp_seed: Option<Sealed>,
    /// A seed set up but not yet confirmed with a code (sealed).
    #[serde(default)]
    pub totp_pending: Option<Sealed>,
    /// The last TOTP time step accepted: a code is accepted once, and never an older one.
    #[serde(default)]
    pub totp_last_step: u64,
    /// Keyed hashes (hex) of the unused recovery codes.
    #[serde(default)]
    pub recovery_codes: Vec<String>,
}

impl std::fmt::Debug for UserRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserRecord")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Record for UserRecord {
    const KIND: Kind = Kind::User;
    const NAME: &'static str = "user";
    const VERSION: u16 = 1;
}
impl TenantRecord for UserRecord {}

/// Normalised e-mail address -> user.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EmailIndex {
    pub user_id: Uuid,
}

impl Record for EmailIndex {
    const KIND: Kind = Kind::UserEmail;
    const NAME: &'static str = "user e-mail index";
    const VERSION: u16 = 1;
}
impl TenantRecord for EmailIndex {}

/// Confirmed phone number (E.164) -> user: the number signs that user in by SMS.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PhoneIndex {
    pub user_id: Uuid,
}

impl Record for PhoneIndex {
    const KIND: Kind = Kind::UserPhone;
    const NAME: &'static str = "user phone index";
    const VERSION: u16 = 1;
}
impl TenantRecord for PhoneIndex {}

/// A session: one refresh-token family. Its refresh tokens are derived, not stored (see
/// `sessions.rs`); `generation` says which one is current.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SessionRecord {
    pub id: Uuid,
    pub user_id: Uuid,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// The absolute end: no rotation extends it.
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub last_active_at: OffsetDateTime,
    pub generation: u32,
    /// When the current generation replaced the previous one.
    #[serde(with = "time::serde::rfc3339::option")]
    pub rotated_at: Option<OffsetDateTime>,
    /// Authenticator assurance level, 1 or 2.
    pub aal: u8,
    pub amr: Vec<String>,
}

impl Record for SessionRecord {
    const KIND: Kind = Kind::Session;
    const NAME: &'static str = "session";
    const VERSION: u16 = 1;
}
impl TenantRecord for SessionRecord {}

/// `user id | session id` -> this marker: lists a user's sessions without a full scan.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct UserSessionIndex {}

impl Record for UserSessionIndex {
    const KIND: Kind = Kind::UserSession;
    const NAME: &'static str = "user session index";
    const VERSION: u16 = 1;
}
impl TenantRecord for UserSessionIndex {}

pub fn user_session_key(user: Uuid, session: Uuid) -> Vec<u8> {
    let mut k = user.as_bytes().to_vec();
    k.extend_from_slice(session.as_bytes());
    k
}

/// What a single-use link token is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkPurpose {
    VerifyEmail,
    ResetPassword,
}

/// A single-use link token, stored under the SHA-256 of the token.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LinkTokenRecord {
    pub purpose: LinkPurpose,
    pub user_id: Uuid,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    /// The user's password epoch when issued: a later password change kills a reset link.
    pub epoch: u32,
}

impl Record for LinkTokenRecord {
    const KIND: Kind = Kind::LinkToken;
    const NAME: &'static str = "link token";
    const VERSION: u16 = 1;
}
impl TenantRecord for LinkTokenRecord {}

/// What a request that found no account writes in place of the records and the sealed message
/// a request for an existing account writes (see `TenantState::write_decoy`): as much sealed,
/// about as many bytes, under the one key [`DECOY_KEY`] that each such request overwrites.
/// Nothing reads it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DecoyRecord {
    pub sealed: Sealed,
}

impl Record for DecoyRecord {
    const KIND: Kind = Kind::Usage;
    const NAME: &'static str = "decoy";
    const VERSION: u16 = 1;
}
impl TenantRecord for DecoyRecord {}

/// The key of the tenant's one [`DecoyRecord`] (beside the usage counters).
pub const DECOY_KEY: &[u8] = b"decoy";

/// A message waiting for delivery: the whole `MailJob`, sealed (its links carry tokens).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct QueuedMail {
    pub sealed: Sealed,
}

impl Record for QueuedMail {
    const KIND: Kind = Kind::MailQueue;
    const NAME: &'static str = "queued mail";
    const VERSION: u16 = 1;
}
impl TenantRecord for QueuedMail {}
