//! Which addresses and ports a preview may connect to (SSRF defence).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// What kind of destination an IP address is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressClass {
    /// A globally routable unicast address.
    Public,
    /// Loopback, private (RFC 1918), link-local (including cloud metadata
    /// at 169.254.169.254), CGNAT (100.64/10), unique-local IPv6,
    /// IPv4-mapped/compatible IPv6, documentation, benchmarking and other
    /// special-purpose ranges: reachable only with `allow_private`.
    NonPublic,
    /// Unspecified, multicast, broadcast and reserved: never a valid target
    /// for a TCP connection (`0.0.0.0` even reaches the local host on Linux).
    Never,
}

/// Classifies an address for the SSRF policy.
pub fn classify(ip: IpAddr) -> AddressClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> AddressClass {
    let [a, b, c, _] = ip.octets();
    if ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() || a >= 240 || a == 0 {
        return AddressClass::Never;
    }
    let non_public = a == 10
        || a == 127
        || (a == 100 && (64..128).contains(&b))
        || (a == 169 && b == 254)
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 168)
        || (a == 192 && b == 0 && (c == 0 || c == 2))
        || (a == 192 && b == 88 && c == 99)
        || (a == 198 && (b == 18 || b == 19))
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113);
    if non_public {
        AddressClass::NonPublic
    } else {
        AddressClass::Public
    }
}

fn classify_v6(ip: Ipv6Addr) -> AddressClass {
    let s = ip.segments();
    if ip.is_unspecified() || ip.is_multicast() {
        return AddressClass::Never;
    }
    // IPv4-mapped (::ffff:0:0/96) and the deprecated IPv4-compatible
    // (::/96) forms reach IPv4 hosts; they are refused as a class.
    let embeds_v4 = s[..5] == [0; 5] && (s[5] == 0xffff || s[5] == 0);
    // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address that
    // decides where the packet ends up.
    let nat64 = s[..6] == [0x64, 0xff9b, 0, 0, 0, 0];
    if nat64 {
        return classify_v4(Ipv4Addr::new(
            (s[6] >> 8) as u8,
            s[6] as u8,
            (s[7] >> 8) as u8,
            s[7] as u8,
        ));
    }
    if s[0] == 0x2002 {
        return classify_v4(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ));
    }
    let non_public = ip.is_loopback()
        || embeds_v4
        || (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
        || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated) fec0::/10
        || (s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1) // local-use NAT64 64:ff9b:1::/48
        || (s[0] == 0x100 && s[1..4] == [0, 0, 0]) // discard-only 100::/64
        || (s[0] == 0x2001 && s[1] < 0x200) // IETF protocol assignments incl. Teredo, 2001::/23
        || (s[0] == 0x2001 && s[1] == 0xdb8) // documentation 2001:db8::/32
        || (s[0] & 0xe000) != 0x2000; // outside global unicast 2000::/3
    if non_public {
        AddressClass::NonPublic
    } else {
        AddressClass::Public
    }
}

/// An IP network in CIDR form (`10.1.0.0/16`, `fd00::/8`, or one address),
/// for allowing chosen private ranges without `allow_private`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNet {
    addr: IpAddr,
    prefix: u8,
}

impl IpNet {
    /// The network of `addr` with `prefix` leading bits; `None` when the
    /// prefix is longer than the address.
    pub fn new(addr: IpAddr, prefix: u8) -> Option<Self> {
        let max = if addr.is_ipv4() { 32 } else { 128 };
        (prefix <= max).then_some(IpNet { addr, prefix })
    }

    /// Whether `ip` lies in this network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// Error for a string that is not `ADDRESS` or `ADDRESS/PREFIX`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid IP network {0:?} (expected ADDRESS or ADDRESS/PREFIX)")]
pub struct InvalidIpNet(String);

impl FromStr for IpNet {
    type Err = InvalidIpNet;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || InvalidIpNet(s.to_owned());
        let (addr, prefix) = match s.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (s, None),
        };
        let addr: IpAddr = addr.trim().parse().map_err(|_| err())?;
        let prefix = match prefix {
            Some(p) => p.trim().parse().map_err(|_| err())?,
            None if addr.is_ipv4() => 32,
            None => 128,
        };
        IpNet::new(addr, prefix).ok_or_else(err)
    }
}

impl fmt::Display for IpNet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// The address rules in force for one client.
#[derive(Debug, Clone, Default)]
pub(crate) struct AddressPolicy {
    pub allow_private: bool,
    pub allowed_networks: Vec<IpNet>,
}

impl AddressPolicy {
    /// Whether a connection to `ip` is permitted.
    pub fn permits(&self, ip: IpAddr) -> bool {
        if self.allowed_networks.iter().any(|net| net.contains(ip)) {
            return true;
        }
        match classify(ip) {
            AddressClass::Public => true,
            AddressClass::NonPublic => self.allow_private,
            AddressClass::Never => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(s: &str) -> AddressClass {
        classify(s.parse().unwrap_or_else(|_| panic!("bad address {s}")))
    }

    #[test]
    fn every_refused_class() {
        for s in [
            "127.0.0.1",
            "127.255.0.9",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "192.0.2.1",
            "198.18.0.1",
            "::1",
            "fe80::1",
            "fc00::1",
            "fd12:3456::1",
            "::ffff:127.0.0.1",
            "::ffff:8.8.8.8",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "2002:c0a8:0101::1",
            "2001:db8::1",
        ] {
            assert_eq!(class(s), AddressClass::NonPublic, "{s}");
        }
        for s in [
            "0.0.0.0",
            "0.1.2.3",
            "224.0.0.1",
            "239.1.1.1",
            "255.255.255.255",
            "240.0.0.1",
            "::",
            "ff02::1",
        ] {
            assert_eq!(class(s), AddressClass::Never, "{s}");
        }
        for s in [
            "93.184.216.34",
            "8.8.8.8",
            "100.128.0.1",
            "172.32.0.1",
            "2606:4700::1111",
            "64:ff9b::808:808",
        ] {
            assert_eq!(class(s), AddressClass::Public, "{s}");
        }
    }

    #[test]
    fn networks() {
        let net: IpNet = "10.1.0.0/16".parse().unwrap_or_else(|e| panic!("{e}"));
        assert!(net.contains("10.1.200.3".parse().unwrap_or_else(|_| unreachable!())));
        assert!(!net.contains("10.2.0.1".parse().unwrap_or_else(|_| unreachable!())));
        let all: IpNet = "::/0".parse().unwrap_or_else(|e| panic!("{e}"));
        assert!(all.contains("::1".parse().unwrap_or_else(|_| unreachable!())));
        assert!("10.0.0.0/33".parse::<IpNet>().is_err());
        assert!("nonsense".parse::<IpNet>().is_err());
        let one: IpNet = "127.0.0.1".parse().unwrap_or_else(|e| panic!("{e}"));
        let policy = AddressPolicy {
            allow_private: false,
            allowed_networks: vec![one],
        };
        assert!(policy.permits("127.0.0.1".parse().unwrap_or_else(|_| unreachable!())));
        assert!(!policy.permits("127.0.0.2".parse().unwrap_or_else(|_| unreachable!())));
    }
}
