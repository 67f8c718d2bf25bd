//! The tenant's whole command surface: one variant per command, each with its reply port.

use std::net::IpAddr;

use ractor::RpcReplyPort;
use serde::{Deserialize, Serialize};
use tessera_storage::TenantId;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    error::TenantError,
    records::Tier,
    tenant::{
        audit::{AuditContext, AuditPage},
        keys::RotatedKeys,
        settings::{SettingsChange, TenantSettings},
    },
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

/// A user's state as the users list shows and filters it (the first that applies, in this
/// order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UserStatus {
    /// Blocked by a tenant admin.
    Blocked,
    /// Waiting for a guardian's consent (minor protection).
    Held,
    /// A guest.
    Anonymous,
    /// Registered with an address that is not confirmed yet.
    Unverified,
    Active,
}

impl UserStatus {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "active" => UserStatus::Active,
            "blocked" => UserStatus::Blocked,
            "held" => UserStatus::Held,
            "anonymous" => UserStatus::Anonymous,
            "unverified" => UserStatus::Unverified,
            _ => return None,
        })
    }
}

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

/// A user as the users list shows it.
#[derive(Clone, Debug, Serialize)]
pub struct UserSummary {
    pub id: Uuid,
    pub email: Option<String>,
    pub email_verified: bool,
    pub phone: Option<String>,
    pub phone_verified: bool,
    pub is_anonymous: bool,
    pub status: UserStatus,
    pub mfa_enabled: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_sign_in_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub blocked_at: Option<OffsetDateTime>,
    pub public_metadata: serde_json::Value,
    pub app_metadata: serde_json::Value,
}

