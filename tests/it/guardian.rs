//! Minor protection and guardian consent, through the real binary: the setting, a minor held
//! at registration, the consent mail and page (JSON and HTML forms, CSRF bound to the cookie),
//! accept and decline, the 30-day erasure of a declined account, the portal (withdraw, export
//! by mailed download link, delete with its confirm nonce), the enumeration-safe management
//! link, the webhooks, and every schema rule.

use reqwest::blocking::{Client, Response};
use serde_json::{json, Value};

use crate::support::{
    assert_no_mail, assert_none_mailed_since, audit_events, error_code, json_keys, name_set,
    user_setup, AuthAnswer, Session, SmtpStub, TestServer, UserApi, USER_PASSWORD,
};
use crate::webhooks::{assert_signed, create_endpoint, Receiver, PRIVATE_OK};

pub(crate) const KID_DOB: &str = "2016-05-01";
const ADULT_DOB: &str = "1990-01-01";
pub(crate) const GUARDIAN: &str = "parent@example.com";

pub(crate) fn minors_path(slug: &str) -> String {
    format!("/v1/auth/dashboard/tenants/{slug}/settings/minors")
}

pub(crate) fn minors_body() -> Value {
    json!({
        "minor_protection_enabled": true,
        "digital_consent_age": 16,
        "controller_name": "Kids Club Ltd",
        "lawful_basis": "consent of the holder of parental responsibility (GDPR art. 8)",
        "purposes": ["running the club's account", "sending match reminders"],
        "data_categories": ["e-mail address", "date of birth"],
        "retention": "until the account is deleted",
        "dpia": {
            "dpia_key": "0190a6b2-0000-7000-8000-00000000d91a",
            "dpia_version": 3,
            "dpia_content_hash": "sha256:4f2a",
            "linked_at": "2026-11-01T09:00:00Z",
        },
    })
}

/// Turns minor protection on; asserts 200.
#[track_caller]
pub(crate) fn protect_minors(srv: &TestServer, s: &Session, slug: &str) {
    let (st, body) = srv.dash_json("PUT", &minors_path(slug), s, Some(&minors_body()));
    assert_eq!(st, 200, "{body}");
}

/// A client of the guardian routes keeping the CSRF cookie, as a browser does.
pub(crate) struct Guardian {
    client: Client,
    base: String,
    cookie: Option<String>,
}

impl Guardian {
    pub(crate) fn new(srv: &TestServer) -> Self {
        Guardian {
            client: Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            base: srv.base.clone(),
            cookie: None,
        }
    }

    fn keep_cookie(&mut self, r: &Response) {
        if let Some(c) = r
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(|c| c.strip_prefix("tessera_csrf="))
        {
            self.cookie = Some(c.split(';').next().unwrap().to_owned());
        }
    }

    fn with_cookie(
        &self,
        req: reqwest::blocking::RequestBuilder,
    ) -> reqwest::blocking::RequestBuilder {
        match &self.cookie {
            Some(c) => req.header("cookie", format!("tessera_csrf={c}")),
            None => req,
        }
    }

    /// GET with `Accept: application/json`.
    pub(crate) fn get_json(&mut self, path: &str) -> AuthAnswer {
        let req = self
            .client
            .get(format!("{}{path}", self.base))
            .header("accept", "application/json");
        let r = self.with_cookie(req).send().unwrap();
        self.keep_cookie(&r);
        AuthAnswer::read(r)
    }

    /// GET as a browser: the page.
    fn get_page(&mut self, path: &str) -> (u16, String) {
        let req = self
            .client
            .get(format!("{}{path}", self.base))
            .header("accept", "text/html");
        let r = self.with_cookie(req).send().unwrap();
        self.keep_cookie(&r);
        let status = r.status().as_u16();
        (status, r.text().unwrap())
    }

    pub(crate) fn post_json(&self, path: &str, body: &Value) -> AuthAnswer {
        let req = self.client.post(format!("{}{path}", self.base)).json(body);
        AuthAnswer::read(self.with_cookie(req).send().unwrap())
    }

    fn post_form(&self, path: &str, form: &[(&str, &str)]) -> (u16, String) {
        let req = self.client.post(format!("{}{path}", self.base)).form(form);
        let r = self.with_cookie(req).send().unwrap();
        let status = r.status().as_u16();
        (status, r.text().unwrap())
    }
}

/// The value of the page form's hidden `csrf` field.
fn csrf_field(page: &str) -> String {
    let key = "name=\"csrf\" value=\"";
    let start = page
        .find(key)
        .unwrap_or_else(|| panic!("no csrf field in {page}"))
        + key.len();
    page[start..].split('"').next().unwrap().to_owned()
}

/// Registers `email` with a date of birth and confirms the address.
#[track_caller]
pub(crate) fn register_verified(api: &UserApi, smtp: &SmtpStub, email: &str, dob: &str) -> Value {
    let r = api.register_body(&json!({
        "email": email, "password": USER_PASSWORD, "consent": true, "date_of_birth": dob,
    }));
    let body = r.expect(200).clone();
    let token = api.verification_token(smtp, email, 1);
    api.post("/v1/auth/verify-email", &json!({"token": token}))
        .expect(200);
    body
}

