//! The causes of notifications, each called by the unit of work that
//! writes it: a reply (its parent's author is told `reply`, the users it
//! newly mentions `mention`, the one told of the reply not twice), a post
//! or an edit that newly mentions users, a reaction (the item's author,
//! grouped), a moderator's decision on a post or a reply, and the
//! publication of a held one. Each tells
//! [`notify`] who may see the item, by the item's own visibility rule.

use super::model::Kind;
use super::writes::{NewNotification, notify};
use crate::engagement::ItemKind;
use crate::mentions::{self, Mentioned};
use crate::posts::{Post, Viewer};
use crate::replies::{self, Reply};
use crate::users::Role;
use crate::{DomainError, Tx};

/// Whether `(user_id, role)` sees `post`.
fn sees_post(post: &Post, user_id: i64, role: Role) -> bool {
    post.visible_to(Viewer::new(Some((user_id, role))))
}

/// Whether `(user_id, role)` sees `reply` of `post`.
fn sees_reply(post: &Post, reply: &Reply, user_id: i64, role: Role) -> bool {
    let viewer = Viewer::new(Some((user_id, role)));
    post.visible_to(viewer) && reply.visible_to(viewer)
}

/// A new `reply` of `post`: the author of what it answers (the parent
/// reply, else the post) is told `reply`; each user it mentions, but that
/// one, `mention`.
pub async fn replied(
    tx: &mut Tx<'_>,
    post: &Post,
    reply: &Reply,
    mentioned: &Mentioned,
) -> Result<(), DomainError> {
    let answered_author = match reply.parent_id {
        Some(parent_id) => replies::reply_in(tx, parent_id).await?.author_id(),
        None => Some(post.author_id),
    };
    let seen_by = |user_id: i64, role: Role| sees_reply(post, reply, user_id, role);
    if let Some(recipient_id) = answered_author {
        notify(
            tx,
            NewNotification {
                recipient_id,
                kind: Kind::Reply,
                actor_id: reply.author_id(),
                post_id: Some(post.id),
                reply_id: Some(reply.id),
                emoji: None,
                text: None,
                seen_by: &seen_by,
            },
        )
        .await?;
    }
    for mention in &mentioned.newly_mentioned {
        if Some(mention.id) == answered_author {
            continue;
        }
        notify(
            tx,
            NewNotification {
                recipient_id: mention.id,
                kind: Kind::Mention,
                actor_id: reply.author_id(),
                post_id: Some(post.id),
                reply_id: Some(reply.id),
                emoji: None,
                text: None,
                seen_by: &seen_by,
            },
        )
        .await?;
    }
    Ok(())
}

/// An edit of `reply`: the users it mentions now that it did not before
/// are told `mention`.
pub async fn reply_edited(
    tx: &mut Tx<'_>,
    post: &Post,
    reply: &Reply,
    mentioned: &Mentioned,
) -> Result<(), DomainError> {
    let seen_by = |user_id: i64, role: Role| sees_reply(post, reply, user_id, role);
    for mention in &mentioned.newly_mentioned {
        notify(
            tx,
            NewNotification {
                recipient_id: mention.id,
                kind: Kind::Mention,
                actor_id: reply.author_id(),
                post_id: Some(post.id),
                reply_id: Some(reply.id),
                emoji: None,
                text: None,
                seen_by: &seen_by,
            },
        )
        .await?;
    }
    Ok(())
}

/// A post written or edited: the users it newly mentions are told
/// `mention` (those who cannot see it, such as for a draft, are not).
pub async fn post_written(
    tx: &mut Tx<'_>,
    post: &Post,
    mentioned: &Mentioned,
) -> Result<(), DomainError> {
    let seen_by = |user_id: i64, role: Role| sees_post(post, user_id, role);
    for mention in &mentioned.newly_mentioned {
        notify(
            tx,
            NewNotification {
                recipient_id: mention.id,
                kind: Kind::Mention,
                actor_id: Some(post.author_id),
                post_id: Some(post.id),
                reply_id: None,
                emoji: None,
                text: None,
                seen_by: &seen_by,
            },
        )
        .await?;
    }
    Ok(())
}

/// A held post or reply a moderator approved, now public: told as it
/// would have been when written (the users it mentions `mention`; for a
/// reply, the author of what it answers `reply`).
pub async fn published_after_hold(
    tx: &mut Tx<'_>,
    post: &Post,
    reply: Option<&Reply>,
) -> Result<(), DomainError> {
    match reply {
        Some(reply) => {
            let mentioned = mentions::on_publication(tx, ItemKind::Reply, reply.id).await?;
            replied(tx, post, reply, &mentioned).await
        }
        None => {
            let mentioned = mentions::on_publication(tx, ItemKind::Post, post.id).await?;
            post_written(tx, post, &mentioned).await
        }
    }
}

/// What a member reacted to.
pub enum Reacted<'a> {
    Post(&'a Post),
    Reply(&'a Post, &'a Reply),
}

