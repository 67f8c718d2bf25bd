//! The end user's account page (`/oauth/{slug}/account`) over HTTP as a browser without script
//! speaks it: a stranger is sent to the hosted sign-in with no client and comes back; every
//! action works through the same rules as the API's routes (the password, step-up with the
//! password, the TOTP set-up, sessions, consents, the export and the erasure), and every form
//! without its CSRF value is refused. The same page in headless Chromium is in `browser.rs`.

use serde_json::json;

use crate::oauth_browser::{Browser, Page};
use crate::support::*;

const WHO: &str = "ada@example.com";

/// A tenant with mail, one verified user [`WHO`] with [`USER_PASSWORD`], the owner's session.
struct World {
    smtp: SmtpStub,
    srv: TestServer,
    api: UserApi,
    s: Session,
    user: UserTokens,
}

fn world(tenant: &str) -> World {
    let (smtp, srv, api, s) = user_setup(tenant, &[]);
    let user = api.verified_user(&smtp, WHO, USER_PASSWORD);
    World {
        smtp,
        srv,
        api,
        s,
        user,
    }
}

impl World {
    fn account(&self) -> String {
        format!("{}/oauth/{}/account", self.srv.base, self.api.slug)
    }

    fn sign_in_url(&self) -> String {
        format!(
            "{}/oauth/{}/authorize?for=account",
            self.srv.base, self.api.slug
        )
    }

    /// A browser signed in as `email` through the account page's sign-in, on the page.
    fn signed_in(&self, email: &str, password: &str) -> (Browser, Page) {
        let mut b = Browser::new();
        let to = b.get(&self.account()).redirect(303);
        assert_eq!(format!("{}{to}", self.srv.base), self.sign_in_url());
        let page = b.get(&self.sign_in_url());
        assert_eq!(page.status, 200, "{}", page.body);
        let csrf = page.hidden("csrf", 0);
        let back = b
            .post(
                &self.sign_in_url(),
                &[
                    ("csrf", &csrf),
                    ("step", "password"),
                    ("email", email),
                    ("password", password),
                ],
            )
            .redirect(303);
        assert_eq!(back, format!("/oauth/{}/account", self.api.slug));
        let page = b.get(&self.account());
        assert_eq!(page.status, 200, "{}", page.body);
        (b, page)
    }

    /// Posts `fields` to the account page's action `action` with the CSRF value of the form
    /// that posts there on `page`.
    fn act(&self, b: &mut Browser, page: &Page, action: &str, fields: &[(&str, &str)]) -> Page {
        let path = format!("/oauth/{}/account/{action}", self.api.slug);
        let csrf = csrf_of(page, &path);
        let mut form = vec![("csrf", csrf.as_str())];
        form.extend_from_slice(fields);
        b.post(&format!("{}{path}", self.srv.base), &form)
    }
}

/// The CSRF value of the form on `page` that posts to `path`.
#[track_caller]
fn csrf_of(page: &Page, path: &str) -> String {
    let at = page
        .body
        .find(&format!("action=\"{path}\""))
        .unwrap_or_else(|| panic!("no form to {path} in {}", page.body));
    let rest = &page.body[at..];
    let needle = "name=\"csrf\" value=\"";
    let start = rest.find(needle).expect("a CSRF value") + needle.len();
    rest[start..start + rest[start..].find('"').expect("its end")].to_owned()
}

/// The page's `Content-Security-Policy`.
fn csp(page: &Page) -> String {
    page.headers
        .get("content-security-policy")
        .expect("a CSP")
        .to_str()
        .expect("text")
        .to_owned()
}

