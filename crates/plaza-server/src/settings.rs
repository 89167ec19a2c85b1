//! Settings: built-in defaults, then an optional `plaza.toml`, then `PLAZA_*`
//! environment variables. Everything is checked once at start-up so that a bad
//! value stops the process with one line naming the setting.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};
use url::Url;

use crate::rate_limit::gcra::Quota;

/// The prefix of every environment variable Plaza reads.
pub const ENV_PREFIX: &str = "PLAZA_";

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

/// Every setting Plaza has, grouped by the capability that reads it; each
/// subsystem is handed only its section. On the outside the names stay flat:
/// a field name is a key of `plaza.toml`, and the environment variable is the
/// upper-cased name with the `PLAZA_` prefix.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Settings {
    #[serde(flatten)]
    pub server: ServerSettings,
    #[serde(flatten)]
    pub database: DatabaseSettings,
    #[serde(flatten)]
    pub storage: StorageSettings,
    #[serde(flatten)]
    pub auth: AuthSettings,
    #[serde(flatten)]
    pub limits: LimitSettings,
    #[serde(flatten)]
    pub link_preview: LinkPreviewSettings,
    #[serde(flatten)]
    pub images: ImageSettings,
    #[serde(flatten)]
    pub telemetry: TelemetrySettings,
    #[serde(flatten)]
    pub alerts: AlertSettings,
    #[serde(flatten)]
    pub analytics: AnalyticsSettings,
}

/// The HTTP server: where it listens, its public address and how it bounds
/// connections and requests.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerSettings {
    /// Listen address; port 0 picks a free port and logs it.
    pub bind: SocketAddr,
    /// The public address of the service, used for absolute URLs and cookies.
    pub base_url: Url,
    /// The application name, shown on pages and in outbound user agents.
    pub app_name: String,
    /// Requests that take longer are answered with 408.
    pub request_timeout_secs: u64,
    /// Largest request body accepted outside the upload routes.
    pub body_limit_bytes: usize,
    /// A request's headers must arrive within this many seconds (counted
    /// from the connection's start, and on a kept-alive connection from the
    /// end of the previous answer), or the connection is closed: half-sent
    /// requests cannot hold connections open (slowloris).
    pub header_read_timeout_secs: u64,
    /// A connection without a byte read or written for this many seconds
    /// is closed (gracefully: a request in flight still gets its answer;
    /// a second such period without progress closes it outright).
    pub idle_timeout_secs: u64,
    /// Open client connections at most; more are answered 503 and closed.
    /// Lowered at start-up to what the open-file limit allows.
    pub max_connections: usize,
    /// Origins other than the base URL's that browsers may call the API from.
    pub cors_allowed_origins: Vec<String>,
    /// How long shutdown waits for in-flight requests and background work.
    pub shutdown_grace_secs: u64,
}

impl Default for ServerSettings {
    fn default() -> Self {
        ServerSettings {
            bind: SocketAddr::from(([127, 0, 0, 1], 3000)),
            base_url: Url::parse("http://localhost:3000").expect("the default base URL is valid"),
            app_name: "Plaza".to_owned(),
            request_timeout_secs: 30,
            body_limit_bytes: 1024 * 1024,
            header_read_timeout_secs: 30,
            idle_timeout_secs: 75,
            max_connections: 10_000,
            cors_allowed_origins: Vec::new(),
            shutdown_grace_secs: 20,
        }
    }
}

/// The database connection.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DatabaseSettings {
    /// `sqlite://…` or `postgres://…`; unset means `plaza.db` in the data directory.
    pub database_url: Option<String>,
    /// The pool's size; unset, it depends on the engine (see
    /// [`DatabaseSettings::pool_size`]).
    pub database_max_connections: Option<u32>,
    /// How long start-up keeps retrying a database that does not answer.
    pub database_connect_timeout_secs: u64,
    /// How long a request waits for a pooled connection before failing with 503.
    pub database_acquire_timeout_secs: u64,
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        DatabaseSettings {
            database_url: None,
            database_max_connections: None,
            database_connect_timeout_secs: 30,
            database_acquire_timeout_secs: 5,
        }
    }
}

