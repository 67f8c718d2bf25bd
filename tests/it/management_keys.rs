//! Management keys: created by owners (shown once), listed without their secret, used by a
//! tenant's back end on `/v1/management/...` with their role, revoked at once.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

fn keys_path(slug: &str) -> String {
    format!("/v1/auth/dashboard/tenants/{slug}/management-keys")
}

fn create_key(srv: &TestServer, s: &Session, slug: &str, body: Value) -> (u16, Value) {
    let r = srv.dash("POST", &keys_path(slug), s, Some(&body));
    let status = r.status().as_u16();
    (status, r.json().unwrap_or(Value::Null))
}

#[test]
fn a_key_is_shown_once_acts_with_its_role_and_stops_when_revoked() {
    let (_smtp, srv, api, s) = user_setup("Backend", &[]);
    srv.reauth(&s, PASSWORD);
    let (st, admin) = create_key(
        &srv,
        &s,
        &api.slug,
        json!({"name": "billing", "role": "admin"}),
    );
    assert_eq!(st, 201, "{admin}");
    let admin_key = admin["key"].as_str().expect("key").to_owned();
    assert!(
        admin_key.starts_with("tmk_") && admin_key.len() > 40,
        "{admin_key}"
    );
    assert_eq!(admin["prefix"], admin_key[..12]);
    let (st, viewer) = create_key(
        &srv,
        &s,
        &api.slug,
        json!({"name": "reports", "role": "viewer"}),
    );
    assert_eq!(st, 201, "{viewer}");
    let viewer_key = viewer["key"].as_str().expect("key").to_owned();

    // The list never holds a key.
    let r = srv.dash("GET", &keys_path(&api.slug), &s, None);
    let text = r.text().unwrap();
    assert!(
        !text.contains(&admin_key) && !text.contains(&viewer_key),
        "{text}"
    );
    let list: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(list["data"][0]["name"], "reports", "newest first: {list}");
    assert_eq!(list["data"][1]["role"], "admin");

    let me = with_key(&srv, &admin_key, "GET", "/v1/management/key", None);
    let me = me.expect(200);
    assert_eq!(me["id"], admin["id"]);
    assert_eq!(me["role"], "admin");
    assert_eq!(me["tenant"]["slug"], api.slug);
    assert!(me.get("key").is_none(), "{me}");

    // The admin key writes; its acts are audited with the key as the actor.
    let made = with_key(
        &srv,
        &admin_key,
        "POST",
        "/v1/management/users",
        Some(&json!({"email": "from-backend@example.com", "email_verified": true})),
    );
    let id = made.expect(201)["id"].as_str().expect("id").to_owned();
    let events = audit_events(&srv, &s, &api.slug, "user.created");
    assert_eq!(
        events[0]["actor_management_key_id"], admin["id"],
        "{events:?}"
    );
    assert!(events[0]["actor_account_id"].is_null());
    // No re-authentication for a key: it deletes at once.
    let other = with_key(
        &srv,
        &admin_key,
        "POST",
        "/v1/management/users",
        Some(&json!({"email": "doomed@example.com"})),
    );
    let doomed = other.expect(201)["id"].as_str().expect("id").to_owned();
    with_key(
        &srv,
        &admin_key,
        "DELETE",
        &format!("/v1/management/users/{doomed}"),
        None,
    )
    .expect(204);

    // The viewer key reads and cannot write.
    let page = with_key(
        &srv,
        &viewer_key,
        "GET",
        "/v1/management/users?email=from",
        None,
    );
    assert_eq!(page.expect(200)["data"][0]["id"], id.as_str());
    with_key(
        &srv,
        &viewer_key,
        "GET",
        &format!("/v1/management/users/{id}"),
        None,
    )
    .expect(200);
    with_key(
        &srv,
        &viewer_key,
        "POST",
        &format!("/v1/management/users/{id}/block"),
        None,
    )
    .expect_error(403, "management/forbidden");
    with_key(
        &srv,
        &viewer_key,
        "POST",
        "/v1/management/users",
        Some(&json!({"email": "nope@example.com"})),
    )
    .expect_error(403, "management/forbidden");
    with_key(
        &srv,
        &viewer_key,
        "DELETE",
        &format!("/v1/management/users/{id}"),
        None,
    )
    .expect_error(403, "management/forbidden");

    // Another tenant's user is not found through this tenant's key.
    let elsewhere = UserApi::signup(&srv, "Elsewhere", "boss@example.com");
    let boss = srv.login(&elsewhere.owner, PASSWORD);
    let r = srv.dash(
        "POST",
        &format!("/v1/auth/dashboard/tenants/{}/users", elsewhere.slug),
        &boss,
        Some(&json!({"email": "theirs@example.com"})),
    );
    let theirs: Value = r.json().unwrap();
    with_key(
        &srv,
        &admin_key,
        "GET",
        &format!("/v1/management/users/{}", theirs["id"].as_str().unwrap()),
        None,
    )
    .expect_error(404, "resource/not_found");
    // ...and another owner can neither list nor revoke this tenant's keys.
    let r = srv.dash("GET", &keys_path(&api.slug), &boss, None);
    assert_eq!(r.status(), 404);
    let admin_id = admin["id"].as_str().unwrap();
    let r = srv.dash(
        "DELETE",
        &format!("{}/{admin_id}", keys_path(&api.slug)),
        &boss,
        None,
    );
    assert_eq!(r.status(), 404);
    with_key(&srv, &admin_key, "GET", "/v1/management/key", None).expect(200);

    // Revoked: refused at once; revoking again answers the same record.
    let r = srv.dash(
        "DELETE",
        &format!("{}/{admin_id}", keys_path(&api.slug)),
        &s,
        None,
    );
    assert_eq!(r.status(), 200);
    let revoked: Value = r.json().unwrap();
    assert!(revoked["revoked_at"].is_string(), "{revoked}");
    with_key(&srv, &admin_key, "GET", "/v1/management/users", None)
        .expect_error(401, "management/invalid_key");
    let r = srv.dash(
        "DELETE",
        &format!("{}/{admin_id}", keys_path(&api.slug)),
        &s,
        None,
    );
    let again: Value = r.json().unwrap();
    assert_eq!(again["revoked_at"], revoked["revoked_at"]);
    assert_eq!(
        audit_events(&srv, &s, &api.slug, "management_key.revoked").len(),
        1
    );

    // The audit log names the keys, never holds them.
    let created = audit_events(&srv, &s, &api.slug, "management_key.created");
    assert_eq!(created.len(), 2);
    let all = serde_json::to_string(&created).unwrap();
    assert!(!all.contains(&admin_key) && !all.contains(&viewer_key));
    assert_eq!(created[1]["metadata"]["key_id"], admin["id"]);

    // A restart keeps the keys and their revocation.
    let mut srv = srv;
    srv.restart();
    with_key(&srv, &viewer_key, "GET", "/v1/management/key", None).expect(200);
    with_key(&srv, &admin_key, "GET", "/v1/management/key", None)
        .expect_error(401, "management/invalid_key");
}

