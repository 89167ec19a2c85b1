//! The front door's content side through HTTP (DECISIONS.md "The front
//! door (round 5)"): word filters kept by administrators (their routes,
//! limits and audit entries), each action on each field with the
//! normalisation cases, a filter added through one instance in force on
//! another within 5 s, posts and replies held `pending` (seen by their
//! author and moderators only, in the queue with their reason, published
//! and told on approval), and the new-account hold.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::actors::Member;
use crate::common::{As, Backend, PASSWORD, TestServer, call};

on_both_databases!(
    word_filters_are_listed_added_and_removed_with_their_audit_entries,
    each_action_acts_on_each_field_after_normalisation,
    held_posts_and_replies_are_seen_by_their_author_and_moderators_until_approved,
    a_new_accounts_first_writes_are_held_until_one_is_approved,
);
on_postgres!(a_filter_added_on_one_instance_is_in_force_on_another_within_five_seconds);

/// `POST /api/v1/admin/word-filters` of `body` with `token`: the status and
/// the envelope's data.
async fn add_filter(server: &TestServer, token: &str, body: Value) -> (u16, Value) {
    let response = server
        .send(
            As::Token(token),
            "POST",
            "/api/v1/admin/word-filters",
            Some(&body),
        )
        .await;
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    (status, body)
}

/// Adds a filter that must be accepted; its id.
async fn filter(server: &TestServer, token: &str, body: Value) -> String {
    let (status, created) = add_filter(server, token, body).await;
    assert_eq!(status, 201, "{created}");
    created["data"]["id"].as_str().unwrap().to_owned()
}

