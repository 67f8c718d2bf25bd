//! Browser apps on their own origin: preflights, a tenant's `allowed_origins` enforced on real
//! requests before anything happens, and the dashboard kept same-origin unless the operator
//! lists origins.

use std::time::Duration;

use reqwest::blocking::RequestBuilder;
use serde_json::{json, Value};

use crate::{
    capacity::running_tenants,
    support::{
        audit_events, error_code, eventually, spawn, start_with_mail, user_setup, AuthAnswer,
        Session, TestServer, UserApi, PASSWORD,
    },
};

const APP: &str = "https://app.example.com";
const EVIL: &str = "https://evil.example";
const ALLOWED_HEADERS: &str =
    "authorization, content-type, x-api-key, x-step-up-token, x-request-id, x-service-confirm";
const EXPOSED: &str = "Retry-After, X-Request-Id, WWW-Authenticate, X-Service-Docs";

fn cors_path(slug: &str) -> String {
    format!("/v1/auth/dashboard/tenants/{slug}/settings/cors")
}

fn put_origins(srv: &TestServer, s: &Session, slug: &str, origins: Value) -> (u16, Value) {
    let r = srv.dash(
        "PUT",
        &cors_path(slug),
        s,
        Some(&json!({ "allowed_origins": origins })),
    );
    (r.status().as_u16(), r.json().unwrap_or(Value::Null))
}

fn send(req: RequestBuilder) -> AuthAnswer {
    AuthAnswer::read(req.send().unwrap())
}

/// A preflight as a browser sends it before a cross-origin call with custom headers.
fn preflight(srv: &TestServer, path: &str, origin: &str, method: &str) -> AuthAnswer {
    send(
        srv.client
            .request(reqwest::Method::OPTIONS, srv.url(path))
            .header("origin", origin)
            .header("access-control-request-method", method)
            .header("access-control-request-headers", "content-type, x-api-key"),
    )
}

/// A login with `password` from `origin` (or none), as a browser app sends it.
fn login_from(api: &UserApi, origin: Option<&str>, email: &str, password: &str) -> AuthAnswer {
    let mut req = api
        .client
        .post(api.url("/v1/auth/login"))
        .header("x-api-key", &api.api_key)
        .json(&json!({"email": email, "password": password}));
    if let Some(o) = origin {
        req = req.header("origin", o);
    }
    send(req)
}

fn vary_has_origin(a: &AuthAnswer) -> bool {
    a.headers
        .get_all("vary")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| v.trim().eq_ignore_ascii_case("origin"))
}

#[track_caller]
fn assert_allowed(a: &AuthAnswer, origin: &str) {
    assert_eq!(
        a.header("access-control-allow-origin").as_deref(),
        Some(origin)
    );
    assert_eq!(
        a.header("access-control-expose-headers").as_deref(),
        Some(EXPOSED)
    );
    assert_eq!(a.header("access-control-allow-credentials"), None);
    assert!(vary_has_origin(a));
}

#[test]
fn preflights_on_end_user_routes_answer_any_origin_with_the_routes_methods() {
    let (_smtp, srv, api, s) = user_setup("Cors Co", &[]);
    // Even with a list set: a preflight carries no API key, so it names no tenant.
    assert_eq!(put_origins(&srv, &s, &api.slug, json!([APP])).0, 200);
    for (path, method, methods) in [
        ("/v1/auth/login", "POST", "POST"),
        ("/v1/auth/me", "GET", "GET"),
        (
            "/v1/auth/sessions/0b5f3c36-9d2b-4a43-9f0e-8a2b1c3d4e5f",
            "DELETE",
            "DELETE",
        ),
    ] {
        for origin in [APP, EVIL] {
            let a = preflight(&srv, path, origin, method);
            assert_eq!(a.status, 204, "{path} from {origin}: {}", a.body);
            assert_eq!(
                a.header("access-control-allow-origin").as_deref(),
                Some(origin)
            );
            assert_eq!(
                a.header("access-control-allow-methods").as_deref(),
                Some(methods)
            );
            assert_eq!(
                a.header("access-control-allow-headers").as_deref(),
                Some(ALLOWED_HEADERS)
            );
            assert_eq!(a.header("access-control-max-age").as_deref(), Some("600"));
            assert_eq!(a.header("access-control-allow-credentials"), None);
            assert!(vary_has_origin(&a), "{path}");
        }
    }
    // An OPTIONS request that is not a preflight is still not a method of the route.
    let plain = send(
        srv.client
            .request(reqwest::Method::OPTIONS, srv.url("/v1/auth/login"))
            .header("origin", APP),
    );
    assert_eq!(plain.status, 405);
    // Platform routes are not for browsers.
    let health = preflight(&srv, "/healthz", APP, "GET");
    assert_eq!(health.status, 405);
    assert_eq!(health.header("access-control-allow-origin"), None);
}

