//! Webhooks: the tenant's endpoints, the events that go to them, and each event's delivery
//! to each endpoint with its attempts (the delivery log), after the Standard Webhooks model.
//!
//! An event is written in the same batch as the change that causes it ([`TenantState::emit_event`]):
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

use std::{
    cell::Cell,
    collections::HashMap,
    time::{Duration as StdDuration, Instant},
};

use base64::{engine::general_purpose::STANDARD, Engine};
use serde::{Deserialize, Serialize};
use tessera_storage::{Kind, Record, Sealed, TenantBatch, TenantRecord};
use time::{format_description::well_known::Rfc3339, Duration, OffsetDateTime};
use uuid::Uuid;

use super::{audit::AuditContext, effects::Effects, state::TenantState};
use crate::{
    error::TenantError,
    outbound::{MailJob, MailKind},
};

/// Endpoints a tenant may have.
pub const MAX_ENDPOINTS: usize = 10;
/// The events an endpoint may subscribe to.
pub const EVENT_TYPES: [&str; 7] = [
    "user.created",
    "user.deleted",
    "user.email_verified",
    "session.revoked",
    "agent.revoked",
    "guardian.consent_granted",
    "guardian.consent_withdrawn",
];
/// The event `POST .../webhooks/{id}/test` sends, to that endpoint only.
pub const TEST_EVENT: &str = "webhook.test";
/// The wait after each failed attempt of a delivery: eight attempts in all, over about 28
/// hours (the Standard Webhooks reference schedule).
pub const RETRY_SCHEDULE_SECS: [u64; 7] = [5, 300, 1800, 7200, 18_000, 36_000, 36_000];
/// How long a delivery handed to the worker is not handed out again (its attempt takes at
/// most the worker's 10 s timeout; the rest is slack for a slow report).
pub const IN_FLIGHT_LEASE: StdDuration = StdDuration::from_secs(120);
/// How long the previous secret still signs after a rotation.
pub const ROTATION_OVERLAP: Duration = Duration::hours(24);
/// The most deliveries one `Due` hands out.
pub const MAX_DUE: usize = 64;

/// The platform's webhook timings (`[webhooks]` in the configuration).
#[derive(Clone, Copy, Debug)]
pub struct WebhookPolicy {
    /// Multiplies every wait of [`RETRY_SCHEDULE_SECS`] (1 in production; tests shrink it).
    pub retry_scale: f64,
    /// An endpoint whose every attempt has failed for this long is disabled.
    pub disable_after: Duration,
    /// How long events and their delivery log are kept.
    pub retention: Duration,
}

impl Default for WebhookPolicy {
    fn default() -> Self {
        WebhookPolicy {
            retry_scale: 1.0,
            disable_after: Duration::days(5),
            retention: Duration::days(30),
        }
    }
}

impl WebhookPolicy {
    /// The wait before the next attempt after `failed` failed attempts of a round (1-based);
    /// `None` once the schedule is spent.
    pub fn retry_delay(&self, failed: u32) -> Option<Duration> {
        let secs = *RETRY_SCHEDULE_SECS.get(usize::try_from(failed).ok()?.checked_sub(1)?)?;
        let millis = (secs as f64 * 1000.0 * self.retry_scale).round().max(1.0);
        Some(Duration::milliseconds(millis as i64))
    }
}

/// One of the tenant's endpoints, keyed by its id (a UUID v7: listed oldest first).
#[derive(Clone, Serialize, Deserialize)]
pub struct WebhookEndpointRecord {
    pub id: Uuid,
    pub url: String,
    pub description: Option<String>,
    pub event_types: Vec<String>,
    /// `whsec_...`, sealed.
    pub secret: Sealed,
    /// The secret before the last rotation, sealed, signing until `previous_until`.
    pub previous_secret: Option<Sealed>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub previous_until: Option<OffsetDateTime>,
    pub enabled: bool,
    /// Why it is disabled: `failing` (by delivery) or `owner`.
    pub disabled_reason: Option<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub disabled_at: Option<OffsetDateTime>,
    /// The first failed attempt since the last success.
    #[serde(with = "time::serde::rfc3339::option")]
    pub failing_since: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub secret_rotated_at: Option<OffsetDateTime>,
}

