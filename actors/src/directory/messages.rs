//! What crosses the directory's mailbox: [`DirectoryMsg`] and the values its commands take
//! and answer. Nothing here touches storage or the actor's state.

use std::net::IpAddr;

use ractor::RpcReplyPort;
use serde::{Deserialize, Serialize};
use tessera_storage::{ct_eq, sha256, TenantId};
use time::OffsetDateTime;
use uuid::Uuid;

use super::catalog::{CatalogScopeRecord, NewCatalogScope, ResourceRecord, TenantResource};
use crate::{
    published::RunningTenant,
    records::{AccountTokenPurpose, InviteTerms, ManagementKeyRecord, Role, Tier},
    reply::DirectoryReply,
    tenant::TenantInfo,
};

/// A management key to create.
#[derive(Clone, Debug)]
pub struct NewManagementKey {
    pub tenant: TenantId,
    pub name: String,
    /// `Admin` or `Viewer`.
    pub role: Role,
    pub expires_at: Option<OffsetDateTime>,
    pub created_by: Uuid,
}

/// A management key just created: its record and the key itself, shown once.
#[derive(Clone, Debug)]
pub struct CreatedManagementKey {
    pub record: ManagementKeyRecord,
    pub key: String,
}

pub enum DirectoryMsg {
    /// The operator registers a resource owned by `tenant`.
    RegisterResource {
        tenant: TenantId,
        name: String,
        uri: String,
        reply: DirectoryReply<ResourceRecord>,
    },
    /// A resource, whoever owns it.
    GetResource {
        id: Uuid,
        reply: DirectoryReply<Option<ResourceRecord>>,
    },
    /// The entries of a resource `tenant` owns; none for any other resource.
    ListCatalogScopes {
        tenant: TenantId,
        resource: Uuid,
        reply: DirectoryReply<Vec<CatalogScopeRecord>>,
    },
    /// Every resource `tenant` owns, with its catalog entries (for the authorization server).
    TenantCatalog {
        tenant: TenantId,
        reply: DirectoryReply<Vec<TenantResource>>,
    },
    RegisterCatalogScope {
        tenant: TenantId,
        scope: NewCatalogScope,
        reply: DirectoryReply<CatalogScopeRecord>,
    },
    DeleteCatalogScope {
        tenant: TenantId,
        resource: Uuid,
        scope: Uuid,
        reply: DirectoryReply<CatalogScopeRecord>,
    },
    /// Every entry, or every one awaiting the operator's review.
    CatalogScopes {
        pending_only: bool,
        reply: DirectoryReply<Vec<CatalogScopeRecord>>,
    },
    /// The operator approves an entry; answers it and whether this call approved it.
    ApproveCatalogScope {
        resource: Uuid,
        scope: Uuid,
        reply: DirectoryReply<(CatalogScopeRecord, bool)>,
    },
    CreateManagementKey {
        key: NewManagementKey,
        reply: DirectoryReply<CreatedManagementKey>,
    },
    /// A tenant's management keys, newest first, revoked ones included.
    ListManagementKeys {
        tenant: TenantId,
        reply: DirectoryReply<Vec<ManagementKeyRecord>>,
    },
    /// Revokes a key; answers it and whether this call revoked it (again: the record as it
    /// is, and false).
    RevokeManagementKey {
        tenant: TenantId,
        id: Uuid,
        reply: DirectoryReply<(ManagementKeyRecord, bool)>,
    },
    CreateTenant {
        req: NewTenant,
        reply: DirectoryReply<CreateOutcome>,
    },
    FindAccount {
        email: String,
        reply: RpcReplyPort<Option<AccountCredential>>,
    },
    ListTenants {
        reply: RpcReplyPort<Vec<TenantDetails>>,
    },
    /// The stored answer for an idempotency key and request (answered once durable).
    ReplayIdempotent {
        key: IdempotencyKey,
        reply: DirectoryReply<Option<Created>>,
    },
    ShowTenant {
        slug: String,
        reply: DirectoryReply<TenantDetails>,
    },
    SetTier {
        slug: String,
        tier: Tier,
        reply: DirectoryReply<TenantDetails>,
    },
    /// Overrides the tenant's monthly-active-user cap.
    SetLimits {
        slug: String,
        mau_cap: u64,
        reply: DirectoryReply<TenantDetails>,
    },
    RotateApiKey {
        slug: String,
        reply: DirectoryReply<RotatedKey>,
    },
    /// Re-seals every sealed value under `new` and makes it the master key (written to
    /// `key_path`). Tenant actors are stopped first (their memory holds sealed values) and
    /// start again, with the new key, when next used; requests wait meanwhile.
    RotateMasterKey {
        new: tessera_storage::MasterKey,
        key_path: std::path::PathBuf,
        reply: DirectoryReply<tessera_storage::RotationReport>,
    },
    /// Stops the tenant actors idle for longer than `tenant_idle` (sent by a timer).
    RetireIdle,
    /// Starts the tenant's actor unless it runs; answers it.
    EnsureRunning {
        tenant: TenantId,
        reply: DirectoryReply<RunningTenant>,
    },
    Ping {
        reply: RpcReplyPort<()>,
    },
    /// Checks the login throttles for `email` and `ip`, then answers the credential to verify.
    BeginLogin {
        email: String,
        ip: IpAddr,
        /// The device token the client kept from an earlier login.
        device_token: Option<String>,
        reply: RpcReplyPort<LoginGate>,
    },
    /// Counts one onboarding sign-up from `ip` (IPv6: its /64); `Err(retry_after_secs)` past
    /// the hourly limit. Sent before any hashing.
    AdmitSignup {
        ip: IpAddr,
        reply: RpcReplyPort<Result<(), u64>>,
    },
    /// Counts a failed password check against `email` and `ip`; answers once the count is
    /// durable.
    LoginFailed {
        email: String,
        ip: IpAddr,
        /// The known device the login presented (its count, not the account's).
        device: Option<Uuid>,
        reply: RpcReplyPort<()>,
    },
    /// An account's password was verified: a new dashboard session, or the challenge for
    /// its second factor.
    PasswordAccepted {
        account_id: Uuid,
        /// The address the password came from.
        ip: IpAddr,
        /// The known device it came from; `None`: a new device token is answered.
        device: Option<Uuid>,
        reply: DirectoryReply<LoginStep>,
    },
    /// The second step of a login: a code for the challenge `PasswordAccepted` answered.
    MfaLogin {
        challenge: String,
        code: String,
        ip: IpAddr,
        reply: DirectoryReply<NewSession>,
    },
    /// Starts setting up TOTP on an account (verified address, none set up yet).
    TotpSetup {
        account_id: Uuid,
        reply: DirectoryReply<TotpSecret>,
    },
    /// Confirms the pending TOTP seed with a code; answers the recovery codes.
    TotpConfirm {
        account_id: Uuid,
        code: String,
        reply: DirectoryReply<Vec<String>>,
    },
    /// Takes an account's second factor off; `false` when it had none.
    TotpRemove {
        account_id: Uuid,
        reply: DirectoryReply<bool>,
    },
    /// The operator takes the second factor off the account with this address.
    ResetAccountMfa {
        email: String,
        reply: DirectoryReply<bool>,
    },
    /// The live session for a token.
    Authenticate {
        token: String,
        reply: DirectoryReply<SessionInfo>,
    },
    Logout {
        token: String,
        reply: DirectoryReply<()>,
    },
    /// Records a successful re-authentication on the session.
    MarkReauth {
        token: String,
        reply: DirectoryReply<OffsetDateTime>,
    },
    /// The tenant's members and pending invitations.
    ListMembers {
        tenant: TenantId,
        reply: DirectoryReply<MemberList>,
    },
    /// Records an invitation (a token to mail); nobody is added before accepting.
    InviteMember {
        tenant: TenantId,
        email: String,
        role: Role,
        invited_by: Uuid,
        reply: DirectoryReply<Invitation>,
    },
    /// Withdraws a pending invitation.
    RevokeInvite {
        tenant: TenantId,
        email: String,
        reply: DirectoryReply<()>,
    },
    /// What accepting the invitation behind a token needs.
    InviteTarget {
        token: String,
        reply: DirectoryReply<InviteTarget>,
    },
    /// Consumes an invitation with the invitee's proof.
    AcceptInvite {
        token: String,
        proof: InviteProof,
        reply: DirectoryReply<AcceptedInvite>,
    },
    /// Changes a member's role (`Some`) or removes the member (`None`).
    ChangeMember {
        tenant: TenantId,
        account_id: Uuid,
        role: Option<Role>,
        reply: DirectoryReply<MemberChange>,
    },
    /// A verification or reset token to mail to an account, if any.
    IssueAccountToken {
        target: AccountTarget,
        purpose: AccountTokenPurpose,
        reply: DirectoryReply<Option<MailedToken>>,
    },
    /// Marks the session's account verified with a mailed token.
    VerifyAccount {
        token: String,
        account_id: Uuid,
        reply: DirectoryReply<()>,
    },
    /// Whether a mailed token of `purpose` is live (checked again when it is used).
    CheckAccountToken {
        token: String,
        purpose: AccountTokenPurpose,
        reply: DirectoryReply<()>,
    },
    /// Replaces the password through a mailed reset token.
    ResetPassword {
        token: String,
        password_hash: String,
        reply: DirectoryReply<AccountReset>,
    },
}

