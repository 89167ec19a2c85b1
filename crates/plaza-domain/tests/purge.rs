//! The janitor's purge removes exactly what has expired.

use plaza_domain::auth_state::{self, PendingOAuth};
use plaza_domain::sessions::{self, SessionClient, SessionLifetime};
use plaza_domain::users::{NewUser, Role};
use plaza_domain::{Database, DatabaseOptions};

const LIFETIME: SessionLifetime = SessionLifetime {
    ttl_millis: 60_000,
    refresh_after_millis: 60_000,
    max_lifetime_millis: 3_600_000,
};

#[tokio::test]
async fn purge_removes_expired_state_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    let db = Database::connect(&url, &DatabaseOptions::default())
        .await
        .unwrap();
    db.migrate().await.unwrap();
    let new = NewUser {
        email: "p@example.com".into(),
        email_verified: false,
        username: None,
        name: None,
        image: None,
        password_hash: None,
        role: Role::User,
    };
    let user = db
        .write(|tx| Box::pin(async move { plaza_domain::users::create(tx, new).await }))
        .await
        .unwrap();
    let user_id = user.id();
    let removed = db
        .write(|tx| {
            Box::pin(async move {
                let client = SessionClient::default();
                sessions::create(
                    tx,
                    "expired",
                    user_id,
                    -1000,
                    sessions::SignInProof::FirstFactor,
                    &client,
                )
                .await?;
                sessions::create(
                    tx,
                    "live",
                    user_id,
                    60_000,
                    sessions::SignInProof::FirstFactor,
                    &client,
                )
                .await?;
                let expired = PendingOAuth {
                    provider: "x".into(),
                    pkce_verifier: "v".into(),
                    callback_url: "/".into(),
                    expires_at: 1,
                    browser_hash: "b".into(),
                    link_user_id: None,
                    nonce: None,
                };
                auth_state::save_oauth_state(tx, "old", &expired).await?;
                auth_state::revoke_token(tx, "gone", 1).await?;
                auth_state::revoke_token(tx, "current", i64::MAX).await?;
                auth_state::reserve_sign_in_attempt(tx, "email:p@example.com", 60_000).await?;
                auth_state::purge_expired_security_state(tx, 60_000, 60_000).await
            })
        })
        .await
        .unwrap();
    assert_eq!(
        removed, 2,
        "the expired session and the old revocation (the OAuth state went on save); \
         both sign-ins are within the log's retention"
    );
    let sign_ins_removed = db
        .write(|tx| {
            Box::pin(async move {
                // A retention that ended a second ago: both sign-ins are older.
                auth_state::purge_expired_security_state(tx, 60_000, -1000).await
            })
        })
        .await
        .unwrap();
    assert_eq!(
        sign_ins_removed, 2,
        "the two sign-ins, past their retention"
    );
    assert!(db.session_user("live", &LIFETIME).await.unwrap().is_some());
    assert!(
        db.session_user("expired", &LIFETIME)
            .await
            .unwrap()
            .is_none()
    );
    let (attempts, old_state) = db
        .write(|tx| {
            Box::pin(async move {
                let attempts =
                    auth_state::reserve_sign_in_attempt(tx, "email:p@example.com", 60_000).await?;
                Ok((attempts, auth_state::take_oauth_state(tx, "old").await?))
            })
        })
        .await
        .unwrap();
    assert_eq!(attempts, 2, "attempts within the window survive the purge");
    assert!(old_state.is_none());
}
