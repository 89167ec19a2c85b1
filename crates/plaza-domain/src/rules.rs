//! The site's rules (DECISIONS.md "Graduated moderation"): a short list in
//! the order members read them, replaced whole by an administrator, and
//! cited by id from reports, warnings and moderation actions. A list of
//! cited ids is kept as JSON text (`[1,2]`) beside what cites it.

use std::collections::HashSet;

use sqlx::FromRow;

use crate::time::now_millis;
use crate::{Database, DomainError, Tx};

/// Most rules a site has.
pub const MAX_RULES: usize = 100;
/// Longest title and description of a rule.
pub const MAX_TITLE_CHARS: usize = 200;
pub const MAX_DESCRIPTION_CHARS: usize = 2000;
/// Most rules one report, warning or action cites.
pub const MAX_CITED: usize = 20;

/// One rule.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct Rule {
    pub id: i64,
    pub title: String,
    pub description: String,
}

/// A rule as an administrator writes it: `id` keeps an existing rule (its
/// citations stay valid), none makes a new one.
#[derive(Debug, Clone)]
pub struct RuleDraft {
    pub id: Option<i64>,
    pub title: String,
    pub description: String,
}

impl Database {
    /// The rules, in order.
    pub async fn rules(&self) -> Result<Vec<Rule>, DomainError> {
        Ok(
            sqlx::query_as("SELECT id, title, description FROM site_rules ORDER BY position, id")
                .fetch_all(&mut *self.lease().await?)
                .await?,
        )
    }
}

/// The rules, in order, read in `tx`.
pub async fn rules_in(tx: &mut Tx<'_>) -> Result<Vec<Rule>, DomainError> {
    Ok(
        sqlx::query_as("SELECT id, title, description FROM site_rules ORDER BY position, id")
            .fetch_all(&mut **tx)
            .await?,
    )
}

/// Replaces the rules with `drafts`, in that order, in `tx`: a draft with
/// an id updates that rule (an id that is not a rule is 422 `rules`), the
/// others are created, and rules left out are removed. Answers the rules
/// before and after.
pub async fn replace(
    tx: &mut Tx<'_>,
    drafts: Vec<RuleDraft>,
) -> Result<(Vec<Rule>, Vec<Rule>), DomainError> {
    let before = rules_in(tx).await?;
    let known: HashSet<i64> = before.iter().map(|rule| rule.id).collect();
    let mut kept = HashSet::new();
    for draft in &drafts {
        if let Some(id) = draft.id
            && (!known.contains(&id) || !kept.insert(id))
        {
            return Err(DomainError::Invalid {
                field: "rules",
                reason: format!("rule {id} is not a rule of this site, or is named twice"),
            });
        }
    }
    for rule in &before {
        if !kept.contains(&rule.id) {
            sqlx::query("DELETE FROM site_rules WHERE id = $1")
                .bind(rule.id)
                .execute(&mut **tx)
                .await?;
        }
    }
    let now = now_millis();
    for (position, draft) in drafts.into_iter().enumerate() {
        let position = i64::try_from(position).unwrap_or(i64::MAX);
        match draft.id {
            Some(id) => {
                sqlx::query(
                    "UPDATE site_rules SET position = $1, title = $2, description = $3, \
                     updated_at = $4 WHERE id = $5",
                )
                .bind(position)
                .bind(draft.title)
                .bind(draft.description)
                .bind(now)
                .bind(id)
                .execute(&mut **tx)
                .await?;
            }
            None => {
                sqlx::query(
                    "INSERT INTO site_rules (position, title, description, created_at, updated_at) \
                     VALUES ($1, $2, $3, $4, $4)",
                )
                .bind(position)
                .bind(draft.title)
                .bind(draft.description)
                .bind(now)
                .execute(&mut **tx)
                .await?;
            }
        }
    }
    let after = rules_in(tx).await?;
    Ok((before, after))
}

/// Checks in `tx` that every id of `cited` is a rule of the site (422
/// `rule_ids` naming the first that is not, or when there are more than
/// [`MAX_CITED`]); answers them as stored, without repeats.
pub async fn check_cited(tx: &mut Tx<'_>, cited: &[i64]) -> Result<String, DomainError> {
    if cited.len() > MAX_CITED {
        return Err(DomainError::Invalid {
            field: "rule_ids",
            reason: format!("names at most {MAX_CITED} rules"),
        });
    }
    let known: HashSet<i64> = rules_in(tx).await?.iter().map(|rule| rule.id).collect();
    let mut ids: Vec<i64> = Vec::with_capacity(cited.len());
    for id in cited {
        if !known.contains(id) {
            return Err(DomainError::Invalid {
                field: "rule_ids",
                reason: format!("{id} is not a rule of this site"),
            });
        }
        if !ids.contains(id) {
            ids.push(*id);
        }
    }
    Ok(write_ids(&ids))
}

/// Rule ids as stored: a JSON array of numbers.
pub fn write_ids(ids: &[i64]) -> String {
    serde_json::to_string(ids).unwrap_or_else(|_| "[]".to_owned())
}

/// Rule ids read back from storage (nothing for what is not such a list).
pub fn read_ids(stored: &str) -> Vec<i64> {
    serde_json::from_str(stored).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cited_ids_read_back_as_written() {
        assert_eq!(read_ids(&write_ids(&[3, 1])), vec![3, 1]);
        assert_eq!(read_ids("[]"), Vec::<i64>::new());
        assert_eq!(read_ids("not json"), Vec::<i64>::new());
    }
}
