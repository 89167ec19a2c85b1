//! The HTTP plumbing every route shares: the accept loop, the middleware,
//! the extractors that parse and bound input, the error shapes of each
//! surface, the rate limits and their headers, the cookies, the
//! server-rendered pages, answers with their `ETag`, and the marking of
//! personal answers. Generic over the router's state: what it reads of it
//! (the limiter, who a request counts as) is asked through [`rate_limit::LimitState`].

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
