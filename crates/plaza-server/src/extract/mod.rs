//! Extractors whose rejections are [`AppError`](crate::error::AppError)s, so
//! bad input gets the answering surface's error shape and a message that says
//! what was wrong.

pub mod documented;
pub mod json;
mod path;
pub mod query;

pub use json::AppJson;
pub use path::{IdPath, parse_id};
pub use query::AppQuery;
