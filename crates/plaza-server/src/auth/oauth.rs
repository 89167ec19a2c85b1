//! Sign-in through external identity providers: OAuth 2.0 authorization code
//! flow with PKCE and `state` (the `oauth2` crate), OpenID Connect with
//! discovery and a validated ID token (the `openidconnect` crate), user info,
//! and presets for GitHub, Google and Discord.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use oauth2::basic::BasicClient;
use oauth2::{
    AsyncHttpClient, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken,
    EndpointMaybeSet, EndpointNotSet, EndpointSet, HttpRequest, HttpResponse, PkceCodeChallenge,
    PkceCodeVerifier, RedirectUrl, Scope, TokenResponse, TokenUrl,
};
use openidconnect::core::{
    CoreAuthenticationFlow, CoreClient, CoreProviderMetadata, CoreUserInfoClaims,
};
use openidconnect::{
    ClaimsVerificationError, IssuerUrl, Nonce, SignatureVerificationError, TokenResponse as _,
    UserInfoError, UserInfoUrl,
};
use plaza_domain::accounts::ProviderIdentity;
use serde_json::Value;

use crate::settings::{ProviderKind, ProviderSettings, ResolvedProvider};

/// The endpoints of a provider signing in with plain OAuth.
#[derive(Debug, Clone)]
struct Endpoints {
    authorization: String,
    token: String,
    userinfo: String,
}

/// An issuer's discovery document with its keys, and when it was read.
struct Discovered {
    metadata: CoreProviderMetadata,
    read_at: Instant,
}

/// An ID token naming a key the cached key set lacks has the keys read
/// again (the provider may have rotated them), at most this often.
const KEY_REFRESH_INTERVAL: Duration = Duration::from_secs(60);

type OidcClient = CoreClient<
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// Why a provider sign-in failed; the code goes to the sign-in page.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    #[error("the identity provider could not be reached: {0}")]
    Unreachable(String),
    #[error("the identity provider refused the authorization code: {0}")]
    CodeRefused(String),
    #[error("the identity provider's user information is unusable: {0}")]
    BadProfile(String),
    #[error("the identity provider's ID token is not valid: {0}")]
    InvalidIdToken(String),
}

impl OAuthError {
    pub fn code(&self) -> &'static str {
        match self {
            OAuthError::Unreachable(_) => "provider_unreachable",
            OAuthError::CodeRefused(_) => "code_refused",
            OAuthError::BadProfile(_) => "profile_unusable",
            OAuthError::InvalidIdToken(_) => "invalid_id_token",
        }
    }
}

/// A configured provider, ready to start and finish sign-ins.
pub struct Provider {
    pub id: String,
    pub name: String,
    kind: ProviderKind,
    client_id: String,
    client_secret: Option<String>,
    scopes: Vec<String>,
    configured: ResolvedProvider,
    /// Read on first use, and again when an ID token names an unknown key.
    discovered: tokio::sync::Mutex<Option<Discovered>>,
}

type ConfiguredClient =
    BasicClient<EndpointSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

/// Where a sign-in goes next: the provider's page, and what to keep until
/// the callback.
pub struct Authorization {
    pub url: String,
    pub state: String,
    pub pkce_verifier: String,
    /// The nonce the ID token must carry (OpenID Connect providers only).
    pub nonce: Option<String>,
}

