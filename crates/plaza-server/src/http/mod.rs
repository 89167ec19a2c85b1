//! The HTTP plumbing every route shares: the accept loop, the middleware,
//! the extractors that parse and bound input, the error shapes of each
//! surface, the rate limits, and the server-rendered pages.

pub mod answer_cache;
pub mod csv_cells;
pub mod error;
pub mod extract;
pub mod middleware;
pub mod pages;
pub mod rate_limit;
pub mod serve;
