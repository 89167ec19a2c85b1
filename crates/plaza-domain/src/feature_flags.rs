//! Feature flags: named switches an admin turns on for everyone, for some
//! roles, or for a stable share of users, without a deployment.
//!
//! Flags are stored in the database, so every instance answers the same;
//! [`is_enabled_for`] is the one rule deciding whether a flag is on for a
//! caller, and it is pure: callers read the flags once and ask it per
//! caller. At most [`MAX_FLAGS`] exist, so reading them all is bounded.

use std::collections::BTreeMap;

use serde_json::Value;
use sqlx::FromRow;

use crate::audit::change;
use crate::dialect::Dialect;
use crate::listing::Page;
use crate::time::now_millis;
use crate::users::Role;
use crate::{Database, DomainError, Flag, Tx};

/// Longest flag name (DECISIONS.md: `^[a-z0-9][a-z0-9_.-]{0,99}$`).
pub const MAX_NAME_CHARS: usize = 100;
/// Most characters in a description.
pub const MAX_DESCRIPTION_CHARS: usize = 500;
/// Most flags that can exist: creating one more is refused, so the
/// evaluated answer every client reads stays small (at most about 55 KB).
pub const MAX_FLAGS: i64 = 500;

/// Whether `name` is a valid flag name: a lower-case letter or digit, then
/// up to 99 of `a-z 0-9 _ . -`.
pub fn is_valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    let Some(first) = bytes.next() else {
        return false;
    };
    name.len() <= MAX_NAME_CHARS
        && (first.is_ascii_lowercase() || first.is_ascii_digit())
        && bytes.all(|byte| {
            byte.is_ascii_lowercase() || byte.is_ascii_digit() || matches!(byte, b'_' | b'.' | b'-')
        })
}

/// A stored flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureFlag {
    pub name: String,
    pub enabled: bool,
    pub description: Option<String>,
    /// 0 to 100: the share of users (by a stable hash) the flag is on for.
    pub rollout_percentage: u8,
    /// The roles the flag is limited to; empty means every role.
    pub target_roles: Vec<Role>,
    pub created_at: i64,
    pub updated_at: i64,
    /// The admin who last wrote it; `None` once their account is deleted.
    pub updated_by: Option<i64>,
}

#[derive(FromRow)]
struct FlagRow {
    name: String,
    enabled: Flag,
    description: Option<String>,
    rollout_percentage: i64,
    target_roles: String,
    created_at: i64,
    updated_at: i64,
    updated_by: Option<i64>,
}

const FLAG_COLUMNS: &str = "name, enabled, description, rollout_percentage, target_roles, \
     created_at, updated_at, updated_by";

impl From<FlagRow> for FeatureFlag {
    fn from(row: FlagRow) -> Self {
        let names: Vec<String> = serde_json::from_str(&row.target_roles).unwrap_or_default();
        FeatureFlag {
            name: row.name,
            enabled: row.enabled.0,
            description: row.description,
            rollout_percentage: u8::try_from(row.rollout_percentage.clamp(0, 100)).unwrap_or(100),
            target_roles: names.iter().filter_map(|name| Role::parse(name)).collect(),
            created_at: row.created_at,
            updated_at: row.updated_at,
            updated_by: row.updated_by,
        }
    }
}

/// A signed-in user a flag is evaluated for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlagSubject {
    pub user_id: i64,
    pub role: Role,
}

/// Whether `flag` is on for `caller` (`None`: nobody signed in): never when
/// disabled; never for a role outside a non-empty `target_roles`;
/// otherwise for the users whose bucket (0..100, from [`rollout_bucket`])
/// is below the rollout percentage. An anonymous caller has no role and no
/// bucket, so they get a flag only when it targets every role at 100 %. A
/// user's answer is the same on every instance and across restarts, and
/// raising the percentage only adds users.
pub fn is_enabled_for(flag: &FeatureFlag, caller: Option<FlagSubject>) -> bool {
    if !flag.enabled {
        return false;
    }
    match caller {
        None => flag.target_roles.is_empty() && flag.rollout_percentage >= 100,
        Some(subject) => {
            (flag.target_roles.is_empty() || flag.target_roles.contains(&subject.role))
                && rollout_bucket(&flag.name, subject.user_id) < u64::from(flag.rollout_percentage)
        }
    }
}

/// Every flag of `flags` evaluated for `caller`, by name.
pub fn evaluate_all(flags: &[FeatureFlag], caller: Option<FlagSubject>) -> BTreeMap<String, bool> {
    flags
        .iter()
        .map(|flag| (flag.name.clone(), is_enabled_for(flag, caller)))
        .collect()
}

