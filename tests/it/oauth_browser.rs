//! The OpenID provider in browser mode, over HTTP as a browser would speak it (no script, form
//! posts, cookies, redirects followed by hand): a relying party built on the `openidconnect`
//! crate sends the browser to authorize; the hosted pages sign the user in (password, the TOTP
//! step, a code by e-mail) and ask for consent; the hosted sign-in cookie makes the next
//! authorize silent; `prompt`, CSRF, a forged cookie, denial and RP-initiated logout behave.
//! The same flow in headless Chromium is in `browser.rs`.

use std::collections::HashMap;

use openidconnect::{
    core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata},
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, IssuerUrl, Nonce, PkceCodeChallenge,
    PkceCodeVerifier, RedirectUrl, Scope, TokenResponse,
};
use serde_json::json;

use crate::support::*;

const CALLBACK: &str = "https://rp.example/callback";

/// A browser without script: a cookie jar, redirects followed by hand.
pub struct Browser {
    client: reqwest::blocking::Client,
    jar: HashMap<String, String>,
    /// Every `Set-Cookie` seen, by cookie name (the last one).
    set_cookies: HashMap<String, String>,
    /// The client address a trusted proxy would name (`X-Forwarded-For`).
    forwarded_for: Option<String>,
}

/// One answer: status, headers, `Location`, `Retry-After`, body.
pub struct Page {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub location: Option<String>,
    pub retry_after: Option<String>,
    pub body: String,
}

impl Page {
    /// The value of hidden input `name` in the `n`th form (0-based) that has one.
    pub fn hidden(&self, name: &str, n: usize) -> String {
        let needle = format!("name=\"{name}\" value=\"");
        let mut rest = self.body.as_str();
        for _ in 0..n {
            let at = rest
                .find(&needle)
                .unwrap_or_else(|| panic!("no {name} in {}", self.body));
            rest = &rest[at + needle.len()..];
        }
        let at = rest
            .find(&needle)
            .unwrap_or_else(|| panic!("no {name} in {}", self.body));
        let start = &rest[at + needle.len()..];
        unescape(&start[..start.find('"').unwrap()])
    }

    /// The `action` of the page's first form that has one, absolute.
    pub fn action(&self, base: &str) -> String {
        let needle = "action=\"";
        let at = self
            .body
            .find(needle)
            .unwrap_or_else(|| panic!("no form action in {}", self.body));
        let rest = &self.body[at + needle.len()..];
        let action = unescape(&rest[..rest.find('"').unwrap()]);
        Browser::absolute(base, &action)
    }

    #[track_caller]
    pub fn redirect(&self, status: u16) -> String {
        assert_eq!(self.status, status, "{}", self.body);
        self.location.clone().expect("a Location")
    }
}

/// An attribute value as the browser reads it.
fn unescape(v: &str) -> String {
    v.replace("&#38;", "&")
        .replace("&amp;", "&")
        .replace("&#39;", "'")
        .replace("&#34;", "\"")
        .replace("&quot;", "\"")
}

impl Browser {
    pub fn new() -> Self {
        Browser {
            client: reqwest::blocking::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("client"),
            jar: HashMap::new(),
            set_cookies: HashMap::new(),
            forwarded_for: None,
        }
    }

    fn absolute(base: &str, location: &str) -> String {
        if location.starts_with('/') {
            format!("{base}{location}")
        } else {
            location.to_owned()
        }
    }

    fn send(&mut self, req: reqwest::blocking::RequestBuilder) -> Page {
        let cookies: Vec<String> = self.jar.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let mut req = req.header("accept", "text/html,application/xhtml+xml,*/*;q=0.8");
        if !cookies.is_empty() {
            req = req.header("cookie", cookies.join("; "));
        }
        if let Some(ip) = &self.forwarded_for {
            req = req.header("x-forwarded-for", ip);
        }
        let r = req.send().expect("an answer");
        for v in r.headers().get_all("set-cookie") {
            let v = v.to_str().unwrap().to_owned();
            let (name, value) = v.split(';').next().unwrap().split_once('=').unwrap();
            self.set_cookies.insert(name.to_owned(), v.clone());
            if v.contains("Max-Age=0") {
                self.jar.remove(name);
            } else {
                self.jar.insert(name.to_owned(), value.to_owned());
            }
        }
        Page {
            status: r.status().as_u16(),
            headers: r.headers().clone(),
            location: r
                .headers()
                .get("location")
                .map(|l| l.to_str().unwrap().to_owned()),
            retry_after: r
                .headers()
                .get("retry-after")
                .map(|l| l.to_str().unwrap().to_owned()),
            body: r.text().unwrap_or_default(),
        }
    }

    pub fn get(&mut self, url: &str) -> Page {
        let req = self.client.get(url);
        self.send(req)
    }

    pub fn post(&mut self, url: &str, form: &[(&str, &str)]) -> Page {
        let req = self.client.post(url).form(form);
        self.send(req)
    }

    pub fn signin_cookie(&self) -> Option<(&String, &String)> {
        self.jar
            .iter()
            .find(|(k, _)| k.starts_with("tessera_signin_"))
    }
}

/// A relying party built on the `openidconnect` crate.
pub struct Rp {
    client: CoreClient<
        openidconnect::EndpointSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointMaybeSet,
        openidconnect::EndpointMaybeSet,
    >,
    http: reqwest::blocking::Client,
    redirect: String,
}

/// One authorize request of the relying party.
pub struct Request {
    pub url: String,
    state: String,
    nonce: Nonce,
    verifier: PkceCodeVerifier,
}

impl Rp {
    /// Registers a confidential client allowed `openid email` (`fields` adds or overrides
    /// registration fields; its first redirect URI is the relying party's) and discovers the
    /// provider.
    pub fn register(
        srv: &TestServer,
        s: &Session,
        api: &UserApi,
        fields: serde_json::Value,
    ) -> Self {
        let mut body = json!({
            "client_type": "confidential",
            "allowed_scopes": ["openid", "email"],
        });
        for (k, v) in fields.as_object().expect("an object") {
            body[k] = v.clone();
        }
        let (st, c) = srv.dash_json(
            "POST",
            &format!("/v1/auth/dashboard/tenants/{}/oauth-clients", api.slug),
            s,
            Some(&body),
        );
        assert_eq!(st, 201, "{c}");
        Rp::new(
            api,
            c["client_id"].as_str().expect("client_id"),
            c["client_secret"].as_str().expect("client_secret"),
            body["redirect_uris"][0].as_str().expect("a redirect URI"),
        )
    }

    fn new(api: &UserApi, client_id: &str, secret: &str, redirect: &str) -> Self {
        let http = reqwest::blocking::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        let issuer = IssuerUrl::new(api.issuer()).expect("issuer");
        let metadata = CoreProviderMetadata::discover(&issuer, &http).expect("discovery");
        let client = CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(client_id.to_owned()),
            Some(ClientSecret::new(secret.to_owned())),
        )
        .set_redirect_uri(RedirectUrl::new(redirect.into()).expect("redirect"));
        Rp {
            client,
            http,
            redirect: redirect.to_owned(),
        }
    }

    pub fn request(&self, extra: &[(&str, &str)]) -> Request {
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut b = self
            .client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .add_scope(Scope::new("email".into()))
            .set_pkce_challenge(challenge);
        for (k, v) in extra {
            b = b.add_extra_param(*k, *v);
        }
        let (url, state, nonce) = b.url();
        Request {
            url: url.to_string(),
            state: state.secret().clone(),
            nonce,
            verifier,
        }
    }

    /// The code at the callback (after checking `state` and `iss`) exchanged: the ID token's
    /// claims.
    pub fn finish(&self, api: &UserApi, req: Request, callback: &str) -> serde_json::Value {
        assert!(callback.starts_with(&self.redirect), "{callback}");
        let q: HashMap<String, String> = url::Url::parse(callback)
            .unwrap()
            .query_pairs()
            .into_owned()
            .collect();
        assert_eq!(q.get("state"), Some(&req.state), "{callback}");
        assert_eq!(q.get("iss"), Some(&api.issuer()), "{callback}");
        let code = q
            .get("code")
            .unwrap_or_else(|| panic!("no code: {callback}"));
        let tokens = self
            .client
            .exchange_code(AuthorizationCode::new(code.clone()))
            .expect("token endpoint")
            .set_pkce_verifier(req.verifier)
            .request(&self.http)
            .expect("the code exchange");
        let id_token = tokens.id_token().expect("an ID token");
        id_token
            .claims(&self.client.id_token_verifier(), &req.nonce)
            .expect("a valid ID token");
        jwt_part(&id_token.to_string(), 1)
    }
}

fn callback_error(location: &str) -> String {
    url::Url::parse(location)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "error")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// The user of [`hosted_provider`]'s tests.
const WALKER: &str = "walker@example.com";
const WALKER_PASSWORD: &str = "correct horse battery";

/// The tenant "Hosted Provider" and its client "Photo Printer" (sent back to after a logout
/// too), with the owner's session.
struct HostedProvider {
    smtp: SmtpStub,
    srv: TestServer,
    api: UserApi,
    _s: Session,
    rp: Rp,
}

