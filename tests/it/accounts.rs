//! End-user accounts under `/v1/auth`: registration (and its answers that reveal nothing),
//! e-mail verification over a real SMTP listener, login and its throttle, password change and
//! reset, and the tenant's e-mail policy.

use serde_json::{json, Value};
use time::{format_description::well_known::Rfc3339, OffsetDateTime};

use crate::support::{
    assert_no_mail, assert_none_mailed_since, audit_events, fresh_client_ip, is_uuid, user_setup,
    AuthAnswer, SmtpStub, TestServer, UserApi, UserTokens, NEW_USER_PASSWORD, PASSWORD,
    USER_PASSWORD,
};

const WRONG_PASSWORD: &str = "not the right passphrase";

fn is_timestamp(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| OffsetDateTime::parse(s, &Rfc3339).is_ok())
}

/// A registration answer with the values that legitimately differ (id, created_at, the
/// address itself) replaced by markers; everything else must be byte-for-byte alike.
fn masked(body: &Value) -> Value {
    let mut v = body.clone();
    for key in ["id", "created_at", "email"] {
        if let Some(field) = v["user"].get_mut(key) {
            *field = json!(format!("<{key}>"));
        }
    }
    v
}

/// A password of `len` characters that no strength rule should mind.
fn varied(len: usize) -> String {
    "Tessera quartz 7 jumps over lazy dogs, 42 times; "
        .chars()
        .cycle()
        .take(len)
        .collect()
}

/// The login rejection for the right password while the address is unconfirmed.
fn assert_unverified(a: &AuthAnswer) {
    a.expect_error(403, "auth/email_not_verified");
}

