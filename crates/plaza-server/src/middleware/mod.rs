//! Cross-cutting request handling: error rendering and metrics.

mod cross_origin;
mod metrics;
mod render_errors;

pub use cross_origin::refuse_cross_origin_writes;
pub use metrics::track_metrics;
pub use render_errors::render_errors;
