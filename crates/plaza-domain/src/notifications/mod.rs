//! Notifications (DECISIONS.md "Notifications (round 5)"): members learn
//! that someone answered, mentioned or reacted, that a moderator acted, in
//! the app, live, by mail and by Web Push.
//!
//! A cause (a reply, a reaction, a moderation action) calls [`notify`]
//! inside its own unit of work, so nothing is notified that did not happen
//! and nothing that happened goes unnotified. [`notify`] asks the one rule
//! of who may be notified ([`policy`]) on facts read there, writes the
//! notification (reactions to one item within an hour grow one unread
//! notification), and fills the outboxes that mail and push go out
//! through: `mail` marks which mail is due, `push` holds the pushes. `model`
//! says what a notification is, `query` reads the list, the unread count
//! (a counter the migration's triggers keep) and the stream's changes,
//! `preferences` holds each member's channels per type.

pub mod causes;
mod mail;
mod model;
pub mod policy;
mod preferences;
mod push;
mod query;
mod writes;

pub use mail::{Digest, MailDue, MailRecipient, digest_due, take_digests, take_immediate};
pub use model::{Channels, EmailChoice, Kind, Notification, NotificationActor, PreferenceChanges};
pub use preferences::{change_preferences, channels_in};
pub use push::{
    ClaimedPush, MAX_SUBSCRIPTIONS_PER_USER, NewSubscription, PushClaim, PushOutcome, subscribe,
    unsubscribe,
};
pub use query::{Cursor, MAX_PAGE, NotificationPage, NotificationQuery};
pub(crate) use query::{UNREAD_OF_USER_SQL, unread_count};
pub use writes::{
    GROUP_WINDOW_MS, MAX_MARKED, Marked, NewNotification, PUSH_LIFETIME_MS, mark_read, notify,
};
