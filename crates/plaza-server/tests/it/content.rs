//! Content through HTTP: users, public profiles, posts and reports, with who
//! may see and change what, input limits and paging edges.

use crate::common::actors::{Cast, Member, assert_statuses, row};
use crate::common::{Backend, PASSWORD, TestServer, call, member, post};
use serde_json::{Value, json};

on_both_databases!(
    drafts_and_hidden_posts_are_seen_by_their_author_and_moderators_only,
    only_authors_and_moderators_change_posts,
    post_input_limits_answer_422_naming_the_field,
    post_pages_handle_their_edges,
    hostile_and_unicode_filters_never_break_the_list,
    emails_are_shown_to_their_owner_and_admins_only,
    users_change_themselves_and_admins_change_lower_roles,
    deleting_a_user_deletes_their_content_everywhere,
    public_profiles_and_generated_avatars,
    posts_are_reported_once_per_user,
    cached_answers_never_outlive_a_write,
    access_matrix,
);

async fn get(server: &TestServer, path: &str, cookie: Option<&str>) -> (u16, Value) {
    call(server, "GET", path, cookie, None).await
}

/// The array `list[key]`, failing with the list when there is none.
fn items<'a>(list: &'a Value, key: &str) -> &'a [Value] {
    list[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {list}"))
}

fn ids(list: &Value, key: &str) -> Vec<String> {
    items(list, key)
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_owned())
        .collect()
}

/// What most content tests start from: a server, an author, and the
/// author's public post and draft.
struct Stage {
    server: TestServer,
    author: Member,
    public: String,
    draft: String,
}

impl Stage {
    async fn new(backend: Backend) -> Self {
        let server = TestServer::start(backend).await;
        let author = Member::join(&server, "author@example.com", "user").await;
        let public =
            json!({"title": "Hello zanzibar", "content": "Out in the open", "tags": ["Intro"]});
        let draft = json!({"title": "Draft", "content": "Not yet", "published": false});
        Stage {
            public: post(&server, &author.cookie, public).await,
            draft: post(&server, &author.cookie, draft).await,
            server,
            author,
        }
    }
}

/// The status of one request as the session `cookie` (or anonymous).
async fn status(
    server: &TestServer,
    method: &str,
    path: &str,
    cookie: Option<&str>,
    body: Option<Value>,
) -> u16 {
    call(server, method, path, cookie, body).await.0
}

async fn drafts_and_hidden_posts_are_seen_by_their_author_and_moderators_only(backend: Backend) {
    let stage = Stage::new(backend).await;
    let (server, author, public, draft) =
        (&stage.server, &stage.author, &stage.public, &stage.draft);
    let other = Member::join(server, "other@example.com", "user").await;
    let moderator = Member::join(server, "mod@example.com", "moderator").await;
    let hidden = post(
        server,
        &author.cookie,
        json!({"title": "Hidden", "content": "x"}),
    )
    .await;
    server
        .sql(&format!(
            "UPDATE posts SET moderation = 'hidden' WHERE id = {hidden}"
        ))
        .await;

    let (status, one) = get(server, &format!("/api/posts/{public}"), None).await;
    assert_eq!(status, 200);
    assert_eq!(one["title"], "Hello zanzibar");
    assert_eq!(one["tags"], json!(["intro"]));
    assert_eq!(one["published"], true);
    assert!(one["author_id"].is_string() && one["id"].is_string());
    assert!(
        one.get("status").is_none(),
        "status is for authors and moderators: {one}"
    );

    for (name, cookie) in [
        ("anonymous", None),
        ("another user", Some(other.cookie.as_str())),
    ] {
        let (_, list) = get(server, "/api/posts", cookie).await;
        assert_eq!(ids(&list, "posts"), vec![public.clone()], "{name}");
        assert_eq!(list["pagination"]["total"], 1, "{name}");
        for secret in [draft, &hidden] {
            let (status, _) = get(server, &format!("/api/posts/{secret}"), cookie).await;
            assert_eq!(status, 404, "{name} must not see post {secret}");
        }
        let (_, drafts) = get(server, "/api/posts?published=false", cookie).await;
        assert_eq!(drafts["pagination"]["total"], 0, "{name}");
    }
    for (name, cookie) in [("author", &author.cookie), ("moderator", &moderator.cookie)] {
        let (_, list) = get(server, "/api/posts", Some(cookie)).await;
        assert_eq!(
            ids(&list, "posts"),
            vec![hidden.clone(), draft.clone(), public.clone()],
            "{name}"
        );
        assert_eq!(list["pagination"]["total"], 3, "{name}");
        let statuses: Vec<&str> = items(&list, "posts")
            .iter()
            .map(|post| post["status"].as_str().unwrap())
            .collect();
        assert_eq!(statuses, ["hidden", "draft", "published"], "{name}");
        let (_, drafts) = get(server, "/api/posts?published=false", Some(cookie)).await;
        assert_eq!(ids(&drafts, "posts"), vec![draft.clone()], "{name}");
        assert_eq!(drafts["pagination"]["total"], 1, "{name}");
    }
    // A tag or author filter narrows what the caller sees; it never widens it.
    let by_author_path = format!("/api/posts?author={}", author.id);
    let (_, by_author) = get(server, &by_author_path, None).await;
    assert_eq!(by_author["pagination"]["total"], 1);
    let (_, by_author) = get(server, &by_author_path, Some(&moderator.cookie)).await;
    assert_eq!(by_author["pagination"]["total"], 3);
    let (_, tagged) = get(server, "/api/posts?tag=INTRO", None).await;
    assert_eq!(ids(&tagged, "posts"), vec![public.clone()]);
    // Publishing a hidden post does not bring it back.
    let hidden_path = format!("/api/posts/{hidden}");
    let publish = Some(json!({"published": true}));
    let (status, republished) =
        call(server, "PUT", &hidden_path, Some(&author.cookie), publish).await;
    assert_eq!(status, 200);
    assert_eq!(republished["status"], "hidden");
    let (status, _) = get(server, &hidden_path, None).await;
    assert_eq!(status, 404);
    // A flagged post stays public.
    server
        .sql(&format!(
            "UPDATE posts SET moderation = 'flagged' WHERE id = {public}"
        ))
        .await;
    let (_, list) = get(server, "/api/posts", None).await;
    assert_eq!(list["pagination"]["total"], 1);
    let (_, seen) = get(
        server,
        &format!("/api/posts/{public}"),
        Some(&author.cookie),
    )
    .await;
    assert_eq!(seen["status"], "flagged");
}

