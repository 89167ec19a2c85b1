//! Mail and the links it carries, through HTTP with a local SMTP sink:
//! email verification (once, until it expires, resent), a forgotten
//! password (the same answer for every address, a reset that works once and
//! ends every session and admin token), mail written to files without
//! SMTP, mail that cannot be delivered (retried, kept across a restart,
//! kept as failed in the end), the limits on mail requests, the pages a
//! browser uses, and provider sign-in linking only to verified accounts.

use std::time::{Duration, Instant};

use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use crate::common::fake_idp::{FakeIdp, location, provider_round_trip};
use crate::common::smtp_sink::{SmtpSink, SunkMail, decoded_text, token_in};
use crate::common::{As, Backend, PASSWORD, TestServer, call, session_cookie};

on_both_databases!(
    a_sign_up_mails_a_link_that_verifies_the_address_once,
    verification_links_expire_and_unknown_ones_are_refused,
    a_signed_in_user_gets_a_new_verification_link,
    a_mailed_link_resets_the_password_once_and_ends_every_session_and_token,
    without_smtp_mail_is_written_into_the_data_directory,
    undeliverable_mail_is_retried_and_survives_a_restart,
    mail_given_up_on_is_kept_as_failed_and_counted,
    mail_requests_are_limited_per_address_and_per_email,
    the_password_pages_work_without_scripts,
    a_provider_sign_in_links_to_an_existing_account_only_once_it_is_verified,
    the_command_line_sends_failed_mail_again,
);

const VERIFY_PATH: &str = "/api/auth/verify-email";
const RESET_PATH: &str = "/reset-password";
const BROWSER_ACCEPT: &str = "text/html,application/xhtml+xml,*/*;q=0.8";

async fn server_with_sink(backend: Backend, env: &[(&str, &str)]) -> (TestServer, SmtpSink) {
    let sink = SmtpSink::start().await;
    let url = sink.url();
    let mut all = vec![("PLAZA_SMTP_URL", url.as_str())];
    all.extend_from_slice(env);
    (TestServer::start_with(backend, &all).await, sink)
}

/// Signs up with a password: the new user's id.
async fn sign_up(server: &TestServer, email: &str) -> i64 {
    let created = server
        .sign_up(&json!({"email": email, "password": PASSWORD, "name": "Ada"}))
        .await;
    assert_eq!(created.status(), 201);
    let body: Value = created.json().await.unwrap();
    body["id"].as_str().unwrap().parse().unwrap()
}

