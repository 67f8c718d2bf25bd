//! The tenant console over plain HTTP, as a browser sends it (its cookies kept by hand,
//! redirects seen, not followed): signing in with the password and the second factor, the
//! session cookie's scope, finding a user and acting on them through the API's rules
//! (re-authentication before deleting), the audit log and its downloads, another tenant's
//! pages, every form's CSRF refusal, the languages and the headers.

use std::collections::BTreeMap;

use reqwest::blocking::{Client, Response};
use serde_json::{json, Value};

use crate::dashboard_mfa::{enable_totp, verified_owner, OWNER};
use crate::support::{Session, TestServer, PASSWORD};

/// A page as the browser got it.
struct Page {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
}

impl Page {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    #[track_caller]
    fn expect(&self, status: u16, says: &str) -> &Self {
        assert_eq!(self.status, status, "{}", self.body);
        assert!(self.body.contains(says), "{says:?} not in {}", self.body);
        self
    }

    #[track_caller]
    fn redirect(&self, to: &str) {
        assert_eq!(self.status, 303, "{}", self.body);
        assert_eq!(self.header("location"), to);
    }

    /// The CSRF value of the form posting to `action`.
    #[track_caller]
    fn csrf_for(&self, action: &str) -> String {
        let at = self
            .body
            .find(&format!("action=\"{action}\""))
            .unwrap_or_else(|| panic!("no form to {action} in {}", self.body));
        let rest = &self.body[at..];
        let start = rest.find("name=\"csrf\" value=\"").unwrap() + "name=\"csrf\" value=\"".len();
        rest[start..].split('"').next().unwrap().to_owned()
    }

    /// What the page's alert says (a refused form's reasons), or nothing.
    fn alert(&self) -> &str {
        self.body
            .split("role=\"alert\"><p>")
            .nth(1)
            .and_then(|a| a.split("</p>").next())
            .unwrap_or("")
    }

    /// The value of the hidden field `name`.
    fn hidden(&self, name: &str) -> String {
        let marker = format!("name=\"{name}\" value=\"");
        let start = self.body.find(&marker).unwrap() + marker.len();
        self.body[start..].split('"').next().unwrap().to_owned()
    }

    fn set_cookie(&self, name: &str) -> Option<String> {
        self.headers
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|c| c.starts_with(&format!("{name}=")))
            .map(str::to_owned)
    }
}

/// A browser without JavaScript: it keeps the cookies it is given (by name, across paths:
/// every request here is under `/console`) and sends them back.
struct Browser {
    client: Client,
    base: String,
    jar: BTreeMap<String, String>,
    lang: Option<&'static str>,
}

impl Browser {
    fn new(srv: &TestServer) -> Self {
        Browser {
            client: Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            base: srv.base.clone(),
            jar: BTreeMap::new(),
            lang: None,
        }
    }

    fn keep(&mut self, r: Response) -> Page {
        let page = Page {
            status: r.status().as_u16(),
            headers: r.headers().clone(),
            body: r.text().unwrap(),
        };
        for c in page.headers.get_all("set-cookie") {
            let c = c.to_str().unwrap();
            let (pair, attrs) = c.split_once(';').unwrap_or((c, ""));
            let (name, value) = pair.split_once('=').unwrap();
            if attrs.contains("Max-Age=0") {
                self.jar.remove(name);
            } else {
                self.jar.insert(name.to_owned(), value.to_owned());
            }
        }
        page
    }

    fn cookies(&self) -> String {
        self.jar
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    fn get(&mut self, path: &str) -> Page {
        let mut req = self
            .client
            .get(format!("{}{path}", self.base))
            .header("cookie", self.cookies());
        if let Some(l) = self.lang {
            req = req.header("accept-language", l);
        }
        let r = req.send().unwrap();
        self.keep(r)
    }

    fn post(&mut self, path: &str, form: &[(&str, &str)]) -> Page {
        let r = self
            .client
            .post(format!("{}{path}", self.base))
            .header("cookie", self.cookies())
            .form(form)
            .send()
            .unwrap();
        self.keep(r)
    }

    /// Signs in with the owner's password; answers the page after it (the code form, or the
    /// redirect to the tenants).
    fn sign_in(&mut self, password: &str) -> Page {
        self.sign_in_as(OWNER, password)
    }

    fn sign_in_as(&mut self, email: &str, password: &str) -> Page {
        let page = self.get("/console/sign-in");
        page.expect(200, "Sign in to the console");
        let csrf = page.csrf_for("/console/sign-in");
        self.post(
            "/console/sign-in",
            &[("csrf", &csrf), ("email", email), ("password", password)],
        )
    }
}

fn create_user(srv: &TestServer, s: &Session, slug: &str, email: &str) -> String {
    let (status, body) = srv.dash_json(
        "POST",
        &format!("/v1/auth/dashboard/tenants/{slug}/users"),
        s,
        Some(
            &json!({"email": email, "password": "a user's long password", "email_verified": true}),
        ),
    );
    assert_eq!(status, 201, "{body}");
    body["id"].as_str().unwrap().to_owned()
}

#[test]
fn an_owner_signs_in_with_a_code_finds_a_user_blocks_and_deletes_them_and_reads_the_log() {
    let (_smtp, srv, s) = verified_owner();
    let (totp, step, _) = enable_totp(&srv, &s);
    let alice = create_user(&srv, &s, "mfa-co", "alice@users.test");
    create_user(&srv, &s, "mfa-co", "bob@users.test");
    let mut b = Browser::new(&srv);

    // Nobody is signed in: every page leads to the sign-in.
    b.get("/console").redirect("/console/sign-in");
    b.get("/console/t/mfa-co/users")
        .redirect("/console/sign-in");
    let page = b.sign_in("not the password at all");
    page.expect(401, "The e-mail address or the password is wrong.");
    assert!(page.set_cookie("console_session").is_none());

    // The password opens the second step only.
    let page = b.sign_in(PASSWORD);
    page.expect(200, "Enter your code");
    assert!(page.set_cookie("console_session").is_none());
    let challenge = page.hidden("challenge");
    let csrf = page.csrf_for("/console/sign-in/code");
    let page = b.post(
        "/console/sign-in/code",
        &[
            ("csrf", &csrf),
            ("challenge", &challenge),
            ("code", &totp.wrong_at(step)),
        ],
    );
    page.expect(401, "The code is wrong or was already used.");
    let page = b.post(
        "/console/sign-in/code",
        &[
            ("csrf", &csrf),
            ("challenge", &challenge),
            ("code", &totp.at_step(step + 1)),
        ],
    );
    page.redirect("/console");
    let cookie = page.set_cookie("console_session").unwrap();
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(cookie.contains(attr), "{cookie}");
    }
    let page = b.get("/console");
    page.expect(200, "Your tenants")
        .expect(200, "href=\"/console/t/mfa-co\"");
    page.expect(200, "Signed in as owner@mfa.test");
    let overview = b.get("/console/t/mfa-co");
    overview.expect(200, "Owner");
    for area in ["users", "members", "keys", "settings", "audit"] {
        let link = format!("<a href=\"/console/t/mfa-co/{area}\"");
        assert!(overview.body.contains(&link), "no {area} in the sections");
    }

    // Find Alice by the start of her address; the day filters are the API's.
    let page = b.get("/console/t/mfa-co/users?email=ali");
    page.expect(200, "alice@users.test");
    assert!(!page.body.contains("bob@users.test"), "{}", page.body);
    let page = b.get("/console/t/mfa-co/users?created_after=2000-01-01");
    page.expect(200, "alice@users.test")
        .expect(200, "bob@users.test");
    let page = b.get("/console/t/mfa-co/users?created_after=2999-01-01");
    page.expect(200, "No user matches.");
    // Nobody signed in yet: nobody signed in before any day.
    let page = b.get("/console/t/mfa-co/users?last_sign_in_before=2999-01-01");
    page.expect(200, "No user matches.");
    b.get("/console/t/mfa-co/users?created_after=yesterday")
        .expect(400, "");
    let here = format!("/console/t/mfa-co/users/{alice}");
    let page = b.get(&here);
    page.expect(200, "alice@users.test").expect(200, "Active");
    // Her activity: when she was last active and whether she counts this month.
    let month = time::OffsetDateTime::now_utc();
    let month = format!("{:04}-{:02}", month.year(), u8::from(month.month()));
    page.expect(200, "Last active")
        .expect(200, &format!("Active in {month}"));

    // Block her: a form without its value is refused, with it she is blocked.
    let block = format!("{here}/block");
    let csrf = page.csrf_for(&block);
    b.post(&block, &[("csrf", "forged")])
        .expect(403, "The page has expired");
    b.post(
        &block,
        &[("csrf", &page.csrf_for(&format!("{here}/sign-out")))],
    )
    .expect(403, "The page has expired");
    b.post(&block, &[("csrf", &csrf)])
        .redirect(&format!("{here}?done=block"));
    let page = b.get(&format!("{here}?done=block"));
    page.expect(200, "The user is blocked and signed out everywhere.");
    page.expect(200, "Blocked since");
    let (_, user) = srv.dash_json(
        "GET",
        &format!("/v1/auth/dashboard/tenants/mfa-co/users/{alice}"),
        &s,
        None,
    );
    assert_eq!(user["status"], "blocked");
    let r = srv.post_json(
        "/v1/auth/login",
        &json!({"email": "alice@users.test", "password": "a user's long password"}),
    );
    assert_ne!(r.status(), 200);