async fn only_authors_and_moderators_change_posts(backend: Backend) {
    let stage = Stage::new(backend).await;
    let (server, author) = (&stage.server, Some(stage.author.cookie.as_str()));
    let other = Member::join(server, "other@example.com", "user").await;
    let moderator = Member::join(server, "mod@example.com", "moderator").await;
    let (other, moderator) = (Some(other.cookie.as_str()), Some(moderator.cookie.as_str()));
    let change = Some(json!({"title": "Changed"}));
    let path = format!("/api/posts/{}", stage.public);
    let draft_path = format!("/api/posts/{}", stage.draft);

    assert_eq!(
        status(server, "PUT", &path, None, change.clone()).await,
        401
    );
    assert_eq!(
        status(server, "PUT", &path, other, change.clone()).await,
        403
    );
    assert_eq!(status(server, "DELETE", &path, other, None).await, 403);
    assert_eq!(
        status(server, "PUT", &draft_path, other, change.clone()).await,
        404,
        "a draft is not even there for others"
    );
    assert_eq!(
        status(server, "DELETE", &draft_path, other, None).await,
        404
    );

    let retitle = json!({"title": "  Changed  ", "tags": ["a", "A", "b"]});
    let (status_code, changed) = call(server, "PUT", &path, author, Some(retitle)).await;
    assert_eq!(status_code, 200, "{changed}");
    assert_eq!(changed["title"], "Changed");
    assert_eq!(changed["tags"], json!(["a", "b"]));
    assert_eq!(changed["content"], "Out in the open");
    assert_ne!(changed["updated_at"], changed["created_at"]);

    let edit = json!({"content": "Edited by a moderator"});
    let (status_code, moderated) = call(server, "PUT", &draft_path, moderator, Some(edit)).await;
    assert_eq!(status_code, 200);
    assert_eq!(moderated["content"], "Edited by a moderator");
    assert_eq!(
        status(server, "DELETE", &draft_path, moderator, None).await,
        204
    );
    assert_eq!(get(server, &draft_path, author).await.0, 404);
    assert_eq!(status(server, "DELETE", &path, author, None).await, 204);
    assert_eq!(status(server, "DELETE", &path, author, None).await, 404);
    let (_, list) = get(server, "/api/posts", moderator).await;
    assert_eq!(list["pagination"]["total"], 0);
    for bad in ["abc", "-1", "0", "1.5", "99999999999999999999"] {
        let (status_code, _) = get(server, &format!("/api/posts/{bad}"), None).await;
        assert_eq!(status_code, 404, "{bad}");
    }
}

async fn post_input_limits_answer_422_naming_the_field(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, author) = member(&server, "author@example.com", "user").await;
    let long_tag = "t".repeat(31);
    let eleven: Vec<String> = (0..11).map(|n| format!("tag{n}")).collect();
    let cases = [
        (json!({"title": "", "content": "x"}), "title"),
        (json!({"title": "   ", "content": "x"}), "title"),
        (json!({"title": "t".repeat(201), "content": "x"}), "title"),
        (json!({"title": "two\nlines", "content": "x"}), "title"),
        (json!({"title": "ok", "content": ""}), "content"),
        (
            json!({"title": "ok", "content": "c".repeat(20_001)}),
            "content",
        ),
        (
            json!({"title": "ok", "content": "nul \u{0} byte"}),
            "content",
        ),
        (
            json!({"title": "ok", "content": "x", "tags": eleven}),
            "tags",
        ),
        (
            json!({"title": "ok", "content": "x", "tags": ["fine", long_tag]}),
            "tags[1]",
        ),
        (
            json!({"title": "ok", "content": "x", "tags": ["no spaces"]}),
            "tags[0]",
        ),
        (
            json!({"title": "ok", "content": "x", "tags": ["<script>"]}),
            "tags[0]",
        ),
        (json!({"title": 5, "content": "x"}), "title"),
        (json!({"content": "x"}), "title"),
        (
            json!({"title": "ok", "content": "x", "published": "yes"}),
            "published",
        ),
        (
            json!({"title": "ok", "content": "x", "tags": "one"}),
            "tags",
        ),
    ];
    for (body, field) in cases {
        let (status, error) = call(
            &server,
            "POST",
            "/api/posts",
            Some(&author),
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(error["error"]["code"], "VALIDATION_ERROR");
        assert_eq!(error["error"]["details"]["field"], field, "{body}: {error}");
        assert!(
            !error["error"]["details"]["reason"]
                .as_str()
                .unwrap()
                .is_empty()
        );
    }
    // Exactly at every limit is fine, in any script.
    let ten: Vec<String> = (0..10).map(|n| format!("标签{n}")).collect();
    let id = post(
        &server,
        &author,
        json!({"title": "é".repeat(200), "content": "日".repeat(20_000), "tags": ten, "published": true}),
    )
    .await;
    let (_, stored) = get(&server, &format!("/api/posts/{id}"), None).await;
    assert_eq!(stored["title"].as_str().unwrap().chars().count(), 200);
    assert_eq!(items(&stored, "tags").len(), 10);
    // Updates follow the same limits, and must change something.
    let path = format!("/api/posts/{id}");
    for (body, field) in [
        (json!({"title": "t".repeat(201)}), "title"),
        (json!({"tags": ["ok", "not ok"]}), "tags[1]"),
        (json!({}), "body"),
    ] {
        let (status, error) = call(&server, "PUT", &path, Some(&author), Some(body.clone())).await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(error["error"]["details"]["field"], field, "{body}: {error}");
    }
    let malformed = server
        .post_raw(
            "/api/posts",
            Some(&author),
            "application/json",
            "{\"title\": ",
        )
        .await;
    assert_eq!(malformed.status(), 400, "malformed JSON is 400");
}

