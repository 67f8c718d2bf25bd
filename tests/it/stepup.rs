//! Step-up (RFC 9470): tokens by password, e-mail OTP, magic link and TOTP, each single-use
//! and bound to the session that obtained it; the account-linking gate that asks for them;
//! their limits, their audit events, and a consumed code across SIGKILL.

use std::sync::Barrier;

use serde_json::{json, Value};
use time::OffsetDateTime;

use crate::support::{
    audit_events, fresh_client_ip, json_keys as keys, mailed_code, mailed_link_token,
    name_set as set, other_code, patch_security, six_digit_code, start_with_mail, user_setup,
    AuthAnswer, Session, SmtpStub, TestServer, UserApi, UserTokens, PASSWORD, STEP_UP_HEADER,
    USER_PASSWORD,
};

/// The code of every refusal of a wrong, used, expired or foreign code, link or token.
const EXPIRED: &str = "invalid_or_expired_token";
const WRONG_PASSWORD: &str = "not the right passphrase";
const PROVIDER: &str = "google";
const WWW_AUTHENTICATE: &str = "Bearer error=\"insufficient_user_authentication\", acr_values=\"urn:tessera:auth:aal1 urn:tessera:auth:aal2\"";

const STEP_UP_PASSWORD: &str = "/v1/auth/step-up/password";
const OTP_INITIATE: &str = "/v1/auth/step-up/email-otp/initiate";
const OTP_VERIFY: &str = "/v1/auth/step-up/email-otp/verify";
const LINK_INITIATE: &str = "/v1/auth/step-up/magic-link/initiate";
const LINK_VERIFY: &str = "/v1/auth/step-up/magic-link/verify";

const OTP_KIND: &str = "step_up_email_otp";
const LINK_KIND: &str = "step_up_magic_link";
const HINT: &str = "Link your Google account";

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A server (mail through a stub, `X-Forwarded-For` believed) with `extra` environment, one
/// tenant with explicit account linking on, and its owner's dashboard session.
fn setup(tenant: &str, extra: &[(&str, &str)]) -> (SmtpStub, TestServer, UserApi, Session) {
    let (smtp, srv, api, session) = user_setup(tenant, extra);
    enable_linking(&srv, &session, &api);
    (smtp, srv, api, session)
}

#[track_caller]
fn enable_linking(srv: &TestServer, s: &Session, api: &UserApi) {
    let out = patch_security(
        srv,
        s,
        &api.slug,
        json!({"explicit_account_linking_enabled": true}),
    );
    assert_eq!(out["explicit_account_linking_enabled"], true, "{out}");
}

fn step_up_password(api: &UserApi, bearer: &str, password: &str) -> AuthAnswer {
    api.post_as(
        STEP_UP_PASSWORD,
        Some(bearer),
        &json!({ "password": password }),
    )
}

/// Asserts a step-up token answer for the session of `session`; verifies the token against
/// the tenant's JWKS and checks every claim. Answers the token.
#[track_caller]
fn step_up_token(
    api: &UserApi,
    a: &AuthAnswer,
    session: &UserTokens,
    aal: u64,
    amr: Value,
) -> String {
    let body = a.expect(200);
    assert_eq!(
        keys(body),
        set(&["step_up_token", "token_type", "expires_in"]),
        "{body}"
    );
    assert_eq!(body["token_type"], "StepUp", "{body}");
    assert_eq!(body["expires_in"], 300, "{body}");
    let token = body["step_up_token"].as_str().expect("step_up_token");

    let (header, claims) = api.verify_step_up(token);
    assert_eq!(header.alg, jsonwebtoken::Algorithm::ES256);
    assert_eq!(header.typ.as_deref(), Some("step-up+jwt"));
    let access = session.claims();
    assert_eq!(claims["iss"], api.issuer(), "{claims}");
    assert_eq!(claims["sub"], access["sub"], "{claims}");
    // Not the slug: no resource server may take a step-up token for an access token.
    assert_eq!(claims["aud"], format!("{}/step-up", api.slug), "{claims}");
    assert_eq!(claims["tid"], api.tenant_id.as_str(), "{claims}");
    assert_eq!(claims["sid"], session.sid().as_str(), "{claims}");
    assert!(
        claims["jti"].as_str().is_some_and(|j| !j.is_empty()),
        "{claims}"
    );
    let (iat, exp) = (
        claims["iat"].as_i64().expect("iat"),
        claims["exp"].as_i64().expect("exp"),
    );
    assert_eq!(exp - iat, 300, "{claims}");
    let now = OffsetDateTime::now_utc().unix_timestamp();
    assert!((iat - now).abs() < 60, "iat {iat} vs now {now}");
    assert!(
        claims["aal"].is_u64() && claims["aal"] == aal,
        "aal should be the integer {aal}: {claims}"
    );
    assert_eq!(claims["acr"], format!("aal{aal}"), "{claims}");
    assert_eq!(claims["amr"], amr, "{claims}");
    token.to_owned()
}

