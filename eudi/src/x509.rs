//! X.509 for OpenID4VP: issuer and Document Signer chains checked against a tenant's trust
//! anchors with rustls-webpki, the HAIP `x509_hash` client identifier, the verifier's own
//! request-signing chain, PEM in and out, and the development chains the test issuers, the test
//! wallet and the benchmark sign with (made with rcgen).

use aws_lc_rs::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use time::OffsetDateTime;
use x509_parser::certificate::X509Certificate;

use crate::jose::{Alg, PublicKey, SigningKey};
use crate::{b64e, malformed, sha256, Error, Result};

/// The most certificates a presented chain may hold (as `x5c` allows).
const MAX_CHAIN: usize = 10;

/// `id-mdl-kp-mdlDS` (ISO/IEC 18013-5 Annex B): 1.0.18013.5.1.2, DER content octets.
const OID_MDOC_DS: &[u8] = &[0x28, 0x81, 0x8c, 0x5d, 0x05, 0x01, 0x02];
/// The same OID as rcgen components.
const OID_MDOC_DS_ARCS: &[u64] = &[1, 0, 18013, 5, 1, 2];

/// What a chain's leaf must be good for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Usage {
    /// An SD-JWT VC issuer or status list signer: any key usage allowing digitalSignature; no
    /// EKU requirement (if an EKU extension is present it is not checked).
    Issuer,
    /// An ISO 18013-5 mdoc Document Signer: EKU 1.0.18013.5.1.2 required when the leaf has an
    /// EKU extension.
    MdocDocumentSigner,
    /// The verifier's own request-signing certificate (checked by the test wallet): any.
    Verifier,
}

/// The EKU policy handed to webpki. webpki applies it to every certificate of the path.
///
/// `KeyUsage` only knows "this OID required" and "this OID required if an EKU is present", so
/// "no requirement" cannot be said with it: `required_if_present(<an unused OID>)` would refuse
/// every leaf carrying some other EKU (e.g. serverAuth). webpki exposes the
/// `ExtendedKeyUsageValidator` trait for exactly this, so `Any` implements it and accepts any
/// (or no) EKU list, still refusing one that is not well-formed DER.
enum Eku {
    Any,
    Policy(webpki::KeyUsage),
}

impl webpki::ExtendedKeyUsageValidator for Eku {
    fn validate(
        &self,
        iter: webpki::KeyPurposeIdIter<'_, '_>,
    ) -> std::result::Result<(), webpki::Error> {
        match self {
            Eku::Any => {
                for id in iter {
                    id?;
                }
                Ok(())
            }
            Eku::Policy(usage) => usage.validate(iter),
        }
    }
}

