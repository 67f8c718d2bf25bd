//! The storage watchdog: a storage call that never returns (the sled 0.34 deadlock, drilled by
//! `tessera admin fault hang-storage`) stops the process with exit code 75 instead of leaving it
//! up and silent, and a restart on the same data directory finds every acknowledged write.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::{signup_body, TestServer, PASSWORD};

/// The watchdog's limit for this test, in seconds.
const LIMIT_SECS: u64 = 2;

/// `tessera_storage_oldest_call_seconds` from the metrics, if the server answers.
fn oldest_call(srv: &TestServer) -> Option<f64> {
    let text = srv.get("/metrics", None).text().ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("tessera_storage_oldest_call_seconds "))
        .and_then(|v| v.trim().parse().ok())
}

#[test]
fn a_storage_call_that_never_returns_stops_the_process_and_a_restart_keeps_every_acknowledged_write(
) {
    let limit = LIMIT_SECS.to_string();
    let mut srv = TestServer::start_with(&[
        ("TESSERA__TESTING__FAULT_INJECTION", "true"),
        ("TESSERA__STORAGE__WATCHDOG_SECS", &limit),
    ]);
    // Writes the server acknowledged: each signup answered 201 after its group commit.
    let mut acknowledged = Vec::new();
    for n in 0..4 {
        let t = srv.signup(&format!("Kept {n}"), &format!("kept-{n}@example.com"));
        acknowledged.push((
            t["tenant"]["slug"].as_str().unwrap().to_owned(),
            t["api_key"].as_str().unwrap().to_owned(),
            format!("kept-{n}@example.com"),
        ));
    }
    assert_eq!(srv.get("/readyz", None).status(), 200);

    // The drill: the next batch applied hangs inside sled's call for good.
    let armed = srv.admin(&["fault", "hang-storage"], "").json();
    assert_eq!(armed["armed"], true, "{armed}");
    // A write whose apply hangs; its client gives up long after the watchdog acts.
    let url = srv.url("/v1/onboarding/signup");
    let hung = std::thread::spawn(move || {
        let client = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        client
            .post(url)
            .json(&signup_body("Hung", "hung@example.com"))
            .send()
            .map(|r| r.status().as_u16())
    });

    // While it hangs, the metrics show the stuck call's age (reads still answer).
    let started = Instant::now();
    let mut seen_age = 0.0_f64;
    while started.elapsed() < Duration::from_secs(LIMIT_SECS) {
        if let Some(age) = oldest_call(&srv) {
            seen_age = seen_age.max(age);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        seen_age >= 0.5,
        "the metrics never showed the stuck call (oldest seen {seen_age} s)"
    );

    // The watchdog stops the process, with its own exit code, and says which call stuck.
    let status = srv
        .wait_exit(Duration::from_secs(LIMIT_SECS + 15))
        .expect("the process is still up with a storage call stuck: no watchdog");
    assert_eq!(status.code(), Some(75), "{status}\n{}", srv.log_text());
    let log = srv.log_text();
    assert!(
        log.contains("a storage call has not returned") && log.contains("apply"),
        "the log does not name the stuck call:\n{log}"
    );
    // The hung request was never acknowledged as a success.
    if let Ok(status) = hung.join().unwrap() {
        assert_ne!(status, 201, "the hung write was acknowledged");
    }

    // Restarted on the same data directory (as systemd or the container runtime would), every
    // acknowledged write is there: the tenant answers to its key, its owner signs in.
    srv.restart();
    assert_eq!(srv.get("/readyz", None).status(), 200);
    for (slug, key, owner) in &acknowledged {
        let me: Value = srv.get("/v1/tenant", Some(key)).json().unwrap();
        assert_eq!(me["slug"], slug.as_str(), "{me}");
        let login = srv.post_json(
            "/v1/auth/dashboard/login",
            &json!({"email": owner, "password": PASSWORD}),
        );
        assert_eq!(
            login.status(),
            200,
            "{owner} cannot sign in after the restart"
        );
    }
    // And the server writes again.
    srv.signup("After", "after@example.com");
}
