//! One identity provider of `auth_providers`, as the operator configures
//! it, and what it resolves to: the presets fill in what `github`, `google`
//! and `discord` need beyond their client id and secret.

use serde::{Deserialize, Serialize};

/// How a provider's user-info answer is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// Standard OpenID Connect claims: `sub`, `email`, `email_verified`, `name`, `picture`.
    Oidc,
    Github,
    Discord,
}

/// One identity provider as the operator configures it. For `github`,
/// `google` and `discord` only the client id and secret are needed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSettings {
    /// Path segment and account label, e.g. `github`.
    pub id: String,
    pub name: Option<String>,
    pub kind: Option<ProviderKind>,
    pub client_id: String,
    pub client_secret: Option<String>,
    pub authorization_url: Option<String>,
    pub token_url: Option<String>,
    pub userinfo_url: Option<String>,
    /// OpenID Connect issuer: its discovery document gives the keys ID
    /// tokens are checked against and the endpoints not given here.
    pub issuer: Option<String>,
    pub scopes: Option<Vec<String>>,
}

struct Preset {
    name: &'static str,
    kind: ProviderKind,
    authorization_url: Option<&'static str>,
    token_url: Option<&'static str>,
    userinfo_url: Option<&'static str>,
    issuer: Option<&'static str>,
    scopes: &'static [&'static str],
}

fn preset(id: &str) -> Option<Preset> {
    match id {
        "github" => Some(Preset {
            name: "GitHub",
            kind: ProviderKind::Github,
            authorization_url: Some("https://github.com/login/oauth/authorize"),
            token_url: Some("https://github.com/login/oauth/access_token"),
            userinfo_url: Some("https://api.github.com/user"),
            issuer: None,
            scopes: &["read:user", "user:email"],
        }),
        "google" => Some(Preset {
            name: "Google",
            kind: ProviderKind::Oidc,
            authorization_url: None,
            token_url: None,
            userinfo_url: None,
            issuer: Some("https://accounts.google.com"),
            scopes: &["openid", "email", "profile"],
        }),
        "discord" => Some(Preset {
            name: "Discord",
            kind: ProviderKind::Discord,
            authorization_url: Some("https://discord.com/oauth2/authorize"),
            token_url: Some("https://discord.com/api/oauth2/token"),
            userinfo_url: Some("https://discord.com/api/users/@me"),
            issuer: None,
            scopes: &["identify", "email"],
        }),
        _ => None,
    }
}

impl ProviderSettings {
    /// The keys of one `[[auth_providers]]` table (the fields above).
    pub const KEYS: &'static [&'static str] = &[
        "id",
        "name",
        "kind",
        "client_id",
        "client_secret",
        "authorization_url",
        "token_url",
        "userinfo_url",
        "issuer",
        "scopes",
    ];

    /// Checks the entry can work: an id fit for a path, and either every
    /// endpoint, an issuer (kind `oidc`), or a preset.
    pub fn validate(&self) -> Result<(), String> {
        let id_ok = !self.id.is_empty()
            && self.id.len() <= 40
            && self
                .id
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
        if !id_ok || self.id == "credentials" {
            return Err(format!(
                "provider id {:?} must be 1-40 characters of a-z, 0-9, - and _ (and not \"credentials\")",
                self.id
            ));
        }
        let resolved = self.resolve();
        let has_endpoints = resolved.authorization_url.is_some()
            && resolved.token_url.is_some()
            && resolved.userinfo_url.is_some();
        if !has_endpoints && resolved.discovery_issuer().is_none() {
            return Err(format!(
                "provider {:?} needs authorization_url, token_url and userinfo_url, or (kind oidc) an issuer",
                self.id
            ));
        }
        for url in [
            &resolved.authorization_url,
            &resolved.token_url,
            &resolved.userinfo_url,
            &resolved.issuer,
        ]
        .into_iter()
        .flatten()
        {
            url::Url::parse(url)
                .map_err(|error| format!("provider {:?}: {url:?}: {error}", self.id))?;
        }
        Ok(())
    }

    pub fn resolve(&self) -> ResolvedProvider {
        let preset = preset(&self.id);
        let pick = |own: &Option<String>, preset_value: Option<&'static str>| {
            own.clone().or_else(|| preset_value.map(str::to_owned))
        };
        ResolvedProvider {
            name: self
                .name
                .clone()
                .or_else(|| preset.as_ref().map(|p| p.name.to_owned()))
                .unwrap_or_else(|| self.id.clone()),
            kind: self
                .kind
                .or_else(|| preset.as_ref().map(|p| p.kind))
                .unwrap_or(ProviderKind::Oidc),
            authorization_url: pick(
                &self.authorization_url,
                preset.as_ref().and_then(|p| p.authorization_url),
            ),
            token_url: pick(&self.token_url, preset.as_ref().and_then(|p| p.token_url)),
            userinfo_url: pick(
                &self.userinfo_url,
                preset.as_ref().and_then(|p| p.userinfo_url),
            ),
            issuer: pick(&self.issuer, preset.as_ref().and_then(|p| p.issuer)),
            scopes: self.scopes.clone().unwrap_or_else(|| {
                preset
                    .as_ref()
                    .map(|p| p.scopes.iter().map(|s| (*s).to_owned()).collect())
                    .unwrap_or_else(|| vec!["openid".into(), "email".into(), "profile".into()])
            }),
        }
    }
}

pub struct ResolvedProvider {
    pub name: String,
    pub kind: ProviderKind,
    pub authorization_url: Option<String>,
    pub token_url: Option<String>,
    pub userinfo_url: Option<String>,
    pub issuer: Option<String>,
    pub scopes: Vec<String>,
}

impl ResolvedProvider {
    /// The issuer of an OpenID Connect provider: such a provider signs in
    /// through discovery and a validated ID token. Without one, the
    /// identity comes from the user-info endpoint alone.
    pub fn discovery_issuer(&self) -> Option<&str> {
        self.issuer
            .as_deref()
            .filter(|_| self.kind == ProviderKind::Oidc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(id: &str) -> ProviderSettings {
        ProviderSettings {
            id: id.to_owned(),
            name: None,
            kind: None,
            client_id: "client".to_owned(),
            client_secret: Some("secret".to_owned()),
            authorization_url: None,
            token_url: None,
            userinfo_url: None,
            issuer: None,
            scopes: None,
        }
    }

    #[test]
    fn the_listed_keys_are_the_fields() {
        let fields = match serde_json::to_value(settings("x")) {
            Ok(serde_json::Value::Object(fields)) => fields,
            other => panic!("a provider serializes to an object, not {other:?}"),
        };
        let mut fields: Vec<&str> = fields.keys().map(String::as_str).collect();
        let mut keys = ProviderSettings::KEYS.to_vec();
        fields.sort_unstable();
        keys.sort_unstable();
        assert_eq!(fields, keys);
    }

    #[test]
    fn presets_need_only_client_credentials() {
        for id in ["github", "google", "discord"] {
            assert!(settings(id).validate().is_ok(), "{id}");
        }
        assert!(settings("custom").validate().is_err());
        assert!(settings("Bad Id").validate().is_err());
        assert!(settings("credentials").validate().is_err());
    }
}
