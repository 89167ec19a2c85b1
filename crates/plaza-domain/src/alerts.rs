//! Alerts: short messages a signed-in user sees in `GET /api/alerts` until
//! they dismiss them. Two sources write them: a moderator's decision on a
//! user's post (one recipient), and an admin's broadcast.
//!
//! A broadcast is one row whatever its audience: its targets (everyone,
//! roles, user ids) are stored with it and matched when a user reads their
//! alerts, and a dismissal is one row per user who dismissed. A broadcast
//! reaches the users who exist when it is delivered (a later sign-up does
//! not see older broadcasts); role targets follow the reader's current role.
//!
//! An alert shows once `delivered_at` is set. A scheduled broadcast is
//! delivered by [`deliver`], a conditional UPDATE (`… WHERE delivered_at IS
//! NULL AND cancelled_at IS NULL`): the row itself is the claim, so with
//! several instances, retries or restarts, each broadcast is delivered
//! exactly once. An admin withdraws a scheduled broadcast with
//! [`cancel_broadcast`], the mirror UPDATE, so of a delivery and a
//! cancellation that race, exactly one takes effect.

use sqlx::FromRow;

use crate::listing::{Arg, Page, bind_all};
use crate::users::Role;
use crate::{Database, DomainError, Flag, Tx};

/// Most alerts `GET /api/alerts` lists (the newest).
pub const MAX_LISTED: i64 = 100;
/// Most characters in an alert's title.
pub const MAX_TITLE_CHARS: usize = 200;
/// Most characters in an alert's message.
pub const MAX_MESSAGE_CHARS: usize = 5000;

/// How an alert is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AlertType {
    #[default]
    Info,
    Success,
    Warning,
    Error,
}

impl AlertType {
    pub const ALL: [AlertType; 4] = [
        AlertType::Info,
        AlertType::Success,
        AlertType::Warning,
        AlertType::Error,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AlertType::Info => "info",
            AlertType::Success => "success",
            AlertType::Warning => "warning",
            AlertType::Error => "error",
        }
    }

    pub fn parse(name: &str) -> Option<AlertType> {
        AlertType::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
    }
}

/// Where a broadcast stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BroadcastStatus {
    /// Stored, waiting for its time.
    Scheduled,
    Delivered,
    /// Withdrawn before its delivery; it is never delivered.
    Cancelled,
}

impl BroadcastStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            BroadcastStatus::Scheduled => "scheduled",
            BroadcastStatus::Delivered => "delivered",
            BroadcastStatus::Cancelled => "cancelled",
        }
    }
}

/// Who a broadcast is for: the union of its parts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Audience {
    pub everyone: bool,
    pub roles: Vec<Role>,
    pub user_ids: Vec<i64>,
}

impl Audience {
    /// Role names stored space-delimited (` moderator admin `), matched
    /// with `LIKE '% role %'`.
    fn stored_roles(&self) -> String {
        let mut stored = String::from(" ");
        for role in &self.roles {
            stored.push_str(role.as_str());
            stored.push(' ');
        }
        stored
    }

    /// The roles of [`Audience::stored_roles`]'s text.
    fn roles_from(stored: &str) -> Vec<Role> {
        stored.split_whitespace().filter_map(Role::parse).collect()
    }
}

/// An alert as a user sees it.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct Alert {
    pub id: i64,
    #[sqlx(rename = "type")]
    pub alert_type: String,
    pub title: String,
    pub message: String,
    /// When it was delivered (Unix milliseconds).
    pub delivered_at: i64,
    /// `broadcast` or `moderation`.
    pub source: String,
}

/// An alert delivered to a user, and when they dismissed it, if they did.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct DeliveredAlert {
    pub id: i64,
    #[sqlx(rename = "type")]
    pub alert_type: String,
    pub title: String,
    pub message: String,
    pub delivered_at: i64,
    /// `broadcast` or `moderation`.
    pub source: String,
    pub dismissed_at: Option<i64>,
}

/// A dismissal, as the live stream reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromRow)]
pub struct Dismissal {
    pub alert_id: i64,
    /// Unix milliseconds.
    pub dismissed_at: i64,
}

/// What [`Database::alert_changes_since`] found.
#[derive(Debug, Clone, Default)]
pub struct AlertChanges {
    pub delivered: Vec<Alert>,
    pub dismissed: Vec<Dismissal>,
}

