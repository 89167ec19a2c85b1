//! Real clients unchanged: the requests `next-auth/react` 5 makes (`signIn`
//! with a provider and with credentials, `getSession`, `update`), replayed
//! as its browser code sends them, and the calls of idling.app's front end
//! (the emoji picker's page size, the author tooltip's profile, CORS
//! preflights with its headers, previews of its own pages served beside
//! Plaza on one origin).

use axum::Router;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse};
use reqwest::header::{CONTENT_TYPE, LOCATION};
use serde_json::{Value, json};

use crate::common::fake_idp::{FakeIdp, cookie_pair, open_callback};
use crate::common::{Backend, PASSWORD, TestServer, call, member, session_cookie};

on_both_databases!(
    sign_in_with_a_provider_as_next_auth_does,
    sign_in_with_credentials_as_next_auth_does,
    get_session_and_update_as_next_auth_does,
    the_emoji_picker_gets_at_most_100_a_page,
    profiles_by_id_as_idling_app_answers_them,
    preflights_allow_the_headers_of_next_auth_and_fetch_helpers,
    front_end_pages_on_the_own_origin_are_previewed_over_http,
);

/// The page the front end signs in from, on the base URL's origin (the
/// test servers' default base URL).
const PAGE: &str = "http://localhost:3000/t/1";

/// `signIn`'s first two requests: the providers (to pick the endpoint by
/// the provider's type) and the CSRF token, whose cookie the browser keeps.
async fn providers_and_csrf(server: &TestServer) -> (Value, String, String) {
    let providers: Value = server
        .get("/api/auth/providers")
        .await
        .json()
        .await
        .unwrap();
    let (csrf_cookie, csrf_token) = server.csrf().await;
    (providers, csrf_cookie, csrf_token)
}

/// `signIn`'s post: a form with the client's fields, `csrfToken` and
/// `callbackUrl`, to `<path>?` (the empty authorization parameters), with
/// `X-Auth-Return-Redirect: 1` when `return_redirect`.
async fn sign_in_post(
    server: &TestServer,
    path: &str,
    cookies: &str,
    fields: &[(&str, &str)],
    return_redirect: bool,
) -> reqwest::Response {
    let mut request = server
        .client
        .post(server.url(&format!("{path}?")))
        .header("cookie", cookies)
        .form(fields);
    if return_redirect {
        request = request.header("x-auth-return-redirect", "1");
    }
    request.send().await.unwrap()
}

async fn sign_in_with_a_provider_as_next_auth_does(backend: Backend) {
    let idp = FakeIdp::start().await;
    let server = TestServer::start_with_config(backend, &idp.config_toml(), &[]).await;
    idp.set_profile(
        json!({"sub": "u-7", "email": "next@idp.example", "email_verified": true, "name": "Next"}),
    );

    // signIn("fake"): providers, CSRF token, then the form post asking for
    // the redirect as JSON.
    let (providers, csrf_cookie, csrf_token) = providers_and_csrf(&server).await;
    assert_eq!(providers["fake"]["type"], "oidc");
    let form = [("csrfToken", csrf_token.as_str()), ("callbackUrl", PAGE)];
    let started = sign_in_post(&server, "/api/auth/signin/fake", &csrf_cookie, &form, true).await;
    assert_eq!(started.status(), 200);
    let binding = cookie_pair(&started, "plaza_oauth").expect("the binding cookie");
    let body: Value = started.json().await.unwrap();
    let authorize = body["url"].as_str().expect("{url}").to_owned();
    assert!(
        authorize.starts_with(&idp.base)
            && authorize.contains("code_challenge_method=S256")
            && authorize.contains("state="),
        "{authorize}"
    );

    // The browser goes there, and the provider sends it back to Plaza.
    let at_idp = server.client.get(&authorize).send().await.unwrap();
    let back = url::Url::parse(at_idp.headers()[LOCATION].to_str().unwrap()).unwrap();
    let callback = format!("{}{}?{}", server.base, back.path(), back.query().unwrap());
    let done = open_callback(&server, &callback, &format!("{csrf_cookie}; {binding}")).await;
    assert_eq!(done.status(), 303);
    assert_eq!(done.headers()[LOCATION], "/t/1", "back to the page");
    let cookie = session_cookie(&done).expect("signed in");
    let session = server.get_json_as("/api/auth/session", &cookie).await;
    assert_eq!(session["user"]["email"], "next@idp.example");

    // Without the header, the same post redirects (302) to the provider.
    let redirected =
        sign_in_post(&server, "/api/auth/signin/fake", &csrf_cookie, &form, false).await;
    assert_eq!(redirected.status(), 302);
    assert!(
        redirected.headers()[LOCATION]
            .to_str()
            .unwrap()
            .starts_with(&idp.base)
    );
    assert!(cookie_pair(&redirected, "plaza_oauth").is_some());

    // A wrong or missing token, or no CSRF cookie, is 403 and starts nothing.
    let wrong = [("csrfToken", "not-the-token"), ("callbackUrl", PAGE)];
    let without = [("callbackUrl", PAGE)];
    for (cookies, fields) in [
        (csrf_cookie.as_str(), &wrong[..]),
        (csrf_cookie.as_str(), &without[..]),
        ("", &form[..]),
    ] {
        let refused = sign_in_post(&server, "/api/auth/signin/fake", cookies, fields, true).await;
        assert_eq!(refused.status(), 403, "{fields:?}");
        assert!(cookie_pair(&refused, "plaza_oauth").is_none());
        let body: Value = refused.json().await.unwrap();
        assert_eq!(body["error"]["code"], "FORBIDDEN", "{body}");
    }
    // An unknown provider is 404.
    let unknown = sign_in_post(
        &server,
        "/api/auth/signin/nobody",
        &csrf_cookie,
        &form,
        true,
    )
    .await;
    assert_eq!(unknown.status(), 404);
}

