use axum::http::{HeaderValue, Request};
use rand::RngCore;
use tower_http::request_id::{MakeRequestId, RequestId};

/// UUID v4 request ids from the thread-local generator: unique without a
/// system call per request.
#[derive(Clone, Copy, Default)]
pub struct MakeRequestUuid;

impl MakeRequestId for MakeRequestUuid {
    fn make_request_id<B>(&mut self, _request: &Request<B>) -> Option<RequestId> {
        let mut bytes = [0u8; 16];
        rand::rng().fill_bytes(&mut bytes);
        let id = uuid::Builder::from_random_bytes(bytes).into_uuid();
        let mut text = uuid::Uuid::encode_buffer();
        HeaderValue::from_str(id.hyphenated().encode_lower(&mut text))
            .ok()
            .map(RequestId::new)
    }
}
