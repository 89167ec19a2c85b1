//! Analytics collection: every schema error of SPEC.md is a 400
//! naming its field, a batch is stored whole or not at all, each event
//! counts against the per-user limit, an acknowledged event survives a
//! SIGKILL, shutdown drains the queue, a failed write is 503 with nothing
//! stored, one submission the database refuses fails no other, retention
//! deletes exactly what is older than its window, and the CSV export's
//! text cells cannot run as spreadsheet formulas.

use crate::common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{As, Backend, TestServer, call, member, post};
use plaza_domain::analytics::{NewEvent, PURGE_CHUNK};
use plaza_domain::time::now_millis;
use serde_json::{Value, json};
use time::format_description::well_known::Rfc3339;
use tokio::sync::watch;

on_both_databases!(
    an_event_is_stored_with_what_the_server_adds,
    every_schema_error_is_a_400_naming_its_field,
    without_a_session_collect_is_403,
    collect_trusts_a_confirmed_session_only_within_the_recheck_window,
    without_a_recheck_window_collect_sees_an_ended_session_at_once,
    a_sign_out_here_ends_collect_at_once,
    a_ban_or_a_deactivation_here_ends_collect_at_once,
    a_batch_is_stored_whole_or_not_at_all,
    each_event_counts_against_the_per_user_limit,
    acknowledged_events_survive_a_kill,
    shutdown_stores_every_acknowledged_event,
    a_failed_write_is_503_and_stores_nothing,
    retention_deletes_exactly_what_is_older_than_the_window,
    the_versioned_admin_view_counts_real_activity,
    the_dashboard_is_for_administrators_and_names_each_bad_parameter,
    dashboard_days_are_the_time_zones_days_across_a_daylight_saving_change,
    the_dashboard_csv_holds_the_json_figures,
    control_characters_in_analytics_text_fields_are_400,
    one_refused_submission_never_fails_another_users_events,
    csv_cells_a_spreadsheet_would_run_are_neutralised,
);

fn now_text() -> String {
    plaza_domain::time::from_millis(now_millis())
        .format(&Rfc3339)
        .expect("a time")
}

fn page_view(path: &str) -> Value {
    json!({
        "event_type": "page_view",
        "event_data": {"path": path, "session_id": "s-1"},
        "timestamp": now_text(),
    })
}

async fn stored(server: &TestServer, ids: &[String]) -> HashSet<String> {
    server
        .domain()
        .await
        .stored_event_ids(ids)
        .await
        .expect("stored ids")
}

async fn event_count(server: &TestServer) -> i64 {
    server
        .domain()
        .await
        .analytics_event_count()
        .await
        .expect("count")
}

async fn an_event_is_stored_with_what_the_server_adds(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (user_id, cookie) = member(&server, "reader@example.com", "user").await;
    let response = server
        .client
        .post(server.url("/api/analytics/collect"))
        .header("cookie", &cookie)
        .header(
            "user-agent",
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
        )
        // navigator.sendBeacon sends text/plain.
        .header("content-type", "text/plain;charset=UTF-8")
        .body(page_view("/posts/1").to_string())
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(body["success"], true);
    assert_eq!(body["message"], "Event recorded");
    let event_id = body["event_id"].as_str().expect("event_id").to_owned();
    assert_eq!(
        stored(&server, std::slice::from_ref(&event_id)).await.len(),
        1
    );
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&server.database_url)
        .await
        .expect("connect");
    let (stored_user, device, hash): (i64, String, String) = sqlx::query_as(
        "SELECT user_id, device_type, client_hash FROM analytics_events WHERE event_id = $1",
    )
    .bind(&event_id)
    .fetch_one(&pool)
    .await
    .expect("the event row");
    pool.close().await;
    assert_eq!((stored_user, device.as_str()), (user_id, "mobile"));
    assert_eq!(hash.len(), 32, "a keyed hash, {hash}");
    assert!(!hash.contains("127.0.0.1"));
}

