//! Cross-cutting request handling: error rendering, request ids, metrics and
//! the cross-origin write check.

mod cross_origin;
mod metrics;
mod render_errors;
mod request_id;

pub use cross_origin::refuse_cross_origin_writes;
pub use metrics::track_metrics;
pub use render_errors::render_errors;
pub use request_id::MakeRequestUuid;
