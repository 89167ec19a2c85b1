//! Analytics collection on the server side: what the server adds to a
//! client's events (the user, a keyed hash of the client address, the
//! device type, country and VPN flag; DECISIONS.md), and the writer that
//! stores them in batches ([`ingest`]).

pub mod ingest;
pub mod trends;

use std::net::IpAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use axum::http::{HeaderMap, HeaderName, header};
use hashlink::LruCache;
use hmac::{Hmac, Mac};
use plaza_domain::analytics::{EventRules, NewEvent, ValidEvent};
use sha2::Sha256;

use crate::settings::AnalyticsSettings;
use ingest::Ingest;

/// How far ahead of the server's clock an event's timestamp may be: clients'
/// clocks drift, a day ahead is a broken clock.
const MAX_CLOCK_SKEW_MILLIS: i64 = 5 * 60 * 1000;

/// Everything collection needs, built once at start-up.
pub struct Analytics {
    pub rules: EventRules,
    /// Shared with the writer, which runs on a thread of its own.
    pub ingest: Arc<Ingest>,
    enrichment: Enrichment,
}

impl Analytics {
    /// Fails when the salt file cannot be read or written.
    pub fn new(settings: &AnalyticsSettings, data_dir: &Path) -> Result<Self, String> {
        let salt = match &settings.analytics_salt {
            Some(salt) => salt.clone(),
            None => crate::secrets::load_or_create_secret(&data_dir.join("analytics-salt"))?,
        };
        let header = |name: &Option<String>| {
            name.as_deref()
                .and_then(|name| HeaderName::try_from(name).ok())
        };
        Ok(Analytics {
            rules: EventRules {
                extra_event_types: settings.analytics_extra_event_types.clone(),
                max_data_bytes: settings.analytics_max_event_data_bytes,
                retention_millis: retention_millis(settings),
                max_clock_skew_millis: MAX_CLOCK_SKEW_MILLIS,
            },
            ingest: Arc::new(Ingest::new(settings.analytics_queue_max_events)),
            enrichment: Enrichment {
                salt: salt.into_bytes(),
                parser: woothee::parser::Parser::new(),
                recent_devices: Mutex::new(LruCache::new(RECENT_USER_AGENTS)),
                country_header: header(&settings.analytics_country_header),
                vpn_header: header(&settings.analytics_vpn_header),
            },
        })
    }

    /// What the server adds to every event of one request.
    pub fn origin(&self, request: &RequestFacts<'_>) -> Origin {
        self.enrichment.origin(request)
    }
}

/// How long events are kept, in milliseconds.
pub fn retention_millis(settings: &AnalyticsSettings) -> i64 {
    i64::try_from(settings.analytics_retention_days)
        .unwrap_or(i64::MAX)
        .saturating_mul(86_400_000)
}

/// What a request tells about its sender, as the extractor read it.
pub struct RequestFacts<'a> {
    pub user_id: i64,
    /// The client address (after trusted proxies), if on a socket.
    pub address: Option<IpAddr>,
    /// Whether the direct peer is a trusted proxy, whose country and VPN
    /// headers are believed.
    pub peer_is_trusted_proxy: bool,
    pub headers: &'a HeaderMap,
}

/// The server's part of an event: the same for every event of a request.
#[derive(Debug, Clone)]
pub struct Origin {
    pub user_id: i64,
    pub client_hash: String,
    pub device_type: &'static str,
    pub country: Option<String>,
    pub is_vpn: bool,
}

impl Origin {
    /// `event` with the server's part, ready to store.
    pub fn event(&self, event: ValidEvent, event_id: String, received_at: i64) -> NewEvent {
        NewEvent {
            event_id,
            user_id: self.user_id,
            event_type: event.event_type,
            event_data: event.event_data,
            path: event.path,
            session_key: event.session_key,
            duration_ms: event.duration_ms,
            click_x: event.click_x,
            click_y: event.click_y,
            client_hash: self.client_hash.clone(),
            device_type: self.device_type,
            country: self.country.clone(),
            is_vpn: self.is_vpn,
            occurred_at: event.occurred_at,
            received_at,
        }
    }
}

/// User-Agents whose device type is remembered: a site's clients send few
/// distinct ones, and parsing one was 5% of a single event's CPU.
const RECENT_USER_AGENTS: usize = 1024;

/// The longest User-Agent remembered; longer ones are parsed every time,
/// so the cache holds at most about 0.5 MB.
const MAX_REMEMBERED_USER_AGENT: usize = 512;

struct Enrichment {
    /// The HMAC key: without it, a stored hash cannot be matched to an
    /// address by hashing all 2^32 IPv4 addresses.
    salt: Vec<u8>,
    parser: woothee::parser::Parser,
    /// Device types by User-Agent, the least recently seen dropped first.
    recent_devices: Mutex<LruCache<String, &'static str>>,
    country_header: Option<HeaderName>,
    vpn_header: Option<HeaderName>,
}

impl Enrichment {
    fn origin(&self, request: &RequestFacts<'_>) -> Origin {
        let trusted_header = |name: &Option<HeaderName>| {
            name.as_ref()
                .filter(|_| request.peer_is_trusted_proxy)
                .and_then(|name| request.headers.get(name))
                .and_then(|value| value.to_str().ok())
                .map(str::trim)
        };
        let user_agent = request
            .headers
            .get(header::USER_AGENT)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("");
        Origin {
            user_id: request.user_id,
            client_hash: self.client_hash(request.address),
            device_type: self.device_type(user_agent),
            country: trusted_header(&self.country_header)
                .filter(|code| code.len() == 2 && code.bytes().all(|b| b.is_ascii_alphanumeric()))
                .map(str::to_ascii_uppercase),
            is_vpn: trusted_header(&self.vpn_header).is_some_and(|flag| {
                ["1", "true", "yes"]
                    .iter()
                    .any(|yes| flag.eq_ignore_ascii_case(yes))
            }),
        }
    }

