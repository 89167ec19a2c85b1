//! Random tokens (sessions, OAuth state, mail files) and their stored
//! hashes, and the secrets Plaza generates once and keeps in its data
//! directory (the admin token key, the TOTP sealing key, the analytics salt).

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// Shortest secret accepted: a configured key (`jwt_secret`, `totp_key`)
/// or one kept in the data directory.
pub const MIN_SECRET_LENGTH: usize = 32;

/// 32 random bytes, URL-safe: unguessable, fit for cookies and query strings.
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// What the database keeps instead of the token.
pub fn hash_token(token: &str) -> String {
    let digest = Sha256::digest(token.as_bytes());
    URL_SAFE_NO_PAD.encode(digest)
}

/// The secret kept in the file at `path`, generated and written there
/// (readable by its owner only) on first use.
pub fn load_or_create_secret(path: &Path) -> Result<String, String> {
    match std::fs::read_to_string(path) {
        Ok(secret) if secret.trim().len() >= MIN_SECRET_LENGTH => {
            return Ok(secret.trim().to_owned());
        }
        Ok(_) => {
            return Err(format!(
                "{} is too short to be a signing key",
                path.display()
            ));
        }
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!("cannot read {}: {error}", path.display()));
        }
        Err(_) => {}
    }
    let secret = format!("{}{}", random_token(), random_token());
    write_private(path, &secret)
        .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    // Another instance sharing the data directory may have won the race.
    std::fs::read_to_string(path)
        .map(|stored| stored.trim().to_owned())
        .map_err(|error| format!("cannot read {}: {error}", path.display()))
}

/// Creates the file readable by its owner only; an existing file is kept.
pub fn write_private(path: &Path, contents: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    match options.open(path) {
        Ok(mut file) => file.write_all(contents.as_bytes()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_and_hashes_stable() {
        let token = random_token();
        assert_ne!(token, random_token());
        assert_eq!(token.len(), 43);
        assert_eq!(hash_token(&token), hash_token(&token));
        assert_ne!(hash_token(&token), token);
    }

    #[test]
    fn the_generated_secret_is_kept_across_loads() {
        let dir = tempfile::tempdir().unwrap();
        let first = load_or_create_secret(&dir.path().join("jwt-secret")).unwrap();
        let second = load_or_create_secret(&dir.path().join("jwt-secret")).unwrap();
        assert_eq!(first, second);
        assert!(first.len() >= MIN_SECRET_LENGTH);
    }
}
