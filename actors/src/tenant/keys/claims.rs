//! What each kind of token the tenant signs claims, with its `typ`: access tokens, step-up
//! tokens, social exchange tokens, agents' tokens, and the ID token given back as a logout
//! hint; their expiry, which every check reads; and why a token could not be signed or was
//! refused.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The JWS `typ` of an access token (RFC 9068 §2.1).
pub const ACCESS_TOKEN_TYP: &str = "at+jwt";

/// The JWS `typ` of a step-up token: never accepted where an access token is expected, nor
/// the reverse.
pub const STEP_UP_TOKEN_TYP: &str = "step-up+jwt";

/// `typ` of a social sign-in's exchange token.
pub const EXCHANGE_TOKEN_TYP: &str = "exchange+jwt";

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
    /// The organization the session works in (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub org_id: Option<String>,
    /// The member's role in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub org_role: Option<String>,
    /// What that role grants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub org_permissions: Option<Vec<String>>,
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
///
/// [`TokenKeys::verify_typed`]: super::TokenKeys::verify_typed
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
