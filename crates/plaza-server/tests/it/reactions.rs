//! Reactions and mentions (DECISIONS.md "Conversations (round 5)"): a
//! member's reaction counts once however often it is added, at most 20
//! different emojis per member and item, catalog emojis and approved custom
//! ones only; who reacted lists newest first with a cursor; counts stay
//! exact with 50 members reacting at once; `@username` names existing
//! active users by the section's rule, at most 20, recomputed on edit;
//! posts carry `reactions`, `my_reactions` and `mentions` in lists, search
//! and alone, within one statement per page; the export holds
//! `reactions.json` and erasure takes a user's reactions off the counts.

use std::collections::BTreeMap;

use crate::common::actors::Member;
use crate::common::{Backend, PASSWORD, TestServer, call, post};
use plaza_domain::posts::{self, PostChanges};
use serde_json::{Value, json};

on_both_databases!(
    a_reaction_counts_once_and_is_taken_back,
    my_reactions_are_the_callers_own_and_empty_anonymous,
    who_may_react_to_which_post,
    a_member_reacts_with_at_most_20_emojis_per_post,
    only_catalog_and_approved_custom_emojis_are_reactions,
    who_reacted_lists_newest_first_with_a_cursor,
    fifty_members_reacting_at_once_give_exact_counts,
    a_reaction_renews_cached_answers_and_a_repeat_does_not,
    a_page_of_posts_costs_the_same_statements_whatever_its_size,
    mentions_follow_the_rule_of_the_at_sign,
    mentions_name_at_most_20_active_users_and_edits_recompute_them,
    the_export_holds_reactions_and_erasure_takes_them_off_the_counts,
    replies_take_reactions_and_mentions_as_posts_do,
    a_locked_thread_takes_no_reactions_on_its_post_or_its_replies,
);

/// `emoji` as a path segment.
fn encoded(emoji: &str) -> String {
    url::form_urlencoded::byte_serialize(emoji.as_bytes()).collect()
}

fn reaction_path(post: &str, emoji: &str) -> String {
    format!("/api/posts/{post}/reactions/{}", encoded(emoji))
}

fn reply_reaction_path(reply: &str, emoji: &str) -> String {
    format!("/api/replies/{reply}/reactions/{}", encoded(emoji))
}

/// `method` on the reply's reaction `emoji` as `cookie`.
async fn react_to_reply(
    server: &TestServer,
    method: &str,
    reply: &str,
    emoji: &str,
    cookie: Option<&str>,
) -> (u16, Value) {
    call(
        server,
        method,
        &reply_reaction_path(reply, emoji),
        cookie,
        None,
    )
    .await
}

