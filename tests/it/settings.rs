//! Every tenant setting: each bound on both sides, wrong types, unknown fields, nulls,
//! atomicity of a refused update, and durability across SIGKILL.

use serde_json::{json, Value};

use crate::support::{error_code, owner_setup, Session, TestServer, PASSWORD};

const SEC: &str = "/v1/auth/dashboard/tenants/set-co/settings/security";

/// Sends `body` and answers the status and, for a 400, the one field named.
fn send(srv: &TestServer, s: &Session, method: &str, path: &str, body: &Value) -> (u16, Value) {
    let r = srv.dash(method, path, s, Some(body));
    let status = r.status().as_u16();
    (status, r.json().unwrap_or(Value::Null))
}

fn assert_rejects(
    srv: &TestServer,
    s: &Session,
    method: &str,
    path: &str,
    body: Value,
    field: &str,
) {
    let (status, err) = send(srv, s, method, path, &body);
    assert_eq!(status, 400, "{body} should be refused");
    assert_eq!(error_code(&err), "validation/invalid_request", "{body}");
    let fields = err["error"]["details"]["fields"].as_object().unwrap();
    assert!(
        fields.contains_key(field),
        "{body}: expected {field} in {err}"
    );
}

fn assert_accepts(srv: &TestServer, s: &Session, method: &str, path: &str, body: Value) -> Value {
    let (status, out) = send(srv, s, method, path, &body);
    assert_eq!(status, 200, "{body} should be accepted: {out}");
    out
}

#[test]
fn security_settings_enforce_every_rule_of_2_8() {
    let (srv, s, _) = owner_setup("Set Co");
    let defaults: Value = srv.dash("GET", SEC, &s, None).json().unwrap();
    assert_eq!(defaults["mfa_policy"], "optional");
    assert_eq!(defaults["byok_provider_auth_token_set"], false);
    assert!(defaults["sms_allowed_countries"].is_null());

    let ok = |b: Value| assert_accepts(&srv, &s, "PATCH", SEC, b);
    let bad = |b: Value, f: &str| assert_rejects(&srv, &s, "PATCH", SEC, b, f);

    assert_eq!(
        ok(json!({"mfa_policy": "required"}))["mfa_policy"],
        "required"
    );
    bad(json!({"mfa_policy": "always"}), "mfa_policy");
    bad(json!({"mfa_policy": null}), "mfa_policy");
    bad(json!({"mfa_policy": 1}), "mfa_policy");
    for (v, good) in [(2, false), (3, true), (30, true), (31, false)] {
        let b = json!({"mfa_grace_period_days": v});
        if good {
            ok(b);
        } else {
            bad(b, "mfa_grace_period_days");
        }
    }
    bad(
        json!({"mfa_grace_period_days": "7"}),
        "mfa_grace_period_days",
    );
    bad(
        json!({"mfa_grace_period_days": 7.5}),
        "mfa_grace_period_days",
    );
    // The schema's bounds: an enterprise tenant may go up to 100000 on the platform's account
    // (`sms::the_platform_accounts_monthly_cap_is_bounded_by_the_tier` has the tiers).
    srv.admin(&["tenant", "set-tier", "set-co", "enterprise"], "")
        .json();
    for (v, good) in [(-1, false), (0, true), (100000, true), (100001, false)] {
        let b = json!({"sms_otp_monthly_cap": v});
        if good {
            ok(b);
        } else {
            bad(b, "sms_otp_monthly_cap");
        }
    }
    for f in [
        "block_disposable_emails",
        "block_email_subaddresses",
        "automatic_account_linking_enabled",
        "explicit_account_linking_enabled",
        "sms_otp_enabled",
        "magic_link_enabled",
        "email_otp_enabled",
    ] {
        assert_eq!(ok(json!({f: true}))[f], true, "{f}");
        assert_eq!(ok(json!({f: false}))[f], false, "{f}");
        bad(json!({f: "yes"}), f);
        bad(json!({f: null}), f);
    }
    bad(json!({"not_a_setting": true}), "not_a_setting");

    // Countries: uppercase pairs, at most 300; lowercase refused, not normalised.
    assert_eq!(
        ok(json!({"sms_allowed_countries": ["PL", "DE"]}))["sms_allowed_countries"],
        json!(["PL", "DE"])
    );
    bad(
        json!({"sms_allowed_countries": ["pl"]}),
        "sms_allowed_countries[0]",
    );
    bad(
        json!({"sms_allowed_countries": ["DE", "POL"]}),
        "sms_allowed_countries[1]",
    );
    let many: Vec<String> = (0..301)
        .map(|i| {
            format!(
                "{}{}",
                (b'A' + (i / 26 % 26) as u8) as char,
                (b'A' + (i % 26) as u8) as char
            )
        })
        .collect();
    bad(
        json!({"sms_allowed_countries": many}),
        "sms_allowed_countries",
    );
    assert_eq!(
        ok(json!({"sms_allowed_countries": many[..300]}))["sms_allowed_countries"]
            .as_array()
            .unwrap()
            .len(),
        300
    );
    assert!(ok(json!({"sms_allowed_countries": []}))["sms_allowed_countries"].is_null());
    ok(json!({"sms_allowed_countries": ["FR"]}));
    assert!(ok(json!({"sms_allowed_countries": null}))["sms_allowed_countries"].is_null());
}

