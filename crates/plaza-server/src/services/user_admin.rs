//! An admin's change to a user, as every admin surface makes it (the
//! versioned and unversioned admin APIs, the operator console, and
//! `PUT /api/users/{id}` on someone else): under
//! the user's edit lock, one unit of work reads the target, asks the
//! domain's policy, writes the change and its audit entry; a refused change
//! writes nothing. A change that may end the user's sessions (a ban, a new
//! status or role) drops their cached session lookups once it is committed,
//! so their next request is checked afresh. A ban is also a moderation
//! action: its record, and the mail that tells a member with a verified
//! address why and how to appeal, are written in the ban's unit of work.

use std::time::Duration;

use plaza_domain::audit::{self, AuditAction, AuditContext};
use plaza_domain::bans::{self, Ban, BanLength, BanOrder, NewBan};
use plaza_domain::locks::Resource;
use plaza_domain::moderation::actions::{self, ActionKind, NewAction, TargetType};
use plaza_domain::moderation::appeals::{self, Appeal, AppealDecision};
use plaza_domain::moderation::{self, ModerationRecord, Warning, WarningOrder};
use plaza_domain::outgoing_mail::{self, NewMail};
use plaza_domain::policy::{self, Actor};
use plaza_domain::reports::{self, ReportTarget};
use plaza_domain::silences::Silence;
use plaza_domain::time::now_millis;
use plaza_domain::users::{self, Role, User, UserChanges, UserStatus};
use plaza_domain::{Database, DomainError, Tx, TxFuture};

use crate::secrets::{hash_token, random_token};
use crate::services::mail::{Letter, MailKind, Mailer, compose};
use crate::services::session_lookups::SessionLookups;
use crate::services::templates::Templates;
use crate::settings::{ModerationSettings, ServerSettings};

/// What an admin's change to a user needs: the database, how long an edit
/// lock lasts at most (`admin_lock_ttl_secs`), the session lookups that
/// forget the user once the change is committed, and what a ban's mail is
/// written with (the templates, the server's name and address, the appeal
/// window) and sent by.
pub struct UserAdmin<'a> {
    pub db: &'a Database,
    pub lock_ttl: Duration,
    pub session_lookups: &'a SessionLookups,
    pub mailer: &'a Mailer,
    pub templates: &'a Templates,
    pub server: &'a ServerSettings,
    pub moderation: &'a ModerationSettings,
}

/// The mail telling a banned member why and how to appeal, with the hash
/// of the token its link carries.
struct BanMail {
    mail: NewMail,
    token_hash: String,
}

/// Checked changes to a user's status, role and verification; `None`
/// leaves a field as it is.
#[derive(Debug, Clone, Copy, Default)]
pub struct Changes {
    pub status: Option<UserStatus>,
    /// Never [`Role::SuperAdmin`]: nobody grants that role through an API.
    pub role: Option<Role>,
    pub is_verified: Option<bool>,
}