async fn sign_in_with_credentials_as_next_auth_does(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("ada@example.com", PASSWORD, "user");
    let (providers, csrf_cookie, csrf_token) = providers_and_csrf(&server).await;
    assert_eq!(providers["credentials"]["type"], "credentials");
    assert_eq!(
        providers["credentials"]["callbackUrl"],
        "http://localhost:3000/api/auth/callback/credentials"
    );
    let form = |password: &'static str| {
        vec![
            ("email", "ada@example.com"),
            ("password", password),
            ("csrfToken", csrf_token.as_str()),
            ("callbackUrl", PAGE),
        ]
    };
    let path = "/api/auth/callback/credentials";

    // signIn("credentials", {email, password, redirect: false}).
    let signed_in = sign_in_post(&server, path, &csrf_cookie, &form(PASSWORD), true).await;
    assert_eq!(signed_in.status(), 200);
    let cookie = session_cookie(&signed_in).expect("signed in");
    let body: Value = signed_in.json().await.unwrap();
    assert_eq!(body, json!({"url": PAGE}));
    let session = server.get_json_as("/api/auth/session", &cookie).await;
    assert_eq!(session["user"]["email"], "ada@example.com");

    // A wrong password: the sign-in page with the form's error, absolute
    // (the client reads `error` from it with `new URL`).
    let refused = sign_in_post(&server, path, &csrf_cookie, &form("wrong"), true).await;
    assert_eq!(refused.status(), 200);
    assert!(session_cookie(&refused).is_none());
    let body: Value = refused.json().await.unwrap();
    let url = url::Url::parse(body["url"].as_str().unwrap()).unwrap();
    assert_eq!(url.path(), "/api/auth/signin");
    assert!(
        url.query_pairs()
            .any(|(key, value)| key == "error" && value == "credentials"),
        "{url}"
    );

    // Without the header it is the form's redirect.
    let redirected = sign_in_post(&server, path, &csrf_cookie, &form(PASSWORD), false).await;
    assert_eq!(redirected.status(), 303);
    assert_eq!(redirected.headers()[LOCATION], "/t/1");
    assert!(session_cookie(&redirected).is_some());

    // A user with two-factor sign-in on goes to the page's code step.
    server
        .sql("UPDATE users SET totp_enabled_at = 1 WHERE email = 'ada@example.com'")
        .await;
    let second = sign_in_post(&server, path, &csrf_cookie, &form(PASSWORD), true).await;
    assert_eq!(second.status(), 200);
    assert!(session_cookie(&second).is_none());
    assert!(cookie_pair(&second, "plaza_2fa").is_some());
    let body: Value = second.json().await.unwrap();
    assert_eq!(
        body["url"],
        "http://localhost:3000/api/auth/signin?step=totp"
    );

    // A wrong token is 403; only the credentials provider has this callback.
    let mut wrong = form(PASSWORD);
    wrong[2] = ("csrfToken", "not-the-token");
    let forbidden = sign_in_post(&server, path, &csrf_cookie, &wrong, true).await;
    assert_eq!(forbidden.status(), 403);
    assert!(session_cookie(&forbidden).is_none());
    let other = sign_in_post(
        &server,
        "/api/auth/callback/github",
        &csrf_cookie,
        &form(PASSWORD),
        true,
    )
    .await;
    assert_eq!(other.status(), 404);
}

