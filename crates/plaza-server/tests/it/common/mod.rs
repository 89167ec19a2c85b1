//! Test harness: starts the real `plaza` binary on an ephemeral port against
//! a fresh SQLite file or a fresh PostgreSQL database, and speaks HTTP to it.
#![allow(dead_code)]

pub mod actors;
pub mod fake_idp;
pub mod smtp_sink;
mod templates;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tempfile::TempDir;

/// One request with an optional `Cookie` header and JSON body; answers the
/// status and the JSON body (`null` when empty).
pub async fn call(
    server: &TestServer,
    method: &str,
    path: &str,
    cookie: Option<&str>,
    body: Option<serde_json::Value>,
) -> (u16, serde_json::Value) {
    let mut request = server
        .client
        .request(method.parse().expect("method"), server.url(path));
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    let body = if text.is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("{method} {path}: not JSON: {text}"))
    };
    (status, body)
}

/// The password of the users tests create.
pub const PASSWORD: &str = "correct horse battery";

/// Creates a user with `role` and signs them in: (id, cookie).
pub async fn member(server: &TestServer, email: &str, role: &str) -> (i64, String) {
    let id = server.create_user(email, PASSWORD, role);
    (id, server.sign_in(email, PASSWORD).await)
}

/// Writes a post as the user behind `cookie` and returns its id.
pub async fn post(server: &TestServer, cookie: &str, body: serde_json::Value) -> String {
    let (status, created) = call(server, "POST", "/api/posts", Some(cookie), Some(body)).await;
    assert_eq!(status, 201, "{created}");
    created["id"].as_str().expect("post id").to_owned()
}

/// Whom a request of [`TestServer::send`] comes from.
#[derive(Debug, Clone, Copy)]
pub enum As<'a> {
    Anonymous,
    /// A `Cookie` header value holding a session.
    Session(&'a str),
    /// An admin JWT, sent as `Authorization: Bearer`.
    Token(&'a str),
}

/// The database a test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// The PostgreSQL server URL for tests (its `test` database is only used to
/// create one fresh database per test).
pub fn postgres_admin_url() -> Option<String> {
    std::env::var("PLAZA_TEST_POSTGRES_URL")
        .ok()
        .filter(|url| !url.is_empty())
}

/// Whether PostgreSQL tests run; they are skipped, loudly, without a URL,
/// unless `PLAZA_TEST_REQUIRE_POSTGRES=1` (as in CI) makes that a failure.
pub fn postgres_enabled(test: &str) -> bool {
    if postgres_admin_url().is_some() {
        return true;
    }
    assert!(
        std::env::var("PLAZA_TEST_REQUIRE_POSTGRES").as_deref() != Ok("1"),
        "PLAZA_TEST_REQUIRE_POSTGRES=1 but PLAZA_TEST_POSTGRES_URL is not set"
    );
    eprintln!("SKIPPED {test} on PostgreSQL: set PLAZA_TEST_POSTGRES_URL to run it");
    false
}

/// Generates `sqlite` and `postgres` tests for each async `fn(Backend)`.
#[macro_export]
macro_rules! on_both_databases {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name($crate::common::Backend::Sqlite).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                if $crate::common::postgres_enabled(stringify!($name)) {
                    super::$name($crate::common::Backend::Postgres).await;
                }
            }
        }
    )*};
}

/// Tests that need PostgreSQL: several instances on one database (an
/// embedded SQLite database is served by one server only), or what only
/// PostgreSQL does (its backups, its generic plans).
macro_rules! on_postgres {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                if $crate::common::postgres_enabled(stringify!($name)) {
                    super::$name().await;
                }
            }
        }
    )*};
}

/// A fresh PostgreSQL database, dropped with the test.
pub struct PostgresDatabase {
    pub url: String,
    name: String,
    admin_url: String,
}

