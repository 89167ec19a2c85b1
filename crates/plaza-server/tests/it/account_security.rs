//! The defences of accounts through HTTP: an administrator's authority only
//! with a session that passed the second factor (on every operation of the
//! OpenAPI document), turning two-factor sign-in on (password or a recent
//! sign-in; other sessions end), notices mailed for password and TOTP
//! changes, admin tokens ended by a password change, recovery that
//! strangers cannot block (mail budgets per address and client, a valid
//! reset link never refused, the sign-in lock passed by the owner's second
//! factor or ended by a reset), verification that secures an account
//! someone else signed up, mail to unverified addresses without text users
//! chose, addresses no mail can reach refused, and moderators acting
//! through their grant.

use serde_json::{Value, json};

use crate::common::smtp_sink::SmtpSink;
use crate::common::{Backend, PASSWORD, TestServer, call, member, post, session_cookie};

on_both_databases!(
    an_administrator_without_a_second_factor_acts_as_a_member_on_every_operation,
    the_general_routes_lend_no_administrator_power_without_a_second_factor,
    turning_totp_on_ends_other_sessions_and_needs_the_password_or_a_recent_sign_in,
    password_and_totp_changes_are_mailed_to_the_owner,
    a_password_change_ends_the_users_admin_tokens,
    strangers_cannot_spend_the_owners_recovery_budget,
    strangers_wrong_passwords_do_not_lock_out_an_owner_with_totp_or_a_reset,
    verifying_an_address_secures_an_account_someone_else_signed_up,
    mail_to_an_unverified_address_carries_no_text_a_user_chose,
    sign_up_refuses_addresses_no_mail_can_reach,
    a_moderator_moderates_only_with_the_posts_moderate_grant,
    a_form_token_passes_only_with_the_session_it_was_issued_for,
    an_admins_change_through_the_general_route_takes_the_users_edit_lock,
);

/// A server that asks administrators for a second factor.
async fn strict_server(backend: Backend) -> TestServer {
    TestServer::start_with(backend, &[("PLAZA_ADMIN_TOTP_REQUIRED", "true")]).await
}