async fn every_schema_error_is_a_400_naming_its_field(backend: Backend) {
    let server =
        TestServer::start_with(backend, &[("PLAZA_ANALYTICS_MAX_EVENT_DATA_BYTES", "64")]).await;
    let (_, cookie) = member(&server, "reader@example.com", "user").await;
    let malformed = server
        .post_raw(
            "/api/analytics/collect",
            Some(&cookie),
            "application/json",
            "{\"event_type\": ",
        )
        .await;
    assert_eq!(malformed.status(), 400);
    let body: Value = malformed.json().await.expect("JSON");
    assert_eq!(body["error"]["code"], "BAD_REQUEST");
    assert_eq!(body["error"]["details"]["field"], "body");
    let now = now_text();
    let cases = [
        (json!([]), "body"),
        (json!({"event_data": {}, "timestamp": now}), "event_type"),
        (
            json!({"event_type": "page_view", "timestamp": now}),
            "event_data",
        ),
        (
            json!({"event_type": "page_view", "event_data": {}}),
            "timestamp",
        ),
        (
            json!({"event_type": "teleport", "event_data": {}, "timestamp": now}),
            "event_type",
        ),
        (
            json!({"event_type": "page_view", "event_data": {}, "timestamp": "yesterday"}),
            "timestamp",
        ),
        (
            json!({"event_type": "page_view", "event_data": {}, "timestamp": "2026-01-01T00:00:00"}),
            "timestamp",
        ),
        (
            json!({"event_type": "page_view", "event_data": "{\"path\": \"/\"}", "timestamp": now}),
            "event_data",
        ),
        (
            json!({"event_type": "page_view", "event_data": {"k": "x".repeat(64)}, "timestamp": now}),
            "event_data",
        ),
    ];
    for (event, field) in cases {
        let (status, body) = call(
            &server,
            "POST",
            "/api/analytics/collect",
            Some(&cookie),
            Some(event.clone()),
        )
        .await;
        assert_eq!(status, 400, "{event}: {body}");
        assert_eq!(body["error"]["code"], "BAD_REQUEST", "{body}");
        assert_eq!(body["error"]["details"]["field"], field, "{event}: {body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|message| message.contains(field)),
            "{body}"
        );
    }
    assert_eq!(event_count(&server).await, 0, "nothing refused was stored");
}

async fn without_a_session_collect_is_403(backend: Backend) {
    let server = TestServer::start(backend).await;
    for path in ["/api/analytics/collect", "/api/analytics/collect/batch"] {
        for cookie in [None, Some("plaza_session=not-a-session")] {
            let (status, body) = call(
                &server,
                "POST",
                path,
                cookie,
                Some(json!({"events": [page_view("/")]})),
            )
            .await;
            assert_eq!(status, 403, "{path} {cookie:?}: {body}");
            assert_eq!(body["error"]["code"], "FORBIDDEN");
        }
    }
    assert_eq!(event_count(&server).await, 0);
}

/// The status of one collect call with `cookie`.
async fn collect_status(server: &TestServer, cookie: &str) -> u16 {
    let (status, body) = call(
        server,
        "POST",
        "/api/analytics/collect",
        Some(cookie),
        Some(page_view("/")),
    )
    .await;
    assert!(matches!(status, 200 | 403), "{status}: {body}");
    status
}

/// A server with `analytics_session_recheck_ms` at `window`, and the cookie
/// of a user whose session collect confirmed and then ended behind this
/// instance's back, as another instance would end it; with the moment
/// collect confirmed it.
async fn ended_elsewhere_after_a_collect(
    backend: Backend,
    window: &str,
) -> (TestServer, String, Instant) {
    let server =
        TestServer::start_with(backend, &[("PLAZA_ANALYTICS_SESSION_RECHECK_MS", window)]).await;
    let (_, cookie) = member(&server, "reader@example.com", "user").await;
    let confirmed = Instant::now();
    assert_eq!(collect_status(&server, &cookie).await, 200);
    server.sql("DELETE FROM sessions").await;
    (server, cookie, confirmed)
}

async fn collect_trusts_a_confirmed_session_only_within_the_recheck_window(backend: Backend) {
    // The window is a second at most; a run that took longer than most of
    // it to get here proves nothing and tries again.
    let mut attempts = 0;
    let (server, cookie) = loop {
        let (server, cookie, confirmed) = ended_elsewhere_after_a_collect(backend, "1000").await;
        let status = collect_status(&server, &cookie).await;
        attempts += 1;
        if confirmed.elapsed() < Duration::from_millis(800) {
            assert_eq!(status, 200, "confirmed less than a second ago");
            break (server, cookie);
        }
        assert!(attempts < 5, "no attempt ran within the window");
    };
    let (status, session) = call(&server, "GET", "/api/auth/session", Some(&cookie), None).await;
    assert_eq!(
        (status, session),
        (200, Value::Null),
        "other routes look the session up on each request"
    );
    // Signing the cookie out here drops what collect remembers of it,
    // although the session row is already gone.
    let (status, _) = call(&server, "POST", "/api/auth/signout", Some(&cookie), None).await;
    assert_eq!(status, 200);
    assert_eq!(collect_status(&server, &cookie).await, 403);
}

async fn without_a_recheck_window_collect_sees_an_ended_session_at_once(backend: Backend) {
    let (server, cookie, _) = ended_elsewhere_after_a_collect(backend, "0").await;
    assert_eq!(collect_status(&server, &cookie).await, 403);
}

async fn a_sign_out_here_ends_collect_at_once(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, cookie) = member(&server, "reader@example.com", "user").await;
    assert_eq!(collect_status(&server, &cookie).await, 200);
    let (status, _) = call(&server, "POST", "/api/auth/signout", Some(&cookie), None).await;
    assert_eq!(status, 200);
    assert_eq!(collect_status(&server, &cookie).await, 403);
}

