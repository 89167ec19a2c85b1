//! What a post is: its fields, its stored facts (the author's `published`
//! switch, a moderator's decision, and whether it is held for a
//! moderator), the status derived from them, who may see or change it, and
//! the limits and tag rules of what is written.

use serde_json::{Map, Value};
use sqlx::FromRow;

use crate::holds::Review;
use crate::users::Role;
use crate::{DomainError, Flag};

/// Most characters in a title.
pub const MAX_TITLE_CHARS: usize = 200;
/// Most characters in a post's content.
pub const MAX_CONTENT_CHARS: usize = 20_000;
/// Most tags on one post.
pub const MAX_TAGS: usize = 10;
/// Most characters in one tag.
pub const MAX_TAG_CHARS: usize = 30;

/// Who is looking, which decides what exists for them: anyone sees public
/// posts, an author also their own drafts and hidden posts, a moderator
/// everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Viewer {
    Anonymous,
    Member(i64),
    Moderator(i64),
}

impl Viewer {
    /// The viewer for a signed-in user (`Some((id, role))`) or nobody.
    pub fn new(user: Option<(i64, Role)>) -> Viewer {
        match user {
            None => Viewer::Anonymous,
            Some((id, role)) if role.is_moderator() => Viewer::Moderator(id),
            Some((id, _)) => Viewer::Member(id),
        }
    }

    pub fn user_id(self) -> Option<i64> {
        match self {
            Viewer::Anonymous => None,
            Viewer::Member(id) | Viewer::Moderator(id) => Some(id),
        }
    }
}

/// A moderator's decision on a post.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moderation {
    /// No decision: the post shows as its author left it.
    None,
    /// Marked for review; still public.
    Flagged,
    /// Taken down: only its author and moderators see it.
    Hidden,
}

impl Moderation {
    pub const ALL: [Moderation; 3] = [Moderation::None, Moderation::Flagged, Moderation::Hidden];

    pub fn as_str(self) -> &'static str {
        match self {
            Moderation::None => "none",
            Moderation::Flagged => "flagged",
            Moderation::Hidden => "hidden",
        }
    }

    pub fn parse(name: &str) -> Option<Moderation> {
        Moderation::ALL
            .into_iter()
            .find(|moderation| moderation.as_str() == name)
    }
}

/// The status the admin surface shows (SPEC.md "States and transitions").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostStatus {
    Published,
    Draft,
    Hidden,
    Flagged,
    /// Held for a moderator (`crate::holds`): only its author and
    /// moderators see it until a moderator approves it.
    Pending,
}

impl PostStatus {
    pub const ALL: [PostStatus; 5] = [
        PostStatus::Published,
        PostStatus::Draft,
        PostStatus::Hidden,
        PostStatus::Flagged,
        PostStatus::Pending,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PostStatus::Published => "published",
            PostStatus::Draft => "draft",
            PostStatus::Hidden => "hidden",
            PostStatus::Flagged => "flagged",
            PostStatus::Pending => "pending",
        }
    }

    pub fn parse(name: &str) -> Option<PostStatus> {
        PostStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == name)
    }

    /// The status of a post with this switch, decision and hold: hidden
    /// wins, then a held post is pending, then an unpublished post is a
    /// draft, then a flag shows. A held post is stored unpublished.
    pub fn of(published: bool, moderation: Moderation, held: bool) -> PostStatus {
        match (published, moderation) {
            (_, Moderation::Hidden) => PostStatus::Hidden,
            _ if held => PostStatus::Pending,
            (false, _) => PostStatus::Draft,
            (true, Moderation::Flagged) => PostStatus::Flagged,
            (true, Moderation::None) => PostStatus::Published,
        }
    }

    /// The same rule as [`PostStatus::of`], as SQL over `posts p`.
    pub(super) fn condition(self) -> &'static str {
        match self {
            PostStatus::Published => "p.published = TRUE AND p.moderation = 'none'",
            PostStatus::Draft => "p.published = FALSE AND NOT p.held AND p.moderation <> 'hidden'",
            PostStatus::Hidden => "p.moderation = 'hidden'",
            PostStatus::Flagged => "p.published = TRUE AND p.moderation = 'flagged'",
            PostStatus::Pending => "p.held AND p.moderation <> 'hidden'",
        }
    }
}

/// What anyone may read, as SQL over `posts p`; must agree with
/// [`Post::is_public`].
pub(crate) const PUBLIC_SQL: &str = "(p.published = TRUE AND p.moderation <> 'hidden')";

