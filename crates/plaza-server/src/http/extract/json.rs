use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::http::error::{AppError, FieldError};

/// JSON in and out. Syntax errors are 400; a body that parses but has a
/// missing field or a wrong type is 422 with the field's path; anything but
/// `application/json` is 415.
#[derive(Debug, Clone, Copy, Default)]
pub struct AppJson<T>(pub T);

impl<T, S> FromRequest<S> for AppJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !is_json_content_type(request.headers()) {
            return Err(AppError::UnsupportedMediaType(
                "expected a request body with Content-Type: application/json".to_owned(),
            ));
        }
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(body_rejection)?;
        parse_json(&bytes).map(AppJson)
    }
}

impl<T> crate::http::extract::documented::DocumentedExtractor for AppJson<T> {
    const ANSWERS: &'static [crate::http::extract::documented::Answer] = &[
        crate::http::extract::documented::Answer::new(400, "Malformed JSON"),
        crate::http::extract::documented::Answer::new(413, "Body larger than the limit"),
        crate::http::extract::documented::Answer::new(415, "Body not sent as application/json"),
        crate::http::extract::documented::Answer::new(422, "A missing, mistyped or invalid field"),
    ];
}

/// A JSON body that may be left out: an empty body is `None` (whatever its
/// Content-Type), anything else is read as [`AppJson`] reads it.
#[derive(Debug, Clone, Copy, Default)]
pub struct OptionalJson<T>(pub Option<T>);

impl<T, S> FromRequest<S> for OptionalJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let json = is_json_content_type(request.headers());
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(body_rejection)?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJson(None));
        }
        if !json {
            return Err(AppError::UnsupportedMediaType(
                "expected a request body with Content-Type: application/json".to_owned(),
            ));
        }
        parse_json(&bytes).map(|body| OptionalJson(Some(body)))
    }
}

impl<T> crate::http::extract::documented::DocumentedExtractor for OptionalJson<T> {
    const ANSWERS: &'static [crate::http::extract::documented::Answer] =
        <AppJson<T> as crate::http::extract::documented::DocumentedExtractor>::ANSWERS;
}

impl<T: Serialize> IntoResponse for AppJson<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}

/// Deserializes a JSON body, telling syntax errors (400) from data errors
/// (422); a field holding a NUL byte is refused first, naming it
/// ([`super::text_input`]).
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, AppError> {
    if let Some(field) = super::text_input::json_field_with_nul(bytes) {
        return Err(super::text_input::nul_refusal(field));
    }
    let deserializer = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        match inner.classify() {
            serde_json::error::Category::Data => {
                let reason = strip_position(&inner.to_string());
                let field = if path == "." {
                    missing_field(&reason).unwrap_or("body").to_owned()
                } else {
                    path
                };
                AppError::Validation {
                    message: format!("invalid {field}: {reason}"),
                    fields: vec![FieldError::new(field, reason)],
                }
            }
            _ => AppError::BadRequest(format!("malformed JSON body: {inner}")),
        }
    })
}

/// The field named by serde's "missing field `x`" message.
pub fn missing_field(reason: &str) -> Option<&str> {
    reason
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split('`').next())
}

/// serde_json appends " at line 1 column 12", which says nothing a client
/// sending one JSON object needs.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(index) => message[..index].to_owned(),
        None => message.to_owned(),
    }
}

/// Whether the request declares a JSON body (`application/json` or `application/*+json`).
pub fn is_json_content_type(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .map(|mime| {
            let mime = mime.trim().to_ascii_lowercase();
            mime == "application/json"
                || (mime.starts_with("application/") && mime.ends_with("+json"))
        })
        .unwrap_or(false)
}

/// Maps a failure to read the body: too large is 413, anything else is 400.
pub fn body_rejection(rejection: BytesRejection) -> AppError {
    if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
        AppError::PayloadTooLarge { limit: 0 }
    } else {
        AppError::BadRequest(format!("could not read the request body: {rejection}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Body {
        name: String,
        tags: Vec<String>,
    }

    #[test]
    fn syntax_errors_are_bad_requests() {
        let error = parse_json::<Body>(b"{\"name\": ").unwrap_err();
        assert!(matches!(error, AppError::BadRequest(_)), "{error:?}");
    }

    #[test]
    fn data_errors_name_the_field() {
        let error = parse_json::<Body>(br#"{"name": "a", "tags": [1]}"#).unwrap_err();
        match error {
            AppError::Validation { fields, .. } => assert_eq!(fields[0].field, "tags[0]"),
            other => panic!("expected a validation error, got {other:?}"),
        }
    }
}
