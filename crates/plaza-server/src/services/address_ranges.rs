//! The IP blocks in force, as a structure every request is checked
//! against: for each severity, the blocked addresses as sorted, disjoint
//! ranges (IPv4 and IPv6 apart), so a check is one binary search, whatever
//! the number of blocks (100,000 blocks: 17 comparisons). Built again when
//! the blocks change or one expires.

use std::net::IpAddr;

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use plaza_domain::ip_blocks::Severity;

use crate::settings::canonical_address;

/// Reads an address (`203.0.113.7`, `2001:db8::1`) or a CIDR range
/// (`203.0.113.0/24`, `2001:db8::/32`) into its canonical form: host bits
/// cleared, an IPv4-mapped IPv6 range written as IPv4.
pub fn parse_range(text: &str) -> Option<IpNet> {
    let text = text.trim();
    let net = text
        .parse::<IpNet>()
        .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
        .ok()?
        .trunc();
    Some(match net {
        IpNet::V6(v6) if v6.prefix_len() >= 96 => match v6.network().to_ipv4_mapped() {
            Some(v4) => IpNet::V4(Ipv4Net::new(v4, v6.prefix_len() - 96).ok()?),
            None => net,
        },
        _ => net,
    })
}

/// One block as the matcher keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub net: IpNet,
    pub severity: Severity,
    /// Unix milliseconds; `None`: until removed.
    pub expires_at: Option<i64>,
}

/// Sorted, disjoint, inclusive ranges of one address family.
#[derive(Debug, Clone, Default)]
struct Disjoint<T> {
    ranges: Vec<(T, T)>,
}

impl<T: Copy + Ord + One> Disjoint<T> {
    fn build(mut ranges: Vec<(T, T)>) -> Self {
        ranges.sort_unstable();
        let mut merged: Vec<(T, T)> = Vec::with_capacity(ranges.len());
        for (first, last) in ranges {
            match merged.last_mut() {
                Some(previous) if first <= previous.1.saturating_next() => {
                    previous.1 = previous.1.max(last);
                }
                _ => merged.push((first, last)),
            }
        }
        merged.shrink_to_fit();
        Disjoint { ranges: merged }
    }

    fn contains(&self, address: T) -> bool {
        let after = self.ranges.partition_point(|range| range.0 <= address);
        after > 0 && self.ranges[after - 1].1 >= address
    }
}

/// The successor of an address, saturating at the last one.
trait One {
    fn saturating_next(self) -> Self;
}

impl One for u32 {
    fn saturating_next(self) -> Self {
        self.saturating_add(1)
    }
}

impl One for u128 {
    fn saturating_next(self) -> Self {
        self.saturating_add(1)
    }
}

/// The blocked addresses of one severity and up.
#[derive(Debug, Clone, Default)]
struct Blocked {
    v4: Disjoint<u32>,
    v6: Disjoint<u128>,
}

impl Blocked {
    fn build<'a>(nets: impl Iterator<Item = &'a IpNet>) -> Self {
        let (mut v4, mut v6) = (Vec::new(), Vec::new());
        for net in nets {
            match net {
                IpNet::V4(net) => v4.push(bounds_v4(net)),
                IpNet::V6(net) => v6.push(bounds_v6(net)),
            }
        }
        Blocked {
            v4: Disjoint::build(v4),
            v6: Disjoint::build(v6),
        }
    }

    fn contains(&self, address: IpAddr) -> bool {
        match canonical_address(address) {
            IpAddr::V4(v4) => self.v4.contains(u32::from(v4)),
            IpAddr::V6(v6) => self.v6.contains(u128::from(v6)),
        }
    }
}

fn bounds_v4(net: &Ipv4Net) -> (u32, u32) {
    (u32::from(net.network()), u32::from(net.broadcast()))
}

fn bounds_v6(net: &Ipv6Net) -> (u128, u128) {
    (u128::from(net.network()), u128::from(net.broadcast()))
}

/// The blocks in force, ready to be asked about an address.
#[derive(Debug, Clone, Default)]
pub struct AddressRanges {
    /// Blocks of severity `all`.
    all: Blocked,
    /// Blocks of either severity: what a sign-up is refused by.
    sign_up: Blocked,
    /// When the first of the blocks ends (the set is built again then).
    next_expiry: Option<i64>,
    count: usize,
}

impl AddressRanges {
    /// The ranges of the blocks in `blocks` that have not expired at `now`.
    pub fn build(blocks: &[Range], now: i64) -> Self {
        let live: Vec<&Range> = blocks
            .iter()
            .filter(|block| block.expires_at.is_none_or(|end| end > now))
            .collect();
        AddressRanges {
            all: Blocked::build(
                live.iter()
                    .filter(|block| block.severity == Severity::All)
                    .map(|block| &block.net),
            ),
            sign_up: Blocked::build(live.iter().map(|block| &block.net)),
            next_expiry: live.iter().filter_map(|block| block.expires_at).min(),
            count: live.len(),
        }
    }

