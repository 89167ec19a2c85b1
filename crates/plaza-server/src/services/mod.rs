//! The work behind the routes: uploads and the object store, the content
//! generation as this instance knows it, the answers kept for anonymous
//! readers, the analytics writer, the live alert stream, the audit of
//! reads, session lookups, health probes, the feature flags as last read,
//! users' data exports and the deletion of erased users' files, the bounded
//! blocking pool, outgoing mail and the templates it is written from,
//! notifications by push and mail, backup archives, the maintenance
//! actions the admins and the jobs start, moderators' decisions on posts,
//! the site's rules and admins' changes to users, broadcasts and feature flag writes,
//! generated images kept by their parameters, signed-in readers'
//! relations, and the front door (the site settings and IP blocks as this
//! instance knows them, and an administrator's changes to them, to
//! email-domain blocks and to registrations).
//! Each receives the handles it uses (the database, a settings section, a
//! cache); nothing here knows the app's state, HTTP or who is calling.

pub mod address_ranges;
pub mod alert_stream;
pub mod analytics;
pub mod answer_cache;
pub mod audit_reads;
pub mod backup;
pub mod blocking;
pub mod broadcasts;
pub mod content_generation;
pub mod erased_files;
pub mod export;
pub mod flag_snapshot;
pub mod flags;
pub mod front_door;
pub mod front_door_changes;
pub mod group_commit;
pub mod health;
pub mod image_cache;
pub mod mail;
pub mod maintenance;
pub mod moderation;
pub mod notifications;
pub mod own_pages;
pub mod reader_relations;
pub mod session_lookups;
pub mod site_rules;
pub mod storage;
pub mod templates;
pub mod uploads;
pub mod user_admin;
pub mod webhooks;
pub mod word_filters;
