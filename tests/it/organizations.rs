//! Organizations through the real binary: the tenant's admins manage them with a management
//! key or a dashboard session (the same routes twice), members work in one at a time with
//! its claims in their access tokens, a membership that ends ends the sessions working in it,
//! and a mailed invitation proves its address under the credential inventory's rules (a
//! squatter's unconfirmed account is recovered, a confirmed one is never handed over).

use serde_json::{json, Value};

use crate::support::*;

/// A management key and the server it is for: its requests.
pub(crate) struct Keyed<'a> {
    srv: &'a TestServer,
    key: String,
}

impl Keyed<'_> {
    pub(crate) fn send(&self, method: &str, path: &str, body: Option<&Value>) -> AuthAnswer {
        with_key(self.srv, &self.key, method, path, body)
    }
    pub(crate) fn get(&self, path: &str, body: Option<&Value>) -> AuthAnswer {
        self.send("GET", path, body)
    }
    pub(crate) fn post(&self, path: &str, body: Option<&Value>) -> AuthAnswer {
        self.send("POST", path, body)
    }
    pub(crate) fn put(&self, path: &str, body: Option<&Value>) -> AuthAnswer {
        self.send("PUT", path, body)
    }
    pub(crate) fn patch(&self, path: &str, body: Option<&Value>) -> AuthAnswer {
        self.send("PATCH", path, body)
    }
    pub(crate) fn delete(&self, path: &str, body: Option<&Value>) -> AuthAnswer {
        self.send("DELETE", path, body)
    }
}

/// A management key of `role` for the tenant of `s`'s owner.
pub(crate) fn key_of<'a>(srv: &'a TestServer, s: &Session, slug: &str, role: &str) -> Keyed<'a> {
    srv.reauth(s, PASSWORD);
    let r = srv.dash(
        "POST",
        &format!("/v1/auth/dashboard/tenants/{slug}/management-keys"),
        s,
        Some(&json!({ "name": format!("{role} key"), "role": role })),
    );
    assert_eq!(r.status().as_u16(), 201);
    let body: Value = r.json().unwrap();
    Keyed {
        srv,
        key: body["key"].as_str().expect("key").to_owned(),
    }
}

pub(crate) fn create_org(key: &Keyed, name: &str) -> String {
    let r = key.post(
        "/v1/management/organizations",
        Some(&json!({ "name": name })),
    );
    r.expect(201)["id"].as_str().expect("id").to_owned()
}

/// The user id of a token pair.
fn user_id(t: &UserTokens) -> String {
    t.body["user"]["id"].as_str().expect("user id").to_owned()
}

/// A switch into `org` with the pair's current refresh token.
fn switch(api: &UserApi, t: &UserTokens, org: &str) -> AuthAnswer {
    api.send(
        "POST",
        &format!("/v1/auth/organizations/{org}/switch"),
        Some(&t.access),
        Some(&json!({ "refresh_token": t.refresh })),
    )
}

