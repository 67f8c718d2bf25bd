//! Sign-in rules on real networks, through the real binary: many people behind one address
//! (an office, a school, a carrier's NAT) are not locked out by each other's typos, one
//! address spraying a password over many accounts is refused well before the end, an attacker
//! elsewhere cannot lock an account's owner out of a device they used before, and a restart
//! forgives nothing. Dashboard logins share an address the same way.

use serde_json::{json, Value};

use crate::support::{
    audit_events, fresh_client_ip, series_value, start_with_mail, user_setup, AuthAnswer,
    CaptchaStub, Session, TestServer, UserApi, PASSWORD, USER_PASSWORD,
};

const WRONG: &str = "not the right passphrase";
const TOO_MANY: &str = "auth/too_many_attempts";

/// `n` users of the tenant, created confirmed by its owner (`office{i}@example.com`).
fn colleagues(srv: &TestServer, s: &Session, api: &UserApi, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let email = format!("office{i}@example.com");
            let (status, body) = srv.dash_json(
                "POST",
                &format!("/v1/auth/dashboard/tenants/{}/users", api.slug),
                s,
                Some(&json!({"email": email, "password": USER_PASSWORD, "email_verified": true})),
            );
            assert_eq!(status, 201, "{body}");
            email
        })
        .collect()
}

/// A password login from `ip` with the extra fields of `extra` (a device token, a CAPTCHA).
fn login(api: &UserApi, email: &str, password: &str, ip: &str, extra: Value) -> AuthAnswer {
    let mut body = json!({"email": email, "password": password});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    api.send_as(
        Some(&api.api_key),
        "POST",
        "/v1/auth/login",
        None,
        Some(&body),
        Some(ip),
    )
}

fn device_of(a: &AuthAnswer) -> String {
    a.body["device_token"]
        .as_str()
        .unwrap_or_else(|| panic!("no device_token in {} {}", a.status, a.body))
        .to_owned()
}

fn refusals(srv: &TestServer, rule: &str) -> f64 {
    let r = srv.get("/metrics", None);
    assert_eq!(r.status(), 200);
    let text = r.text().unwrap();
    series_value(
        &text,
        &format!("tessera_login_refusals_total{{rule=\"{rule}\"}}"),
    )
    .unwrap_or(0.0)
}

fn locked_rules(srv: &TestServer, s: &Session, slug: &str) -> Vec<String> {
    audit_events(srv, s, slug, "auth.login.locked")
        .iter()
        .filter_map(|e| e["metadata"]["rule"].as_str().map(str::to_owned))
        .collect()
}

/// Two hundred people behind one address, on the devices they signed in on before: each
/// mistypes once, then all sign in. The address's count is never consulted for them.
#[test]
fn two_hundred_colleagues_on_known_devices_each_mistype_once_then_all_sign_in() {
    let (_smtp, srv, api, s) = user_setup("Open Plan", &[]);
    let office = fresh_client_ip();
    let people = colleagues(&srv, &s, &api, 200);
    let devices: Vec<String> = people
        .iter()
        .map(|p| device_of(&login(&api, p, USER_PASSWORD, &office, json!({}))))
        .collect();
    for (p, d) in people.iter().zip(&devices) {
        let r = login(&api, p, WRONG, &office, json!({"device_token": d}));
        r.expect_error(401, "auth/invalid_credentials");
    }
    let signed = people
        .iter()
        .zip(&devices)
        .filter(|(p, d)| {
            login(&api, p, USER_PASSWORD, &office, json!({"device_token": d})).status == 200
        })
        .count();
    assert_eq!(signed, 200);
}

