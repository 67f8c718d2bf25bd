//! The tenant dashboard: sessions, CSRF, roles, members and invitations, API-key rotation,
//! the audit log.

use serde_json::{json, Value};

use crate::support::{error_code, owner_setup, Session, SmtpStub, TestServer, PASSWORD};

const OWNER: &str = "owner@example.com";

#[test]
fn login_gives_a_session_in_the_body_and_a_strict_http_only_cookie() {
    let (srv, s, tenant) = owner_setup("Dash Co");
    assert_eq!(s.body["account"]["email"], OWNER);
    assert_eq!(s.body["tenants"][0]["slug"], "dash-co");
    assert_eq!(s.body["tenants"][0]["role"], "owner");
    assert_eq!(s.body["tenants"][0]["id"], tenant["tenant"]["id"]);
    assert!(s.body["expires_at"].is_string());
    let c = &s.set_cookie;
    assert!(
        c.starts_with(&format!("dashboard_session={};", s.token)),
        "{c}"
    );
    assert!(
        c.contains("HttpOnly") && c.contains("SameSite=Strict"),
        "{c}"
    );
    assert!(
        !c.contains("Secure"),
        "plain-http base URL: no Secure flag ({c})"
    );
    // The session works as a bearer token...
    let r = srv.dash("GET", "/v1/auth/dashboard/tenants", &s, None);
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().unwrap()["data"][0]["role"], "owner");
    // ...and as the cookie.
    let r = srv
        .client
        .get(srv.url("/v1/auth/dashboard/tenants/dash-co"))
        .header("cookie", format!("dashboard_session={}", s.token))
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().unwrap()["role"], "owner");
}

#[test]
fn the_secure_flag_follows_an_https_base_url() {
    let srv = TestServer::start_with(&[("TESSERA__SERVER__BASE_URL", "https://auth.example.com")]);
    srv.signup("Secure Co", OWNER);
    let s = srv.login(OWNER, PASSWORD);
    assert!(s.set_cookie.contains("; Secure"), "{}", s.set_cookie);
}

#[test]
fn bad_logins_are_alike_and_throttled() {
    let (srv, _, _) = owner_setup("Dash Co");
    let attempt = |email: &str, password: &str| {
        srv.post_json(
            "/v1/auth/dashboard/login",
            &json!({"email": email, "password": password}),
        )
    };
    let answer = |r: reqwest::blocking::Response| {
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        (status, headers, r.text().unwrap())
    };
    let (wrong_status, wrong_headers, wrong) = answer(attempt(OWNER, "wrong password"));
    assert_eq!(wrong_status, 401);
    assert_eq!(
        error_code(&serde_json::from_str(&wrong).unwrap()),
        "dashboard/invalid_credentials"
    );
    let (unknown_status, unknown_headers, unknown) =
        answer(attempt("nobody@example.com", "wrong password"));
    // Alike, byte for byte, and in the headers that could tell them apart.
    assert_eq!((unknown_status, &unknown), (wrong_status, &wrong));
    for h in [
        "content-type",
        "content-length",
        "www-authenticate",
        "set-cookie",
    ] {
        assert_eq!(unknown_headers.get(h), wrong_headers.get(h), "{h}");
    }
    // Password bounds: 8-128.
    let r = attempt(OWNER, "1234567");
    assert_eq!(r.status(), 400);
    assert_eq!(error_code(&r.json().unwrap()), "validation/invalid_request");
    assert_eq!(attempt(OWNER, &"p".repeat(129)).status(), 400);
    assert_eq!(attempt(OWNER, &"p".repeat(8)).status(), 401);
    // Five failures in all: the account is throttled, even for the right password.
    for _ in 0..3 {
        assert_eq!(attempt(OWNER, "wrong password").status(), 401);
    }
    let blocked = attempt(OWNER, PASSWORD);
    assert_eq!(blocked.status(), 429);
    let retry: u64 = blocked.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=15).contains(&retry), "{retry}");
    assert!(blocked.headers().contains_key("x-service-docs"));
    assert_eq!(
        error_code(&blocked.json().unwrap()),
        "dashboard/rate_limited"
    );
    // Another account from the same address is not blocked yet.
    assert_eq!(
        attempt("nobody@example.com", "wrong password").status(),
        401
    );
}

