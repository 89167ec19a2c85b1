//! A member's notification preferences: per type, when mail goes
//! (`off`, `immediate`, `daily`) and whether pushes go. Only choices a
//! member made are stored; every other type has its default
//! ([`Kind::default_email`], [`Kind::default_push`]).

use std::collections::{BTreeMap, HashMap};

use super::model::{Channels, EmailChoice, Kind, PreferenceChanges};
use crate::dialect::{Dialect, json_list};
use crate::{Database, DomainError, Flag, Tx};

/// Stored choices as rows read them: `(type, email, push)`.
type ChoiceRow = (String, Option<String>, Option<Flag>);

/// `kind`'s channels from its stored choices (`None`: the default).
pub(super) fn channels_of(kind: Kind, email: Option<&str>, push: Option<Flag>) -> Channels {
    let default = Channels::default_for(kind);
    Channels {
        email: email.and_then(EmailChoice::parse).unwrap_or(default.email),
        push: push.map_or(default.push, bool::from),
    }
}

/// `user_id`'s channels for `kind`, as `tx` sees them.
pub async fn channels_in(
    tx: &mut Tx<'_>,
    user_id: i64,
    kind: Kind,
) -> Result<Channels, DomainError> {
    let row: Option<(Option<String>, Option<Flag>)> = sqlx::query_as(
        "SELECT email, push FROM notification_preferences WHERE user_id = $1 AND type = $2",
    )
    .bind(user_id)
    .bind(kind.as_str())
    .fetch_optional(&mut **tx)
    .await?;
    let (email, push) = row.unwrap_or_default();
    Ok(channels_of(kind, email.as_deref(), push))
}

/// Every type's channels from the stored `rows`, defaults filled in.
fn all_channels(rows: Vec<ChoiceRow>) -> BTreeMap<Kind, Channels> {
    let mut channels: BTreeMap<Kind, Channels> = Kind::ALL
        .into_iter()
        .map(|kind| (kind, Channels::default_for(kind)))
        .collect();
    for (kind, email, push) in rows {
        if let Some(kind) = Kind::parse(&kind) {
            channels.insert(kind, channels_of(kind, email.as_deref(), push));
        }
    }
    channels
}

const CHOICES_OF_USER: &str =
    "SELECT type, email, push FROM notification_preferences WHERE user_id = $1";

/// `user_id`'s channels for every type, as `tx` sees them.
async fn preferences_in(
    tx: &mut Tx<'_>,
    user_id: i64,
) -> Result<BTreeMap<Kind, Channels>, DomainError> {
    let rows: Vec<ChoiceRow> = sqlx::query_as(CHOICES_OF_USER)
        .bind(user_id)
        .fetch_all(&mut **tx)
        .await?;
    Ok(all_channels(rows))
}

/// The types each of `members` is mailed (its email choice is not `off`),
/// as `tx` sees them: one statement for them all.
pub(super) async fn mailed_kinds_in(
    tx: &mut Tx<'_>,
    members: &[i64],
) -> Result<HashMap<i64, Vec<Kind>>, DomainError> {
    let ids = json_list(members)?;
    let rows: Vec<(i64, String, Option<String>, Option<Flag>)> = sqlx::query_as(&format!(
        "SELECT user_id, type, email, push FROM notification_preferences WHERE user_id IN ({})",
        Dialect::of(tx).json_integers("$1")
    ))
    .bind(ids)
    .fetch_all(&mut **tx)
    .await?;
    let mut stored: HashMap<i64, Vec<ChoiceRow>> = HashMap::new();
    for (user_id, kind, email, push) in rows {
        stored.entry(user_id).or_default().push((kind, email, push));
    }
    Ok(members
        .iter()
        .map(|user_id| {
            let channels = all_channels(stored.remove(user_id).unwrap_or_default());
            let mailed = channels
                .into_iter()
                .filter(|(_, channels)| channels.email != EmailChoice::Off)
                .map(|(kind, _)| kind)
                .collect();
            (*user_id, mailed)
        })
        .collect())
}

impl Database {
    /// `user_id`'s channels for every type, defaults filled in.
    pub async fn notification_preferences(
        &self,
        user_id: i64,
    ) -> Result<BTreeMap<Kind, Channels>, DomainError> {
        let rows: Vec<ChoiceRow> = sqlx::query_as(CHOICES_OF_USER)
            .bind(user_id)
            .fetch_all(&mut *self.lease().await?)
            .await?;
        Ok(all_channels(rows))
    }
}

/// Stores `changes` for `user_id`: only the types named change; answers
/// every type's channels after the change.
pub async fn change_preferences(
    tx: &mut Tx<'_>,
    user_id: i64,
    changes: &PreferenceChanges,
) -> Result<BTreeMap<Kind, Channels>, DomainError> {
    for (kind, email) in &changes.email {
        sqlx::query(
            "INSERT INTO notification_preferences (user_id, type, email) VALUES ($1, $2, $3) \
             ON CONFLICT (user_id, type) DO UPDATE SET email = EXCLUDED.email",
        )
        .bind(user_id)
        .bind(kind.as_str())
        .bind(email.as_str())
        .execute(&mut **tx)
        .await?;
    }
    for (kind, push) in &changes.push {
        sqlx::query(
            "INSERT INTO notification_preferences (user_id, type, push) VALUES ($1, $2, $3) \
             ON CONFLICT (user_id, type) DO UPDATE SET push = EXCLUDED.push",
        )
        .bind(user_id)
        .bind(kind.as_str())
        .bind(*push)
        .execute(&mut **tx)
        .await?;
    }
    preferences_in(tx, user_id).await
}