async fn post_pages_handle_their_edges(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, author) = member(&server, "author@example.com", "user").await;
    let mut created = Vec::new();
    for title in ["delta", "alpha", "echo", "charlie", "bravo"] {
        created.push(post(&server, &author, json!({"title": title, "content": "x"})).await);
    }
    let newest_first: Vec<String> = created.iter().rev().cloned().collect();
    let (_, first) = get(&server, "/api/posts?limit=2", None).await;
    assert_eq!(ids(&first, "posts"), newest_first[..2]);
    assert_eq!(
        first["pagination"],
        json!({"total": 5, "limit": 2, "offset": 0, "hasMore": true})
    );
    let (_, last) = get(&server, "/api/posts?limit=2&offset=4", None).await;
    assert_eq!(ids(&last, "posts"), newest_first[4..]);
    assert_eq!(last["pagination"]["hasMore"], false);
    for offset in ["5", "6", "1000000", "9223372036854775807"] {
        let (status, past) = get(&server, &format!("/api/posts?offset={offset}"), None).await;
        assert_eq!(status, 200, "offset {offset}");
        assert_eq!(past["posts"], json!([]));
        assert_eq!(past["pagination"]["total"], 5);
        assert_eq!(past["pagination"]["hasMore"], false);
    }
    let (status, all) = get(&server, "/api/posts?limit=100", None).await;
    assert_eq!(status, 200);
    assert_eq!(ids(&all, "posts").len(), 5);
    for (query, field) in [
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("limit=-1", "limit"),
        ("limit=ten", "limit"),
        ("offset=-1", "offset"),
        ("offset=9223372036854775808", "offset"),
        ("sort=author_id", "sort"),
        ("sort=created_at;DROP TABLE posts", "sort"),
        ("order=sideways", "order"),
        ("order=DESC", "order"),
    ] {
        let (status, error) = get(&server, &format!("/api/posts?{query}"), None).await;
        assert_eq!(status, 422, "{query}");
        assert_eq!(error["error"]["details"]["field"], field, "{query}");
    }
    let (_, by_title) = get(&server, "/api/posts?sort=title&order=asc", None).await;
    let titles: Vec<&str> = items(&by_title, "posts")
        .iter()
        .map(|post| post["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["alpha", "bravo", "charlie", "delta", "echo"]);
    let (_, oldest) = get(&server, "/api/posts?order=asc&limit=1", None).await;
    assert_eq!(ids(&oldest, "posts"), created[..1]);
    server
        .sql(&format!(
            "UPDATE posts SET updated_at = updated_at + 100000 WHERE id = {}",
            created[2]
        ))
        .await;
    let (_, recently_updated) = get(&server, "/api/posts?sort=updated_at&limit=1", None).await;
    assert_eq!(ids(&recently_updated, "posts"), created[2..3]);
}

async fn hostile_and_unicode_filters_never_break_the_list(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (author_id, author) = member(&server, "author@example.com", "user").await;
    let unicode = post(
        &server,
        &author,
        json!({"title": "Ünïcödé 日本語 🎉", "content": "مرحبا", "tags": ["日本語", "Ünï-code"]}),
    )
    .await;
    post(
        &server,
        &author,
        json!({"title": "plain", "content": "x", "tags": ["plain"]}),
    )
    .await;
    let hostile = [
        "' OR 1=1 --",
        "1 OR 1=1",
        "1; DROP TABLE posts",
        "\" OR \"\"=\"",
        "%27%20OR%20%271%27%3D%271",
        "%00",
        "1%00",
        "日本語",
        "🎉",
        "%E2%80%AE",
        "",
    ];
    for value in hostile {
        for field in [
            "author",
            "published",
            "tag",
            "sort",
            "order",
            "limit",
            "offset",
        ] {
            let (status, body) = get(&server, &format!("/api/posts?{field}={value}"), None).await;
            assert!(
                status == 200 || status == 422,
                "{field}={value} answered {status}: {body}"
            );
            if status == 422 {
                assert_eq!(body["error"]["details"]["field"], field, "{field}={value}");
            }
        }
    }
    let (_, tagged) = get(&server, "/api/posts?tag=%E6%97%A5%E6%9C%AC%E8%AA%9E", None).await;
    assert_eq!(ids(&tagged, "posts"), vec![unicode.clone()]);
    let (_, tagged) = get(&server, "/api/posts?tag=%C3%9Cn%C3%AF-CODE", None).await;
    assert_eq!(
        ids(&tagged, "posts"),
        vec![unicode.clone()],
        "tags match case-insensitively"
    );
    let (status, none) = get(&server, "/api/posts?tag=missing", None).await;
    assert_eq!(
        (status, none["pagination"]["total"].clone()),
        (200, json!(0))
    );
    let (_, by_author) = get(&server, &format!("/api/posts?author={author_id}"), None).await;
    assert_eq!(by_author["pagination"]["total"], 2);
    let (_, stored) = get(&server, &format!("/api/posts/{unicode}"), None).await;
    assert_eq!(stored["title"], "Ünïcödé 日本語 🎉");
    assert_eq!(stored["content"], "مرحبا");
    for value in ["' OR 1=1 --", "x%00y", "%F0%9F%8E%89"] {
        let (status, _) = get(&server, &format!("/api/users?role={value}"), None).await;
        assert_eq!(status, 422, "role={value}");
        let (status, _) = get(&server, &format!("/api/users?sort={value}"), None).await;
        assert_eq!(status, 422, "sort={value}");
    }
    let (_, everything) = get(&server, "/api/posts", None).await;
    assert_eq!(
        everything["pagination"]["total"], 2,
        "nothing was dropped or added"
    );
}

async fn emails_are_shown_to_their_owner_and_admins_only(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (user_id, user) = member(&server, "user@example.com", "user").await;
    let (private_id, private) = member(&server, "private@example.com", "user").await;
    let (admin_id, admin) = member(&server, "admin@example.com", "admin").await;
    let (banned_id, _) = member(&server, "banned@example.com", "user").await;
    server.ban("banned@example.com");
    let (status, _) = call(
        &server,
        "PUT",
        &format!("/api/users/{private_id}"),
        Some(&private),
        Some(json!({"profile_public": false})),
    )
    .await;
    assert_eq!(status, 200);

    let (_, anonymous) = get(&server, "/api/users", None).await;
    let mut seen = ids(&anonymous, "users");
    seen.sort();
    let mut expected = vec![user_id.to_string(), admin_id.to_string()];
    expected.sort();
    assert_eq!(seen, expected, "only active users with public profiles");
    assert_eq!(anonymous["pagination"]["total"], 2);
    assert!(
        items(&anonymous, "users")
            .iter()
            .all(|u| u["email"].is_null())
    );

    let (_, as_user) = get(&server, "/api/users", Some(&user)).await;
    for listed in items(&as_user, "users") {
        if listed["id"].as_str() == Some(user_id.to_string().as_str()) {
            assert_eq!(listed["email"], "user@example.com");
        } else {
            assert!(listed["email"].is_null(), "{listed}");
        }
    }
    let (_, as_admin) = get(&server, "/api/users?order=asc", Some(&admin)).await;
    assert_eq!(as_admin["pagination"]["total"], 4);
    assert!(
        items(&as_admin, "users")
            .iter()
            .all(|u| u["email"].is_string())
    );
    let (_, banned_only) = get(&server, "/api/users?status=banned", Some(&admin)).await;
    assert_eq!(ids(&banned_only, "users"), vec![banned_id.to_string()]);
    let (_, banned_hidden) = get(&server, "/api/users?status=banned", None).await;
    assert_eq!(banned_hidden["pagination"]["total"], 0);
    let (_, admins) = get(&server, "/api/users?role=admin", None).await;
    assert_eq!(ids(&admins, "users"), vec![admin_id.to_string()]);
    let (_, by_name) = get(&server, "/api/users?sort=username&order=asc", Some(&admin)).await;
    let names: Vec<&str> = items(&by_name, "users")
        .iter()
        .map(|u| u["username"].as_str().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);

    let (status, one) = get(&server, &format!("/api/users/{user_id}"), None).await;
    assert_eq!(status, 200);
    assert!(one["email"].is_null());
    assert_eq!(one["id"], user_id.to_string());
    let (_, own) = get(&server, &format!("/api/users/{user_id}"), Some(&user)).await;
    assert_eq!(own["email"], "user@example.com");
    for hidden in [private_id, banned_id] {
        assert_eq!(
            get(&server, &format!("/api/users/{hidden}"), None).await.0,
            404
        );
        assert_eq!(
            get(&server, &format!("/api/users/{hidden}"), Some(&user))
                .await
                .0,
            404
        );
        let (status, seen) = get(&server, &format!("/api/users/{hidden}"), Some(&admin)).await;
        assert_eq!(status, 200);
        assert!(seen["email"].is_string());
    }
    let (_, own_private) = get(&server, &format!("/api/users/{private_id}"), Some(&private)).await;
    assert_eq!(own_private["email"], "private@example.com");
    assert_eq!(get(&server, "/api/users/424242", Some(&admin)).await.0, 404);
    assert_eq!(get(&server, "/api/users/abc", None).await.0, 404);
}

async fn users_change_themselves_and_admins_change_lower_roles(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (user_id, user) = member(&server, "user@example.com", "user").await;
    let (other_id, other) = member(&server, "other@example.com", "user").await;
    let (admin_id, admin) = member(&server, "admin@example.com", "admin").await;
    let (peer_id, _) = member(&server, "peer@example.com", "admin").await;
    let (_, root) = member(&server, "root@example.com", "super_admin").await;
    let put = |id: i64, cookie: &str, body: Value| {
        let path = format!("/api/users/{id}");
        let cookie = cookie.to_owned();
        let server = &server;
        async move { call(server, "PUT", &path, Some(&cookie), Some(body)).await }
    };

    let (status, changed) = put(
        user_id,
        &user,
        json!({"name": " Ada ", "bio": "Line one\nline two", "location": "London",
               "username": "ada.l", "image": "https://img.example/a.png", "role": "user"}),
    )
    .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["name"], "Ada");
    assert_eq!(changed["username"], "ada.l");
    assert_eq!(changed["image"], "https://img.example/a.png");
    assert_eq!(changed["email"], "user@example.com");
    let (_, cleared) = put(user_id, &user, json!({"image": null, "name": null})).await;
    assert!(cleared["image"].is_null() && cleared["name"].is_null());
    assert_eq!(cleared["bio"], "Line one\nline two", "absent fields stay");

    assert_eq!(put(user_id, &user, json!({"role": "admin"})).await.0, 403);
    assert_eq!(
        put(user_id, &user, json!({"status": "inactive"})).await.0,
        403
    );
    assert_eq!(
        put(admin_id, &admin, json!({"role": "user"})).await.0,
        403,
        "not even admins"
    );
    assert_eq!(
        put(admin_id, &admin, json!({"status": "banned"})).await.0,
        403
    );
    assert_eq!(put(other_id, &user, json!({"bio": "hacked"})).await.0, 403);
    assert_eq!(
        put(peer_id, &admin, json!({"bio": "hacked"})).await.0,
        403,
        "an equal role"
    );
    assert_eq!(
        put(other_id, &admin, json!({"role": "super_admin"}))
            .await
            .0,
        403
    );
    assert_eq!(
        put(user_id, &admin, json!({"username": "other"})).await.0,
        409
    );
    for (body, field) in [
        (json!({"username": "Bad Name"}), "username"),
        (json!({"image": "javascript:alert(1)"}), "image"),
        (json!({"bio": "b".repeat(501)}), "bio"),
        (json!({"name": ""}), "name"),
        (json!({"location": "a\u{0}b"}), "location"),
        (json!({"role": "root"}), "role"),
        (json!({"status": "gone"}), "status"),
        (json!({"profile_public": "no"}), "profile_public"),
        (json!({}), "body"),
        (json!({"email": "new@example.com"}), "body"),
    ] {
        let (status, error) = put(user_id, &user, body.clone()).await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(error["error"]["details"]["field"], field, "{body}: {error}");
    }

    let (status, promoted) = put(
        other_id,
        &admin,
        json!({"role": "moderator", "bio": "Helps out"}),
    )
    .await;
    assert_eq!(status, 200, "{promoted}");
    let (_, session) = get(&server, "/api/auth/session", Some(&other)).await;
    assert_eq!(session["user"]["roles"], json!(["moderator"]));
    let (status, _) = put(peer_id, &root, json!({"role": "moderator"})).await;
    assert_eq!(status, 200, "a super admin manages admins");
    let (status, refused) = put(other_id, &admin, json!({"status": "banned"})).await;
    assert_eq!(status, 422, "bans go through the ban operations: {refused}");
    assert_eq!(refused["error"]["details"]["field"], "status");
    let (status, deactivated) = put(other_id, &admin, json!({"status": "inactive"})).await;
    assert_eq!(status, 200);
    assert_eq!(deactivated["id"], other_id.to_string());
    let (_, session) = get(&server, "/api/auth/session", Some(&other)).await;
    assert_eq!(
        session,
        Value::Null,
        "deactivation ends the sessions at once"
    );
    assert_eq!(put(424242, &admin, json!({"bio": "x"})).await.0, 404);
}

