//! The messages we make and read besides responses: the AuthnRequest redirect (inflated
//! back and read), our SP metadata, pysaml2's IdP metadata, and a fresh SP key pair (its
//! use by an IdP end to end is the interop self-check's, examples/idp_selfcheck.rs).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use base64::Engine;
use std::io::Read;
use std::path::Path;
use tessera_saml::{authn_request, parse_idp_metadata, sp_keypair, sp_metadata, SpConfig};
use time::macros::datetime;

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn sp() -> SpConfig {
    SpConfig {
        entity_id: "https://sp.example/saml".into(),
        acs_url: "https://sp.example/saml/acs?tenant=a&b=1".into(),
        idp_entity_id: "https://idp.example/metadata".into(),
        idp_certs: vec![fixture("idp.cert.pem")],
        decryption_key_pem: None,
        skew: time::Duration::seconds(120),
    }
}

fn attr<'a>(doc: &'a uppsala::Document<'_>, node: uppsala::NodeId, name: &str) -> &'a str {
    doc.get_attribute(node, name).unwrap()
}

#[test]
fn authn_request_round_trip() {
    let now = datetime!(2026-03-01 12:34:56.789 UTC);
    let url = authn_request(
        &sp(),
        "https://idp.example/sso/redirect?x=1",
        "id-abc_123",
        "relay/state?&=",
        now,
    )
    .unwrap();
    let (base, query) = url.split_once("?x=1&").unwrap();
    assert_eq!(base, "https://idp.example/sso/redirect");
    let params: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    assert_eq!(params[0].0, "SAMLRequest");
    assert_eq!(
        params[1],
        ("RelayState".to_owned(), "relay/state?&=".to_owned())
    );
    let deflated = base64::engine::general_purpose::STANDARD
        .decode(&params[0].1)
        .unwrap();
    let mut xml = String::new();
    flate2::read::DeflateDecoder::new(deflated.as_slice())
        .read_to_string(&mut xml)
        .unwrap();
    let doc = uppsala::parse(&xml).unwrap();
    let root = doc.document_element().unwrap();
    let e = doc.element(root).unwrap();
    assert!(e.matches_name_ns("urn:oasis:names:tc:SAML:2.0:protocol", "AuthnRequest"));
    assert_eq!(attr(&doc, root, "ID"), "id-abc_123");
    assert_eq!(attr(&doc, root, "Version"), "2.0");
    assert_eq!(attr(&doc, root, "IssueInstant"), "2026-03-01T12:34:56Z");
    assert_eq!(
        attr(&doc, root, "Destination"),
        "https://idp.example/sso/redirect?x=1"
    );
    assert_eq!(
        attr(&doc, root, "AssertionConsumerServiceURL"),
        "https://sp.example/saml/acs?tenant=a&b=1"
    );
    assert_eq!(
        attr(&doc, root, "ProtocolBinding"),
        "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"
    );
    let issuer = doc
        .first_child_element_by_name_ns(root, "urn:oasis:names:tc:SAML:2.0:assertion", "Issuer")
        .unwrap();
    assert_eq!(doc.element_text(issuer), Some("https://sp.example/saml"));
    let policy = doc
        .first_child_element_by_name_ns(
            root,
            "urn:oasis:names:tc:SAML:2.0:protocol",
            "NameIDPolicy",
        )
        .unwrap();
    assert_eq!(attr(&doc, policy, "AllowCreate"), "true");
}

#[test]
fn authn_request_refuses_an_id_that_is_no_xml_id() {
    let now = datetime!(2026-03-01 12:00 UTC);
    for id in ["", "1abc", "a b", "a\"b"] {
        let e = authn_request(&sp(), "https://idp.example/sso", id, "", now).unwrap_err();
        assert_eq!(e.code(), "saml/config", "{id:?}");
    }
}

