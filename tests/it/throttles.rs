//! Login throttles survive what ends a process or an actor: a block (of an account, of a client
//! address, of a dashboard account) still holds after a restart (SIGKILL, then a start on the
//! same data) and after an idle tenant actor was stopped and started again.
//!
//! A first block lasts 15 s: each case checks it before a restart within that time of the
//! failure that began it, and restarts with the server's clock set back a minute (the fault
//! drills' offset), so a block kept across the restart has 75 s left however long the restart
//! takes on a loaded machine, and one forgotten is refused by nothing.

use std::time::Duration;

use serde_json::json;

use crate::{
    capacity::running_tenants,
    support::{
        error_code, eventually, fresh_client_ip, start_with_mail, AuthAnswer, TestServer, UserApi,
        PASSWORD, USER_PASSWORD,
    },
};

const WRONG_PASSWORD: &str = "not the right passphrase";

/// The first block's length.
const FIRST_BLOCK: u64 = 15;
/// How far a restart sets the server's clock back.
const SET_BACK: u64 = 60;

/// Asserts a login throttle's 429 with a `Retry-After` of at most `max` seconds.
#[track_caller]
fn assert_blocked(a: &AuthAnswer, max: u64, what: &str) {
    a.expect_error(429, "auth/too_many_attempts");
    let retry: u64 = a
        .header("retry-after")
        .unwrap_or_else(|| panic!("{what}: no Retry-After"))
        .parse()
        .expect("Retry-After in seconds");
    assert!((1..=max).contains(&retry), "{what}: Retry-After {retry}");
}

/// Kills `srv` (SIGKILL) and starts it again on the same data with its clock `SET_BACK`
/// seconds behind.
fn restart_set_back(srv: &mut TestServer) {
    srv.restart_with(&[
        ("TESSERA__TESTING__FAULT_INJECTION", "true"),
        (
            "TESSERA__TESTING__CLOCK_OFFSET_SECS",
            &format!("-{SET_BACK}"),
        ),
    ]);
}

#[test]
fn blocked_accounts_and_addresses_stay_blocked_across_a_restart() {
    // Five failed sign-ins per client address, so the address's count is reached quickly.
    let (smtp, mut srv) =
        start_with_mail(&[("TESSERA__SECURITY__LOGIN_FAILURES_PER_ADDRESS", "5")]);
    let mut api = UserApi::signup(&srv, "Held Co", "owner@example.com");
    api.verified_user(&smtp, "carol@example.com", USER_PASSWORD);
    api.verified_user(&smtp, "dave@example.com", USER_PASSWORD);

    // The account: ten failures, each from another address.
    for _ in 0..10 {
        api.login_from("carol@example.com", WRONG_PASSWORD, &fresh_client_ip())
            .expect_error(401, "auth/invalid_credentials");
    }
    // The address: five failures (its count here) against five unknown accounts.
    let attacker = fresh_client_ip();
    for i in 0..5 {
        api.login_from(&format!("nobody{i}@example.com"), WRONG_PASSWORD, &attacker)
            .expect_error(401, "auth/invalid_credentials");
    }
    assert_blocked(
        &api.login_from("carol@example.com", USER_PASSWORD, &fresh_client_ip()),
        FIRST_BLOCK,
        "the account, before the restart",
    );

    restart_set_back(&mut srv);
    api.rebase(&srv);
    assert_blocked(
        &api.login_from("carol@example.com", USER_PASSWORD, &fresh_client_ip()),
        FIRST_BLOCK + SET_BACK,
        "the account, after the restart",
    );
    // The address's window (15 minutes from its first failure) still runs.
    let address = api.login_from("dave@example.com", USER_PASSWORD, &attacker);
    address.expect_error(429, "auth/too_many_attempts");
    let retry: u64 = address
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .expect("Retry-After in seconds");
    assert!(
        (800..=900 + SET_BACK).contains(&retry),
        "the address: Retry-After {retry}"
    );
    // Nothing else is: Dave from elsewhere signs in.
    api.login_from("dave@example.com", USER_PASSWORD, &fresh_client_ip())
        .expect(200);
}

/// Blocks held by a tenant actor that was stopped for idleness hold when it starts again: the
/// address's window always (15 minutes), and the account's first block when the stop came
/// within its 15 s (a loaded machine may take longer to stop the actor).
#[test]
fn a_block_holds_when_the_idle_tenant_actor_is_stopped_and_started_again() {
    let (smtp, srv) = start_with_mail(&[
        ("TESSERA__SERVER__TENANT_IDLE_SECS", "1"),
        ("TESSERA__SECURITY__LOGIN_FAILURES_PER_ADDRESS", "5"),
    ]);
    let api = UserApi::signup(&srv, "Idle Held Co", "owner@example.com");
    api.verified_user(&smtp, "erin@example.com", USER_PASSWORD);
    api.verified_user(&smtp, "fred@example.com", USER_PASSWORD);
    let attacker = fresh_client_ip();
    for i in 0..5 {
        api.login_from(&format!("nobody{i}@example.com"), WRONG_PASSWORD, &attacker)
            .expect_error(401, "auth/invalid_credentials");
    }
    for _ in 0..10 {
        api.login_from("erin@example.com", WRONG_PASSWORD, &fresh_client_ip())
            .expect_error(401, "auth/invalid_credentials");
    }
    let blocked_at = std::time::Instant::now();
    assert!(
        eventually(Duration::from_secs(10), || running_tenants(&srv) == 0),
        "the idle tenant's actor is still running"
    );
    let address = api.login_from("fred@example.com", USER_PASSWORD, &attacker);
    assert_blocked(
        &address,
        900,
        "the address, after the actor was started again",
    );
    let account = api.login_from("erin@example.com", USER_PASSWORD, &fresh_client_ip());
    if blocked_at.elapsed() < Duration::from_secs(FIRST_BLOCK - 1) {
        assert_blocked(
            &account,
            FIRST_BLOCK,
            "the account, after the actor was started again",
        );
    }
    // Nothing else is: Fred from elsewhere signs in.
    api.login_from("fred@example.com", USER_PASSWORD, &fresh_client_ip())
        .expect(200);
}

