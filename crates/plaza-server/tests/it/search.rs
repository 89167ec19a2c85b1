//! Search through HTTP: ranking, prefix matching, highlighting, visibility,
//! staying in step with writes, hostile input; and the query plans of every
//! list and search on seeded data.

use crate::common::{Backend, TestServer, call, member, post};
use plaza_domain::posts::{PostQuery, PostSort, Viewer};
use plaza_domain::search::SearchTerms;
use plaza_domain::users::{Role, UserQuery, UserSort, UserStatus};
use plaza_domain::{Database, DatabaseOptions, listing::SortOrder};
use serde_json::{Value, json};

on_both_databases!(
    exact_titles_rank_first_and_matches_are_highlighted,
    users_are_found_by_name_and_bio_but_never_by_email,
    search_never_shows_what_the_caller_may_not_see,
    search_follows_updates_and_deletes,
    search_input_is_checked_and_hostile_queries_are_plain_words,
    seeded_lists_and_searches_read_indexes,
);

async fn search(server: &TestServer, query: &str, cookie: Option<&str>) -> Value {
    let (status, body) = call(
        server,
        "GET",
        &format!("/api/search/posts?{query}"),
        cookie,
        None,
    )
    .await;
    assert_eq!(status, 200, "{query}: {body}");
    body
}

fn titles(results: &Value) -> Vec<String> {
    results["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results in {results}"))
        .iter()
        .map(|hit| hit["title"].as_str().unwrap().to_owned())
        .collect()
}

async fn exact_titles_rank_first_and_matches_are_highlighted(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, author) = member(&server, "author@example.com", "user").await;
    post(&server, &author, json!({"title": "Async patterns in Rust, with more Rust async patterns",
        "content": "rust async patterns rust async patterns rust async patterns", "tags": ["rust"]})).await;
    let exact = post(
        &server,
        &author,
        json!({"title": "Rust async patterns", "content": "A short note."}),
    )
    .await;
    post(
        &server,
        &author,
        json!({"title": "Notes", "content": "Some rust, some async, some patterns."}),
    )
    .await;
    post(&server, &author, json!({"title": "Gardening basics", "content": "Tomatoes <script>alert(1)</script> & basil grow well."})).await;

    for query in ["q=rust%20async%20patterns", "q=Rust%20Async%20Patterns%20"] {
        let found = search(&server, query, None).await;
        assert_eq!(found["results"][0]["id"], exact, "{query}: {found}");
        assert_eq!(found["results"].as_array().unwrap().len(), 3, "{query}");
        let first = &found["results"][0];
        assert_eq!(first["type"], "post");
        assert!(
            first["title_highlight"]
                .as_str()
                .unwrap()
                .contains("<mark>"),
            "{first}"
        );
        let scores: Vec<f64> = found["results"].as_array().unwrap()[1..]
            .iter()
            .map(|hit| hit["score"].as_f64().unwrap())
            .collect();
        assert!(
            scores.windows(2).all(|pair| pair[0] >= pair[1]),
            "by relevance: {scores:?}"
        );
    }
    let general = call(
        &server,
        "GET",
        "/api/search?q=rust%20async%20patterns&type=post",
        None,
        None,
    )
    .await
    .1;
    assert_eq!(general["results"][0]["id"], exact);
    assert_eq!(general["type"], "post");
    // The title weighs more than the body.
    let found = search(&server, "q=notes", None).await;
    assert_eq!(titles(&found), ["Notes"]);
    // As-you-type: the last word is a prefix, unless it is finished.
    assert_eq!(
        titles(&search(&server, "q=gard", None).await),
        ["Gardening basics"]
    );
    assert_eq!(
        titles(&search(&server, "q=basics%20gard", None).await),
        ["Gardening basics"]
    );
    assert!(titles(&search(&server, "q=gard%20", None).await).is_empty());
    // Snippets are HTML-escaped around the marks.
    let garden = search(&server, "q=basil", None).await;
    let snippet = garden["results"][0]["snippet"].as_str().unwrap();
    assert!(snippet.contains("<mark>basil</mark>"), "{snippet}");
    assert!(
        !snippet.contains("<script>") && snippet.contains("&amp;"),
        "{snippet}"
    );
    assert!(snippet.contains("&lt;script&gt;"), "{snippet}");
    // Tags are searched too.
    let tagged = search(&server, "q=rust%20", None).await;
    assert_eq!(tagged["results"].as_array().unwrap().len(), 3);
    // Paging.
    let first = search(&server, "q=async&limit=2", None).await;
    assert_eq!(first["results"].as_array().unwrap().len(), 2);
    assert_eq!(
        first["pagination"],
        json!({"limit": 2, "offset": 0, "hasMore": true})
    );
    let rest = search(&server, "q=async&limit=2&offset=2", None).await;
    assert_eq!(rest["results"].as_array().unwrap().len(), 1);
    assert_eq!(rest["pagination"]["hasMore"], false);
    let past = search(&server, "q=async&offset=1000", None).await;
    assert_eq!(past["results"], json!([]));
}

