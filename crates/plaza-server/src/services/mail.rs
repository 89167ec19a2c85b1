//! Outgoing mail. A request that causes a mail renders it ([`compose`]),
//! queues it in its own unit of work (`outgoing_mail`) and wakes this
//! instance's sender ([`Mailer::wake`]); the sender is the job runner's
//! `send_mail` job, which also looks for due mail every few seconds on
//! every instance, so a mail queued anywhere is first tried within
//! seconds. The sender claims each mail before an attempt (see
//! `plaza_domain::outgoing_mail`), tries at most `mail_max_concurrent` at
//! once, each within `mail_send_timeout_secs`, and retries a failed one
//! with a doubling wait until `mail_max_attempts`; then the mail is kept as
//! failed, with a warning and `plaza_mail_failed_total`. A server that
//! refuses a mail for good (a 5xx answer) fails it at once.
//!
//! With `smtp_url` unset, each mail is written as an `.eml` file into
//! `<data_dir>/mail/` and its file logged; files older than
//! `mail_retention_days` are removed, as sent mail is from the table.

use std::path::{Path, PathBuf};
use std::time::Duration;

use lettre::message::header::{HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::PoolConfig;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::transport::smtp::extension::ClientId;
use lettre::{AsyncFileTransport, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use plaza_domain::Database;
use plaza_domain::outgoing_mail::{AttemptOutcome, ClaimedMail, MailClaim, NewMail};
use plaza_domain::time::now_millis;
use serde::Serialize;
use tokio::sync::Notify;

use crate::services::templates::Templates;
use crate::settings::{MailSettings, ServerSettings, SmtpSecurity, SmtpServer};

/// How often every instance looks for due mail (a mail queued on another
/// instance, a retry that came due).
pub const SENDER_PERIOD: Duration = Duration::from_secs(5);

/// Rounds of up to `mail_max_concurrent` mails one run of the sender takes
/// on; with more due, the next run follows at once. Bounds how long
/// shutdown may wait for a run.
const ROUNDS_PER_RUN: usize = 4;

/// The longest wait between two attempts at one mail.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(6 * 3600);

/// Finished mails one purge deletes at most.
pub const PURGE_CHUNK: i64 = 5_000;

/// What a mail is for; names its templates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MailKind {
    VerifyEmail,
    ResetPassword,
    /// A notice that the account's password or second factor changed.
    AccountChanged,
    /// A ban's reason and the link to appeal it.
    Banned,
}

impl MailKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MailKind::VerifyEmail => "verify_email",
            MailKind::ResetPassword => "reset_password",
            MailKind::AccountChanged => "account_changed",
            MailKind::Banned => "banned",
        }
    }
}

/// A mail to write: who it goes to, and the link it carries.
pub struct Letter<'a> {
    pub kind: MailKind,
    pub recipient: &'a str,
    /// How the mail greets the recipient.
    pub name: &'a str,
    pub link: &'a str,
    /// How long the link works, in words.
    pub valid_for: &'a str,
    /// What changed, in words of Plaza's own (an account change notice).
    pub change: &'a str,
}

#[derive(Serialize)]
struct LetterContext<'a> {
    app_name: &'a str,
    subject: &'a str,
    name: &'a str,
    email: &'a str,
    link: &'a str,
    valid_for: &'a str,
    change: &'a str,
}

/// Renders `letter` into a mail to queue: its subject, text and HTML parts
/// (the caller says whose it is).
pub fn compose(
    templates: &Templates,
    server: &ServerSettings,
    letter: &Letter<'_>,
) -> Result<NewMail, String> {
    let kind = letter.kind.as_str();
    let mut context = LetterContext {
        app_name: &server.app_name,
        subject: "",
        name: letter.name,
        email: letter.recipient,
        link: letter.link,
        valid_for: letter.valid_for,
        change: letter.change,
    };
    let rendered = templates.render(&format!("mail/{kind}.subject.txt"), &context)?;
    // One line, whatever the application name holds.
    let subject = rendered.split_whitespace().collect::<Vec<_>>().join(" ");
    context.subject = &subject;
    Ok(NewMail {
        kind,
        user_id: None,
        recipient: letter.recipient.to_owned(),
        body_text: templates.render(&format!("mail/{kind}.txt"), &context)?,
        body_html: templates.render(&format!("mail/{kind}.html"), &context)?,
        subject,
        list_unsubscribe: None,
    })
}

