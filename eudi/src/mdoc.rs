//! ISO/IEC 18013-5 mdoc presentations as OpenID4VP 1.0 Appendix B.2 carries them: a base64url
//! `DeviceResponse` whose documents hold the issuer-signed Mobile Security Object (MSO), the
//! disclosed `IssuerSignedItem`s and the holder's device signature over the
//! `SessionTranscript` that binds the response to this verifier and this transaction.
//!
//! Digests are taken over the exact bytes received (`#6.24(bstr)` as sent, never re-encoded),
//! so the response is walked with a small span-keeping CBOR reader; values are then decoded
//! with `ciborium` and COSE structures with `coset`.
//!
//! The issuing and presenting halves exist for the test wallet and the benchmark. `issue`
//! writes the elements `birth_date`, `issue_date` and `expiry_date` as `full-date` (tag 1004)
//! when their value is a `YYYY-MM-DD` string; `verify` turns tag 1004 and tdate (tag 0) back
//! into plain strings.

use std::collections::{BTreeMap, HashSet};

use ciborium::value::Value as Cbor;
use coset::{
    iana, CborSerializable, CoseKey, CoseSign1, CoseSign1Builder, Header, HeaderBuilder, KeyType,
    Label, RegisteredLabelWithPrivate,
};
use rand::rngs::OsRng;
use rand::seq::SliceRandom;
use rand::RngCore;
use serde_json::{Map, Value};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::jose::{Alg, PublicKey, SigningKey};
use crate::status::StatusRef;
use crate::{b64d, b64e, malformed, sha256, Error, Result};

/// At most this many documents in one `DeviceResponse`.
pub const MAX_DOCUMENTS: usize = 10;
/// At most this many disclosed elements in one document.
pub const MAX_ELEMENTS: usize = 64;
/// Clock skew allowed on the MSO's `validFrom` and `validUntil` (seconds).
pub const SKEW_SECS: i64 = 60;
/// CBOR nesting beyond which a structure is refused.
const MAX_DEPTH: usize = 32;
/// At most this many certificates in an `x5chain`.
const MAX_CHAIN: usize = 10;
/// CBOR tag 0: an RFC 3339 date-time text (`tdate`).
const TAG_TDATE: u64 = 0;
/// CBOR tag 18: a tagged COSE_Sign1.
const TAG_COSE_SIGN1: u64 = 18;
/// CBOR tag 24: embedded CBOR data item (`bstr .cbor`).
const TAG_CBOR: u64 = 24;
/// CBOR tag 1004: an RFC 3339 `full-date` text.
const TAG_FULL_DATE: u64 = 1004;
/// Elements `issue` writes as `full-date` when they hold a `YYYY-MM-DD` string.
const FULL_DATE_ELEMENTS: [&str; 3] = ["birth_date", "issue_date", "expiry_date"];

/// One verified document.
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    /// The document's `docType` (equal to the MSO's).
    pub doctype: String,
    /// issuerAuth's `x5chain` (COSE header label 33), leaf first, DER.
    pub x5chain: Vec<Vec<u8>>,
    /// The issuer's signature algorithm.
    pub alg: Alg,
    /// Disclosed elements per namespace, CBOR turned into JSON: text, integers, booleans and
    /// null as such, `full-date` and `tdate` as strings, byte strings as base64url.
    pub namespaces: BTreeMap<String, BTreeMap<String, Value>>,
    /// The MSO's `validityInfo.validFrom` (Unix seconds).
    pub valid_from: i64,
    /// The MSO's `validityInfo.validUntil` (Unix seconds).
    pub valid_until: i64,
    /// The MSO's `status.status_list` reference, when it carries one.
    pub status: Option<StatusRef>,
}

/// OpenID4VP 1.0 Appendix B.2.6.1 `SessionTranscript` for a redirect / `direct_post(.jwt)`
/// response: `[null, null, ["OpenID4VPHandover", sha256(cbor([client_id, nonce,
/// jwk_thumbprint / null, response_uri]))]]`, CBOR-encoded. `jwk_thumbprint` is the RFC 7638
/// SHA-256 thumbprint of the verifier's encryption JWK when the response is encrypted.
pub fn session_transcript(
    client_id: &str,
    nonce: &str,
    jwk_thumbprint: Option<&[u8; 32]>,
    response_uri: &str,
) -> Vec<u8> {
    let mut info = head(4, 4);
    info.extend(enc_text(client_id));
    info.extend(enc_text(nonce));
    match jwk_thumbprint {
        Some(t) => info.extend(enc_bytes(t)),
        None => info.push(0xf6),
    }
    info.extend(enc_text(response_uri));
    let mut out = vec![0x83, 0xf6, 0xf6, 0x82];
    out.extend(enc_text("OpenID4VPHandover"));
    out.extend(enc_bytes(&sha256(&info)));
    out
}

