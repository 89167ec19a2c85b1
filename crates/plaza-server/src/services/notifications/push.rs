//! Web Push delivery (RFC 8030, 8291, 8292): each push in the outbox is
//! claimed by one sender (`plaza_domain::notifications`, the mail
//! pattern), encrypted to its subscription's keys as `aes128gcm` (the
//! item as JSON), signed with the VAPID key and POSTed to the endpoint.
//! A 404 or 410 deletes the subscription; 429, 5xx and network failures
//! are retried with a doubling wait (a `Retry-After` given is honoured)
//! until the push is an hour old; anything else drops the push.
//!
//! An endpoint must be `https` on a public address unless
//! `push_allow_insecure`: checked when a member subscribes, and again at
//! each delivery, where the client's resolver hands the connector only
//! public addresses (so a name that moved to a private address since is
//! refused, and a connection goes to the address checked).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use plaza_domain::Database;
use plaza_domain::notifications::{ClaimedPush, PushClaim, PushOutcome};
use plaza_domain::time::now_millis;
use plaza_link_preview::{AddressClass, classify};
use reqwest::StatusCode;
use url::{Host, Url};

use super::item::NotificationItem;
use super::vapid::VapidKey;
use crate::settings::ServerSettings;

/// How often every instance looks for due pushes.
pub const SENDER_PERIOD: Duration = Duration::from_secs(1);

/// Pushes one run of the sender attempts at most, 16 at a time.
const PUSHES_PER_ROUND: i64 = 16;
const ROUNDS_PER_RUN: usize = 4;

/// The longest one attempt may take; its claim lasts a minute longer.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(15);

/// The wait after a first failed attempt; it doubles after each further
/// one, up to [`MAX_RETRY_WAIT`].
const FIRST_RETRY_WAIT: Duration = Duration::from_secs(2);
const MAX_RETRY_WAIT: Duration = Duration::from_secs(600);

/// How long a push service may keep a push for an offline browser.
const PUSH_TTL_SECS: u64 = 86_400;

/// The longest endpoint accepted.
pub const MAX_ENDPOINT_CHARS: usize = 2048;

/// The client's resolver: only addresses a push may go to reach the
/// connector.
struct PublicOnly;

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found = tokio::net::lookup_host((host.as_str(), 0)).await?;
            let public: Vec<SocketAddr> = found
                .filter(|address| classify(address.ip()) == AddressClass::Public)
                .collect();
            if public.is_empty() {
                return Err(format!("{host} resolves to no public address").into());
            }
            let addrs: reqwest::dns::Addrs = Box::new(public.into_iter());
            Ok(addrs)
        })
    }
}

/// This instance's push sender.
pub struct PushSender {
    vapid: Arc<VapidKey>,
    /// The VAPID `sub` claim.
    subject: String,
    allow_insecure: bool,
    client: reqwest::Client,
    wake: tokio::sync::Notify,
}

/// The HTTP client of pushes: no redirects, no proxy, bounded; with
/// `allow_insecure` off, public addresses only.
fn client(app_name: &str, allow_insecure: bool) -> Result<reqwest::Client, String> {
    // reqwest is built without a default crypto provider; installing ring
    // is idempotent (an already installed provider is kept).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = reqwest::Client::builder()
        .user_agent(format!("{app_name} web push"))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(Duration::from_secs(5))
        .timeout(ATTEMPT_TIMEOUT)
        .pool_idle_timeout(Duration::from_secs(30));
    if !allow_insecure {
        builder = builder.dns_resolver(Arc::new(PublicOnly));
    }
    builder
        .build()
        .map_err(|error| format!("cannot build the push client: {error}"))
}

/// Whether `ip` may take pushes.
fn permitted(ip: IpAddr, allow_insecure: bool) -> bool {
    match classify(ip) {
        AddressClass::Public => true,
        AddressClass::NonPublic => allow_insecure,
        AddressClass::Never => false,
    }
}

