//! URL-encoded form bodies (the sign-in and sign-out pages post them),
//! read after the text-input rule ([`super::text_input`]) has passed them.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use serde::de::DeserializeOwned;

use super::json::body_rejection;
use super::text_input::refuse_nul_in_form;
use crate::http::error::AppError;

/// A form body: a field holding a NUL byte is refused naming it, a body
/// that does not deserialize is 400, one over the limit 413. The caller
/// has checked the Content-Type.
#[derive(Debug, Clone, Copy, Default)]
pub struct AppForm<T>(pub T);

impl<T, S> FromRequest<S> for AppForm<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(body_rejection)?;
        refuse_nul_in_form(&bytes)?;
        serde_urlencoded::from_bytes(&bytes)
            .map(AppForm)
            .map_err(|error| AppError::BadRequest(format!("malformed form body: {error}")))
    }
}
