//! Request hygiene: request ids that cannot forge log fields.

use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};

use crate::support::{eventually, fresh_client_ip, AuthAnswer, TestServer, UserApi};

/// One request as a client may really send it: any headers (values as raw bytes), any body
/// bytes, from an address of its own.
fn raw(
    srv_base: &str,
    client: &reqwest::blocking::Client,
    method: &str,
    path: &str,
    headers: &[(&str, &[u8])],
    body: Option<&[u8]>,
) -> AuthAnswer {
    let mut req = client
        .request(method.parse().unwrap(), format!("{srv_base}{path}"))
        .header("x-forwarded-for", fresh_client_ip());
    for (name, value) in headers {
        req = req.header(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_bytes(value).unwrap(),
        );
    }
    if let Some(b) = body {
        req = req.body(b.to_vec());
    }
    AuthAnswer::read(req.send().expect("request"))
}

fn api_raw(
    api: &UserApi,
    method: &str,
    path: &str,
    headers: &[(&str, &[u8])],
    body: Option<&[u8]>,
) -> AuthAnswer {
    let mut all: Vec<(&str, &[u8])> = vec![("x-api-key", api.api_key.as_bytes())];
    all.extend_from_slice(headers);
    raw(&api.base, &api.client, method, path, &all, body)
}

fn is_uuid(s: &str) -> bool {
    uuid::Uuid::parse_str(s).is_ok()
}

// ---------------------------------------------------------------------------------------------
// X-Request-Id
// ---------------------------------------------------------------------------------------------

#[test]
fn request_ids_are_echoed_only_when_short_and_plain() {
    let srv = TestServer::start();
    let id_of = |headers: &[(&str, &[u8])]| -> String {
        let a = raw(&srv.base, &srv.client, "GET", "/healthz", headers, None);
        assert_eq!(a.status, 200);
        a.header("x-request-id").expect("an X-Request-Id")
    };
    // A plain id comes back as sent, up to 128 characters.
    let plain = "client-7.trace:span_01";
    assert_eq!(id_of(&[("x-request-id", plain.as_bytes())]), plain);
    let longest = "r".repeat(128);
    assert_eq!(id_of(&[("x-request-id", longest.as_bytes())]), longest);
    // None at all: a generated UUID.
    assert!(is_uuid(&id_of(&[])));
    // Anything else is replaced by a generated UUID.
    let long = "x".repeat(60_000);
    let forging = r#"abc tenant="evil" status=500 }: forged"#;
    let replaced = [
        id_of(&[("x-request-id", long.as_bytes())]),
        id_of(&[("x-request-id", "r".repeat(129).as_bytes())]),
        id_of(&[("x-request-id", forging.as_bytes())]),
        id_of(&[("x-request-id", b"caf\xc3\xa9")]),
        id_of(&[("x-request-id", b"two"), ("x-request-id", b"ids")]),
    ];
    for id in &replaced {
        let shown: String = id.chars().take(60).collect();
        assert!(is_uuid(id), "{shown:?} is not a generated id");
    }

    // A request whose route names a tenant has that field in its span too: the forged one
    // must not be able to pose as it.
    let api = UserApi::signup(&srv, "Ids", "owner@ids.example.com");
    let a = api_raw(
        &api,
        "GET",
        "/v1/tenant",
        &[("x-request-id", forging.as_bytes())],
        None,
    );
    assert_eq!(a.status, 200);
    let generated = a.header("x-request-id").unwrap();
    assert!(is_uuid(&generated));

    // The log (text format, as the harness runs the server) has the generated ids, never the
    // client's text.
    assert!(
        eventually(Duration::from_secs(10), || {
            let log = srv.log_text();
            replaced.iter().all(|id| log.contains(id.as_str())) && log.contains(&generated)
        }),
        "the generated ids were not logged"
    );
    let log = srv.log_text();
    assert!(log.contains(&format!("request_id={plain}")), "{log}");
    assert!(!log.contains("forged"), "forged text in the log:\n{log}");
    assert!(!log.contains(r#"tenant="evil""#), "{log}");
    assert!(
        !log.contains(&"x".repeat(200)),
        "the 60,000-byte id was logged"
    );
}