/// Verifies `chain` (leaf first, DER; intermediates may follow; a trailing root equal to one of
/// `roots` is tolerated) against `roots` (DER trust anchors) at `now` (Unix seconds) with
/// rustls-webpki, and answers the leaf's public key (P-256 or Ed25519 only).
///
/// For [`Usage::Verifier`], a leaf that is itself one of the roots is refused; for
/// [`Usage::Issuer`] and [`Usage::MdocDocumentSigner`], a leaf with a key usage extension must
/// allow digitalSignature.
pub fn verify_chain(
    chain: &[Vec<u8>],
    roots: &[Vec<u8>],
    now: i64,
    usage: Usage,
) -> Result<PublicKey> {
    let Some(leaf_der) = chain.first() else {
        return Err(malformed("an empty certificate chain"));
    };
    if chain.len() > MAX_CHAIN {
        return Err(malformed(
            "a certificate chain of more than 10 certificates",
        ));
    }
    if roots.is_empty() {
        return Err(Error::Untrusted("no trust anchors configured".into()));
    }
    if usage == Usage::Verifier && roots.iter().any(|r| r == leaf_der) {
        return Err(Error::Untrusted(
            "the leaf certificate is a trust anchor".into(),
        ));
    }
    let leaf_x509 = parse(leaf_der)?;
    if usage != Usage::Verifier {
        let key_usage = leaf_x509
            .key_usage()
            .map_err(|_| malformed("key usage extension"))?;
        if key_usage.is_some_and(|ku| !ku.value.digital_signature()) {
            return Err(Error::Untrusted(
                "the leaf's key usage does not allow digitalSignature".into(),
            ));
        }
    }
    let key = PublicKey::from_spki(leaf_x509.public_key())?;

    let mut rest = &chain[1..];
    if let Some((last, init)) = rest.split_last() {
        if roots.contains(last) {
            rest = init;
        }
    }
    // The DER wrappers are rustls-pki-types' `CertificateDer`, which this crate does not name
    // (it is not a direct dependency): the element type is inferred from webpki's signatures.
    let root_ders: Vec<_> = roots.iter().map(|r| r.as_slice().into()).collect();
    let anchors = root_ders
        .iter()
        .map(webpki::anchor_from_trusted_cert)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| malformed(format!("trust anchor: {e:?}")))?;
    let mut ders = root_ders.clone();
    ders.clear();
    ders.push(leaf_der.as_slice().into());
    ders.extend(rest.iter().map(|c| c.as_slice().into()));
    let leaf = webpki::EndEntityCert::try_from(&ders[0])
        .map_err(|e| malformed(format!("leaf certificate: {e:?}")))?;
    let eku = match usage {
        Usage::MdocDocumentSigner => {
            Eku::Policy(webpki::KeyUsage::required_if_present(OID_MDOC_DS))
        }
        Usage::Issuer | Usage::Verifier => Eku::Any,
    };
    leaf.verify_for_usage(
        webpki::ALL_VERIFICATION_ALGS,
        &anchors,
        &ders[1..],
        webpki_time(now)?,
        eku,
        None,
        None,
    )
    .map_err(|e| match e {
        webpki::Error::CertExpired { .. }
        | webpki::Error::CertNotValidYet { .. }
        | webpki::Error::InvalidCertValidity => {
            Error::Validity(format!("certificate chain: {e:?}"))
        }
        other => Error::Untrusted(format!("certificate chain: {other:?}")),
    })?;
    Ok(key)
}

/// `now` as webpki's time type; times before 1970 are refused.
fn webpki_time(now: i64) -> Result<rustls_pki_types::UnixTime> {
    let seconds = u64::try_from(now).map_err(|_| Error::Validity("a time before 1970".into()))?;
    Ok(rustls_pki_types::UnixTime::since_unix_epoch(
        std::time::Duration::from_secs(seconds),
    ))
}

/// Parses a DER certificate; trailing bytes are refused.
fn parse(der: &[u8]) -> Result<X509Certificate<'_>> {
    match x509_parser::parse_x509_certificate(der) {
        Ok(([], cert)) => Ok(cert),
        _ => Err(malformed("certificate")),
    }
}

/// The HAIP `x509_hash` client identifier value: base64url(SHA-256(leaf DER)).
pub fn x509_hash(leaf_der: &[u8]) -> String {
    b64e(sha256(leaf_der))
}

/// The blocks of a PEM text (RFC 7468), as (label, DER). Text outside the blocks is ignored.
fn pem_blocks(text: &str) -> Result<Vec<(String, Vec<u8>)>> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines().map(str::trim) {
        match open.take() {
            None => {
                if let Some(label) = line
                    .strip_prefix("-----BEGIN ")
                    .and_then(|l| l.strip_suffix("-----"))
                {
                    open = Some((label.to_string(), String::new()));
                }
            }
            Some((label, mut body)) => {
                if let Some(end) = line
                    .strip_prefix("-----END ")
                    .and_then(|l| l.strip_suffix("-----"))
                {
                    if end != label {
                        return Err(malformed("PEM END label differs from its BEGIN label"));
                    }
                    let der = STANDARD
                        .decode(body.as_bytes())
                        .map_err(|_| malformed("PEM base64"))?;
                    blocks.push((label, der));
                } else if line.starts_with("-----") {
                    return Err(malformed("PEM block without its END line"));
                } else {
                    body.push_str(line);
                    open = Some((label, body));
                }
            }
        }
    }
    if open.is_some() {
        return Err(malformed("PEM block without its END line"));
    }
    Ok(blocks)
}

