//! EU digital identity wallet sign-in and age verification (OpenID4VP 1.0): the verifier's
//! identity, the transactions and what a verified presentation does.
//!
//! A transaction has three handles, each known to one party only:
//! - the **request id** (`<tenant>.<random>`) names it in the wallet URL, the QR page and the
//!   request object's URL, and (as the JWE `kid` of its encryption key) in the wallet's
//!   answer: anyone who sees the QR code knows it;
//! - the OpenID4VP **`state`** and **`nonce`** inside the signed request object, which the
//!   wallet echoes and signs;
//! - the client's **poll `state`** (the spec's correlation handle), kept as its SHA-256 and
//!   never put in the request object, so a result can be fetched by the client that began
//!   the transaction and by nobody who merely saw the QR code. Same-device flows also need
//!   the `response_code` the wallet's redirect hands the browser.
//!
//! The cryptography (JWE decryption, SD-JWT and mdoc checks, issuer keys and status lists)
//! runs off the actor, in the HTTP layer; the actor opens a transaction's key for it
//! ([`EudiCmd::Open`], which changes nothing: a forged answer cannot end a flow) and takes the
//! checked outcome exactly once ([`EudiCmd::Complete`]): a replayed answer finds the
//! transaction no longer pending.
//!
//! Its parts, one job a file: `records.rs` (the verifier, the transactions, the linked
//! wallet identities and the age tokens as stored, with their timings and keys),
//! `refusal.rs` (`EudiRefusal`), `transactions.rs` (a transaction begun, opened for the
//! wallet's answer and completed once), `outcome.rs` (what a verified presentation does: the
//! user it signs in, the poll that opens the session or hands the age token),
//! `values.rs` (what crosses the mailbox with the commands, and the answers), `upkeep.rs`
//! (erasure's keys and the daily sweep) and `commands.rs` (`EudiCmd` and its dispatch).

pub mod memory;

mod commands;
mod outcome;
mod records;
mod refusal;
mod transactions;
mod upkeep;
mod values;

pub use self::{
    commands::EudiCmd,
    records::{
        tenant_of_request, AgeTokenRecord, Eidas, EudiClaimsRecord, EudiPollIndex, EudiPurpose,
        EudiSubjectRecord, EudiTxRecord, EudiVerifierRecord, TxOutcome, VerifierIdentity,
        AGE_THRESHOLD, AGE_TOKEN_TTL, BEGINS_PER_MINUTE, RESULT_TTL, TX_TTL,
        WALLET_CALLS_PER_MINUTE,
    },
    refusal::EudiRefusal,
    values::{EudiAnswer, Opening, PollAnswer, TxView, WalletIdentity, WalletOutcome},
};

#[cfg(test)]
mod tests;