#[test]
fn the_whole_journey_over_smtp() {
    let (smtp, srv, api, _) = user_setup("App Co", &[]);
    let session = srv.login(&api.owner, PASSWORD);

    // Register.
    let r = api.register("Alice@Example.com", USER_PASSWORD);
    let body = r.expect(200).clone();
    let user = &body["user"];
    assert_eq!(user["email"], "alice@example.com", "{body}");
    assert_eq!(user["email_verified"], false);
    assert_eq!(user["is_anonymous"], false);
    assert!(user["id"].as_str().is_some_and(is_uuid), "{body}");
    assert!(is_timestamp(&user["created_at"]), "{body}");
    assert_eq!(body["verification_sent"], true);
    let user_id = user["id"].as_str().unwrap().to_owned();

    // The verification mail comes over SMTP with the link to the accounts URL.
    let mail = smtp.wait_for(&api.slug, "verify_email", "alice@example.com", 1);
    assert_eq!(mail.tenant(), Some(api.slug.as_str()));
    let token = mail
        .token_after(&api.link("verify-email"))
        .unwrap_or_else(|| panic!("no {}<TOKEN> in {}", api.link("verify-email"), mail.text));
    assert!(!mail.text.contains(USER_PASSWORD));

    // Not confirmed yet: the right password is refused with its own code.
    assert_unverified(&api.login("alice@example.com", USER_PASSWORD));

    let r = api.post("/v1/auth/verify-email", &json!({"token": token}));
    assert_eq!(r.expect(200), &json!({"verified": true}));
    // Single use.
    api.post("/v1/auth/verify-email", &json!({"token": token}))
        .expect_error(400, "auth/invalid_or_expired_token");

    // Login.
    let r = api.login("alice@example.com", USER_PASSWORD);
    let first = UserTokens::from_answer(&r);
    assert_eq!(first.body["token_type"], "Bearer");
    let expires_in = first.body["expires_in"].as_u64().expect("expires_in");
    assert!((1..=900).contains(&expires_in), "{expires_in}");
    assert_eq!(first.body["user"]["id"], user_id.as_str());
    assert_eq!(first.body["user"]["email_verified"], true);
    assert_ne!(first.access, first.refresh);

    // The access token verifies as an application verifies it.
    let (header, claims) = api.verify_access(&first.access);
    assert_eq!(header.alg, jsonwebtoken::Algorithm::ES256);
    assert_eq!(header.typ.as_deref(), Some("at+jwt"));
    let kid = header.kid.clone().unwrap();
    assert!(api.jwks()["keys"]
        .as_array()
        .unwrap()
        .iter()
        .any(|k| k["kid"] == kid.as_str()));
    assert_eq!(claims["iss"], api.issuer());
    assert_eq!(claims["iss"], format!("{}/v1/tenants/app-co", srv.base));
    assert_eq!(claims["aud"], api.slug.as_str());
    assert_eq!(claims["sub"], user_id.as_str());
    assert_eq!(claims["tid"], api.tenant_id.as_str());
    assert!(claims["sid"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(claims["jti"].as_str().is_some_and(|s| !s.is_empty()));
    let (iat, exp) = (
        claims["iat"].as_i64().expect("iat"),
        claims["exp"].as_i64().expect("exp"),
    );
    assert_eq!(exp - iat, 900, "access_ttl_secs defaults to 900");
    let now = OffsetDateTime::now_utc().unix_timestamp();
    assert!((iat - now).abs() < 60, "iat {iat} vs now {now}");
    assert_eq!(claims["is_anonymous"], false);
    assert_eq!(claims["aal"], "AAL1");
    assert_eq!(claims["acr"], "aal1");
    assert_eq!(claims["amr"], json!(["pwd"]));

    // /me.
    let me = api.me(&first.access);
    let me = me.expect(200);
    let keys: std::collections::BTreeSet<&str> =
        me.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "id",
            "email",
            "email_verified",
            "phone",
            "phone_verified",
            "is_anonymous",
            "mfa_enabled",
            "created_at",
            "last_sign_in_at",
            "public_metadata"
        ]
        .into_iter()
        .collect(),
        "{me}"
    );
    assert_eq!(me["id"], user_id.as_str());
    assert_eq!(me["email"], "alice@example.com");
    assert_eq!(me["email_verified"], true);
    assert!(me["phone"].is_null());
    assert_eq!(me["phone_verified"], false);
    assert_eq!(me["is_anonymous"], false);
    assert_eq!(me["mfa_enabled"], false);
    assert_eq!(me["created_at"], user["created_at"]);
    assert!(is_timestamp(&me["last_sign_in_at"]), "{me}");
    assert_eq!(me["public_metadata"], json!({}));

    // Refresh: a new pair for the same session.
    let second = UserTokens::from_answer(&api.refresh(&first.refresh));
    assert_ne!(second.refresh, first.refresh);
    assert_ne!(second.access, first.access);
    let (_, claims2) = api.verify_access(&second.access);
    assert_eq!(claims2["sid"], claims["sid"]);
    assert_eq!(claims2["sub"], user_id.as_str());
    assert_ne!(claims2["jti"], claims["jti"]);
    api.me(&second.access).expect(200);

    // Logout ends the session: its refresh token and its access tokens stop working.
    let r = api.logout(&second.access, None);
    r.expect(204);
    let r = api.refresh(&second.refresh);
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(r.code().starts_with("auth/"), "{}", r.body);
    api.me(&second.access)
        .expect_error(401, "auth/invalid_token");

    // Each step is in the tenant's audit log.
    for event in ["auth.register", "auth.login.succeeded", "auth.logout"] {
        assert!(
            !audit_events(&srv, &session, &api.slug, event).is_empty(),
            "no {event} event"
        );
    }
}

#[test]
fn login_needs_a_confirmed_address_and_bad_credentials_look_alike() {
    let (smtp, srv, api, _) = user_setup("App Co", &[]);
    let session = srv.login(&api.owner, PASSWORD);
    api.register("bob@example.com", USER_PASSWORD).expect(200);
    // A wrong password says nothing about the address's state.
    api.login("bob@example.com", WRONG_PASSWORD)
        .expect_error(401, "auth/invalid_credentials");
    assert_unverified(&api.login("bob@example.com", USER_PASSWORD));

    let token = api.verification_token(&smtp, "bob@example.com", 1);
    api.post("/v1/auth/verify-email", &json!({"token": token}))
        .expect(200);
    let tokens = api.login_ok("bob@example.com", USER_PASSWORD);
    assert_eq!(api.me(&tokens.access).expect(200)["email_verified"], true);

    // A wrong password and an unknown address: the same answer, byte for byte.
    let wrong = api.login("bob@example.com", WRONG_PASSWORD);
    let unknown = api.login("nobody@example.com", WRONG_PASSWORD);
    wrong.expect_error(401, "auth/invalid_credentials");
    unknown.expect_error(401, "auth/invalid_credentials");
    assert_eq!(wrong.body, unknown.body);
    assert!(!audit_events(&srv, &session, &api.slug, "auth.login.failed").is_empty());
    assert!(!audit_events(&srv, &session, &api.slug, "auth.login.succeeded").is_empty());
}