async fn deleting_a_user_deletes_their_content_everywhere(backend: Backend) {
    let stage = Stage::new(backend).await;
    let (server, leaver, leaving) = (&stage.server, &stage.author, &stage.public);
    let stayer = Member::join(server, "stayer@example.com", "user").await;
    let victim = Member::join(server, "victim@example.com", "user").await;
    let admin = Member::join(server, "admin@example.com", "admin").await;
    let moderator = Member::join(server, "mod@example.com", "moderator").await;
    let moderator = Some(moderator.cookie.as_str());
    let staying = post(
        server,
        &stayer.cookie,
        json!({"title": "Still", "content": "x"}),
    )
    .await;
    let report = Some(json!({"reason": "spam"}));
    for (reported, reporter) in [(&staying, leaver), (leaving, &stayer)] {
        let path = format!("/api/posts/{reported}/report");
        let answer = status(
            server,
            "POST",
            &path,
            Some(&reporter.cookie),
            report.clone(),
        )
        .await;
        assert_eq!(answer, 201);
    }

    let leaver_path = format!("/api/users/{}", leaver.id);
    assert_eq!(
        status(server, "DELETE", &leaver_path, Some(&stayer.cookie), None).await,
        403
    );
    assert_eq!(
        status(server, "DELETE", &leaver_path, Some(&leaver.cookie), None).await,
        204
    );
    assert_eq!(get(server, &leaver_path, Some(&admin.cookie)).await.0, 404);
    assert_eq!(
        get(server, &format!("/api/posts/{leaving}"), moderator)
            .await
            .0,
        404
    );
    let (_, list) = get(server, "/api/posts", moderator).await;
    assert_eq!(ids(&list, "posts"), vec![staying.clone()]);
    assert_eq!(
        list["pagination"]["total"], 1,
        "the counters followed the cascade"
    );
    let (_, anonymous) = get(server, "/api/posts", None).await;
    assert_eq!(anonymous["pagination"]["total"], 1);
    let (_, tagged) = get(server, "/api/posts?tag=intro", moderator).await;
    assert_eq!(tagged["pagination"]["total"], 0);
    let (_, found) = get(server, "/api/search/posts?q=zanzibar", moderator).await;
    assert_eq!(
        found["results"],
        json!([]),
        "the search index followed the cascade"
    );
    let db = server.domain().await;
    let reports = db
        .reports_for_posts(&[staying.parse().unwrap()])
        .await
        .unwrap();
    assert!(
        reports.is_empty(),
        "reports by the deleted user went with them"
    );
    assert_eq!(
        db.post_by_id(staying.parse().unwrap())
            .await
            .unwrap()
            .report_count,
        0
    );
    assert_eq!(db.moderation_stats(0).await.unwrap().reports_open, 0);
    let ended = Value::Null;
    assert_eq!(
        get(server, "/api/auth/session", Some(&leaver.cookie))
            .await
            .1,
        ended
    );

    let victim_path = format!("/api/users/{}", victim.id);
    assert_eq!(
        status(server, "DELETE", &victim_path, Some(&admin.cookie), None).await,
        204
    );
    assert_eq!(
        get(server, "/api/auth/session", Some(&victim.cookie))
            .await
            .1,
        ended
    );
    let missing = status(
        server,
        "DELETE",
        "/api/users/424242",
        Some(&admin.cookie),
        None,
    )
    .await;
    assert_eq!(missing, 404);
}

