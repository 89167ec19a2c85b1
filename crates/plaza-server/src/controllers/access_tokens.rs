//! The caller's personal access tokens (DECISIONS.md "Tokens for members
//! and bots, and webhooks (round 5)"): `POST /api/me/tokens` makes one and
//! shows its secret this once, `GET` lists them without it, `DELETE
//! /api/me/tokens/{id}` revokes one. Managed with a session only: a token
//! calling these is 403 `INSUFFICIENT_SCOPE`.

use axum::extract::State;
use axum::http::StatusCode;
use plaza_domain::access_tokens::{self, AccessToken, NewAccessToken};
use plaza_domain::bans::BanLength;
use plaza_domain::policy::TokenScope;
use plaza_domain::time::{now_millis, rfc3339};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

use crate::auth::{CurrentUser, new_access_token};
use crate::controllers::params::{Problems, TextRule, check_text};
use crate::http::error::AppError;
use crate::http::error::schema::GeneralError;
use crate::http::extract::{AppJson, IdPath};
use crate::secrets::hash_token;
use crate::state::AppState;

/// Longest token name.
const MAX_NAME_CHARS: usize = 100;
/// A token's lifetime when `expires_in` is not given.
const DEFAULT_EXPIRES_IN: &str = "90d";
/// The longest lifetime a token may have.
const MAX_LIFETIME_MILLIS: i64 = 365 * 24 * 3600 * 1000;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(list_tokens, create_token))
        .routes(crate::documented_routes!(revoke_token))
}

/// A token to make.
#[derive(Deserialize, ToSchema)]
pub struct NewTokenBody {
    /// 1 to 100 characters, one line.
    #[schema(example = "my bot")]
    pub name: String,
    /// A non-empty subset of `read`, `write` and `notifications`.
    #[schema(example = json!(["read", "write"]))]
    pub scopes: Vec<String>,
    /// How long it lasts: a number and `m`, `h`, `d`, `w` or `y` (365
    /// days), at most 365 days; default `90d`.
    #[schema(example = "30d")]
    pub expires_in: Option<String>,
}

/// A token as its owner lists it.
#[derive(Serialize, ToSchema)]
pub struct TokenView {
    #[schema(example = "4")]
    pub id: String,
    pub name: String,
    #[schema(example = json!(["read", "write"]))]
    pub scopes: Vec<&'static str>,
    pub created_at: String,
    pub expires_at: String,
    /// Set at the first use, then updated at most once a minute.
    pub last_used_at: Option<String>,
}

impl From<&AccessToken> for TokenView {
    fn from(token: &AccessToken) -> Self {
        TokenView {
            id: token.id.to_string(),
            name: token.name.clone(),
            scopes: token.scopes.iter().map(|scope| scope.as_str()).collect(),
            created_at: rfc3339(token.created_at),
            expires_at: rfc3339(token.expires_at),
            last_used_at: token.last_used_at.map(rfc3339),
        }
    }
}

/// A token just made, with its secret (shown this once).
#[derive(Serialize, ToSchema)]
pub struct CreatedToken {
    #[schema(example = "4")]
    pub id: String,
    pub name: String,
    #[schema(example = json!(["read", "write"]))]
    pub scopes: Vec<&'static str>,
    /// `plz_` and 256 random bits; send it as `Authorization: Bearer …`.
    /// It is stored hashed and never shown again.
    #[schema(example = "plz_3q2-7wEjxKyyy3pQ9ZLzq6mYg5aJ8kOD1sXwbfRTn4c")]
    pub token: String,
    pub created_at: String,
    pub expires_at: String,
}

/// The caller's tokens.
#[derive(Serialize, ToSchema)]
pub struct TokenList {
    pub tokens: Vec<TokenView>,
}

/// The caller's tokens in force, newest first, without their secrets.
#[utoipa::path(
    get,
    path = "/api/me/tokens",
    tag = "members",
    responses(
        (status = 200, description = "The caller's tokens", body = TokenList),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 403, description = "Called with a personal access token (`INSUFFICIENT_SCOPE`)", body = GeneralError),
    )
)]
pub async fn list_tokens(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
) -> Result<AppJson<TokenList>, AppError> {
    let tokens = state
        .db
        .access_tokens_of(caller.user_id(), now_millis())
        .await?;
    Ok(AppJson(TokenList {
        tokens: tokens.iter().map(TokenView::from).collect(),
    }))
}

