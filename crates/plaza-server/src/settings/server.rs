//! Settings of one section: the HTTP server: where it listens, its public
//! address and how it bounds connections and requests.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};
use url::Url;

use super::error::{SettingsError, at_least_one};

/// The HTTP server: where it listens, its public address and how it bounds
/// connections and requests.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerSettings {
    /// Listen address; port 0 picks a free port and logs it.
    pub bind: SocketAddr,
    /// The public address of the service, used for absolute URLs and cookies.
    pub base_url: Url,
    /// The application name, shown on pages and in outbound user agents.
    pub app_name: String,
    /// Requests that take longer are answered with 408.
    pub request_timeout_secs: u64,
    /// Largest request body accepted outside the upload routes.
    pub body_limit_bytes: usize,
    /// A request's headers must arrive within this many seconds (counted
    /// from the connection's start, and on a kept-alive connection from the
    /// end of the previous answer), or the connection is closed: half-sent
    /// requests cannot hold connections open (slowloris).
    pub header_read_timeout_secs: u64,
    /// A connection without a byte read or written for this many seconds
    /// is closed (gracefully: a request in flight still gets its answer;
    /// a second such period without progress closes it outright).
    pub idle_timeout_secs: u64,
    /// Open client connections at most; more are answered 503 and closed.
    /// Lowered at start-up to what the open-file limit allows.
    pub max_connections: usize,
    /// Origins other than the base URL's that browsers may call the API from.
    pub cors_allowed_origins: Vec<String>,
    /// How long shutdown waits for in-flight requests and background work.
    pub shutdown_grace_secs: u64,
}

impl Default for ServerSettings {
    fn default() -> Self {
        ServerSettings {
            bind: SocketAddr::from(([127, 0, 0, 1], 3000)),
            base_url: Url::parse("http://localhost:3000").expect("the default base URL is valid"),
            app_name: "Plaza".to_owned(),
            request_timeout_secs: 30,
            body_limit_bytes: 1024 * 1024,
            header_read_timeout_secs: 30,
            idle_timeout_secs: 75,
            max_connections: 10_000,
            cors_allowed_origins: Vec::new(),
            shutdown_grace_secs: 20,
        }
    }
}

impl ServerSettings {
    /// A user's image, or their generated avatar (seeded by the user id,
    /// so it survives a change of username).
    pub fn avatar_url(&self, user_id: i64, image: Option<&str>) -> String {
        match image {
            Some(image) => image.to_owned(),
            None => format!(
                "{}/api/avatar-image?seed={user_id}",
                self.base_url.as_str().trim_end_matches('/'),
            ),
        }
    }

    pub(super) fn validate(&self) -> Result<(), SettingsError> {
        if !matches!(self.base_url.scheme(), "http" | "https") || self.base_url.host().is_none() {
            return Err(SettingsError::new(
                "base_url",
                format!("{} is not an absolute http(s) URL", self.base_url),
            ));
        }
        at_least_one([
            ("request_timeout_secs", self.request_timeout_secs),
            ("header_read_timeout_secs", self.header_read_timeout_secs),
            ("idle_timeout_secs", self.idle_timeout_secs),
        ])?;
        at_least_one([("max_connections", self.max_connections)])?;
        if self.body_limit_bytes < 1024 {
            return Err(SettingsError::new(
                "body_limit_bytes",
                "must be at least 1024",
            ));
        }
        for origin in &self.cors_allowed_origins {
            if origin.parse::<axum::http::HeaderValue>().is_err() || Url::parse(origin).is_err() {
                return Err(SettingsError::new(
                    "cors_allowed_origins",
                    format!("{origin:?} is not an origin such as https://example.com"),
                ));
            }
        }
        Ok(())
    }

    /// Whether cookies must carry `Secure`.
    pub fn is_https(&self) -> bool {
        self.base_url.scheme() == "https"
    }

    /// The origin of the base URL, as browsers send it in `Origin`.
    pub fn base_origin(&self) -> String {
        self.base_url.origin().ascii_serialization()
    }
}