#[test]
fn consecutive_failures_block_an_account_or_an_address_even_for_the_right_password() {
    // Five failed sign-ins per client address, so the address's count is reached quickly.
    let (smtp, _srv, api, _) = user_setup(
        "App Co",
        &[("TESSERA__SECURITY__LOGIN_FAILURES_PER_ADDRESS", "5")],
    );
    api.verified_user(&smtp, "carol@example.com", USER_PASSWORD);
    api.verified_user(&smtp, "dave@example.com", USER_PASSWORD);

    // The account: ten failures, each from another address (no address reaches five).
    let mut used = Vec::new();
    for _ in 0..10 {
        let ip = fresh_client_ip();
        api.login_from("carol@example.com", WRONG_PASSWORD, &ip)
            .expect_error(401, "auth/invalid_credentials");
        used.push(ip);
    }
    let blocked = api.login_from("carol@example.com", USER_PASSWORD, &fresh_client_ip());
    blocked.expect_error(429, "auth/too_many_attempts");
    let retry: u64 = blocked
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .expect("Retry-After in seconds");
    assert!(retry >= 1, "{retry}");
    // Still blocked on the next try, whatever the password.
    api.login_from("carol@example.com", USER_PASSWORD, &fresh_client_ip())
        .expect_error(429, "auth/too_many_attempts");
    // The addresses those failures came from are not blocked for another account.
    UserTokens::from_answer(&api.login_from("dave@example.com", USER_PASSWORD, &used[0]));

    // The address: five failures against five accounts (none reaches five on its own).
    for i in 0..5 {
        api.register(&format!("user{i}@example.com"), USER_PASSWORD)
            .expect(200);
    }
    let attacker = fresh_client_ip();
    for i in 0..5 {
        let r = api.login_from(&format!("user{i}@example.com"), WRONG_PASSWORD, &attacker);
        r.expect_error(401, "auth/invalid_credentials");
    }
    api.login_from("dave@example.com", USER_PASSWORD, &attacker)
        .expect_error(429, "auth/too_many_attempts");
    // Dave himself, from elsewhere, is fine.
    UserTokens::from_answer(&api.login_from("dave@example.com", USER_PASSWORD, &fresh_client_ip()));
}

#[test]
fn register_answers_alike_for_new_existing_and_blocked_addresses() {
    let (smtp, srv, api, _) = user_setup("App Co", &[]);
    let session = srv.login(&api.owner, PASSWORD);
    let r = srv.dash(
        "PATCH",
        &format!("/v1/auth/dashboard/tenants/{}/settings/security", api.slug),
        &session,
        Some(&json!({"block_disposable_emails": true})),
    );
    assert_eq!(r.status(), 200);

    // An existing (confirmed) account.
    let owner_tokens = api.verified_user(&smtp, "erin@example.com", USER_PASSWORD);
    let erin_id = owner_tokens.body["user"]["id"].clone();

    let new = api.register("frank@example.com", USER_PASSWORD);
    let existing = api.register("erin@example.com", "someone else's passphrase");
    let blocked = api.register("x@mailinator.com", USER_PASSWORD);
    for (name, a) in [
        ("new", &new),
        ("existing", &existing),
        ("blocked", &blocked),
    ] {
        assert_eq!(a.status, 200, "{name}: {}", a.body);
        assert!(
            a.body["user"]["id"].as_str().is_some_and(is_uuid),
            "{name}: {}",
            a.body
        );
        assert!(
            is_timestamp(&a.body["user"]["created_at"]),
            "{name}: {}",
            a.body
        );
        assert_eq!(
            a.header("content-type"),
            new.header("content-type"),
            "{name}"
        );
    }
    assert_eq!(masked(&new.body), masked(&existing.body));
    assert_eq!(masked(&new.body), masked(&blocked.body));
    assert_eq!(
        masked(&new.body),
        json!({
            "user": {"id": "<id>", "email": "<email>", "email_verified": false,
                     "is_anonymous": false, "created_at": "<created_at>"},
            "verification_sent": true
        })
    );
    assert_eq!(existing.body["user"]["email"], "erin@example.com");
    assert_eq!(blocked.body["user"]["email"], "x@mailinator.com");
    // The existing account's id is not revealed.
    assert_ne!(existing.body["user"]["id"], erin_id);
    assert_ne!(existing.body["user"]["id"], new.body["user"]["id"]);

    // The owner of the existing address is told, with a way to reset the password.
    let mail = smtp.wait_for(&api.slug, "account_exists", "erin@example.com", 1);
    let reset = mail
        .token_after(&api.link("reset-password"))
        .unwrap_or_else(|| panic!("no reset link in {}", mail.text));
    // The new address gets its verification mail; once everything asked so far went out,
    // nothing went to the blocked one.
    smtp.wait_for(&api.slug, "verify_email", "frank@example.com", 1);
    assert_no_mail(&smtp, &srv, &api, &["x@mailinator.com"]);
    assert_eq!(
        smtp.mails_of(&api.slug, "verify_email", "erin@example.com")
            .len(),
        1,
        "the existing account gets no second verification mail"
    );
    // The registration changed nothing for Erin: her password still works...
    api.login_ok("erin@example.com", USER_PASSWORD);
    api.login("erin@example.com", "someone else's passphrase")
        .expect_error(401, "auth/invalid_credentials");
    // ...and the link in the mail is a real reset link.
    let r = api.post(
        "/v1/auth/reset-password",
        &json!({"token": reset, "password": NEW_USER_PASSWORD}),
    );
    assert_eq!(r.expect(200), &json!({"reset": true}));
    api.login_ok("erin@example.com", NEW_USER_PASSWORD);
    assert_eq!(
        audit_events(
            &srv,
            &session,
            &api.slug,
            "auth.register.blocked_disposable"
        )
        .len(),
        1
    );
}

