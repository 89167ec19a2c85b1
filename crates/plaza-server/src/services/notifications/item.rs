//! A notification as every channel shows it: the list's item, the live
//! stream's `notification` event and a push's payload are this one shape.

use plaza_domain::notifications::Notification;
use plaza_domain::time::rfc3339;
use serde::Serialize;
use utoipa::ToSchema;

use crate::settings::ServerSettings;

/// Who caused a notification.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NotificationActorView {
    #[schema(example = "7")]
    pub id: String,
    pub username: String,
    /// The name, else the username.
    pub display_name: String,
    /// The user's image, else `<base_url>/api/avatar-image?seed=<id>`.
    pub avatar_url: String,
}

/// A notification (DECISIONS.md "Notifications (round 5)"); fields that do
/// not apply are null.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NotificationItem {
    #[schema(example = "12")]
    pub id: String,
    /// `reply`, `mention`, `reaction`, `follow`, `moderation`, `warning`,
    /// `registration` or `appeal`.
    #[serde(rename = "type")]
    #[schema(example = "reply")]
    pub kind: &'static str,
    /// When its newest event happened: a group of reactions moves on with
    /// each reaction that joins it.
    pub created_at: String,
    pub read: bool,
    /// Null for a moderator's decision, and once the actor's account is gone.
    pub actor: Option<NotificationActorView>,
    /// The thread's post.
    #[schema(example = "3")]
    pub post_id: Option<String>,
    /// The reply it is about (the new answer, the reply that mentions, the
    /// reply reacted to); null when it is about the post.
    #[schema(example = "31")]
    pub reply_id: Option<String>,
    /// The newest reaction's emoji.
    pub emoji: Option<String>,
    /// The statement of reasons of a moderator's decision; for reactions,
    /// how many joined the group, in digits.
    pub text: Option<String>,
}

impl NotificationItem {
    pub fn new(notification: &Notification, server: &ServerSettings) -> Self {
        NotificationItem {
            id: notification.id.to_string(),
            kind: notification.kind.as_str(),
            created_at: rfc3339(notification.updated_at),
            read: notification.read,
            actor: notification
                .actor
                .as_ref()
                .map(|actor| NotificationActorView {
                    id: actor.id.to_string(),
                    display_name: actor.display_name().to_owned(),
                    avatar_url: server.avatar_url(actor.id, actor.image.as_deref()),
                    username: actor.username.clone(),
                }),
            post_id: notification.post_id.map(|id| id.to_string()),
            reply_id: notification.reply_id.map(|id| id.to_string()),
            emoji: notification.emoji.clone(),
            text: notification.text.clone(),
        }
    }
}
