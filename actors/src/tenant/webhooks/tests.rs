//! Unit tests of webhooks' pure parts: the retry schedule, the due keys, the body, the secrets.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use base64::{engine::general_purpose::STANDARD, Engine};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::{
    endpoints::new_secret,
    records::{due_key, parse_due_key},
    *,
};

#[test]
fn the_schedule_waits_5s_5min_30min_2h_5h_10h_10h_then_stops() {
    let p = WebhookPolicy::default();
    let waits: Vec<i64> = (1..=7)
        .map(|n| p.retry_delay(n).unwrap().whole_seconds())
        .collect();
    assert_eq!(waits, vec![5, 300, 1800, 7200, 18_000, 36_000, 36_000]);
    assert!(p.retry_delay(8).is_none());
    assert!(p.retry_delay(0).is_none());
    let fast = WebhookPolicy {
        retry_scale: 0.001,
        ..p
    };
    assert_eq!(fast.retry_delay(1).unwrap(), Duration::milliseconds(5));
    assert_eq!(fast.retry_delay(2).unwrap(), Duration::milliseconds(300));
}

#[test]
fn due_keys_order_by_time_and_read_back() {
    let a = OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap();
    let b = a + Duration::milliseconds(1);
    let (e, v) = (Uuid::now_v7(), Uuid::now_v7());
    assert!(due_key(a, e, v) < due_key(b, Uuid::nil(), Uuid::nil()));
    assert_eq!(parse_due_key(&due_key(a, e, v)), Some((a, e, v)));
    assert_eq!(parse_due_key(b"short"), None);
}

#[test]
fn secrets_are_whsec_and_32_bytes_of_standard_base64() {
    let s = new_secret();
    let raw = STANDARD.decode(s.strip_prefix("whsec_").unwrap()).unwrap();
    assert_eq!(raw.len(), 32);
    assert_ne!(s, new_secret());
}

#[test]
fn the_body_is_type_timestamp_data() {
    let ev = OutboundEventRecord {
        id: Uuid::now_v7(),
        event_type: "user.created".into(),
        at: OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap(),
        data: serde_json::json!({"user_id": "u"}),
    };
    assert_eq!(
        ev.body().unwrap(),
        r#"{"type":"user.created","timestamp":"2023-11-14T22:13:20Z","data":{"user_id":"u"}}"#
    );
}
