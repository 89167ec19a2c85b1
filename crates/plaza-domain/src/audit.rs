//! The audit trail: every change an admin or moderator makes (and admin
//! token minting), with who, from where, and the change as before/after.
//! Entries are written with [`record`] inside the change's own unit of work
//! ([`Database::write`](crate::Database::write)), so a change is never
//! without its entry nor an entry without its change. There is no update or
//! delete path: the trail is append-only.

use serde_json::{Map, Value};
use sqlx::FromRow;

use crate::dialect::Dialect;
use crate::listing::{Arg, Args, Page, bind_all, where_clause};
use crate::time::now_millis;
use crate::users::User;
use crate::{Database, DomainError, Tx};

/// Where an audited action came from (DECISIONS.md: `v1` or `admin` for the
/// two admin surfaces; Plaza adds `api` for the general one and `cli`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditSurface {
    AdminV1,
    Admin,
    Api,
    CommandLine,
    /// Plaza's own background jobs (a ban running out).
    System,
    /// The operator console's pages at `/admin/`.
    Console,
}

impl AuditSurface {
    pub fn as_str(self) -> &'static str {
        match self {
            AuditSurface::AdminV1 => "v1",
            AuditSurface::Admin => "admin",
            AuditSurface::Api => "api",
            AuditSurface::CommandLine => "cli",
            AuditSurface::System => "system",
            AuditSurface::Console => "console",
        }
    }
}

/// Who acted and from where. The command line has no actor (the operator
/// is whoever can run it) and no address.
#[derive(Debug, Clone)]
pub struct AuditContext {
    pub actor_id: Option<i64>,
    pub actor_email: Option<String>,
    pub ip_address: Option<String>,
    pub user_agent: Option<String>,
    pub surface: AuditSurface,
}

impl AuditContext {
    /// An action taken from the command line.
    pub fn command_line() -> Self {
        AuditContext::without_actor(AuditSurface::CommandLine)
    }

    /// An action a background job takes by itself.
    pub fn system() -> Self {
        AuditContext::without_actor(AuditSurface::System)
    }

    fn without_actor(surface: AuditSurface) -> Self {
        AuditContext {
            actor_id: None,
            actor_email: None,
            ip_address: None,
            user_agent: None,
            surface,
        }
    }
}

/// One action to record.
#[derive(Debug, Clone)]
pub struct AuditAction<'a> {
    /// Dotted name, e.g. `user.update`, `user.delete`, `admin_token.mint`.
    pub action: &'a str,
    /// `user`, `post`, `report`, …
    pub target_type: &'a str,
    pub target_id: Option<String>,
    /// `{field: {before, after}}` for updates; a snapshot for deletions.
    pub changes: Value,
}

/// The columns an entry is written with, in this order.
const AUDIT_COLUMNS: &str = "created_at, actor_id, actor_email, action, target_type, target_id, \
    ip_address, user_agent, changes, surface";
/// How many values [`AUDIT_COLUMNS`] takes.
const AUDIT_VALUES: usize = 10;

/// How many read entries one statement writes (ten values each, well
/// within either engine's limit on bound values).
const READ_ENTRIES_PER_INSERT: usize = 100;

/// Appends an entry in `tx`, the transaction of the change it describes.
pub async fn record(
    tx: &mut Tx<'_>,
    context: &AuditContext,
    action: AuditAction<'_>,
) -> Result<i64, DomainError> {
    let (id,): (i64,) = sqlx::query_as(&format!(
        "INSERT INTO audit_log ({AUDIT_COLUMNS}) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id"
    ))
    .bind(now_millis())
    .bind(context.actor_id)
    .bind(context.actor_email.clone())
    .bind(action.action)
    .bind(action.target_type)
    .bind(action.target_id)
    .bind(context.ip_address.clone())
    .bind(context.user_agent.clone())
    .bind(action.changes.to_string())
    .bind(context.surface.as_str())
    .fetch_one(&mut **tx)
    .await?;
    Ok(id)
}

