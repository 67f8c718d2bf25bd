//! Platform records, owned by the directory: tenants, their API-key and slug indexes, dashboard
//! accounts and onboarding idempotency records.

use serde::{Deserialize, Serialize};
use tessera_storage::{Kind, PlatformRecord, Record, Sealed, TenantId};
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

impl Record for TenantRecord {
    const KIND: Kind = Kind::Tenant;
    const NAME: &'static str = "tenant";
    const VERSION: u16 = 1;
}
impl PlatformRecord for TenantRecord {}

/// `slug -> tenant` and `API-key hash -> tenant`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TenantRef {
    pub tenant: TenantId,
}

/// Index by slug.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SlugIndex(pub TenantRef);
impl Record for SlugIndex {
    const KIND: Kind = Kind::TenantSlug;
    const NAME: &'static str = "slug index";
    const VERSION: u16 = 1;
}
impl PlatformRecord for SlugIndex {}

/// Index by API-key hash.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ApiKeyIndex(pub TenantRef);
impl Record for ApiKeyIndex {
    const KIND: Kind = Kind::ApiKeyIndex;
    const NAME: &'static str = "api key index";
    const VERSION: u16 = 1;
}
impl PlatformRecord for ApiKeyIndex {}

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
}

impl Record for DashboardAccount {
    const KIND: Kind = Kind::DashboardAccount;
    const NAME: &'static str = "dashboard account";
    const VERSION: u16 = 1;
}
impl PlatformRecord for DashboardAccount {}

/// Index of dashboard accounts by lowercased e-mail.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AccountEmailIndex {
    pub account: Uuid,
}
impl Record for AccountEmailIndex {
    const KIND: Kind = Kind::DashboardEmail;
    const NAME: &'static str = "account e-mail index";
    const VERSION: u16 = 1;
}
impl PlatformRecord for AccountEmailIndex {}

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
impl Record for IdempotencyRecord {
    const KIND: Kind = Kind::Idempotency;
    const NAME: &'static str = "idempotency record";
    const VERSION: u16 = 1;
}
impl PlatformRecord for IdempotencyRecord {}

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
}
impl Record for DashboardSession {
    const KIND: Kind = Kind::DashboardSession;
    const NAME: &'static str = "dashboard session";
    const VERSION: u16 = 1;
}
impl PlatformRecord for DashboardSession {}

/// A member of a tenant, keyed `tenant id | account id`; the account's `memberships` list is
/// the same fact seen from the other side, written in the same batch.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MembershipRecord {
    pub role: Role,
    #[serde(with = "time::serde::rfc3339")]
    pub added_at: OffsetDateTime,
}
impl Record for MembershipRecord {
    const KIND: Kind = Kind::Membership;
    const NAME: &'static str = "membership";
    const VERSION: u16 = 1;
}
impl PlatformRecord for MembershipRecord {}

/// An invitation to join a tenant, keyed by the SHA-256 of its single-use token.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InviteRecord {
    pub tenant: TenantId,
    pub email: String,
    pub role: Role,
    pub invited_by: Uuid,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}
impl Record for InviteRecord {
    const KIND: Kind = Kind::Invite;
    const NAME: &'static str = "invite";
    const VERSION: u16 = 1;
}
impl PlatformRecord for InviteRecord {}

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
