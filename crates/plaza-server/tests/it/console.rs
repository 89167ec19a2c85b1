//! The operator console at `/admin/` through HTTP, as a browser without
//! scripts uses it: who gets in, the moderation queue and a decision taken
//! by form post with its audit entry and the author's alert, the users,
//! access and analytics pages' forms, and the refusals of forged posts.

use serde_json::{Value, json};

use plaza_domain::users::UserQuery;
use plaza_domain::{Database, DatabaseOptions};

use crate::common::{As, Backend, PASSWORD, TestServer, call, member, post};

/// A GET as the session behind `cookie` (or nobody), without following
/// redirects: (status, headers, body).
pub(crate) async fn open(
    server: &TestServer,
    path: &str,
    cookie: Option<&str>,
) -> (u16, reqwest::header::HeaderMap, String) {
    let mut request = server.client.get(server.url(path));
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.expect("body"))
}

/// The `plaza_csrf=…` pair a page set and the token its forms carry.
pub(crate) fn csrf_of(headers: &reqwest::header::HeaderMap, page: &str) -> (String, String) {
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

/// Posts a form to `path` with the cookies `cookies` (joined) and extra
/// headers: (status, Location, body).
pub(crate) async fn submit(
    server: &TestServer,
    path: &str,
    cookies: &[&str],
    fields: &[(&str, &str)],
    headers: &[(&str, &str)],
) -> (u16, String, String) {
    let mut request = server
        .client
        .post(server.url(path))
        .header("cookie", cookies.join("; "))
        .form(fields);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let location = response
        .headers()
        .get("location")
        .map(|value| value.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, location, response.text().await.unwrap())
}

/// A published post by a new author, reported by a new reader: (post id,
/// the author's cookie).
async fn reported_post(server: &TestServer) -> (String, String) {
    let (_, author) = member(server, "author@example.com", "user").await;
    let id = post(
        server,
        &author,
        json!({"title": "A <b>loud</b> post", "content": "Buy now", "published": true}),
    )
    .await;
    let (_, reader) = member(server, "reader@example.com", "user").await;
    let (status, body) = call(
        server,
        "POST",
        &format!("/api/posts/{id}/report"),
        Some(&reader),
        Some(json!({"reason": "spam & scam"})),
    )
    .await;
    assert!(status == 200 || status == 201, "{body}");
    (id, author)
}

on_both_databases!(
    the_console_lets_in_moderators_and_sends_others_away,
    a_moderator_hides_a_reported_post_and_the_author_is_told,
    reported_and_pending_replies_wait_beside_posts_with_the_same_actions,
    moderators_see_no_email_but_their_own_on_the_reports_page,
    the_reported_queue_counts_only_posts_with_open_reports,
    forged_and_unauthorised_decisions_are_refused,
    moderators_see_moderation_but_not_users,
    an_administrator_bans_and_unbans_from_the_users_pages,
    an_administrator_sends_schedules_and_withdraws_broadcasts,
    an_administrator_creates_changes_and_removes_flags,
    a_moderator_approves_and_rejects_custom_emojis,
    an_administrator_checks_the_system_and_takes_a_backup,
    a_super_admin_grants_and_revokes_a_roles_permissions,
    the_analytics_page_draws_the_dashboard,
    user_search_reads_trigram_indexes_and_finds_what_the_scan_found,
    an_administrator_changes_a_users_role,
    an_administrator_bans_and_unbans_ticked_users_together,
    a_super_admin_creates_disables_and_archives_permissions,
    the_analytics_filters_apply_to_the_charts_and_the_download,
);

async fn the_console_lets_in_moderators_and_sends_others_away(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (status, headers, _) = open(&server, "/admin/moderation?state=flagged", None).await;
    assert_eq!(status, 303);
    assert_eq!(
        headers["location"],
        "/api/auth/signin?callbackUrl=%2Fadmin%2Fmoderation%3Fstate%3Dflagged"
    );

    let (_, user) = member(&server, "user@example.com", "user").await;
    let (status, headers, page) = open(&server, "/admin/", Some(&user)).await;
    assert_eq!(status, 403, "{page}");
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html"),
        "{headers:?}"
    );
    assert!(page.contains("Back to the console"), "{page}");

    for role in ["moderator", "admin"] {
        let (_, cookie) = member(&server, &format!("{role}@example.com"), role).await;
        let (status, headers, page) = open(&server, "/admin/", Some(&cookie)).await;
        assert_eq!(status, 200, "{role}: {page}");
        assert_eq!(
            headers["content-security-policy"],
            "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
        );
        assert!(page.contains("reported posts waiting"), "{page}");
        assert!(!page.contains("<script"), "{page}");
        assert!(
            !page.contains("://"),
            "the page loads nothing from elsewhere: {page}"
        );
    }

    let (status, headers, sheet) = open(&server, "/admin/assets/console.css", None).await;
    assert_eq!(status, 200);
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/css")
    );
    assert!(sheet.contains("320 px"), "{sheet}");
    let (status, _, page) = open(&server, "/admin/moderation?state=nonsense", None).await;
    assert_eq!(status, 303, "{page}");
}

async fn a_moderator_hides_a_reported_post_and_the_author_is_told(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (id, author) = reported_post(&server).await;
    let (moderator_id, moderator) = member(&server, "moderator@example.com", "moderator").await;

    let (status, headers, page) = open(&server, "/admin/moderation", Some(&moderator)).await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("A &lt;b&gt;loud"),
        "titles are escaped: {page}"
    );
    assert!(!page.contains("<b>loud"), "{page}");
    assert!(
        page.contains("spam &amp; scam"),
        "reports are shown inline: {page}"
    );
    assert!(
        page.contains("value=\"delete\""),
        "a moderator is offered deletion, as on `DELETE /api/posts/{{id}}`: {page}"
    );
    let (csrf_cookie, token) = csrf_of(&headers, &page);

    let (status, location, body) = submit(
        &server,
        &format!("/admin/moderation/{id}"),
        &[&moderator, &csrf_cookie],
        &[
            ("csrfToken", &token),
            ("state", "reported"),
            ("action", "hide"),
            ("reason", "Advertising"),
            ("notifyAuthor", "true"),
        ],
        &[],
    )
    .await;
    assert_eq!(status, 303, "{body}");
    assert_eq!(location, "/admin/moderation?state=reported&done=hide");

    let (status, _, page) = open(&server, "/admin/moderation?state=hidden", Some(&moderator)).await;
    assert_eq!(status, 200);
    assert!(page.contains(&format!("id=\"post-{id}\"")), "{page}");
    let (_, _, page) = open(&server, "/admin/moderation", Some(&moderator)).await;
    assert!(
        !page.contains(&format!("id=\"post-{id}\"")),
        "resolved reports leave the queue: {page}"
    );

    let (status, _, page) = open(&server, "/admin/reports?days=7", Some(&moderator)).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("<dd id=\"received\">1</dd>"), "{page}");
    assert!(page.contains("<dd id=\"resolved\">1</dd>"), "{page}");
    assert!(page.contains("<dd id=\"open\">0 on 0 posts"), "{page}");
    assert!(page.contains("post.moderate.hide: 1"), "{page}");
    let (status, _, page) = open(&server, "/admin/reports?days=5", Some(&moderator)).await;
    assert_eq!(status, 422, "{status}: {page}");

    let (_, alerts) = call(&server, "GET", "/api/alerts", Some(&author), None).await;
    let told: Vec<&Value> = alerts["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|alert| alert["title"] == "Your post was hidden")
        .collect();
    assert_eq!(told.len(), 1, "{alerts}");
    assert!(told[0]["message"].as_str().unwrap().contains("Advertising"));

    let entries = server
        .sql_count(&format!(
            "SELECT COUNT(*) FROM audit_log WHERE action = 'post.moderate.hide' \
             AND target_id = '{id}' AND actor_id = {moderator_id} AND surface = 'console'"
        ))
        .await;
    assert_eq!(
        entries, 1,
        "the decision is audited once, naming the moderator"
    );
}