async fn a_ban_or_a_deactivation_here_ends_collect_at_once(backend: Backend) {
    // The longest window: without forgetting, collect would go on trusting
    // both sessions for a second.
    let server =
        TestServer::start_with(backend, &[("PLAZA_ANALYTICS_SESSION_RECHECK_MS", "1000")]).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (banned_id, banned) = member(&server, "banned@example.com", "user").await;
    let (deactivated_id, deactivated) = member(&server, "gone@example.com", "user").await;
    let (_, bystander) = member(&server, "reader@example.com", "user").await;
    for cookie in [&banned, &deactivated, &bystander] {
        assert_eq!(collect_status(&server, cookie).await, 200);
    }

    let path = format!("/api/admin/users/{banned_id}/ban");
    let ban = Some(json!({"reason": "spam"}));
    let (status, body) = call(&server, "POST", &path, Some(&admin), ban).await;
    assert_eq!(status, 200, "{body}");
    let path = format!("/api/users/{deactivated_id}");
    let inactive = Some(json!({"status": "inactive"}));
    let (status, body) = call(&server, "PUT", &path, Some(&admin), inactive).await;
    assert_eq!(status, 200, "{body}");

    assert_eq!(collect_status(&server, &banned).await, 403);
    assert_eq!(collect_status(&server, &deactivated).await, 403);
    assert_eq!(
        collect_status(&server, &bystander).await,
        200,
        "other users' sessions are still trusted"
    );
}

async fn a_batch_is_stored_whole_or_not_at_all(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, cookie) = member(&server, "reader@example.com", "user").await;
    let batch = |events: Vec<Value>| Some(json!({ "events": events }));
    let path = "/api/analytics/collect/batch";
    let events = vec![page_view("/a"), page_view("/b"), page_view("/c")];
    let (status, body) = call(&server, "POST", path, Some(&cookie), batch(events)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true);
    let ids: Vec<String> = body["event_ids"]
        .as_array()
        .expect("event_ids")
        .iter()
        .map(|id| id.as_str().expect("id").to_owned())
        .collect();
    assert_eq!(ids.len(), 3);
    assert_eq!(stored(&server, &ids).await.len(), 3);

    let mut broken = page_view("/d");
    broken["timestamp"] = json!("not a time");
    let (status, body) = call(
        &server,
        "POST",
        path,
        Some(&cookie),
        batch(vec![page_view("/c"), broken]),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["details"]["field"], "events.1.timestamp");
    for (events, what) in [
        (vec![], "an empty batch"),
        ((0..101).map(|_| page_view("/")).collect(), "101 events"),
    ] {
        let (status, body) = call(&server, "POST", path, Some(&cookie), batch(events)).await;
        assert_eq!(status, 400, "{what}: {body}");
        assert_eq!(body["error"]["details"]["field"], "events", "{what}");
    }
    let (status, body) = call(&server, "POST", path, Some(&cookie), Some(json!({}))).await;
    assert_eq!(
        (status, &body["error"]["details"]["field"]),
        (400, &json!("events"))
    );
    assert_eq!(
        event_count(&server).await,
        3,
        "no refused batch stored anything"
    );
}

async fn each_event_counts_against_the_per_user_limit(backend: Backend) {
    let server = TestServer::start_with(
        backend,
        &[
            ("PLAZA_RATE_LIMITS_ENABLED", "true"),
            ("PLAZA_RATE_LIMIT_ANALYTICS", "5/minute"),
        ],
    )
    .await;
    let (_, cookie) = member(&server, "reader@example.com", "user").await;
    let (_, other) = member(&server, "other@example.com", "user").await;
    let send = |cookie: &str, body: Value, path: &'static str| {
        server
            .client
            .post(server.url(path))
            .header("cookie", cookie)
            .json(&body)
            .send()
    };
    let three = json!({"events": [page_view("/1"), page_view("/2"), page_view("/3")]});
    let first = send(&cookie, three.clone(), "/api/analytics/collect/batch")
        .await
        .expect("request");
    assert_eq!(first.status(), 200);
    assert_eq!(first.headers()["x-ratelimit-limit"], "5");
    assert_eq!(first.headers()["x-ratelimit-remaining"], "2");
    // Three more do not fit in the two left: refused whole, though the
    // request itself took one.
    let refused = send(&cookie, three, "/api/analytics/collect/batch")
        .await
        .expect("request");
    assert_eq!(refused.status(), 429);
    assert!(refused.headers().contains_key("retry-after"));
    assert_eq!(refused.headers()["x-ratelimit-limit"], "5");
    let body: Value = refused.json().await.expect("JSON");
    assert_eq!(body["error"]["code"], "RATE_LIMITED");
    let last = send(&cookie, page_view("/4"), "/api/analytics/collect")
        .await
        .expect("request");
    assert_eq!(last.status(), 200);
    assert_eq!(last.headers()["x-ratelimit-remaining"], "0");
    let over = send(&cookie, page_view("/5"), "/api/analytics/collect")
        .await
        .expect("request");
    assert_eq!(over.status(), 429);
    let elsewhere = send(&other, page_view("/1"), "/api/analytics/collect")
        .await
        .expect("request");
    assert_eq!(elsewhere.status(), 200, "another user has their own budget");
    assert_eq!(event_count(&server).await, 5);
}

