//! Quote providers: rotation frequencies, fetching from a fake provider
//! server on loopback, timeouts, failures and the built-in fallback.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use plaza_og_image::quotes::{
    BUILTIN_QUOTES, MAX_BODY_BYTES, ProviderConfig, QuoteOrigin, QuoteSource, builtin_quote,
    default_providers, weighted_order,
};
use plaza_og_image::{MAX_AUTHOR_CHARS, MAX_QUOTE_CHARS};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client")
}

/// Counts the first provider of each draw, over `draws` draws.
fn first_choices(providers: &[ProviderConfig], draws: usize) -> HashMap<String, usize> {
    let mut rng = StdRng::seed_from_u64(7);
    let mut counts = HashMap::new();
    for _ in 0..draws {
        let order = weighted_order(providers, &mut rng);
        if let Some(first) = order.first() {
            *counts.entry(providers[*first].name.clone()).or_insert(0) += 1;
        }
    }
    counts
}

fn assert_share(counts: &HashMap<String, usize>, name: &str, draws: usize, expected: f64) {
    let share = counts.get(name).copied().unwrap_or(0) as f64 / draws as f64;
    assert!(
        (share - expected).abs() < 0.01,
        "{name}: {share:.4} instead of {expected:.4}"
    );
}

#[test]
fn rotation_is_40_30_20_10_with_a_key() {
    let providers = default_providers(Some("secret".to_string()));
    let draws = 100_000;
    let counts = first_choices(&providers, draws);
    assert_share(&counts, "quotable", draws, 0.40);
    assert_share(&counts, "zenquotes", draws, 0.30);
    assert_share(&counts, "dummyjson", draws, 0.20);
    assert_share(&counts, "api-ninjas", draws, 0.10);
}

#[test]
fn keyed_provider_is_skipped_without_a_key() {
    for key in [None, Some(String::new())] {
        let providers = default_providers(key);
        let draws = 90_000;
        let counts = first_choices(&providers, draws);
        assert!(!counts.contains_key("api-ninjas"));
        assert_share(&counts, "quotable", draws, 4.0 / 9.0);
        assert_share(&counts, "zenquotes", draws, 3.0 / 9.0);
        assert_share(&counts, "dummyjson", draws, 2.0 / 9.0);
    }
}

#[test]
fn order_tries_every_usable_provider_once() {
    let mut providers = default_providers(Some("k".to_string()));
    providers.push(ProviderConfig::new(
        "off",
        "http://127.0.0.1:1/",
        0,
        "/q",
        "/a",
    ));
    let mut rng = StdRng::seed_from_u64(1);
    for _ in 0..1000 {
        let mut order = weighted_order(&providers, &mut rng);
        order.sort_unstable();
        assert_eq!(order, [0, 1, 2, 3]);
    }
    assert!(weighted_order(&[], &mut rng).is_empty());
}

#[test]
fn six_builtin_quotes() {
    assert_eq!(BUILTIN_QUOTES.len(), 6);
    for i in 0..12 {
        let quote = builtin_quote(i);
        assert!(!quote.text.is_empty() && !quote.author.is_empty());
        assert_eq!(quote.origin, QuoteOrigin::BuiltIn(i % 6));
    }
}

#[derive(Default)]
struct Hits {
    keyed: AtomicUsize,
    keyed_with_key: AtomicUsize,
}

/// A fake provider server on 127.0.0.1 with one route per behaviour.
async fn fake_server() -> (String, Arc<Hits>) {
    let hits = Arc::new(Hits::default());
    let app = Router::new()
        .route(
            "/quotable",
            get(|| async { Json(json!({"content": "From quotable.", "author": "Q"})) }),
        )
        .route(
            "/zen",
            get(|| async { Json(json!([{"q": "From zen.", "a": "Z", "h": "<b>"}])) }),
        )
        .route(
            "/keyed",
            get(
                |State(hits): State<Arc<Hits>>, headers: HeaderMap| async move {
                    hits.keyed.fetch_add(1, Ordering::SeqCst);
                    if headers.get("x-api-key").and_then(|v| v.to_str().ok()) == Some("sekret") {
                        hits.keyed_with_key.fetch_add(1, Ordering::SeqCst);
                        Json(json!([{"quote": "From keyed.", "author": "K"}])).into_response()
                    } else {
                        StatusCode::UNAUTHORIZED.into_response()
                    }
                },
            ),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                Json(json!({"content": "Too late.", "author": "S"}))
            }),
        )
        .route(
            "/error",
            get(|| async { StatusCode::INTERNAL_SERVER_ERROR }),
        )
        .route("/garbage", get(|| async { "<html>not json</html>" }))
        .route(
            "/empty",
            get(|| async { Json(json!({"content": "  ", "author": "E"})) }),
        )
        .route(
            "/huge",
            get(|| async {
                Json(json!({"content": "x".repeat(MAX_BODY_BYTES * 2), "author": "H"}))
            }),
        )
        .route(
            "/hostile",
            get(|| async {
                let text = format!("<script>x</script>\u{0}\u{1b}{}", "y".repeat(20_000));
                Json(json!({"content": text, "author": "\u{7}<i>".repeat(2_000)}))
            }),
        )
        .with_state(Arc::clone(&hits));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{address}"), hits)
}

fn provider(base: &str, name: &str, weight: u32) -> ProviderConfig {
    let (quote, author) = match name {
        "zen" => ("/0/q", "/0/a"),
        "keyed" => ("/0/quote", "/0/author"),
        _ => ("/content", "/author"),
    };
    ProviderConfig::new(name, format!("{base}/{name}"), weight, quote, author)
}

