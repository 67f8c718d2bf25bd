//! The hosted page of an organization's invitation, `/join-organization?token=`, over plain
//! HTTP as a browser sends it: an admin (a management key) creates an organization and invites
//! an address; the mailed link's page shows the organization, the address and the role; GET
//! uses nothing; a POST without the page's CSRF value changes nothing; an address without an
//! account chooses its password on the page and joins, and signs in with it; a confirmed
//! account joins with one button and keeps its password; a used link's page says so.

use serde_json::{json, Value};

use crate::oauth_browser::{Browser, Page};
use crate::support::*;

/// The organization every test here creates.
pub(crate) const ORG: &str = "Acme Widgets";

/// A tenant with mail, an admin management key and one organization: what an invitation
/// needs.
pub(crate) struct World {
    pub smtp: SmtpStub,
    pub srv: TestServer,
    pub api: UserApi,
    pub owner: Session,
    key: String,
    pub org: String,
}

impl World {
    /// A tenant named `tenant` with the organization [`ORG`].
    pub(crate) fn start(tenant: &str) -> Self {
        let (smtp, srv, api, owner) = user_setup(tenant, &[]);
        srv.reauth(&owner, PASSWORD);
        let (st, body) = srv.dash_json(
            "POST",
            &format!("/v1/auth/dashboard/tenants/{}/management-keys", api.slug),
            &owner,
            Some(&json!({"name": "back end", "role": "admin"})),
        );
        assert_eq!(st, 201, "{body}");
        let key = body["key"].as_str().expect("key").to_owned();
        let mut world = World {
            smtp,
            srv,
            api,
            owner,
            key,
            org: String::new(),
        };
        let created = world
            .manage(
                "POST",
                "/v1/management/organizations",
                Some(&json!({"name": ORG})),
            )
            .expect(201)
            .clone();
        world.org = created["id"].as_str().expect("id").to_owned();
        world
    }

    /// A request of the tenant's back end, with its management key.
    pub(crate) fn manage(&self, method: &str, path: &str, body: Option<&Value>) -> AuthAnswer {
        let mut req = self
            .srv
            .client
            .request(method.parse().unwrap(), self.srv.url(path))
            .bearer_auth(&self.key);
        if let Some(b) = body {
            req = req.json(b);
        }
        AuthAnswer::read(req.send().unwrap())
    }

    /// Invites `email` to the organization with `role` and answers the URL of the page the
    /// `n`-th invitation mail to it links to.
    pub(crate) fn invite(&self, email: &str, role: &str, n: usize) -> String {
        let path = format!("/v1/management/organizations/{}/invitations", self.org);
        let r = self.manage("POST", &path, Some(&json!({"email": email, "role": role})));
        assert_eq!(r.expect(201)["email"], email, "{}", r.body);
        let token = mailed_link_token(
            &self.smtp,
            &self.api,
            "organization_invitation",
            "join-organization",
            email,
            n,
        );
        format!("{}/join-organization?token={token}", self.srv.base)
    }

    /// The organization's members: each user id with its address and role.
    pub(crate) fn members(&self) -> Vec<(String, String, String)> {
        let path = format!("/v1/management/organizations/{}/members", self.org);
        let r = self.manage("GET", &path, None);
        let field = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        r.expect(200)["data"]
            .as_array()
            .unwrap_or_else(|| panic!("no data in {}", r.body))
            .iter()
            .map(|m| (field(&m["user_id"]), field(&m["email"]), field(&m["role"])))
            .collect()
    }
}

#[track_caller]
fn expect_page(page: &Page, status: u16, says: &[&str]) {
    assert_eq!(page.status, status, "{}", page.body);
    assert!(
        page.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html"),
        "{:?}",
        page.headers
    );
    for s in says {
        assert!(page.body.contains(s), "{s:?} not in {}", page.body);
    }
}