/// Clients that send events until they fail, keeping the acknowledged ids;
/// `acknowledged` counts them as they come.
fn send_until_refused(
    server: &TestServer,
    cookie: &str,
    clients: usize,
    acknowledged: &Arc<watch::Sender<usize>>,
) -> tokio::task::JoinSet<Vec<String>> {
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..clients {
        let http = common::client();
        let url = server.url("/api/analytics/collect");
        let cookie = cookie.to_owned();
        let acknowledged = acknowledged.clone();
        tasks.spawn(async move {
            let mut ids = Vec::new();
            loop {
                let sent = http
                    .post(&url)
                    .header("cookie", &cookie)
                    .json(&page_view(&format!("/client/{client}")))
                    .send()
                    .await;
                let Ok(response) = sent else { break };
                if response.status() != 200 {
                    break;
                }
                let Ok(body) = response.json::<Value>().await else {
                    break;
                };
                ids.push(body["event_id"].as_str().expect("event_id").to_owned());
                acknowledged.send_modify(|count| *count += 1);
            }
            ids
        });
    }
    tasks
}

/// Waits until `target` events are acknowledged.
async fn until(acknowledged: &watch::Sender<usize>, target: usize) {
    acknowledged
        .subscribe()
        .wait_for(|count| *count >= target)
        .await
        .expect("the counter lives");
}

async fn acknowledged_events_survive_a_kill(backend: Backend) {
    let mut server = TestServer::start(backend).await;
    let (_, cookie) = member(&server, "reader@example.com", "user").await;
    let acknowledged = Arc::new(watch::Sender::new(0));
    let mut tasks = send_until_refused(&server, &cookie, 16, &acknowledged);
    until(&acknowledged, 500).await;
    server.kill();
    let mut ids = Vec::new();
    while let Some(client) = tasks.join_next().await {
        ids.extend(client.expect("client task"));
    }
    assert!(ids.len() >= 500, "{} acknowledged", ids.len());
    let kept = stored(&server, &ids).await;
    let lost: Vec<_> = ids.iter().filter(|id| !kept.contains(*id)).collect();
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged events lost",
        lost.len(),
        ids.len()
    );
}

async fn shutdown_stores_every_acknowledged_event(backend: Backend) {
    let mut server = TestServer::start(backend).await;
    let (_, cookie) = member(&server, "reader@example.com", "user").await;
    let acknowledged = Arc::new(watch::Sender::new(0));
    let mut tasks = send_until_refused(&server, &cookie, 16, &acknowledged);
    until(&acknowledged, 300).await;
    assert!(server.terminate().success());
    let mut ids = Vec::new();
    while let Some(client) = tasks.join_next().await {
        ids.extend(client.expect("client task"));
    }
    let kept = stored(&server, &ids).await;
    assert_eq!(kept.len(), ids.len(), "every acknowledged event is stored");
    assert_eq!(
        event_count(&server).await,
        i64::try_from(ids.len()).expect("a count"),
        "and nothing that was not acknowledged"
    );
}

async fn a_failed_write_is_503_and_stores_nothing(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, cookie) = member(&server, "reader@example.com", "user").await;
    server
        .sql("ALTER TABLE analytics_events RENAME TO analytics_events_away")
        .await;
    let batch = json!({"events": [page_view("/a"), page_view("/b")]});
    let (status, body) = call(
        &server,
        "POST",
        "/api/analytics/collect/batch",
        Some(&cookie),
        Some(batch.clone()),
    )
    .await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "SERVICE_UNAVAILABLE");
    server
        .sql("ALTER TABLE analytics_events_away RENAME TO analytics_events")
        .await;
    assert_eq!(event_count(&server).await, 0, "nothing half-written");
    let (status, body) = call(
        &server,
        "POST",
        "/api/analytics/collect/batch",
        Some(&cookie),
        Some(batch),
    )
    .await;
    assert_eq!(status, 200, "the writer recovers by itself: {body}");
    assert_eq!(event_count(&server).await, 2);
}

fn event(event_id: String, occurred_at: i64) -> NewEvent {
    NewEvent {
        event_id,
        user_id: 1,
        event_type: "page_view".to_owned(),
        event_data: "{}".to_owned(),
        path: Some("/".to_owned()),
        session_key: None,
        duration_ms: None,
        click_x: None,
        click_y: None,
        client_hash: String::new(),
        device_type: "desktop",
        country: None,
        is_vpn: false,
        occurred_at,
        received_at: occurred_at,
    }
}