/// One page of users and where the next starts. A page can hold fewer than `limit` users
/// while `next_cursor` is set (each page examines a bounded number of users); follow it.
#[derive(Clone, Debug, Serialize)]
pub struct UserPage {
    pub users: Vec<UserSummary>,
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

/// A live session, as a tenant admin sees it.
#[derive(Clone, Debug, Serialize)]
pub struct AdminSessionView {
    pub id: Uuid,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub last_active_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    pub aal: u8,
    pub amr: Vec<String>,
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
    pub summary: UserSummary,
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
/// ([`TenantMsg::UserCredentials`]).
#[derive(Clone, Debug, Serialize)]
pub struct HeldCredential {
    pub kind: super::credentials::Credential,
    pub count: usize,
}

/// Where a user's trace was found by [`TenantMsg::UserTraces`].
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

/// An end user as responses show them.
#[derive(Clone, Debug, Serialize)]
pub struct UserView {
    pub id: Uuid,
    pub email: Option<String>,
    pub email_verified: bool,
    pub phone: Option<String>,
    pub phone_verified: bool,
    pub is_anonymous: bool,
    pub mfa_enabled: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_sign_in_at: Option<OffsetDateTime>,
    pub public_metadata: serde_json::Value,
    /// Set by the tenant's admins only; the `app_metadata` claim of access tokens.
    pub app_metadata: serde_json::Value,
}

/// A session just created or refreshed: the handler signs the access token from it.
#[derive(Clone)]
pub struct Grant {
    pub user: UserView,
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
    pub id: Uuid,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub last_active_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    pub aal: u8,
    pub amr: Vec<String>,
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
        user: UserView,
    },
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

pub enum TenantMsg {
    /// Counts a registration attempt from `ip` (5 a minute): answers `RateLimited` over it.
    RegisterAdmit {
        ip: IpAddr,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    /// Registers, or (for an existing or policy-blocked address) answers a look-alike.
    Register {
        registration: Registration,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<UserView, TenantError>>,
    },
    VerifyEmail {
        token: String,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    /// Sends a new verification link when the address has an unverified account.
    ResendVerification {
        email: String,
        redirect_to: Option<String>,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    /// Checks the sign-in rules, then answers the credential to verify.
    LoginBegin {
        attempt: LoginAttempt,
        reply: RpcReplyPort<Result<Credential, TenantError>>,
    },
    /// Records the verification's result; on success opens a session.
    LoginFinish {
        attempt: LoginAttempt,
        credential: Credential,
        password_ok: bool,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<PasswordSignIn, TenantError>>,
    },
    /// Rotates a refresh token (single use, with a short grace for concurrent retries).
    Refresh {
        token: String,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<Grant, TenantError>>,
    },
    /// The user behind a verified access token, if its session is still alive.
    Authenticate {
        bearer: Bearer,
        reply: RpcReplyPort<Result<UserView, TenantError>>,
    },
    Logout {
        bearer: Bearer,
        global: bool,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    ListSessions {
        bearer: Bearer,
        reply: RpcReplyPort<Result<Vec<SessionView>, TenantError>>,
    },
    RevokeSession {
        bearer: Bearer,
        session_id: Uuid,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    /// Sends a reset link when the address has an account.
    ForgotPassword {
        email: String,
        redirect_to: Option<String>,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    /// Whether a reset link is alive, before the new password is hashed.
    CheckResetLink {
        token: String,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    ResetPassword {
        token: String,
        password_hash: String,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    /// The signed-in user's password hash, to check the current password off the actor.
    PasswordCredential {
        bearer: Bearer,
        reply: RpcReplyPort<Result<Credential, TenantError>>,
    },
    ChangePassword {
        bearer: Bearer,
        credential: Credential,
        current_ok: bool,
        new_hash: String,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    /// Starts TOTP setup: a new pending seed.
    MfaSetup {
        who: MfaWho,
        reply: RpcReplyPort<Result<MfaSecret, TenantError>>,
    },
    /// Confirms the pending seed; answers the recovery codes.
    MfaVerifySetup {
        who: MfaWho,
        code: String,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<Vec<String>, TenantError>>,
    },
    /// Answers an MFA login challenge or the gate's TOTP step-up challenge.
    MfaVerify {
        challenge: String,
        code: String,
        bearer: Option<Bearer>,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<MfaVerified, TenantError>>,
    },
    MfaDisable {
        bearer: Bearer,
        credential: Credential,
        password_ok: bool,
        code: String,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    MfaRegenerateCodes {
        bearer: Bearer,
        credential: Credential,
        password_ok: bool,
        code: String,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<Vec<String>, TenantError>>,
    },
    /// Step-up with the password, checked off the actor.
    StepUpPassword {
        bearer: Bearer,
        credential: Credential,
        password_ok: bool,
        latency_ms: i128,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<StepUpGrant, TenantError>>,
    },
    /// Mails a step-up code (`link: false`) or link (`link: true`); answers the masked address.
    StepUpMailInitiate {
        bearer: Bearer,
        link: bool,
        action_hint: Option<String>,
        /// For a link: where the hosted page hands its token to the app.
        redirect_to: Option<String>,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<String, TenantError>>,
    },
    StepUpEmailVerify {
        bearer: Bearer,
        otp: String,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<StepUpGrant, TenantError>>,
    },
    StepUpLinkVerify {
        bearer: Bearer,
        token: String,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<StepUpGrant, TenantError>>,
    },
    /// Starts a passkey registration for the signed-in user (step-up already passed):
    /// answers the `publicKey` creation options.
    PasskeyRegisterBegin {
        bearer: Bearer,
        reply: RpcReplyPort<Result<serde_json::Value, TenantError>>,
    },
    /// Finishes a registration of the caller's session with the browser's credential.
    PasskeyRegisterFinish {
        bearer: Bearer,
        response: serde_json::Value,
        nickname: Option<String>,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<PasskeyView, TenantError>>,
    },
    /// Starts a passkey sign-in: for one user (`user_handle`) or any discoverable one.
    PasskeyAssertBegin {
        user_handle: Option<String>,
        ip: IpAddr,
        reply: RpcReplyPort<Result<serde_json::Value, TenantError>>,
    },
    /// Takes the ceremony of a sign-in's assertion and finds its passkey: the signature is
    /// then checked off the actor.
    PasskeyAssertTake {
        response: serde_json::Value,
        ip: IpAddr,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<crate::tenant::passkeys::PasskeyCheck, TenantError>>,
    },
    /// Finishes a passkey sign-in with the verdict on its signature.
    PasskeyAssertFinish {
        passkey: crate::tenant::passkeys::CheckedPasskey,
        verdict: crate::tenant::passkeys::AssertionVerdict,
        ip: IpAddr,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<LoginOutcome, TenantError>>,
    },
    /// The step-up options: the caller's passkeys, user verification required.
    PasskeyStepUpOptions {
        bearer: Bearer,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<serde_json::Value, TenantError>>,
    },
    /// A passkey step-up, first half: takes the options of the caller's session that the
    /// assertion names; the signature is then checked off the actor.
    PasskeyStepUpTake {
        bearer: Bearer,
        assertion: serde_json::Value,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<crate::tenant::passkeys::PasskeyCheck, TenantError>>,
    },
    /// A passkey step-up, second half: the verdict on the signature.
    PasskeyStepUpFinish {
        bearer: Bearer,
        passkey: crate::tenant::passkeys::CheckedPasskey,
        verdict: crate::tenant::passkeys::AssertionVerdict,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<StepUpGrant, TenantError>>,
    },
    /// The caller's passkeys.
    PasskeyList {
        bearer: Bearer,
        reply: RpcReplyPort<Result<Vec<PasskeyView>, TenantError>>,
    },
    /// Renames one of the caller's passkeys (step-up already passed).
    PasskeyRename {
        bearer: Bearer,
        id: Uuid,
        nickname: String,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<PasskeyView, TenantError>>,
    },
    /// Deletes one of the caller's passkeys (step-up already passed).
    PasskeyDelete {
        bearer: Bearer,
        id: Uuid,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    /// Changes the relying-party id and the extra origins; a change that strands users'
    /// passkeys needs `confirmed`.
    PasskeyDomain {
        rp_id: Option<Option<String>>,
        origins: Option<Vec<String>>,
        confirmed: bool,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<SettingsView, TenantError>>,
    },
    /// The OAuth client registry (dashboard and admin CLI).
    /// The authorization server: authorize, consent, token, userinfo, revoke, introspect and
    /// the user's consents.
    OAuth {
        cmd: crate::tenant::oauth::OAuthCmd,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<crate::tenant::oauth::OAuthAnswer, TenantError>>,
    },
    OAuthClients {
        cmd: crate::tenant::oauth_clients::OAuthClientCmd,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<crate::tenant::oauth_clients::OAuthClientAnswer, TenantError>>,
    },
    /// Social sign-in: the authorize route, the callback and the exchange.
    Social {
        cmd: crate::tenant::social::SocialCmd,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<crate::tenant::social::SocialAnswer, TenantError>>,
    },
    /// The tenant's configuration of a social sign-in provider (dashboard).
    SocialConfig {
        cmd: crate::tenant::social::SocialConfigCmd,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<crate::tenant::social::SocialProviderView, TenantError>>,
    },
    /// Wallet sign-in and age verification.
    Eudi {
        cmd: crate::tenant::eudi::EudiCmd,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<crate::tenant::eudi::EudiAnswer, TenantError>>,
    },
    /// Agents: the registry, their grants, their users and their activity.
    Agents {
        cmd: crate::tenant::agents::AgentCmd,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<crate::tenant::agents::AgentAnswer, TenantError>>,
    },
    /// Guardian consent for minors: the child's request, the consent page, the portal.
    Guardian {
        cmd: crate::tenant::guardian::GuardianCmd,
        /// The client's address, for the guardian routes' per-address limit.
        ip: IpAddr,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<crate::tenant::guardian::GuardianAnswer, TenantError>>,
    },
    /// A portal link for a guardian who consented for that child; silently nothing otherwise.
    GuardianManagementLink {
        child_email: String,
        guardian_email: String,
        ip: IpAddr,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    /// Webhooks: the endpoints, the delivery log, and the worker's due deliveries and
    /// outcomes.
    Webhooks {
        cmd: crate::tenant::webhooks::WebhookCmd,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<crate::tenant::webhooks::WebhookAnswer, TenantError>>,
    },
    /// A gated request came without a step-up token.
    StepUpGate {
        bearer: Bearer,
        reply: RpcReplyPort<Result<GateChallenge, TenantError>>,
    },
    /// A gated request came with a (verified) step-up token: consume it.
    ConsumeStepUp {
        bearer: Bearer,
        jti: Uuid,
        reply: RpcReplyPort<Result<StepUpUse, TenantError>>,
    },
    /// Mails a login link when the address has an account (one request per address a minute).
    MagicLinkRequest {
        email: String,
        oauth: Option<OAuthResume>,
        hosted: HostedReturn,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    /// A hosted page's look at a mailed link (nothing is used).
    HostedPeek {
        link: HostedLink,
        token: String,
        reply: RpcReplyPort<Result<HostedView, TenantError>>,
    },
    /// What the hosted sign-in page of the authorization server offers (nothing is used).
    SignInView {
        reply: RpcReplyPort<Result<SignInView, TenantError>>,
    },
    /// The hosted login-link page's button: answers the code and where to send it.
    HostedMagicLink {
        token: String,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<(String, String), TenantError>>,
    },
    /// `POST /v1/auth/token/exchange`: a hosted page's code and its PKCE verifier.
    ExchangeCode {
        code: String,
        code_verifier: String,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<PasswordlessLogin, TenantError>>,
    },
    MagicLinkVerify {
        token: String,
        /// Hex SHA-256 of the `resume_binding` sent, if any.
        binding_hash: Option<String>,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<PasswordlessLogin, TenantError>>,
    },
    /// Mails a login code when the address has an account, or (`create`) in any case.
    EmailOtpRequest {
        email: String,
        create: bool,
        oauth: Option<OAuthResume>,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    EmailOtpVerify {
        email: String,
        code: String,
        binding_hash: Option<String>,
        ip: IpAddr,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<PasswordlessLogin, TenantError>>,
    },
    /// Texts a login code (answered at once, like every passwordless request).
    SmsOtpRequest {
        phone: Phone,
        create: bool,
        oauth: Option<OAuthResume>,
        ip: IpAddr,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    SmsOtpVerify {
        /// E.164.
        phone: String,
        code: String,
        binding_hash: Option<String>,
        ip: IpAddr,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<PasswordlessLogin, TenantError>>,
    },
    /// Texts a code confirming a signed-in user's number.
    PhoneVerifyRequest {
        bearer: Bearer,
        phone: Phone,
        ip: IpAddr,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    PhoneConfirm {
        bearer: Bearer,
        /// E.164.
        phone: String,
        code: String,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<UserView, TenantError>>,
    },
    /// Checks and counts the dashboard's test message, and answers it for the caller to send.
    SmsTest {
        phone: Phone,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<crate::outbound::SmsJob, TenantError>>,
    },
    /// A new guest and its session.
    AnonymousSignin {
        ip: IpAddr,
        public_metadata: serde_json::Value,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<Grant, TenantError>>,
    },
    /// Registration by a signed-in guest: the same user becomes registered.
    Claim {
        bearer: Bearer,
        registration: Registration,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<UserView, TenantError>>,
    },
    /// Deletes (or counts, dry) the guests inactive beyond the tenant's retention.
    PurgeGuests {
        as_of: OffsetDateTime,
        dry_run: bool,
        reply: RpcReplyPort<Result<PurgeReport, TenantError>>,
    },
    /// A new signing key; the previous one stays published until its tokens have expired.
    /// `rsa_pkcs8`: a new RS256 key (generated by the caller, off the actor), which replaces
    /// the tenant's current one if it has one.
    RotateSigningKey {
        rsa_pkcs8: Option<zeroize::Zeroizing<Vec<u8>>>,
        reply: RpcReplyPort<Result<RotatedKeys, TenantError>>,
    },
    /// The tenant's first RS256 key for ID tokens (generated by the caller, off the actor);
    /// nothing when it has one. Answers whether it was added (published once durable).
    AddIdTokenKey {
        pkcs8: zeroize::Zeroizing<Vec<u8>>,
        reply: RpcReplyPort<Result<bool, TenantError>>,
    },
    /// Delivery is done with a queued message (sent, or given up). No reply.
    MailSettled { id: Uuid },
    GetSettings {
        reply: RpcReplyPort<Result<SettingsView, TenantError>>,
    },
    /// One settings change and its audit event, atomically.
    UpdateSettings {
        change: SettingsChange,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<SettingsView, TenantError>>,
    },
    /// Appends an audit event for something that happened outside the tenant (a dashboard
    /// login, a member change, a key rotation).
    AppendAudit {
        event_type: String,
        ctx: AuditContext,
        fields: Vec<String>,
        metadata: serde_json::Value,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    ListAudit {
        cursor: Option<Vec<u8>>,
        limit: usize,
        event_type: Option<String>,
        reply: RpcReplyPort<Result<AuditPage, TenantError>>,
    },
    /// The tenant's platform facts and its settings.
    GetOverview {
        reply: RpcReplyPort<Result<TenantOverview, TenantError>>,
    },
    /// The directory changed a platform fact (tier, API key). No reply.
    UpdateInfo { info: TenantInfo },
    /// Writes users that come with an Argon2id hash (`admin user import`), in one batch.
    ImportUsers {
        users: Vec<ImportedUser>,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<ImportOutcome, TenantError>>,
    },
    /// A page of the users list.
    ListUsers {
        query: UserQuery,
        reply: RpcReplyPort<Result<UserPage, TenantError>>,
    },
    GetUser {
        id: Uuid,
        reply: RpcReplyPort<Result<UserDetail, TenantError>>,
    },
    CreateUser {
        user: NewUser,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<UserDetail, TenantError>>,
    },
    UpdateUser {
        id: Uuid,
        patch: UserPatch,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<UserDetail, TenantError>>,
    },
    ActOnUser {
        id: Uuid,
        action: UserAction,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<UserDetail, TenantError>>,
    },
    /// Erases a user and everything keyed to them (an admin's request).
    DeleteUser {
        id: Uuid,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    /// Everything held about the caller (GDPR art. 15 and 20).
    ExportMe {
        bearer: Bearer,
        reply: RpcReplyPort<Result<serde_json::Value, TenantError>>,
    },
    /// Erases the caller (GDPR art. 17), when the tenant allows it.
    DeleteMe {
        bearer: Bearer,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    /// Every record of the tenant whose key or plain value holds one of `needles` (an
    /// operator's check that an erasure left nothing behind).
    UserTraces {
        needles: Vec<Vec<u8>>,
        reply: RpcReplyPort<Result<Vec<Trace>, TenantError>>,
    },
    /// What a user holds of each kind of credential, as stored (the kinds with something):
    /// the operator's check that a recovery or an erasure left the holder nothing.
    UserCredentials {
        id: uuid::Uuid,
        reply: RpcReplyPort<Result<Vec<HeldCredential>, TenantError>>,
    },
    /// Crashes the actor when fault injection is enabled; otherwise answers an error.
    InjectPanic {
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    /// Holds the actor's mailbox for `millis` when fault injection is enabled (a slow tenant);
    /// otherwise answers an error.
    InjectStall {
        millis: u64,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
}
