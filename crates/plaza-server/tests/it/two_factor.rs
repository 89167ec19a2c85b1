//! Two-factor sign-in (TOTP) through HTTP: setting it up and turning it on
//! and off, signing in with a code or a recovery code (each accepted
//! once), the sign-in page's second step, provider sign-in, the lockout
//! that bounds guessing, `admin_totp_required` on both admin surfaces and
//! token minting, and the operator's way to turn it off. Codes are
//! computed here with the crate the server uses.

use crate::common::fake_idp::{self, FakeIdp, cookie_pair, location};
use crate::common::{As, Backend, PASSWORD, TestServer, call, member, session_cookie};
use plaza_domain::two_factor;
use serde_json::{Value, json};
use totp_rs::{Algorithm, Secret, TOTP};

on_both_databases!(
    setting_up_turning_on_and_signing_in_with_a_code,
    a_code_is_accepted_once,
    recovery_codes_sign_in_once_each,
    turning_it_off_takes_a_code_or_a_recovery_code,
    wrong_codes_count_towards_the_sign_in_lockout,
    codes_that_turn_it_on_or_off_count_too,
    the_sign_in_page_asks_for_the_code_in_a_second_step,
    provider_sign_in_asks_for_the_code_too,
    administrators_without_totp_are_refused_when_it_is_required,
    an_operator_turns_it_off_from_the_command_line,
);

/// The code generator of a secret as `POST /api/auth/totp/setup` shows it.
fn generator(secret: &str) -> TOTP {
    let bytes = Secret::Encoded(secret.to_owned())
        .to_bytes()
        .expect("a base32 secret");
    TOTP::new(Algorithm::SHA1, 6, 1, 30, bytes, None, String::new()).expect("a valid secret")
}

/// The current 30-second time step.
fn current_step() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        / 30
}

/// The code of `secret` for time step `step`.
fn code_at(secret: &str, step: u64) -> String {
    generator(secret).generate(step * 30)
}

/// Six digits that are no code of `secret` within a step of now.
fn wrong_code(secret: &str) -> String {
    let now = current_step();
    let valid: Vec<String> = (now - 2..=now + 2)
        .map(|step| code_at(secret, step))
        .collect();
    (0..)
        .map(|n: u32| format!("{:06}", (123_457 + n * 7_919) % 1_000_000))
        .find(|candidate| !valid.contains(candidate))
        .unwrap()
}

/// Sets up and turns on TOTP for the user signed in with `cookie`, with
/// the code of the current step: (the secret, the recovery codes).
async fn turn_on(server: &TestServer, cookie: &str) -> (String, Vec<String>) {
    let (secret, recovery, _) = turn_on_with_code(server, cookie).await;
    (secret, recovery)
}