async fn get_session_and_update_as_next_auth_does(backend: Backend) {
    let server = TestServer::start(backend).await;
    // getSession() signed out: the JSON null, which the client reads as
    // "unauthenticated".
    let signed_out = server
        .client
        .get(server.url("/api/auth/session"))
        .header(CONTENT_TYPE, "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(signed_out.status(), 200);
    assert!(
        signed_out.headers()[CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    assert_eq!(signed_out.text().await.unwrap(), "null");

    // getSession() signed in.
    let (id, cookie) = member(&server, "ada@example.com", "user").await;
    let session = server.get_json_as("/api/auth/session", &cookie).await;
    assert_eq!(session["user"]["id"], id.to_string());
    assert!(session["expires"].is_string());

    // update(data): a JSON post of {csrfToken, data}, answered with the
    // session as GET answers it.
    let (csrf_cookie, csrf_token) = server.csrf().await;
    let update = |origin: Option<&'static str>, cookies: String| {
        let mut request = server
            .client
            .post(server.url("/api/auth/session"))
            .header("cookie", cookies)
            .json(&json!({"csrfToken": csrf_token, "data": {"name": "ignored"}}));
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send()
    };
    let updated = update(
        Some("http://localhost:3000"),
        format!("{cookie}; {csrf_cookie}"),
    )
    .await
    .unwrap();
    assert_eq!(updated.status(), 200);
    let body: Value = updated.json().await.unwrap();
    assert_eq!(body["user"]["id"], id.to_string());
    assert_eq!(body["user"]["email"], "ada@example.com");
    assert_eq!(
        body["user"]["name"], session["user"]["name"],
        "nothing changed"
    );
    // From another origin a signed-in post is refused.
    let foreign = update(Some("https://evil.example"), cookie.clone())
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);
    // Signed out, update() gets null too.
    let (status, body) = call(&server, "POST", "/api/auth/session", None, Some(json!({}))).await;
    assert_eq!((status, body), (200, Value::Null));
}

async fn the_emoji_picker_gets_at_most_100_a_page(backend: Backend) {
    let server = TestServer::start(backend).await;
    for per_page in ["1000", "101", "99999999999999999999999"] {
        let (status, body) = call(
            &server,
            "GET",
            &format!("/api/emojis?per_page={per_page}&page=1"),
            None,
            None,
        )
        .await;
        assert_eq!(status, 200, "{per_page}: {body}");
        assert_eq!(body["per_page"], 100, "{per_page}");
        assert_eq!(body["emojis"].as_array().unwrap().len(), 100, "{per_page}");
    }
    let (status, body) = call(&server, "GET", "/api/emojis?per_page=0", None, None).await;
    assert_eq!(status, 422, "{body}");
}

async fn profiles_by_id_as_idling_app_answers_them(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (ada, ada_cookie) = member(&server, "ada@example.com", "user").await;
    let (_, bob_cookie) = member(&server, "bob@example.com", "user").await;
    let hello = crate::common::post(
        &server,
        &ada_cookie,
        json!({"title": "Hello", "content": "First post", "tags": []}),
    )
    .await;
    let (status, reply) = call(
        &server,
        "POST",
        &format!("/api/posts/{hello}/replies"),
        Some(&ada_cookie),
        Some(json!({"content": "And a reply"})),
    )
    .await;
    assert_eq!(status, 201, "{reply}");
    let (status, body) = call(
        &server,
        "PUT",
        &format!("/api/users/{ada}"),
        Some(&ada_cookie),
        Some(json!({"bio": "Counts", "location": "London"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    let path = format!("/api/profile/id/{ada}");
    let (status, profile) = call(&server, "GET", &path, None, None).await;
    assert_eq!(status, 200, "{profile}");
    assert_eq!(profile["id"], ada.to_string());
    assert_eq!(profile["username"], body["username"]);
    assert_eq!(profile["name"], body["name"]);
    assert_eq!(profile["bio"], "Counts");
    assert_eq!(profile["location"], "London");
    assert!(profile["image"].as_str().unwrap().starts_with("http"));
    assert!(profile["created_at"].is_string());
    assert_eq!(profile["profile_public"], true);
    assert_eq!(profile["posts_count"], 1);
    assert_eq!(profile["replies_count"], 1);
    assert_eq!(profile["total_submissions"], 2);

    // Private: 403 to others, the profile to its owner.
    let (status, _) = call(
        &server,
        "PUT",
        &format!("/api/users/{ada}"),
        Some(&ada_cookie),
        Some(json!({"profile_public": false})),
    )
    .await;
    assert_eq!(status, 200);
    for cookie in [None, Some(bob_cookie.as_str())] {
        let (status, body) = call(&server, "GET", &path, cookie, None).await;
        assert_eq!(status, 403, "{body}");
        assert_eq!(body["error"], "This profile is private");
    }
    let (status, own) = call(&server, "GET", &path, Some(&ada_cookie), None).await;
    assert_eq!(status, 200, "{own}");
    assert_eq!(own["profile_public"], false);

    // Unknown: 404.
    let (status, body) = call(&server, "GET", "/api/profile/id/999999", None, None).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"], "User not found");
}

async fn preflights_allow_the_headers_of_next_auth_and_fetch_helpers(backend: Backend) {
    let server = TestServer::start_with(
        backend,
        &[("PLAZA_CORS_ALLOWED_ORIGINS", "[\"https://front.example\"]")],
    )
    .await;
    let wanted = [
        "x-auth-return-redirect",
        "cache-control",
        "pragma",
        "x-request-id",
    ];
    for (origin, path, method) in [
        ("https://front.example", "/api/auth/signin/github", "POST"),
        ("http://localhost:3000", "/api/emojis", "GET"),
    ] {
        let preflight = server
            .client
            .request(reqwest::Method::OPTIONS, server.url(path))
            .header("origin", origin)
            .header("access-control-request-method", method)
            .header(
                "access-control-request-headers",
                format!("content-type,{}", wanted.join(",")),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(preflight.status(), 200);
        let headers = preflight.headers();
        assert_eq!(headers["access-control-allow-origin"], origin);
        let allowed = headers["access-control-allow-headers"].to_str().unwrap();
        for name in wanted.iter().chain(&["content-type"]) {
            assert!(
                allowed.split(',').any(|allowed| allowed.trim() == *name),
                "{name} not in {allowed}"
            );
        }
    }
}

/// A front end standing in for a Next.js app on the base URL's origin:
/// `/t/1` is its page; it records every path and user agent it is asked
/// for, and answers anything else 404.
async fn front_end() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = asked.clone();
    let app = Router::new().fallback(move |request: Request| {
        let seen = seen.clone();
        async move {
            let agent = request
                .headers()
                .get("user-agent")
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            let path = request.uri().path().to_owned();
            seen.lock().unwrap().push(format!("{path} {agent}"));
            if path == "/t/1" {
                Html(
                    "<html><head><title>Thread 1</title>\
                     <meta property=\"og:title\" content=\"A thread of the front end\">\
                     <meta property=\"og:description\" content=\"Served beside Plaza\">\
                     <meta property=\"og:image\" content=\"/thread.png\"></head></html>",
                )
                .into_response()
            } else {
                (StatusCode::NOT_FOUND, "not here").into_response()
            }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (base, asked)
}

async fn front_end_pages_on_the_own_origin_are_previewed_over_http(backend: Backend) {
    let (front, asked) = front_end().await;
    // Plaza's base URL is the front end's origin (one origin, two
    // servers); private addresses and other ports stay refused.
    let server = TestServer::start_with(
        backend,
        &[
            ("PLAZA_BASE_URL", front.as_str()),
            ("PLAZA_APP_NAME", "Plaza"),
        ],
    )
    .await;
    let preview = |url: String| {
        server
            .client
            .get(server.url("/api/link-preview"))
            .query(&[("url", url)])
            .send()
    };
    for url in ["/t/1".to_owned(), format!("{front}/t/1")] {
        let response = preview(url.clone()).await.unwrap();
        assert_eq!(response.status(), 200, "{url}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["title"], "A thread of the front end", "{url}");
        assert_eq!(body["description"], "Served beside Plaza");
        assert_eq!(body["image"], format!("{front}/thread.png"));
        assert_eq!(body["url"], url);
    }
    // Plaza's own pages are still answered in process, its API refused.
    let response = preview("/og-image-viewer?quote=Hi&author=Me".to_owned())
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["title"], "Plaza");
    let response = preview("/api/version".to_owned()).await.unwrap();
    assert_eq!(response.status(), 400);
    // Another name for the front end's address is not the own origin.
    let port = url::Url::parse(&front).unwrap().port().unwrap();
    let response = preview(format!("http://localhost:{port}/t/1"))
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    assert_eq!(
        asked.lock().unwrap().as_slice(),
        ["/t/1 Plaza-LinkPreview/1.0", "/t/1 Plaza-LinkPreview/1.0"],
        "the front end is asked for its own page only"
    );
}
