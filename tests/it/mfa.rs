//! MFA: TOTP set-up and its confirmation, the login challenge and its single-use codes,
//! recovery codes, the login throttle, disabling, and the tenant's MFA policy (within its grace
//! period, and after it through a restart with the testing clock offset).

use std::{collections::BTreeSet, time::Duration};

use serde_json::{json, Value};
use time::{format_description::well_known::Rfc3339, OffsetDateTime};

use crate::support::{
    audit_events, base32_decode, fresh_client_ip, json_keys as keys, name_set as set,
    patch_security, settled_totp_step, spawn, totp_step_now, user_id, user_setup as setup,
    AuthAnswer, Totp, UserApi, UserTokens, PASSWORD, USER_PASSWORD,
};

/// The code of every refusal of an unknown, used, dead or expired challenge.
const EXPIRED: &str = "invalid_or_expired_token";
const WRONG_PASSWORD: &str = "not the right passphrase";
const FAULTS: (&str, &str) = ("TESSERA__TESTING__FAULT_INJECTION", "true");
const OFFSET: &str = "TESSERA__TESTING__CLOCK_OFFSET_SECS";

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Asserts ten distinct recovery codes shaped `abcde-fghij`; answers them.
#[track_caller]
fn recovery_codes(body: &Value) -> Vec<String> {
    let codes: Vec<String> = body["recovery_codes"]
        .as_array()
        .unwrap_or_else(|| panic!("no recovery_codes in {body}"))
        .iter()
        .map(|c| c.as_str().expect("a string").to_owned())
        .collect();
    assert_eq!(codes.len(), 10, "{body}");
    let distinct: BTreeSet<&String> = codes.iter().collect();
    assert_eq!(distinct.len(), 10, "recovery codes repeat: {body}");
    for c in &codes {
        let (a, b) = c
            .split_once('-')
            .unwrap_or_else(|| panic!("{c:?} has no dash"));
        let ok = |p: &str| {
            p.len() == 5
                && p.chars()
                    .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit())
        };
        assert!(ok(a) && ok(b), "{c:?} is not shaped abcde-fghij");
    }
    codes
}

/// Asserts a token pair from `/v1/auth/mfa/verify` whose access token says two factors.
#[track_caller]
fn two_factor_tokens(api: &UserApi, a: &AuthAnswer, user_id: &str) -> UserTokens {
    let t = UserTokens::from_answer(a);
    assert_eq!(t.body["token_type"], "Bearer", "{}", t.body);
    assert!(t.body["expires_in"].as_u64().is_some(), "{}", t.body);
    assert_eq!(t.body["user"]["id"], user_id, "{}", t.body);
    let (_, claims) = api.verify_access(&t.access);
    assert_eq!(claims["sub"], user_id);
    assert_eq!(claims["aal"], "AAL2", "{claims}");
    assert_eq!(claims["acr"], "aal2", "{claims}");
    assert_eq!(claims["amr"], json!(["pwd", "otp"]), "{claims}");
    t
}

fn disable(api: &UserApi, bearer: &str, code: &str, password: &str) -> AuthAnswer {
    api.post_as(
        "/v1/auth/mfa/disable",
        Some(bearer),
        &json!({"code": code, "password": password}),
    )
}

fn regenerate(api: &UserApi, bearer: &str, code: &str, password: &str) -> AuthAnswer {
    api.post_as(
        "/v1/auth/mfa/recovery-codes",
        Some(bearer),
        &json!({"code": code, "password": password}),
    )
}

/// Parses an RFC 3339 timestamp field.
#[track_caller]
fn timestamp(v: &Value) -> OffsetDateTime {
    let s = v.as_str().unwrap_or_else(|| panic!("not a timestamp: {v}"));
    OffsetDateTime::parse(s, &Rfc3339).unwrap_or_else(|e| panic!("{s:?} is not RFC 3339: {e}"))
}

/// Asserts `t` lies within `[from, to]`, give or take two seconds (timestamps may be whole
/// seconds).
#[track_caller]
fn assert_between(t: OffsetDateTime, from: OffsetDateTime, to: OffsetDateTime) {
    let slack = time::Duration::seconds(2);
    assert!(
        t >= from - slack && t <= to + slack,
        "{t} is not between {from} and {to}"
    );
}

