//! Graduated moderation on the general surface (DECISIONS.md "Graduated
//! moderation (round 5)"): the site's rules, the moderation actions
//! affecting the caller with their statements of reasons, appeals (signed
//! in, or with the token a ban mail carries, also through the page its
//! link opens, `/appeal`), the public moderation log (no moderator named;
//! 404 when the `public_modlog` setting is off) and reports on members. The versioned admin surface's side is
//! `admin_v1::moderation`.

use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use base64::Engine;
use plaza_domain::moderation::actions::MAX_PAGE;
use plaza_domain::moderation::appeals::{self, MAX_TEXT_CHARS, MIN_TEXT_CHARS, TokenState};
use plaza_domain::moderation::{Appeal, ModerationRecord};
use plaza_domain::policy::{self, Actor};
use plaza_domain::reports::ReportTarget;
use plaza_domain::rules::Rule;
use plaza_domain::time::{now_millis, rfc3339};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;

use crate::auth::{CurrentUser, authorize, csrf};
use crate::controllers::auth::is_form;
use crate::controllers::params::{self, Problems, TextRule, check_text};
use crate::controllers::posts::{ReportBody, ReportView, file_report};
use crate::http::error::AppError;
use crate::http::error::schema::GeneralError;
use crate::http::extract::{AppForm, AppJson, AppQuery, IdPath};
use crate::http::pages::{self, AppealPage};
use crate::secrets::hash_token;
use crate::state::AppState;

/// Actions on a page when no `limit` is asked for.
const DEFAULT_PAGE: i64 = 50;

/// Routes anyone may call: the rules, the public log, reports on members,
/// and appeals by a mailed token.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(list_rules))
        .routes(crate::documented_routes!(modlog))
        .routes(crate::documented_routes!(report_user))
        .routes(crate::documented_routes!(appeal_by_token))
        .routes(crate::documented_routes!(appeal_page, appeal_form))
}

/// Routes that answer the caller's own moderation record.
pub fn own_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(my_actions))
        .routes(crate::documented_routes!(appeal))
}

/// One rule of the site.
#[derive(Serialize, ToSchema)]
pub struct RuleView {
    #[schema(example = "1")]
    pub id: String,
    pub title: String,
    pub description: String,
}

impl From<Rule> for RuleView {
    fn from(rule: Rule) -> Self {
        RuleView {
            id: rule.id.to_string(),
            title: rule.title,
            description: rule.description,
        }
    }
}

/// The site's rules, in order.
#[derive(Serialize, ToSchema)]
pub struct RuleList {
    pub rules: Vec<RuleView>,
}

/// The site's rules, in the order members read them.
#[utoipa::path(
    get,
    path = "/api/rules",
    tag = "moderation",
    responses((status = 200, description = "The rules", body = RuleList))
)]
pub async fn list_rules(State(state): State<AppState>) -> Result<AppJson<RuleList>, AppError> {
    let rules = state.db.rules().await?;
    Ok(AppJson(RuleList {
        rules: rules.into_iter().map(RuleView::from).collect(),
    }))
}

/// Ids as the general surface writes them.
pub fn id_strings(ids: &[i64]) -> Vec<String> {
    ids.iter().map(i64::to_string).collect()
}

/// A moderation action with its statement of reasons.
#[derive(Serialize, ToSchema)]
pub struct ActionView {
    #[schema(example = "3")]
    pub id: String,
    /// `hide`, `delete`, `flag`, `lock`, `ban`, `silence`, `warning`, or
    /// `reverse` (undoing another action).
    #[schema(example = "hide")]
    pub action: &'static str,
    /// `post`, `reply` or `user`.
    pub target_type: &'static str,
    pub target_id: String,
    /// The statement of reasons.
    pub reason: String,
    pub rule_ids: Vec<String>,
    pub created_at: String,
    /// When a timed ban or silence ends; null otherwise.
    pub expires_at: Option<String>,
    /// True for what a word filter did.
    pub automated: bool,
    /// Whether a `reverse` action undid it.
    pub reversed: bool,
    /// The action a `reverse` undoes; null otherwise.
    pub reverses_id: Option<String>,
}

