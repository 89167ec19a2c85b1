//! Posts: writing, reading and listing them, and who may see or change
//! which.
//!
//! A post's status (SPEC.md "States": published, draft, hidden, flagged) is
//! derived from two stored facts kept apart on purpose: `published` is the
//! author's switch, `moderation` is a moderator's decision. An author cannot
//! un-hide a post by publishing it again, and a moderator's flag survives the
//! author's edits.
//!
//! `model` says what a post is, `query` reads and lists posts, `writes`
//! creates, changes and deletes them (recording the users their content
//! mentions), `moderation` holds a moderator's actions (the lock of a
//! post's thread among them) and `admin_queue` the admin surface's post
//! list; everything is used through this module's names.

mod admin_queue;
mod model;
mod moderation;
mod query;
mod writes;

pub(crate) use admin_queue::AdminReportJson;
pub use admin_queue::{AdminPost, AdminPostPage, AdminReport};
pub(crate) use model::PUBLIC_SQL;
pub use model::{
    MAX_CONTENT_CHARS, MAX_TAG_CHARS, MAX_TAGS, MAX_TITLE_CHARS, Moderation, NewPost, Post,
    PostChanges, PostStatus, Viewer, normalize_tag,
};
pub use moderation::{
    Moderated, ModerationAction, ModerationStep, moderate, moderation_step, set_locked,
    set_moderation,
};
pub(crate) use query::{PostJson, REPORTED_SCOPE, post_json};
pub use query::{PostPage, PostQuery, PostSort};
pub use writes::{WrittenPost, create, delete, lock, update};
