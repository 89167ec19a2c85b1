//! Common client generators build a whole client from the served
//! `/api/openapi`, without a warning: `openapi-python-client` generates a
//! module for every operation (and the client reads a search answer's
//! results as their kinds), and `openapi-typescript` types every body,
//! which `tsc --strict` accepts. A body without a schema, a union the
//! generators cannot read or a skipped operation fails here.
//!
//! Tools: `.ci/run` installs the pinned `openapi-python-client` into
//! `target/tools/client-venv` and `openapi-typescript` with TypeScript into
//! `target/tools/client-node`; `PLAZA_TEST_OPENAPI_PYTHON_CLIENT` and
//! `PLAZA_TEST_OPENAPI_TYPESCRIPT` point elsewhere (`tsc` is looked for next
//! to `openapi-typescript`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{Backend, TestServer, member, post, skip};
use serde_json::{Value, json};

/// openapi-python-client reads answers as JSON, text or
/// `application/octet-stream` only; this configuration, kept for client
/// authors next to the API documentation, maps the image types onto those.
const PYTHON_CLIENT_CONFIG: &str = include_str!("../../../../docs/openapi-python-client.yaml");

const HTTP_METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// `PLAZA_TEST_<variable>`, or `relative` under the workspace's `target/tools`.
fn tool(variable: &str, relative: &str) -> Option<PathBuf> {
    let path = std::env::var_os(format!("PLAZA_TEST_{variable}"))
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../target/tools")
                .join(relative)
        });
    path.exists().then_some(path)
}

/// The document `server` serves, written to `directory`, and its
/// operation count.
async fn served_document(server: &TestServer, directory: &Path) -> (PathBuf, usize) {
    let response = server.get("/api/openapi").await;
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    let document: Value = serde_json::from_str(&text).unwrap();
    let operations = document["paths"]
        .as_object()
        .expect("paths")
        .values()
        .map(|item| {
            HTTP_METHODS
                .iter()
                .filter(|method| item.get(**method).is_some())
                .count()
        })
        .sum();
    let path = directory.join("openapi.json");
    std::fs::write(&path, text).unwrap();
    (path, operations)
}