impl From<&ModerationRecord> for ActionView {
    fn from(record: &ModerationRecord) -> Self {
        ActionView {
            id: record.id.to_string(),
            action: record.action.as_str(),
            target_type: record.target_type.as_str(),
            target_id: record.target_id.to_string(),
            reason: record.reason.clone(),
            rule_ids: id_strings(&record.rule_ids()),
            created_at: rfc3339(record.created_at),
            expires_at: record.expires_at.map(rfc3339),
            automated: record.automated.0,
            reversed: record.reversed.0,
            reverses_id: record.reverses_id.map(|id| id.to_string()),
        }
    }
}

/// A page of the actions affecting the caller.
#[derive(Serialize, ToSchema)]
pub struct ActionList {
    pub actions: Vec<ActionView>,
    /// Give it as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// A page of a list read newest first.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CursorQuery {
    /// 1 to 100, default 50.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// The `next_cursor` of the previous page (opaque).
    pub cursor: Option<String>,
}

fn encode_cursor(id: i64) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id.to_string())
}

fn decode_cursor(raw: &str) -> Result<i64, String> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(raw)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| "must be a next_cursor of this list".to_owned())
}

/// The limit and cursor of a page, checked (422 naming each bad one).
fn page_of(query: &CursorQuery) -> Result<(i64, Option<i64>), AppError> {
    let mut problems = Problems::default();
    let limit = params::limit(&mut problems, query.limit.as_deref(), DEFAULT_PAGE).min(MAX_PAGE);
    let before = query
        .cursor
        .as_deref()
        .and_then(|raw| problems.check("cursor", decode_cursor(raw)));
    problems.finish()?;
    Ok((limit, before))
}

/// The moderation actions affecting the caller (on their content or
/// account), newest first, each with its statement of reasons.
#[utoipa::path(
    get,
    path = "/api/me/moderation-actions",
    tag = "moderation",
    params(CursorQuery),
    responses(
        (status = 200, description = "A page of actions", body = ActionList),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 422, description = "A bad `limit` or `cursor`", body = GeneralError),
    )
)]
pub async fn my_actions(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    AppQuery(query): AppQuery<CursorQuery>,
) -> Result<AppJson<ActionList>, AppError> {
    let (limit, before) = page_of(&query)?;
    let page = state
        .db
        .moderation_actions(Some(caller.user_id()), before, limit)
        .await?;
    Ok(AppJson(ActionList {
        actions: page.actions.iter().map(ActionView::from).collect(),
        next_cursor: page.next.map(encode_cursor),
    }))
}

/// An entry of the public moderation log: the action without who took it.
#[derive(Serialize, ToSchema)]
pub struct ModlogEntry {
    #[schema(example = "3")]
    pub id: String,
    #[schema(example = "hide")]
    pub action: &'static str,
    pub target_type: &'static str,
    pub target_id: String,
    pub reason: String,
    pub rule_ids: Vec<String>,
    pub created_at: String,
    pub reversed: bool,
}

/// A page of the public moderation log.
#[derive(Serialize, ToSchema)]
pub struct ModlogPage {
    pub entries: Vec<ModlogEntry>,
    /// Give it as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// The public moderation log: every moderation action, newest first,
/// without the moderator's identity. Served while the `public_modlog`
/// setting is on; 404 otherwise.
#[utoipa::path(
    get,
    path = "/api/modlog",
    tag = "moderation",
    params(CursorQuery),
    responses(
        (status = 200, description = "A page of the log", body = ModlogPage),
        (status = 404, description = "The public moderation log is off", body = GeneralError),
        (status = 422, description = "A bad `limit` or `cursor`", body = GeneralError),
    )
)]
pub async fn modlog(
    State(state): State<AppState>,
    AppQuery(query): AppQuery<CursorQuery>,
) -> Result<AppJson<ModlogPage>, AppError> {
    if !state.front_door.settings().public_modlog() {
        return Err(AppError::NotFound("moderation log"));
    }
    let (limit, before) = page_of(&query)?;
    let page = state.db.moderation_actions(None, before, limit).await?;
    Ok(AppJson(ModlogPage {
        entries: page
            .actions
            .iter()
            .map(|record| ModlogEntry {
                id: record.id.to_string(),
                action: record.action.as_str(),
                target_type: record.target_type.as_str(),
                target_id: record.target_id.to_string(),
                reason: record.reason.clone(),
                rule_ids: id_strings(&record.rule_ids()),
                created_at: rfc3339(record.created_at),
                reversed: record.reversed.0,
            })
            .collect(),
        next_cursor: page.next.map(encode_cursor),
    }))
}