    /// Whether a block of `severity` or a stronger one covers `address`.
    pub fn blocks(&self, address: IpAddr, severity: Severity) -> bool {
        if self.count == 0 {
            return false;
        }
        match severity {
            Severity::All => self.all.contains(address),
            Severity::SignUp => self.sign_up.contains(address),
        }
    }

    /// When the first block in force ends, if any does.
    pub fn next_expiry(&self) -> Option<i64> {
        self.next_expiry
    }

    /// How many blocks are in force.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn block(text: &str, severity: Severity, expires_at: Option<i64>) -> Range {
        Range {
            net: parse_range(text).unwrap(),
            severity,
            expires_at,
        }
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn ranges_are_read_in_one_form() {
        assert_eq!(
            parse_range("203.0.113.7/24").unwrap().to_string(),
            "203.0.113.0/24"
        );
        assert_eq!(
            parse_range(" 198.51.100.1 ").unwrap().to_string(),
            "198.51.100.1/32"
        );
        assert_eq!(
            parse_range("2001:db8::1/32").unwrap().to_string(),
            "2001:db8::/32"
        );
        assert_eq!(
            parse_range("::ffff:192.0.2.0/120").unwrap().to_string(),
            "192.0.2.0/24"
        );
        for bad in [
            "",
            "300.1.1.1",
            "10.0.0.0/33",
            "example.com",
            "2001:db8::/129",
        ] {
            assert_eq!(parse_range(bad), None, "{bad}");
        }
    }

    #[test]
    fn each_severity_covers_its_own_and_overlaps_merge() {
        let ranges = AddressRanges::build(
            &[
                block("10.0.0.0/8", Severity::SignUp, None),
                block("10.1.0.0/16", Severity::All, None),
                block("10.1.255.0/24", Severity::All, None),
                block("192.0.2.7", Severity::All, None),
                block("2001:db8::/32", Severity::All, None),
                block("0.0.0.0/0", Severity::SignUp, Some(5)),
            ],
            10,
        );
        assert_eq!(ranges.len(), 5, "the expired block is left out");
        assert!(ranges.blocks(ip("10.200.0.1"), Severity::SignUp));
        assert!(!ranges.blocks(ip("10.200.0.1"), Severity::All));
        assert!(ranges.blocks(ip("10.1.2.3"), Severity::All));
        assert!(ranges.blocks(ip("10.1.2.3"), Severity::SignUp));
        assert!(ranges.blocks(ip("192.0.2.7"), Severity::All));
        assert!(!ranges.blocks(ip("192.0.2.8"), Severity::All));
        assert!(!ranges.blocks(ip("192.0.2.6"), Severity::All));
        assert!(ranges.blocks(ip("::ffff:192.0.2.7"), Severity::All));
        assert!(ranges.blocks(ip("2001:db8:ffff::1"), Severity::All));
        assert!(!ranges.blocks(ip("2001:db9::1"), Severity::All));
        assert!(!ranges.blocks(ip("11.0.0.1"), Severity::SignUp));
    }

    #[test]
    fn the_first_end_is_known_and_edges_are_exact() {
        let ranges = AddressRanges::build(
            &[
                block("0.0.0.0/0", Severity::All, Some(30)),
                block("255.255.255.255", Severity::All, Some(20)),
                block("::/0", Severity::SignUp, None),
            ],
            10,
        );
        assert_eq!(ranges.next_expiry(), Some(20));
        assert!(ranges.blocks(ip("0.0.0.0"), Severity::All));
        assert!(ranges.blocks(ip("255.255.255.255"), Severity::All));
        assert!(ranges.blocks(
            ip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
            Severity::SignUp
        ));
        assert!(!AddressRanges::default().blocks(ip("10.0.0.1"), Severity::SignUp));
    }

    #[test]
    fn many_blocks_are_found_by_a_binary_search() {
        let blocks: Vec<Range> = (0..100_000u32)
            .map(|n| Range {
                net: IpNet::V4(Ipv4Net::new(Ipv4Addr::from(0x0A00_0000 + n * 4), 31).unwrap()),
                severity: Severity::All,
                expires_at: None,
            })
            .collect();
        let ranges = AddressRanges::build(&blocks, 0);
        assert!(ranges.blocks(ip("10.0.0.1"), Severity::All));
        assert!(!ranges.blocks(ip("10.0.0.2"), Severity::All));
        assert!(ranges.blocks(
            IpAddr::V4(Ipv4Addr::from(0x0A00_0000 + 99_999 * 4 + 1)),
            Severity::All
        ));
    }
}
