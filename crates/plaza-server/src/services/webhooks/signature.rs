//! The signature of a delivery (DECISIONS.md): `X-Plaza-Signature:
//! t=<unix seconds>,v1=<lowercase hex HMAC-SHA256 of "<t>.<body>" keyed
//! with the UTF-8 bytes of the secret as shown>`.

use ring::hmac;

/// The `X-Plaza-Signature` value of `body` sent at `unix_seconds` under
/// `secret`.
pub fn signature_header(secret: &str, unix_seconds: i64, body: &str) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let mut context = hmac::Context::with_key(&key);
    context.update(unix_seconds.to_string().as_bytes());
    context.update(b".");
    context.update(body.as_bytes());
    let tag = context.sign();
    let hex: String = tag
        .as_ref()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("t={unix_seconds},v1={hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_the_hmac_of_time_dot_body() {
        // HMAC-SHA256(key "secret", "1700000000.{}"), computed independently
        // with `printf '1700000000.{}' | openssl dgst -sha256 -hmac secret`.
        assert_eq!(
            signature_header("secret", 1_700_000_000, "{}"),
            "t=1700000000,v1=b8569b78799ff9e3cbff0fc2d63a33a2b57f3282abd07c37ae5e8e7d79a5f163"
        );
    }
}