#[test]
fn a_blocked_dashboard_login_stays_blocked_across_a_restart() {
    let mut srv = TestServer::start();
    srv.signup("Dash Held Co", "owner@example.com");
    let attempt = |srv: &TestServer, password: &str| {
        srv.post_json(
            "/v1/auth/dashboard/login",
            &json!({"email": "owner@example.com", "password": password}),
        )
    };
    for _ in 0..5 {
        assert_eq!(attempt(&srv, WRONG_PASSWORD).status(), 401);
    }
    assert_eq!(attempt(&srv, PASSWORD).status(), 429);

    restart_set_back(&mut srv);
    let blocked = attempt(&srv, PASSWORD);
    assert_eq!(
        blocked.status(),
        429,
        "the block was forgiven by the restart"
    );
    let retry: u64 = blocked.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=FIRST_BLOCK + SET_BACK).contains(&retry), "{retry}");
    assert_eq!(
        error_code(&blocked.json().unwrap()),
        "dashboard/rate_limited"
    );
}

/// A dashboard login answers a device token (and its cookie); with it an admin signs in while
/// someone guessing from many addresses has locked the account, after a restart too, and
/// without it the lock holds. The device's own count is stricter than the account's.
#[test]
fn a_dashboard_admin_is_not_locked_out_of_a_known_device() {
    let (_smtp, mut srv) = start_with_mail(&[]);
    srv.signup("Dash Devices Co", "admin@example.com");
    let login = |srv: &TestServer, body: serde_json::Value, from: &str, cookie: Option<&str>| {
        let mut req = reqwest::blocking::Client::new()
            .post(srv.url("/v1/auth/dashboard/login"))
            .header("x-forwarded-for", from)
            .json(&body);
        if let Some(c) = cookie {
            req = req.header("cookie", c);
        }
        req.send().expect("POST")
    };
    let first = login(
        &srv,
        json!({"email": "admin@example.com", "password": PASSWORD}),
        &fresh_client_ip(),
        None,
    );
    assert_eq!(first.status(), 200);
    let set_cookies: Vec<String> = first
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_owned))
        .collect();
    let device_cookie = set_cookies
        .iter()
        .find(|c| c.starts_with("dashboard_device="))
        .unwrap_or_else(|| panic!("no device cookie in {set_cookies:?}"))
        .clone();
    assert!(device_cookie.contains("HttpOnly"), "{device_cookie}");
    assert!(
        device_cookie.contains("Path=/v1/auth/dashboard"),
        "{device_cookie}"
    );
    let body: serde_json::Value = first.json().expect("JSON");
    let token = body["device_token"]
        .as_str()
        .expect("a device token")
        .to_owned();
    assert!(token.starts_with("tdv_"), "{body}");
    let cookie = format!("dashboard_device={token}");

    // Twelve wrong guesses from as many addresses: the account is locked for new devices.
    let wrong = json!({"email": "admin@example.com", "password": WRONG_PASSWORD});
    for _ in 0..12 {
        let status = login(&srv, wrong.clone(), &fresh_client_ip(), None).status();
        assert!(matches!(status.as_u16(), 401 | 429), "{status}");
    }
    let right = json!({"email": "admin@example.com", "password": PASSWORD});
    let refused = login(&srv, right.clone(), &fresh_client_ip(), None);
    assert_eq!(refused.status(), 429);
    assert_eq!(
        error_code(&refused.json().unwrap()),
        "dashboard/rate_limited"
    );

    // The known device, by its cookie or in the body: signed in, and given no new token.
    let known = login(&srv, right.clone(), &fresh_client_ip(), Some(&cookie));
    assert_eq!(known.status(), 200);
    let known: serde_json::Value = known.json().unwrap();
    assert!(known.get("device_token").is_none(), "{known}");
    let with_body =
        json!({"email": "admin@example.com", "password": PASSWORD, "device_token": token});
    assert_eq!(
        login(&srv, with_body.clone(), &fresh_client_ip(), None).status(),
        200
    );

    // A restart forgives the account nothing and forgets no device.
    restart_set_back(&mut srv);
    assert_eq!(login(&srv, right, &fresh_client_ip(), None).status(), 429);
    assert_eq!(
        login(&srv, with_body, &fresh_client_ip(), None).status(),
        200
    );

    // The device's own count: three wrong passwords, then even the right one waits.
    let wrong_on_device =
        json!({"email": "admin@example.com", "password": WRONG_PASSWORD, "device_token": token});
    for _ in 0..3 {
        assert_eq!(
            login(&srv, wrong_on_device.clone(), &fresh_client_ip(), None).status(),
            401
        );
    }
    assert_eq!(
        login(
            &srv,
            json!({"email": "admin@example.com", "password": PASSWORD}),
            &fresh_client_ip(),
            Some(&cookie)
        )
        .status(),
        429
    );
}
