//! Dashboard accounts' second factor: set up with a code after a re-authentication (a
//! verified address only), then asked at every login; codes used once; wrong codes feed the
//! login lockout; recovery codes; taken off by the holder or the operator's CLI; and a
//! takeover of an unverified account leaves no factor behind.

use serde_json::{json, Value};

use crate::support::{
    error_code, settled_totp_step, start_with_mail, Session, SmtpStub, TestServer, Totp, PASSWORD,
};

pub(crate) const OWNER: &str = "owner@mfa.test";

/// A server with mail, a tenant whose owner verified their address, and their session.
pub(crate) fn verified_owner() -> (SmtpStub, TestServer, Session) {
    let (smtp, srv) = start_with_mail(&[]);
    srv.signup("Mfa Co", OWNER);
    let s = srv.login(OWNER, PASSWORD);
    let token = smtp.wait_for_link(OWNER, "/dashboard/verify-email", 1);
    let r = srv.dash(
        "POST",
        "/v1/auth/dashboard/verify-email",
        &s,
        Some(&json!({"token": token})),
    );
    assert_eq!(r.status(), 200);
    (smtp, srv, s)
}

/// Sets TOTP up on the session's account; answers the authenticator, the step its
/// confirmation used, and the recovery codes.
pub(crate) fn enable_totp(srv: &TestServer, s: &Session) -> (Totp, u64, Vec<String>) {
    srv.reauth(s, PASSWORD);
    let (status, body) = srv.dash_json("POST", "/v1/auth/dashboard/mfa/totp", s, None);
    assert_eq!(status, 200, "{body}");
    let uri = body["otpauth_uri"].as_str().unwrap();
    assert!(uri.starts_with("otpauth://totp/"), "{uri}");
    assert!(uri.contains("owner%40mfa.test"), "{uri}");
    let totp = Totp::new(body["secret"].as_str().unwrap());
    let step = settled_totp_step(4.0);
    let (status, body) = srv.dash_json(
        "POST",
        "/v1/auth/dashboard/mfa/totp/confirm",
        s,
        Some(&json!({"code": totp.wrong_at(step)})),
    );
    assert_eq!((status, error_code(&body)), (400, "dashboard/invalid_code"));
    let (status, body) = srv.dash_json(
        "POST",
        "/v1/auth/dashboard/mfa/totp/confirm",
        s,
        Some(&json!({"code": totp.at_step(step)})),
    );
    assert_eq!(status, 200, "{body}");
    let codes: Vec<String> = body["recovery_codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(codes.len(), 10);
    (totp, step, codes)
}

/// A password login; answers its status and body, and whether it set a session cookie.
fn password_login(srv: &TestServer) -> (u16, Value, bool) {
    let r = srv.post_json(
        "/v1/auth/dashboard/login",
        &json!({"email": OWNER, "password": PASSWORD}),
    );
    let status = r.status().as_u16();
    let cookie = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .any(|c| c.to_str().unwrap_or("").starts_with("dashboard_session="));
    (status, r.json().unwrap_or(Value::Null), cookie)
}

/// The challenge of a password login to an account with MFA.
fn challenge(srv: &TestServer) -> String {
    let (status, body, cookie) = password_login(srv);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["mfa_required"], true, "{body}");
    assert_eq!(body["available_methods"], json!(["totp", "recovery_code"]));
    assert!(body.get("session_token").is_none() && !cookie, "{body}");
    body["mfa_challenge_token"].as_str().unwrap().to_owned()
}

fn second_step(srv: &TestServer, challenge: &str, code: &str) -> (u16, Value) {
    let r = srv.post_json(
        "/v1/auth/dashboard/login/mfa",
        &json!({"mfa_challenge_token": challenge, "code": code}),
    );
    let status = r.status().as_u16();
    (status, r.json().unwrap_or(Value::Null))
}