impl Provider {
    pub fn new(settings: &ProviderSettings) -> Self {
        let configured = settings.resolve();
        Provider {
            id: settings.id.clone(),
            name: configured.name.clone(),
            kind: configured.kind,
            client_id: settings.client_id.clone(),
            client_secret: settings.client_secret.clone(),
            scopes: configured.scopes.clone(),
            configured,
            discovered: tokio::sync::Mutex::new(None),
        }
    }

    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            ProviderKind::Oidc => "oidc",
            ProviderKind::Github | ProviderKind::Discord => "oauth",
        }
    }

    /// The endpoints of a plain OAuth provider, all configured.
    fn endpoints(&self) -> Result<Endpoints, OAuthError> {
        let c = &self.configured;
        match (&c.authorization_url, &c.token_url, &c.userinfo_url) {
            (Some(authorization), Some(token), Some(userinfo)) => Ok(Endpoints {
                authorization: authorization.clone(),
                token: token.clone(),
                userinfo: userinfo.clone(),
            }),
            _ => Err(OAuthError::Unreachable(
                "no endpoints and no issuer".to_owned(),
            )),
        }
    }

    /// The issuer's metadata and keys, with the configured endpoints in
    /// place of discovered ones: read once, and again when the cached copy
    /// is older than `stale_after`.
    async fn metadata(
        &self,
        http: &reqwest::Client,
        issuer: &str,
        stale_after: Option<Duration>,
    ) -> Result<CoreProviderMetadata, OAuthError> {
        let mut cached = self.discovered.lock().await;
        if let Some(discovered) = cached.as_ref()
            && stale_after.is_none_or(|age| discovered.read_at.elapsed() < age)
        {
            return Ok(discovered.metadata.clone());
        }
        let issuer_url = IssuerUrl::new(issuer.to_owned())
            .map_err(|error| OAuthError::Unreachable(format!("bad issuer URL: {error}")))?;
        let mut metadata =
            CoreProviderMetadata::discover_async(issuer_url, &ProviderHttp(http.clone()))
                .await
                .map_err(|error| {
                    OAuthError::Unreachable(format!(
                        "discovery at {issuer}: {}",
                        error_chain(&error)
                    ))
                })?;
        let c = &self.configured;
        let invalid =
            |error: url::ParseError| OAuthError::Unreachable(format!("bad endpoint URL: {error}"));
        if let Some(url) = &c.authorization_url {
            metadata =
                metadata.set_authorization_endpoint(AuthUrl::new(url.clone()).map_err(invalid)?);
        }
        if let Some(url) = &c.token_url {
            metadata =
                metadata.set_token_endpoint(Some(TokenUrl::new(url.clone()).map_err(invalid)?));
        }
        if let Some(url) = &c.userinfo_url {
            metadata = metadata
                .set_userinfo_endpoint(Some(UserInfoUrl::new(url.clone()).map_err(invalid)?));
        }
        *cached = Some(Discovered {
            metadata: metadata.clone(),
            read_at: Instant::now(),
        });
        Ok(metadata)
    }

    fn oidc_client(
        &self,
        metadata: CoreProviderMetadata,
        redirect: &str,
    ) -> Result<OidcClient, OAuthError> {
        let redirect = RedirectUrl::new(redirect.to_owned())
            .map_err(|error| OAuthError::Unreachable(format!("bad redirect URL: {error}")))?;
        Ok(CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(self.client_id.clone()),
            self.client_secret.clone().map(ClientSecret::new),
        )
        .set_redirect_uri(redirect))
    }

    fn client(
        &self,
        endpoints: &Endpoints,
        redirect: &str,
    ) -> Result<ConfiguredClient, OAuthError> {
        let invalid =
            |error: url::ParseError| OAuthError::Unreachable(format!("bad endpoint URL: {error}"));
        let mut client = BasicClient::new(ClientId::new(self.client_id.clone()))
            .set_auth_uri(AuthUrl::new(endpoints.authorization.clone()).map_err(invalid)?)
            .set_token_uri(TokenUrl::new(endpoints.token.clone()).map_err(invalid)?)
            .set_redirect_uri(RedirectUrl::new(redirect.to_owned()).map_err(invalid)?);
        if let Some(secret) = &self.client_secret {
            client = client.set_client_secret(ClientSecret::new(secret.clone()));
        }
        Ok(client)
    }

    /// Starts a sign-in: the provider URL with a fresh `state` and PKCE
    /// challenge, and for OpenID Connect a fresh nonce.
    pub async fn authorize(
        &self,
        http: &reqwest::Client,
        redirect: &str,
    ) -> Result<Authorization, OAuthError> {
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        if let Some(issuer) = self.configured.discovery_issuer() {
            let metadata = self.metadata(http, issuer, None).await?;
            let (url, state, nonce) = self
                .oidc_client(metadata, redirect)?
                .authorize_url(
                    CoreAuthenticationFlow::AuthorizationCode,
                    CsrfToken::new_random,
                    Nonce::new_random,
                )
                // The client asks for `openid` itself.
                .add_scopes(
                    self.scopes
                        .iter()
                        .filter(|scope| *scope != "openid")
                        .cloned()
                        .map(Scope::new),
                )
                .set_pkce_challenge(challenge)
                .url();
            return Ok(Authorization {
                url: url.to_string(),
                state: state.secret().clone(),
                pkce_verifier: verifier.secret().clone(),
                nonce: Some(nonce.secret().clone()),
            });
        }
        let endpoints = self.endpoints()?;
        let (url, state) = self
            .client(&endpoints, redirect)?
            .authorize_url(CsrfToken::new_random)
            .add_scopes(self.scopes.iter().cloned().map(Scope::new))
            .set_pkce_challenge(challenge)
            .url();
        Ok(Authorization {
            url: url.to_string(),
            state: state.secret().clone(),
            pkce_verifier: verifier.secret().clone(),
            nonce: None,
        })
    }

    /// Finishes a sign-in: trades the code for a token (with the PKCE
    /// verifier) and reads who signed in. An OpenID Connect provider's
    /// answer must carry an ID token signed with one of the issuer's keys,
    /// issued by it to this client, unexpired and with the sign-in's `nonce`.
    pub async fn finish(
        &self,
        http: &reqwest::Client,
        redirect: &str,
        code: &str,
        pkce_verifier: &str,
        nonce: Option<&str>,
    ) -> Result<ProviderIdentity, OAuthError> {
        if let Some(issuer) = self.configured.discovery_issuer() {
            let nonce = nonce.ok_or_else(|| {
                OAuthError::InvalidIdToken("the sign-in kept no nonce".to_owned())
            })?;
            return self
                .finish_oidc(http, issuer, redirect, code, pkce_verifier, nonce)
                .await;
        }
        let endpoints = self.endpoints()?;
        let client = self.client(&endpoints, redirect)?;
        let token = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .set_pkce_verifier(PkceCodeVerifier::new(pkce_verifier.to_owned()))
            .request_async(&ProviderHttp(http.clone()))
            .await
            .map_err(|error| OAuthError::CodeRefused(error_chain(&error)))?;
        let access_token = token.access_token().secret();
        let profile = get_json(http, &endpoints.userinfo, access_token).await?;
        let mut identity = self.identity_from(&profile)?;
        if self.kind == ProviderKind::Github && !identity.email_verified {
            self.github_verified_email(http, &endpoints.userinfo, access_token, &mut identity)
                .await;
        }
        Ok(identity)
    }

    async fn finish_oidc(
        &self,
        http: &reqwest::Client,
        issuer: &str,
        redirect: &str,
        code: &str,
        pkce_verifier: &str,
        nonce: &str,
    ) -> Result<ProviderIdentity, OAuthError> {
        let provider_http = ProviderHttp(http.clone());
        let client = self.oidc_client(self.metadata(http, issuer, None).await?, redirect)?;
        let token = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|error| OAuthError::Unreachable(error.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(pkce_verifier.to_owned()))
            .request_async(&provider_http)
            .await
            .map_err(|error| OAuthError::CodeRefused(error_chain(&error)))?;
        let id_token = token.id_token().ok_or_else(|| {
            OAuthError::InvalidIdToken("the token answer has no id_token".to_owned())
        })?;
        let nonce = Nonce::new(nonce.to_owned());
        let claims = match id_token.claims(&client.id_token_verifier(), &nonce) {
            Err(ClaimsVerificationError::SignatureVerification(
                SignatureVerificationError::NoMatchingKey,
            )) => {
                let refreshed = self
                    .metadata(http, issuer, Some(KEY_REFRESH_INTERVAL))
                    .await?;
                let client = self.oidc_client(refreshed, redirect)?;
                id_token
                    .claims(&client.id_token_verifier(), &nonce)
                    .cloned()
            }
            checked => checked.cloned(),
        }
        .map_err(|error| OAuthError::InvalidIdToken(error_chain(&error)))?;
        let mut profile = serde_json::to_value(&claims)
            .map_err(|error| OAuthError::BadProfile(error.to_string()))?;
        // The user-info endpoint fills in what the ID token leaves out; its
        // answer must be about the ID token's subject.
        if let Ok(request) =
            client.user_info(token.access_token().clone(), Some(claims.subject().clone()))
        {
            let info: CoreUserInfoClaims =
                request
                    .request_async(&provider_http)
                    .await
                    .map_err(|error| match error {
                        UserInfoError::Request(_) => {
                            OAuthError::Unreachable(format!("user info: {}", error_chain(&error)))
                        }
                        other => OAuthError::BadProfile(error_chain(&other)),
                    })?;
            let info = serde_json::to_value(&info)
                .map_err(|error| OAuthError::BadProfile(error.to_string()))?;
            fill_profile(&mut profile, info);
        }
        self.identity_from(&profile)
    }

    fn identity_from(&self, profile: &Value) -> Result<ProviderIdentity, OAuthError> {
        let text = |name: &str| {
            profile[name]
                .as_str()
                .map(str::to_owned)
                .filter(|s| !s.is_empty())
        };
        let id = match &profile[if self.kind == ProviderKind::Oidc {
            "sub"
        } else {
            "id"
        }] {
            Value::String(id) if !id.is_empty() => id.clone(),
            Value::Number(id) => id.to_string(),
            _ => return Err(OAuthError::BadProfile("no account id".to_owned())),
        };
        let identity = match self.kind {
            ProviderKind::Oidc => ProviderIdentity {
                provider: self.id.clone(),
                provider_account_id: id,
                email: text("email"),
                email_verified: profile["email_verified"].as_bool().unwrap_or(false),
                name: text("name").or_else(|| text("preferred_username")),
                image: text("picture"),
            },
            ProviderKind::Github => ProviderIdentity {
                provider: self.id.clone(),
                provider_account_id: id,
                email: text("email"),
                // GitHub's profile email is not marked verified; the emails
                // endpoint says which are.
                email_verified: false,
                name: text("name").or_else(|| text("login")),
                image: text("avatar_url"),
            },
            ProviderKind::Discord => ProviderIdentity {
                provider: self.id.clone(),
                provider_account_id: id.clone(),
                email: text("email"),
                email_verified: profile["verified"].as_bool().unwrap_or(false),
                name: text("global_name").or_else(|| text("username")),
                image: text("avatar")
                    .map(|hash| format!("https://cdn.discordapp.com/avatars/{id}/{hash}.png")),
            },
        };
        Ok(identity)
    }

    async fn github_verified_email(
        &self,
        http: &reqwest::Client,
        userinfo: &str,
        access_token: &str,
        identity: &mut ProviderIdentity,
    ) {
        let url = format!("{}/emails", userinfo.trim_end_matches('/'));
        let Ok(Value::Array(emails)) = get_json(http, &url, access_token).await else {
            return;
        };
        let verified = emails.iter().find(|email| {
            email["verified"].as_bool() == Some(true) && email["primary"].as_bool() == Some(true)
        });
        if let Some(address) = verified.and_then(|email| email["email"].as_str()) {
            identity.email = Some(address.to_owned());
            identity.email_verified = true;
        }
    }
}

