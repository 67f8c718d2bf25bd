//! User management by tenant admins (dashboard), the admin CLI's user commands, and the
//! users' own export and erasure.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::support::*;

const USERS: &str = "/v1/auth/dashboard/tenants";

fn users_path(slug: &str, rest: &str) -> String {
    format!("{USERS}/{slug}/users{rest}")
}

/// An admin request; answers the status and the body (`null` when empty).
fn call(
    srv: &TestServer,
    s: &Session,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    srv.dash_json(method, path, s, body)
}

/// Creates a confirmed user without a password; answers its id.
fn create(srv: &TestServer, s: &Session, slug: &str, email: &str) -> String {
    let (st, body) = call(
        srv,
        s,
        "POST",
        &users_path(slug, ""),
        Some(&json!({"email": email, "email_verified": true})),
    );
    assert_eq!(st, 201, "{body}");
    body["id"].as_str().expect("id").to_owned()
}

fn emails(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no data in {page}"))
        .iter()
        .map(|u| u["email"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// Every page of a list query, following the cursors.
fn walk(srv: &TestServer, s: &Session, slug: &str, query: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut q = query.to_owned();
        if let Some(c) = &cursor {
            q.push_str(&format!("&cursor={c}"));
        }
        let (st, page) = call(srv, s, "GET", &users_path(slug, &format!("?{q}")), None);
        assert_eq!(st, 200, "{page}");
        out.extend(emails(&page));
        match page["pagination"]["next_cursor"].as_str() {
            Some(c) => {
                assert_eq!(page["pagination"]["has_more"], true);
                cursor = Some(c.to_owned());
            }
            None => return out,
        }
    }
}

#[test]
fn admins_list_users_newest_first_with_filters_and_stable_pages() {
    let (_smtp, srv, api, s) = user_setup("Lister", &[]);
    let mut made = Vec::new();
    for i in 0..23 {
        let email = format!("user{i:02}@example.com");
        create(&srv, &s, &api.slug, &email);
        made.push(email);
    }
    create(&srv, &s, &api.slug, "ada.lovelace@example.com");
    create(&srv, &s, &api.slug, "adam@example.org");
    made.push("ada.lovelace@example.com".into());
    made.push("adam@example.org".into());
    let newest_first: Vec<String> = made.iter().rev().cloned().collect();

    // The default page holds everyone, newest first.
    let (st, page) = call(&srv, &s, "GET", &users_path(&api.slug, ""), None);
    assert_eq!(st, 200, "{page}");
    assert_eq!(emails(&page), newest_first);
    assert_eq!(page["pagination"]["has_more"], false);
    assert!(page["pagination"]["next_cursor"].is_null());

    // Pages of 7 follow one another with nothing lost or repeated.
    assert_eq!(walk(&srv, &s, &api.slug, "limit=7"), newest_first);

    // Users created while pages are read land before the first page, never inside the walk.
    let (_, first) = call(&srv, &s, "GET", &users_path(&api.slug, "?limit=5"), None);
    let mut cursor = first["pagination"]["next_cursor"]
        .as_str()
        .expect("a cursor")
        .to_owned();
    let mut seen = emails(&first);
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            for i in 0..10 {
                create(&srv, &s, &api.slug, &format!("late{i}@example.com"));
            }
        });
        loop {
            let (st, page) = call(
                &srv,
                &s,
                "GET",
                &users_path(&api.slug, &format!("?limit=5&cursor={cursor}")),
                None,
            );
            assert_eq!(st, 200, "{page}");
            seen.extend(emails(&page));
            match page["pagination"]["next_cursor"].as_str() {
                Some(c) => cursor = c.to_owned(),
                None => break,
            }
        }
        writer.join().expect("writer");
    });
    assert_eq!(seen, newest_first, "the walk is the list as it was");
    let (_, all) = call(&srv, &s, "GET", &users_path(&api.slug, "?limit=200"), None);
    assert_eq!(emails(&all).len(), 35);
    assert!(emails(&all)[..10].iter().all(|e| e.starts_with("late")));

    // The e-mail prefix is case-insensitive.
    assert_eq!(
        walk(&srv, &s, &api.slug, "email=ADA&limit=1"),
        vec!["adam@example.org", "ada.lovelace@example.com"]
    );
    assert_eq!(walk(&srv, &s, &api.slug, "email=user1&limit=200").len(), 10);
    assert!(walk(&srv, &s, &api.slug, "email=zzz").is_empty());

    // Creation bounds.
    let (_, one) = call(
        &srv,
        &s,
        "GET",
        &users_path(&api.slug, "?email=user10"),
        None,
    );
    let t = one["data"][0]["created_at"]
        .as_str()
        .expect("created_at")
        .to_owned();
    let after = walk(
        &srv,
        &s,
        &api.slug,
        &format!("created_after={t}&email=user"),
    );
    assert_eq!(after.len(), 12, "{after:?}");
    let before = walk(&srv, &s, &api.slug, &format!("created_before={t}&limit=3"));
    assert_eq!(before.len(), 10, "{before:?}");

    // Status and phone.
    let unverified = call(
        &srv,
        &s,
        "POST",
        &users_path(&api.slug, ""),
        Some(&json!({"email": "new@example.com"})),
    );
    assert_eq!(unverified.0, 201, "{}", unverified.1);
    assert_eq!(unverified.1["status"], "unverified");
    assert_eq!(
        walk(&srv, &s, &api.slug, "status=unverified"),
        vec!["new@example.com"]
    );
    let id = unverified.1["id"].as_str().expect("id");
    let (st, body) = call(
        &srv,
        &s,
        "PATCH",
        &users_path(&api.slug, &format!("/{id}")),
        Some(&json!({"phone": "+33 6 12 34 56 78"})),
    );
    assert_eq!(st, 200, "{body}");
    assert_eq!(body["phone"], "+33612345678");
    assert_eq!(
        walk(&srv, &s, &api.slug, "phone=%2B33612345678"),
        vec!["new@example.com"]
    );
    assert!(walk(
        &srv,
        &s,
        &api.slug,
        "last_sign_in_before=2100-01-01T00:00:00Z"
    )
    .is_empty());

    // Every bad filter is named.
    let (st, body) = call(
        &srv,
        &s,
        "GET",
        &users_path(
            &api.slug,
            "?limit=0&cursor=zz&status=gone&created_after=yesterday&phone=12",
        ),
        None,
    );
    assert_eq!(st, 400, "{body}");
    let fields: BTreeSet<String> = body["error"]["details"]["fields"]
        .as_object()
        .expect("fields")
        .keys()
        .cloned()
        .collect();
    assert_eq!(
        fields,
        name_set(&["limit", "cursor", "status", "created_after", "phone"])
    );
}

