//! The double-submit CSRF token of Plaza's HTML forms (sign-in, password
//! pages, the operator console): a random token in the `plaza_csrf` cookie
//! that each form repeats in a hidden field; a post whose field differs
//! from the cookie is refused. It adds to the cross-origin refusal of
//! cookie writes that the request middleware applies to every route.

use axum::http::{HeaderMap, HeaderValue};

use super::tokens::random_token;
use super::{CSRF_COOKIE, cookie_value, set_cookie};
use crate::http::error::AppError;
use crate::state::AppState;

/// The CSRF token in the request's cookie, or a new one with its cookie.
pub fn token_for(state: &AppState, headers: &HeaderMap) -> (String, Option<HeaderValue>) {
    match cookie_value(headers, CSRF_COOKIE) {
        Some(token) => (token, None),
        None => {
            let token = random_token();
            let cookie = set_cookie(&state.settings.server, CSRF_COOKIE, &token, 24 * 3600);
            (token, Some(cookie))
        }
    }
}

/// Refuses (403) a form post whose token is missing or is not the cookie's.
pub fn check(cookie: Option<&str>, submitted: Option<&str>) -> Result<(), AppError> {
    match (cookie, submitted) {
        (Some(cookie), Some(submitted)) if !cookie.is_empty() && cookie == submitted => Ok(()),
        _ => Err(AppError::Forbidden),
    }
}
