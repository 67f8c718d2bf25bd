//! Every type that crosses the tenant actor's boundary: what commands carry and what they
//! answer (`TenantInfo`, `Grant`, `LoginOutcome`, `User`, ...). The mailbox itself is
//! `mailbox.rs`.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use tessera_storage::TenantId;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    records::Tier,
    tenant::{records::SessionRecord, settings::TenantSettings},
};

/// What a purge run did (or, dry, would do).
#[derive(Clone, Debug, Serialize)]
pub struct PurgeReport {
    pub tenant: String,
    pub purged: usize,
    pub dry_run: bool,
}

/// The OAuth authorize parameters a passwordless login resumes (spec 2.4 `oauth_params`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OAuthParams {
    pub client_id: String,
    pub redirect_uri: String,
    pub response_type: Option<String>,
    pub code_challenge: Option<String>,
    pub code_challenge_method: Option<String>,
    pub scope: Option<String>,
    pub state: Option<String>,
    pub nonce: Option<String>,
    pub resource: Option<String>,
}

/// OAuth parameters and the hash of the resume binding handed to the browser that started.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OAuthResume {
    pub params: OAuthParams,
    /// Hex SHA-256 of the `resume_binding`.
    pub binding_hash: String,
}

/// A parsed destination: E.164 and its country (ISO 3166-1 alpha-2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Phone {
    pub e164: String,
    pub country: String,
}

/// A user's state as the users list shows and filters it: the API's.
pub use tessera_wire::UserStatus;

/// A page request of the users list, newest first. Every filter given must hold.
#[derive(Clone, Debug, Default)]
pub struct UserQuery {
    /// Lowercase; matched against the start of the normalised address.
    pub email_prefix: Option<String>,
    /// E.164: the user whose confirmed number this is.
    pub phone: Option<String>,
    pub status: Option<UserStatus>,
    pub created_after: Option<OffsetDateTime>,
    pub created_before: Option<OffsetDateTime>,
    pub last_sign_in_before: Option<OffsetDateTime>,
    /// The `next_cursor` of the previous page (a key of the creation index).
    pub cursor: Option<Vec<u8>>,
    pub limit: usize,
}

/// A user as the users list shows it: the API's managed user, answered as it is sent.
pub use tessera_wire::ManagedUser;

/// The tenant's activity for its overview: this month's active users and, a day at a time
/// (oldest first, days without any at zero), sign-ins and refused sign-ins.
#[derive(Clone, Debug, Serialize)]
pub struct TenantActivity {
    /// `YYYY-MM` (UTC).
    pub month: String,
    pub active_users: u64,
    pub days: Vec<super::usage::ActivityDay>,
}

/// One page of users and where the next starts. A page can hold fewer than `limit` users
/// while `next_cursor` is set (each page examines a bounded number of users); follow it.
#[derive(Clone, Debug, Serialize)]
pub struct UserPage {
    pub users: Vec<ManagedUser>,
    pub next_cursor: Option<Vec<u8>>,
}

/// What signs a user in besides a password.
#[derive(Clone, Debug, Serialize)]
pub struct UserFactors {
    pub totp_enabled: bool,
    pub recovery_codes_remaining: usize,
    pub passkeys: usize,
    /// Social providers linked to the account.
    pub linked_providers: Vec<String>,
}

/// A live session as its user and the tenant's admins both see it.
#[derive(Clone, Debug, Serialize)]
pub struct SessionFacts {
    pub id: Uuid,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub last_active_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    pub aal: u8,
    pub amr: Vec<String>,
}

impl SessionFacts {
    /// A stored session's facts.
    pub fn of(session: &SessionRecord) -> Self {
        SessionFacts {
            id: session.id,
            created_at: session.created_at,
            last_active_at: session.last_active_at,
            expires_at: session.expires_at,
            aal: session.aal,
            amr: session.amr.clone(),
        }
    }
}

/// A live session, as a tenant admin sees it.
#[derive(Clone, Debug, Serialize)]
pub struct AdminSessionView {
    #[serde(flatten)]
    pub session: SessionFacts,
    /// The client family that opened it (`Chrome`, `curl`, ...).
    pub device: Option<String>,
    /// The first 12 characters of the keyed hash of the address that opened it.
    pub ip_hash_prefix: Option<String>,
}

/// When the user was last seen and whether they count in this month's active users.
#[derive(Clone, Debug, Serialize)]
pub struct UserActivity {
    #[serde(with = "time::serde::rfc3339")]
    pub last_active_at: OffsetDateTime,
    /// `YYYY-MM` (UTC).
    pub month: String,
    pub active_this_month: bool,
}

