//! Passkeys through the real binary, with real WebAuthn objects from the software
//! authenticator of `tessera_testkit::webauthn`: registration behind the step-up gate, username-less
//! and by-handle sign-in (claims checked against the JWKS), origins and relying parties,
//! replays and concurrent finishes, the passkey step-up with and without user verification,
//! clone detection, management, the relying-party id change, and other tenants' ceremonies.

use std::sync::Barrier;

use serde_json::{json, Value};

use tessera_testkit::webauthn::SoftAuthenticator;

use crate::support::{
    audit_events, b64url, fresh_client_ip, password_step_up, user_setup, AuthAnswer, Session,
    SmtpStub, TestServer, UserApi, UserTokens, STEP_UP_HEADER, USER_PASSWORD,
};

const RP_ID: &str = "app.example";
pub(crate) const ORIGIN: &str = "https://app.example";
const DEV_ORIGIN: &str = "http://localhost:5173";

const REGISTER_BEGIN: &str = "/v1/auth/passkeys/register/begin";
const REGISTER_FINISH: &str = "/v1/auth/passkeys/register/finish";
const ASSERT_BEGIN: &str = "/v1/auth/passkeys/assert/begin";
const ASSERT_FINISH: &str = "/v1/auth/passkeys/assert/finish";
const STEP_UP_OPTIONS: &str = "/v1/auth/step-up/passkey/options";
const STEP_UP_VERIFY: &str = "/v1/auth/step-up/passkey/verify";
const MY_PASSKEYS: &str = "/v1/users/me/passkeys";

const INVALID_ASSERTION: &str = "passkey/invalid_assertion";
const NO_CEREMONY: &str = "passkey/ceremony_not_found";

/// A server with mail, one tenant whose relying party is `app.example` (plus the
/// development origin), its owner's session.
fn setup(tenant: &str) -> (SmtpStub, TestServer, UserApi, Session) {
    // Five failed sign-ins per client address, so the address's count is reached quickly.
    let (smtp, srv, api, s) = user_setup(
        tenant,
        &[("TESSERA__SECURITY__LOGIN_FAILURES_PER_ADDRESS", "5")],
    );
    let r = put_domain(
        &srv,
        &s,
        &api,
        &json!({"passkey_rp_id": RP_ID, "passkey_origins": [DEV_ORIGIN]}),
        None,
    );
    assert_eq!(r.0, 200, "{}", r.1);
    (smtp, srv, api, s)
}

pub(crate) fn put_domain(
    srv: &TestServer,
    s: &Session,
    api: &UserApi,
    body: &Value,
    confirm: Option<&str>,
) -> (u16, Value) {
    let mut req = srv
        .client
        .put(srv.url(&format!(
            "/v1/auth/dashboard/tenants/{}/settings/passkey-domain",
            api.slug
        )))
        .bearer_auth(&s.token)
        .json(body);
    if let Some(c) = confirm {
        req = req.header("x-service-confirm", c);
    }
    let r = req.send().expect("request");
    let status = r.status().as_u16();
    (status, r.json().unwrap_or(Value::Null))
}

fn post(api: &UserApi, path: &str, bearer: Option<&str>, body: &Value) -> AuthAnswer {
    api.post_as(path, bearer, body)
}

/// A passkey step-up token of `user`'s session, from `auth`.
fn passkey_step_up(api: &UserApi, user: &UserTokens, auth: &mut SoftAuthenticator) -> AuthAnswer {
    let options = post(api, STEP_UP_OPTIONS, Some(&user.access), &json!({}));
    let options = options.expect(200)["publicKey"].clone();
    let assertion = auth.get(&options, ORIGIN).expect("assertion");
    step_up_verify(api, &user.access, &assertion)
}

fn step_up_verify(api: &UserApi, bearer: &str, assertion: &Value) -> AuthAnswer {
    post(
        api,
        STEP_UP_VERIFY,
        Some(bearer),
        &json!({ "assertion": assertion }),
    )
}

/// Registration options for `user`, past the gate with a password step-up.
fn register_options(api: &UserApi, user: &UserTokens) -> Value {
    let token = password_step_up(api, user, USER_PASSWORD);
    let r = api.send_with(
        "POST",
        REGISTER_BEGIN,
        Some(&user.access),
        Some(&json!({})),
        &[(STEP_UP_HEADER, &token)],
    );
    r.expect(200)["publicKey"].clone()
}

