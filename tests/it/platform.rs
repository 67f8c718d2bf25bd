//! Health, readiness, metrics, the OpenAPI document, request ids and the error envelope.

use std::{
    collections::BTreeSet,
    io::{Read, Write},
    net::TcpStream,
    time::Duration,
};

use serde_json::Value;

use crate::support::{error_code, eventually, TestServer};

#[test]
fn health_readiness_and_request_ids() {
    let srv = TestServer::start();
    let r = srv.get("/healthz", None);
    assert_eq!(r.status(), 200);
    assert!(r.headers().contains_key("x-request-id"));
    assert_eq!(r.json::<Value>().unwrap()["status"], "ok");
    let r = srv.get("/readyz", None);
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().unwrap()["status"], "ready");
    // A request id the client sends comes back; errors carry one too.
    let r = srv
        .client
        .get(srv.url("/healthz"))
        .header("x-request-id", "abc-123")
        .send()
        .unwrap();
    assert_eq!(r.headers()["x-request-id"], "abc-123");
    let r = srv.get("/no/such/route", None);
    assert_eq!(r.status(), 404);
    assert!(r.headers().contains_key("x-request-id"));
    assert_eq!(error_code(&r.json().unwrap()), "route/not_found");
}

#[test]
fn wrong_methods_get_405_with_allow_and_the_envelope() {
    let srv = TestServer::start();
    let r = srv.client.delete(srv.url("/healthz")).send().unwrap();
    assert_eq!(r.status(), 405);
    assert!(r.headers()["allow"].to_str().unwrap().contains("GET"));
    assert!(r.headers().contains_key("x-request-id"));
    assert_eq!(error_code(&r.json().unwrap()), "route/method_not_allowed");
    let r = srv
        .client
        .get(srv.url("/v1/onboarding/signup"))
        .send()
        .unwrap();
    assert_eq!(r.status(), 405);
}

