//! The resource scope catalog: the operator registers resources, their tenant's owners
//! register scopes (every rule and error code of spec 2.13 and 7), entries wait for the
//! operator's approval, and nobody else sees or touches them.

use serde_json::{json, Value};

use crate::support::*;

const PLATFORM_RESOURCE: &str = "00000000-0000-0000-0000-000000000001";

fn scopes(resource: &str) -> String {
    format!("/v1/resources/{resource}/scopes")
}

fn texts(en: &str) -> Value {
    json!({
        "kind": "locale_text",
        "locale_text": {"en": en, "pl": "Zamówienia", "de": "Bestellungen", "fr": "Commandes", "es": "Pedidos"},
    })
}

fn register_resource(srv: &TestServer, slug: &str, name: &str) -> String {
    let out = srv.admin(
        &[
            "resource",
            "register",
            "--tenant",
            slug,
            "--name",
            name,
            "--uri",
            "https://api.acme.example/orders",
        ],
        "",
    );
    let v = out.json();
    assert_eq!(v["tenant"], slug);
    v["id"].as_str().expect("resource id").to_owned()
}

#[test]
fn owners_register_scopes_that_wait_for_the_operator() {
    let (_smtp, srv, api, s) = user_setup("Catalog", &[]);
    let bad = srv.admin(
        &[
            "resource",
            "register",
            "--tenant",
            &api.slug,
            "--name",
            "Orders",
            "--uri",
            "ftp://x.example/#f",
        ],
        "",
    );
    assert!(!bad.status.success());
    let resource = register_resource(&srv, &api.slug, "Orders API");
    let path = scopes(&resource);

    let (st, entry) = call(
        &srv,
        &s,
        "POST",
        &path,
        Some(json!({
            "scope_name": "orders:read",
            "display_metadata": texts("  Read\u{200B}   your orders\u{202E} "),
        })),
    );
    assert_eq!(st, 201, "{entry}");
    assert_eq!(entry["status"], "pending_review");
    assert_eq!(entry["sensitivity"], "elevated");
    assert_eq!(entry["requires_platform_enable"], false);
    assert_eq!(entry["resource_id"], resource.as_str());
    assert_eq!(
        entry["display_metadata"]["locale_text"]["en"],
        "Read your orders"
    );
    let read_id = entry["id"].as_str().expect("id").to_owned();

    let (st, entry) = call(
        &srv,
        &s,
        "POST",
        &path,
        Some(json!({
            "scope_name": "orders:write",
            "sensitivity": "normal",
            "display_metadata": {"kind": "i18n_key", "i18n_key": "consent.scopes.orders_write"},
        })),
    );
    assert_eq!(st, 201, "{entry}");
    assert_eq!(entry["sensitivity"], "normal");

    let (st, list) = call(&srv, &s, "GET", &path, None);
    assert_eq!(st, 200);
    assert_eq!(
        list["pagination"],
        json!({"next_cursor": null, "has_more": false})
    );
    let names: Vec<&str> = list["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter_map(|e| e["scope_name"].as_str())
        .collect();
    assert_eq!(names, ["orders:read", "orders:write"]);

    // The operator's queue, and the approval.
    let pending = srv.admin(&["scope", "list", "--pending"], "").json();
    assert_eq!(
        pending["data"].as_array().map(Vec::len),
        Some(2),
        "{pending}"
    );
    let approved = srv
        .admin(&["scope", "approve", &resource, &read_id], "")
        .json();
    assert_eq!(approved["status"], "approved");
    let pending = srv.admin(&["scope", "list", "--pending"], "").json();
    assert_eq!(
        pending["data"][0]["scope_name"], "orders:write",
        "{pending}"
    );
    assert_eq!(pending["data"].as_array().map(Vec::len), Some(1));
    let unknown = srv.admin(&["scope", "approve", &resource, PLATFORM_RESOURCE], "");
    assert!(!unknown.status.success());

    // Duplicates; deletion, once.
    let (st, body) = call(
        &srv,
        &s,
        "POST",
        &path,
        Some(json!({"scope_name": "orders:read", "display_metadata": texts("Again")})),
    );
    assert_eq!(st, 409, "{body}");
    assert_eq!(error_code(&body), "resource_scope_catalog/duplicate");
    let (st, _) = call(&srv, &s, "DELETE", &format!("{path}/{read_id}"), None);
    assert_eq!(st, 204);
    for id in [read_id.as_str(), "not-a-uuid"] {
        let (st, body) = call(&srv, &s, "DELETE", &format!("{path}/{id}"), None);
        assert_eq!(st, 404, "{body}");
        assert_eq!(error_code(&body), "resource_scope_catalog/not_found");
    }
    let (_, list) = call(&srv, &s, "GET", &path, None);
    assert_eq!(list["data"].as_array().map(Vec::len), Some(1));

    // The audit log of the owning tenant.
    let (_, audit) = call(
        &srv,
        &s,
        "GET",
        &format!(
            "/v1/auth/dashboard/tenants/{}/audit-events?limit=100",
            api.slug
        ),
        None,
    );
    let types: Vec<&str> = audit["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter_map(|e| e["type"].as_str())
        .collect();
    for t in [
        "resource.registered",
        "resource_scope.registered",
        "resource_scope.approved",
        "resource_scope.deleted",
    ] {
        assert!(types.contains(&t), "{t} missing from {types:?}");
    }
}

#[test]
fn every_rule_of_the_catalog_has_its_error() {
    let (_smtp, srv, api, s) = user_setup(
        "Rules",
        &[
            ("TESSERA__CATALOG__MAX_SCOPES_PER_RESOURCE", "2"),
            ("TESSERA__CATALOG__MAX_SCOPES_PER_TENANT", "3"),
        ],
    );
    let resource = register_resource(&srv, &api.slug, "Orders API");
    let path = scopes(&resource);
    let post = |body: Value| call(&srv, &s, "POST", &path, Some(body));
    let expect = |body: Value, status: u16, code: &str| {
        let (st, answer) = post(body.clone());
        assert_eq!(st, status, "{body} -> {answer}");
        assert_eq!(error_code(&answer), code, "{body} -> {answer}");
        answer
    };

    for name in [
        "mcp:tools",
        "tessera:admin",
        "sso:login",
        "agent:run",
        "openid",
        "offline_access",
    ] {
        expect(
            json!({"scope_name": name, "display_metadata": texts("x")}),
            400,
            "resource_scope_catalog/reserved_namespace",
        );
    }
    for name in ["Orders", "9lives", "has space", "", &"a".repeat(65)] {
        expect(
            json!({"scope_name": name, "display_metadata": texts("x")}),
            400,
            "resource_scope_catalog/malformed_scope_name",
        );
    }
    for key in [
        "consent.other.x",
        "consent.scopes.",
        "scopes.x",
        "consent.scopes.Bad Key",
    ] {
        expect(
            json!({"scope_name": "a", "display_metadata": {"kind": "i18n_key", "i18n_key": key}}),
            400,
            "resource_scope_catalog/i18n_key_outside_namespace",
        );
    }
    expect(
        json!({"scope_name": "a", "display_metadata": texts("\u{200B}\u{2066}\u{0007}")}),
        400,
        "resource_scope_catalog/locale_text_invalid",
    );

    // Shape errors name their fields.
    let mut unknown_locale = texts("x");
    unknown_locale["locale_text"]["it"] = json!("Ordini");
    let mut missing_locale = texts("x");
    missing_locale["locale_text"]
        .as_object_mut()
        .map(|m| m.remove("es"));
    let cases = [
        (json!({"display_metadata": texts("x")}), vec!["scope_name"]),
        (json!({"scope_name": "a"}), vec!["display_metadata"]),
        (
            json!({"scope_name": "a", "sensitivity": "low", "display_metadata": texts("x")}),
            vec!["sensitivity"],
        ),
        (
            json!({"scope_name": "a", "display_metadata": unknown_locale}),
            vec!["display_metadata.locale_text.it"],
        ),
        (
            json!({"scope_name": "a", "display_metadata": missing_locale}),
            vec!["display_metadata.locale_text.es"],
        ),
        (
            json!({"scope_name": "a", "display_metadata": texts("   ")}),
            vec!["display_metadata.locale_text.en"],
        ),
        (
            json!({"scope_name": "a", "display_metadata": texts(&"é".repeat(257))}),
            vec!["display_metadata.locale_text.en"],
        ),
        (
            json!({"scope_name": "a", "display_metadata": {"kind": "html", "html": "<b>"}}),
            vec!["display_metadata.kind"],
        ),
        (
            json!({"scope_name": "a", "display_metadata": {"kind": "i18n_key", "i18n_key": "consent.scopes.a", "extra": 1}}),
            vec!["display_metadata.extra"],
        ),
    ];
    for (body, fields) in cases {
        let answer = expect(body, 400, "validation/invalid_request");
        assert_eq!(
            json_keys(&answer["error"]["details"]["fields"]),
            name_set(&fields),
            "{answer}"
        );
    }
    // 256 characters after normalisation are allowed.
    let (st, body) =
        post(json!({"scope_name": "long", "display_metadata": texts(&"é".repeat(256))}));
    assert_eq!(st, 201, "{body}");

    // The caps: two a resource, three across the tenant.
    let (st, _) = post(json!({"scope_name": "b", "display_metadata": texts("b")}));
    assert_eq!(st, 201);
    expect(
        json!({"scope_name": "c", "display_metadata": texts("c")}),
        400,
        "resource_scope_catalog/resource_cap_exceeded",
    );
    let second = register_resource(&srv, &api.slug, "Billing API");
    let (st, _) = call(
        &srv,
        &s,
        "POST",
        &scopes(&second),
        Some(json!({"scope_name": "c", "display_metadata": texts("c")})),
    );
    assert_eq!(st, 201);
    let (st, body) = call(
        &srv,
        &s,
        "POST",
        &scopes(&second),
        Some(json!({"scope_name": "d", "display_metadata": texts("d")})),
    );
    assert_eq!(st, 400, "{body}");
    assert_eq!(
        error_code(&body),
        "resource_scope_catalog/tenant_aggregate_cap_exceeded"
    );
}

#[test]
fn only_the_owning_tenants_owners_see_or_touch_a_resource() {
    let (smtp, srv, api, owner) = user_setup("Owned", &[]);
    let resource = register_resource(&srv, &api.slug, "Orders API");
    let path = scopes(&resource);
    let (st, entry) = call(
        &srv,
        &owner,
        "POST",
        &path,
        Some(json!({"scope_name": "orders:read", "display_metadata": texts("Read")})),
    );
    assert_eq!(st, 201, "{entry}");
    let entry_id = entry["id"].as_str().expect("id").to_owned();

    // Another tenant's owner, and a viewer of this one: the resource is not theirs.
    let other = UserApi::signup(&srv, "Elsewhere", "boss@example.com");
    let boss = srv.login(&other.owner, PASSWORD);
    srv.add_viewer(&smtp, &owner, &api.slug);
    let viewer = srv.login("viewer@example.com", PASSWORD);
    for s in [&boss, &viewer] {
        let (st, list) = call(&srv, s, "GET", &path, None);
        assert_eq!(st, 200);
        assert_eq!(list["data"], json!([]));
        let (st, body) = call(
            &srv,
            s,
            "POST",
            &path,
            Some(json!({"scope_name": "mine", "display_metadata": texts("Mine")})),
        );
        assert_eq!(st, 404, "{body}");
        assert_eq!(
            error_code(&body),
            "resource_scope_catalog/resource_not_found"
        );
        let (st, body) = call(&srv, s, "DELETE", &format!("{path}/{entry_id}"), None);
        assert_eq!(st, 404, "{body}");
        assert_eq!(
            error_code(&body),
            "resource_scope_catalog/resource_not_found"
        );
    }

    // Unknown and malformed resource ids: an empty envelope to read, 404 to write.
    for id in ["0195f1a2-0000-7000-8000-000000000000", "not-a-uuid"] {
        let (st, list) = call(&srv, &owner, "GET", &scopes(id), None);
        assert_eq!(st, 200);
        assert_eq!(list["data"], json!([]));
        assert_eq!(list["pagination"]["has_more"], false);
        let (st, body) = call(
            &srv,
            &owner,
            "POST",
            &scopes(id),
            Some(json!({"scope_name": "x", "display_metadata": texts("x")})),
        );
        assert_eq!(st, 404, "{body}");
        assert_eq!(
            error_code(&body),
            "resource_scope_catalog/resource_not_found"
        );
    }

    // The platform's own resource cannot be changed by anyone.
    let (st, body) = call(
        &srv,
        &owner,
        "POST",
        &scopes(PLATFORM_RESOURCE),
        Some(json!({"scope_name": "x", "display_metadata": texts("x")})),
    );
    assert_eq!(st, 403, "{body}");
    assert_eq!(
        error_code(&body),
        "resource_scope_catalog/platform_resource_immutable"
    );
    let (st, body) = call(
        &srv,
        &owner,
        "DELETE",
        &format!("{}/{entry_id}", scopes(PLATFORM_RESOURCE)),
        None,
    );
    assert_eq!(st, 403, "{body}");

    // Without a session, nothing.
    let r = srv.client.get(srv.url(&path)).send().expect("request");
    assert_eq!(r.status(), 401);
}

fn call(
    srv: &TestServer,
    s: &Session,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    srv.dash_json(method, path, s, body.as_ref())
}
