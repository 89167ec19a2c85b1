//! The integration tests of plaza-server, built as one test binary: one
//! module per area, each starting the real `plaza` binary through the shared
//! harness in `common` (which also exports `on_both_databases!`). The two
//! admin surfaces' tests are named as their controllers are: `admin` for
//! `/api/admin`, `admin_v1` for `/api/v1/admin`.

#[macro_use]
mod common;

mod account_security;
mod admin;
mod admin_v1;
mod alerts;
mod analytics;
mod analytics_rollups;
mod audit;
mod backup;
mod between_members;
mod browser_and_docs;
mod client_generators;
mod console;
mod console_browser;
mod console_moderation;
mod content;
mod contract;
mod conversations;
mod emojis;
mod feature_flags;
mod foundation;
mod front_door;
mod hardening;
mod identity;
mod images;
mod input_rules;
mod jobs;
mod layers;
mod link_preview;
mod mail;
mod middleware;
mod moderation;
mod notifications;
mod og;
mod operations;
mod personal_answers;
mod public_reads;
mod rate_limits;
mod reactions;
mod real_clients;
mod resilience;
mod scale_out;
mod schema;
mod search;
mod tokens;
mod transport;
mod two_factor;
mod uploads;
mod user_data;
mod webhooks;
mod word_filters;
