//! Login throttles survive what ends a process or an actor: a block (of an account, of a client
//! address, of a dashboard account) still holds after a restart (SIGKILL, then a start on the
//! same data) and after an idle tenant actor was stopped and started again.
//!
//! A first block lasts 15 s: each case checks it within that time of the last failure.

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

/// Asserts a login throttle's 429 with a `Retry-After` within the first block.
#[track_caller]
fn assert_blocked(a: &AuthAnswer, what: &str) {
    a.expect_error(429, "auth/too_many_attempts");
    let retry: u64 = a
        .header("retry-after")
        .unwrap_or_else(|| panic!("{what}: no Retry-After"))
        .parse()
        .expect("Retry-After in seconds");
    assert!((1..=15).contains(&retry), "{what}: Retry-After {retry}");
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
        "the account, before the restart",
    );

    srv.restart();
    api.rebase(&srv);
    assert_blocked(
        &api.login_from("carol@example.com", USER_PASSWORD, &fresh_client_ip()),
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
        (800..=900).contains(&retry),
        "the address: Retry-After {retry}"
    );
    // Nothing else is: Dave from elsewhere signs in.
    api.login_from("dave@example.com", USER_PASSWORD, &fresh_client_ip())
        .expect(200);
}

#[test]
fn a_block_holds_when_the_idle_tenant_actor_is_stopped_and_started_again() {
    let (smtp, srv) = start_with_mail(&[("TESSERA__SERVER__TENANT_IDLE_SECS", "1")]);
    let api = UserApi::signup(&srv, "Idle Held Co", "owner@example.com");
    api.verified_user(&smtp, "erin@example.com", USER_PASSWORD);
    for _ in 0..10 {
        api.login_from("erin@example.com", WRONG_PASSWORD, &fresh_client_ip())
            .expect_error(401, "auth/invalid_credentials");
    }
    assert!(
        eventually(Duration::from_secs(10), || running_tenants(&srv) == 0),
        "the idle tenant's actor is still running"
    );
    assert_blocked(
        &api.login_from("erin@example.com", USER_PASSWORD, &fresh_client_ip()),
        "the account, after the actor was started again",
    );
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

    srv.restart();
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
    assert!((1..=15).contains(&retry), "{retry}");
    assert_eq!(
        error_code(&blocked.json().unwrap()),
        "dashboard/rate_limited"
    );
}
