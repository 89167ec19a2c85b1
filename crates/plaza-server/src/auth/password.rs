//! Password hashing with Argon2id, off the async runtime, with a bound on
//! how many hashes run at once: each one holds `password_hash_memory_kib`
//! for its whole run, and anyone can start one (sign-up, sign-in), so
//! without the bound a burst of requests exhausts the host's memory.

use std::sync::Arc;
use std::time::Duration;

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher as _, PasswordVerifier as _, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

use tokio::sync::Semaphore;

use crate::error::AppError;

/// Hashes and verifies passwords. Work runs on the blocking pool because one
/// hash takes tens to hundreds of milliseconds of CPU.
#[derive(Clone)]
pub struct Passwords {
    params: Params,
    /// Verified against when the account does not exist, so an unknown email
    /// costs the same time as a wrong password.
    decoy_hash: String,
    /// One permit per hash that may run at once; permits × memory cost stays
    /// within the configured budget.
    permits: Arc<Semaphore>,
    /// How long a request waits for a permit before it is answered 503.
    wait: Duration,
}

/// How many hashes may run at once and how long a request waits for one.
#[derive(Debug, Clone, Copy)]
pub struct HashingLimits {
    pub concurrent: usize,
    pub wait: Duration,
}

impl HashingLimits {
    /// The permits for a memory `budget_kib`: the configured number, or with
    /// `configured` 0 as many as there are cores, never more than the budget
    /// holds. Fails when the budget cannot hold even one hash.
    pub fn sized(
        configured: usize,
        budget_kib: u64,
        memory_kib: u32,
        wait: Duration,
    ) -> Result<Self, String> {
        let fit = usize::try_from(budget_kib / u64::from(memory_kib.max(1))).unwrap_or(usize::MAX);
        if fit == 0 {
            return Err(format!(
                "one hash needs {memory_kib} KiB, more than the budget of {budget_kib} KiB"
            ));
        }
        let concurrent = match configured {
            0 => std::thread::available_parallelism()
                .map(usize::from)
                .unwrap_or(1)
                .min(fit),
            wanted if wanted > fit => {
                return Err(format!(
                    "{wanted} concurrent hashes of {memory_kib} KiB exceed the budget of {budget_kib} KiB (at most {fit})"
                ));
            }
            wanted => wanted,
        };
        Ok(HashingLimits { concurrent, wait })
    }
}

/// What a busy server tells a client to wait before trying again.
const BUSY_RETRY_AFTER_SECS: u64 = 2;

/// Shortest password accepted at sign-up.
pub const MIN_PASSWORD_LENGTH: usize = 8;
/// Longest accepted: bounds the hashing work one request can cause.
pub const MAX_PASSWORD_LENGTH: usize = 256;

impl Passwords {
    pub fn new(
        memory_kib: u32,
        iterations: u32,
        parallelism: u32,
        limits: HashingLimits,
    ) -> Result<Self, String> {
        let params = Params::new(memory_kib, iterations, parallelism, None)
            .map_err(|error| format!("invalid Argon2 parameters: {error}"))?;
        let decoy_hash = hash_with(&params, "decoy password for timing equality")?;
        Ok(Passwords {
            params,
            decoy_hash,
            permits: Arc::new(Semaphore::new(limits.concurrent)),
            wait: limits.wait,
        })
    }

    /// A permit to hash, or 503 with `Retry-After` when none frees up in time.
    async fn permit(&self) -> Result<tokio::sync::OwnedSemaphorePermit, AppError> {
        match tokio::time::timeout(self.wait, self.permits.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            _ => {
                metrics::counter!("password_hash_rejected_total").increment(1);
                Err(AppError::Busy {
                    retry_after_secs: BUSY_RETRY_AFTER_SECS,
                })
            }
        }
    }

    pub async fn hash(&self, password: &str) -> Result<String, AppError> {
        let permit = self.permit().await?;
        let params = self.params.clone();
        let password = password.to_owned();
        tokio::task::spawn_blocking(move || {
            let hashed = hash_with(&params, &password);
            drop(permit);
            hashed
        })
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
        let permit = self.permit().await?;
        let matched = tokio::task::spawn_blocking(move || {
            let matched = PasswordHash::new(&hash)
                .map(|parsed| {
                    Argon2::default()
                        .verify_password(password.as_bytes(), &parsed)
                        .is_ok()
                })
                .unwrap_or(false);
            drop(permit);
            matched
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

    fn limits(concurrent: usize) -> HashingLimits {
        HashingLimits {
            concurrent,
            wait: Duration::from_millis(50),
        }
    }

    #[tokio::test]
    async fn hashes_verify_and_unknown_users_never_match() {
        let passwords = Passwords::new(1024, 1, 1, limits(1)).unwrap();
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

    #[test]
    fn permits_fit_the_memory_budget() {
        let wait = Duration::from_secs(1);
        let auto = HashingLimits::sized(0, 256 * 1024, 65_536, wait).unwrap();
        assert!((1..=4).contains(&auto.concurrent), "{}", auto.concurrent);
        assert_eq!(
            HashingLimits::sized(3, 256 * 1024, 65_536, wait)
                .unwrap()
                .concurrent,
            3
        );
        assert!(HashingLimits::sized(5, 256 * 1024, 65_536, wait).is_err());
        assert!(HashingLimits::sized(0, 32 * 1024, 65_536, wait).is_err());
    }

    #[tokio::test]
    async fn a_hash_waiting_past_its_time_is_refused_as_busy() {
        let passwords = Passwords::new(1024, 1, 1, limits(1)).unwrap();
        let held = passwords.permits.clone().acquire_owned().await.unwrap();
        assert!(matches!(
            passwords.hash("correct horse").await,
            Err(AppError::Busy { .. })
        ));
        drop(held);
        assert!(passwords.hash("correct horse").await.is_ok());
    }
}