fn hosted_provider() -> HostedProvider {
    let (smtp, srv, api, s) = user_setup("Hosted Provider", &[]);
    srv.reauth(&s, PASSWORD);
    let rp = Rp::register(
        &srv,
        &s,
        &api,
        json!({
            "name": "Photo Printer",
            "redirect_uris": [CALLBACK],
            "post_logout_redirect_uris": [CALLBACK],
        }),
    );
    HostedProvider {
        smtp,
        srv,
        api,
        _s: s,
        rp,
    }
}

impl HostedProvider {
    /// [`WALKER`], registered with a confirmed address.
    fn walker(&self) -> UserTokens {
        self.api.verified_user(&self.smtp, WALKER, WALKER_PASSWORD)
    }

    /// The hosted page a browser's navigation to `req` is sent to.
    fn hosted(&self, b: &mut Browser, req: &Request) -> String {
        b.get(&req.url).redirect(302)
    }

    /// A browser at the sign-in page of a new request: the request, the page's address, and
    /// the page, which offers `button` (a secondary step of its form).
    fn at_sign_in(&self, b: &mut Browser, button: &str) -> (Request, String, Page) {
        let req = self.rp.request(&[]);
        let hosted = self.hosted(b, &req);
        let page = b.get(&hosted);
        assert!(page.body.contains(button), "{button}: {}", page.body);
        (req, hosted, page)
    }

    /// The first mail of `kind` to `to`: the link in it to `path`, absolute.
    fn mailed_link(&self, kind: &str, to: &str, path: &str) -> String {
        let mail = self.smtp.wait_for(&self.api.slug, kind, to, 1);
        let start = mail.text.find(path).expect("the link");
        let tail = mail.text[start..].split_whitespace().next().unwrap();
        format!("{}{tail}", self.srv.base)
    }

    /// The "continue" of an account link's done page: back to the hosted authorize request
    /// `req`, with the same parameters.
    fn way_back(&self, done: &Page, req: &Request) -> String {
        let prefix = format!(
            "href=\"{}/oauth/{}/authorize?",
            self.srv.base, self.api.slug
        );
        let at = done.body.find(&prefix).expect("a way back to the request") + "href=\"".len();
        let back = unescape(&done.body[at..at + done.body[at..].find('"').unwrap()]);
        let pairs = |url: &str| {
            let mut p: Vec<(String, String)> =
                form_urlencoded::parse(url.split_once('?').unwrap().1.as_bytes())
                    .into_owned()
                    .collect();
            p.sort();
            p
        };
        assert_eq!(pairs(&back), pairs(&req.url));
        back
    }

    /// Signs `email` in with `password` on the sign-in page at `at`: the request goes on.
    fn signs_in_at(&self, b: &mut Browser, at: &str, email: &str, password: &str) {
        let page = b.get(at);
        let on = b.post(
            at,
            &[
                ("csrf", &page.hidden("csrf", 0)),
                ("step", "password"),
                ("email", email),
                ("password", password),
            ],
        );
        assert_eq!(on.status, 303, "{}", on.body);
    }

    /// [`WALKER`] signs in with the password on the sign-in page at `hosted`; answers the
    /// page's CSRF value and where the browser is sent on.
    fn sign_in(&self, b: &mut Browser, hosted: &str) -> (String, String) {
        let csrf = b.get(hosted).hidden("csrf", 0);
        let back = b
            .post(
                hosted,
                &[
                    ("csrf", &csrf),
                    ("step", "password"),
                    ("email", WALKER),
                    ("password", WALKER_PASSWORD),
                ],
            )
            .redirect(303);
        (csrf, back)
    }

    /// A browser in which [`WALKER`] signed in and approved the client; answers it with the
    /// first ID token's claims.
    fn consented_browser(&self) -> (Browser, serde_json::Value) {
        let mut b = Browser::new();
        let req = self.rp.request(&[]);
        let hosted = self.hosted(&mut b, &req);
        let (_, back) = self.sign_in(&mut b, &hosted);
        let consent = b.get(&Browser::absolute(&self.srv.base, &back));
        assert_eq!(consent.status, 200, "{}", consent.body);
        let to = b
            .post(
                &consent.action(&self.srv.base),
                &[
                    ("csrf", &consent.hidden("csrf", 0)),
                    ("commitment", &consent.hidden("commitment", 0)),
                    ("decision", "approve"),
                ],
            )
            .redirect(303);
        let claims = self.rp.finish(&self.api, req, &to);
        (b, claims)
    }

    /// Whether a plain authorize request shows the sign-in page in `b`.
    fn shows_the_sign_in_page(&self, b: &mut Browser) -> bool {
        let req = self.rp.request(&[]);
        let hosted = self.hosted(b, &req);
        let page = b.get(&hosted);
        assert_eq!(page.status, 200);
        page.body.contains("name=\"password\"")
    }
}

