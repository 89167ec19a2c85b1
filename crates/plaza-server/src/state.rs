//! What every handler can reach: the state composes every service once,
//! and lends the layers below the handles they read (the extractors'
//! [`AuthState`], the rate limits' [`LimitState`], an admin's changes to
//! users, the maintenance actions, the health probes' targets, mailed
//! links), so none of them names it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::request::Parts;
use futures_util::future::BoxFuture;
use metrics_exporter_prometheus::PrometheusHandle;
use plaza_domain::Database;
use tokio_util::task::TaskTracker;

use crate::auth::AuthState;
use crate::auth::account_mail::AccountMail;
use crate::auth::identity::Auth;
use crate::http::rate_limit::{Credited, Limit, LimitState, RateLimiter};
use crate::services::answer_cache::AnswerCaches;
use crate::services::front_door_changes::FrontDoorChanges;
use crate::services::health::Targets;
use crate::services::maintenance::Maintenance;
use crate::services::own_pages::OwnPages;
use crate::services::user_admin::UserAdmin;
use crate::settings::{Settings, TrustedProxies};

/// How long a share image waits for a rendering slot before 503.
pub const SHARE_IMAGE_RENDER_WAIT: Duration = Duration::from_secs(2);

/// Password-forgotten requests whose work may run at once; more wait for a
/// slot before they are answered.
const RECOVERY_SLOTS: usize = 16;

/// Shared application state. Cloning (once per extractor per request) is one
/// atomic increment.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// What link previews need, together.
pub struct LinkPreviews {
    /// One guarded outbound client for every link preview.
    pub client: plaza_link_preview::PreviewClient,
    /// Slots for link previews in progress (`link_preview_max_concurrent`).
    pub slots: tokio::sync::Semaphore,
    /// The app's own router, for link previews of its own pages (answered
    /// in process, never over the network); set by [`crate::app::Server::run`].
    pub own_pages: Arc<OwnPages>,
}

/// What [`AppState`] holds.
pub struct Shared {
    pub settings: Arc<Settings>,
    pub db: Database,
    pub auth: Arc<Auth>,
    /// Quotes for share images, from the configured providers.
    pub quotes: Arc<plaza_og_image::quotes::QuoteSource>,
    /// Slots for share images being rendered to PNG, one per core.
    pub og_renders: crate::services::blocking::BlockingSlots,
    /// Rendered avatars and share images by their parameters (`cache_clear`
    /// empties it).
    pub image_cache: crate::services::image_cache::ImageCache,
    /// Counts requests for every limited route group.
    pub rate_limiter: RateLimiter,
    /// Link previews: the client, its slots and the app's own pages.
    pub link_preview: LinkPreviews,
    /// Rendered answers kept for anonymous readers (`cache_clear` empties them).
    pub answer_caches: AnswerCaches,
    /// The content generation as this instance knows it, the answers'
    /// check (its channel's task starts with the server).
    pub content_generation: Arc<crate::services::content_generation::ContentGeneration>,
    /// Signed-in readers' blocks, mutes and filters, by their version.
    pub reader_relations: crate::services::reader_relations::ReaderRelations,
    /// Held while a maintenance action runs: one at a time per instance, so
    /// a repeated click does not start a second backup or rebuild.
    pub maintenance_running: tokio::sync::Mutex<()>,
    pub metrics: PrometheusHandle,
    pub started_at: Instant,
    /// This process among the instances sharing the database: the owner of
    /// the job runs it claims.
    pub instance_id: String,
    /// Work that outlives its request (analytics writes, cleanup). Shutdown
    /// waits for it, so nothing accepted is lost.
    pub background: TaskTracker,
    /// The live alert streams of this instance.
    pub alert_streams: crate::services::alert_stream::AlertStreams,
    /// Analytics collection: the event rules, enrichment and the writer's queue.
    pub analytics: crate::services::analytics::Analytics,
    /// The audit entries of reads, committed together.
    pub audit_reads: crate::services::audit_reads::AuditReads,
    /// The upload pipeline and the object store of uploads.
    pub uploads: crate::services::uploads::Uploads,
    /// Users' data exports in progress on this instance.
    pub exports: crate::services::export::Exports,
    /// Tells the platform of an emoji list request.
    pub emoji_platforms: plaza_emoji::PlatformDetector,
    /// Whether the database, the upload store and Redis answer.
    pub health: crate::services::health::HealthProbe,
    /// The feature flags as last read, for their evaluation.
    pub flag_snapshot: crate::services::flag_snapshot::FlagSnapshot,
    /// The site settings and IP blocks in force, as last read (shared with
    /// the request layer, which checks every request's address).
    pub front_door: Arc<crate::services::front_door::FrontDoor>,
    /// The site's word filters, compiled, as last read.
    pub word_filters: crate::services::word_filters::WordFilterSnapshot,
    /// The templates mail is written from.
    pub templates: Arc<crate::services::templates::Templates>,
    /// This instance's sender of queued mail.
    pub mail: crate::services::mail::Mailer,
    /// Notifications by push and mail: the VAPID key, the push sender,
    /// notification mail and its unsubscribe links.
    pub notifier: crate::services::notifications::Notifier,
    /// Slots for the work behind `POST /api/auth/password/forgot`, which
    /// runs after the answer (so the answer takes the same time whether or
    /// not the email belongs to an account).
    pub recovery_slots: std::sync::Arc<tokio::sync::Semaphore>,
    /// Webhooks: the key sealing their secrets, their guarded client and
    /// this instance's sender.
    pub webhooks: crate::services::webhooks::Webhooks,
}