impl std::fmt::Debug for WebhookEndpointRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookEndpointRecord")
            .field("id", &self.id)
            .field("enabled", &self.enabled)
            .finish_non_exhaustive()
    }
}

impl Record for WebhookEndpointRecord {
    const KIND: Kind = Kind::WebhookEndpoint;
    const NAME: &'static str = "webhook endpoint";
    const VERSION: u16 = 1;
}
impl TenantRecord for WebhookEndpointRecord {}

impl WebhookEndpointRecord {
    /// Whether it takes events of `event_type` now.
    fn wants(&self, event_type: &str) -> bool {
        self.enabled && self.event_types.iter().any(|t| t == event_type)
    }
}

/// An event for the tenant's webhooks, kept (keyed by its UUID v7) while deliveries of it
/// may be attempted or shown, up to the retention.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OutboundEventRecord {
    pub id: Uuid,
    pub event_type: String,
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    pub data: serde_json::Value,
}

impl Record for OutboundEventRecord {
    const KIND: Kind = Kind::OutboundEvent;
    const NAME: &'static str = "outbound event";
    const VERSION: u16 = 1;
}
impl TenantRecord for OutboundEventRecord {}

/// The JSON body of an event as delivered: `{type, timestamp, data}`.
#[derive(Serialize)]
struct Body<'a> {
    #[serde(rename = "type")]
    event_type: &'a str,
    timestamp: String,
    data: &'a serde_json::Value,
}

impl OutboundEventRecord {
    pub fn body(&self) -> Result<String, TenantError> {
        serde_json::to_string(&Body {
            event_type: &self.event_type,
            timestamp: self
                .at
                .format(&Rfc3339)
                .map_err(|e| TenantError::Internal(e.to_string()))?,
            data: &self.data,
        })
        .map_err(|e| TenantError::Internal(e.to_string()))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    /// Attempts are still to be made.
    Pending,
    Succeeded,
    /// The schedule was spent, or the endpoint was disabled or deleted.
    Failed,
}

impl DeliveryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Succeeded => "succeeded",
            DeliveryStatus::Failed => "failed",
        }
    }
}

/// One event's delivery to one endpoint, keyed `endpoint | event`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WebhookDeliveryRecord {
    pub endpoint: Uuid,
    pub event: Uuid,
    pub event_type: String,
    pub status: DeliveryStatus,
    /// Attempts made, over every round.
    pub attempts: u32,
    /// Failed attempts of the current round (a redelivery starts a new one).
    pub round_failures: u32,
    #[serde(with = "time::serde::rfc3339::option")]
    pub next_attempt_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_attempt_at: Option<OffsetDateTime>,
    /// The HTTP status of the last attempt that got an answer.
    pub last_status: Option<u16>,
    pub last_latency_ms: Option<u64>,
    /// What went wrong with the last attempt (`timeout`, `connection_failed`, `http_500`...).
    pub last_error: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub delivered_at: Option<OffsetDateTime>,
}

impl Record for WebhookDeliveryRecord {
    const KIND: Kind = Kind::WebhookDelivery;
    const NAME: &'static str = "webhook delivery";
    const VERSION: u16 = 1;
}
impl TenantRecord for WebhookDeliveryRecord {}

/// A pending delivery's place in the due order (`next attempt ms | endpoint | event`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WebhookDueIndex {}

impl Record for WebhookDueIndex {
    const KIND: Kind = Kind::WebhookDue;
    const NAME: &'static str = "webhook due index";
    const VERSION: u16 = 1;
}
impl TenantRecord for WebhookDueIndex {}

fn delivery_key(endpoint: Uuid, event: Uuid) -> Vec<u8> {
    let mut k = endpoint.as_bytes().to_vec();
    k.extend_from_slice(event.as_bytes());
    k
}

fn due_millis(at: OffsetDateTime) -> u64 {
    u64::try_from(at.unix_timestamp_nanos() / 1_000_000).unwrap_or(0)
}

fn due_key(at: OffsetDateTime, endpoint: Uuid, event: Uuid) -> Vec<u8> {
    let mut k = due_millis(at).to_be_bytes().to_vec();
    k.extend_from_slice(endpoint.as_bytes());
    k.extend_from_slice(event.as_bytes());
    k
}

