//! The paging and sort of the versioned admin surface's lists, read in one
//! place. Every list takes `limit` (1 to 100, default [`DEFAULT_LIMIT`])
//! and `offset` (0 or more, default 0); a list that sorts also takes
//! `sort`, one of the fields its [`SortField`] allows (its default when
//! absent), and `order`, `asc` or `desc` (the default). A list in one fixed
//! order ([`Unsorted`]) reads neither. Each bad value is a problem named
//! after its parameter, recorded after those of the list's own filters so
//! that one 422 names them all; the filters stay in each list's module.
//! The parameters' documentation is written from the same allowed fields.

use std::marker::PhantomData;

use plaza_domain::listing::{Page, SortOrder};
use plaza_domain::posts::PostSort;
use plaza_domain::users::UserSort;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::{RefOr, Required, Schema};

use super::envelope::DEFAULT_LIMIT;
use crate::controllers::params::{self, MAX_LIMIT, Problems};
use crate::http::error::AppError;

/// The fields a list sorts by.
pub trait SortField: Copy + Default + PartialEq + 'static {
    /// The fields `sort` takes, in the order its documentation and its
    /// problem name them.
    const ALLOWED: &'static [Self];

    /// The field's name in `sort`.
    fn name(self) -> &'static str;
}

/// The order of a list that does not sort: it allows no field, so `sort`
/// and `order` are neither read nor documented.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unsorted;

impl SortField for Unsorted {
    const ALLOWED: &'static [Self] = &[];

    fn name(self) -> &'static str {
        ""
    }
}

impl SortField for UserSort {
    const ALLOWED: &'static [Self] = &UserSort::ADMIN;

    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl SortField for PostSort {
    const ALLOWED: &'static [Self] = &PostSort::ADMIN;

    fn name(self) -> &'static str {
        self.as_str()
    }
}

/// The paging and sort parameters of a list sorted by `S`, as they arrive.
#[derive(Deserialize)]
pub struct ListQuery<S = Unsorted> {
    limit: Option<String>,
    offset: Option<String>,
    sort: Option<String>,
    order: Option<String>,
    #[serde(skip)]
    fields: PhantomData<S>,
}

/// What a list asks for: its page, and the field and direction it is
/// sorted by.
#[derive(Debug, Clone, Copy)]
pub struct Listing<S> {
    pub page: Page,
    pub sort: S,
    pub order: SortOrder,
}

impl<S: SortField> ListQuery<S> {
    /// The listing asked for, recording a problem for each bad parameter,
    /// in the order `sort`, `order`, `limit`, `offset`.
    pub fn check(&self, problems: &mut Problems) -> Listing<S> {
        let (sort, order) = if S::ALLOWED.is_empty() {
            (S::default(), SortOrder::default())
        } else {
            (
                sort_field(problems, self.sort.as_deref()),
                params::order(problems, self.order.as_deref()),
            )
        };
        let page = params::page_or(
            problems,
            self.limit.as_deref(),
            self.offset.as_deref(),
            DEFAULT_LIMIT,
        );
        Listing { page, sort, order }
    }

    /// The page asked for of a list without filters; 422 naming each bad
    /// parameter.
    pub fn page(&self) -> Result<Page, AppError> {
        let mut problems = Problems::default();
        let listing = self.check(&mut problems);
        problems.finish()?;
        Ok(listing.page)
    }
}

/// `sort`: one of the allowed fields, the default when absent.
fn sort_field<S: SortField>(problems: &mut Problems, raw: Option<&str>) -> S {
    raw.and_then(|raw| {
        let field = S::ALLOWED.iter().copied().find(|field| field.name() == raw);
        problems.check(
            "sort",
            field.ok_or_else(|| {
                format!(
                    "must be {}",
                    one_of(S::ALLOWED.iter().map(|field| field.name().to_owned()))
                )
            }),
        )
    })
    .unwrap_or_default()
}

/// `a, b or c`.
fn one_of(names: impl Iterator<Item = String>) -> String {
    let names: Vec<String> = names.collect();
    match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

impl<S: SortField> IntoParams for ListQuery<S> {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let whole_number = |format| {
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .format(Some(SchemaFormat::KnownFormat(format)))
        };
        let mut parameters = vec![
            parameter(
                "limit",
                format!("1 to {MAX_LIMIT}, default {DEFAULT_LIMIT}."),
                whole_number(KnownFormat::Int32)
                    .minimum(Some(1))
                    .maximum(Some(MAX_LIMIT)),
            ),
            parameter(
                "offset",
                "Items to skip, default 0.".to_owned(),
                whole_number(KnownFormat::Int64).minimum(Some(0)),
            ),
        ];
        if !S::ALLOWED.is_empty() {
            let fields = S::ALLOWED.iter().map(|field| {
                if *field == S::default() {
                    format!("`{}` (default)", field.name())
                } else {
                    format!("`{}`", field.name())
                }
            });
            let text = || ObjectBuilder::new().schema_type(Type::String);
            parameters.push(parameter("sort", format!("{}.", one_of(fields)), text()));
            parameters.push(parameter(
                "order",
                "`asc` or `desc` (default).".to_owned(),
                text(),
            ));
        }
        parameters
    }
}

/// An optional query parameter.
fn parameter(name: &str, description: String, schema: impl Into<RefOr<Schema>>) -> Parameter {
    ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Query)
        .required(Required::False)
        .description(Some(description))
        .schema(Some(schema))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allowed_fields_are_named_as_a_list() {
        let names = |names: &[&str]| one_of(names.iter().map(|name| (*name).to_owned()));
        assert_eq!(names(&["a"]), "a");
        assert_eq!(names(&["a", "b"]), "a or b");
        assert_eq!(names(&["a", "b", "c"]), "a, b or c");
    }
}
