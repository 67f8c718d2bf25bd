//! `verify_response` against responses pysaml2 made (tests/fixtures, by make.py through the
//! interop suite's IdP): the accepted shapes and every refusal, each by its code.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use base64::Engine;
use std::path::Path;
use tessera_saml::{verify_response, Assertion, SamlError, SpConfig};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

const REQUEST_ID: &str = "id-4f0c5e7a-request";

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn now() -> OffsetDateTime {
    OffsetDateTime::parse(fixture("now.txt").trim(), &Rfc3339).unwrap()
}

fn sp() -> SpConfig {
    SpConfig {
        entity_id: "https://sp.example/saml".into(),
        acs_url: "https://sp.example/saml/acs".into(),
        idp_entity_id: "https://idp.example/metadata".into(),
        idp_certs: vec![fixture("idp.cert.pem")],
        decryption_key_pem: Some(fixture("sp.key.pem")),
        skew: time::Duration::seconds(120),
    }
}

fn b64(xml: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(xml)
}

fn verify_xml(xml: &str, expected: Option<&str>) -> Result<Assertion, SamlError> {
    verify_response(&b64(xml), &sp(), expected, now())
}

fn verify(name: &str, expected: Option<&str>) -> Result<Assertion, SamlError> {
    verify_xml(&fixture(&format!("{name}.xml")), expected)
}

fn code(result: Result<Assertion, SamlError>) -> &'static str {
    match result {
        Ok(a) => panic!("accepted: {a:?}"),
        Err(e) => {
            eprintln!("{e}");
            e.code()
        }
    }
}

fn check_alice(a: &Assertion, in_response_to: Option<&str>) {
    assert_eq!(a.name_id, "alice@corp.example");
    assert_eq!(
        a.name_id_format.as_deref(),
        Some("urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress")
    );
    assert_eq!(a.issuer, "https://idp.example/metadata");
    assert_eq!(a.in_response_to.as_deref(), in_response_to);
    assert!(a.id.starts_with("id-"), "{}", a.id);
    assert!(a.session_index.is_some());
    assert_eq!(a.attributes["email"], vec!["alice@corp.example"]);
    assert_eq!(
        a.attributes["urn:oid:1.2.840.113549.1.9.1.1"],
        vec!["alice@corp.example"]
    );
    assert_eq!(a.attributes["given_name"], vec!["Alice"]);
    assert_eq!(a.attributes["family_name"], vec!["Example"]);
    assert_eq!(a.attributes["groups"], vec!["staff", "admins"]);
    // pysaml2's lifetime is five minutes from issue.
    let left = a.not_on_or_after - now();
    assert!(
        left > time::Duration::minutes(4) && left <= time::Duration::minutes(6),
        "{left}"
    );
}

#[test]
fn signed_response_is_accepted() {
    check_alice(
        &verify("signed-response", Some(REQUEST_ID)).unwrap(),
        Some(REQUEST_ID),
    );
}

#[test]
fn signed_assertion_is_accepted() {
    check_alice(
        &verify("signed-assertion", Some(REQUEST_ID)).unwrap(),
        Some(REQUEST_ID),
    );
}

#[test]
fn signed_response_and_assertion_is_accepted() {
    check_alice(
        &verify("signed-both", Some(REQUEST_ID)).unwrap(),
        Some(REQUEST_ID),
    );
}

#[test]
fn encrypted_assertion_is_decrypted() {
    let raw = fixture("encrypted.xml");
    assert!(raw.contains("EncryptedAssertion") && !raw.contains("alice@corp.example"));
    assert!(raw.contains("aes256-cbc") && raw.contains("rsa-oaep-mgf1p"));
    check_alice(
        &verify("encrypted", Some(REQUEST_ID)).unwrap(),
        Some(REQUEST_ID),
    );
    check_alice(
        &verify("encrypted-signed-response", Some(REQUEST_ID)).unwrap(),
        Some(REQUEST_ID),
    );
}

#[test]
fn encrypted_assertion_needs_the_right_key() {
    let mut no_key = sp();
    no_key.decryption_key_pem = None;
    let xml = fixture("encrypted.xml");
    let e = verify_response(&b64(&xml), &no_key, Some(REQUEST_ID), now()).unwrap_err();
    assert_eq!(e.code(), "saml/decryption");
    let mut other_key = sp();
    other_key.decryption_key_pem = Some(fixture("idp.key.pem"));
    let e = verify_response(&b64(&xml), &other_key, Some(REQUEST_ID), now()).unwrap_err();
    assert_eq!(e.code(), "saml/decryption");
}

#[test]
fn rsa_1_5_key_transport_is_refused() {
    let xml = fixture("encrypted.xml").replace(
        "http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p",
        "http://www.w3.org/2001/04/xmlenc#rsa-1_5",
    );
    assert_eq!(
        code(verify_xml(&xml, Some(REQUEST_ID))),
        "saml/algorithm_refused"
    );
}

