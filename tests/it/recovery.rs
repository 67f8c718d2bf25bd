//! An account that holds an address it never confirmed, as a squatter's would: it adds no
//! durable credential (403 `auth/email_unconfirmed` for a passkey, an authenticator app, a
//! number, a linked account, an OAuth consent), and the address's owner who proves it takes
//! the account over with nothing of the holder's left; an admin who confirms such an address
//! hands the account to the address's owner the same way.

use serde_json::{json, Value};

use crate::support::{
    audit_events, error_code, fresh_client_ip, patch_security, user_setup, AuthAnswer, Session,
    SmtpStub, TestServer, UserApi, NEW_USER_PASSWORD, STEP_UP_HEADER, USER_PASSWORD,
};

const VICTIM: &str = "victim@example.com";
const UNCONFIRMED: &str = "auth/email_unconfirmed";

/// A guest who claims `VICTIM` with the squatter's password: the guest's bearer, which stays
/// valid, on an account holding the address unconfirmed.
pub(crate) fn squatter(srv: &TestServer, s: &Session, api: &UserApi) -> String {
    crate::support::enable_guests(srv, s, &api.slug);
    let g = api.post_as("/v1/auth/anonymous", None, &json!({}));
    let guest = g.expect(201)["access_token"]
        .as_str()
        .expect("access_token")
        .to_owned();
    let r = api.send_as(
        Some(&api.api_key),
        "POST",
        "/v1/auth/register",
        Some(&guest),
        Some(&json!({ "email": VICTIM, "password": USER_PASSWORD, "consent": true })),
        Some(&fresh_client_ip()),
    );
    assert_eq!(r.expect(200)["user"]["is_anonymous"], false, "{}", r.body);
    let me = api.me(&guest);
    let me = me.expect(200);
    assert_eq!(
        (me["email"].as_str(), &me["email_verified"]),
        (Some(VICTIM), &json!(false)),
        "{me}"
    );
    guest
}

#[track_caller]
fn refused_as_unconfirmed(a: &AuthAnswer, credential: &str, what: &str) {
    assert_eq!(
        (
            a.status,
            a.code(),
            &a.body["error"]["details"]["credential"]
        ),
        (403, UNCONFIRMED, &json!(credential)),
        "{what}: {}",
        a.body
    );
}

/// The victim's reset: the link mailed to her address, and her own password.
fn reset_by_owner(smtp: &SmtpStub, api: &UserApi, n: usize) {
    api.post("/v1/auth/forgot-password", &json!({ "email": VICTIM }))
        .expect(202);
    let mail = smtp.wait_for(&api.slug, "password_reset", VICTIM, n);
    let token = mail
        .token_after(&api.link("reset-password"))
        .expect("token");
    api.post(
        "/v1/auth/reset-password",
        &json!({ "token": token, "password": NEW_USER_PASSWORD }),
    )
    .expect(200);
}

