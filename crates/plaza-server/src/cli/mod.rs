//! The command line: its arguments, and the administrative subcommands
//! they run.

pub mod backup;
pub mod commands;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Plaza: a self-hostable back end for community platforms.
#[derive(Debug, Parser)]
#[command(name = "plaza", version, about)]
pub struct Cli {
    /// Settings file (TOML). Default: `plaza.toml` in the working directory, if present.
    #[arg(long, global = true, env = "PLAZA_CONFIG")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the API (the default).
    Serve,
    /// Create or update the database schema, then exit.
    Migrate,
    /// Manage users.
    #[command(subcommand)]
    User(UserCommand),
    /// Mint an admin JWT for a user with an admin role; prints only the token.
    Token(TokenArgs),
    /// Write a backup archive (.tar.gz) of the database, the generated keys
    /// and the local uploads, while a server may be serving.
    Backup(BackupArgs),
    /// Fill an empty data directory (and, on PostgreSQL, an empty database)
    /// from a backup archive. Refused while a server serves the SQLite
    /// database.
    Restore(RestoreArgs),
    /// Outgoing mail.
    #[command(subcommand)]
    Mail(MailCommand),
    /// Analytics maintenance.
    #[command(subcommand)]
    Analytics(AnalyticsCommand),
    /// Development tools.
    #[command(subcommand)]
    Dev(DevCommand),
}

#[derive(Debug, Args)]
pub struct BackupArgs {
    /// The archive to write (created 0600; an existing file is refused).
    #[arg(long)]
    pub output: PathBuf,
}

#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// The archive `plaza backup` or the `backup_database` action wrote.
    #[arg(long)]
    pub input: PathBuf,
    /// Replace the database, the keys and the uploads of a data directory
    /// (or PostgreSQL database) that is not empty.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Subcommand)]
pub enum MailCommand {
    /// Queue the mails given up on (`failed`) again, from the first
    /// attempt: after an SMTP outage or a fixed `smtp_url`. Audited as
    /// `mail.resend`; a running server sends them within seconds.
    Resend(ResendArgs),
}

#[derive(Debug, Args)]
pub struct ResendArgs {
    /// Only the mails to this address.
    #[arg(long)]
    pub recipient: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum AnalyticsCommand {
    /// Count every stored event into the dashboards' rollups again, from
    /// scratch: after loading events into the database around the server
    /// (a restore, a bulk import). One transaction: new events wait for it
    /// (on SQLite every write does), so run it when traffic is low.
    RebuildRollups,
}

#[derive(Debug, Subcommand)]
pub enum DevCommand {
    /// Fill the database with generated users, posts and replies (for benchmarks and
    /// trying things out; run it before serving, not while serving).
    Seed(SeedArgs),
}

#[derive(Debug, Args)]
pub struct SeedArgs {
    /// How many users to create.
    #[arg(long, default_value_t = 0)]
    pub users: u64,
    /// How many posts to create, by random users (the new ones, or the
    /// existing ones when --users is 0).
    #[arg(long, default_value_t = 0)]
    pub posts: u64,
    /// Percentage (0 to 100) of the new posts that get one to three
    /// reports by other users, for the admin moderation queue.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=100))]
    pub reported_percent: u64,
    /// How many published replies to create, by random active users, on
    /// public posts that have none (after the users and posts above).
    #[arg(long, default_value_t = 0)]
    pub replies: u64,
    /// How many of those replies go into one thread, on the newest such
    /// post (the rest spread over the others).
    #[arg(long, default_value_t = 0)]
    pub thread_replies: u64,
}

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Create a user (how a new install gets its first administrator).
    Create(CreateUserArgs),
    /// Ban a user: their sessions end and their tokens stop working at once.
    Ban(EmailArgs),
    /// Lift a ban.
    Unban(EmailArgs),
    /// Change a user's role; their admin tokens follow the new role at once.
    Role(RoleArgs),
    /// Turn two-factor sign-in (TOTP) off for a user who lost their
    /// authenticator and recovery codes: they sign in with their password
    /// alone until they set it up again. Audited as `user.totp.disable`.
    DisableTotp(EmailArgs),
}

#[derive(Debug, Args)]
pub struct RoleArgs {
    #[arg(long)]
    pub email: String,
    /// user, moderator, admin or super_admin.
    #[arg(long)]
    pub role: String,
}

#[derive(Debug, Args)]
pub struct CreateUserArgs {
    #[arg(long)]
    pub email: String,
    /// At least 8 characters.
    #[arg(long)]
    pub password: String,
    #[arg(long)]
    pub name: Option<String>,
    /// Derived from the name or email when not given.
    #[arg(long)]
    pub username: Option<String>,
    /// user, moderator, admin or super_admin.
    #[arg(long, default_value = "user")]
    pub role: String,
}

#[derive(Debug, Args)]
pub struct EmailArgs {
    #[arg(long)]
    pub email: String,
}

#[derive(Debug, Args)]
pub struct TokenArgs {
    #[arg(long)]
    pub email: String,
    /// Comma-separated: admin:read, admin:write, admin:delete, admin:super.
    #[arg(long, value_delimiter = ',')]
    pub permissions: Vec<String>,
    /// Lifetime such as 30m, 1h or 3600s (at most admin_token_ttl_secs).
    #[arg(long, default_value = "1h")]
    pub ttl: String,
}

/// Parses `90s`, `30m`, `1h`, `2d` or bare seconds.
pub fn parse_ttl(text: &str) -> Result<i64, String> {
    let text = text.trim();
    let (number, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let value: i64 = number
        .parse()
        .map_err(|_| format!("invalid --ttl {text:?}: expected e.g. 30m, 1h or 3600"))?;
    let factor = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("invalid --ttl unit in {text:?}: use s, m, h or d")),
    };
    Ok(value.saturating_mul(factor))
}

#[cfg(test)]
mod tests {
    use super::parse_ttl;

    #[test]
    fn ttls_take_common_units() {
        assert_eq!(parse_ttl("1h"), Ok(3600));
        assert_eq!(parse_ttl("30m"), Ok(1800));
        assert_eq!(parse_ttl("45"), Ok(45));
        assert!(parse_ttl("1w").is_err());
        assert!(parse_ttl("h").is_err());
    }
}
