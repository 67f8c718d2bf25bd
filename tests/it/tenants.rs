//! API-key authentication, tenant isolation and the admin CLI.

use std::os::unix::fs::PermissionsExt;

use serde_json::Value;

use crate::support::{error_code, TestServer, PASSWORD};

#[test]
fn api_keys_are_required_and_checked() {
    let srv = TestServer::start();
    let r = srv.get("/v1/tenant", None);
    assert_eq!(r.status(), 401);
    assert_eq!(error_code(&r.json().unwrap()), "auth/missing_api_key");
    let r = srv.get("/v1/tenant", Some("tsk_not-a-real-key"));
    assert_eq!(r.status(), 401);
    assert_eq!(error_code(&r.json().unwrap()), "auth/invalid_api_key");
    let t = srv.signup("Keyed", "k@example.com");
    let key = t["api_key"].as_str().unwrap();
    // A key with one character changed is not the key.
    let mut wrong = key.to_owned();
    let last = wrong.pop().unwrap();
    wrong.push(if last == 'A' { 'B' } else { 'A' });
    assert_eq!(srv.get("/v1/tenant", Some(&wrong)).status(), 401);
    assert_eq!(srv.get("/v1/tenant", Some(key)).status(), 200);
}

#[test]
fn one_tenants_key_never_reaches_another_tenant() {
    let srv = TestServer::start();
    let a = srv.signup("Tenant A", "a@example.com");
    let b = srv.signup("Tenant B", "b@example.com");
    let key_a = a["api_key"].as_str().unwrap();
    let key_b = b["api_key"].as_str().unwrap();
    let r = srv.get("/v1/tenants/tenant-b", Some(key_a));
    assert_eq!(r.status(), 404);
    assert_eq!(error_code(&r.json().unwrap()), "resource/not_found");
    // Unknown and foreign slugs look the same.
    assert_eq!(srv.get("/v1/tenants/nobody", Some(key_a)).status(), 404);
    let own: Value = srv.get("/v1/tenants/tenant-a", Some(key_a)).json().unwrap();
    assert_eq!(own["id"], a["tenant"]["id"]);
    let own: Value = srv.get("/v1/tenant", Some(key_b)).json().unwrap();
    assert_eq!(own["id"], b["tenant"]["id"]);
}

#[test]
fn the_admin_cli_creates_lists_shows_tiers_and_rotates() {
    let srv = TestServer::start();
    let mode = std::fs::metadata(&srv.socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    let created = srv
        .admin(
            &[
                "tenant",
                "create",
                "--name",
                "Ops Tenant",
                "--slug",
                "ops",
                "--owner-email",
                "ops@example.com",
            ],
            &format!("{PASSWORD}\n"),
        )
        .json();
    assert_eq!(created["tenant"]["slug"], "ops");
    assert_eq!(created["owner"]["email"], "ops@example.com");
    let key = created["api_key"].as_str().unwrap().to_owned();
    assert_eq!(srv.get("/v1/tenant", Some(&key)).status(), 200);

    // The owner created by the CLI has a dashboard account: onboarding refuses the e-mail.
    let r = srv.post_json(
        "/v1/onboarding/signup",
        &crate::support::signup_body("Ops Two", "ops@example.com"),
    );
    assert_eq!(r.status(), 409);

    // Without an owner.
    let bare = srv
        .admin(&["tenant", "create", "--name", "No Owner"], "")
        .json();
    assert!(bare["owner"].is_null());

    let list = srv.admin(&["tenant", "list"], "").json();
    let slugs: Vec<&str> = list["tenants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["slug"].as_str().unwrap())
        .collect();
    assert_eq!(slugs, vec!["no-owner", "ops"]);

    let tier = srv.admin(&["tenant", "set-tier", "ops", "pro"], "").json();
    assert_eq!(tier["tier"], "pro");
    let me: Value = srv.get("/v1/tenant", Some(&key)).json().unwrap();
    assert_eq!(me["tier"], "pro");

    let rotated = srv.admin(&["apikey", "rotate", "ops"], "").json();
    let new_key = rotated["api_key"].as_str().unwrap();
    assert_ne!(new_key, key);
    assert_eq!(srv.get("/v1/tenant", Some(&key)).status(), 401);
    assert_eq!(srv.get("/v1/tenant", Some(new_key)).status(), 200);
    let shown = srv.admin(&["tenant", "show", "ops"], "").json();
    assert!(new_key.starts_with(shown["api_key_prefix"].as_str().unwrap()));
    assert_eq!(shown["tier"], "pro");
}

#[test]
fn admin_errors_go_to_stderr_with_a_non_zero_exit() {
    let srv = TestServer::start();
    let out = srv.admin(&["tenant", "show", "missing"], "");
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    assert!(out.stderr.contains("not found"), "{}", out.stderr);

    srv.admin(
        &["tenant", "create", "--name", "Taken", "--slug", "taken"],
        "",
    )
    .json();
    let out = srv.admin(
        &["tenant", "create", "--name", "Again", "--slug", "taken"],
        "",
    );
    assert!(!out.status.success());
    assert!(out.stderr.contains("tenant/slug_taken"), "{}", out.stderr);

    let out = srv.admin(
        &["tenant", "create", "--name", "Bad", "--slug", "Bad_Slug"],
        "",
    );
    assert!(!out.status.success());
    assert!(out.stderr.contains("slug"), "{}", out.stderr);

    let out = srv.admin(&["tenant", "set-tier", "taken", "platinum"], "");
    assert!(!out.status.success());
    assert!(out.stderr.contains("tier"), "{}", out.stderr);

    // An owner without a password on stdin.
    let out = srv.admin(
        &[
            "tenant",
            "create",
            "--name",
            "Nopw",
            "--owner-email",
            "n@example.com",
        ],
        "",
    );
    assert!(!out.status.success());
    assert!(out.stderr.contains("stdin"), "{}", out.stderr);

    let out = srv.admin(
        &[
            "tenant",
            "create",
            "--name",
            "Short",
            "--owner-email",
            "s@example.com",
        ],
        "short\n",
    );
    assert!(!out.status.success());
    assert!(out.stderr.contains("owner_password"), "{}", out.stderr);

    // No server behind the socket.
    let out = crate::support::admin_at(&srv.data_dir.join("nope.sock"), &["tenant", "list"], "");
    assert!(!out.status.success());
    assert!(out.stderr.contains("cannot connect"), "{}", out.stderr);
}