/// `method path` as `who` with `body`: the status and the JSON answer.
async fn ask(
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

/// The fields a 422 names (the general surface's `details` is one field
/// or a list; the versioned admin surface's `error.fields` a list).
fn fields(body: &Value) -> Vec<String> {
    let listed = match (&body["error"]["fields"], &body["error"]["details"]) {
        (Value::Array(fields), _) | (_, Value::Array(fields)) => fields.clone(),
        (_, Value::Object(_)) => vec![body["error"]["details"].clone()],
        _ => Vec::new(),
    };
    listed
        .iter()
        .filter_map(|field| field["field"].as_str().map(str::to_owned))
        .collect()
}

/// Writes a post as `cookie`: status and answer.
async fn write_post(server: &TestServer, cookie: &str, title: &str, content: &str) -> (u16, Value) {
    call(
        server,
        "POST",
        "/api/posts",
        Some(cookie),
        Some(json!({"title": title, "content": content})),
    )
    .await
}

/// Answers post `post_id` as `cookie`: status and answer.
async fn write_reply(
    server: &TestServer,
    cookie: &str,
    post_id: &str,
    content: &str,
) -> (u16, Value) {
    call(
        server,
        "POST",
        &format!("/api/posts/{post_id}/replies"),
        Some(cookie),
        Some(json!({"content": content})),
    )
    .await
}

/// The types of `cookie`'s member's notifications about `post_id`.
async fn notified(server: &TestServer, cookie: &str, post_id: &str) -> Vec<String> {
    let (status, body) = call(
        server,
        "GET",
        "/api/notifications?limit=100",
        Some(cookie),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["notifications"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["post_id"] == post_id)
        .map(|item| item["type"].as_str().unwrap().to_owned())
        .collect()
}

async fn word_filters_are_listed_added_and_removed_with_their_audit_entries(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("admin@example.com", PASSWORD, "admin");
    let reader = server.mint("admin@example.com", "admin:read");
    let writer = server.mint("admin@example.com", "admin:write");
    let deleter = server.mint("admin@example.com", "admin:delete");

    // Each bad field is named.
    for (body, field) in [
        (json!({"action": "block"}), "phrase"),
        (json!({"phrase": "", "action": "block"}), "phrase"),
        (
            json!({"phrase": "x".repeat(101), "action": "block"}),
            "phrase",
        ),
        (json!({"phrase": "\u{200b}", "action": "block"}), "phrase"),
        (json!({"phrase": "spam"}), "action"),
        (json!({"phrase": "spam", "action": "ban"}), "action"),
        (
            json!({"phrase": "spam", "action": "hold", "applies_to": []}),
            "applies_to",
        ),
        (
            json!({"phrase": "spam", "action": "hold", "applies_to": ["posts"]}),
            "applies_to[0]",
        ),
    ] {
        let (status, answer) = add_filter(&server, &writer, body.clone()).await;
        assert_eq!(status, 422, "{body}: {answer}");
        assert!(
            fields(&answer).contains(&field.to_owned()),
            "{body}: {answer}"
        );
    }
    let (status, _) = add_filter(
        &server,
        &reader,
        json!({"phrase": "spam", "action": "block"}),
    )
    .await;
    assert_eq!(status, 403, "admin:read may not add");

    // Defaults: whole words, every kind of text.
    let (status, created) = add_filter(
        &server,
        &writer,
        json!({"phrase": "  Free Crypto ", "action": "hold"}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let data = &created["data"];
    assert_eq!(data["phrase"], "Free Crypto");
    assert_eq!(data["action"], "hold");
    assert_eq!(data["wholeWord"], true);
    assert_eq!(
        data["appliesTo"],
        json!(["post", "reply", "username", "profile"])
    );
    let id = data["id"].as_str().unwrap().to_owned();
    filter(
        &server,
        &writer,
        json!({"phrase": "promo", "action": "flag", "whole_word": false, "applies_to": ["reply"]}),
    )
    .await;

    let (status, listed) = ask(
        &server,
        As::Token(&reader),
        "GET",
        "/api/v1/admin/word-filters",
        None,
    )
    .await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["meta"]["pagination"]["total"], 2);
    let phrases: Vec<&str> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["phrase"].as_str().unwrap())
        .collect();
    assert_eq!(phrases, ["Free Crypto", "promo"], "oldest first");
    assert_eq!(listed["data"][1]["wholeWord"], false);
    assert_eq!(listed["data"][1]["appliesTo"], json!(["reply"]));

    // DELETE answers the removed filter in the envelope; then it is gone.
    let path = format!("/api/v1/admin/word-filters/{id}");
    let (status, _) = ask(&server, As::Token(&writer), "DELETE", &path, None).await;
    assert_eq!(status, 403, "admin:write may not delete");
    let (status, removed) = ask(&server, As::Token(&deleter), "DELETE", &path, None).await;
    assert_eq!(status, 200, "{removed}");
    assert_eq!(removed["success"], true);
    assert_eq!(removed["data"]["id"], id.as_str());
    assert_eq!(removed["data"]["phrase"], "Free Crypto");
    let (status, _) = ask(&server, As::Token(&deleter), "DELETE", &path, None).await;
    assert_eq!(status, 404);

    // Both changes are audited with the filter.
    for (action, side) in [
        ("word_filter.create", "after"),
        ("word_filter.delete", "before"),
    ] {
        let (status, entries) = ask(
            &server,
            As::Token(&reader),
            "GET",
            &format!("/api/v1/admin/audit-logs?action={action}"),
            None,
        )
        .await;
        assert_eq!(status, 200, "{entries}");
        let entry = entries["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|entry| entry["targetId"] == id.as_str())
            .unwrap_or_else(|| panic!("no {action} entry: {entries}"))
            .clone();
        assert_eq!(entry["changes"][side]["phrase"], "Free Crypto", "{entry}");
    }

    // At most 1,000 filters.
    let count = server.sql_count("SELECT COUNT(*) FROM word_filters").await;
    server
        .sql(&format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {}) \
             INSERT INTO word_filters (phrase, action, whole_word, applies_to, created_at) \
             SELECT 'filler' || i, 'flag', TRUE, 'post', 0 FROM n",
            1000 - count
        ))
        .await;
    let (status, full) = add_filter(
        &server,
        &writer,
        json!({"phrase": "one more", "action": "block"}),
    )
    .await;
    assert_eq!(status, 409, "{full}");
}

async fn each_action_acts_on_each_field_after_normalisation(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("admin@example.com", PASSWORD, "admin");
    let writer = server.mint("admin@example.com", "admin:write");
    let member = Member::join(&server, "member@example.com", "user").await;
    let other = Member::join(&server, "other@example.com", "user").await;
    filter(
        &server,
        &writer,
        json!({"phrase": "casino", "action": "block"}),
    )
    .await;
    filter(
        &server,
        &writer,
        json!({"phrase": "crypto", "action": "hold", "applies_to": ["post", "reply"]}),
    )
    .await;
    filter(
        &server,
        &writer,
        json!({"phrase": "promo", "action": "flag"}),
    )
    .await;
    filter(
        &server,
        &writer,
        json!({"phrase": "spammer", "action": "block", "applies_to": ["username", "profile"]}),
    )
    .await;

    // Block: the field is named, whatever disguise the phrase wears.
    let blocked = [
        ("C4SINO night", "fine", "title"),
        (
            "Fine",
            "a \u{ff43}\u{ff41}\u{ff53}\u{ff49}\u{ff4e}\u{ff4f} here",
            "content",
        ),
        ("Fine", "ca\u{200b}si\u{200d}no", "content"),
        ("Fine", "\u{0441}\u{0430}sin\u{043e}", "content"),
        ("Fine", "CAS\u{0399}N\u{039f}", "content"),
    ];
    for (title, content, field) in blocked {
        let (status, answer) = write_post(&server, &member.cookie, title, content).await;
        assert_eq!(status, 422, "{title} / {content}: {answer}");
        assert_eq!(fields(&answer), [field], "{answer}");
    }
    // Whole words only: a longer word is not the phrase.
    let (status, fine) =
        write_post(&server, &member.cookie, "Casinos", "about casinoless towns").await;
    assert_eq!(status, 201, "{fine}");
    let post_id = fine["id"].as_str().unwrap().to_owned();
    let (status, answer) = call(
        &server,
        "PUT",
        &format!("/api/posts/{post_id}"),
        Some(&member.cookie),
        Some(json!({"content": "visit the CASINO"})),
    )
    .await;
    assert_eq!(
        (status, fields(&answer)),
        (422, vec!["content".to_owned()]),
        "{answer}"
    );
    let (status, answer) =
        write_reply(&server, &other.cookie, &post_id, "c-a-s-i-n-o? no: casino").await;
    assert_eq!(
        (status, fields(&answer)),
        (422, vec!["content".to_owned()]),
        "{answer}"
    );
    let (status, reply) = write_reply(&server, &other.cookie, &post_id, "a plain answer").await;
    assert_eq!(status, 201, "{reply}");
    let reply_id = reply["id"].as_str().unwrap().to_owned();
    let (status, answer) = call(
        &server,
        "PUT",
        &format!("/api/replies/{reply_id}"),
        Some(&other.cookie),
        Some(json!({"content": "casino!"})),
    )
    .await;
    assert_eq!(
        (status, fields(&answer)),
        (422, vec!["content".to_owned()]),
        "{answer}"
    );

    // Usernames and profiles.
    let signed_up = server
        .sign_up(&json!({"email": "s@example.com", "password": PASSWORD, "username": "spammer"}))
        .await;
    assert_eq!(signed_up.status().as_u16(), 422);
    let answer: Value = signed_up.json().await.unwrap();
    assert_eq!(fields(&answer), ["username"], "{answer}");
    let signed_up = server
        .sign_up(&json!({"email": "t@example.com", "password": PASSWORD, "name": "Top 5PAMMER"}))
        .await;
    assert_eq!(signed_up.status().as_u16(), 422);
    let answer: Value = signed_up.json().await.unwrap();
    assert_eq!(fields(&answer), ["name"], "{answer}");
    let me = format!("/api/users/{}", member.id);
    for (body, field) in [
        (json!({"bio": "proud sp\u{200b}ammer"}), "bio"),
        (json!({"name": "\u{0455}pammer"}), "name"),
        (json!({"username": "spammer"}), "username"),
    ] {
        let (status, answer) = call(
            &server,
            "PUT",
            &me,
            Some(&member.cookie),
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, 422, "{body}: {answer}");
        assert_eq!(fields(&answer), [field], "{answer}");
    }
    let (status, answer) = call(
        &server,
        "PUT",
        &me,
        Some(&member.cookie),
        Some(json!({"bio": "crypto promo casinos"})),
    )
    .await;
    assert_eq!(
        status, 200,
        "hold and flag filters do not act on profiles: {answer}"
    );

    // Hold: stored pending, for the author to see.
    let (status, held) = write_post(&server, &member.cookie, "News", "free CRYPT0 here").await;
    assert_eq!(status, 201, "{held}");
    assert_eq!(held["status"], "pending");
    assert_eq!(held["published"], false);
    let (status, held_reply) =
        write_reply(&server, &other.cookie, &post_id, "\u{0441}rypto!").await;
    assert_eq!(status, 201, "{held_reply}");
    assert_eq!(held_reply["status"], "pending");
    // Edited into a held phrase, a public reply leaves the thread.
    let (status, edited) = call(
        &server,
        "PUT",
        &format!("/api/replies/{reply_id}"),
        Some(&other.cookie),
        Some(json!({"content": "now about crypto"})),
    )
    .await;
    assert_eq!(status, 200, "{edited}");
    assert_eq!(edited["status"], "pending");

    // Flag: stored, published, and in the queue with the reason.
    let (status, flagged) = write_post(&server, &member.cookie, "Deals", "a pr0mo for all").await;
    assert_eq!(status, 201, "{flagged}");
    assert_eq!(flagged["status"], "flagged");
    let flagged_id = flagged["id"].as_str().unwrap();
    let (status, _) = call(
        &server,
        "GET",
        &format!("/api/posts/{flagged_id}"),
        None,
        None,
    )
    .await;
    assert_eq!(status, 200, "a flagged post is public");
    let (status, flagged_reply) = write_reply(&server, &other.cookie, &post_id, "PROMO").await;
    assert_eq!(status, 201, "{flagged_reply}");
    assert_eq!(flagged_reply["status"], "flagged");
    let reader = server.mint("admin@example.com", "admin:read");
    let (_, queue) = ask(
        &server,
        As::Token(&reader),
        "GET",
        "/api/v1/admin/posts?status=flagged",
        None,
    )
    .await;
    assert_eq!(queue["data"][0]["id"], flagged_id);
    assert_eq!(queue["data"][0]["reviewReason"], "word_filter:promo");
    let (_, queue) = ask(
        &server,
        As::Token(&reader),
        "GET",
        "/api/v1/admin/posts?status=pending",
        None,
    )
    .await;
    assert_eq!(queue["data"][0]["id"], held["id"]);
    assert_eq!(queue["data"][0]["reviewReason"], "word_filter:crypto");
    let (_, queue) = ask(
        &server,
        As::Token(&reader),
        "GET",
        "/api/v1/admin/replies?status=flagged",
        None,
    )
    .await;
    assert_eq!(queue["data"][0]["id"], flagged_reply["id"]);
    assert_eq!(queue["data"][0]["reviewReason"], "word_filter:promo");

    // Each flag is an automated moderation action its author can read.
    for (cookie, target_type, target_id) in [
        (&member.cookie, "post", flagged_id),
        (
            &other.cookie,
            "reply",
            flagged_reply["id"].as_str().unwrap(),
        ),
    ] {
        let (status, mine) = call(
            &server,
            "GET",
            "/api/me/moderation-actions",
            Some(cookie.as_str()),
            None,
        )
        .await;
        assert_eq!(status, 200, "{mine}");
        let flag = mine["actions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|action| action["target_id"] == target_id)
            .unwrap_or_else(|| panic!("no action on the flagged {target_type}: {mine}"));
        assert_eq!(flag["action"], "flag", "{flag}");
        assert_eq!(flag["target_type"], target_type, "{flag}");
        assert_eq!(flag["automated"], true, "{flag}");
    }
}

async fn held_posts_and_replies_are_seen_by_their_author_and_moderators_until_approved(
    backend: Backend,
) {
    let server = TestServer::start(backend).await;
    server.create_user("admin@example.com", PASSWORD, "admin");
    let writer = server.mint("admin@example.com", "admin:write");
    let reader = server.mint("admin@example.com", "admin:read");
    let author = Member::join(&server, "author@example.com", "user").await;
    let other = Member::join(&server, "other@example.com", "user").await;
    let moderator = Member::join(&server, "moderator@example.com", "moderator").await;
    let other_name = server
        .get_json_as(&format!("/api/users/{}", other.id), &other.cookie)
        .await["username"]
        .as_str()
        .unwrap_or_else(|| panic!("the member's username"))
        .to_owned();
    filter(
        &server,
        &writer,
        json!({"phrase": "giveaway", "action": "hold"}),
    )
    .await;

    let (status, public) = write_post(&server, &other.cookie, "Open thread", "say hello").await;
    assert_eq!(status, 201, "{public}");
    let public_id = public["id"].as_str().unwrap().to_owned();
    let (status, held) = write_post(
        &server,
        &author.cookie,
        "Weekend giveaway",
        &format!("hello @{other_name}, join the giveaway"),
    )
    .await;
    assert_eq!(status, 201, "{held}");
    let held_id = held["id"].as_str().unwrap().to_owned();
    let (status, reply) =
        write_reply(&server, &author.cookie, &public_id, "a giveaway for you").await;
    assert_eq!(status, 201, "{reply}");
    let reply_id = reply["id"].as_str().unwrap().to_owned();

    // Out of every public read.
    let post_path = format!("/api/posts/{held_id}");
    for who in [None, Some(other.cookie.as_str())] {
        assert_eq!(call(&server, "GET", &post_path, who, None).await.0, 404);
        let (_, list) = call(&server, "GET", "/api/posts?limit=100", who, None).await;
        let ids: Vec<&Value> = list["posts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|post| &post["id"])
            .collect();
        assert_eq!(ids, [&json!(public_id)], "{list}");
        assert_eq!(list["pagination"]["total"], 1, "{list}");
        let (_, found) = call(&server, "GET", "/api/search?q=giveaway&type=all", who, None).await;
        assert_eq!(found["results"], json!([]), "{found}");
        let (_, thread) = call(
            &server,
            "GET",
            &format!("/api/posts/{public_id}/replies"),
            who,
            None,
        )
        .await;
        assert_eq!(thread["replies"], json!([]), "{thread}");
        assert_eq!(
            call(
                &server,
                "GET",
                &format!("/api/replies/{reply_id}"),
                who,
                None
            )
            .await
            .0,
            404
        );
    }
    let profile = server
        .get_json_as(&format!("/api/users/{}/profile", author.id), &other.cookie)
        .await;
    assert_eq!(profile["posts_count"], 0, "{profile}");
    assert_eq!(profile["replies_count"], 0, "{profile}");
    let (_, public_now) = call(
        &server,
        "GET",
        &format!("/api/posts/{public_id}"),
        None,
        None,
    )
    .await;
    assert_eq!(public_now["reply_count"], 0);
    assert_eq!(
        notified(&server, &other.cookie, &held_id).await,
        Vec::<String>::new()
    );
    assert_eq!(
        notified(&server, &other.cookie, &public_id).await,
        Vec::<String>::new()
    );

    // Seen by the author and by moderators, as pending.
    for cookie in [&author.cookie, &moderator.cookie] {
        let (status, seen) = call(&server, "GET", &post_path, Some(cookie), None).await;
        assert_eq!(status, 200, "{seen}");
        assert_eq!(seen["status"], "pending");
        let (status, seen) = call(
            &server,
            "GET",
            &format!("/api/replies/{reply_id}"),
            Some(cookie),
            None,
        )
        .await;
        assert_eq!(status, 200, "{seen}");
        assert_eq!(seen["status"], "pending");
    }
    // Publishing it again leaves it held.
    let (status, still) = call(
        &server,
        "PUT",
        &post_path,
        Some(&author.cookie),
        Some(json!({"published": true})),
    )
    .await;
    assert_eq!(status, 200, "{still}");
    assert_eq!(still["status"], "pending");

    // In the queue with the reason, on the admin surface and the console.
    let (_, queue) = ask(
        &server,
        As::Token(&reader),
        "GET",
        "/api/v1/admin/posts?status=pending",
        None,
    )
    .await;
    assert_eq!(queue["data"][0]["id"], held_id.as_str(), "{queue}");
    assert_eq!(queue["data"][0]["reviewReason"], "word_filter:giveaway");
    let (_, queue) = ask(
        &server,
        As::Token(&reader),
        "GET",
        "/api/v1/admin/replies?status=pending",
        None,
    )
    .await;
    assert_eq!(queue["data"][0]["id"], reply_id.as_str(), "{queue}");
    assert_eq!(queue["data"][0]["reviewReason"], "word_filter:giveaway");
    let page = server
        .send(
            moderator.session(),
            "GET",
            "/admin/moderation?state=pending",
            None,
        )
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains("Weekend giveaway"), "{page}");
    assert!(page.contains("matches the word filter"), "{page}");

    // Approving publishes each and tells its author and those it concerns.
    for (path, id) in [("posts", &held_id), ("replies", &reply_id)] {
        let (status, decided) = ask(
            &server,
            As::Token(&writer),
            "POST",
            &format!("/api/v1/admin/{path}/{id}/moderate"),
            Some(json!({"action": "approve"})),
        )
        .await;
        assert_eq!(status, 200, "{decided}");
    }
    let (status, published) = call(&server, "GET", &post_path, None, None).await;
    assert_eq!(status, 200, "{published}");
    assert_eq!(published["published"], true);
    let (_, thread) = call(
        &server,
        "GET",
        &format!("/api/posts/{public_id}/replies"),
        None,
        None,
    )
    .await;
    assert_eq!(thread["replies"][0]["id"], reply_id.as_str(), "{thread}");
    let (_, public_now) = call(
        &server,
        "GET",
        &format!("/api/posts/{public_id}"),
        None,
        None,
    )
    .await;
    assert_eq!(public_now["reply_count"], 1);
    assert_eq!(
        notified(&server, &author.cookie, &held_id).await,
        ["moderation"]
    );
    assert_eq!(
        notified(&server, &author.cookie, &public_id).await,
        ["moderation"]
    );
    assert_eq!(
        notified(&server, &other.cookie, &held_id).await,
        ["mention"]
    );
    assert_eq!(
        notified(&server, &other.cookie, &public_id).await,
        ["reply"]
    );
    let (_, entries) = ask(
        &server,
        As::Token(&reader),
        "GET",
        "/api/v1/admin/audit-logs?action=post.moderate.approve",
        None,
    )
    .await;
    assert_eq!(
        entries["data"][0]["changes"]["status"]["before"], "pending",
        "{entries}"
    );
    assert_eq!(
        entries["data"][0]["changes"]["status"]["after"], "published",
        "{entries}"
    );
}

async fn a_new_accounts_first_writes_are_held_until_one_is_approved(backend: Backend) {
    let server = TestServer::start_with(backend, &[("PLAZA_NEW_ACCOUNT_HOLD_COUNT", "2")]).await;
    server.create_user("admin@example.com", PASSWORD, "admin");
    let writer = server.mint("admin@example.com", "admin:write");
    let moderator = Member::join(&server, "moderator@example.com", "moderator").await;
    let newcomer = Member::join(&server, "new@example.com", "user").await;
    let approved = Member::join(&server, "approved@example.com", "user").await;

    // Moderators are exempt.
    let (_, own) = write_post(&server, &moderator.cookie, "Rules", "read them").await;
    assert_eq!(own["status"], "published");
    let thread = own["id"].as_str().unwrap().to_owned();

    // The first two writes are held, the third publishes anyway.
    let (_, first) = write_post(&server, &newcomer.cookie, "Hi", "first post").await;
    assert_eq!(first["status"], "pending");
    let (_, second) = write_reply(&server, &newcomer.cookie, &thread, "first reply").await;
    assert_eq!(second["status"], "pending");
    let (_, third) = write_post(&server, &newcomer.cookie, "Again", "third write").await;
    assert_eq!(third["status"], "published");
    // A draft is no write to hold; publishing it counts from its creation.
    let (status, draft) = call(
        &server,
        "POST",
        "/api/posts",
        Some(&approved.cookie),
        Some(json!({"title": "Draft", "content": "later", "published": false})),
    )
    .await;
    assert_eq!(status, 201, "{draft}");
    assert_eq!(draft["status"], "draft");
    let draft_path = format!("/api/posts/{}", draft["id"].as_str().unwrap());
    let (_, draft) = call(
        &server,
        "PUT",
        &draft_path,
        Some(&approved.cookie),
        Some(json!({"published": true})),
    )
    .await;
    assert_eq!(draft["status"], "pending", "{draft}");

    // Once a moderator approves one, later writes publish directly.
    let (status, decided) = ask(
        &server,
        As::Token(&writer),
        "POST",
        &format!(
            "{}/moderate",
            draft_path.replace("/api/posts", "/api/v1/admin/posts")
        ),
        Some(json!({"action": "approve"})),
    )
    .await;
    assert_eq!(status, 200, "{decided}");
    let (_, next) = write_reply(&server, &approved.cookie, &thread, "after approval").await;
    assert_eq!(next["status"], "published", "{next}");
}

async fn a_filter_added_on_one_instance_is_in_force_on_another_within_five_seconds() {
    let backend = Backend::Postgres;
    let first = TestServer::start(backend).await;
    let second = TestServer::start_with(
        backend,
        &[("PLAZA_DATABASE_URL", first.database_url.as_str())],
    )
    .await;
    first.create_user("admin@example.com", PASSWORD, "admin");
    let writer = first.mint("admin@example.com", "admin:write");
    let deleter = first.mint("admin@example.com", "admin:delete");
    let member = Member::join(&first, "member@example.com", "user").await;
    // `first` has just read the filters (none).
    let (status, _) = write_post(&first, &member.cookie, "Hello", "lottery").await;
    assert_eq!(status, 201);

    let id = filter(
        &second,
        &writer,
        json!({"phrase": "lottery", "action": "block"}),
    )
    .await;
    let added_at = Instant::now();
    loop {
        let (status, answer) = write_post(&first, &member.cookie, "Hello", "l0ttery").await;
        if status == 422 {
            assert_eq!(fields(&answer), ["content"], "{answer}");
            break;
        }
        assert_eq!(status, 201, "{answer}");
        assert!(
            added_at.elapsed() < Duration::from_secs(5),
            "the other instance still takes the phrase after 5 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let (status, _) = ask(
        &second,
        As::Token(&deleter),
        "DELETE",
        &format!("/api/v1/admin/word-filters/{id}"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let removed_at = Instant::now();
    loop {
        let (status, _) = write_post(&first, &member.cookie, "Hello", "lottery").await;
        if status == 201 {
            break;
        }
        assert!(
            removed_at.elapsed() < Duration::from_secs(5),
            "the other instance still refuses the phrase after 5 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
