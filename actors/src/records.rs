//! Platform records, owned by the directory: tenants, their API-key and slug indexes, dashboard
//! accounts and onboarding idempotency records.

use crate::known_devices::KnownDevice;
use serde::{Deserialize, Serialize};
use tessera_storage::{Kind, Sealed, TenantId};
use time::OffsetDateTime;
use uuid::Uuid;

/// A tenant's commercial tier: sets its default limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    Free,
    Pro,
    Enterprise,
}

impl Tier {
    pub fn parse(s: &str) -> Option<Tier> {
        match s {
            "free" => Some(Tier::Free),
            "pro" => Some(Tier::Pro),
            "enterprise" => Some(Tier::Enterprise),
            _ => None,
        }
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Tier::Free => "free",
            Tier::Pro => "pro",
            Tier::Enterprise => "enterprise",
        }
    }

    /// Monthly active users a tier allows unless the operator overrides it; `None`: no cap.
    pub fn default_mau_cap(&self) -> Option<u64> {
        match self {
            Tier::Free => Some(10_000),
            Tier::Pro => Some(100_000),
            Tier::Enterprise => None,
        }
    }
}

/// The API key of a tenant, as stored: never the key itself.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ApiKeyMeta {
    /// SHA-256 of the whole key.
    pub hash: [u8; 32],
    /// The first characters of the key, for operators to recognise it.
    pub prefix: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// A tenant, as the platform knows it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TenantRecord {
    pub id: TenantId,
    pub slug: String,
    pub name: String,
    pub tier: Tier,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub api_key: ApiKeyMeta,
    /// The operator's monthly-active-user cap (`tenant set-limits`); `None`: the tier's.
    #[serde(default)]
    pub mau_cap: Option<u64>,
}

tessera_storage::record!(TenantRecord in PlatformRecord: Kind::Tenant, "tenant", version 1);

/// `slug -> tenant` and `API-key hash -> tenant`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TenantRef {
    pub tenant: TenantId,
}

/// Index by slug.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SlugIndex(pub TenantRef);
tessera_storage::record!(SlugIndex in PlatformRecord: Kind::TenantSlug, "slug index", version 1);

/// Index by API-key hash.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ApiKeyIndex(pub TenantRef);
tessera_storage::record!(
    ApiKeyIndex in PlatformRecord: Kind::ApiKeyIndex, "api key index", version 1
);

/// A key a tenant's back end manages the tenant's users with (`tmk_...`): stored as its
/// SHA-256 only, under `tenant id | key id`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ManagementKeyRecord {
    pub id: Uuid,
    pub tenant: TenantId,
    pub name: String,
    /// `Admin` or `Viewer`.
    pub role: Role,
    /// The first characters of the key, for people to recognise it.
    pub prefix: String,
    pub hash: [u8; 32],
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// The dashboard account that created it.
    pub created_by: Uuid,
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub revoked_at: Option<OffsetDateTime>,
}

impl ManagementKeyRecord {
    pub fn key_of(tenant: TenantId, id: Uuid) -> Vec<u8> {
        let mut k = tenant.as_bytes().to_vec();
        k.extend_from_slice(id.as_bytes());
        k
    }
}

tessera_storage::record!(
    ManagementKeyRecord in PlatformRecord: Kind::ManagementKey, "management key", version 1
);

/// A member's role in a tenant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Owner,
    Admin,
    Viewer,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Membership {
    pub tenant: TenantId,
    pub role: Role,
}

/// A person who operates tenants through the dashboard.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DashboardAccount {
    pub id: Uuid,
    /// Lowercased.
    pub email: String,
    /// Argon2id PHC string.
    pub password_hash: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub memberships: Vec<Membership>,
    /// Whether the holder of the mailbox has shown that this account is theirs: by the
    /// mailed verification link (with the account's own session), a password reset, or an
    /// accepted invitation. Until then the account reaches only `onboarded_tenant`, and
    /// whoever proves the mailbox takes the account over (its password and sessions end).
    /// Accounts written before this field existed read as unverified.
    #[serde(default)]
    pub email_verified: bool,
    /// The tenant this account created at onboarding: the one tenant it may use unverified.
    #[serde(default)]
    pub onboarded_tenant: Option<TenantId>,
    /// Bumped when the password is replaced by a mailbox proof; sessions and mailed tokens
    /// carry the epoch they were made in and die when it moves.
    #[serde(default)]
    pub epoch: u32,
    /// The account's second factor, once set up: every login then asks for a code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub totp: Option<DashboardTotp>,
    /// A TOTP seed waiting for its first code (sealed, bound to the account).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub totp_pending: Option<tessera_storage::Sealed>,
}

/// A dashboard account's TOTP factor and its unused recovery codes.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DashboardTotp {
    /// The seed, sealed with the master key and bound to the account.
    pub seed: tessera_storage::Sealed,
    /// The last accepted time step: a code is accepted once, and never an older one.
    pub last_step: u64,
    /// Keyed hashes (hex) of the unused recovery codes.
    pub recovery_codes: Vec<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub enabled_at: OffsetDateTime,
}

