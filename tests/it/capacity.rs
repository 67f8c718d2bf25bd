//! Capacity features: bulk user import, the bounded password-hashing queue, the cache of
//! verified access tokens (and what it must not cache), and idle tenant actors let go.

use std::{
    io::Write,
    process::{Command, Stdio},
    sync::Barrier,
    thread,
    time::{Duration, Instant},
};

use argon2::{
    password_hash::{rand_core::OsRng, PasswordHasher, SaltString},
    Algorithm, Argon2, Params, Version,
};
use serde_json::json;

use crate::support::*;

/// An Argon2id PHC string of `password` with small parameters (an import keeps whatever
/// parameters the hash names).
pub(crate) fn phc(password: &str) -> String {
    phc_with(password, 1024, 1)
}

/// An Argon2id PHC string of `password` costing `m_kib` KiB and `t` passes to verify.
fn phc_with(password: &str, m_kib: u32, t: u32) -> String {
    let params = Params::new(m_kib, t, 1, None).unwrap();
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
        .hash_password(password.as_bytes(), &SaltString::generate(&mut OsRng))
        .unwrap()
        .to_string()
}

/// Runs `tessera admin user import --tenant slug` with `input` on stdin.
pub(crate) fn import(srv: &TestServer, slug: &str, input: &str) -> AdminOutput {
    let mut child = Command::new(bin())
        .args(["admin", "--socket"])
        .arg(&srv.socket)
        .args(["user", "import", "--tenant", slug])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    AdminOutput {
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn line(email: &str, hash: &str, verified: bool) -> String {
    json!({"email": email, "password_hash": hash, "email_verified": verified}).to_string()
}

#[test]
fn imported_users_sign_in_with_their_old_password_and_a_rerun_skips_them() {
    let srv = TestServer::start();
    let api = UserApi::signup(&srv, "Import", "owner@example.com");
    let hash = phc(PASSWORD);
    let input = [
        line("Ada@Example.com", &hash, true),
        String::new(),
        line("bob@example.com", &hash, false),
        line("ada@example.com", &hash, true),
    ]
    .join("\n");
    let out = import(&srv, &api.slug, &input).json();
    assert_eq!(out, json!({"imported": 2, "skipped_existing": 1}));

    // The address was normalised; the password is the one the hash was made from.
    let t = api.login_ok("ada@example.com", PASSWORD);
    assert_eq!(api.me(&t.access).expect(200)["email"], "ada@example.com");
    api.login("ada@example.com", "not the password at all")
        .expect_error(401, "auth/invalid_credentials");
    // Imported as unconfirmed: the tenant's confirmation rule applies.
    api.login("bob@example.com", PASSWORD)
        .expect_error(403, "auth/email_not_verified");

    // Running the same file again writes nothing new.
    let again = import(&srv, &api.slug, &input).json();
    assert_eq!(again, json!({"imported": 0, "skipped_existing": 3}));
    // A registration of an imported address is the look-alike of an existing one.
    let reg = api.register("ada@example.com", "another long password 42");
    assert_eq!(reg.status, 200, "{}", reg.body);
    api.login_ok("ada@example.com", PASSWORD);
}

#[test]
fn an_import_with_a_bad_line_writes_nothing_of_its_batch() {
    let srv = TestServer::start();
    let api = UserApi::signup(&srv, "Import Bad", "owner@example.com");
    let hash = phc(PASSWORD);
    let bcrypt = "$2b$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW";
    let cases = [
        (line("carol@example.com", bcrypt, true), "password_hash"),
        (
            line(
                "carol@example.com",
                &hash.replace("argon2id", "argon2i"),
                true,
            ),
            "password_hash",
        ),
        (line("not an address", &hash, true), "email"),
    ];
    for (bad, field) in cases {
        let input = [line("carol@example.com", &hash, true), bad].join("\n");
        let out = import(&srv, &api.slug, &input);
        assert!(!out.status.success(), "accepted: {}", out.stdout);
        assert!(
            out.stderr.contains(&format!("users[1].{field}")) && out.stderr.contains("lines 1-2"),
            "{}",
            out.stderr
        );
        // The good line of the same batch was not written either.
        api.login("carol@example.com", PASSWORD)
            .expect_error(401, "auth/invalid_credentials");
    }
    // A line that is not JSON of the right shape is refused before anything is sent.
    let out = import(&srv, &api.slug, "{\"email\": \"x@example.com\"}\n");
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("line 1"), "{}", out.stderr);
    // An unknown tenant.
    let out = import(&srv, "no-such-tenant", &line("d@example.com", &hash, true));
    assert!(!out.status.success());
    assert!(out.stderr.contains("not_found"), "{}", out.stderr);
}

#[test]
fn a_large_import_goes_in_several_batches() {
    let srv = TestServer::start();
    let api = UserApi::signup(&srv, "Import Many", "owner@example.com");
    let hash = phc(PASSWORD);
    let input: Vec<String> = (0..1500)
        .map(|i| line(&format!("user{i}@example.com"), &hash, true))
        .collect();
    let out = import(&srv, &api.slug, &input.join("\n")).json();
    assert_eq!(out, json!({"imported": 1500, "skipped_existing": 0}));
    api.login_ok("user0@example.com", PASSWORD);
    api.login_ok("user1499@example.com", PASSWORD);
}

#[test]
fn a_full_hashing_queue_answers_503_with_retry_after_at_once() {
    // No room to wait: a login that finds the hashing thread busy is refused, not queued. One
    // thread, whatever the machine's core count, so 16 logins at once always overflow it.
    let srv = TestServer::start_with(&[
        ("TESSERA__SECURITY__HASHING_THREADS", "1"),
        ("TESSERA__SECURITY__HASHING_QUEUE_MAX", "0"),
        ("TESSERA__SECURITY__ARGON2_M_COST_KIB", "19456"),
        ("TESSERA__SECURITY__ARGON2_T_COST", "2"),
    ]);
    let api = UserApi::signup(&srv, "Queue", "owner@example.com");
    // A verification costs the parameters the hash names: the production ones here, so the
    // 16 logins, sent at once, overlap on the one hashing thread.
    let hash = phc_with(PASSWORD, 19456, 2);
    import(&srv, &api.slug, &line("q@example.com", &hash, true)).json();
    let start = Barrier::new(16);
    let answers: Vec<AuthAnswer> = thread::scope(|s| {
        let workers: Vec<_> = (0..16)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    api.login("q@example.com", PASSWORD)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let ok = answers.iter().filter(|a| a.status == 200).count();
    let busy: Vec<_> = answers.iter().filter(|a| a.status == 503).collect();
    assert_eq!(
        ok + busy.len(),
        16,
        "other answers: {:?}",
        statuses(&answers)
    );
    assert!(ok >= 1, "no login went through: {:?}", statuses(&answers));
    assert!(
        !busy.is_empty(),
        "nothing was refused: {:?}",
        statuses(&answers)
    );
    for a in &busy {
        a.expect_error(503, "service/unavailable");
        assert_eq!(a.header("retry-after").as_deref(), Some("1"));
    }
    // A refusal is not a failed attempt: the account is not throttled afterwards (six
    // refusals would be past its free failures). Logins one at a time all go through; one
    // may still meet the thread between a job's answer and its return to the queue (no room
    // to wait), which is a 503 again, never a 401 or a 429.
    for n in 0..6 {
        let mut last = None;
        let through = eventually(Duration::from_secs(10), || {
            let a = api.login("q@example.com", PASSWORD);
            let done = a.status == 200;
            if !done {
                a.expect_error(503, "service/unavailable");
            }
            last = Some(a);
            done
        });
        let a = last.expect("a login was tried");
        assert!(through, "sequential login {n}: {}", a.body);
        UserTokens::from_answer(&a);
    }
}

fn statuses(answers: &[AuthAnswer]) -> Vec<u16> {
    answers.iter().map(|a| a.status).collect()
}

/// A verified user of a fresh tenant on `srv`, by import.
fn user(srv: &TestServer, tenant: &str, owner: &str) -> (UserApi, UserTokens) {
    let api = UserApi::signup(srv, tenant, owner);
    import(srv, &api.slug, &line("u@example.com", &phc(PASSWORD), true)).json();
    let t = api.login_ok("u@example.com", PASSWORD);
    (api, t)
}

#[test]
fn a_remembered_token_still_stops_at_logout_and_at_revocation() {
    let srv = TestServer::start();
    let (api, t) = user(&srv, "Cache", "owner@example.com");
    // Used twice: the second use is answered from the cache of verified tokens.
    api.me(&t.access).expect(200);
    api.me(&t.access).expect(200);
    api.logout(&t.access, None).expect(204);
    api.me(&t.access).expect_error(401, "auth/invalid_token");

    // Another session of the same user, revoked from a third.
    let a = api.login_ok("u@example.com", PASSWORD);
    let b = api.login_ok("u@example.com", PASSWORD);
    api.me(&a.access).expect(200);
    api.delete_session(&b.access, &a.sid()).expect(204);
    api.me(&a.access).expect_error(401, "auth/invalid_token");
    api.me(&b.access).expect(200);
}

#[test]
fn a_remembered_token_is_not_accepted_by_another_tenant() {
    let srv = TestServer::start();
    let (a, ta) = user(&srv, "Cache A", "a@example.com");
    let (b, _) = user(&srv, "Cache B", "b@example.com");
    a.me(&ta.access).expect(200);
    a.me(&ta.access).expect(200);
    b.me(&ta.access).expect_error(401, "auth/invalid_token");
    // A tampered copy of a remembered token is verified, and fails.
    let mut tampered = ta.access.clone();
    tampered.pop();
    tampered.push(if ta.access.ends_with('A') { 'B' } else { 'A' });
    a.me(&tampered).expect_error(401, "auth/invalid_token");
}

#[test]
fn a_remembered_token_stops_at_its_expiry() {
    // `iat` and `exp` are whole seconds, so a token of 5 s lives between 4 and 5.
    let srv = TestServer::start_with(&[("TESSERA__TOKENS__ACCESS_TTL_SECS", "5")]);
    let (api, t) = user(&srv, "Cache Exp", "owner@example.com");
    api.me(&t.access).expect(200);
    api.me(&t.access).expect(200);
    let exp = t.claims()["exp"].as_i64().unwrap();
    // Past `exp` by the server's clock (the test shares it), the same token is refused.
    while time::OffsetDateTime::now_utc().unix_timestamp() <= exp {
        thread::sleep(Duration::from_millis(200));
    }
    api.me(&t.access).expect_error(401, "auth/invalid_token");
}

/// The `tessera_tenant_actors_running` gauge.
pub(crate) fn running_tenants(srv: &TestServer) -> u64 {
    let text = srv
        .client
        .get(srv.url("/metrics"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("tessera_tenant_actors_running "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no tessera_tenant_actors_running gauge in {text}"))
}

#[test]
fn idle_tenant_actors_are_stopped_and_start_again_with_their_state() {
    const IDLE: Duration = Duration::from_secs(1);
    let srv = TestServer::start_with(&[("TESSERA__SERVER__TENANT_IDLE_SECS", "1")]);
    let (api, mut t) = user(&srv, "Idle", "owner@example.com");
    assert!(running_tenants(&srv) >= 1);
    for round in 0..3 {
        assert!(
            eventually(Duration::from_secs(15), || running_tenants(&srv) == 0),
            "round {round}: the idle tenant's actor is still running"
        );
        // The next requests start it again, from what is on disk.
        let woken = Instant::now();
        api.me(&t.access).expect(200);
        t = UserTokens::from_answer(&api.refresh(&t.refresh));
        let running = running_tenants(&srv);
        // (Unless the machine was so slow the actor had a second idle again.)
        if woken.elapsed() < IDLE {
            assert_eq!(running, 1, "round {round}");
        }
    }
    let log = srv.log_text();
    assert!(log.contains("idle tenant actors stopped"), "{log}");

    // Requests that keep coming keep the actor: none fails, and it is never stopped, while
    // the sweeps run every second. A check counts when less than the idle time went by since
    // the answer before (its actor cannot have been idle that long); a loaded machine's
    // longer gaps are not held against the server.
    let until = Instant::now() + Duration::from_secs(4);
    let (mut checked, mut previous) = (0, Instant::now());
    while Instant::now() < until {
        api.me(&t.access).expect(200);
        let running = running_tenants(&srv);
        if previous.elapsed() < IDLE {
            assert_eq!(running, 1, "a busy tenant's actor was stopped");
            checked += 1;
        }
        previous = Instant::now();
        thread::sleep(Duration::from_millis(100));
    }
    assert!(checked > 10, "only {checked} checks in 4 s");
}

/// Many first requests at once to a tenant whose actor was retired start one actor, not
/// one per request: a second actor would keep memory (rate windows, throttles, codes being
/// checked) of its own beside the first.
#[test]
fn many_first_requests_to_a_retired_tenant_start_one_actor() {
    let srv = TestServer::start_with(&[("TESSERA__SERVER__TENANT_IDLE_SECS", "1")]);
    let (api, _) = user(&srv, "Cold", "owner@example.com");
    let starts = |srv: &TestServer| {
        srv.log_text()
            .lines()
            .filter(|l| l.contains("tenant actor started") && l.contains("\"cold\""))
            .count()
    };
    for round in 0..3 {
        assert!(
            eventually(Duration::from_secs(15), || running_tenants(&srv) == 0),
            "round {round}: the idle tenant's actor is still running"
        );
        let before = starts(&srv);
        let gate = Barrier::new(12);
        thread::scope(|scope| {
            for n in 0..12 {
                let (api, gate) = (&api, &gate);
                scope.spawn(move || {
                    gate.wait();
                    // A sign-in is the actor's to check.
                    api.login_from(
                        &format!("nobody{round}-{n}@example.com"),
                        "not a password here",
                        &fresh_client_ip(),
                    )
                    .expect_error(401, "auth/invalid_credentials");
                });
            }
        });
        assert!(
            eventually(Duration::from_secs(5), || starts(&srv) > before),
            "round {round}: no start was logged"
        );
        assert_eq!(
            starts(&srv),
            before + 1,
            "round {round}: one retired tenant was started more than once"
        );
    }
}
