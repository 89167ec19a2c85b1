use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::http::error::{AppError, FieldError};

/// A typed query string whose errors name the parameter (422 on the general
/// surface, 400 with a list of issues on the unversioned admin one).
#[derive(Debug, Clone, Copy, Default)]
pub struct AppQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for AppQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parse_query(parts.uri.query().unwrap_or_default()).map(AppQuery)
    }
}

impl<T> crate::http::extract::documented::DocumentedExtractor for AppQuery<T> {
    const ANSWERS: &'static [crate::http::extract::documented::Answer] =
        &[crate::http::extract::documented::Answer::new(
            422,
            "A query parameter of the wrong type",
        )];
}

/// Deserializes a query string, reporting the offending parameter.
pub fn parse_query<T: DeserializeOwned>(query: &str) -> Result<T, AppError> {
    let deserializer =
        serde_urlencoded::Deserializer::new(url::form_urlencoded::parse(query.as_bytes()));
    serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let path = error.path().to_string();
        let reason = error.into_inner().to_string();
        let field = if path == "." {
            super::json::missing_field(&reason)
                .unwrap_or("query")
                .to_owned()
        } else {
            path
        };
        AppError::Validation {
            message: format!("invalid query parameter {field}: {reason}"),
            fields: vec![FieldError::new(field, reason).with_kind(
                "invalid_type",
                "valid value",
                "invalid",
            )],
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Page {
        limit: Option<u32>,
        q: String,
    }

    #[test]
    fn wrong_types_name_the_parameter() {
        match parse_query::<Page>("q=a&limit=lots").unwrap_err() {
            AppError::Validation { fields, .. } => assert_eq!(fields[0].field, "limit"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn missing_parameters_are_named() {
        match parse_query::<Page>("limit=3").unwrap_err() {
            AppError::Validation { fields, .. } => assert_eq!(fields[0].field, "q"),
            other => panic!("{other:?}"),
        }
    }
}
