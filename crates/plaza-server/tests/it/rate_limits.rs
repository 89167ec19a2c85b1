//! Rate limits (SPEC.md "Limits"): each limit's boundary, per-user
//! against per-address counting, trusted proxies, IPv6 /64 grouping, the
//! 429 of every surface, the unlimited probes, and Redis shared by two
//! processes (over TLS too), stopped and started again.

use crate::common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{As, Backend, PASSWORD, TestServer, member};
use serde_json::{Value, json};

on_both_databases!(
    the_last_request_of_the_quota_passes_and_the_next_is_429,
    signed_in_users_are_counted_apart_from_their_address,
    forwarded_addresses_count_only_from_trusted_proxies,
    ipv6_clients_are_counted_by_their_64,
    every_surface_answers_429_in_its_own_shape,
    probes_are_never_limited,
    the_sign_in_throttle_answers_with_the_limit_headers,
    concurrent_requests_through_redis_are_each_counted_once,
    a_quota_finer_than_a_microsecond_is_counted_through_redis,
    without_redis_reads_fail_open_and_sign_in_fails_closed_until_it_is_back,
    a_stalled_redis_fails_each_check_in_its_direction_and_recovers,
    a_guesser_behind_a_shared_address_locks_out_nobody_who_knows_their_password,
    health_names_each_dependency_and_is_degraded_while_redis_is_down,
);

on_postgres!(
    two_instances_share_one_count_through_redis,
    counts_are_shared_over_tls_with_a_redis_whose_ca_is_given,
);

/// Limits on, the anonymous quota `anonymous`, plus `extra` settings.
async fn limited_server(backend: Backend, anonymous: &str, extra: &[(&str, &str)]) -> TestServer {
    let mut env = vec![
        ("PLAZA_RATE_LIMITS_ENABLED", "true"),
        ("PLAZA_RATE_LIMIT_ANONYMOUS", anonymous),
    ];
    env.extend_from_slice(extra);
    TestServer::start_with(backend, &env).await
}

fn header(response: &reqwest::Response, name: &str) -> Option<u64> {
    response
        .headers()
        .get(name)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse().ok())
}

/// GETs `path` with extra headers and answers (status, remaining).
async fn get_from(server: &TestServer, path: &str, headers: &[(&str, &str)]) -> (u16, Option<u64>) {
    let mut request = server.client.get(server.url(path));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("request");
    (
        response.status().as_u16(),
        header(&response, "x-ratelimit-remaining"),
    )
}

async fn the_last_request_of_the_quota_passes_and_the_next_is_429(backend: Backend) {
    let server = limited_server(backend, "5/hour", &[]).await;
    let clock = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    };
    let now = clock();
    for remaining in (0..5).rev() {
        let response = server.get("/api/posts").await;
        assert_eq!(response.status(), 200);
        assert_eq!(header(&response, "x-ratelimit-limit"), Some(5));
        assert_eq!(header(&response, "x-ratelimit-remaining"), Some(remaining));
        let reset = header(&response, "x-ratelimit-reset").expect("X-RateLimit-Reset");
        // The reset rounds up to a whole second of a clock that may have
        // ticked since `now`.
        assert!(
            reset > now && reset <= clock() + 3601,
            "reset {reset}, now {now}"
        );
    }
    let refused = server.get("/api/posts").await;
    assert_eq!(refused.status(), 429);
    assert_eq!(header(&refused, "x-ratelimit-limit"), Some(5));
    assert_eq!(header(&refused, "x-ratelimit-remaining"), Some(0));
    // One request's share of the hour comes back after 720 s.
    let retry = header(&refused, "retry-after").expect("Retry-After");
    assert!((700..=720).contains(&retry), "Retry-After {retry}");
    // Reset is when the whole quota is back (the hour the five used up),
    // not when the next single request is.
    let reset = header(&refused, "x-ratelimit-reset").expect("X-RateLimit-Reset");
    assert!(
        reset >= now + 3500 && reset <= clock() + 3601,
        "reset {reset}, now {now}"
    );
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "RATE_LIMITED", "{body}");
    // Every route of the group shares the count.
    assert_eq!(server.get("/api/users").await.status(), 429);
}

