//! Settings of one section: notifications: the hour of the daily digest,
//! the VAPID key and contact of Web Push, and whether push endpoints may be
//! plain HTTP on private addresses.

use serde::{Deserialize, Serialize};

use super::error::SettingsError;

/// Notifications by mail and Web Push.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NotificationSettings {
    /// The hour (UTC, 0 to 23) at which the daily digest mails what
    /// waited for it.
    pub digest_hour_utc: u8,
    /// The VAPID private key of Web Push: the P-256 private scalar, 32
    /// bytes in base64url. Unset: the key kept in `<data_dir>/vapid-key`,
    /// generated on first start (and archived by backups). Several
    /// instances need the same key: browsers subscribe to one.
    pub vapid_private_key: Option<String>,
    /// The VAPID `sub` claim, a `mailto:` or `https:` URL push services
    /// may contact. Unset: `mailto:` the address of `mail_from`.
    pub vapid_subject: Option<String>,
    /// Accepts push endpoints on plain `http` and on private addresses
    /// (loopback, RFC 1918): for tests. Off, an endpoint must be `https`
    /// on a public address.
    pub push_allow_insecure: bool,
}

impl Default for NotificationSettings {
    fn default() -> Self {
        NotificationSettings {
            digest_hour_utc: 8,
            vapid_private_key: None,
            vapid_subject: None,
            push_allow_insecure: false,
        }
    }
}

impl NotificationSettings {
    pub(super) fn validate(&self) -> Result<(), SettingsError> {
        if self.digest_hour_utc > 23 {
            return Err(SettingsError::new(
                "digest_hour_utc",
                "must be an hour from 0 to 23",
            ));
        }
        if let Some(key) = &self.vapid_private_key {
            parse_vapid_key(key)
                .map_err(|problem| SettingsError::new("vapid_private_key", problem))?;
        }
        if let Some(subject) = &self.vapid_subject {
            let url = url::Url::parse(subject.trim()).map_err(|error| {
                SettingsError::new("vapid_subject", format!("not a URL: {error}"))
            })?;
            if !matches!(url.scheme(), "mailto" | "https") {
                return Err(SettingsError::new(
                    "vapid_subject",
                    "must be a mailto: or https: URL",
                ));
            }
        }
        Ok(())
    }
}

/// A VAPID private key as `vapid_private_key` and `<data_dir>/vapid-key`
/// hold it: the P-256 private scalar, 32 bytes in base64url (padding
/// allowed), as web push tools print it.
pub fn parse_vapid_key(text: &str) -> Result<p256::SecretKey, String> {
    use base64::Engine as _;
    let text = text.trim().trim_end_matches('=');
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|_| "must be base64url (the 32 bytes of a P-256 private key)".to_owned())?;
    if bytes.len() != 32 {
        return Err(format!(
            "holds {} bytes; a P-256 private key is 32 bytes in base64url",
            bytes.len()
        ));
    }
    p256::SecretKey::from_slice(&bytes).map_err(|_| "is not a P-256 private key".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hour_key_and_subject_are_checked() {
        assert!(NotificationSettings::default().validate().is_ok());
        let refused = [
            NotificationSettings {
                digest_hour_utc: 24,
                ..NotificationSettings::default()
            },
            NotificationSettings {
                vapid_private_key: Some("not a key".to_owned()),
                ..NotificationSettings::default()
            },
            NotificationSettings {
                vapid_subject: Some("http://example.com".to_owned()),
                ..NotificationSettings::default()
            },
        ];
        for settings in refused {
            assert!(settings.validate().is_err(), "{settings:?}");
        }
        let accepted = NotificationSettings {
            vapid_subject: Some("mailto:ops@example.com".to_owned()),
            ..NotificationSettings::default()
        };
        assert!(accepted.validate().is_ok());
    }
}