/// Asserts the gate's refusal without a step-up token: the header, the code, the details and
/// the methods, in order. Answers the `mfa_challenge_token`.
#[track_caller]
fn gate_challenge(api: &UserApi, bearer: &str, methods: &[&str]) -> String {
    let r = api.link_gate(PROVIDER, bearer, None);
    assert_gate_challenge(&r, methods)
}

#[track_caller]
fn assert_gate_challenge(r: &AuthAnswer, methods: &[&str]) -> String {
    r.expect_error(401, "account_linking/mfa_required");
    assert_eq!(
        r.header("www-authenticate").as_deref(),
        Some(WWW_AUTHENTICATE),
        "{}",
        r.body
    );
    assert!(r.body["error"]["message"].is_string(), "{}", r.body);
    let details = &r.body["error"]["details"];
    assert_eq!(
        keys(details),
        set(&["next_action", "mfa_challenge_token", "available_methods"]),
        "{}",
        r.body
    );
    assert_eq!(details["next_action"], "verify_mfa");
    assert_eq!(details["available_methods"], json!(methods), "{}", r.body);
    let token = details["mfa_challenge_token"]
        .as_str()
        .expect("mfa_challenge_token");
    assert!(!token.is_empty());
    token.to_owned()
}

/// Asserts the gate let the step-up token through (the route itself then refuses: no provider
/// can be configured yet).
#[track_caller]
fn assert_gate_passes(api: &UserApi, bearer: &str, token: &str) {
    api.link_gate(PROVIDER, bearer, Some(token))
        .expect_error(400, "account_linking/provider_not_configured");
}

#[track_caller]
fn assert_gate_refuses(api: &UserApi, bearer: &str, token: &str, what: &str) {
    let r = api.link_gate(PROVIDER, bearer, Some(token));
    assert_eq!((r.status, r.code()), (401, EXPIRED), "{what}: {}", r.body);
}

/// `POST initiate` with `body`; asserts the 202 answer with the masked address.
#[track_caller]
fn initiate(api: &UserApi, path: &str, bearer: &str, body: &Value, masked: &str) {
    let r = api.post_as(path, Some(bearer), body);
    assert_eq!(
        r.expect(202),
        &json!({"status": "sent", "email_masked": masked}),
        "{path}"
    );
}

fn verify_otp(api: &UserApi, bearer: &str, otp: &str) -> AuthAnswer {
    api.post_as(OTP_VERIFY, Some(bearer), &json!({ "otp": otp }))
}

fn verify_link(api: &UserApi, bearer: &str, token: &str) -> AuthAnswer {
    api.post_as(LINK_VERIFY, Some(bearer), &json!({ "token": token }))
}

/// The tenant's events of `event_type` for `method`, each checked for the metadata every
/// step-up event carries.
#[track_caller]
fn step_up_events(
    srv: &TestServer,
    s: &Session,
    slug: &str,
    event_type: &str,
    method: &str,
    aal: u64,
) -> Vec<Value> {
    let events: Vec<Value> = audit_events(srv, s, slug, event_type)
        .into_iter()
        .filter(|e| e["metadata"]["step_up_method"] == method)
        .collect();
    assert!(!events.is_empty(), "no {event_type} event for {method}");
    for e in &events {
        let m = &e["metadata"];
        assert_eq!(m["aal"], aal, "{event_type}: {e}");
        assert!(m["aal"].is_u64(), "{event_type}: aal is an integer: {e}");
        assert!(
            m["ip_hash"].as_str().is_some_and(|h| !h.is_empty()),
            "{event_type}: no ip_hash in {e}"
        );
        assert!(
            m["ua_family"].as_str().is_some_and(|u| !u.is_empty()),
            "{event_type}: no ua_family in {e}"
        );
        match event_type {
            "auth.step_up_issued" => {
                assert!(m["latency_ms"].is_u64(), "no integer latency_ms in {e}")
            }
            "auth.step_up_failed" => assert!(
                m["reason"].as_str().is_some_and(|r| !r.is_empty()),
                "no reason in {e}"
            ),
            _ => {}
        }
    }
    events
}