/// The Reported queue also lists the replies awaiting a decision (with
/// reports no one acted on, or pending), each with its reports and the
/// decisions of `POST /api/v1/admin/replies/{replyId}/moderate`, which the
/// form takes through the same unit of work (audited `reply.moderate`);
/// posts offer locking.
async fn reported_and_pending_replies_wait_beside_posts_with_the_same_actions(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (post_id, author) = reported_post(&server).await;
    let (_, reader) = member(&server, "second@example.com", "user").await;
    let (moderator_id, moderator) = member(&server, "moderator@example.com", "moderator").await;
    let (status, reply) = call(
        &server,
        "POST",
        &format!("/api/posts/{post_id}/replies"),
        Some(&author),
        Some(json!({"content": "A <i>rude</i> reply"})),
    )
    .await;
    assert_eq!(status, 201, "{reply}");
    let reply_id = reply["id"].as_str().unwrap().to_owned();
    let (status, _) = call(
        &server,
        "POST",
        &format!("/api/replies/{reply_id}/report"),
        Some(&reader),
        Some(json!({"reason": "insults", "category": "harassment"})),
    )
    .await;
    assert_eq!(status, 201);
    let (status, quiet) = call(
        &server,
        "POST",
        &format!("/api/posts/{post_id}/replies"),
        Some(&reader),
        Some(json!({"content": "A quiet reply"})),
    )
    .await;
    assert_eq!(status, 201, "{quiet}");

    let (status, headers, page) = open(&server, "/admin/moderation", Some(&moderator)).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains(&format!("id=\"reply-{reply_id}\"")), "{page}");
    assert!(page.contains("A &lt;i&gt;rude"), "escaped: {page}");
    assert!(
        page.contains("insults") && page.contains("harassment"),
        "{page}"
    );
    assert!(
        !page.contains("A quiet reply"),
        "no report, not pending: {page}"
    );
    assert!(
        page.contains("value=\"lock\""),
        "posts offer locking: {page}"
    );
    let (csrf_cookie, token) = csrf_of(&headers, &page);
    let form = |action: &'static str| {
        [
            ("csrfToken", token.clone()),
            ("state", "reported".to_owned()),
            ("action", action.to_owned()),
            ("reason", "Insulting".to_owned()),
        ]
    };
    let fields = form("lock");
    let pairs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, _, body) = submit(
        &server,
        &format!("/admin/moderation/replies/{reply_id}"),
        &[&moderator, &csrf_cookie],
        &pairs,
        &[],
    )
    .await;
    assert!(
        status == 400 || status == 422,
        "a reply is not locked: {status} {body}"
    );
    let fields = form("hide");
    let pairs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, location, body) = submit(
        &server,
        &format!("/admin/moderation/replies/{reply_id}"),
        &[&moderator, &csrf_cookie],
        &pairs,
        &[],
    )
    .await;
    assert_eq!(status, 303, "{body}");
    assert_eq!(location, "/admin/moderation?state=reported&done=hide");
    let (_, answer) = call(
        &server,
        "GET",
        &format!("/api/replies/{reply_id}"),
        Some(&reader),
        None,
    )
    .await;
    assert_eq!(answer["error"]["code"], "NOT_FOUND", "hidden: {answer}");
    let (_, _, page) = open(&server, "/admin/moderation", Some(&moderator)).await;
    assert!(
        !page.contains(&format!("id=\"reply-{reply_id}\"")),
        "resolved reports leave the queue: {page}"
    );
    let entries = server
        .sql_count(&format!(
            "SELECT COUNT(*) FROM audit_log WHERE action = 'reply.moderate' \
             AND target_id = '{reply_id}' AND actor_id = {moderator_id} AND surface = 'console'"
        ))
        .await;
    assert_eq!(
        entries, 1,
        "the decision is audited once, naming the moderator"
    );

    let fields = form("lock");
    let pairs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, _, body) = submit(
        &server,
        &format!("/admin/moderation/{post_id}"),
        &[&moderator, &csrf_cookie],
        &pairs,
        &[],
    )
    .await;
    assert_eq!(status, 303, "{body}");
    let (status, _) = call(
        &server,
        "POST",
        &format!("/api/posts/{post_id}/replies"),
        Some(&reader),
        Some(json!({"content": "too late"})),
    )
    .await;
    assert_eq!(status, 409, "locked from the console");
}

/// Takes `action` on the reported post `id` through the console's form, as
/// the session `cookie`.
async fn decide(server: &TestServer, cookie: &str, id: &str, action: &str) {
    let (status, headers, page) = open(server, "/admin/moderation", Some(cookie)).await;
    assert_eq!(status, 200, "{page}");
    let (csrf_cookie, token) = csrf_of(&headers, &page);
    let (status, _, body) = submit(
        server,
        &format!("/admin/moderation/{id}"),
        &[cookie, &csrf_cookie],
        &[
            ("csrfToken", &token),
            ("state", "reported"),
            ("action", action),
            ("reason", "Checked"),
        ],
        &[],
    )
    .await;
    assert_eq!(status, 303, "{body}");
}

async fn moderators_see_no_email_but_their_own_on_the_reports_page(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (first, author) = reported_post(&server).await;
    let second = post(
        &server,
        &author,
        json!({"title": "Another", "content": "More", "published": true}),
    )
    .await;
    let (_, reader) = member(&server, "second-reader@example.com", "user").await;
    let (status, body) = call(
        &server,
        "POST",
        &format!("/api/posts/{second}/report"),
        Some(&reader),
        Some(json!({"reason": "spam"})),
    )
    .await;
    assert!(status == 200 || status == 201, "{body}");
    let (_, admin) = member(&server, "chief@example.com", "admin").await;
    let (_, moderator) = member(&server, "moderator@example.com", "moderator").await;
    decide(&server, &admin, &first, "hide").await;
    decide(&server, &moderator, &second, "hide").await;
    // The page counts actions before the millisecond it is asked in.
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;

    let (status, _, page) = open(&server, "/admin/reports?days=7", Some(&moderator)).await;
    assert_eq!(status, 200, "{page}");
    assert!(
        !page.contains("chief@example.com"),
        "a moderator sees no administrator's email: {page}"
    );
    assert!(
        page.contains("moderator@example.com"),
        "a moderator sees their own: {page}"
    );
    let (status, _, page) = open(&server, "/admin/reports?days=7", Some(&admin)).await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("chief@example.com") && page.contains("moderator@example.com"),
        "an administrator sees emails: {page}"
    );
}

async fn the_reported_queue_counts_only_posts_with_open_reports(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (id, author) = reported_post(&server).await;
    for n in 0..3 {
        post(
            &server,
            &author,
            json!({"title": format!("Quiet {n}"), "content": "Nothing to see", "published": true}),
        )
        .await;
    }
    let (_, moderator) = member(&server, "moderator@example.com", "moderator").await;

    let (_, _, page) = open(&server, "/admin/", Some(&moderator)).await;
    assert!(
        page.contains("<strong>1</strong> reported posts waiting"),
        "one of four posts is reported: {page}"
    );
    let (_, headers, page) = open(&server, "/admin/moderation", Some(&moderator)).await;
    assert!(page.contains("<p class=\"muted\">1 posts</p>"), "{page}");
    let (_, _, all) = open(&server, "/admin/moderation?state=all", Some(&moderator)).await;
    assert!(all.contains("<p class=\"muted\">4 posts</p>"), "{all}");

    let (csrf_cookie, token) = csrf_of(&headers, &page);
    let (status, _, body) = submit(
        &server,
        &format!("/admin/moderation/{id}"),
        &[&moderator, &csrf_cookie],
        &[
            ("csrfToken", &token),
            ("state", "reported"),
            ("action", "approve"),
            ("reason", "Fine"),
        ],
        &[],
    )
    .await;
    assert_eq!(status, 303, "{body}");
    let (_, _, page) = open(&server, "/admin/", Some(&moderator)).await;
    assert!(
        page.contains("<strong>0</strong> reported posts waiting"),
        "a decided report no longer waits: {page}"
    );
    let (_, _, page) = open(&server, "/admin/moderation", Some(&moderator)).await;
    assert!(page.contains("<p class=\"muted\">0 posts</p>"), "{page}");
}

