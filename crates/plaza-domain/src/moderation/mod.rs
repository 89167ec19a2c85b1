//! Graduated moderation (DECISIONS.md "Graduated moderation (round 5)"):
//! the record of every moderation action with its statement of reasons
//! (`actions`), warnings, silencing a member (`silence`, on the state of
//! [`crate::silences`]) and appeals decided by someone other than who
//! acted. The site's rules are [`crate::rules`]; reports on members are
//! [`crate::reports`]' third target.

pub mod actions;
pub mod appeals;
pub mod silence;
pub mod warnings;

pub use actions::{ActionKind, ActionPage, ModerationRecord, NewAction, TargetType, record};
pub use appeals::{Appeal, AppealDecision, AppealPage, AppealStatus};
pub use silence::{silence_user, unsilence_user};
pub use warnings::{Warning, WarningOrder, warn};