/// Verifies an mdoc `vp_token` value: base64url (no padding) of a CBOR `DeviceResponse`
/// (version "1.0", `documents`, status 0), device-signed over `transcript` (the CBOR
/// `SessionTranscript`, see [`session_transcript`]) and valid at `now` (Unix seconds).
///
/// `trust` receives each issuerAuth `x5chain` (leaf first) with the issuer's algorithm; it
/// answers the leaf's public key when the chain leads to a trust anchor that accepts this
/// algorithm, or an error that refuses the whole presentation.
#[allow(clippy::type_complexity)]
pub fn verify(
    vp_token_value: &str,
    transcript: &[u8],
    now: i64,
    trust: &mut dyn FnMut(&[Vec<u8>], Alg) -> Result<PublicKey>,
) -> Result<Vec<Document>> {
    let transcript_item = Raw::parse(transcript)?;
    if transcript_item.array("SessionTranscript")?.len() != 3 {
        return Err(malformed("SessionTranscript is an array of three"));
    }
    let bytes = b64d(vp_token_value)?;
    let response = Raw::parse(&bytes)?;
    if response.field("version")?.text("version")? != "1.0" {
        return Err(Error::Unsupported(
            "DeviceResponse version other than 1.0".into(),
        ));
    }
    if response.field("status")?.uint("status")? != 0 {
        return Err(malformed("DeviceResponse status is not 0 (OK)"));
    }
    let documents = response.field("documents")?.array("documents")?;
    if documents.is_empty() {
        return Err(malformed("DeviceResponse holds no document"));
    }
    if documents.len() > MAX_DOCUMENTS {
        return Err(malformed(format!("more than {MAX_DOCUMENTS} documents")));
    }
    documents
        .iter()
        .map(|doc| verify_document(doc, transcript, now, trust))
        .collect()
}

#[allow(clippy::type_complexity)]
fn verify_document(
    doc: &Raw<'_>,
    transcript: &[u8],
    now: i64,
    trust: &mut dyn FnMut(&[Vec<u8>], Alg) -> Result<PublicKey>,
) -> Result<Document> {
    let doctype = doc.field("docType")?.text("docType")?;
    let issuer_signed = doc.field("issuerSigned")?;

    // issuerAuth: trust the chain, then check the signature over the MSO.
    let issuer_auth = sign1(issuer_signed.field("issuerAuth")?, "issuerAuth")?;
    let alg = cose_alg(&issuer_auth)?;
    let x5chain = x5chain(&issuer_auth)?;
    let issuer_key = trust(&x5chain, alg)?;
    issuer_auth.verify_signature(b"", |sig, tbs| issuer_key.verify(alg, tbs, sig))?;
    let payload = issuer_auth
        .payload
        .as_deref()
        .ok_or_else(|| malformed("issuerAuth has no payload"))?;

    // The MSO.
    let payload = Raw::parse(payload)?;
    let mso = Raw::parse(payload.tag24("MobileSecurityObjectBytes")?)?;
    if mso.field("version")?.text("MSO version")? != "1.0" {
        return Err(Error::Unsupported("MSO version other than 1.0".into()));
    }
    if mso.field("digestAlgorithm")?.text("digestAlgorithm")? != "SHA-256" {
        return Err(Error::Unsupported(
            "digestAlgorithm other than SHA-256".into(),
        ));
    }
    if mso.field("docType")?.text("MSO docType")? != doctype {
        return Err(malformed("the MSO's docType differs from the document's"));
    }
    let validity = mso.field("validityInfo")?;
    let valid_from = tdate(validity.field("validFrom")?, "validFrom")?;
    let valid_until = tdate(validity.field("validUntil")?, "validUntil")?;
    if valid_until <= valid_from {
        return Err(Error::Validity("validUntil is not after validFrom".into()));
    }
    if now.saturating_add(SKEW_SECS) < valid_from {
        return Err(Error::Validity("the MSO is not yet valid".into()));
    }
    if now >= valid_until.saturating_add(SKEW_SECS) {
        return Err(Error::Validity("the MSO has expired".into()));
    }
    let device_key = cose_key(mso.field("deviceKeyInfo")?.field("deviceKey")?)?;
    let value_digests = mso.field("valueDigests")?;
    let status = match mso.get("status") {
        Some(status) => StatusRef::from_claim(&cbor_to_json(&status.decode()?)?)?,
        None => None,
    };

    // The disclosed elements, each against its digest.
    let mut namespaces = BTreeMap::new();
    let mut count = 0usize;
    if let Some(name_spaces) = issuer_signed.get("nameSpaces") {
        for (ns, items) in name_spaces.map("nameSpaces")? {
            let ns = ns.text("namespace")?;
            let digests = value_digests
                .get(ns)
                .ok_or_else(|| Error::Digest(format!("namespace {ns} is not in the MSO")))?
                .map("valueDigests")?;
            let mut seen = HashSet::new();
            let mut elements = BTreeMap::new();
            for item in items.array("IssuerSignedItemBytes list")? {
                count += 1;
                if count > MAX_ELEMENTS {
                    return Err(malformed(format!("more than {MAX_ELEMENTS} elements")));
                }
                let digest = sha256(item.bytes);
                let item = Raw::parse(item.tag24("IssuerSignedItemBytes")?)?;
                let id = item.field("digestID")?.uint("digestID")?;
                if !seen.insert(id) {
                    return Err(Error::Digest(format!(
                        "digestID {id} disclosed twice in {ns}"
                    )));
                }
                let expected = digests
                    .iter()
                    .find(|(k, _)| matches!(k.kind, Kind::Uint(k) if k == id))
                    .ok_or_else(|| {
                        Error::Digest(format!("digestID {id} of {ns} is not in the MSO"))
                    })?
                    .1
                    .bytes("digest")?;
                if expected != digest.as_slice() {
                    return Err(Error::Digest(format!(
                        "digestID {id} of {ns} does not match"
                    )));
                }
                item.field("random")?.bytes("random")?;
                let name = item.field("elementIdentifier")?.text("elementIdentifier")?;
                let value = cbor_to_json(&item.field("elementValue")?.decode()?)?;
                if elements.insert(name.to_string(), value).is_some() {
                    return Err(Error::Digest(format!("{ns}/{name} disclosed twice")));
                }
            }
            namespaces.insert(ns.to_string(), elements);
        }
    }

    // The device signature over this transaction.
    let device_signed = doc.field("deviceSigned")?;
    let device_ns = device_signed.field("nameSpaces")?;
    Raw::parse(device_ns.tag24("DeviceNameSpacesBytes")?)?.map("DeviceNameSpaces")?;
    let device_auth = device_signed.field("deviceAuth")?;
    if device_auth.get("deviceMac").is_some() {
        return Err(Error::Unsupported(
            "deviceMac (only deviceSignature)".into(),
        ));
    }
    let signature = sign1(device_auth.field("deviceSignature")?, "deviceSignature")?;
    if signature.payload.is_some() {
        return Err(malformed("deviceSignature must have a detached payload"));
    }
    let device_alg = cose_alg(&signature)?;
    if device_alg != device_key.alg() {
        return Err(Error::Signature(format!(
            "{} device signature for a {} device key",
            device_alg.name(),
            device_key.alg().name()
        )));
    }
    let authenticated = device_authentication_bytes(transcript, doctype, device_ns.bytes);
    signature
        .verify_detached_signature(&authenticated, b"", |sig, tbs| {
            device_key.verify(device_alg, tbs, sig)
        })
        .map_err(|_| {
            Error::Binding("the device signature does not cover this transaction".into())
        })?;

    Ok(Document {
        doctype: doctype.to_string(),
        x5chain,
        alg,
        namespaces,
        valid_from,
        valid_until,
        status,
    })
}

