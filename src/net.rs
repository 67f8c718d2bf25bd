//! Outbound HTTP to addresses someone else chose (a tenant's webhook URL, an issuer's
//! `jwksUri`): only public addresses are reached, unless the operator allows more.
//!
//! A URL's host is checked twice: an address literal by [`reachable`] before the request,
//! and a name by [`PublicOnly`], the resolver of the client, which keeps only the addresses
//! the policy allows. The client connects to an address the resolver answered, so a name
//! cannot be resolved once for the check and again, differently, for the connection.

use std::{
    net::{IpAddr, Ipv4Addr, Ipv6Addr},
    sync::Arc,
    time::Duration,
};

use ipnet::{Ipv4Net, Ipv6Net};

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

/// Whether `ip` is a public unicast address: globally reachable by the IANA IPv4 and IPv6
/// Special-Purpose Address Registries (`IPV4_BLOCKS`, `IPV6_BLOCKS`), not multicast, and
/// for IPv6 inside the global unicast space 2000::/3. An IPv6 address that carries an IPv4
/// address (IPv4-compatible, IPv4-mapped, NAT64 64:ff9b::/96, 6to4, Teredo) is judged by
/// that IPv4 address, since the packets end up there.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let block = IPV4_BLOCKS
        .iter()
        .filter(|(net, _)| net.contains(&ip))
        .max_by_key(|(net, _)| net.prefix_len());
    matches!(block, None | Some((_, Block::Global)))
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let bits = u128::from(ip);
    // The 32 bits that start `shift` bits above the lowest one, as an IPv4 address.
    let ipv4_at = |shift: u32| Ipv4Addr::from(((bits >> shift) & 0xffff_ffff) as u32);
    let block = IPV6_BLOCKS
        .iter()
        .filter(|(net, _)| net.contains(&ip))
        .max_by_key(|(net, _)| net.prefix_len());
    match block {
        Some((_, Block::Global)) => true,
        Some((_, Block::NotGlobal)) => false,
        Some((_, Block::Ipv4InLast32)) => is_public_v4(ipv4_at(0)),
        Some((_, Block::SixToFour)) => is_public_v4(ipv4_at(80)),
        Some((_, Block::Teredo)) => {
            is_public_v4(ipv4_at(64)) && is_public_v4(Ipv4Addr::from(!u32::from(ipv4_at(0))))
        }
        None => GLOBAL_UNICAST.contains(&ip),
    }
}

/// What the registries say of a block of addresses. Within a table, the most specific block
/// that holds an address decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Block {
    /// Globally reachable (in a table, a block inside a larger one that is not).
    Global,
    /// Not globally reachable.
    NotGlobal,
    /// The IPv4 address in the last 32 bits decides.
    Ipv4InLast32,
    /// 6to4 (RFC 3056): the IPv4 address in bits 16-48 decides.
    SixToFour,
    /// Teredo (RFC 4380): the server's IPv4 address (bits 32-64) and the client's (the last
    /// 32 bits, every bit inverted) decide; both must be public.
    Teredo,
}

const fn v4(a: u8, b: u8, c: u8, d: u8, len: u8) -> Ipv4Net {
    Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), len)
}

const fn v6(s: [u16; 8], len: u8) -> Ipv6Net {
    Ipv6Net::new_assert(
        Ipv6Addr::new(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]),
        len,
    )
}