/// Reads one or more certificates from PEM text (`-----BEGIN CERTIFICATE-----`); refuses any
/// other block, a certificate that does not parse, or an empty list.
pub fn certs_from_pem(pem: &str) -> Result<Vec<Vec<u8>>> {
    let mut certs = Vec::new();
    for (label, der) in pem_blocks(pem)? {
        if label != "CERTIFICATE" {
            return Err(malformed(format!(
                "PEM {label} where a CERTIFICATE was expected"
            )));
        }
        parse(&der)?;
        certs.push(der);
    }
    if certs.is_empty() {
        return Err(malformed("no PEM certificate"));
    }
    Ok(certs)
}

/// Reads a trust anchor root as configured (`x5cRoots` entries): standard base64 DER (as in
/// `x5c`) or PEM text holding exactly one certificate.
pub fn root_from_config(text: &str) -> Result<Vec<u8>> {
    let der = if text.contains("-----BEGIN") {
        let mut certs = certs_from_pem(text)?;
        if certs.len() != 1 {
            return Err(malformed("a trust anchor entry holds one certificate"));
        }
        certs.remove(0)
    } else {
        let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        STANDARD
            .decode(compact.as_bytes())
            .map_err(|_| malformed("trust anchor: neither PEM nor base64 DER"))?
    };
    parse(&der)?;
    Ok(der)
}

/// Reads a private key from PEM (PKCS#8 `PRIVATE KEY`, or SEC1 `EC PRIVATE KEY` for P-256)
/// and answers a [`SigningKey`] (P-256 or Ed25519). `EC PARAMETERS` and `CERTIFICATE` blocks
/// beside the key are ignored; exactly one key is expected.
pub fn signing_key_from_pem(pem: &str) -> Result<SigningKey> {
    let mut key = None;
    for (label, der) in pem_blocks(pem)? {
        let read = match label.as_str() {
            "PRIVATE KEY" => SigningKey::from_pkcs8(&der)?,
            "EC PRIVATE KEY" => {
                EcdsaKeyPair::from_private_key_der(&ECDSA_P256_SHA256_FIXED_SIGNING, &der)
                    .map(SigningKey::P256)
                    .map_err(|_| Error::Unsupported("an EC private key other than P-256".into()))?
            }
            "EC PARAMETERS" | "CERTIFICATE" => continue,
            "ENCRYPTED PRIVATE KEY" => {
                return Err(Error::Unsupported("encrypted private keys".into()))
            }
            other => {
                return Err(malformed(format!(
                    "PEM {other} where a private key was expected"
                )))
            }
        };
        if key.replace(read).is_some() {
            return Err(malformed("more than one private key in the PEM text"));
        }
    }
    key.ok_or_else(|| malformed("no PEM private key"))
}

/// Whether `cert`'s signature verifies with the public key of `issuer_der` under the signature
/// algorithm `cert` declares.
fn signed_by(cert: &X509Certificate<'_>, issuer_der: &[u8]) -> bool {
    let issuer_der = issuer_der.into();
    let Ok(issuer) = webpki::EndEntityCert::try_from(&issuer_der) else {
        return false;
    };
    let oid = cert.signature_algorithm.algorithm.as_bytes();
    let message = cert.tbs_certificate.as_ref();
    let signature = cert.signature_value.data.as_ref();
    webpki::ALL_VERIFICATION_ALGS.iter().any(|alg| {
        // The algorithm identifier's content: the OID TLV, then any parameters.
        let id = alg.signature_alg_id();
        let id = id.as_ref();
        id.len() >= 2
            && id[0] == 0x06
            && id.get(2..2 + usize::from(id[1])) == Some(oid)
            && issuer.verify_signature(*alg, message, signature).is_ok()
    })
}

