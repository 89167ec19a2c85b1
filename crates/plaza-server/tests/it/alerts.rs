//! Alerts: broadcasts reach their audience in `GET /api/alerts`
//! (now, or once at their scheduled time even with two instances), a
//! moderator's `notifyAuthor` reaches the author, and a user dismisses
//! their own alerts only; `GET /api/alerts/stream` sends them live. Admins
//! list the broadcasts and withdraw a scheduled one, which is then never
//! delivered.

use std::time::{Duration, Instant};

use crate::common::{As, Backend, PASSWORD, TestServer, call, member, post};
use plaza_domain::time::now_millis;
use serde_json::{Value, json};

on_both_databases!(
    broadcasts_reach_their_audience,
    broadcasts_refuse_bad_input,
    users_dismiss_their_own_alerts,
    notify_author_alerts_the_author,
    racing_deliveries_deliver_once,
    a_resumed_stream_sends_only_what_came_after_its_last_event,
    a_burst_of_more_than_a_page_of_alerts_reaches_the_stream_whole,
    streams_need_a_session_and_a_free_slot,
    a_zero_lifetime_stream_sends_the_current_alerts_and_ends,
    shutdown_ends_open_streams,
    a_stream_ends_within_a_second_of_sign_out,
    a_ban_or_deletion_ends_the_users_stream_within_a_second,
    a_demoted_admins_stream_gets_no_later_admin_broadcast,
    one_user_holds_at_most_five_streams_even_without_rate_limits,
    broadcasts_are_listed_newest_first_with_their_status,
    a_cancelled_broadcast_is_never_delivered,
    a_delivered_broadcast_cannot_be_cancelled,
    a_cancellation_racing_the_delivery_lets_exactly_one_happen,
);

on_postgres!(
    a_scheduled_broadcast_is_delivered_once_by_two_instances,
    an_instance_whose_clock_runs_ahead_delivers_nothing_early,
    the_stream_sends_current_alerts_then_what_any_instance_delivers_or_dismisses,
    a_ban_through_one_instance_ends_a_stream_open_on_another,
);

pub(crate) async fn broadcast(server: &TestServer, token: &str, body: Value) -> (u16, Value) {
    let response = server
        .send(
            As::Token(token),
            "POST",
            "/api/v1/admin/notifications/broadcast",
            Some(&body),
        )
        .await;
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON body"))
}

async fn alerts(server: &TestServer, cookie: &str) -> Vec<Value> {
    let (status, body) = call(server, "GET", "/api/alerts", Some(cookie), None).await;
    assert_eq!(status, 200, "{body}");
    body["alerts"].as_array().expect("alerts").clone()
}

fn titles(alerts: &[Value]) -> Vec<&str> {
    alerts
        .iter()
        .map(|alert| alert["title"].as_str().expect("title"))
        .collect()
}

