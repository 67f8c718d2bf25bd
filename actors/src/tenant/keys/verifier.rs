//! Every check of a token the tenant signed (jsonwebtoken's strict verifier): the size, the
//! header (its `alg` against its key's, its `typ`, no key material), the signature, the
//! claims.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use jsonwebtoken::Validation;

use super::{
    claims::{
        AccessClaims, AgentClaims, ExchangeClaims, Expiring, IdTokenHint, StepUpClaims, TokenError,
        ACCESS_TOKEN_TYP, EXCHANGE_TOKEN_TYP, STEP_UP_TOKEN_TYP,
    },
    records::KeyAlg,
    signer::TokenKeys,
};

/// Tokens longer than this are refused before any parsing: ours are well under 1 KiB, and an
/// unbounded input would let a caller make us decode arbitrarily large JSON.
pub(super) const MAX_TOKEN_LEN: usize = 8 * 1024;

/// Header parameters that carry key material or tell the verifier where to fetch keys. Using
/// any of them would let the token choose the key that verifies it, so their mere presence
/// refuses the token.
const FORBIDDEN_HEADERS: &[&str] = &["jwk", "jku", "x5u", "x5c", "x5t", "x5t#S256", "crit"];

/// The `typ` an access token may carry: RFC 9068's, or its media type in full.
const ACCESS_TYPS: &[&str] = &[ACCESS_TOKEN_TYP, "application/at+jwt"];

impl TokenKeys {
    /// Verifies an access token of this tenant as an agent's (any audience).
    pub fn verify_agent(
        &self,
        token: &str,
        issuer: &str,
        now: i64,
    ) -> Result<AgentClaims, TokenError> {
        self.verify_typed(token, ACCESS_TYPS, issuer, None, Some(now))
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
        self.verify_typed(token, ACCESS_TYPS, issuer, None, Some(now))
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
        self.verify_typed(token, ACCESS_TYPS, issuer, Some(audience), Some(now))
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