async fn retention_deletes_exactly_what_is_older_than_the_window(backend: Backend) {
    let server = TestServer::start(backend).await;
    // The server's own retention job runs at start; the events go in after
    // it finished, so only this test's purge removes them.
    let deadline = Instant::now() + Duration::from_secs(30);
    while server
        .sql_count(
            "SELECT COUNT(*) FROM job_runs \
             WHERE name = 'analytics_retention' AND last_finished_at IS NOT NULL",
        )
        .await
        == 0
    {
        assert!(Instant::now() < deadline, "the retention job never ran");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let db = server.domain().await;
    let cutoff = now_millis() - 90 * 86_400_000;
    // More old events than two purge chunks, so the purge takes several
    // transactions; then the three around the cutoff.
    let old = usize::try_from(2 * PURGE_CHUNK + 7).expect("a count");
    let mut events: Vec<NewEvent> = (0..old)
        .map(|n| {
            event(
                format!("old-{n}"),
                cutoff - 1 - i64::try_from(n).expect("n"),
            )
        })
        .collect();
    events.push(event("at-cutoff".to_owned(), cutoff));
    events.push(event("after-cutoff".to_owned(), cutoff + 1));
    db.write(move |tx| Box::pin(async move { plaza_domain::analytics::insert(tx, &events).await }))
        .await
        .expect("insert");
    let removed = db.purge_events_before(cutoff).await.expect("purge");
    assert_eq!(removed, u64::try_from(old).expect("a count"));
    assert_eq!(db.analytics_event_count().await.expect("count"), 2);
    let kept = db
        .stored_event_ids(&[
            "at-cutoff".to_owned(),
            "after-cutoff".to_owned(),
            "old-0".to_owned(),
        ])
        .await
        .expect("ids");
    assert_eq!(
        kept,
        HashSet::from(["at-cutoff".to_owned(), "after-cutoff".to_owned()])
    );
}

async fn the_versioned_admin_view_counts_real_activity(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, writer) = member(&server, "writer@example.com", "user").await;
    let (_, reader) = member(&server, "reader@example.com", "user").await;
    server.create_user("admin@example.com", common::PASSWORD, "admin");
    let token = server.mint("admin@example.com", "admin:read,admin:write");
    let first = post(
        &server,
        &writer,
        json!({"title": "One", "content": "first"}),
    )
    .await;
    post(
        &server,
        &writer,
        json!({"title": "Two", "content": "second"}),
    )
    .await;
    let (status, _) = call(
        &server,
        "POST",
        &format!("/api/posts/{first}/report"),
        Some(&reader),
        Some(json!({"reason": "spam"})),
    )
    .await;
    assert_eq!(status, 201);
    let flagged = server
        .send(
            As::Token(&token),
            "POST",
            &format!("/api/v1/admin/posts/{first}/moderate"),
            Some(&json!({"action": "flag", "reason": "check"})),
        )
        .await;
    assert_eq!(flagged.status(), 200);
    let session = |millis: i64| json!({"event_type": "session_end", "event_data": {"duration_ms": millis}, "timestamp": now_text()});
    let (status, _) = call(
        &server,
        "POST",
        "/api/analytics/collect/batch",
        Some(&reader),
        Some(json!({"events": [session(60_000), session(180_000)]})),
    )
    .await;
    assert_eq!(status, 200);

    let answer = server
        .send(
            As::Token(&token),
            "GET",
            "/api/v1/admin/analytics?period=7d",
            None,
        )
        .await;
    assert_eq!(answer.status(), 200);
    let body: Value = answer.json().await.expect("JSON");
    let data = &body["data"];
    assert_eq!(data["period"], "7d");
    assert_eq!(data["users"]["total"], 3);
    assert_eq!(data["users"]["new"], 3);
    // The two who signed in; the admin only holds a token the CLI minted.
    assert_eq!(data["users"]["active"], 2, "{data}");
    assert_eq!(data["users"]["growth"], "+100.0%");
    assert_eq!(data["content"]["totalPosts"], 2);
    assert_eq!(data["content"]["newPosts"], 2);
    assert_eq!(data["content"]["moderatedPosts"], 1);
    assert_eq!(data["content"]["flaggedPosts"], 1);
    assert_eq!(data["engagement"]["avgSessionDuration"], "2m 0s");
    assert_eq!(data["engagement"]["postsPerUser"], 1.0);
    assert_eq!(data["moderation"]["reportsReceived"], 1);
    assert_eq!(
        data["moderation"]["reportsResolved"], 1,
        "flagging resolves the report"
    );

    let only = server
        .send(
            As::Token(&token),
            "GET",
            "/api/v1/admin/analytics?period=1d&metrics=users&metrics=moderation",
            None,
        )
        .await;
    let body: Value = only.json().await.expect("JSON");
    let mut sections: Vec<&String> = body["data"].as_object().expect("data").keys().collect();
    sections.sort();
    assert_eq!(sections, ["moderation", "period", "users"]);
    for bad in ["period=2w", "metrics=money"] {
        let refused = server
            .send(
                As::Token(&token),
                "GET",
                &format!("/api/v1/admin/analytics?{bad}"),
                None,
            )
            .await;
        assert_eq!(refused.status(), 422, "{bad}");
        let body: Value = refused.json().await.expect("JSON");
        assert_eq!(body["success"], false);
        assert_eq!(body["error"]["code"], "VALIDATION_ERROR");
    }
}

async fn dashboard(server: &TestServer, who: As<'_>, query: &str) -> (u16, Value) {
    let response = server
        .send(who, "GET", &format!("/api/admin/analytics?{query}"), None)
        .await;
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON body"))
}

