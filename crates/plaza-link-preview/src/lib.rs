//! Link preview for Plaza (`GET /api/link-preview`, SPEC.md): metadata
//! extraction from HTML as a pure function ([`extract::extract`]) and a
//! guarded fetcher ([`fetch::PreviewClient`]) that refuses non-public
//! targets, pins each connection to the address it checked, follows at most
//! five redirects (checking every hop), and reads at most 2 MiB.
//!
//! The crate holds no HTTP server: the server crate maps
//! [`fetch::PreviewError`] onto statuses with [`fetch::PreviewError::status`].

pub mod extract;
mod charset;
mod text;
mod tokenizer;

pub use extract::{extract, Metadata};