/// Two hundred people behind one address on new devices, with a CAPTCHA configured: each
/// mistypes once (past the address's count of 100, the answers ask for the CAPTCHA), then each
/// signs in, solving the CAPTCHA when asked: all 200 do.
#[test]
fn two_hundred_colleagues_on_new_devices_sign_in_after_a_captcha() {
    let stub = CaptchaStub::start();
    let (_smtp, srv) = crate::support::start_with_mail(&[
        ("TESSERA__CAPTCHA__PROVIDER", "turnstile"),
        ("TESSERA__CAPTCHA__SECRET", "stub-secret"),
        ("TESSERA__CAPTCHA__VERIFY_URL", &stub.url),
    ]);
    let api = crate::passwordless::signup_with_captcha(&srv, "Hot Desks", "owner@example.com");
    let s = srv.login(&api.owner, PASSWORD);
    let office = fresh_client_ip();
    let people = colleagues(&srv, &s, &api, 200);
    let mut asked = 0;
    for p in &people {
        let r = login(&api, p, WRONG, &office, json!({}));
        match (r.status, r.code()) {
            (401, "auth/invalid_credentials") => {}
            (429, "auth/captcha_required") => asked += 1,
            other => panic!("a typo answered {other:?}: {}", r.body),
        }
    }
    assert_eq!(asked, 100, "the 101st failure on is asked for a CAPTCHA");
    let mut signed = 0;
    for p in &people {
        let mut r = login(&api, p, USER_PASSWORD, &office, json!({}));
        if (r.status, r.code()) == (429, "auth/captcha_required") {
            r = login(
                &api,
                p,
                USER_PASSWORD,
                &office,
                json!({"captcha_token": "good"}),
            );
        }
        if r.status == 200 {
            signed += 1;
        }
    }
    assert_eq!(signed, 200);
    assert!(
        refusals(&srv, "captcha") >= 300.0,
        "asked for each typo and sign-in past the count"
    );
    // A token the verifier refuses is no way through.
    let r = login(
        &api,
        &people[0],
        USER_PASSWORD,
        &office,
        json!({"captcha_token": "forged"}),
    );
    r.expect_error(400, "auth/captcha_failed");
    // Typos past a solved CAPTCHA are counted inside the address's block: they begin no new
    // lock, so the lock is audited once.
    for p in &people[..3] {
        login(&api, p, WRONG, &office, json!({"captcha_token": "good"}))
            .expect_error(401, "auth/invalid_credentials");
    }
    let rules = locked_rules(&srv, &s, &api.slug);
    assert_eq!(
        rules.iter().filter(|r| *r == "captcha").count(),
        1,
        "one address lock, one event: {rules:?}"
    );
}

/// An operator who knows their network is large raises `security.login_failures_per_address`:
/// two hundred typos then refuse nobody, CAPTCHA or not.
#[test]
fn a_raised_address_count_lets_two_hundred_colleagues_through_without_a_captcha() {
    let (_smtp, srv, api, s) = user_setup(
        "Campus",
        &[("TESSERA__SECURITY__LOGIN_FAILURES_PER_ADDRESS", "500")],
    );
    let office = fresh_client_ip();
    let people = colleagues(&srv, &s, &api, 200);
    for p in &people {
        login(&api, p, WRONG, &office, json!({})).expect_error(401, "auth/invalid_credentials");
    }
    let signed = people
        .iter()
        .filter(|p| login(&api, p, USER_PASSWORD, &office, json!({})).status == 200)
        .count();
    assert_eq!(signed, 200);
}

/// One address tries one password over a thousand accounts: the address's count (100) ends
/// it, every later attempt is refused unchecked, a restart forgives nothing, and another
/// address is not concerned. The refusals are counted and the lock audited.
#[test]
fn one_address_spraying_a_thousand_accounts_is_refused_well_before_the_end() {
    let (_smtp, mut srv, mut api, s) = user_setup("Sprayed", &[]);
    let real = colleagues(&srv, &s, &api, 1).remove(0);
    let attacker = fresh_client_ip();
    let mut checked = 0;
    let mut first_refusal = None;
    for i in 0..1000 {
        let r = login(
            &api,
            &format!("target{i}@example.com"),
            WRONG,
            &attacker,
            json!({}),
        );
        match (r.status, r.code()) {
            (401, "auth/invalid_credentials") => {
                assert!(
                    first_refusal.is_none(),
                    "attempt {i} was checked after a refusal"
                );
                checked += 1;
            }
            (429, TOO_MANY) => {
                first_refusal.get_or_insert(i);
                let retry: u64 = r
                    .header("retry-after")
                    .expect("Retry-After")
                    .parse()
                    .unwrap();
                assert!((1..=900).contains(&retry), "Retry-After {retry}");
            }
            other => panic!("attempt {i}: {other:?} {}", r.body),
        }
    }
    assert_eq!(checked, 100);
    assert_eq!(first_refusal, Some(100));
    // A real user's right password from that address is refused too.
    login(&api, &real, USER_PASSWORD, &attacker, json!({})).expect_error(429, TOO_MANY);
    assert!(refusals(&srv, "address") >= 901.0);
    assert!(locked_rules(&srv, &s, &api.slug).contains(&"address".to_owned()));

    srv.restart();
    api.rebase(&srv);
    login(&api, &real, USER_PASSWORD, &attacker, json!({})).expect_error(429, TOO_MANY);
    login(&api, "target1000@example.com", WRONG, &attacker, json!({})).expect_error(429, TOO_MANY);
    // Elsewhere, the same user signs in.
    assert_eq!(
        login(&api, &real, USER_PASSWORD, &fresh_client_ip(), json!({})).status,
        200
    );
}

