//! JOSE as OpenID4VP uses it: compact JWS with ES256 and EdDSA (RFC 7515, RFC 8037, with
//! `Ed25519` accepted as the fully-specified name of `EdDSA`), JWK public keys and their
//! RFC 7638 thumbprints, and compact JWE with ECDH-ES direct key agreement on P-256 and
//! A128GCM or A256GCM content encryption (RFC 7516, RFC 7518 §4.6 and §5.3).

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM, AES_256_GCM};
use aws_lc_rs::agreement::{self, UnparsedPublicKey as AgreementPublic, ECDH_P256};
use aws_lc_rs::encoding::{AsBigEndian, EcPrivateKeyBin};
use aws_lc_rs::kdf::{get_sskdf_digest_algorithm, sskdf_digest, SskdfDigestAlgorithmId};
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use aws_lc_rs::signature::{
    self, EcdsaKeyPair, Ed25519KeyPair, KeyPair, UnparsedPublicKey, ECDSA_P256_SHA256_FIXED,
    ECDSA_P256_SHA256_FIXED_SIGNING,
};
use serde_json::{json, Map, Value};

use crate::{b64d, b64e, malformed, sha256, Error, Result};

/// The signature algorithms accepted from issuers and holders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alg {
    Es256,
    EdDsa,
}

impl Alg {
    /// Reads a JOSE `alg` (or a trust anchor's `allowedAlgs` entry). `Ed25519` is the
    /// fully-specified name of `EdDSA` with that curve (RFC 9864) and means the same here.
    pub fn from_name(name: &str) -> Result<Alg> {
        match name {
            "ES256" => Ok(Alg::Es256),
            "EdDSA" | "Ed25519" => Ok(Alg::EdDsa),
            other => Err(Error::Unsupported(format!("alg {other}"))),
        }
    }

    /// The name written in headers and configuration.
    pub fn name(self) -> &'static str {
        match self {
            Alg::Es256 => "ES256",
            Alg::EdDsa => "EdDSA",
        }
    }

    /// The COSE algorithm identifier (RFC 9053): ES256 -7, EdDSA -8.
    pub fn cose(self) -> i64 {
        match self {
            Alg::Es256 => -7,
            Alg::EdDsa => -8,
        }
    }
}

/// A public key that can check an issuer's or a holder's signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PublicKey {
    /// SEC1 uncompressed point (`04 || x || y`, 65 bytes).
    P256(Vec<u8>),
    /// The 32 bytes of RFC 8032.
    Ed25519(Vec<u8>),
}

const OID_EC_PUBLIC_KEY: &str = "1.2.840.10045.2.1";
const OID_P256: &str = "1.2.840.10045.3.1.7";
const OID_ED25519: &str = "1.3.101.112";

impl PublicKey {
    /// The P-256 key with these affine coordinates (32 bytes each).
    pub fn p256_from_xy(x: &[u8], y: &[u8]) -> Result<PublicKey> {
        if x.len() != 32 || y.len() != 32 {
            return Err(malformed("P-256 coordinates must be 32 bytes"));
        }
        let mut point = Vec::with_capacity(65);
        point.push(4);
        point.extend_from_slice(x);
        point.extend_from_slice(y);
        Ok(PublicKey::P256(point))
    }

    /// Reads a JWK: `kty: EC` on `P-256`, or `kty: OKP` on `Ed25519`. Private members are
    /// refused (a JWK that carries `d` was never meant to be published).
    pub fn from_jwk(jwk: &Value) -> Result<PublicKey> {
        let field = |name: &str| jwk.get(name).and_then(Value::as_str);
        if jwk.get("d").is_some() {
            return Err(malformed("a public JWK must not carry a private key"));
        }
        match (field("kty"), field("crv")) {
            (Some("EC"), Some("P-256")) => {
                let x = b64d(field("x").ok_or_else(|| malformed("JWK x"))?)?;
                let y = b64d(field("y").ok_or_else(|| malformed("JWK y"))?)?;
                PublicKey::p256_from_xy(&x, &y)
            }
            (Some("OKP"), Some("Ed25519")) => {
                let x = b64d(field("x").ok_or_else(|| malformed("JWK x"))?)?;
                if x.len() != 32 {
                    return Err(malformed("Ed25519 keys are 32 bytes"));
                }
                Ok(PublicKey::Ed25519(x))
            }
            (kty, crv) => Err(Error::Unsupported(format!(
                "JWK kty {} crv {}",
                kty.unwrap_or("-"),
                crv.unwrap_or("-")
            ))),
        }
    }

