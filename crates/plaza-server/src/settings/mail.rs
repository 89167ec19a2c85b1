//! Settings of one section: outgoing mail: the SMTP server (or, without one,
//! `.eml` files in the data directory), the sender, and how the sender
//! retries, bounds and keeps its mail.

use serde::{Deserialize, Serialize};

use super::error::{SettingsError, at_least_one};

/// Outgoing mail.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MailSettings {
    /// `smtp://host:port` (plain), `smtp://host:port?tls=starttls`, or
    /// `smtps://host:port` (TLS from the start); a user and password go in
    /// the URL (`smtp://user:password@host`). Unset: every mail is written
    /// as an `.eml` file into `<data_dir>/mail/` and logged.
    pub smtp_url: Option<String>,
    /// The `From` of every mail: `Name <address>` or an address.
    pub mail_from: String,
    /// Attempts at one mail before it is given up on (kept as failed).
    pub mail_max_attempts: u32,
    /// The wait after a first failed attempt; it doubles after each
    /// further one, up to six hours.
    pub mail_retry_backoff_secs: u64,
    /// Mails handed to the SMTP server at once by one instance.
    pub mail_max_concurrent: usize,
    /// The longest one attempt at one mail may take.
    pub mail_send_timeout_secs: u64,
    /// How long sent and failed mails stay in the database, and mail
    /// files in `<data_dir>/mail/`.
    pub mail_retention_days: u64,
}

impl Default for MailSettings {
    fn default() -> Self {
        MailSettings {
            smtp_url: None,
            mail_from: "Plaza <no-reply@localhost>".to_owned(),
            mail_max_attempts: 8,
            mail_retry_backoff_secs: 60,
            mail_max_concurrent: 4,
            mail_send_timeout_secs: 30,
            mail_retention_days: 7,
        }
    }
}

/// How an SMTP connection is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmtpSecurity {
    /// No TLS (`smtp://`): for a relay on the same host or network.
    Plain,
    /// Plain, then `STARTTLS`, which must succeed (`?tls=starttls`).
    StartTls,
    /// TLS from the first byte (`smtps://`).
    Tls,
}

/// Where mail goes, read from `smtp_url`.
#[derive(Clone, PartialEq, Eq)]
pub struct SmtpServer {
    pub host: String,
    pub port: u16,
    pub security: SmtpSecurity,
    /// User name and password, percent-decoded.
    pub credentials: Option<(String, String)>,
}

impl std::fmt::Debug for SmtpServer {
    /// Everything but the password.
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("SmtpServer")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("security", &self.security)
            .field("user", &self.credentials.as_ref().map(|(user, _)| user))
            .finish()
    }
}

impl SmtpServer {
    /// Reads an `smtp://` or `smtps://` URL.
    pub fn parse(text: &str) -> Result<Self, String> {
        let url = url::Url::parse(text).map_err(|error| format!("not a URL: {error}"))?;
        let mut security = match url.scheme() {
            "smtp" => SmtpSecurity::Plain,
            "smtps" => SmtpSecurity::Tls,
            other => {
                return Err(format!(
                    "the scheme is {other:?}; use smtp:// (with ?tls=starttls for STARTTLS) or smtps://"
                ));
            }
        };
        for (key, value) in url.query_pairs() {
            match (key.as_ref(), value.as_ref(), security) {
                ("tls", "starttls", SmtpSecurity::Plain) => security = SmtpSecurity::StartTls,
                ("tls", "starttls", _) => {
                    return Err("smtps:// is TLS already; ?tls=starttls is for smtp://".to_owned());
                }
                _ => {
                    return Err(format!(
                        "unknown parameter {key}={value}; the one parameter is tls=starttls"
                    ));
                }
            }
        }
        let host = match url.host() {
            Some(url::Host::Domain(name)) => name.to_owned(),
            Some(url::Host::Ipv4(address)) => address.to_string(),
            Some(url::Host::Ipv6(address)) => address.to_string(),
            None => return Err("names no host".to_owned()),
        };
        if !matches!(url.path(), "" | "/") || url.fragment().is_some() {
            return Err(
                "takes no path or fragment, only smtp://user:password@host:port".to_owned(),
            );
        }
        let decode = |text: &str| {
            percent_encoding::percent_decode_str(text)
                .decode_utf8()
                .map(|decoded| decoded.into_owned())
                .map_err(|_| "its user name or password is not UTF-8".to_owned())
        };
        let credentials = match (url.username(), url.password()) {
            ("", None) => None,
            ("", Some(_)) => return Err("has a password but no user name".to_owned()),
            (user, password) => Some((decode(user)?, decode(password.unwrap_or_default())?)),
        };
        let port = url.port().unwrap_or(match security {
            SmtpSecurity::Plain => 25,
            SmtpSecurity::StartTls => 587,
            SmtpSecurity::Tls => 465,
        });
        Ok(SmtpServer {
            host,
            port,
            security,
            credentials,
        })
    }
}