async fn forged_and_unauthorised_decisions_are_refused(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (id, _) = reported_post(&server).await;
    let (_, moderator) = member(&server, "moderator@example.com", "moderator").await;
    let (_, headers, page) = open(&server, "/admin/moderation", Some(&moderator)).await;
    let (csrf_cookie, token) = csrf_of(&headers, &page);
    let path = format!("/admin/moderation/{id}");
    let hide = [("csrfToken", token.as_str()), ("action", "hide")];

    let (status, _, body) = submit(&server, &path, &[&moderator], &hide, &[]).await;
    assert_eq!(status, 403, "a post without the CSRF cookie: {body}");
    let (status, _, body) = submit(
        &server,
        &path,
        &[&moderator, &csrf_cookie],
        &[("csrfToken", "forged"), ("action", "hide")],
        &[],
    )
    .await;
    assert_eq!(status, 403, "a post with another token: {body}");
    let (status, _, body) = submit(
        &server,
        &path,
        &[&moderator, &csrf_cookie],
        &hide,
        &[("origin", "https://evil.example")],
    )
    .await;
    assert_eq!(status, 403, "a cross-origin post: {body}");
    // A moderator whose role lost `posts:moderate` moderates nothing.
    server
        .sql("UPDATE permissions SET status = 'disabled' WHERE name = 'posts:moderate'")
        .await;
    let (status, _, body) = submit(
        &server,
        &path,
        &[&moderator, &csrf_cookie],
        &[("csrfToken", token.as_str()), ("action", "delete")],
        &[],
    )
    .await;
    assert_eq!(status, 403, "a deletion without the grant: {body}");
    assert!(body.contains("<html"), "errors are console pages: {body}");
    server
        .sql("UPDATE permissions SET status = 'active' WHERE name = 'posts:moderate'")
        .await;
    let (status, _, body) = submit(
        &server,
        &path,
        &[&moderator, &csrf_cookie],
        &[("csrfToken", token.as_str()), ("action", "burn")],
        &[],
    )
    .await;
    assert_eq!(status, 422, "{status}: {body}");
    assert!(body.contains("action"), "the page names the field: {body}");

    let (_, user) = member(&server, "user@example.com", "user").await;
    let (status, _, _) = submit(&server, &path, &[&user, &csrf_cookie], &hide, &[]).await;
    assert_eq!(status, 403, "a plain user's decision");
    let (status, location, _) = submit(&server, &path, &[&csrf_cookie], &hide, &[]).await;
    assert_eq!(status, 303, "nobody signed in goes to sign in");
    assert!(location.starts_with("/api/auth/signin?callbackUrl="));

    let untouched = server
        .sql_count(&format!(
            "SELECT COUNT(*) FROM posts WHERE id = {id} AND moderation = 'none'"
        ))
        .await;
    assert_eq!(untouched, 1, "no refused post changed anything");
    let entries = server
        .sql_count("SELECT COUNT(*) FROM audit_log WHERE action LIKE 'post.moderate.%'")
        .await;
    assert_eq!(entries, 0);

    let admin_totp =
        TestServer::start_with(backend, &[("PLAZA_ADMIN_TOTP_REQUIRED", "true")]).await;
    let (_, admin) = member(&admin_totp, "admin@example.com", "admin").await;
    let (status, _, page) = open(&admin_totp, "/admin/", Some(&admin)).await;
    assert_eq!(
        status, 403,
        "an administrator without two-factor sign-in: {page}"
    );
}

async fn moderators_see_moderation_but_not_users(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, moderator) = member(&server, "moderator@example.com", "moderator").await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;

    let (_, _, page) = open(&server, "/admin/", Some(&moderator)).await;
    assert!(!page.contains("href=\"/admin/users\""), "{page}");
    for path in ["/admin/users", "/admin/users/1", "/admin/audit"] {
        let (status, _, page) = open(&server, path, Some(&moderator)).await;
        assert_eq!(status, 403, "{path}: {page}");
    }
    let (_, _, page) = open(&server, "/admin/", Some(&admin)).await;
    assert!(page.contains("href=\"/admin/users\""), "{page}");
    let (status, _, page) = open(&server, "/admin/users?role=moderator", Some(&admin)).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("moderator@example.com"), "{page}");
    assert!(
        !page.contains("admin@example.com"),
        "the role filter holds: {page}"
    );
    let (status, _, page) = open(&server, "/admin/users?role=king", Some(&admin)).await;
    assert_eq!(status, 422, "{status}: {page}");
    assert!(page.contains("role"), "{page}");
}

async fn an_administrator_bans_and_unbans_from_the_users_pages(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (admin_id, admin) = member(&server, "admin@example.com", "admin").await;
    let (target, target_cookie) = member(&server, "target@example.com", "user").await;

    let (status, _, page) = open(&server, "/admin/users?search=target", Some(&admin)).await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains(&format!("href=\"/admin/users/{target}\"")),
        "{page}"
    );
    let (status, headers, page) =
        open(&server, &format!("/admin/users/{target}"), Some(&admin)).await;
    assert_eq!(status, 200, "{page}");
    let (csrf_cookie, token) = csrf_of(&headers, &page);
    let cookies = [admin.as_str(), csrf_cookie.as_str()];

    let ban_path = format!("/admin/users/{target}/ban");
    let (status, _, page) = submit(
        &server,
        &ban_path,
        &cookies,
        &[("csrfToken", &token), ("duration", "1d")],
        &[],
    )
    .await;
    assert_eq!(status, 422, "a ban needs a reason: {status} {page}");
    assert!(page.contains("reason"), "{page}");

    let (status, location, _) = submit(
        &server,
        &ban_path,
        &cookies,
        &[
            ("csrfToken", &token),
            ("reason", "Spam"),
            ("duration", "1d"),
        ],
        &[],
    )
    .await;
    assert_eq!(status, 303);
    assert_eq!(location, format!("/admin/users/{target}?done=banned"));
    let session = server
        .get_json_as("/api/auth/session", &target_cookie)
        .await;
    assert_eq!(session, Value::Null, "the ban ended the user's session");
    let (_, _, page) = open(&server, &location, Some(&admin)).await;
    assert!(page.contains("<dd id=\"status\">banned</dd>"), "{page}");
    assert!(page.contains("Spam"), "the ban history lists it: {page}");

    let (status, location, _) = submit(
        &server,
        &format!("/admin/users/{target}/unban"),
        &cookies,
        &[("csrfToken", &token), ("reason", "Appeal granted")],
        &[],
    )
    .await;
    assert_eq!(status, 303);
    let (_, _, page) = open(&server, &location, Some(&admin)).await;
    assert!(page.contains("<dd id=\"status\">active</dd>"), "{page}");

    for action in ["user.ban", "user.unban"] {
        let entries = server
            .sql_count(&format!(
                "SELECT COUNT(*) FROM audit_log WHERE action = '{action}' AND target_id = '{target}' \
                 AND actor_id = {admin_id} AND surface = 'console'"
            ))
            .await;
        assert_eq!(
            entries, 1,
            "{action} is audited once, naming the administrator"
        );
    }
    let (status, _, page) = open(&server, "/admin/audit?action=user.ban", Some(&admin)).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("user.ban · user"), "{page}");
    assert!(page.contains("by admin@example.com"), "{page}");
    assert!(page.contains("through console"), "{page}");
    assert!(
        page.contains("Spam"),
        "the entry shows what changed: {page}"
    );
    assert!(
        !page.contains("user.unban"),
        "the action filter holds: {page}"
    );
    let (status, _, page) = open(&server, "/admin/audit?from=2026-13-45", Some(&admin)).await;
    assert_eq!(status, 422, "{status}: {page}");
}

