//! `[cluster]`: the etcd endpoints, advertised URL, lease and key prefix of a node that
//! shares its tenants with others.

use serde::{Deserialize, Serialize};

use super::error::{check_http_url, ConfigError};

/// Running on several nodes (`crate::cluster`): each tenant is served by the one node that
/// holds its lease in etcd. Off (the default, no `etcd_endpoints`): this node serves every
/// tenant in its store and never speaks to etcd.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterConfig {
    /// The etcd cluster's client URLs (`http://host:2379`). Empty: clustering is off.
    pub etcd_endpoints: Vec<String>,
    /// The URL other nodes and the front router reach this node at, named in the owner
    /// keys and in the `Tessera-Tenant-Owner` header of refusals. Empty: `http://<bound
    /// address>`, which needs a `server.listen` address other than 0.0.0.0 or `[::]`.
    pub advertise_url: String,
    /// The lease's time to live: how long after this node stops (or loses etcd) another node
    /// may take its tenants. At least 2.
    pub lease_ttl_secs: u64,
    /// Where the owner keys live: `{key_prefix}/tenants/{tenant id}/owner`.
    pub key_prefix: String,
    /// How long a call to etcd may take, connection included, in milliseconds.
    pub timeout_ms: u64,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            etcd_endpoints: Vec::new(),
            advertise_url: String::new(),
            lease_ttl_secs: 10,
            key_prefix: "/tessera".into(),
            timeout_ms: 2_000,
        }
    }
}

impl ClusterConfig {
    /// Whether this node shares its tenants with others through etcd.
    pub fn enabled(&self) -> bool {
        !self.etcd_endpoints.is_empty()
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        for e in &self.etcd_endpoints {
            check_http_url("cluster.etcd_endpoints", e)?;
        }
        if !self.advertise_url.is_empty() {
            check_http_url("cluster.advertise_url", &self.advertise_url)?;
            if axum::http::HeaderValue::from_str(&self.advertise_url).is_err() {
                return Err(ConfigError::Key {
                    key: "cluster.advertise_url",
                    reason: "must be a URL that fits in a header".into(),
                });
            }
        }
        if !(2..=3600).contains(&self.lease_ttl_secs) {
            return Err(ConfigError::Key {
                key: "cluster.lease_ttl_secs",
                reason: "must be between 2 and 3600".into(),
            });
        }
        if !self.key_prefix.starts_with('/')
            || self.key_prefix.len() < 2
            || self.key_prefix.ends_with('/')
            || !self.key_prefix.is_ascii()
        {
            return Err(ConfigError::Key {
                key: "cluster.key_prefix",
                reason: "must start with '/', be ASCII and not end with '/'".into(),
            });
        }
        if !(100..=60_000).contains(&self.timeout_ms) {
            return Err(ConfigError::Key {
                key: "cluster.timeout_ms",
                reason: "must be between 100 and 60000".into(),
            });
        }
        Ok(())
    }
}
