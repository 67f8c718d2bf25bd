//! Single sign-on per organization through the real server: the admins' connection routes
//! (validation, secrets never answered, the management key's copies, the limit, the SAML
//! service provider's metadata), home-realm discovery, and sign-ins through a local OpenID
//! provider: the pre-hijack rule (an account someone registered at the address before its
//! owner's organization signed them in keeps no way in), erasure reaching the links, the
//! export listing them, and ID tokens of another issuer or with another nonce refused. The
//! SAML and OpenID protocol walks against pysaml2 and oidc-provider are the interop suite's
//! (`interop/test/sso-*.test.mjs`).

use serde_json::{json, Value};

use crate::{
    organizations::{create_org, key_of, DnsStub},
    social_signin::{param, Browser, Faults, Stub, OIDC_SECRET},
    support::{user_setup, UserApi, USER_PASSWORD},
};

/// A PEM certificate in the shape an IdP publishes (its contents are not used until a
/// response is checked).
const IDP_CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUfake0000000000000000000000000wCgYIKoZIzj0EAwIw\n-----END CERTIFICATE-----\n";

const APP: &str = "https://app.example/sso-done";

fn saml_body(name: &str) -> Value {
    json!({
        "name": name, "type": "saml",
        "saml": {
            "idp_entity_id": "https://idp.contoso.example",
            "idp_sso_url": "https://idp.contoso.example/sso",
            "idp_certificates": [IDP_CERT],
        },
    })
}

