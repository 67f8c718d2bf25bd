//! `TokenKeys`, the immutable material built from the records and shared with whoever signs
//! or verifies: the current keys, the JWKS, and every signature (the compact JWS written
//! here, with key pairs parsed once).

use std::collections::HashMap;

use aws_lc_rs::{
    rand::SystemRandom,
    signature::{EcdsaKeyPair, RSA_PKCS1_SHA256},
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use jsonwebtoken::{Algorithm, DecodingKey, Header};
use serde::Serialize;

use super::{
    claims::{
        AccessClaims, AgentClaims, ExchangeClaims, StepUpClaims, TokenError, ACCESS_TOKEN_TYP,
        EXCHANGE_TOKEN_TYP, STEP_UP_TOKEN_TYP,
    },
    material::{decoding_key, parse_pkcs8, parse_rsa_pkcs8, public_coordinates, rsa_components},
    records::{rsa_thumbprint, thumbprint, KeyAlg, SigningKeyRecord},
};
use crate::error::TenantError;

/// The key that signs: its kid and private key, parsed once (jsonwebtoken's `encode` would
/// parse and check the PKCS#8 again for every token).
struct CurrentKey {
    kid: String,
    key: EcdsaKeyPair,
}

/// The current RS256 key.
struct CurrentRsa {
    kid: String,
    key: aws_lc_rs::rsa::KeyPair,
}

/// What signing and verification need, built from the key records: immutable, so it can be
/// swapped whole (`ArcSwap<TokenKeys>`) on rotation while readers keep the old one.
pub struct TokenKeys {
    current: Option<CurrentKey>,
    current_rsa: Option<CurrentRsa>,
    pub(super) decoding: HashMap<String, (KeyAlg, DecodingKey)>,
    jwks: serde_json::Value,
}

/// Shows the kids only; the private key is never printed.
impl std::fmt::Debug for TokenKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut published: Vec<&String> = self.decoding.keys().collect();
        published.sort();
        f.debug_struct("TokenKeys")
            .field("current_kid", &self.current_kid())
            .field("published", &published)
            .finish_non_exhaustive()
    }
}

impl TokenKeys {
    /// No keys: signing and verifying fail. For a tenant whose keys are not loaded yet.
    pub fn empty() -> Self {
        TokenKeys {
            current: None,
            current_rsa: None,
            decoding: HashMap::new(),
            jwks: serde_json::json!({ "keys": [] }),
        }
    }

    /// Builds the material from the records (exactly one current ES256 key, at most one
    /// current RS256 key) and the current keys' opened PKCS#8. Each current key's public half
    /// is checked against its record, so a record whose public key was altered cannot publish
    /// a key that is not the one signing.
    pub(super) fn build(
        records: &[SigningKeyRecord],
        current_pkcs8: &[u8],
        rsa_pkcs8: Option<&[u8]>,
    ) -> Result<Self, TenantError> {
        let mut current_records = records
            .iter()
            .filter(|r| r.is_current() && r.alg == KeyAlg::ES256);
        let (Some(current), None) = (current_records.next(), current_records.next()) else {
            return Err(TenantError::Internal(
                "the signing keys must have exactly one current key".into(),
            ));
        };
        let mut rsa_records = records
            .iter()
            .filter(|r| r.is_current() && r.alg == KeyAlg::RS256);
        let current_rsa = match (rsa_records.next(), rsa_records.next(), rsa_pkcs8) {
            (None, _, _) => None,
            (Some(r), None, Some(pkcs8)) => {
                let key = parse_rsa_pkcs8(pkcs8)?;
                let (n, e) = rsa_components(&key);
                if r.n.as_deref() != Some(n.as_str())
                    || r.e.as_deref() != Some(e.as_str())
                    || rsa_thumbprint(&n, &e) != r.kid
                {
                    return Err(TenantError::Internal(format!(
                        "signing key {} does not match its public key",
                        r.kid
                    )));
                }
                Some(CurrentRsa {
                    kid: r.kid.clone(),
                    key,
                })
            }
            _ => {
                return Err(TenantError::Internal(
                    "the RS256 keys must have at most one current key, with its private key".into(),
                ))
            }
        };
        let pair = parse_pkcs8(current_pkcs8)?;
        let (x, y) = public_coordinates(&pair)?;
        if x != current.x || y != current.y || thumbprint(&x, &y) != current.kid {
            return Err(TenantError::Internal(format!(
                "signing key {} does not match its public key",
                current.kid
            )));
        }
        // Current first (ES256, then RS256), then retired keys, newest first.
        let mut ordered: Vec<&SigningKeyRecord> = records.iter().collect();
        ordered.sort_by_key(|r| {
            (
                !r.is_current(),
                r.alg == KeyAlg::RS256,
                std::cmp::Reverse(r.created_at),
            )
        });
        let mut decoding = HashMap::with_capacity(ordered.len());
        let mut jwks = Vec::with_capacity(ordered.len());
        for r in ordered {
            decoding.insert(r.kid.clone(), (r.alg, decoding_key(r)?));
            jwks.push(r.jwk());
        }
        Ok(TokenKeys {
            current: Some(CurrentKey {
                kid: current.kid.clone(),
                key: pair,
            }),
            current_rsa,
            decoding,
            jwks: serde_json::json!({ "keys": jwks }),
        })
    }

