//! Public reads at memory speed, and how fresh they stay: cached anonymous
//! answers are checked in memory while an instance's notifications of
//! writes are connected, at most a second behind a write on another
//! instance; with the notifications cut they are checked by a read and
//! never behind; every public list, search and profile carries a strong
//! `ETag`, and `If-None-Match` with it answers 304.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::{Backend, TestServer, member, post};
use crate::rate_limits::PrivateRedis;

on_both_databases!(
    cached_answers_are_checked_in_memory_while_notifications_are_connected,
    if_none_match_answers_304_and_a_changed_list_a_new_tag,
);
on_postgres!(
    a_write_through_one_instance_reaches_readers_of_another_within_a_second,
    with_notifications_cut_cached_answers_are_checked_by_reading,
    redis_notifications_carry_writes_between_instances,
);

const LIST: &str = "/api/posts?limit=5";

/// An instance sharing `first`'s database, with public metrics.
async fn second_instance(first: &TestServer, extra: &[(&str, &str)]) -> TestServer {
    let mut env = vec![
        ("PLAZA_DATABASE_URL", first.database_url.as_str()),
        ("PLAZA_METRICS_PUBLIC", "true"),
    ];
    env.extend_from_slice(extra);
    TestServer::start_with(Backend::Postgres, &env).await
}

/// The first sample of `metric` (name and labels, as exposed) on `server`.
async fn metric(server: &TestServer, metric: &str) -> f64 {
    let text = server.get("/api/metrics").await.text().await.unwrap();
    let prefix = format!("{metric} ");
    text.lines()
        .find_map(|line| line.strip_prefix(&prefix)?.trim().parse().ok())
        .unwrap_or(0.0)
}

fn listening(channel: &str) -> String {
    format!("plaza_content_notifications_listening{{channel=\"{channel}\"}}")
}

fn received(channel: &str) -> String {
    format!("plaza_content_notifications_received_total{{channel=\"{channel}\"}}")
}

/// Waits (30 s at most) until `server` has heard of more writes on
/// `channel` than `before`.
async fn wait_heard(server: &TestServer, channel: &str, before: f64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while metric(server, &received(channel)).await <= before {
        assert!(Instant::now() < deadline, "no write announced on {channel}");
    }
}

fn connects(channel: &str) -> String {
    format!("plaza_content_notifications_connects_total{{channel=\"{channel}\"}}")
}

/// Waits (30 s at most) until `server`'s notifications on `channel` are
/// connected.
async fn wait_listening(server: &TestServer, channel: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while metric(server, &listening(channel)).await != 1.0 {
        assert!(Instant::now() < deadline, "{channel} never connected");
    }
}

