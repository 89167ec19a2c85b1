//! What the admin surfaces read of users: the admin user list, whose page
//! crosses from the database as one JSON value with each user's post
//! count, and a user's recent activity.

use sqlx::FromRow;

use super::model::{User, UserRow};
use super::query::{Narrowing, UserQuery};
use crate::listing::{Arg, Args, JsonFlag, Page, parse_json_page, where_clause};
use crate::{Database, DomainError, Flag};

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
     listed.last_login_at, listed.created_at, listed.updated_at, listed.post_count, listed.is_bot";

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
    JsonFlag,
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
    /// value (one message instead of one per row), post counts included.
    pub async fn admin_user_page(
        &self,
        query: &UserQuery,
        page: Page,
    ) -> Result<AdminUserPage, DomainError> {
        let narrowing = self.narrowing(query).await?;
        let (total, json) = self
            .counted_page(
                page,
                |args| query.total_sql(true, &narrowing, args),
                |args| self.admin_user_page_sql(query, &narrowing, page, args),
            )
            .await?;
        let Some(json) = json else {
            return Ok(AdminUserPage {
                users: Vec::new(),
                total,
            });
        };
        let users = parse_json_page::<AdminUserJson>(&json)?
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
                    totp_enabled_at: None,
                    is_bot: Flag(item.17.into()),
                };
                User::try_from(row).map(|user| (user, item.16))
            })
            .collect::<Result<_, _>>()?;
        Ok(AdminUserPage { users, total })
    }

    /// The query plan of [`Database::admin_user_page`]'s first page, for
    /// the tests that check the admin list reads indexes.
    #[cfg(feature = "testing")]
    pub async fn explain_admin_user_page(
        &self,
        query: &UserQuery,
    ) -> Result<Vec<String>, DomainError> {
        let narrowing = self.narrowing(query).await?;
        let page = Page {
            limit: 25,
            offset: 0,
        };
        let mut args = Args::default();
        let total = query.total_sql(true, &narrowing, &mut args);
        let rows = self.admin_user_page_sql(query, &narrowing, page, &mut args);
        self.explain(
            &format!("SELECT {total} AS total, {rows} AS page"),
            args.into_vec(),
        )
        .await
    }

    /// An SQL expression for one page of the admin list as one JSON text
    /// (see [`Dialect::json_rows`]), post counts included.
    fn admin_user_page_sql(
        &self,
        query: &UserQuery,
        narrowing: &Narrowing,
        page: Page,
        args: &mut Args,
    ) -> String {
        let conditions = query.conditions(true, narrowing, args);
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
