//! Between members (DECISIONS.md "Between members: follows, blocks, mutes
//! and filters"), through HTTP on both databases: follows with their
//! counts, lists and the feed; a block refusing replies, reactions and
//! follows both ways (403 `BLOCKED`), ending follows, leaving mentions
//! plain, hiding the blocked member's content from the blocker on every
//! operation the classification (`controllers::screening`) says lists
//! content, placeholders in threads, and unseen by the blocked member;
//! mutes until they end; keyword filters that hide and warn, compared
//! case-insensitively after NFKC; and the classification covering every
//! operation of the served document.

use std::collections::BTreeSet;

use plaza_server::controllers::screening::{OPERATIONS, Treatment};
use serde_json::{Value, json};

use crate::common::actors::Member;
use crate::common::{self, Backend, TestServer, call, post};

on_both_databases!(
    follows_are_counted_listed_and_fill_the_feed,
    the_feed_is_each_readers_timeline_written_ahead_in_batches,
    a_block_refuses_interaction_both_ways_ends_follows_and_leaves_mentions_plain,
    a_blocked_authors_content_is_absent_from_every_listing_operation,
    a_mute_hides_until_it_ends_and_lets_the_muted_member_interact,
    keyword_filters_hide_and_warn_after_case_folding_and_nfkc,
    every_operation_of_the_document_is_classified,
);

on_postgres!(
    the_feed_is_planned_for_its_page_once_for_every_reader,
    an_unfollow_while_the_fan_out_writes_takes_out_what_it_wrote,
);

/// `method path` as `member`; the status and body.
async fn ask(
    server: &TestServer,
    member: &Member,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    call(server, method, path, Some(&member.cookie), body).await
}

