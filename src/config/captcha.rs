//! `[captcha]`: the CAPTCHA verifier asked for a proof when a sign-in must solve one, and the
//! widget the hosted sign-in page shows.

use serde::{Deserialize, Serialize};

use super::{
    error::{check_http_url, positive, ConfigError},
    secret::SecretString,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CaptchaProvider {
    None,
    Turnstile,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CaptchaConfig {
    pub provider: CaptchaProvider,
    pub secret: SecretString,
    pub verify_url: String,
    /// How long to wait for the verifier, in milliseconds.
    pub timeout_ms: u64,
    /// The widget's public site key. With it, the hosted sign-in page shows the widget when a
    /// sign-in must solve a CAPTCHA (`auth/captcha_required`); without it, that page says to
    /// sign in from a known device or later.
    pub site_key: String,
    /// The widget's script, loaded only by a page that shows the widget (its origin is then
    /// allowed by that page's CSP for scripts and frames).
    pub widget_script_url: String,
}

impl Default for CaptchaConfig {
    fn default() -> Self {
        CaptchaConfig {
            provider: CaptchaProvider::None,
            secret: SecretString::default(),
            verify_url: "https://challenges.cloudflare.com/turnstile/v0/siteverify".into(),
            timeout_ms: 5000,
            site_key: String::new(),
            widget_script_url: "https://challenges.cloudflare.com/turnstile/v0/api.js".into(),
        }
    }
}

impl CaptchaConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        positive("captcha.timeout_ms", self.timeout_ms)?;
        if self.provider == CaptchaProvider::Turnstile {
            if self.secret.0.is_empty() {
                return Err(ConfigError::Key {
                    key: "captcha.secret",
                    reason: "is required when captcha.provider = \"turnstile\"".into(),
                });
            }
            check_http_url("captcha.verify_url", &self.verify_url)?;
            check_http_url("captcha.widget_script_url", &self.widget_script_url)?;
            if self.site_key.len() > 256
                || !self
                    .site_key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_".contains(c))
            {
                return Err(ConfigError::Key {
                    key: "captcha.site_key",
                    reason: "must be at most 256 letters, digits, '-' or '_'".into(),
                });
            }
        }
        Ok(())
    }
}
