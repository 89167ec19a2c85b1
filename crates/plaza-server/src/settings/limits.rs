//! Settings of one section: rate limits and the client address they count by.

use std::path::{Path, PathBuf};

use redis::{ConnectionAddr, IntoConnectionInfo, TlsCertificates};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde::{Deserialize, Serialize};

use super::error::{SettingsError, at_least_one};
use super::proxies::TrustedProxies;
use super::quota::Quota;

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
        TrustedProxies::parse(&self.trusted_proxies)
            .map_err(|problem| SettingsError::new("trusted_proxies", problem))?;
        match (&self.redis_url, &self.redis_ca_file) {
            (Some(url), ca_file) => {
                redis_client(url, ca_file.as_deref())?;
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

/// The Redis client of `redis_url` (`url`: `redis://`, or `rediss://` for TLS). A `rediss://`
/// server's certificate must chain to a CA the system trusts or, with
/// `ca_file` (`redis_ca_file`), to the CA certificates in that PEM file. Skipping the check
/// (`#insecure`) is refused: whoever could answer in Redis's place could
/// lift every limit.
pub fn redis_client(url: &str, ca_file: Option<&Path>) -> Result<redis::Client, SettingsError> {
    let url_error = |error: redis::RedisError| SettingsError::new("redis_url", error.to_string());
    let info = url.into_connection_info().map_err(url_error)?;
    let tls = match info.addr() {
        ConnectionAddr::TcpTls { insecure: true, .. } => {
            return Err(SettingsError::new(
                "redis_url",
                "`#insecure` would skip checking Redis's certificate; give the CA that signed it in redis_ca_file instead",
            ));
        }
        ConnectionAddr::TcpTls { .. } => true,
        _ => false,
    };
    let Some(ca_file) = ca_file else {
        return redis::Client::open(info).map_err(url_error);
    };
    if !tls {
        return Err(SettingsError::new(
            "redis_ca_file",
            "is set, but redis_url is not a rediss:// (TLS) address",
        ));
    }
    let pem = std::fs::read(ca_file).map_err(|error| {
        SettingsError::new("redis_ca_file", format!("{}: {error}", ca_file.display()))
    })?;
    if CertificateDer::pem_slice_iter(&pem).next().is_none() {
        return Err(SettingsError::new(
            "redis_ca_file",
            format!("{} holds no PEM certificate", ca_file.display()),
        ));
    }
    redis::Client::build_with_tls(
        info,
        TlsCertificates {
            client_tls: None,
            root_cert: Some(pem),
        },
    )
    .map_err(|error| SettingsError::new("redis_ca_file", error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(url: &str, ca_file: Option<&Path>) -> SettingsError {
        redis_client(url, ca_file).expect_err("refused")
    }

    #[test]
    fn redis_settings_are_checked_before_any_connection() {
        let folder = tempfile::tempdir().expect("a folder");
        let empty = folder.path().join("empty.pem");
        std::fs::write(&empty, "no certificate here\n").expect("write");
        let missing = folder.path().join("missing.pem");

        assert!(redis_client("redis://127.0.0.1:6379", None).is_ok());
        assert!(redis_client("rediss://redis.example.com:6380", None).is_ok());
        assert!(
            refused("http://127.0.0.1", None)
                .setting
                .starts_with("`redis_url`")
        );
        let insecure = refused("rediss://127.0.0.1:6380/#insecure", None);
        assert!(
            insecure.setting.starts_with("`redis_url`"),
            "{}",
            insecure.setting
        );
        assert!(insecure.problem.contains("redis_ca_file"), "{insecure}");
        let plain = refused("redis://127.0.0.1:6379", Some(&empty));
        assert!(
            plain.setting.starts_with("`redis_ca_file`"),
            "{}",
            plain.setting
        );
        assert!(plain.problem.contains("rediss://"), "{plain}");
        let unreadable = refused("rediss://127.0.0.1:6380", Some(&missing));
        assert!(
            unreadable.setting.starts_with("`redis_ca_file`"),
            "{}",
            unreadable.setting
        );
        assert!(unreadable.problem.contains("missing.pem"), "{unreadable}");
        let no_certificate = refused("rediss://127.0.0.1:6380", Some(&empty));
        assert!(
            no_certificate.setting.starts_with("`redis_ca_file`"),
            "{}",
            no_certificate.setting
        );
        assert!(
            no_certificate.problem.contains("no PEM certificate"),
            "{no_certificate}"
        );
    }
}
