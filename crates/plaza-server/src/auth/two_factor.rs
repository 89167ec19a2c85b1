//! Two-factor sign-in with TOTP (RFC 6238: HMAC-SHA-1, 6 digits, 30-second
//! steps, one step of clock drift either way): new secrets and their
//! `otpauth://` URLs, reading and checking submitted codes, recovery codes,
//! and the key that seals secrets before they reach the database, so a
//! copy of the database alone yields no usable secret.

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use plaza_domain::Database;
use plaza_domain::two_factor;
use rand::{Rng, RngCore};
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::hkdf;
use totp_rs::{Algorithm, TOTP};

use crate::http::error::AppError;
use crate::secrets::{hash_token, load_or_create_secret};

/// Digits of a code.
const DIGITS: usize = 6;
/// Seconds of one time step.
const STEP_SECS: u64 = 30;
/// Bytes of a new secret: the 160 bits RFC 4226 recommends.
const SECRET_BYTES: usize = 20;
/// Recovery codes a user gets when TOTP is turned on.
pub const RECOVERY_CODE_COUNT: usize = 10;
/// Characters of a recovery code, in four groups of four.
const RECOVERY_CODE_CHARS: usize = 16;
/// What recovery codes are written with: digits and lower-case letters
/// without those that read alike (`0`/`o`, `1`/`l`/`i`), about 79 bits for
/// a code.
const RECOVERY_ALPHABET: &[u8] = b"23456789abcdefghjkmnpqrstuvwxyz";
/// The longest submitted code read at all.
const MAX_SUBMITTED_CODE_CHARS: usize = 64;
/// The version of the sealed form, first in every sealed secret.
const SEALED_VERSION: &str = "v1";

/// Bytes of a key's id.
const KEY_ID_BYTES: usize = 6;

/// The key sealing TOTP secrets (AES-256-GCM, derived by HKDF-SHA-256 from
/// the configured or generated key), and the short id that names it in
/// every secret it seals, so an instance with another key says so instead
/// of failing without a reason.
pub struct TotpKey {
    key: LessSafeKey,
    key_id: String,
}

impl TotpKey {
    /// Uses `secret` when set; otherwise the key kept in
    /// `<data_dir>/totp-key`, generated on first start.
    pub fn load(secret: Option<&str>, data_dir: &Path) -> Result<Self, String> {
        let secret = match secret {
            Some(secret) => secret.to_owned(),
            None => load_or_create_secret(&data_dir.join("totp-key"))?,
        };
        Self::from_secret(secret.as_bytes())
    }

    pub fn from_secret(secret: &[u8]) -> Result<Self, String> {
        let derive_failed = |_| "cannot derive the TOTP sealing key".to_owned();
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, b"plaza totp-key").extract(secret);
        let key = UnboundKey::from(
            prk.expand(&[b"sealing"], &AES_256_GCM)
                .map_err(derive_failed)?,
        );
        let mut id = [0u8; KEY_ID_BYTES];
        prk.expand(&[b"key id"], KeyIdLength)
            .and_then(|okm| okm.fill(&mut id))
            .map_err(derive_failed)?;
        Ok(TotpKey {
            key: LessSafeKey::new(key),
            key_id: URL_SAFE_NO_PAD.encode(id),
        })
    }

    /// Seals `secret` for `user_id`: `v1.<key id>.<nonce and ciphertext>`.
    /// The user id is bound in, so a sealed secret copied to another user's
    /// row does not open.
    pub fn seal(&self, user_id: i64, secret: &[u8]) -> Result<String, AppError> {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        let mut sealed = secret.to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(user_id.to_be_bytes()),
                &mut sealed,
            )
            .map_err(|_| AppError::internal("cannot seal a TOTP secret"))?;
        let mut payload = nonce.to_vec();
        payload.extend_from_slice(&sealed);
        Ok(format!(
            "{SEALED_VERSION}.{}.{}",
            self.key_id,
            URL_SAFE_NO_PAD.encode(payload)
        ))
    }

    /// Opens what [`TotpKey::seal`] sealed for `user_id`.
    pub fn open(&self, user_id: i64, sealed: &str) -> Result<Vec<u8>, AppError> {
        let unreadable =
            || AppError::internal(format!("the TOTP secret of user {user_id} cannot be read"));
        let mut parts = sealed.splitn(3, '.');
        let (Some(SEALED_VERSION), Some(key_id), Some(payload)) =
            (parts.next(), parts.next(), parts.next())
        else {
            return Err(unreadable());
        };
        if key_id != self.key_id {
            return Err(AppError::internal(format!(
                "the TOTP secret of user {user_id} was sealed with another TOTP key \
                 (key id {key_id}; this instance's is {}): give every instance the same \
                 `totp_key`",
                self.key_id
            )));
        }
        let mut payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| unreadable())?;
        if payload.len() < NONCE_LEN {
            return Err(unreadable());
        }
        let mut sealed = payload.split_off(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(&payload).map_err(|_| unreadable())?;
        let opened = self
            .key
            .open_in_place(nonce, Aad::from(user_id.to_be_bytes()), &mut sealed)
            .map_err(|_| unreadable())?;
        Ok(opened.to_vec())
    }
}