/// Registers a passkey of `auth` for `user` from `origin`; answers the finish.
pub(crate) fn register_from(
    api: &UserApi,
    user: &UserTokens,
    auth: &mut SoftAuthenticator,
    origin: &str,
    nickname: Option<&str>,
) -> AuthAnswer {
    let options = register_options(api, user);
    let credential = auth.create(&options, origin).expect("credential");
    let mut body = json!({ "response": credential });
    if let Some(n) = nickname {
        body["nickname"] = json!(n);
    }
    post(api, REGISTER_FINISH, Some(&user.access), &body)
}

/// Sign-in options, with a user handle or without.
fn sign_in_options(api: &UserApi, user_handle: Option<&str>) -> Value {
    let body = match user_handle {
        Some(h) => json!({ "user_handle": h }),
        None => json!({}),
    };
    post(api, ASSERT_BEGIN, None, &body).expect(200)["publicKey"].clone()
}

fn finish(api: &UserApi, assertion: &Value) -> AuthAnswer {
    post(api, ASSERT_FINISH, None, &json!({ "response": assertion }))
}

/// A whole username-less sign-in with `auth` from `origin`.
pub(crate) fn sign_in(api: &UserApi, auth: &mut SoftAuthenticator, origin: &str) -> AuthAnswer {
    let options = sign_in_options(api, None);
    let assertion = auth.get(&options, origin).expect("assertion");
    finish(api, &assertion)
}

/// Gives `user` a device-bound passkey under `app.example` (setting the tenant's relying
/// party to it) and signs in with it once, so the passkey has a use record beside it: for the
/// tests of what holds a user's data.
pub(crate) fn passkey_used_once(
    srv: &TestServer,
    s: &Session,
    api: &UserApi,
    user: &UserTokens,
) -> SoftAuthenticator {
    let r = put_domain(srv, s, api, &json!({"passkey_rp_id": RP_ID}), None);
    assert_eq!(r.0, 200, "{}", r.1);
    let mut key = SoftAuthenticator::device_bound();
    register_from(api, user, &mut key, ORIGIN, None).expect(201);
    verified_claims(api, &sign_in(api, &mut key, ORIGIN));
    key
}

/// The kinds (hex) of the tenant's records whose key or value names `needle`, by the admin
/// CLI's `user traces`.
fn kinds_naming(srv: &TestServer, api: &UserApi, needle: &str) -> Vec<String> {
    let out = srv.admin(&["user", "traces", "--tenant", &api.slug, needle], "");
    let kinds: std::collections::BTreeSet<String> = out.json()["traces"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["kind"].as_str().map(str::to_owned))
        .collect();
    kinds.into_iter().collect()
}

/// The claims of a token pair's access token, verified with the JWKS.
#[track_caller]
fn verified_claims(api: &UserApi, a: &AuthAnswer) -> Value {
    let body = a.expect(200);
    let access = body["access_token"].as_str().expect("access_token");
    api.verify_access(access).1
}

fn user_handle(user: &UserTokens) -> String {
    let id: uuid::Uuid = user.claims()["sub"]
        .as_str()
        .expect("sub")
        .parse()
        .expect("uuid");
    b64url(id.as_bytes())
}

