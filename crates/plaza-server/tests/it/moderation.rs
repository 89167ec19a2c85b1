//! Graduated moderation through HTTP (DECISIONS.md "Graduated moderation
//! (round 5)"): the site's rules; every kind of moderation action recording
//! its statement of reasons and notifying the member; warnings and their
//! count; silences holding what the member writes in the held queue and
//! muting what their reactions and follows notify, lifted by hand and by
//! expiry; appeals within and after the window, once,
//! decided by someone else, reversing a hide and a ban; a banned member's
//! appeal by the mailed token, through the API and the page its link
//! opens; the public log without the moderator, 404
//! when off; reports on members once per reporter; and the audit entries
//! of each.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::actors::Member;
use crate::common::{As, Backend, TestServer, call, post};
use crate::console::{csrf_of, open, submit};

on_both_databases!(
    site_rules_are_public_replaced_by_admins_and_cited_by_id,
    every_action_records_its_statement_and_notifies_the_member,
    warnings_notify_the_member_and_count,
    a_silence_mutes_what_the_member_notifies_until_lifted_or_expired,
    appeals_come_within_the_window_once_and_are_decided_by_someone_else,
    a_banned_member_appeals_with_the_mailed_token,
    a_banned_member_appeals_on_the_page_the_mail_links_to,
    the_public_log_names_no_moderator_and_is_absent_when_off,
    members_report_a_member_once,
);