#[test]
fn members_work_in_an_organization_with_its_claims_until_their_membership_ends() {
    let (smtp, srv, api, s) = user_setup("Orgs Co", &[]);
    let admin = key_of(&srv, &s, &api.slug, "admin");
    let viewer = key_of(&srv, &s, &api.slug, "viewer");

    // Bad input is named; a viewer key reads and does not write.
    admin
        .post(
            "/v1/management/organizations",
            Some(&json!({ "name": "  " })),
        )
        .expect_error(400, "validation/invalid_request");
    viewer
        .post(
            "/v1/management/organizations",
            Some(&json!({ "name": "Acme" })),
        )
        .expect_error(403, "management/forbidden");
    let org = create_org(&admin, "Acme");
    let r = viewer.get(&format!("/v1/management/organizations/{org}"), None);
    assert_eq!(r.expect(200)["name"], "Acme");
    admin
        .get("/v1/management/organizations/not-an-id", None)
        .expect_error(404, "resource/not_found");

    // A confirmed user joins with a role; an unconfirmed one cannot.
    let alice = api.verified_user(&smtp, "alice@example.com", USER_PASSWORD);
    let alice_id = user_id(&alice);
    let members = format!("/v1/management/organizations/{org}/members");
    admin
        .post(
            &members,
            Some(&json!({ "user_id": alice_id, "role": "nope" })),
        )
        .expect_error(400, "organization/unknown_role");
    let m = admin.post(
        &members,
        Some(&json!({ "user_id": alice_id, "role": "admin" })),
    );
    assert_eq!(m.expect(201)["role"], "admin", "{}", m.body);
    admin
        .post(&members, Some(&json!({ "user_id": alice_id })))
        .expect_error(409, "organization/already_member");
    let bob = api.register("bob@example.com", USER_PASSWORD);
    let bob_id = bob.expect(200)["user"]["id"].as_str().unwrap().to_owned();
    admin
        .post(&members, Some(&json!({ "user_id": bob_id })))
        .expect_error(409, "organization/email_unconfirmed");

    // A sign-in may ask for the organization: only one she belongs to.
    let login = |org_id: &str| {
        api.post_as(
            "/v1/auth/login",
            None,
            &json!({"email": "alice@example.com", "password": USER_PASSWORD, "organization_id": org_id}),
        )
    };
    let inside = UserTokens::from_answer(&login(&org));
    assert_eq!(
        inside.claims()["org_id"],
        org.as_str(),
        "{}",
        inside.claims()
    );
    assert_eq!(inside.claims()["org_role"], "admin");
    api.send("POST", "/v1/auth/logout", Some(&inside.access), None)
        .expect(204);
    let stranger = create_org(&admin, "Not Hers");
    login(&stranger).expect_error(404, "resource/not_found");
    login("not-an-id").expect_error(400, "validation/invalid_request");
    // A wrong password says nothing of the organization.
    api.post_as(
        "/v1/auth/login",
        None,
        &json!({"email": "alice@example.com", "password": "not her password at all", "organization_id": stranger}),
    )
    .expect_error(401, "auth/invalid_credentials");

    // Her list, then a switch: the new pair carries the organization's claims, and so does
    // every refresh while the membership lasts.
    let mine = api.send("GET", "/v1/auth/organizations", Some(&alice.access), None);
    let mine = mine.expect(200);
    assert_eq!(mine["data"][0]["id"], org.as_str(), "{mine}");
    assert_eq!(mine["data"][0]["active"], false);
    assert!(alice.claims().get("org_id").is_none(), "{}", alice.claims());
    // An access token alone gives no token pair: the switch is a refresh, with the
    // session's current refresh token.
    let path = format!("/v1/auth/organizations/{org}/switch");
    api.send("POST", &path, Some(&alice.access), Some(&json!({})))
        .expect_error(400, "validation/invalid_request");
    let elsewhere = api.login_ok("alice@example.com", USER_PASSWORD);
    let crossed = json!({ "refresh_token": elsewhere.refresh });
    api.send("POST", &path, Some(&alice.access), Some(&crossed))
        .expect_error(401, "auth/invalid_refresh_token");
    let switched = UserTokens::from_answer(&switch(&api, &alice, &org));
    let claims = switched.claims();
    assert_eq!(claims["org_id"], org.as_str(), "{claims}");
    assert_eq!(claims["org_role"], "admin");
    assert!(
        claims["org_permissions"]
            .as_array()
            .unwrap()
            .contains(&json!("members:manage")),
        "{claims}"
    );
    api.verify_access(&switched.access);
    // The switch rotated the session's refresh token.
    api.refresh(&alice.refresh).expect(200);
    let mine = api.send(
        "GET",
        "/v1/auth/organizations",
        Some(&switched.access),
        None,
    );
    assert_eq!(mine.expect(200)["data"][0]["active"], true);

    // A role of the tenant's own, then a role change: the next refresh says it.
    let role = admin.put(
        "/v1/management/organization-roles/billing",
        Some(&json!({ "permissions": ["invoices:read", "invoices:pay", "invoices:read"] })),
    );
    assert_eq!(
        role.expect(200)["permissions"],
        json!(["invoices:read", "invoices:pay"]),
        "{}",
        role.body
    );
    admin
        .put(
            "/v1/management/organization-roles/Bad",
            Some(&json!({ "permissions": [] })),
        )
        .expect_error(400, "validation/invalid_request");
    let r = admin.patch(
        &format!("{members}/{alice_id}"),
        Some(&json!({ "role": "billing" })),
    );
    assert_eq!(r.expect(200)["role"], "billing");
    admin
        .delete("/v1/management/organization-roles/billing", None)
        .expect_error(409, "organization/role_in_use");
    admin
        .delete("/v1/management/organization-roles/member", None)
        .expect_error(409, "organization/built_in_role");
    let refreshed = UserTokens::from_answer(&api.refresh(&switched.refresh));
    let claims = refreshed.claims();
    assert_eq!(claims["org_role"], "billing", "{claims}");
    assert_eq!(
        claims["org_permissions"],
        json!(["invoices:read", "invoices:pay"])
    );

    // Not a member, or no such organization: alike.
    let other = create_org(&admin, "Other");
    switch(&api, &refreshed, &other).expect_error(404, "resource/not_found");
    switch(&api, &refreshed, "00000000-0000-0000-0000-000000000000")
        .expect_error(404, "resource/not_found");

    // A second session of hers works in no organization and outlives the removal.
    let plain = api.login_ok("alice@example.com", USER_PASSWORD);
    admin
        .delete(&format!("{members}/{alice_id}"), None)
        .expect(204);
    api.me(&refreshed.access)
        .expect_error(401, "auth/invalid_token");
    api.refresh(&refreshed.refresh)
        .expect_error(401, "auth/invalid_refresh_token");
    api.me(&plain.access).expect(200);
    let mine = api.send("GET", "/v1/auth/organizations", Some(&plain.access), None);
    assert_eq!(mine.expect(200)["data"], json!([]));
    admin
        .delete(&format!("{members}/{alice_id}"), None)
        .expect_error(404, "resource/not_found");

    // The audit log says who did what.
    for event in [
        "organization.created",
        "organization.member.added",
        "organization.member.updated",
        "organization.member.removed",
        "organization.switched",
        "organization.role.saved",
    ] {
        assert!(
            !audit_events(&srv, &s, &api.slug, event).is_empty(),
            "no {event}"
        );
    }
    let removed = audit_events(&srv, &s, &api.slug, "organization.member.removed");
    assert_eq!(removed[0]["metadata"]["sessions_ended"], 1, "{removed:?}");
}