/// The child asks `guardian`; answers the consent link's token from the `n`-th mail.
#[track_caller]
pub(crate) fn ask_guardian(
    api: &UserApi,
    smtp: &SmtpStub,
    child: &str,
    guardian: &str,
    n: usize,
) -> String {
    let r = api.post(
        "/v1/auth/parental-consent",
        &json!({"email": child, "password": USER_PASSWORD, "guardian_email": guardian}),
    );
    assert_eq!(r.expect(202)["status"], "consent_requested");
    let mail = smtp.wait_for(&api.slug, "guardian_consent", guardian, n);
    assert!(
        mail.text.contains(child),
        "the mail names the child: {}",
        mail.text
    );
    mail.token_after("/v1/guardian/consent?token=")
        .unwrap_or_else(|| panic!("no consent link in {}", mail.text))
}

/// The guardian accepts through the JSON flavour.
#[track_caller]
fn accept(g: &mut Guardian, token: &str) {
    let ctx = g.get_json(&format!("/v1/guardian/consent?token={token}"));
    let ctx = ctx.expect(200).clone();
    assert_eq!(ctx["state"], "valid", "{ctx}");
    let r = g.post_json(
        "/v1/guardian/consent",
        &json!({"token": token, "action": "accept", "csrf": ctx["csrf"], "attestation": true}),
    );
    assert_eq!(r.expect(200)["child_account_status"], "active");
}

/// The portal link's token from the `n`-th portal mail to `guardian`.
#[track_caller]
pub(crate) fn portal_token(
    api: &UserApi,
    smtp: &SmtpStub,
    child: &str,
    guardian: &str,
    n: usize,
) -> String {
    api.post(
        "/v1/guardian/management-link",
        &json!({"child_email": child, "guardian_email": guardian}),
    )
    .expect(202);
    let mail = smtp.wait_for(&api.slug, "guardian_portal", guardian, n);
    mail.token_after("/v1/guardian/portal?token=")
        .unwrap_or_else(|| panic!("no portal link in {}", mail.text))
}

// ---------------------------------------------------------------------------------------------