// ---------------------------------------------------------------------------------------------
// Set-up, login, single use
// ---------------------------------------------------------------------------------------------

#[test]
fn setup_confirms_with_a_code_then_login_needs_a_second_factor_that_works_once() {
    let (smtp, srv, api, s) = setup("Mfa Co", &[]);
    let email = "alice@example.com";
    let t0 = api.verified_user(&smtp, email, USER_PASSWORD);
    let uid = user_id(&t0);
    assert_eq!(api.me(&t0.access).expect(200)["mfa_enabled"], false);

    // Nothing to confirm yet; no bearer, no set-up.
    api.mfa_verify_setup(&t0.access, "123456")
        .expect_error(409, "mfa/setup_not_started");
    let r = api.post_as("/v1/auth/mfa/setup", None, &json!({}));
    assert_eq!(r.status, 401, "{}", r.body);

    // With an access token, set-up is step-up gated: a stolen token alone cannot bind an
    // authenticator to the account.
    let r = api.mfa_setup_with(&t0.access, None);
    r.expect_error(401, "account_linking/mfa_required");
    let www = r.header("www-authenticate").expect("WWW-Authenticate");
    assert!(
        www.starts_with("Bearer error=\"insufficient_user_authentication\""),
        "{www}"
    );
    assert_eq!(
        r.body["error"]["details"]["available_methods"],
        json!(["email_otp", "magic_link", "password"]),
        "{}",
        r.body
    );
    api.mfa_setup_with(&t0.access, Some("garbage"))
        .expect_error(401, "invalid_or_expired_token");
    let step_up = api.post_as(
        "/v1/auth/step-up/password",
        Some(&t0.access),
        &json!({ "password": USER_PASSWORD }),
    );
    let step_up = step_up.expect(200)["step_up_token"]
        .as_str()
        .expect("step_up_token")
        .to_owned();
    api.mfa_setup_with(&t0.access, Some(&step_up)).expect(200);
    // The token was consumed by that set-up.
    api.mfa_setup_with(&t0.access, Some(&step_up))
        .expect_error(401, "invalid_or_expired_token");

    // The set-up: a base32 secret of 20 bytes and its otpauth URI.
    let r = api.mfa_setup(&t0.access);
    let first = r.expect(200).clone();
    assert_eq!(keys(&first), set(&["secret", "otpauth_uri"]), "{first}");
    let first_secret = first["secret"].as_str().unwrap().to_owned();
    assert_eq!(first_secret.len(), 32, "{first_secret}");
    assert!(
        first_secret
            .chars()
            .all(|c| c.is_ascii_uppercase() || ('2'..='7').contains(&c)),
        "{first_secret} is not unpadded RFC 4648 base32"
    );
    assert_eq!(base32_decode(&first_secret).unwrap().len(), 20);
    let uri = first["otpauth_uri"].as_str().expect("otpauth_uri");
    assert!(uri.starts_with("otpauth://totp/"), "{uri}");
    assert!(uri.contains(&format!("secret={first_secret}")), "{uri}");
    assert!(uri.contains("issuer=Mfa%20Co"), "{uri}");

    // Again, with no body at all: a new pending secret replaces the first.
    let step_up = api.post_as(
        "/v1/auth/step-up/password",
        Some(&t0.access),
        &json!({ "password": USER_PASSWORD }),
    );
    let step_up = step_up.expect(200)["step_up_token"]
        .as_str()
        .expect("step_up_token")
        .to_owned();
    let r = api.send_with(
        "POST",
        "/v1/auth/mfa/setup",
        Some(&t0.access),
        None,
        &[(crate::support::STEP_UP_HEADER, &step_up)],
    );
    let secret = r.expect(200)["secret"].as_str().expect("secret").to_owned();
    assert_ne!(secret, first_secret);
    assert!(r.body["otpauth_uri"]
        .as_str()
        .is_some_and(|u| u.contains(&format!("secret={secret}"))));
    let old = Totp::new(&first_secret);
    let totp = Totp::new(&secret);

    // Codes that are not six digits.
    for bad in [
        json!("12345"),
        json!("1234567"),
        json!("abcdef"),
        json!(123456),
    ] {
        let r = api.post_as(
            "/v1/auth/mfa/verify-setup",
            Some(&t0.access),
            &json!({ "code": bad }),
        );
        r.expect_error(400, "validation/invalid_request");
    }
    api.post_as("/v1/auth/mfa/verify-setup", Some(&t0.access), &json!({}))
        .expect_error(400, "validation/invalid_request");

    let step = settled_totp_step(4.0);
    // The replaced secret's code is a wrong code.
    let current: Vec<String> = (step - 1..=step + 1).map(|s| totp.at_step(s)).collect();
    let old_code = old.at_step(step);
    if !current.contains(&old_code) {
        api.mfa_verify_setup(&t0.access, &old_code)
            .expect_error(401, "mfa/invalid_code");
    }
    let r = api.mfa_verify_setup(&t0.access, &totp.at_step(step));
    assert_eq!(keys(r.expect(200)), set(&["recovery_codes"]), "{}", r.body);
    let codes = recovery_codes(&r.body);
    assert_eq!(api.me(&t0.access).expect(200)["mfa_enabled"], true);
    api.mfa_setup(&t0.access)
        .expect_error(409, "mfa/already_enabled");

    // Login: a challenge and no tokens.
    let r = api.login_from(email, USER_PASSWORD, &fresh_client_ip());
    let body = r.expect(200);
    assert_eq!(
        keys(body),
        set(&[
            "mfa_required",
            "mfa_challenge_token",
            "available_methods",
            "expires_in"
        ]),
        "{body}"
    );
    assert_eq!(body["mfa_required"], true);
    assert_eq!(body["available_methods"], json!(["totp", "recovery_code"]));
    assert_eq!(body["expires_in"], 300);
    let c1 = body["mfa_challenge_token"].as_str().unwrap().to_owned();
    assert!(!c1.is_empty());

    // The next step's code (the set-up's own step may count as used).
    let next = totp.at_step(step + 1);
    let t1 = two_factor_tokens(&api, &api.mfa_verify(&c1, &next, None), &uid);
    let me = api.me(&t1.access);
    assert_eq!(me.expect(200)["mfa_enabled"], true);
    assert_eq!(me.body["id"], uid.as_str());

    // The challenge is single-use, even with a good recovery code.
    api.mfa_verify(&c1, &codes[0], None)
        .expect_error(401, EXPIRED);

    // The TOTP code is accepted once; an older step never.
    let c2 = api.mfa_challenge(email, USER_PASSWORD);
    api.mfa_verify(&c2, &next, None)
        .expect_error(401, "mfa/invalid_code");
    api.mfa_verify(&c2, &totp.at_step(step), None)
        .expect_error(401, "mfa/invalid_code");

    // A recovery code: any case, dash optional; once.
    let shouted = codes[0].replace('-', "").to_uppercase();
    two_factor_tokens(&api, &api.mfa_verify(&c2, &shouted, None), &uid);
    let c3 = api.mfa_challenge(email, USER_PASSWORD);
    api.mfa_verify(&c3, &codes[0], None)
        .expect_error(401, "mfa/invalid_code");
    two_factor_tokens(&api, &api.mfa_verify(&c3, &codes[1], None), &uid);

    // Challenge tokens nobody issued, and tokens of other kinds.
    for bad in ["garbage".to_owned(), "A".repeat(43), t1.refresh.clone()] {
        let r = api.mfa_verify(&bad, &codes[2], None);
        assert_eq!(
            (r.status, r.code()),
            (401, EXPIRED),
            "challenge {bad:?}: {}",
            r.body
        );
    }
    // ...and none of them burnt the recovery code.
    let c4 = api.mfa_challenge(email, USER_PASSWORD);
    two_factor_tokens(&api, &api.mfa_verify(&c4, &codes[2], None), &uid);

    assert_eq!(
        audit_events(&srv, &s, &api.slug, "auth.mfa.enabled").len(),
        1
    );
    assert!(
        !audit_events(&srv, &s, &api.slug, "auth.mfa.failed").is_empty(),
        "no auth.mfa.failed event"
    );
}