#[test]
fn a_passkey_registers_behind_the_gate_and_signs_in_with_and_without_a_user_handle() {
    let (smtp, srv, api, s) = setup("Key Co");
    let email = "ada@example.com";
    let user = api.verified_user(&smtp, email, USER_PASSWORD);

    // The gate first: no step-up token, the RFC 9470 challenge; no passkey yet to offer.
    let r = post(&api, REGISTER_BEGIN, Some(&user.access), &json!({}));
    r.expect_error(401, "account_linking/mfa_required");
    assert!(r.header("www-authenticate").is_some(), "{}", r.body);
    assert_eq!(
        r.body["error"]["details"]["available_methods"],
        json!(["email_otp", "magic_link", "password"]),
        "{}",
        r.body
    );

    // The options: this tenant's relying party, a resident key, UV preferred, no
    // attestation, the user's id as the handle, nothing excluded yet.
    let options = register_options(&api, &user);
    assert_eq!(options["rp"]["id"], RP_ID, "{options}");
    assert_eq!(options["rp"]["name"], "Key Co", "{options}");
    assert_eq!(
        options["user"]["id"],
        user_handle(&user).as_str(),
        "{options}"
    );
    assert_eq!(options["user"]["name"], email, "{options}");
    let selection = &options["authenticatorSelection"];
    assert_eq!(selection["residentKey"], "required", "{options}");
    assert_eq!(selection["requireResidentKey"], true, "{options}");
    assert_eq!(selection["userVerification"], "preferred", "{options}");
    assert_eq!(options["attestation"], "none", "{options}");
    assert_eq!(options["excludeCredentials"], json!([]), "{options}");

    let mut laptop = SoftAuthenticator::device_bound();
    let credential = laptop.create(&options, ORIGIN).expect("credential");
    let r = post(
        &api,
        REGISTER_FINISH,
        Some(&user.access),
        &json!({"response": credential, "nickname": "Laptop"}),
    );
    let record = r.expect(201).clone();
    assert_eq!(record["nickname"], "Laptop", "{record}");
    assert_eq!(record["backup_eligible"], false, "{record}");
    assert_eq!(record["backed_up"], false, "{record}");
    assert_eq!(record["suspected_clone"], false, "{record}");
    assert_eq!(
        record["transports"],
        json!(["internal", "hybrid"]),
        "{record}"
    );
    assert_eq!(
        record["aaguid"],
        uuid::Uuid::from_bytes(*b"tessera-test-key").to_string(),
        "{record}"
    );
    assert!(record["last_used_at"].is_null(), "{record}");

    // The same ceremony twice: gone after its first finish.
    let again = post(
        &api,
        REGISTER_FINISH,
        Some(&user.access),
        &json!({"response": credential}),
    );
    again.expect_error(404, NO_CEREMONY);

    // The next registration excludes it, and the authenticator refuses to make another.
    let options = register_options(&api, &user);
    assert_eq!(
        options["excludeCredentials"][0]["id"],
        b64url(&laptop.credentials[0].id).as_str(),
        "{options}"
    );
    assert!(laptop.create(&options, ORIGIN).is_err());

    // Username-less: no allowCredentials, user verification required.
    let options = sign_in_options(&api, None);
    assert_eq!(options["rpId"], RP_ID, "{options}");
    assert_eq!(options["allowCredentials"], json!([]), "{options}");
    assert_eq!(options["userVerification"], "required", "{options}");
    let assertion = laptop.get(&options, ORIGIN).expect("assertion");
    let signed = finish(&api, &assertion);
    let claims = verified_claims(&api, &signed);
    assert_eq!(claims["sub"], user.claims()["sub"], "{claims}");
    assert_eq!(claims["aal"], "AAL2", "{claims}");
    assert_eq!(claims["acr"], "aal2", "{claims}");
    assert_eq!(claims["amr"], json!(["hwk"]), "{claims}");
    let me = api.me(signed.body["access_token"].as_str().expect("access"));
    assert_eq!(me.expect(200)["email"], email);

    // A replayed assertion: its ceremony is used up.
    finish(&api, &assertion).expect_error(404, NO_CEREMONY);

    // By user handle: the user's credential is the one allowed.
    let options = sign_in_options(&api, Some(&user_handle(&user)));
    assert_eq!(
        options["allowCredentials"][0]["id"],
        b64url(&laptop.credentials[0].id).as_str(),
        "{options}"
    );
    let assertion = laptop.get(&options, ORIGIN).expect("assertion");
    verified_claims(&api, &finish(&api, &assertion));

    // An unknown handle gets options alike: one credential id, which nobody holds.
    let unknown = b64url(uuid::Uuid::new_v4().as_bytes());
    let options = sign_in_options(&api, Some(&unknown));
    assert_eq!(
        options["allowCredentials"].as_array().map(Vec::len),
        Some(1),
        "{options}"
    );
    assert!(laptop.get(&options, ORIGIN).is_err());

    // A credential answers only for its own user: under another user's handle, without a
    // user handle in a username-less sign-in, or with someone else's handle in it.
    let bob = api.verified_user(&smtp, "bob@example.com", USER_PASSWORD);
    let mut bobs_key = SoftAuthenticator::synced();
    register_from(&api, &bob, &mut bobs_key, ORIGIN, None).expect(201);
    let options = sign_in_options(&api, Some(&user_handle(&bob)));
    let challenge = options["challenge"].as_str().expect("challenge");
    let assertion = laptop.assert_with(0, challenge, ORIGIN).expect("assertion");
    finish(&api, &assertion).expect_error(401, INVALID_ASSERTION);
    let options = sign_in_options(&api, None);
    let mut assertion = laptop.get(&options, ORIGIN).expect("assertion");
    assertion["response"]
        .as_object_mut()
        .expect("response")
        .remove("userHandle");
    finish(&api, &assertion).expect_error(401, INVALID_ASSERTION);
    let options = sign_in_options(&api, None);
    let mut assertion = laptop.get(&options, ORIGIN).expect("assertion");
    assertion["response"]["userHandle"] = json!(user_handle(&bob));
    finish(&api, &assertion).expect_error(401, INVALID_ASSERTION);

    // Origins: a subdomain of the RP id and the listed development origin pass; another
    // site does not, nor a signature for another RP id.
    verified_claims(
        &api,
        &sign_in(&api, &mut laptop, "https://login.app.example"),
    );
    verified_claims(&api, &sign_in(&api, &mut laptop, DEV_ORIGIN));
    sign_in(&api, &mut laptop, "https://app.example.evil.test")
        .expect_error(401, INVALID_ASSERTION);
    sign_in(&api, &mut laptop, "http://localhost:5174").expect_error(401, INVALID_ASSERTION);
    laptop.rp_id_override = Some("evil.example".into());
    sign_in(&api, &mut laptop, ORIGIN).expect_error(401, INVALID_ASSERTION);
    laptop.rp_id_override = None;

    // The sign-ins are in the audit log, with the method; so is the registration.
    let events = audit_events(&srv, &s, &api.slug, "auth.login.succeeded");
    let by_passkey = events
        .iter()
        .filter(|e| e["metadata"]["method"] == "passkey")
        .count();
    assert_eq!(by_passkey, 4, "{events:?}");
    let registered = audit_events(&srv, &s, &api.slug, "auth.passkey.registered");
    assert_eq!(registered.len(), 2, "ada's and bob's: {registered:?}");
    assert!(
        registered
            .iter()
            .any(|e| e["metadata"]["passkey_id"] == record["id"]
                && e["metadata"]["user_id"] == user.claims()["sub"]),
        "{registered:?}"
    );
    let failed: Vec<Value> = audit_events(&srv, &s, &api.slug, "auth.login.failed")
        .into_iter()
        .filter(|e| e["metadata"]["method"] == "passkey")
        .collect();
    assert_eq!(failed.len(), 6, "{failed:?}");
    let wrong_user = failed
        .iter()
        .filter(|e| e["metadata"]["reason"] == "wrong_user")
        .count();
    assert_eq!(wrong_user, 3, "{failed:?}");

    // The export names it (never its key); the user detail counts it.
    let token = password_step_up(&api, &user, USER_PASSWORD);
    let export = api.send_with(
        "GET",
        "/v1/users/me/export",
        Some(&user.access),
        None,
        &[(STEP_UP_HEADER, &token)],
    );
    let export = export.expect(200).clone();
    assert_eq!(
        export["identities"]["passkeys"][0]["id"], record["id"],
        "{export}"
    );
    assert_eq!(export["factors"]["passkeys"], 1, "{export}");
    assert!(!export.to_string().contains("\"cred\""), "{export}");

    // The list; and the gate now offers the passkey first.
    let list = api.send_with("GET", MY_PASSKEYS, Some(&user.access), None, &[]);
    let passkeys = list.expect(200)["passkeys"].clone();
    assert_eq!(passkeys.as_array().map(Vec::len), Some(1), "{passkeys}");
    assert!(passkeys[0]["last_used_at"].is_string(), "{passkeys}");
    let r = post(&api, REGISTER_BEGIN, Some(&user.access), &json!({}));
    assert_eq!(
        r.body["error"]["details"]["available_methods"],
        json!(["passkey", "email_otp", "magic_link", "password"]),
        "{}",
        r.body
    );
}

