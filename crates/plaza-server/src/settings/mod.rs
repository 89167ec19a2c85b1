//! Settings: built-in defaults, then an optional `plaza.toml`, then `PLAZA_*`
//! environment variables. Everything is checked once at start-up so that a bad
//! value stops the process with one line naming the setting.

use std::path::Path;

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::Serialize;

mod alerts;
mod analytics;
mod auth;
mod database;
mod error;
mod files;
mod holds;
mod images;
mod limits;
mod link_preview;
mod mail;
mod moderation;
mod notifications;
mod providers;
mod proxies;
mod quota;
mod server;
mod storage;
mod telemetry;
mod webhooks;

pub use alerts::*;
pub use analytics::*;
pub use auth::*;
pub use database::*;
pub use error::{ENV_PREFIX, SettingsError};
pub use files::*;
pub use holds::*;
pub use images::*;
pub use limits::*;
pub use link_preview::*;
pub use mail::*;
pub use moderation::*;
pub use notifications::*;
pub use providers::*;
pub use proxies::{TrustedProxies, canonical_address};
pub use quota::Quota;
pub use server::*;
pub use storage::*;
pub use telemetry::*;
pub use webhooks::*;

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
    #[serde(flatten)]
    pub mail: MailSettings,
    #[serde(flatten)]
    pub notifications: NotificationSettings,
    #[serde(flatten)]
    pub webhooks: WebhookSettings,
    #[serde(flatten)]
    pub moderation: ModerationSettings,
    #[serde(flatten)]
    pub holds: HoldSettings,
}

impl Settings {
    /// Loads defaults, then `config_file` if it exists (it must, when given
    /// explicitly; [`config_file`] finds the one in use), then the
    /// environment.
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
            mail: section(&figment)?,
            notifications: section(&figment)?,
            webhooks: section(&figment)?,
            moderation: section(&figment)?,
            holds: section(&figment)?,
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
        self.telemetry.validate()?;
        self.mail.validate()?;
        self.notifications.validate()?;
        self.webhooks.validate()?;
        self.moderation.validate()?;
        self.holds.validate()?;
        self.link_preview.validate()?;
        if self.database.content_notifications == ContentNotifications::Redis
            && self.limits.redis_url.is_none()
        {
            return Err(SettingsError::new(
                "content_notifications",
                "is \"redis\", but redis_url is not set",
            ));
        }
        Ok(())
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
    for (key, value) in data.values().flat_map(|dict| dict.iter()) {
        if key == "auth_providers" {
            check_provider_keys(path, value)?;
        }
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

/// A key of a `[[auth_providers]]` table that no provider has stops
/// start-up like any other unknown key. TOML puts every `key = value` line
/// below a table header into that table, so the likeliest cause is a plain
/// setting written after the table, which the message says.
fn check_provider_keys(path: &Path, value: &figment::value::Value) -> Result<(), SettingsError> {
    let known = ProviderSettings::KEYS;
    let tables = value.as_array().unwrap_or_default();
    for table in tables.iter().filter_map(figment::value::Value::as_dict) {
        if let Some(key) = table.keys().find(|key| !known.contains(&key.as_str())) {
            return Err(SettingsError {
                setting: format!(
                    "`{key}` (in an [[auth_providers]] table of {})",
                    path.display()
                ),
                problem: format!(
                    "is no identity provider key (those are {}); a setting written below an \
                     [[auth_providers]] table belongs to that table: move it above the first table",
                    known.join(", ")
                ),
            });
        }
    }
    Ok(())
}

/// Every `PLAZA_*` environment variable that names no setting (nor
/// `PLAZA_CONFIG`, nor the test harness's `PLAZA_TEST_*`): such a variable
/// is ignored, so the server warns about each at start.
pub fn unknown_environment_variables() -> Vec<String> {
    let known = match serde_json::to_value(Settings::default()) {
        Ok(serde_json::Value::Object(fields)) => fields,
        _ => return Vec::new(),
    };
    let mut unknown: Vec<String> = std::env::vars_os()
        .filter_map(|(variable, _)| variable.into_string().ok())
        .filter(|variable| {
            variable.strip_prefix(ENV_PREFIX).is_some_and(|key| {
                let key = key.to_ascii_lowercase();
                key != "config" && !key.starts_with("test_") && !known.contains_key(&key)
            })
        })
        .collect();
    unknown.sort();
    unknown
}

/// Settings that earlier versions read, with what took their place: left
/// in place, they would otherwise be ignored without a word.
fn replaced(key: &str) -> Option<&'static str> {
    match key {
        "trust_proxy_headers" => Some(
            "was replaced by `trusted_proxies` (PLAZA_TRUSTED_PROXIES): the addresses or CIDR ranges of the proxies whose forwarding headers are believed",
        ),
        "analytics_group_commit" => {
            Some("was removed: the events of concurrent requests always share one transaction")
        }
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
        // A key inside a table (`auth_providers.0.secret`) is written in
        // the variable of the setting that holds the table.
        setting: format!(
            "`{key}` ({ENV_PREFIX}{}, {source})",
            error.path[0].to_uppercase()
        ),
        problem: error.kind.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_file_holds_every_setting_at_its_default() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plaza.example.toml");
        let text = std::fs::read_to_string(&path).expect("plaza.example.toml is readable");
        let loaded = Settings::load(Some(&path)).expect("plaza.example.toml loads");
        let defaults = serde_json::to_value(Settings::default()).expect("defaults serialize");
        assert_eq!(
            serde_json::to_value(&loaded).expect("settings serialize"),
            defaults
        );
        let keys = defaults.as_object().expect("settings are a map").keys();
        let listed = |key: &str| {
            text.lines().any(|line| {
                let line = line.trim_start_matches("# ");
                line.starts_with(&format!("{key} = ")) || line == format!("[[{key}]]")
            })
        };
        let missing: Vec<&String> = keys.filter(|key| !listed(key)).collect();
        assert!(missing.is_empty(), "plaza.example.toml lacks {missing:?}");
        // Tables come last: a plain setting below a table header would be
        // read (and refused) as a key of the table once uncommented.
        let first_table = text
            .lines()
            .position(|line| line.trim_start_matches("# ").starts_with("[["))
            .expect("the example has tables");
        let fields = defaults.as_object().expect("settings are a map");
        let below: Vec<&str> = text
            .lines()
            .skip(first_table)
            .filter_map(|line| line.trim_start_matches("# ").split(" = ").next())
            .filter(|key| fields.contains_key(*key))
            .collect();
        assert!(below.is_empty(), "settings below the tables: {below:?}");
    }

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
            keys(&defaults.mail),
            keys(&defaults.notifications),
            keys(&defaults.webhooks),
            keys(&defaults.moderation),
            keys(&defaults.holds),
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