/// A broadcast to create; `deliver_at` of `None` delivers it at once.
#[derive(Debug, Clone)]
pub struct NewBroadcast {
    pub title: String,
    pub message: String,
    pub alert_type: AlertType,
    pub audience: Audience,
    pub created_by: i64,
    pub deliver_at: Option<i64>,
}

/// A stored broadcast.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broadcast {
    pub id: i64,
    pub alert_type: AlertType,
    pub title: String,
    pub message: String,
    /// Its targets; user ids of accounts deleted since are gone from it.
    pub audience: Audience,
    /// The admin who sent it; `None` once their account is deleted.
    pub created_by: Option<i64>,
    pub created_at: i64,
    /// When it is (or was) due; its creation time when sent at once.
    pub deliver_at: i64,
    pub delivered_at: Option<i64>,
    pub cancelled_at: Option<i64>,
    /// How many active users it reached, once delivered.
    pub recipient_count: Option<i64>,
}

impl Broadcast {
    pub fn status(&self) -> BroadcastStatus {
        if self.delivered_at.is_some() {
            BroadcastStatus::Delivered
        } else if self.cancelled_at.is_some() {
            BroadcastStatus::Cancelled
        } else {
            BroadcastStatus::Scheduled
        }
    }

    /// The time it was scheduled for, when it was scheduled (due after it
    /// was sent); `None` for one sent at once.
    pub fn schedule(&self) -> Option<i64> {
        (self.deliver_at > self.created_at).then_some(self.deliver_at)
    }
}

#[derive(FromRow)]
struct BroadcastRow {
    id: i64,
    #[sqlx(rename = "type")]
    alert_type: String,
    title: String,
    message: String,
    target_all: Flag,
    target_roles: String,
    created_by: Option<i64>,
    created_at: i64,
    deliver_at: i64,
    delivered_at: Option<i64>,
    cancelled_at: Option<i64>,
    recipient_count: Option<i64>,
}

const BROADCAST_COLUMNS: &str = "id, type, title, message, target_all, target_roles, \
     created_by, created_at, deliver_at, delivered_at, cancelled_at, recipient_count";

/// The broadcasts of `rows` with their user targets, read in one statement.
async fn with_user_targets(
    connection: &mut sqlx::AnyConnection,
    rows: Vec<BroadcastRow>,
) -> Result<Vec<Broadcast>, DomainError> {
    let mut targets: std::collections::HashMap<i64, Vec<i64>> = Default::default();
    if !rows.is_empty() {
        let placeholders: Vec<String> = (1..=rows.len()).map(|n| format!("${n}")).collect();
        let sql = format!(
            "SELECT alert_id, user_id FROM alert_recipients WHERE alert_id IN ({}) \
             ORDER BY alert_id, user_id",
            placeholders.join(", ")
        );
        let args = rows.iter().map(|row| Arg::Int(row.id)).collect();
        let found: Vec<(i64, i64)> = bind_all(sqlx::query_as(&sql), args)
            .fetch_all(&mut *connection)
            .await?;
        for (alert_id, user_id) in found {
            targets.entry(alert_id).or_default().push(user_id);
        }
    }
    Ok(rows
        .into_iter()
        .map(|row| Broadcast {
            id: row.id,
            alert_type: AlertType::parse(&row.alert_type).unwrap_or_default(),
            title: row.title,
            message: row.message,
            audience: Audience {
                everyone: row.target_all.0,
                roles: Audience::roles_from(&row.target_roles),
                user_ids: targets.remove(&row.id).unwrap_or_default(),
            },
            created_by: row.created_by,
            created_at: row.created_at,
            deliver_at: row.deliver_at,
            delivered_at: row.delivered_at,
            cancelled_at: row.cancelled_at,
            recipient_count: row.recipient_count,
        })
        .collect())
}

/// Broadcast `id` as stored, read in `tx`.
async fn broadcast_in(tx: &mut Tx<'_>, id: i64) -> Result<Broadcast, DomainError> {
    let row: Option<BroadcastRow> = sqlx::query_as(&format!(
        "SELECT {BROADCAST_COLUMNS} FROM alerts WHERE id = $1 AND source = 'broadcast'"
    ))
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?;
    let row = row.ok_or(DomainError::NotFound("broadcast"))?;
    let mut found = with_user_targets(tx, vec![row]).await?;
    found.pop().ok_or(DomainError::NotFound("broadcast"))
}

