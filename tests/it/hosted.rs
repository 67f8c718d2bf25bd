//! The hosted pages at the accounts URL, over plain HTTP as a browser would send it (cookies and
//! forms by hand, redirects not followed): the tenant's URLs and `redirect_to`, nothing used on
//! GET, the CSRF check, every page's answer to a used, expired or unknown link, the login
//! link's code and its exchange, the step-up hand-off, the security headers and the languages
//! of pages and mail.

use reqwest::blocking::{Client, Response};
use serde_json::{json, Value};

use crate::support::{
    b64url, error_code, user_setup as setup, AuthAnswer, Session, SmtpStub, TestServer, UserApi,
    UserTokens, USER_PASSWORD,
};

const APP: &str = "https://app.example.test/welcome";
const OTHER: &str = "http://localhost:5173/callback";

/// A page as the browser got it.
pub(crate) struct Page {
    status: u16,
    headers: reqwest::header::HeaderMap,
    pub(crate) body: String,
}

impl Page {
    fn read(r: Response) -> Self {
        Page {
            status: r.status().as_u16(),
            headers: r.headers().clone(),
            body: r.text().unwrap(),
        }
    }

    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The CSRF cookie this answer set.
    fn csrf_cookie(&self) -> Option<String> {
        self.headers
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(|c| c.strip_prefix("tessera_csrf="))
            .map(|c| c.split(';').next().unwrap().to_owned())
    }

    /// The value of the form's hidden `csrf` field.
    pub(crate) fn csrf_field(&self) -> String {
        let start = self
            .body
            .find("name=\"csrf\" value=\"")
            .unwrap_or_else(|| panic!("no csrf field in {}", self.body))
            + "name=\"csrf\" value=\"".len();
        self.body[start..].split('"').next().unwrap().to_owned()
    }

    #[track_caller]
    pub(crate) fn expect(&self, status: u16) -> &Self {
        assert_eq!(self.status, status, "{}", self.body);
        self
    }

    #[track_caller]
    fn expect_html_problem(&self, status: u16) {
        assert_eq!(self.status, status, "{}", self.body);
        assert!(
            self.header("content-type").starts_with("text/html"),
            "{:?}",
            self.headers
        );
        assert!(self.body.starts_with("<!DOCTYPE html>"), "{}", self.body);
        assert!(!self.body.contains("\"error\""), "no JSON: {}", self.body);
    }
}

/// A browser without JavaScript: redirects are seen, not followed; the CSRF cookie is kept.
pub(crate) struct Browser {
    client: Client,
    base: String,
    cookie: Option<String>,
}

impl Browser {
    pub(crate) fn new(srv: &TestServer) -> Self {
        Browser {
            client: Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            base: srv.base.clone(),
            cookie: None,
        }
    }

    pub(crate) fn get(&mut self, path_and_query: &str, lang: Option<&str>) -> Page {
        let mut req = self.client.get(format!("{}{path_and_query}", self.base));
        if let Some(l) = lang {
            req = req.header("accept-language", l);
        }
        if let Some(c) = &self.cookie {
            req = req.header("cookie", format!("tessera_csrf={c}"));
        }
        let page = Page::read(req.send().unwrap());
        if let Some(c) = page.csrf_cookie() {
            self.cookie = Some(c);
        }
        page
    }

    pub(crate) fn post(&self, path_and_query: &str, form: &[(&str, &str)]) -> Page {
        let mut req = self
            .client
            .post(format!("{}{path_and_query}", self.base))
            .form(form);
        if let Some(c) = &self.cookie {
            req = req.header("cookie", format!("tessera_csrf={c}"));
        }
        Page::read(req.send().unwrap())
    }
}

fn put_urls(srv: &TestServer, s: &Session, slug: &str, body: Value) -> (u16, Value) {
    let r = srv.dash(
        "PUT",
        &format!("/v1/auth/dashboard/tenants/{slug}/settings/urls"),
        s,
        Some(&body),
    );
    let status = r.status().as_u16();
    (status, r.json().unwrap_or(Value::Null))
}

