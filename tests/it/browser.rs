//! The hosted pages in a real browser: headless Chromium (Debian's `chromium` and
//! `chromium-driver`) driven over WebDriver. A user registers, opens the mailed link, confirms
//! and signs in; forgets the password, resets it on the page and signs in with the new one;
//! and signs in with a login link that ends at a local test app, which exchanges the page's code
//! with its PKCE verifier; an invited address joins an organization from its mailed link. A
//! failing step saves a screenshot of the page under the test's temporary directory and names
//! it.
//!
//! Without Chromium the test says so loudly and skips; `.ci/run` installs it, so CI runs it.

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

use crate::{
    oauth_browser::Rp,
    stub::{Route, StubResponse, StubServer},
    support::{
        b64url, eventually, fresh_client_ip, settled_totp_step, user_setup as setup, Session,
        SmtpStub, TestServer, Totp, UserApi, USER_PASSWORD,
    },
};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// chromedriver on a free port, stopped on drop.
pub(crate) struct Driver {
    child: Child,
    url: String,
}

impl Driver {
    fn start(dir: &Path) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .arg(format!(
                "--log-path={}",
                dir.join("chromedriver.log").display()
            ))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let up = eventually(Duration::from_secs(20), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        assert!(up, "chromedriver did not listen on {port}");
        Driver {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A local test app: `GET /cb?code=` exchanges the code with the verifier it holds, as a real
/// app's back end would, and shows who signed in. Answers the callback's URL and the app, up
/// until it is dropped.
fn start_test_app(api: &UserApi, verifier: &str) -> (String, StubServer) {
    let api = api.clone();
    let verifier = verifier.to_owned();
    let server = StubServer::start(vec![Route::any(move |req| {
        let body = match req.query_params().get("code") {
            Some(code) => {
                let r = api.post_as(
                    "/v1/auth/token/exchange",
                    None,
                    &json!({"code": code, "code_verifier": verifier}),
                );
                match r.body["access_token"].as_str() {
                    Some(access) => {
                        let me = api.me(access);
                        format!("signed in as {}", me.body["email"].as_str().unwrap_or("?"))
                    }
                    None => format!("exchange refused: {}", r.body),
                }
            }
            None => "no code".to_owned(),
        };
        let html = format!("<!DOCTYPE html><html><body><p id=\"who\">{body}</p></body></html>");
        StubResponse::text(200, "text/html", html)
    })]);
    (format!("{}/cb", server.url()), server)
}

/// The browser, driven step by step from this (blocking) test: every step that fails saves
/// the page's screenshot under the test's temporary directory and fails naming it.
pub(crate) struct Ui {
    rt: tokio::runtime::Runtime,
    browser: Client,
    shots: PathBuf,
}

/// The session ends with its `Ui`, a failed test's too: a browser left open outlives its
/// chromedriver, orphaned.
impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.rt.block_on(self.browser.clone().close());
    }
}

impl Ui {
    fn fail(&self, name: &str, why: String) -> ! {
        let path = self.shots.join(format!("{name}.png"));
        if let Ok(png) = self.rt.block_on(self.browser.screenshot()) {
            let _ = std::fs::write(&path, png);
        }
        let source = self.rt.block_on(self.browser.source()).unwrap_or_default();
        panic!(
            "browser step {name:?}: {why}; screenshot: {}; page: {source}",
            path.display()
        );
    }

    fn ok<T>(&self, name: &str, r: Result<T, fantoccini::error::CmdError>) -> T {
        match r {
            Ok(v) => v,
            Err(e) => self.fail(name, e.to_string()),
        }
    }

    pub(crate) fn goto(&self, name: &str, url: &str) {
        let r = self.rt.block_on(self.browser.goto(url));
        self.ok(name, r);
    }

    pub(crate) fn click(&self, name: &str, css: &str) {
        let r = self
            .rt
            .block_on(async { self.browser.find(Locator::Css(css)).await?.click().await });
        self.ok(name, r);
    }

    fn type_into(&self, name: &str, id: &str, text: &str) {
        let r = self.rt.block_on(async {
            self.browser
                .find(Locator::Id(id))
                .await?
                .send_keys(text)
                .await
        });
        self.ok(name, r);
    }

    /// Waits (up to 15 s: a click may still be loading the next page) until the page's main
    /// text contains `expected`.
    pub(crate) fn expect_text(&self, name: &str, expected: &str) {
        let mut last = String::new();
        for _ in 0..75 {
            let r = self.rt.block_on(async {
                self.browser
                    .find(Locator::Css("main, #who"))
                    .await?
                    .text()
                    .await
            });
            match r {
                Ok(text) if text.contains(expected) => return,
                Ok(text) => last = text,
                // The element went away with the page it belonged to: look again.
                Err(e) => last = e.to_string(),
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        self.fail(name, format!("{expected:?} not in {last:?}"));
    }

    /// With `TESSERA_SCREENSHOTS` set to a folder, saves the page at 1280 x 800 px there as
    /// `file` (how the README's pictures of the console are made), then goes back to 360 px.
    fn picture(&self, name: &str, file: &str) {
        let Some(dir) = std::env::var_os("TESSERA_SCREENSHOTS") else {
            return;
        };
        let r = self.rt.block_on(async {
            self.browser.set_window_size(1280, 800).await?;
            let png = self.browser.screenshot().await?;
            self.browser.set_window_size(360, 800).await?;
            Ok::<_, fantoccini::error::CmdError>(png)
        });
        let png = self.ok(name, r);
        std::fs::write(Path::new(&dir).join(file), png).unwrap();
    }

    /// The text of the first element `css` finds.
    fn text_of(&self, name: &str, css: &str) -> String {
        let r = self
            .rt
            .block_on(async { self.browser.find(Locator::Css(css)).await?.text().await });
        self.ok(name, r)
    }

    pub(crate) fn url(&self, name: &str) -> String {
        let r = self.rt.block_on(self.browser.current_url());
        self.ok(name, r).to_string()
    }
}

/// Whether Chromium and its driver are here.
pub(crate) fn chromium_here() -> bool {
    Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists()
}

/// Whether Chromium and its driver are here; says loudly when not.
pub(crate) fn chromium_present() -> bool {
    let present = chromium_here();
    if !present {
        crate::support::skip_without(
            &format!("Chromium at {CHROMIUM} or ChromeDriver at {CHROMEDRIVER}"),
            "Debian's `chromium` and `chromium-driver`; .ci/run installs them",
        );
    }
    present
}

/// ChromeDriver and a headless Chromium session with a profile under `dir`.
pub(crate) fn chromium(dir: &Path) -> (Driver, Ui) {
    let driver = Driver::start(dir);
    let profile = dir.join("profile");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": CHROMIUM,
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=360,800",
                format!("--user-data-dir={}", profile.display()),
            ],
        }),
    );
    let browser = rt
        .block_on(
            ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
                .capabilities(caps)
                .connect(&driver.url),
        )
        .expect("a WebDriver session in Chromium");
    let ui = Ui {
        rt,
        browser,
        shots: dir.to_owned(),
    };
    (driver, ui)
}

#[test]
fn a_user_confirms_resets_and_signs_in_through_the_hosted_pages_in_chromium() {
    if !chromium_present() {
        return;
    }
    let (smtp, srv, api, s) = setup("Browser Co", &[]);
    let verifier = format!("browser-verifier-{}", "v".repeat(40));
    let challenge = b64url(&tessera_storage::sha256(verifier.as_bytes()));
    let (app, _app) = start_test_app(&api, &verifier);
    let r = srv.dash(
        "PUT",
        &format!("/v1/auth/dashboard/tenants/{}/settings/urls", api.slug),
        &s,
        Some(&json!({"site_url": app, "redirect_urls": []})),
    );
    assert_eq!(r.status(), 200);

    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());

    // Register, open the mailed link, confirm, sign in.
    let email = "browser-user@example.com";
    api.register(email, USER_PASSWORD).expect(200);
    let mail = smtp.wait_for(&api.slug, "verify_email", email, 1);
    ui.goto(
        "open-verify",
        &link_in(&mail.text, &format!("{}/verify-email?token=", srv.base)),
    );
    ui.expect_text("verify-page", "Browser Co");
    ui.checked("verify-page");
    api.login(email, USER_PASSWORD)
        .expect_error(403, "auth/email_not_verified");
    ui.click("verify-click", "button[type=submit]");
    ui.expect_text("verify-done", "Address confirmed");
    api.login_ok(email, USER_PASSWORD);

    // Forget the password, choose a new one on the page, sign in with it.
    api.post_as("/v1/auth/forgot-password", None, &json!({"email": email}))
        .expect(202);
    let mail = smtp.wait_for(&api.slug, "password_reset", email, 1);
    ui.goto(
        "open-reset",
        &link_in(&mail.text, &format!("{}/reset-password?token=", srv.base)),
    );
    let new_password = "chromium picked passphrase";
    ui.type_into("reset-type", "password", new_password);
    ui.type_into("reset-type-2", "password_confirm", new_password);
    ui.click("reset-click", "button[type=submit]");
    ui.expect_text("reset-done", "Password changed");
    api.login(email, USER_PASSWORD)
        .expect_error(401, "auth/invalid_credentials");
    api.login_ok(email, new_password);

    // A login link that ends at the app, which exchanges the code.
    let r = api.post_as(
        "/v1/auth/magic-link",
        None,
        &json!({"email": email, "code_challenge": challenge, "code_challenge_method": "S256"}),
    );
    assert_eq!(r.status, 202, "{}", r.body);
    let mail = smtp.wait_for(&api.slug, "magic_link", email, 1);
    ui.goto(
        "open-magic",
        &link_in(&mail.text, &format!("{}/magic-link?token=", srv.base)),
    );
    ui.expect_text("magic-page", "Sign in to Browser Co");
    ui.checked("magic-page");
    ui.click("magic-click", "button[type=submit]");
    ui.expect_text("app-page", &format!("signed in as {email}"));
    let at = ui.url("app-url");
    assert!(at.starts_with(&app), "{at}");

    drop(ui);
    drop(driver);
}

/// A relying party's callback: answers a page with `#who` and hands the URL it was called at
/// to the test.
fn start_callback() -> (String, Calls) {
    let (base, rx) = start_app("/cb");
    (format!("{base}/cb"), rx)
}

/// The URLs a local app was called at, in order; the app answers until this is dropped.
pub(crate) struct Calls {
    /// The request targets, with no scheme and host.
    targets: std::sync::mpsc::Receiver<String>,
    server: StubServer,
}

impl Calls {
    /// The next URL called, waiting up to `timeout`.
    pub(crate) fn recv_timeout(
        &self,
        timeout: Duration,
    ) -> Result<String, std::sync::mpsc::RecvTimeoutError> {
        let target = self.targets.recv_timeout(timeout)?;
        Ok(format!("{}{target}", self.server.url()))
    }
}

/// A tenant `name` with a first-party client whose callback the test hears, and a confirmed
/// user `email` (password [`USER_PASSWORD`]).
struct FirstParty {
    smtp: crate::support::SmtpStub,
    srv: crate::support::TestServer,
    api: UserApi,
    rp: Rp,
    calls: Calls,
}