    // Deleting asks for the password first, then goes through.
    let delete = format!("{here}/delete");
    let csrf = page.csrf_for(&delete);
    let page = b.post(&delete, &[("csrf", &csrf)]);
    page.expect(200, "Confirm it is you");
    let reauth = page.csrf_for("/console/reauth");
    b.post(
        "/console/reauth",
        &[
            ("csrf", &reauth),
            ("password", "a wrong password here"),
            ("back", &here),
        ],
    )
    .expect(401, "The password is wrong.");
    b.post(
        "/console/reauth",
        &[("csrf", &reauth), ("password", PASSWORD), ("back", &here)],
    )
    .redirect(&here);
    b.post(&delete, &[("csrf", &csrf)])
        .redirect("/console/t/mfa-co/users?done=delete");
    b.get("/console/t/mfa-co/users?done=delete")
        .expect(200, "The user is deleted.");
    let (status, _) = srv.dash_json(
        "GET",
        &format!("/v1/auth/dashboard/tenants/mfa-co/users/{alice}"),
        &s,
        None,
    );
    assert_eq!(status, 404);
    b.get(&here).expect(404, "Not found");

    // The audit log shows what the console did, and downloads it.
    let page = b.get("/console/t/mfa-co/audit");
    page.expect(200, "user.blocked").expect(200, "user.deleted");
    let page = b.get("/console/t/mfa-co/audit?type=user.blocked");
    page.expect(200, "user.blocked");
    assert!(!page.body.contains("user.deleted"), "{}", page.body);
    let csv = b.get("/console/t/mfa-co/audit/download?format=csv&type=user.blocked");
    csv.expect(200, "id,created_at,type,actor_account_id");
    assert!(csv.header("content-type").starts_with("text/csv"));
    assert!(csv
        .header("content-disposition")
        .contains("audit-mfa-co.csv"));
    assert_eq!(csv.body.lines().count(), 2, "{}", csv.body);
    assert!(csv.body.contains(",user.blocked,"), "{}", csv.body);
    let json = b.get("/console/t/mfa-co/audit/download?format=json");
    let events: Value = serde_json::from_str(&json.body).unwrap();
    assert!(events
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["type"] == "user.deleted" && e["actor_account_id"].is_string()));
    b.get("/console/t/mfa-co/audit/download?format=xml")
        .expect(400, "");

    // Signing out ends the session: its cookie opens nothing any more.
    let page = b.get("/console");
    let out = page.csrf_for("/console/sign-out");
    b.post("/console/sign-out", &[("csrf", "forged")])
        .expect(403, "");
    let kept = b.jar["console_session"].clone();
    b.post("/console/sign-out", &[("csrf", &out)])
        .redirect("/console/sign-in");
    assert!(!b.jar.contains_key("console_session"));
    b.jar.insert("console_session".into(), kept);
    b.get("/console").redirect("/console/sign-in");
}

#[test]
fn another_tenants_pages_are_not_found_and_forms_need_their_value() {
    let (_smtp, srv, s) = verified_owner();
    let other = srv.signup("Other Co", "other@mfa.test");
    assert_eq!(other["tenant"]["slug"], "other-co");
    let carol = create_user(&srv, &s, "mfa-co", "carol@users.test");
    let mut b = Browser::new(&srv);
    // A sign-in form without its value is refused before the password is looked at.
    b.get("/console/sign-in");
    b.post(
        "/console/sign-in",
        &[("csrf", "forged"), ("email", OWNER), ("password", PASSWORD)],
    )
    .expect(403, "The page has expired");
    b.sign_in(PASSWORD).redirect("/console");
    for path in [
        "/console/t/other-co",
        "/console/t/other-co/users",
        "/console/t/other-co/audit",
        "/console/t/nowhere/users",
        "/console/t/mfa-co/users/not-an-id",
    ] {
        b.get(path).expect(404, "Not found");
    }
    // The way back after a re-authentication stays in the console.
    let here = format!("/console/t/mfa-co/users/{carol}");
    let page = b.get(&here);
    let delete = format!("{here}/delete");
    let page = b.post(&delete, &[("csrf", &page.csrf_for(&delete))]);
    page.expect(200, "Confirm it is you");
    let csrf = page.csrf_for("/console/reauth");
    for away in [
        "https://evil.example/",
        "//evil.example/console/",
        "/console/../x",
    ] {
        b.post(
            "/console/reauth",
            &[("csrf", &csrf), ("password", PASSWORD), ("back", away)],
        )
        .redirect("/console");
    }
}

#[test]
fn the_console_speaks_the_readers_language_and_runs_no_script() {
    let (_smtp, srv, _s) = verified_owner();
    let mut b = Browser::new(&srv);
    b.lang = Some("de-DE,de;q=0.9");
    let page = b.get("/console/sign-in");
    page.expect(200, "Bei der Konsole anmelden");
    assert!(page.body.contains("<html lang=\"de\">"));
    assert_eq!(page.header("content-language"), "de");
    let csp = page.header("content-security-policy");
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert!(csp.contains("form-action 'self'"), "{csp}");
    assert!(!csp.contains("script-src"), "{csp}");
    assert_eq!(page.header("x-frame-options"), "DENY");
    assert_eq!(page.header("cache-control"), "no-store");
    assert!(!page.body.contains("<script"));
    b.lang = Some("pl");
    b.get("/console/sign-in")
        .expect(200, "Zaloguj się do konsoli");
    let css = b.get("/console/console.css");
    assert_eq!(css.status, 200);
    assert!(css.header("content-type").starts_with("text/css"));
}

/// Undoes the template's HTML escaping.
fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&#34;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// The value of attribute `name` in a tag's text.
fn attr(tag: &str, name: &str) -> Option<String> {
    let marker = format!(" {name}=\"");
    let start = tag.find(&marker)? + marker.len();
    Some(unescape(tag[start..].split('"').next()?))
}

/// What a browser sends for the form posting to `action` as the page shows it: its hidden
/// and text inputs, each select's chosen option, each textarea, the ticked boxes.
fn form_values(page: &Page, action: &str) -> Vec<(String, String)> {
    let at = page
        .body
        .find(&format!("action=\"{action}\""))
        .unwrap_or_else(|| panic!("no form to {action} in {}", page.body));
    let form = &page.body[at..at + page.body[at..].find("</form>").unwrap()];
    let mut out = Vec::new();
    for tag in form.split('<').skip(1) {
        if let Some(t) = tag.strip_prefix("input") {
            let name = attr(t, "name").unwrap();
            let kind = attr(t, "type").unwrap_or_default();
            if kind == "checkbox" && !t.contains(" checked") {
                continue;
            }
            out.push((name, attr(t, "value").unwrap_or_default()));
        } else if let Some(t) = tag.strip_prefix("select") {
            let name = attr(t, "name").unwrap();
            let rest = &form[form.find(tag).unwrap()..];
            let options = &rest[..rest.find("</select>").unwrap()];
            let chosen = options
                .split("<option")
                .skip(1)
                .find(|o| o.contains(" selected"))
                .or_else(|| options.split("<option").nth(1))
                .and_then(|o| attr(o, "value"))
                .unwrap_or_default();
            out.push((name, chosen));
        } else if let Some(t) = tag.strip_prefix("textarea") {
            let name = attr(t, "name").unwrap();
            let text = t.split_once('>').unwrap().1;
            out.push((name, unescape(text)));
        }
    }
    out
}

fn set(values: &mut [(String, String)], name: &str, to: &str) {
    let names: Vec<String> = values.iter().map(|(k, _)| k.clone()).collect();
    let v = values
        .iter_mut()
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("no field {name} in {names:?}"));
    v.1 = to.to_owned();
}

fn post_values(b: &mut Browser, action: &str, values: &[(String, String)]) -> Page {
    let pairs: Vec<(&str, &str)> = values
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    b.post(action, &pairs)
}

