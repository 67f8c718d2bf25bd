//! Request hygiene: request ids that cannot forge log fields, JSON bodies with a repeated key,
//! bodies of only whitespace, the one content type a body may have, malformed Authorization
//! headers, and ids in paths that answer the same whether or not they parse.

use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{json, Value};

use crate::{
    members::invite,
    support::{
        enable_guests, eventually, fresh_client_ip, is_uuid, user_setup, AuthAnswer, Session,
        SmtpStub, TestServer, UserApi, USER_PASSWORD,
    },
};

const ANONYMOUS: &str = "/v1/auth/anonymous";
const LOGOUT: &str = "/v1/auth/logout";

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

const JSON: (&str, &[u8]) = ("content-type", b"application/json");

/// A tenant with guest sign-ins on, its owner's dashboard session.
fn setup(tenant: &str) -> (SmtpStub, TestServer, UserApi, Session) {
    let (smtp, srv, api, session) = user_setup(tenant, &[]);
    enable_guests(&srv, &session, &api.slug);
    (smtp, srv, api, session)
}

/// The field names of a 400 `validation/invalid_request`.
#[track_caller]
fn invalid_fields(a: &AuthAnswer) -> Vec<String> {
    a.expect_error(400, "validation/invalid_request");
    a.body["error"]["details"]["fields"]
        .as_object()
        .unwrap_or_else(|| panic!("no details.fields in {}", a.body))
        .keys()
        .cloned()
        .collect()
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

// ---------------------------------------------------------------------------------------------
// Repeated JSON keys
// ---------------------------------------------------------------------------------------------

#[test]
fn a_repeated_json_key_is_refused_at_any_depth() {
    let (smtp, _srv, api, _) = setup("dupkeys");
    let email = "dup@dupkeys.test";
    api.verified_user(&smtp, email, USER_PASSWORD);

    // Last-one-wins would sign this in as `email`.
    let body = format!(
        r#"{{"email":"nobody@dupkeys.test","email":"{email}","password":"{USER_PASSWORD}"}}"#
    );
    let a = api_raw(
        &api,
        "POST",
        "/v1/auth/login",
        &[JSON],
        Some(body.as_bytes()),
    );
    assert_eq!(invalid_fields(&a), ["email"], "{}", a.body);
    assert!(a.body.get("access_token").is_none());
    // The same key twice with the same value is refused too.
    let body = format!(r#"{{"email":"{email}","email":"{email}","password":"{USER_PASSWORD}"}}"#);
    let a = api_raw(
        &api,
        "POST",
        "/v1/auth/login",
        &[JSON],
        Some(body.as_bytes()),
    );
    assert_eq!(invalid_fields(&a), ["email"]);
    // One copy of each key signs in.
    api.login_ok(email, USER_PASSWORD);

    // Nested, in an object field of a typed body...
    let body = br#"{"email":"dup@dupkeys.test","oauth_params":{"client_id":"web","redirect_uri":"http://localhost:3000/cb","scope":"openid","scope":"admin"}}"#;
    let a = api_raw(&api, "POST", "/v1/auth/magic-link", &[JSON], Some(body));
    assert_eq!(invalid_fields(&a), ["oauth_params.scope"], "{}", a.body);
    // ...and in a free-form object, even inside an array.
    let body = br#"{"public_metadata":{"plan":"free","tags":[{"k":1},{"k":1,"k":2}]}}"#;
    let a = api_raw(&api, "POST", ANONYMOUS, &[JSON], Some(body));
    assert_eq!(
        invalid_fields(&a),
        ["public_metadata.tags[1].k"],
        "{}",
        a.body
    );
    let body = br#"{"public_metadata":{"plan":"free","plan":"pro"}}"#;
    let a = api_raw(&api, "POST", ANONYMOUS, &[JSON], Some(body));
    assert_eq!(invalid_fields(&a), ["public_metadata.plan"], "{}", a.body);
    // The same keys in sibling objects are no repeat.
    let body = br#"{"public_metadata":{"a":{"k":1},"b":{"k":1}}}"#;
    assert_eq!(
        api_raw(&api, "POST", ANONYMOUS, &[JSON], Some(body)).status,
        201
    );
}

// ---------------------------------------------------------------------------------------------
// Optional bodies and content types
// ---------------------------------------------------------------------------------------------

#[test]
fn only_an_empty_body_is_no_body() {
    let (_smtp, _srv, api, _) = setup("blank");
    let access = |a: &AuthAnswer| a.body["access_token"].as_str().unwrap().to_owned();
    for ws in [&b" "[..], b"\n", b"\r\n"] {
        let a = api_raw(&api, "POST", ANONYMOUS, &[JSON], Some(ws));
        assert_eq!(invalid_fields(&a), ["body"], "{ws:?}: {}", a.body);
        // Whitespace is a body: without a JSON content type, 415.
        let a = api_raw(
            &api,
            "POST",
            ANONYMOUS,
            &[("content-type", b"text/plain")],
            Some(ws),
        );
        a.expect_error(415, "validation/unsupported_media_type");
    }
    // No bytes at all is no body, with or without a content type.
    let guest = api_raw(&api, "POST", ANONYMOUS, &[JSON], Some(b""));
    assert_eq!(guest.status, 201, "{}", guest.body);
    assert_eq!(api_raw(&api, "POST", ANONYMOUS, &[], None).status, 201);

    let token = access(&guest);
    let bearer = format!("Bearer {token}");
    let auth = ("authorization", bearer.as_bytes());
    for ws in [&b" "[..], b"\n", b"\r\n"] {
        let a = api_raw(&api, "POST", LOGOUT, &[auth, JSON], Some(ws));
        assert_eq!(invalid_fields(&a), ["body"], "{ws:?}: {}", a.body);
    }
    // The session is still alive, and an empty body ends it.
    api.me(&token).expect(200);
    assert_eq!(
        api_raw(&api, "POST", LOGOUT, &[auth, JSON], Some(b"")).status,
        204
    );
    api.me(&token).expect_error(401, "auth/invalid_token");
}

#[test]
fn a_body_is_application_json_with_at_most_a_utf8_charset() {
    let (_smtp, _srv, api, _) = setup("ctypes");
    let guest = |ct: &[u8]| {
        api_raw(
            &api,
            "POST",
            ANONYMOUS,
            &[("content-type", ct)],
            Some(b"{}"),
        )
    };
    for ok in [
        &b"application/json; charset=UTF-8"[..],
        b"application/json;charset=utf-8",
        b"Application/JSON; Charset=\"utf-8\"",
    ] {
        let a = guest(ok);
        assert_eq!(a.status, 201, "{}: {}", String::from_utf8_lossy(ok), a.body);
    }
    for bad in [
        &b"application/json; charset=latin1"[..],
        b"application/json; charset=utf-16",
        b"application/json; profile=x",
        b"application/merge-patch+json",
        b"application/vnd.api+json",
        b"text/plain",
    ] {
        guest(bad).expect_error(415, "validation/unsupported_media_type");
        // The same for a route whose body is required.
        let login = br#"{"email":"a@ctypes.test","password":"whatever it is"}"#;
        api_raw(
            &api,
            "POST",
            "/v1/auth/login",
            &[("content-type", bad)],
            Some(login),
        )
        .expect_error(415, "validation/unsupported_media_type");
    }
    // Two Content-Type headers declare no one type.
    let a = api_raw(
        &api,
        "POST",
        ANONYMOUS,
        &[JSON, ("content-type", b"application/json")],
        Some(b"{}"),
    );
    a.expect_error(415, "validation/unsupported_media_type");
}

// ---------------------------------------------------------------------------------------------
// Authorization headers
// ---------------------------------------------------------------------------------------------

#[test]
fn a_malformed_authorization_header_is_an_invalid_credential() {
    let (_smtp, srv, api, session) = setup("authz");
    let me = |value: Option<&[u8]>| {
        let headers: Vec<(&str, &[u8])> = value.map(|v| ("authorization", v)).into_iter().collect();
        api_raw(&api, "GET", "/v1/auth/me", &headers, None)
    };
    // No bearer token: missing.
    me(None).expect_error(401, "auth/missing_token");
    me(Some(b"Basic dXNlcjpwYXNz")).expect_error(401, "auth/missing_token");
    me(Some(b"Bearer ")).expect_error(401, "auth/missing_token");
    // Bytes no credential has: invalid, not missing.
    me(Some(b"Bearer \xe9t\xe9")).expect_error(401, "auth/invalid_token");
    me(Some(b"\xff")).expect_error(401, "auth/invalid_token");
    me(Some(b"Bearer\tabc")).expect_error(401, "auth/invalid_token");
    let a = me(Some(b"Bearer \xe9"));
    assert_eq!(
        a.header("www-authenticate").as_deref(),
        Some("Bearer error=\"invalid_token\"")
    );
    // Two Authorization headers: invalid.
    let guest = api_raw(&api, "POST", ANONYMOUS, &[], None);
    let token = guest.body["access_token"].as_str().unwrap().to_owned();
    let bearer = format!("Bearer {token}");
    let a = api_raw(
        &api,
        "GET",
        "/v1/auth/me",
        &[
            ("authorization", bearer.as_bytes()),
            ("authorization", bearer.as_bytes()),
        ],
        None,
    );
    a.expect_error(401, "auth/invalid_token");

    // Registering with a malformed header is refused, not taken as "no guest to claim".
    let body = br#"{"email":"new@authz.test","password":"tessera user passphrase","consent":true}"#;
    let a = api_raw(
        &api,
        "POST",
        "/v1/auth/register",
        &[JSON, ("authorization", b"Bearer \xe9")],
        Some(body),
    );
    a.expect_error(401, "auth/invalid_token");

    // The dashboard: a malformed header is refused even with a valid session cookie.
    let cookie = format!("dashboard_session={}", session.token);
    let tenants = |headers: &[(&str, &[u8])]| {
        raw(
            &srv.base,
            &srv.client,
            "GET",
            "/v1/auth/dashboard/tenants",
            headers,
            None,
        )
    };
    assert_eq!(tenants(&[("cookie", cookie.as_bytes())]).status, 200);
    tenants(&[
        ("cookie", cookie.as_bytes()),
        ("authorization", b"Bearer \xe9"),
    ])
    .expect_error(401, "dashboard/unauthenticated");
    tenants(&[("authorization", b"Bearer \xe9")]).expect_error(401, "dashboard/unauthenticated");
    // Another scheme is no bearer credential: the cookie still counts.
    assert_eq!(
        tenants(&[
            ("cookie", cookie.as_bytes()),
            ("authorization", b"Basic dXNlcjpwYXNz"),
        ])
        .status,
        200
    );
}

// ---------------------------------------------------------------------------------------------
// Ids in paths
// ---------------------------------------------------------------------------------------------

/// Asserts two answers are the same: status, code, message, details.
#[track_caller]
fn same_answer(a: &AuthAnswer, b: &AuthAnswer, what: &str) {
    assert_eq!(
        (a.status, &a.body),
        (b.status, &b.body),
        "{what}: the answers differ"
    );
}

#[test]
fn an_unknown_session_id_answers_the_same_whether_or_not_it_parses() {
    let (smtp, _srv, api, _) = setup("sessionids");
    let email = "ids@sessionids.test";
    let user = api.verified_user(&smtp, email, USER_PASSWORD);
    let unknown = uuid::Uuid::new_v4().to_string();
    for garbage in [
        "not-a-uuid",
        "1",
        "%20",
        "00000000-0000-0000-0000-00000000000g",
    ] {
        let a = api.delete_session(&user.access, garbage);
        let b = api.delete_session(&user.access, &unknown);
        a.expect_error(404, "resource/not_found");
        same_answer(&a, &b, garbage);
    }
    // With a session that has ended, both are about the token, not the id.
    api.logout(&user.access, None).expect(204);
    let a = api.delete_session(&user.access, "not-a-uuid");
    let b = api.delete_session(&user.access, &unknown);
    a.expect_error(401, "auth/invalid_token");
    same_answer(&a, &b, "ended session");
}

#[test]
fn an_unknown_member_id_answers_the_same_whether_or_not_it_parses() {
    let (smtp, srv, api, owner) = setup("memberids");
    let slug = api.slug.clone();
    let unknown = uuid::Uuid::new_v4().to_string();
    let member = |s: &Session, method: &str, id: &str, body: Option<&Value>| {
        AuthAnswer::read(srv.dash(
            method,
            &format!("/v1/auth/dashboard/tenants/{slug}/members/{id}"),
            s,
            body,
        ))
    };
    let role = json!({"role": "admin"});
    let bad_role = json!({"role": "emperor"});
    for garbage in ["not-a-uuid", "42"] {
        let cases = [
            ("PATCH", Some(&role), 404),
            ("PATCH", Some(&bad_role), 400),
            ("DELETE", None, 404),
        ];
        for (method, body, status) in cases {
            let a = member(&owner, method, garbage, body);
            let b = member(&owner, method, &unknown, body);
            assert_eq!(a.status, status, "{method} {garbage}: {}", a.body);
            same_answer(&a, &b, &format!("{method} {garbage} {body:?}"));
        }
    }

    // A viewer may remove only itself: any other id, parsed or not, is forbidden alike.
    invite(&srv, &owner, &slug, "viewer@memberids.test", "viewer");
    srv.accept_mailed_invite(
        &smtp,
        "viewer@memberids.test",
        1,
        "the viewer's own passphrase",
    );
    let viewer = srv.login("viewer@memberids.test", "the viewer's own passphrase");
    let a = member(&viewer, "DELETE", "not-a-uuid", None);
    let b = member(&viewer, "DELETE", &unknown, None);
    a.expect_error(403, "dashboard/forbidden");
    same_answer(&a, &b, "viewer DELETE");

    // Invitations by address: one too long to exist answers like one that does not.
    let invitation = |email: &str| {
        AuthAnswer::read(srv.dash(
            "DELETE",
            &format!("/v1/auth/dashboard/tenants/{slug}/invitations/{email}"),
            &owner,
            None,
        ))
    };
    let long = format!("{}@memberids.test", "a".repeat(300));
    let a = invitation(&long);
    let b = invitation("nobody@memberids.test");
    a.expect_error(404, "resource/not_found");
    same_answer(&a, &b, "invitation");
}
