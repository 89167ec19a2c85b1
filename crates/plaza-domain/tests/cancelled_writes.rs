//! A unit of work whose caller goes away before it commits (an HTTP client
//! that disconnects mid-request) must not leave SQLite's write lock behind:
//! the next unit of work has to get it.

use std::time::Duration;

use plaza_domain::audit::{self, AuditAction, AuditContext};
use plaza_domain::{Database, DatabaseOptions};

fn action() -> AuditAction<'static> {
    AuditAction {
        action: "test.cancelled_write",
        target_type: "test",
        target_id: None,
        changes: serde_json::json!({}),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_unit_of_work_releases_the_write_lock() {
    let folder = tempfile::tempdir().expect("temporary directory");
    let url = format!("sqlite://{}", folder.path().join("plaza.db").display());
    let options = DatabaseOptions {
        max_connections: 4,
        acquire_timeout: Duration::from_secs(2),
        sqlite_busy_timeout: Duration::from_millis(500),
        application_name: None,
    };
    let db = Database::connect(&url, &options).await.expect("connect");
    db.migrate().await.expect("migrate");
    // Units of work cut off wherever they happen to be (waiting for their
    // turn, in BEGIN, mid-statement, in COMMIT), as a load generator that
    // closes its connections does to requests in flight.
    for round in 0..40 {
        let writers: Vec<_> = (0..8)
            .map(|_| {
                let db = db.clone();
                tokio::spawn(async move {
                    loop {
                        let _ = db
                            .write(|tx| {
                                Box::pin(async move {
                                    audit::record(tx, &AuditContext::system(), action()).await
                                })
                            })
                            .await;
                    }
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(5 + round % 7)).await;
        for writer in &writers {
            writer.abort();
        }
        for writer in writers {
            let _ = writer.await;
        }
        db.write(|tx| {
            Box::pin(async move { audit::record(tx, &AuditContext::system(), action()).await })
        })
        .await
        .unwrap_or_else(|error| panic!("round {round}: a later write failed: {error}"));
    }
}
