//! The API contract, machine-checked: schemathesis runs every operation of
//! `/api/openapi` against the real server and checks each answer against the
//! document (status, body schema, content type, headers, no server error),
//! then `promtool` lints the metrics scraped after that traffic.
//!
//! Tools: `.ci/run` installs a pinned schemathesis into
//! `target/tools/contract-venv` and Debian's `prometheus` (for `promtool`);
//! `PLAZA_TEST_SCHEMATHESIS` and `PLAZA_TEST_PROMTOOL` point elsewhere.

use std::path::PathBuf;
use std::process::Command;

use crate::common::{Backend, PASSWORD, TestServer, call, skip};
use serde_json::json;

on_both_databases!(every_operation_keeps_the_documented_contract);

/// The fixed seed and bounded examples keep the run deterministic and short.
const SEED: &str = "42";
const EXAMPLES_PER_OPERATION: &str = "50";
const CHECKS: &str = "not_a_server_error,status_code_conformance,response_schema_conformance,\
                      content_type_conformance,response_headers_conformance";

/// Operations that end the credentials the run signs in with (the session,
/// the admin token): run last, on their own, so the rest is tested signed in.
const CREDENTIAL_ENDING: &[&str] = &["signout", "revoke_admin_token"];

fn schemathesis() -> Option<PathBuf> {
    let path = std::env::var_os("PLAZA_TEST_SCHEMATHESIS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../target/tools/contract-venv/bin/schemathesis")
        });
    path.exists().then_some(path)
}

/// A stand-in for the front end: every page a small HTML document. Answers
/// its base URL.
async fn front_end() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let pages = axum::Router::new().fallback(|| async {
        axum::response::Html("<!doctype html><title>Plaza</title><p>A page of the front end.")
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, pages).await;
    });
    base
}

fn promtool() -> Option<PathBuf> {
    let path = std::env::var_os("PLAZA_TEST_PROMTOOL")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/promtool"));
    path.exists().then_some(path)
}

async fn every_operation_keeps_the_documented_contract(backend: Backend) {
    let test = "every_operation_keeps_the_documented_contract";
    let (Some(schemathesis), Some(promtool)) = (schemathesis(), promtool()) else {
        return skip(
            test,
            "schemathesis or promtool is missing (.ci/run installs both)",
        );
    };
    // The front end at `base_url`: answers link to its pages (an invite's
    // sign-up page), which the run then asks link previews of.
    let front_end = front_end().await;
    // A live alert stream sends what there is and ends, instead of
    // holding each generated request open for an hour.
    let server = TestServer::start_with(
        backend,
        &[
            ("PLAZA_ALERT_STREAM_MAX_SECS", "0"),
            ("PLAZA_BASE_URL", front_end.as_str()),
        ],
    )
    .await;
    // Data the generator cannot guess, matching the document's examples:
    // users 1–3 and posts 1–2 exist, and the admin the run acts as is
    // created last, so the examples' `id` 2 is not the admin.
    for n in 1..=3 {
        server.create_user(&format!("member{n}@example.com"), PASSWORD, "user");
    }
    server.create_user("contract@example.com", PASSWORD, "super_admin");
    let cookie = server.sign_in("contract@example.com", PASSWORD).await;
    for n in 1..=2 {
        let (status, body) = call(
            &server,
            "POST",
            "/api/posts",
            Some(&cookie),
            Some(json!({"title": format!("Post {n}"), "content": "Seeded for the contract run", "published": true})),
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }
    let token = server.mint("contract@example.com", "admin:super");
    // schemathesis keeps state in its working directory: a scratch one.
    let scratch = tempfile::tempdir().unwrap();
    let run = |operations: Vec<String>| {
        let mut command = Command::new(&schemathesis);
        command
            .current_dir(scratch.path())
            .arg("run")
            .arg(server.url("/api/openapi"))
            .args(["--url", &server.base])
            .args(["-H", &format!("Authorization: Bearer {token}")])
            .args(["-H", &format!("Cookie: {cookie}")])
            .args(["--generation-with-security-parameters", "false"])
            .args(["--checks", CHECKS])
            .args(["--max-examples", EXAMPLES_PER_OPERATION])
            .args(["--seed", SEED])
            .args(["--workers", "1"])
            .args(["--generation-database", "none"])
            .args(["--no-color", "--warnings", "off"])
            .args(operations);
        let output = command.output().expect("run schemathesis");
        let report = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "the server broke its documented contract:\n{report}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        eprintln!(
            "{}",
            report.lines().rev().take(12).collect::<Vec<_>>().join("\n")
        );
    };
    run(CREDENTIAL_ENDING
        .iter()
        .flat_map(|id| ["--exclude-operation-id".to_owned(), (*id).to_owned()])
        .collect());
    run(CREDENTIAL_ENDING
        .iter()
        .flat_map(|id| ["--include-operation-id".to_owned(), (*id).to_owned()])
        .collect());

    // Every metric the traffic above produced has HELP and TYPE and a
    // well-formed name: promtool's lint. The run may have banned or deleted
    // its own admin, so a new one reads the metrics.
    server.create_user("metrics@example.com", PASSWORD, "admin");
    let scrape = server
        .client
        .get(server.url("/api/metrics"))
        .bearer_auth(server.mint("metrics@example.com", "admin:read"))
        .send()
        .await
        .unwrap();
    assert_eq!(scrape.status(), 200);
    let text = scrape.text().await.unwrap();
    assert!(text.contains("http_requests_total"));
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &text).unwrap();
    let lint = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(file.path()).unwrap())
        .output()
        .expect("run promtool");
    assert!(
        lint.status.success(),
        "promtool check metrics:\n{}{}",
        String::from_utf8_lossy(&lint.stdout),
        String::from_utf8_lossy(&lint.stderr)
    );
}
