//! The pages the dashboard's own mails link to, over plain HTTP as a browser sends it: every
//! link opens a page and `GET` uses nothing; each form is refused without its page's CSRF
//! value; the reset, the invitation and the verification act as the JSON routes do (the same
//! throttles, the same single use), and a verification link counts only with the password of
//! the account it was mailed for.

use serde_json::{json, Value};

use crate::hosted::{Browser, Page};
use crate::members::{invite, login_status, start, INVITE, RESET, VERIFY};
use crate::support::PASSWORD;

const BOSS: &str = "boss@pages.test";
const HIRE: &str = "hire@pages.test";
const FORGOT: &str = "/dashboard/forgot-password";
const NEW_PASSWORD: &str = "a page-chosen passphrase";

#[track_caller]
fn html_page(page: &Page, status: u16, says: &str) {
    page.expect(status);
    assert!(
        page.header("content-type").starts_with("text/html"),
        "{}",
        page.body
    );
    assert!(page.body.contains(says), "{says:?} not in {}", page.body);
}

/// Opens `path` and answers the page's CSRF value.
fn open(browser: &mut Browser, path: &str, says: &str) -> String {
    let page = browser.get(path, None);
    html_page(&page, 200, says);
    page.csrf_field()
}

#[test]
fn every_dashboard_mail_link_opens_a_page_that_uses_nothing_and_checks_its_csrf() {
    let (smtp, srv) = start();
    srv.signup("Pages Co", BOSS);
    let boss = srv.login(BOSS, PASSWORD);
    invite(&srv, &boss, "pages-co", HIRE, "viewer");
    let r = srv.post_json(
        "/v1/auth/dashboard/forgot-password",
        &json!({"email": BOSS}),
    );
    assert_eq!(r.status(), 202);
    let links = [
        (
            VERIFY,
            smtp.wait_for_link(BOSS, VERIFY, 1),
            "Confirm your dashboard address",
        ),
        (INVITE, smtp.wait_for_link(HIRE, INVITE, 1), HIRE),
        (
            RESET,
            smtp.wait_for_link(BOSS, RESET, 1),
            "Choose a new dashboard password",
        ),
    ];
    let mut browser = Browser::new(&srv);
    for (path, token, says) in &links {
        let at = format!("{path}?token={token}");
        // Twice: looking uses nothing.
        open(&mut browser, &at, says);
        let csrf = open(&mut browser, &at, says);
        // A form without its page's value is refused, and a value of another page too.
        for sent in ["", "forged", &browser.get(FORGOT, None).csrf_field()] {
            let r = browser.post(&at, &[("csrf", sent), ("password", PASSWORD)]);
            html_page(&r, 403, "The page has expired");
        }
        // A link the page was not given is invalid, with or without a form.
        html_page(&browser.get(path, None), 400, "not valid");
        let r = browser.post(path, &[("csrf", &csrf), ("password", PASSWORD)]);
        html_page(&r, 403, "The page has expired");
    }
    // Nothing was used: each link still does what it says, through the JSON routes.
    let r = srv.dash(
        "POST",
        "/v1/auth/dashboard/verify-email",
        &boss,
        Some(&json!({"token": links[0].1})),
    );
    assert_eq!(r.status(), 200);
    let r = srv.post_json(
        "/v1/auth/dashboard/accept-invite",
        &json!({"token": links[1].1, "password": NEW_PASSWORD}),
    );
    assert_eq!(r.status(), 200);
    let r = srv.post_json(
        "/v1/auth/dashboard/reset-password",
        &json!({"token": links[2].1, "password": NEW_PASSWORD}),
    );
    assert_eq!(r.status(), 200);
    // The page with no link: a form that asks, refused without its value.
    let r = browser.post(FORGOT, &[("csrf", "forged"), ("email", BOSS)]);
    html_page(&r, 403, "The page has expired");
}