async fn public_profiles_and_generated_avatars(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (status, created) = call(
        &server,
        "POST",
        "/api/users",
        None,
        Some(json!({"email": "grace@example.com", "password": PASSWORD, "name": "Grace Hopper"})),
    )
    .await;
    assert_eq!(status, 201);
    let id = created["id"].as_str().unwrap().to_owned();
    let grace = server.sign_in("grace@example.com", PASSWORD).await;
    call(
        &server,
        "PUT",
        &format!("/api/users/{id}"),
        Some(&grace),
        Some(json!({"bio": "Compilers"})),
    )
    .await;
    let (status, profile) = get(&server, &format!("/api/users/{id}/profile"), None).await;
    assert_eq!(status, 200);
    assert_eq!(profile["id"], id);
    assert_eq!(profile["username"], "grace_hopper");
    assert_eq!(profile["display_name"], "Grace Hopper");
    assert_eq!(profile["bio"], "Compilers");
    assert_eq!(profile["profile_visibility"], "public");
    assert!(profile["created_at"].as_str().unwrap().ends_with('Z'));
    let avatar = profile["avatar_url"].as_str().unwrap();
    assert!(
        avatar.ends_with(&format!("/api/avatar-image?seed={id}")),
        "{avatar}"
    );
    assert!(profile.get("email").is_none());
    let generated = server.get(&format!("/api/avatar-image?seed={id}")).await;
    assert_eq!(generated.status(), 200, "the generated URL serves an image");

    let (_, unnamed) = call(
        &server,
        "POST",
        "/api/users",
        None,
        Some(json!({"email": "x.y@example.com", "password": PASSWORD, "username": "xy_1"})),
    )
    .await;
    let (_, profile) = get(
        &server,
        &format!("/api/users/{}/profile", unnamed["id"].as_str().unwrap()),
        None,
    )
    .await;
    assert_eq!(profile["display_name"], "xy_1", "no name: the username");

    call(
        &server,
        "PUT",
        &format!("/api/users/{id}"),
        Some(&grace),
        Some(json!({"image": "https://img.example/g.png"})),
    )
    .await;
    let (_, profile) = get(&server, &format!("/api/users/{id}/profile"), None).await;
    assert_eq!(profile["avatar_url"], "https://img.example/g.png");
    call(
        &server,
        "PUT",
        &format!("/api/users/{id}"),
        Some(&grace),
        Some(json!({"profile_public": false})),
    )
    .await;
    assert_eq!(
        get(&server, &format!("/api/users/{id}/profile"), None)
            .await
            .0,
        404
    );
    assert_eq!(
        get(&server, &format!("/api/users/{id}/profile"), Some(&grace))
            .await
            .0,
        404
    );
    assert_eq!(get(&server, "/api/users/999999/profile", None).await.0, 404);
    assert_eq!(get(&server, "/api/users/1x/profile", None).await.0, 404);
    let banned = server.create_user("banned@example.com", PASSWORD, "user");
    server.ban("banned@example.com");
    assert_eq!(
        get(&server, &format!("/api/users/{banned}/profile"), None)
            .await
            .0,
        404
    );
}

