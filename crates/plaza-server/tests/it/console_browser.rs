//! The operator console in headless Chromium, driven through ChromeDriver
//! (WebDriver) as an operator uses it: sign in at `/admin/`, hide a
//! reported post telling its author, ban and unban a user, change their
//! role, ban and unban ticked users together, grant and revoke a
//! permission, create and disable one, schedule and withdraw a broadcast,
//! approve an emoji, write a site rule, warn a member citing it and read
//! their appeal, open the analytics charts, and find each action in the
//! audit log; then every page at 320 px wide, with a label on each
//! control and the skip link first under the keyboard. With
//! `PLAZA_TEST_SCREENSHOTS=<folder>` it saves a picture of each page there
//! (`docs/console/` holds the ones the README links to). Another test
//! redelivers a webhook delivery from the webhooks page.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::common::{Backend, PASSWORD, TestServer, call, member, post, skip};

/// A ChromeDriver on a loopback port, stopped when dropped.
struct Driver {
    process: Child,
    port: u16,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// ChromeDriver, ready for sessions; `None` when it or Chromium is missing.
async fn chrome_driver() -> Option<Driver> {
    let driver = std::env::var_os("CHROMEDRIVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromedriver"));
    if !driver.exists() || !PathBuf::from("/usr/bin/chromium").exists() {
        return None;
    }
    let port = free_port();
    let process = Command::new(driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromedriver");
    let deadline = Instant::now() + Duration::from_secs(30);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "chromedriver never listened");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Some(Driver { process, port })
}

/// A headless Chromium session with the flags the project's browser tests use.
async fn browser(driver: &Driver) -> Client {
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".to_owned(),
        json!({
            "binary": "/usr/bin/chromium",
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-background-networking", "--disable-component-update",
                "--no-first-run", "--window-size=1280,1000",
            ],
        }),
    );
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("a WebDriver session")
}

/// Saves a picture of the page as `<name>.png` when screenshots are asked for.
async fn picture(client: &Client, name: &str) {
    if let Some(folder) = std::env::var_os("PLAZA_TEST_SCREENSHOTS") {
        let png = client.screenshot().await.expect("a screenshot");
        std::fs::write(PathBuf::from(folder).join(format!("{name}.png")), png).unwrap();
    }
}

async fn text_of(client: &Client, css: &str) -> String {
    client
        .find(Locator::Css(css))
        .await
        .unwrap_or_else(|error| panic!("{css}: {error}"))
        .text()
        .await
        .unwrap()
}

async fn click(client: &Client, css: &str) {
    client
        .find(Locator::Css(css))
        .await
        .unwrap_or_else(|error| panic!("{css}: {error}"))
        .click()
        .await
        .unwrap();
}

/// Clicks `css`, then waits (10 s at most) for `expected` to be on the page
/// the click leads to.
async fn click_then(client: &Client, css: &str, expected: &str) {
    click(client, css).await;
    client
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css(expected))
        .await
        .unwrap_or_else(|error| panic!("after {css}, {expected}: {error}"));
}

/// Waits (10 s at most) for the browser to be at `url` on `base`.
async fn wait_for_url(client: &Client, base: &str, url: &str) {
    let wanted = url::Url::parse(&format!("{base}{url}")).unwrap();
    client
        .wait()
        .at_most(Duration::from_secs(10))
        .for_url(&wanted)
        .await
        .unwrap_or_else(|error| panic!("{url}: {error}"));
}

/// The controls of the page that no label names: each as its id or name.
async fn unlabelled_controls(client: &Client) -> Vec<Value> {
    let found = client
        .execute(
            "return Array.from(document.querySelectorAll(\
               'input:not([type=hidden]), select, textarea'))\
             .filter(control => control.labels.length === 0 && !control.getAttribute('aria-label'))\
             .map(control => control.id || control.name);",
            vec![],
        )
        .await
        .unwrap();
    found.as_array().cloned().unwrap_or_default()
}

async fn type_into(client: &Client, css: &str, text: &str) {
    client
        .find(Locator::Css(css))
        .await
        .unwrap_or_else(|error| panic!("{css}: {error}"))
        .send_keys(text)
        .await
        .unwrap();
}