#[test]
fn five_wrong_codes_kill_the_challenge_and_block_the_account() {
    let (smtp, _srv, api, _s) = setup("Kill Co", &[]);
    let email = "kim@example.com";
    let t0 = api.verified_user(&smtp, email, USER_PASSWORD);
    let uid = user_id(&t0);
    let mfa = api.enable_mfa(&t0.access);

    let c = api.mfa_challenge(email, USER_PASSWORD);
    let wrong = mfa.totp.wrong();
    for i in 0..5 {
        let r = api.mfa_verify(&c, &wrong, None);
        assert_eq!(
            (r.status, r.code()),
            (401, "mfa/invalid_code"),
            "wrong code #{}: {}",
            i + 1,
            r.body
        );
    }
    // Wrong codes count as the account's failed sign-ins: with five wrong passwords more, ten
    // failures block the account, even for the right password.
    for _ in 0..5 {
        api.login_from(email, "not the right passphrase", &fresh_client_ip())
            .expect_error(401, "auth/invalid_credentials");
    }
    let blocked = api.login_from(email, USER_PASSWORD, &fresh_client_ip());
    blocked.expect_error(429, "auth/too_many_attempts");
    let retry: u64 = blocked
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .expect("Retry-After in seconds");
    assert!((1..=60).contains(&retry), "{retry}");

    // The right code on the dead challenge. While the account is blocked the throttle may
    // answer first; either way no token.
    let right = mfa.totp.at_step(totp_step_now() + 1);
    let r = api.mfa_verify(&c, &right, None);
    assert!(
        (r.status, r.code()) == (401, EXPIRED)
            || (r.status, r.code()) == (429, "auth/too_many_attempts"),
        "the right code on a dead challenge: {} {}",
        r.status,
        r.body
    );

    // Once the block is over the challenge is still dead...
    std::thread::sleep(Duration::from_millis(retry * 1000 + 500));
    let right = mfa.totp.at_step(totp_step_now() + 1);
    api.mfa_verify(&c, &right, None).expect_error(401, EXPIRED);
    // ...though the code is right: a new challenge takes it.
    let c2 = api.mfa_challenge(email, USER_PASSWORD);
    two_factor_tokens(&api, &api.mfa_verify(&c2, &right, None), &uid);
}