/// A due-index key read back: when, endpoint, event.
fn parse_due_key(key: &[u8]) -> Option<(OffsetDateTime, Uuid, Uuid)> {
    if key.len() != 40 {
        return None;
    }
    let millis = u64::from_be_bytes(key[..8].try_into().ok()?);
    let at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(millis) * 1_000_000).ok()?;
    let endpoint = Uuid::from_slice(&key[8..24]).ok()?;
    let event = Uuid::from_slice(&key[24..40]).ok()?;
    Some((at, endpoint, event))
}

/// A fresh signing secret: `whsec_` and the standard base64 of 32 random bytes.
fn new_secret() -> String {
    let bytes: [u8; 32] = rand::random();
    format!("whsec_{}", STANDARD.encode(bytes))
}

/// What the worker keeps in the actor's memory: the leases of attempts under way, and
/// whether a command just scheduled deliveries (the actor wakes the worker once they are
/// durable).
#[derive(Default)]
pub struct WebhookMemory {
    in_flight: HashMap<(Uuid, Uuid), Instant>,
    wake: Cell<Option<OffsetDateTime>>,
}

impl WebhookMemory {
    /// Notes that a delivery is due at `at`: the earliest since the last [`Self::take_wake`].
    fn note(&self, at: OffsetDateTime) {
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

/// Which of a user's sessions a `session.revoked` event reports.
#[derive(Clone, Copy, Debug)]
pub enum Revoked {
    One(Uuid),
    All,
    /// Every session but the caller's own (a password change).
    AllBut(Uuid),
}

/// An endpoint as registered, validated by the caller.
#[derive(Clone, Debug)]
pub struct NewEndpoint {
    pub url: String,
    pub description: Option<String>,
    pub event_types: Vec<String>,
}

/// A change to an endpoint, validated by the caller; `None`: unchanged.
#[derive(Clone, Debug, Default)]
pub struct EndpointPatch {
    pub url: Option<String>,
    pub description: Option<Option<String>>,
    pub event_types: Option<Vec<String>>,
    pub enabled: Option<bool>,
}

/// An endpoint with its new secret (creation, rotation): the secret is shown this once.
#[derive(Clone)]
pub struct IssuedEndpoint {
    pub record: WebhookEndpointRecord,
    pub secret: String,
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

/// What the dashboard and the worker ask of webhooks.
#[derive(Clone, Debug)]
pub enum WebhookCmd {
    Create(NewEndpoint),
    List,
    Get(Uuid),
    Update(Uuid, EndpointPatch),
    Delete(Uuid),
    RotateSecret(Uuid),
    /// Queues a `webhook.test` event for this endpoint alone.
    Test(Uuid),
    /// An endpoint's deliveries, newest first, older than the event `before`.
    Deliveries {
        endpoint: Uuid,
        before: Option<Uuid>,
        limit: usize,
    },
    /// Attempts a delivery again now (a spent one starts a new round of attempts).
    Redeliver {
        endpoint: Uuid,
        event: Uuid,
    },
    /// The worker: deliveries due now.
    Due,
    /// The worker: how an attempt went.
    Outcome(AttemptOutcome),
}

impl WebhookCmd {
    /// Whether the command only reads (its answer need not wait for the disk). `Due` writes
    /// only what it would write again (spent deliveries of disabled endpoints).
    pub fn answers_at_once(&self) -> bool {
        matches!(
            self,
            WebhookCmd::List | WebhookCmd::Get(_) | WebhookCmd::Deliveries { .. } | WebhookCmd::Due
        )
    }
}

/// A delivery with the type of its event, for the log.
#[derive(Clone, Debug)]
pub enum WebhookAnswer {
    Issued(Box<IssuedEndpoint>),
    Endpoint(Box<WebhookEndpointRecord>),
    Endpoints(Vec<WebhookEndpointRecord>),
    Delivery(Box<WebhookDeliveryRecord>),
    Deliveries(Vec<WebhookDeliveryRecord>, Option<Uuid>),
    Due(DueBatch),
    /// When the next delivery is due, after an outcome.
    Next(Option<OffsetDateTime>),
    Done,
}

impl std::fmt::Debug for IssuedEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedEndpoint")
            .field("record", &self.record)
            .finish_non_exhaustive()
    }
}

impl TenantState {
    fn webhook_aad(&self, endpoint: Uuid) -> Vec<u8> {
        let mut aad = self.cx.store.tenant_id().as_bytes().to_vec();
        aad.extend_from_slice(b"/webhook/");
        aad.extend_from_slice(endpoint.as_bytes());
        aad
    }