/// [`turn_on`], also answering the code that turned it on.
async fn turn_on_with_code(server: &TestServer, cookie: &str) -> (String, Vec<String>, String) {
    let (status, setup) = call(server, "POST", "/api/auth/totp/setup", Some(cookie), None).await;
    assert_eq!(status, 200, "{setup}");
    let secret = setup["secret"].as_str().unwrap().to_owned();
    let code = code_at(&secret, current_step());
    let (status, enabled) = call(
        server,
        "POST",
        "/api/auth/totp/enable",
        Some(cookie),
        Some(json!({"code": code})),
    )
    .await;
    assert_eq!(status, 200, "{enabled}");
    let recovery = enabled["recoveryCodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|code| code.as_str().unwrap().to_owned())
        .collect();
    (secret, recovery, code)
}

/// A JSON sign-in with an optional `totp`.
async fn sign_in(server: &TestServer, email: &str, totp: Option<&str>) -> reqwest::Response {
    let mut body = json!({"email": email, "password": PASSWORD});
    if let Some(totp) = totp {
        body["totp"] = json!(totp);
    }
    server
        .send(As::Anonymous, "POST", "/api/auth/signin", Some(&body))
        .await
}

/// The status and error code of a JSON answer.
async fn refusal(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    (status, body["error"]["code"].clone())
}

/// Lets the codes of the last accepted steps be used again, as if time had
/// moved on (no test waits for the clock).
async fn forget_accepted_steps(server: &TestServer) {
    server.sql("UPDATE users SET totp_last_step = NULL").await;
}

async fn setting_up_turning_on_and_signing_in_with_a_code(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (id, cookie) = member(&server, "ada@example.com", "user").await;
    let (_, other) = member(&server, "bob@example.com", "user").await;
    let session = server.get_json_as("/api/auth/session", &cookie).await;
    assert_eq!(session["user"]["totpEnabled"], false);

    let (status, first) = call(&server, "POST", "/api/auth/totp/setup", Some(&cookie), None).await;
    assert_eq!(status, 200, "{first}");
    let first_secret = first["secret"].as_str().unwrap();
    assert_eq!(first_secret.len(), 32, "160 bits in base32");
    let url = first["otpauthUrl"].as_str().unwrap();
    assert!(
        url.starts_with("otpauth://totp/Plaza:ada%40example.com?")
            && url.contains(&format!("secret={first_secret}"))
            && url.contains("issuer=Plaza"),
        "{url}"
    );
    // A second setup replaces the pending secret: the first one's codes
    // no longer turn it on.
    let (_, second) = call(&server, "POST", "/api/auth/totp/setup", Some(&cookie), None).await;
    let secret = second["secret"].as_str().unwrap().to_owned();
    assert_ne!(secret, first_secret);
    let stale = code_at(first_secret, current_step());
    let enable = |code: String| {
        let cookie = cookie.clone();
        let server = &server;
        async move {
            call(
                server,
                "POST",
                "/api/auth/totp/enable",
                Some(&cookie),
                Some(json!({"code": code})),
            )
            .await
        }
    };
    if stale != code_at(&secret, current_step()) {
        let (status, body) = enable(stale).await;
        assert_eq!(status, 400, "{body}");
    }
    let (status, body) = enable(wrong_code(&secret)).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (400, &json!("BAD_REQUEST"))
    );
    let session = server.get_json_as("/api/auth/session", &cookie).await;
    assert_eq!(session["user"]["totpEnabled"], false, "still off");

    let (status, body) = enable(code_at(&secret, current_step())).await;
    assert_eq!(status, 200, "{body}");
    let codes = body["recoveryCodes"].as_array().unwrap();
    assert_eq!(codes.len(), 10);
    let distinct: std::collections::HashSet<&str> =
        codes.iter().map(|code| code.as_str().unwrap()).collect();
    assert_eq!(distinct.len(), 10);
    let (status, body) = call(&server, "POST", "/api/auth/totp/setup", Some(&cookie), None).await;
    assert_eq!((status, &body["error"]["code"]), (409, &json!("CONFLICT")));

    // The user sees that it is on; nobody else does.
    let session = server.get_json_as("/api/auth/session", &cookie).await;
    assert_eq!(session["user"]["totpEnabled"], true);
    let own = server
        .get_json_as(&format!("/api/users/{id}"), &cookie)
        .await;
    assert_eq!(own["totpEnabled"], true, "{own}");
    let seen = server
        .get_json_as(&format!("/api/users/{id}"), &other)
        .await;
    assert!(seen.get("totpEnabled").is_none(), "{seen}");

    // The database holds neither the secret nor the recovery codes.
    let stored = server
        .sql_count(&format!(
            "SELECT COUNT(*) FROM users WHERE totp_secret LIKE '%{secret}%' \
             OR totp_secret LIKE '%{}%'",
            secret.to_lowercase()
        ))
        .await;
    assert_eq!(stored, 0, "the secret is sealed");
    let plain = codes[0].as_str().unwrap().replace('-', "");
    let stored = server
        .sql_count(&format!(
            "SELECT COUNT(*) FROM totp_recovery_codes WHERE code_hash LIKE '%{plain}%'"
        ))
        .await;
    assert_eq!(stored, 0, "recovery codes are hashed");

    let (status, code) = refusal(sign_in(&server, "ada@example.com", None).await).await;
    assert_eq!((status, code), (401, json!("TOTP_REQUIRED")));
    let wrong = wrong_code(&secret);
    let (status, code) = refusal(sign_in(&server, "ada@example.com", Some(&wrong)).await).await;
    assert_eq!((status, code), (401, json!("UNAUTHORIZED")));
    // A wrong password with a code is the wrong-password answer.
    let body =
        json!({"email": "ada@example.com", "password": "not the password", "totp": "123456"});
    let (status, body) = call(&server, "POST", "/api/auth/signin", None, Some(body)).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (401, &json!("UNAUTHORIZED"))
    );

    let next = code_at(&secret, current_step() + 1);
    let signed_in = sign_in(&server, "ada@example.com", Some(&next)).await;
    assert_eq!(signed_in.status(), 200);
    let cookie = session_cookie(&signed_in).expect("a session");
    let session = server.get_json_as("/api/auth/session", &cookie).await;
    assert_eq!(session["user"]["email"], "ada@example.com");
}

