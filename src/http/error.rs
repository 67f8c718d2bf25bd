//! The one error type of the HTTP layer: every failure becomes
//! `{"error": {"code": "<area>/<reason>", "message": "...", "details": {...}?}}`.
//!
//! Internal causes are logged here and never sent: a client sees a generic message.

use std::collections::BTreeMap;

use axum::{
    http::{header, HeaderName, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde::Serialize;
use serde_json::{json, Value};
use tessera_actors::{password::HashError, CallError, DirectoryError, TenantError};
use utoipa::ToSchema;

/// The error body, for the OpenAPI document.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Serialize, ToSchema)]
pub struct ErrorDetail {
    /// `<area>/<reason>`, stable: clients branch on it.
    pub code: String,
    /// For people; may change.
    pub message: String,
    /// Structured context, e.g. `{"fields": {"password": "..."}}` for validation errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub details: Option<Value>,
}

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: String,
    pub message: String,
    pub details: Option<Value>,
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code: code.into(),
            message: message.into(),
            details: None,
            headers: Vec::new(),
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }

    /// 400 `validation/invalid_request` naming each offending field.
    pub fn invalid_fields(fields: BTreeMap<String, String>) -> Self {
        let names: Vec<&str> = fields.keys().map(String::as_str).collect();
        let message = format!("invalid request: {}", names.join(", "));
        Self::new(
            StatusCode::BAD_REQUEST,
            "validation/invalid_request",
            message,
        )
        .with_details(json!({ "fields": fields }))
    }

    pub fn invalid_field(field: &str, reason: impl Into<String>) -> Self {
        Self::invalid_fields(BTreeMap::from([(field.to_owned(), reason.into())]))
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "resource/not_found",
            format!("{what} not found"),
        )
    }

    /// 401 `dashboard/unauthenticated`: no session, or an expired one.
    pub fn unauthenticated() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "dashboard/unauthenticated",
            "a valid dashboard session is required",
        )
    }

    /// 403 `dashboard/forbidden`: the caller's role does not allow this.
    pub fn forbidden() -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "dashboard/forbidden",
            "your role in this tenant does not allow this",
        )
    }

    /// 429 with `Retry-After`. The `service_docs` middleware adds `X-Service-Docs`
    /// (`server.docs_url`) to every 429.
    pub fn rate_limited(code: &str, retry_after_secs: u64) -> Self {
        let retry = HeaderValue::from_str(&retry_after_secs.max(1).to_string())
            .unwrap_or(HeaderValue::from_static("1"));
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            code,
            "too many attempts; retry later",
        )
        .with_header(header::RETRY_AFTER, retry)
    }

    pub fn unavailable() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "service/unavailable",
            "the service is temporarily unavailable; retry shortly",
        )
        .with_header(header::RETRY_AFTER, HeaderValue::from_static("1"))
    }

    /// 500 with a generic message; the cause goes to the log only.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "service/internal_error",
            "an internal error occurred",
        )
    }

    /// The envelope for a bare status produced below the handlers (404, 405, 413, timeouts).
    pub fn for_status(status: StatusCode) -> Self {
        let (code, message) = match status {
            StatusCode::NOT_FOUND => ("route/not_found", "no such route"),
            StatusCode::METHOD_NOT_ALLOWED => (
                "route/method_not_allowed",
                "this route does not take that method",
            ),
            StatusCode::PAYLOAD_TOO_LARGE => (
                "validation/payload_too_large",
                "the request body is too large",
            ),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => (
                "validation/unsupported_media_type",
                "the request body must be application/json",
            ),
            StatusCode::REQUEST_TIMEOUT | StatusCode::SERVICE_UNAVAILABLE => (
                "service/unavailable",
                "the service is temporarily unavailable",
            ),
            s if s.is_client_error() => ("validation/invalid_request", "the request is invalid"),
            _ => ("service/internal_error", "an internal error occurred"),
        };
        Self::new(status, code, message)
    }
}

/// 401 `auth/invalid_token` with the RFC 6750 challenge.
pub fn invalid_token() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "auth/invalid_token",
        "the access token is invalid, expired or revoked",
    )
    .with_header(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer error=\"invalid_token\""),
    )
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: self.message,
                details: self.details,
            },
        };
        let mut resp = (self.status, Json(body)).into_response();
        for (k, v) in self.headers {
            resp.headers_mut().insert(k, v);
        }
        resp
    }
}