impl FirstParty {
    fn start(name: &str, app: &str, email: &str) -> Self {
        let (smtp, srv, api, s) = setup(name, &[]);
        srv.reauth(&s, crate::support::PASSWORD);
        let (callback, calls) = start_callback();
        let rp = Rp::register(
            &srv,
            &s,
            &api,
            json!({"name": app, "redirect_uris": [callback], "first_party": true}),
        );
        api.verified_user(&smtp, email, USER_PASSWORD);
        FirstParty {
            smtp,
            srv,
            api,
            rp,
            calls,
        }
    }

    /// From an account link's done page: "continue" back to the sign-in page of the request,
    /// sign in there as `email` with `password`, and reach the client; answers the claims.
    fn continue_and_sign_in(
        &self,
        ui: &Ui,
        (sign_in_page, email, password): (&str, &str, &str),
        req: crate::oauth_browser::Request,
    ) -> serde_json::Value {
        ui.click("continue", "main a.button");
        ui.expect_text("back-at-sign-in", sign_in_page);
        ui.type_into("again-email", "email", email);
        ui.type_into("again-password", "password", password);
        ui.click("again-sign-in", "form button[type=submit]");
        self.reached(ui, "again", req)
    }

    /// Waits until the browser reached the client with `req`'s answer; answers the ID token's
    /// claims.
    fn reached(
        &self,
        ui: &Ui,
        step: &str,
        req: crate::oauth_browser::Request,
    ) -> serde_json::Value {
        ui.expect_text(&format!("{step}-callback"), "callback received");
        let called = self
            .calls
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("{step}: the callback was not called"));
        self.rp.finish(&self.api, req, &called)
    }
}

/// A local app at the base URL this answers: every page is `#who` "callback received", and
/// every URL called under `path` is handed to the test.
pub(crate) fn start_app(path: &'static str) -> (String, Calls) {
    let (tx, targets) = std::sync::mpsc::channel();
    let server = StubServer::start(vec![Route::any(move |req| {
        let target = req.target();
        if target.starts_with(path) {
            let _ = tx.send(target);
        }
        let html = "<!DOCTYPE html><html><body><p id=\"who\">callback received</p></body></html>";
        StubResponse::text(200, "text/html", html)
    })]);
    (server.url().to_owned(), Calls { targets, server })
}

/// A relying party on the `openidconnect` crate sends Chromium to authorize: the hosted
/// sign-in page, the consent page, the code at the callback (through the consent page's
/// `form-action`, which must allow the client's origin); the hosted sign-in cookie is
/// `HttpOnly` and `SameSite=Lax`, and the next authorize comes back without a page.
#[test]
fn a_relying_party_signs_a_user_in_through_the_hosted_authorize_pages_in_chromium() {
    if !chromium_present() {
        return;
    }
    let (smtp, srv, api, s) = setup("Chromium Co", &[]);
    srv.reauth(&s, crate::support::PASSWORD);
    let (callback, calls) = start_callback();
    let rp = Rp::register(
        &srv,
        &s,
        &api,
        json!({"name": "Gallery", "redirect_uris": [callback]}),
    );
    let email = "chromium-rp@example.com";
    api.verified_user(&smtp, email, USER_PASSWORD);

    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());
    let req = rp.request(&[]);
    ui.goto("authorize", &req.url);
    ui.expect_text("sign-in-page", "Sign in to Chromium Co");
    ui.type_into("type-email", "email", email);
    ui.type_into("type-password", "password", USER_PASSWORD);
    ui.click("sign-in", "form button[type=submit]");
    ui.expect_text(
        "consent-page",
        "Gallery wants to use your Chromium Co account",
    );
    let cookies = ui.rt.block_on(ui.browser.get_all_cookies());
    let cookies = ui.ok("cookies", cookies);
    let signin = cookies
        .iter()
        .find(|c| c.name().starts_with("tessera_signin_"))
        .unwrap_or_else(|| panic!("no sign-in cookie in {cookies:?}"));
    assert_eq!(signin.http_only(), Some(true), "{signin:?}");
    assert_eq!(
        format!("{:?}", signin.same_site()),
        "Some(Lax)",
        "{signin:?}"
    );
    assert_eq!(
        signin.path(),
        Some(format!("/oauth/{}/", api.slug).as_str())
    );
    ui.click("allow", "button[value=approve]");
    ui.expect_text("callback", "callback received");
    let called = calls
        .recv_timeout(Duration::from_secs(10))
        .expect("the callback was called");
    let claims = rp.finish(&api, req, &called);
    assert_eq!(claims["email"], email);

    // Signed in and consented: straight back to the client.
    let req = rp.request(&[]);
    ui.goto("authorize-again", &req.url);
    let called = calls
        .recv_timeout(Duration::from_secs(10))
        .expect("the callback was called again");
    let again = rp.finish(&api, req, &called);
    assert_eq!(again["sid"], claims["sid"]);

    drop(ui);
    drop(driver);
}

/// A user who consented once signs in again from a fresh browser (new device, expired
/// session): the sign-in form's post answers a redirect to authorize, which answers the
/// redirect to the client on another origin. CSP's `form-action` covers that whole chain, so
/// the sign-in page (and the code page of an MFA user, and the login link's page) must list
/// the client's origin, or Chromium stays on the page. Also with MFA between, by e-mailed
/// code, by login link, and a denial on the consent page.
#[test]
fn a_returning_user_signs_in_again_from_a_fresh_browser_and_reaches_the_client_in_chromium() {
    if !chromium_present() {
        return;
    }
    let (smtp, srv, api, s) = setup("Chromium Again", &[]);
    srv.reauth(&s, crate::support::PASSWORD);
    let (callback, calls) = start_callback();
    let rp = Rp::register(
        &srv,
        &s,
        &api,
        json!({"name": "Gallery", "redirect_uris": [callback]}),
    );
    let email = "returning@example.com";
    let user = api.verified_user(&smtp, email, USER_PASSWORD);

    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());
    // WebDriver deletes the cookies the current page sees: those of the sign-in pages.
    let pages = format!("{}/oauth/{}/authorize", srv.base, api.slug);
    let fresh_browser = |ui: &Ui| {
        ui.goto("fresh-browser-page", &pages);
        let r = ui.rt.block_on(ui.browser.delete_all_cookies());
        ui.ok("fresh-browser", r);
    };
    let password_sign_in = |ui: &Ui, step: &str| {
        ui.expect_text(&format!("{step}-sign-in-page"), "Sign in to Chromium Again");
        ui.type_into(&format!("{step}-email"), "email", email);
        ui.type_into(&format!("{step}-password"), "password", USER_PASSWORD);
        ui.click(&format!("{step}-sign-in"), "form button[type=submit]");
    };
    let reached = |ui: &Ui, step: &str, req| {
        ui.expect_text(&format!("{step}-callback"), "callback received");
        let called = calls
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("{step}: the callback was not called"));
        rp.finish(&api, req, &called)
    };

    // The first visit: sign in and consent.
    let req = rp.request(&[]);
    ui.goto("first", &req.url);
    password_sign_in(&ui, "first");
    ui.expect_text(
        "first-consent",
        "Gallery wants to use your Chromium Again account",
    );
    ui.checked("first-consent");
    ui.click("first-allow", "button[value=approve]");
    let first = reached(&ui, "first", req);
    assert_eq!(first["email"], email);

    // A fresh browser, consent on file: the sign-in post ends at the client.
    fresh_browser(&ui);
    let req = rp.request(&[]);
    ui.goto("returning", &req.url);
    password_sign_in(&ui, "returning");
    let again = reached(&ui, "returning", req);
    assert_eq!(again["sub"], first["sub"]);
    assert_ne!(again["sid"], first["sid"], "a new sign-in session");

    // With MFA: the code page's post ends at the client too (a recovery code, so no wait
    // for the next TOTP step).
    let mfa = api.enable_mfa(&user.access);
    fresh_browser(&ui);
    let req = rp.request(&[]);
    ui.goto("mfa", &req.url);
    password_sign_in(&ui, "mfa");
    ui.expect_text("mfa-code-page", "authenticator");
    ui.checked("mfa-code-page");
    ui.type_into("mfa-code", "code", &mfa.recovery_codes[0]);
    ui.click("mfa-verify", "form button[type=submit]");
    let with_mfa = reached(&ui, "mfa", req);
    assert_eq!(with_mfa["sub"], first["sub"]);
    let challenge = api.mfa_challenge(email, USER_PASSWORD);
    let signed = api.mfa_verify(&challenge, &mfa.recovery_codes[1], None);
    let signed = crate::support::UserTokens::from_answer(&signed);
    let r = api.post_as(
        "/v1/auth/mfa/disable",
        Some(&signed.access),
        &json!({"password": USER_PASSWORD, "code": mfa.recovery_codes[2]}),
    );
    assert_eq!(r.status, 200, "{}", r.body);

    // By an e-mailed code.
    fresh_browser(&ui);
    let req = rp.request(&[]);
    ui.goto("code", &req.url);
    ui.expect_text("code-sign-in-page", "E-mail me a code");
    ui.type_into("code-email", "email", email);
    ui.click("code-send", "button[value=email_code]");
    ui.expect_text("code-page", email);
    ui.checked("code-page");
    let mail = smtp.wait_for(&api.slug, "email_otp", email, 1);
    let code = crate::support::six_digit_code(&mail.text).expect("a code");
    ui.type_into("code-code", "code", &code);
    ui.click("code-verify", "form button[type=submit]");
    let by_code = reached(&ui, "code", req);
    assert_eq!(by_code["sub"], first["sub"]);

    // By a login link, opened in the same browser: its page's post goes to this server's
    // return page, which ends at the client.
    fresh_browser(&ui);
    let req = rp.request(&[]);
    ui.goto("link", &req.url);
    ui.expect_text("link-sign-in-page", "E-mail me a sign-in link");
    ui.type_into("link-email", "email", email);
    ui.click("link-send", "button[value=magic_link]");
    ui.expect_text("link-sent", email);
    ui.checked("link-sent");
    let mail = smtp.wait_for(&api.slug, "magic_link", email, 1);
    let link = link_in(&mail.text, &format!("{}/magic-link?token=", srv.base));
    ui.goto("link-open", &link);
    ui.click("link-use", "form button[type=submit]");
    let by_link = reached(&ui, "link", req);
    assert_eq!(by_link["sub"], first["sub"]);

    // A client the user never consented to, denied: the deny post ends at the client with
    // `access_denied`.
    let (other_callback, other_calls) = start_callback();
    let other = Rp::register(
        &srv,
        &s,
        &api,
        json!({"name": "Printer", "redirect_uris": [other_callback]}),
    );
    let req = other.request(&[]);
    ui.goto("deny", &req.url);
    ui.expect_text(
        "deny-consent",
        "Printer wants to use your Chromium Again account",
    );
    ui.click("deny", "button[value=deny]");
    ui.expect_text("deny-callback", "callback received");
    let called = other_calls
        .recv_timeout(Duration::from_secs(10))
        .expect("the denial reached the client");
    assert!(called.contains("error=access_denied"), "{called}");

    drop(ui);
    drop(driver);
}