/// Where mail goes.
enum Transport {
    Smtp {
        transport: AsyncSmtpTransport<Tokio1Executor>,
        /// For the log: the server without its credentials.
        described: String,
    },
    Files {
        dir: PathBuf,
        transport: AsyncFileTransport<Tokio1Executor>,
    },
}

/// Sends queued mail; one per instance.
pub struct Mailer {
    transport: Transport,
    from: Mailbox,
    /// The domain of Message-IDs and of the SMTP greeting: the base URL's host.
    domain: String,
    wake: Notify,
    concurrent: usize,
    attempt_timeout: Duration,
    max_attempts: i64,
    first_retry_wait: Duration,
}

/// Why an attempt failed.
struct Undelivered {
    /// Another attempt would fail the same way (a refused address).
    permanent: bool,
    reason: String,
}

impl Mailer {
    /// Fails when `smtp_url` asks for TLS that cannot be set up.
    pub fn new(
        settings: &MailSettings,
        server: &ServerSettings,
        data_dir: &Path,
    ) -> Result<Self, String> {
        let domain = server
            .base_url
            .host_str()
            .unwrap_or("localhost")
            .trim_matches(|c| c == '[' || c == ']')
            .to_owned();
        let attempt_timeout = Duration::from_secs(settings.mail_send_timeout_secs);
        let transport = match settings.smtp_server() {
            Some(smtp) => smtp_transport(&smtp, &domain, attempt_timeout, settings)?,
            None => {
                let dir = data_dir.join("mail");
                Transport::Files {
                    transport: AsyncFileTransport::new(&dir),
                    dir,
                }
            }
        };
        Ok(Mailer {
            transport,
            from: settings.from_mailbox()?,
            domain,
            wake: Notify::new(),
            concurrent: settings.mail_max_concurrent,
            attempt_timeout,
            max_attempts: i64::from(settings.mail_max_attempts),
            first_retry_wait: Duration::from_secs(settings.mail_retry_backoff_secs),
        })
    }

    /// Tells this instance's sender that mail is due now.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// What the sender's job waits on besides its period.
    pub fn sender_wake(&self) -> &Notify {
        &self.wake
    }

    /// Logs where mail goes.
    pub fn log_destination(&self) {
        match &self.transport {
            Transport::Smtp { described, .. } => {
                tracing::info!(smtp = %described, "mail goes to the SMTP server");
            }
            Transport::Files { dir, .. } => tracing::info!(
                dir = %dir.display(),
                "mail is written to files (smtp_url is unset)"
            ),
        }
    }

    /// One attempt at `mail`, within `mail_send_timeout_secs`.
    async fn attempt(&self, mail: &ClaimedMail) -> Result<(), Undelivered> {
        let message = self.message(mail)?;
        let sent = tokio::time::timeout(self.attempt_timeout, async {
            match &self.transport {
                Transport::Smtp { transport, .. } => transport
                    .send(message)
                    .await
                    .map(drop)
                    .map_err(|error| Undelivered {
                        permanent: error.is_permanent(),
                        reason: error_chain(&error),
                    }),
                Transport::Files { dir, transport } => {
                    crate::startup::create_private_dir(dir).map_err(|error| Undelivered {
                        permanent: false,
                        reason: format!("cannot create {}: {error}", dir.display()),
                    })?;
                    let id = transport.send(message).await.map_err(|error| Undelivered {
                        permanent: false,
                        reason: error_chain(&error),
                    })?;
                    tracing::info!(
                        mail = mail.id,
                        kind = %mail.kind,
                        to = %mail.recipient,
                        subject = %mail.subject,
                        file = %dir.join(format!("{id}.eml")).display(),
                        "mail written to a file"
                    );
                    Ok(())
                }
            }
        })
        .await;
        sent.unwrap_or_else(|_| {
            Err(Undelivered {
                permanent: false,
                reason: format!(
                    "no answer within {} s (mail_send_timeout_secs)",
                    self.attempt_timeout.as_secs()
                ),
            })
        })
    }

