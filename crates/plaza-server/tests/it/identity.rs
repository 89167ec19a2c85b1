//! Identity through HTTP: sign-up, credentials and provider sign-in,
//! sessions, linked accounts, admin tokens, and who may call what.

use crate::common::actors::{Cast, Member, assert_statuses, row};
use crate::common::fake_idp::{
    self, FakeIdp, IdTokenFault, begin_provider_sign_in, location, open_callback,
};
use crate::common::{
    As, Backend, PASSWORD, TEST_JWT_SECRET, TestServer, call, member, session_cookie,
};
use reqwest::StatusCode;
use serde_json::{Value, json};

on_both_databases!(
    sign_up_sign_in_session_and_sign_out,
    a_user_lists_their_sessions_and_ends_one,
    nobody_ends_a_session_of_someone_else,
    a_password_change_needs_the_current_one_and_ends_the_other_sessions,
    a_user_without_a_password_sets_one,
    wrong_password_and_unknown_email_answer_alike,
    repeated_failures_are_refused_for_a_while,
    expired_sessions_end,
    banning_revokes_sessions_and_tokens_at_once,
    cross_origin_cookie_writes_are_refused,
    provider_sign_in_creates_a_user_and_a_session,
    invalid_id_tokens_are_refused_and_sign_no_one_in,
    providers_without_an_issuer_sign_in_from_user_info,
    provider_sign_in_refuses_a_wrong_state,
    provider_codes_cannot_be_replayed,
    provider_errors_send_people_back_to_sign_in,
    unverified_provider_emails_never_link,
    verified_provider_emails_link_to_the_existing_user,
    the_last_way_to_sign_in_cannot_be_unlinked,
    admins_exchange_sessions_for_tokens,
    bad_tokens_are_refused_with_the_spec_codes,
    access_matrix,
    sign_up_validates_and_refuses_duplicates,
    form_sign_in_needs_the_csrf_token,
    concurrent_requests_each_resolve_their_own_session,
    one_lookup_statement_answers_each_token_hash_in_order,
);

async fn sign_up_sign_in_session_and_sign_out(backend: Backend) {
    let server = TestServer::start(backend).await;
    let created = server
        .sign_up(&json!({"email": "Ada@Example.com", "password": PASSWORD, "name": "Ada Lovelace"}))
        .await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let user: Value = created.json().await.unwrap();
    assert_eq!(user["email"], "ada@example.com");
    assert_eq!(user["username"], "ada_lovelace");
    assert!(user["id"].is_string());

    let cookie = server.sign_in("ada@example.com", PASSWORD).await;
    let session: Value = server.get_json_as("/api/auth/session", &cookie).await;
    assert_eq!(session["user"]["email"], "ada@example.com");
    assert_eq!(session["user"]["roles"], json!(["user"]));
    assert!(session["expires"].is_string());

    let signed_out = server
        .send(As::Session(&cookie), "POST", "/api/auth/signout", None)
        .await;
    assert_eq!(signed_out.status(), 200);
    let after: Value = server.get_json_as("/api/auth/session", &cookie).await;
    assert_eq!(after, Value::Null, "the old cookie no longer works");
}

async fn wrong_password_and_unknown_email_answer_alike(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("known@example.com", PASSWORD, "user");
    let mut answers = Vec::new();
    for email in ["known@example.com", "unknown@example.com"] {
        let response = server.try_sign_in(email, "not the password").await;
        assert_eq!(response.status(), 401);
        assert!(session_cookie(&response).is_none());
        answers.push(response.text().await.unwrap());
    }
    assert_eq!(answers[0], answers[1]);
    let body: Value = serde_json::from_str(&answers[0]).unwrap();
    assert_eq!(body["error"]["code"], "UNAUTHORIZED");
}

