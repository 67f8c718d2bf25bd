//! What the binary's worker asks: the deliveries due now, leased in memory while their
//! attempt runs, with their secrets opened; and each attempt's outcome, which schedules the
//! next one, ends the delivery or disables an endpoint failing for too long.

use std::{cell::Cell, collections::HashMap, time::Instant};

use tessera_storage::Kind;
use time::{format_description::well_known::Rfc3339, Duration, OffsetDateTime};
use uuid::Uuid;

use super::{
    policy::{IN_FLIGHT_LEASE, MAX_DUE},
    records::{
        delivery_key, due_key, due_millis, parse_due_key, DeliveryStatus, OutboundEventRecord,
        WebhookDeliveryRecord, WebhookDueIndex, WebhookEndpointRecord,
    },
};
use crate::tenant::ctx::TenantCtx;
use crate::tenant::webhooks::Webhooks;
use crate::{
    error::TenantError,
    outbound::{MailJob, MailKind},
    tenant::{audit::AuditContext, effects::Effects},
};

/// What the worker keeps in the actor's memory: the leases of attempts under way, and
/// whether a command just scheduled deliveries (the actor wakes the worker once they are
/// durable).
#[derive(Default)]
pub struct WebhookMemory {
    pub(super) in_flight: HashMap<(Uuid, Uuid), Instant>,
    wake: Cell<Option<OffsetDateTime>>,
}

impl WebhookMemory {
    /// Notes that a delivery is due at `at`: the earliest since the last [`Self::take_wake`].
    pub(super) fn note(&self, at: OffsetDateTime) {
        let next = match self.wake.get() {
            Some(w) if w <= at => w,
            _ => at,
        };
        self.wake.set(Some(next));
    }

    /// The earliest delivery scheduled since the last call, if any.
    pub fn take_wake(&self) -> Option<OffsetDateTime> {
        self.wake.take()
    }
}

/// One delivery the worker is to attempt now.
#[derive(Clone)]
pub struct DueDelivery {
    pub endpoint: Uuid,
    pub event: Uuid,
    /// The number of this attempt (the outcome names it).
    pub attempt: u32,
    pub url: String,
    /// The secrets that sign it, the current one first.
    pub secrets: Vec<String>,
    /// The JSON body, exactly as it is to be sent and signed.
    pub body: String,
}

impl std::fmt::Debug for DueDelivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DueDelivery")
            .field("endpoint", &self.endpoint)
            .field("event", &self.event)
            .field("attempt", &self.attempt)
            .finish_non_exhaustive()
    }
}

/// What the worker should do now, and when to ask again.
#[derive(Clone, Debug)]
pub struct DueBatch {
    pub deliveries: Vec<DueDelivery>,
    /// The next delivery due after these (or now, when more are due than were handed out).
    pub next: Option<OffsetDateTime>,
}

/// How one attempt went.
#[derive(Clone)]
pub struct AttemptOutcome {
    pub endpoint: Uuid,
    pub event: Uuid,
    pub attempt: u32,
    /// When the attempt was made.
    pub at: OffsetDateTime,
    pub latency_ms: u64,
    /// The answer's status, if one came.
    pub status: Option<u16>,
    /// What went wrong, when it did (`None` with a 2xx status: delivered).
    pub error: Option<String>,
    /// The tenant's owners, mailed if this failure disables the endpoint.
    pub owners: Vec<String>,
}