#[test]
fn the_dashboard_serves_the_same_routes_and_a_deletion_ends_what_the_organization_held() {
    let (smtp, srv, api, s) = user_setup("Dash Orgs", &[]);
    let base = format!("/v1/auth/dashboard/tenants/{}/organizations", api.slug);
    let r = srv.dash(
        "POST",
        &base,
        &s,
        Some(&json!({ "name": "Globex", "external_id": "crm-1" })),
    );
    assert_eq!(r.status().as_u16(), 201);
    let org: Value = r.json().unwrap();
    let org_id = org["id"].as_str().unwrap().to_owned();
    let r = srv.dash(
        "POST",
        &base,
        &s,
        Some(&json!({ "name": "Globex 2", "external_id": "crm-1" })),
    );
    assert_eq!(r.status().as_u16(), 409);
    let list: Value = srv.dash("GET", &base, &s, None).json().unwrap();
    assert_eq!(list["data"][0]["external_id"], "crm-1", "{list}");
    // An external id freed by a change (or a deletion, below) may be taken again.
    let r = srv.dash(
        "PATCH",
        &format!("{base}/{org_id}"),
        &s,
        Some(&json!({ "external_id": "crm-2" })),
    );
    assert_eq!(r.status().as_u16(), 200);
    let r = srv.dash(
        "POST",
        &base,
        &s,
        Some(&json!({ "name": "Globex 2", "external_id": "crm-1" })),
    );
    assert_eq!(r.status().as_u16(), 201);
    let r = srv.dash(
        "POST",
        &base,
        &s,
        Some(&json!({ "name": "Globex 3", "external_id": "crm-2" })),
    );
    assert_eq!(r.status().as_u16(), 409);

    // Another tenant's key sees nothing of it.
    let (srv2_api, s2) = {
        let other = UserApi::signup(&srv, "Elsewhere", "owner2@example.com");
        let s2 = srv.login(&other.owner, PASSWORD);
        (other, s2)
    };
    let foreign = key_of(&srv, &s2, &srv2_api.slug, "admin");
    foreign
        .get(&format!("/v1/management/organizations/{org_id}"), None)
        .expect_error(404, "resource/not_found");

    let carol = api.verified_user(&smtp, "carol@example.com", USER_PASSWORD);
    let carol_id = user_id(&carol);
    let r = srv.dash(
        "POST",
        &format!("{base}/{org_id}/members"),
        &s,
        Some(&json!({ "user_id": carol_id, "role": "member" })),
    );
    assert_eq!(r.status().as_u16(), 201);
    let inside = UserTokens::from_answer(&switch(&api, &carol, &org_id));

    // The export lists the membership.
    let token = api.password_step_up(&inside.access);
    let export = api.send_with(
        "GET",
        "/v1/users/me/export",
        Some(&inside.access),
        None,
        &[(STEP_UP_HEADER, &token)],
    );
    let export = export.expect(200);
    assert_eq!(
        export["organizations"][0]["organization_id"],
        org_id.as_str(),
        "{export}"
    );
    assert_eq!(export["organizations"][0]["role"], "member");

    // Deleting needs a fresh re-authentication on the dashboard; then the session working
    // in the organization ends, the membership with it.
    srv.reauth(&s, PASSWORD);
    let r = srv.dash("DELETE", &format!("{base}/{org_id}"), &s, None);
    assert_eq!(r.status().as_u16(), 204);
    api.me(&inside.access)
        .expect_error(401, "auth/invalid_token");
    let again = api.login_ok("carol@example.com", USER_PASSWORD);
    let mine = api.send("GET", "/v1/auth/organizations", Some(&again.access), None);
    assert_eq!(mine.expect(200)["data"], json!([]));
    let r = srv.dash("GET", &format!("{base}/{org_id}"), &s, None);
    assert_eq!(r.status().as_u16(), 404);
    let r = srv.dash(
        "POST",
        &base,
        &s,
        Some(&json!({ "name": "Globex 3", "external_id": "crm-2" })),
    );
    assert_eq!(r.status().as_u16(), 201);
}

