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
pub(crate) fn p8_key(alg: &'static aws_lc_rs::signature::EcdsaSigningAlgorithm) -> String {
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

/// The tenant every test here works on.
const SLUG: &str = "social-co";

/// The ten providers, as their paths name them.
const PROVIDERS: [&str; 10] = [
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
];

/// GitHub's client secret in [`github_with_secret`].
const GH_SECRET: &str = "gh-secret-0123456789abcdef0123456789abcdef";

/// A server with the tenant `social-co` and its owner's dashboard session, signed in but not
/// re-authenticated.
fn social_co() -> (SmtpStub, TestServer, Session) {
    let (smtp, srv) = start_with_mail(&[]);
    srv.signup("Social Co", "owner@example.com");
    let owner = srv.login("owner@example.com", PASSWORD);
    (smtp, srv, owner)
}

/// GitHub enabled with a client id and [`GH_SECRET`].
fn github_with_secret() -> Value {
    json!({"enabled": true, "client_id": "Iv1.0123456789abcdef", "client_secret": GH_SECRET})
}

/// [`social_co`] with the session re-authenticated and GitHub's client set with its secret.
fn social_co_with_github() -> (SmtpStub, TestServer, Session) {
    let (smtp, srv, owner) = social_co();
    srv.reauth(&owner, PASSWORD);
    let (st, v) = srv.dash_json(
        "PUT",
        &social(SLUG, "github"),
        &owner,
        Some(&github_with_secret()),
    );
    assert_eq!(st, 200, "{v}");
    (smtp, srv, owner)
}

/// Sets Apple's client (enabled, `com.example.signin`) with a new signing key, the session
/// re-authenticated; answers the key and the PUT's answer.
fn set_apple(srv: &TestServer, owner: &Session) -> (String, Value) {
    let key = p8_key(&aws_lc_rs::signature::ECDSA_P256_SHA256_FIXED_SIGNING);
    let (st, v) = srv.dash_json(
        "PUT",
        &social(SLUG, "apple"),
        owner,
        Some(&json!({"enabled": true, "client_id": "com.example.signin",
            "apple": {"team_id": "ABCDE12345", "key_id": "KEY0123456", "private_key": key}})),
    );
    assert_eq!(st, 200, "{v}");
    (key, v)
}

/// A line of the key's base64 body, which a copy of the key in clear would hold.
fn key_body_line(key: &str) -> String {
    key.lines().nth(1).unwrap().to_owned()
}

/// Every provider reads as never configured, with its protocol, scopes and e-mail trust.
#[test]
fn every_provider_reads_as_never_configured_with_its_protocol_and_email_trust() {
    let (_smtp, srv, owner) = social_co();
    let mut trust: BTreeMap<String, usize> = BTreeMap::new();
    for p in PROVIDERS {
        let (st, v) = srv.dash_json("GET", &social(SLUG, p), &owner, None);
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
    let (_, google) = srv.dash_json("GET", &social(SLUG, "google"), &owner, None);
    assert_eq!(google["protocol"], "oidc");
    assert_eq!(google["email_trust"], "always_verified");
    assert_eq!(google["scopes"], json!(["openid", "email", "profile"]));
    let (_, github) = srv.dash_json("GET", &social(SLUG, "github"), &owner, None);
    assert_eq!(github["protocol"], "oauth2");
    assert_eq!(github["email_trust"], "provider_verified");
    let (_, ms) = srv.dash_json("GET", &social(SLUG, "microsoft"), &owner, None);
    assert_eq!(ms["microsoft_tenant"], "common");
    assert!(github.get("microsoft_tenant").is_some_and(Value::is_null));
}

/// A provider name that is not one of the ten, exactly, is not found to read or to write.
#[test]
fn an_unknown_provider_is_not_found() {
    let (_smtp, srv, owner) = social_co();
    for unknown in ["twitter", "Google", "google%20", "x.y"] {
        let (st, v) = srv.dash_json("GET", &social(SLUG, unknown), &owner, None);
        assert_eq!(st, 404, "{unknown}: {v}");
        assert_eq!(error_code(&v), "resource/not_found");
        let (st, _) = srv.dash_json(
            "PUT",
            &social(SLUG, unknown),
            &owner,
            Some(&json!({"enabled": false})),
        );
        assert_eq!(st, 404, "{unknown}");
    }
}

/// A client secret needs a recent re-authentication; a client id alone does not.
#[test]
fn only_a_secret_needs_a_re_authentication() {
    let (_smtp, srv, owner) = social_co();
    let (st, v) = srv.dash_json(
        "PUT",
        &social(SLUG, "github"),
        &owner,
        Some(&github_with_secret()),
    );
    assert_eq!(st, 401, "{v}");
    assert_eq!(error_code(&v), "dashboard/reauth_required");
    let (st, v) = srv.dash_json(
        "PUT",
        &social(SLUG, "slack"),
        &owner,
        Some(&json!({"enabled": false, "client_id": "1234.5678"})),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["client_id"], "1234.5678");
    assert_eq!(v["client_secret_set"], false);
}

/// Enabling a provider needs a client id, then a secret, even for a client id already stored.
#[test]
fn enabling_a_provider_needs_a_client_id_and_a_secret() {
    let (_smtp, srv, owner) = social_co();
    let (st, v) = srv.dash_json(
        "PUT",
        &social(SLUG, "slack"),
        &owner,
        Some(&json!({"enabled": false, "client_id": "1234.5678"})),
    );
    assert_eq!(st, 200, "{v}");
    srv.reauth(&owner, PASSWORD);
    let (st, v) = srv.dash_json(
        "PUT",
        &social(SLUG, "discord"),
        &owner,
        Some(&json!({"enabled": true})),
    );
    assert_eq!(refused_fields(st, &v), ["client_id"]);
    let (st, v) = srv.dash_json(
        "PUT",
        &social(SLUG, "discord"),
        &owner,
        Some(&json!({"enabled": true, "client_id": "123456"})),
    );
    assert_eq!(refused_fields(st, &v), ["client_secret"]);
    let (st, v) = srv.dash_json(
        "PUT",
        &social(SLUG, "slack"),
        &owner,
        Some(&json!({"enabled": true, "client_id": "1234.5678"})),
    );
    assert_eq!(refused_fields(st, &v), ["client_secret"]);
}

/// A secret is stored and said to be set, but neither the answer nor a later read shows it.
#[test]
fn a_client_secret_is_stored_but_never_shown() {
    let (_smtp, srv, owner) = social_co();
    srv.reauth(&owner, PASSWORD);
    let (st, v) = srv.dash_json(
        "PUT",
        &social(SLUG, "github"),
        &owner,
        Some(&github_with_secret()),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["enabled"], true);
    assert_eq!(v["client_id"], "Iv1.0123456789abcdef");
    assert_eq!(v["client_secret_set"], true);
    assert_eq!(v["scopes"], json!(["read:user", "user:email"]));
    assert!(v["updated_at"].is_string());
    assert!(!v.to_string().contains(GH_SECRET));
    let read = srv.dash("GET", &social(SLUG, "github"), &owner, None);
    assert!(!read.text().unwrap().contains(GH_SECRET));
}

/// A PUT that leaves the secret out keeps the stored one for the same client id.
#[test]
fn leaving_the_secret_out_keeps_it_for_the_same_client_id() {
    let (_smtp, srv, owner) = social_co_with_github();
    let (st, v) = srv.dash_json(
        "PUT",
        &social(SLUG, "github"),
        &owner,
        Some(&json!({"enabled": false, "client_id": "Iv1.0123456789abcdef"})),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["client_secret_set"], true);
    assert_eq!(v["enabled"], false);
}

/// A scope given twice is stored once.
#[test]
fn a_scope_given_twice_is_stored_once() {
    let (_smtp, srv, owner) = social_co_with_github();
    let (st, v) = srv.dash_json(
        "PUT",
        &social(SLUG, "github"),
        &owner,
        Some(
            &json!({"enabled": false, "client_id": "Iv1.0123456789abcdef", "scopes": ["read:user", "user:email", "read:user"]}),
        ),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["scopes"], json!(["read:user", "user:email"]));
}

/// A new client id needs a secret of its own, and the refused PUT changes nothing.
#[test]
fn a_new_client_id_needs_its_own_secret() {
    let (_smtp, srv, owner) = social_co_with_github();
    let (st, v) = srv.dash_json(
        "PUT",
        &social(SLUG, "github"),
        &owner,
        Some(&json!({"enabled": false, "client_id": "Iv1.another"})),
    );
    assert_eq!(refused_fields(st, &v), ["client_secret"]);
    let (_, v) = srv.dash_json("GET", &social(SLUG, "github"), &owner, None);
    assert_eq!(
        v["client_id"], "Iv1.0123456789abcdef",
        "a refused PUT changed nothing"
    );
    assert_eq!(v["client_secret_set"], true);
}

/// A bad value is refused with a 400 naming its field alone, and an unknown field is refused.
#[test]
fn a_bad_field_is_refused_naming_it() {
    let (_smtp, srv, owner) = social_co();
    srv.reauth(&owner, PASSWORD);
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
        let (st, v) = srv.dash_json("PUT", &social(SLUG, p), &owner, Some(&body));
        assert_eq!(refused_fields(st, &v), [field], "{p} {body}");
    }
    let (st, v) = srv.dash_json(
        "PUT",
        &social(SLUG, "google"),
        &owner,
        Some(&json!({"enabled": false, "unknown": 1})),
    );
    assert_eq!(st, 400, "{v}");
}

/// Microsoft's directory is a keyword, a UUID (stored lowercased) or a domain (lowercased too).
#[test]
fn a_microsoft_directory_is_a_keyword_a_uuid_or_a_domain() {
    let (_smtp, srv, owner) = social_co();
    srv.reauth(&owner, PASSWORD);
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
            &social(SLUG, "microsoft"),
            &owner,
            Some(&json!({"enabled": false, "microsoft_tenant": given})),
        );
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["microsoft_tenant"], stored);
    }
}