/// Files Plaza keeps: the data directory and uploads.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct StorageSettings {
    /// Holds the SQLite database, generated keys, uploads and backups.
    pub data_dir: PathBuf,
    /// Where uploads live: `file:///folder` or `s3://bucket/prefix`
    /// (`AWS_*` variables configure S3); unset: `<data_dir>/uploads`.
    pub storage_url: Option<String>,
    /// Largest upload in bytes (SPEC.md: 5 MB).
    pub upload_max_bytes: usize,
    /// Smallest upload in bytes (SPEC.md: 1 KB).
    pub upload_min_bytes: usize,
    /// Largest width and height of an uploaded image.
    pub upload_max_dimension: u32,
    /// Uploads decoded and encoded at once; more wait up to 5 s, then 503.
    pub upload_max_concurrent: usize,
    /// `host:port` of a ClamAV `clamd` that scans every upload; unset: the
    /// built-in structure check only.
    pub upload_clamd_address: Option<String>,
    /// How many backups `backup_database` keeps in `<data_dir>/backups`;
    /// older ones are removed after each new one.
    pub backup_keep: usize,
    /// How long one call to the upload store (a write, read, delete or a
    /// page of a listing) may take before it fails.
    pub storage_timeout_secs: u64,
    /// Set once, after the files of every upload were moved to the store
    /// `storage_url` names: the records then name that store. Without it,
    /// Plaza refuses to start when the database's uploads name another
    /// store.
    pub storage_moved: bool,
}

impl Default for StorageSettings {
    fn default() -> Self {
        StorageSettings {
            data_dir: PathBuf::from("./data"),
            storage_url: None,
            upload_max_bytes: 5_242_880,
            upload_min_bytes: 1024,
            upload_max_dimension: 4096,
            upload_max_concurrent: 2,
            upload_clamd_address: None,
            backup_keep: 7,
            storage_timeout_secs: 10,
            storage_moved: false,
        }
    }
}

impl StorageSettings {
    fn validate(&self) -> Result<(), SettingsError> {
        at_least_one([
            ("upload_max_concurrent", self.upload_max_concurrent),
            ("backup_keep", self.backup_keep),
        ])?;
        if self.storage_timeout_secs == 0 || self.storage_timeout_secs > 300 {
            return Err(SettingsError::new(
                "storage_timeout_secs",
                "must be 1 to 300",
            ));
        }
        if self.upload_min_bytes > self.upload_max_bytes {
            return Err(SettingsError::new(
                "upload_min_bytes",
                "must not be above upload_max_bytes",
            ));
        }
        if self.upload_max_dimension == 0 || self.upload_max_dimension > 16_384 {
            return Err(SettingsError::new(
                "upload_max_dimension",
                "must be 1 to 16384",
            ));
        }
        Ok(())
    }
}

/// Sign-up, sign-in, sessions, admin tokens and password hashing.
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
    pub auth_providers: Vec<crate::auth::oauth::ProviderSettings>,
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
    fn validate(&self) -> Result<(), SettingsError> {
        crate::rate_limit::address::TrustedProxies::parse(&self.trusted_proxies)
            .map_err(|problem| SettingsError::new("trusted_proxies", problem))?;
        match (&self.redis_url, &self.redis_ca_file) {
            (Some(url), ca_file) => {
                crate::rate_limit::shared::redis_client(url, ca_file.as_deref())
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

/// Outbound fetches for link previews.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LinkPreviewSettings {
    /// Lets link preview reach loopback and private addresses.
    pub link_preview_allow_private: bool,
    /// Ports link preview may fetch besides 80 and 443.
    pub link_preview_allowed_ports: Vec<u16>,
    /// Link previews in progress at once; a request that cannot start one
    /// within two seconds is answered 503. Each preview may hold an
    /// outbound connection for up to 10 s, so this bounds the file
    /// descriptors and memory anonymous callers can tie up.
    pub link_preview_max_concurrent: usize,
}

impl Default for LinkPreviewSettings {
    fn default() -> Self {
        LinkPreviewSettings {
            link_preview_allow_private: false,
            link_preview_allowed_ports: Vec::new(),
            link_preview_max_concurrent: 32,
        }
    }
}

/// Share images.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImageSettings {
    /// Quote providers for share images; unset uses the built-in rotation
    /// (Quotable 40, ZenQuotes 30, DummyJSON 20, API Ninjas 10).
    pub og_quote_providers: Option<Vec<plaza_og_image::quotes::ProviderConfig>>,
    /// API key of the fourth default quote provider (API Ninjas); without it
    /// that provider is skipped.
    pub og_quotes_api_key: Option<String>,
    /// The tagline of the fallback share image.
    pub tagline: String,
}

impl Default for ImageSettings {
    fn default() -> Self {
        ImageSettings {
            og_quote_providers: None,
            og_quotes_api_key: None,
            tagline: "A community platform".to_owned(),
        }
    }
}

/// Logs and metrics.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TelemetrySettings {
    pub log_format: LogFormat,
    /// Serves `/api/metrics` without an admin token.
    pub metrics_public: bool,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        TelemetrySettings {
            log_format: LogFormat::Text,
            metrics_public: false,
        }
    }
}

