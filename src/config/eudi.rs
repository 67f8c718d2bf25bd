//! `[eudi]`: how the wallet verifier fetches issuers' keys and status lists.

use serde::{Deserialize, Serialize};

use super::error::{positive, ConfigError};

/// How the wallet verifier reaches issuers' keys and status lists.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WalletConfig {
    /// How long one fetch (an issuer's key set or DID document, a status list) may take, in
    /// milliseconds.
    pub timeout_ms: u64,
    /// How long a fetched key set or DID document is used before it is fetched again.
    pub keys_cache_secs: u64,
    /// The largest status list accepted, in bytes once inflated.
    pub status_list_max_bytes: usize,
    /// Fetch `http://` URLs on loopback hosts (local trials of issuers and status lists).
    /// Everything else is HTTPS only.
    pub allow_loopback_http: bool,
    /// How long a wallet has to answer a request (the request object's `exp`).
    pub request_ttl_secs: u32,
}

impl Default for WalletConfig {
    fn default() -> Self {
        WalletConfig {
            timeout_ms: 5_000,
            keys_cache_secs: 600,
            status_list_max_bytes: 4 << 20,
            allow_loopback_http: false,
            request_ttl_secs: 300,
        }
    }
}

impl WalletConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        positive("eudi.timeout_ms", self.timeout_ms)?;
        if !(1..=3600).contains(&self.request_ttl_secs) {
            return Err(ConfigError::Key {
                key: "eudi.request_ttl_secs",
                reason: "must be between 1 and 3600".into(),
            });
        }
        if !(1024..=(64 << 20)).contains(&self.status_list_max_bytes) {
            return Err(ConfigError::Key {
                key: "eudi.status_list_max_bytes",
                reason: "must be between 1024 and 67108864".into(),
            });
        }
        Ok(())
    }
}
