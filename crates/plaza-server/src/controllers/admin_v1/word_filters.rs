//! `GET` and `POST /api/v1/admin/word-filters`, `DELETE
//! /api/v1/admin/word-filters/{id}` (DECISIONS.md "The front door (round
//! 5)"): the site's word filters, written or removed by an admin with the
//! audit entry in the same unit of work (`services::word_filters`), in
//! force on every instance within 5 s. A filter is one row written in one
//! statement, so these writes take no edit lock.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use plaza_domain::listing::Page;
use plaza_domain::time::rfc3339;
use plaza_domain::word_filters::{
    FilterAction, FilterScope, MAX_PHRASE_CHARS, NewWordFilter, WordFilter, is_findable,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::envelope::{Envelope, ListEnvelope};
use super::listing::ListQuery;
use crate::auth::{AdminToken, RequestAudit};
use crate::controllers::params::{Pagination, Problems, TextRule, check_text};
use crate::http::error::AppError;
use crate::http::error::schema::AdminV1Error;
use crate::http::extract::{AppJson, AppQuery, IdPath};
use crate::services::word_filters;
use crate::state::AppState;

/// A word filter.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WordFilterItem {
    #[schema(example = "3")]
    pub id: String,
    #[schema(example = "free crypto")]
    pub phrase: String,
    /// `block`, `hold` or `flag`.
    #[schema(example = "hold")]
    pub action: &'static str,
    /// Matches only where no letter or digit stands right before or after.
    pub whole_word: bool,
    /// What it applies to: a non-empty subset of `post`, `reply`,
    /// `username`, `profile`.
    #[schema(example = json!(["post", "reply"]))]
    pub applies_to: Vec<&'static str>,
    pub created_at: String,
    /// The id of the admin who added it; null once their account is deleted.
    #[schema(example = "1")]
    pub created_by: Option<String>,
}

impl From<&WordFilter> for WordFilterItem {
    fn from(filter: &WordFilter) -> Self {
        WordFilterItem {
            id: filter.id.to_string(),
            phrase: filter.phrase.clone(),
            action: filter.action.as_str(),
            whole_word: filter.whole_word,
            applies_to: filter
                .applies_to
                .iter()
                .map(|scope| scope.as_str())
                .collect(),
            created_at: rfc3339(filter.created_at),
            created_by: filter.created_by.map(|id| id.to_string()),
        }
    }
}

/// A new word filter. `whole_word` and `applies_to` are also read as
/// `wholeWord` and `appliesTo`.
#[derive(Deserialize, ToSchema)]
pub struct NewWordFilterBody {
    /// 1 to 100 characters, one line; compared case-insensitively after
    /// Unicode NFKC, without zero-width characters, with look-alike letters
    /// and the digits 0 1 3 4 5 read as Latin letters.
    #[schema(example = "free crypto")]
    pub phrase: Option<String>,
    /// `block` (the write is refused, 422 naming the field), `hold` (the
    /// post or reply is stored pending) or `flag` (stored, published and
    /// flagged into the moderation queue).
    #[schema(example = "hold")]
    pub action: Option<String>,
    /// Default true.
    #[serde(alias = "wholeWord")]
    pub whole_word: Option<bool>,
    /// A non-empty subset of `post`, `reply`, `username`, `profile`;
    /// default all four.
    #[serde(alias = "appliesTo")]
    #[schema(example = json!(["post", "reply"]))]
    pub applies_to: Option<Vec<String>>,
}

