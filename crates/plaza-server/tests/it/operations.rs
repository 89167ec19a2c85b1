//! What an operator sees and relies on: the access line of every answer,
//! logs without colour codes in files, the start-up line naming the
//! migrations it ran, the process, pool, queue and job figures of the
//! metrics, one server per embedded database, and a health answer a load
//! balancer can follow.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Backend, Prepared, Schema, TestServer, plaza_command};

on_both_databases!(
    health_is_ready_while_shared_dependencies_are_down_and_reports_a_low_disk,
    every_answer_is_logged_at_info_with_its_fields,
    text_logs_carry_no_colour_codes_off_a_terminal,
    the_start_up_line_names_the_migrations_it_ran,
    metrics_show_the_process_the_pool_the_queues_and_each_job,
    the_command_line_reads_the_services_settings_and_refuses_another_database,
    postgresql_with_generated_keys_is_warned_about_at_start,
    a_scrape_credential_reads_the_metrics_without_expiring,
);

/// The access line of `request_id`, as JSON.
fn access_line(server: &TestServer, request_id: &str) -> Value {
    server.wait_for_log(request_id);
    let logs = server.logs();
    let line = logs
        .lines()
        .find(|line| line.contains("plaza::access") && line.contains(request_id))
        .unwrap_or_else(|| panic!("no access line for {request_id}:\n{logs}"));
    serde_json::from_str(line).unwrap_or_else(|error| panic!("{error}: {line}"))
}

async fn every_answer_is_logged_at_info_with_its_fields(backend: Backend) {
    let server = TestServer::start_with(backend, &[("PLAZA_LOG_FORMAT", "json")]).await;
    for (path, status) in [("/api/version", 200), ("/api/no-such-route", 404)] {
        let request_id = format!("access-{status}");
        let answer = server
            .client
            .get(server.url(&format!("{path}?token=secret")))
            .header("x-request-id", &request_id)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status().as_u16(), status);
        assert_eq!(answer.headers()["x-request-id"], request_id.as_str());
        let line = access_line(&server, &request_id);
        assert_eq!(line["level"], "INFO", "{line}");
        assert_eq!(line["method"], "GET", "{line}");
        assert_eq!(line["path"], path, "the path alone: {line}");
        assert_eq!(line["status"], status, "{line}");
        assert!(line["duration_ms"].as_f64().is_some(), "{line}");
        assert_eq!(line["request_id"], request_id.as_str(), "{line}");
        assert_eq!(line["client"], "127.0.0.1", "{line}");
        assert_eq!(line["query"], "token=REDACTED", "{line}");
        assert!(line.get("user_id").is_none(), "nobody signed in: {line}");
        assert!(!line.to_string().contains("secret"), "{line}");
    }
    // A signed-in request names its user, its user agent and its query,
    // with whatever looks like a secret redacted.
    let (id, cookie) = crate::common::member(&server, "ada@example.com", "user").await;
    let answer = server
        .client
        .get(server.url("/api/posts?page=2&access_token=abc&oauth_code=xyz"))
        .header("x-request-id", "access-signed-in")
        .header("cookie", &cookie)
        .header("user-agent", "Plaza tester/1.0")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let line = access_line(&server, "access-signed-in");
    assert_eq!(line["user_id"], id, "{line}");
    assert_eq!(line["user_agent"], "Plaza tester/1.0", "{line}");
    assert_eq!(
        line["query"], "page=2&access_token=REDACTED&oauth_code=REDACTED",
        "{line}"
    );
}

async fn text_logs_carry_no_colour_codes_off_a_terminal(backend: Backend) {
    let server = TestServer::start(backend).await;
    let answer = server
        .client
        .get(server.url("/api/version"))
        .header("x-request-id", "plain-text-line")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    server.wait_for_log("plain-text-line");
    let logs = server.logs();
    let line = logs
        .lines()
        .find(|line| line.contains("plain-text-line"))
        .unwrap();
    assert!(line.contains(" INFO plaza::access: "), "{line}");
    assert!(line.contains("status=200"), "{line}");
    assert!(
        !logs.contains('\u{1b}'),
        "escape codes in the logs:\n{logs:?}"
    );
}