/// An issued credential (CBOR `IssuerSigned`: `nameSpaces` and `issuerAuth`) for `doctype`,
/// holding `elements` (namespace → (element identifier, value)), signed by `issuer` with
/// `issuer_chain` (DER, leaf first) as `x5chain`, bound to `device`, valid over
/// [`valid_from`, `valid_until`] (Unix seconds) and, when given, carrying the status
/// reference (uri, idx) as `status.status_list` in the MSO.
///
/// JSON values become CBOR as such; `birth_date`, `issue_date` and `expiry_date` holding a
/// `YYYY-MM-DD` string become `full-date` (tag 1004). Digest IDs are shuffled and each item
/// gets a 24-byte random salt.
#[allow(clippy::too_many_arguments)]
pub fn issue(
    issuer: &SigningKey,
    issuer_chain: &[Vec<u8>],
    doctype: &str,
    elements: &[(&str, Vec<(&str, Value)>)],
    device: &PublicKey,
    valid_from: i64,
    valid_until: i64,
    status: Option<(&str, u64)>,
) -> Result<Vec<u8>> {
    if issuer_chain.is_empty() || issuer_chain.len() > MAX_CHAIN {
        return Err(malformed("issuer_chain must hold 1 to 10 certificates"));
    }
    if valid_until <= valid_from {
        return Err(Error::Validity(
            "valid_until is not after valid_from".into(),
        ));
    }
    let mut rng = OsRng;
    let total = elements.iter().map(|(_, items)| items.len()).sum::<usize>() as u64;
    let mut ids: Vec<u64> = (0..total).collect();
    ids.shuffle(&mut rng);
    let mut ids = ids.into_iter();
    let mut seen_ns = HashSet::new();
    let mut name_spaces = Vec::new();
    let mut value_digests = Vec::new();
    for (ns, items) in elements {
        if !seen_ns.insert(*ns) {
            return Err(malformed(format!("namespace {ns} given twice")));
        }
        let mut encoded = Vec::new();
        let mut digests = Vec::new();
        for (name, value) in items {
            let id = ids.next().ok_or_else(|| malformed("digest IDs"))?;
            let mut random = vec![0u8; 24];
            rng.try_fill_bytes(&mut random)
                .map_err(|_| Error::Unsupported("randomness".into()))?;
            let item = Cbor::Map(vec![
                (text("digestID"), Cbor::from(id)),
                (text("random"), Cbor::Bytes(random)),
                (text("elementIdentifier"), text(name)),
                (text("elementValue"), json_to_cbor(name, value)?),
            ]);
            let item = encode(&item)?;
            digests.push((Cbor::from(id), Cbor::Bytes(sha256(tag24(&item)).to_vec())));
            encoded.push(Cbor::Tag(TAG_CBOR, Box::new(Cbor::Bytes(item))));
        }
        name_spaces.push((text(ns), Cbor::Array(encoded)));
        value_digests.push((text(ns), Cbor::Map(digests)));
    }
    let mut mso = vec![
        (text("version"), text("1.0")),
        (text("digestAlgorithm"), text("SHA-256")),
        (text("valueDigests"), Cbor::Map(value_digests)),
        (
            text("deviceKeyInfo"),
            Cbor::Map(vec![(text("deviceKey"), cose_key_value(device)?)]),
        ),
        (text("docType"), text(doctype)),
        (
            text("validityInfo"),
            Cbor::Map(vec![
                (text("signed"), tdate_value(valid_from)?),
                (text("validFrom"), tdate_value(valid_from)?),
                (text("validUntil"), tdate_value(valid_until)?),
            ]),
        ),
    ];
    if let Some((uri, idx)) = status {
        let list = Cbor::Map(vec![
            (text("idx"), Cbor::from(idx)),
            (text("uri"), text(uri)),
        ]);
        mso.push((text("status"), Cbor::Map(vec![(text("status_list"), list)])));
    }
    let payload = tag24(&encode(&Cbor::Map(mso))?);
    let chain = match issuer_chain {
        [leaf] => Cbor::Bytes(leaf.clone()),
        chain => Cbor::Array(chain.iter().map(|c| Cbor::Bytes(c.clone())).collect()),
    };
    let unprotected = Header {
        rest: vec![(Label::Int(iana::HeaderParameter::X5Chain as i64), chain)],
        ..Default::default()
    };
    let issuer_auth = CoseSign1Builder::new()
        .protected(
            HeaderBuilder::new()
                .algorithm(iana_alg(issuer.alg()))
                .build(),
        )
        .unprotected(unprotected)
        .payload(payload)
        .try_create_signature(b"", |tbs| issuer.sign(tbs))?
        .build();
    let issuer_signed = Cbor::Map(vec![
        (text("nameSpaces"), Cbor::Map(name_spaces)),
        (text("issuerAuth"), cose_value(issuer_auth)?),
    ]);
    encode(&issuer_signed)
}

