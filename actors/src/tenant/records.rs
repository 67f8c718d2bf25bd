//! The records of a tenant's end users: users, their e-mail index, sessions, single-use link
//! tokens and queued mail. Secrets are sealed or hashed; nothing here holds a bearer token.

use serde::{Deserialize, Serialize};
use tessera_storage::{Kind, Sealed};
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
    /// The hash of the newest unused address-change link (one at a time, like the others).
    #[serde(default)]
    pub change_token: Option<String>,
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
    /// Set while a tenant admin has blocked the account: no session, no sign-in.
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub blocked_at: Option<OffsetDateTime>,
    /// Written only by the tenant's admins (and back ends); the user cannot change it. It is
    /// the `app_metadata` claim of the user's access tokens.
    #[serde(default = "empty_object")]
    pub app_metadata: serde_json::Value,
    /// The language mail to the user is written in (`en`, `pl`, `de`, `fr`, `es`), chosen at
    /// registration; `None`: the tenant's default.
    #[serde(default)]
    pub locale: Option<String>,
    /// A minor's account under the tenant's minor protection: held until a guardian consents.
    /// `None` for everyone else.
    #[serde(default)]
    pub guardian: Option<ChildConsent>,
}

/// Where a minor's account stands with guardian consent (spec 3.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChildStatus {
    /// No guardian consent (yet, or any more): no sign-in.
    Held,
    /// A guardian consented.
    Active,
    /// A guardian declined: no sign-in, the data goes 30 days later.
    Blocked,
}

/// The guardian side of a minor's account.
#[derive(Clone, Serialize, Deserialize)]
pub struct ChildConsent {
    pub status: ChildStatus,
    #[serde(with = "time::serde::rfc3339")]
    pub status_at: OffsetDateTime,
    /// The guardian most recently asked (normalised address).
    pub asked: Option<String>,
    /// SHA-256 (hex) of the one live consent link's token.
    pub consent_token: Option<String>,
    /// The guardian who consented, and the receipt; kept after a withdrawal.
    pub consented_by: Option<String>,
    pub receipt: Option<ConsentReceipt>,
}

/// Spec 2.7 consent_receipt, an API shape stored as it is shown.
pub use tessera_wire::ConsentReceipt;

impl std::fmt::Debug for UserRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserRecord")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

tessera_storage::record!(UserRecord in TenantRecord: Kind::User, "user", version 1);

/// Normalised e-mail address -> user. A prefix scan of these keys is the case-insensitive
/// e-mail search of the users list; `created_ns` (the user's creation, nanoseconds since
/// 1970, an integer because the search decodes every match) lets it sort the matches without
/// reading the users. Entries written before it existed get it from the start-up index build.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EmailIndex {
    pub user_id: Uuid,
    #[serde(default)]
    pub created_ns: Option<u64>,
}

impl EmailIndex {
    pub fn of(user: &UserRecord) -> Self {
        EmailIndex {
            user_id: user.id,
            created_ns: Some(created_ns(user.created_at)),
        }
    }

    /// The user's key in the creation index, when the entry knows it.
    pub fn created_key(&self) -> Option<Vec<u8>> {
        let ns = self.created_ns?;
        let mut k = ns.to_be_bytes().to_vec();
        k.extend_from_slice(self.user_id.as_bytes());
        Some(k)
    }
}

fn created_ns(t: OffsetDateTime) -> u64 {
    u64::try_from(t.unix_timestamp_nanos()).unwrap_or(0)
}

/// `created_at | user id` -> this marker: the users newest first (see [`created_key`]).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct UserCreatedIndex {}

tessera_storage::record!(
    UserCreatedIndex in TenantRecord: Kind::UserCreated, "user creation index", version 1
);

/// The key of a user in the creation index: nanoseconds since 1970 (big-endian, so keys sort
/// by time) and the id, which breaks ties.
pub fn created_key(created_at: OffsetDateTime, user: Uuid) -> Vec<u8> {
    let mut k = created_ns(created_at).to_be_bytes().to_vec();
    k.extend_from_slice(user.as_bytes());
    k
}

/// `user id | audit event key` -> this marker: the events about one user.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct UserAuditIndex {}

tessera_storage::record!(
    UserAuditIndex in TenantRecord: Kind::UserAudit, "user audit index", version 1
);

/// That a one-off index build of this tenant is done (keyed by the build's name).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IndexBuilt {
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
}

tessera_storage::record!(
    IndexBuilt in TenantRecord: Kind::TenantIndexBuilt, "index build marker", version 1
);

tessera_storage::record!(
    EmailIndex in TenantRecord: Kind::UserEmail, "user e-mail index", version 1
);

/// Confirmed phone number (E.164) -> user: the number signs that user in by SMS.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PhoneIndex {
    pub user_id: Uuid,
}