/// A full hashing queue is 503 with `Retry-After`, answered at once.
impl From<HashError> for ApiError {
    fn from(e: HashError) -> Self {
        match e {
            HashError::Busy => ApiError::unavailable(),
            HashError::Failed(cause) => ApiError::internal(cause),
        }
    }
}

impl From<TenantError> for ApiError {
    fn from(e: TenantError) -> Self {
        CallError::Failed(e).into()
    }
}

impl From<CallError<TenantError>> for ApiError {
    fn from(e: CallError<TenantError>) -> Self {
        match e {
            CallError::Unavailable => ApiError::unavailable(),
            CallError::Failed(TenantError::NotFound) => ApiError::not_found("resource"),
            CallError::Failed(TenantError::InvalidCredentials) => ApiError::new(
                StatusCode::UNAUTHORIZED,
                "auth/invalid_credentials",
                "invalid e-mail or password",
            ),
            CallError::Failed(TenantError::EmailNotVerified) => ApiError::new(
                StatusCode::FORBIDDEN,
                "auth/email_not_verified",
                "confirm your e-mail address first: follow the link in the verification mail",
            ),
            CallError::Failed(TenantError::EmailUnconfirmed { credential }) => ApiError::new(
                StatusCode::FORBIDDEN,
                "auth/email_unconfirmed",
                "confirm the account's e-mail address first: an account whose address is not confirmed cannot add passkeys, authenticator apps, phone numbers, linked accounts, wallets or consents",
            )
            .with_details(serde_json::json!({ "credential": credential })),
            CallError::Failed(TenantError::TooManyAttempts { retry_after }) => {
                ApiError::rate_limited("auth/too_many_attempts", retry_after)
            }
            CallError::Failed(TenantError::CaptchaRequired) => ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "auth/captcha_required",
                "too many failed sign-ins from this network: solve the CAPTCHA and send its token as captcha_token",
            ),
            CallError::Failed(TenantError::RateLimited { retry_after }) => {
                ApiError::rate_limited("auth/rate_limited", retry_after)
            }
            CallError::Failed(TenantError::InvalidLinkToken) => ApiError::new(
                StatusCode::BAD_REQUEST,
                "auth/invalid_or_expired_token",
                "the link is invalid, already used or expired",
            ),
            CallError::Failed(TenantError::InvalidRefreshToken) => ApiError::new(
                StatusCode::UNAUTHORIZED,
                "auth/invalid_refresh_token",
                "the refresh token is invalid, expired or revoked",
            ),
            CallError::Failed(TenantError::RefreshTokenReused) => ApiError::new(
                StatusCode::UNAUTHORIZED,
                "auth/refresh_token_reused",
                "this refresh token was already used; the session has been revoked",
            ),
            CallError::Failed(TenantError::InvalidSession) => invalid_token(),
            CallError::Failed(TenantError::InvalidChallenge) => ApiError::new(
                StatusCode::UNAUTHORIZED,
                "invalid_or_expired_token",
                "the challenge or step-up token is invalid, already used, expired, or belongs to another session",
            ),
            CallError::Failed(TenantError::StepUpMethodUnavailable) => ApiError::new(
                StatusCode::BAD_REQUEST,
                "step_up/method_unavailable",
                "this step-up method is not available to this user",
            ),
            CallError::Failed(TenantError::PasswordlessDisabled) => ApiError::new(
                StatusCode::FORBIDDEN,
                "passwordless/disabled",
                "this sign-in method is disabled for this tenant",
            ),
            CallError::Failed(TenantError::GuestNotAllowed) => ApiError::new(
                StatusCode::FORBIDDEN,
                "auth/anonymous_not_allowed",
                "guests cannot do this; register first",
            ),
            CallError::Failed(TenantError::UserBlocked) => ApiError::new(
                StatusCode::FORBIDDEN,
                "auth/user_blocked",
                "this account is blocked; contact the app's support",
            ),
            CallError::Failed(TenantError::Eudi(r)) => r.into(),
            CallError::Failed(TenantError::OAuth(f)) => f.into(),
            CallError::Failed(TenantError::Agent(e)) => e.into(),
            CallError::Failed(TenantError::Mfa(e)) => e.into(),
            CallError::Failed(TenantError::Passkey(e)) => e.into(),
            CallError::Failed(TenantError::Social(e)) => e.into(),
            CallError::Failed(TenantError::Guardian(e)) => e.into(),
            CallError::Failed(TenantError::Guest(e)) => e.into(),
            CallError::Failed(TenantError::Sms(e)) => e.into(),
            CallError::Failed(TenantError::OAuthClient(e)) => e.into(),
            CallError::Failed(TenantError::Webhook(e)) => e.into(),
            CallError::Failed(TenantError::Settings(e)) => e.into(),
            CallError::Failed(TenantError::User(e)) => e.into(),
            CallError::Failed(TenantError::Organization(e)) => e.into(),
            CallError::Failed(TenantError::Sso(e)) => e.into(),
            CallError::Failed(e) => ApiError::internal(e),
        }
    }
}