/// The user's bucket for a flag, 0 to 99: FNV-1a over the flag name and the
/// user id, then the MurmurHash3 finalizer to spread FNV's weak low bits.
/// Fixed by definition (never Rust's per-process randomized hasher), so a
/// user keeps their answer; each flag buckets users independently.
pub fn rollout_bucket(flag_name: &str, user_id: i64) -> u64 {
    const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = FNV_OFFSET;
    let id = user_id.to_le_bytes();
    for byte in flag_name.bytes().chain([0]).chain(id) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    hash ^= hash >> 33;
    hash % 100
}

/// What a write of a flag sets; `None` keeps the current value (a new flag
/// gets no description, 100 % and every role).
#[derive(Debug, Clone, Default)]
pub struct FlagChanges {
    pub enabled: bool,
    /// `Some(None)` clears the description.
    pub description: Option<Option<String>>,
    pub rollout_percentage: Option<u8>,
    pub target_roles: Option<Vec<Role>>,
}

/// The result of [`put`]: the flag as written, and whether it was created.
#[derive(Debug, Clone)]
pub struct WrittenFlag {
    pub flag: FeatureFlag,
    pub created: bool,
    /// `{field: {before, after}}` of what changed (every field when created),
    /// for the audit entry.
    pub changes: Value,
}

fn roles_json(roles: &[Role]) -> String {
    Value::from(roles.iter().map(|role| role.as_str()).collect::<Vec<_>>()).to_string()
}

fn role_names(roles: &[Role]) -> Value {
    Value::from(roles.iter().map(|role| role.as_str()).collect::<Vec<_>>())
}

/// Creates the flag `name` or updates it, by `admin_id`, in `tx`. Creating
/// one more than [`MAX_FLAGS`] is [`DomainError::Conflict`]. Flag writes
/// queue behind one another (PostgreSQL: a table lock until the commit;
/// SQLite: the write lock), so the count the cap reads cannot change under
/// it, and a concurrent write of the same name finds the row the other
/// created.
pub async fn put(
    tx: &mut Tx<'_>,
    name: &str,
    changes: FlagChanges,
    admin_id: i64,
) -> Result<WrittenFlag, DomainError> {
    let now = now_millis();
    let roles = changes.target_roles.clone().unwrap_or_default();
    let dialect = Dialect::of(tx);
    if let Some(statement) = dialect.queue_writers_of("feature_flags") {
        sqlx::query(&statement).execute(&mut **tx).await?;
    }
    let created: Option<FlagRow> = sqlx::query_as(&format!(
        "INSERT INTO feature_flags (name, enabled, description, rollout_percentage, target_roles, \
         created_at, updated_at, updated_by) SELECT $1, $2, $3, $4, $5, $6, $6, $7 \
         WHERE (SELECT COUNT(*) FROM feature_flags) < $8 \
         ON CONFLICT (name) DO NOTHING RETURNING {FLAG_COLUMNS}"
    ))
    .bind(name)
    .bind(changes.enabled)
    .bind(changes.description.clone().flatten())
    .bind(i64::from(changes.rollout_percentage.unwrap_or(100)))
    .bind(roles_json(&roles))
    .bind(now)
    .bind(admin_id)
    .bind(MAX_FLAGS)
    .fetch_optional(&mut **tx)
    .await?;
    if let Some(row) = created {
        let flag = FeatureFlag::from(row);
        let changes = serde_json::json!({
            "enabled": change(Value::Null, flag.enabled),
            "description": change(Value::Null, flag.description.clone()),
            "rolloutPercentage": change(Value::Null, flag.rollout_percentage),
            "targetRoles": change(Value::Null, role_names(&flag.target_roles)),
        });
        return Ok(WrittenFlag {
            flag,
            created: true,
            changes,
        });
    }
    let locked = dialect.for_update();
    let before: Option<FlagRow> = sqlx::query_as(&format!(
        "SELECT {FLAG_COLUMNS} FROM feature_flags WHERE name = $1{locked}"
    ))
    .bind(name)
    .fetch_optional(&mut **tx)
    .await?;
    // Neither created nor found: the cap refused the insert.
    let Some(before) = before.map(FeatureFlag::from) else {
        return Err(DomainError::Conflict(format!(
            "at most {MAX_FLAGS} feature flags can exist; delete one first"
        )));
    };
    let description = changes
        .description
        .unwrap_or_else(|| before.description.clone());
    let rollout = changes
        .rollout_percentage
        .unwrap_or(before.rollout_percentage);
    let roles = changes
        .target_roles
        .unwrap_or_else(|| before.target_roles.clone());
    let after: FlagRow = sqlx::query_as(&format!(
        "UPDATE feature_flags SET enabled = $1, description = $2, rollout_percentage = $3, \
         target_roles = $4, updated_at = $5, updated_by = $6 WHERE name = $7 \
         RETURNING {FLAG_COLUMNS}"
    ))
    .bind(changes.enabled)
    .bind(description)
    .bind(i64::from(rollout))
    .bind(roles_json(&roles))
    .bind(now)
    .bind(admin_id)
    .bind(name)
    .fetch_one(&mut **tx)
    .await?;
    let after = FeatureFlag::from(after);
    let mut changed = serde_json::Map::new();
    if before.enabled != after.enabled {
        changed.insert("enabled".into(), change(before.enabled, after.enabled));
    }
    if before.description != after.description {
        changed.insert(
            "description".into(),
            change(before.description.clone(), after.description.clone()),
        );
    }
    if before.rollout_percentage != after.rollout_percentage {
        changed.insert(
            "rolloutPercentage".into(),
            change(before.rollout_percentage, after.rollout_percentage),
        );
    }
    if before.target_roles != after.target_roles {
        changed.insert(
            "targetRoles".into(),
            change(
                role_names(&before.target_roles),
                role_names(&after.target_roles),
            ),
        );
    }
    Ok(WrittenFlag {
        flag: after,
        created: false,
        changes: changed.into(),
    })
}