tessera_storage::record!(
    PhoneIndex in TenantRecord: Kind::UserPhone, "user phone index", version 1
);

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
    /// The `acr` its tokens carry when not the AAL's: `eidas_low|substantial|high` for a
    /// wallet sign-in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acr: Option<super::eudi::Eidas>,
    /// The browser or client family that opened the session (`Chrome`, `curl`, ...).
    #[serde(default)]
    pub ua_family: Option<String>,
    /// The keyed hash (hex) of the client address that opened it; only a prefix is shown.
    #[serde(default)]
    pub ip_hash: Option<String>,
    /// Set on a client's grant (opened by the OAuth token endpoint), never on a first-party
    /// session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<super::oauth::OAuthGrant>,
    /// The organization the session works in (its tokens carry its claims): set by a
    /// switch, or on a client's grant by an authorization that named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub org: Option<Uuid>,
    /// The single sign-on connection the session was signed in through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<Uuid>,
}

tessera_storage::record!(SessionRecord in TenantRecord: Kind::Session, "session", version 1);

/// `user id | session id` -> this marker: lists a user's sessions without a full scan.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct UserSessionIndex {}

tessera_storage::record!(
    UserSessionIndex in TenantRecord: Kind::UserSession, "user session index", version 1
);

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
    /// Confirms a new address the signed-in user asked to move the account to.
    ChangeEmail,
}

/// A single-use link token, stored under the SHA-256 of the token.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LinkTokenRecord {
    pub purpose: LinkPurpose,
    pub user_id: Uuid,
    /// The address an address-change link confirms (mailed to it); none for the others.
    #[serde(default)]
    pub new_email: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    /// The user's password epoch when issued: a later password change kills a reset link.
    pub epoch: u32,
    /// Where the hosted page sends the user afterwards (checked against the tenant's URLs
    /// when the link was requested, and again when it is used).
    #[serde(default)]
    pub redirect_to: Option<String>,
}

tessera_storage::record!(LinkTokenRecord in TenantRecord: Kind::LinkToken, "link token", version 1);

/// What a request that found no account writes in place of the records and the sealed message
/// a request for an existing account writes (see `TenantCtx::write_decoy`): as much sealed,
/// about as many bytes, under the one key [`DECOY_KEY`] that each such request overwrites.
/// Nothing reads it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DecoyRecord {
    pub sealed: Sealed,
}

tessera_storage::record!(DecoyRecord in TenantRecord: Kind::Usage, "decoy", version 1);

/// The key of the tenant's one [`DecoyRecord`] (beside the usage counters).
pub const DECOY_KEY: &[u8] = b"decoy";

/// A message waiting for delivery: the whole `MailJob`, sealed (its links carry tokens).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct QueuedMail {
    pub sealed: Sealed,
}

tessera_storage::record!(QueuedMail in TenantRecord: Kind::MailQueue, "queued mail", version 1);

/// A user's passkey (a WebAuthn credential), keyed `user id | passkey id`. What its sign-ins
/// change is kept apart, in a [`PasskeyUse`]; read through the tenant's passkey lookups, a
/// record has that use applied to it.
#[derive(Clone, Serialize, Deserialize)]
pub struct PasskeyRecord {
    pub id: Uuid,
    pub user_id: Uuid,
    pub nickname: Option<String>,
    /// The credential as the WebAuthn library verifies it: id, public key, signature
    /// counter, backup flags, transports. The counter and flags stored here are those of the
    /// registration (or of the last sign-in, for a passkey an earlier build kept whole).
    pub credential: webauthn_rs_core::proto::Credential,
    /// The relying-party id it was registered under: it works only while that is the
    /// tenant's.
    pub rp_id: String,
    /// The authenticator model's AAGUID (all zeros when the authenticator does not say).
    pub aaguid: Uuid,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub last_used_at: Option<OffsetDateTime>,
    /// Set when a sign-in showed a signature counter that did not increase: the credential
    /// may have been copied, and it signs nobody in until the user deletes it.
    #[serde(default)]
    pub suspected_clone: bool,
}

impl std::fmt::Debug for PasskeyRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PasskeyRecord")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

tessera_storage::record!(PasskeyRecord in TenantRecord: Kind::Passkey, "passkey", version 1);

/// What a passkey's sign-ins changed, keyed like the passkey: the signature counter and the
/// backup flags the latest one reported, when it was, and whether a counter that went back
/// marked it a suspected clone. Kept apart from the credential, so a sign-in rewrites these
/// ~130 bytes and not the whole credential. Absent until the first sign-in (or for a passkey an
/// earlier build kept whole): then the record's own values stand ([`PasskeyRecord::use_state`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PasskeyUse {
    pub counter: u32,
    pub backup_eligible: bool,
    pub backed_up: bool,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub last_used_at: Option<OffsetDateTime>,
    #[serde(default)]
    pub suspected_clone: bool,
}

tessera_storage::record!(PasskeyUse in TenantRecord: Kind::PasskeyUse, "passkey_use", version 1);

impl PasskeyRecord {
    /// The use state the record itself holds: the registration's counter and flags, or what an
    /// earlier build, which kept them here, last wrote.
    pub fn use_state(&self) -> PasskeyUse {
        PasskeyUse {
            counter: self.credential.counter,
            backup_eligible: self.credential.backup_eligible,
            backed_up: self.credential.backup_state,
            last_used_at: self.last_used_at,
            suspected_clone: self.suspected_clone,
        }
    }