async fn a_code_is_accepted_once(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (id, cookie) = member(&server, "ada@example.com", "user").await;
    let (secret, _, used) = turn_on_with_code(&server, &cookie).await;
    let (status, code) = refusal(sign_in(&server, "ada@example.com", Some(&used)).await).await;
    assert_eq!(
        (status, code),
        (401, json!("UNAUTHORIZED")),
        "the code that turned it on was used"
    );
    let next = code_at(&secret, current_step() + 1);
    let accepted = sign_in(&server, "ada@example.com", Some(&next)).await;
    assert_eq!(accepted.status(), 200);
    let (status, code) = refusal(sign_in(&server, "ada@example.com", Some(&next)).await).await;
    assert_eq!((status, code), (401, json!("UNAUTHORIZED")), "a replay");
    // Nor does a code of an earlier step work after a later one.
    let earlier = code_at(&secret, current_step() - 1);
    if earlier != next {
        let (status, _) = refusal(sign_in(&server, "ada@example.com", Some(&earlier)).await).await;
        assert_eq!(status, 401);
    }
    // Sign-ins racing with the same fresh code: one gets in.
    forget_accepted_steps(&server).await;
    let fresh = code_at(&secret, current_step());
    let racing = (0..4).map(|_| sign_in(&server, "ada@example.com", Some(&fresh)));
    let statuses: Vec<u16> = futures_util::future::join_all(racing)
        .await
        .iter()
        .map(|response| response.status().as_u16())
        .collect();
    assert_eq!(
        statuses.iter().filter(|status| **status == 200).count(),
        1,
        "{statuses:?}"
    );
    // The step is taken by one statement that checks and records it, so a
    // request that read the step before another accepted it still loses.
    let db = server.domain().await;
    let accept = |step: i64| {
        let db = db.clone();
        async move {
            db.write(|tx| Box::pin(async move { two_factor::accept_step(tx, id, step).await }))
                .await
                .unwrap()
        }
    };
    let later = i64::try_from(current_step()).unwrap() + 5;
    assert!(accept(later).await);
    assert!(!accept(later).await, "the same step again");
    assert!(!accept(later - 1).await, "an earlier step");
}

async fn recovery_codes_sign_in_once_each(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, cookie) = member(&server, "ada@example.com", "user").await;
    let (_, recovery) = turn_on(&server, &cookie).await;
    let first = &recovery[0];
    assert_eq!(first.len(), 19, "four groups of four: {first}");
    let signed_in = sign_in(&server, "ada@example.com", Some(first)).await;
    assert_eq!(signed_in.status(), 200);
    let (status, code) = refusal(sign_in(&server, "ada@example.com", Some(first)).await).await;
    assert_eq!((status, code), (401, json!("UNAUTHORIZED")), "used once");
    // Typed another way (upper case, without dashes), another code works.
    let typed = recovery[1].replace('-', "").to_uppercase();
    let signed_in = sign_in(&server, "ada@example.com", Some(&typed)).await;
    assert_eq!(signed_in.status(), 200);
    let left = server
        .sql_count("SELECT COUNT(*) FROM totp_recovery_codes WHERE used_at IS NULL")
        .await;
    assert_eq!(left, 8);
}

