//! Settings of one section: rate limits and the client address they count by.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{SettingsError, at_least_one};
use crate::http::rate_limit::gcra::Quota;

/// Rate limits and the client address they count by.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LimitSettings {
    /// `false` turns every rate limit off (tests, benchmarks); the sign-in
    /// throttle (`sign_in_max_failures`) stays on.
    pub rate_limits_enabled: bool,
    /// Requests per client address without a session or admin token.
    pub rate_limit_anonymous: Quota,
    /// Requests per signed-in user (session or admin token).
    pub rate_limit_authenticated: Quota,
    /// Versioned admin requests per admin, tier `general`.
    pub rate_limit_admin: Quota,
    /// Versioned admin requests per admin whose token holds `admin:super`.
    pub rate_limit_admin_super: Quota,
    /// Versioned admin system actions (maintenance) per admin, tier
    /// `system`, whatever the token holds.
    pub rate_limit_admin_system: Quota,
    /// Analytics events per signed-in user (each event of a batch counts).
    pub rate_limit_analytics: Quota,
    /// Requests of the unversioned admin user list per admin.
    pub rate_limit_admin_user_list: Quota,
    /// Requests that mail a link (password forgotten, password reset,
    /// verification mail resent) per client address, or per user when
    /// signed in: a budget of their own.
    pub rate_limit_account_mail: Quota,
    /// The same requests per email address they name (for a resend, the
    /// address of the account) and client address: strangers elsewhere do
    /// not spend the owner's budget.
    pub rate_limit_account_mail_per_email: Quota,
    /// The same requests per email address from all clients together: how
    /// much mail one mailbox gets at most.
    pub rate_limit_account_mail_email_ceiling: Quota,
    /// Clients the in-process limiter tracks at most; beyond it, new
    /// clients share one count until old ones expire.
    pub rate_limit_max_keys: usize,
    /// Shares rate-limit counts between instances.
    pub redis_url: Option<String>,
    /// The CA certificates (PEM) a `rediss://` server's certificate must
    /// chain to, for a Redis whose CA the system does not trust.
    pub redis_ca_file: Option<PathBuf>,
    /// How long a request waits for Redis before the limiter fails in its
    /// documented direction.
    pub redis_timeout_ms: u64,
    /// Proxies (addresses or CIDR ranges) whose `Forwarded` or
    /// `X-Forwarded-For` names the client; from anyone else those headers
    /// are ignored.
    pub trusted_proxies: Vec<String>,
    /// How long an admin's edit lock on a user or post lasts when its
    /// holder never releases it (a crash); another admin's write of the
    /// resource meanwhile is 423 `RESOURCE_LOCKED`.
    pub admin_lock_ttl_secs: u64,
}

impl Default for LimitSettings {
    fn default() -> Self {
        LimitSettings {
            rate_limits_enabled: true,
            rate_limit_anonymous: Quota::per_hour(100),
            rate_limit_authenticated: Quota::per_hour(1000),
            rate_limit_admin: Quota::per_hour(5000),
            rate_limit_admin_super: Quota::per_hour(10_000),
            rate_limit_admin_system: Quota::per_hour(100),
            rate_limit_analytics: Quota {
                count: 100,
                period: std::time::Duration::from_secs(60),
            },
            rate_limit_admin_user_list: Quota::per_hour(100),
            rate_limit_account_mail: Quota::per_hour(10),
            rate_limit_account_mail_per_email: Quota::per_hour(5),
            rate_limit_account_mail_email_ceiling: Quota::per_hour(20),
            rate_limit_max_keys: 1_000_000,
            redis_url: None,
            redis_ca_file: None,
            redis_timeout_ms: 100,
            trusted_proxies: Vec::new(),
            admin_lock_ttl_secs: 30,
        }
    }
}

impl LimitSettings {
    /// How long an admin's edit lock on a resource lasts at most
    /// (`admin_lock_ttl_secs`).
    pub fn admin_lock_ttl(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.admin_lock_ttl_secs)
    }

    pub(super) fn validate(&self) -> Result<(), SettingsError> {
        crate::http::rate_limit::address::TrustedProxies::parse(&self.trusted_proxies)
            .map_err(|problem| SettingsError::new("trusted_proxies", problem))?;
        match (&self.redis_url, &self.redis_ca_file) {
            (Some(url), ca_file) => {
                crate::http::rate_limit::shared::redis_client(url, ca_file.as_deref())
                    .map_err(|error| SettingsError::new(error.setting, error.problem))?;
            }
            (None, Some(_)) => {
                return Err(SettingsError::new(
                    "redis_ca_file",
                    "is set, but redis_url is not",
                ));
            }
            (None, None) => {}
        }
        at_least_one([
            ("rate_limit_max_keys", self.rate_limit_max_keys),
            (
                "admin_lock_ttl_secs",
                usize::try_from(self.admin_lock_ttl_secs).unwrap_or(usize::MAX),
            ),
            (
                "redis_timeout_ms",
                usize::try_from(self.redis_timeout_ms).unwrap_or(usize::MAX),
            ),
        ])
    }
}
