//! Cluster-wide jobs run once: two runners (two connection pools, two
//! owners) on one database, with the clock passed in.

use crate::common::{Backend, TestServer};
use plaza_domain::jobs::Claim;

on_both_databases!(a_job_run_is_claimed_by_one_runner_and_expires_with_its_owner);

fn claim<'a>(owner: &'a str, now: i64) -> Claim<'a> {
    Claim {
        job: "nightly",
        owner,
        now,
        locked_until: now + 1_000,
        next_run_at: now + 500,
    }
}

async fn a_job_run_is_claimed_by_one_runner_and_expires_with_its_owner(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (first, second) = (server.domain().await, server.domain().await);
    // Both race for the first run: exactly one wins.
    let (a, b) = tokio::join!(
        first.claim_job(claim("first", 10_000)),
        second.claim_job(claim("second", 10_000))
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(a ^ b, "one runner, not both, not none");
    let (winner, loser, winner_db, loser_db) = if a {
        ("first", "second", &first, &second)
    } else {
        ("second", "first", &second, &first)
    };
    // While the claim is live, nobody else runs it.
    assert!(!loser_db.claim_job(claim(loser, 10_100)).await.unwrap());
    winner_db
        .finish_job("nightly", winner, 10_200)
        .await
        .unwrap();
    // Finished, but not due again until its next run.
    assert!(!loser_db.claim_job(claim(loser, 10_300)).await.unwrap());
    assert!(loser_db.claim_job(claim(loser, 10_500)).await.unwrap());
    // That owner crashes without finishing: before its claim expires the
    // run is not taken over, after it is.
    assert!(!winner_db.claim_job(claim(winner, 11_400)).await.unwrap());
    assert!(winner_db.claim_job(claim(winner, 11_500)).await.unwrap());
    // Another job is independent.
    let other = Claim {
        job: "hourly",
        ..claim(loser, 11_500)
    };
    assert!(loser_db.claim_job(other).await.unwrap());
}
