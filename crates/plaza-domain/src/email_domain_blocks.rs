//! Email-domain blocks (DECISIONS.md "The front door"): a sign-up, a
//! provider sign-in that would create an account, or an email change to an
//! address at a blocked domain or any subdomain of it is refused. Domains
//! are stored in lower case; an address is checked against its domain and
//! every parent of it in one indexed lookup. Existing users are unaffected.

use sqlx::FromRow;

use crate::listing::Page;
use crate::time::now_millis;
use crate::{Database, DomainError, Tx};

/// Longest domain name (RFC 1035).
pub const MAX_DOMAIN_CHARS: usize = 253;
/// Most characters of a reason.
pub const MAX_REASON_CHARS: usize = 500;
/// Most blocks that can exist, so checking an address stays one small
/// lookup and the list stays bounded.
pub const MAX_BLOCKS: i64 = 100_000;

/// A stored block.
#[derive(Debug, Clone, FromRow)]
pub struct EmailDomainBlock {
    pub id: i64,
    pub domain: String,
    pub reason: String,
    pub created_by: Option<i64>,
    pub created_at: i64,
}

const BLOCK_COLUMNS: &str = "id, domain, reason, created_by, created_at";

/// `domain` in the form blocks are stored and compared in (trimmed, lower
/// case, without a leading `@` or trailing dot), or `None` when it is not a
/// domain name: dot-separated labels of letters, digits and inner hyphens,
/// each 1–63 characters.
pub fn normalize_domain(domain: &str) -> Option<String> {
    let domain = domain
        .trim()
        .trim_start_matches('@')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    let valid = !domain.is_empty()
        && domain.len() <= MAX_DOMAIN_CHARS
        && domain.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
        });
    valid.then_some(domain)
}

/// The domain of `email` and each of its parents, most specific first:
/// `a.mail.example.com`, `mail.example.com`, `example.com`, `com`.
fn domain_and_parents(email: &str) -> Vec<String> {
    let Some((_, domain)) = email.trim().rsplit_once('@') else {
        return Vec::new();
    };
    let domain = domain.trim_end_matches('.').to_ascii_lowercase();
    let mut found = Vec::new();
    let mut rest = domain.as_str();
    while !rest.is_empty() {
        found.push(rest.to_owned());
        rest = rest.split_once('.').map_or("", |(_, parent)| parent);
    }
    found
}

/// The block refusing `email`, if any (its domain or a parent of it is
/// blocked).
pub async fn block_for(
    tx: &mut Tx<'_>,
    email: &str,
) -> Result<Option<EmailDomainBlock>, DomainError> {
    block_on(tx, email).await
}

async fn block_on(
    connection: &mut sqlx::AnyConnection,
    email: &str,
) -> Result<Option<EmailDomainBlock>, DomainError> {
    let domains = domain_and_parents(email);
    if domains.is_empty() {
        return Ok(None);
    }
    let placeholders = (1..=domains.len())
        .map(|n| format!("${n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "SELECT {BLOCK_COLUMNS} FROM email_domain_blocks WHERE domain IN ({placeholders}) \
         ORDER BY id LIMIT 1"
    );
    let mut query = sqlx::query_as(&sql);
    for domain in &domains {
        query = query.bind(domain.clone());
    }
    Ok(query.fetch_optional(connection).await?)
}

/// Blocks `domain` (normalized by the caller) for `reason`, by `admin_id`.
/// A domain blocked already is [`DomainError::Conflict`].
pub async fn create(
    tx: &mut Tx<'_>,
    domain: &str,
    reason: &str,
    admin_id: i64,
) -> Result<EmailDomainBlock, DomainError> {
    let (count,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM email_domain_blocks")
        .fetch_one(&mut **tx)
        .await?;
    if count >= MAX_BLOCKS {
        return Err(DomainError::Conflict(format!(
            "{MAX_BLOCKS} email domains are blocked already"
        )));
    }
    let created: Option<EmailDomainBlock> = sqlx::query_as(&format!(
        "INSERT INTO email_domain_blocks (domain, reason, created_by, created_at) \
         VALUES ($1, $2, $3, $4) ON CONFLICT (domain) DO NOTHING RETURNING {BLOCK_COLUMNS}"
    ))
    .bind(domain)
    .bind(reason)
    .bind(admin_id)
    .bind(now_millis())
    .fetch_optional(&mut **tx)
    .await?;
    created.ok_or_else(|| DomainError::Conflict(format!("{domain} is blocked already")))
}

/// Removes block `id`; answers it as it was.
pub async fn delete(tx: &mut Tx<'_>, id: i64) -> Result<EmailDomainBlock, DomainError> {
    let deleted: Option<EmailDomainBlock> = sqlx::query_as(&format!(
        "DELETE FROM email_domain_blocks WHERE id = $1 RETURNING {BLOCK_COLUMNS}"
    ))
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?;
    deleted.ok_or(DomainError::NotFound("email domain block"))
}

/// The audit snapshot of a block.
pub fn snapshot(block: &EmailDomainBlock) -> serde_json::Value {
    serde_json::json!({"domain": block.domain, "reason": block.reason})
}

/// A page of blocks and their total.
#[derive(Debug, Clone)]
pub struct BlockPage {
    pub blocks: Vec<EmailDomainBlock>,
    pub total: i64,
}

impl Database {
    /// A page of blocks, by domain.
    pub async fn email_domain_blocks(&self, page: Page) -> Result<BlockPage, DomainError> {
        let mut lease = self.lease().await?;
        let (total,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM email_domain_blocks")
            .fetch_one(&mut *lease)
            .await?;
        let blocks = sqlx::query_as(&format!(
            "SELECT {BLOCK_COLUMNS} FROM email_domain_blocks ORDER BY domain LIMIT $1 OFFSET $2"
        ))
        .bind(page.limit)
        .bind(page.offset)
        .fetch_all(&mut *lease)
        .await?;
        Ok(BlockPage { blocks, total })
    }

    /// The block refusing `email`, if any.
    pub async fn email_domain_block_for(
        &self,
        email: &str,
    ) -> Result<Option<EmailDomainBlock>, DomainError> {
        block_on(&mut *self.lease().await?, email).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains_are_stored_in_one_form() {
        assert_eq!(
            normalize_domain(" @Spam.Example. ").as_deref(),
            Some("spam.example")
        );
        assert_eq!(
            normalize_domain("xn--bcher-kva.example").as_deref(),
            Some("xn--bcher-kva.example")
        );
        for bad in [
            "",
            ".",
            "a..b",
            "-a.b",
            "a-.b",
            "a b.c",
            "a_b.c",
            "exämple.com",
        ] {
            assert_eq!(normalize_domain(bad), None, "{bad}");
        }
    }

    #[test]
    fn an_address_is_checked_against_its_domain_and_every_parent() {
        assert_eq!(
            domain_and_parents("Someone@A.Mail.Example.com"),
            [
                "a.mail.example.com",
                "mail.example.com",
                "example.com",
                "com"
            ]
        );
        assert!(domain_and_parents("nobody").is_empty());
    }
}