#[test]
fn wrong_codes_on_several_challenges_add_up_in_the_login_throttle() {
    let (smtp, _srv, api, _s) = setup("Throttle Co", &[]);
    let email = "tom@example.com";
    let t0 = api.verified_user(&smtp, email, USER_PASSWORD);
    let mfa = api.enable_mfa(&t0.access);
    api.verified_user(&smtp, "bystander@example.com", USER_PASSWORD);

    // Four wrong codes on one challenge, four on the next, two on a third: no challenge
    // reaches five, the account reaches ten. A user has one pending login challenge: a new
    // login replaces it.
    let wrong = mfa.totp.wrong();
    let c1 = api.mfa_challenge(email, USER_PASSWORD);
    for _ in 0..4 {
        api.mfa_verify(&c1, &wrong, None)
            .expect_error(401, "mfa/invalid_code");
    }
    let c0 = api.mfa_challenge(email, USER_PASSWORD);
    api.mfa_verify(&c1, &wrong, None)
        .expect_error(401, "invalid_or_expired_token");
    for _ in 0..4 {
        api.mfa_verify(&c0, &wrong, None)
            .expect_error(401, "mfa/invalid_code");
    }
    let c2 = api.mfa_challenge(email, USER_PASSWORD);
    for _ in 0..2 {
        api.mfa_verify(&c2, &wrong, None)
            .expect_error(401, "mfa/invalid_code");
    }
    // The right code on a live challenge is refused...
    let r = api.mfa_verify(&c2, &mfa.totp.at_step(mfa.step + 1), None);
    r.expect_error(429, "auth/too_many_attempts");
    let retry: u64 = r
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .expect("Retry-After in seconds");
    assert!(retry >= 1, "{retry}");
    // ...and so is the right password.
    api.login_from(email, USER_PASSWORD, &fresh_client_ip())
        .expect_error(429, "auth/too_many_attempts");
    // Another account of the tenant is not blocked.
    UserTokens::from_answer(&api.login_from(
        "bystander@example.com",
        USER_PASSWORD,
        &fresh_client_ip(),
    ));
}