#[test]
fn an_invitation_makes_an_account_once_and_never_hands_over_a_confirmed_one() {
    let (smtp, srv, api, s) = user_setup("Invites Co", &[]);
    let admin = key_of(&srv, &s, &api.slug, "admin");
    let org = create_org(&admin, "Initech");
    let invites = format!("/v1/management/organizations/{org}/invitations");

    // A new address: the mail carries a link to the hosted page; the preview asks for a
    // password; the acceptance makes the account, confirmed, and the membership.
    let r = admin.post(
        &invites,
        Some(&json!({ "email": "New@Example.com", "role": "admin" })),
    );
    assert_eq!(r.expect(201)["email"], "new@example.com", "{}", r.body);
    let mail = smtp.wait_for(&api.slug, "organization_invitation", "new@example.com", 1);
    assert!(mail.text.contains("Initech"), "{}", mail.text);
    let token = mail
        .token_after(&api.link("join-organization"))
        .expect("a join-organization link");
    let listed = admin.get(&invites, None);
    assert_eq!(listed.expect(200)["data"][0]["role"], "admin");
    let p = api.post(
        "/v1/auth/organizations/invitations/preview",
        &json!({ "token": token }),
    );
    let p = p.expect(200);
    assert_eq!(
        (p["needs_password"].clone(), p["organization_name"].clone()),
        (json!(true), json!("Initech")),
        "{p}"
    );
    api.post(
        "/v1/auth/organizations/invitations/accept",
        &json!({ "token": token }),
    )
    .expect_error(400, "organization/password_required");
    api.post(
        "/v1/auth/organizations/invitations/accept",
        &json!({ "token": token, "password": "password1234" }),
    )
    .expect_error(400, "auth/weak_password");
    let a = api.post(
        "/v1/auth/organizations/invitations/accept",
        &json!({ "token": token, "password": NEW_USER_PASSWORD }),
    );
    let a = a.expect(200);
    assert_eq!(a["account_created"], true, "{a}");
    api.post(
        "/v1/auth/organizations/invitations/accept",
        &json!({ "token": token, "password": NEW_USER_PASSWORD }),
    )
    .expect_error(400, "auth/invalid_or_expired_token");
    let new = api.login_ok("new@example.com", NEW_USER_PASSWORD);
    assert_eq!(new.body["user"]["email_verified"], true);
    let joined = UserTokens::from_answer(&switch(&api, &new, &org));
    assert_eq!(joined.claims()["org_role"], "admin");
    assert_eq!(admin.get(&invites, None).expect(200)["data"], json!([]));

    // A confirmed account: the link needs no password and sets none.
    let dave = api.verified_user(&smtp, "dave@example.com", USER_PASSWORD);
    admin
        .post(&invites, Some(&json!({ "email": "dave@example.com" })))
        .expect(201);
    let mail = smtp.wait_for(&api.slug, "organization_invitation", "dave@example.com", 1);
    let token = mail.token_after(&api.link("join-organization")).unwrap();
    let p = api.post(
        "/v1/auth/organizations/invitations/preview",
        &json!({ "token": token }),
    );
    assert_eq!(p.expect(200)["needs_password"], false);
    api.post(
        "/v1/auth/organizations/invitations/accept",
        &json!({ "token": token, "password": NEW_USER_PASSWORD }),
    )
    .expect_error(400, "organization/password_not_wanted");
    let a = api.post(
        "/v1/auth/organizations/invitations/accept",
        &json!({ "token": token }),
    );
    assert_eq!(a.expect(200)["account_created"], false);
    api.login_ok("dave@example.com", USER_PASSWORD);
    api.login("dave@example.com", NEW_USER_PASSWORD)
        .expect_error(401, "auth/invalid_credentials");
    switch(&api, &dave, &org).expect(200);

    // An invitation replaced is dead; a withdrawn one too; a member is not invited again.
    admin
        .post(&invites, Some(&json!({ "email": "dave@example.com" })))
        .expect_error(409, "organization/already_member");
    admin
        .post(&invites, Some(&json!({ "email": "eve@example.com" })))
        .expect(201);
    admin
        .post(
            &invites,
            Some(&json!({ "email": "eve@example.com", "role": "owner" })),
        )
        .expect(201);
    // The two mails may arrive in either order: of their links, the replaced one is dead and
    // the other carries the second invitation's role.
    smtp.wait_for(&api.slug, "organization_invitation", "eve@example.com", 2);
    let preview = |token: &str| {
        api.post(
            "/v1/auth/organizations/invitations/preview",
            &json!({ "token": token }),
        )
    };
    let tokens: Vec<String> = smtp
        .mails_of(&api.slug, "organization_invitation", "eve@example.com")
        .iter()
        .map(|m| m.token_after(&api.link("join-organization")).unwrap())
        .collect();
    let answers: Vec<AuthAnswer> = tokens.iter().map(|t| preview(t)).collect();
    let live: Vec<&AuthAnswer> = answers.iter().filter(|a| a.status == 200).collect();
    assert_eq!(live.len(), 1, "one live link of two");
    assert_eq!(live[0].body["role"], "owner");
    let dead = answers.iter().find(|a| a.status != 200).unwrap();
    dead.expect_error(400, "auth/invalid_or_expired_token");
    admin
        .delete(&format!("{invites}/eve@example.com"), None)
        .expect(204);
    for t in &tokens {
        preview(t).expect_error(400, "auth/invalid_or_expired_token");
    }
}

