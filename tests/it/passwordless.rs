//! Passwordless login by e-mail: the magic link and the e-mailed one-time code, their answers
//! that reveal nothing about who has an account, the 60-second spacing per address, the tenant
//! toggles, the CAPTCHA on codes, `login_or_create`, single use under concurrency, MFA after a
//! magic link, `oauth_params` with their `resume_binding` and `redirect_to`, and audit events.
//!
//! Every request for a code or a link is spaced 60 s per address: a sub-case that needs another
//! request uses another address.

use std::{sync::Barrier, time::Duration};

use serde_json::{json, Value};

use crate::support::{
    assert_accepted, assert_error, assert_no_mail, assert_sign_in_tokens, audit_events,
    fresh_client_ip, json_keys as keys, mail_caught_up, mailed_code, mailed_link_token,
    name_set as set, other_code, patch_security, signup_body, start_with_mail, user_id,
    user_setup as setup, AuthAnswer, CaptchaStub, Session, TestServer, UserApi, UserTokens,
    USER_PASSWORD,
};

/// The code of every refusal of a wrong, used, unknown or unbound link or code.
const EXPIRED: &str = "invalid_or_expired_token";
const INVALID: &str = "validation/invalid_request";
const DISABLED: &str = "passwordless/disabled";
const CAPTCHA_FAILED: &str = "passwordless/captcha_failed";
const RATE_LIMITED: &str = "auth/rate_limited";

const LINK: &str = "/v1/auth/magic-link";
const LINK_VERIFY: &str = "/v1/auth/magic-link/verify";
const OTP: &str = "/v1/auth/email-otp";
const OTP_VERIFY: &str = "/v1/auth/email-otp/verify";

const LINK_KIND: &str = "magic_link";
const OTP_KIND: &str = "email_otp";

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// `POST path` with the tenant's API key, from an address of its own.
fn post(api: &UserApi, path: &str, body: &Value) -> AuthAnswer {
    api.post_as(path, None, body)
}

fn request_link(api: &UserApi, email: &str) -> AuthAnswer {
    post(api, LINK, &json!({ "email": email }))
}

fn request_otp(api: &UserApi, email: &str) -> AuthAnswer {
    post(api, OTP, &json!({ "email": email }))
}

fn request_otp_mode(api: &UserApi, email: &str, mode: &str) -> AuthAnswer {
    post(api, OTP, &json!({ "email": email, "mode": mode }))
}

fn verify_link(api: &UserApi, token: &str) -> AuthAnswer {
    post(api, LINK_VERIFY, &json!({ "token": token }))
}

fn verify_otp(api: &UserApi, email: &str, code: &str) -> AuthAnswer {
    post(api, OTP_VERIFY, &json!({ "email": email, "code": code }))
}

/// Asserts the 202 answer of a request with `oauth_params`; answers its `resume_binding`.
#[track_caller]
fn accepted_binding(a: &AuthAnswer, what: &str) -> String {
    assert_eq!(a.status, 202, "{what}: {}", a.body);
    assert_eq!(
        keys(&a.body),
        set(&["accepted", "resume_binding"]),
        "{what}: {}",
        a.body
    );
    assert_eq!(a.body["accepted"], true, "{what}: {}", a.body);
    let binding = a.body["resume_binding"]
        .as_str()
        .unwrap_or_else(|| panic!("{what}: resume_binding is no string: {}", a.body));
    assert_eq!(binding.chars().count(), 43, "{what}: {binding:?}");
    binding.to_owned()
}

/// Asserts `429 auth/rate_limited` with a `Retry-After` of 1 to 60 seconds; answers it.
#[track_caller]
fn assert_rate_limited(a: &AuthAnswer, what: &str) -> u64 {
    assert_eq!(
        (a.status, a.code()),
        (429, RATE_LIMITED),
        "{what}: {}",
        a.body
    );
    let retry: u64 = a
        .header("retry-after")
        .unwrap_or_else(|| panic!("{what}: no Retry-After"))
        .parse()
        .unwrap_or_else(|e| panic!("{what}: Retry-After is not seconds: {e}"));
    assert!((1..=60).contains(&retry), "{what}: Retry-After {retry}");
    retry
}

/// Asserts two refusals say the same (code, message and the shape of their details).
#[track_caller]
fn assert_same_refusal(a: &AuthAnswer, b: &AuthAnswer) {
    assert_eq!(a.code(), b.code());
    assert_eq!(
        a.body["error"]["message"], b.body["error"]["message"],
        "{} vs {}",
        a.body, b.body
    );
    assert_eq!(
        a.body["error"]["details"].is_null(),
        b.body["error"]["details"].is_null(),
        "{} vs {}",
        a.body,
        b.body
    );
}

/// Asserts a passwordless token pair (see [`assert_sign_in_tokens`]) whose refresh token then
/// works like any other.
#[track_caller]
fn passwordless_tokens(
    api: &UserApi,
    a: &AuthAnswer,
    user_id: Option<&str>,
    amr: Value,
    redirect_to: Option<&str>,
) -> UserTokens {
    let t = assert_sign_in_tokens(api, a, user_id, amr, redirect_to);
    // The refresh token works like any other.
    UserTokens::from_answer(&api.refresh(&t.refresh));
    t
}