/// The password step of an MFA login is not a successful login: if it forgave the account's
/// failed codes, whoever knows the password could guess codes without end (four per login).
#[test]
fn a_right_password_does_not_forgive_wrong_second_factor_codes() {
    let (smtp, _srv, api, _s) = setup("Forgive Co", &[]);
    let email = "fay@example.com";
    let t0 = api.verified_user(&smtp, email, USER_PASSWORD);
    let mfa = api.enable_mfa(&t0.access);

    let wrong = mfa.totp.wrong();
    let c1 = api.mfa_challenge(email, USER_PASSWORD);
    for _ in 0..4 {
        api.mfa_verify(&c1, &wrong, None)
            .expect_error(401, "mfa/invalid_code");
    }
    let c0 = api.mfa_challenge(email, USER_PASSWORD);
    for _ in 0..4 {
        api.mfa_verify(&c0, &wrong, None)
            .expect_error(401, "mfa/invalid_code");
    }
    // The password again (right), then two more wrong codes: ten failures for the account.
    let c2 = api.mfa_challenge(email, USER_PASSWORD);
    for _ in 0..2 {
        api.mfa_verify(&c2, &wrong, None)
            .expect_error(401, "mfa/invalid_code");
    }
    api.mfa_verify(&c2, &mfa.totp.at_step(mfa.step + 1), None)
        .expect_error(429, "auth/too_many_attempts");
    api.login_from(email, USER_PASSWORD, &fresh_client_ip())
        .expect_error(429, "auth/too_many_attempts");
}

// ---------------------------------------------------------------------------------------------
// Disable, recovery codes
// ---------------------------------------------------------------------------------------------

#[test]
fn disabling_needs_the_password_and_a_code_and_login_answers_tokens_again() {
    let (smtp, srv, api, s) = setup("Off Co", &[]);
    // Two users, so each has a fresh TOTP step to spend.
    let x = api.verified_user(&smtp, "xavier@example.com", USER_PASSWORD);
    let y = api.verified_user(&smtp, "yolanda@example.com", USER_PASSWORD);
    disable(&api, &y.access, "123456", USER_PASSWORD).expect_error(409, "mfa/not_enabled");

    let mx = api.enable_mfa(&x.access);
    let my = api.enable_mfa(&y.access);

    disable(
        &api,
        &x.access,
        &mx.totp.at_step(mx.step + 1),
        WRONG_PASSWORD,
    )
    .expect_error(401, "auth/invalid_credentials");
    disable(&api, &y.access, &my.totp.wrong(), USER_PASSWORD).expect_error(401, "mfa/invalid_code");
    let r = disable(
        &api,
        &y.access,
        &my.totp.at_step(my.step + 1),
        USER_PASSWORD,
    );
    assert_eq!(r.expect(200), &json!({"mfa_enabled": false}));
    assert_eq!(api.me(&y.access).expect(200)["mfa_enabled"], false);

    // Login answers tokens directly again.
    let r = api.login_from("yolanda@example.com", USER_PASSWORD, &fresh_client_ip());
    let t = UserTokens::from_answer(&r);
    assert!(t.body.get("mfa_required").is_none(), "{}", t.body);
    assert_eq!(api.verify_access(&t.access).1["amr"], json!(["pwd"]));
    disable(&api, &y.access, "123456", USER_PASSWORD).expect_error(409, "mfa/not_enabled");

    // The refused attempt changed nothing for the other user.
    api.mfa_challenge("xavier@example.com", USER_PASSWORD);
    assert_eq!(api.me(&x.access).expect(200)["mfa_enabled"], true);

    assert_eq!(
        audit_events(&srv, &s, &api.slug, "auth.mfa.enabled").len(),
        2
    );
    assert_eq!(
        audit_events(&srv, &s, &api.slug, "auth.mfa.disabled").len(),
        1
    );
}