#[test]
fn an_invitation_to_an_address_a_squatter_registered_recovers_the_account() {
    let (smtp, srv, api, s) = user_setup("Squat Orgs", &[]);
    let admin = key_of(&srv, &s, &api.slug, "admin");
    let org = create_org(&admin, "Hooli");
    let squatter = crate::recovery::squatter(&srv, &s, &api);
    api.me(&squatter).expect(200);
    let invites = format!("/v1/management/organizations/{org}/invitations");
    admin
        .post(&invites, Some(&json!({ "email": "victim@example.com" })))
        .expect(201);
    let mail = smtp.wait_for(
        &api.slug,
        "organization_invitation",
        "victim@example.com",
        1,
    );
    let token = mail.token_after(&api.link("join-organization")).unwrap();

    // The owner of the mailbox: the account is hers, with nothing of the squatter's.
    let p = api.post(
        "/v1/auth/organizations/invitations/preview",
        &json!({ "token": token }),
    );
    assert_eq!(p.expect(200)["needs_password"], true);
    let a = api.post(
        "/v1/auth/organizations/invitations/accept",
        &json!({ "token": token, "password": NEW_USER_PASSWORD }),
    );
    assert_eq!(a.expect(200)["account_created"], false, "{}", a.body);
    api.me(&squatter).expect_error(401, "auth/invalid_token");
    api.login("victim@example.com", USER_PASSWORD)
        .expect_error(401, "auth/invalid_credentials");
    let owner = api.login_ok("victim@example.com", NEW_USER_PASSWORD);
    assert_eq!(owner.body["user"]["email_verified"], true);
    switch(&api, &owner, &org).expect(200);
    let events = audit_events(&srv, &s, &api.slug, "auth.account.recovered");
    assert_eq!(
        events[0]["metadata"]["via"], "organization_invitation",
        "{events:?}"
    );

    // Her erasure takes the membership with it.
    let id = user_id(&owner);
    admin
        .delete(&format!("/v1/management/users/{id}"), None)
        .expect(204);
    let members = admin.get(&format!("/v1/management/organizations/{org}/members"), None);
    assert_eq!(members.expect(200)["data"], json!([]));
}

#[test]
fn a_tier_bounds_the_organizations_of_a_tenant() {
    let (_smtp, srv, api, s) = user_setup("Bounded Orgs", &[]);
    let admin = key_of(&srv, &s, &api.slug, "admin");
    for i in 0..100 {
        create_org(&admin, &format!("Org {i}"));
    }
    admin
        .post(
            "/v1/management/organizations",
            Some(&json!({ "name": "One more" })),
        )
        .expect_error(409, "organization/limit_reached");
    // Paging walks them all, newest first.
    let mut seen = 0;
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/v1/management/organizations?limit=40&cursor={c}"),
            None => "/v1/management/organizations?limit=40".to_owned(),
        };
        let page = admin.get(&path, None);
        let page = page.expect(200);
        seen += page["data"].as_array().unwrap().len();
        match page["pagination"]["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen, 100);
}

