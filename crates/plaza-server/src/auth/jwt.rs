//! Admin JWTs: HS256, short-lived, revocable by `jti`.

use std::path::Path;

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::secrets::{load_or_create_secret, random_token};

pub use plaza_domain::policy::AdminPermission;

/// The claims of an admin JWT (DECISIONS.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AdminClaims {
    /// The user id, as a string.
    pub sub: String,
    pub role: String,
    pub permissions: Vec<AdminPermission>,
    pub iat: i64,
    pub exp: i64,
    pub jti: String,
    /// The issue time in Unix milliseconds (`iat` has whole seconds only),
    /// so a ban revokes exactly the tokens issued before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat_ms: Option<i64>,
}

impl AdminClaims {
    /// When the token was issued, in Unix milliseconds.
    pub fn issued_at_millis(&self) -> i64 {
        self.iat_ms.unwrap_or(self.iat.saturating_mul(1000))
    }

    /// Whether the token holds `admin:super` (the super admin rate tier).
    pub fn grants_super(&self) -> bool {
        self.permissions.contains(&AdminPermission::Super)
    }

    /// Whether the token grants `needed`; `admin:super` grants everything.
    pub fn grants(&self, needed: AdminPermission) -> bool {
        self.permissions
            .iter()
            .any(|held| *held == needed || *held == AdminPermission::Super)
    }
}

/// Signing and verification keys.
#[derive(Clone)]
pub struct JwtKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
}

impl JwtKeys {
    /// Uses `secret` when set; otherwise the secret kept in `data_dir`,
    /// generated on first start (so tokens survive restarts).
    pub fn load(secret: Option<&str>, data_dir: &Path) -> Result<Self, String> {
        let secret = match secret {
            Some(secret) => secret.to_owned(),
            None => load_or_create_secret(&data_dir.join("jwt-secret"))?,
        };
        Ok(Self::from_secret(secret.as_bytes()))
    }

    pub fn from_secret(secret: &[u8]) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 0;
        validation.set_required_spec_claims(&["exp", "sub", "iat"]);
        JwtKeys {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            validation,
        }
    }

    /// Issues a token for `user_id` valid for `ttl_secs`.
    pub fn mint(
        &self,
        user_id: i64,
        role: &str,
        permissions: Vec<AdminPermission>,
        ttl_secs: i64,
    ) -> Result<(String, AdminClaims), String> {
        let now_ms = plaza_domain::time::now_millis();
        let now = now_ms.div_euclid(1000);
        let claims = AdminClaims {
            sub: user_id.to_string(),
            role: role.to_owned(),
            permissions,
            iat: now,
            exp: now + ttl_secs,
            jti: random_token(),
            iat_ms: Some(now_ms),
        };
        let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .map_err(|error| format!("cannot sign token: {error}"))?;
        Ok((token, claims))
    }

    /// Checks signature, algorithm (HS256 only: `alg: none` and others are
    /// refused) and expiry.
    pub fn verify(&self, token: &str) -> Result<AdminClaims, jsonwebtoken::errors::Error> {
        jsonwebtoken::decode::<AdminClaims>(token, &self.decoding, &self.validation)
            .map(|data| data.claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_and_carry_their_claims() {
        let keys = JwtKeys::from_secret(b"0123456789abcdef0123456789abcdef");
        let (token, claims) = keys
            .mint(7, "admin", vec![AdminPermission::Read], 60)
            .unwrap();
        let verified = keys.verify(&token).unwrap();
        assert_eq!(verified.sub, "7");
        assert_eq!(verified.jti, claims.jti);
        assert!(verified.grants(AdminPermission::Read));
        assert!(!verified.grants(AdminPermission::Write));
    }

    #[test]
    fn other_keys_and_expired_tokens_are_refused() {
        let keys = JwtKeys::from_secret(b"0123456789abcdef0123456789abcdef");
        let other = JwtKeys::from_secret(b"fedcba9876543210fedcba9876543210");
        let (token, _) = keys
            .mint(7, "admin", vec![AdminPermission::Super], 60)
            .unwrap();
        assert!(other.verify(&token).is_err());
        let (expired, _) = keys
            .mint(7, "admin", vec![AdminPermission::Super], -5)
            .unwrap();
        assert!(keys.verify(&expired).is_err());
    }
}
