//! `POST /v1/onboarding/signup`: every rule of spec 2.1, the honeypot, the CAPTCHA, idempotency,
//! and the body errors.

use std::{
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Barrier,
    },
    thread,
    time::Duration,
};

use serde_json::{json, Value};

use crate::support::{
    error_code, eventually, signup_body, start_with_mail, CaptchaStub, TestServer, UserApi,
    PASSWORD, USER_PASSWORD,
};

fn tenant_count(srv: &TestServer) -> usize {
    srv.admin(&["tenant", "list"], "").json()["tenants"]
        .as_array()
        .unwrap()
        .len()
}

#[test]
fn signup_creates_the_tenant_its_owner_and_a_working_api_key() {
    let srv = TestServer::start();
    let body = srv.signup("Acme Corp", "Owner@Example.com");
    assert_eq!(body["tenant"]["slug"], "acme-corp");
    assert_eq!(body["tenant"]["name"], "Acme Corp");
    assert_eq!(body["owner"]["email"], "owner@example.com");
    assert!(uuid::Uuid::parse_str(body["tenant"]["id"].as_str().unwrap()).is_ok());
    assert!(uuid::Uuid::parse_str(body["owner"]["id"].as_str().unwrap()).is_ok());
    let key = body["api_key"].as_str().unwrap();
    assert!(key.starts_with("tsk_") && key.len() >= 4 + 43, "{key}");
    let me: Value = srv.get("/v1/tenant", Some(key)).json().unwrap();
    assert_eq!(me["slug"], "acme-corp");
    assert_eq!(me["tier"], "free");
    assert!(key.starts_with(me["api_key"]["prefix"].as_str().unwrap()));
    // The key is never shown again, and the owner is on record.
    assert!(!me.to_string().contains(key));
    let show = srv.admin(&["tenant", "show", "acme-corp"], "").json();
    assert_eq!(show["owners"], json!(["owner@example.com"]));
    assert!(!show.to_string().contains(key));
    // A second tenant with the same name gets its own slug.
    let second = srv.signup("Acme Corp", "other@example.com");
    assert_eq!(second["tenant"]["slug"], "acme-corp-2");
}

#[test]
fn every_rule_of_2_1_violated_alone_names_its_field() {
    let srv = TestServer::start();
    let cases: Vec<(&str, Value)> = vec![
        ("email", json!(null)),
        ("email", json!("")),
        ("email", json!("not-an-email")),
        ("password", json!(null)),
        ("password", json!("a".repeat(11))),
        ("password", json!("a".repeat(129))),
        ("tenant_name", json!(null)),
        ("tenant_name", json!("A")),
        ("tenant_name", json!("   ")),
        ("tenant_name", json!("x".repeat(51))),
        ("consent_terms", json!(false)),
        ("consent_terms", json!(null)),
        ("consent_terms", json!("yes")),
        ("consent_privacy", json!(false)),
        ("consent_privacy", json!(null)),
        ("idempotency_key", json!("x".repeat(35))),
    ];
    for (field, value) in cases {
        let mut body = signup_body("Rules Inc", "rules@example.com");
        if value.is_null() {
            body.as_object_mut().unwrap().remove(field);
        } else {
            body[field] = value.clone();
        }
        let r = srv.post_json("/v1/onboarding/signup", &body);
        assert_eq!(r.status(), 400, "{field} = {value}");
        let err: Value = r.json().unwrap();
        assert_eq!(
            error_code(&err),
            "validation/invalid_request",
            "{field} = {value}"
        );
        let fields = err["error"]["details"]["fields"].as_object().unwrap();
        assert!(
            fields.contains_key(field) && fields.len() == 1,
            "{field} = {value}: {err}"
        );
    }
    // Every missing field is reported at once.
    let r = srv.post_json("/v1/onboarding/signup", &json!({}));
    let err: Value = r.json().unwrap();
    let fields = err["error"]["details"]["fields"].as_object().unwrap();
    for f in [
        "email",
        "password",
        "tenant_name",
        "consent_terms",
        "consent_privacy",
    ] {
        assert!(fields.contains_key(f), "{f} missing from {err}");
    }
    assert_eq!(tenant_count(&srv), 0);
    // Lengths are characters, not bytes: 12 two-byte characters are a valid password, and
    // the boundaries 12, 128, 2 and 50 are accepted.
    let mut body = signup_body(&"n".repeat(50), "bounds@example.com");
    body["password"] = json!("ą".repeat(12));
    assert_eq!(srv.post_json("/v1/onboarding/signup", &body).status(), 201);
    let mut body = signup_body("ab", "bounds2@example.com");
    body["password"] = json!("p".repeat(128));
    body["consent_marketing"] = json!(true);
    body["idempotency_key"] = json!(uuid::Uuid::new_v4().to_string());
    assert_eq!(srv.post_json("/v1/onboarding/signup", &body).status(), 201);
}