/// Alerts and broadcasts.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AlertSettings {
    /// How often the cluster-wide job looks for scheduled broadcasts that
    /// are due; a broadcast is delivered at most this long after its time.
    pub broadcast_delivery_period_secs: u64,
    /// Most live alert streams one instance keeps open at once; one more
    /// is 503 with `Retry-After`.
    pub alert_stream_max_connections: usize,
    /// Most live alert streams one user keeps open at once (across their
    /// sessions, on one instance); one more is 429. Not a rate limit: it
    /// holds with rate limits off.
    pub alert_stream_max_per_user: usize,
    /// How long a live alert stream lasts before the server ends it (the
    /// client reconnects with `Last-Event-ID`); 0 sends the current alerts
    /// and ends at once.
    pub alert_stream_max_secs: u64,
    /// How often each instance looks for new deliveries and dismissals
    /// while a stream is open: the most a live alert waits.
    pub alert_stream_poll_ms: u64,
}

impl Default for AlertSettings {
    fn default() -> Self {
        AlertSettings {
            broadcast_delivery_period_secs: 5,
            alert_stream_max_connections: 1000,
            alert_stream_max_per_user: 5,
            alert_stream_max_secs: 3600,
            alert_stream_poll_ms: 1000,
        }
    }
}

impl AlertSettings {
    fn validate(&self) -> Result<(), SettingsError> {
        if !(1..=30).contains(&self.broadcast_delivery_period_secs) {
            return Err(SettingsError::new(
                "broadcast_delivery_period_secs",
                "must be from 1 to 30 (a broadcast is due within 30 s of its time)",
            ));
        }
        if !(50..=60_000).contains(&self.alert_stream_poll_ms) {
            return Err(SettingsError::new(
                "alert_stream_poll_ms",
                "must be from 50 to 60000",
            ));
        }
        if self.alert_stream_max_per_user == 0 {
            return Err(SettingsError::new(
                "alert_stream_max_per_user",
                "must be at least 1",
            ));
        }
        if self.alert_stream_max_secs > 86_400 {
            return Err(SettingsError::new(
                "alert_stream_max_secs",
                "must be at most 86400 (a day)",
            ));
        }
        Ok(())
    }
}

/// Analytics collection and retention.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AnalyticsSettings {
    /// Event types allowed besides the seven built in.
    pub analytics_extra_event_types: Vec<String>,
    /// The most bytes an event's `event_data` may take as JSON.
    pub analytics_max_event_data_bytes: usize,
    /// How long events are kept; older ones are purged, and an event whose
    /// timestamp is already older is refused.
    pub analytics_retention_days: u64,
    /// Events waiting for the writer at most; collect answers 503 beyond.
    pub analytics_queue_max_events: usize,
    /// Events of concurrent requests share one transaction (group commit);
    /// off, each request commits its own (the benchmark's baseline).
    pub analytics_group_commit: bool,
    /// How long collect trusts a session a lookup confirmed, in
    /// milliseconds (0: a lookup per request, like every other route). A
    /// user's events come in bursts, and the lookup was half the database's
    /// work per event.
    pub analytics_session_recheck_ms: u64,
    /// Key of the hash that replaces client addresses. Unset: generated
    /// once into `<data_dir>/analytics-salt`. Set it when several instances
    /// share a database, so they hash one address alike.
    pub analytics_salt: Option<String>,
    /// Header a trusted proxy names the client's country in (ISO 3166
    /// alpha-2), such as `CF-IPCountry`.
    pub analytics_country_header: Option<String>,
    /// Header a trusted proxy flags VPN clients with (`1`/`true`/`yes`).
    pub analytics_vpn_header: Option<String>,
}

impl Default for AnalyticsSettings {
    fn default() -> Self {
        AnalyticsSettings {
            analytics_extra_event_types: Vec::new(),
            analytics_max_event_data_bytes: 4096,
            analytics_retention_days: 90,
            analytics_queue_max_events: 50_000,
            analytics_group_commit: true,
            analytics_session_recheck_ms: 1000,
            analytics_salt: None,
            analytics_country_header: None,
            analytics_vpn_header: None,
        }
    }
}

