//! What every route of the versioned admin surface shares: its answers
//! (one object in [`Envelope`], a list in [`ListEnvelope`]) and the page of
//! a list.

use plaza_domain::listing::Page;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::controllers::params::{self, Pagination, Problems};
use crate::http::error::AppError;

/// The default page size of the surface's lists (SPEC.md "Limits").
pub const DEFAULT_LIMIT: i64 = 50;

/// The query of a list that has no filter: its page.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// 1 to 100, default 50.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// Items to skip, default 0.
    #[param(value_type = Option<u64>, minimum = 0)]
    pub offset: Option<String>,
}

impl PageQuery {
    /// The page asked for; 422 naming each bad field.
    pub fn page(&self) -> Result<Page, AppError> {
        let mut problems = Problems::default();
        let page = params::page_or(
            &mut problems,
            self.limit.as_deref(),
            self.offset.as_deref(),
            DEFAULT_LIMIT,
        );
        problems.finish()?;
        Ok(page)
    }
}

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