impl PostgresDatabase {
    /// A fresh database holding the current schema, copied from the
    /// migrated template.
    pub async fn create() -> Self {
        let admin_url = postgres_admin_url().expect("PostgreSQL URL");
        let template = templates::postgres_template(&admin_url).await;
        Self::create_as(&format!("TEMPLATE {template}")).await
    }

    /// A fresh database with no schema at all.
    pub async fn create_empty() -> Self {
        Self::create_as("").await
    }

    async fn create_as(options: &str) -> Self {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let admin_url = postgres_admin_url().expect("PostgreSQL URL");
        let name = format!(
            "plaza_test_{}_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            rand_suffix()
        );
        run_admin_sql(&admin_url, &format!("CREATE DATABASE {name} {options}")).await;
        let mut url = url::Url::parse(&admin_url).expect("valid PostgreSQL URL");
        url.set_path(&name);
        PostgresDatabase {
            url: url.to_string(),
            name,
            admin_url,
        }
    }
}

impl Drop for PostgresDatabase {
    /// Drops the database from a `psql` of its own, which the test does not
    /// wait for: PostgreSQL checkpoints to drop a database, which takes
    /// about a second. Without `psql`, the test drops it and waits.
    fn drop(&mut self) {
        let admin_url = self.admin_url.clone();
        let statement = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        let detached = Command::new("psql")
            .args(["-q", "-d", &admin_url, "-c", &statement])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        if detached.is_ok() {
            return;
        }
        let _ = std::thread::spawn(move || {
            if let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                runtime.block_on(run_admin_sql(&admin_url, &statement));
            }
        })
        .join();
    }
}

async fn run_admin_sql(admin_url: &str, statement: &str) {
    use sqlx::Connection;
    let mut connection = sqlx::PgConnection::connect(admin_url)
        .await
        .expect("connect to the PostgreSQL test server");
    sqlx::Executor::execute(&mut connection, statement)
        .await
        .expect("administrative SQL");
}

fn rand_suffix() -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.subsec_nanos())
        .unwrap_or_default();
    nanos % 1_000_000
}

/// A data directory, a database and the settings of a `plaza` not
/// started yet: commands run against them ([`Prepared::cli`]) before
/// [`Prepared::serve`] starts the server on them.
pub struct Prepared {
    pub data_dir: TempDir,
    pub database_url: String,
    env: Vec<(String, String)>,
    postgres: Option<PostgresDatabase>,
}

impl Prepared {
    /// A fresh data directory holding `plaza.toml` with `config`, a fresh
    /// database of `backend` (unless `env` names one), and `env` on top of
    /// the default settings.
    pub async fn new(backend: Backend, config: &str, env: &[(&str, &str)]) -> Self {
        Self::starting_from(backend, Schema::Migrated, config, env).await
    }

    /// [`Prepared::new`] whose own database starts as `schema` says.
    pub async fn starting_from(
        backend: Backend,
        schema: Schema,
        config: &str,
        env: &[(&str, &str)],
    ) -> Self {
        let data_dir = tempfile::tempdir().expect("temporary directory");
        let config_path = data_dir.path().join("plaza.toml");
        std::fs::write(&config_path, config).expect("write the settings file");
        let given_url = env
            .iter()
            .find(|(key, _)| *key == "PLAZA_DATABASE_URL")
            .map(|(_, url)| (*url).to_owned());
        let (database_url, postgres) = match backend {
            _ if given_url.is_some() => (given_url.unwrap_or_default(), None),
            Backend::Sqlite => {
                let path = data_dir.path().join("plaza.db");
                if schema == Schema::Migrated {
                    templates::copy_sqlite_template(&path).await;
                }
                (format!("sqlite://{}", path.display()), None)
            }
            Backend::Postgres => {
                let database = match schema {
                    Schema::Migrated => PostgresDatabase::create().await,
                    Schema::Empty => PostgresDatabase::create_empty().await,
                };
                (database.url.clone(), Some(database))
            }
        };
        let mut all_env: Vec<(String, String)> = DEFAULT_ENV
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect();
        all_env.push(("PLAZA_DATABASE_URL".into(), database_url.clone()));
        all_env.push((
            "PLAZA_DATA_DIR".into(),
            data_dir.path().display().to_string(),
        ));
        all_env.push(("PLAZA_CONFIG".into(), config_path.display().to_string()));
        for (key, value) in env {
            all_env.retain(|(existing, _)| existing != key);
            all_env.push(((*key).to_owned(), (*value).to_owned()));
        }
        Prepared {
            data_dir,
            database_url,
            env: all_env,
            postgres,
        }
    }