impl AnalyticsSettings {
    fn validate(&self) -> Result<(), SettingsError> {
        at_least_one([
            (
                "analytics_max_event_data_bytes",
                self.analytics_max_event_data_bytes,
            ),
            (
                "analytics_retention_days",
                usize::try_from(self.analytics_retention_days).unwrap_or(usize::MAX),
            ),
            (
                "analytics_queue_max_events",
                self.analytics_queue_max_events,
            ),
        ])?;
        if self.analytics_retention_days > 36_500 {
            return Err(SettingsError::new(
                "analytics_retention_days",
                "must be at most 36500 (a century)",
            ));
        }
        if self.analytics_session_recheck_ms > 60_000 {
            return Err(SettingsError::new(
                "analytics_session_recheck_ms",
                "must be at most 60000 (a minute), so an ended session stops sending events soon",
            ));
        }
        if self.analytics_queue_max_events > 10_000_000 {
            return Err(SettingsError::new(
                "analytics_queue_max_events",
                "must be at most 10000000 (about 5 GB of queued events)",
            ));
        }
        if let Some(salt) = &self.analytics_salt
            && salt.len() < 32
        {
            return Err(SettingsError::new(
                "analytics_salt",
                "must be at least 32 characters",
            ));
        }
        for (key, header) in [
            ("analytics_country_header", &self.analytics_country_header),
            ("analytics_vpn_header", &self.analytics_vpn_header),
        ] {
            if let Some(name) = header
                && axum::http::HeaderName::try_from(name.as_str()).is_err()
            {
                return Err(SettingsError::new(key, "is not a valid header name"));
            }
        }
        if let Some(bad) = self.analytics_extra_event_types.iter().find(|name| {
            name.is_empty()
                || name.len() > 64
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        }) {
            return Err(SettingsError::new(
                "analytics_extra_event_types",
                format!("{bad:?} is not an event type name (1 to 64 of a-z, 0-9 and _)"),
            ));
        }
        Ok(())
    }
}

/// A setting that cannot be used, with the name the operator wrote it under.
#[derive(Debug, thiserror::Error)]
#[error("invalid setting {setting}: {problem}")]
pub struct SettingsError {
    pub setting: String,
    pub problem: String,
}

impl SettingsError {
    fn new(key: &str, problem: impl Into<String>) -> Self {
        SettingsError {
            setting: format!("`{key}` ({ENV_PREFIX}{})", key.to_uppercase()),
            problem: problem.into(),
        }
    }
}

impl Settings {
    /// Loads defaults, then `config_file` if it exists (it must, when given
    /// explicitly), then the environment.
    pub fn load(config_file: Option<&Path>) -> Result<Self, SettingsError> {
        let mut figment = Figment::from(Serialized::defaults(Settings::default()));
        match config_file {
            Some(path) if !path.exists() => {
                return Err(SettingsError {
                    setting: "--config".to_owned(),
                    problem: format!("file {} does not exist", path.display()),
                });
            }
            Some(path) => {
                check_keys(path, Toml::file_exact(path))?;
                figment = figment.merge(Toml::file_exact(path));
            }
            None => {
                let default = Path::new("plaza.toml");
                if default.exists() {
                    check_keys(default, Toml::file(default))?;
                }
                figment = figment.merge(Toml::file(default));
            }
        }
        let figment = figment.merge(Env::prefixed(ENV_PREFIX).filter(|key| {
            // PLAZA_CONFIG names the file itself and PLAZA_TEST_* belong to the
            // test harness; neither is a setting.
            key != "config" && !key.as_str().starts_with("test_")
        }));
        for (variable, _) in std::env::vars_os() {
            let Some(key) = variable
                .to_str()
                .and_then(|name| name.strip_prefix(ENV_PREFIX))
            else {
                continue;
            };
            if let Some(problem) = replaced(&key.to_ascii_lowercase()) {
                return Err(SettingsError::new(&key.to_ascii_lowercase(), problem));
            }
        }
        let settings = Settings {
            server: section(&figment)?,
            database: section(&figment)?,
            storage: section(&figment)?,
            auth: section(&figment)?,
            limits: section(&figment)?,
            link_preview: section(&figment)?,
            images: section(&figment)?,
            telemetry: section(&figment)?,
            alerts: section(&figment)?,
            analytics: section(&figment)?,
        };
        settings.validate()?;
        Ok(settings)
    }