/// An appeal as its member sees it.
#[derive(Serialize, ToSchema)]
pub struct AppealView {
    #[schema(example = "4")]
    pub id: String,
    pub moderation_action_id: String,
    pub text: String,
    /// `open` or `decided`.
    pub status: String,
    pub created_at: String,
    /// `uphold` or `reverse`; null while open.
    pub decision: Option<String>,
    pub decided_at: Option<String>,
}

impl From<&Appeal> for AppealView {
    fn from(appeal: &Appeal) -> Self {
        AppealView {
            id: appeal.id.to_string(),
            moderation_action_id: appeal.moderation_action_id.to_string(),
            text: appeal.text.clone(),
            status: appeal.status.clone(),
            created_at: rfc3339(appeal.created_at),
            decision: appeal.decision.clone(),
            decided_at: appeal.decided_at.map(rfc3339),
        }
    }
}

/// A member's appeal of an action affecting them.
#[derive(Deserialize, ToSchema)]
pub struct AppealBody {
    /// The action's id (from `GET /api/me/moderation-actions`).
    #[schema(value_type = String, example = "3")]
    pub moderation_action_id: serde_json::Value,
    /// Why the action was wrong, 10 to 2,000 characters.
    pub text: String,
}

/// An appeal's text, checked (10 to 2,000 characters).
fn appeal_text(problems: &mut Problems, text: &str) -> String {
    let text = text.trim();
    let readable = problems
        .check(
            "text",
            check_text(text, MAX_TEXT_CHARS, true, TextRule::Lines),
        )
        .is_some();
    if readable && text.chars().count() < MIN_TEXT_CHARS {
        problems.add(
            "text",
            format!("must be at least {MIN_TEXT_CHARS} characters"),
        );
    }
    text.to_owned()
}

/// Files `actor`'s appeal of `action_id`.
async fn file_appeal(
    state: &AppState,
    actor: Actor,
    action_id: i64,
    text: String,
) -> Result<Response, AppError> {
    let window = state.settings.moderation.appeal_window_millis();
    let appeal = state
        .db
        .write(move |tx| Box::pin(appeals::file(tx, actor, action_id, text, window)))
        .await?;
    Ok((StatusCode::CREATED, AppJson(AppealView::from(&appeal))).into_response())
}

/// Appeal a moderation action affecting the caller, once, within the
/// appeal window (`appeal_window_days`, 30 by default). Someone other than
/// who took the action decides.
#[utoipa::path(
    post,
    path = "/api/me/appeals",
    tag = "moderation",
    request_body = AppealBody,
    responses(
        (status = 201, description = "Appealed", body = AppealView),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 404, description = "No such action affecting the caller", body = GeneralError),
        (status = 409, description = "The action is appealed already", body = GeneralError),
        (status = 422, description = "A bad `text` or `moderation_action_id`, a reversal, or the appeal window is over", body = GeneralError),
    )
)]
pub async fn appeal(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    AppJson(body): AppJson<AppealBody>,
) -> Result<Response, AppError> {
    let mut problems = Problems::default();
    let action_id = match &body.moderation_action_id {
        serde_json::Value::String(text) => crate::http::extract::parse_id(text),
        serde_json::Value::Number(number) => number.as_i64().filter(|id| *id > 0),
        _ => None,
    };
    if action_id.is_none() {
        problems.add(
            "moderation_action_id",
            "must be the id of a moderation action",
        );
    }
    let text = appeal_text(&mut problems, &body.text);
    problems.finish()?;
    file_appeal(&state, caller.actor(), action_id.unwrap_or_default(), text).await
}

