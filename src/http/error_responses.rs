//! Error answers that several routes document with the same words, each an OpenAPI response
//! that a route's `#[utoipa::path]` names beside its own: `responses((status = 200, ...),
//! InvalidRequest, NotCallersTenant)`. They only describe answers; an
//! [`ApiError`](super::error::ApiError) gives them. The descriptions are the ones the routes
//! have always published, word for word.

use utoipa::IntoResponses;

use super::error::ErrorBody;

/// 400: a body, query or path the route does not accept.
#[derive(IntoResponses)]
#[response(status = 400, description = "`validation/invalid_request`")]
pub struct InvalidRequest(pub ErrorBody);

/// 400: a body with bad fields, each named in the details.
#[derive(IntoResponses)]
#[response(
    status = 400,
    description = "`validation/invalid_request` naming each bad field"
)]
pub struct InvalidFields(pub ErrorBody);

/// 401: no dashboard session.
#[derive(IntoResponses)]
#[response(status = 401, description = "`dashboard/unauthenticated`")]
pub struct Unauthenticated(pub ErrorBody);

/// 401: no dashboard session, or one that must sign in again first (listed with a comma).
#[derive(IntoResponses)]
#[response(
    status = 401,
    description = "`dashboard/unauthenticated`, `dashboard/reauth_required`"
)]
pub struct ReauthRequired(pub ErrorBody);

/// 401: no dashboard session, or one that must sign in again first (listed with "or").
#[derive(IntoResponses)]
#[response(
    status = 401,
    description = "`dashboard/unauthenticated` or `dashboard/reauth_required`"
)]
pub struct NoSessionOrReauth(pub ErrorBody);

/// 401: a user's access token that is not valid.
#[derive(IntoResponses)]
#[response(status = 401, description = "`auth/invalid_token`")]
pub struct InvalidToken(pub ErrorBody);

/// 401: no user's access token, or one that is not valid.
#[derive(IntoResponses)]
#[response(
    status = 401,
    description = "`auth/missing_token`, `auth/invalid_token`"
)]
pub struct MissingOrInvalidToken(pub ErrorBody);

/// 401: no management key, or one that is not valid.
#[derive(IntoResponses)]
#[response(
    status = 401,
    description = "`auth/missing_token`, `auth/invalid_token`, `management/invalid_key`"
)]
pub struct InvalidManagementKey(pub ErrorBody);

/// 403: a member whose role may not do this, or a cookie session's request without its CSRF token (listed with "or").
#[derive(IntoResponses)]
#[response(
    status = 403,
    description = "`dashboard/forbidden` or `dashboard/csrf_failed`"
)]
pub struct ForbiddenOrCsrf(pub ErrorBody);

/// 403: a member whose role may not do this, or a cookie session's request without its CSRF token (listed with a comma).
#[derive(IntoResponses)]
#[response(
    status = 403,
    description = "`dashboard/forbidden`, `dashboard/csrf_failed`"
)]
pub struct ForbiddenCsrf(pub ErrorBody);

/// 403: a blocked user.
#[derive(IntoResponses)]
#[response(status = 403, description = "`auth/user_blocked`")]
pub struct UserBlocked(pub ErrorBody);

/// 403: an account whose address is not confirmed yet.
#[derive(IntoResponses)]
#[response(
    status = 403,
    description = "`auth/email_unconfirmed`: the account's address is not confirmed"
)]
pub struct EmailUnconfirmed(pub ErrorBody);

/// 403: a tenant that has not turned passwordless sign-in on.
#[derive(IntoResponses)]
#[response(status = 403, description = "`passwordless/disabled`")]
pub struct PasswordlessDisabled(pub ErrorBody);

/// 404: a tenant the dashboard's caller is not a member of.
#[derive(IntoResponses)]
#[response(status = 404, description = "Not one of the caller's tenants")]
pub struct NotCallersTenant(pub ErrorBody);

/// 404: an agent that does not exist.
#[derive(IntoResponses)]
#[response(status = 404, description = "No such agent")]
pub struct NoSuchAgent(pub ErrorBody);

/// 404: a step-up token of another tenant.
#[derive(IntoResponses)]
#[response(
    status = 404,
    description = "`resource/not_found`: another tenant's step-up token"
)]
pub struct OtherTenantsStepUp(pub ErrorBody);

/// 429: too many failed attempts.
#[derive(IntoResponses)]
#[response(status = 429, description = "`auth/too_many_attempts`")]
pub struct TooManyAttempts(pub ErrorBody);
