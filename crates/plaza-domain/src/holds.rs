//! Whether a new post or reply is held for a moderator, and why: the one
//! decision every write that makes an item public asks
//! ([`hold_reason`]), so a reason added later (a silenced author) is added
//! here once. A held item is stored `pending`: its author and moderators
//! see it, nobody else does, and a moderator's `approve` publishes it.
//!
//! The reasons, first to match wins:
//! - a `hold` word filter matched its text;
//! - the new-account hold: the account has written fewer than N posts and
//!   replies before this one (N is `newAccountHoldCount`), no moderator
//!   has approved one of its held items yet, and it is not a moderator's
//!   or an administrator's.

use crate::users::Role;
use crate::{DomainError, Tx};

/// Why an item is held (or, for a word filter's `flag`, flagged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HoldReason {
    /// A word filter's phrase was found in it.
    WordFilter(String),
    /// One of the author's first writes (`newAccountHoldCount`).
    NewAccount,
    /// Its author is silenced.
    Silenced,
}

impl HoldReason {
    /// As stored in `review_reason`: `new_account`, `silenced`,
    /// `word_filter:<phrase>`.
    pub fn stored(&self) -> String {
        match self {
            HoldReason::WordFilter(phrase) => format!("word_filter:{phrase}"),
            HoldReason::NewAccount => "new_account".to_owned(),
            HoldReason::Silenced => "silenced".to_owned(),
        }
    }

    /// A stored reason read back; `None` for one this version does not
    /// know.
    pub fn parse(stored: &str) -> Option<HoldReason> {
        match stored.split_once(':') {
            Some(("word_filter", phrase)) => Some(HoldReason::WordFilter(phrase.to_owned())),
            None if stored == "new_account" => Some(HoldReason::NewAccount),
            None if stored == "silenced" => Some(HoldReason::Silenced),
            _ => None,
        }
    }

    /// A sentence for moderators.
    pub fn describe(&self) -> String {
        match self {
            HoldReason::WordFilter(phrase) => {
                format!("matches the word filter \u{201c}{phrase}\u{201d}")
            }
            HoldReason::NewAccount => "one of a new account's first posts and replies".to_owned(),
            HoldReason::Silenced => "its author is silenced".to_owned(),
        }
    }
}

/// What [`hold_reason`] decides from.
#[derive(Debug, Clone)]
pub struct HoldCheck<'a> {
    pub author_id: i64,
    pub author_role: Role,
    /// The phrase of a `hold` word filter the item's text holds.
    pub word_filter: Option<&'a str>,
    /// `newAccountHoldCount`: how many of an account's first posts and
    /// replies are held (0: none).
    pub new_account_hold_count: i64,
    pub write: Write,
}

/// What the write does to the item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// Creates it.
    New,
    /// Publishes a draft created at `created_at`.
    PublishesDraft { created_at: i64 },
    /// Changes an item already public or held.
    Edit,
}

/// Whether the item `check` describes is stored pending, and why.
pub async fn hold_reason(
    tx: &mut Tx<'_>,
    check: &HoldCheck<'_>,
) -> Result<Option<HoldReason>, DomainError> {
    if let Some(phrase) = check.word_filter {
        return Ok(Some(HoldReason::WordFilter(phrase.to_owned())));
    }
    // The new-account hold: only when the item first becomes public, and
    // counting the account's posts and replies created before it.
    let before = match check.write {
        Write::New => i64::MAX,
        Write::PublishesDraft { created_at } => created_at,
        Write::Edit => return Ok(None),
    };
    if check.author_role.is_moderator() {
        return Ok(None);
    }
    // A silenced member's new posts and replies wait for a moderator.
    if crate::silences::is_silenced(tx, check.author_id, crate::time::now_millis()).await? {
        return Ok(Some(HoldReason::Silenced));
    }
    if check.new_account_hold_count <= 0 {
        return Ok(None);
    }
    let (approved, written): (crate::Flag, i64) = sqlx::query_as(
        "SELECT u.writes_approved, \
         (SELECT COUNT(*) FROM posts p WHERE p.author_id = u.id AND p.created_at < $2) + \
         (SELECT COUNT(*) FROM replies r WHERE r.author_id = u.id AND r.created_at < $2) \
         FROM users u WHERE u.id = $1",
    )
    .bind(check.author_id)
    .bind(before)
    .fetch_optional(&mut **tx)
    .await?
    .ok_or(DomainError::NotFound("user"))?;
    let held = !approved.0 && written < check.new_account_hold_count;
    Ok(held.then_some(HoldReason::NewAccount))
}

/// What becomes of a write that makes a post or reply public.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Review {
    /// Published as its author asked.
    #[default]
    Publish,
    /// Stored pending, for this reason.
    Hold(HoldReason),
    /// Published and flagged into the moderation queue (a word filter's
    /// `flag`).
    Flag(HoldReason),
}

impl Review {
    /// The word filter's reason when this review flags the item.
    pub fn flagged(&self) -> Option<HoldReason> {
        match self {
            Review::Flag(reason) => Some(reason.clone()),
            Review::Publish | Review::Hold(_) => None,
        }
    }

    /// The reason stored with the item, if any.
    pub fn reason(&self) -> Option<String> {
        match self {
            Review::Publish => None,
            Review::Hold(reason) | Review::Flag(reason) => Some(reason.stored()),
        }
    }
}

/// [`hold_reason`], else a flag when `flag_phrase` (a `flag` word filter's
/// phrase the text holds) is there, else publication.
pub async fn review(
    tx: &mut Tx<'_>,
    check: &HoldCheck<'_>,
    flag_phrase: Option<&str>,
) -> Result<Review, DomainError> {
    if let Some(reason) = hold_reason(tx, check).await? {
        return Ok(Review::Hold(reason));
    }
    Ok(match flag_phrase {
        Some(phrase) => Review::Flag(HoldReason::WordFilter(phrase.to_owned())),
        None => Review::Publish,
    })
}

/// Records that a moderator approved one of `author_id`'s held items: the
/// new-account hold no longer applies to them.
pub async fn approved_writes_of(tx: &mut Tx<'_>, author_id: i64) -> Result<(), DomainError> {
    sqlx::query("UPDATE users SET writes_approved = TRUE WHERE id = $1")
        .bind(author_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_stored_and_read_back() {
        for reason in [
            HoldReason::NewAccount,
            HoldReason::WordFilter("a: b".to_owned()),
        ] {
            assert_eq!(HoldReason::parse(&reason.stored()), Some(reason));
        }
        assert_eq!(HoldReason::parse("something_else"), None);
    }
}
