//! Notifications through HTTP (DECISIONS.md "Notifications (round 5)"):
//! each type written by its cause and never for oneself, reactions grouped,
//! read and unread with the count, pages newest first by cursor, the live
//! stream's `notification` event, preferences, immediate mail and the
//! digest with their one-click unsubscribe, and Web Push to a receiver in
//! the test (payload decrypted with the subscription's keys, the VAPID JWT
//! checked, 410 and 5xx answers).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::elliptic_curve::sec1::ToEncodedPoint;
use serde_json::{Value, json};

use crate::alerts::AlertStream;
use crate::common::actors::Member;
use crate::common::smtp_sink::{SmtpSink, SunkMail, decoded_text};
use crate::common::{As, Backend, PASSWORD, TestServer, call, post};

on_both_databases!(
    each_cause_notifies_its_member_and_nobody_of_their_own_action,
    reactions_to_one_item_within_an_hour_grow_one_unread_notification,
    notifications_are_read_by_id_or_all_and_counted,
    pages_walk_newest_first_by_cursor,
    the_alert_stream_carries_each_new_notification,
    preferences_have_defaults_and_change_only_what_is_named,
    immediate_mail_carries_a_one_click_unsubscribe_bound_to_member_and_type,
    the_daily_digest_lists_what_waited_unread,
    push_subscriptions_take_public_https_endpoints_only,
    pushes_reach_the_endpoint_encrypted_and_signed_and_answers_are_obeyed,
    nobody_is_notified_of_a_member_they_mute_or_block,
    a_follow_notifies_the_member_followed,
    the_unread_count_is_read_with_the_session,
);

