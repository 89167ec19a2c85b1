//! Plaza's domain and data layer.
//!
//! Every resource has its own module that owns its SQL; the HTTP layer calls
//! these functions and never writes SQL itself. All queries are written once
//! and run on both SQLite (the embedded default) and PostgreSQL (scale-out)
//! through sqlx's `Any` driver, so they stick to the SQL both understand:
//! `$n` placeholders, `RETURNING`, `ON CONFLICT`, and timestamps stored as
//! Unix milliseconds in `BIGINT` columns.
//!
//! Functions that only the integration tests call (reading the audit log
//! whole, a lock's state, the stored analytics events, the query plans of
//! lists and searches) exist only with the cargo feature `testing`, which
//! `plaza-server` turns on for its tests alone: the shipped binary has
//! none of them.

#![forbid(unsafe_code)]

pub mod access_tokens;
pub mod accounts;
pub mod activity;
pub mod admin_principal;
pub mod admin_users;
pub mod alerts;
pub mod analytics;
pub mod audit;
pub mod auth_state;
pub mod bans;
pub mod between;
pub mod content_notifications;
pub mod db;
mod dialect;
pub mod email_domain_blocks;
pub mod email_tokens;
pub mod emojis;
pub mod engagement;
pub mod erasure;
pub mod error;
pub mod feature_flags;
pub mod flag;
pub mod grants;
pub mod holds;
pub mod invites;
pub mod ip_blocks;
pub mod jobs;
pub mod listing;
pub mod locks;
pub mod maintenance;
pub mod mentions;
pub mod moderation;
pub mod notifications;
pub mod outgoing_mail;
pub mod permissions;
pub mod phrases;
pub mod policy;
pub mod posts;
pub mod reactions;
pub mod registrations;
pub mod replies;
pub mod reports;
pub mod rules;
pub mod search;
pub mod seed;
pub mod sessions;
pub mod silences;
pub mod site_settings;
mod statements;
pub mod stats;
pub mod store_deletions;
pub mod subscriptions;
pub mod text;
pub mod time;
pub mod two_factor;
pub mod uploads;
pub mod users;
pub mod webhooks;
pub mod word_filters;

pub use db::{Database, DatabaseOptions, PoolStats, Tx, TxFuture};
pub use dialect::Backend;
pub use error::DomainError;
pub use flag::Flag;
