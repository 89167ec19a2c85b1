//! Integration tests of plaza-link-preview: the fixture corpus through the
//! pure extractor and through the fetcher over loopback HTTP, the SSRF
//! policy, timeouts, and a fixed-seed random-HTML robustness test.

mod corpus;
mod fetch;
mod generated;
mod ssrf;
mod support;
