//! The tenant's token-signing keys: ES256 (ECDSA P-256) key pairs, their rotation, the JWKS
//! document that publishes them, and the signing and verification of access tokens.
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
//! Verification trusts nothing in the token's header beyond `alg` (which must be `ES256`),
//! `typ` and `kid` (which must name one of this tenant's published keys). Headers that carry
//! key material or key locations (`jwk`, `jku`, `x5u`, `x5c`, `x5t`, `x5t#S256`) or critical
//! extensions (`crit`) are refused outright: this server never issues them.

use std::collections::HashMap;

use aws_lc_rs::{
    rand::SystemRandom,
    signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING},
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

/// One token-signing key of a tenant, keyed by its `kid`.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SigningKeyRecord {
    /// RFC 7638 thumbprint of the public key.
    pub kid: String,
    /// The PKCS#8 DER private key, sealed with the master key (see [`signing_key_aad`]).
    pub sealed: Sealed,
    /// The public point's x coordinate, base64url without padding (32 bytes).
    pub x: String,
    /// The public point's y coordinate, base64url without padding (32 bytes).
    pub y: String,
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
        serde_json::json!({
            "kty": "EC",
            "crv": "P-256",
            "x": self.x,
            "y": self.y,
            "kid": self.kid,
            "alg": "ES256",
            "use": "sig",
        })
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