#[test]
fn a_tenant_origin_list_refuses_other_origins_before_anything_happens() {
    let (smtp, srv) = start_with_mail(&[]);
    let api = UserApi::signup(&srv, "Cors Co", "owner@cors.example");
    let s = srv.login("owner@cors.example", PASSWORD);
    let email = "user@cors.example";
    api.verified_user(&smtp, email, "a long enough passphrase");

    // The list is stored normalized, as browsers send origins.
    let (status, body) = put_origins(
        &srv,
        &s,
        &api.slug,
        json!(["https://App.Example.com/", "http://localhost:3000", APP]),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["allowed_origins"],
        json!([APP, "http://localhost:3000"])
    );
    let read: Value = srv
        .dash("GET", &cors_path(&api.slug), &s, None)
        .json()
        .unwrap();
    assert_eq!(read, body);
    assert_eq!(
        audit_events(&srv, &s, &api.slug, "settings.cors.updated").len(),
        1
    );

    // Far more wrong passwords than the throttle's free failures, from a refused origin:
    // each is refused before the tenant sees it.
    for _ in 0..12 {
        let a = login_from(&api, Some(EVIL), email, "wrong password entirely");
        a.expect_error(403, "cors/origin_not_allowed");
        assert_eq!(a.header("access-control-allow-origin"), None);
    }
    // Nothing counted: no failed login in the audit log, and the right password from an
    // allowed origin is not throttled.
    assert!(audit_events(&srv, &s, &api.slug, "auth.login.failed").is_empty());
    let ok = login_from(&api, Some(APP), email, "a long enough passphrase");
    ok.expect(200);
    assert_allowed(&ok, APP);
    // A refused registration creates nobody.
    let created_before = audit_events(&srv, &s, &api.slug, "auth.register").len();
    let reg = send(
        api.client
            .post(api.url("/v1/auth/register"))
            .header("x-api-key", &api.api_key)
            .header("origin", EVIL)
            .json(&json!({"email": "other@cors.example", "password": "a long enough passphrase", "consent": true})),
    );
    reg.expect_error(403, "cors/origin_not_allowed");
    assert_eq!(
        audit_events(&srv, &s, &api.slug, "auth.register").len(),
        created_before
    );

    // A back end sends no Origin: not a browser, not checked; the answer varies on it.
    let server_side = login_from(&api, None, email, "a long enough passphrase");
    server_side.expect(200);
    assert_eq!(server_side.header("access-control-allow-origin"), None);
    assert!(vary_has_origin(&server_side));
    // The server's own origin (its pages) is never refused.
    let own = srv.base.trim_end_matches('/').to_owned();
    login_from(&api, Some(&own), email, "a long enough passphrase").expect(200);
    // A key that names no tenant has no list: the handler's 401 is readable by the app.
    let bad_key = send(
        api.client
            .post(api.url("/v1/auth/login"))
            .header("x-api-key", "not-a-key")
            .header("origin", EVIL)
            .json(&json!({"email": email, "password": "x"})),
    );
    bad_key.expect_error(401, "auth/invalid_api_key");
    assert_eq!(
        bad_key.header("access-control-allow-origin").as_deref(),
        Some(EVIL)
    );

    // Another tenant without a list answers any origin.
    let other = UserApi::signup(&srv, "Open Co", "owner@open.example");
    let open = send(
        other
            .client
            .get(other.url("/v1/tenant"))
            .header("x-api-key", &other.api_key)
            .header("origin", EVIL),
    );
    open.expect(200);
    assert_allowed(&open, EVIL);

    // Emptying the list opens the tenant to any origin again.
    assert_eq!(put_origins(&srv, &s, &api.slug, json!([])).0, 200);
    let a = login_from(&api, Some(EVIL), email, "a long enough passphrase");
    a.expect(200);
    assert_allowed(&a, EVIL);
}

#[test]
fn the_origin_list_survives_a_restart_and_an_idle_stop() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut srv = TestServer::start_in(&data, &[("TESSERA__SERVER__TENANT_IDLE_SECS", "1")]);
    let mut api = UserApi::signup(&srv, "Kept Co", "owner@kept.example");
    let s = srv.login("owner@kept.example", PASSWORD);
    assert_eq!(put_origins(&srv, &s, &api.slug, json!([APP])).0, 200);
    let tenant = |api: &UserApi, origin: &str| {
        send(
            api.client
                .get(api.url("/v1/tenant"))
                .header("x-api-key", &api.api_key)
                .header("origin", origin),
        )
    };
    // The tenant's actor is stopped when idle; the next request starts it and the list holds.
    assert!(
        eventually(Duration::from_secs(10), || running_tenants(&srv) == 0),
        "the idle tenant's actor is still running"
    );
    tenant(&api, EVIL).expect_error(403, "cors/origin_not_allowed");
    srv.kill();
    srv.restart();
    api.rebase(&srv);
    // The first request after the restart starts the actor: refused all the same.
    tenant(&api, EVIL).expect_error(403, "cors/origin_not_allowed");
    tenant(&api, APP).expect(200);
}