#[test]
fn byok_credentials_need_reauth_are_sealed_and_never_returned() {
    let (mut srv, s, _) = owner_setup("Set Co");
    let sid = format!("AC{}", "a1".repeat(16));
    let msid = format!("MG{}", "0f".repeat(16));
    let token = "T".repeat(32);
    let body = json!({"byok_provider_account_sid": sid});
    let (status, err) = send(&srv, &s, "PATCH", SEC, &body);
    assert_eq!(status, 401);
    assert_eq!(error_code(&err), "dashboard/reauth_required");
    srv.reauth(&s, PASSWORD);
    let bad = |b: Value, f: &str| assert_rejects(&srv, &s, "PATCH", SEC, b, f);
    bad(
        json!({"byok_provider_account_sid": format!("AC{}", "A1".repeat(16))}),
        "byok_provider_account_sid",
    );
    bad(
        json!({"byok_provider_account_sid": format!("AC{}", "a".repeat(31))}),
        "byok_provider_account_sid",
    );
    bad(
        json!({"byok_provider_account_sid": format!("MG{}", "a".repeat(32))}),
        "byok_provider_account_sid",
    );
    bad(
        json!({"byok_provider_messaging_service_sid": sid.clone()}),
        "byok_provider_messaging_service_sid",
    );
    bad(
        json!({"byok_provider_auth_token": "T".repeat(31)}),
        "byok_provider_auth_token",
    );
    bad(
        json!({"byok_provider_auth_token": "T".repeat(129)}),
        "byok_provider_auth_token",
    );
    let out = assert_accepts(
        &srv,
        &s,
        "PATCH",
        SEC,
        json!({"byok_provider_account_sid": sid, "byok_provider_messaging_service_sid": msid, "byok_provider_auth_token": token}),
    );
    assert_eq!(out["byok_provider_account_sid"], sid);
    assert_eq!(out["byok_provider_auth_token_set"], true);
    assert!(out.get("byok_provider_auth_token").is_none());
    let read = srv.dash("GET", SEC, &s, None).text().unwrap();
    assert!(!read.contains(&token));
    assert_accepts(
        &srv,
        &s,
        "PATCH",
        SEC,
        json!({"byok_provider_auth_token": "U".repeat(128)}),
    );
    // The token is sealed at rest: not in the database files in clear.
    srv.kill_and_check_absent(&token);
}

#[test]
fn byok_nulls_clear() {
    let (srv, s, _) = owner_setup("Set Co");
    srv.reauth(&s, PASSWORD);
    let sid = format!("AC{}", "b".repeat(32));
    assert_accepts(
        &srv,
        &s,
        "PATCH",
        SEC,
        json!({"byok_provider_account_sid": sid, "byok_provider_auth_token": "x".repeat(40)}),
    );
    let out = assert_accepts(
        &srv,
        &s,
        "PATCH",
        SEC,
        json!({"byok_provider_account_sid": null, "byok_provider_auth_token": null}),
    );
    assert!(out["byok_provider_account_sid"].is_null());
    assert_eq!(out["byok_provider_auth_token_set"], false);
}