/// RP-initiated logout in Chromium, from a browser signed in on the hosted pages: without an
/// `id_token_hint` the provider asks, and the confirmation's button ends the sign-in and goes
/// on to the client's registered post-logout URI on another origin (the page's `form-action`
/// lists it); the next authorize asks the user to sign in again.
#[test]
fn a_user_signs_out_through_the_logout_confirmation_page_in_chromium() {
    if !chromium_present() {
        return;
    }
    let (smtp, srv, api, s) = setup("Chromium Bye", &[]);
    srv.reauth(&s, crate::support::PASSWORD);
    let (callback, calls) = start_callback();
    let bye = format!("{callback}-bye");
    let rp = Rp::register(
        &srv,
        &s,
        &api,
        json!({"name": "Gallery", "redirect_uris": [callback],
            "post_logout_redirect_uris": [bye], "first_party": true}),
    );
    let email = "leaving@example.com";
    api.verified_user(&smtp, email, USER_PASSWORD);
    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());
    let req = rp.request(&[]);
    ui.goto("authorize", &req.url);
    ui.expect_text("sign-in-page", "Sign in to Chromium Bye");
    ui.type_into("email", "email", email);
    ui.type_into("password", "password", USER_PASSWORD);
    ui.click("sign-in", "form button[type=submit]");
    ui.expect_text("callback", "callback received");
    calls
        .recv_timeout(Duration::from_secs(10))
        .expect("the callback was called");

    let client_id = url::Url::parse(&req.url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "client_id")
        .map(|(_, v)| v.into_owned())
        .unwrap();
    let mut end = url::Url::parse(&format!("{}/oauth/end_session", api.issuer())).unwrap();
    end.query_pairs_mut()
        .append_pair("client_id", &client_id)
        .append_pair("post_logout_redirect_uri", &bye)
        .append_pair("state", "bye-1");
    ui.goto("end-session", end.as_str());
    ui.expect_text(
        "confirmation",
        "Gallery asks to sign you out of Chromium Bye",
    );
    ui.checked("confirmation");
    ui.click("sign-out", "form button[type=submit]");
    ui.expect_text("post-logout", "callback received");
    let called = calls
        .recv_timeout(Duration::from_secs(10))
        .expect("the post-logout URI was called");
    assert!(called.starts_with(&bye), "{called}");
    assert!(called.contains("state=bye-1"), "{called}");

    // Signed out: the next authorize shows the sign-in page again.
    let req = rp.request(&[]);
    ui.goto("authorize-again", &req.url);
    ui.expect_text("signed-out", "Sign in to Chromium Bye");

    drop(ui);
    drop(driver);
}

/// Issue 22's browser test: a social provider's button on the hosted sign-in page, clicked in
/// Chromium; the local OpenID provider answers at once, and the relying party gets its code.
#[test]
fn a_user_signs_in_with_a_social_provider_on_the_hosted_page_in_chromium() {
    use crate::social_signin::{enable_google, Stub};
    if !chromium_present() {
        return;
    }
    let google = Stub::start();
    let env = [("TESSERA__SOCIAL__GOOGLE__ISSUER", google.base.as_str())];
    let (_smtp, srv, api, s) = setup("Chromium Social", &env);
    srv.reauth(&s, crate::support::PASSWORD);
    enable_google(&srv, &s, &api.slug);
    let (callback, calls) = start_callback();
    let rp = Rp::register(
        &srv,
        &s,
        &api,
        json!({"name": "Own Gallery", "redirect_uris": [callback], "first_party": true}),
    );
    google.next("chromium-g-1", Some("chromium-social@example.com"), true);

    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());
    let req = rp.request(&[]);
    ui.goto("authorize", &req.url);
    ui.expect_text("sign-in-page", "Continue with Google");
    ui.checked("sign-in-with-social");
    ui.click("google", "#social a");
    ui.expect_text("callback", "callback received");
    let called = calls
        .recv_timeout(Duration::from_secs(10))
        .expect("the callback was called");
    let claims = rp.finish(&api, req, &called);
    assert_eq!(claims["email"], "chromium-social@example.com");
    assert_eq!(claims["amr"], json!(["fed"]));

    drop(ui);
    drop(driver);
}

/// Single sign-on from the hosted sign-in page in Chromium: the user types an address at an
/// organization's proven domain and presses "Sign in with single sign-on"; the page sends the
/// browser on (an instant refresh and a link, never a redirect of the form's post, which the
/// page's `form-action` would stop) to the organization's OpenID provider, which answers at
/// once; back on the sign-in page's return, the authorize request goes on to the client;
/// a second request in the same browser goes on without a page. Then an SSO-only domain: the password button itself goes on to the provider.
#[test]
fn an_organization_member_signs_in_with_single_sign_on_on_the_hosted_page_in_chromium() {
    use crate::organizations::DnsStub;
    use crate::social_signin::{Stub, OIDC_SECRET};
    if !chromium_present() {
        return;
    }
    let op = Stub::start();
    let dns = DnsStub::start();
    let ns = format!("[\"{}\"]", dns.addr);
    let env = [
        ("TESSERA__DNS__NAMESERVERS", ns.as_str()),
        ("TESSERA__SSO__ALLOW_PRIVATE_TARGETS", "true"),
    ];
    let (_smtp, srv, api, s) = setup("Chromium SSO", &env);
    srv.reauth(&s, crate::support::PASSWORD);
    let base = format!("/v1/auth/dashboard/tenants/{}/organizations", api.slug);
    let (st, org) = srv.dash_json("POST", &base, &s, Some(&json!({"name": "Contoso"})));
    assert_eq!(st, 201, "{org}");
    let org = org["id"].as_str().unwrap().to_owned();
    let (st, claim) = srv.dash_json(
        "POST",
        &format!("{base}/{org}/domains"),
        &s,
        Some(&json!({"domain": "contoso.example"})),
    );
    assert_eq!(st, 201, "{claim}");
    dns.publish(
        claim["txt_name"].as_str().unwrap(),
        claim["txt_value"].as_str().unwrap(),
    );
    let (st, v) = srv.dash_json(
        "POST",
        &format!("{base}/{org}/domains/contoso.example/verify"),
        &s,
        None,
    );
    assert_eq!(st, 200, "{v}");
    let (st, c) = srv.dash_json(
        "POST",
        &format!("{base}/{org}/connections"),
        &s,
        Some(&json!({
            "name": "Contoso OP", "type": "oidc",
            "oidc": {"issuer": op.base, "client_id": "tessera-sso", "client_secret": OIDC_SECRET},
        })),
    );
    assert_eq!(st, 201, "{c}");
    let (callback, calls) = start_callback();
    let rp = Rp::register(
        &srv,
        &s,
        &api,
        json!({"name": "Org Portal", "redirect_uris": [callback], "first_party": true}),
    );
    op.next("sso-ada", Some("ada@contoso.example"), true);

    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());
    let req = rp.request(&[]);
    ui.goto("authorize", &req.url);
    ui.expect_text("sign-in-page", "Sign in with single sign-on");
    ui.checked("sign-in-with-sso");
    ui.type_into("email", "email", "ada@contoso.example");
    ui.click("sso", "button[value=sso]");
    ui.expect_text("callback", "callback received");
    let called = calls
        .recv_timeout(Duration::from_secs(10))
        .expect("the callback was called");
    let claims = rp.finish(&api, req, &called);
    assert_eq!(claims["email"], "ada@contoso.example");
    assert_eq!(claims["amr"], json!(["fed"]));

    // Returning in the same browser: the sign-in she made through her provider holds, and
    // the authorize request goes on to the client without a page, as the same user.
    let req = rp.request(&[]);
    ui.goto("authorize-again", &req.url);
    ui.expect_text("callback-again", "callback received");
    let called = calls
        .recv_timeout(Duration::from_secs(10))
        .expect("the callback was called again");
    let again = rp.finish(&api, req, &called);
    assert_eq!(again["sub"], claims["sub"], "{again}");
    assert_eq!(again["amr"], json!(["fed"]), "{again}");

    // An SSO-only domain: the password's own button goes on to the provider too.
    let (st, v) = srv.dash_json(
        "PATCH",
        &format!("{base}/{org}/domains/contoso.example"),
        &s,
        Some(&json!({"sso_only": true})),
    );
    assert_eq!(st, 200, "{v}");
    op.next("sso-grace", Some("grace@contoso.example"), true);
    let dir = tempfile::tempdir().unwrap();
    let (driver2, ui2) = chromium(dir.path());
    let req = rp.request(&[]);
    ui2.goto("authorize-2", &req.url);
    ui2.expect_text("sign-in-page-2", "Sign in with single sign-on");
    ui2.type_into("email-2", "email", "grace@contoso.example");
    ui2.type_into("password-2", "password", "not the way in here");
    ui2.click("password-button", "button[value=password]");
    ui2.expect_text("callback-2", "callback received");
    let called = calls
        .recv_timeout(Duration::from_secs(10))
        .expect("the callback was called");
    let claims = rp.finish(&api, req, &called);
    assert_eq!(claims["email"], "grace@contoso.example");

    drop(ui2);
    drop(driver2);
    drop(ui);
    drop(driver);
}

/// The link confirmation page in Chromium: its button is a form whose policy must let the
/// browser go on to the provider; the provider account is then linked.
#[test]
fn a_user_links_a_provider_through_the_confirmation_page_in_chromium() {
    use crate::social_signin::{enable_google, Stub};
    if !chromium_present() {
        return;
    }
    let google = Stub::start();
    let env = [("TESSERA__SOCIAL__GOOGLE__ISSUER", google.base.as_str())];
    let (smtp, srv, api, s) = setup("Chromium Link", &env);
    srv.reauth(&s, crate::support::PASSWORD);
    let (callback, calls) = start_callback();
    let slug = &api.slug;
    enable_google(&srv, &s, slug);
    for (method, path, body) in [
        (
            "PUT",
            format!("/v1/auth/dashboard/tenants/{slug}/settings/urls"),
            json!({"site_url": callback, "redirect_urls": []}),
        ),
        (
            "PATCH",
            format!("/v1/auth/dashboard/tenants/{slug}/settings/security"),
            json!({"explicit_account_linking_enabled": true}),
        ),
    ] {
        let (st, v) = srv.dash_json(method, &path, &s, Some(&body));
        assert_eq!(st, 200, "{path}: {v}");
    }
    let user = api.verified_user(&smtp, "linker@example.com", USER_PASSWORD);
    let r = api.post_as(
        "/v1/auth/step-up/password",
        Some(&user.access),
        &json!({ "password": USER_PASSWORD }),
    );
    let step_up = r.expect(200)["step_up_token"].as_str().unwrap().to_owned();
    let r = api.link_gate("google", &user.access, Some(&step_up));
    let url = r.expect(200)["authorize_url"].as_str().unwrap().to_owned();
    google.next("chromium-linked", Some("other@example.com"), true);

    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());
    ui.goto("link-page", &url);
    ui.expect_text("link-page", "l***@example.com");
    ui.checked("link-confirm");
    ui.click("continue", "a.button");
    ui.expect_text("callback", "callback received");
    let called = calls
        .recv_timeout(Duration::from_secs(10))
        .expect("the app was called back");
    assert!(called.contains("linked=google"), "{called}");
    let list = api.send("GET", "/v1/users/me/identities", Some(&user.access), None);
    assert_eq!(list.expect(200)["data"][0]["subject"], "chromium-linked");

    drop(ui);
    drop(driver);
}