#[test]
fn viewers_read_only_and_other_tenants_users_are_not_found() {
    let (smtp, srv, api, owner) = user_setup("Roles", &[]);
    let other = UserApi::signup(&srv, "Elsewhere", "boss@example.com");
    let boss = srv.login(&other.owner, PASSWORD);
    let foreign = create(&srv, &boss, &other.slug, "theirs@example.com");
    let mine = create(&srv, &owner, &api.slug, "mine@example.com");

    let r = srv.dash(
        "POST",
        &format!("{USERS}/{}/members", api.slug),
        &owner,
        Some(&json!({"email": "viewer@example.com", "role": "viewer"})),
    );
    assert_eq!(r.status(), 201);
    srv.accept_mailed_invite(&smtp, "viewer@example.com", 1, PASSWORD);
    let viewer = srv.login("viewer@example.com", PASSWORD);

    let (st, _) = call(&srv, &viewer, "GET", &users_path(&api.slug, ""), None);
    assert_eq!(st, 200);
    let (st, body) = call(
        &srv,
        &viewer,
        "GET",
        &users_path(&api.slug, &format!("/{mine}")),
        None,
    );
    assert_eq!(st, 200, "{body}");
    assert_eq!(body["email"], "mine@example.com");
    for (method, path, payload) in [
        (
            "POST",
            users_path(&api.slug, ""),
            Some(json!({"email": "x@example.com"})),
        ),
        (
            "PATCH",
            users_path(&api.slug, &format!("/{mine}")),
            Some(json!({"public_metadata": {}})),
        ),
        (
            "POST",
            users_path(&api.slug, &format!("/{mine}/block")),
            None,
        ),
        (
            "POST",
            users_path(&api.slug, &format!("/{mine}/sign-out")),
            None,
        ),
        ("DELETE", users_path(&api.slug, &format!("/{mine}")), None),
    ] {
        let (st, body) = call(&srv, &viewer, method, &path, payload.as_ref());
        assert_eq!(st, 403, "{method} {path}: {body}");
        assert_eq!(error_code(&body), "dashboard/forbidden");
    }

    // Another tenant's user, a malformed id and an unknown action are all not found.
    for path in [
        users_path(&api.slug, &format!("/{foreign}")),
        users_path(&api.slug, "/not-a-uuid"),
        users_path(&other.slug, &format!("/{foreign}")),
    ] {
        let (st, _) = call(&srv, &owner, "GET", &path, None);
        assert_eq!(st, 404, "{path}");
    }
    let (st, body) = call(
        &srv,
        &owner,
        "POST",
        &users_path(&api.slug, &format!("/{foreign}/block")),
        None,
    );
    assert_eq!(st, 404, "{body}");
    let (st, _) = call(
        &srv,
        &owner,
        "POST",
        &users_path(&api.slug, &format!("/{mine}/explode")),
        None,
    );
    assert_eq!(st, 404);
    // The other tenant's user was not touched.
    let (_, theirs) = call(
        &srv,
        &boss,
        "GET",
        &users_path(&other.slug, &format!("/{foreign}")),
        None,
    );
    assert_eq!(theirs["status"], "active", "{theirs}");
}