    fn seal_secret(&self, endpoint: Uuid, secret: &str) -> Result<Sealed, TenantError> {
        Ok(self
            .cx
            .master_key
            .seal(&self.webhook_aad(endpoint), secret.as_bytes())?)
    }

    fn open_secret(&self, endpoint: Uuid, sealed: &Sealed) -> Result<String, TenantError> {
        let plain = self
            .cx
            .master_key
            .open(&self.webhook_aad(endpoint), sealed)?;
        String::from_utf8(plain.to_vec()).map_err(|e| TenantError::Internal(e.to_string()))
    }

    fn endpoint(&self, id: Uuid) -> Result<WebhookEndpointRecord, TenantError> {
        self.cx
            .store
            .get::<WebhookEndpointRecord>(id.as_bytes())?
            .ok_or(TenantError::NotFound)
    }

    fn endpoints(&self) -> Result<Vec<WebhookEndpointRecord>, TenantError> {
        let mut out = Vec::new();
        for item in self.cx.store.scan::<WebhookEndpointRecord>(b"") {
            out.push(item?.1);
        }
        Ok(out)
    }

    /// Records an event for the tenant's webhooks in `batch`, in the batch of the change that
    /// causes it: the event and a delivery, due now, for every enabled endpoint subscribed to
    /// its type. Nothing is written when no endpoint wants it.
    pub(super) fn emit_event(
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
    pub(super) fn emit_user_created(
        &self,
        batch: &mut TenantBatch,
        user: &super::records::UserRecord,
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
    pub(super) fn emit_email_verified(
        &self,
        batch: &mut TenantBatch,
        user: Uuid,
    ) -> Result<(), TenantError> {
        self.emit_event(
            batch,
            "user.email_verified",
            serde_json::json!({ "user_id": user }),
        )
    }

    /// `user.deleted`: an account and its data were erased.
    pub(super) fn emit_user_deleted(
        &self,
        batch: &mut TenantBatch,
        user: Uuid,
    ) -> Result<(), TenantError> {
        self.emit_event(
            batch,
            "user.deleted",
            serde_json::json!({ "user_id": user }),
        )
    }

    /// `session.revoked`: one session (`Revoked::One`) or several of a user's sessions ended
    /// before their time, and why.
    pub(super) fn emit_session_revoked(
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
    fn queue_event(
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
        self.cx.webhooks.note(event.at);
        Ok(())
    }

    /// When the earliest pending delivery is due (to wake the worker at start).
    pub fn next_webhook_due(&self) -> Result<Option<OffsetDateTime>, TenantError> {
        match self.cx.store.scan::<WebhookDueIndex>(b"").next() {
            Some(item) => Ok(parse_due_key(&item?.0).map(|(at, _, _)| at)),
            None => Ok(None),
        }
    }

    /// The earliest delivery scheduled by the commands since the last call.
    pub fn take_webhook_wake(&self) -> Option<OffsetDateTime> {
        self.cx.webhooks.take_wake()
    }

    pub fn webhook_cmd(
        &mut self,
        cmd: WebhookCmd,
        ctx: &AuditContext,
    ) -> Result<(WebhookAnswer, Vec<MailJob>), TenantError> {
        let now = OffsetDateTime::now_utc();
        let answer = match cmd {
            WebhookCmd::Create(new) => {
                WebhookAnswer::Issued(Box::new(self.create_endpoint(new, ctx, now)?))
            }
            WebhookCmd::List => WebhookAnswer::Endpoints(self.endpoints()?),
            WebhookCmd::Get(id) => WebhookAnswer::Endpoint(Box::new(self.endpoint(id)?)),
            WebhookCmd::Update(id, patch) => {
                WebhookAnswer::Endpoint(Box::new(self.update_endpoint(id, patch, ctx, now)?))
            }
            WebhookCmd::Delete(id) => {
                self.delete_endpoint(id, ctx)?;
                WebhookAnswer::Done
            }
            WebhookCmd::RotateSecret(id) => {
                WebhookAnswer::Issued(Box::new(self.rotate_endpoint_secret(id, ctx, now)?))
            }
            WebhookCmd::Test(id) => {
                WebhookAnswer::Delivery(Box::new(self.test_endpoint(id, ctx, now)?))
            }
            WebhookCmd::Deliveries {
                endpoint,
                before,
                limit,
            } => {
                let (page, next) = self.deliveries(endpoint, before, limit)?;
                WebhookAnswer::Deliveries(page, next)
            }
            WebhookCmd::Redeliver { endpoint, event } => {
                WebhookAnswer::Delivery(Box::new(self.redeliver(endpoint, event, ctx, now)?))
            }
            WebhookCmd::Due => WebhookAnswer::Due(self.due_deliveries(now)?),
            WebhookCmd::Outcome(o) => {
                let mail = self.record_outcome(o)?;
                return Ok((WebhookAnswer::Next(self.next_webhook_due()?), mail));
            }
        };
        Ok((answer, Vec::new()))
    }

    fn create_endpoint(
        &mut self,
        new: NewEndpoint,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<IssuedEndpoint, TenantError> {
        if self.endpoints()?.len() >= MAX_ENDPOINTS {
            return Err(TenantError::WebhookLimit);
        }
        let id = Uuid::now_v7();
        let secret = new_secret();
        let record = WebhookEndpointRecord {
            id,
            url: new.url,
            description: new.description,
            event_types: new.event_types,
            secret: self.seal_secret(id, &secret)?,
            previous_secret: None,
            previous_until: None,
            enabled: true,
            disabled_reason: None,
            disabled_at: None,
            failing_since: None,
            created_at: now,
            updated_at: now,
            secret_rotated_at: None,
        };
        let mut fx = self.effects();
        fx.batch.put(id.as_bytes(), &record)?;
        self.audit_into(
            &mut fx.batch,
            "webhook.endpoint_created",
            ctx,
            serde_json::json!({ "endpoint_id": id, "event_types": record.event_types }),
        )?;
        self.commit(fx)?;
        Ok(IssuedEndpoint { record, secret })
    }

    fn update_endpoint(
        &mut self,
        id: Uuid,
        patch: EndpointPatch,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<WebhookEndpointRecord, TenantError> {
        let mut e = self.endpoint(id)?;
        let mut fields = Vec::new();
        if let Some(url) = patch.url {
            e.url = url;
            fields.push("url");
        }
        if let Some(d) = patch.description {
            e.description = d;
            fields.push("description");
        }
        if let Some(t) = patch.event_types {
            e.event_types = t;
            fields.push("event_types");
        }
        if let Some(enabled) = patch.enabled {
            if enabled && !e.enabled {
                e.enabled = true;
                e.disabled_at = None;
                e.disabled_reason = None;
                e.failing_since = None;
            } else if !enabled && e.enabled {
                e.enabled = false;
                e.disabled_at = Some(now);
                e.disabled_reason = Some("owner".to_owned());
            }
            fields.push("enabled");
        }
        e.updated_at = now;
        let mut fx = self.effects();
        fx.batch.put(id.as_bytes(), &e)?;
        self.audit_into(
            &mut fx.batch,
            "webhook.endpoint_updated",
            ctx,
            serde_json::json!({ "endpoint_id": id, "fields": fields, "enabled": e.enabled }),
        )?;
        self.commit(fx)?;
        Ok(e)
    }

    /// Deletes an endpoint with its delivery log; its pending deliveries end with it.
    fn delete_endpoint(&mut self, id: Uuid, ctx: &AuditContext) -> Result<(), TenantError> {
        self.endpoint(id)?;
        let mut fx = self.effects();
        fx.batch.remove(Kind::WebhookEndpoint, id.as_bytes());
        for item in self.cx.store.scan::<WebhookDeliveryRecord>(id.as_bytes()) {
            let (key, d) = item?;
            fx.batch.remove(Kind::WebhookDelivery, &key);
            if let Some(at) = d.next_attempt_at {
                fx.batch
                    .remove(Kind::WebhookDue, &due_key(at, d.endpoint, d.event));
            }
            self.cx.webhooks.in_flight.remove(&(d.endpoint, d.event));
        }
        self.audit_into(
            &mut fx.batch,
            "webhook.endpoint_deleted",
            ctx,
            serde_json::json!({ "endpoint_id": id }),
        )?;
        self.commit(fx)?;
        Ok(())
    }

    /// A new secret; the current one keeps signing alongside it for [`ROTATION_OVERLAP`].
    fn rotate_endpoint_secret(
        &mut self,
        id: Uuid,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<IssuedEndpoint, TenantError> {
        let mut e = self.endpoint(id)?;
        let secret = new_secret();
        e.previous_secret = Some(e.secret.clone());
        e.previous_until = Some(now + ROTATION_OVERLAP);
        e.secret = self.seal_secret(id, &secret)?;
        e.secret_rotated_at = Some(now);
        e.updated_at = now;
        let mut fx = self.effects();
        fx.batch.put(id.as_bytes(), &e)?;
        self.audit_into(
            &mut fx.batch,
            "webhook.secret_rotated",
            ctx,
            serde_json::json!({ "endpoint_id": id }),
        )?;
        self.commit(fx)?;
        Ok(IssuedEndpoint { record: e, secret })
    }

    fn test_endpoint(
        &mut self,
        id: Uuid,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<WebhookDeliveryRecord, TenantError> {
        let e = self.endpoint(id)?;
        if !e.enabled {
            return Err(TenantError::WebhookDisabled);
        }
        let event = OutboundEventRecord {
            id: Uuid::now_v7(),
            event_type: TEST_EVENT.to_owned(),
            at: now,
            data: serde_json::json!({
                "endpoint_id": id,
                "message": "a test event sent from the dashboard",
            }),
        };
        let mut fx = self.effects();
        self.queue_event(&mut fx.batch, &event, &[id])?;
        self.audit_into(
            &mut fx.batch,
            "webhook.test_sent",
            ctx,
            serde_json::json!({ "endpoint_id": id, "event_id": event.id }),
        )?;
        self.commit(fx)?;
        self.cx
            .store
            .get::<WebhookDeliveryRecord>(&delivery_key(id, event.id))?
            .ok_or_else(|| TenantError::Internal("a queued test delivery is missing".into()))
    }

    fn deliveries(
        &self,
        endpoint: Uuid,
        before: Option<Uuid>,
        limit: usize,
    ) -> Result<(Vec<WebhookDeliveryRecord>, Option<Uuid>), TenantError> {
        self.endpoint(endpoint)?;
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
            let chunk = self
                .cx
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

    fn redeliver(
        &mut self,
        endpoint: Uuid,
        event: Uuid,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<WebhookDeliveryRecord, TenantError> {
        let e = self.endpoint(endpoint)?;
        let key = delivery_key(endpoint, event);
        let mut d = self
            .cx
            .store
            .get::<WebhookDeliveryRecord>(&key)?
            .ok_or(TenantError::NotFound)?;
        if self
            .cx
            .store
            .get::<OutboundEventRecord>(event.as_bytes())?
            .is_none()
        {
            return Err(TenantError::NotFound);
        }
        if !e.enabled {
            return Err(TenantError::WebhookDisabled);
        }
        if self.leased(endpoint, event) {
            return Err(TenantError::WebhookDeliveryInFlight);
        }
        let mut fx = self.effects();
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
        self.cx.webhooks.note(now);
        self.audit_into(
            &mut fx.batch,
            "webhook.redelivered",
            ctx,
            serde_json::json!({ "endpoint_id": endpoint, "event_id": event }),
        )?;
        self.commit(fx)?;
        Ok(d)
    }

    /// Whether an attempt of this delivery is under way (its lease unexpired).
    fn leased(&self, endpoint: Uuid, event: Uuid) -> bool {
        self.lease_left(endpoint, event).is_some()
    }

    /// What is left of the lease of an attempt under way.
    fn lease_left(&self, endpoint: Uuid, event: Uuid) -> Option<Duration> {
        let at = self.cx.webhooks.in_flight.get(&(endpoint, event))?;
        let left = IN_FLIGHT_LEASE.checked_sub(at.elapsed())?;
        Duration::try_from(left).ok()
    }

    /// Hands out the deliveries due at `now` (at most [`MAX_DUE`]), leasing each. Index
    /// entries left by a change (a delivery gone or no longer pending) are dropped; a
    /// delivery whose endpoint is disabled fails.
    fn due_deliveries(&mut self, now: OffsetDateTime) -> Result<DueBatch, TenantError> {
        let mut fx = self.effects();
        let mut out = Vec::new();
        let mut next = None;
        let mut endpoints: HashMap<Uuid, Option<WebhookEndpointRecord>> = HashMap::new();
        let mut secrets: HashMap<Uuid, Vec<String>> = HashMap::new();
        let mut events: HashMap<Uuid, Option<String>> = HashMap::new();
        let cutoff = due_millis(now);
        let mut leased = Vec::new();
        let mut lease_next: Option<OffsetDateTime> = None;
        for item in self.cx.store.scan::<WebhookDueIndex>(b"") {
            let (key, _) = item?;
            let Some((at, endpoint, event)) = parse_due_key(&key) else {
                fx.batch.remove(Kind::WebhookDue, &key);
                continue;
            };
            if due_millis(at) > cutoff {
                next = Some(at);
                break;
            }
            if let Some(left) = self.lease_left(endpoint, event) {
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
            let Some(mut d) = self.cx.store.get::<WebhookDeliveryRecord>(&dkey)? else {
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
                    let e = self
                        .cx
                        .store
                        .get::<WebhookEndpointRecord>(endpoint.as_bytes())?;
                    endpoints.insert(endpoint, e.clone());
                    e
                }
            };
            let body = match events.get(&event) {
                Some(b) => b.clone(),
                None => {
                    let b = self
                        .cx
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
                    let mut s = vec![self.open_secret(endpoint, &e.secret)?];
                    if let (Some(prev), Some(until)) = (&e.previous_secret, e.previous_until) {
                        if until > now {
                            s.push(self.open_secret(endpoint, prev)?);
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
        self.commit(fx)?;
        let started = Instant::now();
        self.cx
            .webhooks
            .in_flight
            .retain(|_, at| at.elapsed() < IN_FLIGHT_LEASE);
        for k in leased {
            self.cx.webhooks.in_flight.insert(k, started);
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
    fn record_outcome(&mut self, o: AttemptOutcome) -> Result<Vec<MailJob>, TenantError> {
        self.cx.webhooks.in_flight.remove(&(o.endpoint, o.event));
        let key = delivery_key(o.endpoint, o.event);
        let Some(mut d) = self.cx.store.get::<WebhookDeliveryRecord>(&key)? else {
            return Ok(Vec::new());
        };
        if d.status != DeliveryStatus::Pending || o.attempt != d.attempts + 1 {
            // An attempt overtaken by a change (a deletion, another round): nothing to record.
            return Ok(Vec::new());
        }
        let Some(mut e) = self
            .cx
            .store
            .get::<WebhookEndpointRecord>(o.endpoint.as_bytes())?
        else {
            return Ok(Vec::new());
        };
        let policy = self.cx.runtime.webhooks;
        let mut fx = self.effects();
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
                    self.cx.webhooks.note(at);
                }
                None => d.status = DeliveryStatus::Failed,
            }
            if disable {
                self.disable_failing(&mut fx, &mut e, &o)?;
            }
            fx.batch.put(e.id.as_bytes(), &e)?;
        }
        fx.batch.put(&key, &d)?;
        self.commit(fx)
    }

    /// Disables an endpoint that has failed for `disable_after`, with its audit event and a
    /// mail to each owner.
    fn disable_failing(
        &mut self,
        fx: &mut Effects,
        e: &mut WebhookEndpointRecord,
        o: &AttemptOutcome,
    ) -> Result<(), TenantError> {
        e.enabled = false;
        e.disabled_at = Some(o.at);
        e.disabled_reason = Some("failing".to_owned());
        e.updated_at = o.at;
        self.audit_into(
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
            tracing::warn!(tenant = %self.cx.info.id, endpoint = %e.id, "a failing webhook endpoint was disabled, and no owner could be mailed");
        }
        for owner in &o.owners {
            self.queue_mail(
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

    /// The daily run: removes deliveries and events older than the retention (at most
    /// `limit` of each); answers how many records went.
    pub(super) fn sweep_webhooks(
        &self,
        batch: &mut TenantBatch,
        now: OffsetDateTime,
        limit: usize,
    ) -> Result<usize, TenantError> {
        let cutoff = now - self.cx.runtime.webhooks.retention;
        let mut removed = 0;
        for item in self.cx.store.scan::<WebhookDeliveryRecord>(b"") {
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
        for item in self.cx.store.scan::<OutboundEventRecord>(b"") {
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

#[cfg(test)]
mod tests;
