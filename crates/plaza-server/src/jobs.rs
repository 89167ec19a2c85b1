//! The one job runner, the background twin of the router: every periodic
//! background job is declared in [`jobs`], with the services it calls, its
//! period and its scope: on each instance (work on the
//! process's own state), or once per cluster, claimed through the
//! database (`job_runs`) so that with several instances each run happens on
//! one of them, and a crashed owner's claim expires. Runs are tracked as
//! background work, so shutdown waits for one in progress.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use plaza_domain::jobs::Claim;
use plaza_domain::time::now_millis;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::settings::Settings;
use crate::state::AppState;

/// Where a job runs.
#[derive(Debug, Clone, Copy)]
pub enum Scope {
    EachInstance,
    /// Once per cluster; a claim lasts at most `lease` if its owner dies.
    Cluster {
        lease: Duration,
    },
}

type Run = fn(AppState) -> Pin<Box<dyn Future<Output = Result<String, String>> + Send>>;

/// What wakes a job before its period is up.
type Wake = fn(&AppState) -> &Notify;

/// A periodic job.
pub struct Job {
    pub name: &'static str,
    pub period: Duration,
    pub scope: Scope,
    /// The work; answers what it did, for the log.
    pub run: Run,
    /// Besides every period, the job runs as soon as this is notified
    /// (a notification during a run starts the next one right after it).
    pub wake: Option<Wake>,
}

/// Pages of files of erased users one retry run deletes at most (10,000
/// files), so a run ends well within its lease.
const ERASED_FILE_PAGES_PER_RUN: usize = 100;

/// Batches of followers one fan-out run writes feed entries for at most
/// (50,000 entries), so a run ends within a period or two.
const FEED_FANOUT_BATCHES_PER_RUN: usize = 50;

/// How long finished webhook deliveries stay listed.
const WEBHOOK_DELIVERY_RETENTION_MILLIS: i64 = 30 * 24 * 3600 * 1000;