/// A reply to `post` (under `parent`) by `member`; its id.
async fn reply(
    server: &TestServer,
    member: &Member,
    post: &str,
    parent: Option<&str>,
    content: &str,
) -> String {
    let (status, body) = ask(
        server,
        member,
        "POST",
        &format!("/api/posts/{post}/replies"),
        Some(json!({"content": content, "parent_id": parent})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    body["id"].as_str().unwrap().to_owned()
}

/// The ids of `key`'s items in `body`.
fn ids(body: &Value, key: &str) -> Vec<String> {
    body[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key}: {body}"))
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn follows_are_counted_listed_and_fill_the_feed(backend: Backend) {
    let server = TestServer::start_in_process(backend).await;
    let ada = Member::join(&server, "ada@example.com", "user").await;
    let bob = Member::join(&server, "bob@example.com", "user").await;
    let cy = Member::join(&server, "cy@example.com", "user").await;
    for (who, whom) in [(&ada, &bob), (&cy, &bob), (&ada, &cy)] {
        let path = format!("/api/users/{}/follow", whom.id);
        assert_eq!(ask(&server, who, "PUT", &path, None).await.0, 204);
        assert_eq!(ask(&server, who, "PUT", &path, None).await.0, 204, "again");
    }
    let (status, body) = ask(
        &server,
        &ada,
        "PUT",
        &format!("/api/users/{}/follow", ada.id),
        None,
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (422, Some("VALIDATION_ERROR"))
    );
    assert_eq!(
        ask(&server, &ada, "PUT", "/api/users/999999/follow", None)
            .await
            .0,
        404
    );
    let (_, profile) = call(
        &server,
        "GET",
        &format!("/api/users/{}/profile", bob.id),
        None,
        None,
    )
    .await;
    assert_eq!(
        (
            profile["followers_count"].as_i64(),
            profile["following_count"].as_i64()
        ),
        (Some(2), Some(0))
    );
    let (_, profile) = call(
        &server,
        "GET",
        &format!("/api/users/{}/profile", ada.id),
        None,
        None,
    )
    .await;
    assert_eq!(
        (
            profile["followers_count"].as_i64(),
            profile["following_count"].as_i64()
        ),
        (Some(0), Some(2))
    );

    // Newest first, one page at a time.
    let path = format!("/api/users/{}/followers?limit=1", bob.id);
    let (status, first) = call(&server, "GET", &path, None, None).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["users"][0]["id"], json!(cy.id.to_string()));
    assert_eq!(first["total"], json!(2));
    let cursor = first["next_cursor"].as_str().unwrap();
    let (_, second) = call(
        &server,
        "GET",
        &format!("{path}&cursor={cursor}"),
        None,
        None,
    )
    .await;
    assert_eq!(second["users"][0]["id"], json!(ada.id.to_string()));
    assert_eq!(second["users"][0]["username"], json!("ada"));
    assert!(second["next_cursor"].is_null(), "{second}");
    let (_, following) = call(
        &server,
        "GET",
        &format!("/api/users/{}/following", ada.id),
        None,
        None,
    )
    .await;
    assert_eq!(
        ids(&following, "users"),
        [cy.id.to_string(), bob.id.to_string()]
    );
    let (status, _) = call(
        &server,
        "GET",
        &format!("/api/users/{}/following?cursor=x", ada.id),
        None,
        None,
    )
    .await;
    assert_eq!(status, 422);

    // The feed: published posts of followed members, newest first.
    let older = post(
        &server,
        &bob.cookie,
        json!({"title": "Bob one", "content": "first"}),
    )
    .await;
    post(
        &server,
        &bob.cookie,
        json!({"title": "Draft", "content": "unseen", "published": false}),
    )
    .await;
    let newer = post(
        &server,
        &cy.cookie,
        json!({"title": "Cy one", "content": "second"}),
    )
    .await;
    post(
        &server,
        &ada.cookie,
        json!({"title": "Ada's own", "content": "not followed"}),
    )
    .await;
    let (status, feed) = ask(&server, &ada, "GET", "/api/feed?limit=1", None).await;
    assert_eq!(status, 200, "{feed}");
    assert_eq!(ids(&feed, "posts"), std::slice::from_ref(&newer));
    assert!(feed["posts"][0]["reactions"].is_object(), "the post shape");
    let cursor = feed["next_cursor"].as_str().unwrap();
    let (_, rest) = ask(
        &server,
        &ada,
        "GET",
        &format!("/api/feed?limit=1&cursor={cursor}"),
        None,
    )
    .await;
    assert_eq!(ids(&rest, "posts"), [older]);
    assert!(rest["next_cursor"].is_null(), "{rest}");
    assert_eq!(call(&server, "GET", "/api/feed", None, None).await.0, 401);

    // Unfollowing takes the member out of the feed and the counts.
    assert_eq!(
        ask(
            &server,
            &ada,
            "DELETE",
            &format!("/api/users/{}/follow", cy.id),
            None
        )
        .await
        .0,
        204
    );
    assert_eq!(
        ask(
            &server,
            &ada,
            "DELETE",
            &format!("/api/users/{}/follow", cy.id),
            None
        )
        .await
        .0,
        204
    );
    let (_, feed) = ask(&server, &ada, "GET", "/api/feed", None).await;
    assert!(!ids(&feed, "posts").contains(&newer), "{feed}");
    let (_, profile) = call(
        &server,
        "GET",
        &format!("/api/users/{}/profile", cy.id),
        None,
        None,
    )
    .await;
    assert_eq!(profile["followers_count"], json!(0));
}

/// The feed's statement is planned once for every reader and cursor (a
/// generic plan on PostgreSQL), and the page's size is part of that plan:
/// a reader with thousands of entries is answered by a plan for a page of
/// them, not by one made for a tenth of them (a parallel scan).
async fn the_feed_is_planned_for_its_page_once_for_every_reader() {
    let server = TestServer::start(Backend::Postgres).await;
    let ada = Member::join(&server, "ada@example.com", "user").await;
    let bob = Member::join(&server, "bob@example.com", "user").await;
    let post_id = post(
        &server,
        &bob.cookie,
        json!({"title": "One", "content": "in many entries"}),
    )
    .await;
    let (status, _) = ask(
        &server,
        &ada,
        "PUT",
        &format!("/api/users/{}/follow", bob.id),
        None,
    )
    .await;
    assert_eq!(status, 204);
    server
        .sql(&format!(
            "INSERT INTO feed_entries (reader_id, created_at, post_id, author_id) \
             SELECT {}, i, {post_id}, {} FROM generate_series(1, 5000) AS i",
            ada.id, bob.id
        ))
        .await;
    server.sql("ANALYZE").await;
    let plan = server
        .domain()
        .await
        .explain_generic_feed(ada.id, 1)
        .await
        .unwrap();
    let shown = plan.join("\n");
    let planned_rows: i64 = plan[0]
        .split(" rows=")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|rows| rows.parse().ok())
        .unwrap_or_else(|| panic!("no row estimate: {shown}"));
    assert!(
        plan[0].starts_with("Limit") && planned_rows <= 2,
        "planned for a page of one and the row that tells more follow: {shown}"
    );
    assert!(!shown.contains("Gather"), "no parallel scan: {shown}");
}

/// PostgreSQL runs the fan-out and an unfollow at once: the fan-out keeps
/// the follows it gives entries from until it commits, so the unfollow
/// waits for it and its trigger takes out the entry just written, and the
/// feed shows nothing of the member no longer followed.
async fn an_unfollow_while_the_fan_out_writes_takes_out_what_it_wrote() {
    use sqlx::{Connection, PgConnection};
    let server = TestServer::start(Backend::Postgres).await;
    let ada = Member::join(&server, "ada@example.com", "user").await;
    let bob = Member::join(&server, "bob@example.com", "user").await;
    let follow = format!("/api/users/{}/follow", bob.id);
    assert_eq!(ask(&server, &ada, "PUT", &follow, None).await.0, 204);
    post(
        &server,
        &bob.cookie,
        json!({"title": "Queued", "content": "for the fan-out"}),
    )
    .await;
    assert_eq!(
        server.sql_count("SELECT COUNT(*) FROM feed_fanouts").await,
        1
    );

    let mut unfollow = PgConnection::connect(&server.database_url).await.unwrap();
    sqlx::query("BEGIN").execute(&mut unfollow).await.unwrap();
    sqlx::query("DELETE FROM follows WHERE follower_id = $1 AND followed_id = $2")
        .bind(ada.id)
        .bind(bob.id)
        .execute(&mut unfollow)
        .await
        .unwrap();
    let domain = server.domain().await;
    let fan_out = tokio::spawn(async move { domain.fan_out_feeds(10).await.unwrap() });
    // The unfollow commits once the fan-out waits for it, or once the
    // fan-out has finished without waiting.
    common::until_a_lock_is_awaited(&server.database_url, || fan_out.is_finished()).await;
    sqlx::query("COMMIT").execute(&mut unfollow).await.unwrap();
    fan_out.await.unwrap();

    assert_eq!(
        server
            .sql_count(&format!(
                "SELECT COUNT(*) FROM feed_entries WHERE reader_id = {} AND author_id = {}",
                ada.id, bob.id
            ))
            .await,
        0,
        "the unfollow's trigger ran after the fan-out's entry"
    );
    let (_, feed) = ask(&server, &ada, "GET", "/api/feed", None).await;
    assert_eq!(ids(&feed, "posts"), Vec::<String>::new());
}

async fn the_feed_is_each_readers_timeline_written_ahead_in_batches(backend: Backend) {
    let server = TestServer::start_in_process(backend).await;
    let ada = Member::join(&server, "ada@example.com", "user").await;
    let bob = Member::join(&server, "bob@example.com", "user").await;
    let cy = Member::join(&server, "cy@example.com", "user").await;
    // Bob's followers: ada, and more than a batch of the fan-out who all
    // followed at the same moment, so a batch ends inside a tie.
    let fans = plaza_domain::posts::FANOUT_BATCH + 1;
    server
        .sql(&format!(
            "WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {fans}) \
             INSERT INTO users (email, username, created_at, updated_at) \
             SELECT 'fan' || i || '@example.com', 'fan' || i, 0, 0 FROM n"
        ))
        .await;
    server
        .sql(&format!(
            "INSERT INTO follows (follower_id, followed_id, created_at) \
             SELECT id, {}, 5 FROM users WHERE email LIKE 'fan%'",
            bob.id
        ))
        .await;
    let follow = |whom: &Member| format!("/api/users/{}/follow", whom.id);
    assert_eq!(ask(&server, &ada, "PUT", &follow(&bob), None).await.0, 204);

    // A new post is in the feed at once, and the fan-out gives its entry
    // to every follower.
    let news = post(
        &server,
        &bob.cookie,
        json!({"title": "News", "content": "to every follower"}),
    )
    .await;
    let (_, feed) = ask(&server, &ada, "GET", "/api/feed", None).await;
    assert_eq!(ids(&feed, "posts"), std::slice::from_ref(&news));
    server.domain().await.fan_out_feeds(10).await.unwrap();
    assert_eq!(
        server
            .sql_count(&format!(
                "SELECT COUNT(*) FROM feed_entries WHERE post_id = {news}"
            ))
            .await,
        fans + 1
    );
    assert_eq!(
        server.sql_count("SELECT COUNT(*) FROM feed_fanouts").await,
        0
    );
    let (_, feed) = ask(&server, &ada, "GET", "/api/feed", None).await;
    assert_eq!(ids(&feed, "posts"), std::slice::from_ref(&news));

    // A follow brings in the member's latest posts, up to the bound.
    let older = plaza_domain::posts::FOLLOW_BACKFILL + 5;
    server
        .sql(&format!(
            "WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {older}) \
             INSERT INTO posts (author_id, title, content, created_at, updated_at) \
             SELECT {}, 'Old ' || i, 'from before', i, i FROM n",
            cy.id
        ))
        .await;
    assert_eq!(ask(&server, &ada, "PUT", &follow(&cy), None).await.0, 204);
    let entries_of = |author: i64| {
        format!(
            "SELECT COUNT(*) FROM feed_entries WHERE reader_id = {} AND author_id = {author}",
            ada.id
        )
    };
    assert_eq!(
        server.sql_count(&entries_of(cy.id)).await,
        plaza_domain::posts::FOLLOW_BACKFILL
    );
    let mut titles = Vec::new();
    let mut path = "/api/feed?limit=40".to_owned();
    loop {
        let (status, page) = ask(&server, &ada, "GET", &path, None).await;
        assert_eq!(status, 200, "{page}");
        titles.extend(
            page["posts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|post| post["title"].as_str().unwrap().to_owned()),
        );
        let Some(cursor) = page["next_cursor"].as_str() else {
            break;
        };
        path = format!("/api/feed?limit=40&cursor={cursor}");
    }
    let expected: Vec<String> = std::iter::once("News".to_owned())
        .chain((6..=older).rev().map(|i| format!("Old {i}")))
        .collect();
    assert_eq!(titles, expected);

    // An ended follow takes its entries out: unfollowing, and a block.
    assert_eq!(
        ask(&server, &ada, "DELETE", &follow(&cy), None).await.0,
        204
    );
    assert_eq!(server.sql_count(&entries_of(cy.id)).await, 0);
    let block = format!("/api/users/{}/block", bob.id);
    assert_eq!(ask(&server, &ada, "PUT", &block, None).await.0, 204);
    assert_eq!(server.sql_count(&entries_of(bob.id)).await, 0);
    let (_, feed) = ask(&server, &ada, "GET", "/api/feed", None).await;
    assert_eq!(ids(&feed, "posts"), Vec::<String>::new());
}

async fn a_block_refuses_interaction_both_ways_ends_follows_and_leaves_mentions_plain(
    backend: Backend,
) {
    let server = TestServer::start_in_process(backend).await;
    let ada = Member::join(&server, "ada@example.com", "user").await;
    let bob = Member::join(&server, "bob@example.com", "user").await;
    let cy = Member::join(&server, "cy@example.com", "user").await;
    for (who, whom) in [(&ada, &bob), (&bob, &ada)] {
        assert_eq!(
            ask(
                &server,
                who,
                "PUT",
                &format!("/api/users/{}/follow", whom.id),
                None
            )
            .await
            .0,
            204
        );
    }
    let ada_post = post(
        &server,
        &ada.cookie,
        json!({"title": "Ada's", "content": "words"}),
    )
    .await;
    let bob_post = post(
        &server,
        &bob.cookie,
        json!({"title": "Bob's", "content": "words"}),
    )
    .await;
    let cy_post = post(
        &server,
        &cy.cookie,
        json!({"title": "Cy's", "content": "words"}),
    )
    .await;
    let ada_reply = reply(&server, &ada, &cy_post, None, "ada answers").await;
    let bob_reply = reply(&server, &bob, &cy_post, None, "bob answers").await;

    assert_eq!(
        ask(
            &server,
            &ada,
            "PUT",
            &format!("/api/users/{}/block", bob.id),
            None
        )
        .await
        .0,
        204
    );
    assert_eq!(
        ask(
            &server,
            &ada,
            "PUT",
            &format!("/api/users/{}/block", bob.id),
            None
        )
        .await
        .0,
        204,
        "again"
    );
    assert_eq!(
        ask(
            &server,
            &ada,
            "PUT",
            &format!("/api/users/{}/block", ada.id),
            None
        )
        .await
        .0,
        422
    );

    // The follows ended, both ways.
    for member in [&ada, &bob] {
        let (_, profile) = call(
            &server,
            "GET",
            &format!("/api/users/{}/profile", member.id),
            None,
            None,
        )
        .await;
        assert_eq!(
            (
                profile["followers_count"].as_i64(),
                profile["following_count"].as_i64()
            ),
            (Some(0), Some(0)),
            "{profile}"
        );
    }

    // Both ways: replies, reactions and follows are refused.
    let thumbs = "%F0%9F%91%8D";
    for (actor, other, other_post, other_reply) in [
        (&ada, &bob, &bob_post, &bob_reply),
        (&bob, &ada, &ada_post, &ada_reply),
    ] {
        let attempts = [
            (
                "POST",
                format!("/api/posts/{other_post}/replies"),
                Some(json!({"content": "hi"})),
            ),
            (
                "POST",
                format!("/api/posts/{cy_post}/replies"),
                Some(json!({"content": "hi", "parent_id": other_reply})),
            ),
            (
                "PUT",
                format!("/api/posts/{other_post}/reactions/{thumbs}"),
                None,
            ),
            (
                "PUT",
                format!("/api/replies/{other_reply}/reactions/{thumbs}"),
                None,
            ),
            ("PUT", format!("/api/users/{}/follow", other.id), None),
        ];
        for (method, path, body) in attempts {
            let (status, answer) = ask(&server, actor, method, &path, body).await;
            assert_eq!(
                (status, answer["error"]["code"].as_str()),
                (403, Some("BLOCKED")),
                "{method} {path} as {}: {answer}",
                actor.email
            );
        }
    }
    // Others are not affected.
    reply(&server, &cy, &bob_post, None, "cy may").await;

    // A mention across the block is plain text.
    let (_, mentioning) = ask(
        &server,
        &bob,
        "POST",
        "/api/posts",
        Some(json!({"title": "Hey", "content": "hello @ada and @cy0"})),
    )
    .await;
    assert_eq!(
        mentioning["mentions"],
        json!([{"id": cy.id.to_string(), "username": "cy0"}])
    );

    // Only the blocker sees the block.
    let (_, blocks) = ask(&server, &ada, "GET", "/api/me/blocks", None).await;
    assert_eq!(ids(&blocks, "users"), [bob.id.to_string()]);
    let (_, blocks) = ask(&server, &bob, "GET", "/api/me/blocks", None).await;
    assert_eq!(blocks["users"], json!([]));
    assert_eq!(
        call(&server, "GET", "/api/me/blocks", None, None).await.0,
        401
    );
    // The blocked member still sees the blocker's posts: nothing tells.
    let (_, listed) = ask(&server, &bob, "GET", "/api/posts", None).await;
    assert!(ids(&listed, "posts").contains(&ada_post), "{listed}");

    // Unblocked, they may interact again.
    assert_eq!(
        ask(
            &server,
            &ada,
            "DELETE",
            &format!("/api/users/{}/block", bob.id),
            None
        )
        .await
        .0,
        204
    );
    assert_eq!(
        ask(
            &server,
            &bob,
            "PUT",
            &format!("/api/users/{}/follow", ada.id),
            None
        )
        .await
        .0,
        204
    );
    reply(&server, &bob, &ada_post, None, "hello again").await;
}

async fn a_blocked_authors_content_is_absent_from_every_listing_operation(backend: Backend) {
    let server = TestServer::start_in_process(backend).await;
    let ada = Member::join(&server, "ada@example.com", "user").await;
    let bob = Member::join(&server, "bob@example.com", "user").await;
    let cy = Member::join(&server, "cy@example.com", "user").await;
    let bob_post = post(
        &server,
        &bob.cookie,
        json!({"title": "Zebra crossing", "content": "zebra stripes"}),
    )
    .await;
    let cy_post = post(
        &server,
        &cy.cookie,
        json!({"title": "Cy asks", "content": "any zebra?"}),
    )
    .await;
    let bob_reply = reply(&server, &bob, &cy_post, None, "a zebra answer").await;
    let below = reply(&server, &cy, &cy_post, Some(&bob_reply), "thanks").await;
    let ada_post = post(
        &server,
        &ada.cookie,
        json!({"title": "Ada asks", "content": "who has seen a zebra?"}),
    )
    .await;
    reply(&server, &bob, &ada_post, None, "bob saw one").await;
    let (_, before) = ask(&server, &ada, "GET", "/api/notifications", None).await;
    assert_eq!(
        (
            before["notifications"][0]["actor"]["id"].as_str(),
            before["unread_count"].as_i64()
        ),
        (Some(bob.id.to_string().as_str()), Some(1)),
        "{before}"
    );
    assert_eq!(
        ask(
            &server,
            &ada,
            "PUT",
            &format!("/api/users/{}/block", bob.id),
            None
        )
        .await
        .0,
        204
    );
    // A follow written behind the API's back: the feed's own screen hides him.
    server
        .sql(&format!(
            "INSERT INTO follows (follower_id, followed_id, created_at) VALUES ({}, {}, 1)",
            ada.id, bob.id
        ))
        .await;
    assert_eq!(
        ask(
            &server,
            &ada,
            "PUT",
            &format!("/api/users/{}/follow", cy.id),
            None
        )
        .await
        .0,
        204
    );

    let listing: Vec<&str> = OPERATIONS
        .iter()
        .filter(|(_, _, treatment)| matches!(treatment, Treatment::Lists(_)))
        .map(|(method, path, _)| {
            assert_eq!(*method, "GET", "{path}");
            *path
        })
        .collect();
    assert!(listing.len() >= 5, "{listing:?}");
    for path in listing {
        match path {
            "/api/posts" => {
                let (_, anyone) = call(&server, "GET", "/api/posts", None, None).await;
                let (_, blocker) = ask(&server, &ada, "GET", "/api/posts", None).await;
                assert!(ids(&anyone, "posts").contains(&bob_post));
                assert!(!ids(&blocker, "posts").contains(&bob_post), "{blocker}");
                assert_eq!(
                    blocker["pagination"]["total"].as_i64().unwrap(),
                    anyone["pagination"]["total"].as_i64().unwrap() - 1
                );
                let (_, blocked) = ask(&server, &bob, "GET", "/api/posts", None).await;
                assert!(ids(&blocked, "posts").contains(&bob_post));
            }
            "/api/posts/{id}/replies" => {
                let path = format!("/api/posts/{cy_post}/replies");
                let (_, thread) = ask(&server, &ada, "GET", &path, None).await;
                assert_eq!(
                    ids(&thread, "replies"),
                    [bob_reply.clone(), below.clone()],
                    "{thread}"
                );
                let placeholder = &thread["replies"][0];
                assert_eq!(
                    (
                        placeholder["status"].as_str(),
                        placeholder["content"].as_str()
                    ),
                    (Some("blocked"), Some("")),
                    "{placeholder}"
                );
                assert!(placeholder["author"].is_null(), "{placeholder}");
                assert_eq!(thread["replies"][1]["content"], json!("thanks"));
                let (_, anyone) = call(&server, "GET", &path, None, None).await;
                assert_eq!(anyone["replies"][0]["content"], json!("a zebra answer"));
            }
            "/api/feed" => {
                let (_, feed) = ask(&server, &ada, "GET", "/api/feed", None).await;
                assert_eq!(
                    ids(&feed, "posts"),
                    std::slice::from_ref(&cy_post),
                    "{feed}"
                );
            }
            "/api/search" | "/api/search/posts" => {
                let urls: Vec<String> = if path == "/api/search" {
                    ["post", "reply", "all"]
                        .iter()
                        .map(|kind| format!("{path}?q=zebra&type={kind}"))
                        .collect()
                } else {
                    vec![format!("{path}?q=zebra")]
                };
                for url in urls {
                    let (_, anyone) = call(&server, "GET", &url, None, None).await;
                    let (status, blocker) = ask(&server, &ada, "GET", &url, None).await;
                    assert_eq!(status, 200, "{url}: {blocker}");
                    let found = ids(&anyone, "results");
                    let seen = ids(&blocker, "results");
                    assert!(
                        found.contains(&bob_post) || found.contains(&bob_reply),
                        "{url}: {anyone}"
                    );
                    assert!(
                        !seen.contains(&bob_post) && !seen.contains(&bob_reply),
                        "{url}: {blocker}"
                    );
                }
            }
            "/api/notifications" => {
                let (_, after) = ask(&server, &ada, "GET", path, None).await;
                assert_eq!(
                    (
                        after["notifications"].as_array().map(Vec::len),
                        after["unread_count"].as_i64()
                    ),
                    (Some(0), Some(0)),
                    "{after}"
                );
                // Ended, the block lets the notification show again, read.
                let block = format!("/api/users/{}/block", bob.id);
                assert_eq!(ask(&server, &ada, "DELETE", &block, None).await.0, 204);
                let (_, unblocked) = ask(&server, &ada, "GET", path, None).await;
                assert_eq!(
                    unblocked["notifications"][0]["read"],
                    json!(true),
                    "{unblocked}"
                );
                assert_eq!(ask(&server, &ada, "PUT", &block, None).await.0, 204);
            }
            other => panic!("{other} lists content but this test shows nothing absent from it"),
        }
    }
}

async fn a_mute_hides_until_it_ends_and_lets_the_muted_member_interact(backend: Backend) {
    let server = TestServer::start_in_process(backend).await;
    let ada = Member::join(&server, "ada@example.com", "user").await;
    let bob = Member::join(&server, "bob@example.com", "user").await;
    let bob_post = post(
        &server,
        &bob.cookie,
        json!({"title": "Loud", "content": "megaphone"}),
    )
    .await;
    let ada_post = post(
        &server,
        &ada.cookie,
        json!({"title": "Quiet", "content": "library"}),
    )
    .await;
    let bob_reply = reply(&server, &bob, &ada_post, None, "megaphone reply").await;
    assert_eq!(
        ask(
            &server,
            &ada,
            "PUT",
            &format!("/api/users/{}/follow", bob.id),
            None
        )
        .await
        .0,
        204
    );

    let mute = format!("/api/users/{}/mute", bob.id);
    let (status, body) = ask(
        &server,
        &ada,
        "PUT",
        &mute,
        Some(json!({"expires_at": "2001-01-01T00:00:00Z"})),
    )
    .await;
    assert_eq!(status, 422, "an end in the past: {body}");
    assert_eq!(
        ask(
            &server,
            &ada,
            "PUT",
            &mute,
            Some(json!({"expires_at": "bogus"}))
        )
        .await
        .0,
        422
    );
    assert_eq!(
        ask(
            &server,
            &ada,
            "PUT",
            &mute,
            Some(json!({"expires_at": "2099-01-01T00:00:00Z"}))
        )
        .await
        .0,
        204
    );
    let (_, mutes) = ask(&server, &ada, "GET", "/api/me/mutes", None).await;
    assert_eq!(ids(&mutes, "users"), [bob.id.to_string()]);
    assert_eq!(
        mutes["users"][0]["expires_at"],
        json!("2099-01-01T00:00:00Z")
    );

    let hidden = |list: &Value, key: &str| !ids(list, key).contains(&bob_post);
    let (_, posts) = ask(&server, &ada, "GET", "/api/posts", None).await;
    assert!(hidden(&posts, "posts"), "{posts}");
    let (_, feed) = ask(&server, &ada, "GET", "/api/feed", None).await;
    assert!(hidden(&feed, "posts"), "{feed}");
    let (_, found) = ask(
        &server,
        &ada,
        "GET",
        "/api/search?q=megaphone&type=all",
        None,
    )
    .await;
    assert_eq!(found["results"], json!([]), "{found}");
    let (_, thread) = ask(
        &server,
        &ada,
        "GET",
        &format!("/api/posts/{ada_post}/replies"),
        None,
    )
    .await;
    assert_eq!(thread["replies"][0]["status"], json!("muted"), "{thread}");
    assert!(thread["replies"][0]["author"].is_null());
    // The muted member can still interact, and is not told.
    reply(&server, &bob, &ada_post, None, "still here").await;
    let (_, mutes) = ask(&server, &bob, "GET", "/api/me/mutes", None).await;
    assert_eq!(mutes["users"], json!([]));

    // The mute ends: written behind the API's back, seen on the next request.
    server
        .sql(&format!(
            "UPDATE member_relations SET mute_expires_at = 1 WHERE user_id = {} AND other_id = {}",
            ada.id, bob.id
        ))
        .await;
    let (_, posts) = ask(&server, &ada, "GET", "/api/posts", None).await;
    assert!(!hidden(&posts, "posts"), "{posts}");
    let (_, feed) = ask(&server, &ada, "GET", "/api/feed", None).await;
    assert!(!hidden(&feed, "posts"), "{feed}");
    let (_, thread) = ask(
        &server,
        &ada,
        "GET",
        &format!("/api/posts/{ada_post}/replies"),
        None,
    )
    .await;
    assert_eq!(thread["replies"][0]["id"], json!(bob_reply));
    assert_eq!(thread["replies"][0]["status"], json!("published"));
    let (_, mutes) = ask(&server, &ada, "GET", "/api/me/mutes", None).await;
    assert_eq!(mutes["users"], json!([]), "an ended mute is not listed");

    // Muted without an end, then unmuted.
    assert_eq!(ask(&server, &ada, "PUT", &mute, None).await.0, 204);
    let (_, posts) = ask(&server, &ada, "GET", "/api/posts", None).await;
    assert!(hidden(&posts, "posts"));
    assert_eq!(ask(&server, &ada, "DELETE", &mute, None).await.0, 204);
    let (_, posts) = ask(&server, &ada, "GET", "/api/posts", None).await;
    assert!(!hidden(&posts, "posts"));
}

async fn keyword_filters_hide_and_warn_after_case_folding_and_nfkc(backend: Backend) {
    let server = TestServer::start_in_process(backend).await;
    let ada = Member::join(&server, "ada@example.com", "user").await;
    let bob = Member::join(&server, "bob@example.com", "user").await;
    let add = |body: Value| ask(&server, &ada, "POST", "/api/me/filters", Some(body));
    let (status, warn) = add(json!({"phrase": "Spoiler", "action": "warn"})).await;
    assert_eq!(status, 201, "{warn}");
    assert_eq!(
        (warn["whole_word"].as_bool(), warn["expires_at"].is_null()),
        (Some(true), true)
    );
    let (status, _) = add(json!({"phrase": "ｃｒｙｐｔｏ", "action": "hide"})).await;
    assert_eq!(status, 201);
    for bad in [
        json!({"phrase": "", "action": "hide"}),
        json!({"phrase": "x".repeat(101), "action": "hide"}),
        json!({"phrase": "ok", "action": "shout"}),
        json!({"phrase": "ok", "action": "hide", "expires_at": "2001-01-01T00:00:00Z"}),
    ] {
        assert_eq!(add(bad.clone()).await.0, 422, "{bad}");
    }
    assert_eq!(
        ask(
            &server,
            &ada,
            "PUT",
            &format!("/api/users/{}/follow", bob.id),
            None
        )
        .await
        .0,
        204
    );
    let warned = post(
        &server,
        &bob.cookie,
        json!({"title": "Big SPOILER ahead", "content": "the end"}),
    )
    .await;
    let hidden = post(
        &server,
        &bob.cookie,
        json!({"title": "Buy", "content": "buy CRYPTO now"}),
    )
    .await;
    let kept = post(
        &server,
        &bob.cookie,
        json!({"title": "Maths", "content": "cryptography lecture"}),
    )
    .await;
    let filtered_reply = reply(&server, &bob, &kept, None, "Crypto!").await;
    let warned_reply = reply(&server, &bob, &kept, None, "a spoiler, sorry").await;

    let (_, posts) = ask(&server, &ada, "GET", "/api/posts", None).await;
    let listed = ids(&posts, "posts");
    assert!(!listed.contains(&hidden), "{posts}");
    assert!(listed.contains(&kept), "whole words only: {posts}");
    let warned_item = posts["posts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["id"] == json!(warned))
        .unwrap();
    assert_eq!(warned_item["filtered"], json!(["Spoiler"]));
    let (_, anyone) = call(&server, "GET", "/api/posts", None, None).await;
    assert!(ids(&anyone, "posts").contains(&hidden));
    assert!(anyone["posts"][0].get("filtered").is_none(), "{anyone}");
    let (_, feed) = ask(&server, &ada, "GET", "/api/feed", None).await;
    assert!(!ids(&feed, "posts").contains(&hidden), "{feed}");
    let (_, found) = ask(&server, &ada, "GET", "/api/search/posts?q=crypto", None).await;
    assert!(!ids(&found, "results").contains(&hidden), "{found}");
    let (_, found) = ask(&server, &ada, "GET", "/api/search/posts?q=spoiler", None).await;
    assert_eq!(
        found["results"][0]["filtered"],
        json!(["Spoiler"]),
        "{found}"
    );
    let (_, thread) = ask(
        &server,
        &ada,
        "GET",
        &format!("/api/posts/{kept}/replies"),
        None,
    )
    .await;
    let placeholder = &thread["replies"][0];
    assert_eq!(
        (
            placeholder["id"].as_str(),
            placeholder["status"].as_str(),
            placeholder["content"].as_str()
        ),
        (Some(filtered_reply.as_str()), Some("filtered"), Some("")),
        "{thread}"
    );
    let warned_in_thread = &thread["replies"][1];
    assert_eq!(
        (
            warned_in_thread["id"].as_str(),
            warned_in_thread["content"].as_str(),
            &warned_in_thread["filtered"]
        ),
        (
            Some(warned_reply.as_str()),
            Some("a spoiler, sorry"),
            &json!(["Spoiler"])
        ),
        "{thread}"
    );
    assert!(placeholder.get("filtered").is_none(), "{thread}");

    // A filter that is not whole-word matches inside words too.
    let (_, inside) = add(json!({"phrase": "graph", "whole_word": false, "action": "hide"})).await;
    let (_, posts) = ask(&server, &ada, "GET", "/api/posts", None).await;
    assert!(!ids(&posts, "posts").contains(&kept), "{posts}");

    // Listed oldest first; deleted once; at most 100.
    let (_, filters) = ask(&server, &ada, "GET", "/api/me/filters", None).await;
    let phrases: Vec<&str> = filters["filters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|filter| filter["phrase"].as_str().unwrap())
        .collect();
    assert_eq!(phrases, ["Spoiler", "ｃｒｙｐｔｏ", "graph"]);
    let delete = format!("/api/me/filters/{}", inside["id"].as_str().unwrap());
    assert_eq!(
        ask(&server, &bob, "DELETE", &delete, None).await.0,
        404,
        "not bob's"
    );
    assert_eq!(ask(&server, &ada, "DELETE", &delete, None).await.0, 204);
    assert_eq!(ask(&server, &ada, "DELETE", &delete, None).await.0, 404);
    let (_, posts) = ask(&server, &ada, "GET", "/api/posts", None).await;
    assert!(ids(&posts, "posts").contains(&kept));
    for n in 2..100 {
        assert_eq!(
            add(json!({"phrase": format!("word{n}"), "action": "warn"}))
                .await
                .0,
            201
        );
    }
    let (status, body) = add(json!({"phrase": "one too many", "action": "warn"})).await;
    assert_eq!(status, 422, "{body}");
}

async fn every_operation_of_the_document_is_classified(backend: Backend) {
    let server = TestServer::start_in_process(backend).await;
    let document: Value = server.get("/api/openapi").await.json().await.unwrap();
    let served: BTreeSet<(String, String)> = document["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            ["get", "post", "put", "patch", "delete"]
                .into_iter()
                .filter(|method| item.get(*method).is_some())
                .map(|method| (method.to_uppercase(), path.clone()))
                .collect::<Vec<_>>()
        })
        .collect();
    let classified: BTreeSet<(String, String)> = OPERATIONS
        .iter()
        .map(|(method, path, _)| ((*method).to_owned(), (*path).to_owned()))
        .collect();
    assert_eq!(
        classified.len(),
        OPERATIONS.len(),
        "an operation classified twice"
    );
    let unclassified: Vec<_> = served.difference(&classified).collect();
    assert!(
        unclassified.is_empty(),
        "classify in controllers/screening.rs: {unclassified:?}"
    );
    let not_served: Vec<_> = classified.difference(&served).collect();
    assert!(
        not_served.is_empty(),
        "classified but not served: {not_served:?}"
    );
}
