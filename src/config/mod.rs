//! Configuration: `config.toml`, then `TESSERA__SECTION__KEY` environment variables, then the
//! command line, each winning over the one before.
//!
//! Every section rejects unknown keys, so a typo is an error naming the key instead of a
//! setting silently ignored. [`Config::load`] validates the whole and is the only way in; the
//! result is passed explicitly (no global config).
//!
//! Each section is its own file, and its struct checks itself (`validate`); [`Config::load`]
//! runs them one after the other.

mod agents;
mod captcha;
mod catalog;
mod cluster;
mod dashboard;
mod dns;
mod error;
mod eudi;
mod log;
mod mail;
mod sdk;
mod secret;
mod security;
mod server;
mod sms;
mod social;
mod sso;
mod storage;
mod testing;
mod tokens;
mod webhooks;

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
};

use figment::{
    providers::{Env, Format, Serialized, Toml},
    Figment,
};
use ipnet::IpNet;
use serde::{Deserialize, Serialize};

pub use agents::AgentsConfig;
pub use captcha::{CaptchaConfig, CaptchaProvider};
pub use catalog::CatalogConfig;
pub use cluster::ClusterConfig;
pub use dashboard::DashboardConfig;
pub use dns::DnsConfig;
pub use error::ConfigError;
pub use eudi::WalletConfig;
pub use log::{LogConfig, LogFormat};
pub use mail::{MailConfig, MailTransport, SmtpConfig, SmtpTls};
pub use sdk::SdkConfig;
pub use secret::SecretString;
pub use security::SecurityConfig;
pub use server::ServerConfig;
pub use sms::{SmsConfig, SmsTierCaps, SmsTransport, DEFAULT_SMS_COUNTRIES};
pub use social::{ProviderEndpoints, SocialConfig};
pub use sso::SsoConfig;
pub use storage::StorageConfig;
pub use testing::TestingConfig;
pub use tokens::TokensConfig;
pub use webhooks::WebhooksConfig;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub server: ServerConfig,
    pub storage: StorageConfig,
    pub security: SecurityConfig,
    pub tokens: TokensConfig,
    pub mail: MailConfig,
    pub sms: SmsConfig,
    pub captcha: CaptchaConfig,
    pub log: LogConfig,
    pub dashboard: DashboardConfig,
    pub catalog: CatalogConfig,
    pub social: SocialConfig,
    pub agents: AgentsConfig,
    pub eudi: WalletConfig,
    pub webhooks: WebhooksConfig,
    pub sdk: SdkConfig,
    pub dns: DnsConfig,
    pub sso: SsoConfig,
    pub cluster: ClusterConfig,
    pub testing: TestingConfig,
}

/// Command-line values that win over the file and the environment.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub listen: Option<String>,
    pub data_dir: Option<PathBuf>,
}

impl Config {
    /// Reads `path` (which must exist), the environment and `overrides`, and validates.
    pub fn load(path: &Path, overrides: &Overrides) -> Result<Config, ConfigError> {
        if !path.is_file() {
            return Err(ConfigError::Missing(path.to_path_buf()));
        }
        Self::from_figment(
            Figment::from(Serialized::defaults(Config::default())).merge(Toml::file(path)),
            overrides,
        )
    }

    /// Like [`Config::load`] from a TOML string (tests, `check-config` of stdin).
    pub fn from_toml_str(toml: &str, overrides: &Overrides) -> Result<Config, ConfigError> {
        Self::from_figment(
            Figment::from(Serialized::defaults(Config::default())).merge(Toml::string(toml)),
            overrides,
        )
    }

    fn from_figment(figment: Figment, overrides: &Overrides) -> Result<Config, ConfigError> {
        let mut figment = figment.merge(Env::prefixed("TESSERA__").split("__"));
        if let Some(listen) = &overrides.listen {
            figment = figment.merge(("server.listen", listen));
        }
        if let Some(dir) = &overrides.data_dir {
            figment = figment.merge(("storage.data_dir", dir));
        }
        let mut config: Config = figment
            .extract()
            .map_err(|e| ConfigError::Invalid(e.to_string()))?;
        config.validate()?;
        config.sdk.policy = config.sdk.load_policy(&config.storage.data_dir)?;
        config.dns.addresses()?;
        Ok(config)
    }

    /// Every section checks itself, in this order; the first error found is the answer.
    fn validate(&self) -> Result<(), ConfigError> {
        self.server.validate()?;
        self.sso.validate()?;
        self.storage.validate()?;
        self.captcha.validate()?;
        self.security.validate()?;
        self.tokens.validate()?;
        self.dashboard.validate()?;
        self.social.validate()?;
        self.agents.validate()?;
        self.eudi.validate()?;
        self.webhooks.validate()?;
        self.cluster.validate()?;
        self.catalog.validate()?;
        self.mail.validate(self.server.listen_addr()?)?;
        self.sms.validate()?;
        self.testing.validate()?;
        self.log.validate()
    }

    pub fn listen_addr(&self) -> Result<SocketAddr, ConfigError> {
        self.server.listen_addr()
    }

    /// The management listener's address, if `server.metrics_listen` is set.
    pub fn metrics_addr(&self) -> Result<Option<SocketAddr>, ConfigError> {
        self.server.metrics_addr()
    }

    pub fn trusted_proxies(&self) -> Result<Vec<IpNet>, ConfigError> {
        self.server.trusted_proxies()
    }

    /// A path from the config, under the data directory when relative.
    pub fn data_path(&self, p: &Path) -> PathBuf {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.storage.data_dir.join(p)
        }
    }

    pub fn master_key_path(&self) -> PathBuf {
        self.data_path(&self.security.master_key_file)
    }

    pub fn admin_socket_path(&self) -> PathBuf {
        self.storage.data_dir.join("admin.sock")
    }
}

#[cfg(test)]
mod tests;