/// A stranger is sent to the hosted sign-in with no client, which signs them in and brings
/// them back; the page shows the account, runs no script, and a signed-in visit to the
/// sign-in goes straight back.
#[test]
fn a_stranger_signs_in_on_the_hosted_page_and_lands_on_the_account() {
    let w = world("Account Page");
    let (mut b, page) = w.signed_in(WHO, USER_PASSWORD);
    assert!(
        page.body.contains("Your Account Page account"),
        "{}",
        page.body
    );
    assert!(page.body.contains(WHO));
    assert!(page.body.contains("Two-step verification"));
    assert!(page.body.contains("Where you are signed in"));
    let policy = csp(&page);
    assert!(!policy.contains("script-src"), "{policy}");
    assert!(policy.contains("form-action 'self'"), "{policy}");
    assert_eq!(page.headers.get("cache-control").unwrap(), "no-store");
    // The sign-in page of the account named the tenant, not a client.
    let again = b.get(&w.sign_in_url()).redirect(303);
    assert_eq!(again, format!("/oauth/{}/account", w.api.slug));
    // A wrong password on that sign-in shows it again, with no cookie.
    let mut other = Browser::new();
    let page = other.get(&w.sign_in_url());
    assert!(page.body.contains("Account Page"), "{}", page.body);
    let csrf = page.hidden("csrf", 0);
    let wrong = other.post(
        &w.sign_in_url(),
        &[
            ("csrf", &csrf),
            ("step", "password"),
            ("email", WHO),
            ("password", "not the password at all"),
        ],
    );
    assert_eq!(wrong.status, 401, "{}", wrong.body);
    assert!(other.signin_cookie().is_none());
    assert_eq!(other.get(&w.account()).status, 303);
    // The short address apps link to: `/account?tenant=`.
    let short = other
        .get(&format!("{}/account?tenant={}", w.srv.base, w.api.slug))
        .redirect(303);
    assert_eq!(short, format!("/oauth/{}/account", w.api.slug));
    for bad in ["", "?tenant=", "?tenant=..%2Fetc", "?tenant=Upper"] {
        let page = other.get(&format!("{}/account{bad}", w.srv.base));
        assert_eq!(page.status, 400, "{bad}");
    }
}

/// A mailed code signs in to the account page too (no client's request to resume).
#[test]
fn a_mailed_code_signs_in_to_the_account_page() {
    let w = world("Account Codes");
    patch_security(
        &w.srv,
        &w.s,
        &w.api.slug,
        json!({"email_otp_enabled": true}),
    );
    let mut b = Browser::new();
    let page = b.get(&w.sign_in_url());
    let csrf = page.hidden("csrf", 0);
    let sent = b.post(
        &w.sign_in_url(),
        &[("csrf", &csrf), ("step", "email_code"), ("email", WHO)],
    );
    assert_eq!(sent.status, 200, "{}", sent.body);
    let binding = sent.hidden("binding", 0);
    let mail = w.smtp.wait_for(&w.api.slug, "email_otp", WHO, 1);
    let code = six_digit_code(&mail.text).expect("a code");
    let back = b
        .post(
            &w.sign_in_url(),
            &[
                ("csrf", &sent.hidden("csrf", 0)),
                ("step", "verify_code"),
                ("email", WHO),
                ("binding", &binding),
                ("code", &code),
            ],
        )
        .redirect(303);
    assert_eq!(back, format!("/oauth/{}/account", w.api.slug));
    let page = b.get(&w.account());
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains(WHO));
}

/// The password changes with the current one; the person's other sessions end, this one
/// stays; a wrong current password is said on the page.
#[test]
fn the_password_changes_and_ends_every_other_session() {
    let w = world("Account Password");
    let (mut b, page) = w.signed_in(WHO, USER_PASSWORD);
    let wrong = w.act(
        &mut b,
        &page,
        "password",
        &[
            ("current_password", "not the password at all"),
            ("new_password", "a brand new passphrase"),
        ],
    );
    assert_eq!(wrong.status, 401, "{}", wrong.body);
    assert!(
        wrong.body.contains("The password is not right."),
        "{}",
        wrong.body
    );
    w.api.me(&w.user.access).expect(200);
    let done = w.act(
        &mut b,
        &page,
        "password",
        &[
            ("current_password", USER_PASSWORD),
            ("new_password", "a brand new passphrase"),
        ],
    );
    let to = done.redirect(303);
    assert!(to.ends_with("/account?done=password"), "{to}");
    let page = b.get(&format!("{}{to}", w.srv.base));
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains("Your password is changed."),
        "{}",
        page.body
    );
    // The API session opened before is over; the new password signs in.
    w.api
        .me(&w.user.access)
        .expect_error(401, "auth/invalid_token");
    w.api.login_ok(WHO, "a brand new passphrase");
}