/// A `DeviceResponse` (base64url) presenting the elements named in `disclose` (from any
/// namespace) of an issued credential, with empty device-signed namespaces and a
/// `deviceSignature` by `device` over `transcript`. The chosen `IssuerSignedItemBytes` and
/// issuerAuth are copied byte for byte. An identifier the credential lacks is an error.
pub fn present(
    issuer_signed: &[u8],
    doctype: &str,
    disclose: &[&str],
    device: &SigningKey,
    transcript: &[u8],
) -> Result<String> {
    Raw::parse(transcript)?;
    let credential = Raw::parse(issuer_signed)?;
    let mut found = HashSet::new();
    let mut name_spaces = Vec::new();
    let mut kept_ns = 0u64;
    for (ns, items) in credential.field("nameSpaces")?.map("nameSpaces")? {
        let mut kept = Vec::new();
        for item in items.array("IssuerSignedItemBytes list")? {
            let inner = Raw::parse(item.tag24("IssuerSignedItemBytes")?)?;
            let name = inner
                .field("elementIdentifier")?
                .text("elementIdentifier")?;
            if disclose.contains(&name) {
                kept.push(item.bytes);
                found.insert(name.to_string());
            }
        }
        if !kept.is_empty() {
            kept_ns += 1;
            name_spaces.extend(enc_text(ns.text("namespace")?));
            name_spaces.extend(head(4, kept.len() as u64));
            kept.iter().for_each(|k| name_spaces.extend_from_slice(k));
        }
    }
    if let Some(missing) = disclose.iter().find(|d| !found.contains(**d)) {
        return Err(malformed(format!("{missing} is not in the credential")));
    }
    let issuer_auth = credential.field("issuerAuth")?.bytes;
    let device_ns = tag24(&head(5, 0));
    let authenticated = device_authentication_bytes(transcript, doctype, &device_ns);
    let signature = CoseSign1Builder::new()
        .protected(
            HeaderBuilder::new()
                .algorithm(iana_alg(device.alg()))
                .build(),
        )
        .try_create_detached_signature(&authenticated, b"", |tbs| device.sign(tbs))?
        .build()
        .to_vec()
        .map_err(|_| malformed("deviceSignature encoding"))?;

    let mut doc = head(5, 3);
    doc.extend(enc_text("docType"));
    doc.extend(enc_text(doctype));
    doc.extend(enc_text("issuerSigned"));
    doc.extend(head(5, 2));
    doc.extend(enc_text("nameSpaces"));
    doc.extend(head(5, kept_ns));
    doc.extend(name_spaces);
    doc.extend(enc_text("issuerAuth"));
    doc.extend_from_slice(issuer_auth);
    doc.extend(enc_text("deviceSigned"));
    doc.extend(head(5, 2));
    doc.extend(enc_text("nameSpaces"));
    doc.extend(device_ns);
    doc.extend(enc_text("deviceAuth"));
    doc.extend(head(5, 1));
    doc.extend(enc_text("deviceSignature"));
    doc.extend(signature);

    let mut response = head(5, 3);
    response.extend(enc_text("version"));
    response.extend(enc_text("1.0"));
    response.extend(enc_text("documents"));
    response.extend(head(4, 1));
    response.extend(doc);
    response.extend(enc_text("status"));
    response.extend(head(0, 0));
    Ok(b64e(response))
}