async fn an_administrator_sends_schedules_and_withdraws_broadcasts(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (admin_id, admin) = member(&server, "admin@example.com", "admin").await;
    let (_, reader) = member(&server, "reader@example.com", "user").await;
    let (_, moderator) = member(&server, "moderator@example.com", "moderator").await;
    let (status, _, _) = open(&server, "/admin/broadcasts", Some(&moderator)).await;
    assert_eq!(status, 403, "broadcasts are for administrators");

    let (status, headers, page) = open(&server, "/admin/broadcasts", Some(&admin)).await;
    assert_eq!(status, 200, "{page}");
    let (csrf_cookie, token) = csrf_of(&headers, &page);
    let cookies = [admin.as_str(), csrf_cookie.as_str()];
    let (status, _, page) = submit(
        &server,
        "/admin/broadcasts",
        &cookies,
        &[("csrfToken", &token), ("title", " "), ("message", "x")],
        &[],
    )
    .await;
    assert_eq!(status, 422, "{status}: {page}");
    assert!(page.contains("title"), "{page}");

    let (status, location, _) = submit(
        &server,
        "/admin/broadcasts",
        &cookies,
        &[
            ("csrfToken", &token),
            ("title", "Maintenance tonight"),
            ("message", "We restart at ten."),
            ("type", "warning"),
            ("targets", "all"),
            ("schedule", ""),
        ],
        &[],
    )
    .await;
    assert_eq!(status, 303);
    assert_eq!(location, "/admin/broadcasts?done=sent");
    let (_, alerts) = call(&server, "GET", "/api/alerts", Some(&reader), None).await;
    assert!(
        alerts["alerts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|alert| alert["title"] == "Maintenance tonight"),
        "{alerts}"
    );

    // A day ahead, as a `datetime-local` field sends it (UTC, no zone).
    let tomorrow = plaza_domain::time::rfc3339(plaza_domain::time::now_millis() + 86_400_000);
    let (status, location, _) = submit(
        &server,
        "/admin/broadcasts",
        &cookies,
        &[
            ("csrfToken", &token),
            ("title", "Later"),
            ("message", "Soon."),
            ("targets", "moderator"),
            ("schedule", &tomorrow[..16]),
        ],
        &[],
    )
    .await;
    assert_eq!(status, 303);
    assert_eq!(location, "/admin/broadcasts?done=scheduled");
    let (_, _, page) = open(&server, "/admin/broadcasts", Some(&admin)).await;
    let scheduled = page
        .split("<article class=\"post\" id=\"broadcast-")
        .find(|part| part.contains("Later"))
        .expect("the scheduled broadcast is listed");
    let id: String = scheduled.chars().take_while(char::is_ascii_digit).collect();
    assert!(
        scheduled.contains("<span class=\"status\">scheduled</span>"),
        "{page}"
    );

    let (status, location, _) = submit(
        &server,
        &format!("/admin/broadcasts/{id}/cancel"),
        &cookies,
        &[("csrfToken", &token)],
        &[],
    )
    .await;
    assert_eq!(status, 303);
    let (_, _, page) = open(&server, &location, Some(&admin)).await;
    assert!(page.contains("The broadcast is withdrawn."), "{page}");
    assert!(
        page.contains("<span class=\"status\">cancelled</span>"),
        "{page}"
    );
    let (status, _, page) = submit(
        &server,
        &format!("/admin/broadcasts/{id}/cancel"),
        &cookies,
        &[("csrfToken", &token)],
        &[],
    )
    .await;
    assert_eq!(
        status, 409,
        "a withdrawn broadcast is not withdrawn twice: {page}"
    );

    for (action, count) in [("broadcast.create", 2), ("broadcast.cancel", 1)] {
        let entries = server
            .sql_count(&format!(
                "SELECT COUNT(*) FROM audit_log WHERE action = '{action}' \
                 AND actor_id = {admin_id} AND surface = 'console'"
            ))
            .await;
        assert_eq!(entries, count, "{action}");
    }
}

async fn an_administrator_creates_changes_and_removes_flags(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (admin_id, admin) = member(&server, "admin@example.com", "admin").await;
    let (status, headers, page) = open(&server, "/admin/flags", Some(&admin)).await;
    assert_eq!(status, 200, "{page}");
    let (csrf_cookie, token) = csrf_of(&headers, &page);
    let cookies = [admin.as_str(), csrf_cookie.as_str()];

    let (status, _, page) = submit(
        &server,
        "/admin/flags",
        &cookies,
        &[
            ("csrfToken", &token),
            ("name", "Not A Name"),
            ("enabled", "true"),
        ],
        &[],
    )
    .await;
    assert_eq!(status, 422, "{status}: {page}");
    assert!(page.contains("flagName"), "{page}");

    let (status, location, _) = submit(
        &server,
        "/admin/flags",
        &cookies,
        &[
            ("csrfToken", &token),
            ("name", "new-editor"),
            ("enabled", "true"),
            ("description", "The new editor"),
            ("rolloutPercentage", "100"),
        ],
        &[],
    )
    .await;
    assert_eq!(status, 303);
    assert_eq!(location, "/admin/flags?done=saved");
    let (_, flags) = call(&server, "GET", "/api/feature-flags", None, None).await;
    assert!(
        flags.to_string().contains("new-editor"),
        "the flag takes effect: {flags}"
    );

    let (status, _, _) = submit(
        &server,
        "/admin/flags",
        &cookies,
        &[
            ("csrfToken", &token),
            ("name", "new-editor"),
            ("rolloutPercentage", "50"),
            ("targetRoles", "moderator"),
            ("targetRoles", "admin"),
        ],
        &[],
    )
    .await;
    assert_eq!(status, 303);
    let (_, _, page) = open(&server, "/admin/flags", Some(&admin)).await;
    assert!(
        page.contains("new-editor <span class=\"status\">off</span>"),
        "{page}"
    );
    assert!(page.contains("50% · moderator, admin"), "{page}");

    let (status, location, _) = submit(
        &server,
        "/admin/flags/new-editor/delete",
        &cookies,
        &[("csrfToken", &token)],
        &[],
    )
    .await;
    assert_eq!(status, 303);
    let (_, _, page) = open(&server, &location, Some(&admin)).await;
    assert!(!page.contains("id=\"flag-new-editor\""), "{page}");

    for action in [
        "feature_flag.create",
        "feature_flag.update",
        "feature_flag.delete",
    ] {
        let entries = server
            .sql_count(&format!(
                "SELECT COUNT(*) FROM audit_log WHERE action = '{action}' \
                 AND target_id = 'new-editor' AND actor_id = {admin_id} AND surface = 'console'"
            ))
            .await;
        assert_eq!(entries, 1, "{action}");
    }
}

async fn a_moderator_approves_and_rejects_custom_emojis(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, owner) = member(&server, "owner@example.com", "user").await;
    let (moderator_id, moderator) = member(&server, "moderator@example.com", "moderator").await;
    let party = crate::emojis::pending_emoji(&server, &owner, "party_parrot").await;
    let spam = crate::emojis::pending_emoji(&server, &owner, "spam_can").await;
    let own = crate::emojis::pending_emoji(&server, &moderator, "my_own").await;

    let (status, headers, page) = open(&server, "/admin/emojis", Some(&moderator)).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains(":party_parrot:"), "{page}");
    assert!(
        page.contains("<img src=\"&#x2f;api&#x2f;uploads&#x2f;"),
        "the image is served from here: {page}"
    );
    let (csrf_cookie, token) = csrf_of(&headers, &page);
    let cookies = [moderator.as_str(), csrf_cookie.as_str()];
    let review = |id: i64, decision: &'static str| {
        let path = format!("/admin/emojis/{id}");
        let token = token.clone();
        let server = &server;
        async move {
            submit(
                server,
                &path,
                &cookies,
                &[("csrfToken", &token), ("decision", decision)],
                &[],
            )
            .await
        }
    };
    let (status, location, _) = review(party, "approve").await;
    assert_eq!(
        (status, location.as_str()),
        (303, "/admin/emojis?done=approved")
    );
    let (status, location, _) = review(spam, "reject").await;
    assert_eq!(
        (status, location.as_str()),
        (303, "/admin/emojis?done=rejected")
    );
    let (status, _, page) = review(own, "approve").await;
    assert_eq!(status, 403, "nobody approves their own: {page}");

    let (_, _, page) = open(&server, "/admin/emojis", Some(&moderator)).await;
    assert!(
        !page.contains(":party_parrot:") && !page.contains(":spam_can:"),
        "{page}"
    );
    assert!(page.contains(":my_own:"), "{page}");
    let (_, listed) = call(
        &server,
        "GET",
        "/api/emojis?include_custom=true&category=custom",
        None,
        None,
    )
    .await;
    assert!(
        listed.to_string().contains("party_parrot"),
        "approved for everyone: {listed}"
    );
    for action in ["emoji.approve", "emoji.reject"] {
        let entries = server
            .sql_count(&format!(
                "SELECT COUNT(*) FROM audit_log WHERE action = '{action}' \
                 AND actor_id = {moderator_id} AND surface = 'console'"
            ))
            .await;
        assert_eq!(entries, 1, "{action}");
    }
}

