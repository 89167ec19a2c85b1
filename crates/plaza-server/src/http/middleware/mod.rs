//! Cross-cutting request handling: request ids, tracing, CORS, the
//! cross-origin write check, the timeout, error rendering per surface and
//! metrics.

mod cors;
mod metrics;
mod request;

pub use request::{AccessUser, RequestLayer};
