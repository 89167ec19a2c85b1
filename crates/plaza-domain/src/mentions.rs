//! Mentions (DECISIONS.md "Conversations (round 5)"): `@username` in a
//! post's or reply's content names that user when they exist and are
//! active. The names are found by [`mentioned_usernames`], the users looked
//! up in one statement, and the first [`MAX_MENTIONS`] of them stored with
//! the content, in the same unit of work, so reading them costs a join
//! ([`crate::engagement`]). An edit records them again and answers who is
//! mentioned now that was not before, for notifications to tell.

use std::collections::{HashMap, HashSet};

use crate::dialect::Dialect;
use crate::engagement::{ItemKind, Mention};
use crate::{DomainError, Tx};

/// Most users one item mentions; further names stay plain text.
pub const MAX_MENTIONS: usize = 20;

/// Longest username (see `users::is_valid_username`): a longer run of
/// username characters names nobody, so it is never looked up.
const MAX_USERNAME_CHARS: usize = 30;

/// What recording an item's mentions found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mentioned {
    /// Every user the content mentions, in order of first appearance.
    pub mentions: Vec<Mention>,
    /// Those the item did not mention before this write (all of them for a
    /// new item), in the same order.
    pub newly_mentioned: Vec<Mention>,
}

/// A character a username may hold, in either case.
fn is_username_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// The usernames `content` mentions, lower-cased, each once, in order of
/// first appearance: after an `@` that starts the text or follows a
/// character that is not a letter, digit or `@`, the longest run of
/// username characters (`a-z 0-9 _ - .`, any case) without its trailing
/// dots. Whether those users exist is not asked here.
pub fn mentioned_usernames(content: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut seen = HashSet::new();
    let mut previous: Option<char> = None;
    for (at, c) in content.char_indices() {
        let starts_mention =
            c == '@' && previous.is_none_or(|before| !(before.is_alphanumeric() || before == '@'));
        previous = Some(c);
        if !starts_mention {
            continue;
        }
        let rest = &content[at + 1..];
        let run = rest
            .find(|c: char| !is_username_char(c))
            .unwrap_or(rest.len());
        let name = rest[..run].trim_end_matches('.').to_ascii_lowercase();
        if !name.is_empty() && name.len() <= MAX_USERNAME_CHARS && seen.insert(name.clone()) {
            names.push(name);
        }
    }
    names
}

/// Stores the mentions of `content` as those of the item `id` of `kind`
/// by `author_id`, replacing what it mentioned before: the first
/// [`MAX_MENTIONS`] existing active users it names, leaving out those a
/// block stands between with the author (either way: to them the name is
/// plain text). Answers them and who among them is new.
pub async fn record(
    tx: &mut Tx<'_>,
    kind: ItemKind,
    id: i64,
    author_id: i64,
    content: &str,
    created: bool,
) -> Result<Mentioned, DomainError> {
    let mentions = lookup(tx, author_id, &mentioned_usernames(content)).await?;
    let table = kind.mentions_table();
    let item = kind.item_column();
    let before: Vec<i64> = if created {
        Vec::new()
    } else {
        let ids: Vec<(i64,)> = sqlx::query_as(&format!(
            "SELECT user_id FROM {table} WHERE {item} = $1 ORDER BY position"
        ))
        .bind(id)
        .fetch_all(&mut **tx)
        .await?;
        ids.into_iter().map(|(user_id,)| user_id).collect()
    };
    let unchanged = before
        .iter()
        .copied()
        .eq(mentions.iter().map(|mention| mention.id));
    if !unchanged {
        if !before.is_empty() {
            sqlx::query(&format!("DELETE FROM {table} WHERE {item} = $1"))
                .bind(id)
                .execute(&mut **tx)
                .await?;
        }
        insert(tx, table, item, id, &mentions).await?;
    }
    let newly_mentioned = mentions
        .iter()
        .filter(|mention| !before.contains(&mention.id))
        .cloned()
        .collect();
    Ok(Mentioned {
        mentions,
        newly_mentioned,
    })
}

/// Everyone the item `id` of `kind` mentions now, in order of first
/// appearance, all as newly mentioned: what an item held until a moderator
/// approved it tells on its publication.
pub async fn on_publication(
    tx: &mut Tx<'_>,
    kind: ItemKind,
    id: i64,
) -> Result<Mentioned, DomainError> {
    let table = kind.mentions_table();
    let item = kind.item_column();
    let rows: Vec<(i64, String)> = sqlx::query_as(&format!(
        "SELECT m.user_id, u.username FROM {table} m JOIN users u ON u.id = m.user_id \
         WHERE m.{item} = $1 ORDER BY m.position"
    ))
    .bind(id)
    .fetch_all(&mut **tx)
    .await?;
    let mentions: Vec<Mention> = rows
        .into_iter()
        .map(|(id, username)| Mention { id, username })
        .collect();
    Ok(Mentioned {
        newly_mentioned: mentions.clone(),
        mentions,
    })
}

