//! The fetcher against the loopback fixture server: the corpus over HTTP
//! with every content coding, redirects, headers, status mapping, non-HTML
//! targets, body limits and timeouts.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use plaza_link_preview::{
    FetchConfig, InternalAnswer, InternalFetch, InternalPage, InternalPages, PreviewClient,
    PreviewError, StaticResolver,
};
use url::Url;

use crate::support::{TestServer, load_fixtures};

/// A client allowed to reach the fixture server on loopback.
pub fn loopback_client(server: &TestServer, timeout: Duration) -> PreviewClient {
    let config = FetchConfig {
        allow_private: true,
        allowed_ports: vec![server.port()],
        timeout,
        ..FetchConfig::default()
    };
    PreviewClient::new(config).expect("client")
}

fn base() -> Url {
    Url::parse("http://plaza.invalid:3000").expect("url")
}

#[tokio::test]
async fn corpus_over_http_with_every_content_coding() {
    let server = TestServer::start().await;
    let client = loopback_client(&server, Duration::from_secs(10));
    let origin = server.origin();
    let codings = ["", "gzip", "br", "deflate"];
    let mut failures = Vec::new();
    for (i, f) in load_fixtures().iter().enumerate() {
        for coding in [codings[i % codings.len()], "gzip"] {
            let query = if coding.is_empty() {
                String::new()
            } else {
                format!("?enc={coding}")
            };
            let url = format!("{origin}/pages/{}.html{query}", f.name);
            match client.preview(&url, &base()).await {
                Ok(p) => {
                    let want_image = f.expected_image(&origin).unwrap_or_default();
                    if p.title != f.title
                        || p.description != f.description
                        || p.image != want_image
                        || p.url != url
                    {
                        failures.push(format!("{} ({coding}): got {p:?}", f.name));
                    }
                }
                Err(e) => failures.push(format!("{} ({coding}): {e}", f.name)),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn user_agent_is_sent_and_cookies_are_not() {
    let server = TestServer::start().await;
    let client = loopback_client(&server, Duration::from_secs(10));
    // The redirect sets a cookie; the next hop must not carry it.
    let url = format!("{}/redirect?to=/echo-headers", server.origin());
    let p = client.preview(&url, &base()).await.expect("preview");
    assert_eq!(p.title, "Plaza-LinkPreview/1.0");
    assert_eq!(p.description, "cookie: none");
}

#[tokio::test]
async fn app_name_shapes_the_user_agent() {
    let server = TestServer::start().await;
    let config = FetchConfig {
        app_name: "Agora".to_owned(),
        allow_private: true,
        allowed_ports: vec![server.port()],
        ..FetchConfig::default()
    };
    let client = PreviewClient::new(config).expect("client");
    let p = client
        .preview(&format!("{}/echo-headers", server.origin()), &base())
        .await
        .expect("preview");
    assert_eq!(p.title, "Agora-LinkPreview/1.0");
}

#[tokio::test]
async fn redirects_at_most_five() {
    let server = TestServer::start().await;
    let client = loopback_client(&server, Duration::from_secs(10));
    let ok = client
        .preview(&format!("{}/chain/5", server.origin()), &base())
        .await
        .expect("5 redirects");
    assert_eq!(ok.title, "End of chain");
    let err = client
        .preview(&format!("{}/chain/6", server.origin()), &base())
        .await
        .expect_err("6 redirects");
    assert!(matches!(err, PreviewError::TooManyRedirects(5)), "{err:?}");
    assert_eq!(err.status(), 502);
}

#[tokio::test]
async fn non_2xx_is_a_fetch_failure_with_the_status_text() {
    let server = TestServer::start().await;
    let client = loopback_client(&server, Duration::from_secs(10));
    let err = client
        .preview(&format!("{}/status/404", server.origin()), &base())
        .await
        .expect_err("404");
    assert_eq!(err.status(), 502);
    assert_eq!(err.error(), "Failed to fetch link preview");
    assert_eq!(err.details(), "404 Not Found");
}

#[tokio::test]
async fn connection_refused_is_a_fetch_failure_without_the_error_chain() {
    // Bind and drop a listener to get a port with nothing behind it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let config = FetchConfig {
        allow_private: true,
        allowed_ports: vec![port],
        ..FetchConfig::default()
    };
    let client = PreviewClient::new(config).expect("client");
    let err = client
        .preview(&format!("http://127.0.0.1:{port}/"), &base())
        .await
        .expect_err("refused");
    assert!(matches!(err, PreviewError::Connect(_)), "{err:?}");
    assert_eq!(err.status(), 502);
    assert_eq!(err.details(), "could not connect to the target");
    assert!(
        err.to_string().to_lowercase().contains("refused"),
        "the log text keeps the cause: {err}"
    );
}

#[tokio::test]
async fn image_url_previews_as_its_own_image_and_pdf_is_described() {
    let server = TestServer::start().await;
    let client = loopback_client(&server, Duration::from_secs(10));
    let image_url = format!("{}/image.png", server.origin());
    let p = client.preview(&image_url, &base()).await.expect("image");
    assert_eq!(p.image, image_url);
    assert_eq!(p.title, "image.png");
    let p = client
        .preview(&format!("{}/files/report.pdf", server.origin()), &base())
        .await
        .expect("pdf");
    assert_eq!(p.title, "report.pdf");
    assert_eq!(p.description, "PDF document");
    assert_eq!(p.image, "");
}

#[tokio::test]
async fn reading_stops_at_the_body_limit() {
    let server = TestServer::start().await;
    let client = loopback_client(&server, Duration::from_secs(10));
    let p = client
        .preview(&format!("{}/beyond-limit", server.origin()), &base())
        .await
        .expect("preview");
    assert_eq!(p.title, "", "metadata after 2 MiB must not be read");
}

#[tokio::test]
async fn reading_stops_at_the_end_of_a_complete_head() {
    let server = TestServer::start().await;
    // The server stalls after </head>: only stopping there can succeed.
    let client = loopback_client(&server, Duration::from_secs(5));
    let p = client
        .preview(&format!("{}/head-then-stall", server.origin()), &base())
        .await
        .expect("preview");
    assert_eq!(p.title, "Streamed");
    assert_eq!(p.image, format!("{}/s.png", server.origin()));
}

#[tokio::test]
async fn silent_server_times_out() {
    let server = TestServer::start().await;
    let client = loopback_client(&server, Duration::from_millis(300));
    let started = Instant::now();
    let err = client
        .preview(&format!("{}/never", server.origin()), &base())
        .await
        .expect_err("timeout");
    assert!(matches!(err, PreviewError::Timeout(_)), "{err:?}");
    assert_eq!(err.status(), 502);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the timeout bounds the whole preview"
    );
}

#[tokio::test]
async fn dripping_server_times_out() {
    let server = TestServer::start().await;
    let client = loopback_client(&server, Duration::from_millis(300));
    let err = client
        .preview(&format!("{}/drip", server.origin()), &base())
        .await
        .expect_err("timeout");
    assert!(matches!(err, PreviewError::Timeout(_)), "{err:?}");
}

/// In-process pages of the own origin, counting what is asked for.
#[derive(Default)]
struct Pages {
    asked: Mutex<Vec<String>>,
}

impl InternalPages for Pages {
    fn get<'a>(&'a self, path_and_query: &'a str, _max_body: usize) -> InternalFetch<'a> {
        self.asked
            .lock()
            .expect("lock")
            .push(path_and_query.to_owned());
        let page = match path_and_query {
            "/about?lang=en" => InternalPage {
                status: 200,
                content_type: Some("text/html; charset=utf-8".to_owned()),
                body: b"<html><head><title>About us</title><meta property=og:image content=/logo.png></head></html>".to_vec(),
                ..InternalPage::default()
            },
            "/moved" => InternalPage {
                status: 302,
                location: Some("http://169.254.169.254/latest/meta-data/".to_owned()),
                ..InternalPage::default()
            },
            "/to-api" => InternalPage {
                status: 302,
                location: Some("/api/link-preview?url=/about".to_owned()),
                ..InternalPage::default()
            },
            // A front end's pages beside the service: no route serves them.
            path if path == "/whoami" || path.starts_with("/redirect?") => {
                return Box::pin(async move { Some(InternalAnswer::NotServed) });
            }
            _ => InternalPage {
                status: 404,
                ..InternalPage::default()
            },
        };
        Box::pin(async move { Some(InternalAnswer::Page(page)) })
    }
}

/// A listener that counts connections and never answers: the own origin
/// of these tests, which must never be contacted over the network.
async fn counting_listener() -> (Url, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base =
        Url::parse(&format!("http://{}", listener.local_addr().expect("addr"))).expect("url");
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            drop(stream);
        }
    });
    (base, count)
}