/// A tenant whose site URL is `APP` and whose other redirect URL is `OTHER`.
fn tenant_with_urls(name: &str) -> (SmtpStub, TestServer, UserApi, Session) {
    tenant_with_urls_and(name, &[])
}

fn token_in(mail_text: &str, prefix: &str) -> String {
    let start = mail_text
        .find(prefix)
        .unwrap_or_else(|| panic!("no {prefix} in {mail_text}"))
        + prefix.len();
    mail_text[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect()
}

/// A PKCE pair: the verifier and its S256 challenge.
fn pkce(seed: &str) -> (String, String) {
    let verifier = format!("{seed}-verifier-{}", "x".repeat(43));
    let challenge = b64url(&tessera_storage::sha256(verifier.as_bytes()));
    (verifier, challenge)
}

#[test]
fn tenant_urls_are_checked_and_redirect_to_must_be_one_of_them() {
    let (_smtp, srv, api, s) = setup("Urls Co", &[]);
    let path = format!("/v1/auth/dashboard/tenants/{}/settings/urls", api.slug);
    let r = srv.dash("GET", &path, &s, None);
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json::<Value>().unwrap(),
        json!({"site_url": null, "redirect_urls": []})
    );
    for (body, field) in [
        (
            json!({"site_url": "http://app.example.test/", "redirect_urls": []}),
            "site_url",
        ),
        (
            json!({"site_url": "https://app.example.test/#x", "redirect_urls": []}),
            "site_url",
        ),
        (
            json!({"site_url": null, "redirect_urls": ["https://u:p@app.example.test/"]}),
            "redirect_urls[0]",
        ),
        (
            json!({"site_url": null, "redirect_urls": ["javascript:alert(1)"]}),
            "redirect_urls[0]",
        ),
        (
            json!({"site_url": null, "redirect_urls": (0..51).map(|i| format!("https://a{i}.test/")).collect::<Vec<_>>()}),
            "redirect_urls",
        ),
    ] {
        let (status, out) = put_urls(&srv, &s, &api.slug, body.clone());
        assert_eq!(status, 400, "{body}: {out}");
        assert_eq!(error_code(&out), "validation/invalid_request");
        assert!(
            out["error"]["details"]["fields"][field].is_string(),
            "{field} named in {out}"
        );
    }
    let (status, out) = put_urls(
        &srv,
        &s,
        &api.slug,
        json!({"site_url": APP, "redirect_urls": [OTHER, "http://127.0.0.1:9/cb"]}),
    );
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["redirect_urls"][1], "http://127.0.0.1:9/cb");
    assert_eq!(
        srv.dash("GET", &path, &s, None).json::<Value>().unwrap()["site_url"],
        APP
    );

    // Every route that mails a link takes `redirect_to`, and only one of the URLs, exactly.
    let user = "urls-user@example.com";
    let bad = "https://app.example.test/welcome/../evil";
    for (route, body) in [
        (
            "/v1/auth/forgot-password",
            json!({"email": user, "redirect_to": bad}),
        ),
        (
            "/v1/auth/resend-verification",
            json!({"email": user, "redirect_to": "https://evil.test/"}),
        ),
        (
            "/v1/auth/magic-link",
            json!({"email": user, "redirect_to": format!("{APP}?x=1")}),
        ),
        (
            "/v1/auth/register",
            json!({"email": user, "password": USER_PASSWORD, "consent": true, "redirect_to": "https://APP.example.test/welcome"}),
        ),
    ] {
        let r = api.post_as(route, None, &body);
        r.expect_error(400, "validation/invalid_request");
        assert!(
            r.body["error"]["details"]["fields"]["redirect_to"].is_string(),
            "{route}: {}",
            r.body
        );
    }
    for route in ["/v1/auth/forgot-password", "/v1/auth/resend-verification"] {
        let r = api.post_as(route, None, &json!({"email": user, "redirect_to": OTHER}));
        assert_eq!(r.status, 202, "{route}: {}", r.body);
    }
}