async fn the_dashboard_is_for_administrators_and_names_each_bad_parameter(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, user) = member(&server, "user@example.com", "user").await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let token = server.mint("admin@example.com", "admin:read");
    let (status, body) = dashboard(&server, As::Anonymous, "").await;
    assert_eq!((status, &body["error"]), (401, &json!("Unauthorized")));
    let (status, body) = dashboard(&server, As::Session(&user), "").await;
    assert_eq!(
        (status, &body["error"]),
        (403, &json!("Insufficient permissions"))
    );
    for who in [As::Session(&admin), As::Token(&token)] {
        let (status, body) = dashboard(&server, who, "").await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["overview"]["totalPageViews"], 0);
        assert_eq!(
            body["trends"]["pageViews"].as_array().map(Vec::len),
            Some(31)
        );
    }
    let (status, body) = dashboard(
        &server,
        As::Session(&admin),
        "dateRange=2w&timezone=Mars/Olympus&granularity=hourly&device_type=fridge&format=xml",
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "Invalid query parameters");
    let paths: Vec<&str> = body["details"]
        .as_array()
        .expect("details")
        .iter()
        .map(|issue| issue["path"][0].as_str().expect("path"))
        .collect();
    assert_eq!(
        paths,
        ["dateRange", "timezone", "device_type", "format"],
        "{body}"
    );
    let (status, body) = dashboard(
        &server,
        As::Session(&admin),
        "dateRange=1y&granularity=hourly",
    )
    .await;
    assert_eq!(
        (status, &body["details"][0]["path"][0]),
        (400, &json!("granularity"))
    );
}

/// New York's offset from UTC at `millis`, in seconds.
fn new_york_offset(millis: i64) -> i32 {
    tzdb_data::time_zone::america::NEW_YORK
        .find_local_time_type(millis.div_euclid(1000))
        .expect("New York has an offset at every instant")
        .ut_offset()
}

/// The latest moment, two days or more ago, at which New York's offset
/// changed (so the rest of that local day is past too).
fn latest_new_york_change() -> i64 {
    let hour = 3_600_000;
    let mut at = (now_millis() - 48 * hour) / hour * hour;
    while new_york_offset(at) == new_york_offset(at - hour) {
        at -= hour;
    }
    at
}