#[test]
fn a_synced_passkey_signs_in_as_swk_and_management_is_gated() {
    let (smtp, srv, api, s) = setup("Sync Co");
    let user = api.verified_user(&smtp, "bo@example.com", USER_PASSWORD);
    let mut phone = SoftAuthenticator::synced();
    let record = register_from(&api, &user, &mut phone, ORIGIN, None);
    let record = record.expect(201).clone();
    assert_eq!(record["backup_eligible"], true, "{record}");
    assert_eq!(record["backed_up"], true, "{record}");
    assert!(record["nickname"].is_null(), "{record}");
    // Synced passkeys count nothing: a zero counter twice is no clone.
    for _ in 0..2 {
        let claims = verified_claims(&api, &sign_in(&api, &mut phone, ORIGIN));
        assert_eq!(claims["amr"], json!(["swk"]), "{claims}");
    }

    let id = record["id"].as_str().expect("id");
    // Used, it is the credential, its index entry, its use record and audit events.
    assert_eq!(kinds_naming(&srv, &api, id), ["41", "52", "53", "71"]);
    let path = format!("{MY_PASSKEYS}/{id}");
    // Rename and delete need a step-up; a nickname is 1-64 characters.
    api.send_with(
        "PATCH",
        &path,
        Some(&user.access),
        Some(&json!({"nickname": "Phone"})),
        &[],
    )
    .expect_error(401, "account_linking/mfa_required");
    api.send_with("DELETE", &path, Some(&user.access), None, &[])
        .expect_error(401, "account_linking/mfa_required");
    for bad in [
        json!({"nickname": ""}),
        json!({"nickname": "x".repeat(65)}),
        json!({}),
    ] {
        api.send_with("PATCH", &path, Some(&user.access), Some(&bad), &[])
            .expect_error(400, "validation/invalid_request");
    }
    // The passkey's own step-up passes the gate.
    let token = passkey_step_up(&api, &user, &mut phone);
    let token = token.expect(200)["step_up_token"]
        .as_str()
        .expect("token")
        .to_owned();
    let renamed = api.send_with(
        "PATCH",
        &path,
        Some(&user.access),
        Some(&json!({"nickname": "Phone"})),
        &[(STEP_UP_HEADER, &token)],
    );
    assert_eq!(renamed.expect(200)["nickname"], "Phone", "{}", renamed.body);

    // Another user's passkey is not found, even with a good step-up.
    let other = api.verified_user(&smtp, "cy@example.com", USER_PASSWORD);
    let token = password_step_up(&api, &other, USER_PASSWORD);
    api.send_with(
        "DELETE",
        &path,
        Some(&other.access),
        None,
        &[(STEP_UP_HEADER, &token)],
    )
    .expect_error(404, "resource/not_found");

    let token = password_step_up(&api, &user, USER_PASSWORD);
    let r = api.send_with(
        "DELETE",
        &path,
        Some(&user.access),
        None,
        &[(STEP_UP_HEADER, &token)],
    );
    assert_eq!(r.status, 204, "{}", r.body);
    // Nothing of it is left but the audit events that name it.
    assert_eq!(kinds_naming(&srv, &api, id), ["41"]);
    // A deleted passkey signs nobody in.
    sign_in(&api, &mut phone, ORIGIN).expect_error(401, INVALID_ASSERTION);
    let list = api.send_with("GET", MY_PASSKEYS, Some(&user.access), None, &[]);
    assert_eq!(list.expect(200)["passkeys"], json!([]));

    for event in ["auth.passkey.renamed", "auth.passkey.deleted"] {
        let events = audit_events(&srv, &s, &api.slug, event);
        assert_eq!(events.len(), 1, "{event}: {events:?}");
        assert_eq!(events[0]["metadata"]["passkey_id"], id, "{event}");
    }
}