/// A command of the WebDriver WebAuthn extension (virtual authenticators), under the session.
#[derive(Debug)]
struct WebAuthnCmd {
    path: String,
    body: serde_json::Value,
}

impl fantoccini::wd::WebDriverCompatibleCommand for WebAuthnCmd {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/{}",
            session_id.unwrap_or(""),
            self.path
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (axum::http::Method, Option<String>) {
        (axum::http::Method::POST, Some(self.body.to_string()))
    }
}

/// A tenant `name` whose passkey domain is this server's: WebAuthn wants a secure context
/// and a domain, and `http://localhost` is both. Answers the mail stub, the server (its base
/// the origin), the tenant's API, the owner's re-authenticated session and the origin.
fn passkey_tenant(name: &str) -> (SmtpStub, TestServer, UserApi, Session, String) {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let origin = format!("http://localhost:{port}");
    let (smtp, mut srv) = crate::support::start_with_mail_on(
        &format!("127.0.0.1:{port}"),
        &[("TESSERA__SERVER__BASE_URL", &origin)],
    );
    srv.base = origin.clone();
    let api = UserApi::signup(&srv, name, "owner@example.com");
    let s = srv.login(&api.owner, crate::support::PASSWORD);
    srv.reauth(&s, crate::support::PASSWORD);
    let r = crate::passkeys::put_domain(
        &srv,
        &s,
        &api,
        &json!({"passkey_rp_id": "localhost", "passkey_origins": [origin]}),
        None,
    );
    assert_eq!(r.0, 200, "{}", r.1);
    (smtp, srv, api, s, origin)
}

/// A passkey in Chromium's virtual authenticator: registered through the API with the
/// software authenticator, then handed (key, id, user handle) to the browser, which signs with
/// it when the hosted page's script asks.
#[test]
fn the_hosted_sign_in_page_signs_in_with_a_passkey_in_chromium() {
    if !chromium_present() {
        return;
    }
    let (smtp, srv, api, s, origin) = passkey_tenant("Passkey Chromium");
    let (callback, calls) = start_callback();
    let rp = Rp::register(
        &srv,
        &s,
        &api,
        json!({"name": "Keys Gallery", "redirect_uris": [callback], "first_party": true}),
    );
    let email = "chromium-key@example.com";
    let user = api.verified_user(&smtp, email, USER_PASSWORD);
    let mut key = tessera_testkit::webauthn::SoftAuthenticator::device_bound();
    crate::passkeys::register_from(&api, &user, &mut key, &origin, None).expect(201);
    let cred = key.credentials[0].clone();

    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());
    let added = ui.rt.block_on(ui.browser.issue_cmd(WebAuthnCmd {
        path: "webauthn/authenticator".into(),
        body: json!({
            "protocol": "ctap2", "transport": "internal", "hasResidentKey": true,
            "hasUserVerification": true, "isUserVerified": true, "isUserConsenting": true,
        }),
    }));
    let added = ui.ok("virtual-authenticator", added);
    let authenticator = added.as_str().expect("an authenticator id").to_owned();
    let stored = ui.rt.block_on(ui.browser.issue_cmd(WebAuthnCmd {
        path: format!("webauthn/authenticator/{authenticator}/credential"),
        body: json!({
            "credentialId": b64url(&cred.id),
            "isResidentCredential": true,
            "rpId": "localhost",
            "privateKey": b64url(cred.pkcs8()),
            "userHandle": b64url(&cred.user_handle),
            "signCount": cred.counter,
        }),
    }));
    ui.ok("virtual-credential", stored);

    let req = rp.request(&[]);
    ui.goto("authorize", &req.url);
    ui.expect_text("sign-in-page", "Sign in with a passkey");
    // The script ran under the page's policy: it showed the button (hidden without script).
    let shown = ui.rt.block_on(async {
        ui.browser
            .find(Locator::Id("passkey-button"))
            .await?
            .is_displayed()
            .await
    });
    assert!(ui.ok("passkey-shown", shown), "the script did not run");
    ui.click("passkey-click", "#passkey-button");
    ui.expect_text("callback", "callback received");
    let called = calls
        .recv_timeout(Duration::from_secs(10))
        .expect("the callback was called");
    let claims = rp.finish(&api, req, &called);
    assert_eq!(claims["email"], email);
    assert_eq!(claims["amr"], json!(["hwk"]));

    drop(ui);
    drop(driver);
}

/// The whole link that starts with `prefix` in a mail's text.
fn link_in(text: &str, prefix: &str) -> String {
    let start = text
        .find(prefix)
        .unwrap_or_else(|| panic!("no {prefix} in {text}"));
    text[start..].split_whitespace().next().unwrap().to_owned()
}

/// A tenant on the pro tier with one agent of `grant` (scope `openid`) and a confirmed user
/// `email`: the server, the user API and the agent's `(client id, secret)`.
fn agent_world(
    tenant: &str,
    agent: &str,
    grant: &str,
    email: &str,
) -> (
    crate::support::SmtpStub,
    crate::support::TestServer,
    UserApi,
    (String, String),
) {
    let (smtp, srv, api, s) = setup(tenant, &[("TESSERA__AGENTS__POLL_INTERVAL_SECS", "1")]);
    let out = srv.admin(&["tenant", "set-tier", &api.slug, "pro"], "");
    assert!(out.status.success(), "{}", out.stderr);
    srv.reauth(&s, crate::support::PASSWORD);
    let (st, body) = srv.dash_json(
        "POST",
        &format!("/v1/auth/dashboard/tenants/{}/agents", api.slug),
        &s,
        Some(&json!({"name": agent, "grant_types": [grant], "scopes": ["openid"]})),
    );
    assert_eq!(st, 201, "{body}");
    let creds = (
        body["client_id"].as_str().unwrap().to_owned(),
        body["client_secret"].as_str().unwrap().to_owned(),
    );
    api.verified_user(&smtp, email, USER_PASSWORD);
    (smtp, srv, api, creds)
}

/// A form POST of the agent to `/v1/tenants/{slug}/oauth/{endpoint}`: status and body.
fn agent_post(
    api: &UserApi,
    (id, secret): &(String, String),
    endpoint: &str,
    form: &[(&str, &str)],
) -> (u16, serde_json::Value) {
    let r = api
        .client
        .post(api.url(&format!("/v1/tenants/{}/oauth/{endpoint}", api.slug)))
        .basic_auth(id, Some(secret))
        .form(form)
        .send()
        .unwrap();
    (r.status().as_u16(), r.json::<serde_json::Value>().unwrap())
}

/// The device page in Chromium: the user follows the device's complete verification URI, signs
/// in with a password, sees the agent and the code, and approves; the agent's poll then gets
/// a token on the user's behalf.
#[test]
fn a_user_connects_a_device_on_the_hosted_device_page_in_chromium() {
    if !chromium_present() {
        return;
    }
    let (_smtp, _srv, api, agent) = agent_world(
        "Chromium Device",
        "Kitchen Speaker",
        "urn:ietf:params:oauth:grant-type:device_code",
        "cook@example.com",
    );
    let (st, started) = agent_post(&api, &agent, "device_authorization", &[]);
    assert_eq!(st, 200, "{started}");
    let device_code = started["device_code"].as_str().unwrap().to_owned();
    let user_code = started["user_code"].as_str().unwrap().to_owned();

    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());
    ui.goto(
        "device-page",
        started["verification_uri_complete"].as_str().unwrap(),
    );
    ui.expect_text("sign-in", "Connect a device");
    ui.checked("device-sign-in");
    ui.type_into("email", "email", "cook@example.com");
    ui.type_into("password", "password", USER_PASSWORD);
    ui.click("sign-in-button", "main form button");
    ui.expect_text("confirm", "Kitchen Speaker");
    ui.expect_text("confirm-code", &user_code);
    ui.checked("device-confirm");
    ui.click("approve", "main form button[value=approve]");
    ui.expect_text("approved", "Approved");

    std::thread::sleep(Duration::from_millis(1300));
    let (st, issued) = agent_post(
        &api,
        &agent,
        "token",
        &[
            ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
            ("device_code", &device_code),
        ],
    );
    assert_eq!(st, 200, "{issued}");
    assert!(issued["access_token"].as_str().is_some(), "{issued}");

    drop(ui);
    drop(driver);
}

/// The mailed link of an agent's CIBA request in Chromium: the page shows the agent and its
/// binding message; the approve button lets the agent's next poll get the token.
#[test]
fn a_user_approves_an_agent_from_the_mailed_link_in_chromium() {
    if !chromium_present() {
        return;
    }
    let (smtp, srv, api, agent) = agent_world(
        "Chromium Agent",
        "Calendar Helper",
        "urn:openid:params:grant-type:ciba",
        "planner@example.com",
    );
    let (st, started) = agent_post(
        &api,
        &agent,
        "bc-authorize",
        &[
            ("login_hint", "planner@example.com"),
            ("scope", "openid"),
            ("binding_message", "Meeting 4F"),
        ],
    );
    assert_eq!(st, 200, "{started}");
    let auth_req_id = started["auth_req_id"].as_str().unwrap().to_owned();
    let token = smtp.wait_for_link("planner@example.com", "/agent-request", 1);

    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());
    ui.goto(
        "request-page",
        &srv.url(&format!("/agent-request?token={token}")),
    );
    ui.expect_text("request", "Calendar Helper");
    ui.expect_text("binding", "Meeting 4F");
    ui.checked("agent-request");
    ui.click("approve", "main form button[value=approve]");
    ui.expect_text("approved", "Approved");

    std::thread::sleep(Duration::from_millis(1300));
    let (st, issued) = agent_post(
        &api,
        &agent,
        "token",
        &[
            ("grant_type", "urn:openid:params:grant-type:ciba"),
            ("auth_req_id", &auth_req_id),
        ],
    );
    assert_eq!(st, 200, "{issued}");
    assert!(issued["access_token"].as_str().is_some(), "{issued}");

    drop(ui);
    drop(driver);
}

