//! `[sms]`: how text messages leave the server (an outbox, or the Messages REST API), the
//! countries they may reach, and the platform account's monthly ceilings per tier.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{
    error::{check_http_url, positive, ConfigError},
    secret::SecretString,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SmsTransport {
    Outbox,
    Http,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SmsConfig {
    pub transport: SmsTransport,
    /// Where the outbox transport writes messages; relative paths are under the data directory.
    pub outbox_dir: PathBuf,
    /// The Messages REST API's base URL (the platform's and tenants' own accounts).
    pub base_url: String,
    /// The platform account, used with `transport = "http"`.
    pub account_sid: String,
    pub auth_token: SecretString,
    /// Sends through this messaging service when set, else from `from`.
    pub messaging_service_sid: String,
    pub from: String,
    /// Countries (ISO 3166-1 alpha-2) that tenants without their own list may text.
    pub allowed_countries: Vec<String>,
    /// How long one request to the provider may take, in milliseconds.
    pub timeout_ms: u64,
    /// The highest `sms_otp_monthly_cap` a tenant of each tier may have while its messages go
    /// through the platform's account (a tenant's own account allows the full 0-100,000).
    pub platform_monthly_cap_max: SmsTierCaps,
}

/// One ceiling per tier, 0-100,000 each.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SmsTierCaps {
    pub free: u32,
    pub pro: u32,
    pub enterprise: u32,
}

impl Default for SmsTierCaps {
    fn default() -> Self {
        SmsTierCaps {
            free: 1_000,
            pro: 10_000,
            enterprise: 100_000,
        }
    }
}

/// The EEA, Switzerland and the United Kingdom.
pub const DEFAULT_SMS_COUNTRIES: [&str; 33] = [
    "AT", "BE", "BG", "CH", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FR", "GB", "GR", "HR", "HU",
    "IE", "IS", "IT", "LI", "LT", "LU", "LV", "MT", "NL", "NO", "PL", "PT", "RO", "SE", "SI", "SK",
    "AX",
];

impl Default for SmsConfig {
    fn default() -> Self {
        SmsConfig {
            transport: SmsTransport::Outbox,
            outbox_dir: PathBuf::from("sms_outbox"),
            base_url: "https://api.twilio.com".into(),
            account_sid: String::new(),
            auth_token: SecretString::default(),
            messaging_service_sid: String::new(),
            from: String::new(),
            allowed_countries: DEFAULT_SMS_COUNTRIES.map(String::from).to_vec(),
            timeout_ms: 10_000,
            platform_monthly_cap_max: SmsTierCaps::default(),
        }
    }
}

impl SmsConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        check_http_url("sms.base_url", &self.base_url)?;
        if self.transport == SmsTransport::Http {
            let missing = [
                ("sms.account_sid", self.account_sid.is_empty()),
                ("sms.auth_token", self.auth_token.0.is_empty()),
                (
                    "sms.messaging_service_sid",
                    self.messaging_service_sid.is_empty() && self.from.is_empty(),
                ),
            ];
            if let Some((key, _)) = missing.into_iter().find(|(_, m)| *m) {
                return Err(ConfigError::Key {
                    key,
                    reason: "is required when sms.transport = \"http\" (or set sms.from instead of sms.messaging_service_sid)".into(),
                });
            }
        }
        if let Some(c) = self
            .allowed_countries
            .iter()
            .find(|c| !(c.len() == 2 && c.bytes().all(|b| b.is_ascii_uppercase())))
        {
            return Err(ConfigError::Key {
                key: "sms.allowed_countries",
                reason: format!("{c:?} is not a two-letter uppercase ISO 3166-1 alpha-2 code"),
            });
        }
        positive("sms.timeout_ms", self.timeout_ms)?;
        let caps = &self.platform_monthly_cap_max;
        for (key, cap) in [
            ("sms.platform_monthly_cap_max.free", caps.free),
            ("sms.platform_monthly_cap_max.pro", caps.pro),
            ("sms.platform_monthly_cap_max.enterprise", caps.enterprise),
        ] {
            if cap > 100_000 {
                return Err(ConfigError::Key {
                    key,
                    reason: "must be 0-100000 (the largest sms_otp_monthly_cap)".into(),
                });
            }
        }
        Ok(())
    }
}