/// Adds to `profile` (an ID token's claims) the user-info claims it lacks.
/// An email and whether it is verified go together: the user info's are
/// taken only when the ID token names no email.
fn fill_profile(profile: &mut Value, info: Value) {
    let (Value::Object(profile), Value::Object(info)) = (profile, info) else {
        return;
    };
    let token_has_email = profile.contains_key("email");
    for (name, value) in info {
        let paired_with_email = name == "email" || name == "email_verified";
        if !(token_has_email && paired_with_email) {
            profile.entry(name).or_insert(value);
        }
    }
}

/// An error with its sources, for the log.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

async fn get_json(
    http: &reqwest::Client,
    url: &str,
    access_token: &str,
) -> Result<Value, OAuthError> {
    http.get(url)
        .bearer_auth(access_token)
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|error| OAuthError::Unreachable(format!("user info: {error}")))?
        .json()
        .await
        .map_err(|error| OAuthError::BadProfile(error.to_string()))
}

/// Plaza's own reqwest client as the HTTP client of `oauth2` and
/// `openidconnect`.
struct ProviderHttp(reqwest::Client);

impl<'c> AsyncHttpClient<'c> for ProviderHttp {
    type Error = reqwest::Error;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, reqwest::Error>> + Send + 'c>>;

    fn call(&'c self, request: HttpRequest) -> Self::Future {
        Box::pin(send_request(&self.0, request))
    }
}