#[test]
fn a_filled_honeypot_is_rejected_and_creates_nothing() {
    let srv = TestServer::start();
    let mut body = signup_body("Bot Farm", "bot@example.com");
    body["website"] = json!("http://spam.example");
    let r = srv.post_json("/v1/onboarding/signup", &body);
    assert_eq!(r.status(), 400);
    assert_eq!(error_code(&r.json().unwrap()), "onboarding/rejected");
    assert_eq!(tenant_count(&srv), 0);
    // Blank is fine.
    body["website"] = json!("  ");
    assert_eq!(srv.post_json("/v1/onboarding/signup", &body).status(), 201);
}

fn signup_forwarded_for(
    srv: &TestServer,
    body: &Value,
    forwarded_for: &str,
) -> reqwest::blocking::Response {
    srv.client
        .post(srv.url("/v1/onboarding/signup"))
        .header("x-forwarded-for", forwarded_for)
        .json(body)
        .send()
        .unwrap()
}

#[test]
fn the_captcha_is_verified_with_the_client_ip_behind_a_trusted_proxy() {
    let stub = CaptchaStub::start();
    let srv = TestServer::start_with(&[
        ("TESSERA__CAPTCHA__PROVIDER", "turnstile"),
        ("TESSERA__CAPTCHA__SECRET", "stub-secret"),
        ("TESSERA__CAPTCHA__VERIFY_URL", &stub.url),
        ("TESSERA__SERVER__TRUSTED_PROXIES", "[\"127.0.0.0/8\"]"),
    ]);
    let mut body = signup_body("Human Co", "human@example.com");
    // No token: rejected.
    let r = srv.post_json("/v1/onboarding/signup", &body);
    assert_eq!(r.status(), 400);
    assert_eq!(error_code(&r.json().unwrap()), "onboarding/rejected");
    // A token the verifier refuses: rejected.
    body["turnstile_token"] = json!("bad");
    assert_eq!(srv.post_json("/v1/onboarding/signup", &body).status(), 400);
    assert_eq!(tenant_count(&srv), 0);
    // A good token from a client behind the trusted proxy.
    body["turnstile_token"] = json!("good");
    let r = signup_forwarded_for(&srv, &body, "203.0.113.9");
    assert_eq!(r.status(), 201);
    let seen = stub.seen.lock().unwrap().clone();
    assert_eq!(
        seen.len(),
        2,
        "the missing token never reaches the verifier"
    );
    let last = seen.last().unwrap();
    assert_eq!(last["response"], "good");
    assert_eq!(last["secret"], "stub-secret");
    assert_eq!(last["remoteip"], "203.0.113.9");
}

#[test]
fn forwarded_for_from_an_untrusted_peer_is_ignored() {
    let stub = CaptchaStub::start();
    let srv = TestServer::start_with(&[
        ("TESSERA__CAPTCHA__PROVIDER", "turnstile"),
        ("TESSERA__CAPTCHA__SECRET", "stub-secret"),
        ("TESSERA__CAPTCHA__VERIFY_URL", &stub.url),
    ]);
    let mut body = signup_body("Spoof Co", "spoof@example.com");
    body["turnstile_token"] = json!("good");
    let r = signup_forwarded_for(&srv, &body, "203.0.113.9");
    assert_eq!(r.status(), 201);
    assert_eq!(stub.seen.lock().unwrap()[0]["remoteip"], "127.0.0.1");
}

#[test]
fn an_unreachable_captcha_verifier_fails_closed() {
    let srv = TestServer::start_with(&[
        ("TESSERA__CAPTCHA__PROVIDER", "turnstile"),
        ("TESSERA__CAPTCHA__SECRET", "stub-secret"),
        (
            "TESSERA__CAPTCHA__VERIFY_URL",
            "http://127.0.0.1:9/siteverify",
        ),
    ]);
    let mut body = signup_body("Down Co", "down@example.com");
    body["turnstile_token"] = json!("good");
    let r = srv.post_json("/v1/onboarding/signup", &body);
    assert_eq!(r.status(), 503);
    assert_eq!(error_code(&r.json().unwrap()), "service/unavailable");
}