#[test]
fn a_blocked_user_loses_every_session_and_is_refused_only_after_the_right_password() {
    let (smtp, srv, api, s) = user_setup("Blocker", &[]);
    let user = api.verified_user(&smtp, "blocked@example.com", USER_PASSWORD);
    let id = user.body["user"]["id"].as_str().expect("id").to_owned();
    let second = api.login_ok("blocked@example.com", USER_PASSWORD);

    let (st, body) = call(
        &srv,
        &s,
        "GET",
        &users_path(&api.slug, &format!("/{id}")),
        None,
    );
    assert_eq!(st, 200);
    assert_eq!(body["sessions"].as_array().map(Vec::len), Some(2), "{body}");
    assert_eq!(body["activity"]["active_this_month"], true);

    let (st, body) = call(
        &srv,
        &s,
        "POST",
        &users_path(&api.slug, &format!("/{id}/block")),
        None,
    );
    assert_eq!(st, 200, "{body}");
    assert_eq!(body["status"], "blocked");
    assert!(body["blocked_at"].is_string());
    assert_eq!(body["sessions"], json!([]));

    api.me(&user.access).expect_error(401, "auth/invalid_token");
    api.refresh(&second.refresh)
        .expect_error(401, "auth/invalid_refresh_token");
    api.login("blocked@example.com", "a wrong password here")
        .expect_error(401, "auth/invalid_credentials");
    api.login("blocked@example.com", USER_PASSWORD)
        .expect_error(403, "auth/user_blocked");

    let events = audit_events(&srv, &s, &api.slug, "user.blocked");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["metadata"]["user_id"], id);
    assert_eq!(events[0]["metadata"]["sessions_revoked"], 2);
    assert_eq!(
        events[0]["actor_account_id"], s.body["account"]["id"],
        "the acting member is recorded"
    );

    let (st, body) = call(
        &srv,
        &s,
        "POST",
        &users_path(&api.slug, &format!("/{id}/unblock")),
        None,
    );
    assert_eq!(st, 200, "{body}");
    assert_eq!(body["status"], "active");
    api.login_ok("blocked@example.com", USER_PASSWORD);

    // Signing out everywhere ends the sessions without blocking.
    let again = api.login_ok("blocked@example.com", USER_PASSWORD);
    let (st, body) = call(
        &srv,
        &s,
        "POST",
        &users_path(&api.slug, &format!("/{id}/sign-out")),
        None,
    );
    assert_eq!(st, 200, "{body}");
    assert_eq!(body["sessions"], json!([]));
    api.refresh(&again.refresh)
        .expect_error(401, "auth/invalid_refresh_token");
    api.login_ok("blocked@example.com", USER_PASSWORD);
}

