//! Between members (DECISIONS.md "Between members: follows, blocks, mutes
//! and filters"): who follows whom, whom a member blocks or mutes, and the
//! keyword filters they read through.
//!
//! Two rules decide everything here. [`may_interact`] answers whether one
//! member may act on another's content or profile (reply, react, follow):
//! not while either blocks the other, asked inside the unit of work of the
//! act on the [`Standing`] read there. [`Relations::sight`] answers whether
//! a reader sees an author's item, and how: hidden by a block, a mute or a
//! `hide` filter, or shown with the phrases of its `warn` filters. The
//! reader's relations are read once per change ([`Database::relations_of`],
//! keyed by the `relations_version` their session carries), and lists turn
//! the authors they hide into one condition of their statement
//! ([`Screen`]), so pages stay full and totals exact.
//!
//! `follows` writes and lists follows, `relations` blocks and mutes,
//! `filters` the keyword filters, `sight` the reader's relations and the
//! rule of what they see, `members` the pages of members the lists share.

mod filters;
mod follows;
mod members;
mod relations;
mod sight;

pub use filters::{
    Filter, FilterAction, MAX_FILTERS, MAX_PHRASE_CHARS, NewFilter, add_filter, remove_filter,
};
pub use follows::{follow, unfollow};
pub use members::{Listed, MemberCursor, MemberPage};
pub use relations::{
    MAX_BLOCKS, MAX_MUTES, Standing, block, may_interact, mute, refuse_if_blocked, standing_in,
    unblock, unmute,
};
pub use sight::{Hidden, Relations, Screen, Sight};
