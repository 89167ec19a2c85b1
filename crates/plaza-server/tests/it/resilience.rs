//! Failure behaviour: the database going away and coming back, and a
//! graceful shutdown that finishes what it started.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use crate::common::{Backend, PASSWORD, PostgresDatabase, TestServer, postgres_enabled};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

on_both_databases!(a_cancelled_unit_of_work_lets_go_of_its_locks);

/// A loopback TCP proxy to PostgreSQL that the test can cut and restore.
struct Switch {
    port: u16,
    target: u16,
    up: Arc<AtomicBool>,
    cut: Arc<Notify>,
    refused: Arc<AtomicU32>,
    refused_once: Arc<Notify>,
    accepting: std::sync::Mutex<tokio::task::JoinHandle<()>>,
}

impl Switch {
    async fn start(target: u16, up: bool) -> Switch {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut switch = Switch {
            port: listener.local_addr().unwrap().port(),
            target,
            up: Arc::new(AtomicBool::new(up)),
            cut: Arc::new(Notify::new()),
            refused: Arc::new(AtomicU32::new(0)),
            refused_once: Arc::new(Notify::new()),
            accepting: std::sync::Mutex::new(tokio::spawn(async {})),
        };
        *switch.accepting.get_mut().unwrap() = switch.accept(listener);
        switch
    }

    /// Stops listening, as a database machine that went away: connecting
    /// is refused by the operating system, and open connections are cut.
    fn close(&self) {
        self.accepting.lock().unwrap().abort();
        self.cut.notify_waiters();
    }

    /// Listens again on the same port.
    async fn reopen(&self) {
        let listener = TcpListener::bind(("127.0.0.1", self.port)).await.unwrap();
        *self.accepting.lock().unwrap() = self.accept(listener);
    }

    fn accept(&self, listener: TcpListener) -> tokio::task::JoinHandle<()> {
        let target = self.target;
        let (up, cut, refused, refused_once) = (
            self.up.clone(),
            self.cut.clone(),
            self.refused.clone(),
            self.refused_once.clone(),
        );
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                if !up.load(Ordering::SeqCst) {
                    refused.fetch_add(1, Ordering::SeqCst);
                    refused_once.notify_waiters();
                    drop(client);
                    continue;
                }
                let cut = cut.clone();
                tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(("127.0.0.1", target)).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        () = cut.notified() => {}
                    }
                });
            }
        })
    }

    fn down(&self) {
        self.up.store(false, Ordering::SeqCst);
        self.cut.notify_waiters();
    }

    fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

fn proxied(url: &str, port: u16) -> String {
    let mut url = url::Url::parse(url).unwrap();
    url.set_port(Some(port)).unwrap();
    url.to_string()
}

fn postgres_port() -> u16 {
    url::Url::parse(&common::postgres_admin_url().unwrap())
        .unwrap()
        .port()
        .unwrap_or(5432)
}