    /// The message of `mail`, ready to send.
    fn message(&self, mail: &ClaimedMail) -> Result<Message, Undelivered> {
        let refused = |reason: String| Undelivered {
            permanent: true,
            reason,
        };
        let to: Mailbox = mail
            .recipient
            .parse()
            .map_err(|error| refused(format!("the recipient cannot be mailed: {error}")))?;
        let mut builder = Message::builder();
        if let Some(url) = &mail.list_unsubscribe {
            // RFC 8058: a mail client unsubscribes with one POST of
            // `List-Unsubscribe=One-Click` to the URL, no session needed.
            builder = builder
                .raw_header(HeaderValue::new(
                    HeaderName::new_from_ascii_str("List-Unsubscribe"),
                    format!("<{url}>"),
                ))
                .raw_header(HeaderValue::new(
                    HeaderName::new_from_ascii_str("List-Unsubscribe-Post"),
                    "List-Unsubscribe=One-Click".to_owned(),
                ));
        }
        builder
            .from(self.from.clone())
            .to(to)
            .subject(mail.subject.clone())
            .message_id(Some(format!(
                "<{}.{}@{}>",
                mail.id,
                crate::secrets::random_token(),
                self.domain
            )))
            .multipart(MultiPart::alternative_plain_html(
                mail.body_text.clone(),
                mail.body_html.clone(),
            ))
            .map_err(|error| refused(format!("the message cannot be built: {error}")))
    }

    /// What to record after attempt number `attempt` failed with `why`.
    fn outcome_of_failure(&self, attempt: i64, why: Undelivered, now: i64) -> AttemptOutcome {
        if why.permanent || attempt >= self.max_attempts {
            return AttemptOutcome::Failed { error: why.reason };
        }
        let doublings = u32::try_from(attempt.saturating_sub(1).min(31)).unwrap_or(31);
        let wait = self
            .first_retry_wait
            .saturating_mul(2u32.saturating_pow(doublings))
            .min(MAX_RETRY_WAIT);
        AttemptOutcome::Retry {
            error: why.reason,
            retry_at: now.saturating_add(millis(wait)),
        }
    }
}

/// The SMTP transport of `smtp`, pooling up to `mail_max_concurrent`
/// connections.
fn smtp_transport(
    smtp: &SmtpServer,
    domain: &str,
    timeout: Duration,
    settings: &MailSettings,
) -> Result<Transport, String> {
    let tls_parameters = || {
        TlsParameters::new(smtp.host.clone())
            .map_err(|error| format!("cannot set up TLS for {}: {error}", smtp.host))
    };
    let (tls, protection) = match smtp.security {
        SmtpSecurity::Plain => (Tls::None, "plain"),
        SmtpSecurity::StartTls => (Tls::Required(tls_parameters()?), "STARTTLS"),
        SmtpSecurity::Tls => (Tls::Wrapper(tls_parameters()?), "TLS"),
    };
    let pool_size = u32::try_from(settings.mail_max_concurrent).unwrap_or(u32::MAX);
    let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(smtp.host.clone())
        .port(smtp.port)
        .tls(tls)
        .timeout(Some(timeout))
        .hello_name(ClientId::Domain(domain.to_owned()))
        .pool_config(PoolConfig::new().max_size(pool_size));
    if let Some((user, password)) = &smtp.credentials {
        builder = builder.credentials(Credentials::new(user.clone(), password.clone()));
    }
    Ok(Transport::Smtp {
        transport: builder.build(),
        described: format!("{}:{} ({protection})", smtp.host, smtp.port),
    })
}

