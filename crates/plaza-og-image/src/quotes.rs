//! Quotes for cards requested without one: external providers chosen by
//! weighted rotation (40/30/20/10 by default), each fetched with a short
//! timeout, and six built-in quotes when every provider fails.
//!
//! The server holds one [`QuoteSource`] in its state, built from the
//! providers in its settings and its shared `reqwest::Client`.

use crate::text::{MAX_AUTHOR_CHARS, MAX_QUOTE_CHARS, clean};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Time one provider gets to answer.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);
/// Time all providers together get before a built-in quote is used.
pub const DEFAULT_TOTAL_TIMEOUT: Duration = Duration::from_secs(4);
/// Largest provider answer read, in bytes; a bigger one counts as a failure.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// The six built-in quotes (text, author), used when no provider answers.
pub const BUILTIN_QUOTES: [(&str, &str); 6] = [
    (
        "Alone we can do so little; together we can do so much.",
        "Helen Keller",
    ),
    (
        "Coming together is a beginning, staying together is progress, and working together is success.",
        "Henry Ford",
    ),
    (
        "Never doubt that a small group of thoughtful, committed citizens can change the world.",
        "Margaret Mead",
    ),
    (
        "The strength of the team is each individual member. The strength of each member is the team.",
        "Phil Jackson",
    ),
    (
        "If you want to go fast, go alone. If you want to go far, go together.",
        "African proverb",
    ),
    (
        "Great things are done by a series of small things brought together.",
        "Vincent van Gogh",
    ),
];

/// Where a quote came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuoteOrigin {
    /// The provider of this name answered.
    Provider(String),
    /// Every provider failed (or none is configured): built-in quote number
    /// `0..6`.
    BuiltIn(usize),
}

/// A quote ready for the card: cleaned and bounded like user text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quote {
    /// The quote.
    pub text: String,
    /// Who said it (may be empty when the provider gave no author).
    pub author: String,
    /// Where it came from, for logs and tests.
    pub origin: QuoteOrigin,
}

/// One external quote provider, as configured (deserialisable so it can sit
/// in the server's settings file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderConfig {
    /// Name for logs and [`QuoteOrigin::Provider`].
    pub name: String,
    /// URL answered with JSON (GET).
    pub url: String,
    /// Relative weight in the rotation; 0 disables the provider.
    pub weight: u32,
    /// JSON pointer (RFC 6901) to the quote text, e.g. `/0/q`.
    pub quote_pointer: String,
    /// JSON pointer to the author, e.g. `/0/a`.
    pub author_pointer: String,
    /// The provider is skipped unless `api_key` is set.
    #[serde(default)]
    pub requires_api_key: bool,
    /// API key sent in `api_key_header`.
    #[serde(default)]
    pub api_key: Option<String>,
    /// Header carrying the API key.
    #[serde(default = "default_key_header")]
    pub api_key_header: String,
}

fn default_key_header() -> String {
    "X-Api-Key".to_string()
}

impl ProviderConfig {
    /// A provider needing no key.
    pub fn new(
        name: impl Into<String>,
        url: impl Into<String>,
        weight: u32,
        quote_pointer: impl Into<String>,
        author_pointer: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            url: url.into(),
            weight,
            quote_pointer: quote_pointer.into(),
            author_pointer: author_pointer.into(),
            requires_api_key: false,
            api_key: None,
            api_key_header: default_key_header(),
        }
    }

    /// Marks the provider as needing a key, sent in `header`; with `None` (or
    /// an empty key) the provider is skipped.
    pub fn with_api_key(mut self, header: impl Into<String>, key: Option<String>) -> Self {
        self.requires_api_key = true;
        self.api_key_header = header.into();
        self.api_key = key;
        self
    }

    /// Whether the provider takes part in the rotation.
    pub fn is_usable(&self) -> bool {
        self.weight > 0
            && (!self.requires_api_key || self.api_key.as_deref().is_some_and(|k| !k.is_empty()))
    }
}

/// The default rotation: Quotable 40, ZenQuotes 30, DummyJSON 20 and API
/// Ninjas 10 (which needs `api_ninjas_key` and is skipped without it).
pub fn default_providers(api_ninjas_key: Option<String>) -> Vec<ProviderConfig> {
    vec![
        ProviderConfig::new(
            "quotable",
            "https://api.quotable.io/random",
            40,
            "/content",
            "/author",
        ),
        ProviderConfig::new(
            "zenquotes",
            "https://zenquotes.io/api/random",
            30,
            "/0/q",
            "/0/a",
        ),
        ProviderConfig::new(
            "dummyjson",
            "https://dummyjson.com/quotes/random",
            20,
            "/quote",
            "/author",
        ),
        ProviderConfig::new(
            "api-ninjas",
            "https://api.api-ninjas.com/v1/quotes",
            10,
            "/0/quote",
            "/0/author",
        )
        .with_api_key("X-Api-Key", api_ninjas_key),
    ]
}

/// The usable providers (by index into `providers`) in the order they are
/// tried: weighted sampling without replacement, so the first is provider
/// `i` with probability `weight_i / total`, and on failure the next is drawn
/// from the rest by the same rule.
pub fn weighted_order<R: Rng + ?Sized>(providers: &[ProviderConfig], rng: &mut R) -> Vec<usize> {
    let mut left: Vec<(usize, u64)> = providers
        .iter()
        .enumerate()
        .filter(|(_, p)| p.is_usable())
        .map(|(i, p)| (i, u64::from(p.weight)))
        .collect();
    let mut order = Vec::with_capacity(left.len());
    while !left.is_empty() {
        let total: u64 = left.iter().map(|(_, w)| w).sum();
        let mut ticket = rng.random_range(0..total.max(1));
        let mut chosen = left.len() - 1;
        for (position, (_, weight)) in left.iter().enumerate() {
            if ticket < *weight {
                chosen = position;
                break;
            }
            ticket -= weight;
        }
        order.push(left.remove(chosen).0);
    }
    order
}