#[test]
fn setting_up_needs_a_re_authentication_and_a_verified_address() {
    let (smtp, srv) = start_with_mail(&[]);
    srv.signup("Mfa Co", OWNER);
    let s = srv.login(OWNER, PASSWORD);
    let (status, body) = srv.dash_json("POST", "/v1/auth/dashboard/mfa/totp", &s, None);
    assert_eq!(
        (status, error_code(&body)),
        (401, "dashboard/reauth_required")
    );
    srv.reauth(&s, PASSWORD);
    // An unverified account is its address owner's to take over: no factor to lock them out.
    let (status, body) = srv.dash_json("POST", "/v1/auth/dashboard/mfa/totp", &s, None);
    assert_eq!(
        (status, error_code(&body)),
        (403, "dashboard/email_unverified")
    );
    let (status, body) = srv.dash_json(
        "POST",
        "/v1/auth/dashboard/mfa/totp/confirm",
        &s,
        Some(&json!({"code": "123456"})),
    );
    assert_eq!(
        (status, error_code(&body)),
        (409, "dashboard/mfa_setup_not_started")
    );
    // A cookie-authenticated setup without the CSRF header is refused.
    let r = srv
        .client
        .post(srv.url("/v1/auth/dashboard/mfa/totp"))
        .header("cookie", format!("dashboard_session={}", s.token))
        .send()
        .unwrap();
    assert_eq!(r.status(), 403);
    drop(smtp);
    let (status, body) = srv.dash_json("GET", "/v1/auth/dashboard/account", &s, None);
    assert_eq!(status, 200);
    assert_eq!(body["mfa_enabled"], false);
    assert_eq!(body["email"], OWNER);
}

#[test]
fn every_login_then_asks_for_a_code_each_code_counts_once() {
    let (_smtp, srv, s) = verified_owner();
    let (totp, step, codes) = enable_totp(&srv, &s);
    let (_, body) = srv.dash_json("GET", "/v1/auth/dashboard/account", &s, None);
    assert_eq!(body["mfa_enabled"], true);
    assert_eq!(body["recovery_codes_left"], 10);
    // Recorded in the tenant's audit log, naming the method and nothing secret.
    let (_, events) = srv.dash_json(
        "GET",
        "/v1/auth/dashboard/tenants/mfa-co/audit-events?type=dashboard.mfa.enabled",
        &s,
        None,
    );
    assert_eq!(events["data"].as_array().unwrap().len(), 1, "{events}");
    assert_eq!(events["data"][0]["metadata"]["method"], "totp");
    // Starting again while on is refused.
    let (status, body) = srv.dash_json("POST", "/v1/auth/dashboard/mfa/totp", &s, None);
    assert_eq!(
        (status, error_code(&body)),
        (409, "dashboard/mfa_already_enabled")
    );

    // The password alone opens nothing; the code the setup used is spent.
    let c = challenge(&srv);
    let (status, body) = second_step(&srv, &c, &totp.at_step(step));
    assert_eq!(
        (status, error_code(&body)),
        (401, "dashboard/invalid_credentials")
    );
    let (status, body) = second_step(&srv, &c, &totp.at_step(step + 1));
    assert_eq!(status, 200, "{body}");
    let token = body["session_token"].as_str().unwrap();
    let r = srv
        .client
        .get(srv.url("/v1/auth/dashboard/tenants"))
        .bearer_auth(token)
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    // The challenge is single use, and the code too.
    let (status, body) = second_step(&srv, &c, &totp.at_step(step + 1));
    assert_eq!(
        (status, error_code(&body)),
        (401, "dashboard/mfa_challenge_invalid")
    );
    let c = challenge(&srv);
    let (status, _) = second_step(&srv, &c, &totp.at_step(step + 1));
    assert_eq!(status, 401);

    // A recovery code, in any case and without its dash, works once.
    let typed = codes[0].to_uppercase().replace('-', "");
    let (status, body) = second_step(&srv, &c, &typed);
    assert_eq!(status, 200, "{body}");
    let c = challenge(&srv);
    let (status, _) = second_step(&srv, &c, &codes[0]);
    assert_eq!(status, 401);
    let (_, body) = srv.dash_json("GET", "/v1/auth/dashboard/account", &s, None);
    assert_eq!(body["recovery_codes_left"], 9);

    // Taken off (re-authenticated): the password is enough again.
    let (status, _) = srv.dash_json("DELETE", "/v1/auth/dashboard/mfa/totp", &s, None);
    assert_eq!(status, 204);
    let (_, events) = srv.dash_json(
        "GET",
        "/v1/auth/dashboard/tenants/mfa-co/audit-events?type=dashboard.mfa.disabled",
        &s,
        None,
    );
    assert_eq!(events["data"].as_array().unwrap().len(), 1, "{events}");
    let (status, body) = srv.dash_json("DELETE", "/v1/auth/dashboard/mfa/totp", &s, None);
    assert_eq!(
        (status, error_code(&body)),
        (409, "dashboard/mfa_not_enabled")
    );
    let (status, body, cookie) = password_login(&srv);
    assert_eq!(status, 200);
    assert!(body["session_token"].is_string() && cookie, "{body}");
    // The challenge issued before is dead.
    let (status, _) = second_step(&srv, &c, &codes[1]);
    assert_eq!(status, 401);
}

