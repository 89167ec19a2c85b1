//! Webhooks through HTTP (DECISIONS.md "Tokens for members and bots, and
//! webhooks (round 5)"), with a receiver on a loopback port in the test:
//! the secret shown once and stored sealed; each wired event type delivered
//! with a valid signature within 5 s of its cause; a failing receiver
//! retried until it answers; the delivery log and redelivery with the same
//! id; deactivation after 50 failed deliveries in a row; private targets
//! refused by default, at creation and again at delivery; a delivery that
//! survives a restart; and two instances delivering each event once.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{As, Backend, PASSWORD, TestServer, call, member, post};

on_both_databases!(
    the_secret_is_shown_once_and_stored_sealed,
    each_event_type_arrives_signed_within_five_seconds,
    a_failing_receiver_is_retried_logged_and_redelivered,
    fifty_failed_deliveries_in_a_row_deactivate_a_webhook,
    private_targets_are_refused_by_default_and_at_delivery,
    a_pending_delivery_survives_a_restart,
);

on_postgres!(two_instances_deliver_each_event_once);

/// Test servers reach the receiver on loopback, and retry after a second.
const ENV: &[(&str, &str)] = &[
    ("PLAZA_WEBHOOKS_ALLOW_PRIVATE", "true"),
    ("PLAZA_WEBHOOK_RETRY_INITIAL_SECS", "1"),
];

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    pub at: Instant,
    pub headers: axum::http::HeaderMap,
    pub body: String,
}

impl Received {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap()
    }

    pub fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    }
}

/// A webhook receiver on a loopback port: it records every request and
/// answers with the statuses queued, then 200.
pub struct Receiver {
    pub url: String,
    got: Arc<Mutex<Vec<Received>>>,
    statuses: Arc<Mutex<Vec<u16>>>,
    _task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    pub async fn start(statuses: Vec<u16>) -> Receiver {
        let got: Arc<Mutex<Vec<Received>>> = Arc::default();
        let statuses = Arc::new(Mutex::new(statuses));
        let (recorded, queued) = (got.clone(), statuses.clone());
        let app = axum::Router::new().fallback(
            move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let (recorded, queued) = (recorded.clone(), queued.clone());
                async move {
                    recorded.lock().unwrap().push(Received {
                        at: Instant::now(),
                        headers,
                        body: String::from_utf8_lossy(&body).into_owned(),
                    });
                    let mut queued = queued.lock().unwrap();
                    let status = if queued.is_empty() {
                        200
                    } else {
                        queued.remove(0)
                    };
                    axum::http::StatusCode::from_u16(status).unwrap()
                }
            },
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Receiver {
            url,
            got,
            statuses,
            _task: task,
        }
    }