async fn posts_are_reported_once_per_user(backend: Backend) {
    let stage = Stage::new(backend).await;
    let (server, target) = (&stage.server, &stage.public);
    let author = Some(stage.author.cookie.as_str());
    let reporter = Member::join(server, "reporter@example.com", "user").await;
    let second = Member::join(server, "second@example.com", "user").await;
    let (reporter_id, reporter) = (reporter.id, Some(reporter.cookie.as_str()));
    let path = format!("/api/posts/{target}/report");
    let reason = |text: &str| Some(json!({"reason": text}));

    assert_eq!(
        status(server, "POST", &path, None, reason("spam")).await,
        401
    );
    for (body, field) in [
        (json!({"reason": ""}), "reason"),
        (json!({"reason": "r".repeat(1001)}), "reason"),
        (json!({}), "reason"),
    ] {
        let (status, error) = call(server, "POST", &path, reporter, Some(body)).await;
        assert_eq!(status, 422);
        assert_eq!(error["error"]["details"]["field"], field);
    }
    let (status_code, report) =
        call(server, "POST", &path, reporter, reason(" Spam, obviously ")).await;
    assert_eq!(status_code, 201, "{report}");
    assert_eq!(report["post_id"], target.as_str());
    assert_eq!(report["reason"], "Spam, obviously");
    assert!(report["id"].is_string() && report["created_at"].is_string());
    let (status_code, again) = call(server, "POST", &path, reporter, reason("again")).await;
    assert_eq!(status_code, 409);
    assert_eq!(again["error"]["code"], "CONFLICT");
    let second = Some(second.cookie.as_str());
    assert_eq!(
        status(server, "POST", &path, second, reason("also")).await,
        201
    );
    assert_eq!(
        status(server, "POST", &path, author, reason("mine")).await,
        403
    );
    let draft_path = format!("/api/posts/{}/report", stage.draft);
    assert_eq!(
        status(server, "POST", &draft_path, reporter, reason("x")).await,
        404
    );
    let missing_path = "/api/posts/999999/report";
    assert_eq!(
        status(server, "POST", missing_path, reporter, reason("x")).await,
        404
    );

    // What the admin surface will read.
    let db = server.domain().await;
    let target_id: i64 = target.parse().unwrap();
    assert_eq!(db.post_by_id(target_id).await.unwrap().report_count, 2);
    let reports = db.reports_for_posts(&[target_id]).await.unwrap();
    assert_eq!(reports[&target_id].len(), 2);
    assert_eq!(reports[&target_id][0].reporter_id, reporter_id);
    let query = plaza_domain::posts::PostQuery {
        reported_only: true,
        ..Default::default()
    };
    let page = plaza_domain::listing::Page {
        limit: 10,
        offset: 0,
    };
    let reported = db
        .list_posts(&query, plaza_domain::posts::Viewer::Moderator(0), page)
        .await
        .unwrap();
    assert_eq!((reported.total, reported.posts[0].id), (1, target_id));
    let before = db.moderation_stats(0).await.unwrap();
    assert_eq!(
        (
            before.reports_received,
            before.reports_open,
            before.posts_with_open_reports
        ),
        (2, 2, 1)
    );
    let resolved = db
        .write(|tx| {
            Box::pin(plaza_domain::reports::resolve(
                tx,
                plaza_domain::reports::ReportTarget::Post,
                target_id,
                1,
            ))
        })
        .await
        .unwrap();
    assert_eq!(resolved, 2);
    let after = db.moderation_stats(0).await.unwrap();
    assert_eq!((after.reports_resolved, after.reports_open), (2, 0));
    assert!(
        after
            .average_resolution_millis
            .is_some_and(|millis| millis >= 0.0)
    );
    let hidden = db
        .write(|tx| {
            Box::pin(plaza_domain::posts::set_moderation(
                tx,
                target_id,
                plaza_domain::posts::Moderation::Hidden,
            ))
        })
        .await
        .unwrap();
    assert_eq!(hidden.status(), plaza_domain::posts::PostStatus::Hidden);
    let counts = db.post_status_counts().await.unwrap();
    assert_eq!(
        (counts["hidden"], counts["draft"], counts["published"]),
        (1, 1, 0)
    );
    let post_path = format!("/api/posts/{target}");
    assert_eq!(
        status(server, "DELETE", &post_path, author, None).await,
        204
    );
    assert!(db.reports_for_posts(&[target_id]).await.unwrap().is_empty());
}