    /// [`device_type`] of `user_agent`, remembered for the next request.
    fn device_type(&self, user_agent: &str) -> &'static str {
        if user_agent.len() > MAX_REMEMBERED_USER_AGENT {
            return device_type(&self.parser, user_agent);
        }
        let remembered = self
            .recent_devices
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(user_agent)
            .copied();
        if let Some(device) = remembered {
            return device;
        }
        let device = device_type(&self.parser, user_agent);
        self.recent_devices
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(user_agent.to_owned(), device);
        device
    }

    /// HMAC-SHA256 of the address under the salt, as 32 hex digits; the
    /// address itself is never stored.
    fn client_hash(&self, address: Option<IpAddr>) -> String {
        let Some(address) = address else {
            return String::new();
        };
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.salt).expect("HMAC takes a key of any length");
        mac.update(address.to_string().as_bytes());
        mac.finalize().into_bytes()[..16]
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }
}

/// `desktop`, `mobile`, `tablet` or `other` (bots, appliances, unknown).
/// Woothee files tablets under smartphones; iPads and Android devices whose
/// browser does not say `Mobile` (Android's own rule for tablets) are told
/// apart here.
pub fn device_type(parser: &woothee::parser::Parser, user_agent: &str) -> &'static str {
    let Some(parsed) = parser.parse(user_agent) else {
        return "other";
    };
    match parsed.category {
        "pc" => "desktop",
        "smartphone" | "mobilephone" => {
            let android_tablet = parsed.os == "Android" && !user_agent.contains("Mobile");
            if parsed.os == "iPad" || user_agent.contains("iPad") || android_tablet {
                "tablet"
            } else {
                "mobile"
            }
        }
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three agents through a cache of two, so every one is also evicted
    /// and parsed again; and one too long to be remembered.
    #[test]
    fn remembered_user_agents_keep_their_own_device_types() {
        let enrichment = Enrichment {
            recent_devices: Mutex::new(LruCache::new(2)),
            ..enrichment("salt")
        };
        let long = format!(
            "Mozilla/5.0 (iPad; CPU OS 16_0 like Mac OS X) {}",
            "x".repeat(600)
        );
        let agents = [
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
            "Mozilla/5.0 (iPad; CPU OS 16_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.0 Mobile/15E148 Safari/604.1",
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
            long.as_str(),
        ];
        let expected = ["desktop", "tablet", "mobile", "tablet"];
        for _ in 0..3 {
            for (agent, device) in agents.iter().zip(expected) {
                assert_eq!(enrichment.device_type(agent), device, "{agent}");
                assert_eq!(enrichment.device_type(agent), device, "{agent}, remembered");
            }
        }
        assert!(enrichment.recent_devices.lock().unwrap().len() <= 2);
    }

    #[test]
    fn devices_are_told_apart_by_their_user_agents() {
        let parser = woothee::parser::Parser::new();
        let cases = [
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
                "desktop",
            ),
            (
                "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
                "mobile",
            ),
            (
                "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36",
                "mobile",
            ),
            (
                "Mozilla/5.0 (iPad; CPU OS 16_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.0 Mobile/15E148 Safari/604.1",
                "tablet",
            ),
            (
                "Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
                "tablet",
            ),
            (
                "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
                "other",
            ),
            ("", "other"),
        ];
        for (user_agent, expected) in cases {
            assert_eq!(device_type(&parser, user_agent), expected, "{user_agent}");
        }
    }

    fn enrichment(salt: &str) -> Enrichment {
        Enrichment {
            salt: salt.as_bytes().to_vec(),
            parser: woothee::parser::Parser::new(),
            recent_devices: Mutex::new(LruCache::new(RECENT_USER_AGENTS)),
            country_header: Some(HeaderName::from_static("cf-ipcountry")),
            vpn_header: Some(HeaderName::from_static("x-vpn")),
        }
    }

    #[test]
    fn the_address_is_kept_only_as_a_keyed_hash() {
        let address: IpAddr = "203.0.113.9".parse().unwrap();
        let hash = enrichment("salt-one").client_hash(Some(address));
        assert_eq!(hash.len(), 32);
        assert!(!hash.contains("203"));
        assert_eq!(hash, enrichment("salt-one").client_hash(Some(address)));
        assert_ne!(hash, enrichment("salt-two").client_hash(Some(address)));
    }

    #[test]
    fn country_and_vpn_headers_count_only_from_a_trusted_proxy() {
        let mut headers = HeaderMap::new();
        headers.insert("cf-ipcountry", "de".parse().unwrap());
        headers.insert("x-vpn", "true".parse().unwrap());
        let facts = |trusted| RequestFacts {
            user_id: 1,
            address: None,
            peer_is_trusted_proxy: trusted,
            headers: &headers,
        };
        let proxied = enrichment("s").origin(&facts(true));
        assert_eq!(
            (proxied.country.as_deref(), proxied.is_vpn),
            (Some("DE"), true)
        );
        let direct = enrichment("s").origin(&facts(false));
        assert_eq!((direct.country, direct.is_vpn), (None, false));
    }
}