#[test]
fn regenerated_recovery_codes_replace_the_old_ones_at_once() {
    let (smtp, srv, api, s) = setup("Regen Co", &[]);
    let x = api.verified_user(&smtp, "xena@example.com", USER_PASSWORD);
    let y = api.verified_user(&smtp, "yuri@example.com", USER_PASSWORD);
    let xid = user_id(&x);
    let mx = api.enable_mfa(&x.access);
    let my = api.enable_mfa(&y.access);

    regenerate(&api, &x.access, &mx.totp.wrong(), USER_PASSWORD)
        .expect_error(401, "mfa/invalid_code");
    regenerate(
        &api,
        &y.access,
        &my.totp.at_step(my.step + 1),
        WRONG_PASSWORD,
    )
    .expect_error(401, "auth/invalid_credentials");

    let r = regenerate(
        &api,
        &x.access,
        &mx.totp.at_step(mx.step + 1),
        USER_PASSWORD,
    );
    r.expect(200);
    let fresh = recovery_codes(&r.body);
    for c in &fresh {
        assert!(!mx.recovery_codes.contains(c), "{c} was an old code");
    }

    let c = api.mfa_challenge("xena@example.com", USER_PASSWORD);
    for old in &mx.recovery_codes[..2] {
        api.mfa_verify(&c, old, None)
            .expect_error(401, "mfa/invalid_code");
    }
    two_factor_tokens(&api, &api.mfa_verify(&c, &fresh[0], None), &xid);

    assert_eq!(
        audit_events(&srv, &s, &api.slug, "auth.mfa.recovery_codes_regenerated").len(),
        1
    );
}

// ---------------------------------------------------------------------------------------------
// The tenant's MFA policy
// ---------------------------------------------------------------------------------------------

#[test]
fn a_required_policy_within_its_grace_period_only_announces_the_deadline() {
    let (smtp, srv, api, s) = setup("Policy Co", &[]);
    let early = "early@example.com";
    let t = api.verified_user(&smtp, early, USER_PASSWORD);
    assert!(
        t.body.get("mfa_enrollment_required_by").is_none(),
        "no policy yet: {}",
        t.body
    );
    let ready = api.verified_user(&smtp, "ready@example.com", USER_PASSWORD);
    let ready_id = user_id(&ready);
    let mfa = api.enable_mfa(&ready.access);

    let before = OffsetDateTime::now_utc();
    patch_security(
        &srv,
        &s,
        &api.slug,
        json!({"mfa_policy": "required", "mfa_grace_period_days": 7}),
    );
    let after = OffsetDateTime::now_utc();
    let week = time::Duration::days(7);

    // A user without MFA: the usual tokens, and the deadline (from the policy's start).
    let r = api.login_from(early, USER_PASSWORD, &fresh_client_ip());
    let t = UserTokens::from_answer(&r);
    let deadline = timestamp(&t.body["mfa_enrollment_required_by"]);
    assert_between(deadline, before + week, after + week);
    assert_eq!(api.me(&t.access).expect(200)["mfa_enabled"], false);

    // A user who signs up later: the deadline counts from the sign-up.
    let signed_up = OffsetDateTime::now_utc();
    let late = api.verified_user(&smtp, "late@example.com", USER_PASSWORD);
    let late_deadline = timestamp(&late.body["mfa_enrollment_required_by"]);
    assert_between(
        late_deadline,
        signed_up + week,
        OffsetDateTime::now_utc() + week,
    );

    // A user with MFA: the usual challenge, and no deadline afterwards.
    let c = api.mfa_challenge("ready@example.com", USER_PASSWORD);
    let t = two_factor_tokens(
        &api,
        &api.mfa_verify(&c, &mfa.recovery_codes[0], None),
        &ready_id,
    );
    assert!(
        t.body.get("mfa_enrollment_required_by").is_none(),
        "{}",
        t.body
    );

    // A longer grace period moves the deadline.
    patch_security(&srv, &s, &api.slug, json!({"mfa_grace_period_days": 30}));
    let r = api.login_from(early, USER_PASSWORD, &fresh_client_ip());
    let t = UserTokens::from_answer(&r);
    let month = time::Duration::days(30);
    assert_between(
        timestamp(&t.body["mfa_enrollment_required_by"]),
        before + month,
        after + month,
    );

    // Optional again: no requirement.
    patch_security(&srv, &s, &api.slug, json!({"mfa_policy": "optional"}));
    let r = api.login_from(early, USER_PASSWORD, &fresh_client_ip());
    let t = UserTokens::from_answer(&r);
    assert!(
        t.body.get("mfa_enrollment_required_by").is_none(),
        "{}",
        t.body
    );
}