#[tokio::test]
async fn internal_links_are_answered_in_process_never_over_the_network() {
    let (base, connections) = counting_listener().await;
    let pages = Arc::new(Pages::default());
    // Private targets and the base URL's port allowed: the network path to
    // the own origin would be open if it were taken.
    let config = FetchConfig {
        allow_private: true,
        allowed_ports: vec![base.port().expect("port")],
        ..FetchConfig::default()
    };
    let client = PreviewClient::new(config.clone())
        .expect("client")
        .with_internal_pages(pages.clone());
    let p = client
        .preview("/about?lang=en", &base)
        .await
        .expect("internal");
    assert_eq!(p.title, "About us");
    assert_eq!(p.image, format!("{}logo.png", base.as_str()));
    assert_eq!(p.url, "/about?lang=en");
    // The absolute form on the same origin is internal too.
    let absolute = format!("{}about?lang=en", base.as_str());
    let p = client.preview(&absolute, &base).await.expect("absolute");
    assert_eq!(p.title, "About us");
    // A missing page is the target's non-2xx answer.
    let err = client.preview("/nothing", &base).await.expect_err("404");
    assert_eq!(
        (err.status(), err.details()),
        (502, "404 Not Found".to_owned())
    );
    // A redirect out of the own origin is checked like any target.
    let strict = PreviewClient::new(FetchConfig::default())
        .expect("client")
        .with_internal_pages(pages.clone());
    let err = strict
        .preview("/moved", &base)
        .await
        .expect_err("redirect out");
    assert!(
        matches!(err, PreviewError::AddressRefused { .. }),
        "{err:?}"
    );
    // Without the hook the own origin fails; it is still not fetched.
    let bare = PreviewClient::new(config).expect("client");
    let err = bare
        .preview("/about?lang=en", &base)
        .await
        .expect_err("no hook");
    assert!(matches!(err, PreviewError::Connect(_)), "{err:?}");
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "the own origin was contacted"
    );
    assert_eq!(
        pages.asked.lock().expect("lock").as_slice(),
        ["/about?lang=en", "/about?lang=en", "/nothing", "/moved"]
    );
}