impl From<CallError<DirectoryError>> for ApiError {
    fn from(e: CallError<DirectoryError>) -> Self {
        match e {
            CallError::Unavailable | CallError::Failed(DirectoryError::TenantUnavailable) => {
                ApiError::unavailable()
            }
            CallError::Failed(DirectoryError::TenantNotFound) => ApiError::not_found("tenant"),
            CallError::Failed(DirectoryError::SlugTaken(s)) => ApiError::new(
                StatusCode::CONFLICT,
                "tenant/slug_taken",
                format!("the slug {s:?} is taken"),
            ),
            CallError::Failed(DirectoryError::IdempotencyConflict) => ApiError::new(
                StatusCode::CONFLICT,
                "onboarding/idempotency_conflict",
                "this idempotency_key was used with a different request",
            ),
            CallError::Failed(DirectoryError::AccountExists) => ApiError::new(
                StatusCode::CONFLICT,
                "onboarding/account_exists",
                "a dashboard account with this e-mail exists: log in to the dashboard, or reset its password",
            ),
            CallError::Failed(DirectoryError::SessionInvalid) => ApiError::unauthenticated(),
            CallError::Failed(DirectoryError::InviteInvalid) => ApiError::new(
                StatusCode::BAD_REQUEST,
                "dashboard/invite_invalid",
                "the invitation is invalid, already used or expired",
            ),
            CallError::Failed(DirectoryError::AlreadyMember) => ApiError::new(
                StatusCode::CONFLICT,
                "dashboard/already_member",
                "this account is already a member of the tenant",
            ),
            CallError::Failed(DirectoryError::NotFound) => ApiError::new(
                StatusCode::NOT_FOUND,
                "resource/not_found",
                "no such member or invitation",
            ),
            CallError::Failed(DirectoryError::LastOwner) => ApiError::new(
                StatusCode::CONFLICT,
                "dashboard/last_owner",
                "a tenant keeps at least one owner: make someone else owner first",
            ),
            CallError::Failed(DirectoryError::ManagementKeyLimit) => ApiError::new(
                StatusCode::CONFLICT,
                "management_key/limit_reached",
                "a tenant holds at most 20 management keys: revoke one first",
            ),
            CallError::Failed(DirectoryError::ResourceNotFound) => ApiError::new(
                StatusCode::NOT_FOUND,
                "resource_scope_catalog/resource_not_found",
                "no resource with this id is owned by a tenant you own",
            ),
            CallError::Failed(DirectoryError::CatalogDuplicate) => ApiError::new(
                StatusCode::CONFLICT,
                "resource_scope_catalog/duplicate",
                "this scope name is already registered on the resource",
            ),
            CallError::Failed(DirectoryError::CatalogResourceCap) => ApiError::new(
                StatusCode::BAD_REQUEST,
                "resource_scope_catalog/resource_cap_exceeded",
                "the resource holds as many scopes as it may; delete one first",
            ),
            CallError::Failed(DirectoryError::CatalogTenantCap) => ApiError::new(
                StatusCode::BAD_REQUEST,
                "resource_scope_catalog/tenant_aggregate_cap_exceeded",
                "the tenant's resources hold as many scopes as they may; delete one first",
            ),
            CallError::Failed(DirectoryError::InvalidCredentials) => ApiError::new(
                StatusCode::UNAUTHORIZED,
                "dashboard/invalid_credentials",
                "wrong e-mail or password",
            ),
            CallError::Failed(DirectoryError::TokenInvalid) => ApiError::new(
                StatusCode::BAD_REQUEST,
                "dashboard/token_invalid",
                "the link is invalid, already used or expired",
            ),
            CallError::Failed(DirectoryError::RateLimited { retry_after_secs }) => {
                ApiError::rate_limited("dashboard/rate_limited", retry_after_secs)
            }
            CallError::Failed(DirectoryError::EmailUnverified) => ApiError::new(
                StatusCode::FORBIDDEN,
                "dashboard/email_unverified",
                "verify the account's address first",
            ),
            CallError::Failed(DirectoryError::MfaAlreadyEnabled) => ApiError::new(
                StatusCode::CONFLICT,
                "dashboard/mfa_already_enabled",
                "the account already has a second factor; remove it first",
            ),
            CallError::Failed(DirectoryError::MfaNotPending) => ApiError::new(
                StatusCode::CONFLICT,
                "dashboard/mfa_setup_not_started",
                "start the setup first (POST /v1/auth/dashboard/mfa/totp)",
            ),
            CallError::Failed(DirectoryError::InvalidCode) => ApiError::new(
                StatusCode::BAD_REQUEST,
                "dashboard/invalid_code",
                "the code is wrong or expired",
            ),
            CallError::Failed(DirectoryError::Internal(e)) => ApiError::internal(e),
            CallError::Failed(e @ DirectoryError::KeyRotation(_)) => ApiError::new(
                StatusCode::CONFLICT,
                "admin/rotation_failed",
                e.to_string(),
            ),
        }
    }
}

