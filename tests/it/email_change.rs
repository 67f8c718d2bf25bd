//! A signed-in user moves the account to another address (`POST /v1/auth/change-email`, then
//! the mailed link's hosted page `/confirm-email`): only after a step-up, only when the new
//! address's owner opens the link, never onto an address another account holds, and with the
//! same answer whatever the address, so asking tells nothing about other accounts.

use serde_json::json;

use crate::oauth_browser::Browser;
use crate::support::*;

const OLD: &str = "mover@example.com";
const NEW: &str = "moved@example.com";

/// `POST /v1/auth/change-email` for `new` with a fresh password step-up of `user`'s session.
fn ask(api: &UserApi, user: &UserTokens, new: &str) -> AuthAnswer {
    let step_up = api.password_step_up(&user.access);
    api.send_with(
        "POST",
        "/v1/auth/change-email",
        Some(&user.access),
        Some(&json!({ "email": new })),
        &[(STEP_UP_HEADER, &step_up)],
    )
}

/// Opens the confirmation page of `token` in a browser and presses its button.
fn confirm(srv: &TestServer, token: &str) -> crate::oauth_browser::Page {
    let mut b = Browser::new();
    let url = format!("{}/confirm-email?token={token}", srv.base);
    let page = b.get(&url);
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains("Confirm the new address"),
        "{}",
        page.body
    );
    b.post(&url, &[("csrf", &page.hidden("csrf", 0))])
}

/// The address moves only once the link mailed to the new address is opened; the old address
/// is told and then signs nobody in, and it is free to register again.
#[test]
fn the_address_moves_only_when_the_new_address_confirms() {
    let (smtp, srv, api, s) = user_setup("Address Move", &[]);
    let user = api.verified_user(&smtp, OLD, USER_PASSWORD);
    // Without a step-up: the gate's challenge, nothing mailed.
    let r = api.send(
        "POST",
        "/v1/auth/change-email",
        Some(&user.access),
        Some(&json!({ "email": NEW })),
    );
    r.expect_error(401, "account_linking/mfa_required");
    let r = api.send_with(
        "POST",
        "/v1/auth/change-email",
        Some(&user.access),
        Some(&json!({ "email": "not an address" })),
        &[],
    );
    r.expect_error(400, "validation/invalid_request");
    assert_eq!(ask(&api, &user, NEW).expect(202)["accepted"], true);
    let notice = smtp.wait_for(&api.slug, "email_change_asked", OLD, 1);
    assert!(notice.text.contains("m***@example.com"), "{}", notice.text);
    assert!(!notice.text.contains(NEW), "the new address is masked");
    let token = smtp.wait_for_link(NEW, "/confirm-email", 1);
    // Nothing moved yet.
    api.login_ok(OLD, USER_PASSWORD);
    api.login(NEW, USER_PASSWORD)
        .expect_error(401, "auth/invalid_credentials");
    let done = confirm(&srv, &token);
    assert_eq!(done.status, 200, "{}", done.body);
    assert!(
        done.body.contains("Your e-mail address is changed"),
        "{}",
        done.body
    );
    let me = api.me(&user.access);
    assert_eq!(me.expect(200)["email"], NEW);
    assert_eq!(me.expect(200)["email_verified"], true);
    api.login_ok(NEW, USER_PASSWORD);
    api.login(OLD, USER_PASSWORD)
        .expect_error(401, "auth/invalid_credentials");
    // The link works once.
    let mut b = Browser::new();
    let again = b.get(&format!("{}/confirm-email?token={token}", srv.base));
    assert_eq!(again.status, 410, "{}", again.body);
    // The old address is free for anyone.
    api.register(OLD, "another long password").expect(200);
    smtp.wait_for(&api.slug, "verify_email", OLD, 2);
    assert!(smtp.mails_of(&api.slug, "account_exists", OLD).is_empty());
    let events = audit_events(&srv, &s, &api.slug, "auth.email.changed");
    assert_eq!(events.len(), 1, "{events:?}");
}

/// An address another account holds is not taken: its owner is told, nothing changes, and the
/// asker gets the same answer as for a free address.
#[test]
fn an_address_another_account_holds_is_never_taken() {
    let (smtp, _srv, api, _s) = user_setup("Address Taken", &[]);
    let user = api.verified_user(&smtp, OLD, USER_PASSWORD);
    let other = api.verified_user(&smtp, "other@example.com", USER_PASSWORD);
    api.verified_user(&smtp, NEW, USER_PASSWORD);
    let free = ask(&api, &other, "free@example.com");
    assert_eq!(free.status, 202);
    let taken = ask(&api, &user, NEW);
    assert_eq!(taken.status, 202);
    assert_eq!(taken.body, free.body, "the same answer for a taken address");
    let told = smtp.wait_for(&api.slug, "email_change_taken", NEW, 1);
    assert!(told.text.contains("Nothing was changed"), "{}", told.text);
    assert!(smtp.mails_of(&api.slug, "email_change", NEW).is_empty());
    assert_eq!(api.me(&user.access).expect(200)["email"], OLD);
}

