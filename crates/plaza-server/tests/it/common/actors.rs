//! Who a test acts as: one signed-in member of each role and one admin
//! token of each permission, made once per test, and a status table that
//! runs one request as each of them, so an authorization matrix reads as
//! a table (actor → expected status) and reports every mismatch at once.

use serde_json::Value;

use super::{As, PASSWORD, TestServer};

/// A signed-in user.
#[derive(Debug, Clone)]
pub struct Member {
    pub id: i64,
    pub email: String,
    /// The `Cookie` header value holding the session.
    pub cookie: String,
}

impl Member {
    /// Creates a user with `role` from the command line and signs them in.
    pub async fn join(server: &TestServer, email: &str, role: &str) -> Self {
        let id = server.create_user(email, PASSWORD, role);
        Member {
            id,
            email: email.to_owned(),
            cookie: server.sign_in(email, PASSWORD).await,
        }
    }

    /// Requests as this member's session.
    pub fn session(&self) -> As<'_> {
        As::Session(&self.cookie)
    }
}

/// Everyone an authorization rule can tell apart: a member of each role
/// (`{role}@example.com`) and an admin token of each permission (the
/// `admin:super` one held by the super admin, the others by the admin).
pub struct Cast {
    pub user: Member,
    pub moderator: Member,
    pub admin: Member,
    pub super_admin: Member,
    pub read_token: String,
    pub write_token: String,
    pub delete_token: String,
    pub super_token: String,
}

/// The column names of [`Cast::actors`], in order; a table's header.
pub const CAST_COLUMNS: [&str; 9] = [
    "anonymous",
    "user",
    "moderator",
    "admin",
    "super_admin",
    "admin:read",
    "admin:write",
    "admin:delete",
    "admin:super",
];

impl Cast {
    pub async fn new(server: &TestServer) -> Self {
        let admin = Member::join(server, "admin@example.com", "admin").await;
        let super_admin = Member::join(server, "super_admin@example.com", "super_admin").await;
        Cast {
            user: Member::join(server, "user@example.com", "user").await,
            moderator: Member::join(server, "moderator@example.com", "moderator").await,
            read_token: server.mint(&admin.email, "admin:read"),
            write_token: server.mint(&admin.email, "admin:write"),
            delete_token: server.mint(&admin.email, "admin:delete"),
            super_token: server.mint(&super_admin.email, "admin:super"),
            admin,
            super_admin,
        }
    }

    /// Every actor, named as [`CAST_COLUMNS`] names them: anonymous, the
    /// four sessions, then the four tokens.
    pub fn actors(&self) -> Vec<(&'static str, As<'_>)> {
        let whom = [
            As::Anonymous,
            self.user.session(),
            self.moderator.session(),
            self.admin.session(),
            self.super_admin.session(),
            As::Token(&self.read_token),
            As::Token(&self.write_token),
            As::Token(&self.delete_token),
            As::Token(&self.super_token),
        ];
        CAST_COLUMNS.into_iter().zip(whom).collect()
    }
}

/// One request of a status table and the status each actor must get, in
/// the table's column order.
pub struct Row {
    pub method: &'static str,
    pub path: String,
    pub body: Option<Value>,
    pub expected: Vec<u16>,
}

/// A [`Row`]: `row("GET", "/api/metrics", None, [401, 200, …])`.
pub fn row(
    method: &'static str,
    path: impl Into<String>,
    body: Option<Value>,
    expected: impl Into<Vec<u16>>,
) -> Row {
    Row {
        method,
        path: path.into(),
        body,
        expected: expected.into(),
    }
}

/// Sends each row's request as every actor, rows in order (a row may
/// change what later rows see), and fails listing every status that
/// differs from the table, each with the body that came back.
pub async fn assert_statuses(server: &TestServer, actors: &[(&str, As<'_>)], rows: Vec<Row>) {
    let mut mismatches = Vec::new();
    for Row {
        method,
        path,
        body,
        expected,
    } in rows
    {
        assert_eq!(
            expected.len(),
            actors.len(),
            "{method} {path}: the row needs one status per actor"
        );
        for ((name, who), want) in actors.iter().zip(expected) {
            let response = server.send(*who, method, &path, body.as_ref()).await;
            let status = response.status().as_u16();
            if status != want {
                let answer = response.text().await.unwrap_or_default();
                mismatches.push(format!(
                    "{method} {path} as {name}: expected {want}, got {status}: {answer}"
                ));
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} unexpected statuses:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