// ---------------------------------------------------------------------------------------------
// Password, and the gate
// ---------------------------------------------------------------------------------------------

#[test]
fn a_password_step_up_token_is_signed_bound_to_its_session_and_single_use() {
    let (smtp, srv, api, s) = setup("Step Co", &[]);
    let email = "alice@example.com";
    let t = api.verified_user(&smtp, email, USER_PASSWORD);

    step_up_password(&api, &t.access, WRONG_PASSWORD).expect_error(401, "auth/invalid_credentials");
    for bad in [
        json!({"password": ""}),
        json!({"password": "p".repeat(257)}),
        json!({}),
        json!({"password": 12}),
    ] {
        let r = api.post_as(STEP_UP_PASSWORD, Some(&t.access), &bad);
        assert_eq!(
            (r.status, r.code()),
            (400, "validation/invalid_request"),
            "{bad}: {}",
            r.body
        );
    }
    let r = api.post_as(
        STEP_UP_PASSWORD,
        None,
        &json!({ "password": USER_PASSWORD }),
    );
    assert_eq!(r.status, 401, "no bearer: {}", r.body);

    let token = step_up_token(
        &api,
        &step_up_password(&api, &t.access, USER_PASSWORD),
        &t,
        2,
        json!(["pwd"]),
    );
    // It is no access token.
    api.me(&token).expect_error(401, "auth/invalid_token");

    // The gate takes it once.
    assert_gate_passes(&api, &t.access, &token);
    assert_gate_refuses(&api, &t.access, &token, "the same token again");
    assert_gate_refuses(&api, &t.access, "garbage", "garbage");
    assert_gate_refuses(&api, &t.access, &t.access, "an access token");

    // A token of another session of the same user.
    let other = api.login_ok(email, USER_PASSWORD);
    let theirs = step_up_token(
        &api,
        &step_up_password(&api, &other.access, USER_PASSWORD),
        &other,
        2,
        json!(["pwd"]),
    );
    assert_gate_refuses(&api, &t.access, &theirs, "another session's token");

    let issued = step_up_events(&srv, &s, &api.slug, "auth.step_up_issued", "password", 2);
    assert_eq!(issued.len(), 2, "{issued:?}");
    step_up_events(&srv, &s, &api.slug, "auth.step_up_failed", "password", 2);
}

#[test]
fn the_gate_is_off_by_default_then_asks_for_a_step_up_with_the_users_methods() {
    let (smtp, srv) = start_with_mail(&[]);
    let api = UserApi::signup(&srv, "Gate Co", "owner@example.com");
    let s = srv.login(&api.owner, PASSWORD);
    let t = api.verified_user(&smtp, "gina@example.com", USER_PASSWORD);

    api.link_gate(PROVIDER, &t.access, None)
        .expect_error(403, "account_linking/disabled");
    enable_linking(&srv, &s, &api);

    let methods = ["email_otp", "magic_link", "password"];
    let first = gate_challenge(&api, &t.access, &methods);
    // No body at all is the same as `{}`.
    let r = api.send_with(
        "POST",
        &format!("/v1/users/me/link/{PROVIDER}"),
        Some(&t.access),
        None,
        &[],
    );
    assert_gate_challenge(&r, &methods);
    // Without a bearer there is nobody to step up.
    let r = api.send_with(
        "POST",
        &format!("/v1/users/me/link/{PROVIDER}"),
        None,
        Some(&json!({})),
        &[(STEP_UP_HEADER, "garbage")],
    );
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(!first.is_empty());
    // A header that is there but blank is a bad token, not a missing one: no challenge, on
    // the link route and on the gated routes that take the header alone.
    assert_gate_refuses(&api, &t.access, "  ", "a blank step-up header");
    for (method, path) in [("GET", "/v1/users/me/export"), ("DELETE", "/v1/users/me")] {
        let r = api.send_with(
            method,
            path,
            Some(&t.access),
            None,
            &[(STEP_UP_HEADER, " ")],
        );
        assert_eq!(
            (r.status, r.code()),
            (401, EXPIRED),
            "{method} {path}: {}",
            r.body
        );
    }

    // With MFA, TOTP comes first.
    api.enable_mfa(&t.access);
    gate_challenge(
        &api,
        &t.access,
        &["totp", "email_otp", "magic_link", "password"],
    );
}