/// A plain navigation to authorize is sent to the hosted page with the same request.
/// The Content-Security-Policy a browser's navigation to `url` is answered with.
fn page_csp(b: &Browser, url: &str) -> String {
    b.client
        .get(url)
        .header("accept", "text/html")
        .send()
        .unwrap()
        .headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_plain_navigation_to_authorize_goes_to_the_hosted_page_with_the_same_request() {
    let h = hosted_provider();
    let mut b = Browser::new();
    let req = h.rp.request(&[]);
    let hosted = h.hosted(&mut b, &req);
    let query = req.url.split_once('?').unwrap().1;
    assert_eq!(
        hosted,
        format!("{}/oauth/{}/authorize?{query}", h.srv.base, h.api.slug)
    );
}

/// Nobody signed in, the hosted page is the tenant's sign-in page for the client, with both
/// ways in.
#[test]
fn nobody_signed_in_the_hosted_page_signs_in_by_password_or_a_mailed_code() {
    let h = hosted_provider();
    let mut b = Browser::new();
    let req = h.rp.request(&[]);
    let hosted = h.hosted(&mut b, &req);
    let page = b.get(&hosted);
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains("Sign in to Hosted Provider"),
        "{}",
        page.body
    );
    assert!(page.body.contains("Photo Printer"));
    assert!(page.body.contains("E-mail me a code"));
    // The address is asked once: one form, whose password button is the one primary button
    // and whose mailed ways in are secondary buttons of the same form.
    assert_eq!(page.body.matches("<form ").count(), 1, "{}", page.body);
    assert_eq!(
        page.body.matches("type=\"email\"").count(),
        1,
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains("<button type=\"submit\" name=\"step\" value=\"password\">"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains(
            "<button type=\"submit\" name=\"step\" value=\"email_code\" class=\"secondary\">"
        ),
        "{}",
        page.body
    );
    // No passkey domain: no app can have registered a passkey this page could use, so it
    // offers none, and runs no script.
    assert!(!page.body.contains("passkey"), "{}", page.body);
    let csp = page_csp(&b, &hosted);
    assert!(!csp.contains("script-src"), "{csp}");
}

/// A sign-in post without the page's CSRF value is refused before anything is used.
#[test]
fn a_sign_in_post_without_the_pages_csrf_value_is_refused() {
    let h = hosted_provider();
    h.walker();
    let mut b = Browser::new();
    let req = h.rp.request(&[]);
    let hosted = h.hosted(&mut b, &req);
    b.get(&hosted);
    let forged = b.post(
        &hosted,
        &[
            ("step", "password"),
            ("email", WALKER),
            ("password", WALKER_PASSWORD),
        ],
    );
    assert_eq!(forged.status, 403, "{}", forged.body);
}

/// "Forgot your password?" on the hosted sign-in mails a reset link (for an account only, the
/// same page either way) whose page, once the new password is set, continues to the same
/// authorize request, where the new password signs in.
#[test]
fn a_forgotten_password_on_the_hosted_sign_in_comes_back_to_the_same_request() {
    let h = hosted_provider();
    // A user with MFA: the sign-in after the reset has its second step.
    let email = "forgetful@example.com";
    let user = h.api.verified_user(&h.smtp, email, USER_PASSWORD);
    let mfa = h.api.enable_mfa(&user.access);
    let mut b = Browser::new();
    let (req, hosted, page) = h.at_sign_in(
        &mut b,
        "value=\"forgot_password\" class=\"secondary\">Forgot your password?",
    );
    let csrf = page.hidden("csrf", 0);
    let forgot = |b: &mut Browser, email: &str| {
        let sent = b.post(
            &hosted,
            &[
                ("csrf", &csrf),
                ("step", "forgot_password"),
                ("email", email),
            ],
        );
        assert_eq!(sent.status, 200, "{}", sent.body);
        assert!(sent.body.contains("Check your e-mail"), "{}", sent.body);
    };
    forgot(&mut b, "nobody-here@example.com");
    forgot(&mut b, email);
    // From one client address, 20 asks an hour; the next is refused, with when to come back.
    for i in 0..18 {
        forgot(&mut b, &format!("someone{i}@example.com"));
    }
    let refused = b.post(
        &hosted,
        &[
            ("csrf", &csrf),
            ("step", "forgot_password"),
            ("email", "one-too-many@example.com"),
        ],
    );
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert!(refused.retry_after.is_some());
    let link = h.mailed_link("password_reset", email, "/reset-password?token=");
    assert!(h
        .smtp
        .mails_of(&h.api.slug, "password_reset", "nobody-here@example.com")
        .is_empty());

    // The mail read on a second device: the reset page there, and its "continue" to the
    // same request, where the new password and then the MFA step sign in.
    let mut phone = Browser::new();
    let reset = phone.get(&link);
    assert_eq!(reset.status, 200, "{}", reset.body);
    let renewed = "a renewed forgetful passphrase";
    let done = phone.post(
        &link,
        &[
            ("csrf", &reset.hidden("csrf", 0)),
            ("password", renewed),
            ("password_confirm", renewed),
        ],
    );
    assert_eq!(done.status, 200, "{}", done.body);
    let back = h.way_back(&done, &req);
    let again = phone.get(&back);
    let second_step = phone.post(
        &back,
        &[
            ("csrf", &again.hidden("csrf", 0)),
            ("step", "password"),
            ("email", email),
            ("password", renewed),
        ],
    );
    assert_eq!(second_step.status, 200, "{}", second_step.body);
    assert!(
        second_step.body.contains("authenticator"),
        "{}",
        second_step.body
    );
    let on = phone.post(
        &back,
        &[
            ("csrf", &second_step.hidden("csrf", 0)),
            ("step", "mfa"),
            ("challenge", &second_step.hidden("challenge", 0)),
            ("code", &mfa.recovery_codes[0]),
        ],
    );
    assert_eq!(on.status, 303, "{}", on.body);
    assert!(phone.signin_cookie().is_some());
}

/// "Create an account" on the hosted sign-in: the sign-up form with the API's rules, the same
/// answer whether or not the address can be registered, and a verification mail whose page
/// continues to the same authorize request, where the new account signs in.
#[test]
fn a_new_user_signs_up_on_the_hosted_sign_in_and_comes_back_to_the_request() {
    let h = hosted_provider();
    h.walker();
    let newbie = "newbie@example.com";
    let chosen = "a newly chosen passphrase";
    let mut b = Browser::new();
    let (req, hosted, page) = h.at_sign_in(
        &mut b,
        "value=\"sign_up_page\" class=\"secondary\">Create an account",
    );
    let csrf = page.hidden("csrf", 0);
    let form = b.post(
        &hosted,
        &[("csrf", &csrf), ("step", "sign_up_page"), ("email", newbie)],
    );
    assert_eq!(form.status, 200, "{}", form.body);
    assert!(form.body.contains("Create your Hosted Provider account"));
    assert!(
        form.body.contains(&format!("value=\"{newbie}\"")),
        "{}",
        form.body
    );
    assert!(!form.body.contains("date_of_birth"), "no minor protection");

    // Every rule at once, as the API's; nothing registered.
    let refused = b.post(
        &hosted,
        &[
            ("csrf", &csrf),
            ("step", "sign_up"),
            ("email", "not an address"),
            ("password", "short"),
            ("password_confirm", "short"),
        ],
    );
    assert_eq!(refused.status, 400, "{}", refused.body);
    for says in [
        "12 to 128 characters",
        "Tick the box",
        "Enter your e-mail address",
    ] {
        assert!(refused.body.contains(says), "{says}: {}", refused.body);
    }
    let sign_up = |b: &mut Browser, email: &str| {
        let done = b.post(
            &hosted,
            &[
                ("csrf", &csrf),
                ("step", "sign_up"),
                ("email", email),
                ("password", chosen),
                ("password_confirm", chosen),
                ("consent", "true"),
            ],
        );
        assert_eq!(done.status, 200, "{}", done.body);
        assert!(
            done.body.contains("Confirm your e-mail address"),
            "{}",
            done.body
        );
    };
    // An address that has an account is answered alike, and keeps its password.
    sign_up(&mut b, WALKER);
    h.api.login_ok(WALKER, WALKER_PASSWORD);
    sign_up(&mut b, newbie);

    // The verification page, opened on a second device, continues to the same request,
    // where the account signs in; so does the browser that signed up.
    let link = h.mailed_link("verify_email", newbie, "/verify-email?token=");
    let mut phone = Browser::new();
    let verify = phone.get(&link);
    assert_eq!(verify.status, 200, "{}", verify.body);
    let done = phone.post(&link, &[("csrf", &verify.hidden("csrf", 0))]);
    assert_eq!(done.status, 200, "{}", done.body);
    let back = h.way_back(&done, &req);
    h.signs_in_at(&mut phone, &back, newbie, chosen);
    h.signs_in_at(&mut b, &back, newbie, chosen);

    // With minor protection, the form asks for the date of birth, as the API does.
    crate::guardian::protect_minors(&h.srv, &h._s, &h.api.slug);
    let form = b.post(
        &hosted,
        &[
            ("csrf", &csrf),
            ("step", "sign_up_page"),
            ("email", "kid@example.com"),
        ],
    );
    assert!(
        form.body.contains("type=\"date\" id=\"date_of_birth\""),
        "{}",
        form.body
    );
    let refused = b.post(
        &hosted,
        &[
            ("csrf", &csrf),
            ("step", "sign_up"),
            ("email", "kid@example.com"),
            ("password", chosen),
            ("password_confirm", chosen),
            ("consent", "true"),
        ],
    );
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("date of birth"), "{}", refused.body);
}

/// A tenant's branding: set by its owner under the settings' rules, audited, and shown on
/// its hosted pages (the logo, allowed by the page's policy alone, and the primary buttons'
/// colour from a stylesheet of this server), until it is cleared.
#[test]
fn the_tenants_branding_is_checked_audited_and_shown_on_its_pages() {
    let h = hosted_provider();
    let path = format!(
        "/v1/auth/dashboard/tenants/{}/settings/branding",
        h.api.slug
    );
    let (st, body) = h.srv.dash_json("GET", &path, &h._s, None);
    assert_eq!(st, 200, "{body}");
    assert_eq!(
        body,
        json!({"logo_url": null, "primary_color": null, "terms_url": null, "privacy_url": null})
    );
    let (st, body) = h.srv.dash_json(
        "PATCH",
        &path,
        &h._s,
        Some(&json!({
            "logo_url": "http://cdn.example/logo.svg",
            "primary_color": "#ffcc00",
            "terms_url": "not a url",
        })),
    );
    assert_eq!(st, 400, "{body}");
    let fields = &body["error"]["details"]["fields"];
    for field in ["logo_url", "primary_color", "terms_url"] {
        assert!(fields[field].is_string(), "{field}: {body}");
    }
    let logo = "https://cdn.example/brand/logo.svg";
    let (st, body) = h.srv.dash_json(
        "PATCH",
        &path,
        &h._s,
        Some(&json!({
            "logo_url": logo,
            "primary_color": "#0B5CAD",
            "terms_url": "https://app.example/terms",
            "privacy_url": "https://app.example/privacy",
        })),
    );
    assert_eq!(st, 200, "{body}");
    assert_eq!(body["logo_url"], logo);
    assert_eq!(body["primary_color"], "#0b5cad");
    let events =
        crate::support::audit_events(&h.srv, &h._s, &h.api.slug, "settings.branding.updated");
    assert_eq!(events.len(), 1, "{events:?}");

    // The sign-in page and a mailed link's page show it.
    let mut b = Browser::new();
    let req = h.rp.request(&[]);
    let hosted = h.hosted(&mut b, &req);
    let page = b.get(&hosted);
    assert!(
        page.body
            .contains(&format!("<img class=\"logo\" src=\"{logo}\" alt=\"\">")),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("href=\"/hosted/brand.css?c=0b5cad\""),
        "{}",
        page.body
    );
    let csp = page_csp(&b, &hosted);
    assert!(csp.contains("img-src 'self' https://cdn.example;"), "{csp}");
    // The sign-up links what its consent agrees to.
    let form = b.post(
        &hosted,
        &[("csrf", &page.hidden("csrf", 0)), ("step", "sign_up_page")],
    );
    for link in [
        "<a href=\"https://app.example/terms\">The terms of Hosted Provider</a>",
        "<a href=\"https://app.example/privacy\">The privacy policy of Hosted Provider</a>",
    ] {
        assert!(form.body.contains(link), "{link}: {}", form.body);
    }
    h.walker();
    h.api
        .post_as("/v1/auth/forgot-password", None, &json!({"email": WALKER}))
        .expect(202);
    let reset = b.get(&h.mailed_link("password_reset", WALKER, "/reset-password?token="));
    assert!(
        reset.body.contains(&format!("src=\"{logo}\"")),
        "{}",
        reset.body
    );
    let css = b.get(&format!("{}/hosted/brand.css?c=0b5cad", h.srv.base));
    assert_eq!(css.status, 200);
    assert!(css.body.contains("background: #0b5cad;"), "{}", css.body);
    for bad in ["c=0b5ca", "c=red%7D", ""] {
        let r = b.get(&format!("{}/hosted/brand.css?{bad}", h.srv.base));
        assert_eq!(r.status, 404, "{bad}");
    }

    // Cleared, the pages look as before.
    let (st, _) = h.srv.dash_json(
        "PATCH",
        &path,
        &h._s,
        Some(&json!({"logo_url": null, "primary_color": null})),
    );
    assert_eq!(st, 200);
    let page = b.get(&hosted);
    assert!(!page.body.contains("class=\"logo\"") && !page.body.contains("brand.css"));
    assert!(page_csp(&b, &hosted).contains("img-src 'self';"));
}