#[test]
fn sp_metadata_says_what_we_accept() {
    let cert = fixture("sp.cert.pem");
    let xml = sp_metadata(&sp(), Some(&cert));
    let doc = uppsala::parse(&xml).unwrap();
    let md = "urn:oasis:names:tc:SAML:2.0:metadata";
    let root = doc.document_element().unwrap();
    assert!(doc
        .element(root)
        .unwrap()
        .matches_name_ns(md, "EntityDescriptor"));
    assert_eq!(attr(&doc, root, "entityID"), "https://sp.example/saml");
    let sso = doc
        .first_child_element_by_name_ns(root, md, "SPSSODescriptor")
        .unwrap();
    assert_eq!(attr(&doc, sso, "AuthnRequestsSigned"), "false");
    assert_eq!(attr(&doc, sso, "WantAssertionsSigned"), "true");
    let acs = doc
        .first_child_element_by_name_ns(sso, md, "AssertionConsumerService")
        .unwrap();
    assert_eq!(
        attr(&doc, acs, "Binding"),
        "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"
    );
    assert_eq!(
        attr(&doc, acs, "Location"),
        "https://sp.example/saml/acs?tenant=a&b=1"
    );
    let key = doc
        .first_child_element_by_name_ns(sso, md, "KeyDescriptor")
        .unwrap();
    assert_eq!(attr(&doc, key, "use"), "encryption");
    let body: String = cert.lines().filter(|l| !l.contains("-----")).collect();
    let certs = doc.get_elements_by_tag_name("X509Certificate");
    assert_eq!(certs.len(), 1);
    assert_eq!(doc.element_text(certs[0]), Some(body.as_str()));

    let without = sp_metadata(&sp(), None);
    assert!(!without.contains("KeyDescriptor"));
    // Not an IdP's metadata.
    assert_eq!(
        parse_idp_metadata(&without).unwrap_err().code(),
        "saml/malformed"
    );
}

#[test]
fn pysaml2_idp_metadata_is_read() {
    let md = parse_idp_metadata(&fixture("idp-metadata.xml")).unwrap();
    assert_eq!(md.entity_id, "https://idp.example/metadata");
    assert_eq!(md.sso_redirect_url, "https://idp.example/sso/redirect");
    let body: String = fixture("idp.cert.pem")
        .lines()
        .filter(|l| !l.contains("-----"))
        .collect();
    assert_eq!(md.certs, vec![body]);
}

#[test]
fn idp_metadata_takes_signing_keys_only() {
    let cert = |c: &str| {
        format!(
            r#"<ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:X509Data><ds:X509Certificate>{c}</ds:X509Certificate></ds:X509Data></ds:KeyInfo>"#
        )
    };
    let xml = format!(
        r#"<EntitiesDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata"><EntityDescriptor entityID="https://idp.example">
        <IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
        <KeyDescriptor use="signing">{}</KeyDescriptor>
        <KeyDescriptor use="encryption">{}</KeyDescriptor>
        <KeyDescriptor>{}</KeyDescriptor>
        <SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="https://idp.example/post"/>
        <SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.example/redirect"/>
        </IDPSSODescriptor></EntityDescriptor></EntitiesDescriptor>"#,
        cert("QUJD\n REVG"),
        cert("ZW5j"),
        cert("R0hJ"),
    );
    let md = parse_idp_metadata(&xml).unwrap();
    assert_eq!(md.entity_id, "https://idp.example");
    assert_eq!(md.sso_redirect_url, "https://idp.example/redirect");
    assert_eq!(md.certs, vec!["QUJDREVG".to_owned(), "R0hJ".to_owned()]);
}

#[test]
fn sp_keypair_makes_a_usable_key_and_certificate() {
    let (key, cert) = sp_keypair("tessera sp").unwrap();
    assert!(key.starts_with("-----BEGIN PRIVATE KEY-----"), "{key}");
    assert!(cert.starts_with("-----BEGIN CERTIFICATE-----"), "{cert}");
    // The certificate goes into our metadata as one base64 body.
    let xml = sp_metadata(&sp(), Some(&cert));
    let body: String = cert.lines().filter(|l| !l.contains("-----")).collect();
    assert!(xml.contains(&body));
    let der = base64::engine::general_purpose::STANDARD
        .decode(&body)
        .unwrap();
    assert!(der.len() > 600, "an RSA 3072 certificate");
    // The key loads as a decryption key (the fixture was encrypted to another key).
    let mut config = sp();
    config.acs_url = "https://sp.example/saml/acs".into();
    config.decryption_key_pem = Some(key);
    let response = base64::engine::general_purpose::STANDARD.encode(fixture("encrypted.xml"));
    let now = time::OffsetDateTime::parse(
        fixture("now.txt").trim(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    let e = tessera_saml::verify_response(&response, &config, Some("id-4f0c5e7a-request"), now)
        .unwrap_err();
    assert_eq!(e.code(), "saml/decryption");
}
