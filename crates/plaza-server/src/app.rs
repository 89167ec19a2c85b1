//! The router builder and the server's life cycle.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::{Extension, Router};
use tokio_util::sync::CancellationToken;
use tower::ServiceBuilder;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_swagger_ui::SwaggerUi;

use crate::controllers::{self, docs};
use crate::http::error::{AppError, Surface, SurfaceMap};
use crate::http::extract::documented::on_surface;
use crate::http::middleware::RequestLayer;
use crate::http::personal::personal;
use crate::http::rate_limit::{Limit, limited};
use crate::services::front_door::FrontDoor;
use crate::services::own_pages::FallbackProbe;
use crate::serving::{ServingRecord, record_serving};
use crate::settings::{ServerSettings, Settings, TrustedProxies};
use crate::startup::{ServeLock, check_data_dir, lock_embedded_database, open_database};
use crate::state::AppState;

/// Every documented route, in groups that each declare here their error
/// surface ([`on_surface`]), their rate limit ([`limited`]) and, for those
/// that answer one user's private data, [`personal`]. The OpenAPI
/// document is collected from this, so it is the single
/// list of what Plaza serves.
pub fn api_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(docs::ApiDoc::openapi())
        // Probes and the metrics scrape are never limited: a monitor that
        // is refused would report an outage that is not there.
        .merge(on_surface(
            Surface::General,
            OpenApiRouter::new()
                .merge(controllers::system::health_routes())
                .merge(controllers::metrics::routes()),
        ))
        .merge(on_surface(
            Surface::Plain,
            controllers::system::version_routes(),
        ))
        .merge(on_surface(
            Surface::General,
            limited(Limit::SignIn, controllers::auth::sign_in_routes()),
        ))
        .merge(on_surface(
            Surface::General,
            limited(
                Limit::General,
                OpenApiRouter::new()
                    // The caller's identity, sessions and tokens; their
                    // alerts (`users` marks the answers showing an email).
                    .merge(personal(controllers::auth::routes()))
                    .merge(personal(controllers::access_tokens::routes()))
                    .merge(controllers::users::routes())
                    .merge(personal(controllers::invites::routes()))
                    .merge(controllers::posts::routes())
                    .merge(controllers::reactions::routes())
                    .merge(controllers::replies::routes())
                    .merge(controllers::between::routes())
                    .merge(personal(controllers::between::own_routes()))
                    .merge(controllers::moderation::routes())
                    .merge(personal(controllers::moderation::own_routes()))
                    .merge(controllers::search::routes())
                    .merge(personal(controllers::alerts::routes()))
                    .merge(personal(controllers::notifications::routes()))
                    .merge(controllers::emojis::routes())
                    .merge(controllers::feature_flags::routes()),
            ),
        ))
        .merge(on_surface(
            Surface::General,
            limited(Limit::AccountMail, controllers::auth::account_mail_routes()),
        ))
        .merge(on_surface(
            Surface::General,
            limited(Limit::Analytics, controllers::analytics::routes()),
        ))
        // Everything the admin surfaces answer is for administrators only.
        .merge(on_surface(
            Surface::Admin,
            limited(Limit::General, personal(controllers::admin::routes())),
        ))
        .merge(on_surface(
            Surface::Admin,
            limited(
                Limit::AdminUserList,
                personal(controllers::admin::user_list_routes()),
            ),
        ))
        .merge(on_surface(
            Surface::Image,
            limited(
                Limit::General,
                OpenApiRouter::new()
                    .merge(controllers::images::routes())
                    .merge(controllers::og::routes()),
            ),
        ))
        .merge(on_surface(
            Surface::Plain,
            limited(
                Limit::General,
                OpenApiRouter::new()
                    .merge(controllers::link_preview::routes())
                    .merge(controllers::profiles::routes()),
            ),
        ))
        .merge(on_surface(
            Surface::Upload,
            limited(
                Limit::General,
                OpenApiRouter::new()
                    .merge(controllers::uploads::routes())
                    .merge(controllers::emojis::custom_routes()),
            ),
        ))
        // Stored files are served like static files: no rate limit.
        .merge(on_surface(
            Surface::Upload,
            controllers::uploads::file_routes(),
        ))
        .merge(on_surface(
            Surface::AdminV1,
            limited(Limit::AdminV1, personal(controllers::admin_v1::routes())),
        ))
        .merge(on_surface(
            Surface::AdminV1,
            limited(
                Limit::SystemAction,
                personal(controllers::admin_v1::system_routes()),
            ),
        ))
        // The operator console's pages are not in the API document; their
        // surface is named in `build_app`.
        .merge(limited(Limit::General, controllers::console::routes()))
        .merge(limited(
            Limit::SystemAction,
            controllers::console::system_action_routes(),
        ))
}