/// The free tier's 100 members an organization: the 101st is refused; after a removal one
/// more joins, and the next is refused again (the count follows joins and removals, also
/// when it is kept between them).
#[test]
fn a_tier_bounds_the_members_of_an_organization_through_joins_and_removals() {
    let (_smtp, srv, api, s) = user_setup("Bounded Members", &[]);
    let admin = key_of(&srv, &s, &api.slug, "admin");
    let org = create_org(&admin, "Crowded");
    let members = format!("/v1/management/organizations/{org}/members");
    let user = |i: usize| {
        let r = admin.post(
            "/v1/management/users",
            Some(&json!({ "email": format!("m{i}@crowded.example"), "email_verified": true })),
        );
        r.expect(201)["id"].as_str().unwrap().to_owned()
    };
    let users: Vec<String> = (0..102).map(user).collect();
    for u in &users[..100] {
        admin
            .post(&members, Some(&json!({ "user_id": u })))
            .expect(201);
    }
    let join = |u: &str| admin.post(&members, Some(&json!({ "user_id": u })));
    join(&users[100]).expect_error(409, "organization/limit_reached");
    admin
        .delete(&format!("{members}/{}", users[0]), None)
        .expect(204);
    join(&users[100]).expect(201);
    join(&users[101]).expect_error(409, "organization/limit_reached");
    join(&users[0]).expect_error(409, "organization/limit_reached");
}

#[test]
fn an_oauth_client_asks_for_an_organization_of_the_users_and_its_tokens_carry_it() {
    use crate::oauth::{authorize, consent, query_of, register_client, Flow, VERIFIER};
    let (smtp, srv, api, s) = user_setup("OAuth Orgs", &[]);
    let admin = key_of(&srv, &s, &api.slug, "admin");
    let org = create_org(&admin, "Umbrella");
    let elsewhere = create_org(&admin, "Not hers");
    let user = api.verified_user(&smtp, "ada@example.com", USER_PASSWORD);
    let members = format!("/v1/management/organizations/{org}/members");
    admin
        .post(
            &members,
            Some(&json!({ "user_id": user_id(&user), "role": "owner" })),
        )
        .expect(201);
    srv.reauth(&s, PASSWORD);
    let (cid, secret) = register_client(
        &srv,
        &s,
        &api.slug,
        "confidential",
        &["openid", "email", "organization"],
    );
    let secret = secret.expect("secret");
    let f = Flow {
        api,
        user,
        confidential: (cid.clone(), secret.clone()),
        public: String::new(),
    };
    let error_of = |extra: &[(&str, &str)]| {
        let a = authorize(&f.api, &f.url(&cid, extra), Some(&f.user.access), "en");
        let to = a.expect(200)["redirect_to"]
            .as_str()
            .expect("redirect_to")
            .to_owned();
        query_of(&to).get("error").cloned()
    };
    // The parameter needs the scope and an id; an organization not hers is refused.
    assert_eq!(
        error_of(&[("organization", &org)]).as_deref(),
        Some("invalid_request")
    );
    let scope = ("scope", "openid email organization");
    assert_eq!(
        error_of(&[scope, ("organization", "acme")]).as_deref(),
        Some("invalid_request")
    );
    // Without asking the user, nothing is said about membership: consent is required alike
    // for her organization and for one she is not in.
    for o in [&org, &elsewhere] {
        assert_eq!(
            error_of(&[scope, ("organization", o), ("prompt", "none")]).as_deref(),
            Some("consent_required")
        );
    }
    // Shown the request and approving, she is refused for an organization not hers.
    let a = authorize(
        &f.api,
        &f.url(&cid, &[scope, ("organization", &elsewhere)]),
        Some(&f.user.access),
        "en",
    );
    let shown = a.expect(200).clone();
    assert_eq!(shown["consent_required"], true, "{shown}");
    assert_eq!(shown["organization"], elsewhere.as_str());
    let decided = consent(&f.api, &f.user.access, &shown, "approve", None);
    let to = decided.expect(200)["redirect_to"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        query_of(&to).get("error").map(String::as_str),
        Some("access_denied"),
        "{to}"
    );

    // Hers: the consent, the code, the tokens with the organization's claims.
    let code = |f: &Flow| {
        let a = authorize(
            &f.api,
            &f.url(&cid, &[scope, ("organization", &org)]),
            Some(&f.user.access),
            "en",
        );
        let body = a.expect(200).clone();
        let to = if body["consent_required"] == true {
            consent(&f.api, &f.user.access, &body, "approve", None).expect(200)["redirect_to"]
                .clone()
        } else {
            body["redirect_to"].clone()
        };
        query_of(to.as_str().expect("redirect_to"))["code"].clone()
    };
    let first = code(&f);
    let tokens = f.exchange((&cid, &secret), &first, VERIFIER);
    let tokens = tokens.expect(200);
    let access = jwt_part(tokens["access_token"].as_str().unwrap(), 1);
    assert_eq!(
        (access["org_id"].as_str(), access["org_role"].as_str()),
        (Some(org.as_str()), Some("owner")),
        "{access}"
    );
    assert_eq!(access["client_id"], cid.as_str());
    let id = jwt_part(tokens["id_token"].as_str().unwrap(), 1);
    assert_eq!(id["org_id"], org.as_str(), "{id}");

    // A code issued before the membership ended is void.
    let second = code(&f);
    let uid = user_id(&f.user);
    admin.delete(&format!("{members}/{uid}"), None).expect(204);
    let r = f.exchange((&cid, &secret), &second, VERIFIER);
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (400, Some("invalid_grant")),
        "{}",
        r.body
    );
    // And the grant the first code opened, which worked in the organization, ended with it.
    let refresh = tokens["refresh_token"].as_str().unwrap();
    let r = crate::oauth::form(
        &f.api,
        &format!("/v1/tenants/{}/oauth/token", f.api.slug),
        Some((&cid, &secret)),
        &[("grant_type", "refresh_token"), ("refresh_token", refresh)],
    );
    assert_eq!(
        r.body["error"].as_str(),
        Some("invalid_grant"),
        "{}",
        r.body
    );
}

