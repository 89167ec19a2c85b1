//! Password hashing with Argon2id, off the async runtime.

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher as _, PasswordVerifier as _, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

use crate::error::AppError;

/// Hashes and verifies passwords. Work runs on the blocking pool because one
/// hash takes tens to hundreds of milliseconds of CPU.
#[derive(Clone)]
pub struct Passwords {
    params: Params,
    /// Verified against when the account does not exist, so an unknown email
    /// costs the same time as a wrong password.
    decoy_hash: String,
}

/// Shortest password accepted at sign-up.
pub const MIN_PASSWORD_LENGTH: usize = 8;
/// Longest accepted: bounds the hashing work one request can cause.
pub const MAX_PASSWORD_LENGTH: usize = 256;

impl Passwords {
    pub fn new(memory_kib: u32, iterations: u32, parallelism: u32) -> Result<Self, String> {
        let params = Params::new(memory_kib, iterations, parallelism, None)
            .map_err(|error| format!("invalid Argon2 parameters: {error}"))?;
        let decoy_hash = hash_with(&params, "decoy password for timing equality")?;
        Ok(Passwords { params, decoy_hash })
    }

    pub async fn hash(&self, password: &str) -> Result<String, AppError> {
        let params = self.params.clone();
        let password = password.to_owned();
        tokio::task::spawn_blocking(move || hash_with(&params, &password))
            .await
            .map_err(AppError::internal)?
            .map_err(AppError::internal)
    }

    /// Whether `password` matches `hash`; with no hash (unknown user, or a
    /// user without a password) it does the same work and answers false.
    pub async fn verify(&self, password: &str, hash: Option<&str>) -> Result<bool, AppError> {
        let (hash, real) = match hash {
            Some(hash) => (hash.to_owned(), true),
            None => (self.decoy_hash.clone(), false),
        };
        let password = password.to_owned();
        let matched = tokio::task::spawn_blocking(move || {
            PasswordHash::new(&hash)
                .map(|parsed| {
                    Argon2::default()
                        .verify_password(password.as_bytes(), &parsed)
                        .is_ok()
                })
                .unwrap_or(false)
        })
        .await
        .map_err(AppError::internal)?;
        Ok(real && matched)
    }
}

fn hash_with(params: &Params, password: &str) -> Result<String, String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params.clone())
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|error| format!("password hashing failed: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hashes_verify_and_unknown_users_never_match() {
        let passwords = Passwords::new(1024, 1, 1).unwrap();
        let hash = passwords.hash("correct horse").await.unwrap();
        assert!(hash.starts_with("$argon2id$"));
        assert!(
            passwords
                .verify("correct horse", Some(&hash))
                .await
                .unwrap()
        );
        assert!(!passwords.verify("wrong horse", Some(&hash)).await.unwrap());
        assert!(
            !passwords
                .verify("decoy password for timing equality", None)
                .await
                .unwrap()
        );
    }
}