/// Removes the flag `name` in `tx` and answers it as it was; an unknown
/// name is [`DomainError::NotFound`].
pub async fn delete(tx: &mut Tx<'_>, name: &str) -> Result<FeatureFlag, DomainError> {
    let deleted: Option<FlagRow> = sqlx::query_as(&format!(
        "DELETE FROM feature_flags WHERE name = $1 RETURNING {FLAG_COLUMNS}"
    ))
    .bind(name)
    .fetch_optional(&mut **tx)
    .await?;
    deleted
        .map(FeatureFlag::from)
        .ok_or(DomainError::NotFound("feature flag"))
}

/// A flag as an audit entry's snapshot: `{enabled, description,
/// rolloutPercentage, targetRoles}`.
pub fn snapshot(flag: &FeatureFlag) -> Value {
    serde_json::json!({
        "enabled": flag.enabled,
        "description": flag.description,
        "rolloutPercentage": flag.rollout_percentage,
        "targetRoles": role_names(&flag.target_roles),
    })
}

/// A page of flags by name, and how many there are.
#[derive(Debug, Clone)]
pub struct FlagPage {
    pub flags: Vec<FeatureFlag>,
    pub total: i64,
}

impl Database {
    /// Every flag, by name ([`MAX_FLAGS`] at most can exist).
    pub async fn all_feature_flags(&self) -> Result<Vec<FeatureFlag>, DomainError> {
        let rows: Vec<FlagRow> = sqlx::query_as(&format!(
            "SELECT {FLAG_COLUMNS} FROM feature_flags ORDER BY name LIMIT $1"
        ))
        .bind(MAX_FLAGS)
        .fetch_all(&mut *self.lease().await?)
        .await?;
        Ok(rows.into_iter().map(FeatureFlag::from).collect())
    }