/// Sessions: another one ends from the page, then all others at once; signing out ends this
/// one, removes the cookie, and the page sends the browser to the sign-in again.
#[test]
fn sessions_end_from_the_page_and_signing_out_ends_this_one() {
    let w = world("Account Sessions");
    let (mut b, page) = w.signed_in(WHO, USER_PASSWORD);
    let sid = w.user.sid();
    assert!(
        page.body.contains(&format!("value=\"{sid}\"")),
        "{}",
        page.body
    );
    let ended = w.act(&mut b, &page, "sessions/end", &[("session", &sid)]);
    assert!(ended.redirect(303).ends_with("?done=session"));
    w.api
        .me(&w.user.access)
        .expect_error(401, "auth/invalid_token");
    let second = w.api.login_ok(WHO, USER_PASSWORD);
    let third = w.api.login_ok(WHO, USER_PASSWORD);
    let page = b.get(&w.account());
    let others = w.act(&mut b, &page, "sessions/others", &[]);
    assert!(others.redirect(303).ends_with("?done=others"));
    w.api
        .me(&second.access)
        .expect_error(401, "auth/invalid_token");
    w.api
        .me(&third.access)
        .expect_error(401, "auth/invalid_token");
    let page = b.get(&w.account());
    assert_eq!(
        page.status, 200,
        "the page's own session stays: {}",
        page.body
    );
    let out = w.act(&mut b, &page, "sign-out", &[]);
    assert_eq!(out.status, 200, "{}", out.body);
    assert!(out.body.contains("You are signed out"), "{}", out.body);
    assert!(b.signin_cookie().is_none());
    assert_eq!(
        b.get(&w.account()).redirect(303),
        format!("/oauth/{}/authorize?for=account", w.api.slug)
    );
}

/// A cookie whose session ended elsewhere (the API's global logout) signs nobody in: the page
/// sends the browser to the sign-in and removes the cookie.
#[test]
fn a_cookie_of_an_ended_session_goes_to_the_sign_in() {
    let w = world("Account Ended");
    let (mut b, _) = w.signed_in(WHO, USER_PASSWORD);
    w.api
        .logout(&w.user.access, Some(&json!({"scope": "global"})))
        .expect(204);
    let to = b.get(&w.account()).redirect(303);
    assert!(to.ends_with("/authorize?for=account"), "{to}");
    assert!(b.signin_cookie().is_none());
    // The sign-in does not loop back to the account with the dead cookie.
    assert_eq!(b.get(&w.sign_in_url()).status, 200);
}