/// The first [`MAX_MENTIONS`] of `usernames` that name an active user, in
/// the order given; one statement whatever their number.
async fn lookup(
    tx: &mut Tx<'_>,
    author_id: i64,
    usernames: &[String],
) -> Result<Vec<Mention>, DomainError> {
    if usernames.is_empty() {
        return Ok(Vec::new());
    }
    let names = Dialect::of(tx).json_texts("$1");
    let found: Vec<(i64, String)> = sqlx::query_as(&format!(
        "SELECT id, username FROM users WHERE status = 'active' AND username IN ({names}) \
         AND NOT EXISTS (SELECT 1 FROM member_relations mr WHERE mr.blocked_at IS NOT NULL \
         AND ((mr.user_id = users.id AND mr.other_id = $2) \
         OR (mr.user_id = $2 AND mr.other_id = users.id)))"
    ))
    .bind(serde_json::Value::from(usernames).to_string())
    .bind(author_id)
    .fetch_all(&mut **tx)
    .await?;
    let mut by_name: HashMap<String, i64> = found
        .into_iter()
        .map(|(id, username)| (username, id))
        .collect();
    Ok(usernames
        .iter()
        .filter_map(|name| {
            by_name.remove(name).map(|id| Mention {
                id,
                username: name.clone(),
            })
        })
        .take(MAX_MENTIONS)
        .collect())
}

/// One row per mention, in one statement.
async fn insert(
    tx: &mut Tx<'_>,
    table: &str,
    item: &str,
    id: i64,
    mentions: &[Mention],
) -> Result<(), DomainError> {
    if mentions.is_empty() {
        return Ok(());
    }
    let values: Vec<String> = (0..mentions.len())
        .map(|index| format!("($1, ${}, {index})", index + 2))
        .collect();
    let sql = format!(
        "INSERT INTO {table} ({item}, user_id, position) VALUES {}",
        values.join(", ")
    );
    let mut statement = sqlx::query(&sql).bind(id);
    for mention in mentions {
        statement = statement.bind(mention.id);
    }
    statement.execute(&mut **tx).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(content: &str) -> Vec<String> {
        mentioned_usernames(content)
    }

    #[test]
    fn a_mention_is_the_longest_run_of_username_characters() {
        assert_eq!(names("@alice"), ["alice"]);
        assert_eq!(names("hi @bob_smith-2.x!"), ["bob_smith-2.x"]);
        assert_eq!(names("(@carol)"), ["carol"]);
        assert_eq!(names("@dave,@erin"), ["dave", "erin"]);
        assert_eq!(names("line\n@frank\ttab"), ["frank"]);
    }

    #[test]
    fn trailing_dots_are_not_part_of_the_name() {
        assert_eq!(names("thanks @alice."), ["alice"]);
        assert_eq!(names("see @al.ice..."), ["al.ice"]);
        assert_eq!(names("@bob.-"), ["bob.-"]);
    }

    #[test]
    fn names_are_case_insensitive_and_counted_once_in_first_order() {
        assert_eq!(names("@Bob @alice @BOB @bob"), ["bob", "alice"]);
    }

    #[test]
    fn an_at_after_a_letter_digit_or_at_mentions_nobody() {
        assert!(names("mail me at alice@example.com").is_empty());
        assert!(names("x1@bob").is_empty());
        assert!(names("@@bob").is_empty());
        assert!(names("é@bob").is_empty(), "a letter of any script");
        assert!(names("٣@bob").is_empty(), "a digit of any script");
        assert_eq!(names("_@bob -@carol .@dave"), ["bob", "carol", "dave"]);
        assert_eq!(names("日本 @bob"), ["bob"]);
    }

    #[test]
    fn an_at_without_a_name_mentions_nobody() {
        assert!(names("@").is_empty());
        assert!(names("@ bob").is_empty());
        assert!(names("@...").is_empty());
        assert!(names("email @ me").is_empty());
    }

    #[test]
    fn a_run_longer_than_any_username_names_nobody() {
        let long = "a".repeat(MAX_USERNAME_CHARS + 1);
        assert!(names(&format!("@{long}")).is_empty());
        let longest = "a".repeat(MAX_USERNAME_CHARS);
        assert_eq!(names(&format!("@{longest}")), [longest]);
    }

    #[test]
    fn the_first_of_many_names_come_in_order() {
        let content: String = (0..30).map(|n| format!("@user{n:02} ")).collect();
        let found = names(&content);
        assert_eq!(found.len(), 30, "the limit applies to existing users only");
        assert_eq!(found[0], "user00");
        assert_eq!(found[29], "user29");
    }
}