    /// Leaves the default setting `key` out, so Plaza uses its own default
    /// (without `PLAZA_JWT_SECRET`, a key generated into the data directory).
    pub fn without(mut self, key: &str) -> Self {
        self.env.retain(|(existing, _)| existing != key);
        self
    }

    /// Runs a `plaza` subcommand with these settings.
    pub fn cli(&self, args: &[&str]) -> std::process::Output {
        plaza_command(&self.env)
            .args(args)
            .output()
            .expect("run plaza")
    }

    /// A `plaza` command with these settings, to spawn as the test needs.
    pub fn command(&self) -> Command {
        plaza_command(&self.env)
    }

    /// Starts `plaza serve` on this data directory and database.
    pub fn serve(self) -> TestServer {
        let (child, base, logs, log_reader) = spawn_plaza(&self.env, &[]);
        TestServer {
            base,
            client: client(),
            database_url: self.database_url,
            data_dir: self.data_dir,
            env: self.env,
            running: Running::Process {
                child,
                logs,
                log_reader: Some(log_reader),
            },
            _postgres: self.postgres,
        }
    }

    /// Starts the server in this test's process, as `plaza serve` starts
    /// it ([`plaza_server::app::Server::start`]) but with no process of its
    /// own: for tests of answers' shapes and validation, which need
    /// neither its logs nor a restart. The settings are the same, written
    /// as a settings file.
    pub async fn serve_in_process(self) -> TestServer {
        // A process server's environment holds only the test's settings
        // ([`plaza_command`]); this process's own must add none.
        let inherited: Vec<String> = std::env::vars()
            .map(|(variable, _)| variable)
            .filter(|variable| {
                variable.starts_with("PLAZA_") && !variable.starts_with("PLAZA_TEST_")
            })
            .collect();
        assert!(
            inherited.is_empty(),
            "an in-process server would read {inherited:?} from the test's environment: unset them"
        );
        let settings_path = self.data_dir.path().join("in-process.toml");
        let mut file = std::fs::read_to_string(self.data_dir.path().join("plaza.toml"))
            .expect("read the settings file");
        file.push('\n');
        for (variable, value) in &self.env {
            if let Some(key) = variable.strip_prefix("PLAZA_")
                && key != "CONFIG"
            {
                file.push_str(&format!(
                    "{} = {}\n",
                    key.to_ascii_lowercase(),
                    toml_value(value)
                ));
            }
        }
        std::fs::write(&settings_path, file).expect("write the in-process settings");
        let settings = plaza_server::settings::Settings::load(Some(&settings_path))
            .unwrap_or_else(|error| panic!("in-process settings: {error}"));
        // A runtime on a thread of its own, as a process would have: the
        // test's runtime may have one thread, and the test may block it.
        let (ready, address) = tokio::sync::oneshot::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("the in-process server's runtime");
            runtime.block_on(async move {
                match plaza_server::app::Server::start(settings).await {
                    Ok(server) => {
                        let _ = ready.send(server.local_addr().map_err(|error| error.to_string()));
                        let _ = server
                            .run(async move {
                                let _ = stopped.await;
                            })
                            .await;
                    }
                    Err(error) => {
                        let _ = ready.send(Err(error));
                    }
                }
            });
        });
        let address = address
            .await
            .expect("the in-process server's thread")
            .unwrap_or_else(|error| panic!("in-process start: {error}"));
        TestServer {
            base: format!("http://{address}"),
            client: client(),
            database_url: self.database_url,
            data_dir: self.data_dir,
            env: self.env,
            running: Running::InProcess { _stop: stop },
            _postgres: self.postgres,
        }
    }
}