#[test]
fn passkey_step_up_is_aal2_and_refused_without_user_verification() {
    let (smtp, srv, api, s) = setup("Step Co");
    let user = api.verified_user(&smtp, "di@example.com", USER_PASSWORD);
    // Nothing to step up with yet.
    post(&api, STEP_UP_OPTIONS, Some(&user.access), &json!({}))
        .expect_error(400, "step_up/method_unavailable");
    let mut key = SoftAuthenticator::device_bound();
    register_from(&api, &user, &mut key, ORIGIN, Some("Key")).expect(201);

    let options = post(&api, STEP_UP_OPTIONS, Some(&user.access), &json!({}));
    let options = options.expect(200)["publicKey"].clone();
    assert_eq!(options["userVerification"], "required", "{options}");
    assert_eq!(
        options["allowCredentials"][0]["id"],
        b64url(&key.credentials[0].id).as_str(),
        "{options}"
    );
    let issued = audit_events(&srv, &s, &api.slug, "auth.step_up_passkey_options_issued");
    assert_eq!(issued.len(), 1, "{issued:?}");

    // Without user verification: refused, nothing issued, and the options are used up.
    key.verifies_user = false;
    let assertion = key.get(&options, ORIGIN).expect("assertion");
    step_up_verify(&api, &user.access, &assertion).expect_error(401, "passkey/step_up_required");
    step_up_verify(&api, &user.access, &assertion).expect_error(401, "invalid_or_expired_token");
    // Nor does a sign-in without user verification get in.
    sign_in(&api, &mut key, ORIGIN).expect_error(401, INVALID_ASSERTION);

    key.verifies_user = true;
    // New options replace the session's earlier ones.
    let first = post(&api, STEP_UP_OPTIONS, Some(&user.access), &json!({}));
    let stale = key
        .get(&first.expect(200)["publicKey"], ORIGIN)
        .expect("assertion");
    let r = passkey_step_up(&api, &user, &mut key);
    step_up_verify(&api, &user.access, &stale).expect_error(401, "invalid_or_expired_token");
    let body = r.expect(200);
    let token = body["step_up_token"].as_str().expect("token");
    let (_, claims) = api.verify_step_up(token);
    assert_eq!(claims["aal"], 2, "{claims}");
    assert_eq!(claims["acr"], "aal2", "{claims}");
    assert_eq!(claims["amr"], json!(["hwk"]), "{claims}");
    assert_eq!(claims["sid"], user.sid().as_str(), "{claims}");

    // Another session of the same user cannot answer this session's options.
    let other = api.login_ok("di@example.com", USER_PASSWORD);
    let options = post(&api, STEP_UP_OPTIONS, Some(&user.access), &json!({}));
    let assertion = key
        .get(&options.expect(200)["publicKey"], ORIGIN)
        .expect("assertion");
    step_up_verify(&api, &other.access, &assertion).expect_error(401, "invalid_or_expired_token");

    // A malformed assertion is a field error.
    step_up_verify(&api, &user.access, &json!({"id": "x"}))
        .expect_error(400, "validation/invalid_request");
}