    /// The key as a public JWK (only the members RFC 7638 hashes).
    pub fn to_jwk(&self) -> Value {
        match self {
            PublicKey::P256(point) => json!({
                "kty": "EC",
                "crv": "P-256",
                "x": b64e(&point[1..33]),
                "y": b64e(&point[33..65]),
            }),
            PublicKey::Ed25519(x) => json!({"kty": "OKP", "crv": "Ed25519", "x": b64e(x)}),
        }
    }

    /// The RFC 7638 SHA-256 thumbprint.
    pub fn thumbprint(&self) -> [u8; 32] {
        let canonical = match self {
            PublicKey::P256(point) => format!(
                r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
                b64e(&point[1..33]),
                b64e(&point[33..65])
            ),
            PublicKey::Ed25519(x) => {
                format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{}"}}"#, b64e(x))
            }
        };
        sha256(canonical)
    }

    /// Reads a DER SubjectPublicKeyInfo.
    pub fn from_spki_der(der: &[u8]) -> Result<PublicKey> {
        use x509_parser::prelude::FromDer;
        let (_, spki) = x509_parser::x509::SubjectPublicKeyInfo::from_der(der)
            .map_err(|_| malformed("SubjectPublicKeyInfo"))?;
        PublicKey::from_spki(&spki)
    }

    pub(crate) fn from_spki(spki: &x509_parser::x509::SubjectPublicKeyInfo<'_>) -> Result<Self> {
        let alg = spki.algorithm.algorithm.to_id_string();
        let key = spki.subject_public_key.data.as_ref();
        if alg == OID_EC_PUBLIC_KEY {
            let curve = spki
                .algorithm
                .parameters
                .as_ref()
                .and_then(|p| p.as_oid().ok())
                .map(|oid| oid.to_id_string());
            if curve.as_deref() != Some(OID_P256) {
                return Err(Error::Unsupported("EC keys other than P-256".into()));
            }
            if key.len() != 65 || key[0] != 4 {
                return Err(malformed("P-256 point"));
            }
            Ok(PublicKey::P256(key.to_vec()))
        } else if alg == OID_ED25519 {
            if key.len() != 32 {
                return Err(malformed("Ed25519 key"));
            }
            Ok(PublicKey::Ed25519(key.to_vec()))
        } else {
            Err(Error::Unsupported(format!("key algorithm {alg}")))
        }
    }

    /// The subject public key of a DER certificate.
    pub fn from_cert_der(der: &[u8]) -> Result<PublicKey> {
        let (_, cert) =
            x509_parser::parse_x509_certificate(der).map_err(|_| malformed("certificate"))?;
        PublicKey::from_spki(cert.public_key())
    }

    /// The one algorithm this key signs with.
    pub fn alg(&self) -> Alg {
        match self {
            PublicKey::P256(_) => Alg::Es256,
            PublicKey::Ed25519(_) => Alg::EdDsa,
        }
    }

    /// Checks `sig` over `msg`; ES256 signatures are the 64-byte `r || s` of RFC 7518 §3.4
    /// (COSE uses the same form). A key of another type than `alg` is refused.
    pub fn verify(&self, alg: Alg, msg: &[u8], sig: &[u8]) -> Result<()> {
        if alg != self.alg() {
            return Err(Error::Signature(format!(
                "{} signature for a {} key",
                alg.name(),
                self.alg().name()
            )));
        }
        let checked = match self {
            PublicKey::P256(point) => {
                UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point).verify(msg, sig)
            }
            PublicKey::Ed25519(x) => {
                UnparsedPublicKey::new(&signature::ED25519, x).verify(msg, sig)
            }
        };
        checked.map_err(|_| Error::Signature(format!("{} signature", alg.name())))
    }
}