#[test]
fn logout_ends_the_session_and_clears_the_cookie() {
    let (srv, s, _) = owner_setup("Dash Co");
    let r = srv.dash("POST", "/v1/auth/dashboard/logout", &s, None);
    assert_eq!(r.status(), 204);
    assert!(r.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .contains("Max-Age=0"));
    let r = srv.dash("GET", "/v1/auth/dashboard/tenants", &s, None);
    assert_eq!(r.status(), 401);
    assert_eq!(error_code(&r.json().unwrap()), "dashboard/unauthenticated");
}

#[test]
fn cookie_writes_need_the_csrf_header() {
    let (srv, s, _) = owner_setup("Dash Co");
    let path = srv.url("/v1/auth/dashboard/tenants/dash-co/settings/security");
    let cookie = format!("dashboard_session={}", s.token);
    let body = json!({"magic_link_enabled": false});
    let r = srv
        .client
        .patch(&path)
        .header("cookie", &cookie)
        .json(&body)
        .send()
        .unwrap();
    assert_eq!(r.status(), 403);
    assert_eq!(error_code(&r.json().unwrap()), "dashboard/csrf_failed");
    let r = srv
        .client
        .patch(&path)
        .header("cookie", &cookie)
        .header("x-csrf-token", "not-the-value")
        .json(&body)
        .send()
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = srv
        .client
        .patch(&path)
        .header("cookie", &cookie)
        .header("x-csrf-token", &s.csrf)
        .json(&body)
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().unwrap()["magic_link_enabled"], false);
    // A bearer-authenticated write needs no CSRF header.
    let r = srv.dash(
        "PATCH",
        "/v1/auth/dashboard/tenants/dash-co/settings/security",
        &s,
        Some(&json!({"magic_link_enabled": true})),
    );
    assert_eq!(r.status(), 200);
}

/// Every tenant-scoped dashboard route, with a valid body for writes.
fn tenant_routes(slug: &str) -> Vec<(&'static str, String, Option<Value>)> {
    let base = format!("/v1/auth/dashboard/tenants/{slug}");
    vec![
        ("GET", base.clone(), None),
        ("GET", format!("{base}/members"), None),
        (
            "POST",
            format!("{base}/members"),
            Some(json!({"email": "x@example.com", "role": "viewer"})),
        ),
        ("GET", format!("{base}/audit-events"), None),
        ("POST", format!("{base}/api-key/rotate"), None),
        ("GET", format!("{base}/settings/security"), None),
        (
            "PATCH",
            format!("{base}/settings/security"),
            Some(json!({"email_otp_enabled": true})),
        ),
        ("GET", format!("{base}/settings/email-domains"), None),
        (
            "PUT",
            format!("{base}/settings/email-domains"),
            Some(json!({"allowlist": [], "blocklist": []})),
        ),
        ("GET", format!("{base}/settings/anonymous"), None),
        (
            "PATCH",
            format!("{base}/settings/anonymous"),
            Some(json!({"anonymous_user_ttl_days": 30})),
        ),
        ("GET", format!("{base}/settings/roles"), None),
        (
            "PATCH",
            format!("{base}/settings/roles"),
            Some(json!({"default_role": "member"})),
        ),
        ("GET", format!("{base}/settings/passkey-domain"), None),
        (
            "PUT",
            format!("{base}/settings/passkey-domain"),
            Some(json!({"passkey_rp_id": null})),
        ),
        ("GET", format!("{base}/settings/eudi"), None),
        (
            "PUT",
            format!("{base}/settings/eudi"),
            Some(json!({"enabled": false, "requested_attributes": ["email"]})),
        ),
        ("GET", format!("{base}/settings/eudi-age"), None),
        (
            "PUT",
            format!("{base}/settings/eudi-age"),
            Some(json!({"age_verification_enabled": false})),
        ),
    ]
}