/// Apple takes the key that signs its client secret in place of a secret, sealed and never shown.
#[test]
fn apple_takes_a_signing_key_in_place_of_a_secret_and_never_shows_it() {
    let (_smtp, srv, owner) = social_co();
    srv.reauth(&owner, PASSWORD);
    let (key, v) = set_apple(&srv, &owner);
    assert_eq!(v["client_secret_set"], true);
    assert_eq!(
        v["apple"],
        json!({"team_id": "ABCDE12345", "key_id": "KEY0123456", "private_key_set": true})
    );
    assert_eq!(v["scopes"], json!(["name", "email"]));
    assert!(!v.to_string().contains(&key_body_line(&key)));
}

/// A PUT that leaves Apple's key out keeps it with its ids, for the same client id.
#[test]
fn leaving_the_apple_key_out_keeps_it_with_its_ids() {
    let (_smtp, srv, owner) = social_co();
    srv.reauth(&owner, PASSWORD);
    set_apple(&srv, &owner);
    let (st, v) = srv.dash_json(
        "PUT",
        &social(SLUG, "apple"),
        &owner,
        Some(&json!({"enabled": true, "client_id": "com.example.signin"})),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        v["apple"],
        json!({"team_id": "ABCDE12345", "key_id": "KEY0123456", "private_key_set": true})
    );
}