#[test]
fn a_refused_update_changes_nothing() {
    let (srv, s, _) = owner_setup("Set Co");
    let before: Value = srv.dash("GET", SEC, &s, None).json().unwrap();
    // One good field, one bad: nothing is applied.
    let (status, _) = send(
        &srv,
        &s,
        "PATCH",
        SEC,
        &json!({"magic_link_enabled": false, "mfa_grace_period_days": 99}),
    );
    assert_eq!(status, 400);
    let after: Value = srv.dash("GET", SEC, &s, None).json().unwrap();
    assert_eq!(before, after);
    let domains = "/v1/auth/dashboard/tenants/set-co/settings/email-domains";
    assert_accepts(
        &srv,
        &s,
        "PUT",
        domains,
        json!({"allowlist": ["a.example"]}),
    );
    let before: Value = srv.dash("GET", domains, &s, None).json().unwrap();
    let (status, _) = send(
        &srv,
        &s,
        "PUT",
        domains,
        &json!({"allowlist": ["b.example", "bad domain"], "blocklist": ["c.example"]}),
    );
    assert_eq!(status, 400);
    let after: Value = srv.dash("GET", domains, &s, None).json().unwrap();
    assert_eq!(before, after);
    // No audit event for the refused ones.
    let events: Value = srv
        .dash(
            "GET",
            "/v1/auth/dashboard/tenants/set-co/audit-events",
            &s,
            None,
        )
        .json()
        .unwrap();
    assert_eq!(events["data"].as_array().unwrap().len(), 2, "{events}");
}

#[test]
fn email_domains_are_lowercased_punycoded_deduplicated_and_bounded() {
    let (srv, s, _) = owner_setup("Set Co");
    let path = "/v1/auth/dashboard/tenants/set-co/settings/email-domains";
    let out = assert_accepts(
        &srv,
        &s,
        "PUT",
        path,
        json!({"allowlist": ["Example.COM", "bücher.example", "example.com"], "blocklist": ["Mailinator.com"]}),
    );
    assert_eq!(
        out["allowlist"],
        json!(["example.com", "xn--bcher-kva.example"])
    );
    assert_eq!(out["blocklist"], json!(["mailinator.com"]));
    // Absent lists are empty: the replace is whole.
    let out = assert_accepts(&srv, &s, "PUT", path, json!({"blocklist": ["x.example"]}));
    assert_eq!(out["allowlist"], json!([]));
    let bad = |b: Value, f: &str| assert_rejects(&srv, &s, "PUT", path, b, f);
    bad(json!({"allowlist": ["ok.example", ""]}), "allowlist[1]");
    bad(json!({"blocklist": ["no spaces.example"]}), "blocklist[0]");
    bad(json!({"blocklist": ["*.example.com"]}), "blocklist[0]");
    bad(json!({"blocklist": ["localhost"]}), "blocklist[0]");
    bad(json!({"allowlist": "example.com"}), "allowlist");
    bad(json!({"allowlist": [], "extra": []}), "extra");
    // 253 characters is the longest name.
    let label = "a".repeat(63);
    let d253 = format!("{label}.{label}.{label}.{}", "b".repeat(61));
    assert_eq!(d253.len(), 253);
    assert_accepts(&srv, &s, "PUT", path, json!({"allowlist": [d253]}));
    bad(json!({"allowlist": [format!("{d253}c")]}), "allowlist[0]");
    let hundred: Vec<String> = (0..100).map(|i| format!("d{i}.example")).collect();
    assert_accepts(&srv, &s, "PUT", path, json!({"allowlist": hundred}));
    let over: Vec<String> = (0..101).map(|i| format!("d{i}.example")).collect();
    bad(json!({"allowlist": over}), "allowlist");
}