async fn signed_in_users_are_counted_apart_from_their_address(backend: Backend) {
    let server = limited_server(
        backend,
        "3/hour",
        &[("PLAZA_RATE_LIMIT_AUTHENTICATED", "6/hour")],
    )
    .await;
    // Signing in is one anonymous request from this address.
    let (_, cookie) = member(&server, "member@example.com", "user").await;
    for remaining in (0..6).rev() {
        let response = server
            .send(As::Session(&cookie), "GET", "/api/posts", None)
            .await;
        assert_eq!(response.status(), 200);
        assert_eq!(header(&response, "x-ratelimit-limit"), Some(6));
        assert_eq!(header(&response, "x-ratelimit-remaining"), Some(remaining));
    }
    let refused = server
        .send(As::Session(&cookie), "GET", "/api/posts", None)
        .await;
    assert_eq!(refused.status(), 429);
    // The address kept its own budget: two of three left after the sign-in.
    let anonymous = server.get("/api/posts").await;
    assert_eq!(anonymous.status(), 200);
    assert_eq!(header(&anonymous, "x-ratelimit-limit"), Some(3));
    assert_eq!(header(&anonymous, "x-ratelimit-remaining"), Some(1));
    // An admin token counts as its user too.
    let admin = server.create_user("admin@example.com", PASSWORD, "admin");
    assert!(admin > 0);
    let token = server.mint("admin@example.com", "admin:read");
    let with_token = server
        .send(As::Token(&token), "GET", "/api/posts", None)
        .await;
    assert_eq!(with_token.status(), 200);
    assert_eq!(header(&with_token, "x-ratelimit-limit"), Some(6));
    assert_eq!(header(&with_token, "x-ratelimit-remaining"), Some(5));
}

async fn forwarded_addresses_count_only_from_trusted_proxies(backend: Backend) {
    let direct = limited_server(backend, "2/hour", &[]).await;
    for spoofed in ["198.51.100.1", "198.51.100.2"] {
        let (status, _) = get_from(&direct, "/api/posts", &[("x-forwarded-for", spoofed)]).await;
        assert_eq!(status, 200);
    }
    // Another X-Forwarded-For from an untrusted peer is the same client.
    let (status, _) = get_from(
        &direct,
        "/api/posts",
        &[("x-forwarded-for", "198.51.100.3")],
    )
    .await;
    assert_eq!(status, 429);
    let (status, _) = get_from(&direct, "/api/posts", &[("forwarded", "for=198.51.100.4")]).await;
    assert_eq!(status, 429);

    let behind_proxy = limited_server(
        backend,
        "2/hour",
        &[("PLAZA_TRUSTED_PROXIES", "[\"127.0.0.1\"]")],
    )
    .await;
    let client = [("x-forwarded-for", "198.51.100.1")];
    assert_eq!(
        get_from(&behind_proxy, "/api/posts", &client).await,
        (200, Some(1))
    );
    assert_eq!(
        get_from(&behind_proxy, "/api/posts", &client).await,
        (200, Some(0))
    );
    assert_eq!(get_from(&behind_proxy, "/api/posts", &client).await.0, 429);
    // A left-most entry the client wrote itself does not make it someone else.
    let prepended = [("x-forwarded-for", "203.0.113.99, 198.51.100.1")];
    assert_eq!(
        get_from(&behind_proxy, "/api/posts", &prepended).await.0,
        429
    );
    let other = [("forwarded", "for=198.51.100.2")];
    assert_eq!(
        get_from(&behind_proxy, "/api/posts", &other).await,
        (200, Some(1))
    );
}

async fn ipv6_clients_are_counted_by_their_64(backend: Backend) {
    let server = limited_server(
        backend,
        "2/hour",
        &[("PLAZA_TRUSTED_PROXIES", "[\"127.0.0.0/8\"]")],
    )
    .await;
    let from = |address: &'static str| [("x-forwarded-for", address)];
    assert_eq!(
        get_from(&server, "/api/posts", &from("2001:db8:1:2::1")).await,
        (200, Some(1))
    );
    assert_eq!(
        get_from(
            &server,
            "/api/posts",
            &from("2001:db8:1:2:ffff:ffff:ffff:ffff")
        )
        .await,
        (200, Some(0))
    );
    assert_eq!(
        get_from(&server, "/api/posts", &from("2001:db8:1:2::abcd"))
            .await
            .0,
        429
    );
    assert_eq!(
        get_from(&server, "/api/posts", &from("2001:db8:1:3::1")).await,
        (200, Some(1))
    );
}