/// `DeviceAuthenticationBytes = #6.24(bstr .cbor ["DeviceAuthentication", SessionTranscript,
/// DocType, DeviceNameSpacesBytes])`, splicing in the transcript and the name spaces as given.
fn device_authentication_bytes(transcript: &[u8], doctype: &str, device_ns: &[u8]) -> Vec<u8> {
    let mut inner = head(4, 4);
    inner.extend(enc_text("DeviceAuthentication"));
    inner.extend_from_slice(transcript);
    inner.extend(enc_text(doctype));
    inner.extend_from_slice(device_ns);
    tag24(&inner)
}

fn sign1(raw: &Raw<'_>, what: &str) -> Result<CoseSign1> {
    let untagged = match &raw.kind {
        Kind::Tag(TAG_COSE_SIGN1, inner) => inner.as_ref(),
        Kind::Tag(..) => return Err(malformed(format!("{what} carries an unexpected tag"))),
        _ => raw,
    };
    CoseSign1::from_slice(untagged.bytes)
        .map_err(|_| malformed(format!("{what} is not a COSE_Sign1")))
}

/// The algorithm of a COSE_Sign1's protected header: ES256 (-7), EdDSA (-8) or its
/// fully-specified name Ed25519 (-19).
fn cose_alg(sign1: &CoseSign1) -> Result<Alg> {
    let header = &sign1.protected.header;
    if !header.crit.is_empty() {
        return Err(Error::Unsupported("crit COSE header parameters".into()));
    }
    match &header.alg {
        Some(RegisteredLabelWithPrivate::Assigned(iana::Algorithm::ES256)) => Ok(Alg::Es256),
        Some(RegisteredLabelWithPrivate::Assigned(
            iana::Algorithm::EdDSA | iana::Algorithm::Ed25519,
        )) => Ok(Alg::EdDsa),
        Some(other) => Err(Error::Unsupported(format!("COSE alg {other:?}"))),
        None => Err(malformed("no alg in the protected header")),
    }
}

fn iana_alg(alg: Alg) -> iana::Algorithm {
    match alg {
        Alg::Es256 => iana::Algorithm::ES256,
        Alg::EdDsa => iana::Algorithm::EdDSA,
    }
}

/// The `x5chain` (label 33) of issuerAuth, unprotected header first: one bstr or an array.
fn x5chain(sign1: &CoseSign1) -> Result<Vec<Vec<u8>>> {
    let label = Label::Int(iana::HeaderParameter::X5Chain as i64);
    let value = sign1
        .unprotected
        .rest
        .iter()
        .chain(&sign1.protected.header.rest)
        .find(|(l, _)| *l == label)
        .map(|(_, v)| v)
        .ok_or_else(|| Error::Untrusted("issuerAuth carries no x5chain".into()))?;
    let chain = match value {
        Cbor::Bytes(cert) => vec![cert.clone()],
        Cbor::Array(certs) => certs
            .iter()
            .map(|c| match c {
                Cbor::Bytes(cert) => Ok(cert.clone()),
                _ => Err(malformed("x5chain entries are byte strings")),
            })
            .collect::<Result<Vec<_>>>()?,
        _ => return Err(malformed("x5chain is a byte string or an array")),
    };
    if chain.is_empty() || chain.len() > MAX_CHAIN {
        return Err(malformed("x5chain must hold 1 to 10 certificates"));
    }
    Ok(chain)
}