#[test]
fn registration_validates_every_field() {
    let (_smtp, _srv, api, _) = user_setup("App Co", &[]);
    let base = || json!({"email": "val@example.com", "password": USER_PASSWORD, "consent": true});

    // Common passwords, whatever their length.
    for weak in ["password1234", "qwertyuiop123"] {
        let mut b = base();
        b["email"] = json!(format!("weak-{weak}@example.com"));
        b["password"] = json!(weak);
        api.register_body(&b)
            .expect_error(400, "auth/weak_password");
        // Nothing was created: the password reads as wrong, not as unconfirmed.
        api.login_from(
            &format!("weak-{weak}@example.com"),
            weak,
            &fresh_client_ip(),
        )
        .expect_error(401, "auth/invalid_credentials");
    }

    let cases: Vec<(&str, Value)> = vec![
        ("consent", json!(false)),
        ("consent", Value::Null),
        ("consent", json!("true")),
        ("password", json!(varied(11))),
        ("password", json!(varied(129))),
        ("password", Value::Null),
        ("email", json!("not-an-email")),
        ("email", Value::Null),
        ("date_of_birth", json!("2030-01-01")),
        ("date_of_birth", json!("2023-02-30")),
        ("date_of_birth", json!("01-02-2000")),
        ("date_of_birth", json!("")),
        ("age_verification_token", json!("")),
        ("age_verification_token", json!("t".repeat(513))),
    ];
    for (field, value) in cases {
        let mut b = base();
        if value.is_null() {
            b.as_object_mut().unwrap().remove(field);
        } else {
            b[field] = value.clone();
        }
        let r = api.register_body(&b);
        r.expect_error(400, "validation/invalid_request");
        assert!(
            r.body["error"]["details"]["fields"].get(field).is_some(),
            "{field} = {value}: {}",
            r.body
        );
    }
    // The boundaries that are fine.
    let mut b = base();
    b["email"] = json!("dob@example.com");
    b["date_of_birth"] = json!("1990-05-17");
    api.register_body(&b).expect(200);
    let mut b = base();
    b["email"] = json!("short@example.com");
    b["password"] = json!(varied(12));
    api.register_body(&b).expect(200);
    let mut b = base();
    b["email"] = json!("long@example.com");
    b["password"] = json!(varied(128));
    api.register_body(&b).expect(200);

    // Without (or with a wrong) API key: nothing.
    let r = api.send_as(None, "POST", "/v1/auth/register", None, Some(&base()), None);
    r.expect_error(401, "auth/missing_api_key");
    let r = api.send_as(
        Some("tsk_not_a_key"),
        "POST",
        "/v1/auth/register",
        None,
        Some(&base()),
        None,
    );
    assert_eq!(r.status, 401, "{}", r.body);
}