/// Every settings section of the API has its page; saving one unchanged changes nothing;
/// a change goes through the API's own rules, its refusal shown beside the field.
#[test]
fn every_settings_section_is_a_form_of_the_apis_own_rules() {
    let (_smtp, srv, s) = verified_owner();
    let mut b = Browser::new(&srv);
    b.sign_in(PASSWORD).redirect("/console");
    let index = b.get("/console/t/mfa-co/settings");
    index.expect(200, "Settings");
    let sections = [
        "security",
        "email-domains",
        "urls",
        "cors",
        "passkey-domain",
        "users",
        "anonymous",
        "roles",
        "branding",
        "agents",
        "minors",
        "eudi",
        "eudi-age",
        "social-google",
        "social-apple",
        "social-microsoft",
        "social-github",
        "social-x",
    ];
    for key in sections {
        let action = format!("/console/t/mfa-co/settings/{key}");
        assert!(index.body.contains(&format!("href=\"{action}\"")), "{key}");
        let api = format!("/v1/auth/dashboard/tenants/mfa-co/settings/{key}");
        let (_, mut before) = srv.dash_json("GET", &api, &s, None);
        let page = b.get(&action);
        page.expect(200, "Save");
        let values = form_values(&page, &action);
        let saved = post_values(&mut b, &action, &values);
        // A section whose defaults the API does not take back as a whole (the wallet needs
        // an attribute to ask for, the minors' texts are required once written) says why;
        // every other saves as it was.
        if saved.status == 400 {
            assert!(["minors", "eudi"].contains(&key), "{key}: {}", saved.body);
            saved.expect(400, "Not accepted");
            continue;
        }
        saved.redirect(&format!("{action}?done=1"));
        let (_, mut after) = srv.dash_json("GET", &api, &s, None);
        for v in [&mut before, &mut after] {
            if let Some(o) = v.as_object_mut() {
                o.remove("updated_at");
            }
        }
        assert_eq!(before, after, "saving {key} unchanged changed it");
    }

    // A change: the API's settings say so after.
    let action = "/console/t/mfa-co/settings/security";
    let page = b.get(action);
    let mut values = form_values(&page, action);
    set(&mut values, "mfa_policy", "required");
    set(&mut values, "mfa_grace_period_days", "7");
    set(&mut values, "block_disposable_emails", "true");
    post_values(&mut b, action, &values).redirect(&format!("{action}?done=1"));
    b.get(&format!("{action}?done=1")).expect(200, "Saved.");
    let (_, security) = srv.dash_json(
        "GET",
        "/v1/auth/dashboard/tenants/mfa-co/settings/security",
        &s,
        None,
    );
    assert_eq!(security["mfa_policy"], "required");
    assert_eq!(security["mfa_grace_period_days"], 7);
    assert_eq!(security["block_disposable_emails"], true);

    // Out of the API's range: refused beside the field, what was typed kept, nothing saved.
    let mut values = form_values(&b.get(action), action);
    set(&mut values, "mfa_grace_period_days", "99");
    let refused = post_values(&mut b, action, &values);
    refused
        .expect(400, "Not accepted")
        .expect(400, "value=\"99\"");
    assert!(refused.body.contains("aria-invalid=\"true\""));
    set(&mut values, "mfa_grace_period_days", "seven");
    post_values(&mut b, action, &values).expect(400, "must be a whole number");
    let (_, security) = srv.dash_json(
        "GET",
        "/v1/auth/dashboard/tenants/mfa-co/settings/security",
        &s,
        None,
    );
    assert_eq!(security["mfa_grace_period_days"], 7);

    // Lists are a line each; an enum list is ticked boxes.
    let action = "/console/t/mfa-co/settings/email-domains";
    let mut values = form_values(&b.get(action), action);
    set(
        &mut values,
        "blocklist",
        "spam.example\r\n\r\n  junk.example ",
    );
    post_values(&mut b, action, &values).redirect(&format!("{action}?done=1"));
    let (_, domains) = srv.dash_json(
        "GET",
        "/v1/auth/dashboard/tenants/mfa-co/settings/email-domains",
        &s,
        None,
    );
    assert_eq!(
        domains["blocklist"],
        json!(["spam.example", "junk.example"])
    );
    let action = "/console/t/mfa-co/settings/eudi-age";
    let mut values = form_values(&b.get(action), action);
    values.push(("supported_member_states".into(), "PL".into()));
    values.push(("supported_member_states".into(), "DE".into()));
    post_values(&mut b, action, &values).redirect(&format!("{action}?done=1"));
    let (_, age) = srv.dash_json(
        "GET",
        "/v1/auth/dashboard/tenants/mfa-co/settings/eudi-age",
        &s,
        None,
    );
    assert_eq!(age["supported_member_states"], json!(["PL", "DE"]));
    let page = b.get(action);
    assert!(page.body.contains("value=\"PL\" checked"), "{}", page.body);

    // A provider: its client, its secret (never shown again), on; the API says so.
    let action = "/console/t/mfa-co/settings/social-github";
    let page = b.get(action);
    page.expect(200, "Sign-in with GitHub");
    let mut values = form_values(&page, action);
    set(&mut values, "enabled", "true");
    set(&mut values, "client_id", "Iv1.0123456789abcdef");
    set(
        &mut values,
        "client_secret",
        "a-github-client-secret-of-forty-chars-00",
    );
    let page = post_values(&mut b, action, &values);
    page.expect(200, "Confirm it is you");
    b.post(
        "/console/reauth",
        &[
            ("csrf", &page.csrf_for("/console/reauth")),
            ("password", PASSWORD),
            ("back", action),
        ],
    )
    .redirect(action);
    post_values(&mut b, action, &values).redirect(&format!("{action}?done=1"));
    let (_, github) = srv.dash_json(
        "GET",
        "/v1/auth/dashboard/tenants/mfa-co/settings/social/github",
        &s,
        None,
    );
    assert_eq!(github["enabled"], true, "{github}");
    assert_eq!(github["client_id"], "Iv1.0123456789abcdef");
    let page = b.get(action);
    assert!(
        !page.body.contains("a-github-client-secret"),
        "a secret is never shown"
    );
    // Saved again with the secret left empty: the stored one stays.
    let values = form_values(&page, action);
    post_values(&mut b, action, &values).redirect(&format!("{action}?done=1"));
    let (_, again) = srv.dash_json(
        "GET",
        "/v1/auth/dashboard/tenants/mfa-co/settings/social/github",
        &s,
        None,
    );
    assert_eq!(again["enabled"], true, "{again}");

    // The form's value is needed, and an unknown section is not found.
    post_values(&mut b, action, &[("csrf".into(), "forged".into())])
        .expect(403, "The page has expired");
    b.get("/console/t/mfa-co/settings/nothing")
        .expect(404, "Not found");
}

/// An owner invites a colleague from the console, who accepts from the mail and signs in;
/// the owner changes their role; a viewer reads settings and users without forms; an
/// invitation is withdrawn; the last owner cannot leave.
#[test]
fn an_owner_invites_a_colleague_who_accepts_from_the_mail() {
    let (smtp, srv, _s) = verified_owner();
    let mut b = Browser::new(&srv);
    b.sign_in(PASSWORD).redirect("/console");
    let base = "/console/t/mfa-co/members";
    let page = b.get(base);
    page.expect(200, OWNER)
        .expect(200, "No invitation is waiting.");
    let invite = format!("{base}/invite");
    let csrf = page.csrf_for(&invite);
    b.post(
        &invite,
        &[
            ("csrf", &csrf),
            ("email", "not an address"),
            ("role", "admin"),
        ],
    )
    .expect(400, "Enter a valid e-mail address and a role.");
    b.post(
        &invite,
        &[("csrf", &csrf), ("email", OWNER), ("role", "admin")],
    )
    .expect(400, "This address is already a member.");
    b.post(
        &invite,
        &[
            ("csrf", &csrf),
            ("email", "hire@mfa.test"),
            ("role", "admin"),
        ],
    )
    .redirect(&format!("{base}?done=invited"));
    b.post(
        &invite,
        &[
            ("csrf", &csrf),
            ("email", "gone@mfa.test"),
            ("role", "viewer"),
        ],
    )
    .redirect(&format!("{base}?done=invited"));
    let page = b.get(&format!("{base}?done=invited"));
    page.expect(200, "The invitation is on its way.")
        .expect(200, "hire@mfa.test")
        .expect(200, "gone@mfa.test");

    // Withdrawn: its link is dead.
    let revoke = "/console/t/mfa-co/invitations/revoke";
    let csrf = page.csrf_for(revoke);
    b.post(revoke, &[("csrf", &csrf), ("email", "gone@mfa.test")])
        .redirect(&format!("{base}?done=revoked"));
    let gone = smtp.wait_for_link("gone@mfa.test", "/dashboard/accept-invite", 1);
    let r = srv.post_json(
        "/v1/auth/dashboard/accept-invite",
        &json!({"token": gone, "password": "a colleague's passphrase"}),
    );
    assert_eq!(r.status(), 400);

    // Accepted from the mail: a member, who signs in to the console.
    srv.accept_mailed_invite(&smtp, "hire@mfa.test", 1, "the hire's own passphrase");
    let page = b.get(base);
    page.expect(200, "hire@mfa.test");
    let hire = srv.login("hire@mfa.test", "the hire's own passphrase");
    let hire_id = hire.body["account"]["id"].as_str().unwrap().to_owned();
    let role = format!("{base}/{hire_id}/role");
    b.post(
        &role,
        &[("csrf", &page.csrf_for(&role)), ("role", "viewer")],
    )
    .redirect(&format!("{base}?done=role"));
    let (_, members) = srv.dash_json(
        "GET",
        "/v1/auth/dashboard/tenants/mfa-co/members",
        &hire,
        None,
    );
    assert!(members["data"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["email"] == "hire@mfa.test" && m["role"] == "viewer"));

    // The viewer reads; no form to change anything is offered.
    let mut v = Browser::new(&srv);
    let page = v.get("/console/sign-in");
    let csrf = page.csrf_for("/console/sign-in");
    v.post(
        "/console/sign-in",
        &[
            ("csrf", &csrf),
            ("email", "hire@mfa.test"),
            ("password", "the hire's own passphrase"),
        ],
    )
    .redirect("/console");
    let page = v.get("/console/t/mfa-co/settings/security");
    page.expect(200, "owners change settings.");
    assert!(!page.body.contains("Save</button>"), "{}", page.body);
    let page = v.get(base);
    assert!(!page.body.contains("/invite\""), "{}", page.body);
    page.expect(200, "Leave this tenant");

    // The last owner cannot leave.
    let page = b.get(base);
    let me = page
        .body
        .split("action=\"")
        .filter_map(|a| a.split('"').next())
        .find(|a| a.ends_with("/remove") && !a.contains(&hire_id))
        .unwrap()
        .to_owned();
    b.post(&me, &[("csrf", &page.csrf_for(&me))])
        .expect(400, "last owner cannot be removed or demoted.");
    // The viewer leaves.
    let page = v.get(base);
    let leave = format!("{base}/{hire_id}/remove");
    v.post(&leave, &[("csrf", &page.csrf_for(&leave))])
        .redirect("/console");
    v.get(base).expect(404, "Not found");
}