async fn repeated_failures_are_refused_for_a_while(backend: Backend) {
    let server = TestServer::start_with(backend, &[("PLAZA_SIGN_IN_MAX_FAILURES", "3")]).await;
    server.create_user("target@example.com", PASSWORD, "user");
    for _ in 0..3 {
        let response = server.try_sign_in("target@example.com", "guess").await;
        assert_eq!(response.status(), 401);
    }
    let locked = server.try_sign_in("target@example.com", PASSWORD).await;
    assert_eq!(
        locked.status(),
        429,
        "even the right password waits out the lockout"
    );
    let retry_after: u64 = locked.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=900).contains(&retry_after), "{retry_after}");
    let body: Value = locked.json().await.unwrap();
    assert_eq!(body["error"]["code"], "RATE_LIMITED");
    // When the window has passed, the right password works again.
    server
        .sql("UPDATE login_failures SET window_started_at = 0")
        .await;
    server.sign_in("target@example.com", PASSWORD).await;
}

async fn expired_sessions_end(backend: Backend) {
    let server = TestServer::start(backend).await;
    let brief = Member::join(&server, "brief@example.com", "user").await;
    let accounts = || server.send(brief.session(), "GET", "/api/auth/accounts", None);
    assert_eq!(accounts().await.status(), 200);
    server.sql("UPDATE sessions SET expires_at = 1").await;
    assert_eq!(accounts().await.status(), 401);
}

async fn banning_revokes_sessions_and_tokens_at_once(backend: Backend) {
    let server = TestServer::start(backend).await;
    let boss = Member::join(&server, "boss@example.com", "admin").await;
    let token = server.mint(&boss.email, "admin:read");
    assert_eq!(metrics_with(&server, &token).await.status(), 200);
    server.ban(&boss.email);
    let session: Value = server.get_json_as("/api/auth/session", &boss.cookie).await;
    assert_eq!(session, Value::Null);
    assert_eq!(metrics_with(&server, &token).await.status(), 401);
    let again = server.try_sign_in(&boss.email, PASSWORD).await;
    assert_eq!(again.status(), 401, "banned users cannot sign in");
}

async fn cross_origin_cookie_writes_are_refused(backend: Backend) {
    let server = TestServer::start(backend).await;
    let cookie = Member::join(&server, "victim@example.com", "user")
        .await
        .cookie;
    for (header, value) in [
        ("origin", "https://evil.example"),
        ("referer", "https://evil.example/page"),
    ] {
        let response = server.sign_out_with(&cookie, header, value).await;
        assert_eq!(response.status(), 403, "{header}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "FORBIDDEN");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("origin") && message.contains("base URL"),
            "the refusal says which rule refused: {body}"
        );
    }
    let session: Value = server.get_json_as("/api/auth/session", &cookie).await;
    assert_eq!(
        session["user"]["email"], "victim@example.com",
        "the refused sign-out did nothing"
    );
    let same_origin = server
        .sign_out_with(&cookie, "origin", "http://localhost:3000")
        .await;
    assert_eq!(same_origin.status(), 200);
}

/// Walks one browser through a provider sign-in and returns the final
/// response from Plaza's callback.
async fn provider_round_trip(server: &TestServer) -> reqwest::Response {
    fake_idp::provider_round_trip(server, "/api/auth/signin/fake?callbackUrl=/welcome", None).await
}

fn query_value(url: &str, name: &str) -> String {
    url::Url::parse(url)
        .unwrap()
        .query_pairs()
        .find(|(key, _)| key == name)
        .unwrap()
        .1
        .into_owned()
}

async fn provider_server(backend: Backend) -> (TestServer, FakeIdp) {
    let idp = FakeIdp::start().await;
    let server = TestServer::start_with_config(backend, &idp.config_toml(), &[]).await;
    (server, idp)
}

