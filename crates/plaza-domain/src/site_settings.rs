//! The site settings an administrator changes while the server runs
//! (DECISIONS.md "The front door"): how people register, the question an
//! application answers, whether members invite, the hold on new accounts'
//! first posts and whether the moderation log is public. One row; its
//! `version` grows with every change to it or to the IP blocks, so each
//! instance reads one row to learn whether what it keeps is current.

use serde_json::{Map, Value, json};
use sqlx::FromRow;

use crate::audit::change;
use crate::time::now_millis;
use crate::{Database, DomainError, Flag, Tx};

/// Most characters of the registration question.
pub const MAX_QUESTION_CHARS: usize = 500;
/// The largest `newAccountHoldCount`.
pub const MAX_HOLD_COUNT: i64 = 50;

/// How people register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegistrationMode {
    /// Anyone signs up.
    Open,
    /// A sign-up answers the question and waits for an administrator.
    Approval,
    /// A sign-up needs an invite code.
    Invite,
    /// Only administrators create accounts.
    Closed,
}

impl RegistrationMode {
    pub const ALL: [RegistrationMode; 4] = [
        RegistrationMode::Open,
        RegistrationMode::Approval,
        RegistrationMode::Invite,
        RegistrationMode::Closed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RegistrationMode::Open => "open",
            RegistrationMode::Approval => "approval",
            RegistrationMode::Invite => "invite",
            RegistrationMode::Closed => "closed",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|mode| mode.as_str() == name)
    }
}

/// The settings as stored; `registration_mode` is `None` until an
/// administrator sets it (the `signup` setting of the file decides).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSettings {
    pub registration_mode: Option<RegistrationMode>,
    pub registration_question: Option<String>,
    pub invites_by_members: bool,
    pub new_account_hold_count: i64,
    pub public_modlog: bool,
    /// Grows with every change to the settings or the IP blocks.
    pub version: i64,
    pub updated_at: Option<i64>,
    pub updated_by: Option<i64>,
}

/// The settings file's values in force until an administrator sets the
/// site settings: `signup` decides the mode while none is stored; the hold
/// count and whether the moderation log is public stand until the first
/// change, which stores them with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileDefaults {
    pub signup: bool,
    pub new_account_hold_count: i64,
    pub public_modlog: bool,
}

impl StoredSettings {
    /// These settings with the file's `defaults` where no administrator
    /// has set them yet.
    pub fn in_force(mut self, defaults: FileDefaults) -> StoredSettings {
        if self.updated_at.is_none() {
            self.new_account_hold_count = defaults.new_account_hold_count;
            self.public_modlog = defaults.public_modlog;
        }
        self
    }

    /// The registration mode in force: the stored one, else `open` when the
    /// file's `signup` is on and `closed` when it is off.
    pub fn registration_mode(&self, signup_default: bool) -> RegistrationMode {
        self.registration_mode.unwrap_or(if signup_default {
            RegistrationMode::Open
        } else {
            RegistrationMode::Closed
        })
    }

    /// The settings as the API names them, the mode in force included.
    pub fn snapshot(&self, signup_default: bool) -> Value {
        json!({
            "registrationMode": self.registration_mode(signup_default).as_str(),
            "registrationQuestion": self.registration_question,
            "invitesByMembers": self.invites_by_members,
            "newAccountHoldCount": self.new_account_hold_count,
            "publicModlog": self.public_modlog,
        })
    }
}

#[derive(FromRow)]
struct SettingsRow {
    registration_mode: Option<String>,
    registration_question: Option<String>,
    invites_by_members: Flag,
    new_account_hold_count: i64,
    public_modlog: Flag,
    version: i64,
    updated_at: Option<i64>,
    updated_by: Option<i64>,
}

const SETTINGS_COLUMNS: &str = "registration_mode, registration_question, invites_by_members, \
     new_account_hold_count, public_modlog, version, updated_at, updated_by";

impl From<SettingsRow> for StoredSettings {
    fn from(row: SettingsRow) -> Self {
        StoredSettings {
            registration_mode: row
                .registration_mode
                .as_deref()
                .and_then(RegistrationMode::parse),
            registration_question: row.registration_question,
            invites_by_members: row.invites_by_members.0,
            new_account_hold_count: row.new_account_hold_count,
            public_modlog: row.public_modlog.0,
            version: row.version,
            updated_at: row.updated_at,
            updated_by: row.updated_by,
        }
    }
}

/// A partial change: `None` keeps the value; `registration_question:
/// Some(None)` clears the question.
#[derive(Debug, Clone, Default)]
pub struct SettingsChanges {
    pub registration_mode: Option<RegistrationMode>,
    pub registration_question: Option<Option<String>>,
    pub invites_by_members: Option<bool>,
    pub new_account_hold_count: Option<i64>,
    pub public_modlog: Option<bool>,
}

