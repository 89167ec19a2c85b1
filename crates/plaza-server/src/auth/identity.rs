//! The identity services every request can reach (password hashing, admin
//! token and TOTP keys, identity providers, session lifetimes and lookups),
//! built once from the settings, with the database and the settings
//! section they read.

use std::collections::HashMap;
use std::path::Path;

use plaza_domain::Database;
use plaza_domain::sessions::SessionLifetime;

use crate::auth::jwt::JwtKeys;
use crate::auth::oauth::{self, Provider};
use crate::auth::password::Passwords;
use crate::auth::two_factor::TotpKey;
use crate::services::session_lookups::SessionLookups;
use crate::settings::AuthSettings;

/// Identity services shared by every request.
pub struct Auth {
    pub db: Database,
    /// The section these services were built from (sign-in limits, the
    /// lifetime of admin tokens, `admin_totp_required`).
    pub settings: AuthSettings,
    pub passwords: Passwords,
    pub jwt: JwtKeys,
    /// Seals two-factor secrets.
    pub totp: TotpKey,
    pub providers: Vec<Provider>,
    pub providers_by_id: HashMap<String, usize>,
    pub http: reqwest::Client,
    pub sessions: SessionLifetime,
    /// Signed-in requests' session cookies, resolved in batches.
    pub session_lookups: SessionLookups,
}

impl Auth {
    /// `app_name` names Plaza to identity providers; `data_dir` keeps the
    /// generated admin token and TOTP keys.
    pub fn new(
        settings: &AuthSettings,
        app_name: &str,
        data_dir: &Path,
        db: Database,
    ) -> Result<Self, String> {
        let providers: Vec<Provider> = settings.auth_providers.iter().map(Provider::new).collect();
        let providers_by_id = providers
            .iter()
            .enumerate()
            .map(|(index, provider)| (provider.id.clone(), index))
            .collect();
        let hashing = settings.password_hashing_limits()?;
        tracing::debug!(
            concurrent = hashing.concurrent,
            memory_kib = settings.password_hash_memory_kib,
            "password hashing bounded"
        );
        let ttl_millis = secs_to_millis(settings.session_ttl_secs);
        Ok(Auth {
            db,
            settings: settings.clone(),
            passwords: Passwords::new(
                settings.password_hash_memory_kib,
                settings.password_hash_iterations,
                1,
                hashing,
            )?,
            jwt: JwtKeys::load(settings.jwt_secret.as_deref(), data_dir)?,
            totp: TotpKey::load(settings.totp_key.as_deref(), data_dir)?,
            providers,
            providers_by_id,
            http: oauth::http_client(app_name)?,
            sessions: SessionLifetime {
                ttl_millis,
                // Sessions are extended at most once a minute (or a tenth of
                // their lifetime, when shorter), not on every request.
                refresh_after_millis: (ttl_millis / 10).min(60_000),
                max_lifetime_millis: secs_to_millis(settings.session_max_lifetime_secs),
            },
            session_lookups: SessionLookups::default(),
        })
    }

    pub fn provider(&self, id: &str) -> Option<&Provider> {
        self.providers_by_id
            .get(id)
            .map(|index| &self.providers[*index])
    }
}

fn secs_to_millis(secs: u64) -> i64 {
    i64::try_from(secs)
        .unwrap_or(i64::MAX / 1000)
        .saturating_mul(1000)
}