/// What can be checked of an endpoint without the network: an absolute
/// `https` URL (or `http` with `allow_insecure`) with a host, and an
/// address written in it a permitted one.
pub(super) fn check_endpoint_form(endpoint: &str, allow_insecure: bool) -> Result<Url, String> {
    if endpoint.chars().count() > MAX_ENDPOINT_CHARS {
        return Err(format!("must be at most {MAX_ENDPOINT_CHARS} characters"));
    }
    let url = Url::parse(endpoint).map_err(|_| "must be an absolute URL".to_owned())?;
    match url.scheme() {
        "https" => {}
        "http" if allow_insecure => {}
        _ => return Err("must be an https URL".to_owned()),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("must not carry a user name or password".to_owned());
    }
    let literal = match url.host() {
        None => return Err("must name a host".to_owned()),
        Some(Host::Domain(_)) => None,
        Some(Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
    };
    if let Some(ip) = literal
        && !permitted(ip, allow_insecure)
    {
        return Err("must be on a public address".to_owned());
    }
    Ok(url)
}

impl PushSender {
    /// Fails when the client cannot be built.
    pub(super) fn new(
        vapid: Arc<VapidKey>,
        subject: String,
        allow_insecure: bool,
        app_name: &str,
    ) -> Result<Self, String> {
        Ok(PushSender {
            client: client(app_name, allow_insecure)?,
            vapid,
            subject,
            allow_insecure,
            wake: tokio::sync::Notify::new(),
        })
    }

    /// What wakes the sender besides its period: a run that left work
    /// behind.
    pub fn wake(&self) -> &tokio::sync::Notify {
        &self.wake
    }

    /// Checks a subscription's endpoint: its form, and unless
    /// `push_allow_insecure`, that its host resolves to a public address
    /// (a name resolving to a private one is refused).
    pub async fn check_endpoint(&self, endpoint: &str) -> Result<Url, String> {
        let url = check_endpoint_form(endpoint, self.allow_insecure)?;
        if self.allow_insecure {
            return Ok(url);
        }
        if let Some(Host::Domain(name)) = url.host() {
            let port = url.port_or_known_default().unwrap_or(443);
            let lookup = tokio::time::timeout(
                Duration::from_secs(3),
                tokio::net::lookup_host((name, port)),
            )
            .await;
            let addresses: Vec<SocketAddr> = match lookup {
                Ok(Ok(found)) => found.collect(),
                _ => return Err("must name a host that resolves".to_owned()),
            };
            if !addresses
                .iter()
                .any(|address| permitted(address.ip(), false))
            {
                return Err("must be on a public address".to_owned());
            }
        }
        Ok(url)
    }

    /// One run of the push sender: claims due pushes for `owner` (this
    /// instance), 16 at a time, attempts them and records each outcome.
    /// Answers what it did.
    pub async fn send_due_pushes(
        &self,
        db: &Database,
        server: &ServerSettings,
        owner: &str,
    ) -> Result<String, String> {
        let (mut delivered, mut retried, mut dropped) = (0usize, 0usize, 0usize);
        for _ in 0..ROUNDS_PER_RUN {
            let now = now_millis();
            let due = db
                .due_pushes(now, PUSHES_PER_ROUND)
                .await
                .map_err(|error| error.to_string())?;
            let full = due.len() as i64 == PUSHES_PER_ROUND;
            let claim = PushClaim {
                owner,
                now,
                lease_until: now + millis(ATTEMPT_TIMEOUT + Duration::from_secs(60)),
            };
            let mut claimed = Vec::with_capacity(due.len());
            for id in due {
                if let Some(push) = db
                    .claim_push(id, claim)
                    .await
                    .map_err(|error| error.to_string())?
                {
                    claimed.push(push);
                }
            }
            let outcomes = futures_util::future::join_all(
                claimed.iter().map(|push| self.attempt(db, server, push)),
            )
            .await;
            for (push, outcome) in claimed.iter().zip(outcomes) {
                match &outcome {
                    PushOutcome::Delivered => delivered += 1,
                    PushOutcome::Retry { .. } => retried += 1,
                    PushOutcome::Gone | PushOutcome::Dropped => dropped += 1,
                }
                let kind = match &outcome {
                    PushOutcome::Delivered => "delivered",
                    PushOutcome::Gone => "gone",
                    PushOutcome::Retry { .. } => "retried",
                    PushOutcome::Dropped => "dropped",
                };
                metrics::counter!("plaza_push_attempts_total", "outcome" => kind).increment(1);
                let recorded = db
                    .finish_push_attempt(push, owner, &outcome)
                    .await
                    .map_err(|error| error.to_string())?;
                if !recorded {
                    tracing::debug!(
                        push = push.id,
                        "a push attempt's outcome was not recorded: the push was claimed or queued again meanwhile"
                    );
                }
            }
            if !full {
                return Ok(summary(delivered, retried, dropped));
            }
        }
        // More may be due: the next run starts at once.
        self.wake.notify_one();
        Ok(summary(delivered, retried, dropped))
    }
}

fn summary(delivered: usize, retried: usize, dropped: usize) -> String {
    if delivered + retried + dropped == 0 {
        String::new()
    } else {
        format!("{delivered} pushes delivered, {retried} to retry, {dropped} dropped")
    }
}

impl PushSender {
    /// One attempt at `push`, and what to record of it.
    async fn attempt(
        &self,
        db: &Database,
        server: &ServerSettings,
        push: &ClaimedPush,
    ) -> PushOutcome {
        let notification = match db.notification_by_id(push.notification_id).await {
            Ok(notification) => notification,
            Err(plaza_domain::DomainError::NotFound(_)) => return PushOutcome::Dropped,
            Err(error) => return self.retry_or_drop(push, error.to_string(), None),
        };
        let url = match check_endpoint_form(&push.endpoint, self.allow_insecure) {
            Ok(url) => url,
            Err(problem) => {
                tracing::warn!(push = push.id, endpoint = %push.endpoint, %problem, "push dropped: its endpoint is refused");
                return PushOutcome::Dropped;
            }
        };
        let payload = match serde_json::to_vec(&NotificationItem::new(&notification, server)) {
            Ok(payload) => payload,
            Err(error) => return self.retry_or_drop(push, error.to_string(), None),
        };
        let body = match encrypt(payload, &push.p256dh, &push.auth) {
            Ok(body) => body,
            Err(problem) => {
                tracing::warn!(push = push.id, %problem, "push dropped: the subscription's keys are unusable");
                return PushOutcome::Dropped;
            }
        };
        let origin = url.origin().ascii_serialization();
        let authorization = match self
            .vapid
            .authorization(&origin, &self.subject, now_millis())
        {
            Ok(authorization) => authorization,
            Err(error) => return self.retry_or_drop(push, error, None),
        };
        let sent = self
            .client
            .post(url)
            .header("TTL", PUSH_TTL_SECS.to_string())
            .header("Content-Encoding", "aes128gcm")
            .header("Content-Type", "application/octet-stream")
            .header("Urgency", "normal")
            // A group of reactions pushed again replaces its undelivered
            // earlier push (RFC 8030, 5.4).
            .header("Topic", format!("n{}", notification.id))
            .header("Authorization", authorization)
            .body(body)
            .send()
            .await;
        let answer = match sent {
            Ok(answer) => answer,
            Err(error) => return self.retry_or_drop(push, error_chain(&error), None),
        };
        let status = answer.status();
        match status {
            _ if status.is_success() => PushOutcome::Delivered,
            StatusCode::NOT_FOUND | StatusCode::GONE => PushOutcome::Gone,
            StatusCode::TOO_MANY_REQUESTS => {
                let asked = answer
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|value| value.to_str().ok())
                    .and_then(|value| value.trim().parse::<u64>().ok())
                    .map(Duration::from_secs);
                self.retry_or_drop(push, format!("the push service answered {status}"), asked)
            }
            _ if status.is_server_error() => {
                self.retry_or_drop(push, format!("the push service answered {status}"), None)
            }
            _ => {
                tracing::warn!(push = push.id, %status, "push dropped: the push service refused it");
                PushOutcome::Dropped
            }
        }
    }

    /// Another attempt after a doubling wait (or the push service's
    /// `Retry-After`), unless that falls past the push's lifetime.
    fn retry_or_drop(
        &self,
        push: &ClaimedPush,
        error: String,
        asked: Option<Duration>,
    ) -> PushOutcome {
        let doublings = u32::try_from(push.attempts.saturating_sub(1).min(20)).unwrap_or(20);
        let wait = FIRST_RETRY_WAIT
            .saturating_mul(2u32.saturating_pow(doublings))
            .min(MAX_RETRY_WAIT)
            .max(asked.unwrap_or_default().min(MAX_RETRY_WAIT));
        let retry_at = now_millis() + millis(wait);
        if retry_at > push.expires_at {
            tracing::warn!(push = push.id, attempts = push.attempts, %error, "push given up on after an hour of failures");
            return PushOutcome::Dropped;
        }
        tracing::debug!(push = push.id, attempt = push.attempts, %error, "push not delivered; it will be retried");
        PushOutcome::Retry { error, retry_at }
    }
}