/// A wrong password shows the sign-in page again with the error, and sets no cookie.
#[test]
fn a_wrong_password_shows_the_page_again_with_the_error_and_no_cookie() {
    let h = hosted_provider();
    h.walker();
    let mut b = Browser::new();
    let req = h.rp.request(&[]);
    let hosted = h.hosted(&mut b, &req);
    let csrf = b.get(&hosted).hidden("csrf", 0);
    let wrong = b.post(
        &hosted,
        &[
            ("csrf", &csrf),
            ("step", "password"),
            ("email", WALKER),
            ("password", "not the password at all"),
        ],
    );
    assert_eq!(wrong.status, 401);
    assert!(wrong.body.contains("is not right"), "{}", wrong.body);
    assert!(b.signin_cookie().is_none());
}

/// The right password sets the sign-in cookie: HttpOnly, SameSite=Lax, for the tenant's pages,
/// and not Secure on a plain http accounts URL.
#[test]
fn the_right_password_sets_an_http_only_lax_sign_in_cookie_for_the_tenants_pages() {
    let h = hosted_provider();
    h.walker();
    let mut b = Browser::new();
    let req = h.rp.request(&[]);
    let hosted = h.hosted(&mut b, &req);
    h.sign_in(&mut b, &hosted);
    let (name, _) = b.signin_cookie().expect("the sign-in cookie");
    let set = &b.set_cookies[name];
    for attr in [
        "HttpOnly",
        "SameSite=Lax",
        &format!("Path=/oauth/{}/", h.api.slug),
    ] {
        assert!(set.contains(attr), "{attr} missing: {set}");
    }
    assert!(!set.contains("Secure"), "plain http accounts URL: {set}");
}

/// After the sign-in, the consent page names the client, what it asks, and that the tenant has
/// not verified it, in a form bound to its own page.
#[test]
fn the_consent_page_names_the_client_and_what_it_asks() {
    let h = hosted_provider();
    h.walker();
    let mut b = Browser::new();
    let req = h.rp.request(&[]);
    let hosted = h.hosted(&mut b, &req);
    let (csrf, back) = h.sign_in(&mut b, &hosted);
    let consent = b.get(&Browser::absolute(&h.srv.base, &back));
    assert_eq!(consent.status, 200, "{}", consent.body);
    assert!(
        consent
            .body
            .contains("Photo Printer wants to use your Hosted Provider account"),
        "{}",
        consent.body
    );
    assert!(consent.body.contains("See your e-mail address"));
    assert!(consent.body.contains("has not verified Photo Printer"));
    let action = consent.action(&h.srv.base);
    assert!(
        action.starts_with(&format!("{}/oauth/{}/consent?", h.srv.base, h.api.slug)),
        "{action}"
    );
    let consent_csrf = consent.hidden("csrf", 0);
    assert_ne!(consent_csrf, csrf, "bound to its page");
}

/// A consent post with another commitment than its page's, or without the page's CSRF value,
/// is refused.
#[test]
fn a_consent_post_not_bound_to_its_page_is_refused() {
    let h = hosted_provider();
    h.walker();
    let mut b = Browser::new();
    let req = h.rp.request(&[]);
    let hosted = h.hosted(&mut b, &req);
    let (_, back) = h.sign_in(&mut b, &hosted);
    let consent = b.get(&Browser::absolute(&h.srv.base, &back));
    let action = consent.action(&h.srv.base);
    let commitment = consent.hidden("commitment", 0);
    let consent_csrf = consent.hidden("csrf", 0);
    let mismatch = b.post(
        &action,
        &[
            ("csrf", &consent_csrf),
            ("commitment", "not-the-commitment"),
            ("decision", "approve"),
        ],
    );
    assert_eq!(mismatch.status, 403, "{}", mismatch.body);
    assert!(mismatch.body.contains("The page has expired"));
    let no_csrf = b.post(
        &action,
        &[("commitment", &commitment), ("decision", "approve")],
    );
    assert_eq!(no_csrf.status, 403, "{}", no_csrf.body);
}

/// An approved consent brings the client a code whose ID token names the user, signed in by
/// password.
#[test]
fn an_approved_consent_brings_the_client_a_code_for_the_user() {
    let h = hosted_provider();
    let user = h.walker();
    let (_, claims) = h.consented_browser();
    assert_eq!(claims["sub"], user.claims()["sub"]);
    assert_eq!(claims["email"], WALKER);
    assert_eq!(claims["amr"], json!(["pwd"]));
}

/// Signed in and consented, the browser's next authorize is a code at once, of the same
/// sign-in session.
#[test]
fn a_signed_in_browser_that_consented_gets_its_next_code_at_once() {
    let h = hosted_provider();
    h.walker();
    let (mut b, claims) = h.consented_browser();
    let sid = claims["sid"].as_str().expect("sid").to_owned();
    let req = h.rp.request(&[]);
    let hosted = h.hosted(&mut b, &req);
    let to = b.get(&hosted).redirect(302);
    let again = h.rp.finish(&h.api, req, &to);
    assert_eq!(again["sid"], sid, "the same sign-in session");
}

/// `prompt=login` asks for the password even with the sign-in cookie.
#[test]
fn prompt_login_asks_for_the_password_even_with_the_cookie() {
    let h = hosted_provider();
    h.walker();
    let (mut b, _) = h.consented_browser();
    let req = h.rp.request(&[("prompt", "login")]);
    let hosted = h.hosted(&mut b, &req);
    let page = b.get(&hosted);
    assert_eq!(page.status, 200);
    assert!(page.body.contains("name=\"password\""));
}

/// `prompt=none` in a browser nobody signed in to answers the client `login_required`.
#[test]
fn prompt_none_without_a_sign_in_answers_login_required() {
    let h = hosted_provider();
    let mut stranger = Browser::new();
    let req = h.rp.request(&[("prompt", "none")]);
    let hosted = h.hosted(&mut stranger, &req);
    let to = stranger.get(&hosted).redirect(302);
    assert_eq!(callback_error(&to), "login_required", "{to}");
}

/// A sign-in cookie whose tag was changed signs nobody in.
#[test]
fn a_sign_in_cookie_whose_tag_was_changed_signs_nobody_in() {
    let h = hosted_provider();
    h.walker();
    let (b, _) = h.consented_browser();
    let (name, value) = b
        .signin_cookie()
        .map(|(k, v)| (k.clone(), v.clone()))
        .unwrap();
    let mut tampered = value.into_bytes();
    let last = tampered.len() - 2;
    tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
    let mut stranger = Browser::new();
    stranger
        .jar
        .insert(name, String::from_utf8(tampered).unwrap());
    assert!(
        h.shows_the_sign_in_page(&mut stranger),
        "a forged cookie signs nobody in"
    );
}

/// A denial on the consent page (`prompt=consent` asks again) goes back to the client as
/// `access_denied`.
#[test]
fn a_denial_goes_back_to_the_client_as_access_denied() {
    let h = hosted_provider();
    h.walker();
    let (mut b, _) = h.consented_browser();
    let req = h.rp.request(&[("prompt", "consent")]);
    let hosted = h.hosted(&mut b, &req);
    let consent = b.get(&hosted);
    assert_eq!(consent.status, 200);
    let action = consent.action(&h.srv.base);
    let to = b
        .post(
            &action,
            &[
                ("csrf", &consent.hidden("csrf", 0)),
                ("commitment", &consent.hidden("commitment", 0)),
                ("decision", "deny"),
            ],
        )
        .redirect(303);
    assert_eq!(callback_error(&to), "access_denied", "{to}");
}

/// RP-initiated logout with a hint of the browser's own sign-in asks nothing and ends the
/// sign-in session: the cookie is dropped, and even kept it signs nobody in.
#[test]
fn rp_initiated_logout_with_the_browsers_own_hint_ends_its_sign_in() {
    let h = hosted_provider();
    h.walker();
    let (mut b, _) = h.consented_browser();
    let kept = b
        .signin_cookie()
        .map(|(k, v)| (k.clone(), v.clone()))
        .unwrap();
    let hint = signed_id_token(&h.rp, &mut b, &h.api);
    let query = format!(
        "id_token_hint={hint}&post_logout_redirect_uri={}",
        url::form_urlencoded::byte_serialize(CALLBACK.as_bytes()).collect::<String>()
    );
    let hosted = b
        .get(&format!("{}/oauth/end_session?{query}", h.api.issuer()))
        .redirect(302);
    assert_eq!(
        hosted,
        format!("{}/oauth/{}/logout?{query}", h.srv.base, h.api.slug)
    );
    assert_eq!(b.get(&hosted).redirect(302), CALLBACK);
    assert!(b.signin_cookie().is_none(), "the cookie is cleared");
    b.jar.insert(kept.0, kept.1);
    assert!(h.shows_the_sign_in_page(&mut b), "the session is over");
}

/// An ID token of the browser's current sign-in session (for `id_token_hint`).
fn signed_id_token(rp: &Rp, b: &mut Browser, api: &UserApi) -> String {
    let req = rp.request(&[]);
    let hosted = b.get(&req.url).redirect(302);
    let to = b.get(&hosted).redirect(302);
    let q: HashMap<String, String> = url::Url::parse(&to)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    assert_eq!(q.get("iss"), Some(&api.issuer()));
    let tokens = rp
        .client
        .exchange_code(AuthorizationCode::new(q["code"].clone()))
        .expect("token endpoint")
        .set_pkce_verifier(req.verifier)
        .request(&rp.http)
        .expect("the code exchange");
    tokens.id_token().expect("an ID token").to_string()
}

