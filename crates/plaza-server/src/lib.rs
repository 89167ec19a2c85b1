//! The Plaza service: HTTP routes, extractors, error rendering, settings and
//! start-up. The domain lives in `plaza-domain`; this crate only parses,
//! authorizes, calls the domain and renders.
//!
//! The folders are the layers, top to bottom: the router (`app`), the job
//! table (`jobs`) and the command line (`cli`); the `controllers`, one
//! module per surface; the `state`, which composes every service and lends
//! the layers below the handles they read; `auth`, who is calling; `http`,
//! the plumbing every route shares (accept loop, middleware, extractors,
//! error shapes, rate limits, answers with their tags); `services`, the
//! work behind the routes; and the ground: `settings`, `telemetry`,
//! `secrets`, `startup` and `serving`. A file imports its own layer or
//! those below, and no files import one another round a circle
//! (`tests/it/layers.rs` reads the imports and names any that breaks this;
//! docs/architecture.md, "Layers").

#![forbid(unsafe_code)]

pub mod app;
pub mod auth;
pub mod cli;
pub mod controllers;
pub mod http;
pub mod jobs;
pub mod secrets;
pub mod services;
pub mod serving;
pub mod settings;
pub mod startup;
pub mod state;
pub mod telemetry;
