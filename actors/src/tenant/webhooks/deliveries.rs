//! The delivery log: an endpoint's deliveries, newest first; a delivery attempted again
//! now; and the daily run that drops what is past the retention.

use crate::tenant::ctx::TenantCtx;
use crate::tenant::webhooks::Webhooks;

use tessera_storage::{Kind, TenantBatch};
use time::OffsetDateTime;
use uuid::Uuid;

use super::records::{
    delivery_key, due_key, DeliveryStatus, OutboundEventRecord, WebhookDeliveryRecord,
    WebhookDueIndex,
};
use crate::error::WebhookError;
use crate::{error::TenantError, tenant::audit::AuditContext};

impl Webhooks {
    pub(super) fn deliveries(
        &self,
        cx: &TenantCtx,
        endpoint: Uuid,
        before: Option<Uuid>,
        limit: usize,
    ) -> Result<(Vec<WebhookDeliveryRecord>, Option<Uuid>), TenantError> {
        self.endpoint(cx, endpoint)?;
        let mut cursor = match before {
            Some(b) => delivery_key(endpoint, b),
            None => {
                let mut k = endpoint.as_bytes().to_vec();
                k.extend_from_slice(&[0xFF; 16]);
                k
            }
        };
        let mut out = Vec::new();
        let mut more = false;
        'scan: loop {
            let chunk = cx
                .store
                .scan_rev::<WebhookDeliveryRecord>(Some(&cursor), 256)?;
            let exhausted = chunk.len() < 256;
            for (key, d) in chunk {
                if !key.starts_with(endpoint.as_bytes()) {
                    break 'scan;
                }
                cursor = key;
                if out.len() == limit {
                    more = true;
                    break 'scan;
                }
                out.push(d);
            }
            if exhausted {
                break;
            }
        }
        let next = if more {
            out.last().map(|d| d.event)
        } else {
            None
        };
        Ok((out, next))
    }

    pub(super) fn redeliver(
        &mut self,
        cx: &mut TenantCtx,
        endpoint: Uuid,
        event: Uuid,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<WebhookDeliveryRecord, TenantError> {
        let e = self.endpoint(cx, endpoint)?;
        let key = delivery_key(endpoint, event);
        let mut d = cx
            .store
            .get::<WebhookDeliveryRecord>(&key)?
            .ok_or(TenantError::NotFound)?;
        if cx
            .store
            .get::<OutboundEventRecord>(event.as_bytes())?
            .is_none()
        {
            return Err(TenantError::NotFound);
        }
        if !e.enabled {
            return Err(TenantError::Webhook(WebhookError::Disabled));
        }
        if self.leased(cx, endpoint, event) {
            return Err(TenantError::Webhook(WebhookError::DeliveryInFlight));
        }
        let mut fx = cx.effects();
        if let Some(at) = d.next_attempt_at {
            fx.batch
                .remove(Kind::WebhookDue, &due_key(at, endpoint, event));
        }
        if d.status != DeliveryStatus::Pending {
            d.status = DeliveryStatus::Pending;
            d.round_failures = 0;
            d.delivered_at = None;
        }
        d.next_attempt_at = Some(now);
        fx.batch.put(&key, &d)?;
        fx.batch
            .put(&due_key(now, endpoint, event), &WebhookDueIndex::default())?;
        cx.webhooks.note(now);
        cx.audit_into(
            &mut fx.batch,
            "webhook.redelivered",
            ctx,
            serde_json::json!({ "endpoint_id": endpoint, "event_id": event }),
        )?;
        cx.commit(fx)?;
        Ok(d)
    }
}

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    /// The daily run: removes deliveries and events older than the retention (at most
    /// `limit` of each); answers how many records went.
    pub(in crate::tenant) fn sweep_webhooks(
        &self,
        batch: &mut TenantBatch,
        now: OffsetDateTime,
        limit: usize,
    ) -> Result<usize, TenantError> {
        let cutoff = now - self.runtime.webhooks.retention;
        let mut removed = 0;
        for item in self.store.scan::<WebhookDeliveryRecord>(b"") {
            if removed == limit {
                break;
            }
            let (key, d) = item?;
            if d.created_at >= cutoff {
                continue;
            }
            batch.remove(Kind::WebhookDelivery, &key);
            if let Some(at) = d.next_attempt_at {
                batch.remove(Kind::WebhookDue, &due_key(at, d.endpoint, d.event));
            }
            removed += 1;
        }
        let mut events = 0;
        for item in self.store.scan::<OutboundEventRecord>(b"") {
            if events == limit {
                break;
            }
            let (key, ev) = item?;
            // Keyed by UUID v7: the oldest come first.
            if ev.at >= cutoff {
                break;
            }
            batch.remove(Kind::OutboundEvent, &key);
            events += 1;
        }
        Ok(removed + events)
    }
}