/// The console's own account page turns two-step verification on (a QR code, the key, a
/// code, recovery codes shown once) and off, each after the password again; the next
/// sign-in asks for a code, and a recovery code answers it once.
#[test]
fn an_owner_turns_two_step_verification_on_and_off_in_the_console() {
    use crate::support::Totp;
    let (_smtp, srv, s) = verified_owner();
    let mut b = Browser::new(&srv);
    b.sign_in(PASSWORD).redirect("/console");
    let page = b.get("/console/account");
    page.expect(200, "Turn on two-step verification");
    let setup = "/console/account/mfa/setup";
    let csrf = page.csrf_for(setup);
    let page = b.post(setup, &[("csrf", &csrf)]);
    page.expect(200, "Confirm it is you");
    let reauth = page.csrf_for("/console/reauth");
    b.post(
        "/console/reauth",
        &[
            ("csrf", &reauth),
            ("password", PASSWORD),
            ("back", "/console/account"),
        ],
    )
    .redirect("/console/account");
    let page = b.post(setup, &[("csrf", &csrf)]);
    page.expect(200, "Scan this code").expect(200, "<svg");
    let secret = page.hidden("secret");
    let uri = page.hidden("uri");
    assert!(uri.starts_with("otpauth://totp/"), "{uri}");
    let totp = Totp::new(&secret);
    let confirm = "/console/account/mfa/confirm";
    let csrf = page.csrf_for(confirm);
    let step = crate::support::settled_totp_step(4.0);
    let form = |code: &str| {
        vec![
            ("csrf".to_owned(), csrf.clone()),
            ("secret".to_owned(), secret.clone()),
            ("uri".to_owned(), uri.clone()),
            ("code".to_owned(), code.to_owned()),
        ]
    };
    post_values(&mut b, confirm, &form(&totp.wrong_at(step)))
        .expect(400, "The code is wrong or was already used.")
        .expect(400, &secret);
    let page = post_values(&mut b, confirm, &form(&totp.at_step(step)));
    page.expect(200, "Your recovery codes");
    let codes: Vec<String> = page
        .body
        .split("<code>")
        .skip(1)
        .filter_map(|c| c.split("</code>").next())
        .map(str::to_owned)
        .collect();
    assert_eq!(codes.len(), 10, "{codes:?}");
    let (_, account) = srv.dash_json("GET", "/v1/auth/dashboard/account", &s, None);
    assert_eq!(account["mfa_enabled"], true);

    // The next sign-in asks for a code; a recovery code answers it once.
    let page = b.get("/console");
    b.post(
        "/console/sign-out",
        &[("csrf", &page.csrf_for("/console/sign-out"))],
    )
    .redirect("/console/sign-in");
    let page = b.sign_in(PASSWORD);
    page.expect(200, "Enter your code");
    let code_csrf = page.csrf_for("/console/sign-in/code");
    b.post(
        "/console/sign-in/code",
        &[
            ("csrf", &code_csrf),
            ("challenge", &page.hidden("challenge")),
            ("code", &codes[0]),
        ],
    )
    .redirect("/console");
    let page = b.get("/console/account");
    page.expect(200, "9 recovery codes left.");

    // Off, after the password again (this session never gave it).
    let remove = "/console/account/mfa/remove";
    let csrf = page.csrf_for(remove);
    let page = b.post(remove, &[("csrf", &csrf)]);
    page.expect(200, "Confirm it is you");
    let reauth = page.csrf_for("/console/reauth");
    b.post(
        "/console/reauth",
        &[
            ("csrf", &reauth),
            ("password", PASSWORD),
            ("back", "/console/account"),
        ],
    )
    .redirect("/console/account");
    b.post(remove, &[("csrf", &csrf)])
        .redirect("/console/account?done=removed");
    b.get("/console/account?done=removed")
        .expect(200, "Two-step verification is off.");
    let (_, account) = srv.dash_json("GET", "/v1/auth/dashboard/account", &s, None);
    assert_eq!(account["mfa_enabled"], false);
}

/// The keys page: the API key rotated after the password again and shown once (the old one
/// dead at once); a management key created, shown once, working, then revoked.
#[test]
fn an_owner_rotates_the_api_key_and_makes_a_management_key() {
    let (smtp, srv) = crate::support::start_with_mail(&[]);
    let tenant = srv.signup("Keys Co", OWNER);
    drop(smtp);
    let old_key = tenant["api_key"].as_str().unwrap().to_owned();
    let mut b = Browser::new(&srv);
    b.sign_in(PASSWORD).redirect("/console");
    let base = "/console/t/keys-co/keys";
    let page = b.get(base);
    page.expect(200, "No management key yet.");
    let rotate = format!("{base}/api-key/rotate");
    let csrf = page.csrf_for(&rotate);
    let page = b.post(&rotate, &[("csrf", &csrf)]);
    page.expect(200, "Confirm it is you");
    b.post(
        "/console/reauth",
        &[
            ("csrf", &page.csrf_for("/console/reauth")),
            ("password", PASSWORD),
            ("back", base),
        ],
    )
    .redirect(base);
    let page = b.post(&rotate, &[("csrf", &csrf)]);
    page.expect(200, "shown only this once");
    let new_key = page
        .body
        .split("<code>")
        .nth(1)
        .unwrap()
        .split("</code>")
        .next()
        .unwrap();
    assert_eq!(srv.get("/v1/tenant", Some(&old_key)).status(), 401);
    assert_eq!(srv.get("/v1/tenant", Some(new_key)).status(), 200);

    let create = format!("{base}/create");
    let page = b.get(base);
    let csrf = page.csrf_for(&create);
    b.post(
        &create,
        &[
            ("csrf", &csrf),
            ("name", ""),
            ("role", "admin"),
            ("expires_at", ""),
        ],
    )
    .expect(400, "Not accepted");
    b.post(
        &create,
        &[
            ("csrf", &csrf),
            ("name", "ci"),
            ("role", "admin"),
            ("expires_at", "yesterday"),
        ],
    )
    .expect(400, "expires_at");
    let page = b.post(
        &create,
        &[
            ("csrf", &csrf),
            ("name", "billing back end"),
            ("role", "viewer"),
            ("expires_at", ""),
        ],
    );
    page.expect(200, "shown only this once");
    let key = page
        .body
        .split("<code>")
        .nth(1)
        .unwrap()
        .split("</code>")
        .next()
        .unwrap();
    assert!(key.starts_with("tmk_"), "{key}");
    let users = |key: &str| {
        srv.client
            .get(srv.url("/v1/management/users"))
            .bearer_auth(key)
            .send()
            .unwrap()
            .status()
    };
    assert_eq!(users(key), 200);
    let page = b.get(base);
    page.expect(200, "billing back end");
    let id_at = page.body.find("/revoke\"").unwrap();
    let action_start = page.body[..id_at].rfind("action=\"").unwrap() + "action=\"".len();
    let revoke = format!("{}/revoke", &page.body[action_start..id_at]);
    b.post(&revoke, &[("csrf", &page.csrf_for(&revoke))])
        .redirect(&format!("{base}?done=revoked"));
    assert_eq!(users(key), 401);
    b.get(&format!("{base}?done=revoked"))
        .expect(200, "The key is revoked.");
}

/// A newcomer creates their account and first tenant from the console: the onboarding
/// route's rules, the key shown once, signed in at once; an address with an account is
/// refused without saying more; with a CAPTCHA on, the form carries its widget.
#[test]
fn a_newcomer_creates_an_account_and_a_tenant_from_the_console() {
    let (_smtp, srv) = crate::support::start_with_mail(&[]);
    let mut b = Browser::new(&srv);
    b.get("/console/sign-in")
        .expect(200, "href=\"/console/sign-up\"");
    let page = b.get("/console/sign-up");
    page.expect(200, "Create your account");
    let csrf = page.csrf_for("/console/sign-up");
    let base = vec![
        ("csrf", csrf.as_str()),
        ("email", "new@console.test"),
        ("password", "a newcomer's long passphrase"),
        ("tenant_name", "Fresh App"),
    ];
    // No consent: refused beside the boxes, what was typed kept (never the password).
    let refused = b.post("/console/sign-up", &base);
    refused
        .expect(400, "Not accepted")
        .expect(400, "value=\"Fresh App\"");
    assert!(!refused.body.contains("newcomer&#39;s long passphrase"));
    assert!(!refused.body.contains("newcomer's long passphrase"));
    let mut short = base.clone();
    short[2] = ("password", "short");
    short.extend([("consent", "terms"), ("consent", "privacy")]);
    b.post("/console/sign-up", &short)
        .expect(400, "Not accepted");
    let mut good = base.clone();
    good.extend([("consent", "terms"), ("consent", "privacy")]);
    b.post("/console/sign-up", &[("csrf", "forged")])
        .expect(403, "The page has expired");
    let done = b.post("/console/sign-up", &good);
    done.expect(201, "Your tenant is ready")
        .expect(201, "shown only this once");
    let key = done
        .body
        .split("<code>")
        .nth(1)
        .unwrap()
        .split("</code>")
        .next()
        .unwrap();
    assert_eq!(srv.get("/v1/tenant", Some(key)).status(), 200);
    assert!(done.set_cookie("console_session").is_some());
    b.get("/console")
        .expect(200, "href=\"/console/t/fresh-app\"");

    // The same address again: refused, nothing else said.
    let mut other = Browser::new(&srv);
    let page = other.get("/console/sign-up");
    let csrf = page.csrf_for("/console/sign-up");
    let mut again = good.clone();
    again[0] = ("csrf", csrf.as_str());
    again[3] = ("tenant_name", "Second App");
    other
        .post("/console/sign-up", &again)
        .expect(409, "An account with this address exists already");

    // With a CAPTCHA on, the page runs only its widget, and a form without it is refused.
    let stub = crate::support::CaptchaStub::start();
    let guarded = TestServer::start_with(&[
        ("TESSERA__CAPTCHA__PROVIDER", "turnstile"),
        ("TESSERA__CAPTCHA__SECRET", "stub-secret"),
        ("TESSERA__CAPTCHA__VERIFY_URL", &stub.url),
        ("TESSERA__CAPTCHA__SITE_KEY", "0x4AAAAAAA-site_key"),
        ("TESSERA__CAPTCHA__WIDGET_SCRIPT_URL", &stub.script_url),
    ]);
    let mut c = Browser::new(&guarded);
    let page = c.get("/console/sign-up");
    page.expect(200, "class=\"cf-turnstile\"")
        .expect(200, &stub.script_url);
    let widget_origin = stub.script_url.trim_end_matches("/api.js");
    assert!(
        page.header("content-security-policy")
            .contains(&format!("script-src {widget_origin};")),
        "{}",
        page.header("content-security-policy")
    );
    let csrf = page.csrf_for("/console/sign-up");
    let mut form = good.clone();
    form[0] = ("csrf", csrf.as_str());
    c.post("/console/sign-up", &form)
        .expect(400, "The sign-up was not accepted");
    form.push(("cf-turnstile-response", "good"));
    c.post("/console/sign-up", &form)
        .expect(201, "Your tenant is ready");
    // Pages without the widget keep the strict policy.
    let csp = c
        .get("/console/sign-in")
        .header("content-security-policy")
        .to_owned();
    assert!(!csp.contains("script-src"), "{csp}");
}

