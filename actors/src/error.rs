//! Business errors, carried in replies. An `Err` returned from an actor's `handle` means
//! "restart me"; these never are.

use thiserror::Error;

/// What a call to any actor can fail with, besides its own business error.
#[derive(Debug, Error)]
pub enum CallError<E> {
    /// The actor is dead, restarting, over its restart budget, or did not answer in time.
    #[error("the service is unavailable")]
    Unavailable,
    #[error(transparent)]
    Failed(E),
}

/// Errors of the tenant supervisor.
#[derive(Debug, Error)]
pub enum TenantError {
    #[error("not found")]
    NotFound,
    #[error("agents are not available on the free tier")]
    AgentTierUnauthorized,
    #[error("the tenant has as many agents as it may")]
    AgentLimit,
    #[error("the agent is revoked")]
    AgentAlreadyRevoked,
    #[error("the user revoked this agent")]
    AgentRevokedByUser,
    #[error("fault injection is disabled")]
    FaultInjectionDisabled,
    /// A settings change that breaks a rule of `tenant::settings::rules`: each field with its
    /// reason.
    #[error("the settings change breaks a rule")]
    SettingsInvalid {
        fields: std::collections::BTreeMap<String, String>,
    },
    #[error("enabling guest sign-ins with a privileged default role needs confirmation")]
    PrivilegedDefaultRoleUnconfirmed {
        default_role: crate::tenant::settings::roles::DefaultRole,
    },
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
    #[error("guest sign-ins are disabled")]
    AnonymousDisabled,
    #[error("guest sign-ins rate limited")]
    AnonymousRateLimited { retry_after: u64 },
    #[error("the monthly active user cap is reached")]
    MauExhausted,
    #[error("the guest was already claimed")]
    AlreadyClaimed,
    #[error("the challenge or step-up token is invalid, used or expired")]
    InvalidChallenge,
    #[error("the MFA code is wrong")]
    InvalidMfaCode,
    #[error("MFA is already enabled")]
    MfaAlreadyEnabled,
    #[error("MFA is not enabled")]
    MfaNotEnabled,
    #[error("MFA setup was not started")]
    MfaSetupNotStarted,
    #[error("MFA is not available to this user")]
    MfaUnavailable,
    #[error("this step-up method is not available to this user")]
    StepUpMethodUnavailable,
    #[error("this passwordless method is disabled for the tenant")]
    PasswordlessDisabled,
    #[error("text messages to this country are not allowed")]
    CountryNotAllowed,
    #[error("the tenant's monthly text message cap is reached")]
    SmsCapReached { retry_after: u64 },
    #[error("the SMS monthly cap is above the tier's ceiling on the platform's account")]
    SmsCapAboveTier {
        max: u32,
        tier: crate::records::Tier,
    },
    #[error("not available to guests")]
    GuestNotAllowed,
    #[error("the account is blocked")]
    UserBlocked,
    #[error("another user has this e-mail address")]
    EmailInUse,
    #[error("another user has confirmed this phone number")]
    PhoneInUse,
    #[error("the user has no e-mail address")]
    NoEmail,
    #[error("users cannot delete their own accounts in this tenant")]
    SelfDeletionDisabled,
    #[error("the user has as many passkeys as they may")]
    PasskeyLimit,
    #[error("no such passkey ceremony")]
    PasskeyCeremonyNotFound,
    #[error("the passkey assertion was refused")]
    PasskeyInvalidAssertion,
    #[error("the passkey registration was refused")]
    PasskeyInvalidRegistration,
    #[error("this credential is already registered")]
    PasskeyAlreadyRegistered,
    #[error("the passkey assertion lacks user verification")]
    PasskeyStepUpRequired,
    #[error("the last way to sign in cannot be deleted")]
    PasskeyLastCredential,
    #[error("users hold passkeys under the current relying-party id")]
    PasskeyRpIdInUse { passkeys: usize },
    #[error("the tenant has as many OAuth clients as it may")]
    OAuthClientLimit,
    #[error("a public client has no secret")]
    OAuthClientPublic,
    #[error("the social provider is not configured")]
    SocialNotConfigured,
    #[error("the redirect URI is not one of the tenant's URLs")]
    SocialRedirectNotAllowed,
    #[error("the sign-in state is unknown, used or expired")]
    SocialStateInvalid,
    #[error("the sign-in was begun in another browser")]
    SocialStateForeign { redirect_uri: String, hosted: bool },
    #[error("the social sign-in was refused: {}", .0.as_str())]
    SocialRefused(crate::tenant::social::SocialRefusal),
    #[error("the exchange token is unknown, used or expired")]
    SocialExchangeInvalid,
    #[error("the provider is the user's only way to sign in")]
    SocialLastMethod,
    #[error("{field}: {reason}")]
    SocialCredentialMissing {
        field: &'static str,
        reason: &'static str,
    },
    #[error("the age verification token is unknown, used or expired")]
    AgeTokenInvalid,
    #[error("the tenant's minor protection needs a date of birth or an age verification token")]
    DateOfBirthRequired,
    #[error(
        "the tenant protects minors: accounts are created by registration with a date of birth"
    )]
    AgeRequired,
    #[error("the account waits for a guardian's consent")]
    GuardianConsentPending,
    #[error("a guardian declined consent for the account")]
    GuardianConsentDeclined,
    #[error("the account does not wait for a guardian's consent")]
    GuardianConsentNotPending,
    #[error("the guardian link or its form is invalid")]
    GuardianInvalid,
    #[error("another guardian consented for this account")]
    GuardianOther,
    #[error("the wallet request was refused: {}", .0.as_str())]
    Eudi(crate::tenant::eudi::EudiRefusal),
    #[error("the OAuth request was refused: {}", .0.code())]
    OAuth(crate::tenant::oauth::OAuthFailure),
    #[error("the tenant has as many webhook endpoints as it may")]
    WebhookLimit,
    #[error("the webhook endpoint is disabled")]
    WebhookDisabled,
    #[error("an attempt of this delivery is under way")]
    WebhookDeliveryInFlight,
    #[error("internal: {0}")]
    Internal(String),
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