/// Everything a tenant admin sees of one user.
#[derive(Clone, Debug, Serialize)]
pub struct UserDetail {
    #[serde(flatten)]
    pub summary: ManagedUser,
    pub factors: UserFactors,
    pub sessions: Vec<AdminSessionView>,
    pub activity: UserActivity,
}

/// A user a tenant admin creates.
#[derive(Clone, Debug)]
pub struct NewUser {
    /// Normalised.
    pub email: String,
    /// Argon2id, hashed by the caller.
    pub password_hash: Option<String>,
    pub email_verified: bool,
    /// Mail a link to choose a password (which also confirms the address).
    pub invite: bool,
}

/// A tenant admin's change to a user; `None` leaves a field as it is.
#[derive(Clone, Debug, Default)]
pub struct UserPatch {
    /// Normalised. Unless `email_verified` is `Some(true)`, the new address is unconfirmed
    /// and mailed a verification link.
    pub email: Option<String>,
    pub email_verified: Option<bool>,
    /// E.164, or `Some(None)` to remove the number. A number set here is confirmed.
    pub phone: Option<Option<String>>,
    pub app_metadata: Option<serde_json::Value>,
    pub public_metadata: Option<serde_json::Value>,
}

/// A tenant admin's action on one user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserAction {
    /// Revokes every session; sign-in is refused until unblocked.
    Block,
    Unblock,
    /// Revokes every session.
    SignOut,
    /// Removes the TOTP seed and recovery codes, and tells the user by mail.
    ResetMfa,
    /// Mails a password-reset link.
    SendPasswordReset,
}

/// One kind of credential a user holds, and how many records, tokens or fields of it
/// ([`UsersMsg::UserCredentials`](crate::tenant::UsersMsg::UserCredentials)).
#[derive(Clone, Debug, Serialize)]
pub struct HeldCredential {
    pub kind: super::credentials::Credential,
    pub count: usize,
}

/// Where a user's trace was found by [`UsersMsg::UserTraces`](crate::tenant::UsersMsg::UserTraces).
#[derive(Clone, Debug, Serialize)]
pub struct Trace {
    /// The record kind's byte, in hex.
    pub kind: String,
    /// The key under the tenant's prefix, in hex.
    pub key: String,
    /// `key` when the key holds a needle, `value` when only the stored value does.
    pub found_in: String,
}

/// One user to import. The address is already normalised and the hash already checked to be an
/// Argon2id PHC string by the caller.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ImportedUser {
    pub email: String,
    pub password_hash: String,
    pub email_verified: bool,
}

/// What one import call did.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ImportOutcome {
    pub imported: u64,
    pub skipped_existing: u64,
}

/// The platform's facts about a tenant, handed to its actor by the directory.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TenantInfo {
    pub id: TenantId,
    pub slug: String,
    pub name: String,
    pub tier: Tier,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub api_key_prefix: String,
    #[serde(with = "time::serde::rfc3339")]
    pub api_key_created_at: OffsetDateTime,
    /// The monthly-active-user cap in force (the operator's, else the tier's); `None`: none.
    pub mau_cap: Option<u64>,
}

/// The tenant as its own API key sees it.
#[derive(Clone, Debug)]
pub struct TenantOverview {
    pub info: TenantInfo,
    pub settings: TenantSettings,
}

/// The settings as the dashboard sees them: secrets only as "set or not".
#[derive(Clone, Debug)]
pub struct SettingsView {
    pub settings: TenantSettings,
    pub byok_token_set: bool,
}

/// An end user as responses show them: the API's user record, answered as it is sent. What
/// else a sign-in needs of the user travels beside it (`Grant::app_metadata`).
pub use tessera_wire::User;

/// A session just created or refreshed: the handler signs the access token from it.
#[derive(Clone)]
pub struct Grant {
    pub user: User,
    /// Set by the tenant's admins only; the `app_metadata` claim of access tokens.
    pub app_metadata: serde_json::Value,
    pub session_id: Uuid,
    pub refresh_token: String,
    /// Access tokens never outlive their session.
    pub session_expires_at: OffsetDateTime,
    pub aal: u8,
    pub amr: Vec<String>,
    /// The session's `acr` when it is not the AAL's (wallet sign-ins: `eidas_*`).
    pub acr: Option<crate::tenant::eudi::Eidas>,
    /// A client's grant: what it was granted.
    pub oauth: Option<crate::tenant::oauth::OAuthGrant>,
    /// The organization the session works in, with the member's role and permissions.
    pub org: Option<crate::tenant::organizations::OrgClaim>,
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("user", &self.user.id)
            .field("session_id", &self.session_id)
            .finish_non_exhaustive()
    }
}

