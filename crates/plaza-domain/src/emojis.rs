//! The emoji catalog and custom emojis (SPEC.md "Emoji").
//!
//! Unicode emojis come from the `emojis` crate through `plaza-emoji` and are
//! loaded into the tables on start ([`Database::load_emoji_catalog`]), again
//! only when the crate brings a different catalog. A list is for one
//! platform: it holds the Unicode emojis up to the Emoji version that
//! platform draws, and on request the approved custom emojis plus the
//! caller's own personal ones. Custom emojis are personal until a
//! moderator approves them; approval and rejection are audited with the
//! change.

use serde_json::json;
use sqlx::FromRow;

use crate::audit::{self, AuditAction, AuditContext};
use crate::flag::Flag;
use crate::listing::{Arg, Args, Page, bind_all, escape_like, where_clause};
use crate::policy::{self, Actor};
use crate::time::now_millis;
use crate::uploads::NewUpload;
use crate::{Database, DomainError, Tx};

/// How a list is ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EmojiSort {
    /// The Unicode (CLDR) order, which goes category by category in the
    /// categories' order; custom emojis last.
    #[default]
    Catalog,
    /// Most used first, then the catalog order.
    Popular,
}

/// What a list asks for.
#[derive(Debug, Clone)]
pub struct EmojiQuery {
    /// The highest Emoji version the platform draws, as
    /// `plaza_emoji::EmojiVersion::rank`.
    pub max_version_rank: i64,
    /// A category name.
    pub category: Option<String>,
    /// Part of a name, alias or keyword, in any case.
    pub search: Option<String>,
    pub include_custom: bool,
    /// The signed-in caller, whose personal custom emojis are included.
    pub viewer: Option<i64>,
    pub sort: EmojiSort,
    pub page: Page,
}

/// A category as an emoji names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CategoryRef {
    pub id: i64,
    pub name: String,
    pub display_name: String,
}

/// One emoji, Unicode or custom.
#[derive(Debug, Clone)]
pub struct Emoji {
    pub id: i64,
    pub emoji_id: String,
    pub unicode_codepoint: Option<String>,
    pub unicode_char: Option<String>,
    pub name: String,
    pub description: String,
    pub category: CategoryRef,
    pub tags: Vec<String>,
    pub aliases: Vec<String>,
    pub keywords: Vec<String>,
    pub is_custom: bool,
    pub custom_image_url: Option<String>,
    pub usage_count: i64,
    pub version_min: Option<String>,
    pub is_approved: bool,
    pub owner_id: Option<i64>,
}

impl Emoji {
    /// A custom emoji only its owner sees, until it is approved.
    pub fn is_personal(&self) -> bool {
        self.is_custom && !self.is_approved
    }
}

/// A category with the number of emojis a list may show in it.
#[derive(Debug, Clone, FromRow)]
pub struct CategoryCount {
    pub id: i64,
    pub name: String,
    pub display_name: String,
    pub description: String,
    pub emoji_count: i64,
}

/// One page of a list.
#[derive(Debug, Clone)]
pub struct EmojiListing {
    pub emojis: Vec<Emoji>,
    /// Every category, counted for the platform and the custom choice
    /// (not narrowed by `category` or `search`).
    pub categories: Vec<CategoryCount>,
    /// Emojis matching every filter.
    pub total: i64,
}

/// A custom emoji to add with its image.
#[derive(Debug, Clone)]
pub struct NewCustomEmoji {
    pub owner_id: i64,
    /// `a-z 0-9 _`, 2 to 32 characters, checked by [`is_custom_name`].
    pub name: String,
    /// A category name; `custom` when none was given.
    pub category: String,
    /// Where the image is served.
    pub image_url: String,
}