async fn provider_sign_in_creates_a_user_and_a_session(backend: Backend) {
    let (server, idp) = provider_server(backend).await;
    idp.set_profile(json!({"sub": "u-1", "email": "new@idp.example", "email_verified": true, "name": "New Person"}));
    let done = provider_round_trip(&server).await;
    assert_eq!(done.status(), 303);
    assert_eq!(done.headers()["location"], "/welcome");
    let cookie = session_cookie(&done).expect("session cookie");
    let session: Value = server.get_json_as("/api/auth/session", &cookie).await;
    assert_eq!(session["user"]["email"], "new@idp.example");
    assert_eq!(session["user"]["name"], "New Person");
    let accounts: Value = server.get_json_as("/api/auth/accounts", &cookie).await;
    assert_eq!(accounts["accounts"][0]["provider"], "fake");
    assert_eq!(accounts["accounts"][0]["providerAccountId"], "u-1");
    assert_eq!(accounts["hasPassword"], false);
    let providers: Value = server
        .get("/api/auth/providers")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(providers["fake"]["name"], "Fake IdP");
    assert_eq!(
        providers["fake"]["callbackUrl"],
        "http://localhost:3000/api/auth/callback/fake"
    );
}

/// Every way an ID token can fail its checks: signature against the
/// issuer's published keys, `aud`, `iss`, `exp` and the sign-in's `nonce`.
const ID_TOKEN_FAULTS: [IdTokenFault; 6] = [
    IdTokenFault::ForeignKey,
    IdTokenFault::WrongAudience,
    IdTokenFault::WrongIssuer,
    IdTokenFault::Expired,
    IdTokenFault::WrongNonce,
    IdTokenFault::NoNonce,
];

async fn invalid_id_tokens_are_refused_and_sign_no_one_in(backend: Backend) {
    let (server, idp) = provider_server(backend).await;
    idp.set_profile(
        json!({"sub": "forged", "email": "forged@idp.example", "email_verified": true}),
    );
    let counts = || async {
        let mut counts = Vec::new();
        for table in ["users", "accounts", "sessions"] {
            let statement = format!("SELECT COUNT(*) FROM {table}");
            counts.push(server.sql_count(&statement).await);
        }
        counts
    };
    let before = counts().await;
    for fault in ID_TOKEN_FAULTS {
        idp.set_id_token_fault(Some(fault));
        let done = provider_round_trip(&server).await;
        assert_eq!(done.status(), 303, "{fault:?}");
        assert!(
            location(&done).starts_with("/api/auth/signin?error=invalid_id_token"),
            "{fault:?}: {}",
            location(&done)
        );
        assert!(session_cookie(&done).is_none(), "{fault:?}");
    }
    assert_eq!(
        counts().await,
        before,
        "no user, account or session was made"
    );
    // The same provider signs in with a valid token.
    idp.set_id_token_fault(None);
    let done = provider_round_trip(&server).await;
    assert_eq!(location(&done), "/welcome");
    assert!(session_cookie(&done).is_some());
}

async fn providers_without_an_issuer_sign_in_from_user_info(backend: Backend) {
    let idp = FakeIdp::start().await;
    let server = TestServer::start_with_config(backend, &idp.endpoints_config_toml(), &[]).await;
    idp.set_profile(json!({"sub": "plain", "email": "plain@idp.example", "email_verified": true}));
    // No ID token is asked for, so a broken one is no obstacle.
    idp.set_id_token_fault(Some(IdTokenFault::ForeignKey));
    let done = provider_round_trip(&server).await;
    assert_eq!(location(&done), "/welcome");
    let cookie = session_cookie(&done).expect("signed in");
    let session: Value = server.get_json_as("/api/auth/session", &cookie).await;
    assert_eq!(session["user"]["email"], "plain@idp.example");
}

async fn provider_sign_in_refuses_a_wrong_state(backend: Backend) {
    let (server, idp) = provider_server(backend).await;
    idp.set_profile(json!({"sub": "u-2", "email": "s@idp.example", "email_verified": true}));
    let returned = begin_provider_sign_in(&server, "/api/auth/signin/fake", None).await;
    let code = query_value(&returned.callback, "code");
    let forged = open_callback(
        &server,
        &server.url(&format!("/api/auth/callback/fake?code={code}&state=forged")),
        &returned.binding_cookie,
    )
    .await;
    assert_eq!(forged.status(), 303);
    assert!(location(&forged).contains("error=invalid_state"));
    assert!(session_cookie(&forged).is_none());
}

