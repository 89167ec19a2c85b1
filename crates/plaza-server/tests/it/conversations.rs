//! Conversations (DECISIONS.md "Conversations (round 5)") through HTTP:
//! replies in thread order and newest first, subtrees, cursors walked
//! while replies are added, who sees held and deleted replies,
//! placeholders, locked threads, reports with categories, the moderators'
//! reply list and decisions with their audit entries, exact counts under
//! concurrent writes, the statements a page costs, and the cached public
//! answers following replies.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use crate::common::actors::Member;
use crate::common::{As, Backend, PASSWORD, TestServer, call, post};

on_both_databases!(
    threads_read_depth_first_with_sort_and_subtrees,
    walking_the_cursors_returns_each_reply_once_while_replies_are_added,
    held_and_deleted_replies_are_seen_by_whom_the_rules_say,
    deleted_replies_leave_placeholders_while_replies_are_below,
    locked_posts_and_posts_out_of_view_take_no_replies,
    replies_are_reported_once_with_a_category,
    moderators_list_and_moderate_replies_with_audit_entries,
    concurrent_replies_are_counted_exactly,
    a_thread_page_runs_the_same_statements_for_10_and_100_replies,
    a_thread_page_reads_one_index_range,
    a_reply_changes_the_cached_answers_about_its_post,
    an_anonymous_thread_page_is_kept_until_the_content_changes,
    a_members_thread_page_lays_their_own_part_over_the_public_page,
    replies_are_edited_by_their_author_only,
    replies_are_found_by_search_where_their_thread_is_seen,
    the_export_holds_replies_and_erasure_leaves_placeholders,
    seeded_replies_read_and_take_answers_as_written_ones,
);

