//! Reading users: one by id or email, and the filtered and ordered user
//! lists with their totals (the trigger-kept counter where nothing narrows
//! the list). A search for a part of a username or email reads trigram
//! indexes: PostgreSQL's serve the search's `LIKE` itself; on SQLite the
//! list first narrows to the users the FTS5 trigram table matches.

use super::model::{Role, USER_COLUMNS, User, UserRow, UserStatus, normalize_email};
use crate::dialect::Backend;
use crate::listing::{Arg, Args, Page, SortOrder, bind_all, escape_like, where_clause};
use crate::{Database, DomainError};

impl Database {
    pub async fn user_by_id(&self, id: i64) -> Result<User, DomainError> {
        let row: Option<UserRow> =
            sqlx::query_as(&format!("SELECT {USER_COLUMNS} FROM users WHERE id = $1"))
                .bind(id)
                .fetch_optional(&mut *self.lease().await?)
                .await?;
        row.ok_or(DomainError::NotFound("user"))?.try_into()
    }

    pub async fn user_by_email(&self, email: &str) -> Result<Option<User>, DomainError> {
        let row: Option<UserRow> = sqlx::query_as(&format!(
            "SELECT {USER_COLUMNS} FROM users WHERE email = $1"
        ))
        .bind(normalize_email(email))
        .fetch_optional(&mut *self.lease().await?)
        .await?;
        row.map(User::try_from).transpose()
    }
}

/// The columns a user list may be sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UserSort {
    #[default]
    CreatedAt,
    Username,
    Email,
    LastLoginAt,
}

impl UserSort {
    /// The sorts of the general user list.
    pub const ALL: [UserSort; 2] = [UserSort::CreatedAt, UserSort::Username];
    /// The admin list also sorts by email and last sign-in.
    pub const ADMIN: [UserSort; 4] = [
        UserSort::CreatedAt,
        UserSort::Username,
        UserSort::Email,
        UserSort::LastLoginAt,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            UserSort::CreatedAt => "created_at",
            UserSort::Username => "username",
            UserSort::Email => "email",
            UserSort::LastLoginAt => "last_login_at",
        }
    }

    pub fn parse(name: &str) -> Option<UserSort> {
        UserSort::ALL.into_iter().find(|sort| sort.as_str() == name)
    }
}

/// Filters and order of a user list.
#[derive(Debug, Clone, Default)]
pub struct UserQuery {
    pub role: Option<Role>,
    pub status: Option<UserStatus>,
    /// Part of the username or email (admin lists), matched without regard
    /// to ASCII case.
    pub search: Option<String>,
    pub sort: UserSort,
    pub order: SortOrder,
}

/// One page of users and how many match in all.
#[derive(Debug, Clone)]
pub struct UserPage {
    pub users: Vec<User>,
    pub total: i64,
}

/// How many users there are, from the row the triggers keep.
pub(crate) const ALL_USERS_TOTAL: &str = "(SELECT total FROM user_counts WHERE scope = 'all')";

/// A search shorter than a trigram matches nothing in a trigram index.
const TRIGRAM_CHARS: usize = 3;

/// Most users a search may match in SQLite's trigram table for a list to
/// read only them: past that, reading the users in the list's order finds
/// a page of matches sooner than reading and sorting every match.
const MAX_NARROWED_MATCHES: i64 = 2000;

/// Where a list's search looks for its users.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) enum Narrowing {
    /// Through the search's `LIKE` alone (on PostgreSQL its trigram
    /// indexes serve it).
    #[default]
    Like,
    /// Only among the users whose trigrams match this FTS5 phrase (SQLite),
    /// the `LIKE` then deciding: the trigram table folds case more widely.
    Trigrams(String),
}

impl Database {
    /// Where `query`'s search looks for its users: among the trigram
    /// matches on SQLite when the search has a trigram and matches at most
    /// [`MAX_NARROWED_MATCHES`] users there, else through the `LIKE`.
    pub(super) async fn narrowing(&self, query: &UserQuery) -> Result<Narrowing, DomainError> {
        let Some(search) = query.search.as_deref() else {
            return Ok(Narrowing::Like);
        };
        if self.dialect().0 != Backend::Sqlite || search.chars().count() < TRIGRAM_CHARS {
            return Ok(Narrowing::Like);
        }
        // One FTS5 string: the trigram tokenizer reads every character of
        // it, a doubled quote standing for one.
        let phrase = format!("\"{}\"", search.replace('"', "\"\""));
        let (matches,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM (SELECT rowid FROM users_substring_fts \
             WHERE users_substring_fts MATCH $1 LIMIT $2) matched",
        )
        .bind(&phrase)
        .bind(MAX_NARROWED_MATCHES + 1)
        .fetch_one(&mut *self.lease().await?)
        .await?;
        Ok(if matches > MAX_NARROWED_MATCHES {
            Narrowing::Like
        } else {
            Narrowing::Trigrams(phrase)
        })
    }
}