async fn cached_answers_never_outlive_a_write(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, author) = member(&server, "author@example.com", "user").await;
    let first = post(
        &server,
        &author,
        json!({"title": "First walrus", "content": "x"}),
    )
    .await;
    let list = "/api/posts?limit=5";
    let search = "/api/search/posts?q=walrus";
    let (_, before) = get(&server, list, None).await;
    assert_eq!(ids(&before, "posts"), vec![first.clone()]);
    let (_, found) = get(&server, search, None).await;
    assert_eq!(items(&found, "results").len(), 1);
    assert_eq!(
        get(&server, list, None).await.1,
        before,
        "the same answer twice"
    );

    // A write through the API: the instance that made it answers with it at
    // once.
    let second = post(
        &server,
        &author,
        json!({"title": "Second walrus", "content": "x"}),
    )
    .await;
    let (_, after) = get(&server, list, None).await;
    assert_eq!(ids(&after, "posts"), vec![second.clone(), first.clone()]);
    let (_, found) = get(&server, search, None).await;
    assert_eq!(items(&found, "results").len(), 2);
    // Writes behind its back in plain SQL: answered within a second.
    server
        .sql(&format!(
            "UPDATE posts SET title = 'Renamed' WHERE id = {second}"
        ))
        .await;
    let renamed =
        within_a_second(&server, list, |page| page["posts"][0]["title"] == "Renamed").await;
    assert_eq!(renamed["posts"][0]["title"], "Renamed");
    server
        .sql(&format!(
            "UPDATE posts SET published = FALSE WHERE id = {first}"
        ))
        .await;
    let hidden = within_a_second(&server, list, |page| page["pagination"]["total"] == 1).await;
    assert_eq!(ids(&hidden, "posts"), vec![second.clone()]);
    // Signed-in callers and no-cache requests are answered afresh.
    let (_, own) = get(&server, list, Some(&author)).await;
    assert_eq!(
        own["pagination"]["total"], 2,
        "the author still sees the draft"
    );
    let fresh = server
        .client
        .get(server.url(list))
        .header("cache-control", "no-cache")
        .send()
        .await
        .unwrap();
    assert_eq!(fresh.headers()["content-type"], "application/json");
    let fresh: Value = fresh.json().await.unwrap();
    assert_eq!(fresh, hidden);
}