async fn provider_codes_cannot_be_replayed(backend: Backend) {
    let (server, idp) = provider_server(backend).await;
    idp.set_profile(json!({"sub": "u-3", "email": "r@idp.example", "email_verified": true}));
    let returned = begin_provider_sign_in(&server, "/api/auth/signin/fake", None).await;
    let first = open_callback(&server, &returned.callback, &returned.binding_cookie).await;
    assert!(session_cookie(&first).is_some());
    let replay = open_callback(&server, &returned.callback, &returned.binding_cookie).await;
    assert!(
        session_cookie(&replay).is_none(),
        "a replayed callback starts no session"
    );
    assert!(location(&replay).contains("error=invalid_state"));
    // Even with a fresh state, the provider refuses the used code.
    let fresh = begin_provider_sign_in(&server, "/api/auth/signin/fake", None).await;
    let state = query_value(&fresh.callback, "state");
    let code = query_value(&returned.callback, "code");
    let reused = open_callback(
        &server,
        &server.url(&format!(
            "/api/auth/callback/fake?code={code}&state={state}"
        )),
        &fresh.binding_cookie,
    )
    .await;
    assert!(session_cookie(&reused).is_none());
    assert!(location(&reused).contains("error=code_refused"));
}

async fn provider_errors_send_people_back_to_sign_in(backend: Backend) {
    let (server, idp) = provider_server(backend).await;
    idp.deny(true);
    let done = provider_round_trip(&server).await;
    assert_eq!(done.status(), 303);
    assert!(
        done.headers()["location"]
            .to_str()
            .unwrap()
            .starts_with("/api/auth/signin?error=provider_error")
    );
    assert!(session_cookie(&done).is_none());
    let page = server
        .get("/api/auth/signin?error=provider_error")
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains("role=\"alert\""));
}

async fn unverified_provider_emails_never_link(backend: Backend) {
    let (server, idp) = provider_server(backend).await;
    server.create_user("owner@example.com", PASSWORD, "user");
    idp.set_profile(
        json!({"sub": "attacker", "email": "owner@example.com", "email_verified": false}),
    );
    let done = provider_round_trip(&server).await;
    assert!(session_cookie(&done).is_none());
    assert!(
        done.headers()["location"]
            .to_str()
            .unwrap()
            .contains("error=account_not_linked")
    );
    let cookie = server.sign_in("owner@example.com", PASSWORD).await;
    let accounts: Value = server.get_json_as("/api/auth/accounts", &cookie).await;
    assert_eq!(accounts["accounts"], json!([]));
}

async fn verified_provider_emails_link_to_the_existing_user(backend: Backend) {
    let (server, idp) = provider_server(backend).await;
    let id = server.create_user("owner@example.com", PASSWORD, "user");
    idp.set_profile(
        json!({"sub": "owner-at-idp", "email": "OWNER@example.com", "email_verified": true}),
    );
    let done = provider_round_trip(&server).await;
    let cookie = session_cookie(&done).expect("signed in");
    let session: Value = server.get_json_as("/api/auth/session", &cookie).await;
    assert_eq!(session["user"]["id"], id.to_string());
}

/// Unlinks `provider` from the account signed in with `cookie`.
async fn unlink(server: &TestServer, cookie: &str, provider: &str) -> reqwest::Response {
    let path = format!("/api/auth/accounts/{provider}");
    server
        .send(As::Session(cookie), "DELETE", &path, None)
        .await
}

async fn the_last_way_to_sign_in_cannot_be_unlinked(backend: Backend) {
    let (server, idp) = provider_server(backend).await;
    idp.set_profile(json!({"sub": "only", "email": "only@idp.example", "email_verified": true}));
    let cookie = session_cookie(&provider_round_trip(&server).await).unwrap();
    let refused = unlink(&server, &cookie, "fake").await;
    assert_eq!(refused.status(), 409);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "CONFLICT");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("last way to sign in")
    );
    let missing = unlink(&server, &cookie, "github").await;
    assert_eq!(missing.status(), 404);

    // A user with a password may unlink the provider.
    server.create_user("both@example.com", PASSWORD, "user");
    idp.set_profile(json!({"sub": "both", "email": "both@example.com", "email_verified": true}));
    let cookie = session_cookie(&provider_round_trip(&server).await).unwrap();
    let unlinked = unlink(&server, &cookie, "fake").await;
    assert_eq!(unlinked.status(), 200);
    let body: Value = unlinked.json().await.unwrap();
    assert_eq!(body["provider"], "fake");
    assert!(body["message"].is_string());
}