/// Turns TOTP on in the session of `cookie` (a fresh one: no password
/// asked) and answers the secret.
async fn turn_on(server: &TestServer, cookie: &str) -> String {
    let (status, setup) = call(server, "POST", "/api/auth/totp/setup", Some(cookie), None).await;
    assert_eq!(status, 200, "{setup}");
    let secret = setup["secret"].as_str().unwrap().to_owned();
    let (status, body) = call(
        server,
        "POST",
        "/api/auth/totp/enable",
        Some(cookie),
        Some(json!({"code": code(&secret, 0)})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    secret
}

/// The code of `secret` `offset` steps from now.
fn code(secret: &str, offset: i64) -> String {
    let bytes = totp_rs::Secret::Encoded(secret.to_owned())
        .to_bytes()
        .unwrap();
    let totp = totp_rs::TOTP::new(
        totp_rs::Algorithm::SHA1,
        6,
        1,
        30,
        bytes,
        None,
        String::new(),
    )
    .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    totp.generate(now.saturating_add_signed(offset * 30))
}

/// Moves every session of `email` back by 20 minutes.
async fn age_sessions(server: &TestServer, email: &str) {
    server
        .sql(&format!(
            "UPDATE sessions SET created_at = created_at - 1200000 \
             WHERE user_id = (SELECT id FROM users WHERE email = '{email}')"
        ))
        .await;
}

/// `path` with each `{name}` filled in from `values`.
fn filled(path: &str, values: &[(&str, &str)]) -> String {
    let mut filled = path.to_owned();
    for (name, value) in values {
        filled = filled.replace(&format!("{{{name}}}"), value);
    }
    filled
}

/// Operations that end or change the caller's own session or account, so
/// they are asked last (or not at all): their answer is about the caller,
/// not about authority over others.
const OWN_SESSION_OPERATIONS: [&str; 4] = [
    "/api/auth/signout",
    "/api/auth/sessions/{id}",
    "/api/auth/totp/",
    "/api/auth/password",
];

async fn an_administrator_without_a_second_factor_acts_as_a_member_on_every_operation(
    backend: Backend,
) {
    let server = strict_server(backend).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (_, plain) = member(&server, "plain@example.com", "user").await;
    let (other_id, other) = member(&server, "other@example.com", "user").await;
    let other_post = post(
        &server,
        &other,
        json!({"title": "Theirs", "content": "Someone else's words", "published": true}),
    )
    .await;
    let other_id = other_id.to_string();
    let values = [
        ("id", other_id.as_str()),
        ("userId", other_id.as_str()),
        ("postId", other_post.as_str()),
        ("role", "moderator"),
        ("name", "nothing"),
        ("provider", "nothing"),
        ("jti", "nothing"),
    ];
    let document: Value = server.get("/api/openapi").await.json().await.unwrap();
    let mut compared = 0;
    for (path, item) in document["paths"].as_object().unwrap() {
        if OWN_SESSION_OPERATIONS
            .iter()
            .any(|own| path.starts_with(own))
            || path.contains("/stream")
            || path.starts_with("/admin")
        {
            continue;
        }
        for method in ["get", "post", "put", "patch", "delete"] {
            if item.get(method).is_none() {
                continue;
            }
            let url = if path.starts_with("/api/posts/") {
                filled(path, &[("id", other_post.as_str())])
            } else {
                filled(path, &values)
            };
            let ask = |cookie: &str| {
                let request = server
                    .client
                    .request(method.to_uppercase().parse().unwrap(), server.url(&url))
                    .header("cookie", cookie)
                    .header("accept", "application/json");
                let request = if method == "get" || method == "delete" {
                    request
                } else {
                    request.json(&json!({"role": "admin", "status": "inactive"}))
                };
                async move { request.send().await.unwrap().status().as_u16() }
            };
            let as_member = ask(&plain).await;
            let as_admin = ask(&admin).await;
            assert_eq!(
                as_admin,
                as_member,
                "{} {path}: an administrator without a second factor must be answered as a member",
                method.to_uppercase()
            );
            compared += 1;
        }
    }
    assert!(compared > 60, "only {compared} operations were compared");
    // Nothing the administrator asked changed the other member.
    let other_now = server.get_json_as("/api/auth/session", &other).await;
    assert_eq!(other_now["user"]["roles"], json!(["user"]), "{other_now}");
}

async fn the_general_routes_lend_no_administrator_power_without_a_second_factor(backend: Backend) {
    let server = strict_server(backend).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (target_id, target) = member(&server, "target@example.com", "user").await;
    let their_post = post(
        &server,
        &target,
        json!({"title": "Theirs", "content": "Words", "published": true}),
    )
    .await;
    let user_path = format!("/api/users/{target_id}");
    for (what, method, body) in [
        (
            "promoting a user",
            "PUT",
            Some(json!({"role": "moderator"})),
        ),
        (
            "deactivating a user",
            "PUT",
            Some(json!({"status": "inactive"})),
        ),
        ("erasing a user", "DELETE", None),
        (
            "editing someone else's post",
            "PUT",
            Some(json!({"title": "Mine now"})),
        ),
    ] {
        let path = if what.contains("post") {
            format!("/api/posts/{their_post}")
        } else {
            user_path.clone()
        };
        let (status, answer) = call(&server, method, &path, Some(&admin), body).await;
        assert!(status == 403 || status == 404, "{what}: {status} {answer}");
    }
    let export = server
        .client
        .get(server.url(&format!("{user_path}/export")))
        .header("cookie", &admin)
        .send()
        .await
        .unwrap();
    assert!(
        matches!(export.status().as_u16(), 403 | 404),
        "exporting someone else's data: {}",
        export.status()
    );
    let (status, listed) = call(&server, "GET", "/api/users", Some(&admin), None).await;
    assert_eq!(status, 200);
    assert!(
        !listed.to_string().contains("target@example.com"),
        "the list shows no one's address: {listed}"
    );
    // The administrator's own things still work.
    let (status, own) = call(&server, "GET", "/api/auth/session", Some(&admin), None).await;
    assert_eq!((status, &own["user"]["roles"]), (200, &json!(["admin"])));
    post(
        &server,
        &admin,
        json!({"title": "Mine", "content": "My words", "published": true}),
    )
    .await;

    // With the second factor, the same session's successor has the powers.
    turn_on(&server, &admin).await;
    let (status, body) = call(
        &server,
        "PUT",
        &user_path,
        Some(&admin),
        Some(json!({"role": "moderator"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (_, listed) = call(&server, "GET", "/api/users", Some(&admin), None).await;
    assert!(
        listed.to_string().contains("target@example.com"),
        "{listed}"
    );
}

async fn turning_totp_on_ends_other_sessions_and_needs_the_password_or_a_recent_sign_in(
    backend: Backend,
) {
    let server = strict_server(backend).await;
    let (_, first) = member(&server, "admin@example.com", "admin").await;
    let second = server.sign_in("admin@example.com", PASSWORD).await;
    age_sessions(&server, "admin@example.com").await;

    let (status, setup) = call(&server, "POST", "/api/auth/totp/setup", Some(&first), None).await;
    assert_eq!(status, 200);
    let secret = setup["secret"].as_str().unwrap().to_owned();
    let enable = |body: Value| {
        let server = &server;
        let first = first.clone();
        async move {
            call(
                server,
                "POST",
                "/api/auth/totp/enable",
                Some(&first),
                Some(body),
            )
            .await
        }
    };
    let (status, body) = enable(json!({"code": code(&secret, 0)})).await;
    assert_eq!(
        status, 403,
        "a sign-in 20 minutes old needs the password: {body}"
    );
    let (status, _) = enable(json!({"code": code(&secret, 0), "password": "wrong password"})).await;
    assert_eq!(status, 403, "a wrong password");
    let (status, body) = enable(json!({"code": code(&secret, 0), "password": PASSWORD})).await;
    assert_eq!(status, 200, "{body}");

    // The session that turned it on passed the second factor; the other
    // (password only) one is over.
    let (status, _) = call(&server, "GET", "/api/admin/users", Some(&first), None).await;
    assert_eq!(
        status, 200,
        "the session that turned it on acts as an administrator"
    );
    let (status, _) = call(&server, "GET", "/api/auth/session", Some(&second), None).await;
    assert_eq!(status, 200);
    let session = server.get_json_as("/api/auth/session", &second).await;
    assert!(
        session.get("user").is_none(),
        "the password-only session ended: {session}"
    );
    let (status, _) = call(&server, "GET", "/api/admin/users", Some(&second), None).await;
    assert_eq!(status, 401);
}

/// The account-change notices queued for `email`.
async fn notices_to(server: &TestServer, email: &str) -> i64 {
    server
        .sql_count(&format!(
            "SELECT COUNT(*) FROM outgoing_mail WHERE kind = 'account_changed' AND recipient = '{email}'"
        ))
        .await
}

async fn password_and_totp_changes_are_mailed_to_the_owner(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, cookie) = member(&server, "ada@example.com", "user").await;
    assert_eq!(notices_to(&server, "ada@example.com").await, 0);
    let (status, _) = call(
        &server,
        "PUT",
        "/api/auth/password",
        Some(&cookie),
        Some(json!({"currentPassword": PASSWORD, "newPassword": "a new password 1"})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(notices_to(&server, "ada@example.com").await, 1);
    let secret = turn_on(&server, &cookie).await;
    assert_eq!(notices_to(&server, "ada@example.com").await, 2);
    let (status, _) = call(
        &server,
        "POST",
        "/api/auth/totp/disable",
        Some(&cookie),
        Some(json!({"code": code(&secret, 1)})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(notices_to(&server, "ada@example.com").await, 3);
}

async fn a_password_change_ends_the_users_admin_tokens(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, cookie) = member(&server, "admin@example.com", "admin").await;
    let (status, minted) = call(&server, "POST", "/api/auth/token", Some(&cookie), None).await;
    assert_eq!(status, 200, "{minted}");
    let token = minted["token"].as_str().unwrap().to_owned();
    let with_token = |token: String| {
        let server = &server;
        async move {
            server
                .client
                .get(server.url("/api/v1/admin/users"))
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(with_token(token.clone()).await, 200);
    let (status, _) = call(
        &server,
        "PUT",
        "/api/auth/password",
        Some(&cookie),
        Some(json!({"currentPassword": PASSWORD, "newPassword": "a new password 1"})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        with_token(token).await,
        401,
        "the token minted before is over"
    );
}

/// Asks for a reset link for `email` from the client `client` (a
/// forwarded address: the test's own is a trusted proxy).
async fn forgot_from(server: &TestServer, email: &str, client: &str) -> u16 {
    server
        .client
        .post(server.url("/api/auth/password/forgot"))
        .header("x-forwarded-for", client)
        .json(&json!({"email": email}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Stores a mailed token for `email` with `purpose`, as a mailed link
/// would carry it, and answers the token.
async fn mailed_token_for(server: &TestServer, email: &str, purpose: &str) -> String {
    let token = format!("test-{purpose}-{email}").replace(['@', '.'], "-");
    let hash = {
        use base64::Engine as _;
        use sha2::Digest as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(sha2::Sha256::digest(token.as_bytes()))
    };
    server
        .sql(&format!(
            "INSERT INTO email_tokens (token_hash, purpose, user_id, email, created_at, expires_at) \
             SELECT '{hash}', '{purpose}', id, email, 0, 9999999999999 FROM users WHERE email = '{email}'"
        ))
        .await;
    token
}

async fn reset_token_for(server: &TestServer, email: &str) -> String {
    mailed_token_for(server, email, "reset_password").await
}

async fn verify_token_for(server: &TestServer, email: &str) -> String {
    mailed_token_for(server, email, "verify_email").await
}

async fn reset_with(server: &TestServer, token: &str, client: &str) -> u16 {
    server
        .client
        .post(server.url("/api/auth/password/reset"))
        .header("x-forwarded-for", client)
        .json(&json!({"token": token, "password": "a new password 1"}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn strangers_cannot_spend_the_owners_recovery_budget(backend: Backend) {
    let server = TestServer::start_with(
        backend,
        &[
            ("PLAZA_RATE_LIMITS_ENABLED", "true"),
            ("PLAZA_TRUSTED_PROXIES", "[\"127.0.0.1\"]"),
            ("PLAZA_RATE_LIMIT_ACCOUNT_MAIL", "50/hour"),
            ("PLAZA_RATE_LIMIT_ACCOUNT_MAIL_PER_EMAIL", "2/hour"),
            ("PLAZA_RATE_LIMIT_ACCOUNT_MAIL_EMAIL_CEILING", "6/hour"),
        ],
    )
    .await;
    server.create_user("owner@example.com", PASSWORD, "user");
    // A stranger spends their own budget for the address, not the owner's.
    assert_eq!(
        forgot_from(&server, "owner@example.com", "198.51.100.7").await,
        202
    );
    assert_eq!(
        forgot_from(&server, "owner@example.com", "198.51.100.7").await,
        202
    );
    assert_eq!(
        forgot_from(&server, "owner@example.com", "198.51.100.7").await,
        429
    );
    assert_eq!(
        forgot_from(&server, "owner@example.com", "203.0.113.9").await,
        202
    );
    // Many strangers reach the address's ceiling, which bounds its mail.
    for client in ["198.51.100.8", "198.51.100.9", "198.51.100.10"] {
        forgot_from(&server, "owner@example.com", client).await;
    }
    assert_eq!(
        forgot_from(&server, "owner@example.com", "198.51.100.11").await,
        429
    );
    // A valid link is never refused for a budget.
    let token = reset_token_for(&server, "owner@example.com").await;
    assert_eq!(reset_with(&server, &token, "198.51.100.7").await, 200);
    // Unusable tokens are counted against their client.
    let unusable: Vec<u16> = {
        let mut answers = Vec::new();
        for _ in 0..51 {
            answers.push(reset_with(&server, "no-such-token", "192.0.2.1").await);
        }
        answers
    };
    assert_eq!(unusable[0], 400);
    assert_eq!(*unusable.last().unwrap(), 429, "guessing tokens is bounded");
}

async fn strangers_wrong_passwords_do_not_lock_out_an_owner_with_totp_or_a_reset(backend: Backend) {
    let server = TestServer::start_with(backend, &[("PLAZA_SIGN_IN_MAX_FAILURES", "3")]).await;
    let (_, cookie) = member(&server, "owner@example.com", "user").await;
    let secret = turn_on(&server, &cookie).await;
    server.create_user("plain@example.com", PASSWORD, "user");
    for email in ["owner@example.com", "plain@example.com"] {
        for _ in 0..4 {
            server.try_sign_in(email, "a stranger's guess").await;
        }
    }
    let sign_in = |email: &'static str, totp: Option<String>| {
        let server = &server;
        async move {
            server
                .client
                .post(server.url("/api/auth/signin"))
                .json(&json!({"email": email, "password": PASSWORD, "totp": totp}))
                .send()
                .await
                .unwrap()
        }
    };
    // Locked: the right password alone is refused as a guess is.
    assert_eq!(sign_in("owner@example.com", None).await.status(), 429);
    assert_eq!(
        sign_in("owner@example.com", Some("000000".to_owned()))
            .await
            .status(),
        429,
        "a wrong code while locked"
    );
    // The owner's password with their code gets through.
    let through = sign_in("owner@example.com", Some(code(&secret, 1))).await;
    assert_eq!(through.status(), 200);
    assert!(session_cookie(&through).is_some());

    // Without a second factor, a reset ends the lock.
    assert_eq!(sign_in("plain@example.com", None).await.status(), 429);
    let token = reset_token_for(&server, "plain@example.com").await;
    let (status, _) = call(
        &server,
        "POST",
        "/api/auth/password/reset",
        None,
        Some(json!({"token": token, "password": "a new password 1"})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        server
            .try_sign_in("plain@example.com", "a new password 1")
            .await
            .status(),
        200
    );
}

async fn verifying_an_address_secures_an_account_someone_else_signed_up(backend: Backend) {
    let server = TestServer::start(backend).await;
    // The attacker signs up with the victim's address and stays signed in.
    let created = server
        .sign_up(&json!({"email": "victim@example.com", "password": PASSWORD, "name": "Evil"}))
        .await;
    assert_eq!(created.status(), 201);
    let attacker = server.sign_in("victim@example.com", PASSWORD).await;
    let token = verify_token_for(&server, "victim@example.com").await;
    // The victim opens the link in a browser that is not signed in.
    let opened = server
        .client
        .get(server.url(&format!("/api/auth/verify-email?token={token}")))
        .header("accept", "text/html")
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), 303);
    let location = opened.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.starts_with("/reset-password?token="), "{location}");
    // The attacker's session and password no longer work.
    let session = server.get_json_as("/api/auth/session", &attacker).await;
    assert!(session.get("user").is_none(), "{session}");
    assert_eq!(
        server
            .try_sign_in("victim@example.com", PASSWORD)
            .await
            .status(),
        401
    );
    // The victim chooses the password with the token they were sent on with.
    let reset_token = location.trim_start_matches("/reset-password?token=");
    let (status, body) = call(
        &server,
        "POST",
        "/api/auth/password/reset",
        None,
        Some(json!({"token": reset_token, "password": "the victim's own"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        server
            .try_sign_in("victim@example.com", "the victim's own")
            .await
            .status(),
        200
    );

    // Verified from a session of the account, the password stays and the
    // other sessions end.
    let created = server
        .sign_up(&json!({"email": "owner@example.com", "password": PASSWORD}))
        .await;
    assert_eq!(created.status(), 201);
    let here = server.sign_in("owner@example.com", PASSWORD).await;
    let elsewhere = server.sign_in("owner@example.com", PASSWORD).await;
    let owner_token = verify_token_for(&server, "owner@example.com").await;
    let (status, body) = call(
        &server,
        "POST",
        "/api/auth/verify-email",
        Some(&here),
        Some(json!({"token": owner_token})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.get("passwordResetToken").is_none(), "{body}");
    assert!(
        server
            .get_json_as("/api/auth/session", &here)
            .await
            .get("user")
            .is_some()
    );
    assert!(
        server
            .get_json_as("/api/auth/session", &elsewhere)
            .await
            .get("user")
            .is_none()
    );
    assert_eq!(
        server
            .try_sign_in("owner@example.com", PASSWORD)
            .await
            .status(),
        200
    );
}

async fn mail_to_an_unverified_address_carries_no_text_a_user_chose(backend: Backend) {
    let sink = SmtpSink::start().await;
    let server = TestServer::start_with(backend, &[("PLAZA_SMTP_URL", &sink.url())]).await;
    let created = server
        .sign_up(&json!({
            "email": "someone@example.com",
            "password": PASSWORD,
            "name": "Click http://evil.example now",
            "username": "evilname",
        }))
        .await;
    assert_eq!(created.status(), 201);
    let (id, cookie) = {
        let body: Value = created.json().await.unwrap();
        let id = body["id"].as_str().unwrap().to_owned();
        (id, server.sign_in("someone@example.com", PASSWORD).await)
    };
    let (status, _) = call(
        &server,
        "PUT",
        "/api/auth/password",
        Some(&cookie),
        Some(json!({"currentPassword": PASSWORD, "newPassword": "a new password 1"})),
    )
    .await;
    assert_eq!(status, 200, "user {id}");
    let mails = sink.wait_for(2).await;
    for mail in &mails {
        let text = mail.text();
        assert!(!text.to_lowercase().contains("evil"), "{text}");
        assert!(text.contains("Hello there,"), "{text}");
    }
}

async fn sign_up_refuses_addresses_no_mail_can_reach(backend: Backend) {
    let server = TestServer::start(backend).await;
    for address in [
        "a@b.test,c@evil.test",
        "a@rt.test>",
        "Ada <a@rt.test>",
        "a@@rt.test",
    ] {
        let refused = server
            .sign_up(&json!({"email": address, "password": PASSWORD}))
            .await;
        assert_eq!(refused.status(), 422, "{address}");
        let body: Value = refused.json().await.unwrap();
        assert!(body.to_string().contains("email"), "{address}: {body}");
    }
    assert_eq!(server.sql_count("SELECT COUNT(*) FROM users").await, 0);
}

async fn a_moderator_moderates_only_with_the_posts_moderate_grant(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, moderator) = member(&server, "mod@example.com", "moderator").await;
    let (_, author) = member(&server, "author@example.com", "user").await;
    let delete_a_post = |moderator: String| {
        let server = &server;
        let author = author.clone();
        async move {
            let id = post(
                server,
                &author,
                json!({"title": "T", "content": "C", "published": true}),
            )
            .await;
            call(
                server,
                "DELETE",
                &format!("/api/posts/{id}"),
                Some(&moderator),
                None,
            )
            .await
            .0
        }
    };
    assert_eq!(
        delete_a_post(moderator.clone()).await,
        204,
        "with the default grant"
    );
    server
        .sql(
            "DELETE FROM role_permissions WHERE role_id = (SELECT id FROM roles WHERE name = 'moderator')",
        )
        .await;
    assert_eq!(delete_a_post(moderator.clone()).await, 403, "without it");
    let console = server
        .client
        .get(server.url("/admin/moderation"))
        .header("cookie", &moderator)
        .send()
        .await
        .unwrap();
    assert_eq!(console.status(), 403, "the console is closed to them too");
}

/// The CSRF cookie pair an answer set and the token it carries.
fn csrf_cookie_of(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find(|value| value.contains("plaza_csrf="))
        .map(|value| value.to_owned())
}

async fn a_form_token_passes_only_with_the_session_it_was_issued_for(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, first) = member(&server, "first@example.com", "admin").await;
    let (_, second) = member(&server, "second@example.com", "admin").await;
    let (_, author) = member(&server, "author@example.com", "user").await;
    let id = post(
        &server,
        &author,
        json!({"title": "T", "content": "C", "published": true}),
    )
    .await;
    // The token of `GET /api/auth/csrf` is a signed-out one.
    let (anonymous_cookie, anonymous_token) = server.csrf().await;
    let issued = server
        .client
        .get(server.url("/admin/moderation"))
        .header("cookie", &first)
        .send()
        .await
        .unwrap();
    assert_eq!(issued.status(), 200);
    let first_cookie = csrf_cookie_of(&issued)
        .expect("a token for the session")
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let first_token = first_cookie.split_once('=').unwrap().1.to_owned();
    let hide = |session: &str, csrf_cookie: &str, token: &str| {
        let request = server
            .client
            .post(server.url(&format!("/admin/moderation/{id}")))
            .header("cookie", format!("{session}; {csrf_cookie}"))
            .form(&[
                ("csrfToken", token),
                ("action", "hide"),
                ("reason", "Off topic"),
            ]);
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(
        hide(&second, &first_cookie, &first_token).await,
        403,
        "a token planted from another session"
    );
    assert_eq!(
        hide(&first, &anonymous_cookie, &anonymous_token).await,
        403,
        "a token issued before signing in"
    );
    assert_eq!(hide(&first, &first_cookie, &first_token).await, 303);

    // On https the cookie is a `__Host-` one.
    let secure =
        TestServer::start_with(backend, &[("PLAZA_BASE_URL", "https://plaza.example")]).await;
    let answer = secure.get("/api/auth/csrf").await;
    let cookie = csrf_cookie_of(&answer).expect("a CSRF cookie");
    assert!(cookie.starts_with("__Host-plaza_csrf="), "{cookie}");
    assert!(
        cookie.contains("Secure") && cookie.contains("Path=/"),
        "{cookie}"
    );
    assert!(!cookie.contains("Domain"), "{cookie}");
}

async fn an_admins_change_through_the_general_route_takes_the_users_edit_lock(backend: Backend) {
    let server = TestServer::start(backend).await;
    let holder = server.create_user("holder@example.com", PASSWORD, "super_admin");
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (_, second) = member(&server, "second@example.com", "admin").await;
    let (target, _) = member(&server, "target@example.com", "user").await;
    let path = format!("/api/users/{target}");
    server
        .sql(&format!(
            "INSERT INTO edit_locks (resource_type, resource_id, holder_id, locked_at, expires_at) \
             VALUES ('user', {target}, {holder}, 1700000000000, 4000000000000)"
        ))
        .await;
    let (status, body) = call(
        &server,
        "PUT",
        &path,
        Some(&admin),
        Some(json!({"role": "moderator"})),
    )
    .await;
    assert_eq!(status, 423, "another administrator holds the user: {body}");
    assert_eq!(body["error"]["code"], "RESOURCE_LOCKED", "{body}");
    server.sql("DELETE FROM edit_locks").await;

    // Two administrators at once: each answer is a whole change or a 423,
    // and the audit holds exactly the changes made.
    let (first, other) = tokio::join!(
        call(
            &server,
            "PUT",
            &path,
            Some(&admin),
            Some(json!({"role": "moderator"}))
        ),
        call(
            &server,
            "PUT",
            &path,
            Some(&second),
            Some(json!({"location": "Elsewhere"}))
        ),
    );
    for (status, body) in [&first, &other] {
        assert!(*status == 200 || *status == 423, "{status} {body}");
    }
    let made = [&first, &other]
        .iter()
        .filter(|(status, _)| *status == 200)
        .count();
    assert!(made >= 1);
    let audited = server
        .sql_count(&format!(
            "SELECT COUNT(*) FROM audit_log WHERE action = 'user.update' AND target_id = '{target}'"
        ))
        .await;
    assert_eq!(audited, i64::try_from(made).unwrap());
    // A user's own profile takes no lock.
    server
        .sql(&format!(
            "INSERT INTO edit_locks (resource_type, resource_id, holder_id, locked_at, expires_at) \
             VALUES ('user', {target}, {holder}, 1700000000000, 4000000000000)"
        ))
        .await;
    let own = server.sign_in("target@example.com", PASSWORD).await;
    let (status, body) = call(
        &server,
        "PUT",
        &path,
        Some(&own),
        Some(json!({"bio": "Mine"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}