/// Every background job Plaza runs: the one place to add one. Periods
/// that are settings come from `settings`.
pub fn jobs(settings: &Settings) -> Vec<Job> {
    let mut jobs = vec![
        Job {
            // The Prometheus recorder keeps every recorded latency until it
            // is folded into its histogram, which otherwise happens only
            // when `/api/metrics` is read: without a scraper that grew
            // memory by about 20 bytes a request (24 MB per 1.2 million
            // requests, measured).
            name: "metrics_upkeep",
            period: Duration::from_secs(1),
            scope: Scope::EachInstance,
            run: |state| {
                Box::pin(async move {
                    state.metrics.run_upkeep();
                    Ok(String::new())
                })
            },
            wake: None,
        },
        Job {
            // Ends this instance's live alert streams whose session or user
            // no longer stands, and wakes the others when any instance
            // delivered or dismissed an alert (see `alert_stream`).
            name: "alert_stream_watch",
            period: crate::services::alert_stream::watch_period(&settings.alerts),
            scope: Scope::EachInstance,
            run: |state| {
                Box::pin(async move {
                    state
                        .alert_streams
                        .watch(&state.db, &state.auth.sessions)
                        .await
                        .map(|()| String::new())
                        .map_err(|error| error.to_string())
                })
            },
            wake: None,
        },
        Job {
            // The site settings and IP blocks as this instance keeps them:
            // reloaded when any instance changed them, the blocks' ranges
            // built again when one ends (see `services::front_door`).
            name: "front_door_refresh",
            period: Duration::from_secs(1),
            scope: Scope::EachInstance,
            run: |state| {
                Box::pin(async move {
                    state
                        .front_door
                        .refresh(&state.db)
                        .await
                        .map_err(|error| error.to_string())
                })
            },
            wake: None,
        },
        Job {
            // The in-process rate limiter forgets clients whose buckets are
            // full again, so its memory follows the clients of the last
            // period, not every client ever seen.
            name: "rate_limit_sweep",
            period: Duration::from_secs(60),
            scope: Scope::EachInstance,
            run: |state| {
                Box::pin(async move {
                    state.rate_limiter.sweep();
                    Ok(format!(
                        "{} clients tracked",
                        state.rate_limiter.local_keys()
                    ))
                })
            },
            wake: None,
        },
        Job {
            // Expired sessions, OAuth attempts, revocations and old sign-in
            // attempt counts.
            name: "purge_expired_security_state",
            period: Duration::from_secs(600),
            scope: Scope::Cluster {
                lease: Duration::from_secs(300),
            },
            run: |state| {
                Box::pin(async move {
                    let millis = |secs: u64| {
                        i64::try_from(secs)
                            .unwrap_or(i64::MAX / 1000)
                            .saturating_mul(1000)
                    };
                    let window = millis(state.settings.auth.sign_in_lockout_secs);
                    let retention = millis(
                        state
                            .settings
                            .auth
                            .sign_in_retention_days
                            .saturating_mul(86_400),
                    );
                    state
                        .db
                        .write(|tx| {
                            Box::pin(async move {
                                plaza_domain::auth_state::purge_expired_security_state(
                                    tx, window, retention,
                                )
                                .await
                            })
                        })
                        .await
                        .map(|removed| format!("removed {removed} rows"))
                        .map_err(|error| error.to_string())
                })
            },
            wake: None,
        },
        Job {
            // Analytics events older than `analytics_retention_days` go, in
            // chunks of 5,000 per transaction so the writer never waits long.
            name: "analytics_retention",
            period: Duration::from_secs(600),
            scope: Scope::Cluster {
                lease: Duration::from_secs(600),
            },
            run: |state| {
                Box::pin(async move {
                    let cutoff = now_millis()
                        - crate::services::analytics::retention_millis(&state.settings.analytics);
                    state
                        .db
                        .purge_events_before(cutoff)
                        .await
                        .map(|removed| format!("removed {removed} analytics events"))
                        .map_err(|error| error.to_string())
                })
            },
            wake: None,
        },
        Job {
            // Files of erased users the store has not deleted yet (it was
            // down when the erasure committed): each is tried again when
            // its wait, doubling with every attempt, has passed.
            name: "erased_file_retry",
            period: Duration::from_secs(settings.storage.erased_file_retry_secs),
            scope: Scope::Cluster {
                lease: Duration::from_secs(300),
            },
            run: |state| {
                Box::pin(async move {
                    crate::services::erased_files::delete_due(
                        &state.db,
                        &state.uploads.storage,
                        &state.settings.storage,
                        ERASED_FILE_PAGES_PER_RUN,
                    )
                    .await
                    .map(|done| {
                        if done.deleted == 0 && done.failed == 0 {
                            String::new()
                        } else {
                            format!(
                                "deleted {} files of erased users, {} failed",
                                done.deleted, done.failed
                            )
                        }
                    })
                })
            },
            wake: None,
        },
        Job {
            // Stored files no upload record names (an upload the store
            // hung on, a crash between files and record) go once older
            // than the grace an upload in progress needs.
            name: "sweep_orphan_files",
            period: Duration::from_secs(settings.storage.orphan_file_sweep_secs),
            scope: Scope::Cluster {
                lease: Duration::from_secs(1800),
            },
            run: |state| {
                Box::pin(async move {
                    let referenced = state
                        .db
                        .referenced_upload_keys()
                        .await
                        .map_err(|error| error.to_string())?;
                    let sweep = state
                        .uploads
                        .storage
                        .sweep(&referenced, crate::services::storage::UPLOAD_GRACE)
                        .await
                        .map_err(|error| format!("the upload store: {error}"))?;
                    if sweep.files_removed > 0 {
                        tracing::info!(
                            files = sweep.files_removed,
                            bytes = sweep.bytes_removed,
                            "removed stored files no upload record names"
                        );
                    }
                    Ok(String::new())
                })
            },
            wake: None,
        },
        Job {
            // Timed bans end by themselves; each expiry is audited once.
            name: "ban_expiry",
            period: Duration::from_secs(settings.auth.ban_expiry_interval_secs),
            scope: Scope::Cluster {
                lease: Duration::from_secs(120),
            },
            run: |state| {
                Box::pin(async move {
                    plaza_domain::bans::expire_due(&state.db, now_millis())
                        .await
                        .map(|lifted| format!("lifted {lifted} bans"))
                        .map_err(|error| error.to_string())
                })
            },
            wake: None,
        },
        Job {
            // Timed silences end by themselves, as bans do; each expiry is
            // audited once.
            name: "silence_expiry",
            period: Duration::from_secs(settings.auth.ban_expiry_interval_secs),
            scope: Scope::Cluster {
                lease: Duration::from_secs(120),
            },
            run: |state| {
                Box::pin(async move {
                    plaza_domain::silences::expire_due(&state.db, now_millis())
                        .await
                        .map(|lifted| format!("lifted {lifted} silences"))
                        .map_err(|error| error.to_string())
                })
            },
            wake: None,
        },
        Job {
            // Scheduled broadcasts that are due become visible. Each is
            // delivered by a conditional UPDATE of its own row, so even two
            // instances that both ran this (an expired claim) deliver it once.
            name: "deliver_scheduled_broadcasts",
            period: Duration::from_secs(settings.alerts.broadcast_delivery_period_secs),
            scope: Scope::Cluster {
                lease: Duration::from_secs(60),
            },
            run: |state| {
                Box::pin(async move {
                    // Due by the database's clock, as the claim was.
                    let now = state
                        .db
                        .clock_millis()
                        .await
                        .map_err(|error| error.to_string())?;
                    state
                        .db
                        .deliver_due_broadcasts(now)
                        .await
                        .map(|delivered| {
                            if delivered == 0 {
                                String::new()
                            } else {
                                format!("delivered {delivered} broadcasts")
                            }
                        })
                        .map_err(|error| error.to_string())
                })
            },
            wake: None,
        },
        Job {
            // Queued mail: every instance sends, each mail claimed on its
            // own (see `mail`), and the instance whose request queued a
            // mail wakes its sender at once.
            name: "send_mail",
            period: crate::services::mail::SENDER_PERIOD,
            scope: Scope::EachInstance,
            run: |state| {
                Box::pin(async move {
                    crate::services::mail::send_due(&state.mail, &state.db, &state.instance_id)
                        .await
                })
            },
            wake: Some(|state| state.mail.sender_wake()),
        },
        Job {
            // Web Push: every instance sends, each push claimed on its own
            // (see `notifications::push`).
            name: "send_pushes",
            period: crate::services::notifications::push::SENDER_PERIOD,
            scope: Scope::EachInstance,
            run: |state| {
                Box::pin(async move {
                    state
                        .notifier
                        .push
                        .send_due_pushes(&state.db, &state.settings.server, &state.instance_id)
                        .await
                })
            },
            wake: Some(|state| state.notifier.push.wake()),
        },
        Job {
            // Notifications mailed at once: taken from their outbox in the
            // unit of work that queues their mails, on whichever instance.
            name: "mail_notifications",
            period: crate::services::notifications::mail::IMMEDIATE_PERIOD,
            scope: Scope::EachInstance,
            run: |state| {
                Box::pin(async move {
                    state
                        .notifier
                        .mail
                        .mail_immediate(&state.db, &state.settings.server, &state.mail)
                        .await
                })
            },
            wake: Some(|state| state.notifier.mail.immediate_wake()),
        },
        Job {
            // The daily digests, from `digest_hour_utc` on, members taken
            // as the immediate mails are.
            name: "mail_digests",
            period: crate::services::notifications::mail::DIGEST_PERIOD,
            scope: Scope::EachInstance,
            run: |state| {
                Box::pin(async move {
                    state
                        .notifier
                        .mail
                        .mail_digests(&state.db, &state.settings.server, &state.mail)
                        .await
                })
            },
            wake: Some(|state| state.notifier.mail.digest_wake()),
        },
        Job {
            // New posts' feed entries for their authors' followers; every
            // instance writes, each batch locking its queued post (see
            // `posts::feed`). The feed reads a queued post from the queue
            // meanwhile, so the period bounds only how long it does.
            name: "feed_fanout",
            period: Duration::from_secs(1),
            scope: Scope::EachInstance,
            run: |state| {
                Box::pin(async move {
                    let done = state
                        .db
                        .fan_out_feeds(FEED_FANOUT_BATCHES_PER_RUN)
                        .await
                        .map_err(|error| error.to_string())?;
                    Ok(if done.entries == 0 && done.posts_done == 0 {
                        String::new()
                    } else {
                        format!(
                            "wrote {} feed entries, finished {} posts",
                            done.entries, done.posts_done
                        )
                    })
                })
            },
            wake: None,
        },
        Job {
            // Webhook deliveries: every instance sends, each attempt claimed
            // on its own (see `webhooks::deliver`); an event written on
            // this instance wakes its sender at once.
            name: "deliver_webhooks",
            period: crate::services::webhooks::deliver::SENDER_PERIOD,
            scope: Scope::EachInstance,
            run: |state| {
                Box::pin(async move {
                    state
                        .webhooks
                        .deliver_due(&state.db, &state.instance_id)
                        .await
                })
            },
            wake: Some(|state| state.webhooks.wake()),
        },
        Job {
            // Webhook deliveries finished over 30 days ago, their attempts
            // and the events no delivery names any more.
            name: "purge_webhook_deliveries",
            period: Duration::from_secs(3600),
            scope: Scope::Cluster {
                lease: Duration::from_secs(600),
            },
            run: |state| {
                Box::pin(async move {
                    let before = now_millis() - WEBHOOK_DELIVERY_RETENTION_MILLIS;
                    state
                        .db
                        .purge_finished_deliveries(before, 10_000)
                        .await
                        .map(|removed| {
                            if removed == 0 {
                                String::new()
                            } else {
                                format!("removed {removed} webhook deliveries")
                            }
                        })
                        .map_err(|error| error.to_string())
                })
            },
            wake: None,
        },
        Job {
            // Sent and failed mail older than `mail_retention_days`.
            name: "purge_finished_mail",
            period: Duration::from_secs(3600),
            scope: Scope::Cluster {
                lease: Duration::from_secs(600),
            },
            run: |state| {
                Box::pin(async move {
                    crate::services::mail::purge_finished(&state.db, &state.settings.mail).await
                })
            },
            wake: None,
        },
        Job {
            // Without `smtp_url`, each instance writes mail into its own
            // data directory, and removes it there after the same time.
            name: "purge_mail_files",
            period: Duration::from_secs(3600),
            scope: Scope::EachInstance,
            run: |state| {
                Box::pin(async move {
                    crate::services::mail::purge_old_files(&state.mail, &state.settings.mail).await
                })
            },
            wake: None,
        },
    ];
    if settings.storage.backup_interval_hours > 0 {
        let period = Duration::from_secs(settings.storage.backup_interval_hours * 3600);
        jobs.push(Job {
            // A backup archive into `<data_dir>/backups`, as the
            // `backup_database` action writes; the claim lasts a whole
            // period, so a long backup is never started twice.
            name: "scheduled_backup",
            period,
            scope: Scope::Cluster { lease: period },
            run: |state| {
                Box::pin(async move {
                    let report = state
                        .maintenance()
                        .backup_into_data_dir()
                        .await
                        .map_err(|error| format!("the scheduled backup failed: {error}"))?;
                    tracing::info!(
                        file = %report.file_name,
                        size_bytes = report.size_bytes,
                        pruned = ?report.pruned,
                        "scheduled backup written"
                    );
                    Ok(format!("wrote {}", report.file_name))
                })
            },
            wake: None,
        });
    }
    jobs
}