/// The IANA IPv4 Special-Purpose Address Registry, row by row, with its "Globally Reachable"
/// column ("N/A" counts as not), and multicast. An address in no block is public.
///
/// No crate carries this column together with the IPv6 forms that embed an IPv4 address
/// (std's `is_global` is unstable), hence the table here.
const IPV4_BLOCKS: &[(Ipv4Net, Block)] = &[
    // "This network", RFC 791 3.2; "This host on this network" 0.0.0.0/32, RFC 1122 3.2.1.3.
    (v4(0, 0, 0, 0, 8), Block::NotGlobal),
    (v4(0, 0, 0, 0, 32), Block::NotGlobal),
    // Private-Use, RFC 1918.
    (v4(10, 0, 0, 0, 8), Block::NotGlobal),
    // Shared Address Space, RFC 6598.
    (v4(100, 64, 0, 0, 10), Block::NotGlobal),
    // Loopback, RFC 1122 3.2.1.3.
    (v4(127, 0, 0, 0, 8), Block::NotGlobal),
    // Link Local, RFC 3927.
    (v4(169, 254, 0, 0, 16), Block::NotGlobal),
    // Private-Use, RFC 1918.
    (v4(172, 16, 0, 0, 12), Block::NotGlobal),
    // IETF Protocol Assignments, RFC 6890 2.1; inside it: IPv4 Service Continuity Prefix,
    // RFC 7335; IPv4 dummy address, RFC 7600; NAT64/DNS64 Discovery, RFC 8880 and RFC 7050.
    (v4(192, 0, 0, 0, 24), Block::NotGlobal),
    (v4(192, 0, 0, 0, 29), Block::NotGlobal),
    (v4(192, 0, 0, 8, 32), Block::NotGlobal),
    (v4(192, 0, 0, 170, 32), Block::NotGlobal),
    (v4(192, 0, 0, 171, 32), Block::NotGlobal),
    // Port Control Protocol Anycast, RFC 7723; TURN Anycast, RFC 8155.
    (v4(192, 0, 0, 9, 32), Block::Global),
    (v4(192, 0, 0, 10, 32), Block::Global),
    // Documentation (TEST-NET-1), RFC 5737.
    (v4(192, 0, 2, 0, 24), Block::NotGlobal),
    // AS112-v4, RFC 7535; AMT, RFC 7450.
    (v4(192, 31, 196, 0, 24), Block::Global),
    (v4(192, 52, 193, 0, 24), Block::Global),
    // Deprecated (6to4 Relay Anycast), RFC 7526; 6a44-relay anycast address, RFC 6751.
    (v4(192, 88, 99, 0, 24), Block::NotGlobal),
    (v4(192, 88, 99, 2, 32), Block::NotGlobal),
    // Private-Use, RFC 1918.
    (v4(192, 168, 0, 0, 16), Block::NotGlobal),
    // Direct Delegation AS112 Service, RFC 7534.
    (v4(192, 175, 48, 0, 24), Block::Global),
    // Benchmarking, RFC 2544.
    (v4(198, 18, 0, 0, 15), Block::NotGlobal),
    // Documentation (TEST-NET-2, TEST-NET-3), RFC 5737.
    (v4(198, 51, 100, 0, 24), Block::NotGlobal),
    (v4(203, 0, 113, 0, 24), Block::NotGlobal),
    // Multicast, RFC 5771 (its own registry, and no unicast destination).
    (v4(224, 0, 0, 0, 4), Block::NotGlobal),
    // Reserved, RFC 1112 4; Limited Broadcast, RFC 8190 and RFC 919 7.
    (v4(240, 0, 0, 0, 4), Block::NotGlobal),
    (v4(255, 255, 255, 255, 32), Block::NotGlobal),
];

/// IANA's global unicast space (IPv6 Address Space registry, RFC 4291): an IPv6 address in
/// no block of [`IPV6_BLOCKS`] is public only inside it (the rest is reserved by the IETF,
/// unique-local, link-local, site-local or multicast).
const GLOBAL_UNICAST: Ipv6Net = v6([0x2000, 0, 0, 0, 0, 0, 0, 0], 3);