/// Withdraws scheduled broadcast `id` at `now`, in `tx`, and answers it as
/// it now is. A delivered or already cancelled broadcast is
/// [`DomainError::InvalidTransition`]; anything that is not a broadcast is
/// [`DomainError::NotFound`]. The UPDATE's condition is what settles a race
/// with [`deliver`]: whichever commits first makes the other match no row.
pub async fn cancel_broadcast(
    tx: &mut Tx<'_>,
    id: i64,
    now: i64,
) -> Result<Broadcast, DomainError> {
    let cancelled = sqlx::query(
        "UPDATE alerts SET cancelled_at = $1 WHERE id = $2 AND source = 'broadcast' \
         AND delivered_at IS NULL AND cancelled_at IS NULL",
    )
    .bind(now)
    .bind(id)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    let broadcast = broadcast_in(tx, id).await?;
    if cancelled == 1 {
        return Ok(broadcast);
    }
    Err(DomainError::InvalidTransition(
        if broadcast.status() == BroadcastStatus::Delivered {
            format!(
                "broadcast {id} was delivered already; a delivered broadcast cannot be cancelled"
            )
        } else {
            format!("broadcast {id} is cancelled already")
        },
    ))
}

/// A page of broadcasts, and how many there are.
#[derive(Debug, Clone)]
pub struct BroadcastPage {
    pub broadcasts: Vec<Broadcast>,
    pub total: i64,
}

/// Stores a broadcast, and delivers it in the same transaction unless it
/// is scheduled for later.
pub async fn create_broadcast(
    tx: &mut Tx<'_>,
    new: NewBroadcast,
    now: i64,
) -> Result<Broadcast, DomainError> {
    let deliver_at = new.deliver_at.unwrap_or(now);
    let (id,): (i64,) = sqlx::query_as(
        "INSERT INTO alerts (source, type, title, message, target_all, target_roles, created_by, \
         created_at, deliver_at) VALUES ('broadcast', $1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
    )
    .bind(new.alert_type.as_str())
    .bind(new.title.clone())
    .bind(new.message.clone())
    .bind(new.audience.everyone)
    .bind(new.audience.stored_roles())
    .bind(new.created_by)
    .bind(now)
    .bind(deliver_at)
    .fetch_one(&mut **tx)
    .await?;
    for chunk in new.audience.user_ids.chunks(500) {
        let values: Vec<String> = (0..chunk.len())
            .map(|index| format!("($1, ${})", index + 2))
            .collect();
        let sql = format!(
            "INSERT INTO alert_recipients (alert_id, user_id) VALUES {} ON CONFLICT DO NOTHING",
            values.join(", ")
        );
        let mut statement = sqlx::query(&sql).bind(id);
        for user_id in chunk {
            statement = statement.bind(*user_id);
        }
        statement.execute(&mut **tx).await?;
    }
    let recipient_count = if deliver_at <= now {
        deliver(tx, id, now).await?
    } else {
        None
    };
    Ok(Broadcast {
        id,
        alert_type: new.alert_type,
        title: new.title,
        message: new.message,
        audience: new.audience,
        created_by: Some(new.created_by),
        created_at: now,
        deliver_at,
        delivered_at: recipient_count.map(|_| now),
        cancelled_at: None,
        recipient_count,
    })
}

/// Delivers broadcast `id` at `now` unless it was delivered or cancelled:
/// answers how many active users it reached, or `None` when it was not
/// delivered.
pub async fn deliver(tx: &mut Tx<'_>, id: i64, now: i64) -> Result<Option<i64>, DomainError> {
    let delivered: Option<(i64,)> = sqlx::query_as(
        "UPDATE alerts SET delivered_at = $1, recipient_count = ( \
           SELECT COUNT(*) FROM users u WHERE u.status = 'active' AND ( \
             alerts.target_all = TRUE \
             OR alerts.target_roles LIKE ('% ' || u.role || ' %') \
             OR u.id IN (SELECT r.user_id FROM alert_recipients r WHERE r.alert_id = alerts.id))) \
         WHERE id = $2 AND source = 'broadcast' AND delivered_at IS NULL \
           AND cancelled_at IS NULL \
         RETURNING recipient_count",
    )
    .bind(now)
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(delivered.map(|(count,)| count))
}

