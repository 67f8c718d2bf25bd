//! `[social]`: where the social sign-in providers are reached, and how long a call may take.

use serde::{Deserialize, Serialize};
use tessera_actors::tenant::social::{Protocol, Provider};

use super::error::{positive, ConfigError};

/// Where the social sign-in providers are reached. Every endpoint left empty is the
/// provider's own; set one to point at a self-managed GitLab, or at a local stand-in.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SocialConfig {
    /// How long one request to a provider (discovery, keys, token, profile) may take, in
    /// milliseconds.
    pub timeout_ms: u64,
    /// A provider's key set is fetched again for an ID token that names a key not in it, at
    /// most once in this many seconds (0: every time).
    pub keys_refetch_secs: u64,
    pub google: ProviderEndpoints,
    pub apple: ProviderEndpoints,
    pub microsoft: ProviderEndpoints,
    pub gitlab: ProviderEndpoints,
    pub linkedin: ProviderEndpoints,
    pub slack: ProviderEndpoints,
    pub github: ProviderEndpoints,
    pub discord: ProviderEndpoints,
    pub facebook: ProviderEndpoints,
    pub x: ProviderEndpoints,
}

impl Default for SocialConfig {
    fn default() -> Self {
        SocialConfig {
            timeout_ms: 10_000,
            keys_refetch_secs: 10,
            google: ProviderEndpoints::default(),
            apple: ProviderEndpoints::default(),
            microsoft: ProviderEndpoints::default(),
            gitlab: ProviderEndpoints::default(),
            linkedin: ProviderEndpoints::default(),
            slack: ProviderEndpoints::default(),
            github: ProviderEndpoints::default(),
            discord: ProviderEndpoints::default(),
            facebook: ProviderEndpoints::default(),
            x: ProviderEndpoints::default(),
        }
    }
}

impl SocialConfig {
    /// The endpoints configured for `provider` (empty fields: the provider's own).
    pub fn endpoints(&self, provider: Provider) -> &ProviderEndpoints {
        match provider {
            Provider::Google => &self.google,
            Provider::Apple => &self.apple,
            Provider::Microsoft => &self.microsoft,
            Provider::Gitlab => &self.gitlab,
            Provider::Linkedin => &self.linkedin,
            Provider::Slack => &self.slack,
            Provider::Github => &self.github,
            Provider::Discord => &self.discord,
            Provider::Facebook => &self.facebook,
            Provider::X => &self.x,
        }
    }

    /// OpenID providers take an `issuer` alone, the others the three endpoints alone; each
    /// one set must be an http(s) URL.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        positive("social.timeout_ms", self.timeout_ms)?;
        for p in Provider::ALL {
            let e = self.endpoints(p);
            let oidc = p.protocol() == Protocol::Oidc;
            for (field, value, allowed) in [
                ("issuer", &e.issuer, oidc),
                ("authorization_endpoint", &e.authorization_endpoint, !oidc),
                ("token_endpoint", &e.token_endpoint, !oidc),
                ("api_base_url", &e.api_base_url, !oidc),
            ] {
                if value.is_empty() {
                    continue;
                }
                let key = format!("social.{}.{field}", p.as_str());
                if !allowed {
                    let takes = if oidc {
                        "issuer (an OpenID provider is found by discovery)"
                    } else {
                        "authorization_endpoint, token_endpoint and api_base_url"
                    };
                    return Err(ConfigError::Invalid(format!(
                        "invalid key `{key}`: {} takes only {takes}",
                        p.as_str()
                    )));
                }
                let ok = reqwest::Url::parse(value).is_ok_and(|u| {
                    (u.scheme() == "http" || u.scheme() == "https") && u.host().is_some()
                });
                if !ok {
                    return Err(ConfigError::Invalid(format!(
                        "invalid value for `{key}`: {value:?} is not an http(s) URL"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// One provider's endpoints; empty: the provider's own.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProviderEndpoints {
    /// OpenID providers: the issuer, whose discovery document is
    /// `{issuer}/.well-known/openid-configuration`. For Microsoft, `{tenant}` in it stands for
    /// the tenant's directory setting.
    pub issuer: String,
    /// OAuth 2 providers (GitHub, Discord, Facebook, X): where the browser is sent.
    pub authorization_endpoint: String,
    /// OAuth 2 providers: where the code is exchanged.
    pub token_endpoint: String,
    /// OAuth 2 providers: the REST API the profile is read from.
    pub api_base_url: String,
}
