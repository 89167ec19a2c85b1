//! User accounts: creation, lookup, status and sign-in bookkeeping.

use sqlx::{Acquire, FromRow};

use crate::listing::{Arg, Args, JsonFlag, Page, SortOrder, bind_all, where_clause};
use crate::time::now_millis;
use crate::{Database, DomainError, Flag, Tx};

/// The roles Plaza knows, lowest first. `super_admin` is only granted from the
/// command line or the database.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Moderator,
    Admin,
    SuperAdmin,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::User, Role::Moderator, Role::Admin, Role::SuperAdmin];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Moderator => "moderator",
            Role::Admin => "admin",
            Role::SuperAdmin => "super_admin",
        }
    }

    pub fn parse(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|role| role.as_str() == name)
    }

    /// "Administrator or higher" in the spec.
    pub fn is_admin(self) -> bool {
        self >= Role::Admin
    }

    pub fn is_moderator(self) -> bool {
        self >= Role::Moderator
    }
}

/// Account state as the admin surfaces show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UserStatus {
    Active,
    Inactive,
    Banned,
}

impl UserStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            UserStatus::Active => "active",
            UserStatus::Inactive => "inactive",
            UserStatus::Banned => "banned",
        }
    }

    pub fn parse(name: &str) -> Option<UserStatus> {
        [UserStatus::Active, UserStatus::Inactive, UserStatus::Banned]
            .into_iter()
            .find(|status| status.as_str() == name)
    }
}

/// A user row.
#[derive(Debug, Clone, FromRow)]
pub struct UserRow {
    pub id: i64,
    pub email: String,
    pub email_verified_at: Option<i64>,
    pub username: String,
    pub name: Option<String>,
    pub image: Option<String>,
    pub bio: String,
    pub location: String,
    pub profile_public: Flag,
    pub password_hash: Option<String>,
    pub role: String,
    pub status: String,
    pub admin_notes: Option<String>,
    pub login_count: i64,
    pub last_login_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A user with typed role and status.
#[derive(Debug, Clone)]
pub struct User {
    pub row: UserRow,
    pub role: Role,
    pub status: UserStatus,
}

impl TryFrom<UserRow> for User {
    type Error = DomainError;

    fn try_from(row: UserRow) -> Result<Self, DomainError> {
        let role = Role::parse(&row.role).ok_or_else(|| {
            DomainError::Conflict(format!("user {} has unknown role {}", row.id, row.role))
        })?;
        let status = UserStatus::parse(&row.status).ok_or_else(|| {
            DomainError::Conflict(format!("user {} has unknown status {}", row.id, row.status))
        })?;
        Ok(User { row, role, status })
    }
}

impl User {
    pub fn id(&self) -> i64 {
        self.row.id
    }