async fn an_administrator_checks_the_system_and_takes_a_backup(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (admin_id, admin) = member(&server, "admin@example.com", "admin").await;
    let (_, moderator) = member(&server, "moderator@example.com", "moderator").await;
    let (status, _, _) = open(&server, "/admin/system", Some(&moderator)).await;
    assert_eq!(status, 403);

    let (status, headers, page) = open(&server, "/admin/system", Some(&admin)).await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("<dd id=\"health-database\">answers</dd>"),
        "{page}"
    );
    assert!(page.contains("None yet."), "{page}");
    let (csrf_cookie, token) = csrf_of(&headers, &page);
    let cookies = [admin.as_str(), csrf_cookie.as_str()];
    let (status, _, page) = submit(
        &server,
        "/admin/system/maintenance",
        &cookies,
        &[("csrfToken", &token), ("action", "explode")],
        &[],
    )
    .await;
    assert_eq!(status, 422, "{status}: {page}");

    let (status, _, page) = submit(
        &server,
        "/admin/system/maintenance",
        &cookies,
        &[
            ("csrfToken", &token),
            ("action", "cache_clear"),
            ("notify", "true"),
        ],
        &[],
    )
    .await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("<pre id=\"report\">"), "{page}");
    assert!(page.contains("cache_clear"), "{page}");
    let entries = server
        .sql_count(&format!(
            "SELECT COUNT(*) FROM audit_log WHERE action LIKE 'system.maintenance.%' \
             AND actor_id = {admin_id} AND surface = 'console'"
        ))
        .await;
    assert_eq!(
        entries, 1,
        "the action is audited, naming the administrator"
    );

    let (status, _, page) = submit(
        &server,
        "/admin/system/maintenance",
        &cookies,
        &[("csrfToken", &token), ("action", "backup_database")],
        &[],
    )
    .await;
    assert_eq!(status, 200, "{page}");
    let listed = page
        .split("<ul id=\"backups\">")
        .nth(1)
        .expect("the backups list");
    assert!(
        listed.contains("<li>plaza-"),
        "the new backup is listed: {page}"
    );
}