/// A request that is not valid HTTP/1.1 (its body's framing cannot be trusted, or a header
/// holds a forbidden byte) never reaches a route: the HTTP layer answers a bare 400 and closes
/// the connection, so nothing after the broken header, such as a smuggled second request, is
/// ever read as a request.
#[test]
fn requests_with_broken_framing_get_400_and_the_connection_closed() {
    let srv = TestServer::start();
    let addr = srv.base.trim_start_matches("http://");
    let smuggled = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";
    let cases = [
        // A transfer coding the server does not know, with a request hidden in the body.
        format!("POST /v1/auth/register HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: tifvmv\r\n\r\n{smuggled}"),
        format!("POST /v1/auth/register HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n{smuggled}"),
        format!("POST /v1/auth/register HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n{smuggled}"),
        // Two lengths that disagree: which one ends the body is anyone's guess.
        format!("POST /v1/auth/register HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{{}}{smuggled}"),
        // DEL is not allowed in a header value (RFC 9110, section 5.5).
        format!("GET /healthz HTTP/1.1\r\nHost: t\r\nX-Note: a\x7fb\r\n\r\n{smuggled}"),
    ];
    for raw in &cases {
        let mut conn = TcpStream::connect(addr).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        conn.write_all(raw.as_bytes()).unwrap();
        // read_to_end returns only once the server closes the connection.
        let mut answer = Vec::new();
        conn.read_to_end(&mut answer)
            .unwrap_or_else(|e| panic!("connection left open ({e}) after {raw:?}"));
        let answer = String::from_utf8_lossy(&answer);
        assert!(
            answer.starts_with("HTTP/1.1 400 "),
            "{raw:?} got {answer:?}"
        );
        assert_eq!(
            answer.matches("HTTP/1.1 ").count(),
            1,
            "{raw:?} got {answer:?}"
        );
    }
    // The same requests, well framed, are served.
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    conn.write_all(
        format!("{smuggled}GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    )
    .unwrap();
    let mut answer = Vec::new();
    conn.read_to_end(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert_eq!(answer.matches("HTTP/1.1 200 ").count(), 2, "{answer:?}");
}

#[test]
fn metrics_count_requests_by_route_and_tenant_actors() {
    let srv = TestServer::start();
    let t = srv.signup("Metrics Co", "m@example.com");
    let key = t["api_key"].as_str().unwrap();
    assert_eq!(srv.get("/v1/tenant", Some(key)).status(), 200);
    assert_eq!(srv.get("/v1/tenant", Some(key)).status(), 200);
    srv.get("/nowhere/secret-token-in-path", None);
    let text = srv.get("/metrics", None).text().unwrap();
    assert!(
        text.contains(
            r#"tessera_http_requests_total{method="GET",route="/v1/tenant",status="200"} 2"#
        ),
        "{text}"
    );
    assert!(
        text.contains(r#"route="/v1/onboarding/signup",status="201"} 1"#),
        "{text}"
    );
    assert!(
        text.contains("tessera_http_request_duration_seconds_bucket"),
        "{text}"
    );
    assert!(text.contains("tessera_tenant_actors_running 1"), "{text}");
    // Concrete paths never become labels.
    assert!(!text.contains("secret-token-in-path"));
    assert!(text.contains(r#"route="unmatched""#));
}

/// With `server.metrics_listen`, `/metrics` is served on that management listener only: the
/// public listener answers it like any unknown route, and its OpenAPI document leaves it out.
#[test]
fn metrics_move_to_the_management_listener() {
    let srv = TestServer::start_with(&[("TESSERA__SERVER__METRICS_LISTEN", "127.0.0.1:0")]);
    // The server names the management address on stdout, after the listening line.
    let mut url = String::new();
    assert!(
        eventually(Duration::from_secs(10), || {
            let lines = srv.stdout.lock().unwrap();
            match lines
                .iter()
                .find_map(|l| l.strip_prefix("tessera metrics on "))
            {
                Some(u) => {
                    url = u.trim().to_owned();
                    true
                }
                None => false,
            }
        }),
        "no metrics line on stdout: {:?}",
        srv.stdout.lock().unwrap()
    );
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/metrics"),
        "{url}"
    );
    assert_ne!(url, srv.url("/metrics"));
    assert_eq!(srv.get("/healthz", None).status(), 200);
    let r = srv.client.get(&url).send().unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/openmetrics-text"));
    let text = r.text().unwrap();
    assert!(
        text.contains(
            r#"tessera_http_requests_total{method="GET",route="/healthz",status="200"} 1"#
        ),
        "{text}"
    );
    // The public listener no longer serves it...
    let r = srv.get("/metrics", None);
    assert_eq!(r.status(), 404);
    assert_eq!(error_code(&r.json().unwrap()), "route/not_found");
    let doc: Value = srv.get("/v1/openapi.json", None).json().unwrap();
    assert!(doc["paths"].get("/metrics").is_none());
    assert!(doc["paths"].get("/healthz").is_some());
    // ...and the management listener serves nothing else.
    let other = url.replace("/metrics", "/healthz");
    let r = srv.client.get(&other).send().unwrap();
    assert_eq!(r.status(), 404);
    assert_eq!(error_code(&r.json().unwrap()), "route/not_found");
}

/// A 429's `X-Service-Docs` is `server.docs_url`; by default, the served OpenAPI document
/// (whose 429 answers state each route's limits).
#[test]
fn rate_limited_answers_link_the_configured_docs() {
    let limited = |srv: &TestServer| {
        let attempt = || {
            srv.post_json(
                "/v1/auth/dashboard/login",
                &serde_json::json!({"email": "nobody@example.com", "password": "wrong password"}),
            )
        };
        for _ in 0..5 {
            assert_eq!(attempt().status(), 401);
        }
        let r = attempt();
        assert_eq!(r.status(), 429);
        r.headers()["x-service-docs"].to_str().unwrap().to_owned()
    };
    let srv = TestServer::start_with(&[(
        "TESSERA__SERVER__DOCS_URL",
        "https://status.example.com/help/rate-limits",
    )]);
    assert_eq!(limited(&srv), "https://status.example.com/help/rate-limits");
    let srv = TestServer::start();
    assert_eq!(limited(&srv), srv.url("/v1/openapi.json"));
}

/// Every route the tests know the server serves, by method.
const SERVED: &[(&str, &str)] = &[
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/metrics"),
    ("get", "/v1/openapi.json"),
    ("post", "/v1/onboarding/signup"),
    ("get", "/v1/tenant"),
    ("get", "/v1/tenants/{slug}"),
];

const METHODS: &[&str] = &["get", "post", "put", "patch", "delete"];

fn documented(doc: &Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for m in METHODS {
            if item.get(*m).is_some() {
                out.insert((m.to_string(), path.clone()));
            }
        }
    }
    out
}

/// Whether the server routes `method path` (anything but 404 `route/not_found` and 405).
fn is_served(srv: &TestServer, method: &str, path: &str) -> bool {
    let concrete = path.replace("{slug}", "some-slug");
    let req = srv
        .client
        .request(method.to_uppercase().parse().unwrap(), srv.url(&concrete));
    let r = req.send().unwrap();
    let status = r.status().as_u16();
    let body: Value = r.json().unwrap_or(Value::Null);
    !(status == 405 || (status == 404 && error_code(&body) == "route/not_found"))
}

#[test]
fn the_openapi_document_is_3_1_and_covers_every_served_route() {
    let srv = TestServer::start();
    let doc: Value = srv.get("/v1/openapi.json", None).json().unwrap();
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    assert_eq!(doc["info"]["version"], "1.0.0");
    let documented = documented(&doc);
    // Everything known to be served is documented...
    for (m, p) in SERVED {
        assert!(
            documented.contains(&(m.to_string(), p.to_string())),
            "{m} {p} is served but missing from the OpenAPI document"
        );
    }
    // ...every documented operation is really served...
    for (m, p) in &documented {
        assert!(
            is_served(&srv, m, p),
            "{m} {p} is documented but not served"
        );
    }
    // ...and no other method on a documented path is served undocumented.
    let paths: BTreeSet<&String> = documented.iter().map(|(_, p)| p).collect();
    for p in paths {
        for m in METHODS {
            if !documented.contains(&(m.to_string(), p.clone())) {
                assert!(!is_served(&srv, m, p), "{m} {p} is served but undocumented");
            }
        }
    }
    // Request and response types come from the code.
    let schemas = &doc["components"]["schemas"];
    assert!(schemas["OnboardingSignupRequest"]["properties"]["password"]["minLength"] == 12);
    assert!(schemas.get("ErrorBody").is_some());
}
