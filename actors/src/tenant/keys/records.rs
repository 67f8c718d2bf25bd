//! A signing key as stored: its algorithm, the sealed PKCS#8 private key and the associated
//! data it is sealed with, its publication window, its JWK, and the thumbprint that names it.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use jsonwebtoken::Algorithm;
use serde::{Deserialize, Serialize};
use tessera_storage::{sha256, Kind, Sealed, TenantId};
use time::OffsetDateTime;

/// The algorithm of a signing key: each tenant has exactly one current key of each kind it
/// holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum KeyAlg {
    /// ECDSA P-256 with SHA-256: every access token, step-up and exchange token, and the ID
    /// tokens of clients that registered it (or registered before RS256 was offered).
    #[default]
    ES256,
    /// RSASSA-PKCS1-v1_5 with SHA-256 over an RSA 2048 key: ID tokens only.
    RS256,
}

impl KeyAlg {
    pub fn as_str(self) -> &'static str {
        match self {
            KeyAlg::ES256 => "ES256",
            KeyAlg::RS256 => "RS256",
        }
    }

    pub fn parse(s: &str) -> Option<KeyAlg> {
        match s {
            "ES256" => Some(KeyAlg::ES256),
            "RS256" => Some(KeyAlg::RS256),
            _ => None,
        }
    }

    pub(super) fn jwt(self) -> Algorithm {
        match self {
            KeyAlg::ES256 => Algorithm::ES256,
            KeyAlg::RS256 => Algorithm::RS256,
        }
    }
}

/// One token-signing key of a tenant, keyed by its `kid`.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SigningKeyRecord {
    /// RFC 7638 thumbprint of the public key.
    pub kid: String,
    /// The PKCS#8 DER private key, sealed with the master key (see [`signing_key_aad`]).
    pub sealed: Sealed,
    /// ES256 for records written before RS256 keys existed.
    #[serde(default)]
    pub alg: KeyAlg,
    /// ES256: the public point's x coordinate, base64url without padding (32 bytes).
    #[serde(default)]
    pub x: String,
    /// ES256: the public point's y coordinate, base64url without padding (32 bytes).
    #[serde(default)]
    pub y: String,
    /// RS256: the modulus, base64url without padding, no leading zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<String>,
    /// RS256: the public exponent, base64url without padding, no leading zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// When the key stopped signing; `None` for the current key.
    #[serde(with = "time::serde::rfc3339::option", default)]
    pub retired_at: Option<OffsetDateTime>,
    /// Until when a retired key stays in the JWKS; the record is deleted after that.
    #[serde(with = "time::serde::rfc3339::option", default)]
    pub publish_until: Option<OffsetDateTime>,
}

tessera_storage::record!(
    SigningKeyRecord in TenantRecord: Kind::SigningKey, "signing key", version 1
);

/// Leaves out `sealed`: even ciphertext of a private key has no business in logs.
impl std::fmt::Debug for SigningKeyRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKeyRecord")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .field("x", &self.x)
            .field("y", &self.y)
            .field("created_at", &self.created_at)
            .field("retired_at", &self.retired_at)
            .field("publish_until", &self.publish_until)
            .finish_non_exhaustive()
    }
}

impl SigningKeyRecord {
    /// Whether this key is retired and no longer needs publishing at `now`. A retired record
    /// without `publish_until` (never written by this code) counts as expired.
    pub(super) fn expired(&self, now: OffsetDateTime) -> bool {
        self.retired_at.is_some() && self.publish_until.is_none_or(|until| until < now)
    }

    pub(super) fn is_current(&self) -> bool {
        self.retired_at.is_none()
    }

    /// The key's public JWK, as published in the JWKS.
    pub(super) fn jwk(&self) -> serde_json::Value {
        match self.alg {
            KeyAlg::ES256 => serde_json::json!({
                "kty": "EC",
                "crv": "P-256",
                "x": self.x,
                "y": self.y,
                "kid": self.kid,
                "alg": "ES256",
                "use": "sig",
            }),
            KeyAlg::RS256 => serde_json::json!({
                "kty": "RSA",
                "n": self.n,
                "e": self.e,
                "kid": self.kid,
                "alg": "RS256",
                "use": "sig",
            }),
        }
    }
}

/// The associated data a signing key is sealed with: binds the ciphertext to its tenant and kid.
pub fn signing_key_aad(tenant: TenantId, kid: &str) -> Vec<u8> {
    let mut aad = Vec::with_capacity(16 + 13 + kid.len());
    aad.extend_from_slice(tenant.as_bytes());
    aad.extend_from_slice(b"/signing-key/");
    aad.extend_from_slice(kid.as_bytes());
    aad
}

/// The RFC 7638 thumbprint of a P-256 public key: its required members in lexicographic order,
/// no whitespace, SHA-256, base64url.
pub(super) fn thumbprint(x: &str, y: &str) -> String {
    let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
    URL_SAFE_NO_PAD.encode(sha256(canonical.as_bytes()))
}

/// The RFC 7638 thumbprint of an RSA public key (`e`, `kty`, `n`).
pub(super) fn rsa_thumbprint(n: &str, e: &str) -> String {
    let canonical = format!(r#"{{"e":"{e}","kty":"RSA","n":"{n}"}}"#);
    URL_SAFE_NO_PAD.encode(sha256(canonical.as_bytes()))
}
