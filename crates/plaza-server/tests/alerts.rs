//! Alerts (issue #15): broadcasts reach their audience in `GET /api/alerts`
//! (now, or once at their scheduled time even with two instances), a
//! moderator's `notifyAuthor` reaches the author, and a user dismisses
//! their own alerts only.

mod common;

use std::time::{Duration, Instant};

use common::{As, Backend, PASSWORD, TestServer, call, member, post};
use plaza_domain::time::now_millis;
use serde_json::{Value, json};

on_both_databases!(
    broadcasts_reach_their_audience,
    broadcasts_refuse_bad_input,
    users_dismiss_their_own_alerts,
    notify_author_alerts_the_author,
    a_scheduled_broadcast_is_delivered_once_by_two_instances,
    racing_deliveries_deliver_once,
);

async fn broadcast(server: &TestServer, token: &str, body: Value) -> (u16, Value) {
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
    let token = server.mint("admin@example.com", "admin:write");
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

async fn a_scheduled_broadcast_is_delivered_once_by_two_instances(backend: Backend) {
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
