//! The tenant's token-signing keys: ES256 (ECDSA P-256) key pairs, which sign every token,
//! and RS256 (RSA 2048) key pairs, which sign the ID tokens of OAuth clients that registered
//! `id_token_signed_response_alg` RS256 (OpenID Connect's mandatory algorithm); their
//! rotation, the JWKS document that publishes them, and the signing and verification of
//! tokens.
//!
//! - A tenant has its first RS256 key only once a client needs it: the key is generated off
//!   the actor (RSA key generation takes tens of milliseconds) and handed to it
//!   ([`KeyRing::add_rsa`]); a rotation rotates both kinds.
//!
//! - Each key is one [`SigningKeyRecord`] under the tenant's prefix, keyed by its `kid`. The
//!   private key (PKCS#8 DER) is sealed with the master key; the associated data is
//!   `tenant id ++ "/signing-key/" ++ kid`, so a sealed key copied to another tenant or kid does
//!   not open.
//! - Exactly one key is *current* (`retired_at` is `None`) and signs. A rotation retires it and
//!   keeps publishing it until every token it signed has expired (`publish_until`), so
//!   verifiers holding a cached JWKS keep accepting those tokens.
//! - [`KeyRing`] is the actor's view of the records and the only code that writes them;
//!   [`TokenKeys`] is the immutable material built from them, shared (behind an `ArcSwap`) with
//!   whoever signs or verifies.
//!
//! The `kid` is the RFC 7638 JWK thumbprint of the public key (SHA-256 of
//! `{"crv","kty","x","y"}`, base64url): it names the key by its content, so two keys can never
//! share a kid and anyone holding the JWKS can check that a kid matches its key.
//!
//! Verification trusts nothing in the token's header beyond `alg` (which must be `ES256`, or
//! for an ID token given back as a logout hint `RS256` with an RSA key),
//! `typ` and `kid` (which must name one of this tenant's published keys). Headers that carry
//! key material or key locations (`jwk`, `jku`, `x5u`, `x5c`, `x5t`, `x5t#S256`) or critical
//! extensions (`crit`) are refused outright: this server never issues them.

pub mod msg;

use std::collections::HashMap;