/// A compact JWS, decoded but not yet verified.
#[derive(Clone, Debug)]
pub struct Jws {
    pub header: Map<String, Value>,
    pub payload: Vec<u8>,
    signing_input: String,
    signature: Vec<u8>,
}

impl Jws {
    /// Splits and decodes `header.payload.signature`. Nothing is trusted yet.
    pub fn decode(compact: &str) -> Result<Jws> {
        let mut parts = compact.split('.');
        let (Some(h), Some(p), Some(s), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(malformed("a compact JWS has three parts"));
        };
        let header: Map<String, Value> =
            serde_json::from_slice(&b64d(h)?).map_err(|_| malformed("JWS header"))?;
        if header.contains_key("crit") {
            return Err(Error::Unsupported("crit header parameters".into()));
        }
        Ok(Jws {
            header,
            payload: b64d(p)?,
            signing_input: format!("{h}.{p}"),
            signature: b64d(s)?,
        })
    }

    /// The header's `alg`, read as an [`Alg`].
    pub fn alg(&self) -> Result<Alg> {
        Alg::from_name(self.header_str("alg").ok_or_else(|| malformed("JWS alg"))?)
    }

    /// A string member of the protected header.
    pub fn header_str(&self, name: &str) -> Option<&str> {
        self.header.get(name).and_then(Value::as_str)
    }

    /// The `x5c` chain (leaf first), decoded from standard base64 DER.
    pub fn x5c(&self) -> Result<Option<Vec<Vec<u8>>>> {
        use base64::engine::general_purpose::STANDARD;
        use base64::Engine;
        let Some(list) = self.header.get("x5c") else {
            return Ok(None);
        };
        let list = list.as_array().ok_or_else(|| malformed("x5c"))?;
        if list.is_empty() || list.len() > 10 {
            return Err(malformed("x5c must hold 1 to 10 certificates"));
        }
        list.iter()
            .map(|c| {
                c.as_str()
                    .and_then(|c| STANDARD.decode(c).ok())
                    .ok_or_else(|| malformed("x5c entry"))
            })
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }

    /// The payload as a JSON object.
    pub fn claims(&self) -> Result<Map<String, Value>> {
        serde_json::from_slice(&self.payload)
            .map_err(|_| malformed("JWS payload is not a JSON object"))
    }

    /// Checks the signature with `key`; the header's `alg` must be in `allowed`.
    pub fn verify(&self, key: &PublicKey, allowed: &[Alg]) -> Result<()> {
        let alg = self.alg()?;
        if !allowed.contains(&alg) {
            return Err(Error::Unsupported(format!(
                "alg {} not allowed",
                alg.name()
            )));
        }
        key.verify(alg, self.signing_input.as_bytes(), &self.signature)
    }
}

/// A private signing key: ES256 or EdDSA.
pub enum SigningKey {
    P256(EcdsaKeyPair),
    Ed25519(Ed25519KeyPair),
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(..)")
    }
}