async fn the_start_up_line_names_the_migrations_it_ran(backend: Backend) {
    let mut first = Prepared::starting_from(backend, Schema::Empty, "", &[])
        .await
        .serve();
    let logs = first.logs();
    let migrated = logs
        .lines()
        .find(|line| line.contains("schema migrated"))
        .unwrap_or_else(|| panic!("no migration line:\n{logs}"));
    assert!(migrated.contains("0001_identity"), "{migrated}");
    first.wait_for_log("listening on http://127.0.0.1:");
    first.terminate();
    let again =
        TestServer::start_with(backend, &[("PLAZA_DATABASE_URL", &first.database_url)]).await;
    let logs = again.logs();
    assert!(logs.contains("schema is up to date"), "{logs}");
    assert!(!logs.contains("schema migrated"), "{logs}");
}

/// The value of the sample `name` (with its labels, as rendered) in `text`.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

async fn metrics_show_the_process_the_pool_the_queues_and_each_job(backend: Backend) {
    let server = TestServer::start_with(backend, &[("PLAZA_METRICS_PUBLIC", "true")]).await;
    // The job that folds latencies runs every second on each instance.
    let job = r#"{job="metrics_upkeep",outcome="success"}"#;
    let deadline = Instant::now() + Duration::from_secs(30);
    let text = loop {
        let text = server.get("/api/metrics").await.text().await.unwrap();
        if sample(&text, &format!("plaza_job_runs_total{job}")).is_some() {
            break text;
        }
        assert!(Instant::now() < deadline, "no job runs counted:\n{text}");
    };
    let resident = sample(&text, "process_resident_memory_bytes").unwrap_or_default();
    assert!(resident > 1_000_000.0, "{text}");
    assert!(
        sample(&text, "process_open_fds").unwrap_or_default() > 0.0,
        "{text}"
    );
    assert!(
        sample(&text, "process_cpu_seconds_total").is_some(),
        "{text}"
    );
    assert!(
        sample(
            &text,
            r#"plaza_job_last_success_timestamp_seconds{job="metrics_upkeep"}"#
        )
        .unwrap_or_default()
            > 1.7e9,
        "{text}"
    );
    assert!(sample(&text, "db_pool_waits_total").is_some(), "{text}");
    assert!(sample(&text, "db_pool_timeouts_total").is_some(), "{text}");
    assert_eq!(
        sample(&text, r#"plaza_queue_depth{queue="analytics"}"#),
        Some(0.0),
        "{text}"
    );
    // The mail queue of every instance: one waiting, two given up on.
    for status in ["pending", "failed", "failed"] {
        server
            .sql(&format!(
                "INSERT INTO outgoing_mail (kind, recipient, subject, status, next_attempt_at, created_at) \
                 VALUES ('verify_email', 'a@example.com', 'S', '{status}', 9999999999999, 0)"
            ))
            .await;
    }
    let text = server.get("/api/metrics").await.text().await.unwrap();
    assert_eq!(
        sample(&text, r#"plaza_mail_queue{status="pending"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"plaza_mail_queue{status="failed"}"#),
        Some(2.0),
        "{text}"
    );
}

/// Waits until `child` exits, at most 30 s; kills it and fails if it runs on.
fn exit_of(mut child: std::process::Child) -> std::process::Output {
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "a second server kept running:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_server_on_an_embedded_database_stops_at_once() {
    let mut first = TestServer::start(Backend::Sqlite).await;
    let second = first
        .command()
        .arg("serve")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let output = exit_of(second);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let directory = first.data_dir.path().display().to_string();
    assert!(stderr.contains(&directory), "{stderr}");
    assert!(stderr.contains(&format!("pid {}", first.pid())), "{stderr}");

    // A crash leaves no lock behind: the next server starts.
    first.kill();
    let next = TestServer::start_with(
        Backend::Sqlite,
        &[("PLAZA_DATABASE_URL", &first.database_url)],
    )
    .await;
    assert_eq!(next.get("/api/version").await.status(), 200);
}

/// `plaza user create` of `email` with `command`'s settings.
fn create_user(mut command: std::process::Command, email: &str) -> std::process::Output {
    command
        .args([
            "user",
            "create",
            "--email",
            email,
            "--password",
            "a long passphrase",
        ])
        .output()
        .expect("run plaza")
}

async fn the_command_line_reads_the_services_settings_and_refuses_another_database(
    backend: Backend,
) {
    let mut server = TestServer::start(backend).await;
    let data_dir = server.data_dir.path().to_owned();
    let users = |email: &str| format!("SELECT COUNT(*) FROM users WHERE email = '{email}'");

    // The settings file and the plaza.env beside it, as the package has them.
    let etc = tempfile::tempdir().unwrap();
    std::fs::write(etc.path().join("plaza.toml"), "signup = true\n").unwrap();
    std::fs::write(
        etc.path().join("plaza.env"),
        format!(
            "# secrets\nPLAZA_DATA_DIR={}\nPLAZA_DATABASE_URL=\"{}\"\n",
            data_dir.display(),
            server.database_url
        ),
    )
    .unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let mut command = plaza_command(&[]);
    command
        .current_dir(elsewhere.path())
        .arg("--config")
        .arg(etc.path().join("plaza.toml"));
    let output = create_user(command, "given@example.com");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(server.sql_count(&users("given@example.com")).await, 1);
    // Found in the working directory without --config, plaza.env beside it.
    let mut command = plaza_command(&[]);
    command.current_dir(etc.path());
    let output = create_user(command, "found@example.com");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(server.sql_count(&users("found@example.com")).await, 1);

    // The data directory's SQLite file (PostgreSQL), or another one.
    let stale = if server.database_url.starts_with("sqlite") {
        data_dir.join("stale.db")
    } else {
        data_dir.join("plaza.db")
    };
    let stale_url = format!("sqlite://{}", stale.display());
    let stale_env = [("PLAZA_DATABASE_URL", stale_url.as_str())];
    for args in [
        &[
            "user",
            "create",
            "--email",
            "stale@example.com",
            "--password",
            "a long passphrase",
        ][..],
        &["migrate"][..],
        &[
            "backup",
            "--output",
            &data_dir.join("stale.tar.gz").display().to_string(),
        ][..],
    ] {
        let output = server.cli_with_env(&stale_env, args);
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("would act on sqlite:"), "{stderr}");
        assert!(stderr.contains("nothing was changed"), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
    assert!(!stale.exists() || !server.database_url.starts_with("sqlite"));
    assert!(!data_dir.join("stale.tar.gz").exists());

    // With no service running the command does what it is told.
    assert!(server.terminate().success());
    let output = server.cli_with_env(&stale_env, &["migrate"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A VAPID private key: 32 bytes of a P-256 scalar, base64url.
const VAPID_KEY: &str = "RS0WdYWWo1HajXg3NZR1olzCf31i-ZBGDkFyCs7j1jw";

async fn postgresql_with_generated_keys_is_warned_about_at_start(backend: Backend) {
    let warning = "PostgreSQL with keys generated";
    // Test servers set jwt_secret only.
    let server = TestServer::start(backend).await;
    let postgres = server.database_url.starts_with("postgres");
    server.wait_for_log("listening on");
    let logs = server.logs();
    let line = logs.lines().find(|line| line.contains(warning));
    assert_eq!(line.is_some(), postgres, "{logs}");
    if let Some(line) = line {
        assert!(line.contains("WARN"), "{line}");
        assert!(
            line.contains("(totp_key, analytics_salt, vapid_private_key, webhook_key)"),
            "{line}"
        );
    }
    drop(server);
    let key = "a-key-of-at-least-32-characters-0123456789";
    let server = TestServer::start_with(
        backend,
        &[
            ("PLAZA_TOTP_KEY", key),
            ("PLAZA_ANALYTICS_SALT", key),
            ("PLAZA_VAPID_PRIVATE_KEY", VAPID_KEY),
            ("PLAZA_WEBHOOK_KEY", key),
        ],
    )
    .await;
    server.wait_for_log("listening on");
    assert!(!server.logs().contains(warning), "{}", server.logs());
}

/// Health is 200 while the upload store (shared by every instance) does
/// not answer, saying `degraded` and naming it: a load balancer following
/// health keeps the instance, whose posts and reads still work. A data
/// directory with less free space than `disk_free_min_mb` is reported
/// `low`.
async fn health_is_ready_while_shared_dependencies_are_down_and_reports_a_low_disk(
    backend: Backend,
) {
    // A port nothing listens on: the store refuses every connection.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let env = crate::uploads::s3_env(&endpoint, "2");
    let mut env = crate::uploads::borrowed(&env);
    env.push(("PLAZA_DISK_FREE_MIN_MB", "1000000000000"));
    let server = TestServer::start_with(backend, &env).await;
    let answer = server.get("/api/health").await;
    assert_eq!(answer.status(), 200);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["status"], "degraded", "{body}");
    assert_eq!(body["database"], "connected", "{body}");
    assert_eq!(body["storage"], "unreachable", "{body}");
    assert_eq!(body["disk"], "low", "{body}");
    assert!(body["disk_free_bytes"].as_u64().is_some(), "{body}");
    let posts = server.get("/api/posts").await;
    assert_eq!(posts.status(), 200, "reads still work");

    let plain = TestServer::start(backend).await;
    let body: Value = plain.get("/api/health").await.json().await.unwrap();
    assert_eq!(
        (&body["status"], &body["disk"]),
        (&"ok".into(), &"ok".into()),
        "{body}"
    );
}

async fn a_scrape_credential_reads_the_metrics_without_expiring(backend: Backend) {
    let credential = "a-scrape-credential-of-32-characters-or-more";
    let server = TestServer::start_with(backend, &[("PLAZA_METRICS_TOKEN", credential)]).await;
    let scrape = |bearer: Option<&'static str>| {
        let mut request = server.client.get(server.url("/api/metrics"));
        if let Some(bearer) = bearer {
            request = request.bearer_auth(bearer);
        }
        async move { request.send().await.unwrap() }
    };
    let answer = scrape(Some(credential)).await;
    assert_eq!(answer.status(), 200);
    assert!(
        answer
            .text()
            .await
            .unwrap()
            .contains("process_resident_memory_bytes")
    );
    assert_eq!(
        scrape(Some("a-scrape-credential-of-32-characters-or-less"))
            .await
            .status(),
        401
    );
    assert_eq!(scrape(None).await.status(), 401);

    let data_dir = tempfile::tempdir().unwrap();
    let output = plaza_command(&[
        (
            "PLAZA_DATA_DIR".to_owned(),
            data_dir.path().display().to_string(),
        ),
        ("PLAZA_METRICS_TOKEN".to_owned(), "short".to_owned()),
    ])
    .arg("migrate")
    .output()
    .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("metrics_token"));
}

on_postgres!(
    a_database_that_refuses_or_is_not_there_is_named_at_start,
    a_read_only_data_directory_is_named_at_start,
);

/// `plaza migrate` against `url`, waiting up to `timeout_secs` for it.
fn migrate_against(url: &str, timeout_secs: &str) -> std::process::Output {
    let data_dir = tempfile::tempdir().unwrap();
    plaza_command(&[
        (
            "PLAZA_DATA_DIR".to_owned(),
            data_dir.path().display().to_string(),
        ),
        ("PLAZA_DATABASE_URL".to_owned(), url.to_owned()),
        (
            "PLAZA_DATABASE_CONNECT_TIMEOUT_SECS".to_owned(),
            timeout_secs.to_owned(),
        ),
    ])
    .arg("migrate")
    .output()
    .unwrap()
}

async fn a_database_that_refuses_or_is_not_there_is_named_at_start() {
    let admin = crate::common::postgres_admin_url().unwrap();
    let server = admin.rsplit_once('/').unwrap().0.to_owned();
    // A database and a role the server does not know: refused at once,
    // whatever time connecting may take, saying what to check.
    for url in [
        format!("{server}/no_such_database_of_plaza"),
        admin.replacen("postgres@", "no_such_role_of_plaza@", 1),
    ] {
        let output = migrate_against(&url, "300");
        assert_eq!(output.status.code(), Some(1), "{output:?}");
        let said = String::from_utf8_lossy(&output.stderr);
        let last = said.lines().last().unwrap_or_default();
        assert!(last.contains("refused this connection"), "{said}");
        assert!(last.contains("does not exist"), "{said}");
        assert!(!said.contains("not reachable yet"), "no retries: {said}");
    }
    // Nothing listening: the cause is named, not only a timeout.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let output = migrate_against(&format!("postgres://postgres@127.0.0.1:{port}/test"), "1");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.to_lowercase().contains("connection refused"), "{said}");
}

/// On PostgreSQL, too, the server writes into its data directory (keys,
/// the record of the running server, mail as files): one that cannot be
/// written is named at start, before any database work.
async fn a_read_only_data_directory_is_named_at_start() {
    let database = crate::common::PostgresDatabase::create().await;
    // A directory no process may create files in, root included.
    let read_only = "/proc/self/fdinfo";
    let output = plaza_command(&[
        ("PLAZA_DATA_DIR".to_owned(), read_only.to_owned()),
        ("PLAZA_DATABASE_URL".to_owned(), database.url.clone()),
        ("PLAZA_BIND".to_owned(), "127.0.0.1:0".to_owned()),
    ])
    .arg("serve")
    .output()
    .unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let said = String::from_utf8_lossy(&output.stderr);
    let last = said.lines().last().unwrap_or_default();
    assert!(
        last.contains(&format!("the data directory {read_only} is not writable"))
            && last.contains("PLAZA_DATA_DIR"),
        "{said}"
    );
    assert!(!said.contains("schema"), "before any database work: {said}");
}