#[test]
fn guests_need_confirmation_the_first_time_with_a_privileged_default_role() {
    let (srv, s, _) = owner_setup("Set Co");
    let anon = "/v1/auth/dashboard/tenants/set-co/settings/anonymous";
    let roles = "/v1/auth/dashboard/tenants/set-co/settings/roles";
    let out: Value = srv.dash("GET", anon, &s, None).json().unwrap();
    assert_eq!(
        out,
        json!({"anonymous_signins_enabled": false, "anonymous_user_ttl_days": 30})
    );
    let bad = |b: Value, f: &str| assert_rejects(&srv, &s, "PATCH", anon, b, f);
    for (v, good) in [(0, false), (1, true), (180, true), (181, false)] {
        let b = json!({"anonymous_user_ttl_days": v});
        if good {
            assert_accepts(&srv, &s, "PATCH", anon, b);
        } else {
            bad(b, "anonymous_user_ttl_days");
        }
    }
    bad(
        json!({"anonymous_signins_enabled": "on"}),
        "anonymous_signins_enabled",
    );
    bad(json!({"anonymous_user_ttl_days": 10, "x": 1}), "x");
    assert_eq!(
        srv.dash("GET", roles, &s, None).json::<Value>().unwrap()["default_role"],
        "member"
    );
    // Enabling with the default `member` role: refused without the header.
    let (status, err) = send(
        &srv,
        &s,
        "PATCH",
        anon,
        &json!({"anonymous_signins_enabled": true}),
    );
    assert_eq!(status, 409);
    assert_eq!(
        error_code(&err),
        "anonymous/privileged_default_role_unconfirmed"
    );
    assert!(err["error"]["details"]["reason"].is_string(), "{err}");
    assert_eq!(err["error"]["details"]["default_role"], "member");
    let out: Value = srv.dash("GET", anon, &s, None).json().unwrap();
    assert_eq!(out["anonymous_signins_enabled"], false);
    let r = srv
        .client
        .patch(srv.url(anon))
        .bearer_auth(&s.token)
        .header("x-service-confirm", "privileged-default-role")
        .json(&json!({"anonymous_signins_enabled": true}))
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json::<Value>().unwrap()["anonymous_signins_enabled"],
        true
    );
    // Not the first time any more: off and on again needs no header.
    assert_accepts(
        &srv,
        &s,
        "PATCH",
        anon,
        json!({"anonymous_signins_enabled": false}),
    );
    assert_accepts(
        &srv,
        &s,
        "PATCH",
        anon,
        json!({"anonymous_signins_enabled": true}),
    );
    // Roles.
    let bad_role = |b: Value| assert_rejects(&srv, &s, "PATCH", roles, b, "default_role");
    bad_role(json!({"default_role": "root"}));
    bad_role(json!({"default_role": 1}));
    assert_eq!(
        assert_accepts(&srv, &s, "PATCH", roles, json!({"default_role": "reader"}))["default_role"],
        "reader"
    );
}

#[test]
fn a_reader_default_role_needs_no_confirmation() {
    let (srv, s, _) = owner_setup("Set Co");
    assert_accepts(
        &srv,
        &s,
        "PATCH",
        "/v1/auth/dashboard/tenants/set-co/settings/roles",
        json!({"default_role": "reader"}),
    );
    assert_accepts(
        &srv,
        &s,
        "PATCH",
        "/v1/auth/dashboard/tenants/set-co/settings/anonymous",
        json!({"anonymous_signins_enabled": true}),
    );
}

#[test]
fn the_passkey_domain_follows_its_pattern() {
    let (srv, s, _) = owner_setup("Set Co");
    let path = "/v1/auth/dashboard/tenants/set-co/settings/passkey-domain";
    assert!(srv.dash("GET", path, &s, None).json::<Value>().unwrap()["passkey_rp_id"].is_null());
    assert_eq!(
        assert_accepts(
            &srv,
            &s,
            "PUT",
            path,
            json!({"passkey_rp_id": "login.example.com"})
        )["passkey_rp_id"],
        "login.example.com"
    );
    let bad = |b: Value| assert_rejects(&srv, &s, "PUT", path, b, "passkey_rp_id");
    bad(json!({"passkey_rp_id": "Login.Example.com"}));
    bad(json!({"passkey_rp_id": ""}));
    bad(json!({"passkey_rp_id": "a".repeat(254)}));
    bad(json!({"passkey_rp_id": "exa_mple.com"}));
    bad(json!({}));
    assert_accepts(
        &srv,
        &s,
        "PUT",
        path,
        json!({"passkey_rp_id": "a".repeat(253)}),
    );
    assert!(
        assert_accepts(&srv, &s, "PUT", path, json!({"passkey_rp_id": null}))["passkey_rp_id"]
            .is_null()
    );
}

fn anchor(resolution: Value) -> Value {
    json!({
        "issuer": "https://issuer.example",
        "allowedAlgs": ["ES256"],
        "allowedFormats": ["dc+sd-jwt"],
        "keyResolution": resolution,
    })
}