impl std::fmt::Debug for AttemptOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The owners' addresses stay out of logs.
        f.debug_struct("AttemptOutcome")
            .field("endpoint", &self.endpoint)
            .field("event", &self.event)
            .field("attempt", &self.attempt)
            .field("status", &self.status)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl Webhooks {
    /// Whether an attempt of this delivery is under way (its lease unexpired).
    pub(super) fn leased(&self, cx: &TenantCtx, endpoint: Uuid, event: Uuid) -> bool {
        self.lease_left(cx, endpoint, event).is_some()
    }

    /// What is left of the lease of an attempt under way.
    fn lease_left(&self, cx: &TenantCtx, endpoint: Uuid, event: Uuid) -> Option<Duration> {
        let at = cx.webhooks.in_flight.get(&(endpoint, event))?;
        let left = IN_FLIGHT_LEASE.checked_sub(at.elapsed())?;
        Duration::try_from(left).ok()
    }

    /// Hands out the deliveries due at `now` (at most [`MAX_DUE`]), leasing each. Index
    /// entries left by a change (a delivery gone or no longer pending) are dropped; a
    /// delivery whose endpoint is disabled fails.
    pub(super) fn due_deliveries(
        &mut self,
        cx: &mut TenantCtx,
        now: OffsetDateTime,
    ) -> Result<DueBatch, TenantError> {
        let mut fx = cx.effects();
        let mut out = Vec::new();
        let mut next = None;
        let mut endpoints: HashMap<Uuid, Option<WebhookEndpointRecord>> = HashMap::new();
        let mut secrets: HashMap<Uuid, Vec<String>> = HashMap::new();
        let mut events: HashMap<Uuid, Option<String>> = HashMap::new();
        let cutoff = due_millis(now);
        let mut leased = Vec::new();
        let mut lease_next: Option<OffsetDateTime> = None;
        for item in cx.store.scan::<WebhookDueIndex>(b"") {
            let (key, _) = item?;
            let Some((at, endpoint, event)) = parse_due_key(&key) else {
                fx.batch.remove(Kind::WebhookDue, &key);
                continue;
            };
            if due_millis(at) > cutoff {
                next = Some(at);
                break;
            }
            if let Some(left) = self.lease_left(cx, endpoint, event) {
                // Asked again when the lease runs out, should its outcome never come.
                let until = now + left;
                lease_next = Some(lease_next.map_or(until, |n: OffsetDateTime| n.min(until)));
                continue;
            }
            if out.len() == MAX_DUE {
                next = Some(now);
                break;
            }
            let dkey = delivery_key(endpoint, event);
            let Some(mut d) = cx.store.get::<WebhookDeliveryRecord>(&dkey)? else {
                fx.batch.remove(Kind::WebhookDue, &key);
                continue;
            };
            if d.status != DeliveryStatus::Pending
                || d.next_attempt_at.map(due_millis) != Some(due_millis(at))
            {
                fx.batch.remove(Kind::WebhookDue, &key);
                continue;
            }
            let e = match endpoints.get(&endpoint) {
                Some(e) => e.clone(),
                None => {
                    let e = cx.store.get::<WebhookEndpointRecord>(endpoint.as_bytes())?;
                    endpoints.insert(endpoint, e.clone());
                    e
                }
            };
            let body = match events.get(&event) {
                Some(b) => b.clone(),
                None => {
                    let b = cx
                        .store
                        .get::<OutboundEventRecord>(event.as_bytes())?
                        .map(|ev| ev.body())
                        .transpose()?;
                    events.insert(event, b.clone());
                    b
                }
            };
            let (Some(e), Some(body)) = (e.filter(|e| e.enabled), body) else {
                // The endpoint was disabled or deleted, or the event is gone: this delivery
                // ends here.
                fx.batch.remove(Kind::WebhookDue, &key);
                d.status = DeliveryStatus::Failed;
                d.next_attempt_at = None;
                d.last_error = Some("endpoint_disabled".to_owned());
                fx.batch.put(&dkey, &d)?;
                continue;
            };
            let signing = match secrets.get(&endpoint) {
                Some(s) => s.clone(),
                None => {
                    let mut s = vec![self.open_secret(cx, endpoint, &e.secret)?];
                    if let (Some(prev), Some(until)) = (&e.previous_secret, e.previous_until) {
                        if until > now {
                            s.push(self.open_secret(cx, endpoint, prev)?);
                        }
                    }
                    secrets.insert(endpoint, s.clone());
                    s
                }
            };
            leased.push((endpoint, event));
            out.push(DueDelivery {
                endpoint,
                event,
                attempt: d.attempts + 1,
                url: e.url.clone(),
                secrets: signing,
                body,
            });
        }
        cx.commit(fx)?;
        let started = Instant::now();
        cx.webhooks
            .in_flight
            .retain(|_, at| at.elapsed() < IN_FLIGHT_LEASE);
        for k in leased {
            cx.webhooks.in_flight.insert(k, started);
        }
        let next = match (next, lease_next) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Ok(DueBatch {
            deliveries: out,
            next,
        })
    }

    /// Records an attempt: a success ends the delivery; a failure schedules the next attempt
    /// or, the schedule spent, ends it; an endpoint failing for `disable_after` is disabled
    /// and its owners are mailed, in the same batch.
    pub(super) fn record_outcome(
        &mut self,
        cx: &mut TenantCtx,
        o: AttemptOutcome,
    ) -> Result<Vec<MailJob>, TenantError> {
        cx.webhooks.in_flight.remove(&(o.endpoint, o.event));
        let key = delivery_key(o.endpoint, o.event);
        let Some(mut d) = cx.store.get::<WebhookDeliveryRecord>(&key)? else {
            return Ok(Vec::new());
        };
        if d.status != DeliveryStatus::Pending || o.attempt != d.attempts + 1 {
            // An attempt overtaken by a change (a deletion, another round): nothing to record.
            return Ok(Vec::new());
        }
        let Some(mut e) = cx
            .store
            .get::<WebhookEndpointRecord>(o.endpoint.as_bytes())?
        else {
            return Ok(Vec::new());
        };
        let policy = cx.runtime.webhooks;
        let mut fx = cx.effects();
        if let Some(at) = d.next_attempt_at.take() {
            fx.batch
                .remove(Kind::WebhookDue, &due_key(at, o.endpoint, o.event));
        }
        d.attempts += 1;
        d.last_attempt_at = Some(o.at);
        d.last_status = o.status;
        d.last_latency_ms = Some(o.latency_ms);
        d.last_error = o.error.clone();
        let delivered = o.error.is_none() && o.status.is_some_and(|s| (200..300).contains(&s));
        if delivered {
            d.status = DeliveryStatus::Succeeded;
            d.delivered_at = Some(o.at);
            if e.failing_since.take().is_some() {
                fx.batch.put(e.id.as_bytes(), &e)?;
            }
        } else {
            d.round_failures += 1;
            let since = *e.failing_since.get_or_insert(o.at);
            let disable = e.enabled && o.at - since >= policy.disable_after;
            match policy.retry_delay(d.round_failures).filter(|_| !disable) {
                Some(wait) => {
                    let at = o.at + wait;
                    d.next_attempt_at = Some(at);
                    fx.batch.put(
                        &due_key(at, o.endpoint, o.event),
                        &WebhookDueIndex::default(),
                    )?;
                    cx.webhooks.note(at);
                }
                None => d.status = DeliveryStatus::Failed,
            }
            if disable {
                self.disable_failing(cx, &mut fx, &mut e, &o)?;
            }
            fx.batch.put(e.id.as_bytes(), &e)?;
        }
        fx.batch.put(&key, &d)?;
        cx.commit(fx)
    }

    /// Disables an endpoint that has failed for `disable_after`, with its audit event and a
    /// mail to each owner.
    fn disable_failing(
        &mut self,
        cx: &mut TenantCtx,
        fx: &mut Effects,
        e: &mut WebhookEndpointRecord,
        o: &AttemptOutcome,
    ) -> Result<(), TenantError> {
        e.enabled = false;
        e.disabled_at = Some(o.at);
        e.disabled_reason = Some("failing".to_owned());
        e.updated_at = o.at;
        cx.audit_into(
            &mut fx.batch,
            "webhook.endpoint_disabled",
            &AuditContext::default(),
            serde_json::json!({
                "endpoint_id": e.id,
                "failing_since": e.failing_since.and_then(|t| t.format(&Rfc3339).ok()),
                "owners_mailed": o.owners.len(),
            }),
        )?;
        if o.owners.is_empty() {
            tracing::warn!(tenant = %cx.info.id, endpoint = %e.id, "a failing webhook endpoint was disabled, and no owner could be mailed");
        }
        for owner in &o.owners {
            cx.queue_mail(
                fx,
                owner,
                MailKind::WebhookDisabled {
                    url: e.url.clone(),
                    endpoint_id: e.id.to_string(),
                },
            )?;
        }
        Ok(())
    }
}