/// An appeal with the token of a ban mail's link.
#[derive(Deserialize, ToSchema)]
pub struct TokenAppealBody {
    /// The `token` of the link `{base_url}/appeal?token=…`.
    pub token: String,
    /// Why the ban was wrong, 10 to 2,000 characters.
    pub text: String,
}

/// Appeal a ban without a session, with the token of the link the ban
/// mail carried (works within the appeal window, once).
#[utoipa::path(
    post,
    path = "/api/appeals",
    tag = "moderation",
    request_body = TokenAppealBody,
    responses(
        (status = 201, description = "Appealed", body = AppealView),
        (status = 400, description = "The token is unknown or its time is over", body = GeneralError),
        (status = 409, description = "The ban is appealed already", body = GeneralError),
        (status = 422, description = "A bad `text`", body = GeneralError),
    )
)]
pub async fn appeal_by_token(
    State(state): State<AppState>,
    AppJson(body): AppJson<TokenAppealBody>,
) -> Result<Response, AppError> {
    let appeal = appeal_with_token(&state, &body.token, &body.text)
        .await?
        .ok_or_else(|| AppError::BadRequest("the link is invalid or expired".to_owned()))?;
    Ok((StatusCode::CREATED, AppJson(AppealView::from(&appeal))).into_response())
}

/// Files the appeal a ban mail's `token` allows with `text` (checked: 422
/// `text`), as `POST /api/appeals` and the page `/appeal` do; `None` when
/// the token is unknown or has run out.
async fn appeal_with_token(
    state: &AppState,
    token: &str,
    text: &str,
) -> Result<Option<Appeal>, AppError> {
    let mut problems = Problems::default();
    let text = appeal_text(&mut problems, text);
    problems.finish()?;
    let token_hash = hash_token(token.trim());
    let window = state.settings.moderation.appeal_window_millis();
    Ok(state
        .db
        .write(move |tx| {
            Box::pin(async move { appeals::file_by_token(tx, &token_hash, text, window).await })
        })
        .await?)
}

/// Report a member to the moderators (once per reporter and member).
#[utoipa::path(
    post,
    path = "/api/users/{id}/report",
    tag = "moderation",
    params(("id" = String, Path, description = "User id (digits)", example = "2")),
    request_body = ReportBody,
    responses(
        (status = 201, description = "Reported", body = ReportView),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 404, description = "No such user, or not one the caller may see", body = GeneralError),
        (status = 409, description = "Already reported by the caller", body = GeneralError),
        (status = 422, description = "The caller themself (`id`), a missing or overlong reason, an unknown category, or rule_ids naming no rule of the site", body = GeneralError),
    )
)]
pub async fn report_user(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    IdPath(id): IdPath,
    AppJson(body): AppJson<ReportBody>,
) -> Result<Response, AppError> {
    if id == caller.user_id() {
        return Err(AppError::invalid("id", "one does not report oneself"));
    }
    let target = state.db.user_by_id(id).await?;
    authorize(policy::view_user(Some(caller.actor()), &target), "user")?;
    let report = file_report(&state, ReportTarget::User, id, caller.user_id(), body).await?;
    Ok((
        StatusCode::CREATED,
        AppJson(ReportView::new(&report, ReportTarget::User)),
    )
        .into_response())
}

/// The appeal page's query.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AppealPageQuery {
    /// The token of the ban mail's link.
    pub token: Option<String>,
    /// What went wrong with the last post: `text` (too short or too long)
    /// or `expired`.
    pub error: Option<String>,
    /// Present once the appeal is sent.
    pub sent: Option<String>,
}

