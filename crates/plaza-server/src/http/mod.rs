//! The HTTP plumbing every route shares: the accept loop, the middleware,
//! the extractors that parse and bound input, the error shapes of each
//! surface, the rate limits, the server-rendered pages, and the marking of
//! personal answers.

pub mod answer_cache;
pub mod cookies;
pub mod csv_cells;
pub mod error;
pub mod extract;
pub mod limit_headers;
pub mod middleware;
pub mod pages;
pub mod personal;
pub mod rate_limit;
pub mod serve;
