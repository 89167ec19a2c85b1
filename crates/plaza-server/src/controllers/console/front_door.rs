//! The console's front door (administrators): the site settings (changed
//! by super administrators), the registrations awaiting approval with
//! their applications, the email-domain blocks and the IP blocks, each a
//! page with its forms. The fields are checked as their versioned admin API
//! twins check their bodies, and the writes are the same units of work
//! (`services::front_door_changes`).

use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use plaza_domain::listing::Page;
use plaza_domain::policy;
use serde::Deserialize;
use serde_json::json;

use super::page::{ConsoleUser, page, page_number};
use crate::auth::{RequestAudit, authorize};
use crate::controllers::admin_v1::email_domain_blocks::{self, EmailDomainBlockItem};
use crate::controllers::admin_v1::ip_blocks::{self, IpBlockBody, IpBlockItem};
use crate::controllers::admin_v1::registrations::{RegistrationItem, checked_decision};
use crate::controllers::admin_v1::site_settings::{
    SiteSettingsBody, SiteSettingsItem, checked_changes,
};
use crate::controllers::params::Problems;
use crate::http::error::AppError;
use crate::http::extract::{AppForm, AppQuery, IdPath};
use crate::state::AppState;

/// Items per page of a list.
const PAGE_SIZE: i64 = 50;

#[derive(Deserialize)]
pub struct ListQuery {
    page: Option<String>,
    /// What was just done, to confirm it.
    done: Option<String>,
}

/// The page asked for, as a domain page.
fn page_of(query: &ListQuery) -> Result<(i64, Page), AppError> {
    let mut problems = Problems::default();
    let number = page_number(&mut problems, query.page.as_deref());
    problems.finish()?;
    Ok((
        number,
        Page {
            limit: PAGE_SIZE,
            offset: (number - 1) * PAGE_SIZE,
        },
    ))
}

/// The links to the pages around page `number` of `total` items.
fn pages(number: i64, total: i64) -> serde_json::Value {
    json!({
        "previous_page": (number > 1).then_some(number - 1),
        "next_page": (number * PAGE_SIZE < total).then_some(number + 1),
    })
}

/// `GET /admin/site-settings`: the settings, with their form for super
/// administrators.
pub async fn settings(
    State(state): State<AppState>,
    user: ConsoleUser,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<Response, AppError> {
    authorize(policy::guard_front_door(user.actor()), "site settings")?;
    let stored = state.db.site_settings().await?;
    let done = match query.done.as_deref() {
        Some("saved") => Some("The settings are saved; every instance has them within 5 s."),
        _ => None,
    };
    page(
        &state,
        &user,
        "site-settings",
        "site_settings.html",
        json!({
            "settings": SiteSettingsItem::new(&stored, state.front_door.file_defaults()),
            "may_change": policy::change_site_settings(user.actor()).is_allowed(),
            "modes": ["open", "approval", "invite", "closed"],
            "done": done,
        }),
    )
}

/// The settings form: checkboxes are absent when unticked.
#[derive(Deserialize)]
pub struct SettingsForm {
    #[serde(rename = "csrfToken")]
    csrf_token: Option<String>,
    #[serde(rename = "registrationMode")]
    registration_mode: Option<String>,
    #[serde(rename = "registrationQuestion")]
    registration_question: Option<String>,
    #[serde(rename = "invitesByMembers")]
    invites_by_members: Option<String>,
    #[serde(rename = "newAccountHoldCount")]
    new_account_hold_count: Option<String>,
    #[serde(rename = "publicModlog")]
    public_modlog: Option<String>,
}

/// `POST /admin/site-settings`: changes the settings (super
/// administrators), audited as `site_settings.update`.
pub async fn save_settings(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    AppForm(form): AppForm<SettingsForm>,
) -> Result<Response, AppError> {
    user.check_form_token(form.csrf_token.as_deref())?;
    authorize(policy::change_site_settings(user.actor()), "site settings")?;
    let hold = match form.new_account_hold_count.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(raw) => Some(raw.parse::<i64>().map_err(|_| {
            AppError::invalid("newAccountHoldCount", "must be a whole number from 0 to 50")
        })?),
    };
    let changes = checked_changes(SiteSettingsBody {
        registration_mode: form.registration_mode,
        registration_question: Some(form.registration_question),
        invites_by_members: Some(form.invites_by_members.as_deref() == Some("true")),
        new_account_hold_count: hold,
        public_modlog: Some(form.public_modlog.as_deref() == Some("true")),
    })?;
    state
        .front_door_changes()
        .update_settings(context, changes, user.actor().user_id)
        .await?;
    Ok(Redirect::to("/admin/site-settings?done=saved").into_response())
}

