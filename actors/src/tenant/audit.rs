//! The tenant's audit log: append-only, owned by the tenant actor, newest first on read.
//!
//! Keys are `time (u64 ns, big-endian) | sequence (u32)`, so a reverse scan is newest first and
//! a key is its own cursor. Events name changed fields, never secret values.

use serde::{Deserialize, Serialize};
use tessera_storage::Kind;
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

tessera_storage::record!(AuditEvent in TenantRecord: Kind::AuditEvent, "audit event", version 1);

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

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn event_keys_sort_by_time_then_sequence() {
        let t = datetime!(2026-03-01 12:00:00 UTC);
        let k = event_key(t, 7);
        assert_eq!(k.len(), 12);
        assert_eq!(&k[..8], &(t.unix_timestamp_nanos() as u64).to_be_bytes());
        assert_eq!(&k[8..], &7u32.to_be_bytes());
        // Byte order is time order, then sequence order (so a reverse scan is newest first).
        let later = event_key(t + time::Duration::nanoseconds(1), 0);
        assert!(event_key(t, u32::MAX) < later);
        assert!(event_key(t, 1) < event_key(t, 2));
        assert!(event_key(t, 255) < event_key(t, 256));
        // Before 1970 there is no key below zero.
        assert_eq!(
            &event_key(datetime!(1969-12-31 23:59:59 UTC), 0)[..8],
            &[0u8; 8]
        );
    }

    #[test]
    fn an_event_takes_its_actor_and_client_from_the_context() {
        let ctx = AuditContext {
            actor: Some(Uuid::now_v7()),
            ip_hash: Some("ab".repeat(32)),
            ua_family: Some("Firefox".into()),
            management_key: Some(Uuid::now_v7()),
            ua_hash: Some("cd".repeat(32)),
        };
        let e = AuditEvent::new("user.updated", &ctx, vec!["email".into()]);
        assert_eq!(e.event_type, "user.updated");
        assert_eq!(e.actor, ctx.actor);
        assert_eq!(e.management_key, ctx.management_key);
        assert_eq!(e.ip_hash, ctx.ip_hash);
        assert_eq!(e.ua_family, ctx.ua_family);
        assert_eq!(e.fields, ["email"]);
        assert_eq!(e.metadata, serde_json::json!({}));
        // Without a management key the field is left out of the stored event.
        let plain = AuditEvent::new("x", &AuditContext::default(), Vec::new());
        let v = serde_json::to_value(&plain).unwrap();
        assert!(v.get("management_key").is_none());
        let back: AuditEvent = serde_json::from_value(v).unwrap();
        assert_eq!(back.at, plain.at);
    }
}
