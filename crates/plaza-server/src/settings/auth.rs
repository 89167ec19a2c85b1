//! Settings of one section: sign-up, sign-in, sessions, admin tokens,
//! two-factor sign-in and password hashing.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::error::{SettingsError, at_least_one};

/// Sign-up, sign-in, sessions, admin tokens, two-factor sign-in and
/// password hashing.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AuthSettings {
    /// Open sign-up through `POST /api/users`.
    pub signup: bool,
    /// Session lifetime; it slides forward while the session is used.
    pub session_ttl_secs: u64,
    /// The longest a session lives after sign-in, however much it is used.
    pub session_max_lifetime_secs: u64,
    /// HS256 key for admin JWTs (at least 32 characters). Unset: generated
    /// once and kept in the data directory. Set it when running several
    /// instances, so they all accept each other's tokens.
    pub jwt_secret: Option<String>,
    /// Lifetime of admin JWTs, and the longest a caller may ask for.
    pub admin_token_ttl_secs: u64,
    /// The key that seals two-factor (TOTP) secrets in the database (at
    /// least 32 characters). Unset: generated once and kept in the data
    /// directory. Set it when running several instances, so each reads the
    /// secrets the others stored.
    pub totp_key: Option<String>,
    /// Admin tokens and the admin surfaces only for administrators who have
    /// two-factor sign-in (TOTP) turned on.
    pub admin_totp_required: bool,
    /// Argon2id memory cost in KiB.
    pub password_hash_memory_kib: u32,
    /// Argon2id passes.
    pub password_hash_iterations: u32,
    /// Memory that concurrent password hashes may hold in all, in MiB: it
    /// bounds how many run at once (permits × `password_hash_memory_kib`).
    pub password_hash_memory_budget_mib: u64,
    /// Hashes that may run at once; 0 sizes it from the cores, within the budget.
    pub password_hash_max_concurrent: usize,
    /// How long a sign-up or sign-in waits for a hashing slot before 503.
    pub password_hash_wait_ms: u64,
    /// Failed sign-ins per account or address before sign-in is refused (429).
    pub sign_in_max_failures: u32,
    /// How long failures are counted, and how long the refusal lasts.
    pub sign_in_lockout_secs: u64,
    /// Identity providers (OAuth 2.0 / OpenID Connect).
    pub auth_providers: Vec<super::providers::ProviderSettings>,
    /// How often timed bans that have run out are lifted (one instance of
    /// a cluster does it): a ban ends at most this long after its time.
    pub ban_expiry_interval_secs: u64,
    /// How long the sign-in log (the admin user-activity report's
    /// sign-ins) keeps an entry.
    pub sign_in_retention_days: u64,
}

impl Default for AuthSettings {
    fn default() -> Self {
        AuthSettings {
            signup: true,
            session_ttl_secs: 30 * 24 * 3600,
            session_max_lifetime_secs: 90 * 24 * 3600,
            jwt_secret: None,
            admin_token_ttl_secs: 3600,
            totp_key: None,
            admin_totp_required: false,
            password_hash_memory_kib: 65_536,
            password_hash_iterations: 2,
            password_hash_memory_budget_mib: 256,
            password_hash_max_concurrent: 0,
            password_hash_wait_ms: 5000,
            sign_in_max_failures: 5,
            sign_in_lockout_secs: 900,
            auth_providers: Vec::new(),
            ban_expiry_interval_secs: 30,
            sign_in_retention_days: 90,
        }
    }
}

impl AuthSettings {
    pub(super) fn validate(&self) -> Result<(), SettingsError> {
        if let Some(secret) = &self.jwt_secret
            && secret.len() < crate::secrets::MIN_SECRET_LENGTH
        {
            return Err(SettingsError::new(
                "jwt_secret",
                format!(
                    "must be at least {} characters",
                    crate::secrets::MIN_SECRET_LENGTH
                ),
            ));
        }
        if let Some(key) = &self.totp_key
            && key.len() < crate::secrets::MIN_SECRET_LENGTH
        {
            return Err(SettingsError::new(
                "totp_key",
                format!(
                    "must be at least {} characters",
                    crate::secrets::MIN_SECRET_LENGTH
                ),
            ));
        }
        at_least_one([
            ("session_ttl_secs", self.session_ttl_secs),
            ("session_max_lifetime_secs", self.session_max_lifetime_secs),
            ("admin_token_ttl_secs", self.admin_token_ttl_secs),
            ("sign_in_lockout_secs", self.sign_in_lockout_secs),
            ("ban_expiry_interval_secs", self.ban_expiry_interval_secs),
            ("sign_in_retention_days", self.sign_in_retention_days),
        ])?;
        if self.password_hash_memory_kib < 8 || self.password_hash_iterations == 0 {
            return Err(SettingsError::new(
                "password_hash_memory_kib",
                "Argon2 needs at least 8 KiB and 1 iteration",
            ));
        }
        self.password_hashing_limits()
            .map_err(|problem| SettingsError::new("password_hash_memory_budget_mib", problem))?;
        for provider in &self.auth_providers {
            provider
                .validate()
                .map_err(|problem| SettingsError::new("auth_providers", problem))?;
        }
        Ok(())
    }

    /// How many password hashes may run at once, and how long a request
    /// waits for one.
    pub fn password_hashing_limits(&self) -> Result<HashingLimits, String> {
        HashingLimits::sized(
            self.password_hash_max_concurrent,
            self.password_hash_memory_budget_mib.saturating_mul(1024),
            self.password_hash_memory_kib,
            Duration::from_millis(self.password_hash_wait_ms),
        )
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
