//! What minor protection keeps: a guardian's links (consent, portal, export) under the
//! SHA-256 of their token, the declined minors the daily purge follows, and their
//! lifetimes.

use serde::{Deserialize, Serialize};
use tessera_storage::{Kind, Sealed};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

/// How long a consent link lives.
pub const CONSENT_TTL: Duration = Duration::days(7);
/// How long a portal link lives (it may be used for several actions).
pub const PORTAL_TTL: Duration = Duration::hours(1);
/// How long an export's download link lives.
pub const EXPORT_TTL: Duration = Duration::hours(24);
/// How long the nonce of a deletion's second call lives.
pub const CONFIRM_TTL: Duration = Duration::minutes(10);
/// Exports one portal link may ask for (each seals a copy of the child's data).
pub const EXPORTS_PER_LINK: u8 = 3;
/// How long a declined minor's account is kept before it is erased.
pub const DECLINED_RETENTION: Duration = Duration::days(30);

/// What a guardian's link is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardianPurpose {
    Consent,
    Portal,
    Export,
}

/// A guardian's link, stored under the SHA-256 of its token.
#[derive(Clone, Serialize, Deserialize)]
pub struct GuardianTokenRecord {
    pub purpose: GuardianPurpose,
    pub child: Uuid,
    /// The guardian's normalised address.
    pub guardian: String,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    /// A portal's pending deletion: the SHA-256 (hex) of the nonce the second call must
    /// bring, and until when.
    #[serde(default)]
    pub confirm: Option<(String, i64)>,
    /// An export's archive (sealed JSON).
    #[serde(default)]
    pub archive: Option<Sealed>,
    /// A consent link whose guardian proved adulthood with the EU wallet's age check.
    #[serde(default)]
    pub adult_proven: bool,
    /// A portal link's exports so far (at most [`EXPORTS_PER_LINK`]).
    #[serde(default)]
    pub exports: u8,
}

tessera_storage::record!(
    GuardianTokenRecord in TenantRecord: Kind::GuardianToken, "guardian token", version 1
);

/// A declined minor's account, by user id: erased by the purge once `at` is 30 days old.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChildBlockedIndex {
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
}

tessera_storage::record!(
    ChildBlockedIndex in TenantRecord: Kind::ChildBlocked, "declined minor", version 1
);
