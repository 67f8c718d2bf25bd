//! The configuration's error, and the checks of single values that several sections make (a
//! number above zero, an http(s) URL). Its own file so every section's file can use them
//! without reaching up into the module that gathers the sections.

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("config file {0} not found (pass --config FILE)")]
    Missing(PathBuf),
    #[error("{0}")]
    Invalid(String),
    #[error("invalid value for `{key}`: {reason}")]
    Key { key: &'static str, reason: String },
}

/// `key` must not be 0.
pub(super) fn positive(key: &'static str, v: u64) -> Result<(), ConfigError> {
    if v == 0 {
        Err(ConfigError::Key {
            key,
            reason: "must be greater than 0".into(),
        })
    } else {
        Ok(())
    }
}

/// `url`, at `key`, must be an http(s) URL with a host.
pub(super) fn check_http_url(key: &'static str, url: &str) -> Result<(), ConfigError> {
    match reqwest::Url::parse(url) {
        Ok(u) if (u.scheme() == "http" || u.scheme() == "https") && u.host().is_some() => Ok(()),
        _ => Err(ConfigError::Key {
            key,
            reason: format!("{url:?} is not an http(s) URL"),
        }),
    }
}