/// Whether `der` is a self-signed certificate (a root).
pub fn is_self_signed(der: &[u8]) -> bool {
    parse(der).is_ok_and(|c| c.issuer().as_raw() == c.subject().as_raw() && signed_by(&c, der))
}

/// The leaf's subject alternative names: DNS names and URIs.
pub fn san_names(der: &[u8]) -> Result<(Vec<String>, Vec<String>)> {
    use x509_parser::extensions::GeneralName;
    let cert = parse(der)?;
    let (mut dns, mut uris) = (Vec::new(), Vec::new());
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for name in &san.value.general_names {
            match name {
                GeneralName::DNSName(d) => dns.push(d.to_ascii_lowercase()),
                GeneralName::URI(u) => uris.push((*u).to_owned()),
                _ => {}
            }
        }
    }
    Ok((dns, uris))
}

/// Checks a verifier certificate chain against its key before it is stored: the leaf's public
/// key equals `key.public_key()`, every certificate parses, the leaf is not self-signed (its
/// issuer differs from its subject, or its signature does not verify with its own key), the
/// chain links (each certificate's issuer is the next one's subject and is signed by it), and
/// the leaf is valid at `now`. Answers the leaf's notAfter (Unix seconds).
pub fn check_verifier_chain(chain: &[Vec<u8>], key: &SigningKey, now: i64) -> Result<i64> {
    if chain.is_empty() || chain.len() > MAX_CHAIN {
        return Err(malformed("a verifier chain holds 1 to 10 certificates"));
    }
    let certs = chain
        .iter()
        .map(|der| parse(der))
        .collect::<Result<Vec<_>>>()?;
    let leaf = &certs[0];
    if PublicKey::from_spki(leaf.public_key())? != key.public_key() {
        return Err(Error::Untrusted(
            "the leaf certificate is not for the signing key".into(),
        ));
    }
    if leaf.issuer().as_raw() == leaf.subject().as_raw() && signed_by(leaf, &chain[0]) {
        return Err(Error::Untrusted(
            "the leaf certificate is self-signed".into(),
        ));
    }
    for (i, pair) in certs.windows(2).enumerate() {
        if pair[0].issuer().as_raw() != pair[1].subject().as_raw()
            || !signed_by(&pair[0], &chain[i + 1])
        {
            return Err(Error::Untrusted(format!(
                "certificate {i} is not issued by certificate {}",
                i + 1
            )));
        }
    }
    let validity = leaf.validity();
    let (not_before, not_after) = (
        validity.not_before.timestamp(),
        validity.not_after.timestamp(),
    );
    if now < not_before || now > not_after {
        return Err(Error::Validity(
            "the leaf certificate is not valid now".into(),
        ));
    }
    Ok(not_after)
}

/// A development chain, made with rcgen: a P-256 root CA and a leaf signed by it.
#[derive(Clone)]
pub struct DevChain {
    /// The self-signed root (CA:true, pathlen 0), DER.
    pub root_der: Vec<u8>,
    /// The leaf (CA:false, digitalSignature), DER.
    pub leaf_der: Vec<u8>,
    /// The leaf's private key, PKCS#8 DER (P-256 for [`dev_chain`]).
    pub leaf_key_pkcs8: Vec<u8>,
}

impl std::fmt::Debug for DevChain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevChain")
            .field("leaf", &x509_hash(&self.leaf_der))
            .finish_non_exhaustive()
    }
}

/// What [`build_chain`] puts in the leaf.
struct LeafSpec<'a> {
    common_name: &'a str,
    dns_name: Option<&'a str>,
    alg: Alg,
    ekus: Vec<ExtendedKeyUsagePurpose>,
    not_before: i64,
    not_after: i64,
}

fn rcgen_error(e: rcgen::Error) -> Error {
    Error::Unsupported(format!("certificate generation: {e}"))
}

