//! The janitor's purge removes exactly what has expired.

use plaza_domain::auth_state::PendingOAuth;
use plaza_domain::sessions::{SessionClient, SessionLifetime};
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
    let client = SessionClient::default();
    db.create_session("expired", user.id(), -1000, &client)
        .await
        .unwrap();
    db.create_session("live", user.id(), 60_000, &client)
        .await
        .unwrap();
    let expired = PendingOAuth {
        provider: "x".into(),
        pkce_verifier: "v".into(),
        callback_url: "/".into(),
        expires_at: 1,
        browser_hash: "b".into(),
        link_user_id: None,
    };
    db.save_oauth_state("old", &expired).await.unwrap();
    db.revoke_token("gone", 1).await.unwrap();
    db.revoke_token("current", i64::MAX).await.unwrap();
    db.reserve_sign_in_attempt("email:p@example.com", 60_000)
        .await
        .unwrap();

    let removed = db.purge_expired_security_state(60_000).await.unwrap();
    assert_eq!(
        removed, 2,
        "the expired session and the old revocation (the OAuth state went on save)"
    );
    assert!(db.session_user("live", &LIFETIME).await.unwrap().is_some());
    assert!(
        db.session_user("expired", &LIFETIME)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        db.reserve_sign_in_attempt("email:p@example.com", 60_000)
            .await
            .unwrap(),
        2,
        "attempts within the window survive the purge"
    );
    assert!(db.take_oauth_state("old").await.unwrap().is_none());
}
