//! The baseline for `bench/http.sh`: axum with no middleware, answering
//! `GET /api/version` with the same body Plaza sends, so the benchmark's ratio
//! measures what Plaza's middleware stack costs.

use axum::{Router, http::header, response::IntoResponse, routing::get};

async fn version() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        concat!("{\"version\":\"", env!("CARGO_PKG_VERSION"), "\"}"),
    )
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let bind = std::env::var("BARE_BIND").unwrap_or_else(|_| "127.0.0.1:3999".to_owned());
    let listener = tokio::net::TcpListener::bind(&bind).await?;
    let app = Router::new().route("/api/version", get(version));
    axum::serve(listener, app).await
}
