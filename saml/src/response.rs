//! `verify_response`: from the base64 SAMLResponse of the HTTP-POST binding to an
//! [`Assertion`] the server can trust.
//!
//! The order matters: the structure is checked first (exactly one Response, exactly one
//! Assertion or EncryptedAssertion and it a child of the Response, signatures only on those
//! two, no duplicate IDs), then each signature present must verify, cover exactly the
//! element that carries it, and use allowed algorithms; then everything is read from that
//! verified element only. This is the defence against XML signature wrapping.

use crate::signature;
use crate::xml::{self, DS, SAML, SAMLP, XENC, XSI};
use crate::{Assertion, SamlError, SpConfig};
use base64::Engine;
use bergshamra::core::algorithm as alg;
use std::collections::{BTreeMap, HashSet};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use uppsala::{Document, NodeId};

/// The largest decoded response accepted.
pub const MAX_RESPONSE_BYTES: usize = 256 * 1024;

const SUCCESS: &str = "urn:oasis:names:tc:SAML:2.0:status:Success";
const BEARER: &str = "urn:oasis:names:tc:SAML:2.0:cm:bearer";
/// Block ciphers accepted for an EncryptedAssertion.
const DATA_ENCRYPTION: &[&str] = &[
    alg::AES128_CBC,
    alg::AES192_CBC,
    alg::AES256_CBC,
    alg::AES128_GCM,
    alg::AES192_GCM,
    alg::AES256_GCM,
];
/// Key transports accepted (no RSA PKCS#1 v1.5).
const KEY_TRANSPORT: &[&str] = &[alg::RSA_OAEP, alg::RSA_OAEP_ENC11];

/// Verifies a SAMLResponse (base64, as posted to the ACS) and returns its assertion.
///
/// `expected_request_id` is the ID of the AuthnRequest this browser was sent with, or `None`
/// when the caller accepts an IdP-initiated response (then no InResponseTo may be present).
pub fn verify_response(
    saml_response_b64: &str,
    sp: &SpConfig,
    expected_request_id: Option<&str>,
    now: OffsetDateTime,
) -> Result<Assertion, SamlError> {
    if saml_response_b64.len() > MAX_RESPONSE_BYTES / 3 * 4 + 16 * 1024 {
        return Err(SamlError::TooLarge);
    }
    let compact: String = saml_response_b64
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(compact)
        .map_err(|e| SamlError::Malformed(format!("base64: {e}")))?;
    if bytes.len() > MAX_RESPONSE_BYTES {
        return Err(SamlError::TooLarge);
    }
    let text = String::from_utf8(bytes).map_err(|_| SamlError::Malformed("not UTF-8".into()))?;
    let doc = xml::parse(&text)?;
    let response = response_element(&doc)?;
    check_status(&doc, response)?;
    let shape = structure(&doc, response)?;

    let response_signed = match signature::signature_of(&doc, response)? {
        Some(sig) => {
            let keys = signature::idp_keys(&sp.idp_certs)?;
            signature::verify_enveloped(&doc, &text, keys, response, sig)?;
            true
        }
        None => false,
    };
    let checks = Checks {
        sp,
        expected: expected_request_id,
        now,
    };
    checks.response_level(&doc, response)?;
    match shape {
        Shape::Plain(assertion) => {
            assertion_signature(&doc, &text, sp, assertion, response_signed)?;
            checks.assertion(&doc, assertion)
        }
        Shape::Encrypted(encrypted) => {
            check_encryption_algorithms(&doc, encrypted)?;
            let plain = decrypt(&text, sp)?;
            // One answer for every failure of the plaintext, so the error says nothing
            // about what a tampered ciphertext decrypted to (no CBC padding/parse oracle).
            let ddoc = xml::parse(&plain)
                .map_err(|_| SamlError::Decryption("the plaintext is not XML".into()))?;
            let droot = response_element(&ddoc)?;
            let assertion = decrypted_structure(&ddoc, droot)?;
            assertion_signature(&ddoc, &plain, sp, assertion, response_signed)?;
            checks.assertion(&ddoc, assertion)
        }
    }
}