/// The settings in `tx`, the row locked against other writers until the
/// commit.
async fn settings_in(tx: &mut Tx<'_>) -> Result<StoredSettings, DomainError> {
    let row: SettingsRow = sqlx::query_as(&format!(
        "SELECT {SETTINGS_COLUMNS} FROM site_settings WHERE id = 1{}",
        crate::dialect::Dialect::of(tx).for_update()
    ))
    .fetch_one(&mut **tx)
    .await?;
    Ok(row.into())
}

/// The settings after a change, and `{field: {before, after}}` of what
/// changed, for the audit entry (empty when nothing did).
#[derive(Debug, Clone)]
pub struct UpdatedSettings {
    pub settings: StoredSettings,
    pub changes: Value,
}

/// Applies `changes` by `admin_id` to the settings in force with the
/// file's `defaults` (which the first change stores), and says what changed
/// for the audit entry. Every write makes the
/// version grow, so other instances reload.
pub async fn update(
    tx: &mut Tx<'_>,
    changes: SettingsChanges,
    admin_id: i64,
    defaults: FileDefaults,
) -> Result<UpdatedSettings, DomainError> {
    let signup_default = defaults.signup;
    let before = settings_in(tx).await?.in_force(defaults);
    let mut after = before.clone();
    if let Some(mode) = changes.registration_mode {
        after.registration_mode = Some(mode);
    }
    if let Some(question) = changes.registration_question {
        after.registration_question = question;
    }
    if let Some(invites) = changes.invites_by_members {
        after.invites_by_members = invites;
    }
    if let Some(count) = changes.new_account_hold_count {
        after.new_account_hold_count = count;
    }
    if let Some(public) = changes.public_modlog {
        after.public_modlog = public;
    }
    let row: SettingsRow = sqlx::query_as(&format!(
        "UPDATE site_settings SET registration_mode = $1, registration_question = $2, \
         invites_by_members = $3, new_account_hold_count = $4, public_modlog = $5, \
         version = version + 1, updated_at = $6, updated_by = $7 WHERE id = 1 \
         RETURNING {SETTINGS_COLUMNS}"
    ))
    .bind(after.registration_mode.map(RegistrationMode::as_str))
    .bind(after.registration_question.clone())
    .bind(after.invites_by_members)
    .bind(after.new_account_hold_count)
    .bind(after.public_modlog)
    .bind(now_millis())
    .bind(admin_id)
    .fetch_one(&mut **tx)
    .await?;
    let settings = StoredSettings::from(row);
    let (old, new) = (
        before.snapshot(signup_default),
        settings.snapshot(signup_default),
    );
    let mut changed = Map::new();
    if let (Value::Object(old), Value::Object(new)) = (&old, &new) {
        for (field, value) in new {
            if old.get(field) != Some(value) {
                let was = old.get(field).cloned().unwrap_or(Value::Null);
                changed.insert(field.clone(), change(was, value.clone()));
            }
        }
    }
    Ok(UpdatedSettings {
        settings,
        changes: Value::Object(changed),
    })
}

/// Makes the version grow, in the unit of work of a change other instances
/// must reload (an IP block added or removed).
pub async fn bump_version(tx: &mut Tx<'_>) -> Result<(), DomainError> {
    sqlx::query("UPDATE site_settings SET version = version + 1 WHERE id = 1")
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The settings in `tx` (read without a lock), for a rule checked inside a
/// unit of work.
pub async fn current_in(tx: &mut Tx<'_>) -> Result<StoredSettings, DomainError> {
    let row: SettingsRow = sqlx::query_as(&format!(
        "SELECT {SETTINGS_COLUMNS} FROM site_settings WHERE id = 1"
    ))
    .fetch_one(&mut **tx)
    .await?;
    Ok(row.into())
}

impl Database {
    /// The stored settings.
    pub async fn site_settings(&self) -> Result<StoredSettings, DomainError> {
        let row: SettingsRow = sqlx::query_as(&format!(
            "SELECT {SETTINGS_COLUMNS} FROM site_settings WHERE id = 1"
        ))
        .fetch_one(&mut *self.lease().await?)
        .await?;
        Ok(row.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_decides_the_mode_until_one_is_stored() {
        let mut stored = StoredSettings {
            registration_mode: None,
            registration_question: None,
            invites_by_members: false,
            new_account_hold_count: 0,
            public_modlog: false,
            version: 0,
            updated_at: None,
            updated_by: None,
        };
        assert_eq!(stored.registration_mode(true), RegistrationMode::Open);
        assert_eq!(stored.registration_mode(false), RegistrationMode::Closed);
        stored.registration_mode = Some(RegistrationMode::Approval);
        assert_eq!(stored.registration_mode(false), RegistrationMode::Approval);
        for mode in RegistrationMode::ALL {
            assert_eq!(RegistrationMode::parse(mode.as_str()), Some(mode));
        }
    }
}