async fn a_super_admin_grants_and_revokes_a_roles_permissions(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (root_id, root) = member(&server, "root@example.com", "super_admin").await;
    let (status, _, _) = open(&server, "/admin/access", Some(&admin)).await;
    assert_eq!(
        status, 403,
        "permissions:manage is the super admin's alone by default"
    );

    let (status, headers, page) = open(&server, "/admin/access", Some(&root)).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("id=\"role-moderator\""), "{page}");
    let (csrf_cookie, token) = csrf_of(&headers, &page);
    let cookies = [root.as_str(), csrf_cookie.as_str()];
    // A moderator is offered only the grant that makes one.
    let moderator_form = page
        .split("id=\"role-moderator\"")
        .nth(1)
        .and_then(|rest| rest.split("</form>").next())
        .unwrap();
    assert!(
        moderator_form.contains("value=\"posts:moderate\""),
        "{moderator_form}"
    );
    assert!(
        !moderator_form.contains("value=\"analytics:read\""),
        "{moderator_form}"
    );
    let (status, _, page) = submit(
        &server,
        "/admin/access/roles/moderator",
        &cookies,
        &[
            ("csrfToken", &token),
            ("permissions", "posts:moderate"),
            ("permissions", "analytics:read"),
        ],
        &[],
    )
    .await;
    assert_eq!(status, 422, "{status}: {page}");
    assert!(page.contains("analytics:read"), "the page names it: {page}");

    let granted = |names: &'static [&'static str]| {
        let statement = format!(
            "SELECT COUNT(*) FROM role_permissions rp JOIN roles r ON r.id = rp.role_id \
             JOIN permissions p ON p.id = rp.permission_id \
             WHERE r.name = 'admin' AND p.name IN ({})",
            names
                .iter()
                .map(|name| format!("'{name}'"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let server = &server;
        async move { server.sql_count(&statement).await }
    };
    assert_eq!(granted(&["posts:moderate", "analytics:read"]).await, 2);

    let (status, location, _) = submit(
        &server,
        "/admin/access/roles/admin",
        &cookies,
        &[
            ("csrfToken", &token),
            ("permissions", "users:manage"),
            ("permissions", "posts:moderate"),
            ("reason", "Administrators stop reading the dashboard"),
        ],
        &[],
    )
    .await;
    assert_eq!(status, 303);
    assert_eq!(location, "/admin/access?saved=admin");
    assert_eq!(granted(&["posts:moderate", "analytics:read"]).await, 1);

    let (status, _, page) = submit(
        &server,
        "/admin/access/roles/admin",
        &cookies,
        &[("csrfToken", &token), ("permissions", "no:such")],
        &[],
    )
    .await;
    assert_eq!(status, 422, "{status}: {page}");
    assert!(page.contains("no:such"), "the page names it: {page}");
    assert_eq!(
        granted(&["posts:moderate", "analytics:read"]).await,
        1,
        "nothing half-written"
    );

    let (status, _, _) = submit(
        &server,
        "/admin/access/roles/admin",
        &cookies,
        &[
            ("csrfToken", &token),
            ("permissions", "users:manage"),
            ("permissions", "posts:moderate"),
            ("permissions", "analytics:read"),
        ],
        &[],
    )
    .await;
    assert_eq!(status, 303);
    assert_eq!(
        granted(&["posts:moderate", "analytics:read"]).await,
        2,
        "granted again"
    );
    let entries = server
        .sql_count(&format!(
            "SELECT COUNT(*) FROM audit_log WHERE action = 'role.permissions.update' \
             AND actor_id = {root_id} AND surface = 'console'"
        ))
        .await;
    assert_eq!(
        entries, 2,
        "each change is audited once, naming the super admin"
    );
}

async fn the_analytics_page_draws_the_dashboard(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (_, moderator) = member(&server, "moderator@example.com", "moderator").await;
    let (_, reader) = member(&server, "reader@example.com", "user").await;
    let now = plaza_domain::time::rfc3339(plaza_domain::time::now_millis());
    let events: Vec<Value> = ["/welcome", "/welcome", "/rules"]
        .iter()
        .map(|path| {
            json!({
                "event_type": "page_view",
                "event_data": {"path": path, "session_id": "s-1"},
                "timestamp": now,
            })
        })
        .collect();
    let (status, body) = call(
        &server,
        "POST",
        "/api/analytics/collect/batch",
        Some(&reader),
        Some(json!({ "events": events })),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    let (status, _, _) = open(&server, "/admin/analytics", Some(&moderator)).await;
    assert_eq!(status, 403);
    let (status, _, page) = open(&server, "/admin/analytics?range=2w", Some(&admin)).await;
    assert_eq!(status, 422, "{status}: {page}");

    // Events are written by the group commit, a moment after their answer.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let page = loop {
        let (status, headers, page) =
            open(&server, "/admin/analytics?range=7d", Some(&admin)).await;
        assert_eq!(status, 200, "{page}");
        assert!(
            headers["content-security-policy"]
                .to_str()
                .unwrap()
                .starts_with("default-src 'self'")
        );
        if page.contains("<dt>Page views</dt><dd>3</dd>") {
            break page;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the events never showed: {page}"
        );
    };
    for chart in [
        "chart-page-views",
        "chart-sessions",
        "chart-top-pages",
        "chart-devices",
    ] {
        assert!(page.contains(&format!("id=\"{chart}\"")), "{chart}: {page}");
    }
    let top_pages = page
        .split("id=\"chart-top-pages\"")
        .nth(1)
        .and_then(|rest| rest.split("</figure>").next())
        .unwrap();
    assert!(top_pages.contains("<rect class=\"bar\""), "{top_pages}");
    assert!(top_pages.contains("&#x2f;welcome: 2"), "{top_pages}");
    assert!(!page.contains("<script"), "{page}");

    let response = server
        .client
        .get(server.url("/api/admin/analytics?dateRange=7d&format=csv"))
        .header("cookie", &admin)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/csv")
    );
}

/// The user lists' search condition as it was before trigram indexes,
/// with `search` written in: what a search must still find.
fn scanned_condition(search: &str) -> String {
    let mut escaped = String::new();
    for c in search.to_ascii_lowercase().chars() {
        if matches!(c, '%' | '_' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    let pattern = format!("%{escaped}%").replace('\'', "''");
    format!(
        "(LOWER(u.username) LIKE '{pattern}' ESCAPE '\\' OR u.email LIKE '{pattern}' ESCAPE '\\')"
    )
}

/// What scanning every user answers for `search` from `offset`: how many
/// match, and the sum of each id of the page of 25 times its place.
async fn scanned(server: &TestServer, search: &str, offset: i64) -> (i64, i64) {
    let condition = scanned_condition(search);
    let total = server
        .sql_count(&format!("SELECT COUNT(*) FROM users u WHERE {condition}"))
        .await;
    let checksum = server
        .sql_count(&format!(
            "SELECT CAST(COALESCE(SUM(id * place), 0) AS BIGINT) FROM (SELECT u.id, \
             ROW_NUMBER() OVER (ORDER BY u.created_at DESC, u.id DESC) AS place \
             FROM users u WHERE {condition}) ranked \
             WHERE place > {offset} AND place <= {}",
            offset + 25
        ))
        .await;
    (total, checksum)
}

/// What the admin API's user list answers for `search` from `offset`:
/// (total, checksum as [`scanned`] sums it, the ids in order).
async fn searched(
    server: &TestServer,
    token: &str,
    search: &str,
    offset: i64,
) -> (i64, i64, Vec<i64>) {
    let encoded: String = url::form_urlencoded::byte_serialize(search.as_bytes()).collect();
    let response = server
        .send(
            As::Token(token),
            "GET",
            &format!("/api/v1/admin/users?limit=25&offset={offset}&search={encoded}"),
            None,
        )
        .await;
    assert_eq!(response.status(), 200, "search {search:?}");
    let body: Value = response.json().await.unwrap();
    let ids: Vec<i64> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|user| user["id"].as_str().unwrap().parse().unwrap())
        .collect();
    let checksum = ids
        .iter()
        .zip(offset + 1..)
        .map(|(id, place)| id * place)
        .sum();
    let total = body["meta"]["pagination"]["total"].as_i64().unwrap();
    (total, checksum, ids)
}

/// Plan lines that read every user (a sequential scan on PostgreSQL, a
/// table or index scan on SQLite).
fn user_scans(backend: Backend, plan: &[String]) -> Vec<String> {
    plan.iter()
        .filter(|line| match backend {
            Backend::Sqlite => ["SCAN u", "SCAN users"]
                .iter()
                .any(|scan| *line == scan || line.starts_with(&format!("{scan} "))),
            Backend::Postgres => line.contains("Seq Scan on users"),
        })
        .cloned()
        .collect()
}

async fn user_search_reads_trigram_indexes_and_finds_what_the_scan_found(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("admin@example.com", PASSWORD, "admin");
    let token = server.mint("admin@example.com", "admin:read");
    let mut named = std::collections::BTreeMap::new();
    for (index, (username, email)) in [
        ("ann_lee", "ann.lee@example.com"),
        ("annxlee", "annx@example.com"),
        ("bob", "bob50%off@example.com"),
        ("dora", "DORA@Example.COM"),
        ("emil2", "ÉMIL@x.example"),
        ("émile", "emile@x.example"),
        ("o\"neil", "oneil@example.com"),
        ("kelvin", "\u{212A}elvin@x.example"),
        ("zed_old", "zed@example.com"),
    ]
    .into_iter()
    .enumerate()
    {
        let id = server.create_user(&format!("made{index}@example.com"), PASSWORD, "user");
        server
            .sql(&format!(
                "UPDATE users SET username = '{username}', email = '{email}' WHERE id = {id}"
            ))
            .await;
        named.insert(username, id);
    }
    server
        .sql(&format!(
            "UPDATE users SET username = 'zed_new' WHERE id = {}",
            named["zed_old"]
        ))
        .await;
    let searches = [
        "ann",
        "an",
        "a",
        "n_l",
        "50%",
        "%",
        "_",
        "dora@example",
        "DORA@",
        "émil",
        "ÉMIL",
        "o\"ne",
        "\"",
        "kelvin@",
        "elvin@",
        "example.com",
        "lee@",
        "zed_old",
        "zed_new",
        "xyz",
        "ann lee",
    ];
    for search in searches {
        let (total, checksum, _) = searched(&server, &token, search, 0).await;
        assert_eq!(
            (total, checksum),
            scanned(&server, search, 0).await,
            "search {search:?}"
        );
    }
    for (search, expected) in [
        ("n_l", vec![named["ann_lee"]]),
        ("émil", vec![named["émile"]]),
        ("o\"ne", vec![named["o\"neil"]]),
        ("kelvin@", vec![]),
        ("zed_old", vec![]),
        ("zed_new", vec![named["zed_old"]]),
    ] {
        let (_, _, ids) = searched(&server, &token, search, 0).await;
        assert_eq!(ids, expected, "search {search:?}");
    }

    // Past the number of matches a search narrows to, a search reads the
    // users in the list's order; both ways answer what the scan did.
    let seeded = server.cli(&["dev", "seed", "--users", "2100", "--posts", "0"]);
    assert!(
        seeded.status.success(),
        "{}",
        String::from_utf8_lossy(&seeded.stderr)
    );
    for search in ["seed", "seed1", "seed20", "plaza.invalid", "d99@"] {
        for offset in [0, 25] {
            let (total, checksum, _) = searched(&server, &token, search, offset).await;
            assert_eq!(
                (total, checksum),
                scanned(&server, search, offset).await,
                "search {search:?} from {offset}"
            );
        }
    }

    // PostgreSQL is told not to scan sequentially where an index can serve,
    // so a plan with a sequential scan means no index fits the query.
    let url = match backend {
        Backend::Sqlite => server.database_url.clone(),
        Backend::Postgres => format!("{}?options=-c%20enable_seqscan%3Doff", server.database_url),
    };
    let db = Database::connect(&url, &DatabaseOptions::default())
        .await
        .unwrap();
    for search in ["seed20", "seed1", "annx", "example.com"] {
        let query = UserQuery {
            search: Some(search.to_owned()),
            ..Default::default()
        };
        let mut plan = db.explain_admin_user_page(&query).await.unwrap();
        plan.extend(db.explain_list_users(&query, true).await.unwrap());
        assert!(
            user_scans(backend, &plan).is_empty(),
            "search {search:?}:\n{}",
            plan.join("\n")
        );
    }
}

/// The refusals every console write shares, for a form post to `path` of
/// `fields` (holding `csrfToken` as its first field): nobody signed in is
/// sent to sign in, a plain user and a moderator get 403, and so does a
/// post without the CSRF cookie, with another token, or from another
/// origin. `cookies` are the administrator's and the CSRF cookie.
async fn writes_are_refused_to_others(
    server: &TestServer,
    path: &str,
    cookies: &[&str],
    fields: &[(&str, &str)],
) {
    let (status, location, _) = submit(server, path, &cookies[1..], fields, &[]).await;
    assert_eq!(status, 303, "{path}: nobody signed in goes to sign in");
    assert!(
        location.starts_with("/api/auth/signin?callbackUrl="),
        "{location}"
    );
    static OTHERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let round = OTHERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    for role in ["user", "moderator"] {
        let email = format!("other-{role}-{round}@example.com");
        let (_, other) = member(server, &email, role).await;
        let (status, _, page) = submit(server, path, &[&other, cookies[1]], fields, &[]).await;
        assert_eq!(status, 403, "{path}: a {role}: {page}");
        assert!(page.contains("<html"), "errors are console pages: {page}");
    }
    let (status, _, page) = submit(server, path, &cookies[..1], fields, &[]).await;
    assert_eq!(status, 403, "{path}: without the CSRF cookie: {page}");
    let mut forged = fields.to_vec();
    forged[0] = ("csrfToken", "forged");
    let (status, _, page) = submit(server, path, cookies, &forged, &[]).await;
    assert_eq!(status, 403, "{path}: another token: {page}");
    let (status, _, page) = submit(
        server,
        path,
        cookies,
        fields,
        &[("origin", "https://evil.example")],
    )
    .await;
    assert_eq!(status, 403, "{path}: from another origin: {page}");
}

/// The console page at `path` for `cookie`, with its CSRF cookie and token:
/// (the cookies to post with, the token).
pub(crate) async fn form_page(
    server: &TestServer,
    path: &str,
    cookie: &str,
) -> ([String; 2], String) {
    let (status, headers, page) = open(server, path, Some(cookie)).await;
    assert_eq!(status, 200, "{path}: {page}");
    let (csrf_cookie, token) = csrf_of(&headers, &page);
    ([cookie.to_owned(), csrf_cookie], token)
}

async fn an_administrator_changes_a_users_role(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (admin_id, admin) = member(&server, "admin@example.com", "admin").await;
    let (target, _) = member(&server, "target@example.com", "user").await;
    let (peer, _) = member(&server, "peer@example.com", "admin").await;
    let (cookies, token) = form_page(&server, &format!("/admin/users/{target}"), &admin).await;
    let cookies = [cookies[0].as_str(), cookies[1].as_str()];
    let path = format!("/admin/users/{target}/role");

    writes_are_refused_to_others(
        &server,
        &path,
        &cookies,
        &[("csrfToken", &token), ("role", "moderator")],
    )
    .await;
    for (role, why) in [
        ("king", "not a role"),
        ("super_admin", "not granted here"),
        ("", "missing"),
    ] {
        let (status, _, page) = submit(
            &server,
            &path,
            &cookies,
            &[("csrfToken", &token), ("role", role)],
            &[],
        )
        .await;
        assert_eq!(status, 422, "{why}: {status} {page}");
        assert!(page.contains("role"), "the page names the field: {page}");
    }
    let (status, _, page) = submit(
        &server,
        &format!("/admin/users/{peer}/role"),
        &cookies,
        &[("csrfToken", &token), ("role", "user")],
        &[],
    )
    .await;
    assert_eq!(
        status, 403,
        "an admin does not demote another admin: {page}"
    );
    let (status, _, page) = submit(
        &server,
        "/admin/users/999999/role",
        &cookies,
        &[("csrfToken", &token), ("role", "moderator")],
        &[],
    )
    .await;
    assert_eq!(status, 404, "{page}");
    assert_eq!(
        server
            .sql_count("SELECT COUNT(*) FROM audit_log WHERE action = 'user.update'")
            .await,
        0,
        "no refused change is audited"
    );

    let (status, location, page) = submit(
        &server,
        &path,
        &cookies,
        &[("csrfToken", &token), ("role", "moderator")],
        &[],
    )
    .await;
    assert_eq!(status, 303, "{page}");
    assert_eq!(location, format!("/admin/users/{target}?done=role"));
    let (_, _, page) = open(&server, &location, Some(&admin)).await;
    assert!(page.contains("<dd id=\"role\">moderator</dd>"), "{page}");
    assert!(page.contains("The role is saved"), "{page}");
    let entries = server
        .sql_count(&format!(
            "SELECT COUNT(*) FROM audit_log WHERE action = 'user.update' AND target_id = '{target}' \
             AND actor_id = {admin_id} AND surface = 'console'"
        ))
        .await;
    assert_eq!(
        entries, 1,
        "the change is audited once, naming the administrator"
    );
    let (_, _, page) = open(&server, "/admin/audit?action=user.update", Some(&admin)).await;
    assert!(
        page.contains("moderator"),
        "the entry shows the new role: {page}"
    );
}

async fn an_administrator_bans_and_unbans_ticked_users_together(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (admin_id, admin) = member(&server, "admin@example.com", "admin").await;
    let (first, first_cookie) = member(&server, "first@example.com", "user").await;
    let (second, _) = member(&server, "second@example.com", "user").await;
    let (peer, _) = member(&server, "peer@example.com", "admin").await;
    let (status, _, page) = open(&server, "/admin/users", Some(&admin)).await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains(&format!(
            "<input type=\"checkbox\" name=\"ids\" value=\"{first}\" id=\"tick-{first}\"><label for=\"tick-{first}\""
        )),
        "each user has a labelled tick: {page}"
    );
    let (cookies, token) = form_page(&server, "/admin/users", &admin).await;
    let cookies = [cookies[0].as_str(), cookies[1].as_str()];
    let (first_id, second_id, peer_id) = (first.to_string(), second.to_string(), peer.to_string());

    writes_are_refused_to_others(
        &server,
        "/admin/users/bulk",
        &cookies,
        &[
            ("csrfToken", &token),
            ("action", "ban"),
            ("ids", &first_id),
            ("reason", "Spam"),
        ],
    )
    .await;
    let too_many: Vec<String> = (1..=101).map(|id| id.to_string()).collect();
    let mut crowded = vec![("csrfToken", token.as_str()), ("action", "unban")];
    crowded.extend(too_many.iter().map(|id| ("ids", id.as_str())));
    for (fields, field, why) in [
        (
            vec![
                ("csrfToken", token.as_str()),
                ("action", "ban"),
                ("reason", "Spam"),
            ],
            "ids",
            "no user ticked",
        ),
        (crowded, "ids", "more than 100 users"),
        (
            vec![
                ("csrfToken", token.as_str()),
                ("action", "ban"),
                ("ids", "one"),
                ("reason", "Spam"),
            ],
            "ids",
            "not an id",
        ),
        (
            vec![
                ("csrfToken", token.as_str()),
                ("action", "burn"),
                ("ids", first_id.as_str()),
            ],
            "action",
            "no such action",
        ),
        (
            vec![
                ("csrfToken", token.as_str()),
                ("action", "ban"),
                ("ids", first_id.as_str()),
            ],
            "reason",
            "a ban without a reason",
        ),
        (
            vec![
                ("csrfToken", token.as_str()),
                ("action", "ban"),
                ("ids", first_id.as_str()),
                ("reason", "Spam"),
                ("duration", "forever"),
            ],
            "duration",
            "a bad duration",
        ),
    ] {
        let (status, _, page) = submit(&server, "/admin/users/bulk", &cookies, &fields, &[]).await;
        assert_eq!(status, 422, "{why}: {status} {page}");
        assert!(
            page.contains(field),
            "{why}: the page names {field}: {page}"
        );
    }
    assert_eq!(
        server
            .sql_count("SELECT COUNT(*) FROM users WHERE status = 'banned'")
            .await,
        0,
        "no refused form banned anyone"
    );

    let (status, _, page) = submit(
        &server,
        "/admin/users/bulk",
        &cookies,
        &[
            ("csrfToken", &token),
            ("action", "ban"),
            ("ids", &first_id),
            ("ids", &peer_id),
            ("ids", &second_id),
            ("reason", "Spam wave"),
            ("duration", "1d"),
        ],
        &[],
    )
    .await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("2 done, 1 refused"), "{page}");
    let outcome = |page: &str, id: i64| {
        page.split(&format!("<tr id=\"outcome-{id}\">"))
            .nth(1)
            .and_then(|rest| rest.split("</tr>").next())
            .unwrap_or_else(|| panic!("no outcome for {id}: {page}"))
            .to_owned()
    };
    assert!(outcome(&page, first).contains("<td>done</td>"), "{page}");
    assert!(outcome(&page, second).contains("<td>done</td>"), "{page}");
    assert!(
        outcome(&page, peer).contains("refused: "),
        "an admin does not ban another admin, and the page says so: {page}"
    );
    let banned = server
        .sql_count("SELECT COUNT(*) FROM users WHERE status = 'banned'")
        .await;
    assert_eq!(banned, 2, "the others stay banned");
    let session = server.get_json_as("/api/auth/session", &first_cookie).await;
    assert_eq!(session, Value::Null, "the ban ended the user's session");

    let (status, _, page) = submit(
        &server,
        "/admin/users/bulk",
        &cookies,
        &[
            ("csrfToken", &token),
            ("action", "unban"),
            ("ids", &first_id),
            ("ids", &second_id),
            ("ids", &first_id),
        ],
        &[],
    )
    .await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("2 done, 0 refused"), "each user once: {page}");
    assert_eq!(
        server
            .sql_count("SELECT COUNT(*) FROM users WHERE status = 'banned'")
            .await,
        0
    );
    for action in ["user.ban", "user.unban"] {
        for id in [first, second] {
            let entries = server
                .sql_count(&format!(
                    "SELECT COUNT(*) FROM audit_log WHERE action = '{action}' AND target_id = '{id}' \
                     AND actor_id = {admin_id} AND surface = 'console'"
                ))
                .await;
            assert_eq!(entries, 1, "{action} of {id} is audited once");
        }
    }
    assert_eq!(
        server
            .sql_count(&format!(
                "SELECT COUNT(*) FROM audit_log WHERE target_id = '{peer}' \
                 AND action IN ('user.ban', 'user.unban')"
            ))
            .await,
        0,
        "the refusal wrote nothing"
    );
}

