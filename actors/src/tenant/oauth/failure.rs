//! Why an OAuth request was refused, in RFC 6749 terms: the refusal every part of the
//! authorization server answers with, and the agents' grants too.

use crate::error::TenantError;

/// Why an OAuth request was refused, in RFC 6749 terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OAuthFailure {
    /// Unknown client, wrong or missing secret, a method it is not registered for.
    InvalidClient,
    /// A code or refresh token that is unknown, expired, used, or not this client's; a
    /// redirect URI or verifier that does not match.
    InvalidGrant,
    InvalidScope,
    /// RFC 8707: the resource asked for is not one the grant covers.
    InvalidTarget,
    /// Consent is needed and `prompt=none` forbids asking.
    ConsentRequired,
    /// The consent decision does not match what was shown.
    InvalidRequest,
    /// The client is not allowed this (a public client at introspection).
    UnauthorizedClient,
    /// The user may not grant this: the organization asked for is not one of theirs.
    AccessDenied,
}

impl OAuthFailure {
    pub fn code(self) -> &'static str {
        match self {
            OAuthFailure::InvalidClient => "invalid_client",
            OAuthFailure::InvalidGrant => "invalid_grant",
            OAuthFailure::InvalidScope => "invalid_scope",
            OAuthFailure::InvalidTarget => "invalid_target",
            OAuthFailure::ConsentRequired => "consent_required",
            OAuthFailure::InvalidRequest => "invalid_request",
            OAuthFailure::UnauthorizedClient => "unauthorized_client",
            OAuthFailure::AccessDenied => "access_denied",
        }
    }
}

pub(super) fn fail(f: OAuthFailure) -> TenantError {
    TenantError::OAuth(f)
}
