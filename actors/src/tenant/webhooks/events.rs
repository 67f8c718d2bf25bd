//! Events for the tenant's webhooks, written in the batch of the change that causes them
//! (a user created, verified or deleted, sessions revoked...), and the wake-up of the worker
//! the actor sends once they are durable.

use tessera_storage::TenantBatch;
use time::OffsetDateTime;
use uuid::Uuid;

use super::records::{
    delivery_key, due_key, parse_due_key, DeliveryStatus, OutboundEventRecord,
    WebhookDeliveryRecord, WebhookDueIndex,
};
use crate::tenant::ctx::TenantCtx;
use crate::tenant::webhooks::Webhooks;
use crate::{error::TenantError, tenant::records::UserRecord};

/// Which of a user's sessions a `session.revoked` event reports.
#[derive(Clone, Copy, Debug)]
pub enum Revoked {
    One(Uuid),
    All,
    /// Every session but the caller's own (a password change).
    AllBut(Uuid),
}

// The kernel's event outbox: every flow emits its events through the context, in the batch of
// the change that causes them.
impl TenantCtx {
    /// Records an event for the tenant's webhooks in `batch`, in the batch of the change that
    /// causes it: the event and a delivery, due now, for every enabled endpoint subscribed to
    /// its type. Nothing is written when no endpoint wants it.
    pub(in crate::tenant) fn emit_event(
        &self,
        batch: &mut TenantBatch,
        event_type: &str,
        data: serde_json::Value,
    ) -> Result<(), TenantError> {
        let targets: Vec<Uuid> = self
            .endpoints()?
            .into_iter()
            .filter(|e| e.wants(event_type))
            .map(|e| e.id)
            .collect();
        if targets.is_empty() {
            return Ok(());
        }
        let event = OutboundEventRecord {
            id: Uuid::now_v7(),
            event_type: event_type.to_owned(),
            at: OffsetDateTime::now_utc(),
            data,
        };
        self.queue_event(batch, &event, &targets)
    }

    /// `user.created`: a new account (never a guest's, an import's, or a blocked
    /// registration's), with how it was made.
    pub(in crate::tenant) fn emit_user_created(
        &self,
        batch: &mut TenantBatch,
        user: &UserRecord,
        method: &str,
    ) -> Result<(), TenantError> {
        self.emit_event(
            batch,
            "user.created",
            serde_json::json!({
                "user_id": user.id,
                "method": method,
                "email_verified": user.email_verified,
            }),
        )
    }

    /// `user.email_verified`: an account's address became confirmed.
    pub(in crate::tenant) fn emit_email_verified(
        &self,
        batch: &mut TenantBatch,
        user: Uuid,
    ) -> Result<(), TenantError> {
        self.emit_user_event(batch, "user.email_verified", user)
    }

    /// `user.deleted`: an account and its data were erased.
    pub(in crate::tenant) fn emit_user_deleted(
        &self,
        batch: &mut TenantBatch,
        user: Uuid,
    ) -> Result<(), TenantError> {
        self.emit_user_event(batch, "user.deleted", user)
    }

    /// An event about `user` that says nothing but who.
    fn emit_user_event(
        &self,
        batch: &mut TenantBatch,
        event_type: &str,
        user: Uuid,
    ) -> Result<(), TenantError> {
        self.emit_event(batch, event_type, serde_json::json!({ "user_id": user }))
    }

    /// `session.revoked`: one session (`Revoked::One`) or several of a user's sessions ended
    /// before their time, and why.
    pub(in crate::tenant) fn emit_session_revoked(
        &self,
        batch: &mut TenantBatch,
        user: Uuid,
        which: Revoked,
        reason: &str,
    ) -> Result<(), TenantError> {
        let (scope, session) = match which {
            Revoked::One(s) => ("one", Some(s)),
            Revoked::All => ("all", None),
            Revoked::AllBut(s) => ("all_but_current", Some(s)),
        };
        let mut data = serde_json::json!({ "user_id": user, "scope": scope, "reason": reason });
        if let Some(s) = session {
            let field = if scope == "one" {
                "session_id"
            } else {
                "kept_session_id"
            };
            data[field] = serde_json::json!(s);
        }
        self.emit_event(batch, "session.revoked", data)
    }

    /// Writes `event` and a delivery of it, due now, to each of `endpoints`.
    pub(super) fn queue_event(
        &self,
        batch: &mut TenantBatch,
        event: &OutboundEventRecord,
        endpoints: &[Uuid],
    ) -> Result<(), TenantError> {
        batch.put(event.id.as_bytes(), event)?;
        for endpoint in endpoints {
            let d = WebhookDeliveryRecord {
                endpoint: *endpoint,
                event: event.id,
                event_type: event.event_type.clone(),
                status: DeliveryStatus::Pending,
                attempts: 0,
                round_failures: 0,
                next_attempt_at: Some(event.at),
                last_attempt_at: None,
                last_status: None,
                last_latency_ms: None,
                last_error: None,
                created_at: event.at,
                delivered_at: None,
            };
            batch.put(&delivery_key(*endpoint, event.id), &d)?;
            batch.put(
                &due_key(event.at, *endpoint, event.id),
                &WebhookDueIndex::default(),
            )?;
        }
        self.webhooks.note(event.at);
        Ok(())
    }
}

impl Webhooks {
    /// When the earliest pending delivery is due (to wake the worker at start).
    pub fn next_webhook_due(&self, cx: &TenantCtx) -> Result<Option<OffsetDateTime>, TenantError> {
        match cx.store.scan::<WebhookDueIndex>(b"").next() {
            Some(item) => Ok(parse_due_key(&item?.0).map(|(at, _, _)| at)),
            None => Ok(None),
        }
    }

    /// The earliest delivery scheduled by the commands since the last call.
    pub fn take_webhook_wake(&self, cx: &TenantCtx) -> Option<OffsetDateTime> {
        cx.webhooks.take_wake()
    }
}