/// Registers `email` (not confirmed); answers the user id.
#[track_caller]
fn unverified_user(api: &UserApi, email: &str) -> String {
    let r = api.register(email, USER_PASSWORD);
    r.expect(200)["user"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no user id in {}", r.body))
        .to_owned()
}

/// The tenant's events of `event_type` whose `metadata.method` is `method`.
fn method_events(
    srv: &TestServer,
    s: &Session,
    slug: &str,
    event_type: &str,
    method: &str,
) -> Vec<Value> {
    audit_events(srv, s, slug, event_type)
        .into_iter()
        .filter(|e| e["metadata"]["method"] == method)
        .collect()
}

/// Complete `oauth_params`, sent with their keys in alphabetical order (not the order of the
/// `redirect_to` query) and with values that need encoding.
fn full_oauth_params() -> Value {
    json!({
        "client_id": "webapp",
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstwcM",
        "code_challenge_method": "S256",
        "nonce": "n0nce",
        "redirect_uri": "http://localhost:3000/cb",
        "resource": "https://api/v1",
        "response_type": "code",
        "scope": "openid",
        "state": "a/b=c&d",
    })
}

/// The `redirect_to` of `full_oauth_params`.
fn full_redirect_to(api: &UserApi) -> String {
    format!(
        "{}/v1/tenants/{}/oauth/authorize?client_id=webapp\
         &redirect_uri=http%3A%2F%2Flocalhost%3A3000%2Fcb\
         &response_type=code\
         &code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstwcM\
         &code_challenge_method=S256\
         &scope=openid\
         &state=a%2Fb%3Dc%26d\
         &nonce=n0nce\
         &resource=https%3A%2F%2Fapi%2Fv1",
        api.base, api.slug
    )
}

/// A 43-character binding that is not `binding`.
fn other_binding(binding: &str) -> String {
    let b = "B".repeat(43);
    if b == binding {
        "C".repeat(43)
    } else {
        b
    }
}

/// Signs a tenant up on a server that verifies CAPTCHAs (with the stub's good token).
pub(crate) fn signup_with_captcha(srv: &TestServer, tenant: &str, owner: &str) -> UserApi {
    let mut body = signup_body(tenant, owner);
    body["turnstile_token"] = json!("good");
    let r = srv.post_json("/v1/onboarding/signup", &body);
    assert_eq!(r.status(), 201, "signup with a CAPTCHA");
    let body: Value = r.json().expect("signup body");
    UserApi::from_signup(srv, &body, owner)
}

// ---------------------------------------------------------------------------------------------
// Magic link
// ---------------------------------------------------------------------------------------------

#[test]
fn a_magic_link_logs_in_once_and_confirms_the_address() {
    let (smtp, srv, api, s) = setup("Link Co", &[]);
    let email = "bob@example.com";
    let uid = unverified_user(&api, email);
    api.login_from(email, USER_PASSWORD, &fresh_client_ip())
        .expect_error(403, "auth/email_not_verified");

    assert_accepted(&request_link(&api, email), "magic link");
    let token = mailed_link_token(&smtp, &api, LINK_KIND, "magic-link", email, 1);
    assert!(!token.is_empty() && token.len() <= 512, "{token}");

    // Without oauth_params a resume_binding is ignored, and there is no redirect_to.
    let r = post(
        &api,
        LINK_VERIFY,
        &json!({ "token": token, "resume_binding": "whatever" }),
    );
    let t = passwordless_tokens(&api, &r, Some(&uid), json!(["mca"]), None);
    let me = api.me(&t.access);
    assert_eq!(me.expect(200)["id"], uid.as_str());
    assert_eq!(me.body["email"], email);
    assert_eq!(me.body["email_verified"], true, "{}", me.body);

    // Single use.
    assert_error(&verify_link(&api, &token), 401, EXPIRED, "second use");

    // The address is confirmed by its owner: the password set by whoever registered it
    // unconfirmed is dropped (pre-registration hijack), so it no longer signs in.
    api.login_from(email, USER_PASSWORD, &fresh_client_ip())
        .expect_error(401, "auth/invalid_credentials");

    let events = method_events(&srv, &s, &api.slug, "auth.login.succeeded", "magic_link");
    assert_eq!(events.len(), 1, "{events:?}");
}

#[test]
fn a_magic_link_logs_a_confirmed_user_in() {
    let (smtp, _srv, api, _s) = setup("Known Co", &[]);
    let email = "vera@example.com";
    let t0 = api.verified_user(&smtp, email, USER_PASSWORD);
    // The address compares without regard to case.
    assert_accepted(&request_link(&api, "Vera@Example.COM"), "magic link");
    let token = mailed_link_token(&smtp, &api, LINK_KIND, "magic-link", email, 1);
    let t = passwordless_tokens(
        &api,
        &verify_link(&api, &token),
        Some(&user_id(&t0)),
        json!(["mca"]),
        None,
    );
    assert_ne!(t.sid(), t0.sid(), "a new session");
    assert_eq!(api.me(&t.access).expect(200)["email_verified"], true);
}

#[test]
fn requests_look_alike_for_known_and_unknown_addresses() {
    let (smtp, srv, api, _s) = setup("Same Co", &[]);
    let known = "kara@example.com";
    let unknown = "nobody@example.com";
    api.verified_user(&smtp, known, USER_PASSWORD);

    // Magic link.
    let a_unknown = request_link(&api, unknown);
    let a_known = request_link(&api, known);
    assert_accepted(&a_unknown, "unknown address");
    assert_accepted(&a_known, "known address");
    assert_eq!(a_unknown.body, a_known.body);
    mailed_link_token(&smtp, &api, LINK_KIND, "magic-link", known, 1);
    assert_no_mail(&smtp, &srv, &api, &[unknown]);

    // A second request within 60 s: the same refusal for both, whatever the case.
    let r_unknown = request_link(&api, unknown);
    let r_known = request_link(&api, known);
    assert_rate_limited(&r_unknown, "unknown address again");
    assert_rate_limited(&r_known, "known address again");
    assert_same_refusal(&r_unknown, &r_known);
    assert_rate_limited(&request_link(&api, "KARA@example.com"), "known, upper case");
    assert_rate_limited(
        &request_link(&api, "NoBody@Example.com"),
        "unknown, upper case",
    );

    // E-mail OTP: counted apart from the magic link, alike for both, a code only to the known.
    let o_unknown = request_otp(&api, unknown);
    let o_known = request_otp(&api, known);
    assert_accepted(&o_unknown, "OTP to the unknown address");
    assert_accepted(&o_known, "OTP to the known address");
    assert_eq!(o_unknown.body, o_known.body);
    mailed_code(&smtp, &api, OTP_KIND, known, 1);
    assert_no_mail(&smtp, &srv, &api, &[unknown]);
    let r_unknown = request_otp(&api, unknown);
    let r_known = request_otp(&api, known);
    assert_rate_limited(&r_unknown, "OTP, unknown address again");
    assert_rate_limited(&r_known, "OTP, known address again");
    assert_same_refusal(&r_unknown, &r_known);
    assert_rate_limited(
        &request_otp_mode(&api, "Kara@Example.com", "login_or_create"),
        "OTP, known, upper case, login_or_create",
    );
    // Still one magic link and one code.
    assert_eq!(smtp.mails_of(&api.slug, LINK_KIND, known).len(), 1);
    assert_eq!(smtp.mails_of(&api.slug, OTP_KIND, known).len(), 1);
}

/// The three routes that answer 202 whatever the address answer the same status, headers and
/// body for an address with an account and one without (their timing is compared in
/// `bench/`, `probe timing`).
#[test]
fn the_202_answers_are_alike_for_known_and_unknown_addresses() {
    let (smtp, _srv, api, _s) = setup("Alike Co", &[]);
    let known = "lena@example.com";
    api.verified_user(&smtp, known, USER_PASSWORD);
    let header_names = |a: &AuthAnswer| {
        let mut names: Vec<String> = a
            .headers
            .keys()
            .map(|k| k.as_str().to_owned())
            .filter(|k| k != "date" && k != "x-request-id")
            .collect();
        names.sort();
        names
    };
    for path in [LINK, OTP, "/v1/auth/forgot-password"] {
        let k = post(&api, path, &json!({ "email": known }));
        let u = post(
            &api,
            path,
            &json!({ "email": format!("nobody-{}@example.com", path.len()) }),
        );
        assert_accepted(&k, path);
        assert_accepted(&u, path);
        assert_eq!(header_names(&k), header_names(&u), "{path}");
        for h in ["content-type", "content-length"] {
            assert_eq!(k.header(h), u.header(h), "{path}: {h}");
        }
    }
    // Each went only where there is an account.
    mailed_link_token(&smtp, &api, LINK_KIND, "magic-link", known, 1);
    mailed_code(&smtp, &api, OTP_KIND, known, 1);
    smtp.wait_for(&api.slug, "password_reset", known, 1);
}

#[test]
fn magic_link_requests_and_verifies_are_validated() {
    let (_smtp, _srv, api, _s) = setup("Valid Co", &[]);
    for (i, bad) in [
        json!({}),
        json!({ "email": "" }),
        json!({ "email": "not-an-address" }),
        json!({ "email": "two@@example.com" }),
        json!({ "email": 12 }),
        json!({ "email": null }),
    ]
    .iter()
    .enumerate()
    {
        assert_error(&post(&api, LINK, bad), 400, INVALID, &format!("#{i} {bad}"));
    }

    for (i, bad) in [
        json!({}),
        json!({ "token": "" }),
        json!({ "token": "t".repeat(513) }),
        json!({ "token": 12 }),
        json!({ "token": "abc", "resume_binding": "r".repeat(65) }),
        json!({ "token": "abc", "resume_binding": 7 }),
    ]
    .iter()
    .enumerate()
    {
        assert_error(
            &post(&api, LINK_VERIFY, bad),
            400,
            INVALID,
            &format!("verify #{i}"),
        );
    }
    for garbage in [
        "garbage".to_owned(),
        "A".repeat(43),
        "t".repeat(512),
        "unknown".to_owned(),
    ] {
        assert_error(&verify_link(&api, &garbage), 401, EXPIRED, &garbage);
    }
    // A resume_binding of 64 characters is well-formed.
    let r = post(
        &api,
        LINK_VERIFY,
        &json!({ "token": "A".repeat(43), "resume_binding": "r".repeat(64) }),
    );
    assert_error(&r, 401, EXPIRED, "64-character binding");
}

#[test]
fn a_magic_link_of_another_tenant_is_not_found() {
    let (smtp, srv) = start_with_mail(&[]);
    let a = UserApi::signup(&srv, "Aye Co", "owner-a@example.com");
    let b = UserApi::signup(&srv, "Bee Co", "owner-b@example.com");
    let email = "alice@example.com";
    a.verified_user(&smtp, email, USER_PASSWORD);
    b.verified_user(&smtp, email, USER_PASSWORD);

    assert_accepted(&request_link(&a, email), "magic link of A");
    let token = mailed_link_token(&smtp, &a, LINK_KIND, "magic-link", email, 1);
    let r = verify_link(&b, &token);
    assert_eq!(r.status, 404, "A's link with B's API key: {}", r.body);
}

#[test]
fn a_magic_link_for_a_user_with_mfa_asks_for_the_second_factor() {
    let (smtp, _srv, api, _s) = setup("Mfa Link Co", &[]);
    let email = "mia@example.com";
    let t0 = api.verified_user(&smtp, email, USER_PASSWORD);
    let uid = user_id(&t0);
    let mfa = api.enable_mfa(&t0.access);

    assert_accepted(&request_link(&api, email), "magic link");
    let token = mailed_link_token(&smtp, &api, LINK_KIND, "magic-link", email, 1);
    let r = verify_link(&api, &token);
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
    let challenge = body["mfa_challenge_token"]
        .as_str()
        .expect("mfa_challenge_token")
        .to_owned();
    // The link is used up by the challenge.
    assert_error(&verify_link(&api, &token), 401, EXPIRED, "link again");

    let r = api.mfa_verify(&challenge, &mfa.totp.at_step(mfa.step + 1), None);
    let t = UserTokens::from_answer(&r);
    let (_, claims) = api.verify_access(&t.access);
    assert_eq!(claims["sub"], uid.as_str(), "{claims}");
    assert_eq!(claims["aal"], "AAL2", "{claims}");
    assert_eq!(claims["acr"], "aal2", "{claims}");
    assert_eq!(claims["amr"], json!(["mca", "otp"]), "{claims}");
}

#[test]
fn an_oauth_flow_resumes_after_the_second_factor() {
    let (smtp, _srv, api, _s) = setup("Mfa Resume Co", &[]);
    let email = "max@example.com";
    let t0 = api.verified_user(&smtp, email, USER_PASSWORD);
    let mfa = api.enable_mfa(&t0.access);

    let binding = accepted_binding(
        &post(
            &api,
            LINK,
            &json!({ "email": email, "oauth_params": full_oauth_params() }),
        ),
        "magic link with oauth_params",
    );
    let token = mailed_link_token(&smtp, &api, LINK_KIND, "magic-link", email, 1);
    // The first step checks the binding and asks for the second factor: no flow yet.
    let r = post(
        &api,
        LINK_VERIFY,
        &json!({ "token": token, "resume_binding": binding }),
    );
    let body = r.expect(200);
    assert_eq!(body["mfa_required"], true, "{body}");
    assert!(body.get("redirect_to").is_none(), "{body}");
    let challenge = body["mfa_challenge_token"]
        .as_str()
        .expect("mfa_challenge_token")
        .to_owned();
    // The second factor signs in and resumes the flow the link was asked with.
    let r = api.mfa_verify(&challenge, &mfa.totp.at_step(mfa.step + 1), None);
    assert_eq!(
        r.expect(200)["redirect_to"],
        full_redirect_to(&api),
        "{}",
        r.body
    );
    let t = UserTokens::from_answer(&r);
    let (_, claims) = api.verify_access(&t.access);
    assert_eq!(claims["amr"], json!(["mca", "otp"]), "{claims}");
    // A password login's MFA step resumes nothing.
    let challenge = api.mfa_challenge(email, USER_PASSWORD);
    let r = api.mfa_verify(&challenge, &mfa.recovery_codes[0], None);
    assert!(r.expect(200).get("redirect_to").is_none(), "{}", r.body);
}

// ---------------------------------------------------------------------------------------------
// The tenant's toggles
// ---------------------------------------------------------------------------------------------

#[test]
fn each_toggle_turns_its_own_method_off() {
    let (smtp, srv, api, s) = setup("Toggle Co", &[]);
    let email = "tia@example.com";
    api.verified_user(&smtp, email, USER_PASSWORD);

    // A link asked for while the method is on...
    assert_accepted(&request_link(&api, email), "magic link");
    let token = mailed_link_token(&smtp, &api, LINK_KIND, "magic-link", email, 1);
    let out = patch_security(&srv, &s, &api.slug, json!({"magic_link_enabled": false}));
    assert_eq!(out["magic_link_enabled"], false, "{out}");
    // ...is refused once it is off, and so is any new request.
    assert_error(
        &verify_link(&api, &token),
        403,
        DISABLED,
        "verify while off",
    );
    assert_error(
        &request_link(&api, "other@example.com"),
        403,
        DISABLED,
        "request while off",
    );
    assert_error(
        &request_link(&api, "never-seen@example.com"),
        403,
        DISABLED,
        "request for an unknown address while off",
    );
    // The e-mail code is still on.
    assert_accepted(&request_otp(&api, email), "OTP with the magic link off");
    mailed_code(&smtp, &api, OTP_KIND, email, 1);

    let out = patch_security(
        &srv,
        &s,
        &api.slug,
        json!({"magic_link_enabled": true, "email_otp_enabled": false}),
    );
    assert_eq!(out["email_otp_enabled"], false, "{out}");
    for (addr, mode) in [
        ("third@example.com", None),
        ("fourth@example.com", Some("login_or_create")),
        ("fifth@example.com", Some("login")),
    ] {
        let mut body = json!({ "email": addr });
        if let Some(m) = mode {
            body["mode"] = json!(m);
        }
        assert_error(&post(&api, OTP, &body), 403, DISABLED, addr);
    }
    // The magic link is back on.
    assert_accepted(
        &request_link(&api, "sixth@example.com"),
        "magic link on again",
    );
}

// ---------------------------------------------------------------------------------------------
// E-mail OTP
// ---------------------------------------------------------------------------------------------

#[test]
fn an_email_otp_logs_in_once_and_confirms_the_address() {
    let (smtp, srv, api, s) = setup("Otp Co", &[]);
    let email = "olga@example.com";
    let uid = unverified_user(&api, email);

    // A CAPTCHA token is ignored without a CAPTCHA provider.
    let r = post(
        &api,
        OTP,
        &json!({ "email": email, "mode": "login", "captcha_token": "anything" }),
    );
    assert_accepted(&r, "OTP");
    let code = mailed_code(&smtp, &api, OTP_KIND, email, 1);

    assert_error(
        &verify_otp(&api, email, &other_code(&code)),
        401,
        EXPIRED,
        "a wrong code",
    );
    let t = passwordless_tokens(
        &api,
        &verify_otp(&api, email, &code),
        Some(&uid),
        json!(["otp"]),
        None,
    );
    let me = api.me(&t.access);
    assert_eq!(me.expect(200)["email_verified"], true, "{}", me.body);
    assert_error(&verify_otp(&api, email, &code), 401, EXPIRED, "used code");
    // The unconfirmed account's password is dropped once the owner proves the address.
    api.login_from(email, USER_PASSWORD, &fresh_client_ip())
        .expect_error(401, "auth/invalid_credentials");

    // `login` mails nothing to an address without an account, and nothing can be verified.
    let unknown = "ghost@example.com";
    assert_accepted(&request_otp(&api, unknown), "OTP to an unknown address");
    assert_no_mail(&smtp, &srv, &api, &[unknown]);
    assert_error(
        &verify_otp(&api, unknown, "123456"),
        401,
        EXPIRED,
        "unknown address",
    );
    let r = api.login_from(unknown, USER_PASSWORD, &fresh_client_ip());
    r.expect_error(401, "auth/invalid_credentials");

    // An account with no pending code.
    let idle = "idle@example.com";
    api.verified_user(&smtp, idle, USER_PASSWORD);
    assert_error(&verify_otp(&api, idle, "123456"), 401, EXPIRED, "no code");

    let events = method_events(&srv, &s, &api.slug, "auth.login.succeeded", "email_otp");
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(method_events(&srv, &s, &api.slug, "auth.register", "email_otp").is_empty());
}

#[test]
fn login_or_create_makes_the_account_only_at_verify() {
    let (smtp, srv, api, s) = setup("Create Co", &[]);
    let email = "newbie@example.com";

    let r = request_otp_mode(&api, email, "login_or_create");
    assert_accepted(&r, "login_or_create");
    let code = mailed_code(&smtp, &api, OTP_KIND, email, 1);
    // No account yet.
    api.login_from(email, USER_PASSWORD, &fresh_client_ip())
        .expect_error(401, "auth/invalid_credentials");
    assert!(method_events(&srv, &s, &api.slug, "auth.register", "email_otp").is_empty());

    let t = passwordless_tokens(
        &api,
        &verify_otp(&api, email, &code),
        None,
        json!(["otp"]),
        None,
    );
    let me = api.me(&t.access);
    let me = me.expect(200);
    assert_eq!(me["id"], user_id(&t).as_str(), "{me}");
    assert_eq!(me["email"], email, "{me}");
    assert_eq!(me["email_verified"], true, "{me}");
    assert_eq!(me["is_anonymous"], false, "{me}");
    assert_error(&verify_otp(&api, email, &code), 401, EXPIRED, "used code");

    // An existing account: login_or_create logs it in and creates nothing.
    let known = "known@example.com";
    let t0 = api.verified_user(&smtp, known, USER_PASSWORD);
    assert_accepted(
        &request_otp_mode(&api, known, "login_or_create"),
        "login_or_create, existing",
    );
    let code = mailed_code(&smtp, &api, OTP_KIND, known, 1);
    passwordless_tokens(
        &api,
        &verify_otp(&api, known, &code),
        Some(&user_id(&t0)),
        json!(["otp"]),
        None,
    );

    let created = method_events(&srv, &s, &api.slug, "auth.register", "email_otp");
    assert_eq!(created.len(), 1, "{created:?}");
    let logins = method_events(&srv, &s, &api.slug, "auth.login.succeeded", "email_otp");
    assert_eq!(logins.len(), 2, "{logins:?}");
}

#[test]
fn login_or_create_obeys_the_tenants_email_policy() {
    let (smtp, srv, api, s) = setup("Policy Co", &[]);
    patch_security(
        &srv,
        &s,
        &api.slug,
        json!({ "block_email_subaddresses": true }),
    );
    let r = srv.dash(
        "PUT",
        &format!(
            "/v1/auth/dashboard/tenants/{}/settings/email-domains",
            api.slug
        ),
        &s,
        Some(&json!({ "allowlist": [], "blocklist": ["blocked.example"] })),
    );
    assert_eq!(r.status(), 200);

    // Refused addresses answer like any other, get nothing, and leave only the audit event.
    for (email, event) in [
        (
            "eve@blocked.example",
            "auth.register.blocked_custom_blocklist",
        ),
        ("eve+x@example.com", "auth.register.blocked_subaddress"),
    ] {
        assert_accepted(&request_otp_mode(&api, email, "login_or_create"), email);
        let events = audit_events(&srv, &s, &api.slug, event);
        assert_eq!(events.len(), 1, "{email}: {events:?}");
        assert!(
            !events[0].to_string().contains("eve"),
            "the event must not carry the address: {}",
            events[0]
        );
        assert_error(&verify_otp(&api, email, "123456"), 401, EXPIRED, email);
    }
    // An allowed address in the same tenant still gets its code.
    let ok = "fine@example.com";
    assert_accepted(&request_otp_mode(&api, ok, "login_or_create"), ok);
    mailed_code(&smtp, &api, OTP_KIND, ok, 1);
    assert_no_mail(
        &smtp,
        &srv,
        &api,
        &["eve@blocked.example", "eve+x@example.com"],
    );
}

#[test]
fn email_otp_requests_and_verifies_are_validated() {
    let (_smtp, _srv, api, _s) = setup("Shape Co", &[]);
    for (i, bad) in [
        json!({}),
        json!({ "email": "" }),
        json!({ "email": "not-an-address" }),
        json!({ "email": 12 }),
        json!({ "email": "m1@example.com", "mode": "signup" }),
        json!({ "email": "m2@example.com", "mode": "" }),
        json!({ "email": "m3@example.com", "mode": "LOGIN" }),
        json!({ "email": "m4@example.com", "mode": 1 }),
    ]
    .iter()
    .enumerate()
    {
        assert_error(&post(&api, OTP, bad), 400, INVALID, &format!("#{i} {bad}"));
    }
    for (i, bad) in [
        json!({ "email": "v@example.com", "code": "12345" }),
        json!({ "email": "v@example.com", "code": "1234567" }),
        json!({ "email": "v@example.com", "code": "abcdef" }),
        json!({ "email": "v@example.com", "code": "12345a" }),
        json!({ "email": "v@example.com", "code": "" }),
        json!({ "email": "v@example.com", "code": 123456 }),
        json!({ "email": "v@example.com" }),
        json!({ "code": "123456" }),
    ]
    .iter()
    .enumerate()
    {
        assert_error(
            &post(&api, OTP_VERIFY, bad),
            400,
            INVALID,
            &format!("verify #{i} {bad}"),
        );
    }
}

#[test]
fn five_wrong_codes_kill_an_email_otp() {
    let (smtp, _srv, api, _s) = setup("Kill Co", &[]);
    let email = "kim@example.com";
    api.verified_user(&smtp, email, USER_PASSWORD);
    assert_accepted(&request_otp(&api, email), "OTP");
    let code = mailed_code(&smtp, &api, OTP_KIND, email, 1);
    let wrong = other_code(&code);
    let ip = fresh_client_ip();
    let from_ip = |code: &str| {
        let body = json!({ "email": email, "code": code });
        api.send_as(
            Some(&api.api_key),
            "POST",
            OTP_VERIFY,
            None,
            Some(&body),
            Some(&ip),
        )
    };
    for i in 0..5 {
        assert_error(
            &from_ip(&wrong),
            401,
            EXPIRED,
            &format!("wrong code #{}", i + 1),
        );
    }
    // Five wrong codes from one client are five failed logins of the address from there: that
    // pair is blocked for a while...
    let r = from_ip(&code);
    r.expect_error(429, "auth/too_many_attempts");
    let retry: u64 = r
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .expect("seconds");
    std::thread::sleep(Duration::from_millis(retry * 1000 + 500));
    // ...and once it is over, the code is dead.
    assert_error(
        &verify_otp(&api, email, &code),
        401,
        EXPIRED,
        "the right code after five wrong ones",
    );
}

/// A correct code sent twenty times at once (a double submit, many tabs) logs in once; the
/// others find it used, and a used code is no guess: nothing is counted against the address,
/// whose password login still works.
#[test]
fn twenty_concurrent_verifies_of_one_email_otp_log_in_once_and_lock_nothing() {
    let (smtp, _srv, api, _s) = setup("Race Co", &[]);
    let email = "rosa@example.com";
    let uid = user_id(&api.verified_user(&smtp, email, USER_PASSWORD));
    assert_accepted(&request_otp(&api, email), "OTP");
    let code = mailed_code(&smtp, &api, OTP_KIND, email, 1);

    let barrier = Barrier::new(20);
    let answers: Vec<AuthAnswer> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..20)
            .map(|_| {
                sc.spawn(|| {
                    barrier.wait();
                    verify_otp(&api, email, &code)
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
    // The others find the code used, and none of them counts as a failed login.
    for a in answers.iter().filter(|a| a.status != 200) {
        assert_error(a, 401, EXPIRED, "a loser of the race");
    }
    passwordless_tokens(&api, won[0], Some(&uid), json!(["otp"]), None);
    // The same code later is still a used code, and still no guess.
    for _ in 0..6 {
        assert_error(
            &verify_otp(&api, email, &code),
            401,
            EXPIRED,
            "the code again",
        );
    }
    let login = api.login_ok(email, USER_PASSWORD);
    assert_eq!(user_id(&login), uid);
}

#[test]
fn email_otp_needs_a_captcha_when_the_server_verifies_them() {
    let stub = CaptchaStub::start();
    let (smtp, srv) = start_with_mail(&[
        ("TESSERA__CAPTCHA__PROVIDER", "turnstile"),
        ("TESSERA__CAPTCHA__SECRET", "stub-secret"),
        ("TESSERA__CAPTCHA__VERIFY_URL", &stub.url),
    ]);
    let api = signup_with_captcha(&srv, "Human Co", "owner@example.com");
    let known = ["c1@example.com", "c2@example.com", "c3@example.com"];
    for email in known {
        unverified_user(&api, email);
    }

    assert_error(
        &request_otp(&api, known[0]),
        400,
        CAPTCHA_FAILED,
        "no captcha_token",
    );
    let r = post(
        &api,
        OTP,
        &json!({ "email": known[1], "captcha_token": "bad" }),
    );
    assert_error(&r, 400, CAPTCHA_FAILED, "a refused captcha_token");
    let r = post(
        &api,
        OTP,
        &json!({ "email": "c4@example.com", "mode": "login_or_create" }),
    );
    assert_error(&r, 400, CAPTCHA_FAILED, "login_or_create, no captcha_token");
    // (The registrations mailed their verification links; no code went out.)
    mail_caught_up(&smtp, &srv, &api);
    for email in [known[0], known[1], "c4@example.com"] {
        let codes = smtp.mails_of(&api.slug, OTP_KIND, email);
        assert!(codes.is_empty(), "a code went to {email}: {codes:?}");
    }

    let r = post(
        &api,
        OTP,
        &json!({ "email": known[2], "captcha_token": "good" }),
    );
    assert_accepted(&r, "a good captcha_token");
    let code = mailed_code(&smtp, &api, OTP_KIND, known[2], 1);
    passwordless_tokens(
        &api,
        &verify_otp(&api, known[2], &code),
        None,
        json!(["otp"]),
        None,
    );
    let r = post(
        &api,
        OTP,
        &json!({ "email": "c5@example.com", "mode": "login_or_create", "captcha_token": "good" }),
    );
    assert_accepted(&r, "login_or_create with a good captcha_token");
    mailed_code(&smtp, &api, OTP_KIND, "c5@example.com", 1);

    // The magic link takes no CAPTCHA.
    assert_accepted(&request_link(&api, known[0]), "magic link");
    mailed_link_token(&smtp, &api, LINK_KIND, "magic-link", known[0], 1);
}

// ---------------------------------------------------------------------------------------------
// oauth_params and resume_binding
// ---------------------------------------------------------------------------------------------

#[test]
fn oauth_params_are_validated_in_both_flows() {
    let (_smtp, _srv, api, _s) = setup("Params Co", &[]);
    let ok = || json!({"client_id": "webapp", "redirect_uri": "https://app.example.com/cb"});
    let mut bad: Vec<(String, Value)> = vec![
        ("a string".into(), json!("client_id=webapp")),
        ("an array".into(), json!([])),
        (
            "no client_id".into(),
            json!({"redirect_uri": "https://app.example.com/cb"}),
        ),
        ("no redirect_uri".into(), json!({"client_id": "webapp"})),
    ];
    let mut with = |what: &str, key: &str, v: Value| {
        let mut p = ok();
        p[key] = v;
        bad.push((what.to_owned(), p));
    };
    with("empty client_id", "client_id", json!(""));
    with("client_id of 257", "client_id", json!("c".repeat(257)));
    with("numeric client_id", "client_id", json!(12));
    with("relative redirect_uri", "redirect_uri", json!("/cb"));
    with("redirect_uri no URL", "redirect_uri", json!("not a url"));
    with(
        "ftp redirect_uri",
        "redirect_uri",
        json!("ftp://app.example.com/cb"),
    );
    with("numeric state", "state", json!(5));
    with("array scope", "scope", json!(["openid"]));
    with("boolean nonce", "nonce", json!(true));
    with("state of 2049", "state", json!("s".repeat(2049)));
    with("scope of 2049", "scope", json!("s".repeat(2049)));
    with("resource of 2049", "resource", json!("r".repeat(2049)));
    with(
        "code_challenge of 2049",
        "code_challenge",
        json!("c".repeat(2049)),
    );

    for (i, (what, params)) in bad.iter().enumerate() {
        // Each case on an address of its own: no spacing can answer first.
        let r = post(
            &api,
            LINK,
            &json!({ "email": format!("l{i}@example.com"), "oauth_params": params }),
        );
        assert_error(&r, 400, INVALID, &format!("magic link, {what}"));
        let r = post(
            &api,
            OTP,
            &json!({ "email": format!("o{i}@example.com"), "oauth_params": params }),
        );
        assert_error(&r, 400, INVALID, &format!("e-mail OTP, {what}"));
    }

    // The edges that are fine: client_id of 256, strings of 2048, an http redirect_uri.
    let mut edge = ok();
    edge["client_id"] = json!("c".repeat(256));
    edge["redirect_uri"] = json!("http://localhost:8000/callback");
    edge["state"] = json!("s".repeat(2048));
    edge["scope"] = json!("openid");
    let r = post(
        &api,
        LINK,
        &json!({ "email": "edge@example.com", "oauth_params": edge }),
    );
    accepted_binding(&r, "magic link at the edges");
    let r = post(
        &api,
        OTP,
        &json!({ "email": "edge@example.com", "oauth_params": edge }),
    );
    accepted_binding(&r, "e-mail OTP at the edges");
    // Unknown addresses get the same answer shape, with a binding of their own.
    let a = post(
        &api,
        LINK,
        &json!({ "email": "who1@example.com", "oauth_params": ok() }),
    );
    let b = post(
        &api,
        LINK,
        &json!({ "email": "who2@example.com", "oauth_params": ok() }),
    );
    assert_ne!(
        accepted_binding(&a, "unknown #1"),
        accepted_binding(&b, "unknown #2")
    );
}

#[test]
fn a_magic_link_with_oauth_params_needs_its_binding_and_answers_redirect_to() {
    let (smtp, srv, api, s) = setup("Resume Co", &[]);
    let email = "rita@example.com";
    let uid = user_id(&api.verified_user(&smtp, email, USER_PASSWORD));

    let r = post(
        &api,
        LINK,
        &json!({ "email": email, "oauth_params": full_oauth_params() }),
    );
    let binding = accepted_binding(&r, "magic link with oauth_params");
    let token = mailed_link_token(&smtp, &api, LINK_KIND, "magic-link", email, 1);

    // Without the binding, or with another: refused, and the link is not used up.
    assert_error(&verify_link(&api, &token), 401, EXPIRED, "no binding");
    let r = post(
        &api,
        LINK_VERIFY,
        &json!({ "token": token, "resume_binding": other_binding(&binding) }),
    );
    assert_error(&r, 401, EXPIRED, "another binding");
    let r = post(
        &api,
        LINK_VERIFY,
        &json!({ "token": token, "resume_binding": "" }),
    );
    assert!(
        (r.status, r.code()) == (401, EXPIRED) || (r.status, r.code()) == (400, INVALID),
        "an empty binding: {} {}",
        r.status,
        r.body
    );

    let r = post(
        &api,
        LINK_VERIFY,
        &json!({ "token": token, "resume_binding": binding }),
    );
    let expected = full_redirect_to(&api);
    passwordless_tokens(&api, &r, Some(&uid), json!(["mca"]), Some(&expected));
    let r = post(
        &api,
        LINK_VERIFY,
        &json!({ "token": token, "resume_binding": binding }),
    );
    assert_error(&r, 401, EXPIRED, "the link again, with its binding");

    // Only the required parameters: the others are left out of redirect_to.
    let email2 = "rudi@example.com";
    let uid2 = user_id(&api.verified_user(&smtp, email2, USER_PASSWORD));
    let r = post(
        &api,
        LINK,
        &json!({
            "email": email2,
            "oauth_params": {"redirect_uri": "https://app.example.com/cb", "client_id": "c1"},
        }),
    );
    let binding = accepted_binding(&r, "minimal oauth_params");
    let token = mailed_link_token(&smtp, &api, LINK_KIND, "magic-link", email2, 1);
    let r = post(
        &api,
        LINK_VERIFY,
        &json!({ "token": token, "resume_binding": binding }),
    );
    let expected = format!(
        "{}/v1/tenants/{}/oauth/authorize?client_id=c1&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcb",
        srv.base, api.slug
    );
    passwordless_tokens(&api, &r, Some(&uid2), json!(["mca"]), Some(&expected));

    let events = method_events(&srv, &s, &api.slug, "auth.login.succeeded", "magic_link");
    assert_eq!(events.len(), 2, "{events:?}");
}

#[test]
fn an_email_otp_with_oauth_params_needs_its_binding_and_answers_redirect_to() {
    let (smtp, _srv, api, _s) = setup("Resume Otp Co", &[]);
    let email = "otto@example.com";
    let uid = user_id(&api.verified_user(&smtp, email, USER_PASSWORD));

    let r = post(
        &api,
        OTP,
        &json!({ "email": email, "oauth_params": full_oauth_params() }),
    );
    let binding = accepted_binding(&r, "e-mail OTP with oauth_params");
    let code = mailed_code(&smtp, &api, OTP_KIND, email, 1);

    assert_error(&verify_otp(&api, email, &code), 401, EXPIRED, "no binding");
    let r = post(
        &api,
        OTP_VERIFY,
        &json!({ "email": email, "code": code, "resume_binding": other_binding(&binding) }),
    );
    assert_error(&r, 401, EXPIRED, "another binding");

    let r = post(
        &api,
        OTP_VERIFY,
        &json!({ "email": email, "code": code, "resume_binding": binding }),
    );
    let expected = full_redirect_to(&api);
    passwordless_tokens(&api, &r, Some(&uid), json!(["otp"]), Some(&expected));
    let r = post(
        &api,
        OTP_VERIFY,
        &json!({ "email": email, "code": code, "resume_binding": binding }),
    );
    assert_error(&r, 401, EXPIRED, "the code again, with its binding");

    // login_or_create with oauth_params: the new account comes with its redirect_to.
    let fresh = "fresh@example.com";
    let r = post(
        &api,
        OTP,
        &json!({
            "email": fresh,
            "mode": "login_or_create",
            "oauth_params": {"client_id": "c2", "redirect_uri": "https://app.example.com/cb", "state": "xyz"},
        }),
    );
    let binding = accepted_binding(&r, "login_or_create with oauth_params");
    let code = mailed_code(&smtp, &api, OTP_KIND, fresh, 1);
    let r = post(
        &api,
        OTP_VERIFY,
        &json!({ "email": fresh, "code": code, "resume_binding": binding }),
    );
    let expected = format!(
        "{}/v1/tenants/{}/oauth/authorize?client_id=c2&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcb&state=xyz",
        api.base, api.slug
    );
    let t = passwordless_tokens(&api, &r, None, json!(["otp"]), Some(&expected));
    assert_eq!(api.me(&t.access).expect(200)["email"], fresh);
}

/// Codes and links live ten minutes: each still works 30 s before its end and is refused 30 s
/// after it (on the server's offset clock, moved by restarts).
#[test]
fn links_and_codes_work_until_ten_minutes_and_not_after() {
    let (smtp, mut srv, mut api, _s) = setup(
        "Expiry Mail Co",
        &[("TESSERA__TESTING__FAULT_INJECTION", "true")],
    );
    let (early, late) = ("early@example.com", "late@example.com");
    let (early_linked, late_linked) = ("early-link@example.com", "late-link@example.com");
    unverified_user(&api, early_linked);
    unverified_user(&api, late_linked);
    let issued = std::time::Instant::now();
    assert_accepted(&request_otp_mode(&api, early, "login_or_create"), early);
    assert_accepted(&request_otp_mode(&api, late, "login_or_create"), late);
    assert_accepted(&request_link(&api, early_linked), early_linked);
    assert_accepted(&request_link(&api, late_linked), late_linked);
    let early_code = mailed_code(&smtp, &api, OTP_KIND, early, 1);
    let late_code = mailed_code(&smtp, &api, OTP_KIND, late, 1);
    let early_token = mailed_link_token(&smtp, &api, LINK_KIND, "magic-link", early_linked, 1);
    let late_token = mailed_link_token(&smtp, &api, LINK_KIND, "magic-link", late_linked, 1);

    // 9 min 30 s on, the code and the link still work.
    let offset = crate::support::offset_for_age(issued, 570);
    srv.restart_with(&[("TESSERA__TESTING__CLOCK_OFFSET_SECS", &offset)]);
    api.rebase(&srv);
    let r = verify_otp(&api, early, &early_code);
    assert_eq!(r.status, 200, "a code at 9 min 30 s: {}", r.body);
    let r = verify_link(&api, &early_token);
    assert_eq!(r.status, 200, "a link at 9 min 30 s: {}", r.body);

    // 10 min 30 s on, neither does.
    srv.restart_with(&[("TESSERA__TESTING__CLOCK_OFFSET_SECS", "630")]);
    api.rebase(&srv);
    assert_error(
        &verify_otp(&api, late, &late_code),
        401,
        EXPIRED,
        "a code at 10 min 30 s",
    );
    assert_error(
        &verify_link(&api, &late_token),
        401,
        EXPIRED,
        "a link at 10 min 30 s",
    );
}