#[test]
fn twenty_finishes_of_one_ceremony_sign_in_once() {
    let (smtp, _srv, api, _s) = setup("Race Co");
    let user = api.verified_user(&smtp, "ed@example.com", USER_PASSWORD);
    let mut key = SoftAuthenticator::synced();
    register_from(&api, &user, &mut key, ORIGIN, None).expect(201);
    let options = sign_in_options(&api, None);
    let assertion = key.get(&options, ORIGIN).expect("assertion");
    let barrier = Barrier::new(20);
    let answers: Vec<AuthAnswer> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..20)
            .map(|_| {
                let (api, barrier, assertion) = (&api, &barrier, &assertion);
                scope.spawn(move || {
                    barrier.wait();
                    finish(api, assertion)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    let won: Vec<&AuthAnswer> = answers.iter().filter(|a| a.status == 200).collect();
    assert_eq!(won.len(), 1, "exactly one pair");
    verified_claims(&api, won[0]);
    for a in answers.iter().filter(|a| a.status != 200) {
        a.expect_error(404, NO_CEREMONY);
    }
}

#[test]
fn a_counter_that_goes_back_marks_the_passkey_a_clone() {
    let (smtp, srv, api, s) = setup("Clone Co");
    let user = api.verified_user(&smtp, "fi@example.com", USER_PASSWORD);
    let mut key = SoftAuthenticator::device_bound();
    register_from(&api, &user, &mut key, ORIGIN, None).expect(201);
    // A copy of the key taken now, before the original signs again.
    let mut copy = SoftAuthenticator::device_bound();
    copy.credentials = key.credentials.clone();

    for _ in 0..3 {
        verified_claims(&api, &sign_in(&api, &mut key, ORIGIN));
    }
    // The copy signs with counter 1, below the 3 already seen.
    sign_in(&api, &mut copy, ORIGIN).expect_error(401, INVALID_ASSERTION);
    let list = api.send_with("GET", MY_PASSKEYS, Some(&user.access), None, &[]);
    assert_eq!(list.expect(200)["passkeys"][0]["suspected_clone"], true);
    let events = audit_events(&srv, &s, &api.slug, "auth.passkey.counter_regression");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["metadata"]["stored_counter"], 3);
    // Now the original is refused too, until the user deletes the passkey.
    sign_in(&api, &mut key, ORIGIN).expect_error(401, INVALID_ASSERTION);
}

#[test]
fn ceremonies_belong_to_their_tenant_and_bad_bodies_are_refused() {
    let (smtp, srv, a, s) = setup("Aye Co");
    let b = UserApi::signup(&srv, "Bee Co", "owner@bee.example");
    let user = a.verified_user(&smtp, "gu@example.com", USER_PASSWORD);
    let mut key = SoftAuthenticator::device_bound();
    register_from(&a, &user, &mut key, ORIGIN, None).expect(201);

    // A's ceremony finished with B's key: not found there, and still usable at A.
    let options = sign_in_options(&a, None);
    let assertion = key.get(&options, ORIGIN).expect("assertion");
    finish(&b, &assertion).expect_error(404, NO_CEREMONY);
    verified_claims(&a, &finish(&a, &assertion));

    // Bodies: a missing or non-object response; a bad handle.
    for body in [
        json!({}),
        json!({"response": "x"}),
        json!({"response": null}),
    ] {
        post(&a, ASSERT_FINISH, None, &body).expect_error(400, "validation/invalid_request");
    }
    post(&a, ASSERT_BEGIN, None, &json!({"user_handle": ""}))
        .expect_error(400, "validation/invalid_request");
    post(
        &a,
        REGISTER_FINISH,
        Some(&user.access),
        &json!({"response": {}, "nickname": "x".repeat(65)}),
    )
    .expect_error(400, "validation/invalid_request");

    // A guest cannot register one.
    crate::support::enable_guests(&srv, &s, &a.slug);
    let guest = post(&a, "/v1/auth/anonymous", None, &json!({}));
    let access = guest.expect(201)["access_token"].as_str().expect("access");
    post(&a, REGISTER_BEGIN, Some(access), &json!({}))
        .expect_error(403, "auth/anonymous_not_allowed");

    // Failed sign-ins count against the address (five here): the sixth is throttled.
    let ip = fresh_client_ip();
    let from_ip = |path: &str, body: &Value| {
        a.send_as(Some(&a.api_key), "POST", path, None, Some(body), Some(&ip))
    };
    for _ in 0..5 {
        let options = from_ip(ASSERT_BEGIN, &json!({}));
        let assertion = key
            .get(&options.expect(200)["publicKey"], "https://evil.test")
            .expect("assertion");
        from_ip(ASSERT_FINISH, &json!({ "response": assertion }))
            .expect_error(401, INVALID_ASSERTION);
    }
    let r = from_ip(ASSERT_BEGIN, &json!({}));
    r.expect_error(429, "auth/too_many_attempts");
}

#[test]
fn the_last_way_in_cannot_be_deleted_and_the_rp_id_change_needs_confirmation() {
    let (smtp, srv, api, s) = setup("Last Co");
    // A user whose address a login link confirmed: no password left.
    let email = "ha@example.com";
    api.register(email, USER_PASSWORD).expect(200);
    post(
        &api,
        "/v1/auth/magic-link",
        None,
        &json!({ "email": email }),
    )
    .expect(202);
    let mail = smtp.wait_for(&api.slug, "magic_link", email, 1);
    let token = mail
        .token_after(&api.link("magic-link"))
        .expect("login link");
    let r = post(
        &api,
        "/v1/auth/magic-link/verify",
        None,
        &json!({ "token": token }),
    );
    let user = UserTokens::from_answer(&r);
    let uid = user.claims()["sub"].as_str().expect("sub").to_owned();

    // Register a passkey with an e-mailed step-up code.
    post(
        &api,
        "/v1/auth/step-up/email-otp/initiate",
        Some(&user.access),
        &json!({}),
    )
    .expect(202);
    let code_mail = smtp.wait_for(&api.slug, "step_up_email_otp", email, 1);
    let code = crate::support::six_digit_code(&code_mail.text).expect("code");
    let r = post(
        &api,
        "/v1/auth/step-up/email-otp/verify",
        Some(&user.access),
        &json!({ "otp": code }),
    );
    let token = r.expect(200)["step_up_token"]
        .as_str()
        .expect("token")
        .to_owned();
    let options = api.send_with(
        "POST",
        REGISTER_BEGIN,
        Some(&user.access),
        Some(&json!({})),
        &[(STEP_UP_HEADER, &token)],
    );
    let mut key = SoftAuthenticator::device_bound();
    let credential = key
        .create(&options.expect(200)["publicKey"], ORIGIN)
        .expect("credential");
    let record = post(
        &api,
        REGISTER_FINISH,
        Some(&user.access),
        &json!({ "response": credential }),
    );
    let id = record.expect(201)["id"].as_str().expect("id").to_owned();

    // The admin marks the address unconfirmed: the passkey is now the only way in.
    let r = srv.dash(
        "PATCH",
        &format!("/v1/auth/dashboard/tenants/{}/users/{uid}", api.slug),
        &s,
        Some(&json!({"email_verified": false})),
    );
    assert_eq!(r.status().as_u16(), 200);
    let token = passkey_step_up(&api, &user, &mut key);
    let token = token.expect(200)["step_up_token"]
        .as_str()
        .expect("token")
        .to_owned();
    api.send_with(
        "DELETE",
        &format!("{MY_PASSKEYS}/{id}"),
        Some(&user.access),
        None,
        &[(STEP_UP_HEADER, &token)],
    )
    .expect_error(409, "passkey/last_credential");

    // The RP id cannot move from under it without the confirmation header.
    let (status, body) = put_domain(
        &srv,
        &s,
        &api,
        &json!({"passkey_rp_id": "new.example"}),
        None,
    );
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "passkey/rp_id_in_use", "{body}");
    assert_eq!(body["error"]["details"]["passkeys"], 1, "{body}");
    // Unchanged: it still signs in.
    verified_claims(&api, &sign_in(&api, &mut key, ORIGIN));
    // Only the origins: no confirmation needed.
    let (status, body) = put_domain(
        &srv,
        &s,
        &api,
        &json!({"passkey_rp_id": RP_ID, "passkey_origins": []}),
        None,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["passkey_origins"], json!([]), "{body}");
    let (status, body) = put_domain(
        &srv,
        &s,
        &api,
        &json!({"passkey_rp_id": "new.example"}),
        Some("passkey-rp-id-change"),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["passkey_rp_id"], "new.example", "{body}");
    let events = audit_events(&srv, &s, &api.slug, "auth.passkey.rp_id_changed");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["metadata"]["passkeys_stranded"], 1);
    // Stranded: its signatures are for the old RP id.
    let options = sign_in_options(&api, None);
    assert_eq!(options["rpId"], "new.example");
    let assertion = key
        .assert_with(0, options["challenge"].as_str().expect("challenge"), ORIGIN)
        .expect("assertion");
    finish(&api, &assertion).expect_error(401, INVALID_ASSERTION);

    // Origins are checked: a path, an uppercase host, too many.
    for bad in [
        json!({"passkey_rp_id": null, "passkey_origins": ["https://a.example/x"]}),
        json!({"passkey_rp_id": null, "passkey_origins": ["https://A.example"]}),
        json!({"passkey_rp_id": null, "passkey_origins": ["android:apk-key-hash:!!"]}),
        json!({"passkey_rp_id": null, "passkey_origins": (0..21).map(|i| format!("https://a{i}.example")).collect::<Vec<_>>()}),
        json!({"passkey_origins": []}),
    ] {
        let (status, body) = put_domain(&srv, &s, &api, &bad, Some("passkey-rp-id-change"));
        assert_eq!(status, 400, "{bad}: {body}");
    }
    let android = "android:apk-key-hash:sYUC8p5I9SxqFernBPHmDxz_YVZXmVJdW8s-m3RTTqE";
    let (status, body) = put_domain(
        &srv,
        &s,
        &api,
        &json!({"passkey_rp_id": "new.example", "passkey_origins": [android, DEV_ORIGIN, android]}),
        None,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["passkey_origins"],
        json!([android, DEV_ORIGIN]),
        "{body}"
    );
}

