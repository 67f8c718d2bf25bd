//! `[server]`: the listeners, public URLs, trusted proxies, request and connection limits,
//! and the dashboard's browser origins.

use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;
use serde::{Deserialize, Serialize};

use super::error::{check_http_url, positive, ConfigError};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Address the HTTP listener binds.
    pub listen: String,
    /// Public base URL of the API; empty means `http://<the bound address>`.
    pub base_url: String,
    /// Public URL of the browser-facing OAuth routes; empty means the base URL.
    pub accounts_url: String,
    /// CIDRs (or single addresses) of proxies whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<String>,
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// Whole-request timeout, in seconds.
    pub request_timeout_secs: u64,
    /// How long a handler waits for an actor before answering 503, in milliseconds.
    pub actor_timeout_ms: u64,
    /// Open connections accepted at once; more wait in the kernel's backlog.
    pub max_connections: usize,
    /// Open connections one peer address (IPv6: one /64) may hold; one more is answered 503
    /// and closed. Counts peers: behind a reverse proxy every connection is the proxy's, so set
    /// it to `max_connections` there (and let the proxy limit its clients). 0: no cap.
    pub max_connections_per_ip: usize,
    /// A new connection must have sent its first request's head within this many seconds of
    /// being accepted, or it is closed.
    pub header_read_timeout_secs: u64,
    /// A connection with no request under way is closed this many seconds after its last
    /// answer (a next request's head must be complete by then).
    pub keep_alive_timeout_secs: u64,
    /// How long shutdown waits for in-flight requests, in seconds.
    pub shutdown_grace_secs: u64,
    /// A tenant's actor with no request for this long is stopped and its memory freed; the
    /// next request starts it again. 0: never.
    pub tenant_idle_secs: u64,
    /// A second listener that serves `GET /metrics` (and nothing else); when set, the main
    /// listener no longer serves it. Empty: `/metrics` is on the main listener.
    pub metrics_listen: String,
    /// Where the rate limits are explained: the `X-Service-Docs` header of every 429. Empty:
    /// `<base_url>/v1/openapi.json`, whose 429 answers state each route's limits.
    pub docs_url: String,
    /// Browser origins (`scheme://host[:port]`) of dashboard front ends served elsewhere than
    /// this server: only they get CORS answers (with credentials) on dashboard routes. Empty:
    /// the dashboard API is same-origin only.
    pub dashboard_origins: Vec<String>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: "127.0.0.1:8080".into(),
            base_url: String::new(),
            accounts_url: String::new(),
            trusted_proxies: Vec::new(),
            max_body_bytes: 64 * 1024,
            request_timeout_secs: 30,
            actor_timeout_ms: 5000,
            max_connections: 10_000,
            max_connections_per_ip: 256,
            header_read_timeout_secs: 10,
            keep_alive_timeout_secs: 60,
            shutdown_grace_secs: 20,
            tenant_idle_secs: 3600,
            metrics_listen: String::new(),
            docs_url: String::new(),
            dashboard_origins: Vec::new(),
        }
    }
}

impl ServerConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        self.listen_addr()?;
        self.metrics_addr()?;
        for (key, url) in [
            ("server.base_url", &self.base_url),
            ("server.accounts_url", &self.accounts_url),
            ("server.docs_url", &self.docs_url),
        ] {
            if !url.is_empty() {
                check_http_url(key, url)?;
            }
        }
        self.trusted_proxies()?;
        for origin in &self.dashboard_origins {
            if crate::origin::normalize_origin(origin).is_none() {
                return Err(ConfigError::Key {
                    key: "server.dashboard_origins",
                    reason: format!("{origin:?} is not an origin (scheme://host[:port], no path)"),
                });
            }
        }
        positive("server.max_body_bytes", self.max_body_bytes as u64)?;
        positive("server.request_timeout_secs", self.request_timeout_secs)?;
        positive("server.actor_timeout_ms", self.actor_timeout_ms)?;
        positive("server.max_connections", self.max_connections as u64)?;
        positive(
            "server.header_read_timeout_secs",
            self.header_read_timeout_secs,
        )?;
        if self.keep_alive_timeout_secs < self.header_read_timeout_secs {
            return Err(ConfigError::Key {
                key: "server.keep_alive_timeout_secs",
                reason: "must be at least server.header_read_timeout_secs".into(),
            });
        }
        Ok(())
    }

    pub fn listen_addr(&self) -> Result<SocketAddr, ConfigError> {
        self.listen.parse().map_err(|_| ConfigError::Key {
            key: "server.listen",
            reason: format!("{:?} is not an address such as 127.0.0.1:8080", self.listen),
        })
    }

    /// The management listener's address, if `server.metrics_listen` is set.
    pub fn metrics_addr(&self) -> Result<Option<SocketAddr>, ConfigError> {
        if self.metrics_listen.is_empty() {
            return Ok(None);
        }
        self.metrics_listen
            .parse()
            .map(Some)
            .map_err(|_| ConfigError::Key {
                key: "server.metrics_listen",
                reason: format!(
                    "{:?} is not an address such as 127.0.0.1:9090",
                    self.metrics_listen
                ),
            })
    }

    pub fn trusted_proxies(&self) -> Result<Vec<IpNet>, ConfigError> {
        self.trusted_proxies
            .iter()
            .map(|s| {
                s.parse::<IpNet>()
                    .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| ConfigError::Key {
                        key: "server.trusted_proxies",
                        reason: format!("{s:?} is not a CIDR or an IP address"),
                    })
            })
            .collect()
    }
}
