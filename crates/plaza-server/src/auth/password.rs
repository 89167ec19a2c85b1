//! Password hashing with Argon2id, off the async runtime, with a bound on
//! how many hashes run at once: each one holds `password_hash_memory_kib`
//! for its whole run, and anyone can start one (sign-up, sign-in), so
//! without the bound a burst of requests exhausts the host's memory.

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher as _, PasswordVerifier as _, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

use crate::http::error::AppError;
use crate::services::blocking::{BlockingSlots, SlotError};
use crate::settings::HashingLimits;

/// Hashes and verifies passwords. Work runs on the blocking pool because one
/// hash takes tens to hundreds of milliseconds of CPU.
#[derive(Clone)]
pub struct Passwords {
    params: Params,
    /// Verified against when the account does not exist, so an unknown email
    /// costs the same time as a wrong password.
    decoy_hash: String,
    /// One slot per hash that may run at once; slots × memory cost stays
    /// within the configured budget. A request waits `wait` of
    /// [`HashingLimits`] for one, then is answered 503.
    slots: BlockingSlots,
}

/// What a busy server tells a client to wait before trying again.
const BUSY_RETRY_AFTER_SECS: u64 = 2;

/// Shortest password accepted at sign-up.
pub const MIN_PASSWORD_LENGTH: usize = 8;
/// Longest accepted: bounds the hashing work one request can cause.
pub const MAX_PASSWORD_LENGTH: usize = 256;

/// Checks a new password against the length rules.
pub fn check_password(password: &str) -> Result<(), AppError> {
    check_new_password("password", password)
}

/// Checks the new password in `field` against the length rules.
pub fn check_new_password(field: &str, password: &str) -> Result<(), AppError> {
    let length = password.chars().count();
    if length < MIN_PASSWORD_LENGTH {
        return Err(AppError::invalid(
            field,
            format!("must be at least {MIN_PASSWORD_LENGTH} characters"),
        ));
    }
    if password.len() > MAX_PASSWORD_LENGTH {
        return Err(AppError::invalid(
            field,
            format!("must be at most {MAX_PASSWORD_LENGTH} bytes"),
        ));
    }
    Ok(())
}

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
            slots: BlockingSlots::new(limits.concurrent, limits.wait),
        })
    }

    /// Runs `work` in a hashing slot, or answers 503 with `Retry-After`
    /// when none frees up in time.
    async fn in_slot<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, AppError> {
        self.slots.run(work).await.map_err(|error| match error {
            SlotError::Busy => {
                metrics::counter!("password_hash_rejected_total").increment(1);
                AppError::Busy {
                    retry_after_secs: BUSY_RETRY_AFTER_SECS,
                }
            }
            SlotError::Panicked(error) => AppError::internal(error),
        })
    }

    pub async fn hash(&self, password: &str) -> Result<String, AppError> {
        let params = self.params.clone();
        let password = password.to_owned();
        self.in_slot(move || hash_with(&params, &password))
            .await?
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
        let matched = self
            .in_slot(move || {
                PasswordHash::new(&hash)
                    .map(|parsed| {
                        Argon2::default()
                            .verify_password(password.as_bytes(), &parsed)
                            .is_ok()
                    })
                    .unwrap_or(false)
            })
            .await?;
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
    use std::time::Duration;

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

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_hash_waiting_past_its_time_is_refused_as_busy() {
        let passwords = Passwords::new(1024, 1, 1, limits(1)).unwrap();
        let (started_tx, started) = tokio::sync::oneshot::channel();
        let (release, release_rx) = std::sync::mpsc::channel::<()>();
        let holder = passwords.clone();
        let held = tokio::spawn(async move {
            holder
                .in_slot(move || {
                    let _ = started_tx.send(());
                    let _ = release_rx.recv();
                })
                .await
        });
        started.await.unwrap();
        assert!(matches!(
            passwords.hash("correct horse").await,
            Err(AppError::Busy { .. })
        ));
        release.send(()).unwrap();
        held.await.unwrap().unwrap();
        assert!(passwords.hash("correct horse").await.is_ok());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_hash_keeps_its_slot_after_its_caller_is_gone() {
        // Costly enough that the hash is still running when it is checked.
        let passwords = Passwords::new(64 * 1024, 4, 1, limits(1)).unwrap();
        let caller = {
            let passwords = passwords.clone();
            tokio::spawn(async move { passwords.hash("correct horse").await })
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while passwords.slots.available() == 1 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the hash never started"
            );
            tokio::task::yield_now().await;
        }
        caller.abort();
        assert!(caller.await.unwrap_err().is_cancelled());
        assert_eq!(
            passwords.slots.available(),
            0,
            "the abandoned hash still runs in its slot"
        );
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while passwords.slots.available() == 0 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the slot never came back"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
