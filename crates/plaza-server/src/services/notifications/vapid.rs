//! The VAPID key of Web Push (RFC 8292): a P-256 key pair whose public half
//! browsers subscribe with (`GET /api/notifications/push/key`) and whose
//! private half signs the JWT of each push's `Authorization`. It comes from
//! `vapid_private_key`, else from `<data_dir>/vapid-key`, generated on
//! first start and archived by backups. A key derived from it (HKDF-SHA-256)
//! also signs the one-click unsubscribe links of notification mails, so
//! the install's one notification secret is this file.

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::elliptic_curve::sec1::ToEncodedPoint;
use p256::pkcs8::EncodePrivateKey;
use ring::{hkdf, hmac};
use serde::Serialize;

use crate::settings::parse_vapid_key;

/// The file of the generated key, in the data directory.
pub const VAPID_KEY_FILE: &str = "vapid-key";

/// How long a push's VAPID JWT is valid (RFC 8292 allows up to 24 hours).
const JWT_LIFETIME: Duration = Duration::from_secs(12 * 3600);

/// The VAPID key pair, ready to sign.
pub struct VapidKey {
    secret: p256::SecretKey,
    signing: EncodingKey,
    /// The uncompressed public point (65 bytes) in base64url.
    public: String,
    /// Signs unsubscribe links.
    links: hmac::Key,
}

#[derive(Serialize)]
struct VapidClaims<'a> {
    aud: &'a str,
    exp: i64,
    sub: &'a str,
}

impl VapidKey {
    /// `configured` when set; otherwise the key in
    /// `<data_dir>/vapid-key`, generated there on first start.
    pub fn load(configured: Option<&str>, data_dir: &Path) -> Result<Self, String> {
        let secret = match configured {
            Some(text) => {
                parse_vapid_key(text).map_err(|problem| format!("vapid_private_key {problem}"))?
            }
            None => load_or_generate(&data_dir.join(VAPID_KEY_FILE))?,
        };
        Self::new(secret)
    }

    fn new(secret: p256::SecretKey) -> Result<Self, String> {
        let der = secret
            .to_pkcs8_der()
            .map_err(|error| format!("cannot encode the VAPID key: {error}"))?;
        let public = URL_SAFE_NO_PAD.encode(
            secret
                .public_key()
                .as_affine()
                .to_encoded_point(false)
                .as_bytes(),
        );
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, b"plaza vapid-key")
            .extract(secret.to_bytes().as_slice());
        let links = hmac::Key::from(
            prk.expand(&[b"unsubscribe links"], hmac::HMAC_SHA256)
                .map_err(|_| "cannot derive the unsubscribe key".to_owned())?,
        );
        Ok(VapidKey {
            signing: EncodingKey::from_ec_der(der.as_bytes()),
            secret,
            public,
            links,
        })
    }

    /// The public key: the uncompressed P-256 point, base64url without
    /// padding (what browsers take as `applicationServerKey`).
    pub fn public_key(&self) -> &str {
        &self.public
    }

    /// The `Authorization` header of a push to `origin` (the endpoint's
    /// scheme, host and port): `vapid t=<JWT>, k=<public key>`.
    pub fn authorization(&self, origin: &str, subject: &str, now: i64) -> Result<String, String> {
        let claims = VapidClaims {
            aud: origin,
            exp: now.div_euclid(1000) + JWT_LIFETIME.as_secs() as i64,
            sub: subject,
        };
        let token = jsonwebtoken::encode(&Header::new(Algorithm::ES256), &claims, &self.signing)
            .map_err(|error| format!("cannot sign the VAPID JWT: {error}"))?;
        Ok(format!("vapid t={token}, k={}", self.public))
    }

    /// The MAC of an unsubscribe link's `message`.
    pub(super) fn sign_link(&self, message: &str) -> String {
        URL_SAFE_NO_PAD.encode(hmac::sign(&self.links, message.as_bytes()).as_ref())
    }

    /// Whether `mac` is the MAC of `message` (compared in constant time).
    pub(super) fn verify_link(&self, message: &str, mac: &str) -> bool {
        URL_SAFE_NO_PAD
            .decode(mac)
            .is_ok_and(|mac| hmac::verify(&self.links, message.as_bytes(), &mac).is_ok())
    }

    /// The private key's base64url, as the file holds it.
    fn encoded(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.secret.to_bytes())
    }
}

/// The key in the file at `path`, generated and written there (readable
/// by its owner only) on first use; another instance sharing the data
/// directory that wrote it first wins.
fn load_or_generate(path: &Path) -> Result<p256::SecretKey, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            return parse_vapid_key(&text)
                .map_err(|problem| format!("{} {problem}", path.display()));
        }
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!("cannot read {}: {error}", path.display()));
        }
        Err(_) => {}
    }
    let generated = VapidKey::new(p256::SecretKey::random(
        &mut p256::elliptic_curve::rand_core::OsRng,
    ))?;
    crate::secrets::write_private(path, &generated.encoded())
        .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    let stored = std::fs::read_to_string(path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    parse_vapid_key(&stored).map_err(|problem| format!("{} {problem}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_key_is_kept_and_its_public_half_is_an_uncompressed_point() {
        let dir = tempfile::tempdir().unwrap();
        let first = VapidKey::load(None, dir.path()).unwrap();
        let second = VapidKey::load(None, dir.path()).unwrap();
        assert_eq!(first.public_key(), second.public_key());
        let point = URL_SAFE_NO_PAD.decode(first.public_key()).unwrap();
        assert_eq!((point.len(), point[0]), (65, 4));
        let configured = VapidKey::load(Some(&first.encoded()), Path::new("/nonexistent")).unwrap();
        assert_eq!(configured.public_key(), first.public_key());
    }

    #[test]
    fn links_verify_only_with_their_own_message() {
        let dir = tempfile::tempdir().unwrap();
        let key = VapidKey::load(None, dir.path()).unwrap();
        let mac = key.sign_link("7.reply");
        assert!(key.verify_link("7.reply", &mac));
        assert!(!key.verify_link("7.mention", &mac));
        assert!(!key.verify_link("8.reply", &mac));
        assert!(!key.verify_link("7.reply", "not base64!"));
    }
}
