//! The Plaza service: HTTP routes, extractors, error rendering, settings and
//! start-up. The domain lives in `plaza-domain`; this crate only parses,
//! authorizes, calls the domain and renders.
//!
//! The folders are the layers, top to bottom: the router (`app`) and the
//! `controllers`, one module per surface; `auth`, who is calling; `http`,
//! the plumbing every route shares (accept loop, middleware, extractors,
//! error shapes, rate limits); `services`, the work behind the routes and
//! the background jobs; `settings`. A layer imports only those below it:
//! nothing outside `app` and `controllers` imports a controller.

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