/// The wallet QR page in Chromium: a phone's camera reads the QR code back as the wallet URL
/// the initiate call answered (decoded here from a screenshot of the rendered code), and the
/// same-device button opens that URL.
#[test]
fn the_wallet_qr_page_shows_a_scannable_code_in_chromium() {
    if !chromium_present() {
        return;
    }
    use crate::support::{TestServer, PASSWORD};
    let srv = TestServer::start();
    let signup = srv.signup("Chromium Wallet", "owner@example.com");
    let slug = signup["tenant"]["slug"].as_str().unwrap().to_owned();
    let key = signup["api_key"].as_str().unwrap().to_owned();
    let owner = srv.login("owner@example.com", PASSWORD);
    srv.admin(&["eudi", "dev-cert", &slug], "").json();
    let issuer = tessera_testkit::wallet::TestIssuer::new(
        "pid.example",
        tessera_eudi::jose::Alg::Es256,
        tessera_eudi::x509::Usage::Issuer,
    )
    .unwrap();
    let (st, v) = srv.dash_json(
        "PUT",
        &format!("/v1/auth/dashboard/tenants/{slug}/settings/eudi"),
        &owner,
        Some(&json!({
            "enabled": true,
            "requested_attributes": ["given_name"],
            "trust_anchors": [{
                "issuer": "https://pid.example", "allowedAlgs": ["ES256"],
                "allowedFormats": ["dc+sd-jwt"],
                "keyResolution": {"method": "x5c", "x5cRoots": [issuer.root_b64()]},
            }],
        })),
    );
    assert_eq!(st, 200, "{v}");
    let started: serde_json::Value = srv
        .client
        .post(srv.url("/v1/auth/eudi/initiate"))
        .header("x-api-key", &key)
        .json(&json!({}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let wallet_url = started["wallet_url"].as_str().unwrap().to_owned();

    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());
    ui.goto("qr-page", started["page_url"].as_str().unwrap());
    ui.expect_text("qr-title", "Sign in with your EU wallet");
    ui.checked("qr-page");
    let png = ui.rt.block_on(async {
        ui.browser
            .find(Locator::Css("figure.qr svg"))
            .await?
            .screenshot()
            .await
    });
    let png = ui.ok("qr-screenshot", png);
    assert_eq!(qr_text(&png), wallet_url, "the QR code says something else");
    // At 360 px the code fits its card and stands in its middle.
    let rect = |css: &'static str| {
        let r = ui
            .rt
            .block_on(async { ui.browser.find(Locator::Css(css)).await?.rectangle().await });
        ui.ok(css, r)
    };
    let (qr_x, _, qr_w, _) = rect("figure.qr svg");
    let (main_x, _, main_w, _) = rect("main");
    assert!(
        qr_x >= main_x && qr_x + qr_w <= main_x + main_w,
        "the code overflows its card: code {qr_x}+{qr_w}, card {main_x}+{main_w}"
    );
    let (left, right) = (qr_x - main_x, main_x + main_w - (qr_x + qr_w));
    assert!(
        (left - right).abs() <= 2.0,
        "the code is off-centre: {left} px left, {right} px right"
    );
    let href = ui.rt.block_on(async {
        ui.browser
            .find(Locator::Css("main a.button"))
            .await?
            .attr("href")
            .await
    });
    assert_eq!(
        ui.ok("same-device", href).as_deref(),
        Some(wallet_url.as_str())
    );

    drop(ui);
    drop(driver);
}

/// The text of the one QR code in a PNG.
fn qr_text(png_bytes: &[u8]) -> String {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let (w, h) = (info.width as usize, info.height as usize);
    let mut img = rqrr::PreparedImage::prepare_from_greyscale(w, h, |x, y| {
        let p = &buf[(y * w + x) * channels..];
        if channels >= 3 {
            ((u16::from(p[0]) + u16::from(p[1]) + u16::from(p[2])) / 3) as u8
        } else {
            p[0]
        }
    });
    let grids = img.detect_grids();
    assert_eq!(grids.len(), 1, "one QR code on the screenshot");
    grids[0].decode().unwrap().1
}

/// A guardian answers a minor's consent request on the hosted page, then manages the account
/// from the portal: withdraw, then delete after the confirmation form.
#[test]
fn a_guardian_consents_and_manages_the_account_in_chromium() {
    use crate::guardian::{
        ask_guardian, portal_token, protect_minors, register_verified, GUARDIAN, KID_DOB,
    };
    if !chromium_present() {
        return;
    }
    let (smtp, srv, api, s) = setup("Chromium Kids", &[]);
    protect_minors(&srv, &s, &api.slug);
    register_verified(&api, &smtp, "kid@example.com", KID_DOB);
    let token = ask_guardian(&api, &smtp, "kid@example.com", GUARDIAN, 1);

    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());
    ui.goto(
        "consent-page",
        &srv.url(&format!("/v1/guardian/consent?token={token}")),
    );
    ui.expect_text("consent", "kid@example.com");
    ui.checked("guardian-consent");
    // Accepting without the attestation ticked: the page says what is missing.
    ui.click("accept-unticked", "main form button[value=accept]");
    ui.expect_text("attestation-missing", "Tick the box");
    api.login("kid@example.com", USER_PASSWORD)
        .expect_error(403, "auth/guardian_consent_pending");
    ui.click("tick", "#attestation");
    ui.click("accept", "main form button[value=accept]");
    ui.expect_text("accepted", "Consent given");
    api.login_ok("kid@example.com", USER_PASSWORD);

    let portal = portal_token(&api, &smtp, "kid@example.com", GUARDIAN, 1);
    ui.goto(
        "portal-page",
        &srv.url(&format!("/v1/guardian/portal?token={portal}")),
    );
    ui.expect_text("portal", "kid@example.com");
    ui.checked("guardian-portal");
    ui.click("withdraw", "main form button[value=withdraw]");
    ui.expect_text("withdrawn", "Consent withdrawn");
    api.login("kid@example.com", USER_PASSWORD)
        .expect_error(403, "auth/guardian_consent_pending");
    ui.click("delete", "main form button[value=delete]");
    ui.expect_text("confirm", "Confirm within 10 minutes");
    ui.click("delete-confirmed", "main form button[value=delete]");
    ui.expect_text("deleted", "Account deleted");
    api.login("kid@example.com", USER_PASSWORD)
        .expect_error(401, "auth/invalid_credentials");

    drop(ui);
    drop(driver);
}

/// An address without an account opens the mailed invitation of an organization, chooses
/// its password on the page and joins; it then signs in with that password.
#[test]
fn an_invitee_chooses_a_password_and_joins_an_organization_in_chromium() {
    use crate::join_organization::{World, ORG};
    if !chromium_present() {
        return;
    }
    let world = World::start("Chromium Orgs");
    let email = "invitee@example.com";
    let link = world.invite(email, "member", 1);

    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());
    ui.goto("open-invitation", &link);
    ui.expect_text("invitation-page", &format!("{ORG} invites {email}"));
    ui.checked("invitation-page");
    let password = "chromium chosen passphrase";
    ui.type_into("join-type", "password", password);
    ui.type_into("join-type-2", "password_confirm", password);
    ui.click("join-click", "button[type=submit]");
    ui.expect_text("join-done", &format!("You joined {ORG}"));
    ui.checked("join-done");
    world.api.login_ok(email, password);

    drop(ui);
    drop(driver);
}

/// A returning user whose account someone elsewhere locked on purpose signs in on the hosted
/// page of a browser that signed in before (its device cookie) and reaches the client; the
/// same sign-in from a browser without that cookie is told to wait.
#[test]
fn a_browser_that_signed_in_before_is_not_locked_out_of_the_hosted_sign_in_in_chromium() {
    if !chromium_present() {
        return;
    }
    let email = "known-device@example.com";
    let world = FirstParty::start("Chromium Devices", "Gallery", email);
    let (srv, api, rp) = (&world.srv, &world.api, &world.rp);

    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());
    let sign_in = |ui: &Ui, step: &str| {
        let req = rp.request(&[]);
        ui.goto(step, &req.url);
        ui.expect_text(&format!("{step}-page"), "Sign in to Chromium Devices");
        ui.type_into(&format!("{step}-email"), "email", email);
        ui.type_into(&format!("{step}-password"), "password", USER_PASSWORD);
        ui.click(&format!("{step}-submit"), "form button[type=submit]");
        req
    };
    let req = sign_in(&ui, "first");
    let first = world.reached(&ui, "first", req);

    // The browser keeps a device cookie on the hosted pages' path, out of scripts' reach.
    let pages = format!("{}/oauth/{}/authorize", srv.base, api.slug);
    ui.goto("pages", &pages);
    let cookies = ui.rt.block_on(ui.browser.get_all_cookies());
    let cookies = ui.ok("cookies", cookies);
    let device = cookies
        .iter()
        .find(|c| c.name().starts_with("tessera_device_"))
        .unwrap_or_else(|| panic!("no device cookie in {cookies:?}"));
    assert_eq!(device.http_only(), Some(true), "{device:?}");
    assert_eq!(
        device.path(),
        Some(format!("/oauth/{}/", api.slug).as_str())
    );
    // Signed out of the pages: the sign-in cookie goes, the device cookie stays.
    let signin: Vec<String> = cookies
        .iter()
        .filter(|c| c.name().starts_with("tessera_signin_"))
        .map(|c| c.name().to_owned())
        .collect();
    for name in signin {
        let r = ui.rt.block_on(ui.browser.delete_cookie(&name));
        ui.ok("sign-out", r);
    }

    // Someone guesses at the password from many addresses: new devices are locked out.
    for _ in 0..12 {
        let r = api.login_from(email, "not the right passphrase", &fresh_client_ip());
        assert!(matches!(r.status, 401 | 429), "{} {}", r.status, r.body);
    }
    api.login_from(email, USER_PASSWORD, &fresh_client_ip())
        .expect_error(429, "auth/too_many_attempts");

    // This browser signs in and reaches the client.
    let req = sign_in(&ui, "known");
    assert_eq!(world.reached(&ui, "known", req)["sub"], first["sub"]);

    // A fresh browser is told to wait.
    ui.goto("fresh-page", &pages);
    let r = ui.rt.block_on(ui.browser.delete_all_cookies());
    ui.ok("fresh", r);
    sign_in(&ui, "fresh");
    ui.expect_text("fresh-refused", "Too many attempts");

    drop(ui);
    drop(driver);
}