#[test]
fn an_account_whose_address_is_unconfirmed_adds_no_durable_credential() {
    let (smtp, srv, api, s) = user_setup("Squat Co", &[]);
    patch_security(
        &srv,
        &s,
        &api.slug,
        json!({ "explicit_account_linking_enabled": true }),
    );
    let guest = squatter(&srv, &s, &api);

    // A passkey: refused before the step-up gate, and with a step-up token too (which then
    // stays usable: the refusal comes first).
    let begin = "/v1/auth/passkeys/register/begin";
    refused_as_unconfirmed(
        &api.send_with("POST", begin, Some(&guest), Some(&json!({})), &[]),
        "passkeys",
        "passkey options without a step-up token",
    );
    let token = api.password_step_up(&guest);
    refused_as_unconfirmed(
        &api.send_with(
            "POST",
            begin,
            Some(&guest),
            Some(&json!({})),
            &[(STEP_UP_HEADER, &token)],
        ),
        "passkeys",
        "passkey options with a step-up token",
    );
    // The finish of a ceremony is refused alike (there is none: the begin made no options).
    refused_as_unconfirmed(
        &api.post_as(
            "/v1/auth/passkeys/register/finish",
            Some(&guest),
            &json!({ "response": {} }),
        ),
        "passkeys",
        "passkey finish",
    );
    // An authenticator app: the setup, before the gate.
    refused_as_unconfirmed(
        &api.mfa_setup_with(&guest, None),
        "totp",
        "TOTP setup without a step-up token",
    );
    refused_as_unconfirmed(
        &api.mfa_setup_with(&guest, Some(&token)),
        "totp",
        "TOTP setup with a step-up token",
    );
    // A linked provider account.
    refused_as_unconfirmed(
        &api.send_with(
            "POST",
            "/v1/users/me/link/google",
            Some(&guest),
            Some(&json!({})),
            &[(STEP_UP_HEADER, &token)],
        ),
        "social_links",
        "explicit linking",
    );
    // A number.
    refused_as_unconfirmed(
        &api.post_as(
            "/v1/users/me/phone/verify",
            Some(&guest),
            &json!({ "phone": "+33612345678" }),
        ),
        "phone",
        "phone verification",
    );
    // The step-up token was not spent by any of these refusals.
    let r = api.send_with(
        "GET",
        "/v1/users/me/export",
        Some(&guest),
        None,
        &[(STEP_UP_HEADER, &token)],
    );
    assert_eq!(r.status, 200, "{}", r.body);

    // The owner proves the address: the squatter's bearer and password are dead, the event
    // names what went.
    reset_by_owner(&smtp, &api, 1);
    api.me(&guest).expect_error(401, "auth/invalid_token");
    api.login(VICTIM, USER_PASSWORD)
        .expect_error(401, "auth/invalid_credentials");
    let owner = api.login_ok(VICTIM, NEW_USER_PASSWORD);
    let me = api.me(&owner.access);
    assert_eq!(me.expect(200)["email_verified"], true, "{}", me.body);
    let events = audit_events(&srv, &s, &api.slug, "auth.account.recovered");
    assert_eq!(events.len(), 1, "{events:?}");
    let m = &events[0]["metadata"];
    assert_eq!(m["via"], "password_reset", "{m}");
    let removed: Vec<&str> = m["removed"]
        .as_array()
        .expect("removed")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for kind in ["password", "sessions"] {
        assert!(removed.contains(&kind), "{kind} in {m}");
    }

    // Once confirmed, the owner may add what the squatter could not.
    let r = api.mfa_setup_with(&owner.access, None);
    assert_eq!(
        r.status, 401,
        "the step-up gate, no longer the refusal: {}",
        r.body
    );
    assert_ne!(r.code(), UNCONFIRMED);
    assert_eq!(error_code(&r.body), "account_linking/mfa_required");
}

/// An admin who confirms an address the account held unconfirmed hands the account to the
/// address's owner: the holder's password and sessions go, and the owner is mailed a reset
/// link. A confirmed account whose address an admin changes keeps its password.
#[test]
fn an_admins_confirmation_of_an_unconfirmed_address_hands_the_account_to_its_owner() {
    let (smtp, srv, api, s) = user_setup("Admin Co", &[]);
    let guest = squatter(&srv, &s, &api);
    let id = api.me(&guest).expect(200)["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let users = format!("/v1/auth/dashboard/tenants/{}/users/{id}", api.slug);
    let (st, body) = srv.dash_json(
        "PATCH",
        &users,
        &s,
        Some(&json!({ "email_verified": true })),
    );
    assert_eq!(st, 200, "{body}");
    assert_eq!(body["email_verified"], true, "{body}");
    api.me(&guest).expect_error(401, "auth/invalid_token");
    api.login(VICTIM, USER_PASSWORD)
        .expect_error(401, "auth/invalid_credentials");
    // The owner's reset link (the verification mail from the claim came first).
    let mail = smtp.wait_for(&api.slug, "password_reset", VICTIM, 1);
    let token = mail
        .token_after(&api.link("reset-password"))
        .expect("token");
    api.post(
        "/v1/auth/reset-password",
        &json!({ "token": token, "password": NEW_USER_PASSWORD }),
    )
    .expect(200);
    api.login_ok(VICTIM, NEW_USER_PASSWORD);
    let events = audit_events(&srv, &s, &api.slug, "auth.account.recovered");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["metadata"]["via"], "admin");

    // The same account, now confirmed, moved by the admin to another confirmed address:
    // its holder (the owner) keeps her password.
    srv.reauth(&s, crate::support::PASSWORD);
    let (st, body) = srv.dash_json(
        "PATCH",
        &users,
        &s,
        Some(&json!({ "email": "moved@example.com", "email_verified": true })),
    );
    assert_eq!(st, 200, "{body}");
    api.login_ok("moved@example.com", NEW_USER_PASSWORD);
    assert_eq!(
        audit_events(&srv, &s, &api.slug, "auth.account.recovered").len(),
        1
    );
}
