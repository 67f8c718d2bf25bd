//! The tenant's audit log: append-only, owned by the tenant actor, newest first on read.
//!
//! Keys are `time (u64 ns, big-endian) | sequence (u32)`, so a reverse scan is newest first and
//! a key is its own cursor. Events name changed fields, never secret values.

use serde::{Deserialize, Serialize};
use tessera_storage::{Kind, Record, TenantRecord};
use time::OffsetDateTime;
use uuid::Uuid;

/// Who and where an action came from, as the HTTP layer saw it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct AuditContext {
    /// The dashboard account acting, if any.
    pub actor: Option<Uuid>,
    /// Keyed hash of the client address (hex); only a 12-character prefix is ever shown.
    pub ip_hash: Option<String>,
    pub ua_family: Option<String>,
    /// The management key acting, if any (a tenant's back end).
    pub management_key: Option<Uuid>,
    /// Keyed hash of the whole User-Agent (hex), for agents' activity feeds; only a
    /// 12-character prefix is ever shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ua_hash: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AuditEvent {
    pub event_type: String,
    pub actor: Option<Uuid>,
    /// The management key that acted, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub management_key: Option<Uuid>,
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// Names of the fields that changed.
    pub fields: Vec<String>,
    pub ip_hash: Option<String>,
    pub ua_family: Option<String>,
    /// Extra, non-secret context.
    #[serde(default)]
    pub metadata: serde_json::Value,
}

impl Record for AuditEvent {
    const KIND: Kind = Kind::AuditEvent;
    const NAME: &'static str = "audit event";
    const VERSION: u16 = 1;
}
impl TenantRecord for AuditEvent {}

impl AuditEvent {
    pub fn new(event_type: &str, ctx: &AuditContext, fields: Vec<String>) -> Self {
        AuditEvent {
            event_type: event_type.to_owned(),
            actor: ctx.actor,
            management_key: ctx.management_key,
            at: OffsetDateTime::now_utc(),
            fields,
            ip_hash: ctx.ip_hash.clone(),
            ua_family: ctx.ua_family.clone(),
            metadata: serde_json::json!({}),
        }
    }
}

/// The key of an event: its time and a sequence number that breaks ties.
pub fn event_key(at: OffsetDateTime, seq: u32) -> Vec<u8> {
    let nanos = u64::try_from(at.unix_timestamp_nanos()).unwrap_or(0);
    let mut k = nanos.to_be_bytes().to_vec();
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// A page of events, newest first, and the cursor of the next page.
#[derive(Clone, Debug)]
pub struct AuditPage {
    pub events: Vec<(Vec<u8>, AuditEvent)>,
    pub next_cursor: Option<Vec<u8>>,
}