/// `value` as a TOML value, typed as an environment variable's value is:
/// a boolean or a number bare, anything else a string.
fn toml_value(value: &str) -> String {
    if matches!(value, "true" | "false")
        || value.parse::<i64>().is_ok()
        || value.parse::<f64>().is_ok_and(f64::is_finite)
    {
        value.to_owned()
    } else {
        serde_json::Value::from(value).to_string()
    }
}

/// How a [`TestServer`] runs.
enum Running {
    /// A `plaza serve` process and the thread reading its logs.
    Process {
        child: Child,
        logs: Logs,
        log_reader: Option<std::thread::JoinHandle<()>>,
    },
    /// A server on a runtime of its own in this process; it stops when
    /// this is dropped.
    InProcess {
        _stop: tokio::sync::oneshot::Sender<()>,
    },
}

/// What a test's own database holds before the server first starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    /// The current schema and emoji catalog, copied from a template.
    Migrated,
    /// Nothing: the server's start migrates it.
    Empty,
}

/// A running `plaza serve`.
pub struct TestServer {
    pub base: String,
    pub client: reqwest::Client,
    pub database_url: String,
    pub data_dir: TempDir,
    env: Vec<(String, String)>,
    running: Running,
    _postgres: Option<PostgresDatabase>,
}

/// Settings every test server gets unless the test overrides them.
const DEFAULT_ENV: &[(&str, &str)] = &[
    ("PLAZA_BIND", "127.0.0.1:0"),
    ("PLAZA_RATE_LIMITS_ENABLED", "false"),
    ("PLAZA_LOG_FORMAT", "text"),
    ("PLAZA_DATABASE_CONNECT_TIMEOUT_SECS", "10"),
    ("RUST_LOG", "info,sqlx=warn"),
    ("PLAZA_JWT_SECRET", TEST_JWT_SECRET),
    // Cheap hashing keeps tests fast; production defaults are in settings.
    ("PLAZA_PASSWORD_HASH_MEMORY_KIB", "1024"),
    ("PLAZA_PASSWORD_HASH_ITERATIONS", "1"),
];

/// The admin JWT key test servers use, so tests can forge tokens.
pub const TEST_JWT_SECRET: &str = "test-secret-test-secret-test-secret-0123";

impl TestServer {
    pub async fn start(backend: Backend) -> Self {
        Self::start_with(backend, &[]).await
    }

    /// Starts with extra `PLAZA_*` variables on top of the defaults.
    pub async fn start_with(backend: Backend, env: &[(&str, &str)]) -> Self {
        Self::start_with_config(backend, "", env).await
    }

    /// Starts logging every statement sqlx runs and every answer, so a
    /// test can count the statements of one request
    /// ([`TestServer::log_count`] between two "answered" lines).
    pub async fn start_with_statement_log(backend: Backend) -> Self {
        Self::start_with(
            backend,
            &[(
                "RUST_LOG",
                "info,sqlx=warn,sqlx::query=debug,plaza_server::http::middleware=debug",
            )],
        )
        .await
    }

    /// Starts in this test's process, with no process of its own
    /// ([`Prepared::serve_in_process`]).
    pub async fn start_in_process(backend: Backend) -> Self {
        Prepared::new(backend, "", &[])
            .await
            .serve_in_process()
            .await
    }

    /// Starts with a settings file (TOML) as well as environment variables.
    pub async fn start_with_config(backend: Backend, config: &str, env: &[(&str, &str)]) -> Self {
        Prepared::new(backend, config, env).await.serve()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .send()
            .await
            .expect("request")
    }