/// `actor_id` added the reaction `emoji`: the item's author is told
/// `reaction`, joining the open group of reactions to that item.
pub async fn reacted(
    tx: &mut Tx<'_>,
    actor_id: i64,
    item: Reacted<'_>,
    emoji: &str,
) -> Result<(), DomainError> {
    let (recipient_id, post, reply) = match item {
        Reacted::Post(post) => (Some(post.author_id), post, None),
        Reacted::Reply(post, reply) => (reply.author_id(), post, Some(reply)),
    };
    let Some(recipient_id) = recipient_id else {
        return Ok(());
    };
    let seen_by = |user_id: i64, role: Role| match reply {
        Some(reply) => sees_reply(post, reply, user_id, role),
        None => sees_post(post, user_id, role),
    };
    notify(
        tx,
        NewNotification {
            recipient_id,
            kind: Kind::Reaction,
            actor_id: Some(actor_id),
            post_id: Some(post.id),
            reply_id: reply.map(|reply| reply.id),
            emoji: Some(emoji.to_owned()),
            text: None,
            seen_by: &seen_by,
        },
    )
    .await?;
    Ok(())
}

/// A new follow, told to the member followed as `follow` (a follow made
/// again after an unfollow tells again; one already standing, nothing).
pub async fn followed(
    tx: &mut Tx<'_>,
    follower_id: i64,
    followed_id: i64,
) -> Result<(), DomainError> {
    // About a member, not an item: nothing to hide from the one followed.
    let seen_by = |_: i64, _: Role| true;
    notify(
        tx,
        NewNotification {
            recipient_id: followed_id,
            kind: Kind::Follow,
            actor_id: Some(follower_id),
            post_id: None,
            reply_id: None,
            emoji: None,
            text: None,
            seen_by: &seen_by,
        },
    )
    .await?;
    Ok(())
}

/// A sign-up awaiting approval, told to the administrator `admin_id` as
/// `registration`, the new user as its actor.
pub async fn registration_awaits(
    tx: &mut Tx<'_>,
    admin_id: i64,
    user_id: i64,
) -> Result<(), DomainError> {
    // About an account, not an item: every administrator may see it.
    let seen_by = |_: i64, _: Role| true;
    notify(
        tx,
        NewNotification {
            recipient_id: admin_id,
            kind: Kind::Registration,
            actor_id: Some(user_id),
            post_id: None,
            reply_id: None,
            emoji: None,
            text: None,
            seen_by: &seen_by,
        },
    )
    .await?;
    Ok(())
}

/// A moderator's decision on a member's content, told to its author as
/// `moderation` with the statement of reasons in `text`. `post_id` and
/// `reply_id` name what is still there to open (nothing after a post's
/// deletion; the thread, not the reply, after a reply's).
pub struct Decided {
    pub author_id: i64,
    pub moderator_id: i64,
    pub post_id: Option<i64>,
    pub reply_id: Option<i64>,
    pub statement: String,
}

/// Tells the author of moderated content of the decision.
pub async fn moderated(tx: &mut Tx<'_>, decided: Decided) -> Result<(), DomainError> {
    // The statement is the subject: an author always may read the
    // decision on their own content.
    let seen_by = |_: i64, _: Role| true;
    notify(
        tx,
        NewNotification {
            recipient_id: decided.author_id,
            kind: Kind::Moderation,
            actor_id: Some(decided.moderator_id),
            post_id: decided.post_id,
            reply_id: decided.reply_id,
            emoji: None,
            text: Some(decided.statement),
            seen_by: &seen_by,
        },
    )
    .await?;
    Ok(())
}

/// A warning, told to the member warned as `warning` (and as nothing
/// else), with its reason in `text`.
pub async fn warned(
    tx: &mut Tx<'_>,
    user_id: i64,
    moderator_id: i64,
    statement: String,
) -> Result<(), DomainError> {
    let seen_by = |_: i64, _: Role| true;
    notify(
        tx,
        NewNotification {
            recipient_id: user_id,
            kind: Kind::Warning,
            actor_id: Some(moderator_id),
            post_id: None,
            reply_id: None,
            emoji: None,
            text: Some(statement),
            seen_by: &seen_by,
        },
    )
    .await?;
    Ok(())
}

/// The decision on a member's appeal, told to them as `appeal` with the
/// decision in `text`.
pub async fn appeal_decided(
    tx: &mut Tx<'_>,
    user_id: i64,
    decided_by: i64,
    statement: String,
) -> Result<(), DomainError> {
    let seen_by = |_: i64, _: Role| true;
    notify(
        tx,
        NewNotification {
            recipient_id: user_id,
            kind: Kind::Appeal,
            actor_id: Some(decided_by),
            post_id: None,
            reply_id: None,
            emoji: None,
            text: Some(statement),
            seen_by: &seen_by,
        },
    )
    .await?;
    Ok(())
}
