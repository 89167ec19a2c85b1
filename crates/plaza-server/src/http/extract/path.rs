use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use crate::http::error::AppError;

/// A database id taken from the last `{id}`-style path segment. Ids are
/// digits only; anything else is a path that names nothing, so 404.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdPath(pub i64);

impl<S: Send + Sync> FromRequestParts<S> for IdPath {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let axum::extract::Path(raw): axum::extract::Path<String> =
            axum::extract::Path::from_request_parts(parts, state)
                .await
                .map_err(|_| AppError::NotFound("resource"))?;
        parse_id(&raw)
            .map(IdPath)
            .ok_or(AppError::NotFound("resource"))
    }
}

impl crate::http::extract::documented::DocumentedExtractor for IdPath {
    const ANSWERS: &'static [crate::http::extract::documented::Answer] =
        &[crate::http::extract::documented::Answer::new(
            404,
            "No such resource (ids are digits only)",
        )];
}

/// A path parameter that is a name, not an id (a feature flag, a sign-in
/// provider, a stored file's key): the route's last parameter, percent-
/// decoded. One holding a NUL byte is refused naming the parameter, as
/// every text input is ([`super::text_input`]); one that cannot be decoded
/// (not UTF-8) names nothing, so 404.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextPath(pub String);

impl<S: Send + Sync> FromRequestParts<S> for TextPath {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let axum::extract::Path(parameters): axum::extract::Path<Vec<(String, String)>> =
            axum::extract::Path::from_request_parts(parts, state)
                .await
                .map_err(|_| AppError::NotFound("resource"))?;
        let (name, value) = parameters
            .into_iter()
            .next_back()
            .ok_or(AppError::NotFound("resource"))?;
        super::text_input::refuse_nul_in_field(&name, value.as_bytes())?;
        Ok(TextPath(value))
    }
}

impl crate::http::extract::documented::DocumentedExtractor for TextPath {
    const ANSWERS: &'static [crate::http::extract::documented::Answer] = &[
        crate::http::extract::documented::Answer::new(404, "No such resource"),
        crate::http::extract::documented::Answer::new(422, "A path parameter holding a NUL byte"),
    ];
}

/// A database id and a name from a path of two parameters (`{id}` then a
/// name, as `/api/posts/{id}/reactions/{emoji}`): the id as [`IdPath`]
/// reads it (404 unless digits), the name as [`TextPath`] reads it,
/// percent-decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdTextPath(pub i64, pub String);

impl<S: Send + Sync> FromRequestParts<S> for IdTextPath {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let axum::extract::Path(parameters): axum::extract::Path<Vec<(String, String)>> =
            axum::extract::Path::from_request_parts(parts, state)
                .await
                .map_err(|_| AppError::NotFound("resource"))?;
        let [(_, id), (name, value)] = <[(String, String); 2]>::try_from(parameters)
            .map_err(|_| AppError::NotFound("resource"))?;
        let id = parse_id(&id).ok_or(AppError::NotFound("resource"))?;
        super::text_input::refuse_nul_in_field(&name, value.as_bytes())?;
        Ok(IdTextPath(id, value))
    }
}

impl crate::http::extract::documented::DocumentedExtractor for IdTextPath {
    const ANSWERS: &'static [crate::http::extract::documented::Answer] = &[
        crate::http::extract::documented::Answer::new(
            404,
            "No such resource (ids are digits only)",
        ),
        crate::http::extract::documented::Answer::new(422, "A path parameter holding a NUL byte"),
    ];
}

/// Digits only, fitting in a positive i64.
pub fn parse_id(raw: &str) -> Option<i64> {
    if raw.is_empty() || !raw.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    raw.parse::<i64>().ok().filter(|id| *id > 0)
}

#[cfg(test)]
mod tests {
    use super::parse_id;

    #[test]
    fn ids_are_positive_digits_only() {
        assert_eq!(parse_id("42"), Some(42));
        assert_eq!(parse_id("+42"), None);
        assert_eq!(parse_id("-1"), None);
        assert_eq!(parse_id("0"), None);
        assert_eq!(parse_id("4 2"), None);
        assert_eq!(parse_id("99999999999999999999"), None);
    }
}