async fn every_surface_answers_429_in_its_own_shape(backend: Backend) {
    let server = limited_server(backend, "1/hour", &[]).await;
    let exhausted = |path: &'static str| {
        let server = &server;
        async move {
            server.get(path).await;
            let refused = server.get(path).await;
            assert_eq!(refused.status(), 429, "{path}");
            assert!(header(&refused, "retry-after").is_some(), "{path}");
            assert_eq!(header(&refused, "x-ratelimit-remaining"), Some(0), "{path}");
            refused.json::<Value>().await.expect("a JSON body")
        }
    };
    // One address, one budget: each path uses it up on the first request.
    let general = exhausted("/api/posts").await;
    assert_eq!(general["error"]["code"], "RATE_LIMITED", "{general}");
    let plain = exhausted("/api/link-preview?url=https://example.com/").await;
    assert!(
        plain["error"].is_string() && plain["details"].is_string(),
        "{plain}"
    );
    let image = exhausted("/api/avatar-image?seed=a").await;
    assert_eq!(image["status"], 429, "{image}");
    assert!(image["error"].is_string(), "{image}");
}

async fn probes_are_never_limited(backend: Backend) {
    let server = limited_server(backend, "1/hour", &[]).await;
    for _ in 0..5 {
        for path in ["/api/health", "/api/version"] {
            let response = server.get(path).await;
            assert_eq!(response.status(), 200, "{path}");
            assert!(
                response.headers().get("x-ratelimit-limit").is_none(),
                "{path}"
            );
        }
    }
}

async fn the_sign_in_throttle_answers_with_the_limit_headers(backend: Backend) {
    let server = limited_server(backend, "100/hour", &[("PLAZA_SIGN_IN_MAX_FAILURES", "2")]).await;
    server.create_user("member@example.com", PASSWORD, "user");
    let attempt = || {
        server
            .client
            .post(server.url("/api/auth/signin"))
            .json(&serde_json::json!({"email": "member@example.com", "password": "wrong"}))
            .send()
    };
    for _ in 0..2 {
        let failed = attempt().await.unwrap();
        assert_eq!(failed.status(), 401);
        assert_eq!(header(&failed, "x-ratelimit-limit"), Some(100));
    }
    let throttled = attempt().await.unwrap();
    assert_eq!(throttled.status(), 429);
    assert_eq!(header(&throttled, "x-ratelimit-limit"), Some(2));
    assert_eq!(header(&throttled, "x-ratelimit-remaining"), Some(0));
    assert!(header(&throttled, "x-ratelimit-reset").is_some());
    assert!(header(&throttled, "retry-after").is_some());
}

const TLS_PASSWORD: &str = "plaza-test";

/// A private Redis on a free loopback port, stopped with the test.
pub(crate) struct PrivateRedis {
    port: u16,
    child: Option<Child>,
    /// With TLS: the folder of its CA's and its own certificate and key.
    tls: Option<tempfile::TempDir>,
}

impl PrivateRedis {
    pub(crate) fn start(test: &str) -> Option<Self> {
        Self::start_with(test, None)
    }