/// `payload` encrypted (RFC 8291, `aes128gcm`) to the browser's key
/// `p256dh` and secret `auth` (base64url, as the browser gave them).
fn encrypt(payload: Vec<u8>, p256dh: &str, auth: &str) -> Result<Vec<u8>, String> {
    let (public, auth) =
        subscription_keys(p256dh, auth).map_err(|(field, problem)| format!("{field} {problem}"))?;
    web_push_native::encrypt(payload, &public, &auth).map_err(|error| error.to_string())
}

/// A subscription's keys read: the browser's P-256 public key and its
/// 16-byte authentication secret; a problem names its field.
pub fn subscription_keys(
    p256dh: &str,
    auth: &str,
) -> Result<(p256::PublicKey, web_push_native::Auth), (&'static str, String)> {
    use base64::Engine as _;
    let decode = |text: &str| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text.trim().trim_end_matches('='))
    };
    let point = decode(p256dh).map_err(|_| ("keys.p256dh", "must be base64url".to_owned()))?;
    let public = p256::PublicKey::from_sec1_bytes(&point).map_err(|_| {
        (
            "keys.p256dh",
            "must be a P-256 public key (65 bytes, uncompressed)".to_owned(),
        )
    })?;
    let secret = decode(auth).map_err(|_| ("keys.auth", "must be base64url".to_owned()))?;
    if secret.len() != 16 {
        return Err(("keys.auth", "must be 16 bytes in base64url".to_owned()));
    }
    Ok((public, web_push_native::Auth::clone_from_slice(&secret)))
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// An error with its sources, for the log and the push's row.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_https_on_public_addresses_unless_insecure_is_allowed() {
        for (endpoint, secure, insecure) in [
            ("https://push.example.com/send/abc", true, true),
            ("https://8.8.8.8/send", true, true),
            ("http://push.example.com/send", false, true),
            ("https://127.0.0.1:8443/send", false, true),
            ("https://10.0.0.7/send", false, true),
            ("https://[::1]/send", false, true),
            ("https://0.0.0.0/send", false, false),
            ("ftp://push.example.com/", false, false),
            ("https://user:pw@push.example.com/", false, false),
            ("not a url", false, false),
        ] {
            assert_eq!(
                check_endpoint_form(endpoint, false).is_ok(),
                secure,
                "{endpoint} without push_allow_insecure"
            );
            assert_eq!(
                check_endpoint_form(endpoint, true).is_ok(),
                insecure,
                "{endpoint} with push_allow_insecure"
            );
        }
        let long = format!(
            "https://push.example.com/{}",
            "a".repeat(MAX_ENDPOINT_CHARS)
        );
        assert!(check_endpoint_form(&long, true).is_err());
    }

    #[test]
    fn a_payload_encrypted_to_a_subscription_decrypts_with_its_private_key() {
        use base64::Engine as _;
        use p256::elliptic_curve::sec1::ToEncodedPoint;
        let browser = p256::SecretKey::random(&mut p256::elliptic_curve::rand_core::OsRng);
        let encode = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        let p256dh = encode(browser.public_key().to_encoded_point(false).as_bytes());
        let auth = encode(&[7u8; 16]);
        let body = encrypt(b"{\"id\":\"1\"}".to_vec(), &p256dh, &auth).unwrap();
        let (_, secret) = subscription_keys(&p256dh, &auth).unwrap();
        let opened = web_push_native::decrypt(body, &browser, &secret).unwrap();
        assert_eq!(opened, b"{\"id\":\"1\"}");
        assert!(subscription_keys(&p256dh, &encode(&[7u8; 15])).is_err());
        assert!(subscription_keys("AAAA", &auth).is_err());
    }
}