    /// A page of the flags, ordered by name.
    pub async fn feature_flags(&self, page: Page) -> Result<FlagPage, DomainError> {
        let (total,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM feature_flags")
            .fetch_one(&mut *self.lease().await?)
            .await?;
        if page.offset >= total {
            return Ok(FlagPage {
                flags: Vec::new(),
                total,
            });
        }
        let rows: Vec<FlagRow> = sqlx::query_as(&format!(
            "SELECT {FLAG_COLUMNS} FROM feature_flags ORDER BY name LIMIT $1 OFFSET $2"
        ))
        .bind(page.limit)
        .bind(page.offset)
        .fetch_all(&mut *self.lease().await?)
        .await?;
        Ok(FlagPage {
            flags: rows.into_iter().map(FeatureFlag::from).collect(),
            total,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flag(enabled: bool, rollout_percentage: u8, target_roles: Vec<Role>) -> FeatureFlag {
        FeatureFlag {
            name: "new-editor".to_owned(),
            enabled,
            description: None,
            rollout_percentage,
            target_roles,
            created_at: 0,
            updated_at: 0,
            updated_by: None,
        }
    }

    fn member(user_id: i64) -> Option<FlagSubject> {
        Some(FlagSubject {
            user_id,
            role: Role::User,
        })
    }

    #[test]
    fn names_follow_the_decided_pattern() {
        for good in ["a", "0", "new-editor", "beta.search_v2", &"a".repeat(100)] {
            assert!(is_valid_name(good), "{good}");
        }
        for bad in [
            "",
            "-a",
            "_a",
            ".a",
            "A",
            "new editor",
            "é",
            "a/b",
            &"a".repeat(101),
        ] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }

    /// The callers of the table's rows: nobody signed in, then each role
    /// with a bucket below 50 and with one at 50 or above (for
    /// `new-editor`: user 1 is in bucket 9, user 3 in bucket 66).
    fn callers() -> Vec<(&'static str, Option<FlagSubject>)> {
        let as_role = |user_id, role| Some(FlagSubject { user_id, role });
        assert_eq!(rollout_bucket("new-editor", 1), 9);
        assert_eq!(rollout_bucket("new-editor", 3), 66);
        vec![
            ("anonymous", None),
            ("user, bucket 9", as_role(1, Role::User)),
            ("user, bucket 66", as_role(3, Role::User)),
            ("moderator, bucket 9", as_role(1, Role::Moderator)),
            ("moderator, bucket 66", as_role(3, Role::Moderator)),
            ("admin, bucket 9", as_role(1, Role::Admin)),
            ("super_admin, bucket 66", as_role(3, Role::SuperAdmin)),
        ]
    }

    #[test]
    fn every_caller_against_every_kind_of_flag() {
        // Columns: disabled at 100 %; every role at 0, 50 and 100 %;
        // moderators only at 50 and 100 %; moderators and admins at 100 %.
        let moderators = || vec![Role::Moderator];
        let columns = [
            flag(false, 100, Vec::new()),
            flag(true, 0, Vec::new()),
            flag(true, 50, Vec::new()),
            flag(true, 100, Vec::new()),
            flag(true, 50, moderators()),
            flag(true, 100, moderators()),
            flag(true, 100, vec![Role::Moderator, Role::Admin]),
        ];
        let table: Vec<(&str, String)> = callers()
            .into_iter()
            .map(|(name, caller)| {
                let row = columns
                    .iter()
                    .map(|flag| {
                        if is_enabled_for(flag, caller) {
                            'Y'
                        } else {
                            '.'
                        }
                    })
                    .collect();
                (name, row)
            })
            .collect();
        let expected = [
            ("anonymous", "...Y..."),
            ("user, bucket 9", "..YY..."),
            ("user, bucket 66", "...Y..."),
            ("moderator, bucket 9", "..YYYYY"),
            ("moderator, bucket 66", "...Y.YY"),
            ("admin, bucket 9", "..YY..Y"),
            ("super_admin, bucket 66", "...Y..."),
        ];
        let expected: Vec<(&str, String)> = expected
            .iter()
            .map(|(name, row)| (*name, (*row).to_owned()))
            .collect();
        assert_eq!(table, expected);
    }

    #[test]
    fn evaluating_all_answers_each_flag_by_name() {
        let mut on = flag(true, 100, Vec::new());
        on.name = "on".to_owned();
        let mut off = flag(false, 100, Vec::new());
        off.name = "off".to_owned();
        let answers = evaluate_all(&[on, off], None);
        assert_eq!(
            answers.into_iter().collect::<Vec<_>>(),
            [("off".to_owned(), false), ("on".to_owned(), true)]
        );
    }

    #[test]
    fn a_disabled_flag_is_off_for_everyone() {
        let off = flag(false, 100, Vec::new());
        assert!((1..=1000).all(|id| !is_enabled_for(&off, member(id))));
        assert!(!is_enabled_for(&off, None));
    }

    #[test]
    fn thirty_percent_reaches_about_thirty_percent_of_users() {
        let partial = flag(true, 30, Vec::new());
        let on = (1..=10_000)
            .filter(|id| is_enabled_for(&partial, member(*id)))
            .count();
        assert!((2_800..=3_200).contains(&on), "{on} of 10,000");
        assert!(!is_enabled_for(&flag(true, 0, Vec::new()), member(1)));
    }

    #[test]
    fn a_users_answer_is_stable_and_only_grows_with_the_rollout() {
        // Fixed values: a change of the hash would move users between
        // answers after an upgrade.
        assert_eq!(
            rollout_bucket("new-editor", 1),
            rollout_bucket("new-editor", 1)
        );
        let buckets: Vec<u64> = (1..=5).map(|id| rollout_bucket("new-editor", id)).collect();
        assert_eq!(buckets, STABLE_BUCKETS);
        for id in 1..=1000 {
            let at_20 = is_enabled_for(&flag(true, 20, Vec::new()), member(id));
            let at_50 = is_enabled_for(&flag(true, 50, Vec::new()), member(id));
            assert!(!at_20 || at_50, "user {id} lost the flag when it grew");
        }
        let other: Vec<u64> = (1..=5).map(|id| rollout_bucket("other", id)).collect();
        assert_ne!(buckets, other, "flags bucket users independently");
    }

    const STABLE_BUCKETS: [u64; 5] = [9, 30, 66, 22, 36];
}
