//! The cookies Plaza sets (the session's and the CSRF token's), reading
//! one from a request, writing one, and whether a request comes from an
//! origin this service trusts, which the middleware asks before a
//! cookie-authenticated write.

use axum::http::{HeaderMap, HeaderValue, header};

use crate::settings::ServerSettings;

/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "plaza_session";
/// Name of the cookie holding the CSRF token for form posts.
pub const CSRF_COOKIE: &str = "plaza_csrf";

/// Reads one cookie from the request.
pub fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(cookie::Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|cookie| cookie.name() == name)
        .map(|cookie| cookie.value().to_owned())
        .filter(|value| !value.is_empty())
}

/// A `Set-Cookie` value: `HttpOnly`, `SameSite=Lax`, `Path=/`, and `Secure`
/// when the base URL is https. `max_age_secs` 0 deletes the cookie.
pub fn set_cookie(
    server: &ServerSettings,
    name: &str,
    value: &str,
    max_age_secs: i64,
) -> HeaderValue {
    let cookie = cookie::Cookie::build((name, value))
        .http_only(true)
        .same_site(cookie::SameSite::Lax)
        .path("/")
        .secure(server.is_https())
        .max_age(cookie::time::Duration::seconds(max_age_secs))
        .build();
    HeaderValue::from_str(&cookie.to_string()).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Whether a request's `Origin` (or, without it, `Referer`) is one this
/// service trusts. Requests with neither come from non-browser clients,
/// which cookies cannot be forged for; a header that is there but cannot be
/// read is not trusted.
pub fn is_same_origin(headers: &HeaderMap, server: &ServerSettings) -> bool {
    let claimed = match (headers.get(header::ORIGIN), headers.get(header::REFERER)) {
        (Some(origin), _) => origin.to_str().ok().map(str::to_owned),
        (None, Some(referer)) => referer
            .to_str()
            .ok()
            .and_then(|referer| url::Url::parse(referer).ok())
            .map(|url| url.origin().ascii_serialization()),
        (None, None) => return true,
    };
    match claimed {
        None => false,
        Some(origin) => {
            origin == server.base_origin()
                || server
                    .cors_allowed_origins
                    .iter()
                    .any(|allowed| allowed.trim_end_matches('/') == origin)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_referer_is_not_same_origin() {
        let settings = ServerSettings::default();
        let with = |name: header::HeaderName, value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(name, HeaderValue::from_str(value).unwrap());
            headers
        };
        assert!(is_same_origin(&HeaderMap::new(), &settings));
        assert!(is_same_origin(
            &with(header::REFERER, "http://localhost:3000/page"),
            &settings
        ));
        assert!(!is_same_origin(
            &with(header::REFERER, "not a url"),
            &settings
        ));
        assert!(!is_same_origin(
            &with(header::REFERER, "https://evil.example/"),
            &settings
        ));
        assert!(!is_same_origin(&with(header::ORIGIN, "null"), &settings));
    }
}
