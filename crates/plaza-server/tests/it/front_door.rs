//! The front door (DECISIONS.md "The front door"), through HTTP: the site
//! settings changed at run time by a super administrator and audited; each
//! registration mode (open, approval with its application, mails and the
//! administrators' notification, invite with uses, expiry, withdrawal and
//! the member rule, closed); email-domain blocks for sign-ups and provider
//! sign-ins; IP blocks of both severities through a trusted proxy, with
//! their exemptions and expiry; and both seen by another instance within
//! 5 s.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::fake_idp::{FakeIdp, location, provider_round_trip};
use crate::common::smtp_sink::SmtpSink;
use crate::common::{As, Backend, PASSWORD, TestServer, call, member};

on_both_databases!(
    site_settings_change_at_run_time_by_super_admins_only_and_are_audited,
    the_file_decides_until_an_admin_sets_the_site_settings,
    closed_mode_lets_only_admins_create_accounts,
    approval_mode_holds_sign_ups_until_an_admin_decides,
    invites_count_their_uses_expire_and_can_be_withdrawn,
    members_invite_when_allowed_and_seven_days_old,
    email_domain_blocks_refuse_sign_ups_at_the_domain_and_below,
    provider_sign_ins_create_no_account_at_a_blocked_domain_or_while_closed,
    ip_blocks_refuse_sign_ups_or_everything_through_a_trusted_proxy,
    ip_blocks_end_at_their_expiry,
);

on_postgres!(ip_blocks_and_settings_reach_another_instance_within_five_seconds);

const SETTINGS: &str = "/api/v1/admin/site-settings";

/// A request as `who` with an optional body: the status and the JSON body.
async fn send(
    server: &TestServer,
    who: As<'_>,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let response = server.send(who, method, path, body.as_ref()).await;
    let status = response.status().as_u16();
    let text = response.text().await.expect("a body");
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
    };
    (status, body)
}

/// A request from the client `address`, as a trusted proxy forwards it.
async fn from(
    server: &TestServer,
    address: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = server
        .client
        .request(method.parse().unwrap(), server.url(path))
        .header("x-forwarded-for", address);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let text = response.text().await.expect("a body");
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    (status, body)
}

/// A super administrator and their `admin:super` token.
fn super_admin(server: &TestServer) -> (i64, String) {
    let id = server.create_user("root@example.com", PASSWORD, "super_admin");
    (id, server.mint("root@example.com", "admin:super"))
}

/// Sets the site settings with the `admin:super` token `token`.
async fn set(server: &TestServer, token: &str, body: Value) -> Value {
    let (status, answer) = send(server, As::Token(token), "PUT", SETTINGS, Some(body)).await;
    assert_eq!(status, 200, "{answer}");
    answer["data"].clone()
}

/// A sign-up of `email` with `extra` fields: the status and body.
async fn sign_up(server: &TestServer, email: &str, extra: Value) -> (u16, Value) {
    let mut body = json!({"email": email, "password": PASSWORD});
    if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
        body.extend(extra);
    }
    call(server, "POST", "/api/users", None, Some(body)).await
}

