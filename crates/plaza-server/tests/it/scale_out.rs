//! Several instances proven as a whole: two `plaza` processes on one fresh
//! PostgreSQL database, one Redis and one S3-compatible store (moto), with
//! the same secrets, answer as one service, whichever of them a request
//! reaches.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::alerts::{AlertStream, FAST_STREAMS, WITHIN_A_SECOND, broadcast};
use crate::common::{self, As, Backend, PASSWORD, TestServer, member};
use crate::rate_limits::PrivateRedis;
use crate::uploads::{Moto, borrowed, create_bucket, encoded, picture, s3_env, upload};

on_postgres!(two_instances_answer_as_one_service);

const TEST: &str = "two_instances_answer_as_one_service";

async fn session_email(server: &TestServer, cookie: &str) -> Value {
    let session: Value = server.get_json_as("/api/auth/session", cookie).await;
    session["user"]["email"].clone()
}

async fn status_of(
    server: &TestServer,
    who: As<'_>,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> u16 {
    server
        .send(who, method, path, body.as_ref())
        .await
        .status()
        .as_u16()
}

/// The flag `launch` as `GET /api/feature-flags` answers it for `cookie`.
async fn launch_flag(server: &TestServer, cookie: &str) -> Value {
    let response = server
        .send(As::Session(cookie), "GET", "/api/feature-flags", None)
        .await;
    response.json::<Value>().await.unwrap()["flags"]["launch"].clone()
}

/// The job's successful runs on `server`, from its metrics.
async fn job_runs(server: &TestServer, job: &str) -> u64 {
    let text = server.get("/api/metrics").await.text().await.unwrap();
    let sample = format!("plaza_job_runs_total{{job=\"{job}\",outcome=\"success\"}} ");
    text.lines()
        .find_map(|line| line.strip_prefix(&sample)?.parse().ok())
        .unwrap_or(0)
}

