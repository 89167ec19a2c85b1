//! The audit trail and units of work: an admin change and its entry commit
//! together, a refused request writes nothing, and a unit of work that fails
//! before its commit leaves neither the change nor the entry.

use crate::common;

use crate::common::{As, Backend, PASSWORD, TestServer, call, member};
use plaza_domain::DomainError;
use plaza_domain::audit::{self, AuditAction, AuditContext};
use plaza_domain::users::{self, Role};
use serde_json::json;

on_both_databases!(
    admin_changes_to_other_users_leave_one_entry_each,
    refused_and_unchanged_requests_leave_no_entry,
    command_line_actions_are_audited,
    a_unit_of_work_failing_before_its_commit_leaves_nothing,
    an_entry_names_the_token_holder_when_a_foreign_cookie_comes_along,
    changes_through_the_general_routes_to_what_others_own_are_audited,
    admin_tokens_minted_and_revoked_through_the_api_are_audited,
);

async fn entries(server: &TestServer) -> Vec<audit::AuditEntry> {
    server.domain().await.audit_entries(100).await.unwrap()
}

async fn admin_changes_to_other_users_leave_one_entry_each(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (admin_id, admin) = member(&server, "admin@example.com", "admin").await;
    let target = server.create_user("target@example.com", PASSWORD, "user");
    let before = entries(&server).await.len();
    let (status, body) = call(
        &server,
        "PUT",
        &format!("/api/users/{target}"),
        Some(&admin),
        Some(json!({"role": "moderator", "status": "inactive"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let after = entries(&server).await;
    assert_eq!(after.len(), before + 1);
    let entry = &after[0];
    assert_eq!(entry.action, "user.update");
    assert_eq!(entry.actor_id, Some(admin_id));
    assert_eq!(entry.actor_email.as_deref(), Some("admin@example.com"));
    assert_eq!(entry.target_type, "user");
    assert_eq!(entry.target_id, Some(target.to_string()));
    assert_eq!(entry.surface, "api");
    assert!(entry.ip_address.is_some());
    let changes: serde_json::Value = serde_json::from_str(&entry.changes).unwrap();
    assert_eq!(
        changes,
        json!({"role": {"before": "user", "after": "moderator"},
               "status": {"before": "active", "after": "inactive"}})
    );

    let (status, _) = call(
        &server,
        "DELETE",
        &format!("/api/users/{target}"),
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(status, 204);
    let after = entries(&server).await;
    assert_eq!(after.len(), before + 2);
    assert_eq!(after[0].action, "user.delete");
    let changes: serde_json::Value = serde_json::from_str(&after[0].changes).unwrap();
    assert_eq!(changes["before"]["email"], "target@example.com");
}

async fn refused_and_unchanged_requests_leave_no_entry(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (own_id, user) = member(&server, "user@example.com", "user").await;
    let other = server.create_user("other@example.com", PASSWORD, "user");
    let chief = server.create_user("chief@example.com", PASSWORD, "super_admin");
    let before = entries(&server).await.len();
    for (cookie, method, path, body, expected) in [
        // A user may not change someone else's role…
        (
            &user,
            "PUT",
            format!("/api/users/{other}"),
            Some(json!({"role": "admin"})),
            403,
        ),
        // …nor an admin a super admin's…
        (
            &admin,
            "PUT",
            format!("/api/users/{chief}"),
            Some(json!({"status": "banned"})),
            403,
        ),
        (&admin, "DELETE", format!("/api/users/{chief}"), None, 403),
        // …and resending the current value changes nothing.
        (
            &admin,
            "PUT",
            format!("/api/users/{other}"),
            Some(json!({"role": "user"})),
            200,
        ),
        // Users changing their own profile are not admin actions.
        (
            &user,
            "PUT",
            format!("/api/users/{own_id}"),
            Some(json!({"bio": "hello"})),
            200,
        ),
    ] {
        let (status, answer) = call(&server, method, &path, Some(cookie), body).await;
        assert_eq!(status, expected, "{method} {path}: {answer}");
    }
    let (status, _) = call(
        &server,
        "DELETE",
        &format!("/api/users/{own_id}"),
        Some(&user),
        None,
    )
    .await;
    assert_eq!(status, 204);
    assert_eq!(entries(&server).await.len(), before, "nothing was audited");
}

async fn command_line_actions_are_audited(backend: Backend) {
    let server = TestServer::start(backend).await;
    let output = server.cli_with_env(
        &[("USER", "operator")],
        &[
            "user",
            "create",
            "--email",
            "root@example.com",
            "--password",
            PASSWORD,
            "--role",
            "super_admin",
            "--username",
            "root",
        ],
    );
    assert!(output.status.success());
    let root_id = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let output = server.cli(&[
        "token",
        "--email",
        "root@example.com",
        "--permissions",
        "admin:read",
    ]);
    assert!(output.status.success());
    let output = server.cli(&["user", "ban", "--email", "root@example.com"]);
    assert!(output.status.success());
    let recorded = entries(&server).await;
    let actions: Vec<(&str, &str)> = recorded
        .iter()
        .map(|entry| (entry.action.as_str(), entry.surface.as_str()))
        .collect();
    assert_eq!(
        actions,
        [
            ("user.ban", "cli"),
            ("admin_token.mint", "cli"),
            ("user.create", "cli")
        ]
    );
    let minted: serde_json::Value = serde_json::from_str(&recorded[1].changes).unwrap();
    assert_eq!(minted["permissions"], json!(["admin:read"]));

    // The creation, as the audit trail shows it: no Plaza account acted
    // (the command line's operator is whoever can run it); the user agent
    // names the command and the operating-system account.
    assert!(
        server
            .cli(&["user", "unban", "--email", "root@example.com"])
            .status
            .success()
    );
    let token = server.mint("root@example.com", "admin:read");
    let response = server
        .send(
            As::Token(&token),
            "GET",
            "/api/v1/admin/audit-logs?action=user.create",
            None,
        )
        .await;
    assert_eq!(response.status(), 200);
    let trail: serde_json::Value = response.json().await.unwrap();
    assert_eq!(trail["meta"]["pagination"]["total"], 1, "{trail}");
    let entry = &trail["data"][0];
    assert_eq!(entry["surface"], "cli");
    assert!(
        entry.get("adminId").is_none_or(|id| id.is_null()),
        "{entry}"
    );
    assert_eq!(entry["targetType"], "user");
    assert_eq!(entry["targetId"], root_id);
    assert_eq!(
        entry["changes"],
        json!({"after": {"email": "root@example.com", "username": "root", "role": "super_admin"}})
    );
    let agent = entry["userAgent"].as_str().unwrap_or_default();
    assert!(
        agent.starts_with("plaza-cli/") && agent.ends_with("(os user operator)"),
        "{entry}"
    );
}

async fn a_unit_of_work_failing_before_its_commit_leaves_nothing(backend: Backend) {
    let server = TestServer::start(backend).await;
    let target = server.create_user("target@example.com", PASSWORD, "user");
    let db = server.domain().await;
    let before = db.audit_entries(100).await.unwrap().len();
    let failing = promote_and_record(&db, target, true).await;
    assert!(failing.is_err());
    assert_eq!(db.user_by_id(target).await.unwrap().role, Role::User);
    assert_eq!(db.audit_entries(100).await.unwrap().len(), before);
    // The same work that returns Ok commits both.
    promote_and_record(&db, target, false).await.unwrap();
    assert_eq!(db.user_by_id(target).await.unwrap().role, Role::Admin);
    assert_eq!(db.audit_entries(100).await.unwrap().len(), before + 1);
}

/// Makes `target` an admin and records it in one unit of work, which fails
/// after both writes and before its commit when `fail` is set.
async fn promote_and_record(
    db: &plaza_domain::Database,
    target: i64,
    fail: bool,
) -> Result<(), DomainError> {
    db.write(|tx| {
        Box::pin(async move {
            users::set_role(tx, target, Role::Admin).await?;
            audit::record(
                tx,
                &AuditContext::command_line(),
                AuditAction {
                    action: "user.role.update",
                    target_type: "user",
                    target_id: Some(target.to_string()),
                    changes: json!({}),
                },
            )
            .await?;
            if fail {
                return Err(DomainError::Conflict(
                    "failed after the change, before the commit".to_owned(),
                ));
            }
            Ok(())
        })
    })
    .await
}

/// A request carrying one admin's bearer token and another user's session
/// cookie acts with the token's authority on the admin surfaces, so its
/// entry names the token's user, never the cookie's.
async fn an_entry_names_the_token_holder_when_a_foreign_cookie_comes_along(backend: Backend) {
    let server = TestServer::start(backend).await;
    let holder = server.create_user("holder@example.com", PASSWORD, "admin");
    let token = server.mint("holder@example.com", "admin:read,admin:write");
    let (_, bystander) = member(&server, "bystander@example.com", "admin").await;
    let first = server.create_user("first@example.com", PASSWORD, "user");
    let second = server.create_user("second@example.com", PASSWORD, "user");
    for (path, body, action) in [
        (
            format!("/api/v1/admin/users/{first}/ban"),
            json!({"action": "ban", "reason": "spam"}),
            "user.ban",
        ),
        (
            format!("/api/admin/users/{second}/ban"),
            json!({"reason": "spam", "duration": "7d"}),
            "user.ban",
        ),
    ] {
        let answer = server
            .client
            .post(server.url(&path))
            .bearer_auth(&token)
            .header("cookie", &bystander)
            .json(&body)
            .send()
            .await
            .expect("request");
        assert_eq!(
            answer.status(),
            200,
            "{path}: {}",
            answer.text().await.unwrap()
        );
        let entry = entries(&server).await.remove(0);
        assert_eq!(entry.action, action, "{path}");
        assert_eq!(entry.actor_id, Some(holder), "{path}");
        assert_eq!(
            entry.actor_email.as_deref(),
            Some("holder@example.com"),
            "{path}"
        );
    }
    // Without the token, the cookie's user is the principal.
    let answer = server
        .send(
            As::Session(&bystander),
            "POST",
            &format!("/api/admin/users/{second}/unban"),
            Some(&json!({"reason": "appeal"})),
        )
        .await;
    assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());
    let entry = entries(&server).await.remove(0);
    assert_eq!(entry.actor_email.as_deref(), Some("bystander@example.com"));
}

/// An admin changing another user's profile, or a moderator changing or
/// deleting another user's post, through the general routes leaves an entry
/// in the change's transaction; the owner's own changes leave none.
async fn changes_through_the_general_routes_to_what_others_own_are_audited(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (admin_id, admin) = member(&server, "admin@example.com", "admin").await;
    let (moderator_id, moderator) = member(&server, "moderator@example.com", "moderator").await;
    let (author_id, author) = member(&server, "author@example.com", "user").await;
    let post_id = common::post(
        &server,
        &author,
        json!({"title": "Hello", "content": "First words", "published": true}),
    )
    .await;
    let (status, body) = call(
        &server,
        "PUT",
        &format!("/api/posts/{post_id}"),
        Some(&author),
        Some(json!({"content": "Second words"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let before = entries(&server).await.len();

    let (status, body) = call(
        &server,
        "PUT",
        &format!("/api/users/{author_id}"),
        Some(&admin),
        Some(json!({"bio": "edited by an admin"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let entry = entries(&server).await.remove(0);
    assert_eq!(
        (
            entry.action.as_str(),
            entry.actor_id,
            entry.target_id.clone()
        ),
        ("user.update", Some(admin_id), Some(author_id.to_string()))
    );
    let changes: serde_json::Value = serde_json::from_str(&entry.changes).unwrap();
    assert_eq!(
        changes,
        json!({"bio": {"before": "", "after": "edited by an admin"}})
    );

    let (status, body) = call(
        &server,
        "PUT",
        &format!("/api/posts/{post_id}"),
        Some(&moderator),
        Some(json!({"title": "Moderated"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let entry = entries(&server).await.remove(0);
    assert_eq!(
        (
            entry.action.as_str(),
            entry.actor_id,
            entry.target_type.as_str()
        ),
        ("post.update", Some(moderator_id), "post")
    );
    assert_eq!(entry.target_id, Some(post_id.clone()));
    let changes: serde_json::Value = serde_json::from_str(&entry.changes).unwrap();
    assert_eq!(
        changes,
        json!({"title": {"before": "Hello", "after": "Moderated"}})
    );

    let (status, _) = call(
        &server,
        "DELETE",
        &format!("/api/posts/{post_id}"),
        Some(&moderator),
        None,
    )
    .await;
    assert_eq!(status, 204);
    let entry = entries(&server).await.remove(0);
    assert_eq!(
        (entry.action.as_str(), entry.actor_id),
        ("post.delete", Some(moderator_id))
    );
    let changes: serde_json::Value = serde_json::from_str(&entry.changes).unwrap();
    assert_eq!(changes["before"]["title"], "Moderated");
    assert_eq!(changes["before"]["authorId"], author_id.to_string());
    assert_eq!(entries(&server).await.len(), before + 3);
}

/// Minting an admin token through `POST /api/auth/token` and revoking it
/// through `DELETE /api/auth/token` each leave an entry with the token's
/// `jti` and permissions, naming its holder.
async fn admin_tokens_minted_and_revoked_through_the_api_are_audited(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (admin_id, admin) = member(&server, "admin@example.com", "admin").await;
    let (status, minted) = call(
        &server,
        "POST",
        "/api/auth/token",
        Some(&admin),
        Some(json!({"permissions": ["admin:read"]})),
    )
    .await;
    assert_eq!(status, 200, "{minted}");
    let token = minted["token"].as_str().expect("token");
    let entry = entries(&server).await.remove(0);
    assert_eq!(
        (
            entry.action.as_str(),
            entry.actor_id,
            entry.target_id.clone()
        ),
        (
            "admin_token.mint",
            Some(admin_id),
            Some(admin_id.to_string())
        )
    );
    let changes: serde_json::Value = serde_json::from_str(&entry.changes).unwrap();
    assert_eq!(changes["permissions"], json!(["admin:read"]));
    let jti = changes["jti"].as_str().expect("jti").to_owned();

    let answer = server
        .send(As::Token(token), "DELETE", "/api/auth/token", None)
        .await;
    assert_eq!(answer.status(), 204);
    let entry = entries(&server).await.remove(0);
    assert_eq!(
        (entry.action.as_str(), entry.actor_id),
        ("admin_token.revoke", Some(admin_id))
    );
    let changes: serde_json::Value = serde_json::from_str(&entry.changes).unwrap();
    assert_eq!(changes, json!({"jti": jti, "permissions": ["admin:read"]}));
}