/// The tenant "Hosted Codes" with codes by e-mail on, and its first-party client "Own App".
struct HostedCodes {
    smtp: SmtpStub,
    srv: TestServer,
    api: UserApi,
    _s: Session,
    rp: Rp,
}

fn hosted_codes() -> HostedCodes {
    let (smtp, srv, api, s) = user_setup("Hosted Codes", &[]);
    srv.reauth(&s, PASSWORD);
    let rp = Rp::register(
        &srv,
        &s,
        &api,
        json!({"name": "Own App", "redirect_uris": [CALLBACK], "first_party": true}),
    );
    patch_security(&srv, &s, &api.slug, json!({"email_otp_enabled": true}));
    HostedCodes {
        smtp,
        srv,
        api,
        _s: s,
        rp,
    }
}

/// The user of the TOTP tests.
const TWO_STEPS: &str = "two.steps@example.com";

impl HostedCodes {
    /// A new request of the client in `b`: the request, the hosted page it is sent to, and
    /// that page.
    fn sign_in_page(&self, b: &mut Browser) -> (Request, String, Page) {
        let req = self.rp.request(&[]);
        let hosted = b.get(&req.url).redirect(302);
        let page = b.get(&hosted);
        (req, hosted, page)
    }

    /// [`TWO_STEPS`] with a confirmed address and TOTP on; a browser at the second step of
    /// the sign-in after the password: the request, the hosted page, its CSRF value, the step's
    /// page and the authenticator.
    fn at_the_totp_step(&self) -> (Browser, Request, String, String, Page, MfaSetup) {
        let user = self.api.verified_user(&self.smtp, TWO_STEPS, USER_PASSWORD);
        let mfa = self.api.enable_mfa(&user.access);
        let mut b = Browser::new();
        let (req, hosted, page) = self.sign_in_page(&mut b);
        let csrf = page.hidden("csrf", 0);
        let step = b.post(
            &hosted,
            &[
                ("csrf", &csrf),
                ("step", "password"),
                ("email", TWO_STEPS),
                ("password", USER_PASSWORD),
            ],
        );
        (b, req, hosted, csrf, step, mfa)
    }

    /// Asks for a code by e-mail for `email` (an account's) on the page at `hosted`; answers
    /// the page's binding and the mailed code.
    fn mailed_code(
        &self,
        b: &mut Browser,
        hosted: &str,
        csrf: &str,
        email: &str,
    ) -> (String, String) {
        let sent = b.post(
            hosted,
            &[("csrf", csrf), ("step", "email_code"), ("email", email)],
        );
        assert_eq!(sent.status, 200, "{}", sent.body);
        assert!(sent.body.contains("Enter the code"));
        let binding = sent.hidden("binding", 0);
        let mail = self.smtp.wait_for(&self.api.slug, "email_otp", email, 1);
        let code = six_digit_code(&mail.text).expect("a code in the mail");
        (binding, code)
    }

    /// `linked@example.com`, with a confirmed address, asks for a sign-in link in a new browser
    /// and opens the mailed link there; answers the browser, its request and where the link's
    /// page sends it back to.
    fn followed_sign_in_link(&self) -> (Browser, Request, String) {
        let linked = "linked@example.com";
        self.api.verified_user(&self.smtp, linked, USER_PASSWORD);
        let mut b = Browser::new();
        let (req, hosted, page) = self.sign_in_page(&mut b);
        let csrf = page.hidden("csrf", 0);
        let sent = b.post(
            &hosted,
            &[("csrf", &csrf), ("step", "magic_link"), ("email", linked)],
        );
        assert_eq!(sent.status, 200, "{}", sent.body);
        let token = self.smtp.wait_for_link(linked, "/magic-link", 1);
        let link = format!("{}/magic-link?token={token}", self.srv.base);
        let link_page = b.get(&link);
        assert_eq!(link_page.status, 200, "{}", link_page.body);
        let back = b
            .post(&link, &[("csrf", &link_page.hidden("csrf", 0))])
            .redirect(303);
        (b, req, back)
    }
}

/// With TOTP on, the right password alone signs nobody in: it leads to the second step, which
/// refuses a wrong code.
#[test]
fn with_totp_the_password_leads_to_a_second_step_that_refuses_a_wrong_code() {
    let h = hosted_codes();
    let (mut b, _, hosted, csrf, step, mfa) = h.at_the_totp_step();
    assert_eq!(step.status, 200, "{}", step.body);
    assert!(step.body.contains("Two-step verification"), "{}", step.body);
    assert!(
        b.signin_cookie().is_none(),
        "not signed in before the second step"
    );
    let challenge = step.hidden("challenge", 0);
    let wrong = b.post(
        &hosted,
        &[
            ("csrf", &csrf),
            ("step", "mfa"),
            ("challenge", &challenge),
            ("code", &mfa.totp.wrong()),
        ],
    );
    assert_eq!(wrong.status, 401, "{}", wrong.body);
}

/// The TOTP code signs the user in at `aal2` with `pwd otp`, and a first-party client asks no
/// consent.
#[test]
fn the_totp_code_signs_in_at_aal2_with_no_consent_for_a_first_party_client() {
    let h = hosted_codes();
    let (mut b, req, hosted, csrf, step, mfa) = h.at_the_totp_step();
    let challenge = step.hidden("challenge", 0);
    let code = mfa.totp.at_step(mfa.step + 1);
    let back = b
        .post(
            &hosted,
            &[
                ("csrf", &csrf),
                ("step", "mfa"),
                ("challenge", &challenge),
                ("code", &code),
            ],
        )
        .redirect(303);
    let to = b.get(&Browser::absolute(&h.srv.base, &back)).redirect(302);
    let claims = h.rp.finish(&h.api, req, &to);
    assert_eq!(claims["acr"], "aal2", "{claims}");
    assert_eq!(claims["amr"], json!(["pwd", "otp"]));
}

/// A code by e-mail for an address with no account shows the same page as for an account's
/// (no enumeration).
#[test]
fn a_code_for_an_address_with_no_account_shows_the_same_page() {
    let h = hosted_codes();
    let mut b = Browser::new();
    let (_, hosted, page) = h.sign_in_page(&mut b);
    let csrf = page.hidden("csrf", 0);
    let nobody = b.post(
        &hosted,
        &[
            ("csrf", &csrf),
            ("step", "email_code"),
            ("email", "nobody@example.com"),
        ],
    );
    assert_eq!(nobody.status, 200);
    assert!(nobody.body.contains("Enter the code"));
}

/// A mailed code signs in only with its page's binding, and then resumes this very request.
#[test]
fn a_mailed_code_signs_in_only_with_its_pages_binding_and_resumes_the_request() {
    let h = hosted_codes();
    let other = "coded@example.com";
    h.api.verified_user(&h.smtp, other, USER_PASSWORD);
    let mut b = Browser::new();
    let (req, hosted, page) = h.sign_in_page(&mut b);
    let csrf = page.hidden("csrf", 0);
    let (binding, code) = h.mailed_code(&mut b, &hosted, &csrf, other);
    let unbound = b.post(
        &hosted,
        &[
            ("csrf", &csrf),
            ("step", "verify_code"),
            ("email", other),
            ("binding", "another-browser"),
            ("code", &code),
        ],
    );
    assert_eq!(unbound.status, 401, "{}", unbound.body);
    assert!(b.signin_cookie().is_none());
    let back = b
        .post(
            &hosted,
            &[
                ("csrf", &csrf),
                ("step", "verify_code"),
                ("email", other),
                ("binding", &binding),
                ("code", &code),
            ],
        )
        .redirect(303);
    let to = b.get(&Browser::absolute(&h.srv.base, &back)).redirect(302);
    let claims = h.rp.finish(&h.api, req, &to);
    assert_eq!(claims["email"], other);
}

/// A sign-in link by e-mail: its page hands the code back to the hosted page, the asking
/// browser holding the PKCE verifier's cookie.
#[test]
fn a_sign_in_links_page_hands_its_code_back_to_the_hosted_page() {
    let h = hosted_codes();
    let linked = "linked@example.com";
    h.api.verified_user(&h.smtp, linked, USER_PASSWORD);
    let mut b = Browser::new();
    let (_, hosted, page) = h.sign_in_page(&mut b);
    assert!(
        page.body.contains("E-mail me a sign-in link"),
        "{}",
        page.body
    );
    let csrf = page.hidden("csrf", 0);
    let sent = b.post(
        &hosted,
        &[("csrf", &csrf), ("step", "magic_link"), ("email", linked)],
    );
    assert_eq!(sent.status, 200, "{}", sent.body);
    assert!(sent.body.contains("Check your e-mail"));
    assert!(b.jar.keys().any(|k| k.starts_with("tessera_oauth_link_")));
    let token = h.smtp.wait_for_link(linked, "/magic-link", 1);
    let link = format!("{}/magic-link?token={token}", h.srv.base);
    let link_page = b.get(&link);
    assert_eq!(link_page.status, 200, "{}", link_page.body);
    let back = b
        .post(&link, &[("csrf", &link_page.hidden("csrf", 0))])
        .redirect(303);
    assert!(
        back.starts_with(&format!("{}/oauth/{}/link?code=", h.srv.base, h.api.slug)),
        "{back}"
    );
}