/// Make a personal access token: its secret is in this answer only. At most
/// 50 per user.
#[utoipa::path(
    post,
    path = "/api/me/tokens",
    tag = "members",
    request_body = NewTokenBody,
    responses(
        (status = 201, description = "Made; `token` is shown this once", body = CreatedToken),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 403, description = "Called with a personal access token (`INSUFFICIENT_SCOPE`)", body = GeneralError),
        (status = 409, description = "The caller holds 50 tokens already (`CONFLICT`)", body = GeneralError),
        (status = 422, description = "A bad `name`, `scopes` or `expires_in` (`VALIDATION_ERROR`)", body = GeneralError),
    )
)]
pub async fn create_token(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    AppJson(body): AppJson<NewTokenBody>,
) -> Result<(StatusCode, AppJson<CreatedToken>), AppError> {
    let now = now_millis();
    let mut problems = Problems::default();
    problems.check(
        "name",
        check_text(&body.name, MAX_NAME_CHARS, true, TextRule::Line),
    );
    let scopes = problems.check("scopes", read_scopes(&body.scopes));
    let lifetime = problems.check(
        "expires_in",
        read_lifetime(body.expires_in.as_deref().unwrap_or(DEFAULT_EXPIRES_IN)),
    );
    problems.finish()?;
    let (Some(scopes), Some(lifetime)) = (scopes, lifetime) else {
        return Err(AppError::internal("a checked token body lost a field"));
    };
    let secret = new_access_token();
    let new = NewAccessToken {
        user_id: caller.user_id(),
        name: body.name.trim().to_owned(),
        token_hash: hash_token(&secret),
        scopes,
        expires_at: now.saturating_add(lifetime),
    };
    let token = state
        .db
        .write(move |tx| Box::pin(async move { access_tokens::create(tx, &new, now).await }))
        .await?;
    Ok((
        StatusCode::CREATED,
        AppJson(CreatedToken {
            id: token.id.to_string(),
            name: token.name.clone(),
            scopes: token.scopes.iter().map(|scope| scope.as_str()).collect(),
            token: secret,
            created_at: rfc3339(token.created_at),
            expires_at: rfc3339(token.expires_at),
        }),
    ))
}

/// Revoke one of the caller's tokens: it is refused (401) from now on.
#[utoipa::path(
    delete,
    path = "/api/me/tokens/{id}",
    tag = "members",
    params(("id" = String, Path, description = "The token's id", example = "4")),
    responses(
        (status = 204, description = "Revoked"),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 403, description = "Called with a personal access token (`INSUFFICIENT_SCOPE`)", body = GeneralError),
        (status = 404, description = "No token of the caller's has this id", body = GeneralError),
    )
)]
pub async fn revoke_token(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    IdPath(id): IdPath,
) -> Result<StatusCode, AppError> {
    let user_id = caller.user_id();
    state
        .db
        .write(move |tx| Box::pin(async move { access_tokens::revoke(tx, user_id, id).await }))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The scopes named: a non-empty subset of the three, each once.
fn read_scopes(names: &[String]) -> Result<Vec<TokenScope>, String> {
    if names.is_empty() {
        return Err("must name at least one of read, write, notifications".to_owned());
    }
    let mut scopes = Vec::with_capacity(names.len());
    for name in names {
        let scope = TokenScope::parse(name)
            .ok_or_else(|| format!("unknown scope {name:?}; use read, write or notifications"))?;
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    Ok(scopes)
}

/// A lifetime such as `30d`, at most 365 days, in milliseconds.
fn read_lifetime(text: &str) -> Result<i64, String> {
    match BanLength::parse(text) {
        Some(BanLength::Millis(millis)) if millis <= MAX_LIFETIME_MILLIS => Ok(millis),
        _ => Err("must be a number and m, h, d, w or y (such as 30d), at most 365d".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetimes_are_read_up_to_a_year() {
        assert_eq!(read_lifetime("30d"), Ok(30 * 24 * 3600 * 1000));
        assert_eq!(read_lifetime("365d"), Ok(MAX_LIFETIME_MILLIS));
        assert_eq!(read_lifetime("1y"), Ok(MAX_LIFETIME_MILLIS));
        for bad in ["366d", "2y", "permanent", "0d", "soon", ""] {
            assert!(read_lifetime(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn scopes_are_a_non_empty_subset() {
        assert!(read_scopes(&[]).is_err());
        assert!(read_scopes(&["admin".to_owned()]).is_err());
        assert_eq!(
            read_scopes(&["read".to_owned(), "read".to_owned()]),
            Ok(vec![TokenScope::Read])
        );
    }
}
