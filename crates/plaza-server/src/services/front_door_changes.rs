//! An administrator's changes to the front door, each one unit of work
//! with its audit entry, shared by the versioned admin API and the operator
//! console: the site settings, IP blocks, email-domain blocks and the
//! decision on a registration (with its mail). After a change of what
//! instances keep in memory, this instance reloads it at once (the others
//! within a second, see [`FrontDoor`]). The caller checks the fields and
//! who may act.

use std::sync::Arc;

use plaza_domain::audit::{self, AuditAction, AuditContext};
use plaza_domain::email_domain_blocks::{self, EmailDomainBlock};
use plaza_domain::ip_blocks::{self, IpBlock, NewIpBlock};
use plaza_domain::outgoing_mail;
use plaza_domain::registrations::{self, PendingRegistration};
use plaza_domain::site_settings::{self, SettingsChanges, StoredSettings};
use plaza_domain::time::now_millis;
use plaza_domain::users::normalize_email;
use plaza_domain::{Database, DomainError};

use crate::services::front_door::FrontDoor;
use crate::services::mail::{Letter, MailKind, Mailer, compose};
use crate::services::templates::Templates;
use crate::settings::ServerSettings;

/// The handles the changes use.
pub struct FrontDoorChanges<'a> {
    pub db: &'a Database,
    pub front_door: &'a FrontDoor,
    pub templates: &'a Arc<Templates>,
    pub server: &'a ServerSettings,
    pub mailer: &'a Mailer,
}

/// An administrator's decision on a registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Approve,
    Reject,
}

impl Decision {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "approve" => Some(Decision::Approve),
            "reject" => Some(Decision::Reject),
            _ => None,
        }
    }
}