/// A post.
#[derive(Debug, Clone, PartialEq)]
pub struct Post {
    pub id: i64,
    pub author_id: i64,
    pub title: String,
    pub content: String,
    pub tags: Vec<String>,
    pub published: bool,
    pub moderation: Moderation,
    pub report_count: i64,
    /// Visible (published or flagged) replies in its thread.
    pub reply_count: i64,
    /// A moderator's lock: the thread takes no new replies.
    pub locked: bool,
    pub created_at: i64,
    pub updated_at: i64,
    /// Held for a moderator (stored unpublished meanwhile).
    pub held: bool,
    /// Why it entered the moderation queue by itself, as
    /// `crate::holds::HoldReason::stored` writes it: kept while it is held
    /// or flagged by a word filter.
    pub review_reason: Option<String>,
}

impl Post {
    pub fn status(&self) -> PostStatus {
        PostStatus::of(self.published, self.moderation, self.held)
    }

    /// Published and not hidden: anyone may read it.
    pub fn is_public(&self) -> bool {
        self.published && self.moderation != Moderation::Hidden
    }

    pub fn visible_to(&self, viewer: Viewer) -> bool {
        match viewer {
            Viewer::Anonymous => self.is_public(),
            Viewer::Member(id) => self.is_public() || self.author_id == id,
            Viewer::Moderator(_) => true,
        }
    }

    /// Only the author or a moderator may change or delete a post.
    pub fn editable_by(&self, viewer: Viewer) -> bool {
        match viewer {
            Viewer::Anonymous => false,
            Viewer::Member(id) => self.author_id == id,
            Viewer::Moderator(_) => true,
        }
    }
}

#[derive(FromRow)]
pub(super) struct PostRow {
    pub(super) id: i64,
    pub(super) author_id: i64,
    pub(super) title: String,
    pub(super) content: String,
    pub(super) tags: String,
    pub(super) published: Flag,
    pub(super) moderation: String,
    pub(super) report_count: i64,
    pub(super) reply_count: i64,
    pub(super) locked: Flag,
    pub(super) created_at: i64,
    pub(super) updated_at: i64,
    pub(super) held: Flag,
    pub(super) review_reason: Option<String>,
}

impl TryFrom<PostRow> for Post {
    type Error = DomainError;

    fn try_from(row: PostRow) -> Result<Self, DomainError> {
        let moderation = Moderation::parse(&row.moderation).ok_or_else(|| {
            DomainError::Conflict(format!(
                "post {} has unknown moderation {}",
                row.id, row.moderation
            ))
        })?;
        Ok(Post {
            id: row.id,
            author_id: row.author_id,
            title: row.title,
            content: row.content,
            tags: split_tags(&row.tags),
            published: row.published.0,
            moderation,
            report_count: row.report_count,
            reply_count: row.reply_count,
            locked: row.locked.0,
            created_at: row.created_at,
            updated_at: row.updated_at,
            held: row.held.0,
            review_reason: row.review_reason,
        })
    }
}

/// Post columns for `RETURNING` (unqualified).
pub(super) const RETURNING_COLUMNS: &str = "id, author_id, title, content, tags, published, moderation, \
     report_count, reply_count, locked, created_at, updated_at, held, review_reason";

/// Post columns of `posts p`.
pub(crate) const POST_COLUMNS: &str = "p.id, p.author_id, p.title, p.content, p.tags, \
     p.published, p.moderation, p.report_count, p.reply_count, p.locked, p.created_at, \
     p.updated_at, p.held, p.review_reason";

/// Tags are stored space-separated (they cannot contain spaces), which is
/// also how the full-text index reads them.
pub(super) fn join_tags(tags: &[String]) -> String {
    tags.join(" ")
}