/// The webhooks pages: an endpoint added (after the password again, its secret shown once
/// and signing what arrives), a test event that keeps failing until the endpoint turns
/// itself off, turned on again and the event sent again by hand, the secret rotated, the
/// endpoint deleted.
#[test]
fn an_owner_runs_webhooks_and_their_delivery_log_from_the_console() {
    use crate::webhooks::{Receiver, PRIVATE_OK};
    let receiver = Receiver::start();
    receiver.answer_by_default(500);
    let (_smtp, srv, api, _s) = crate::support::user_setup(
        "Hook Co",
        &[
            PRIVATE_OK,
            ("TESSERA__WEBHOOKS__RETRY_SCALE", "0.001"),
            ("TESSERA__WEBHOOKS__DISABLE_AFTER_SECS", "1"),
        ],
    );
    let mut b = Browser::new(&srv);
    b.sign_in_as(&api.owner, PASSWORD).redirect("/console");
    let base = "/console/t/hook-co/webhooks";
    let page = b.get(base);
    page.expect(200, "No endpoint yet.");
    let create = format!("{base}/create");
    let csrf = page.csrf_for(&create);
    let form = [
        ("csrf", csrf.as_str()),
        ("url", receiver.url.as_str()),
        ("description", "the app's back end"),
        ("event_types", "user.created"),
    ];
    // The API's order: the body's rules, then the re-authentication.
    b.post(
        &create,
        &[
            ("csrf", &csrf),
            ("url", "http://x"),
            ("event_types", "nope"),
        ],
    )
    .expect(400, "Not accepted")
    .expect(400, "guardian.consent_withdrawn");
    let page = b.post(&create, &form);
    page.expect(200, "Confirm it is you");
    b.post(
        "/console/reauth",
        &[
            ("csrf", &page.csrf_for("/console/reauth")),
            ("password", PASSWORD),
            ("back", base),
        ],
    )
    .redirect(base);
    let page = b.post(&create, &form);
    page.expect(200, "shown only this once");
    let secret = page
        .body
        .split("<code>")
        .nth(1)
        .unwrap()
        .split("</code>")
        .next()
        .unwrap()
        .to_owned();
    assert!(secret.starts_with("whsec_"), "{secret}");
    let at = page.body.find(&format!("href=\"{base}/")).unwrap() + "href=\"".len();
    let here = page.body[at..].split('"').next().unwrap().to_owned();

    // A test event, refused by the receiver until the endpoint turns itself off.
    let page = b.get(&here);
    page.expect(200, "Nothing delivered yet.")
        .expect(200, "the app&#39;s back end");
    let test = format!("{here}/test");
    b.post(&test, &[("csrf", &page.csrf_for(&test))])
        .redirect(&format!("{here}?done=tested"));
    let got = receiver.wait_for("webhook.test", 1);
    assert!(got[0].verifies_with(&secret));
    let failed = crate::support::eventually(std::time::Duration::from_secs(30), || {
        let p = b.get(&here);
        p.body.contains("Failed") && p.body.contains("Turned off after failing")
    });
    assert!(failed, "{}", b.get(&here).body);

    // On again, and the event sent again by hand: delivered.
    receiver.answer_by_default(200);
    let page = b.get(&here);
    let enable = format!("{here}/enable");
    b.post(&enable, &[("csrf", &page.csrf_for(&enable))])
        .redirect(&format!("{here}?done=enabled"));
    let page = b.get(&here);
    let redeliver = page
        .body
        .split("action=\"")
        .filter_map(|a| a.split('"').next())
        .find(|a| a.ends_with("/redeliver"))
        .unwrap()
        .to_owned();
    b.post(&redeliver, &[("csrf", &page.csrf_for(&redeliver))])
        .redirect(&format!("{here}?done=redelivered"));
    let delivered = crate::support::eventually(std::time::Duration::from_secs(20), || {
        b.get(&here).body.contains("Delivered")
    });
    assert!(delivered, "{}", b.get(&here).body);
    assert!(receiver
        .wait_for("webhook.test", 2)
        .iter()
        .all(|r| r.verifies_with(&secret)));

    // A new secret, shown once; then the endpoint goes.
    let page = b.get(&here);
    let rotate = format!("{here}/rotate");
    let page = b.post(&rotate, &[("csrf", &page.csrf_for(&rotate))]);
    page.expect(200, "shown only this once");
    let rotated = page
        .body
        .split("<code>")
        .nth(1)
        .unwrap()
        .split("</code>")
        .next()
        .unwrap();
    assert!(rotated.starts_with("whsec_") && rotated != secret);
    let page = b.get(&here);
    let delete = format!("{here}/delete");
    b.post(&delete, &[("csrf", &page.csrf_for(&delete))])
        .redirect(&format!("{base}?done=deleted"));
    b.get(&format!("{base}?done=deleted"))
        .expect(200, "The endpoint is deleted.")
        .expect(200, "No endpoint yet.");
    b.get(&here).expect(404, "Not found");
}

/// The OAuth clients pages: a confidential client registered after the password again (its
/// secret shown once), a public one without a secret, a refused registration with its reason,
/// the secret rotated, a client deleted.
#[test]
fn an_owner_registers_oauth_clients_from_the_console() {
    let (_smtp, srv, s) = verified_owner();
    let mut b = Browser::new(&srv);
    b.sign_in(PASSWORD).redirect("/console");
    let base = "/console/t/mfa-co/clients";
    let page = b.get(base);
    page.expect(200, "No client yet.");
    let create = format!("{base}/create");
    let csrf = page.csrf_for(&create);
    let confidential = [
        ("csrf", csrf.as_str()),
        ("name", "Wiki"),
        ("client_type", "confidential"),
        (
            "redirect_uris",
            "https://wiki.example.com/oidc/callback\r\n",
        ),
        ("post_logout_redirect_uris", ""),
        ("allowed_scopes", "openid\r\nemail\r\nprofile"),
        ("first_party", "false"),
        ("description", "The team's wiki"),
        ("logo_url", "https://wiki.example.com/logo.png"),
        ("id_token_signed_response_alg", "ES256"),
    ];
    let page = b.post(&create, &confidential);
    page.expect(200, "Confirm it is you");
    b.post(
        "/console/reauth",
        &[
            ("csrf", &page.csrf_for("/console/reauth")),
            ("password", PASSWORD),
            ("back", base),
        ],
    )
    .redirect(base);
    let mut bad = confidential;
    bad[3] = ("redirect_uris", "not a uri");
    b.post(&create, &bad).expect(400, "redirect_uris");
    let page = b.post(&create, &confidential);
    page.expect(200, "shown only this once");
    let secret = page
        .body
        .split("<code>")
        .nth(1)
        .unwrap()
        .split("</code>")
        .next()
        .unwrap()
        .to_owned();
    assert!(secret.starts_with("tcs_"), "{secret}");
    let (_, list) = srv.dash_json(
        "GET",
        "/v1/auth/dashboard/tenants/mfa-co/oauth-clients",
        &s,
        None,
    );
    let wiki = &list["data"][0];
    assert_eq!(wiki["name"], "Wiki");
    assert_eq!(
        wiki["allowed_scopes"],
        json!(["openid", "email", "profile"])
    );
    assert_eq!(
        wiki["redirect_uris"],
        json!(["https://wiki.example.com/oidc/callback"])
    );
    assert!(secret.starts_with(wiki["secret_prefix"].as_str().unwrap()));
    assert_eq!(wiki["description"], "The team's wiki");
    assert_eq!(wiki["logo_url"], "https://wiki.example.com/logo.png");
    assert_eq!(wiki["id_token_signed_response_alg"], "ES256");
    let id = wiki["client_id"].as_str().unwrap().to_owned();

    let mut public = confidential;
    public[1] = ("name", "Mobile");
    public[2] = ("client_type", "public");
    let page = b.post(&create, &public);
    page.expect(200, "The client&#39;s credentials");
    assert!(!page.body.contains("<code>"), "{}", page.body);

    let here = format!("{base}/{id}");
    let page = b.get(&here);
    page.expect(200, "https://wiki.example.com/oidc/callback");
    // Its registration, edited as the API's update takes it.
    let edit = format!("{here}/edit");
    let mut values = form_values(&page, &edit);
    set(
        &mut values,
        "redirect_uris",
        "https://wiki.example.com/oidc/callback\nhttps://wiki.example.com/oidc/other",
    );
    set(&mut values, "allowed_scopes", "openid\nemail");
    set(&mut values, "description", "");
    set(&mut values, "first_party", "true");
    set(&mut values, "id_token_signed_response_alg", "RS256");
    post_values(&mut b, &edit, &values).redirect(&format!("{here}?done=saved"));
    let (_, wiki) = srv.dash_json(
        "GET",
        &format!("/v1/auth/dashboard/tenants/mfa-co/oauth-clients/{id}"),
        &s,
        None,
    );
    assert_eq!(wiki["allowed_scopes"], json!(["openid", "email"]));
    assert_eq!(wiki["description"], Value::Null, "emptied: none");
    assert_eq!(wiki["first_party"], true);
    assert_eq!(wiki["id_token_signed_response_alg"], "RS256");
    assert_eq!(wiki["logo_url"], "https://wiki.example.com/logo.png");
    assert_eq!(wiki["redirect_uris"].as_array().unwrap().len(), 2);
    set(&mut values, "redirect_uris", "ftp://nowhere");
    post_values(&mut b, &edit, &values)
        .expect(400, "Not accepted")
        .expect(400, "redirect_uris");
    let page = b.get(&here);
    let rotate = format!("{here}/rotate");
    let page = b.post(&rotate, &[("csrf", &page.csrf_for(&rotate))]);
    page.expect(200, "shown only this once");
    let rotated = page
        .body
        .split("<code>")
        .nth(1)
        .unwrap()
        .split("</code>")
        .next()
        .unwrap();
    assert!(rotated.starts_with("tcs_") && rotated != secret);
    let page = b.get(&here);
    let delete = format!("{here}/delete");
    b.post(&delete, &[("csrf", &page.csrf_for(&delete))])
        .redirect(&format!("{base}?done=deleted"));
    b.get(&here).expect(404, "Not found");
    let page = b.get(&format!("{base}?done=deleted"));
    page.expect(200, "The client is deleted.")
        .expect(200, "Mobile");
}