/// Custom emoji names: 2 to 32 of `a-z`, `0-9` and `_`, written without
/// the colons of a `:shortcode:`.
pub fn is_custom_name(name: &str) -> bool {
    (2..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

#[derive(FromRow)]
struct EmojiRow {
    id: i64,
    emoji_id: String,
    unicode_codepoint: Option<String>,
    unicode_char: Option<String>,
    name: String,
    description: String,
    category_id: i64,
    category_name: String,
    category_display_name: String,
    tags: String,
    aliases: String,
    keywords: String,
    is_custom: Flag,
    custom_image_url: Option<String>,
    usage_count: i64,
    version_min: Option<String>,
    is_approved: Flag,
    owner_id: Option<i64>,
}

impl From<EmojiRow> for Emoji {
    fn from(row: EmojiRow) -> Self {
        let list = |text: &str| serde_json::from_str(text).unwrap_or_default();
        Emoji {
            id: row.id,
            emoji_id: row.emoji_id,
            unicode_codepoint: row.unicode_codepoint,
            unicode_char: row.unicode_char,
            name: row.name,
            description: row.description,
            category: CategoryRef {
                id: row.category_id,
                name: row.category_name,
                display_name: row.category_display_name,
            },
            tags: list(&row.tags),
            aliases: list(&row.aliases),
            keywords: list(&row.keywords),
            is_custom: row.is_custom.0,
            custom_image_url: row.custom_image_url,
            usage_count: row.usage_count,
            version_min: row.version_min,
            is_approved: row.is_approved.0,
            owner_id: row.owner_id,
        }
    }
}

const EMOJI_COLUMNS: &str = "e.id, e.emoji_id, e.unicode_codepoint, e.unicode_char, e.name, \
     e.description, c.id AS category_id, c.name AS category_name, \
     c.display_name AS category_display_name, e.tags, e.aliases, e.keywords, e.is_custom, \
     e.custom_image_url, e.usage_count, e.version_min, e.is_approved, e.owner_id";

const FROM_EMOJIS: &str = "FROM emojis e JOIN emoji_categories c ON c.id = e.category_id";

/// Values bound per catalog row in the bulk insert.
const CATALOG_COLUMNS: usize = 13;

/// One row of the catalog insert, its values bound from `$base + 1` on
/// (the name is the description too).
fn catalog_row_values(base: usize) -> String {
    let slot = |n: usize| format!("${}", base + n);
    format!(
        "({}, {}, {}, {name}, {name}, (SELECT id FROM emoji_categories WHERE name = {}), \
         {}, {}, {}, FALSE, {}, {}, TRUE, {}, {}, {})",
        slot(1),
        slot(2),
        slot(3),
        slot(5),
        slot(6),
        slot(7),
        slot(8),
        slot(9),
        slot(10),
        slot(11),
        slot(12),
        slot(13),
        name = slot(4),
    )
}

/// The `WHERE` conditions every list of `query` shares: the platform's
/// Unicode emojis, and the custom ones the caller may see when asked for.
fn visible_conditions(query: &EmojiQuery, args: &mut Args) -> Vec<String> {
    let rank = args.push(Arg::Int(query.max_version_rank));
    let unicode = format!("(NOT e.is_custom AND e.version_rank <= {rank})");
    if !query.include_custom {
        return vec![unicode];
    }
    let custom = match query.viewer {
        Some(viewer) => {
            let viewer = args.push(Arg::Int(viewer));
            format!("(e.is_custom AND (e.is_approved OR e.owner_id = {viewer}))")
        }
        None => "(e.is_custom AND e.is_approved)".to_owned(),
    };
    vec![format!("({unicode} OR {custom})")]
}

fn filter_conditions(query: &EmojiQuery, args: &mut Args) -> Vec<String> {
    let mut conditions = visible_conditions(query, args);
    if let Some(category) = &query.category {
        let category = args.push(Arg::Text(category.clone()));
        conditions.push(format!("c.name = {category}"));
    }
    if let Some(search) = &query.search {
        let pattern = args.push(Arg::Text(format!(
            "%{}%",
            escape_like(&search.to_lowercase())
        )));
        // A custom emoji's search text spells its name with spaces, so its
        // whole name (`party_parrot`) is matched against the name itself.
        conditions.push(format!(
            "(e.search_text LIKE {pattern} ESCAPE '\\' OR LOWER(e.name) LIKE {pattern} ESCAPE '\\')"
        ));
    }
    conditions
}

impl Database {
    /// Loads the Unicode catalog into the tables when they do not hold
    /// this build's catalog yet: categories and emojis are inserted or
    /// updated by name and id (usage counts stay), in one transaction.
    /// Answers whether anything was loaded. Safe from several instances
    /// at once: every write is an upsert.
    pub async fn load_emoji_catalog(&self) -> Result<bool, DomainError> {
        let fingerprint = plaza_emoji::catalog_fingerprint();
        let stored: Option<(String,)> =
            sqlx::query_as("SELECT fingerprint FROM emoji_catalog WHERE id = 1")
                .fetch_optional(&mut *self.lease().await?)
                .await?;
        if stored.is_some_and(|(stored,)| stored == fingerprint) {
            return Ok(false);
        }
        let rows_per_statement = (self.dialect().values_per_statement() / CATALOG_COLUMNS).max(1);
        self.write(move |tx| {
            Box::pin(async move {
                for category in plaza_emoji::categories() {
                    sqlx::query(
                        "INSERT INTO emoji_categories (name, display_name, description, sort_order) \
                         VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO UPDATE SET \
                         display_name = excluded.display_name, \
                         description = excluded.description, sort_order = excluded.sort_order",
                    )
                    .bind(category.name)
                    .bind(category.display_name)
                    .bind(category.description)
                    .bind(category.sort_order)
                    .execute(&mut **tx)
                    .await?;
                }
                let now = now_millis();
                let catalog = plaza_emoji::catalog();
                for chunk in catalog.chunks(rows_per_statement) {
                    let values = (0..chunk.len())
                        .map(|row| catalog_row_values(row * CATALOG_COLUMNS))
                        .collect::<Vec<_>>()
                        .join(", ");
                    let sql = format!(
                        "INSERT INTO emojis (emoji_id, unicode_codepoint, unicode_char, name, \
                         description, category_id, tags, aliases, keywords, is_custom, \
                         search_text, version_min, is_approved, version_rank, sort_order, \
                         created_at) VALUES {values} ON CONFLICT (emoji_id) DO UPDATE SET \
                         unicode_codepoint = excluded.unicode_codepoint, \
                         unicode_char = excluded.unicode_char, name = excluded.name, \
                         description = excluded.description, category_id = excluded.category_id, \
                         tags = excluded.tags, aliases = excluded.aliases, \
                         keywords = excluded.keywords, search_text = excluded.search_text, \
                         version_min = excluded.version_min, version_rank = excluded.version_rank, \
                         sort_order = excluded.sort_order"
                    );
                    let mut statement = sqlx::query(&sql);
                    for emoji in chunk {
                        let search_text = std::iter::once(emoji.name.to_owned())
                            .chain(emoji.aliases.iter().cloned())
                            .chain(emoji.keywords.iter().cloned())
                            .collect::<Vec<_>>()
                            .join(" ")
                            .to_lowercase();
                        statement = statement
                            .bind(emoji.emoji_id.clone())
                            .bind(emoji.unicode_codepoint.clone())
                            .bind(emoji.unicode_char)
                            .bind(emoji.name)
                            .bind(emoji.category)
                            .bind(json!(emoji.tags).to_string())
                            .bind(json!(emoji.aliases).to_string())
                            .bind(json!(emoji.keywords).to_string())
                            .bind(search_text)
                            .bind(emoji.version.to_string())
                            .bind(emoji.version.rank())
                            .bind(emoji.sort_order)
                            .bind(now);
                    }
                    statement.execute(&mut **tx).await?;
                }
                sqlx::query(
                    "INSERT INTO emoji_catalog (id, fingerprint, loaded_at) VALUES (1, $1, $2) \
                     ON CONFLICT (id) DO UPDATE SET fingerprint = excluded.fingerprint, \
                     loaded_at = excluded.loaded_at",
                )
                .bind(fingerprint)
                .bind(now)
                .execute(&mut **tx)
                .await?;
                Ok(())
            })
        })
        .await?;
        Ok(true)
    }

    /// One page of the emojis `query` asks for, the category counts and
    /// the total.
    pub async fn list_emojis(&self, query: &EmojiQuery) -> Result<EmojiListing, DomainError> {
        let mut lease = self.lease().await?;
        let mut args = Args::default();
        let conditions = filter_conditions(query, &mut args);
        let order = match query.sort {
            EmojiSort::Catalog => "e.is_custom, c.sort_order, e.sort_order, e.id",
            EmojiSort::Popular => {
                "e.usage_count DESC, e.is_custom, c.sort_order, e.sort_order, e.id"
            }
        };
        let page = query.page;
        let limit = args.push(Arg::Int(page.limit));
        let offset = args.push(Arg::Int(page.offset));
        let sql = format!(
            "SELECT {EMOJI_COLUMNS} {FROM_EMOJIS}{} ORDER BY {order} LIMIT {limit} OFFSET {offset}",
            where_clause(&conditions)
        );
        let emojis: Vec<EmojiRow> = bind_all(sqlx::query_as(&sql), args.into_vec())
            .fetch_all(&mut *lease)
            .await?;

        let mut args = Args::default();
        let conditions = filter_conditions(query, &mut args);
        let sql = format!("SELECT COUNT(*) {FROM_EMOJIS}{}", where_clause(&conditions));
        let (total,): (i64,) = bind_all(sqlx::query_as(&sql), args.into_vec())
            .fetch_one(&mut *lease)
            .await?;

        let mut args = Args::default();
        let visible = visible_conditions(query, &mut args);
        let sql = format!(
            "SELECT c.id, c.name, c.display_name, c.description, COUNT(e.id) AS emoji_count \
             FROM emoji_categories c LEFT JOIN emojis e ON e.category_id = c.id AND {} \
             GROUP BY c.id, c.name, c.display_name, c.description, c.sort_order \
             ORDER BY c.sort_order, c.id",
            visible.join(" AND ")
        );
        let categories: Vec<CategoryCount> = bind_all(sqlx::query_as(&sql), args.into_vec())
            .fetch_all(&mut *lease)
            .await?;
        Ok(EmojiListing {
            emojis: emojis.into_iter().map(Emoji::from).collect(),
            categories,
            total,
        })
    }

    /// Whether `owner_id` already has a custom emoji called `name`.
    pub async fn custom_emoji_name_taken(
        &self,
        owner_id: i64,
        name: &str,
    ) -> Result<bool, DomainError> {
        let found: Option<(i64,)> =
            sqlx::query_as("SELECT id FROM emojis WHERE is_custom AND owner_id = $1 AND name = $2")
                .bind(owner_id)
                .bind(name)
                .fetch_optional(&mut *self.lease().await?)
                .await?;
        Ok(found.is_some())
    }

    /// Whether a category of this name exists.
    pub async fn emoji_category_exists(&self, name: &str) -> Result<bool, DomainError> {
        let found: Option<(i64,)> =
            sqlx::query_as("SELECT id FROM emoji_categories WHERE name = $1")
                .bind(name)
                .fetch_optional(&mut *self.lease().await?)
                .await?;
        Ok(found.is_some())
    }

    /// Counts one use of an emoji the caller can see: a Unicode one
    /// (`custom` false) or a custom one that is approved or the caller's
    /// own. One `UPDATE … SET usage_count = usage_count + 1`.
    pub async fn track_emoji_use(
        &self,
        emoji_id: &str,
        custom: bool,
        viewer: Option<i64>,
    ) -> Result<(), DomainError> {
        let emoji_id = emoji_id.to_owned();
        self.write(move |tx| {
            Box::pin(async move {
                let updated = if custom {
                    sqlx::query(
                        "UPDATE emojis SET usage_count = usage_count + 1 WHERE emoji_id = $1 \
                         AND is_custom AND (is_approved OR owner_id = $2)",
                    )
                    .bind(emoji_id)
                    .bind(viewer)
                    .execute(&mut **tx)
                    .await?
                } else {
                    sqlx::query(
                        "UPDATE emojis SET usage_count = usage_count + 1 WHERE emoji_id = $1 \
                         AND NOT is_custom",
                    )
                    .bind(emoji_id)
                    .execute(&mut **tx)
                    .await?
                };
                if updated.rows_affected() == 0 {
                    return Err(DomainError::NotFound("emoji"));
                }
                Ok(())
            })
        })
        .await
    }

    /// Custom emojis waiting for approval, oldest first, and their number.
    pub async fn pending_custom_emojis(
        &self,
        page: Page,
    ) -> Result<(Vec<Emoji>, i64), DomainError> {
        let mut lease = self.lease().await?;
        let rows: Vec<EmojiRow> = sqlx::query_as(&format!(
            "SELECT {EMOJI_COLUMNS} {FROM_EMOJIS} WHERE e.is_custom AND NOT e.is_approved \
             ORDER BY e.created_at, e.id LIMIT $1 OFFSET $2"
        ))
        .bind(page.limit)
        .bind(page.offset)
        .fetch_all(&mut *lease)
        .await?;
        let (total,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM emojis WHERE is_custom AND NOT is_approved")
                .fetch_one(&mut *lease)
                .await?;
        Ok((rows.into_iter().map(Emoji::from).collect(), total))
    }
}

async fn emoji_in(tx: &mut Tx<'_>, id: i64) -> Result<Emoji, DomainError> {
    let row: EmojiRow = sqlx::query_as(&format!(
        "SELECT {EMOJI_COLUMNS} {FROM_EMOJIS} WHERE e.id = $1"
    ))
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?
    .ok_or(DomainError::NotFound("emoji"))?;
    Ok(row.into())
}

/// Records a custom emoji's image upload and the emoji itself, personal
/// and unapproved. A name the owner already uses is
/// [`DomainError::Invalid`] on `name`.
pub async fn create_custom(
    tx: &mut Tx<'_>,
    upload: NewUpload,
    new: NewCustomEmoji,
) -> Result<Emoji, DomainError> {
    let upload = crate::uploads::record(tx, upload).await?;
    let now = now_millis();
    let inserted: Result<(i64,), sqlx::Error> = sqlx::query_as(
        "INSERT INTO emojis (emoji_id, name, description, category_id, tags, aliases, keywords, \
         search_text, is_custom, owner_id, upload_id, custom_image_url, version_rank, is_approved, \
         sort_order, created_at) \
         VALUES ($1, $2, $3, (SELECT id FROM emoji_categories WHERE name = $4), $5, $6, $7, $8, \
         TRUE, $9, $10, $11, 0, FALSE, 0, $12) RETURNING id",
    )
    .bind(format!("custom-{}-{}", new.owner_id, new.name))
    .bind(new.name.clone())
    .bind(format!("Custom emoji :{}:", new.name))
    .bind(new.category.clone())
    .bind(json!([new.category]).to_string())
    .bind(json!([new.name]).to_string())
    .bind(
        json!(
            new.name
                .split('_')
                .filter(|word| !word.is_empty())
                .collect::<Vec<_>>()
        )
        .to_string(),
    )
    .bind(new.name.replace('_', " "))
    .bind(new.owner_id)
    .bind(upload.id)
    .bind(new.image_url)
    .bind(now)
    .fetch_one(&mut **tx)
    .await;
    let (id,) = match inserted {
        Ok(row) => row,
        Err(sqlx::Error::Database(error)) if error.is_unique_violation() => {
            return Err(DomainError::Invalid {
                field: "name",
                reason: "you already have a custom emoji with this name".to_owned(),
            });
        }
        Err(error) => return Err(error.into()),
    };
    emoji_in(tx, id).await
}

/// Approves a personal custom emoji: everyone may list it from now on.
/// Audited as `emoji.approve`. Nobody approves their own (forbidden); an
/// approved one is an invalid transition, and a name another approved
/// custom emoji holds a conflict.
pub async fn approve(
    tx: &mut Tx<'_>,
    context: &AuditContext,
    actor: Actor,
    id: i64,
) -> Result<Emoji, DomainError> {
    let before = emoji_in(tx, id).await?;
    if !before.is_custom {
        return Err(DomainError::NotFound("emoji"));
    }
    policy::approve_emoji(actor, before.owner_id)
        .check("emoji", "nobody approves their own custom emoji")?;
    let taken: Option<(i64,)> = sqlx::query_as(
        "SELECT id FROM emojis WHERE is_custom AND is_approved AND name = $1 AND id <> $2",
    )
    .bind(&before.name)
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?;
    if taken.is_some() {
        return Err(DomainError::Conflict(format!(
            "an approved custom emoji is already named {}",
            before.name
        )));
    }
    // Only a pending emoji changes, so of two approvals at once on two
    // instances one succeeds and the other finds it approved; the unique
    // index on approved names settles two emojis of one name the same way.
    let approved = sqlx::query(
        "UPDATE emojis SET is_approved = TRUE, approved_by = $2, approved_at = $3 \
         WHERE id = $1 AND NOT is_approved",
    )
    .bind(id)
    .bind(context.actor_id)
    .bind(now_millis())
    .execute(&mut **tx)
    .await
    .map_err(|error| match DomainError::from(error) {
        DomainError::Conflict(_) => DomainError::Conflict(format!(
            "an approved custom emoji is already named {}",
            before.name
        )),
        other => other,
    })?;
    if approved.rows_affected() == 0 {
        return Err(DomainError::InvalidTransition(
            "the emoji is already approved".to_owned(),
        ));
    }
    audit::record(
        tx,
        context,
        AuditAction {
            action: "emoji.approve",
            target_type: "emoji",
            target_id: Some(id.to_string()),
            changes: json!({
                "name": before.name,
                "ownerId": before.owner_id,
                "isApproved": audit::change(false, true),
            }),
        },
    )
    .await?;
    emoji_in(tx, id).await
}

/// Removes a custom emoji that is waiting for approval (its image stays
/// with the owner's uploads). Audited as `emoji.reject`.
pub async fn reject(tx: &mut Tx<'_>, context: &AuditContext, id: i64) -> Result<(), DomainError> {
    let before = emoji_in(tx, id).await?;
    if !before.is_custom {
        return Err(DomainError::NotFound("emoji"));
    }
    if before.is_approved {
        return Err(DomainError::InvalidTransition(
            "the emoji is approved already; only a pending one is rejected".to_owned(),
        ));
    }
    sqlx::query("DELETE FROM emojis WHERE id = $1")
        .bind(id)
        .execute(&mut **tx)
        .await?;
    audit::record(
        tx,
        context,
        AuditAction {
            action: "emoji.reject",
            target_type: "emoji",
            target_id: Some(id.to_string()),
            changes: json!({"name": before.name, "ownerId": before.owner_id}),
        },
    )
    .await?;
    Ok(())
}
