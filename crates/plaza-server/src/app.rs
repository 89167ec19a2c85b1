//! The router builder and the server's life cycle.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use tokio_util::sync::CancellationToken;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::request_id::{PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_swagger_ui::SwaggerUi;

use crate::controllers::{self, docs};
use crate::error::AppError;
use crate::middleware::{
    MakeRequestUuid, refuse_cross_origin_writes, render_errors, track_metrics,
};
use crate::settings::Settings;
use crate::state::AppState;

/// Every documented route. The OpenAPI document is collected from this, so
/// it is the single list of what Plaza serves.
pub fn api_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(docs::ApiDoc::openapi())
        .merge(controllers::system::routes())
        .merge(controllers::metrics::routes())
        .merge(controllers::auth::routes())
        .merge(controllers::users::routes())
        .merge(controllers::posts::routes())
        .merge(controllers::search::routes())
        .merge(controllers::images::routes())
        .merge(controllers::link_preview::routes())
        .merge(controllers::og::routes())
}

/// The OpenAPI document, as served at `/api/openapi`.
pub fn openapi() -> utoipa::openapi::OpenApi {
    docs::finish(api_router().into_openapi())
}

/// The complete application: routes, documentation and middleware.
pub fn build_app(state: AppState) -> Router {
    let (router, document) = api_router().split_for_parts();
    let settings = state.settings.clone();
    let router = router
        .merge(SwaggerUi::new(docs::SWAGGER_PATH).url(docs::OPENAPI_PATH, docs::finish(document)))
        .fallback(|| async { AppError::RouteNotFound })
        .with_state(state);
    with_middleware(router, &settings)
}

/// Wraps routes in Plaza's middleware stack: request ids, tracing, error
/// rendering per surface, panic recovery, timeout, CORS, body limit and
/// metrics. Public so tests can put test-only routes behind the same stack.
pub fn with_middleware(router: Router, settings: &Arc<Settings>) -> Router {
    let request_id = HeaderName::from_static("x-request-id");
    router.route_layer(from_fn(track_metrics)).layer(
        ServiceBuilder::new()
            .layer(SetRequestIdLayer::new(request_id.clone(), MakeRequestUuid))
            .layer(
                TraceLayer::new_for_http().make_span_with(|request: &Request| {
                    let id = request
                        .headers()
                        .get("x-request-id")
                        .and_then(|value| value.to_str().ok())
                        .unwrap_or_default();
                    tracing::info_span!(
                        "request",
                        method = %request.method(),
                        path = %request.uri().path(),
                        request_id = %id,
                    )
                }),
            )
            .layer(PropagateRequestIdLayer::new(request_id))
            .layer(from_fn(render_errors))
            .layer(CatchPanicLayer::custom(panic_response))
            .layer(TimeoutLayer::with_status_code(
                StatusCode::REQUEST_TIMEOUT,
                Duration::from_secs(settings.request_timeout_secs),
            ))
            .layer(cors_layer(settings))
            .layer(from_fn_with_state(
                settings.clone(),
                refuse_cross_origin_writes,
            ))
            .layer(DefaultBodyLimit::max(settings.body_limit_bytes)),
    )
}

/// Browsers may call the API with credentials from the base URL's origin and
/// the configured extra origins only. Public endpoints such as
/// `/api/version` add their own `Access-Control-Allow-Origin: *`.
fn cors_layer(settings: &Settings) -> CorsLayer {
    let origins: Vec<HeaderValue> = std::iter::once(settings.base_origin())
        .chain(settings.cors_allowed_origins.iter().cloned())
        .filter_map(|origin| HeaderValue::from_str(origin.trim_end_matches('/')).ok())
        .collect();
    CorsLayer::new()
        .allow_origin(AllowOrigin::list(origins))
        .allow_credentials(true)
        .allow_methods([
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
        ])
        .allow_headers([header::CONTENT_TYPE, header::AUTHORIZATION])
        .expose_headers([HeaderName::from_static("x-request-id")])
        .max_age(Duration::from_secs(600))
}

fn panic_response(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|text| (*text).to_owned()))
        .unwrap_or_else(|| "unknown panic".to_owned());
    AppError::Internal(format!("handler panicked: {message}")).into_response()
}

/// A bound listener and the app, ready to run; split from [`run`] so tests
/// can learn the port before serving starts.
pub struct Server {
    listener: tokio::net::TcpListener,
    state: AppState,
}

impl Server {
    pub async fn bind(state: AppState) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(state.settings.bind).await?;
        Ok(Server { listener, state })
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
        let stop_background = CancellationToken::new();
        spawn_janitor(&state, stop_background.clone());
        let app = build_app(self.state);
        axum::serve(
            self.listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(shutdown)
        .await?;
        let grace = Duration::from_secs(state.settings.shutdown_grace_secs);
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
        Ok(())
    }
}

/// How often expired sessions, OAuth attempts and revocations are deleted.
const JANITOR_INTERVAL: Duration = Duration::from_secs(600);

/// Periodic clean-up, tracked as background work so shutdown waits for a
/// pass in progress.
fn spawn_janitor(state: &AppState, stop: CancellationToken) {
    let db = state.db.clone();
    let failure_window = i64::try_from(state.settings.sign_in_lockout_secs)
        .unwrap_or(i64::MAX / 1000)
        .saturating_mul(1000);
    state.background.spawn(async move {
        let mut interval = tokio::time::interval(JANITOR_INTERVAL);
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                _ = interval.tick() => match db.purge_expired_security_state(failure_window).await {
                    Ok(removed) => tracing::debug!(removed, "purged expired security state"),
                    Err(error) => tracing::warn!(%error, "could not purge expired security state"),
                },
            }
        }
    });
}

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
    tracing::info!("shutdown requested; draining in-flight requests");
}