#[test]
fn idempotency_keys_replay_the_first_answer_and_refuse_another_body() {
    let srv = TestServer::start();
    let key = uuid::Uuid::new_v4().to_string();
    let mut body = signup_body("Once Ltd", "once@example.com");
    body["idempotency_key"] = json!(key);
    let first = srv.post_json("/v1/onboarding/signup", &body);
    assert_eq!(first.status(), 201);
    let first: Value = first.json().unwrap();
    let again = srv.post_json("/v1/onboarding/signup", &body);
    assert_eq!(again.status(), 201);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(again.json::<Value>().unwrap(), first);
    assert_eq!(tenant_count(&srv), 1);
    // Same key, different body.
    body["tenant_name"] = json!("Twice Ltd");
    let r = srv.post_json("/v1/onboarding/signup", &body);
    assert_eq!(r.status(), 409);
    assert_eq!(
        error_code(&r.json().unwrap()),
        "onboarding/idempotency_conflict"
    );
    assert_eq!(tenant_count(&srv), 1);
}

#[test]
fn an_existing_owner_email_is_refused_whatever_the_password() {
    let srv = TestServer::start();
    srv.signup("First Co", "dev@example.com");
    // Neither the right nor a wrong password makes a difference: no password oracle here.
    for password in [PASSWORD, "a different password"] {
        let mut body = signup_body("Second Co", "DEV@example.com");
        body["password"] = json!(password);
        let r = srv.post_json("/v1/onboarding/signup", &body);
        assert_eq!(r.status(), 409);
        assert_eq!(error_code(&r.json().unwrap()), "onboarding/account_exists");
    }
    assert_eq!(tenant_count(&srv), 1);
}

#[test]
fn display_name_addresses_are_not_addresses() {
    let srv = TestServer::start();
    let body = signup_body("Evil Co", "Evil <alice@example.com>");
    let r = srv.post_json("/v1/onboarding/signup", &body);
    assert_eq!(r.status(), 400);
    let err: Value = r.json().unwrap();
    assert!(
        err["error"]["details"]["fields"]["email"].is_string(),
        "{err}"
    );
}

#[test]
fn a_retry_with_a_spent_or_fresh_captcha_token_is_replayed() {
    let stub = CaptchaStub::start();
    let srv = TestServer::start_with(&[
        ("TESSERA__CAPTCHA__PROVIDER", "turnstile"),
        ("TESSERA__CAPTCHA__SECRET", "stub-secret"),
        ("TESSERA__CAPTCHA__VERIFY_URL", &stub.url),
    ]);
    let mut body = signup_body("Retry Co", "retry@example.com");
    body["idempotency_key"] = json!(uuid::Uuid::new_v4().to_string());
    body["turnstile_token"] = json!("good");
    let first = srv.post_json("/v1/onboarding/signup", &body);
    assert_eq!(first.status(), 201);
    let first: Value = first.json().unwrap();
    // The same token again (the verifier would refuse a spent token) and then a new one.
    for token in ["good", "spent-or-new"] {
        body["turnstile_token"] = json!(token);
        let again = srv.post_json("/v1/onboarding/signup", &body);
        assert_eq!(again.status(), 201, "token {token}");
        assert_eq!(again.json::<Value>().unwrap(), first);
    }
    assert_eq!(
        stub.seen.lock().unwrap().len(),
        1,
        "replays skip the verifier"
    );
    assert_eq!(tenant_count(&srv), 1);
}