/// The anonymous answer to `path` once `fresh` holds for it, failing when
/// a request sent more than a second after the call is still answered
/// otherwise (the bound docs/api.md states for cached public answers).
async fn within_a_second(server: &TestServer, path: &str, fresh: impl Fn(&Value) -> bool) -> Value {
    let written = std::time::Instant::now();
    loop {
        let sent = std::time::Instant::now();
        let (_, answer) = get(server, path, None).await;
        if fresh(&answer) {
            return answer;
        }
        assert!(
            sent.duration_since(written) < std::time::Duration::from_secs(1),
            "still {answer} more than a second after the write"
        );
    }
}

/// Who gets what on the public content routes: every actor of the cast,
/// and a banned user, on the stage author's posts and another user.
async fn access_matrix(backend: Backend) {
    let stage = Stage::new(backend).await;
    let (server, public, draft) = (&stage.server, &stage.public, &stage.draft);
    let cast = Cast::new(server).await;
    let banned = Member::join(server, "banned@example.com", "user").await;
    let target = Member::join(server, "target@example.com", "user").await;
    server.ban(&banned.email);
    let mut actors = cast.actors();
    actors.push(("banned", banned.session()));
    let (user, target) = (cast.user.id, target.id);
    let new_post = || Some(json!({"title": "t", "content": "c"}));
    let edit = || Some(json!({"title": "Edited"}));
    let report = || Some(json!({"reason": "r"}));
    let bio = Some(json!({"bio": "b"}));
    let promote = Some(json!({"role": "moderator"}));
    // Columns: anonymous, the user, moderator, admin and super_admin
    // sessions, the admin:read, :write, :delete and :super tokens, banned.
    #[rustfmt::skip]
    let rows = vec![
        row("GET", "/api/posts", None,                                 [200, 200, 200, 200, 200, 200, 200, 200, 200, 200]),
        row("GET", format!("/api/posts/{public}"), None,               [200, 200, 200, 200, 200, 200, 200, 200, 200, 200]),
        row("GET", format!("/api/posts/{draft}"), None,                [404, 404, 200, 200, 200, 404, 404, 404, 404, 404]),
        row("POST", "/api/posts", new_post(),                          [401, 201, 201, 201, 201, 401, 401, 401, 401, 401]),
        row("PUT", format!("/api/posts/{public}"), edit(),             [401, 403, 200, 200, 200, 401, 401, 401, 401, 401]),
        row("PUT", format!("/api/posts/{draft}"), edit(),              [401, 404, 200, 200, 200, 401, 401, 401, 401, 401]),
        row("POST", format!("/api/posts/{public}/report"), report(),   [401, 201, 201, 201, 201, 401, 401, 401, 401, 401]),
        row("POST", format!("/api/posts/{draft}/report"), report(),    [401, 404, 201, 201, 201, 401, 401, 401, 401, 401]),
        row("GET", "/api/users", None,                                 [200, 200, 200, 200, 200, 200, 200, 200, 200, 200]),
        row("GET", format!("/api/users/{target}"), None,               [200, 200, 200, 200, 200, 200, 200, 200, 200, 200]),
        row("GET", format!("/api/users/{target}/profile"), None,       [200, 200, 200, 200, 200, 200, 200, 200, 200, 200]),
        row("PUT", format!("/api/users/{target}"), bio,                [401, 403, 403, 200, 200, 401, 401, 401, 401, 401]),
        row("GET", "/api/search?q=x", None,                            [200, 200, 200, 200, 200, 200, 200, 200, 200, 200]),
        row("GET", "/api/search/posts?q=x", None,                      [200, 200, 200, 200, 200, 200, 200, 200, 200, 200]),
        row("GET", "/api/search/users?q=x", None,                      [200, 200, 200, 200, 200, 200, 200, 200, 200, 200]),
        row("DELETE", format!("/api/posts/{draft}"), None,             [401, 404, 204, 404, 404, 401, 401, 401, 401, 401]),
        row("DELETE", format!("/api/users/{target}"), None,            [401, 403, 403, 204, 404, 401, 401, 401, 401, 401]),
        // Last: it makes the user a moderator.
        row("PUT", format!("/api/users/{user}"), promote,              [401, 403, 403, 200, 200, 401, 401, 401, 401, 401]),
    ];
    assert_statuses(server, &actors, rows).await;
}