/// Clearing the client id removes the secret with it.
#[test]
fn clearing_the_client_id_removes_the_secret() {
    let (_smtp, srv, owner) = social_co_with_github();
    let (st, v) = srv.dash_json(
        "PUT",
        &social(SLUG, "github"),
        &owner,
        Some(&json!({"enabled": false, "client_id": null})),
    );
    assert_eq!(st, 200, "{v}");
    assert!(v["client_id"].is_null());
    assert_eq!(v["client_secret_set"], false);
}

/// A viewer reads a provider's settings, and is refused a change even re-authenticated.
#[test]
fn a_viewer_reads_the_settings_but_only_owners_change_them() {
    let (smtp, srv, owner) = social_co();
    srv.reauth(&owner, PASSWORD);
    set_apple(&srv, &owner);
    srv.add_viewer(&smtp, &owner, SLUG);
    let viewer = srv.login("viewer@example.com", PASSWORD);
    srv.reauth(&viewer, PASSWORD);
    let (st, v) = srv.dash_json("GET", &social(SLUG, "apple"), &viewer, None);
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["enabled"], true);
    let (st, v) = srv.dash_json(
        "PUT",
        &social(SLUG, "apple"),
        &viewer,
        Some(&json!({"enabled": false, "client_id": "com.example.signin"})),
    );
    assert_eq!(st, 403, "{v}");
    assert_eq!(error_code(&v), "dashboard/forbidden");
}

/// Another tenant's owner does not see this tenant's providers.
#[test]
fn another_tenants_owner_does_not_see_the_settings() {
    let (_smtp, srv, owner) = social_co();
    srv.reauth(&owner, PASSWORD);
    set_apple(&srv, &owner);
    srv.signup("Elsewhere", "boss@example.com");
    let boss = srv.login("boss@example.com", PASSWORD);
    let (st, _) = srv.dash_json("GET", &social(SLUG, "apple"), &boss, None);
    assert_eq!(st, 404);
}

/// The audit log names the fields each change set, and never holds a secret.
#[test]
fn the_audit_log_names_the_changed_fields_and_never_a_secret() {
    let (_smtp, srv, owner) = social_co_with_github();
    set_apple(&srv, &owner);
    let (st, audit) = srv.dash_json(
        "GET",
        &format!(
            "/v1/auth/dashboard/tenants/{SLUG}/audit-events?limit=100&type=settings.social.updated"
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
    assert!(!audit.to_string().contains(GH_SECRET));
}

/// Apple's settings survive a restart, and its key is sealed at rest.
#[test]
fn apple_settings_survive_a_restart_and_the_key_is_sealed_at_rest() {
    let (_smtp, mut srv, owner) = social_co();
    srv.reauth(&owner, PASSWORD);
    let (key, _) = set_apple(&srv, &owner);
    srv.restart();
    let owner = srv.login("owner@example.com", PASSWORD);
    let (_, v) = srv.dash_json("GET", &social(SLUG, "apple"), &owner, None);
    assert_eq!(v["client_secret_set"], true);
    assert_eq!(v["apple"]["key_id"], "KEY0123456");
    srv.kill_and_check_absent(&key_body_line(&key));
}