    /// One request as `who`, with an optional JSON body: the test layer's
    /// single way to act as anonymous, a session or an admin token.
    pub async fn send(
        &self,
        who: As<'_>,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> reqwest::Response {
        let mut request = self
            .client
            .request(method.parse().expect("method"), self.url(path));
        match who {
            As::Anonymous => {}
            As::Session(cookie) => request = request.header("cookie", cookie),
            As::Token(token) => request = request.bearer_auth(token),
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        request.send().await.expect("request")
    }

    /// A POST of `body` as it stands, with `content_type`, for the bodies
    /// [`TestServer::send`] cannot make (malformed JSON, other types).
    pub async fn post_raw(
        &self,
        path: &str,
        cookie: Option<&str>,
        content_type: &str,
        body: &'static str,
    ) -> reqwest::Response {
        let mut request = self
            .client
            .post(self.url(path))
            .header("content-type", content_type)
            .body(body);
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        request.send().await.expect("request")
    }

    /// Signs the session `cookie` out with one extra header (`origin`,
    /// `referer`), for the checks on where a cookie write comes from.
    pub async fn sign_out_with(
        &self,
        cookie: &str,
        header: &str,
        value: &str,
    ) -> reqwest::Response {
        self.client
            .post(self.url("/api/auth/signout"))
            .header("cookie", cookie)
            .header(header, value)
            .send()
            .await
            .expect("request")
    }

    /// Runs a `plaza` subcommand against this server's database and settings.
    pub fn cli(&self, args: &[&str]) -> std::process::Output {
        plaza_command(&self.env)
            .args(args)
            .output()
            .expect("run plaza")
    }

    /// A `plaza` command with this server's settings, to spawn as the test
    /// needs.
    pub fn command(&self) -> Command {
        plaza_command(&self.env)
    }

    /// Runs a `plaza` subcommand as [`TestServer::cli`] does, with `extra`
    /// variables in its environment as well.
    pub fn cli_with_env(&self, extra: &[(&str, &str)], args: &[&str]) -> std::process::Output {
        let mut env = self.env.clone();
        env.extend(
            extra
                .iter()
                .map(|(key, value)| ((*key).to_owned(), (*value).to_owned())),
        );
        plaza_command(&env).args(args).output().expect("run plaza")
    }

    /// Runs one SQL statement on this server's database, behind its back.
    pub async fn sql(&self, statement: &str) {
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(&self.database_url)
            .await
            .expect("connect");
        sqlx::query(statement).execute(&pool).await.expect("SQL");
        pool.close().await;
    }

    /// The one number a `SELECT COUNT(*)` on this server's database answers.
    pub async fn sql_count(&self, statement: &str) -> i64 {
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(&self.database_url)
            .await
            .expect("connect");
        let count = sqlx::query_scalar(statement)
            .fetch_one(&pool)
            .await
            .expect("SQL");
        pool.close().await;
        count
    }

    /// The server's database through the domain layer, for checks HTTP
    /// cannot make.
    pub async fn domain(&self) -> plaza_domain::Database {
        plaza_domain::Database::connect(
            &self.database_url,
            &plaza_domain::DatabaseOptions::default(),
        )
        .await
        .expect("connect to the test database")
    }

    /// Creates a user from the command line and returns its id.
    pub fn create_user(&self, email: &str, password: &str, role: &str) -> i64 {
        let output = self.cli(&[
            "user",
            "create",
            "--email",
            email,
            "--password",
            password,
            "--role",
            role,
        ]);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .expect("user id")
    }

    /// Bans the user with `email` from the command line.
    pub fn ban(&self, email: &str) {
        let output = self.cli(&["user", "ban", "--email", email]);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// Mints an admin token for `email` from the command line.
    pub fn mint(&self, email: &str, permissions: &str) -> String {
        let output = self.cli(&["token", "--email", email, "--permissions", permissions]);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    /// A CSRF token for form posts: (the `plaza_csrf=…` cookie pair, the token).
    pub async fn csrf(&self) -> (String, String) {
        let answer = self
            .client
            .get(self.url("/api/auth/csrf"))
            .send()
            .await
            .expect("GET /api/auth/csrf");
        let cookie = answer
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|value| value.to_str().ok())
            .find(|value| value.starts_with("plaza_csrf="))
            .and_then(|value| value.split(';').next())
            .expect("a CSRF cookie")
            .to_owned();
        let body: serde_json::Value = answer.json().await.expect("JSON body");
        let token = body["csrfToken"].as_str().expect("csrfToken").to_owned();
        (cookie, token)
    }

    /// GETs `path` with a `Cookie` header and parses the JSON answer.
    pub async fn get_json_as(&self, path: &str, cookie: &str) -> serde_json::Value {
        self.client
            .get(self.url(path))
            .header("cookie", cookie)
            .send()
            .await
            .expect("request")
            .json()
            .await
            .expect("JSON body")
    }

    /// Signs in with credentials and returns the `Cookie` header value.
    pub async fn sign_in(&self, email: &str, password: &str) -> String {
        let response = self.try_sign_in(email, password).await;
        assert_eq!(response.status(), 200, "sign-in of {email} failed");
        session_cookie(&response).expect("session cookie")
    }

    /// One credentials sign-in attempt, whatever it answers.
    pub async fn try_sign_in(&self, email: &str, password: &str) -> reqwest::Response {
        let credentials = serde_json::json!({"email": email, "password": password});
        self.send(
            As::Anonymous,
            "POST",
            "/api/auth/signin",
            Some(&credentials),
        )
        .await
    }

    /// One sign-in through the HTML form (`fields` URL-encoded), with the
    /// `plaza_csrf` cookie when given, whatever it answers.
    pub async fn form_sign_in(
        &self,
        csrf_cookie: Option<&str>,
        fields: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut request = self.client.post(self.url("/api/auth/signin")).form(fields);
        if let Some(cookie) = csrf_cookie {
            request = request.header("cookie", cookie);
        }
        request.send().await.expect("request")
    }

    /// One anonymous sign-up (`POST /api/users`), whatever it answers.
    pub async fn sign_up(&self, body: &serde_json::Value) -> reqwest::Response {
        self.send(As::Anonymous, "POST", "/api/users", Some(body))
            .await
    }

    /// The server's process, its logs and their reader; an in-process
    /// server has none, and a test that needs them starts a process.
    fn process(&mut self) -> (&mut Child, &Logs, &mut Option<std::thread::JoinHandle<()>>) {
        match &mut self.running {
            Running::Process {
                child,
                logs,
                log_reader,
            } => (child, logs, log_reader),
            Running::InProcess { .. } => {
                panic!("an in-process server has no process or logs: start it as a process")
            }
        }
    }

    fn logs_of(&self) -> &Logs {
        match &self.running {
            Running::Process { logs, .. } => logs,
            Running::InProcess { .. } => {
                panic!("an in-process server's logs are not captured: start it as a process")
            }
        }
    }

    /// Everything the server has logged so far.
    pub fn logs(&self) -> String {
        self.logs_of().text()
    }

    /// How many lines logged so far contain `needle`.
    pub fn log_count(&self, needle: &str) -> usize {
        self.logs_of().count(needle)
    }

    /// Blocks until the server logs a line containing `needle`.
    pub fn wait_for_log(&self, needle: &str) {
        assert!(
            self.logs_of().wait_for(needle, Duration::from_secs(30)),
            "plaza never logged {needle:?}:\n{}",
            self.logs()
        );
    }

    /// The statements `GET path` as `cookie` ran, from the statement log
    /// ([`TestServer::start_with_statement_log`]): the lines in the span of
    /// the request `request_id`, read once its access line (logged after
    /// the answer, outside the span) is in. The answer is asserted 200.
    pub async fn statements_of(&self, path: &str, cookie: &str, request_id: &str) -> Vec<String> {
        let response = self
            .client
            .get(self.url(path))
            .header("cookie", cookie)
            .header("x-request-id", request_id)
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), 200);
        self.wait_for_log(&format!("request_id=\"{request_id}\" client="));
        let span = format!("request_id=\"{request_id}\"}}");
        self.logs()
            .lines()
            .filter(|line| line.contains(&span) && line.contains("sqlx::query"))
            .map(str::to_owned)
            .collect()
    }