#[test]
fn the_sixth_registration_a_minute_from_one_address_is_limited() {
    let (_smtp, srv, api, _) = user_setup("App Co", &[]);
    let ip = "203.0.113.50";
    let reg = |api: &UserApi, email: &str| {
        api.register_from(
            &json!({"email": email, "password": USER_PASSWORD, "consent": true}),
            ip,
        )
    };
    for i in 0..5 {
        reg(&api, &format!("r{i}@example.com")).expect(200);
    }
    let limited = reg(&api, "r5@example.com");
    limited.expect_error(429, "auth/rate_limited");
    let retry: u64 = limited
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .expect("Retry-After in seconds");
    assert!((1..=60).contains(&retry), "{retry}");
    assert!(
        limited
            .header("x-service-docs")
            .is_some_and(|d| !d.is_empty()),
        "no X-Service-Docs"
    );
    // Another address, and another tenant from the same address, are not limited.
    api.register("r6@example.com", USER_PASSWORD).expect(200);
    let other = UserApi::signup(&srv, "Other App", "other-owner@example.com");
    reg(&other, "r0@example.com").expect(200);
}

#[test]
fn verification_can_be_resent_and_resend_answers_alike_for_anyone() {
    let (smtp, srv, api, _) = user_setup("App Co", &[]);
    api.register("gina@example.com", USER_PASSWORD).expect(200);
    let first = api.verification_token(&smtp, "gina@example.com", 1);
    let resend = |email: &str| api.post("/v1/auth/resend-verification", &json!({"email": email}));
    resend("gina@example.com").expect(202);
    let second = api.verification_token(&smtp, "gina@example.com", 2);
    assert_ne!(first, second);
    resend("ghost@example.com").expect(202);
    api.post("/v1/auth/verify-email", &json!({"token": second}))
        .expect(200);
    api.login_ok("gina@example.com", USER_PASSWORD);
    resend("gina@example.com").expect(202);
    // A token nobody issued.
    api.post(
        "/v1/auth/verify-email",
        &json!({"token": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}),
    )
    .expect_error(400, "auth/invalid_or_expired_token");
    // Once everything asked so far went out, the unknown address got nothing.
    assert_no_mail(&smtp, &srv, &api, &["ghost@example.com"]);
}

#[test]
fn a_password_change_keeps_the_caller_and_ends_every_other_session() {
    let (smtp, srv, api, _) = user_setup("App Co", &[]);
    let session = srv.login(&api.owner, PASSWORD);
    let caller = api.verified_user(&smtp, "ivy@example.com", USER_PASSWORD);
    let other = api.login_ok("ivy@example.com", USER_PASSWORD);
    let change = |current: &str, new: &str| {
        api.send(
            "POST",
            "/v1/auth/change-password",
            Some(&caller.access),
            Some(&json!({"current_password": current, "new_password": new})),
        )
    };

    change(WRONG_PASSWORD, NEW_USER_PASSWORD).expect_error(401, "auth/invalid_credentials");
    change(USER_PASSWORD, "password1234").expect_error(400, "auth/weak_password");
    // Neither refusal changed anything.
    api.me(&other.access).expect(200);
    let r = api.send(
        "POST",
        "/v1/auth/change-password",
        None,
        Some(&json!({"current_password": USER_PASSWORD, "new_password": NEW_USER_PASSWORD})),
    );
    r.expect_error(401, "auth/missing_token");

    assert_eq!(
        change(USER_PASSWORD, NEW_USER_PASSWORD).expect(200),
        &json!({"changed": true})
    );
    // The caller's session goes on, refresh included.
    api.me(&caller.access).expect(200);
    let renewed = UserTokens::from_answer(&api.refresh(&caller.refresh));
    api.me(&renewed.access).expect(200);
    // Every other session is over.
    api.me(&other.access)
        .expect_error(401, "auth/invalid_token");
    assert_eq!(api.refresh(&other.refresh).status, 401);
    // The new password is the password.
    api.login("ivy@example.com", USER_PASSWORD)
        .expect_error(401, "auth/invalid_credentials");
    api.login_ok("ivy@example.com", NEW_USER_PASSWORD);
    smtp.wait_for(&api.slug, "password_changed", "ivy@example.com", 1);
    assert_eq!(
        audit_events(&srv, &session, &api.slug, "auth.password.changed").len(),
        1
    );
}