/// The status the access page shows of the permission `reports.export`.
async fn permission_status(server: &TestServer, cookie: &str) -> String {
    let (_, _, page) = open(server, "/admin/access", Some(cookie)).await;
    page.split("<tr id=\"permission-reports.export\">")
        .nth(1)
        .and_then(|rest| rest.split("<td class=\"status\">").nth(1))
        .and_then(|rest| rest.split('<').next())
        .unwrap_or_else(|| panic!("no status: {page}"))
        .to_owned()
}

async fn a_super_admin_creates_disables_and_archives_permissions(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (root_id, root) = member(&server, "root@example.com", "super_admin").await;
    let (page_cookies, token) = form_page(&server, "/admin/access", &root).await;
    let cookies = [page_cookies[0].as_str(), page_cookies[1].as_str()];
    let create = [
        ("csrfToken", token.as_str()),
        ("name", "reports.export"),
        ("display_name", "Export reports"),
        ("category", "reports"),
        ("description", ""),
        ("risk_level", "medium"),
        ("dependencies", "posts:moderate"),
        ("reason", "Moderators export reports"),
    ];
    writes_are_refused_to_others(&server, "/admin/access/permissions", &cookies, &create).await;
    let (status, _, page) = submit(
        &server,
        "/admin/access/permissions",
        &[&admin, cookies[1]],
        &create,
        &[],
    )
    .await;
    assert_eq!(
        status, 403,
        "permissions:manage is the super admin's: {page}"
    );

    let mut bad_name = create.to_vec();
    bad_name[1] = ("name", "Export Reports");
    let mut bad_dependency = create.to_vec();
    bad_dependency[6] = ("dependencies", "no:such");
    let mut bad_risk = create.to_vec();
    bad_risk[5] = ("risk_level", "extreme");
    for (fields, named, why) in [
        (bad_name, "name", "a name with capitals and a space"),
        (
            bad_dependency,
            "no:such",
            "a dependency that does not exist",
        ),
        (bad_risk, "risk_level", "no such risk level"),
    ] {
        let (status, _, page) =
            submit(&server, "/admin/access/permissions", &cookies, &fields, &[]).await;
        assert!(
            status == 400 || status == 409 || status == 422,
            "{why}: {status} {page}"
        );
        assert!(page.contains(named), "{why}: the page names it: {page}");
    }

    let (status, location, page) =
        submit(&server, "/admin/access/permissions", &cookies, &create, &[]).await;
    assert_eq!(status, 303, "{page}");
    assert_eq!(
        location,
        "/admin/access?permission=reports.export&done=created#permissions"
    );
    let (status, _, page) =
        submit(&server, "/admin/access/permissions", &cookies, &create, &[]).await;
    assert_eq!(status, 409, "the name is taken: {page}");
    let (_, _, page) = open(&server, &location, Some(&root)).await;
    assert!(
        page.contains("The permission reports.export is created."),
        "{page}"
    );
    let row = page
        .split("<tr id=\"permission-reports.export\">")
        .nth(1)
        .and_then(|rest| rest.split("</tr>").next())
        .expect("the new permission is listed")
        .to_owned();
    assert!(row.contains("<td class=\"status\">active</td>"), "{row}");
    let id: String = row
        .split("action=\"&#x2f;admin&#x2f;access&#x2f;permissions&#x2f;")
        .nth(1)
        .or_else(|| row.split("action=\"/admin/access/permissions/").nth(1))
        .expect("a change form")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let path = format!("/admin/access/permissions/{id}");

    writes_are_refused_to_others(
        &server,
        &path,
        &cookies,
        &[("csrfToken", &token), ("status", "disabled")],
    )
    .await;
    for (status_field, why) in [("burn", "no such status"), ("", "nothing to change")] {
        let (status, _, page) = submit(
            &server,
            &path,
            &cookies,
            &[("csrfToken", &token), ("status", status_field)],
            &[],
        )
        .await;
        assert_eq!(status, 422, "{why}: {status} {page}");
        assert!(page.contains("status"), "{why}: {page}");
    }
    let (status, _, page) = submit(
        &server,
        "/admin/access/permissions/999999",
        &cookies,
        &[("csrfToken", &token), ("status", "disabled")],
        &[],
    )
    .await;
    assert_eq!(status, 404, "{page}");

    for (wanted, shown) in [
        ("disabled", "disabled"),
        ("active", "enabled"),
        ("archived", "archived"),
    ] {
        let (status, location, page) = submit(
            &server,
            &path,
            &cookies,
            &[
                ("csrfToken", &token),
                ("status", wanted),
                ("reason", "Tidying"),
            ],
            &[],
        )
        .await;
        assert_eq!(status, 303, "{wanted}: {page}");
        let (_, _, page) = open(&server, &location, Some(&root)).await;
        assert!(
            page.contains(&format!("The permission reports.export is {shown}.")),
            "{page}"
        );
        assert_eq!(permission_status(&server, &root).await, wanted);
    }
    let (status, _, page) = submit(
        &server,
        &path,
        &cookies,
        &[("csrfToken", &token), ("status", "active")],
        &[],
    )
    .await;
    assert_eq!(
        status, 409,
        "an archived permission changes no more: {page}"
    );

    for (action, count) in [("permission.create", 1), ("permission.update", 3)] {
        let entries = server
            .sql_count(&format!(
                "SELECT COUNT(*) FROM audit_log WHERE action = '{action}' \
                 AND actor_id = {root_id} AND surface = 'console'"
            ))
            .await;
        assert_eq!(entries, count, "{action}, naming the super admin");
    }
}