impl MailSettings {
    pub(super) fn validate(&self) -> Result<(), SettingsError> {
        if let Some(url) = &self.smtp_url {
            SmtpServer::parse(url).map_err(|problem| SettingsError::new("smtp_url", problem))?;
        }
        self.from_mailbox()
            .map_err(|problem| SettingsError::new("mail_from", problem))?;
        at_least_one([
            ("mail_max_attempts", u64::from(self.mail_max_attempts)),
            ("mail_retry_backoff_secs", self.mail_retry_backoff_secs),
            ("mail_send_timeout_secs", self.mail_send_timeout_secs),
            ("mail_retention_days", self.mail_retention_days),
        ])?;
        if !(1..=64).contains(&self.mail_max_concurrent) {
            return Err(SettingsError::new(
                "mail_max_concurrent",
                "must be from 1 to 64",
            ));
        }
        if self.mail_max_attempts > 100 {
            return Err(SettingsError::new(
                "mail_max_attempts",
                "must be at most 100",
            ));
        }
        if self.mail_send_timeout_secs > 600 {
            return Err(SettingsError::new(
                "mail_send_timeout_secs",
                "must be at most 600",
            ));
        }
        if self.mail_retention_days > 36_500 {
            return Err(SettingsError::new(
                "mail_retention_days",
                "must be at most 36500",
            ));
        }
        Ok(())
    }

    /// The SMTP server, or `None` when mail goes to files.
    pub fn smtp_server(&self) -> Option<SmtpServer> {
        self.smtp_url
            .as_deref()
            .and_then(|url| SmtpServer::parse(url).ok())
    }

    /// `mail_from` as a mailbox.
    pub fn from_mailbox(&self) -> Result<lettre::message::Mailbox, String> {
        self.mail_from.trim().parse().map_err(|error| {
            format!(
                "{error}; write an address, or a name and an address: Plaza <no-reply@example.com>"
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smtp_urls_name_the_server_its_protection_and_credentials() {
        let plain = SmtpServer::parse("smtp://127.0.0.1:2525").unwrap();
        assert_eq!(
            (plain.host.as_str(), plain.port, plain.security),
            ("127.0.0.1", 2525, SmtpSecurity::Plain)
        );
        assert_eq!(plain.credentials, None);
        let starttls =
            SmtpServer::parse("smtp://mailer%40example.com:p%3Ass@mail.example.com?tls=starttls")
                .unwrap();
        assert_eq!(starttls.port, 587);
        assert_eq!(starttls.security, SmtpSecurity::StartTls);
        assert_eq!(
            starttls.credentials,
            Some(("mailer@example.com".to_owned(), "p:ss".to_owned()))
        );
        assert!(!format!("{starttls:?}").contains("p:ss"));
        let tls = SmtpServer::parse("smtps://mail.example.com").unwrap();
        assert_eq!((tls.port, tls.security), (465, SmtpSecurity::Tls));
        for refused in [
            "http://mail.example.com",
            "smtp://mail.example.com?tls=maybe",
            "smtps://mail.example.com?tls=starttls",
            "smtp://:secret@mail.example.com",
            "smtp://mail.example.com/path",
            "not a url",
        ] {
            assert!(SmtpServer::parse(refused).is_err(), "{refused}");
        }
    }

    #[test]
    fn the_sender_must_be_a_mailbox() {
        assert!(MailSettings::default().validate().is_ok());
        let bad = MailSettings {
            mail_from: "nobody".to_owned(),
            ..MailSettings::default()
        };
        assert!(bad.validate().is_err());
    }
}
