//! Replies: members answering posts and one another in threads (DECISIONS.md
//! "Conversations (round 5)").
//!
//! A thread is stored in thread order by a materialised path (`path`): a
//! page is one index range from a cursor, in either order, whatever the
//! thread's size or depth. `model` says what a reply is and who sees it,
//! `thread` reads replies and pages of threads, `writes` creates, edits
//! and deletes them, keeps the counts and records their mentions, `moderation` holds a moderator's
//! actions, `admin_queue` the moderators' list, `of_author` a member's
//! replies as a whole (profile counts, export, erasure) and `extras` what
//! a reply shows from beside the thread (reactions, mentions); everything
//! is used through this module's names.

mod admin_queue;
mod extras;
mod model;
mod moderation;
mod of_author;
pub mod path;
mod thread;
mod writes;

pub use admin_queue::{AdminReply, AdminReplyPage, AdminReplyQuery};
pub use extras::{MemberOverlay, ReplyExtras};
pub use model::{MAX_CONTENT_CHARS, NewReply, Reply, ReplyAuthor, ReplyStatus};
pub(crate) use model::{REPLY_COLUMNS, ReplyJson, ReplyRow};
pub use moderation::{ReplyModerated, ReplyStep, moderate, reply_moderation_step};
pub use of_author::erase_of_author;
pub use thread::{MAX_PAGE, ThreadPage, ThreadQuery, ThreadSort};
pub use writes::{
    Removal, WrittenReply, create, edit, lock_thread_of, refusal_of_answers, remove, reply_in,
    set_status,
};