impl UserAdmin<'_> {
    /// Applies `changes` and `notes` (`Some(None)` clears them) to user `id` as
    /// `actor`, audited as `user.update` when anything changed.
    pub async fn update_user(
        &self,
        context: AuditContext,
        actor: Actor,
        id: i64,
        changes: Changes,
        notes: Option<Option<String>>,
    ) -> Result<User, DomainError> {
        let user = self
            .locked(actor, id, move |tx| {
                Box::pin(async move { apply_update(tx, actor, &context, id, changes, notes).await })
            })
            .await?;
        self.session_lookups.forget_user(id);
        Ok(user)
    }

    /// Applies `changes` (already checked as fields) to another user `id` as
    /// `actor`, through the general `PUT /api/users/{id}`: under the user's
    /// edit lock, the policy is asked again of the user as the unit of work
    /// reads them (a role or status that no longer changes asks nothing; a
    /// change into or out of `banned` is refused: bans keep a reason and a
    /// history), and the change is audited as `user.update`.
    pub async fn update_profile(
        &self,
        context: AuditContext,
        actor: Actor,
        id: i64,
        changes: UserChanges,
    ) -> Result<User, DomainError> {
        let user = self.locked(actor, id, move |tx| {
            Box::pin(async move {
                let (target, role, status) =
                    managed_target(tx, actor, id, changes.role, changes.status).await?;
                if status.is_some_and(|status| {
                    status == UserStatus::Banned || target.status == UserStatus::Banned
                }) {
                    return Err(DomainError::Invalid {
                        field: "status",
                        reason:
                            "bans are imposed and lifted with POST /api/admin/users/{id}/ban and /unban"
                                .to_owned(),
                    });
                }
                let user = users::update(
                    tx,
                    id,
                    UserChanges {
                        role,
                        status,
                        ..changes
                    },
                )
                .await?;
                record_update(tx, &context, &target, &user).await?;
                Ok(user)
            })
        })
        .await?;
        self.session_lookups.forget_user(id);
        Ok(user)
    }

    /// Bans user `id` on `order` as `actor` (audited as `user.ban`); their
    /// sessions end at once.
    pub async fn ban_user(
        &self,
        context: AuditContext,
        actor: Actor,
        id: i64,
        order: BanOrder,
    ) -> Result<(User, Ban), DomainError> {
        let mail = self.ban_mail(id, &order.reason).await?;
        let window = self.moderation.appeal_window_millis();
        let banned = self
            .locked(actor, id, move |tx| {
                Box::pin(async move {
                    let (user, ban) = bans::ban_user(tx, &context, actor, id, order).await?;
                    let record = actions::record(
                        tx,
                        NewAction {
                            expires_at: ban.expires_at,
                            undo: serde_json::json!({"ban_id": ban.id}),
                            ..NewAction::by(
                                actor.user_id,
                                ActionKind::Ban,
                                TargetType::User,
                                id,
                                Some(id),
                                ban.reason.clone(),
                            )
                        },
                    )
                    .await?;
                    reports::resolve(tx, ReportTarget::User, id, actor.user_id).await?;
                    if let Some(BanMail { mail, token_hash }) = mail {
                        let now = now_millis();
                        appeals::issue_token(tx, token_hash, record.id, id, now + window).await?;
                        outgoing_mail::enqueue(tx, &mail, now).await?;
                    }
                    Ok((user, ban))
                })
            })
            .await?;
        self.session_lookups.forget_user(id);
        self.mailer.wake();
        Ok(banned)
    }

    /// The ban mail for user `id` with `reason`, when their address is
    /// verified (none otherwise: anyone may sign up with anyone's address).
    async fn ban_mail(&self, id: i64, reason: &str) -> Result<Option<BanMail>, DomainError> {
        let user = self.db.user_by_id(id).await?;
        if user.row.email_verified_at.is_none() {
            return Ok(None);
        }
        let token = random_token();
        let base = self.server.base_url.as_str().trim_end_matches('/');
        let link = format!("{base}/appeal?token={token}");
        let name = user
            .row
            .name
            .clone()
            .filter(|name| !name.trim().is_empty())
            .unwrap_or_else(|| user.row.username.clone());
        let valid_for = format!("{} days", self.moderation.appeal_window_days);
        let mut mail = compose(
            self.templates,
            self.server,
            &Letter {
                kind: MailKind::Banned,
                recipient: &user.row.email,
                name: &name,
                link: &link,
                valid_for: &valid_for,
                change: reason,
            },
        )
        .map_err(DomainError::Unavailable)?;
        mail.user_id = Some(id);
        Ok(Some(BanMail {
            mail,
            token_hash: hash_token(&token),
        }))
    }

    /// Lifts user `id`'s ban as `actor`, for `reason` (audited as
    /// `user.unban`); the lifted ban, if there was one.
    pub async fn unban_user(
        &self,
        context: AuditContext,
        actor: Actor,
        id: i64,
        reason: Option<String>,
    ) -> Result<(User, Option<Ban>), DomainError> {
        self.locked(actor, id, move |tx| {
            Box::pin(async move {
                let unbanned = bans::unban_user(tx, &context, actor, id, reason.as_deref()).await?;
                actions::reverse_by_hand(
                    tx,
                    Some(actor.user_id),
                    TargetType::User,
                    id,
                    &[ActionKind::Ban],
                    reason.as_deref().unwrap_or("unbanned"),
                )
                .await?;
                Ok(unbanned)
            })
        })
        .await
    }

    /// Warns user `id` as `actor` (audited as `user.warn`; the member is
    /// told `warning`).
    pub async fn warn_user(
        &self,
        context: AuditContext,
        actor: Actor,
        id: i64,
        order: WarningOrder,
    ) -> Result<(Warning, ModerationRecord), DomainError> {
        self.locked(actor, id, move |tx| {
            Box::pin(async move { moderation::warn(tx, &context, actor, id, order).await })
        })
        .await
    }

    /// Silences user `id` as `actor` for `length` (audited as
    /// `user.silence`).
    pub async fn silence_user(
        &self,
        context: AuditContext,
        actor: Actor,
        id: i64,
        reason: String,
        length: BanLength,
    ) -> Result<(User, Silence, ModerationRecord), DomainError> {
        self.locked(actor, id, move |tx| {
            Box::pin(async move {
                moderation::silence_user(tx, &context, actor, id, reason, length).await
            })
        })
        .await
    }

    /// Lifts user `id`'s silence as `actor` (audited as `user.unsilence`).
    pub async fn unsilence_user(
        &self,
        context: AuditContext,
        actor: Actor,
        id: i64,
        reason: Option<String>,
    ) -> Result<(User, Silence), DomainError> {
        self.locked(actor, id, move |tx| {
            Box::pin(
                async move { moderation::unsilence_user(tx, &context, actor, id, reason).await },
            )
        })
        .await
    }

    /// Decides appeal `id` as `actor` (audited as `appeal.decide`); a
    /// reversed ban's member is looked up afresh at their next request.
    pub async fn decide_appeal(
        &self,
        context: AuditContext,
        actor: Actor,
        id: i64,
        decision: AppealDecision,
        reason: String,
    ) -> Result<(Appeal, Option<ModerationRecord>), DomainError> {
        let decided = self
            .db
            .write(move |tx| {
                Box::pin(
                    async move { appeals::decide(tx, &context, actor, id, decision, reason).await },
                )
            })
            .await?;
        self.session_lookups.forget_user(decided.0.user_id);
        Ok(decided)
    }

    /// Runs `work` as one unit of work under user `id`'s edit lock, held by
    /// `actor`: 423 when another admin holds it.
    async fn locked<T, F>(&self, actor: Actor, id: i64, work: F) -> Result<T, DomainError>
    where
        T: Send,
        F: for<'t, 'c> FnOnce(&'t mut Tx<'c>) -> TxFuture<'t, T> + Send + 'static,
    {
        self.db
            .write_locked(Resource::User(id), actor.user_id, self.lock_ttl, work)
            .await
    }
}