async fn broadcasts_reach_their_audience(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (_, moderator) = member(&server, "mod@example.com", "moderator").await;
    let (user_id, user) = member(&server, "user@example.com", "user").await;
    let (_, other) = member(&server, "other@example.com", "user").await;
    let token = server.mint("admin@example.com", "admin:write");

    let (status, body) = broadcast(
        &server,
        &token,
        json!({"title": "Maintenance", "message": "Down at noon", "type": "warning"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["success"], true);
    let data = &body["data"];
    assert_eq!(data["status"], "delivered");
    assert_eq!(data["targets"], json!(["all"]));
    assert_eq!(data["type"], "warning");
    assert_eq!(data["recipients"], 4, "{data}");
    assert!(data["deliveredAt"].is_string() && data["schedule"].is_null());
    let everyone_id = data["id"].as_str().unwrap().to_owned();

    let (status, body) = broadcast(
        &server,
        &token,
        json!({"title": "Mods", "message": "Team meeting", "targets": ["moderator"]}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["data"]["recipients"], 1);
    assert_eq!(body["data"]["type"], "info");
    let (status, body) = broadcast(
        &server,
        &token,
        json!({"title": "Just you", "message": "Hello", "targets": [user_id.to_string(), "admin"]}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["data"]["recipients"], 2);

    let seen = alerts(&server, &user).await;
    assert_eq!(titles(&seen), ["Just you", "Maintenance"]);
    let newest = &seen[1];
    assert_eq!(newest["id"], everyone_id.parse::<i64>().unwrap());
    assert_eq!(newest["type"], "warning");
    assert_eq!(newest["message"], "Down at noon");
    assert_eq!(newest["source"], "broadcast");
    assert!(newest["createdAt"].is_string());
    assert_eq!(titles(&alerts(&server, &other).await), ["Maintenance"]);
    assert_eq!(
        titles(&alerts(&server, &moderator).await),
        ["Mods", "Maintenance"]
    );
    assert_eq!(
        titles(&alerts(&server, &admin).await),
        ["Just you", "Maintenance"]
    );
    // Someone who joins later does not get earlier broadcasts.
    let (_, newcomer) = member(&server, "new@example.com", "user").await;
    assert!(alerts(&server, &newcomer).await.is_empty());
    let (status, _) = call(&server, "GET", "/api/alerts", None, None).await;
    assert_eq!(status, 401);

    let reader = server.mint("admin@example.com", "admin:read");
    let audit = server
        .send(
            As::Token(&reader),
            "GET",
            "/api/v1/admin/audit-logs?action=broadcast.create",
            None,
        )
        .await
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(audit["meta"]["pagination"]["total"], 3, "{audit}");
    assert_eq!(audit["data"][2]["targetId"], everyone_id);
    assert_eq!(audit["data"][2]["changes"]["after"]["title"], "Maintenance");
}

async fn broadcasts_refuse_bad_input(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("admin@example.com", PASSWORD, "admin");
    let token = server.mint("admin@example.com", "admin:write");
    let reader = server.mint("admin@example.com", "admin:read");
    let ok = json!({"title": "T", "message": "M"});
    let with = |key: &str, value: Value| {
        let mut body = ok.clone();
        body[key] = value;
        body
    };
    for (body, field) in [
        (json!({"message": "M"}), "title"),
        (json!({"title": "T"}), "message"),
        (with("title", json!("   ")), "title"),
        (with("title", json!("x".repeat(201))), "title"),
        (with("message", json!("x".repeat(5001))), "message"),
        (with("type", json!("urgent")), "type"),
        (with("targets", json!([])), "targets"),
        (with("targets", json!(["everyone"])), "targets.0"),
        (with("targets", json!(["all", "-3"])), "targets.1"),
        (with("targets", json!(["999999"])), "targets"),
        (with("schedule", json!("tomorrow")), "schedule"),
        (with("schedule", json!("2999-01-01T00:00:00Z")), "schedule"),
    ] {
        let (status, answer) = broadcast(&server, &token, body.clone()).await;
        assert_eq!(status, 422, "{body}: {answer}");
        assert_eq!(answer["error"]["code"], "VALIDATION_ERROR", "{answer}");
        assert_eq!(answer["error"]["field"], field, "{body}: {answer}");
    }
    let (status, answer) = broadcast(&server, &reader, ok.clone()).await;
    assert_eq!(status, 403, "{answer}");
    assert_eq!(answer["error"]["requiredPermission"], "admin:write");
    // A schedule in the past is delivered at once.
    let (status, answer) = broadcast(
        &server,
        &token,
        with("schedule", json!("2020-01-01T00:00:00Z")),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["data"]["status"], "delivered");
}

async fn users_dismiss_their_own_alerts(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("admin@example.com", PASSWORD, "admin");
    let (user_id, user) = member(&server, "user@example.com", "user").await;
    let (other_id, other) = member(&server, "other@example.com", "user").await;
    let token = server.mint("admin@example.com", "admin:write");
    let (_, first) = broadcast(&server, &token, json!({"title": "One", "message": "1"})).await;
    let (_, second) = broadcast(
        &server,
        &token,
        json!({"title": "Two", "message": "2", "targets": [other_id.to_string()]}),
    )
    .await;
    let first: i64 = first["data"]["id"].as_str().unwrap().parse().unwrap();
    let second: i64 = second["data"]["id"].as_str().unwrap().parse().unwrap();
    let dismiss = |cookie: &str, body: Value| {
        let cookie = cookie.to_owned();
        let server = &server;
        async move {
            call(
                server,
                "POST",
                "/api/alerts/dismiss",
                Some(&cookie),
                Some(body),
            )
            .await
        }
    };

    let (status, body) = dismiss(&user, json!({"alertId": first, "userId": other_id})).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "FORBIDDEN");
    let (status, body) = dismiss(&user, json!({"alertId": second, "userId": user_id})).await;
    assert_eq!(status, 404, "another user's alert: {body}");
    let (status, _) = dismiss(&user, json!({"alertId": 999_999, "userId": user_id})).await;
    assert_eq!(status, 404);
    let (status, body) = dismiss(&user, json!({"userId": user_id})).await;
    assert_eq!(status, 422, "{body}");
    let (status, _) = call(
        &server,
        "POST",
        "/api/alerts/dismiss",
        None,
        Some(json!({"alertId": first, "userId": user_id})),
    )
    .await;
    assert_eq!(status, 401);

    assert_eq!(titles(&alerts(&server, &user).await), ["One"]);
    let (status, body) = dismiss(&user, json!({"alertId": first, "userId": user_id})).await;
    assert_eq!((status, body), (200, json!({"success": true})));
    assert!(alerts(&server, &user).await.is_empty());
    let (status, _) = dismiss(
        &user,
        json!({"alertId": first, "userId": user_id.to_string()}),
    )
    .await;
    assert_eq!(
        status, 200,
        "dismissing twice is fine, and ids may be strings"
    );
    assert_eq!(titles(&alerts(&server, &other).await), ["Two", "One"]);
}

async fn notify_author_alerts_the_author(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, author) = member(&server, "author@example.com", "user").await;
    let (_, bystander) = member(&server, "bystander@example.com", "user").await;
    server.create_user("admin@example.com", PASSWORD, "admin");
    // `delete` needs `admin:delete` as well.
    let token = server.mint("admin@example.com", "admin:write,admin:delete");
    let quiet = post(&server, &author, json!({"title": "Quiet", "content": "x"})).await;
    let loud = post(&server, &author, json!({"title": "Loud", "content": "x"})).await;
    let moderate = |id: String, body: Value| {
        let token = token.clone();
        let server = &server;
        async move {
            let response = server
                .send(
                    As::Token(&token),
                    "POST",
                    &format!("/api/v1/admin/posts/{id}/moderate"),
                    Some(&body),
                )
                .await;
            response.status().as_u16()
        }
    };
    assert_eq!(
        moderate(quiet.clone(), json!({"action": "flag"})).await,
        200
    );
    assert!(
        alerts(&server, &author).await.is_empty(),
        "no notifyAuthor, no alert"
    );
    assert_eq!(
        moderate(
            loud.clone(),
            json!({"action": "hide", "reason": "Personal attacks", "notes": "internal", "notifyAuthor": true})
        )
        .await,
        200
    );
    assert_eq!(
        moderate(loud, json!({"action": "delete", "notifyAuthor": true})).await,
        200
    );
    let seen = alerts(&server, &author).await;
    assert_eq!(
        titles(&seen),
        ["Your post was removed", "Your post was hidden"]
    );
    let hidden = &seen[1];
    assert_eq!(hidden["source"], "moderation");
    assert_eq!(hidden["type"], "warning");
    let message = hidden["message"].as_str().unwrap();
    assert!(
        message.contains("Loud") && message.contains("Reason: Personal attacks"),
        "{message}"
    );
    assert!(
        !message.contains("internal"),
        "notes stay internal: {message}"
    );
    assert_eq!(seen[0]["type"], "error");
    assert!(alerts(&server, &bystander).await.is_empty());
}

/// Polls `GET /api/alerts` until `title` shows, for at most `limit`.
async fn wait_for_alert(
    server: &TestServer,
    cookie: &str,
    title: &str,
    limit: Duration,
) -> Vec<Value> {
    let deadline = Instant::now() + limit;
    loop {
        let seen = alerts(server, cookie).await;
        if titles(&seen).contains(&title) || Instant::now() > deadline {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn a_scheduled_broadcast_is_delivered_once_by_two_instances() {
    let backend = Backend::Postgres;
    let fast = [("PLAZA_BROADCAST_DELIVERY_PERIOD_SECS", "1")];
    let first = TestServer::start_with(backend, &fast).await;
    let shared = [
        ("PLAZA_BROADCAST_DELIVERY_PERIOD_SECS", "1"),
        ("PLAZA_DATABASE_URL", first.database_url.as_str()),
    ];
    let second = TestServer::start_with(backend, &shared).await;
    let (_, user) = member(&first, "user@example.com", "user").await;
    first.create_user("admin@example.com", PASSWORD, "admin");
    let token = first.mint("admin@example.com", "admin:write");
    let due = time::OffsetDateTime::now_utc() + time::Duration::seconds(3);
    let schedule = due
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let scheduled_at = now_millis();
    let (status, body) = broadcast(
        &second,
        &token,
        json!({"title": "Later", "message": "Soon", "schedule": schedule}),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["data"]["status"], "scheduled");
    assert!(body["data"]["recipients"].is_null() && body["data"]["deliveredAt"].is_null());
    if now_millis() - scheduled_at < 2_000 {
        assert!(
            alerts(&first, &user).await.is_empty(),
            "not before its time"
        );
    }

    let seen = wait_for_alert(&first, &user, "Later", Duration::from_secs(40)).await;
    assert_eq!(
        titles(&seen),
        ["Later"],
        "delivered once, within 30 s of its time"
    );
    assert_eq!(titles(&alerts(&second, &user).await), ["Later"]);
    let delivered_at = time::OffsetDateTime::parse(
        seen[0]["createdAt"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    assert!(delivered_at >= due - time::Duration::milliseconds(1));
    assert!(delivered_at - due < time::Duration::seconds(30));
    let deliveries = [&first, &second]
        .iter()
        .map(|server| server.logs().matches("broadcast delivered").count())
        .sum::<usize>();
    assert_eq!(deliveries, 1, "one instance delivered it, once");
}

/// `LD_PRELOAD` of libfaketime, which moves the clock of the process it is
/// loaded into; `None` (the test skips) without the faketime package.
fn faketime_library() -> Option<&'static str> {
    const LIBRARY: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";
    std::path::Path::new(LIBRARY).exists().then_some(LIBRARY)
}

/// An instance whose clock runs ten minutes ahead neither takes every run
/// of the cluster's jobs nor delivers a scheduled broadcast early: claims
/// and due times are read on the database's clock.
async fn an_instance_whose_clock_runs_ahead_delivers_nothing_early() {
    const TEST: &str = "an_instance_whose_clock_runs_ahead_delivers_nothing_early";
    let Some(faketime) = faketime_library() else {
        crate::common::skip(
            TEST,
            "libfaketime (Debian package faketime) is not installed",
        );
        return;
    };
    let backend = Backend::Postgres;
    let fast = [
        ("PLAZA_BROADCAST_DELIVERY_PERIOD_SECS", "1"),
        ("PLAZA_METRICS_PUBLIC", "true"),
    ];
    let punctual = TestServer::start_with(backend, &fast).await;
    let ahead = TestServer::start_with(
        backend,
        &[
            ("PLAZA_BROADCAST_DELIVERY_PERIOD_SECS", "1"),
            ("PLAZA_METRICS_PUBLIC", "true"),
            ("PLAZA_DATABASE_URL", punctual.database_url.as_str()),
            ("LD_PRELOAD", faketime),
            ("FAKETIME", "+10m"),
            ("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
        ],
    )
    .await;
    let (_, user) = member(&punctual, "user@example.com", "user").await;
    punctual.create_user("admin@example.com", PASSWORD, "admin");
    let token = punctual.mint("admin@example.com", "admin:write");
    let due = time::OffsetDateTime::now_utc() + time::Duration::minutes(5);
    let schedule = due
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let (status, body) = broadcast(
        &punctual,
        &token,
        json!({"title": "In five minutes", "message": "Not now", "schedule": schedule}),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    // Both instances have run the delivery job several times.
    let runs = |text: &str| -> f64 {
        text.lines()
            .filter(|line| {
                line.starts_with("plaza_job_runs_total")
                    && line.contains("job=\"deliver_scheduled_broadcasts\"")
            })
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut total = 0.0;
        for server in [&punctual, &ahead] {
            total += runs(&server.get("/api/metrics").await.text().await.unwrap());
        }
        if total >= 4.0 {
            break;
        }
        assert!(Instant::now() < deadline, "the delivery job did not run");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        alerts(&punctual, &user).await.is_empty(),
        "delivered five minutes early:\n{}",
        ahead.logs()
    );
    assert_eq!(ahead.logs().matches("broadcast delivered").count(), 0);
}

async fn racing_deliveries_deliver_once(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("admin@example.com", PASSWORD, "admin");
    let token = server.mint("admin@example.com", "admin:write");
    let due = time::OffsetDateTime::now_utc() + time::Duration::days(1);
    let (status, body) = broadcast(
        &server,
        &token,
        json!({"title": "Tomorrow", "message": "M", "schedule": due.format(&time::format_description::well_known::Rfc3339).unwrap()}),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    let (one, two) = (server.domain().await, server.domain().await);
    let later = now_millis() + 2 * 86_400_000;
    let (a, b) = tokio::join!(
        one.deliver_due_broadcasts(later),
        two.deliver_due_broadcasts(later)
    );
    assert_eq!(a.unwrap() + b.unwrap(), 1, "two runners, one delivery");
    assert_eq!(one.deliver_due_broadcasts(later).await.unwrap(), 0);
}

/// One Server-Sent Event.
#[derive(Debug)]
pub(crate) struct StreamEvent {
    pub(crate) name: String,
    id: String,
    pub(crate) data: Value,
}

/// An open `GET /api/alerts/stream`, read event by event.
pub(crate) struct AlertStream {
    body: std::pin::Pin<
        Box<dyn futures_util::Stream<Item = reqwest::Result<axum::body::Bytes>> + Send>,
    >,
    buffer: String,
}

impl AlertStream {
    pub(crate) async fn open(
        server: &TestServer,
        cookie: &str,
        last_event_id: Option<&str>,
    ) -> AlertStream {
        let mut request = server
            .client
            .get(server.url("/api/alerts/stream"))
            .header("cookie", cookie);
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        let response = request.send().await.expect("request");
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        AlertStream {
            body: Box::pin(response.bytes_stream()),
            buffer: String::new(),
        }
    }

    /// The next event (keep-alive comments skipped), or `None` when the
    /// server ended the stream; a test that waits 10 s for one fails.
    pub(crate) async fn next(&mut self) -> Option<StreamEvent> {
        use futures_util::StreamExt;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = StreamEvent {
                    name: String::new(),
                    id: String::new(),
                    data: Value::Null,
                };
                for line in block.lines() {
                    if let Some(name) = line.strip_prefix("event: ") {
                        event.name = name.to_owned();
                    } else if let Some(id) = line.strip_prefix("id: ") {
                        event.id = id.to_owned();
                    } else if let Some(data) = line.strip_prefix("data: ") {
                        event.data = serde_json::from_str(data).expect("JSON data");
                    }
                }
                if event.name.is_empty() {
                    continue;
                }
                return Some(event);
            }
            let chunk = tokio::time::timeout(Duration::from_secs(10), self.body.next())
                .await
                .expect("an event within 10 s");
            match chunk {
                Some(bytes) => self
                    .buffer
                    .push_str(std::str::from_utf8(&bytes.expect("body")).expect("UTF-8")),
                None => return None,
            }
        }
    }
}

impl AlertStream {
    /// Whether the server ends the stream within `limit` (what it still
    /// sends meanwhile is read and dropped).
    pub(crate) async fn ends_within(&mut self, limit: Duration) -> bool {
        use futures_util::StreamExt;
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            match tokio::time::timeout_at(deadline, self.body.next()).await {
                Err(_) => return false,
                Ok(None | Some(Err(_))) => return true,
                Ok(Some(Ok(_))) => {}
            }
        }
    }
}

/// The status of opening a stream, with the error body when it is refused
/// (an opened stream is dropped unread).
async fn try_open_stream(server: &TestServer, cookie: &str) -> (u16, Value) {
    let response = server
        .client
        .get(server.url("/api/alerts/stream"))
        .header("cookie", cookie)
        .send()
        .await
        .expect("request");
    let status = response.status().as_u16();
    if status == 200 {
        return (status, Value::Null);
    }
    (status, response.json().await.expect("a JSON error body"))
}

/// How soon a stream must end after its session or user stops standing.
pub(crate) const WITHIN_A_SECOND: Duration = Duration::from_secs(1);

pub(crate) const FAST_STREAMS: (&str, &str) = ("PLAZA_ALERT_STREAM_POLL_MS", "50");

async fn the_stream_sends_current_alerts_then_what_any_instance_delivers_or_dismisses() {
    let backend = Backend::Postgres;
    let first = TestServer::start_with(backend, &[FAST_STREAMS]).await;
    let second = TestServer::start_with(
        backend,
        &[
            FAST_STREAMS,
            ("PLAZA_DATABASE_URL", first.database_url.as_str()),
        ],
    )
    .await;
    let (user_id, user) = member(&first, "user@example.com", "user").await;
    member(&first, "admin@example.com", "admin").await;
    let token = first.mint("admin@example.com", "admin:write");
    let (status, _) = broadcast(&first, &token, json!({"title": "Before", "message": "m"})).await;
    assert_eq!(status, 201);

    let mut stream = AlertStream::open(&first, &user, None).await;
    let current = stream.next().await.expect("the current alert");
    assert_eq!(
        (current.name.as_str(), current.data["title"].as_str()),
        ("alert", Some("Before"))
    );
    let before_id = current.data["id"].as_i64().expect("id");
    assert!(
        current.id.parse::<i64>().is_ok(),
        "ids are times: {}",
        current.id
    );

    // Written through the other instance: seen through the database.
    let (status, _) = broadcast(&second, &token, json!({"title": "After", "message": "m"})).await;
    assert_eq!(status, 201);
    let live = stream.next().await.expect("the new alert");
    assert_eq!(
        (live.name.as_str(), live.data["title"].as_str()),
        ("alert", Some("After"))
    );
    assert!(live.id.parse::<i64>().unwrap() >= current.id.parse::<i64>().unwrap());

    let (status, body) = call(
        &second,
        "POST",
        "/api/alerts/dismiss",
        Some(&user),
        Some(json!({"alertId": before_id, "userId": user_id})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let dismissed = stream.next().await.expect("the dismissal");
    assert_eq!(dismissed.name, "dismissed");
    assert_eq!(dismissed.data, json!({"id": before_id}));
}

async fn a_resumed_stream_sends_only_what_came_after_its_last_event(backend: Backend) {
    let server = TestServer::start_with(backend, &[FAST_STREAMS]).await;
    let (_, user) = member(&server, "user@example.com", "user").await;
    member(&server, "admin@example.com", "admin").await;
    let token = server.mint("admin@example.com", "admin:write");
    broadcast(&server, &token, json!({"title": "Old", "message": "m"})).await;
    // "Old" was delivered a minute ago, "New" now; the client last saw an
    // event of 30 s ago.
    server
        .sql("UPDATE alerts SET delivered_at = delivered_at - 60000, created_at = created_at - 60000 WHERE title = 'Old'")
        .await;
    server
        .sql("UPDATE users SET created_at = created_at - 120000")
        .await;
    broadcast(&server, &token, json!({"title": "New", "message": "m"})).await;
    let last_seen = (now_millis() - 30_000).to_string();

    let mut resumed = AlertStream::open(&server, &user, Some(&last_seen)).await;
    let first = resumed.next().await.expect("an event");
    assert_eq!(first.data["title"], "New");

    let mut fresh = AlertStream::open(&server, &user, None).await;
    let titles = [fresh.next().await.unwrap(), fresh.next().await.unwrap()]
        .map(|event| event.data["title"].as_str().unwrap().to_owned());
    assert_eq!(titles, ["Old".to_owned(), "New".to_owned()], "oldest first");
}

/// 150 alerts delivered to one user in the same millisecond, more than
/// one read's page of 100: an open stream sends every one, oldest first
/// (the newest 50 were once dropped).
async fn a_burst_of_more_than_a_page_of_alerts_reaches_the_stream_whole(backend: Backend) {
    let server = TestServer::start_with(backend, &[FAST_STREAMS]).await;
    let (user_id, user) = member(&server, "user@example.com", "user").await;
    let now = now_millis();
    let rows: Vec<String> = (0..150)
        .map(|n| {
            format!("('moderation', 'info', 'Burst {n}', 'm', {user_id}, {now}, {now}, {now})")
        })
        .collect();
    server
        .sql(&format!(
            "INSERT INTO alerts (source, type, title, message, user_id, created_at, deliver_at, \
             delivered_at) VALUES {}",
            rows.join(", ")
        ))
        .await;
    let last_seen = (now - 1_000).to_string();
    let mut stream = AlertStream::open(&server, &user, Some(&last_seen)).await;
    for n in 0..150 {
        let event = stream.next().await.expect("an alert");
        assert_eq!(event.name, "alert");
        assert_eq!(event.data["title"], format!("Burst {n}"), "in order");
    }
}

async fn streams_need_a_session_and_a_free_slot(backend: Backend) {
    let server =
        TestServer::start_with(backend, &[("PLAZA_ALERT_STREAM_MAX_CONNECTIONS", "1")]).await;
    let anonymous = server.get("/api/alerts/stream").await;
    assert_eq!(anonymous.status(), 401);

    let (_, user) = member(&server, "user@example.com", "user").await;
    let _open = AlertStream::open(&server, &user, None).await;
    let (status, body) = call(&server, "GET", "/api/alerts/stream", Some(&user), None).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "SERVICE_UNAVAILABLE");
}

async fn a_zero_lifetime_stream_sends_the_current_alerts_and_ends(backend: Backend) {
    let server = TestServer::start_with(backend, &[("PLAZA_ALERT_STREAM_MAX_SECS", "0")]).await;
    let (_, user) = member(&server, "user@example.com", "user").await;
    member(&server, "admin@example.com", "admin").await;
    let token = server.mint("admin@example.com", "admin:write");
    broadcast(&server, &token, json!({"title": "Only", "message": "m"})).await;
    let mut stream = AlertStream::open(&server, &user, None).await;
    assert_eq!(
        stream.next().await.expect("the alert").data["title"],
        "Only"
    );
    assert!(stream.next().await.is_none(), "the stream ends");
}

async fn shutdown_ends_open_streams(backend: Backend) {
    let mut server = TestServer::start(backend).await;
    let (_, user) = member(&server, "user@example.com", "user").await;
    let mut stream = AlertStream::open(&server, &user, None).await;
    let started = Instant::now();
    let status = server.terminate();
    assert!(status.success(), "{status}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "an open stream held the shutdown for {:?}",
        started.elapsed()
    );
    assert!(stream.next().await.is_none());
}

async fn a_stream_ends_within_a_second_of_sign_out(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, user) = member(&server, "user@example.com", "user").await;
    let other_device = server.sign_in("user@example.com", PASSWORD).await;
    member(&server, "admin@example.com", "admin").await;
    let token = server.mint("admin@example.com", "admin:write");
    let mut signed_out = AlertStream::open(&server, &user, None).await;
    let mut still_in = AlertStream::open(&server, &other_device, None).await;

    let (status, body) = call(&server, "POST", "/api/auth/signout", Some(&user), None).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        signed_out.ends_within(WITHIN_A_SECOND).await,
        "the signed-out session's stream is still open"
    );
    let (status, _) = call(&server, "GET", "/api/alerts", Some(&user), None).await;
    assert_eq!(status, 401);

    // The user's other session stands, and so does its stream.
    let (status, _) = broadcast(
        &server,
        &token,
        json!({"title": "Still here", "message": "m"}),
    )
    .await;
    assert_eq!(status, 201);
    let event = still_in.next().await.expect("the other session's stream");
    assert_eq!(event.data["title"], "Still here");
}

async fn a_ban_or_deletion_ends_the_users_stream_within_a_second(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (banned_id, banned) = member(&server, "banned@example.com", "user").await;
    let (deleted_id, deleted) = member(&server, "deleted@example.com", "user").await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let token = server.mint("admin@example.com", "admin:write");
    let mut banned_stream = AlertStream::open(&server, &banned, None).await;
    let mut deleted_stream = AlertStream::open(&server, &deleted, None).await;

    let response = server
        .send(
            As::Token(&token),
            "POST",
            &format!("/api/v1/admin/users/{banned_id}/ban"),
            Some(&json!({"action": "ban", "reason": "Spam"})),
        )
        .await;
    assert_eq!(response.status(), 200);
    assert!(
        banned_stream.ends_within(WITHIN_A_SECOND).await,
        "the banned user's stream is still open"
    );

    let (status, _) = call(
        &server,
        "DELETE",
        &format!("/api/users/{deleted_id}"),
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(status, 204);
    assert!(
        deleted_stream.ends_within(WITHIN_A_SECOND).await,
        "the deleted user's stream is still open"
    );
}

async fn a_ban_through_one_instance_ends_a_stream_open_on_another() {
    let backend = Backend::Postgres;
    let first = TestServer::start(backend).await;
    let second = TestServer::start_with(
        backend,
        &[("PLAZA_DATABASE_URL", first.database_url.as_str())],
    )
    .await;
    let (user_id, user) = member(&first, "user@example.com", "user").await;
    first.create_user("admin@example.com", PASSWORD, "admin");
    let token = first.mint("admin@example.com", "admin:write");
    let mut stream = AlertStream::open(&first, &user, None).await;

    let response = second
        .send(
            As::Token(&token),
            "POST",
            &format!("/api/v1/admin/users/{user_id}/ban"),
            Some(&json!({"action": "ban", "reason": "Spam"})),
        )
        .await;
    assert_eq!(response.status(), 200);
    assert!(
        stream.ends_within(WITHIN_A_SECOND).await,
        "a ban through the other instance left the stream open"
    );
    let (status, _) = call(&first, "GET", "/api/alerts", Some(&user), None).await;
    assert_eq!(status, 401);
}

async fn a_demoted_admins_stream_gets_no_later_admin_broadcast(backend: Backend) {
    let server = TestServer::start_with(backend, &[FAST_STREAMS]).await;
    server.create_user("root@example.com", PASSWORD, "super_admin");
    let (admin_id, admin) = member(&server, "admin@example.com", "admin").await;
    let token = server.mint("root@example.com", "admin:write");
    let mut stream = AlertStream::open(&server, &admin, None).await;

    let admins_only = |title: &str| json!({"title": title, "message": "m", "targets": ["admin"]});
    let (status, _) = broadcast(&server, &token, admins_only("For admins")).await;
    assert_eq!(status, 201);
    let event = stream.next().await.expect("the admin broadcast");
    assert_eq!(event.data["title"], "For admins");

    let response = server
        .send(
            As::Token(&token),
            "PUT",
            &format!("/api/v1/admin/users/{admin_id}"),
            Some(&json!({"role": "user"})),
        )
        .await;
    assert_eq!(response.status(), 200);
    let (status, _) = broadcast(&server, &token, admins_only("Admins, later")).await;
    assert_eq!(status, 201);
    let (status, _) = broadcast(
        &server,
        &token,
        json!({"title": "Everyone", "message": "m"}),
    )
    .await;
    assert_eq!(status, 201);

    let event = stream.next().await.expect("the broadcast to everyone");
    assert_eq!(
        event.data["title"], "Everyone",
        "the stream sent what GET /api/alerts does not show: {event:?}"
    );
    assert_eq!(titles(&alerts(&server, &admin).await), ["Everyone"]);
}

async fn one_user_holds_at_most_five_streams_even_without_rate_limits(backend: Backend) {
    for env in [&[][..], &[("PLAZA_RATE_LIMITS_ENABLED", "false")][..]] {
        let server = TestServer::start_with(backend, env).await;
        let (_, greedy) = member(&server, "greedy@example.com", "user").await;
        let second_device = server.sign_in("greedy@example.com", PASSWORD).await;
        let (_, other) = member(&server, "other@example.com", "user").await;
        let mut held = Vec::new();
        for cookie in [&greedy, &greedy, &greedy, &second_device, &second_device] {
            held.push(AlertStream::open(&server, cookie, None).await);
        }
        for cookie in [&greedy, &second_device] {
            let (status, body) = try_open_stream(&server, cookie).await;
            assert_eq!(status, 429, "{env:?}: {body}");
            assert_eq!(body["error"]["code"], "RATE_LIMITED", "{body}");
        }
        let _others = AlertStream::open(&server, &other, None).await;

        // Streams that end give their places back.
        let (status, _) = call(&server, "POST", "/api/auth/signout", Some(&greedy), None).await;
        assert_eq!(status, 200);
        for stream in &mut held[..3] {
            assert!(stream.ends_within(WITHIN_A_SECOND).await);
        }
        let (status, body) = try_open_stream(&server, &second_device).await;
        assert_eq!(status, 200, "{env:?}: {body}");
    }
}

/// An RFC 3339 time `days` from now.
fn days_ahead(days: i64) -> String {
    (time::OffsetDateTime::now_utc() + time::Duration::days(days))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

/// `DELETE /api/v1/admin/notifications/broadcasts/{id}` as `token`.
async fn cancel(server: &TestServer, token: &str, id: &str) -> (u16, Value) {
    let response = server
        .send(
            As::Token(token),
            "DELETE",
            &format!("/api/v1/admin/notifications/broadcasts/{id}"),
            None,
        )
        .await;
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON body"))
}

async fn broadcast_list(server: &TestServer, token: &str, query: &str) -> Value {
    let response = server
        .send(
            As::Token(token),
            "GET",
            &format!("/api/v1/admin/notifications/broadcasts{query}"),
            None,
        )
        .await;
    assert_eq!(response.status(), 200);
    response.json().await.expect("a JSON body")
}

/// A scheduled broadcast to everyone, due in a day: its id.
async fn scheduled(server: &TestServer, token: &str, title: &str) -> String {
    let (status, body) = broadcast(
        server,
        token,
        json!({"title": title, "message": "Later", "schedule": days_ahead(1)}),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    body["data"]["id"].as_str().unwrap().to_owned()
}

async fn broadcasts_are_listed_newest_first_with_their_status(backend: Backend) {
    let server = TestServer::start(backend).await;
    let admin_id = server.create_user("admin@example.com", PASSWORD, "admin");
    let (user_id, _) = member(&server, "user@example.com", "user").await;
    let writer = server.mint("admin@example.com", "admin:write");
    let reader = server.mint("admin@example.com", "admin:read");
    let deleter = server.mint("admin@example.com", "admin:delete");

    let (status, body) = broadcast(
        &server,
        &writer,
        json!({"title": "Now", "message": "Hello all", "type": "warning"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let delivered = body["data"]["id"].as_str().unwrap().to_owned();
    let schedule = days_ahead(2);
    let (status, body) = broadcast(
        &server,
        &writer,
        json!({"title": "Later", "message": "Soon", "targets": [user_id.to_string(), "moderator", "all"], "schedule": schedule}),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    let waiting = body["data"]["id"].as_str().unwrap().to_owned();
    let withdrawn = scheduled(&server, &writer, "Withdrawn").await;
    assert_eq!(cancel(&server, &deleter, &withdrawn).await.0, 200);
    // A moderator's note to one user is an alert, not a broadcast.
    let db = server.domain().await;
    db.write(|tx| {
        Box::pin(async move {
            plaza_domain::alerts::notify_user(
                tx,
                user_id,
                plaza_domain::alerts::AlertType::Info,
                "Note",
                "About your post",
                user_id,
                now_millis(),
            )
            .await
        })
    })
    .await
    .unwrap();

    let list = broadcast_list(&server, &reader, "").await;
    assert_eq!(list["success"], true);
    assert_eq!(
        list["meta"]["pagination"],
        json!({"total": 3, "limit": 50, "offset": 0, "hasMore": false})
    );
    let ids: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [&withdrawn, &waiting, &delivered], "newest first");
    let [cancelled_item, waiting_item, delivered_item] = [0, 1, 2].map(|i| &list["data"][i]);
    assert_eq!(cancelled_item["status"], "cancelled");
    assert!(cancelled_item["recipients"].is_null());
    assert!(cancelled_item["cancelledAt"].is_string());
    assert_eq!(waiting_item["status"], "scheduled");
    assert_eq!(waiting_item["title"], "Later");
    assert_eq!(waiting_item["message"], "Soon");
    assert_eq!(waiting_item["type"], "info");
    assert_eq!(
        waiting_item["targets"],
        json!(["all", "moderator", user_id.to_string()])
    );
    let due = |text: &Value| {
        time::OffsetDateTime::parse(
            text.as_str().expect("a time"),
            &time::format_description::well_known::Rfc3339,
        )
        .unwrap()
        .unix_timestamp()
    };
    assert_eq!(due(&waiting_item["schedule"]), due(&json!(schedule)));
    assert!(waiting_item["recipients"].is_null() && waiting_item["deliveredAt"].is_null());
    assert_eq!(delivered_item["status"], "delivered");
    assert_eq!(delivered_item["type"], "warning");
    assert_eq!(delivered_item["targets"], json!(["all"]));
    assert_eq!(delivered_item["recipients"], 2, "the admin and the user");
    assert!(delivered_item["schedule"].is_null());
    for item in list["data"].as_array().unwrap() {
        assert_eq!(item["createdBy"], admin_id.to_string(), "{item}");
        assert!(item["createdAt"].is_string(), "{item}");
    }

    let page = broadcast_list(&server, &reader, "?limit=1&offset=1").await;
    assert_eq!(page["data"].as_array().unwrap().len(), 1);
    assert_eq!(page["data"][0]["id"], waiting);
    assert_eq!(page["meta"]["pagination"]["hasMore"], true);
    let response = server
        .send(
            As::Token(&reader),
            "GET",
            "/api/v1/admin/notifications/broadcasts?limit=0",
            None,
        )
        .await;
    assert_eq!(response.status(), 422);
}

async fn a_cancelled_broadcast_is_never_delivered(backend: Backend) {
    let server = TestServer::start(backend).await;
    let admin_id = server.create_user("admin@example.com", PASSWORD, "admin");
    let (_, user) = member(&server, "user@example.com", "user").await;
    let writer = server.mint("admin@example.com", "admin:write");
    let deleter = server.mint("admin@example.com", "admin:delete");
    let reader = server.mint("admin@example.com", "admin:read");
    let id = scheduled(&server, &writer, "Withdrawn").await;

    let (status, body) = cancel(&server, &writer, &id).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["requiredPermission"], "admin:delete");
    let (status, body) = cancel(&server, &deleter, &id).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true);
    assert_eq!(body["data"]["id"], id);
    assert_eq!(body["data"]["status"], "cancelled");
    assert_eq!(body["data"]["title"], "Withdrawn");

    let later = now_millis() + 2 * 86_400_000;
    let db = server.domain().await;
    assert_eq!(
        db.deliver_due_broadcasts(later).await.unwrap(),
        0,
        "the delivery job passes it by"
    );
    assert!(alerts(&server, &user).await.is_empty());
    let list = broadcast_list(&server, &reader, "").await;
    assert_eq!(list["data"][0]["status"], "cancelled");

    let (status, body) = cancel(&server, &deleter, &id).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "INVALID_TRANSITION");
    let (status, body) = cancel(&server, &deleter, "999999").await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["code"], "NOT_FOUND");

    let trail = server
        .send(
            As::Token(&reader),
            "GET",
            "/api/v1/admin/audit-logs?action=broadcast.cancel",
            None,
        )
        .await
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(trail["meta"]["pagination"]["total"], 1, "{trail}");
    let entry = &trail["data"][0];
    assert_eq!(entry["adminId"], admin_id.to_string());
    assert_eq!(entry["surface"], "v1");
    assert_eq!(entry["targetType"], "broadcast");
    assert_eq!(entry["targetId"], id);
    assert_eq!(
        entry["changes"]["status"],
        json!({"before": "scheduled", "after": "cancelled"})
    );
}

async fn a_delivered_broadcast_cannot_be_cancelled(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("admin@example.com", PASSWORD, "admin");
    let (_, user) = member(&server, "user@example.com", "user").await;
    let writer = server.mint("admin@example.com", "admin:write");
    let deleter = server.mint("admin@example.com", "admin:delete");
    let (status, body) = broadcast(
        &server,
        &writer,
        json!({"title": "Sent", "message": "Already out"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let id = body["data"]["id"].as_str().unwrap().to_owned();

    let (status, body) = cancel(&server, &deleter, &id).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["success"], false);
    assert_eq!(body["error"]["code"], "INVALID_TRANSITION");
    assert_eq!(titles(&alerts(&server, &user).await), ["Sent"]);
    let reader = server.mint("admin@example.com", "admin:read");
    let list = broadcast_list(&server, &reader, "").await;
    assert_eq!(list["data"][0]["status"], "delivered");
}

async fn a_cancellation_racing_the_delivery_lets_exactly_one_happen(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("admin@example.com", PASSWORD, "admin");
    let (_, user) = member(&server, "user@example.com", "user").await;
    let writer = server.mint("admin@example.com", "admin:write");
    let deleter = server.mint("admin@example.com", "admin:delete");
    let db = server.domain().await;
    let later = now_millis() + 2 * 86_400_000;
    for round in 0..5 {
        let id = scheduled(&server, &writer, &format!("Race {round}")).await;
        let ((status, body), delivered) = tokio::join!(
            cancel(&server, &deleter, &id),
            db.deliver_due_broadcasts(later)
        );
        let delivered = delivered.unwrap();
        match status {
            200 => assert_eq!(delivered, 0, "cancelled, yet delivered: {body}"),
            409 => assert_eq!(delivered, 1, "refused, yet not delivered: {body}"),
            other => panic!("{other}: {body}"),
        }
        let shown =
            titles(&alerts(&server, &user).await).contains(&format!("Race {round}").as_str());
        assert_eq!(shown, delivered == 1, "round {round}");
    }
}