#[tokio::test]
async fn an_operator_runs_the_community_from_the_console() {
    let test = "an_operator_runs_the_community_from_the_console";
    let Some(driver) = chrome_driver().await else {
        return skip(
            test,
            "chromium or chromedriver is missing (.ci/run installs them)",
        );
    };
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let bind = format!("127.0.0.1:{port}");
    let server = TestServer::start_with(
        Backend::Sqlite,
        &[
            ("PLAZA_BIND", bind.as_str()),
            ("PLAZA_BASE_URL", base.as_str()),
        ],
    )
    .await;
    server.create_user("root@example.com", PASSWORD, "super_admin");
    let (_, author) = member(&server, "author@example.com", "user").await;
    let post_id = post(
        &server,
        &author,
        json!({"title": "Cheap watches", "content": "Buy now", "published": true}),
    )
    .await;
    let (target, reader) = member(&server, "reader@example.com", "user").await;
    let (spammer, _) = member(&server, "spammer-one@example.com", "user").await;
    let (other_spammer, _) = member(&server, "spammer-two@example.com", "user").await;
    let (status, _) = call(
        &server,
        "POST",
        &format!("/api/posts/{post_id}/report"),
        Some(&reader),
        Some(json!({"reason": "spam"})),
    )
    .await;
    assert!(status == 200 || status == 201);
    crate::emojis::pending_emoji(&server, &author, "party_parrot").await;
    let now = plaza_domain::time::rfc3339(plaza_domain::time::now_millis());
    call(
        &server,
        "POST",
        "/api/analytics/collect/batch",
        Some(&reader),
        Some(json!({"events": [{"event_type": "page_view", "event_data": {"path": "/welcome", "session_id": "s"}, "timestamp": now}]})),
    )
    .await;

    let client = browser(&driver).await;
    client.goto(&format!("{base}/admin/")).await.unwrap();
    assert!(
        client
            .current_url()
            .await
            .unwrap()
            .path()
            .starts_with("/api/auth/signin")
    );
    picture(&client, "sign-in").await;
    type_into(&client, "#email", "root@example.com").await;
    type_into(&client, "#password", PASSWORD).await;
    click_then(&client, "button[type=submit]", "nav[aria-label=Console]").await;
    let landed = client.current_url().await.unwrap();
    assert_eq!(
        landed.path(),
        "/admin/",
        "{landed}: {}",
        text_of(&client, "body").await
    );
    assert!(
        text_of(&client, "main")
            .await
            .contains("reported posts waiting")
    );
    picture(&client, "overview").await;

    client
        .goto(&format!("{base}/admin/moderation"))
        .await
        .unwrap();
    let form = format!("#post-{post_id} form");
    type_into(
        &client,
        &format!("{form} input[name=reason]"),
        "Advertising",
    )
    .await;
    click(&client, &format!("{form} input[name=notifyAuthor]")).await;
    picture(&client, "moderation").await;
    click_then(&client, &format!("{form} button[value=hide]"), ".notice").await;
    assert!(text_of(&client, ".notice").await.contains("Done: hide."));
    let (_, alerts) = call(&server, "GET", "/api/alerts", Some(&author), None).await;
    assert!(
        alerts.to_string().contains("Your post was hidden"),
        "{alerts}"
    );

    client
        .goto(&format!("{base}/admin/users?search=reader"))
        .await
        .unwrap();
    picture(&client, "users").await;
    click_then(
        &client,
        &format!("a[href=\"/admin/users/{target}\"]"),
        "#ban-reason",
    )
    .await;
    type_into(&client, "#ban-reason", "Spam").await;
    click_then(
        &client,
        "form[action$=\"/ban\"] button",
        "form[action$=\"/unban\"]",
    )
    .await;
    assert_eq!(text_of(&client, "#status").await, "banned");
    picture(&client, "user").await;
    click_then(
        &client,
        "form[action$=\"/unban\"] button",
        "form[action$=\"/ban\"]",
    )
    .await;
    assert_eq!(text_of(&client, "#status").await, "active");
    click(&client, "#role-choice option[value=moderator]").await;
    click(&client, "#role-form button").await;
    wait_for_url(&client, &base, &format!("/admin/users/{target}?done=role")).await;
    assert_eq!(text_of(&client, "#role").await, "moderator");

    client
        .goto(&format!("{base}/admin/users?search=spammer"))
        .await
        .unwrap();
    for id in [spammer, other_spammer] {
        click(&client, &format!("#tick-{id}")).await;
    }
    type_into(&client, "#bulk-reason", "Spam wave").await;
    picture(&client, "users-bulk").await;
    click_then(&client, "#bulk button", "#bulk-summary").await;
    assert!(
        text_of(&client, "#bulk-summary")
            .await
            .starts_with("2 done, 0 refused")
    );
    assert_eq!(
        text_of(&client, &format!("#outcome-{spammer} td + td")).await,
        "done"
    );
    client
        .goto(&format!("{base}/admin/users?search=spammer&status=banned"))
        .await
        .unwrap();
    for id in [spammer, other_spammer] {
        click(&client, &format!("#tick-{id}")).await;
    }
    click(&client, "#bulk-action option[value=unban]").await;
    click_then(&client, "#bulk button", "#bulk-summary").await;
    assert!(
        text_of(&client, "#bulk-summary")
            .await
            .starts_with("2 done, 0 refused")
    );

    client.goto(&format!("{base}/admin/access")).await.unwrap();
    // Administrators are offered every permission; unticked and ticked
    // again, the dashboard's grant goes and comes back.
    let admin_form = "#role-admin";
    click(
        &client,
        &format!("{admin_form} input[value=\"analytics:read\"]"),
    )
    .await;
    click_then(&client, &format!("{admin_form} button"), ".notice").await;
    assert!(text_of(&client, ".notice").await.contains("admin"));
    picture(&client, "access").await;
    client.goto(&format!("{base}/admin/access")).await.unwrap();
    click(
        &client,
        &format!("{admin_form} input[value=\"analytics:read\"]"),
    )
    .await;
    click_then(&client, &format!("{admin_form} button"), ".notice").await;

    type_into(&client, "#permission-name", "reports.export").await;
    type_into(&client, "#permission-display-name", "Export reports").await;
    type_into(&client, "#permission-category", "reports").await;
    type_into(
        &client,
        "#permission-create-reason",
        "Moderators export reports",
    )
    .await;
    let created = "tr[id=\"permission-reports.export\"]";
    click_then(&client, "#new-permission button", created).await;
    assert_eq!(
        text_of(&client, &format!("{created} .status")).await,
        "active"
    );
    picture(&client, "permissions").await;
    click(&client, &format!("{created} button[value=disabled]")).await;
    wait_for_url(
        &client,
        &base,
        "/admin/access?permission=reports.export&done=disabled#permissions",
    )
    .await;
    assert_eq!(
        text_of(&client, &format!("{created} .status")).await,
        "disabled"
    );

    client
        .goto(&format!("{base}/admin/broadcasts"))
        .await
        .unwrap();
    type_into(&client, "#title", "Maintenance").await;
    type_into(&client, "#message", "Tomorrow at ten.").await;
    let tomorrow = plaza_domain::time::rfc3339(plaza_domain::time::now_millis() + 86_400_000);
    client
        .execute(
            "document.getElementById('schedule').value = arguments[0];",
            vec![Value::from(&tomorrow[..16])],
        )
        .await
        .unwrap();
    click_then(
        &client,
        "form[action=\"/admin/broadcasts\"] button",
        ".notice",
    )
    .await;
    assert!(text_of(&client, ".notice").await.contains("scheduled"));
    picture(&client, "broadcasts").await;
    click(&client, "form[action$=\"/cancel\"] button").await;
    // The page before had a notice too: wait for the one the withdrawal leads to.
    let withdrawn = url::Url::parse(&format!("{base}/admin/broadcasts?done=cancelled")).unwrap();
    client
        .wait()
        .at_most(Duration::from_secs(10))
        .for_url(&withdrawn)
        .await
        .expect("the withdrawal's page");
    assert!(text_of(&client, ".notice").await.contains("withdrawn"));

    client.goto(&format!("{base}/admin/flags")).await.unwrap();
    type_into(&client, "#new-name", "new-editor").await;
    click(&client, "form[action=\"/admin/flags\"] input[name=enabled]").await;
    click_then(
        &client,
        "form[action=\"/admin/flags\"] button",
        "#flag-new-editor",
    )
    .await;
    assert!(text_of(&client, "#flag-new-editor h2").await.contains("on"));
    picture(&client, "flags").await;

    // A word filter that holds, a post it holds in the queue with the
    // reason, approved from there, and the filter removed.
    client
        .goto(&format!("{base}/admin/word-filters"))
        .await
        .unwrap();
    type_into(&client, "#new-phrase", "replica watches").await;
    click(&client, "#new-action option[value=hold]").await;
    click_then(&client, "#new-word-filter button", ".notice").await;
    assert!(text_of(&client, ".notice").await.contains("within 5 s"));
    let listed = text_of(&client, "#word-filter-list").await;
    assert!(
        listed.contains("replica watches") && listed.contains("hold"),
        "{listed}"
    );
    picture(&client, "word-filters").await;
    let (status, held) = call(
        &server,
        "POST",
        "/api/posts",
        Some(&author),
        Some(json!({"title": "Deals", "content": "R3PLICA w\u{200b}atches here"})),
    )
    .await;
    assert_eq!(status, 201, "{held}");
    assert_eq!(held["status"], "pending");
    let held_id = held["id"].as_str().unwrap();
    client
        .goto(&format!("{base}/admin/moderation?state=pending"))
        .await
        .unwrap();
    let reason = text_of(&client, &format!("#post-{held_id} .review-reason")).await;
    assert!(
        reason.contains("Held") && reason.contains("replica watches"),
        "{reason}"
    );
    picture(&client, "moderation-held").await;
    click_then(
        &client,
        &format!("#post-{held_id} form button[value=approve]"),
        ".notice",
    )
    .await;
    assert!(text_of(&client, ".notice").await.contains("Done: approve."));
    let (status, _) = call(&server, "GET", &format!("/api/posts/{held_id}"), None, None).await;
    assert_eq!(status, 200, "the approved post is public");
    client
        .goto(&format!("{base}/admin/word-filters"))
        .await
        .unwrap();
    click_then(&client, "#word-filter-list form button", ".notice").await;
    assert!(text_of(&client, ".notice").await.contains("removed"));
    assert!(
        text_of(&client, "#word-filter-list")
            .await
            .contains("No filters yet.")
    );

    client.goto(&format!("{base}/admin/emojis")).await.unwrap();
    picture(&client, "emojis").await;
    click_then(&client, "button[value=approve]", ".notice").await;
    assert!(text_of(&client, ".notice").await.contains("approved"));

    // A rule written on the rules page, a warning citing it from the
    // member's page, and the member's appeal shown beside the warning.
    client.goto(&format!("{base}/admin/rules")).await.unwrap();
    type_into(&client, "#title-0", "Be kind").await;
    click_then(&client, "#rules-form button", ".notice").await;
    assert!(text_of(&client, ".notice").await.contains("saved"));
    picture(&client, "rules").await;
    client
        .goto(&format!("{base}/admin/users/{target}"))
        .await
        .unwrap();
    type_into(&client, "#warn-reason", "Please keep it civil.").await;
    click(&client, "#warn-form input[name=ruleIds]").await;
    click(&client, "#warn-form button").await;
    wait_for_url(
        &client,
        &base,
        &format!("/admin/users/{target}?done=warned"),
    )
    .await;
    assert_eq!(text_of(&client, "#warning-count").await, "1");
    assert!(text_of(&client, "#warnings").await.contains("Be kind"));
    // The ban ended the reader's session: they sign in again to appeal.
    let reader = server.sign_in("reader@example.com", PASSWORD).await;
    let (_, actions) = call(
        &server,
        "GET",
        "/api/me/moderation-actions",
        Some(&reader),
        None,
    )
    .await;
    let (status, appeal) = call(
        &server,
        "POST",
        "/api/me/appeals",
        Some(&reader),
        Some(json!({"moderation_action_id": actions["actions"][0]["id"], "text": "I was only quoting."})),
    )
    .await;
    assert_eq!(status, 201, "{appeal}");
    client.goto(&format!("{base}/admin/appeals")).await.unwrap();
    let shown = text_of(&client, "main").await;
    assert!(
        shown.contains("Please keep it civil.") && shown.contains("I was only quoting."),
        "{shown}"
    );
    picture(&client, "appeals").await;

    client
        .goto(&format!("{base}/admin/analytics?range=7d"))
        .await
        .unwrap();
    assert!(
        text_of(&client, "#chart-page-views figcaption")
            .await
            .contains("Page views")
    );
    client
        .find(Locator::Css("#chart-page-views svg rect.bar"))
        .await
        .expect("the page views are drawn");
    picture(&client, "analytics").await;

    client.goto(&format!("{base}/admin/system")).await.unwrap();
    assert_eq!(text_of(&client, "#health-database").await, "answers");
    picture(&client, "system").await;

    client.goto(&format!("{base}/admin/audit")).await.unwrap();
    let trail = text_of(&client, "main").await;
    for action in [
        "post.moderate.hide",
        "user.ban",
        "user.unban",
        "user.update",
        "role.permissions.update",
        "permission.create",
        "permission.update",
        "broadcast.create",
        "broadcast.cancel",
        "feature_flag.create",
        "word_filter.create",
        "word_filter.delete",
        "post.moderate.approve",
        "emoji.approve",
        "rules.update",
        "user.warn",
    ] {
        assert!(
            trail.contains(action),
            "{action} is in the audit log: {trail}"
        );
    }
    picture(&client, "audit").await;

    // Every page at 320 px: nothing wider than the window, a label on
    // every control, and the skip link first under the keyboard.
    client.set_window_size(320, 900).await.unwrap();
    let inner = client
        .execute("return window.innerWidth;", vec![])
        .await
        .unwrap();
    assert_eq!(inner, json!(320), "the window is 320 px wide");
    for path in [
        "/admin/".to_owned(),
        "/admin/moderation".to_owned(),
        "/admin/reports".to_owned(),
        "/admin/emojis".to_owned(),
        "/admin/users".to_owned(),
        format!("/admin/users/{target}"),
        "/admin/access".to_owned(),
        "/admin/analytics".to_owned(),
        "/admin/audit".to_owned(),
        "/admin/broadcasts".to_owned(),
        "/admin/flags".to_owned(),
        "/admin/word-filters".to_owned(),
        "/admin/system".to_owned(),
        "/admin/rules".to_owned(),
        "/admin/appeals".to_owned(),
    ] {
        client.goto(&format!("{base}{path}")).await.unwrap();
        let width = client
            .execute("return document.documentElement.scrollWidth;", vec![])
            .await
            .unwrap();
        assert!(
            width.as_u64().is_some_and(|width| width <= 320),
            "{path} scrolls sideways at 320 px: {width}"
        );
        let unlabelled = unlabelled_controls(&client).await;
        assert!(unlabelled.is_empty(), "{path}: unlabelled {unlabelled:?}");
        let tab = KeyActions::new("keyboard".to_owned())
            .then(KeyAction::Down { value: '\u{e004}' })
            .then(KeyAction::Up { value: '\u{e004}' });
        client.perform_actions(tab).await.unwrap();
        let first = client.active_element().await.unwrap();
        assert_eq!(
            first.attr("href").await.unwrap().as_deref(),
            Some("#main"),
            "{path}: the skip link comes first"
        );
        if path == "/admin/users" {
            picture(&client, "users-narrow").await;
        }
    }
    client.close().await.unwrap();
}