#[test]
fn deleting_resetting_mfa_and_changing_an_address_need_a_recent_reauth() {
    let (smtp, srv, api, s) = user_setup("Careful", &[]);
    let user = api.verified_user(&smtp, "careful@example.com", USER_PASSWORD);
    let id = user.body["user"]["id"].as_str().expect("id").to_owned();
    api.enable_mfa(&user.access);
    let stale = [
        (
            "POST",
            users_path(&api.slug, &format!("/{id}/reset-mfa")),
            None,
        ),
        (
            "PATCH",
            users_path(&api.slug, &format!("/{id}")),
            Some(json!({"email": "moved@example.com"})),
        ),
        ("DELETE", users_path(&api.slug, &format!("/{id}")), None),
    ];
    for (method, path, body) in &stale {
        let (st, out) = call(&srv, &s, method, path, body.as_ref());
        assert_eq!(st, 401, "{method} {path}: {out}");
        assert_eq!(error_code(&out), "dashboard/reauth_required");
    }
    // Nothing changed.
    let (_, body) = call(
        &srv,
        &s,
        "GET",
        &users_path(&api.slug, &format!("/{id}")),
        None,
    );
    assert_eq!(body["factors"]["totp_enabled"], true, "{body}");
    assert_eq!(body["email"], "careful@example.com");

    srv.reauth(&s, PASSWORD);
    let (st, body) = call(
        &srv,
        &s,
        "POST",
        &users_path(&api.slug, &format!("/{id}/reset-mfa")),
        None,
    );
    assert_eq!(st, 200, "{body}");
    assert_eq!(body["mfa_enabled"], false);
    assert_eq!(body["factors"]["totp_enabled"], false);
    assert_eq!(body["factors"]["recovery_codes_remaining"], 0);
    let mail = smtp.wait_for(&api.slug, "mfa_reset", "careful@example.com", 1);
    assert!(mail.text.contains("authenticator app"), "{}", mail.text);
    // The password alone signs in again.
    api.login_ok("careful@example.com", USER_PASSWORD);

    // A new address is unconfirmed and mailed a link, unless forced.
    let (st, body) = call(
        &srv,
        &s,
        "PATCH",
        &users_path(&api.slug, &format!("/{id}")),
        Some(&json!({"email": "Moved@Example.com"})),
    );
    assert_eq!(st, 200, "{body}");
    assert_eq!(body["email"], "moved@example.com");
    assert_eq!(body["status"], "unverified");
    let token = api.verification_token(&smtp, "moved@example.com", 1);
    api.post("/v1/auth/verify-email", &json!({"token": token}))
        .expect(200);
    api.login_ok("moved@example.com", USER_PASSWORD);
    api.login("careful@example.com", USER_PASSWORD)
        .expect_error(401, "auth/invalid_credentials");
    let (st, body) = call(
        &srv,
        &s,
        "PATCH",
        &users_path(&api.slug, &format!("/{id}")),
        Some(&json!({"email": "forced@example.com", "email_verified": true})),
    );
    assert_eq!(st, 200, "{body}");
    assert_eq!(body["status"], "active");
    api.login_ok("forced@example.com", USER_PASSWORD);

    // Another user's address is taken.
    let other = create(&srv, &s, &api.slug, "other@example.com");
    let (st, body) = call(
        &srv,
        &s,
        "PATCH",
        &users_path(&api.slug, &format!("/{other}")),
        Some(&json!({"email": "forced@example.com"})),
    );
    assert_eq!(st, 409, "{body}");
    assert_eq!(error_code(&body), "user/email_in_use");

    let (st, body) = call(
        &srv,
        &s,
        "DELETE",
        &users_path(&api.slug, &format!("/{id}")),
        None,
    );
    assert_eq!(st, 204, "{body}");
    let (st, _) = call(
        &srv,
        &s,
        "GET",
        &users_path(&api.slug, &format!("/{id}")),
        None,
    );
    assert_eq!(st, 404);
    let events = audit_events(&srv, &s, &api.slug, "user.deleted");
    assert_eq!(events.len(), 1);
    assert_eq!(
        events[0]["metadata"],
        json!({"deleted_user_id": id, "by": "admin"}),
        "the event names the id and nothing else about the user"
    );
}

