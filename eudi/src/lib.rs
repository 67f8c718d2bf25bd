//! The checks behind wallet sign-in and age verification (OpenID4VP 1.0): JOSE signatures and
//! the `direct_post.jwt` response encryption, SD-JWT VC (RFC 9901) and ISO 18013-5 mdoc
//! presentations, token status lists, and X.509 chains to a tenant's trust anchors.
//!
//! Everything here is pure: no I/O, no clock reads (callers pass `now` as Unix seconds), so the
//! server runs it off its actors and the tests run it against the standards' published vectors.
//! The issuing and presenting halves exist for the test wallet and the benchmark.

pub mod jose;
pub mod mdoc;
pub mod sdjwt;
pub mod status;
pub mod x509;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

/// Why a presentation, a token or a key was refused. The text is for logs and tests; callers
/// map the kind to their own error codes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Not parseable as what it claims to be.
    #[error("malformed: {0}")]
    Malformed(String),
    /// An algorithm, curve or key type outside what is accepted.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A signature or a MAC did not verify, or a decryption failed.
    #[error("bad signature: {0}")]
    Signature(String),
    /// A certificate chain or key that does not lead to a trusted anchor.
    #[error("untrusted: {0}")]
    Untrusted(String),
    /// Outside its validity window (`exp`, `nbf`, `validUntil`, an `iat` window).
    #[error("expired or not yet valid: {0}")]
    Validity(String),
    /// A binding to this transaction failed: nonce, audience, `sd_hash`, session transcript.
    #[error("binding: {0}")]
    Binding(String),
    /// A digest that does not match, is repeated or is not referenced.
    #[error("digest: {0}")]
    Digest(String),
}

pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn malformed(what: impl Into<String>) -> Error {
    Error::Malformed(what.into())
}

/// base64url without padding (RFC 7515 §2).
pub fn b64e(bytes: impl AsRef<[u8]>) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Decodes base64url without padding; padding or other alphabets are refused.
pub fn b64d(text: &str) -> Result<Vec<u8>> {
    URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|_| malformed("base64url"))
}

/// A NumericDate claim (RFC 7519) as whole seconds (fractions dropped); absent is `None`, a
/// non-number is malformed.
pub(crate) fn numeric_date(
    claims: &serde_json::Map<String, serde_json::Value>,
    name: &str,
) -> Result<Option<i64>> {
    match claims.get(name) {
        None => Ok(None),
        Some(v) => v
            .as_i64()
            .or_else(|| {
                v.as_f64()
                    .filter(|f| f.is_finite())
                    .map(|f| f.floor() as i64)
            })
            .map(Some)
            .ok_or_else(|| malformed(format!("{name} must be a number"))),
    }
}

/// SHA-256.
pub fn sha256(bytes: impl AsRef<[u8]>) -> [u8; 32] {
    let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, bytes.as_ref());
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    out
}
