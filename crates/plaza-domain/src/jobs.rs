//! Claims of periodic background jobs shared by every instance: a run of a
//! job is claimed through its row (`owner`, `locked_until`), so with several
//! instances on one database each run happens once, and a claim whose owner
//! crashed expires by itself. Times are passed in, so tests need no clock;
//! the job runner passes [`Database::clock_millis`], the database's.

use crate::{Database, DomainError};

/// One attempt to claim a run of a job.
#[derive(Debug, Clone, Copy)]
pub struct Claim<'a> {
    pub job: &'a str,
    /// Who claims: one id per process.
    pub owner: &'a str,
    pub now: i64,
    /// Until when the claim holds if its owner never finishes.
    pub locked_until: i64,
    /// When the next run becomes due.
    pub next_run_at: i64,
}

impl Database {
    /// The database's clock, in milliseconds since the Unix epoch: the one
    /// clock every instance sharing the database reads alike, so a claim's
    /// lease and a due time mean the same on each, whatever its own clock
    /// says.
    pub async fn clock_millis(&self) -> Result<i64, DomainError> {
        let sql = match self.backend() {
            crate::Backend::Sqlite => {
                "SELECT CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)"
            }
            crate::Backend::Postgres => {
                "SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"
            }
        };
        let (now,): (i64,) = sqlx::query_as(sql)
            .fetch_one(&mut *self.lease().await?)
            .await?;
        Ok(now)
    }

    /// Claims a run: succeeds when the job has never run, or it is due and
    /// no live claim is held. One statement, so two instances racing for
    /// the same run cannot both win.
    pub async fn claim_job(&self, claim: Claim<'_>) -> Result<bool, DomainError> {
        let claimed: Option<(String,)> = sqlx::query_as(
            "INSERT INTO job_runs (name, owner, locked_until, next_run_at, last_started_at) \
             VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (name) DO UPDATE SET owner = $2, locked_until = $3, next_run_at = $4, \
               last_started_at = $5 \
             WHERE job_runs.locked_until <= $5 AND job_runs.next_run_at <= $5 \
             RETURNING name",
        )
        .bind(claim.job)
        .bind(claim.owner)
        .bind(claim.locked_until)
        .bind(claim.next_run_at)
        .bind(claim.now)
        .fetch_optional(&mut *self.lease().await?)
        .await?;
        Ok(claimed.is_some())
    }

    /// Ends the claim of a finished run, if `owner` still holds it.
    pub async fn finish_job(&self, job: &str, owner: &str, now: i64) -> Result<(), DomainError> {
        sqlx::query(
            "UPDATE job_runs SET locked_until = $3, last_finished_at = $3 \
             WHERE name = $1 AND owner = $2",
        )
        .bind(job)
        .bind(owner)
        .bind(now)
        .execute(&mut *self.lease().await?)
        .await?;
        Ok(())
    }
}