impl Database {
    /// Records that things were read (admins viewed lists), in a unit of
    /// work of their own: the server commits the entries of concurrent
    /// reads together. Nothing changed, so nothing else waits on the
    /// entries: on PostgreSQL they commit without waiting for the disk
    /// ([`Dialect::unflushed_commit`]), which takes an fsync off every
    /// audited read. A crash can lose the last fraction of a second of
    /// read entries, never a change nor a change's entry.
    pub async fn record_reads(
        &self,
        entries: Vec<(AuditContext, AuditAction<'static>)>,
    ) -> Result<(), DomainError> {
        self.write(move |tx| {
            Box::pin(async move {
                if let Some(statement) = Dialect::of(tx).unflushed_commit() {
                    sqlx::query(statement).execute(&mut **tx).await?;
                }
                for chunk in entries.chunks(READ_ENTRIES_PER_INSERT) {
                    let rows = (0..chunk.len())
                        .map(|row| {
                            let first = row * AUDIT_VALUES;
                            let places: Vec<String> = (first + 1..=first + AUDIT_VALUES)
                                .map(|n| format!("${n}"))
                                .collect();
                            format!("({})", places.join(", "))
                        })
                        .collect::<Vec<_>>()
                        .join(", ");
                    let sql = format!("INSERT INTO audit_log ({AUDIT_COLUMNS}) VALUES {rows}");
                    let now = now_millis();
                    let mut insert = sqlx::query(&sql);
                    for (context, action) in chunk {
                        insert = insert
                            .bind(now)
                            .bind(context.actor_id)
                            .bind(context.actor_email.clone())
                            .bind(action.action)
                            .bind(action.target_type)
                            .bind(action.target_id.clone())
                            .bind(context.ip_address.clone())
                            .bind(context.user_agent.clone())
                            .bind(action.changes.to_string())
                            .bind(context.surface.as_str());
                    }
                    insert.execute(&mut **tx).await?;
                }
                Ok(())
            })
        })
        .await
    }
}

/// The `{before, after}` pair of one changed field.
pub fn change(before: impl Into<Value>, after: impl Into<Value>) -> Value {
    serde_json::json!({"before": before.into(), "after": after.into()})
}

/// `{field: {before, after}}` for each field an update can change that
/// differs between two states of a user (the change an entry records when
/// someone other than the user makes it), named as the routes name them.
pub fn user_changes(before: &User, after: &User) -> Map<String, Value> {
    let (old, new) = (&before.row, &after.row);
    let mut changed = Map::new();
    let mut compare = |field: &str, before: Value, after: Value| {
        if before != after {
            changed.insert(field.into(), change(before, after));
        }
    };
    compare("name", old.name.clone().into(), new.name.clone().into());
    compare(
        "username",
        old.username.clone().into(),
        new.username.clone().into(),
    );
    compare("image", old.image.clone().into(), new.image.clone().into());
    compare("bio", old.bio.clone().into(), new.bio.clone().into());
    compare(
        "location",
        old.location.clone().into(),
        new.location.clone().into(),
    );
    compare(
        "profile_public",
        old.profile_public.0.into(),
        new.profile_public.0.into(),
    );
    compare("is_bot", old.is_bot.0.into(), new.is_bot.0.into());
    compare(
        "role",
        before.role.as_str().into(),
        after.role.as_str().into(),
    );
    compare(
        "status",
        before.status.as_str().into(),
        after.status.as_str().into(),
    );
    compare(
        "isVerified",
        old.email_verified_at.is_some().into(),
        new.email_verified_at.is_some().into(),
    );
    compare(
        "notes",
        old.admin_notes.clone().into(),
        new.admin_notes.clone().into(),
    );
    changed
}

/// A recorded entry.
#[derive(Debug, Clone, FromRow)]
pub struct AuditEntry {
    pub id: i64,
    pub created_at: i64,
    pub actor_id: Option<i64>,
    pub actor_email: Option<String>,
    pub action: String,
    pub target_type: String,
    pub target_id: Option<String>,
    pub ip_address: Option<String>,
    pub user_agent: Option<String>,
    /// JSON text of the change.
    pub changes: String,
    pub surface: String,
}

/// Which entries a page of the trail holds; every filter is optional.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    pub actor_id: Option<i64>,
    pub action: Option<String>,
    /// Unix milliseconds, inclusive.
    pub since: Option<i64>,
    /// Unix milliseconds, exclusive.
    pub until: Option<i64>,
}

/// One page of entries, newest first, and how many match in all.
#[derive(Debug, Clone)]
pub struct AuditPage {
    pub entries: Vec<AuditEntry>,
    pub total: i64,
}

pub(crate) const ENTRY_COLUMNS: &str = "id, created_at, actor_id, actor_email, action, target_type, \
     target_id, ip_address, user_agent, changes, surface";

impl AuditFilter {
    fn conditions(&self, args: &mut Args) -> Vec<String> {
        let mut conditions = Vec::new();
        if let Some(actor) = self.actor_id {
            conditions.push(format!("actor_id = {}", args.push(Arg::Int(actor))));
        }
        if let Some(action) = &self.action {
            conditions.push(format!("action = {}", args.push(Arg::Text(action.clone()))));
        }
        if let Some(since) = self.since {
            conditions.push(format!("created_at >= {}", args.push(Arg::Int(since))));
        }
        if let Some(until) = self.until {
            conditions.push(format!("created_at < {}", args.push(Arg::Int(until))));
        }
        conditions
    }
}

impl Database {
    /// A page of the entries matching `filter`, newest first.
    pub async fn audit_page(
        &self,
        filter: &AuditFilter,
        page: Page,
    ) -> Result<AuditPage, DomainError> {
        let mut count_args = Args::default();
        let conditions = filter.conditions(&mut count_args);
        let count_sql = format!(
            "SELECT COUNT(*) FROM audit_log{}",
            where_clause(&conditions)
        );
        let (total,): (i64,) = bind_all(sqlx::query_as(&count_sql), count_args.into_vec())
            .fetch_one(&mut *self.lease().await?)
            .await?;
        if page.offset >= total || page.limit == 0 {
            return Ok(AuditPage {
                entries: Vec::new(),
                total,
            });
        }
        let mut args = Args::default();
        let conditions = filter.conditions(&mut args);
        let limit = args.push(Arg::Int(page.limit));
        let offset = args.push(Arg::Int(page.offset));
        let sql = format!(
            "SELECT {ENTRY_COLUMNS} FROM audit_log{} ORDER BY created_at DESC, id DESC \
             LIMIT {limit} OFFSET {offset}",
            where_clause(&conditions)
        );
        let entries = bind_all(sqlx::query_as(&sql), args.into_vec())
            .fetch_all(&mut *self.lease().await?)
            .await?;
        Ok(AuditPage { entries, total })
    }

    /// The newest entries first, at most `limit`.
    #[cfg(feature = "testing")]
    pub async fn audit_entries(&self, limit: i64) -> Result<Vec<AuditEntry>, DomainError> {
        Ok(sqlx::query_as(&format!(
            "SELECT {ENTRY_COLUMNS} FROM audit_log ORDER BY id DESC LIMIT $1"
        ))
        .bind(limit)
        .fetch_all(&mut *self.lease().await?)
        .await?)
    }
}