/// The front door from the console: a super administrator switches
/// registrations to approval with a question, approves the application
/// that comes in, blocks an email domain and an IP range, and finds each
/// change in force on the API and in the audit log; every page has a label
/// on each control.
#[tokio::test]
async fn an_operator_closes_the_front_door_from_the_console() {
    let test = "an_operator_closes_the_front_door_from_the_console";
    let Some(driver) = chrome_driver().await else {
        return skip(
            test,
            "chromium or chromedriver is missing (.ci/run installs them)",
        );
    };
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let bind = format!("127.0.0.1:{port}");
    let server = TestServer::start_with(
        Backend::Sqlite,
        &[
            ("PLAZA_BIND", bind.as_str()),
            ("PLAZA_BASE_URL", base.as_str()),
        ],
    )
    .await;
    server.create_user("root@example.com", PASSWORD, "super_admin");
    let token = server.mint("root@example.com", "admin:read");

    let client = browser(&driver).await;
    client.goto(&format!("{base}/admin/")).await.unwrap();
    type_into(&client, "#email", "root@example.com").await;
    type_into(&client, "#password", PASSWORD).await;
    click_then(&client, "button[type=submit]", "nav[aria-label=Console]").await;

    client
        .goto(&format!("{base}/admin/site-settings"))
        .await
        .unwrap();
    client
        .find(Locator::Css("#registration-mode"))
        .await
        .unwrap()
        .select_by_value("approval")
        .await
        .unwrap();
    type_into(&client, "#registration-question", "What brings you here?").await;
    picture(&client, "site-settings").await;
    click_then(
        &client,
        "form[action=\"/admin/site-settings\"] button",
        ".notice",
    )
    .await;
    let settings = server
        .send(
            crate::common::As::Token(&token),
            "GET",
            "/api/v1/admin/site-settings",
            None,
        )
        .await
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(settings["data"]["registrationMode"], "approval");
    assert_eq!(
        settings["data"]["registrationQuestion"],
        "What brings you here?"
    );

    let (status, created) = call(
        &server,
        "POST",
        "/api/users",
        None,
        Some(json!({"email": "newcomer@example.com", "password": PASSWORD, "application": "I knit."})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let newcomer = created["id"].as_str().unwrap().to_owned();
    client
        .goto(&format!("{base}/admin/registrations"))
        .await
        .unwrap();
    assert!(text_of(&client, "main").await.contains("I knit."));
    picture(&client, "registrations").await;
    click_then(
        &client,
        &format!("#registration-{newcomer} input[value=approve] + button"),
        ".notice",
    )
    .await;
    assert_eq!(
        server
            .try_sign_in("newcomer@example.com", PASSWORD)
            .await
            .status(),
        200
    );

    client
        .goto(&format!("{base}/admin/email-domain-blocks"))
        .await
        .unwrap();
    type_into(&client, "#domain", "Spam.Example").await;
    type_into(&client, "#domain-reason", "a wave of bots").await;
    click_then(
        &client,
        "form[action=\"/admin/email-domain-blocks\"] button",
        ".notice",
    )
    .await;
    assert!(text_of(&client, "main").await.contains("spam.example"));
    picture(&client, "email-domain-blocks").await;
    let (status, refused) = call(
        &server,
        "POST",
        "/api/users",
        None,
        Some(json!({"email": "bot@mail.spam.example", "password": PASSWORD, "application": "hi"})),
    )
    .await;
    assert_eq!(status, 422, "{refused}");

    client
        .goto(&format!("{base}/admin/ip-blocks"))
        .await
        .unwrap();
    type_into(&client, "#cidr", "203.0.113.0/24").await;
    client
        .find(Locator::Css("#severity"))
        .await
        .unwrap()
        .select_by_value("all")
        .await
        .unwrap();
    click_then(
        &client,
        "form[action=\"/admin/ip-blocks\"] button",
        ".notice",
    )
    .await;
    assert!(text_of(&client, "main").await.contains("203.0.113.0/24"));
    picture(&client, "ip-blocks").await;
    let blocks = server
        .send(
            crate::common::As::Token(&token),
            "GET",
            "/api/v1/admin/ip-blocks",
            None,
        )
        .await
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(blocks["data"][0]["severity"], "all", "{blocks}");

    for action in [
        "site_settings.update",
        "registration.approve",
        "email_domain_block.create",
        "ip_block.create",
    ] {
        let trail = server
            .send(
                crate::common::As::Token(&token),
                "GET",
                &format!("/api/v1/admin/audit-logs?action={action}"),
                None,
            )
            .await
            .json::<Value>()
            .await
            .unwrap();
        assert_eq!(trail["data"][0]["surface"], "console", "{action}: {trail}");
    }
    for path in [
        "/admin/site-settings",
        "/admin/registrations",
        "/admin/email-domain-blocks",
        "/admin/ip-blocks",
    ] {
        client.goto(&format!("{base}{path}")).await.unwrap();
        let unlabelled = unlabelled_controls(&client).await;
        assert!(unlabelled.is_empty(), "{path}: unlabelled {unlabelled:?}");
    }
    client.close().await.unwrap();
}

/// A super admin finds a webhook's recent deliveries in the console, with
/// their status, the receiver's code and the duration, and sends one again
/// with its button: the receiver gets the same delivery id once more.
#[tokio::test]
async fn an_operator_redelivers_a_webhook_delivery_from_the_console() {
    let test = "an_operator_redelivers_a_webhook_delivery_from_the_console";
    let Some(driver) = chrome_driver().await else {
        return skip(
            test,
            "chromium or chromedriver is missing (.ci/run installs them)",
        );
    };
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let bind = format!("127.0.0.1:{port}");
    let server = TestServer::start_with(
        Backend::Sqlite,
        &[
            ("PLAZA_BIND", bind.as_str()),
            ("PLAZA_BASE_URL", base.as_str()),
            ("PLAZA_WEBHOOKS_ALLOW_PRIVATE", "true"),
        ],
    )
    .await;
    let receiver = crate::webhooks::Receiver::start(Vec::new()).await;
    let token = crate::webhooks::super_token(&server);
    let (webhook, _) =
        crate::webhooks::register(&server, &token, &receiver.url, &["post.created"]).await;
    let (_, author) = member(&server, "author@example.com", "user").await;
    post(
        &server,
        &author,
        json!({"title": "Hello", "content": "World", "published": true}),
    )
    .await;
    let first = receiver.wait_for(1, Duration::from_secs(10)).await;
    let delivery = first[0].header("x-plaza-delivery");
    let row = format!("#delivery-{delivery}");
    // The outcome is recorded just after the receiver answers.
    let deadline = Instant::now() + Duration::from_secs(10);
    while server
        .sql_count("SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'delivered'")
        .await
        == 0
    {
        assert!(Instant::now() < deadline, "the delivery was never recorded");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let client = browser(&driver).await;
    client
        .goto(&format!("{base}/admin/webhooks"))
        .await
        .unwrap();
    type_into(&client, "#email", "root@example.com").await;
    type_into(&client, "#password", PASSWORD).await;
    click_then(&client, "button[type=submit]", &row).await;
    wait_for_url(&client, &base, "/admin/webhooks").await;
    assert!(text_of(&client, "main").await.contains(&receiver.url));
    assert_eq!(
        text_of(&client, &format!("{row} .delivery-status")).await,
        "delivered"
    );
    assert_eq!(
        text_of(&client, &format!("{row} .delivery-code")).await,
        "200"
    );
    assert!(text_of(&client, &row).await.contains(" ms"), "the duration");
    picture(&client, "webhooks").await;

    click_then(&client, &format!("{row} button"), ".notice").await;
    assert!(text_of(&client, ".notice").await.contains("queued again"));
    let again = receiver.wait_for(2, Duration::from_secs(10)).await;
    assert_eq!(again[1].header("x-plaza-delivery"), delivery, "the same id");
    assert_eq!(
        server
            .sql_count(&format!(
                "SELECT COUNT(*) FROM audit_log WHERE action = 'webhook.redeliver' \
                 AND surface = 'console' AND target_id = '{webhook}'"
            ))
            .await,
        1
    );
    client.close().await.unwrap();
}