/// Only the browser that asked for a sign-in link finishes the sign-in with it (`amr` `mca`),
/// spending its cookie: another browser is refused.
#[test]
fn only_the_browser_that_asked_finishes_a_sign_in_link() {
    let h = hosted_codes();
    let (mut b, req, back) = h.followed_sign_in_link();
    let mut elsewhere = Browser::new();
    let refused = elsewhere.get(&back);
    assert_eq!(refused.status, 400);
    assert!(refused.body.contains("same browser"), "{}", refused.body);
    let again = b.get(&back).redirect(303);
    assert!(!b.jar.keys().any(|k| k.starts_with("tessera_oauth_link_")));
    let to = b.get(&Browser::absolute(&h.srv.base, &again)).redirect(302);
    let claims = h.rp.finish(&h.api, req, &to);
    assert_eq!(claims["email"], "linked@example.com");
    assert_eq!(claims["amr"], json!(["mca"]));
}

/// From one address, five wrong passwords are refused as wrong, the sixth for a while: the
/// sign-in page again with the reason and a `Retry-After`.
#[test]
fn a_sixth_wrong_password_from_one_address_is_refused_for_a_while() {
    let h = hosted_codes();
    let linked = "linked@example.com";
    h.api.verified_user(&h.smtp, linked, USER_PASSWORD);
    let mut b = Browser::new();
    b.forwarded_for = Some(fresh_client_ip());
    let (_, hosted, page) = h.sign_in_page(&mut b);
    let csrf = page.hidden("csrf", 0);
    let pages: Vec<Page> = (0..6)
        .map(|_| {
            b.post(
                &hosted,
                &[
                    ("csrf", &csrf),
                    ("step", "password"),
                    ("email", linked),
                    ("password", "wrong wrong wrong"),
                ],
            )
        })
        .collect();
    let statuses: Vec<u16> = pages.iter().map(|p| p.status).collect();
    assert_eq!(statuses, [401, 401, 401, 401, 401, 429]);
    let refused = &pages[5];
    assert!(refused.body.contains("try again"), "{}", refused.body);
    assert!(
        refused.body.contains("name=\"password\""),
        "{}",
        refused.body
    );
    let wait: u64 = refused
        .retry_after
        .as_deref()
        .expect("Retry-After")
        .parse()
        .unwrap();
    assert!(wait >= 1, "{wait}");
}

/// A second code for one address within the minute is refused for a while, with the reason.
#[test]
fn a_second_code_for_one_address_within_the_minute_is_refused() {
    let h = hosted_codes();
    let mut b = Browser::new();
    b.forwarded_for = Some(fresh_client_ip());
    let (_, hosted, page) = h.sign_in_page(&mut b);
    let csrf = page.hidden("csrf", 0);
    let twice = "twice@example.com";
    let first = b.post(
        &hosted,
        &[("csrf", &csrf), ("step", "email_code"), ("email", twice)],
    );
    assert_eq!(first.status, 200, "{}", first.body);
    let second = b.post(
        &hosted,
        &[("csrf", &csrf), ("step", "email_code"), ("email", twice)],
    );
    assert_eq!(second.status, 429, "{}", second.body);
    assert!(second.body.contains("try again"), "{}", second.body);
    assert!(second.retry_after.is_some());
}

/// The data attribute `name` of the page's passkey section.
fn data_attr(page: &Page, name: &str) -> String {
    let needle = format!("data-{name}=\"");
    let at = page
        .body
        .find(&needle)
        .unwrap_or_else(|| panic!("no data-{name} in {}", page.body));
    let rest = &page.body[at + needle.len()..];
    unescape(&rest[..rest.find('"').unwrap()])
}

#[test]
fn the_hosted_sign_in_takes_a_passkey_through_its_script_endpoints() {
    const ORIGIN: &str = "https://app.example";
    let (smtp, srv, api, s) = user_setup("Hosted Keys", &[]);
    srv.reauth(&s, PASSWORD);
    let r = crate::passkeys::put_domain(
        &srv,
        &s,
        &api,
        &json!({"passkey_rp_id": "app.example", "passkey_origins": []}),
        None,
    );
    assert_eq!(r.0, 200, "{}", r.1);
    let rp = Rp::register(
        &srv,
        &s,
        &api,
        json!({"name": "Keyed App", "redirect_uris": [CALLBACK], "first_party": true}),
    );
    let email = "keyholder@example.com";
    let user = api.verified_user(&smtp, email, USER_PASSWORD);
    let mut key = tessera_testkit::webauthn::SoftAuthenticator::device_bound();
    crate::passkeys::register_from(&api, &user, &mut key, ORIGIN, None).expect(201);

    let mut b = Browser::new();
    let req = rp.request(&[]);
    let hosted = b.get(&req.url).redirect(302);
    let page = b.get(&hosted);
    assert_eq!(page.status, 200);
    assert!(page.body.contains("/hosted/passkey.js"), "{}", page.body);
    let csp = page_csp(&b, &hosted);
    assert!(csp.contains("script-src 'self'"), "{csp}");
    let script = b.get(&format!("{}/hosted/passkey.js", srv.base));
    assert_eq!(script.status, 200);
    assert!(script.body.contains("navigator.credentials.get"));
    // The base64url conversions both passkey scripts share, loaded first.
    assert!(page.body.contains("/hosted/webauthn.js"), "{}", page.body);
    let shared = b.get(&format!("{}/hosted/webauthn.js", srv.base));
    assert_eq!(shared.status, 200);
    assert!(shared.body.contains("TesseraWebAuthn"));

    let csrf = data_attr(&page, "csrf");
    let begin = Browser::absolute(&srv.base, &data_attr(&page, "begin"));
    let finish = Browser::absolute(&srv.base, &data_attr(&page, "finish"));
    // Without the page's CSRF value, no options.
    assert_eq!(b.post(&begin, &[("csrf", "forged")]).status, 403);
    let options = b.post(&begin, &[("csrf", &csrf)]);
    assert_eq!(options.status, 200, "{}", options.body);
    let options: serde_json::Value = serde_json::from_str(&options.body).unwrap();
    let assertion = key
        .get(&options["publicKey"], ORIGIN)
        .expect("an assertion");

    // An assertion from an origin the tenant does not accept signs nobody in.
    let other = b.post(&begin, &[("csrf", &csrf)]);
    let other: serde_json::Value = serde_json::from_str(&other.body).unwrap();
    let foreign = key
        .get(&other["publicKey"], "https://evil.example")
        .expect("an assertion");
    let refused = b.post(
        &finish,
        &[("csrf", &csrf), ("credential", &foreign.to_string())],
    );
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert!(
        refused.body.contains("did not sign you in"),
        "{}",
        refused.body
    );
    assert!(b.signin_cookie().is_none());

    let done = b.post(
        &finish,
        &[("csrf", &csrf), ("credential", &assertion.to_string())],
    );
    assert_eq!(done.status, 200, "{}", done.body);
    assert!(b.signin_cookie().is_some(), "the sign-in cookie");
    let answer: serde_json::Value = serde_json::from_str(&done.body).unwrap();
    let next = answer["redirect_to"].as_str().expect("redirect_to");
    let to = b.get(&Browser::absolute(&srv.base, next)).redirect(302);
    let claims = rp.finish(&api, req, &to);
    assert_eq!(claims["email"], email);
    assert_eq!(claims["amr"], json!(["hwk"]));
    assert_eq!(claims["acr"], "aal2");
}

/// A social provider's button on the sign-in page: the provider's sign-in returns to the
/// hosted page, which signs the user in and finishes the authorize request (`amr` `fed`).
#[test]
fn the_hosted_sign_in_takes_a_social_provider() {
    use crate::social_signin::{enable_google, Stub};
    let google = Stub::start();
    let env = [("TESSERA__SOCIAL__GOOGLE__ISSUER", google.base.as_str())];
    let (_smtp, srv, api, s) = user_setup("Social Hosted", &env);
    srv.reauth(&s, PASSWORD);
    let rp = Rp::register(
        &srv,
        &s,
        &api,
        json!({"name": "Own App", "redirect_uris": [CALLBACK], "first_party": true}),
    );
    let mut b = Browser::new();
    let req = rp.request(&[]);
    let hosted = b.get(&req.url).redirect(302);
    // No provider enabled: no social section.
    let page = b.get(&hosted);
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(!page.body.contains("id=\"social\""), "{}", page.body);
    enable_google(&srv, &s, &api.slug);
    let page = b.get(&hosted);
    assert!(page.body.contains("Continue with Google"), "{}", page.body);
    let needle = "href=\"/oauth/google/authorize?";
    let at = page.body.find(needle).expect("the Google button");
    let rest = &page.body[at + "href=\"".len()..];
    let href = unescape(&rest[..rest.find('"').unwrap()]);

    // The button, the provider, the callback, then the return page signs in.
    let to_provider = b.get(&format!("{}{href}", srv.base)).redirect(302);
    assert!(to_provider.starts_with(&google.base), "{to_provider}");
    google.next("hosted-g-1", Some("hosted@example.com"), true);
    let callback = b.get(&to_provider).redirect(302);
    let back = b.get(&callback).redirect(302);
    let query = hosted.split_once('?').unwrap().1;
    assert_eq!(
        back,
        format!("{}/oauth/{}/social-return?{query}", srv.base, api.slug)
    );
    assert!(
        !back.contains("access_token"),
        "the token travels in a cookie: {back}"
    );
    let again = b.get(&back).redirect(303);
    assert!(b.signin_cookie().is_some());
    let to_client = b.get(&Browser::absolute(&srv.base, &again)).redirect(302);
    let claims = rp.finish(&api, req, &to_client);
    assert_eq!(claims["email"], "hosted@example.com");
    assert_eq!(claims["amr"], json!(["fed"]));

    // The return page again (its cookie used and cleared): the sign-in page with the reason.
    let replay = b.get(&back);
    assert_eq!(replay.status, 401, "{}", replay.body);
    assert!(replay.body.contains("did not work"), "{}", replay.body);
}