/// The overview counts the day's sign-ins and refused sign-ins as they happen (the chart and
/// its table), and this month's active users; the API answers the same figures.
#[test]
fn the_overview_counts_sign_ins_a_day() {
    let (_smtp, srv, s) = verified_owner();
    create_user(&srv, &s, "mfa-co", "erin@users.test");
    // The sign-up's key is not kept by the helper: a new one.
    srv.reauth(&s, PASSWORD);
    let (_, rotated) = srv.dash_json(
        "POST",
        "/v1/auth/dashboard/tenants/mfa-co/api-key/rotate",
        &s,
        None,
    );
    let key = rotated["api_key"].as_str().unwrap().to_owned();
    let login = |password: &str| {
        srv.client
            .post(srv.url("/v1/auth/login"))
            .header("x-api-key", &key)
            .json(&json!({"email": "erin@users.test", "password": password}))
            .send()
            .unwrap()
            .status()
            .as_u16()
    };
    assert_eq!(login("a user's long password"), 200);
    assert_eq!(login("a user's long password"), 200);
    assert_eq!(login("not the user's password"), 401);
    let (status, a) = srv.dash_json(
        "GET",
        "/v1/auth/dashboard/tenants/mfa-co/activity?days=7",
        &s,
        None,
    );
    assert_eq!(status, 200, "{a}");
    let days = a["days"].as_array().unwrap();
    assert_eq!(days.len(), 7);
    let today = days.last().unwrap();
    assert_eq!(
        (today["sign_ins"].as_u64(), today["failures"].as_u64()),
        (Some(2), Some(1))
    );
    assert!(days[..6]
        .iter()
        .all(|d| d["sign_ins"] == 0 && d["failures"] == 0));
    assert!(a["active_users"].as_u64() >= Some(1));
    let (status, _) = srv.dash_json(
        "GET",
        "/v1/auth/dashboard/tenants/mfa-co/activity?days=0",
        &s,
        None,
    );
    assert_eq!(status, 400);

    let mut b = Browser::new(&srv);
    b.sign_in(PASSWORD).redirect("/console");
    let page = b.get("/console/t/mfa-co");
    page.expect(200, "Sign-ins over time").expect(200, "<svg");
    let day = today["day"].as_str().unwrap();
    assert!(
        page.body
            .contains(&format!("<td>{day}</td><td>2</td><td>1</td>")),
        "{}",
        page.body
    );
}

/// The agents pages: refused on the free tier with the API's reason; on pro, an agent
/// registered after the password again (its secret shown once and working at the token
/// endpoint, which its activity then shows), then revoked, its secret dead.
#[test]
fn an_owner_registers_and_revokes_an_agent_from_the_console() {
    let (_smtp, srv, api, _s) = crate::support::user_setup("Agent Co", &[]);
    let mut b = Browser::new(&srv);
    b.sign_in_as(&api.owner, PASSWORD).redirect("/console");
    let base = "/console/t/agent-co/agents";
    let page = b.get(base);
    page.expect(200, "No agent yet.");
    let create = format!("{base}/create");
    let csrf = page.csrf_for(&create);
    let form = [
        ("csrf", csrf.as_str()),
        ("name", "Billing bot"),
        ("scopes", ""),
        ("grant_types", "client_credentials"),
        ("description", "Sends the invoices"),
        ("agent_class", "mcp-server"),
        ("agent_token_max_ttl_sec", "600"),
        ("client_credentials_per_min", "30"),
    ];
    // The free tier has no agents: the API's reason, on the page.
    let refused = b.post(&create, &form);
    assert!(
        refused.status == 400 || refused.status == 403,
        "{}",
        refused.body
    );
    refused.expect(refused.status, "Not accepted");
    crate::agents::set_pro(&srv, "agent-co");
    let page = b.post(&create, &form);
    page.expect(200, "Confirm it is you");
    b.post(
        "/console/reauth",
        &[
            ("csrf", &page.csrf_for("/console/reauth")),
            ("password", PASSWORD),
            ("back", base),
        ],
    )
    .redirect(base);
    let page = b.post(&create, &form);
    page.expect(200, "shown only this once");
    let secret = page
        .body
        .split("<code>")
        .nth(1)
        .unwrap()
        .split("</code>")
        .next()
        .unwrap()
        .to_owned();
    let client_id = page
        .body
        .split("<dd>")
        .nth(1)
        .unwrap()
        .split("</dd>")
        .next()
        .unwrap()
        .to_owned();
    let token = |secret: &str| {
        srv.client
            .post(srv.url("/v1/tenants/agent-co/oauth/token"))
            .basic_auth(&client_id, Some(secret))
            .form(&[("grant_type", "client_credentials")])
            .send()
            .unwrap()
            .status()
            .as_u16()
    };
    assert_eq!(token(&secret), 200);
    let page = b.get(base);
    page.expect(200, "Billing bot");
    let at = page.body.find(&format!("href=\"{base}/")).unwrap() + "href=\"".len();
    let here = page.body[at..].split('"').next().unwrap().to_owned();
    let page = b.get(&here);
    page.expect(200, "client_credentials");
    assert!(!page.body.contains("No activity yet."), "{}", page.body);
    // Its registration, edited as the API's update takes it.
    let edit = format!("{here}/edit");
    let mut values = form_values(&page, &edit);
    // What was registered is shown, and the form carries it.
    page.expect(200, "Sends the invoices")
        .expect(200, "mcp-server")
        .expect(200, "value=\"30\"");
    set(&mut values, "name", "Billing bot v2");
    values.push((
        "grant_types".into(),
        "urn:ietf:params:oauth:grant-type:device_code".into(),
    ));
    set(&mut values, "agent_token_max_ttl_sec", "120");
    set(&mut values, "max_concurrent_tokens", "3");
    set(&mut values, "client_credentials_per_min", "");
    // A number that is not one is said, and nothing is saved.
    let mut bad = values.clone();
    set(&mut bad, "api_calls_per_min", "many");
    post_values(&mut b, &edit, &bad).expect(400, "api_calls_per_min: must be a whole number");
    post_values(&mut b, &edit, &values).redirect(&format!("{here}?done=saved"));
    let id = here.rsplit('/').next().unwrap();
    let (_, agent) = srv.dash_json(
        "GET",
        &format!("/v1/auth/dashboard/tenants/agent-co/agents/{id}"),
        &srv.login(&api.owner, PASSWORD),
        None,
    );
    assert_eq!(agent["description"], "Sends the invoices", "{agent}");
    assert_eq!(agent["agent_class"], "mcp-server");
    assert_eq!(agent["agent_token_max_ttl_sec"], 120);
    assert_eq!(agent["agent_settings"]["max_concurrent_tokens"], 3);
    assert_eq!(
        agent["agent_settings"]["rate_limits"]["client_credentials_per_min"],
        Value::Null
    );
    let page = b.get(&format!("{here}?done=saved"));
    page.expect(200, "Saved.").expect(200, "Billing bot v2");
    assert!(
        page.body.contains("grant-type:device_code\" checked"),
        "{}",
        page.body
    );
    let mut none = form_values(&page, &edit);
    none.retain(|(k, _)| k != "grant_types");
    post_values(&mut b, &edit, &none).expect(400, "grant_types");
    let revoke = format!("{here}/revoke");
    b.post(&revoke, &[("csrf", &page.csrf_for(&revoke))])
        .redirect(&format!("{base}?done=revoked"));
    assert_eq!(token(&secret), 401);
    let page = b.get(&here);
    assert!(
        !page.body.contains(&format!("action=\"{revoke}\"")),
        "{}",
        page.body
    );
}

