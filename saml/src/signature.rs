//! XML signature checks over `bergshamra`: the algorithm allowlist, the IdP's keys, and
//! the rule that a signature counts only for the element that carries it and that its one
//! Reference names (an enveloped signature over the Response or the Assertion).

use crate::xml::{self, DS};
use crate::SamlError;
use base64::Engine;
use bergshamra::core::algorithm as alg;
use bergshamra::{DsigContext, KeysManager, VerifyResult};
use uppsala::{Document, NodeId};

/// Signature methods accepted (no SHA-1, no DSA, no HMAC).
const SIGNATURE_METHODS: &[&str] = &[
    alg::RSA_SHA256,
    alg::RSA_SHA384,
    alg::RSA_SHA512,
    alg::ECDSA_SHA256,
    alg::ECDSA_SHA384,
    alg::ECDSA_SHA512,
    alg::RSA_PSS_SHA256,
    alg::RSA_PSS_SHA384,
    alg::RSA_PSS_SHA512,
];
/// Digests accepted.
const DIGESTS: &[&str] = &[alg::SHA256, alg::SHA384, alg::SHA512];
/// Canonicalisations accepted for SignedInfo (comments never count).
const C14NS: &[&str] = &[alg::EXC_C14N, alg::C14N];
/// Transforms accepted in a Reference.
const TRANSFORMS: &[&str] = &[alg::ENVELOPED_SIGNATURE, alg::EXC_C14N, alg::C14N];

/// The IdP's certificates as a bergshamra key set.
pub fn idp_keys(certs: &[String]) -> Result<KeysManager, SamlError> {
    let mut keys = KeysManager::new();
    for cert in certs {
        let der = base64::engine::general_purpose::STANDARD
            .decode(xml::cert_body(cert))
            .map_err(|e| SamlError::Config(format!("IdP certificate is not base64: {e}")))?;
        let key = bergshamra::keys::loader::load_x509_cert_der(&der)
            .map_err(|e| SamlError::Config(format!("IdP certificate: {e}")))?;
        keys.add_key(key);
    }
    if keys.is_empty() {
        return Err(SamlError::Config("no IdP certificate configured".into()));
    }
    Ok(keys)
}

/// The `ds:Signature` child of `element`, if any (several are refused).
pub fn signature_of(doc: &Document<'_>, element: NodeId) -> Result<Option<NodeId>, SamlError> {
    let sigs = xml::children(doc, element, DS, "Signature");
    match sigs.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(*one)),
        _ => Err(SamlError::Wrapped(
            "more than one signature on an element".into(),
        )),
    }
}

fn algorithm_of(doc: &Document<'_>, node: NodeId) -> Result<String, SamlError> {
    xml::attr(doc, node, "Algorithm")
        .map(str::to_owned)
        .ok_or_else(|| SamlError::Malformed("an Algorithm attribute is missing".into()))
}

fn one_child(doc: &Document<'_>, node: NodeId, local: &str) -> Result<NodeId, SamlError> {
    xml::child(doc, node, DS, local)?
        .ok_or_else(|| SamlError::Malformed(format!("signature without {local}")))
}

/// Refuses any algorithm outside the allowlist, and any signature with other than exactly
/// one Reference.
fn check_algorithms(doc: &Document<'_>, sig: NodeId) -> Result<(), SamlError> {
    let signed_info = one_child(doc, sig, "SignedInfo")?;
    let c14n = algorithm_of(doc, one_child(doc, signed_info, "CanonicalizationMethod")?)?;
    if !C14NS.contains(&c14n.as_str()) {
        return Err(SamlError::AlgorithmRefused(c14n));
    }
    let method = algorithm_of(doc, one_child(doc, signed_info, "SignatureMethod")?)?;
    if !SIGNATURE_METHODS.contains(&method.as_str()) {
        return Err(SamlError::AlgorithmRefused(method));
    }
    let references = xml::children(doc, signed_info, DS, "Reference");
    let [reference] = references.as_slice() else {
        return Err(SamlError::Wrapped(
            "a signature must have exactly one Reference".into(),
        ));
    };
    let digest = algorithm_of(doc, one_child(doc, *reference, "DigestMethod")?)?;
    if !DIGESTS.contains(&digest.as_str()) {
        return Err(SamlError::AlgorithmRefused(digest));
    }
    if let Some(transforms) = xml::child(doc, *reference, DS, "Transforms")? {
        for t in xml::children(doc, transforms, DS, "Transform") {
            let t = algorithm_of(doc, t)?;
            if !TRANSFORMS.contains(&t.as_str()) {
                return Err(SamlError::AlgorithmRefused(t));
            }
        }
    }
    Ok(())
}

/// Verifies the signature `sig`, a child of `signed`, and that its one Reference is
/// `#<signed's ID>` and resolved to `signed` itself. `Ok(())` means `signed` (and all it
/// contains) is what the IdP signed.
pub fn verify_enveloped(
    doc: &Document<'_>,
    source: &str,
    keys: KeysManager,
    signed: NodeId,
    sig: NodeId,
) -> Result<(), SamlError> {
    check_algorithms(doc, sig)?;
    let id = xml::attr(doc, signed, "ID")
        .filter(|id| !id.is_empty())
        .ok_or_else(|| SamlError::Malformed("signed element without ID".into()))?;
    let ctx = DsigContext::new(keys);
    let results =
        bergshamra::dsig::verify::verify_all_document_with_source(&ctx, doc, Some(source))
            .map_err(|e| match e {
                bergshamra::Error::XmlStructure(s) if s.contains("duplicate ID") => {
                    SamlError::Wrapped(s)
                }
                other => SamlError::SignatureInvalid(other.to_string()),
            })?;
    for result in results {
        match result {
            VerifyResult::Valid {
                signature_node,
                references,
                ..
            } if signature_node == sig => {
                let [reference] = references.as_slice() else {
                    return Err(SamlError::Wrapped("not exactly one reference".into()));
                };
                if reference.uri != format!("#{id}") || reference.resolved_node != Some(signed) {
                    return Err(SamlError::Wrapped(
                        "the signature does not cover the element that carries it".into(),
                    ));
                }
                if !reference.digest_verified {
                    return Err(SamlError::SignatureInvalid("digest not verified".into()));
                }
                return Ok(());
            }
            _ => {}
        }
    }
    Err(SamlError::SignatureInvalid(
        "no valid signature by a configured IdP key".into(),
    ))
}