enum Shape {
    Plain(NodeId),
    Encrypted(NodeId),
}

fn response_element(doc: &Document<'_>) -> Result<NodeId, SamlError> {
    let root = doc
        .document_element()
        .ok_or_else(|| SamlError::Malformed("empty document".into()))?;
    if !xml::is(doc, root, SAMLP, "Response") {
        return Err(SamlError::Malformed("not a samlp:Response".into()));
    }
    if xml::attr(doc, root, "Version") != Some("2.0") {
        return Err(SamlError::Malformed("not SAML 2.0".into()));
    }
    Ok(root)
}

fn check_status(doc: &Document<'_>, response: NodeId) -> Result<(), SamlError> {
    let status = xml::child(doc, response, SAMLP, "Status")?
        .ok_or_else(|| SamlError::Malformed("no Status".into()))?;
    let code = xml::child(doc, status, SAMLP, "StatusCode")?
        .ok_or_else(|| SamlError::Malformed("no StatusCode".into()))?;
    let value = xml::attr(doc, code, "Value").unwrap_or("");
    if value == SUCCESS {
        return Ok(());
    }
    let mut codes = vec![value.to_owned()];
    if let Some(sub) = xml::child(doc, code, SAMLP, "StatusCode")? {
        codes.push(xml::attr(doc, sub, "Value").unwrap_or("").to_owned());
    }
    Err(SamlError::Status(codes.join(" ")))
}

/// Signatures may only sit directly on the Response or on the Assertion.
fn signatures_in_place(doc: &Document<'_>, allowed_parents: &[NodeId]) -> Result<(), SamlError> {
    for sig in xml::descendants(doc, DS, "Signature") {
        let parent = doc.parent(sig);
        if !parent.is_some_and(|p| allowed_parents.contains(&p)) {
            return Err(SamlError::Wrapped(
                "a signature in an unexpected place".into(),
            ));
        }
    }
    Ok(())
}

/// No two elements share an ID.
fn unique_ids(doc: &Document<'_>) -> Result<(), SamlError> {
    let mut seen = HashSet::new();
    for node in doc.descendants(doc.root()) {
        for name in ["ID", "Id", "id", "AssertionID"] {
            if let Some(id) = xml::attr(doc, node, name) {
                if !seen.insert(id.to_owned()) {
                    return Err(SamlError::Wrapped("duplicate ID".into()));
                }
            }
        }
    }
    Ok(())
}

fn structure(doc: &Document<'_>, response: NodeId) -> Result<Shape, SamlError> {
    if xml::descendants(doc, SAMLP, "Response").len() != 1 {
        return Err(SamlError::Wrapped("more than one Response".into()));
    }
    let plain = xml::descendants(doc, SAML, "Assertion");
    let encrypted = xml::descendants(doc, SAML, "EncryptedAssertion");
    let shape = match (plain.as_slice(), encrypted.as_slice()) {
        ([], []) => return Err(SamlError::Malformed("no assertion".into())),
        ([one], []) => Shape::Plain(*one),
        ([], [one]) => Shape::Encrypted(*one),
        _ => return Err(SamlError::Wrapped("more than one assertion".into())),
    };
    let (Shape::Plain(node) | Shape::Encrypted(node)) = shape;
    if doc.parent(node) != Some(response) {
        return Err(SamlError::Wrapped(
            "the assertion is not a child of the Response".into(),
        ));
    }
    signatures_in_place(doc, &[response, node])?;
    unique_ids(doc)?;
    if let Shape::Encrypted(enc) = shape {
        let data = xml::descendants(doc, XENC, "EncryptedData");
        if data.len() != 1 || doc.parent(data[0]) != Some(enc) {
            return Err(SamlError::Wrapped("unexpected EncryptedData".into()));
        }
    }
    Ok(shape)
}

