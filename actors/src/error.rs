//! Business errors, carried in replies. An `Err` returned from an actor's `handle` means
//! "restart me"; these never are.

use thiserror::Error;

pub use crate::tenant::{
    agents::AgentError, guardian::GuardianError, guests::GuestError, mfa::MfaError,
    oauth_clients::OAuthClientError, organizations::OrgError, passkeys::PasskeyError,
    settings::SettingsError, sms::SmsError, social::SocialError, sso::SsoError, users::UserError,
    webhooks::WebhookError,
};

/// What a call to any actor can fail with, besides its own business error.
#[derive(Debug, Error)]
pub enum CallError<E> {
    /// The actor is dead, restarting, over its restart budget, or did not answer in time.
    #[error("the service is unavailable")]
    Unavailable,
    #[error(transparent)]
    Failed(E),
}

/// Errors of the tenant supervisor: what every flow shares, and each flow's own refusals.
#[derive(Debug, Error)]
pub enum TenantError {
    #[error("not found")]
    NotFound,
    #[error("fault injection is disabled")]
    FaultInjectionDisabled,
    #[error("invalid e-mail or password")]
    InvalidCredentials,
    #[error("the e-mail address is not verified")]
    EmailNotVerified,
    /// An account whose address is not confirmed adds no durable credential (see
    /// `tenant::credentials`).
    #[error("confirm the account's e-mail address before adding {credential}")]
    EmailUnconfirmed {
        credential: crate::tenant::credentials::Credential,
    },
    #[error("too many failed attempts")]
    TooManyAttempts { retry_after: u64 },
    /// Past the client address's failed sign-ins: a solved CAPTCHA lets the attempt through.
    #[error("a CAPTCHA must be solved to go on from this address")]
    CaptchaRequired,
    #[error("rate limited")]
    RateLimited { retry_after: u64 },
    #[error("the link is invalid, used or expired")]
    InvalidLinkToken,
    #[error("the refresh token is invalid or expired")]
    InvalidRefreshToken,
    #[error("the refresh token was already used")]
    RefreshTokenReused,
    #[error("the session is not valid")]
    InvalidSession,
    #[error("the challenge or step-up token is invalid, used or expired")]
    InvalidChallenge,
    #[error("this step-up method is not available to this user")]
    StepUpMethodUnavailable,
    #[error("this passwordless method is disabled for the tenant")]
    PasswordlessDisabled,
    #[error("not available to guests")]
    GuestNotAllowed,
    #[error("the account is blocked")]
    UserBlocked,
    #[error("the wallet request was refused: {}", .0.as_str())]
    Eudi(crate::tenant::eudi::EudiRefusal),
    #[error("the OAuth request was refused: {}", .0.code())]
    OAuth(crate::tenant::oauth::OAuthFailure),
    #[error("internal: {0}")]
    Internal(String),
    #[error(transparent)]
    Agent(#[from] AgentError),
    #[error(transparent)]
    Mfa(#[from] MfaError),
    #[error(transparent)]
    Passkey(#[from] PasskeyError),
    #[error(transparent)]
    Social(#[from] SocialError),
    #[error(transparent)]
    Guardian(#[from] GuardianError),
    #[error(transparent)]
    Guest(#[from] GuestError),
    #[error(transparent)]
    Sms(#[from] SmsError),
    #[error(transparent)]
    OAuthClient(#[from] OAuthClientError),
    #[error(transparent)]
    Webhook(#[from] WebhookError),
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    User(#[from] UserError),
    #[error(transparent)]
    Organization(#[from] OrgError),
    #[error(transparent)]
    Sso(#[from] SsoError),
}

/// Errors of the directory.
#[derive(Debug, Error)]
pub enum DirectoryError {
    #[error("no such tenant")]
    TenantNotFound,
    #[error("the slug {0:?} is taken")]
    SlugTaken(String),
    #[error("the idempotency key was used with a different request")]
    IdempotencyConflict,
    #[error("a dashboard account with this e-mail already exists")]
    AccountExists,
    #[error("the tenant is over its restart budget")]
    TenantUnavailable,
    #[error("no valid dashboard session")]
    SessionInvalid,
    #[error("the invitation is invalid, used or expired")]
    InviteInvalid,
    #[error("already a member of this tenant")]
    AlreadyMember,
    #[error("no such member or invitation")]
    NotFound,
    #[error("the tenant's last owner cannot be removed or demoted")]
    LastOwner,
    #[error("the master key was not rotated: {0}")]
    KeyRotation(String),
    #[error("the tenant has as many management keys as it may")]
    ManagementKeyLimit,
    #[error("no such resource of this tenant")]
    ResourceNotFound,
    #[error("this scope name is already registered on the resource")]
    CatalogDuplicate,
    #[error("the resource has as many scopes as it may")]
    CatalogResourceCap,
    #[error("the tenant has as many catalog scopes as it may")]
    CatalogTenantCap,
    #[error("wrong e-mail or password")]
    InvalidCredentials,
    #[error("the link is invalid, used or expired")]
    TokenInvalid,
    #[error("too many requests; retry in {retry_after_secs} s")]
    RateLimited { retry_after_secs: u64 },
    #[error("the account's address is not verified")]
    EmailUnverified,
    #[error("the account already has a second factor")]
    MfaAlreadyEnabled,
    #[error("no second factor is being set up")]
    MfaNotPending,
    #[error("the code is wrong or used")]
    InvalidCode,
    #[error("internal: {0}")]
    Internal(String),
}

impl From<tessera_storage::StorageError> for DirectoryError {
    fn from(e: tessera_storage::StorageError) -> Self {
        DirectoryError::Internal(e.to_string())
    }
}

impl From<tessera_storage::StorageError> for TenantError {
    fn from(e: tessera_storage::StorageError) -> Self {
        TenantError::Internal(e.to_string())
    }
}