/// A nameserver on 127.0.0.1 (UDP) that answers TXT questions from its table and says a name
/// it does not hold does not exist, as an authoritative server would.
pub(crate) struct DnsStub {
    pub(crate) addr: std::net::SocketAddr,
    records: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, Vec<String>>>>,
}

impl DnsStub {
    pub(crate) fn start() -> Self {
        use hickory_proto::{
            op::{Message, MessageType, OpCode, ResponseCode},
            rr::{rdata::TXT, RData, Record, RecordType},
        };
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = sock.local_addr().unwrap();
        let records: std::sync::Arc<
            std::sync::Mutex<std::collections::HashMap<String, Vec<String>>>,
        > = Default::default();
        let table = records.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok((n, peer)) = sock.recv_from(&mut buf) {
                let Ok(req) = Message::from_vec(&buf[..n]) else {
                    continue;
                };
                let mut resp = Message::new(req.metadata.id, MessageType::Response, OpCode::Query);
                resp.metadata.authoritative = true;
                resp.metadata.recursion_desired = req.metadata.recursion_desired;
                for q in &req.queries {
                    resp.add_query(q.clone());
                    let name = q.name().to_ascii().trim_end_matches('.').to_lowercase();
                    let held = table.lock().unwrap().get(&name).cloned();
                    match held {
                        Some(values) if q.query_type() == RecordType::TXT => {
                            for v in values {
                                resp.add_answer(Record::from_rdata(
                                    q.name().clone(),
                                    30,
                                    RData::TXT(TXT::new(vec![v])),
                                ));
                            }
                        }
                        Some(_) => {}
                        None => resp.metadata.response_code = ResponseCode::NXDomain,
                    }
                }
                if let Ok(bytes) = resp.to_vec() {
                    let _ = sock.send_to(&bytes, peer);
                }
            }
        });
        DnsStub { addr, records }
    }

    pub(crate) fn publish(&self, name: &str, value: &str) {
        self.records
            .lock()
            .unwrap()
            .entry(name.to_owned())
            .or_default()
            .push(value.to_owned());
    }
}