/// What signing and verification need, built from the key records: immutable, so it can be
/// swapped whole (`ArcSwap<TokenKeys>`) on rotation while readers keep the old one.
pub struct TokenKeys {
    current: Option<CurrentKey>,
    decoding: HashMap<String, DecodingKey>,
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
            decoding: HashMap::new(),
            jwks: serde_json::json!({ "keys": [] }),
        }
    }

    /// Builds the material from the records (exactly one current) and the current key's
    /// opened PKCS#8. The current key's public half is checked against its record, so a record
    /// whose coordinates were altered cannot publish a key that is not the one signing.
    fn build(records: &[SigningKeyRecord], current_pkcs8: &[u8]) -> Result<Self, TenantError> {
        let mut current_records = records.iter().filter(|r| r.is_current());
        let (Some(current), None) = (current_records.next(), current_records.next()) else {
            return Err(TenantError::Internal(
                "the signing keys must have exactly one current key".into(),
            ));
        };
        let pair = parse_pkcs8(current_pkcs8)?;
        let (x, y) = public_coordinates(&pair)?;
        if x != current.x || y != current.y || thumbprint(&x, &y) != current.kid {
            return Err(TenantError::Internal(format!(
                "signing key {} does not match its public key",
                current.kid
            )));
        }
        // Current first, then retired keys newest first.
        let mut ordered: Vec<&SigningKeyRecord> = records.iter().collect();
        ordered.sort_by_key(|r| (!r.is_current(), std::cmp::Reverse(r.created_at)));
        let mut decoding = HashMap::with_capacity(ordered.len());
        let mut jwks = Vec::with_capacity(ordered.len());
        for r in ordered {
            decoding.insert(r.kid.clone(), decoding_key(r)?);
            jwks.push(r.jwk());
        }
        Ok(TokenKeys {
            current: Some(CurrentKey {
                kid: current.kid.clone(),
                key: pair,
            }),
            decoding,
            jwks: serde_json::json!({ "keys": jwks }),
        })
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

    /// Signs an OpenID Connect ID token with the current key: `alg` ES256, `typ` JWT, `kid`.
    pub fn sign_id_token<T: Serialize>(&self, claims: &T) -> Result<String, TokenError> {
        self.sign_typed(claims, "JWT")
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
        self.verify_typed(token, &["JWT"], issuer, None, None)
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
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some(typ.into());
        header.kid = Some(current.kid.clone());
        // RFC 7515 compact serialisation, as jsonwebtoken's `encode` writes it: base64url
        // JSON header and claims, and the ES256 signature r || s (RFC 7518 section 3.4).
        fn part<T: Serialize>(value: &T) -> Result<String, TokenError> {
            let json = serde_json::to_vec(value).map_err(|e| TokenError::Sign(e.to_string()))?;
            Ok(URL_SAFE_NO_PAD.encode(json))
        }
        let mut token = part(&header)?;
        token.push('.');
        token.push_str(&part(claims)?);
        let signature = current
            .key
            .sign(&SystemRandom::new(), token.as_bytes())
            .map_err(|_| TokenError::Sign("ES256 signing failed".into()))?;
        token.push('.');
        token.push_str(&URL_SAFE_NO_PAD.encode(signature.as_ref()));
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
        if token.len() > MAX_TOKEN_LEN {
            return Err(TokenError::Malformed);
        }
        check_alg(token)?;
        let header = jsonwebtoken::decode_header(token).map_err(|_| TokenError::Malformed)?;
        if header.alg != Algorithm::ES256 {
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
            .ok_or(TokenError::UnknownKey)?;

        let mut validation = Validation::new(Algorithm::ES256);
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

/// Reads the header segment as raw JSON and refuses any `alg` other than the exact string
/// `ES256`, and any forbidden header parameter, before the typed header is parsed (whose
/// `alg` enum cannot even represent `none`, which would blur the error into "malformed").
fn check_alg(token: &str) -> Result<(), TokenError> {
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
    if header.get("alg").and_then(|a| a.as_str()) != Some("ES256") {
        return Err(TokenError::Algorithm);
    }
    if FORBIDDEN_HEADERS.iter().any(|h| header.contains_key(*h)) {
        return Err(TokenError::Header);
    }
    Ok(())
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

/// The verification key of a record, after checking that both coordinates are 32 bytes.
fn decoding_key(r: &SigningKeyRecord) -> Result<DecodingKey, TenantError> {
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
            x,
            y,
            created_at: now,
            retired_at: None,
            publish_until: None,
        },
        pkcs8,
    ))
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
        let currents = records.iter().filter(|r| r.is_current()).count();
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
            Some(pkcs8) => TokenKeys::build(&ring.records, &pkcs8)?,
            None => ring.token_keys(store.tenant_id(), master)?,
        };
        if dirty {
            store.apply(batch)?;
        }
        Ok((ring, keys))
    }

    /// Makes a new key current. The old current key is retired now and published until
    /// `now + access_ttl + 60 s`, when the last token it signed has expired; retired keys past
    /// their publication are deleted. One batch, applied (the caller makes it durable); on any
    /// error nothing is written and the ring is unchanged.
    pub fn rotate(
        &mut self,
        store: &TenantStore,
        master: &MasterKey,
        now: OffsetDateTime,
        access_ttl: std::time::Duration,
    ) -> Result<(RotatedKeys, TokenKeys), TenantError> {
        let ttl = time::Duration::try_from(access_ttl)
            .map_err(|_| TenantError::Internal("access token lifetime out of range".into()))?;
        let publish_until = ttl
            .checked_add(PUBLISH_MARGIN)
            .and_then(|d| now.checked_add(d))
            .ok_or_else(|| TenantError::Internal("access token lifetime out of range".into()))?;

        let (fresh, pkcs8) = generate(store.tenant_id(), master, now)?;
        let mut batch = store.batch();
        let mut next = Vec::with_capacity(self.records.len() + 1);
        let mut previous = None;
        for r in &self.records {
            if r.expired(now) {
                batch.remove(Kind::SigningKey, r.kid.as_bytes());
                continue;
            }
            let mut r = r.clone();
            if r.is_current() {
                r.retired_at = Some(now);
                r.publish_until = Some(publish_until);
                batch.put(r.kid.as_bytes(), &r)?;
                previous = Some(r.kid.clone());
            }
            next.push(r);
        }
        batch.put(fresh.kid.as_bytes(), &fresh)?;
        let rotated = RotatedKeys {
            kid: fresh.kid.clone(),
            previous_published_until: previous.as_ref().map(|_| publish_until),
            previous_kid: previous,
        };
        next.push(fresh);
        let keys = TokenKeys::build(&next, &pkcs8)?;
        store.apply(batch)?;
        self.records = next;
        Ok((rotated, keys))
    }

    /// The records, current and still-published retired keys.
    pub fn records(&self) -> &[SigningKeyRecord] {
        &self.records
    }

    /// Builds [`TokenKeys`], opening the current private key.
    pub fn token_keys(
        &self,
        tenant: TenantId,
        master: &MasterKey,
    ) -> Result<TokenKeys, TenantError> {
        let current = self
            .records
            .iter()
            .find(|r| r.is_current())
            .ok_or_else(|| TenantError::Internal("no current signing key".into()))?;
        let pkcs8 = master.open(&signing_key_aad(tenant, &current.kid), &current.sealed)?;
        TokenKeys::build(&self.records, &pkcs8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use tessera_storage::{Durability, Store, StoreOptions};

    const ISS: &str = "https://auth.example.test/t/acme";
    const AUD: &str = "acme";

    fn open(dir: &Path) -> Store {
        Store::open(&StoreOptions {
            path: dir.to_path_buf(),
            cache_capacity_bytes: 8 << 20,
            durability: Durability::Sync,
        })
        .unwrap()
    }

    /// Opens `dir` again once the previous store's last handle (held by its flush task until
    /// that task ends, on this runtime) lets go of sled's lock.
    async fn reopen(dir: &Path) -> Store {
        for _ in 0..250 {
            let opened = Store::open(&StoreOptions {
                path: dir.to_path_buf(),
                cache_capacity_bytes: 8 << 20,
                durability: Durability::Sync,
            });
            match opened {
                Ok(store) => return store,
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
            }
        }
        open(dir)
    }

    fn now_ts() -> i64 {
        OffsetDateTime::now_utc().unix_timestamp()
    }

    fn claims(tid: &str) -> AccessClaims {
        let now = now_ts();
        AccessClaims {
            iss: ISS.into(),
            sub: "user-1".into(),
            aud: AUD.into(),
            exp: now + 300,
            iat: now,
            jti: "jti-1".into(),
            sid: "sid-1".into(),
            tid: tid.into(),
            is_anonymous: false,
            aal: "AAL1".into(),
            acr: "aal1".into(),
            amr: vec!["pwd".into()],
            app_metadata: None,
            client_id: None,
            scope: None,
        }
    }

    fn b64json(v: &serde_json::Value) -> String {
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap())
    }

    /// `header.payload.signature` signed by `pair` (ES256, fixed r||s).
    fn es256(header: serde_json::Value, claims: &AccessClaims, pair: &EcdsaKeyPair) -> String {
        let msg = format!(
            "{}.{}",
            b64json(&header),
            b64json(&serde_json::to_value(claims).unwrap())
        );
        let sig = pair.sign(&SystemRandom::new(), msg.as_bytes()).unwrap();
        format!("{msg}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
    }

    /// The tenant's current private key, opened as the actor would.
    fn current_pair(ring: &KeyRing, tenant: TenantId, master: &MasterKey) -> EcdsaKeyPair {
        let r = ring.records().iter().find(|r| r.is_current()).unwrap();
        let pkcs8 = master
            .open(&signing_key_aad(tenant, &r.kid), &r.sealed)
            .unwrap();
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8).unwrap()
    }

    fn attacker_pair() -> EcdsaKeyPair {
        let doc =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
                .unwrap();
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref()).unwrap()
    }

    #[tokio::test]
    async fn sign_then_verify_round_trips_and_the_header_is_rfc9068() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        let ts = store.tenant(TenantId::new());
        let master = MasterKey::generate();
        let (ring, keys) =
            KeyRing::load_or_create(&ts, &master, OffsetDateTime::now_utc()).unwrap();
        assert_eq!(ring.records().len(), 1);
        assert_eq!(keys.current_kid(), ring.records()[0].kid);

        let c = claims(&ts.tenant_id().to_string());
        let token = keys.sign(&c).unwrap();
        let header = jsonwebtoken::decode_header(&token).unwrap();
        assert_eq!(header.alg, Algorithm::ES256);
        assert_eq!(header.typ.as_deref(), Some("at+jwt"));
        assert_eq!(header.kid.as_deref(), Some(keys.current_kid()));
        assert_eq!(keys.verify(&token, ISS, AUD, now_ts()).unwrap(), c);

        // The JWKS publishes the key under its RFC 7638 thumbprint.
        let jwk = &keys.jwks()["keys"][0];
        assert_eq!(jwk["kty"], "EC");
        assert_eq!(jwk["crv"], "P-256");
        assert_eq!(jwk["alg"], "ES256");
        assert_eq!(jwk["use"], "sig");
        assert_eq!(jwk["kid"], keys.current_kid());
        let (x, y) = (jwk["x"].as_str().unwrap(), jwk["y"].as_str().unwrap());
        assert_eq!(thumbprint(x, y), keys.current_kid());
        assert_eq!(keys.jwks()["keys"].as_array().unwrap().len(), 1);
        // A JWKS consumer can rebuild the verification key from the published members.
        let from_jwks = DecodingKey::from_ec_components(x, y).unwrap();
        let mut v = Validation::new(Algorithm::ES256);
        v.set_audience(&[AUD]);
        assert!(jsonwebtoken::decode::<AccessClaims>(&token, &from_jwks, &v).is_ok());

        // application/at+jwt and any case are accepted.
        let pair = current_pair(&ring, ts.tenant_id(), &master);
        for typ in ["application/at+jwt", "AT+JWT"] {
            let t = es256(
                serde_json::json!({"alg": "ES256", "typ": typ, "kid": keys.current_kid()}),
                &c,
                &pair,
            );
            assert_eq!(keys.verify(&t, ISS, AUD, now_ts()).unwrap(), c);
        }
    }

    #[tokio::test]
    async fn forged_and_invalid_tokens_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        let ts = store.tenant(TenantId::new());
        let master = MasterKey::generate();
        let (ring, keys) =
            KeyRing::load_or_create(&ts, &master, OffsetDateTime::now_utc()).unwrap();
        let kid = keys.current_kid().to_owned();
        let c = claims(&ts.tenant_id().to_string());
        let payload = b64json(&serde_json::to_value(&c).unwrap());
        let verify = |t: &str| keys.verify(t, ISS, AUD, now_ts());

        // alg: none, with and without a signature segment.
        let none = b64json(&serde_json::json!({"alg": "none", "typ": "at+jwt", "kid": kid}));
        assert_eq!(
            verify(&format!("{none}.{payload}.")),
            Err(TokenError::Algorithm)
        );
        assert_eq!(
            verify(&format!("{none}.{payload}.AAAA")),
            Err(TokenError::Algorithm)
        );
        let none_upper = b64json(&serde_json::json!({"alg": "NONE", "typ": "at+jwt", "kid": kid}));
        assert_eq!(
            verify(&format!("{none_upper}.{payload}.")),
            Err(TokenError::Algorithm)
        );
        // No alg at all.
        let no_alg = b64json(&serde_json::json!({"typ": "at+jwt", "kid": kid}));
        assert_eq!(
            verify(&format!("{no_alg}.{payload}.AAAA")),
            Err(TokenError::Algorithm)
        );

        // HS256 keyed with the public key (the classic algorithm-confusion forgery), using the
        // JWKS x member and the raw uncompressed point as the HMAC secret.
        let jwk = &keys.jwks()["keys"][0];
        let point = {
            let mut p = vec![0x04];
            p.extend(URL_SAFE_NO_PAD.decode(jwk["x"].as_str().unwrap()).unwrap());
            p.extend(URL_SAFE_NO_PAD.decode(jwk["y"].as_str().unwrap()).unwrap());
            p
        };
        let hs_header = b64json(&serde_json::json!({"alg": "HS256", "typ": "at+jwt", "kid": kid}));
        let msg = format!("{hs_header}.{payload}");
        for secret in [point.clone(), serde_json::to_vec(jwk).unwrap()] {
            let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, &secret);
            let tag = aws_lc_rs::hmac::sign(&key, msg.as_bytes());
            let forged = format!("{msg}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()));
            assert_eq!(verify(&forged), Err(TokenError::Algorithm));
        }
        // Other algorithms, even of the EC family.
        for alg in ["ES384", "RS256", "PS256", "EdDSA", "es256"] {
            let h = b64json(&serde_json::json!({"alg": alg, "typ": "at+jwt", "kid": kid}));
            assert_eq!(
                verify(&format!("{h}.{payload}.AAAA")),
                Err(TokenError::Algorithm)
            );
        }

        // An attacker's key embedded (jwk) or pointed at (jku, x5u), with our kid or theirs.
        let evil = attacker_pair();
        let evil_point = evil.public_key().as_ref().to_vec();
        let evil_jwk = serde_json::json!({
            "kty": "EC", "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(&evil_point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&evil_point[33..65]),
        });
        for extra in [
            ("jwk", evil_jwk.clone()),
            ("jku", serde_json::json!("https://evil.test/jwks.json")),
            ("x5u", serde_json::json!("https://evil.test/cert.pem")),
            ("x5c", serde_json::json!(["MIIB"])),
            ("crit", serde_json::json!(["exp"])),
        ] {
            for k in [kid.as_str(), "evil"] {
                let mut h = serde_json::json!({"alg": "ES256", "typ": "at+jwt", "kid": k});
                h[extra.0] = extra.1.clone();
                assert_eq!(
                    verify(&es256(h, &c, &evil)),
                    Err(TokenError::Header),
                    "{}",
                    extra.0
                );
            }
        }
        // Without those headers, an attacker's signature under our kid fails the signature check.
        let h = serde_json::json!({"alg": "ES256", "typ": "at+jwt", "kid": kid});
        assert_eq!(verify(&es256(h, &c, &evil)), Err(TokenError::Signature));

        // Our own key, but the wrong or missing typ.
        let ours = current_pair(&ring, ts.tenant_id(), &master);
        for typ in [Some("JWT"), Some("at+jwt2"), Some("jwt"), None] {
            let mut h = serde_json::json!({"alg": "ES256", "kid": kid});
            if let Some(t) = typ {
                h["typ"] = t.into();
            }
            assert_eq!(verify(&es256(h, &c, &ours)), Err(TokenError::Type));
        }
        // Unknown or missing kid.
        let h = serde_json::json!({"alg": "ES256", "typ": "at+jwt", "kid": "nope"});
        assert_eq!(verify(&es256(h, &c, &ours)), Err(TokenError::UnknownKey));
        let h = serde_json::json!({"alg": "ES256", "typ": "at+jwt"});
        assert_eq!(verify(&es256(h, &c, &ours)), Err(TokenError::UnknownKey));

        // Expired (by the system clock and by `now`), wrong issuer, wrong audience.
        let mut expired = c.clone();
        expired.exp = now_ts() - 10;
        assert_eq!(
            verify(&keys.sign(&expired).unwrap()),
            Err(TokenError::Expired)
        );
        let fresh = keys.sign(&c).unwrap();
        assert_eq!(
            keys.verify(&fresh, ISS, AUD, c.exp),
            Err(TokenError::Expired)
        );
        assert!(keys.verify(&fresh, ISS, AUD, c.exp - 1).is_ok());
        assert_eq!(
            keys.verify(&fresh, "https://other", AUD, now_ts()),
            Err(TokenError::Claims)
        );
        assert_eq!(
            keys.verify(&fresh, ISS, "other", now_ts()),
            Err(TokenError::Claims)
        );

        // A missing claim, even correctly signed.
        let mut partial = serde_json::to_value(&c).unwrap();
        partial.as_object_mut().unwrap().remove("sid");
        let msg = format!(
            "{}.{}",
            b64json(&serde_json::json!({"alg": "ES256", "typ": "at+jwt", "kid": kid})),
            b64json(&partial)
        );
        let sig = ours.sign(&SystemRandom::new(), msg.as_bytes()).unwrap();
        let t = format!("{msg}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()));
        assert_eq!(verify(&t), Err(TokenError::Claims));

        // A tampered payload under a valid signature.
        let mut parts: Vec<String> = fresh.split('.').map(str::to_owned).collect();
        let mut admin = c.clone();
        admin.sub = "admin".into();
        parts[1] = b64json(&serde_json::to_value(&admin).unwrap());
        assert_eq!(verify(&parts.join(".")), Err(TokenError::Signature));

        // Garbage.
        for t in [
            "",
            "a.b",
            "a.b.c.d",
            "!!!.b.c",
            &"a".repeat(MAX_TOKEN_LEN + 1),
        ] {
            assert_eq!(verify(t), Err(TokenError::Malformed), "{t:.20}");
        }

        // Empty keys neither sign nor verify.
        let empty = TokenKeys::empty();
        assert!(matches!(empty.sign(&c), Err(TokenError::Sign(_))));
        assert_eq!(
            empty.verify(&fresh, ISS, AUD, now_ts()),
            Err(TokenError::UnknownKey)
        );
        assert_eq!(empty.current_kid(), "");
        assert_eq!(empty.jwks(), &serde_json::json!({"keys": []}));
    }

    #[tokio::test]
    async fn another_tenants_keys_do_not_verify() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        let master = MasterKey::generate();
        let now = OffsetDateTime::now_utc();
        let a = store.tenant(TenantId::new());
        let b = store.tenant(TenantId::new());
        let (_, keys_a) = KeyRing::load_or_create(&a, &master, now).unwrap();
        let (ring_b, keys_b) = KeyRing::load_or_create(&b, &master, now).unwrap();
        assert_ne!(keys_a.current_kid(), keys_b.current_kid());
        let c = claims(&b.tenant_id().to_string());
        let token_b = keys_b.sign(&c).unwrap();
        assert_eq!(
            keys_a.verify(&token_b, ISS, AUD, now_ts()),
            Err(TokenError::UnknownKey)
        );
        // B's key under A's kid: the signature does not verify.
        let pair_b = current_pair(&ring_b, b.tenant_id(), &master);
        let h = serde_json::json!({"alg": "ES256", "typ": "at+jwt", "kid": keys_a.current_kid()});
        assert_eq!(
            keys_a.verify(&es256(h, &c, &pair_b), ISS, AUD, now_ts()),
            Err(TokenError::Signature)
        );
        // A sealed key does not open under another tenant's associated data.
        let r = &ring_b.records()[0];
        assert!(master
            .open(&signing_key_aad(a.tenant_id(), &r.kid), &r.sealed)
            .is_err());
        // Debug never shows the sealed key.
        let dbg = format!("{r:?} {keys_b:?}");
        assert!(!dbg.contains("sealed") && !dbg.contains("Sealed"), "{dbg}");
    }

    #[tokio::test]
    async fn rotation_keeps_the_old_key_verifying_until_its_tokens_expire() {
        let dir = tempfile::tempdir().unwrap();
        let tenant = TenantId::new();
        let master = MasterKey::generate();
        let t0 = OffsetDateTime::now_utc();
        let ttl = std::time::Duration::from_secs(900);
        let (old_kid, new_kid, old_token, c) = {
            let store = open(dir.path());
            let ts = store.tenant(tenant);
            let (mut ring, keys) = KeyRing::load_or_create(&ts, &master, t0).unwrap();
            // Loading again does not create another key.
            let (again, keys_again) = KeyRing::load_or_create(&ts, &master, t0).unwrap();
            assert_eq!(again.records(), ring.records());
            assert_eq!(keys_again.current_kid(), keys.current_kid());

            let c = claims(&tenant.to_string());
            let old_token = keys.sign(&c).unwrap();
            let old_kid = keys.current_kid().to_owned();

            let (rotated, keys2) = ring.rotate(&ts, &master, t0, ttl).unwrap();
            assert_eq!(rotated.previous_kid.as_deref(), Some(old_kid.as_str()));
            assert_eq!(rotated.kid, keys2.current_kid());
            assert_ne!(rotated.kid, old_kid);
            let until = t0 + time::Duration::seconds(900 + 60);
            assert_eq!(rotated.previous_published_until, Some(until));
            let json = serde_json::to_value(&rotated).unwrap();
            assert!(json["previous_published_until"]
                .as_str()
                .unwrap()
                .contains('T'));

            // The new key signs; the old token still verifies; both are published, new first.
            let new_token = keys2.sign(&c).unwrap();
            assert_eq!(
                jsonwebtoken::decode_header(&new_token)
                    .unwrap()
                    .kid
                    .as_deref(),
                Some(rotated.kid.as_str())
            );
            assert_eq!(keys2.verify(&new_token, ISS, AUD, now_ts()).unwrap(), c);
            assert_eq!(keys2.verify(&old_token, ISS, AUD, now_ts()).unwrap(), c);
            let kids: Vec<&str> = keys2.jwks()["keys"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| k["kid"].as_str().unwrap())
                .collect();
            assert_eq!(kids, vec![rotated.kid.as_str(), old_kid.as_str()]);
            // The old keys never verify the new token's kid (no cross-over).
            assert_eq!(
                keys.verify(&new_token, ISS, AUD, now_ts()),
                Err(TokenError::UnknownKey)
            );
            ts.ticket().wait().await.unwrap();
            (old_kid, rotated.kid, old_token, c)
        };

        // Reopened: the same kids, the new one current, the old one still published.
        let store = reopen(dir.path()).await;
        let ts = store.tenant(tenant);
        let (ring, keys) = KeyRing::load_or_create(&ts, &master, t0).unwrap();
        assert_eq!(keys.current_kid(), new_kid);
        let mut kids: Vec<&str> = ring.records().iter().map(|r| r.kid.as_str()).collect();
        kids.sort_unstable();
        let mut expected = vec![old_kid.as_str(), new_kid.as_str()];
        expected.sort_unstable();
        assert_eq!(kids, expected);
        assert_eq!(keys.verify(&old_token, ISS, AUD, now_ts()).unwrap(), c);

        // Past publish_until the retired key is deleted on load.
        let later = t0 + time::Duration::seconds(900 + 61);
        let (ring, keys) = KeyRing::load_or_create(&ts, &master, later).unwrap();
        assert_eq!(ring.records().len(), 1);
        assert_eq!(keys.current_kid(), new_kid);
        assert_eq!(keys.jwks()["keys"].as_array().unwrap().len(), 1);
        assert_eq!(ts.scan::<SigningKeyRecord>(b"").count(), 1);
        assert_eq!(
            keys.verify(&old_token, ISS, AUD, now_ts()),
            Err(TokenError::UnknownKey)
        );
    }

    #[tokio::test]
    async fn rotation_drops_expired_keys_and_more_than_one_current_key_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        let ts = store.tenant(TenantId::new());
        let master = MasterKey::generate();
        let t0 = OffsetDateTime::now_utc();
        let ttl = std::time::Duration::from_secs(60);
        let (mut ring, _) = KeyRing::load_or_create(&ts, &master, t0).unwrap();
        let first = ring.records()[0].kid.clone();
        ring.rotate(&ts, &master, t0, ttl).unwrap();
        assert_eq!(ring.records().len(), 2);
        // Rotating again after the first key's publication ends drops it in the same batch.
        let t1 = t0 + time::Duration::seconds(200);
        let (rotated, keys) = ring.rotate(&ts, &master, t1, ttl).unwrap();
        assert_eq!(ring.records().len(), 2);
        assert!(ring.records().iter().all(|r| r.kid != first));
        assert_eq!(ts.scan::<SigningKeyRecord>(b"").count(), 2);
        assert_eq!(keys.jwks()["keys"].as_array().unwrap().len(), 2);
        assert_eq!(keys.current_kid(), rotated.kid);

        // Two current keys is corrupt data: refused rather than guessed.
        let mut batch = ts.batch();
        let mut bad = ring
            .records()
            .iter()
            .find(|r| !r.is_current())
            .unwrap()
            .clone();
        bad.retired_at = None;
        bad.publish_until = None;
        batch.put(bad.kid.as_bytes(), &bad).unwrap();
        ts.apply(batch).unwrap();
        assert!(KeyRing::load_or_create(&ts, &master, t1).is_err());
    }
}