impl SigningKey {
    /// A fresh key.
    pub fn generate(alg: Alg) -> Result<SigningKey> {
        let crypto = |_| Error::Unsupported("key generation failed".into());
        Ok(match alg {
            Alg::Es256 => SigningKey::P256(
                EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).map_err(crypto)?,
            ),
            Alg::EdDsa => SigningKey::Ed25519(Ed25519KeyPair::generate().map_err(crypto)?),
        })
    }

    /// Reads a PKCS#8 DER private key (P-256 or Ed25519).
    pub fn from_pkcs8(der: &[u8]) -> Result<SigningKey> {
        if let Ok(k) = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der) {
            return Ok(SigningKey::P256(k));
        }
        Ed25519KeyPair::from_pkcs8(der)
            .map(SigningKey::Ed25519)
            .map_err(|_| Error::Unsupported("a PKCS#8 P-256 or Ed25519 private key".into()))
    }

    /// The key as PKCS#8 v1 DER (to store it sealed).
    pub fn to_pkcs8(&self) -> Result<Vec<u8>> {
        let doc = match self {
            SigningKey::P256(k) => k.to_pkcs8v1(),
            SigningKey::Ed25519(k) => k.to_pkcs8v1(),
        };
        doc.map(|d| d.as_ref().to_vec())
            .map_err(|_| Error::Unsupported("key export".into()))
    }

    pub fn alg(&self) -> Alg {
        match self {
            SigningKey::P256(_) => Alg::Es256,
            SigningKey::Ed25519(_) => Alg::EdDsa,
        }
    }

    pub fn public_key(&self) -> PublicKey {
        match self {
            SigningKey::P256(k) => PublicKey::P256(k.public_key().as_ref().to_vec()),
            SigningKey::Ed25519(k) => PublicKey::Ed25519(k.public_key().as_ref().to_vec()),
        }
    }

    /// Signs `msg`: ES256 as `r || s`, EdDSA as RFC 8032.
    pub fn sign(&self, msg: &[u8]) -> Result<Vec<u8>> {
        match self {
            SigningKey::P256(k) => k
                .sign(&SystemRandom::new(), msg)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| Error::Unsupported("signing failed".into())),
            SigningKey::Ed25519(k) => Ok(k.sign(msg).as_ref().to_vec()),
        }
    }

    /// A compact JWS over `payload`; `alg` is set from the key, other header members come
    /// from `header`.
    pub fn sign_compact(&self, mut header: Map<String, Value>, payload: &[u8]) -> Result<String> {
        header.insert("alg".into(), Value::from(self.alg().name()));
        let h = b64e(serde_json::to_vec(&header).map_err(|_| malformed("header"))?);
        let input = format!("{h}.{}", b64e(payload));
        let sig = self.sign(input.as_bytes())?;
        Ok(format!("{input}.{}", b64e(sig)))
    }
}

/// The content encryptions a `direct_post.jwt` response may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enc {
    A128Gcm,
    A256Gcm,
}

impl Enc {
    pub fn from_name(name: &str) -> Result<Enc> {
        match name {
            "A128GCM" => Ok(Enc::A128Gcm),
            "A256GCM" => Ok(Enc::A256Gcm),
            other => Err(Error::Unsupported(format!("enc {other}"))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Enc::A128Gcm => "A128GCM",
            Enc::A256Gcm => "A256GCM",
        }
    }

    fn key_len(self) -> usize {
        match self {
            Enc::A128Gcm => 16,
            Enc::A256Gcm => 32,
        }
    }
}

/// The RFC 7518 §4.6.2 Concat KDF (NIST SP 800-56A one-step KDF with SHA-256) for direct
/// key agreement: `AlgorithmID` is the `enc` value, `SuppPubInfo` the key length in bits.
pub fn concat_kdf(z: &[u8], enc: &str, apu: &[u8], apv: &[u8], key_len: usize) -> Result<Vec<u8>> {
    let field = |v: &[u8]| {
        let mut out = (v.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(v);
        out
    };
    let mut info = field(enc.as_bytes());
    info.extend(field(apu));
    info.extend(field(apv));
    info.extend_from_slice(&((key_len * 8) as u32).to_be_bytes());
    let alg = get_sskdf_digest_algorithm(SskdfDigestAlgorithmId::Sha256)
        .ok_or_else(|| Error::Unsupported("SHA-256 one-step KDF".into()))?;
    let mut key = vec![0u8; key_len];
    sskdf_digest(alg, z, &info, &mut key).map_err(|_| Error::Unsupported("KDF".into()))?;
    Ok(key)
}

/// The verifier's ephemeral ECDH key for one transaction: its public half goes into the
/// request's `client_metadata.jwks`, its private half decrypts the one response.
pub struct EncryptionKey {
    private: agreement::PrivateKey,
}

impl std::fmt::Debug for EncryptionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EncryptionKey(..)")
    }
}

