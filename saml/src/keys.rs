//! `sp_keypair`: the SP's RSA key and self-signed certificate, which the IdP encrypts
//! assertions to (published in the SP metadata's KeyDescriptor use="encryption").

use crate::SamlError;
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair, RsaKeySize};

/// A fresh RSA 3072 key (PKCS#8 PEM) and a self-signed certificate (PEM) for it, valid
/// ten years from yesterday.
pub fn sp_keypair(common_name: &str) -> Result<(String, String), SamlError> {
    let key = KeyPair::generate_rsa_for(&rcgen::PKCS_RSA_SHA256, RsaKeySize::_3072)
        .map_err(|e| SamlError::Config(format!("key generation: {e}")))?;
    let mut params = CertificateParams::new(Vec::<String>::new())
        .map_err(|e| SamlError::Config(e.to_string()))?;
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, common_name);
    params.distinguished_name = name;
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::days(1);
    params.not_after = now + time::Duration::days(3650);
    let cert = params
        .self_signed(&key)
        .map_err(|e| SamlError::Config(format!("certificate: {e}")))?;
    Ok((key.serialize_pem(), cert.pem()))
}