/// Past its address's count, the hosted sign-in asks a real browser for the CAPTCHA: the
/// provider's script (a local stand-in that behaves as Turnstile's does once solved) loads
/// under the page's CSP and fills the form, and the sign-in reaches the client.
#[test]
fn the_hosted_sign_in_asks_for_the_captcha_past_the_address_count_in_chromium() {
    if !chromium_present() {
        return;
    }
    let stub = crate::support::CaptchaStub::start();
    let (smtp, srv) = crate::support::start_with_mail(&[
        ("TESSERA__CAPTCHA__PROVIDER", "turnstile"),
        ("TESSERA__CAPTCHA__SECRET", "stub-secret"),
        ("TESSERA__CAPTCHA__VERIFY_URL", &stub.url),
        ("TESSERA__CAPTCHA__SITE_KEY", "0x4AAAAAAA-site_key"),
        ("TESSERA__CAPTCHA__WIDGET_SCRIPT_URL", &stub.script_url),
        ("TESSERA__SECURITY__LOGIN_FAILURES_PER_ADDRESS", "2"),
    ]);
    let api =
        crate::passwordless::signup_with_captcha(&srv, "Chromium Widget", "owner@example.com");
    let s = srv.login(&api.owner, crate::support::PASSWORD);
    srv.reauth(&s, crate::support::PASSWORD);
    let (callback, calls) = start_callback();
    let rp = Rp::register(
        &srv,
        &s,
        &api,
        json!({"name": "Gallery", "redirect_uris": [callback], "first_party": true}),
    );
    let email = "widget-chromium@example.com";
    api.verified_user(&smtp, email, USER_PASSWORD);
    // The browser talks to the server from 127.0.0.1, the trusted proxy's own address: two
    // failures from there spend its count.
    for i in 0..2 {
        let r = api.send_as(
            Some(&api.api_key),
            "POST",
            "/v1/auth/login",
            None,
            Some(&json!({"email": format!("typo{i}@example.com"), "password": "not the right passphrase"})),
            None,
        );
        assert_eq!(r.status, 401, "{}", r.body);
    }

    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());
    let req = rp.request(&[]);
    ui.goto("authorize", &req.url);
    ui.expect_text("sign-in-page", "Sign in to Chromium Widget");
    ui.type_into("email", "email", email);
    ui.type_into("password", "password", USER_PASSWORD);
    ui.click("sign-in", "form button[type=submit]");
    // The widget's script ran under the page's CSP.
    ui.expect_text("widget", "Verified: a person");
    ui.type_into("password-again", "password", USER_PASSWORD);
    ui.click(
        "sign-in-again",
        "form:has(.cf-turnstile) button[type=submit]",
    );
    ui.expect_text("callback", "callback received");
    let called = calls
        .recv_timeout(Duration::from_secs(10))
        .expect("the callback was called");
    assert_eq!(rp.finish(&api, req, &called)["email"], email);

    drop(ui);
    drop(driver);
}

/// The dashboard's own mails in a real browser: an invitee opens the mailed link, chooses a
/// password and is a member; the owner confirms the address with the account's password; then,
/// having forgotten it, asks on the page, opens the mailed link and chooses a new one.
#[test]
fn the_dashboard_mail_pages_invite_verify_and_reset_in_chromium() {
    use crate::members::{invite, login_status, start};
    use crate::support::PASSWORD;
    if !chromium_present() {
        return;
    }
    let (smtp, srv) = start();
    srv.signup("Chromium Corp", "owner@chromium.test");
    let owner = srv.login("owner@chromium.test", PASSWORD);
    invite(&srv, &owner, "chromium-corp", "hire@chromium.test", "admin");
    let login = |email: &str, password: &str| login_status(&srv, email, password);

    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());
    let mail = |to: &str, path: &str, n: usize| {
        srv.url(&format!("{path}?token={}", smtp.wait_for_link(to, path, n)))
    };

    ui.goto(
        "invite-page",
        &mail("hire@chromium.test", "/dashboard/accept-invite", 1),
    );
    ui.expect_text("invite", "hire@chromium.test");
    let chosen = "a passphrase typed in chromium";
    ui.type_into("invite-type", "password", chosen);
    ui.type_into("invite-type-2", "password_confirm", chosen);
    ui.click("invite-click", "button[type=submit]");
    ui.expect_text(
        "invite-done",
        "You are now a member of chromium-corp as admin",
    );
    assert_eq!(login("hire@chromium.test", chosen), 200);

    ui.goto(
        "verify-page",
        &mail("owner@chromium.test", "/dashboard/verify-email", 1),
    );
    ui.type_into("verify-email", "email", "owner@chromium.test");
    ui.type_into("verify-password", "password", PASSWORD);
    ui.click("verify-click", "button[type=submit]");
    ui.expect_text("verify-done", "Address confirmed");
    let s = srv.login("owner@chromium.test", PASSWORD);
    assert_eq!(s.body["account"]["email_verified"], true);

    ui.goto("forgot-page", &srv.url("/dashboard/forgot-password"));
    ui.type_into("forgot-type", "email", "owner@chromium.test");
    ui.click("forgot-click", "button[type=submit]");
    ui.expect_text("forgot-done", "Check your e-mail");
    ui.goto(
        "reset-page",
        &mail("owner@chromium.test", "/dashboard/reset-password", 1),
    );
    let renewed = "the owner's renewed passphrase";
    ui.type_into("reset-type", "password", renewed);
    ui.type_into("reset-type-2", "password_confirm", renewed);
    ui.click("reset-click", "button[type=submit]");
    ui.expect_text("reset-done", "Password changed");
    // A verified account keeps its tenants.
    assert_eq!(
        srv.login("owner@chromium.test", renewed).body["tenants"][0]["slug"],
        "chromium-corp"
    );
    assert_eq!(login("owner@chromium.test", PASSWORD), 401);
    assert_eq!(login("owner@chromium.test", renewed), 200);

    drop(ui);
    drop(driver);
}

/// A developer without a mail server reads the verification mail in the development viewer
/// and follows its link to the page it opens.
#[test]
fn a_developer_follows_a_mailed_link_from_the_mail_viewer_in_chromium() {
    use crate::support::TestServer;
    if !chromium_present() {
        return;
    }
    let srv = TestServer::start_with(&[("TESSERA__MAIL__DEV_VIEWER", "true")]);
    srv.signup("Viewer Co", "dev@viewer.test");
    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());
    ui.goto("viewer", &srv.url("/dev/mail"));
    ui.expect_text("list", "Confirm your Tessera dashboard address");
    ui.click("open-message", "ul.links a");
    ui.expect_text("message", "Confirm that this address is yours");
    ui.click("follow-link", "ul.links a");
    ui.expect_text("verify-page", "Confirm your dashboard address");
    assert!(ui.url("at").contains("/dashboard/verify-email?token="));
    drop(ui);
    drop(driver);
}

/// A user who forgot the password asks on the hosted sign-in, resets it from the mail and is
/// brought back to the same authorize request, which ends at the client.
#[test]
fn a_forgotten_password_on_the_hosted_sign_in_ends_at_the_client_in_chromium() {
    if !chromium_present() {
        return;
    }
    let email = "forgetful@example.com";
    let world = FirstParty::start("Chromium Forget", "Notes", email);
    let (smtp, srv, api) = (&world.smtp, &world.srv, &world.api);

    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());
    let req = world.rp.request(&[]);
    ui.goto("sign-in", &req.url);
    ui.expect_text("sign-in-page", "Sign in to Chromium Forget");
    ui.type_into("forgot-email", "email", email);
    ui.click("forgot", "button[value=forgot_password]");
    ui.expect_text("forgot-sent", "Check your e-mail");
    let mail = smtp.wait_for(&api.slug, "password_reset", email, 1);
    ui.goto(
        "reset-page",
        &link_in(&mail.text, &format!("{}/reset-password?token=", srv.base)),
    );
    let renewed = "a password chosen after forgetting";
    ui.type_into("reset-type", "password", renewed);
    ui.type_into("reset-type-2", "password_confirm", renewed);
    ui.click("reset-click", "button[type=submit]");
    ui.expect_text("reset-done", "Password changed");
    let claims =
        world.continue_and_sign_in(&ui, ("Sign in to Chromium Forget", email, renewed), req);
    assert_eq!(claims["email"], email);
    drop(ui);
    drop(driver);
}

/// A newcomer creates an account on the hosted sign-in, confirms the address from the mail,
/// is brought back to the same authorize request and signs in there, which ends at the client.
#[test]
fn a_newcomer_signs_up_on_the_hosted_sign_in_and_ends_at_the_client_in_chromium() {
    if !chromium_present() {
        return;
    }
    let world = FirstParty::start("Chromium Signup", "Notes", "someone-else@example.com");
    let (smtp, srv, api) = (&world.smtp, &world.srv, &world.api);
    let email = "newcomer@example.com";
    let chosen = "a passphrase chosen on sign-up";

    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());
    let req = world.rp.request(&[]);
    ui.goto("sign-in", &req.url);
    ui.type_into("sign-in-email", "email", email);
    ui.click("create", "button[value=sign_up_page]");
    ui.expect_text("sign-up-page", "Create your Chromium Signup account");
    ui.type_into("sign-up-password", "password", chosen);
    ui.type_into("sign-up-password-2", "password_confirm", chosen);
    ui.click("consent", "#consent");
    ui.click("sign-up", "button[value=sign_up]");
    ui.expect_text("sign-up-sent", "Confirm your e-mail address");
    let mail = smtp.wait_for(&api.slug, "verify_email", email, 1);
    ui.goto(
        "verify-page",
        &link_in(&mail.text, &format!("{}/verify-email?token=", srv.base)),
    );
    ui.click("verify", "button[type=submit]");
    ui.expect_text("verified", "Address confirmed");
    let claims =
        world.continue_and_sign_in(&ui, ("Sign in to Chromium Signup", email, chosen), req);
    assert_eq!(claims["email"], email);
    drop(ui);
    drop(driver);
}

/// A tenant's colour reaches the hosted sign-in's primary button in a real browser, through
/// the page's own policy (a stylesheet of this server); the secondary buttons keep theirs.
#[test]
fn the_tenants_colour_paints_the_hosted_sign_ins_primary_button_in_chromium() {
    if !chromium_present() {
        return;
    }
    let world = FirstParty::start("Chromium Brand", "Notes", "brand-user@example.com");
    let (srv, api) = (&world.srv, &world.api);
    let owner = srv.login(&api.owner, crate::support::PASSWORD);
    let (st, body) = srv.dash_json(
        "PATCH",
        &format!("/v1/auth/dashboard/tenants/{}/settings/branding", api.slug),
        &owner,
        Some(&json!({"primary_color": "#0b5cad"})),
    );
    assert_eq!(st, 200, "{body}");
    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());
    ui.goto("sign-in", &world.rp.request(&[]).url);
    ui.expect_text("sign-in-page", "Sign in to Chromium Brand");
    let colour = |css: &'static str| {
        let r = ui.rt.block_on(async {
            ui.browser
                .find(Locator::Css(css))
                .await?
                .css_value("background-color")
                .await
        });
        ui.ok(css, r)
    };
    assert_eq!(colour("button[value=password]"), "rgba(11, 92, 173, 1)");
    assert_eq!(
        colour("button[value=forgot_password]"),
        "rgba(255, 255, 255, 1)"
    );
    drop(ui);
    drop(driver);
}

/// axe-core's script (`npm ci --prefix tests/a11y`), or `None` after saying loudly that the
/// accessibility checks are skipped.
fn axe_source() -> Option<String> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/a11y/node_modules/axe-core/axe.min.js");
    let found = std::fs::read_to_string(&path).ok();
    if found.is_none() {
        crate::support::skip_without(
            &format!("axe-core at {}", path.display()),
            "npm ci --prefix tests/a11y; .ci/run does",
        );
    }
    found
}

