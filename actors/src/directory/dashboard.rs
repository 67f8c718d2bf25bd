//! The directory's dashboard side: accounts, sessions, login throttling, members and
//! invitations. All of it is platform state (accounts span tenants), so the directory owns it.
//!
//! Its parts, one job a file: `logins.rs` (the sign-in rules, their throttles on disk, and
//! known devices), `sessions.rs` (sessions opened, authenticated, ended and re-authenticated),
//! `members.rs` (members, their roles, and the memberships a takeover detaches),
//! `invitations.rs` (invitations sent, revoked and accepted), `account_mail.rs` (the
//! verification and reset links mailed to an account, and what redeeming them does) and
//! `factors.rs` (the second factor, and the login step that asks for it).

mod account_mail;
mod factors;
mod invitations;
mod logins;
mod members;
mod sessions;

pub(super) use self::account_mail::VERIFY_TTL;
pub use self::account_mail::{ACCOUNT_MAILS_PER_HOUR, RESETS_PER_IP_HOUR};
pub(super) use self::factors::PendingMfa;
pub use self::factors::{MFA_LOGIN_TTL, MFA_MISSES_PER_ADDRESS};

/// The dashboard's wire types, where they have always been reachable.
pub use super::{
    messages::{
        AcceptedInvite, AccountCredential, AccountReset, AccountTarget, DetachedTenant, Invitation,
        InviteProof, InviteTarget, LoginGate, LoginStep, MailedToken, MemberChange, MemberInfo,
        MemberList, MemberOf, NewSession, PendingInfo, SessionInfo, TotpSecret,
    },
    state::SessionPolicy,
};

#[cfg(test)]
mod tests;
