//! `[dashboard]`: how long dashboard sessions last.

use serde::{Deserialize, Serialize};

use super::error::{positive, ConfigError};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DashboardConfig {
    /// A dashboard session without a request for this long ends, in seconds.
    pub idle_timeout_secs: u64,
    /// A dashboard session ends this long after login, in seconds.
    pub absolute_timeout_secs: u64,
}

impl Default for DashboardConfig {
    fn default() -> Self {
        DashboardConfig {
            idle_timeout_secs: 30 * 60,
            absolute_timeout_secs: 12 * 3600,
        }
    }
}

impl DashboardConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        positive("dashboard.idle_timeout_secs", self.idle_timeout_secs)?;
        positive(
            "dashboard.absolute_timeout_secs",
            self.absolute_timeout_secs,
        )
    }
}