#[tokio::test]
async fn fetches_each_response_shape() {
    let (base, hits) = fake_server().await;
    let source = QuoteSource::new(client(), vec![]);
    let quote = source
        .fetch(&provider(&base, "quotable", 1))
        .await
        .expect("quotable");
    assert_eq!(
        (quote.text.as_str(), quote.author.as_str()),
        ("From quotable.", "Q")
    );
    let quote = source.fetch(&provider(&base, "zen", 1)).await.expect("zen");
    assert_eq!(
        (quote.text.as_str(), quote.author.as_str()),
        ("From zen.", "Z")
    );
    assert_eq!(quote.origin, QuoteOrigin::Provider("zen".to_string()));

    let keyed = provider(&base, "keyed", 1).with_api_key("X-Api-Key", Some("sekret".to_string()));
    let quote = source.fetch(&keyed).await.expect("keyed");
    assert_eq!(quote.text, "From keyed.");
    let wrong = provider(&base, "keyed", 1).with_api_key("X-Api-Key", Some("wrong".to_string()));
    assert!(source.fetch(&wrong).await.is_err());
    assert_eq!(hits.keyed.load(Ordering::SeqCst), 2);
    assert_eq!(hits.keyed_with_key.load(Ordering::SeqCst), 1);

    for failing in ["error", "garbage", "empty", "huge", "missing-route"] {
        assert!(
            source.fetch(&provider(&base, failing, 1)).await.is_err(),
            "{failing}"
        );
    }
}

#[tokio::test]
async fn hostile_provider_answers_are_cleaned_and_bounded() {
    let (base, _) = fake_server().await;
    let source = QuoteSource::new(client(), vec![]);
    let quote = source
        .fetch(&provider(&base, "hostile", 1))
        .await
        .expect("hostile");
    assert!(quote.text.chars().count() <= MAX_QUOTE_CHARS);
    assert!(quote.author.chars().count() <= MAX_AUTHOR_CHARS);
    assert!(!quote.text.chars().any(char::is_control));
    assert!(!quote.author.chars().any(char::is_control));
    // Markup stays text here; the card escapes it.
    let svg = plaza_og_image::render_svg("s", &quote.text, &quote.author);
    assert!(!svg.contains("<script>") && !svg.contains("<i>"));
}

#[tokio::test]
async fn rotation_reaches_providers_in_proportion() {
    let (base, _) = fake_server().await;
    let source = QuoteSource::new(
        client(),
        vec![provider(&base, "quotable", 3), provider(&base, "zen", 1)],
    );
    let mut rng = StdRng::seed_from_u64(3);
    let mut quotable = 0;
    let draws = 400;
    for _ in 0..draws {
        if source.next_quote_with(&mut rng).await.origin
            == QuoteOrigin::Provider("quotable".to_string())
        {
            quotable += 1;
        }
    }
    let share = f64::from(quotable) / f64::from(draws);
    assert!((share - 0.75).abs() < 0.07, "{share}");
}

#[tokio::test]
async fn slow_and_failing_providers_fall_through_to_the_next() {
    let (base, _) = fake_server().await;
    let source = QuoteSource::new(
        client(),
        vec![
            provider(&base, "slow", 1_000_000),
            provider(&base, "error", 1_000_000),
            provider(&base, "zen", 1),
        ],
    )
    .with_timeouts(Duration::from_millis(200), Duration::from_secs(3));
    let started = Instant::now();
    let quote = source.next_quote().await;
    assert_eq!(quote.origin, QuoteOrigin::Provider("zen".to_string()));
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn builtin_quote_when_all_fail_within_the_total_timeout() {
    let (base, _) = fake_server().await;
    let providers = vec![
        provider(&base, "slow", 1),
        provider(&base, "garbage", 1),
        provider(&base, "huge", 1),
        // Nothing listens on port 1.
        ProviderConfig::new("refused", "http://127.0.0.1:1/", 1, "/q", "/a"),
        provider(&base, "keyed", 1).with_api_key("X-Api-Key", None),
    ];
    let source = QuoteSource::new(client(), providers)
        .with_timeouts(Duration::from_millis(300), Duration::from_secs(2));
    let started = Instant::now();
    let quote = source.next_quote().await;
    assert!(
        matches!(quote.origin, QuoteOrigin::BuiltIn(i) if i < 6),
        "{quote:?}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(1800),
        "{:?}",
        started.elapsed()
    );

    let everything_slow = QuoteSource::new(
        client(),
        (0..10).map(|i| provider(&base, "slow", i + 1)).collect(),
    )
    .with_timeouts(Duration::from_secs(1), Duration::from_millis(400));
    let started = Instant::now();
    let quote = everything_slow.next_quote().await;
    assert!(matches!(quote.origin, QuoteOrigin::BuiltIn(_)));
    assert!(
        started.elapsed() < Duration::from_millis(1200),
        "{:?}",
        started.elapsed()
    );

    let none = QuoteSource::new(client(), vec![]);
    assert!(matches!(
        none.next_quote().await.origin,
        QuoteOrigin::BuiltIn(_)
    ));
}

#[test]
fn provider_config_reads_from_settings() {
    let config: ProviderConfig = serde_json::from_value(json!({
        "name": "custom", "url": "http://127.0.0.1:9/q", "weight": 5,
        "quote_pointer": "/text", "author_pointer": "/by"
    }))
    .expect("deserialises");
    assert!(config.is_usable());
    assert_eq!(config.api_key_header, "X-Api-Key");
    assert!(!config.requires_api_key);
}
