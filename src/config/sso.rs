//! `[sso]`: how organizations' identity providers (SAML metadata URLs, OpenID providers) are
//! reached.

use serde::{Deserialize, Serialize};

use super::error::ConfigError;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SsoConfig {
    /// Let connections name `http://` URLs and addresses that are not public (an operator's
    /// own network, local trials, tests). Off: `https://` to public addresses only, checked
    /// when a connection is saved and at each request.
    pub allow_private_targets: bool,
    /// How long one request to a provider may take, in milliseconds.
    pub timeout_ms: u64,
    /// An ID token signed by a key not in the provider's cached set fetches the set again,
    /// at most this often (seconds).
    pub keys_refetch_secs: u64,
}

impl Default for SsoConfig {
    fn default() -> Self {
        SsoConfig {
            allow_private_targets: false,
            timeout_ms: 10_000,
            keys_refetch_secs: 60,
        }
    }
}

impl SsoConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if !(100..=120_000).contains(&self.timeout_ms) {
            return Err(ConfigError::Key {
                key: "sso.timeout_ms",
                reason: "must be between 100 and 120000".into(),
            });
        }
        Ok(())
    }
}