#[test]
fn a_minor_is_held_until_a_guardian_consents_and_then_signs_in() {
    let receiver = Receiver::start();
    let (smtp, srv, api, s) = user_setup("Kids Club", &[PRIVATE_OK]);
    srv.reauth(&s, crate::support::PASSWORD);
    let ep = create_endpoint(
        &srv,
        &s,
        &api.slug,
        &receiver.url,
        &["user.created", "guardian.consent_granted"],
    );

    // Off by default; the owner turns it on and reads it back.
    let (st, body) = srv.dash_json("GET", &minors_path(&api.slug), &s, None);
    assert_eq!(st, 200, "{body}");
    assert_eq!(body["minor_protection_enabled"], false);
    assert_eq!(body["digital_consent_age"], 16);
    protect_minors(&srv, &s, &api.slug);
    let (_, body) = srv.dash_json("GET", &minors_path(&api.slug), &s, None);
    assert_eq!(body["controller_name"], "Kids Club Ltd");
    assert_eq!(body["dpia"]["dpia_version"], 3);
    assert_eq!(body["dpia"]["linked_at"], "2026-11-01T09:00:00Z");

    // Without a date of birth (or a wallet's age proof) there is no registration now.
    let r = api.register("nodob@example.com", USER_PASSWORD);
    r.expect_error(400, "validation/invalid_request");
    assert!(
        r.body["error"]["details"]["fields"]["date_of_birth"].is_string(),
        "{}",
        r.body
    );

    // An adult registers and signs in as before.
    register_verified(&api, &smtp, "grown@example.com", ADULT_DOB);
    api.login_ok("grown@example.com", USER_PASSWORD);

    // A minor gets the same answer, but the account is held.
    let kid = register_verified(&api, &smtp, "kid@example.com", KID_DOB);
    assert_eq!(
        json_keys(&kid["user"]),
        name_set(&[
            "id",
            "email",
            "email_verified",
            "is_anonymous",
            "created_at"
        ])
    );
    let kid_id = kid["user"]["id"].as_str().unwrap().to_owned();
    api.login("kid@example.com", USER_PASSWORD)
        .expect_error(403, "auth/guardian_consent_pending");
    // The tenant's admins see the account held.
    let held_users = |status: &str| {
        let (st, page) = srv.dash_json(
            "GET",
            &format!(
                "/v1/auth/dashboard/tenants/{}/users?status={status}",
                api.slug
            ),
            &s,
            None,
        );
        assert_eq!(st, 200, "{page}");
        page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["email"].as_str().unwrap_or_default().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(held_users("held"), vec!["kid@example.com".to_owned()]);
    // A wrong password learns nothing about the hold.
    api.login("kid@example.com", "not the right password")
        .expect_error(401, "auth/invalid_credentials");
    // Asking needs the child's own password; an adult's account has nothing to ask for.
    api.post(
        "/v1/auth/parental-consent",
        &json!({"email": "kid@example.com", "password": "wrong password!", "guardian_email": GUARDIAN}),
    )
    .expect_error(401, "auth/invalid_credentials");
    api.post(
        "/v1/auth/parental-consent",
        &json!({"email": "grown@example.com", "password": USER_PASSWORD, "guardian_email": GUARDIAN}),
    )
    .expect_error(409, "guardian/consent_not_pending");

    // The first link dies when the child asks again.
    let first = ask_guardian(&api, &smtp, "kid@example.com", GUARDIAN, 1);
    let token = ask_guardian(&api, &smtp, "kid@example.com", GUARDIAN, 2);
    let mut g = Guardian::new(&srv);
    let stale = g.get_json(&format!("/v1/guardian/consent?token={first}"));
    assert_eq!(stale.expect(200)["state"], "invalid");

    // The consent context says what is consented to, and nothing about the date of birth.
    let ctx = g
        .get_json(&format!("/v1/guardian/consent?token={token}"))
        .expect(200)
        .clone();
    assert_eq!(ctx["state"], "valid");
    assert_eq!(ctx["child_email"], "kid@example.com");
    assert_eq!(ctx["controller_name"], "Kids Club Ltd");
    assert_eq!(ctx["purposes"][1], "sending match reminders");
    assert!(!ctx.to_string().contains(KID_DOB));
    let csrf = ctx["csrf"].as_str().unwrap().to_owned();

    // Without the attestation, with another CSRF value, or without the cookie: refused, and
    // the link still works afterwards.
    let body = |action: &str, csrf: &str, attest: bool| json!({"token": token, "action": action, "csrf": csrf, "attestation": attest});
    g.post_json("/v1/guardian/consent", &body("accept", &csrf, false))
        .expect_error(400, "validation/invalid_request");
    g.post_json("/v1/guardian/consent", &body("accept", "forged", true))
        .expect_error(403, "guardian/csrf_failed");
    let cookieless = Guardian::new(&srv);
    cookieless
        .post_json("/v1/guardian/consent", &body("accept", &csrf, true))
        .expect_error(403, "guardian/csrf_failed");
    api.login("kid@example.com", USER_PASSWORD)
        .expect_error(403, "auth/guardian_consent_pending");

    // Accepted: the child signs in; the link is spent.
    let r = g.post_json("/v1/guardian/consent", &body("accept", &csrf, true));
    assert_eq!(r.expect(200)["child_account_status"], "active");
    api.login_ok("kid@example.com", USER_PASSWORD);
    assert!(held_users("held").is_empty());
    g.post_json("/v1/guardian/consent", &body("accept", &csrf, true))
        .expect_error(400, "guardian/invalid_token");
    assert_eq!(
        g.get_json(&format!("/v1/guardian/consent?token={token}"))
            .expect(200)["state"],
        "invalid"
    );

    // The webhook and the audit trail name the child by id only.
    let granted = receiver.wait_for("guardian.consent_granted", 1);
    assert_signed(&granted[0], &ep.secret);
    assert_eq!(granted[0].json()["data"]["user_id"], kid_id.as_str());
    assert_eq!(granted[0].json()["data"]["consent_method"], "email");
    let events = audit_events(&srv, &s, &api.slug, "guardian.consent_granted");
    assert_eq!(events.len(), 1);
    assert_eq!(
        audit_events(&srv, &s, &api.slug, "guardian.consent_requested").len(),
        2
    );
    let everything = srv
        .dash(
            "GET",
            &format!(
                "/v1/auth/dashboard/tenants/{}/audit-events?limit=200",
                api.slug
            ),
            &s,
            None,
        )
        .text()
        .unwrap();
    assert!(
        !everything.contains(KID_DOB),
        "no date of birth in the audit log"
    );
    assert!(
        !srv.log_text().contains(KID_DOB),
        "no date of birth in the log"
    );
}

#[test]
fn a_declined_minor_cannot_sign_in_and_is_erased_30_days_later() {
    let (smtp, srv, api, s) = user_setup("Kids Club", &[]);
    protect_minors(&srv, &s, &api.slug);
    register_verified(&api, &smtp, "kid@example.com", KID_DOB);
    let token = ask_guardian(&api, &smtp, "kid@example.com", GUARDIAN, 1);

    // The hosted page, as a browser: nothing is decided by looking, the box starts unticked.
    let mut g = Guardian::new(&srv);
    let (st, page) = g.get_page(&format!("/v1/guardian/consent?token={token}&lang=de"));
    assert_eq!(st, 200, "{page}");
    assert!(page.contains("kid@example.com"));
    assert!(page.contains("Kids Club Ltd"));
    assert!(page.contains("lang=\"de\""), "the reader's language");
    // The line that introduces the purposes is followed by their list, not by other text.
    let line = "<p>Die Daten würden verwendet für:</p>";
    let intro = page.find(line).expect("the intro") + line.len();
    let list = page.find("<ul class=\"items\">").expect("the list");
    assert!(
        list > intro && page[intro..list].trim().is_empty(),
        "{page}"
    );
    assert!(
        page.contains("name=\"attestation\" value=\"true\">"),
        "unticked: {page}"
    );
    let csrf = csrf_field(&page);
    let path = "/v1/guardian/consent";
    // Without the box ticked: the page again, with the error.
    let (st, again) = g.post_form(
        path,
        &[("token", &token), ("csrf", &csrf), ("action", "decline")],
    );
    assert_eq!(st, 400, "{again}");
    assert!(again.contains("class=\"summary\""));
    // A forged CSRF value: refused.
    let (st, _) = g.post_form(
        path,
        &[
            ("token", &token),
            ("csrf", "forged"),
            ("action", "decline"),
            ("attestation", "true"),
        ],
    );
    assert_eq!(st, 403);
    let (st, done) = g.post_form(
        path,
        &[
            ("token", &token),
            ("csrf", &csrf),
            ("action", "decline"),
            ("attestation", "true"),
        ],
    );
    assert_eq!(st, 200, "{done}");

    api.login("kid@example.com", USER_PASSWORD)
        .expect_error(403, "auth/guardian_consent_declined");
    api.post(
        "/v1/auth/parental-consent",
        &json!({"email": "kid@example.com", "password": USER_PASSWORD, "guardian_email": GUARDIAN}),
    )
    .expect_error(409, "guardian/consent_not_pending");
    assert_eq!(
        audit_events(&srv, &s, &api.slug, "guardian.consent_declined").len(),
        1
    );

    // The daily purge keeps it for 30 days, then erases it.
    let as_of = |days: i64| {
        let t = time::OffsetDateTime::now_utc() + time::Duration::days(days);
        t.format(&time::format_description::well_known::Rfc3339)
            .unwrap()
    };
    let run = |days: i64| {
        srv.admin(
            &[
                "purge",
                "run",
                "--tenant",
                &api.slug,
                "--as-of",
                &as_of(days),
            ],
            "",
        )
        .json()
    };
    run(29);
    api.login("kid@example.com", USER_PASSWORD)
        .expect_error(403, "auth/guardian_consent_declined");
    assert!(audit_events(&srv, &s, &api.slug, "guardian.declined_account_erased").is_empty());
    run(31);
    api.login("kid@example.com", USER_PASSWORD)
        .expect_error(401, "auth/invalid_credentials");
    let erased = audit_events(&srv, &s, &api.slug, "guardian.declined_account_erased");
    assert_eq!(erased.len(), 1);
    assert!(!erased[0].to_string().contains("kid@example.com"));
    // The address is free again.
    api.register_body(&json!({
        "email": "kid@example.com", "password": USER_PASSWORD, "consent": true,
        "date_of_birth": ADULT_DOB,
    }))
    .expect(200);
    smtp.wait_for(&api.slug, "verify_email", "kid@example.com", 2);
}

#[test]
fn the_portal_withdraws_exports_and_deletes_only_for_the_guardian_who_consented() {
    let receiver = Receiver::start();
    let (smtp, srv, api, s) = user_setup("Kids Club", &[PRIVATE_OK]);
    srv.reauth(&s, crate::support::PASSWORD);
    let ep = create_endpoint(
        &srv,
        &s,
        &api.slug,
        &receiver.url,
        &["guardian.consent_withdrawn", "user.deleted"],
    );
    protect_minors(&srv, &s, &api.slug);
    let kid = register_verified(&api, &smtp, "kid@example.com", KID_DOB);
    let kid_id = kid["user"]["id"].as_str().unwrap().to_owned();
    let token = ask_guardian(&api, &smtp, "kid@example.com", GUARDIAN, 1);
    let mut g = Guardian::new(&srv);
    accept(&mut g, &token);
    let session = api.login_ok("kid@example.com", USER_PASSWORD);

    // The management link: 202 whatever is asked; mail only for the guardian who consented.
    for (child, guardian) in [
        ("nobody@example.com", GUARDIAN),
        ("kid@example.com", "stranger@example.com"),
        ("grown@example.com", GUARDIAN),
    ] {
        api.post(
            "/v1/guardian/management-link",
            &json!({"child_email": child, "guardian_email": guardian}),
        )
        .expect(202);
    }
    let portal = portal_token(&api, &smtp, "kid@example.com", GUARDIAN, 1);
    // That link was asked for after the others: once it arrived and the postman is idle,
    // nothing else went out.
    assert_none_mailed_since(&smtp, &srv, &["stranger@example.com"]);
    assert_eq!(
        smtp.mails_of(&api.slug, "guardian_portal", GUARDIAN).len(),
        1
    );

    // The context: spec 2.7's fields, the receipt's exactly.
    let ctx = g
        .get_json(&format!("/v1/guardian/portal?token={portal}"))
        .expect(200)
        .clone();
    assert_eq!(ctx["state"], "valid", "{ctx}");
    assert_eq!(ctx["child_account_status"], "active");
    assert_eq!(
        json_keys(&ctx),
        name_set(&[
            "state",
            "child_account_status",
            "registered_at",
            "last_login_at",
            "data_categories",
            "consent_receipt",
            "controller_name",
            "csrf",
            "available_actions",
        ])
    );
    let receipt = &ctx["consent_receipt"];
    assert_eq!(
        json_keys(receipt),
        name_set(&[
            "consented_at",
            "lawful_basis",
            "purposes",
            "data_categories",
            "retention",
            "controller",
            "withdrawal_available",
            "consent_method",
        ])
    );
    assert_eq!(receipt["withdrawal_available"], true);
    assert_eq!(receipt["consent_method"], "email");
    assert_eq!(receipt["controller"], "Kids Club Ltd");
    assert!(ctx["last_login_at"].is_string());
    assert_eq!(
        ctx["available_actions"],
        json!(["withdraw", "export", "delete"])
    );
    let csrf = ctx["csrf"].as_str().unwrap().to_owned();
    let act = |action: &str, nonce: Option<&str>| {
        let mut b = json!({"token": portal, "action": action, "csrf": csrf});
        if let Some(n) = nonce {
            b["confirm_nonce"] = json!(n);
        }
        g.post_json("/v1/guardian/portal", &b)
    };

    // Withdraw: held again, its sessions end, the receipt stays.
    let r = act("withdraw", None);
    let body = r.expect(200).clone();
    assert_eq!(body["result"], "withdrawn");
    assert_eq!(body["portal"]["child_account_status"], "held");
    assert_eq!(
        body["portal"]["consent_receipt"]["withdrawal_available"],
        true
    );
    assert_eq!(
        body["portal"]["available_actions"],
        json!(["export", "delete"])
    );
    api.refresh(&session.refresh).expect(401);
    api.login("kid@example.com", USER_PASSWORD)
        .expect_error(403, "auth/guardian_consent_pending");
    act("withdraw", None).expect_error(409, "guardian/consent_not_pending");
    // Only the guardian who consented can be asked again; the portal stays theirs.
    api.post(
        "/v1/auth/parental-consent",
        &json!({"email": "kid@example.com", "password": USER_PASSWORD, "guardian_email": "kid.alt@example.com"}),
    )
    .expect_error(409, "guardian/other_guardian");
    assert_no_mail(&smtp, &srv, &api, &["kid.alt@example.com"]);
    let withdrawn = receiver.wait_for("guardian.consent_withdrawn", 1);
    assert_signed(&withdrawn[0], &ep.secret);
    assert_eq!(withdrawn[0].json()["data"]["user_id"], kid_id.as_str());

    // Export: a download link mailed to the guardian, not the data itself.
    assert_eq!(act("export", None).expect(200)["result"], "export_sent");
    let mail = smtp.wait_for(&api.slug, "guardian_export", GUARDIAN, 1);
    assert!(
        !mail.text.contains(KID_DOB),
        "the mail holds a link, not the data"
    );
    let download = mail
        .token_after("/v1/guardian/export?token=")
        .expect("a download link");
    let r = AuthAnswer::read(
        srv.client
            .get(srv.url(&format!("/v1/guardian/export?token={download}")))
            .send()
            .unwrap(),
    );
    let archive = r.expect(200).clone();
    assert!(r
        .header("content-disposition")
        .is_some_and(|d| d.starts_with("attachment")));
    assert_eq!(archive["profile"]["email"], "kid@example.com");
    assert_eq!(archive["date_of_birth"], KID_DOB);
    assert_eq!(archive["guardian_consent"]["status"], "held");
    assert!(!archive.to_string().contains("argon2"), "no password hash");
    let forged = AuthAnswer::read(
        srv.client
            .get(srv.url(&format!("/v1/guardian/export?token={portal}")))
            .send()
            .unwrap(),
    );
    forged.expect_error(404, "guardian/export_not_found");
    // A portal link asks for three exports at most.
    act("export", None).expect(200);
    act("export", None).expect(200);
    let r = act("export", None);
    r.expect_error(429, "auth/rate_limited");
    assert!(r.header("retry-after").is_some());
    smtp.wait_for(&api.slug, "guardian_export", GUARDIAN, 3);

    // Delete: the first call answers a nonce; a wrong one is refused; the right one erases.
    let first = act("delete", None).expect(200).clone();
    assert_eq!(first["result"], "confirm_required");
    let nonce = first["portal"]["confirm_token"]
        .as_str()
        .unwrap()
        .to_owned();
    act("delete", Some("not-the-nonce")).expect_error(400, "guardian/invalid_token");
    api.login("kid@example.com", USER_PASSWORD)
        .expect_error(403, "auth/guardian_consent_pending");
    let done = act("delete", Some(&nonce)).expect(200).clone();
    assert_eq!(done["result"], "deleted");
    assert_eq!(done["portal"], json!({"state": "invalid"}));
    api.login("kid@example.com", USER_PASSWORD)
        .expect_error(401, "auth/invalid_credentials");
    assert_eq!(
        g.get_json(&format!("/v1/guardian/portal?token={portal}"))
            .expect(200)
            .clone(),
        json!({"state": "invalid"})
    );
    let deleted = receiver.wait_for("user.deleted", 1);
    assert_eq!(deleted[0].json()["data"]["user_id"], kid_id.as_str());
    // The record of the erasure keeps the id and nothing personal.
    let events = audit_events(&srv, &s, &api.slug, "guardian.account_deleted");
    assert_eq!(events.len(), 1);
    let text = events[0].to_string();
    assert!(text.contains(&kid_id));
    assert!(
        !text.contains("kid@example.com") && !text.contains(GUARDIAN),
        "{text}"
    );
}

#[test]
fn the_hosted_portal_deletes_after_its_confirmation_form() {
    let (smtp, srv, api, s) = user_setup("Kids Club", &[]);
    protect_minors(&srv, &s, &api.slug);
    register_verified(&api, &smtp, "kid@example.com", KID_DOB);
    let token = ask_guardian(&api, &smtp, "kid@example.com", GUARDIAN, 1);
    let mut g = Guardian::new(&srv);
    accept(&mut g, &token);
    let portal = portal_token(&api, &smtp, "kid@example.com", GUARDIAN, 1);

    let (st, page) = g.get_page(&format!("/v1/guardian/portal?token={portal}"));
    assert_eq!(st, 200, "{page}");
    assert!(page.contains("kid@example.com"));
    assert_eq!(page.matches("<form").count(), 3, "withdraw, export, delete");
    let csrf = csrf_field(&page);
    let path = "/v1/guardian/portal";
    let (st, confirm) = g.post_form(
        path,
        &[("token", &portal), ("csrf", &csrf), ("action", "delete")],
    );
    assert_eq!(st, 200, "{confirm}");
    let key = "name=\"confirm_nonce\" value=\"";
    let start = confirm.find(key).expect("a confirmation form") + key.len();
    let nonce = confirm[start..].split('"').next().unwrap().to_owned();
    api.login_ok("kid@example.com", USER_PASSWORD);
    let (st, done) = g.post_form(
        path,
        &[
            ("token", &portal),
            ("csrf", &csrf),
            ("action", "delete"),
            ("confirm_nonce", &nonce),
        ],
    );
    assert_eq!(st, 200, "{done}");
    api.login("kid@example.com", USER_PASSWORD)
        .expect_error(401, "auth/invalid_credentials");
    // A link of the wrong kind opens nothing.
    let (st, _) = g.get_page(&format!("/v1/guardian/portal?token={token}"));
    assert_eq!(st, 410);
}

#[test]
fn every_guardian_schema_rule_is_enforced() {
    let (smtp, srv, api, s) = user_setup("Kids Club", &[]);
    let put = |body: &Value| srv.dash_json("PUT", &minors_path(&api.slug), &s, Some(body));
    // The setting's rules.
    for (field, value) in [
        ("digital_consent_age", json!(12)),
        ("digital_consent_age", json!(17)),
        ("purposes", json!([])),
        ("data_categories", json!(vec!["x"; 21])),
        ("lawful_basis", json!("  ")),
        ("retention", json!("x".repeat(501))),
        ("controller_name", json!("")),
        ("unknown_field", json!(true)),
    ] {
        let mut body = minors_body();
        body[field] = value;
        let (st, err) = put(&body);
        assert_eq!(st, 400, "{field}: {err}");
        assert_eq!(error_code(&err), "validation/invalid_request", "{field}");
    }
    for (field, value) in [
        ("dpia_version", json!(0)),
        ("linked_at", json!("2026-11-01T10:00:00+01:00")),
        ("dpia_key", json!("not-a-uuid")),
        ("dpia_content_hash", json!("")),
        ("extra", json!(1)),
    ] {
        let mut body = minors_body();
        body["dpia"][field] = value;
        let (st, err) = put(&body);
        assert_eq!(st, 400, "dpia.{field}: {err}");
    }
    let (_, stored) = srv.dash_json("GET", &minors_path(&api.slug), &s, None);
    assert_eq!(
        stored["minor_protection_enabled"], false,
        "nothing was stored"
    );
    protect_minors(&srv, &s, &api.slug);
    register_verified(&api, &smtp, "kid@example.com", KID_DOB);

    // ParentalConsentRequest.
    let ok =
        json!({"email": "kid@example.com", "password": USER_PASSWORD, "guardian_email": GUARDIAN});
    for (field, value) in [
        ("email", json!("not an address")),
        (
            "guardian_email",
            json!(format!("{}@example.com", "a".repeat(250))),
        ),
        ("password", json!("")),
        ("password", json!("p".repeat(1025))),
        ("extra", json!(1)),
    ] {
        let mut body = ok.clone();
        body[field] = value;
        api.post("/v1/auth/parental-consent", &body)
            .expect_error(400, "validation/invalid_request");
    }
    let mut missing = ok.clone();
    missing.as_object_mut().unwrap().remove("guardian_email");
    api.post("/v1/auth/parental-consent", &missing)
        .expect_error(400, "validation/invalid_request");
    // The child cannot name themselves.
    let mut own = ok.clone();
    own["guardian_email"] = json!("kid@example.com");
    api.post("/v1/auth/parental-consent", &own)
        .expect_error(400, "validation/invalid_request");
    // No key: 401.
    let r = api.send_as(
        None,
        "POST",
        "/v1/auth/parental-consent",
        None,
        Some(&ok),
        None,
    );
    assert_eq!(r.status, 401);

    // GuardianManagementLinkRequest.
    for body in [
        json!({"child_email": "kid@example.com"}),
        json!({"child_email": "kid@example.com", "guardian_email": "nope"}),
        json!({"child_email": "kid@example.com", "guardian_email": GUARDIAN, "x": 1}),
    ] {
        api.post("/v1/guardian/management-link", &body)
            .expect_error(400, "validation/invalid_request");
    }

    // GuardianConsentConsume and GuardianManagementMutate.
    let token = ask_guardian(&api, &smtp, "kid@example.com", GUARDIAN, 1);
    let mut g = Guardian::new(&srv);
    let csrf = g
        .get_json(&format!("/v1/guardian/consent?token={token}"))
        .expect(200)["csrf"]
        .as_str()
        .unwrap()
        .to_owned();
    let good = json!({"token": token, "action": "accept", "csrf": csrf, "attestation": true});
    for (field, value) in [
        ("action", json!("maybe")),
        ("attestation", json!(false)),
        ("attestation", json!("true")),
        ("token", json!("")),
        ("csrf", json!("c".repeat(513))),
        ("extra", json!(1)),
    ] {
        let mut body = good.clone();
        body[field] = value;
        g.post_json("/v1/guardian/consent", &body)
            .expect_error(400, "validation/invalid_request");
    }
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("attestation");
    g.post_json("/v1/guardian/consent", &missing)
        .expect_error(400, "validation/invalid_request");
    // The consent token is no portal token, and an unknown token is just invalid.
    assert_eq!(
        g.get_json(&format!("/v1/guardian/portal?token={token}"))
            .expect(200)
            .clone(),
        json!({"state": "invalid"})
    );
    assert_eq!(
        g.get_json("/v1/guardian/portal?token=AAAA")
            .expect(200)
            .clone(),
        json!({"state": "invalid"})
    );
    let mutate = json!({"token": token, "action": "withdraw", "csrf": "x"});
    for (field, value) in [
        ("action", json!("erase")),
        ("confirm_nonce", json!("")),
        ("extra", json!(1)),
    ] {
        let mut body = mutate.clone();
        body[field] = value;
        g.post_json("/v1/guardian/portal", &body)
            .expect_error(400, "validation/invalid_request");
    }
    // Everything well-formed but for the wrong kind of link: refused, the consent link lives.
    let portal_csrf = g.get_json(&format!("/v1/guardian/portal?token={token}"));
    assert!(portal_csrf.body.get("csrf").is_none());
    // The consent still goes through.
    accept(&mut g, &token);
    api.login_ok("kid@example.com", USER_PASSWORD);
}

#[test]
fn sign_ups_that_bring_no_age_are_refused_and_a_claimed_minor_guest_is_held() {
    let (smtp, srv, api, s) = user_setup("Kids Club", &[]);
    crate::support::enable_guests(&srv, &s, &api.slug);
    let guest = api
        .send_as(
            Some(&api.api_key),
            "POST",
            "/v1/auth/anonymous",
            None,
            None,
            Some(&crate::support::fresh_client_ip()),
        )
        .expect(201)
        .clone();
    let guest_access = guest["access_token"].as_str().unwrap().to_owned();
    protect_minors(&srv, &s, &api.slug);

    // A login code that would make an account: the code is right, the account is refused.
    let r = api.post(
        "/v1/auth/email-otp",
        &json!({"email": "newbie@example.com", "mode": "login_or_create"}),
    );
    assert_eq!(r.status, 202, "{}", r.body);
    let mail = smtp.wait_for(&api.slug, "email_otp", "newbie@example.com", 1);
    let code = crate::support::six_digit_code(&mail.text).unwrap();
    api.post(
        "/v1/auth/email-otp/verify",
        &json!({"email": "newbie@example.com", "code": code}),
    )
    .expect_error(403, "auth/age_required");

    // The guest claims its account as a minor: held, and its guest session ends.
    let r = api.send(
        "POST",
        "/v1/auth/register",
        Some(&guest_access),
        Some(&json!({
            "email": "kid@example.com", "password": USER_PASSWORD, "consent": true,
            "date_of_birth": KID_DOB,
        })),
    );
    assert_eq!(r.expect(200)["user"]["id"], guest["user"]["id"]);
    assert_eq!(api.me(&guest_access).status, 401, "the guest session ended");
    let token = api.verification_token(&smtp, "kid@example.com", 1);
    api.post("/v1/auth/verify-email", &json!({"token": token}))
        .expect(200);
    api.login("kid@example.com", USER_PASSWORD)
        .expect_error(403, "auth/guardian_consent_pending");

    // Each request mails a guardian: three an hour per child.
    let ask =
        json!({"email": "kid@example.com", "password": USER_PASSWORD, "guardian_email": GUARDIAN});
    for _ in 0..3 {
        api.post("/v1/auth/parental-consent", &ask).expect(202);
    }
    let r = api.post("/v1/auth/parental-consent", &ask);
    r.expect_error(429, "auth/rate_limited");
    assert!(r.header("retry-after").is_some());
    smtp.wait_for(&api.slug, "guardian_consent", GUARDIAN, 3);
}

#[test]
fn an_admin_erasing_a_minor_leaves_no_guardian_link_or_export_behind() {
    let (smtp, srv, api, s) = user_setup("Kids Club", &[]);
    protect_minors(&srv, &s, &api.slug);
    let kid = register_verified(&api, &smtp, "kid@example.com", KID_DOB);
    let kid_id = kid["user"]["id"].as_str().unwrap().to_owned();
    let token = ask_guardian(&api, &smtp, "kid@example.com", GUARDIAN, 1);
    let mut g = Guardian::new(&srv);
    accept(&mut g, &token);
    let portal = portal_token(&api, &smtp, "kid@example.com", GUARDIAN, 1);
    let ctx = g
        .get_json(&format!("/v1/guardian/portal?token={portal}"))
        .expect(200)
        .clone();
    let r = g.post_json(
        "/v1/guardian/portal",
        &json!({"token": portal, "action": "export", "csrf": ctx["csrf"]}),
    );
    assert_eq!(r.expect(200)["result"], "export_sent");
    let download = smtp
        .wait_for(&api.slug, "guardian_export", GUARDIAN, 1)
        .token_after("/v1/guardian/export?token=")
        .unwrap();
    let traces = |needle: &str| {
        srv.admin(&["user", "traces", "--tenant", &api.slug, needle], "")
            .json()["traces"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    assert!(
        traces(&kid_id).iter().any(|t| t["kind"] == "6f"),
        "the guardian links name the child: {:?}",
        traces(&kid_id)
    );

    srv.reauth(&s, crate::support::PASSWORD);
    let r = srv.dash(
        "DELETE",
        &format!("/v1/auth/dashboard/tenants/{}/users/{kid_id}", api.slug),
        &s,
        None,
    );
    assert_eq!(r.status(), 204);
    // Only audit events remain (the security record), and only by the id in their values.
    let left = traces(&kid_id);
    assert!(
        left.iter()
            .all(|t| t["kind"] == "41" && t["found_in"] == "value"),
        "{left:?}"
    );
    assert_eq!(traces("kid@example.com"), Vec::<Value>::new());
    let r = AuthAnswer::read(
        srv.client
            .get(srv.url(&format!("/v1/guardian/export?token={download}")))
            .send()
            .unwrap(),
    );
    r.expect_error(404, "guardian/export_not_found");
    assert_eq!(
        g.get_json(&format!("/v1/guardian/portal?token={portal}"))
            .expect(200)
            .clone(),
        json!({"state": "invalid"})
    );
}

#[test]
fn the_guardian_routes_limit_each_client_address() {
    let (smtp, srv, api, s) = user_setup("Kids Club", &[]);
    protect_minors(&srv, &s, &api.slug);
    register_verified(&api, &smtp, "kid@example.com", KID_DOB);
    let token = ask_guardian(&api, &smtp, "kid@example.com", GUARDIAN, 1);
    let look = |ip: &str| {
        AuthAnswer::read(
            srv.client
                .get(srv.url(&format!("/v1/guardian/consent?token={token}")))
                .header("accept", "application/json")
                .header("x-forwarded-for", ip)
                .send()
                .unwrap(),
        )
    };
    let busy = crate::support::fresh_client_ip();
    for _ in 0..120 {
        assert_eq!(look(&busy).expect(200)["state"], "valid");
    }
    let r = look(&busy);
    r.expect_error(429, "auth/rate_limited");
    assert!(r.header("retry-after").is_some());
    // Another address is not held back, and the link still works.
    assert_eq!(
        look(&crate::support::fresh_client_ip()).expect(200)["state"],
        "valid"
    );
}

/// The tenant gives the consent page's text in other languages; a guardian reading the page
/// in one of them sees it, in any other the main text. Each translation follows the main
/// text's rules, in one of the pages' languages.
#[test]
fn the_consent_page_shows_the_tenants_text_in_the_readers_language() {
    let (smtp, srv, api, s) = user_setup("Kids Club", &[]);
    let german = json!({
        "lawful_basis": "Einwilligung der sorgeberechtigten Person (DSGVO Art. 8)",
        "purposes": ["das Vereinskonto führen", "an Spiele erinnern"],
        "data_categories": ["E-Mail-Adresse", "Geburtsdatum"],
        "retention": "bis das Konto gelöscht wird",
    });
    for (bad, field) in [
        (json!({"xx": german}), "translations.xx"),
        (
            json!({"de": {"lawful_basis": "x", "purposes": [], "data_categories": ["y"], "retention": "z"}}),
            "translations.de.purposes",
        ),
    ] {
        let mut body = minors_body();
        body["translations"] = bad;
        let (st, answer) = srv.dash_json("PUT", &minors_path(&api.slug), &s, Some(&body));
        assert_eq!(st, 400, "{answer}");
        assert!(
            answer["error"]["details"]["fields"][field].is_string(),
            "{field}: {answer}"
        );
    }
    let mut body = minors_body();
    body["translations"] = json!({"de": german});
    let (st, answer) = srv.dash_json("PUT", &minors_path(&api.slug), &s, Some(&body));
    assert_eq!(st, 200, "{answer}");
    assert_eq!(answer["translations"]["de"], german);

    register_verified(&api, &smtp, "kid@example.com", KID_DOB);
    let token = ask_guardian(&api, &smtp, "kid@example.com", GUARDIAN, 1);
    let mut g = Guardian::new(&srv);
    for (lang, shown, not_shown) in [
        ("de", "das Vereinskonto führen", "running the club"),
        ("en", "running the club", "das Vereinskonto"),
        ("fr", "running the club", "das Vereinskonto"),
    ] {
        let (st, page) = g.get_page(&format!("/v1/guardian/consent?token={token}&lang={lang}"));
        assert_eq!(st, 200, "{page}");
        assert!(page.contains(shown), "{lang}: {page}");
        assert!(!page.contains(not_shown), "{lang}: {page}");
    }
}
