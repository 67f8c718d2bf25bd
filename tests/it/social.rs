//! The tenant's social sign-in providers on the dashboard: the ten providers and their trust
//! levels, secrets sealed and never shown (after a re-authentication only), the rules tying a
//! secret to its client id, every field's check, owners only, and the audit trail.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::support::*;

fn social(slug: &str, provider: &str) -> String {
    format!("/v1/auth/dashboard/tenants/{slug}/settings/social/{provider}")
}

/// A P-256 private key made here, as Apple's `.p8` files hold one (PKCS#8 PEM).
fn p8_key(alg: &'static aws_lc_rs::signature::EcdsaSigningAlgorithm) -> String {
    use base64::{engine::general_purpose::STANDARD, Engine};
    let rng = aws_lc_rs::rand::SystemRandom::new();
    let der = aws_lc_rs::signature::EcdsaKeyPair::generate_pkcs8(alg, &rng).expect("a key");
    let b64 = STANDARD.encode(der.as_ref());
    let lines: Vec<&str> = b64
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        lines.join("\n")
    )
}

/// The names of the fields a 400 names.
#[track_caller]
fn refused_fields(st: u16, body: &Value) -> Vec<String> {
    assert_eq!(st, 400, "{body}");
    assert_eq!(error_code(body), "validation/invalid_request", "{body}");
    body["error"]["details"]["fields"]
        .as_object()
        .expect("fields")
        .keys()
        .cloned()
        .collect()
}