fn decrypted_structure(doc: &Document<'_>, response: NodeId) -> Result<NodeId, SamlError> {
    let assertions = xml::descendants(doc, SAML, "Assertion");
    let [assertion] = assertions.as_slice() else {
        return Err(SamlError::Wrapped(
            "not exactly one decrypted assertion".into(),
        ));
    };
    let wrapper = doc.parent(*assertion);
    if xml::descendants(doc, SAML, "EncryptedAssertion").len() != 1
        || !wrapper.is_some_and(|w| {
            xml::is(doc, w, SAML, "EncryptedAssertion") && doc.parent(w) == Some(response)
        })
        || !xml::descendants(doc, XENC, "EncryptedData").is_empty()
    {
        return Err(SamlError::Wrapped("unexpected decrypted structure".into()));
    }
    signatures_in_place(doc, &[response, *assertion])?;
    unique_ids(doc)?;
    Ok(*assertion)
}

/// Verifies the Assertion's own signature when it has one; requires one when the Response
/// was not signed.
fn assertion_signature(
    doc: &Document<'_>,
    text: &str,
    sp: &SpConfig,
    assertion: NodeId,
    response_signed: bool,
) -> Result<(), SamlError> {
    match signature::signature_of(doc, assertion)? {
        Some(sig) => {
            let keys = signature::idp_keys(&sp.idp_certs)?;
            signature::verify_enveloped(doc, text, keys, assertion, sig)
        }
        None if response_signed => Ok(()),
        None => Err(SamlError::Unsigned),
    }
}

/// Every encryption in the document is the assertion's, with allowed algorithms: an
/// `EncryptedKey` elsewhere (which a `RetrievalMethod` could name) would be decrypted with
/// the service provider's key under whatever algorithm it says.
fn check_encryption_algorithms(doc: &Document<'_>, encrypted: NodeId) -> Result<(), SamlError> {
    let inside: HashSet<NodeId> = doc.descendants(encrypted).into_iter().collect();
    for node in doc.descendants(doc.root()) {
        let encryption = ["EncryptedKey", "EncryptedData", "EncryptionMethod"]
            .iter()
            .any(|name| xml::is(doc, node, XENC, name));
        if encryption && !inside.contains(&node) {
            return Err(SamlError::Wrapped(
                "encryption outside the encrypted assertion".into(),
            ));
        }
        if !xml::is(doc, node, XENC, "EncryptionMethod") {
            continue;
        }
        let algorithm = xml::attr(doc, node, "Algorithm").unwrap_or("");
        let in_key = doc
            .parent(node)
            .is_some_and(|p| xml::is(doc, p, XENC, "EncryptedKey"));
        let allowed = if in_key {
            KEY_TRANSPORT
        } else {
            DATA_ENCRYPTION
        };
        if !allowed.contains(&algorithm) {
            return Err(SamlError::AlgorithmRefused(algorithm.to_owned()));
        }
    }
    Ok(())
}

fn decrypt(text: &str, sp: &SpConfig) -> Result<String, SamlError> {
    let pem = sp
        .decryption_key_pem
        .as_deref()
        .ok_or_else(|| SamlError::Decryption("no decryption key configured".into()))?;
    let key = bergshamra::keys::loader::load_pem_auto(pem.as_bytes(), None)
        .map_err(|e| SamlError::Config(format!("decryption key: {e}")))?;
    let mut keys = bergshamra::KeysManager::new();
    keys.add_key(key);
    // No CipherReference: the cipher text is the one in the document.
    let ctx = bergshamra::EncContext::new(keys).with_disable_cipher_reference(true);
    bergshamra::decrypt(&ctx, text).map_err(|e| SamlError::Decryption(e.to_string()))
}

fn instant(value: &str) -> Result<OffsetDateTime, SamlError> {
    OffsetDateTime::parse(value, &Rfc3339)
        .map_err(|_| SamlError::Malformed(format!("not an xs:dateTime: {value}")))
}