async fn two_instances_answer_as_one_service() {
    let Some(redis) = PrivateRedis::start(TEST) else {
        return;
    };
    let Some(moto) = Moto::start() else {
        common::skip(TEST, "python3 -m moto.server is not installed");
        return;
    };
    let endpoint = format!("http://127.0.0.1:{}", moto.port);
    create_bucket(&endpoint);
    let redis_url = redis.url();
    let mut env = s3_env(&endpoint, "10");
    env.extend([
        ("PLAZA_REDIS_URL", redis_url),
        (
            "PLAZA_ANALYTICS_SALT",
            "the-same-salt-on-every-instance-0123".to_owned(),
        ),
        ("PLAZA_RATE_LIMITS_ENABLED", "true".to_owned()),
        ("PLAZA_RATE_LIMIT_ANONYMOUS", "30/hour".to_owned()),
        ("PLAZA_METRICS_PUBLIC", "true".to_owned()),
        (FAST_STREAMS.0, FAST_STREAMS.1.to_owned()),
    ]);
    let a = TestServer::start_with(Backend::Postgres, &borrowed(&env)).await;
    env.push(("PLAZA_DATABASE_URL", a.database_url.clone()));
    let b = TestServer::start_with(Backend::Postgres, &borrowed(&env)).await;

    // A session made on A works on B; signing out on B ends it on A.
    let (_, cookie) = member(&a, "user@example.com", "user").await;
    assert_eq!(session_email(&b, &cookie).await, "user@example.com");
    let signed_out = b
        .sign_out_with(&cookie, "origin", "http://localhost:3000")
        .await;
    assert!(signed_out.status().is_success() || signed_out.status().is_redirection());
    assert_eq!(session_email(&a, &cookie).await, Value::Null);

    // An admin token revoked on B is refused on A.
    a.create_user("admin@example.com", PASSWORD, "admin");
    let revoked = a.mint("admin@example.com", "admin:read");
    assert_eq!(
        status_of(&a, As::Token(&revoked), "GET", "/api/v1/admin/users", None).await,
        200
    );
    assert_eq!(
        status_of(&b, As::Token(&revoked), "DELETE", "/api/auth/token", None).await,
        204
    );
    assert_eq!(
        status_of(&a, As::Token(&revoked), "GET", "/api/v1/admin/users", None).await,
        401
    );

    // A ban through B ends the user's session and alert stream on A.
    let token = a.mint("admin@example.com", "admin:write");
    let (banned_id, banned) = member(&a, "banned@example.com", "user").await;
    let mut banned_stream = AlertStream::open(&a, &banned, None).await;
    let ban = json!({"action": "ban", "reason": "Spam"});
    let path = format!("/api/v1/admin/users/{banned_id}/ban");
    assert_eq!(
        status_of(&b, As::Token(&token), "POST", &path, Some(ban)).await,
        200
    );
    assert!(
        banned_stream.ends_within(WITHIN_A_SECOND).await,
        "the stream on A outlived the ban"
    );
    assert_eq!(session_email(&a, &banned).await, Value::Null);

    // An edit lock another admin holds refuses B's write.
    let holder = a.create_user("holder@example.com", PASSWORD, "admin");
    let target = a.create_user("target@example.com", PASSWORD, "user");
    a.sql(&format!(
        "INSERT INTO edit_locks (resource_type, resource_id, holder_id, locked_at, expires_at) \
         VALUES ('user', {target}, {holder}, 1700000000000, 4000000000000)"
    ))
    .await;
    let path = format!("/api/v1/admin/users/{target}");
    let note = json!({"notes": "mine"});
    assert_eq!(
        status_of(&b, As::Token(&token), "PUT", &path, Some(note)).await,
        423
    );

    // An upload through A is served by B.
    let (_, uploader) = member(&a, "uploader@example.com", "user").await;
    let png = encoded(&picture(48, 48), image::ImageFormat::Png);
    let (status, body) = upload(&a, &uploader, "shared.png", &png).await;
    assert_eq!(status, 200, "{body}");
    let served = b.get(body["file"]["url"].as_str().unwrap()).await;
    assert_eq!(served.status(), StatusCode::OK);
    let stored = served.bytes().await.unwrap();
    assert_eq!(image::load_from_memory(&stored).unwrap().width(), 48);

    // A flag changed on A is seen on B within 5 s.
    let put = b
        .send(
            As::Token(&token),
            "PUT",
            "/api/v1/admin/feature-flags/launch",
            Some(&json!({"enabled": false})),
        )
        .await;
    assert!(put.status().is_success());
    assert_eq!(launch_flag(&b, &uploader).await, false);
    let put = a
        .send(
            As::Token(&token),
            "PUT",
            "/api/v1/admin/feature-flags/launch",
            Some(&json!({"enabled": true})),
        )
        .await;
    assert!(put.status().is_success());
    let changed = Instant::now();
    while launch_flag(&b, &uploader).await != true {
        assert!(
            changed.elapsed() < Duration::from_secs(5),
            "B still answers the old flag"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // An alert made on A reaches a stream open on B within a second.
    let mut stream = AlertStream::open(&b, &uploader, None).await;
    let (status, body) = broadcast(&a, &token, json!({"title": "Hello", "message": "m"})).await;
    assert_eq!(status, 201, "{body}");
    let sent = Instant::now();
    let event = stream.next().await.expect("the alert");
    assert_eq!(event.data["title"], "Hello", "{:?}", event.data);
    assert!(
        sent.elapsed() <= WITHIN_A_SECOND,
        "took {:?}",
        sent.elapsed()
    );

    // The retention purge, claimed in the database, ran on one of them.
    assert_eq!(
        job_runs(&a, "analytics_retention").await + job_runs(&b, "analytics_retention").await,
        1
    );

    // The anonymous limit counts across both, through Redis.
    let remaining = |response: &reqwest::Response| {
        response.headers()["x-ratelimit-remaining"]
            .to_str()
            .unwrap()
            .parse::<i64>()
            .unwrap()
    };
    let first = a.get("/api/posts").await;
    let second = b.get("/api/posts").await;
    assert_eq!(remaining(&second), remaining(&first) - 1);
}