impl EncryptionKey {
    pub fn generate() -> Result<EncryptionKey> {
        agreement::PrivateKey::generate(&ECDH_P256)
            .map(|private| EncryptionKey { private })
            .map_err(|_| Error::Unsupported("key generation failed".into()))
    }

    /// The 32-byte private scalar, to be stored sealed.
    pub fn to_bytes(&self) -> Result<zeroize::Zeroizing<Vec<u8>>> {
        let bin: EcPrivateKeyBin<'_> = self
            .private
            .as_be_bytes()
            .map_err(|_| Error::Unsupported("key export".into()))?;
        Ok(zeroize::Zeroizing::new(bin.as_ref().to_vec()))
    }

    pub fn from_bytes(scalar: &[u8]) -> Result<EncryptionKey> {
        agreement::PrivateKey::from_private_key(&ECDH_P256, scalar)
            .map(|private| EncryptionKey { private })
            .map_err(|_| malformed("P-256 private scalar"))
    }

    pub fn public_key(&self) -> Result<PublicKey> {
        let public = self
            .private
            .compute_public_key()
            .map_err(|_| Error::Unsupported("public key".into()))?;
        Ok(PublicKey::P256(public.as_ref().to_vec()))
    }

    /// The public JWK advertised in `client_metadata.jwks`: `use: enc`, `alg: ECDH-ES`.
    pub fn public_jwk(&self, kid: &str) -> Result<Value> {
        let mut jwk = self.public_key()?.to_jwk();
        if let Some(o) = jwk.as_object_mut() {
            o.insert("kid".into(), Value::from(kid));
            o.insert("use".into(), Value::from("enc"));
            o.insert("alg".into(), Value::from("ECDH-ES"));
        }
        Ok(jwk)
    }

    /// Decrypts a compact JWE made for this key with `alg: ECDH-ES` and one of `allowed`.
    /// Answers the protected header and the plaintext.
    pub fn decrypt(&self, compact: &str, allowed: &[Enc]) -> Result<(Map<String, Value>, Vec<u8>)> {
        let mut parts = compact.split('.');
        let (Some(h), Some(ek), Some(iv), Some(ct), Some(tag), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(malformed("a compact JWE has five parts"));
        };
        let header: Map<String, Value> =
            serde_json::from_slice(&b64d(h)?).map_err(|_| malformed("JWE header"))?;
        let text = |name: &str| header.get(name).and_then(Value::as_str);
        if text("alg") != Some("ECDH-ES") {
            return Err(Error::Unsupported(format!(
                "JWE alg {}",
                text("alg").unwrap_or("-")
            )));
        }
        if header.contains_key("zip") || header.contains_key("crit") {
            return Err(Error::Unsupported("zip or crit in a JWE header".into()));
        }
        let enc = Enc::from_name(text("enc").ok_or_else(|| malformed("JWE enc"))?)?;
        if !allowed.contains(&enc) {
            return Err(Error::Unsupported(format!(
                "enc {} not offered",
                enc.name()
            )));
        }
        if !ek.is_empty() {
            return Err(malformed(
                "ECDH-ES direct agreement has an empty encrypted key",
            ));
        }
        let epk = header.get("epk").ok_or_else(|| malformed("JWE epk"))?;
        let PublicKey::P256(point) = PublicKey::from_jwk(epk)? else {
            return Err(Error::Unsupported("epk other than P-256".into()));
        };
        let apu = text("apu").map(b64d).transpose()?.unwrap_or_default();
        let apv = text("apv").map(b64d).transpose()?.unwrap_or_default();
        let cek = agreement::agree(
            &self.private,
            AgreementPublic::new(&ECDH_P256, &point),
            Error::Signature("ECDH with the sender's key failed".into()),
            |z| concat_kdf(z, enc.name(), &apu, &apv, enc.key_len()),
        )?;
        let cek = zeroize::Zeroizing::new(cek);
        let iv = b64d(iv)?;
        let mut buffer = b64d(ct)?;
        buffer.extend(b64d(tag)?);
        let plain = aead_open(enc, &cek, &iv, h.as_bytes(), buffer)?;
        Ok((header, plain))
    }
}

