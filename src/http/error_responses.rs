//! Error answers that several routes document with the same words, each an OpenAPI response
//! that a route's `#[utoipa::path]` names beside its own: `responses(ReauthRequired, (status =
//! 200, ...))`. They only describe answers; an [`ApiError`](super::error::ApiError) gives them.
//! The descriptions are the ones the routes have always published, word for word.

use utoipa::IntoResponses;

use super::error::ErrorBody;

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

/// 401: no management key, or one that is not valid.
#[derive(IntoResponses)]
#[response(
    status = 401,
    description = "`auth/missing_token`, `auth/invalid_token`, `management/invalid_key`"
)]
pub struct InvalidManagementKey(pub ErrorBody);

/// 403: a tenant that has not turned passwordless sign-in on.
#[derive(IntoResponses)]
#[response(status = 403, description = "`passwordless/disabled`")]
pub struct PasswordlessDisabled(pub ErrorBody);
