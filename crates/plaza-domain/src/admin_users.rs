//! The unversioned admin surface's user list (SPEC.md "User, admin list item
//! (unversioned admin surface)"): each user with their primary identity
//! provider, role, subscriptions and timeouts (bans), the details of a whole
//! page read in one statement, however many users the page holds.

use std::borrow::Cow;

use serde::Deserialize;
use sqlx::any::AnyRow;
use sqlx::{FromRow, Row};

use crate::listing::{
    Arg, Args, JsonFlag, Page, bind_all, escape_like, optional_text, parse_json_page, where_clause,
};
use crate::time::now_millis;
use crate::{Database, DomainError};

/// One user as the list shows them. Times are Unix milliseconds. Read in
/// place from the page's JSON text on SQLite (strings without escapes
/// borrow from it), from its row on PostgreSQL.
#[derive(Debug, Clone, Deserialize)]
pub struct DirectoryUser<'a> {
    pub id: i64,
    #[serde(borrow, deserialize_with = "optional_text")]
    pub name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub email: Cow<'a, str>,
    #[serde(borrow, deserialize_with = "optional_text")]
    pub image: Option<Cow<'a, str>>,
    pub created_at: i64,
    #[serde(deserialize_with = "flag")]
    pub profile_public: bool,
    #[serde(borrow)]
    pub bio: Cow<'a, str>,
    #[serde(borrow)]
    pub location: Cow<'a, str>,
    #[serde(deserialize_with = "flag")]
    pub is_active: bool,
    #[serde(borrow, deserialize_with = "optional_text")]
    pub admin_notes: Option<Cow<'a, str>>,
    /// The provider of the linked account used most recently.
    #[serde(borrow, deserialize_with = "optional_text")]
    pub provider_name: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "optional_text")]
    pub provider_email: Option<Cow<'a, str>>,
    #[serde(deserialize_with = "flag")]
    pub provider_verified: bool,
    pub provider_last_used: Option<i64>,
    pub last_login: Option<i64>,
    pub login_count: i64,
    /// Users hold one role each (DECISIONS.md "Roles").
    #[serde(borrow)]
    pub role: Cow<'a, str>,
    pub subscription_count: i64,
    pub active_subscriptions: i64,
    #[serde(borrow, deserialize_with = "optional_text")]
    pub subscription_names: Option<Cow<'a, str>>,
    pub timeout_count: i64,
    pub active_timeout_id: Option<i64>,
    #[serde(borrow, deserialize_with = "optional_text")]
    pub active_timeout_reason: Option<Cow<'a, str>>,
    /// `None` with an active timeout: it is permanent.
    pub timeout_expires: Option<i64>,
}

impl DirectoryUser<'_> {
    /// The list's `has_admin`: the user's role is administrator or higher.
    pub fn has_admin(&self) -> bool {
        crate::users::Role::parse(&self.role).is_some_and(|role| role.is_admin())
    }

    /// The list's `has_moderator`: the user's role is moderator or higher.
    pub fn has_moderator(&self) -> bool {
        crate::users::Role::parse(&self.role).is_some_and(|role| role.is_moderator())
    }
}

fn flag<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    JsonFlag::deserialize(deserializer).map(bool::from)
}

/// One page of the list as the database wrote it, and how many users match
/// in all; [`Directory::users`] reads the page.
#[derive(Debug, Clone)]
pub struct Directory {
    page: DirectoryPage,
    pub total: i64,
}

/// The page as each engine answers it fastest (see
/// [`crate::dialect::Dialect::rows_as_json`]).
#[derive(Debug, Clone)]
enum DirectoryPage {
    /// SQLite: one JSON text, read in place.
    Json(String),
    /// PostgreSQL: the rows themselves.
    Rows(Vec<DirectoryUser<'static>>),
}

impl Directory {
    /// The page's users, borrowing from it.
    pub fn users(&self) -> Result<Cow<'_, [DirectoryUser<'_>]>, DomainError> {
        match &self.page {
            DirectoryPage::Json(json) => parse_json_page(json).map(Cow::Owned),
            DirectoryPage::Rows(rows) => Ok(Cow::Borrowed(rows.as_slice())),
        }
    }
}

