//! `[testing]`: the fault drills, never on in production.

use serde::{Deserialize, Serialize};

use super::error::ConfigError;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TestingConfig {
    /// Enables `tessera admin fault panic-tenant`, which crashes a tenant actor on purpose to
    /// drill the restart path. Never on in production.
    pub fault_injection: bool,
    /// Seconds added to the clock tenant actors check calendar deadlines against (the MFA
    /// grace period, codes and links), and dashboard sessions are created, touched and expired
    /// by, to drill what happens after one passes. Only with `fault_injection`.
    pub clock_offset_secs: i64,
}

impl TestingConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.clock_offset_secs != 0 && !self.fault_injection {
            return Err(ConfigError::Key {
                key: "testing.clock_offset_secs",
                reason: "is only allowed with testing.fault_injection = true".into(),
            });
        }
        if self.clock_offset_secs.unsigned_abs() > 10 * 365 * 86_400 {
            return Err(ConfigError::Key {
                key: "testing.clock_offset_secs",
                reason: "must be within ten years".into(),
            });
        }
        Ok(())
    }
}