/// One request as `who`: the status and the JSON body.
async fn request(
    server: &TestServer,
    who: As<'_>,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let response = server.send(who, method, path, body.as_ref()).await;
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// How many audit entries `action` has.
async fn audit_count(server: &TestServer, token: &str, action: &str) -> i64 {
    let (status, body) = request(
        server,
        As::Token(token),
        "GET",
        &format!("/api/v1/admin/audit-logs?action={action}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["meta"]["pagination"]["total"].as_i64().unwrap()
}

/// The notifications of `member`, newest first.
async fn notifications(server: &TestServer, member: &Member) -> Vec<Value> {
    let (status, body) = call(
        server,
        "GET",
        "/api/notifications?limit=100",
        Some(&member.cookie),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["notifications"].as_array().unwrap().clone()
}

/// The notifications of `member` of `kind`.
async fn of_kind(server: &TestServer, member: &Member, kind: &str) -> Vec<Value> {
    notifications(server, member)
        .await
        .into_iter()
        .filter(|item| item["type"] == kind)
        .collect()
}

/// The moderation actions affecting `member`, newest first.
async fn my_actions(server: &TestServer, member: &Member) -> Vec<Value> {
    let (status, body) = call(
        server,
        "GET",
        "/api/me/moderation-actions?limit=100",
        Some(&member.cookie),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["actions"].as_array().unwrap().clone()
}

/// A published post of `member`.
async fn published(server: &TestServer, member: &Member, title: &str) -> String {
    post(
        server,
        &member.cookie,
        json!({"title": title, "content": "Body", "published": true}),
    )
    .await
}

/// A moderation decision on `kind` (`posts`, `replies`) `id` by `token`.
async fn moderate(
    server: &TestServer,
    token: &str,
    kind: &str,
    id: &str,
    body: Value,
) -> (u16, Value) {
    request(
        server,
        As::Token(token),
        "POST",
        &format!("/api/v1/admin/{kind}/{id}/moderate"),
        Some(body),
    )
    .await
}

/// Puts `rules` (titles) as the site's rules; answers their ids.
async fn set_rules(server: &TestServer, token: &str, titles: &[&str]) -> Vec<String> {
    let rules: Vec<Value> = titles
        .iter()
        .map(|title| json!({"title": title, "description": format!("{title}, please.")}))
        .collect();
    let (status, body) = request(
        server,
        As::Token(token),
        "PUT",
        "/api/v1/admin/rules",
        Some(json!({"rules": rules})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["data"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rule| rule["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The user object of the versioned admin surface.
async fn admin_user(server: &TestServer, token: &str, id: i64) -> Value {
    let (status, body) = request(
        server,
        As::Token(token),
        "GET",
        &format!("/api/v1/admin/users/{id}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["data"].clone()
}

async fn site_rules_are_public_replaced_by_admins_and_cited_by_id(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("admin@example.com", crate::common::PASSWORD, "admin");
    let member = Member::join(&server, "member@example.com", "user").await;
    let writer = Member::join(&server, "writer@example.com", "user").await;
    let write = server.mint("admin@example.com", "admin:write");
    let read = server.mint("admin@example.com", "admin:read");

    let (status, body) = request(&server, As::Anonymous, "GET", "/api/rules", None).await;
    assert_eq!((status, body), (200, json!({"rules": []})));
    let (status, body) = request(
        &server,
        As::Token(&read),
        "PUT",
        "/api/v1/admin/rules",
        Some(json!({"rules": [{"title": "Be kind"}]})),
    )
    .await;
    assert_eq!(status, 403, "admin:read does not replace rules: {body}");

    let ids = set_rules(&server, &write, &["Be kind", "No spam"]).await;
    let (_, body) = request(&server, As::Anonymous, "GET", "/api/rules", None).await;
    let titles: Vec<&str> = body["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rule| rule["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Be kind", "No spam"], "in order: {body}");
    assert_eq!(body["rules"][0]["description"], "Be kind, please.");

    // Reordered, one kept by id, one new, one removed.
    let (status, body) = request(
        &server,
        As::Token(&write),
        "PUT",
        "/api/v1/admin/rules",
        Some(json!({"rules": [
            {"id": ids[1], "title": "No spam at all"},
            {"title": "Stay on topic"},
        ]})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["rules"][0]["id"], ids[1].as_str());
    assert_eq!(body["data"]["rules"][0]["title"], "No spam at all");
    assert_eq!(body["data"]["rules"].as_array().unwrap().len(), 2);
    for bad in [
        json!({"rules": [{"id": "99999", "title": "Ghost"}]}),
        json!({"rules": [{"title": ""}]}),
        json!({"rules": [{"title": "x".repeat(201)}]}),
    ] {
        let (status, body) = request(
            &server,
            As::Token(&write),
            "PUT",
            "/api/v1/admin/rules",
            Some(bad.clone()),
        )
        .await;
        assert_eq!(status, 422, "{bad}: {body}");
    }
    assert_eq!(audit_count(&server, &read, "rules.update").await, 2);

    // Reports cite rules by id: a rule of the site is kept, any other 422.
    let post_id = published(&server, &writer, "Cited").await;
    let (status, body) = call(
        &server,
        "POST",
        &format!("/api/posts/{post_id}/report"),
        Some(&member.cookie),
        Some(json!({"reason": "spam", "category": "rule_violation", "rule_ids": [ids[0]]})),
    )
    .await;
    assert_eq!(status, 422, "a removed rule is no rule: {body}");
    assert_eq!(body["error"]["details"]["field"], "rule_ids", "{body}");
    let (status, body) = call(
        &server,
        "POST",
        &format!("/api/posts/{post_id}/report"),
        Some(&member.cookie),
        Some(json!({"reason": "spam", "category": "rule_violation", "rule_ids": [ids[1]]})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["rule_ids"], json!([ids[1]]));
}

async fn every_action_records_its_statement_and_notifies_the_member(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("admin@example.com", crate::common::PASSWORD, "super_admin");
    let author = Member::join(&server, "author@example.com", "user").await;
    let other = Member::join(&server, "other@example.com", "user").await;
    let token = server.mint("admin@example.com", "admin:super");
    let rule = set_rules(&server, &token, &["No spam"]).await.remove(0);

    let hidden = published(&server, &author, "Hidden").await;
    let deleted = published(&server, &author, "Deleted").await;
    let flagged = published(&server, &author, "Flagged").await;
    let locked = published(&server, &author, "Locked").await;
    let (status, reply) = call(
        &server,
        "POST",
        &format!("/api/posts/{locked}/replies"),
        Some(&author.cookie),
        Some(json!({"content": "A reply"})),
    )
    .await;
    assert_eq!(status, 201, "{reply}");
    let reply_id = reply["id"].as_str().unwrap().to_owned();

    // Hide and delete notify whatever notifyAuthor says; flag only when
    // asked, lock when asked.
    for (kind, id, body) in [
        (
            "posts",
            &hidden,
            json!({"action": "hide", "reason": "Spam links", "ruleIds": [rule]}),
        ),
        (
            "posts",
            &deleted,
            json!({"action": "delete", "reason": "Scam", "notifyAuthor": false}),
        ),
        (
            "posts",
            &flagged,
            json!({"action": "flag", "reason": "Looks odd"}),
        ),
        (
            "replies",
            &reply_id,
            json!({"action": "hide", "reason": "Rude reply"}),
        ),
        (
            "posts",
            &locked,
            json!({"action": "lock", "reason": "Heated", "notifyAuthor": true}),
        ),
    ] {
        let (status, answer) = moderate(&server, &token, kind, id, body.clone()).await;
        assert_eq!(status, 200, "{body}: {answer}");
    }
    let (status, body) = request(
        &server,
        As::Token(&token),
        "POST",
        &format!("/api/v1/admin/users/{}/warnings", other.id),
        Some(json!({"reason": "Please stop the spam"})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = request(
        &server,
        As::Token(&token),
        "POST",
        &format!("/api/v1/admin/users/{}/silence", other.id),
        Some(json!({"duration": "1d", "reason": "Cooling off"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    let actions = my_actions(&server, &author).await;
    let summary: Vec<(String, String, String)> = actions
        .iter()
        .map(|action| {
            (
                action["action"].as_str().unwrap().to_owned(),
                action["target_type"].as_str().unwrap().to_owned(),
                action["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("lock", "post", "Heated"),
        ("hide", "reply", "Rude reply"),
        ("flag", "post", "Looks odd"),
        ("delete", "post", "Scam"),
        ("hide", "post", "Spam links"),
    ];
    assert_eq!(
        summary,
        expected
            .iter()
            .map(|(a, t, r)| (a.to_string(), t.to_string(), r.to_string()))
            .collect::<Vec<_>>(),
        "newest first, each with its statement: {actions:?}"
    );
    let hide = &actions[4];
    assert_eq!(hide["target_id"], hidden.as_str());
    assert_eq!(hide["rule_ids"], json!([rule]));
    assert_eq!(hide["automated"], false);
    assert_eq!(hide["reversed"], false);
    assert!(hide["expires_at"].is_null());

    let told: Vec<String> = of_kind(&server, &author, "moderation")
        .await
        .iter()
        .map(|item| item["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        told.len(),
        4,
        "hide, delete, reply hide, lock; not the unasked flag: {told:?}"
    );
    assert!(
        told.iter().any(|text| text.contains("Spam links")),
        "{told:?}"
    );
    assert!(told.iter().any(|text| text.contains("Scam")), "{told:?}");
    assert!(
        !told.iter().any(|text| text.contains("Looks odd")),
        "{told:?}"
    );

    let others = my_actions(&server, &other).await;
    let kinds: Vec<&str> = others
        .iter()
        .map(|action| action["action"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["silence", "warning"], "{others:?}");
    assert!(others[0]["expires_at"].is_string(), "a timed silence ends");
    assert_eq!(of_kind(&server, &other, "warning").await.len(), 1);
    let silenced = of_kind(&server, &other, "moderation").await;
    assert_eq!(silenced.len(), 1, "{silenced:?}");
    assert!(
        silenced[0]["text"]
            .as_str()
            .unwrap()
            .contains("Cooling off")
    );
    assert!(silenced[0]["actor"].is_null(), "the moderator is not shown");

    // A ban is recorded too (the member cannot sign in to read it).
    let (status, body) = request(
        &server,
        As::Token(&token),
        "POST",
        &format!("/api/v1/admin/users/{}/ban", other.id),
        Some(json!({"action": "ban", "reason": "Ban evasion"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (_, log) = request(&server, As::Anonymous, "GET", "/api/modlog", None).await;
    assert_eq!(log["entries"][0]["action"], "ban", "{log}");
    assert_eq!(log["entries"][0]["reason"], "Ban evasion");

    for action in [
        "post.moderate.hide",
        "post.moderate.delete",
        "post.moderate.flag",
        "post.moderate.lock",
        "reply.moderate",
        "user.warn",
        "user.silence",
        "user.ban",
    ] {
        assert_eq!(audit_count(&server, &token, action).await, 1, "{action}");
    }
}

async fn warnings_notify_the_member_and_count(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("admin@example.com", crate::common::PASSWORD, "admin");
    server.create_user("root@example.com", crate::common::PASSWORD, "super_admin");
    let member = Member::join(&server, "member@example.com", "user").await;
    let token = server.mint("admin@example.com", "admin:write");
    let read = server.mint("admin@example.com", "admin:read");
    let rule = set_rules(&server, &token, &["Be kind"]).await.remove(0);
    let post_id = published(&server, &member, "Rude").await;
    let path = format!("/api/v1/admin/users/{}/warnings", member.id);

    assert_eq!(
        admin_user(&server, &read, member.id).await["warningCount"],
        0
    );
    let (status, body) = request(
        &server,
        As::Token(&token),
        "POST",
        &path,
        Some(json!({"reason": "Mind your words", "rule_ids": [rule], "post_id": post_id})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let warning = &body["data"];
    assert_eq!(warning["reason"], "Mind your words");
    assert_eq!(warning["rule_ids"], json!([rule]));
    assert_eq!(warning["post_id"], post_id.as_str());
    assert!(warning["reply_id"].is_null());
    assert!(warning["created_by"].is_string());
    let (status, _) = request(
        &server,
        As::Token(&token),
        "POST",
        &path,
        Some(json!({"reason": "Second time now"})),
    )
    .await;
    assert_eq!(status, 201);
    for (bad, field) in [
        (json!({"reason": "too short"}), "reason"),
        (
            json!({"reason": "Long enough reason", "rule_ids": ["424242"]}),
            "rule_ids",
        ),
    ] {
        let (status, body) =
            request(&server, As::Token(&token), "POST", &path, Some(bad.clone())).await;
        assert_eq!(status, 422, "{bad}: {body}");
        assert_eq!(body["error"]["details"]["field"], field, "{body}");
    }
    let root = server
        .sql_count("SELECT id FROM users WHERE email = 'root@example.com'")
        .await;
    let (status, _) = request(
        &server,
        As::Token(&token),
        "POST",
        &format!("/api/v1/admin/users/{root}/warnings"),
        Some(json!({"reason": "Admins warn no super admin"})),
    )
    .await;
    assert_eq!(status, 403);

    let (status, list) = request(&server, As::Token(&read), "GET", &path, None).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["data"].as_array().unwrap().len(), 2);
    assert_eq!(list["data"][0]["reason"], "Second time now", "newest first");
    assert_eq!(
        admin_user(&server, &read, member.id).await["warningCount"],
        2
    );
    let told = notifications(&server, &member).await;
    let kinds: Vec<&str> = told
        .iter()
        .map(|item| item["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["warning", "warning"],
        "a warning notifies as warning only"
    );
    assert_eq!(told[1]["text"], "Mind your words");
    assert_eq!(audit_count(&server, &read, "user.warn").await, 2);
}

async fn a_silence_mutes_what_the_member_notifies_until_lifted_or_expired(backend: Backend) {
    let server = TestServer::start_with(backend, &[("PLAZA_BAN_EXPIRY_INTERVAL_SECS", "1")]).await;
    server.create_user("admin@example.com", crate::common::PASSWORD, "super_admin");
    let loud = Member::join(&server, "loud@example.com", "user").await;
    let author = Member::join(&server, "author@example.com", "user").await;
    let token = server.mint("admin@example.com", "admin:super");
    let first = published(&server, &author, "First").await;
    let second = published(&server, &author, "Second").await;
    let third = published(&server, &author, "Third").await;
    let path = format!("/api/v1/admin/users/{}/silence", loud.id);
    let react = |post_id: String| {
        let server = &server;
        let cookie = loud.cookie.clone();
        async move {
            let (status, body) = call(
                server,
                "PUT",
                &format!("/api/posts/{post_id}/reactions/%F0%9F%91%8D"),
                Some(&cookie),
                None,
            )
            .await;
            assert_eq!(status, 204, "{body}");
        }
    };

    assert!(admin_user(&server, &token, loud.id).await["silencedUntil"].is_null());
    let (status, body) = request(
        &server,
        As::Token(&token),
        "POST",
        &path,
        Some(json!({"duration": "1h", "reason": "Too loud"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["data"]["silencedUntil"].is_string(), "{body}");
    let (status, _) = request(
        &server,
        As::Token(&token),
        "POST",
        &path,
        Some(json!({"duration": "forever", "reason": "Too loud"})),
    )
    .await;
    assert_eq!(status, 422);

    // Silenced: the member may still read and react, but nobody is told,
    // and what they write waits for a moderator.
    let (status, _) = call(&server, "GET", "/api/posts", Some(&loud.cookie), None).await;
    assert_eq!(status, 200);
    let held = published(&server, &loud, "Held while silenced").await;
    let (_, public) = call(&server, "GET", "/api/posts", None, None).await;
    assert!(
        !public["posts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|item| item["id"] == json!(held)),
        "a silenced member's post is not public: {public}"
    );
    let (status, own) = call(
        &server,
        "GET",
        &format!("/api/posts/{held}"),
        Some(&loud.cookie),
        None,
    )
    .await;
    assert_eq!(
        (status, own["status"].as_str()),
        (200, Some("pending")),
        "{own}"
    );
    let moderator = server
        .sign_in("admin@example.com", crate::common::PASSWORD)
        .await;
    let (status, _, queue) =
        open(&server, "/admin/moderation?state=pending", Some(&moderator)).await;
    assert_eq!(status, 200, "{queue}");
    assert!(
        queue.contains(&format!("id=\"post-{held}\"")),
        "the held post waits in the held queue: {queue}"
    );
    assert!(queue.contains("its author is silenced"), "{queue}");
    react(first).await;
    let (status, _) = call(
        &server,
        "PUT",
        &format!("/api/users/{}/follow", author.id),
        Some(&loud.cookie),
        None,
    )
    .await;
    assert_eq!(status, 204);
    let told = notifications(&server, &author).await;
    assert!(
        told.is_empty(),
        "a silenced member's reaction and follow notify nobody: {told:?}"
    );

    // Lifted by hand: reactions notify again.
    let (status, body) = request(&server, As::Token(&token), "DELETE", &path, None).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["data"]["silencedUntil"].is_null(), "{body}");
    let (status, _) = request(&server, As::Token(&token), "DELETE", &path, None).await;
    assert_eq!(status, 409, "not silenced any more");
    react(second).await;
    assert_eq!(of_kind(&server, &author, "reaction").await.len(), 1);

    // Silenced again, then the hour passes: the expiry job lifts it.
    let (status, _) = request(
        &server,
        As::Token(&token),
        "POST",
        &path,
        Some(json!({"duration": "1h", "reason": "Again"})),
    )
    .await;
    assert_eq!(status, 200);
    server
        .sql("UPDATE user_silences SET created_at = created_at - 7200000, expires_at = expires_at - 3600001 WHERE lifted_at IS NULL")
        .await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if audit_count(&server, &token, "user.silence.expire").await == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "the silence did not expire");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(admin_user(&server, &token, loud.id).await["silencedUntil"].is_null());
    react(third).await;
    assert_eq!(of_kind(&server, &author, "reaction").await.len(), 2);
    assert_eq!(audit_count(&server, &token, "user.silence").await, 2);
    assert_eq!(audit_count(&server, &token, "user.unsilence").await, 1);
}

/// Files `member`'s appeal of `action_id`.
async fn appeal(server: &TestServer, member: &Member, action_id: &str) -> (u16, Value) {
    call(
        server,
        "POST",
        "/api/me/appeals",
        Some(&member.cookie),
        Some(json!({"moderation_action_id": action_id, "text": "This was a misunderstanding."})),
    )
    .await
}

/// Decides appeal `id` by `token`.
async fn decide(server: &TestServer, token: &str, id: &str, decision: &str) -> (u16, Value) {
    request(
        server,
        As::Token(token),
        "POST",
        &format!("/api/v1/admin/appeals/{id}"),
        Some(json!({"decision": decision, "reason": "Looked again"})),
    )
    .await
}

async fn appeals_come_within_the_window_once_and_are_decided_by_someone_else(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("first@example.com", crate::common::PASSWORD, "super_admin");
    server.create_user("second@example.com", crate::common::PASSWORD, "super_admin");
    let author = Member::join(&server, "author@example.com", "user").await;
    let stranger = Member::join(&server, "stranger@example.com", "user").await;
    let first = server.mint("first@example.com", "admin:super");
    let second = server.mint("second@example.com", "admin:super");
    let hidden = published(&server, &author, "Hidden").await;
    let late = published(&server, &author, "Late").await;
    for id in [&hidden, &late] {
        let (status, body) = moderate(
            &server,
            &first,
            "posts",
            id,
            json!({"action": "hide", "reason": "Spam"}),
        )
        .await;
        assert_eq!(status, 200, "{body}");
    }
    let actions = my_actions(&server, &author).await;
    let (late_action, hide_action) = (
        actions[0]["id"].as_str().unwrap().to_owned(),
        actions[1]["id"].as_str().unwrap().to_owned(),
    );

    // Within the window, once, and only by the member affected.
    let (status, _) = appeal(&server, &stranger, &hide_action).await;
    assert_eq!(
        status, 404,
        "another member's action is not theirs to appeal"
    );
    let (status, filed) = appeal(&server, &author, &hide_action).await;
    assert_eq!(status, 201, "{filed}");
    assert_eq!(filed["status"], "open");
    let (status, _) = appeal(&server, &author, &hide_action).await;
    assert_eq!(status, 409, "one appeal per action");
    let (status, body) = call(
        &server,
        "POST",
        "/api/me/appeals",
        Some(&author.cookie),
        Some(json!({"moderation_action_id": late_action, "text": "short"})),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    // Thirty-one days later the window is over.
    server
        .sql(&format!(
            "UPDATE moderation_actions SET created_at = created_at - {} WHERE id = {late_action}",
            31_i64 * 24 * 3600 * 1000
        ))
        .await;
    let (status, body) = appeal(&server, &author, &late_action).await;
    assert_eq!(status, 422, "{body}");

    // Listed with the action beside the member's text.
    let (status, list) = request(
        &server,
        As::Token(&second),
        "GET",
        "/api/v1/admin/appeals?status=open",
        None,
    )
    .await;
    assert_eq!(status, 200, "{list}");
    let item = &list["data"][0];
    assert_eq!(item["text"], "This was a misunderstanding.");
    assert_eq!(item["action"]["action"], "hide");
    assert_eq!(item["action"]["reason"], "Spam");
    let appeal_id = item["id"].as_str().unwrap().to_owned();
    // Its filter and paging are checked together, in the order read.
    let (status, body) = request(
        &server,
        As::Token(&second),
        "GET",
        "/api/v1/admin/appeals?status=maybe&limit=0&offset=-1",
        None,
    )
    .await;
    assert_eq!(status, 422, "{body}");
    let fields: Vec<&str> = body["error"]["errors"]
        .as_array()
        .expect("an errors array")
        .iter()
        .filter_map(|problem| problem["field"].as_str())
        .collect();
    assert_eq!(fields, ["status", "limit", "offset"], "{body}");

    // The moderator who hid it may not decide; someone else reverses it.
    let (status, body) = decide(&server, &first, &appeal_id, "reverse").await;
    assert_eq!(status, 403, "{body}");
    let (status, hidden_view) =
        call(&server, "GET", &format!("/api/posts/{hidden}"), None, None).await;
    assert_eq!(status, 404, "still hidden: {hidden_view}");
    let (status, body) = decide(&server, &second, &appeal_id, "reverse").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "decided");
    assert_eq!(body["data"]["decision"], "reverse");
    assert_eq!(body["data"]["action"]["reversed"], true);
    let (status, _) = decide(&server, &second, &appeal_id, "uphold").await;
    assert_eq!(status, 409, "decided once");
    let (status, _) = call(&server, "GET", &format!("/api/posts/{hidden}"), None, None).await;
    assert_eq!(status, 200, "the hide is undone");
    let actions = my_actions(&server, &author).await;
    assert_eq!(actions[0]["action"], "reverse");
    assert_eq!(actions[0]["reverses_id"], hide_action.as_str());
    let original = actions
        .iter()
        .find(|action| action["id"] == hide_action.as_str())
        .unwrap();
    assert_eq!(original["reversed"], true);
    let told = of_kind(&server, &author, "appeal").await;
    assert_eq!(told.len(), 1, "{told:?}");
    let (_, decided) = request(
        &server,
        As::Token(&second),
        "GET",
        "/api/v1/admin/appeals?status=decided",
        None,
    )
    .await;
    assert_eq!(decided["data"].as_array().unwrap().len(), 1);

    // A ban reversed on appeal: the member signs in again.
    let (status, body) = request(
        &server,
        As::Token(&first),
        "POST",
        &format!("/api/v1/admin/users/{}/ban", stranger.id),
        Some(json!({"action": "ban", "reason": "Mistaken identity"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let response = server
        .try_sign_in("stranger@example.com", crate::common::PASSWORD)
        .await;
    assert_ne!(response.status().as_u16(), 200, "banned");
    let ban_action = server
        .sql_count(&format!(
            "SELECT id FROM moderation_actions WHERE action = 'ban' AND user_id = {}",
            stranger.id
        ))
        .await;
    let token = mailed_appeal_token(&server).await;
    let (status, filed) = call(
        &server,
        "POST",
        "/api/appeals",
        None,
        Some(json!({"token": token, "text": "That was my twin brother."})),
    )
    .await;
    assert_eq!(status, 201, "{filed}");
    assert_eq!(filed["moderation_action_id"], ban_action.to_string());
    let (status, body) = decide(&server, &second, filed["id"].as_str().unwrap(), "reverse").await;
    assert_eq!(status, 200, "{body}");
    let response = server
        .try_sign_in("stranger@example.com", crate::common::PASSWORD)
        .await;
    assert_eq!(response.status().as_u16(), 200, "the ban is lifted");
    assert_eq!(audit_count(&server, &second, "appeal.decide").await, 2);
}

/// The token of the newest ban mail's appeal link, read from the mail
/// written into the data directory (polled: mail is sent after the ban).
async fn mailed_appeal_token(server: &TestServer) -> String {
    let folder = server.data_dir.path().join("mail");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut found = None;
        if let Ok(entries) = std::fs::read_dir(&folder) {
            for entry in entries.flatten() {
                let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
                let text = crate::common::smtp_sink::decoded_text(&text);
                if let Some(at) = text.find("/appeal?token=") {
                    let token: String = text[at + "/appeal?token=".len()..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                        .collect();
                    found = Some(token);
                }
            }
        }
        if let Some(token) = found {
            return token;
        }
        assert!(
            Instant::now() < deadline,
            "no ban mail in {}",
            folder.display()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn a_banned_member_appeals_with_the_mailed_token(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("admin@example.com", crate::common::PASSWORD, "admin");
    let member = Member::join(&server, "member@example.com", "user").await;
    let token = server.mint("admin@example.com", "admin:write");
    let (status, body) = request(
        &server,
        As::Token(&token),
        "POST",
        &format!("/api/v1/admin/users/{}/ban", member.id),
        Some(json!({"action": "ban", "reason": "Spam wave", "duration": "7d"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let link_token = mailed_appeal_token(&server).await;

    let (status, body) = call(
        &server,
        "POST",
        "/api/appeals",
        None,
        Some(json!({"token": "not-a-token", "text": "Please look again."})),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = call(
        &server,
        "POST",
        "/api/appeals",
        None,
        Some(json!({"token": link_token, "text": "Please look again."})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["status"], "open");
    let (status, _) = call(
        &server,
        "POST",
        "/api/appeals",
        None,
        Some(json!({"token": link_token, "text": "Please look again."})),
    )
    .await;
    assert_eq!(status, 409, "once per action");
    let read = server.mint("admin@example.com", "admin:read");
    let (_, list) = request(
        &server,
        As::Token(&read),
        "GET",
        "/api/v1/admin/appeals?status=open",
        None,
    )
    .await;
    assert_eq!(list["data"][0]["action"]["action"], "ban", "{list}");
    assert_eq!(list["data"][0]["action"]["reason"], "Spam wave");
}

/// The page `{base_url}/appeal?token=T` of the ban mail, signed out: the
/// form while the token may appeal, a text to fix, the appeal sent (the
/// same appeal `POST /api/appeals` files), and why a link takes no appeal
/// (not valid, used, expired).
async fn a_banned_member_appeals_on_the_page_the_mail_links_to(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("admin@example.com", crate::common::PASSWORD, "admin");
    let member = Member::join(&server, "member@example.com", "user").await;
    let token = server.mint("admin@example.com", "admin:write");
    let (status, body) = request(
        &server,
        As::Token(&token),
        "POST",
        &format!("/api/v1/admin/users/{}/ban", member.id),
        Some(json!({"action": "ban", "reason": "Spam wave", "duration": "7d"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let link_token = mailed_appeal_token(&server).await;
    let path = format!("/appeal?token={link_token}");

    for unknown in ["/appeal", "/appeal?token=not-a-token"] {
        let (status, headers, page) = open(&server, unknown, None).await;
        assert_eq!(status, 200, "{page}");
        assert!(page.contains("data-error=\"invalid_token\""), "{page}");
        assert!(!page.contains("<textarea"), "{page}");
        assert_eq!(headers["cache-control"], "no-store");
    }
    // The banned member's session ended; with its cookie or none, the
    // page is served.
    let (status, _, page) = open(&server, &path, Some(&member.cookie)).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("<textarea"), "{page}");
    let (status, headers, page) = open(&server, &path, None).await;
    assert_eq!(status, 200, "{page}");
    let (csrf_cookie, csrf) = csrf_of(&headers, &page);
    let fields = |text: &'static str| {
        [
            ("csrfToken", csrf.clone()),
            ("token", link_token.clone()),
            ("text", text.to_owned()),
        ]
    };
    let send = |cookies: Vec<String>, text: &'static str| {
        let server = &server;
        let fields = fields(text);
        async move {
            let pairs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let cookies: Vec<&str> = cookies.iter().map(String::as_str).collect();
            submit(server, "/appeal", &cookies, &pairs, &[]).await
        }
    };

    let (status, _, body) = send(Vec::new(), "Please look again at my posts.").await;
    assert_eq!(status, 403, "without the CSRF cookie: {body}");
    let (status, location, _) = send(vec![csrf_cookie.clone()], "Unfair").await;
    assert_eq!(status, 303);
    assert_eq!(location, format!("{path}&error=text"));
    let (_, _, page) = open(&server, &location, None).await;
    assert!(page.contains("data-error=\"text\""), "{page}");
    assert!(page.contains("<textarea"), "the form again: {page}");
    let (status, location, _) =
        send(vec![csrf_cookie.clone()], "Please look again at my posts.").await;
    assert_eq!(status, 303);
    assert_eq!(location, "/appeal?sent=1");
    let (_, _, page) = open(&server, &location, None).await;
    assert!(page.contains("data-notice=\"sent\""), "{page}");

    let read = server.mint("admin@example.com", "admin:read");
    let (_, list) = request(
        &server,
        As::Token(&read),
        "GET",
        "/api/v1/admin/appeals?status=open",
        None,
    )
    .await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list["data"][0]["action"]["action"], "ban", "{list}");
    assert_eq!(list["data"][0]["text"], "Please look again at my posts.");

    // Used: the page says so, and a second post files nothing.
    let (_, _, page) = open(&server, &path, None).await;
    assert!(page.contains("data-error=\"used\""), "{page}");
    let (status, location, _) =
        send(vec![csrf_cookie.clone()], "Please look again, once more.").await;
    assert_eq!((status, location.as_str()), (303, path.as_str()));
    let (_, list) = request(
        &server,
        As::Token(&read),
        "GET",
        "/api/v1/admin/appeals",
        None,
    )
    .await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1, "{list}");

    // Expired: the window is over.
    server.sql("DELETE FROM appeals").await;
    server.sql("UPDATE appeal_tokens SET expires_at = 1").await;
    let (_, _, page) = open(&server, &path, None).await;
    assert!(page.contains("data-error=\"expired\""), "{page}");
    assert!(page.contains("within 30 days"), "{page}");
    let (status, location, _) =
        send(vec![csrf_cookie.clone()], "Please look again at my posts.").await;
    assert_eq!((status, location.as_str()), (303, path.as_str()));
    let (_, list) = request(
        &server,
        As::Token(&read),
        "GET",
        "/api/v1/admin/appeals",
        None,
    )
    .await;
    assert_eq!(list["data"].as_array().unwrap().len(), 0, "{list}");
}

async fn the_public_log_names_no_moderator_and_is_absent_when_off(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("moddy@example.com", crate::common::PASSWORD, "super_admin");
    let author = Member::join(&server, "author@example.com", "user").await;
    let token = server.mint("moddy@example.com", "admin:super");
    let post_id = published(&server, &author, "Logged").await;
    let (status, _) = moderate(
        &server,
        &token,
        "posts",
        &post_id,
        json!({"action": "hide", "reason": "Off topic"}),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = moderate(
        &server,
        &token,
        "posts",
        &post_id,
        json!({"action": "approve"}),
    )
    .await;
    assert_eq!(status, 200);

    let (status, log) = request(&server, As::Anonymous, "GET", "/api/modlog?limit=1", None).await;
    assert_eq!(status, 200, "{log}");
    let entry = &log["entries"][0];
    assert_eq!(
        entry["action"], "reverse",
        "an approve reverses the hide by hand"
    );
    let keys: Vec<&String> = entry.as_object().unwrap().keys().collect();
    assert_eq!(
        keys.len(),
        8,
        "id, action, target_type, target_id, reason, rule_ids, created_at, reversed: {keys:?}"
    );
    let cursor = log["next_cursor"].as_str().unwrap();
    let (_, next) = request(
        &server,
        As::Anonymous,
        "GET",
        &format!("/api/modlog?cursor={cursor}"),
        None,
    )
    .await;
    assert_eq!(next["entries"][0]["action"], "hide");
    assert_eq!(next["entries"][0]["reversed"], true);
    assert_eq!(next["entries"][0]["target_id"], post_id.as_str());
    assert!(next["next_cursor"].is_null());
    let text = format!("{log}{next}");
    assert!(!text.contains("moddy"), "no moderator name: {text}");
    assert!(!text.contains("moderator"), "no moderator field: {text}");
    drop(server);

    let server = TestServer::start_with(backend, &[("PLAZA_PUBLIC_MODLOG", "false")]).await;
    let (status, body) = request(&server, As::Anonymous, "GET", "/api/modlog", None).await;
    assert_eq!(status, 404, "{body}");
}

async fn members_report_a_member_once(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("admin@example.com", crate::common::PASSWORD, "super_admin");
    let reporter = Member::join(&server, "reporter@example.com", "user").await;
    let target = Member::join(&server, "target@example.com", "user").await;
    let token = server.mint("admin@example.com", "admin:super");
    let rule = set_rules(&server, &token, &["Be kind"]).await.remove(0);
    let path = format!("/api/users/{}/report", target.id);
    let body = json!({"reason": "Harasses people", "category": "harassment", "rule_ids": [rule]});

    let (status, _) = call(&server, "POST", &path, None, Some(body.clone())).await;
    assert_eq!(status, 401);
    let (status, report) = call(
        &server,
        "POST",
        &path,
        Some(&reporter.cookie),
        Some(body.clone()),
    )
    .await;
    assert_eq!(status, 201, "{report}");
    assert_eq!(report["user_id"], target.id.to_string());
    assert_eq!(report["category"], "harassment");
    assert_eq!(report["rule_ids"], json!([rule]));
    let (status, _) = call(
        &server,
        "POST",
        &path,
        Some(&reporter.cookie),
        Some(body.clone()),
    )
    .await;
    assert_eq!(status, 409, "once per reporter and member");
    let (status, _) = call(
        &server,
        "POST",
        &format!("/api/users/{}/report", reporter.id),
        Some(&reporter.cookie),
        Some(body.clone()),
    )
    .await;
    assert_eq!(status, 422, "nobody reports themself");
    let (status, _) = call(
        &server,
        "POST",
        "/api/users/999999/report",
        Some(&reporter.cookie),
        Some(body),
    )
    .await;
    assert_eq!(status, 404);
    let open = server
        .sql_count("SELECT COUNT(*) FROM user_reports WHERE resolved_at IS NULL")
        .await;
    assert_eq!(open, 1);
    // A warning resolves the reports on the member.
    let (status, _) = request(
        &server,
        As::Token(&token),
        "POST",
        &format!("/api/v1/admin/users/{}/warnings", target.id),
        Some(json!({"reason": "Reported for harassment"})),
    )
    .await;
    assert_eq!(status, 201);
    let open = server
        .sql_count("SELECT COUNT(*) FROM user_reports WHERE resolved_at IS NULL")
        .await;
    assert_eq!(open, 0);
}
