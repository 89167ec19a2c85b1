//! One module per resource; each handler is one operation, annotated for the
//! OpenAPI document, and each module's `routes()` registers its handlers.

pub mod admin;
pub mod admin_v1;
pub mod alerts;
pub mod analytics;
pub mod auth;
pub mod between;
pub mod console;
pub mod docs;
pub mod emojis;
pub mod feature_flags;
pub mod images;
pub mod link_preview;
pub mod metrics;
pub mod moderation;
pub mod notifications;
pub mod og;
pub mod params;
pub mod posts;
pub mod profiles;
pub mod reactions;
pub mod reading;
pub mod replies;
pub mod screening;
pub mod search;
pub mod system;
pub mod uploads;
pub mod users;
