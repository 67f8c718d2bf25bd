//! Outbound HTTP to addresses someone else chose (a tenant's webhook URL, an issuer's
//! `jwksUri`): only public addresses are reached, unless the operator allows more.
//!
//! A URL's host is checked twice: an address literal by [`reachable`] before the request,
//! and a name by [`PublicOnly`], the resolver of the client, which keeps only the addresses
//! the policy allows. The client connects to an address the resolver answered, so a name
//! cannot be resolved once for the check and again, differently, for the connection.

use std::{net::IpAddr, sync::Arc, time::Duration};

/// Which addresses outbound requests may reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Public addresses only.
    Public,
    /// Public and loopback addresses (local trials of issuers and status lists).
    PublicAndLoopback,
    /// Any address: private, loopback and link-local ones too (an operator's own network).
    Any,
}

/// Resolves names to the addresses `reach` allows, so a configured URL cannot reach into the
/// operator's network.
pub struct PublicOnly {
    pub reach: Reach,
}

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let reach = self.reach;
        Box::pin(async move {
            let found = tokio::net::lookup_host((name.as_str(), 0)).await?;
            let kept: Vec<std::net::SocketAddr> =
                found.filter(|a| reachable(a.ip(), reach)).collect();
            if kept.is_empty() {
                return Err(format!("{} has no public address", name.as_str()).into());
            }
            let addrs: reqwest::dns::Addrs = Box::new(kept.into_iter());
            Ok(addrs)
        })
    }
}

/// Whether `ip` may be connected to under `reach`.
pub fn reachable(ip: IpAddr, reach: Reach) -> bool {
    match reach {
        Reach::Any => true,
        Reach::PublicAndLoopback if ip.is_loopback() => true,
        _ => is_public(ip),
    }
}

/// Whether `ip` is a public unicast address: not loopback, private, link-local, shared
/// (100.64/10), benchmarking (198.18/15), documentation, multicast, broadcast, unspecified,
/// `0/8`, unique-local (fc00::/7) or IPv6 link-local; an IPv4-mapped address as its IPv4.
pub fn is_public(ip: IpAddr) -> bool {
    if ip.is_loopback() {
        return false;
    }
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_multicast()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 198 && (b == 18 || b == 19)))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80)
        }
    }
}

/// The address literal of a URL's host, if it is one.
pub fn host_ip(url: &url::Url) -> Option<IpAddr> {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        _ => None,
    }
}

/// Whether a URL's host is a loopback name or address (`localhost`, `*.localhost`,
/// 127.0.0.0/8, `::1`).
pub fn is_loopback_host(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// A client that reaches only what `reach` allows, follows no redirects, ignores proxy
/// environment variables (a proxy would resolve names itself) and gives up after `timeout`.
pub fn client(reach: Reach, timeout: Duration) -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .dns_resolver(Arc::new(PublicOnly { reach }))
        .timeout(timeout)
        .connect_timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .user_agent(concat!("Tessera/", env!("CARGO_PKG_VERSION")))
        .build()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn only_public_addresses_are_reachable_by_default() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "198.18.0.1",
            "0.1.2.3",
            "224.0.0.1",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
            "::",
        ] {
            let ip: IpAddr = private.parse().unwrap();
            assert!(!reachable(ip, Reach::Public), "{private}");
            assert!(reachable(ip, Reach::Any), "{private}");
        }
        for public in ["93.184.216.34", "2606:4700::1111", "::ffff:8.8.8.8"] {
            let ip: IpAddr = public.parse().unwrap();
            assert!(reachable(ip, Reach::Public), "{public}");
        }
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(reachable(lo, Reach::PublicAndLoopback));
        let private: IpAddr = "10.0.0.1".parse().unwrap();
        assert!(!reachable(private, Reach::PublicAndLoopback));
    }

    #[test]
    fn loopback_hosts_are_recognised_by_name_and_address() {
        for u in [
            "http://localhost/x",
            "http://api.localhost:8080/",
            "http://127.0.0.2/",
            "http://[::1]/",
        ] {
            assert!(is_loopback_host(&url::Url::parse(u).unwrap()), "{u}");
        }
        assert!(!is_loopback_host(
            &url::Url::parse("https://example.com/").unwrap()
        ));
    }
}