/// Waits (30 s at most) for the `nth` mail (from 1) to `address`.
async fn nth_mail_to(sink: &SmtpSink, address: &str, nth: usize) -> SunkMail {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let to: Vec<SunkMail> = sink
            .mails()
            .into_iter()
            .filter(|mail| mail.recipients.iter().any(|to| to == address))
            .collect();
        if let Some(mail) = to.get(nth - 1) {
            return mail.clone();
        }
        assert!(
            Instant::now() < deadline,
            "mail {nth} to {address} never came: {:?}",
            sink.mails()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Polls `statement` (a `SELECT COUNT(*)`) until it answers `expected`.
async fn until_count(server: &TestServer, statement: &str, expected: i64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let count = server.sql_count(statement).await;
        if count == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{statement} stayed at {count}, not {expected}:\n{}",
            server.logs()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn open_as_browser(server: &TestServer, path: &str) -> reqwest::Response {
    open_as_browser_of(server, path, None).await
}

/// Opens `path` as a browser would, signed in with `cookie` when given.
async fn open_as_browser_of(
    server: &TestServer,
    path: &str,
    cookie: Option<&str>,
) -> reqwest::Response {
    let mut request = server
        .client
        .get(server.url(path))
        .header("accept", BROWSER_ACCEPT);
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    request.send().await.unwrap()
}

fn content_type(response: &reqwest::Response) -> String {
    response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned()
}

async fn a_sign_up_mails_a_link_that_verifies_the_address_once(backend: Backend) {
    let (server, sink) = server_with_sink(backend, &[]).await;
    let asked = Instant::now();
    let id = sign_up(&server, "ada@example.com").await;
    let mail = nth_mail_to(&sink, "ada@example.com", 1).await;
    assert!(
        asked.elapsed() < Duration::from_secs(10),
        "a mail is first tried within 10 s of its request"
    );
    assert!(
        mail.data
            .contains("Subject: Confirm your email address for Plaza"),
        "{}",
        mail.data
    );
    let token = token_in(&mail.text(), VERIFY_PATH);
    // Stored hashed, valid a day.
    let stored = format!("SELECT COUNT(*) FROM email_tokens WHERE token_hash = '{token}'");
    assert_eq!(server.sql_count(&stored).await, 0);
    let day = "SELECT COUNT(*) FROM email_tokens \
               WHERE purpose = 'verify_email' AND expires_at - created_at = 86400000";
    assert_eq!(server.sql_count(day).await, 1);

    let cookie = server.sign_in("ada@example.com", PASSWORD).await;
    let session = server.get_json_as("/api/auth/session", &cookie).await;
    assert_eq!(session["user"]["emailVerified"], Value::Null);
    let own = server
        .get_json_as(&format!("/api/users/{id}"), &cookie)
        .await;
    assert_eq!(own["emailVerified"], Value::Null);

    // Opened in the browser that signed up (outside it, the account's
    // password would be dropped: `tests/it/account_security.rs`).
    let link = format!("{VERIFY_PATH}?token={token}");
    let page = open_as_browser_of(&server, &link, Some(&cookie)).await;
    assert_eq!(page.status(), 200);
    assert!(content_type(&page).starts_with("text/html"));
    assert!(page.text().await.unwrap().contains("confirmed"));

    let session = server.get_json_as("/api/auth/session", &cookie).await;
    assert!(session["user"]["emailVerified"].is_string(), "{session}");
    let own = server
        .get_json_as(&format!("/api/users/{id}"), &cookie)
        .await;
    assert!(own["emailVerified"].is_string(), "{own}");
    server.create_user("root@example.com", PASSWORD, "admin");
    let admin = server.mint("root@example.com", "admin:read");
    let shown: Value = server
        .send(
            As::Token(&admin),
            "GET",
            &format!("/api/v1/admin/users/{id}"),
            None,
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(shown["data"]["isVerified"], true, "{shown}");

    // The link works once, for JSON clients and browsers alike.
    let (status, again) = call(&server, "GET", &link, None, None).await;
    assert_eq!(status, 400);
    assert_eq!(again["error"]["code"], "BAD_REQUEST");
    let page = open_as_browser(&server, &link).await;
    assert_eq!(page.status(), 400);
    assert!(content_type(&page).starts_with("text/html"));
}

async fn verification_links_expire_and_unknown_ones_are_refused(backend: Backend) {
    let (server, sink) = server_with_sink(backend, &[]).await;
    sign_up(&server, "ada@example.com").await;
    let token = token_in(
        &nth_mail_to(&sink, "ada@example.com", 1).await.text(),
        VERIFY_PATH,
    );
    server
        .sql("UPDATE email_tokens SET expires_at = created_at - 1")
        .await;
    let (status, body) = call(
        &server,
        "POST",
        VERIFY_PATH,
        None,
        Some(json!({"token": token})),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "BAD_REQUEST");
    for path in [
        format!("{VERIFY_PATH}?token={token}"),
        format!("{VERIFY_PATH}?token=unknown"),
        VERIFY_PATH.to_owned(),
    ] {
        let (status, body) = call(&server, "GET", &path, None, None).await;
        assert_eq!(status, 400, "{path}: {body}");
        assert_eq!(body["error"]["code"], "BAD_REQUEST");
    }
    let cookie = server.sign_in("ada@example.com", PASSWORD).await;
    let session = server.get_json_as("/api/auth/session", &cookie).await;
    assert_eq!(session["user"]["emailVerified"], Value::Null);
}

async fn a_signed_in_user_gets_a_new_verification_link(backend: Backend) {
    let (server, sink) = server_with_sink(backend, &[]).await;
    sign_up(&server, "ada@example.com").await;
    let first = token_in(
        &nth_mail_to(&sink, "ada@example.com", 1).await.text(),
        VERIFY_PATH,
    );
    let resend = "/api/auth/verify-email/resend";
    let (status, _) = call(&server, "POST", resend, None, None).await;
    assert_eq!(status, 401);
    let cookie = server.sign_in("ada@example.com", PASSWORD).await;
    let (status, body) = call(&server, "POST", resend, Some(&cookie), None).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body, json!({"success": true}));
    let second = token_in(
        &nth_mail_to(&sink, "ada@example.com", 2).await.text(),
        VERIFY_PATH,
    );
    assert_ne!(first, second);
    let (status, body) = call(
        &server,
        "POST",
        VERIFY_PATH,
        Some(&cookie),
        Some(json!({"token": second})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true);
    assert!(body["emailVerified"].is_string());
    let (status, body) = call(&server, "POST", resend, Some(&cookie), None).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "CONFLICT");
}

async fn a_mailed_link_resets_the_password_once_and_ends_every_session_and_token(backend: Backend) {
    let (server, sink) = server_with_sink(backend, &[]).await;
    server.create_user("ada@example.com", PASSWORD, "admin");
    let cookie = server.sign_in("ada@example.com", PASSWORD).await;
    let admin_token = server.mint("ada@example.com", "admin:read");
    let forgot = "/api/auth/password/forgot";
    let known = call(
        &server,
        "POST",
        forgot,
        None,
        Some(json!({"email": "ADA@example.com"})),
    )
    .await;
    let unknown = call(
        &server,
        "POST",
        forgot,
        None,
        Some(json!({"email": "nobody@example.com"})),
    )
    .await;
    assert_eq!(known, (202, json!({"success": true})));
    assert_eq!(unknown, known, "an unknown address gets the same answer");

    let mail = nth_mail_to(&sink, "ada@example.com", 1).await;
    assert!(mail.data.contains("Subject: Reset your Plaza password"));
    let token = token_in(&mail.text(), RESET_PATH);
    let hour = "SELECT COUNT(*) FROM email_tokens \
                WHERE purpose = 'reset_password' AND expires_at - created_at = 3600000";
    assert_eq!(server.sql_count(hour).await, 1);

    let reset = "/api/auth/password/reset";
    let (status, body) = call(
        &server,
        "POST",
        reset,
        None,
        Some(json!({"token": token, "password": "short"})),
    )
    .await;
    assert_eq!(status, 422, "the password rules apply: {body}");
    let new_password = "a brand new password";
    let (status, body) = call(
        &server,
        "POST",
        reset,
        None,
        Some(json!({"token": token, "password": new_password})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({"success": true}));

    let session = server.get_json_as("/api/auth/session", &cookie).await;
    assert_eq!(session, Value::Null, "the old session ended");
    let listed = server
        .send(As::Token(&admin_token), "GET", "/api/v1/admin/users", None)
        .await;
    assert_eq!(listed.status(), 401, "the old admin token ended");
    assert_eq!(
        server
            .try_sign_in("ada@example.com", PASSWORD)
            .await
            .status(),
        401
    );
    server.sign_in("ada@example.com", new_password).await;

    let (status, body) = call(
        &server,
        "POST",
        reset,
        None,
        Some(json!({"token": token, "password": "yet another password"})),
    )
    .await;
    assert_eq!(status, 400, "a link works once: {body}");
    assert_eq!(body["error"]["code"], "BAD_REQUEST");
    assert_eq!(
        server
            .sql_count("SELECT COUNT(*) FROM outgoing_mail WHERE recipient = 'nobody@example.com'")
            .await,
        0
    );
}

async fn without_smtp_mail_is_written_into_the_data_directory(backend: Backend) {
    let server = TestServer::start(backend).await;
    sign_up(&server, "ada@example.com").await;
    let folder = server.data_dir.path().join("mail");
    let deadline = Instant::now() + Duration::from_secs(30);
    let file = loop {
        let found = std::fs::read_dir(&folder).ok().and_then(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .find(|path| path.extension().is_some_and(|extension| extension == "eml"))
        });
        if let Some(file) = found {
            break file;
        }
        assert!(
            Instant::now() < deadline,
            "no .eml file in {}:\n{}",
            folder.display(),
            server.logs()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let message = std::fs::read_to_string(&file).unwrap();
    assert!(message.contains("To: ada@example.com"), "{message}");
    token_in(&decoded_text(&message), VERIFY_PATH);
    server.wait_for_log("mail written to a file");
    until_count(
        &server,
        "SELECT COUNT(*) FROM outgoing_mail WHERE status = 'sent' AND body_text IS NULL",
        1,
    )
    .await;
}

async fn undeliverable_mail_is_retried_and_survives_a_restart(backend: Backend) {
    // A port nothing listens on: the SMTP server is down.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("smtp://127.0.0.1:{port}");
    let mut server = TestServer::start_with(
        backend,
        &[
            ("PLAZA_SMTP_URL", url.as_str()),
            ("PLAZA_MAIL_RETRY_BACKOFF_SECS", "1"),
        ],
    )
    .await;
    sign_up(&server, "ada@example.com").await;
    until_count(
        &server,
        "SELECT COUNT(*) FROM outgoing_mail WHERE status = 'pending' AND attempts >= 2",
        1,
    )
    .await;
    server.wait_for_log("mail not delivered; it will be retried");
    assert!(server.terminate().success());
    assert_eq!(
        server
            .sql_count("SELECT COUNT(*) FROM outgoing_mail WHERE status = 'pending'")
            .await,
        1,
        "the mail waits in the database"
    );

    let sink = SmtpSink::start_on(port).await;
    server.restart_with(&[]);
    let mail = nth_mail_to(&sink, "ada@example.com", 1).await;
    token_in(&mail.text(), VERIFY_PATH);
    until_count(
        &server,
        "SELECT COUNT(*) FROM outgoing_mail \
         WHERE status = 'sent' AND body_text IS NULL AND body_html IS NULL",
        1,
    )
    .await;
    assert_eq!(sink.mails().len(), 1, "sent once");
}

async fn mail_given_up_on_is_kept_as_failed_and_counted(backend: Backend) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("smtp://127.0.0.1:{port}");
    let server = TestServer::start_with(
        backend,
        &[
            ("PLAZA_SMTP_URL", url.as_str()),
            ("PLAZA_MAIL_MAX_ATTEMPTS", "2"),
            ("PLAZA_MAIL_RETRY_BACKOFF_SECS", "1"),
            ("PLAZA_METRICS_PUBLIC", "true"),
        ],
    )
    .await;
    sign_up(&server, "ada@example.com").await;
    until_count(
        &server,
        "SELECT COUNT(*) FROM outgoing_mail \
         WHERE status = 'failed' AND attempts = 2 AND last_error IS NOT NULL \
           AND body_text IS NOT NULL",
        1,
    )
    .await;
    server.wait_for_log("mail given up on");
    let metrics = server.get("/api/metrics").await.text().await.unwrap();
    assert!(
        metrics
            .lines()
            .any(|line| line.starts_with("plaza_mail_failed_total{kind=\"verify_email\"} 1")),
        "{metrics}"
    );
}

async fn mail_requests_are_limited_per_address_and_per_email(backend: Backend) {
    let (server, _sink) = server_with_sink(
        backend,
        &[
            ("PLAZA_RATE_LIMITS_ENABLED", "true"),
            ("PLAZA_RATE_LIMIT_ACCOUNT_MAIL", "4/hour"),
            ("PLAZA_RATE_LIMIT_ACCOUNT_MAIL_PER_EMAIL", "2/hour"),
        ],
    )
    .await;
    let forgot = |email: &'static str| {
        let server = &server;
        async move {
            call(
                server,
                "POST",
                "/api/auth/password/forgot",
                None,
                Some(json!({"email": email})),
            )
            .await
        }
    };
    assert_eq!(forgot("a@example.com").await.0, 202);
    assert_eq!(forgot("A@example.com").await.0, 202);
    let (status, body) = forgot("a@example.com").await;
    assert_eq!(status, 429, "the third for one email: {body}");
    assert_eq!(body["error"]["code"], "RATE_LIMITED");
    assert_eq!(forgot("b@example.com").await.0, 202);
    let (status, body) = forgot("c@example.com").await;
    assert_eq!(status, 429, "the fifth from one address: {body}");
    assert_eq!(body["error"]["code"], "RATE_LIMITED");
}

/// The `plaza_csrf` cookie pair a page set, and the token in its form.
fn csrf_of(headers: &HeaderMap, page: &str) -> (String, String) {
    let cookie = headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find(|value| value.starts_with("plaza_csrf="))
        .and_then(|value| value.split(';').next())
        .expect("a CSRF cookie")
        .to_owned();
    let marker = "name=\"csrfToken\" value=\"";
    let start = page.find(marker).expect("a CSRF field") + marker.len();
    let token = page[start..].split('"').next().unwrap().to_owned();
    (cookie, token)
}

/// Checks a page loads nothing from elsewhere and runs no script.
fn assert_self_contained(headers: &HeaderMap, page: &str) {
    assert_eq!(headers["content-security-policy"], "frame-ancestors 'none'");
    assert!(!page.contains("<script"), "{page}");
    assert!(!page.contains("src="), "{page}");
    assert!(!page.contains("://"), "{page}");
}

async fn the_password_pages_work_without_scripts(backend: Backend) {
    let (server, sink) = server_with_sink(backend, &[]).await;
    server.create_user("ada@example.com", PASSWORD, "user");
    let signin = server.get("/api/auth/signin").await.text().await.unwrap();
    assert!(signin.contains("href=\"/forgot-password\""), "{signin}");

    let answer = server.get("/forgot-password").await;
    assert_eq!(answer.status(), 200);
    let headers = answer.headers().clone();
    let page = answer.text().await.unwrap();
    assert_self_contained(&headers, &page);
    let (cookie, csrf) = csrf_of(&headers, &page);
    let sent = server
        .client
        .post(server.url("/api/auth/password/forgot"))
        .header("cookie", &cookie)
        .form(&[("email", "ada@example.com"), ("csrfToken", &csrf)])
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 303);
    assert_eq!(location(&sent), "/forgot-password?sent=1");
    let notice = server
        .get("/forgot-password?sent=1")
        .await
        .text()
        .await
        .unwrap();
    assert!(notice.contains("data-notice=\"sent\""));

    let token = token_in(
        &nth_mail_to(&sink, "ada@example.com", 1).await.text(),
        RESET_PATH,
    );
    let answer = server.get(&format!("{RESET_PATH}?token={token}")).await;
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()["referrer-policy"], "no-referrer");
    let headers = answer.headers().clone();
    let page = answer.text().await.unwrap();
    assert_self_contained(&headers, &page);
    assert!(page.contains(&format!("name=\"token\" value=\"{token}\"")));
    let (cookie, csrf) = csrf_of(&headers, &page);
    let post = |password: &'static str, confirm: &'static str| {
        let (server, cookie, csrf, token) = (&server, &cookie, &csrf, &token);
        async move {
            server
                .client
                .post(server.url("/api/auth/password/reset"))
                .header("cookie", cookie)
                .form(&[
                    ("token", token.as_str()),
                    ("password", password),
                    ("passwordConfirm", confirm),
                    ("csrfToken", csrf.as_str()),
                ])
                .send()
                .await
                .unwrap()
        }
    };
    let mismatch = post("a brand new password", "another password").await;
    assert_eq!(mismatch.status(), 303);
    assert!(location(&mismatch).contains("error=mismatch"));
    let done = post("a brand new password", "a brand new password").await;
    assert_eq!(done.status(), 303);
    assert_eq!(location(&done), "/reset-password?done=1");
    server
        .sign_in("ada@example.com", "a brand new password")
        .await;
    let again = post("a third password!", "a third password!").await;
    assert_eq!(again.status(), 303);
    assert!(location(&again).contains("error=invalid_token"));
    let broken = server.get(&location(&again)).await.text().await.unwrap();
    assert!(broken.contains("data-error=\"invalid_token\""));
}

async fn a_provider_sign_in_links_to_an_existing_account_only_once_it_is_verified(
    backend: Backend,
) {
    let sink = SmtpSink::start().await;
    let idp = FakeIdp::start().await;
    let url = sink.url();
    let server =
        TestServer::start_with_config(backend, &idp.config_toml(), &[("PLAZA_SMTP_URL", &url)])
            .await;
    let id = sign_up(&server, "owner@example.com").await;
    idp.set_profile(
        json!({"sub": "owner-at-idp", "email": "owner@example.com", "email_verified": true}),
    );
    let start = "/api/auth/signin/fake";
    let refused = provider_round_trip(&server, start, None).await;
    assert!(
        location(&refused).contains("error=account_not_linked"),
        "an unverified account is not joined: {}",
        location(&refused)
    );
    assert!(session_cookie(&refused).is_none());

    let token = token_in(
        &nth_mail_to(&sink, "owner@example.com", 1).await.text(),
        VERIFY_PATH,
    );
    let (status, _) = call(
        &server,
        "GET",
        &format!("{VERIFY_PATH}?token={token}"),
        None,
        None,
    )
    .await;
    assert_eq!(status, 200);
    let linked = provider_round_trip(&server, start, None).await;
    let cookie = session_cookie(&linked).expect("signed in once both sides are verified");
    let session = server.get_json_as("/api/auth/session", &cookie).await;
    assert_eq!(session["user"]["id"], id.to_string());
}

async fn the_command_line_sends_failed_mail_again(backend: Backend) {
    let server = TestServer::start(backend).await;
    // Failed mails, finished in the future so the purge keeps them.
    for recipient in ["first@example.com", "second@example.com"] {
        server
            .sql(&format!(
                "INSERT INTO outgoing_mail \
                 (kind, recipient, subject, body_text, body_html, status, attempts, next_attempt_at, created_at, finished_at, last_error) \
                 VALUES ('verify_email', '{recipient}', 'Hello', 'Text', '<p>Text</p>', 'failed', 8, 0, 0, 9999999999999, '550 no such user')"
            ))
            .await;
    }
    let failed_to = |recipient: &str| {
        format!(
            "SELECT COUNT(*) FROM outgoing_mail WHERE status = 'failed' AND recipient = '{recipient}'"
        )
    };
    let output = server.cli(&["mail", "resend", "--recipient", "First@example.com"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("1 failed mails queued again"), "{said}");
    assert_eq!(server.sql_count(&failed_to("first@example.com")).await, 0);
    assert_eq!(server.sql_count(&failed_to("second@example.com")).await, 1);
    // The running server sends it (into files, without SMTP).
    until_count(
        &server,
        "SELECT COUNT(*) FROM outgoing_mail WHERE status = 'sent' AND recipient = 'first@example.com'",
        1,
    )
    .await;
    let output = server.cli(&["mail", "resend"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(server.sql_count(&failed_to("second@example.com")).await, 0);
    let audited = server
        .sql_count(
            "SELECT COUNT(*) FROM audit_log WHERE action = 'mail.resend' AND surface = 'cli'",
        )
        .await;
    assert_eq!(audited, 2);
}