/// One run of `mailer`: claims due mail in `db` for `owner` (this
/// instance), `mail_max_concurrent` at a time, attempts it and records each
/// outcome. Answers what it did.
pub async fn send_due(mailer: &Mailer, db: &Database, owner: &str) -> Result<String, String> {
    let lease = mailer.attempt_timeout + Duration::from_secs(60);
    let (mut sent, mut retried, mut failed) = (0usize, 0usize, 0usize);
    let limit = i64::try_from(mailer.concurrent).unwrap_or(i64::MAX);
    for _ in 0..ROUNDS_PER_RUN {
        let now = now_millis();
        let due = db
            .due_mail(now, limit)
            .await
            .map_err(|error| error.to_string())?;
        if due.is_empty() {
            return Ok(summary(sent, retried, failed));
        }
        let claim = MailClaim {
            owner,
            now,
            lease_until: now.saturating_add(millis(lease)),
        };
        let mut claimed = Vec::with_capacity(due.len());
        for id in due {
            if let Some(mail) = db
                .claim_mail(id, claim)
                .await
                .map_err(|error| error.to_string())?
            {
                claimed.push(mail);
            }
        }
        let attempts =
            futures_util::future::join_all(claimed.iter().map(|mail| mailer.attempt(mail))).await;
        for (mail, attempted) in claimed.iter().zip(attempts) {
            let now = now_millis();
            let outcome = match attempted {
                Ok(()) => AttemptOutcome::Sent,
                Err(why) => mailer.outcome_of_failure(mail.attempts, why, now),
            };
            let kind = mail.kind.clone();
            match &outcome {
                AttemptOutcome::Sent => {
                    sent += 1;
                    metrics::counter!("plaza_mail_sent_total", "kind" => kind).increment(1);
                }
                AttemptOutcome::Retry { error, retry_at } => {
                    retried += 1;
                    metrics::counter!("plaza_mail_attempt_failures_total", "kind" => kind)
                        .increment(1);
                    tracing::warn!(
                        mail = mail.id,
                        kind = %mail.kind,
                        attempt = mail.attempts,
                        retry_in_secs = (retry_at - now) / 1000,
                        %error,
                        "mail not delivered; it will be retried"
                    );
                }
                AttemptOutcome::Failed { error } => {
                    failed += 1;
                    metrics::counter!("plaza_mail_attempt_failures_total", "kind" => kind.clone())
                        .increment(1);
                    metrics::counter!("plaza_mail_failed_total", "kind" => kind).increment(1);
                    tracing::warn!(
                        mail = mail.id,
                        kind = %mail.kind,
                        attempts = mail.attempts,
                        %error,
                        "mail given up on; it is kept as failed in outgoing_mail"
                    );
                }
            }
            let recorded = db
                .finish_mail_attempt(mail, owner, &outcome, now)
                .await
                .map_err(|error| error.to_string())?;
            if !recorded {
                tracing::warn!(
                    mail = mail.id,
                    "a mail attempt outlasted its lease; another sender had taken the mail"
                );
            }
        }
    }
    // More may be due: the next run starts at once.
    mailer.wake();
    Ok(summary(sent, retried, failed))
}

/// Deletes sent and failed mail older than `mail_retention_days`.
pub async fn purge_finished(db: &Database, settings: &MailSettings) -> Result<String, String> {
    let retention = Duration::from_secs(settings.mail_retention_days.saturating_mul(86_400));
    db.purge_finished_mail(now_millis().saturating_sub(millis(retention)), PURGE_CHUNK)
        .await
        .map(|removed| {
            if removed == 0 {
                String::new()
            } else {
                format!("removed {removed} finished mails")
            }
        })
        .map_err(|error| error.to_string())
}

/// Deletes `.eml` files older than `mail_retention_days` from the folder
/// `mailer` writes mail into when `smtp_url` is unset.
pub async fn purge_old_files(mailer: &Mailer, settings: &MailSettings) -> Result<String, String> {
    let Transport::Files { dir, .. } = &mailer.transport else {
        return Ok(String::new());
    };
    let dir = dir.clone();
    let retention = Duration::from_secs(settings.mail_retention_days.saturating_mul(86_400));
    tokio::task::spawn_blocking(move || remove_files_older_than(&dir, retention))
        .await
        .map_err(|error| error.to_string())?
        .map(|removed| {
            if removed == 0 {
                String::new()
            } else {
                format!("removed {removed} mail files")
            }
        })
}