async fn send_request(
    http: &reqwest::Client,
    request: HttpRequest,
) -> Result<HttpResponse, reqwest::Error> {
    let (parts, body) = request.into_parts();
    let response = http
        .request(parts.method, parts.uri.to_string())
        .headers(parts.headers)
        .body(body)
        .send()
        .await?;
    let mut builder = axum::http::Response::builder().status(response.status());
    for (name, value) in response.headers() {
        builder = builder.header(name, value);
    }
    let body = response.bytes().await?.to_vec();
    Ok(builder.body(body).unwrap_or_default())
}

/// The outbound client for identity providers: no redirects followed (a
/// token endpoint must answer itself), short timeouts.
pub fn http_client(app_name: &str) -> Result<reqwest::Client, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(10))
        .connect_timeout(Duration::from_secs(5))
        .user_agent(format!("{app_name}/{}", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|error| format!("cannot build the HTTP client: {error}"))
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
    fn profiles_map_per_provider_kind() {
        let github = Provider::new(&settings("github"));
        let identity = github
            .identity_from(&serde_json::json!({"id": 42, "login": "octo", "email": "o@x.io"}))
            .unwrap();
        assert_eq!(identity.provider_account_id, "42");
        assert!(
            !identity.email_verified,
            "GitHub profile emails are not trusted as verified"
        );
        let discord = Provider::new(&settings("discord"));
        let identity = discord
            .identity_from(&serde_json::json!({"id": "9", "username": "d", "email": "d@x.io", "verified": true, "avatar": "abc"}))
            .unwrap();
        assert!(identity.email_verified);
        assert_eq!(
            identity.image.as_deref(),
            Some("https://cdn.discordapp.com/avatars/9/abc.png")
        );
        assert!(
            discord
                .identity_from(&serde_json::json!({"username": "x"}))
                .is_err()
        );
    }
}