/// A new tenant, as validated by the caller (HTTP onboarding or the admin socket).
#[derive(Debug)]
pub struct NewTenant {
    pub name: String,
    /// A slug the operator chose; `None` derives one from the name.
    pub slug: Option<String>,
    pub owner: Option<NewOwner>,
    pub idempotency: Option<IdempotencyKey>,
}

/// Who owns a new tenant.
#[derive(Debug)]
pub enum NewOwner {
    /// A new dashboard account; the password was hashed by the caller, off this actor.
    Create {
        email: String,
        password_hash: String,
    },
    /// An existing account whose password the caller has verified.
    Existing { account_id: Uuid },
}

/// An onboarding idempotency key and a fingerprint of the request it came with.
#[derive(Debug)]
pub struct IdempotencyKey {
    pub key: String,
    pub fingerprint: Vec<u8>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TenantSummary {
    pub id: TenantId,
    pub slug: String,
    pub name: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OwnerSummary {
    pub id: Uuid,
    pub email: String,
}

/// The answer to a tenant creation: the API key appears here and nowhere else.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Created {
    pub tenant: TenantSummary,
    pub owner: Option<OwnerSummary>,
    pub api_key: String,
}

/// A creation, or the replay of an earlier one with the same idempotency key.
#[derive(Debug)]
pub struct CreateOutcome {
    pub created: Created,
    pub replayed: bool,
    /// The new owner account's address-verification token, to be mailed (never replayed).
    pub verification: Option<MailedToken>,
}

/// What operators see of a tenant.
#[derive(Clone, Debug, Serialize)]
pub struct TenantDetails {
    #[serde(flatten)]
    pub info: TenantInfo,
    pub owners: Vec<String>,
    pub running: bool,
}

/// A freshly rotated API key, shown once.
#[derive(Clone, Debug, Serialize)]
pub struct RotatedKey {
    pub tenant: TenantSummary,
    pub api_key: String,
}

/// A dashboard account's credential, for verification off the actor.
#[derive(Clone, Debug)]
pub struct AccountCredential {
    pub account_id: Uuid,
    pub password_hash: String,
    /// The known device the login presented a live token of.
    pub device: Option<Uuid>,
}

/// One of the caller's tenants.
#[derive(Clone, Debug, Serialize)]
pub struct MemberOf {
    pub tenant: TenantId,
    pub slug: String,
    pub name: String,
    pub role: Role,
}

/// A valid session, as the HTTP layer needs it.
#[derive(Clone, Debug)]
pub struct SessionInfo {
    pub account_id: Uuid,
    pub email: String,
    pub email_verified: bool,
    /// Whether logins to the account ask for a TOTP code.
    pub mfa_enabled: bool,
    /// Its unused recovery codes (0 without MFA).
    pub recovery_codes_left: usize,
    pub csrf_hash: [u8; 32],
    pub reauth_at: Option<OffsetDateTime>,
    pub expires_at: OffsetDateTime,
    pub memberships: Vec<MemberOf>,
}

impl SessionInfo {
    /// The caller's role in `slug`, if a member.
    pub fn role_in(&self, slug: &str) -> Option<&MemberOf> {
        self.memberships.iter().find(|m| m.slug == slug)
    }

