//! `[tokens]`: the lifetimes of access and refresh tokens and authorization codes, the
//! assurance levels' URN prefix, and the cache of verified access tokens.

use serde::{Deserialize, Serialize};

use super::error::{positive, ConfigError};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TokensConfig {
    pub access_ttl_secs: u64,
    pub refresh_ttl_secs: u64,
    pub refresh_reuse_grace_secs: u64,
    /// How long an OAuth authorization code can be exchanged (RFC 6749 4.1.2: short).
    pub authorization_code_ttl_secs: u64,
    /// `urn:<vendor>:<service>`: step-up challenges name the assurance levels
    /// `<prefix>:aal1` and `<prefix>:aal2` (RFC 9470 `acr_values`).
    pub acr_urn_prefix: String,
    /// Access tokens whose signature was already checked, remembered (by SHA-256) until they
    /// expire so a repeat skips the ES256 verification. 0: no cache.
    pub verified_cache_entries: u64,
}

impl Default for TokensConfig {
    fn default() -> Self {
        TokensConfig {
            access_ttl_secs: 900,
            refresh_ttl_secs: 30 * 24 * 3600,
            refresh_reuse_grace_secs: 10,
            authorization_code_ttl_secs: 60,
            acr_urn_prefix: "urn:tessera:auth".into(),
            verified_cache_entries: 65_536,
        }
    }
}

impl TokensConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        positive("tokens.access_ttl_secs", self.access_ttl_secs)?;
        positive("tokens.refresh_ttl_secs", self.refresh_ttl_secs)?;
        positive(
            "tokens.authorization_code_ttl_secs",
            self.authorization_code_ttl_secs,
        )?;
        if self.authorization_code_ttl_secs > 600 {
            return Err(ConfigError::Key {
                key: "tokens.authorization_code_ttl_secs",
                reason: "must be at most 600 (RFC 6749 4.1.2: codes are short-lived)".into(),
            });
        }
        if !is_urn_prefix(&self.acr_urn_prefix) {
            return Err(ConfigError::Key {
                key: "tokens.acr_urn_prefix",
                reason: "must be urn:<vendor>:<service>, each segment letters, digits or '-'"
                    .into(),
            });
        }
        Ok(())
    }
}

/// `urn:<vendor>:<service>`: two non-empty segments of ASCII letters, digits and `-`.
fn is_urn_prefix(s: &str) -> bool {
    let mut parts = s.split(':');
    let ok = |p: Option<&str>| {
        p.is_some_and(|p| {
            !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
    };
    parts.next() == Some("urn") && ok(parts.next()) && ok(parts.next()) && parts.next().is_none()
}