impl Ui {
    /// The WCAG 2.1 A and AA violations axe-core finds on the page as it is, at `width` px:
    /// each rule's id with the elements it names.
    fn axe(&self, name: &str, axe: &str, width: u32) -> Vec<String> {
        let r = self.rt.block_on(async {
            self.browser.set_window_size(width, 900).await?;
            self.browser.execute(axe, vec![]).await?;
            self.browser
                .execute_async(
                    "const done = arguments[arguments.length - 1];
                     window.axe
                       .run(document, {runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']})
                       .then(r => done(r.violations.map(v =>
                         v.id + ': ' + v.nodes.map(n => n.target.join(' ')).join(', '))))
                       .catch(e => done(['axe failed: ' + e]));",
                    vec![],
                )
                .await
        });
        let found = self.ok(name, r);
        found
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_else(|| vec![format!("an answer that is no list: {found}")])
    }

    /// [`Ui::accessible`] with axe-core's script read once for every test; a test running
    /// without it says so loudly (and fails in CI), as without Chromium.
    pub(crate) fn checked(&self, name: &str) {
        static AXE: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
        if let Some(axe) = AXE.get_or_init(axe_source) {
            self.accessible(name, axe);
        }
    }

    /// Checks the page now shown at 360 and 1280 px; back at 360 after.
    fn accessible(&self, name: &str, axe: &str) {
        for width in [1280, 360] {
            let found = self.axe(name, axe, width);
            if !found.is_empty() {
                self.fail(name, format!("axe-core at {width} px: {found:?}"));
            }
        }
    }
}

/// The hosted pages this release adds or changed pass axe-core's WCAG 2.1 A and AA rules at
/// 360 and 1280 px: the sign-in (one address, its buttons), the sign-up form with its
/// errors, the page after asking for a reset, the dashboard mails' pages, the development mail
/// viewer and a branded page.
#[test]
fn the_hosted_pages_pass_axe_core_at_both_widths_in_chromium() {
    use crate::members::{invite, start};
    if !chromium_present() {
        return;
    }
    let Some(axe) = axe_source() else {
        return;
    };
    let world = FirstParty::start("Chromium Access", "Notes", "access@example.com");
    let (srv, api) = (&world.srv, &world.api);
    let owner = srv.login(&api.owner, crate::support::PASSWORD);
    let (st, body) = srv.dash_json(
        "PATCH",
        &format!("/v1/auth/dashboard/tenants/{}/settings/branding", api.slug),
        &owner,
        Some(&json!({"primary_color": "#0b5cad"})),
    );
    assert_eq!(st, 200, "{body}");
    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());

    let req = world.rp.request(&[]);
    ui.goto("sign-in", &req.url);
    ui.expect_text("sign-in-page", "Sign in to Chromium Access");
    ui.accessible("sign-in", &axe);
    ui.click("create", "button[value=sign_up_page]");
    ui.expect_text("sign-up", "Create your Chromium Access account");
    ui.accessible("sign-up", &axe);
    ui.click("sign-up-empty", "button[value=sign_up]");
    ui.expect_text("sign-up-errors", "The account was not created");
    ui.accessible("sign-up-errors", &axe);
    ui.goto("sign-in-again", &req.url);
    ui.type_into("forgot-email", "email", "access@example.com");
    ui.click("forgot", "button[value=forgot_password]");
    ui.expect_text("forgot-sent", "Check your e-mail");
    ui.accessible("forgot-sent", &axe);

    // The dashboard's mails' pages and the development viewer, on a server that shows it.
    let (smtp, dash) = start();
    let viewer = crate::support::TestServer::start_with(&[("TESSERA__MAIL__DEV_VIEWER", "true")]);
    for srv in [&dash, &viewer] {
        srv.signup("Access Corp", "boss@access.test");
    }
    let boss = dash.login("boss@access.test", crate::support::PASSWORD);
    invite(&dash, &boss, "access-corp", "hire@access.test", "admin");
    for (name, to, path) in [
        (
            "dashboard-invite",
            "hire@access.test",
            "/dashboard/accept-invite",
        ),
        (
            "dashboard-verify",
            "boss@access.test",
            "/dashboard/verify-email",
        ),
    ] {
        let token = smtp.wait_for_link(to, path, 1);
        ui.goto(name, &dash.url(&format!("{path}?token={token}")));
        ui.expect_text(name, "Tessera");
        ui.accessible(name, &axe);
    }
    ui.goto("dashboard-forgot", &dash.url("/dashboard/forgot-password"));
    ui.expect_text("dashboard-forgot", "Reset your dashboard password");
    ui.accessible("dashboard-forgot", &axe);
    // The pages that say what went wrong.
    for (name, path, says) in [
        (
            "problem-invalid",
            "/dashboard/reset-password",
            "This link is not valid",
        ),
        (
            "problem-no-tenant",
            "/reset-password?token=00000000-0000-7000-8000-000000000000.x",
            "not valid",
        ),
    ] {
        ui.goto(name, &dash.url(path));
        ui.expect_text(name, says);
        ui.accessible(name, &axe);
    }
    ui.goto("viewer", &viewer.url("/dev/mail"));
    ui.expect_text("viewer", "Mail sent (development)");
    ui.accessible("viewer", &axe);
    ui.click("viewer-message", "ul.links a");
    ui.expect_text("viewer-message", "To: boss@access.test");
    ui.accessible("viewer-message", &axe);
    drop(ui);
    drop(driver);
}

/// A tenant owner signs in to the console with their password and authenticator code, finds
/// a user by the start of their address, blocks them, and reads the block in the audit log;
/// makes an organization and claims a domain for it; every page on the way passes axe-core
/// at 360 and 1280 px.
#[test]
fn an_owner_runs_a_tenant_from_the_console_in_chromium() {
    use crate::dashboard_mfa::{enable_totp, verified_owner, OWNER};
    use crate::support::PASSWORD;
    if !chromium_present() {
        return;
    }
    let (smtp, srv, s) = verified_owner();
    let (totp, step, _) = enable_totp(&srv, &s);
    let (status, body) = srv.dash_json(
        "POST",
        "/v1/auth/dashboard/tenants/mfa-co/users",
        &s,
        Some(&json!({"email": "dana@users.test", "password": "a user's long password", "email_verified": true})),
    );
    assert_eq!(status, 201, "{body}");
    let dana = body["id"].as_str().unwrap().to_owned();

    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());
    ui.goto("console", &srv.url("/console"));
    ui.expect_text("sign-in-page", "Sign in to the console");
    ui.checked("sign-in-axe");
    ui.picture("sign-in-picture", "console-sign-in.png");
    ui.type_into("sign-in-email", "email", OWNER);
    ui.type_into("sign-in-password", "password", PASSWORD);
    ui.click("sign-in-click", "main button[type=submit]");
    ui.expect_text("code-page", "Enter your code");
    ui.checked("code-axe");
    ui.type_into("code-type", "code", &totp.at_step(step + 1));
    ui.click("code-click", "main button[type=submit]");
    ui.expect_text("tenants", "Your tenants");
    ui.checked("tenants-axe");

    ui.click("open-tenant", "main a[href='/console/t/mfa-co']");
    ui.expect_text("overview", "Sign-ins over time");
    ui.checked("overview-axe");
    ui.picture("overview-picture", "console-overview.png");
    ui.click("users-nav", "nav a[href='/console/t/mfa-co/users']");
    ui.expect_text("users", "dana@users.test");
    ui.type_into("users-search", "email-prefix", "dan");
    ui.click("users-search-click", "main form button[type=submit]");
    ui.expect_text("users-found", "dana@users.test");
    ui.checked("users-axe");
    ui.picture("users-picture", "console-users.png");
    ui.click("open-user", &format!("main a[href$='{dana}']"));
    ui.expect_text("user", "Sign-in methods");
    ui.checked("user-axe");
    ui.picture("user-picture", "console-user.png");
    ui.click(
        "block",
        &format!("form[action='/console/t/mfa-co/users/{dana}/block'] button"),
    );
    ui.expect_text("blocked", "The user is blocked and signed out everywhere.");
    let (_, user) = srv.dash_json(
        "GET",
        &format!("/v1/auth/dashboard/tenants/mfa-co/users/{dana}"),
        &s,
        None,
    );
    assert_eq!(user["status"], "blocked");
    ui.click(
        "delete",
        &format!("form[action='/console/t/mfa-co/users/{dana}/delete'] button"),
    );
    ui.expect_text("reauth", "Confirm it is you");
    ui.checked("reauth-axe");

    srv.admin(
        &[
            "resource",
            "register",
            "--tenant",
            "mfa-co",
            "--name",
            "Orders API",
            "--uri",
            "https://api.mfa.example/orders",
        ],
        "",
    );
    ui.goto("scopes", &srv.url("/console/t/mfa-co/scopes"));
    ui.expect_text("scopes-page", "Orders API");
    ui.checked("scopes-axe");
    ui.goto("settings", &srv.url("/console/t/mfa-co/settings"));
    ui.checked("settings-axe");
    ui.click(
        "security",
        "main a[href='/console/t/mfa-co/settings/security']",
    );
    ui.expect_text("security-page", "Two-step verification");
    ui.checked("security-axe");
    ui.picture("security-picture", "console-settings.png");
    ui.click("mfa-required", "#f-mfa-policy option[value='required']");
    ui.click("security-save", "main form button[type=submit]");
    ui.expect_text("security-saved", "Saved.");
    let (_, security) = srv.dash_json(
        "GET",
        "/v1/auth/dashboard/tenants/mfa-co/settings/security",
        &s,
        None,
    );
    assert_eq!(security["mfa_policy"], "required");
    ui.goto("minors", &srv.url("/console/t/mfa-co/settings/minors"));
    ui.checked("minors-axe");
    ui.goto("members", &srv.url("/console/t/mfa-co/members"));
    ui.type_into("invite-email", "invite-email", "colleague@users.test");
    ui.click(
        "invite",
        "form[action='/console/t/mfa-co/members/invite'] button",
    );
    ui.expect_text("invited", "The invitation is on its way.");
    ui.checked("members-axe");
    // The colleague accepts from the mail, and is a member.
    let invite = smtp.wait_for_link("colleague@users.test", "/dashboard/accept-invite", 1);
    ui.goto(
        "accept",
        &srv.url(&format!("/dashboard/accept-invite?token={invite}")),
    );
    let chosen = "a colleague's long passphrase";
    ui.type_into("accept-password", "password", chosen);
    ui.type_into("accept-password-2", "password_confirm", chosen);
    ui.click("accept-click", "button[type=submit]");
    ui.expect_text("accepted", "You are now a member of mfa-co");
    ui.goto("members-again", &srv.url("/console/t/mfa-co/members"));
    ui.expect_text("member-listed", "colleague@users.test");
    ui.click("keys", "nav a[href='/console/t/mfa-co/keys']");
    ui.expect_text("keys", "Management keys");
    ui.checked("keys-axe");
    ui.click("clients", "nav a[href='/console/t/mfa-co/clients']");
    ui.expect_text("clients", "No client yet.");
    ui.checked("clients-axe");
    ui.click("agents", "nav a[href='/console/t/mfa-co/agents']");
    ui.expect_text("agents", "No agent yet.");
    ui.checked("agents-axe");
    ui.click("webhooks", "nav a[href='/console/t/mfa-co/webhooks']");
    ui.expect_text("webhooks", "No endpoint yet.");
    ui.checked("webhooks-axe");
    // An organization: made on its list, a domain claimed on its own page.
    ui.click(
        "organizations",
        "nav a[href='/console/t/mfa-co/organizations']",
    );
    ui.expect_text("organizations", "No organization yet.");
    ui.checked("organizations-axe");
    ui.type_into("organization-name", "org-name", "Contoso");
    ui.click(
        "organization-create",
        "form[action='/console/t/mfa-co/organizations/create'] button",
    );
    ui.expect_text("organization", "The organization is created.");
    ui.type_into("domain", "org-domain", "contoso.example");
    ui.click("domain-claim", "form[action$='/add-domain'] button");
    ui.expect_text("domain-claimed", "_tessera-verification.contoso.example");
    ui.checked("organization-axe");
    ui.goto("audit-page", &srv.url("/console/t/mfa-co/audit"));
    ui.expect_text("audit", "user.blocked");
    ui.checked("audit-axe");
    ui.picture("audit-picture", "console-audit.png");

