//! The refusals of single sign-on: its connections and its sign-ins.
//!
//! `TenantError::Sso` carries one; the HTTP layer maps each beside the flow's routes.

use thiserror::Error;

/// Why a sign-in through an identity provider signed nobody in: the `error` the browser is
/// sent back to the app with, and what the audit log records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SsoRefusal {
    /// The address belongs to another account and the provider is not trusted for it (its
    /// domain is not one the organization proved).
    EmailExists,
    /// The account is blocked by the tenant's admins.
    AccountBlocked,
    /// No user has this provider account, and the connection creates none.
    NotProvisioned,
    /// The same SAML assertion came before.
    Replayed,
    /// The organization has as many members as allowed, or the user as many organizations.
    MembershipRefused,
    /// Minor protection: accounts are made by registration with a date of birth.
    AgeRequired,
    /// The tenant's e-mail policy refuses new accounts at this address.
    EmailNotAllowed,
}

impl SsoRefusal {
    pub fn as_str(self) -> &'static str {
        match self {
            SsoRefusal::EmailExists => "email_exists",
            SsoRefusal::AccountBlocked => "account_blocked",
            SsoRefusal::NotProvisioned => "not_provisioned",
            SsoRefusal::Replayed => "assertion_replayed",
            SsoRefusal::MembershipRefused => "membership_refused",
            SsoRefusal::AgeRequired => "age_required",
            SsoRefusal::EmailNotAllowed => "email_not_allowed",
        }
    }
}

#[derive(Debug, Error)]
pub enum SsoError {
    #[error("no such connection")]
    UnknownConnection,
    #[error("the connection is disabled")]
    Disabled,
    #[error("the organization has as many connections as allowed ({limit})")]
    ConnectionLimit { limit: usize },
    #[error("this sign-in is unknown, already finished or expired")]
    StateInvalid,
    /// The flow was begun in another browser; where it came from, to send the error back.
    #[error("this sign-in was started in another browser")]
    StateForeign { redirect_uri: String },
    #[error("the connection does not take unsolicited (IdP-initiated) responses")]
    UnsolicitedRefused,
    #[error("the redirect URI is not one of the tenant's allowed URLs")]
    RedirectNotAllowed,
    #[error("the sign-in was refused: {}", .0.as_str())]
    Refused(SsoRefusal),
    #[error("the exchange code is unknown, used or expired")]
    ExchangeInvalid,
    #[error("the connection needs {field}")]
    Incomplete { field: &'static str },
    #[error("addresses at this domain sign in with their organization's single sign-on")]
    Required { connection: uuid::Uuid },
    #[error("{field} must be one of the tenant's URLs")]
    NotTenantUrl { field: &'static str },
}
