//! IP blocks (DECISIONS.md "The front door"): an address or range whose
//! sign-ups (`sign_up`) or whose every request (`all`) is refused, until
//! `expires_at` when set. The server keeps the blocks in force in memory
//! and checks each request against them; every change here makes the site
//! settings' version grow in the same unit of work, so every instance
//! reloads them.

use sqlx::FromRow;

use crate::listing::Page;
use crate::site_settings::bump_version;
use crate::time::now_millis;
use crate::{Database, DomainError, Tx};

/// Most characters of a reason.
pub const MAX_REASON_CHARS: usize = 500;
/// Most blocks that can exist: each instance holds those in force in
/// memory (a few dozen bytes each).
pub const MAX_BLOCKS: i64 = 200_000;

/// What a block refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Sign-ups, and provider sign-ins that would create an account.
    SignUp,
    /// Every request but the health and version probes.
    All,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::SignUp => "sign_up",
            Severity::All => "all",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        [Severity::SignUp, Severity::All]
            .into_iter()
            .find(|severity| severity.as_str() == name)
    }
}

/// A stored block; `cidr` is in the canonical form the server wrote.
#[derive(Debug, Clone, FromRow)]
pub struct IpBlock {
    pub id: i64,
    pub cidr: String,
    pub severity: String,
    pub expires_at: Option<i64>,
    pub reason: String,
    pub created_by: Option<i64>,
    pub created_at: i64,
}

impl IpBlock {
    pub fn severity(&self) -> Severity {
        Severity::parse(&self.severity).unwrap_or(Severity::All)
    }
}

const BLOCK_COLUMNS: &str = "id, cidr, severity, expires_at, reason, created_by, created_at";

/// What a new block holds.
#[derive(Debug, Clone)]
pub struct NewIpBlock {
    pub cidr: String,
    pub severity: Severity,
    pub expires_at: Option<i64>,
    pub reason: String,
}

/// Stores a block by `admin_id`; more than [`MAX_BLOCKS`] is
/// [`DomainError::Conflict`].
pub async fn create(
    tx: &mut Tx<'_>,
    new: NewIpBlock,
    admin_id: i64,
) -> Result<IpBlock, DomainError> {
    let (count,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM ip_blocks")
        .fetch_one(&mut **tx)
        .await?;
    if count >= MAX_BLOCKS {
        return Err(DomainError::Conflict(format!(
            "{MAX_BLOCKS} IP blocks exist already"
        )));
    }
    let block = sqlx::query_as(&format!(
        "INSERT INTO ip_blocks (cidr, severity, expires_at, reason, created_by, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING {BLOCK_COLUMNS}"
    ))
    .bind(&new.cidr)
    .bind(new.severity.as_str())
    .bind(new.expires_at)
    .bind(&new.reason)
    .bind(admin_id)
    .bind(now_millis())
    .fetch_one(&mut **tx)
    .await?;
    bump_version(tx).await?;
    Ok(block)
}

/// Removes block `id`; answers it as it was.
pub async fn delete(tx: &mut Tx<'_>, id: i64) -> Result<IpBlock, DomainError> {
    let deleted: Option<IpBlock> = sqlx::query_as(&format!(
        "DELETE FROM ip_blocks WHERE id = $1 RETURNING {BLOCK_COLUMNS}"
    ))
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?;
    let deleted = deleted.ok_or(DomainError::NotFound("IP block"))?;
    bump_version(tx).await?;
    Ok(deleted)
}

/// The audit snapshot of a block.
pub fn snapshot(block: &IpBlock) -> serde_json::Value {
    serde_json::json!({
        "cidr": block.cidr,
        "severity": block.severity,
        "expiresAt": block.expires_at.map(crate::time::rfc3339),
        "reason": block.reason,
    })
}

/// A page of blocks and their total.
#[derive(Debug, Clone)]
pub struct BlockPage {
    pub blocks: Vec<IpBlock>,
    pub total: i64,
}

impl Database {
    /// A page of blocks, newest first, expired ones included.
    pub async fn ip_blocks(&self, page: Page) -> Result<BlockPage, DomainError> {
        let mut lease = self.lease().await?;
        let (total,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM ip_blocks")
            .fetch_one(&mut *lease)
            .await?;
        let blocks = sqlx::query_as(&format!(
            "SELECT {BLOCK_COLUMNS} FROM ip_blocks ORDER BY created_at DESC, id DESC \
             LIMIT $1 OFFSET $2"
        ))
        .bind(page.limit)
        .bind(page.offset)
        .fetch_all(&mut *lease)
        .await?;
        Ok(BlockPage { blocks, total })
    }

    /// The blocks in force (not expired), at most [`MAX_BLOCKS`].
    pub async fn ip_blocks_in_force(&self) -> Result<Vec<IpBlock>, DomainError> {
        let blocks = sqlx::query_as(&format!(
            "SELECT {BLOCK_COLUMNS} FROM ip_blocks \
             WHERE expires_at IS NULL OR expires_at > $1 ORDER BY id LIMIT $2"
        ))
        .bind(now_millis())
        .bind(MAX_BLOCKS)
        .fetch_all(&mut *self.lease().await?)
        .await?;
        Ok(blocks)
    }
}