/// The audit entries of `action`, newest first.
async fn audit(server: &TestServer, token: &str, action: &str) -> Vec<Value> {
    let (status, trail) = send(
        server,
        As::Token(token),
        "GET",
        &format!("/api/v1/admin/audit-logs?action={action}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{trail}");
    trail["data"].as_array().unwrap().clone()
}

/// The fields an error names: every one on the versioned admin surface,
/// the first on the general one.
fn field_of(body: &Value) -> Vec<String> {
    if let Some(errors) = body["error"]["errors"].as_array() {
        return errors
            .iter()
            .filter_map(|error| error["field"].as_str().map(str::to_owned))
            .collect();
    }
    body["error"]["details"]["field"]
        .as_str()
        .map(|field| vec![field.to_owned()])
        .unwrap_or_default()
}

async fn site_settings_change_at_run_time_by_super_admins_only_and_are_audited(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (root_id, root) = super_admin(&server);
    server.create_user("admin@example.com", PASSWORD, "admin");
    let writer = server.mint("admin@example.com", "admin:read,admin:write");

    let (status, body) = send(&server, As::Token(&writer), "GET", SETTINGS, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"],
        json!({
            "registrationMode": "open",
            "registrationQuestion": null,
            "invitesByMembers": false,
            "newAccountHoldCount": 0,
            "publicModlog": true,
            "updatedAt": null,
            "updatedBy": null,
        })
    );

    let change = json!({"registrationMode": "approval", "newAccountHoldCount": 3});
    let (status, body) = send(
        &server,
        As::Token(&writer),
        "PUT",
        SETTINGS,
        Some(change.clone()),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "INSUFFICIENT_ADMIN_PERMISSIONS");
    assert_eq!(body["error"]["requiredPermission"], "admin:super");

    for (bad, field) in [
        (json!({}), "body"),
        (json!({"registrationMode": "sometimes"}), "registrationMode"),
        (json!({"newAccountHoldCount": 51}), "newAccountHoldCount"),
        (json!({"newAccountHoldCount": -1}), "newAccountHoldCount"),
        (
            json!({"registrationQuestion": "?".repeat(501)}),
            "registrationQuestion",
        ),
    ] {
        let (status, body) = send(
            &server,
            As::Token(&root),
            "PUT",
            SETTINGS,
            Some(bad.clone()),
        )
        .await;
        assert_eq!(status, 422, "{bad}: {body}");
        assert_eq!(field_of(&body), [field], "{bad}: {body}");
    }

    let changed = set(
        &server,
        &root,
        json!({
            "registrationMode": "approval",
            "registrationQuestion": "  Why do you want to join?  ",
            "newAccountHoldCount": 3,
            "publicModlog": false,
        }),
    )
    .await;
    assert_eq!(changed["registrationMode"], "approval");
    assert_eq!(changed["registrationQuestion"], "Why do you want to join?");
    assert_eq!(
        changed["invitesByMembers"], false,
        "absent fields keep their value"
    );
    assert_eq!(changed["newAccountHoldCount"], 3);
    assert_eq!(changed["updatedBy"], root_id.to_string());
    let (_, read) = send(&server, As::Token(&writer), "GET", SETTINGS, None).await;
    assert_eq!(read["data"], changed);

    // Reversible: the earlier values come back with another change.
    let back = set(
        &server,
        &root,
        json!({"registrationMode": "open", "registrationQuestion": null, "newAccountHoldCount": 0, "publicModlog": true}),
    )
    .await;
    assert_eq!(back["registrationMode"], "open");
    assert_eq!(back["registrationQuestion"], Value::Null);

    let entries = audit(&server, &root, "site_settings.update").await;
    assert_eq!(entries.len(), 2, "{entries:?}");
    let first = &entries[1];
    assert_eq!(first["adminId"], root_id.to_string());
    assert_eq!(first["targetType"], "site_settings");
    assert_eq!(
        first["changes"],
        json!({
            "registrationMode": {"before": "open", "after": "approval"},
            "registrationQuestion": {"before": null, "after": "Why do you want to join?"},
            "newAccountHoldCount": {"before": 0, "after": 3},
            "publicModlog": {"before": true, "after": false},
        })
    );
}

async fn the_file_decides_until_an_admin_sets_the_site_settings(backend: Backend) {
    let server = TestServer::start_with(
        backend,
        &[
            ("PLAZA_SIGNUP", "false"),
            ("PLAZA_PUBLIC_MODLOG", "false"),
            ("PLAZA_NEW_ACCOUNT_HOLD_COUNT", "4"),
        ],
    )
    .await;
    let (_, root) = super_admin(&server);
    let (_, body) = send(&server, As::Token(&root), "GET", SETTINGS, None).await;
    assert_eq!(body["data"]["registrationMode"], "closed");
    assert_eq!(body["data"]["publicModlog"], false, "{body}");
    assert_eq!(body["data"]["newAccountHoldCount"], 4, "{body}");
    assert_eq!(
        sign_up(&server, "early@example.com", json!({})).await.0,
        403
    );

    // The first change stores the file's values it does not change.
    let changed = set(&server, &root, json!({"registrationMode": "open"})).await;
    assert_eq!(changed["publicModlog"], false, "{changed}");
    assert_eq!(changed["newAccountHoldCount"], 4, "{changed}");
    let (status, body) = sign_up(&server, "later@example.com", json!({})).await;
    assert_eq!(status, 201, "the stored mode overrides the file: {body}");
    let (status, body) = send(&server, As::Anonymous, "GET", "/api/modlog", None).await;
    assert_eq!(status, 404, "the log stays private: {body}");
    let entries = audit(&server, &root, "site_settings.update").await;
    assert_eq!(
        entries[0]["changes"],
        json!({"registrationMode": {"before": "closed", "after": "open"}}),
        "only the mode changed"
    );
}

async fn closed_mode_lets_only_admins_create_accounts(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, root) = super_admin(&server);
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (_, moderator) = member(&server, "mod@example.com", "moderator").await;
    set(&server, &root, json!({"registrationMode": "closed"})).await;

    let (status, body) = sign_up(&server, "someone@example.com", json!({})).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "FORBIDDEN", "{body}");
    let new = json!({"email": "made@example.com", "password": PASSWORD});
    let (status, _) = call(
        &server,
        "POST",
        "/api/users",
        Some(&moderator),
        Some(new.clone()),
    )
    .await;
    assert_eq!(status, 403, "a moderator is not an administrator");
    let (status, body) = call(&server, "POST", "/api/users", Some(&admin), Some(new)).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        server
            .try_sign_in("made@example.com", PASSWORD)
            .await
            .status(),
        200
    );
}