/// Two-step verification set up from the page: the password steps up, the QR page's first
/// code turns it on and shows the recovery codes once; new codes need a TOTP code; off needs
/// the password and a code.
#[test]
fn two_step_verification_is_set_up_renewed_and_turned_off_from_the_page() {
    let w = world("Account Factors");
    let (mut b, page) = w.signed_in(WHO, USER_PASSWORD);
    let wrong = w.act(
        &mut b,
        &page,
        "mfa/setup",
        &[("password", "not the password at all")],
    );
    assert_eq!(wrong.status, 401, "{}", wrong.body);
    assert!(wrong.body.contains("The password is not right."));
    let setup = w.act(&mut b, &page, "mfa/setup", &[("password", USER_PASSWORD)]);
    assert_eq!(setup.status, 200, "{}", setup.body);
    assert!(setup.body.contains("<svg"), "a QR code: {}", setup.body);
    let secret = setup.hidden("secret", 0);
    let totp = Totp::new(&secret);
    let bad = w.act(
        &mut b,
        &setup,
        "mfa/confirm",
        &[
            ("secret", &secret),
            ("uri", &setup.hidden("uri", 0)),
            ("code", &totp.wrong()),
        ],
    );
    assert_eq!(bad.status, 401, "{}", bad.body);
    assert!(
        bad.body.contains(&secret),
        "the same seed again: {}",
        bad.body
    );
    let step = settled_totp_step(3.0);
    let on = w.act(
        &mut b,
        &bad,
        "mfa/confirm",
        &[
            ("secret", &secret),
            ("uri", &bad.hidden("uri", 0)),
            ("code", &totp.at_step(step)),
        ],
    );
    assert_eq!(on.status, 200, "{}", on.body);
    assert_eq!(on.body.matches("<li><code>").count(), 10, "{}", on.body);
    assert_eq!(w.api.me(&w.user.access).expect(200)["mfa_enabled"], true);
    // New codes: a TOTP code of a later step (each code works once) and the password.
    wait_for_totp_step(step + 1);
    let page = b.get(&w.account());
    let renewed = w.act(
        &mut b,
        &page,
        "mfa/codes",
        &[
            ("code", &totp.at_step(step + 1)),
            ("password", USER_PASSWORD),
        ],
    );
    assert_eq!(renewed.status, 200, "{}", renewed.body);
    let first_new = renewed
        .body
        .split("<li><code>")
        .nth(1)
        .and_then(|r| r.split('<').next())
        .expect("a code")
        .to_owned();
    assert!(!on.body.contains(&first_new), "the codes are new");
    let page = b.get(&w.account());
    let off = w.act(
        &mut b,
        &page,
        "mfa/disable",
        &[("code", &first_new), ("password", USER_PASSWORD)],
    );
    assert!(off.redirect(303).ends_with("?done=mfa-off"), "{}", off.body);
    assert_eq!(w.api.me(&w.user.access).expect(200)["mfa_enabled"], false);
    let events = audit_events(&w.srv, &w.s, &w.api.slug, "auth.mfa.disabled");
    assert_eq!(events.len(), 1, "{events:?}");
}

/// The export downloads after the password's step-up; the erasure needs the box and the
/// password, then the account is gone and the cookie with it.
#[test]
fn the_data_downloads_and_the_account_is_erased_from_the_page() {
    let w = world("Account Data");
    let (mut b, page) = w.signed_in(WHO, USER_PASSWORD);
    let refused = w.act(
        &mut b,
        &page,
        "export",
        &[("password", "not the password at all")],
    );
    assert_eq!(refused.status, 401, "{}", refused.body);
    let export = w.act(&mut b, &page, "export", &[("password", USER_PASSWORD)]);
    assert_eq!(export.status, 200, "{}", export.body);
    let disposition = export
        .headers
        .get("content-disposition")
        .expect("an attachment");
    assert!(disposition.to_str().unwrap().starts_with("attachment"));
    let doc: serde_json::Value = serde_json::from_str(&export.body).expect("JSON");
    assert!(export.body.contains(WHO), "{doc}");
    let unticked = w.act(&mut b, &page, "delete", &[("password", USER_PASSWORD)]);
    assert_eq!(unticked.status, 400, "{}", unticked.body);
    assert!(unticked.body.contains("Tick the box"), "{}", unticked.body);
    w.api.me(&w.user.access).expect(200);
    let gone = w.act(
        &mut b,
        &page,
        "delete",
        &[("password", USER_PASSWORD), ("confirm", "yes")],
    );
    assert_eq!(gone.status, 200, "{}", gone.body);
    assert!(
        gone.body.contains("Your account is deleted"),
        "{}",
        gone.body
    );
    assert!(b.signin_cookie().is_none());
    w.api
        .me(&w.user.access)
        .expect_error(401, "auth/invalid_token");
    w.api
        .login(WHO, USER_PASSWORD)
        .expect_error(401, "auth/invalid_credentials");
}