#[test]
fn a_held_minor_signing_in_on_the_hosted_page_is_told_why() {
    use crate::guardian::{protect_minors, register_verified, KID_DOB};
    let (smtp, srv, api, s) = user_setup("Hosted Kids", &[]);
    srv.reauth(&s, PASSWORD);
    let rp = Rp::register(
        &srv,
        &s,
        &api,
        json!({"name": "Homework Helper", "redirect_uris": [CALLBACK]}),
    );
    protect_minors(&srv, &s, &api.slug);
    register_verified(&api, &smtp, "kid@example.com", KID_DOB);
    let mut b = Browser::new();
    let req = rp.request(&[]);
    let hosted = b.get(&req.url).redirect(302);
    let page = b.get(&hosted);
    assert_eq!(page.status, 200, "{}", page.body);
    let csrf = page.hidden("csrf", 0);
    let held = b.post(
        &hosted,
        &[
            ("csrf", &csrf),
            ("step", "password"),
            ("email", "kid@example.com"),
            ("password", USER_PASSWORD),
        ],
    );
    assert_eq!(held.status, 403, "{}", held.body);
    assert!(held.body.contains("Waiting for a parent"), "{}", held.body);
    assert!(b.signin_cookie().is_none());
}

const BYE: &str = "https://rp.example/bye";

/// A browser signed in on the hosted page with a password (the client asks no consent).
fn signed_in_browser(rp: &Rp, email: &str, password: &str) -> Browser {
    let mut b = Browser::new();
    let req = rp.request(&[]);
    let hosted = b.get(&req.url).redirect(302);
    let page = b.get(&hosted);
    let csrf = page.hidden("csrf", 0);
    b.post(
        &hosted,
        &[
            ("csrf", &csrf),
            ("step", "password"),
            ("email", email),
            ("password", password),
        ],
    )
    .redirect(303);
    assert!(b.signin_cookie().is_some(), "signed in");
    b
}

/// Whether the browser's hosted sign-in still holds: authorize answers a code at once.
fn still_signed_in(rp: &Rp, b: &mut Browser) -> bool {
    let req = rp.request(&[]);
    let hosted = b.get(&req.url).redirect(302);
    let next = b.get(&hosted);
    match next.status {
        302 => true,
        200 if next.body.contains("name=\"password\"") => false,
        _ => panic!("{} {}", next.status, next.body),
    }
}

/// The logout route as a browser reaches it: the end-session endpoint, then the hosted page.
fn logout(b: &mut Browser, srv: &TestServer, api: &UserApi, q: &[(&str, &str)]) -> Page {
    let mut u = url::Url::parse(&format!("{}/oauth/end_session", api.issuer())).unwrap();
    if !q.is_empty() {
        u.query_pairs_mut().extend_pairs(q);
    }
    let hosted = b.get(u.as_str()).redirect(302);
    assert!(
        hosted.starts_with(&format!("{}/oauth/{}/logout", srv.base, api.slug)),
        "{hosted}"
    );
    b.get(&hosted)
}

#[track_caller]
fn assert_html(page: &Page) {
    let ct = page.headers["content-type"].to_str().unwrap();
    assert!(ct.starts_with("text/html"), "{ct}: {}", page.body);
}

#[test]
fn rp_initiated_logout_asks_the_browser_unless_the_hint_is_its_own_sign_in() {
    let (smtp, srv, api, s) = user_setup("Signing Out", &[]);
    srv.reauth(&s, PASSWORD);
    let rp = Rp::register(
        &srv,
        &s,
        &api,
        json!({
            "name": "Photo Album",
            "redirect_uris": [CALLBACK],
            "post_logout_redirect_uris": [BYE],
            "first_party": true,
        }),
    );
    let client_id = rp.client.client_id().as_str().to_owned();
    let email = "leaver@example.com";
    api.verified_user(&smtp, email, USER_PASSWORD);
    let mut a = signed_in_browser(&rp, email, USER_PASSWORD);
    let mut b = signed_in_browser(&rp, email, USER_PASSWORD);
    let hint_a = signed_id_token(&rp, &mut a, &api);

    // No parameters at all: asked, then the signed-out page; only this browser's sign-in ends.
    let asked = logout(&mut b, &srv, &api, &[]);
    assert_eq!(asked.status, 200, "{}", asked.body);
    assert_html(&asked);
    assert!(
        asked.body.contains("Sign out of Signing Out?"),
        "{}",
        asked.body
    );
    assert!(
        asked
            .body
            .contains("sign out of Signing Out in this browser"),
        "{}",
        asked.body
    );
    let action = asked.action(&srv.base);
    assert_eq!(action, format!("{}/oauth/{}/logout", srv.base, api.slug));
    let done = b.post(&action, &[("csrf", &asked.hidden("csrf", 0))]);
    assert_eq!(done.status, 200, "{}", done.body);
    assert_html(&done);
    assert!(done.body.contains("You are signed out"), "{}", done.body);
    assert!(!done.body.contains("<form"), "{}", done.body);
    assert!(b.signin_cookie().is_none(), "the cookie is cleared");
    assert!(!still_signed_in(&rp, &mut b));
    assert!(
        still_signed_in(&rp, &mut a),
        "another browser's sign-in stays"
    );

    // An unregistered post-logout URI, or a client that is not the tenant's: a page, and
    // nothing ends. So is an unknown tenant.
    let mut stranger = Browser::new();
    for q in [
        vec![
            ("client_id", client_id.as_str()),
            ("post_logout_redirect_uri", "https://evil.example/"),
        ],
        vec![("client_id", "tc_nobody")],
        vec![("post_logout_redirect_uri", BYE)],
        vec![("id_token_hint", "not.a.token")],
    ] {
        let refused = logout(&mut a, &srv, &api, &q);
        assert_eq!(refused.status, 400, "{q:?}: {}", refused.body);
        assert_html(&refused);
        assert!(
            refused.body.contains("This sign-out request is not valid"),
            "{}",
            refused.body
        );
        assert!(!refused.body.contains("<form"), "{}", refused.body);
    }
    assert!(still_signed_in(&rp, &mut a));
    let nowhere = stranger.get(&format!("{}/v1/tenants/nope/oauth/end_session", srv.base));
    assert_eq!(nowhere.status, 404, "{}", nowhere.body);
    assert_html(&nowhere);

    // A hint whose session is not this browser's (here it has none): asked, not ended.
    let asked = logout(&mut stranger, &srv, &api, &[("id_token_hint", &hint_a)]);
    assert_eq!(asked.status, 200, "{}", asked.body);
    assert!(
        asked
            .body
            .contains("Photo Album asks to sign you out of Signing Out"),
        "{}",
        asked.body
    );
    assert!(still_signed_in(&rp, &mut a), "nothing ends on the GET");

    // client_id and a registered post-logout URI, no hint: asked; the form may lead to the
    // URI's origin; the post needs its CSRF value; then back to the client with state.
    let q = [
        ("client_id", client_id.as_str()),
        ("post_logout_redirect_uri", BYE),
        ("state", "bye-1"),
    ];
    let asked = logout(&mut a, &srv, &api, &q);
    assert_eq!(asked.status, 200, "{}", asked.body);
    assert_html(&asked);
    assert!(asked.body.contains("Photo Album asks"), "{}", asked.body);
    let csp = asked.headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("form-action 'self' https://rp.example;"),
        "{csp}"
    );
    let action = asked.action(&srv.base);
    let forged = a.post(&action, &[]);
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert_html(&forged);
    assert!(still_signed_in(&rp, &mut a));
    let to = a
        .post(&action, &[("csrf", &asked.hidden("csrf", 0))])
        .redirect(303);
    assert_eq!(to, format!("{BYE}?state=bye-1"));
    assert!(a.signin_cookie().is_none(), "the cookie is cleared");
    assert!(!still_signed_in(&rp, &mut a));

    // The hint of this browser's own sign-in: signed out without a question; with no
    // post-logout URI, the signed-out page.
    let mut a = signed_in_browser(&rp, email, USER_PASSWORD);
    let hint = signed_id_token(&rp, &mut a, &api);
    let done = logout(&mut a, &srv, &api, &[("id_token_hint", &hint)]);
    assert_eq!(done.status, 200, "{}", done.body);
    assert_html(&done);
    assert!(done.body.contains("You are signed out"), "{}", done.body);
    assert!(!done.body.contains("<form"), "{}", done.body);
    assert!(a.signin_cookie().is_none());
    assert!(!still_signed_in(&rp, &mut a));

    // A hint confirmed in another browser ends the hint's session too.
    let mut a = signed_in_browser(&rp, email, USER_PASSWORD);
    let hint = signed_id_token(&rp, &mut a, &api);
    let mut other = Browser::new();
    let q = [
        ("id_token_hint", hint.as_str()),
        ("post_logout_redirect_uri", BYE),
    ];
    let asked = logout(&mut other, &srv, &api, &q);
    assert_eq!(asked.status, 200, "{}", asked.body);
    let to = other
        .post(
            &asked.action(&srv.base),
            &[("csrf", &asked.hidden("csrf", 0))],
        )
        .redirect(303);
    assert_eq!(to, BYE);
    assert!(!still_signed_in(&rp, &mut a));
}