/// Stores a moderation alert for `user_id`, delivered at once.
pub async fn notify_user(
    tx: &mut Tx<'_>,
    user_id: i64,
    alert_type: AlertType,
    title: &str,
    message: &str,
    created_by: i64,
    now: i64,
) -> Result<i64, DomainError> {
    let (id,): (i64,) = sqlx::query_as(
        "INSERT INTO alerts (source, type, title, message, user_id, created_by, created_at, \
         deliver_at, delivered_at) VALUES ('moderation', $1, $2, $3, $4, $5, $6, $6, $6) \
         RETURNING id",
    )
    .bind(alert_type.as_str())
    .bind(title)
    .bind(message)
    .bind(user_id)
    .bind(created_by)
    .bind(now)
    .fetch_one(&mut **tx)
    .await?;
    Ok(id)
}

/// The reader an alert list or dismissal is for.
#[derive(Debug, Clone, Copy)]
pub struct Reader {
    pub user_id: i64,
    pub role: Role,
    /// When their account was created (Unix milliseconds): broadcasts
    /// delivered before it are not theirs.
    pub created_at: i64,
}

impl Reader {
    /// The values of [`BROADCAST_AUDIENCE`]'s placeholders `$1` to `$3`.
    fn args(self) -> Vec<Arg> {
        vec![
            Arg::Int(self.user_id),
            Arg::Int(self.created_at),
            Arg::Text(format!("% {} %", self.role.as_str())),
        ]
    }
}

/// A delivered broadcast (`alerts a`) meant for the reader `$1`, created at
/// `$2`, whose role pattern is `$3`.
const BROADCAST_AUDIENCE: &str = "a.user_id IS NULL AND a.delivered_at >= $2 AND ( \
     a.target_all = TRUE OR a.target_roles LIKE $3 \
     OR EXISTS (SELECT 1 FROM alert_recipients r WHERE r.alert_id = a.id AND r.user_id = $1))";

const ALERT_COLUMNS: &str = "a.id, a.type, a.title, a.message, a.delivered_at, a.source";

impl Database {
    /// The reader's delivered, undismissed alerts, newest first, at most
    /// [`MAX_LISTED`]: their own (an index range) and the broadcasts for
    /// them (the delivered broadcasts since they joined, an index range).
    pub async fn alerts_for(&self, reader: Reader) -> Result<Vec<Alert>, DomainError> {
        let sql = format!(
            "SELECT id, type, title, message, delivered_at, source FROM ( \
               SELECT {ALERT_COLUMNS} FROM alerts a \
                 WHERE a.user_id = $1 AND a.delivered_at IS NOT NULL \
               UNION ALL \
               SELECT {ALERT_COLUMNS} FROM alerts a WHERE {BROADCAST_AUDIENCE} \
             ) visible \
             WHERE NOT EXISTS (SELECT 1 FROM alert_dismissals d \
               WHERE d.alert_id = visible.id AND d.user_id = $1) \
             ORDER BY delivered_at DESC, id DESC LIMIT $4"
        );
        let mut args = reader.args();
        args.push(Arg::Int(MAX_LISTED));
        Ok(bind_all(sqlx::query_as::<_, Alert>(&sql), args)
            .fetch_all(&mut *self.lease().await?)
            .await?)
    }

    /// A page of every alert delivered to the reader (their own and the
    /// broadcasts for them), dismissed or not, in the order of delivery,
    /// after the alert `after` (its delivery time and id).
    pub async fn delivered_alerts_of(
        &self,
        reader: Reader,
        after: Option<(i64, i64)>,
        limit: i64,
    ) -> Result<Vec<DeliveredAlert>, DomainError> {
        let (delivered_at, id) = after.unwrap_or((i64::MIN, i64::MIN));
        let sql = format!(
            "SELECT v.id, v.type, v.title, v.message, v.delivered_at, v.source, d.dismissed_at \
             FROM ( \
               SELECT {ALERT_COLUMNS} FROM alerts a \
                 WHERE a.user_id = $1 AND a.delivered_at IS NOT NULL \
               UNION ALL \
               SELECT {ALERT_COLUMNS} FROM alerts a WHERE {BROADCAST_AUDIENCE} \
             ) v \
             LEFT JOIN alert_dismissals d ON d.alert_id = v.id AND d.user_id = $1 \
             WHERE v.delivered_at > $4 OR (v.delivered_at = $4 AND v.id > $5) \
             ORDER BY v.delivered_at, v.id LIMIT $6"
        );
        let mut args = reader.args();
        args.extend([Arg::Int(delivered_at), Arg::Int(id), Arg::Int(limit)]);
        Ok(bind_all(sqlx::query_as::<_, DeliveredAlert>(&sql), args)
            .fetch_all(&mut *self.lease().await?)
            .await?)
    }

