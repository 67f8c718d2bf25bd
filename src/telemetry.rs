//! Logging: `tracing` to stderr, as text or JSON lines. Request spans carry the method, route
//! template, request id and tenant slug; no password, token, code, API key or e-mail is ever a
//! field of a log line.

use std::io::IsTerminal;

use tracing_subscriber::{fmt, EnvFilter};

use crate::config::{LogConfig, LogFormat};

/// Installs the global subscriber; a second call (tests) is a no-op.
pub fn init(config: &LogConfig) {
    let filter = EnvFilter::try_new(&config.level).unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let _ = match config.format {
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .try_init(),
        LogFormat::Text => builder.try_init(),
    };
}