#[test]
fn a_reset_link_is_single_use_ends_every_session_and_dies_with_a_later_change() {
    let (smtp, srv, api, _) = user_setup("App Co", &[]);
    let session = srv.login(&api.owner, PASSWORD);
    let a = api.verified_user(&smtp, "jack@example.com", USER_PASSWORD);
    let b = api.login_ok("jack@example.com", USER_PASSWORD);
    let forgot = |email: &str| api.post("/v1/auth/forgot-password", &json!({"email": email}));
    let reset = |token: &str, password: &str| {
        api.post(
            "/v1/auth/reset-password",
            &json!({"token": token, "password": password}),
        )
    };

    forgot("ghost@example.com").expect(202);
    forgot("jack@example.com").expect(202);
    let mail = smtp.wait_for(&api.slug, "password_reset", "jack@example.com", 1);
    let token = mail
        .token_after(&api.link("reset-password"))
        .unwrap_or_else(|| panic!("no reset link in {}", mail.text));

    reset(
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        NEW_USER_PASSWORD,
    )
    .expect_error(400, "auth/invalid_or_expired_token");
    assert_eq!(
        reset(&token, NEW_USER_PASSWORD).expect(200),
        &json!({"reset": true})
    );
    // Single use.
    reset(&token, "yet another passphrase").expect_error(400, "auth/invalid_or_expired_token");
    // Every session ended.
    for t in [&a, &b] {
        api.me(&t.access).expect_error(401, "auth/invalid_token");
        assert_eq!(api.refresh(&t.refresh).status, 401);
    }
    api.login("jack@example.com", USER_PASSWORD)
        .expect_error(401, "auth/invalid_credentials");
    let c = api.login_ok("jack@example.com", NEW_USER_PASSWORD);
    assert_eq!(
        audit_events(&srv, &session, &api.slug, "auth.password.reset").len(),
        1
    );

    api.me(&c.access).expect(200);

    // A link issued before a later password change no longer works. (Another account: one
    // address gets at most one reset mail a minute.)
    let d = api.verified_user(&smtp, "jill@example.com", USER_PASSWORD);
    forgot("jill@example.com").expect(202);
    let mail = smtp.wait_for(&api.slug, "password_reset", "jill@example.com", 1);
    let stale = mail.token_after(&api.link("reset-password")).unwrap();
    let r = api.send(
        "POST",
        "/v1/auth/change-password",
        Some(&d.access),
        Some(&json!({"current_password": USER_PASSWORD, "new_password": NEW_USER_PASSWORD})),
    );
    r.expect(200);
    reset(&stale, "yet another passphrase").expect_error(400, "auth/invalid_or_expired_token");
    api.login("jill@example.com", "yet another passphrase")
        .expect_error(401, "auth/invalid_credentials");
    api.login_ok("jill@example.com", NEW_USER_PASSWORD);

    // The unknown address never got mail (checked once everything asked so far went out).
    assert_no_mail(&smtp, &srv, &api, &["ghost@example.com"]);
}

#[test]
fn a_reset_confirms_the_address() {
    let (smtp, _srv, api, _) = user_setup("App Co", &[]);
    api.register("kate@example.com", USER_PASSWORD).expect(200);
    assert_unverified(&api.login("kate@example.com", USER_PASSWORD));
    api.post(
        "/v1/auth/forgot-password",
        &json!({"email": "kate@example.com"}),
    )
    .expect(202);
    let mail = smtp.wait_for(&api.slug, "password_reset", "kate@example.com", 1);
    let token = mail.token_after(&api.link("reset-password")).unwrap();
    api.post(
        "/v1/auth/reset-password",
        &json!({"token": token, "password": NEW_USER_PASSWORD}),
    )
    .expect(200);
    let t = api.login_ok("kate@example.com", NEW_USER_PASSWORD);
    assert_eq!(api.me(&t.access).expect(200)["email_verified"], true);
}

/// Checks the events of `event_type`: `count` of them, none holding `secrets`, each with its
/// metadata.
fn assert_blocked_events(
    srv: &TestServer,
    session: &crate::support::Session,
    slug: &str,
    event_type: &str,
    count: usize,
    secrets: &[&str],
) {
    let events = audit_events(srv, session, slug, event_type);
    assert_eq!(events.len(), count, "{event_type}: {events:?}");
    let text = serde_json::to_string(&events).unwrap().to_lowercase();
    for s in secrets {
        assert!(
            !text.contains(&s.to_lowercase()),
            "{event_type} holds {s}: {text}"
        );
    }
    for e in &events {
        let hash = e["metadata"]["domain_hash"].as_str().unwrap_or("");
        assert!(!hash.is_empty(), "{event_type}: no domain_hash in {e}");
        assert!(
            !e["metadata"]["decision_ref"].is_null(),
            "{event_type}: no decision_ref in {e}"
        );
    }
}