    /// The record as `used` leaves it: counter, flags, last use and clone mark from there.
    pub fn with_use(mut self, used: PasskeyUse) -> Self {
        self.credential.counter = used.counter;
        self.credential.backup_eligible = used.backup_eligible;
        self.credential.backup_state = used.backed_up;
        self.last_used_at = used.last_used_at;
        self.suspected_clone = used.suspected_clone;
        self
    }
}

/// The key of a passkey: `user id | passkey id`.
pub fn passkey_key(user: Uuid, passkey: Uuid) -> Vec<u8> {
    let mut k = user.as_bytes().to_vec();
    k.extend_from_slice(passkey.as_bytes());
    k
}

/// SHA-256 of a credential id -> its passkey: finds the passkey an assertion names, and
/// keeps one credential from being registered twice.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PasskeyCredentialIndex {
    pub user_id: Uuid,
    pub passkey_id: Uuid,
}

tessera_storage::record!(
    PasskeyCredentialIndex in TenantRecord: Kind::PasskeyCredential, "passkey_credential", version 1
);

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn creation_keys_sort_by_time_then_id_and_the_email_index_agrees() {
        let t = datetime!(2026-03-01 12:00:00 UTC);
        let (low, high) = (Uuid::from_u128(1), Uuid::from_u128(u128::MAX));
        let k = created_key(t, low);
        assert_eq!(k.len(), 24);
        assert_eq!(&k[8..], low.as_bytes());
        assert!(created_key(t, low) < created_key(t, high));
        assert!(created_key(t, high) < created_key(t + time::Duration::nanoseconds(1), low));
        // Times far apart in the low bytes still sort (big-endian).
        assert!(created_key(t, high) < created_key(t + time::Duration::seconds(256), low));
        let mut user = UserRecord::blank(Uuid::now_v7(), t);
        user.email = Some("ada@example.com".into());
        assert_eq!(
            EmailIndex::of(&user).created_key(),
            Some(created_key(t, user.id))
        );
        // An entry written before `created_ns` existed knows no key.
        let old: EmailIndex =
            serde_json::from_value(serde_json::json!({ "user_id": user.id })).unwrap();
        assert_eq!(old.created_key(), None);
        // Before 1970 a key is clamped to zero, not wrapped to the end.
        let early = created_key(datetime!(1960-01-01 00:00:00 UTC), low);
        assert_eq!(&early[..8], &[0u8; 8]);
    }

    #[test]
    fn compound_keys_lead_with_the_user() {
        let (user, other) = (Uuid::now_v7(), Uuid::now_v7());
        let s = user_session_key(user, other);
        assert_eq!(
            (&s[..16], &s[16..]),
            (&user.as_bytes()[..], &other.as_bytes()[..])
        );
        assert_eq!(passkey_key(user, other), s);
    }

    #[test]
    fn a_user_record_s_debug_shows_only_its_id() {
        let mut user = UserRecord::blank(Uuid::now_v7(), OffsetDateTime::now_utc());
        user.email = Some("ada@example.com".into());
        user.password_hash = Some("$argon2id$secret".into());
        user.phone = Some("+33612345678".into());
        user.recovery_codes = vec!["c0de".into()];
        let shown = format!("{user:?}");
        assert!(shown.contains(&user.id.to_string()));
        for secret in ["ada@", "argon2id", "+336", "c0de"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }

    #[test]
    fn a_user_record_written_before_newer_fields_reads_with_their_defaults() {
        let user = UserRecord::blank(Uuid::now_v7(), OffsetDateTime::now_utc());
        let mut v = serde_json::to_value(&user).unwrap();
        let o = v.as_object_mut().unwrap();
        for newer in [
            "public_metadata",
            "app_metadata",
            "totp_seed",
            "totp_pending",
            "totp_last_step",
            "recovery_codes",
            "blocked_at",
            "locale",
            "guardian",
        ] {
            o.remove(newer).unwrap();
        }
        let back: UserRecord = serde_json::from_value(v).unwrap();
        assert_eq!(back.public_metadata, serde_json::json!({}));
        assert_eq!(back.app_metadata, serde_json::json!({}));
        assert!(back.blocked_at.is_none() && back.guardian.is_none());
        assert!(back.recovery_codes.is_empty() && back.totp_seed.is_none());
    }

    #[test]
    fn link_purposes_and_child_states_have_stable_names() {
        assert_eq!(
            serde_json::to_value(LinkPurpose::ResetPassword).unwrap(),
            "reset_password"
        );
        assert_eq!(
            serde_json::to_value(LinkPurpose::VerifyEmail).unwrap(),
            "verify_email"
        );
        for (s, name) in [
            (ChildStatus::Held, "held"),
            (ChildStatus::Active, "active"),
            (ChildStatus::Blocked, "blocked"),
        ] {
            assert_eq!(serde_json::to_value(s).unwrap(), name);
        }
    }
}
