//! Capabilities granted to roles, on the unversioned admin surface: a
//! role's grants replaced (`PUT /api/admin/roles/{role}/permissions`) and a
//! permission changed (`PATCH /api/admin/permissions/{id}`) take effect on
//! the next request, on every instance; the grant, dependency, cycle and
//! status rules answer 403, 404, 409 and 422; each change is audited under
//! the principal whose authority allowed it; and the upgrade to the
//! default grants keeps every install's capabilities.

use std::time::{Duration, Instant};

use crate::common;

use crate::common::{As, Backend, PASSWORD, TestServer, member};
use plaza_domain::locks::{self, Resource};
use serde_json::{Value, json};

on_both_databases!(
    revoking_users_manage_closes_the_user_list_and_granting_it_opens_it,
    grant_lists_name_known_permissions_with_their_dependencies,
    new_permissions_with_unknown_or_cyclic_dependencies_are_422,
    only_permissions_manage_changes_grants_and_never_super_admins,
    a_permission_that_is_not_active_grants_nothing,
    archived_permissions_change_no_more_and_wait_for_their_dependents,
    roles_carry_their_grants_and_every_change_is_audited_under_its_actor,
    the_edit_lock_of_a_role_refuses_a_second_admin,
    upgrading_keeps_each_installs_capabilities,
    the_analytics_dashboard_needs_analytics_read,
);

/// One request as `who`: the status and the JSON body (`null` when empty).
async fn send(
    server: &TestServer,
    who: As<'_>,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let response = server.send(who, method, path, body.as_ref()).await;
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("{method} {path}: {text}"))
    };
    (status, body)
}

/// Replaces the grants of `role` as `who`.
async fn grant(server: &TestServer, who: As<'_>, role: &str, names: &[&str]) -> (u16, Value) {
    send(
        server,
        who,
        "PUT",
        &format!("/api/admin/roles/{role}/permissions"),
        Some(json!({"permissions": names, "reason": "test"})),
    )
    .await
}

/// The `id` of the permission `name`, as the list shows it.
async fn permission_id(server: &TestServer, who: As<'_>, name: &str) -> i64 {
    let (status, body) = send(
        server,
        who,
        "GET",
        &format!("/api/admin/permissions?search={name}&limit=100"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["permissions"]
        .as_array()
        .expect("permissions")
        .iter()
        .find(|permission| permission["name"] == name)
        .and_then(|permission| permission["id"].as_i64())
        .unwrap_or_else(|| panic!("no permission {name}: {body}"))
}

/// Changes the permission `name` as `who`.
async fn patch(server: &TestServer, who: As<'_>, name: &str, change: Value) -> (u16, Value) {
    let id = permission_id(server, who, name).await;
    send(
        server,
        who,
        "PATCH",
        &format!("/api/admin/permissions/{id}"),
        Some(change),
    )
    .await
}

/// Creates a permission as `who`.
async fn create(server: &TestServer, who: As<'_>, body: Value) -> (u16, Value) {
    send(server, who, "POST", "/api/admin/permissions", Some(body)).await
}

/// The status of `GET /api/admin/users` as `who`.
async fn user_list(server: &TestServer, who: As<'_>) -> u16 {
    send(server, who, "GET", "/api/admin/users", None).await.0
}

/// The admin role's default grants.
const ADMIN_DEFAULTS: [&str; 3] = ["analytics:read", "posts:moderate", "users:manage"];

async fn revoking_users_manage_closes_the_user_list_and_granting_it_opens_it(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, root) = member(&server, "root@example.com", "super_admin").await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let token = server.mint("admin@example.com", "admin:read");
    assert_eq!(user_list(&server, As::Session(&admin)).await, 200);
    assert_eq!(user_list(&server, As::Token(&token)).await, 200);

    let (status, body) = grant(
        &server,
        As::Session(&root),
        "admin",
        &["posts:moderate", "analytics:read"],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"role": "admin", "permissions": ["analytics:read", "posts:moderate"]})
    );
    assert_eq!(user_list(&server, As::Session(&admin)).await, 403);
    assert_eq!(user_list(&server, As::Token(&token)).await, 403);
    assert_eq!(
        user_list(&server, As::Session(&root)).await,
        200,
        "a super admin holds every capability without a grant"
    );

    let (status, body) = grant(&server, As::Session(&root), "admin", &ADMIN_DEFAULTS).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["permissions"], json!(ADMIN_DEFAULTS));
    assert_eq!(user_list(&server, As::Session(&admin)).await, 200);
    assert_eq!(user_list(&server, As::Token(&token)).await, 200);
}

