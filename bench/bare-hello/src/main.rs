//! The baseline for `bench/http.sh`: axum with no middleware, answering
//! `GET /api/version` with the same body and endpoint headers Plaza sends, so
//! the benchmark's ratio measures what Plaza's middleware stack costs. It also serves `/page`, an
//! article-shaped HTML page, as the target of the link-preview benchmark.

use axum::{
    Router,
    http::header,
    response::{Html, IntoResponse},
    routing::get,
};

const ARTICLE: &str = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<title>City council approves new bike lanes</title>\
<meta name=\"description\" content=\"The plan adds 40 km of protected lanes by 2027.\">\
<meta property=\"og:title\" content=\"Council approves 40 km of bike lanes\">\
<meta property=\"og:description\" content=\"A vote of 9 to 2 funds protected lanes across the city.\">\
<meta property=\"og:image\" content=\"/images/lanes.jpg\">\
<meta name=\"twitter:card\" content=\"summary_large_image\">\
<link rel=\"stylesheet\" href=\"/style.css\"><script src=\"/app.js\"></script></head>\
<body><article><h1>City council approves new bike lanes</h1><p>Lorem ipsum dolor sit amet.</p></article></body></html>";

/// The same body and the same endpoint headers as Plaza's handler (no
/// caching, any origin), so only the middleware differs.
async fn version() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-cache, no-store, must-revalidate"),
            (header::PRAGMA, "no-cache"),
            (header::EXPIRES, "0"),
            (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"),
        ],
        concat!("{\"version\":\"", env!("CARGO_PKG_VERSION"), "\"}"),
    )
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let bind = std::env::var("BARE_BIND").unwrap_or_else(|_| "127.0.0.1:3999".to_owned());
    let listener = tokio::net::TcpListener::bind(&bind).await?;
    let app = Router::new()
        .route("/api/version", get(version))
        .route("/page", get(|| async { Html(ARTICLE) }));
    axum::serve(listener, app).await
}