#[test]
fn ten_providers_with_their_trust_and_sealed_secrets_set_by_owners_only() {
    let (smtp, mut srv) = start_with_mail(&[]);
    srv.signup("Social Co", "owner@example.com");
    let slug = "social-co";
    let owner = srv.login("owner@example.com", PASSWORD);

    // Every provider reads as never configured, with its protocol and trust.
    let mut trust: BTreeMap<String, usize> = BTreeMap::new();
    for p in [
        "google",
        "apple",
        "microsoft",
        "gitlab",
        "linkedin",
        "slack",
        "github",
        "discord",
        "facebook",
        "x",
    ] {
        let (st, v) = srv.dash_json("GET", &social(slug, p), &owner, None);
        assert_eq!(st, 200, "{p}: {v}");
        assert_eq!(v["provider"], p);
        assert_eq!(v["enabled"], false);
        assert!(v["client_id"].is_null());
        assert_eq!(v["client_secret_set"], false);
        assert!(v["updated_at"].is_null());
        assert!(v["callback_url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/oauth/{p}/callback")));
        assert!(!v["scopes"].as_array().unwrap().is_empty());
        *trust
            .entry(v["email_trust"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    assert_eq!(
        trust,
        BTreeMap::from([
            ("always_verified".to_owned(), 2),
            ("never_trust".to_owned(), 2),
            ("provider_verified".to_owned(), 6)
        ])
    );
    let (_, google) = srv.dash_json("GET", &social(slug, "google"), &owner, None);
    assert_eq!(google["protocol"], "oidc");
    assert_eq!(google["email_trust"], "always_verified");
    assert_eq!(google["scopes"], json!(["openid", "email", "profile"]));
    let (_, github) = srv.dash_json("GET", &social(slug, "github"), &owner, None);
    assert_eq!(github["protocol"], "oauth2");
    assert_eq!(github["email_trust"], "provider_verified");
    let (_, ms) = srv.dash_json("GET", &social(slug, "microsoft"), &owner, None);
    assert_eq!(ms["microsoft_tenant"], "common");
    assert!(github.get("microsoft_tenant").is_some_and(Value::is_null));
    for unknown in ["twitter", "Google", "google%20", "x.y"] {
        let (st, v) = srv.dash_json("GET", &social(slug, unknown), &owner, None);
        assert_eq!(st, 404, "{unknown}: {v}");
        assert_eq!(error_code(&v), "resource/not_found");
        let (st, _) = srv.dash_json(
            "PUT",
            &social(slug, unknown),
            &owner,
            Some(&json!({"enabled": false})),
        );
        assert_eq!(st, 404, "{unknown}");
    }

    // A secret needs a re-authentication; without a secret, none is needed.
    let secret = "gh-secret-0123456789abcdef0123456789abcdef";
    let gh = json!({"enabled": true, "client_id": "Iv1.0123456789abcdef", "client_secret": secret});
    let (st, v) = srv.dash_json("PUT", &social(slug, "github"), &owner, Some(&gh));
    assert_eq!(st, 401, "{v}");
    assert_eq!(error_code(&v), "dashboard/reauth_required");
    let (st, v) = srv.dash_json(
        "PUT",
        &social(slug, "slack"),
        &owner,
        Some(&json!({"enabled": false, "client_id": "1234.5678"})),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["client_id"], "1234.5678");
    assert_eq!(v["client_secret_set"], false);
    srv.reauth(&owner, PASSWORD);

    // Enabled needs a client id and a secret.
    let (st, v) = srv.dash_json(
        "PUT",
        &social(slug, "discord"),
        &owner,
        Some(&json!({"enabled": true})),
    );
    assert_eq!(refused_fields(st, &v), ["client_id"]);
    let (st, v) = srv.dash_json(
        "PUT",
        &social(slug, "discord"),
        &owner,
        Some(&json!({"enabled": true, "client_id": "123456"})),
    );
    assert_eq!(refused_fields(st, &v), ["client_secret"]);
    let (st, v) = srv.dash_json(
        "PUT",
        &social(slug, "slack"),
        &owner,
        Some(&json!({"enabled": true, "client_id": "1234.5678"})),
    );
    assert_eq!(refused_fields(st, &v), ["client_secret"]);

    let (st, v) = srv.dash_json("PUT", &social(slug, "github"), &owner, Some(&gh));
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["enabled"], true);
    assert_eq!(v["client_id"], "Iv1.0123456789abcdef");
    assert_eq!(v["client_secret_set"], true);
    assert_eq!(v["scopes"], json!(["read:user", "user:email"]));
    assert!(v["updated_at"].is_string());
    assert!(!v.to_string().contains(secret));
    let read = srv.dash("GET", &social(slug, "github"), &owner, None);
    assert!(!read.text().unwrap().contains(secret));

    // Leaving the secret out keeps it for the same client id; a new client id needs its own.
    let (st, v) = srv.dash_json(
        "PUT",
        &social(slug, "github"),
        &owner,
        Some(
            &json!({"enabled": false, "client_id": "Iv1.0123456789abcdef", "scopes": ["read:user", "user:email", "read:user"]}),
        ),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["client_secret_set"], true);
    assert_eq!(v["enabled"], false);
    assert_eq!(v["scopes"], json!(["read:user", "user:email"]));
    let (st, v) = srv.dash_json(
        "PUT",
        &social(slug, "github"),
        &owner,
        Some(&json!({"enabled": false, "client_id": "Iv1.another"})),
    );
    assert_eq!(refused_fields(st, &v), ["client_secret"]);
    let (_, v) = srv.dash_json("GET", &social(slug, "github"), &owner, None);
    assert_eq!(
        v["client_id"], "Iv1.0123456789abcdef",
        "a refused PUT changed nothing"
    );
    assert_eq!(v["client_secret_set"], true);

    // Every field's rule, each named.
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "google",
            json!({"enabled": false, "client_id": ""}),
            "client_id",
        ),
        (
            "google",
            json!({"enabled": false, "client_id": "a b"}),
            "client_id",
        ),
        (
            "google",
            json!({"enabled": false, "client_id": "x".repeat(257)}),
            "client_id",
        ),
        (
            "google",
            json!({"enabled": false, "client_id": "a", "client_secret": ""}),
            "client_secret",
        ),
        (
            "google",
            json!({"enabled": false, "client_id": "a", "client_secret": "s".repeat(1025)}),
            "client_secret",
        ),
        (
            "google",
            json!({"enabled": false, "client_id": "a", "client_secret": "tab\there"}),
            "client_secret",
        ),
        (
            "google",
            json!({"enabled": false, "scopes": ["email"]}),
            "scopes",
        ),
        ("google", json!({"enabled": false, "scopes": []}), "scopes"),
        (
            "google",
            json!({"enabled": false, "scopes": ["openid", "a b"]}),
            "scopes[1]",
        ),
        (
            "google",
            json!({"enabled": false, "scopes": ["openid", "a\"b"]}),
            "scopes[1]",
        ),
        (
            "github",
            json!({"enabled": false, "scopes": vec!["s"; 21]}),
            "scopes",
        ),
        (
            "google",
            json!({"enabled": false, "apple": {"team_id": "ABCDE12345", "key_id": "ABCDE12345", "private_key": "k"}}),
            "apple",
        ),
        (
            "github",
            json!({"enabled": false, "microsoft_tenant": "common"}),
            "microsoft_tenant",
        ),
        (
            "microsoft",
            json!({"enabled": false, "microsoft_tenant": "not a tenant"}),
            "microsoft_tenant",
        ),
        (
            "apple",
            json!({"enabled": false, "client_id": "com.example.web", "client_secret": "s"}),
            "client_secret",
        ),
        (
            "apple",
            json!({"enabled": false, "apple": {"team_id": "abcde12345", "key_id": "ABCDE12345", "private_key": p8_key(&aws_lc_rs::signature::ECDSA_P256_SHA256_FIXED_SIGNING)}}),
            "apple.team_id",
        ),
        (
            "apple",
            json!({"enabled": false, "apple": {"team_id": "ABCDE12345", "key_id": "KEY", "private_key": p8_key(&aws_lc_rs::signature::ECDSA_P256_SHA256_FIXED_SIGNING)}}),
            "apple.key_id",
        ),
        (
            "apple",
            json!({"enabled": false, "apple": {"team_id": "ABCDE12345", "key_id": "ABCDE12345", "private_key": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"}}),
            "apple.private_key",
        ),
        (
            "apple",
            json!({"enabled": false, "apple": {"team_id": "ABCDE12345", "key_id": "ABCDE12345", "private_key": p8_key(&aws_lc_rs::signature::ECDSA_P384_SHA384_FIXED_SIGNING)}}),
            "apple.private_key",
        ),
    ];
    for (p, body, field) in cases {
        let (st, v) = srv.dash_json("PUT", &social(slug, p), &owner, Some(&body));
        assert_eq!(refused_fields(st, &v), [field], "{p} {body}");
    }
    let (st, v) = srv.dash_json(
        "PUT",
        &social(slug, "google"),
        &owner,
        Some(&json!({"enabled": false, "unknown": 1})),
    );
    assert_eq!(st, 400, "{v}");

    // Microsoft's directory: a keyword, a UUID (lowercased) or a domain.
    for (given, stored) in [
        ("organizations", "organizations"),
        (
            "9188040D-6C67-4C5B-B112-36A304B66DAD",
            "9188040d-6c67-4c5b-b112-36a304b66dad",
        ),
        ("Contoso.onmicrosoft.com", "contoso.onmicrosoft.com"),
    ] {
        let (st, v) = srv.dash_json(
            "PUT",
            &social(slug, "microsoft"),
            &owner,
            Some(&json!({"enabled": false, "microsoft_tenant": given})),
        );
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["microsoft_tenant"], stored);
    }

    // Apple: the key that signs its client secret, sealed like a secret.
    let key = p8_key(&aws_lc_rs::signature::ECDSA_P256_SHA256_FIXED_SIGNING);
    let (st, v) = srv.dash_json(
        "PUT",
        &social(slug, "apple"),
        &owner,
        Some(&json!({"enabled": true, "client_id": "com.example.signin",
            "apple": {"team_id": "ABCDE12345", "key_id": "KEY0123456", "private_key": key}})),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["client_secret_set"], true);
    assert_eq!(
        v["apple"],
        json!({"team_id": "ABCDE12345", "key_id": "KEY0123456", "private_key_set": true})
    );
    assert_eq!(v["scopes"], json!(["name", "email"]));
    let body_line = key.lines().nth(1).unwrap().to_owned();
    assert!(!v.to_string().contains(&body_line));

    // A PUT that leaves the key out keeps it with its ids (same client id).
    let (st, v) = srv.dash_json(
        "PUT",
        &social(slug, "apple"),
        &owner,
        Some(&json!({"enabled": true, "client_id": "com.example.signin"})),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        v["apple"],
        json!({"team_id": "ABCDE12345", "key_id": "KEY0123456", "private_key_set": true})
    );

    // Clearing the client removes the secret too.
    let (st, v) = srv.dash_json(
        "PUT",
        &social(slug, "github"),
        &owner,
        Some(&json!({"enabled": false, "client_id": null})),
    );
    assert_eq!(st, 200, "{v}");
    assert!(v["client_id"].is_null());
    assert_eq!(v["client_secret_set"], false);

    // A viewer reads; only owners write.
    let r = srv.dash(
        "POST",
        &format!("/v1/auth/dashboard/tenants/{slug}/members"),
        &owner,
        Some(&json!({"email": "viewer@example.com", "role": "viewer"})),
    );
    assert_eq!(r.status(), 201);
    srv.accept_mailed_invite(&smtp, "viewer@example.com", 1, PASSWORD);
    let viewer = srv.login("viewer@example.com", PASSWORD);
    srv.reauth(&viewer, PASSWORD);
    let (st, v) = srv.dash_json("GET", &social(slug, "apple"), &viewer, None);
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["enabled"], true);
    let (st, v) = srv.dash_json(
        "PUT",
        &social(slug, "apple"),
        &viewer,
        Some(&json!({"enabled": false, "client_id": "com.example.signin"})),
    );
    assert_eq!(st, 403, "{v}");
    assert_eq!(error_code(&v), "dashboard/forbidden");
    // Another tenant's owner does not see this one.
    srv.signup("Elsewhere", "boss@example.com");
    let boss = srv.login("boss@example.com", PASSWORD);
    let (st, _) = srv.dash_json("GET", &social(slug, "apple"), &boss, None);
    assert_eq!(st, 404);

    // The audit log names the changed fields, never a secret.
    let (st, audit) = srv.dash_json(
        "GET",
        &format!(
            "/v1/auth/dashboard/tenants/{slug}/audit-events?limit=100&type=settings.social.updated"
        ),
        &owner,
        None,
    );
    assert_eq!(st, 200, "{audit}");
    let events = audit["data"].as_array().unwrap();
    let github_enabled = events
        .iter()
        .find(|e| {
            e["metadata"]["provider"] == "github"
                && e["fields"] == json!(["enabled", "client_id", "client_secret"])
        })
        .unwrap_or_else(|| panic!("no event of the first github PUT in {audit}"));
    assert_eq!(github_enabled["metadata"]["enabled"], true);
    assert!(events.iter().any(|e| e["metadata"]["provider"] == "apple"
        && e["fields"]
            .as_array()
            .unwrap()
            .contains(&json!("apple.private_key"))));
    assert!(!audit.to_string().contains(secret));

    // Survives a restart; sealed at rest.
    srv.restart();
    let owner = srv.login("owner@example.com", PASSWORD);
    let (_, v) = srv.dash_json("GET", &social(slug, "apple"), &owner, None);
    assert_eq!(v["client_secret_set"], true);
    assert_eq!(v["apple"]["key_id"], "KEY0123456");
    srv.kill_and_check_absent(&body_line);
}
