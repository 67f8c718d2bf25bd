//! Clients as the network shows them: addresses on a dual-stack listener, IPv6 prefixes and
//! proxies' `X-Forwarded-For`, and connections that send nothing.

use std::{
    io::{ErrorKind, Read, Write},
    net::{IpAddr, SocketAddr, TcpStream},
    time::Duration,
};

use serde_json::{json, Value};

use crate::support::{
    client_from, connect_from, error_code, port_of, AuthAnswer, TestServer, UserApi, USER_PASSWORD,
};

const WRONG: &str = "not the password at all";

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// `api` as seen from the local address `from`.
fn api_from(api: &UserApi, from: &str) -> UserApi {
    UserApi {
        base: api.base.clone(),
        client: client_from(ip(from)),
        api_key: api.api_key.clone(),
        slug: api.slug.clone(),
        tenant_id: api.tenant_id.clone(),
        owner: api.owner.clone(),
    }
}

/// On `listen = "[::]:..."` IPv4 clients arrive as `::ffff:a.b.c.d`. Each must count as its
/// own address: one client's failed logins or registrations must not block the others, as
/// they did when every mapped address fell into the one IPv6 /64 `::/64`.
#[test]
fn ipv4_clients_of_a_dual_stack_listener_are_counted_apart() {
    // Five failed sign-ins per client address, so the address's count is reached quickly.
    let mut srv = TestServer::start_listening(
        "[::]:0",
        &[("TESSERA__SECURITY__LOGIN_FAILURES_PER_ADDRESS", "5")],
    );
    assert!(srv.base.contains("[::]"), "{}", srv.base);
    srv.base = format!("http://127.0.0.1:{}", port_of(&srv.base));
    let api = UserApi::signup(&srv, "Dual Stack", "owner@dual.example");
    let a = api_from(&api, "127.0.0.1");
    let b = api_from(&api, "127.0.0.2");

    // Client A fails five logins (each for another account): A is blocked...
    for i in 0..5 {
        a.login(&format!("a{i}@example.com"), WRONG)
            .expect_error(401, "auth/invalid_credentials");
    }
    a.login("a5@example.com", WRONG)
        .expect_error(429, "auth/too_many_attempts");
    // ...and B, another IPv4 client, is not.
    b.login("b0@example.com", WRONG)
        .expect_error(401, "auth/invalid_credentials");

    // The same for the registration limit (5 a minute per address).
    let register = |api: &UserApi, email: &str| {
        api.send(
            "POST",
            "/v1/auth/register",
            None,
            Some(&json!({"email": email, "password": USER_PASSWORD, "consent": true})),
        )
    };
    for i in 0..5 {
        register(&a, &format!("r{i}@example.com")).expect(200);
    }
    register(&a, "r5@example.com").expect_error(429, "auth/rate_limited");
    register(&b, "r6@example.com").expect(200);
}

/// The dashboard's per-address login limit (twenty failures) counts an IPv6 client by its
/// /64, like the end-user limits: forty addresses of one /64 are one client.
#[test]
fn dashboard_logins_count_ipv6_clients_by_their_64() {
    let srv = TestServer::start_with(&[
        ("TESSERA__SERVER__TRUSTED_PROXIES", "[\"127.0.0.1/32\"]"),
        ("TESSERA__SECURITY__LOGIN_FAILURES_PER_ADDRESS", "20"),
    ]);
    let attempt = |n: u32, from: &str| {
        srv.client
            .post(srv.url("/v1/auth/dashboard/login"))
            .header("x-forwarded-for", from)
            .json(&json!({"email": format!("nobody{n}@example.com"), "password": WRONG}))
            .send()
            .unwrap()
    };
    // Twenty failures, each from another address of 2001:db8:7:7::/64 (and another account).
    for n in 1..=20 {
        let r = attempt(n, &format!("2001:db8:7:7:{n:x}::1"));
        assert_eq!(r.status(), 401, "attempt {n}");
    }
    // The prefix is blocked, whichever address of it comes next...
    let r = attempt(21, "2001:db8:7:7:ffff:ffff:ffff:ffff");
    assert_eq!(r.status(), 429);
    assert_eq!(error_code(&r.json().unwrap()), "dashboard/rate_limited");
    // ...and the next /64 is not.
    assert_eq!(attempt(22, "2001:db8:7:8::1").status(), 401);
}