/// Every form of the page is refused (403) without its CSRF value, or with another form's,
/// before anything is used.
#[test]
fn every_form_of_the_account_page_refuses_a_post_without_its_csrf_value() {
    let w = world("Account Csrf");
    let (mut b, page) = w.signed_in(WHO, USER_PASSWORD);
    let password_csrf = csrf_of(&page, &format!("/oauth/{}/account/password", w.api.slug));
    for action in [
        "password",
        "mfa/setup",
        "mfa/confirm",
        "mfa/disable",
        "mfa/codes",
        "passkeys/remove",
        "sessions/end",
        "sessions/others",
        "apps/withdraw",
        "agents/revoke",
        "sign-out",
        "export",
        "delete",
    ] {
        let url = format!("{}/oauth/{}/account/{action}", w.srv.base, w.api.slug);
        let none = b.post(&url, &[("password", USER_PASSWORD), ("confirm", "yes")]);
        assert_eq!(none.status, 403, "{action}: {}", none.body);
        if action != "password" {
            let other = b.post(
                &url,
                &[
                    ("csrf", &password_csrf),
                    ("password", USER_PASSWORD),
                    ("confirm", "yes"),
                ],
            );
            assert_eq!(other.status, 403, "{action} with another form's value");
        }
    }
    // Nothing happened: the session lives, the account too.
    w.api.me(&w.user.access).expect(200);
    assert_eq!(b.get(&w.account()).status, 200);
}

/// An app the person consented to is listed and loses access from the page: its refresh
/// tokens stop working.
#[test]
fn a_connected_app_loses_access_from_the_page() {
    let w = world("Account Apps");
    w.srv.reauth(&w.s, PASSWORD);
    let (st, client) = w.srv.dash_json(
        "POST",
        &format!("/v1/auth/dashboard/tenants/{}/oauth-clients", w.api.slug),
        &w.s,
        Some(&json!({
            "name": "Photo Printer",
            "client_type": "confidential",
            "redirect_uris": ["https://rp.example/callback"],
            "allowed_scopes": ["openid", "email", "offline_access"],
        })),
    );
    assert_eq!(st, 201, "{client}");
    let client_id = client["client_id"].as_str().expect("client_id");
    // Consent given on the hosted consent page by the signed-in browser.
    let (mut b, _) = w.signed_in(WHO, USER_PASSWORD);
    let (challenge, _verifier) = openidconnect::PkceCodeChallenge::new_random_sha256();
    let challenge = challenge.as_str();
    let authorize = format!(
        "{}/oauth/{}/authorize?response_type=code&client_id={client_id}&redirect_uri=https%3A%2F%2Frp.example%2Fcallback&scope=openid%20email&state=s1&code_challenge={challenge}&code_challenge_method=S256",
        w.srv.base, w.api.slug
    );
    let consent = b.get(&authorize);
    assert_eq!(consent.status, 200, "{}", consent.body);
    assert!(consent.body.contains("Photo Printer"));
    let approved = b.post(
        &consent.action(&w.srv.base),
        &[
            ("csrf", &consent.hidden("csrf", 0)),
            ("commitment", &consent.hidden("commitment", 0)),
            ("decision", "approve"),
        ],
    );
    assert!(approved
        .redirect(303)
        .starts_with("https://rp.example/callback?code="));
    let page = b.get(&w.account());
    assert!(page.body.contains("Photo Printer"), "{}", page.body);
    let withdrawn = w.act(&mut b, &page, "apps/withdraw", &[("client_id", client_id)]);
    assert!(withdrawn.redirect(303).ends_with("?done=app"));
    let page = b.get(&w.account());
    assert!(
        page.body.contains("No app has access to your account."),
        "{}",
        page.body
    );
    let events = audit_events(&w.srv, &w.s, &w.api.slug, "oauth.consent.withdrawn");
    assert_eq!(events.len(), 1, "{events:?}");
}