#[test]
fn the_verification_page_uses_nothing_on_get_and_confirms_with_its_form() {
    let (smtp, srv, api, _s) = tenant_with_urls("Verify Page Co");
    let email = "page-verify@example.com";
    api.register_body(&json!({
        "email": email, "password": USER_PASSWORD, "consent": true, "redirect_to": OTHER
    }))
    .expect(200);
    let token = api.verification_token(&smtp, email, 1);
    let path = format!("/verify-email?token={token}");
    let mut browser = Browser::new(&srv);

    // Fetched twice (a mail scanner, then the user): nothing is used.
    let scanner = Browser::new(&srv).get(&path, None);
    scanner.expect(200);
    let page = browser.get(&path, None);
    page.expect(200);
    assert!(page.body.contains("Verify Page Co"), "{}", page.body);
    assert!(page.body.contains("Confirm my address"), "{}", page.body);
    assert!(!page.body.contains("<script"));
    for (name, value) in [
        ("x-frame-options", "DENY"),
        ("referrer-policy", "no-referrer"),
        ("cache-control", "no-store"),
        ("content-language", "en"),
    ] {
        assert_eq!(page.header(name), value, "{name}");
    }
    let csp = page.header("content-security-policy");
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    let set_cookie = page
        .headers
        .get("set-cookie")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    for attr in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(set_cookie.contains(attr), "{set_cookie}");
    }
    api.login(email, USER_PASSWORD)
        .expect_error(403, "auth/email_not_verified");

    // A POST without the cookie, or with another page's value, is refused and uses nothing.
    let csrf = page.csrf_field();
    let mut stranger = Browser::new(&srv);
    stranger
        .post(&path, &[("csrf", &csrf)])
        .expect_html_problem(403);
    stranger.get(&path, None).expect(200);
    stranger
        .post(&path, &[("csrf", &csrf)])
        .expect_html_problem(403);
    browser
        .post(&path, &[("csrf", "forged")])
        .expect_html_problem(403);
    api.login(email, USER_PASSWORD)
        .expect_error(403, "auth/email_not_verified");

    // The form confirms the address and offers the way back to the app.
    let done = browser.post(&path, &[("csrf", &csrf)]);
    done.expect(200);
    assert!(done.body.contains("Address confirmed"), "{}", done.body);
    assert!(
        done.body.contains(&format!("href=\"{OTHER}\"")),
        "{}",
        done.body
    );
    api.login_ok(email, USER_PASSWORD);

    // A second POST, a reload, a changed or a missing token: a clear page, never JSON.
    browser
        .post(&path, &[("csrf", &csrf)])
        .expect_html_problem(410);
    browser.get(&path, None).expect_html_problem(410);
    let mut changed = token.clone();
    changed.pop();
    changed.push(if token.ends_with('A') { 'B' } else { 'A' });
    browser
        .get(&format!("/verify-email?token={changed}"), None)
        .expect_html_problem(410);
    browser.get("/verify-email", None).expect_html_problem(400);
    browser
        .get("/verify-email?token=not-a-token", None)
        .expect_html_problem(400);
}

