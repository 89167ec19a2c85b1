//! The IP blocks' check of one request's address: no blocks, and 100,000
//! blocks (IPv4 and IPv6 ranges, none covering the address, so the search
//! runs to the end). Over HTTP, bench/ip-blocks.sh measures the request
//! path with and without them side by side.

use std::hint::black_box;
use std::net::IpAddr;

use criterion::{Criterion, criterion_group, criterion_main};
use plaza_domain::ip_blocks::Severity;
use plaza_server::services::address_ranges::{AddressRanges, Range, parse_range};

/// `count` blocks as bench/ip-blocks.sh stores them.
fn blocks(count: u32) -> Vec<Range> {
    (0..count)
        .map(|n| {
            let text = if n % 2 == 0 {
                let (a, b, c) = (11 + (n / 2) % 100, (n / 200) % 256, (n / 51_200) % 256);
                if n % 4 == 0 {
                    format!("{a}.{b}.{c}.0/24")
                } else {
                    format!("{a}.{b}.{c}.{}/32", (n / 2) % 256)
                }
            } else {
                format!("2001:db8:{:x}:{:x}::/64", (n / 65_536) % 65_536, n % 65_536)
            };
            Range {
                net: parse_range(&text).expect("a range"),
                severity: if n % 3 == 0 {
                    Severity::SignUp
                } else {
                    Severity::All
                },
                expires_at: None,
            }
        })
        .collect()
}

fn check(c: &mut Criterion) {
    let v4: IpAddr = "127.0.0.1".parse().unwrap();
    let v6: IpAddr = "2001:db8:ffff::1".parse().unwrap();
    for (name, count) in [("none", 0), ("100k", 100_000)] {
        let ranges = AddressRanges::build(&blocks(count), 0);
        c.bench_function(&format!("ip_blocks_check_{name}_v4"), |b| {
            b.iter(|| ranges.blocks(black_box(v4), Severity::All))
        });
        c.bench_function(&format!("ip_blocks_check_{name}_v6"), |b| {
            b.iter(|| ranges.blocks(black_box(v6), Severity::SignUp))
        });
    }
    let stored = blocks(100_000);
    c.bench_function("ip_blocks_build_100k", |b| {
        b.iter(|| AddressRanges::build(black_box(&stored), 0))
    });
}

criterion_group!(benches, check);
criterion_main!(benches);