/// Collects every field error of a request before answering.
#[derive(Default)]
pub struct FieldErrors(BTreeMap<String, String>);

impl FieldErrors {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `reason` for `field` unless `ok`.
    pub fn check(&mut self, field: &str, ok: bool, reason: impl Into<String>) -> &mut Self {
        if !ok {
            self.0
                .entry(field.to_owned())
                .or_insert_with(|| reason.into());
        }
        self
    }

    /// How many fields have an error so far.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn finish(self) -> Result<(), ApiError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid_fields(self.0))
        }
    }
}

/// `s` has between `min` and `max` characters (Unicode scalar values).
pub fn len_between(s: &str, min: usize, max: usize) -> bool {
    let n = s.chars().count();
    (min..=max).contains(&n)
}

/// A syntactically valid e-mail address of at most 254 characters that the mailer can send
/// to once lowercased (the form dashboard accounts and invitations keep; end-user routes also
/// check their normalised form, see `accounts::email_field`).
/// Display-name forms (`Name <a@b>`) are refused: only the bare address is an address here.
pub fn is_email(s: &str) -> bool {
    s.len() <= 254
        && email_address::EmailAddress::parse_with_options(
            s,
            email_address::Options::default().without_display_text(),
        )
        .is_ok()
        && mailer_accepts(&s.to_lowercase())
}

/// Whether the mailer (`delivery::mail`, lettre) takes `address`, exactly as it will be stored
/// and mailed, as a recipient: the same parse it applies before every send, whole (nothing
/// left over, no display name). An address it refuses would be accepted here and then never
/// reach anyone (`İlice@x.test` lowercases to `i̇lice@x.test`, whose combining dot lettre
/// refuses), so every route that takes an address checks this first.
pub fn mailer_accepts(address: &str) -> bool {
    address.parse::<lettre::Address>().is_ok()
        && address
            .parse::<lettre::message::Mailbox>()
            .is_ok_and(|m| m.name.is_none() && m.email.to_string() == address)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_the_mailer_takes_is_an_address() {
        for ok in [
            "ada@example.com",
            "a.b+c@x.test",
            "ada@xn--bcher-kva.example",
        ] {
            assert!(mailer_accepts(ok), "{ok}");
            assert!(is_email(ok), "{ok}");
        }
        // Lowercased, the dotted capital I becomes `i` and a combining dot the mailer refuses.
        assert!(!is_email("İlice@x.test"));
        assert!(!mailer_accepts("i\u{307}lice@x.test"));
        for bad in [
            "Ada <ada@example.com>",
            "ada@example.com rest",
            "ada",
            "@x.test",
        ] {
            assert!(!mailer_accepts(bad), "{bad}");
        }
    }
}
