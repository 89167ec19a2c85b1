//! The administrative subcommands: bootstrap users and tokens on a fresh
//! install without going through HTTP.

use plaza_domain::DomainError;
use plaza_domain::audit::{self, AuditAction, AuditContext};
use plaza_domain::bans::{self, BanLength, NewBan};
use plaza_domain::two_factor;
use plaza_domain::users::{self, NewUser, Role, UserStatus, is_valid_username};
use serde_json::json;

use crate::cli::{CreateUserArgs, EmailArgs, ResendArgs, RoleArgs, SeedArgs, TokenArgs, parse_ttl};
use crate::state::AppState;

/// Creates a user; prints its id.
pub async fn create_user(state: &AppState, args: CreateUserArgs) -> Result<(), String> {
    let role = Role::parse(&args.role).ok_or_else(|| {
        format!(
            "unknown role {:?}: use user, moderator, admin or super_admin",
            args.role
        )
    })?;
    crate::auth::password::check_password(&args.password).map_err(|error| error.to_string())?;
    if !args.email.contains('@') {
        return Err(format!("{:?} is not an email address", args.email));
    }
    if let Some(username) = &args.username
        && !is_valid_username(username)
    {
        return Err(format!(
            "invalid username {username:?}: 3-30 of a-z, 0-9, _ - ."
        ));
    }
    let password_hash = state
        .auth
        .passwords
        .hash(&args.password)
        .await
        .map_err(|error| error.to_string())?;
    let new = NewUser {
        email: args.email,
        email_verified: true,
        username: args.username,
        name: args.name,
        image: None,
        password_hash: Some(password_hash),
        role,
    };
    let user = state
        .db
        .write(|tx| {
            Box::pin(async move {
                let user = plaza_domain::users::create(tx, new).await?;
                audit::record(
                    tx,
                    &command_context(),
                    AuditAction {
                        action: "user.create",
                        target_type: "user",
                        target_id: Some(user.id().to_string()),
                        changes: json!({"after": {
                            "email": user.row.email,
                            "username": user.row.username,
                            "role": user.role.as_str(),
                        }}),
                    },
                )
                .await?;
                Ok(user)
            })
        })
        .await
        .map_err(|error| error.to_string())?;
    println!("{}", user.id());
    eprintln!(
        "created user {} ({}) with role {}",
        user.row.username,
        user.row.email,
        user.role.as_str()
    );
    Ok(())
}

/// Bans or unbans a user by email.
pub async fn set_status(
    state: &AppState,
    args: EmailArgs,
    status: UserStatus,
) -> Result<(), String> {
    let user = state
        .db
        .user_by_email(&args.email)
        .await
        .map_err(|error| error.to_string())?
        .ok_or_else(|| format!("no user with email {}", args.email))?;
    let before = user.status;
    let user_id = user.id();
    let action = if status == UserStatus::Banned {
        "user.ban"
    } else {
        "user.status.update"
    };
    apply_audited(
        state,
        user_id,
        CommandChange::Status(status),
        action,
        json!({"status": audit::change(before.as_str(), status.as_str())}),
    )
    .await?;
    eprintln!("{} is now {}", user.row.email, status.as_str());
    Ok(())
}

/// Changes a user's role by email.
pub async fn set_role(state: &AppState, args: RoleArgs) -> Result<(), String> {
    let role = Role::parse(&args.role).ok_or_else(|| {
        format!(
            "unknown role {:?}: use user, moderator, admin or super_admin",
            args.role
        )
    })?;
    let user = state
        .db
        .user_by_email(&args.email)
        .await
        .map_err(|error| error.to_string())?
        .ok_or_else(|| format!("no user with email {}", args.email))?;
    let before = user.role;
    let user_id = user.id();
    apply_audited(
        state,
        user_id,
        CommandChange::Role(role),
        "user.role.update",
        json!({"role": audit::change(before.as_str(), role.as_str())}),
    )
    .await?;
    eprintln!("{} now has role {}", user.row.email, role.as_str());
    Ok(())
}