#[test]
fn the_reset_page_applies_the_api_rules_and_signs_every_session_out() {
    let (smtp, srv, api, _s) = tenant_with_urls("Reset Page Co");
    let email = "page-reset@example.com";
    let before = api.verified_user(&smtp, email, USER_PASSWORD);
    api.post_as("/v1/auth/forgot-password", None, &json!({"email": email}))
        .expect(202);
    let mail = smtp.wait_for(&api.slug, "password_reset", email, 1);
    let token = token_in(&mail.text, &api.link("reset-password"));
    let path = format!("/reset-password?token={token}");
    let mut browser = Browser::new(&srv);
    let page = browser.get(&path, None);
    page.expect(200);
    assert!(
        page.body.contains("<label for=\"password\">"),
        "{}",
        page.body
    );
    assert!(page.body.contains("<label for=\"password_confirm\">"));
    let csrf = page.csrf_field();

    let new_password = "a brand new passphrase";
    for (first, second, says) in [
        ("short", "short", "12 to 128 characters"),
        ("password1234", "password1234", "too common"),
        (new_password, "something else entirely", "not the same"),
    ] {
        let r = browser.post(
            &path,
            &[
                ("csrf", &csrf),
                ("password", first),
                ("password_confirm", second),
            ],
        );
        r.expect(400);
        assert!(r.body.contains(says), "{says}: {}", r.body);
        assert!(r.body.contains("aria-invalid=\"true\""), "{}", r.body);
        assert!(r.body.contains("role=\"alert\""), "{}", r.body);
    }
    api.login_ok(email, USER_PASSWORD);

    let done = browser.post(
        &path,
        &[
            ("csrf", &csrf),
            ("password", new_password),
            ("password_confirm", new_password),
        ],
    );
    done.expect(200);
    assert!(done.body.contains("Password changed"), "{}", done.body);
    assert!(
        done.body.contains(&format!("href=\"{APP}\"")),
        "{}",
        done.body
    );
    api.login(email, USER_PASSWORD)
        .expect_error(401, "auth/invalid_credentials");
    api.login_ok(email, new_password);
    api.me(&before.access)
        .expect_error(401, "auth/invalid_token");
    browser
        .post(
            &path,
            &[
                ("csrf", &csrf),
                ("password", "yet another passphrase"),
                ("password_confirm", "yet another passphrase"),
            ],
        )
        .expect_html_problem(410);
    api.login_ok(email, new_password);
}

/// Asks for a login link with a code challenge; answers the link's token.
fn link_with_challenge(
    api: &UserApi,
    smtp: &SmtpStub,
    email: &str,
    n: usize,
    extra: Value,
) -> String {
    let mut body = json!({"email": email});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let r = api.post_as("/v1/auth/magic-link", None, &body);
    assert_eq!(r.status, 202, "{}", r.body);
    let mail = smtp.wait_for(&api.slug, "magic_link", email, n);
    token_in(&mail.text, &api.link("magic-link"))
}

/// Presses the login page's button; answers the `code` of the 303.
fn press_sign_in(srv: &TestServer, token: &str, to: &str) -> String {
    let path = format!("/magic-link?token={token}");
    let mut browser = Browser::new(srv);
    let page = browser.get(&path, None);
    page.expect(200);
    let csrf = page.csrf_field();
    let r = browser.post(&path, &[("csrf", &csrf)]);
    assert_eq!(r.status, 303, "{}", r.body);
    let location = r.header("location").to_owned();
    let prefix = format!("{to}?code=");
    assert!(location.starts_with(&prefix), "{location}");
    location[prefix.len()..].to_owned()
}

fn exchange(api: &UserApi, code: &str, verifier: &str) -> AuthAnswer {
    api.post_as(
        "/v1/auth/token/exchange",
        None,
        &json!({"code": code, "code_verifier": verifier}),
    )
}