    /// Whether `csrf` is this session's CSRF value (constant time).
    pub fn csrf_matches(&self, csrf: &str) -> bool {
        ct_eq(&sha256(csrf.as_bytes()), &self.csrf_hash)
    }
}

/// A session just created: the token and CSRF value are shown to the client once.
#[derive(Clone, Debug)]
pub struct NewSession {
    pub token: String,
    pub csrf: String,
    pub info: SessionInfo,
    /// A new device token, when the login came from a device without one.
    pub device_token: Option<String>,
}

/// What a verified password leads to.
#[derive(Debug)]
pub enum LoginStep {
    Session(NewSession),
    /// The account has a second factor: send a code with this challenge (single use).
    Mfa {
        challenge: String,
        expires_in: i64,
    },
}

/// A TOTP seed being set up: for the authenticator app, shown once.
#[derive(Debug)]
pub struct TotpSecret {
    /// Base32, for typing in.
    pub secret: String,
    /// The `otpauth://` URI (a QR code's content).
    pub otpauth_uri: String,
}

/// Whether a login may be attempted.
#[derive(Debug)]
pub enum LoginGate {
    Proceed(Option<AccountCredential>),
    Throttled { retry_after_secs: u64 },
}

#[derive(Clone, Debug, Serialize)]
pub struct MemberInfo {
    pub account_id: Uuid,
    pub email: String,
    pub role: Role,
    #[serde(with = "time::serde::rfc3339")]
    pub added_at: OffsetDateTime,
}

/// A pending invitation, as the member list shows it.
#[derive(Clone, Debug, Serialize)]
pub struct PendingInfo {
    pub email: String,
    #[serde(flatten)]
    pub terms: InviteTerms,
}

/// A tenant's members and pending invitations.
#[derive(Clone, Debug, Serialize)]
pub struct MemberList {
    pub members: Vec<MemberInfo>,
    pub invitations: Vec<PendingInfo>,
}

/// An invitation just recorded: its single-use token is to be mailed to the invitee.
#[derive(Clone, Debug)]
pub struct Invitation {
    pub token: String,
    pub email: String,
    pub role: Role,
    pub expires_at: OffsetDateTime,
    /// A pending invitation of the same address was replaced (its link stopped working).
    pub replaced: bool,
}

/// What accepting an invitation needs to be shown.
#[derive(Clone, Debug)]
pub struct InviteTarget {
    pub email: String,
    /// A verified account holds the address: its own password must be given.
    pub verified_account: bool,
}

/// How an invitee proved who they are, besides holding the token.
#[derive(Debug)]
pub enum InviteProof {
    /// The verified account's own password was checked (with the login throttles).
    Login { account_id: Uuid },
    /// The invitee chose a password: for a new account, or one never verified (taken over).
    NewPassword { password_hash: String },
}

#[derive(Clone, Debug, Serialize)]
pub struct AcceptedInvite {
    pub account_id: Uuid,
    pub email: String,
    pub tenant_slug: String,
    pub role: Role,
    /// An unverified account held the address; the invitee took it over.
    pub reclaimed: bool,
    /// The tenants the taken-over account was detached from (empty unless `reclaimed`).
    pub detached: Vec<DetachedTenant>,
}

/// A tenant a mailbox proof detached from the unverified account it took over: whoever
/// created the account (and holds the tenant's API key) made it, not the prover.
#[derive(Clone, Debug, Serialize)]
pub struct DetachedTenant {
    pub tenant: TenantId,
    pub slug: String,
    pub name: String,
    /// The account's role there until the proof.
    pub role: Role,
}

/// A member's role changed (`role` is `Some`) or the member was removed.
#[derive(Clone, Debug)]
pub struct MemberChange {
    pub account_id: Uuid,
    pub email: String,
    pub previous: Role,
    pub role: Option<Role>,
}

/// Which account a mailed token is for.
#[derive(Clone, Debug)]
pub enum AccountTarget {
    /// The caller's own account (by its session).
    Id(Uuid),
    /// Whatever account holds this address, asked for from `ip`.
    Email { email: String, ip: IpAddr },
}

/// A token to mail, and where.
#[derive(Clone, Debug)]
pub struct MailedToken {
    pub token: String,
    pub email: String,
    /// For a reset of an account never verified: the tenants using the token will detach
    /// from it, for the mail to name before the holder of the mailbox chooses.
    pub detaches: Vec<DetachedTenant>,
}

/// A password reset through the mailbox.
#[derive(Clone, Debug)]
pub struct AccountReset {
    pub account_id: Uuid,
    /// The tenants the account may use now, for their audit logs.
    pub slugs: Vec<String>,
    /// The account had never been verified: whoever set its old password lost it.
    pub reclaimed: bool,
    /// The tenants the account was detached from (empty unless `reclaimed`).
    pub detached: Vec<DetachedTenant>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member_of(slug: &str, role: Role) -> MemberOf {
        MemberOf {
            tenant: TenantId::new(),
            slug: slug.into(),
            name: slug.to_uppercase(),
            role,
        }
    }

