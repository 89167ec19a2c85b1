//! Graduated moderation on the versioned admin surface (DECISIONS.md
//! "Graduated moderation (round 5)"): replacing the site's rules, warning
//! and silencing members, and deciding appeals. Each change is the unit of
//! work the console's pages call too (`services::site_rules`,
//! `services::user_admin`), under the member's edit lock where it changes a
//! member, and its input is checked by the functions here that the console
//! calls too.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use plaza_domain::bans::BanLength;
use plaza_domain::moderation::appeals::AppealDecision;
use plaza_domain::moderation::warnings::{MAX_REASON_CHARS, MIN_REASON_CHARS};
use plaza_domain::moderation::{Appeal, AppealStatus, ModerationRecord, Warning, WarningOrder};
use plaza_domain::policy::Actor;
use plaza_domain::rules::{MAX_DESCRIPTION_CHARS, MAX_RULES, MAX_TITLE_CHARS, RuleDraft};
use plaza_domain::time::rfc3339;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::envelope::{Envelope, ListEnvelope};
use super::listing::ListQuery;
use super::users::{AdminUserDetail, BanTerms, detail};
use crate::auth::{AdminToken, RequestAudit};
use crate::controllers::moderation::{RuleList, RuleView, id_strings};
use crate::controllers::params::{self, Pagination, Problems, TextRule, check_text};
use crate::http::error::AppError;
use crate::http::error::schema::AdminV1Error;
use crate::http::extract::{AppJson, AppQuery, IdPath};
use crate::services::site_rules;
use crate::state::AppState;

fn actor(admin: &AdminToken) -> Actor {
    Actor {
        user_id: admin.user_id,
        role: admin.role,
    }
}

/// A rule as an administrator writes it.
#[derive(Deserialize, ToSchema)]
pub struct RuleInput {
    /// An existing rule's id keeps it (and what cites it); none adds one.
    #[schema(value_type = Option<String>, example = "1")]
    pub id: Option<serde_json::Value>,
    /// 1 to 200 characters.
    pub title: String,
    /// At most 2,000 characters.
    #[serde(default)]
    pub description: String,
}

/// The site's rules, replaced whole.
#[derive(Deserialize, ToSchema)]
pub struct RulesBody {
    /// In the order members read them, at most 100.
    pub rules: Vec<RuleInput>,
}

/// Replace the site's rules (in order). A rule left out is removed; its
/// id stays in what cited it.
#[utoipa::path(
    put,
    path = "/api/v1/admin/rules",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:write"])),
    request_body = RulesBody,
    responses(
        (status = 200, description = "The rules as now", body = Envelope<RuleList>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "No `admin:write`", body = AdminV1Error),
        (status = 422, description = "A bad title, description or id, or too many rules", body = AdminV1Error),
    )
)]
pub async fn put_rules(
    State(state): State<AppState>,
    _admin: AdminToken,
    RequestAudit(context): RequestAudit,
    AppJson(body): AppJson<RulesBody>,
) -> Result<AppJson<Envelope<RuleList>>, AppError> {
    let drafts = checked_rules(body.rules)?;
    let after = site_rules::replace(&state.db, context, drafts).await?;
    Ok(AppJson(Envelope::new(RuleList {
        rules: after.into_iter().map(RuleView::from).collect(),
    })))
}

/// The checked drafts of a list of rules, in order (422 naming every bad
/// field), as the API and the console's rules page take them.
pub fn checked_rules(rules: Vec<RuleInput>) -> Result<Vec<RuleDraft>, AppError> {
    let mut problems = Problems::default();
    if rules.len() > MAX_RULES {
        problems.add("rules", format!("must hold at most {MAX_RULES} rules"));
    }
    let mut drafts = Vec::with_capacity(rules.len());
    for rule in rules {
        let id = rule.id.as_ref().and_then(|raw| {
            let id = match raw {
                serde_json::Value::String(text) => crate::http::extract::parse_id(text),
                serde_json::Value::Number(number) => number.as_i64().filter(|id| *id > 0),
                serde_json::Value::Null => return None,
                _ => None,
            };
            if id.is_none() {
                problems.add("rules", "an id must be the id of a rule");
            }
            id
        });
        let title = rule.title.trim().to_owned();
        problems.check(
            "title",
            check_text(&title, MAX_TITLE_CHARS, true, TextRule::Line),
        );
        let description = rule.description.trim().to_owned();
        problems.check(
            "description",
            check_text(&description, MAX_DESCRIPTION_CHARS, false, TextRule::Lines),
        );
        drafts.push(RuleDraft {
            id,
            title,
            description,
        });
    }
    problems.finish()?;
    Ok(drafts)
}

