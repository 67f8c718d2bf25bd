//! An id read from a route's path (`/agents/{agent_id}`, `/users/{id}`, ...): a malformed one
//! is answered as one that exists nowhere, a 404 naming what was looked for, so the answer
//! tells no more about a bad id than about an unknown one. An id the tenant's actor does not
//! know is answered the same way ([`not_found_as`]).
//!
//! Its own module: the dashboard's registries, user management and the user's own passkeys
//! and agent requests read their ids alike, and none of them owns the rule.

use uuid::Uuid;

use axum::http::StatusCode;

use super::error::ApiError;

/// The id `raw` names; 404 `resource/not_found` for `what` when it is not a UUID.
pub fn path_id(raw: &str, what: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| ApiError::not_found(what))
}

/// An actor's refusal of a command about one item: its 404 (no such agent, endpoint, client,
/// key) as 404 `resource/not_found` naming `what`, any other refusal as it is.
pub fn not_found_as(what: &str, e: impl Into<ApiError>) -> ApiError {
    match e.into() {
        e if e.status == StatusCode::NOT_FOUND => ApiError::not_found(what),
        e => e,
    }
}

/// The `{slug}` of a tenant's route as the document declares it, once for every route that
/// has one (the handlers read it with `Path<String>`).
#[derive(utoipa::IntoParams)]
#[into_params(names("slug"), parameter_in = Path)]
pub struct TenantSlug(
    /// The tenant's slug
    pub String,
);