fn build_chain(spec: LeafSpec<'_>) -> Result<DevChain> {
    let at = |t: i64| {
        OffsetDateTime::from_unix_timestamp(t)
            .map_err(|_| Error::Validity("certificate validity out of range".into()))
    };
    let (not_before, not_after) = (at(spec.not_before)?, at(spec.not_after)?);
    if not_before >= not_after {
        return Err(Error::Validity("notBefore must precede notAfter".into()));
    }

    let root_key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(rcgen_error)?;
    let mut root = CertificateParams::new(Vec::<String>::new()).map_err(rcgen_error)?;
    root.distinguished_name = rcgen::DistinguishedName::new();
    root.distinguished_name
        .push(DnType::CommonName, format!("{} Root CA", spec.common_name));
    root.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    root.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    root.not_before = not_before;
    root.not_after = not_after;
    let root_cert = root.self_signed(&root_key).map_err(rcgen_error)?;

    let leaf_key = match spec.alg {
        Alg::Es256 => KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256),
        Alg::EdDsa => KeyPair::generate_for(&rcgen::PKCS_ED25519),
    }
    .map_err(rcgen_error)?;
    let sans: Vec<String> = spec.dns_name.map(str::to_string).into_iter().collect();
    let mut leaf = CertificateParams::new(sans).map_err(rcgen_error)?;
    leaf.distinguished_name = rcgen::DistinguishedName::new();
    leaf.distinguished_name
        .push(DnType::CommonName, spec.common_name);
    leaf.is_ca = IsCa::ExplicitNoCa;
    leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    leaf.extended_key_usages = spec.ekus;
    leaf.use_authority_key_identifier_extension = true;
    leaf.not_before = not_before;
    leaf.not_after = not_after;
    let issuer = Issuer::new(root, root_key);
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer).map_err(rcgen_error)?;

    Ok(DevChain {
        root_der: root_cert.der().to_vec(),
        leaf_der: leaf_cert.der().to_vec(),
        leaf_key_pkcs8: leaf_key.serialize_der(),
    })
}

/// Whether `name` can be a dNSName: dot-separated labels of letters, digits and hyphens.
fn is_dns_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// A development chain: a root CA (self-signed, CA:true, pathlen 0) and a leaf signed by it
/// (CA:false, digitalSignature, SAN dNSName `dns_name`, CN `common_name`), both P-256, valid
/// from an hour ago for `days`. It reads the clock (the one exception to this crate's
/// purity: it is for the admin CLI and development setups, which have no `now` to pass).
pub fn dev_chain(common_name: &str, dns_name: &str, days: u32) -> Result<DevChain> {
    let now = OffsetDateTime::now_utc().unix_timestamp();
    build_chain(LeafSpec {
        common_name,
        dns_name: Some(dns_name),
        alg: Alg::Es256,
        ekus: Vec::new(),
        not_before: now - 3600,
        not_after: now + i64::from(days) * 86_400,
    })
}

/// For test issuers and the benchmark: like [`dev_chain`], but the leaf's key algorithm is
/// `alg` (ES256 → P-256, EdDSA → Ed25519), both certificates are valid from `not_before` to
/// `not_after` (Unix seconds), the leaf carries EKU 1.0.18013.5.1.2 for
/// [`Usage::MdocDocumentSigner`], and a SAN dNSName equal to `common_name` when that is a
/// DNS name.
pub fn issuer_chain(
    common_name: &str,
    alg: Alg,
    usage: Usage,
    not_before: i64,
    not_after: i64,
) -> Result<DevChain> {
    let ekus = match usage {
        Usage::MdocDocumentSigner => {
            vec![ExtendedKeyUsagePurpose::Other(OID_MDOC_DS_ARCS.to_vec())]
        }
        Usage::Issuer | Usage::Verifier => Vec::new(),
    };
    build_chain(LeafSpec {
        common_name,
        dns_name: is_dns_name(common_name).then_some(common_name),
        alg,
        ekus,
        not_before,
        not_after,
    })
}

