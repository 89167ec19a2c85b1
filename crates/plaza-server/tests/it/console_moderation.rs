//! Graduated moderation in the operator console through HTTP, as a browser
//! without scripts uses it: the site's rules edited, reordered and removed
//! by an administrator; a moderator warning, silencing and lifting the
//! silence of a member from the member's page; appeals shown beside the
//! action they contest and decided by someone other than who acted; and
//! reported members waiting in the moderation queue. Each form's effect is
//! checked where members and the API see it, and its audit entry names
//! the acting principal on the console surface.

use serde_json::{Value, json};

use crate::common::actors::Member;
use crate::common::{Backend, TestServer, call, member, post};
use crate::console::{form_page, open, submit};

on_both_databases!(
    an_administrator_edits_orders_and_removes_the_rules_from_the_console,
    a_moderator_warns_silences_and_lifts_from_a_members_page,
    appeals_show_the_action_and_are_decided_by_someone_else,
    reported_members_wait_in_the_moderation_queue,
);

/// The site's rules as members read them: (id, title), in order.
async fn public_rules(server: &TestServer) -> Vec<(String, String)> {
    let (status, body) = call(server, "GET", "/api/rules", None, None).await;
    assert_eq!(status, 200, "{body}");
    body["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rule| {
            (
                rule["id"].as_str().unwrap().to_owned(),
                rule["title"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Audit entries of `action` on the console surface naming `actor_id`.
async fn console_entries(server: &TestServer, action: &str, actor_id: i64) -> i64 {
    server
        .sql_count(&format!(
            "SELECT COUNT(*) FROM audit_log WHERE action = '{action}' \
             AND actor_id = {actor_id} AND surface = 'console'"
        ))
        .await
}

/// Posts `fields` (with the CSRF token) to `path`: (status, Location, body).
async fn post_form(
    server: &TestServer,
    path: &str,
    session: &([String; 2], String),
    fields: &[(&str, &str)],
) -> (u16, String, String) {
    let (cookies, token) = session;
    let mut all = vec![("csrfToken", token.as_str())];
    all.extend_from_slice(fields);
    submit(
        server,
        path,
        &[cookies[0].as_str(), cookies[1].as_str()],
        &all,
        &[],
    )
    .await
}

async fn an_administrator_edits_orders_and_removes_the_rules_from_the_console(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (admin_id, admin) = member(&server, "admin@example.com", "admin").await;
    let (_, moderator) = member(&server, "moderator@example.com", "moderator").await;
    let (someone, _) = member(&server, "someone@example.com", "user").await;
    let (status, _, page) = open(&server, "/admin/rules", Some(&admin)).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("href=\"/admin/rules\""), "in the nav: {page}");
    let session = form_page(&server, "/admin/rules", &admin).await;

    // The blank row adds a rule, one save at a time.
    let (status, location, body) = post_form(
        &server,
        "/admin/rules",
        &session,
        &[("title-0", "Be kind"), ("description-0", "No insults.")],
    )
    .await;
    assert_eq!(status, 303, "{body}");
    assert_eq!(location, "/admin/rules?done=saved");
    let rules = public_rules(&server).await;
    assert_eq!(rules.len(), 1, "{rules:?}");
    let kind = rules[0].0.clone();
    let (_, _, page) = open(&server, &location, Some(&admin)).await;
    assert!(page.contains("The rules are saved."), "{page}");
    assert!(page.contains("value=\"Be kind\""), "{page}");
    assert!(page.contains("name=\"title-1\""), "a blank row: {page}");
    let (status, _, _) = post_form(
        &server,
        "/admin/rules",
        &session,
        &[
            ("id-0", &kind),
            ("position-0", "1"),
            ("title-0", "Be kind"),
            ("description-0", "No insults."),
            ("position-1", "2"),
            ("title-1", "No spam"),
            ("description-1", ""),
        ],
    )
    .await;
    assert_eq!(status, 303);
    let rules = public_rules(&server).await;
    let titles: Vec<&str> = rules.iter().map(|(_, title)| title.as_str()).collect();
    assert_eq!(titles, ["Be kind", "No spam"]);
    let spam = rules[1].0.clone();

    // Reordered by position, and one edited: the ids stay.
    let (status, _, body) = post_form(
        &server,
        "/admin/rules",
        &session,
        &[
            ("id-0", &kind),
            ("position-0", "2"),
            ("title-0", "Be kind, always"),
            ("description-0", "No insults."),
            ("id-1", &spam),
            ("position-1", "1"),
            ("title-1", "No spam"),
            ("description-1", ""),
        ],
    )
    .await;
    assert_eq!(status, 303, "{body}");
    assert_eq!(
        public_rules(&server).await,
        [
            (spam.clone(), "No spam".to_owned()),
            (kind.clone(), "Be kind, always".to_owned())
        ]
    );

    // A blank title is refused as the API refuses it, changing nothing.
    let (status, _, body) = post_form(
        &server,
        "/admin/rules",
        &session,
        &[
            ("id-0", &spam),
            ("title-0", " "),
            ("id-1", &kind),
            ("title-1", "Be kind"),
        ],
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("title"), "the page names the field: {body}");
    assert_eq!(public_rules(&server).await.len(), 2);

    // A ticked rule is removed.
    let (status, _, _) = post_form(
        &server,
        "/admin/rules",
        &session,
        &[
            ("id-0", &spam),
            ("title-0", "No spam"),
            ("remove-0", "true"),
            ("id-1", &kind),
            ("title-1", "Be kind, always"),
        ],
    )
    .await;
    assert_eq!(status, 303);
    assert_eq!(
        public_rules(&server).await,
        [(kind.clone(), "Be kind, always".to_owned())]
    );
    assert_eq!(
        console_entries(&server, "rules.update", admin_id).await,
        4,
        "each save is audited once, naming the administrator"
    );

    // A moderator reads the rules but changes nothing.
    let (status, _, page) = open(&server, "/admin/rules", Some(&moderator)).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Be kind, always"), "{page}");
    assert!(!page.contains("action=\"/admin/rules\""), "no form: {page}");
    let moderating = form_page(&server, &format!("/admin/users/{someone}"), &moderator).await;
    let (status, _, body) = post_form(
        &server,
        "/admin/rules",
        &moderating,
        &[("id-0", &kind), ("title-0", "Mine now")],
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("<html"), "errors are console pages: {body}");
    assert_eq!(public_rules(&server).await[0].1, "Be kind, always");
}

async fn a_moderator_warns_silences_and_lifts_from_a_members_page(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (moderator_id, moderator) = member(&server, "moderator@example.com", "moderator").await;
    let (admin_id, admin) = member(&server, "admin@example.com", "admin").await;
    let loud = Member::join(&server, "loud@example.com", "user").await;
    let session = form_page(&server, "/admin/rules", &admin).await;
    let (status, _, _) =
        post_form(&server, "/admin/rules", &session, &[("title-0", "Be kind")]).await;
    assert_eq!(status, 303);
    let rule = public_rules(&server).await[0].0.clone();
    let page_path = format!("/admin/users/{}", loud.id);

    let (status, _, page) = open(&server, &page_path, Some(&moderator)).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("<dd id=\"warning-count\">0</dd>"), "{page}");
    assert!(page.contains("<dd id=\"silenced-until\">no</dd>"), "{page}");
    assert!(
        !page.contains("loud@example.com"),
        "a moderator sees no email: {page}"
    );
    assert!(!page.contains("/ban\""), "nor the ban form: {page}");
    assert!(
        page.contains(&format!("name=\"ruleIds\" value=\"{rule}\"")),
        "{page}"
    );
    let session = form_page(&server, &page_path, &moderator).await;
    let warn_path = format!("{page_path}/warnings");

    let (status, _, body) =
        post_form(&server, &warn_path, &session, &[("reason", "Too short")]).await;
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("reason"), "{body}");
    let (status, _, body) = post_form(
        &server,
        &warn_path,
        &session,
        &[("reason", "Please mind the rules."), ("ruleIds", "999999")],
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("rule_ids"), "{body}");
    let (status, location, body) = post_form(
        &server,
        &warn_path,
        &session,
        &[("reason", "Please mind the rules."), ("ruleIds", &rule)],
    )
    .await;
    assert_eq!(status, 303, "{body}");
    assert_eq!(location, format!("{page_path}?done=warned"));
    let (_, _, page) = open(&server, &location, Some(&moderator)).await;
    assert!(page.contains("<dd id=\"warning-count\">1</dd>"), "{page}");
    assert!(page.contains("Please mind the rules."), "{page}");
    assert!(page.contains("rules: Be kind"), "{page}");
    let (_, told) = call(
        &server,
        "GET",
        "/api/notifications?limit=100",
        Some(&loud.cookie),
        None,
    )
    .await;
    let warnings: Vec<&Value> = told["notifications"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "warning")
        .collect();
    assert_eq!(warnings.len(), 1, "{told}");
    assert_eq!(console_entries(&server, "user.warn", moderator_id).await, 1);

    let silence_path = format!("{page_path}/silence");
    let (status, _, body) =
        post_form(&server, &silence_path, &session, &[("duration", "1d")]).await;
    assert_eq!(status, 422, "a silence needs a reason: {body}");
    let (status, _, body) = post_form(
        &server,
        &silence_path,
        &session,
        &[("duration", "forever"), ("reason", "Cooling off")],
    )
    .await;
    assert_eq!(status, 422, "{body}");
    let (status, location, body) = post_form(
        &server,
        &silence_path,
        &session,
        &[("duration", "1d"), ("reason", "Cooling off")],
    )
    .await;
    assert_eq!(status, 303, "{body}");
    assert_eq!(location, format!("{page_path}?done=silenced"));
    let (_, _, page) = open(&server, &location, Some(&moderator)).await;
    assert!(
        !page.contains("<dd id=\"silenced-until\">no</dd>"),
        "silenced: {page}"
    );
    assert!(page.contains("/unsilence\""), "the lift form: {page}");
    let held = post(
        &server,
        &loud.cookie,
        json!({"title": "Still here", "content": "Hello", "published": true}),
    )
    .await;
    let (status, own) = call(
        &server,
        "GET",
        &format!("/api/posts/{held}"),
        Some(&loud.cookie),
        None,
    )
    .await;
    assert_eq!(
        (status, own["status"].as_str()),
        (200, Some("pending")),
        "held: {own}"
    );
    assert_eq!(
        console_entries(&server, "user.silence", moderator_id).await,
        1
    );

    let unsilence_path = format!("{page_path}/unsilence");
    let (status, location, body) = post_form(
        &server,
        &unsilence_path,
        &session,
        &[("reason", "Calmer now")],
    )
    .await;
    assert_eq!(status, 303, "{body}");
    assert_eq!(location, format!("{page_path}?done=unsilenced"));
    let (_, _, page) = open(&server, &location, Some(&moderator)).await;
    assert!(page.contains("<dd id=\"silenced-until\">no</dd>"), "{page}");
    let (status, _, body) = post_form(&server, &unsilence_path, &session, &[]).await;
    assert_eq!(status, 409, "not silenced any more: {body}");
    assert_eq!(
        console_entries(&server, "user.unsilence", moderator_id).await,
        1
    );

    // Only members the moderator may discipline have a page for them.
    for path in [
        format!("/admin/users/{moderator_id}"),
        format!("/admin/users/{admin_id}"),
        "/admin/users".to_owned(),
    ] {
        let (status, _, page) = open(&server, &path, Some(&moderator)).await;
        assert_eq!(status, 403, "{path}: {page}");
    }
    let (status, _, body) = post_form(
        &server,
        &format!("/admin/users/{moderator_id}/warnings"),
        &session,
        &[("reason", "Warning myself, oddly.")],
    )
    .await;
    assert_eq!(status, 403, "{body}");
}

async fn appeals_show_the_action_and_are_decided_by_someone_else(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (first_id, first) = member(&server, "first@example.com", "moderator").await;
    let (second_id, second) = member(&server, "second@example.com", "moderator").await;
    let loud = Member::join(&server, "loud@example.com", "user").await;
    let page_path = format!("/admin/users/{}", loud.id);
    let first_forms = form_page(&server, &page_path, &first).await;
    let (status, _, _) = post_form(
        &server,
        &format!("{page_path}/warnings"),
        &first_forms,
        &[("reason", "Shouting in every thread.")],
    )
    .await;
    assert_eq!(status, 303);
    let (_, actions) = call(
        &server,
        "GET",
        "/api/me/moderation-actions",
        Some(&loud.cookie),
        None,
    )
    .await;
    let action_id = actions["actions"][0]["id"].as_str().unwrap().to_owned();
    let (status, appeal) = call(
        &server,
        "POST",
        "/api/me/appeals",
        Some(&loud.cookie),
        Some(json!({"moderation_action_id": action_id, "text": "I was quoting <someone> else."})),
    )
    .await;
    assert_eq!(status, 201, "{appeal}");
    let appeal_id = appeal["id"].as_str().unwrap().to_owned();
    let decide_path = format!("/admin/appeals/{appeal_id}");

    let (_, _, overview) = open(&server, "/admin/", Some(&first)).await;
    assert!(
        overview.contains("<strong>1</strong> open appeals"),
        "{overview}"
    );
    let (status, _, page) = open(&server, "/admin/appeals", Some(&first)).await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains(&format!("id=\"appeal-{appeal_id}\"")),
        "{page}"
    );
    assert!(
        page.contains("Shouting in every thread."),
        "the action: {page}"
    );
    assert!(
        page.contains("I was quoting &lt;someone&gt; else."),
        "the appeal, escaped: {page}"
    );
    assert!(page.contains("by first"), "who acted: {page}");
    assert!(page.contains("You took this action"), "{page}");
    assert!(
        !page.contains(&format!("action=\"{decide_path}\"")),
        "no form for who acted: {page}"
    );
    let (status, _, body) = post_form(
        &server,
        &decide_path,
        &first_forms,
        &[("decision", "reverse"), ("reason", "On reflection")],
    )
    .await;
    assert_eq!(status, 403, "who acted does not decide: {body}");
    assert!(body.contains("<html"), "a console page: {body}");

    let (_, _, page) = open(&server, "/admin/appeals", Some(&second)).await;
    assert!(
        page.contains(&format!("action=\"{decide_path}\"")),
        "{page}"
    );
    let second_forms = form_page(&server, "/admin/appeals", &second).await;
    let (status, _, body) = post_form(
        &server,
        &decide_path,
        &second_forms,
        &[("decision", "reverse")],
    )
    .await;
    assert_eq!(status, 422, "a decision needs a reason: {body}");
    let (status, location, body) = post_form(
        &server,
        &decide_path,
        &second_forms,
        &[("decision", "reverse"), ("reason", "Quoting is fine")],
    )
    .await;
    assert_eq!(status, 303, "{body}");
    assert_eq!(location, "/admin/appeals?done=reverse");
    let (_, _, page) = open(&server, &location, Some(&second)).await;
    assert!(page.contains("the action is reversed"), "{page}");
    assert!(
        !page.contains(&format!("id=\"appeal-{appeal_id}\"")),
        "no longer open: {page}"
    );
    let (_, _, page) = open(&server, "/admin/appeals?status=decided", Some(&second)).await;
    assert!(
        page.contains(&format!("id=\"appeal-{appeal_id}\"")),
        "{page}"
    );
    assert!(page.contains("Quoting is fine"), "{page}");
    assert!(page.contains("(reversed)"), "{page}");
    let (_, _, page) = open(&server, &page_path, Some(&second)).await;
    assert!(
        page.contains("<dd id=\"warning-count\">0</dd>"),
        "the warning is withdrawn: {page}"
    );
    let (_, told) = call(
        &server,
        "GET",
        "/api/notifications?limit=100",
        Some(&loud.cookie),
        None,
    )
    .await;
    assert!(
        told["notifications"]
            .as_array()
            .unwrap()
            .iter()
            .any(|item| item["type"] == "appeal"),
        "{told}"
    );
    assert_eq!(
        console_entries(&server, "appeal.decide", second_id).await,
        1
    );
    assert_eq!(console_entries(&server, "appeal.decide", first_id).await, 0);
    let (status, _, _) = open(&server, "/admin/appeals?status=maybe", Some(&second)).await;
    assert_eq!(status, 422);
}