/// An `EncryptedKey` outside the encrypted assertion (which a `RetrievalMethod` inside could
/// name, under an algorithm of its own) is refused before anything is decrypted.
#[test]
fn an_encrypted_key_outside_the_assertion_is_refused() {
    let xml = fixture("encrypted.xml");
    let stray = "<samlp:Extensions><xenc:EncryptedKey xmlns:xenc=\"http://www.w3.org/2001/04/xmlenc#\" Id=\"stray\"><xenc:EncryptionMethod Algorithm=\"http://www.w3.org/2001/04/xmlenc#rsa-1_5\"/><xenc:CipherData><xenc:CipherValue>AAAA</xenc:CipherValue></xenc:CipherData></xenc:EncryptedKey></samlp:Extensions>";
    let at = xml.find("<saml:Issuer").expect("an issuer");
    let end = at + xml[at..].find("</saml:Issuer>").expect("its end") + "</saml:Issuer>".len();
    let wrapped = format!("{}{stray}{}", &xml[..end], &xml[end..]);
    assert_eq!(code(verify_xml(&wrapped, Some(REQUEST_ID))), "saml/wrapped");
}

#[test]
fn idp_initiated_is_accepted_when_no_request_is_expected() {
    check_alice(&verify("idp-initiated", None).unwrap(), None);
}

#[test]
fn unsigned_is_refused() {
    assert_eq!(code(verify("unsigned", Some(REQUEST_ID))), "saml/unsigned");
}

#[test]
fn another_key_is_refused() {
    assert_eq!(
        code(verify("other_key", Some(REQUEST_ID))),
        "saml/signature_invalid"
    );
}

#[test]
fn a_tampered_assertion_is_refused() {
    let xml =
        fixture("signed-assertion.xml").replace(">alice@corp.example<", ">mallory@corp.example<");
    assert_eq!(
        code(verify_xml(&xml, Some(REQUEST_ID))),
        "saml/signature_invalid"
    );
    let xml =
        fixture("signed-response.xml").replace(">alice@corp.example<", ">mallory@corp.example<");
    assert_eq!(
        code(verify_xml(&xml, Some(REQUEST_ID))),
        "saml/signature_invalid"
    );
}

#[test]
fn rsa_sha1_is_refused() {
    let xml = fixture("sha1.xml");
    assert!(xml.contains("xmldsig#rsa-sha1"));
    assert_eq!(
        code(verify_xml(&xml, Some(REQUEST_ID))),
        "saml/algorithm_refused"
    );
}

#[test]
fn sha1_digest_alone_is_refused() {
    // The signature method allowed, the digest not: refused before any verification.
    let xml = fixture("sha1.xml").replace(
        "http://www.w3.org/2000/09/xmldsig#rsa-sha1",
        "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256",
    );
    assert_eq!(
        code(verify_xml(&xml, Some(REQUEST_ID))),
        "saml/algorithm_refused"
    );
}

#[test]
fn signature_wrapping_is_refused() {
    for n in 1..=8 {
        let name = format!("xsw{n}");
        let xml = fixture(&format!("{name}.xml"));
        assert!(xml.contains("attacker@evil.example"), "{name}");
        assert_eq!(
            code(verify_xml(&xml, Some(REQUEST_ID))),
            "saml/wrapped",
            "{name}"
        );
    }
}

#[test]
fn two_assertions_are_refused() {
    assert_eq!(
        code(verify("two_assertions", Some(REQUEST_ID))),
        "saml/wrapped"
    );
}

#[test]
fn a_signature_over_another_element_is_refused() {
    // The assertion's signature moved onto the Response (a child of the Response, but its
    // Reference still names the assertion).
    let xml = fixture("signed-assertion.xml");
    let start = xml.find("<ds:Signature").unwrap();
    let end = xml.find("</ds:Signature>").unwrap() + "</ds:Signature>".len();
    let signature = &xml[start..end];
    let without = format!("{}{}", &xml[..start], &xml[end..]);
    let at = without.find("</saml:Issuer>").unwrap() + "</saml:Issuer>".len();
    let moved = format!("{}{}{}", &without[..at], signature, &without[at..]);
    assert_eq!(code(verify_xml(&moved, Some(REQUEST_ID))), "saml/wrapped");
}

#[test]
fn duplicate_ids_are_refused() {
    let xml = fixture("signed-assertion.xml");
    let id = xml
        .split("<saml:Assertion")
        .nth(1)
        .unwrap()
        .split(" ID=\"")
        .nth(1)
        .unwrap();
    let id = &id[..id.find('"').unwrap()];
    let doubled = xml.replacen("<samlp:Status>", &format!("<samlp:Status ID=\"{id}\">"), 1);
    assert_eq!(code(verify_xml(&doubled, Some(REQUEST_ID))), "saml/wrapped");
}

