//! What webhooks keep in the store: the endpoints, the events with the body each is sent
//! as, each event's delivery to each endpoint, and the due index with its keys.

use serde::{Deserialize, Serialize};
use tessera_storage::{Kind, Sealed};
use time::{format_description::well_known::Rfc3339, OffsetDateTime};
use uuid::Uuid;

use crate::error::TenantError;

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

tessera_storage::record!(
    WebhookEndpointRecord in TenantRecord: Kind::WebhookEndpoint, "webhook endpoint", version 1
);

impl WebhookEndpointRecord {
    /// Whether it takes events of `event_type` now.
    pub(super) fn wants(&self, event_type: &str) -> bool {
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

tessera_storage::record!(
    OutboundEventRecord in TenantRecord: Kind::OutboundEvent, "outbound event", version 1
);

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

tessera_storage::record!(
    WebhookDeliveryRecord in TenantRecord: Kind::WebhookDelivery, "webhook delivery", version 1
);

/// A pending delivery's place in the due order (`next attempt ms | endpoint | event`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WebhookDueIndex {}

tessera_storage::record!(
    WebhookDueIndex in TenantRecord: Kind::WebhookDue, "webhook due index", version 1
);

pub(super) fn delivery_key(endpoint: Uuid, event: Uuid) -> Vec<u8> {
    let mut k = endpoint.as_bytes().to_vec();
    k.extend_from_slice(event.as_bytes());
    k
}

pub(super) fn due_millis(at: OffsetDateTime) -> u64 {
    u64::try_from(at.unix_timestamp_nanos() / 1_000_000).unwrap_or(0)
}

pub(super) fn due_key(at: OffsetDateTime, endpoint: Uuid, event: Uuid) -> Vec<u8> {
    let mut k = due_millis(at).to_be_bytes().to_vec();
    k.extend_from_slice(endpoint.as_bytes());
    k.extend_from_slice(event.as_bytes());
    k
}

/// A due-index key read back: when, endpoint, event.
pub(super) fn parse_due_key(key: &[u8]) -> Option<(OffsetDateTime, Uuid, Uuid)> {
    if key.len() != 40 {
        return None;
    }
    let millis = u64::from_be_bytes(key[..8].try_into().ok()?);
    let at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(millis) * 1_000_000).ok()?;
    let endpoint = Uuid::from_slice(&key[8..24]).ok()?;
    let event = Uuid::from_slice(&key[24..40]).ok()?;
    Some((at, endpoint, event))
}
