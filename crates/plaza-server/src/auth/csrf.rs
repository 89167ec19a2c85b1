//! The CSRF token of Plaza's HTML forms (sign-in, password pages, the
//! operator console) and of Auth.js's form posts: a token in a cookie that
//! each form repeats in a hidden field, bound to the session it was issued
//! for. The token is a random nonce and an HMAC of it keyed by the
//! request's session cookie (a fixed key when there is none), so a token
//! planted in a victim's browser (a sibling subdomain can set cookies)
//! does not pass with the victim's session, and one issued before a
//! sign-in does not pass after it. The cookie is `__Host-plaza_csrf` when
//! the base URL is https (no other host can set it), `plaza_csrf`
//! otherwise. It adds to the cross-origin refusal of cookie writes that
//! the request middleware applies to every route.

use axum::http::{HeaderMap, HeaderValue};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::http::cookies::{CSRF_COOKIE, SESSION_COOKIE, cookie_value, set_cookie};
use crate::http::error::AppError;
use crate::secrets::random_token;
use crate::settings::ServerSettings;

/// The CSRF cookie's name on https: a `__Host-` cookie is only accepted
/// with `Secure`, `Path=/` and no `Domain`.
const HOST_CSRF_COOKIE: &str = "__Host-plaza_csrf";

/// The key of a token issued to a request without a session.
const SIGNED_OUT: &[u8] = b"plaza-csrf-signed-out";

/// The name of the CSRF cookie for this base URL.
pub fn cookie_name(server: &ServerSettings) -> &'static str {
    if server.is_https() {
        HOST_CSRF_COOKIE
    } else {
        CSRF_COOKIE
    }
}

/// What a request brings for the CSRF check: its CSRF cookie and the
/// session the token must be bound to. Read before the request's body is.
pub struct Presented {
    cookie: Option<String>,
    session: Option<String>,
}

impl Presented {
    pub fn from_headers(server: &ServerSettings, headers: &HeaderMap) -> Self {
        Presented {
            cookie: cookie_value(headers, cookie_name(server)),
            session: cookie_value(headers, SESSION_COOKIE),
        }
    }

    /// The cookie's token, when it was issued for this request's session.
    fn bound_token(&self) -> Option<&str> {
        self.cookie
            .as_deref()
            .filter(|token| is_bound(token, self.session.as_deref()))
    }

    /// Refuses (403) a form post whose token is missing, is not the
    /// cookie's, or was issued for another session.
    pub fn check(&self, submitted: Option<&str>) -> Result<(), AppError> {
        match (self.bound_token(), submitted) {
            (Some(cookie), Some(submitted)) if cookie == submitted => Ok(()),
            _ => Err(AppError::Forbidden),
        }
    }
}

/// The CSRF token of the request's cookie when it is bound to the
/// request's session, or a new one so bound with its cookie.
pub fn token_for(server: &ServerSettings, headers: &HeaderMap) -> (String, Option<HeaderValue>) {
    let presented = Presented::from_headers(server, headers);
    if let Some(token) = presented.bound_token() {
        return (token.to_owned(), None);
    }
    let nonce = random_token();
    let token = format!(
        "{nonce}.{}",
        binding_of(&nonce, presented.session.as_deref())
    );
    let cookie = set_cookie(server, cookie_name(server), &token, 24 * 3600);
    (token, Some(cookie))
}

/// The HMAC of `nonce` keyed by the session token (or [`SIGNED_OUT`]).
fn binding_of(nonce: &str, session: Option<&str>) -> String {
    let key = session.map_or(SIGNED_OUT, str::as_bytes);
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(nonce.as_bytes());
    URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
}

/// Whether `token` was issued for `session`.
fn is_bound(token: &str, session: Option<&str>) -> bool {
    let Some((nonce, binding)) = token.split_once('.') else {
        return false;
    };
    let Ok(binding) = URL_SAFE_NO_PAD.decode(binding) else {
        return false;
    };
    let key = session.map_or(SIGNED_OUT, str::as_bytes);
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(nonce.as_bytes());
    mac.verify_slice(&binding).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(session: Option<&str>) -> String {
        let nonce = random_token();
        format!("{nonce}.{}", binding_of(&nonce, session))
    }

    #[test]
    fn a_token_passes_only_with_the_session_it_was_issued_for() {
        let mine = token(Some("my-session"));
        assert!(is_bound(&mine, Some("my-session")));
        assert!(!is_bound(&mine, Some("your-session")));
        assert!(!is_bound(&mine, None));
        let signed_out = token(None);
        assert!(is_bound(&signed_out, None));
        assert!(!is_bound(&signed_out, Some("my-session")));
        assert!(!is_bound("no-dot", None));
        assert!(!is_bound("nonce.@@@", None));
        let (nonce, _) = mine.split_once('.').unwrap();
        assert!(!is_bound(
            &format!("{nonce}.{}", binding_of("other", Some("my-session"))),
            Some("my-session")
        ));
    }

    #[test]
    fn the_check_wants_the_cookies_own_bound_token() {
        let cookie = token(Some("s"));
        let presented = Presented {
            cookie: Some(cookie.clone()),
            session: Some("s".to_owned()),
        };
        assert!(presented.check(Some(&cookie)).is_ok());
        assert!(presented.check(Some("other")).is_err());
        assert!(presented.check(None).is_err());
        let planted = Presented {
            cookie: Some(token(Some("attacker"))),
            session: Some("s".to_owned()),
        };
        let planted_token = planted.cookie.clone().unwrap();
        assert!(planted.check(Some(&planted_token)).is_err());
    }

    #[test]
    fn the_cookie_is_host_prefixed_on_https() {
        let mut server = ServerSettings::default();
        assert_eq!(cookie_name(&server), "plaza_csrf");
        server.base_url = "https://plaza.example".parse().unwrap();
        assert_eq!(cookie_name(&server), "__Host-plaza_csrf");
    }
}
