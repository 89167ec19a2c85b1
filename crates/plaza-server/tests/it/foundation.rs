//! The foundation through HTTP: health, version, metrics, documentation,
//! error shapes, request ids, settings and database failures.

use crate::common;

use crate::common::{As, Backend, TestServer, plaza_command};
use serde_json::Value;

on_both_databases!(
    health_reports_a_real_database_round_trip,
    version_is_the_package_version_uncached_and_cross_origin,
    request_ids_are_generated_and_echoed,
    unknown_routes_are_404_in_the_general_shape,
    wrong_methods_are_405_with_allow,
    metrics_need_a_token_unless_public,
    metrics_count_requests_by_route_template,
    every_documented_operation_is_routed,
    swagger_ui_is_served_from_the_binary,
    database_is_created_and_migrated_on_first_start,
);

async fn health_reports_a_real_database_round_trip(backend: Backend) {
    let server = TestServer::start(backend).await;
    let response = server.get("/api/health").await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["status"], "ok");
    assert_eq!(body["database"], "connected");
    assert_eq!(body["version"], env!("CARGO_PKG_VERSION"));
    assert!(body["uptime"].as_str().unwrap().ends_with('s'), "{body}");
    let timestamp = body["timestamp"].as_str().unwrap();
    assert!(
        time::OffsetDateTime::parse(timestamp, &time::format_description::well_known::Rfc3339)
            .is_ok(),
        "{timestamp}"
    );
}

async fn version_is_the_package_version_uncached_and_cross_origin(backend: Backend) {
    let server = TestServer::start(backend).await;
    let response = server
        .client
        .get(server.url("/api/version"))
        .header("Origin", "https://elsewhere.example")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    assert_eq!(headers["access-control-allow-origin"], "*");
    assert!(
        !headers.contains_key("access-control-allow-credentials"),
        "a wildcard origin never comes with credentials"
    );
    let cache_control = headers["cache-control"].to_str().unwrap();
    assert!(cache_control.contains("no-store") && cache_control.contains("no-cache"));
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body,
        serde_json::json!({ "version": env!("CARGO_PKG_VERSION") })
    );
    let parts: Vec<&str> = body["version"].as_str().unwrap().split('.').collect();
    assert_eq!(parts.len(), 3);
    assert!(parts.iter().all(|part| part.parse::<u64>().is_ok()));
}

async fn request_ids_are_generated_and_echoed(backend: Backend) {
    let server = TestServer::start(backend).await;
    let generated = server.get("/api/version").await;
    let id = generated.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(id.len(), 36, "a UUID: {id}");
    let echoed = server
        .client
        .get(server.url("/api/nothing-here"))
        .header("X-Request-Id", "trace-me-42")
        .send()
        .await
        .unwrap();
    assert_eq!(echoed.headers()["x-request-id"], "trace-me-42");
}

async fn unknown_routes_are_404_in_the_general_shape(backend: Backend) {
    let server = TestServer::start(backend).await;
    for path in [
        "/api/nothing-here",
        "/api/v1/admin/nothing-here",
        "/nothing",
    ] {
        let response = server.get(path).await;
        assert_eq!(response.status(), 404, "{path}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "NOT_FOUND", "{path}: {body}");
        assert!(body["error"]["message"].is_string());
    }
}

async fn wrong_methods_are_405_with_allow(backend: Backend) {
    let server = TestServer::start(backend).await;
    let response = server
        .send(As::Anonymous, "DELETE", "/api/health", None)
        .await;
    assert_eq!(response.status(), 405);
    assert!(
        response.headers()["allow"]
            .to_str()
            .unwrap()
            .contains("GET")
    );
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "METHOD_NOT_ALLOWED");
    // The version surface has its own shape.
    let response = server
        .send(As::Anonymous, "POST", "/api/version", None)
        .await;
    assert_eq!(response.status(), 405);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["error"].is_string() && body["details"].is_string(),
        "{body}"
    );
}

async fn metrics_need_a_token_unless_public(backend: Backend) {
    let server = TestServer::start(backend).await;
    let response = server.get("/api/metrics").await;
    assert_eq!(response.status(), 401);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "UNAUTHORIZED");
}