/// Turns two-factor sign-in off for a user by email.
pub async fn disable_totp(state: &AppState, args: EmailArgs) -> Result<(), String> {
    let user = state
        .db
        .user_by_email(&args.email)
        .await
        .map_err(|error| error.to_string())?
        .ok_or_else(|| format!("no user with email {}", args.email))?;
    if !user.has_totp() {
        return Err(format!(
            "{} does not have two-factor sign-in on",
            user.row.email
        ));
    }
    let notice = crate::auth::account_mail::account_change_notice(
        &state.account_mail(),
        &user,
        crate::auth::account_mail::AccountChange::TotpDisabled,
    )
    .map_err(|error| error.to_string())?;
    apply_audited(
        state,
        user.id(),
        CommandChange::DisableTotp(Box::new(notice)),
        "user.totp.disable",
        json!({"totpEnabled": audit::change(true, false)}),
    )
    .await?;
    eprintln!(
        "two-factor sign-in is now off for {}; they sign in with their password alone",
        user.row.email
    );
    Ok(())
}

/// Queues the failed mails (to one recipient, or all) again, audited as
/// `mail.resend` with their number, in one unit of work; prints how many.
pub async fn resend_mail(state: &AppState, args: ResendArgs) -> Result<(), String> {
    let recipient = args
        .recipient
        .map(|address| users::normalize_email(address.trim()));
    let queued = state
        .db
        .write(|tx| {
            Box::pin(async move {
                let now = plaza_domain::time::now_millis();
                let queued =
                    plaza_domain::outgoing_mail::resend_failed(tx, recipient.as_deref(), now)
                        .await?;
                audit::record(
                    tx,
                    &command_context(),
                    AuditAction {
                        action: "mail.resend",
                        target_type: "mail",
                        target_id: recipient.clone(),
                        changes: json!({"queued": queued}),
                    },
                )
                .await?;
                Ok(queued)
            })
        })
        .await
        .map_err(|error| error.to_string())?;
    eprintln!("{queued} failed mails queued again");
    Ok(())
}

/// Mints an admin JWT and prints it alone on stdout.
pub async fn mint_token(state: &AppState, args: TokenArgs) -> Result<(), String> {
    let user = state
        .db
        .user_by_email(&args.email)
        .await
        .map_err(|error| error.to_string())?
        .ok_or_else(|| format!("no user with email {}", args.email))?;
    if !user.is_active() {
        return Err(format!("{} is {}", args.email, user.status.as_str()));
    }
    if crate::auth::jwt::AdminPermission::allowed_for(user.role).is_empty() {
        return Err(format!(
            "{} has role {}; admin tokens need admin or super_admin",
            args.email,
            user.role.as_str()
        ));
    }
    if crate::auth::require_second_factor(&state.settings.auth, user.role, user.has_totp()).is_err()
    {
        return Err(format!(
            "{} has no two-factor sign-in, which `admin_totp_required` asks of administrators: \
             they set it up (POST /api/auth/totp/setup and /enable) before a token is minted",
            args.email
        ));
    }
    let ttl = parse_ttl(&args.ttl)?;
    let requested = (!args.permissions.is_empty()).then_some(args.permissions.as_slice());
    let (token, claims) = crate::auth::issue_admin_token(
        &state.auth,
        &state.settings.auth,
        user.id(),
        user.role,
        requested,
        Some(ttl),
    )
    .map_err(|error| match error {
        crate::http::error::AppError::InsufficientAdminPermissions { required } => {
            format!("role {} cannot hold {required}", user.role.as_str())
        }
        other => other.to_string(),
    })?;
    let user_id = user.id();
    let minted = json!({
        "jti": claims.jti,
        "permissions": claims.permissions,
        "expiresAt": claims.exp,
    });
    apply_audited(
        state,
        user_id,
        CommandChange::Nothing,
        "admin_token.mint",
        minted,
    )
    .await?;
    println!("{token}");
    Ok(())
}