#[test]
fn after_the_grace_period_login_gives_an_enrollment_token_good_only_for_setup() {
    let (smtp, mut srv, mut api, s) = setup("Grace Co", &[FAULTS, (OFFSET, "0")]);
    let late = "late@example.com";
    let late_id = user_id(&api.verified_user(&smtp, late, USER_PASSWORD));
    let ready = api.verified_user(&smtp, "ready@example.com", USER_PASSWORD);
    let ready_id = user_id(&ready);
    let ready_mfa = api.enable_mfa(&ready.access);
    let free = "free@example.com";
    api.verified_user(&smtp, free, USER_PASSWORD);
    patch_security(
        &srv,
        &s,
        &api.slug,
        json!({"mfa_policy": "required", "mfa_grace_period_days": 3}),
    );
    // Within the grace period (no offset): tokens and the deadline.
    let r = api.login_from(late, USER_PASSWORD, &fresh_client_ip());
    let t = UserTokens::from_answer(&r);
    timestamp(&t.body["mfa_enrollment_required_by"]);

    // Four days later, by the tenant actors' calendar.
    let four_days = (4 * 86_400).to_string();
    srv.kill();
    srv.restart_with(&[(OFFSET, four_days.as_str())]);
    api.rebase(&srv);

    let r = api.login_from(late, USER_PASSWORD, &fresh_client_ip());
    let body = r.expect(200).clone();
    assert_eq!(
        keys(&body),
        set(&[
            "mfa_enrollment_required",
            "enrollment_token",
            "token_type",
            "expires_in",
            "user"
        ]),
        "{body}"
    );
    assert_eq!(body["mfa_enrollment_required"], true);
    assert_eq!(body["token_type"], "Bearer");
    assert!(body["expires_in"].as_u64().is_some_and(|e| e > 0), "{body}");
    assert_eq!(body["user"]["id"], late_id.as_str());
    let enrollment = body["enrollment_token"]
        .as_str()
        .expect("enrollment_token")
        .to_owned();

    // Good for nothing but the MFA set-up.
    let refusals = [
        api.me(&enrollment),
        api.sessions(&enrollment),
        api.send("POST", "/v1/auth/logout", Some(&enrollment), None),
        api.post_as(
            "/v1/auth/change-password",
            Some(&enrollment),
            &json!({"current_password": USER_PASSWORD, "new_password": "a brand new passphrase 7"}),
        ),
        api.post_as(
            "/v1/auth/mfa/disable",
            Some(&enrollment),
            &json!({"code": "123456", "password": USER_PASSWORD}),
        ),
        api.post_as(
            "/v1/auth/mfa/recovery-codes",
            Some(&enrollment),
            &json!({"code": "123456", "password": USER_PASSWORD}),
        ),
        api.post_as(
            "/v1/auth/step-up/password",
            Some(&enrollment),
            &json!({"password": USER_PASSWORD}),
        ),
    ];
    for (i, r) in refusals.iter().enumerate() {
        assert_eq!(
            (r.status, r.code()),
            (401, "auth/invalid_token"),
            "route #{i} took the enrollment token: {}",
            r.body
        );
    }
    let mfa = api.enable_mfa(&enrollment);
    // Dead once MFA is on.
    api.mfa_setup(&enrollment)
        .expect_error(401, "auth/invalid_token");
    api.me(&enrollment).expect_error(401, "auth/invalid_token");

    // The user logs in again: password, then the challenge.
    let c = api.mfa_challenge(late, USER_PASSWORD);
    let t = two_factor_tokens(
        &api,
        &api.mfa_verify(&c, &mfa.totp.at_step(mfa.step + 1), None),
        &late_id,
    );
    assert!(t.body.get("mfa_enrollment_required_by").is_none());
    assert_eq!(api.me(&t.access).expect(200)["mfa_enabled"], true);

    // A user who had MFA before: the usual challenge.
    let c = api.mfa_challenge("ready@example.com", USER_PASSWORD);
    two_factor_tokens(
        &api,
        &api.mfa_verify(&c, &ready_mfa.recovery_codes[0], None),
        &ready_id,
    );

    // Policy back to optional: no requirement any more.
    let s = srv.login(&api.owner, PASSWORD);
    patch_security(&srv, &s, &api.slug, json!({"mfa_policy": "optional"}));
    let r = api.login_from(free, USER_PASSWORD, &fresh_client_ip());
    let t = UserTokens::from_answer(&r);
    assert!(
        t.body.get("mfa_enrollment_required").is_none(),
        "{}",
        t.body
    );
    assert!(
        t.body.get("mfa_enrollment_required_by").is_none(),
        "{}",
        t.body
    );
    api.me(&t.access).expect(200);
}

