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
//!
//! Its parts, one job a file: `records.rs` (the stored key, its algorithm, its sealing and
//! its thumbprint), `material.rs` (key pairs generated and parsed), `claims.rs` (what each
//! kind of token claims, and `TokenError`), `signer.rs` (`TokenKeys` built from the records,
//! and every signature), `verifier.rs` (every check of a token) and `ring.rs` (`KeyRing`:
//! loading, the first RS256 key, rotation).

pub mod msg;

mod claims;
mod material;
mod records;
mod ring;
mod signer;
mod verifier;

pub use self::{
    claims::{
        AccessClaims, ActorClaim, AgentClaims, ExchangeClaims, Expiring, IdTokenHint, StepUpClaims,
        TokenError, ACCESS_TOKEN_TYP, EXCHANGE_TOKEN_TYP, STEP_UP_TOKEN_TYP,
    },
    material::generate_rsa_pkcs8,
    records::{signing_key_aad, KeyAlg, SigningKeyRecord},
    ring::{KeyRing, RotatedKeys},
    signer::TokenKeys,
};

#[cfg(test)]
mod tests;