use aws_lc_rs::{
    encoding::{AsDer, Pkcs8V1Der},
    rand::SystemRandom,
    rsa::{KeySize, PublicKeyComponents},
    signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING, RSA_PKCS1_SHA256},
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use jsonwebtoken::{Algorithm, DecodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use tessera_storage::{
    sha256, Kind, MasterKey, Record, Sealed, TenantId, TenantRecord, TenantStore,
};
use thiserror::Error;
use time::OffsetDateTime;

use crate::error::TenantError;

/// The JWS `typ` of an access token (RFC 9068 §2.1).
pub const ACCESS_TOKEN_TYP: &str = "at+jwt";

/// The JWS `typ` of a step-up token: never accepted where an access token is expected, nor
/// the reverse.
pub const STEP_UP_TOKEN_TYP: &str = "step-up+jwt";

/// `typ` of a social sign-in's exchange token.
pub const EXCHANGE_TOKEN_TYP: &str = "exchange+jwt";

/// How long a retired key stays published after the access-token lifetime: covers clock skew
/// between this server and verifiers, and tokens signed in the instant before the rotation.
const PUBLISH_MARGIN: time::Duration = time::Duration::seconds(60);

/// Tokens longer than this are refused before any parsing: ours are well under 1 KiB, and an
/// unbounded input would let a caller make us decode arbitrarily large JSON.
const MAX_TOKEN_LEN: usize = 8 * 1024;

/// Header parameters that carry key material or tell the verifier where to fetch keys. Using
/// any of them would let the token choose the key that verifies it, so their mere presence
/// refuses the token.
const FORBIDDEN_HEADERS: &[&str] = &["jwk", "jku", "x5u", "x5c", "x5t", "x5t#S256", "crit"];

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

    fn jwt(self) -> Algorithm {
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

impl Record for SigningKeyRecord {
    const KIND: Kind = Kind::SigningKey;
    const NAME: &'static str = "signing key";
    const VERSION: u16 = 1;
}
impl TenantRecord for SigningKeyRecord {}

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
    fn expired(&self, now: OffsetDateTime) -> bool {
        self.retired_at.is_some() && self.publish_until.is_none_or(|until| until < now)
    }

    fn is_current(&self) -> bool {
        self.retired_at.is_none()
    }

    /// The key's public JWK, as published in the JWKS.
    fn jwk(&self) -> serde_json::Value {
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
fn thumbprint(x: &str, y: &str) -> String {
    let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
    URL_SAFE_NO_PAD.encode(sha256(canonical.as_bytes()))
}

/// The RFC 7638 thumbprint of an RSA public key (`e`, `kty`, `n`).
fn rsa_thumbprint(n: &str, e: &str) -> String {
    let canonical = format!(r#"{{"e":"{e}","kty":"RSA","n":"{n}"}}"#);
    URL_SAFE_NO_PAD.encode(sha256(canonical.as_bytes()))
}

/// The claims of an access token (RFC 9068 plus the tenant, session and assurance level).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessClaims {
    pub iss: String,
    /// The user id.
    pub sub: String,
    pub aud: String,
    pub exp: i64,
    pub iat: i64,
    /// Unique per token.
    pub jti: String,
    /// The session the token belongs to.
    pub sid: String,
    /// The tenant id.
    pub tid: String,
    pub is_anonymous: bool,
    /// `"AAL1"` or `"AAL2"`.
    pub aal: String,
    /// `"aal1"` or `"aal2"`.
    pub acr: String,
    /// Authentication methods (RFC 8176 values).
    pub amr: Vec<String>,
    /// What the tenant's admins set on the user (absent when nothing is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_metadata: Option<serde_json::Value>,
    /// The OAuth client the token was issued to (RFC 9068); absent on first-party tokens,
    /// which are the only ones first-party routes take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The granted scopes, space-separated (RFC 9068); OAuth tokens only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// The claims of a step-up token: proof that the user of session `sid` re-authenticated.
/// Its audience is `<tenant slug>/step-up`, so no resource server takes it for an access
/// token; it is single-use (its `jti` is consumed by the tenant actor).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepUpClaims {
    pub iss: String,
    pub sub: String,
    pub aud: String,
    pub exp: i64,
    pub iat: i64,
    pub jti: String,
    pub sid: String,
    pub tid: String,
    /// 1 or 2 (the spec's integer form; access tokens carry `"AAL1"`/`"AAL2"`).
    pub aal: u8,
    /// `"aal1"` or `"aal2"`.
    pub acr: String,
    pub amr: Vec<String>,
}

/// The claims of a social sign-in's exchange token (`typ` exchange+jwt): the callback's
/// answer, which the app's back end trades for the token pair within 60 seconds, once (its
/// `jti` is consumed by the tenant actor). Its audience is `<tenant slug>/social`, so nothing
/// takes it for an access token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExchangeClaims {
    pub iss: String,
    pub sub: String,
    pub aud: String,
    pub exp: i64,
    pub iat: i64,
    pub jti: String,
    pub tid: String,
    /// The provider the user signed in with.
    pub provider: String,
}

impl Expiring for ExchangeClaims {
    fn exp(&self) -> i64 {
        self.exp
    }
}

/// The claims of an agent's access token (`typ` at+jwt, RFC 9068): `sub` is the agent's
/// client id when it acts as itself, else the user it acts for, and then `act` names the
/// agent (RFC 8693 4.1). It has no `sid`, so no first-party route and no OAuth client's
/// grant check takes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentClaims {
    pub iss: String,
    pub sub: String,
    pub aud: String,
    pub exp: i64,
    pub iat: i64,
    pub jti: String,
    pub tid: String,
    pub client_id: String,
    pub scope: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub act: Option<ActorClaim>,
}

/// RFC 8693 `act`: who acts for the subject.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActorClaim {
    pub sub: String,
}

impl Expiring for AgentClaims {
    fn exp(&self) -> i64 {
        self.exp
    }
}