fn split_tags(stored: &str) -> Vec<String> {
    stored
        .split(' ')
        .filter(|tag| !tag.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The canonical form of a tag, or `None` when it is not one: lower case,
/// 1 to [`MAX_TAG_CHARS`] letters (any script), digits, `-` or `_`,
/// starting with a letter or digit.
pub fn normalize_tag(raw: &str) -> Option<String> {
    let tag = raw.trim().to_lowercase();
    let length = tag.chars().count();
    let well_formed = (1..=MAX_TAG_CHARS).contains(&length)
        && tag
            .chars()
            .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
        && tag.chars().next().is_some_and(char::is_alphanumeric);
    well_formed.then_some(tag)
}

/// What creating a post needs; the HTTP layer has checked the limits and
/// normalized the tags.
#[derive(Debug, Clone)]
pub struct NewPost {
    pub author_id: i64,
    pub title: String,
    pub content: String,
    pub tags: Vec<String>,
    pub published: bool,
    /// What becomes of it when published ([`Review::Publish`] for a
    /// draft).
    pub review: Review,
}

/// Fields an update changes; `None` keeps the current value. Publishing a
/// held post leaves it held (pending until approved); unpublishing it
/// makes it a draft no longer held.
#[derive(Debug, Clone, Default)]
pub struct PostChanges {
    pub title: Option<String>,
    pub content: Option<String>,
    pub tags: Option<Vec<String>>,
    pub published: Option<bool>,
    /// What becomes of the post when it is public after the change.
    pub review: Review,
}

/// `{field: {before, after}}` for each field of a post that differs between
/// two states of it (a moderator's edit of someone else's post).
pub fn audited_changes(before: &Post, after: &Post) -> Map<String, Value> {
    let mut changed = Map::new();
    let mut compare = |field: &str, before: Value, after: Value| {
        if before != after {
            changed.insert(field.into(), crate::audit::change(before, after));
        }
    };
    compare(
        "title",
        before.title.clone().into(),
        after.title.clone().into(),
    );
    compare(
        "content",
        before.content.clone().into(),
        after.content.clone().into(),
    );
    compare(
        "tags",
        before.tags.clone().into(),
        after.tags.clone().into(),
    );
    compare("published", before.published.into(), after.published.into());
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_follows_moderation_then_the_hold_then_the_switch() {
        assert_eq!(
            PostStatus::of(true, Moderation::None, false),
            PostStatus::Published
        );
        assert_eq!(
            PostStatus::of(false, Moderation::None, false),
            PostStatus::Draft
        );
        assert_eq!(
            PostStatus::of(false, Moderation::Flagged, false),
            PostStatus::Draft
        );
        assert_eq!(
            PostStatus::of(true, Moderation::Flagged, false),
            PostStatus::Flagged
        );
        assert_eq!(
            PostStatus::of(true, Moderation::Hidden, false),
            PostStatus::Hidden
        );
        assert_eq!(
            PostStatus::of(false, Moderation::Hidden, false),
            PostStatus::Hidden
        );
        assert_eq!(
            PostStatus::of(false, Moderation::None, true),
            PostStatus::Pending
        );
        assert_eq!(
            PostStatus::of(false, Moderation::Hidden, true),
            PostStatus::Hidden
        );
    }

    #[test]
    fn tags_are_normalized_or_refused() {
        assert_eq!(normalize_tag(" Rust "), Some("rust".to_owned()));
        assert_eq!(normalize_tag("Ünïcode_2"), Some("ünïcode_2".to_owned()));
        assert_eq!(normalize_tag("日本語"), Some("日本語".to_owned()));
        assert_eq!(normalize_tag("two words"), None);
        assert_eq!(normalize_tag("-lead"), None);
        assert_eq!(normalize_tag("' OR 1=1 --"), None);
        assert_eq!(normalize_tag(""), None);
        assert_eq!(normalize_tag(&"a".repeat(MAX_TAG_CHARS + 1)), None);
    }

    #[test]
    fn members_see_public_posts_and_their_own() {
        let mut post = Post {
            id: 1,
            author_id: 7,
            title: String::new(),
            content: String::new(),
            tags: Vec::new(),
            published: false,
            moderation: Moderation::None,
            report_count: 0,
            reply_count: 0,
            locked: false,
            created_at: 0,
            updated_at: 0,
            held: false,
            review_reason: None,
        };
        assert!(!post.visible_to(Viewer::Anonymous));
        assert!(post.visible_to(Viewer::Member(7)));
        assert!(!post.visible_to(Viewer::Member(8)));
        assert!(post.visible_to(Viewer::Moderator(9)));
        post.published = true;
        assert!(post.visible_to(Viewer::Anonymous));
        post.moderation = Moderation::Hidden;
        assert!(!post.visible_to(Viewer::Member(8)));
        assert!(post.editable_by(Viewer::Member(7)));
        assert!(!post.editable_by(Viewer::Member(8)));
        assert!(post.editable_by(Viewer::Moderator(9)));
    }
}