#[test]
fn wallet_configuration_enforces_2_10_and_fills_defaults() {
    let (srv, s, _) = owner_setup("Set Co");
    let path = "/v1/auth/dashboard/tenants/set-co/settings/eudi";
    let root = {
        use base64::{engine::general_purpose::STANDARD, Engine};
        let chain = tessera_eudi::x509::dev_chain("Issuer", "issuer.example", 30).unwrap();
        STANDARD.encode(chain.root_der)
    };
    let initial: Value = srv.dash("GET", path, &s, None).json().unwrap();
    assert_eq!(initial["enabled"], false);
    assert_eq!(initial["on_status_unavailable"], "accept_with_cache");
    assert_eq!(initial["max_status_staleness_seconds"], 3600);
    let out = assert_accepts(
        &srv,
        &s,
        "PUT",
        path,
        json!({
            "enabled": true,
            "requested_attributes": ["given_name", "age_over_18"],
            "trust_anchors": [
                anchor(json!({"method": "jwks_uri", "jwksUri": "https://issuer.example/jwks"})),
                anchor(json!({"method": "did_web", "did": "did:web:issuer.example"})),
                anchor(json!({"method": "x5c", "x5cRoots": [root.clone()]})),
            ],
        }),
    );
    assert_eq!(out["enabled"], true);
    assert_eq!(out["trust_anchors"][0]["maxAssuranceLevel"], "high");
    assert_eq!(
        out["trust_anchors"][1]["keyResolution"]["method"],
        "did_web"
    );
    assert_eq!(
        out["trust_anchors"][2]["keyResolution"]["x5cRoots"],
        json!([root])
    );
    assert!(out["required_assurance_floor"].is_null());
    assert!(out["purpose"].is_null());
    assert_eq!(out["on_status_unavailable"], "accept_with_cache");
    assert_eq!(out["max_status_staleness_seconds"], 3600);
    assert!(out["updated_at"].is_string());

    let base = || json!({"enabled": true, "requested_attributes": ["email"]});
    let with = |k: &str, v: Value| {
        let mut b = base();
        b[k] = v;
        b
    };
    let bad = |b: Value, f: &str| assert_rejects(&srv, &s, "PUT", path, b, f);
    bad(json!({"requested_attributes": ["email"]}), "enabled");
    bad(json!({"enabled": true}), "requested_attributes");
    bad(
        with("requested_attributes", json!([])),
        "requested_attributes",
    );
    bad(
        with("requested_attributes", json!(["shoe_size"])),
        "requested_attributes[0]",
    );
    bad(with("purpose", json!("p".repeat(301))), "purpose");
    assert_accepts(
        &srv,
        &s,
        "PUT",
        path,
        with("purpose", json!("p".repeat(300))),
    );
    for (v, good) in [(-1, false), (0, true), (86400, true), (86401, false)] {
        let b = with("max_status_staleness_seconds", json!(v));
        if good {
            assert_accepts(&srv, &s, "PUT", path, b);
        } else {
            bad(b, "max_status_staleness_seconds");
        }
    }
    bad(
        with("on_status_unavailable", json!("ignore")),
        "on_status_unavailable",
    );
    assert_eq!(
        assert_accepts(
            &srv,
            &s,
            "PUT",
            path,
            with("on_status_unavailable", json!("reject"))
        )["on_status_unavailable"],
        "reject"
    );
    bad(
        with(
            "required_assurance_floor",
            json!({"kind": "loa", "value": "x"}),
        ),
        "required_assurance_floor.kind",
    );
    bad(
        with(
            "required_assurance_floor",
            json!({"kind": "aal", "value": ""}),
        ),
        "required_assurance_floor.value",
    );
    assert_eq!(
        assert_accepts(
            &srv,
            &s,
            "PUT",
            path,
            with(
                "required_assurance_floor",
                json!({"kind": "eidas", "value": "substantial"})
            )
        )["required_assurance_floor"],
        json!({"kind": "eidas", "value": "substantial"})
    );
    bad(with("surprise", json!(1)), "surprise");
    let a = |r: Value| with("trust_anchors", json!([anchor(r)]));
    bad(
        a(json!({"method": "did_web", "did": "did:key:z6Mk"})),
        "trust_anchors[0].keyResolution.did",
    );
    bad(
        a(json!({"method": "jwks_uri", "jwksUri": "not a uri"})),
        "trust_anchors[0].keyResolution.jwksUri",
    );
    bad(
        a(json!({"method": "x5c", "x5cRoots": []})),
        "trust_anchors[0].keyResolution.x5cRoots",
    );
    // A root that is no certificate would refuse every credential later: refused now.
    bad(
        a(json!({"method": "x5c", "x5cRoots": ["MIIB..."]})),
        "trust_anchors[0].keyResolution.x5cRoots",
    );
    bad(
        a(json!({"method": "dns"})),
        "trust_anchors[0].keyResolution.method",
    );
    bad(
        a(json!({"method": "did_web", "did": "did:web:x", "jwksUri": "https://x"})),
        "trust_anchors[0].keyResolution.jwksUri",
    );
    let mut t = anchor(json!({"method": "did_web", "did": "did:web:x"}));
    t["allowedAlgs"] = json!([]);
    bad(
        with("trust_anchors", json!([t.clone()])),
        "trust_anchors[0].allowedAlgs",
    );
    t["allowedAlgs"] = json!(["RS256"]);
    bad(
        with("trust_anchors", json!([t.clone()])),
        "trust_anchors[0].allowedAlgs[0]",
    );
    t["allowedAlgs"] = json!(["EdDSA"]);
    t["allowedFormats"] = json!(["jwt_vc"]);
    bad(
        with("trust_anchors", json!([t.clone()])),
        "trust_anchors[0].allowedFormats[0]",
    );
    t["allowedFormats"] = json!(["mso_mdoc"]);
    t["memberState"] = json!("POL");
    bad(
        with("trust_anchors", json!([t.clone()])),
        "trust_anchors[0].memberState",
    );
    t["memberState"] = json!("PL");
    t["maxAssuranceLevel"] = json!("extreme");
    bad(
        with("trust_anchors", json!([t.clone()])),
        "trust_anchors[0].maxAssuranceLevel",
    );
    t["maxAssuranceLevel"] = json!("substantial");
    t["issuer"] = json!("");
    bad(
        with("trust_anchors", json!([t.clone()])),
        "trust_anchors[0].issuer",
    );
    t["issuer"] = json!("https://pl.example");
    t["displayName"] = json!({"pl": "Wydawca", "en": "Issuer"});
    let out = assert_accepts(&srv, &s, "PUT", path, with("trust_anchors", json!([t])));
    assert_eq!(out["trust_anchors"][0]["memberState"], "PL");
    assert_eq!(out["trust_anchors"][0]["displayName"]["pl"], "Wydawca");
}

