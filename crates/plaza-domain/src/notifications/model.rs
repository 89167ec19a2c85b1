//! What a notification is: its types, the channels a member chooses per
//! type and their defaults, and a stored notification as the list and the
//! stream read it.

use sqlx::FromRow;

/// What a notification is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Someone answered the member's post or reply.
    Reply,
    /// Someone mentioned the member in a post or reply.
    Mention,
    /// Someone reacted to the member's post or reply (grouped per item).
    Reaction,
    Follow,
    /// A moderator acted on the member's content or account; `text` holds
    /// the statement of reasons.
    Moderation,
    Warning,
    /// To administrators: a sign-up awaits approval.
    Registration,
    /// The decision on the member's appeal.
    Appeal,
}

impl Kind {
    pub const ALL: [Kind; 8] = [
        Kind::Reply,
        Kind::Mention,
        Kind::Reaction,
        Kind::Follow,
        Kind::Moderation,
        Kind::Warning,
        Kind::Registration,
        Kind::Appeal,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Reply => "reply",
            Kind::Mention => "mention",
            Kind::Reaction => "reaction",
            Kind::Follow => "follow",
            Kind::Moderation => "moderation",
            Kind::Warning => "warning",
            Kind::Registration => "registration",
            Kind::Appeal => "appeal",
        }
    }

    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.as_str() == name)
    }

    /// How a member hears of it by mail unless they chose otherwise: what
    /// concerns their standing at once, conversation once a day, reactions
    /// and follows not at all.
    pub fn default_email(self) -> EmailChoice {
        match self {
            Kind::Reply | Kind::Mention => EmailChoice::Daily,
            Kind::Moderation | Kind::Warning | Kind::Appeal | Kind::Registration => {
                EmailChoice::Immediate
            }
            Kind::Reaction | Kind::Follow => EmailChoice::Off,
        }
    }

    /// Whether it is pushed unless the member chose otherwise: every type is.
    pub fn default_push(self) -> bool {
        true
    }
}

/// When a type's notifications are mailed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmailChoice {
    Off,
    /// One mail per notification, within a minute.
    Immediate,
    /// In the daily digest.
    Daily,
}

impl EmailChoice {
    pub const ALL: [EmailChoice; 3] =
        [EmailChoice::Off, EmailChoice::Immediate, EmailChoice::Daily];

    pub fn as_str(self) -> &'static str {
        match self {
            EmailChoice::Off => "off",
            EmailChoice::Immediate => "immediate",
            EmailChoice::Daily => "daily",
        }
    }

    pub fn parse(name: &str) -> Option<EmailChoice> {
        EmailChoice::ALL
            .into_iter()
            .find(|choice| choice.as_str() == name)
    }

    /// The `mail_state` a new notification gets: the mail that is due.
    pub(super) fn mail_state(self) -> Option<&'static str> {
        match self {
            EmailChoice::Off => None,
            EmailChoice::Immediate => Some("immediate"),
            EmailChoice::Daily => Some("daily"),
        }
    }
}

/// A member's channels for one type, defaults filled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Channels {
    pub email: EmailChoice,
    pub push: bool,
}

impl Channels {
    pub fn default_for(kind: Kind) -> Self {
        Channels {
            email: kind.default_email(),
            push: kind.default_push(),
        }
    }
}

/// A change to a member's preferences: only the types named change.
#[derive(Debug, Clone, Default)]
pub struct PreferenceChanges {
    pub email: Vec<(Kind, EmailChoice)>,
    pub push: Vec<(Kind, bool)>,
}

/// Who caused a notification, as the list shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationActor {
    pub id: i64,
    pub username: String,
    pub name: Option<String>,
    pub image: Option<String>,
}

impl NotificationActor {
    /// The name, else the username.
    pub fn display_name(&self) -> &str {
        self.name
            .as_deref()
            .filter(|name| !name.trim().is_empty())
            .unwrap_or(&self.username)
    }
}

/// A stored notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    pub id: i64,
    pub user_id: i64,
    pub kind: Kind,
    /// `None` for a notification without one (a moderation action) or
    /// whose actor's account is gone.
    pub actor: Option<NotificationActor>,
    /// The thread's post.
    pub post_id: Option<i64>,
    /// The reply it is about; `None` when it is about the post.
    pub reply_id: Option<i64>,
    pub emoji: Option<String>,
    pub text: Option<String>,
    /// When its newest event happened (a group of reactions moves it).
    pub updated_at: i64,
    pub read: bool,
}

/// The columns a [`Notification`] is read from, over `notifications n`
/// joined to its actor as `a`.
pub(super) const NOTIFICATION_COLUMNS: &str = "n.id, n.user_id, n.type, n.actor_id, a.username, \
     a.name, a.image, n.post_id, n.reply_id, n.emoji, n.text, n.updated_at, n.read_at";

/// The rows a [`Notification`] is read from.
pub(super) const NOTIFICATION_SOURCE: &str =
    "notifications n LEFT JOIN users a ON a.id = n.actor_id";

#[derive(FromRow)]
pub(super) struct NotificationRow {
    id: i64,
    user_id: i64,
    #[sqlx(rename = "type")]
    kind: String,
    actor_id: Option<i64>,
    username: Option<String>,
    name: Option<String>,
    image: Option<String>,
    post_id: Option<i64>,
    reply_id: Option<i64>,
    emoji: Option<String>,
    text: Option<String>,
    updated_at: i64,
    read_at: Option<i64>,
}

impl TryFrom<NotificationRow> for Notification {
    type Error = crate::DomainError;

    fn try_from(row: NotificationRow) -> Result<Self, Self::Error> {
        let kind = Kind::parse(&row.kind).ok_or_else(|| {
            crate::DomainError::Conflict(format!(
                "notification {} has unknown type {}",
                row.id, row.kind
            ))
        })?;
        let actor = match (row.actor_id, row.username) {
            (Some(id), Some(username)) => Some(NotificationActor {
                id,
                username,
                name: row.name,
                image: row.image,
            }),
            _ => None,
        };
        Ok(Notification {
            id: row.id,
            user_id: row.user_id,
            kind,
            actor,
            post_id: row.post_id,
            reply_id: row.reply_id,
            emoji: row.emoji,
            text: row.text,
            updated_at: row.updated_at,
            read: row.read_at.is_some(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_and_choice_reads_back_its_name() {
        for kind in Kind::ALL {
            assert_eq!(Kind::parse(kind.as_str()), Some(kind));
        }
        for choice in EmailChoice::ALL {
            assert_eq!(EmailChoice::parse(choice.as_str()), Some(choice));
        }
        assert_eq!(Kind::parse("Reply"), None);
    }

    #[test]
    fn defaults_are_those_of_the_specification() {
        let email: Vec<&str> = Kind::ALL
            .iter()
            .map(|kind| kind.default_email().as_str())
            .collect();
        assert_eq!(
            email,
            [
                "daily",
                "daily",
                "off",
                "off",
                "immediate",
                "immediate",
                "immediate",
                "immediate"
            ]
        );
        assert!(Kind::ALL.iter().all(|kind| kind.default_push()));
    }
}