/// The credential to check off the actor, and what must still hold when the check is done.
#[derive(Clone)]
pub struct Credential {
    /// `None` when no such account exists: the caller hashes against a dummy.
    pub user_id: Option<Uuid>,
    pub password_hash: Option<String>,
    pub epoch: u32,
    /// The known device the attempt presented a live token of (a password login's only).
    pub device: Option<Uuid>,
}

/// A password sign-in as asked: the normalised address, the client's address, what it
/// presents besides the password.
#[derive(Clone)]
pub struct LoginAttempt {
    pub email: String,
    pub ip: IpAddr,
    /// The device token the client kept from an earlier sign-in to this account.
    pub device_token: Option<String>,
    pub captcha: crate::login_guard::Captcha,
    /// The organization the session is to work in (the user must be a member).
    pub organization: Option<Uuid>,
}

impl std::fmt::Debug for LoginAttempt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginAttempt")
            .field("ip", &self.ip)
            .field("device_token", &self.device_token.as_ref().map(|_| "..."))
            .field("captcha", &self.captcha)
            .finish_non_exhaustive()
    }
}

/// A password sign-in's answer: its outcome, and a new device token to keep (none when the
/// attempt presented a live one, which stays valid, or when a second step is due).
pub struct PasswordSignIn {
    pub outcome: LoginOutcome,
    pub device_token: Option<String>,
}

impl std::fmt::Debug for PasswordSignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PasswordSignIn")
            .field("outcome", &self.outcome)
            .finish_non_exhaustive()
    }
}

/// Which mailed link a hosted page opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostedLink {
    VerifyEmail,
    ResetPassword,
    /// An address-change link (to the new address).
    ChangeEmail,
    MagicLink,
    StepUp,
}

/// What a hosted page shows about a mailed link.
#[derive(Clone, Debug)]
pub struct HostedView {
    pub tenant_name: String,
    /// `None`: the link is used, expired or unknown.
    pub live: Option<LiveLink>,
    pub magic_link_enabled: bool,
    /// The tenant's default language for its users.
    pub default_locale: String,
}

/// The tenant as the authorization server's hosted sign-in page shows it.
#[derive(Clone, Debug)]
pub struct SignInView {
    pub tenant_name: String,
    pub default_locale: String,
    pub email_otp_enabled: bool,
    pub magic_link_enabled: bool,
    /// The social providers enabled (and configured).
    pub social: Vec<crate::tenant::social::Provider>,
    /// Whether the tenant set its passkey domain: without one no app could have registered
    /// a passkey the page's origin can use, so the page offers none.
    pub passkeys: bool,
    /// Whether minor protection is on: a sign-up then gives a date of birth.
    pub minor_protection: bool,
    /// Whether an organization has an enabled single sign-on connection.
    pub sso: bool,
}

/// A link that can still be used.
#[derive(Clone, Debug)]
pub struct LiveLink {
    /// Where the user goes afterwards: the link's `redirect_to` while it is still one of the
    /// tenant's URLs, else the site URL; `None`: nowhere.
    pub destination: Option<String>,
    /// For a login link: whether the page can finish it (it has a destination and was
    /// requested with a code challenge).
    pub code_flow: bool,
    /// For a login link asked for on the authorization server's sign-in page: the client's
    /// redirect URI, where the authorize request the link resumes ends.
    pub then: Option<String>,
}

/// How a login link's hosted page returns to the app: the `redirect_to` (one of the
/// tenant's URLs, checked by the caller) and the PKCE S256 `code_challenge` the exchange of
/// the page's code must answer.
#[derive(Clone, Debug, Default)]
pub struct HostedReturn {
    pub redirect_to: Option<String>,
    pub code_challenge: Option<String>,
}

/// A registration, validated and with its password already hashed.
#[derive(Clone)]
pub struct Registration {
    /// Normalised.
    pub email: String,
    pub password_hash: String,
    /// `YYYY-MM-DD`, validated by the caller; sealed before it is stored.
    pub date_of_birth: Option<String>,
    pub age_verification_token: Option<String>,
    /// Where the verification page sends the user afterwards (one of the tenant's URLs,
    /// checked by the caller).
    pub redirect_to: Option<String>,
    /// The language of the user's mail, one of the five (checked by the caller).
    pub locale: Option<String>,
}

/// One of a user's sessions, as the user sees it.
#[derive(Clone, Debug, Serialize)]
pub struct SessionView {
    #[serde(flatten)]
    pub session: SessionFacts,
    /// The session of the token that asked.
    pub current: bool,
}

/// The bearer of an access token: whose session, which user.
#[derive(Clone, Copy, Debug)]
pub struct Bearer {
    pub session_id: Uuid,
    pub user_id: Uuid,
}