async fn metrics_count_requests_by_route_template(backend: Backend) {
    let server = TestServer::start_with(backend, &[("PLAZA_METRICS_PUBLIC", "true")]).await;
    assert_eq!(server.get("/api/health").await.status(), 200);
    let response = server.get("/api/metrics").await;
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    let text = response.text().await.unwrap();
    assert!(
        text.lines()
            .any(|line| line.starts_with("http_requests_total")
                && line.contains("route=\"/api/health\"")
                && line.contains("status=\"200\"")),
        "{text}"
    );
    assert!(
        text.contains("http_request_duration_seconds_bucket"),
        "{text}"
    );
    assert!(text.contains("db_pool_connections"), "{text}");
}

async fn every_documented_operation_is_routed(backend: Backend) {
    let server = TestServer::start(backend).await;
    let document: Value = server.get("/api/openapi").await.json().await.unwrap();
    assert!(
        document["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        document["openapi"]
    );
    let paths = document["paths"].as_object().unwrap();
    assert!(paths.len() >= 5);
    for (path, item) in paths {
        for method in item.as_object().unwrap().keys() {
            let concrete = fill_path_parameters(path);
            let request = server.client.request(
                method.to_uppercase().parse().unwrap(),
                server.url(&concrete),
            );
            let response = request.send().await.unwrap();
            assert_ne!(
                response.status(),
                405,
                "{method} {path} is documented but not routed"
            );
            if response.status() == 404 {
                let body: Value = response.json().await.unwrap_or_default();
                assert_ne!(
                    body["error"]["message"], "no route matches this path",
                    "{method} {path} is documented but not routed"
                );
            }
        }
    }
}

/// Turns `/api/users/{id}` into a path the router can match.
fn fill_path_parameters(path: &str) -> String {
    path.split('/')
        .map(|segment| {
            if segment.starts_with('{') {
                "1"
            } else {
                segment
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

async fn swagger_ui_is_served_from_the_binary(backend: Backend) {
    let server = TestServer::start(backend).await;
    let redirect = server.get("/api/swagger").await;
    assert!(redirect.status().is_redirection());
    let page = server.get("/api/swagger/").await;
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains("swagger-ui"), "{html}");
    for asset in ["swagger-ui-bundle.js", "swagger-ui.css"] {
        assert!(!html.contains("cdn"), "no CDN references");
        let response = server.get(&format!("/api/swagger/{asset}")).await;
        assert_eq!(response.status(), 200, "{asset}");
        assert!(
            response.bytes().await.unwrap().len() > 10_000,
            "{asset} is bundled"
        );
    }
    let initializer = server
        .get("/api/swagger/swagger-initializer.js")
        .await
        .text()
        .await
        .unwrap();
    assert!(initializer.contains("/api/openapi"), "{initializer}");
}

async fn database_is_created_and_migrated_on_first_start(backend: Backend) {
    let server = TestServer::start(backend).await;
    if backend == Backend::Sqlite {
        assert!(server.data_dir.path().join("plaza.db").exists());
    }
    let data_dir = server.data_dir.path().display().to_string();
    assert_succeeded(&run_plaza(
        &[
            ("PLAZA_DATABASE_URL", &server.database_url),
            ("PLAZA_DATA_DIR", &data_dir),
        ],
        &["migrate"],
    ));
}

/// Runs `plaza args…` with only `env` (and the basics) set.
fn run_plaza(env: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .collect();
    plaza_command(&env).args(args).output().expect("run plaza")
}

/// Fails, showing what plaza wrote to stderr, unless it exited successfully.
fn assert_succeeded(output: &std::process::Output) {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn the_default_database_is_sqlite_in_the_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("nested").join("data");
    let data_dir_text = data_dir.display().to_string();
    assert_succeeded(&run_plaza(
        &[("PLAZA_DATA_DIR", &data_dir_text)],
        &["migrate"],
    ));
    assert!(data_dir.join("plaza.db").exists());
}

#[test]
fn bad_settings_stop_start_up_with_one_line_naming_the_setting() {
    let cases = [
        ("PLAZA_BIND", "not-an-address", "PLAZA_BIND"),
        ("PLAZA_LOG_FORMAT", "xml", "PLAZA_LOG_FORMAT"),
        ("PLAZA_BASE_URL", "ftp://example.com", "PLAZA_BASE_URL"),
        (
            "PLAZA_DATABASE_URL",
            "mysql://localhost/db",
            "PLAZA_DATABASE_URL",
        ),
        (
            "PLAZA_REQUEST_TIMEOUT_SECS",
            "0",
            "PLAZA_REQUEST_TIMEOUT_SECS",
        ),
        ("PLAZA_SIGNUP", "maybe", "PLAZA_SIGNUP"),
        // Without a `redis_url` to check it with.
        (
            "PLAZA_REDIS_CA_FILE",
            "/etc/ssl/certs/ca-certificates.crt",
            "PLAZA_REDIS_CA_FILE",
        ),
        (
            "PLAZA_REDIS_URL",
            "rediss://127.0.0.1/#insecure",
            "PLAZA_REDIS_URL",
        ),
        (
            "PLAZA_ANALYTICS_SESSION_RECHECK_MS",
            "1001",
            "PLAZA_ANALYTICS_SESSION_RECHECK_MS",
        ),
    ];
    for (key, value, named) in cases {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().display().to_string();
        let output = run_plaza(&[(key, value), ("PLAZA_DATA_DIR", &data_dir)], &[]);
        assert!(!output.status.success(), "{key}={value} was accepted");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.trim().lines().count(), 1, "{key}: {stderr}");
        assert!(stderr.contains(named), "{key}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn a_missing_config_file_is_named() {
    let output = run_plaza(&[], &["--config", "/nonexistent/plaza.toml"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("/nonexistent/plaza.toml"), "{stderr}");
}

/// `plaza --config <config> migrate` with the data directory `dir`.
fn migrate_with_config(dir: &std::path::Path, config: &std::path::Path) -> std::process::Output {
    let dir = dir.display().to_string();
    let config = config.to_str().unwrap();
    run_plaza(
        &[("PLAZA_DATA_DIR", &dir)],
        &["--config", config, "migrate"],
    )
}

#[test]
fn config_file_values_are_overridden_by_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("plaza.toml");
    std::fs::write(&config, "log_format = \"xml\"\n").unwrap();
    let output = migrate_with_config(dir.path(), &config);
    assert!(!output.status.success(), "the file's bad value is read");
    assert!(String::from_utf8_lossy(&output.stderr).contains("log_format"));
    let data_dir = dir.path().display().to_string();
    assert_succeeded(&run_plaza(
        &[("PLAZA_DATA_DIR", &data_dir), ("PLAZA_LOG_FORMAT", "json")],
        &["--config", config.to_str().unwrap(), "migrate"],
    ));
}

#[test]
fn a_misspelled_key_in_the_settings_file_stops_start_up_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("plaza.toml");
    std::fs::write(&config, "signup = false\nmetrics_pubilc = true\n").unwrap();
    let output = migrate_with_config(dir.path(), &config);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("`metrics_pubilc`"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // Provider tables are settings too.
    std::fs::write(
        &config,
        "[[auth_providers]]\nid = \"github\"\nclient_id = \"x\"\n",
    )
    .unwrap();
    assert_succeeded(&migrate_with_config(dir.path(), &config));
}

#[test]
fn an_unknown_key_in_a_provider_table_stops_start_up_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("plaza.toml");
    // The plain setting below the table belongs to the table in TOML.
    std::fs::write(
        &config,
        "signup = false\n[[auth_providers]]\nid = \"github\"\nclient_id = \"x\"\n\
         admin_totp_required = true\n",
    )
    .unwrap();
    let output = migrate_with_config(dir.path(), &config);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("`admin_totp_required`"), "{stderr}");
    assert!(stderr.contains("[[auth_providers]]"), "{stderr}");
    assert!(stderr.contains("move it above the first table"), "{stderr}");

    // Through the environment as well.
    let data_dir = dir.path().display().to_string();
    let output = run_plaza(
        &[
            ("PLAZA_DATA_DIR", &data_dir),
            (
                "PLAZA_AUTH_PROVIDERS",
                "[{id = \"github\", client_id = \"x\", secret = \"y\"}]",
            ),
        ],
        &["migrate"],
    );
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("secret"), "{stderr}");
}

#[test]
fn an_unknown_plaza_variable_is_warned_about_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().display().to_string();
    let output = run_plaza(
        &[
            ("PLAZA_DATA_DIR", &data_dir),
            ("PLAZA_ADMIN_TOTP_REQUIRD", "true"),
            ("PLAZA_SIGNUP", "false"),
        ],
        &["migrate"],
    );
    assert_succeeded(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("WARN"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("PLAZA_ADMIN_TOTP_REQUIRD is no setting"),
        "{stderr}"
    );
}

#[test]
fn an_unreachable_database_at_start_is_a_clear_error() {
    // Nothing listens on port 9 of loopback.
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().display().to_string();
    let output = run_plaza(
        &[
            ("PLAZA_DATABASE_URL", "postgres://postgres@127.0.0.1:9/none"),
            ("PLAZA_DATABASE_CONNECT_TIMEOUT_SECS", "1"),
            ("PLAZA_BIND", "127.0.0.1:0"),
            ("PLAZA_DATA_DIR", &data_dir),
        ],
        &[],
    );
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr.trim().lines().last().unwrap_or_default();
    assert!(last.contains("did not answer within 1s"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[tokio::test]
async fn sigterm_stops_the_server_cleanly() {
    let mut server = TestServer::start(Backend::Sqlite).await;
    assert_eq!(server.get("/api/health").await.status(), 200);
    let status = server.terminate();
    assert!(status.success(), "{status:?}");
    assert!(server.logs().contains("stopped"), "{}", server.logs());
}

#[tokio::test]
async fn made_up_methods_are_one_metrics_label() {
    let server = TestServer::start_with(Backend::Sqlite, &[("PLAZA_METRICS_PUBLIC", "true")]).await;
    for i in 0..300 {
        let method = reqwest::Method::from_bytes(format!("MADEUP{i}").as_bytes()).unwrap();
        let response = server
            .client
            .request(method, server.url("/api/health"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 405);
    }
    let text = server.get("/api/metrics").await.text().await.unwrap();
    assert!(!text.contains("MADEUP"), "made-up methods became labels");
    assert!(
        text.lines()
            .any(|line| line.starts_with("http_requests_total")
                && line.contains("method=\"OTHER\"")
                && line.contains("route=\"/api/health\"")),
        "{text}"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn the_data_directory_and_database_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |path: &std::path::Path| {
        std::fs::metadata(path)
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
            .permissions()
            .mode()
            & 0o777
    };
    let root = tempfile::tempdir().unwrap();
    let data_dir = root.path().join("fresh");
    let database = data_dir.join("plaza.db");
    let url = format!("sqlite://{}", database.display());
    let server = TestServer::start_with(
        Backend::Sqlite,
        &[
            ("PLAZA_DATA_DIR", &data_dir.display().to_string()),
            ("PLAZA_DATABASE_URL", &url),
        ],
    )
    .await;
    let (status, _) = common::call(
        &server,
        "POST",
        "/api/users",
        None,
        Some(serde_json::json!({"email": "modes@example.com", "password": "long enough"})),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(mode(&data_dir), 0o700);
    for suffix in ["", "-wal", "-shm", ".lock"] {
        let file = data_dir.join(format!("plaza.db{suffix}"));
        assert_eq!(mode(&file), 0o600, "{}", file.display());
    }

    // Files an earlier version left readable are tightened at start.
    let old = root.path().join("old");
    std::fs::create_dir(&old).unwrap();
    let old_database = old.join("plaza.db");
    std::fs::write(&old_database, b"").unwrap();
    std::fs::set_permissions(&old_database, std::fs::Permissions::from_mode(0o644)).unwrap();
    let old_url = format!("sqlite://{}", old_database.display());
    let old_dir = old.display().to_string();
    assert_succeeded(&run_plaza(
        &[
            ("PLAZA_DATABASE_URL", &old_url),
            ("PLAZA_DATA_DIR", &old_dir),
        ],
        &["migrate"],
    ));
    assert_eq!(mode(&old_database), 0o600);

    // A lock file an earlier version left readable is tightened when a
    // server (here the restore, which takes the same lock) opens it.
    let old_lock = old.join("plaza.db.lock");
    std::fs::write(&old_lock, b"").unwrap();
    std::fs::set_permissions(&old_lock, std::fs::Permissions::from_mode(0o644)).unwrap();
    let _ = run_plaza(
        &[
            ("PLAZA_DATABASE_URL", &old_url),
            ("PLAZA_DATA_DIR", &old_dir),
        ],
        &["restore", "--input", "/nonexistent/archive.tar.gz"],
    );
    assert_eq!(mode(&old_lock), 0o600);
}