async fn dashboard_days_are_the_time_zones_days_across_a_daylight_saving_change(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let change = latest_new_york_change();
    // The offset New York keeps from the change to the end of that day.
    let offset = time::UtcOffset::from_whole_seconds(new_york_offset(change)).unwrap();
    let local_day = time::OffsetDateTime::from_unix_timestamp(change / 1000)
        .unwrap()
        .to_offset(offset)
        .date();
    // The last half hour of that local day, already the next day in UTC.
    let next_midnight = local_day
        .next_day()
        .unwrap()
        .midnight()
        .assume_offset(offset)
        .unix_timestamp()
        * 1000;
    let times = [
        change - 1_800_000,
        change + 1_800_000,
        next_midnight - 1_800_000,
    ];
    let events: Vec<NewEvent> = times
        .iter()
        .enumerate()
        .map(|(n, at)| event(format!("dst-{n}"), *at))
        .collect();
    server
        .domain()
        .await
        .write(move |tx| {
            Box::pin(async move { plaza_domain::analytics::insert(tx, &events).await })
        })
        .await
        .expect("insert");
    let day = local_day.to_string();
    let (status, body) = dashboard(
        &server,
        As::Session(&admin),
        "dateRange=1y&metrics=pageviews&timezone=America/New_York",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let views = body["trends"]["pageViews"].as_array().expect("pageViews");
    let on_day: Vec<&Value> = views.iter().filter(|point| point["date"] == day).collect();
    assert_eq!(on_day.len(), 1, "one bucket for {day}");
    assert_eq!(
        on_day[0]["count"], 3,
        "{day}: both sides of the change and 23:30"
    );
    let total: i64 = views
        .iter()
        .map(|point| point["count"].as_i64().unwrap())
        .sum();
    assert_eq!(total, 3);
    let (_, utc) = dashboard(
        &server,
        As::Session(&admin),
        "dateRange=1y&metrics=pageviews",
    )
    .await;
    let utc_day = utc["trends"]["pageViews"]
        .as_array()
        .expect("pageViews")
        .iter()
        .find(|point| point["date"] == day)
        .expect("the day in UTC")["count"]
        .clone();
    assert_eq!(utc_day, 2, "in UTC the 23:30 event is on the next day");
}

async fn the_dashboard_csv_holds_the_json_figures(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (reader_id, reader) = member(&server, "reader@example.com", "user").await;
    let (status, _) = call(
        &server,
        "POST",
        &format!("/api/admin/users/{reader_id}/subscriptions"),
        Some(&admin),
        Some(json!({"plan_name": "Pro"})),
    )
    .await;
    assert_eq!(status, 201);
    let click = |x: i64| json!({"event_type": "button_click", "event_data": {"path": "/a", "x": x, "y": 7, "session_id": "s-2"}, "timestamp": now_text()});
    let (status, _) = call(
        &server,
        "POST",
        "/api/analytics/collect/batch",
        Some(&reader),
        Some(json!({"events": [page_view("/a"), page_view("/a"), page_view("/b"), click(3), click(45)]})),
    )
    .await;
    assert_eq!(status, 200);
    let query = "dateRange=7d";
    let (status, json_answer) = dashboard(&server, As::Session(&admin), query).await;
    assert_eq!(status, 200);
    assert_eq!(json_answer["overview"]["totalPageViews"], 3);
    assert_eq!(json_answer["overview"]["totalSessions"], 2);
    assert_eq!(json_answer["overview"]["bounceRate"], 0.0);
    assert_eq!(
        json_answer["topPages"][0],
        json!({"path": "/a", "views": 2, "uniqueViews": 1})
    );
    assert_eq!(json_answer["heatmap"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        json_answer["subscriptions"],
        json!({"active": 1, "started": 1, "byPlan": [{"plan": "Pro", "active": 1, "started": 1}]})
    );
    let response = server
        .send(
            As::Session(&admin),
            "GET",
            &format!("/api/admin/analytics?{query}&format=csv"),
            None,
        )
        .await;
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/csv")
    );
    let text = response.text().await.expect("body");
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    assert_eq!(
        reader.headers().expect("header row"),
        vec!["section", "metric", "key", "value"]
    );
    let mut rows = 0;
    for record in reader.records() {
        let record = record.expect("a CSV row");
        let (section, metric, key, value) = (&record[0], &record[1], &record[2], &record[3]);
        let value: f64 = value.parse().expect("a number");
        let expected = match section {
            "overview" => json_answer["overview"][metric].as_f64(),
            "trends" => json_answer["trends"][metric]
                .as_array()
                .and_then(|points| points.iter().find(|point| point["date"] == key))
                .and_then(|point| point["count"].as_f64()),
            "topPages" => json_answer["topPages"]
                .as_array()
                .and_then(|pages| pages.iter().find(|page| page["path"] == key))
                .and_then(|page| page[metric].as_f64()),
            "devices" | "vpn" => json_answer[section][metric].as_f64(),
            "geographic" => json_answer["geographic"]
                .as_array()
                .and_then(|rows| rows.iter().find(|row| row["country"] == key))
                .and_then(|row| row[metric].as_f64()),
            "heatmap" => json_answer["heatmap"]
                .as_array()
                .and_then(|cells| {
                    cells.iter().find(|cell| {
                        format!(
                            "{} {} {}",
                            cell["path"].as_str().unwrap(),
                            cell["x"],
                            cell["y"]
                        ) == key
                    })
                })
                .and_then(|cell| cell["clicks"].as_f64()),
            "subscriptions" if key.is_empty() => json_answer["subscriptions"][metric].as_f64(),
            "subscriptions" => json_answer["subscriptions"]["byPlan"]
                .as_array()
                .and_then(|plans| plans.iter().find(|plan| plan["plan"] == key))
                .and_then(|plan| plan[metric].as_f64()),
            other => panic!("unknown section {other}"),
        };
        assert_eq!(Some(value), expected, "{section} {metric} {key}");
        rows += 1;
    }
    let points = json_answer["trends"]["sessions"].as_array().unwrap().len();
    assert!(rows > 7 + 2 * points, "{rows} rows");
}

async fn control_characters_in_analytics_text_fields_are_400(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, cookie) = member(&server, "reader@example.com", "user").await;
    for key in ["path", "session_id", "referrer"] {
        for control in ['\0', '\u{1b}', '\n', '\t', '\u{7f}', '\u{85}'] {
            let event = json!({
                "event_type": "page_view",
                "event_data": {key: format!("/a{control}b")},
                "timestamp": now_text(),
            });
            let (status, body) = call(
                &server,
                "POST",
                "/api/analytics/collect",
                Some(&cookie),
                Some(event.clone()),
            )
            .await;
            assert_eq!(status, 400, "{key} {control:?}: {body}");
            assert_eq!(body["error"]["code"], "BAD_REQUEST", "{body}");
            assert_eq!(
                body["error"]["details"]["field"],
                format!("event_data.{key}"),
                "{body}"
            );
            let (status, body) = call(
                &server,
                "POST",
                "/api/analytics/collect/batch",
                Some(&cookie),
                Some(json!({"events": [page_view("/fine"), event]})),
            )
            .await;
            assert_eq!(status, 400, "batch, {key} {control:?}: {body}");
            assert_eq!(
                body["error"]["details"]["field"],
                format!("events.1.event_data.{key}"),
                "{body}"
            );
        }
    }
    assert_eq!(event_count(&server).await, 0, "nothing refused was stored");
}

/// Rounds of concurrent events, so that the refused ones share batches
/// with the others; how many at most before one did.
const MAX_SHARING_ROUNDS: usize = 20;

