//! What organizations keep in the store: the organizations, each membership (under the
//! organization, mirrored under the user), the roles and their permissions, and the pending
//! invitations with their per-address index.

use serde::{Deserialize, Serialize};
use tessera_storage::Kind;
use time::OffsetDateTime;
use uuid::Uuid;

/// One of the tenant's organizations (a company its app serves), keyed by its id (a UUID v7:
/// listed oldest first).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OrganizationRecord {
    pub id: Uuid,
    pub name: String,
    /// What the app's own systems call it (unique in the tenant when set).
    #[serde(default)]
    pub external_id: Option<String>,
    /// Free-form data the tenant's admins keep on it.
    #[serde(default)]
    pub metadata: serde_json::Value,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

tessera_storage::record!(
    OrganizationRecord in TenantRecord: Kind::Organization, "organization", version 1
);

/// How a member came in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Joined {
    /// An admin added an existing user.
    Admin,
    /// The member accepted a mailed invitation.
    Invitation,
    /// The member signed in with a confirmed address at one of the organization's proven
    /// domains that adds members.
    Domain,
    /// The member signed in through one of the organization's single sign-on connections.
    Sso,
}

impl Joined {
    pub fn as_str(self) -> &'static str {
        match self {
            Joined::Admin => "admin",
            Joined::Invitation => "invitation",
            Joined::Domain => "domain",
            Joined::Sso => "sso",
        }
    }
}

/// A membership, keyed `organization id | user id`; its mirror [`UserOrgIndex`] is written
/// and removed in the same batch.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OrgMemberRecord {
    pub organization: Uuid,
    pub user: Uuid,
    pub role: String,
    pub joined: Joined,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

tessera_storage::record!(
    OrgMemberRecord in TenantRecord: Kind::OrgMember, "organization member", version 1
);

/// `user id | organization id` -> (): a user's organizations, for their list, the
/// export and the erasure.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct UserOrgIndex {}

tessera_storage::record!(UserOrgIndex in TenantRecord: Kind::UserOrg, "user organization", version 1);

/// A role of the tenant's organizations, keyed by its name: the permissions it grants. The
/// three built-in roles have a record only once their permissions were changed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OrgRoleRecord {
    pub name: String,
    pub description: Option<String>,
    pub permissions: Vec<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

tessera_storage::record!(OrgRoleRecord in TenantRecord: Kind::OrgRole, "organization role", version 1);

/// An invitation to join an organization, keyed by the SHA-256 of its mailed token:
/// single use; replaced by a new invitation of the same address to the same organization.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OrgInviteRecord {
    pub organization: Uuid,
    /// Normalised.
    pub email: String,
    pub role: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

tessera_storage::record!(
    OrgInviteRecord in TenantRecord: Kind::OrgInvite, "organization invitation", version 1
);

/// `organization id | e-mail` -> the pending invitation of that address (its token's hash,
/// hex), so an organization lists its invitations and a new one replaces the old.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OrgPendingInvite {
    pub hash: String,
    pub role: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

tessera_storage::record!(
    OrgPendingInvite in TenantRecord: Kind::OrgPendingInvite, "pending organization invitation", version 1
);

/// `a | b`: the key of a membership (`organization | user`) or its mirror (`user |
/// organization`).
pub fn pair_key(a: Uuid, b: Uuid) -> Vec<u8> {
    let mut k = a.as_bytes().to_vec();
    k.extend_from_slice(b.as_bytes());
    k
}

/// `organization id | e-mail`.
pub fn pending_key(organization: Uuid, email: &str) -> Vec<u8> {
    let mut k = organization.as_bytes().to_vec();
    k.extend_from_slice(email.as_bytes());
    k
}

/// The second id of a `a | b` key.
pub fn second_id(key: &[u8]) -> Option<Uuid> {
    key.get(16..32).and_then(|b| Uuid::from_slice(b).ok())
}

/// A domain an organization claims, keyed `organization | domain`: proven by a DNS TXT
/// record holding its token.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OrgDomainRecord {
    pub organization: Uuid,
    /// Lowercase, punycode.
    pub domain: String,
    /// What the TXT record must hold (`tessera-verification=<token>`); not a secret.
    pub token: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub verified_at: Option<OffsetDateTime>,
    /// Users who sign in with a confirmed address at the domain join as `member`.
    pub auto_join: bool,
    /// Addresses at the domain sign in only through the organization's single sign-on (no
    /// password, no mailed code or link, no new account by registration).
    #[serde(default)]
    pub sso_only: bool,
}

tessera_storage::record!(
    OrgDomainRecord in TenantRecord: Kind::OrgDomain, "organization domain", version 1
);

/// Domain -> the organization that proved it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VerifiedDomain {
    pub organization: Uuid,
}

tessera_storage::record!(VerifiedDomain in TenantRecord: Kind::VerifiedDomain, "verified domain", version 1);

/// `user | organization` -> (): an admin removed the member; the domain does not add them
/// again (an admin or an invitation may).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct OrgDeparted {}

tessera_storage::record!(OrgDeparted in TenantRecord: Kind::OrgDeparted, "organization departure", version 1);

/// `organization id | domain`.
pub fn domain_key(organization: Uuid, domain: &str) -> Vec<u8> {
    pending_key(organization, domain)
}

/// External id -> the organization that bears it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OrgExternalId {
    pub organization: Uuid,
}

tessera_storage::record!(
    OrgExternalId in TenantRecord: Kind::OrgExternalId, "organization external id", version 1
);