#[test]
fn created_users_sign_in_invitations_set_a_password_and_app_metadata_reaches_tokens() {
    let (smtp, srv, api, s) = user_setup("Maker", &[]);
    // With a password and a confirmed address: signs in at once.
    let (st, body) = call(
        &srv,
        &s,
        "POST",
        &users_path(&api.slug, ""),
        Some(
            &json!({"email": "made@example.com", "password": USER_PASSWORD, "email_verified": true}),
        ),
    );
    assert_eq!(st, 201, "{body}");
    let made = body["id"].as_str().expect("id").to_owned();
    api.login_ok("made@example.com", USER_PASSWORD);
    let (st, body) = call(
        &srv,
        &s,
        "POST",
        &users_path(&api.slug, ""),
        Some(&json!({"email": "MADE@example.com"})),
    );
    assert_eq!(st, 409, "{body}");
    assert_eq!(error_code(&body), "user/email_in_use");
    let (st, body) = call(
        &srv,
        &s,
        "POST",
        &users_path(&api.slug, ""),
        Some(
            &json!({"email": "x@example.com", "password": USER_PASSWORD, "invite": true, "extra": 1}),
        ),
    );
    assert_eq!(st, 400, "{body}");

    // An invitation: a link to choose the password, which also confirms the address.
    let (st, body) = call(
        &srv,
        &s,
        "POST",
        &users_path(&api.slug, ""),
        Some(&json!({"email": "invited@example.com", "invite": true})),
    );
    assert_eq!(st, 201, "{body}");
    assert_eq!(body["status"], "unverified");
    let mail = smtp.wait_for(&api.slug, "invitation", "invited@example.com", 1);
    let token = mail.token_after("/reset-password?token=").expect("a link");
    api.post(
        "/v1/auth/reset-password",
        &json!({"token": token, "password": "an invited passphrase"}),
    )
    .expect(200);
    api.login_ok("invited@example.com", "an invited passphrase");

    // The admin-only metadata is the token's `app_metadata` claim.
    let (st, body) = call(
        &srv,
        &s,
        "PATCH",
        &users_path(&api.slug, &format!("/{made}")),
        Some(
            &json!({"app_metadata": {"plan": "pro", "roles": ["editor"]}, "public_metadata": {"nick": "m"}}),
        ),
    );
    assert_eq!(st, 200, "{body}");
    let t = api.login_ok("made@example.com", USER_PASSWORD);
    let (_, claims) = api.verify_access(&t.access);
    assert_eq!(
        claims["app_metadata"],
        json!({"plan": "pro", "roles": ["editor"]}),
        "{claims}"
    );
    assert_eq!(
        api.me(&t.access).expect(200)["public_metadata"],
        json!({"nick": "m"})
    );
    let (_, plain) = api.verify_access(
        &api.login_ok("invited@example.com", "an invited passphrase")
            .access,
    );
    assert!(plain.get("app_metadata").is_none(), "{plain}");
    for bad in [
        json!({"app_metadata": "x"}),
        json!({"app_metadata": {"k": "v".repeat(17 * 1024)}}),
    ] {
        let (st, body) = call(
            &srv,
            &s,
            "PATCH",
            &users_path(&api.slug, &format!("/{made}")),
            Some(&bad),
        );
        assert_eq!(st, 400, "{body}");
        assert!(
            body["error"]["details"]["fields"]["app_metadata"].is_string(),
            "{body}"
        );
    }

    // A password reset mailed by an admin.
    let (st, body) = call(
        &srv,
        &s,
        "POST",
        &users_path(&api.slug, &format!("/{made}/send-password-reset")),
        None,
    );
    assert_eq!(st, 200, "{body}");
    let token = smtp.wait_for_link("made@example.com", "/reset-password", 1);
    api.post(
        "/v1/auth/reset-password",
        &json!({"token": token, "password": "a brand new passphrase"}),
    )
    .expect(200);
    api.login_ok("made@example.com", "a brand new passphrase");
    let created = audit_events(&srv, &s, &api.slug, "user.created");
    assert_eq!(created.len(), 2);
    assert_eq!(audit_events(&srv, &s, &api.slug, "user.updated").len(), 1);
    assert_eq!(
        audit_events(&srv, &s, &api.slug, "user.password_reset_sent").len(),
        1
    );
}