    /// Blocks until the server has logged `count` lines containing `needle`.
    pub fn wait_for_log_count(&self, needle: &str, count: usize) {
        assert!(
            self.logs_of()
                .wait_for_count(needle, count, Duration::from_secs(30)),
            "plaza never logged {count} lines with {needle:?}:\n{}",
            self.logs()
        );
    }

    pub fn pid(&self) -> u32 {
        match &self.running {
            Running::Process { child, .. } => child.id(),
            Running::InProcess { .. } => std::process::id(),
        }
    }

    /// Sends SIGKILL: the process ends at once, as in a crash.
    pub fn kill(&mut self) {
        let (child, _, log_reader) = self.process();
        let _ = child.kill();
        let _ = child.wait();
        if let Some(reader) = log_reader.take() {
            let _ = reader.join();
        }
    }

    /// Stops the server (SIGTERM) if it runs, and starts it again on the
    /// same database and data directory with the same settings, `changed`
    /// replacing some; it listens on a new port.
    pub fn restart_with(&mut self, changed: &[(&str, &str)]) {
        if matches!(self.process().0.try_wait(), Ok(None)) {
            self.terminate();
        }
        for (key, value) in changed {
            self.env.retain(|(existing, _)| existing != key);
            self.env.push(((*key).to_owned(), (*value).to_owned()));
        }
        let (child, base, logs, log_reader) = spawn_plaza(&self.env, &[]);
        self.base = base;
        self.running = Running::Process {
            child,
            logs,
            log_reader: Some(log_reader),
        };
    }