#[test]
fn the_tenant_email_policy_blocks_silently_and_audits() {
    let (smtp, srv, api, _) = user_setup("App Co", &[]);
    let session = srv.login(&api.owner, PASSWORD);
    let settings = format!("/v1/auth/dashboard/tenants/{}/settings", api.slug);
    let r = srv.dash(
        "PATCH",
        &format!("{settings}/security"),
        &session,
        Some(&json!({"block_disposable_emails": true, "block_email_subaddresses": true})),
    );
    assert_eq!(r.status(), 200);
    let r = srv.dash(
        "PUT",
        &format!("{settings}/email-domains"),
        &session,
        Some(&json!({"allowlist": [], "blocklist": ["blocked.example"]})),
    );
    assert_eq!(r.status(), 200);

    let reference = api.register("real@example.com", USER_PASSWORD);
    reference.expect(200);
    api.verification_token(&smtp, "real@example.com", 1);
    let before = smtp.count();
    let blocked = ["x@mailinator.com", "a+b@example.com", "x@blocked.example"];
    for email in blocked {
        let r = api.register(email, USER_PASSWORD);
        assert_eq!(r.status, 200, "{email}: {}", r.body);
        assert_eq!(masked(&r.body), masked(&reference.body), "{email}");
        assert_eq!(r.body["user"]["email"], email);
    }
    // Once everything asked so far went out, nothing went to the blocked ones.
    assert_no_mail(&smtp, &srv, &api, &blocked);
    assert_eq!(
        smtp.count(),
        before + 1,
        "only the caught-up check's own registration got mail"
    );
    for email in blocked {
        // No user either: the password reads as wrong, not as unconfirmed.
        api.login_from(email, USER_PASSWORD, &fresh_client_ip())
            .expect_error(401, "auth/invalid_credentials");
    }
    assert_blocked_events(
        &srv,
        &session,
        &api.slug,
        "auth.register.blocked_disposable",
        1,
        &["x@mailinator.com", "mailinator"],
    );
    assert_blocked_events(
        &srv,
        &session,
        &api.slug,
        "auth.register.blocked_subaddress",
        1,
        &["a+b@example.com", "example.com"],
    );
    assert_blocked_events(
        &srv,
        &session,
        &api.slug,
        "auth.register.blocked_custom_blocklist",
        1,
        &["x@blocked.example", "blocked.example"],
    );
    assert_eq!(
        audit_events(&srv, &session, &api.slug, "auth.register").len(),
        2,
        "blocked attempts are not registrations"
    );

    // An allowlist blocks every other domain, with the same event.
    let r = srv.dash(
        "PUT",
        &format!("{settings}/email-domains"),
        &session,
        Some(&json!({"allowlist": ["allowed.example"], "blocklist": []})),
    );
    assert_eq!(r.status(), 200);
    let before = smtp.count();
    let r = api.register("x@other.example", USER_PASSWORD);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(masked(&r.body), masked(&reference.body));
    api.register("ok@allowed.example", USER_PASSWORD)
        .expect(200);
    api.verification_token(&smtp, "ok@allowed.example", 1);
    // (The policy admits only allowed.example: that mail is the later one.)
    assert_none_mailed_since(&smtp, &srv, &["x@other.example"]);
    assert_eq!(smtp.count(), before + 1);
    api.login_from("x@other.example", USER_PASSWORD, &fresh_client_ip())
        .expect_error(401, "auth/invalid_credentials");
    assert_blocked_events(
        &srv,
        &session,
        &api.slug,
        "auth.register.blocked_custom_blocklist",
        2,
        &["x@other.example", "other.example", "blocked.example"],
    );
}