/// Starts every job until `stop` is cancelled.
pub fn spawn_all(state: &AppState, stop: CancellationToken) {
    for job in jobs(&state.settings) {
        let state = state.clone();
        let stop = stop.clone();
        state.clone().background.spawn(async move {
            let mut interval = tokio::time::interval(job.period);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = stop.cancelled() => break,
                    _ = interval.tick() => run_once(&state, &job).await,
                    () = woken(&state, job.wake) => run_once(&state, &job).await,
                }
            }
        });
    }
}

/// Ends this instance's claim of a run of `job`, by the database's clock.
async fn finish_claim(state: &AppState, job: &str) -> Result<(), plaza_domain::DomainError> {
    let now = state.db.clock_millis().await?;
    state.db.finish_job(job, &state.instance_id, now).await
}

/// Completes when `wake` is notified; never without one.
async fn woken(state: &AppState, wake: Option<Wake>) {
    match wake {
        Some(wake) => wake(state).notified().await,
        None => std::future::pending().await,
    }
}

/// One run of `job`, if this instance may run it now.
async fn run_once(state: &AppState, job: &Job) {
    let millis = |duration: Duration| i64::try_from(duration.as_millis()).unwrap_or(i64::MAX);
    if let Scope::Cluster { lease } = job.scope {
        // The database's clock, not this instance's: one running ahead
        // would otherwise win every claim and run each job early.
        let now = match state.db.clock_millis().await {
            Ok(now) => now,
            Err(error) => {
                tracing::warn!(job = job.name, %error, "could not claim a job run");
                return;
            }
        };
        let claim = Claim {
            job: job.name,
            owner: &state.instance_id,
            now,
            locked_until: now.saturating_add(millis(lease)),
            // A little early, so a tick that comes a few milliseconds
            // before a whole period has passed does not skip a run.
            next_run_at: now.saturating_add(millis(job.period) * 9 / 10),
        };
        match state.db.claim_job(claim).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(error) => {
                tracing::warn!(job = job.name, %error, "could not claim a job run");
                return;
            }
        }
    }
    match (job.run)(state.clone()).await {
        Ok(outcome) => {
            if !outcome.is_empty() {
                tracing::debug!(job = job.name, outcome, "job ran");
            }
            metrics::counter!("plaza_job_runs_total", "job" => job.name, "outcome" => "success")
                .increment(1);
            metrics::gauge!("plaza_job_last_success_timestamp_seconds", "job" => job.name)
                .set(now_millis() as f64 / 1000.0);
        }
        Err(error) => {
            tracing::warn!(job = job.name, %error, "job failed");
            metrics::counter!("plaza_job_runs_total", "job" => job.name, "outcome" => "failure")
                .increment(1);
        }
    }
    if let Scope::Cluster { .. } = job.scope
        && let Err(error) = finish_claim(state, job.name).await
    {
        tracing::warn!(job = job.name, %error, "could not end a job claim");
    }
}