impl FrontDoorChanges<'_> {
    /// Changes the site settings as `admin_id`; audited as
    /// `site_settings.update` with what changed.
    pub async fn update_settings(
        &self,
        context: AuditContext,
        changes: SettingsChanges,
        admin_id: i64,
    ) -> Result<StoredSettings, DomainError> {
        let defaults = self.front_door.file_defaults();
        let updated = self
            .db
            .write(|tx| {
                Box::pin(async move {
                    let updated = site_settings::update(tx, changes, admin_id, defaults).await?;
                    audit::record(
                        tx,
                        &context,
                        AuditAction {
                            action: "site_settings.update",
                            target_type: "site_settings",
                            target_id: None,
                            changes: updated.changes.clone(),
                        },
                    )
                    .await?;
                    Ok(updated.settings)
                })
            })
            .await?;
        self.front_door.reload(self.db).await?;
        Ok(updated)
    }

    /// Adds an IP block as `admin_id`; audited as `ip_block.create`.
    pub async fn add_ip_block(
        &self,
        context: AuditContext,
        new: NewIpBlock,
        admin_id: i64,
    ) -> Result<IpBlock, DomainError> {
        let block = self
            .db
            .write(|tx| {
                Box::pin(async move {
                    let block = ip_blocks::create(tx, new, admin_id).await?;
                    audit::record(
                        tx,
                        &context,
                        AuditAction {
                            action: "ip_block.create",
                            target_type: "ip_block",
                            target_id: Some(block.id.to_string()),
                            changes: serde_json::json!({"after": ip_blocks::snapshot(&block)}),
                        },
                    )
                    .await?;
                    Ok(block)
                })
            })
            .await?;
        self.front_door.reload(self.db).await?;
        Ok(block)
    }

    /// Removes IP block `id`; audited as `ip_block.delete` with what it was.
    pub async fn remove_ip_block(
        &self,
        context: AuditContext,
        id: i64,
    ) -> Result<IpBlock, DomainError> {
        let block = self
            .db
            .write(|tx| {
                Box::pin(async move {
                    let block = ip_blocks::delete(tx, id).await?;
                    audit::record(
                        tx,
                        &context,
                        AuditAction {
                            action: "ip_block.delete",
                            target_type: "ip_block",
                            target_id: Some(block.id.to_string()),
                            changes: serde_json::json!({"before": ip_blocks::snapshot(&block)}),
                        },
                    )
                    .await?;
                    Ok(block)
                })
            })
            .await?;
        self.front_door.reload(self.db).await?;
        Ok(block)
    }

    /// Blocks email domain `domain` (normalized) as `admin_id`; audited as
    /// `email_domain_block.create`.
    pub async fn add_email_domain_block(
        &self,
        context: AuditContext,
        domain: String,
        reason: String,
        admin_id: i64,
    ) -> Result<EmailDomainBlock, DomainError> {
        self.db
            .write(|tx| {
                Box::pin(async move {
                    let block = email_domain_blocks::create(tx, &domain, &reason, admin_id).await?;
                    audit::record(
                        tx,
                        &context,
                        AuditAction {
                            action: "email_domain_block.create",
                            target_type: "email_domain_block",
                            target_id: Some(block.id.to_string()),
                            changes: serde_json::json!({
                                "after": email_domain_blocks::snapshot(&block)
                            }),
                        },
                    )
                    .await?;
                    Ok(block)
                })
            })
            .await
    }

    /// Removes email-domain block `id`; audited as
    /// `email_domain_block.delete` with what it was.
    pub async fn remove_email_domain_block(
        &self,
        context: AuditContext,
        id: i64,
    ) -> Result<EmailDomainBlock, DomainError> {
        self.db
            .write(|tx| {
                Box::pin(async move {
                    let block = email_domain_blocks::delete(tx, id).await?;
                    audit::record(
                        tx,
                        &context,
                        AuditAction {
                            action: "email_domain_block.delete",
                            target_type: "email_domain_block",
                            target_id: Some(block.id.to_string()),
                            changes: serde_json::json!({
                                "before": email_domain_blocks::snapshot(&block)
                            }),
                        },
                    )
                    .await?;
                    Ok(block)
                })
            })
            .await
    }

    /// Approves or rejects the pending user `user_id` and mails them (a
    /// rejection with `reason`); audited as `registration.approve` or
    /// `registration.reject`. A rejection deletes the account.
    pub async fn decide_registration(
        &self,
        context: AuditContext,
        user_id: i64,
        decision: Decision,
        reason: String,
    ) -> Result<PendingRegistration, DomainError> {
        let templates = Arc::clone(self.templates);
        let server = self.server.clone();
        let decided = self
            .db
            .write(|tx| {
                Box::pin(async move {
                    let decided = match decision {
                        Decision::Approve => registrations::approve(tx, user_id).await?,
                        Decision::Reject => registrations::reject(tx, user_id).await?,
                    };
                    let user = &decided.user;
                    let base = server.base_url.as_str().trim_end_matches('/').to_owned();
                    let name = user
                        .row
                        .name
                        .clone()
                        .unwrap_or_else(|| user.row.username.clone());
                    let mut mail = compose(
                        &templates,
                        &server,
                        &Letter {
                            kind: match decision {
                                Decision::Approve => MailKind::RegistrationApproved,
                                Decision::Reject => MailKind::RegistrationRejected,
                            },
                            recipient: &normalize_email(&user.row.email),
                            name: &name,
                            link: &base,
                            valid_for: "",
                            change: &reason,
                        },
                    )
                    .map_err(DomainError::Unavailable)?;
                    // A rejected account is gone: its mail belongs to nobody.
                    mail.user_id = (decision == Decision::Approve).then_some(user_id);
                    outgoing_mail::enqueue(tx, &mail, now_millis()).await?;
                    audit::record(
                        tx,
                        &context,
                        AuditAction {
                            action: match decision {
                                Decision::Approve => "registration.approve",
                                Decision::Reject => "registration.reject",
                            },
                            target_type: "user",
                            target_id: Some(user_id.to_string()),
                            changes: serde_json::json!({
                                "email": user.row.email,
                                "username": user.row.username,
                                "application": decided.application,
                                "reason": reason,
                            }),
                        },
                    )
                    .await?;
                    Ok(decided)
                })
            })
            .await?;
        self.mailer.wake();
        Ok(decided)
    }
}
