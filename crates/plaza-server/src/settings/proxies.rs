//! The proxies whose forwarding headers name the client
//! (`trusted_proxies`): addresses and CIDR ranges.

use std::net::IpAddr;

use ipnet::IpNet;

/// The proxies whose forwarding headers are believed.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// Reads addresses (`10.0.0.1`) and ranges (`10.0.0.0/8`, `fd00::/8`).
    pub fn parse(entries: &[String]) -> Result<Self, String> {
        entries
            .iter()
            .map(|entry| {
                let entry = entry.trim();
                entry
                    .parse::<IpNet>()
                    .or_else(|_| entry.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| {
                        format!("{entry:?} is not an address or a CIDR range such as 10.0.0.0/8")
                    })
            })
            .collect::<Result<_, _>>()
            .map(TrustedProxies)
    }

    /// Whether `address` is one of the trusted proxies, whose other headers
    /// (an analytics country or VPN flag) are believed too.
    pub fn trusts(&self, address: IpAddr) -> bool {
        let address = canonical_address(address);
        self.0.iter().any(|net| net.contains(&address))
    }
}

/// IPv4 clients reaching an IPv6 socket appear as `::ffff:a.b.c.d`; they are
/// the same client as `a.b.c.d`.
pub fn canonical_address(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_entries_are_named() {
        let error =
            TrustedProxies::parse(&["10.0.0.0/8".into(), "proxy.local".into()]).unwrap_err();
        assert!(error.contains("proxy.local"), "{error}");
        assert!(TrustedProxies::parse(&["10.0.0.0/33".into()]).is_err());
    }
}