/// With a passkey domain, a passkey is added from the page (the password steps up, the page
/// carries the API's creation options and the script's CSRF value, the credential goes to the
/// page's finish), is listed, and is removed again after another step-up.
#[test]
fn a_passkey_is_added_and_removed_from_the_page() {
    let w = world("Account Keys");
    w.srv.reauth(&w.s, PASSWORD);
    let r = crate::passkeys::put_domain(
        &w.srv,
        &w.s,
        &w.api,
        &json!({"passkey_rp_id": "app.example"}),
        None,
    );
    assert_eq!(r.0, 200, "{}", r.1);
    let (mut b, page) = w.signed_in(WHO, USER_PASSWORD);
    assert!(page.body.contains("You have no passkeys."), "{}", page.body);
    let add = w.act(
        &mut b,
        &page,
        "passkeys/add",
        &[("password", USER_PASSWORD)],
    );
    assert_eq!(add.status, 200, "{}", add.body);
    let policy = csp(&add);
    assert!(policy.contains("script-src 'self'"), "{policy}");
    assert!(add.body.contains("/hosted/passkey-add.js"));
    let options: serde_json::Value =
        serde_json::from_str(&data_of(&add, "options")).expect("the options' JSON");
    let mut key = tessera_testkit::webauthn::SoftAuthenticator::device_bound();
    let credential = key
        .create(&options, crate::passkeys::ORIGIN)
        .expect("a credential");
    let finish = format!("{}{}", w.srv.base, data_of(&add, "finish"));
    // Without the script's CSRF value: refused.
    let forged = b.post(&finish, &[("credential", &credential.to_string())]);
    assert_eq!(forged.status, 403);
    let done = b.post(
        &finish,
        &[
            ("csrf", &data_of(&add, "csrf")),
            ("nickname", "Work laptop"),
            ("credential", &credential.to_string()),
        ],
    );
    assert_eq!(done.status, 200, "{}", done.body);
    let answer: serde_json::Value = serde_json::from_str(&done.body).expect("JSON");
    let to = answer["redirect_to"].as_str().expect("redirect_to");
    assert!(to.ends_with("/account?done=passkey-added"), "{to}");
    let page = b.get(&format!("{}{to}", w.srv.base));
    assert!(page.body.contains("The passkey is added."), "{}", page.body);
    assert!(page.body.contains("Work laptop"), "{}", page.body);
    let listed = w
        .api
        .send("GET", "/v1/users/me/passkeys", Some(&w.user.access), None);
    let id = listed.expect(200)["passkeys"][0]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let removed = w.act(
        &mut b,
        &page,
        "passkeys/remove",
        &[("passkey", &id), ("password", USER_PASSWORD)],
    );
    assert!(removed.redirect(303).ends_with("?done=passkey"));
    let listed = w
        .api
        .send("GET", "/v1/users/me/passkeys", Some(&w.user.access), None);
    assert_eq!(listed.expect(200)["passkeys"], json!([]));
}

/// The value of `data-{name}` on `page`.
#[track_caller]
fn data_of(page: &Page, name: &str) -> String {
    let needle = format!("data-{name}=\"");
    let at = page
        .body
        .find(&needle)
        .unwrap_or_else(|| panic!("no data-{name} in {}", page.body))
        + needle.len();
    let raw = &page.body[at..at + page.body[at..].find('"').expect("its end")];
    raw.replace("&#34;", "\"")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#38;", "&")
        .replace("&amp;", "&")
}

