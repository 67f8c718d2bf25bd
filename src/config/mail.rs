//! `[mail]`: how mail leaves the server (a file outbox, or SMTP) and from whom.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{error::ConfigError, secret::SecretString};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MailTransport {
    File,
    Smtp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SmtpTls {
    None,
    Starttls,
    Tls,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MailConfig {
    pub transport: MailTransport,
    pub from: String,
    /// Where the file transport writes messages; relative paths are under the data directory.
    pub outbox_dir: PathBuf,
    pub smtp: SmtpConfig,
}

impl Default for MailConfig {
    fn default() -> Self {
        MailConfig {
            transport: MailTransport::File,
            from: "Tessera <no-reply@localhost>".into(),
            outbox_dir: PathBuf::from("outbox"),
            smtp: SmtpConfig::default(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SmtpConfig {
    pub host: String,
    pub port: u16,
    pub tls: SmtpTls,
    pub username: String,
    pub password: SecretString,
}

impl Default for SmtpConfig {
    fn default() -> Self {
        SmtpConfig {
            host: "localhost".into(),
            port: 587,
            tls: SmtpTls::Starttls,
            username: String::new(),
            password: SecretString::default(),
        }
    }
}

impl MailConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.transport == MailTransport::Smtp && self.smtp.host.is_empty() {
            return Err(ConfigError::Key {
                key: "mail.smtp.host",
                reason: "is required when mail.transport = \"smtp\"".into(),
            });
        }
        Ok(())
    }
}
