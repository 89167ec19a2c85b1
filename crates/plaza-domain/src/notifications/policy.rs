//! Who may be notified: one rule over facts read in the unit of work of
//! the cause, asked once for every notification before it is written. The
//! in-app list, the live stream, mail and push all carry what this rule
//! let through, so no channel tells a member what another would not.
//!
//! Blocks and mutes plug in as [`Relationship`]: the reading of the facts
//! (`writes::standing`) answers the relationship between the two members,
//! and this rule already withholds what a block or a mute hides.

use super::model::Kind;

/// What stands between the member to notify and the member who acted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relationship {
    /// The member to notify blocks the actor.
    Blocks,
    /// The actor blocks the member to notify (a block works both ways).
    BlockedBy,
    /// The member to notify mutes the actor.
    Mutes,
}

/// The facts the rule decides on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    pub kind: Kind,
    pub recipient_id: i64,
    /// The recipient's account is active (not banned, deactivated or
    /// awaiting approval).
    pub recipient_active: bool,
    /// Who acted; `None` for what nobody did in person.
    pub actor_id: Option<i64>,
    /// The recipient may see the item the notification is about (the
    /// cause's own visibility rule, asked for the recipient).
    pub recipient_sees_subject: bool,
    pub relationship: Option<Relationship>,
    /// The actor is silenced: their reactions, follows and mentions notify
    /// nobody.
    pub actor_silenced: bool,
}

/// Why a notification was not written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Withheld {
    /// Nobody is notified of their own actions.
    OwnAction,
    InactiveRecipient,
    /// The recipient may not see what it is about.
    Unseen,
    Blocked,
    Muted,
    ActorSilenced,
}

/// Between members, what the other did (answers, mentions, reactions,
/// follows) is withheld by blocks, mutes and silence; what moderators
/// decide reaches the member whatever stands between them.
fn between_members(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Reply | Kind::Mention | Kind::Reaction | Kind::Follow
    )
}

/// Whether the member may be notified.
pub fn may_notify(facts: &Facts) -> Result<(), Withheld> {
    if facts.actor_id == Some(facts.recipient_id) {
        return Err(Withheld::OwnAction);
    }
    if !facts.recipient_active {
        return Err(Withheld::InactiveRecipient);
    }
    if !facts.recipient_sees_subject {
        return Err(Withheld::Unseen);
    }
    if between_members(facts.kind) {
        match facts.relationship {
            Some(Relationship::Blocks | Relationship::BlockedBy) => return Err(Withheld::Blocked),
            Some(Relationship::Mutes) => return Err(Withheld::Muted),
            None => {}
        }
        let silenced_kinds = matches!(facts.kind, Kind::Mention | Kind::Reaction | Kind::Follow);
        if facts.actor_silenced && silenced_kinds {
            return Err(Withheld::ActorSilenced);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(kind: Kind) -> Facts {
        Facts {
            kind,
            recipient_id: 1,
            recipient_active: true,
            actor_id: Some(2),
            recipient_sees_subject: true,
            relationship: None,
            actor_silenced: false,
        }
    }

    /// For each type (rows, in `Kind::ALL` order), one letter per case:
    /// N(otified) or the first letter of why not (O)wn action,
    /// (I)nactive, (U)nseen, (B)locked, (M)uted, (S)ilenced. Cases: as is,
    /// own action, inactive recipient, unseen item, recipient blocks,
    /// blocked by, mutes, silenced actor.
    #[test]
    fn every_type_against_every_fact() {
        let letter = |outcome: Result<(), Withheld>| match outcome {
            Ok(()) => 'N',
            Err(Withheld::OwnAction) => 'O',
            Err(Withheld::InactiveRecipient) => 'I',
            Err(Withheld::Unseen) => 'U',
            Err(Withheld::Blocked) => 'B',
            Err(Withheld::Muted) => 'M',
            Err(Withheld::ActorSilenced) => 'S',
        };
        let cases: [fn(Facts) -> Facts; 8] = [
            |facts| facts,
            |facts| Facts {
                actor_id: Some(1),
                ..facts
            },
            |facts| Facts {
                recipient_active: false,
                ..facts
            },
            |facts| Facts {
                recipient_sees_subject: false,
                ..facts
            },
            |facts| Facts {
                relationship: Some(Relationship::Blocks),
                ..facts
            },
            |facts| Facts {
                relationship: Some(Relationship::BlockedBy),
                ..facts
            },
            |facts| Facts {
                relationship: Some(Relationship::Mutes),
                ..facts
            },
            |facts| Facts {
                actor_silenced: true,
                ..facts
            },
        ];
        let table: Vec<String> = Kind::ALL
            .iter()
            .map(|kind| {
                cases
                    .iter()
                    .map(|case| letter(may_notify(&case(facts(*kind)))))
                    .collect()
            })
            .collect();
        assert_eq!(
            table,
            [
                "NOIUBBMN", // reply: a silenced member's replies are held, so unseen
                "NOIUBBMS", // mention
                "NOIUBBMS", // reaction
                "NOIUBBMS", // follow
                "NOIUNNNN", // moderation
                "NOIUNNNN", // warning
                "NOIUNNNN", // registration
                "NOIUNNNN", // appeal
            ]
        );
    }

    #[test]
    fn what_nobody_did_in_person_is_never_an_own_action() {
        let facts = Facts {
            actor_id: None,
            ..facts(Kind::Moderation)
        };
        assert_eq!(may_notify(&facts), Ok(()));
    }
}