/// A COSE_Key: EC2 on P-256 or OKP on Ed25519, public only.
fn cose_key(raw: &Raw<'_>) -> Result<PublicKey> {
    let key =
        CoseKey::from_slice(raw.bytes).map_err(|_| malformed("deviceKey is not a COSE_Key"))?;
    let param = |label: i64| {
        key.params
            .iter()
            .find(|(l, _)| *l == Label::Int(label))
            .map(|(_, v)| v)
    };
    if param(-4).is_some() {
        return Err(malformed("a device key must not carry a private key"));
    }
    let crv = param(-1).and_then(|c| match c {
        Cbor::Integer(i) => i64::try_from(*i).ok(),
        _ => None,
    });
    match (&key.kty, crv) {
        (KeyType::Assigned(iana::KeyType::EC2), Some(1)) => match (param(-2), param(-3)) {
            (Some(Cbor::Bytes(x)), Some(Cbor::Bytes(y))) => PublicKey::p256_from_xy(x, y),
            (Some(Cbor::Bytes(_)), Some(Cbor::Bool(_))) => {
                Err(Error::Unsupported("compressed P-256 device keys".into()))
            }
            _ => Err(malformed("EC2 key coordinates")),
        },
        (KeyType::Assigned(iana::KeyType::OKP), Some(6)) => match param(-2) {
            Some(Cbor::Bytes(x)) if x.len() == 32 => Ok(PublicKey::Ed25519(x.clone())),
            _ => Err(malformed("Ed25519 key")),
        },
        _ => Err(Error::Unsupported(
            "device keys other than P-256 or Ed25519".into(),
        )),
    }
}

fn cose_key_value(key: &PublicKey) -> Result<Cbor> {
    let key = match key {
        PublicKey::P256(point) if point.len() == 65 => coset::CoseKeyBuilder::new_ec2_pub_key(
            iana::EllipticCurve::P_256,
            point[1..33].to_vec(),
            point[33..65].to_vec(),
        )
        .build(),
        PublicKey::Ed25519(x) => CoseKey {
            kty: KeyType::Assigned(iana::KeyType::OKP),
            params: vec![
                (
                    Label::Int(-1),
                    Cbor::from(iana::EllipticCurve::Ed25519 as i64),
                ),
                (Label::Int(-2), Cbor::Bytes(x.clone())),
            ],
            ..Default::default()
        },
        PublicKey::P256(_) => return Err(malformed("P-256 point")),
    };
    coset::AsCborValue::to_cbor_value(key).map_err(|_| malformed("COSE_Key encoding"))
}

fn cose_value(sign1: CoseSign1) -> Result<Cbor> {
    coset::AsCborValue::to_cbor_value(sign1).map_err(|_| malformed("COSE_Sign1 encoding"))
}

fn tdate(raw: &Raw<'_>, what: &str) -> Result<i64> {
    match &raw.kind {
        Kind::Tag(TAG_TDATE, inner) => match &inner.kind {
            Kind::Text(s) => OffsetDateTime::parse(s, &Rfc3339)
                .map(OffsetDateTime::unix_timestamp)
                .map_err(|_| malformed(format!("{what} is not an RFC 3339 date-time"))),
            _ => Err(malformed(format!("{what} is not a tdate"))),
        },
        _ => Err(malformed(format!("{what} is not a tdate (tag 0)"))),
    }
}

fn tdate_value(t: i64) -> Result<Cbor> {
    let s = OffsetDateTime::from_unix_timestamp(t)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .ok_or_else(|| malformed("time out of range"))?;
    Ok(Cbor::Tag(TAG_TDATE, Box::new(Cbor::Text(s))))
}

fn is_full_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

fn json_to_cbor(name: &str, value: &Value) -> Result<Cbor> {
    Ok(match value {
        Value::Null => Cbor::Null,
        Value::Bool(b) => Cbor::Bool(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Cbor::from(i)
            } else if let Some(u) = n.as_u64() {
                Cbor::from(u)
            } else {
                Cbor::Float(n.as_f64().ok_or_else(|| malformed("number"))?)
            }
        }
        Value::String(s) if FULL_DATE_ELEMENTS.contains(&name) && is_full_date(s) => {
            Cbor::Tag(TAG_FULL_DATE, Box::new(Cbor::Text(s.clone())))
        }
        Value::String(s) => Cbor::Text(s.clone()),
        Value::Array(items) => Cbor::Array(
            items
                .iter()
                .map(|v| json_to_cbor("", v))
                .collect::<Result<_>>()?,
        ),
        Value::Object(members) => Cbor::Map(
            members
                .iter()
                .map(|(k, v)| Ok((text(k), json_to_cbor("", v)?)))
                .collect::<Result<_>>()?,
        ),
    })
}