    /// What changed for the reader from `since` (Unix milliseconds, that
    /// instant included): the alerts delivered to them and still shown,
    /// oldest first, and the alerts they dismissed, every one of them (read
    /// [`MAX_LISTED`] at a time until caught up, so a burst of more than
    /// that within the window loses none). The live stream asks this with
    /// a look-back window, because a row's timestamp is taken before its
    /// transaction commits.
    pub async fn alert_changes_since(
        &self,
        reader: Reader,
        since: i64,
    ) -> Result<AlertChanges, DomainError> {
        let sql = format!(
            "SELECT id, type, title, message, delivered_at, source FROM ( \
               SELECT {ALERT_COLUMNS} FROM alerts a \
                 WHERE a.user_id = $1 AND a.delivered_at >= $4 \
               UNION ALL \
               SELECT {ALERT_COLUMNS} FROM alerts a WHERE {BROADCAST_AUDIENCE} \
                 AND a.delivered_at >= $4 \
             ) visible \
             WHERE (visible.delivered_at > $4 OR visible.id > $5) \
               AND NOT EXISTS (SELECT 1 FROM alert_dismissals d \
               WHERE d.alert_id = visible.id AND d.user_id = $1) \
             ORDER BY delivered_at, id LIMIT $6"
        );
        let mut lease = self.lease().await?;
        let mut delivered: Vec<Alert> = Vec::new();
        let (mut at, mut after_id) = (since, 0);
        loop {
            let mut args = reader.args();
            args.extend([Arg::Int(at), Arg::Int(after_id), Arg::Int(MAX_LISTED)]);
            let page = bind_all(sqlx::query_as::<_, Alert>(&sql), args)
                .fetch_all(&mut *lease)
                .await?;
            let full = page.len() as i64 == MAX_LISTED;
            if let Some(last) = page.last() {
                (at, after_id) = (last.delivered_at, last.id);
            }
            delivered.extend(page);
            if !full {
                break;
            }
        }
        let mut dismissed: Vec<Dismissal> = Vec::new();
        let (mut at, mut after_id) = (since, 0);
        loop {
            let page = sqlx::query_as::<_, Dismissal>(
                "SELECT alert_id, dismissed_at FROM alert_dismissals \
                 WHERE user_id = $1 AND dismissed_at >= $2 \
                   AND (dismissed_at > $2 OR alert_id > $3) \
                 ORDER BY dismissed_at, alert_id LIMIT $4",
            )
            .bind(reader.user_id)
            .bind(at)
            .bind(after_id)
            .bind(MAX_LISTED)
            .fetch_all(&mut *lease)
            .await?;
            let full = page.len() as i64 == MAX_LISTED;
            if let Some(last) = page.last() {
                (at, after_id) = (last.dismissed_at, last.alert_id);
            }
            dismissed.extend(page);
            if !full {
                break;
            }
        }
        Ok(AlertChanges {
            delivered,
            dismissed,
        })
    }

    /// The newest delivery and the newest dismissal of anyone's alert, and
    /// the newest notification created or grown (Unix milliseconds, 0 when
    /// none): three index lookups that tell the live streams whether to
    /// look again.
    pub async fn alerts_changed_at(&self) -> Result<(i64, i64, i64), DomainError> {
        let (delivered, dismissed, notified): (Option<i64>, Option<i64>, Option<i64>) =
            sqlx::query_as(
                "SELECT (SELECT MAX(delivered_at) FROM alerts), \
                        (SELECT MAX(dismissed_at) FROM alert_dismissals), \
                        (SELECT MAX(updated_at) FROM notifications)",
            )
            .fetch_one(&mut *self.lease().await?)
            .await?;
        Ok((
            delivered.unwrap_or(0),
            dismissed.unwrap_or(0),
            notified.unwrap_or(0),
        ))
    }