/// The hosted sign-in keeps a device token in an `HttpOnly` cookie of the tenant's path: a
/// browser that signed in before is not locked out by someone failing on purpose elsewhere,
/// while a new browser is held to the account's lockout, after a restart too.
#[test]
fn a_browser_that_signed_in_before_is_not_locked_out_by_an_attacker() {
    let (smtp, srv, api, s) = user_setup("Known Devices", &[]);
    srv.reauth(&s, PASSWORD);
    let rp_body = json!({"name": "Notes", "redirect_uris": [CALLBACK], "first_party": true});
    let rp = Rp::register(&srv, &s, &api, rp_body);
    let email = "owner-of-notes@example.com";
    api.verified_user(&smtp, email, USER_PASSWORD);

    let mut known = signed_in_browser(&rp, email, USER_PASSWORD);
    let (name, cookie) = known
        .set_cookies
        .iter()
        .find(|(k, _)| k.starts_with("tessera_device_"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .expect("a device cookie");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Lax"), "{cookie}");
    // The hosted pages' own path, as their other cookies.
    assert!(
        cookie.contains(&format!("Path=/oauth/{}/", api.slug)),
        "{cookie}"
    );
    assert!(known.jar[&name].starts_with("tdv_"), "{cookie}");
    // Signed out of the hosted page (the sign-in cookie goes), the device cookie stays.
    known.jar.retain(|k, _| !k.starts_with("tessera_signin_"));

    // Someone guesses at the password from many addresses: the account is locked.
    for _ in 0..12 {
        let r = api.login_from(email, "not the right passphrase", &fresh_client_ip());
        assert!(matches!(r.status, 401 | 429), "{} {}", r.status, r.body);
    }
    api.login_from(email, USER_PASSWORD, &fresh_client_ip())
        .expect_error(429, "auth/too_many_attempts");

    let sign_in = |b: &mut Browser, rp: &Rp| {
        let req = rp.request(&[]);
        let hosted = b.get(&req.url).redirect(302);
        let page = b.get(&hosted);
        let csrf = page.hidden("csrf", 0);
        b.post(
            &hosted,
            &[
                ("csrf", &csrf),
                ("step", "password"),
                ("email", email),
                ("password", USER_PASSWORD),
            ],
        )
    };
    // The known browser signs in at once; a new one is told to wait.
    let back = sign_in(&mut known, &rp);
    assert_eq!(back.status, 303, "{}", back.body);
    let mut stranger = Browser::new();
    let refused = sign_in(&mut stranger, &rp);
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert!(stranger.signin_cookie().is_none());
    assert!(
        !stranger
            .set_cookies
            .keys()
            .any(|k| k.starts_with("tessera_device_")),
        "a refused browser gets no device cookie"
    );
}

/// A server with a CAPTCHA provider (a local stand-in that speaks Turnstile's verification),
/// `extra` configuration, a tenant that signed up through it, and a first-party client.
fn widget_world(extra: &[(&str, &str)]) -> (CaptchaStub, SmtpStub, TestServer, UserApi, Rp) {
    let stub = CaptchaStub::start();
    let mut env = vec![
        ("TESSERA__CAPTCHA__PROVIDER", "turnstile"),
        ("TESSERA__CAPTCHA__SECRET", "stub-secret"),
        ("TESSERA__CAPTCHA__VERIFY_URL", stub.url.as_str()),
        ("TESSERA__CAPTCHA__SITE_KEY", "0x4AAAAAAA-site_key"),
        (
            "TESSERA__CAPTCHA__WIDGET_SCRIPT_URL",
            stub.script_url.as_str(),
        ),
    ];
    env.extend_from_slice(extra);
    let (smtp, srv) = start_with_mail(&env);
    let api = crate::passwordless::signup_with_captcha(&srv, "Widget Co", "owner@example.com");
    let s = srv.login(&api.owner, PASSWORD);
    srv.reauth(&s, PASSWORD);
    let rp = Rp::register(
        &srv,
        &s,
        &api,
        json!({"name": "Notes", "redirect_uris": [CALLBACK], "first_party": true}),
    );
    (stub, smtp, srv, api, rp)
}

/// With a CAPTCHA configured, the sign-up form carries the widget (its script allowed by the
/// page's policy) and registers only with a solved one.
#[test]
fn with_a_captcha_configured_the_hosted_sign_up_needs_it_solved() {
    let (stub, smtp, _srv, api, rp) = widget_world(&[]);
    let mut b = Browser::new();
    let hosted = b.get(&rp.request(&[]).url).redirect(302);
    let csrf = b.get(&hosted).hidden("csrf", 0);
    let form = b.post(&hosted, &[("csrf", &csrf), ("step", "sign_up_page")]);
    assert_eq!(form.status, 200, "{}", form.body);
    assert!(
        form.body.contains("data-sitekey=\"0x4AAAAAAA-site_key\""),
        "{}",
        form.body
    );
    let origin = stub.script_url.trim_end_matches("/api.js");
    let csp = form.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains(&format!("script-src {origin}")), "{csp}");
    let email = "captcha-newbie@example.com";
    let chosen = "a passphrase behind a captcha";
    let sign_up = |b: &mut Browser, token: &str| {
        b.post(
            &hosted,
            &[
                ("csrf", &csrf),
                ("step", "sign_up"),
                ("email", email),
                ("password", chosen),
                ("password_confirm", chosen),
                ("consent", "true"),
                ("cf-turnstile-response", token),
            ],
        )
    };
    let refused = sign_up(&mut b, "forged");
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("did not pass"), "{}", refused.body);
    let done = sign_up(&mut b, "good");
    assert_eq!(done.status, 200, "{}", done.body);
    assert!(done.body.contains("Confirm your e-mail address"));
    smtp.wait_for(&api.slug, "verify_email", email, 1);
}

/// The hosted sign-in past its address's count, with a CAPTCHA configured: the page shows
/// the provider's widget (its script and frame allowed by the page's CSP, nothing else), a
/// refused token shows it again, and a solved one signs in. The token is checked with the
/// provider's siteverify, with the client's address.
#[test]
fn past_the_address_count_the_hosted_sign_in_shows_the_captcha_widget() {
    let (stub, smtp, _srv, api, rp) =
        widget_world(&[("TESSERA__SECURITY__LOGIN_FAILURES_PER_ADDRESS", "3")]);
    let email = "widget-user@example.com";
    api.verified_user(&smtp, email, USER_PASSWORD);
    let office = fresh_client_ip();
    // Three colleagues mistype, each once: the office address is at its count.
    for i in 0..3 {
        api.login_from(
            &format!("colleague{i}@example.com"),
            "not the right passphrase",
            &office,
        )
        .expect_error(401, "auth/invalid_credentials");
    }

    let mut b = Browser::new();
    b.forwarded_for = Some(office.clone());
    let req = rp.request(&[]);
    let hosted = b.get(&req.url).redirect(302);
    let first = b.get(&hosted);
    assert!(
        !first.body.contains("cf-turnstile"),
        "no widget before it is needed"
    );
    let csp = first.headers["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(!csp.contains("frame-src"), "{csp}");
    let post = |b: &mut Browser, page: &Page, extra: &[(&str, &str)]| {
        let csrf = page.hidden("csrf", 0);
        let mut form = vec![
            ("csrf", csrf.as_str()),
            ("step", "password"),
            ("email", email),
            ("password", USER_PASSWORD),
        ];
        form.extend_from_slice(extra);
        b.post(&hosted, &form)
    };
    let asked = post(&mut b, &first, &[]);
    assert_eq!(asked.status, 429, "{}", asked.body);
    assert!(
        asked
            .body
            .contains(r#"<div class="cf-turnstile" data-sitekey="0x4AAAAAAA-site_key">"#),
        "{}",
        asked.body
    );
    assert!(asked
        .body
        .contains(&format!(r#"<script src="{}""#, stub.script_url)));
    let origin = stub.script_url.trim_end_matches("/api.js");
    let csp = asked.headers["content-security-policy"].to_str().unwrap();
    // The widget's script only: without a passkey domain the page has no passkey button.
    for directive in [
        format!("script-src {origin}"),
        format!("frame-src {origin}"),
        "default-src 'none'".to_owned(),
    ] {
        assert!(csp.contains(&directive), "{directive} in {csp}");
    }
    // A token the provider refuses: asked again.
    let refused = post(&mut b, &asked, &[("cf-turnstile-response", "forged")]);
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("cf-turnstile"), "{}", refused.body);
    // Solved: signed in, and the provider was asked with the client's address.
    let signed = post(&mut b, &refused, &[("cf-turnstile-response", "good")]);
    assert_eq!(signed.status, 303, "{}", signed.body);
    assert!(b.signin_cookie().is_some());
    let seen = stub.seen.lock().unwrap();
    let last = seen.last().expect("the provider was asked");
    assert_eq!(last.get("remoteip"), Some(&office));
    assert_eq!(last.get("response").map(String::as_str), Some("good"));
}