fn cbor_to_json(value: &Cbor) -> Result<Value> {
    Ok(match value {
        Cbor::Integer(i) => {
            let i = i128::from(*i);
            if let Ok(n) = i64::try_from(i) {
                Value::from(n)
            } else {
                Value::from(u64::try_from(i).map_err(|_| malformed("integer out of range"))?)
            }
        }
        Cbor::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .ok_or_else(|| malformed("non-finite number"))?,
        Cbor::Bytes(b) => Value::from(b64e(b)),
        Cbor::Text(t) => Value::from(t.as_str()),
        Cbor::Bool(b) => Value::from(*b),
        Cbor::Null => Value::Null,
        Cbor::Tag(TAG_TDATE | TAG_FULL_DATE, inner) => match inner.as_ref() {
            Cbor::Text(t) => Value::from(t.as_str()),
            _ => return Err(malformed("a date tag over a non-text value")),
        },
        Cbor::Tag(_, inner) => cbor_to_json(inner)?,
        Cbor::Array(items) => Value::Array(items.iter().map(cbor_to_json).collect::<Result<_>>()?),
        Cbor::Map(entries) => {
            let mut members = Map::new();
            for (k, v) in entries {
                let key = match k {
                    Cbor::Text(t) => t.clone(),
                    Cbor::Integer(i) => i128::from(*i).to_string(),
                    _ => return Err(malformed("map keys other than text or integers")),
                };
                members.insert(key, cbor_to_json(v)?);
            }
            Value::Object(members)
        }
        _ => return Err(malformed("unsupported CBOR value")),
    })
}

fn text(s: &str) -> Cbor {
    Cbor::Text(s.to_string())
}

fn encode(value: &Cbor) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    ciborium::into_writer(value, &mut out).map_err(|_| malformed("CBOR encoding"))?;
    Ok(out)
}

/// A CBOR head: major type and argument, shortest form.
fn head(major: u8, n: u64) -> Vec<u8> {
    let m = major << 5;
    if n < 24 {
        vec![m | n as u8]
    } else if n <= 0xff {
        vec![m | 24, n as u8]
    } else if n <= 0xffff {
        let mut v = vec![m | 25];
        v.extend((n as u16).to_be_bytes());
        v
    } else if n <= 0xffff_ffff {
        let mut v = vec![m | 26];
        v.extend((n as u32).to_be_bytes());
        v
    } else {
        let mut v = vec![m | 27];
        v.extend(n.to_be_bytes());
        v
    }
}

fn enc_text(s: &str) -> Vec<u8> {
    let mut v = head(3, s.len() as u64);
    v.extend_from_slice(s.as_bytes());
    v
}

fn enc_bytes(b: &[u8]) -> Vec<u8> {
    let mut v = head(2, b.len() as u64);
    v.extend_from_slice(b);
    v
}

/// `#6.24(bstr)` around `inner`.
fn tag24(inner: &[u8]) -> Vec<u8> {
    let mut v = head(6, TAG_CBOR);
    v.extend(enc_bytes(inner));
    v
}

/// One CBOR data item as received: its exact bytes and what they decode to. Maps with a key
/// repeated (byte for byte) are refused.
#[derive(Debug)]
struct Raw<'a> {
    bytes: &'a [u8],
    kind: Kind<'a>,
}