/// Writes generated users, posts and replies, printing progress to stderr and the
/// totals to stdout.
pub async fn seed(state: &AppState, args: SeedArgs) -> Result<(), String> {
    let mut last_report = std::time::Instant::now();
    let mut report = |progress: plaza_domain::seed::SeedProgress| {
        let done = progress.written == progress.total;
        if done || last_report.elapsed().as_secs() >= 2 {
            last_report = std::time::Instant::now();
            eprintln!(
                "seed: {} {}/{} ({:.1}s)",
                progress.table, progress.written, progress.total, progress.elapsed_secs
            );
        }
    };
    let started = std::time::Instant::now();
    let summary = state
        .db
        .seed_content(args.users, args.posts, args.reported_percent, &mut report)
        .await
        .map_err(|error| error.to_string())?;
    println!(
        "seeded {} users, {} posts, {} tags and {} reports in {:.1}s",
        summary.users,
        summary.posts,
        summary.tags,
        summary.reports,
        started.elapsed().as_secs_f64()
    );
    if args.replies > 0 {
        let started = std::time::Instant::now();
        let replies = state
            .db
            .seed_replies(args.replies, args.thread_replies, &mut report)
            .await
            .map_err(|error| error.to_string())?;
        println!(
            "seeded {} replies ({} in the thread of post {}) in {:.1}s",
            replies.replies,
            replies.thread_replies,
            replies
                .thread_post_id
                .map_or_else(|| "none".to_owned(), |id| id.to_string()),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// What a command changes on a user, besides its audit entry.
enum CommandChange {
    Status(UserStatus),
    Role(Role),
    /// Two-factor sign-in turned off, and the notice mailed to its owner.
    DisableTotp(Box<plaza_domain::outgoing_mail::NewMail>),
    /// The entry alone (a minted token changes nothing stored).
    Nothing,
}

/// Who a command's audit entry names. The command line has no actor: who
/// can run it against the database administers the install, whatever
/// account they hold in Plaza. The entry's surface is `cli`, and its user
/// agent names the command and, when the environment tells (`USER`, else
/// `LOGNAME`; its first 64 characters), the operating-system account that
/// ran it.
pub(crate) fn command_context() -> AuditContext {
    let os_user = ["USER", "LOGNAME"]
        .into_iter()
        .filter_map(|name| std::env::var(name).ok())
        .map(|user| user.trim().chars().take(64).collect::<String>())
        .find(|user| !user.is_empty() && !user.chars().any(char::is_control));
    let command = concat!("plaza-cli/", env!("CARGO_PKG_VERSION"));
    AuditContext {
        user_agent: Some(match os_user {
            Some(user) => format!("{command} (os user {user})"),
            None => command.to_owned(),
        }),
        ..AuditContext::command_line()
    }
}

/// Applies `change` to the user and records it (actor: the command line) in
/// one unit of work.
async fn apply_audited(
    state: &AppState,
    user_id: i64,
    change: CommandChange,
    action: &'static str,
    changes: serde_json::Value,
) -> Result<(), String> {
    state
        .db
        .write(|tx| {
            Box::pin(async move {
                match change {
                    // A ban from the command line is a permanent ban record,
                    // as from the admin surfaces; any other status lifts it.
                    CommandChange::Status(UserStatus::Banned) => {
                        bans::impose(
                            tx,
                            NewBan {
                                user_id,
                                banned_by: None,
                                reason: "banned from the command line".to_owned(),
                                notes: None,
                                length: BanLength::Permanent,
                            },
                        )
                        .await?;
                    }
                    CommandChange::Status(status) => {
                        if users::user_in(tx, user_id).await?.status == UserStatus::Banned {
                            bans::lift(tx, user_id, None, "unbanned from the command line").await?;
                        }
                        users::set_status(tx, user_id, status).await?;
                    }
                    CommandChange::Role(role) => users::set_role(tx, user_id, role).await?,
                    CommandChange::DisableTotp(notice) => {
                        if !two_factor::disable(tx, user_id).await? {
                            return Err(DomainError::Conflict(
                                "two-factor sign-in is not on".to_owned(),
                            ));
                        }
                        crate::auth::account_mail::queue_notice(tx, &notice).await?;
                    }
                    CommandChange::Nothing => {}
                }
                audit::record(
                    tx,
                    &command_context(),
                    AuditAction {
                        action,
                        target_type: "user",
                        target_id: Some(user_id.to_string()),
                        changes,
                    },
                )
                .await?;
                Ok(())
            })
        })
        .await
        .map_err(|error| error.to_string())
}