    /// Whether an RS256 key signs ID tokens (a tenant has one once a client registered RS256).
    pub fn has_rsa(&self) -> bool {
        self.current_rsa.is_some()
    }

    /// The kid of the current key of `alg`, if there is one.
    pub fn current_kid_of(&self, alg: KeyAlg) -> Option<&str> {
        match alg {
            KeyAlg::ES256 => self.current.as_ref().map(|c| c.kid.as_str()),
            KeyAlg::RS256 => self.current_rsa.as_ref().map(|c| c.kid.as_str()),
        }
    }

    /// The kid of the key that signs; empty when there is none.
    pub fn current_kid(&self) -> &str {
        self.current.as_ref().map_or("", |c| c.kid.as_str())
    }

    /// The JWKS document: every published key, the current one first.
    pub fn jwks(&self) -> &serde_json::Value {
        &self.jwks
    }

    /// Signs an access token with the current key: `alg` ES256, `typ` at+jwt, `kid`.
    pub fn sign(&self, claims: &AccessClaims) -> Result<String, TokenError> {
        self.sign_typed(claims, ACCESS_TOKEN_TYP)
    }

    /// Signs an agent's access token with the current key: `alg` ES256, `typ` at+jwt, `kid`.
    pub fn sign_agent(&self, claims: &AgentClaims) -> Result<String, TokenError> {
        self.sign_typed(claims, ACCESS_TOKEN_TYP)
    }

    /// Signs an OpenID Connect ID token with the current key of `alg`: `typ` JWT, `kid`. An
    /// RS256 ID token needs the tenant's RS256 key, which a client's registration made.
    pub fn sign_id_token<T: Serialize>(
        &self,
        claims: &T,
        alg: KeyAlg,
    ) -> Result<String, TokenError> {
        match alg {
            KeyAlg::ES256 => self.sign_typed(claims, "JWT"),
            KeyAlg::RS256 => self.sign_rsa(claims, "JWT"),
        }
    }

    /// Signs a step-up token with the current key: `alg` ES256, `typ` step-up+jwt, `kid`.
    pub fn sign_step_up(&self, claims: &StepUpClaims) -> Result<String, TokenError> {
        self.sign_typed(claims, STEP_UP_TOKEN_TYP)
    }

    /// Signs a social sign-in's exchange token: `alg` ES256, `typ` exchange+jwt, `kid`.
    pub fn sign_exchange(&self, claims: &ExchangeClaims) -> Result<String, TokenError> {
        self.sign_typed(claims, EXCHANGE_TOKEN_TYP)
    }

    fn sign_typed<T: Serialize>(&self, claims: &T, typ: &str) -> Result<String, TokenError> {
        let current = self
            .current
            .as_ref()
            .ok_or_else(|| TokenError::Sign("no signing key".into()))?;
        // RFC 7515 compact serialisation, as jsonwebtoken's `encode` writes it: base64url
        // JSON header and claims, and the ES256 signature r || s (RFC 7518 section 3.4).
        let mut token = signing_input(Algorithm::ES256, &current.kid, typ, claims)?;
        let signature = current
            .key
            .sign(&SystemRandom::new(), token.as_bytes())
            .map_err(|_| TokenError::Sign("ES256 signing failed".into()))?;
        token.push('.');
        token.push_str(&URL_SAFE_NO_PAD.encode(signature.as_ref()));
        Ok(token)
    }

    /// As [`Self::sign_typed`], with the current RS256 key (RFC 7518 section 3.3).
    fn sign_rsa<T: Serialize>(&self, claims: &T, typ: &str) -> Result<String, TokenError> {
        let current = self
            .current_rsa
            .as_ref()
            .ok_or_else(|| TokenError::Sign("no RS256 signing key".into()))?;
        let mut token = signing_input(Algorithm::RS256, &current.kid, typ, claims)?;
        let mut signature = vec![0u8; current.key.public_modulus_len()];
        current
            .key
            .sign(
                &RSA_PKCS1_SHA256,
                &SystemRandom::new(),
                token.as_bytes(),
                &mut signature,
            )
            .map_err(|_| TokenError::Sign("RS256 signing failed".into()))?;
        token.push('.');
        token.push_str(&URL_SAFE_NO_PAD.encode(&signature));
        Ok(token)
    }
}

/// The compact serialisation's signing input: base64url JSON header (`alg`, `typ`, `kid`)
/// and claims.
fn signing_input<T: Serialize>(
    alg: Algorithm,
    kid: &str,
    typ: &str,
    claims: &T,
) -> Result<String, TokenError> {
    fn part<T: Serialize>(value: &T) -> Result<String, TokenError> {
        let json = serde_json::to_vec(value).map_err(|e| TokenError::Sign(e.to_string()))?;
        Ok(URL_SAFE_NO_PAD.encode(json))
    }
    let mut header = Header::new(alg);
    header.typ = Some(typ.into());
    header.kid = Some(kid.to_owned());
    let mut token = part(&header)?;
    token.push('.');
    token.push_str(&part(claims)?);
    Ok(token)
}
