//! Notification mail: one mail per notification whose type a member mails
//! `immediate`, and the daily digest of what waited for it
//! (`digest_hour_utc`). Both are written from the mail templates (text and
//! HTML parts) and queued in `outgoing_mail` in the unit of work that takes
//! the notifications from their outbox, so each is mailed once and the
//! mail is retried as every mail is. Each carries `List-Unsubscribe` and
//! `List-Unsubscribe-Post: List-Unsubscribe=One-Click` (RFC 8058): its URL's
//! token, signed with a key derived from the VAPID key, names the member
//! and the types the mail is about, and a POST of it turns their mail for
//! those types off.

use std::sync::Arc;
use std::time::Duration;

use plaza_domain::notifications::{
    self, Digest, EmailChoice, Kind, MailDue, MailRecipient, Notification, PreferenceChanges,
};
use plaza_domain::outgoing_mail::{self, NewMail};
use plaza_domain::time::{now_millis, rfc3339};
use plaza_domain::{Database, DomainError};
use serde::Serialize;
use tokio::sync::Notify;

use super::vapid::VapidKey;
use crate::services::mail::Mailer;
use crate::services::templates::Templates;
use crate::settings::ServerSettings;

/// How often every instance looks for immediate mails due (the
/// specification allows a minute).
pub const IMMEDIATE_PERIOD: Duration = Duration::from_secs(5);

/// How often every instance looks for digests due (one index probe when
/// none is).
pub const DIGEST_PERIOD: Duration = Duration::from_secs(10);

/// Notifications one unit of work mails at most.
const IMMEDIATE_BATCH: i64 = 50;

/// Members whose digests one unit of work writes at most.
const DIGEST_BATCH: i64 = 100;

/// Notifications a digest lists; it counts the others.
const DIGEST_LISTED: i64 = 20;

/// Units of work one run of a mail job does at most; with more due, the
/// next run follows at once.
const BATCHES_PER_RUN: usize = 5;

/// What a mail renders from its templates.
#[derive(Serialize)]
struct MailContext<'a> {
    app_name: &'a str,
    subject: &'a str,
    name: &'a str,
    link: &'a str,
    /// The page where a reader turns these mails off (the one-click URL
    /// is the `List-Unsubscribe` header's).
    unsubscribe: &'a str,
    /// What the mail's types are called, for its footer.
    about: &'a str,
    /// One notification, or a digest's.
    items: &'a [String],
    /// A statement of reasons, for a single notification that has one.
    text: Option<&'a str>,
    /// How many more notifications a digest did not list.
    more: i64,
}

/// One sentence for `notification`, as a mail tells it.
fn describe(notification: &Notification) -> String {
    let who = notification
        .actor
        .as_ref()
        .map_or("Someone", |actor| actor.display_name());
    let item = if notification.reply_id.is_some() {
        "your reply"
    } else {
        "your post"
    };
    match notification.kind {
        Kind::Reply => format!("{who} replied to you."),
        Kind::Mention => format!("{who} mentioned you."),
        Kind::Reaction => {
            let emoji = notification.emoji.as_deref().unwrap_or("");
            match notification.text.as_deref() {
                Some(count) if count != "1" => {
                    format!("{who} and others reacted {emoji} to {item} ({count} reactions).")
                }
                _ => format!("{who} reacted {emoji} to {item}."),
            }
        }
        Kind::Follow => format!("{who} follows you now."),
        Kind::Moderation => "A moderator acted on your content or account.".to_owned(),
        Kind::Warning => "A moderator warned you.".to_owned(),
        Kind::Registration => format!("{who} signed up and awaits approval."),
        Kind::Appeal => "Your appeal was decided.".to_owned(),
    }
}