struct Checks<'a> {
    sp: &'a SpConfig,
    expected: Option<&'a str>,
    now: OffsetDateTime,
}

impl Checks<'_> {
    fn issuer(&self, doc: &Document<'_>, issuer: NodeId) -> Result<String, SamlError> {
        let value = xml::strict_text(doc, issuer)?;
        if value != self.sp.idp_entity_id {
            return Err(SamlError::Issuer);
        }
        Ok(value)
    }

    /// `InResponseTo` on the Response (optional) must name the expected request; with none
    /// expected it must be absent.
    fn response_level(&self, doc: &Document<'_>, response: NodeId) -> Result<(), SamlError> {
        if let Some(issuer) = xml::child(doc, response, SAML, "Issuer")? {
            self.issuer(doc, issuer)?;
        }
        if let Some(destination) = xml::attr(doc, response, "Destination") {
            if destination != self.sp.acs_url {
                return Err(SamlError::Destination);
            }
        }
        match (xml::attr(doc, response, "InResponseTo"), self.expected) {
            (None, _) => Ok(()),
            (Some(got), Some(want)) if got == want => Ok(()),
            (Some(_), _) => Err(SamlError::InResponseTo),
        }
    }

    /// Checks one bearer SubjectConfirmation; answers its NotOnOrAfter.
    fn confirmation(
        &self,
        doc: &Document<'_>,
        confirmation: NodeId,
    ) -> Result<OffsetDateTime, SamlError> {
        let data = xml::child(doc, confirmation, SAML, "SubjectConfirmationData")?
            .ok_or_else(|| SamlError::Malformed("no SubjectConfirmationData".into()))?;
        if xml::attr(doc, data, "Recipient") != Some(self.sp.acs_url.as_str()) {
            return Err(SamlError::Recipient);
        }
        let not_on_or_after = instant(
            xml::attr(doc, data, "NotOnOrAfter")
                .ok_or_else(|| SamlError::Malformed("bearer without NotOnOrAfter".into()))?,
        )?;
        if not_on_or_after <= self.now - self.sp.skew {
            return Err(SamlError::Expired);
        }
        if let Some(not_before) = xml::attr(doc, data, "NotBefore") {
            if instant(not_before)? > self.now + self.sp.skew {
                return Err(SamlError::NotYetValid);
            }
        }
        match (xml::attr(doc, data, "InResponseTo"), self.expected) {
            (None, None) => {}
            (None, Some(_)) => return Err(SamlError::Unsolicited),
            (Some(got), Some(want)) if got == want => {}
            (Some(_), _) => return Err(SamlError::InResponseTo),
        }
        Ok(not_on_or_after)
    }

    /// Conditions: the time window and the audience; answers NotOnOrAfter if given.
    fn conditions(
        &self,
        doc: &Document<'_>,
        assertion: NodeId,
    ) -> Result<Option<OffsetDateTime>, SamlError> {
        let conditions =
            xml::child(doc, assertion, SAML, "Conditions")?.ok_or(SamlError::Audience)?;
        if let Some(not_before) = xml::attr(doc, conditions, "NotBefore") {
            if instant(not_before)? > self.now + self.sp.skew {
                return Err(SamlError::NotYetValid);
            }
        }
        let not_on_or_after = match xml::attr(doc, conditions, "NotOnOrAfter") {
            Some(v) => {
                let v = instant(v)?;
                if v <= self.now - self.sp.skew {
                    return Err(SamlError::Expired);
                }
                Some(v)
            }
            None => None,
        };
        let restrictions = xml::children(doc, conditions, SAML, "AudienceRestriction");
        if restrictions.is_empty() {
            return Err(SamlError::Audience);
        }
        for restriction in restrictions {
            let mut named = false;
            for audience in xml::children(doc, restriction, SAML, "Audience") {
                named |= xml::strict_text(doc, audience)? == self.sp.entity_id;
            }
            if !named {
                return Err(SamlError::Audience);
            }
        }
        Ok(not_on_or_after)
    }

    fn assertion(&self, doc: &Document<'_>, assertion: NodeId) -> Result<Assertion, SamlError> {
        if xml::attr(doc, assertion, "Version") != Some("2.0") {
            return Err(SamlError::Malformed("assertion is not SAML 2.0".into()));
        }
        let id = xml::attr(doc, assertion, "ID")
            .filter(|id| !id.is_empty())
            .ok_or_else(|| SamlError::Malformed("assertion without ID".into()))?
            .to_owned();
        let issuer_node = xml::child(doc, assertion, SAML, "Issuer")?
            .ok_or_else(|| SamlError::Malformed("assertion without Issuer".into()))?;
        let issuer = self.issuer(doc, issuer_node)?;

        let subject =
            xml::child(doc, assertion, SAML, "Subject")?.ok_or(SamlError::MissingNameId)?;
        let name_id_node =
            xml::child(doc, subject, SAML, "NameID")?.ok_or(SamlError::MissingNameId)?;
        let name_id = xml::strict_text(doc, name_id_node)?;
        if name_id.is_empty() {
            return Err(SamlError::MissingNameId);
        }
        let name_id_format = xml::attr(doc, name_id_node, "Format").map(str::to_owned);

        let bearers: Vec<NodeId> = xml::children(doc, subject, SAML, "SubjectConfirmation")
            .into_iter()
            .filter(|c| xml::attr(doc, *c, "Method") == Some(BEARER))
            .collect();
        let mut confirmed = None;
        let mut first_error = None;
        for bearer in bearers {
            match self.confirmation(doc, bearer) {
                Ok(bound) => {
                    confirmed = Some(bound);
                    break;
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        let mut not_on_or_after = match (confirmed, first_error) {
            (Some(bound), _) => bound,
            (None, Some(e)) => return Err(e),
            (None, None) => {
                return Err(SamlError::Malformed("no bearer SubjectConfirmation".into()))
            }
        };
        if let Some(bound) = self.conditions(doc, assertion)? {
            not_on_or_after = not_on_or_after.min(bound);
        }

        let mut session_index = None;
        if let Some(statement) = xml::children(doc, assertion, SAML, "AuthnStatement")
            .into_iter()
            .next()
        {
            session_index = xml::attr(doc, statement, "SessionIndex").map(str::to_owned);
            if let Some(end) = xml::attr(doc, statement, "SessionNotOnOrAfter") {
                if instant(end)? <= self.now - self.sp.skew {
                    return Err(SamlError::Expired);
                }
            }
        }

        Ok(Assertion {
            id,
            issuer,
            name_id,
            name_id_format,
            in_response_to: self.expected.map(str::to_owned),
            session_index,
            not_on_or_after,
            attributes: attributes(doc, assertion)?,
        })
    }
}

/// Attribute values by Name, and by FriendlyName too when it differs.
fn attributes(
    doc: &Document<'_>,
    assertion: NodeId,
) -> Result<BTreeMap<String, Vec<String>>, SamlError> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for statement in xml::children(doc, assertion, SAML, "AttributeStatement") {
        for attribute in xml::children(doc, statement, SAML, "Attribute") {
            let name = xml::attr(doc, attribute, "Name")
                .ok_or_else(|| SamlError::Malformed("Attribute without Name".into()))?;
            let mut values = Vec::new();
            for value in xml::children(doc, attribute, SAML, "AttributeValue") {
                let nil = doc
                    .element(value)
                    .and_then(|e| e.get_attribute_ns(XSI, "nil"))
                    .is_some_and(|v| v == "true" || v == "1");
                if !nil {
                    values.push(xml::strict_text(doc, value)?);
                }
            }
            let friendly = xml::attr(doc, attribute, "FriendlyName").filter(|f| *f != name);
            for key in std::iter::once(name).chain(friendly) {
                out.entry(key.to_owned())
                    .or_default()
                    .extend(values.iter().cloned());
            }
        }
    }
    Ok(out)
}