impl DashboardAccount {
    /// Whether this account may act in `tenant` (verified, or the tenant it onboarded).
    pub fn may_use(&self, tenant: &TenantId) -> bool {
        self.email_verified || self.onboarded_tenant.as_ref() == Some(tenant)
    }
}

tessera_storage::record!(
    DashboardAccount in PlatformRecord: Kind::DashboardAccount, "dashboard account", version 1
);

/// A known device of a dashboard account (see `known_devices`), keyed `account id | device id`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DashboardDevice {
    pub account_id: Uuid,
    #[serde(flatten)]
    pub device: KnownDevice,
}

tessera_storage::record!(
    DashboardDevice in PlatformRecord: Kind::DashboardDevice, "dashboard device", version 1
);

/// Index of dashboard accounts by lowercased e-mail.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AccountEmailIndex {
    pub account: Uuid,
}
tessera_storage::record!(
    AccountEmailIndex in PlatformRecord: Kind::DashboardEmail, "account e-mail index", version 1
);

/// The first answer to an onboarding request with an idempotency key, kept 24 hours so a retry
/// gets the same answer. Keyed by a keyed hash of the idempotency key; the answer holds the API
/// key, so it is sealed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IdempotencyRecord {
    pub body_hash: [u8; 32],
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub response: Sealed,
}
tessera_storage::record!(
    IdempotencyRecord in PlatformRecord: Kind::Idempotency, "idempotency record", version 1
);

/// A dashboard session, keyed by the SHA-256 of its token.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DashboardSession {
    pub account_id: Uuid,
    /// SHA-256 of the session's CSRF value (the value itself went to the client once).
    pub csrf_hash: [u8; 32],
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub last_seen_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option", default)]
    pub reauth_at: Option<OffsetDateTime>,
    /// The account's `epoch` when the session began; a session of an older epoch is dead.
    #[serde(default)]
    pub epoch: u32,
}
tessera_storage::record!(
    DashboardSession in PlatformRecord: Kind::DashboardSession, "dashboard session", version 1
);

/// A member of a tenant, keyed `tenant id | account id`; the account's `memberships` list is
/// the same fact seen from the other side, written in the same batch.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MembershipRecord {
    pub role: Role,
    #[serde(with = "time::serde::rfc3339")]
    pub added_at: OffsetDateTime,
}
tessera_storage::record!(
    MembershipRecord in PlatformRecord: Kind::Membership, "membership", version 1
);

/// What an invitation offers and for how long: the role, who invited, when, and until when.
/// The invitation and its pending entry carry it flattened: its fields stand beside theirs,
/// as they always have.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InviteTerms {
    pub role: Role,
    pub invited_by: Uuid,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

/// An invitation to join a tenant, keyed by the SHA-256 of its single-use token.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InviteRecord {
    pub tenant: TenantId,
    pub email: String,
    #[serde(flatten)]
    pub terms: InviteTerms,
}
tessera_storage::record!(InviteRecord in PlatformRecord: Kind::Invite, "invite", version 1);

/// A tenant's pending invitation of one address, keyed `tenant id | e-mail`: what the member
/// list shows, and how a new invitation of the same address replaces the old one.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PendingInvite {
    /// SHA-256 of the invitation's token (the `InviteRecord` key).
    pub token_hash: [u8; 32],
    #[serde(flatten)]
    pub terms: InviteTerms,
}
tessera_storage::record!(
    PendingInvite in PlatformRecord: Kind::PendingInvite, "pending invite", version 1
);

pub fn pending_invite_key(tenant: &TenantId, email: &str) -> Vec<u8> {
    let mut k = tenant.as_bytes().to_vec();
    k.extend_from_slice(email.as_bytes());
    k
}

/// What a mailed dashboard-account token proves when it comes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccountTokenPurpose {
    /// The address is the account holder's (redeemed with the account's own session).
    Verify,
    /// The mailbox holder chooses a new password.
    Reset,
}

/// A single-use token mailed to a dashboard account's address, keyed by its SHA-256.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AccountTokenRecord {
    pub account: Uuid,
    /// The address it was mailed to: the token is void if the account's address changed.
    pub email: String,
    pub purpose: AccountTokenPurpose,
    /// The account's `epoch` at issue: a password replaced since voids the token.
    pub epoch: u32,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}
tessera_storage::record!(
    AccountTokenRecord in PlatformRecord: Kind::DashboardAccountToken, "dashboard account token", version 1
);

impl Role {
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "owner" => Some(Role::Owner),
            "admin" => Some(Role::Admin),
            "viewer" => Some(Role::Viewer),
            _ => None,
        }
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Admin => "admin",
            Role::Viewer => "viewer",
        }
    }
}

/// The membership key: `tenant id | account id`.
pub fn membership_key(tenant: &TenantId, account: &Uuid) -> Vec<u8> {
    let mut k = tenant.as_bytes().to_vec();
    k.extend_from_slice(account.as_bytes());
    k
}
