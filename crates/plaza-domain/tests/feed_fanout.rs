//! The feed reads a post still waiting for its fan-out from the queue, so
//! it is in every follower's feed from the moment it is written; the
//! fan-out then moves it to the followers' entries, and the page is the
//! same; an empty queue costs no unit of work. With no job runner here,
//! nothing fans out behind the test's back.
//! On SQLite, and on PostgreSQL when `PLAZA_TEST_POSTGRES_URL` names a
//! server (required when `PLAZA_TEST_REQUIRE_POSTGRES=1`).

use plaza_domain::holds::Review;
use plaza_domain::posts::{self, NewPost};
use plaza_domain::users::{self, NewUser, Role};
use plaza_domain::{Database, DatabaseOptions, between};

/// A member's id.
async fn member(db: &Database, name: &str) -> i64 {
    let new = NewUser {
        email: format!("{name}@example.com"),
        email_verified: false,
        username: Some(name.to_owned()),
        name: None,
        image: None,
        password_hash: None,
        role: Role::User,
    };
    db.write(|tx| Box::pin(async move { users::create(tx, new).await }))
        .await
        .unwrap()
        .id()
}

async fn entries(db: &Database) -> i64 {
    db.write(|tx| {
        Box::pin(async move {
            let (count,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM feed_entries")
                .fetch_one(&mut **tx)
                .await?;
            Ok(count)
        })
    })
    .await
    .unwrap()
}

async fn a_queued_post_is_in_the_feed_before_and_after_its_fan_out(db: &Database) {
    let reader = member(db, "reader").await;
    let author = member(db, "author").await;
    db.write(|tx| Box::pin(async move { between::follow(tx, reader, author).await }))
        .await
        .unwrap();
    let post = db
        .write(|tx| {
            Box::pin(async move {
                posts::create(
                    tx,
                    NewPost {
                        author_id: author,
                        title: "Queued".into(),
                        content: "not yet fanned out".into(),
                        tags: Vec::new(),
                        published: true,
                        review: Review::Publish,
                    },
                )
                .await
            })
        })
        .await
        .unwrap()
        .post;
    assert_eq!(entries(db).await, 0, "nothing has fanned out yet");
    let page = db.feed(reader, None, None, 20).await.unwrap();
    assert_eq!(
        page.posts.iter().map(|post| post.id).collect::<Vec<_>>(),
        [post.id]
    );

    let done = db.fan_out_feeds(10).await.unwrap();
    assert_eq!((done.entries, done.posts_done), (1, 1));
    assert_eq!(entries(db).await, 1);
    let page = db.feed(reader, None, None, 20).await.unwrap();
    assert_eq!(
        page.posts.iter().map(|post| post.id).collect::<Vec<_>>(),
        [post.id],
        "once, from the entries"
    );
    let commits = db.commits();
    assert_eq!(db.fan_out_feeds(10).await.unwrap(), Default::default());
    assert_eq!(db.commits(), commits, "an empty queue took a unit of work");
}

#[tokio::test]
async fn on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    let db = Database::connect(&url, &DatabaseOptions::default())
        .await
        .unwrap();
    db.migrate().await.unwrap();
    a_queued_post_is_in_the_feed_before_and_after_its_fan_out(&db).await;
}

#[tokio::test]
async fn on_postgres() {
    let Ok(server) = std::env::var("PLAZA_TEST_POSTGRES_URL") else {
        assert!(
            std::env::var("PLAZA_TEST_REQUIRE_POSTGRES").as_deref() != Ok("1"),
            "PLAZA_TEST_POSTGRES_URL is required"
        );
        return;
    };
    sqlx::any::install_default_drivers();
    let admin = sqlx::AnyPool::connect(&server).await.unwrap();
    // One name, so a run that failed before dropping its database leaves
    // nothing behind after the next.
    let name = "plaza_domain_feed_fanout";
    let drop_it = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
    sqlx::query(&drop_it).execute(&admin).await.unwrap();
    let create = format!("CREATE DATABASE {name}");
    sqlx::query(&create).execute(&admin).await.unwrap();
    let base = server
        .rsplit_once('/')
        .map_or(server.as_str(), |(base, _)| base);
    let db = Database::connect(&format!("{base}/{name}"), &DatabaseOptions::default())
        .await
        .unwrap();
    db.migrate().await.unwrap();
    a_queued_post_is_in_the_feed_before_and_after_its_fan_out(&db).await;
    drop(db);
    sqlx::query(&drop_it).execute(&admin).await.unwrap();
}