/// The filter `body` describes, or a 422 naming every bad field.
pub fn checked_filter(body: NewWordFilterBody) -> Result<NewWordFilter, AppError> {
    let mut problems = Problems::default();
    let phrase = match body.phrase {
        None => {
            problems.add("phrase", "is required");
            None
        }
        Some(phrase) => {
            let phrase = phrase.trim().to_owned();
            let checked =
                check_text(&phrase, MAX_PHRASE_CHARS, true, TextRule::Line).and_then(|()| {
                    is_findable(&phrase)
                        .then_some(())
                        .ok_or_else(|| "must hold a visible character".to_owned())
                });
            problems.check("phrase", checked).map(|()| phrase)
        }
    };
    let action = match body.action.as_deref() {
        None => {
            problems.add("action", "is required");
            None
        }
        Some(name) => problems.check(
            "action",
            FilterAction::parse(name).ok_or_else(|| "must be block, hold or flag".to_owned()),
        ),
    };
    let applies_to = match body.applies_to {
        None => FilterScope::ALL.to_vec(),
        Some(names) if names.is_empty() => {
            problems.add(
                "applies_to",
                "must name at least one of post, reply, username, profile",
            );
            Vec::new()
        }
        Some(names) => {
            let mut scopes = Vec::new();
            for (index, name) in names.iter().enumerate() {
                match FilterScope::parse(name) {
                    Some(scope) => scopes.push(scope),
                    None => problems.add(
                        format!("applies_to[{index}]"),
                        "must be post, reply, username or profile",
                    ),
                }
            }
            FilterScope::ALL
                .into_iter()
                .filter(|scope| scopes.contains(scope))
                .collect()
        }
    };
    problems.finish()?;
    match (phrase, action) {
        (Some(phrase), Some(action)) => Ok(NewWordFilter {
            phrase,
            action,
            whole_word: body.whole_word.unwrap_or(true),
            applies_to,
        }),
        _ => Err(AppError::invalid("phrase", "is required")),
    }
}

/// The filters, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/admin/word-filters",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:read"])),
    params(ListQuery),
    responses(
        (status = 200, description = "A page of filters, oldest first", body = ListEnvelope<WordFilterItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:read` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 422, description = "`limit` or `offset` is invalid", body = AdminV1Error),
    )
)]
pub async fn list_word_filters(
    State(state): State<AppState>,
    _admin: AdminToken,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<AppJson<ListEnvelope<WordFilterItem>>, AppError> {
    let page = query.page()?;
    let filters = state.db.word_filters().await?;
    let total = i64::try_from(filters.len()).unwrap_or(i64::MAX);
    Ok(AppJson(ListEnvelope::new(
        page_of(&filters, page)
            .iter()
            .map(WordFilterItem::from)
            .collect(),
        Pagination::new(total, page),
    )))
}

/// The part of `filters` (at most a thousand, read whole) that `page`
/// asks for.
fn page_of(filters: &[WordFilter], page: Page) -> &[WordFilter] {
    let start = usize::try_from(page.offset)
        .unwrap_or(usize::MAX)
        .min(filters.len());
    let end = start
        .saturating_add(usize::try_from(page.limit).unwrap_or(0))
        .min(filters.len());
    &filters[start..end]
}

/// Adds a filter (201); audited as `word_filter.create`. At most 1,000
/// filters exist: another is 409.
#[utoipa::path(
    post,
    path = "/api/v1/admin/word-filters",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:write"])),
    request_body = NewWordFilterBody,
    responses(
        (status = 201, description = "The filter, created", body = Envelope<WordFilterItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:write` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 409, description = "1,000 filters exist already (`CONFLICT`)", body = AdminV1Error),
        (status = 422, description = "A missing or bad phrase, action or applies_to (`VALIDATION_ERROR` naming the field)", body = AdminV1Error),
    )
)]
pub async fn create_word_filter(
    State(state): State<AppState>,
    admin: AdminToken,
    RequestAudit(context): RequestAudit,
    AppJson(body): AppJson<NewWordFilterBody>,
) -> Result<Response, AppError> {
    let new = checked_filter(body)?;
    let created =
        word_filters::create(&state.db, &state.word_filters, context, new, admin.user_id).await?;
    let envelope = Envelope::new(WordFilterItem::from(&created));
    Ok((StatusCode::CREATED, AppJson(envelope)).into_response())
}

/// Removes a filter and answers it as it was; audited as
/// `word_filter.delete`.
#[utoipa::path(
    delete,
    path = "/api/v1/admin/word-filters/{id}",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:delete"])),
    params(("id" = String, Path, description = "The filter's id (digits)", example = "3")),
    responses(
        (status = 200, description = "The filter, removed", body = Envelope<WordFilterItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:delete` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 404, description = "No such filter (`NOT_FOUND`)", body = AdminV1Error),
    )
)]
pub async fn delete_word_filter(
    State(state): State<AppState>,
    _admin: AdminToken,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
) -> Result<AppJson<Envelope<WordFilterItem>>, AppError> {
    let deleted = word_filters::delete(&state.db, &state.word_filters, context, id).await?;
    Ok(AppJson(Envelope::new(WordFilterItem::from(&deleted))))
}