async fn reported_members_wait_in_the_moderation_queue(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, moderator) = member(&server, "moderator@example.com", "moderator").await;
    let loud = Member::join(&server, "loud@example.com", "user").await;
    let reader = Member::join(&server, "reader@example.com", "user").await;
    let (status, body) = call(
        &server,
        "POST",
        &format!("/api/users/{}/report", loud.id),
        Some(&reader.cookie),
        Some(json!({"reason": "Spams <everyone>", "category": "spam"})),
    )
    .await;
    assert_eq!(status, 201, "{body}");

    let (_, _, overview) = open(&server, "/admin/", Some(&moderator)).await;
    assert!(
        overview.contains("<strong>1</strong> reported members waiting"),
        "{overview}"
    );
    let (status, _, page) = open(&server, "/admin/moderation", Some(&moderator)).await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains(&format!("id=\"member-{}\"", loud.id)),
        "{page}"
    );
    assert!(
        page.contains(&format!("href=\"/admin/users/{}\"", loud.id)),
        "a link to their page: {page}"
    );
    assert!(page.contains("Spams &lt;everyone&gt;"), "escaped: {page}");
    assert!(page.contains("(spam, user "), "{page}");
    let (_, _, held) = open(&server, "/admin/moderation?state=pending", Some(&moderator)).await;
    assert!(!held.contains("Reported members"), "{held}");

    // A warning from the member's page resolves the reports.
    let page_path = format!("/admin/users/{}", loud.id);
    let session = form_page(&server, &page_path, &moderator).await;
    let (status, _, _) = post_form(
        &server,
        &format!("{page_path}/warnings"),
        &session,
        &[("reason", "Stop the spam, please.")],
    )
    .await;
    assert_eq!(status, 303);
    let (_, _, page) = open(&server, "/admin/moderation", Some(&moderator)).await;
    assert!(
        !page.contains(&format!("id=\"member-{}\"", loud.id)),
        "{page}"
    );
    assert!(page.contains("No members are reported."), "{page}");
    let (_, _, overview) = open(&server, "/admin/", Some(&moderator)).await;
    assert!(
        overview.contains("<strong>0</strong> reported members waiting"),
        "{overview}"
    );
}