/// Every form of the console is refused (403, the page that says it expired) without its
/// own CSRF value, and with the value of another form, before it does anything: signed in
/// or not, for every route that takes a form.
#[test]
fn every_console_form_refuses_a_missing_or_foreign_csrf_value() {
    let (_smtp, srv, s) = verified_owner();
    let id = create_user(&srv, &s, "mfa-co", "frank@users.test");
    let mut b = Browser::new(&srv);
    let outside = [
        "/console/sign-in",
        "/console/sign-in/code",
        "/console/sign-up",
        "/console/sign-out",
    ];
    // Not signed in: a browser that never got a value, then one with another page's.
    for path in outside {
        b.post(
            path,
            &[("csrf", "forged"), ("email", OWNER), ("password", PASSWORD)],
        )
        .expect(403, "The page has expired");
    }
    b.sign_in(PASSWORD).redirect("/console");
    let foreign = b.get("/console").csrf_for("/console/sign-out");
    let t = "/console/t/mfa-co";
    let forms = [
        "/console/sign-in".to_owned(),
        "/console/sign-in/code".to_owned(),
        "/console/sign-up".to_owned(),
        "/console/reauth".to_owned(),
        "/console/account/mfa/setup".to_owned(),
        "/console/account/mfa/confirm".to_owned(),
        "/console/account/mfa/remove".to_owned(),
        format!("{t}/users/{id}/block"),
        format!("{t}/users/{id}/delete"),
        format!("{t}/members/invite"),
        format!("{t}/members/{id}/role"),
        format!("{t}/members/{id}/remove"),
        format!("{t}/invitations/revoke"),
        format!("{t}/keys/api-key/rotate"),
        format!("{t}/keys/create"),
        format!("{t}/keys/{id}/revoke"),
        format!("{t}/clients/create"),
        format!("{t}/clients/tc_x/edit"),
        format!("{t}/clients/tc_x/delete"),
        format!("{t}/agents/create"),
        format!("{t}/agents/{id}/revoke"),
        format!("{t}/webhooks/create"),
        format!("{t}/webhooks/{id}/test"),
        format!("{t}/webhooks/{id}/deliveries/{id}/redeliver"),
        format!("{t}/settings/security"),
        format!("{t}/scopes/{id}/register"),
        format!("{t}/scopes/{id}/{id}/remove"),
        format!("{t}/organizations/create"),
        format!("{t}/organizations/{id}/rename"),
        format!("{t}/organizations/{id}/delete"),
        format!("{t}/organizations/{id}/members/{id}/remove"),
        format!("{t}/organizations/{id}/domains/x.example/verify"),
        format!("{t}/organizations/{id}/connections/{id}/delete"),
    ];
    for path in &forms {
        for sent in ["", "forged", foreign.as_str()] {
            b.post(
                path,
                &[("csrf", sent), ("email", "x@y.test"), ("role", "viewer")],
            )
            .expect(403, "The page has expired");
        }
    }
    // Nothing happened: the user is still active, the key still the one it was.
    let (_, user) = srv.dash_json(
        "GET",
        &format!("/v1/auth/dashboard/tenants/mfa-co/users/{id}"),
        &s,
        None,
    );
    assert_eq!(user["status"], "active");
    let (_, members) = srv.dash_json("GET", "/v1/auth/dashboard/tenants/mfa-co/members", &s, None);
    assert_eq!(members["invitations"], json!([]));
}

/// An owner registers a scope on the tenant's resource from the console (all five consent
/// texts, waiting for the operator's review), sees a refusal of the API's rules said on the
/// form, and removes the scope; an admin is told only owners manage the catalog.
#[test]
fn an_owner_registers_and_removes_a_resource_scope_from_the_console() {
    let (smtp, srv) = crate::support::start_with_mail(&[]);
    srv.signup("Scopes Co", OWNER);
    drop(smtp);
    let out = srv.admin(
        &[
            "resource",
            "register",
            "--tenant",
            "scopes-co",
            "--name",
            "Orders API",
            "--uri",
            "https://api.scopes.example/orders",
        ],
        "",
    );
    let resource = out.json()["id"].as_str().expect("a resource id").to_owned();
    let mut b = Browser::new(&srv);
    b.sign_in(PASSWORD).redirect("/console");
    b.get("/console/t/scopes-co/clients")
        .expect(200, "/console/t/scopes-co/scopes");
    let base = "/console/t/scopes-co/scopes";
    let page = b.get(base);
    page.expect(200, "Orders API (https://api.scopes.example/orders)")
        .expect(200, "This resource has no scopes yet.");
    let register = format!("{base}/{resource}/register");
    let csrf = page.csrf_for(&register);
    let texts = [
        ("text_en", "Read your orders"),
        ("text_pl", "Odczyt zamówień"),
        ("text_de", "Bestellungen lesen"),
        ("text_fr", "Lire vos commandes"),
        ("text_es", "Leer tus pedidos"),
    ];
    let mut form = vec![("csrf", csrf.as_str()), ("sensitivity", "normal")];
    form.extend_from_slice(&texts);
    let mut reserved = form.clone();
    reserved.push(("scope_name", "mcp:orders"));
    b.post(&register, &reserved)
        .expect(400, "Not accepted")
        .expect(400, "mcp:orders");
    let mut good = form.clone();
    good.push(("scope_name", "orders:read"));
    b.post(&register, &good)
        .redirect(&format!("{base}?done=registered"));
    let page = b.get(&format!("{base}?done=registered"));
    page.expect(200, "It waits for the operator&#39;s review")
        .expect(200, "orders:read")
        .expect(200, "Waiting for review")
        .expect(200, "Read your orders");
    let (_, listed) = srv.dash_json(
        "GET",
        &format!("/v1/resources/{resource}/scopes"),
        &srv.login(OWNER, PASSWORD),
        None,
    );
    assert_eq!(listed["data"][0]["scope_name"], "orders:read");
    assert_eq!(listed["data"][0]["sensitivity"], "normal");
    assert_eq!(
        listed["data"][0]["display_metadata"]["locale_text"]["de"],
        "Bestellungen lesen"
    );
    let scope = listed["data"][0]["id"].as_str().unwrap().to_owned();
    let remove = format!("{base}/{resource}/{scope}/remove");
    b.post(&remove, &[("csrf", &page.csrf_for(&remove))])
        .redirect(&format!("{base}?done=removed"));
    let (_, listed) = srv.dash_json(
        "GET",
        &format!("/v1/resources/{resource}/scopes"),
        &srv.login(OWNER, PASSWORD),
        None,
    );
    assert_eq!(listed["data"], json!([]));
}

/// Nested settings in the console: Apple's signing key as its own inputs (the key sealed,
/// never shown again, kept when left empty), and the wallet's trust anchors as JSON, whose
/// text must parse.
#[test]
fn an_owner_sets_apples_key_and_edits_nested_settings_as_json() {
    let (_smtp, srv, s) = verified_owner();
    let mut b = Browser::new(&srv);
    b.sign_in(PASSWORD).redirect("/console");
    let action = "/console/t/mfa-co/settings/social-apple";
    let page = b.get(action);
    page.expect(200, "Apple key: the .p8 file")
        .expect(200, "name=\"apple.team_id\"");
    let key = crate::social::p8_key(&aws_lc_rs::signature::ECDSA_P256_SHA256_FIXED_SIGNING);
    let mut values = form_values(&page, action);
    set(&mut values, "enabled", "true");
    set(&mut values, "client_id", "com.example.signin");
    set(&mut values, "apple.team_id", "ABCDE12345");
    set(&mut values, "apple.key_id", "KEY0123456");
    // As a browser sends a text area's lines.
    set(&mut values, "apple.private_key", &key.replace('\n', "\r\n"));
    let page = post_values(&mut b, action, &values);
    page.expect(200, "Confirm it is you");
    b.post(
        "/console/reauth",
        &[
            ("csrf", &page.csrf_for("/console/reauth")),
            ("password", PASSWORD),
            ("back", action),
        ],
    )
    .redirect(action);
    post_values(&mut b, action, &values).redirect(&format!("{action}?done=1"));
    let api = "/v1/auth/dashboard/tenants/mfa-co/settings/social/apple";
    let (_, apple) = srv.dash_json("GET", api, &s, None);
    assert_eq!(apple["enabled"], true, "{apple}");
    assert_eq!(apple["apple"]["team_id"], "ABCDE12345");
    assert_eq!(apple["apple"]["private_key_set"], true);
    let page = b.get(action);
    let body_line = key.lines().nth(1).unwrap();
    assert!(!page.body.contains(body_line), "the key is never shown");
    page.expect(200, "value=\"KEY0123456\"");
    // Saved again as shown (the key's input empty): the stored key stays.
    let values = form_values(&page, action);
    post_values(&mut b, action, &values).redirect(&format!("{action}?done=1"));
    let (_, again) = srv.dash_json("GET", api, &s, None);
    assert_eq!(again["apple"], apple["apple"], "{again}");
    assert_eq!(again["enabled"], true);

    // The wallet's trust anchors: JSON, shown as the API answers them; text that is not JSON
    // is refused beside the field and nothing is saved.
    let action = "/console/t/mfa-co/settings/eudi";
    let page = b.get(action);
    page.expect(200, "As JSON");
    let mut values = form_values(&page, action);
    set(&mut values, "trust_anchors", "[{\"issuer\": ");
    post_values(&mut b, action, &values)
        .expect(400, "must be JSON")
        .expect(400, "aria-invalid=\"true\"");
}

