//! Webhooks: endpoints on the dashboard, events written with the change that causes them,
//! delivery signed per Standard Webhooks (checked here with the `standardwebhooks` reference
//! crate, not the server's code), retries, a delivery surviving a kill -9, rotation with two
//! signatures, the SSRF guard, the test event, redelivery and the delivery log.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::Duration,
};

use serde_json::{json, Value};
use standardwebhooks::Webhook;

use crate::stub::{Route, StubRequest, StubResponse, StubServer};
use crate::support::*;

pub(crate) const PRIVATE_OK: (&str, &str) = ("TESSERA__WEBHOOKS__ALLOW_PRIVATE_TARGETS", "true");
const FAST_RETRIES: (&str, &str) = ("TESSERA__WEBHOOKS__RETRY_SCALE", "0.001");
const ALL_EVENTS: [&str; 5] = [
    "user.created",
    "user.deleted",
    "user.email_verified",
    "session.revoked",
    "agent.revoked",
];

// ---------------------------------------------------------------------------------------------
// A local receiver
// ---------------------------------------------------------------------------------------------

/// What the receiver answers one request with.
#[derive(Clone, Copy, Debug)]
enum Answer {
    Status(u16),
    /// Waits this long before answering 200 (longer than the server's timeout: a timeout).
    Stall(Duration),
}

/// One request the receiver got.
#[derive(Clone, Debug)]
pub(crate) struct Received {
    headers: Vec<(String, String)>,
    body: String,
    answered: u16,
}

impl Received {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("a JSON body")
    }

    /// Whether the Standard Webhooks reference implementation accepts it under `secret`.
    pub(crate) fn verifies_with(&self, secret: &str) -> bool {
        let mut map = axum::http::HeaderMap::new();
        for (k, v) in &self.headers {
            if let (Ok(name), Ok(value)) = (
                axum::http::HeaderName::from_bytes(k.as_bytes()),
                axum::http::HeaderValue::from_str(v),
            ) {
                map.append(name, value);
            }
        }
        Webhook::new(secret)
            .expect("a whsec_ secret")
            .verify(self.body.as_bytes(), &map)
            .is_ok()
    }

    fn event_type(&self) -> String {
        self.json()["type"].as_str().unwrap_or_default().to_owned()
    }
}

/// An HTTP/1.1 server on 127.0.0.1 that records every request and answers from a script
/// (then 200).
pub(crate) struct Receiver {
    pub(crate) url: String,
    got: Arc<Mutex<Vec<Received>>>,
    script: Arc<Mutex<VecDeque<Answer>>>,
    /// What it answers once the script is spent.
    default: Arc<Mutex<u16>>,
    _server: StubServer,
}

impl Receiver {
    pub(crate) fn start() -> Self {
        let got = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(VecDeque::new()));
        let default = Arc::new(Mutex::new(200u16));
        let (g, s, d) = (got.clone(), script.clone(), default.clone());
        let server = StubServer::start(vec![Route::any(move |req| answer(req, &g, &s, &d))]);
        Receiver {
            url: format!("{}/hooks/tessera", server.url()),
            got,
            script,
            default,
            _server: server,
        }
    }

    fn script(&self, answers: &[Answer]) {
        self.script.lock().unwrap().extend(answers.iter().copied());
    }

    pub(crate) fn answer_by_default(&self, status: u16) {
        *self.default.lock().unwrap() = status;
    }

    fn received(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    fn of_type(&self, event_type: &str) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(|r| r.event_type() == event_type)
            .collect()
    }

    /// Waits (up to 20 s) for `n` requests of `event_type`; answers them.
    #[track_caller]
    pub(crate) fn wait_for(&self, event_type: &str, n: usize) -> Vec<Received> {
        let ok = eventually(Duration::from_secs(20), || {
            self.of_type(event_type).len() >= n
        });
        assert!(
            ok,
            "{n} {event_type} deliveries expected; got {:?}",
            self.received()
                .iter()
                .map(|r| (r.event_type(), r.answered))
                .collect::<Vec<_>>()
        );
        self.of_type(event_type)
    }
}