// ---------------------------------------------------------------------------------------------
// E-mail OTP
// ---------------------------------------------------------------------------------------------

#[test]
fn an_email_otp_is_mailed_with_the_hint_and_works_once() {
    let (smtp, srv, api, s) = setup("Otp Co", &[]);
    let email = "alice@example.com";
    let t = api.verified_user(&smtp, email, USER_PASSWORD);

    initiate(
        &api,
        OTP_INITIATE,
        &t.access,
        &json!({ "action_hint": HINT }),
        "a***@example.com",
    );
    let mail = smtp.wait_for(&api.slug, OTP_KIND, email, 1);
    let code = six_digit_code(&mail.text).unwrap_or_else(|| panic!("no code in {}", mail.text));
    assert!(mail.text.contains(HINT), "no action hint in {}", mail.text);
    let lower = mail.text.to_lowercase();
    assert!(
        ["did not", "didn't", "not you", "wasn't you"]
            .iter()
            .any(|w| lower.contains(w)),
        "no warning for those who did not ask in {}",
        mail.text
    );
    assert!(!mail.text.contains(USER_PASSWORD));

    verify_otp(&api, &t.access, &other_code(&code)).expect_error(401, EXPIRED);
    let token = step_up_token(
        &api,
        &verify_otp(&api, &t.access, &code),
        &t,
        1,
        json!(["otp"]),
    );
    verify_otp(&api, &t.access, &code).expect_error(401, EXPIRED);
    assert_gate_passes(&api, &t.access, &token);

    // The OTP's shape.
    for bad in [json!(""), json!("123456789"), json!(123456)] {
        let r = api.post_as(OTP_VERIFY, Some(&t.access), &json!({ "otp": bad }));
        assert_eq!(
            (r.status, r.code()),
            (400, "validation/invalid_request"),
            "{bad}: {}",
            r.body
        );
    }
    // The hint's length: 80 is fine, 81 is not.
    let r = api.post_as(
        OTP_INITIATE,
        Some(&t.access),
        &json!({ "action_hint": "h".repeat(81) }),
    );
    r.expect_error(400, "validation/invalid_request");

    // A new code replaces the previous one.
    initiate(
        &api,
        OTP_INITIATE,
        &t.access,
        &json!({}),
        "a***@example.com",
    );
    let second = mailed_code(&smtp, &api, OTP_KIND, email, 2);
    let long_hint = "h".repeat(80);
    initiate(
        &api,
        OTP_INITIATE,
        &t.access,
        &json!({ "action_hint": long_hint }),
        "a***@example.com",
    );
    let third_mail = smtp.wait_for(&api.slug, OTP_KIND, email, 3);
    assert!(third_mail.text.contains(&long_hint), "{}", third_mail.text);
    let third = six_digit_code(&third_mail.text).expect("a code");
    if second != third {
        verify_otp(&api, &t.access, &second).expect_error(401, EXPIRED);
    }
    step_up_token(
        &api,
        &verify_otp(&api, &t.access, &third),
        &t,
        1,
        json!(["otp"]),
    );

    // Five wrong tries kill a code.
    initiate(
        &api,
        OTP_INITIATE,
        &t.access,
        &json!({}),
        "a***@example.com",
    );
    let fourth = mailed_code(&smtp, &api, OTP_KIND, email, 4);
    for i in 0..5 {
        let r = verify_otp(&api, &t.access, &other_code(&fourth));
        assert_eq!((r.status, r.code()), (401, EXPIRED), "try #{i}: {}", r.body);
    }
    let blocked_at = std::time::Instant::now();
    verify_otp(&api, &t.access, &fourth).expect_error(401, EXPIRED);
    // Five wrong codes in a row also block the user's codes for a while: a fresh code is
    // not even compared, so re-initiating gives no more guesses.
    initiate(
        &api,
        OTP_INITIATE,
        &t.access,
        &json!({}),
        "a***@example.com",
    );
    let fifth = mailed_code(&smtp, &api, OTP_KIND, email, 5);
    let r = verify_otp(&api, &t.access, &fifth);
    // The block lasts 15 s (on the monotonic clock, which no offset moves): a run too slow to
    // deliver one mail in that time fails here rather than passing without the check.
    let waited = blocked_at.elapsed();
    assert_eq!(
        (r.status, r.code()),
        (429, "auth/too_many_attempts"),
        "the right fresh code {waited:?} after five wrong ones (the block lasts 15 s): {}",
        r.body
    );
    let retry: u64 = r
        .header("retry-after")
        .unwrap_or_else(|| panic!("no Retry-After: {}", r.body))
        .parse()
        .expect("Retry-After in seconds");
    assert!((1..=15).contains(&retry), "Retry-After {retry}");

    step_up_events(
        &srv,
        &s,
        &api.slug,
        "auth.step_up_email_otp_initiated",
        "email_otp",
        1,
    );
    let issued = step_up_events(&srv, &s, &api.slug, "auth.step_up_issued", "email_otp", 1);
    assert_eq!(issued.len(), 2, "{issued:?}");
    step_up_events(&srv, &s, &api.slug, "auth.step_up_failed", "email_otp", 1);
}

