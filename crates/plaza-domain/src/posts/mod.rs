//! Posts: writing, reading and listing them, and who may see or change
//! which.
//!
//! A post's status (SPEC.md "States": published, draft, hidden, flagged,
//! and pending for one held for a moderator) is derived from stored facts
//! kept apart on purpose: `published` is the author's switch, `moderation`
//! is a moderator's decision, `held` a hold (`crate::holds`), during which
//! the post is stored unpublished. An author cannot un-hide a post by
//! publishing it again, nor publish a held one, and a moderator's flag
//! survives the author's edits.
//!
//! `model` says what a post is, `query` reads and lists posts, `writes`
//! creates, changes and deletes them (recording the users their content
//! mentions), `moderation` holds a moderator's actions (the lock of a
//! post's thread among them), `admin_queue` the admin surface's post list
//! and `feed` the posts of followed members; everything is used through
//! this module's names.

mod admin_queue;
mod feed;
mod model;
mod moderation;
mod query;
mod writes;

pub(crate) use admin_queue::AdminReportJson;
pub use admin_queue::{AdminPost, AdminPostPage, AdminReport};
pub use feed::{FANOUT_BATCH, FOLLOW_BACKFILL, FanOut, FeedCursor, FeedPage};
pub(crate) use model::PUBLIC_SQL;
pub use model::{
    MAX_CONTENT_CHARS, MAX_TAG_CHARS, MAX_TAGS, MAX_TITLE_CHARS, Moderation, NewPost, Post,
    PostChanges, PostStatus, Viewer, audited_changes, normalize_tag,
};
pub use moderation::{
    Moderated, ModerationAction, ModerationStep, moderate, moderation_step, set_locked,
    set_moderation,
};
pub use query::{ListScreen, PostPage, PostQuery, PostSort};
pub(crate) use query::{PostJson, REPORTED_SCOPE, post_json};
pub use writes::{WrittenPost, create, delete, lock, update};