/// The OpenAPI document, as served at `/api/openapi`.
pub fn openapi() -> utoipa::openapi::OpenApi {
    docs::finish(api_router().into_openapi())
}

/// The complete application: routes, documentation and middleware.
pub fn build_app(state: AppState) -> Router {
    let (router, document) = api_router().split_for_parts();
    let surfaces = controllers::console::PATHS
        .iter()
        .fold(SurfaceMap::from_document(&document), |surfaces, path| {
            surfaces.with(path, Surface::Console)
        });
    let server = state.settings.server.clone();
    let proxies = state.rate_limiter.trusted_proxies().clone();
    let front_door = state.front_door.clone();
    let router = router
        .merge(SwaggerUi::new(docs::SWAGGER_PATH).url(docs::OPENAPI_PATH, docs::finish(document)))
        .fallback(|probe: Option<Extension<FallbackProbe>>| async move {
            // A link preview asking in process learns that no route serves
            // the path (see `services::own_pages`).
            if let Some(Extension(probe)) = probe {
                probe.reached();
            }
            AppError::RouteNotFound
        })
        .with_state(state.clone())
        // The rate limiter's layers find the state here: they are put on
        // route groups before there is a state to hand them.
        .layer(Extension(state));
    with_middleware(router, &server, proxies, surfaces, front_door)
}

/// Wraps routes in Plaza's middleware stack ([`RequestLayer`] and the body
/// limit), answering errors in the shape `surfaces` gives each route and
/// refusing the clients the IP blocks of `front_door` cover.
/// Public so tests can put test-only routes behind the same stack.
pub fn with_middleware(
    router: Router,
    server: &ServerSettings,
    proxies: TrustedProxies,
    surfaces: SurfaceMap,
    front_door: Arc<FrontDoor>,
) -> Router {
    router.layer(
        ServiceBuilder::new()
            .layer(RequestLayer::new(server, proxies, surfaces, front_door))
            .layer(DefaultBodyLimit::max(server.body_limit_bytes)),
    )
}

/// A bound listener and the app, ready to run; split from [`run`] so tests
/// can learn the port before serving starts.
pub struct Server {
    listener: tokio::net::TcpListener,
    state: AppState,
    /// The serve lock of an embedded database and the record of what this
    /// process serves, held while the server lives.
    guards: Option<(Option<ServeLock>, ServingRecord)>,
}