fn aead_key(enc: Enc, cek: &[u8]) -> Result<LessSafeKey> {
    let alg = match enc {
        Enc::A128Gcm => &AES_128_GCM,
        Enc::A256Gcm => &AES_256_GCM,
    };
    UnboundKey::new(alg, cek)
        .map(LessSafeKey::new)
        .map_err(|_| Error::Unsupported("content key".into()))
}

fn aead_open(enc: Enc, cek: &[u8], iv: &[u8], aad: &[u8], mut buffer: Vec<u8>) -> Result<Vec<u8>> {
    let nonce = Nonce::try_assume_unique_for_key(iv).map_err(|_| malformed("JWE iv"))?;
    let plain = aead_key(enc, cek)?
        .open_in_place(nonce, Aad::from(aad), &mut buffer)
        .map_err(|_| Error::Signature("JWE authentication tag".into()))?;
    Ok(plain.to_vec())
}

/// Encrypts `plaintext` to `recipient` (a P-256 public JWK) with ECDH-ES and `enc`, the way a
/// wallet answers: a fresh ephemeral key, `kid` copied from the recipient's JWK when present,
/// `apu`/`apv` when given.
pub fn encrypt(
    plaintext: &[u8],
    recipient: &Value,
    enc: Enc,
    apu: Option<&[u8]>,
    apv: Option<&[u8]>,
) -> Result<String> {
    let PublicKey::P256(point) = PublicKey::from_jwk(recipient)? else {
        return Err(Error::Unsupported(
            "ECDH-ES to a key other than P-256".into(),
        ));
    };
    let ephemeral = EncryptionKey::generate()?;
    let mut header = Map::new();
    header.insert("alg".into(), Value::from("ECDH-ES"));
    header.insert("enc".into(), Value::from(enc.name()));
    if let Some(kid) = recipient.get("kid") {
        header.insert("kid".into(), kid.clone());
    }
    header.insert("epk".into(), ephemeral.public_key()?.to_jwk());
    if let Some(apu) = apu {
        header.insert("apu".into(), Value::from(b64e(apu)));
    }
    if let Some(apv) = apv {
        header.insert("apv".into(), Value::from(b64e(apv)));
    }
    let cek = agreement::agree(
        &ephemeral.private,
        AgreementPublic::new(&ECDH_P256, &point),
        Error::Signature("ECDH with the recipient's key failed".into()),
        |z| {
            concat_kdf(
                z,
                enc.name(),
                apu.unwrap_or_default(),
                apv.unwrap_or_default(),
                enc.key_len(),
            )
        },
    )?;
    let h = b64e(serde_json::to_vec(&header).map_err(|_| malformed("header"))?);
    let mut iv = [0u8; 12];
    SystemRandom::new()
        .fill(&mut iv)
        .map_err(|_| Error::Unsupported("randomness".into()))?;
    let nonce = Nonce::assume_unique_for_key(iv);
    let mut buffer = plaintext.to_vec();
    let tag = aead_key(enc, &cek)?
        .seal_in_place_separate_tag(nonce, Aad::from(h.as_bytes()), &mut buffer)
        .map_err(|_| Error::Unsupported("encryption failed".into()))?;
    Ok(format!(
        "{h}..{}.{}.{}",
        b64e(iv),
        b64e(&buffer),
        b64e(tag.as_ref())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7518 Appendix C: Alice's ephemeral key, Bob's static key, `enc` A128GCM,
    /// `apu` "Alice", `apv` "Bob" → the derived key `VqqN6vgjbSBcIijNcacQGg`.
    #[test]
    fn concat_kdf_matches_rfc7518_appendix_c() {
        let bob_d = b64d("VEmDZpDXXK8p8N0Cndsxs924q6nS1RXFASRl6BfUqdw").unwrap();
        let alice_epk = PublicKey::p256_from_xy(
            &b64d("gI0GAILBdu7T53akrFmMyGcsF3n5dO7MmwNBHKW5SV0").unwrap(),
            &b64d("SLW_xSffzlPWrHEVI30DHM_4egVwt3NQqeUD7nMFpps").unwrap(),
        )
        .unwrap();
        let PublicKey::P256(point) = alice_epk else {
            unreachable!()
        };
        let bob = EncryptionKey::from_bytes(&bob_d).unwrap();
        let key = agreement::agree(
            &bob.private,
            AgreementPublic::new(&ECDH_P256, &point),
            Error::Signature("ecdh".into()),
            |z| concat_kdf(z, "A128GCM", b"Alice", b"Bob", 16),
        )
        .unwrap();
        assert_eq!(b64e(key), "VqqN6vgjbSBcIijNcacQGg");
    }

    #[test]
    fn jwe_round_trips_and_refuses_tampering_and_other_keys() {
        let key = EncryptionKey::generate().unwrap();
        let jwk = key.public_jwk("t1.k").unwrap();
        for enc in [Enc::A128Gcm, Enc::A256Gcm] {
            let jwe = encrypt(
                b"{\"state\":\"s\"}",
                &jwk,
                enc,
                Some(b"mdoc nonce"),
                Some(b"n"),
            )
            .unwrap();
            let (header, plain) = key.decrypt(&jwe, &[Enc::A128Gcm, Enc::A256Gcm]).unwrap();
            assert_eq!(plain, b"{\"state\":\"s\"}");
            assert_eq!(header["kid"], "t1.k");
            assert!(
                key.decrypt(&jwe, &[]).is_err(),
                "an enc not offered is refused"
            );
            let mut parts: Vec<String> = jwe.split('.').map(str::to_string).collect();
            let mut ct = b64d(&parts[3]).unwrap();
            ct[0] ^= 1;
            parts[3] = b64e(ct);
            assert!(matches!(
                key.decrypt(&parts.join("."), &[enc]),
                Err(Error::Signature(_))
            ));
        }
        let other = EncryptionKey::generate().unwrap();
        let jwe = encrypt(b"x", &jwk, Enc::A128Gcm, None, None).unwrap();
        assert!(other.decrypt(&jwe, &[Enc::A128Gcm]).is_err());
        let restored = EncryptionKey::from_bytes(&key.to_bytes().unwrap()).unwrap();
        assert_eq!(restored.decrypt(&jwe, &[Enc::A128Gcm]).unwrap().1, b"x");
    }

    #[test]
    fn jws_signs_and_verifies_both_algorithms_and_refuses_others() {
        for alg in [Alg::Es256, Alg::EdDsa] {
            let key = SigningKey::generate(alg).unwrap();
            let jws = key.sign_compact(Map::new(), b"{\"a\":1}").unwrap();
            let decoded = Jws::decode(&jws).unwrap();
            decoded.verify(&key.public_key(), &[alg]).unwrap();
            assert!(decoded.verify(&key.public_key(), &[]).is_err());
            let other = SigningKey::generate(alg).unwrap();
            assert!(decoded.verify(&other.public_key(), &[alg]).is_err());
            let jwk = key.public_key().to_jwk();
            assert_eq!(PublicKey::from_jwk(&jwk).unwrap(), key.public_key());
            let restored = SigningKey::from_pkcs8(&key.to_pkcs8().unwrap()).unwrap();
            assert_eq!(restored.public_key(), key.public_key());
        }
        assert_eq!(Alg::from_name("Ed25519").unwrap(), Alg::EdDsa);
        assert!(Alg::from_name("none").is_err());
        assert!(Alg::from_name("HS256").is_err());
    }

    /// RFC 7638 §3.1's example is RSA; RFC 8037 Appendix A.3 gives the Ed25519 thumbprint.
    #[test]
    fn thumbprint_matches_rfc8037_a3() {
        let key = PublicKey::from_jwk(&json!({
            "kty": "OKP", "crv": "Ed25519",
            "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
        }))
        .unwrap();
        assert_eq!(
            b64e(key.thumbprint()),
            "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
        );
    }
}