/// Answers `post` (or the reply `parent`) with `content` as `cookie`: the
/// new reply.
async fn reply(
    server: &TestServer,
    cookie: &str,
    post: &str,
    parent: Option<&str>,
    content: &str,
) -> Value {
    let (status, body) = call(
        server,
        "POST",
        &format!("/api/posts/{post}/replies"),
        Some(cookie),
        Some(json!({"content": content, "parent_id": parent})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    body
}

/// `GET /api/replies/{reply}` as `cookie`.
async fn read_reply(server: &TestServer, reply: &str, cookie: Option<&str>) -> Value {
    let (status, body) = call(
        server,
        "GET",
        &format!("/api/replies/{reply}"),
        cookie,
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body
}

/// `method` on the post's reaction `emoji` as `cookie`: the status and body.
async fn react(
    server: &TestServer,
    method: &str,
    post: &str,
    emoji: &str,
    cookie: Option<&str>,
) -> (u16, Value) {
    call(server, method, &reaction_path(post, emoji), cookie, None).await
}

/// `GET /api/posts/{post}` as `cookie`.
async fn read_post(server: &TestServer, post: &str, cookie: Option<&str>) -> Value {
    let (status, body) = call(server, "GET", &format!("/api/posts/{post}"), cookie, None).await;
    assert_eq!(status, 200, "{body}");
    body
}

/// The field an error answer names.
fn error_field(body: &Value) -> &Value {
    &body["error"]["details"]["field"]
}

/// A server, an author and their published post.
struct Stage {
    server: TestServer,
    author: Member,
    post: String,
}

impl Stage {
    async fn new(backend: Backend) -> Self {
        Stage::started(TestServer::start(backend).await).await
    }

    async fn started(server: TestServer) -> Self {
        let author = Member::join(&server, "author@example.com", "user").await;
        let post = post(
            &server,
            &author.cookie,
            json!({"title": "Hello zanzibar", "content": "Out in the open"}),
        )
        .await;
        Stage {
            server,
            author,
            post,
        }
    }

    async fn member(&self, name: &str) -> Member {
        Member::join(&self.server, &format!("{name}@example.com"), "user").await
    }
}

async fn a_reaction_counts_once_and_is_taken_back(backend: Backend) {
    let stage = Stage::new(backend).await;
    let (server, post) = (&stage.server, &stage.post);
    let ann = stage.member("ann").await;
    let ben = stage.member("ben").await;

    for _ in 0..2 {
        let (status, body) = react(server, "PUT", post, "👍", Some(&ann.cookie)).await;
        assert_eq!(status, 204, "adding again is 204 too: {body}");
    }
    assert_eq!(
        read_post(server, post, None).await["reactions"],
        json!({"👍": 1})
    );
    react(server, "PUT", post, "👍", Some(&ben.cookie)).await;
    react(server, "PUT", post, "🎉", Some(&ben.cookie)).await;
    assert_eq!(
        read_post(server, post, None).await["reactions"],
        json!({"👍": 2, "🎉": 1})
    );
    // 👍 was added first; two reactions of one millisecond would be
    // ordered by emoji, so the test makes their times apart.
    for (emoji, at) in [("👍", 1), ("🎉", 2)] {
        server
            .sql(&format!(
                "UPDATE post_reaction_counts SET first_reacted_at = {at} WHERE emoji = '{emoji}'"
            ))
            .await;
    }
    let text = server
        .get(&format!("/api/posts/{post}"))
        .await
        .text()
        .await
        .unwrap();
    assert!(
        text.contains(r#""reactions":{"👍":2,"🎉":1}"#),
        "in the order first added: {text}"
    );

    for _ in 0..2 {
        let (status, body) = react(server, "DELETE", post, "👍", Some(&ann.cookie)).await;
        assert_eq!(status, 204, "removing again is 204 too: {body}");
    }
    assert_eq!(
        read_post(server, post, None).await["reactions"],
        json!({"👍": 1, "🎉": 1})
    );
    react(server, "DELETE", post, "🎉", Some(&ben.cookie)).await;
    assert_eq!(
        read_post(server, post, None).await["reactions"],
        json!({"👍": 1})
    );
    let stored = server
        .sql_count("SELECT COUNT(*) FROM post_reaction_counts")
        .await;
    assert_eq!(stored, 1, "a count that reached 0 is gone");
}

async fn my_reactions_are_the_callers_own_and_empty_anonymous(backend: Backend) {
    let stage = Stage::new(backend).await;
    let (server, post) = (&stage.server, &stage.post);
    let ann = stage.member("ann").await;
    let ben = stage.member("ben").await;
    react(server, "PUT", post, "🎉", Some(&ann.cookie)).await;
    react(server, "PUT", post, "👍", Some(&ann.cookie)).await;
    react(server, "PUT", post, "👍", Some(&ben.cookie)).await;

    let search = "/api/search?q=zanzibar";
    for (who, cookie, mine) in [
        ("ann", Some(ann.cookie.as_str()), json!(["🎉", "👍"])),
        ("ben", Some(ben.cookie.as_str()), json!(["👍"])),
        ("the author", Some(stage.author.cookie.as_str()), json!([])),
        ("anonymous", None, json!([])),
    ] {
        let one = read_post(server, post, cookie).await;
        assert_eq!(one["my_reactions"], mine, "{who}: GET /api/posts/{{id}}");
        assert_eq!(one["reactions"], json!({"🎉": 1, "👍": 2}), "{who}");
        let (_, list) = call(server, "GET", "/api/posts", cookie, None).await;
        assert_eq!(list["posts"][0]["my_reactions"], mine, "{who}: the list");
        assert_eq!(list["posts"][0]["reactions"], one["reactions"], "{who}");
        let (_, found) = call(server, "GET", search, cookie, None).await;
        assert_eq!(found["results"][0]["my_reactions"], mine, "{who}: search");
        assert_eq!(found["results"][0]["reactions"], one["reactions"], "{who}");
        assert_eq!(found["results"][0]["mentions"], json!([]), "{who}");
    }
}

async fn who_may_react_to_which_post(backend: Backend) {
    let stage = Stage::new(backend).await;
    let (server, author) = (&stage.server, &stage.author);
    let other = stage.member("other").await;
    let moderator = Member::join(server, "mod@example.com", "moderator").await;
    let draft = post(
        server,
        &author.cookie,
        json!({"title": "Draft", "content": "Not yet", "published": false}),
    )
    .await;
    let hidden = post(
        server,
        &author.cookie,
        json!({"title": "Hidden", "content": "Taken down"}),
    )
    .await;
    server
        .sql(&format!(
            "UPDATE posts SET moderation = 'hidden' WHERE id = {hidden}"
        ))
        .await;

    let (status, body) = react(server, "PUT", &stage.post, "👍", None).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (401, &json!("UNAUTHORIZED"))
    );
    for (method, expected) in [("PUT", 409), ("DELETE", 204)] {
        for secret in [&draft, &hidden] {
            let (status, body) = react(server, method, secret, "👍", Some(&other.cookie)).await;
            assert_eq!(status, 404, "{method} on {secret} by a stranger: {body}");
            let (status, body) = react(server, "GET", secret, "👍", None).await;
            assert_eq!(status, 404, "who reacted to {secret}, anonymous: {body}");
            for seer in [&author.cookie, &moderator.cookie] {
                let (status, body) = react(server, method, secret, "👍", Some(seer)).await;
                assert_eq!(
                    status, expected,
                    "{method} on {secret} by one who sees it: {body}"
                );
                if status == 409 {
                    assert_eq!(body["error"]["code"], "CONFLICT");
                }
            }
        }
        let (status, _) = react(server, method, "999999", "👍", Some(&other.cookie)).await;
        assert_eq!(status, 404, "{method} on no post");
    }
    let (status, body) = react(server, "PUT", &stage.post, "👍", Some(&author.cookie)).await;
    assert_eq!(status, 204, "an author reacts to their own post: {body}");
    assert_eq!(
        server
            .sql_count("SELECT COUNT(*) FROM post_reactions")
            .await,
        1,
        "only the published post holds a reaction"
    );
}

async fn a_member_reacts_with_at_most_20_emojis_per_post(backend: Backend) {
    let stage = Stage::new(backend).await;
    let (server, post) = (&stage.server, &stage.post);
    let ann = stage.member("ann").await;
    let emojis: Vec<&str> = plaza_emoji::catalog()
        .iter()
        .take(21)
        .map(|emoji| emoji.unicode_char)
        .collect();
    for emoji in &emojis[..20] {
        let (status, body) = react(server, "PUT", post, emoji, Some(&ann.cookie)).await;
        assert_eq!(status, 204, "{emoji}: {body}");
    }
    let (status, body) = react(server, "PUT", post, emojis[20], Some(&ann.cookie)).await;
    assert_eq!(status, 422, "the 21st: {body}");
    assert_eq!(error_field(&body), "emoji");
    let (status, _) = react(server, "PUT", post, emojis[0], Some(&ann.cookie)).await;
    assert_eq!(status, 204, "one of the 20 again");
    let mine = read_post(server, post, Some(&ann.cookie)).await;
    assert_eq!(mine["my_reactions"].as_array().unwrap().len(), 20);
    assert!(
        mine["reactions"].get(emojis[20]).is_none(),
        "the refused one left nothing"
    );

    let ben = stage.member("ben").await;
    let (status, _) = react(server, "PUT", post, emojis[20], Some(&ben.cookie)).await;
    assert_eq!(status, 204, "the cap is per member");
    react(server, "DELETE", post, emojis[0], Some(&ann.cookie)).await;
    let (status, _) = react(server, "PUT", post, emojis[20], Some(&ann.cookie)).await;
    assert_eq!(status, 204, "room again after taking one back");
}

async fn only_catalog_and_approved_custom_emojis_are_reactions(backend: Backend) {
    let stage = Stage::new(backend).await;
    let (server, post) = (&stage.server, &stage.post);
    let ann = stage.member("ann").await;
    let moderator = Member::join(server, "mod@example.com", "moderator").await;
    for unknown in [
        "x",
        "👍🏽",
        "👍👍",
        ":party:",
        "party",
        ":Bad Name:",
        "::",
        "%00",
        "a:b:",
    ] {
        let (status, body) = react(server, "PUT", post, unknown, Some(&ann.cookie)).await;
        assert_eq!(status, 422, "{unknown:?}: {body}");
        assert_eq!(error_field(&body), "emoji", "{unknown:?}");
    }
    let (status, body) = react(server, "DELETE", post, ":party:", Some(&ann.cookie)).await;
    assert_eq!(
        (status, error_field(&body)),
        (422, &json!("emoji")),
        "{body}"
    );
    let (status, body) = react(server, "GET", post, "x", None).await;
    assert_eq!(
        (status, error_field(&body)),
        (422, &json!("emoji")),
        "{body}"
    );

    let pending = crate::emojis::pending_emoji(server, &ann.cookie, "party").await;
    let (status, _) = react(server, "PUT", post, ":party:", Some(&ann.cookie)).await;
    assert_eq!(status, 422, "a custom emoji waiting for approval");
    let (status, body) = call(
        server,
        "POST",
        &format!("/api/admin/emojis/{pending}/approve"),
        Some(&moderator.cookie),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = react(server, "PUT", post, ":party:", Some(&ann.cookie)).await;
    assert_eq!(status, 204, "{body}");
    assert_eq!(
        read_post(server, post, None).await["reactions"],
        json!({":party:": 1})
    );

    // Withdrawn later: no new reactions, but the ones given are listed and
    // can be taken back.
    server
        .sql("UPDATE emojis SET is_approved = FALSE WHERE name = 'party'")
        .await;
    let (status, _) = react(server, "PUT", post, ":party:", Some(&moderator.cookie)).await;
    assert_eq!(status, 422);
    let (status, body) = react(server, "GET", post, ":party:", None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["users"][0]["id"], ann.id.to_string());
    let (status, _) = react(server, "DELETE", post, ":party:", Some(&ann.cookie)).await;
    assert_eq!(status, 204);
    assert_eq!(read_post(server, post, None).await["reactions"], json!({}));
}

async fn who_reacted_lists_newest_first_with_a_cursor(backend: Backend) {
    let stage = Stage::new(backend).await;
    let (server, post) = (&stage.server, &stage.post);
    let mut members = Vec::new();
    for name in ["ann", "ben", "cat", "dan", "eve"] {
        let member = stage.member(name).await;
        let (status, _) = react(server, "PUT", post, "❤️", Some(&member.cookie)).await;
        assert_eq!(status, 204);
        members.push(member);
    }
    react(server, "PUT", post, "👍", Some(&members[0].cookie)).await;
    // ann reacted first, eve last; ben and cat in the same millisecond.
    for (index, at) in [(0, 1_000), (1, 2_000), (2, 2_000), (3, 3_000), (4, 4_000)] {
        server
            .sql(&format!(
                "UPDATE post_reactions SET created_at = {at} WHERE user_id = {}",
                members[index].id
            ))
            .await;
    }
    let (ben, cat) = (members[1].id, members[2].id);
    let (tied_first, tied_second) = if ben > cat { (1, 2) } else { (2, 1) };
    let expected: Vec<String> = [4, 3, tied_first, tied_second, 0]
        .iter()
        .map(|&index| members[index].id.to_string())
        .collect();

    let mut listed = Vec::new();
    let mut path = format!("{}?limit=2", reaction_path(post, "❤️"));
    loop {
        let (status, page) = call(server, "GET", &path, None, None).await;
        assert_eq!(status, 200, "{page}");
        for user in page["users"].as_array().unwrap() {
            listed.push(user["id"].as_str().unwrap().to_owned());
            assert!(user["username"].is_string() && user["display_name"].is_string());
            assert!(user["avatar_url"].as_str().unwrap().contains("avatar"));
        }
        match page["next_cursor"].as_str() {
            Some(cursor) => path = format!("{}?limit=2&cursor={cursor}", reaction_path(post, "❤️")),
            None => break,
        }
    }
    assert_eq!(
        listed, expected,
        "newest first, the higher id first in a tie"
    );

    let (_, only) = call(server, "GET", &reaction_path(post, "👍"), None, None).await;
    assert_eq!(only["users"].as_array().unwrap().len(), 1);
    assert_eq!(only["next_cursor"], Value::Null);
    let (_, nobody) = call(server, "GET", &reaction_path(post, "🎉"), None, None).await;
    assert_eq!(nobody, json!({"users": [], "next_cursor": null}));
    for (query, field) in [
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("cursor=nonsense", "cursor"),
    ] {
        let path = format!("{}?{query}", reaction_path(post, "❤️"));
        let (status, body) = call(server, "GET", &path, None, None).await;
        assert_eq!(
            (status, error_field(&body)),
            (422, &json!(field)),
            "{query}: {body}"
        );
    }
}

async fn fifty_members_reacting_at_once_give_exact_counts(backend: Backend) {
    let stage = Stage::new(backend).await;
    let (server, post) = (&stage.server, &stage.post);
    let answer = reply(server, &stage.author.cookie, post, None, "Welcome").await;
    let answer = answer["id"].as_str().unwrap();
    let mut cookies = Vec::new();
    for n in 0..50 {
        let email = format!("crowd{n}@example.com");
        let created = server
            .sign_up(&json!({"email": email, "password": PASSWORD}))
            .await;
        assert_eq!(created.status(), 201);
        cookies.push(server.sign_in(&email, PASSWORD).await);
    }
    // Each member adds 👍 twice and ❤️ once to the post and 🎉 to the
    // reply; every other one then takes ❤️ back: all at once.
    let requests = cookies.iter().enumerate().map(|(n, cookie)| async move {
        let mut statuses = Vec::new();
        for emoji in ["👍", "❤️", "👍"] {
            statuses.push(react(server, "PUT", post, emoji, Some(cookie)).await.0);
        }
        statuses.push(
            react_to_reply(server, "PUT", answer, "🎉", Some(cookie))
                .await
                .0,
        );
        if n % 2 == 0 {
            statuses.push(react(server, "DELETE", post, "❤️", Some(cookie)).await.0);
        }
        statuses
    });
    for statuses in futures_util::future::join_all(requests).await {
        assert!(statuses.iter().all(|&status| status == 204), "{statuses:?}");
    }
    let read = read_post(server, post, None).await;
    assert_eq!(read["reactions"], json!({"👍": 50, "❤️": 25}));
    let stored = server
        .sql_count("SELECT COUNT(*) FROM post_reactions")
        .await;
    assert_eq!(stored, 75, "the counts are those of the stored reactions");
    assert_eq!(
        read_reply(server, answer, None).await["reactions"],
        json!({"🎉": 50})
    );
}

/// The content generation as stored.
async fn generation(server: &TestServer) -> i64 {
    server
        .sql_count("SELECT value FROM content_generation WHERE id = 1")
        .await
}

async fn a_reaction_renews_cached_answers_and_a_repeat_does_not(backend: Backend) {
    let stage = Stage::new(backend).await;
    let (server, post) = (&stage.server, &stage.post);
    let ann = stage.member("ann").await;
    let first = server.get("/api/posts").await;
    let etag = first.headers()["etag"].to_str().unwrap().to_owned();
    let cached = server
        .client
        .get(server.url("/api/posts"))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(cached.status(), 304, "the answer is cached");

    react(server, "PUT", post, "👍", Some(&ann.cookie)).await;
    let after = server
        .client
        .get(server.url("/api/posts"))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), 200, "the reaction changed the answer");
    let body: Value = after.json().await.unwrap();
    assert_eq!(body["posts"][0]["reactions"], json!({"👍": 1}));

    let before = generation(server).await;
    react(server, "PUT", post, "👍", Some(&ann.cookie)).await;
    react(server, "DELETE", post, "🎉", Some(&ann.cookie)).await;
    assert_eq!(
        generation(server).await,
        before,
        "a reaction already there, or one never given, changes nothing"
    );
    react(server, "DELETE", post, "👍", Some(&ann.cookie)).await;
    assert!(generation(server).await > before, "taking one back does");
}

async fn a_page_of_posts_costs_the_same_statements_whatever_its_size(backend: Backend) {
    let stage = Stage::started(TestServer::start_with_statement_log(backend).await).await;
    let server = &stage.server;
    let ann = stage.member("ann").await;
    for n in 0..20 {
        let id = post(
            server,
            &stage.author.cookie,
            json!({"title": format!("Post {n} zanzibar"), "content": "Hi @ann and @author"}),
        )
        .await;
        for emoji in ["👍", "🎉"] {
            react(server, "PUT", &id, emoji, Some(&ann.cookie)).await;
        }
    }
    for (route, items) in [
        ("/api/posts", "posts"),
        ("/api/search?q=zanzibar", "results"),
    ] {
        let mut counts = Vec::new();
        for limit in [1, 20] {
            let path = format!(
                "{route}{}limit={limit}",
                if route.contains('?') { '&' } else { '?' }
            );
            let (_, page) = call(server, "GET", &path, Some(&ann.cookie), None).await;
            let shown = &page[items];
            assert_eq!(shown.as_array().unwrap().len(), limit, "{path}");
            assert_eq!(shown[0]["reactions"], json!({"👍": 1, "🎉": 1}), "{path}");
            let mut mine: Vec<&str> = shown[0]["my_reactions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|emoji| emoji.as_str().unwrap())
                .collect();
            mine.sort_unstable();
            assert_eq!(mine, ["🎉", "👍"], "{path}");
            assert_eq!(shown[0]["mentions"].as_array().unwrap().len(), 2, "{path}");
            let request_id = format!("{items}-{limit}");
            counts.push(server.statements_of(&path, &ann.cookie, &request_id).await);
        }
        assert!(!counts[0].is_empty(), "the statement log is read");
        assert_eq!(
            counts[0].len(),
            counts[1].len(),
            "{route}: 1 item vs 20: {counts:#?}"
        );
    }
}

/// The usernames of an item's `mentions`.
fn mentioned(item: &Value) -> Vec<String> {
    item["mentions"]
        .as_array()
        .unwrap_or_else(|| panic!("no mentions in {item}"))
        .iter()
        .map(|mention| {
            assert!(mention["id"].is_string(), "{mention}");
            mention["username"].as_str().unwrap().to_owned()
        })
        .collect()
}

async fn mentions_follow_the_rule_of_the_at_sign(backend: Backend) {
    let stage = Stage::new(backend).await;
    let server = &stage.server;
    let mut ids = BTreeMap::new();
    for name in ["alice", "bob", "carol.d", "dan-x", "erin", "ivan"] {
        ids.insert(name, stage.member(name).await.id);
    }
    server
        .sql(&format!(
            "UPDATE users SET status = 'inactive' WHERE id = {}",
            ids["ivan"]
        ))
        .await;
    let content = "Hi @Alice, thanks @bob. See @carol.d... and mail@erin.example or x@bob, \
                   @@erin, @nobody, @ivan, (@dan-x) and @ALICE again; @erin";
    let (status, created) = call(
        server,
        "POST",
        "/api/posts",
        Some(&stage.author.cookie),
        Some(json!({"title": "Mentions", "content": content})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(
        mentioned(&created),
        ["alice", "bob", "carol.d", "dan-x", "erin"],
        "the answer to the write carries them"
    );
    assert_eq!(created["mentions"][0]["id"], ids["alice"].to_string());
    let id = created["id"].as_str().unwrap();
    let read = read_post(server, id, None).await;
    assert_eq!(mentioned(&read), mentioned(&created));
    let (_, list) = call(server, "GET", "/api/posts?limit=1", None, None).await;
    assert_eq!(mentioned(&list["posts"][0]), mentioned(&created));
    assert_eq!(
        mentioned(&read_post(server, &stage.post, None).await),
        Vec::<String>::new()
    );
}

async fn mentions_name_at_most_20_active_users_and_edits_recompute_them(backend: Backend) {
    let stage = Stage::new(backend).await;
    let server = &stage.server;
    for n in 1..=22 {
        let created = server
            .sign_up(&json!({
                "email": format!("u{n}@example.com"),
                "password": PASSWORD,
                "username": format!("user{n:02}"),
            }))
            .await;
        assert_eq!(created.status(), 201);
    }
    let every: Vec<String> = (1..=22).map(|n| format!("user{n:02}")).collect();
    let content: String = every
        .iter()
        .map(|name| format!("@{name} @ghost_{name} "))
        .collect();
    let (status, created) = call(
        server,
        "POST",
        "/api/posts",
        Some(&stage.author.cookie),
        Some(json!({"title": "Many", "content": content})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(mentioned(&created), every[..20], "the first 20 that exist");
    let id = created["id"].as_str().unwrap();

    let edited = "@user22 and @user03, then @user21";
    let (status, body) = call(
        server,
        "PUT",
        &format!("/api/posts/{id}"),
        Some(&stage.author.cookie),
        Some(json!({"content": edited})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(mentioned(&body), ["user22", "user03", "user21"]);
    assert_eq!(
        mentioned(&read_post(server, id, None).await),
        mentioned(&body)
    );
    let (status, body) = call(
        server,
        "PUT",
        &format!("/api/posts/{id}"),
        Some(&stage.author.cookie),
        Some(json!({"title": "Only the title"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(mentioned(&body), ["user22", "user03", "user21"], "kept");
    let (status, body) = call(
        server,
        "PUT",
        &format!("/api/posts/{id}"),
        Some(&stage.author.cookie),
        Some(json!({"content": "@user21, @user22 and @user03"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        mentioned(&read_post(server, id, None).await),
        ["user21", "user22", "user03"]
    );

    // The write answers who is mentioned for the first time, for
    // notifications: user01 is new, user03 and user21 were there.
    let db = server.domain().await;
    let post_id: i64 = id.parse().unwrap();
    let written = db
        .write(move |tx| {
            Box::pin(posts::update(
                tx,
                post_id,
                PostChanges {
                    content: Some("@user03 @user01 @user21 @user01".to_owned()),
                    ..PostChanges::default()
                },
            ))
        })
        .await
        .unwrap();
    let names = |mentions: &[plaza_domain::engagement::Mention]| -> Vec<String> {
        mentions
            .iter()
            .map(|mention| mention.username.clone())
            .collect()
    };
    assert_eq!(
        names(&written.mentioned.mentions),
        ["user03", "user01", "user21"]
    );
    assert_eq!(names(&written.mentioned.newly_mentioned), ["user01"]);
}

async fn the_export_holds_reactions_and_erasure_takes_them_off_the_counts(backend: Backend) {
    let stage = Stage::new(backend).await;
    let (server, post) = (&stage.server, &stage.post);
    let ann = stage.member("ann").await;
    let ben = stage.member("ben").await;
    for emoji in ["👍", "🎉"] {
        react(server, "PUT", post, emoji, Some(&ann.cookie)).await;
    }
    react(server, "PUT", post, "👍", Some(&ben.cookie)).await;
    let answer = reply(server, &ben.cookie, post, None, "Hello @ann").await;
    let answer = answer["id"].as_str().unwrap();
    react_to_reply(server, "PUT", answer, "❤️", Some(&ann.cookie)).await;
    let mention = crate::common::post(
        server,
        &stage.author.cookie,
        json!({"title": "Thanks", "content": "Thanks @ann and @ben"}),
    )
    .await;

    let response = crate::user_data::export(server, ann.id, &ann.cookie).await;
    assert_eq!(response.status(), 200);
    let entries = crate::user_data::unzip(&response.bytes().await.unwrap());
    let exported = crate::user_data::json_of(&entries, "reactions.json");
    let exported: Vec<(&str, Option<&str>, &str)> = exported
        .as_array()
        .unwrap()
        .iter()
        .map(|reaction| {
            assert!(reaction["createdAt"].is_string(), "{reaction}");
            (
                reaction["postId"].as_str().unwrap(),
                reaction["replyId"].as_str(),
                reaction["emoji"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(exported.len(), 3, "ann's own, not ben's: {exported:?}");
    for reaction in [
        (post.as_str(), None, "👍"),
        (post.as_str(), None, "🎉"),
        (post.as_str(), Some(answer), "❤️"),
    ] {
        assert!(exported.contains(&reaction), "{reaction:?} in {exported:?}");
    }

    let (status, body) = call(
        server,
        "DELETE",
        &format!("/api/users/{}", ann.id),
        Some(&ann.cookie),
        None,
    )
    .await;
    assert_eq!(status, 204, "{body}");
    assert_eq!(
        read_post(server, post, None).await["reactions"],
        json!({"👍": 1})
    );
    assert_eq!(
        mentioned(&read_post(server, &mention, None).await),
        ["ben"],
        "an erased user is mentioned no more"
    );
    assert_eq!(
        server
            .sql_count(&format!(
                "SELECT COUNT(*) FROM post_reactions WHERE user_id = {}",
                ann.id
            ))
            .await,
        0
    );
}

async fn replies_take_reactions_and_mentions_as_posts_do(backend: Backend) {
    let stage = Stage::new(backend).await;
    let (server, post) = (&stage.server, &stage.post);
    let ann = stage.member("ann").await;
    let ben = stage.member("ben").await;
    let created = reply(
        server,
        &ann.cookie,
        post,
        None,
        "Thanks @author and @Ben. @nobody",
    )
    .await;
    assert_eq!(mentioned(&created), ["author", "ben"]);
    let answer = created["id"].as_str().unwrap();
    let nested = reply(server, &ben.cookie, post, Some(answer), "Agreed").await;
    let nested = nested["id"].as_str().unwrap();

    for _ in 0..2 {
        let (status, body) = react_to_reply(server, "PUT", answer, "👍", Some(&ben.cookie)).await;
        assert_eq!(status, 204, "{body}");
    }
    react_to_reply(server, "PUT", answer, "🎉", Some(&ann.cookie)).await;
    react_to_reply(server, "PUT", nested, "👍", Some(&ann.cookie)).await;
    let (status, body) = react_to_reply(server, "PUT", answer, "👍🏽", Some(&ben.cookie)).await;
    assert_eq!(
        (status, error_field(&body)),
        (422, &json!("emoji")),
        "{body}"
    );
    let (status, _) = react_to_reply(server, "PUT", answer, "👍", None).await;
    assert_eq!(status, 401);
    let (status, _) = react_to_reply(server, "PUT", "999999", "👍", Some(&ben.cookie)).await;
    assert_eq!(status, 404);

    let one = read_reply(server, answer, Some(&ben.cookie)).await;
    assert_eq!(one["reactions"], json!({"👍": 1, "🎉": 1}));
    assert_eq!(one["my_reactions"], json!(["👍"]));
    assert_eq!(
        read_reply(server, answer, None).await["my_reactions"],
        json!([])
    );
    let (_, thread) = call(
        server,
        "GET",
        &format!("/api/posts/{post}/replies"),
        Some(&ann.cookie),
        None,
    )
    .await;
    let listed: Vec<(Value, Value)> = thread["replies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| (item["reactions"].clone(), item["my_reactions"].clone()))
        .collect();
    assert_eq!(
        listed,
        [
            (json!({"👍": 1, "🎉": 1}), json!(["🎉"])),
            (json!({"👍": 1}), json!(["👍"])),
        ]
    );
    assert_eq!(mentioned(&thread["replies"][0]), ["author", "ben"]);

    let (status, who) = call(
        server,
        "GET",
        &reply_reaction_path(answer, "👍"),
        None,
        None,
    )
    .await;
    assert_eq!(status, 200, "{who}");
    assert_eq!(who["users"][0]["id"], ben.id.to_string());
    react_to_reply(server, "DELETE", answer, "👍", Some(&ben.cookie)).await;
    let (status, _) = react_to_reply(server, "DELETE", answer, "👍", Some(&ben.cookie)).await;
    assert_eq!(status, 204, "taking back what is not there");
    assert_eq!(
        read_reply(server, answer, None).await["reactions"],
        json!({"🎉": 1})
    );

    let (status, edited) = call(
        server,
        "PUT",
        &format!("/api/replies/{answer}"),
        Some(&ann.cookie),
        Some(json!({"content": "Only @ben now"})),
    )
    .await;
    assert_eq!(status, 200, "{edited}");
    assert_eq!(mentioned(&edited), ["ben"]);
    assert_eq!(mentioned(&read_reply(server, answer, None).await), ["ben"]);

    // Deleted into a placeholder (a reply is below it): no reactions, no
    // mentions, and none to add.
    let (status, _) = call(
        server,
        "DELETE",
        &format!("/api/replies/{answer}"),
        Some(&ann.cookie),
        None,
    )
    .await;
    assert_eq!(status, 204);
    let placeholder = read_reply(server, answer, None).await;
    assert_eq!(placeholder["status"], "deleted");
    assert_eq!(placeholder["reactions"], json!({}));
    assert_eq!(mentioned(&placeholder), Vec::<String>::new());
    let (status, _) = react_to_reply(server, "PUT", answer, "👍", Some(&ben.cookie)).await;
    assert_eq!(status, 404, "a placeholder takes no reactions");
}

async fn a_locked_thread_takes_no_reactions_on_its_post_or_its_replies(backend: Backend) {
    let stage = Stage::new(backend).await;
    let (server, post) = (&stage.server, &stage.post);
    let ann = stage.member("ann").await;
    server.create_user("root@example.com", PASSWORD, "super_admin");
    let token = server.mint("root@example.com", "admin:super");
    let answer = reply(server, &ann.cookie, post, None, "First").await;
    let answer = answer["id"].as_str().unwrap();
    react(server, "PUT", post, "👍", Some(&ann.cookie)).await;
    react_to_reply(server, "PUT", answer, "👍", Some(&ann.cookie)).await;
    let moderate = |action: &'static str| {
        let token = token.clone();
        async move {
            let response = server
                .send(
                    crate::common::As::Token(&token),
                    "POST",
                    &format!("/api/v1/admin/posts/{post}/moderate"),
                    Some(&json!({"action": action})),
                )
                .await;
            assert_eq!(response.status(), 200, "{action}");
        }
    };

    moderate("lock").await;
    for (status, body) in [
        react(server, "PUT", post, "🎉", Some(&ann.cookie)).await,
        react(server, "PUT", post, "👍", Some(&ann.cookie)).await,
        react_to_reply(server, "PUT", answer, "🎉", Some(&ann.cookie)).await,
        react_to_reply(server, "PUT", answer, "🎉", Some(&stage.author.cookie)).await,
    ] {
        assert_eq!(
            (status, &body["error"]["code"]),
            (409, &json!("CONFLICT")),
            "{body}"
        );
    }
    let (status, _) = react(server, "DELETE", post, "👍", Some(&ann.cookie)).await;
    assert_eq!(status, 204, "a reaction is taken back from a locked post");
    let (status, _) = react_to_reply(server, "DELETE", answer, "👍", Some(&ann.cookie)).await;
    assert_eq!(status, 204);
    assert_eq!(read_post(server, post, None).await["reactions"], json!({}));

    moderate("unlock").await;
    let (status, _) = react(server, "PUT", post, "🎉", Some(&ann.cookie)).await;
    assert_eq!(status, 204, "unlocked");
    let (status, _) = react_to_reply(server, "PUT", answer, "🎉", Some(&ann.cookie)).await;
    assert_eq!(status, 204);

    // A held reply is seen by its author, who cannot react to it.
    server
        .sql(&format!(
            "UPDATE replies SET status = 'pending' WHERE id = {answer}"
        ))
        .await;
    let (status, body) = react_to_reply(server, "PUT", answer, "❤️", Some(&ann.cookie)).await;
    assert_eq!(status, 409, "{body}");
    let (status, _) = react_to_reply(server, "PUT", answer, "❤️", Some(&stage.author.cookie)).await;
    assert_eq!(status, 404, "a held reply is not the post author's to see");
}