impl Server {
    pub async fn bind(state: AppState) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(state.settings.server.bind).await?;
        warn_about_base_url(&state.settings.server, listener.local_addr()?);
        Ok(Server {
            listener,
            state,
            guards: None,
        })
    }

    /// What `plaza serve` does before it serves: checks the data directory,
    /// takes the embedded database's serve lock, connects and migrates,
    /// records what it serves, composes the state, confirms the file store
    /// and binds the listener.
    pub async fn start(settings: Settings) -> Result<Self, String> {
        let bind = settings.server.bind;
        check_data_dir(&settings).map_err(|error| error.to_string())?;
        let serve_lock = lock_embedded_database(&settings).map_err(|error| error.to_string())?;
        let database = open_database(&settings)
            .await
            .map_err(|error| error.to_string())?;
        let record = record_serving(&settings)?;
        warn_of_generated_keys(&settings, database.backend());
        let state = AppState::new(settings, database)?;
        state.uploads.confirm_store(&state.db).await?;
        let mut server = Server::bind(state)
            .await
            .map_err(|error| format!("cannot listen on {bind}: {error}"))?;
        server.guards = Some((serve_lock, record));
        Ok(server)
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` completes, then drains in-flight requests and
    /// waits (up to the grace period) for background work.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let state = self.state.clone();
        crate::services::health::log_at_start_up(&state.health, state.health_targets()).await;
        state.mail.log_destination();
        // The IP blocks and settings are in force from the first request.
        match state.front_door.refresh(&state.db).await {
            Ok(outcome) => tracing::info!(%outcome, "site settings and IP blocks read"),
            Err(error) => tracing::warn!(%error, "could not read the site settings and IP blocks"),
        }
        let stop_background = CancellationToken::new();
        crate::jobs::spawn_all(&state, stop_background.clone());
        state.background.spawn(
            state
                .content_generation
                .clone()
                .run(stop_background.clone()),
        );
        state
            .background
            .spawn(crate::services::analytics::ingest::run_writer(
                state.analytics.ingest.clone(),
                state.db.clone(),
                stop_background.clone(),
            ));
        let audit_writer = state.clone();
        let stop_audit_writer = stop_background.clone();
        state.background.spawn(async move {
            audit_writer
                .audit_reads
                .run(audit_writer.db.clone(), stop_audit_writer)
                .await;
        });
        let limits = crate::http::serve::Limits {
            header_read_timeout: Duration::from_secs(
                state.settings.server.header_read_timeout_secs,
            ),
            idle_timeout: Duration::from_secs(state.settings.server.idle_timeout_secs),
            max_connections: crate::http::serve::connection_cap(
                state.settings.server.max_connections,
            ),
        };
        let app = Arc::new(build_app(self.state));
        state.link_preview.own_pages.set(&app);
        let streams = state.clone();
        let shutdown = async move {
            shutdown.await;
            streams.alert_streams.stop();
            streams.exports.stop();
        };
        crate::http::serve::serve(self.listener, app, limits, shutdown).await;
        let grace = Duration::from_secs(state.settings.server.shutdown_grace_secs);
        stop_background.cancel();
        state.background.close();
        if tokio::time::timeout(grace, state.background.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                pending = state.background.len(),
                "background work still running at the end of the grace period"
            );
        }
        state.db.close().await;
        tracing::info!("stopped");
        drop(self.guards);
        Ok(())
    }
}

/// On PostgreSQL (shared by several instances, or restored onto another
/// machine) keys generated into one instance's data directory differ
/// from the others': admin tokens, two-factor secrets and the analytics
/// hash then fail or disagree between instances. Says which are generated.
fn warn_of_generated_keys(settings: &Settings, backend: plaza_domain::Backend) {
    if backend != plaza_domain::Backend::Postgres {
        return;
    }
    let generated: Vec<&str> = [
        ("jwt_secret", settings.auth.jwt_secret.is_none()),
        ("totp_key", settings.auth.totp_key.is_none()),
        (
            "analytics_salt",
            settings.analytics.analytics_salt.is_none(),
        ),
        (
            "vapid_private_key",
            settings.notifications.vapid_private_key.is_none(),
        ),
        ("webhook_key", settings.webhooks.webhook_key.is_none()),
    ]
    .into_iter()
    .filter_map(|(key, unset)| unset.then_some(key))
    .collect();
    if !generated.is_empty() {
        let keys = generated.join(", ");
        tracing::warn!(
            %keys,
            "PostgreSQL with keys generated into this instance's data directory ({keys}): \
             another instance, or this database restored elsewhere, has other keys, so admin \
             tokens, two-factor sign-in and push subscriptions fail there; set them (docs/operations.md, \
             \"Several instances\")"
        );
    }
}

/// Warns when `base_url` names a loopback port other than the one bound:
/// usually the default base URL left in place. Absolute links and cookies
/// then point at whatever else listens there, and link previews of own-origin
/// pages that Plaza does not serve are fetched from it (Plaza's own routes
/// are answered in process, so they are not affected).
fn warn_about_base_url(server: &ServerSettings, bound: SocketAddr) {
    let base = &server.base_url;
    let loopback = match base.host() {
        Some(url::Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    if loopback && base.port_or_known_default() != Some(bound.port()) {
        tracing::warn!(
            base_url = %base,
            %bound,
            "base_url names a loopback port this server does not listen on; set base_url (PLAZA_BASE_URL) to the public address"
        );
    }
}

/// Completes on SIGINT or SIGTERM. The handlers are installed when this is
/// called, not when the future is first polled (axum polls it on a task of
/// its own), so a signal that arrives while the server is starting is not
/// lost to the default action of killing the process. Call it inside the
/// runtime, before announcing that the server listens.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let signals = {
        use tokio::signal::unix::{SignalKind, signal};
        signal(SignalKind::interrupt()).and_then(|interrupt| {
            signal(SignalKind::terminate()).map(|terminate| (interrupt, terminate))
        })
    };
    async move {
        #[cfg(unix)]
        match signals {
            Ok((mut interrupt, mut terminate)) => {
                tokio::select! {
                    _ = interrupt.recv() => {},
                    _ = terminate.recv() => {},
                }
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGINT and SIGTERM");
                std::future::pending::<()>().await;
            }
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("shutdown requested; draining in-flight requests");
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::http::error::ERROR_SHAPE_EXTENSION;

    fn operation(document: &Value, method: &str, path: &str) -> Value {
        document["paths"][path][method].clone()
    }

    fn statuses(operation: &Value) -> Vec<String> {
        operation["responses"]
            .as_object()
            .expect("responses")
            .keys()
            .cloned()
            .collect()
    }

    fn document() -> Value {
        serde_json::to_value(openapi()).expect("the document serializes")
    }

    #[test]
    fn operations_reading_a_body_document_every_body_refusal() {
        let document = document();
        for (method, path) in [("post", "/api/auth/signin"), ("post", "/api/users")] {
            let answers = statuses(&operation(&document, method, path));
            for status in ["400", "413", "415", "422"] {
                assert!(
                    answers.contains(&status.to_owned()),
                    "{method} {path}: {answers:?}"
                );
            }
        }
    }

    #[test]
    fn every_operation_documents_the_middlewares_answers_in_its_surfaces_shape() {
        let document = document();
        for (path, item) in document["paths"].as_object().unwrap() {
            if path == "/api/openapi" || path == "/api/swagger" {
                continue;
            }
            for (method, operation) in item.as_object().unwrap() {
                let answers = statuses(operation);
                let surface = expected_surface(path);
                let nul_refusal = surface.status_for(422).to_string();
                for status in ["408", "500", "503", nul_refusal.as_str()] {
                    assert!(
                        answers.contains(&status.to_owned()),
                        "{method} {path}: {answers:?}"
                    );
                }
                let schema =
                    &operation["responses"]["500"]["content"]["application/json"]["schema"]["$ref"];
                assert_eq!(
                    schema.as_str(),
                    Some(format!("#/components/schemas/{}", surface.error_schema_name()).as_str()),
                    "{method} {path}"
                );
            }
        }
    }

    #[test]
    fn limited_answers_document_their_rate_limit_headers_and_admin_tier() {
        let document = document();
        let headers = |path: &str, method: &str, status: &str| -> Vec<String> {
            document["paths"][path][method]["responses"][status]["headers"]
                .as_object()
                .map(|headers| headers.keys().cloned().collect())
                .unwrap_or_default()
        };
        let admin = headers("/api/v1/admin/users", "get", "200");
        for name in [
            "X-RateLimit-Limit",
            "X-RateLimit-Remaining",
            "X-RateLimit-Reset",
            "X-Admin-Tier",
        ] {
            assert!(admin.contains(&name.to_owned()), "{name} in {admin:?}");
        }
        let system = &document["paths"]["/api/v1/admin/system/maintenance"]["post"]["responses"]["200"]
            ["headers"]["X-Admin-Tier"]["description"];
        assert!(system.as_str().unwrap().contains("`system`"), "{system}");
        let general = headers("/api/posts", "get", "200");
        assert!(
            general.contains(&"X-RateLimit-Remaining".to_owned()),
            "{general:?}"
        );
        assert!(!general.contains(&"X-Admin-Tier".to_owned()), "{general:?}");
        assert!(
            headers("/api/version", "get", "200").is_empty(),
            "not limited"
        );
    }

    /// The surface SPEC.md gives each path, written out independently of
    /// the route groups' declarations that the document follows.
    fn expected_surface(path: &str) -> Surface {
        let under = |prefix: &str| path == prefix || path.starts_with(&format!("{prefix}/"));
        if under("/api/v1/admin") {
            Surface::AdminV1
        } else if under("/api/admin") {
            Surface::Admin
        } else if under("/api/upload") || under("/api/uploads") || under("/api/emojis/custom") {
            Surface::Upload
        } else if under("/api/link-preview") || under("/api/version") || under("/api/profile/id") {
            Surface::Plain
        } else if under("/api/avatar-image") || under("/api/og-image") || under("/og-image-viewer")
        {
            Surface::Image
        } else {
            Surface::General
        }
    }

    /// Every operation outside the admin surfaces has its row in the token
    /// scope table (a new route without one fails here), and every row
    /// names an operation the document has.
    #[test]
    fn every_general_operation_has_its_token_scope() {
        use plaza_domain::policy::TOKEN_SCOPES;
        let document = document();
        let mut operations = Vec::new();
        for (path, item) in document["paths"].as_object().unwrap() {
            let admin = path.starts_with("/api/admin") || path.starts_with("/api/v1/admin");
            if admin || path == "/api/openapi" || path == "/api/swagger" {
                continue;
            }
            for method in item.as_object().unwrap().keys() {
                operations.push((method.to_uppercase(), path.clone()));
            }
        }
        let missing: Vec<_> = operations
            .iter()
            .filter(|(method, path)| {
                !TOKEN_SCOPES
                    .iter()
                    .any(|(listed, template, _)| listed == method && template == path)
            })
            .collect();
        assert!(
            missing.is_empty(),
            "operations without a token scope: {missing:?}"
        );
        let stale: Vec<_> = TOKEN_SCOPES
            .iter()
            .filter(|(method, path, _)| {
                !operations
                    .iter()
                    .any(|(listed, template)| listed == method && template == path)
            })
            .collect();
        assert!(stale.is_empty(), "rows naming no operation: {stale:?}");
    }

    #[test]
    fn the_generated_image_surface_answers_400_not_422() {
        let answers = statuses(&operation(&document(), "get", "/api/avatar-image"));
        assert!(answers.contains(&"400".to_owned()), "{answers:?}");
        assert!(!answers.contains(&"422".to_owned()), "{answers:?}");
        assert_eq!(Surface::Image.status_for(422), 400);
        assert_eq!(Surface::General.status_for(422), 422);
    }

    #[test]
    fn the_session_answer_is_one_of_its_two_shapes() {
        let document = document();
        let schema = &operation(&document, "get", "/api/auth/session")["responses"]["200"]["content"]
            ["application/json"]["schema"]["$ref"];
        let name = schema.as_str().unwrap().rsplit('/').next().unwrap();
        let shapes = &document["components"]["schemas"][name]["oneOf"];
        assert_eq!(shapes.as_array().map(Vec::len), Some(2), "{shapes}");
        let null = shapes
            .as_array()
            .unwrap()
            .iter()
            .any(|shape| shape["type"] == "null");
        assert!(null, "the signed-out shape is null: {shapes}");
    }

    #[test]
    fn the_map_follows_the_groups_declarations_and_each_path_has_one_surface() {
        let (_, document) = api_router().split_for_parts();
        let map = SurfaceMap::from_document(&document);
        for (path, item) in &document.paths.paths {
            if path == "/api/openapi" || path == "/api/swagger" {
                continue;
            }
            let surfaces: std::collections::HashSet<&str> =
                [&item.get, &item.post, &item.put, &item.patch, &item.delete]
                    .into_iter()
                    .flatten()
                    .map(|operation| {
                        operation
                            .extensions
                            .as_ref()
                            .and_then(|found| found.get(ERROR_SHAPE_EXTENSION))
                            .and_then(Value::as_str)
                            .unwrap_or_else(|| panic!("{path}: an operation outside every group"))
                    })
                    .collect();
            assert_eq!(surfaces.len(), 1, "{path}: {surfaces:?}");
            assert!(map.get(path).is_some(), "{path}");
        }
        assert_eq!(map.get("/api/v1/admin/users"), Some(Surface::AdminV1));
        assert_eq!(map.get("/api/version"), Some(Surface::Plain));
        assert_eq!(map.get("/api/og-image"), Some(Surface::Image));
    }
}