    pub fn is_active(&self) -> bool {
        self.status == UserStatus::Active
    }
}

pub(crate) const USER_COLUMNS: &str = "id, email, email_verified_at, username, name, image, bio, location, \
     profile_public, password_hash, role, status, admin_notes, login_count, last_login_at, \
     created_at, updated_at";

/// What creating a user needs; the email is stored lower-cased.
#[derive(Debug, Clone)]
pub struct NewUser {
    pub email: String,
    pub email_verified: bool,
    pub username: Option<String>,
    pub name: Option<String>,
    pub image: Option<String>,
    pub password_hash: Option<String>,
    pub role: Role,
}

/// The canonical form emails are stored and compared in: trimmed, ASCII
/// letters lower-cased. Full Unicode folding would turn look-alikes into
/// other people's addresses (the Kelvin sign `K` into `k`).
pub fn normalize_email(email: &str) -> String {
    email.trim().to_ascii_lowercase()
}

const USERNAME_TAKEN: &str = "username is taken";

/// How often a derived username is derived again when concurrent sign-ups
/// race for the same one.
const DERIVED_USERNAME_ATTEMPTS: u32 = 8;

/// Usernames: 3–30 characters of `a-z`, `0-9`, `_`, `-`, `.`, starting with a
/// letter or digit. Sign-up checks the chosen one with this.
pub fn is_valid_username(username: &str) -> bool {
    let length = username.chars().count();
    (3..=30).contains(&length)
        && username
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.'))
        && username
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
}

/// A username derived from a display name or an email's local part: lower
/// case, other characters dropped, padded to 3, cut to 24 so a numeric suffix
/// still fits.
pub fn username_base(name: Option<&str>, email: &str) -> String {
    let source = name
        .filter(|name| name.chars().any(|c| c.is_ascii_alphanumeric()))
        .unwrap_or_else(|| email.split('@').next().unwrap_or(email));
    let mut base: String = source
        .to_lowercase()
        .chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.'))
        .collect();
    base = base
        .trim_start_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_owned();
    base.truncate(24);
    while base.len() < 3 {
        base.push('0');
    }
    base
}

/// Creates a user in `tx`, deriving a free username when none is given. A
/// taken email or chosen username is a [`DomainError::Conflict`]; a derived
/// username that another sign-up took in the meantime is derived again,
/// each attempt inside a savepoint so that a failed insert leaves `tx`
/// usable on PostgreSQL.
pub async fn create(tx: &mut Tx<'_>, new: NewUser) -> Result<User, DomainError> {
    let email = normalize_email(&new.email);
    let Some(chosen) = new.username.clone() else {
        let base = username_base(new.name.as_deref(), &email);
        let mut attempts = 0;
        loop {
            let username = free_username(tx, &base).await?;
            let mut attempt = tx.begin().await?;
            match insert(&mut attempt, &new, &email, &username).await {
                Ok(user) => {
                    attempt.commit().await?;
                    return Ok(user);
                }
                Err(DomainError::Conflict(message))
                    if message == USERNAME_TAKEN && attempts < DERIVED_USERNAME_ATTEMPTS =>
                {
                    attempt.rollback().await?;
                    attempts += 1;
                }
                Err(error) => return Err(error),
            }
        }
    };
    insert(tx, &new, &email, &chosen).await
}

async fn insert(
    tx: &mut Tx<'_>,
    new: &NewUser,
    email: &str,
    username: &str,
) -> Result<User, DomainError> {
    let now = now_millis();
    let row: UserRow = sqlx::query_as(&format!(
        "INSERT INTO users (email, email_verified_at, username, name, image, password_hash, role, \
         status, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'active', $8, $8) RETURNING {USER_COLUMNS}"
    ))
    .bind(email)
    .bind(new.email_verified.then_some(now))
    .bind(username)
    .bind(&new.name)
    .bind(&new.image)
    .bind(&new.password_hash)
    .bind(new.role.as_str())
    .bind(now)
    .fetch_one(&mut **tx)
    .await
    .map_err(|error| match DomainError::from(error) {
        DomainError::Conflict(message) if message.contains("username") => {
            DomainError::Conflict(USERNAME_TAKEN.to_owned())
        }
        DomainError::Conflict(_) => DomainError::Conflict("email is already registered".to_owned()),
        other => other,
    })?;
    User::try_from(row)
}

/// `base`, or `base` with the smallest numeric suffix that is free.
async fn free_username(tx: &mut Tx<'_>, base: &str) -> Result<String, DomainError> {
    let taken: Vec<(String,)> =
        sqlx::query_as("SELECT username FROM users WHERE username = $1 OR username LIKE $2")
            .bind(base)
            .bind(format!("{base}%"))
            .fetch_all(&mut **tx)
            .await?;
    let taken: std::collections::HashSet<String> = taken.into_iter().map(|(name,)| name).collect();
    if !taken.contains(base) {
        return Ok(base.to_owned());
    }
    Ok((2..)
        .map(|suffix| format!("{base}{suffix}"))
        .find(|candidate| !taken.contains(candidate))
        .unwrap_or_else(|| base.to_owned()))
}

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

/// Counts a successful sign-in, in the unit of work that starts its session.
pub async fn record_login(tx: &mut Tx<'_>, user_id: i64) -> Result<(), DomainError> {
    sqlx::query("UPDATE users SET login_count = login_count + 1, last_login_at = $1 WHERE id = $2")
        .bind(now_millis())
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
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

    pub fn parse_admin(name: &str) -> Option<UserSort> {
        UserSort::ADMIN
            .into_iter()
            .find(|sort| sort.as_str() == name)
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

/// Fields an update changes; `None` keeps the current value, and for the
/// nullable ones `Some(None)` clears it.
#[derive(Debug, Clone, Default)]
pub struct UserChanges {
    pub name: Option<Option<String>>,
    pub username: Option<String>,
    pub image: Option<Option<String>>,
    pub bio: Option<String>,
    pub location: Option<String>,
    pub profile_public: Option<bool>,
    pub role: Option<Role>,
    pub status: Option<UserStatus>,
    /// Marks the email verified (now) or not.
    pub email_verified: Option<bool>,
    /// The admins' private notes on the user.
    pub admin_notes: Option<Option<String>>,
}

impl User {
    /// Whether anyone may see this user: active, with a public profile.
    pub fn is_public(&self) -> bool {
        self.is_active() && self.row.profile_public.0
    }
}

/// How many users there are, from the row the triggers keep.
pub(crate) const ALL_USERS_TOTAL: &str = "(SELECT total FROM user_counts WHERE scope = 'all')";

impl UserQuery {
    /// The conditions of the filters and of what the caller may see, their
    /// values added to `args`.
    fn conditions(&self, everyone: bool, args: &mut Args) -> Vec<String> {
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
        }
        conditions
    }

    /// The count statement of a list.
    fn count_sql(&self, everyone: bool) -> (String, Vec<Arg>) {
        let mut args = Args::default();
        let total = self.total_sql(everyone, &mut args);
        (format!("SELECT {total}"), args.into_vec())
    }

    /// An SQL expression for how many users match: the trigger-kept counter
    /// row when nothing narrows an admin's list (counting 100,000 users was
    /// a fifth of a page's time on SQLite), else a count of the index range.
    fn total_sql(&self, everyone: bool, args: &mut Args) -> String {
        let conditions = self.conditions(everyone, args);
        if conditions.is_empty() {
            return ALL_USERS_TOTAL.to_owned();
        }
        format!(
            "(SELECT COUNT(*) FROM users u{})",
            where_clause(&conditions)
        )
    }

    /// ORDER BY text from fixed strings only.
    fn order_by(&self) -> String {
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
        let (count_sql, count_args) = query.count_sql(everyone);
        let (total,): (i64,) = bind_all(sqlx::query_as(&count_sql), count_args)
            .fetch_one(&mut *self.lease().await?)
            .await?;
        if page.offset >= total || page.limit == 0 {
            return Ok(UserPage {
                users: Vec::new(),
                total,
            });
        }
        let (sql, args) = list_users_sql(query, everyone, page);
        let rows: Vec<UserRow> = bind_all(sqlx::query_as(&sql), args)
            .fetch_all(&mut *self.lease().await?)
            .await?;
        let users = rows
            .into_iter()
            .map(User::try_from)
            .collect::<Result<_, _>>()?;
        Ok(UserPage { users, total })
    }

    /// The query plans of [`Database::list_users`], for tests that check
    /// every list reads an index.
    pub async fn explain_list_users(
        &self,
        query: &UserQuery,
        everyone: bool,
    ) -> Result<Vec<String>, DomainError> {
        let (sql, args) = list_users_sql(
            query,
            everyone,
            Page {
                limit: 20,
                offset: 0,
            },
        );
        let mut plan = self.explain(&sql, args).await?;
        let (count_sql, count_args) = query.count_sql(everyone);
        plan.extend(self.explain(&count_sql, count_args).await?);
        Ok(plan)
    }
}

/// Something a user did lately, for the admin user detail.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct Activity {
    /// `sign_in`, `post` or `report`.
    pub kind: String,
    pub at: i64,
    /// The post's title, the post reported, the sign-in's address.
    pub detail: Option<String>,
    /// The post concerned, for posts and reports.
    pub post_id: Option<i64>,
}

impl Database {
    /// A user's latest sign-ins, posts and reports made, newest first, at
    /// most `limit` (each part read through its own index).
    pub async fn recent_activity(
        &self,
        user_id: i64,
        limit: i64,
    ) -> Result<Vec<Activity>, DomainError> {
        let rows = sqlx::query_as(
            "SELECT kind, at, detail, post_id FROM ( \
               SELECT * FROM (SELECT 'sign_in' AS kind, created_at AS at, ip_address AS detail, \
                 CAST(NULL AS BIGINT) AS post_id FROM sign_ins WHERE user_id = $1 \
                 ORDER BY created_at DESC LIMIT $2) signed_in \
               UNION ALL \
               SELECT * FROM (SELECT 'post' AS kind, created_at AS at, title AS detail, \
                 id AS post_id FROM posts WHERE author_id = $1 \
                 ORDER BY created_at DESC LIMIT $2) posted \
               UNION ALL \
               SELECT * FROM (SELECT 'report' AS kind, created_at AS at, reason AS detail, \
                 post_id FROM post_reports WHERE reporter_id = $1 \
                 ORDER BY created_at DESC LIMIT $2) reported \
             ) activity ORDER BY at DESC LIMIT $2",
        )
        .bind(user_id)
        .bind(limit)
        .fetch_all(&mut *self.lease().await?)
        .await?;
        Ok(rows)
    }
}

/// The columns of an admin list item, with the user's post count, in the
/// order [`AdminUserJson`] reads them.
const ADMIN_ITEM_COLUMNS: &str = "listed.id, listed.email, listed.email_verified_at, \
     listed.username, listed.name, listed.image, listed.bio, listed.location, \
     listed.profile_public, listed.role, listed.status, listed.admin_notes, listed.login_count, \
     listed.last_login_at, listed.created_at, listed.updated_at, listed.post_count";

/// A user of the admin list as [`Database::admin_user_page`] reads it.
#[derive(serde::Deserialize)]
struct AdminUserJson(
    i64,
    String,
    Option<i64>,
    String,
    Option<String>,
    Option<String>,
    String,
    String,
    JsonFlag,
    String,
    String,
    Option<String>,
    i64,
    Option<i64>,
    i64,
    i64,
    i64,
);

/// One page of the admin user list: every user matching `query`, each with
/// how many posts they wrote, and the total.
#[derive(Debug, Clone)]
pub struct AdminUserPage {
    pub users: Vec<(User, i64)>,
    pub total: i64,
}

impl Database {
    /// The admin user list: the page crosses from the database as one JSON
    /// value (one message instead of one per row, which was most of a
    /// page's cost on SQLite), post counts included.
    pub async fn admin_user_page(
        &self,
        query: &UserQuery,
        page: Page,
    ) -> Result<AdminUserPage, DomainError> {
        let (total, json) = self
            .counted_page(
                page,
                |args| query.total_sql(true, args),
                |args| self.admin_user_page_sql(query, page, args),
            )
            .await?;
        let Some(json) = json else {
            return Ok(AdminUserPage {
                users: Vec::new(),
                total,
            });
        };
        let users = crate::posts::parse_json_page::<AdminUserJson>(&json)?
            .into_iter()
            .map(|item| {
                let row = UserRow {
                    id: item.0,
                    email: item.1,
                    email_verified_at: item.2,
                    username: item.3,
                    name: item.4,
                    image: item.5,
                    bio: item.6,
                    location: item.7,
                    profile_public: Flag(item.8.into()),
                    password_hash: None,
                    role: item.9,
                    status: item.10,
                    admin_notes: item.11,
                    login_count: item.12,
                    last_login_at: item.13,
                    created_at: item.14,
                    updated_at: item.15,
                };
                User::try_from(row).map(|user| (user, item.16))
            })
            .collect::<Result<_, _>>()?;
        Ok(AdminUserPage { users, total })
    }

