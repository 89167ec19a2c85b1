//! What a reply shows from beside the thread: its reactions, the caller's
//! own reactions and the users it mentions, stored and read as for posts
//! ([`crate::engagement`]). A page of replies asks once for all of them
//! ([`Database::reply_extras`]), so the statements a page runs stay the
//! same whatever its size.

use crate::engagement::{Engagement, ItemKind};
use crate::posts::Viewer;
use crate::{Database, DomainError};

/// What [`Database::reply_extras`] tells of one reply.
pub type ReplyExtras = Engagement;

impl Database {
    /// The extras of each of `reply_ids` as `viewer` sees them, in the same
    /// order.
    pub async fn reply_extras(
        &self,
        viewer: Viewer,
        reply_ids: &[i64],
    ) -> Result<Vec<ReplyExtras>, DomainError> {
        let mut by_id = self
            .engagement(ItemKind::Reply, reply_ids, viewer.user_id())
            .await?;
        Ok(reply_ids
            .iter()
            .map(|id| by_id.remove(id).unwrap_or_default())
            .collect())
    }
}