#[test]
fn a_domain_proven_by_dns_adds_the_users_who_sign_in_at_it_and_an_unproven_claim_adds_nobody() {
    let dns = DnsStub::start();
    let ns = dns.addr.to_string();
    let (smtp, srv, api, s) = user_setup(
        "Domain Orgs",
        &[("TESSERA__DNS__NAMESERVERS", &format!("[\"{ns}\"]"))],
    );
    let admin = key_of(&srv, &s, &api.slug, "admin");
    let org = create_org(&admin, "Contoso");
    let rival = create_org(&admin, "Rival");
    let domains = format!("/v1/management/organizations/{org}/domains");
    let rival_domains = format!("/v1/management/organizations/{rival}/domains");

    admin
        .post(&domains, Some(&json!({ "domain": "not a domain" })))
        .expect_error(400, "validation/invalid_request");
    let claim = admin.post(&domains, Some(&json!({ "domain": "Contoso.Example" })));
    let claim = claim.expect(201).clone();
    assert_eq!(claim["domain"], "contoso.example", "{claim}");
    assert_eq!(claim["verified"], false);
    assert_eq!(claim["txt_name"], "_tessera-verification.contoso.example");
    let value = claim["txt_value"].as_str().unwrap().to_owned();
    admin
        .post(&domains, Some(&json!({ "domain": "contoso.example" })))
        .expect_error(409, "organization/domain_claimed");
    // A rival may claim it too, but not prove it without the record.
    let r = admin.post(
        &rival_domains,
        Some(&json!({ "domain": "contoso.example" })),
    );
    let rival_value = r.expect(201)["txt_value"].as_str().unwrap().to_owned();
    admin
        .patch(
            &format!("{domains}/contoso.example"),
            Some(&json!({ "auto_join": true })),
        )
        .expect(200);

    // Unproven: the lookup finds nothing, or another value; nobody is added at sign-in.
    let verify = format!("{domains}/contoso.example/verify");
    let r = admin.post(&verify, None);
    r.expect_error(409, "organization/domain_unproven");
    assert_eq!(
        r.body["error"]["details"]["txt_value"],
        value.as_str(),
        "{}",
        r.body
    );
    dns.publish(
        "_tessera-verification.contoso.example",
        "tessera-verification=wrong",
    );
    admin
        .post(&verify, None)
        .expect_error(409, "organization/domain_unproven");
    let early = api.verified_user(&smtp, "early@contoso.example", USER_PASSWORD);
    let mine = api.send("GET", "/v1/auth/organizations", Some(&early.access), None);
    assert_eq!(mine.expect(200)["data"], json!([]));

    // Proven: a confirmed address at the domain joins at its next sign-in; an unconfirmed one
    // does not; a member an admin removed is not added again.
    dns.publish("_tessera-verification.contoso.example", &value);
    let proven = admin.post(&verify, None);
    assert_eq!(proven.expect(200)["verified"], true, "{}", proven.body);
    dns.publish("_tessera-verification.contoso.example", &rival_value);
    admin
        .post(&format!("{rival_domains}/contoso.example/verify"), None)
        .expect_error(409, "organization/domain_taken");
    let again = api.login_ok("early@contoso.example", USER_PASSWORD);
    let mine = api.send("GET", "/v1/auth/organizations", Some(&again.access), None);
    let mine = mine.expect(200);
    assert_eq!(
        (
            mine["data"][0]["id"].as_str(),
            mine["data"][0]["role"].as_str()
        ),
        (Some(org.as_str()), Some("member")),
        "{mine}"
    );
    api.register("unconfirmed@contoso.example", USER_PASSWORD)
        .expect(200);
    let other = api.verified_user(&smtp, "someone@elsewhere.example", USER_PASSWORD);
    let mine = api.send("GET", "/v1/auth/organizations", Some(&other.access), None);
    assert_eq!(mine.expect(200)["data"], json!([]));
    let members = format!("/v1/management/organizations/{org}/members");
    let listed = admin.get(&members, None);
    let listed = listed.expect(200).clone();
    assert_eq!(listed["data"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["data"][0]["joined_via"], "domain");
    let early_id = user_id(&early);
    admin
        .delete(&format!("{members}/{early_id}"), None)
        .expect(204);
    api.login_ok("early@contoso.example", USER_PASSWORD);
    assert_eq!(admin.get(&members, None).expect(200)["data"], json!([]));

    // Removing the claim frees the domain for the rival.
    admin
        .delete(&format!("{domains}/contoso.example"), None)
        .expect(204);
    let r = admin.post(&format!("{rival_domains}/contoso.example/verify"), None);
    assert_eq!(r.expect(200)["verified"], true, "{}", r.body);
    assert!(!audit_events(&srv, &s, &api.slug, "organization.domain.verified").is_empty());
}

#[test]
fn a_nameserver_that_does_not_answer_is_a_bad_gateway_not_a_proof() {
    // A port nothing listens on: every attempt times out or is refused.
    let dead = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = dead.local_addr().unwrap().to_string();
    drop(dead);
    let (_smtp, srv, api, s) = user_setup(
        "Dead DNS",
        &[("TESSERA__DNS__NAMESERVERS", &format!("[\"{addr}\"]"))],
    );
    let admin = key_of(&srv, &s, &api.slug, "admin");
    let org = create_org(&admin, "Offline");
    let domains = format!("/v1/management/organizations/{org}/domains");
    admin
        .post(&domains, Some(&json!({ "domain": "offline.example" })))
        .expect(201);
    admin
        .post(&format!("{domains}/offline.example/verify"), None)
        .expect_error(502, "organization/dns_unavailable");
    let list = admin.get(&domains, None);
    assert_eq!(list.expect(200)["data"][0]["verified"], false);
}
