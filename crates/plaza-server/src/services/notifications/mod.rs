//! Notifications beyond the app's list: the VAPID key, Web Push delivery,
//! notification mail (immediate and the daily digest) with its one-click
//! unsubscribe, and the one shape of a notification every channel shows.
//! The jobs that run them (`send_pushes`, `mail_notifications`,
//! `mail_digests`) run on every instance; each takes its work from an
//! outbox with a conditional UPDATE (see `plaza_domain::notifications`),
//! so with several instances each push and mail goes once.

mod item;
pub mod mail;
pub mod push;
mod vapid;

use std::path::Path;
use std::sync::Arc;

use tokio::sync::Notify;

pub use item::{NotificationActorView, NotificationItem};
pub use vapid::{VAPID_KEY_FILE, VapidKey};

use crate::services::templates::Templates;
use crate::settings::{MailSettings, NotificationSettings, ServerSettings};

/// This instance's notification channels.
pub struct Notifier {
    vapid: Arc<VapidKey>,
    /// The VAPID `sub` claim.
    subject: String,
    allow_insecure: bool,
    client: reqwest::Client,
    digest_hour_utc: u8,
    templates: Arc<Templates>,
    wake_mail: Notify,
    wake_digest: Notify,
    wake_push: Notify,
}

impl Notifier {
    /// Fails when the VAPID key cannot be read or written, or the push
    /// client cannot be built.
    pub fn new(
        settings: &NotificationSettings,
        mail: &MailSettings,
        server: &ServerSettings,
        data_dir: &Path,
        templates: Arc<Templates>,
    ) -> Result<Self, String> {
        let subject = match &settings.vapid_subject {
            Some(subject) => subject.trim().to_owned(),
            None => format!("mailto:{}", mail.from_mailbox()?.email),
        };
        Ok(Notifier {
            vapid: Arc::new(VapidKey::load(
                settings.vapid_private_key.as_deref(),
                data_dir,
            )?),
            subject,
            allow_insecure: settings.push_allow_insecure,
            client: push::client(&server.app_name, settings.push_allow_insecure)?,
            digest_hour_utc: settings.digest_hour_utc,
            templates,
            wake_mail: Notify::new(),
            wake_digest: Notify::new(),
            wake_push: Notify::new(),
        })
    }

    /// The VAPID public key browsers subscribe with.
    pub fn public_key(&self) -> &str {
        self.vapid.public_key()
    }

    /// What wakes the immediate mail job besides its period (a run that
    /// left work behind).
    pub fn mail_wake(&self) -> &Notify {
        &self.wake_mail
    }

    /// What wakes the digest job besides its period.
    pub fn digest_wake(&self) -> &Notify {
        &self.wake_digest
    }

    /// What wakes the push sender besides its period: a run that left work
    /// behind, or a request on this instance that queued a push.
    pub fn push_wake(&self) -> &Notify {
        &self.wake_push
    }
}
