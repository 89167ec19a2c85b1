//! The unversioned admin surface's user list (SPEC.md "User, admin list item
//! (unversioned admin surface)"): each user with their primary identity
//! provider, role, subscriptions and timeouts (bans), the details of a whole
//! page read in one statement, however many users the page holds.

use std::borrow::Cow;

use serde::Deserialize;

use crate::listing::{Arg, Args, JsonFlag, Page, bind_all, optional_text, where_clause};
use crate::time::now_millis;
use crate::users::escape_like;
use crate::{Database, DomainError};

/// One user as the list shows them. Times are Unix milliseconds. Read in
/// place from the page's JSON text: strings without escapes borrow from it.
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
/// in all; [`Directory::users`] reads the page in place.
#[derive(Debug, Clone)]
pub struct Directory {
    json: Option<String>,
    pub total: i64,
}

impl Directory {
    /// The page's users, borrowing from it.
    pub fn users(&self) -> Result<Vec<DirectoryUser<'_>>, DomainError> {
        match &self.json {
            Some(json) => crate::posts::parse_json_page(json),
            None => Ok(Vec::new()),
        }
    }
}

/// The columns of an item, named as [`DirectoryUser`]'s fields, from
/// `listed`, one row of the page: every column of `listed`, in its order,
/// under its own name (PostgreSQL converts the row itself:
/// `Dialect::record_object`).
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
            return Ok(Directory { json: None, total });
        };
        let mut args = Args::default();
        let page_ids = args.push(Arg::Text(ids));
        let now = args.push(Arg::Int(now_millis()));
        let dialect = self.dialect();
        let subscription_names = dialect.string_agg("s.plan_name", "s.plan_name, s.id");
        // `chosen` holds the primary account of each of the page's users, so
        // every lookup below runs for the page's users only.
        let sql = format!(
            "WITH page AS ({page}), chosen AS ( \
               SELECT page.id AS user_id, \
                 (SELECT x.id FROM accounts x WHERE x.user_id = page.id \
                  ORDER BY COALESCE(x.last_used_at, x.created_at) DESC, x.id LIMIT 1) AS account_id \
               FROM page \
             ) \
             SELECT {rows}",
            page = dialect.json_integers(&page_ids),
            rows = dialect.json_rows(
                &dialect.record_object("listed", ITEM_PAIRS),
                "listed.created_at DESC, listed.id DESC",
                &format!(
                    "(SELECT u.id, u.name, u.email, u.image, u.created_at, u.profile_public, \
                       u.bio, u.location, (u.status = 'active') AS is_active, u.admin_notes, \
                       a.provider AS provider_name, a.email AS provider_email, \
                       COALESCE(a.email_verified, FALSE) AS provider_verified, \
                       a.last_used_at AS provider_last_used, u.last_login_at AS last_login, \
                       u.login_count, u.role, \
                       (SELECT COUNT(*) FROM subscriptions s WHERE s.user_id = u.id) \
                         AS subscription_count, \
                       (SELECT COUNT(*) FROM subscriptions s WHERE s.user_id = u.id \
                          AND s.status = 'active' AND (s.ends_at IS NULL OR s.ends_at > {now})) \
                         AS active_subscriptions, \
                       (SELECT {subscription_names} FROM subscriptions s WHERE s.user_id = u.id) \
                         AS subscription_names, \
                       (SELECT COUNT(*) FROM user_bans t WHERE t.user_id = u.id) AS timeout_count, \
                       b.id AS active_timeout_id, b.reason AS active_timeout_reason, \
                       b.expires_at AS timeout_expires \
                     FROM chosen JOIN users u ON u.id = chosen.user_id \
                     LEFT JOIN accounts a ON a.id = chosen.account_id \
                     LEFT JOIN user_bans b ON b.user_id = u.id AND b.lifted_at IS NULL \
                       AND (b.expires_at IS NULL OR b.expires_at > {now})) listed"
                ),
            ),
        );
        let (json,): (String,) = bind_all(sqlx::query_as(&sql), args.into_vec())
            .fetch_one(&mut *self.lease().await?)
            .await?;
        Ok(Directory {
            json: Some(json),
            total,
        })
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
    /// array (the details statement takes it as it is).
    fn directory_ids_sql(&self, search: Option<&str>, page: Page, args: &mut Args) -> String {
        let conditions = search_conditions(search, args);
        let limit = args.push(Arg::Int(page.limit));
        let offset = args.push(Arg::Int(page.offset));
        self.dialect().json_rows(
            "ids.id",
            "ids.created_at DESC, ids.id DESC",
            &format!(
                "(SELECT u.id, u.created_at FROM users u{} \
                 ORDER BY u.created_at DESC, u.id DESC LIMIT {limit} OFFSET {offset}) ids",
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
