//! The rules of organizations: the limits of each tier, the built-in roles and what they
//! grant, and the shapes of names and permissions (checked by the edge for its field errors
//! and relied on here).

use time::Duration;

use crate::records::Tier;

/// The roles every tenant's organizations have; the tenant may change what they grant but
/// not remove them.
pub const BUILT_IN_ROLES: [&str; 3] = ["owner", "admin", "member"];

/// What a built-in role grants until the tenant changes it.
pub fn default_permissions(role: &str) -> Option<&'static [&'static str]> {
    match role {
        "owner" => Some(&[
            "organization:read",
            "organization:update",
            "organization:delete",
            "members:read",
            "members:manage",
        ]),
        "admin" => Some(&[
            "organization:read",
            "organization:update",
            "members:read",
            "members:manage",
        ]),
        "member" => Some(&["organization:read", "members:read"]),
        _ => None,
    }
}

/// How long a mailed invitation lives.
pub const INVITE_TTL: Duration = Duration::days(7);
/// Roles the tenant defines besides the built-in ones.
pub const MAX_CUSTOM_ROLES: usize = 50;
/// Permissions one role grants.
pub const MAX_PERMISSIONS: usize = 100;
/// Pending invitations of one organization.
pub const MAX_PENDING_INVITES: usize = 500;
/// Domains one organization claims.
pub const MAX_DOMAINS: usize = 20;
/// Organizations one user belongs to.
pub const MAX_MEMBERSHIPS_PER_USER: usize = 100;

/// What a tier allows: organizations in the tenant and members in one organization.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrgLimits {
    pub organizations: usize,
    pub members: usize,
}

impl OrgLimits {
    pub fn of(tier: Tier) -> Self {
        match tier {
            Tier::Free => OrgLimits {
                organizations: 100,
                members: 100,
            },
            Tier::Pro => OrgLimits {
                organizations: 10_000,
                members: 10_000,
            },
            Tier::Enterprise => OrgLimits {
                organizations: 1_000_000,
                members: 100_000,
            },
        }
    }
}

/// A role's name: 1-40 of `a-z`, `0-9`, `_`, `-`, starting with a letter.
pub fn valid_role_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 40
        && chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// A permission: 1-100 of `a-z`, `0-9` and `:._*-`, starting with a letter or digit.
pub fn valid_permission(p: &str) -> bool {
    let mut chars = p.chars();
    p.len() <= 100
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, ':' | '.' | '_' | '*' | '-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_names_and_permissions_have_one_shape() {
        for ok in ["owner", "billing-admin", "a", "r2_d2"] {
            assert!(valid_role_name(ok), "{ok}");
        }
        for bad in ["", "Owner", "2fa", "a b", "é", &"a".repeat(41)] {
            assert!(!valid_role_name(bad), "{bad}");
        }
        for ok in ["invoices:read", "org.*", "9lives", "a-b_c"] {
            assert!(valid_permission(ok), "{ok}");
        }
        for bad in ["", ":read", "A:read", "x y", &"a".repeat(101)] {
            assert!(!valid_permission(bad), "{bad}");
        }
    }

    #[test]
    fn every_built_in_role_has_defaults_and_nothing_else_does() {
        for role in BUILT_IN_ROLES {
            assert!(default_permissions(role).is_some_and(|p| !p.is_empty()));
        }
        assert!(default_permissions("billing").is_none());
    }

    #[test]
    fn each_tier_allows_more_than_the_one_below() {
        let [f, p, e] = [Tier::Free, Tier::Pro, Tier::Enterprise].map(OrgLimits::of);
        assert!(f.organizations < p.organizations && p.organizations < e.organizations);
        assert!(f.members < p.members && p.members < e.members);
    }
}