async fn grant_lists_name_known_permissions_with_their_dependencies(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, root) = member(&server, "root@example.com", "super_admin").await;
    let root = As::Session(&root);
    for (name, dependencies) in [
        ("reports.read", json!([])),
        ("reports.export", json!(["reports.read"])),
    ] {
        let (status, body) = create(
            &server,
            root,
            json!({"name": name, "display_name": name, "category": "reports", "dependencies": dependencies}),
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }

    let (status, body) = grant(&server, root, "moderator", &["reports.export"]).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"], "Validation error");
    assert_eq!(body["details"][0]["path"], json!(["permissions"]));
    assert_eq!(
        body["details"][0]["message"],
        "reports.export depends on reports.read, which the list leaves out"
    );
    let (status, body) = grant(&server, root, "moderator", &["posts:moderate", "nope"]).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["details"][0]["message"],
        "names permissions that do not exist: nope"
    );
    let (status, body) = grant(&server, root, "everyone", &[]).await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = send(
        &server,
        root,
        "PUT",
        "/api/admin/roles/moderator/permissions",
        Some(json!({"permissions": "posts:moderate"})),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "Invalid request body");
    let (status, body) = send(
        &server,
        root,
        "PUT",
        "/api/admin/roles/moderator/permissions",
        Some(json!({"permissions": ["posts:moderate", 7]})),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["details"][0]["path"], json!(["permissions", "1"]));

    // Nothing was written by the refusals.
    let (_, roles) = send(&server, root, "GET", "/api/admin/roles", None).await;
    assert_eq!(
        roles[1]["permissions"],
        json!(["posts:moderate"]),
        "{roles}"
    );

    let (status, body) = grant(
        &server,
        root,
        "moderator",
        &[
            "reports.export",
            "posts:moderate",
            "reports.read",
            "reports.export",
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["permissions"],
        json!(["posts:moderate", "reports.export", "reports.read"])
    );
    let (status, body) = grant(&server, root, "user", &[]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({"role": "user", "permissions": []}));
}

