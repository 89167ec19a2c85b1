//! Webhooks (DECISIONS.md "Tokens for members and bots, and webhooks
//! (round 5)"): their secrets, sealed with the webhook key ([`key`]);
//! their targets, held to the link preview's rules (an `http` or `https`
//! URL, no non-public address unless `webhooks_allow_private`, checked at
//! creation and again by the client's DNS hook at every delivery, no
//! redirects followed); and the sender that delivers the outbox
//! ([`deliver`]), signed ([`signature`]).

pub mod deliver;
pub mod key;
pub mod signature;

use std::path::Path;
use std::time::Duration;

use tokio::sync::Notify;
use url::Url;

use crate::secrets::random_token;
use crate::settings::WebhookSettings;
use key::WebhookKey;
use plaza_link_preview::{PreviewError, TargetRules};

/// The longest one attempt may take (DECISIONS.md: a 10 s timeout).
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// The prefix of every webhook secret.
const SECRET_PREFIX: &str = "whsec_";

/// This instance's webhooks: the sealing key, the target rules, the
/// guarded client and the sender's wake-up.
pub struct Webhooks {
    key: WebhookKey,
    rules: TargetRules,
    client: reqwest::Client,
    retry_initial: Duration,
    retry_window: Duration,
    wake: Notify,
}

impl Webhooks {
    /// Fails when the key cannot be read or the client built.
    pub fn new(
        settings: &WebhookSettings,
        data_dir: &Path,
        app_name: &str,
    ) -> Result<Self, String> {
        let rules = TargetRules {
            allow_private: settings.webhooks_allow_private,
        };
        let user_agent = format!("{}-Webhooks/1.0", app_name.trim());
        Ok(Webhooks {
            key: WebhookKey::load(settings.webhook_key.as_deref(), data_dir)?,
            client: rules
                .client(&user_agent, ATTEMPT_TIMEOUT)
                .map_err(|error| format!("cannot build the webhook client: {error}"))?,
            rules,
            retry_initial: Duration::from_secs(settings.webhook_retry_initial_secs),
            retry_window: Duration::from_secs(settings.webhook_retry_window_secs),
            wake: Notify::new(),
        })
    }

    /// What wakes the sender besides its period: an event written by this
    /// instance, a redelivery, a run that left work behind.
    pub fn wake(&self) -> &Notify {
        &self.wake
    }

    /// A new signing secret: the prefix and 256 random bits.
    pub fn new_secret() -> String {
        format!("{SECRET_PREFIX}{}", random_token())
    }

    /// `secret` sealed for the database.
    pub fn seal(&self, secret: &str) -> Result<String, String> {
        self.key.seal(secret)
    }

    /// Checks a target URL as given at creation or change: at most
    /// `max_chars`, an absolute `http` or `https` URL with a host, whose
    /// addresses are public (unless `webhooks_allow_private`). The reason
    /// of a refusal is for the answer's `url` field.
    pub async fn check_url(&self, text: &str, max_chars: usize) -> Result<Url, String> {
        if text.chars().count() > max_chars {
            return Err(format!("must be at most {max_chars} characters"));
        }
        let url = Url::parse(text.trim()).map_err(|_| "must be an absolute URL".to_owned())?;
        if !url.username().is_empty() || url.password().is_some() {
            return Err("must not carry a user name or password".to_owned());
        }
        self.rules.check(&url).await.map_err(|error| match error {
            PreviewError::UnsupportedScheme(_) => "must be an http or https URL".to_owned(),
            PreviewError::AddressRefused { .. } => {
                "must be on a public address (`webhooks_allow_private` is off)".to_owned()
            }
            PreviewError::Connect(_) => "must name a host that resolves".to_owned(),
            other => other.to_string(),
        })?;
        Ok(url)
    }
}