#[test]
fn wrong_audience_is_refused() {
    assert_eq!(
        code(verify("wrong_audience", Some(REQUEST_ID))),
        "saml/audience"
    );
}

#[test]
fn wrong_recipient_is_refused() {
    assert_eq!(
        code(verify("wrong_recipient", Some(REQUEST_ID))),
        "saml/recipient"
    );
}

#[test]
fn wrong_destination_is_refused() {
    assert_eq!(
        code(verify("wrong_destination", Some(REQUEST_ID))),
        "saml/destination"
    );
}

#[test]
fn expired_is_refused() {
    assert_eq!(code(verify("expired", Some(REQUEST_ID))), "saml/expired");
}

#[test]
fn not_yet_valid_is_refused() {
    assert_eq!(
        code(verify("not_yet_valid", Some(REQUEST_ID))),
        "saml/not_yet_valid"
    );
}

#[test]
fn the_skew_is_allowed_and_no_more() {
    let xml = fixture("signed-assertion.xml");
    let a = verify_xml(&xml, Some(REQUEST_ID)).unwrap();
    let within = a.not_on_or_after + time::Duration::seconds(60);
    verify_response(&b64(&xml), &sp(), Some(REQUEST_ID), within).unwrap();
    let beyond = a.not_on_or_after + time::Duration::seconds(121);
    let e = verify_response(&b64(&xml), &sp(), Some(REQUEST_ID), beyond).unwrap_err();
    assert_eq!(e.code(), "saml/expired");
    let early = now() - time::Duration::seconds(181);
    let e = verify_response(&b64(&xml), &sp(), Some(REQUEST_ID), early).unwrap_err();
    assert_eq!(e.code(), "saml/not_yet_valid");
}

#[test]
fn wrong_in_response_to_is_refused() {
    assert_eq!(
        code(verify("signed-assertion", Some("id-another"))),
        "saml/in_response_to"
    );
    // Only the assertion is signed: with the (unsigned) Response's InResponseTo removed,
    // the signed SubjectConfirmationData still says which request it answers.
    let xml =
        fixture("signed-assertion.xml").replacen(&format!(" InResponseTo=\"{REQUEST_ID}\""), "", 1);
    assert_eq!(
        code(verify_xml(&xml, Some("id-another"))),
        "saml/in_response_to"
    );
}

#[test]
fn a_solicited_response_is_refused_where_none_was_sent() {
    assert_eq!(
        code(verify("signed-assertion", None)),
        "saml/in_response_to"
    );
}

#[test]
fn unsolicited_is_refused_when_a_request_is_expected() {
    assert_eq!(
        code(verify("idp-initiated", Some(REQUEST_ID))),
        "saml/unsolicited"
    );
}

#[test]
fn comment_in_name_id_is_refused() {
    let xml = fixture("comment_nameid.xml");
    assert!(xml.contains("alice@corp.example<!---->.evil.example"));
    assert_eq!(code(verify_xml(&xml, Some(REQUEST_ID))), "saml/split_text");
}

#[test]
fn status_other_than_success_is_refused() {
    let xml = fixture("signed-response.xml").replace(
        "urn:oasis:names:tc:SAML:2.0:status:Success",
        "urn:oasis:names:tc:SAML:2.0:status:Responder",
    );
    let e = verify_xml(&xml, Some(REQUEST_ID)).unwrap_err();
    assert_eq!(e.code(), "saml/status");
    assert!(e.to_string().contains("Responder"));
}

#[test]
fn another_issuer_is_refused() {
    let mut other = sp();
    other.idp_entity_id = "https://other-idp.example/metadata".into();
    let xml = fixture("signed-assertion.xml");
    let e = verify_response(&b64(&xml), &other, Some(REQUEST_ID), now()).unwrap_err();
    assert_eq!(e.code(), "saml/issuer");
}

#[test]
fn dtds_are_refused() {
    let xml = format!(
        "<!DOCTYPE samlp:Response [<!ENTITY x \"y\">]>{}",
        fixture("signed-assertion.xml")
    );
    assert_eq!(code(verify_xml(&xml, Some(REQUEST_ID))), "saml/malformed");
}

#[test]
fn oversized_input_is_refused() {
    let xml = format!(
        "{}<!--{}-->",
        fixture("signed-assertion.xml"),
        "x".repeat(tessera_saml::MAX_RESPONSE_BYTES)
    );
    assert_eq!(code(verify_xml(&xml, Some(REQUEST_ID))), "saml/too_large");
}

#[test]
fn garbage_is_malformed() {
    let e = verify_response("not base64!", &sp(), None, now()).unwrap_err();
    assert_eq!(e.code(), "saml/malformed");
    assert_eq!(code(verify_xml("<a/>", None)), "saml/malformed");
}
