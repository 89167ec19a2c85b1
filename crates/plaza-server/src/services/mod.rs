//! The work behind the routes: uploads and the object store, the content
//! generation as this instance knows it, the analytics writer, the live alert stream, the audit of reads, health probes, the
//! feature flags as last read, users' data exports and the deletion of
//! erased users' files, the bounded blocking pool, outgoing mail and the
//! templates it is written from, notifications by push and mail, backup archives, and the one job runner
//! with the maintenance actions it and the admins start, moderators'
//! decisions on posts and admins' changes to users, broadcasts and feature flag writes, and generated
//! images kept by their parameters. Nothing here
//! knows about HTTP routes.

pub mod alert_stream;
pub mod analytics;
pub mod audit_reads;
pub mod backup;
pub mod blocking;
pub mod broadcasts;
pub mod content_generation;
pub mod erased_files;
pub mod export;
pub mod flag_snapshot;
pub mod flags;
pub mod group_commit;
pub mod health;
pub mod image_cache;
pub mod jobs;
pub mod mail;
pub mod maintenance;
pub mod moderation;
pub mod notifications;
pub mod own_pages;
pub mod storage;
pub mod templates;
pub mod uploads;
pub mod user_admin;
