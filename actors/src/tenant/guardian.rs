//! Minor protection (GDPR art. 8): a minor's account waits, `held`, until a guardian consents.
//!
//! - Registration ([`TenantCtx::guardian_hold`]): with the tenant's protection on, a date of
//!   birth (or a wallet's age proof) is required; someone younger than the consent age gets
//!   an account marked held (`UserRecord::guardian`), which cannot sign in
//!   ([`UserRecord::guardian_gate`], checked by the sign-in kernel).
//! - The child asks a guardian ([`GuardianCmd::Request`], after the child's password is
//!   checked): a consent link (7 days, single use, the one live link of that child) is mailed
//!   to the guardian.
//! - The guardian accepts (the child becomes `active`, with the consent receipt of spec 2.7) or
//!   declines (`blocked`; the account is erased 30 days later by the daily purge).
//! - The guardian who consented can ask for a portal link (an hour, reusable) and from the
//!   portal withdraw consent (held again, sessions ended), have the child's data mailed as a
//!   download link (24 hours), or erase the account (a second call with the nonce the first
//!   answered).
//!
//! Guardian links are [`GuardianTokenRecord`]s under the SHA-256 of their token; the token
//! names the tenant (`TenantCtx::link_token`). Nothing here writes the date of birth into
//! an event or a log line.
//!
//! [`TenantCtx::guardian_hold`]: crate::tenant::TenantCtx::guardian_hold
//! [`UserRecord::guardian_gate`]: crate::tenant::records::UserRecord::guardian_gate
//!
//! Its parts, one job a file: `records.rs` (guardian links and declined minors as stored,
//! with their lifetimes), `hold.rs` (the decision at registration and the gate every sign-in
//! checks), `links.rs` (a guardian's links written and looked up), `consent.rs` (the
//! child's request and the guardian's answer), `portal.rs` (the portal and its actions, and
//! the portal link mailed on request), `values.rs` (what the pages show and the answers),
//! `upkeep.rs` (erasure's keys, the daily sweep and purge) and `commands.rs` (`GuardianCmd`
//! and its dispatch).

mod error;
pub mod memory;

mod commands;
mod consent;
mod hold;
mod links;
mod portal;
mod records;
mod upkeep;
mod values;

pub(in crate::tenant) use self::commands::GuardianStep;
pub use self::{
    commands::GuardianCmd,
    records::{
        ChildBlockedIndex, GuardianPurpose, GuardianTokenRecord, CONFIRM_TTL, CONSENT_TTL,
        DECLINED_RETENTION, EXPORTS_PER_LINK, EXPORT_TTL, PORTAL_TTL,
    },
    values::{ConsentView, GuardianAnswer, GuardianTenant, PortalAction, PortalView},
};
pub use error::GuardianError;

#[cfg(test)]
mod tests;