async fn users_are_found_by_name_and_bio_but_never_by_email(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (katherine, kat) = member(&server, "katherine.j@nasa.example", "user").await;
    let (private, hidden) = member(&server, "private@nasa.example", "user").await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    call(
        &server,
        "PUT",
        &format!("/api/users/{katherine}"),
        Some(&kat),
        Some(
            json!({"name": "Katherine Johnson", "bio": "Orbital mechanics & <b>trajectories</b>"}),
        ),
    )
    .await;
    call(
        &server,
        "PUT",
        &format!("/api/users/{private}"),
        Some(&hidden),
        Some(json!({"name": "Katherine Private", "profile_public": false})),
    )
    .await;

    let (status, found) = call(&server, "GET", "/api/search/users?q=kath", None, None).await;
    assert_eq!(status, 200);
    let results = found["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{found}");
    let hit = &results[0];
    assert_eq!(hit["type"], "user");
    assert_eq!(hit["id"], katherine.to_string());
    assert_eq!(hit["display_name"], "Katherine Johnson");
    assert!(
        hit["name_highlight"]
            .as_str()
            .unwrap()
            .contains("<mark>Kath"),
        "{hit}"
    );
    assert!(
        hit["avatar_url"]
            .as_str()
            .unwrap()
            .contains("/api/avatar-image?seed=")
    );
    assert!(hit.get("email").is_none(), "{hit}");
    let (_, by_bio) = call(
        &server,
        "GET",
        "/api/search?type=user&q=orbital",
        None,
        None,
    )
    .await;
    assert_eq!(by_bio["type"], "user");
    let snippet = by_bio["results"][0]["snippet"].as_str().unwrap();
    assert!(
        snippet.contains("<mark>Orbital</mark>") && snippet.contains("&lt;b&gt;"),
        "{snippet}"
    );
    let (_, none) = call(
        &server,
        "GET",
        "/api/search/users?q=nasa%20",
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(none["results"], json!([]), "emails are not searched");
    let (_, as_admin) = call(
        &server,
        "GET",
        "/api/search/users?q=katherine",
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(
        as_admin["results"].as_array().unwrap().len(),
        2,
        "admins find private profiles"
    );
    let (_, as_owner) = call(
        &server,
        "GET",
        "/api/search/users?q=katherine",
        Some(&hidden),
        None,
    )
    .await;
    assert_eq!(as_owner["results"].as_array().unwrap().len(), 1);
    let (_, exact) = call(
        &server,
        "GET",
        "/api/search/users?q=Katherine%20Johnson",
        None,
        None,
    )
    .await;
    assert_eq!(exact["results"][0]["id"], katherine.to_string());
}

async fn search_never_shows_what_the_caller_may_not_see(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, author) = member(&server, "author@example.com", "user").await;
    let (_, other) = member(&server, "other@example.com", "user").await;
    let (_, moderator) = member(&server, "mod@example.com", "moderator").await;
    post(
        &server,
        &author,
        json!({"title": "Public quokka", "content": "x"}),
    )
    .await;
    post(
        &server,
        &author,
        json!({"title": "Draft quokka", "content": "x", "published": false}),
    )
    .await;
    let hidden = post(
        &server,
        &author,
        json!({"title": "Hidden quokka", "content": "x"}),
    )
    .await;
    server
        .sql(&format!(
            "UPDATE posts SET moderation = 'hidden' WHERE id = {hidden}"
        ))
        .await;
    let expected = [
        (None, vec!["Public quokka"]),
        (Some(other.as_str()), vec!["Public quokka"]),
        (
            Some(author.as_str()),
            vec!["Draft quokka", "Hidden quokka", "Public quokka"],
        ),
        (
            Some(moderator.as_str()),
            vec!["Draft quokka", "Hidden quokka", "Public quokka"],
        ),
    ];
    for (cookie, want) in &expected {
        let mut got = titles(&search(&server, "q=quokka", *cookie).await);
        got.sort();
        assert_eq!(&got, want);
    }
}

async fn search_follows_updates_and_deletes(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (author_id, author) = member(&server, "author@example.com", "user").await;
    let id = post(
        &server,
        &author,
        json!({"title": "Zebra crossing", "content": "Stripes", "tags": ["animals"]}),
    )
    .await;
    assert_eq!(
        titles(&search(&server, "q=zebra", None).await),
        ["Zebra crossing"]
    );
    let path = format!("/api/posts/{id}");
    let (status, _) = call(
        &server,
        "PUT",
        &path,
        Some(&author),
        Some(json!({"title": "Giraffe neck", "content": "Long", "tags": ["savanna"]})),
    )
    .await;
    assert_eq!(status, 200);
    assert!(titles(&search(&server, "q=zebra%20", None).await).is_empty());
    assert!(titles(&search(&server, "q=animals%20", None).await).is_empty());
    assert_eq!(
        titles(&search(&server, "q=giraffe", None).await),
        ["Giraffe neck"]
    );
    assert_eq!(
        titles(&search(&server, "q=savanna", None).await),
        ["Giraffe neck"]
    );
    call(
        &server,
        "PUT",
        &path,
        Some(&author),
        Some(json!({"published": false})),
    )
    .await;
    assert!(
        titles(&search(&server, "q=giraffe", None).await).is_empty(),
        "now a draft"
    );
    call(
        &server,
        "PUT",
        &path,
        Some(&author),
        Some(json!({"published": true})),
    )
    .await;

    // Rebuilding the indexes (the admin maintenance action) changes nothing.
    let db = Database::connect(&server.database_url, &DatabaseOptions::default())
        .await
        .unwrap();
    let rebuilt = db.rebuild_search().await.unwrap();
    assert_eq!((rebuilt.posts, rebuilt.users), (1, 1));
    assert_eq!(
        titles(&search(&server, "q=giraffe", None).await),
        ["Giraffe neck"]
    );

    assert_eq!(
        call(&server, "DELETE", &path, Some(&author), None).await.0,
        204
    );
    assert!(titles(&search(&server, "q=giraffe", None).await).is_empty());

    call(
        &server,
        "PUT",
        &format!("/api/users/{author_id}"),
        Some(&author),
        Some(json!({"username": "okapi_fan"})),
    )
    .await;
    let (_, renamed) = call(&server, "GET", "/api/search/users?q=okapi", None, None).await;
    assert_eq!(renamed["results"][0]["username"], "okapi_fan");
    let (_, old) = call(&server, "GET", "/api/search/users?q=author%20", None, None).await;
    assert_eq!(old["results"], json!([]));
}

async fn search_input_is_checked_and_hostile_queries_are_plain_words(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, author) = member(&server, "author@example.com", "user").await;
    post(
        &server,
        &author,
        json!({"title": "Ünïcödé 日本語のテキスト", "content": "مرحبا بالعالم"}),
    )
    .await;
    post(
        &server,
        &author,
        json!({"title": "' OR 1=1 --", "content": "drop table"}),
    )
    .await;
    for path in ["/api/search", "/api/search/posts", "/api/search/users"] {
        for (query, field) in [
            ("", "q"),
            ("q=", "q"),
            ("q=%20%20", "q"),
            ("q=a%00b", "q"),
            (&*format!("q={}", "a".repeat(201)), "q"),
            ("q=x&limit=0", "limit"),
            ("q=x&limit=101", "limit"),
            ("q=x&offset=-1", "offset"),
        ] {
            let (status, error) =
                call(&server, "GET", &format!("{path}?{query}"), None, None).await;
            assert_eq!(status, 422, "{path}?{query}");
            assert_eq!(error["error"]["details"]["field"], field, "{path}?{query}");
        }
    }
    let (status, error) = call(&server, "GET", "/api/search?q=x&type=comments", None, None).await;
    assert_eq!(
        (status, error["error"]["details"]["field"].clone()),
        (422, json!("type"))
    );
    let hostile = [
        "\"",
        "\"\"\"",
        "NEAR(a b)",
        "a NOT b",
        "a OR b",
        "a AND",
        "*",
        "a*",
        "^a",
        "title:x",
        "{title}: x",
        "'':*",
        "!(",
        "a & | b",
        "a <-> b",
        "' OR 1=1 --",
        "%27",
        "\\",
        "%25",
        "(((",
        ")",
        "-a",
        "+a",
        "a:*B",
        "x:A",
        "🎉",
        "%E2%80%AE%E2%80%AD",
        "a%CC%81",
        "日本語のテキスト",
        "ünïcödé",
        "مرحبا",
        "ÜNÏCÖDÉ",
    ];
    for q in hostile {
        for path in ["/api/search/posts", "/api/search/users", "/api/search"] {
            let encoded: String = url::form_urlencoded::byte_serialize(q.as_bytes()).collect();
            let (status, body) =
                call(&server, "GET", &format!("{path}?q={encoded}"), None, None).await;
            assert_eq!(status, 200, "{path} q={q}: {body}");
            assert!(body["results"].is_array(), "{path} q={q}");
        }
    }
    assert_eq!(
        titles(
            &search(
                &server,
                "q=%E6%97%A5%E6%9C%AC%E8%AA%9E%E3%81%AE%E3%83%86%E3%82%AD%E3%82%B9%E3%83%88",
                None
            )
            .await
        )
        .len(),
        1
    );
    assert_eq!(
        titles(&search(&server, "q=%C3%BCn%C3%AFc%C3%B6d%C3%A9", None).await).len(),
        1
    );
    assert_eq!(
        titles(&search(&server, "q=%D9%85%D8%B1%D8%AD%D8%A8%D8%A7", None).await).len(),
        1
    );
    let injected = titles(&search(&server, "q=%27%20OR%201%3D1%20--", None).await);
    assert_eq!(
        injected,
        ["' OR 1=1 --"],
        "operators are words, not SQL or query syntax"
    );
    let (_, all) = call(&server, "GET", "/api/posts", None, None).await;
    assert_eq!(all["pagination"]["total"], 2);
}