impl AppState {
    /// What a new write of content is checked against: the word filters in
    /// force and `newAccountHoldCount`, the one place that reads it (the
    /// site setting once an administrator set it, else the file setting
    /// `new_account_hold_count`).
    pub async fn screening(
        &self,
    ) -> Result<crate::services::word_filters::Screening, plaza_domain::DomainError> {
        Ok(crate::services::word_filters::Screening {
            filters: self.word_filters.current(&self.db).await?,
            new_account_hold_count: self.front_door.settings().new_account_hold_count(),
        })
    }

    /// An admin's changes to users, with the handles they need.
    pub fn user_admin(&self) -> UserAdmin<'_> {
        UserAdmin {
            db: &self.db,
            lock_ttl: self.settings.limits.admin_lock_ttl(),
            session_lookups: &self.auth.session_lookups,
            mailer: &self.mail,
            templates: &self.templates,
            server: &self.settings.server,
            moderation: &self.settings.moderation,
        }
    }

    /// Mailed links and account notices, with the handles they need.
    pub fn account_mail(&self) -> AccountMail<'_> {
        AccountMail {
            db: &self.db,
            session_lookups: &self.auth.session_lookups,
            mailer: &self.mail,
            templates: &self.templates,
            server: &self.settings.server,
        }
    }

    /// An administrator's changes to the front door, with their handles.
    pub fn front_door_changes(&self) -> FrontDoorChanges<'_> {
        FrontDoorChanges {
            db: &self.db,
            front_door: &self.front_door,
            templates: &self.templates,
            server: &self.settings.server,
            mailer: &self.mail,
        }
    }

    /// The maintenance actions, with the handles they work on.
    pub fn maintenance(&self) -> Maintenance<'_> {
        Maintenance {
            running: &self.maintenance_running,
            db: &self.db,
            storage: &self.uploads.storage,
            answer_caches: &self.answer_caches,
            image_cache: &self.image_cache,
            settings: &self.settings,
        }
    }

    /// What the health probes ask.
    pub fn health_targets(&self) -> Targets<'_> {
        Targets {
            db: &self.db,
            storage: &self.uploads.storage,
            settings: &self.settings.storage,
            redis: self
                .rate_limiter
                .redis_ping()
                .map(|ping| -> BoxFuture<'_, bool> { Box::pin(async { ping.await.is_ok() }) }),
        }
    }

    /// Fails when identity services cannot start (an unreadable key file,
    /// impossible hashing parameters).
    pub fn new(settings: Settings, db: Database) -> Result<Self, String> {
        let auth = Auth::new(
            &settings.auth,
            &settings.server.app_name,
            &settings.storage.data_dir,
            db.clone(),
        )?;
        let link_preview =
            plaza_link_preview::PreviewClient::new(plaza_link_preview::FetchConfig {
                app_name: settings.server.app_name.clone(),
                allow_private: settings.link_preview.link_preview_allow_private,
                allowed_ports: settings.link_preview.link_preview_allowed_ports.clone(),
                ..plaza_link_preview::FetchConfig::default()
            })
            .map_err(|error| format!("cannot build the link preview client: {error}"))?;
        let own_pages = Arc::new(OwnPages::new(&link_preview.user_agent()));
        let link_preview = link_preview.with_internal_pages(own_pages.clone());
        let link_preview = LinkPreviews {
            client: link_preview,
            slots: tokio::sync::Semaphore::new(settings.link_preview.link_preview_max_concurrent),
            own_pages,
        };
        let providers = settings
            .images
            .og_quote_providers
            .clone()
            .unwrap_or_else(|| {
                plaza_og_image::quotes::default_providers(settings.images.og_quotes_api_key.clone())
            });
        let quotes = Arc::new(plaza_og_image::quotes::QuoteSource::new(
            crate::auth::oauth::http_client(&settings.server.app_name)?,
            providers,
        ));
        let rate_limiter = RateLimiter::new(&settings.limits)?;
        let alert_streams = crate::services::alert_stream::AlertStreams::new(&settings.alerts);
        let analytics = crate::services::analytics::Analytics::new(
            &settings.analytics,
            &settings.storage.data_dir,
        )?;
        let settings_storage = settings.storage.clone();
        let content_redis = match (
            settings.database.content_notifications,
            &settings.limits.redis_url,
        ) {
            (crate::settings::ContentNotifications::Redis, Some(url)) => Some(
                crate::settings::redis_client(url, settings.limits.redis_ca_file.as_deref())
                    .map_err(|error| error.to_string())?,
            ),
            _ => None,
        };
        let content_generation =
            Arc::new(crate::services::content_generation::ContentGeneration::new(
                db.clone(),
                settings.database.content_notifications,
                content_redis,
            ));
        // Metrics first: the cache's counters belong to the recorder it installs.
        let metrics = crate::telemetry::metrics_handle();
        let image_cache = crate::services::image_cache::ImageCache::new(
            settings.images.image_cache_bytes,
            SHARE_IMAGE_RENDER_WAIT,
        );
        let mail = crate::services::mail::Mailer::new(
            &settings.mail,
            &settings.server,
            &settings.storage.data_dir,
        )?;
        let templates = Arc::new(crate::services::templates::Templates::new()?);
        let notifier = crate::services::notifications::Notifier::new(
            &settings.notifications,
            &settings.mail,
            &settings.server,
            &settings.storage.data_dir,
            templates.clone(),
        )?;
        let front_door = Arc::new(crate::services::front_door::FrontDoor::new(
            plaza_domain::site_settings::FileDefaults {
                signup: settings.auth.signup,
                new_account_hold_count: i64::from(settings.holds.new_account_hold_count),
                public_modlog: settings.moderation.public_modlog(),
            },
        ));
        let webhooks = crate::services::webhooks::Webhooks::new(
            &settings.webhooks,
            &settings.storage.data_dir,
            &settings.server.app_name,
        )?;
        Ok(AppState(Arc::new(Shared {
            settings: Arc::new(settings),
            db,
            auth: Arc::new(auth),
            link_preview,
            answer_caches: AnswerCaches::default(),
            content_generation,
            reader_relations: Default::default(),
            maintenance_running: tokio::sync::Mutex::new(()),
            rate_limiter,
            quotes,
            og_renders: crate::services::blocking::BlockingSlots::new(
                std::thread::available_parallelism().map_or(1, usize::from),
                SHARE_IMAGE_RENDER_WAIT,
            ),
            image_cache,
            metrics,
            started_at: Instant::now(),
            instance_id: crate::secrets::random_token(),
            background: TaskTracker::new(),
            alert_streams,
            analytics,
            audit_reads: crate::services::audit_reads::AuditReads::default(),
            uploads: crate::services::uploads::Uploads::new(&settings_storage)?,
            exports: crate::services::export::Exports::new(&settings_storage),
            emoji_platforms: plaza_emoji::PlatformDetector::new(),
            health: crate::services::health::HealthProbe::default(),
            flag_snapshot: crate::services::flag_snapshot::FlagSnapshot::default(),
            front_door,
            word_filters: Default::default(),
            templates,
            mail,
            notifier,
            recovery_slots: std::sync::Arc::new(tokio::sync::Semaphore::new(RECOVERY_SLOTS)),
            webhooks,
        })))
    }
}

impl AuthState for AppState {
    fn auth(&self) -> &Auth {
        &self.auth
    }

    fn settings(&self) -> &Settings {
        &self.settings
    }

    fn trusted_proxies(&self) -> &TrustedProxies {
        self.rate_limiter.trusted_proxies()
    }
}

impl LimitState for AppState {
    fn rate_limiter(&self) -> &RateLimiter {
        &self.rate_limiter
    }

    async fn credited_user(&self, limit: Limit, parts: &mut Parts) -> Option<Credited> {
        crate::auth::credited_user(parts, self, limit == Limit::Analytics).await
    }
}