#[test]
fn wallet_age_configuration() {
    let (srv, s, _) = owner_setup("Set Co");
    let path = "/v1/auth/dashboard/tenants/set-co/settings/eudi-age";
    let initial: Value = srv.dash("GET", path, &s, None).json().unwrap();
    assert_eq!(initial["age_verification_enabled"], false);
    assert_eq!(initial["supported_member_states"], json!([]));
    assert_eq!(initial["threshold_supported"], false);
    let out = assert_accepts(
        &srv,
        &s,
        "PUT",
        path,
        json!({"age_verification_enabled": true, "supported_member_states": ["PL", "IE"]}),
    );
    assert_eq!(out["supported_member_states"], json!(["PL", "IE"]));
    assert_eq!(out["threshold_supported"], true);
    let bad = |b: Value, f: &str| assert_rejects(&srv, &s, "PUT", path, b, f);
    bad(
        json!({"supported_member_states": ["PL"]}),
        "age_verification_enabled",
    );
    bad(
        json!({"age_verification_enabled": true, "supported_member_states": ["ES"]}),
        "supported_member_states[0]",
    );
    bad(
        json!({"age_verification_enabled": "yes"}),
        "age_verification_enabled",
    );
    bad(
        json!({"age_verification_enabled": true, "other": 1}),
        "other",
    );
}

#[test]
fn settings_survive_sigkill() {
    let (mut srv, s, _) = owner_setup("Set Co");
    srv.reauth(&s, PASSWORD);
    assert_accepts(
        &srv,
        &s,
        "PATCH",
        SEC,
        json!({"mfa_policy": "required", "byok_provider_auth_token": "k".repeat(40)}),
    );
    assert_accepts(
        &srv,
        &s,
        "PUT",
        "/v1/auth/dashboard/tenants/set-co/settings/email-domains",
        json!({"blocklist": ["spam.example"]}),
    );
    let before: Value = srv.dash("GET", SEC, &s, None).json().unwrap();
    srv.kill();
    srv.restart();
    // Sessions are durable too.
    let after: Value = srv.dash("GET", SEC, &s, None).json().unwrap();
    assert_eq!(before, after);
    assert_eq!(after["byok_provider_auth_token_set"], true);
    let domains: Value = srv
        .dash(
            "GET",
            "/v1/auth/dashboard/tenants/set-co/settings/email-domains",
            &s,
            None,
        )
        .json()
        .unwrap();
    assert_eq!(domains["blocklist"], json!(["spam.example"]));
}
