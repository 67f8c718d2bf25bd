//! The kernel's context: what every flow of a tenant works with and nothing flow-specific.
//!
//! The tenant's identity and store, the settings snapshot, the master key and the keyed
//! hashers, the signing keys and the wallet verifier's identity, what the platform gives the
//! actor (`TenantRuntime`: clocks' offset, outbound, token lifetimes) and what it publishes to
//! handlers (`TenantCells`), the audit sequence, the sign-in rules that every way of signing
//! in shares (`LoginThrottles`, the consumed codes, the wrong step-up codes), the month's
//! active users and the webhook outbox; and what the credential inventory and more than one
//! flow reach: the WebAuthn ceremonies under way and the spacing of mailed and texted codes.
//!
//! Each flow is a component of `TenantState` (`<flow>/memory.rs` for the flows that keep
//! something in memory, a unit struct for the others) whose methods take `(&mut self, cx:
//! &mut TenantCtx, ...)`. A flow reaches another only through this context: the kernel's
//! methods (`sign_in`, `live_session`, the challenges, the credential inventory, `commit` and
//! `fail`) and what a flow lends the others, each in its file's `impl TenantCtx` block.

use std::{collections::HashMap, sync::Arc, time::Instant};

use tessera_storage::{flusher::Ticket, KeyedHasher, MasterKey, TenantStore};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    audit::event_key,
    ceremonies::Ceremonies,
    eudi::VerifierIdentity,
    keys::KeyRing,
    messages::TenantInfo,
    runtime::{TenantCells, TenantRuntime},
    settings::TenantSettings,
    usage::MauRecord,
    webhooks::WebhookMemory,
};
use crate::{
    login_guard::LoginThrottles,
    outbound::Outbound,
    reply::Durability,
    throttle::{ConsumedCodes, RateWindow, Throttle},
};

pub struct TenantCtx {
    pub(super) info: TenantInfo,
    pub(super) store: TenantStore,
    pub(super) master_key: MasterKey,
    pub(super) settings: TenantSettings,
    /// Whether the tenant's BYOK SMS token is set (the token itself stays sealed in the store).
    pub(super) byok_token_set: bool,
    pub(super) fault_injection: bool,
    /// Breaks ties between audit events of the same instant.
    pub(super) audit_seq: u32,
    pub(super) runtime: TenantRuntime,
    /// What request handlers read without a hop: the signing keys, the edge policy.
    pub(super) cells: TenantCells,
    pub(super) key_ring: KeyRing,
    /// The wallet verifier's identity (its key and certificate chain), opened once.
    pub(super) verifier: Option<Arc<VerifierIdentity>>,
    /// Keyed hash of refresh tokens.
    pub(super) refresh_hasher: KeyedHasher,
    /// Keyed hash of OAuth consent requests (the commitment a decision carries back).
    pub(super) oauth_hasher: KeyedHasher,
    /// Keyed hash of e-mail domains in audit events.
    pub(super) domain_hasher: KeyedHasher,
    /// Keyed hash of e-mailed and texted codes.
    pub(super) otp_hasher: KeyedHasher,
    /// Keyed hash of recovery codes.
    pub(super) recovery_hasher: KeyedHasher,
    /// Hashes wallet identities into the subjects users are linked by.
    pub(super) eudi_hasher: KeyedHasher,
    /// The sign-in rules: per (address, account), account, address and known device.
    pub(super) login: LoginThrottles,
    /// When each account was last sent a resend, reset or account-exists message.
    pub(super) mail_sent: HashMap<Uuid, Instant>,
    /// This month's active users (persisted).
    pub(super) mau: MauRecord,
    /// Today's sign-ins and refused sign-ins (persisted a record a day).
    pub(super) activity: super::usage::ActivityDay,
    /// Typed codes consumed recently: sent again, they are not guesses.
    pub(super) consumed_codes: ConsumedCodes,
    /// Webhook attempts under way, and the deliveries a command just scheduled.
    pub(super) webhooks: WebhookMemory,
    /// Wrong e-mailed step-up codes per user: persisted with the sign-in rules.
    pub(super) code_fails: Throttle<Uuid>,
    /// WebAuthn ceremonies under way, by challenge: in memory only, and one of the kinds the
    /// credential inventory ends.
    pub(super) ceremonies: Ceremonies,
    /// Passwordless link and code requests per flow and address (or number): the spacing every
    /// mailed or texted code shares.
    pub(super) request_spacing: RateWindow<String>,
    /// How many times agent tokens were denylisted: the agents flow forgets its counts of live
    /// tokens when this moves (another flow's erasure or block can deny them).
    pub(super) denied_epoch: u64,
    /// Each organization's member count, as last counted (the tier's limit at each join).
    pub(super) member_counts: super::organizations::MemberCounts,
}

impl TenantCtx {
    /// The key of the next audit event at `at` (the sequence breaks ties within an instant).
    pub(super) fn next_event_key(&mut self, at: OffsetDateTime) -> Vec<u8> {
        self.audit_seq = self.audit_seq.wrapping_add(1);
        event_key(at, self.audit_seq)
    }
}

/// A command's writes are durable with the tenant's store; its mail and texts leave through
/// the platform's outbound.
impl Durability for TenantCtx {
    fn ticket(&self) -> Ticket {
        self.store.ticket()
    }

    fn outbound(&self) -> Option<Arc<dyn Outbound>> {
        Some(self.runtime.outbound.clone())
    }
}