/// Answers one request from the script (a stall blocks this request only), then records it.
fn answer(
    req: &StubRequest,
    got: &Mutex<Vec<Received>>,
    script: &Mutex<VecDeque<Answer>>,
    default: &Mutex<u16>,
) -> StubResponse {
    let answer = script
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or(Answer::Status(*default.lock().unwrap()));
    let status = match answer {
        Answer::Status(s) => s,
        Answer::Stall(d) => {
            std::thread::sleep(d);
            200
        }
    };
    got.lock().unwrap().push(Received {
        headers: req.headers.clone(),
        body: req.text(),
        answered: status,
    });
    StubResponse::text(status, "text/plain", "ok")
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn hooks_path(slug: &str) -> String {
    format!("/v1/auth/dashboard/tenants/{slug}/webhooks")
}

fn hook_path(slug: &str, id: &str) -> String {
    format!("{}/{id}", hooks_path(slug))
}

/// An endpoint just registered: its id and secret.
pub(crate) struct Endpoint {
    pub(crate) id: String,
    pub(crate) secret: String,
}

/// Registers an endpoint (the session must be freshly re-authenticated); asserts 201.
#[track_caller]
pub(crate) fn create_endpoint(
    srv: &TestServer,
    s: &Session,
    slug: &str,
    url: &str,
    events: &[&str],
) -> Endpoint {
    let (st, body) = srv.dash_json(
        "POST",
        &hooks_path(slug),
        s,
        Some(&json!({"url": url, "event_types": events, "description": "the test receiver"})),
    );
    assert_eq!(st, 201, "{body}");
    let secret = body["secret"].as_str().expect("a secret").to_owned();
    assert!(secret.starts_with("whsec_"), "{secret}");
    Endpoint {
        id: body["id"].as_str().expect("an id").to_owned(),
        secret,
    }
}

fn deliveries(srv: &TestServer, s: &Session, slug: &str, endpoint: &str) -> Vec<Value> {
    let (st, body) = srv.dash_json(
        "GET",
        &format!("{}/deliveries", hook_path(slug, endpoint)),
        s,
        None,
    );
    assert_eq!(st, 200, "{body}");
    body["data"].as_array().cloned().unwrap_or_default()
}

/// Waits (up to 20 s) until the delivery of `event` to `endpoint` reads as `pred` wants.
#[track_caller]
fn wait_delivery(
    srv: &TestServer,
    s: &Session,
    slug: &str,
    endpoint: &str,
    event: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    let find = || {
        deliveries(srv, s, slug, endpoint)
            .into_iter()
            .find(|d| d["id"] == event)
    };
    let ok = eventually(Duration::from_secs(20), || find().is_some_and(|d| pred(&d)));
    assert!(ok, "delivery {event} never as expected: {:?}", find());
    find().expect("the delivery")
}

/// Queues a `webhook.test` event; answers its delivery id.
#[track_caller]
pub(crate) fn send_test(srv: &TestServer, s: &Session, slug: &str, endpoint: &str) -> String {
    let (st, body) = srv.dash_json(
        "POST",
        &format!("{}/test", hook_path(slug, endpoint)),
        s,
        None,
    );
    assert_eq!(st, 202, "{body}");
    assert_eq!(body["event_type"], "webhook.test");
    assert_eq!(body["status"], "pending");
    body["id"].as_str().expect("a delivery id").to_owned()
}

/// The standard checks of one delivered request: headers, signature, body shape.
#[track_caller]
pub(crate) fn assert_signed(r: &Received, secret: &str) {
    assert!(r.verifies_with(secret), "signature refused: {r:?}");
    assert_eq!(r.header("content-type"), Some("application/json"));
    let id = r.header("webhook-id").expect("webhook-id");
    let ts: i64 = r
        .header("webhook-timestamp")
        .expect("webhook-timestamp")
        .parse()
        .expect("a Unix time");
    assert!((ts as f64 - unix_now()).abs() < 60.0, "timestamp {ts}");
    let body = r.json();
    assert_eq!(json_keys(&body), name_set(&["type", "timestamp", "data"]));
    assert!(body["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert!(!id.is_empty());
    // The body as signed is exactly what came (any change breaks the signature).
    let mut tampered = r.clone();
    tampered.body = r.body.replace("\"data\"", "\"Data\"");
    assert!(!tampered.verifies_with(secret));
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[test]
fn user_events_are_signed_and_delivered_and_a_blocked_registration_sends_none() {
    let receiver = Receiver::start();
    let (smtp, srv, api, s) = user_setup("Hooks", &[PRIVATE_OK, FAST_RETRIES]);
    srv.reauth(&s, PASSWORD);
    let ep = create_endpoint(&srv, &s, &api.slug, &receiver.url, &ALL_EVENTS[..4]);

    let r = srv.dash(
        "PUT",
        &format!(
            "/v1/auth/dashboard/tenants/{}/settings/email-domains",
            api.slug
        ),
        &s,
        Some(&json!({"allowlist": [], "blocklist": ["blocked.example"]})),
    );
    assert_eq!(r.status(), 200);
    // A blocked registration answers as a real one, and writes no user and no event.
    api.register("x@blocked.example", USER_PASSWORD).expect(200);
    let reg = api.register("ada@example.com", USER_PASSWORD);
    let user_id = reg.expect(200)["user"]["id"].as_str().unwrap().to_owned();

    let created = receiver.wait_for("user.created", 1);
    assert_signed(&created[0], &ep.secret);
    let data = &created[0].json()["data"];
    assert_eq!(data["user_id"], user_id.as_str());
    assert_eq!(data["method"], "password");
    assert_eq!(data["email_verified"], false);
    assert_eq!(
        json_keys(data),
        name_set(&["user_id", "method", "email_verified"]),
        "ids only: no address, no password, no date of birth"
    );

    // The address confirmed: user.email_verified.
    let token = api.verification_token(&smtp, "ada@example.com", 1);
    api.post("/v1/auth/verify-email", &json!({"token": token}))
        .expect(200);
    let verified = receiver.wait_for("user.email_verified", 1);
    assert_signed(&verified[0], &ep.secret);
    assert_eq!(verified[0].json()["data"]["user_id"], user_id.as_str());

    // A session ended by its user: session.revoked.
    let tokens = api.login_ok("ada@example.com", USER_PASSWORD);
    api.logout(&tokens.access, None).expect(204);
    let revoked = receiver.wait_for("session.revoked", 1);
    assert_signed(&revoked[0], &ep.secret);
    let data = &revoked[0].json()["data"];
    assert_eq!(data["user_id"], user_id.as_str());
    assert_eq!(data["scope"], "one");
    assert_eq!(data["reason"], "logout");
    assert_eq!(data["session_id"], tokens.sid().as_str());

    // Erased by an admin: user.deleted.
    srv.reauth(&s, PASSWORD);
    let (st, body) = srv.dash_json(
        "DELETE",
        &format!("/v1/auth/dashboard/tenants/{}/users/{user_id}", api.slug),
        &s,
        None,
    );
    assert_eq!(st, 204, "{body}");
    let deleted = receiver.wait_for("user.deleted", 1);
    assert_signed(&deleted[0], &ep.secret);
    assert_eq!(
        deleted[0].json()["data"],
        json!({"user_id": user_id.as_str()})
    );

    // The log holds every delivery, delivered at the first attempt (each recorded just after
    // the receiver answered it); one user.created only.
    let all_recorded = eventually(Duration::from_secs(20), || {
        let log = deliveries(&srv, &s, &api.slug, &ep.id);
        log.len() == 4 && log.iter().all(|d| d["status"] == "succeeded")
    });
    let log = deliveries(&srv, &s, &api.slug, &ep.id);
    assert!(all_recorded, "{log:?}");
    let types: Vec<&str> = log
        .iter()
        .filter_map(|d| d["event_type"].as_str())
        .collect();
    assert_eq!(
        types,
        vec![
            "user.deleted",
            "session.revoked",
            "user.email_verified",
            "user.created"
        ],
        "newest first, and nothing for the blocked registration"
    );
    for d in &log {
        assert_eq!(d["status"], "succeeded", "{d}");
        assert_eq!(d["attempts"], 1, "{d}");
        assert_eq!(d["http_status"], 200, "{d}");
        assert!(d["latency_ms"].as_u64().is_some(), "{d}");
        assert!(d["next_attempt_at"].is_null(), "{d}");
    }
    assert_eq!(receiver.of_type("user.created").len(), 1);
    // `webhook-id` is the event's id, the delivery's id in the log.
    assert_eq!(
        created[0].header("webhook-id"),
        log.last().and_then(|d| d["id"].as_str())
    );
}

#[test]
fn a_revoked_agent_is_delivered_only_to_endpoints_that_subscribed() {
    let receiver = Receiver::start();
    let other = Receiver::start();
    let (_smtp, srv, api, s) = user_setup("Agent Hooks", &[PRIVATE_OK, FAST_RETRIES]);
    let out = srv.admin(&["tenant", "set-tier", &api.slug, "pro"], "");
    assert!(out.status.success(), "{}", out.stderr);
    srv.reauth(&s, PASSWORD);
    let ep = create_endpoint(&srv, &s, &api.slug, &receiver.url, &["agent.revoked"]);
    let other_ep = create_endpoint(&srv, &s, &api.slug, &other.url, &["user.created"]);

    let (st, agent) = srv.dash_json(
        "POST",
        &format!("/v1/auth/dashboard/tenants/{}/agents", api.slug),
        &s,
        Some(&json!({"name": "Order Bot", "grant_types": ["client_credentials"], "scopes": []})),
    );
    assert_eq!(st, 201, "{agent}");
    let agent_id = agent["id"].as_str().unwrap();
    let path = format!("/v1/auth/dashboard/tenants/{}/agents/{agent_id}", api.slug);
    let (st, _) = srv.dash_json("DELETE", &path, &s, None);
    assert_eq!(st, 200);
    // A second revocation is a no-op: no second event.
    let (st, _) = srv.dash_json("DELETE", &path, &s, None);
    assert_eq!(st, 200);

    let got = receiver.wait_for("agent.revoked", 1);
    assert_signed(&got[0], &ep.secret);
    let data = &got[0].json()["data"];
    assert_eq!(data["agent_id"], agent_id);
    assert_eq!(data["client_id"], agent["client_id"]);
    assert!(data["revoked_at"].as_str().is_some());
    // The receiver's answer is recorded just after it was sent.
    let id = got[0].header("webhook-id").expect("webhook-id").to_owned();
    wait_delivery(&srv, &s, &api.slug, &ep.id, &id, |d| {
        d["status"] == "succeeded"
    });
    let log = deliveries(&srv, &s, &api.slug, &ep.id);
    assert_eq!(log.len(), 1, "{log:?}");
    // Not subscribed to agent.revoked: no delivery was ever scheduled for it (the log is
    // written with the event, so this does not race a delivery under way).
    let theirs = deliveries(&srv, &s, &api.slug, &other_ep.id);
    assert!(theirs.is_empty(), "{theirs:?}");
    assert!(
        other.received().is_empty(),
        "not subscribed to agent.revoked"
    );
}

#[test]
fn failures_and_timeouts_are_retried_until_a_2xx_and_logged() {
    let receiver = Receiver::start();
    let (_smtp, srv, api, s) = user_setup(
        "Retry Hooks",
        &[
            PRIVATE_OK,
            FAST_RETRIES,
            ("TESSERA__WEBHOOKS__TIMEOUT_MS", "400"),
        ],
    );
    srv.reauth(&s, PASSWORD);
    let ep = create_endpoint(&srv, &s, &api.slug, &receiver.url, &["user.created"]);
    receiver.script(&[
        Answer::Status(500),
        Answer::Stall(Duration::from_millis(1500)),
        Answer::Status(503),
    ]);
    let id = send_test(&srv, &s, &api.slug, &ep.id);
    let d = wait_delivery(&srv, &s, &api.slug, &ep.id, &id, |d| {
        d["status"] == "succeeded"
    });
    assert_eq!(d["attempts"], 4, "{d}");
    assert_eq!(d["http_status"], 200);
    assert!(d["error"].is_null(), "{d}");
    assert!(d["delivered_at"].as_str().is_some());
    let got = receiver.wait_for("webhook.test", 4);
    // The stalled request is recorded when the receiver answers, after the server gave up.
    let mut answered: Vec<u16> = got.iter().map(|r| r.answered).collect();
    answered.sort_unstable();
    assert_eq!(
        answered,
        vec![200, 200, 500, 503],
        "the stalled one timed out"
    );
    // Every attempt is the same message: same id and body, each signed afresh.
    for r in &got {
        assert_signed(r, &ep.secret);
        assert_eq!(r.header("webhook-id"), Some(id.as_str()));
        assert_eq!(r.body, got[0].body);
    }
    assert_eq!(got[0].json()["data"]["endpoint_id"], ep.id.as_str());
    let (st, endpoint) = srv.dash_json("GET", &hook_path(&api.slug, &ep.id), &s, None);
    assert_eq!(st, 200);
    assert!(
        endpoint["failing_since"].is_null(),
        "a success ends the failing streak"
    );
    assert_eq!(endpoint["enabled"], true);

    // A delivery that keeps failing keeps its place in the schedule, with the last answer.
    receiver.answer_by_default(500);
    let id = send_test(&srv, &s, &api.slug, &ep.id);
    let d = wait_delivery(&srv, &s, &api.slug, &ep.id, &id, |d| {
        d["attempts"].as_u64() >= Some(3)
    });
    assert_eq!(d["status"], "pending");
    assert_eq!(d["error"], "http_500");
    assert_eq!(d["http_status"], 500);
    assert!(d["next_attempt_at"].as_str().is_some());
}

#[test]
fn an_endpoint_failing_past_the_limit_is_disabled_and_its_owners_mailed() {
    let receiver = Receiver::start();
    receiver.answer_by_default(500);
    let (smtp, srv, api, s) = user_setup(
        "Failing Hooks",
        &[
            PRIVATE_OK,
            FAST_RETRIES,
            ("TESSERA__WEBHOOKS__DISABLE_AFTER_SECS", "1"),
        ],
    );
    srv.reauth(&s, PASSWORD);
    let ep = create_endpoint(&srv, &s, &api.slug, &receiver.url, &["user.created"]);
    let id = send_test(&srv, &s, &api.slug, &ep.id);
    let d = wait_delivery(&srv, &s, &api.slug, &ep.id, &id, |d| {
        d["status"] == "failed"
    });
    assert!(d["next_attempt_at"].is_null());
    let (_, endpoint) = srv.dash_json("GET", &hook_path(&api.slug, &ep.id), &s, None);
    assert_eq!(endpoint["enabled"], false, "{endpoint}");
    assert_eq!(endpoint["disabled_reason"], "failing");
    let mail = smtp.wait_for(&api.slug, "webhook_disabled", &api.owner, 1);
    assert!(mail.text.contains(&receiver.url), "{}", mail.text);
    assert!(!mail.text.contains(&ep.secret));
    assert_eq!(
        audit_events(&srv, &s, &api.slug, "webhook.endpoint_disabled").len(),
        1
    );

    // Disabled: no test, no redelivery, no new events; enabled again by its owner.
    let (st, body) = srv.dash_json(
        "POST",
        &format!("{}/test", hook_path(&api.slug, &ep.id)),
        &s,
        None,
    );
    assert_eq!((st, error_code(&body)), (409, "webhook/endpoint_disabled"));
    api.register("skipped@example.com", USER_PASSWORD)
        .expect(200);
    receiver.answer_by_default(200);
    let (st, body) = srv.dash_json(
        "PATCH",
        &hook_path(&api.slug, &ep.id),
        &s,
        Some(&json!({"enabled": true})),
    );
    assert_eq!(st, 200, "{body}");
    assert_eq!(body["enabled"], true);
    assert!(body["disabled_reason"].is_null() && body["failing_since"].is_null());
    let (st, body) = srv.dash_json(
        "POST",
        &format!("{}/deliveries/{id}/redeliver", hook_path(&api.slug, &ep.id)),
        &s,
        None,
    );
    assert_eq!(st, 202, "{body}");
    assert_eq!(body["status"], "pending");
    wait_delivery(&srv, &s, &api.slug, &ep.id, &id, |d| {
        d["status"] == "succeeded"
    });
    // Nothing was queued while it was disabled: the delivery log (written with each event)
    // holds the test event alone, so no delivery of the registration is still on its way.
    let log = deliveries(&srv, &s, &api.slug, &ep.id);
    let types: Vec<&str> = log
        .iter()
        .filter_map(|d| d["event_type"].as_str())
        .collect();
    assert_eq!(types, ["webhook.test"], "{log:?}");
    assert!(
        receiver.of_type("user.created").is_empty(),
        "nothing was queued while it was disabled"
    );
}

#[test]
fn a_pending_delivery_survives_a_kill_9_and_goes_out_after_the_restart() {
    let receiver = Receiver::start();
    // The first attempt fails; the next is 5 s later (the real schedule).
    receiver.script(&[Answer::Status(500)]);
    let (_smtp, mut srv, mut api, s) = user_setup("Durable Hooks", &[PRIVATE_OK]);
    srv.reauth(&s, PASSWORD);
    let ep = create_endpoint(&srv, &s, &api.slug, &receiver.url, &["user.created"]);
    let reg = api.register("grace@example.com", USER_PASSWORD);
    let user_id = reg.expect(200)["user"]["id"].as_str().unwrap().to_owned();
    let first = receiver.wait_for("user.created", 1);
    let event = first[0].header("webhook-id").unwrap().to_owned();
    let d = wait_delivery(&srv, &s, &api.slug, &ep.id, &event, |d| d["attempts"] == 1);
    assert_eq!(
        (d["status"].as_str(), d["error"].as_str()),
        (Some("pending"), Some("http_500"))
    );
    let next = d["next_attempt_at"]
        .as_str()
        .expect("a next attempt")
        .to_owned();
    // A durable answer after the failed attempt was recorded: it is on disk too.
    let (st, _) = srv.dash_json(
        "PATCH",
        &hook_path(&api.slug, &ep.id),
        &s,
        Some(&json!({"description": "still the test receiver"})),
    );
    assert_eq!(st, 200);

    srv.kill();
    srv.restart();
    api.rebase(&srv);
    let s = srv.login(&api.owner, PASSWORD);
    // The schedule came back from disk: the same delivery, its attempt and its next one.
    let d = deliveries(&srv, &s, &api.slug, &ep.id)
        .into_iter()
        .find(|d| d["id"] == event.as_str())
        .expect("the delivery survived");
    assert_eq!(d["next_attempt_at"].as_str().unwrap_or(next.as_str()), next);
    let got = receiver.wait_for("user.created", 2);
    assert_eq!(got[1].answered, 200);
    assert_signed(&got[1], &ep.secret);
    assert_eq!(got[1].json()["data"]["user_id"], user_id.as_str());
    assert_eq!(got[1].header("webhook-id"), Some(event.as_str()));
    let d = wait_delivery(&srv, &s, &api.slug, &ep.id, &event, |d| {
        d["status"] == "succeeded"
    });
    assert_eq!(d["attempts"], 2, "{d}");

    // An event written just before a kill -9 (its answer came, so it is on disk) goes out
    // after the restart, even when the kill came before its first attempt was recorded.
    receiver.answer_by_default(503);
    api.register("hopper@example.com", USER_PASSWORD)
        .expect(200);
    receiver.wait_for("user.created", 3);
    srv.kill();
    receiver.answer_by_default(200);
    srv.restart();
    api.rebase(&srv);
    let got = receiver.wait_for("user.created", 4);
    let last = got.last().unwrap();
    assert_eq!(last.answered, 200);
    assert_signed(last, &ep.secret);
}

#[test]
fn rotation_signs_with_both_secrets_and_the_test_event_can_be_redelivered() {
    let receiver = Receiver::start();
    let (_smtp, srv, api, s) = user_setup("Rotating Hooks", &[PRIVATE_OK, FAST_RETRIES]);
    srv.reauth(&s, PASSWORD);
    let ep = create_endpoint(&srv, &s, &api.slug, &receiver.url, &["user.created"]);

    // Before a rotation: one signature.
    let first = send_test(&srv, &s, &api.slug, &ep.id);
    let got = receiver.wait_for("webhook.test", 1);
    assert_signed(&got[0], &ep.secret);
    assert_eq!(
        got[0]
            .header("webhook-signature")
            .unwrap()
            .split(' ')
            .count(),
        1
    );

    let (st, rotated) = srv.dash_json(
        "POST",
        &format!("{}/rotate-secret", hook_path(&api.slug, &ep.id)),
        &s,
        None,
    );
    assert_eq!(st, 200, "{rotated}");
    let new_secret = rotated["secret"].as_str().unwrap().to_owned();
    assert!(new_secret.starts_with("whsec_") && new_secret != ep.secret);
    let until = rotated["previous_secret_expires_at"]
        .as_str()
        .expect("overlap");
    let until =
        time::OffsetDateTime::parse(until, &time::format_description::well_known::Rfc3339).unwrap();
    let hours = (until - time::OffsetDateTime::now_utc()).whole_minutes() as f64 / 60.0;
    assert!((23.9..=24.0).contains(&hours), "{hours}");

    // During the overlap both secrets sign: two signatures, each verifying on its own.
    send_test(&srv, &s, &api.slug, &ep.id);
    let got = receiver.wait_for("webhook.test", 2);
    let r = &got[1];
    assert_eq!(r.header("webhook-signature").unwrap().split(' ').count(), 2);
    assert!(r.verifies_with(&ep.secret), "the old secret still verifies");
    assert!(r.verifies_with(&new_secret), "the new secret verifies");
    assert!(!r.verifies_with("whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"));

    // The first test event again, by hand: same webhook-id, signed with both secrets now.
    let (st, body) = srv.dash_json(
        "POST",
        &format!(
            "{}/deliveries/{first}/redeliver",
            hook_path(&api.slug, &ep.id)
        ),
        &s,
        None,
    );
    assert_eq!(st, 202, "{body}");
    let got = receiver.wait_for("webhook.test", 3);
    assert_eq!(got[2].header("webhook-id"), Some(first.as_str()));
    assert!(got[2].verifies_with(&new_secret));
    let d = wait_delivery(&srv, &s, &api.slug, &ep.id, &first, |d| {
        d["attempts"] == 2 && d["status"] == "succeeded"
    });
    assert_eq!(d["event_type"], "webhook.test");

    // Rotation needs a recent re-authentication; unknown ids are 404s; the log pages.
    let unknown = "0190a6b2-0000-7000-8000-000000000000";
    let (st, body) = srv.dash_json(
        "POST",
        &format!(
            "{}/deliveries/{unknown}/redeliver",
            hook_path(&api.slug, &ep.id)
        ),
        &s,
        None,
    );
    assert_eq!((st, error_code(&body)), (404, "resource/not_found"));
    let (st, _) = srv.dash_json("GET", &hook_path(&api.slug, unknown), &s, None);
    assert_eq!(st, 404);
    let (st, page) = srv.dash_json(
        "GET",
        &format!("{}/deliveries?limit=1", hook_path(&api.slug, &ep.id)),
        &s,
        None,
    );
    assert_eq!(st, 200);
    assert_eq!(page["data"].as_array().unwrap().len(), 1);
    assert_eq!(page["pagination"]["has_more"], true);
    let cursor = page["pagination"]["next_cursor"].as_str().unwrap();
    let (_, next) = srv.dash_json(
        "GET",
        &format!(
            "{}/deliveries?limit=1&cursor={cursor}",
            hook_path(&api.slug, &ep.id)
        ),
        &s,
        None,
    );
    assert_eq!(next["data"][0]["id"], first.as_str());
    assert_eq!(next["pagination"]["has_more"], false);

    // The list never shows a secret; deletion ends the endpoint and its log.
    let (_, list) = srv.dash_json("GET", &hooks_path(&api.slug), &s, None);
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
    assert!(list["data"][0].get("secret").is_none());
    assert!(!list.to_string().contains("whsec_"));
    let (st, _) = srv.dash_json("DELETE", &hook_path(&api.slug, &ep.id), &s, None);
    assert_eq!(st, 204);
    let (st, _) = srv.dash_json(
        "GET",
        &format!("{}/deliveries", hook_path(&api.slug, &ep.id)),
        &s,
        None,
    );
    assert_eq!(st, 404);
}

#[test]
fn private_and_loopback_targets_are_refused_unless_the_operator_allows_them() {
    let receiver = Receiver::start();
    let (_smtp, mut srv, api, s) = user_setup("Guarded Hooks", &[]);
    srv.reauth(&s, PASSWORD);
    let path = hooks_path(&api.slug);
    for url in [
        receiver.url.as_str(),
        "http://hooks.example.com/x",
        "https://127.0.0.1/x",
        "https://localhost:8443/x",
        "https://api.localhost/x",
        "https://10.0.0.8/x",
        "https://192.168.1.1/x",
        "https://169.254.169.254/latest/meta-data",
        "https://[::1]/x",
        "https://[fd00::1]/x",
        "https://[::ffff:127.0.0.1]/x",
        "https://100.64.0.1/x",
    ] {
        let (st, body) = srv.dash_json(
            "POST",
            &path,
            &s,
            Some(&json!({"url": url, "event_types": ["user.created"]})),
        );
        assert_eq!(
            (st, error_code(&body)),
            (400, "webhook/target_not_allowed"),
            "{url}: {body}"
        );
    }
    // Shapes and catalogue: every bad field named at once.
    let (st, body) = srv.dash_json(
        "POST",
        &path,
        &s,
        Some(&json!({"url": "https://u:p@hooks.example.com/", "event_types": ["user.created", "user.exploded"]})),
    );
    assert_eq!((st, error_code(&body)), (400, "validation/invalid_request"));
    let fields = &body["error"]["details"]["fields"];
    assert!(
        fields.get("url").is_some() && fields.get("event_types[1]").is_some(),
        "{body}"
    );
    let (st, body) = srv.dash_json(
        "POST",
        &path,
        &s,
        Some(&json!({"url": "https://93.184.215.14/x", "event_types": []})),
    );
    assert_eq!((st, error_code(&body)), (400, "validation/invalid_request"));
    assert!(body["error"]["details"]["fields"]
        .get("event_types")
        .is_some());

    // A public address is fine, up to ten endpoints.
    for n in 0..10 {
        create_endpoint(
            &srv,
            &s,
            &api.slug,
            &format!("https://93.184.215.14/hook/{n}"),
            &["user.created"],
        );
    }
    let (st, body) = srv.dash_json(
        "POST",
        &path,
        &s,
        Some(&json!({"url": "https://93.184.215.14/hook/11", "event_types": ["user.created"]})),
    );
    assert_eq!((st, error_code(&body)), (409, "webhook/limit_reached"));
    let (_, list) = srv.dash_json("GET", &path, &s, None);
    for e in list["data"].as_array().unwrap() {
        let (st, _) = srv.dash_json(
            "DELETE",
            &hook_path(&api.slug, e["id"].as_str().unwrap()),
            &s,
            None,
        );
        assert_eq!(st, 204);
    }

    // An endpoint saved while the operator allowed private targets is not reached once they
    // are no longer allowed: checked again at every attempt.
    srv.restart_with(&[PRIVATE_OK, FAST_RETRIES]);
    let s = srv.login(&api.owner, PASSWORD);
    srv.reauth(&s, PASSWORD);
    let ep = create_endpoint(&srv, &s, &api.slug, &receiver.url, &["user.created"]);
    send_test(&srv, &s, &api.slug, &ep.id);
    receiver.wait_for("webhook.test", 1);
    srv.restart_with(&[("TESSERA__WEBHOOKS__ALLOW_PRIVATE_TARGETS", "false")]);
    let s = srv.login(&api.owner, PASSWORD);
    let id = send_test(&srv, &s, &api.slug, &ep.id);
    let d = wait_delivery(&srv, &s, &api.slug, &ep.id, &id, |d| {
        d["attempts"].as_u64() >= Some(1)
    });
    assert_eq!(d["error"], "address_not_allowed", "{d}");
    assert!(d["http_status"].is_null());
    assert_eq!(
        receiver.of_type("webhook.test").len(),
        1,
        "nothing reached the receiver"
    );
}

#[test]
fn special_use_ranges_and_ipv4_embedded_in_ipv6_are_refused_on_create_and_update() {
    let (_smtp, srv, api, s) = user_setup("Special Hooks", &[]);
    srv.reauth(&s, PASSWORD);
    let path = hooks_path(&api.slug);
    let refused = [
        // IPv4-compatible (deprecated) with a loopback address.
        "https://[::127.0.0.1]/",
        // NAT64 (64:ff9b::/96) with a private and a loopback address.
        "https://[64:ff9b::a00:1]/",
        "https://[64:ff9b::7f00:1]/",
        // NAT64 for local use (64:ff9b:1::/48), whatever it embeds.
        "https://[64:ff9b:1::101:101]/",
        // 6to4 with a loopback address.
        "https://[2002:7f00:1::]/",
        // Teredo: a public server, a loopback client (inverted in the last 32 bits).
        "https://[2001:0:101:101::80ff:fffe]/",
        // Site-local (deprecated).
        "https://[fec0::1]/",
        // The IPv4 dummy address, and the reserved 240.0.0.0/4.
        "https://192.0.0.8/",
        "https://240.0.0.1/",
    ];
    for url in refused {
        let (st, body) = srv.dash_json(
            "POST",
            &path,
            &s,
            Some(&json!({"url": url, "event_types": ["user.created"]})),
        );
        assert_eq!(
            (st, error_code(&body)),
            (400, "webhook/target_not_allowed"),
            "{url}: {body}"
        );
    }

    // The same addresses embedding a public IPv4 address are public.
    for url in [
        "https://[2002:5db8:d70e::]/hook",
        "https://[64:ff9b::5db8:d70e]/hook",
    ] {
        let ep = create_endpoint(&srv, &s, &api.slug, url, &["user.created"]);
        let (st, _) = srv.dash_json("DELETE", &hook_path(&api.slug, &ep.id), &s, None);
        assert_eq!(st, 204);
    }

    // A change of URL is held to the same rule.
    let ep = create_endpoint(
        &srv,
        &s,
        &api.slug,
        "https://93.184.215.14/hook",
        &["user.created"],
    );
    for url in refused {
        let (st, body) = srv.dash_json(
            "PATCH",
            &hook_path(&api.slug, &ep.id),
            &s,
            Some(&json!({"url": url})),
        );
        assert_eq!(
            (st, error_code(&body)),
            (400, "webhook/target_not_allowed"),
            "{url}: {body}"
        );
    }
    let (st, body) = srv.dash_json("GET", &hook_path(&api.slug, &ep.id), &s, None);
    assert_eq!(st, 200, "{body}");
    assert_eq!(body["url"], "https://93.184.215.14/hook");
}

#[test]
fn only_owners_manage_endpoints_and_a_secret_needs_a_recent_reauthentication() {
    let (_smtp, srv, api, s) = user_setup("Owner Hooks", &[PRIVATE_OK]);
    let path = hooks_path(&api.slug);
    let body = json!({"url": "https://93.184.215.14/hook", "event_types": ["user.created"]});
    let (st, answer) = srv.dash_json("POST", &path, &s, Some(&body));
    assert_eq!(
        (st, error_code(&answer)),
        (401, "dashboard/reauth_required")
    );
    let r = srv.client.get(srv.url(&path)).send().unwrap();
    assert_eq!(r.status(), 401);
    srv.reauth(&s, PASSWORD);
    let (st, _) = srv.dash_json("POST", &path, &s, Some(&body));
    assert_eq!(st, 201);
    assert_eq!(
        audit_events(&srv, &s, &api.slug, "webhook.endpoint_created").len(),
        1
    );
    // Another tenant's owner sees nothing of it.
    let other = UserApi::signup(&srv, "Other Hooks", "other@example.com");
    let o = srv.login(&other.owner, PASSWORD);
    let (st, _) = srv.dash_json("GET", &path, &o, None);
    assert_eq!(st, 404);
}