#[test]
fn the_login_link_page_hands_the_app_a_code_only_its_verifier_exchanges() {
    let (smtp, mut srv, mut api, _s) = tenant_with_urls_and(
        "Magic Page Co",
        &[("TESSERA__TESTING__FAULT_INJECTION", "true")],
    );
    // Login links are spaced a minute per address: each case has a user of its own.
    let users = [
        "magic-1@example.com",
        "magic-2@example.com",
        "magic-3@example.com",
        "magic-4@example.com",
    ];
    for u in users {
        api.verified_user(&smtp, u, USER_PASSWORD);
    }
    let email = users[0];
    let (verifier, challenge) = pkce("one");

    // The page shows the tenant and a button; the form may lead to the app's origin only.
    let token = link_with_challenge(
        &api,
        &smtp,
        email,
        1,
        json!({"code_challenge": challenge, "code_challenge_method": "S256", "redirect_to": OTHER}),
    );
    let page = Browser::new(&srv).get(&format!("/magic-link?token={token}"), None);
    page.expect(200);
    assert!(
        page.body.contains("Sign in to Magic Page Co"),
        "{}",
        page.body
    );
    let csp = page.header("content-security-policy");
    assert!(
        csp.contains("form-action 'self' http://localhost:5173"),
        "{csp}"
    );
    // The GET used nothing: the app could still verify the link itself.
    let code = press_sign_in(&srv, &token, OTHER);

    // A wrong verifier is refused and uses the code up.
    let (other_verifier, _) = pkce("two");
    exchange(&api, &code, &other_verifier).expect_error(401, "invalid_or_expired_token");
    exchange(&api, &code, &verifier).expect_error(401, "invalid_or_expired_token");

    // Another tenant's key cannot exchange this tenant's code.
    let other = UserApi::signup(&srv, "Other Tenant Co", "other-owner@example.com");
    let token = link_with_challenge(
        &api,
        &smtp,
        users[1],
        1,
        json!({"code_challenge": challenge}),
    );
    let code = press_sign_in(&srv, &token, APP);
    exchange(&other, &code, &verifier).expect_error(401, "invalid_or_expired_token");
    let tokens = UserTokens::from_answer(&exchange(&api, &code, &verifier));
    assert_eq!(api.me(&tokens.access).expect(200)["email"], users[1]);
    assert_eq!(tokens.claims()["amr"], json!(["mca"]));
    exchange(&api, &code, &verifier).expect_error(401, "invalid_or_expired_token");
    // The link itself is used too.
    api.post_as("/v1/auth/magic-link/verify", None, &json!({"token": token}))
        .expect_error(401, "invalid_or_expired_token");

    // Without a code challenge, or with nowhere to go, the page cannot finish the sign-in.
    let plain = link_with_challenge(&api, &smtp, users[2], 1, json!({}));
    let page = Browser::new(&srv).get(&format!("/magic-link?token={plain}"), None);
    page.expect(200);
    assert!(!page.body.contains("<form"), "{}", page.body);
    assert!(
        page.body.contains("cannot be used on this page"),
        "{}",
        page.body
    );
    api.post_as("/v1/auth/magic-link/verify", None, &json!({"token": plain}))
        .expect(200);

    // A code lives 60 seconds.
    let token = link_with_challenge(
        &api,
        &smtp,
        users[3],
        1,
        json!({"code_challenge": challenge}),
    );
    let code = press_sign_in(&srv, &token, APP);
    srv.restart_with(&[("TESSERA__TESTING__CLOCK_OFFSET_SECS", "90")]);
    api.rebase(&srv);
    exchange(&api, &code, &verifier).expect_error(401, "invalid_or_expired_token");
}

fn tenant_with_urls_and(
    name: &str,
    env: &[(&str, &str)],
) -> (SmtpStub, TestServer, UserApi, Session) {
    let (smtp, srv, api, s) = setup(name, env);
    let (status, body) = put_urls(
        &srv,
        &s,
        &api.slug,
        json!({"site_url": APP, "redirect_urls": [OTHER]}),
    );
    assert_eq!(status, 200, "{body}");
    (smtp, srv, api, s)
}

#[test]
fn the_step_up_page_hands_its_token_to_the_app_of_the_session_that_asked() {
    let (smtp, srv, api, _s) = tenant_with_urls("Step Page Co");
    let email = "page-stepup@example.com";
    let user = api.verified_user(&smtp, email, USER_PASSWORD);
    let r = api.post_as(
        "/v1/auth/step-up/magic-link/initiate",
        Some(&user.access),
        &json!({"redirect_to": OTHER}),
    );
    assert_eq!(r.status, 202, "{}", r.body);
    api.post_as(
        "/v1/auth/step-up/email-otp/initiate",
        Some(&user.access),
        &json!({"redirect_to": OTHER}),
    )
    .expect_error(400, "validation/invalid_request");
    let mail = smtp.wait_for(&api.slug, "step_up_magic_link", email, 1);
    let token = token_in(&mail.text, &api.link("step-up/magic-link"));
    let path = format!("/step-up/magic-link?token={token}");
    let mut browser = Browser::new(&srv);
    browser.get(&path, None).expect(200);
    let page = browser.get(&path, None);
    page.expect(200);
    let href = format!("href=\"{OTHER}?token={token}\"");
    assert!(page.body.contains(&href), "{href} in {}", page.body);
    let r = api.post_as(
        "/v1/auth/step-up/magic-link/verify",
        Some(&user.access),
        &json!({"token": token}),
    );
    assert!(r.expect(200)["step_up_token"].is_string(), "{}", r.body);
    browser.get(&path, None).expect_html_problem(410);
}

