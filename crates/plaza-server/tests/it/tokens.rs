//! Personal access tokens and bots through HTTP (DECISIONS.md "Tokens for
//! members and bots, and webhooks (round 5)"): a token shown once, listed
//! without its secret and revoked; its scopes deciding what it may do, 403
//! `INSUFFICIENT_SCOPE` on the admin surfaces and token management; ended
//! by a ban, a password change and erasure; at most 50 a user; and a bot
//! that posts and replies with its token, shown `is_bot` as an author.

use serde_json::{Value, json};

use crate::common::{As, Backend, PASSWORD, TestServer, call, member};

on_both_databases!(
    a_token_is_shown_once_listed_without_its_secret_and_revoked,
    scopes_decide_what_a_token_may_do_and_nothing_else,
    a_ban_a_password_change_and_erasure_end_the_tokens,
    a_user_holds_at_most_fifty_tokens,
    a_bot_posts_and_replies_with_its_token_and_shows_as_a_bot,
);

/// Makes a token as the session `cookie`: (its id, its secret).
async fn make_token(server: &TestServer, cookie: &str, scopes: &[&str]) -> (String, String) {
    let (status, body) = call(
        server,
        "POST",
        "/api/me/tokens",
        Some(cookie),
        Some(json!({"name": "my bot", "scopes": scopes, "expires_in": "30d"})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    (
        body["id"].as_str().unwrap().to_owned(),
        body["token"].as_str().unwrap().to_owned(),
    )
}

/// One request with `token` as its bearer: (status, JSON body).
async fn with_token(
    server: &TestServer,
    token: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let answer = server
        .send(As::Token(token), method, path, body.as_ref())
        .await;
    let status = answer.status().as_u16();
    let text = answer.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn tokens_of(server: &TestServer, cookie: &str) -> Vec<Value> {
    let (status, body) = call(server, "GET", "/api/me/tokens", Some(cookie), None).await;
    assert_eq!(status, 200, "{body}");
    body["tokens"].as_array().unwrap().clone()
}

async fn a_token_is_shown_once_listed_without_its_secret_and_revoked(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, cookie) = member(&server, "ada@example.com", "user").await;
    let (_, other) = member(&server, "bob@example.com", "user").await;
    let (status, created) = call(
        &server,
        "POST",
        "/api/me/tokens",
        Some(&cookie),
        Some(json!({"name": "reader", "scopes": ["read"]})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let token = created["token"].as_str().unwrap().to_owned();
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(token.starts_with("plz_"), "{token}");
    assert!(token.len() >= 4 + 43, "at least 256 bits: {token}");
    assert_eq!(created["scopes"], json!(["read"]));
    let lifetime = time::OffsetDateTime::parse(
        created["expires_at"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap()
        - time::OffsetDateTime::parse(
            created["created_at"].as_str().unwrap(),
            &time::format_description::well_known::Rfc3339,
        )
        .unwrap();
    assert_eq!(lifetime.whole_days(), 90, "the default lifetime");
    assert_eq!(
        server
            .sql_count(&format!(
                "SELECT COUNT(*) FROM access_tokens WHERE token_hash = '{token}'"
            ))
            .await,
        0,
        "the secret is stored hashed"
    );

    let listed = tokens_of(&server, &cookie).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], id.as_str());
    assert!(listed[0].get("token").is_none(), "{}", listed[0]);
    assert_eq!(listed[0]["last_used_at"], Value::Null);
    assert!(tokens_of(&server, &other).await.is_empty());

    let (status, _) = with_token(&server, &token, "GET", "/api/posts", None).await;
    assert_eq!(status, 200);
    let used = tokens_of(&server, &cookie).await[0]["last_used_at"].clone();
    assert!(used.is_string(), "set at the first use");
    with_token(&server, &token, "GET", "/api/posts", None).await;
    assert_eq!(
        tokens_of(&server, &cookie).await[0]["last_used_at"],
        used,
        "written at most once a minute"
    );

    for (body, field) in [
        (
            json!({"name": "x", "scopes": ["read"], "expires_in": "366d"}),
            "expires_in",
        ),
        (
            json!({"name": "x", "scopes": ["read"], "expires_in": "soon"}),
            "expires_in",
        ),
        (json!({"name": "x", "scopes": []}), "scopes"),
        (json!({"name": "x", "scopes": ["admin"]}), "scopes"),
        (json!({"name": "", "scopes": ["read"]}), "name"),
    ] {
        let (status, answer) =
            call(&server, "POST", "/api/me/tokens", Some(&cookie), Some(body)).await;
        assert_eq!(status, 422, "{answer}");
        assert_eq!(answer["error"]["details"]["field"], field, "{answer}");
    }

    let path = format!("/api/me/tokens/{id}");
    let (status, _) = call(&server, "DELETE", &path, Some(&other), None).await;
    assert_eq!(status, 404, "someone else's token");
    let (status, _) = call(&server, "DELETE", &path, Some(&cookie), None).await;
    assert_eq!(status, 204);
    let (status, body) = with_token(&server, &token, "GET", "/api/posts", None).await;
    assert_eq!(status, 401, "revoked: {body}");
    assert_eq!(body["error"]["code"], "UNAUTHORIZED");

    let (_, expiring) = make_token(&server, &cookie, &["read"]).await;
    server.sql("UPDATE access_tokens SET expires_at = 1").await;
    let (status, _) = with_token(&server, &expiring, "GET", "/api/posts", None).await;
    assert_eq!(status, 401, "expired");
}

async fn scopes_decide_what_a_token_may_do_and_nothing_else(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, cookie) = member(&server, "ada@example.com", "user").await;
    let (_, admin) = member(&server, "admin@example.com", "super_admin").await;
    let (_, reader) = make_token(&server, &cookie, &["read"]).await;
    let (_, writer) = make_token(&server, &cookie, &["write"]).await;
    let (_, notified) = make_token(&server, &cookie, &["notifications"]).await;
    let (_, everything) = make_token(&server, &admin, &["read", "write", "notifications"]).await;
    let new_post = json!({"title": "From a program", "content": "Hello", "published": true});

    let insufficient = |(status, body): (u16, Value)| {
        assert_eq!(status, 403, "{body}");
        assert_eq!(body["error"]["code"], "INSUFFICIENT_SCOPE", "{body}");
    };
    assert_eq!(
        with_token(&server, &reader, "GET", "/api/posts", None)
            .await
            .0,
        200
    );
    insufficient(
        with_token(
            &server,
            &reader,
            "POST",
            "/api/posts",
            Some(new_post.clone()),
        )
        .await,
    );
    insufficient(with_token(&server, &reader, "GET", "/api/notifications", None).await);
    let (status, created) = with_token(
        &server,
        &writer,
        "POST",
        "/api/posts",
        Some(new_post.clone()),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    insufficient(with_token(&server, &writer, "GET", "/api/posts", None).await);
    assert_eq!(
        with_token(&server, &notified, "GET", "/api/notifications", None)
            .await
            .0,
        200
    );
    insufficient(with_token(&server, &notified, "GET", "/api/posts", None).await);

    // No origin check: a token is no cookie a browser sends by itself.
    let foreign = server
        .client
        .post(server.url("/api/posts"))
        .bearer_auth(&writer)
        .header("origin", "https://elsewhere.example")
        .json(&new_post)
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 201);

    // Token management and the admin surfaces, whatever the scopes.
    insufficient(with_token(&server, &everything, "GET", "/api/me/tokens", None).await);
    insufficient(
        with_token(
            &server,
            &everything,
            "POST",
            "/api/me/tokens",
            Some(json!({"name": "more", "scopes": ["read"]})),
        )
        .await,
    );
    insufficient(with_token(&server, &everything, "GET", "/api/auth/sessions", None).await);
    insufficient(with_token(&server, &everything, "GET", "/api/v1/admin/users", None).await);
    let (status, body) = with_token(&server, &everything, "GET", "/api/admin/users", None).await;
    assert_eq!(status, 403, "{body}");
    let (status, _) = with_token(
        &server,
        "plz_not-a-token",
        "GET",
        "/api/v1/admin/users",
        None,
    )
    .await;
    assert_eq!(status, 401, "an unknown token");
    assert_eq!(
        with_token(&server, &everything, "GET", "/api/posts", None)
            .await
            .0,
        200
    );
}

async fn a_ban_a_password_change_and_erasure_end_the_tokens(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("root@example.com", PASSWORD, "super_admin");
    let admin = server.mint("root@example.com", "admin:super");
    let (banned_id, banned) = member(&server, "banned@example.com", "user").await;
    let (_, changer) = member(&server, "changer@example.com", "user").await;
    let (erased_id, erased) = member(&server, "erased@example.com", "user").await;
    let (_, banned_token) = make_token(&server, &banned, &["read"]).await;
    let (_, changer_token) = make_token(&server, &changer, &["read"]).await;
    let (_, erased_token) = make_token(&server, &erased, &["read"]).await;
    for token in [&banned_token, &changer_token, &erased_token] {
        assert_eq!(
            with_token(&server, token, "GET", "/api/posts", None)
                .await
                .0,
            200
        );
    }

    let (status, body) = with_token(
        &server,
        &admin,
        "POST",
        &format!("/api/v1/admin/users/{banned_id}/ban"),
        Some(json!({"action": "ban", "reason": "Spam"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        with_token(&server, &banned_token, "GET", "/api/posts", None)
            .await
            .0,
        401,
        "banned"
    );
    with_token(
        &server,
        &admin,
        "POST",
        &format!("/api/v1/admin/users/{banned_id}/ban"),
        Some(json!({"action": "unban", "reason": "Appeal"})),
    )
    .await;
    assert_eq!(
        with_token(&server, &banned_token, "GET", "/api/posts", None)
            .await
            .0,
        401,
        "still ended after the unban"
    );

    let (status, body) = call(
        &server,
        "PUT",
        "/api/auth/password",
        Some(&changer),
        Some(json!({"currentPassword": PASSWORD, "newPassword": "a new password 1"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        with_token(&server, &changer_token, "GET", "/api/posts", None)
            .await
            .0,
        401,
        "the password changed"
    );

    let (status, body) = call(
        &server,
        "DELETE",
        &format!("/api/users/{erased_id}"),
        Some(&erased),
        None,
    )
    .await;
    assert_eq!(status, 204, "{body}");
    assert_eq!(
        with_token(&server, &erased_token, "GET", "/api/posts", None)
            .await
            .0,
        401,
        "erased"
    );
    assert_eq!(
        server.sql_count("SELECT COUNT(*) FROM access_tokens").await,
        0
    );
}

async fn a_user_holds_at_most_fifty_tokens(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, cookie) = member(&server, "ada@example.com", "user").await;
    for _ in 0..50 {
        make_token(&server, &cookie, &["read"]).await;
    }
    let (status, body) = call(
        &server,
        "POST",
        "/api/me/tokens",
        Some(&cookie),
        Some(json!({"name": "one more", "scopes": ["read"]})),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(tokens_of(&server, &cookie).await.len(), 50);
    let id = tokens_of(&server, &cookie).await[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, _) = call(
        &server,
        "DELETE",
        &format!("/api/me/tokens/{id}"),
        Some(&cookie),
        None,
    )
    .await;
    assert_eq!(status, 204);
    make_token(&server, &cookie, &["read"]).await;
}

async fn a_bot_posts_and_replies_with_its_token_and_shows_as_a_bot(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("root@example.com", PASSWORD, "super_admin");
    let admin = server.mint("root@example.com", "admin:super");
    let (bot_id, bot) = member(&server, "bot@example.com", "user").await;
    let (_, person) = member(&server, "person@example.com", "user").await;
    let (status, body) = with_token(
        &server,
        &admin,
        "PUT",
        &format!("/api/v1/admin/users/{bot_id}"),
        Some(json!({"isBot": true})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["isBot"], true, "{body}");
    let (_, token) = make_token(&server, &bot, &["read", "write"]).await;

    let (status, created) = with_token(
        &server,
        &token,
        "POST",
        "/api/posts",
        Some(json!({"title": "Daily digest", "content": "Today", "published": true})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["author_id"], bot_id.to_string());
    let post_id = created["id"].as_str().unwrap().to_owned();
    let (status, reply) = with_token(
        &server,
        &token,
        "POST",
        &format!("/api/posts/{post_id}/replies"),
        Some(json!({"content": "Beep"})),
    )
    .await;
    assert_eq!(status, 201, "{reply}");
    assert_eq!(reply["author"]["is_bot"], true, "{reply}");

    let (status, human_reply) = call(
        &server,
        "POST",
        &format!("/api/posts/{post_id}/replies"),
        Some(&person),
        Some(json!({"content": "Hello bot"})),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(human_reply["author"]["is_bot"], false);
    let (_, listed) = call(
        &server,
        "GET",
        &format!("/api/posts/{post_id}/replies"),
        None,
        None,
    )
    .await;
    let authors: Vec<(String, bool)> = listed["replies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|reply| {
            (
                reply["author"]["username"].as_str().unwrap().to_owned(),
                reply["author"]["is_bot"].as_bool().unwrap(),
            )
        })
        .collect();
    assert!(authors.contains(&("bot".to_owned(), true)), "{authors:?}");
    assert!(
        authors.contains(&("person".to_owned(), false)),
        "{authors:?}"
    );
    let (_, profile) = call(
        &server,
        "GET",
        &format!("/api/users/{bot_id}/profile"),
        None,
        None,
    )
    .await;
    assert_eq!(profile["is_bot"], true, "{profile}");
}