/// The length of a key id, for HKDF.
struct KeyIdLength;

impl hkdf::KeyType for KeyIdLength {
    fn len(&self) -> usize {
        KEY_ID_BYTES
    }
}

/// A new random secret.
pub fn new_secret() -> Vec<u8> {
    let mut secret = vec![0u8; SECRET_BYTES];
    rand::rng().fill_bytes(&mut secret);
    secret
}

/// The code generator of `secret`, labelled for authenticator apps.
fn generator(secret: &[u8], issuer: &str, account: &str) -> TOTP {
    // Labels are `issuer:account`: a colon inside either would split it.
    let label = |text: &str| text.replace(':', " ");
    TOTP::new_unchecked(
        Algorithm::SHA1,
        DIGITS,
        0,
        STEP_SECS,
        secret.to_vec(),
        Some(label(issuer)),
        label(account),
    )
}

/// What a setup shows: the secret in base32 and the `otpauth://` URL that
/// authenticator apps read (from a QR code the client draws).
pub fn provisioning(secret: &[u8], issuer: &str, account: &str) -> (String, String) {
    let generator = generator(secret, issuer, account);
    (generator.get_secret_base32(), generator.get_url())
}

/// The current time step.
fn current_step() -> u64 {
    u64::try_from(plaza_domain::time::now_millis() / 1000).unwrap_or_default() / STEP_SECS
}

/// The time step whose code `code` is for `secret`: the current step or
/// one either side, later than `after` (the last step accepted).
pub fn matching_step(secret: &[u8], code: &str, after: Option<i64>) -> Option<i64> {
    let generator = generator(secret, "", "");
    let current = current_step();
    (current.saturating_sub(1)..=current + 1)
        .filter_map(|step| i64::try_from(step).ok().map(|signed| (step, signed)))
        .filter(|(_, signed)| after.is_none_or(|last| *signed > last))
        .find(|(step, _)| generator.check(code, step * STEP_SECS))
        .map(|(_, signed)| signed)
}

/// A submitted second factor, read.
#[derive(Debug, PartialEq, Eq)]
pub enum SubmittedCode {
    /// Six digits (spaces and dashes dropped).
    Current(String),
    /// A recovery code's hash, as stored.
    Recovery(String),
    /// Neither: no code can match.
    Malformed,
}

/// Reads a submitted code: spaces and dashes are dropped and letters
/// folded to lower case, so a code can be typed as it was shown or not.
pub fn read_code(submitted: &str) -> SubmittedCode {
    if submitted.chars().count() > MAX_SUBMITTED_CODE_CHARS {
        return SubmittedCode::Malformed;
    }
    let bare: String = submitted
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if bare.len() == DIGITS && bare.bytes().all(|byte| byte.is_ascii_digit()) {
        SubmittedCode::Current(bare)
    } else if bare.len() == RECOVERY_CODE_CHARS
        && bare.bytes().all(|byte| RECOVERY_ALPHABET.contains(&byte))
    {
        SubmittedCode::Recovery(hash_token(&bare))
    } else {
        SubmittedCode::Malformed
    }
}

/// New recovery codes, as shown to the user (`xxxx-xxxx-xxxx-xxxx`), with
/// the hashes that are stored instead of them.
pub fn new_recovery_codes() -> (Vec<String>, Vec<String>) {
    let mut random = rand::rng();
    (0..RECOVERY_CODE_COUNT)
        .map(|_| {
            let bare: String = (0..RECOVERY_CODE_CHARS)
                .map(|_| {
                    char::from(RECOVERY_ALPHABET[random.random_range(0..RECOVERY_ALPHABET.len())])
                })
                .collect();
            let shown = bare
                .as_bytes()
                .chunks(4)
                .map(|group| String::from_utf8_lossy(group).into_owned())
                .collect::<Vec<_>>()
                .join("-");
            (shown, hash_token(&bare))
        })
        .unzip()
}

