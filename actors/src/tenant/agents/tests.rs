//! Unit tests of agents' pure parts: user codes, grant URNs, limits and their windows.

use std::time::Instant;

use time::OffsetDateTime;
use uuid::Uuid;

use super::{requests::new_user_code, *};

#[test]
fn user_codes_use_the_rfc_8628_alphabet_and_normalize_as_typed() {
    for _ in 0..100 {
        let code = new_user_code();
        assert_eq!(code.len(), 8);
        assert!(
            code.bytes().all(|b| USER_CODE_ALPHABET.contains(&b)),
            "{code}"
        );
    }
    assert_eq!(normalize_user_code("bcdf-ghjk "), "BCDFGHJK");
}

#[test]
fn grant_types_round_trip_their_urns() {
    for g in AgentGrant::ALL {
        assert_eq!(AgentGrant::parse(g.as_str()), Some(g));
    }
    assert_eq!(AgentGrant::parse("authorization_code"), None);
}

/// A client-credentials agent named "a" with these limits, registered now.
fn agent_with(rate_limits: AgentRateLimits, max_concurrent_tokens: Option<u32>) -> AgentRecord {
    let new = NewAgent {
        name: "a".into(),
        description: None,
        agent_class: None,
        logo_url: None,
        scopes: vec!["read".into()],
        grant_types: vec![AgentGrant::ClientCredentials],
        token_ttl_secs: 60,
        rate_limits,
        max_concurrent_tokens,
    };
    AgentRecord::register(new, OffsetDateTime::now_utc()).0
}

#[test]
fn a_stored_agent_keeps_its_profile_and_limits_at_their_places() {
    let limits = AgentRateLimits {
        api_calls_per_min: Some(5),
        ..AgentRateLimits::default()
    };
    let agent = agent_with(limits, Some(3));
    let stored = serde_json::to_value(&agent).unwrap();
    assert_eq!(stored["name"], "a");
    assert_eq!(stored["token_ttl_secs"], 60);
    assert_eq!(stored["rate_limits"]["api_calls_per_min"], 5);
    assert!(stored["rate_limits"]["token_exchange_per_min"].is_null());
    assert!(stored.get("profile").is_none());
    let back: AgentRecord = serde_json::from_value(stored).unwrap();
    assert_eq!(back.profile.rate_limits, agent.profile.rate_limits);
    assert_eq!(back.profile.max_concurrent_tokens, Some(3));
    let shown = serde_json::to_value(back.effective_limits(&AgentPolicy::default())).unwrap();
    assert_eq!(shown["api_calls_per_min"], 5);
    assert_eq!(shown["max_concurrent_tokens"], 3);
}

#[test]
fn limits_are_clamped_to_the_ceiling_and_default_to_it() {
    let mut policy = AgentPolicy::default();
    policy.ceilings.client_credentials_per_min = 3;
    let limits = AgentRateLimits {
        client_credentials_per_min: Some(100),
        token_exchange_per_min: Some(7),
        ..AgentRateLimits::default()
    };
    let e = agent_with(limits, None).effective_limits(&policy);
    assert_eq!(e.per_minute.client_credentials_per_min, 3);
    assert_eq!(e.per_minute.token_exchange_per_min, 7);
    assert_eq!(
        e.per_minute.ciba_initiate_per_min,
        policy.ceilings.ciba_initiate_per_min
    );
    assert_eq!(e.max_concurrent_tokens, policy.max_concurrent_tokens);
}

#[test]
fn a_window_refuses_past_its_limit_and_reports_once() {
    let mut c = AgentCounters::default();
    let id = Uuid::now_v7();
    let now = Instant::now();
    assert!(c.hit(id, AgentLimit::DeviceCode, 2, now).is_ok());
    assert!(c.hit(id, AgentLimit::DeviceCode, 2, now).is_ok());
    let first = c
        .hit(id, AgentLimit::DeviceCode, 2, now)
        .err()
        .map(|o| o.first);
    let second = c
        .hit(id, AgentLimit::DeviceCode, 2, now)
        .err()
        .map(|o| o.first);
    assert_eq!((first, second), (Some(true), Some(false)));
    // Another limit of the same agent counts apart.
    assert!(c.hit(id, AgentLimit::CibaInitiate, 2, now).is_ok());
}
