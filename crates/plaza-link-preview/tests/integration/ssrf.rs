//! SSRF policy: every refused address class, numeric host spellings, names
//! resolving to loopback, redirect hops into private space, ports and
//! schemes. No test here connects anywhere but 127.0.0.1: refused targets
//! are refused before any connection is attempted.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use plaza_link_preview::{
    FetchConfig, Lookup, PreviewClient, PreviewError, Resolver, StaticResolver,
};
use url::Url;

use crate::support::TestServer;

fn base() -> Url {
    Url::parse("http://plaza.invalid:3000").expect("url")
}

fn assert_refused(result: Result<plaza_link_preview::LinkPreview, PreviewError>, what: &str) {
    match result {
        Err(err @ PreviewError::AddressRefused { .. }) => {
            assert_eq!(err.status(), 400, "{what}");
            assert_eq!(err.error(), "URL not allowed", "{what}");
            // Anonymous callers do not learn what a name resolves to.
            let details = err.details();
            assert!(
                details.ends_with(" is not a public address"),
                "{what}: {details}"
            );
            let PreviewError::AddressRefused { addr, .. } = &err else {
                unreachable!()
            };
            let host = details.trim_end_matches(" is not a public address");
            assert!(
                host.parse::<IpAddr>().ok() == Some(*addr)
                    || host.trim_matches(['[', ']']).parse::<IpAddr>().ok() == Some(*addr)
                    || !details.contains(&addr.to_string()),
                "{what}: {details}"
            );
        }
        other => panic!("{what}: expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn every_non_public_address_class_is_refused() {
    let client = PreviewClient::new(FetchConfig {
        timeout: Duration::from_secs(2),
        ..FetchConfig::default()
    })
    .expect("client");
    for url in [
        "http://127.0.0.1/",
        "http://127.1.2.3/",
        "http://10.0.0.1/",
        "http://172.16.0.1/",
        "http://172.31.255.254/",
        "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://100.64.0.1/",
        "http://0.0.0.0/",
        "http://224.0.0.1/",
        "http://255.255.255.255/",
        "http://[::1]/",
        "http://[::]/",
        "http://[fe80::1]/",
        "http://[fc00::1]/",
        "http://[fd00:ec2::254]/",
        "http://[ff02::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:10.0.0.1]/",
        "http://[::ffff:7f00:1]/",
        "http://[64:ff9b::a9fe:a9fe]/",
        "http://[2002:7f00:1::]/",
        // Decimal, octal, hexadecimal and short IPv4 spellings.
        "http://2130706433/",
        "http://0177.0.0.1/",
        "http://0x7f.0.0.1/",
        "http://0x7f000001/",
        "http://127.1/",
        "https://017700000001/",
    ] {
        assert_refused(client.preview(url, &base()).await, url);
    }
}

#[tokio::test]
async fn localhost_by_name_is_refused() {
    let client = PreviewClient::new(FetchConfig::default()).expect("client");
    assert_refused(
        client.preview("http://localhost/", &base()).await,
        "localhost",
    );
    assert_refused(
        client.preview("http://LocalHost/admin", &base()).await,
        "LocalHost",
    );
}

#[tokio::test]
async fn resolver_mapping_to_private_addresses_is_refused() {
    let resolver = StaticResolver::new()
        .with("rebind.example", "10.1.2.3".parse().expect("ip"))
        .with("meta.example", "169.254.169.254".parse().expect("ip"))
        .with("v6.example", "::1".parse().expect("ip"))
        .with("mapped.example", "::ffff:192.168.0.1".parse().expect("ip"));
    let client =
        PreviewClient::with_resolver(FetchConfig::default(), Arc::new(resolver)).expect("client");
    for host in [
        "rebind.example",
        "meta.example",
        "v6.example",
        "mapped.example",
    ] {
        let url = format!("http://{host}/");
        assert_refused(client.preview(&url, &base()).await, &url);
    }
}

/// A public-looking host whose name maps to the loopback fixture server,
/// allowed through `allowed_networks` for 127.0.0.1 only; every redirect
/// hop into other non-public space must be refused.
#[tokio::test]
async fn redirect_from_public_looking_host_to_private_is_refused() {
    let server = TestServer::start().await;
    let port = server.port();
    let resolver = StaticResolver::new()
        .with("public.example", "127.0.0.1".parse().expect("ip"))
        .with("internal.example", "127.0.0.2".parse().expect("ip"));
    let config = FetchConfig {
        allowed_ports: vec![port],
        allowed_networks: vec!["127.0.0.1/32".parse().expect("net")],
        ..FetchConfig::default()
    };
    let client = PreviewClient::with_resolver(config, Arc::new(resolver)).expect("client");
    let start = format!("http://public.example:{port}");
    let p = client
        .preview(&format!("{start}/pages/twitter-only.html"), &base())
        .await
        .expect("the allowed host itself works");
    assert_eq!(p.title, "Only Twitter card tags here");
    for target in [
        format!("http://internal.example:{port}/pages/news-article.html"),
        format!("http://127.0.0.2:{port}/"),
        "http://10.0.0.5/".to_owned(),
        "http://[::ffff:127.0.0.1]/".to_owned(),
        // 127.0.0.2 in decimal: outside the one allowed address.
        "http://2130706434/".to_owned(),
    ] {
        let to: String = url::form_urlencoded::byte_serialize(target.as_bytes()).collect();
        let url = format!("{start}/redirect?to={to}");
        assert_refused(client.preview(&url, &base()).await, &target);
    }
    // Two hops: public -> public -> private.
    let inner: String = url::form_urlencoded::byte_serialize(b"http://192.168.0.1/").collect();
    let hop: String =
        url::form_urlencoded::byte_serialize(format!("{start}/redirect?to={inner}").as_bytes())
            .collect();
    assert_refused(
        client
            .preview(&format!("{start}/redirect?to={hop}"), &base())
            .await,
        "second hop",
    );
}

#[tokio::test]
async fn redirect_to_another_scheme_or_port_is_refused() {
    let server = TestServer::start().await;
    let client = PreviewClient::new(FetchConfig {
        allow_private: true,
        allowed_ports: vec![server.port()],
        ..FetchConfig::default()
    })
    .expect("client");
    let err = client
        .preview(
            &format!("{}/redirect?to=file:///etc/passwd", server.origin()),
            &base(),
        )
        .await
        .expect_err("file scheme");
    assert!(matches!(err, PreviewError::UnsupportedScheme(_)), "{err:?}");
    assert_eq!(err.status(), 400);
    let err = client
        .preview(
            &format!("{}/redirect?to=http://127.0.0.1:22/", server.origin()),
            &base(),
        )
        .await
        .expect_err("port 22");
    assert!(matches!(err, PreviewError::PortNotAllowed(22)), "{err:?}");
}

#[tokio::test]
async fn only_ports_80_443_and_the_allow_list() {
    let resolver =
        StaticResolver::new().with("public.example", "93.184.216.34".parse().expect("ip"));
    let client = PreviewClient::with_resolver(
        FetchConfig {
            allowed_ports: vec![8080],
            ..FetchConfig::default()
        },
        Arc::new(resolver),
    )
    .expect("client");
    for (url, port) in [
        ("http://public.example:22/", 22),
        ("https://public.example:6379/", 6379),
        ("http://public.example:8081/", 8081),
    ] {
        let err = client.preview(url, &base()).await.expect_err(url);
        assert!(
            matches!(err, PreviewError::PortNotAllowed(p) if p == port),
            "{url}: {err:?}"
        );
        assert_eq!(err.status(), 400);
    }
}

#[tokio::test]
async fn allow_private_still_refuses_multicast_and_unspecified() {
    let client = PreviewClient::new(FetchConfig {
        allow_private: true,
        ..FetchConfig::default()
    })
    .expect("client");
    for url in [
        "http://0.0.0.0/",
        "http://224.0.0.251/",
        "http://[::]/",
        "http://[ff02::1]/",
    ] {
        assert_refused(client.preview(url, &base()).await, url);
    }
}

/// A name answering with a refused address first and a permitted one
/// second: the connection must go only to the permitted one (the checked
/// list is the list connected to). Two servers on distinct loopback
/// addresses tell which one was reached.
#[tokio::test]
async fn mixed_dns_answer_connects_only_to_the_permitted_address() {
    let permitted = TestServer::start().await;
    let port = permitted.port();
    let Ok(_refused) = tokio::time::timeout(
        Duration::from_secs(5),
        TestServer::start_on(&format!("127.0.0.2:{port}")),
    )
    .await
    else {
        panic!("could not bind 127.0.0.2");
    };
    let resolver = StaticResolver::new()
        .with("mixed.example", "127.0.0.2".parse().expect("ip"))
        .with("mixed.example", "127.0.0.1".parse().expect("ip"));
    let config = FetchConfig {
        allowed_ports: vec![port],
        allowed_networks: vec!["127.0.0.1/32".parse().expect("net")],
        ..FetchConfig::default()
    };
    let client = PreviewClient::with_resolver(config, Arc::new(resolver)).expect("client");
    let p = client
        .preview(&format!("http://mixed.example:{port}/whoami"), &base())
        .await
        .expect("preview");
    assert_eq!(p.title, "127.0.0.1");
}

/// A rebinding DNS server: the first answer is permitted, every later one
/// is private. The name is looked up once per connection, and that one
/// answer is both checked and connected to, so there is no second lookup
/// for the rebinding answer to slip into.
struct Rebinding {
    lookups: AtomicUsize,
}

impl Resolver for Rebinding {
    fn lookup<'a>(&'a self, _host: &'a str) -> Lookup<'a> {
        let n = self.lookups.fetch_add(1, Ordering::SeqCst);
        let ip: IpAddr = if n == 0 {
            [127, 0, 0, 1].into()
        } else {
            [10, 0, 0, 1].into()
        };
        Box::pin(async move { Ok(vec![ip]) })
    }
}

#[tokio::test]
async fn dns_rebinding_gets_a_single_lookup() {
    let server = TestServer::start().await;
    let resolver = Arc::new(Rebinding {
        lookups: AtomicUsize::new(0),
    });
    let config = FetchConfig {
        allowed_ports: vec![server.port()],
        allowed_networks: vec!["127.0.0.1/32".parse().expect("net")],
        ..FetchConfig::default()
    };
    let client = PreviewClient::with_resolver(config, resolver.clone()).expect("client");
    let url = format!("http://rebind.example:{}/whoami", server.port());
    let p = client
        .preview(&url, &base())
        .await
        .expect("first answer is permitted");
    assert_eq!(p.title, "127.0.0.1");
    assert_eq!(
        resolver.lookups.load(Ordering::SeqCst),
        1,
        "one lookup per connection"
    );
}