/// An owner runs an organization from the console: created (a refused name first), renamed,
/// someone invited by mail and a member removed; a domain claimed, refused until its TXT
/// record is published, proven, set to add its people and to single sign-on only; an OpenID
/// connection added (its discovery read, its secret never shown), turned off and deleted, a
/// SAML one refused for metadata that cannot be read; a viewer reads without forms; the
/// organization deleted after the password again. What each form did is
/// read back through the management API.
#[test]
fn an_owner_runs_an_organization_with_its_domains_and_single_sign_on_from_the_console() {
    use crate::organizations::{key_of, DnsStub};
    use crate::social_signin::{Stub, OIDC_SECRET};
    let dns = DnsStub::start();
    let op = Stub::start();
    let ns = format!("[\"{}\"]", dns.addr);
    let (smtp, srv, api, s) = crate::support::user_setup(
        "Org Console",
        &[
            ("TESSERA__DNS__NAMESERVERS", ns.as_str()),
            ("TESSERA__SSO__ALLOW_PRIVATE_TARGETS", "true"),
        ],
    );
    let key = key_of(&srv, &s, &api.slug, "admin");
    let mut b = Browser::new(&srv);
    b.sign_in_as(&api.owner, PASSWORD).redirect("/console");
    let base = format!("/console/t/{}/organizations", api.slug);
    let page = b.get(&format!("/console/t/{}", api.slug));
    assert!(
        page.body.contains(&format!("href=\"{base}\"")),
        "{}",
        page.body
    );
    let page = b.get(&base);
    page.expect(200, "No organization yet.");

    // Created: a name of nothing is refused with its reason, then one is made.
    let create = format!("{base}/create");
    let csrf = page.csrf_for(&create);
    b.post(
        &create,
        &[("csrf", &csrf), ("name", "  "), ("external_id", "")],
    )
    .expect(400, "Not accepted")
    .alert()
    .contains("name must be 1-200 characters")
    .then_some(())
    .expect("the name's rule");
    let made = b.post(
        &create,
        &[
            ("csrf", &csrf),
            ("name", "Contoso"),
            ("external_id", "crm-42"),
        ],
    );
    assert_eq!(made.status, 303, "{}", made.body);
    let done = made.header("location").to_owned();
    let here = done.strip_suffix("?done=created").unwrap().to_owned();
    let org = here.rsplit('/').next().unwrap().to_owned();
    let api_org = format!("/v1/management/organizations/{org}");
    assert_eq!(key.get(&api_org, None).expect(200)["external_id"], "crm-42");
    let page = b.get(&done);
    page.expect(200, "The organization is created.")
        .expect(200, "crm-42")
        .expect(200, "No member yet.");
    b.get(&base).expect(200, &format!("href=\"{here}\""));
    // Another spelling of the id (upper case) shows the same page, its forms at the
    // organization's own spelling.
    let upper = format!("{base}/{}", org.to_uppercase());
    b.get(&upper)
        .expect(200, &format!("action=\"{here}/rename\""));

    // Renamed; a refused name is shown again as typed, with its reason beside it.
    let rename = format!("{here}/rename");
    b.post(
        &rename,
        &[("csrf", &page.csrf_for(&rename)), ("name", "Contoso Ltd")],
    )
    .redirect(&format!("{here}?done=renamed"));
    assert_eq!(key.get(&api_org, None).expect(200)["name"], "Contoso Ltd");
    let long = "x".repeat(201);
    let refused = b.post(
        &rename,
        &[("csrf", &page.csrf_for(&rename)), ("name", &long)],
    );
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains(&format!("value=\"{long}\"")));
    assert!(refused.body.contains("aria-invalid=\"true\""));

    // Invited by mail; a member added by the API is removed from the page.
    let invite = format!("{here}/invite");
    let csrf = page.csrf_for(&invite);
    let refused = b.post(
        &invite,
        &[("csrf", &csrf), ("email", "nope"), ("role", "member")],
    );
    assert_eq!(
        refused.alert(),
        "Not accepted: email must be an e-mail address"
    );
    assert!(refused.body.contains("value=\"nope\""), "{}", refused.body);
    b.post(
        &invite,
        &[
            ("csrf", &csrf),
            ("email", "new@contoso.example"),
            ("role", "admin"),
        ],
    )
    .redirect(&format!("{here}?done=invited"));
    smtp.wait_for(
        &api.slug,
        "organization_invitation",
        "new@contoso.example",
        1,
    );
    let member = api.verified_user(&smtp, "kim@contoso.example", crate::support::USER_PASSWORD);
    let kim = member.body["user"]["id"].as_str().unwrap().to_owned();
    key.post(
        &format!("{api_org}/members"),
        Some(&json!({ "user_id": kim })),
    )
    .expect(201);
    let page = b.get(&here);
    page.expect(200, "new@contoso.example")
        .expect(200, "kim@contoso.example");
    let remove = format!("{here}/members/{kim}/remove");
    b.post(&remove, &[("csrf", &page.csrf_for(&remove))])
        .redirect(&format!("{here}?done=removed"));
    let members = key.get(&format!("{api_org}/members"), None);
    assert_eq!(members.expect(200)["data"], json!([]));

    // A domain: claimed, refused until its record is published, then proven and set.
    let add = format!("{here}/add-domain");
    b.post(
        &add,
        &[
            ("csrf", &page.csrf_for(&add)),
            ("domain", "contoso.example"),
        ],
    )
    .redirect(&format!("{here}?done=domain-added"));
    let claims = key
        .get(&format!("{api_org}/domains"), None)
        .expect(200)
        .clone();
    let claim = &claims["data"][0];
    let (txt_name, txt_value) = (
        claim["txt_name"].as_str().unwrap(),
        claim["txt_value"].as_str().unwrap(),
    );
    let page = b.get(&format!("{here}?done=domain-added"));
    page.expect(200, "Publish its TXT record")
        .expect(200, txt_name)
        .expect(200, txt_value);
    let domain = format!("{here}/domains/contoso.example");
    let verify = format!("{domain}/verify");
    let unproven = b.post(&verify, &[("csrf", &page.csrf_for(&verify))]);
    assert_eq!(unproven.status, 400);
    assert!(
        unproven
            .alert()
            .contains(&format!("{txt_name} holds {txt_value}")),
        "{}",
        unproven.body
    );
    dns.publish(txt_name, txt_value);
    b.post(&verify, &[("csrf", &page.csrf_for(&verify))])
        .redirect(&format!("{here}?done=domain-verified"));
    let page = b.get(&here);
    assert!(
        !page.body.contains(&format!("action=\"{verify}\"")),
        "{}",
        page.body
    );
    for what in ["auto-join-on", "sso-only-on"] {
        let to = format!("{domain}/{what}");
        b.post(&to, &[("csrf", &page.csrf_for(&to))])
            .redirect(&format!("{here}?done=domain-changed"));
    }
    let claim = key.get(&format!("{api_org}/domains"), None).expect(200)["data"][0].clone();
    assert_eq!(
        (&claim["verified"], &claim["auto_join"], &claim["sso_only"]),
        (&json!(true), &json!(true), &json!(true)),
        "{claim}"
    );

    // Connections: a SAML one whose metadata cannot be read is refused with the reason; an
    // OpenID one is added, shown without its secret, turned off and deleted.
    let page = b.get(&here);
    let connect = format!("{here}/add-connection");
    let csrf = page.csrf_for(&connect);
    let refused = b.post(
        &connect,
        &[
            ("csrf", &csrf),
            ("type", "saml"),
            ("name", "Contoso IdP"),
            ("metadata_url", &format!("{}/no-metadata-here", op.base)),
            ("metadata_xml", ""),
        ],
    );
    assert_eq!(refused.status, 400);
    assert!(
        refused.alert().contains("metadata could not be read"),
        "{}",
        refused.body
    );
    assert!(refused
        .body
        .contains(&format!("value=\"{}/no-metadata-here\"", op.base)));
    // An OpenID one refused: what was typed comes back, but never the secret.
    let refused = b.post(
        &connect,
        &[
            ("csrf", &csrf),
            ("type", "oidc"),
            ("name", "Contoso OP"),
            ("issuer", "not an address"),
            ("client_id", "tessera-sso"),
            ("client_secret", OIDC_SECRET),
        ],
    );
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("value=\"not an address\""));
    assert!(refused.body.contains("value=\"tessera-sso\""));
    assert!(!refused.body.contains(OIDC_SECRET));
    b.post(
        &connect,
        &[
            ("csrf", &csrf),
            ("type", "oidc"),
            ("name", "Contoso OP"),
            ("issuer", &op.base),
            ("client_id", "tessera-sso"),
            ("client_secret", OIDC_SECRET),
        ],
    )
    .redirect(&format!("{here}?done=connection-added"));
    let listed = key
        .get(&format!("{api_org}/connections"), None)
        .expect(200)
        .clone();
    let conn = listed["data"][0].clone();
    let page = b.get(&here);
    page.expect(200, "Contoso OP")
        .expect(200, "OpenID Connect")
        .expect(200, conn["oidc"]["redirect_uri"].as_str().unwrap())
        .expect(200, conn["start_url"].as_str().unwrap());
    assert!(!page.body.contains(OIDC_SECRET));
    let id = conn["id"].as_str().unwrap();
    let off = format!("{here}/connections/{id}/disable");
    b.post(&off, &[("csrf", &page.csrf_for(&off))])
        .redirect(&format!("{here}?done=connection-changed"));
    let one = format!("{api_org}/connections/{id}");
    assert_eq!(key.get(&one, None).expect(200)["enabled"], false);
    let page = b.get(&here);
    let gone = format!("{here}/connections/{id}/delete");
    b.post(&gone, &[("csrf", &page.csrf_for(&gone))])
        .redirect(&format!("{here}?done=connection-deleted"));
    key.get(&one, None).expect_error(404, "resource/not_found");

    // A viewer reads the page without a form, and a write is refused.
    srv.add_viewer(&smtp, &s, &api.slug);
    let mut v = Browser::new(&srv);
    v.sign_in_as("viewer@example.com", PASSWORD)
        .redirect("/console");
    let page = v.get(&here);
    page.expect(200, "Contoso Ltd")
        .expect(200, "contoso.example");
    assert!(
        !page.body.contains("method=\"post\" action=\"/console/t/"),
        "{}",
        page.body
    );
    assert!(!v.get(&base).body.contains(&create));
    // Without a form of their own, the owner's form value is refused (it is bound to the
    // owner's browser and session), and nothing changes.
    let owners = b.get(&here).csrf_for(&rename);
    let refused = v.post(&rename, &[("csrf", &owners), ("name", "Mine now")]);
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(key.get(&api_org, None).expect(200)["name"], "Contoso Ltd");

    // Deleted, after the password again.
    let page = b.get(&here);
    let delete = format!("{here}/delete");
    let page = b.post(&delete, &[("csrf", &page.csrf_for(&delete))]);
    page.expect(200, "Confirm it is you");
    b.post(
        "/console/reauth",
        &[
            ("csrf", &page.csrf_for("/console/reauth")),
            ("password", PASSWORD),
            ("back", &here),
        ],
    )
    .redirect(&here);
    let page = b.get(&here);
    b.post(&delete, &[("csrf", &page.csrf_for(&delete))])
        .redirect(&format!("{base}?done=deleted"));
    b.get(&format!("{base}?done=deleted"))
        .expect(200, "The organization is deleted.")
        .expect(200, "No organization yet.");
    key.get(&api_org, None)
        .expect_error(404, "resource/not_found");
    b.get(&here).expect(404, "Not found");
}