async fn turning_it_off_takes_a_code_or_a_recovery_code(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, cookie) = member(&server, "ada@example.com", "user").await;
    let disable = |code: String| {
        let cookie = cookie.clone();
        let server = &server;
        async move {
            call(
                server,
                "POST",
                "/api/auth/totp/disable",
                Some(&cookie),
                Some(json!({"code": code})),
            )
            .await
        }
    };
    let (status, body) = disable("123456".to_owned()).await;
    assert_eq!((status, &body["error"]["code"]), (409, &json!("CONFLICT")));
    let (secret, recovery) = turn_on(&server, &cookie).await;
    let (status, body) = disable(wrong_code(&secret)).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (400, &json!("BAD_REQUEST"))
    );
    let (status, body) = disable(recovery[0].clone()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({"totpEnabled": false}));
    let session = server.get_json_as("/api/auth/session", &cookie).await;
    assert_eq!(session["user"]["totpEnabled"], false);
    assert_eq!(
        sign_in(&server, "ada@example.com", None).await.status(),
        200
    );
    assert_eq!(
        server
            .sql_count("SELECT COUNT(*) FROM totp_recovery_codes")
            .await,
        0
    );

    // On again (a new secret), and off with a current code.
    let (secret, _) = turn_on(&server, &cookie).await;
    let (status, body) = disable(code_at(&secret, current_step() + 1)).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = disable(code_at(&secret, current_step() + 1)).await;
    assert_eq!(status, 409, "already off");
}

/// Four failures per account before 429.
async fn wrong_codes_count_towards_the_sign_in_lockout(backend: Backend) {
    let server = TestServer::start_with(backend, &[("PLAZA_SIGN_IN_MAX_FAILURES", "4")]).await;
    let (_, cookie) = member(&server, "ada@example.com", "user").await;
    let (secret, _) = turn_on(&server, &cookie).await;
    // A right password without a code guesses nothing: it is not counted.
    for _ in 0..5 {
        let (status, code) = refusal(sign_in(&server, "ada@example.com", None).await).await;
        assert_eq!((status, code), (401, json!("TOTP_REQUIRED")));
    }
    // Wrong codes are; one without a code in between resets nothing.
    let wrong = wrong_code(&secret);
    for attempt in [Some(&wrong), Some(&wrong), None, Some(&wrong), Some(&wrong)] {
        let response = sign_in(&server, "ada@example.com", attempt.map(String::as_str)).await;
        assert_eq!(response.status(), 401);
    }
    let right = code_at(&secret, current_step() + 1);
    let (status, code) = refusal(sign_in(&server, "ada@example.com", Some(&right)).await).await;
    assert_eq!(
        (status, code),
        (429, json!("RATE_LIMITED")),
        "locked out, even with the right code"
    );
}

/// Codes sent to turn two-factor sign-in off or on count on the account
/// as sign-in failures do (four before 429 here).
async fn codes_that_turn_it_on_or_off_count_too(backend: Backend) {
    let server = TestServer::start_with(backend, &[("PLAZA_SIGN_IN_MAX_FAILURES", "4")]).await;
    let (_, cookie) = member(&server, "bob@example.com", "user").await;
    let (secret, _) = turn_on(&server, &cookie).await;
    let wrong = wrong_code(&secret);
    for _ in 0..4 {
        let (status, _) = call(
            &server,
            "POST",
            "/api/auth/totp/disable",
            Some(&cookie),
            Some(json!({"code": wrong})),
        )
        .await;
        assert_eq!(status, 400);
    }
    let right = code_at(&secret, current_step() + 1);
    let (status, body) = call(
        &server,
        "POST",
        "/api/auth/totp/disable",
        Some(&cookie),
        Some(json!({"code": right})),
    )
    .await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (429, &json!("RATE_LIMITED"))
    );
    let (status, code) = refusal(sign_in(&server, "bob@example.com", Some(&right)).await).await;
    assert_eq!((status, code), (429, json!("RATE_LIMITED")));

    let (_, cookie) = member(&server, "cy@example.com", "user").await;
    let (_, setup) = call(&server, "POST", "/api/auth/totp/setup", Some(&cookie), None).await;
    let secret = setup["secret"].as_str().unwrap().to_owned();
    let enable = |code: String| {
        let cookie = cookie.clone();
        let server = &server;
        async move {
            call(
                server,
                "POST",
                "/api/auth/totp/enable",
                Some(&cookie),
                Some(json!({"code": code})),
            )
            .await
            .0
        }
    };
    for _ in 0..4 {
        assert_eq!(enable(wrong_code(&secret)).await, 400);
    }
    assert_eq!(enable(code_at(&secret, current_step())).await, 429);
}