#[derive(Debug)]
enum Kind<'a> {
    Uint(u64),
    Nint,
    Bytes(Vec<u8>),
    Text(String),
    Array(Vec<Raw<'a>>),
    Map(Vec<(Raw<'a>, Raw<'a>)>),
    Tag(u64, Box<Raw<'a>>),
    Simple,
}

fn truncated() -> Error {
    malformed("truncated CBOR")
}

impl<'a> Raw<'a> {
    /// Exactly one data item filling `buf`.
    fn parse(buf: &'a [u8]) -> Result<Raw<'a>> {
        let mut pos = 0;
        let raw = Raw::item(buf, &mut pos, 0)?;
        if pos != buf.len() {
            return Err(malformed("bytes after the CBOR item"));
        }
        Ok(raw)
    }

    /// Reads a head: (major type, additional info, argument); None for indefinite length.
    fn head(buf: &[u8], pos: &mut usize) -> Result<(u8, u8, Option<u64>)> {
        let initial = *buf.get(*pos).ok_or_else(truncated)?;
        *pos += 1;
        let (major, info) = (initial >> 5, initial & 0x1f);
        let size = match info {
            0..=23 => return Ok((major, info, Some(u64::from(info)))),
            24 => 1,
            25 => 2,
            26 => 4,
            27 => 8,
            31 => return Ok((major, info, None)),
            _ => return Err(malformed("reserved CBOR additional information")),
        };
        let arg = take(buf, pos, size)?
            .iter()
            .fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
        Ok((major, info, Some(arg)))
    }

    fn item(buf: &'a [u8], pos: &mut usize, depth: usize) -> Result<Raw<'a>> {
        if depth > MAX_DEPTH {
            return Err(malformed("CBOR nested too deeply"));
        }
        let start = *pos;
        let (major, info, arg) = Raw::head(buf, pos)?;
        let kind = match (major, arg) {
            (0, Some(n)) => Kind::Uint(n),
            (1, Some(_)) => Kind::Nint,
            (2, Some(n)) => Kind::Bytes(take(buf, pos, n)?.to_vec()),
            (3, Some(n)) => Kind::Text(utf8(take(buf, pos, n)?.to_vec())?),
            (2, None) => Kind::Bytes(chunks(buf, pos, 2)?),
            (3, None) => Kind::Text(utf8(chunks(buf, pos, 3)?)?),
            (4, n) => {
                let mut items = Vec::new();
                while more(buf, pos, n, items.len())? {
                    items.push(Raw::item(buf, pos, depth + 1)?);
                }
                Kind::Array(items)
            }
            (5, n) => {
                let mut entries: Vec<(Raw<'a>, Raw<'a>)> = Vec::new();
                let mut keys = HashSet::new();
                while more(buf, pos, n, entries.len())? {
                    let key = Raw::item(buf, pos, depth + 1)?;
                    if !keys.insert(key.bytes) {
                        return Err(malformed("a CBOR map repeats a key"));
                    }
                    let value = Raw::item(buf, pos, depth + 1)?;
                    entries.push((key, value));
                }
                Kind::Map(entries)
            }
            (6, Some(tag)) => Kind::Tag(tag, Box::new(Raw::item(buf, pos, depth + 1)?)),
            (7, Some(_)) if info != 31 => Kind::Simple,
            _ => return Err(malformed("unexpected CBOR break or indefinite item")),
        };
        let bytes = buf.get(start..*pos).ok_or_else(truncated)?;
        Ok(Raw { bytes, kind })
    }

    fn get(&self, key: &str) -> Option<&Raw<'a>> {
        match &self.kind {
            Kind::Map(entries) => entries
                .iter()
                .find(|(k, _)| matches!(&k.kind, Kind::Text(t) if t == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    fn field(&self, key: &str) -> Result<&Raw<'a>> {
        self.get(key)
            .ok_or_else(|| malformed(format!("{key} is missing")))
    }

    fn text(&self, what: &str) -> Result<&str> {
        match &self.kind {
            Kind::Text(t) => Ok(t),
            _ => Err(malformed(format!("{what} is not a text string"))),
        }
    }

    fn bytes(&self, what: &str) -> Result<&[u8]> {
        match &self.kind {
            Kind::Bytes(b) => Ok(b),
            _ => Err(malformed(format!("{what} is not a byte string"))),
        }
    }

    fn uint(&self, what: &str) -> Result<u64> {
        match self.kind {
            Kind::Uint(n) => Ok(n),
            _ => Err(malformed(format!("{what} is not an unsigned integer"))),
        }
    }

    fn array(&self, what: &str) -> Result<&[Raw<'a>]> {
        match &self.kind {
            Kind::Array(items) => Ok(items),
            _ => Err(malformed(format!("{what} is not an array"))),
        }
    }

    fn map(&self, what: &str) -> Result<&[(Raw<'a>, Raw<'a>)]> {
        match &self.kind {
            Kind::Map(entries) => Ok(entries),
            _ => Err(malformed(format!("{what} is not a map"))),
        }
    }

    /// The contents of `#6.24(bstr)`.
    fn tag24(&self, what: &str) -> Result<&[u8]> {
        match &self.kind {
            Kind::Tag(TAG_CBOR, inner) => inner.bytes(what),
            _ => Err(malformed(format!("{what} is not tag 24 (embedded CBOR)"))),
        }
    }

    /// The item decoded as a `ciborium` value.
    fn decode(&self) -> Result<Cbor> {
        ciborium::from_reader(self.bytes).map_err(|_| malformed("CBOR value"))
    }
}

fn take<'a>(buf: &'a [u8], pos: &mut usize, n: u64) -> Result<&'a [u8]> {
    let n = usize::try_from(n).map_err(|_| truncated())?;
    let end = pos.checked_add(n).ok_or_else(truncated)?;
    let slice = buf.get(*pos..end).ok_or_else(truncated)?;
    *pos = end;
    Ok(slice)
}

/// Whether an array or map has another member: below its count, or before its break.
fn more(buf: &[u8], pos: &mut usize, count: Option<u64>, read: usize) -> Result<bool> {
    match count {
        Some(n) => Ok((read as u64) < n),
        None => match buf.get(*pos) {
            Some(0xff) => {
                *pos += 1;
                Ok(false)
            }
            Some(_) => Ok(true),
            None => Err(truncated()),
        },
    }
}

/// The concatenated chunks of an indefinite-length byte or text string.
fn chunks(buf: &[u8], pos: &mut usize, major: u8) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        if buf.get(*pos) == Some(&0xff) {
            *pos += 1;
            return Ok(out);
        }
        match Raw::head(buf, pos)? {
            (m, _, Some(n)) if m == major => out.extend_from_slice(take(buf, pos, n)?),
            _ => return Err(malformed("bad chunk in an indefinite-length string")),
        }
    }
}

fn utf8(bytes: Vec<u8>) -> Result<String> {
    String::from_utf8(bytes).map_err(|_| malformed("invalid UTF-8 in a CBOR text string"))
}

#[cfg(test)]
mod tests;