#[test]
fn a_forgotten_password_is_replaced_through_the_pages_once() {
    let (smtp, srv) = start();
    srv.signup("Reset Co", BOSS);
    let before = srv.login(BOSS, PASSWORD);
    let mut browser = Browser::new(&srv);
    let csrf = open(&mut browser, FORGOT, "Reset your dashboard password");
    let r = browser.post(FORGOT, &[("csrf", &csrf), ("email", "not an address")]);
    html_page(&r, 400, "aria-invalid=\"true\"");
    // An address without an account is answered alike, and nothing is mailed to it.
    for email in [BOSS, "nobody@pages.test"] {
        let r = browser.post(FORGOT, &[("csrf", &csrf), ("email", email)]);
        html_page(&r, 200, "Check your e-mail");
    }
    let token = smtp.wait_for_link(BOSS, RESET, 1);
    assert!(smtp.mails_to("nobody@pages.test").is_empty());

    let at = format!("{RESET}?token={token}");
    let csrf = open(&mut browser, &at, "Choose a new dashboard password");
    for (first, second, says) in [
        ("short", "short", "12 to 128 characters"),
        ("password1234", "password1234", "too common"),
        (NEW_PASSWORD, "something else entirely", "not the same"),
    ] {
        let r = browser.post(
            &at,
            &[
                ("csrf", &csrf),
                ("password", first),
                ("password_confirm", second),
            ],
        );
        html_page(&r, 400, says);
        assert!(r.body.contains("role=\"alert\""), "{}", r.body);
    }
    assert_eq!(login_status(&srv, BOSS, PASSWORD), 200);
    let form = [
        ("csrf", csrf.as_str()),
        ("password", NEW_PASSWORD),
        ("password_confirm", NEW_PASSWORD),
    ];
    // The account never confirmed its address: the reset takes it over, and the page names
    // the tenant it no longer reaches (its creator's, made at sign-up).
    let done = browser.post(&at, &form);
    html_page(&done, 200, "Password changed");
    assert!(done.body.contains("took it over"), "{}", done.body);
    assert!(done.body.contains("Reset Co (reset-co)"), "{}", done.body);
    let after = srv.login(BOSS, NEW_PASSWORD);
    assert_eq!(after.body["tenants"], json!([]), "{}", after.body);
    assert_eq!(after.body["account"]["email_verified"], true);
    assert_eq!(login_status(&srv, BOSS, PASSWORD), 401);
    assert_eq!(login_status(&srv, BOSS, NEW_PASSWORD), 200);
    // Every earlier session ended.
    let r = srv.dash("GET", "/v1/auth/dashboard/tenants", &before, None);
    assert_eq!(r.status(), 401);
    // Single use, and a used link shows so before any form.
    html_page(&browser.post(&at, &form), 410, "no longer works");
    html_page(&browser.get(&at, None), 410, "no longer works");
}

