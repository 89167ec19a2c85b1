//! What a reply shows from beside the thread: its reactions, the caller's
//! own reactions and the users it mentions, stored and read as for posts
//! ([`crate::engagement`]). A page of replies asks once for all of them
//! ([`Database::reply_extras`]), so the statements a page runs stay the
//! same whatever its size.
//!
//! A member reading a thread page that anyone may read needs only what is
//! theirs on top of it ([`Database::member_overlay`]): their own reactions,
//! and whether they hold a reply in the thread that only they see.

use std::collections::HashMap;

use crate::dialect::json_list;
use crate::engagement::{Engagement, ItemKind};
use crate::posts::Viewer;
use crate::{Database, DomainError};

/// What [`Database::reply_extras`] tells of one reply.
pub type ReplyExtras = Engagement;

/// What a member sees of a thread page beyond what anyone sees.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberOverlay {
    /// Their own reactions, by reply, in the order they added them.
    pub my_reactions: HashMap<i64, Vec<String>>,
    /// Whether they wrote a reply of the thread that is pending or hidden:
    /// they see it and nobody else does, so their pages are their own.
    pub holds_unseen_reply: bool,
}

/// The reply id of the row that says the member holds an unseen reply
/// (no reply has it).
const HOLDS_ROW: i64 = 0;

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

    /// `user_id`'s [`MemberOverlay`] on the replies `reply_ids` of post
    /// `post_id`, in one statement: their reactions read by the reactions'
    /// key, the unseen reply by the index of replies out of view.
    pub async fn member_overlay(
        &self,
        post_id: i64,
        user_id: i64,
        reply_ids: &[i64],
    ) -> Result<MemberOverlay, DomainError> {
        let ids = self.dialect().json_integers("$1");
        // The status condition is the partial index's own, which SQLite
        // uses only when the query states it as written there.
        let sql = format!(
            "SELECT r.reply_id, r.emoji, r.created_at FROM reply_reactions r \
             WHERE r.reply_id IN ({ids}) AND r.user_id = $2 \
             UNION ALL \
             SELECT CAST({HOLDS_ROW} AS BIGINT), '', CAST(0 AS BIGINT) WHERE EXISTS ( \
               SELECT 1 FROM replies h WHERE h.post_id = $3 AND h.author_id = $2 \
               AND h.status IN ('pending', 'hidden', 'deleted') AND h.status <> 'deleted')"
        );
        let mut rows: Vec<(i64, String, i64)> = sqlx::query_as(&sql)
            .bind(json_list(reply_ids)?)
            .bind(user_id)
            .bind(post_id)
            .fetch_all(&mut *self.lease().await?)
            .await?;
        rows.sort_by(|a, b| (a.0, a.2, &a.1).cmp(&(b.0, b.2, &b.1)));
        let mut overlay = MemberOverlay::default();
        for (reply_id, emoji, _) in rows {
            if reply_id == HOLDS_ROW {
                overlay.holds_unseen_reply = true;
            } else {
                overlay
                    .my_reactions
                    .entry(reply_id)
                    .or_default()
                    .push(emoji);
            }
        }
        Ok(overlay)
    }
}