/// The page a ban mail's link opens (`{base_url}/appeal?token=T`): a form
/// for the appeal's text while the token may appeal, otherwise why not
/// (the link is not valid, has expired, or the ban is appealed already).
/// No session is needed: the member is banned.
#[utoipa::path(
    get,
    path = "/appeal",
    tag = "moderation",
    params(AppealPageQuery),
    responses((status = 200, description = "HTML page", content_type = "text/html", body = String))
)]
pub async fn appeal_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    AppQuery(query): AppQuery<AppealPageQuery>,
) -> Result<Response, AppError> {
    let (csrf_token, cookie) = csrf::token_for(&state.settings.server, &headers);
    let days = state.settings.moderation.appeal_window_days;
    let token = query
        .token
        .as_deref()
        .map(str::trim)
        .filter(|token| !token.is_empty());
    let shown = match (query.sent.is_some(), token) {
        (true, _) => AppealPage::Sent,
        (false, None) => AppealPage::Unknown,
        (false, Some(_)) if query.error.as_deref() == Some("expired") => {
            AppealPage::Expired { days }
        }
        (false, Some(token)) => match state
            .db
            .appeal_token_state(&hash_token(token), now_millis())
            .await?
        {
            TokenState::Unknown => AppealPage::Unknown,
            TokenState::Expired => AppealPage::Expired { days },
            TokenState::Used => AppealPage::Used,
            TokenState::Usable => AppealPage::Form {
                token,
                error: query.error.as_deref().filter(|code| *code == "text"),
            },
        },
    };
    let mut response = pages::private(
        StatusCode::OK,
        pages::appeal(&state.settings.server, &csrf_token, shown),
    );
    if let Some(cookie) = cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    Ok(response)
}

/// The appeal page's form.
#[derive(Deserialize, ToSchema)]
pub struct AppealForm {
    /// The token of the ban mail's link.
    #[serde(default)]
    pub token: String,
    /// Why the ban was wrong, 10 to 2,000 characters.
    #[serde(default)]
    pub text: String,
    /// The token of the page's `plaza_csrf` cookie.
    #[serde(rename = "csrfToken")]
    pub csrf_token: Option<String>,
}

/// The appeal page's form post: files the appeal as `POST /api/appeals`
/// does, then back to the page, which shows the outcome (sent, a text to
/// fix, or why the link takes no appeal).
#[utoipa::path(
    post,
    path = "/appeal",
    tag = "moderation",
    request_body(content = AppealForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "To the page `/appeal`, with the outcome"),
        (status = 403, description = "Without a valid CSRF token", body = GeneralError),
    )
)]
pub async fn appeal_form(
    State(state): State<AppState>,
    request: Request,
) -> Result<Response, AppError> {
    let headers = request.headers().clone();
    if !is_form(&headers) {
        return Err(AppError::UnsupportedMediaType(
            "expected application/x-www-form-urlencoded".to_owned(),
        ));
    }
    let AppForm(form) = AppForm::<AppealForm>::from_request(request, &state).await?;
    csrf::Presented::from_headers(&state.settings.server, &headers)
        .check(form.csrf_token.as_deref())?;
    let back = |error: Option<&str>| {
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        query.append_pair("token", form.token.trim());
        if let Some(error) = error {
            query.append_pair("error", error);
        }
        Redirect::to(&format!("/appeal?{}", query.finish())).into_response()
    };
    Ok(
        match appeal_with_token(&state, &form.token, &form.text).await {
            Ok(Some(_)) => Redirect::to("/appeal?sent=1").into_response(),
            // The page tells an unknown link from an expired or used one.
            Ok(None) | Err(AppError::Conflict(_)) => back(None),
            Err(AppError::Validation { .. }) => back(Some("text")),
            // The appeal window closed before the token ran out.
            Err(AppError::BrokenRule { .. }) => back(Some("expired")),
            Err(other) => return Err(other),
        },
    )
}