/// What a password login leads to.
#[allow(
    clippy::large_enum_variant,
    reason = "one answer a sign-in, moved once: boxing the grant would allocate every time to \
              save bytes on the rare enrolment answer"
)]
pub enum LoginOutcome {
    /// Signed in; `enrollment_required_by` when the tenant requires MFA and the user is in
    /// the grace period.
    Signed {
        grant: Grant,
        enrollment_required_by: Option<OffsetDateTime>,
    },
    /// The user has MFA: the second step's challenge.
    MfaRequired {
        challenge: String,
        methods: Vec<String>,
        expires_in: i64,
    },
    /// The MFA grace period is over: a token that allows MFA setup only.
    EnrollmentRequired {
        token: String,
        expires_in: i64,
        user: User,
    },
}

/// What turning MFA off or replacing the recovery codes takes: the caller, their password
/// (checked off the actor, with what must still hold) and a TOTP or recovery code.
#[derive(Clone)]
pub struct MfaManage {
    pub bearer: Bearer,
    pub credential: Credential,
    pub password_ok: bool,
    pub code: String,
}

/// Who an MFA setup call acts for.
#[derive(Clone)]
pub enum MfaWho {
    Session(Bearer),
    /// An enrolment token from a login past the grace period.
    Enrollment(String),
}

// The tokens below are bearer secrets: `Debug` never prints them.
impl std::fmt::Debug for LoginOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoginOutcome::Signed { grant, .. } => f.debug_tuple("Signed").field(grant).finish(),
            LoginOutcome::MfaRequired { .. } => f.write_str("MfaRequired"),
            LoginOutcome::EnrollmentRequired { user, .. } => f
                .debug_struct("EnrollmentRequired")
                .field("user", &user.id)
                .finish_non_exhaustive(),
        }
    }
}

impl std::fmt::Debug for MfaWho {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MfaWho::Session(b) => f.debug_tuple("Session").field(b).finish(),
            MfaWho::Enrollment(_) => f.write_str("Enrollment"),
        }
    }
}

/// A TOTP seed being set up.
#[derive(Clone)]
pub struct MfaSecret {
    /// Base32, unpadded.
    pub secret: String,
    pub otpauth_uri: String,
}

/// A step-up token to sign: its id, whose session, and what it proves.
#[derive(Clone, Debug)]
pub struct StepUpGrant {
    pub jti: Uuid,
    pub user_id: Uuid,
    pub session_id: Uuid,
    pub aal: u8,
    pub amr: Vec<String>,
    /// When the actor recorded it: the token's `iat`, so `exp - iat` is always the lifetime.
    pub issued_at: OffsetDateTime,
    pub expires_at: OffsetDateTime,
}

/// What the MFA verify flow answered.
#[derive(Debug)]
pub enum MfaVerified {
    /// The second step of a login: the session, and the OAuth flow the first step resumes.
    Login(Box<MfaLogin>),
    StepUp(StepUpGrant),
}

/// A login completed by its second factor.
#[derive(Debug)]
pub struct MfaLogin {
    pub grant: Grant,
    pub oauth: Option<OAuthParams>,
    /// A new device token, when the first factor was a password from a device without one.
    pub device_token: Option<String>,
}

/// A passkey as its owner sees it: never the key.
#[derive(Clone, Debug, Serialize)]
pub struct PasskeyView {
    pub id: Uuid,
    pub nickname: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_used_at: Option<OffsetDateTime>,
    /// The credential may live on more than one device (a synced passkey).
    pub backup_eligible: bool,
    /// The credential is backed up or synced now.
    pub backed_up: bool,
    /// How the browser may reach the authenticator (`internal`, `hybrid`, `usb`...).
    pub transports: Vec<String>,
    /// The authenticator model (all zeros when it does not say).
    pub aaguid: Uuid,
    /// A sign-in showed a signature counter that did not increase: the passkey may have
    /// been copied, and it signs nobody in.
    pub suspected_clone: bool,
}

/// The gate's answer to a request without a step-up token.
#[derive(Clone)]
pub struct GateChallenge {
    pub mfa_challenge_token: String,
    pub available_methods: Vec<String>,
}

impl std::fmt::Debug for GateChallenge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GateChallenge")
            .field("available_methods", &self.available_methods)
            .finish_non_exhaustive()
    }
}

/// A sign-in's outcome, and the OAuth flow it resumes, if any (only with a session: after a
/// second step is asked for, the challenge carries the flow, and the MFA verify resumes it).
#[derive(Debug)]
pub struct PasswordlessLogin {
    pub outcome: LoginOutcome,
    pub oauth: Option<OAuthParams>,
}

/// A consumed step-up token: what it proved.
#[derive(Clone, Debug)]
pub struct StepUpUse {
    pub aal: u8,
    pub amr: Vec<String>,
}
