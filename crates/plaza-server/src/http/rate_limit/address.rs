//! The client's address, which rate limits and the audit trail count by.
//!
//! The socket's peer is the client unless the peer is one of the configured
//! trusted proxies (`trusted_proxies`). Then the forwarding headers are read
//! from the right: each proxy appends the address it received from, so the
//! right-most hop that is not a trusted proxy is the first address nobody
//! under the client's control could have written. The left-most entry is
//! whatever the client sent, and is never believed on its own.

use std::net::{IpAddr, Ipv6Addr};

use axum::http::{HeaderMap, HeaderName};

use crate::settings::{TrustedProxies, canonical_address};

/// Named once, not parsed from text on every request.
const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// The client behind `peer`: the peer itself, or when the peer is a
/// trusted proxy, the right-most untrusted hop of `Forwarded` (when
/// present) or else `X-Forwarded-For`. When every hop is trusted, the
/// left-most is the client; a hop that is not an address (`unknown`, an
/// obfuscated name) ends the walk at the proxy that wrote it.
pub fn client_behind(proxies: &TrustedProxies, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
    let peer = canonical_address(peer);
    if !proxies.trusts(peer) {
        return peer;
    }
    if headers.contains_key(axum::http::header::FORWARDED) {
        walk_from_right(proxies, peer, forwarded_hops_from_right(headers))
    } else {
        walk_from_right(proxies, peer, x_forwarded_for_hops_from_right(headers))
    }
}

/// The right-most hop of `hops` (read from the right) that is not a
/// trusted proxy; the left-most when every one is.
fn walk_from_right(
    proxies: &TrustedProxies,
    peer: IpAddr,
    hops: impl Iterator<Item = Option<IpAddr>>,
) -> IpAddr {
    let mut client = peer;
    for hop in hops {
        match hop {
            Some(address) => {
                client = canonical_address(address);
                if !proxies.trusts(client) {
                    break;
                }
            }
            None => break,
        }
    }
    client
}

/// The part of an address a rate limit counts: an IPv4 address whole, an
/// IPv6 address by its /64 (one subscriber's network; anyone holding one
/// can use 2^64 addresses in it).
pub fn counted_prefix(address: IpAddr) -> IpAddr {
    match canonical_address(address) {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(bits))
        }
        v4 => v4,
    }
}

/// `X-Forwarded-For` entries, right to left, over every header line; read
/// lazily, as the walk needs them.
fn x_forwarded_for_hops_from_right(
    headers: &HeaderMap,
) -> impl Iterator<Item = Option<IpAddr>> + '_ {
    headers
        .get_all(X_FORWARDED_FOR)
        .iter()
        .rev()
        .flat_map(|value| value.to_str().unwrap_or("unknown").rsplit(','))
        .map(|hop| parse_node(hop.trim()))
}

/// The `for=` node of each `Forwarded` element (RFC 7239), right to left.
fn forwarded_hops_from_right(headers: &HeaderMap) -> impl Iterator<Item = Option<IpAddr>> + '_ {
    headers
        .get_all(axum::http::header::FORWARDED)
        .iter()
        .rev()
        .flat_map(|value| value.to_str().unwrap_or("for=unknown").rsplit(','))
        .map(|element| {
            element
                .split(';')
                .filter_map(|pair| pair.split_once('='))
                .find(|(name, _)| name.trim().eq_ignore_ascii_case("for"))
                .and_then(|(_, node)| parse_node(node.trim().trim_matches('"')))
        })
}

/// An address as proxies write it: `192.0.2.1`, `192.0.2.1:4711`,
/// `2001:db8::1`, `[2001:db8::1]` or `[2001:db8::1]:4711`.
fn parse_node(node: &str) -> Option<IpAddr> {
    if let Ok(address) = node.parse::<IpAddr>() {
        return Some(address);
    }
    if let Some(rest) = node.strip_prefix('[') {
        let (inside, _) = rest.split_once(']')?;
        return inside.parse().ok();
    }
    let (host, port) = node.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    host.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, value.parse().unwrap());
        }
        headers
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn proxies(entries: &[&str]) -> TrustedProxies {
        TrustedProxies::parse(&entries.iter().map(|e| e.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_forwards() {
        let trusted = proxies(&["10.0.0.0/8"]);
        let sent = headers(&[("x-forwarded-for", "1.2.3.4"), ("forwarded", "for=1.2.3.4")]);
        assert_eq!(
            client_behind(&trusted, ip("203.0.113.9"), &sent),
            ip("203.0.113.9")
        );
    }

    #[test]
    fn behind_trusted_proxies_the_right_most_untrusted_hop_is_the_client() {
        let trusted = proxies(&["10.0.0.0/8", "192.168.1.1"]);
        // The client wrote 6.6.6.6 itself; the proxies appended the rest.
        let sent = headers(&[("x-forwarded-for", "6.6.6.6, 198.51.100.7, 10.1.1.1")]);
        assert_eq!(
            client_behind(&trusted, ip("192.168.1.1"), &sent),
            ip("198.51.100.7")
        );
        let lines = headers(&[
            ("x-forwarded-for", "6.6.6.6"),
            ("x-forwarded-for", "198.51.100.7"),
        ]);
        assert_eq!(
            client_behind(&trusted, ip("10.0.0.2"), &lines),
            ip("198.51.100.7")
        );
        let all_trusted = headers(&[("x-forwarded-for", "10.9.9.9, 10.1.1.1")]);
        assert_eq!(
            client_behind(&trusted, ip("10.0.0.2"), &all_trusted),
            ip("10.9.9.9")
        );
        assert_eq!(
            client_behind(&trusted, ip("10.0.0.2"), &HeaderMap::new()),
            ip("10.0.0.2")
        );
    }

    #[test]
    fn forwarded_is_read_with_ports_quotes_and_brackets() {
        let trusted = proxies(&["10.0.0.1"]);
        let sent = headers(&[(
            "forwarded",
            "for=6.6.6.6, for=\"[2001:db8:cafe::17]:4711\";proto=https",
        )]);
        assert_eq!(
            client_behind(&trusted, ip("10.0.0.1"), &sent),
            ip("2001:db8:cafe::17")
        );
        let with_port = headers(&[("forwarded", "for=\"198.51.100.7:8080\"")]);
        assert_eq!(
            client_behind(&trusted, ip("10.0.0.1"), &with_port),
            ip("198.51.100.7")
        );
        let unknown = headers(&[("forwarded", "for=6.6.6.6, for=unknown")]);
        assert_eq!(
            client_behind(&trusted, ip("10.0.0.1"), &unknown),
            ip("10.0.0.1")
        );
    }

    #[test]
    fn ipv6_clients_are_counted_by_their_64_and_mapped_ipv4_as_ipv4() {
        assert_eq!(
            counted_prefix(ip("2001:db8:1:2:aaaa::1")),
            ip("2001:db8:1:2::")
        );
        assert_eq!(
            counted_prefix(ip("2001:db8:1:2:ffff:ffff:ffff:ffff")),
            ip("2001:db8:1:2::")
        );
        assert_ne!(counted_prefix(ip("2001:db8:1:3::1")), ip("2001:db8:1:2::"));
        assert_eq!(
            counted_prefix(ip("::ffff:198.51.100.7")),
            ip("198.51.100.7")
        );
        assert_eq!(counted_prefix(ip("198.51.100.7")), ip("198.51.100.7"));
    }
}