async fn the_sign_in_page_asks_for_the_code_in_a_second_step(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, cookie) = member(&server, "ada@example.com", "user").await;
    let (secret, _) = turn_on(&server, &cookie).await;
    let (csrf_cookie, csrf) = server.csrf().await;
    let password = server
        .form_sign_in(
            Some(&csrf_cookie),
            &[
                ("email", "ada@example.com"),
                ("password", PASSWORD),
                ("csrfToken", &csrf),
                ("callbackUrl", "/welcome"),
            ],
        )
        .await;
    assert_eq!(password.status(), 303);
    assert_eq!(location(&password), "/api/auth/signin?step=totp");
    assert!(session_cookie(&password).is_none(), "not signed in yet");
    let waiting = cookie_pair(&password, "plaza_2fa").expect("the second step's cookie");

    let page = server
        .client
        .get(server.url("/api/auth/signin?step=totp"))
        .header("cookie", &csrf_cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("name=\"totp\"") && !page.contains("name=\"password\""),
        "{page}"
    );

    let jar = format!("{csrf_cookie}; {waiting}");
    let post_code = |code: String| {
        let jar = jar.clone();
        let csrf = csrf.clone();
        let server = &server;
        async move {
            server
                .client
                .post(server.url("/api/auth/signin"))
                .header("cookie", jar)
                .form(&[("totp", code.as_str()), ("csrfToken", csrf.as_str())])
                .send()
                .await
                .unwrap()
        }
    };
    let wrong = post_code(wrong_code(&secret)).await;
    assert_eq!(wrong.status(), 303);
    assert_eq!(
        location(&wrong),
        "/api/auth/signin?step=totp&error=totp_invalid"
    );
    assert!(session_cookie(&wrong).is_none());

    let right = post_code(code_at(&secret, current_step() + 1)).await;
    assert_eq!(right.status(), 303);
    assert_eq!(location(&right), "/welcome");
    let cookie = session_cookie(&right).expect("signed in");
    let session = server.get_json_as("/api/auth/session", &cookie).await;
    assert_eq!(session["user"]["email"], "ada@example.com");

    // The waiting sign-in is over: its cookie starts nothing again.
    forget_accepted_steps(&server).await;
    let again = post_code(code_at(&secret, current_step())).await;
    assert_eq!(again.status(), 303);
    assert!(
        location(&again).contains("error=totp_expired"),
        "{}",
        location(&again)
    );
    assert!(session_cookie(&again).is_none());

    // A code sent with the password signs in at once.
    let together = server
        .form_sign_in(
            Some(&csrf_cookie),
            &[
                ("email", "ada@example.com"),
                ("password", PASSWORD),
                ("totp", &code_at(&secret, current_step() + 1)),
                ("csrfToken", &csrf),
            ],
        )
        .await;
    assert_eq!(together.status(), 303);
    assert_eq!(location(&together), "/");
    assert!(session_cookie(&together).is_some());
}