#[test]
fn mail_queued_when_the_server_dies_goes_out_after_the_restart_unasked() {
    // SMTP is down at first (it greets every connection with 421 and hangs up): the
    // verification mail stays in the tenant's queue. The listener stays bound to the end of
    // the run, so no other test's server is given its port.
    let down_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_port = down_listener.local_addr().unwrap().port().to_string();
    std::thread::spawn(move || {
        for mut conn in down_listener.incoming().flatten() {
            let _ = std::io::Write::write_all(&mut conn, b"421 4.3.2 down for the test\r\n");
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let data_dir = tmp.path().join("data");
    let down = [
        ("TESSERA__MAIL__TRANSPORT", "smtp"),
        ("TESSERA__MAIL__SMTP__HOST", "127.0.0.1"),
        ("TESSERA__MAIL__SMTP__PORT", dead_port.as_str()),
        ("TESSERA__MAIL__SMTP__TLS", "none"),
    ];
    let mut srv = TestServer::start_in(&data_dir, &down);
    let api = UserApi::signup(&srv, "Queue Co", "owner@example.com");
    api.register("queued@example.com", USER_PASSWORD)
        .expect(200);
    srv.kill();

    // Back with a working SMTP server: the message is delivered without any request to the
    // tenant, and its link works.
    let smtp = SmtpStub::start();
    let env = smtp.env();
    let srv = TestServer::start_in(&data_dir, &crate::support::env_refs(&env));
    let mail = smtp.wait_for(&api.slug, "verify_email", "queued@example.com", 1);
    let mut api = api;
    api.rebase(&srv);
    api.post(
        "/v1/auth/verify-email",
        &json!({"token": mail.token().expect("token")}),
    )
    .expect(200);
}

/// Every route that takes an address refuses one the mailer cannot send to, naming the field:
/// `İlice@x.test` is a valid address for a generic checker, but it lowercases to
/// `i̇lice@x.test` (a combining dot above the `i`), which the mailer refuses; registered, it
/// could never be confirmed. Ordinary and internationalised-domain addresses still go the
/// whole way through SMTP.
#[test]
fn addresses_the_mailer_cannot_send_to_are_refused_at_the_request() {
    let (smtp, srv, api, _) = user_setup("App Co", &[]);
    let bad = "İlice@x.test";
    let field_refused = |r: &AuthAnswer, what: &str| {
        r.expect_error(400, "validation/invalid_request");
        assert!(
            r.body["error"]["details"]["fields"].get("email").is_some(),
            "{what}: {}",
            r.body
        );
    };
    field_refused(&api.register(bad, USER_PASSWORD), "register");
    for path in [
        "/v1/auth/resend-verification",
        "/v1/auth/forgot-password",
        "/v1/auth/magic-link",
        "/v1/auth/email-otp",
    ] {
        field_refused(&api.post(path, &json!({"email": bad})), path);
    }
    field_refused(&api.login(bad, USER_PASSWORD), "login");
    let r = AuthAnswer::read(srv.post_json(
        "/v1/onboarding/signup",
        &crate::support::signup_body("Ilice Co", bad),
    ));
    field_refused(&r, "onboarding");
    let session = srv.login(&api.owner, PASSWORD);
    let r = AuthAnswer::read(
        srv.client
            .post(srv.url(&format!("/v1/auth/dashboard/tenants/{}/members", api.slug)))
            .bearer_auth(&session.token)
            .json(&json!({"email": bad, "role": "viewer"}))
            .send()
            .expect("POST members"),
    );
    field_refused(&r, "invitation");

    // What the mailer takes works end to end: an ordinary address, and one whose domain is
    // internationalised (kept, and mailed, punycoded).
    for (given, kept) in [
        ("Ada@Example.com", "ada@example.com"),
        ("ada@BÜCHER.example", "ada@xn--bcher-kva.example"),
    ] {
        let r = api.register(given, USER_PASSWORD);
        assert_eq!(r.expect(200)["user"]["email"], kept, "{given}");
        let token = api.verification_token(&smtp, kept, 1);
        api.post("/v1/auth/verify-email", &json!({"token": token}))
            .expect(200);
        let login = api.login_ok(given, USER_PASSWORD);
        assert_eq!(login.body["user"]["email"], kept, "{given}");
    }
    // The later registrations' mail arrived; once the postman is idle, nothing went to the
    // refused addresses.
    crate::support::wait_for_idle_delivery(&srv, "mail");
    assert!(
        smtp.mails()
            .iter()
            .all(|m| !m.is_to("i̇lice@x.test") && !m.is_to(bad)),
        "nothing was sent to the refused address"
    );
}