/// A fresh PostgreSQL database reached through a switch that starts up or
/// down: the database (dropped with the test), the switch, and the URL
/// through it.
async fn behind_a_switch(up: bool) -> (PostgresDatabase, Switch, String) {
    let database = PostgresDatabase::create().await;
    let switch = Switch::start(postgres_port(), up).await;
    let url = proxied(&database.url, switch.port);
    (database, switch, url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_goes_away_gives_503_and_recovers() {
    if !postgres_enabled("a_database_that_goes_away_gives_503_and_recovers") {
        return;
    }
    let (_database, switch, url) = behind_a_switch(true).await;
    let server = TestServer::start_with(
        Backend::Postgres,
        &[
            ("PLAZA_DATABASE_URL", &url),
            ("PLAZA_DATABASE_ACQUIRE_TIMEOUT_SECS", "1"),
        ],
    )
    .await;
    assert_eq!(server.get("/api/health").await.status(), 200);

    let new_user = serde_json::json!({"email": "a@b.co", "password": "long enough"});
    switch.down();
    let health = health_once(&server, 503).await;
    assert_eq!(health.status(), 503);
    let body: Value = health.json().await.unwrap();
    assert_eq!(body["status"], "error");
    assert_eq!(body["database"], "unreachable");
    let sign_up = server.sign_up(&new_user).await;
    assert_eq!(
        sign_up.status(),
        503,
        "a database outage is not a client error or a 500"
    );
    let body: Value = sign_up.json().await.unwrap();
    assert_eq!(body["error"]["code"], "SERVICE_UNAVAILABLE");
    assert!(!server.logs().contains("panicked"));

    switch.restore();
    let health = health_once(&server, 200).await;
    assert_eq!(health.status(), 200, "{}", server.logs());
    let sign_up = server.sign_up(&new_user).await;
    assert_eq!(sign_up.status(), 201);
}

/// Once a connection attempt has failed, requests do not each wait the
/// acquire timeout for a database that is down: one at a time tries again,
/// the others are answered 503 at once, and the first success ends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_known_to_be_down_is_answered_at_once() {
    if !postgres_enabled("a_database_known_to_be_down_is_answered_at_once") {
        return;
    }
    let (_database, switch, url) = behind_a_switch(true).await;
    let server = TestServer::start_with(
        Backend::Postgres,
        &[
            ("PLAZA_DATABASE_URL", &url),
            ("PLAZA_DATABASE_ACQUIRE_TIMEOUT_SECS", "2"),
        ],
    )
    .await;
    let search = "/api/search/users?q=nobody";
    assert_eq!(server.get(search).await.status(), 200);
    switch.close();
    let answered_at_once = || {
        server
            .logs()
            .matches(plaza_domain::db::DATABASE_DOWN)
            .count()
    };
    // The outage is learnt by a request that waited for a connection in vain.
    for _ in 0..5 {
        assert_eq!(server.get(search).await.status(), 503);
        if server.logs().contains("pool timed out") {
            break;
        }
    }
    assert!(
        server.logs().contains("pool timed out"),
        "{}",
        server.logs()
    );
    let before = answered_at_once();
    let at_once: Vec<_> = (0..10).map(|_| server.get(search)).collect();
    for answer in futures_util::future::join_all(at_once).await {
        assert_eq!(answer.status(), 503);
    }
    assert!(
        answered_at_once() >= before + 9,
        "at most one of ten requests may wait for the database:\n{}",
        server.logs()
    );
    switch.reopen().await;
    let health = health_once(&server, 200).await;
    assert_eq!(health.status(), 200, "{}", server.logs());
    assert_eq!(server.get(search).await.status(), 200);
    assert!(!server.logs().contains("panicked"));
}

/// Connections go from request to request without a test while busy (see
/// `Database::lease`); when the database ends them all, a request may find
/// one gone (503, never 500), and every warm connection is then tested, so
/// the next requests are answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_the_database_ends_are_replaced() {
    if !postgres_enabled("connections_the_database_ends_are_replaced") {
        return;
    }
    let server = TestServer::start(Backend::Postgres).await;
    let search = "/api/search/users?q=nobody";
    // Several requests at once, so that several connections are warm.
    let warm_up: Vec<_> = (0..6).map(|_| server.get(search)).collect();
    for answer in futures_util::future::join_all(warm_up).await {
        assert_eq!(answer.status(), 200);
    }
    let mut admin = <sqlx::PgConnection as sqlx::Connection>::connect(&server.database_url)
        .await
        .unwrap();
    let (ended,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid()) ended",
    )
    .fetch_one(&mut admin)
    .await
    .unwrap();
    assert!(ended >= 2, "only {ended} connections were open");
    let first = server.get(search).await.status();
    assert!(
        first == 200 || first == 503,
        "the first request after the connections ended answered {first}"
    );
    for attempt in 0..5 {
        let answer = server.get(search).await;
        assert_eq!(answer.status(), 200, "request {attempt} after the first");
    }
    assert!(!server.logs().contains("panicked"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_waits_for_a_database_that_comes_up_late() {
    if !postgres_enabled("start_up_waits_for_a_database_that_comes_up_late") {
        return;
    }
    let (_database, switch, url) = behind_a_switch(false).await;
    // Bring the database "up" once Plaza has been refused at least once.
    let refused_once = switch.refused_once.clone();
    let up = switch.up.clone();
    let opener = tokio::spawn(async move {
        refused_once.notified().await;
        up.store(true, Ordering::SeqCst);
    });
    let server = tokio::task::spawn_blocking(move || {
        tokio::runtime::Handle::current().block_on(TestServer::start_with(
            Backend::Postgres,
            &[
                ("PLAZA_DATABASE_URL", &url),
                ("PLAZA_DATABASE_CONNECT_TIMEOUT_SECS", "30"),
            ],
        ))
    })
    .await
    .unwrap();
    opener.await.unwrap();
    assert!(switch.refused.load(Ordering::SeqCst) >= 1);
    assert!(
        server.logs().contains("database not reachable yet"),
        "{}",
        server.logs()
    );
    assert_eq!(server.get("/api/health").await.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_finishes_requests_in_flight() {
    let mut server = TestServer::start(Backend::Sqlite).await;
    let address = server.base.trim_start_matches("http://").to_owned();
    let body = r#"{"email":"nobody@example.com","password":"not the password"}"#;
    let mut stream = TcpStream::connect(&address).await.unwrap();
    // `Expect: 100-continue` makes the server say when the handler starts
    // reading the body: only then is the request surely in flight (a
    // connection still in the listen backlog is reset at shutdown).
    let head = format!(
        "POST /api/auth/signin HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.flush().await.unwrap();
    let mut interim = Vec::new();
    while !interim.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        stream.read_exact(&mut byte).await.unwrap();
        interim.push(byte[0]);
    }
    assert!(
        interim.starts_with(b"HTTP/1.1 100"),
        "{}",
        String::from_utf8_lossy(&interim)
    );

    let pid = server.pid();
    std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    server.wait_for_log("shutdown requested");
    // The request started before the signal still gets its answer.
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    let status = server.terminate();
    assert!(status.success(), "{status:?}");
    // New connections are refused once it has stopped.
    assert!(TcpStream::connect(&address).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_signal_right_after_start_up_is_a_graceful_stop() {
    let mut server = TestServer::start(Backend::Sqlite).await;
    // Sent as soon as the server says it listens: the signal handlers must
    // already be installed, or SIGTERM kills the process outright.
    let status = server.terminate();
    assert!(status.success(), "{status:?}\n{}", server.logs());
    assert!(
        server.logs().contains("shutdown requested"),
        "{}",
        server.logs()
    );
}

/// A unit of work dropped half-way (its request gone) must not keep its
/// locks on the connection it leaves behind: a writer waiting for the same
/// row on another connection goes on. (On PostgreSQL a dropped transaction
/// only queues its ROLLBACK; idle, the connection never sent it.)
async fn a_cancelled_unit_of_work_lets_go_of_its_locks(backend: Backend) {
    let server = TestServer::start(backend).await;
    let user = server.create_user("locked@example.com", PASSWORD, "user");
    let db = server.domain().await;
    let locked = Arc::new(Notify::new());
    let holder = {
        let (db, locked) = (db.clone(), Arc::clone(&locked));
        tokio::spawn(async move {
            db.write(move |tx| {
                Box::pin(async move {
                    rename(tx, user, "holder").await?;
                    locked.notify_one();
                    std::future::pending::<()>().await;
                    Ok(())
                })
            })
            .await
        })
    };
    locked.notified().await;
    let waiter = {
        let db = db.clone();
        tokio::spawn(async move {
            db.write(move |tx| Box::pin(rename(tx, user, "waiter")))
                .await
        })
    };
    if backend == Backend::Postgres {
        // The waiter holds a connection of its own and waits for the row.
        assert!(
            common::until_a_lock_is_awaited(&server.database_url, || false).await,
            "the waiter never waited"
        );
    }
    holder.abort();
    let finished = tokio::time::timeout(std::time::Duration::from_secs(10), waiter).await;
    let outcome = finished.expect("the waiter still waits for the cancelled unit's row lock");
    outcome.expect("task").expect("the waiter's write");
    let renamed = server
        .sql_count(&format!(
            "SELECT COUNT(*) FROM users WHERE id = {user} AND name = 'waiter'"
        ))
        .await;
    assert_eq!(renamed, 1);
}

async fn rename(
    tx: &mut plaza_domain::Tx<'_>,
    user: i64,
    name: &'static str,
) -> Result<(), plaza_domain::DomainError> {
    sqlx::query("UPDATE users SET name = $1 WHERE id = $2")
        .bind(name)
        .bind(user)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// `GET /api/health` until it answers `status` (its probes are reused for
/// up to a second) or five seconds pass: the last answer.
async fn health_once(server: &TestServer, status: u16) -> reqwest::Response {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let health = server.get("/api/health").await;
        if health.status() == status || std::time::Instant::now() > deadline {
            return health;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