async fn one_refused_submission_never_fails_another_users_events(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, valid_sender) = member(&server, "reader@example.com", "user").await;
    let (_, refused_sender) = member(&server, "mallory@example.com", "user").await;
    // Validation lets no event through that the database would refuse, so
    // the database is made to refuse one valid path.
    server
        .sql(match backend {
            Backend::Postgres => {
                "ALTER TABLE analytics_events ADD CONSTRAINT refuse_one_path \
                 CHECK (path IS DISTINCT FROM '/refused')"
            }
            Backend::Sqlite => {
                "CREATE TRIGGER refuse_one_path BEFORE INSERT ON analytics_events \
                 WHEN NEW.path = '/refused' BEGIN SELECT RAISE(ABORT, 'refused path'); END"
            }
        })
        .await;
    let split = "its submissions are written again in halves";
    let mut rounds = 0;
    while server.log_count(split) == 0 {
        rounds += 1;
        assert!(
            rounds <= MAX_SHARING_ROUNDS,
            "no refused event shared a batch in {MAX_SHARING_ROUNDS} rounds"
        );
        let mut tasks = tokio::task::JoinSet::new();
        for request in 0..100 {
            let refused = request % 10 == 0;
            let cookie = if refused {
                refused_sender.clone()
            } else {
                valid_sender.clone()
            };
            let http = server.client.clone();
            let url = server.url("/api/analytics/collect");
            tasks.spawn(async move {
                let response = http
                    .post(&url)
                    .header("cookie", &cookie)
                    .json(&page_view(if refused { "/refused" } else { "/fine" }))
                    .send()
                    .await
                    .expect("request");
                let status = response.status().as_u16();
                let body: Value = response.json().await.expect("JSON");
                (refused, status, body)
            });
        }
        let mut valid_ids = Vec::new();
        while let Some(answer) = tasks.join_next().await {
            let (refused, status, body) = answer.expect("client task");
            if refused {
                assert_eq!(status, 503, "the refused event fails alone: {body}");
                assert_eq!(body["error"]["code"], "SERVICE_UNAVAILABLE");
            } else {
                assert_eq!(status, 200, "round {rounds}: {body}");
                valid_ids.push(body["event_id"].as_str().expect("event_id").to_owned());
            }
        }
        assert_eq!(valid_ids.len(), 90);
        assert_eq!(
            stored(&server, &valid_ids).await.len(),
            90,
            "every valid event is stored"
        );
    }
    assert_eq!(
        server
            .sql_count("SELECT COUNT(*) FROM analytics_events WHERE path = '/refused'")
            .await,
        0
    );
}

async fn csv_cells_a_spreadsheet_would_run_are_neutralised(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (reader_id, reader) = member(&server, "reader@example.com", "user").await;
    let (status, body) = call(
        &server,
        "POST",
        &format!("/api/admin/users/{reader_id}/subscriptions"),
        Some(&admin),
        Some(json!({"plan_name": "-1+2"})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let hyperlink = "=HYPERLINK(\"http://x\")";
    let click = json!({
        "event_type": "button_click",
        "event_data": {"path": "@SUM(1+1)", "x": 3, "y": 7},
        "timestamp": now_text(),
    });
    let (status, body) = call(
        &server,
        "POST",
        "/api/analytics/collect/batch",
        Some(&reader),
        Some(json!({"events": [page_view(hyperlink), page_view("+1"), click]})),
    )
    .await;
    assert_eq!(status, 200, "formula-like paths are valid: {body}");
    let (status, json_answer) = dashboard(&server, As::Session(&admin), "dateRange=7d").await;
    assert_eq!(status, 200);
    assert!(
        json_answer["topPages"]
            .as_array()
            .expect("topPages")
            .iter()
            .any(|page| page["path"] == hyperlink),
        "the JSON keeps the path as sent: {json_answer}"
    );
    let response = server
        .send(
            As::Session(&admin),
            "GET",
            "/api/admin/analytics?dateRange=7d&format=csv",
            None,
        )
        .await;
    assert_eq!(response.status(), 200);
    let text = response.text().await.expect("body");
    assert!(
        text.contains("\"'=HYPERLINK(\"\"http://x\"\")\""),
        "quoted, its quotes doubled: {text}"
    );
    let rows: Vec<csv::StringRecord> = csv::Reader::from_reader(text.as_bytes())
        .records()
        .map(|record| record.expect("a CSV row"))
        .collect();
    let keys = |section: &str| -> HashSet<String> {
        rows.iter()
            .filter(|row| &row[0] == section)
            .map(|row| row[2].to_owned())
            .collect()
    };
    let pages = keys("topPages");
    assert!(pages.contains("'=HYPERLINK(\"http://x\")"), "{pages:?}");
    assert!(pages.contains("'+1"), "{pages:?}");
    assert!(keys("heatmap").contains("'@SUM(1+1) 0 0"), "{text}");
    assert!(keys("subscriptions").contains("'-1+2"), "{text}");
    for row in &rows {
        for cell in row.iter().take(3) {
            assert!(
                !cell.starts_with(['=', '+', '-', '@', '\t', '\r']),
                "{cell:?} in {row:?}"
            );
        }
        row[3].parse::<f64>().expect("the value is a number");
    }
}
