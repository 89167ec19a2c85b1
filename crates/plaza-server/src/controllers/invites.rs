//! `POST` and `GET /api/invites`, `DELETE /api/invites/{code}`: invites to
//! sign up while registrations need one (DECISIONS.md "The front door").
//! Administrators always may make one; members when the site settings'
//! `invitesByMembers` is on and their account is 7 days old. An invite is
//! good for `max_uses` sign-ups until it expires; withdrawing it makes its
//! code unknown.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use plaza_domain::invites::{
    self, DEFAULT_LIFETIME_MILLIS, Invite, MAX_USES, MEMBER_AGE_MILLIS, NewInvite, parse_lifetime,
};
use plaza_domain::policy;
use plaza_domain::time::{now_millis, rfc3339};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

use crate::auth::{CurrentUser, authorize};
use crate::controllers::params::Problems;
use crate::http::error::AppError;
use crate::http::error::schema::GeneralError;
use crate::http::extract::{AppJson, TextPath};
use crate::secrets::random_token;
use crate::settings::ServerSettings;
use crate::state::AppState;

/// Characters of an invite code (96 random bits).
const CODE_CHARS: usize = 16;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(create_invite, list_invites))
        .routes(crate::documented_routes!(withdraw_invite))
}

/// An invite.
#[derive(Serialize, ToSchema)]
pub struct InviteView {
    #[schema(example = "q3Zt0cV9Xk2mB7aL")]
    pub code: String,
    /// The sign-up page with the code: `<base_url>/signup?invite=<code>`.
    pub url: String,
    pub max_uses: i64,
    pub uses: i64,
    pub expires_at: String,
}

impl InviteView {
    fn new(server: &ServerSettings, invite: &Invite) -> Self {
        let base = server.base_url.as_str().trim_end_matches('/');
        InviteView {
            code: invite.code.clone(),
            url: format!("{base}/signup?invite={}", invite.code),
            max_uses: invite.max_uses,
            uses: invite.uses,
            expires_at: rfc3339(invite.expires_at),
        }
    }
}

/// The caller's invites.
#[derive(Serialize, ToSchema)]
pub struct InviteList {
    pub invites: Vec<InviteView>,
}

/// A new invite.
#[derive(Deserialize, ToSchema, Default)]
pub struct InviteBody {
    /// 1 to 100, default 1.
    #[schema(minimum = 1, maximum = 100)]
    pub max_uses: Option<i64>,
    /// How long it lasts: a whole number and `d`, `h` or `m` (`7d`, `12h`),
    /// at most `30d`; default `7d`.
    #[schema(example = "7d")]
    pub expires_in: Option<String>,
}

/// Makes an invite.
#[utoipa::path(
    post,
    path = "/api/invites",
    tag = "invites",
    request_body = InviteBody,
    responses(
        (status = 201, description = "The invite", body = InviteView),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 403, description = "Not an administrator, and members may not invite (`invitesByMembers` off) or the account is younger than 7 days", body = GeneralError),
        (status = 409, description = "The caller holds 100 usable invites already", body = GeneralError),
        (status = 422, description = "`max_uses` outside 1..100, or `expires_in` not a lifetime up to 30d", body = GeneralError),
    )
)]
pub async fn create_invite(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    AppJson(body): AppJson<InviteBody>,
) -> Result<Response, AppError> {
    let settings = state.front_door.settings();
    authorize(
        policy::create_invite(
            caller.actor(),
            caller.session.user.row.created_at,
            settings.invites_by_members(),
            MEMBER_AGE_MILLIS,
            now_millis(),
        ),
        "invite",
    )?;
    let mut problems = Problems::default();
    let max_uses = body.max_uses.unwrap_or(1);
    if !(1..=MAX_USES).contains(&max_uses) {
        problems.add(
            "max_uses",
            format!("must be a whole number from 1 to {MAX_USES}"),
        );
    }
    let lifetime = match body.expires_in.as_deref() {
        None => Some(DEFAULT_LIFETIME_MILLIS),
        Some(text) => problems.check(
            "expires_in",
            parse_lifetime(text)
                .ok_or_else(|| "must be a whole number and d, h or m, at most 30d".to_owned()),
        ),
    };
    problems.finish()?;
    let new = NewInvite {
        code: random_token().chars().take(CODE_CHARS).collect(),
        created_by: caller.user_id(),
        max_uses,
        expires_at: now_millis() + lifetime.unwrap_or(DEFAULT_LIFETIME_MILLIS),
    };
    let invite = state
        .db
        .write(|tx| Box::pin(async move { invites::create(tx, new).await }))
        .await?;
    Ok((
        StatusCode::CREATED,
        AppJson(InviteView::new(&state.settings.server, &invite)),
    )
        .into_response())
}

/// The caller's invites, newest first (used-up and expired ones
/// included, until withdrawn).
#[utoipa::path(
    get,
    path = "/api/invites",
    tag = "invites",
    responses(
        (status = 200, description = "The caller's invites", body = InviteList),
        (status = 401, description = "Not signed in", body = GeneralError),
    )
)]
pub async fn list_invites(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
) -> Result<AppJson<InviteList>, AppError> {
    let invites = state.db.invites_of(caller.user_id()).await?;
    Ok(AppJson(InviteList {
        invites: invites
            .iter()
            .map(|invite| InviteView::new(&state.settings.server, invite))
            .collect(),
    }))
}

/// Withdraws one of the caller's invites: its code is unknown from now on.
#[utoipa::path(
    delete,
    path = "/api/invites/{code}",
    tag = "invites",
    params(("code" = String, Path, description = "The invite's code")),
    responses(
        (status = 204, description = "Withdrawn"),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 404, description = "The caller holds no invite with this code", body = GeneralError),
    )
)]
pub async fn withdraw_invite(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    TextPath(code): TextPath,
) -> Result<StatusCode, AppError> {
    let user_id = caller.user_id();
    state
        .db
        .write(|tx| Box::pin(async move { invites::withdraw(tx, user_id, &code).await }))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
