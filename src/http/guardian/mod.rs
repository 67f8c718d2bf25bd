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

pub mod consent;
pub mod export;
pub mod link;
pub mod portal;
pub mod request;
pub mod wallet;