/// `GET /api/notifications{query}` as `cookie`.
async fn list(server: &TestServer, cookie: &str, query: &str) -> Value {
    let (status, body) = call(
        server,
        "GET",
        &format!("/api/notifications{query}"),
        Some(cookie),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body
}

/// The notifications of `cookie`'s member, newest first.
async fn items(server: &TestServer, cookie: &str) -> Vec<Value> {
    list(server, cookie, "?limit=100").await["notifications"]
        .as_array()
        .unwrap()
        .clone()
}

/// Answers `post_id` (or the reply `parent`) as `cookie`: the reply's id.
async fn reply(
    server: &TestServer,
    cookie: &str,
    post_id: &str,
    parent: Option<&str>,
    content: &str,
) -> String {
    let (status, body) = call(
        server,
        "POST",
        &format!("/api/posts/{post_id}/replies"),
        Some(cookie),
        Some(json!({"content": content, "parent_id": parent})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    body["id"].as_str().unwrap().to_owned()
}

/// `PUT` of the reaction `emoji` on `path` (`posts/1`, `replies/2`).
async fn react(server: &TestServer, cookie: &str, path: &str, emoji: &str) {
    let encoded: String = url::form_urlencoded::byte_serialize(emoji.as_bytes()).collect();
    let (status, body) = call(
        server,
        "PUT",
        &format!("/api/{path}/reactions/{encoded}"),
        Some(cookie),
        None,
    )
    .await;
    assert_eq!(status, 204, "{body}");
}

async fn unread_count(server: &TestServer, cookie: &str) -> i64 {
    let (status, body) = call(
        server,
        "GET",
        "/api/notifications/unread-count",
        Some(cookie),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["unread_count"].as_i64().unwrap()
}

/// The member's username: the local part of their address, as the
/// command line that created them derives it.
fn username(member: &Member) -> String {
    member.email.split('@').next().unwrap().to_owned()
}

async fn verify_email(server: &TestServer, member: &Member) {
    server
        .sql(&format!(
            "UPDATE users SET email_verified_at = 1 WHERE id = {}",
            member.id
        ))
        .await;
}

/// Polls `check` every 50 ms until it answers something, for at most 30 s.
macro_rules! eventually {
    ($what:expr, $check:expr) => {{
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(found) = $check {
                break found;
            }
            assert!(Instant::now() < deadline, "never: {}", $what);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }};
}

async fn each_cause_notifies_its_member_and_nobody_of_their_own_action(backend: Backend) {
    let server = TestServer::start(backend).await;
    let ada = Member::join(&server, "ada@example.com", "user").await;
    let bob = Member::join(&server, "bob@example.com", "user").await;
    let cy = Member::join(&server, "cy@example.com", "user").await;
    server.create_user("root@example.com", PASSWORD, "super_admin");
    let token = server.mint("root@example.com", "admin:super");
    let (ada_name, bob_name) = (username(&ada), username(&bob));
    let post_id = post(&server, &ada.cookie, json!({"title": "T", "content": "c"})).await;

    // Bob answers Ada's post: Ada is told `reply`; Ada answering her own
    // post tells nobody.
    let bobs = reply(&server, &bob.cookie, &post_id, None, "an answer").await;
    reply(&server, &ada.cookie, &post_id, None, "my own answer").await;
    let told = items(&server, &ada.cookie).await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["type"], "reply");
    assert_eq!(told[0]["actor"]["id"], bob.id.to_string());
    assert_eq!(told[0]["actor"]["username"], bob_name);
    assert!(
        told[0]["actor"]["avatar_url"]
            .as_str()
            .unwrap()
            .contains("avatar")
    );
    assert_eq!(told[0]["post_id"], post_id);
    assert_eq!(told[0]["reply_id"], bobs);
    assert_eq!(told[0]["read"], false);
    assert!(told[0]["id"].is_string());
    assert!(told[0]["emoji"].is_null() && told[0]["text"].is_null());

    // Cy answers Bob's reply and mentions both: Bob is told once, as
    // `reply` (only the author of what is answered), Ada `mention`.
    let cys = reply(
        &server,
        &cy.cookie,
        &post_id,
        Some(&bobs),
        &format!("@{bob_name} and @{ada_name}, look"),
    )
    .await;
    let bob_told = items(&server, &bob.cookie).await;
    assert_eq!(bob_told.len(), 1, "{bob_told:?}");
    assert_eq!(bob_told[0]["type"], "reply");
    assert_eq!(bob_told[0]["reply_id"], cys);
    let ada_told = items(&server, &ada.cookie).await;
    assert_eq!(
        ada_told.len(),
        2,
        "Ada is not the author of what Cy answered"
    );
    assert_eq!(ada_told[0]["type"], "mention");
    assert_eq!(ada_told[0]["reply_id"], cys);

    // A post that mentions Bob tells him; a draft that mentions Cy does
    // not (Cy cannot see it); mentioning oneself tells nobody.
    let mentioning = post(
        &server,
        &ada.cookie,
        json!({"title": "Hi", "content": format!("hello @{bob_name} and @{ada_name}")}),
    )
    .await;
    let cy_name = username(&cy);
    post(
        &server,
        &ada.cookie,
        json!({"title": "Draft", "content": format!("@{cy_name}"), "published": false}),
    )
    .await;
    let bob_told = items(&server, &bob.cookie).await;
    assert_eq!(bob_told[0]["type"], "mention");
    assert_eq!(bob_told[0]["post_id"], mentioning);
    assert!(bob_told[0]["reply_id"].is_null());
    assert_eq!(items(&server, &ada.cookie).await.len(), 2);
    let cy_told = items(&server, &cy.cookie).await;
    assert!(
        cy_told.iter().all(|item| item["type"] != "mention"),
        "{cy_told:?}"
    );

    // Reactions tell the item's author; one's own tells nobody.
    react(&server, &bob.cookie, &format!("posts/{post_id}"), "👍").await;
    react(&server, &ada.cookie, &format!("posts/{post_id}"), "🎉").await;
    let ada_told = items(&server, &ada.cookie).await;
    assert_eq!(ada_told.len(), 3);
    assert_eq!(ada_told[0]["type"], "reaction");
    assert_eq!(ada_told[0]["emoji"], "👍");
    assert_eq!(ada_told[0]["actor"]["id"], bob.id.to_string());
    assert!(ada_told[0]["reply_id"].is_null());
    react(&server, &ada.cookie, &format!("replies/{bobs}"), "🎉").await;
    let bob_told = items(&server, &bob.cookie).await;
    assert_eq!(bob_told[0]["type"], "reaction");
    assert_eq!(bob_told[0]["reply_id"], bobs);

    // A moderator hiding Bob's reply tells him, with the statement of
    // reasons and without naming the moderator.
    let hidden = server
        .send(
            As::Token(&token),
            "POST",
            &format!("/api/v1/admin/replies/{bobs}/moderate"),
            Some(&json!({"action": "hide", "reason": "off topic"})),
        )
        .await;
    assert_eq!(hidden.status(), 200);
    let bob_told = items(&server, &bob.cookie).await;
    assert_eq!(bob_told[0]["type"], "moderation");
    assert!(bob_told[0]["actor"].is_null());
    assert!(bob_told[0]["text"].as_str().unwrap().contains("off topic"));
    assert_eq!(bob_told[0]["reply_id"], bobs);
    assert_eq!(
        list(&server, &bob.cookie, "").await["unread_count"],
        bob_told.len()
    );
}

async fn reactions_to_one_item_within_an_hour_grow_one_unread_notification(backend: Backend) {
    let server = TestServer::start(backend).await;
    let ada = Member::join(&server, "ada@example.com", "user").await;
    let bob = Member::join(&server, "bob@example.com", "user").await;
    let cy = Member::join(&server, "cy@example.com", "user").await;
    let post_id = post(&server, &ada.cookie, json!({"title": "T", "content": "c"})).await;
    let on_post = format!("posts/{post_id}");
    react(&server, &bob.cookie, &on_post, "👍").await;
    react(&server, &cy.cookie, &on_post, "🎉").await;
    react(&server, &bob.cookie, &on_post, "🎉").await;
    let told = items(&server, &ada.cookie).await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["text"], "3");
    assert_eq!(told[0]["emoji"], "🎉");
    assert_eq!(told[0]["actor"]["id"], bob.id.to_string());
    assert_eq!(unread_count(&server, &ada.cookie).await, 1);

    // Read, the group is closed: the next reaction starts another.
    let (status, _) = call(
        &server,
        "POST",
        "/api/notifications/read",
        Some(&ada.cookie),
        Some(json!({"all": true})),
    )
    .await;
    assert_eq!(status, 204);
    react(&server, &cy.cookie, &on_post, "👍").await;
    let told = items(&server, &ada.cookie).await;
    assert_eq!(told.len(), 2);
    assert_eq!(
        (told[0]["text"].clone(), told[0]["read"].clone()),
        (json!("1"), json!(false))
    );

    // A group over an hour old takes no more.
    server
        .sql("UPDATE notifications SET created_at = created_at - 3700000")
        .await;
    react(&server, &bob.cookie, &on_post, "😀").await;
    let told = items(&server, &ada.cookie).await;
    assert_eq!(told.len(), 3, "{told:?}");
    assert_eq!(told[0]["text"], "1");
    assert_eq!(told[0]["emoji"], "😀");
    assert_eq!(unread_count(&server, &ada.cookie).await, 2);
}

async fn notifications_are_read_by_id_or_all_and_counted(backend: Backend) {
    let server = TestServer::start(backend).await;
    let ada = Member::join(&server, "ada@example.com", "user").await;
    let bob = Member::join(&server, "bob@example.com", "user").await;
    let post_id = post(&server, &ada.cookie, json!({"title": "T", "content": "c"})).await;
    let bobs_post = post(&server, &bob.cookie, json!({"title": "B", "content": "c"})).await;
    for n in 0..4 {
        reply(&server, &bob.cookie, &post_id, None, &format!("answer {n}")).await;
    }
    reply(&server, &ada.cookie, &bobs_post, None, "back at you").await;
    assert_eq!(unread_count(&server, &ada.cookie).await, 4);
    let told = items(&server, &ada.cookie).await;
    let bobs_own = items(&server, &bob.cookie).await[0]["id"].clone();
    let read = call(
        &server,
        "POST",
        "/api/notifications/read",
        Some(&ada.cookie),
        Some(json!({"ids": [told[0]["id"], told[1]["id"], bobs_own]})),
    )
    .await;
    assert_eq!(read.0, 204);
    assert_eq!(unread_count(&server, &ada.cookie).await, 2);
    assert_eq!(
        unread_count(&server, &bob.cookie).await,
        1,
        "another's ids are passed over"
    );
    let unread = list(&server, &ada.cookie, "?unread=true").await;
    assert_eq!(unread["notifications"].as_array().unwrap().len(), 2);
    assert_eq!(unread["unread_count"], 2);
    let told = items(&server, &ada.cookie).await;
    assert_eq!(told[0]["read"], true);
    assert_eq!(told[3]["read"], false);

    for (body, field) in [
        (json!({}), "ids"),
        (json!({"ids": ["1"], "all": true}), "all"),
        (json!({"ids": ["x"]}), "ids"),
        (json!({"ids": vec!["1"; 101]}), "ids"),
    ] {
        let (status, answer) = call(
            &server,
            "POST",
            "/api/notifications/read",
            Some(&ada.cookie),
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, 422, "{body}: {answer}");
        assert!(answer.to_string().contains(field), "{body}: {answer}");
    }
    let (status, _) = call(&server, "GET", "/api/notifications", None, None).await;
    assert_eq!(status, 401);

    let (status, _) = call(
        &server,
        "POST",
        "/api/notifications/read",
        Some(&ada.cookie),
        Some(json!({"all": true})),
    )
    .await;
    assert_eq!(status, 204);
    assert_eq!(unread_count(&server, &ada.cookie).await, 0);
    assert!(
        list(&server, &ada.cookie, "?unread=true").await["notifications"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    // Deleting the post takes its notifications, and the count follows.
    reply(&server, &bob.cookie, &post_id, None, "one more").await;
    assert_eq!(unread_count(&server, &ada.cookie).await, 1);
    let (status, _) = call(
        &server,
        "DELETE",
        &format!("/api/posts/{post_id}"),
        Some(&ada.cookie),
        None,
    )
    .await;
    assert_eq!(status, 204);
    assert_eq!(unread_count(&server, &ada.cookie).await, 0);
}

async fn pages_walk_newest_first_by_cursor(backend: Backend) {
    let server = TestServer::start(backend).await;
    let ada = Member::join(&server, "ada@example.com", "user").await;
    let bob = Member::join(&server, "bob@example.com", "user").await;
    let post_id = post(&server, &ada.cookie, json!({"title": "T", "content": "c"})).await;
    let mut written = Vec::new();
    for n in 0..7 {
        written.push(reply(&server, &bob.cookie, &post_id, None, &format!("answer {n}")).await);
    }
    written.reverse();
    let mut walked = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let query = match &cursor {
            None => "?limit=3".to_owned(),
            Some(cursor) => format!("?limit=3&cursor={cursor}"),
        };
        let page = list(&server, &ada.cookie, &query).await;
        pages += 1;
        for item in page["notifications"].as_array().unwrap() {
            walked.push(item["reply_id"].as_str().unwrap().to_owned());
        }
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(walked, written, "newest first, each once");
    for query in [
        "?limit=0",
        "?limit=101",
        "?cursor=nonsense",
        "?unread=maybe",
    ] {
        let (status, body) = call(
            &server,
            "GET",
            &format!("/api/notifications{query}"),
            Some(&ada.cookie),
            None,
        )
        .await;
        assert_eq!(status, 422, "{query}: {body}");
    }
    let default = list(&server, &ada.cookie, "").await;
    assert_eq!(default["notifications"].as_array().unwrap().len(), 7);
    assert!(default["next_cursor"].is_null());
}

async fn the_alert_stream_carries_each_new_notification(backend: Backend) {
    let server = TestServer::start(backend).await;
    let ada = Member::join(&server, "ada@example.com", "user").await;
    let bob = Member::join(&server, "bob@example.com", "user").await;
    let post_id = post(&server, &ada.cookie, json!({"title": "T", "content": "c"})).await;
    let mut stream = AlertStream::open(&server, &ada.cookie, None).await;
    let bobs = reply(&server, &bob.cookie, &post_id, None, "an answer").await;
    let event = stream.next().await.expect("an event");
    assert_eq!(event.name, "notification");
    assert_eq!(event.data["type"], "reply");
    assert_eq!(event.data["reply_id"], bobs);
    assert_eq!(event.data, items(&server, &ada.cookie).await[0]);
    react(&server, &bob.cookie, &format!("posts/{post_id}"), "👍").await;
    let event = stream.next().await.expect("an event");
    assert_eq!(
        (event.name.as_str(), event.data["type"].clone()),
        ("notification", json!("reaction"))
    );
}

async fn preferences_have_defaults_and_change_only_what_is_named(backend: Backend) {
    let server = TestServer::start(backend).await;
    let ada = Member::join(&server, "ada@example.com", "user").await;
    let defaults = server
        .get_json_as("/api/notifications/preferences", &ada.cookie)
        .await;
    assert_eq!(
        defaults["email"],
        json!({"reply": "daily", "mention": "daily", "reaction": "off", "follow": "off",
               "moderation": "immediate", "warning": "immediate", "registration": "immediate",
               "appeal": "immediate"})
    );
    assert_eq!(
        defaults["push"],
        json!({"reply": true, "mention": true, "reaction": true, "follow": true,
               "moderation": true, "warning": true, "registration": true, "appeal": true})
    );
    let (status, changed) = call(
        &server,
        "PUT",
        "/api/notifications/preferences",
        Some(&ada.cookie),
        Some(json!({"email": {"reaction": "immediate"}, "push": {"reply": false}})),
    )
    .await;
    assert_eq!(status, 200, "{changed}");
    let (status, again) = call(
        &server,
        "PUT",
        "/api/notifications/preferences",
        Some(&ada.cookie),
        Some(json!({"email": {"mention": "off"}})),
    )
    .await;
    assert_eq!(status, 200, "{again}");
    let now = server
        .get_json_as("/api/notifications/preferences", &ada.cookie)
        .await;
    assert_eq!(now, again);
    let mut expected = defaults.clone();
    expected["email"]["reaction"] = json!("immediate");
    expected["email"]["mention"] = json!("off");
    expected["push"]["reply"] = json!(false);
    assert_eq!(now, expected);
    for (body, field) in [
        (json!({"email": {"likes": "off"}}), "email.likes"),
        (json!({"email": {"reply": "weekly"}}), "email.reply"),
        (json!({"push": {"reply": "yes"}}), "push.reply"),
    ] {
        let (status, answer) = call(
            &server,
            "PUT",
            "/api/notifications/preferences",
            Some(&ada.cookie),
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, 422, "{body}: {answer}");
        assert!(answer.to_string().contains(field), "{body}: {answer}");
    }
    let (status, _) = call(&server, "GET", "/api/notifications/preferences", None, None).await;
    assert_eq!(status, 401);
}

/// The value of header `name` in a mail as sent.
fn header(mail: &SunkMail, name: &str) -> Option<String> {
    let prefix = format!("{}:", name.to_ascii_lowercase());
    let head = mail.data.split("\r\n\r\n").next().unwrap_or("");
    // Folded lines continue a header.
    let unfolded = head.replace("\r\n ", " ").replace("\r\n\t", " ");
    unfolded
        .lines()
        .find(|line| line.to_ascii_lowercase().starts_with(&prefix))
        .map(|line| line[prefix.len()..].trim().to_owned())
}

/// Waits for `count` mails to `address`.
async fn mails_to(sink: &SmtpSink, address: &str, count: usize) -> Vec<SunkMail> {
    eventually!(format!("{count} mails to {address}"), {
        let to: Vec<SunkMail> = sink
            .mails()
            .into_iter()
            .filter(|mail| mail.recipients.iter().any(|to| to == address))
            .collect();
        (to.len() >= count).then_some(to)
    })
}

/// A POST of `url` as a mail client sends it (RFC 8058), no session.
async fn one_click(server: &TestServer, url: &str) -> (u16, Value) {
    let path = &url[url.find("/api/").expect("an API URL")..];
    let response = server
        .client
        .post(server.url(path))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("List-Unsubscribe=One-Click")
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn immediate_mail_carries_a_one_click_unsubscribe_bound_to_member_and_type(backend: Backend) {
    let sink = SmtpSink::start().await;
    let server = TestServer::start_with(backend, &[("PLAZA_SMTP_URL", &sink.url())]).await;
    let ada = Member::join(&server, "ada@example.com", "user").await;
    let bob = Member::join(&server, "bob@example.com", "user").await;
    let cy = Member::join(&server, "cy@example.com", "user").await;
    verify_email(&server, &ada).await;
    server
        .sql(&format!(
            "UPDATE users SET email_verified_at = NULL WHERE id = {}",
            cy.id
        ))
        .await;
    for member in [&ada, &cy] {
        let (status, _) = call(
            &server,
            "PUT",
            "/api/notifications/preferences",
            Some(&member.cookie),
            Some(json!({"email": {"reply": "immediate"}})),
        )
        .await;
        assert_eq!(status, 200);
    }
    // Cy's address is not verified: Cy is notified but mailed nothing.
    let cys_post = post(&server, &cy.cookie, json!({"title": "C", "content": "c"})).await;
    reply(&server, &bob.cookie, &cys_post, None, "to Cy").await;
    let post_id = post(&server, &ada.cookie, json!({"title": "T", "content": "c"})).await;
    reply(&server, &bob.cookie, &post_id, None, "an answer").await;
    let mail = mails_to(&sink, "ada@example.com", 1).await.remove(0);
    assert!(
        mail.text().contains("bob replied to you."),
        "{}",
        mail.text()
    );
    let unsubscribe = header(&mail, "List-Unsubscribe").expect("List-Unsubscribe");
    assert_eq!(
        header(&mail, "List-Unsubscribe-Post").as_deref(),
        Some("List-Unsubscribe=One-Click")
    );
    let url = unsubscribe
        .trim_matches(|c| c == '<' || c == '>')
        .to_owned();
    assert!(url.starts_with("http"), "{url}");
    let token = url.split("token=").nth(1).unwrap().to_owned();
    let page = format!("/unsubscribe?token={token}");
    assert!(
        decoded_text(&mail.data).contains(&page),
        "the body links the unsubscribe page"
    );
    assert_eq!(items(&server, &cy.cookie).await.len(), 1);
    assert!(
        sink.mails()
            .iter()
            .all(|mail| !mail.recipients.iter().any(|to| to == "cy@example.com")),
        "an unverified address is never mailed"
    );

    // The token is bound to Ada and to `reply`: changed to another member
    // or type, it is refused.
    let (user, rest) = token.split_once('.').unwrap();
    for forged in [
        format!("{}.{rest}", bob.id),
        format!("{user}.{}", rest.replacen("reply", "mention", 1)),
        format!("{user}.{rest}x"),
    ] {
        let (status, body) = one_click(
            &server,
            &format!("/api/notifications/unsubscribe?token={forged}"),
        )
        .await;
        assert_eq!(status, 422, "{forged}: {body}");
        let shown = server.get(&format!("/unsubscribe?token={forged}")).await;
        assert_eq!(shown.status().as_u16(), 422, "{forged}");
        assert!(
            shown
                .text()
                .await
                .unwrap()
                .contains("data-error=\"invalid_token\"")
        );
    }

    // The body's link opens a page that changes nothing until its button
    // is pressed.
    let shown = server.get(&page).await;
    assert_eq!(shown.status().as_u16(), 200);
    assert_eq!(shown.headers()["cache-control"], "no-store");
    let html = shown.text().await.unwrap();
    assert!(html.contains("about answers"), "{html}");
    assert!(html.contains(&format!("action=\"{page}\"")), "{html}");
    let preferences = server
        .get_json_as("/api/notifications/preferences", &ada.cookie)
        .await;
    assert_eq!(preferences["email"]["reply"], "immediate");
    let pressed = server.client.post(server.url(&page)).send().await.unwrap();
    assert_eq!(pressed.status().as_u16(), 200);
    assert!(
        pressed
            .text()
            .await
            .unwrap()
            .contains("data-notice=\"unsubscribed\"")
    );
    let preferences = server
        .get_json_as("/api/notifications/preferences", &ada.cookie)
        .await;
    assert_eq!(preferences["email"]["reply"], "off");
    call(
        &server,
        "PUT",
        "/api/notifications/preferences",
        Some(&ada.cookie),
        Some(json!({"email": {"reply": "immediate"}})),
    )
    .await;

    // The header's URL turns them off with one POST (RFC 8058).
    let (status, body) = one_click(&server, &url).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["types"], json!(["reply"]));
    let preferences = server
        .get_json_as("/api/notifications/preferences", &ada.cookie)
        .await;
    assert_eq!(preferences["email"]["reply"], "off");
    assert_eq!(preferences["email"]["mention"], "daily");
    let bobs = server
        .get_json_as("/api/notifications/preferences", &bob.cookie)
        .await;
    assert_eq!(bobs["email"]["reply"], "daily");
}

async fn the_daily_digest_lists_what_waited_unread(backend: Backend) {
    let sink = SmtpSink::start().await;
    let now_hour = (time::OffsetDateTime::now_utc().hour() + 12) % 24;
    let hour = now_hour.to_string();
    let server = TestServer::start_with(
        backend,
        &[
            ("PLAZA_SMTP_URL", &sink.url()),
            ("PLAZA_DIGEST_HOUR_UTC", &hour),
        ],
    )
    .await;
    let ada = Member::join(&server, "ada@example.com", "user").await;
    let bob = Member::join(&server, "bob@example.com", "user").await;
    verify_email(&server, &ada).await;
    let ada_name = username(&ada);
    let post_id = post(&server, &ada.cookie, json!({"title": "T", "content": "c"})).await;
    let bobs_post = post(&server, &bob.cookie, json!({"title": "B", "content": "c"})).await;
    reply(&server, &bob.cookie, &post_id, None, "first answer").await;
    reply(&server, &bob.cookie, &post_id, None, "second answer").await;
    reply(
        &server,
        &bob.cookie,
        &bobs_post,
        None,
        &format!("hey @{ada_name}"),
    )
    .await;
    let told = items(&server, &ada.cookie).await;
    let (status, _) = call(
        &server,
        "POST",
        "/api/notifications/read",
        Some(&ada.cookie),
        Some(json!({"ids": [told[2]["id"]]})),
    )
    .await;
    assert_eq!(status, 204);
    // Carol is in the same batch; she turns reply mail off after her reply
    // waited, so her digest leaves it out.
    let carol = Member::join(&server, "carol@example.com", "user").await;
    verify_email(&server, &carol).await;
    let carols_post = post(
        &server,
        &carol.cookie,
        json!({"title": "C", "content": "c"}),
    )
    .await;
    reply(
        &server,
        &bob.cookie,
        &carols_post,
        None,
        "an answer for carol",
    )
    .await;
    reply(
        &server,
        &bob.cookie,
        &bobs_post,
        None,
        &format!("and @{}", username(&carol)),
    )
    .await;
    let (status, body) = call(
        &server,
        "PUT",
        "/api/notifications/preferences",
        Some(&carol.cookie),
        Some(json!({"email": {"reply": "off"}})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // These waited since yesterday, so the last digest hour passed since;
    // the one written now waits for the next.
    server
        .sql("UPDATE notifications SET created_at = created_at - 90000000")
        .await;
    reply(&server, &bob.cookie, &post_id, None, "third answer").await;
    let digest = mails_to(&sink, "ada@example.com", 1).await.remove(0);
    let text = digest.text();
    let subject = header(&digest, "Subject").expect("a subject");
    assert!(subject.contains("2 new notifications"), "{subject}");
    // The one unread answer, in the text part and in the HTML part.
    assert_eq!(text.matches("replied to you").count(), 2, "{text}");
    assert!(text.contains("mentioned you"), "{text}");
    let unsubscribe = header(&digest, "List-Unsubscribe").expect("List-Unsubscribe");
    assert!(unsubscribe.contains("reply-mention") || unsubscribe.contains("mention-reply"));
    assert!(header(&digest, "List-Unsubscribe-Post").is_some());
    let waiting = server
        .sql_count("SELECT COUNT(*) FROM notifications WHERE mail_state = 'daily'")
        .await;
    assert_eq!(waiting, 1, "the newest waits for tomorrow's digest");
    let carols = mails_to(&sink, "carol@example.com", 1).await.remove(0);
    let text = carols.text();
    assert!(text.contains("mentioned you"), "{text}");
    assert!(!text.contains("replied to you"), "{text}");
    assert_eq!(sink.mails().len(), 2, "one digest each");
}

/// A browser's subscription keys: its private key, and the body fields.
fn browser_keys() -> (p256::SecretKey, [u8; 16], Value) {
    let secret = p256::SecretKey::random(&mut p256::elliptic_curve::rand_core::OsRng);
    let auth: [u8; 16] = rand_bytes();
    let keys = json!({
        "p256dh": URL_SAFE_NO_PAD.encode(secret.public_key().to_encoded_point(false).as_bytes()),
        "auth": URL_SAFE_NO_PAD.encode(auth),
    });
    (secret, auth, keys)
}

fn rand_bytes() -> [u8; 16] {
    use p256::elliptic_curve::rand_core::RngCore;
    let mut bytes = [0u8; 16];
    p256::elliptic_curve::rand_core::OsRng.fill_bytes(&mut bytes);
    bytes
}

async fn subscribe(server: &TestServer, cookie: Option<&str>, body: Value) -> (u16, Value) {
    call(
        server,
        "POST",
        "/api/notifications/push/subscriptions",
        cookie,
        Some(body),
    )
    .await
}

async fn push_subscriptions_take_public_https_endpoints_only(backend: Backend) {
    let server = TestServer::start(backend).await;
    let ada = Member::join(&server, "ada@example.com", "user").await;
    let (status, key) = call(&server, "GET", "/api/notifications/push/key", None, None).await;
    assert_eq!(status, 200);
    let point = URL_SAFE_NO_PAD
        .decode(key["public_key"].as_str().unwrap())
        .unwrap();
    assert_eq!(
        (point.len(), point[0]),
        (65, 4),
        "an uncompressed P-256 point"
    );
    assert!(p256::PublicKey::from_sec1_bytes(&point).is_ok());
    assert!(server.data_dir.path().join("vapid-key").exists());
    let (_, _, keys) = browser_keys();
    for endpoint in [
        "http://push.example.com/send",
        "https://127.0.0.1/send",
        "https://10.1.2.3/send",
        "https://[::1]/send",
        "not a URL",
    ] {
        let (status, body) = subscribe(
            &server,
            Some(&ada.cookie),
            json!({"endpoint": endpoint, "keys": keys}),
        )
        .await;
        assert_eq!(status, 422, "{endpoint}: {body}");
        assert!(body.to_string().contains("endpoint"), "{body}");
    }
    let public = json!({"endpoint": "https://8.8.8.8/push/abc", "keys": keys});
    let (status, body) = subscribe(&server, None, public.clone()).await;
    assert_eq!(status, 401, "{body}");
    for (bad_keys, field) in [
        (
            json!({"p256dh": "AAAA", "auth": keys["auth"]}),
            "keys.p256dh",
        ),
        (
            json!({"p256dh": keys["p256dh"], "auth": URL_SAFE_NO_PAD.encode([1u8; 8])}),
            "keys.auth",
        ),
    ] {
        let (status, body) = subscribe(
            &server,
            Some(&ada.cookie),
            json!({"endpoint": "https://8.8.8.8/push/abc", "keys": bad_keys}),
        )
        .await;
        assert_eq!(status, 422, "{body}");
        assert!(body.to_string().contains(field), "{body}");
    }
    let (status, created) = subscribe(&server, Some(&ada.cookie), public).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap();
    let bob = Member::join(&server, "bob@example.com", "user").await;
    let path = format!("/api/notifications/push/subscriptions/{id}");
    let (status, _) = call(&server, "DELETE", &path, Some(&bob.cookie), None).await;
    assert_eq!(status, 404, "another member's subscription");
    let (status, _) = call(&server, "DELETE", &path, Some(&ada.cookie), None).await;
    assert_eq!(status, 204);
    let (status, _) = call(&server, "DELETE", &path, Some(&ada.cookie), None).await;
    assert_eq!(status, 404);
}

/// What the test's push receiver got.
#[derive(Debug, Clone)]
struct Pushed {
    path: String,
    headers: axum::http::HeaderMap,
    body: Vec<u8>,
}

/// The statuses queued for each path of the receiver.
type Answers = Vec<(String, Vec<u16>)>;

/// A push service on a loopback port: it records every request and answers
/// each path with the statuses queued for it, then 201.
struct Receiver {
    base: String,
    got: Arc<Mutex<Vec<Pushed>>>,
    _task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    async fn start(answers: Vec<(&'static str, Vec<u16>)>) -> Receiver {
        let got: Arc<Mutex<Vec<Pushed>>> = Arc::default();
        let queued: Arc<Mutex<Answers>> = Arc::new(Mutex::new(
            answers
                .into_iter()
                .map(|(path, statuses)| (path.to_owned(), statuses))
                .collect(),
        ));
        let recorded = got.clone();
        let app = axum::Router::new().fallback(
            move |uri: axum::http::Uri, headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let recorded = recorded.clone();
                let queued = queued.clone();
                async move {
                    let path = uri.path().to_owned();
                    recorded.lock().unwrap().push(Pushed {
                        path: path.clone(),
                        headers,
                        body: body.to_vec(),
                    });
                    let mut queued = queued.lock().unwrap();
                    let status = queued
                        .iter_mut()
                        .find(|(queued_path, statuses)| {
                            *queued_path == path && !statuses.is_empty()
                        })
                        .map_or(201, |(_, statuses)| statuses.remove(0));
                    axum::http::StatusCode::from_u16(status).unwrap()
                }
            },
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Receiver {
            base,
            got,
            _task: task,
        }
    }

    fn pushes_to(&self, path: &str) -> Vec<Pushed> {
        self.got
            .lock()
            .unwrap()
            .iter()
            .filter(|pushed| pushed.path == path)
            .cloned()
            .collect()
    }
}

#[derive(serde::Deserialize)]
struct VapidClaims {
    aud: String,
    sub: String,
    exp: i64,
}

async fn pushes_reach_the_endpoint_encrypted_and_signed_and_answers_are_obeyed(backend: Backend) {
    let receiver = Receiver::start(vec![("/flaky", vec![503]), ("/gone", vec![410])]).await;
    let server = TestServer::start_with(backend, &[("PLAZA_PUSH_ALLOW_INSECURE", "true")]).await;
    let ada = Member::join(&server, "ada@example.com", "user").await;
    let bob = Member::join(&server, "bob@example.com", "user").await;
    let (secret, auth, keys) = browser_keys();
    for path in ["/ok", "/flaky", "/gone"] {
        let endpoint = format!("{}{path}", receiver.base);
        let (status, body) = subscribe(
            &server,
            Some(&ada.cookie),
            json!({"endpoint": endpoint, "keys": keys}),
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }
    let post_id = post(&server, &ada.cookie, json!({"title": "T", "content": "c"})).await;
    reply(&server, &bob.cookie, &post_id, None, "an answer").await;
    let item = items(&server, &ada.cookie).await.remove(0);

    let pushed = eventually!("a push to /ok", receiver.pushes_to("/ok").pop());
    let header = |name: &str| pushed.headers[name].to_str().unwrap().to_owned();
    assert_eq!(header("content-encoding"), "aes128gcm");
    assert!(header("ttl").parse::<u64>().unwrap() > 0);
    let opened = web_push_native::decrypt(
        pushed.body.clone(),
        &secret,
        web_push_native::Auth::from_slice(&auth),
    )
    .expect("the payload decrypts with the subscription's keys");
    let payload: Value = serde_json::from_slice(&opened).unwrap();
    assert_eq!(payload, item);

    // `vapid t=<JWT>, k=<key>`: the JWT is ES256 by the key the key route
    // gives, for the endpoint's origin.
    let authorization = header("authorization");
    let rest = authorization
        .strip_prefix("vapid t=")
        .expect("vapid scheme");
    let (jwt, k) = rest.split_once(", k=").expect("t and k");
    let (_, key) = call(&server, "GET", "/api/notifications/push/key", None, None).await;
    assert_eq!(k, key["public_key"].as_str().unwrap());
    let point = URL_SAFE_NO_PAD.decode(k).unwrap();
    let decoding = jsonwebtoken::DecodingKey::from_ec_components(
        &URL_SAFE_NO_PAD.encode(&point[1..33]),
        &URL_SAFE_NO_PAD.encode(&point[33..65]),
    )
    .unwrap();
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
    validation.set_audience(&[receiver.base.as_str()]);
    let claims = jsonwebtoken::decode::<VapidClaims>(jwt, &decoding, &validation)
        .expect("a valid VAPID JWT")
        .claims;
    assert_eq!(claims.aud, receiver.base);
    assert_eq!(claims.sub, "mailto:no-reply@localhost");
    assert!(claims.exp > time::OffsetDateTime::now_utc().unix_timestamp());

    // 503 is retried; 410 deletes the subscription.
    let flaky = eventually!("a retry to /flaky", {
        let got = receiver.pushes_to("/flaky");
        (got.len() >= 2).then_some(got)
    });
    assert_eq!(flaky[0].body.len(), flaky[1].body.len());
    eventually!("the gone subscription deleted", {
        let left = server
            .sql_count("SELECT COUNT(*) FROM push_subscriptions")
            .await;
        (left == 2).then_some(())
    });
    eventually!("the outbox emptied", {
        let left = server
            .sql_count("SELECT COUNT(*) FROM push_deliveries")
            .await;
        (left == 0).then_some(())
    });
    assert_eq!(receiver.pushes_to("/gone").len(), 1);
    assert_eq!(receiver.pushes_to("/ok").len(), 1);

    // Push turned off for replies: the next reply is pushed nowhere.
    let (status, _) = call(
        &server,
        "PUT",
        "/api/notifications/preferences",
        Some(&ada.cookie),
        Some(json!({"push": {"reply": false}})),
    )
    .await;
    assert_eq!(status, 200);
    reply(&server, &bob.cookie, &post_id, None, "another").await;
    assert_eq!(
        server
            .sql_count("SELECT COUNT(*) FROM push_deliveries")
            .await,
        0,
        "nothing queued"
    );
}

/// The one rule reads members' relations: a member who mutes another is
/// not told of their answers, until the mute ends; one who blocks another
/// is not told of their reactions (a block refuses the answer itself).
async fn nobody_is_notified_of_a_member_they_mute_or_block(backend: Backend) {
    let server = TestServer::start(backend).await;
    let ada = Member::join(&server, "ada@example.com", "user").await;
    let bob = Member::join(&server, "bob@example.com", "user").await;
    let post_id = post(&server, &ada.cookie, json!({"title": "T", "content": "c"})).await;
    let relate = |method: &'static str, path: String| {
        let (server, cookie) = (&server, ada.cookie.clone());
        async move {
            let (status, body) = call(server, method, &path, Some(&cookie), None).await;
            assert_eq!(status, 204, "{method} {path}: {body}");
        }
    };

    relate("PUT", format!("/api/users/{}/mute", bob.id)).await;
    reply(&server, &bob.cookie, &post_id, None, "while muted").await;
    assert_eq!(
        items(&server, &ada.cookie).await.len(),
        0,
        "muted: nobody told"
    );
    relate("DELETE", format!("/api/users/{}/mute", bob.id)).await;
    reply(&server, &bob.cookie, &post_id, None, "after the mute").await;
    let told = items(&server, &ada.cookie).await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["type"], "reply");

    // A block made by the member to notify: the blocked member's reaction
    // is refused, and nothing new is told.
    let bobs_post = post(&server, &bob.cookie, json!({"title": "B", "content": "b"})).await;
    relate("PUT", format!("/api/users/{}/block", bob.id)).await;
    let encoded: String = url::form_urlencoded::byte_serialize("👍".as_bytes()).collect();
    let (status, _) = call(
        &server,
        "PUT",
        &format!("/api/posts/{post_id}/reactions/{encoded}"),
        Some(&bob.cookie),
        None,
    )
    .await;
    assert_eq!(status, 403);
    // While the block stands, what he caused before is out of her list.
    assert_eq!(items(&server, &ada.cookie).await.len(), 0);
    // Ada reacting to Bob's post across her own block is refused too.
    let (status, _) = call(
        &server,
        "PUT",
        &format!("/api/posts/{bobs_post}/reactions/{encoded}"),
        Some(&ada.cookie),
        None,
    )
    .await;
    assert_eq!(status, 403);
    assert_eq!(items(&server, &bob.cookie).await.len(), 0);
    // Lifted, the block lets the earlier one show again, read; nothing
    // new was written meanwhile.
    relate("DELETE", format!("/api/users/{}/block", bob.id)).await;
    let told = items(&server, &ada.cookie).await;
    assert_eq!(
        (told.len(), told.first().map(|item| item["read"].clone())),
        (1, Some(json!(true))),
        "{told:?}"
    );
}

/// A new follow tells the member followed, once; following again while
/// the follow stands tells nothing more.
async fn a_follow_notifies_the_member_followed(backend: Backend) {
    let server = TestServer::start(backend).await;
    let ada = Member::join(&server, "ada@example.com", "user").await;
    let bob = Member::join(&server, "bob@example.com", "user").await;
    for _ in 0..2 {
        let (status, body) = call(
            &server,
            "PUT",
            &format!("/api/users/{}/follow", ada.id),
            Some(&bob.cookie),
            None,
        )
        .await;
        assert_eq!(status, 204, "{body}");
    }
    let told = items(&server, &ada.cookie).await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["type"], "follow");
    assert_eq!(told[0]["actor"]["id"], bob.id.to_string());
    assert!(told[0]["post_id"].is_null() && told[0]["reply_id"].is_null());
    assert_eq!(items(&server, &bob.cookie).await.len(), 0);
}

async fn the_unread_count_is_read_with_the_session(backend: Backend) {
    let server = TestServer::start_with_statement_log(backend).await;
    let ada = Member::join(&server, "ada@example.com", "user").await;
    let bob = Member::join(&server, "bob@example.com", "user").await;
    let post_id = post(&server, &ada.cookie, json!({"title": "Hi", "content": "x"})).await;
    reply(&server, &bob.cookie, &post_id, None, "one").await;
    reply(&server, &bob.cookie, &post_id, None, "two").await;
    assert_eq!(unread_count(&server, &ada.cookie).await, 2);
    let statements = server
        .statements_of("/api/notifications/unread-count", &ada.cookie, "unread-1")
        .await;
    assert!(
        statements.is_empty(),
        "the count comes with the session, not from a statement of the route's own: {statements:#?}"
    );
    let (status, _) = call(
        &server,
        "POST",
        "/api/notifications/read",
        Some(&ada.cookie),
        Some(json!({"all": true})),
    )
    .await;
    assert_eq!(status, 204);
    assert_eq!(
        unread_count(&server, &ada.cookie).await,
        0,
        "a read counts from the next request"
    );
    assert_eq!(list(&server, &ada.cookie, "").await["unread_count"], 0);
}