#[test]
fn another_tenant_is_404_everywhere_and_no_session_is_401() {
    let (srv, s, _) = owner_setup("Dash Co");
    srv.signup("Other Co", "other@example.com");
    for (method, path, body) in tenant_routes("other-co") {
        let r = srv.dash(method, &path, &s, body.as_ref());
        assert_eq!(r.status(), 404, "{method} {path}");
    }
    for (method, path, body) in tenant_routes("no-such-tenant") {
        assert_eq!(
            srv.dash(method, &path, &s, body.as_ref()).status(),
            404,
            "{method} {path}"
        );
    }
    for (method, path, body) in tenant_routes("dash-co") {
        let mut req = srv.client.request(method.parse().unwrap(), srv.url(&path));
        if let Some(b) = &body {
            req = req.json(b);
        }
        let r = req.send().unwrap();
        assert_eq!(r.status(), 401, "{method} {path}");
        assert_eq!(error_code(&r.json().unwrap()), "dashboard/unauthenticated");
    }
}

#[test]
fn invitations_are_emailed_single_use_and_viewers_cannot_write() {
    let smtp = SmtpStub::start();
    let env = smtp.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let srv = TestServer::start_with(&env);
    srv.signup("Team Co", OWNER);
    let owner = srv.login(OWNER, PASSWORD);
    let r = srv.dash(
        "POST",
        "/v1/auth/dashboard/tenants/team-co/members",
        &owner,
        Some(&json!({"email": "Viewer@Example.com", "role": "viewer"})),
    );
    assert_eq!(r.status(), 201);
    let invited: Value = r.json().unwrap();
    assert_eq!(invited["status"], "invited");
    assert_eq!(invited["email"], "viewer@example.com");
    assert_eq!(invited["email_sent"], true);
    let mail = smtp.messages.lock().unwrap().last().cloned().unwrap();
    assert!(mail.contains("viewer@example.com"), "{mail}");
    let token = smtp.last_param("token").unwrap();
    assert!(token.len() >= 43, "{token}");

    let accept = |password: &str| {
        srv.post_json(
            "/v1/auth/dashboard/accept-invite",
            &json!({"token": token, "password": password}),
        )
    };
    assert_eq!(accept("short").status(), 400);
    let r = accept("viewer password 1");
    assert_eq!(r.status(), 200);
    let joined: Value = r.json().unwrap();
    assert_eq!(joined["tenant_slug"], "team-co");
    assert_eq!(joined["role"], "viewer");
    // Single use.
    let r = accept("viewer password 1");
    assert_eq!(r.status(), 400);
    assert_eq!(error_code(&r.json().unwrap()), "dashboard/invite_invalid");

    let viewer = srv.login("viewer@example.com", "viewer password 1");
    assert_eq!(viewer.body["tenants"][0]["role"], "viewer");
    // Reads work; every write is 403.
    for (method, path, body) in tenant_routes("team-co") {
        let r = srv.dash(method, &path, &viewer, body.as_ref());
        if method == "GET" {
            assert_eq!(r.status(), 200, "{method} {path}");
        } else {
            assert_eq!(r.status(), 403, "{method} {path}");
            assert_eq!(error_code(&r.json().unwrap()), "dashboard/forbidden");
        }
    }
    let members: Value = srv
        .dash(
            "GET",
            "/v1/auth/dashboard/tenants/team-co/members",
            &owner,
            None,
        )
        .json()
        .unwrap();
    let list: Vec<(String, String)> = members["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["email"].as_str().unwrap().to_owned(),
                m["role"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        list,
        vec![
            (OWNER.to_owned(), "owner".to_owned()),
            ("viewer@example.com".to_owned(), "viewer".to_owned())
        ]
    );
    // Inviting an address that has an account is an invitation too: nobody is added before
    // accepting. Inviting a member again is a conflict.
    srv.signup("Elsewhere", "admin@example.com");
    let r = srv.dash(
        "POST",
        "/v1/auth/dashboard/tenants/team-co/members",
        &owner,
        Some(&json!({"email": "admin@example.com", "role": "admin"})),
    );
    assert_eq!(r.status(), 201);
    assert_eq!(r.json::<Value>().unwrap()["status"], "invited");
    let admin = srv.login("admin@example.com", PASSWORD);
    assert_eq!(admin.body["tenants"].as_array().unwrap().len(), 1);
    let r = srv.dash(
        "POST",
        "/v1/auth/dashboard/tenants/team-co/members",
        &owner,
        Some(&json!({"email": "viewer@example.com", "role": "admin"})),
    );
    assert_eq!(r.status(), 409);
    assert_eq!(error_code(&r.json().unwrap()), "dashboard/already_member");
    let r = srv.dash(
        "POST",
        "/v1/auth/dashboard/tenants/team-co/members",
        &owner,
        Some(&json!({"email": "x@example.com", "role": "superuser"})),
    );
    assert_eq!(r.status(), 400);
}

#[test]
fn api_key_rotation_needs_a_fresh_reauth_and_kills_the_old_key() {
    let (srv, s, tenant) = owner_setup("Dash Co");
    let old_key = tenant["api_key"].as_str().unwrap();
    let path = "/v1/auth/dashboard/tenants/dash-co/api-key/rotate";
    let r = srv.dash("POST", path, &s, None);
    assert_eq!(r.status(), 401);
    assert_eq!(error_code(&r.json().unwrap()), "dashboard/reauth_required");
    let r = srv.dash(
        "POST",
        "/v1/auth/dashboard/reauth",
        &s,
        Some(&json!({"password": "wrong password"})),
    );
    assert_eq!(r.status(), 401);
    let r = srv.dash(
        "POST",
        "/v1/auth/dashboard/reauth",
        &s,
        Some(&json!({"password": PASSWORD})),
    );
    assert_eq!(r.status(), 200);
    assert!(r.json::<Value>().unwrap()["verified_at"].is_string());
    let r = srv.dash("POST", path, &s, None);
    assert_eq!(r.status(), 200);
    let new_key = r.json::<Value>().unwrap()["api_key"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(srv.get("/v1/tenant", Some(old_key)).status(), 401);
    assert_eq!(srv.get("/v1/tenant", Some(&new_key)).status(), 200);
    // The admin CLI's rotation is audited too.
    srv.admin(&["apikey", "rotate", "dash-co"], "").json();
    let events: Value = srv
        .dash(
            "GET",
            "/v1/auth/dashboard/tenants/dash-co/audit-events?type=api_key.rotated",
            &s,
            None,
        )
        .json()
        .unwrap();
    let events = events["data"].as_array().unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["ua_family"], "admin-cli");
    assert!(events[0]["actor_account_id"].is_null());
    assert_eq!(events[1]["actor_account_id"], s.body["account"]["id"]);
}

#[test]
fn the_audit_log_pages_newest_first_and_holds_no_secrets() {
    let (srv, s, _) = owner_setup("Dash Co");
    srv.reauth(&s, PASSWORD);
    let token = "t".repeat(40);
    for body in [
        json!({"mfa_policy": "required"}),
        json!({"byok_provider_auth_token": token}),
        json!({"sms_otp_enabled": true, "sms_otp_monthly_cap": 10}),
    ] {
        let r = srv.dash(
            "PATCH",
            "/v1/auth/dashboard/tenants/dash-co/settings/security",
            &s,
            Some(&body),
        );
        assert_eq!(r.status(), 200, "{body}");
    }
    let base = "/v1/auth/dashboard/tenants/dash-co/audit-events";
    let all: Value = srv.dash("GET", base, &s, None).json().unwrap();
    let types: Vec<&str> = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        vec![
            "settings.security.updated",
            "settings.security.updated",
            "settings.security.updated",
            "dashboard.login"
        ]
    );
    let newest = &all["data"][0];
    assert_eq!(
        newest["fields"],
        json!(["sms_otp_enabled", "sms_otp_monthly_cap"])
    );
    assert_eq!(newest["actor_account_id"], s.body["account"]["id"]);
    assert_eq!(newest["ip_hash_prefix"].as_str().unwrap().len(), 12);
    assert_eq!(newest["ua_family"], "library");
    assert_eq!(
        all["data"][1]["fields"],
        json!(["byok_provider_auth_token"])
    );
    assert!(
        !all.to_string().contains(&token),
        "a secret reached the audit log"
    );
    assert_eq!(all["pagination"]["has_more"], false);
    // Pages of one, following the cursor.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("{base}?limit=1&cursor={c}"),
            None => format!("{base}?limit=1"),
        };
        let page: Value = srv.dash("GET", &path, &s, None).json().unwrap();
        seen.push(page["data"][0]["id"].as_str().unwrap().to_owned());
        if page["pagination"]["has_more"] == false {
            break;
        }
        cursor = Some(
            page["pagination"]["next_cursor"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    let ids: Vec<String> = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(seen, ids);
    // The type filter.
    let logins: Value = srv
        .dash("GET", &format!("{base}?type=dashboard.login"), &s, None)
        .json()
        .unwrap();
    assert_eq!(logins["data"].as_array().unwrap().len(), 1);
    // Bounds.
    for q in ["limit=0", "limit=201", "limit=x", "cursor=zz", "cursor=00"] {
        let r = srv.dash("GET", &format!("{base}?{q}"), &s, None);
        assert_eq!(r.status(), 400, "{q}");
    }
    assert_eq!(
        srv.dash("GET", &format!("{base}?limit=200"), &s, None)
            .status(),
        200
    );
}

/// Moves the server's clock `secs` seconds on (a restart with the fault drills' offset). The
/// server is stopped with SIGTERM: a session's touch is not waited for on disk, a clean stop
/// writes it.
fn clock_at(srv: &mut TestServer, secs: u64) {
    assert!(srv.terminate().success());
    srv.restart_with(&[("TESSERA__TESTING__CLOCK_OFFSET_SECS", &secs.to_string())]);
}

#[track_caller]
fn assert_signed_out(srv: &TestServer, s: &Session, what: &str) {
    let r = srv.dash("GET", "/v1/auth/dashboard/tenants", s, None);
    assert_eq!(r.status(), 401, "{what}");
    assert_eq!(error_code(&r.json().unwrap()), "dashboard/unauthenticated");
}

#[track_caller]
fn assert_signed_in(srv: &TestServer, s: &Session, what: &str) {
    let r = srv.dash("GET", "/v1/auth/dashboard/tenants", s, None);
    assert_eq!(r.status(), 200, "{what}");
}

#[test]
fn activity_extends_the_idle_timeout_and_the_absolute_lifetime_still_ends_a_session() {
    // Idle 10 minutes, absolute 30 minutes; the clock moves by the drills' offset.
    let mut srv = TestServer::start_with(&[
        ("TESSERA__TESTING__FAULT_INJECTION", "true"),
        ("TESSERA__DASHBOARD__IDLE_TIMEOUT_SECS", "600"),
        ("TESSERA__DASHBOARD__ABSOLUTE_TIMEOUT_SECS", "1800"),
    ]);
    srv.signup("Idle Co", OWNER);
    let busy = srv.login(OWNER, PASSWORD);
    let idle = srv.login(OWNER, PASSWORD);
    assert_signed_in(&srv, &busy, "at login");
    assert_signed_in(&srv, &idle, "at login");

    // Every restart adds its real time to the offset: the checks keep 30 s or more of margin.
    clock_at(&mut srv, 570);
    assert_signed_in(&srv, &busy, "30 s before the idle end, used");
    clock_at(&mut srv, 610);
    assert_signed_out(&srv, &idle, "10 min 10 s without a request");
    assert_signed_in(&srv, &busy, "used 40 s ago");
    // (A session is touched at most once a minute: the use at 610 s did not move it.)
    clock_at(&mut srv, 1130);
    assert_signed_in(&srv, &busy, "used 560 s ago, past the first idle end");
    clock_at(&mut srv, 1680);
    assert_signed_in(&srv, &busy, "used 550 s ago");
    clock_at(&mut srv, 1740);
    assert_signed_in(&srv, &busy, "used 60 s ago, 60 s before the absolute end");
    clock_at(&mut srv, 1810);
    assert_signed_out(&srv, &busy, "used 70 s ago, but 30 min 10 s after login");
}
