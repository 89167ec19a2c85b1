//! The Plaza service: HTTP routes, extractors, error rendering, settings and
//! start-up. The domain lives in `plaza-domain`; this crate only parses,
//! authorizes, calls the domain and renders.

#![forbid(unsafe_code)]

pub mod alert_stream;
pub mod analytics;
pub mod app;
pub mod audit_reads;
pub mod auth;
pub mod blocking;
pub mod cli;
pub mod commands;
pub mod controllers;
pub mod csv_cells;
pub mod error;
pub mod extract;
pub mod flag_snapshot;
pub mod group_commit;
pub mod health;
pub mod identity;
pub mod jobs;
pub mod maintenance;
pub mod middleware;
pub mod pages;
pub mod rate_limit;
pub mod serve;
pub mod settings;
pub mod startup;
pub mod state;
pub mod storage;
pub mod telemetry;
pub mod uploads;
