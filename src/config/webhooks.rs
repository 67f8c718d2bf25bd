//! `[webhooks]`: how tenants' webhook endpoints are reached, retried and kept.

use serde::{Deserialize, Serialize};

use super::error::ConfigError;

/// How tenants' webhook endpoints are reached and retried.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebhooksConfig {
    /// Let endpoints use `http://` URLs and addresses that are not public: private, loopback,
    /// link-local or another special-use range (an operator's own network, local trials,
    /// tests). Off: `https://` to public addresses only (`net::is_public`), checked when an
    /// endpoint is saved and again at each connection.
    pub allow_private_targets: bool,
    /// Multiplies every wait of the retry schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h,
    /// 10 h). 1 in production; tests shrink it.
    pub retry_scale: f64,
    /// An endpoint whose every attempt has failed for this long is disabled, and its owners
    /// are mailed.
    pub disable_after_secs: u64,
    /// How long events and the delivery log are kept.
    pub retention_days: u32,
    /// How long one attempt may take, connection included, in milliseconds.
    pub timeout_ms: u64,
    /// Attempts under way at once, across tenants.
    pub concurrency: usize,
}

impl Default for WebhooksConfig {
    fn default() -> Self {
        WebhooksConfig {
            allow_private_targets: false,
            retry_scale: 1.0,
            disable_after_secs: 5 * 86_400,
            retention_days: 30,
            timeout_ms: 10_000,
            concurrency: 16,
        }
    }
}

impl WebhooksConfig {
    pub fn policy(&self) -> tessera_actors::tenant::webhooks::WebhookPolicy {
        tessera_actors::tenant::webhooks::WebhookPolicy {
            retry_scale: self.retry_scale,
            disable_after: time::Duration::seconds(
                i64::try_from(self.disable_after_secs).unwrap_or(i64::MAX),
            ),
            retention: time::Duration::days(i64::from(self.retention_days)),
        }
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if !(self.retry_scale.is_finite() && self.retry_scale > 0.0 && self.retry_scale <= 100.0) {
            return Err(ConfigError::Key {
                key: "webhooks.retry_scale",
                reason: "must be greater than 0 and at most 100".into(),
            });
        }
        if !(1..=10 * 365 * 86_400).contains(&self.disable_after_secs) {
            return Err(ConfigError::Key {
                key: "webhooks.disable_after_secs",
                reason: "must be between 1 and 315360000".into(),
            });
        }
        if !(1..=3650).contains(&self.retention_days) {
            return Err(ConfigError::Key {
                key: "webhooks.retention_days",
                reason: "must be between 1 and 3650".into(),
            });
        }
        if !(100..=60_000).contains(&self.timeout_ms) {
            return Err(ConfigError::Key {
                key: "webhooks.timeout_ms",
                reason: "must be between 100 and 60000".into(),
            });
        }
        if !(1..=1024).contains(&self.concurrency) {
            return Err(ConfigError::Key {
                key: "webhooks.concurrency",
                reason: "must be between 1 and 1024".into(),
            });
        }
        Ok(())
    }
}