impl<'r> FromRow<'r, AnyRow> for DirectoryUser<'static> {
    fn from_row(row: &'r AnyRow) -> Result<Self, sqlx::Error> {
        let text = |column: &str| row.try_get::<String, _>(column).map(Cow::Owned);
        let optional_text = |column: &str| {
            row.try_get::<Option<String>, _>(column)
                .map(|text| text.map(Cow::Owned))
        };
        Ok(DirectoryUser {
            id: row.try_get("id")?,
            name: optional_text("name")?,
            email: text("email")?,
            image: optional_text("image")?,
            created_at: row.try_get("created_at")?,
            profile_public: row.try_get("profile_public")?,
            bio: text("bio")?,
            location: text("location")?,
            is_active: row.try_get("is_active")?,
            admin_notes: optional_text("admin_notes")?,
            provider_name: optional_text("provider_name")?,
            provider_email: optional_text("provider_email")?,
            provider_verified: row.try_get("provider_verified")?,
            provider_last_used: row.try_get("provider_last_used")?,
            last_login: row.try_get("last_login")?,
            login_count: row.try_get("login_count")?,
            role: text("role")?,
            subscription_count: row.try_get("subscription_count")?,
            active_subscriptions: row.try_get("active_subscriptions")?,
            subscription_names: optional_text("subscription_names")?,
            timeout_count: row.try_get("timeout_count")?,
            active_timeout_id: row.try_get("active_timeout_id")?,
            active_timeout_reason: optional_text("active_timeout_reason")?,
            timeout_expires: row.try_get("timeout_expires")?,
        })
    }
}

/// The columns of an item, named as [`DirectoryUser`]'s fields, from
/// `listed`, one row of the page (SQLite's JSON page).
const ITEM_PAIRS: &str = "'id', listed.id, 'name', listed.name, 'email', listed.email, \
    'image', listed.image, 'created_at', listed.created_at, \
    'profile_public', listed.profile_public, 'bio', listed.bio, \
    'location', listed.location, 'is_active', listed.is_active, \
    'admin_notes', listed.admin_notes, 'provider_name', listed.provider_name, \
    'provider_email', listed.provider_email, 'provider_verified', listed.provider_verified, \
    'provider_last_used', listed.provider_last_used, 'last_login', listed.last_login, \
    'login_count', listed.login_count, 'role', listed.role, \
    'subscription_count', listed.subscription_count, \
    'active_subscriptions', listed.active_subscriptions, \
    'subscription_names', listed.subscription_names, 'timeout_count', listed.timeout_count, \
    'active_timeout_id', listed.active_timeout_id, \
    'active_timeout_reason', listed.active_timeout_reason, \
    'timeout_expires', listed.timeout_expires";