/// Answers `post_id` (or the reply `parent`) as `cookie`: the new reply.
async fn reply(
    server: &TestServer,
    cookie: &str,
    post_id: &str,
    parent: Option<&str>,
    content: &str,
) -> Value {
    let (status, body) = call(
        server,
        "POST",
        &format!("/api/posts/{post_id}/replies"),
        Some(cookie),
        Some(json!({"content": content, "parent_id": parent})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    body
}

/// A plain post of `author`'s for a thread to grow under: its id.
async fn thread_post(server: &TestServer, author: &Member) -> String {
    post(
        server,
        &author.cookie,
        json!({"title": "T", "content": "c"}),
    )
    .await
}

/// [`reply`]'s id.
async fn reply_id(
    server: &TestServer,
    cookie: &str,
    post_id: &str,
    parent: Option<&str>,
    content: &str,
) -> String {
    reply(server, cookie, post_id, parent, content).await["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

/// One page of a thread as `who` sees it.
async fn page(server: &TestServer, who: Option<&str>, post_id: &str, query: &str) -> Value {
    let (status, body) = call(
        server,
        "GET",
        &format!("/api/posts/{post_id}/replies?{query}"),
        who,
        None,
    )
    .await;
    assert_eq!(status, 200, "{query}: {body}");
    body
}

/// The ids of a page, in order.
fn ids(page: &Value) -> Vec<String> {
    page["replies"]
        .as_array()
        .expect("replies")
        .iter()
        .map(|reply| reply["id"].as_str().expect("id").to_owned())
        .collect()
}

/// The contents of a page, in order.
fn contents(page: &Value) -> Vec<String> {
    page["replies"]
        .as_array()
        .expect("replies")
        .iter()
        .map(|reply| reply["content"].as_str().expect("content").to_owned())
        .collect()
}

/// Every page of a walk as `who`, `limit` at a time: the contents in order.
async fn walk(
    server: &TestServer,
    who: Option<&str>,
    post_id: &str,
    query: &str,
    limit: usize,
) -> Vec<String> {
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let cursor_query = cursor
            .as_ref()
            .map(|cursor| format!("&cursor={cursor}"))
            .unwrap_or_default();
        let body = page(
            server,
            who,
            post_id,
            &format!("limit={limit}{query}{cursor_query}"),
        )
        .await;
        seen.extend(contents(&body));
        match body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return seen,
        }
    }
}

async fn moderate_reply(
    server: &TestServer,
    token: &str,
    reply_id: &str,
    body: Value,
) -> (u16, Value) {
    let response = server
        .send(
            As::Token(token),
            "POST",
            &format!("/api/v1/admin/replies/{reply_id}/moderate"),
            Some(&body),
        )
        .await;
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON"))
}

async fn moderate_post(
    server: &TestServer,
    token: &str,
    post_id: &str,
    body: Value,
) -> (u16, Value) {
    let response = server
        .send(
            As::Token(token),
            "POST",
            &format!("/api/v1/admin/posts/{post_id}/moderate"),
            Some(&body),
        )
        .await;
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON"))
}

/// The post as `who` sees it.
async fn post_of(server: &TestServer, who: Option<&str>, post_id: &str) -> Value {
    let (status, body) = call(server, "GET", &format!("/api/posts/{post_id}"), who, None).await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn threads_read_depth_first_with_sort_and_subtrees(backend: Backend) {
    let server = TestServer::start(backend).await;
    let author = Member::join(&server, "author@example.com", "user").await;
    let other = Member::join(&server, "other@example.com", "user").await;
    let post_id = thread_post(&server, &author).await;
    let (a, b) = (&author.cookie, &other.cookie);
    let r1 = reply_id(&server, a, &post_id, None, "1").await;
    let r2 = reply_id(&server, b, &post_id, None, "2").await;
    let r1a = reply_id(&server, b, &post_id, Some(&r1), "1a").await;
    let r1b = reply_id(&server, a, &post_id, Some(&r1), "1b").await;
    let r1a1 = reply_id(&server, a, &post_id, Some(&r1a), "1a1").await;
    reply_id(&server, b, &post_id, None, "3").await;
    let deep = reply(&server, b, &post_id, Some(&r1a1), "1a1a").await;
    reply_id(&server, a, &post_id, Some(&r2), "2a").await;
    let r1c = reply_id(&server, b, &post_id, Some(&r1), "1c").await;
    assert_eq!(deep["depth"], 3);
    assert_eq!(deep["parent_id"], json!(r1a1));
    assert_eq!(deep["post_id"], json!(post_id));
    assert_eq!(deep["author"]["username"], "other");
    assert_eq!(deep["author"]["is_bot"], false);
    assert!(deep["author"]["avatar_url"].as_str().is_some());
    assert_eq!(deep["reactions"], json!({}));
    assert_eq!(deep["my_reactions"], json!([]));
    assert_eq!(deep["mentions"], json!([]));
    assert_eq!(deep["edited_at"], Value::Null);
    assert_eq!(deep["status"], "published");

    let thread = page(&server, None, &post_id, "").await;
    assert_eq!(
        contents(&thread),
        ["1", "1a", "1a1", "1a1a", "1b", "1c", "2", "2a", "3"],
        "depth first, siblings oldest first"
    );
    assert_eq!(thread["total"], 9);
    assert_eq!(thread["next_cursor"], Value::Null);
    let depths: Vec<i64> = thread["replies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|reply| reply["depth"].as_i64().unwrap())
        .collect();
    assert_eq!(depths, [0, 1, 2, 3, 1, 1, 0, 1, 0]);
    let counts: Vec<i64> = thread["replies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|reply| reply["reply_count"].as_i64().unwrap())
        .collect();
    assert_eq!(counts, [5, 2, 1, 0, 0, 0, 1, 0, 0]);
    assert_eq!(post_of(&server, None, &post_id).await["reply_count"], 9);
    assert_eq!(post_of(&server, None, &post_id).await["locked"], false);

    let newest = page(&server, None, &post_id, "sort=newest").await;
    assert_eq!(
        contents(&newest),
        ["3", "2", "2a", "1", "1a", "1a1", "1a1a", "1b", "1c"],
        "newest answers first, subtrees in thread order"
    );
    assert_eq!(newest["total"], 9);
    assert_eq!(
        contents(&page(&server, None, &post_id, "sort=oldest").await),
        contents(&thread)
    );

    let subtree = page(&server, None, &post_id, &format!("parent_id={r1}")).await;
    assert_eq!(contents(&subtree), ["1a", "1a1", "1a1a", "1b", "1c"]);
    assert_eq!(subtree["total"], 5);
    let subtree = page(
        &server,
        None,
        &post_id,
        &format!("parent_id={r1a}&sort=newest"),
    )
    .await;
    assert_eq!(contents(&subtree), ["1a1", "1a1a"]);
    assert_eq!(subtree["total"], 2);
    let leaf = page(&server, None, &post_id, &format!("parent_id={r1c}")).await;
    assert_eq!(leaf["replies"], json!([]));
    assert_eq!(leaf["total"], 0);
    assert_eq!(
        walk(&server, None, &post_id, &format!("&parent_id={r1}"), 2).await,
        ["1a", "1a1", "1a1a", "1b", "1c"]
    );
    assert_eq!(
        ids(&page(&server, None, &post_id, &format!("parent_id={r1b}")).await),
        Vec::<String>::new()
    );

    // More answers to one parent than a one-character rank holds still
    // come oldest first.
    let crowded = post(
        &server,
        &author.cookie,
        json!({"title": "Crowded", "content": "c"}),
    )
    .await;
    let names: Vec<String> = (0..30).map(|n| format!("{n:02}")).collect();
    for name in &names {
        reply_id(&server, a, &crowded, None, name).await;
    }
    assert_eq!(walk(&server, None, &crowded, "", 7).await, names);
    let mut reversed = names.clone();
    reversed.reverse();
    assert_eq!(
        walk(&server, None, &crowded, "&sort=newest", 7).await,
        reversed
    );

    for (query, field) in [
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("limit=x", "limit"),
        ("sort=top", "sort"),
        ("cursor=%%%", "cursor"),
        ("cursor=bm9wZQ", "cursor"),
        ("parent_id=abc", "parent_id"),
        ("parent_id=999999", "parent_id"),
    ] {
        let (status, body) = call(
            &server,
            "GET",
            &format!("/api/posts/{post_id}/replies?{query}"),
            None,
            None,
        )
        .await;
        assert_eq!(status, 422, "{query}: {body}");
        assert_eq!(body["error"]["details"]["field"], field, "{query}: {body}");
    }
    // A subtree of another post's reply, and a cursor of the other order.
    let elsewhere = reply_id(&server, a, &crowded, None, "elsewhere").await;
    let (status, _) = call(
        &server,
        "GET",
        &format!("/api/posts/{post_id}/replies?parent_id={elsewhere}"),
        None,
        None,
    )
    .await;
    assert_eq!(status, 422);
    let newest_cursor = page(&server, None, &crowded, "sort=newest&limit=2").await["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, _) = call(
        &server,
        "GET",
        &format!("/api/posts/{crowded}/replies?cursor={newest_cursor}"),
        None,
        None,
    )
    .await;
    assert_eq!(status, 422, "a newest-first cursor in thread order");
    let (status, body) = call(&server, "GET", "/api/posts/999999/replies", None, None).await;
    assert_eq!(status, 404, "{body}");
}

async fn walking_the_cursors_returns_each_reply_once_while_replies_are_added(backend: Backend) {
    let server = TestServer::start(backend).await;
    let author = Member::join(&server, "author@example.com", "user").await;
    let cookie = &author.cookie;
    let post_id = post(&server, cookie, json!({"title": "T", "content": "c"})).await;
    let mut ids_by_content = HashMap::new();
    let mut tops = Vec::new();
    for top in 0..12 {
        let id = reply_id(&server, cookie, &post_id, None, &format!("t{top}")).await;
        for child in 0..2 {
            let content = format!("t{top}c{child}");
            let child_id = reply_id(&server, cookie, &post_id, Some(&id), &content).await;
            ids_by_content.insert(content, child_id);
        }
        ids_by_content.insert(format!("t{top}"), id.clone());
        tops.push(id);
    }
    let before: HashSet<String> = ids_by_content.keys().cloned().collect();
    for sort in ["oldest", "newest"] {
        let mut seen: Vec<String> = Vec::new();
        let mut cursor: Option<String> = None;
        let mut added = 0;
        loop {
            let cursor_query = cursor
                .as_ref()
                .map(|cursor| format!("&cursor={cursor}"))
                .unwrap_or_default();
            let body = page(
                &server,
                None,
                &post_id,
                &format!("limit=5&sort={sort}{cursor_query}"),
            )
            .await;
            seen.extend(contents(&body));
            // Between pages, answers land before, at and after the
            // cursor: new answers to the post, to early and to late
            // replies, and below the last reply read.
            let last_read = ids_by_content[seen.last().expect("a page")].clone();
            for parent in [None, Some(&tops[0]), Some(&tops[11]), Some(&last_read)] {
                let content = format!("{sort}-new{added}");
                let id = reply_id(
                    &server,
                    cookie,
                    &post_id,
                    parent.map(String::as_str),
                    &content,
                )
                .await;
                ids_by_content.insert(content, id);
                added += 1;
            }
            match body["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => break,
            }
        }
        let mut counted: HashMap<&String, usize> = HashMap::new();
        for content in &seen {
            *counted.entry(content).or_default() += 1;
        }
        let repeated: Vec<_> = counted.iter().filter(|(_, n)| **n > 1).collect();
        assert!(repeated.is_empty(), "{sort}: returned twice: {repeated:?}");
        let missing: Vec<_> = before
            .iter()
            .filter(|content| !counted.contains_key(content))
            .collect();
        assert!(missing.is_empty(), "{sort}: never returned: {missing:?}");
        assert!(
            seen.len() > before.len(),
            "{sort}: some replies added meanwhile were read too"
        );
    }
}

/// Makes a freshly written reply (an answer to the post, nothing below
/// it) pending, as a held reply is stored: no route holds replies yet
/// (silenced members and word filters will), so the test moves the row and
/// the post's count itself.
async fn hold(server: &TestServer, post_id: &str, reply_id: &str) {
    server
        .sql(&format!(
            "UPDATE replies SET status = 'pending' WHERE id = {reply_id}"
        ))
        .await;
    server
        .sql(&format!(
            "UPDATE posts SET reply_count = reply_count - 1 WHERE id = {post_id}"
        ))
        .await;
}

async fn held_and_deleted_replies_are_seen_by_whom_the_rules_say(backend: Backend) {
    let server = TestServer::start(backend).await;
    let author = Member::join(&server, "author@example.com", "user").await;
    let writer = Member::join(&server, "writer@example.com", "user").await;
    let stranger = Member::join(&server, "stranger@example.com", "user").await;
    let moderator = Member::join(&server, "moderator@example.com", "moderator").await;
    server.create_user("root@example.com", PASSWORD, "super_admin");
    let token = server.mint("root@example.com", "admin:super");
    let post_id = thread_post(&server, &author).await;
    let w = &writer.cookie;
    let shown = reply_id(&server, w, &post_id, None, "shown").await;
    let pending = reply_id(&server, w, &post_id, None, "pending").await;
    hold(&server, &post_id, &pending).await;
    let hidden = reply_id(&server, w, &post_id, None, "hidden").await;
    let (status, body) = moderate_reply(&server, &token, &hidden, json!({"action": "hide"})).await;
    assert_eq!(status, 200, "{body}");
    let flagged = reply_id(&server, w, &post_id, None, "flagged").await;
    let (status, body) = moderate_reply(&server, &token, &flagged, json!({"action": "flag"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "flagged");

    let everyone = ["shown", "flagged"];
    let own = ["shown", "pending", "hidden", "flagged"];
    for (who, expected) in [
        (None, &everyone[..]),
        (Some(stranger.cookie.as_str()), &everyone[..]),
        (Some(author.cookie.as_str()), &everyone[..]),
        (Some(w.as_str()), &own[..]),
        (Some(moderator.cookie.as_str()), &own[..]),
    ] {
        let thread = page(&server, who, &post_id, "").await;
        assert_eq!(contents(&thread), expected, "{who:?}");
        assert_eq!(thread["total"], expected.len(), "{who:?}");
        for (id, visible) in [
            (&shown, true),
            (&flagged, true),
            (&pending, expected.len() == 4),
            (&hidden, expected.len() == 4),
        ] {
            let (status, body) =
                call(&server, "GET", &format!("/api/replies/{id}"), who, None).await;
            assert_eq!(
                status,
                if visible { 200 } else { 404 },
                "{who:?} {id}: {body}"
            );
        }
    }
    assert_eq!(
        post_of(&server, None, &post_id).await["reply_count"],
        2,
        "visible replies"
    );

    // A hidden post's replies are its author's and moderators' to see.
    let (status, body) = moderate_post(&server, &token, &post_id, json!({"action": "hide"})).await;
    assert_eq!(status, 200, "{body}");
    for (who, status) in [
        (None, 404),
        (Some(w.as_str()), 404),
        (Some(author.cookie.as_str()), 200),
        (Some(moderator.cookie.as_str()), 200),
    ] {
        let (answered, _) = call(
            &server,
            "GET",
            &format!("/api/posts/{post_id}/replies"),
            who,
            None,
        )
        .await;
        assert_eq!(answered, status, "{who:?}");
        let (answered, _) = call(&server, "GET", &format!("/api/replies/{shown}"), who, None).await;
        assert_eq!(answered, status, "{who:?}");
    }

    // Approving a held reply counts it.
    let (status, _) = moderate_post(&server, &token, &post_id, json!({"action": "approve"})).await;
    assert_eq!(status, 200);
    let (status, body) =
        moderate_reply(&server, &token, &pending, json!({"action": "approve"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "published");
    assert_eq!(post_of(&server, None, &post_id).await["reply_count"], 3);
}

async fn deleted_replies_leave_placeholders_while_replies_are_below(backend: Backend) {
    let server = TestServer::start(backend).await;
    let author = Member::join(&server, "author@example.com", "user").await;
    let other = Member::join(&server, "other@example.com", "user").await;
    let moderator = Member::join(&server, "moderator@example.com", "moderator").await;
    let post_id = thread_post(&server, &author).await;
    let (a, b) = (&author.cookie, &other.cookie);
    let parent = reply_id(&server, a, &post_id, None, "parent").await;
    let child = reply_id(&server, b, &post_id, Some(&parent), "child").await;
    let leaf = reply_id(&server, a, &post_id, None, "leaf").await;

    let (status, _) = call(
        &server,
        "DELETE",
        &format!("/api/replies/{parent}"),
        Some(b),
        None,
    )
    .await;
    assert_eq!(status, 403, "someone else's reply");
    let (status, _) = call(
        &server,
        "DELETE",
        &format!("/api/replies/{parent}"),
        None,
        None,
    )
    .await;
    assert_eq!(status, 401);
    let (status, _) = call(
        &server,
        "DELETE",
        &format!("/api/replies/{parent}"),
        Some(a),
        None,
    )
    .await;
    assert_eq!(status, 204);
    let (status, placeholder) = call(
        &server,
        "GET",
        &format!("/api/replies/{parent}"),
        None,
        None,
    )
    .await;
    assert_eq!(status, 200, "{placeholder}");
    assert_eq!(placeholder["status"], "deleted");
    assert_eq!(placeholder["content"], "");
    assert_eq!(placeholder["author"], Value::Null);
    assert_eq!(placeholder["reply_count"], 1);
    let thread = page(&server, None, &post_id, "").await;
    assert_eq!(contents(&thread), ["", "child", "leaf"]);
    assert_eq!(thread["total"], 3, "placeholders count in the total");
    assert_eq!(
        post_of(&server, None, &post_id).await["reply_count"],
        2,
        "but not in reply_count"
    );
    for method in ["PUT", "DELETE"] {
        let (status, _) = call(
            &server,
            method,
            &format!("/api/replies/{parent}"),
            Some(&moderator.cookie),
            Some(json!({"content": "again"})),
        )
        .await;
        assert_eq!(status, 404, "{method} of a placeholder");
    }
    let (status, _) = call(
        &server,
        "POST",
        &format!("/api/posts/{post_id}/replies"),
        Some(b),
        Some(json!({"content": "to a placeholder", "parent_id": parent})),
    )
    .await;
    assert_eq!(status, 422, "a placeholder takes no answers");

    // A moderator deletes the last reply below: the placeholder goes too.
    let (status, _) = call(
        &server,
        "DELETE",
        &format!("/api/replies/{child}"),
        Some(&moderator.cookie),
        None,
    )
    .await;
    assert_eq!(status, 204);
    for gone in [&parent, &child] {
        let (status, _) = call(&server, "GET", &format!("/api/replies/{gone}"), None, None).await;
        assert_eq!(status, 404);
    }
    let thread = page(&server, None, &post_id, "").await;
    assert_eq!(contents(&thread), ["leaf"]);
    assert_eq!(thread["total"], 1);
    server.create_user("root@example.com", PASSWORD, "super_admin");
    let token = server.mint("root@example.com", "admin:read");
    let response = server
        .send(
            As::Token(&token),
            "GET",
            "/api/v1/admin/audit-logs?action=reply.delete",
            None,
        )
        .await;
    let audit: Value = response.json().await.unwrap();
    assert_eq!(audit["data"].as_array().map(Vec::len), Some(1), "{audit}");
    assert_eq!(audit["data"][0]["targetId"], json!(child));

    // Deleting a post deletes its replies.
    let (status, _) = call(
        &server,
        "DELETE",
        &format!("/api/posts/{post_id}"),
        Some(a),
        None,
    )
    .await;
    assert_eq!(status, 204);
    let (status, _) = call(&server, "GET", &format!("/api/replies/{leaf}"), None, None).await;
    assert_eq!(status, 404);
    assert_eq!(server.sql_count("SELECT COUNT(*) FROM replies").await, 0);
}

async fn locked_posts_and_posts_out_of_view_take_no_replies(backend: Backend) {
    let server = TestServer::start(backend).await;
    let author = Member::join(&server, "author@example.com", "user").await;
    let other = Member::join(&server, "other@example.com", "user").await;
    server.create_user("root@example.com", PASSWORD, "super_admin");
    let token = server.mint("root@example.com", "admin:super");
    let post_id = thread_post(&server, &author).await;
    let first = reply_id(&server, &other.cookie, &post_id, None, "first").await;

    let (status, body) = moderate_post(
        &server,
        &token,
        &post_id,
        json!({"action": "lock", "reason": "heated"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["locked"], true);
    assert_eq!(post_of(&server, None, &post_id).await["locked"], true);
    for parent in [None, Some(first.as_str())] {
        let (status, body) = call(
            &server,
            "POST",
            &format!("/api/posts/{post_id}/replies"),
            Some(&author.cookie),
            Some(json!({"content": "more", "parent_id": parent})),
        )
        .await;
        assert_eq!(status, 409, "{body}");
        assert_eq!(body["error"]["code"], "CONFLICT");
    }
    let (status, body) = moderate_post(&server, &token, &post_id, json!({"action": "lock"})).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "INVALID_TRANSITION");
    let (status, body) =
        moderate_post(&server, &token, &post_id, json!({"action": "unlock"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["locked"], false);
    reply_id(&server, &other.cookie, &post_id, Some(&first), "after").await;
    let response = server
        .send(
            As::Token(&token),
            "GET",
            "/api/v1/admin/audit-logs?action=post.moderate.lock",
            None,
        )
        .await;
    let audit: Value = response.json().await.unwrap();
    assert_eq!(audit["data"].as_array().map(Vec::len), Some(1), "{audit}");
    assert_eq!(
        audit["data"][0]["changes"]["locked"],
        json!({"before": false, "after": true})
    );
    assert_eq!(audit["data"][0]["changes"]["reason"], "heated");

    // A draft takes no replies, even its author's; to others it does not exist.
    let draft = post(
        &server,
        &author.cookie,
        json!({"title": "D", "content": "c", "published": false}),
    )
    .await;
    for (who, status) in [(&author.cookie, 409), (&other.cookie, 404)] {
        let (answered, body) = call(
            &server,
            "POST",
            &format!("/api/posts/{draft}/replies"),
            Some(who),
            Some(json!({"content": "x"})),
        )
        .await;
        assert_eq!(answered, status, "{body}");
    }
    let (status, _) = call(
        &server,
        "POST",
        &format!("/api/posts/{post_id}/replies"),
        None,
        Some(json!({"content": "x"})),
    )
    .await;
    assert_eq!(status, 401);
    for (body, field) in [
        (json!({"content": ""}), "content"),
        (json!({"content": "   "}), "content"),
        (json!({"content": "x".repeat(10_001)}), "content"),
        (json!({"content": "bell\u{7}"}), "content"),
        (json!({"content": "carriage\rreturn"}), "content"),
        (json!({"content": "x", "parent_id": "abc"}), "parent_id"),
        (json!({"content": "x", "parent_id": "999999"}), "parent_id"),
    ] {
        let (status, answer) = call(
            &server,
            "POST",
            &format!("/api/posts/{post_id}/replies"),
            Some(&other.cookie),
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, 422, "{body}: {answer}");
        assert_eq!(answer["error"]["details"]["field"], field, "{body}");
    }
    reply_id(&server, &other.cookie, &post_id, None, &"é".repeat(10_000)).await;
    reply_id(&server, &other.cookie, &post_id, None, "line\n\ttabbed").await;
}

async fn replies_are_reported_once_with_a_category(backend: Backend) {
    let server = TestServer::start(backend).await;
    let author = Member::join(&server, "author@example.com", "user").await;
    let reporter = Member::join(&server, "reporter@example.com", "user").await;
    let post_id = thread_post(&server, &author).await;
    let target = reply_id(&server, &author.cookie, &post_id, None, "rude").await;
    let path = format!("/api/replies/{target}/report");
    let r = Some(reporter.cookie.as_str());

    for (body, field) in [
        (json!({"reason": ""}), "reason"),
        (json!({"reason": "x", "category": "boring"}), "category"),
        (
            json!({"reason": "x", "category": "rule_violation", "rule_ids": ["1"]}),
            "rule_ids",
        ),
    ] {
        let (status, answer) = call(&server, "POST", &path, r, Some(body.clone())).await;
        assert_eq!(status, 422, "{body}: {answer}");
        assert_eq!(answer["error"]["details"]["field"], field);
    }
    let (status, report) = call(
        &server,
        "POST",
        &path,
        r,
        Some(json!({"reason": " Spam ", "category": "spam"})),
    )
    .await;
    assert_eq!(status, 201, "{report}");
    assert_eq!(report["reply_id"], json!(target));
    assert_eq!(report["category"], "spam");
    assert_eq!(report["reason"], "Spam");
    let (status, again) = call(&server, "POST", &path, r, Some(json!({"reason": "again"}))).await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(again["error"]["code"], "CONFLICT");
    let (status, _) = call(
        &server,
        "POST",
        &path,
        Some(&author.cookie),
        Some(json!({"reason": "mine"})),
    )
    .await;
    assert_eq!(status, 403, "one's own reply");
    let (status, _) = call(&server, "POST", &path, None, Some(json!({"reason": "x"}))).await;
    assert_eq!(status, 401);
    let (status, _) = call(
        &server,
        "POST",
        "/api/replies/999999/report",
        r,
        Some(json!({"reason": "x"})),
    )
    .await;
    assert_eq!(status, 404);

    // Posts take a category too; without one it is `other`.
    let (status, report) = call(
        &server,
        "POST",
        &format!("/api/posts/{post_id}/report"),
        r,
        Some(json!({"reason": "off topic", "category": "rule_violation", "rule_ids": []})),
    )
    .await;
    assert_eq!(status, 201, "{report}");
    assert_eq!(report["category"], "rule_violation");
    assert_eq!(report["post_id"], json!(post_id));
    let second = Member::join(&server, "second@example.com", "user").await;
    let (status, report) = call(
        &server,
        "POST",
        &format!("/api/posts/{post_id}/report"),
        Some(&second.cookie),
        Some(json!({"reason": "meh"})),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(report["category"], "other");
    server.create_user("root@example.com", PASSWORD, "super_admin");
    let token = server.mint("root@example.com", "admin:read");
    let response = server
        .send(
            As::Token(&token),
            "GET",
            "/api/v1/admin/posts?reported=true",
            None,
        )
        .await;
    let queue: Value = response.json().await.unwrap();
    let categories: Vec<&str> = queue["data"][0]["reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|report| report["category"].as_str().unwrap())
        .collect();
    assert_eq!(categories, ["rule_violation", "other"]);
}

async fn moderators_list_and_moderate_replies_with_audit_entries(backend: Backend) {
    let server = TestServer::start(backend).await;
    let author = Member::join(&server, "author@example.com", "user").await;
    let other = Member::join(&server, "other@example.com", "user").await;
    let member = Member::join(&server, "member@example.com", "user").await;
    server.create_user("root@example.com", PASSWORD, "super_admin");
    server.create_user("admin@example.com", PASSWORD, "admin");
    let token = server.mint("root@example.com", "admin:super");
    let write_token = server.mint("admin@example.com", "admin:write");
    let post_id = thread_post(&server, &author).await;
    let elsewhere = post(
        &server,
        &author.cookie,
        json!({"title": "E", "content": "c"}),
    )
    .await;
    let top = reply_id(&server, &author.cookie, &post_id, None, "top").await;
    let answer = reply_id(&server, &other.cookie, &post_id, Some(&top), "answer").await;
    let far = reply_id(&server, &other.cookie, &elsewhere, None, "far").await;
    let (status, _) = call(
        &server,
        "POST",
        &format!("/api/replies/{answer}/report"),
        Some(&member.cookie),
        Some(json!({"reason": "nasty", "category": "harassment"})),
    )
    .await;
    assert_eq!(status, 201);

    let list = |query: String| admin_list(&server, &token, query);
    let all = list(String::new()).await;
    assert_eq!(all["success"], true);
    assert_eq!(all["meta"]["pagination"]["total"], 3, "{all}");
    let listed: Vec<&str> = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed,
        [far.as_str(), answer.as_str(), top.as_str()],
        "newest first"
    );
    let item = &all["data"][1];
    assert_eq!(item["postId"], json!(post_id));
    assert_eq!(item["parentId"], json!(top));
    assert_eq!(item["content"], "answer");
    assert_eq!(
        item["author"],
        json!({"id": other.id.to_string(), "username": "other"})
    );
    assert_eq!(item["status"], "published");
    assert_eq!(item["reportCount"], 1);
    assert_eq!(item["reports"][0]["reason"], "nasty");
    assert_eq!(item["reports"][0]["category"], "harassment");
    assert_eq!(
        item["reports"][0]["reportedBy"],
        json!(member.id.to_string())
    );
    assert!(item["createdAt"].is_string() && item["updatedAt"].is_string());
    assert_eq!(
        list("?reported=true".into()).await["meta"]["pagination"]["total"],
        1
    );
    let by_post = list_ids(&list(format!("?postId={elsewhere}")).await);
    assert_eq!(by_post, [far.as_str()]);
    let by_author = list_ids(&list(format!("?authorId={}", author.id)).await);
    assert_eq!(by_author, [top.as_str()]);
    let response = server
        .send(
            As::Token(&token),
            "GET",
            "/api/v1/admin/replies?status=nope",
            None,
        )
        .await;
    assert_eq!(response.status(), 422);
    let response = server
        .send(
            As::Session(&member.cookie),
            "GET",
            "/api/v1/admin/replies",
            None,
        )
        .await;
    assert_eq!(response.status(), 401, "the versioned surface takes tokens");

    // Hide: the count loses it, its reports are resolved, one audit entry.
    let (status, body) = moderate_reply(
        &server,
        &token,
        &answer,
        json!({"action": "hide", "reason": "rude", "notifyAuthor": true}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "hidden");
    assert_eq!(post_of(&server, None, &post_id).await["reply_count"], 1);
    let (_, top_reply) = call(&server, "GET", &format!("/api/replies/{top}"), None, None).await;
    assert_eq!(top_reply["reply_count"], 0);
    assert_eq!(
        list("?status=hidden".into()).await["meta"]["pagination"]["total"],
        1
    );
    let (status, body) = moderate_reply(&server, &token, &answer, json!({"action": "hide"})).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "INVALID_TRANSITION");
    let (status, body) = moderate_reply(&server, &token, &answer, json!({"action": "lock"})).await;
    assert_eq!(status, 422, "{body}");
    let (status, _) = moderate_reply(&server, &token, "999999", json!({"action": "hide"})).await;
    assert_eq!(status, 404);
    let (status, body) =
        moderate_reply(&server, &token, &answer, json!({"action": "approve"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(post_of(&server, None, &post_id).await["reply_count"], 2);
    let (_, top_reply) = call(&server, "GET", &format!("/api/replies/{top}"), None, None).await;
    assert_eq!(top_reply["reply_count"], 1);
    let alerts = server.get_json_as("/api/alerts", &other.cookie).await;
    assert!(
        alerts.to_string().contains("Your reply was hidden"),
        "{alerts}"
    );

    // Deleting needs admin:delete; a reply with one below stays as a placeholder.
    let (status, body) =
        moderate_reply(&server, &write_token, &top, json!({"action": "delete"})).await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = moderate_reply(&server, &token, &top, json!({"action": "delete"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["deleted"], true);
    assert_eq!(body["data"]["placeholder"], true);
    let (status, body) = moderate_reply(&server, &token, &far, json!({"action": "delete"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["placeholder"], false);
    assert_eq!(post_of(&server, None, &post_id).await["reply_count"], 1);
    assert_eq!(post_of(&server, None, &elsewhere).await["reply_count"], 0);
    let thread = page(&server, None, &post_id, "").await;
    assert_eq!(contents(&thread), ["", "answer"]);

    let response = server
        .send(
            As::Token(&token),
            "GET",
            "/api/v1/admin/audit-logs?action=reply.moderate",
            None,
        )
        .await;
    let audit: Value = response.json().await.unwrap();
    let entries = audit["data"].as_array().expect("entries");
    assert_eq!(
        entries.len(),
        4,
        "hide, approve, two deletes; refusals none: {audit}"
    );
    let actions: HashSet<&str> = entries
        .iter()
        .map(|entry| entry["changes"]["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, HashSet::from(["hide", "approve", "delete"]));
    let hide = entries
        .iter()
        .find(|entry| entry["changes"]["action"] == "hide")
        .unwrap();
    assert_eq!(hide["targetType"], "reply");
    assert_eq!(hide["targetId"], json!(answer));
    assert_eq!(
        hide["changes"]["status"],
        json!({"before": "published", "after": "hidden"})
    );
    assert_eq!(hide["changes"]["reportsResolved"], 1);
    assert_eq!(hide["changes"]["reason"], "rude");
}

/// A page of the moderators' reply list.
async fn admin_list(server: &TestServer, token: &str, query: String) -> Value {
    let response = server
        .send(
            As::Token(token),
            "GET",
            &format!("/api/v1/admin/replies{query}"),
            None,
        )
        .await;
    assert_eq!(response.status(), 200, "{query}");
    response.json().await.expect("JSON")
}

fn list_ids(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|item| item["id"].as_str().expect("id").to_owned())
        .collect()
}

async fn concurrent_replies_are_counted_exactly(backend: Backend) {
    let server = TestServer::start(backend).await;
    let author = Member::join(&server, "author@example.com", "user").await;
    let post_id = thread_post(&server, &author).await;
    let root = reply_id(&server, &author.cookie, &post_id, None, "root").await;
    let mut members = Vec::new();
    for n in 0..10 {
        members.push(Member::join(&server, &format!("m{n}@example.com"), "user").await);
    }
    let writes = (0..50).map(|n| {
        let cookie = members[n % members.len()].cookie.clone();
        let (server, post_id) = (&server, post_id.clone());
        // Half answer the post, half the one reply.
        let parent = (n % 2 == 0).then(|| root.clone());
        async move {
            let (status, body) = call(
                server,
                "POST",
                &format!("/api/posts/{post_id}/replies"),
                Some(&cookie),
                Some(json!({"content": format!("r{n}"), "parent_id": parent})),
            )
            .await;
            assert_eq!(status, 201, "{body}");
        }
    });
    futures_util::future::join_all(writes).await;
    assert_eq!(post_of(&server, None, &post_id).await["reply_count"], 51);
    let (_, root_reply) = call(&server, "GET", &format!("/api/replies/{root}"), None, None).await;
    assert_eq!(root_reply["reply_count"], 25);
    let walked = walk(&server, None, &post_id, "", 100).await;
    assert_eq!(walked.len(), 51);
    assert_eq!(walked.iter().collect::<HashSet<_>>().len(), 51);
    // Answers to one parent come in arrival order, which is id order.
    let below = page(
        &server,
        None,
        &post_id,
        &format!("parent_id={root}&limit=100"),
    )
    .await;
    let below_ids: Vec<i64> = ids(&below).iter().map(|id| id.parse().unwrap()).collect();
    let mut sorted = below_ids.clone();
    sorted.sort_unstable();
    assert_eq!(below_ids, sorted);
}

async fn a_thread_page_runs_the_same_statements_for_10_and_100_replies(backend: Backend) {
    let server = TestServer::start_with_statement_log(backend).await;
    let author = Member::join(&server, "author@example.com", "user").await;
    let post_id = thread_post(&server, &author).await;
    let mut parent: Option<String> = None;
    for n in 0..120 {
        let id = reply_id(
            &server,
            &author.cookie,
            &post_id,
            parent.as_deref(),
            &format!("r{n}"),
        )
        .await;
        // Chains of three: every third reply answers the post.
        parent = (n % 3 != 2).then_some(id);
    }
    // A signed-in reader's relations (blocks, mutes, filters) are read on
    // their first request and kept while they do not change: read them
    // before counting.
    let warm = server
        .get_json_as(&format!("/api/posts/{post_id}/replies"), &author.cookie)
        .await;
    assert!(warm["replies"].is_array(), "{warm}");
    let mut statements = Vec::new();
    for (round, (limit, who)) in [
        (10, None),
        (100, None),
        (10, Some(&author.cookie)),
        (100, Some(&author.cookie)),
    ]
    .into_iter()
    .enumerate()
    {
        let request_id = format!("thread-statements-{round}");
        let answered = server.log_count("answered");
        let mut request = server
            .client
            .get(server.url(&format!("/api/posts/{post_id}/replies?limit={limit}")))
            .header("x-request-id", &request_id);
        if let Some(cookie) = who {
            request = request.header("cookie", cookie.as_str());
        }
        let response = request.send().await.expect("request");
        assert_eq!(response.status(), 200);
        let body: Value = response.json().await.expect("json");
        assert_eq!(body["replies"].as_array().map(Vec::len), Some(limit));
        server.wait_for_log_count("answered", answered + 1);
        let span = format!("request_id=\"{request_id}\"");
        statements.push(
            server
                .logs()
                .lines()
                // The answer cache's probe of the content generation runs
                // when its last confirmation is over a second old: not the
                // page's own.
                .filter(|line| {
                    line.contains(&span)
                        && line.contains("sqlx::query")
                        && !line.contains("content_generation")
                })
                .count(),
        );
    }
    assert!(
        statements[0] > 0,
        "the statement log is read: {statements:?}"
    );
    assert_eq!(
        statements[0], statements[1],
        "10 vs 100 replies: {statements:?}"
    );
    assert_eq!(
        statements[2], statements[3],
        "10 vs 100 replies: {statements:?}"
    );
    assert!(statements[3] <= 6, "a handful per page: {statements:?}");
}

async fn a_thread_page_reads_one_index_range(backend: Backend) {
    use plaza_domain::posts::Viewer;
    use plaza_domain::replies::{ThreadQuery, ThreadSort};
    let server = TestServer::start(backend).await;
    let author = Member::join(&server, "author@example.com", "user").await;
    let post_id = thread_post(&server, &author).await;
    let root = reply_id(&server, &author.cookie, &post_id, None, "root").await;
    let db = server.domain().await;
    let below = db.reply_by_id(root.parse().unwrap()).await.unwrap();
    for (sort, index) in [
        (ThreadSort::Oldest, "replies_thread"),
        (ThreadSort::Newest, "replies_newest"),
    ] {
        for below in [None, Some(below.clone())] {
            for viewer in [
                Viewer::Anonymous,
                Viewer::Member(author.id),
                Viewer::Moderator(1),
            ] {
                let query = ThreadQuery {
                    post_id: post_id.parse().unwrap(),
                    below: below.clone(),
                    sort,
                    limit: 50,
                    after: None,
                };
                let plan = db
                    .explain_thread_page(&query, viewer)
                    .await
                    .unwrap()
                    .join("\n");
                assert!(plan.contains(index), "{sort:?} {viewer:?}: {plan}");
                // The page's few rows are ordered again inside the JSON
                // aggregate; the range itself is read in index order.
                let sorts_the_range = plan.contains("TEMP B-TREE FOR ORDER BY")
                    || plan.lines().any(|line| {
                        line.trim_start()
                            .trim_start_matches("->  ")
                            .starts_with("Sort")
                    });
                assert!(
                    !sorts_the_range,
                    "{sort:?} {viewer:?}: no sort step: {plan}"
                );
                assert!(
                    plan.contains("replies_out_of_view"),
                    "{sort:?} {viewer:?}: the total counts the partial index: {plan}"
                );
            }
        }
    }
}

async fn a_reply_changes_the_cached_answers_about_its_post(backend: Backend) {
    let server = TestServer::start(backend).await;
    let author = Member::join(&server, "author@example.com", "user").await;
    let post_id = thread_post(&server, &author).await;
    let front = server.get("/api/posts").await;
    let etag = front.headers()["etag"].to_str().unwrap().to_owned();
    let body: Value = front.json().await.unwrap();
    assert_eq!(body["posts"][0]["reply_count"], 0);
    assert_eq!(
        server.get("/api/posts").await.headers()["etag"]
            .to_str()
            .unwrap(),
        etag,
        "cached"
    );
    reply_id(&server, &author.cookie, &post_id, None, "hello").await;
    let response = server
        .client
        .get(server.url("/api/posts"))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "the old answer is not current");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["posts"][0]["reply_count"], 1);

    // The thread's own answer is tagged too.
    let first = server.get(&format!("/api/posts/{post_id}/replies")).await;
    let tag = first.headers()["etag"].to_str().unwrap().to_owned();
    let again = server
        .client
        .get(server.url(&format!("/api/posts/{post_id}/replies")))
        .header("if-none-match", &tag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    reply_id(&server, &author.cookie, &post_id, None, "again").await;
    let changed = server
        .client
        .get(server.url(&format!("/api/posts/{post_id}/replies")))
        .header("if-none-match", &tag)
        .send()
        .await
        .unwrap();
    assert_eq!(changed.status(), 200);
}

async fn an_anonymous_thread_page_is_kept_until_the_content_changes(backend: Backend) {
    let server = TestServer::start(backend).await;
    let author = Member::join(&server, "author@example.com", "user").await;
    let post_id = thread_post(&server, &author).await;
    let first = reply_id(&server, &author.cookie, &post_id, None, "hello").await;
    let path = format!("/api/posts/{post_id}/replies");
    let read: Value = server.get(&path).await.json().await.unwrap();
    assert_eq!(read["replies"][0]["reply_count"], 0);
    // A change the content generation does not count: the kept page stays.
    server
        .sql(&format!(
            "UPDATE replies SET reply_count = 5 WHERE id = {first}"
        ))
        .await;
    let kept: Value = server.get(&path).await.json().await.unwrap();
    assert_eq!(kept, read, "answered from the cache");
    let signed_in = server.get_json_as(&path, &author.cookie).await;
    assert_eq!(
        signed_in["replies"][0]["reply_count"], 5,
        "a member's page is laid over public data of its own, read now"
    );
    server
        .sql(&format!(
            "UPDATE replies SET reply_count = 7 WHERE id = {first}"
        ))
        .await;
    let kept = server.get_json_as(&path, &author.cookie).await;
    assert_eq!(kept, signed_in, "the public data is kept for members too");
    let response = server
        .client
        .get(server.url(&path))
        .header("cookie", &author.cookie)
        .header("cache-control", "no-cache")
        .send()
        .await
        .unwrap();
    let asked_fresh: Value = response.json().await.unwrap();
    assert_eq!(
        asked_fresh["replies"][0]["reply_count"], 7,
        "no-cache renders the member's page afresh"
    );
    reply_id(&server, &author.cookie, &post_id, None, "again").await;
    let fresh: Value = server.get(&path).await.json().await.unwrap();
    assert_eq!(fresh["total"], 2, "a new reply renews the page");
    assert_eq!(fresh["replies"][0]["reply_count"], 7);
}

async fn a_members_thread_page_lays_their_own_part_over_the_public_page(backend: Backend) {
    let server = TestServer::start_with_statement_log(backend).await;
    let author = Member::join(&server, "author@example.com", "user").await;
    let reader = Member::join(&server, "reader@example.com", "user").await;
    server.create_user("root@example.com", PASSWORD, "super_admin");
    let token = server.mint("root@example.com", "admin:super");
    let post_id = thread_post(&server, &author).await;
    let first = reply_id(&server, &author.cookie, &post_id, None, "first").await;
    let second = reply_id(&server, &author.cookie, &post_id, None, "second").await;
    for emoji in ["%F0%9F%8E%89", "%F0%9F%91%8D"] {
        let (status, body) = call(
            &server,
            "PUT",
            &format!("/api/replies/{second}/reactions/{emoji}"),
            Some(&reader.cookie),
            None,
        )
        .await;
        assert!(status == 200 || status == 204, "{status} {body}");
    }
    let path = format!("/api/posts/{post_id}/replies");
    let authors = server.get_json_as(&path, &author.cookie).await;
    assert_eq!(
        authors["replies"][1]["reactions"],
        json!({"🎉": 1, "👍": 1})
    );
    assert_eq!(authors["replies"][1]["my_reactions"], json!([]));
    let readers = server.get_json_as(&path, &reader.cookie).await;
    assert_eq!(
        readers["replies"][1]["reactions"],
        json!({"🎉": 1, "👍": 1})
    );
    assert_eq!(readers["replies"][1]["my_reactions"], json!(["🎉", "👍"]));
    let statements: Vec<String> = server
        .statements_of(&path, &reader.cookie, "members-page")
        .await
        .into_iter()
        // The answer cache's probe of the content generation: not the
        // page's own.
        .filter(|line| !line.contains("content_generation"))
        .collect();
    assert_eq!(
        statements.len(),
        1,
        "the public page is kept; the reader's own part is one statement: {statements:#?}"
    );

    // A reply only its author sees makes the author's pages their own.
    let (status, body) = moderate_reply(&server, &token, &first, json!({"action": "hide"})).await;
    assert_eq!(status, 200, "{body}");
    let authors = server.get_json_as(&path, &author.cookie).await;
    assert_eq!(contents(&authors), ["first", "second"]);
    assert_eq!(authors["replies"][0]["status"], "hidden");
    assert_eq!(authors["total"], 2);
    let readers = server.get_json_as(&path, &reader.cookie).await;
    assert_eq!(contents(&readers), ["second"]);
    assert_eq!(readers["total"], 1);
    assert_eq!(readers["replies"][0]["my_reactions"], json!(["🎉", "👍"]));
}

async fn replies_are_edited_by_their_author_only(backend: Backend) {
    let server = TestServer::start(backend).await;
    let author = Member::join(&server, "author@example.com", "user").await;
    let moderator = Member::join(&server, "moderator@example.com", "moderator").await;
    let post_id = thread_post(&server, &author).await;
    let id = reply_id(&server, &author.cookie, &post_id, None, "first").await;
    let path = format!("/api/replies/{id}");
    let (status, _) = call(
        &server,
        "PUT",
        &path,
        Some(&moderator.cookie),
        Some(json!({"content": "theirs"})),
    )
    .await;
    assert_eq!(status, 403);
    let (status, _) = call(
        &server,
        "PUT",
        &path,
        None,
        Some(json!({"content": "anyone"})),
    )
    .await;
    assert_eq!(status, 401);
    let (status, _) = call(
        &server,
        "PUT",
        &path,
        Some(&author.cookie),
        Some(json!({"content": ""})),
    )
    .await;
    assert_eq!(status, 422);
    let (status, edited) = call(
        &server,
        "PUT",
        &path,
        Some(&author.cookie),
        Some(json!({"content": "second"})),
    )
    .await;
    assert_eq!(status, 200, "{edited}");
    assert_eq!(edited["content"], "second");
    assert!(edited["edited_at"].is_string());
    let (status, _) = call(
        &server,
        "PUT",
        "/api/replies/999999",
        Some(&author.cookie),
        Some(json!({"content": "x"})),
    )
    .await;
    assert_eq!(status, 404);
    let profile = server
        .get_json_as(
            &format!("/api/users/{}/profile", author.id),
            &moderator.cookie,
        )
        .await;
    assert_eq!(profile["posts_count"], 1);
    assert_eq!(profile["replies_count"], 1);
}

/// A search as `who`: the results.
async fn search(server: &TestServer, who: Option<&str>, query: &str) -> Vec<Value> {
    let (status, body) = call(server, "GET", &format!("/api/search?{query}"), who, None).await;
    assert_eq!(status, 200, "{query}: {body}");
    body["results"].as_array().expect("results").clone()
}

async fn replies_are_found_by_search_where_their_thread_is_seen(backend: Backend) {
    let server = TestServer::start(backend).await;
    let author = Member::join(&server, "author@example.com", "user").await;
    let writer = Member::join(&server, "writer@example.com", "user").await;
    server.create_user("root@example.com", PASSWORD, "super_admin");
    let token = server.mint("root@example.com", "admin:super");
    let post_id = post(
        &server,
        &author.cookie,
        json!({"title": "Zebra sightings", "content": "c"}),
    )
    .await;
    let found = reply(
        &server,
        &writer.cookie,
        &post_id,
        None,
        "A zebra crossed <the> road",
    )
    .await;
    let hidden = reply_id(
        &server,
        &writer.cookie,
        &post_id,
        None,
        "zebra hidden later",
    )
    .await;
    let (status, _) = moderate_reply(&server, &token, &hidden, json!({"action": "hide"})).await;
    assert_eq!(status, 200);

    let results = search(&server, None, "q=zebra&type=reply").await;
    assert_eq!(results.len(), 1, "{results:?}");
    let result = &results[0];
    assert_eq!(result["type"], "reply");
    assert_eq!(result["id"], found["id"]);
    assert_eq!(result["post_id"], json!(post_id));
    assert_eq!(result["content"], "A zebra crossed <the> road");
    assert_eq!(
        result["highlight"],
        "A <mark>zebra</mark> crossed &lt;the&gt; road"
    );
    assert_eq!(result["created_at"], found["created_at"]);
    let own = search(&server, Some(&writer.cookie), "q=zebra&type=reply").await;
    assert_eq!(own.len(), 2, "the author finds their hidden reply");
    let types: HashSet<String> = search(&server, None, "q=zebra&type=all")
        .await
        .iter()
        .map(|result| result["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        types,
        HashSet::from(["post".to_owned(), "reply".to_owned()])
    );
    let (status, body) = call(
        &server,
        "GET",
        "/api/search?q=zebra&type=replyz",
        None,
        None,
    )
    .await;
    assert_eq!(status, 422, "{body}");

    // The cached anonymous answer follows new and edited replies.
    reply_id(&server, &author.cookie, &post_id, None, "another zebra").await;
    assert_eq!(search(&server, None, "q=zebra&type=reply").await.len(), 2);
    let (status, _) = call(
        &server,
        "PUT",
        &format!("/api/replies/{}", found["id"].as_str().unwrap()),
        Some(&writer.cookie),
        Some(json!({"content": "An okapi now"})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(search(&server, None, "q=zebra&type=reply").await.len(), 1);
    assert_eq!(search(&server, None, "q=okapi&type=reply").await.len(), 1);

    // A hidden post's replies are found by whom its thread is shown to.
    let (status, _) = moderate_post(&server, &token, &post_id, json!({"action": "hide"})).await;
    assert_eq!(status, 200);
    assert!(search(&server, None, "q=okapi&type=reply").await.is_empty());
    assert_eq!(
        search(&server, Some(&author.cookie), "q=okapi&type=reply")
            .await
            .len(),
        1
    );
}

fn unzip(bytes: &[u8]) -> HashMap<String, Value> {
    use std::io::Read;
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("a ZIP archive");
    let mut entries = HashMap::new();
    for index in 0..archive.len() {
        let mut file = archive.by_index(index).expect("an entry");
        let mut content = Vec::new();
        file.read_to_end(&mut content).expect("the entry reads");
        if let Ok(json) = serde_json::from_slice(&content) {
            entries.insert(file.name().to_owned(), json);
        }
    }
    entries
}

async fn the_export_holds_replies_and_erasure_leaves_placeholders(backend: Backend) {
    let server = TestServer::start(backend).await;
    let leaving = Member::join(&server, "leaving@example.com", "user").await;
    let staying = Member::join(&server, "staying@example.com", "user").await;
    let post_id = post(
        &server,
        &staying.cookie,
        json!({"title": "T", "content": "c"}),
    )
    .await;
    let answered = reply_id(&server, &leaving.cookie, &post_id, None, "answered").await;
    let answer = reply_id(
        &server,
        &staying.cookie,
        &post_id,
        Some(&answered),
        "answer",
    )
    .await;
    let alone = reply_id(&server, &leaving.cookie, &post_id, None, "alone").await;
    let own_chain = reply_id(&server, &leaving.cookie, &post_id, None, "own chain").await;
    reply_id(
        &server,
        &leaving.cookie,
        &post_id,
        Some(&own_chain),
        "own answer",
    )
    .await;
    let (status, _) = call(
        &server,
        "POST",
        &format!("/api/replies/{answer}/report"),
        Some(&leaving.cookie),
        Some(json!({"reason": "off", "category": "spam"})),
    )
    .await;
    assert_eq!(status, 201);
    let response = server
        .send(
            leaving.session(),
            "GET",
            &format!("/api/users/{}/export", leaving.id),
            None,
        )
        .await;
    assert_eq!(response.status(), 200);
    let entries = unzip(&response.bytes().await.unwrap());
    let replies = entries["replies.json"]
        .as_array()
        .expect("replies.json")
        .clone();
    let written: Vec<&str> = replies
        .iter()
        .map(|reply| reply["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        written,
        ["answered", "alone", "own chain", "own answer"],
        "theirs only"
    );
    assert_eq!(replies[0]["postId"], json!(post_id));
    assert_eq!(replies[0]["status"], "published");
    let reports = entries["reports.json"].as_array().expect("reports.json");
    assert_eq!(reports[0]["replyId"], json!(answer));
    assert_eq!(reports[0]["category"], "spam");

    let (status, body) = call(
        &server,
        "DELETE",
        &format!("/api/users/{}", leaving.id),
        Some(&leaving.cookie),
        None,
    )
    .await;
    assert_eq!(status, 204, "{body}");
    let thread = page(&server, None, &post_id, "").await;
    assert_eq!(
        contents(&thread),
        ["", "answer"],
        "a placeholder above another's reply, the rest gone"
    );
    assert_eq!(thread["replies"][0]["author"], Value::Null);
    assert_eq!(thread["total"], 2);
    assert_eq!(post_of(&server, None, &post_id).await["reply_count"], 1);
    for gone in [&alone, &own_chain] {
        let (status, _) = call(&server, "GET", &format!("/api/replies/{gone}"), None, None).await;
        assert_eq!(status, 404);
    }
    assert_eq!(
        server
            .sql_count(&format!(
                "SELECT COUNT(*) FROM replies WHERE author_id = {} OR content LIKE 'own%'",
                leaving.id
            ))
            .await,
        0
    );
}

/// `plaza dev seed --replies` (the conversation benchmarks' data) writes
/// threads the write path could have written: walked by cursor, the large
/// thread holds every reply once, each after its parent and no deeper than
/// 20 levels, with counts that match what is below; a reply written after
/// the seed takes the next rank.
async fn seeded_replies_read_and_take_answers_as_written_ones(backend: Backend) {
    let server = TestServer::start(backend).await;
    let seeded = server.cli(&[
        "dev",
        "seed",
        "--users",
        "30",
        "--posts",
        "40",
        "--replies",
        "900",
        "--thread-replies",
        "600",
    ]);
    let said = String::from_utf8_lossy(&seeded.stdout);
    assert!(seeded.status.success(), "{said}");
    let post_id = said
        .split("in the thread of post ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .expect("the thread's post")
        .to_owned();

    let mut walked: Vec<Value> = Vec::new();
    let mut query = "limit=100".to_owned();
    loop {
        let body = page(&server, None, &post_id, &query).await;
        assert_eq!(body["total"], json!(600), "{body}");
        walked.extend(body["replies"].as_array().unwrap().iter().cloned());
        match body["next_cursor"].as_str() {
            Some(cursor) => query = format!("limit=100&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(walked.len(), 600);
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut below: HashMap<String, i64> = HashMap::new();
    for (at, reply) in walked.iter().enumerate() {
        let id = reply["id"].as_str().unwrap().to_owned();
        let depth = reply["depth"].as_i64().unwrap();
        assert!(depth < 20, "{reply}");
        let mut parent = reply["parent_id"].as_str().map(str::to_owned);
        if let Some(parent_id) = &parent {
            let parent_at = seen[parent_id];
            assert_eq!(walked[parent_at]["depth"].as_i64().unwrap() + 1, depth);
        } else {
            assert_eq!(depth, 0);
        }
        while let Some(ancestor) = parent {
            *below.entry(ancestor.clone()).or_default() += 1;
            parent = walked[seen[&ancestor]]["parent_id"]
                .as_str()
                .map(str::to_owned);
        }
        assert!(seen.insert(id, at).is_none(), "once");
    }
    assert!(walked.iter().any(|reply| reply["depth"].as_i64() > Some(3)));
    for reply in &walked {
        let id = reply["id"].as_str().unwrap();
        assert_eq!(
            reply["reply_count"].as_i64(),
            Some(below.get(id).copied().unwrap_or(0)),
            "{reply}"
        );
    }

    let member = Member::join(&server, "ada@example.com", "user").await;
    let first = walked[0]["id"].as_str().unwrap();
    let answer = reply_id(&server, &member.cookie, &post_id, Some(first), "late").await;
    let mut rewalked: Vec<String> = Vec::new();
    let mut query = "limit=100".to_owned();
    loop {
        let body = page(&server, None, &post_id, &query).await;
        assert_eq!(body["total"], json!(601), "{body}");
        rewalked.extend(
            body["replies"]
                .as_array()
                .unwrap()
                .iter()
                .map(|reply| reply["id"].as_str().unwrap().to_owned()),
        );
        match body["next_cursor"].as_str() {
            Some(cursor) => query = format!("limit=100&cursor={cursor}"),
            None => break,
        }
    }
    // The newest answer to the first reply comes right after its subtree.
    let expected = below.get(first).copied().unwrap_or(0) as usize + 1;
    assert_eq!(rewalked.get(expected), Some(&answer), "{rewalked:?}");
}