#[test]
fn keys_are_made_only_by_fresh_owners_within_limits_and_other_credentials_are_refused() {
    let (_smtp, srv, api, s) = user_setup("Guarded", &[]);
    let (st, body) = create_key(&srv, &s, &api.slug, json!({"name": "k", "role": "admin"}));
    assert_eq!(st, 401, "{body}");
    assert_eq!(error_code(&body), "dashboard/reauth_required");
    srv.reauth(&s, PASSWORD);
    let (st, body) = create_key(
        &srv,
        &s,
        &api.slug,
        json!({"name": "", "role": "owner", "expires_at": "2001-01-01T00:00:00Z"}),
    );
    assert_eq!(st, 400, "{body}");
    assert_eq!(
        json_keys(&body["error"]["details"]["fields"]),
        name_set(&["name", "role", "expires_at"])
    );

    // A key that expires stops working by itself.
    let soon = (time::OffsetDateTime::now_utc() + time::Duration::seconds(2))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let (st, short) = create_key(
        &srv,
        &s,
        &api.slug,
        json!({"name": "short", "role": "viewer", "expires_at": soon}),
    );
    assert_eq!(st, 201, "{short}");
    let short_key = short["key"].as_str().unwrap().to_owned();
    with_key(&srv, &short_key, "GET", "/v1/management/users", None).expect(200);
    assert!(eventually(Duration::from_secs(10), || {
        with_key(&srv, &short_key, "GET", "/v1/management/users", None).status == 401
    }));
    with_key(&srv, &short_key, "GET", "/v1/management/users", None)
        .expect_error(401, "management/invalid_key");

    // Twenty unrevoked keys at most.
    for i in 1..20 {
        let (st, body) = create_key(
            &srv,
            &s,
            &api.slug,
            json!({"name": format!("k{i}"), "role": "viewer"}),
        );
        assert_eq!(st, 201, "{body}");
    }
    let (st, body) = create_key(
        &srv,
        &s,
        &api.slug,
        json!({"name": "k21", "role": "viewer"}),
    );
    assert_eq!(st, 409, "{body}");
    assert_eq!(error_code(&body), "management_key/limit_reached");

    // Other credentials are not management keys.
    let r = srv
        .client
        .get(srv.url("/v1/management/users"))
        .send()
        .unwrap();
    AuthAnswer::read(r).expect_error(401, "auth/missing_token");
    for bearer in [
        api.api_key.as_str(),
        s.token.as_str(),
        "tmk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    ] {
        with_key(&srv, bearer, "GET", "/v1/management/users", None)
            .expect_error(401, "management/invalid_key");
    }

    // No browser gets CORS headers for these routes.
    let r = srv
        .client
        .request(reqwest::Method::OPTIONS, srv.url("/v1/management/users"))
        .header("origin", "https://app.example.com")
        .header("access-control-request-method", "GET")
        .send()
        .unwrap();
    assert!(r.headers().get("access-control-allow-origin").is_none());
}