    /// Sends SIGTERM and waits for the process to exit and its logs to end.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let (child, _, log_reader) = self.process();
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let status = child.wait().expect("wait for plaza");
        if let Some(reader) = log_reader.take() {
            let _ = reader.join();
        }
        status
    }
}

impl TestServer {
    /// Stops the server (SIGTERM, then waits for it) and hands back its
    /// data directory, database and settings, to run commands on them or
    /// serve them again.
    pub fn stop(mut self) -> Prepared {
        self.terminate();
        let placeholder = tempfile::tempdir().expect("temporary directory");
        Prepared {
            data_dir: std::mem::replace(&mut self.data_dir, placeholder),
            database_url: std::mem::take(&mut self.database_url),
            env: std::mem::take(&mut self.env),
            postgres: self._postgres.take(),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Running::Process { child, .. } = &mut self.running {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The `plaza_session=…` pair from a response's `Set-Cookie`, if any.
pub fn session_cookie(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find(|value| value.starts_with("plaza_session=") && !value.starts_with("plaza_session=;"))
        .and_then(|value| value.split(';').next())
        .map(str::to_owned)
}

/// A server's log lines, shared with the thread that reads them.
#[derive(Clone, Default)]
pub struct Logs(Arc<(Mutex<Vec<String>>, std::sync::Condvar)>);

impl Logs {
    fn push(&self, line: String) {
        let (lines, changed) = &*self.0;
        if let Ok(mut lines) = lines.lock() {
            lines.push(line);
        }
        changed.notify_all();
    }

    pub fn text(&self) -> String {
        self.0
            .0
            .lock()
            .map(|lines| lines.join("\n"))
            .unwrap_or_default()
    }

    /// How many lines so far contain `needle`.
    pub fn count(&self, needle: &str) -> usize {
        self.0
            .0
            .lock()
            .map(|lines| lines.iter().filter(|line| line.contains(needle)).count())
            .unwrap_or(0)
    }

    /// Waits, without polling, until `count` lines contain `needle`.
    pub fn wait_for_count(&self, needle: &str, count: usize, timeout: Duration) -> bool {
        let (lines, changed) = &*self.0;
        let Ok(guard) = lines.lock() else {
            return false;
        };
        changed
            .wait_timeout_while(guard, timeout, |lines| {
                lines.iter().filter(|line| line.contains(needle)).count() < count
            })
            .map(|(_, result)| !result.timed_out())
            .unwrap_or(false)
    }

    /// Waits, without polling, until a line contains `needle`.
    pub fn wait_for(&self, needle: &str, timeout: Duration) -> bool {
        let (lines, changed) = &*self.0;
        let Ok(guard) = lines.lock() else {
            return false;
        };
        changed
            .wait_timeout_while(guard, timeout, |lines| {
                !lines.iter().any(|line| line.contains(needle))
            })
            .map(|(_, result)| !result.timed_out())
            .unwrap_or(false)
    }
}

/// A client that keeps no cookies and never follows redirects, so tests see
/// exactly what the server sent.
pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .expect("HTTP client")
}

/// Starts `plaza` with `env` and `args`, and waits until it logs its address.
pub fn spawn_plaza(
    env: &[(String, String)],
    args: &[&str],
) -> (Child, String, Logs, std::thread::JoinHandle<()>) {
    let mut command = plaza_command(env);
    command
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn plaza");
    let stderr = child.stderr.take().expect("stderr is piped");
    let logs = Logs::default();
    let (address_tx, address_rx) = std::sync::mpsc::channel();
    let sink = logs.clone();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(address) = line
                .split("listening on http://")
                .nth(1)
                .and_then(|rest| rest.split(|c: char| c.is_whitespace() || c == '"').next())
            {
                let _ = address_tx.send(address.to_owned());
            }
            sink.push(line);
        }
    });
    match address_rx.recv_timeout(Duration::from_secs(30)) {
        Ok(address) => (child, format!("http://{address}"), logs, reader),
        Err(_) => {
            let _ = child.kill();
            panic!("plaza did not start listening:\n{}", logs.text());
        }
    }
}