#[tokio::test]
async fn pages_the_service_does_not_serve_come_from_the_base_url_over_http() {
    // The fixture server stands in for a front end on the base URL's
    // origin: loopback, on a port the settings do not allow.
    let server = TestServer::start().await;
    let base = Url::parse(&server.origin()).expect("url");
    let pages = Arc::new(Pages::default());
    let client = PreviewClient::new(FetchConfig {
        allowed_ports: vec![server.port()],
        ..FetchConfig::default()
    })
    .expect("client")
    .with_internal_pages(pages.clone());
    for url in ["/whoami".to_owned(), format!("{}whoami", base.as_str())] {
        let p = client
            .preview(&url, &base)
            .await
            .expect("the own origin is allowed");
        assert_eq!(p.title, "127.0.0.1", "{url}");
    }
    // The service's own routes are still answered in process.
    let p = client.preview("/about?lang=en", &base).await.expect("own");
    assert_eq!(p.title, "About us");
    // Another name for the same address is not the own origin, directly or
    // as a redirect hop of the front end.
    let other_name = format!("http://localhost:{}/whoami", server.port());
    let redirected = format!("/redirect?to={other_name}");
    for url in [other_name, redirected] {
        let err = client.preview(&url, &base).await.expect_err(&url);
        assert!(
            matches!(err, PreviewError::AddressRefused { .. }),
            "{url}: {err:?}"
        );
    }
    assert_eq!(
        pages.asked.lock().expect("lock").as_slice(),
        [
            "/whoami",
            "/whoami",
            "/about?lang=en",
            &format!("/redirect?to=http://localhost:{}/whoami", server.port())
        ]
    );
}