/// The IANA IPv6 Special-Purpose Address Registry, row by row, with its "Globally Reachable"
/// column ("N/A" counts as not), except where an IPv4 address is embedded: those blocks are
/// judged by it. Then the IPv4-compatible, site-local and multicast blocks of the IPv6
/// Address Space registry.
const IPV6_BLOCKS: &[(Ipv6Net, Block)] = &[
    // Loopback Address and Unspecified Address, RFC 4291.
    (v6([0, 0, 0, 0, 0, 0, 0, 1], 128), Block::NotGlobal),
    (v6([0, 0, 0, 0, 0, 0, 0, 0], 128), Block::NotGlobal),
    // IPv4-mapped Address ::ffff:0:0/96, RFC 4291.
    (v6([0, 0, 0, 0, 0, 0xffff, 0, 0], 96), Block::Ipv4InLast32),
    // IPv4-IPv6 Translat. 64:ff9b::/96, RFC 6052 (registered globally reachable: the
    // translator sends the packets to the IPv4 address in it).
    (
        v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96),
        Block::Ipv4InLast32,
    ),
    // IPv4-IPv6 Translat. for local use 64:ff9b:1::/48, RFC 8215 (where the IPv4 address
    // sits depends on the operator's prefix length; it reaches only their network).
    (v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48), Block::NotGlobal),
    // Discard-Only Address Block 100::/64, RFC 6666; Dummy IPv6 Prefix 100:0:0:1::/64,
    // RFC 9780.
    (v6([0x100, 0, 0, 0, 0, 0, 0, 0], 64), Block::NotGlobal),
    (v6([0x100, 0, 0, 1, 0, 0, 0, 0], 64), Block::NotGlobal),
    // IETF Protocol Assignments 2001::/23, RFC 2928, and the blocks inside it:
    (v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 23), Block::NotGlobal),
    // TEREDO 2001::/32, RFC 4380 and RFC 8190.
    (v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 32), Block::Teredo),
    // Port Control Protocol Anycast, RFC 7723; TURN Anycast, RFC 8155; DNS-SD Service
    // Registration Protocol Anycast, RFC 9665.
    (v6([0x2001, 1, 0, 0, 0, 0, 0, 1], 128), Block::Global),
    (v6([0x2001, 1, 0, 0, 0, 0, 0, 2], 128), Block::Global),
    (v6([0x2001, 1, 0, 0, 0, 0, 0, 3], 128), Block::Global),
    // Benchmarking 2001:2::/48, RFC 5180.
    (v6([0x2001, 2, 0, 0, 0, 0, 0, 0], 48), Block::NotGlobal),
    // AMT 2001:3::/32, RFC 7450; AS112-v6 2001:4:112::/48, RFC 7535.
    (v6([0x2001, 3, 0, 0, 0, 0, 0, 0], 32), Block::Global),
    (v6([0x2001, 4, 0x112, 0, 0, 0, 0, 0], 48), Block::Global),
    // Deprecated (previously ORCHID) 2001:10::/28, RFC 4843.
    (v6([0x2001, 0x10, 0, 0, 0, 0, 0, 0], 28), Block::NotGlobal),
    // ORCHIDv2 2001:20::/28, RFC 7343; Drone Remote ID Protocol Entity Tags 2001:30::/28,
    // RFC 9374.
    (v6([0x2001, 0x20, 0, 0, 0, 0, 0, 0], 28), Block::Global),
    (v6([0x2001, 0x30, 0, 0, 0, 0, 0, 0], 28), Block::Global),
    // Documentation 2001:db8::/32, RFC 3849.
    (v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32), Block::NotGlobal),
    // 6to4 2002::/16, RFC 3056.
    (v6([0x2002, 0, 0, 0, 0, 0, 0, 0], 16), Block::SixToFour),
    // Direct Delegation AS112 Service 2620:4f:8000::/48, RFC 7534.
    (v6([0x2620, 0x4f, 0x8000, 0, 0, 0, 0, 0], 48), Block::Global),
    // Documentation 3fff::/20, RFC 9637.
    (v6([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20), Block::NotGlobal),
    // Segment Routing (SRv6) SIDs 5f00::/16, RFC 9602.
    (v6([0x5f00, 0, 0, 0, 0, 0, 0, 0], 16), Block::NotGlobal),
    // Unique-Local fc00::/7, RFC 4193 and RFC 8190.
    (v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7), Block::NotGlobal),
    // Link-Local Unicast fe80::/10, RFC 4291.
    (v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10), Block::NotGlobal),
    // Not in the registry. IPv4-compatible ::/96 (deprecated, RFC 4291 2.5.5.1; :: and ::1
    // are the more specific blocks above).
    (v6([0, 0, 0, 0, 0, 0, 0, 0], 96), Block::Ipv4InLast32),
    // Site-local fec0::/10 (deprecated, RFC 3879).
    (v6([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10), Block::NotGlobal),
    // Multicast ff00::/8, RFC 4291.
    (v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8), Block::NotGlobal),
];

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

    /// Each address against `is_public`, with the address in the message.
    fn assert_public(cases: &[(&str, bool)]) {
        for (ip, public) in cases {
            let parsed: IpAddr = ip.parse().unwrap();
            assert_eq!(is_public(parsed), *public, "{ip}");
        }
    }

    #[test]
    fn every_ipv4_special_purpose_block_is_refused_from_edge_to_edge() {
        assert_public(&[
            // 0.0.0.0/8 and 0.0.0.0/32
            ("0.0.0.0", false),
            ("0.255.255.255", false),
            ("1.0.0.0", true),
            // 10.0.0.0/8
            ("9.255.255.255", true),
            ("10.0.0.0", false),
            ("10.255.255.255", false),
            ("11.0.0.0", true),
            // 100.64.0.0/10
            ("100.63.255.255", true),
            ("100.64.0.0", false),
            ("100.127.255.255", false),
            ("100.128.0.0", true),
            // 127.0.0.0/8
            ("126.255.255.255", true),
            ("127.0.0.0", false),
            ("127.255.255.255", false),
            ("128.0.0.0", true),
            // 169.254.0.0/16
            ("169.253.255.255", true),
            ("169.254.0.0", false),
            ("169.254.255.255", false),
            ("169.255.0.0", true),
            // 172.16.0.0/12
            ("172.15.255.255", true),
            ("172.16.0.0", false),
            ("172.31.255.255", false),
            ("172.32.0.0", true),
            // 192.0.0.0/24 with 192.0.0.0/29, .8, .170, .171 and the anycast .9 and .10
            ("191.255.255.255", true),
            ("192.0.0.0", false),
            ("192.0.0.7", false),
            ("192.0.0.8", false),
            ("192.0.0.9", true),
            ("192.0.0.10", true),
            ("192.0.0.11", false),
            ("192.0.0.170", false),
            ("192.0.0.171", false),
            ("192.0.0.255", false),
            ("192.0.1.0", true),
            // 192.0.2.0/24
            ("192.0.1.255", true),
            ("192.0.2.0", false),
            ("192.0.2.255", false),
            ("192.0.3.0", true),
            // 192.31.196.0/24, 192.52.193.0/24: globally reachable
            ("192.31.196.0", true),
            ("192.31.196.255", true),
            ("192.52.193.0", true),
            ("192.52.193.255", true),
            // 192.88.99.0/24 with 192.88.99.2/32
            ("192.88.98.255", true),
            ("192.88.99.0", false),
            ("192.88.99.2", false),
            ("192.88.99.255", false),
            ("192.88.100.0", true),
            // 192.168.0.0/16
            ("192.167.255.255", true),
            ("192.168.0.0", false),
            ("192.168.255.255", false),
            ("192.169.0.0", true),
            // 192.175.48.0/24: globally reachable
            ("192.175.48.0", true),
            ("192.175.48.255", true),
            // 198.18.0.0/15
            ("198.17.255.255", true),
            ("198.18.0.0", false),
            ("198.19.255.255", false),
            ("198.20.0.0", true),
            // 198.51.100.0/24
            ("198.51.99.255", true),
            ("198.51.100.0", false),
            ("198.51.100.255", false),
            ("198.51.101.0", true),
            // 203.0.113.0/24
            ("203.0.112.255", true),
            ("203.0.113.0", false),
            ("203.0.113.255", false),
            ("203.0.114.0", true),
            // 224.0.0.0/4, 240.0.0.0/4 and 255.255.255.255/32
            ("223.255.255.255", true),
            ("224.0.0.0", false),
            ("239.255.255.255", false),
            ("240.0.0.0", false),
            ("240.0.0.1", false),
            ("255.255.255.254", false),
            ("255.255.255.255", false),
            // public
            ("1.1.1.1", true),
            ("8.8.8.8", true),
            ("93.184.215.14", true),
        ]);
    }

    #[test]
    fn every_ipv6_special_purpose_block_is_refused_from_edge_to_edge() {
        assert_public(&[
            // ::/128, ::1/128
            ("::", false),
            ("::1", false),
            // outside 2000::/3, in no block
            ("::1:0:0:0", false),
            ("1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false),
            ("4000::", false),
            ("e000::1", false),
            // 64:ff9b:1::/48, whatever it embeds
            ("64:ff9b:1::", false),
            ("64:ff9b:1::101:101", false),
            ("64:ff9b:1:ffff:ffff:ffff:ffff:ffff", false),
            // 100::/64 and 100:0:0:1::/64
            ("100::", false),
            ("100::ffff:ffff:ffff:ffff", false),
            ("100:0:0:1::", false),
            ("100::1:ffff:ffff:ffff:ffff", false),
            // 2000::/3 edges
            ("2000::", true),
            ("2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true),
            ("3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true),
            // 2001::/23, its last address, and the first after it
            ("2001:1::", false),
            ("2001:1::4", false),
            ("2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", false),
            ("2001:200::", true),
            // 2001:1::1, ::2, ::3: anycast, globally reachable
            ("2001:1::1", true),
            ("2001:1::2", true),
            ("2001:1::3", true),
            // 2001:2::/48
            ("2001:2::", false),
            ("2001:2:0:ffff:ffff:ffff:ffff:ffff", false),
            // 2001:3::/32: globally reachable
            ("2001:2:ffff:ffff:ffff:ffff:ffff:ffff", false),
            ("2001:3::", true),
            ("2001:3:ffff:ffff:ffff:ffff:ffff:ffff", true),
            ("2001:4::", false),
            // 2001:4:112::/48: globally reachable
            ("2001:4:111:ffff:ffff:ffff:ffff:ffff", false),
            ("2001:4:112::", true),
            ("2001:4:112:ffff:ffff:ffff:ffff:ffff", true),
            ("2001:4:113::", false),
            // 2001:10::/28
            ("2001:10::", false),
            ("2001:1f:ffff:ffff:ffff:ffff:ffff:ffff", false),
            // 2001:20::/28 and 2001:30::/28: globally reachable
            ("2001:20::", true),
            ("2001:3f:ffff:ffff:ffff:ffff:ffff:ffff", true),
            ("2001:40::", false),
            // 2001:db8::/32
            ("2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", true),
            ("2001:db8::", false),
            ("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", false),
            ("2001:db9::", true),
            // 2620:4f:8000::/48: globally reachable
            ("2620:4f:8000::", true),
            ("2620:4f:8000:ffff:ffff:ffff:ffff:ffff", true),
            // 3fff::/20
            ("3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true),
            ("3fff::", false),
            ("3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", false),
            ("3fff:1000::", true),
            // 5f00::/16
            ("5f00::", false),
            ("5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false),
            // fc00::/7
            ("fc00::", false),
            ("fd00::1", false),
            ("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false),
            // fe80::/10
            ("fe80::", false),
            ("febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false),
            // fec0::/10
            ("fec0::", false),
            ("fec0::1", false),
            ("feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false),
            // ff00::/8
            ("ff02::1", false),
            ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false),
            // public
            ("2606:4700:4700::1111", true),
            ("2a00:1450:4001::1", true),
        ]);
    }

    #[test]
    fn an_embedded_ipv4_address_decides_for_the_ipv6_address_that_carries_it() {
        assert_public(&[
            // IPv4-compatible ::/96 (deprecated): first and last, then embedded addresses
            ("::0.0.0.2", false),
            ("::255.255.255.255", false),
            ("::127.0.0.1", false),
            ("::10.0.0.1", false),
            ("::1.1.1.1", true),
            // IPv4-mapped ::ffff:0:0/96
            ("::fffe:ffff:ffff", false),
            ("::ffff:0.0.0.0", false),
            ("::ffff:127.0.0.1", false),
            ("::ffff:10.0.0.1", false),
            ("::ffff:192.0.0.8", false),
            ("::ffff:255.255.255.255", false),
            ("::ffff:1.1.1.1", true),
            ("::ffff:8.8.8.8", true),
            // NAT64 64:ff9b::/96
            ("64:ff9b::", false),
            ("64:ff9b::a00:1", false),
            ("64:ff9b::7f00:1", false),
            ("64:ff9b::c000:8", false),
            ("64:ff9b::ffff:ffff", false),
            ("64:ff9b::101:101", true),
            ("64:ff9b::5db8:d70e", true),
            ("64:ff9b::1:0:0", false),
            // 6to4 2002::/16: the IPv4 address in bits 16-48, whatever follows
            ("2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true),
            ("2002::", false),
            ("2002:7f00:1::", false),
            ("2002:a00:1::", false),
            ("2002:a9fe:a9fe::1", false),
            ("2002:c000:201::", false),
            ("2002:f000:1::", false),
            ("2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false),
            ("2002:101:101::", true),
            ("2002:5db8:d70e:1:2:3:4:5", true),
            ("2003::", true),
            // Teredo 2001::/32: server 1.1.1.1 and client 8.8.8.8 (inverted: f7f7:f7f7)
            ("2001:0:101:101::f7f7:f7f7", true),
            ("2001:0:101:101:8000:ffff:f7f7:f7f7", true),
            // a loopback client (127.0.0.1 inverted), a private one, a private server
            ("2001:0:101:101::80ff:fffe", false),
            ("2001:0:101:101::f5ff:fffe", false),
            ("2001:0:a00:1::f7f7:f7f7", false),
            // RFC 4380's example: its client is a documentation address (192.0.2.45)
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", false),
            // first and last: server 0.0.0.0, server 255.255.255.255
            ("2001::", false),
            ("2001:0:ffff:ffff:ffff:ffff:ffff:ffff", false),
        ]);
    }

    #[tokio::test]
    async fn the_resolver_keeps_only_the_addresses_the_policy_allows() {
        use reqwest::dns::Resolve;

        let public = PublicOnly {
            reach: Reach::Public,
        };
        let any = PublicOnly { reach: Reach::Any };
        // Address literals and `localhost` resolve here without the network.
        for refused in [
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "64:ff9b::7f00:1",
            "2002:7f00:1::",
            "2001:0:101:101::80ff:fffe",
            "fec0::1",
            "192.0.0.8",
            "240.0.0.1",
            "localhost",
        ] {
            let name = refused.parse().unwrap();
            assert!(public.resolve(name).await.is_err(), "{refused}");
        }
        for (name, reach) in [
            ("64:ff9b::7f00:1", &any),
            ("240.0.0.1", &any),
            ("1.1.1.1", &public),
            ("2606:4700:4700::1111", &public),
            ("2002:101:101::", &public),
            ("64:ff9b::101:101", &public),
        ] {
            let kept: Vec<IpAddr> = reach
                .resolve(name.parse().unwrap())
                .await
                .unwrap()
                .map(|a| a.ip())
                .collect();
            assert_eq!(kept, vec![name.parse::<IpAddr>().unwrap()], "{name}");
        }
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