#[test]
fn a_new_address_chooses_its_password_on_the_page_and_joins_once() {
    let w = World::start("Join Co");
    let email = "newbie@example.com";
    let url = w.invite(email, "admin", 1);
    let mut b = Browser::new();

    // The page shows who invites whom with which role, and asks for a password twice; looking
    // twice uses nothing.
    for _ in 0..2 {
        let page = b.get(&url);
        expect_page(
            &page,
            200,
            &[
                "Invitation to Acme Widgets",
                "Acme Widgets invites newbie@example.com to join it on Join Co, with the role admin.",
                "name=\"password\"",
                "name=\"password_confirm\"",
                "Create my account and join",
            ],
        );
        assert_eq!(page.headers["cache-control"], "no-store");
        assert!(page.headers["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("frame-ancestors 'none'"));
    }
    let csrf = b.get(&url).hidden("csrf", 0);
    // Another language, by the reader's choice.
    let page = b.get(&format!("{url}&lang=de"));
    expect_page(&page, 200, &["Einladung zu Acme Widgets"]);

    // Without the page's CSRF value: refused, nothing used or made.
    let refused = b.post(
        &url,
        &[
            ("password", NEW_USER_PASSWORD),
            ("password_confirm", NEW_USER_PASSWORD),
        ],
    );
    expect_page(&refused, 403, &["The page has expired"]);
    let forged = Browser::new().post(
        &url,
        &[
            ("csrf", &csrf),
            ("password", NEW_USER_PASSWORD),
            ("password_confirm", NEW_USER_PASSWORD),
        ],
    );
    expect_page(&forged, 403, &["The page has expired"]);
    w.api
        .login(email, NEW_USER_PASSWORD)
        .expect_error(401, "auth/invalid_credentials");
    assert!(w.members().is_empty());

    // The new password's rules, with the errors next to the fields.
    let short = b.post(
        &url,
        &[
            ("csrf", &csrf),
            ("password", "short"),
            ("password_confirm", "short"),
        ],
    );
    expect_page(
        &short,
        400,
        &[
            "You have not joined yet",
            "The password must be 12 to 128 characters long.",
        ],
    );
    let mismatch = b.post(
        &url,
        &[
            ("csrf", &csrf),
            ("password", NEW_USER_PASSWORD),
            ("password_confirm", "another long passphrase"),
        ],
    );
    expect_page(&mismatch, 400, &["The two passwords are not the same."]);
    assert!(w.members().is_empty());

    // Joined: the account is made with that password, a member with the invitation's role.
    let done = b.post(
        &url,
        &[
            ("csrf", &csrf),
            ("password", NEW_USER_PASSWORD),
            ("password_confirm", NEW_USER_PASSWORD),
        ],
    );
    expect_page(
        &done,
        200,
        &[
            "You joined Acme Widgets",
            "You can sign in now with newbie@example.com and the password you chose.",
        ],
    );
    let user = w.api.login_ok(email, NEW_USER_PASSWORD);
    assert_eq!(
        w.members(),
        vec![(user_id(&user), email.to_owned(), "admin".to_owned())]
    );
    assert_eq!(w.api.me(&user.access).expect(200)["email_verified"], true);

    // The link is used up: its page says so, and posting it again does nothing.
    expect_page(&b.get(&url), 410, &["This link no longer works"]);
    let again = b.post(
        &url,
        &[
            ("csrf", &csrf),
            ("password", "yet another passphrase"),
            ("password_confirm", "yet another passphrase"),
        ],
    );
    expect_page(&again, 410, &["This link no longer works"]);
    w.api.login_ok(email, NEW_USER_PASSWORD);

    // A token that names no tenant is not a link at all.
    let page = b.get(&format!(
        "{}/join-organization?token=00000000-0000-7000-8000-000000000000.x",
        w.srv.base
    ));
    expect_page(&page, 400, &["This link is not valid"]);
}

#[test]
fn a_confirmed_account_joins_with_one_button_and_keeps_its_password() {
    let w = World::start("Join Again");
    let app = "https://app.example.test/welcome";
    let (st, body) = w.srv.dash_json(
        "PUT",
        &format!("/v1/auth/dashboard/tenants/{}/settings/urls", w.api.slug),
        &w.owner,
        Some(&json!({"site_url": app, "redirect_urls": []})),
    );
    assert_eq!(st, 200, "{body}");
    let email = "regular@example.com";
    let user = w.api.verified_user(&w.smtp, email, USER_PASSWORD);
    let url = w.invite(email, "member", 1);
    let mut b = Browser::new();

    let page = b.get(&url);
    expect_page(
        &page,
        200,
        &[
            "Acme Widgets invites regular@example.com to join it on Join Again, with the role member.",
            "regular@example.com already has a Join Again account",
            "Join Acme Widgets",
        ],
    );
    assert!(!page.body.contains("name=\"password\""), "{}", page.body);
    let csrf = page.hidden("csrf", 0);
    expect_page(&b.post(&url, &[]), 403, &["The page has expired"]);
    assert!(w.members().is_empty());

    // A password sent anyway is not taken: the page decides, not the form.
    let done = b.post(
        &url,
        &[
            ("csrf", &csrf),
            ("password", NEW_USER_PASSWORD),
            ("password_confirm", NEW_USER_PASSWORD),
        ],
    );
    expect_page(
        &done,
        200,
        &[
            "You joined Acme Widgets",
            "You can sign in now, as before.",
            &format!("href=\"{app}\""),
            "Continue to Join Again",
        ],
    );
    assert_eq!(
        w.members(),
        vec![(user_id(&user), email.to_owned(), "member".to_owned())]
    );
    w.api.login_ok(email, USER_PASSWORD);
    w.api
        .login(email, NEW_USER_PASSWORD)
        .expect_error(401, "auth/invalid_credentials");
    expect_page(&b.get(&url), 410, &["This link no longer works"]);
}