fn printed(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `PATH` with `directory` first, so a tool finds its neighbours (the
/// Python generator runs `ruff` from its virtual environment).
fn path_with(directory: &Path) -> std::ffi::OsString {
    let inherited = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(
        std::iter::once(directory.to_path_buf()).chain(std::env::split_paths(&inherited)),
    )
    .unwrap()
}

/// Python modules of the generated operations (one per operation).
fn operation_modules(directory: &Path) -> usize {
    std::fs::read_dir(directory)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .map(|path| {
            if path.is_dir() {
                operation_modules(&path)
            } else {
                let is_module = path.extension().is_some_and(|extension| extension == "py")
                    && path.file_name().is_some_and(|name| name != "__init__.py");
                usize::from(is_module)
            }
        })
        .sum()
}

#[tokio::test]
async fn openapi_python_client_generates_every_operation_without_a_warning() {
    let test = "openapi_python_client_generates_every_operation_without_a_warning";
    let Some(generator) = tool(
        "OPENAPI_PYTHON_CLIENT",
        "client-venv/bin/openapi-python-client",
    ) else {
        return skip(
            test,
            "openapi-python-client is missing (.ci/run installs it)",
        );
    };
    let server = TestServer::start(Backend::Sqlite).await;
    let scratch = tempfile::tempdir().unwrap();
    let (document, operations) = served_document(&server, scratch.path()).await;
    let config = scratch.path().join("config.yaml");
    std::fs::write(&config, PYTHON_CLIENT_CONFIG).unwrap();
    let client = scratch.path().join("plaza_client");
    let output = Command::new(&generator)
        .env("PATH", path_with(generator.parent().unwrap()))
        .env("NO_COLOR", "1")
        .arg("generate")
        .arg("--path")
        .arg(&document)
        .arg("--output-path")
        .arg(&client)
        .arg("--config")
        .arg(&config)
        .args(["--meta", "none", "--fail-on-warning"])
        .output()
        .expect("run openapi-python-client");
    let report = printed(&output);
    assert!(output.status.success(), "{report}");
    let unexpected: Vec<&str> = report
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with("Generating "))
        .collect();
    assert!(
        unexpected.is_empty(),
        "the generator said more than that it generated:\n{report}"
    );
    assert_eq!(
        operation_modules(&client.join("api")),
        operations,
        "one module per operation:\n{report}"
    );

    // The client loads, and reads a search answer's results as the kinds
    // their `type` names.
    let (_, author) = member(&server, "gardener@example.com", "user").await;
    post(
        &server,
        &author,
        json!({"title": "Gardening basics", "content": "Tomatoes and basil.", "published": true}),
    )
    .await;
    let python = generator.with_file_name("python");
    let run = Command::new(&python)
        .current_dir(scratch.path())
        .arg("-c")
        .arg(CLIENT_ROUND_TRIP)
        .arg(&server.base)
        .output()
        .expect("run the generated client");
    assert!(run.status.success(), "{}", printed(&run));
    assert_eq!(
        String::from_utf8_lossy(&run.stdout)
            .split_whitespace()
            .collect::<Vec<_>>(),
        ["PostResult", "UserResult"],
        "{}",
        printed(&run)
    );
}

/// Imports every module of the generated client, then searches a post and
/// a user through it and prints the class each result was read as.
const CLIENT_ROUND_TRIP: &str = r#"
import importlib, pkgutil, sys
import plaza_client
for module in pkgutil.walk_packages(plaza_client.__path__, "plaza_client."):
    importlib.import_module(module.name)
from plaza_client import Client
from plaza_client.api.search import search
client = Client(base_url=sys.argv[1])
for query, kind in [("gardening", "post"), ("gardener", "user")]:
    found = search.sync(client=client, q=query, type_=kind)
    print(type(found.results[0]).__name__)
"#;

#[tokio::test]
async fn openapi_typescript_types_every_body_without_a_warning() {
    let test = "openapi_typescript_types_every_body_without_a_warning";
    let Some(generator) = tool(
        "OPENAPI_TYPESCRIPT",
        "client-node/node_modules/.bin/openapi-typescript",
    ) else {
        return skip(test, "openapi-typescript is missing (.ci/run installs it)");
    };
    let tsc = generator.with_file_name("tsc");
    if !tsc.exists() {
        return skip(test, "tsc is missing (.ci/run installs it)");
    }
    let server = TestServer::start(Backend::Sqlite).await;
    let scratch = tempfile::tempdir().unwrap();
    let (document, _) = served_document(&server, scratch.path()).await;
    let types = scratch.path().join("plaza.d.ts");
    let output = Command::new(&generator)
        .env("NO_COLOR", "1")
        .arg(&document)
        .arg("--output")
        .arg(&types)
        .output()
        .expect("run openapi-typescript");
    let report = printed(&output);
    assert!(output.status.success(), "{report}");
    // A clean run prints its banner and the one file it wrote.
    let unexpected: Vec<&str> = report
        .lines()
        .filter(|line| !line.trim().is_empty())
        .filter(|line| !line.contains("openapi-typescript") && !line.contains("plaza.d.ts"))
        .collect();
    assert!(unexpected.is_empty(), "the generator warned:\n{report}");
    let generated = std::fs::read_to_string(&types).unwrap();
    // A request or answer body without a schema is typed `unknown`.
    let untyped: Vec<&str> = generated
        .lines()
        .map(str::trim)
        .filter(|line| {
            line.starts_with('"') && line.contains('/') && line.ends_with("\": unknown;")
        })
        .collect();
    assert!(untyped.is_empty(), "bodies without a type: {untyped:#?}");

    let checked = Command::new(&tsc)
        .args(["--strict", "--noEmit"])
        .args(["--target", "es2022", "--module", "esnext"])
        .arg(&types)
        .output()
        .expect("run tsc");
    assert!(
        checked.status.success(),
        "tsc --strict rejects the generated types:\n{}",
        printed(&checked)
    );
}