/// A `plaza` command with a clean environment: only `env` and the basics.
pub fn plaza_command(env: &[(String, String)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_plaza"));
    command.env_clear();
    for key in ["PATH", "HOME", "LANG"] {
        if let Ok(value) = std::env::var(key) {
            command.env(key, value);
        }
    }
    for (key, value) in env {
        command.env(key, value);
    }
    command
}

/// Waits until a statement on the PostgreSQL database at `database_url`
/// waits for a lock (`true`), or until `ended` says the work watched for
/// finished without waiting (`false`); fails the test after ten seconds
/// of neither.
pub async fn until_a_lock_is_awaited(database_url: &str, ended: impl Fn() -> bool) -> bool {
    use sqlx::Connection;
    let mut watcher = sqlx::PgConnection::connect(database_url)
        .await
        .expect("connect");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        if ended() {
            return false;
        }
        let (waiting,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(&mut watcher)
        .await
        .expect("pg_stat_activity");
        if waiting > 0 {
            return true;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "nothing waited for a lock"
        );
        tokio::task::yield_now().await;
    }
}

/// Passes a test whose outside tool is missing, saying so, unless
/// `PLAZA_TEST_REQUIRE_TOOLS=1` (CI), where a missing tool is a failure.
pub fn skip(test: &str, why: &str) {
    assert!(
        std::env::var("PLAZA_TEST_REQUIRE_TOOLS").as_deref() != Ok("1"),
        "{test}: {why} (PLAZA_TEST_REQUIRE_TOOLS=1)"
    );
    eprintln!("SKIPPED {test}: {why}");
}