/// PEM encoding (RFC 7468) of `der` under `label` (e.g. `CERTIFICATE`, `PRIVATE KEY`), with
/// 64-character lines, for the admin CLI to write out.
pub fn to_pem(label: &str, der: &[u8]) -> String {
    let body = STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in body.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> i64 {
        OffsetDateTime::now_utc().unix_timestamp()
    }

    fn not_after(der: &[u8]) -> i64 {
        parse(der).unwrap().validity().not_after.timestamp()
    }

    #[test]
    fn webpki_time_is_now() {
        for t in [0, 1, 1_700_000_000, 253_402_300_799] {
            assert_eq!(webpki_time(t).unwrap().as_secs(), t as u64);
        }
        assert!(webpki_time(-1).is_err());
    }

    #[test]
    fn dev_chain_verifies_against_its_root_only() {
        let dev = dev_chain("Verifier", "verifier.example", 30).unwrap();
        let other = dev_chain("Other", "other.example", 30).unwrap();
        let chain = vec![dev.leaf_der.clone()];
        let own = vec![dev.root_der.clone()];
        let strange = vec![other.root_der.clone()];
        let key = verify_chain(&chain, &own, now(), Usage::Verifier).unwrap();
        let signing = SigningKey::from_pkcs8(&dev.leaf_key_pkcs8).unwrap();
        assert_eq!(key, signing.public_key());
        // A trailing copy of the root is tolerated.
        let with_root = vec![dev.leaf_der.clone(), dev.root_der.clone()];
        verify_chain(&with_root, &own, now(), Usage::Verifier).unwrap();
        // Two anchors, one of them right.
        let roots = [other.root_der.clone(), dev.root_der.clone()];
        verify_chain(&chain, &roots, now(), Usage::Issuer).unwrap();
        assert!(matches!(
            verify_chain(&chain, &strange, now(), Usage::Verifier),
            Err(Error::Untrusted(_))
        ));
        assert!(verify_chain(&[], &own, now(), Usage::Verifier).is_err());
        assert!(verify_chain(&chain, &[], now(), Usage::Verifier).is_err());
    }

    #[test]
    fn a_leaf_that_is_a_root_is_refused_for_verifier() {
        let dev = dev_chain("Verifier", "verifier.example", 30).unwrap();
        let leaf = vec![dev.leaf_der.clone()];
        assert!(matches!(
            verify_chain(&leaf, &leaf, now(), Usage::Verifier),
            Err(Error::Untrusted(_))
        ));
        // A self-signed CA as its own leaf is refused by webpki for every usage.
        let root = vec![dev.root_der.clone()];
        assert!(verify_chain(&root, &root, now(), Usage::Issuer).is_err());
    }

    #[test]
    fn expired_and_not_yet_valid_chains_are_refused() {
        let dev = dev_chain("Verifier", "verifier.example", 1).unwrap();
        let chain = vec![dev.leaf_der.clone()];
        let roots = [dev.root_der.clone()];
        let end = not_after(&dev.leaf_der);
        verify_chain(&chain, &roots, end - 10, Usage::Verifier).unwrap();
        assert!(matches!(
            verify_chain(&chain, &roots, end + 1, Usage::Verifier),
            Err(Error::Validity(_))
        ));
        assert!(matches!(
            verify_chain(&chain, &roots, now() - 7200, Usage::Verifier),
            Err(Error::Validity(_))
        ));
    }

    #[test]
    fn mdoc_document_signer_chains_verify_for_both_algorithms() {
        let t = now();
        for alg in [Alg::Es256, Alg::EdDsa] {
            let dev = issuer_chain(
                "Test IACA",
                alg,
                Usage::MdocDocumentSigner,
                t - 60,
                t + 3600,
            )
            .unwrap();
            let chain = vec![dev.leaf_der.clone()];
            let roots = [dev.root_der.clone()];
            let key = verify_chain(&chain, &roots, t, Usage::MdocDocumentSigner).unwrap();
            assert_eq!(key.alg(), alg);
            assert_eq!(
                key,
                SigningKey::from_pkcs8(&dev.leaf_key_pkcs8)
                    .unwrap()
                    .public_key()
            );
            // The issuer usage does not look at the EKU.
            verify_chain(&chain, &roots, t, Usage::Issuer).unwrap();
        }
    }

    #[test]
    fn the_eku_rule_per_usage() {
        let t = now();
        let server_auth = build_chain(LeafSpec {
            common_name: "tls.example",
            dns_name: Some("tls.example"),
            alg: Alg::Es256,
            ekus: vec![ExtendedKeyUsagePurpose::ServerAuth],
            not_before: t - 60,
            not_after: t + 3600,
        })
        .unwrap();
        let chain = vec![server_auth.leaf_der.clone()];
        let roots = [server_auth.root_der.clone()];
        assert!(matches!(
            verify_chain(&chain, &roots, t, Usage::MdocDocumentSigner),
            Err(Error::Untrusted(_))
        ));
        verify_chain(&chain, &roots, t, Usage::Issuer).unwrap();
        verify_chain(&chain, &roots, t, Usage::Verifier).unwrap();
        // No EKU at all: accepted for a Document Signer (required only when present).
        let plain = issuer_chain(
            "issuer.example",
            Alg::Es256,
            Usage::Issuer,
            t - 60,
            t + 3600,
        )
        .unwrap();
        verify_chain(
            std::slice::from_ref(&plain.leaf_der),
            std::slice::from_ref(&plain.root_der),
            t,
            Usage::MdocDocumentSigner,
        )
        .unwrap();
        // The SAN carries the common name when it is a DNS name.
        let leaf = parse(&plain.leaf_der).unwrap();
        let san = leaf.subject_alternative_name().unwrap().unwrap();
        assert_eq!(
            format!("{:?}", san.value.general_names),
            r#"[DNSName("issuer.example")]"#
        );
    }

    #[test]
    fn x509_hash_is_base64url_sha256() {
        let dev = dev_chain("Verifier", "verifier.example", 1).unwrap();
        assert_eq!(x509_hash(&dev.leaf_der), b64e(sha256(&dev.leaf_der)));
        assert_eq!(x509_hash(&dev.leaf_der).len(), 43);
    }

    #[test]
    fn pem_and_config_round_trips() {
        let dev = dev_chain("Verifier", "verifier.example", 1).unwrap();
        let pem = format!(
            "leaf\n{}{}",
            to_pem("CERTIFICATE", &dev.leaf_der),
            to_pem("CERTIFICATE", &dev.root_der)
        );
        assert_eq!(
            certs_from_pem(&pem).unwrap(),
            vec![dev.leaf_der.clone(), dev.root_der.clone()]
        );
        assert!(certs_from_pem("").is_err());
        assert!(certs_from_pem(&STANDARD.encode(&dev.root_der)).is_err());
        assert!(certs_from_pem(&to_pem("PRIVATE KEY", &dev.leaf_key_pkcs8)).is_err());
        assert!(certs_from_pem(&to_pem("CERTIFICATE", b"not a certificate")).is_err());
        let truncated =
            to_pem("CERTIFICATE", &dev.root_der).replace("-----END CERTIFICATE-----\n", "");
        assert!(certs_from_pem(&truncated).is_err());

        let root_pem = to_pem("CERTIFICATE", &dev.root_der);
        assert_eq!(root_from_config(&root_pem).unwrap(), dev.root_der);
        assert_eq!(
            root_from_config(&STANDARD.encode(&dev.root_der)).unwrap(),
            dev.root_der
        );
        assert!(
            root_from_config(&pem).is_err(),
            "two certificates in one entry"
        );
        assert!(root_from_config("bm90IGEgY2VydA==").is_err());
        assert!(root_from_config("%%").is_err());
    }

    #[test]
    fn signing_keys_from_pem() {
        for alg in [&rcgen::PKCS_ECDSA_P256_SHA256, &rcgen::PKCS_ED25519] {
            let key = KeyPair::generate_for(alg).unwrap();
            let read = signing_key_from_pem(&key.serialize_pem()).unwrap();
            let expected = SigningKey::from_pkcs8(&key.serialize_der()).unwrap();
            assert_eq!(read.public_key(), expected.public_key());
        }
        // SEC1, as `openssl ecparam -genkey` writes it (with its parameters block).
        let SigningKey::P256(p256) = SigningKey::generate(Alg::Es256).unwrap() else {
            unreachable!()
        };
        use aws_lc_rs::encoding::AsDer;
        let sec1 = p256.private_key().as_der().unwrap();
        let pem = format!(
            "{}{}",
            to_pem(
                "EC PARAMETERS",
                &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07]
            ),
            to_pem("EC PRIVATE KEY", sec1.as_ref())
        );
        let read = signing_key_from_pem(&pem).unwrap();
        assert_eq!(read.alg(), Alg::Es256);
        let dev = dev_chain("Verifier", "verifier.example", 1).unwrap();
        assert!(signing_key_from_pem(&to_pem("CERTIFICATE", &dev.leaf_der)).is_err());
        let two = format!(
            "{}{}",
            to_pem("PRIVATE KEY", &dev.leaf_key_pkcs8),
            to_pem("PRIVATE KEY", &dev.leaf_key_pkcs8)
        );
        assert!(signing_key_from_pem(&two).is_err());
    }

    #[test]
    fn verifier_chains_are_checked_before_they_are_stored() {
        let dev = dev_chain("Verifier", "verifier.example", 30).unwrap();
        let key = SigningKey::from_pkcs8(&dev.leaf_key_pkcs8).unwrap();
        let t = now();
        let chain = vec![dev.leaf_der.clone(), dev.root_der.clone()];
        assert_eq!(
            check_verifier_chain(&chain, &key, t).unwrap(),
            not_after(&dev.leaf_der)
        );
        assert!(check_verifier_chain(&chain[..1], &key, t).is_ok());
        // Another key.
        let other = SigningKey::generate(Alg::Es256).unwrap();
        assert!(matches!(
            check_verifier_chain(&chain, &other, t),
            Err(Error::Untrusted(_))
        ));
        // Not linked: the leaf followed by another chain's root.
        let stranger = dev_chain("Other", "other.example", 30).unwrap();
        let unlinked = vec![dev.leaf_der.clone(), stranger.root_der.clone()];
        assert!(matches!(
            check_verifier_chain(&unlinked, &key, t),
            Err(Error::Untrusted(_))
        ));
        // Same issuer name, another key: the signature link is what refuses it.
        let namesake = dev_chain("Verifier", "verifier.example", 30).unwrap();
        let forged = vec![dev.leaf_der.clone(), namesake.root_der.clone()];
        assert!(matches!(
            check_verifier_chain(&forged, &key, t),
            Err(Error::Untrusted(_))
        ));
        // Outside the leaf's validity.
        assert!(matches!(
            check_verifier_chain(&chain, &key, not_after(&dev.leaf_der) + 1),
            Err(Error::Validity(_))
        ));
        assert!(check_verifier_chain(&[], &key, t).is_err());
        assert!(check_verifier_chain(&[b"junk".to_vec()], &key, t).is_err());
        // A self-signed leaf.
        let self_key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let params = CertificateParams::new(vec!["verifier.example".to_string()]).unwrap();
        let self_signed = params.self_signed(&self_key).unwrap();
        let signing = SigningKey::from_pkcs8(&self_key.serialize_der()).unwrap();
        assert!(matches!(
            check_verifier_chain(&[self_signed.der().to_vec()], &signing, t),
            Err(Error::Untrusted(_))
        ));
    }

    #[test]
    fn the_mdoc_eku_oid_encoding_matches_rcgen() {
        let t = now();
        let dev = issuer_chain(
            "IACA",
            Alg::Es256,
            Usage::MdocDocumentSigner,
            t - 60,
            t + 60,
        )
        .unwrap();
        let leaf = parse(&dev.leaf_der).unwrap();
        let eku = leaf.extended_key_usage().unwrap().unwrap();
        assert_eq!(eku.value.other.len(), 1);
        assert_eq!(eku.value.other[0].as_bytes(), OID_MDOC_DS);
        assert_eq!(eku.value.other[0].to_id_string(), "1.0.18013.5.1.2");
    }
}