#[test]
fn a_user_holds_at_most_ten_passkeys_and_the_refusal_keeps_the_step_up_token() {
    let (smtp, _srv, api, _s) = setup("Ten Co");
    let user = api.verified_user(&smtp, "jo@example.com", USER_PASSWORD);
    let mut last = String::new();
    for _ in 0..10 {
        // One authenticator each: an authenticator refuses a second credential for an
        // account that excludes its first.
        let mut key = SoftAuthenticator::synced();
        let r = register_from(&api, &user, &mut key, ORIGIN, None);
        last = r.expect(201)["id"].as_str().expect("id").to_owned();
    }
    let token = password_step_up(&api, &user, USER_PASSWORD);
    api.send_with(
        "POST",
        REGISTER_BEGIN,
        Some(&user.access),
        Some(&json!({})),
        &[(STEP_UP_HEADER, &token)],
    )
    .expect_error(409, "passkey/limit_reached");
    // Refused before the gate: the step-up token is still good for a gated request.
    let r = api.send_with(
        "PATCH",
        &format!("{MY_PASSKEYS}/{last}"),
        Some(&user.access),
        Some(&json!({"nickname": "Tenth"})),
        &[(STEP_UP_HEADER, &token)],
    );
    assert_eq!(r.expect(200)["nickname"], "Tenth", "{}", r.body);
    let list = api.send_with("GET", MY_PASSKEYS, Some(&user.access), None, &[]);
    assert_eq!(
        list.expect(200)["passkeys"].as_array().map(Vec::len),
        Some(10)
    );
}