#[test]
fn an_invitation_page_creates_the_account_or_takes_the_verified_accounts_own_password() {
    let (smtp, srv) = start();
    srv.signup("Corp", BOSS);
    let boss = srv.login(BOSS, PASSWORD);
    let mut browser = Browser::new(&srv);

    // A new address chooses its password on the page, twice.
    invite(&srv, &boss, "corp", HIRE, "admin");
    let at = format!("{INVITE}?token={}", smtp.wait_for_link(HIRE, INVITE, 1));
    let page = browser.get(&at, None);
    html_page(&page, 200, "Choose a password for your dashboard account");
    assert!(
        page.body.contains("name=\"password_confirm\""),
        "{}",
        page.body
    );
    let csrf = page.csrf_field();
    let r = browser.post(
        &at,
        &[
            ("csrf", &csrf),
            ("password", NEW_PASSWORD),
            ("password_confirm", "other"),
        ],
    );
    html_page(&r, 400, "not the same");
    let form = [
        ("csrf", csrf.as_str()),
        ("password", NEW_PASSWORD),
        ("password_confirm", NEW_PASSWORD),
    ];
    let done = browser.post(&at, &form);
    html_page(&done, 200, "You are now a member of corp as admin");
    let her = srv.login(HIRE, NEW_PASSWORD);
    assert_eq!(her.body["tenants"][0]["slug"], "corp", "{}", her.body);
    html_page(&browser.post(&at, &form), 410, "no longer works");

    // A verified account gives its own password; a wrong one is a failed sign-in.
    srv.signup("Own Co", "own@pages.test");
    let own = srv.login("own@pages.test", PASSWORD);
    let verify = smtp.wait_for_link("own@pages.test", VERIFY, 1);
    let r = srv.dash(
        "POST",
        "/v1/auth/dashboard/verify-email",
        &own,
        Some(&json!({"token": verify})),
    );
    assert_eq!(r.status(), 200);
    invite(&srv, &boss, "corp", "own@pages.test", "viewer");
    let at = format!(
        "{INVITE}?token={}",
        smtp.wait_for_link("own@pages.test", INVITE, 1)
    );
    let page = browser.get(&at, None);
    html_page(&page, 200, "Enter the password of your dashboard account");
    assert!(
        !page.body.contains("name=\"password_confirm\""),
        "{}",
        page.body
    );
    let csrf = page.csrf_field();
    let r = browser.post(
        &at,
        &[("csrf", &csrf), ("password", "someone else's guess")],
    );
    html_page(&r, 401, "not right");
    let r = browser.post(&at, &[("csrf", &csrf), ("password", PASSWORD)]);
    html_page(&r, 200, "You are now a member of corp as viewer");
    let again = srv.login("own@pages.test", PASSWORD);
    let slugs: Vec<&Value> = again.body["tenants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["slug"])
        .collect();
    assert_eq!(slugs, [&json!("corp"), &json!("own-co")]);
}

/// The verification page stands for the API's session with the account's own password: the
/// holder of the mailbox who is not the account's owner (someone signed up with their
/// address) cannot vouch for that account, nor verify their own with its link.
#[test]
fn the_verification_page_counts_the_link_only_with_the_accounts_own_password() {
    let (smtp, srv) = start();
    srv.signup("Corp", BOSS);
    srv.signup("Squat", HIRE);
    let squat = format!("{VERIFY}?token={}", smtp.wait_for_link(HIRE, VERIFY, 1));
    let own = format!("{VERIFY}?token={}", smtp.wait_for_link(BOSS, VERIFY, 1));
    let mut browser = Browser::new(&srv);

    // The mailbox's holder signs in with an account of their own: the link is not theirs.
    let csrf = open(&mut browser, &squat, "Confirm your dashboard address");
    let r = browser.post(
        &squat,
        &[("csrf", &csrf), ("email", BOSS), ("password", PASSWORD)],
    );
    html_page(&r, 410, "belongs to another dashboard account");
    assert_eq!(
        srv.login(HIRE, PASSWORD).body["account"]["email_verified"],
        false
    );
    assert_eq!(
        srv.login(BOSS, PASSWORD).body["account"]["email_verified"],
        false
    );

    // The owner: a wrong password is a failed sign-in; the right one verifies.
    let csrf = open(&mut browser, &own, "Confirm your dashboard address");
    let r = browser.post(
        &own,
        &[
            ("csrf", &csrf),
            ("email", BOSS),
            ("password", "not the password"),
        ],
    );
    html_page(&r, 401, "not right");
    assert!(r.body.contains(&format!("value=\"{BOSS}\"")), "{}", r.body);
    let form = [
        ("csrf", csrf.as_str()),
        ("email", BOSS),
        ("password", PASSWORD),
    ];
    html_page(&browser.post(&own, &form), 200, "Address confirmed");
    assert_eq!(
        srv.login(BOSS, PASSWORD).body["account"]["email_verified"],
        true
    );
    html_page(&browser.post(&own, &form), 410, "no longer works");
}

#[test]
fn the_dashboard_pages_speak_the_readers_language() {
    let (_smtp, srv) = start();
    let mut browser = Browser::new(&srv);
    for (lang, says) in [
        ("pl", "Zresetuj hasło do panelu"),
        ("de", "Dashboard-Passwort zurücksetzen"),
        ("fr", "Réinitialiser le mot de passe du tableau de bord"),
        ("es", "Restablece la contraseña del panel"),
    ] {
        let page = browser.get(FORGOT, Some(lang));
        html_page(&page, 200, says);
        assert_eq!(page.header("content-language"), lang);
    }
}

/// Every page names its icon, which the server serves (also where browsers look unasked), so
/// no page load asks for a file that is not there.
#[test]
fn the_pages_icon_is_served_where_they_name_it_and_where_browsers_look() {
    let (_smtp, srv) = start();
    let mut browser = Browser::new(&srv);
    let page = browser.get(FORGOT, None);
    html_page(
        &page,
        200,
        "<link rel=\"icon\" href=\"/hosted/favicon.svg\"",
    );
    for path in ["/hosted/favicon.svg", "/favicon.ico"] {
        let icon = browser.get(path, None);
        icon.expect(200);
        assert_eq!(icon.header("content-type"), "image/svg+xml");
        assert!(icon.body.starts_with("<svg"), "{}", icon.body);
    }
}
