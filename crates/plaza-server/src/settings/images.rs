//! Settings of one section: generated images (avatars and share images).

use serde::{Deserialize, Serialize};

/// Generated images: share images' quotes and fallback, and the memory
/// rendered images are kept in.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImageSettings {
    /// Quote providers for share images; unset uses the built-in rotation
    /// (Quotable 40, ZenQuotes 30, DummyJSON 20, API Ninjas 10).
    pub og_quote_providers: Option<Vec<plaza_og_image::quotes::ProviderConfig>>,
    /// API key of the fourth default quote provider (API Ninjas); without it
    /// that provider is skipped.
    pub og_quotes_api_key: Option<String>,
    /// The tagline of the fallback share image.
    pub tagline: String,
    /// Memory for rendered avatars and share images kept by their
    /// parameters (bodies and bookkeeping); the least used go first when it
    /// is full. `0` keeps none: every request renders.
    pub image_cache_bytes: u64,
}

impl Default for ImageSettings {
    fn default() -> Self {
        ImageSettings {
            og_quote_providers: None,
            og_quotes_api_key: None,
            tagline: "A community platform".to_owned(),
            image_cache_bytes: 32 * 1024 * 1024,
        }
    }
}