/// Checks `code` for `user_id`, whose TOTP is on, and uses it up: a code
/// of the current step or one either side, later than the last one
/// accepted, or an unused recovery code. `key` opens the stored secret.
/// Answers whether it was accepted.
pub async fn use_code(
    db: &Database,
    key: &TotpKey,
    user_id: i64,
    code: &str,
) -> Result<bool, AppError> {
    let accepted = match read_code(code) {
        SubmittedCode::Malformed => false,
        SubmittedCode::Recovery(code_hash) => {
            db.write(|tx| {
                Box::pin(
                    async move { two_factor::use_recovery_code(tx, user_id, &code_hash).await },
                )
            })
            .await?
        }
        SubmittedCode::Current(code) => {
            let Some(stored) = db
                .totp_secret(user_id)
                .await?
                .filter(|stored| stored.enabled)
            else {
                return Ok(false);
            };
            let secret = key.open(user_id, &stored.sealed)?;
            match matching_step(&secret, &code, stored.last_step) {
                None => false,
                Some(step) => {
                    db.write(|tx| {
                        Box::pin(async move { two_factor::accept_step(tx, user_id, step).await })
                    })
                    .await?
                }
            }
        }
    };
    Ok(accepted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(secret: &[u8]) -> TotpKey {
        TotpKey::from_secret(secret).unwrap()
    }

    #[test]
    fn sealed_secrets_open_for_their_user_under_their_key_only() {
        let sealing = key(b"0123456789abcdef0123456789abcdef");
        let secret = new_secret();
        let sealed = sealing.seal(7, &secret).unwrap();
        assert!(!sealed.contains(&URL_SAFE_NO_PAD.encode(&secret)));
        assert_eq!(sealing.open(7, &sealed).unwrap(), secret);
        assert_ne!(
            sealing.seal(7, &secret).unwrap(),
            sealed,
            "a fresh nonce each time"
        );
        assert!(sealing.open(8, &sealed).is_err(), "bound to the user");
        let other = key(b"fedcba9876543210fedcba9876543210");
        let refused = match other.open(7, &sealed) {
            Err(AppError::Internal(cause)) => cause,
            other => panic!("{other:?}"),
        };
        assert!(refused.contains("another TOTP key"), "{refused}");
        assert!(sealing.open(7, "v1.x.AAAA").is_err());
        assert!(sealing.open(7, "garbage").is_err());
    }

    #[test]
    fn the_generated_key_is_kept_across_loads() {
        let dir = tempfile::tempdir().unwrap();
        let first = TotpKey::load(None, dir.path()).unwrap();
        let second = TotpKey::load(None, dir.path()).unwrap();
        let sealed = first.seal(1, b"secret").unwrap();
        assert_eq!(second.open(1, &sealed).unwrap(), b"secret");
    }

    #[test]
    fn codes_of_the_window_match_once_in_order() {
        let secret = new_secret();
        let generator = generator(&secret, "Plaza", "a@b.c");
        let now = current_step();
        let code = generator.generate(now * STEP_SECS);
        let step = i64::try_from(now).unwrap();
        // Right at a step boundary the code may have been computed for the
        // step before; either way it is within the window.
        let found = matching_step(&secret, &code, None).unwrap();
        assert!((step - 1..=step).contains(&found));
        assert_eq!(matching_step(&secret, &code, Some(found)), None);
        let too_old = generator.generate((now - 3) * STEP_SECS);
        if too_old != code {
            assert_eq!(matching_step(&secret, &too_old, None), None);
        }
    }

    #[test]
    fn submitted_codes_are_read_as_typed() {
        assert_eq!(
            read_code(" 123 456 "),
            SubmittedCode::Current("123456".to_owned())
        );
        let (shown, hashes) = new_recovery_codes();
        assert_eq!(shown.len(), RECOVERY_CODE_COUNT);
        assert_eq!(shown[0].len(), 19);
        assert_eq!(
            read_code(&shown[0].to_uppercase()),
            SubmittedCode::Recovery(hashes[0].clone())
        );
        assert_eq!(read_code("12345"), SubmittedCode::Malformed);
        assert_eq!(read_code(&"2".repeat(100)), SubmittedCode::Malformed);
        assert_eq!(read_code("0000-1111-iiii-oooo"), SubmittedCode::Malformed);
    }

    #[test]
    fn provisioning_names_the_issuer_and_account() {
        let (secret, url) = provisioning(&[0u8; 20], "My: Plaza", "ada@example.com");
        assert_eq!(secret, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
        assert!(
            url.starts_with("otpauth://totp/My%20%20Plaza:ada%40example.com?"),
            "{url}"
        );
        assert!(
            url.contains("secret=AAAA") && url.contains("issuer=My%20%20Plaza"),
            "{url}"
        );
    }
}