async fn approval_mode_holds_sign_ups_until_an_admin_decides(backend: Backend) {
    let sink = SmtpSink::start().await;
    let url = sink.url();
    let server = TestServer::start_with(backend, &[("PLAZA_SMTP_URL", url.as_str())]).await;
    let (root_id, root) = super_admin(&server);
    let root_cookie = server.sign_in("root@example.com", PASSWORD).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (_, user) = member(&server, "member@example.com", "user").await;
    set(
        &server,
        &root,
        json!({"registrationMode": "approval", "registrationQuestion": "Why join?"}),
    )
    .await;

    for missing in [json!({}), json!({"application": "   "})] {
        let (status, body) = sign_up(&server, "ada@example.com", missing).await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(field_of(&body), ["application"], "{body}");
    }
    let (status, body) = sign_up(
        &server,
        "ada@example.com",
        json!({"application": "x".repeat(2001)}),
    )
    .await;
    assert_eq!(
        (status, field_of(&body)),
        (422, vec!["application".to_owned()])
    );
    let (status, body) = sign_up(
        &server,
        "ada@example.com",
        json!({"application": "I garden.", "name": "Ada"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let ada_id = body["id"].as_str().unwrap().to_owned();
    let (status, body) = sign_up(
        &server,
        "bob@example.com",
        json!({"application": "Buy cheap watches"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let bob_id = body["id"].as_str().unwrap().to_owned();

    // A pending account does not sign in; only the right password tells why.
    let wrong = server
        .try_sign_in("ada@example.com", "not the password")
        .await;
    assert_eq!(wrong.status(), 401);
    let right = server.try_sign_in("ada@example.com", PASSWORD).await;
    assert_eq!(right.status(), 403);
    let body: Value = right.json().await.unwrap();
    assert_eq!(body["error"]["code"], "PENDING_APPROVAL", "{body}");

    // Every administrator is told; a member is not.
    for cookie in [&root_cookie, &admin] {
        let (_, list) = call(&server, "GET", "/api/notifications", Some(cookie), None).await;
        let kinds: Vec<&str> = list["notifications"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|item| item["type"].as_str())
            .collect();
        assert_eq!(kinds, ["registration", "registration"], "{list}");
    }
    let (_, list) = call(&server, "GET", "/api/notifications", Some(&user), None).await;
    assert_eq!(list["notifications"], json!([]));

    let (status, pending) = send(
        &server,
        As::Token(&root),
        "GET",
        "/api/v1/admin/registrations",
        None,
    )
    .await;
    assert_eq!(status, 200, "{pending}");
    assert_eq!(pending["meta"]["pagination"]["total"], 2);
    assert_eq!(pending["data"][0]["id"], ada_id);
    assert_eq!(pending["data"][0]["email"], "ada@example.com");
    assert_eq!(pending["data"][0]["application"], "I garden.");
    assert_eq!(pending["data"][1]["application"], "Buy cheap watches");

    let decide = |id: &str| format!("/api/v1/admin/registrations/{id}");
    for (bad, field) in [
        (json!({"action": "maybe"}), "action"),
        (json!({"action": "reject"}), "reason"),
    ] {
        let (status, body) = send(
            &server,
            As::Token(&root),
            "POST",
            &decide(&bob_id),
            Some(bad),
        )
        .await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(field_of(&body), [field]);
    }
    let (status, body) = send(
        &server,
        As::Token(&root),
        "POST",
        &decide(&ada_id),
        Some(json!({"action": "approve"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "active");
    assert_eq!(
        server
            .try_sign_in("ada@example.com", PASSWORD)
            .await
            .status(),
        200
    );
    let (status, _) = send(
        &server,
        As::Token(&root),
        "POST",
        &decide(&ada_id),
        Some(json!({"action": "approve"})),
    )
    .await;
    assert_eq!(status, 404, "only a pending sign-up is decided");

    let (status, body) = send(
        &server,
        As::Token(&root),
        "POST",
        &decide(&bob_id),
        Some(json!({"action": "reject", "reason": "Advertising is not welcome here."})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "deleted");
    assert_eq!(
        server
            .try_sign_in("bob@example.com", PASSWORD)
            .await
            .status(),
        401
    );
    assert_eq!(
        server
            .sql_count(&format!("SELECT COUNT(*) FROM users WHERE id = {bob_id}"))
            .await,
        0,
        "a rejected account is deleted"
    );

    let mails = sink.wait_for(4).await;
    let to = |address: &str| -> Vec<String> {
        mails
            .iter()
            .filter(|mail| mail.recipients.iter().any(|to| to == address))
            .map(|mail| mail.text())
            .collect()
    };
    assert!(
        to("ada@example.com")
            .iter()
            .any(|text| text.contains("was approved")),
        "{:?}",
        to("ada@example.com")
    );
    assert!(
        to("bob@example.com")
            .iter()
            .any(|text| text.contains("was not accepted")
                && text.contains("Advertising is not welcome here.")),
        "{:?}",
        to("bob@example.com")
    );

    let approved = audit(&server, &root, "registration.approve").await;
    assert_eq!(approved.len(), 1);
    assert_eq!(approved[0]["adminId"], root_id.to_string());
    assert_eq!(approved[0]["targetId"], ada_id);
    let rejected = audit(&server, &root, "registration.reject").await;
    assert_eq!(rejected.len(), 1);
    assert_eq!(
        rejected[0]["changes"]["reason"],
        "Advertising is not welcome here."
    );
    assert_eq!(rejected[0]["changes"]["email"], "bob@example.com");
}

async fn invites_count_their_uses_expire_and_can_be_withdrawn(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, root) = super_admin(&server);
    let (admin_id, admin) = member(&server, "admin@example.com", "admin").await;
    set(&server, &root, json!({"registrationMode": "invite"})).await;

    let (status, body) = sign_up(&server, "a@example.com", json!({})).await;
    assert_eq!(
        (status, field_of(&body)),
        (422, vec!["invite_code".to_owned()]),
        "{body}"
    );
    let (status, body) = sign_up(&server, "a@example.com", json!({"invite_code": "nope"})).await;
    assert_eq!(
        (status, field_of(&body)),
        (422, vec!["invite_code".to_owned()]),
        "{body}"
    );

    let (status, invite) = call(
        &server,
        "POST",
        "/api/invites",
        Some(&admin),
        Some(json!({"max_uses": 2, "expires_in": "2d"})),
    )
    .await;
    assert_eq!(status, 201, "{invite}");
    let code = invite["code"].as_str().unwrap().to_owned();
    assert_eq!(invite["max_uses"], 2);
    assert_eq!(invite["uses"], 0);
    assert!(
        invite["url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/signup?invite={code}"))
    );
    let expires_at = time::OffsetDateTime::parse(
        invite["expires_at"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    let lifetime = expires_at - time::OffsetDateTime::now_utc();
    assert!(lifetime > time::Duration::hours(47) && lifetime <= time::Duration::hours(48));

    let (status, first) = sign_up(&server, "a@example.com", json!({"invite_code": code})).await;
    assert_eq!(status, 201, "{first}");
    let (status, _) = sign_up(&server, "b@example.com", json!({"invite_code": code})).await;
    assert_eq!(status, 201);
    let (status, body) = sign_up(&server, "c@example.com", json!({"invite_code": code})).await;
    assert_eq!(
        (status, field_of(&body)),
        (422, vec!["invite_code".to_owned()]),
        "used up"
    );
    assert_eq!(
        server.try_sign_in("a@example.com", PASSWORD).await.status(),
        200
    );

    let reader = server.mint("admin@example.com", "admin:read");
    let (_, detail) = send(
        &server,
        As::Token(&reader),
        "GET",
        &format!("/api/v1/admin/users/{}", first["id"].as_str().unwrap()),
        None,
    )
    .await;
    assert_eq!(
        detail["data"]["invitedBy"],
        admin_id.to_string(),
        "{detail}"
    );
    let (_, admin_detail) = send(
        &server,
        As::Token(&reader),
        "GET",
        &format!("/api/v1/admin/users/{admin_id}"),
        None,
    )
    .await;
    assert_eq!(admin_detail["data"]["invitedBy"], Value::Null);

    let (_, withdrawn) = call(
        &server,
        "POST",
        "/api/invites",
        Some(&admin),
        Some(json!({})),
    )
    .await;
    let withdrawn = withdrawn["code"].as_str().unwrap().to_owned();
    let (_, expiring) = call(
        &server,
        "POST",
        "/api/invites",
        Some(&admin),
        Some(json!({})),
    )
    .await;
    let expiring = expiring["code"].as_str().unwrap().to_owned();
    let (status, list) = call(&server, "GET", "/api/invites", Some(&admin), None).await;
    assert_eq!(status, 200);
    let listed: Vec<(String, i64)> = list["invites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|invite| {
            (
                invite["code"].as_str().unwrap().to_owned(),
                invite["uses"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            (expiring.clone(), 0),
            (withdrawn.clone(), 0),
            (code.clone(), 2)
        ]
    );

    let path = format!("/api/invites/{withdrawn}");
    let (_, other) = member(&server, "other@example.com", "admin").await;
    assert_eq!(
        call(&server, "DELETE", &path, Some(&other), None).await.0,
        404,
        "not theirs"
    );
    assert_eq!(
        call(&server, "DELETE", &path, Some(&admin), None).await.0,
        204
    );
    assert_eq!(
        call(&server, "DELETE", &path, Some(&admin), None).await.0,
        404
    );
    let (status, _) = sign_up(&server, "d@example.com", json!({"invite_code": withdrawn})).await;
    assert_eq!(status, 422, "a withdrawn code is unknown");

    server
        .sql(&format!(
            "UPDATE invites SET expires_at = 1 WHERE code = '{expiring}'"
        ))
        .await;
    let (status, _) = sign_up(&server, "e@example.com", json!({"invite_code": expiring})).await;
    assert_eq!(status, 422, "an expired code is refused");
}

async fn members_invite_when_allowed_and_seven_days_old(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, root) = super_admin(&server);
    let (member_id, cookie) = member(&server, "member@example.com", "user").await;
    let invite = |body: Value| call(&server, "POST", "/api/invites", Some(&cookie), Some(body));

    assert_eq!(invite(json!({})).await.0, 403, "members may not invite yet");
    set(&server, &root, json!({"invitesByMembers": true})).await;
    assert_eq!(
        invite(json!({})).await.0,
        403,
        "an account younger than 7 days"
    );
    let eight_days = 8 * 24 * 3600 * 1000_i64;
    server
        .sql(&format!(
            "UPDATE users SET created_at = created_at - {eight_days} WHERE id = {member_id}"
        ))
        .await;
    // The session keeps the user it read: sign in again.
    let cookie = server.sign_in("member@example.com", PASSWORD).await;
    let invite = |body: Value| call(&server, "POST", "/api/invites", Some(&cookie), Some(body));
    let (status, body) = invite(json!({})).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["max_uses"], 1);
    for (bad, field) in [
        (json!({"max_uses": 0}), "max_uses"),
        (json!({"max_uses": 101}), "max_uses"),
        (json!({"expires_in": "31d"}), "expires_in"),
        (json!({"expires_in": "soon"}), "expires_in"),
    ] {
        let (status, body) = invite(bad.clone()).await;
        assert_eq!(status, 422, "{bad}: {body}");
        assert_eq!(field_of(&body), [field], "{bad}");
    }
    set(&server, &root, json!({"invitesByMembers": false})).await;
    assert_eq!(invite(json!({})).await.0, 403, "turned off again");
    assert_eq!(
        call(&server, "POST", "/api/invites", None, Some(json!({})))
            .await
            .0,
        401
    );
}

async fn email_domain_blocks_refuse_sign_ups_at_the_domain_and_below(backend: Backend) {
    let server = TestServer::start(backend).await;
    let admin_id = server.create_user("admin@example.com", PASSWORD, "admin");
    server.create_user("old@spam.example", PASSWORD, "user");
    let token = server.mint("admin@example.com", "admin:read,admin:write,admin:delete");
    let path = "/api/v1/admin/email-domain-blocks";

    let (status, body) = send(
        &server,
        As::Token(&token),
        "POST",
        path,
        Some(json!({"domain": "not a domain"})),
    )
    .await;
    assert_eq!(
        (status, field_of(&body)),
        (422, vec!["domain".to_owned()]),
        "{body}"
    );
    let (status, block) = send(
        &server,
        As::Token(&token),
        "POST",
        path,
        Some(json!({"domain": " Spam.Example ", "reason": "spam wave"})),
    )
    .await;
    assert_eq!(status, 201, "{block}");
    assert_eq!(block["data"]["domain"], "spam.example");
    assert_eq!(block["data"]["reason"], "spam wave");
    assert_eq!(block["data"]["createdBy"], admin_id.to_string());
    let id = block["data"]["id"].as_str().unwrap().to_owned();
    let (status, body) = send(
        &server,
        As::Token(&token),
        "POST",
        path,
        Some(json!({"domain": "SPAM.example"})),
    )
    .await;
    assert_eq!(status, 409, "{body}");

    for refused in ["a@spam.example", "b@SPAM.EXAMPLE", "c@mail.spam.example"] {
        let (status, body) = sign_up(&server, refused, json!({})).await;
        assert_eq!(status, 422, "{refused}: {body}");
        assert_eq!(field_of(&body), ["email"]);
        assert_eq!(
            body["error"]["details"]["reason"],
            "this email domain is not accepted"
        );
    }
    let (status, body) = sign_up(&server, "d@notspam.example", json!({})).await;
    assert_eq!(status, 201, "another domain ending alike: {body}");
    assert_eq!(
        server
            .try_sign_in("old@spam.example", PASSWORD)
            .await
            .status(),
        200,
        "existing users are unaffected"
    );

    let (_, list) = send(&server, As::Token(&token), "GET", path, None).await;
    assert_eq!(list["meta"]["pagination"]["total"], 1);
    assert_eq!(list["data"][0]["domain"], "spam.example");

    let (status, removed) = send(
        &server,
        As::Token(&token),
        "DELETE",
        &format!("{path}/{id}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{removed}");
    assert_eq!(removed["success"], true);
    assert_eq!(removed["data"]["domain"], "spam.example");
    let (status, _) = send(
        &server,
        As::Token(&token),
        "DELETE",
        &format!("{path}/{id}"),
        None,
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(sign_up(&server, "a@spam.example", json!({})).await.0, 201);

    let created = audit(&server, &token, "email_domain_block.create").await;
    assert_eq!(created.len(), 1);
    assert_eq!(created[0]["changes"]["after"]["domain"], "spam.example");
    let deleted = audit(&server, &token, "email_domain_block.delete").await;
    assert_eq!(deleted.len(), 1);
    assert_eq!(deleted[0]["targetId"], id);
}

async fn provider_sign_ins_create_no_account_at_a_blocked_domain_or_while_closed(backend: Backend) {
    let idp = FakeIdp::start().await;
    let server = TestServer::start_with_config(backend, &idp.config_toml(), &[]).await;
    let (_, root) = super_admin(&server);
    let start = "/api/auth/signin/fake?callbackUrl=/welcome";
    let token = server.mint("root@example.com", "admin:write");
    let (status, _) = send(
        &server,
        As::Token(&token),
        "POST",
        "/api/v1/admin/email-domain-blocks",
        Some(json!({"domain": "blocked.example"})),
    )
    .await;
    assert_eq!(status, 201);

    idp.set_profile(
        json!({"sub": "u-1", "email": "new@sub.blocked.example", "email_verified": true}),
    );
    let refused = provider_round_trip(&server, start, None).await;
    assert_eq!(refused.status(), 303);
    assert!(
        location(&refused).contains("error=email_domain_blocked"),
        "{}",
        location(&refused)
    );

    idp.set_profile(json!({"sub": "u-2", "email": "fine@idp.example", "email_verified": true}));
    let first = provider_round_trip(&server, start, None).await;
    assert_eq!(
        location(&first),
        "/welcome",
        "an open front door creates the account"
    );

    set(&server, &root, json!({"registrationMode": "invite"})).await;
    idp.set_profile(json!({"sub": "u-3", "email": "third@idp.example", "email_verified": true}));
    let closed = provider_round_trip(&server, start, None).await;
    assert!(
        location(&closed).contains("error=registration_closed"),
        "{}",
        location(&closed)
    );
    idp.set_profile(json!({"sub": "u-2", "email": "fine@idp.example", "email_verified": true}));
    let again = provider_round_trip(&server, start, None).await;
    assert_eq!(
        location(&again),
        "/welcome",
        "an existing account still signs in"
    );
    assert_eq!(
        server
            .sql_count("SELECT COUNT(*) FROM users WHERE email LIKE '%idp.example'")
            .await,
        1
    );
}

async fn ip_blocks_refuse_sign_ups_or_everything_through_a_trusted_proxy(backend: Backend) {
    let server =
        TestServer::start_with(backend, &[("PLAZA_TRUSTED_PROXIES", "[\"127.0.0.1\"]")]).await;
    let admin_id = server.create_user("admin@example.com", PASSWORD, "admin");
    let token = server.mint("admin@example.com", "admin:read,admin:write,admin:delete");
    let path = "/api/v1/admin/ip-blocks";
    let block = |body: Value| send(&server, As::Token(&token), "POST", path, Some(body));

    for (bad, field) in [
        (json!({"cidr": "nonsense", "severity": "all"}), "cidr"),
        (json!({"cidr": "10.0.0.0/33", "severity": "all"}), "cidr"),
        (
            json!({"cidr": "10.0.0.0/8", "severity": "some"}),
            "severity",
        ),
        (
            json!({"cidr": "10.0.0.0/8", "severity": "all", "expires_at": "2001-01-01T00:00:00Z"}),
            "expires_at",
        ),
    ] {
        let (status, body) = block(bad.clone()).await;
        assert_eq!(status, 422, "{bad}: {body}");
        assert_eq!(field_of(&body), [field], "{bad}");
    }

    let (status, sign_ups) =
        block(json!({"cidr": "203.0.113.7/24", "severity": "sign_up", "reason": "bots"})).await;
    assert_eq!(status, 201, "{sign_ups}");
    assert_eq!(sign_ups["data"]["cidr"], "203.0.113.0/24");
    assert_eq!(sign_ups["data"]["severity"], "sign_up");
    assert_eq!(sign_ups["data"]["active"], true);
    assert_eq!(sign_ups["data"]["createdBy"], admin_id.to_string());
    let body = json!({"email": "bot@example.com", "password": PASSWORD});
    let (status, answer) = from(
        &server,
        "203.0.113.9",
        "POST",
        "/api/users",
        Some(body.clone()),
    )
    .await;
    assert_eq!(status, 403, "{answer}");
    assert_eq!(answer["error"]["code"], "IP_BLOCKED");
    let (status, _) = from(&server, "203.0.113.9", "GET", "/api/posts", None).await;
    assert_eq!(status, 200, "`sign_up` refuses sign-ups only");
    let (status, _) = from(&server, "203.0.114.9", "POST", "/api/users", Some(body)).await;
    assert_eq!(status, 201, "outside the range");

    let (status, all) = block(json!({"cidr": "198.51.100.0/24", "severity": "all"})).await;
    assert_eq!(status, 201);
    let (status, _) = block(json!({"cidr": "2001:db8::/32", "severity": "all"})).await;
    assert_eq!(status, 201);
    for address in ["198.51.100.20", "2001:db8:1::5"] {
        let (status, answer) = from(&server, address, "GET", "/api/posts", None).await;
        assert_eq!(status, 403, "{address}: {answer}");
        assert_eq!(answer["error"]["code"], "IP_BLOCKED");
        let (status, answer) = from(&server, address, "GET", "/api/v1/admin/users", None).await;
        assert_eq!(status, 403);
        assert_eq!(answer["success"], false, "in the surface's own shape");
        assert_eq!(answer["error"]["code"], "IP_BLOCKED");
        for exempt in ["/api/health", "/api/version"] {
            assert_eq!(
                from(&server, address, "GET", exempt, None).await.0,
                200,
                "{exempt}"
            );
        }
    }
    // The forwarding header of an untrusted peer names nobody: the proxy
    // that wrote it is the client, and only what it adds counts.
    let (status, _) = from(
        &server,
        "198.51.100.20, 192.0.2.1",
        "GET",
        "/api/posts",
        None,
    )
    .await;
    assert_eq!(status, 200, "the right-most untrusted hop is the client");

    let (_, list) = send(&server, As::Token(&token), "GET", path, None).await;
    assert_eq!(list["meta"]["pagination"]["total"], 3);
    let id = all["data"]["id"].as_str().unwrap();
    let (status, removed) = send(
        &server,
        As::Token(&token),
        "DELETE",
        &format!("{path}/{id}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{removed}");
    assert_eq!(removed["data"]["cidr"], "198.51.100.0/24");
    assert_eq!(
        from(&server, "198.51.100.20", "GET", "/api/posts", None)
            .await
            .0,
        200
    );

    let created = audit(&server, &token, "ip_block.create").await;
    assert_eq!(created.len(), 3);
    assert_eq!(created[2]["changes"]["after"]["cidr"], "203.0.113.0/24");
    assert_eq!(created[2]["changes"]["after"]["reason"], "bots");
    let deleted = audit(&server, &token, "ip_block.delete").await;
    assert_eq!(deleted.len(), 1);
    assert_eq!(deleted[0]["targetId"], id);
}

async fn ip_blocks_end_at_their_expiry(backend: Backend) {
    let server =
        TestServer::start_with(backend, &[("PLAZA_TRUSTED_PROXIES", "[\"127.0.0.1\"]")]).await;
    server.create_user("admin@example.com", PASSWORD, "admin");
    let token = server.mint("admin@example.com", "admin:write");
    let ends = time::OffsetDateTime::now_utc() + time::Duration::seconds(3);
    let ends = ends
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let (status, body) = send(
        &server,
        As::Token(&token),
        "POST",
        "/api/v1/admin/ip-blocks",
        Some(json!({"cidr": "192.0.2.0/24", "severity": "all", "expires_at": ends})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        from(&server, "192.0.2.1", "GET", "/api/posts", None)
            .await
            .0,
        403
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while from(&server, "192.0.2.1", "GET", "/api/posts", None)
        .await
        .0
        == 403
    {
        assert!(Instant::now() < deadline, "the block never ended");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, list) = send(
        &server,
        As::Token(&server.mint("admin@example.com", "admin:read")),
        "GET",
        "/api/v1/admin/ip-blocks",
        None,
    )
    .await;
    assert_eq!(list["data"][0]["active"], false, "{list}");
}

async fn ip_blocks_and_settings_reach_another_instance_within_five_seconds() {
    let backend = Backend::Postgres;
    let proxies = [("PLAZA_TRUSTED_PROXIES", "[\"127.0.0.1\"]")];
    let first = TestServer::start_with(backend, &proxies).await;
    let second = TestServer::start_with(
        backend,
        &[
            ("PLAZA_DATABASE_URL", first.database_url.as_str()),
            proxies[0],
        ],
    )
    .await;
    let (_, root) = super_admin(&first);
    assert_eq!(
        from(&second, "192.0.2.1", "GET", "/api/posts", None)
            .await
            .0,
        200
    );

    let (status, _) = send(
        &first,
        As::Token(&root),
        "POST",
        "/api/v1/admin/ip-blocks",
        Some(json!({"cidr": "192.0.2.0/24", "severity": "all"})),
    )
    .await;
    assert_eq!(status, 201);
    set(&first, &root, json!({"registrationMode": "closed"})).await;
    let changed_at = Instant::now();
    loop {
        let blocked = from(&second, "192.0.2.1", "GET", "/api/posts", None)
            .await
            .0
            == 403;
        let closed = sign_up(&second, "late@example.com", json!({})).await.0 == 403;
        if blocked && closed {
            break;
        }
        assert!(
            changed_at.elapsed() < Duration::from_secs(5),
            "the other instance still lets the range in ({blocked}) or sign-ups through ({closed}) after 5 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