#[test]
fn connections_are_managed_by_admins_and_never_answer_their_secrets() {
    let (_smtp, srv, api, s) = user_setup("Connections", &[]);
    let admin = key_of(&srv, &s, &api.slug, "admin");
    let org = create_org(&admin, "Contoso");
    let other = create_org(&admin, "Fabrikam");
    let path = format!("/v1/management/organizations/{org}/connections");

    // What is refused, field by field.
    for (body, field) in [
        (json!({"name": "x"}), "type"),
        (json!({"name": "", "type": "saml", "saml": {}}), "name"),
        (
            json!({"name": "x", "type": "saml", "saml": {"idp_entity_id": "e"}}),
            "saml.idp_sso_url",
        ),
        (
            json!({"name": "x", "type": "oidc", "oidc": {"issuer": "http://10.0.0.1", "client_id": "c", "client_secret": "s"}}),
            "oidc.issuer",
        ),
        (
            json!({"name": "x", "type": "saml", "default_role": "Not A Role!", "saml": {}}),
            "default_role",
        ),
    ] {
        let r = admin.post(&path, Some(&body));
        r.expect_error(400, "validation/invalid_request");
        assert!(
            r.body["error"]["details"]["fields"].get(field).is_some(),
            "{field}: {}",
            r.body
        );
    }
    let mut unsolicited = saml_body("x");
    unsolicited["saml"]["allow_idp_initiated"] = json!(true);
    admin
        .post(&path, Some(&unsolicited))
        .expect_error(400, "validation/invalid_request");
    // Unsolicited sign-ins go only to one of the tenant's URLs.
    unsolicited["saml"]["idp_initiated_redirect_uri"] = json!("https://evil.example/take");
    let r = admin.post(&path, Some(&unsolicited));
    r.expect_error(400, "validation/invalid_request");
    assert!(
        r.body["error"]["details"]["fields"]
            .get("saml.idp_initiated_redirect_uri")
            .is_some(),
        "{}",
        r.body
    );
    let mut unknown_role = saml_body("x");
    unknown_role["default_role"] = json!("auditor");
    admin
        .post(&path, Some(&unknown_role))
        .expect_error(400, "organization/unknown_role");

    // Created: the service provider's side, never its key.
    let c = admin
        .post(&path, Some(&saml_body("Contoso IdP")))
        .expect(201)
        .clone();
    let id = c["id"].as_str().unwrap().to_owned();
    let text = c.to_string();
    assert!(!text.contains("PRIVATE KEY"), "{text}");
    assert_eq!(c["type"], "saml");
    assert_eq!(c["jit"], true);
    assert_eq!(c["default_role"], "member");
    let base = srv.url(&format!("/sso/{}/{id}", api.slug));
    assert_eq!(c["saml"]["sp"]["acs_url"], format!("{base}/acs"));
    assert_eq!(c["saml"]["sp"]["entity_id"], format!("{base}/metadata"));
    assert_eq!(c["start_url"], format!("{base}/start"));
    let cert = c["saml"]["sp"]["certificate"].as_str().unwrap().to_owned();
    assert!(cert.contains("BEGIN CERTIFICATE"), "{cert}");

    // Its published metadata names the ACS and the certificate.
    let md = reqwest::blocking::get(format!("{base}/metadata")).unwrap();
    assert_eq!(md.status(), 200);
    let xml = md.text().unwrap();
    assert!(xml.contains(&format!("{base}/acs")), "{xml}");
    let body: String = cert.lines().filter(|l| !l.starts_with("-----")).collect();
    assert!(xml.contains(&body[..40]), "{xml}");

    // Changed: the key stays; the protocol cannot change.
    let one = format!("{path}/{id}");
    let changed = admin
        .patch(&one, Some(&json!({"name": "Renamed", "enabled": false})))
        .expect(200)
        .clone();
    assert_eq!(changed["name"], "Renamed");
    assert_eq!(changed["enabled"], false);
    assert_eq!(changed["saml"]["sp"]["certificate"], cert.as_str());
    admin
        .patch(&one, Some(&json!({"type": "oidc"})))
        .expect_error(400, "validation/invalid_request");
    // One name of the mapping changes; the others stay.
    admin
        .patch(&one, Some(&json!({"attribute_mapping": {"email": "mail"}})))
        .expect(200);
    let mapped = admin
        .patch(
            &one,
            Some(&json!({"attribute_mapping": {"groups": "memberOf"}})),
        )
        .expect(200)["attribute_mapping"]
        .clone();
    assert_eq!(mapped["email"], "mail", "{mapped}");
    assert_eq!(mapped["groups"], "memberOf", "{mapped}");
    assert_eq!(mapped["given_name"], "given_name", "{mapped}");
    // A role a connection gives cannot be deleted.
    admin
        .put(
            "/v1/management/organization-roles/auditor",
            Some(&json!({"permissions": ["audit:read"]})),
        )
        .expect(200);
    admin
        .patch(&one, Some(&json!({"default_role": "auditor"})))
        .expect(200);
    admin
        .delete("/v1/management/organization-roles/auditor", None)
        .expect_error(409, "organization/role_in_use");
    assert_eq!(
        admin.get(&path, None).expect(200)["data"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // Another organization's path does not reach it.
    admin
        .get(
            &format!("/v1/management/organizations/{other}/connections/{id}"),
            None,
        )
        .expect_error(404, "resource/not_found");
    // A disabled connection starts nothing.
    let r = reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(format!("{base}/start?redirect_uri=https://app.example/"))
        .send()
        .unwrap();
    assert_eq!(r.status(), 400);

    // A read-only key reads, and writes nothing.
    let viewer = key_of(&srv, &s, &api.slug, "viewer");
    viewer.get(&one, None).expect(200);
    assert_eq!(viewer.post(&path, Some(&saml_body("v"))).status, 403);

    // At most 10 an organization.
    for n in 1..10 {
        admin
            .post(&path, Some(&saml_body(&format!("c{n}"))))
            .expect(201);
    }
    admin
        .post(&path, Some(&saml_body("c11")))
        .expect_error(409, "organization/limit_reached");

    admin.delete(&one, None).expect(204);
    admin
        .get(&one, None)
        .expect_error(404, "resource/not_found");
}

/// A tenant whose organization Contoso proved `contoso.example` and has an OpenID
/// connection to `op`; answers the connection's start URL.
fn federated(
    srv: &crate::support::TestServer,
    api: &UserApi,
    s: &crate::support::Session,
    dns: &DnsStub,
    op: &Stub,
) -> (String, String) {
    let admin = key_of(srv, s, &api.slug, "admin");
    let r = srv.dash(
        "PUT",
        &format!("/v1/auth/dashboard/tenants/{}/settings/urls", api.slug),
        s,
        Some(&json!({"site_url": APP, "redirect_urls": [APP]})),
    );
    assert_eq!(r.status(), 200);
    let org = create_org(&admin, "Contoso");
    let domains = format!("/v1/management/organizations/{org}/domains");
    let claim = admin
        .post(&domains, Some(&json!({"domain": "contoso.example"})))
        .expect(201)
        .clone();
    dns.publish(
        claim["txt_name"].as_str().unwrap(),
        claim["txt_value"].as_str().unwrap(),
    );
    admin
        .post(&format!("{domains}/contoso.example/verify"), None)
        .expect(200);
    let c = admin
        .post(
            &format!("/v1/management/organizations/{org}/connections"),
            Some(&json!({
                "name": "Contoso OP", "type": "oidc",
                "oidc": {"issuer": op.base, "client_id": "tessera-sso", "client_secret": OIDC_SECRET},
            })),
        )
        .expect(201)
        .clone();
    (org, c["start_url"].as_str().unwrap().to_owned())
}

/// The id of the organization's one connection.
fn admin_id(
    srv: &crate::support::TestServer,
    s: &crate::support::Session,
    api: &UserApi,
    connections: &str,
) -> String {
    let list = key_of(srv, s, &api.slug, "viewer").get(connections, None);
    list.expect(200)["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Out to the provider and back: the URL the app is sent to.
fn sign_in(start: &str) -> String {
    let mut b = Browser::new();
    let (st, at, body) = b.get(&format!("{start}?redirect_uri={APP}"), None);
    assert_eq!(st, 302, "{body}");
    let (st, callback, body) = b.get(&at, None);
    assert_eq!(st, 302, "{body}");
    let (st, back, body) = b.get(&callback, None);
    assert_eq!(st, 302, "{body}");
    back
}

/// Trades the sign-in's code: the token pair's answer.
fn session(api: &UserApi, back: &str) -> Value {
    let code = param(back, "code").unwrap_or_else(|| panic!("no code: {back}"));
    api.post_as("/v1/auth/sso/session", None, &json!({ "code": code }))
        .expect(200)
        .clone()
}

#[test]
fn an_account_registered_before_its_owner_signs_in_by_sso_keeps_no_way_in() {
    let dns = DnsStub::start();
    let op = Stub::start();
    let ns = format!("[\"{}\"]", dns.addr);
    let (smtp, srv, api, s) = user_setup(
        "Pre-hijack SSO",
        &[
            ("TESSERA__DNS__NAMESERVERS", ns.as_str()),
            ("TESSERA__SSO__ALLOW_PRIVATE_TARGETS", "true"),
        ],
    );
    // The attacker registers the victim's address first and keeps the password.
    api.register("victim@contoso.example", USER_PASSWORD)
        .expect(200);
    let (org, start) = federated(&srv, &api, &s, &dns, &op);

    // Discovery routes the proven domain only.
    let found = api
        .post_as(
            "/v1/auth/sso/discover",
            None,
            &json!({"email": "x@contoso.example"}),
        )
        .expect(200)
        .clone();
    assert_eq!(found["sso"], true);
    assert_eq!(found["organization_id"], org.as_str());
    let none = api
        .post_as(
            "/v1/auth/sso/discover",
            None,
            &json!({"email": "x@unproven.example"}),
        )
        .expect(200)
        .clone();
    assert_eq!(none["sso"], false);

    op.next("victim-sub", Some("victim@contoso.example"), true);
    let login = session(&api, &sign_in(&start));
    let victim = login["user"]["id"].as_str().unwrap().to_owned();
    assert_eq!(login["user"]["email_verified"], true);
    // Same account (linked), recovered: the attacker's password is gone.
    api.login("victim@contoso.example", USER_PASSWORD)
        .expect_error(401, "auth/invalid_credentials");
    // The secret stays with its issuer: pointing the connection elsewhere needs it again.
    let elsewhere = Stub::start();
    let connections = format!("/v1/management/organizations/{org}/connections");
    let id = admin_id(&srv, &s, &api, &connections);
    let r = key_of(&srv, &s, &api.slug, "admin").patch(
        &format!("{connections}/{id}"),
        Some(&json!({"oidc": {"issuer": elsewhere.base}})),
    );
    r.expect_error(400, "validation/invalid_request");
    assert!(
        r.body["error"]["details"]["fields"]
            .get("oidc.client_secret")
            .is_some(),
        "{}",
        r.body
    );

    // Another account at the provider with the same address (it moved to someone else
    // there) is not a way into this one.
    op.next("someone-else", Some("victim@contoso.example"), true);
    let back = sign_in(&start);
    assert_eq!(
        param(&back, "error").as_deref(),
        Some("email_exists"),
        "{back}"
    );
    // An exchange code is single use; garbage is refused alike.
    api.post_as("/v1/auth/sso/session", None, &json!({"code": "sso_nope"}))
        .expect_error(401, "auth/invalid_token");

    // The export lists the link (past a step-up by an e-mailed code: the account has no
    // password).
    let access = login["access_token"].as_str().unwrap();
    api.post_as(
        "/v1/auth/step-up/email-otp/initiate",
        Some(access),
        &json!({}),
    )
    .expect(202);
    let mail = smtp.wait_for(&api.slug, "step_up_email_otp", "victim@contoso.example", 1);
    let code = crate::support::six_digit_code(&mail.text).expect("code");
    let r = api.post_as(
        "/v1/auth/step-up/email-otp/verify",
        Some(access),
        &json!({ "otp": code }),
    );
    let token = r.expect(200)["step_up_token"].as_str().unwrap().to_owned();
    let export = api.send_with(
        "GET",
        "/v1/users/me/export",
        Some(access),
        None,
        &[(crate::support::STEP_UP_HEADER, &token)],
    );
    let links = export.expect(200)["sso_links"].clone();
    assert_eq!(links.as_array().map(Vec::len), Some(1), "{links}");
    assert_eq!(links[0]["subject"], "victim-sub");

    // Erasure reaches the link: the next sign-in is a new account.
    let admin = key_of(&srv, &s, &api.slug, "admin");
    admin
        .delete(&format!("/v1/management/users/{victim}"), None)
        .expect(204);
    op.next("victim-sub", Some("victim@contoso.example"), true);
    let again = session(&api, &sign_in(&start));
    assert_ne!(again["user"]["id"].as_str().unwrap(), victim);
}

/// An ID token the connection's provider signed with its own key is still refused when its
/// `iss` is not the connection's issuer, or its `nonce` not the flow's: the browser is sent
/// back to the app with `error=provider_error` and no code, and no user or membership is
/// made. The same sign-in with a right ID token then succeeds, so the refusals were the
/// `iss` and the `nonce`.
#[test]
fn an_id_token_of_another_issuer_or_with_another_nonce_signs_nobody_in() {
    let dns = DnsStub::start();
    let op = Stub::start();
    let ns = format!("[\"{}\"]", dns.addr);
    let (_smtp, srv, api, s) = user_setup(
        "Refused SSO",
        &[
            ("TESSERA__DNS__NAMESERVERS", ns.as_str()),
            ("TESSERA__SSO__ALLOW_PRIVATE_TARGETS", "true"),
        ],
    );
    let (org, start) = federated(&srv, &api, &s, &dns, &op);
    let viewer = key_of(&srv, &s, &api.slug, "viewer");
    let members = format!("/v1/management/organizations/{org}/members");

    for (what, faults) in [
        (
            "iss",
            Faults {
                wrong_issuer: true,
                ..Faults::default()
            },
        ),
        (
            "nonce",
            Faults {
                wrong_nonce: true,
                ..Faults::default()
            },
        ),
    ] {
        op.faults(faults);
        op.next("ada-sub", Some("ada@contoso.example"), true);
        let back = sign_in(&start);
        assert_eq!(back, format!("{APP}?error=provider_error"), "{what}");
        assert!(param(&back, "code").is_none(), "{what}: {back}");
        let users = viewer.get("/v1/management/users", None);
        assert_eq!(users.expect(200)["data"], json!([]), "{what}");
        let listed = viewer.get(&members, None);
        assert_eq!(listed.expect(200)["data"], json!([]), "{what}");
    }

    // Right ID tokens again: the same person signs in, a member of the organization.
    op.faults(Faults::default());
    op.next("ada-sub", Some("ada@contoso.example"), true);
    let login = session(&api, &sign_in(&start));
    assert_eq!(login["user"]["email"], "ada@contoso.example");
    let id = login["user"]["id"].as_str().unwrap().to_owned();
    let users = viewer.get("/v1/management/users", None);
    assert_eq!(users.expect(200)["data"][0]["id"], id.as_str());
    let listed = viewer.get(&members, None).expect(200)["data"].clone();
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["user_id"], id.as_str(), "{listed}");
}
