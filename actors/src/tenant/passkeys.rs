//! Passkeys (WebAuthn, spec 2.6 and 4.1): registration, sign-in with or without a user
//! handle, step-up at AAL2, and the owner's list, rename and delete.
//!
//! The WebAuthn checks are `webauthn-rs-core`'s (the core of the webauthn-rs project; its
//! opinionated wrapper cannot ask for a resident key with user verification preferred, and
//! cannot tell the caller why an assertion failed). The relying party is built per call from
//! the settings: the RP id is `passkey_rp_id`, else the accounts URL's host; the accepted
//! origins are `https://<rp id>` with its subdomains, and `passkey_origins` exactly.
//!
//! A ceremony (the state between begin and finish) lives in memory for 5 minutes, keyed by
//! its challenge, which the finish finds inside `clientDataJSON`; the first finish that
//! names it takes it out, whatever its outcome, so of any number of concurrent finishes at
//! most one can succeed. A restart forgets the pending ceremonies: the user starts again.
//!
//! Sign-in requires user verification and gives AAL2 (`amr` `hwk` for a device-bound
//! credential, `swk` for a synced one); the passkey is both factors, so no MFA challenge
//! follows. The signature counter is the store's: one that does not increase (when either
//! value is non-zero) refuses the assertion and marks the passkey `suspected_clone`.
//!
//! A sign-in writes only the passkey's use state ([`PasskeyUse`]: counter, backup flags, last
//! use, clone mark), about 130 bytes beside the credential; every lookup here reads the two
//! together.
//!
//! [`PasskeyUse`]: crate::tenant::records::PasskeyUse
//!
//! Its parts, one job a file: `check.rs` (an assertion's check, run on the request's thread,
//! and its verdict), `relying_party.rs` (the relying party built from the settings, and the
//! change of its id), `records.rs` (a user's passkeys read with their use state),
//! `registration.rs`, `sign_in.rs` (by handle or discoverable, in two messages around the
//! check), `step_up.rs` (the passkey step-up, split the same way) and `owner.rs` (the
//! owner's list, rename and delete).

mod error;
pub mod memory;
pub mod msg;

mod check;
mod owner;
mod records;
mod registration;
mod relying_party;
mod sign_in;
mod step_up;

pub use self::{
    check::{AssertionVerdict, CheckedPasskey, PasskeyCheck},
    registration::MAX_PASSKEYS,
    relying_party::MAX_PASSKEY_ORIGINS,
};
pub use error::PasskeyError;

#[cfg(test)]
mod tests;
