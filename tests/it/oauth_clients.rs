//! The OAuth client registry: owners register (after a re-authentication), change, re-key and
//! delete a tenant's clients; members read them; the secret is shown once and kept hashed;
//! the operator attests third-party clients with the admin CLI.

use serde_json::{json, Value};

use crate::support::*;

fn clients(slug: &str) -> String {
    format!("/v1/auth/dashboard/tenants/{slug}/oauth-clients")
}

fn web_app() -> Value {
    json!({
        "name": "Acme Web",
        "description": "The shop",
        "logo_url": "https://acme.example/logo.png",
        "client_type": "confidential",
        "redirect_uris": ["https://acme.example/callback", "https://acme.example/callback"],
        "post_logout_redirect_uris": ["https://acme.example/"],
        "allowed_scopes": ["openid", "email", "orders:read"],
    })
}

#[test]
fn an_owner_registers_reads_changes_rekeys_and_deletes_clients() {
    let (_smtp, mut srv, api, s) = user_setup("Clients", &[]);
    let base = clients(&api.slug);

    // Registering needs a fresh re-authentication; a bad body is refused before that.
    let (st, body) = call(&srv, &s, "POST", &base, Some(web_app()));
    assert_eq!(st, 401, "{body}");
    assert_eq!(error_code(&body), "dashboard/reauth_required");
    srv.reauth(&s, PASSWORD);

    let (st, web) = call(&srv, &s, "POST", &base, Some(web_app()));
    assert_eq!(st, 201, "{web}");
    let secret = web["client_secret"].as_str().expect("a secret").to_owned();
    assert!(secret.starts_with("tcs_") && secret.len() >= 40, "{secret}");
    assert_eq!(web["secret_prefix"], secret[..12]);
    assert_eq!(web["client_type"], "confidential");
    // Registered without a method: either secret method is taken, which null says.
    assert_eq!(web["token_endpoint_auth_method"], Value::Null);
    assert!(web
        .as_object()
        .unwrap()
        .contains_key("token_endpoint_auth_method"));
    assert_eq!(web["verification"], "unverified");
    assert_eq!(web["first_party"], false);
    // Repeats are kept once.
    assert_eq!(
        web["redirect_uris"],
        json!(["https://acme.example/callback"])
    );
    assert_eq!(
        web["allowed_scopes"],
        json!(["openid", "email", "orders:read"])
    );
    let web_id = web["client_id"].as_str().expect("client id").to_owned();

    // A public app: no secret, PKCE only; its own defaults.
    let (st, spa) = call(
        &srv,
        &s,
        "POST",
        &base,
        Some(json!({
            "name": "Acme SPA",
            "client_type": "public",
            "first_party": true,
            "redirect_uris": ["http://127.0.0.1:5173/cb", "com.acme.app:/oauth2redirect"],
        })),
    );
    assert_eq!(st, 201, "{spa}");
    assert_eq!(spa["client_secret"], Value::Null);
    assert_eq!(spa["token_endpoint_auth_method"], "none");
    assert_eq!(spa["allowed_scopes"], json!(["openid"]));
    assert_eq!(spa["verification"], "first_party");
    let spa_id = spa["client_id"].as_str().expect("client id").to_owned();
    let (st, body) = call(
        &srv,
        &s,
        "POST",
        &format!("{base}/{spa_id}/rotate-secret"),
        None,
    );
    assert_eq!(st, 409, "{body}");
    assert_eq!(error_code(&body), "oauth_client/public_client");

    // Listed and read without any secret.
    let (st, list) = call(&srv, &s, "GET", &base, None);
    assert_eq!(st, 200, "{list}");
    let ids: Vec<&str> = list["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|c| c["client_id"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(ids, vec![web_id.as_str(), spa_id.as_str()]);
    assert!(!list.to_string().contains(&secret));
    assert!(list["data"][0].get("client_secret").is_none(), "{list}");
    let (st, one) = call(&srv, &s, "GET", &format!("{base}/{web_id}"), None);
    assert_eq!(st, 200, "{one}");
    assert_eq!(one["name"], "Acme Web");
    assert!(one.get("client_secret").is_none());

    // Changes: named fields only; the type cannot change.
    let (st, changed) = call(
        &srv,
        &s,
        "PATCH",
        &format!("{base}/{web_id}"),
        Some(json!({
            "name": "Acme Shop",
            "description": null,
            "redirect_uris": ["https://shop.acme.example/cb"],
        })),
    );
    assert_eq!(st, 200, "{changed}");
    assert_eq!(changed["name"], "Acme Shop");
    assert_eq!(changed["description"], Value::Null);
    assert_eq!(changed["logo_url"], "https://acme.example/logo.png");
    assert_eq!(
        changed["redirect_uris"],
        json!(["https://shop.acme.example/cb"])
    );
    let (st, body) = call(
        &srv,
        &s,
        "PATCH",
        &format!("{base}/{web_id}"),
        Some(json!({"client_type": "public"})),
    );
    assert_eq!(st, 400, "{body}");
    let (st, body) = call(
        &srv,
        &s,
        "PATCH",
        &format!("{base}/{web_id}"),
        Some(json!({"redirect_uris": [], "allowed_scopes": ["Bad Scope"]})),
    );
    assert_eq!(st, 400, "{body}");
    assert_eq!(
        json_keys(&body["error"]["details"]["fields"]),
        name_set(&["redirect_uris", "allowed_scopes[0]"])
    );

    // A new secret replaces the old one.
    let (st, rotated) = call(
        &srv,
        &s,
        "POST",
        &format!("{base}/{web_id}/rotate-secret"),
        None,
    );
    assert_eq!(st, 200, "{rotated}");
    let new_secret = rotated["client_secret"]
        .as_str()
        .expect("secret")
        .to_owned();
    assert_ne!(new_secret, secret);
    assert_eq!(rotated["secret_prefix"], new_secret[..12]);
    assert!(rotated["secret_rotated_at"].is_string());

    // The operator attests the third-party client.
    let out = srv.admin(&["oauth-client", "attest", &api.slug, &web_id], "");
    assert!(out.status.success(), "{}", out.stderr);
    assert_eq!(out.json()["verification"], "attested");
    let out = srv.admin(&["oauth-client", "attest", &api.slug, "tc_unknown"], "");
    assert!(!out.status.success());
    let (_, one) = call(&srv, &s, "GET", &format!("{base}/{web_id}"), None);
    assert_eq!(one["verification"], "attested");

    // The audit log has every change, never a secret.
    let (st, audit) = call(
        &srv,
        &s,
        "GET",
        &format!(
            "/v1/auth/dashboard/tenants/{}/audit-events?limit=100",
            api.slug
        ),
        None,
    );
    assert_eq!(st, 200, "{audit}");
    let types: Vec<&str> = audit["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter_map(|e| e["type"].as_str())
        .filter(|t| t.starts_with("oauth_client."))
        .collect();
    for t in [
        "oauth_client.created",
        "oauth_client.updated",
        "oauth_client.secret_rotated",
        "oauth_client.attested",
    ] {
        assert!(types.contains(&t), "{t} missing from {types:?}");
    }
    assert!(!audit.to_string().contains(&new_secret));

    // Clients survive a restart; deleting answers 204, then the client is gone.
    srv.restart();
    let s = srv.login(&api.owner, PASSWORD);
    let (st, _) = call(&srv, &s, "GET", &format!("{base}/{web_id}"), None);
    assert_eq!(st, 200);
    let (st, _) = call(&srv, &s, "DELETE", &format!("{base}/{spa_id}"), None);
    assert_eq!(st, 204);
    for method in ["GET", "DELETE"] {
        let (st, body) = call(&srv, &s, method, &format!("{base}/{spa_id}"), None);
        assert_eq!(st, 404, "{method}: {body}");
    }
    srv.kill_and_check_absent(&new_secret);
}

#[test]
fn bad_registrations_are_refused_and_only_owners_write() {
    let (smtp, srv, api, owner) = user_setup("Guarded Clients", &[]);
    let base = clients(&api.slug);
    srv.reauth(&owner, PASSWORD);

    let (st, body) = call(
        &srv,
        &owner,
        "POST",
        &base,
        Some(json!({"name": "Bot", "client_type": "agent", "redirect_uris": []})),
    );
    assert_eq!(st, 400, "{body}");
    assert_eq!(error_code(&body), "oauth_client/use_agents_endpoint");

    let (st, body) = call(
        &srv,
        &owner,
        "POST",
        &base,
        Some(json!({
            "name": "",
            "client_type": "public",
            "token_endpoint_auth_method": "client_secret_basic",
            "logo_url": "http://acme.example/logo.png",
            "redirect_uris": [
                "https://ok.example/cb",
                "http://acme.example/cb",
                "https://acme.example/cb#fragment",
                "myapp:/cb",
            ],
            "post_logout_redirect_uris": ["javascript:alert(1)"],
            "allowed_scopes": ["openid", "Orders"],
        })),
    );
    assert_eq!(st, 400, "{body}");
    assert_eq!(error_code(&body), "validation/invalid_request");
    assert_eq!(
        json_keys(&body["error"]["details"]["fields"]),
        name_set(&[
            "name",
            "token_endpoint_auth_method",
            "logo_url",
            "redirect_uris[1]",
            "redirect_uris[2]",
            "redirect_uris[3]",
            "post_logout_redirect_uris[0]",
            "allowed_scopes[1]",
        ])
    );
    let (st, body) = call(
        &srv,
        &owner,
        "POST",
        &base,
        Some(json!({
            "name": "Server",
            "client_type": "confidential",
            "token_endpoint_auth_method": "none",
            "redirect_uris": [],
        })),
    );
    assert_eq!(st, 400, "{body}");
    assert_eq!(
        json_keys(&body["error"]["details"]["fields"]),
        name_set(&["token_endpoint_auth_method", "redirect_uris"])
    );

    let (st, web) = call(&srv, &owner, "POST", &base, Some(web_app()));
    assert_eq!(st, 201, "{web}");
    let web_id = web["client_id"].as_str().expect("id").to_owned();

    // A viewer reads; writes are the owners'.
    srv.add_viewer(&smtp, &owner, &api.slug);
    let viewer = srv.login("viewer@example.com", PASSWORD);
    srv.reauth(&viewer, PASSWORD);
    let (st, _) = call(&srv, &viewer, "GET", &format!("{base}/{web_id}"), None);
    assert_eq!(st, 200);
    for (method, path, body) in [
        ("POST", base.clone(), Some(web_app())),
        (
            "PATCH",
            format!("{base}/{web_id}"),
            Some(json!({"name": "x"})),
        ),
        ("POST", format!("{base}/{web_id}/rotate-secret"), None),
        ("DELETE", format!("{base}/{web_id}"), None),
    ] {
        let (st, answer) = call(&srv, &viewer, method, &path, body);
        assert_eq!(st, 403, "{method} {path}: {answer}");
        assert_eq!(error_code(&answer), "dashboard/forbidden");
    }

    // Another tenant's owner sees none of them, by id or in a list.
    let other = UserApi::signup(&srv, "Elsewhere", "boss@example.com");
    let boss = srv.login(&other.owner, PASSWORD);
    let (st, _) = call(
        &srv,
        &boss,
        "GET",
        &format!("{}/{web_id}", clients(&other.slug)),
        None,
    );
    assert_eq!(st, 404);
    let (st, list) = call(&srv, &boss, "GET", &clients(&other.slug), None);
    assert_eq!(st, 200);
    assert_eq!(list["data"], json!([]));
    let (st, _) = call(&srv, &boss, "GET", &format!("{base}/{web_id}"), None);
    assert_eq!(st, 404);
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

/// Clients that register themselves (RFC 7591, no sign-in needed) never take the owners'
/// places: with a hundred of them registered from a hundred addresses, the owner still
/// registers theirs up to the owners' own cap of a hundred, and self-registration goes on
/// under its own cap.
#[test]
fn self_registered_clients_never_take_the_owners_places() {
    let (_smtp, srv, api, s) = user_setup("Client Places", &[]);
    let (st, on) = srv.dash_json(
        "PATCH",
        &format!("/v1/auth/dashboard/tenants/{}/settings/agents", api.slug),
        &s,
        Some(&json!({"dynamic_client_registration": true})),
    );
    assert_eq!(st, 200, "{on}");
    let register = format!("/v1/tenants/{}/oauth/register", api.slug);
    let body = json!({"client_name": "MCP Client", "redirect_uris": ["http://127.0.0.1:7777/cb"]});
    let self_register = || {
        api.send_as(
            None,
            "POST",
            &register,
            None,
            Some(&body),
            Some(&fresh_client_ip()),
        )
    };
    for n in 0..100 {
        let r = self_register();
        assert_eq!(r.status, 201, "self-registration {n}: {}", r.body);
    }
    srv.reauth(&s, PASSWORD);
    let base = clients(&api.slug);
    let app = |n: usize| {
        json!({
            "name": format!("Owner App {n}"),
            "client_type": "public",
            "redirect_uris": ["https://acme.example/callback"],
        })
    };
    for n in 0..100 {
        let (st, body) = call(&srv, &s, "POST", &base, Some(app(n)));
        assert_eq!(st, 201, "the owner's client {n}: {body}");
    }
    let (st, body) = call(&srv, &s, "POST", &base, Some(app(100)));
    assert_eq!(st, 409, "{body}");
    assert_eq!(error_code(&body), "oauth_client/limit_reached");
    // The owners' cap is theirs alone: self-registration still has room.
    let r = self_register();
    assert_eq!(r.status, 201, "{}", r.body);
}