/// Built-in quote number `index` (modulo 6).
pub fn builtin_quote(index: usize) -> Quote {
    let index = index % BUILTIN_QUOTES.len();
    let (text, author) = BUILTIN_QUOTES[index];
    Quote {
        text: text.to_string(),
        author: author.to_string(),
        origin: QuoteOrigin::BuiltIn(index),
    }
}

/// Why one provider gave no quote.
#[derive(Debug, thiserror::Error)]
pub enum QuoteError {
    /// Connection, timeout or protocol failure.
    #[error("request failed: {0}")]
    Http(#[from] reqwest::Error),
    /// A status other than 2xx.
    #[error("status {0}")]
    Status(u16),
    /// The answer is larger than [`MAX_BODY_BYTES`].
    #[error("answer larger than {MAX_BODY_BYTES} bytes")]
    TooLarge,
    /// The answer is not JSON.
    #[error("answer is not JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The JSON has no non-empty string at the quote pointer.
    #[error("no quote at the configured pointer")]
    Missing,
}

/// Picks quotes from the configured providers (see [`weighted_order`]) and
/// falls back to [`BUILTIN_QUOTES`].
#[derive(Debug, Clone)]
pub struct QuoteSource {
    client: reqwest::Client,
    providers: Vec<ProviderConfig>,
    timeout: Duration,
    total_timeout: Duration,
}

impl QuoteSource {
    /// A source over `providers`, using the caller's `client` (its own
    /// settings, e.g. proxy, apply) with [`DEFAULT_TIMEOUT`] per provider and
    /// [`DEFAULT_TOTAL_TIMEOUT`] in all.
    pub fn new(client: reqwest::Client, providers: Vec<ProviderConfig>) -> Self {
        Self {
            client,
            providers,
            timeout: DEFAULT_TIMEOUT,
            total_timeout: DEFAULT_TOTAL_TIMEOUT,
        }
    }

    /// Changes the time one provider gets and the time all get together.
    pub fn with_timeouts(mut self, per_provider: Duration, total: Duration) -> Self {
        self.timeout = per_provider;
        self.total_timeout = total;
        self
    }

    /// The configured providers.
    pub fn providers(&self) -> &[ProviderConfig] {
        &self.providers
    }

    /// A quote: from the providers in weighted order, else a built-in one.
    /// Never fails; takes at most the total timeout.
    pub async fn next_quote(&self) -> Quote {
        // The thread RNG is not `Send`: draw everything before awaiting.
        let (order, builtin) = {
            let mut rng = rand::rng();
            let order = weighted_order(&self.providers, &mut rng);
            (order, rng.random_range(0..BUILTIN_QUOTES.len()))
        };
        self.first_answer(&order, builtin).await
    }

    /// [`Self::next_quote`] with the caller's RNG (for reproducible tests).
    pub async fn next_quote_with<R: Rng + ?Sized>(&self, rng: &mut R) -> Quote {
        let order = weighted_order(&self.providers, rng);
        let builtin = rng.random_range(0..BUILTIN_QUOTES.len());
        self.first_answer(&order, builtin).await
    }

    async fn first_answer(&self, order: &[usize], builtin: usize) -> Quote {
        let attempts = async {
            for index in order {
                if let Some(provider) = self.providers.get(*index)
                    && let Ok(quote) = self.fetch(provider).await
                {
                    return Some(quote);
                }
            }
            None
        };
        match tokio::time::timeout(self.total_timeout, attempts).await {
            Ok(Some(quote)) => quote,
            _ => builtin_quote(builtin),
        }
    }

    /// Asks one provider, with the per-provider timeout, reading at most
    /// [`MAX_BODY_BYTES`]; the quote and author are cleaned and bounded.
    pub async fn fetch(&self, provider: &ProviderConfig) -> Result<Quote, QuoteError> {
        let mut request = self
            .client
            .get(&provider.url)
            .timeout(self.timeout)
            .header(reqwest::header::ACCEPT, "application/json");
        if let Some(key) = provider.api_key.as_deref().filter(|k| !k.is_empty()) {
            request = request.header(provider.api_key_header.as_str(), key);
        }
        let mut response = request.send().await?;
        if !response.status().is_success() {
            return Err(QuoteError::Status(response.status().as_u16()));
        }
        if response
            .content_length()
            .is_some_and(|length| length > MAX_BODY_BYTES as u64)
        {
            return Err(QuoteError::TooLarge);
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            if body.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(QuoteError::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        let value: serde_json::Value = serde_json::from_slice(&body)?;
        let text = value
            .pointer(&provider.quote_pointer)
            .and_then(serde_json::Value::as_str)
            .map(|t| clean(t, MAX_QUOTE_CHARS))
            .filter(|t| !t.is_empty())
            .ok_or(QuoteError::Missing)?;
        let author = value
            .pointer(&provider.author_pointer)
            .and_then(serde_json::Value::as_str)
            .map(|a| clean(a, MAX_AUTHOR_CHARS))
            .unwrap_or_default();
        Ok(Quote {
            text,
            author,
            origin: QuoteOrigin::Provider(provider.name.clone()),
        })
    }
}