    fn validate(&self) -> Result<(), SettingsError> {
        self.server.validate()?;
        self.database.validate()?;
        self.storage.validate()?;
        self.auth.validate()?;
        self.limits.validate()?;
        self.alerts.validate()?;
        self.analytics.validate()?;
        self.link_preview.validate()
    }

    /// The database URL in use: the setting, or the embedded SQLite file.
    pub fn effective_database_url(&self) -> String {
        match &self.database.database_url {
            Some(url) => url.clone(),
            None => format!(
                "sqlite://{}",
                self.storage.data_dir.join("plaza.db").display()
            ),
        }
    }
}

/// Fails with the first setting in `pairs` that is zero.
fn at_least_one<T: PartialEq + Default>(
    pairs: impl IntoIterator<Item = (&'static str, T)>,
) -> Result<(), SettingsError> {
    for (key, value) in pairs {
        if value == T::default() {
            return Err(SettingsError::new(key, "must be at least 1"));
        }
    }
    Ok(())
}

impl ServerSettings {
    fn validate(&self) -> Result<(), SettingsError> {
        if !matches!(self.base_url.scheme(), "http" | "https") || self.base_url.host().is_none() {
            return Err(SettingsError::new(
                "base_url",
                format!("{} is not an absolute http(s) URL", self.base_url),
            ));
        }
        at_least_one([
            ("request_timeout_secs", self.request_timeout_secs),
            ("header_read_timeout_secs", self.header_read_timeout_secs),
            ("idle_timeout_secs", self.idle_timeout_secs),
        ])?;
        at_least_one([("max_connections", self.max_connections)])?;
        if self.body_limit_bytes < 1024 {
            return Err(SettingsError::new(
                "body_limit_bytes",
                "must be at least 1024",
            ));
        }
        for origin in &self.cors_allowed_origins {
            if origin.parse::<axum::http::HeaderValue>().is_err() || Url::parse(origin).is_err() {
                return Err(SettingsError::new(
                    "cors_allowed_origins",
                    format!("{origin:?} is not an origin such as https://example.com"),
                ));
            }
        }
        Ok(())
    }

    /// Whether cookies must carry `Secure`.
    pub fn is_https(&self) -> bool {
        self.base_url.scheme() == "https"
    }

    /// The origin of the base URL, as browsers send it in `Origin`.
    pub fn base_origin(&self) -> String {
        self.base_url.origin().ascii_serialization()
    }
}

impl DatabaseSettings {
    fn validate(&self) -> Result<(), SettingsError> {
        if let Some(url) = &self.database_url
            && plaza_domain::Backend::from_url(url).is_none()
        {
            return Err(SettingsError::new(
                "database_url",
                "must start with sqlite:// or postgres://",
            ));
        }
        at_least_one([
            (
                "database_connect_timeout_secs",
                self.database_connect_timeout_secs,
            ),
            (
                "database_acquire_timeout_secs",
                self.database_acquire_timeout_secs,
            ),
        ])?;
        at_least_one([(
            "database_max_connections",
            self.database_max_connections.unwrap_or(1),
        )])
    }

    /// Connections in the pool: the setting, or by default 16 for
    /// PostgreSQL and, for SQLite, twice the cores (at least 4). SQLite runs
    /// each connection's statements on a thread of its own, so more
    /// connections than the cores can keep busy only add context switches:
    /// on 2 cores, 4 instead of 16 took the admin moderation queue's p99
    /// from 11–14 ms to 8.4–9.6 ms.
    pub fn pool_size(&self, backend: plaza_domain::Backend) -> u32 {
        self.database_max_connections
            .unwrap_or_else(|| match backend {
                plaza_domain::Backend::Postgres => 16,
                plaza_domain::Backend::Sqlite => std::thread::available_parallelism()
                    .map_or(4, |cores| {
                        u32::try_from(cores.get() * 2).unwrap_or(u32::MAX)
                    })
                    .max(4),
            })
    }
}

impl AuthSettings {
    fn validate(&self) -> Result<(), SettingsError> {
        if let Some(secret) = &self.jwt_secret
            && secret.len() < crate::auth::jwt::MIN_SECRET_LENGTH
        {
            return Err(SettingsError::new(
                "jwt_secret",
                format!(
                    "must be at least {} characters",
                    crate::auth::jwt::MIN_SECRET_LENGTH
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
    pub fn password_hashing_limits(&self) -> Result<crate::auth::password::HashingLimits, String> {
        crate::auth::password::HashingLimits::sized(
            self.password_hash_max_concurrent,
            self.password_hash_memory_budget_mib.saturating_mul(1024),
            self.password_hash_memory_kib,
            std::time::Duration::from_millis(self.password_hash_wait_ms),
        )
    }
}

impl LinkPreviewSettings {
    fn validate(&self) -> Result<(), SettingsError> {
        at_least_one([(
            "link_preview_max_concurrent",
            self.link_preview_max_concurrent,
        )])
    }
}

/// One section, read from the same flat keys as every other.
fn section<T: serde::de::DeserializeOwned>(figment: &Figment) -> Result<T, SettingsError> {
    figment.extract().map_err(figment_error)
}

/// A key of the settings file that no setting has (a misspelling would
/// otherwise be ignored silently, leaving the default in force) stops
/// start-up, naming it.
fn check_keys(path: &Path, file: impl figment::Provider) -> Result<(), SettingsError> {
    let known = match serde_json::to_value(Settings::default()) {
        Ok(serde_json::Value::Object(fields)) => fields,
        _ => return Ok(()),
    };
    let data = figment::Provider::data(&file).map_err(figment_error)?;
    for key in data.values().flat_map(|dict| dict.keys()) {
        if let Some(problem) = replaced(key) {
            return Err(SettingsError {
                setting: format!("`{key}` (in {})", path.display()),
                problem: problem.to_owned(),
            });
        }
        if !known.contains_key(key) {
            return Err(SettingsError {
                setting: format!("`{key}` (in {})", path.display()),
                problem: "there is no such setting (misspelled?); the README and docs/operations.md list them".to_owned(),
            });
        }
    }
    Ok(())
}

/// Settings that earlier versions read, with what took their place: left
/// in place, they would otherwise be ignored without a word.
fn replaced(key: &str) -> Option<&'static str> {
    match key {
        "trust_proxy_headers" => Some(
            "was replaced by `trusted_proxies` (PLAZA_TRUSTED_PROXIES): the addresses or CIDR ranges of the proxies whose forwarding headers are believed",
        ),
        _ => None,
    }
}

fn figment_error(error: figment::Error) -> SettingsError {
    let key = error.path.join(".");
    if key.is_empty() {
        return SettingsError {
            setting: "file".to_owned(),
            problem: error.to_string(),
        };
    }
    let source = match error
        .metadata
        .as_ref()
        .and_then(|meta| meta.source.as_ref())
    {
        Some(figment::Source::File(path)) => format!("in {}", path.display()),
        _ => "from the environment".to_owned(),
    };
    SettingsError {
        setting: format!(
            "`{key}` ({ENV_PREFIX}{}, {source})",
            key.replace('.', "__").to_uppercase()
        ),
        problem: error.kind.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_size_defaults_by_engine_unless_set() {
        use plaza_domain::Backend;
        let unset = DatabaseSettings::default();
        assert_eq!(unset.pool_size(Backend::Postgres), 16);
        let cores = std::thread::available_parallelism().map_or(2, |cores| cores.get());
        assert_eq!(
            unset.pool_size(Backend::Sqlite) as usize,
            (cores * 2).max(4)
        );
        let set = DatabaseSettings {
            database_max_connections: Some(3),
            ..DatabaseSettings::default()
        };
        assert_eq!(set.pool_size(Backend::Sqlite), 3);
        assert_eq!(set.pool_size(Backend::Postgres), 3);
        assert!(
            DatabaseSettings {
                database_max_connections: Some(0),
                ..DatabaseSettings::default()
            }
            .validate()
            .is_err()
        );
    }

    fn keys(section: impl Serialize) -> Vec<String> {
        match serde_json::to_value(section) {
            Ok(serde_json::Value::Object(fields)) => fields.keys().cloned().collect(),
            other => panic!("a section serializes to an object, not {other:?}"),
        }
    }

    /// Sections share one flat namespace of keys, so a key in two sections
    /// would be read by both.
    #[test]
    fn every_key_belongs_to_exactly_one_section() {
        let defaults = Settings::default();
        let mut all: Vec<String> = [
            keys(&defaults.server),
            keys(&defaults.database),
            keys(&defaults.storage),
            keys(&defaults.auth),
            keys(&defaults.limits),
            keys(&defaults.link_preview),
            keys(&defaults.images),
            keys(&defaults.telemetry),
            keys(&defaults.alerts),
            keys(&defaults.analytics),
        ]
        .concat();
        let count = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), count, "a key appears in two sections");
        let mut flat = keys(&defaults);
        flat.sort();
        assert_eq!(flat, all);
    }
}