/// One user's update in `tx`: the policy for each field that changes, the
/// change, and its audit entry (only when something changed).
async fn apply_update(
    tx: &mut Tx<'_>,
    actor: Actor,
    context: &AuditContext,
    id: i64,
    changes: Changes,
    notes: Option<Option<String>>,
) -> Result<User, DomainError> {
    let (target, _, status) = managed_target(tx, actor, id, changes.role, changes.status).await?;
    let before = &target.row;
    let verified_changes = changes
        .is_verified
        .is_some_and(|verified| verified != before.email_verified_at.is_some());
    let notes_change = notes
        .as_ref()
        .is_some_and(|notes| *notes != before.admin_notes);
    if verified_changes || notes_change {
        policy::edit_admin_fields(actor, &target).check(
            "user",
            "an admin changes notes and verification only of others they manage",
        )?;
    }
    if status == Some(UserStatus::Banned) {
        bans::impose(
            tx,
            NewBan {
                user_id: id,
                banned_by: Some(actor.user_id),
                reason: "banned by status change".to_owned(),
                notes: None,
                length: BanLength::Permanent,
            },
        )
        .await?;
    } else if status.is_some() && target.status == UserStatus::Banned {
        bans::lift(tx, id, Some(actor.user_id), "unbanned by status change").await?;
    }
    let user = users::update(
        tx,
        id,
        UserChanges {
            role: changes.role,
            status,
            email_verified: changes
                .is_verified
                .filter(|verified| *verified != before.email_verified_at.is_some()),
            admin_notes: notes,
            ..UserChanges::default()
        },
    )
    .await?;
    record_update(tx, context, &target, &user).await?;
    Ok(user)
}

/// The user `id` as `tx` reads them, once the policy allows `actor` to
/// manage them and to make the role and status changes asked for; with
/// the role and status that actually change.
async fn managed_target(
    tx: &mut Tx<'_>,
    actor: Actor,
    id: i64,
    role: Option<Role>,
    status: Option<UserStatus>,
) -> Result<(User, Option<Role>, Option<UserStatus>), DomainError> {
    let target = users::user_in(tx, id).await?;
    policy::manage_user(actor, &target).check("user", "you may not manage this user")?;
    let role = role.filter(|role| *role != target.role);
    if let Some(role) = role {
        policy::grant_role(actor, &target, role).check(
            "user",
            "an admin grants roles only to others they manage, up to their own role",
        )?;
    }
    let status = status.filter(|status| *status != target.status);
    if let Some(status) = status {
        policy::set_status(actor, &target, status).check(
            "user",
            "an admin changes the status only of others they manage, and nobody bans a super admin",
        )?;
    }
    Ok((target, role, status))
}

/// Records `user.update` for the change from `target` to `user`, when
/// anything changed.
async fn record_update(
    tx: &mut Tx<'_>,
    context: &AuditContext,
    target: &User,
    user: &User,
) -> Result<(), DomainError> {
    let changed = audit::user_changes(target, user);
    if !changed.is_empty() {
        audit::record(
            tx,
            context,
            AuditAction {
                action: "user.update",
                target_type: "user",
                target_id: Some(user.id().to_string()),
                changes: changed.into(),
            },
        )
        .await?;
    }
    Ok(())
}