/// A warning given to a member.
#[derive(Serialize, ToSchema)]
pub struct WarningView {
    #[schema(example = "2")]
    pub id: String,
    pub reason: String,
    pub rule_ids: Vec<String>,
    pub post_id: Option<String>,
    pub reply_id: Option<String>,
    pub created_at: String,
    /// The moderator's id; null once they are erased.
    pub created_by: Option<String>,
}

impl From<&Warning> for WarningView {
    fn from(warning: &Warning) -> Self {
        WarningView {
            id: warning.id.to_string(),
            reason: warning.reason.clone(),
            rule_ids: id_strings(&warning.rule_ids()),
            post_id: warning.post_id.map(|id| id.to_string()),
            reply_id: warning.reply_id.map(|id| id.to_string()),
            created_at: rfc3339(warning.created_at),
            created_by: warning.created_by.map(|id| id.to_string()),
        }
    }
}

/// A warning to give.
#[derive(Deserialize, ToSchema)]
pub struct WarningBody {
    /// 10 to 2,000 characters; shown to the member.
    pub reason: String,
    /// The site rules broken.
    #[serde(default)]
    #[schema(value_type = Option<Vec<String>>)]
    pub rule_ids: Vec<serde_json::Value>,
    /// The post the warning is about.
    #[schema(value_type = Option<String>)]
    pub post_id: Option<serde_json::Value>,
    /// The reply the warning is about.
    #[schema(value_type = Option<String>)]
    pub reply_id: Option<serde_json::Value>,
}

/// An optional id field of a body, checked.
fn optional_id(
    problems: &mut Problems,
    field: &str,
    raw: Option<&serde_json::Value>,
) -> Option<i64> {
    let raw = raw.filter(|raw| !raw.is_null())?;
    let id = match raw {
        serde_json::Value::String(text) => crate::http::extract::parse_id(text),
        serde_json::Value::Number(number) => number.as_i64().filter(|id| *id > 0),
        _ => None,
    };
    if id.is_none() {
        problems.add(field, "must be an id");
    }
    id
}

/// A moderator's reason of `min`..=`max` characters, checked.
pub fn reason_between(problems: &mut Problems, raw: &str, min: usize, max: usize) -> String {
    let reason = raw.trim().to_owned();
    if problems
        .check("reason", check_text(&reason, max, true, TextRule::Lines))
        .is_some()
        && reason.chars().count() < min
    {
        problems.add("reason", format!("must be at least {min} characters"));
    }
    reason
}

/// The checked order of a warning body.
pub fn warning_order(body: WarningBody) -> Result<WarningOrder, AppError> {
    let mut problems = Problems::default();
    let reason = reason_between(
        &mut problems,
        &body.reason,
        MIN_REASON_CHARS,
        MAX_REASON_CHARS,
    );
    let rule_ids = params::rule_ids(&mut problems, "rule_ids", &body.rule_ids);
    let post_id = optional_id(&mut problems, "post_id", body.post_id.as_ref());
    let reply_id = optional_id(&mut problems, "reply_id", body.reply_id.as_ref());
    problems.finish()?;
    Ok(WarningOrder {
        reason,
        rule_ids,
        post_id,
        reply_id,
    })
}

/// Warn a member: they get a `warning` notification with the reason, and
/// the warning counts in their `warningCount`.
#[utoipa::path(
    post,
    path = "/api/v1/admin/users/{userId}/warnings",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:write"])),
    params(("userId" = String, Path, description = "User id (digits)", example = "2")),
    request_body = WarningBody,
    responses(
        (status = 201, description = "The warning", body = Envelope<WarningView>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "No `admin:write`, or the policy forbids it (only members of a lower role, never oneself)", body = AdminV1Error),
        (status = 404, description = "No such user", body = AdminV1Error),
        (status = 422, description = "A bad reason, id, or rule_ids naming no rule", body = AdminV1Error),
        (status = 423, description = "Another admin is changing this user (`RESOURCE_LOCKED`)", body = AdminV1Error),
    )
)]
pub async fn warn_user(
    State(state): State<AppState>,
    admin: AdminToken,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppJson(body): AppJson<WarningBody>,
) -> Result<Response, AppError> {
    let order = warning_order(body)?;
    let (warning, _) = state
        .user_admin()
        .warn_user(context, actor(&admin), id, order)
        .await?;
    Ok((
        StatusCode::CREATED,
        AppJson(Envelope::new(WarningView::from(&warning))),
    )
        .into_response())
}

