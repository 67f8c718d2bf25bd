//! Organizations: the companies a tenant's app serves, inside the tenant. Each has members
//! (users of the tenant) with a role; a role grants permissions (strings the app decides
//! on): the three built-in roles (`owner`, `admin`, `member`) and the roles the tenant
//! defines. The tenant's admins manage them (dashboard, management keys); a user is invited
//! by a mailed single-use link, may belong to many, and works in one at a time: a session
//! names its organization (`SessionRecord::org`), and its access tokens carry `org_id`,
//! `org_role` and `org_permissions`, read from the membership whenever a token is issued.
//!
//! Ending a membership (removal, the organization's deletion) ends the member's sessions
//! that work in that organization in the same batch, so their tokens stop at once; a role
//! change shows in the next token.
//!
//! An invitation proves the address it was mailed to, under the rules of the credential
//! inventory: a confirmed account joins by the link alone (it gives the link's holder no way
//! in); an address without an account gets one with the password the holder chooses; an
//! account that never confirmed its address is recovered first (`recover_address`: whoever
//! registered it keeps no way in). Memberships are only ever held by confirmed accounts, so
//! a takeover of an unconfirmed one finds none.
//!
//! Its parts: `policy.rs` (limits, built-in roles, shapes), `records.rs`, `error.rs`,
//! `admin.rs` (what the tenant's admins do), `member.rs` (what users do: their list, the
//! switch, invitations; the claims of a session's tokens; export and erasure), `counts.rs`
//! (each organization's member count, kept between joins) and `msg.rs` (`OrgCmd`, its
//! answers and its dispatch).

mod admin;
mod counts;
pub mod domains;
mod error;
mod member;
pub mod msg;
pub mod policy;
pub mod records;

use serde::Serialize;
use time::OffsetDateTime;
use uuid::Uuid;

pub use counts::MemberCounts;
pub use error::OrgError;
pub use records::{Joined, OrgDomainRecord, OrgMemberRecord, OrganizationRecord};

/// The organizations flow. It keeps the number of organizations once counted (the tier's
/// limit is checked against it).
#[derive(Default)]
pub struct Organizations {
    count: Option<usize>,
}

/// An organization as created, validated by the caller.
#[derive(Clone, Debug)]
pub struct NewOrganization {
    pub name: String,
    pub external_id: Option<String>,
    pub metadata: serde_json::Value,
}

/// A change to an organization, validated by the caller; `None`: unchanged.
#[derive(Clone, Debug, Default)]
pub struct OrganizationPatch {
    pub name: Option<String>,
    pub external_id: Option<Option<String>>,
    pub metadata: Option<serde_json::Value>,
}

/// A member as listed: the membership and the user's address.
#[derive(Clone, Debug, Serialize)]
pub struct MemberView {
    pub user_id: Uuid,
    pub email: Option<String>,
    pub role: String,
    pub joined_via: &'static str,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// A pending invitation as listed.
#[derive(Clone, Debug, Serialize)]
pub struct InviteView {
    pub email: String,
    pub role: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

/// A role and what it grants.
#[derive(Clone, Debug, Serialize)]
pub struct RoleView {
    pub name: String,
    pub description: Option<String>,
    pub permissions: Vec<String>,
    pub built_in: bool,
}

/// One of a user's organizations, with their role in it.
#[derive(Clone, Debug, Serialize)]
pub struct MyOrganization {
    pub id: Uuid,
    pub name: String,
    pub role: String,
    pub permissions: Vec<String>,
    /// Whether the caller's session works in it.
    pub active: bool,
}

/// What a mailed invitation's holder sees before using it.
#[derive(Clone, Debug)]
pub struct InvitePreview {
    pub organization_id: Uuid,
    pub organization_name: String,
    pub email: String,
    pub role: String,
    pub expires_at: OffsetDateTime,
    /// The address has no account, or one that never confirmed it: accepting sets a
    /// password.
    pub needs_password: bool,
}

/// An accepted invitation.
#[derive(Clone, Debug)]
pub struct Accepted {
    pub organization_id: Uuid,
    pub user_id: Uuid,
    /// The invitation made the account.
    pub account_created: bool,
}

/// The organization a token is for: what `org_id`, `org_role` and `org_permissions` say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrgClaim {
    pub id: Uuid,
    pub role: String,
    pub permissions: Vec<String>,
}
