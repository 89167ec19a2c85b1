//! Link preview for Plaza (`GET /api/link-preview`, SPEC.md): metadata
//! extraction from HTML as a pure function ([`extract()`]) and a guarded
//! fetcher ([`PreviewClient`]) that refuses non-public targets, pins each
//! connection to the address it checked, follows at most five redirects
//! (checking every hop), and reads at most 2 MiB. The service's own routes
//! are answered in process ([`InternalPages`]) and its API refused, never
//! fetched over the network; a page of its origin that it does not serve
//! (a front end beside it) is fetched from the base URL.
//!
//! The crate holds no HTTP server: the server crate maps a
//! [`PreviewError`] onto `400` or `502` with [`PreviewError::status`].

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod charset;
pub mod extract;
pub mod fetch;
pub mod guard;
mod html;
pub mod policy;
mod text;

pub use extract::{Metadata, extract};
pub use fetch::{
    BuildError, FetchConfig, InternalAnswer, InternalFetch, InternalPage, InternalPages,
    LinkPreview, Lookup, PreviewClient, PreviewError, Resolver, StaticResolver, SystemResolver,
};
pub use guard::TargetRules;
pub use policy::{AddressClass, IpNet, classify};