#[test]
fn a_clock_offset_needs_fault_injection() {
    let tmp = tempfile::tempdir().unwrap();
    let env = vec![(OFFSET.to_owned(), "60".to_owned())];
    let log = tmp.path().join("offset.log");
    match spawn(&tmp.path().join("data"), &env, &log) {
        Ok((mut child, base)) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the server started on {base} with a clock offset and no fault injection");
        }
        Err((status, _)) => assert!(!status.success(), "{status}"),
    }
}

/// A user with MFA gets a device token from the second step of a password login, and that
/// device then goes through both steps while someone elsewhere has locked the account; a
/// device without it is refused at the password step, and the device's own count holds its
/// second step.
#[test]
fn a_known_device_passes_both_steps_of_a_locked_mfa_account() {
    let (smtp, _srv, api, _s) = setup("Device Co", &[]);
    let email = "dora@example.com";
    let t0 = api.verified_user(&smtp, email, USER_PASSWORD);
    let mfa = api.enable_mfa(&t0.access);

    // The challenge answer keeps its shape; the second step's answer carries the token.
    let c = api.mfa_challenge(email, USER_PASSWORD);
    let r = api.mfa_verify(&c, &mfa.recovery_codes[0], None);
    let device = r.expect(200)["device_token"]
        .as_str()
        .unwrap_or_else(|| panic!("no device_token in {}", r.body))
        .to_owned();
    assert!(device.starts_with("tdv_"), "{device}");

    // Someone elsewhere locks the account with wrong passwords from many addresses.
    for _ in 0..12 {
        let r = api.login_from(email, "not the right passphrase", &fresh_client_ip());
        assert!(matches!(r.status, 401 | 429), "{} {}", r.status, r.body);
    }
    api.login_from(email, USER_PASSWORD, &fresh_client_ip())
        .expect_error(429, "auth/too_many_attempts");

    // The known device: the password step, then the second step, both through.
    let login_with_device = |password: &str| {
        let body = json!({ "email": email, "password": password, "device_token": device });
        api.post_as("/v1/auth/login", None, &body)
    };
    let r = login_with_device(USER_PASSWORD);
    let challenge = r.expect(200)["mfa_challenge_token"]
        .as_str()
        .unwrap_or_else(|| panic!("no challenge in {}", r.body))
        .to_owned();
    let signed = api.mfa_verify(&challenge, &mfa.recovery_codes[1], None);
    let body = signed.expect(200);
    assert!(body["access_token"].is_string(), "{body}");
    assert!(
        body.get("device_token").is_none(),
        "a known device keeps its token: {body}"
    );

    // Its second step is held to the device's count (three), not the account's.
    let r = login_with_device(USER_PASSWORD);
    let challenge = r.expect(200)["mfa_challenge_token"]
        .as_str()
        .expect("a challenge")
        .to_owned();
    let wrong = mfa.totp.wrong();
    for _ in 0..3 {
        api.mfa_verify(&challenge, &wrong, None)
            .expect_error(401, "mfa/invalid_code");
    }
    api.mfa_verify(&challenge, &mfa.recovery_codes[2], None)
        .expect_error(429, "auth/too_many_attempts");
    login_with_device(USER_PASSWORD).expect_error(429, "auth/too_many_attempts");
}