    // The account: two-step verification off (after the password again), then set up anew.
    ui.click("account", "header a[href='/console/account']");
    ui.expect_text("account", "recovery codes left");
    ui.checked("account-axe");
    ui.click(
        "mfa-off",
        "form[action='/console/account/mfa/remove'] button",
    );
    ui.expect_text("mfa-off-reauth", "Confirm it is you");
    ui.type_into("mfa-off-password", "reauth-password", PASSWORD);
    ui.click("mfa-off-confirm", "main form button[type=submit]");
    ui.expect_text("mfa-off-back", "Turn off two-step verification");
    ui.click(
        "mfa-off-again",
        "form[action='/console/account/mfa/remove'] button",
    );
    ui.expect_text("mfa-is-off", "Two-step verification is off.");
    ui.click("mfa-on", "form[action='/console/account/mfa/setup'] button");
    ui.expect_text("mfa-setup", "Scan this code");
    ui.checked("mfa-setup-axe");
    ui.goto("keys-again", &srv.url("/console/t/mfa-co/keys"));
    // The API key rotated (the password was given for two-step verification a moment ago,
    // which the re-authentication window covers): the new key, shown once.
    let rotate = "form[action='/console/t/mfa-co/keys/api-key/rotate'] button";
    ui.click("rotate", rotate);
    ui.expect_text("rotated", "shown only this once");
    let key = ui.text_of("new-key", "main code");
    assert_eq!(srv.get("/v1/tenant", Some(key.trim())).status(), 200);
    ui.checked("rotated-axe");
    ui.click("sign-out", "header form button[type=submit]");
    ui.expect_text("signed-out", "Sign in to the console");
    ui.goto("after-sign-out", &srv.url("/console/t/mfa-co/users"));
    ui.expect_text("still-signed-out", "Sign in to the console");
    drop(ui);
    drop(driver);
}

/// A newcomer creates an account and a tenant on the console's sign-up page, the CAPTCHA
/// widget solved in the page, reads the key shown once and opens the tenant; the pages pass
/// axe-core at both widths.
#[test]
fn a_newcomer_signs_up_on_the_console_in_chromium() {
    if !chromium_present() {
        return;
    }
    let stub = crate::support::CaptchaStub::start();
    let (_smtp, srv) = crate::support::start_with_mail(&[
        ("TESSERA__CAPTCHA__PROVIDER", "turnstile"),
        ("TESSERA__CAPTCHA__SECRET", "stub-secret"),
        ("TESSERA__CAPTCHA__VERIFY_URL", &stub.url),
        ("TESSERA__CAPTCHA__SITE_KEY", "0x4AAAAAAA-site_key"),
        ("TESSERA__CAPTCHA__WIDGET_SCRIPT_URL", &stub.script_url),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());
    ui.goto("console", &srv.url("/console"));
    ui.click("to-sign-up", "main a[href='/console/sign-up']");
    ui.expect_text("sign-up", "Verified: a person");
    ui.checked("sign-up-axe");
    ui.type_into("email", "email", "newcomer@chromium.test");
    ui.type_into("password", "password", "a newcomer's chromium passphrase");
    ui.type_into("tenant", "tenant-name", "Chromium Fresh");
    ui.click("terms", "#consent-terms");
    ui.click("privacy", "#consent-privacy");
    ui.click("create", "main form button[type=submit]");
    ui.expect_text("ready", "Your tenant is ready");
    ui.checked("ready-axe");
    ui.click("open", "main a[href='/console/t/chromium-fresh']");
    ui.expect_text("overview", "Chromium Fresh");
    let s = srv.login("newcomer@chromium.test", "a newcomer's chromium passphrase");
    assert_eq!(s.body["tenants"][0]["slug"], "chromium-fresh");
    drop(ui);
    drop(driver);
}

/// A person signs in to their account page in Chromium (sent to the hosted sign-in and back),
/// turns two-step verification on with the QR page, changes the password and signs out; every
/// page on the way passes axe-core at both widths.
#[test]
fn a_person_manages_their_account_on_the_account_page_in_chromium() {
    if !chromium_present() {
        return;
    }
    let (smtp, srv, api, _s) = setup("Account Co", &[]);
    let who = "grace@example.com";
    let user = api.verified_user(&smtp, who, USER_PASSWORD);
    let account = srv.url(&format!("/oauth/{}/account", api.slug));

    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());
    ui.goto("account", &account);
    ui.expect_text("sign-in", "Sign in to Account Co");
    ui.checked("sign-in-axe");
    ui.type_into("sign-in-email", "email", who);
    ui.type_into("sign-in-password", "password", USER_PASSWORD);
    ui.click("sign-in-click", "button[value='password']");
    ui.expect_text("account-page", "Your Account Co account");
    ui.checked("account-axe");
    ui.picture("account-picture", "account-page.png");

    ui.type_into("mfa-password", "setup-password", USER_PASSWORD);
    ui.click(
        "mfa-setup",
        &format!(
            "form[action='/oauth/{}/account/mfa/setup'] button",
            api.slug
        ),
    );
    ui.expect_text("mfa-page", "Scan this QR code");
    ui.checked("mfa-axe");
    let secret = ui.text_of("mfa-secret", "ul.codes code");
    let totp = Totp::new(secret.trim());
    let step = settled_totp_step(3.0);
    ui.type_into("mfa-code", "code", &totp.at_step(step));
    ui.click("mfa-confirm", "main form button[type=submit]");
    ui.expect_text("mfa-on", "Two-step verification is on");
    ui.checked("codes-axe");
    assert_eq!(api.me(&user.access).expect(200)["mfa_enabled"], true);

    ui.goto("back", &account);
    ui.type_into("current", "current-password", USER_PASSWORD);
    ui.type_into("new", "new_password", "another long passphrase");
    ui.click(
        "change",
        &format!("form[action='/oauth/{}/account/password'] button", api.slug),
    );
    ui.expect_text("changed", "Your password is changed.");
    api.me(&user.access).expect_error(401, "auth/invalid_token");

    // A new address, confirmed from the link mailed to it.
    ui.type_into("new-email", "new-email", "grace.new@example.com");
    ui.type_into(
        "email-password",
        "email-password",
        "another long passphrase",
    );
    ui.click(
        "change-email",
        &format!("form[action='/oauth/{}/account/email'] button", api.slug),
    );
    ui.expect_text("email-sent", "Check your new address");
    ui.checked("email-sent-axe");
    let token = smtp.wait_for_link("grace.new@example.com", "/confirm-email", 1);
    ui.goto(
        "confirm",
        &srv.url(&format!("/confirm-email?token={token}")),
    );
    ui.expect_text("confirm-page", "Confirm your new e-mail address");
    ui.checked("confirm-axe");
    ui.click("confirm-click", "main form button");
    ui.expect_text("confirmed", "Your e-mail address is changed");
    ui.checked("confirmed-axe");
    ui.goto("account-again", &account);
    ui.expect_text("new-address", "grace.new@example.com");

    ui.click("sign-out", "header form button");
    ui.expect_text("signed-out", "You are signed out");
    ui.checked("signed-out-axe");
    ui.goto("after", &account);
    ui.expect_text("sign-in-again", "Sign in to Account Co");
    drop(driver);
}

/// A person adds a passkey on their account page in Chromium (its virtual authenticator makes
/// it when the page's script asks), signs out, and signs in to the account with that passkey;
/// the page that adds it passes axe-core at both widths.
#[test]
fn a_person_adds_a_passkey_on_the_account_page_and_signs_in_with_it_in_chromium() {
    if !chromium_present() {
        return;
    }
    let (smtp, _srv, api, _s, origin) = passkey_tenant("Keys Account");
    let who = "keyholder@example.com";
    let user = api.verified_user(&smtp, who, USER_PASSWORD);
    let account = format!("{origin}/oauth/{}/account", api.slug);

    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = chromium(dir.path());
    let added = ui.rt.block_on(ui.browser.issue_cmd(WebAuthnCmd {
        path: "webauthn/authenticator".into(),
        body: json!({
            "protocol": "ctap2", "transport": "internal", "hasResidentKey": true,
            "hasUserVerification": true, "isUserVerified": true, "isUserConsenting": true,
        }),
    }));
    let added = ui.ok("virtual-authenticator", added);
    let authenticator = added.as_str().expect("an authenticator id").to_owned();
    ui.goto("account", &account);
    ui.expect_text("sign-in", "Sign in to Keys Account");
    ui.type_into("sign-in-email", "email", who);
    ui.type_into("sign-in-password", "password", USER_PASSWORD);
    ui.click("sign-in-click", "button[value='password']");
    ui.expect_text("account-page", "Your Keys Account account");
    ui.type_into("add-password", "add-passkey-password", USER_PASSWORD);
    ui.click(
        "add",
        &format!(
            "form[action='/oauth/{}/account/passkeys/add'] button",
            api.slug
        ),
    );
    ui.expect_text("add-page", "Create the passkey");
    ui.checked("add-axe");
    ui.type_into("add-name", "passkey-name", "Chromium key");
    ui.click("create", "#passkey-add-button");
    ui.expect_text("added", "The passkey is added.");
    ui.expect_text("listed", "Chromium key");
    let listed = api.send("GET", "/v1/users/me/passkeys", Some(&user.access), None);
    assert_eq!(
        listed.expect(200)["passkeys"][0]["nickname"],
        "Chromium key"
    );

    ui.click("sign-out", "header form button");
    ui.expect_text("signed-out", "You are signed out");
    ui.goto("again", &account);
    ui.expect_text("sign-in-again", "Sign in with a passkey");
    // The authenticator fails to verify the user: the button's error state, which passes
    // axe-core too; then it verifies, and the same button signs in.
    let uv = |verified: bool| {
        let set = ui.rt.block_on(ui.browser.issue_cmd(WebAuthnCmd {
            path: format!("webauthn/authenticator/{authenticator}/uv"),
            body: json!({ "isUserVerified": verified }),
        }));
        ui.ok("user-verification", set);
    };
    uv(false);
    ui.click("passkey-fails", "#passkey-button");
    ui.expect_text("passkey-error", "The passkey did not sign you in");
    ui.checked("passkey-error-axe");
    uv(true);
    ui.click("passkey-click", "#passkey-button");
    ui.expect_text("back-in", "Your Keys Account account");
    drop(ui);
    drop(driver);
}