    /// An SQL expression for one page of the admin list as one JSON text
    /// (see [`Dialect::json_rows`]), post counts included.
    fn admin_user_page_sql(&self, query: &UserQuery, page: Page, args: &mut Args) -> String {
        let conditions = query.conditions(true, args);
        let limit = args.push(Arg::Int(page.limit));
        let offset = args.push(Arg::Int(page.offset));
        let dialect = self.dialect();
        let source = format!(
            "(SELECT u.*, (SELECT COUNT(*) FROM posts p WHERE p.author_id = u.id) AS post_count \
             FROM users u{} ORDER BY {} LIMIT {limit} OFFSET {offset}) listed",
            where_clause(&conditions),
            query.order_by()
        );
        dialect.json_rows(
            &dialect.json_array(ADMIN_ITEM_COLUMNS),
            &query.order_by().replace("u.", "listed."),
            &source,
        )
    }
}

/// The page statement of [`Database::list_users`].
fn list_users_sql(query: &UserQuery, everyone: bool, page: Page) -> (String, Vec<Arg>) {
    let mut args = Args::default();
    let conditions = query.conditions(everyone, &mut args);
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

/// Changes a user's status; banning or deactivating ends every session at
/// once, in the same transaction, and any change of status ends the user's
/// admin tokens ([`revoke_credentials_if_lowered`]).
pub async fn set_status(
    tx: &mut Tx<'_>,
    user_id: i64,
    status: UserStatus,
) -> Result<(), DomainError> {
    let before = user_in(tx, user_id).await?;
    sqlx::query("UPDATE users SET status = $1, updated_at = $2 WHERE id = $3")
        .bind(status.as_str())
        .bind(now_millis())
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    if status != UserStatus::Active {
        end_sessions(tx, user_id).await?;
    }
    revoke_credentials_if_lowered(tx, &before, before.role, status).await
}

/// Changes a user's role; a lower role ends the user's admin tokens
/// ([`revoke_credentials_if_lowered`]).
pub async fn set_role(tx: &mut Tx<'_>, user_id: i64, role: Role) -> Result<(), DomainError> {
    let before = user_in(tx, user_id).await?;
    sqlx::query("UPDATE users SET role = $1, updated_at = $2 WHERE id = $3")
        .bind(role.as_str())
        .bind(now_millis())
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    revoke_credentials_if_lowered(tx, &before, role, before.status).await
}

/// Ends every admin token issued to `before`'s user until now when their
/// role drops below `before.role` or their status changes: a token carries
/// the authority of its minting, so one minted before a demotion must not
/// work again after a re-promotion. Tokens issued before the user's
/// `credentials_valid_after` are refused.
async fn revoke_credentials_if_lowered(
    tx: &mut Tx<'_>,
    before: &User,
    role: Role,
    status: UserStatus,
) -> Result<(), DomainError> {
    if role < before.role || status != before.status {
        revoke_credentials(tx, before.id(), now_millis()).await?;
    }
    Ok(())
}

/// Refuses every admin token of the user issued before `now`.
pub(crate) async fn revoke_credentials(
    tx: &mut Tx<'_>,
    user_id: i64,
    now: i64,
) -> Result<(), DomainError> {
    sqlx::query("UPDATE users SET credentials_valid_after = $1 WHERE id = $2")
        .bind(now)
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Applies `changes`. A taken username is a [`DomainError::Conflict`]; a
/// status other than active ends every session of the user at once, and a
/// lower role or another status their admin tokens, as [`set_status`] and
/// [`set_role`] do.
pub async fn update(tx: &mut Tx<'_>, id: i64, changes: UserChanges) -> Result<User, DomainError> {
    let before = if changes.role.is_some() || changes.status.is_some() {
        Some(user_in(tx, id).await?)
    } else {
        None
    };
    let mut sets = Vec::new();
    let mut args = Vec::new();
    let mut set = |column: &str, value: Option<Arg>| match value {
        Some(value) => {
            args.push(value);
            sets.push(format!("{column} = ${}", args.len()));
        }
        None => sets.push(format!("{column} = NULL")),
    };
    if let Some(name) = changes.name {
        set("name", name.map(Arg::Text));
    }
    if let Some(username) = changes.username {
        set("username", Some(Arg::Text(username)));
    }
    if let Some(image) = changes.image {
        set("image", image.map(Arg::Text));
    }
    if let Some(bio) = changes.bio {
        set("bio", Some(Arg::Text(bio)));
    }
    if let Some(location) = changes.location {
        set("location", Some(Arg::Text(location)));
    }
    if let Some(profile_public) = changes.profile_public {
        set("profile_public", Some(Arg::Bool(profile_public)));
    }
    if let Some(role) = changes.role {
        set("role", Some(Arg::Text(role.as_str().to_owned())));
    }
    if let Some(status) = changes.status {
        set("status", Some(Arg::Text(status.as_str().to_owned())));
    }
    let now = now_millis();
    if let Some(verified) = changes.email_verified {
        set("email_verified_at", verified.then_some(Arg::Int(now)));
    }
    if let Some(notes) = changes.admin_notes {
        set("admin_notes", notes.map(Arg::Text));
    }
    set("updated_at", Some(Arg::Int(now)));
    args.push(Arg::Int(id));
    let sql = format!(
        "UPDATE users SET {} WHERE id = ${} RETURNING {USER_COLUMNS}",
        sets.join(", "),
        args.len()
    );
    let row: Option<UserRow> = bind_all(sqlx::query_as(&sql), args)
        .fetch_optional(&mut **tx)
        .await
        .map_err(|error| match DomainError::from(error) {
            DomainError::Conflict(_) => DomainError::Conflict(USERNAME_TAKEN.to_owned()),
            other => other,
        })?;
    let user = User::try_from(row.ok_or(DomainError::NotFound("user"))?)?;
    if !user.is_active() {
        end_sessions(tx, id).await?;
    }
    if let Some(before) = before {
        revoke_credentials_if_lowered(tx, &before, user.role, user.status).await?;
    }
    Ok(user)
}

/// The user `id` as `tx` sees it.
pub async fn user_in(tx: &mut Tx<'_>, id: i64) -> Result<User, DomainError> {
    let row: Option<UserRow> =
        sqlx::query_as(&format!("SELECT {USER_COLUMNS} FROM users WHERE id = $1"))
            .bind(id)
            .fetch_optional(&mut **tx)
            .await?;
    User::try_from(row.ok_or(DomainError::NotFound("user"))?)
}

/// `LIKE` pattern text matching `text` literally (`\` escapes).
pub(crate) fn escape_like(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// Deletes a user and, by cascade, everything that is theirs: posts (with
/// their tags and the reports on them), reports they made, sessions, linked
/// accounts and direct capability grants. Returns the user as they were.
pub async fn delete(tx: &mut Tx<'_>, id: i64) -> Result<User, DomainError> {
    let row: Option<UserRow> = sqlx::query_as(&format!(
        "DELETE FROM users WHERE id = $1 RETURNING {USER_COLUMNS}"
    ))
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?;
    User::try_from(row.ok_or(DomainError::NotFound("user"))?)
}

async fn end_sessions(tx: &mut Tx<'_>, user_id: i64) -> Result<(), DomainError> {
    sqlx::query("DELETE FROM sessions WHERE user_id = $1")
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usernames_derive_from_names_then_emails() {
        assert_eq!(username_base(Some("Ada Lovelace"), "x@y.z"), "ada_lovelace");
        assert_eq!(username_base(None, "Grace.Hopper@navy.mil"), "grace.hopper");
        assert_eq!(username_base(Some("李小龍"), "bruce@x.com"), "bruce");
        assert_eq!(username_base(None, "a@b.c"), "a00");
        assert!(is_valid_username(&username_base(Some("__x"), "q@q.q")));
    }

    #[test]
    fn emails_fold_ascii_case_only() {
        assert_eq!(normalize_email("  Ada@Example.COM "), "ada@example.com");
        // U+212A KELVIN SIGN must not become the ASCII `k` of another address.
        assert_eq!(
            normalize_email("\u{212A}im@example.com"),
            "\u{212A}im@example.com"
        );
        assert_ne!(
            normalize_email("\u{212A}im@example.com"),
            normalize_email("kim@example.com")
        );
    }

    #[test]
    fn roles_are_ordered_by_power() {
        assert!(Role::SuperAdmin.is_admin() && Role::Admin.is_admin());
        assert!(!Role::Moderator.is_admin() && Role::Moderator.is_moderator());
        assert_eq!(Role::parse("super_admin"), Some(Role::SuperAdmin));
        assert_eq!(Role::parse("root"), None);
    }
}