/// The ids on the anonymous list page `LIST` of `server`.
async fn listed(server: &TestServer) -> Vec<String> {
    let page: Value = server.get(LIST).await.json().await.unwrap();
    page["posts"]
        .as_array()
        .unwrap_or_else(|| panic!("no posts in {page}"))
        .iter()
        .map(|post| post["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Polls `reader`'s anonymous list until it shows `id` first; fails when a
/// request sent more than a second after `written` (when the write was
/// answered) still does not.
async fn seen_within_a_second(reader: &TestServer, id: &str, written: Instant) {
    loop {
        let sent = Instant::now();
        let ids = listed(reader).await;
        if ids.first().map(String::as_str) == Some(id) {
            return;
        }
        assert!(
            sent.duration_since(written) < Duration::from_secs(1),
            "post {id} still missing from {ids:?} more than a second after it was written"
        );
    }
}

async fn a_write_through_one_instance_reaches_readers_of_another_within_a_second() {
    let a = TestServer::start(Backend::Postgres).await;
    let b = second_instance(&a, &[]).await;
    wait_listening(&b, "postgres").await;
    let (_, author) = member(&a, "author@example.com", "user").await;
    let first = post(&a, &author, json!({"title": "First", "content": "x"})).await;
    seen_within_a_second(&b, &first, Instant::now()).await;
    for n in 0..3 {
        // B has the page cached; each write through A replaces it on B,
        // and B hears of it from PostgreSQL.
        let heard = metric(&b, &received("postgres")).await;
        let next = post(
            &a,
            &author,
            json!({"title": format!("Next {n}"), "content": "x"}),
        )
        .await;
        seen_within_a_second(&b, &next, Instant::now()).await;
        wait_heard(&b, "postgres", heard).await;
    }
}

async fn with_notifications_cut_cached_answers_are_checked_by_reading() {
    let a = TestServer::start(Backend::Postgres).await;
    let b = second_instance(&a, &[]).await;
    wait_listening(&b, "postgres").await;
    let (_, author) = member(&a, "author@example.com", "user").await;
    let mut checked_while_cut = false;
    for attempt in 0..20 {
        let before = post(&a, &author, json!({"title": "Before", "content": "x"})).await;
        seen_within_a_second(&b, &before, Instant::now()).await;
        let connects_before = metric(&b, &connects("postgres")).await;
        let cut = a
            .sql_count(&format!(
                "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity \
                 WHERE application_name = '{}' AND datname = current_database()",
                plaza_domain::content_notifications::APPLICATION_NAME
            ))
            .await;
        assert!(cut >= 1, "B's listening connection was there to cut");
        // Until B sees the loss (or is back already), nothing is promised
        // beyond the second.
        let deadline = Instant::now() + Duration::from_secs(30);
        while metric(&b, &listening("postgres")).await == 1.0
            && metric(&b, &connects("postgres")).await == connects_before
        {
            assert!(Instant::now() < deadline, "B never saw its listener go");
        }
        // Written while B cannot hear of it: B's next answer shows it.
        let during = post(
            &a,
            &author,
            json!({"title": format!("During {attempt}"), "content": "x"}),
        )
        .await;
        let ids = listed(&b).await;
        let still_cut = metric(&b, &connects("postgres")).await == connects_before;
        if still_cut {
            assert_eq!(
                ids.first(),
                Some(&during),
                "a cached answer older than a write, with notifications cut"
            );
            checked_while_cut = true;
        }
        // Back with a new connection: trusted again only after a new read.
        wait_listening(&b, "postgres").await;
        let after = post(&a, &author, json!({"title": "After", "content": "x"})).await;
        seen_within_a_second(&b, &after, Instant::now()).await;
        if checked_while_cut {
            break;
        }
    }
    assert!(
        checked_while_cut,
        "B reconnected before every read of the twenty tries"
    );
}

async fn redis_notifications_carry_writes_between_instances() {
    const TEST: &str = "redis_notifications_carry_writes_between_instances";
    let Some(redis) = PrivateRedis::start(TEST) else {
        return;
    };
    let redis_url = redis.url();
    let settings = [
        ("PLAZA_REDIS_URL", redis_url.as_str()),
        ("PLAZA_CONTENT_NOTIFICATIONS", "redis"),
        ("PLAZA_METRICS_PUBLIC", "true"),
    ];
    let a = TestServer::start_with(Backend::Postgres, &settings).await;
    let b = second_instance(&a, &settings).await;
    wait_listening(&a, "redis").await;
    wait_listening(&b, "redis").await;
    assert_eq!(
        a.sql_count(&format!(
            "SELECT COUNT(*) FROM pg_stat_activity \
             WHERE application_name = '{}' AND datname = current_database()",
            plaza_domain::content_notifications::APPLICATION_NAME
        ))
        .await,
        0,
        "no PostgreSQL listener with Redis notifications"
    );
    let (_, author) = member(&a, "author@example.com", "user").await;
    for n in 0..3 {
        let heard = metric(&b, &received("redis")).await;
        let written = post(
            &a,
            &author,
            json!({"title": format!("Post {n}"), "content": "x"}),
        )
        .await;
        seen_within_a_second(&b, &written, Instant::now()).await;
        wait_heard(&b, "redis", heard).await;
    }
}

async fn cached_answers_are_checked_in_memory_while_notifications_are_connected(backend: Backend) {
    let server = TestServer::start_with(backend, &[("PLAZA_METRICS_PUBLIC", "true")]).await;
    let channel = match backend {
        Backend::Sqlite => "in_process",
        Backend::Postgres => "postgres",
    };
    wait_listening(&server, channel).await;
    let (_, author) = member(&server, "author@example.com", "user").await;
    let written = post(&server, &author, json!({"title": "Walrus", "content": "x"})).await;
    assert_eq!(
        listed(&server).await,
        vec![written.clone()],
        "seen at once by the instance that wrote"
    );
    let reads = "plaza_content_generation_reads_total";
    let before = metric(&server, reads).await;
    for _ in 0..20 {
        assert_eq!(listed(&server).await, vec![written.clone()]);
    }
    let made = metric(&server, reads).await - before;
    assert!(
        made < 10.0,
        "{made} reads of the generation for 20 cached answers"
    );
}

/// `path` answered to `headers`: status, `ETag` and body.
async fn tagged(
    server: &TestServer,
    path: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, String, String) {
    let mut request = server.client.get(server.url(path));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let etag = response
        .headers()
        .get("etag")
        .unwrap_or_else(|| panic!("{path}: no ETag"))
        .to_str()
        .unwrap()
        .to_owned();
    assert!(etag.starts_with('"'), "a strong tag: {etag}");
    (status, etag, response.text().await.unwrap())
}

async fn if_none_match_answers_304_and_a_changed_list_a_new_tag(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (author_id, author) = member(&server, "author@example.com", "user").await;
    post(
        &server,
        &author,
        json!({"title": "Walrus one", "content": "x"}),
    )
    .await;
    let profile = format!("/api/users/{author_id}/profile");
    let public_routes = [
        LIST,
        "/api/search/posts?q=walrus",
        "/api/search?q=walrus",
        "/api/search/users?q=author",
        profile.as_str(),
    ];
    for path in public_routes {
        let (status, tag, body) = tagged(&server, path, &[]).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
        // Twice, so the second is a cached answer where there is one.
        for _ in 0..2 {
            let (status, again, body) = tagged(&server, path, &[("if-none-match", &tag)]).await;
            assert_eq!(status, StatusCode::NOT_MODIFIED, "{path}");
            assert_eq!(again, tag, "{path}");
            assert!(body.is_empty(), "{path}: a 304 has no body");
        }
        let (status, _, _) = tagged(&server, path, &[("if-none-match", "\"another\"")]).await;
        assert_eq!(status, StatusCode::OK, "{path} with another tag");
    }
    // Signed in, the answer is rendered for the caller, and tagged too.
    let own = [("cookie", author.as_str())];
    let (_, own_tag, _) = tagged(&server, LIST, &own).await;
    let (status, _, _) = tagged(
        &server,
        LIST,
        &[("cookie", author.as_str()), ("if-none-match", &own_tag)],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    // Caches may keep an answer but must ask again; a signed-in caller's
    // only in their own.
    for (cookie, cache_control) in [
        (None, "no-cache"),
        (Some(author.as_str()), "private, no-cache"),
    ] {
        let mut request = server.client.get(server.url(LIST));
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.headers()["cache-control"], cache_control);
        assert!(
            response.headers()["vary"]
                .to_str()
                .unwrap()
                .contains("cookie, authorization")
        );
    }

    let (_, before, _) = tagged(&server, LIST, &[]).await;
    post(
        &server,
        &author,
        json!({"title": "Walrus two", "content": "x"}),
    )
    .await;
    let written = Instant::now();
    loop {
        let sent = Instant::now();
        let (status, tag, body) = tagged(&server, LIST, &[("if-none-match", &before)]).await;
        if status == StatusCode::OK {
            assert_ne!(tag, before, "a changed list, a new tag");
            assert!(body.contains("Walrus two"), "{body}");
            let (status, _, _) = tagged(&server, LIST, &[("if-none-match", &tag)]).await;
            assert_eq!(status, StatusCode::NOT_MODIFIED, "the new tag is current");
            break;
        }
        assert!(
            sent.duration_since(written) < Duration::from_secs(1),
            "the old tag still current more than a second after a write"
        );
    }
}
