//! The refusals of organizations, their members, roles and invitations.
//!
//! `TenantError::Organization` carries one; the HTTP layer maps each beside the flow's routes.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum OrgError {
    #[error("the tenant has as many organizations as its tier allows ({limit})")]
    OrganizationLimit { limit: usize },
    #[error("the organization has as many members as the tenant's tier allows ({limit})")]
    MemberLimit { limit: usize },
    #[error("the user belongs to as many organizations as allowed ({limit})")]
    MembershipLimit { limit: usize },
    #[error("the organization has as many pending invitations as allowed ({limit})")]
    InviteLimit { limit: usize },
    #[error("the tenant has as many custom roles as allowed ({limit})")]
    RoleLimit { limit: usize },
    #[error("no such role")]
    UnknownRole,
    #[error("the role is a built-in role")]
    BuiltInRole,
    #[error("the role is held by members or pending invitations")]
    RoleInUse,
    #[error("another organization has this external id")]
    ExternalIdInUse,
    #[error("the user is already a member")]
    AlreadyMember,
    #[error("the user is not a member of the organization")]
    NotMember,
    #[error("the user's e-mail address is not confirmed")]
    AddressUnconfirmed,
    #[error("guests cannot join organizations")]
    Guest,
    #[error("the address has no account, or one it never confirmed: a password is needed")]
    PasswordRequired,
    #[error("the address has a confirmed account: it joins without a password")]
    PasswordNotWanted,
    #[error("the organization claims this domain already")]
    DomainClaimed,
    #[error("another organization of the tenant proved this domain")]
    DomainTaken,
    #[error("the organization claims as many domains as allowed ({limit})")]
    DomainLimit { limit: usize },
    #[error("no TXT record at {name} holds {value}")]
    DomainUnproven { name: String, value: String },
}