#[tokio::test]
async fn the_own_api_is_refused_before_anything_is_asked() {
    let server = TestServer::start().await;
    let (base, connections) = counting_listener().await;
    let pages = Arc::new(Pages::default());
    let client = PreviewClient::new(FetchConfig {
        allow_private: true,
        allowed_ports: vec![base.port().expect("port"), server.port()],
        ..FetchConfig::default()
    })
    .expect("client")
    .with_internal_pages(pages.clone());
    let nested = format!(
        "/api/link-preview?url={}",
        "/api/link-preview?url=".repeat(50)
    );
    let from_elsewhere = format!(
        "{}/redirect?to={}api/version",
        server.origin(),
        base.as_str()
    );
    for url in [
        nested.clone(),
        format!("{}api/link-preview?url=/", base.as_str()),
        "/API/link-preview".to_owned(),
        "/%61pi/link-preview".to_owned(),
        // A redirect hop landing on the own API, from elsewhere or in process.
        from_elsewhere,
        "/to-api".to_owned(),
    ] {
        let err = client.preview(&url, &base).await.expect_err(&url);
        assert!(matches!(err, PreviewError::OwnApi), "{url}: {err:?}");
        assert_eq!(err.status(), 400);
        assert_eq!(err.error(), "URL not allowed");
        assert_eq!(err.details(), "the service's own API is not previewed");
    }
    assert_eq!(connections.load(Ordering::SeqCst), 0);
    assert_eq!(pages.asked.lock().expect("lock").as_slice(), ["/to-api"]);
    // `//host` is not internal: it leaves the origin and is checked.
    let strict = PreviewClient::new(FetchConfig::default()).expect("client");
    let err = strict
        .preview("//10.0.0.1/x", &base)
        .await
        .expect_err("scheme-relative");
    assert!(
        matches!(err, PreviewError::AddressRefused { .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn missing_and_malformed_urls_are_client_errors() {
    let client = PreviewClient::new(FetchConfig::default()).expect("client");
    let err = client.preview("  ", &base()).await.expect_err("missing");
    assert!(matches!(err, PreviewError::MissingUrl));
    assert_eq!((err.status(), err.error()), (400, "URL is required"));
    for (url, expect_scheme) in [
        ("not a url", false),
        ("http://", false),
        ("file:///etc/passwd", true),
        ("ftp://e.example/", true),
        ("gopher://e.example/", true),
    ] {
        let err = client.preview(url, &base()).await.expect_err(url);
        assert_eq!(err.status(), 400, "{url}: {err:?}");
        assert_eq!(
            matches!(err, PreviewError::UnsupportedScheme(_)),
            expect_scheme,
            "{url}: {err:?}"
        );
    }
}

#[tokio::test]
async fn public_looking_name_reaches_the_fixture_server_only_when_allowed() {
    let server = TestServer::start().await;
    let resolver =
        Arc::new(StaticResolver::new().with("news.example", "127.0.0.1".parse().expect("ip")));
    let allowed = FetchConfig {
        allow_private: true,
        allowed_ports: vec![server.port()],
        ..FetchConfig::default()
    };
    let client = PreviewClient::with_resolver(allowed.clone(), resolver.clone()).expect("client");
    let url = format!(
        "http://news.example:{}/pages/news-article.html",
        server.port()
    );
    let p = client.preview(&url, &base()).await.expect("allowed");
    assert_eq!(p.title, "Central bank holds rates as inflation eases");
    let refused = FetchConfig {
        allow_private: false,
        ..allowed
    };
    let client = PreviewClient::with_resolver(refused, resolver).expect("client");
    let err = client.preview(&url, &base()).await.expect_err("refused");
    assert!(
        matches!(err, PreviewError::AddressRefused { ref host, .. } if host == "news.example"),
        "{err:?}"
    );
    assert_eq!(err.status(), 400);
}
