//! `[dns]`: where the server looks up the TXT records that prove organizations' domains.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use super::error::ConfigError;

/// The nameservers for domain proofs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DnsConfig {
    /// `ip:port` of each nameserver to ask, in order; empty: the system's (`/etc/resolv.conf`).
    pub nameservers: Vec<String>,
}

impl DnsConfig {
    /// The nameservers as addresses; an error names the first that is not one.
    pub fn addresses(&self) -> Result<Vec<SocketAddr>, ConfigError> {
        self.nameservers
            .iter()
            .map(|n| {
                n.parse::<SocketAddr>().map_err(|_| ConfigError::Key {
                    key: "dns.nameservers",
                    reason: format!("{n:?} is not an ip:port address"),
                })
            })
            .collect()
    }
}