/// A gated action confirmed by a code by e-mail instead of the password (the way for an
/// account without one): the page asks for the mailed code and posts the form again with
/// it; a wrong code is said and nothing happens; the right one lets the export and the
/// erasure (its ticked box carried along) through.
#[test]
fn a_gated_action_is_confirmed_by_a_code_by_e_mail() {
    let w = world("Account Mailed");
    let (mut b, page) = w.signed_in(WHO, USER_PASSWORD);
    let asked = w.act(&mut b, &page, "export", &[("via", "code")]);
    assert_eq!(asked.status, 200, "{}", asked.body);
    assert!(
        asked.body.contains("Enter the code we e-mailed you"),
        "{}",
        asked.body
    );
    let mail = w.smtp.wait_for(&w.api.slug, "step_up_email_otp", WHO, 1);
    let code = six_digit_code(&mail.text).expect("a code");
    let wrong = if code == "000000" { "111111" } else { "000000" };
    let refused = w.act(&mut b, &asked, "export", &[("step_up_code", wrong)]);
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert!(
        refused.body.contains("The code is not right"),
        "{}",
        refused.body
    );
    let export = w.act(&mut b, &asked, "export", &[("step_up_code", &code)]);
    assert_eq!(export.status, 200, "{}", export.body);
    assert!(export.headers.get("content-disposition").is_some());
    assert!(export.body.contains(WHO));

    let page = b.get(&w.account());
    let asked = w.act(
        &mut b,
        &page,
        "delete",
        &[("via", "code"), ("confirm", "yes")],
    );
    assert_eq!(asked.status, 200, "{}", asked.body);
    assert!(
        asked.body.contains("name=\"confirm\" value=\"yes\""),
        "{}",
        asked.body
    );
    let mail = w.smtp.wait_for(&w.api.slug, "step_up_email_otp", WHO, 2);
    let code = six_digit_code(&mail.text).expect("a code");
    let gone = w.act(
        &mut b,
        &asked,
        "delete",
        &[("confirm", "yes"), ("step_up_code", &code)],
    );
    assert_eq!(gone.status, 200, "{}", gone.body);
    assert!(
        gone.body.contains("Your account is deleted"),
        "{}",
        gone.body
    );
    w.api
        .login(WHO, USER_PASSWORD)
        .expect_error(401, "auth/invalid_credentials");
}

/// A returning user with two-step verification signs in to the account page from a second
/// browser: the password leads to the code step, whose wrong code is refused, and the right
/// one lands on the account page, not on any client.
#[test]
fn a_user_with_two_step_verification_signs_in_to_the_account_page() {
    let w = world("Account Second Step");
    let mfa = w.api.enable_mfa(&w.user.access);
    let mut b = Browser::new();
    let page = b.get(&w.sign_in_url());
    let step = b.post(
        &w.sign_in_url(),
        &[
            ("csrf", &page.hidden("csrf", 0)),
            ("step", "password"),
            ("email", WHO),
            ("password", USER_PASSWORD),
        ],
    );
    assert_eq!(step.status, 200, "{}", step.body);
    assert!(
        b.signin_cookie().is_none(),
        "no sign-in before the second step"
    );
    let code_step = |b: &mut Browser, code: &str| {
        b.post(
            &w.sign_in_url(),
            &[
                ("csrf", &step.hidden("csrf", 0)),
                ("step", "mfa"),
                ("challenge", &step.hidden("challenge", 0)),
                ("code", code),
            ],
        )
    };
    let wrong = code_step(&mut b, &mfa.totp.wrong());
    assert_eq!(wrong.status, 401, "{}", wrong.body);
    wait_for_totp_step(mfa.step + 1);
    let back = code_step(&mut b, &mfa.totp.at_step(mfa.step + 1)).redirect(303);
    assert_eq!(back, format!("/oauth/{}/account", w.api.slug));
    let page = b.get(&w.account());
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains("On: signing in asks for a code"),
        "{}",
        page.body
    );
}
