//! `[mail]`: how mail leaves the server (a file outbox, or SMTP) and from whom.

use std::{net::SocketAddr, path::PathBuf};

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
    /// Development only: `{accounts_url}/dev/mail` lists the file outbox's messages with
    /// their links to follow. Off by default; refused with SMTP and on a listener that is
    /// not loopback (the messages carry live sign-in and reset links).
    pub dev_viewer: bool,
    pub smtp: SmtpConfig,
}

impl Default for MailConfig {
    fn default() -> Self {
        MailConfig {
            transport: MailTransport::File,
            from: "Tessera <no-reply@localhost>".into(),
            outbox_dir: PathBuf::from("outbox"),
            dev_viewer: false,
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
    /// Checks the section; `listen` is the main listener's address, which the development
    /// viewer needs to be loopback.
    pub(super) fn validate(&self, listen: SocketAddr) -> Result<(), ConfigError> {
        if self.transport == MailTransport::Smtp && self.smtp.host.is_empty() {
            return Err(ConfigError::Key {
                key: "mail.smtp.host",
                reason: "is required when mail.transport = \"smtp\"".into(),
            });
        }
        if self.dev_viewer && self.transport != MailTransport::File {
            return Err(ConfigError::Key {
                key: "mail.dev_viewer",
                reason: "shows the file outbox: it needs mail.transport = \"file\"".into(),
            });
        }
        if self.dev_viewer && !listen.ip().is_loopback() {
            return Err(ConfigError::Key {
                key: "mail.dev_viewer",
                reason: format!(
                    "shows every message sent, with its live links: it is for a server on this \
                     machine only, and server.listen ({listen}) is not a loopback address"
                ),
            });
        }
        Ok(())
    }
}