/// Removes the `.eml` files in `dir` last changed longer than `age` ago.
fn remove_files_older_than(dir: &Path, age: Duration) -> Result<usize, String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(error) => return Err(format!("cannot read {}: {error}", dir.display())),
    };
    let mut removed = 0;
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let old = entry
            .metadata()
            .and_then(|metadata| metadata.modified())
            .ok()
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|elapsed| elapsed > age);
        if old
            && path.extension().is_some_and(|extension| extension == "eml")
            && std::fs::remove_file(&path).is_ok()
        {
            removed += 1;
        }
    }
    Ok(removed)
}

fn summary(sent: usize, retried: usize, failed: usize) -> String {
    if sent + retried + failed == 0 {
        String::new()
    } else {
        format!("{sent} mails sent, {retried} to retry, {failed} failed")
    }
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// An error with its sources, for the log and the mail's row.
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

    fn mailer(max_attempts: u32) -> Mailer {
        let settings = MailSettings {
            mail_max_attempts: max_attempts,
            mail_retry_backoff_secs: 60,
            ..MailSettings::default()
        };
        Mailer::new(
            &settings,
            &ServerSettings::default(),
            Path::new("/nonexistent"),
        )
        .unwrap()
    }

    fn failure(permanent: bool) -> Undelivered {
        Undelivered {
            permanent,
            reason: "refused".to_owned(),
        }
    }

    #[test]
    fn failed_attempts_wait_twice_as_long_each_time_until_the_last() {
        let mailer = mailer(12);
        let retry_at = |attempt| match mailer.outcome_of_failure(attempt, failure(false), 0) {
            AttemptOutcome::Retry { retry_at, .. } => retry_at,
            other => panic!("attempt {attempt}: {other:?}"),
        };
        assert_eq!(retry_at(1), 60_000);
        assert_eq!(retry_at(2), 120_000);
        assert_eq!(retry_at(3), 240_000);
        assert_eq!(retry_at(11), millis(MAX_RETRY_WAIT));
        assert!(matches!(
            mailer.outcome_of_failure(12, failure(false), 0),
            AttemptOutcome::Failed { .. }
        ));
        assert!(matches!(
            mailer.outcome_of_failure(1, failure(true), 0),
            AttemptOutcome::Failed { .. }
        ));
    }

    #[test]
    fn only_mail_files_past_their_retention_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, age: Duration| {
            let path = dir.path().join(name);
            let file = std::fs::File::create(&path).unwrap();
            file.set_modified(std::time::SystemTime::now() - age)
                .unwrap();
            path
        };
        let day = Duration::from_secs(86_400);
        let old = write("old.eml", 8 * day);
        let recent = write("recent.eml", day);
        let other = write("notes.txt", 8 * day);
        assert_eq!(remove_files_older_than(dir.path(), 7 * day).unwrap(), 1);
        assert!(!old.exists() && recent.exists() && other.exists());
        assert_eq!(
            remove_files_older_than(&dir.path().join("missing"), day).unwrap(),
            0
        );
    }

    #[test]
    fn mails_are_rendered_from_their_templates() {
        let templates = Templates::new().unwrap();
        let mail = compose(
            &templates,
            &ServerSettings::default(),
            &Letter {
                kind: MailKind::ResetPassword,
                recipient: "ada@example.com",
                name: "Ada",
                link: "http://localhost:3000/reset-password?token=abc",
                valid_for: "1 hour",
                change: "",
            },
        )
        .unwrap();
        assert_eq!(mail.subject, "Reset your Plaza password");
        assert_eq!(mail.kind, "reset_password");
        assert!(mail.body_text.contains("/reset-password?token=abc"));
        // HTML escapes the slashes too (`&#x2f;`), which browsers read back.
        assert!(
            mail.body_html
                .replace("&#x2f;", "/")
                .contains("/reset-password?token=abc")
        );
        assert!(mail.body_text.contains("1 hour"));
    }
}
