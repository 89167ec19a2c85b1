//! The versioned admin surface's users: the list and detail by
//! permission, updates and bans under the policy with their audit entries,
//! ban expiry, and bulk updates.

use crate::common;

use std::time::{Duration, Instant};

use crate::common::{As, Backend, PASSWORD, TestServer, member};
use serde_json::{Value, json};

on_both_databases!(
    the_user_list_answers_by_permission_and_filters,
    updates_follow_the_policy_and_are_audited_once,
    a_ban_ends_sessions_and_tokens_until_it_is_lifted,
    timed_bans_expire_by_themselves,
    bulk_updates_answer_for_each_user,
    another_admins_lock_refuses_a_change_until_it_expires,
    a_demotion_or_status_change_ends_tokens_for_good,
    bans_go_through_the_ban_operations_only,
    nobody_changes_their_own_admin_fields,
);

async fn request(
    server: &TestServer,
    who: As<'_>,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let response = server.send(who, method, path, body.as_ref()).await;
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON body"))
}

/// How many audit entries `action` has, read through the surface.
async fn audit_count(server: &TestServer, token: &str, action: &str) -> i64 {
    let (status, body) = request(
        server,
        As::Token(token),
        "GET",
        &format!("/api/v1/admin/audit-logs?action={action}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["meta"]["pagination"]["total"].as_i64().unwrap()
}

async fn the_user_list_answers_by_permission_and_filters(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, admin_session) = member(&server, "admin@example.com", "admin").await;
    let (_, writer_session) = member(&server, "writer@example.com", "user").await;
    let moderator = server.create_user("mod@example.com", PASSWORD, "moderator");
    let banned = server.create_user("banned@example.com", PASSWORD, "user");
    common::post(
        &server,
        &writer_session,
        json!({"title": "One", "content": "Body", "published": true}),
    )
    .await;
    common::post(
        &server,
        &writer_session,
        json!({"title": "Two", "content": "Body", "published": false}),
    )
    .await;
    let reader = server.mint("admin@example.com", "admin:read");
    let writer = server.mint("admin@example.com", "admin:write");
    let path = "/api/v1/admin/users";

    for (who, status, code) in [
        (As::Anonymous, 401, "UNAUTHORIZED"),
        (As::Session(&admin_session), 401, "UNAUTHORIZED"),
        (As::Token(&writer), 403, "INSUFFICIENT_ADMIN_PERMISSIONS"),
    ] {
        let (got, body) = request(&server, who, "GET", path, None).await;
        assert_eq!(
            (got, body["error"]["code"].clone()),
            (status, json!(code)),
            "{who:?}: {body}"
        );
    }

    let (status, all) = request(&server, As::Token(&reader), "GET", path, None).await;
    assert_eq!(status, 200, "{all}");
    assert_eq!(all["success"], true);
    assert_eq!(all["meta"]["pagination"]["total"], 4, "{all}");
    assert_eq!(all["meta"]["pagination"]["limit"], 50);
    let writer_item = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|user| user["email"] == "writer@example.com")
        .expect("the writer is listed");
    assert_eq!(writer_item["postCount"], 2, "{writer_item}");
    for field in [
        "id",
        "username",
        "status",
        "role",
        "createdAt",
        "isVerified",
    ] {
        assert!(!writer_item[field].is_null(), "{field}: {writer_item}");
    }
    assert!(
        writer_item["lastLoginAt"].is_string(),
        "signed in: {writer_item}"
    );

    server
        .sql(&format!(
            "UPDATE users SET status = 'banned' WHERE id = {banned}"
        ))
        .await;
    for (query, expected) in [
        ("role=moderator", vec![moderator.to_string()]),
        ("status=banned", vec![banned.to_string()]),
        ("search=BANNED@", vec![banned.to_string()]),
        (
            "search=mod&role=all&status=all",
            vec![moderator.to_string()],
        ),
    ] {
        let (status, body) = request(
            &server,
            As::Token(&reader),
            "GET",
            &format!("{path}?{query}"),
            None,
        )
        .await;
        assert_eq!(status, 200, "{query}: {body}");
        let ids: Vec<String> = body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|user| user["id"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(ids, expected, "{query}");
    }
    let (_, sorted) = request(
        &server,
        As::Token(&reader),
        "GET",
        &format!("{path}?sort=email&order=asc&limit=2&offset=1"),
        None,
    )
    .await;
    let emails: Vec<&str> = sorted["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|user| user["email"].as_str().unwrap())
        .collect();
    assert_eq!(emails, ["banned@example.com", "mod@example.com"]);
    assert_eq!(sorted["meta"]["pagination"]["hasMore"], true);

    for bad in [
        "status=gone",
        "role=root",
        "sort=password_hash",
        "order=up",
        "limit=0",
        "offset=x",
    ] {
        let (status, body) = request(
            &server,
            As::Token(&reader),
            "GET",
            &format!("{path}?{bad}"),
            None,
        )
        .await;
        assert_eq!(status, 422, "{bad}: {body}");
        assert_eq!(body["error"]["code"], "VALIDATION_ERROR", "{bad}: {body}");
        let field = bad.split('=').next().unwrap();
        assert_eq!(body["error"]["field"], field, "{bad}: {body}");
        assert_eq!(body["error"]["details"]["field"], field, "{body}");
        assert!(body["error"]["details"]["reason"].is_string(), "{body}");
    }

    let (status, detail) = request(
        &server,
        As::Token(&reader),
        "GET",
        &format!("{path}/{moderator}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(detail["data"]["role"], "moderator");
    assert_eq!(detail["data"]["roles"], json!(["moderator"]));
    assert!(detail["data"]["recentActivity"].is_array(), "{detail}");
    assert_eq!(detail["data"]["banHistory"], json!([]));
    let (status, missing) = request(
        &server,
        As::Token(&reader),
        "GET",
        &format!("{path}/999999"),
        None,
    )
    .await;
    assert_eq!(status, 404, "{missing}");
    assert_eq!(missing["success"], false);
}

async fn updates_follow_the_policy_and_are_audited_once(backend: Backend) {
    let server = TestServer::start(backend).await;
    let admin = server.create_user("admin@example.com", PASSWORD, "admin");
    server.create_user("root@example.com", PASSWORD, "super_admin");
    let root_id = server.create_user("root2@example.com", PASSWORD, "super_admin");
    let target = server.create_user("target@example.com", PASSWORD, "user");
    let token = server.mint("admin@example.com", "admin:write");
    let reader = server.mint("admin@example.com", "admin:read");
    let root = server.mint("root@example.com", "admin:super");
    let path = format!("/api/v1/admin/users/{target}");
    let before = audit_count(&server, &root, "user.update").await;
    let (_, shown) = request(&server, As::Token(&reader), "GET", &path, None).await;
    let verified = shown["data"]["isVerified"].as_bool().expect("isVerified");

    let (status, body) = request(
        &server,
        As::Token(&token),
        "PUT",
        &path,
        Some(json!({"role": "moderator", "isVerified": !verified, "notes": "Known spammer's sibling"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true);
    let user = &body["data"];
    assert_eq!(
        (&user["role"], &user["isVerified"], &user["notes"]),
        (
            &json!("moderator"),
            &json!(!verified),
            &json!("Known spammer's sibling")
        ),
        "{user}"
    );
    assert_eq!(audit_count(&server, &root, "user.update").await, before + 1);
    let (_, trail) = request(
        &server,
        As::Token(&root),
        "GET",
        "/api/v1/admin/audit-logs?action=user.update&limit=1",
        None,
    )
    .await;
    let entry = &trail["data"][0];
    assert_eq!(entry["surface"], "v1", "{entry}");
    assert_eq!(entry["adminId"], admin.to_string());
    assert_eq!(
        entry["changes"]["role"],
        json!({"before": "user", "after": "moderator"})
    );
    assert_eq!(
        entry["changes"]["isVerified"],
        json!({"before": verified, "after": !verified})
    );

    for (who, target_path, body, status, code) in [
        (
            &reader,
            path.clone(),
            json!({"role": "user"}),
            403,
            "INSUFFICIENT_ADMIN_PERMISSIONS",
        ),
        (
            &token,
            format!("/api/v1/admin/users/{root_id}"),
            json!({"notes": "x"}),
            403,
            "FORBIDDEN",
        ),
        (
            &token,
            format!("/api/v1/admin/users/{admin}"),
            json!({"role": "user"}),
            403,
            "FORBIDDEN",
        ),
        (
            &token,
            path.clone(),
            json!({"role": "super_admin"}),
            422,
            "VALIDATION_ERROR",
        ),
        (
            &token,
            path.clone(),
            json!({"status": "asleep"}),
            422,
            "VALIDATION_ERROR",
        ),
        (&token, path.clone(), json!({}), 422, "VALIDATION_ERROR"),
        (
            &token,
            "/api/v1/admin/users/999999".to_owned(),
            json!({"notes": "x"}),
            404,
            "NOT_FOUND",
        ),
    ] {
        let (got, answer) = request(
            &server,
            As::Token(who),
            "PUT",
            &target_path,
            Some(body.clone()),
        )
        .await;
        assert_eq!(
            (got, answer["error"]["code"].clone()),
            (status, json!(code)),
            "{body}: {answer}"
        );
        assert_eq!(answer["success"], false);
    }
    assert_eq!(
        audit_count(&server, &root, "user.update").await,
        before + 1,
        "a refused change writes no entry"
    );
}

async fn a_ban_ends_sessions_and_tokens_until_it_is_lifted(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("root@example.com", PASSWORD, "super_admin");
    let (target, target_session) = member(&server, "target@example.com", "admin").await;
    let root_id = server.create_user("root2@example.com", PASSWORD, "super_admin");
    let root = server.mint("root@example.com", "admin:super");
    let target_token = server.mint("target@example.com", "admin:read");
    let ban_path = format!("/api/v1/admin/users/{target}/ban");
    let session = server
        .get_json_as("/api/auth/session", &target_session)
        .await;
    assert!(
        session["user"].is_object(),
        "signed in before the ban: {session}"
    );

    let (status, body) = request(
        &server,
        As::Token(&root),
        "POST",
        &ban_path,
        Some(json!({"action": "ban", "reason": "Spam", "duration": "7d", "notes": "third strike"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "banned");
    let ban = &body["data"]["banHistory"][0];
    assert_eq!(
        (&ban["reason"], &ban["active"]),
        (&json!("Spam"), &json!(true)),
        "{ban}"
    );
    assert!(ban["expiresAt"].is_string(), "a timed ban: {ban}");

    let session = server
        .get_json_as("/api/auth/session", &target_session)
        .await;
    assert!(
        session.get("user").is_none(),
        "the session ended: {session}"
    );
    let (status, refused) = request(
        &server,
        As::Token(&target_token),
        "GET",
        "/api/v1/admin/audit-logs",
        None,
    )
    .await;
    assert_eq!(status, 401, "the token is revoked: {refused}");

    let (status, body) = request(
        &server,
        As::Token(&root),
        "POST",
        &ban_path,
        Some(json!({"action": "unban", "reason": "Appeal granted"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "active");
    let lifted = &body["data"]["banHistory"][0];
    assert_eq!(lifted["active"], false, "{lifted}");
    assert_eq!(lifted["liftReason"], "Appeal granted");
    let (status, _) = request(
        &server,
        As::Token(&target_token),
        "GET",
        "/api/v1/admin/audit-logs",
        None,
    )
    .await;
    assert_eq!(status, 401, "a token from before the ban stays revoked");
    let fresh = server.mint("target@example.com", "admin:read");
    let (status, body) = request(
        &server,
        As::Token(&fresh),
        "GET",
        "/api/v1/admin/audit-logs",
        None,
    )
    .await;
    assert_eq!(status, 200, "a token minted after the unban works: {body}");

    for (path, body, status, code) in [
        (
            format!("/api/v1/admin/users/{root_id}/ban"),
            json!({"action": "ban", "reason": "x"}),
            403,
            "FORBIDDEN",
        ),
        (
            ban_path.clone(),
            json!({"action": "unban"}),
            409,
            "CONFLICT",
        ),
        (
            ban_path.clone(),
            json!({"action": "ban"}),
            422,
            "VALIDATION_ERROR",
        ),
        (
            ban_path.clone(),
            json!({"action": "ban", "reason": "x", "duration": "3 fortnights"}),
            422,
            "VALIDATION_ERROR",
        ),
        (
            ban_path.clone(),
            json!({"action": "smite", "reason": "x"}),
            422,
            "VALIDATION_ERROR",
        ),
    ] {
        let (got, answer) =
            request(&server, As::Token(&root), "POST", &path, Some(body.clone())).await;
        assert_eq!(
            (got, answer["error"]["code"].clone()),
            (status, json!(code)),
            "{body}: {answer}"
        );
    }
    let (status, answer) = request(
        &server,
        As::Token(&fresh),
        "POST",
        &ban_path,
        Some(json!({"action": "ban", "reason": "x"})),
    )
    .await;
    assert_eq!(
        status, 403,
        "nobody bans themself (and this token is read-only): {answer}"
    );
    assert_eq!(audit_count(&server, &root, "user.ban").await, 1);
    assert_eq!(audit_count(&server, &root, "user.unban").await, 1);
}

async fn timed_bans_expire_by_themselves(backend: Backend) {
    let server = TestServer::start_with(backend, &[("PLAZA_BAN_EXPIRY_INTERVAL_SECS", "1")]).await;
    server.create_user("root@example.com", PASSWORD, "super_admin");
    let target = server.create_user("target@example.com", PASSWORD, "user");
    let root = server.mint("root@example.com", "admin:super");
    let (status, body) = request(
        &server,
        As::Token(&root),
        "POST",
        &format!("/api/v1/admin/users/{target}/ban"),
        Some(json!({"action": "ban", "reason": "Cool off", "duration": "1h"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // The hour passes.
    server
        .sql("UPDATE user_bans SET created_at = created_at - 7200000, expires_at = expires_at - 3600001")
        .await;

    let deadline = Instant::now() + Duration::from_secs(20);
    let detail = loop {
        let (_, detail) = request(
            &server,
            As::Token(&root),
            "GET",
            &format!("/api/v1/admin/users/{target}"),
            None,
        )
        .await;
        if detail["data"]["status"] == "active" || Instant::now() > deadline {
            break detail;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(detail["data"]["status"], "active", "{detail}");
    let ban = &detail["data"]["banHistory"][0];
    assert_eq!(
        (&ban["active"], &ban["liftReason"]),
        (&json!(false), &json!("expired")),
        "{ban}"
    );
    assert!(ban["liftedBy"].is_null());
    let (_, trail) = request(
        &server,
        As::Token(&root),
        "GET",
        "/api/v1/admin/audit-logs?action=user.ban.expire",
        None,
    )
    .await;
    assert_eq!(trail["meta"]["pagination"]["total"], 1, "{trail}");
    assert_eq!(trail["data"][0]["surface"], "system");
    assert_eq!(trail["data"][0]["targetId"], target.to_string());
}

async fn bulk_updates_answer_for_each_user(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("admin@example.com", PASSWORD, "admin");
    let root_id = server.create_user("root@example.com", PASSWORD, "super_admin");
    let first = server.create_user("one@example.com", PASSWORD, "user");
    let second = server.create_user("two@example.com", PASSWORD, "user");
    let token = server.mint("admin@example.com", "admin:write");
    let path = "/api/v1/admin/users/bulk-update";

    let (status, body) = request(
        &server,
        As::Token(&token),
        "POST",
        path,
        Some(json!({
            "userIds": [first.to_string(), second, root_id.to_string(), "999999"],
            "updates": {"status": "inactive", "isVerified": true},
        })),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let data = &body["data"];
    assert_eq!(
        (&data["updated"], &data["failed"]),
        (&json!(2), &json!(2)),
        "{data}"
    );
    let outcome = |id: String| {
        data["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|result| result["userId"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("a result for {id}: {data}"))
    };
    assert_eq!(outcome(first.to_string())["success"], true);
    assert_eq!(outcome(second.to_string())["success"], true);
    assert_eq!(outcome(root_id.to_string())["error"]["code"], "FORBIDDEN");
    assert_eq!(outcome("999999".to_owned())["error"]["code"], "NOT_FOUND");
    let root = server.mint("root@example.com", "admin:super");
    let (_, listed) = request(
        &server,
        As::Token(&root),
        "GET",
        "/api/v1/admin/users?status=inactive",
        None,
    )
    .await;
    assert_eq!(listed["meta"]["pagination"]["total"], 2, "{listed}");
    assert_eq!(audit_count(&server, &root, "user.update").await, 2);

    let too_many: Vec<i64> = (1..=101).collect();
    for bad in [
        json!({"userIds": [], "updates": {"status": "active"}}),
        json!({"userIds": too_many, "updates": {"status": "active"}}),
        json!({"userIds": ["x"], "updates": {"status": "active"}}),
        json!({"userIds": [first], "updates": {}}),
        json!({"userIds": [first], "updates": {"role": "emperor"}}),
    ] {
        let (status, answer) =
            request(&server, As::Token(&token), "POST", path, Some(bad.clone())).await;
        assert_eq!(status, 422, "{bad}: {answer}");
        assert_eq!(answer["error"]["code"], "VALIDATION_ERROR");
    }
}

async fn another_admins_lock_refuses_a_change_until_it_expires(backend: Backend) {
    let server = TestServer::start(backend).await;
    let holder = server.create_user("holder@example.com", PASSWORD, "super_admin");
    server.create_user("admin@example.com", PASSWORD, "admin");
    let target = server.create_user("target@example.com", PASSWORD, "user");
    let token = server.mint("admin@example.com", "admin:write");
    // The holder is in the middle of changing the target.
    server
        .sql(&format!(
            "INSERT INTO edit_locks (resource_type, resource_id, holder_id, locked_at, expires_at) \
             VALUES ('user', {target}, {holder}, 1700000000000, 4000000000000)"
        ))
        .await;
    let path = format!("/api/v1/admin/users/{target}");
    for (method, path, body) in [
        ("PUT", path.clone(), json!({"notes": "mine"})),
        (
            "POST",
            format!("{path}/ban"),
            json!({"action": "ban", "reason": "spam"}),
        ),
    ] {
        let (status, body) = request(&server, As::Token(&token), method, &path, Some(body)).await;
        assert_eq!(status, 423, "{method} {path}: {body}");
        assert_eq!(body["error"]["code"], "RESOURCE_LOCKED");
        assert_eq!(body["error"]["lockedBy"], holder.to_string());
        assert!(body["error"]["lockedAt"].is_string(), "{body}");
    }
    let (_, bulk) = request(
        &server,
        As::Token(&token),
        "POST",
        "/api/v1/admin/users/bulk-update",
        Some(json!({"userIds": [target], "updates": {"isVerified": false}})),
    )
    .await;
    assert_eq!(
        bulk["data"]["results"][0]["error"]["code"], "RESOURCE_LOCKED",
        "{bulk}"
    );

    // The holder's process died: the lock expires by itself.
    server.sql("UPDATE edit_locks SET expires_at = 1").await;
    let (status, body) = request(
        &server,
        As::Token(&token),
        "PUT",
        &path,
        Some(json!({"notes": "mine"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["notes"], "mine");
}

/// A token minted before its user's role was lowered, or their status
/// changed, stays refused after the user is promoted or reactivated again:
/// it carried the old authority.
async fn a_demotion_or_status_change_ends_tokens_for_good(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, chief) = member(&server, "chief@example.com", "super_admin").await;
    let admin_id = server.create_user("admin@example.com", PASSWORD, "admin");
    let path = "/api/v1/admin/users";
    for (lowered, restored) in [
        (json!({"role": "user"}), json!({"role": "admin"})),
        (json!({"status": "inactive"}), json!({"status": "active"})),
    ] {
        let token = server.mint("admin@example.com", "admin:read");
        let (status, body) = request(&server, As::Token(&token), "GET", path, None).await;
        assert_eq!(status, 200, "{body}");
        for change in [&lowered, &restored] {
            let (status, body) = request(
                &server,
                As::Session(&chief),
                "PUT",
                &format!("/api/users/{admin_id}"),
                Some(change.clone()),
            )
            .await;
            assert_eq!(status, 200, "{change}: {body}");
        }
        let (status, body) = request(&server, As::Token(&token), "GET", path, None).await;
        assert_eq!(status, 401, "after {lowered} and back: {body}");
        let fresh = server.mint("admin@example.com", "admin:read");
        let (status, body) = request(&server, As::Token(&fresh), "GET", path, None).await;
        assert_eq!(status, 200, "a token minted afterwards works: {body}");
    }
    // A change of anything else keeps the tokens the user holds.
    let token = server.mint("admin@example.com", "admin:read");
    let (status, body) = request(
        &server,
        As::Session(&chief),
        "PUT",
        &format!("/api/users/{admin_id}"),
        Some(json!({"bio": "still here"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = request(&server, As::Token(&token), "GET", path, None).await;
    assert_eq!(status, 200, "{body}");
}

/// `PUT /api/users/{id}` cannot ban or unban: that would skip the ban's
/// reason and history. The user stays as they were.
async fn bans_go_through_the_ban_operations_only(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (target, target_session) = member(&server, "target@example.com", "user").await;
    let path = format!("/api/users/{target}");
    let (status, body) = request(
        &server,
        As::Session(&admin),
        "PUT",
        &path,
        Some(json!({"status": "banned"})),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["details"]["field"], "status", "{body}");
    let session = server
        .get_json_as("/api/auth/session", &target_session)
        .await;
    assert!(session["user"].is_object(), "still signed in: {session}");
    assert_eq!(
        server
            .sql_count(&format!(
                "SELECT COUNT(*) FROM user_bans WHERE user_id = {target}"
            ))
            .await,
        0
    );

    server.ban("target@example.com");
    let (status, body) = request(
        &server,
        As::Session(&admin),
        "PUT",
        &path,
        Some(json!({"status": "active"})),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        server
            .sql_count(&format!(
                "SELECT COUNT(*) FROM users WHERE id = {target} AND status = 'banned'"
            ))
            .await,
        1
    );
}

/// An admin's notes and verification are kept by other administrators: an
/// admin cannot change their own through the versioned surface.
async fn nobody_changes_their_own_admin_fields(backend: Backend) {
    let server = TestServer::start(backend).await;
    let admin_id = server.create_user("admin@example.com", PASSWORD, "admin");
    let target = server.create_user("target@example.com", PASSWORD, "user");
    let token = server.mint("admin@example.com", "admin:read,admin:write");
    // Users made from the command line start verified.
    for body in [json!({"notes": "trust me"}), json!({"isVerified": false})] {
        let (status, answer) = request(
            &server,
            As::Token(&token),
            "PUT",
            &format!("/api/v1/admin/users/{admin_id}"),
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, 403, "{body}: {answer}");
        assert_eq!(answer["error"]["code"], "FORBIDDEN");
        let (status, answer) = request(
            &server,
            As::Token(&token),
            "PUT",
            &format!("/api/v1/admin/users/{target}"),
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, 200, "on someone else, {body}: {answer}");
    }
    assert_eq!(
        server
            .sql_count(&format!(
                "SELECT COUNT(*) FROM users WHERE id = {admin_id} \
                 AND admin_notes IS NULL AND email_verified_at IS NOT NULL"
            ))
            .await,
        1
    );
}