/// What the mails of `kinds` are about, for the footer and the
/// unsubscribe page.
pub fn about(kinds: &[Kind]) -> String {
    kinds
        .iter()
        .map(|kind| match kind {
            Kind::Reply => "answers",
            Kind::Mention => "mentions",
            Kind::Reaction => "reactions",
            Kind::Follow => "follows",
            Kind::Moderation => "moderation decisions",
            Kind::Warning => "warnings",
            Kind::Registration => "sign-ups awaiting approval",
            Kind::Appeal => "appeal decisions",
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What every notification mail needs from outside the unit of work.
#[derive(Clone)]
struct Writer {
    templates: Arc<Templates>,
    server: ServerSettings,
    key: Arc<VapidKey>,
}

impl Writer {
    /// The mail `kind` (its templates' name) to `recipient` listing `items`.
    fn compose(
        &self,
        kind: &'static str,
        recipient: &MailRecipient,
        kinds: &[Kind],
        items: &[String],
        text: Option<&str>,
        more: i64,
    ) -> Result<NewMail, String> {
        let name = recipient
            .name
            .as_deref()
            .filter(|name| !name.trim().is_empty())
            .unwrap_or(&recipient.username);
        let token = unsubscribe_token(&self.key, recipient.user_id, kinds);
        let base = self.server.base_url.as_str().trim_end_matches('/');
        let one_click = format!("{base}/api/notifications/unsubscribe?token={token}");
        let unsubscribe = format!("{base}/unsubscribe?token={token}");
        let link = self.server.base_url.as_str().to_owned();
        let about = about(kinds);
        let mut context = MailContext {
            app_name: &self.server.app_name,
            subject: "",
            name,
            link: &link,
            unsubscribe: &unsubscribe,
            about: &about,
            items,
            text,
            more,
        };
        let rendered = self
            .templates
            .render(&format!("mail/{kind}.subject.txt"), &context)?;
        let subject = rendered.split_whitespace().collect::<Vec<_>>().join(" ");
        context.subject = &subject;
        Ok(NewMail {
            kind,
            user_id: Some(recipient.user_id),
            recipient: recipient.email.clone(),
            body_text: self
                .templates
                .render(&format!("mail/{kind}.txt"), &context)?,
            body_html: self
                .templates
                .render(&format!("mail/{kind}.html"), &context)?,
            subject,
            list_unsubscribe: Some(one_click),
        })
    }
}

/// A template that fails is a bug of Plaza's, reported as the unit of
/// work's error so nothing is taken from the outbox.
fn template_error(error: String) -> DomainError {
    DomainError::InvalidTransition(format!("a notification mail cannot be written: {error}"))
}

/// The token of the unsubscribe links of the mails of `kinds` to
/// `user_id`: it names both and is signed.
fn unsubscribe_token(key: &VapidKey, user_id: i64, kinds: &[Kind]) -> String {
    let names: Vec<&str> = kinds.iter().map(|kind| kind.as_str()).collect();
    let message = format!("{user_id}.{}", names.join("-"));
    format!("{message}.{}", key.sign_link(&message))
}

/// The most recent `hour`:00 UTC at or before `now` (Unix milliseconds):
/// a digest mails what was created before it.
pub fn digest_cutoff(now: i64, hour: u8) -> i64 {
    const DAY: i64 = 86_400_000;
    let offset = i64::from(hour) * 3_600_000;
    (now - offset).div_euclid(DAY) * DAY + offset
}

/// This instance's writer of notification mail.
pub struct NotificationMail {
    vapid: Arc<VapidKey>,
    templates: Arc<Templates>,
    digest_hour_utc: u8,
    wake_immediate: Notify,
    wake_digest: Notify,
}

impl NotificationMail {
    pub(super) fn new(
        vapid: Arc<VapidKey>,
        templates: Arc<Templates>,
        digest_hour_utc: u8,
    ) -> Self {
        NotificationMail {
            vapid,
            templates,
            digest_hour_utc,
            wake_immediate: Notify::new(),
            wake_digest: Notify::new(),
        }
    }

    /// What wakes the immediate mail job besides its period (a run that
    /// left work behind).
    pub fn immediate_wake(&self) -> &Notify {
        &self.wake_immediate
    }

    /// What wakes the digest job besides its period.
    pub fn digest_wake(&self) -> &Notify {
        &self.wake_digest
    }

    /// The member and types an unsubscribe token names, if its signature
    /// holds.
    pub fn read_unsubscribe_token(&self, token: &str) -> Option<(i64, Vec<Kind>)> {
        let (message, mac) = token.rsplit_once('.')?;
        if !self.vapid.verify_link(message, mac) {
            return None;
        }
        let (user_id, kinds) = message.split_once('.')?;
        let kinds: Option<Vec<Kind>> = kinds.split('-').map(Kind::parse).collect();
        Some((user_id.parse().ok()?, kinds?))
    }

    fn writer(&self, server: &ServerSettings) -> Writer {
        Writer {
            templates: self.templates.clone(),
            server: server.clone(),
            key: self.vapid.clone(),
        }
    }

    /// One run of the immediate mail job: takes due notifications and
    /// queues one mail for each whose member still mails its type and has
    /// a verified address. Answers what it did.
    pub async fn mail_immediate(
        &self,
        db: &Database,
        server: &ServerSettings,
        mailer: &Mailer,
    ) -> Result<String, String> {
        let mut queued = 0usize;
        let due = db.notification_mail_due(MailDue::Immediate).await;
        if !due.map_err(|error| error.to_string())? {
            return Ok(String::new());
        }
        for _ in 0..BATCHES_PER_RUN {
            let writer = self.writer(server);
            let (taken, mailed) = db
                .write(|tx| {
                    Box::pin(async move {
                        let due = notifications::take_immediate(tx, IMMEDIATE_BATCH).await?;
                        let mut mailed = 0usize;
                        let now = now_millis();
                        for (notification, recipient) in &due {
                            let channels = notifications::channels_in(
                                tx,
                                recipient.user_id,
                                notification.kind,
                            )
                            .await?;
                            if !recipient.mailable || channels.email == EmailChoice::Off {
                                continue;
                            }
                            let items = [describe(notification)];
                            let mail = writer
                                .compose(
                                    "notification",
                                    recipient,
                                    &[notification.kind],
                                    &items,
                                    notification.text.as_deref(),
                                    0,
                                )
                                .map_err(template_error)?;
                            outgoing_mail::enqueue(tx, &mail, now).await?;
                            mailed += 1;
                        }
                        Ok((due.len(), mailed))
                    })
                })
                .await
                .map_err(|error| error.to_string())?;
            queued += mailed;
            if mailed > 0 {
                mailer.wake();
            }
            if (taken as i64) < IMMEDIATE_BATCH {
                return Ok(summary(queued, "notification mails"));
            }
        }
        self.wake_immediate.notify_one();
        Ok(summary(queued, "notification mails"))
    }

    /// One run of the digest job: for members with notifications waiting
    /// since before the last `digest_hour_utc`, one mail each listing the
    /// unread ones of the types they still mail, those waiting longest
    /// first. Answers what it did.
    pub async fn mail_digests(
        &self,
        db: &Database,
        server: &ServerSettings,
        mailer: &Mailer,
    ) -> Result<String, String> {
        let cutoff = digest_cutoff(now_millis(), self.digest_hour_utc);
        let mut queued = 0usize;
        let due = db
            .notification_mail_due(MailDue::DigestBefore(cutoff))
            .await;
        if !due.map_err(|error| error.to_string())? {
            return Ok(String::new());
        }
        for _ in 0..BATCHES_PER_RUN {
            let writer = self.writer(server);
            let (members, mailed) = db
                .write(|tx| {
                    Box::pin(async move {
                        let members = notifications::digest_due(tx, cutoff, DIGEST_BATCH).await?;
                        let digests =
                            notifications::take_digests(tx, &members, cutoff, DIGEST_LISTED)
                                .await?;
                        let now = now_millis();
                        for Digest {
                            recipient,
                            notifications: waiting,
                            more,
                        } in &digests
                        {
                            let mut listed: Vec<Kind> =
                                waiting.iter().map(|item| item.kind).collect();
                            listed.sort();
                            listed.dedup();
                            let items: Vec<String> = waiting
                                .iter()
                                .map(|item| {
                                    format!("{} ({})", describe(item), rfc3339(item.updated_at))
                                })
                                .collect();
                            let mail = writer
                                .compose("digest", recipient, &listed, &items, None, *more)
                                .map_err(template_error)?;
                            outgoing_mail::enqueue(tx, &mail, now).await?;
                        }
                        let mailed = digests.len();
                        Ok((members.len(), mailed))
                    })
                })
                .await
                .map_err(|error| error.to_string())?;
            queued += mailed;
            if mailed > 0 {
                mailer.wake();
            }
            if (members as i64) < DIGEST_BATCH {
                return Ok(summary(queued, "digests"));
            }
        }
        self.wake_digest.notify_one();
        Ok(summary(queued, "digests"))
    }

    /// Turns off the mail of `kinds` for `user_id` (a one-click
    /// unsubscribe); a member whose account is gone is mailed nothing
    /// already.
    pub async fn unsubscribe(
        &self,
        db: &Database,
        user_id: i64,
        kinds: Vec<Kind>,
    ) -> Result<(), DomainError> {
        let changes = PreferenceChanges {
            email: kinds
                .into_iter()
                .map(|kind| (kind, EmailChoice::Off))
                .collect(),
            push: Vec::new(),
        };
        db.write(|tx| {
            Box::pin(async move {
                match plaza_domain::users::user_in(tx, user_id).await {
                    Err(DomainError::NotFound(_)) => return Ok(()),
                    found => found?,
                };
                notifications::change_preferences(tx, user_id, &changes).await?;
                Ok(())
            })
        })
        .await
    }
}

fn summary(count: usize, what: &str) -> String {
    if count == 0 {
        String::new()
    } else {
        format!("queued {count} {what}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_mails_what_came_before_the_last_digest_hour() {
        let hour = 3_600_000;
        let day = 24 * hour;
        let today = 20_000 * day;
        assert_eq!(digest_cutoff(today + 9 * hour, 8), today + 8 * hour);
        assert_eq!(digest_cutoff(today + 8 * hour, 8), today + 8 * hour);
        assert_eq!(digest_cutoff(today + 7 * hour, 8), today - day + 8 * hour);
        assert_eq!(digest_cutoff(today + 30, 0), today);
    }
}
