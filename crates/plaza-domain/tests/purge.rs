//! The janitor's purge removes exactly what has expired.

use plaza_domain::auth_state::PendingOAuth;
use plaza_domain::sessions::SessionClient;
use plaza_domain::users::{NewUser, Role};
use plaza_domain::{Database, DatabaseOptions};

#[tokio::test]
async fn purge_removes_expired_state_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    let db = Database::connect(&url, &DatabaseOptions::default())
        .await
        .unwrap();
    db.migrate().await.unwrap();
    let user = db
        .create_user(NewUser {
            email: "p@example.com".into(),
            email_verified: false,
            username: None,
            name: None,
            image: None,
            password_hash: None,
            role: Role::User,
        })
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
    };
    db.save_oauth_state("old", &expired).await.unwrap();
    db.revoke_token("gone", 1).await.unwrap();
    db.revoke_token("current", i64::MAX).await.unwrap();
    db.record_sign_in_failure("email:p@example.com", 60_000)
        .await
        .unwrap();

    let removed = db.purge_expired_security_state(60_000).await.unwrap();
    assert_eq!(
        removed, 2,
        "the expired session and the old revocation (the OAuth state went on save)"
    );
    assert!(
        db.session_user("live", 60_000, 60_000)
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        db.session_user("expired", 60_000, 60_000)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        db.sign_in_failures("email:p@example.com", 60_000)
            .await
            .unwrap(),
        1
    );
    assert!(db.take_oauth_state("old").await.unwrap().is_none());
}