/// What an `id_token_hint` tells: whose sign-in, for which client, and the session.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct IdTokenHint {
    pub sub: String,
    /// The client.
    pub aud: String,
    pub exp: i64,
    /// The sign-in session the authorization came from.
    #[serde(default)]
    pub sid: Option<String>,
}

impl Expiring for IdTokenHint {
    fn exp(&self) -> i64 {
        self.exp
    }
}

/// Claims with an expiry, for [`TokenKeys::verify_typed`].
pub trait Expiring {
    fn exp(&self) -> i64;
}

impl Expiring for AccessClaims {
    fn exp(&self) -> i64 {
        self.exp
    }
}

impl Expiring for StepUpClaims {
    fn exp(&self) -> i64 {
        self.exp
    }
}

/// Why a token could not be signed or was refused. Messages never contain key material or the
/// token itself.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum TokenError {
    #[error("the token is malformed")]
    Malformed,
    #[error("the token's algorithm is not accepted")]
    Algorithm,
    #[error("the token carries a header parameter that is not accepted")]
    Header,
    #[error("the token's key id is missing or unknown")]
    UnknownKey,
    #[error("the token's type is not the one expected here")]
    Type,
    #[error("the token has expired")]
    Expired,
    #[error("the token's claims are missing or invalid")]
    Claims,
    #[error("the token's signature is invalid")]
    Signature,
    #[error("the token could not be signed: {0}")]
    Sign(String),
}

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
    decoding: HashMap<String, (KeyAlg, DecodingKey)>,
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
    fn build(
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

    /// Verifies an access token of this tenant as an agent's (any audience).
    pub fn verify_agent(
        &self,
        token: &str,
        issuer: &str,
        now: i64,
    ) -> Result<AgentClaims, TokenError> {
        self.verify_typed(
            token,
            &[ACCESS_TOKEN_TYP, "application/at+jwt"],
            issuer,
            None,
            Some(now),
        )
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

    /// Verifies an access token of this tenant as [`Self::verify`] does, whatever its
    /// audience (an OAuth token's `aud` is the resource it was asked for): for the endpoints
    /// that speak for every audience (introspection, revocation, userinfo).
    pub fn verify_any_audience(
        &self,
        token: &str,
        issuer: &str,
        now: i64,
    ) -> Result<AccessClaims, TokenError> {
        self.verify_typed(
            token,
            &[ACCESS_TOKEN_TYP, "application/at+jwt"],
            issuer,
            None,
            Some(now),
        )
    }

    /// Verifies an ID token of this tenant given back as `id_token_hint` (RP-initiated
    /// logout): signature by a published key, `typ` JWT, `iss`; expired ones are taken, as
    /// OpenID Connect RP-Initiated Logout 1.0 section 2 asks.
    pub fn verify_id_token_hint(
        &self,
        token: &str,
        issuer: &str,
    ) -> Result<IdTokenHint, TokenError> {
        self.verify_algs(
            token,
            &[KeyAlg::ES256, KeyAlg::RS256],
            &["JWT"],
            issuer,
            None,
            None,
        )
    }

    /// Signs a step-up token with the current key: `alg` ES256, `typ` step-up+jwt, `kid`.
    pub fn sign_step_up(&self, claims: &StepUpClaims) -> Result<String, TokenError> {
        self.sign_typed(claims, STEP_UP_TOKEN_TYP)
    }

    /// Signs a social sign-in's exchange token: `alg` ES256, `typ` exchange+jwt, `kid`.
    pub fn sign_exchange(&self, claims: &ExchangeClaims) -> Result<String, TokenError> {
        self.sign_typed(claims, EXCHANGE_TOKEN_TYP)
    }

    /// Verifies an exchange token of this tenant: as [`Self::verify`], with `typ`
    /// exchange+jwt.
    pub fn verify_exchange(
        &self,
        token: &str,
        issuer: &str,
        audience: &str,
        now: i64,
    ) -> Result<ExchangeClaims, TokenError> {
        self.verify_typed(
            token,
            &[EXCHANGE_TOKEN_TYP],
            issuer,
            Some(audience),
            Some(now),
        )
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

    /// Verifies an access token of this tenant and returns its claims.
    ///
    /// Checked before any cryptography: size, `alg` exactly `ES256` (so `none`, HMAC and every
    /// other algorithm are refused whatever key they name), no key-carrying or critical header,
    /// `typ` `at+jwt` or `application/at+jwt` (any case), and a `kid` naming one of this
    /// tenant's published keys. Then the signature with that key, every claim present, `iss`
    /// and `aud` equal to the expected values, and `exp`.
    ///
    /// Expiry has no leeway: a token is valid while `now < exp`. The same server issues and
    /// verifies, so there is no skew to absorb. `exp` is checked against `now` and, by
    /// jsonwebtoken, against the system clock (leeway 0); the stricter of the two applies.
    pub fn verify(
        &self,
        token: &str,
        issuer: &str,
        audience: &str,
        now: i64,
    ) -> Result<AccessClaims, TokenError> {
        self.verify_typed(
            token,
            &[ACCESS_TOKEN_TYP, "application/at+jwt"],
            issuer,
            Some(audience),
            Some(now),
        )
    }

    /// Verifies a step-up token of this tenant (`typ` step-up+jwt), as [`Self::verify`] does
    /// access tokens.
    pub fn verify_step_up(
        &self,
        token: &str,
        issuer: &str,
        audience: &str,
        now: i64,
    ) -> Result<StepUpClaims, TokenError> {
        self.verify_typed(
            token,
            &[STEP_UP_TOKEN_TYP],
            issuer,
            Some(audience),
            Some(now),
        )
    }

    fn verify_typed<T: serde::de::DeserializeOwned + Expiring>(
        &self,
        token: &str,
        typs: &[&str],
        issuer: &str,
        audience: Option<&str>,
        now: Option<i64>,
    ) -> Result<T, TokenError> {
        self.verify_algs(token, &[KeyAlg::ES256], typs, issuer, audience, now)
    }

    /// [`Self::verify_typed`] for tokens that may be signed with any of `algs`; the `kid`
    /// must name a key of the header's algorithm.
    fn verify_algs<T: serde::de::DeserializeOwned + Expiring>(
        &self,
        token: &str,
        algs: &[KeyAlg],
        typs: &[&str],
        issuer: &str,
        audience: Option<&str>,
        now: Option<i64>,
    ) -> Result<T, TokenError> {
        if token.len() > MAX_TOKEN_LEN {
            return Err(TokenError::Malformed);
        }
        let alg = check_alg(token, algs)?;
        let header = jsonwebtoken::decode_header(token).map_err(|_| TokenError::Malformed)?;
        if header.alg != alg.jwt() {
            return Err(TokenError::Algorithm);
        }
        let typ_ok = header
            .typ
            .as_deref()
            .is_some_and(|t| typs.iter().any(|ok| t.eq_ignore_ascii_case(ok)));
        if !typ_ok {
            return Err(TokenError::Type);
        }
        let key = header
            .kid
            .as_deref()
            .and_then(|kid| self.decoding.get(kid))
            .filter(|(key_alg, _)| *key_alg == alg)
            .map(|(_, key)| key)
            .ok_or(TokenError::UnknownKey)?;

        let mut validation = Validation::new(alg.jwt());
        validation.leeway = 0;
        validation.validate_exp = now.is_some();
        validation.validate_nbf = false;
        validation.set_issuer(&[issuer]);
        match audience {
            Some(aud) => validation.set_audience(&[aud]),
            None => validation.validate_aud = false,
        }
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data = jsonwebtoken::decode::<T>(token, key, &validation).map_err(map_jwt_error)?;
        if now.is_some_and(|now| data.claims.exp() <= now) {
            return Err(TokenError::Expired);
        }
        Ok(data.claims)
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

/// Reads the header segment as raw JSON and refuses any `alg` other than the exact name of
/// one of `algs`, and any forbidden header parameter, before the typed header is parsed (whose
/// `alg` enum cannot even represent `none`, which would blur the error into "malformed").
/// Answers the algorithm named.
fn check_alg(token: &str, algs: &[KeyAlg]) -> Result<KeyAlg, TokenError> {
    let mut parts = token.split('.');
    let (Some(head), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(TokenError::Malformed);
    };
    let bytes = URL_SAFE_NO_PAD
        .decode(head)
        .map_err(|_| TokenError::Malformed)?;
    let serde_json::Value::Object(header) =
        serde_json::from_slice(&bytes).map_err(|_| TokenError::Malformed)?
    else {
        return Err(TokenError::Malformed);
    };
    let named = header.get("alg").and_then(|a| a.as_str()).unwrap_or("");
    let Some(alg) = algs.iter().copied().find(|a| a.as_str() == named) else {
        return Err(TokenError::Algorithm);
    };
    if FORBIDDEN_HEADERS.iter().any(|h| header.contains_key(*h)) {
        return Err(TokenError::Header);
    }
    Ok(alg)
}

fn map_jwt_error(e: jsonwebtoken::errors::Error) -> TokenError {
    use jsonwebtoken::errors::ErrorKind as K;
    match e.kind() {
        K::InvalidSignature | K::InvalidEcdsaKey => TokenError::Signature,
        K::ExpiredSignature => TokenError::Expired,
        K::InvalidIssuer
        | K::InvalidAudience
        | K::InvalidSubject
        | K::ImmatureSignature
        | K::MissingRequiredClaim(_)
        | K::InvalidClaimFormat(_)
        | K::Json(_) => TokenError::Claims,
        K::InvalidAlgorithm | K::MissingAlgorithm | K::InvalidAlgorithmName => {
            TokenError::Algorithm
        }
        _ => TokenError::Malformed,
    }
}

/// A PKCS#8 P-256 private key, parsed and checked.
fn parse_pkcs8(pkcs8: &[u8]) -> Result<EcdsaKeyPair, TenantError> {
    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8)
        .map_err(|_| TenantError::Internal("a signing key is not a P-256 PKCS#8 key".into()))
}

/// The base64url x and y of a P-256 key pair's public key.
fn public_coordinates(pair: &EcdsaKeyPair) -> Result<(String, String), TenantError> {
    let point = pair.public_key().as_ref();
    // Uncompressed SEC 1 point: 0x04 || x (32 bytes) || y (32 bytes).
    match point {
        [0x04, rest @ ..] if rest.len() == 64 => {
            let (x, y) = rest.split_at(32);
            Ok((URL_SAFE_NO_PAD.encode(x), URL_SAFE_NO_PAD.encode(y)))
        }
        _ => Err(TenantError::Internal(
            "unexpected P-256 public key encoding".into(),
        )),
    }
}

/// A PKCS#8 RSA private key, parsed and checked.
fn parse_rsa_pkcs8(pkcs8: &[u8]) -> Result<aws_lc_rs::rsa::KeyPair, TenantError> {
    aws_lc_rs::rsa::KeyPair::from_pkcs8(pkcs8)
        .map_err(|_| TenantError::Internal("a signing key is not an RSA PKCS#8 key".into()))
}

/// The base64url modulus and exponent of an RSA key pair's public key.
fn rsa_components(pair: &aws_lc_rs::rsa::KeyPair) -> (String, String) {
    let c = PublicKeyComponents::<Vec<u8>>::from(pair.public_key());
    (URL_SAFE_NO_PAD.encode(&c.n), URL_SAFE_NO_PAD.encode(&c.e))
}

/// A fresh RS256 key, as PKCS#8 DER: generated by whoever asks the actor to add or rotate
/// one (off the actor: it takes tens of milliseconds).
pub fn generate_rsa_pkcs8() -> Result<zeroize::Zeroizing<Vec<u8>>, TenantError> {
    let pair = aws_lc_rs::rsa::KeyPair::generate(KeySize::Rsa2048)
        .map_err(|_| TenantError::Internal("could not generate an RSA key".into()))?;
    let der = AsDer::<Pkcs8V1Der>::as_der(&pair)
        .map_err(|_| TenantError::Internal("could not encode an RSA key".into()))?;
    Ok(zeroize::Zeroizing::new(der.as_ref().to_vec()))
}

/// The verification key of a record, after checking its public key's encoding (ES256: both
/// coordinates 32 bytes).
fn decoding_key(r: &SigningKeyRecord) -> Result<DecodingKey, TenantError> {
    if r.alg == KeyAlg::RS256 {
        let (Some(n), Some(e)) = (&r.n, &r.e) else {
            return Err(TenantError::Internal(format!(
                "signing key {} has no public key",
                r.kid
            )));
        };
        return DecodingKey::from_rsa_components(n, e).map_err(|_| {
            TenantError::Internal(format!("signing key {} has a malformed public key", r.kid))
        });
    }
    let coordinate_ok = |c: &str| URL_SAFE_NO_PAD.decode(c).is_ok_and(|b| b.len() == 32);
    if !coordinate_ok(&r.x) || !coordinate_ok(&r.y) {
        return Err(TenantError::Internal(format!(
            "signing key {} has malformed coordinates",
            r.kid
        )));
    }
    DecodingKey::from_ec_components(&r.x, &r.y).map_err(|_| {
        TenantError::Internal(format!("signing key {} has malformed coordinates", r.kid))
    })
}

/// A fresh key: its record (private key sealed) and the PKCS#8, kept to build [`TokenKeys`]
/// without opening what was just sealed.
fn generate(
    tenant: TenantId,
    master: &MasterKey,
    now: OffsetDateTime,
) -> Result<(SigningKeyRecord, zeroize::Zeroizing<Vec<u8>>), TenantError> {
    let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
        .map_err(|_| TenantError::Internal("could not generate a signing key".into()))?;
    let pkcs8 = zeroize::Zeroizing::new(doc.as_ref().to_vec());
    let (x, y) = public_coordinates(&parse_pkcs8(&pkcs8)?)?;
    let kid = thumbprint(&x, &y);
    let sealed = master.seal(&signing_key_aad(tenant, &kid), &pkcs8)?;
    Ok((
        SigningKeyRecord {
            kid,
            sealed,
            alg: KeyAlg::ES256,
            x,
            y,
            n: None,
            e: None,
            created_at: now,
            retired_at: None,
            publish_until: None,
        },
        pkcs8,
    ))
}

/// The record of an RS256 key generated off the actor (its private key sealed).
fn rsa_record(
    tenant: TenantId,
    master: &MasterKey,
    pkcs8: &[u8],
    now: OffsetDateTime,
) -> Result<SigningKeyRecord, TenantError> {
    let (n, e) = rsa_components(&parse_rsa_pkcs8(pkcs8)?);
    let kid = rsa_thumbprint(&n, &e);
    let sealed = master.seal(&signing_key_aad(tenant, &kid), pkcs8)?;
    Ok(SigningKeyRecord {
        kid,
        sealed,
        alg: KeyAlg::RS256,
        x: String::new(),
        y: String::new(),
        n: Some(n),
        e: Some(e),
        created_at: now,
        retired_at: None,
        publish_until: None,
    })
}

/// What a rotation did, for the caller's reply and audit event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RotatedKeys {
    /// The new current key.
    pub kid: String,
    /// The key it replaced, still published until `previous_published_until`.
    pub previous_kid: Option<String>,
    #[serde(with = "time::serde::rfc3339::option", default)]
    pub previous_published_until: Option<OffsetDateTime>,
    /// The new current RS256 key, when the tenant has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rsa_kid: Option<String>,
    /// The RS256 key it replaced, published as long as the ES256 one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_rsa_kid: Option<String>,
}

/// The tenant's signing-key records as last written: the actor's view, the only writer.
#[derive(Debug)]
pub struct KeyRing {
    records: Vec<SigningKeyRecord>,
}

impl KeyRing {
    /// Reads the tenant's keys; deletes retired keys past `publish_until` and creates the first
    /// key when there is no current one, in one batch (applied, not yet durable: the caller
    /// takes a ticket). More than one current key is refused as corrupt data.
    pub fn load_or_create(
        store: &TenantStore,
        master: &MasterKey,
        now: OffsetDateTime,
    ) -> Result<(KeyRing, TokenKeys), TenantError> {
        let mut records = Vec::new();
        for item in store.scan::<SigningKeyRecord>(b"") {
            let (_, record) = item?;
            records.push(record);
        }
        let mut batch = store.batch();
        let mut dirty = false;
        records.retain(|r| {
            let expired = r.expired(now);
            if expired {
                batch.remove(Kind::SigningKey, r.kid.as_bytes());
                dirty = true;
            }
            !expired
        });
        let rsa_currents = records
            .iter()
            .filter(|r| r.is_current() && r.alg == KeyAlg::RS256)
            .count();
        if rsa_currents > 1 {
            return Err(TenantError::Internal(format!(
                "{rsa_currents} current RS256 signing keys; at most one may be current"
            )));
        }
        let currents = records
            .iter()
            .filter(|r| r.is_current() && r.alg == KeyAlg::ES256)
            .count();
        let fresh_pkcs8 = match currents {
            0 => {
                let (record, pkcs8) = generate(store.tenant_id(), master, now)?;
                batch.put(record.kid.as_bytes(), &record)?;
                records.push(record);
                dirty = true;
                Some(pkcs8)
            }
            1 => None,
            n => {
                return Err(TenantError::Internal(format!(
                    "{n} current signing keys; exactly one may be current"
                )))
            }
        };
        let ring = KeyRing { records };
        let keys = match fresh_pkcs8 {
            Some(pkcs8) => {
                let rsa = ring.open_current(store.tenant_id(), master, KeyAlg::RS256)?;
                TokenKeys::build(&ring.records, &pkcs8, rsa.as_deref().map(|v| v.as_slice()))?
            }
            None => ring.token_keys(store.tenant_id(), master)?,
        };
        if dirty {
            store.apply(batch)?;
        }
        Ok((ring, keys))
    }

    /// Adds the tenant's first RS256 key (`pkcs8`, generated off the actor), unless it has
    /// one already: then nothing is written. Answers the keys to publish, and whether it wrote
    /// (applied, not yet durable: the caller publishes once it is).
    pub fn add_rsa(
        &mut self,
        store: &TenantStore,
        master: &MasterKey,
        pkcs8: &[u8],
        now: OffsetDateTime,
    ) -> Result<(TokenKeys, bool), TenantError> {
        let has_rsa = self
            .records
            .iter()
            .any(|r| r.is_current() && r.alg == KeyAlg::RS256);
        if has_rsa {
            return Ok((self.token_keys(store.tenant_id(), master)?, false));
        }
        let record = rsa_record(store.tenant_id(), master, pkcs8, now)?;
        let mut next = self.records.clone();
        next.push(record.clone());
        let current = self
            .open_current(store.tenant_id(), master, KeyAlg::ES256)?
            .ok_or_else(|| TenantError::Internal("no current signing key".into()))?;
        let keys = TokenKeys::build(&next, &current, Some(pkcs8))?;
        let mut batch = store.batch();
        batch.put(record.kid.as_bytes(), &record)?;
        store.apply(batch)?;
        self.records = next;
        Ok((keys, true))
    }

    /// Makes a new key current, and a new RS256 key (`rsa_pkcs8`, generated off the actor)
    /// when the tenant has one. Each old current key is retired now and published until
    /// `now + access_ttl + 60 s`, when the last token it signed has expired; retired keys past
    /// their publication are deleted. One batch, applied (the caller makes it durable); on any
    /// error nothing is written and the ring is unchanged.
    pub fn rotate(
        &mut self,
        store: &TenantStore,
        master: &MasterKey,
        now: OffsetDateTime,
        access_ttl: std::time::Duration,
        rsa_pkcs8: Option<&[u8]>,
    ) -> Result<(RotatedKeys, TokenKeys), TenantError> {
        let ttl = time::Duration::try_from(access_ttl)
            .map_err(|_| TenantError::Internal("access token lifetime out of range".into()))?;
        let publish_until = ttl
            .checked_add(PUBLISH_MARGIN)
            .and_then(|d| now.checked_add(d))
            .ok_or_else(|| TenantError::Internal("access token lifetime out of range".into()))?;

        let (fresh, pkcs8) = generate(store.tenant_id(), master, now)?;
        let has_rsa = self
            .records
            .iter()
            .any(|r| r.is_current() && r.alg == KeyAlg::RS256);
        // A tenant with an RS256 key gets a new one with every rotation; without the new
        // key's material its current one stays.
        let fresh_rsa = match rsa_pkcs8.filter(|_| has_rsa) {
            Some(p) => Some((rsa_record(store.tenant_id(), master, p, now)?, p)),
            None => None,
        };
        let mut batch = store.batch();
        let mut next = Vec::with_capacity(self.records.len() + 2);
        let mut previous = None;
        let mut previous_rsa = None;
        for r in &self.records {
            if r.expired(now) {
                batch.remove(Kind::SigningKey, r.kid.as_bytes());
                continue;
            }
            let mut r = r.clone();
            let retire = r.is_current() && (r.alg == KeyAlg::ES256 || fresh_rsa.is_some());
            if retire {
                r.retired_at = Some(now);
                r.publish_until = Some(publish_until);
                batch.put(r.kid.as_bytes(), &r)?;
                match r.alg {
                    KeyAlg::ES256 => previous = Some(r.kid.clone()),
                    KeyAlg::RS256 => previous_rsa = Some(r.kid.clone()),
                }
            }
            next.push(r);
        }
        batch.put(fresh.kid.as_bytes(), &fresh)?;
        let rotated = RotatedKeys {
            kid: fresh.kid.clone(),
            previous_published_until: previous.as_ref().map(|_| publish_until),
            previous_kid: previous,
            rsa_kid: fresh_rsa.as_ref().map(|(r, _)| r.kid.clone()),
            previous_rsa_kid: previous_rsa,
        };
        next.push(fresh);
        let rsa_material = match fresh_rsa {
            Some((record, p)) => {
                batch.put(record.kid.as_bytes(), &record)?;
                next.push(record);
                Some(zeroize::Zeroizing::new(p.to_vec()))
            }
            None => self.open_current(store.tenant_id(), master, KeyAlg::RS256)?,
        };
        let keys = TokenKeys::build(&next, &pkcs8, rsa_material.as_deref().map(|v| v.as_slice()))?;
        store.apply(batch)?;
        self.records = next;
        Ok((rotated, keys))
    }

    /// The records, current and still-published retired keys.
    pub fn records(&self) -> &[SigningKeyRecord] {
        &self.records
    }

    /// Builds [`TokenKeys`], opening the current private keys.
    pub fn token_keys(
        &self,
        tenant: TenantId,
        master: &MasterKey,
    ) -> Result<TokenKeys, TenantError> {
        let pkcs8 = self
            .open_current(tenant, master, KeyAlg::ES256)?
            .ok_or_else(|| TenantError::Internal("no current signing key".into()))?;
        let rsa = self.open_current(tenant, master, KeyAlg::RS256)?;
        TokenKeys::build(&self.records, &pkcs8, rsa.as_deref().map(|v| v.as_slice()))
    }

    /// The opened private key of the current key of `alg`, if there is one.
    fn open_current(
        &self,
        tenant: TenantId,
        master: &MasterKey,
        alg: KeyAlg,
    ) -> Result<Option<zeroize::Zeroizing<Vec<u8>>>, TenantError> {
        let Some(current) = self.records.iter().find(|r| r.is_current() && r.alg == alg) else {
            return Ok(None);
        };
        let pkcs8 = master.open(&signing_key_aad(tenant, &current.kid), &current.sealed)?;
        Ok(Some(zeroize::Zeroizing::new(pkcs8.to_vec())))
    }
}

#[cfg(test)]
mod tests;