/// A password change kills a pending address change: its link no longer opens.
#[test]
fn a_password_change_kills_a_pending_address_change() {
    let (smtp, srv, api, _s) = user_setup("Address Stale", &[]);
    let user = api.verified_user(&smtp, OLD, USER_PASSWORD);
    ask(&api, &user, NEW).expect(202);
    let token = smtp.wait_for_link(NEW, "/confirm-email", 1);
    api.post_as(
        "/v1/auth/change-password",
        Some(&user.access),
        &json!({"current_password": USER_PASSWORD, "new_password": "a different passphrase"}),
    )
    .expect(200);
    let mut b = Browser::new();
    let page = b.get(&format!("{}/confirm-email?token={token}", srv.base));
    assert_eq!(page.status, 410, "{}", page.body);
    assert_eq!(api.me(&user.access).expect(200)["email"], OLD);
}

/// An address someone registered between the ask and the confirmation is not taken from them.
#[test]
fn an_address_registered_in_between_stays_with_its_new_account() {
    let (smtp, srv, api, _s) = user_setup("Address Race", &[]);
    let user = api.verified_user(&smtp, OLD, USER_PASSWORD);
    ask(&api, &user, NEW).expect(202);
    let token = smtp.wait_for_link(NEW, "/confirm-email", 1);
    api.register(NEW, "someone else's password").expect(200);
    let refused = confirm(&srv, &token);
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert!(
        refused.body.contains("That address is taken"),
        "{}",
        refused.body
    );
    assert_eq!(api.me(&user.access).expect(200)["email"], OLD);
}

/// Erasing the account kills its pending address change.
#[test]
fn an_erased_account_leaves_no_live_address_change() {
    let (smtp, srv, api, _s) = user_setup("Address Erased", &[]);
    let user = api.verified_user(&smtp, OLD, USER_PASSWORD);
    ask(&api, &user, NEW).expect(202);
    let token = smtp.wait_for_link(NEW, "/confirm-email", 1);
    let step_up = api.password_step_up(&user.access);
    api.send_with(
        "DELETE",
        "/v1/users/me",
        Some(&user.access),
        None,
        &[(STEP_UP_HEADER, &step_up)],
    )
    .expect(204);
    let mut b = Browser::new();
    let page = b.get(&format!("{}/confirm-email?token={token}", srv.base));
    assert_eq!(page.status, 410, "{}", page.body);
    api.login(NEW, USER_PASSWORD)
        .expect_error(401, "auth/invalid_credentials");
}

/// The account page asks for the move with the password's step-up and says to open the link.
#[test]
fn the_account_page_asks_for_an_address_change() {
    let (smtp, srv, api, _s) = user_setup("Address Page", &[]);
    api.verified_user(&smtp, OLD, USER_PASSWORD);
    let mut b = Browser::new();
    let sign_in = format!("{}/oauth/{}/authorize?for=account", srv.base, api.slug);
    let page = b.get(&sign_in);
    let csrf = page.hidden("csrf", 0);
    b.post(
        &sign_in,
        &[
            ("csrf", &csrf),
            ("step", "password"),
            ("email", OLD),
            ("password", USER_PASSWORD),
        ],
    )
    .redirect(303);
    let account = format!("{}/oauth/{}/account", srv.base, api.slug);
    let page = b.get(&account);
    assert_eq!(page.status, 200, "{}", page.body);
    let action = format!("/oauth/{}/account/email", api.slug);
    let at = page
        .body
        .find(&format!("action=\"{action}\""))
        .expect("the form");
    let rest = &page.body[at..];
    let start = rest.find("name=\"csrf\" value=\"").expect("csrf") + 19;
    let csrf = &rest[start..start + rest[start..].find('"').unwrap()];
    let url = format!("{}{action}", srv.base);
    let wrong = b.post(
        &url,
        &[
            ("csrf", csrf),
            ("email", NEW),
            ("password", "not the password"),
        ],
    );
    assert_eq!(wrong.status, 401, "{}", wrong.body);
    let sent = b.post(
        &url,
        &[("csrf", csrf), ("email", NEW), ("password", USER_PASSWORD)],
    );
    assert_eq!(sent.status, 200, "{}", sent.body);
    assert!(
        sent.body.contains("Check your new address"),
        "{}",
        sent.body
    );
    let token = smtp.wait_for_link(NEW, "/confirm-email", 1);
    assert_eq!(confirm(&srv, &token).status, 200);
    let page = b.get(&account);
    assert!(page.body.contains(NEW), "{}", page.body);
}