#[test]
fn twenty_concurrent_verifies_of_one_otp_make_exactly_one_token() {
    let (smtp, _srv, api, _s) = setup("Race Co", &[]);
    let email = "rosa@example.com";
    let t = api.verified_user(&smtp, email, USER_PASSWORD);
    initiate(
        &api,
        OTP_INITIATE,
        &t.access,
        &json!({}),
        "r***@example.com",
    );
    let code = mailed_code(&smtp, &api, OTP_KIND, email, 1);

    let barrier = Barrier::new(20);
    let answers: Vec<AuthAnswer> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..20)
            .map(|_| {
                sc.spawn(|| {
                    barrier.wait();
                    verify_otp(&api, &t.access, &code)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let won: Vec<&AuthAnswer> = answers.iter().filter(|a| a.status == 200).collect();
    assert_eq!(
        won.len(),
        1,
        "answers: {:?}",
        answers
            .iter()
            .map(|a| (a.status, &a.body))
            .collect::<Vec<_>>()
    );
    for a in answers.iter().filter(|a| a.status != 200) {
        a.expect_error(401, EXPIRED);
    }
    let token = step_up_token(&api, won[0], &t, 1, json!(["otp"]));
    assert_gate_passes(&api, &t.access, &token);
}

#[test]
fn more_than_five_initiates_a_session_in_ten_minutes_are_refused() {
    let (smtp, _srv, api, _s) = setup("Limit Co", &[]);
    let email = "lena@example.com";
    let a = api.verified_user(&smtp, email, USER_PASSWORD);
    let b = api.login_ok(email, USER_PASSWORD);
    for i in 0..5 {
        let path = if i % 2 == 0 {
            OTP_INITIATE
        } else {
            LINK_INITIATE
        };
        initiate(&api, path, &a.access, &json!({}), "l***@example.com");
    }
    for path in [OTP_INITIATE, LINK_INITIATE] {
        let r = api.post_as(path, Some(&a.access), &json!({}));
        assert_eq!(
            (r.status, r.code()),
            (429, "auth/rate_limited"),
            "{path}: {}",
            r.body
        );
    }
    // Per session: another session of the same user may.
    initiate(
        &api,
        OTP_INITIATE,
        &b.access,
        &json!({}),
        "l***@example.com",
    );
}

#[test]
fn codes_links_and_tokens_belong_to_the_session_that_asked() {
    let (smtp, _srv, api, _s) = setup("Bound Co", &[]);
    let email = "bea@example.com";
    let a = api.verified_user(&smtp, email, USER_PASSWORD);
    let b = api.login_ok(email, USER_PASSWORD);
    assert_ne!(a.sid(), b.sid());

    // Session A's code, verified by session B of the same user.
    initiate(
        &api,
        OTP_INITIATE,
        &a.access,
        &json!({}),
        "b***@example.com",
    );
    let code = mailed_code(&smtp, &api, OTP_KIND, email, 1);
    verify_otp(&api, &b.access, &code).expect_error(401, EXPIRED);
    let token = step_up_token(
        &api,
        &verify_otp(&api, &a.access, &code),
        &a,
        1,
        json!(["otp"]),
    );

    // Session A's token at the gate with session B's bearer.
    assert_gate_refuses(&api, &b.access, &token, "A's token with B's bearer");

    // Session A's magic link, verified by session B.
    initiate(
        &api,
        LINK_INITIATE,
        &a.access,
        &json!({}),
        "b***@example.com",
    );
    let link = mailed_link_token(&smtp, &api, LINK_KIND, "step-up/magic-link", email, 1);
    verify_link(&api, &b.access, &link).expect_error(401, EXPIRED);
}

// ---------------------------------------------------------------------------------------------
// Magic link
// ---------------------------------------------------------------------------------------------

#[test]
fn a_magic_link_steps_up_once() {
    let (smtp, srv, api, s) = setup("Link Co", &[]);
    let email = "mona@example.com";
    let t = api.verified_user(&smtp, email, USER_PASSWORD);

    initiate(
        &api,
        LINK_INITIATE,
        &t.access,
        &json!({ "action_hint": HINT }),
        "m***@example.com",
    );
    let token = mailed_link_token(&smtp, &api, LINK_KIND, "step-up/magic-link", email, 1);
    for bad in [json!(""), json!("t".repeat(257))] {
        let r = api.post_as(LINK_VERIFY, Some(&t.access), &json!({ "token": bad }));
        assert_eq!(
            (r.status, r.code()),
            (400, "validation/invalid_request"),
            "{bad}: {}",
            r.body
        );
    }
    let r = api.post_as(
        LINK_INITIATE,
        Some(&t.access),
        &json!({ "action_hint": "h".repeat(81) }),
    );
    r.expect_error(400, "validation/invalid_request");
    verify_link(&api, &t.access, &"A".repeat(43)).expect_error(401, EXPIRED);

    let step_up = step_up_token(
        &api,
        &verify_link(&api, &t.access, &token),
        &t,
        1,
        json!(["mca"]),
    );
    verify_link(&api, &t.access, &token).expect_error(401, EXPIRED);
    assert_gate_passes(&api, &t.access, &step_up);

    step_up_events(
        &srv,
        &s,
        &api.slug,
        "auth.step_up_magic_link_initiated",
        "magic_link",
        1,
    );
    step_up_events(&srv, &s, &api.slug, "auth.step_up_issued", "magic_link", 1);
}

#[test]
fn step_up_tokens_and_links_of_another_tenant_are_not_found() {
    let (smtp, srv) = start_with_mail(&[]);
    let a = UserApi::signup(&srv, "Aye Co", "owner-a@example.com");
    let b = UserApi::signup(&srv, "Bee Co", "owner-b@example.com");
    for api in [&a, &b] {
        let s = srv.login(&api.owner, PASSWORD);
        enable_linking(&srv, &s, api);
    }
    let email = "alice@example.com";
    let ta = a.verified_user(&smtp, email, USER_PASSWORD);
    let tb = b.verified_user(&smtp, email, USER_PASSWORD);

    // A's magic link with B's API key and a bearer of B.
    initiate(
        &a,
        LINK_INITIATE,
        &ta.access,
        &json!({}),
        "a***@example.com",
    );
    let link = mailed_link_token(&smtp, &a, LINK_KIND, "step-up/magic-link", email, 1);
    let r = verify_link(&b, &tb.access, &link);
    assert_eq!(r.status, 404, "{}", r.body);
    // It still works where it belongs.
    step_up_token(
        &a,
        &verify_link(&a, &ta.access, &link),
        &ta,
        1,
        json!(["mca"]),
    );

    // A's step-up token at B's gate.
    let token = step_up_token(
        &a,
        &step_up_password(&a, &ta.access, USER_PASSWORD),
        &ta,
        2,
        json!(["pwd"]),
    );
    let r = b.link_gate(PROVIDER, &tb.access, Some(&token));
    assert_eq!(r.status, 404, "{}", r.body);
    assert_gate_passes(&a, &ta.access, &token);
}

// ---------------------------------------------------------------------------------------------
// TOTP through the gate
// ---------------------------------------------------------------------------------------------

#[test]
fn the_gates_challenge_with_a_totp_code_and_the_same_session_gives_an_aal2_token() {
    let (smtp, srv, api, s) = setup("Totp Co", &[]);
    let email = "tina@example.com";
    let t = api.verified_user(&smtp, email, USER_PASSWORD);
    let other = api.login_ok(email, USER_PASSWORD);
    let mfa = api.enable_mfa(&t.access);
    let methods = ["totp", "email_otp", "magic_link", "password"];
    let code = mfa.totp.at_step(mfa.step + 1);

    // Without a bearer, or with another session's bearer: refused.
    let g1 = gate_challenge(&api, &t.access, &methods);
    api.mfa_verify(&g1, &code, None).expect_error(401, EXPIRED);
    api.mfa_verify(&g1, &code, Some(&other.access))
        .expect_error(401, EXPIRED);

    // With the bearer of the session that met the gate.
    let g2 = gate_challenge(&api, &t.access, &methods);
    let token = step_up_token(
        &api,
        &api.mfa_verify(&g2, &code, Some(&t.access)),
        &t,
        2,
        json!(["otp"]),
    );
    assert_gate_passes(&api, &t.access, &token);
    step_up_events(&srv, &s, &api.slug, "auth.step_up_issued", "totp", 2);
}

// ---------------------------------------------------------------------------------------------
// Guests, configuration, crashes
// ---------------------------------------------------------------------------------------------

#[test]
fn a_guest_has_no_mfa_and_no_step_up_method() {
    let (_smtp, srv, api, s) = setup("Guest Co", &[]);
    crate::support::enable_guests(&srv, &s, &api.slug);
    let g = api.send_as(
        Some(&api.api_key),
        "POST",
        "/v1/auth/anonymous",
        None,
        None,
        Some(&fresh_client_ip()),
    );
    let guest = g.expect(201)["access_token"]
        .as_str()
        .expect("access_token")
        .to_owned();

    api.mfa_setup(&guest).expect_error(403, "mfa/unavailable");
    step_up_password(&api, &guest, USER_PASSWORD).expect_error(400, "step_up/method_unavailable");
    for path in [OTP_INITIATE, LINK_INITIATE] {
        let r = api.post_as(path, Some(&guest), &json!({}));
        assert_eq!(
            (r.status, r.code()),
            (400, "step_up/method_unavailable"),
            "{path}: {}",
            r.body
        );
    }
}

#[test]
fn the_acr_values_prefix_is_configurable() {
    let (smtp, _srv, api, _s) = setup(
        "Prefix Co",
        &[("TESSERA__TOKENS__ACR_URN_PREFIX", "urn:example:loa")],
    );
    let t = api.verified_user(&smtp, "pia@example.com", USER_PASSWORD);
    let r = api.link_gate(PROVIDER, &t.access, None);
    r.expect_error(401, "account_linking/mfa_required");
    assert_eq!(
        r.header("www-authenticate").as_deref(),
        Some(
            "Bearer error=\"insufficient_user_authentication\", acr_values=\"urn:example:loa:aal1 urn:example:loa:aal2\""
        )
    );
}

#[test]
fn a_consumed_otp_stays_consumed_after_sigkill() {
    let (smtp, mut srv, mut api, _s) = setup("Crash Co", &[]);
    let email = "cora@example.com";
    let t = api.verified_user(&smtp, email, USER_PASSWORD);
    initiate(
        &api,
        OTP_INITIATE,
        &t.access,
        &json!({}),
        "c***@example.com",
    );
    let code = mailed_code(&smtp, &api, OTP_KIND, email, 1);
    step_up_token(
        &api,
        &verify_otp(&api, &t.access, &code),
        &t,
        1,
        json!(["otp"]),
    );

    srv.kill();
    srv.restart();
    api.rebase(&srv);
    // The session survived (its address, hence the issuer, did not: a refresh gives an access
    // token of the new issuer for the same session); the code stays used.
    let renewed = UserTokens::from_answer(&api.refresh(&t.refresh));
    assert_eq!(renewed.sid(), t.sid());
    api.me(&renewed.access).expect(200);
    verify_otp(&api, &renewed.access, &code).expect_error(401, EXPIRED);
}

/// Moves the server's clock so that what was issued at `issued` is `age` seconds old.
fn age_to(srv: &mut TestServer, api: &mut UserApi, issued: std::time::Instant, age: u64) {
    let offset = crate::support::offset_for_age(issued, age);
    srv.restart_with(&[("TESSERA__TESTING__CLOCK_OFFSET_SECS", &offset)]);
    api.rebase(srv);
}

#[test]
fn step_up_codes_links_and_tokens_work_until_their_lifetime_and_not_after() {
    // A fixed base URL: tokens name it as their issuer, so those from before a restart (on
    // another port) stay the server's own.
    let (smtp, mut srv, mut api, _s) = setup(
        "Step Expiry Co",
        &[
            ("TESSERA__TESTING__FAULT_INJECTION", "true"),
            (
                "TESSERA__SERVER__BASE_URL",
                "https://step-expiry.example.com",
            ),
        ],
    );
    let email = "nadia@example.com";
    const BASE: &str = "https://step-expiry.example.com";
    api.register(email, USER_PASSWORD).expect(200);
    let mail = smtp.wait_for(&api.slug, "verify_email", email, 1);
    let token = mail
        .token_after(&format!("{BASE}/verify-email?token="))
        .unwrap_or_else(|| panic!("no confirmation link in {}", mail.text));
    api.post("/v1/auth/verify-email", &json!({ "token": token }))
        .expect(200);
    // One session for each code, link and token: a session holds one of each at a time.
    let sessions: Vec<UserTokens> = (0..6).map(|_| api.login_ok(email, USER_PASSWORD)).collect();
    let [early_code_s, late_code_s, early_link_s, late_link_s, early_token_s, late_token_s] =
        &sessions[..]
    else {
        unreachable!("six sessions")
    };
    let issued = std::time::Instant::now();
    // Each mail is awaited before the next is asked for: mail goes out concurrently, so the
    // n-th to arrive is the n-th asked for only this way.
    let code_for = |s: &UserTokens, n: usize| {
        initiate(
            &api,
            OTP_INITIATE,
            &s.access,
            &json!({}),
            "n***@example.com",
        );
        mailed_code(&smtp, &api, OTP_KIND, email, n)
    };
    let (early_code, late_code) = (code_for(early_code_s, 1), code_for(late_code_s, 2));
    let link_for = |s: &UserTokens, n: usize| {
        initiate(
            &api,
            LINK_INITIATE,
            &s.access,
            &json!({}),
            "n***@example.com",
        );
        let mail = smtp.wait_for(&api.slug, LINK_KIND, email, n);
        mail.token_after(&format!("{BASE}/step-up/magic-link?token="))
            .unwrap_or_else(|| panic!("no step-up link in {}", mail.text))
    };
    let (early_link, late_link) = (link_for(early_link_s, 1), link_for(late_link_s, 2));
    let token_of = |s: &UserTokens| {
        let r = step_up_password(&api, &s.access, USER_PASSWORD);
        r.expect(200)["step_up_token"]
            .as_str()
            .expect("a step-up token")
            .to_owned()
    };
    let (early_token, late_token) = (token_of(early_token_s), token_of(late_token_s));

    // The e-mail code and the step-up token live 5 minutes.
    age_to(&mut srv, &mut api, issued, 290);
    let r = verify_otp(&api, &early_code_s.access, &early_code);
    assert_eq!(r.status, 200, "an e-mailed code at 4 min 50 s: {}", r.body);
    assert_gate_passes(&api, &early_token_s.access, &early_token);
    age_to(&mut srv, &mut api, issued, 310);
    let r = verify_otp(&api, &late_code_s.access, &late_code);
    assert_eq!(
        (r.status, r.code()),
        (401, EXPIRED),
        "an e-mailed code at 5 min 10 s: {}",
        r.body
    );
    assert_gate_refuses(
        &api,
        &late_token_s.access,
        &late_token,
        "a step-up token at 5 min 10 s",
    );

    // The magic link lives 10 minutes.
    age_to(&mut srv, &mut api, issued, 590);
    let r = verify_link(&api, &early_link_s.access, &early_link);
    assert_eq!(r.status, 200, "a step-up link at 9 min 50 s: {}", r.body);
    age_to(&mut srv, &mut api, issued, 610);
    let r = verify_link(&api, &late_link_s.access, &late_link);
    assert_eq!(
        (r.status, r.code()),
        (401, EXPIRED),
        "a step-up link at 10 min 10 s: {}",
        r.body
    );
}