#[test]
fn pages_and_mail_speak_the_readers_language() {
    let (smtp, srv, api, s) = tenant_with_urls("Lingua Co");
    // A registration's `locale`, else its Accept-Language, chooses the mail's language.
    let fr = "page-fr@example.com";
    api.register_body(
        &json!({"email": fr, "password": USER_PASSWORD, "consent": true, "locale": "fr"}),
    )
    .expect(200);
    let fr_mail = smtp.wait_for(&api.slug, "verify_email", fr, 1);
    let es = "page-es@example.com";
    let r = api
        .client
        .post(api.url("/v1/auth/register"))
        .header("x-api-key", &api.api_key)
        .header("accept-language", "es-MX,es;q=0.9,en;q=0.5")
        .header("x-forwarded-for", crate::support::fresh_client_ip())
        .json(&json!({"email": es, "password": USER_PASSWORD, "consent": true}))
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    let es_mail = smtp.wait_for(&api.slug, "verify_email", es, 1);
    // Without either, the tenant's default language.
    let r = srv.dash(
        "PATCH",
        &format!("/v1/auth/dashboard/tenants/{}/settings/users", api.slug),
        &s,
        Some(&json!({"default_locale": "de"})),
    );
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().unwrap()["default_locale"], "de");
    let de = "page-de@example.com";
    api.register(de, USER_PASSWORD).expect(200);
    let de_mail = smtp.wait_for(&api.slug, "verify_email", de, 1);
    let en_subject = "Confirm your e-mail address for Lingua Co";
    let subjects: Vec<String> = [&fr_mail, &es_mail, &de_mail]
        .iter()
        .map(|m| m.header("subject").unwrap_or("").to_owned())
        .collect();
    for (m, subject) in [&fr_mail, &es_mail, &de_mail].iter().zip(&subjects) {
        assert_ne!(subject, en_subject);
        assert!(m.text.contains("Lingua Co"), "{}", m.text);
    }
    assert_ne!(subjects[0], subjects[1]);
    assert_ne!(subjects[1], subjects[2]);
    let bad = api.register_body(&json!({"email": "x@example.com", "password": USER_PASSWORD, "consent": true, "locale": "it"}));
    bad.expect_error(400, "validation/invalid_request");

    // Pages: `?lang=` over Accept-Language over the tenant's default.
    let token = api.verification_token(&smtp, fr, 1);
    let mut browser = Browser::new(&srv);
    let path = format!("/verify-email?token={token}");
    let english = browser.get(&format!("{path}&lang=en"), None);
    let polish = browser.get(&path, Some("pl-PL,pl;q=0.9"));
    let german = browser.get(&path, None);
    let spanish = browser.get(&format!("{path}&lang=es"), Some("pl"));
    for (page, lang) in [
        (&english, "en"),
        (&polish, "pl"),
        (&german, "de"),
        (&spanish, "es"),
    ] {
        page.expect(200);
        assert_eq!(page.header("content-language"), lang);
        assert!(page.body.contains(&format!("<html lang=\"{lang}\">")));
    }
    assert!(english.body.contains("Confirm my address"));
    for other in [&polish, &german, &spanish] {
        assert!(!other.body.contains("Confirm my address"), "{}", other.body);
    }
}
