//! Extractors whose rejections are [`AppError`](crate::http::error::AppError)s, so
//! bad input gets the answering surface's error shape and a message that says
//! what was wrong.

pub mod documented;
mod form;
pub mod json;
mod path;
pub mod query;
pub mod text_input;

pub use form::AppForm;
pub use json::AppJson;
pub use path::{IdPath, IdTextPath, TextPath, parse_id};
pub use query::AppQuery;