#[test]
fn guessing_codes_is_bounded_by_the_login_lockout() {
    let (_smtp, srv, s) = verified_owner();
    let (totp, step, _) = enable_totp(&srv, &s);
    let c = challenge(&srv);
    // Each wrong code is a failed login: at most five are heard before the challenge dies
    // or the account is locked from this address.
    let mut wrong = 0;
    for i in 0..8 {
        let (status, body) = second_step(&srv, &c, &format!("{:06}", 100_000 + i * 7));
        match (status, error_code(&body)) {
            (401, "dashboard/invalid_credentials") => wrong += 1,
            (401, "dashboard/mfa_challenge_invalid") | (429, "dashboard/rate_limited") => break,
            other => panic!("a wrong code answered {other:?}: {body}"),
        }
    }
    assert!((1..=5).contains(&wrong), "{wrong} wrong codes heard");
    // The right code is refused now, and the password too: the account is locked.
    let (status, _) = second_step(&srv, &c, &totp.at_step(step + 1));
    assert!(status == 429 || status == 401, "{status}");
    let (status, body, _) = password_login(&srv);
    assert_eq!((status, error_code(&body)), (429, "dashboard/rate_limited"));
}

#[test]
fn the_operator_takes_a_lost_factor_off_from_the_cli() {
    let (_smtp, srv, s) = verified_owner();
    enable_totp(&srv, &s);
    challenge(&srv);
    let out = srv.admin(&["dashboard", "reset-mfa", "Owner@MFA.test"], "");
    assert_eq!(out.json()["mfa_removed"], true);
    let (status, body, cookie) = password_login(&srv);
    assert_eq!(status, 200);
    assert!(body["session_token"].is_string() && cookie, "{body}");
    let out = srv.admin(&["dashboard", "reset-mfa", "nobody@mfa.test"], "");
    assert!(!out.status.success());
    assert!(out.stdout.contains("not_found") || out.stderr.contains("not_found"));
}

#[test]
fn guessing_challenges_is_bounded_per_address() {
    let srv = TestServer::start();
    for i in 0..30 {
        let (status, body) = second_step(&srv, &format!("guess-{i}"), "123456");
        assert_eq!(
            (status, error_code(&body)),
            (401, "dashboard/mfa_challenge_invalid"),
            "guess {i}"
        );
    }
    let r = srv.post_json(
        "/v1/auth/dashboard/login/mfa",
        &json!({"mfa_challenge_token": "guess-31", "code": "123456"}),
    );
    assert_eq!(r.status(), 429);
    assert!(r.headers().get("retry-after").is_some());
    assert_eq!(error_code(&r.json().unwrap()), "dashboard/rate_limited");
}