    /// A Redis that speaks only TLS, with a certificate for 127.0.0.1
    /// signed by a CA made for the test ([`Self::ca_file`]), and wants the
    /// password [`TLS_PASSWORD`] (in [`Self::url`]), as a hosted Redis does.
    fn start_tls(test: &str) -> Option<Self> {
        if Command::new("openssl").arg("version").output().is_err() {
            common::skip(test, "openssl is not installed");
            return None;
        }
        let folder = tempfile::tempdir().expect("a folder for the certificates");
        // Each command is its arguments, split at spaces.
        let openssl = |command: &str| {
            let output = Command::new("openssl")
                .args(command.split_whitespace())
                .current_dir(folder.path())
                .output()
                .expect("run openssl");
            assert!(
                output.status.success(),
                "openssl {command}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        };
        let new_key = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
        openssl(&format!(
            "req -x509 -days 2 {new_key} -keyout ca.key -out ca.pem -subj /CN=plaza-test-ca"
        ));
        openssl(&format!(
            "req {new_key} -keyout redis.key -out redis.csr -subj /CN=127.0.0.1"
        ));
        std::fs::write(
            folder.path().join("san.ext"),
            "subjectAltName=IP:127.0.0.1\n",
        )
        .expect("write the extension file");
        openssl(
            "x509 -req -in redis.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
             -extfile san.ext -out redis.pem",
        );
        Self::start_with(test, Some(folder))
    }

    fn start_with(test: &str, tls: Option<tempfile::TempDir>) -> Option<Self> {
        if Command::new("redis-server")
            .arg("--version")
            .output()
            .is_err()
        {
            common::skip(test, "redis-server is not installed");
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let mut redis = PrivateRedis {
            port,
            child: None,
            tls,
        };
        redis.restart();
        Some(redis)
    }

    pub(crate) fn url(&self) -> String {
        match self.tls {
            None => format!("redis://127.0.0.1:{}", self.port),
            Some(_) => format!("rediss://:{TLS_PASSWORD}@127.0.0.1:{}", self.port),
        }
    }

    /// The test CA's certificate, for `redis_ca_file`.
    fn ca_file(&self) -> String {
        let folder = self.tls.as_ref().expect("a TLS Redis");
        folder.path().join("ca.pem").display().to_string()
    }

    fn restart(&mut self) {
        let port = self.port.to_string();
        let mut command = Command::new("redis-server");
        command.args(["--bind", "127.0.0.1"]);
        match &self.tls {
            None => command.args(["--port", &port]),
            Some(folder) => {
                let file = |name: &str| folder.path().join(name).display().to_string();
                command
                    .args(["--port", "0", "--tls-port", &port])
                    .args(["--tls-cert-file", &file("redis.pem")])
                    .args(["--tls-key-file", &file("redis.key")])
                    .args(["--tls-ca-cert-file", &file("ca.pem")])
                    .args(["--tls-auth-clients", "no"])
                    .args(["--requirepass", TLS_PASSWORD])
            }
        };
        let child = command
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends the server `signal` (`STOP`: it keeps its connections and
    /// answers nothing; `CONT`: it goes on).
    fn signal(&self, signal: &str) {
        let child = self.child.as_ref().expect("redis-server is running");
        let sent = Command::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .status()
            .expect("kill");
        assert!(sent.success(), "kill -{signal}");
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The Redis timeout of the tests that check counts are shared: the first
/// check waits for the connection (a TLS handshake too), which on a busy
/// machine can take longer than the default 100 ms, and a check that times
/// out fails open, uncounted.
const PATIENT_REDIS_TIMEOUT_MS: &str = "10000";

async fn two_instances_share_one_count_through_redis() {
    let backend = Backend::Postgres;
    let Some(redis) = PrivateRedis::start("two_instances_share_one_count_through_redis") else {
        return;
    };
    let url = redis.url();
    let settings = [
        ("PLAZA_REDIS_URL", url.as_str()),
        ("PLAZA_REDIS_TIMEOUT_MS", PATIENT_REDIS_TIMEOUT_MS),
    ];
    let first = limited_server(backend, "4/hour", &settings).await;
    let database = [
        settings[0],
        settings[1],
        ("PLAZA_DATABASE_URL", first.database_url.as_str()),
    ];
    let second = limited_server(backend, "4/hour", &database).await;
    assert_eq!(get_from(&first, "/api/posts", &[]).await, (200, Some(3)));
    assert_eq!(get_from(&second, "/api/posts", &[]).await, (200, Some(2)));
    assert_eq!(get_from(&first, "/api/posts", &[]).await, (200, Some(1)));
    assert_eq!(get_from(&second, "/api/posts", &[]).await, (200, Some(0)));
    assert_eq!(get_from(&first, "/api/posts", &[]).await.0, 429);
    // Plaza derives a refusal's numbers from the script's one answer: the
    // next request's share of the hour (900 s) and the whole hour back.
    let refused = second.get("/api/posts").await;
    assert_eq!(refused.status(), 429);
    assert_eq!(header(&refused, "x-ratelimit-remaining"), Some(0));
    let retry = header(&refused, "retry-after").expect("Retry-After");
    assert!((880..=900).contains(&retry), "Retry-After {retry}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let reset = header(&refused, "x-ratelimit-reset").expect("X-RateLimit-Reset");
    assert!(
        reset >= now + 3500 && reset <= now + 3601,
        "reset {reset}, now {now}"
    );
}

/// Over TLS, two instances that trust the test's CA share one count; one
/// that does not (the system's trust store only) never talks to that
/// Redis, so it fails open: answered, uncounted.
async fn counts_are_shared_over_tls_with_a_redis_whose_ca_is_given() {
    let backend = Backend::Postgres;
    let test = "counts_are_shared_over_tls_with_a_redis_whose_ca_is_given";
    let Some(redis) = PrivateRedis::start_tls(test) else {
        return;
    };
    let url = redis.url();
    let ca_file = redis.ca_file();
    let trusting = [
        ("PLAZA_REDIS_URL", url.as_str()),
        ("PLAZA_REDIS_CA_FILE", ca_file.as_str()),
        ("PLAZA_REDIS_TIMEOUT_MS", PATIENT_REDIS_TIMEOUT_MS),
    ];
    let first = limited_server(backend, "3/hour", &trusting).await;
    let second = limited_server(
        backend,
        "3/hour",
        &[
            trusting[0],
            trusting[1],
            trusting[2],
            ("PLAZA_DATABASE_URL", first.database_url.as_str()),
        ],
    )
    .await;
    assert_eq!(get_from(&first, "/api/posts", &[]).await, (200, Some(2)));
    assert_eq!(get_from(&second, "/api/posts", &[]).await, (200, Some(1)));
    assert_eq!(get_from(&first, "/api/posts", &[]).await, (200, Some(0)));
    assert_eq!(get_from(&second, "/api/posts", &[]).await.0, 429);

    let untrusting = limited_server(
        backend,
        "3/hour",
        &[
            ("PLAZA_REDIS_URL", url.as_str()),
            ("PLAZA_DATABASE_URL", first.database_url.as_str()),
        ],
    )
    .await;
    assert_eq!(get_from(&untrusting, "/api/posts", &[]).await, (200, None));
    untrusting.wait_for_log("the shared rate-limit store did not answer");
}

/// The script in Redis and the in-process step decide alike: a fresh
/// client's first charge (which the script offers as one `SET … NX GET`),
/// a charge beyond a fresh bucket (refused, nothing stored), later charges
/// on a stored arrival time, and refusals that store nothing. Within the
/// test's few milliseconds a 5/hour quota's counts do not move with time.
#[tokio::test]
async fn the_redis_script_decides_as_the_in_process_step() {
    use plaza_server::http::rate_limit::gcra::Outcome;
    use plaza_server::http::rate_limit::shared::SharedStore;
    use plaza_server::settings::Quota;
    let Some(redis) = PrivateRedis::start("the_redis_script_decides_as_the_in_process_step") else {
        return;
    };
    let quota: Quota = "5/hour".parse().expect("a quota");
    let store = SharedStore::new(&redis.url(), None, Duration::from_secs(2)).expect("a Redis URL");
    let charges: [(&str, u32); 10] = [
        ("fresh-beyond", 6),
        ("fresh-beyond", 1),
        ("fresh-whole", 5),
        ("fresh-whole", 1),
        ("stepwise", 1),
        ("stepwise", 3),
        ("stepwise", 2),
        ("stepwise", 1),
        ("stepwise", 1),
        ("stepwise", 1),
    ];
    let mut arrivals = std::collections::HashMap::new();
    for (key, cost) in charges {
        let (expected, next) = Outcome::step(quota, arrivals.get(key).copied(), 0, cost);
        if let Some(next) = next {
            arrivals.insert(key, next);
        }
        let answered = store
            .check(format!("test:{key}"), quota, cost)
            .await
            .expect("Redis answers");
        assert_eq!(
            (answered.allowed, answered.remaining),
            (expected.allowed, expected.remaining),
            "{key} charged {cost}: {answered:?} against {expected:?}"
        );
    }
}

/// Checks of different quotas and charges waiting together go as one script
/// call whose arguments come once per group of one quota and charge; each
/// check is still answered by its own quota, its answer reaching its own
/// caller. (Joined on this test's one thread, the checks are all queued
/// before the connection's task takes them, so they make one batch.)
#[tokio::test]
async fn a_batch_of_mixed_quotas_answers_each_check_by_its_own() {
    use plaza_server::http::rate_limit::gcra::Outcome;
    use plaza_server::http::rate_limit::shared::SharedStore;
    use plaza_server::settings::Quota;
    let Some(redis) = PrivateRedis::start("a_batch_of_mixed_quotas_answers_each_check_by_its_own")
    else {
        return;
    };
    let hourly: Quota = "5/hour".parse().expect("a quota");
    let minutely: Quota = "2/minute".parse().expect("a quota");
    let store = SharedStore::new(&redis.url(), None, Duration::from_secs(2)).expect("a Redis URL");
    let checks: Vec<(&str, Quota, u32)> = (0..3)
        .flat_map(|_| {
            [
                ("hourly", hourly, 1),
                ("minutely", minutely, 1),
                ("hourly-by-two", hourly, 2),
            ]
        })
        .collect();
    let answers = futures_util::future::join_all(
        checks
            .iter()
            .map(|&(key, quota, cost)| store.check(format!("test:{key}"), quota, cost)),
    )
    .await;
    let mut arrivals = std::collections::HashMap::new();
    for (&(key, quota, cost), answered) in checks.iter().zip(answers) {
        let (expected, next) = Outcome::step(quota, arrivals.get(key).copied(), 0, cost);
        if let Some(next) = next {
            arrivals.insert(key, next);
        }
        let answered = answered.expect("Redis answers");
        assert_eq!(
            (answered.allowed, answered.remaining, answered.limit),
            (expected.allowed, expected.remaining, expected.limit),
            "{key} charged {cost}: {answered:?} against {expected:?}"
        );
    }
}

/// Checks waiting together go to Redis as one script call; each must still
/// count once, in order, even when they are all the same client's.
async fn concurrent_requests_through_redis_are_each_counted_once(backend: Backend) {
    let test = "concurrent_requests_through_redis_are_each_counted_once";
    let Some(redis) = PrivateRedis::start(test) else {
        return;
    };
    let url = redis.url();
    let server = limited_server(backend, "20/hour", &[("PLAZA_REDIS_URL", url.as_str())]).await;
    let answers =
        futures_util::future::join_all((0..60).map(|_| get_from(&server, "/api/posts", &[]))).await;
    let mut remaining: Vec<u64> = answers
        .iter()
        .filter(|(status, _)| *status == 200)
        .map(|(_, remaining)| remaining.expect("a counted answer has the header"))
        .collect();
    remaining.sort_unstable();
    assert_eq!(remaining, (0..20).collect::<Vec<u64>>(), "{answers:?}");
    assert_eq!(
        answers.iter().filter(|(status, _)| *status == 429).count(),
        40,
        "{answers:?}"
    );
}

/// Two million a second leaves no whole microsecond between requests: the
/// key still gets an expiry Redis accepts, so the check is answered (with
/// its headers) instead of failing open.
async fn a_quota_finer_than_a_microsecond_is_counted_through_redis(backend: Backend) {
    let test = "a_quota_finer_than_a_microsecond_is_counted_through_redis";
    let Some(redis) = PrivateRedis::start(test) else {
        return;
    };
    let url = redis.url();
    let server = limited_server(backend, "2000000/1s", &[("PLAZA_REDIS_URL", url.as_str())]).await;
    for _ in 0..3 {
        let (status, remaining) = get_from(&server, "/api/posts", &[]).await;
        assert_eq!(status, 200);
        assert!(remaining.is_some(), "counted, not failed open");
    }
}

/// Reads `/api/posts` until an answer carries the limit headers again (the
/// limiter is back from failing open), within 15 seconds; answers that one.
async fn first_counted(server: &TestServer) -> (u16, Option<u64>) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let answer = get_from(server, "/api/posts", &[]).await;
        if answer.1.is_some() {
            return answer;
        }
        assert!(Instant::now() < deadline, "the limiter never reconnected");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn without_redis_reads_fail_open_and_sign_in_fails_closed_until_it_is_back(backend: Backend) {
    let test = "without_redis_reads_fail_open_and_sign_in_fails_closed_until_it_is_back";
    let Some(mut redis) = PrivateRedis::start(test) else {
        return;
    };
    let url = redis.url();
    let server = limited_server(
        backend,
        "2/hour",
        &[
            ("PLAZA_REDIS_URL", url.as_str()),
            ("PLAZA_METRICS_PUBLIC", "true"),
        ],
    )
    .await;
    assert_eq!(get_from(&server, "/api/posts", &[]).await, (200, Some(1)));

    redis.stop();
    for _ in 0..5 {
        // Open: answered, uncounted, without limit headers.
        assert_eq!(get_from(&server, "/api/posts", &[]).await, (200, None));
    }
    let closed = server.try_sign_in("nobody@example.com", "wrong").await;
    assert_eq!(closed.status(), 503);
    assert!(header(&closed, "retry-after").is_some());
    let said = closed.text().await.unwrap();
    assert!(
        said.contains("the shared rate-limit store (Redis) does not answer"),
        "the answer says what is down: {said}"
    );
    server.wait_for_log("the shared rate-limit store did not answer");
    let metrics = server.get("/api/metrics").await;
    let scrape = metrics.text().await.unwrap();
    assert!(
        scrape.contains("plaza_rate_limit_store_errors_total"),
        "{scrape}"
    );

    redis.restart();
    // Back by itself: within seconds the count runs again (a fresh Redis
    // starts it from zero), and the third request of the quota is refused.
    assert_eq!(first_counted(&server).await, (200, Some(1)));
    assert_eq!(get_from(&server, "/api/posts", &[]).await, (200, Some(0)));
    assert_eq!(get_from(&server, "/api/posts", &[]).await.0, 429);
    assert_eq!(
        server
            .try_sign_in("nobody@example.com", "wrong")
            .await
            .status(),
        429
    );
}

async fn a_stalled_redis_fails_each_check_in_its_direction_and_recovers(backend: Backend) {
    let Some(redis) =
        PrivateRedis::start("a_stalled_redis_fails_each_check_in_its_direction_and_recovers")
    else {
        return;
    };
    let url = redis.url();
    let server = limited_server(
        backend,
        "100/hour",
        &[
            ("PLAZA_REDIS_URL", url.as_str()),
            ("PLAZA_REDIS_TIMEOUT_MS", "300"),
        ],
    )
    .await;
    assert_eq!(get_from(&server, "/api/posts", &[]).await, (200, Some(99)));

    // Connected, and silent: every check waits on the one connection, the
    // first ones in a round trip that never ends, the rest queued behind
    // it; each is answered in its direction within its own timeout.
    redis.signal("STOP");
    let started = Instant::now();
    let reads =
        futures_util::future::join_all((0..40).map(|_| get_from(&server, "/api/posts", &[])));
    let (reads, closed) = tokio::time::timeout(Duration::from_secs(20), async {
        tokio::join!(reads, server.try_sign_in("nobody@example.com", "wrong"))
    })
    .await
    .expect("requests held by a stalled Redis");
    let took = started.elapsed();
    assert!(reads.iter().all(|read| *read == (200, None)), "{reads:?}");
    assert_eq!(closed.status(), 503);
    assert!(took < Duration::from_secs(5), "answered after {took:?}");

    redis.signal("CONT");
    assert_eq!(first_counted(&server).await.0, 200);
}

/// The sign-in throttle's address bucket counts the address as the rate
/// limiter does (an IPv6 client by its /64), and past its limit it refuses
/// wrong passwords only: everyone else behind the address (a NAT, an
/// office) still signs in with theirs.
async fn a_guesser_behind_a_shared_address_locks_out_nobody_who_knows_their_password(
    backend: Backend,
) {
    // One failure per account, so four per address.
    let server = TestServer::start_with(
        backend,
        &[
            ("PLAZA_SIGN_IN_MAX_FAILURES", "1"),
            ("PLAZA_TRUSTED_PROXIES", "[\"127.0.0.1\"]"),
        ],
    )
    .await;
    for index in 0..6 {
        server.create_user(&format!("u{index}@example.com"), PASSWORD, "user");
    }
    let attempt = |from: String, email: String, password: &'static str| {
        server
            .client
            .post(server.url("/api/auth/signin"))
            .header("x-forwarded-for", from)
            .json(&serde_json::json!({"email": email, "password": password}))
            .send()
    };
    // Six addresses of one IPv4 client, then six of one IPv6 /64.
    let networks: [(&str, [String; 6]); 2] = [
        (
            "198.51.100.7",
            std::array::from_fn(|_| "198.51.100.7".to_owned()),
        ),
        (
            "2001:db8:1:2::/64",
            std::array::from_fn(|index| format!("2001:db8:1:2::{:x}", index + 1)),
        ),
    ];
    for (network, addresses) in networks {
        let from = |index: usize| addresses[index].clone();
        let mut statuses = Vec::new();
        for index in 0..5 {
            let answer = attempt(from(index), format!("u{index}@example.com"), "wrong")
                .await
                .unwrap();
            statuses.push(answer.status().as_u16());
        }
        assert_eq!(
            statuses,
            [401, 401, 401, 401, 429],
            "wrong passwords from {network}"
        );
        let right = attempt(from(5), "u5@example.com".to_owned(), PASSWORD)
            .await
            .unwrap();
        assert_eq!(
            right.status(),
            200,
            "a right password from {network} signs in"
        );
        let wrong = attempt(from(5), "u5@example.com".to_owned(), "wrong")
            .await
            .unwrap();
        assert_eq!(wrong.status(), 429, "a wrong one from {network} waits");
        server.sql("DELETE FROM login_failures").await;
    }
}

/// `GET /api/health` until its status is `status` (the probes are reused
/// for up to a second), within five seconds: its body.
async fn health_once(server: &TestServer, status: u16) -> Value {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let answer = server.get("/api/health").await;
        let seen = answer.status().as_u16();
        let body: Value = answer.json().await.expect("a JSON body");
        if seen == status {
            return body;
        }
        assert!(Instant::now() < deadline, "health stayed {seen}: {body}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `GET /api/health` until its status field is `degraded` (within five
/// seconds, the answer 200 throughout): its body.
async fn health_degraded(server: &TestServer) -> Value {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let body = health_once(server, 200).await;
        if body["status"] == "degraded" {
            return body;
        }
        assert!(Instant::now() < deadline, "health stayed ok: {body}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Health names the database, the upload store and, when it holds the
/// shared limits, Redis; while the configured Redis is down the instance
/// is `degraded` but still 200 (Redis is shared: a load balancer that took
/// every instance out for it would take the site down, while reads and
/// posts still work), and an instance started while Redis is down says so
/// in an error line.
async fn health_names_each_dependency_and_is_degraded_while_redis_is_down(backend: Backend) {
    let test = "health_names_each_dependency_and_is_degraded_while_redis_is_down";
    let Some(mut redis) = PrivateRedis::start(test) else {
        return;
    };
    let url = redis.url();
    let server = limited_server(backend, "100/hour", &[("PLAZA_REDIS_URL", url.as_str())]).await;
    let body = health_once(&server, 200).await;
    assert_eq!(
        (
            &body["status"],
            &body["database"],
            &body["redis"],
            &body["storage"]
        ),
        (
            &json!("ok"),
            &json!("connected"),
            &json!("connected"),
            &json!("connected")
        ),
        "{body}"
    );

    redis.stop();
    let body = health_degraded(&server).await;
    assert_eq!(
        (
            &body["status"],
            &body["database"],
            &body["redis"],
            &body["storage"]
        ),
        (
            &json!("degraded"),
            &json!("connected"),
            &json!("unreachable"),
            &json!("connected")
        ),
        "{body}"
    );
    let late = limited_server(backend, "100/hour", &[("PLAZA_REDIS_URL", url.as_str())]).await;
    late.wait_for_log("redis_url does not answer");
    assert!(late.logs().contains("ERROR"), "{}", late.logs());

    redis.restart();
    let deadline = Instant::now() + Duration::from_secs(5);
    while health_once(&server, 200).await["status"] != "ok" {
        assert!(Instant::now() < deadline, "health stayed degraded");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    health_once(&late, 200).await;

    // Without Redis there is nothing to name.
    let alone = limited_server(backend, "100/hour", &[]).await;
    let body = health_once(&alone, 200).await;
    assert!(body.get("redis").is_none(), "{body}");
}