#[test]
fn the_origin_list_is_validated_and_bounded() {
    let (_smtp, srv, api, s) = user_setup("Cors Co", &[]);
    let bad = |origins: Value, field: &str| {
        let (status, body) = put_origins(&srv, &s, &api.slug, origins.clone());
        assert_eq!(status, 400, "{origins} should be refused: {body}");
        assert_eq!(error_code(&body), "validation/invalid_request");
        assert!(
            body["error"]["details"]["fields"]
                .as_object()
                .unwrap()
                .contains_key(field),
            "{origins}: expected {field} in {body}"
        );
    };
    bad(
        json!([APP, "https://app.example.com/path"]),
        "allowed_origins[1]",
    );
    bad(json!(["app.example.com"]), "allowed_origins[0]");
    bad(json!(["https://app.example.com?x"]), "allowed_origins[0]");
    bad(json!(["https://u:p@app.example.com"]), "allowed_origins[0]");
    bad(json!(["null"]), "allowed_origins[0]");
    bad(json!([5]), "allowed_origins[0]");
    let fifty_one: Vec<String> = (0..51).map(|i| format!("https://a{i}.example")).collect();
    bad(json!(fifty_one), "allowed_origins");
    let (status, body) = put_origins(&srv, &s, &api.slug, json!(fifty_one[..50]));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["allowed_origins"].as_array().unwrap().len(), 50);
    // A refused update changed nothing.
    bad(json!(["https://ok.example", "bad"]), "allowed_origins[1]");
    let read: Value = srv
        .dash("GET", &cors_path(&api.slug), &s, None)
        .json()
        .unwrap();
    assert_eq!(read["allowed_origins"].as_array().unwrap().len(), 50);
    // The field is required; nothing else is taken.
    let r = srv.dash("PUT", &cors_path(&api.slug), &s, Some(&json!({})));
    assert_eq!(r.status(), 400);
    let r = srv.dash(
        "PUT",
        &cors_path(&api.slug),
        &s,
        Some(&json!({"allowed_origins": [], "site_url": APP})),
    );
    assert_eq!(r.status(), 400);
}

#[test]
fn the_dashboard_is_same_origin_unless_the_operator_lists_origins() {
    let srv = TestServer::start();
    srv.signup("Dash Co", "owner@dash.example");
    let login = |srv: &TestServer, origin: &str| {
        send(
            srv.client
                .post(srv.url("/v1/auth/dashboard/login"))
                .header("origin", origin)
                .json(&json!({"email": "owner@dash.example", "password": PASSWORD})),
        )
    };
    let pre = preflight(&srv, "/v1/auth/dashboard/login", APP, "POST");
    pre.expect_error(403, "cors/origin_not_allowed");
    assert_eq!(pre.header("access-control-allow-origin"), None);
    let real = login(&srv, APP);
    real.expect(200);
    assert_eq!(real.header("access-control-allow-origin"), None);
    assert_eq!(real.header("access-control-allow-credentials"), None);
    drop(srv);

    let admin = "https://admin.example.com";
    let srv = TestServer::start_with(&[(
        "TESSERA__SERVER__DASHBOARD_ORIGINS",
        "[\"https://Admin.Example.com\"]",
    )]);
    srv.signup("Dash Co", "owner@dash.example");
    let pre = preflight(&srv, "/v1/auth/dashboard/login", admin, "POST");
    assert_eq!(pre.status, 204, "{}", pre.body);
    assert_eq!(
        pre.header("access-control-allow-origin").as_deref(),
        Some(admin)
    );
    assert_eq!(
        pre.header("access-control-allow-credentials").as_deref(),
        Some("true")
    );
    assert_eq!(
        pre.header("access-control-allow-methods").as_deref(),
        Some("POST")
    );
    assert!(pre
        .header("access-control-allow-headers")
        .unwrap()
        .contains("x-csrf-token"));
    let real = login(&srv, admin);
    real.expect(200);
    assert_eq!(
        real.header("access-control-allow-origin").as_deref(),
        Some(admin)
    );
    assert_eq!(
        real.header("access-control-allow-credentials").as_deref(),
        Some("true")
    );
    // Any other origin still gets nothing it could use.
    preflight(&srv, "/v1/auth/dashboard/login", APP, "POST")
        .expect_error(403, "cors/origin_not_allowed");
    let other = login(&srv, APP);
    assert_eq!(other.header("access-control-allow-origin"), None);
    assert_eq!(other.header("access-control-allow-credentials"), None);
}

#[test]
fn a_dashboard_origin_that_is_not_an_origin_stops_the_server_at_start() {
    let tmp = tempfile::tempdir().unwrap();
    let env = vec![(
        "TESSERA__SERVER__DASHBOARD_ORIGINS".to_owned(),
        "[\"https://admin.example.com/app\"]".to_owned(),
    )];
    let Err((status, log)) = spawn(&tmp.path().join("data"), &env, &tmp.path().join("log")) else {
        panic!("the server started with a path in server.dashboard_origins");
    };
    assert!(!status.success());
    assert!(log.contains("server.dashboard_origins"), "{log}");
}