    pub fn received(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    /// Answers every request from now on with `status`.
    pub fn always(&self, status: u16) {
        *self.statuses.lock().unwrap() = vec![status; 10_000];
    }

    /// Waits (`within` at most) until `count` requests came.
    pub async fn wait_for(&self, count: usize, within: Duration) -> Vec<Received> {
        let deadline = Instant::now() + within;
        loop {
            let got = self.received();
            if got.len() >= count {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "{} of {count} requests after {within:?}",
                got.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A super admin's `admin:super` token on `server`.
pub fn super_token(server: &TestServer) -> String {
    server.create_user("root@example.com", PASSWORD, "super_admin");
    server.mint("root@example.com", "admin:super")
}

/// A request with `token` as its bearer: (status, JSON body).
async fn send(
    server: &TestServer,
    token: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let answer = server
        .send(As::Token(token), method, path, body.as_ref())
        .await;
    let status = answer.status().as_u16();
    let text = answer.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Registers a webhook for `events` at `url`: (its id, its secret).
pub async fn register(
    server: &TestServer,
    token: &str,
    url: &str,
    events: &[&str],
) -> (String, String) {
    let (status, body) = send(
        server,
        token,
        "POST",
        "/api/v1/admin/webhooks",
        Some(json!({"url": url, "events": events, "description": "test"})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    (
        body["data"]["id"].as_str().unwrap().to_owned(),
        body["data"]["secret"].as_str().unwrap().to_owned(),
    )
}

/// The deliveries of webhook `id`, newest first.
async fn deliveries(server: &TestServer, token: &str, id: &str) -> Vec<Value> {
    let (status, body) = send(
        server,
        token,
        "GET",
        &format!("/api/v1/admin/webhooks/{id}/deliveries?limit=100"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["data"].as_array().unwrap().clone()
}

/// Whether `received` carries a valid signature of its body under `secret`
/// (DECISIONS.md: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`),
/// made within a minute.
fn signed(received: &Received, secret: &str) -> bool {
    let header = received.header("x-plaza-signature");
    let Some((t, v1)) = header
        .split_once(',')
        .and_then(|(t, v1)| Some((t.strip_prefix("t=")?, v1.strip_prefix("v1=")?)))
    else {
        return false;
    };
    let now = plaza_domain::time::now_millis() / 1000;
    let fresh = t.parse::<i64>().is_ok_and(|t| (now - t).abs() < 60);
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let expected: String = ring::hmac::sign(&key, format!("{t}.{}", received.body).as_bytes())
        .as_ref()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    fresh && v1 == expected
}

async fn the_secret_is_shown_once_and_stored_sealed(backend: Backend) {
    let server = TestServer::start_with(backend, ENV).await;
    let token = super_token(&server);
    let receiver = Receiver::start(Vec::new()).await;
    let (id, secret) = register(&server, &token, &receiver.url, &["post.created"]).await;
    assert!(
        secret.starts_with("whsec_") && secret.len() >= 6 + 43,
        "{secret}"
    );
    let (status, one) = send(
        &server,
        &token,
        "GET",
        &format!("/api/v1/admin/webhooks/{id}"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert!(one["data"].get("secret").is_none(), "{one}");
    assert_eq!(one["data"]["events"], json!(["post.created"]));
    assert_eq!(one["data"]["active"], true);
    let (_, listed) = send(&server, &token, "GET", "/api/v1/admin/webhooks", None).await;
    assert!(!listed.to_string().contains(&secret));
    assert_eq!(
        server
            .sql_count(&format!(
                "SELECT COUNT(*) FROM webhooks WHERE secret_sealed LIKE '%{secret}%' \
                 OR secret_sealed NOT LIKE 'v1.%'"
            ))
            .await,
        0,
        "a database dump alone does not reveal it"
    );
    assert!(server.data_dir.path().join("webhook-key").exists());
    assert_eq!(
        server
            .sql_count(
                "SELECT COUNT(*) FROM audit_log WHERE action = 'webhook.create' \
                 AND changes NOT LIKE '%whsec_%'"
            )
            .await,
        1,
        "audited, without the secret"
    );

    let (status, changed) = send(
        &server,
        &token,
        "PATCH",
        &format!("/api/v1/admin/webhooks/{id}"),
        Some(json!({"events": ["post.created", "reply.created"], "active": false})),
    )
    .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["data"]["active"], false);
    assert_eq!(
        changed["data"]["events"],
        json!(["post.created", "reply.created"])
    );
    let (_, unknown) = send(
        &server,
        &token,
        "PATCH",
        &format!("/api/v1/admin/webhooks/{id}"),
        Some(json!({"events": ["post.liked"]})),
    )
    .await;
    assert_eq!(unknown["error"]["field"], "events", "{unknown}");

    server.create_user("admin@example.com", PASSWORD, "admin");
    let admin = server.mint("admin@example.com", "admin:write");
    let (status, body) = send(&server, &admin, "GET", "/api/v1/admin/webhooks", None).await;
    assert_eq!(status, 403, "{body}");
    let (status, _) = send(
        &server,
        &token,
        "DELETE",
        &format!("/api/v1/admin/webhooks/{id}"),
        None,
    )
    .await;
    assert_eq!(status, 204);
    let (status, _) = send(
        &server,
        &token,
        "GET",
        &format!("/api/v1/admin/webhooks/{id}"),
        None,
    )
    .await;
    assert_eq!(status, 404);
}

async fn each_event_type_arrives_signed_within_five_seconds(backend: Backend) {
    let server = TestServer::start_with(backend, ENV).await;
    let token = super_token(&server);
    let receiver = Receiver::start(Vec::new()).await;
    let wired = [
        "user.created",
        "user.banned",
        "user.unbanned",
        "post.created",
        "reply.created",
        "report.created",
    ];
    let (_, secret) = register(&server, &token, &receiver.url, &wired).await;
    let mut caused: HashMap<&str, Instant> = HashMap::new();

    caused.insert("user.created", Instant::now());
    let (member_id, cookie) = member(&server, "ada@example.com", "user").await;
    caused.insert("post.created", Instant::now());
    let post_id = post(
        &server,
        &cookie,
        json!({"title": "Hello", "content": "World", "published": true}),
    )
    .await;
    caused.insert("reply.created", Instant::now());
    let (status, _) = call(
        &server,
        "POST",
        &format!("/api/posts/{post_id}/replies"),
        Some(&cookie),
        Some(json!({"content": "Me again"})),
    )
    .await;
    assert_eq!(status, 201);
    let (_, reporter) = member(&server, "bob@example.com", "user").await;
    caused.insert("report.created", Instant::now());
    let (status, _) = call(
        &server,
        "POST",
        &format!("/api/posts/{post_id}/report"),
        Some(&reporter),
        Some(json!({"reason": "spam"})),
    )
    .await;
    assert!(status == 200 || status == 201);
    let ban_path = format!("/api/v1/admin/users/{member_id}/ban");
    caused.insert("user.banned", Instant::now());
    let (status, body) = send(
        &server,
        &token,
        "POST",
        &ban_path,
        Some(json!({"action": "ban", "reason": "Spam"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    caused.insert("user.unbanned", Instant::now());
    let (status, body) = send(
        &server,
        &token,
        "POST",
        &ban_path,
        Some(json!({"action": "unban", "reason": "Appeal"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    // Two members signed up: seven events in all.
    let got = receiver.wait_for(7, Duration::from_secs(15)).await;
    let mut seen = HashSet::new();
    for received in &got {
        let body = received.json();
        let kind = body["type"].as_str().unwrap().to_owned();
        assert!(signed(received, &secret), "{kind}: a valid signature");
        assert_eq!(received.header("x-plaza-event"), kind);
        assert_eq!(
            received.header("x-plaza-delivery"),
            body["id"].as_str().unwrap()
        );
        assert!(
            body["created_at"].is_string() && body["data"].is_object(),
            "{body}"
        );
        let cause = caused[kind.as_str()];
        if seen.insert(kind.clone()) {
            assert!(
                received.at.duration_since(cause) < Duration::from_secs(5),
                "{kind} arrived {:?} after its cause",
                received.at.duration_since(cause)
            );
        }
    }
    let mut seen: Vec<String> = seen.into_iter().collect();
    seen.sort();
    let mut expected: Vec<String> = wired.iter().map(|kind| (*kind).to_owned()).collect();
    expected.sort();
    assert_eq!(seen, expected);
    let post_event = got
        .iter()
        .map(Received::json)
        .find(|body| body["type"] == "post.created")
        .unwrap();
    assert_eq!(post_event["data"]["post"]["id"], post_id.as_str());
    assert_eq!(
        post_event["data"]["post"]["author_id"],
        member_id.to_string()
    );
}

/// Polls the deliveries of webhook `id` until the newest is `status`.
async fn wait_for_status(server: &TestServer, token: &str, id: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let listed = deliveries(server, token, id).await;
        if let Some(newest) = listed.first()
            && newest["status"] == status
        {
            return newest.clone();
        }
        assert!(Instant::now() < deadline, "never {status}: {listed:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn a_failing_receiver_is_retried_logged_and_redelivered(backend: Backend) {
    let server = TestServer::start_with(backend, ENV).await;
    let token = super_token(&server);
    let receiver = Receiver::start(vec![500, 503]).await;
    let (id, secret) = register(&server, &token, &receiver.url, &["post.created"]).await;
    let (_, cookie) = member(&server, "ada@example.com", "user").await;
    post(
        &server,
        &cookie,
        json!({"title": "Hi", "content": "There", "published": true}),
    )
    .await;

    let delivered = wait_for_status(&server, &token, &id, "delivered").await;
    let got = receiver.received();
    assert_eq!(got.len(), 3, "two failures, then the delivery");
    let ids: HashSet<String> = got
        .iter()
        .map(|got| got.header("x-plaza-delivery"))
        .collect();
    assert_eq!(ids.len(), 1, "every attempt is the same delivery");
    assert!(got.iter().all(|received| signed(received, &secret)));
    let attempts = delivered["attempts"].as_array().unwrap();
    let codes: Vec<Value> = attempts
        .iter()
        .map(|attempt| attempt["response_code"].clone())
        .collect();
    assert_eq!(codes, vec![json!(500), json!(503), json!(200)]);
    assert!(attempts[0]["error"].is_string() && attempts[2]["error"].is_null());
    assert!(
        attempts
            .iter()
            .all(|attempt| attempt["duration_ms"].is_i64() && attempt["at"].is_string())
    );
    assert!(
        got[1].at.duration_since(got[0].at) >= Duration::from_millis(900),
        "the first retry waits webhook_retry_initial_secs"
    );
    assert!(
        got[2].at.duration_since(got[1].at) >= Duration::from_millis(1900),
        "then the wait doubles"
    );
    assert_eq!(delivered["event"], "post.created");

    let delivery_id = delivered["id"].as_str().unwrap();
    let (status, body) = send(
        &server,
        &token,
        "POST",
        &format!("/api/v1/admin/webhooks/{id}/deliveries/{delivery_id}/redeliver"),
        None,
    )
    .await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["data"]["status"], "pending");
    let again = receiver.wait_for(4, Duration::from_secs(5)).await;
    assert_eq!(
        again[3].header("x-plaza-delivery"),
        delivery_id,
        "the same id"
    );
    let redelivered = wait_for_status(&server, &token, &id, "delivered").await;
    assert_eq!(redelivered["attempts"].as_array().unwrap().len(), 4);
    let (status, _) = send(
        &server,
        &token,
        "POST",
        &format!("/api/v1/admin/webhooks/{id}/deliveries/999999/redeliver"),
        None,
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(
        server
            .sql_count("SELECT COUNT(*) FROM audit_log WHERE action = 'webhook.redeliver'")
            .await,
        1
    );
}

async fn fifty_failed_deliveries_in_a_row_deactivate_a_webhook(backend: Backend) {
    let server = TestServer::start_with(
        backend,
        &[
            ENV[0],
            ENV[1],
            // No retry: each delivery fails at its first attempt.
            ("PLAZA_WEBHOOK_RETRY_WINDOW_SECS", "0"),
            ("PLAZA_METRICS_PUBLIC", "true"),
        ],
    )
    .await;
    let token = super_token(&server);
    let receiver = Receiver::start(Vec::new()).await;
    receiver.always(500);
    let (id, _) = register(&server, &token, &receiver.url, &["post.created"]).await;
    let (_, cookie) = member(&server, "ada@example.com", "user").await;
    for number in 0..50 {
        post(
            &server,
            &cookie,
            json!({"title": format!("Post {number}"), "content": "x", "published": true}),
        )
        .await;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, one) = send(
            &server,
            &token,
            "GET",
            &format!("/api/v1/admin/webhooks/{id}"),
            None,
        )
        .await;
        if one["data"]["active"] == false {
            assert_eq!(one["data"]["failures_in_row"], 50, "{one}");
            break;
        }
        assert!(Instant::now() < deadline, "still active: {one}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    server.wait_for_log("webhook deactivated");
    assert!(server.logs().contains("WARN"), "logged at WARN");
    let metrics = server.get("/api/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains("plaza_webhooks_deactivated_total 1"),
        "counted in the metrics"
    );
    assert_eq!(
        deliveries(&server, &token, &id)
            .await
            .iter()
            .filter(|delivery| delivery["status"] == "failed")
            .count(),
        50
    );
    post(
        &server,
        &cookie,
        json!({"title": "After", "content": "x", "published": true}),
    )
    .await;
    assert_eq!(
        server
            .sql_count("SELECT COUNT(*) FROM webhook_deliveries")
            .await,
        50,
        "nothing is queued for an inactive webhook"
    );
}

async fn private_targets_are_refused_by_default_and_at_delivery(backend: Backend) {
    let mut server = TestServer::start(backend).await;
    let token = super_token(&server);
    let receiver = Receiver::start(Vec::new()).await;
    for url in [
        receiver.url.as_str(),
        "http://localhost/hook",
        "http://10.0.0.1/hook",
        "http://169.254.169.254/latest",
        "http://[::1]/hook",
        "ftp://example.com/hook",
        "not a url",
    ] {
        let (status, body) = send(
            &server,
            &token,
            "POST",
            "/api/v1/admin/webhooks",
            Some(json!({"url": url, "events": ["post.created"]})),
        )
        .await;
        assert_eq!(status, 422, "{url}: {body}");
        assert_eq!(body["error"]["field"], "url", "{url}: {body}");
    }

    // Allowed when the webhook is made, refused again at delivery once the
    // setting is off.
    server.restart_with(&[("PLAZA_WEBHOOKS_ALLOW_PRIVATE", "true")]);
    let (id, _) = register(&server, &token, &receiver.url, &["post.created"]).await;
    server.restart_with(&[
        ("PLAZA_WEBHOOKS_ALLOW_PRIVATE", "false"),
        ("PLAZA_WEBHOOK_RETRY_INITIAL_SECS", "1"),
    ]);
    let (_, cookie) = member(&server, "ada@example.com", "user").await;
    post(
        &server,
        &cookie,
        json!({"title": "Hi", "content": "x", "published": true}),
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let listed = deliveries(&server, &token, &id).await;
        if let Some(attempt) = listed
            .first()
            .and_then(|delivery| delivery["attempts"].as_array())
            .and_then(|attempts| attempts.first())
        {
            assert!(attempt["response_code"].is_null(), "{attempt}");
            assert!(
                attempt["error"].as_str().unwrap().contains("refused"),
                "{attempt}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "no attempt: {listed:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(receiver.received().is_empty(), "nothing reached the target");
}

async fn a_pending_delivery_survives_a_restart(backend: Backend) {
    let mut server = TestServer::start_with(backend, ENV).await;
    let token = super_token(&server);
    let receiver = Receiver::start(Vec::new()).await;
    receiver.always(503);
    let (id, secret) = register(&server, &token, &receiver.url, &["post.created"]).await;
    let (_, cookie) = member(&server, "ada@example.com", "user").await;
    post(
        &server,
        &cookie,
        json!({"title": "Hi", "content": "x", "published": true}),
    )
    .await;
    let first = receiver.wait_for(1, Duration::from_secs(10)).await;
    let delivery_id = first[0].header("x-plaza-delivery");
    // Killed once the failure is recorded: an attempt cut off before that
    // is due again only when its claim's lease ends.
    let deadline = Instant::now() + Duration::from_secs(10);
    while server
        .sql_count("SELECT COUNT(*) FROM webhook_attempts")
        .await
        == 0
    {
        assert!(
            Instant::now() < deadline,
            "the first attempt was never recorded"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.kill();
    receiver.always(200);
    server.restart_with(&[]);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = receiver.received();
        if let Some(delivered) = got
            .iter()
            .skip(1)
            .find(|got| got.header("x-plaza-delivery") == delivery_id)
        {
            assert!(signed(delivered, &secret));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "never delivered after the restart"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let delivered = wait_for_status(&server, &token, &id, "delivered").await;
    assert_eq!(delivered["id"], delivery_id.as_str());
}

async fn two_instances_deliver_each_event_once() {
    let receiver = Receiver::start(Vec::new()).await;
    let a = TestServer::start_with(Backend::Postgres, ENV).await;
    let mut env: Vec<(&str, &str)> = ENV.to_vec();
    env.push(("PLAZA_DATABASE_URL", &a.database_url));
    let key = std::fs::read_to_string(a.data_dir.path().join("webhook-key")).unwrap();
    env.push(("PLAZA_WEBHOOK_KEY", key.trim()));
    let b = TestServer::start_with(Backend::Postgres, &env).await;
    let token = super_token(&a);
    let (id, secret) = register(&a, &token, &receiver.url, &["post.created"]).await;
    let (_, cookie) = member(&a, "ada@example.com", "user").await;
    const EVENTS: usize = 200;
    for number in 0..EVENTS {
        let server = if number % 2 == 0 { &a } else { &b };
        post(
            server,
            &cookie,
            json!({"title": format!("Post {number}"), "content": "x", "published": true}),
        )
        .await;
    }
    receiver.wait_for(EVENTS, Duration::from_secs(60)).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while a
        .sql_count("SELECT COUNT(*) FROM webhook_deliveries WHERE status <> 'delivered'")
        .await
        > 0
    {
        assert!(Instant::now() < deadline, "deliveries still pending");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let got = receiver.received();
    let ids: HashSet<String> = got
        .iter()
        .map(|got| got.header("x-plaza-delivery"))
        .collect();
    assert_eq!(ids.len(), EVENTS, "each event delivered");
    assert_eq!(got.len(), EVENTS, "and once");
    assert!(got.iter().all(|received| signed(received, &secret)));
    let senders = a
        .sql_count("SELECT COUNT(DISTINCT claimed_by) FROM webhook_deliveries")
        .await;
    assert!(senders >= 1);
    assert_eq!(
        deliveries(&a, &token, &id).await.len(),
        100,
        "a page of 100"
    );
}