impl Database {
    /// Users matching `search` (a part of the name, email or a linked
    /// provider's name, any case), newest first. A first page is two
    /// statements, whatever its size: the total (a counter row without a
    /// search) with the page's ids (see [`Database::counted_page`]), then
    /// their details, whose providers, subscriptions and
    /// timeouts are looked up for the page's users alone. A user deleted
    /// between the two is left out of the page.
    pub async fn user_directory(
        &self,
        search: Option<&str>,
        page: Page,
    ) -> Result<Directory, DomainError> {
        let (total, ids) = self
            .counted_page(
                page,
                |args| directory_total_sql(search, args),
                |args| self.directory_ids_sql(search, page, args),
            )
            .await?;
        let Some(ids) = ids.filter(|_| total > 0) else {
            return Ok(Directory {
                page: DirectoryPage::Rows(Vec::new()),
                total,
            });
        };
        let mut args = Args::default();
        let page_ids = args.push(Arg::Text(ids));
        let now = args.push(Arg::Int(now_millis()));
        let dialect = self.dialect();
        let subscription_names = dialect.string_agg("s.plan_name", "s.plan_name, s.id");
        // `subscribed` holds the subscriptions of the page's users in one
        // pass (three lookups per user as subqueries took 0.2 of 0.9 ms a
        // page on PostgreSQL). The number of bans and the primary account
        // are kept on the user's row by triggers (migration 0024).
        let listed = format!(
            "(SELECT u.id, u.name, u.email, u.image, u.created_at, u.profile_public, \
               u.bio, u.location, (u.status = 'active') AS is_active, u.admin_notes, \
               a.provider AS provider_name, a.email AS provider_email, \
               COALESCE(a.email_verified, FALSE) AS provider_verified, \
               a.last_used_at AS provider_last_used, u.last_login_at AS last_login, \
               u.login_count, u.role, \
               COALESCE(subscribed.total, 0) AS subscription_count, \
               COALESCE(subscribed.active, 0) AS active_subscriptions, \
               subscribed.names AS subscription_names, \
               u.ban_count AS timeout_count, \
               b.id AS active_timeout_id, b.reason AS active_timeout_reason, \
               b.expires_at AS timeout_expires \
             FROM page JOIN users u ON u.id = page.id \
             LEFT JOIN accounts a ON a.id = u.primary_account_id \
             LEFT JOIN (SELECT s.user_id, COUNT(*) AS total, \
                 SUM(CASE WHEN s.status = 'active' AND (s.ends_at IS NULL OR s.ends_at > {now}) \
                   THEN 1 ELSE 0 END) AS active, \
                 {subscription_names} AS names \
               FROM subscriptions s WHERE s.user_id IN (SELECT id FROM page) \
               GROUP BY s.user_id) subscribed ON subscribed.user_id = u.id \
             LEFT JOIN user_bans b ON b.user_id = u.id AND b.lifted_at IS NULL \
               AND (b.expires_at IS NULL OR b.expires_at > {now})) listed"
        );
        let order = "listed.created_at DESC, listed.id DESC";
        let head = format!("WITH page AS ({})", dialect.json_integers(&page_ids));
        let mut lease = self.lease().await?;
        let page = if dialect.rows_as_json() {
            let sql = format!(
                "{head} SELECT {}",
                dialect.json_rows(&dialect.json_object(ITEM_PAIRS), order, &listed)
            );
            let (json,): (String,) = bind_all(sqlx::query_as(&sql), args.into_vec())
                .fetch_one(&mut *lease)
                .await?;
            DirectoryPage::Json(json)
        } else {
            let sql = format!("{head} SELECT listed.* FROM {listed} ORDER BY {order}");
            let rows = bind_all(sqlx::query_as(&sql), args.into_vec())
                .fetch_all(&mut *lease)
                .await?;
            DirectoryPage::Rows(rows)
        };
        Ok(Directory { page, total })
    }
}

/// An SQL expression for how many users a search matches: the
/// trigger-kept counter row without a search.
fn directory_total_sql(search: Option<&str>, args: &mut Args) -> String {
    let conditions = search_conditions(search, args);
    if conditions.is_empty() {
        crate::users::ALL_USERS_TOTAL.to_owned()
    } else {
        format!(
            "(SELECT COUNT(*) FROM users u{})",
            where_clause(&conditions)
        )
    }
}

impl Database {
    /// An SQL expression for the page's user ids, newest first, as one JSON
    /// array (the details statement takes it as it is). The limit and offset
    /// are subqueries so that PostgreSQL's planner does not see their
    /// values: seen, they made every call plan the statement afresh (the
    /// plan for a known limit costs less than the one kept for any limit,
    /// though both walk the same index), 0.12 ms a call.
    fn directory_ids_sql(&self, search: Option<&str>, page: Page, args: &mut Args) -> String {
        let conditions = search_conditions(search, args);
        let limit = args.push(Arg::Int(page.limit));
        let offset = args.push(Arg::Int(page.offset));
        self.dialect().json_rows(
            "ids.id",
            "ids.created_at DESC, ids.id DESC",
            &format!(
                "(SELECT u.id, u.created_at FROM users u{} \
                 ORDER BY u.created_at DESC, u.id DESC \
                 LIMIT (SELECT {limit}) OFFSET (SELECT {offset})) ids",
                where_clause(&conditions)
            ),
        )
    }
}

/// The `WHERE` conditions of a search: the name, the email or the name of
/// a linked provider contains `search`, in any case.
fn search_conditions(search: Option<&str>, args: &mut Args) -> Vec<String> {
    let Some(search) = search else {
        return Vec::new();
    };
    let pattern = args.push(Arg::Text(format!(
        "%{}%",
        escape_like(&search.to_lowercase())
    )));
    vec![format!(
        "(LOWER(COALESCE(u.name, '')) LIKE {pattern} ESCAPE '\\' \
          OR u.email LIKE {pattern} ESCAPE '\\' \
          OR EXISTS (SELECT 1 FROM accounts sa WHERE sa.user_id = u.id \
                     AND LOWER(sa.provider) LIKE {pattern} ESCAPE '\\'))"
    )]
}
