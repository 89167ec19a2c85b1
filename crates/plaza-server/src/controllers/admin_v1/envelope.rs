//! What every route of the versioned admin surface shares: its answers
//! (one object in [`Envelope`], a list in [`ListEnvelope`]) and the default
//! page size of a list (read by [`super::listing`]).

use serde::Serialize;
use utoipa::ToSchema;

use crate::controllers::params::Pagination;

/// The default page size of the surface's lists (SPEC.md "Limits").
pub const DEFAULT_LIMIT: i64 = 50;

/// A successful answer holding one object.
#[derive(Debug, Serialize, ToSchema)]
pub struct Envelope<T> {
    /// Always true.
    pub success: bool,
    pub data: T,
}

impl<T> Envelope<T> {
    pub fn new(data: T) -> Self {
        Envelope {
            success: true,
            data,
        }
    }
}

/// A successful list answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ListEnvelope<T> {
    /// Always true.
    pub success: bool,
    pub data: Vec<T>,
    pub meta: ListMeta,
}

/// What a list answer says about its page.
#[derive(Debug, Serialize, ToSchema)]
pub struct ListMeta {
    pub pagination: Pagination,
}

impl<T> ListEnvelope<T> {
    pub fn new(data: Vec<T>, pagination: Pagination) -> Self {
        ListEnvelope {
            success: true,
            data,
            meta: ListMeta { pagination },
        }
    }
}
