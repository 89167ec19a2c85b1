//! The key sealing webhook secrets before they reach the database
//! (AES-256-GCM, derived by HKDF-SHA-256 from `webhook_key` or the key
//! kept in `<data_dir>/webhook-key`, as the TOTP key is kept), so a copy of
//! the database alone yields no secret. The short id of the key is in
//! every sealed secret, so an instance with another key says so.

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::hkdf;

use crate::secrets::load_or_create_secret;

/// The file in the data directory holding the generated key.
pub const WEBHOOK_KEY_FILE: &str = "webhook-key";

/// The version of the sealed form, first in every sealed secret.
const SEALED_VERSION: &str = "v1";
/// Bytes of a key's id.
const KEY_ID_BYTES: usize = 6;
/// What every sealed secret is bound to, so one sealed for something else
/// with the same key does not open as a webhook secret.
const CONTEXT: &[u8] = b"plaza webhook secret";

/// The webhook sealing key.
pub struct WebhookKey {
    key: LessSafeKey,
    key_id: String,
}

impl WebhookKey {
    /// Uses `secret` when set; otherwise the key kept in
    /// `<data_dir>/webhook-key`, generated on first start.
    pub fn load(secret: Option<&str>, data_dir: &Path) -> Result<Self, String> {
        let secret = match secret {
            Some(secret) => secret.trim().to_owned(),
            None => load_or_create_secret(&data_dir.join(WEBHOOK_KEY_FILE))?,
        };
        Self::from_secret(secret.as_bytes())
    }

    pub fn from_secret(secret: &[u8]) -> Result<Self, String> {
        let derive_failed = |_| "cannot derive the webhook sealing key".to_owned();
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, b"plaza webhook-key").extract(secret);
        let key = UnboundKey::from(
            prk.expand(&[b"sealing"], &AES_256_GCM)
                .map_err(derive_failed)?,
        );
        let mut id = [0u8; KEY_ID_BYTES];
        prk.expand(&[b"key id"], KeyIdLength)
            .and_then(|okm| okm.fill(&mut id))
            .map_err(derive_failed)?;
        Ok(WebhookKey {
            key: LessSafeKey::new(key),
            key_id: URL_SAFE_NO_PAD.encode(id),
        })
    }

    /// Seals `secret`: `v1.<key id>.<nonce and ciphertext>`.
    pub fn seal(&self, secret: &str) -> Result<String, String> {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        let mut sealed = secret.as_bytes().to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(CONTEXT),
                &mut sealed,
            )
            .map_err(|_| "cannot seal a webhook secret".to_owned())?;
        let mut payload = nonce.to_vec();
        payload.extend_from_slice(&sealed);
        Ok(format!(
            "{SEALED_VERSION}.{}.{}",
            self.key_id,
            URL_SAFE_NO_PAD.encode(payload)
        ))
    }

    /// Opens what [`WebhookKey::seal`] sealed.
    pub fn open(&self, sealed: &str) -> Result<String, String> {
        let unreadable = || "a webhook secret cannot be read".to_owned();
        let mut parts = sealed.splitn(3, '.');
        let (Some(SEALED_VERSION), Some(key_id), Some(payload)) =
            (parts.next(), parts.next(), parts.next())
        else {
            return Err(unreadable());
        };
        if key_id != self.key_id {
            return Err(format!(
                "a webhook secret was sealed with another webhook key (key id {key_id}; this \
                 instance's is {}): give every instance the same `webhook_key`",
                self.key_id
            ));
        }
        let mut payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| unreadable())?;
        if payload.len() < NONCE_LEN {
            return Err(unreadable());
        }
        let mut sealed = payload.split_off(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(&payload).map_err(|_| unreadable())?;
        let opened = self
            .key
            .open_in_place(nonce, Aad::from(CONTEXT), &mut sealed)
            .map_err(|_| unreadable())?;
        String::from_utf8(opened.to_vec()).map_err(|_| unreadable())
    }
}

/// The length of a key id, for HKDF.
struct KeyIdLength;

impl hkdf::KeyType for KeyIdLength {
    fn len(&self) -> usize {
        KEY_ID_BYTES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_secrets_open_under_their_key_only() {
        let key = WebhookKey::from_secret(b"0123456789abcdef0123456789abcdef").unwrap();
        let sealed = key.seal("whsec_abc").unwrap();
        assert!(!sealed.contains("whsec_abc"));
        assert_eq!(key.open(&sealed).unwrap(), "whsec_abc");
        assert_ne!(key.seal("whsec_abc").unwrap(), sealed, "a fresh nonce");
        let other = WebhookKey::from_secret(b"another key, another key, another").unwrap();
        assert!(
            other
                .open(&sealed)
                .unwrap_err()
                .contains("another webhook key")
        );
        assert!(key.open("garbage").is_err());
    }
}
