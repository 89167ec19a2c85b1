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

pub use item::{NotificationActorView, NotificationItem};
pub use mail::NotificationMail;
pub use push::PushSender;
pub use vapid::{VAPID_KEY_FILE, VapidKey};

use crate::services::templates::Templates;
use crate::settings::{MailSettings, NotificationSettings, ServerSettings};

/// This instance's notification channels beyond the list: push and mail,
/// sharing the VAPID key.
pub struct Notifier {
    vapid: Arc<VapidKey>,
    pub push: PushSender,
    pub mail: NotificationMail,
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
        let vapid = Arc::new(VapidKey::load(
            settings.vapid_private_key.as_deref(),
            data_dir,
        )?);
        Ok(Notifier {
            push: PushSender::new(
                vapid.clone(),
                subject,
                settings.push_allow_insecure,
                &server.app_name,
            )?,
            mail: NotificationMail::new(vapid.clone(), templates, settings.digest_hour_utc),
            vapid,
        })
    }

    /// The VAPID public key browsers subscribe with.
    pub fn public_key(&self) -> &str {
        self.vapid.public_key()
    }
}