async fn metrics_with(server: &TestServer, token: &str) -> reqwest::Response {
    server
        .client
        .get(server.url("/api/metrics"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

/// Asks, as `who`'s session, for an admin token carrying `permission`.
async fn ask_for_token(server: &TestServer, who: &Member, permission: &str) -> reqwest::Response {
    let body = json!({"permissions": [permission]});
    server
        .send(who.session(), "POST", "/api/auth/token", Some(&body))
        .await
}

async fn admins_exchange_sessions_for_tokens(backend: Backend) {
    let server = TestServer::start(backend).await;
    let admin = Member::join(&server, "admin@example.com", "admin").await;
    let member = Member::join(&server, "member@example.com", "user").await;
    let issued = ask_for_token(&server, &admin, "admin:read").await;
    assert_eq!(issued.status(), 200);
    let body: Value = issued.json().await.unwrap();
    assert_eq!(body["permissions"], json!(["admin:read"]));
    assert!(body["expiresAt"].is_string());
    let token = body["token"].as_str().unwrap();
    assert_eq!(metrics_with(&server, token).await.status(), 200);

    let too_much = ask_for_token(&server, &admin, "admin:super").await;
    assert_eq!(too_much.status(), 403, "admins cannot mint admin:super");
    let refused = server
        .send(member.session(), "POST", "/api/auth/token", None)
        .await;
    assert_eq!(refused.status(), 403);
    let anonymous = server
        .send(As::Anonymous, "POST", "/api/auth/token", None)
        .await;
    assert_eq!(anonymous.status(), 401);
}

fn forge(claims: Value, secret: &str) -> String {
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
    )
    .unwrap()
}

async fn bad_tokens_are_refused_with_the_spec_codes(backend: Backend) {
    use base64::Engine as _;
    let server = TestServer::start(backend).await;
    let id = server.create_user("root@example.com", PASSWORD, "super_admin");
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let claims = |exp: i64, permissions: Value, jti: &str| json!({"sub": id.to_string(), "role": "super_admin", "permissions": permissions, "iat": now, "exp": exp, "jti": jti});
    let valid = forge(
        claims(now + 600, json!(["admin:super"]), "ok"),
        TEST_JWT_SECRET,
    );
    assert_eq!(metrics_with(&server, &valid).await.status(), 200);

    let expired = forge(
        claims(now - 5, json!(["admin:super"]), "old"),
        TEST_JWT_SECRET,
    );
    let wrong_key = forge(
        claims(now + 600, json!(["admin:super"]), "k"),
        "another-secret-another-secret-another",
    );
    let header =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#);
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(claims(now + 600, json!(["admin:super"]), "n").to_string());
    let alg_none = format!("{header}.{payload}.");
    for (name, token) in [
        ("expired", expired),
        ("wrong signature", wrong_key),
        ("alg none", alg_none),
        ("garbage", "abc".to_owned()),
    ] {
        let response = metrics_with(&server, &token).await;
        assert_eq!(response.status(), 401, "{name}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "UNAUTHORIZED", "{name}");
    }

    let write_only = forge(
        claims(now + 600, json!(["admin:write"]), "w"),
        TEST_JWT_SECRET,
    );
    let response = metrics_with(&server, &write_only).await;
    assert_eq!(response.status(), 403);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "INSUFFICIENT_ADMIN_PERMISSIONS");
    assert_eq!(body["error"]["requiredPermission"], "admin:read");

    // Revoking the jti stops the token.
    let revoked = server
        .client
        .delete(server.url("/api/auth/token"))
        .bearer_auth(&valid)
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), 204);
    assert!(revoked.text().await.unwrap().is_empty(), "no body");
    assert_eq!(metrics_with(&server, &valid).await.status(), 401);

    // Demotion stops a token at once, for good.
    let fresh = server.mint("root@example.com", "admin:read");
    assert_eq!(metrics_with(&server, &fresh).await.status(), 200);
    let output = server.cli(&[
        "user",
        "role",
        "--email",
        "root@example.com",
        "--role",
        "user",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // A lower role revokes every token issued before it.
    let response = metrics_with(&server, &fresh).await;
    assert_eq!(response.status(), 401);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "UNAUTHORIZED");
}

/// Who gets what, for every protected route that exists so far: every
/// actor of the cast, and a banned admin's session and token.
async fn access_matrix(backend: Backend) {
    let server = TestServer::start(backend).await;
    let cast = Cast::new(&server).await;
    let banned = Member::join(&server, "banned@example.com", "admin").await;
    let banned_token = server.mint(&banned.email, "admin:read");
    server.ban(&banned.email);
    let mut actors = cast.actors();
    actors.push(("banned session", banned.session()));
    actors.push(("banned admin:read", As::Token(&banned_token)));
    let read = Some(json!({"permissions": ["admin:read"]}));
    // Columns: anonymous, the user, moderator, admin and super_admin
    // sessions, the admin:read, :write, :delete and :super tokens, then the
    // banned admin's session and token.
    #[rustfmt::skip]
    let rows = vec![
        row("GET", "/api/metrics", None,               [401, 401, 401, 401, 401, 200, 403, 403, 200, 401, 401]),
        row("GET", "/api/auth/accounts", None,         [401, 200, 200, 200, 200, 401, 401, 401, 401, 401, 401]),
        row("DELETE", "/api/auth/accounts/github", None, [401, 404, 404, 404, 404, 401, 401, 401, 401, 401, 401]),
        row("POST", "/api/auth/token", read,           [401, 403, 403, 200, 200, 401, 401, 401, 401, 401, 401]),
        // Revokes each token it is sent with.
        row("DELETE", "/api/auth/token", None,         [401, 401, 401, 401, 401, 204, 204, 204, 204, 401, 401]),
        row("GET", "/api/metrics", None,               [401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401]),
        row("GET", "/api/auth/session", None,          [200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200]),
    ];
    assert_statuses(&server, &actors, rows).await;
}

async fn sign_up_validates_and_refuses_duplicates(backend: Backend) {
    let server = TestServer::start(backend).await;
    let cases = [
        (
            json!({"email": "not-an-email", "password": PASSWORD}),
            "email",
        ),
        (json!({"email": "a@b.co", "password": "short"}), "password"),
        (
            json!({"email": "a@b.co", "password": PASSWORD, "username": "Bad Name!"}),
            "username",
        ),
        (json!({"email": "a@b.co"}), "password"),
        (json!({"email": 5, "password": PASSWORD}), "email"),
    ];
    for (body, field) in cases {
        let response = server.sign_up(&body).await;
        assert_eq!(response.status(), 422, "{body}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["code"], "VALIDATION_ERROR");
        assert_eq!(error["error"]["details"]["field"], field, "{body}: {error}");
    }
    for (content_type, body, want) in [
        ("application/json", "{\"email\":", 400),
        ("text/plain", "hi", 415),
    ] {
        let response = server
            .post_raw("/api/users", None, content_type, body)
            .await;
        assert_eq!(response.status(), want, "{content_type}: {body}");
    }
    for (email, want) in [("dup@example.com", 201), ("DUP@example.com", 409)] {
        let response = server
            .sign_up(&json!({"email": email, "password": PASSWORD}))
            .await;
        assert_eq!(response.status(), want, "{email}");
    }
}

async fn form_sign_in_needs_the_csrf_token(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("form@example.com", PASSWORD, "user");
    let (csrf_cookie, token) = server.csrf().await;
    let without = server
        .form_sign_in(
            None,
            &[("email", "form@example.com"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(without.status(), 403);
    let with = server
        .form_sign_in(
            Some(&csrf_cookie),
            &[
                ("email", "form@example.com"),
                ("password", PASSWORD),
                ("csrfToken", &token),
                ("callbackUrl", "https://evil.example/"),
            ],
        )
        .await;
    assert_eq!(with.status(), 303);
    assert_eq!(
        with.headers()["location"],
        "/",
        "foreign callback URLs are not followed"
    );
    assert!(session_cookie(&with).is_some());
}

/// Session lookups that arrive together share a statement: every request
/// still gets its own user, and a signed-out cookie none.
async fn concurrent_requests_each_resolve_their_own_session(backend: Backend) {
    let server = TestServer::start(backend).await;
    let mut people = Vec::new();
    for n in 0..12 {
        let email = format!("person{n}@example.com");
        let created = server
            .sign_up(&json!({"email": email, "password": PASSWORD, "name": format!("Person {n}")}))
            .await;
        assert_eq!(created.status(), StatusCode::CREATED);
        let cookie = server.sign_in(&email, PASSWORD).await;
        people.push((Some(email), cookie));
    }
    let (_, leaving) = people.pop().expect("people");
    let signed_out = server
        .send(As::Session(&leaving), "POST", "/api/auth/signout", None)
        .await;
    assert_eq!(signed_out.status(), 200);
    people.push((None, leaving));
    people.push((None, "plaza_session=not-a-session".to_owned()));
    let calls = (0..4).flat_map(|_| people.iter()).map(|(email, cookie)| {
        let server = &server;
        async move {
            let session = server.get_json_as("/api/auth/session", cookie).await;
            (email, session)
        }
    });
    for (email, session) in futures_util::future::join_all(calls).await {
        match email {
            Some(email) => assert_eq!(session["user"]["email"], email.as_str()),
            None => assert_eq!(session, Value::Null, "no session behind this cookie"),
        }
    }
}

/// The batched lookup itself: unknown and repeated hashes, and a batch
/// padded up to the statement's size, each answered in place.
async fn one_lookup_statement_answers_each_token_hash_in_order(backend: Backend) {
    let server = TestServer::start(backend).await;
    let mut hashes = Vec::new();
    for name in ["first", "second"] {
        let email = format!("{name}@example.com");
        server.create_user(&email, PASSWORD, "user");
        let cookie = server.sign_in(&email, PASSWORD).await;
        let token = cookie.trim_start_matches("plaza_session=");
        hashes.push(plaza_server::secrets::hash_token(token));
    }
    let asked = vec![
        hashes[1].clone(),
        "unknown".to_owned(),
        hashes[0].clone(),
        hashes[1].clone(),
        "also unknown".to_owned(),
    ];
    let lifetime = plaza_domain::sessions::SessionLifetime {
        ttl_millis: 3_600_000,
        refresh_after_millis: 60_000,
        max_lifetime_millis: 86_400_000,
    };
    let found = server
        .domain()
        .await
        .session_users(&asked, &lifetime)
        .await
        .expect("lookup");
    let emails: Vec<Option<String>> = found
        .iter()
        .map(|session| {
            session
                .as_ref()
                .map(|session| session.user.row.email.clone())
        })
        .collect();
    assert_eq!(
        emails,
        vec![
            Some("second@example.com".to_owned()),
            None,
            Some("first@example.com".to_owned()),
            Some("second@example.com".to_owned()),
            None,
        ]
    );
}

async fn a_user_lists_their_sessions_and_ends_one(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, laptop) = member(&server, "owner@example.com", "user").await;
    let phone = server.sign_in("owner@example.com", PASSWORD).await;

    let (status, body) = call(&server, "GET", "/api/auth/sessions", Some(&laptop), None).await;
    assert_eq!(status, 200, "{body}");
    let sessions = body["sessions"].as_array().expect("sessions").clone();
    assert_eq!(sessions.len(), 2, "{body}");
    let current: Vec<bool> = sessions
        .iter()
        .map(|session| session["current"].as_bool().expect("current"))
        .collect();
    assert_eq!(
        current.iter().filter(|current| **current).count(),
        1,
        "{body}"
    );
    for session in &sessions {
        assert!(session["createdAt"].is_string() && session["lastSeenAt"].is_string());
        assert!(session.get("tokenHash").is_none(), "{session}");
    }
    let phone_id = sessions
        .iter()
        .find(|session| session["current"] == false)
        .and_then(|session| session["id"].as_str())
        .expect("the other session's id")
        .to_owned();

    let path = format!("/api/auth/sessions/{phone_id}");
    let (status, body) = call(&server, "DELETE", &path, Some(&laptop), None).await;
    assert_eq!((status, body), (204, Value::Null));
    let (status, _) = call(&server, "GET", "/api/auth/sessions", Some(&phone), None).await;
    assert_eq!(status, 401, "the ended session no longer signs in");
    let (status, body) = call(&server, "GET", "/api/auth/sessions", Some(&laptop), None).await;
    assert_eq!(status, 200);
    assert_eq!(body["sessions"].as_array().map(Vec::len), Some(1), "{body}");
    let (status, _) = call(&server, "DELETE", &path, Some(&laptop), None).await;
    assert_eq!(status, 404, "an ended session is gone");
}

async fn nobody_ends_a_session_of_someone_else(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, owner) = member(&server, "owner@example.com", "user").await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (_, body) = call(&server, "GET", "/api/auth/sessions", Some(&owner), None).await;
    let owner_session = body["sessions"][0]["id"].as_str().expect("id").to_owned();
    let path = format!("/api/auth/sessions/{owner_session}");

    let (status, _) = call(&server, "DELETE", &path, None, None).await;
    assert_eq!(status, 401);
    let (status, body) = call(&server, "DELETE", &path, Some(&admin), None).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["code"], "NOT_FOUND");
    let (status, _) = call(&server, "GET", "/api/auth/sessions", Some(&owner), None).await;
    assert_eq!(status, 200, "the owner's session still signs in");
}

async fn a_password_change_needs_the_current_one_and_ends_the_other_sessions(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, laptop) = member(&server, "owner@example.com", "user").await;
    let phone = server.sign_in("owner@example.com", PASSWORD).await;
    let change = |current: Option<&str>, new: &str| {
        let mut body = json!({"newPassword": new});
        if let Some(current) = current {
            body["currentPassword"] = json!(current);
        }
        Some(body)
    };

    for current in [None, Some("not the password")] {
        let body = change(current, "a new long password");
        let (status, body) = call(&server, "PUT", "/api/auth/password", Some(&laptop), body).await;
        assert_eq!(status, 403, "{current:?}: {body}");
        assert_eq!(body["error"]["code"], "FORBIDDEN");
    }
    let body = change(Some(PASSWORD), "short");
    let (status, body) = call(&server, "PUT", "/api/auth/password", Some(&laptop), body).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["details"]["field"], "newPassword");
    let (status, _) = call(
        &server,
        "PUT",
        "/api/auth/password",
        None,
        change(None, "x"),
    )
    .await;
    assert_eq!(status, 401);

    let body = change(Some(PASSWORD), "a new long password");
    let (status, body) = call(&server, "PUT", "/api/auth/password", Some(&laptop), body).await;
    assert_eq!((status, body), (200, json!({"success": true})));
    let (status, _) = call(&server, "GET", "/api/auth/sessions", Some(&phone), None).await;
    assert_eq!(status, 401, "the other session ended");
    let (status, _) = call(&server, "GET", "/api/auth/sessions", Some(&laptop), None).await;
    assert_eq!(status, 200, "this session stays");
    let old = server.try_sign_in("owner@example.com", PASSWORD).await;
    assert_eq!(old.status(), StatusCode::UNAUTHORIZED);
    server
        .sign_in("owner@example.com", "a new long password")
        .await;
}

async fn a_user_without_a_password_sets_one(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, cookie) = member(&server, "provider@example.com", "user").await;
    server
        .sql("UPDATE users SET password_hash = NULL WHERE email = 'provider@example.com'")
        .await;
    let body = Some(json!({"newPassword": "a first password"}));
    let (status, body) = call(&server, "PUT", "/api/auth/password", Some(&cookie), body).await;
    assert_eq!(status, 200, "{body}");
    server
        .sign_in("provider@example.com", "a first password")
        .await;
}
