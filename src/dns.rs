//! DNS lookups off the actors: the TXT records that prove an organization's domain, through
//! the nameservers `[dns]` names or the system's.

use std::{net::SocketAddr, time::Duration};

use hickory_resolver::{
    config::{ConnectionConfig, NameServerConfig, ResolverConfig, ResolverOpts},
    net::runtime::TokioRuntimeProvider,
    proto::rr::RData,
    Resolver, TokioResolver,
};

/// How long one lookup may take.
const TIMEOUT: Duration = Duration::from_secs(3);

/// Looks up TXT records.
pub struct TxtLookup {
    resolver: TokioResolver,
}

impl TxtLookup {
    /// A resolver of `nameservers` (UDP, then TCP for long answers), or of the system's when
    /// none is given. Answers are not cached: a proof is read fresh each time.
    pub fn new(nameservers: &[SocketAddr]) -> Result<Self, String> {
        let mut opts = ResolverOpts::default();
        opts.cache_size = 0;
        opts.attempts = 2;
        opts.timeout = TIMEOUT;
        let builder = if nameservers.is_empty() {
            Resolver::builder_tokio().map_err(|e| format!("the system's DNS configuration: {e}"))?
        } else {
            let servers = nameservers
                .iter()
                .map(|ns| {
                    let (mut udp, mut tcp) = (ConnectionConfig::udp(), ConnectionConfig::tcp());
                    udp.port = ns.port();
                    tcp.port = ns.port();
                    NameServerConfig::new(ns.ip(), true, vec![udp, tcp])
                })
                .collect();
            let config = ResolverConfig::from_parts(None, vec![], servers);
            Resolver::builder_with_config(config, TokioRuntimeProvider::default())
        };
        let resolver = builder
            .with_options(opts)
            .build()
            .map_err(|e| format!("the DNS resolver: {e}"))?;
        Ok(TxtLookup { resolver })
    }

    /// The TXT values at `name` (each record's strings joined); none when the name has no
    /// such record or does not exist; an error when no nameserver answered.
    pub async fn txt(&self, name: &str) -> Result<Vec<String>, String> {
        let fqdn = format!("{}.", name.trim_end_matches('.'));
        match self.resolver.txt_lookup(fqdn).await {
            Ok(lookup) => Ok(lookup
                .answers()
                .iter()
                .filter_map(|record| match &record.data {
                    RData::TXT(t) => Some(
                        t.txt_data
                            .iter()
                            .map(|s| String::from_utf8_lossy(s))
                            .collect::<String>(),
                    ),
                    _ => None,
                })
                .collect()),
            Err(e) if e.is_no_records_found() || e.is_nx_domain() => Ok(Vec::new()),
            Err(e) => Err(e.to_string()),
        }
    }
}
