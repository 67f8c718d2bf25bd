//! Guardian consent for minors (GDPR art. 8): the child's request, the consent page and the
//! guardian portal.
//!
//! - `POST /v1/auth/parental-consent` (X-API-Key): a held child, proven by its password, has a
//!   consent link mailed to a guardian.
//! - `GET /v1/guardian/consent?token=` shows what the guardian consents to: a hosted page, or
//!   JSON with `Accept: application/json`. `POST /v1/guardian/consent` takes the answer as JSON
//!   (GuardianConsentConsume) or as the page's form. Its `csrf` is the page's value, bound to
//!   the browser's CSRF cookie and the link (`crate::http::pages`): a JSON client sends back the
//!   cookie the `GET` set, as a browser does.
//! - `POST /v1/guardian/management-link` (X-API-Key): always 202; the portal link goes only to
//!   the guardian who consented for that child.
//! - `GET, POST /v1/guardian/portal`: the portal (spec 2.7 GuardianPortalContext), the same
//!   two ways; `withdraw`, `export` (a download link mailed, `GET /v1/guardian/export?token=`)
//!   and `delete` (its first call answers `confirm_token`, the second brings it back as
//!   `confirm_nonce`).
//!
//! A link's token names its tenant (`challenges::tenant_of_token`); no key is needed there.
//!
//! The modules, one a step: [`request`] (the routes an app calls with its key), [`consent`],
//! [`wallet`] (the guardian's proof of adulthood), [`portal`], [`export`]; [`link`], what the
//! link routes share.

use crate::http::error::ApiError;
use axum::http::StatusCode;
use tessera_actors::GuardianError;

pub mod consent;
pub mod export;
pub mod link;
pub mod portal;
pub mod request;
pub mod wallet;

/// How minor protection's refusals answer.
impl From<GuardianError> for ApiError {
    fn from(e: GuardianError) -> Self {
        match e {
            GuardianError::DateOfBirthRequired => ApiError::invalid_field(
                "date_of_birth",
                "is required: this app protects minors (or send an age_verification_token)",
            ),
            GuardianError::AgeRequired => ApiError::new(
                StatusCode::FORBIDDEN,
                "auth/age_required",
                "this app protects minors: create the account with POST /v1/auth/register \
                 and a date of birth (or a wallet's age proof)",
            ),
            GuardianError::ConsentPending => ApiError::new(
                StatusCode::FORBIDDEN,
                "auth/guardian_consent_pending",
                "this account waits for a parent's or guardian's consent \
                 (POST /v1/auth/parental-consent asks for it)",
            ),
            GuardianError::ConsentDeclined => ApiError::new(
                StatusCode::FORBIDDEN,
                "auth/guardian_consent_declined",
                "a parent or guardian declined consent for this account",
            ),
            GuardianError::ConsentNotPending => ApiError::new(
                StatusCode::CONFLICT,
                "guardian/consent_not_pending",
                "this account does not wait for a guardian's consent",
            ),
            GuardianError::OtherGuardian => ApiError::new(
                StatusCode::CONFLICT,
                "guardian/other_guardian",
                "a guardian consented for this account before: only that guardian can be asked again",
            ),
            GuardianError::Invalid => ApiError::new(
                StatusCode::BAD_REQUEST,
                "guardian/invalid_token",
                "the link is invalid, used or expired, or the form was not sent from its page",
            ),
            GuardianError::AgeTokenInvalid => ApiError::invalid_field(
                "age_verification_token",
                "is unknown, used or expired: verify the age again (POST /v1/auth/eudi/age/initiate)",
            ),
        }
    }
}