/// A member's warnings that count, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/admin/users/{userId}/warnings",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:read"])),
    params(("userId" = String, Path, description = "User id (digits)", example = "2")),
    responses(
        (status = 200, description = "The warnings", body = ListEnvelope<WarningView>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "No `admin:read`", body = AdminV1Error),
        (status = 404, description = "No such user", body = AdminV1Error),
    )
)]
pub async fn list_warnings(
    State(state): State<AppState>,
    _admin: AdminToken,
    IdPath(id): IdPath,
) -> Result<AppJson<ListEnvelope<WarningView>>, AppError> {
    state.db.user_by_id(id).await?;
    let warnings = state.db.warnings_of(id).await?;
    let total = i64::try_from(warnings.len()).unwrap_or(i64::MAX);
    let page = plaza_domain::listing::Page {
        limit: total.max(1),
        offset: 0,
    };
    Ok(AppJson(ListEnvelope::new(
        warnings.iter().map(WarningView::from).collect(),
        Pagination::new(total, page),
    )))
}

/// Silence terms.
#[derive(Deserialize, ToSchema)]
pub struct SilenceBody {
    /// A number and a unit of `m`, `h`, `d`, `w`, `y`, or `permanent`
    /// (the default), as for bans.
    #[schema(example = "7d")]
    pub duration: Option<String>,
    /// Why (required, at most 1000 characters); shown to the member.
    pub reason: Option<String>,
}

/// The checked reason (required, at most 1,000 characters) and length
/// (as a ban's; none given: permanent) of a silence.
pub fn silence_terms(
    reason: Option<String>,
    duration: Option<&str>,
) -> Result<(String, BanLength), AppError> {
    let mut problems = Problems::default();
    let terms = BanTerms::check(&mut problems, reason, duration, None, true);
    problems.finish()?;
    Ok((terms.reason.unwrap_or_default(), terms.length))
}

/// Silence a member: they may sign in and read, their new posts and
/// replies wait for a moderator, and their reactions, follows and mentions
/// notify nobody, until it ends.
#[utoipa::path(
    post,
    path = "/api/v1/admin/users/{userId}/silence",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:write"])),
    params(("userId" = String, Path, description = "User id (digits)", example = "2")),
    request_body = SilenceBody,
    responses(
        (status = 200, description = "The user, `silencedUntil` set", body = Envelope<AdminUserDetail>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "No `admin:write`, or the policy forbids it (only members of a lower role, never oneself)", body = AdminV1Error),
        (status = 404, description = "No such user", body = AdminV1Error),
        (status = 422, description = "A missing reason or a bad duration", body = AdminV1Error),
        (status = 423, description = "Another admin is changing this user (`RESOURCE_LOCKED`)", body = AdminV1Error),
    )
)]
pub async fn silence_user(
    State(state): State<AppState>,
    admin: AdminToken,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppJson(body): AppJson<SilenceBody>,
) -> Result<AppJson<Envelope<AdminUserDetail>>, AppError> {
    let (reason, length) = silence_terms(body.reason, body.duration.as_deref())?;
    let (user, _, _) = state
        .user_admin()
        .silence_user(context, actor(&admin), id, reason, length)
        .await?;
    Ok(AppJson(Envelope::new(detail(&state, &user).await?)))
}

/// Lift a member's silence.
#[utoipa::path(
    delete,
    path = "/api/v1/admin/users/{userId}/silence",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:delete"])),
    params(("userId" = String, Path, description = "User id (digits)", example = "2")),
    responses(
        (status = 200, description = "The user, `silencedUntil` null", body = Envelope<AdminUserDetail>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "No `admin:delete`, or the policy forbids it", body = AdminV1Error),
        (status = 404, description = "No such user", body = AdminV1Error),
        (status = 409, description = "The user is not silenced", body = AdminV1Error),
        (status = 423, description = "Another admin is changing this user (`RESOURCE_LOCKED`)", body = AdminV1Error),
    )
)]
pub async fn unsilence_user(
    State(state): State<AppState>,
    admin: AdminToken,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
) -> Result<AppJson<Envelope<AdminUserDetail>>, AppError> {
    let (user, _) = state
        .user_admin()
        .unsilence_user(context, actor(&admin), id, None)
        .await?;
    Ok(AppJson(Envelope::new(detail(&state, &user).await?)))
}

/// The action an appeal contests.
#[derive(Serialize, ToSchema)]
pub struct AppealedAction {
    pub id: String,
    pub action: &'static str,
    pub target_type: &'static str,
    pub target_id: String,
    pub reason: String,
    pub rule_ids: Vec<String>,
    pub created_at: String,
    /// Whether a `reverse` action undid it.
    pub reversed: bool,
    /// Who took it (null when automated or erased): someone else decides.
    pub moderator_id: Option<String>,
}

/// An appeal with the action it contests.
#[derive(Serialize, ToSchema)]
pub struct AdminAppeal {
    pub id: String,
    pub moderation_action_id: String,
    pub user_id: String,
    /// The member's text.
    pub text: String,
    /// `open` or `decided`.
    pub status: String,
    pub created_at: String,
    /// `uphold` or `reverse`; null while open.
    pub decision: Option<String>,
    pub decision_reason: Option<String>,
    pub decided_at: Option<String>,
    pub action: AppealedAction,
}

