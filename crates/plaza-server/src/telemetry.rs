//! Logs and metrics set-up, and the figures of the process (memory, open
//! files, CPU) and of the mail queue, read when metrics are scraped.

use std::io::IsTerminal;
use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use plaza_domain::Database;
use tracing_subscriber::EnvFilter;

use crate::settings::LogFormat;

/// Installs the log subscriber once; later calls (tests starting several
/// servers in one process) keep the first. Text logs are coloured only on a
/// terminal, so files and journals get no escape codes.
pub fn init_logging(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_http=info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

/// The process-wide Prometheus recorder. The `metrics` facade has one global
/// recorder, so every server in the process shares it.
pub fn metrics_handle() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Full("http_request_duration_seconds".to_owned()),
                    &[
                        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                        5.0, 10.0,
                    ],
                )
                .expect("the bucket list is not empty");
            let recorder = builder.build_recorder();
            let handle = recorder.handle();
            // Fails only when another recorder was installed first, in which
            // case this handle still renders its own (empty) registry.
            let _ = metrics::set_global_recorder(recorder);
            describe_metrics();
            handle
        })
        .clone()
}

/// The process figures' collector, set up once per process.
fn process_collector() -> &'static metrics_process::Collector {
    static COLLECTOR: OnceLock<metrics_process::Collector> = OnceLock::new();
    COLLECTOR.get_or_init(metrics_process::Collector::default)
}

/// Reads the outgoing mail queue (shared by every instance) for a scrape:
/// `plaza_mail_queue{status="pending"|"failed"}`. A database that does not
/// answer leaves the last figures, and the scrape answers all the same.
pub async fn record_mail_queue(db: &Database) {
    match db.mail_queue().await {
        Ok(queue) => {
            metrics::gauge!("plaza_mail_queue", "status" => "pending").set(queue.pending as f64);
            metrics::gauge!("plaza_mail_queue", "status" => "failed").set(queue.failed as f64);
        }
        Err(error) => tracing::warn!(%error, "the mail queue could not be counted for the metrics"),
    }
}

/// Reads how long the moderation queues wait (reports on posts, replies
/// and members; appeals) for a scrape, so an operator can alert on a queue
/// nobody reads.
pub async fn record_moderation_queues(db: &Database) {
    match db.moderation_stats_between(0, 0).await {
        Ok(stats) => {
            let seconds = |millis: Option<i64>| millis.map_or(0.0, |ms| ms as f64 / 1000.0);
            metrics::gauge!("plaza_moderation_open", "queue" => "reports")
                .set(stats.reports_open as f64);
            metrics::gauge!("plaza_moderation_open", "queue" => "appeals")
                .set(stats.appeals_open as f64);
            metrics::gauge!("plaza_moderation_oldest_wait_seconds", "queue" => "reports")
                .set(seconds(stats.oldest_open_report_millis));
            metrics::gauge!("plaza_moderation_oldest_wait_seconds", "queue" => "appeals")
                .set(seconds(stats.oldest_open_appeal_millis));
        }
        Err(error) => {
            tracing::warn!(%error, "the moderation queues could not be read for the metrics");
        }
    }
}

/// Reads the process's figures (memory, open files, CPU) for a scrape.
pub fn record_process_figures() {
    process_collector().collect();
}