async fn new_permissions_with_unknown_or_cyclic_dependencies_are_422(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, root) = member(&server, "root@example.com", "super_admin").await;
    let root = As::Session(&root);
    let (status, body) = create(
        &server,
        root,
        json!({"name": "reports.view", "display_name": "View", "category": "reports", "dependencies": ["reports.base"]}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"], "Validation error");
    assert_eq!(body["details"][0]["path"], json!(["dependencies"]));
    assert_eq!(
        body["details"][0]["message"],
        "names permissions that do not exist: reports.base"
    );
    let (status, body) = create(
        &server,
        root,
        json!({"name": "reports.self", "display_name": "Self", "category": "reports", "dependencies": ["reports.self"]}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["details"][0]["message"],
        "would form a cycle: reports.self → reports.self"
    );
    // A dependency written by hand on a name that does not exist yet:
    // creating that name with the reverse dependency closes a cycle.
    server
        .sql(
            "INSERT INTO permissions (name, display_name, category, dependencies, created_at, updated_at) \
             VALUES ('reports.audit', 'Audit', 'reports', '[\"reports.read\"]', 0, 0)",
        )
        .await;
    let (status, body) = create(
        &server,
        root,
        json!({"name": "reports.read", "display_name": "Read", "category": "reports", "dependencies": ["reports.audit"]}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["details"][0]["message"],
        "would form a cycle: reports.read → reports.audit → reports.read"
    );
    let (status, body) = create(
        &server,
        root,
        json!({"name": "Bad Name!", "display_name": "x", "category": "c"}),
    )
    .await;
    assert_eq!(status, 400, "a malformed body stays 400: {body}");
}

async fn only_permissions_manage_changes_grants_and_never_super_admins(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, root) = member(&server, "root@example.com", "super_admin").await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (_, moderator) = member(&server, "moderator@example.com", "moderator").await;
    let admin_token = server.mint("admin@example.com", "admin:write");
    let analytics = permission_id(&server, As::Session(&root), "analytics:read").await;
    let change = json!({"description": "Dashboards"});
    for who in [
        As::Session(&admin),
        As::Token(&admin_token),
        As::Session(&moderator),
    ] {
        let (status, body) = grant(&server, who, "moderator", &[]).await;
        assert_eq!(status, 403, "{body}");
        assert_eq!(body["error"], "Insufficient permissions");
        let (status, body) = send(
            &server,
            who,
            "PATCH",
            &format!("/api/admin/permissions/{analytics}"),
            Some(change.clone()),
        )
        .await;
        assert_eq!(status, 403, "{body}");
    }
    let (status, _) = send(
        &server,
        As::Anonymous,
        "PUT",
        "/api/admin/roles/moderator/permissions",
        Some(json!({"permissions": []})),
    )
    .await;
    assert_eq!(status, 401);

    let (status, body) = grant(&server, As::Session(&root), "super_admin", &[]).await;
    assert_eq!(status, 403, "{body}");

    // Granted `permissions:manage`, the admin role may change grants, and
    // the admin may take it from their own role.
    let mut with_manage = ADMIN_DEFAULTS.to_vec();
    with_manage.push("permissions:manage");
    let (status, body) = grant(&server, As::Session(&root), "admin", &with_manage).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = grant(&server, As::Token(&admin_token), "moderator", &[]).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = grant(&server, As::Session(&admin), "super_admin", &[]).await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = grant(&server, As::Session(&admin), "admin", &ADMIN_DEFAULTS).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = grant(&server, As::Session(&admin), "moderator", &[]).await;
    assert_eq!(status, 403, "{body}");
}

async fn a_permission_that_is_not_active_grants_nothing(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, root) = member(&server, "root@example.com", "super_admin").await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let root = As::Session(&root);
    let (status, body) = patch(&server, root, "users:manage", json!({"status": "disabled"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "disabled");
    assert_eq!(
        body["roles"],
        json!(["admin", "super_admin"]),
        "still granted"
    );
    assert_eq!(user_list(&server, As::Session(&admin)).await, 403);
    assert_eq!(user_list(&server, root).await, 200);
    // A disabled permission may still be granted; it gives nothing.
    let (status, body) = grant(&server, root, "admin", &ADMIN_DEFAULTS).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(user_list(&server, As::Session(&admin)).await, 403);

    let (status, body) = patch(&server, root, "users:manage", json!({"status": "active"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(user_list(&server, As::Session(&admin)).await, 200);

    // A direct grant of a disabled permission gives nothing either.
    let (status, body) = grant(&server, root, "admin", &["posts:moderate"]).await;
    assert_eq!(status, 200, "{body}");
    server
        .sql(
            "INSERT INTO user_permissions (user_id, permission_id, granted_at) \
             SELECT u.id, p.id, 0 FROM users u, permissions p \
             WHERE u.email = 'admin@example.com' AND p.name = 'users:manage'",
        )
        .await;
    assert_eq!(user_list(&server, As::Session(&admin)).await, 200);
    let (status, _) = patch(&server, root, "users:manage", json!({"status": "disabled"})).await;
    assert_eq!(status, 200);
    assert_eq!(user_list(&server, As::Session(&admin)).await, 403);
}

async fn archived_permissions_change_no_more_and_wait_for_their_dependents(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, root) = member(&server, "root@example.com", "super_admin").await;
    let root = As::Session(&root);
    for (name, dependencies) in [
        ("reports.read", json!([])),
        ("reports.export", json!(["reports.read"])),
    ] {
        let (status, body) = create(
            &server,
            root,
            json!({"name": name, "display_name": name, "category": "reports", "dependencies": dependencies}),
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }
    let (status, body) = grant(
        &server,
        root,
        "moderator",
        &["posts:moderate", "reports.read", "reports.export"],
    )
    .await;
    assert_eq!(status, 200, "{body}");

    let (status, body) = patch(&server, root, "reports.read", json!({"status": "archived"})).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        body["details"],
        "reports.export depend on reports.read; archive or change them first"
    );
    let (status, body) = patch(
        &server,
        root,
        "reports.export",
        json!({"status": "archived", "display_name": "Export (retired)", "reason": "unused"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "archived");
    assert_eq!(body["display_name"], "Export (retired)");
    assert_eq!(
        body["roles"],
        json!([]),
        "archiving takes it from every role"
    );
    let (_, roles) = send(&server, root, "GET", "/api/admin/roles", None).await;
    assert_eq!(
        roles[1]["permissions"],
        json!(["posts:moderate", "reports.read"])
    );
    let (status, body) = patch(&server, root, "reports.read", json!({"status": "archived"})).await;
    assert_eq!(
        status, 200,
        "only archived permissions depend on it now: {body}"
    );

    for change in [json!({"status": "active"}), json!({"description": "back"})] {
        let (status, body) = patch(&server, root, "reports.export", change).await;
        assert_eq!(status, 409, "{body}");
        assert_eq!(body["details"], "an archived permission changes no more");
    }
    let (status, body) = grant(&server, root, "moderator", &["reports.read"]).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["details"][0]["message"],
        "names archived permissions, which cannot be granted: reports.read"
    );

    for (change, field) in [
        (json!({}), "body"),
        (json!({"reason": "only a reason"}), "body"),
        (json!({"status": "retired"}), "status"),
        (json!({"risk_level": "extreme"}), "risk_level"),
        (json!({"display_name": ""}), "display_name"),
    ] {
        let (status, body) = patch(&server, root, "posts:moderate", change.clone()).await;
        assert_eq!(status, 400, "{change}: {body}");
        assert_eq!(body["details"][0]["path"], json!([field]), "{change}");
    }
    let (status, _) = send(
        &server,
        root,
        "PATCH",
        "/api/admin/permissions/99999",
        Some(json!({"status": "disabled"})),
    )
    .await;
    assert_eq!(status, 404);
}

/// The audit entries of `action`, newest first, read through the
/// versioned surface as the super admin's token.
async fn audit(server: &TestServer, token: &str, action: &str) -> Vec<Value> {
    let (status, body) = send(
        server,
        As::Token(token),
        "GET",
        &format!("/api/v1/admin/audit-logs?action={action}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["data"].as_array().expect("entries").clone()
}

async fn roles_carry_their_grants_and_every_change_is_audited_under_its_actor(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (root_id, root) = member(&server, "root@example.com", "super_admin").await;
    let (admin_id, admin) = member(&server, "admin@example.com", "admin").await;
    let root_token = server.mint("root@example.com", "admin:super");

    let (status, roles) = send(
        &server,
        As::Session(&admin),
        "GET",
        "/api/admin/roles",
        None,
    )
    .await;
    assert_eq!(status, 200, "{roles}");
    let grants: Vec<(&str, &Value)> = roles
        .as_array()
        .expect("roles")
        .iter()
        .map(|role| (role["name"].as_str().expect("name"), &role["permissions"]))
        .collect();
    assert_eq!(
        grants,
        [
            ("user", &json!([])),
            ("moderator", &json!(["posts:moderate"])),
            ("admin", &json!(ADMIN_DEFAULTS)),
        ],
        "the default grants"
    );

    let (status, body) = grant(
        &server,
        As::Session(&root),
        "moderator",
        &["posts:moderate", "analytics:read"],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = create(
        &server,
        As::Session(&root),
        json!({"name": "reports.read", "display_name": "Read reports", "category": "reports"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = patch(
        &server,
        As::Session(&root),
        "reports.read",
        json!({"status": "disabled", "risk_level": "high", "reason": "review"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["risk_level"], "high");

    // The admin's cookie comes along with the super admin's token: the
    // token's authority allows it, and the entry names its user.
    let response = server
        .client
        .put(server.url("/api/admin/roles/user/permissions"))
        .header("cookie", &admin)
        .bearer_auth(&root_token)
        .json(&json!({"permissions": ["reports.read"]}))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 200);

    let updates = audit(&server, &root_token, "role.permissions.update").await;
    assert_eq!(updates.len(), 2, "{updates:?}");
    let (by_token, by_session) = (&updates[0], &updates[1]);
    assert_eq!(by_session["adminId"], root_id.to_string());
    assert_eq!(by_session["adminEmail"], "root@example.com");
    assert_eq!(by_session["targetType"], "role");
    assert_eq!(by_session["targetId"], "moderator");
    assert_eq!(by_session["surface"], "admin");
    assert_eq!(
        by_session["changes"]["permissions"],
        json!({"before": ["posts:moderate"], "after": ["analytics:read", "posts:moderate"]})
    );
    assert_eq!(by_session["changes"]["added"], json!(["analytics:read"]));
    assert_eq!(by_session["changes"]["reason"], "test");
    assert_eq!(by_token["adminId"], root_id.to_string());
    assert_ne!(by_token["adminId"], admin_id.to_string());
    assert_eq!(by_token["targetId"], "user");

    let changes = audit(&server, &root_token, "permission.update").await;
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0]["adminId"], root_id.to_string());
    assert_eq!(changes[0]["targetType"], "permission");
    assert_eq!(
        changes[0]["changes"]["status"],
        json!({"before": "active", "after": "disabled"})
    );
    assert_eq!(
        changes[0]["changes"]["riskLevel"],
        json!({"before": "low", "after": "high"})
    );
    assert_eq!(changes[0]["changes"]["reason"], "review");
    let created = audit(&server, &root_token, "permission.create").await;
    assert_eq!(created.len(), 1, "{created:?}");
    assert_eq!(created[0]["adminId"], root_id.to_string());

    // Refusals write nothing.
    let (status, _) = grant(&server, As::Session(&root), "moderator", &["nope"]).await;
    assert_eq!(status, 422);
    let (status, _) = grant(&server, As::Session(&admin), "moderator", &[]).await;
    assert_eq!(status, 403);
    assert_eq!(
        audit(&server, &root_token, "role.permissions.update")
            .await
            .len(),
        2
    );
}

async fn the_edit_lock_of_a_role_refuses_a_second_admin(backend: Backend) {
    let server = TestServer::start(backend).await;
    let holder = server.create_user("first@example.com", PASSWORD, "super_admin");
    let (_, second) = member(&server, "second@example.com", "super_admin").await;
    let db = server.domain().await;
    let role_id = db.role_id("moderator").await.expect("the moderator role");
    db.write(|tx| {
        Box::pin(async move {
            locks::hold(tx, Resource::Role(role_id), holder, Duration::from_secs(60)).await
        })
    })
    .await
    .expect("the first admin takes the lock");
    let (status, body) = grant(&server, As::Session(&second), "moderator", &[]).await;
    assert_eq!(status, 423, "{body}");
    assert_eq!(body["error"], "Resource locked");
    let (_, roles) = send(
        &server,
        As::Session(&second),
        "GET",
        "/api/admin/roles",
        None,
    )
    .await;
    assert_eq!(
        roles[1]["permissions"],
        json!(["posts:moderate"]),
        "unchanged"
    );
    let (status, body) = grant(&server, As::Session(&second), "admin", &ADMIN_DEFAULTS).await;
    assert_eq!(status, 200, "another role's lock is free: {body}");
}

/// Reruns the last migration as an install upgraded from the version
/// before it would: its row is forgotten and `plaza migrate` runs it.
async fn rerun_default_grants_migration(server: &TestServer) {
    server
        .sql("DELETE FROM _sqlx_migrations WHERE version = 29")
        .await;
    let output = server.cli(&["migrate"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

async fn upgrading_keeps_each_installs_capabilities(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    // Before this version the analytics dashboard was every
    // administrator's, whatever the grants said; `users:manage` was read
    // from the grants already. An install that had lost the first and
    // taken away the second, by hand:
    server
        .sql(
            "DELETE FROM role_permissions WHERE role_id = (SELECT id FROM roles WHERE name = 'admin') \
             AND permission_id IN (SELECT id FROM permissions WHERE name IN ('analytics:read', 'users:manage'))",
        )
        .await;
    rerun_default_grants_migration(&server).await;
    let (status, body) = send(
        &server,
        As::Session(&admin),
        "GET",
        "/api/admin/analytics?dateRange=7d",
        None,
    )
    .await;
    assert_eq!(status, 200, "the dashboard stays open: {body}");
    assert_eq!(
        user_list(&server, As::Session(&admin)).await,
        403,
        "a capability taken away stays away"
    );
    let (_, roles) = send(
        &server,
        As::Session(&admin),
        "GET",
        "/api/admin/roles",
        None,
    )
    .await;
    assert_eq!(
        roles[2]["permissions"],
        json!(["analytics:read", "posts:moderate"])
    );
    assert_eq!(roles[1]["permissions"], json!(["posts:moderate"]));
}

async fn the_analytics_dashboard_needs_analytics_read(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, root) = member(&server, "root@example.com", "super_admin").await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (_, moderator) = member(&server, "moderator@example.com", "moderator").await;
    for (who, expected) in [
        (As::Session(&admin), 200),
        (As::Session(&moderator), 403),
        (As::Session(&root), 200),
    ] {
        let (status, body) = send(&server, who, "GET", "/api/admin/analytics", None).await;
        assert_eq!(status, expected, "{body}");
    }
    let (status, body) = grant(
        &server,
        As::Session(&root),
        "admin",
        &["users:manage", "posts:moderate"],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = send(
        &server,
        As::Session(&admin),
        "GET",
        "/api/admin/analytics",
        None,
    )
    .await;
    assert_eq!(status, 403);
    let (status, _) = send(
        &server,
        As::Session(&root),
        "GET",
        "/api/admin/analytics",
        None,
    )
    .await;
    assert_eq!(status, 200);
}

/// Two instances on one PostgreSQL database: grants changed through one
/// are in force on the other within 5 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_through_one_instance_is_in_force_on_another_within_5_s() {
    if !common::postgres_enabled("a_grant_through_one_instance_is_in_force_on_another_within_5_s") {
        return;
    }
    let first = TestServer::start(Backend::Postgres).await;
    let second = TestServer::start_with(
        Backend::Postgres,
        &[("PLAZA_DATABASE_URL", first.database_url.as_str())],
    )
    .await;
    let (_, root) = member(&first, "root@example.com", "super_admin").await;
    let (_, admin) = member(&first, "admin@example.com", "admin").await;
    let token = first.mint("admin@example.com", "admin:read");
    assert_eq!(user_list(&first, As::Session(&admin)).await, 200);

    let until_first_answers = |expected: u16| {
        let first = &first;
        let admin = &admin;
        let token = &token;
        async move {
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                let by_session = user_list(first, As::Session(admin)).await;
                let by_token = user_list(first, As::Token(token)).await;
                if (by_session, by_token) == (expected, expected) {
                    return true;
                }
                if Instant::now() > deadline {
                    return false;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    let (status, body) = grant(
        &second,
        As::Session(&root),
        "admin",
        &["analytics:read", "posts:moderate"],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        until_first_answers(403).await,
        "the revocation through the second instance is not in force on the first"
    );
    let (status, body) = grant(&second, As::Session(&root), "admin", &ADMIN_DEFAULTS).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        until_first_answers(200).await,
        "the grant through the second instance is not in force on the first"
    );
}