/// Fifty wrong passwords on one account from many addresses lock it for new devices; its
/// owner, on a device that signed in before, signs in at once, also after a restart. A
/// device token names its account: another account's does not help.
#[test]
fn an_attacker_cannot_lock_the_owner_out_of_a_known_device() {
    let (_smtp, mut srv, mut api, s) = user_setup("Targeted", &[]);
    let mut people = colleagues(&srv, &s, &api, 2);
    let (owner, other) = (people.remove(0), people.remove(0));
    let home = fresh_client_ip();
    let device = device_of(&login(&api, &owner, USER_PASSWORD, &home, json!({})));
    let others_device = device_of(&login(&api, &other, USER_PASSWORD, &home, json!({})));

    let mut answers = Vec::new();
    for _ in 0..50 {
        let r = login(&api, &owner, WRONG, &fresh_client_ip(), json!({}));
        answers.push((r.status, r.code().to_owned()));
    }
    assert!(
        answers[..10].iter().all(|(st, _)| *st == 401),
        "{answers:?}"
    );
    assert!(
        answers[10..]
            .iter()
            .all(|(st, c)| *st == 429 && c == TOO_MANY),
        "{answers:?}"
    );
    assert!(locked_rules(&srv, &s, &api.slug).contains(&"account".to_owned()));

    let known = |api: &UserApi, token: &str| {
        login(
            api,
            &owner,
            USER_PASSWORD,
            &fresh_client_ip(),
            json!({"device_token": token}),
        )
    };
    let r = known(&api, &device);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body.get("device_token").is_none(),
        "the device keeps its token: {}",
        r.body
    );
    // A new device, and a device of another account, are held to the account's lock.
    login(&api, &owner, USER_PASSWORD, &fresh_client_ip(), json!({})).expect_error(429, TOO_MANY);
    known(&api, &others_device).expect_error(429, TOO_MANY);
    known(&api, "tdv_not-a-token").expect_error(429, TOO_MANY);

    srv.restart();
    api.rebase(&srv);
    assert_eq!(known(&api, &device).status, 200);
    login(&api, &owner, USER_PASSWORD, &fresh_client_ip(), json!({})).expect_error(429, TOO_MANY);

    // The device's own count is stricter: three wrong passwords on it, then it waits too.
    for _ in 0..3 {
        login(&api, &owner, WRONG, &home, json!({"device_token": device}))
            .expect_error(401, "auth/invalid_credentials");
    }
    known(&api, &device).expect_error(429, TOO_MANY);
    assert!(refusals(&srv, "device") >= 1.0);
}

/// A dashboard login from `ip`.
fn dashboard_login(srv: &TestServer, email: &str, password: &str, ip: &str) -> AuthAnswer {
    AuthAnswer::read(
        srv.client
            .post(srv.url("/v1/auth/dashboard/login"))
            .header("x-forwarded-for", ip)
            .json(&json!({"email": email, "password": password}))
            .send()
            .expect("POST"),
    )
}

/// Five colleagues at one office mistype their dashboard passwords (four times each, each
/// under their pair's count): a sixth colleague's right password from that address is taken,
/// and so are theirs. A seventh who mistyped five times is blocked at the office only.
#[test]
fn colleagues_dashboard_typos_from_one_address_do_not_block_another_account() {
    let (_smtp, srv) = start_with_mail(&[]);
    let accounts: Vec<String> = (0..7)
        .map(|i| {
            let email = format!("staff{i}@example.com");
            srv.signup(&format!("Staff Co {i}"), &email);
            email
        })
        .collect();
    let office = fresh_client_ip();
    for account in &accounts[..5] {
        for _ in 0..4 {
            dashboard_login(&srv, account, WRONG, &office)
                .expect_error(401, "dashboard/invalid_credentials");
        }
    }
    let seventh = &accounts[6];
    for _ in 0..5 {
        dashboard_login(&srv, seventh, WRONG, &office)
            .expect_error(401, "dashboard/invalid_credentials");
    }
    // The seventh's pair (the office, their account) is blocked for the first 15 s.
    let r = dashboard_login(&srv, seventh, PASSWORD, &office);
    r.expect_error(429, "dashboard/rate_limited");
    let retry: u64 = r
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no Retry-After in seconds on {}", r.body));
    assert!((1..=15).contains(&retry), "Retry-After {retry}");
    // Twenty-five typos from the office refuse nobody else there.
    for account in &accounts[..6] {
        let r = dashboard_login(&srv, account, PASSWORD, &office);
        assert!(r.expect(200)["session_token"].is_string(), "{}", r.body);
    }
    // The seventh, elsewhere, signs in.
    dashboard_login(&srv, seventh, PASSWORD, &fresh_client_ip()).expect(200);
    assert_eq!(refusals(&srv, "address"), 0.0);
    assert_eq!(refusals(&srv, "pair"), 1.0);
}