#[test]
fn users_export_what_is_held_and_erase_themselves_behind_a_step_up() {
    let (smtp, srv, api, s) = user_setup("Rights", &[]);
    let user = api.verified_user(&smtp, "me@example.com", USER_PASSWORD);
    let id = user.body["user"]["id"].as_str().expect("id").to_owned();

    // Without a step-up token: the gate's challenge.
    let r = api.send("GET", "/v1/users/me/export", Some(&user.access), None);
    r.expect_error(401, "account_linking/mfa_required");
    let token = api.password_step_up(&user.access);
    let r = api.send_with(
        "GET",
        "/v1/users/me/export",
        Some(&user.access),
        None,
        &[(STEP_UP_HEADER, token.as_str())],
    );
    let doc = r.expect(200).clone();
    assert_eq!(
        r.header("content-disposition").as_deref(),
        Some(format!("attachment; filename=\"{}-user-export.json\"", api.slug).as_str())
    );
    assert_eq!(doc["profile"]["id"], id);
    assert_eq!(doc["profile"]["email"], "me@example.com");
    assert_eq!(doc["identities"]["email"]["verified"], true);
    assert_eq!(doc["identities"]["password_set"], true);
    assert_eq!(doc["sessions"].as_array().map(Vec::len), Some(1), "{doc}");
    let types: BTreeSet<String> = doc["audit_events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("").to_owned())
        .collect();
    for t in [
        "auth.register",
        "auth.email.verified",
        "auth.login.succeeded",
        "auth.step_up_issued",
    ] {
        assert!(types.contains(t), "{t} missing from {types:?}");
    }
    let text = doc.to_string();
    assert!(!text.contains("argon2"), "no password hash in the export");
    // The token was single-use.
    api.send_with(
        "GET",
        "/v1/users/me/export",
        Some(&user.access),
        None,
        &[(STEP_UP_HEADER, token.as_str())],
    )
    .expect_error(401, "invalid_or_expired_token");

    // The tenant can turn self-service erasure off: refused before any step-up is spent.
    let r = srv.dash(
        "PATCH",
        &format!("{USERS}/{}/settings/users", api.slug),
        &s,
        Some(&json!({"self_service_deletion_enabled": false})),
    );
    assert_eq!(r.status(), 200);
    api.send("DELETE", "/v1/users/me", Some(&user.access), None)
        .expect_error(403, "user/self_deletion_disabled");
    let r = srv.dash(
        "PATCH",
        &format!("{USERS}/{}/settings/users", api.slug),
        &s,
        Some(&json!({"self_service_deletion_enabled": true})),
    );
    assert_eq!(r.status(), 200);

    api.send("DELETE", "/v1/users/me", Some(&user.access), None)
        .expect_error(401, "account_linking/mfa_required");
    let token = api.password_step_up(&user.access);
    let r = api.send_with(
        "DELETE",
        "/v1/users/me",
        Some(&user.access),
        None,
        &[(STEP_UP_HEADER, token.as_str())],
    );
    assert_eq!(r.status, 204, "{}", r.body);
    api.me(&user.access).expect_error(401, "auth/invalid_token");
    api.login("me@example.com", USER_PASSWORD)
        .expect_error(401, "auth/invalid_credentials");
    let events = audit_events(&srv, &s, &api.slug, "user.deleted");
    assert_eq!(
        events[0]["metadata"],
        json!({"deleted_user_id": id, "by": "self"})
    );
    // The address is free: it registers again as a new account.
    api.register("me@example.com", USER_PASSWORD).expect(200);
    let token = api.verification_token(&smtp, "me@example.com", 2);
    api.post("/v1/auth/verify-email", &json!({"token": token}))
        .expect(200);
    let again = api.login_ok("me@example.com", USER_PASSWORD);
    assert_ne!(again.body["user"]["id"], json!(id));
}

/// The needles' traces in the tenant's storage, through the admin CLI.
fn traces(srv: &TestServer, slug: &str, needles: &[&str]) -> Vec<Value> {
    let mut args = vec!["user", "traces", "--tenant", slug];
    args.extend_from_slice(needles);
    let out = srv.admin(&args, "");
    out.json()["traces"].as_array().cloned().unwrap_or_default()
}

#[test]
fn an_erasure_leaves_no_key_of_the_user_and_frees_the_address() {
    // Mail goes to a port where nothing listens, so it stays queued (and retried).
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port().to_string();
    drop(closed);
    let srv = TestServer::start_with(&[
        ("TESSERA__MAIL__TRANSPORT", "smtp"),
        ("TESSERA__MAIL__SMTP__HOST", "127.0.0.1"),
        ("TESSERA__MAIL__SMTP__PORT", &port),
        ("TESSERA__MAIL__SMTP__TLS", "none"),
    ]);
    let api = UserApi::signup(&srv, "Eraser", "owner@example.com");
    let s = srv.login(&api.owner, PASSWORD);
    let email = "gone@example.com";
    let phone = "+33612345679";
    let (st, body) = call(
        &srv,
        &s,
        "POST",
        &users_path(&api.slug, ""),
        Some(&json!({"email": email, "password": USER_PASSWORD, "email_verified": true})),
    );
    assert_eq!(st, 201, "{body}");
    let id = body["id"].as_str().expect("id").to_owned();
    let t = api.login_ok(email, USER_PASSWORD);
    api.login_ok(email, USER_PASSWORD);
    // A passkey, used once: the credential, its index entry and its use record.
    crate::passkeys::passkey_used_once(&srv, &s, &api, &t);
    api.enable_mfa(&t.access);
    let (st, body) = call(
        &srv,
        &s,
        "PATCH",
        &users_path(&api.slug, &format!("/{id}")),
        Some(&json!({"phone": phone, "public_metadata": {"about": "me"}})),
    );
    assert_eq!(st, 200, "{body}");
    // A failed login leaves a throttle entry keyed by the address; a reset link and its
    // (undeliverable) mail wait in the queue.
    api.login(email, "not the password at all")
        .expect_error(401, "auth/invalid_credentials");
    let (st, _) = call(
        &srv,
        &s,
        "POST",
        &users_path(&api.slug, &format!("/{id}/send-password-reset")),
        None,
    );
    assert_eq!(st, 200);

    let before = traces(&srv, &api.slug, &[&id, email, phone]);
    let kinds: BTreeSet<String> = before
        .iter()
        .map(|t| t["kind"].as_str().unwrap_or("").to_owned())
        .collect();
    // The user, e-mail, session, phone, creation, audit-index, link, queue, throttle, passkey,
    // passkey index and passkey use records.
    for kind in [
        "43", "44", "45", "46", "48", "49", "4d", "4e", "4f", "50", "52", "53", "71",
    ] {
        assert!(
            kinds.contains(kind),
            "kind {kind} not found before: {before:?}"
        );
    }

    srv.reauth(&s, PASSWORD);
    let (st, body) = call(
        &srv,
        &s,
        "DELETE",
        &users_path(&api.slug, &format!("/{id}")),
        None,
    );
    assert_eq!(st, 204, "{body}");

    let after = traces(&srv, &api.slug, &[&id, email, phone]);
    for t in &after {
        // Only audit events remain, and only by the id in their values.
        assert_eq!(t["kind"], "41", "{after:?}");
        assert_eq!(t["found_in"], "value", "{after:?}");
    }
    assert!(traces(&srv, &api.slug, &[email, phone]).is_empty());
    // The address and the number are free again.
    let again = create(&srv, &s, &api.slug, email);
    assert_ne!(again, id);
    let (st, body) = call(
        &srv,
        &s,
        "PATCH",
        &users_path(&api.slug, &format!("/{again}")),
        Some(&json!({"phone": phone})),
    );
    assert_eq!(st, 200, "{body}");
}

#[test]
fn the_admin_cli_lists_shows_blocks_and_deletes_users() {
    let (smtp, srv, api, _s) = user_setup("Cli", &[]);
    let user = api.verified_user(&smtp, "cli@example.com", USER_PASSWORD);
    let id = user.body["user"]["id"].as_str().expect("id").to_owned();
    let out = srv.admin(
        &["user", "list", "--tenant", &api.slug, "--email", "CLI"],
        "",
    );
    assert_eq!(out.json()["users"][0]["id"], id, "{}", out.stdout);
    let out = srv.admin(&["user", "show", "--tenant", &api.slug, &id], "");
    assert_eq!(out.json()["email"], "cli@example.com");
    let out = srv.admin(&["user", "block", "--tenant", &api.slug, &id], "");
    assert_eq!(out.json()["status"], "blocked");
    api.login("cli@example.com", USER_PASSWORD)
        .expect_error(403, "auth/user_blocked");
    let out = srv.admin(&["user", "unblock", "--tenant", &api.slug, &id], "");
    assert_eq!(out.json()["status"], "active");
    api.login_ok("cli@example.com", USER_PASSWORD);
    let out = srv.admin(&["user", "delete", "--tenant", &api.slug, &id], "");
    assert_eq!(out.json()["deleted"], id);
    let out = srv.admin(&["user", "show", "--tenant", &api.slug, &id], "");
    assert!(!out.status.success(), "{}", out.stdout);
    let out = srv.admin(
        &["user", "list", "--tenant", &api.slug, "--status", "nope"],
        "",
    );
    assert!(!out.status.success());
}

#[test]
fn the_email_prefix_is_served_by_the_index_among_ten_thousand_users() {
    let (_smtp, srv, api, s) = user_setup("Crowd", &[]);
    let hash = crate::capacity::phc("an imported passphrase");
    let input: Vec<String> = (0..10_000)
        .map(|i| {
            json!({"email": format!("bulk{i:05}@example.com"), "password_hash": hash, "email_verified": true})
                .to_string()
        })
        .collect();
    let out = crate::capacity::import(&srv, &api.slug, &input.join("\n")).json();
    assert_eq!(out["imported"], 10_000, "{out}");
    // The oldest users: a walk down the creation order would read 5,000 newer users per page
    // before reaching them (a short page with `has_more`); the index finds them at once.
    let (st, page) = call(
        &srv,
        &s,
        "GET",
        &users_path(&api.slug, "?email=BULK0000"),
        None,
    );
    assert_eq!(st, 200, "{page}");
    let want: Vec<String> = (0..10).map(|i| format!("bulk{i:05}@example.com")).collect();
    let mut got = emails(&page);
    got.sort();
    assert_eq!(got, want);
    assert_eq!(page["pagination"]["has_more"], false);
    assert_eq!(
        walk(&srv, &s, &api.slug, "email=bulk001&limit=30").len(),
        100
    );
    // Without a filter the pages walk all ten thousand, newest first.
    let (_, first) = call(&srv, &s, "GET", &users_path(&api.slug, "?limit=200"), None);
    assert_eq!(emails(&first).len(), 200);
    assert_eq!(first["pagination"]["has_more"], true);
}
