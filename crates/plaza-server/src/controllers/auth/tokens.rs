//! Admin tokens: minting one from an admin's session, revoking the one
//! sent, and the audit entry of each.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use plaza_domain::audit::{self, AuditAction, AuditContext};
use plaza_domain::auth_state;
use plaza_domain::time::rfc3339;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::jwt::AdminPermission;
use crate::auth::{AnyAdminToken, CurrentUser, RequestAudit};
use crate::http::error::AppError;
use crate::http::error::schema::GeneralError;
use crate::http::extract::AppJson;
use crate::http::extract::json::parse_json;
use crate::state::AppState;

/// Admin token request: a subset of the caller's admin permissions and a
/// lifetime up to the configured maximum.
#[derive(Deserialize, ToSchema, Default)]
pub struct TokenRequest {
    pub permissions: Option<Vec<String>>,
    /// Seconds; at most `admin_token_ttl_secs`.
    #[serde(rename = "ttlSeconds")]
    pub ttl_seconds: Option<i64>,
}

/// An admin JWT.
#[derive(Serialize, ToSchema)]
pub struct TokenView {
    pub token: String,
    #[serde(rename = "expiresAt")]
    pub expires_at: String,
    pub permissions: Vec<AdminPermission>,
}

/// Exchange an admin's session for a short-lived admin JWT for the
/// versioned admin surface. While `admin_totp_required` is set, only an
/// administrator with two-factor sign-in on gets one.
#[utoipa::path(
    post,
    path = "/api/auth/token",
    tag = "auth",
    security(("session_cookie" = [])),
    request_body(content = TokenRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The token", body = TokenView),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 403, description = "Not an admin, asked for permissions beyond the role, or without two-factor sign-in while `admin_totp_required` is set", body = GeneralError),
        (status = 422, description = "Unknown permission or bad lifetime", body = GeneralError),
        (status = 415, description = "A body that is not application/json", body = GeneralError),
    )
)]
pub async fn admin_token(
    State(state): State<AppState>,
    CurrentUser(principal): CurrentUser,
    RequestAudit(context): RequestAudit,
    request: Request,
) -> Result<AppJson<TokenView>, AppError> {
    let declared_json = crate::http::extract::json::is_json_content_type(request.headers());
    let body = axum::body::to_bytes(request.into_body(), 64 * 1024)
        .await
        .map_err(|_| AppError::PayloadTooLarge { limit: 64 * 1024 })?;
    let wanted: TokenRequest = if body.is_empty() {
        TokenRequest::default()
    } else if !declared_json {
        return Err(AppError::UnsupportedMediaType(
            "a request body must be sent as application/json".to_owned(),
        ));
    } else {
        parse_json(&body)?
    };
    principal.require_second_factor(&state.settings.auth)?;
    let (token, claims) = crate::auth::issue_admin_token(
        &state.auth,
        &state.settings.auth,
        principal.user_id(),
        principal.role(),
        wanted.permissions.as_deref(),
        wanted.ttl_seconds,
    )?;
    let minted = serde_json::json!({
        "jti": claims.jti,
        "permissions": claims.permissions,
        "expiresAt": claims.exp,
    });
    record_token_action(
        &state,
        context,
        "admin_token.mint",
        principal.user_id(),
        minted,
    )
    .await?;
    Ok(AppJson(TokenView {
        token,
        expires_at: rfc3339(claims.exp * 1000),
        permissions: claims.permissions,
    }))
}

/// Revoke the admin JWT sent in `Authorization`; it stops working on every
/// instance at once. Audited as `admin_token.revoke`.
#[utoipa::path(
    delete,
    path = "/api/auth/token",
    tag = "auth",
    security(("admin_jwt" = [])),
    responses(
        (status = 204, description = "Revoked"),
        (status = 401, description = "No valid admin token", body = GeneralError),
    )
)]
pub async fn revoke_admin_token(
    State(state): State<AppState>,
    AnyAdminToken(token): AnyAdminToken,
    RequestAudit(context): RequestAudit,
) -> Result<StatusCode, AppError> {
    let (jti, expires_at) = (
        token.claims.jti.clone(),
        token.claims.exp.saturating_mul(1000),
    );
    let revoked = serde_json::json!({
        "jti": token.claims.jti,
        "permissions": token.claims.permissions,
    });
    let user_id = token.user_id;
    state
        .db
        .write(|tx| {
            Box::pin(async move {
                auth_state::revoke_token(tx, &jti, expires_at).await?;
                audit::record(
                    tx,
                    &context,
                    AuditAction {
                        action: "admin_token.revoke",
                        target_type: "user",
                        target_id: Some(user_id.to_string()),
                        changes: revoked,
                    },
                )
                .await
            })
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Records an admin token's mint or revocation, as the command line's
/// `token` does, naming the token's user as the target.
async fn record_token_action(
    state: &AppState,
    context: AuditContext,
    action: &'static str,
    user_id: i64,
    changes: serde_json::Value,
) -> Result<(), AppError> {
    state
        .db
        .write(|tx| {
            Box::pin(async move {
                audit::record(
                    tx,
                    &context,
                    AuditAction {
                        action,
                        target_type: "user",
                        target_id: Some(user_id.to_string()),
                        changes,
                    },
                )
                .await
            })
        })
        .await?;
    Ok(())
}