impl UserQuery {
    /// The conditions of the filters and of what the caller may see, their
    /// values added to `args`; the search looks where `narrowing` says.
    pub(super) fn conditions(
        &self,
        everyone: bool,
        narrowing: &Narrowing,
        args: &mut Args,
    ) -> Vec<String> {
        let mut conditions = Vec::new();
        if !everyone {
            conditions.push("u.status = 'active' AND u.profile_public = TRUE".to_owned());
        }
        if let Some(role) = self.role {
            let role = args.push(Arg::Text(role.as_str().to_owned()));
            conditions.push(format!("u.role = {role}"));
        }
        if let Some(status) = self.status {
            let status = args.push(Arg::Text(status.as_str().to_owned()));
            conditions.push(format!("u.status = {status}"));
        }
        if let Some(search) = &self.search {
            let pattern = args.push(Arg::Text(format!(
                "%{}%",
                escape_like(&search.to_ascii_lowercase())
            )));
            conditions.push(format!(
                "(LOWER(u.username) LIKE {pattern} ESCAPE '\\' OR u.email LIKE {pattern} ESCAPE '\\')"
            ));
            if let Narrowing::Trigrams(phrase) = narrowing {
                let phrase = args.push(Arg::Text(phrase.clone()));
                conditions.push(format!(
                    "u.id IN (SELECT rowid FROM users_substring_fts WHERE users_substring_fts MATCH {phrase})"
                ));
            }
        }
        conditions
    }

    /// The count statement of a list.
    fn count_sql(&self, everyone: bool, narrowing: &Narrowing) -> (String, Vec<Arg>) {
        let mut args = Args::default();
        let total = self.total_sql(everyone, narrowing, &mut args);
        (format!("SELECT {total}"), args.into_vec())
    }

    /// An SQL expression for how many users match: the trigger-kept counter
    /// row when nothing narrows an admin's list (so its cost does not grow
    /// with the users), else a count of the index range.
    pub(super) fn total_sql(
        &self,
        everyone: bool,
        narrowing: &Narrowing,
        args: &mut Args,
    ) -> String {
        let conditions = self.conditions(everyone, narrowing, args);
        if conditions.is_empty() {
            return ALL_USERS_TOTAL.to_owned();
        }
        format!(
            "(SELECT COUNT(*) FROM users u{})",
            where_clause(&conditions)
        )
    }

    /// ORDER BY text from fixed strings only.
    pub(super) fn order_by(&self) -> String {
        let direction = self.order.sql();
        match self.sort {
            UserSort::CreatedAt => format!("u.created_at {direction}, u.id {direction}"),
            UserSort::Username => format!("u.username {direction}"),
            UserSort::Email => format!("u.email {direction}"),
            // Never signed in sorts as the oldest sign-in on both engines
            // (they place NULLs at opposite ends).
            UserSort::LastLoginAt => {
                format!("COALESCE(u.last_login_at, 0) {direction}, u.id {direction}")
            }
        }
    }
}

impl Database {
    /// One page of users matching `query`: active users with public
    /// profiles, or everyone when `everyone` (an admin is asking).
    pub async fn list_users(
        &self,
        query: &UserQuery,
        everyone: bool,
        page: Page,
    ) -> Result<UserPage, DomainError> {
        let narrowing = self.narrowing(query).await?;
        let (count_sql, count_args) = query.count_sql(everyone, &narrowing);
        let (total,): (i64,) = bind_all(sqlx::query_as(&count_sql), count_args)
            .fetch_one(&mut *self.lease().await?)
            .await?;
        if page.offset >= total || page.limit == 0 {
            return Ok(UserPage {
                users: Vec::new(),
                total,
            });
        }
        let (sql, args) = list_users_sql(query, everyone, &narrowing, page);
        let rows: Vec<UserRow> = bind_all(sqlx::query_as(&sql), args)
            .fetch_all(&mut *self.lease().await?)
            .await?;
        let users = rows
            .into_iter()
            .map(User::try_from)
            .collect::<Result<_, _>>()?;
        Ok(UserPage { users, total })
    }

    /// The query plans of [`Database::list_users`], for the tests that
    /// check every list reads an index.
    #[cfg(feature = "testing")]
    pub async fn explain_list_users(
        &self,
        query: &UserQuery,
        everyone: bool,
    ) -> Result<Vec<String>, DomainError> {
        let narrowing = self.narrowing(query).await?;
        let (sql, args) = list_users_sql(
            query,
            everyone,
            &narrowing,
            Page {
                limit: 20,
                offset: 0,
            },
        );
        let mut plan = self.explain(&sql, args).await?;
        let (count_sql, count_args) = query.count_sql(everyone, &narrowing);
        plan.extend(self.explain(&count_sql, count_args).await?);
        Ok(plan)
    }
}

/// The page statement of [`Database::list_users`].
fn list_users_sql(
    query: &UserQuery,
    everyone: bool,
    narrowing: &Narrowing,
    page: Page,
) -> (String, Vec<Arg>) {
    let mut args = Args::default();
    let conditions = query.conditions(everyone, narrowing, &mut args);
    let limit = args.push(Arg::Int(page.limit));
    let offset = args.push(Arg::Int(page.offset));
    let columns = USER_COLUMNS
        .split(", ")
        .map(|column| format!("u.{column}"))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "SELECT {columns} FROM users u{} ORDER BY {} LIMIT {limit} OFFSET {offset}",
        where_clause(&conditions),
        query.order_by()
    );
    (sql, args.into_vec())
}
