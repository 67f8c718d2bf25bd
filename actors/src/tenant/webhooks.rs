//! Webhooks: the tenant's endpoints, the events that go to them, and each event's delivery
//! to each endpoint with its attempts (the delivery log), after the Standard Webhooks model.
//!
//! An event is written in the same batch as the change that causes it ([`TenantCtx::emit_event`]):
//! an [`OutboundEventRecord`] (the body's parts) and, for every enabled endpoint subscribed to
//! its type, a [`WebhookDeliveryRecord`] (`endpoint | event`) with its entry in the due index
//! ([`WebhookDueIndex`], `next attempt | endpoint | event`). Nothing is written when no
//! endpoint wants the event. The binary's worker (`src/webhooks.rs`) asks for what is due
//! (`WebhookCmd::Due`, which opens the signing secrets for it), makes the HTTP calls off the
//! actor and reports each attempt (`WebhookCmd::Outcome`), which records it, schedules the
//! next attempt ([`RETRY_SCHEDULE_SECS`], scaled by the operator's `retry_scale`) or ends the
//! delivery, and disables an endpoint that has failed for `disable_after` (mailing the
//! owners, in the same batch).
//!
//! A delivery handed to the worker is leased in memory for [`IN_FLIGHT_LEASE`]: it is not
//! handed out again while its attempt runs, and an outcome counts only for the attempt it
//! names. A crash loses the lease, not the delivery: at least once.
//!
//! Endpoint secrets are `whsec_` and the standard base64 of 32 random bytes, sealed with the
//! master key (they must be opened to sign); a rotation keeps the previous one signing for
//! [`ROTATION_OVERLAP`].
//!
//! [`TenantCtx::emit_event`]: crate::tenant::TenantCtx::emit_event
//!
//! Its parts, one job a file: `policy.rs` (the limits, the event types and the retry
//! schedule), `records.rs` (endpoints, events, deliveries and the due index, with their keys),
//! `events.rs` (events written in the batch of their change), `endpoints.rs` (the endpoints
//! the dashboard manages, and their sealed secrets), `deliveries.rs` (the delivery log, redelivery
//! and the daily run), `worker.rs` (what is due, leased to the worker, and how each attempt
//! went) and `commands.rs` (`WebhookCmd`, its answers and its dispatch).

mod commands;
mod deliveries;
mod endpoints;
mod error;
mod events;
mod policy;
mod records;
mod worker;

pub use self::{
    commands::{WebhookAnswer, WebhookCmd},
    endpoints::{EndpointPatch, IssuedEndpoint, NewEndpoint},
    events::Revoked,
    policy::{
        WebhookPolicy, EVENT_TYPES, IN_FLIGHT_LEASE, MAX_DUE, MAX_ENDPOINTS, RETRY_SCHEDULE_SECS,
        ROTATION_OVERLAP, TEST_EVENT,
    },
    records::{
        DeliveryStatus, OutboundEventRecord, WebhookDeliveryRecord, WebhookDueIndex,
        WebhookEndpointRecord,
    },
    worker::{AttemptOutcome, DueBatch, DueDelivery, WebhookMemory},
};
pub use error::WebhookError;

/// The webhooks flow: it keeps nothing in memory and works on the context.
#[derive(Default)]
pub struct Webhooks;

#[cfg(test)]
mod tests;
