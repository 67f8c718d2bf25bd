//! Unit tests of the wallet verifier.

use serde_json::json;

use super::*;

#[test]
fn only_public_addresses_are_fetched() {
    for (ip, loopback, ok) in [
        ("93.184.215.14", false, true),
        ("2606:2800:21f:cb07::1", false, true),
        ("127.0.0.1", false, false),
        ("127.0.0.1", true, true),
        ("::1", true, true),
        ("10.1.2.3", true, false),
        ("172.16.0.1", false, false),
        ("192.168.1.1", false, false),
        ("169.254.169.254", true, false),
        ("100.64.0.1", false, false),
        ("0.0.0.0", true, false),
        ("fd00::1", false, false),
        ("fe80::1", false, false),
        ("::ffff:10.0.0.1", false, false),
    ] {
        let ip: std::net::IpAddr = ip.parse().unwrap();
        let reach = if loopback {
            crate::net::Reach::PublicAndLoopback
        } else {
            crate::net::Reach::Public
        };
        assert_eq!(
            crate::net::reachable(ip, reach),
            ok,
            "{ip} loopback={loopback}"
        );
    }
}

#[test]
fn did_web_urls_follow_the_method() {
    assert_eq!(
        did_web_url("did:web:issuer.example").as_deref(),
        Some("https://issuer.example/.well-known/did.json")
    );
    assert_eq!(
        did_web_url("did:web:issuer.example:pid:de").as_deref(),
        Some("https://issuer.example/pid/de/did.json")
    );
    assert_eq!(
        did_web_url("did:web:localhost%3A8443").as_deref(),
        Some("http://localhost:8443/.well-known/did.json")
    );
    assert_eq!(did_web_url("did:key:z6Mk"), None);
}

#[test]
fn age_is_counted_from_the_birthday() {
    let day = |d: &str| {
        let f = time::macros::format_description!("[year]-[month]-[day]");
        time::Date::parse(d, &f)
            .unwrap()
            .midnight()
            .assume_utc()
            .unix_timestamp()
    };
    let born = |d: &str| {
        let mut m = Map::new();
        m.insert("birth_date".into(), json!(d));
        m
    };
    assert_eq!(age_over(&born("2008-11-26"), day("2026-11-26")), Some(true));
    assert_eq!(
        age_over(&born("2008-11-27"), day("2026-11-26")),
        Some(false)
    );
    let mut flag = born("2015-01-01");
    flag.insert("age_over_18".into(), json!(true));
    assert_eq!(age_over(&flag, day("2026-11-26")), Some(true));
    assert_eq!(age_over(&Map::new(), day("2026-11-26")), None);
}
