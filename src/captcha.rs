//! The CAPTCHA verifier of onboarding: none, or a Turnstile-compatible siteverify endpoint.
//!
//! The verify URL is configurable so tests (and operators with a proxy) point it elsewhere; the
//! request is the provider's own protocol: a form POST of `secret`, `response` and `remoteip`,
//! answered by JSON with a boolean `success`.

use std::{net::IpAddr, time::Duration};

use serde::Deserialize;

use crate::config::{CaptchaConfig, CaptchaProvider};

#[derive(Debug)]
pub enum CaptchaOutcome {
    Passed,
    Failed,
    /// The verifier could not be asked; onboarding fails closed.
    Unreachable(String),
}

/// The widget of a page: its public site key and the provider's script. The script renders
/// it into the `cf-turnstile` element and adds the solved token to the form as
/// `cf-turnstile-response`.
pub struct Widget<'a> {
    pub site_key: &'a str,
    pub script: &'a str,
}

/// The form field the widget's script fills with the solved token.
pub const WIDGET_FIELD: &str = "cf-turnstile-response";

#[derive(Clone)]
pub struct Captcha {
    config: CaptchaConfig,
    client: reqwest::Client,
}

#[derive(Deserialize)]
struct SiteVerify {
    success: bool,
}

impl Captcha {
    pub fn new(config: CaptchaConfig) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_millis(config.timeout_ms))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Captcha { config, client })
    }

    /// Whether requests must carry a solved CAPTCHA.
    pub fn required(&self) -> bool {
        self.config.provider != CaptchaProvider::None
    }

    /// The widget a page can show (its site key and script), when one is configured.
    pub fn widget(&self) -> Option<Widget<'_>> {
        (self.required() && !self.config.site_key.is_empty()).then(|| Widget {
            site_key: &self.config.site_key,
            script: &self.config.widget_script_url,
        })
    }

    pub async fn verify(&self, token: Option<&str>, client_ip: IpAddr) -> CaptchaOutcome {
        if self.config.provider == CaptchaProvider::None {
            return CaptchaOutcome::Passed;
        }
        let Some(token) = token
            .map(str::trim)
            .filter(|t| !t.is_empty() && t.len() <= 2048)
        else {
            return CaptchaOutcome::Failed;
        };
        let ip = client_ip.to_string();
        let form = [
            ("secret", self.config.secret.0.as_str()),
            ("response", token),
            ("remoteip", ip.as_str()),
        ];
        let resp = match self
            .client
            .post(&self.config.verify_url)
            .form(&form)
            .send()
            .await
        {
            Ok(r) => r,
            Err(e) => return CaptchaOutcome::Unreachable(e.without_url().to_string()),
        };
        if !resp.status().is_success() {
            return CaptchaOutcome::Unreachable(format!("verifier answered {}", resp.status()));
        }
        match resp.json::<SiteVerify>().await {
            Ok(v) if v.success => CaptchaOutcome::Passed,
            Ok(_) => CaptchaOutcome::Failed,
            Err(e) => CaptchaOutcome::Unreachable(format!("unreadable verifier answer: {e}")),
        }
    }
}
