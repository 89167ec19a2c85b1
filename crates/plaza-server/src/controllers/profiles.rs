//! idling.app's profile read, answered as its front end expects it: the
//! author tooltip's `GET /api/profile/id/{id}`, with idling.app's fields and
//! its `{error}` answers (the plain error shape). Plaza has no replies, so
//! a user's submissions are their posts.

use axum::extract::State;
use axum::http::StatusCode;
use plaza_domain::listing::Page;
use plaza_domain::policy::{self, Decision};
use plaza_domain::posts::PostQuery;
use plaza_domain::time::rfc3339;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

use crate::auth::viewer_of;
use crate::auth::{OptionalUser, actor_of};
use crate::controllers::users::avatar_url;
use crate::http::error::AppError;
use crate::http::error::schema::PlainError;
use crate::http::extract::{AppJson, IdPath};
use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(crate::documented_routes!(profile_by_id))
}

/// A profile as idling.app answers it.
#[derive(Serialize, ToSchema)]
pub struct IdlingProfile {
    #[schema(example = "2")]
    pub id: String,
    pub name: Option<String>,
    pub username: String,
    pub bio: String,
    pub location: String,
    /// The user's image, else their generated avatar.
    pub image: String,
    pub created_at: String,
    pub profile_public: bool,
    /// The user's posts that the caller may see.
    pub posts_count: i64,
    /// The user's visible (published or flagged) replies on public posts.
    pub replies_count: i64,
    /// Posts and replies.
    pub total_submissions: i64,
}

/// A user's profile by id, as idling.app's author tooltip reads it. A
/// private profile is 403 `This profile is private` to everyone but the
/// user and administrators; an unknown, inactive or banned user is 404.
#[utoipa::path(
    get,
    path = "/api/profile/id/{id}",
    tag = "users",
    params(("id" = String, Path, description = "User id (digits)", example = "2")),
    responses(
        (status = 200, description = "The profile", body = IdlingProfile),
        (status = 403, description = "`This profile is private`", body = PlainError),
        (status = 404, description = "`User not found`", body = PlainError),
    )
)]
pub async fn profile_by_id(
    State(state): State<AppState>,
    OptionalUser(caller): OptionalUser,
    IdPath(id): IdPath,
) -> Result<AppJson<IdlingProfile>, AppError> {
    let not_found = || AppError::Titled {
        status: StatusCode::NOT_FOUND,
        title: "User not found",
        details: "no such user".to_owned(),
    };
    let user = match state.db.user_by_id(id).await {
        Ok(user) => user,
        Err(plaza_domain::DomainError::NotFound(_)) => return Err(not_found()),
        Err(other) => return Err(other.into()),
    };
    match policy::view_profile(actor_of(caller.as_ref()), &user) {
        Decision::Allowed => {}
        Decision::Forbidden => {
            return Err(AppError::Titled {
                status: StatusCode::FORBIDDEN,
                title: "This profile is private",
                details: "only its owner sees this profile".to_owned(),
            });
        }
        Decision::Hidden => return Err(not_found()),
    }
    let posts = state
        .db
        .list_posts(
            &PostQuery {
                author: Some(id),
                ..PostQuery::default()
            },
            viewer_of(caller.as_ref()),
            Page {
                limit: 0,
                offset: 0,
            },
        )
        .await?;
    let (_, replies_count) = state.db.public_content_counts(id).await?;
    Ok(AppJson(IdlingProfile {
        id: user.id().to_string(),
        name: user.row.name.clone(),
        username: user.row.username.clone(),
        bio: user.row.bio.clone(),
        location: user.row.location.clone(),
        image: avatar_url(&state.settings.server, &user),
        created_at: rfc3339(user.row.created_at),
        profile_public: user.row.profile_public.0,
        posts_count: posts.total,
        replies_count,
        total_submissions: posts.total + replies_count,
    }))
}