impl AdminAppeal {
    pub fn new(appeal: &Appeal, action: &ModerationRecord) -> Self {
        AdminAppeal {
            id: appeal.id.to_string(),
            moderation_action_id: appeal.moderation_action_id.to_string(),
            user_id: appeal.user_id.to_string(),
            text: appeal.text.clone(),
            status: appeal.status.clone(),
            created_at: rfc3339(appeal.created_at),
            decision: appeal.decision.clone(),
            decision_reason: appeal.decision_reason.clone(),
            decided_at: appeal.decided_at.map(rfc3339),
            action: AppealedAction {
                id: action.id.to_string(),
                action: action.action.as_str(),
                target_type: action.target_type.as_str(),
                target_id: action.target_id.to_string(),
                reason: action.reason.clone(),
                rule_ids: id_strings(&action.rule_ids()),
                created_at: rfc3339(action.created_at),
                reversed: action.reversed.0,
                moderator_id: action.moderator_id.map(|id| id.to_string()),
            },
        }
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AppealQuery {
    /// `open` (oldest first) or `decided` (newest first); all by default.
    pub status: Option<String>,
}

/// Appeals, each beside the action it contests.
#[utoipa::path(
    get,
    path = "/api/v1/admin/appeals",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:read"])),
    params(AppealQuery, ListQuery),
    responses(
        (status = 200, description = "A page of appeals", body = ListEnvelope<AdminAppeal>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "No `admin:read`", body = AdminV1Error),
        (status = 422, description = "A bad status, limit or offset", body = AdminV1Error),
    )
)]
pub async fn list_appeals(
    State(state): State<AppState>,
    _admin: AdminToken,
    AppQuery(query): AppQuery<AppealQuery>,
    AppQuery(list): AppQuery<ListQuery>,
) -> Result<AppJson<ListEnvelope<AdminAppeal>>, AppError> {
    let mut problems = Problems::default();
    let status = query.status.as_deref().and_then(|raw| {
        problems.check(
            "status",
            AppealStatus::parse(raw).ok_or_else(|| "must be open or decided".to_owned()),
        )
    });
    let page = list.check(&mut problems).page;
    problems.finish()?;
    let found = state.db.appeals(status, page.limit, page.offset).await?;
    Ok(AppJson(ListEnvelope::new(
        found
            .appeals
            .iter()
            .map(|(appeal, action)| AdminAppeal::new(appeal, action))
            .collect(),
        Pagination::new(found.total, page),
    )))
}

/// A decision on an appeal.
#[derive(Deserialize, ToSchema)]
pub struct AppealDecisionBody {
    /// `uphold` (the action stands) or `reverse` (undone).
    #[schema(example = "reverse")]
    pub decision: String,
    /// Why (1 to 2,000 characters); shown to the member.
    pub reason: String,
}

/// The checked decision of a body.
pub fn appeal_decision(body: AppealDecisionBody) -> Result<(AppealDecision, String), AppError> {
    let mut problems = Problems::default();
    let decision = problems.check(
        "decision",
        AppealDecision::parse(&body.decision).ok_or_else(|| "must be uphold or reverse".to_owned()),
    );
    let reason = reason_between(&mut problems, &body.reason, 1, MAX_REASON_CHARS);
    problems.finish()?;
    Ok((decision.unwrap_or(AppealDecision::Uphold), reason))
}

/// Decide an appeal: someone other than who took the action. `reverse`
/// undoes it (unhide, restore, unban, lift the silence, withdraw the
/// warning) and records a `reverse` action; the member gets an `appeal`
/// notification.
#[utoipa::path(
    post,
    path = "/api/v1/admin/appeals/{appealId}",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:write"])),
    params(("appealId" = String, Path, description = "Appeal id (digits)", example = "1")),
    request_body = AppealDecisionBody,
    responses(
        (status = 200, description = "The appeal, decided", body = Envelope<AdminAppeal>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "No `admin:write`, or the caller took the action appealed", body = AdminV1Error),
        (status = 404, description = "No such appeal, or the item to undo is gone", body = AdminV1Error),
        (status = 409, description = "The appeal is decided already, or the action cannot be undone", body = AdminV1Error),
        (status = 422, description = "A bad decision or reason", body = AdminV1Error),
    )
)]
pub async fn decide_appeal(
    State(state): State<AppState>,
    admin: AdminToken,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppJson(body): AppJson<AppealDecisionBody>,
) -> Result<AppJson<Envelope<AdminAppeal>>, AppError> {
    let (decision, reason) = appeal_decision(body)?;
    state
        .user_admin()
        .decide_appeal(context, actor(&admin), id, decision, reason)
        .await?;
    let (appeal, action) = state.db.appeal(id).await?;
    Ok(AppJson(Envelope::new(AdminAppeal::new(&appeal, &action))))
}