/// Plan lines that read a whole table without an index.
fn full_scans(backend: Backend, plan: &[String]) -> Vec<String> {
    plan.iter()
        .filter(|line| match backend {
            Backend::Sqlite => {
                let table = line.strip_prefix("SCAN ").unwrap_or_default();
                ["p", "u", "t", "posts", "users", "post_tags"].contains(&table)
            }
            Backend::Postgres => ["posts", "users", "post_tags"]
                .iter()
                .any(|table| line.contains(&format!("Seq Scan on {table}"))),
        })
        .cloned()
        .collect()
}

async fn seeded_lists_and_searches_read_indexes(backend: Backend) {
    let server = TestServer::start(backend).await;
    let seeded = server.cli(&["dev", "seed", "--users", "200", "--posts", "3000"]);
    assert!(
        seeded.status.success(),
        "{}",
        String::from_utf8_lossy(&seeded.stderr)
    );
    assert!(String::from_utf8_lossy(&seeded.stdout).contains("seeded 200 users, 3000 posts"));
    let (moderator_id, moderator) = member(&server, "mod@example.com", "moderator").await;
    let (_, everyone) = call(&server, "GET", "/api/posts?limit=1", Some(&moderator), None).await;
    assert_eq!(everyone["pagination"]["total"], 3000);
    let (_, public) = call(&server, "GET", "/api/posts?limit=100", None, None).await;
    let public_total = public["pagination"]["total"].as_i64().unwrap();
    assert!((2500..3000).contains(&public_total), "{public_total}");
    assert_eq!(public["posts"].as_array().unwrap().len(), 100);
    let (_, found) = call(&server, "GET", "/api/search/posts?q=community", None, None).await;
    assert_eq!(found["results"].as_array().unwrap().len(), 20);
    assert_eq!(found["pagination"]["hasMore"], true);
    // Writing after seeding continues the ids.
    let (status, _) = call(
        &server,
        "POST",
        "/api/posts",
        Some(&moderator),
        Some(json!({"title": "After the seed", "content": "x"})),
    )
    .await;
    assert_eq!(status, 201);

    // PostgreSQL is told not to scan sequentially where an index can serve,
    // so a plan with a sequential scan means no index fits the query.
    let url = match backend {
        Backend::Sqlite => server.database_url.clone(),
        Backend::Postgres => format!("{}?options=-c%20enable_seqscan%3Doff", server.database_url),
    };
    let db = Database::connect(&url, &DatabaseOptions::default())
        .await
        .unwrap();
    let viewers = [
        Viewer::Anonymous,
        Viewer::Member(moderator_id),
        Viewer::Moderator(moderator_id),
    ];
    let post_queries = [
        PostQuery::default(),
        PostQuery {
            order: SortOrder::Asc,
            ..Default::default()
        },
        PostQuery {
            author: Some(3),
            ..Default::default()
        },
        PostQuery {
            tag: Some("rust".to_owned()),
            ..Default::default()
        },
        PostQuery {
            published: Some(false),
            ..Default::default()
        },
        PostQuery {
            sort: PostSort::UpdatedAt,
            ..Default::default()
        },
        PostQuery {
            sort: PostSort::Title,
            order: SortOrder::Asc,
            ..Default::default()
        },
        PostQuery {
            reported_only: true,
            ..Default::default()
        },
        PostQuery {
            tag: Some("rust".to_owned()),
            sort: PostSort::Title,
            ..Default::default()
        },
        PostQuery {
            author: Some(3),
            published: Some(true),
            sort: PostSort::UpdatedAt,
            ..Default::default()
        },
    ];
    for (index, query) in post_queries.iter().enumerate() {
        for viewer in viewers {
            let plan = db.explain_list_posts(query, viewer).await.unwrap();
            assert!(
                full_scans(backend, &plan).is_empty(),
                "{query:?} as {viewer:?}:\n{}",
                plan.join("\n")
            );
            // The common pages read their index in order: no sort of all
            // matches (only of the page's rows, for the JSON aggregate).
            if backend == Backend::Sqlite && index < 7 {
                assert!(
                    !plan
                        .iter()
                        .any(|line| line.contains("TEMP B-TREE FOR ORDER BY")),
                    "{query:?} as {viewer:?} sorts:\n{}",
                    plan.join("\n")
                );
            }
        }
    }
    let user_queries = [
        UserQuery::default(),
        UserQuery {
            sort: UserSort::Username,
            order: SortOrder::Asc,
            ..Default::default()
        },
        UserQuery {
            role: Some(Role::Moderator),
            ..Default::default()
        },
        UserQuery {
            status: Some(UserStatus::Banned),
            ..Default::default()
        },
    ];
    for query in &user_queries {
        for everyone in [false, true] {
            let plan = db.explain_list_users(query, everyone).await.unwrap();
            assert!(
                full_scans(backend, &plan).is_empty(),
                "{query:?} everyone={everyone}:\n{}",
                plan.join("\n")
            );
        }
    }
    for q in ["community", "comm", "garden coffee", "zzzz"] {
        for viewer in viewers {
            let plan = db
                .explain_search(&SearchTerms::parse(q), viewer)
                .await
                .unwrap();
            assert!(
                full_scans(backend, &plan).is_empty(),
                "search {q:?} as {viewer:?}:\n{}",
                plan.join("\n")
            );
        }
    }
}