    #[test]
    fn a_session_names_its_role_per_tenant_and_knows_only_its_own_csrf_value() {
        let now = OffsetDateTime::now_utc();
        let info = SessionInfo {
            account_id: Uuid::now_v7(),
            email: "owner@acme.example".into(),
            email_verified: true,
            mfa_enabled: false,
            recovery_codes_left: 0,
            csrf_hash: sha256(b"the csrf value"),
            reauth_at: None,
            expires_at: now,
            memberships: vec![
                member_of("acme", Role::Owner),
                member_of("globex", Role::Viewer),
            ],
        };
        assert_eq!(info.role_in("acme").map(|m| m.role), Some(Role::Owner));
        assert_eq!(info.role_in("globex").map(|m| m.role), Some(Role::Viewer));
        assert!(info.role_in("initech").is_none());
        assert!(info.role_in("ACME").is_none());
        assert!(info.csrf_matches("the csrf value"));
        assert!(!info.csrf_matches("the csrf valu"));
        assert!(!info.csrf_matches(""));
    }

    #[test]
    fn a_creation_answer_round_trips_through_its_stored_form() {
        // Onboarding replays this answer from its sealed JSON.
        let created = Created {
            tenant: TenantSummary {
                id: TenantId::new(),
                slug: "acme".into(),
                name: "Acme".into(),
            },
            owner: Some(OwnerSummary {
                id: Uuid::now_v7(),
                email: "owner@acme.example".into(),
            }),
            api_key: "tsk_secret".into(),
        };
        let back: Created = serde_json::from_slice(&serde_json::to_vec(&created).unwrap()).unwrap();
        assert_eq!(back.tenant.id, created.tenant.id);
        assert_eq!(
            (back.tenant.slug.as_str(), back.tenant.name.as_str()),
            ("acme", "Acme")
        );
        let owner = back.owner.unwrap();
        assert_eq!(owner.id, created.owner.as_ref().unwrap().id);
        assert_eq!(owner.email, "owner@acme.example");
        assert_eq!(back.api_key, "tsk_secret");
        let ownerless = Created {
            owner: None,
            ..created
        };
        let back: Created =
            serde_json::from_slice(&serde_json::to_vec(&ownerless).unwrap()).unwrap();
        assert!(back.owner.is_none());
        assert!(serde_json::from_slice::<Created>(br#"{"tenant":{"slug":"acme"}}"#).is_err());
    }
}