#[test]
fn body_errors_have_the_envelope() {
    let srv = TestServer::start();
    // Over the size limit: 413.
    let big =
        json!({"email": "x@example.com", "password": PASSWORD, "tenant_name": "x".repeat(70_000)});
    let r = srv.post_json("/v1/onboarding/signup", &big);
    assert_eq!(r.status(), 413);
    assert_eq!(
        error_code(&r.json().unwrap()),
        "validation/payload_too_large"
    );
    // Wrong content type: 415.
    let r = srv
        .client
        .post(srv.url("/v1/onboarding/signup"))
        .header("content-type", "text/plain")
        .body(signup_body("Text Co", "t@example.com").to_string())
        .send()
        .unwrap();
    assert_eq!(r.status(), 415);
    assert_eq!(
        error_code(&r.json().unwrap()),
        "validation/unsupported_media_type"
    );
    // No content type at all: 415 too.
    let r = srv
        .client
        .post(srv.url("/v1/onboarding/signup"))
        .body("{}")
        .send()
        .unwrap();
    assert_eq!(r.status(), 415);
    // Broken JSON: 400 naming the body.
    let r = srv
        .client
        .post(srv.url("/v1/onboarding/signup"))
        .header("content-type", "application/json")
        .body(r#"{"email": "x@example.com", "#)
        .send()
        .unwrap();
    assert_eq!(r.status(), 400);
    let err: Value = r.json().unwrap();
    assert_eq!(error_code(&err), "validation/invalid_request");
    assert!(
        err["error"]["details"]["fields"]["body"].is_string(),
        "{err}"
    );
    assert_eq!(tenant_count(&srv), 0);
}

#[test]
fn signups_are_limited_per_client_address_before_anything_is_hashed() {
    let srv = TestServer::start_with(&[
        ("TESSERA__SECURITY__ONBOARDING_PER_IP_HOURLY", "5"),
        ("TESSERA__SERVER__TRUSTED_PROXIES", "[\"127.0.0.0/8\"]"),
    ]);
    let from = |n: usize, ip: &str| {
        signup_forwarded_for(
            &srv,
            &signup_body(&format!("Flood {n}"), &format!("flood{n}@example.com")),
            ip,
        )
    };
    for n in 0..5 {
        assert_eq!(from(n, "203.0.113.7").status(), 201, "signup {n}");
    }
    let r = from(5, "203.0.113.7");
    assert_eq!(r.status(), 429);
    let retry: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=3600).contains(&retry), "{retry}");
    assert_eq!(error_code(&r.json().unwrap()), "auth/rate_limited");
    // A refused attempt creates nothing, and an existing address is refused the same way
    // (counted before the account is looked at or a password hashed).
    assert_eq!(tenant_count(&srv), 5);
    assert_eq!(from(0, "203.0.113.7").status(), 429);
    // Another address is counted on its own...
    assert_eq!(from(6, "203.0.113.8").status(), 201);
    // ... and IPv6 by its /64: rotating through a prefix does not reset the count.
    for n in 0..5 {
        let ip = format!("2001:db8:7:1::{:x}", n + 1);
        assert_eq!(from(10 + n, &ip).status(), 201, "IPv6 signup {n}");
    }
    assert_eq!(from(20, "2001:db8:7:1:ffff::1").status(), 429);
    assert_eq!(from(21, "2001:db8:7:2::1").status(), 201);
    assert_eq!(tenant_count(&srv), 12);
}

/// A flood of sign-ups (the limit raised for it) fills the queue of new passwords' hashes and
/// is refused there, while the logins of another tenant's user, checked first, are never.
/// The pool and its queues are set here, so the case means the same on any number of cores:
/// two threads, production-cost hashes, 16 places for checks and 2 for new hashes.
#[test]
fn a_signup_flood_never_refuses_another_tenants_logins() {
    let (smtp, srv) = start_with_mail(&[
        ("TESSERA__SECURITY__ONBOARDING_PER_IP_HOURLY", "100000"),
        ("TESSERA__SECURITY__HASHING_THREADS", "2"),
        ("TESSERA__SECURITY__HASHING_QUEUE_MAX", "16"),
        ("TESSERA__SECURITY__HASHING_NEW_QUEUE_MAX", "2"),
        ("TESSERA__SECURITY__ARGON2_M_COST_KIB", "19456"),
        ("TESSERA__SECURITY__ARGON2_T_COST", "2"),
    ]);
    let api = UserApi::signup(&srv, "Bystander", "owner@bystander.example.com");
    api.verified_user(&smtp, "bea@example.com", USER_PASSWORD);

    const FLOODERS: usize = 24;
    let next = AtomicUsize::new(0);
    let refused = AtomicUsize::new(0);
    let created = AtomicUsize::new(0);
    let others = std::sync::Mutex::new(Vec::new());
    let done = AtomicBool::new(false);
    let start = Barrier::new(FLOODERS + 1);
    let logins: Vec<u16> = thread::scope(|s| {
        for _ in 0..FLOODERS {
            s.spawn(|| {
                start.wait();
                while !done.load(Ordering::SeqCst) {
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    let body =
                        signup_body(&format!("Flood {n}"), &format!("f{n}@flood.example.com"));
                    let r = srv.post_json("/v1/onboarding/signup", &body);
                    match r.status().as_u16() {
                        201 => created.fetch_add(1, Ordering::SeqCst),
                        503 => refused.fetch_add(1, Ordering::SeqCst),
                        other => {
                            others.lock().unwrap().push(other);
                            0
                        }
                    };
                }
            });
        }
        start.wait();
        // The flood has filled the new hashes' queue once some sign-up was refused.
        let saturated = eventually(Duration::from_secs(30), || {
            refused.load(Ordering::SeqCst) > 0
        });
        let mut statuses = Vec::new();
        if saturated {
            for _ in 0..10 {
                statuses.push(api.login("bea@example.com", USER_PASSWORD).status);
            }
        }
        done.store(true, Ordering::SeqCst);
        assert!(
            saturated,
            "no sign-up was ever refused: the flood did not saturate"
        );
        statuses
    });
    assert!(
        others.lock().unwrap().is_empty(),
        "sign-ups answered {:?}",
        others.lock().unwrap()
    );
    assert!(
        created.load(Ordering::SeqCst) > 0,
        "no sign-up went through"
    );
    assert_eq!(logins, vec![200; 10], "logins during the flood");
}
