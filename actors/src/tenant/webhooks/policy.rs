//! The platform's rules for webhooks: how many endpoints, which event types, the retry
//! schedule and its scale, the lease of an attempt under way, a rotation's overlap.

use std::time::Duration as StdDuration;

use time::Duration;

/// Endpoints a tenant may have.
pub const MAX_ENDPOINTS: usize = 10;
/// The events an endpoint may subscribe to.
pub const EVENT_TYPES: [&str; 13] = [
    "user.created",
    "user.deleted",
    "user.email_verified",
    "session.revoked",
    "agent.revoked",
    "guardian.consent_granted",
    "guardian.consent_withdrawn",
    "organization.created",
    "organization.updated",
    "organization.deleted",
    "membership.created",
    "membership.updated",
    "membership.deleted",
];
/// The event `POST .../webhooks/{id}/test` sends, to that endpoint only.
pub const TEST_EVENT: &str = "webhook.test";
/// The wait after each failed attempt of a delivery: eight attempts in all, over about 28
/// hours (the Standard Webhooks reference schedule).
pub const RETRY_SCHEDULE_SECS: [u64; 7] = [5, 300, 1800, 7200, 18_000, 36_000, 36_000];
/// How long a delivery handed to the worker is not handed out again (its attempt takes at
/// most the worker's 10 s timeout; the rest is slack for a slow report).
pub const IN_FLIGHT_LEASE: StdDuration = StdDuration::from_secs(120);
/// How long the previous secret still signs after a rotation.
pub const ROTATION_OVERLAP: Duration = Duration::hours(24);
/// The most deliveries one `Due` hands out.
pub const MAX_DUE: usize = 64;

/// The platform's webhook timings (`[webhooks]` in the configuration).
#[derive(Clone, Copy, Debug)]
pub struct WebhookPolicy {
    /// Multiplies every wait of [`RETRY_SCHEDULE_SECS`] (1 in production; tests shrink it).
    pub retry_scale: f64,
    /// An endpoint whose every attempt has failed for this long is disabled.
    pub disable_after: Duration,
    /// How long events and their delivery log are kept.
    pub retention: Duration,
}

impl Default for WebhookPolicy {
    fn default() -> Self {
        WebhookPolicy {
            retry_scale: 1.0,
            disable_after: Duration::days(5),
            retention: Duration::days(30),
        }
    }
}

impl WebhookPolicy {
    /// The wait before the next attempt after `failed` failed attempts of a round (1-based);
    /// `None` once the schedule is spent.
    pub fn retry_delay(&self, failed: u32) -> Option<Duration> {
        let secs = *RETRY_SCHEDULE_SECS.get(usize::try_from(failed).ok()?.checked_sub(1)?)?;
        let millis = (secs as f64 * 1000.0 * self.retry_scale).round().max(1.0);
        Some(Duration::milliseconds(millis as i64))
    }
}