/// Every metric Plaza records, with its `# HELP` text: the one list to
/// extend when a metric is added (`promtool check metrics` in the tests
/// fails on a metric without one).
fn describe_metrics() {
    use metrics::Unit;
    process_collector().describe();
    metrics::describe_counter!(
        "db_pool_waits_total",
        "Database leases that found every connection busy and waited"
    );
    metrics::describe_counter!(
        "db_pool_timeouts_total",
        "Database leases that waited the acquire timeout in vain (answered 503)"
    );
    metrics::describe_gauge!(
        "plaza_content_notifications_listening",
        "1 while this instance's channel of notifications of writes to posts is connected (cached public answers are then checked in memory), else 0"
    );
    metrics::describe_counter!(
        "plaza_content_notifications_connects_total",
        "Times the channel of notifications of writes to posts connected"
    );
    metrics::describe_counter!(
        "plaza_content_notifications_received_total",
        "Writes to posts announced to this instance on its channel of notifications"
    );
    metrics::describe_counter!(
        "plaza_content_generation_reads_total",
        "Reads of the content generation made to check a cached public answer (none while notifications are connected and confirmed)"
    );
    metrics::describe_gauge!(
        "plaza_moderation_open",
        "Moderation work waiting: open reports (on posts, replies and members) and open appeals"
    );
    metrics::describe_gauge!(
        "plaza_moderation_oldest_wait_seconds",
        Unit::Seconds,
        "How long the oldest open report or appeal has waited (0 when none is open)"
    );
    metrics::describe_gauge!(
        "plaza_mail_queue",
        "Outgoing mail of every instance: pending (not sent yet) and failed (given up on, kept)"
    );
    metrics::describe_gauge!(
        "plaza_queue_depth",
        "Items waiting in an in-process queue, by queue"
    );
    metrics::describe_counter!(
        "plaza_job_runs_total",
        "Runs of each background job, by job and outcome (success, failure)"
    );
    metrics::describe_gauge!(
        "plaza_job_last_success_timestamp_seconds",
        Unit::Seconds,
        "When each background job last ran successfully on this instance, as a Unix time"
    );
    metrics::describe_counter!(
        "http_requests_total",
        "HTTP requests answered, by method, route template and status"
    );
    metrics::describe_histogram!(
        "http_request_duration_seconds",
        Unit::Seconds,
        "Time from receiving a request to its answer, by method, route template and status"
    );
    metrics::describe_gauge!(
        "db_pool_connections",
        "Database connections in the pool, by state (open, idle)"
    );
    metrics::describe_gauge!(
        "db_pool_max_connections",
        "The most connections the database pool may open"
    );
    metrics::describe_counter!(
        "password_hash_rejected_total",
        "Sign-ups and sign-ins answered 503 because no password hashing slot freed up in time"
    );
    metrics::describe_counter!(
        "plaza_rate_limit_refused_total",
        "Requests answered 429 by a route group's rate limit, by limit"
    );
    metrics::describe_counter!(
        "plaza_rate_limit_store_errors_total",
        "Rate-limit checks the shared store (Redis) did not answer in time; the limit then failed open or closed as documented"
    );
    metrics::describe_counter!(
        "plaza_analytics_events_stored_total",
        "Analytics events committed by the ingest writer"
    );
    metrics::describe_histogram!(
        "plaza_analytics_batch_events",
        "Analytics events committed together in one transaction of the ingest writer"
    );
    metrics::describe_counter!(
        "plaza_mail_sent_total",
        "Mails handed to the SMTP server (or written to a file without one), by kind"
    );
    metrics::describe_counter!(
        "plaza_push_attempts_total",
        "Web Push attempts, by outcome (delivered, gone, retried, dropped)"
    );
    metrics::describe_counter!(
        "plaza_mail_attempt_failures_total",
        "Attempts at a mail that failed, by kind; the mail is retried unless it was given up on"
    );
    metrics::describe_gauge!(
        "plaza_image_cache_bytes",
        Unit::Bytes,
        "Bytes the cache of generated images holds: bodies plus a fixed bookkeeping share per entry"
    );
    metrics::describe_gauge!(
        "plaza_image_cache_capacity_bytes",
        Unit::Bytes,
        "The most bytes the cache of generated images may hold (image_cache_bytes)"
    );
    metrics::describe_gauge!(
        "plaza_image_cache_entries",
        "Generated images held by the cache"
    );
    metrics::describe_counter!(
        "plaza_image_cache_hits_total",
        "Generated images answered from the cache (or from a rendering another request made), by image (avatar, og)"
    );
    metrics::describe_counter!(
        "plaza_image_cache_misses_total",
        "Generated images rendered because the cache did not hold them, by image (avatar, og)"
    );
    metrics::describe_counter!(
        "plaza_image_cache_evictions_total",
        "Generated images dropped from the cache to make room (or too large to keep)"
    );
    metrics::describe_counter!(
        "plaza_mail_failed_total",
        "Mails given up on and kept as failed in outgoing_mail, by kind"
    );
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_recorded_metric_has_help_and_type() {
        let handle = super::metrics_handle();
        metrics::counter!("http_requests_total", "method" => "GET", "route" => "/t", "status" => "200")
            .increment(1);
        metrics::counter!("password_hash_rejected_total").increment(1);
        metrics::counter!("plaza_rate_limit_refused_total", "limit" => "general").increment(1);
        metrics::counter!("plaza_rate_limit_store_errors_total").increment(1);
        metrics::counter!("plaza_analytics_events_stored_total").increment(1);
        metrics::histogram!("plaza_analytics_batch_events").record(1.0);
        metrics::counter!("plaza_image_cache_hits_total", "image" => "og").increment(1);
        metrics::counter!("plaza_image_cache_misses_total", "image" => "og").increment(1);
        metrics::counter!("plaza_image_cache_evictions_total").increment(1);
        for name in [
            "plaza_image_cache_bytes",
            "plaza_image_cache_capacity_bytes",
            "plaza_image_cache_entries",
        ] {
            metrics::gauge!(name).set(1.0);
        }
        for name in [
            "plaza_mail_sent_total",
            "plaza_mail_attempt_failures_total",
            "plaza_mail_failed_total",
        ] {
            metrics::counter!(name, "kind" => "verify_email").increment(1);
        }
        let text = handle.render();
        for line in text.lines().filter(|line| line.starts_with("# TYPE ")) {
            let name = line.split_whitespace().nth(2).unwrap();
            assert!(
                text.contains(&format!("# HELP {name} ")),
                "{name} has no HELP line:\n{text}"
            );
        }
        assert!(text.contains("# HELP http_requests_total "));
    }
}