    /// Hides alert `alert_id` from the reader for good; dismissing twice is
    /// fine. An alert that is not theirs is [`DomainError::NotFound`].
    pub async fn dismiss_alert(&self, reader: Reader, alert_id: i64) -> Result<(), DomainError> {
        self.write(|tx| {
            Box::pin(async move {
                let sql = format!(
                    "SELECT a.id FROM alerts a WHERE a.id = $4 AND a.delivered_at IS NOT NULL \
                     AND (a.user_id = $1 OR ({BROADCAST_AUDIENCE}))"
                );
                let mut args = reader.args();
                args.push(Arg::Int(alert_id));
                let found: Option<(i64,)> = bind_all(sqlx::query_as(&sql), args)
                    .fetch_optional(&mut **tx)
                    .await?;
                if found.is_none() {
                    return Err(DomainError::NotFound("alert"));
                }
                sqlx::query(
                    "INSERT INTO alert_dismissals (alert_id, user_id, dismissed_at) \
                     VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                )
                .bind(alert_id)
                .bind(reader.user_id)
                .bind(crate::time::now_millis())
                .execute(&mut **tx)
                .await?;
                Ok(())
            })
        })
        .await
    }

    /// Scheduled broadcasts due at `now`, neither delivered nor cancelled,
    /// oldest due first, at most `limit`.
    async fn due_broadcasts(&self, now: i64, limit: i64) -> Result<Vec<i64>, DomainError> {
        let due: Vec<(i64,)> = sqlx::query_as(
            "SELECT id FROM alerts WHERE delivered_at IS NULL AND cancelled_at IS NULL \
             AND deliver_at <= $1 ORDER BY deliver_at LIMIT $2",
        )
        .bind(now)
        .bind(limit)
        .fetch_all(&mut *self.lease().await?)
        .await?;
        Ok(due.into_iter().map(|(id,)| id).collect())
    }

    /// Delivers every due scheduled broadcast (see [`deliver`]); answers
    /// how many this call delivered.
    pub async fn deliver_due_broadcasts(&self, now: i64) -> Result<u64, DomainError> {
        let mut delivered = 0;
        for id in self.due_broadcasts(now, 100).await? {
            let reached = self
                .write(|tx| Box::pin(async move { deliver(tx, id, now).await }))
                .await?;
            if let Some(count) = reached {
                delivered += 1;
                tracing::info!(broadcast = id, recipients = count, "broadcast delivered");
            }
        }
        Ok(delivered)
    }

    /// A page of the broadcasts, newest first, and how many there are.
    pub async fn broadcasts(&self, page: Page) -> Result<BroadcastPage, DomainError> {
        let mut lease = self.lease().await?;
        let (total,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM alerts WHERE source = 'broadcast'")
                .fetch_one(&mut *lease)
                .await?;
        if page.offset >= total {
            return Ok(BroadcastPage {
                broadcasts: Vec::new(),
                total,
            });
        }
        let rows: Vec<BroadcastRow> = sqlx::query_as(&format!(
            "SELECT {BROADCAST_COLUMNS} FROM alerts WHERE source = 'broadcast' \
             ORDER BY created_at DESC, id DESC LIMIT $1 OFFSET $2"
        ))
        .bind(page.limit)
        .bind(page.offset)
        .fetch_all(&mut *lease)
        .await?;
        Ok(BroadcastPage {
            broadcasts: with_user_targets(&mut lease, rows).await?,
            total,
        })
    }

    /// Which of `ids` name no user (an empty list when all exist).
    pub async fn unknown_users(&self, ids: &[i64]) -> Result<Vec<i64>, DomainError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders: Vec<String> = (1..=ids.len()).map(|n| format!("${n}")).collect();
        let sql = format!(
            "SELECT id FROM users WHERE id IN ({})",
            placeholders.join(", ")
        );
        let args = ids.iter().map(|id| Arg::Int(*id)).collect();
        let found: Vec<(i64,)> = bind_all(sqlx::query_as(&sql), args)
            .fetch_all(&mut *self.lease().await?)
            .await?;
        let found: std::collections::HashSet<i64> = found.into_iter().map(|(id,)| id).collect();
        Ok(ids
            .iter()
            .copied()
            .filter(|id| !found.contains(id))
            .collect())
    }
}