async fn provider_sign_in_asks_for_the_code_too(backend: Backend) {
    let idp = FakeIdp::start().await;
    let server = TestServer::start_with_config(backend, &idp.config_toml(), &[]).await;
    let (_, cookie) = member(&server, "ada@example.com", "user").await;
    let (secret, _) = turn_on(&server, &cookie).await;
    idp.set_profile(
        json!({"sub": "ada-at-idp", "email": "ada@example.com", "email_verified": true}),
    );
    let done =
        fake_idp::provider_round_trip(&server, "/api/auth/signin/fake?callbackUrl=/welcome", None)
            .await;
    assert_eq!(done.status(), 303);
    assert_eq!(location(&done), "/api/auth/signin?step=totp");
    assert!(session_cookie(&done).is_none(), "not signed in yet");
    let waiting = cookie_pair(&done, "plaza_2fa").expect("the second step's cookie");
    let (csrf_cookie, csrf) = server.csrf().await;
    let code = code_at(&secret, current_step() + 1);
    let finished = server
        .client
        .post(server.url("/api/auth/signin"))
        .header("cookie", format!("{csrf_cookie}; {waiting}"))
        .form(&[("totp", code.as_str()), ("csrfToken", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(finished.status(), 303);
    assert_eq!(location(&finished), "/welcome");
    let cookie = session_cookie(&finished).expect("signed in");
    let session = server.get_json_as("/api/auth/session", &cookie).await;
    assert_eq!(session["user"]["email"], "ada@example.com");
}

async fn administrators_without_totp_are_refused_when_it_is_required(backend: Backend) {
    let server = TestServer::start_with(backend, &[("PLAZA_ADMIN_TOTP_REQUIRED", "true")]).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (_, moderator) = member(&server, "mod@example.com", "moderator").await;
    let refused = |status: u16, body: &Value| {
        assert_eq!(status, 403, "{body}");
        assert!(
            body.to_string().contains("two-factor sign-in"),
            "the answer says why: {body}"
        );
    };

    let (status, body) = call(&server, "POST", "/api/auth/token", Some(&admin), None).await;
    refused(status, &body);
    assert_eq!(body["error"]["code"], "FORBIDDEN", "the general shape");
    let (status, body) = call(&server, "GET", "/api/admin/users", Some(&admin), None).await;
    refused(status, &body);
    assert_eq!(body["error"], "Insufficient permissions", "the admin shape");
    let minted = server.cli(&["token", "--email", "admin@example.com"]);
    assert!(!minted.status.success(), "the command line refuses too");
    assert!(String::from_utf8_lossy(&minted.stderr).contains("admin_totp_required"));
    // Moderators are not administrators: their surface stays theirs.
    let (status, _) = call(
        &server,
        "GET",
        "/api/admin/emojis/pending",
        Some(&moderator),
        None,
    )
    .await;
    assert_eq!(status, 200);

    let (secret, _) = turn_on(&server, &admin).await;
    let (status, body) = call(&server, "POST", "/api/auth/token", Some(&admin), None).await;
    assert_eq!(status, 200, "{body}");
    let token = body["token"].as_str().unwrap().to_owned();
    let (status, _) = call(&server, "GET", "/api/admin/users", Some(&admin), None).await;
    assert_eq!(status, 200);
    let v1 = server
        .send(As::Token(&token), "GET", "/api/v1/admin/users", None)
        .await;
    assert_eq!(v1.status(), 200);

    // Turned off again, the admin's token and session lose the surfaces.
    let (status, _) = call(
        &server,
        "POST",
        "/api/auth/totp/disable",
        Some(&admin),
        Some(json!({"code": code_at(&secret, current_step() + 1)})),
    )
    .await;
    assert_eq!(status, 200);
    let v1 = server
        .send(As::Token(&token), "GET", "/api/v1/admin/users", None)
        .await;
    assert_eq!(v1.status(), 403);
    let body: Value = v1.json().await.unwrap();
    refused(403, &body);
    assert_eq!(body["success"], false, "the versioned shape: {body}");
    assert_eq!(body["error"]["code"], "FORBIDDEN");
    let on_admin = server
        .send(As::Token(&token), "GET", "/api/admin/users", None)
        .await;
    assert_eq!(on_admin.status(), 403);
    let (status, _) = call(&server, "GET", "/api/admin/users", Some(&admin), None).await;
    assert_eq!(status, 403);
    let revoked = server
        .send(As::Token(&token), "DELETE", "/api/auth/token", None)
        .await;
    assert_eq!(revoked.status(), 204, "a token can still be revoked");
}

async fn an_operator_turns_it_off_from_the_command_line(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (id, cookie) = member(&server, "ada@example.com", "user").await;
    turn_on(&server, &cookie).await;
    let (status, _) = refusal(sign_in(&server, "ada@example.com", None).await).await;
    assert_eq!(status, 401);

    let output = server.cli(&["user", "disable-totp", "--email", "ada@example.com"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        sign_in(&server, "ada@example.com", None).await.status(),
        200
    );
    let audited = server
        .sql_count(&format!(
            "SELECT COUNT(*) FROM audit_log WHERE action = 'user.totp.disable' \
             AND target_id = '{id}' AND surface = 'cli'"
        ))
        .await;
    assert_eq!(audited, 1);

    let again = server.cli(&["user", "disable-totp", "--email", "ada@example.com"]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("does not have two-factor"));
}