async fn the_analytics_filters_apply_to_the_charts_and_the_download(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (_, reader) = member(&server, "reader@example.com", "user").await;
    let now = plaza_domain::time::rfc3339(plaza_domain::time::now_millis());
    let events: Vec<Value> = ["/welcome", "/rules"]
        .iter()
        .map(|path| {
            json!({
                "event_type": "page_view",
                "event_data": {"path": path, "session_id": "s-1"},
                "timestamp": now,
            })
        })
        .collect();
    let (status, body) = call(
        &server,
        "POST",
        "/api/analytics/collect/batch",
        Some(&reader),
        Some(json!({ "events": events })),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // Events are written by the group commit, a moment after their answer.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (status, _, page) = open(&server, "/admin/analytics?range=7d", Some(&admin)).await;
        assert_eq!(status, 200, "{page}");
        if page.contains("<dt>Page views</dt><dd>2</dd>") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the events never showed: {page}"
        );
    }

    let filtered = "/admin/analytics?range=7d&country=&device_type=tablet&include_vpn=false&timezone=Europe%2FBerlin";
    let (status, _, page) = open(&server, filtered, Some(&admin)).await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("<dt>Page views</dt><dd>0</dd>"),
        "the device filter applies to the figures: {page}"
    );
    assert!(page.contains("<option selected>tablet</option>"), "{page}");
    assert!(page.contains("value=\"Europe&#x2f;Berlin\""), "{page}");
    let csv_link = page
        .split("id=\"csv-download\"")
        .next()
        .and_then(|before| before.rsplit("href=\"").next())
        .expect("the download link")
        .split('"')
        .next()
        .unwrap()
        .replace("&amp;", "&")
        .replace("&#x2f;", "/");
    assert!(csv_link.contains("device_type=tablet"), "{csv_link}");
    assert!(csv_link.contains("include_vpn=false"), "{csv_link}");
    assert!(
        page.contains("href=\"/admin/analytics?range=30d&amp;device_type=tablet&amp;"),
        "the period tabs keep the filters: {page}"
    );
    let download = |path: String| {
        let server = &server;
        let admin = admin.clone();
        async move {
            let response = server
                .client
                .get(server.url(&path))
                .header("cookie", admin)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200, "{path}");
            response.text().await.unwrap()
        }
    };
    let filtered_csv = download(csv_link).await;
    let whole_csv = download("/api/admin/analytics?dateRange=7d&format=csv".to_owned()).await;
    let page_views = |csv: &str| {
        csv.lines()
            .find(|line| line.starts_with("overview,totalPageViews,"))
            .unwrap_or_else(|| panic!("no page views in {csv}"))
            .to_owned()
    };
    assert!(page_views(&whole_csv).ends_with(",2"), "{whole_csv}");
    assert!(page_views(&filtered_csv).ends_with(",0"), "{filtered_csv}");

    for (query, field) in [
        ("country=Germany", "country"),
        ("device_type=phone", "device_type"),
        ("timezone=Mars%2FOlympus", "timezone"),
        ("include_vpn=maybe", "include_vpn"),
    ] {
        let (status, _, page) =
            open(&server, &format!("/admin/analytics?{query}"), Some(&admin)).await;
        assert_eq!(status, 422, "{query}: {status} {page}");
        assert!(
            page.contains(field),
            "{query}: the page names {field}: {page}"
        );
    }
}