/// `GET /admin/registrations`: the sign-ups awaiting approval, oldest
/// first, each with its application and the decision's form.
pub async fn registrations(
    State(state): State<AppState>,
    user: ConsoleUser,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<Response, AppError> {
    authorize(policy::guard_front_door(user.actor()), "registration")?;
    let (number, page_asked) = page_of(&query)?;
    let found = state.db.pending_registrations(page_asked).await?;
    let items: Vec<RegistrationItem> = found
        .registrations
        .iter()
        .map(RegistrationItem::from)
        .collect();
    let done = match query.done.as_deref() {
        Some("approve") => Some("The account is approved; its owner is mailed."),
        Some("reject") => {
            Some("The registration is rejected and the account removed; its owner is mailed.")
        }
        _ => None,
    };
    page(
        &state,
        &user,
        "registrations",
        "registrations.html",
        json!({
            "registrations": items,
            "total": found.total,
            "question": state.front_door.settings().registration_question(),
            "done": done,
            "pages": pages(number, found.total),
        }),
    )
}

/// A decision's form.
#[derive(Deserialize)]
pub struct DecisionForm {
    #[serde(rename = "csrfToken")]
    csrf_token: Option<String>,
    action: Option<String>,
    reason: Option<String>,
}

/// `POST /admin/registrations/{id}`: approves or rejects a sign-up.
pub async fn decide(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppForm(form): AppForm<DecisionForm>,
) -> Result<Response, AppError> {
    user.check_form_token(form.csrf_token.as_deref())?;
    authorize(policy::guard_front_door(user.actor()), "registration")?;
    let action = form.action.unwrap_or_default();
    let (decision, reason) = checked_decision(&action, form.reason.as_deref())?;
    state
        .front_door_changes()
        .decide_registration(context, id, decision, reason)
        .await?;
    Ok(Redirect::to(&format!("/admin/registrations?done={action}")).into_response())
}

/// `GET /admin/email-domain-blocks`: the blocked domains and the form to
/// add one.
pub async fn email_domain_blocks(
    State(state): State<AppState>,
    user: ConsoleUser,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<Response, AppError> {
    authorize(policy::guard_front_door(user.actor()), "email domain block")?;
    let (number, page_asked) = page_of(&query)?;
    let found = state.db.email_domain_blocks(page_asked).await?;
    let items: Vec<EmailDomainBlockItem> = found
        .blocks
        .iter()
        .map(EmailDomainBlockItem::from)
        .collect();
    let done = match query.done.as_deref() {
        Some("added") => Some("The domain and its subdomains are blocked for new accounts."),
        Some("removed") => Some("The block is removed."),
        _ => None,
    };
    page(
        &state,
        &user,
        "email-domain-blocks",
        "email_domain_blocks.html",
        json!({
            "blocks": items,
            "total": found.total,
            "done": done,
            "pages": pages(number, found.total),
        }),
    )
}

/// The form adding a domain block.
#[derive(Deserialize)]
pub struct DomainForm {
    #[serde(rename = "csrfToken")]
    csrf_token: Option<String>,
    domain: Option<String>,
    reason: Option<String>,
}

/// `POST /admin/email-domain-blocks`: blocks a domain.
pub async fn add_email_domain_block(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    AppForm(form): AppForm<DomainForm>,
) -> Result<Response, AppError> {
    user.check_form_token(form.csrf_token.as_deref())?;
    authorize(policy::guard_front_door(user.actor()), "email domain block")?;
    let (domain, reason) = email_domain_blocks::checked_block(
        form.domain.as_deref().unwrap_or_default(),
        form.reason.as_deref(),
    )?;
    state
        .front_door_changes()
        .add_email_domain_block(context, domain, reason, user.actor().user_id)
        .await?;
    Ok(Redirect::to("/admin/email-domain-blocks?done=added").into_response())
}

/// The form removing a block: its CSRF token.
#[derive(Deserialize)]
pub struct RemoveForm {
    #[serde(rename = "csrfToken")]
    csrf_token: Option<String>,
}

/// `POST /admin/email-domain-blocks/{id}/delete`: removes a domain block.
pub async fn remove_email_domain_block(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppForm(form): AppForm<RemoveForm>,
) -> Result<Response, AppError> {
    user.check_form_token(form.csrf_token.as_deref())?;
    authorize(policy::guard_front_door(user.actor()), "email domain block")?;
    state
        .front_door_changes()
        .remove_email_domain_block(context, id)
        .await?;
    Ok(Redirect::to("/admin/email-domain-blocks?done=removed").into_response())
}

/// `GET /admin/ip-blocks`: the IP blocks, newest first, and the form to
/// add one.
pub async fn ip_blocks(
    State(state): State<AppState>,
    user: ConsoleUser,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<Response, AppError> {
    authorize(policy::guard_front_door(user.actor()), "IP block")?;
    let (number, page_asked) = page_of(&query)?;
    let found = state.db.ip_blocks(page_asked).await?;
    let items: Vec<IpBlockItem> = found.blocks.iter().map(IpBlockItem::from).collect();
    let done = match query.done.as_deref() {
        Some("added") => Some("The block is in force on every instance within 5 s."),
        Some("removed") => Some("The block is removed."),
        _ => None,
    };
    page(
        &state,
        &user,
        "ip-blocks",
        "ip_blocks.html",
        json!({
            "blocks": items,
            "total": found.total,
            "done": done,
            "pages": pages(number, found.total),
        }),
    )
}

/// The form adding an IP block; an empty end is none.
#[derive(Deserialize)]
pub struct IpBlockForm {
    #[serde(rename = "csrfToken")]
    csrf_token: Option<String>,
    cidr: Option<String>,
    severity: Option<String>,
    /// `YYYY-MM-DDTHH:MM` in UTC, as a `datetime-local` field sends it.
    expires_at: Option<String>,
    reason: Option<String>,
}

/// `POST /admin/ip-blocks`: blocks an address or range.
pub async fn add_ip_block(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    AppForm(form): AppForm<IpBlockForm>,
) -> Result<Response, AppError> {
    user.check_form_token(form.csrf_token.as_deref())?;
    authorize(policy::guard_front_door(user.actor()), "IP block")?;
    let expires_at = form
        .expires_at
        .map(|raw| raw.trim().to_owned())
        .filter(|raw| !raw.is_empty())
        .map(|raw| match raw.len() {
            // `datetime-local` sends minutes (and sometimes seconds) only.
            16 => format!("{raw}:00Z"),
            19 => format!("{raw}Z"),
            _ => raw,
        });
    let new = ip_blocks::checked_block(&IpBlockBody {
        cidr: form.cidr.unwrap_or_default(),
        severity: form.severity.unwrap_or_default(),
        expires_at,
        reason: form.reason,
    })?;
    state
        .front_door_changes()
        .add_ip_block(context, new, user.actor().user_id)
        .await?;
    Ok(Redirect::to("/admin/ip-blocks?done=added").into_response())
}

/// `POST /admin/ip-blocks/{id}/delete`: removes an IP block.
pub async fn remove_ip_block(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppForm(form): AppForm<RemoveForm>,
) -> Result<Response, AppError> {
    user.check_form_token(form.csrf_token.as_deref())?;
    authorize(policy::guard_front_door(user.actor()), "IP block")?;
    state
        .front_door_changes()
        .remove_ip_block(context, id)
        .await?;
    Ok(Redirect::to("/admin/ip-blocks?done=removed").into_response())
}