/// A trusted proxy whose `X-Forwarded-For` ends in something that is not an address
/// (`unknown`) cannot tell us the client. Such requests used to be counted against the proxy's
/// own address, so a few of them blocked every client behind it; now a route that counts by
/// client address refuses them with 400, and they block no one.
#[test]
fn an_unaddressed_forwarded_hop_is_refused_not_counted_against_the_proxy() {
    let srv = TestServer::start_with(&[("TESSERA__SERVER__TRUSTED_PROXIES", "[\"127.0.0.1/32\"]")]);
    let api = UserApi::signup(&srv, "Behind Proxy", "owner@proxy.example");
    let login_via = |forwarded: &str, email: &str| {
        api.send_as(
            Some(&api.api_key),
            "POST",
            "/v1/auth/login",
            None,
            Some(&json!({"email": email, "password": WRONG})),
            Some(forwarded),
        )
    };
    for (i, forwarded) in ["unknown", "203.0.113.9, unknown", "_hidden", "unknown"]
        .iter()
        .chain(["unknown", "unknown"].iter())
        .enumerate()
    {
        let r = login_via(forwarded, &format!("u{i}@example.com"));
        r.expect_error(400, "validation/invalid_request");
        assert!(
            r.body["error"]["details"]["fields"]
                .get("X-Forwarded-For")
                .is_some(),
            "{}",
            r.body
        );
    }
    // The dashboard login too.
    let r = srv
        .client
        .post(srv.url("/v1/auth/dashboard/login"))
        .header("x-forwarded-for", "unknown")
        .json(&json!({"email": "owner@proxy.example", "password": WRONG}))
        .send()
        .unwrap();
    assert_eq!(r.status(), 400);
    // None of them counted: a real client behind the proxy, and the proxy's own address, are
    // not blocked.
    login_via("203.0.113.10", "real@example.com").expect_error(401, "auth/invalid_credentials");
    let own = AuthAnswer::read(
        srv.client
            .post(srv.url("/v1/auth/login"))
            .header("x-api-key", &api.api_key)
            .json(&json!({"email": "proxy@example.com", "password": WRONG}))
            .send()
            .unwrap(),
    );
    own.expect_error(401, "auth/invalid_credentials");
    // Requests that need no client address are served as before.
    let r = srv
        .client
        .get(srv.url("/healthz"))
        .header("x-forwarded-for", "unknown")
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
}

fn server_addr(srv: &TestServer) -> SocketAddr {
    srv.base.trim_start_matches("http://").parse().unwrap()
}

/// Reads until the server closes `conn`; answers what it sent. Fails when the connection is
/// still open after `guard` (a bound far above the timeouts under test, not a measurement).
#[track_caller]
fn read_until_closed(conn: &mut TcpStream, guard: Duration) -> String {
    conn.set_read_timeout(Some(guard)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match conn.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(e) => panic!(
                "the connection is still open ({e}); read so far: {:?}",
                String::from_utf8_lossy(&got)
            ),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// A connection that sends nothing, or only part of a request head, or stops after an answer,
/// is closed once the configured timeout passes, whatever the state it is in (before hyper
/// knows whether it speaks HTTP/1 or HTTP/2, mid-head, kept alive, HTTP/2 without a
/// request). Before, a silent connection stayed open for good and held one of the
/// `max_connections` places.
#[test]
fn silent_connections_are_closed_after_the_timeouts() {
    let srv = TestServer::start_with(&[
        ("TESSERA__SERVER__HEADER_READ_TIMEOUT_SECS", "1"),
        ("TESSERA__SERVER__KEEP_ALIVE_TIMEOUT_SECS", "2"),
    ]);
    let addr = server_addr(&srv);
    let guard = Duration::from_secs(30);
    let open = |first: &[u8]| {
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(first).unwrap();
        c
    };
    let mut silent = open(b"");
    let mut one_byte = open(b"P");
    let mut half_head = open(b"GET /healthz HTTP/1.1\r\nHost: t\r\n");
    let mut h2_no_request = open(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    let mut kept_alive = open(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");

    assert_eq!(read_until_closed(&mut silent, guard), "");
    read_until_closed(&mut one_byte, guard);
    read_until_closed(&mut half_head, guard);
    read_until_closed(&mut h2_no_request, guard);
    let answered = read_until_closed(&mut kept_alive, guard);
    assert!(answered.starts_with("HTTP/1.1 200 "), "{answered:?}");
    assert_eq!(answered.matches("HTTP/1.1 ").count(), 1, "{answered:?}");
    // The server goes on serving.
    assert_eq!(srv.get("/healthz", None).status(), 200);
}

/// One address holding silent connections up to `max_connections` used to leave no place for
/// anyone else. Now a peer may hold `max_connections_per_ip`; one more gets a 503 and is
/// closed, and other clients are served at once. (The header timeout is long here, so the
/// cap alone must do it.)
#[test]
fn one_address_cannot_take_every_connection() {
    let srv = TestServer::start_with(&[
        ("TESSERA__SERVER__MAX_CONNECTIONS", "8"),
        ("TESSERA__SERVER__MAX_CONNECTIONS_PER_IP", "4"),
        ("TESSERA__SERVER__HEADER_READ_TIMEOUT_SECS", "300"),
        ("TESSERA__SERVER__KEEP_ALIVE_TIMEOUT_SECS", "300"),
    ]);
    let addr = server_addr(&srv);
    let mut held: Vec<TcpStream> = (0..8)
        .map(|_| connect_from(ip("127.0.0.2"), addr))
        .collect();
    // The last one is over the cap: refused with 503 and closed, without sending anything.
    let mut last = held.pop().unwrap();
    let refused = read_until_closed(&mut last, Duration::from_secs(30));
    assert!(refused.starts_with("HTTP/1.1 503 "), "{refused:?}");
    let body: Value = serde_json::from_str(refused.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(error_code(&body), "service/unavailable");
    // Another address is served while the first one's silent connections stay open.
    let r = client_from(ip("127.0.0.1"))
        .get(srv.url("/healthz"))
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    // The four held connections are still open (the header timeout is 300 s): the cap, not a
    // timeout, let the request in.
    for c in &mut held[..4] {
        c.set_nonblocking(true).unwrap();
        let mut b = [0u8; 1];
        assert_eq!(
            c.read(&mut b).map_err(|e| e.kind()),
            Err(ErrorKind::WouldBlock)
        );
    }
    drop(held);
}
