//! The guarded fetcher behind `GET /api/link-preview`.
//!
//! SSRF defence, in order: only `http`/`https`; ports 80, 443 and
//! [`FetchConfig::allowed_ports`]; an IP-literal host is checked directly,
//! and a host name is resolved once per connection by a DNS hook inside the
//! HTTP client that hands the connector only the addresses that passed the
//! check, so the address checked is the address connected to (no DNS
//! rebinding gap). Redirects are followed by hand, at most
//! [`FetchConfig::max_redirects`], each hop checked again. No proxy from
//! the environment is used (a proxy would make the check meaningless) and no
//! cookie store exists.
//!
//! The service's own routes are never fetched over the network: they are
//! asked for in process through [`InternalPages`], and its API (paths
//! under `/api/`) is refused. A preview of a preview of a preview… could
//! otherwise recurse through the network without bound, each level holding
//! a connection and a file descriptor. A path of the own origin that no
//! route of the service serves (a front end served beside it on the same
//! origin) is fetched from the base URL over HTTP by a client of its own,
//! which lets only that origin (scheme, host and port as written) past the
//! private-address and port rules.

use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION};
use serde::Serialize;
use url::{Host, Url};

use crate::extract::{Metadata, absolute_image_url, extract};
use crate::policy::{AddressPolicy, IpNet};

/// Settings of a [`PreviewClient`].
#[derive(Debug, Clone)]
pub struct FetchConfig {
    /// Application name for the user agent `<app_name>-LinkPreview/1.0`
    /// (SPEC.md rule 2); characters not allowed in a product token are
    /// dropped, and an empty name becomes `Plaza`.
    pub app_name: String,
    /// Budget for the whole preview: connecting, every redirect hop and
    /// reading the body (SPEC.md: 10 seconds; tests use less).
    pub timeout: Duration,
    /// Redirects followed before giving up.
    pub max_redirects: usize,
    /// Bytes of (decompressed) body read at most.
    pub max_body: usize,
    /// Allow loopback, private, link-local and other non-public targets
    /// (`PLAZA_LINK_PREVIEW_ALLOW_PRIVATE`); for tests and internal
    /// deployments. Multicast, broadcast and unspecified addresses stay
    /// refused.
    pub allow_private: bool,
    /// Ports allowed besides 80 and 443.
    pub allowed_ports: Vec<u16>,
    /// Networks allowed even when `allow_private` is off: a narrower
    /// alternative for an internal deployment that must reach one subnet
    /// without opening the cloud metadata address and the rest.
    pub allowed_networks: Vec<IpNet>,
}

impl Default for FetchConfig {
    fn default() -> Self {
        FetchConfig {
            app_name: "Plaza".to_owned(),
            timeout: Duration::from_secs(10),
            max_redirects: 5,
            max_body: 2 * 1024 * 1024,
            allow_private: false,
            allowed_ports: Vec::new(),
            allowed_networks: Vec::new(),
        }
    }
}

/// The `200` body of `GET /api/link-preview` (SPEC.md rule 5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LinkPreview {
    /// Page title (may be empty).
    pub title: String,
    /// Page description (may be empty).
    pub description: String,
    /// Absolute image URL, or an empty string when there is none (the spec
    /// types the field as a string).
    pub image: String,
    /// The URL as requested (after trimming), not the final redirect target.
    pub url: String,
}

/// Why a preview could not be made.
///
/// The first group is the client's fault and maps to `400`; the second is a
/// failure of the target and maps to `502` (DECISIONS.md, "Behaviour left
/// open"). See [`PreviewError::status`].
#[derive(Debug, thiserror::Error)]
pub enum PreviewError {
    /// No URL given (SPEC.md rule 6).
    #[error("URL is required")]
    MissingUrl,
    /// The URL does not parse.
    #[error("invalid URL: {0}")]
    InvalidUrl(String),
    /// A scheme other than `http` or `https`, in the request or a redirect.
    #[error("unsupported URL scheme {0:?}: only http and https are allowed")]
    UnsupportedScheme(String),
    /// A port other than 80, 443 and the configured ones.
    #[error("port {0} is not allowed")]
    PortNotAllowed(u16),
    /// The target (or a redirect hop) is a non-public address. The address
    /// is in the message (for logs) but not in [`PreviewError::details`]:
    /// anonymous callers must not learn what internal names resolve to.
    #[error("{host} resolves to {addr}, which is not a public address")]
    AddressRefused {
        /// Host as written in the URL.
        host: String,
        /// The refused address.
        addr: IpAddr,
    },
    /// A path under `/api/` on the service's own origin (the URL, or a
    /// redirect hop): previewing the API would let one request nest
    /// previews of previews.
    #[error("the service's own API is not previewed")]
    OwnApi,
    /// The whole preview took longer than [`FetchConfig::timeout`].
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// More than [`FetchConfig::max_redirects`] redirects.
    #[error("too many redirects (more than {0})")]
    TooManyRedirects(usize),
    /// A redirect without a usable `Location`.
    #[error("redirect without a valid Location header")]
    BadRedirect,
    /// The target answered with a non-2xx status.
    #[error("{}", status_text(*.0))]
    Status(u16),
    /// DNS, connection or TLS failure, or the service's own pages were not
    /// available in process. The error chain is for the log; callers get a
    /// fixed text from [`PreviewError::details`].
    #[error("could not connect to the target: {0}")]
    Connect(String),
    /// A protocol or body decoding failure after connecting; the chain is
    /// for the log only, as with [`PreviewError::Connect`].
    #[error("the target's answer could not be read: {0}")]
    Read(String),
}

fn status_text(code: u16) -> String {
    let reason = reqwest::StatusCode::from_u16(code)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Unknown Status");
    format!("{code} {reason}")
}

impl PreviewError {
    /// Whether the request itself is at fault (`400`) rather than the
    /// target (`502`).
    pub fn is_client_error(&self) -> bool {
        matches!(
            self,
            PreviewError::MissingUrl
                | PreviewError::InvalidUrl(_)
                | PreviewError::UnsupportedScheme(_)
                | PreviewError::PortNotAllowed(_)
                | PreviewError::AddressRefused { .. }
                | PreviewError::OwnApi
        )
    }

    /// The HTTP status the server answers with: `400` or `502`.
    pub fn status(&self) -> u16 {
        if self.is_client_error() { 400 } else { 502 }
    }

    /// The `error` string of the `{error, details}` body: "URL is required"
    /// (SPEC.md rule 6), "Invalid URL", "URL not allowed", or "Failed to
    /// fetch link preview" for every fetch failure (rule 7).
    pub fn error(&self) -> &'static str {
        match self {
            PreviewError::MissingUrl => "URL is required",
            PreviewError::InvalidUrl(_) | PreviewError::UnsupportedScheme(_) => "Invalid URL",
            PreviewError::PortNotAllowed(_)
            | PreviewError::AddressRefused { .. }
            | PreviewError::OwnApi => "URL not allowed",
            _ => "Failed to fetch link preview",
        }
    }

    /// The `details` string of the `{error, details}` body, such as
    /// `404 Not Found` for a non-2xx answer. It never carries a resolved
    /// address or a resolver or connection error chain (those stay in the
    /// [`Display`](std::fmt::Display) text, for the log): the endpoint is
    /// anonymous, and such details map the internal network.
    pub fn details(&self) -> String {
        match self {
            PreviewError::AddressRefused { host, .. } => format!("{host} is not a public address"),
            PreviewError::Connect(_) => "could not connect to the target".to_owned(),
            PreviewError::Read(_) => "the target's answer could not be read".to_owned(),
            _ => self.to_string(),
        }
    }
}

/// Future returned by [`Resolver::lookup`].
pub type Lookup<'a> = Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send + 'a>>;

/// Name resolution used by [`PreviewClient`]; injectable so tests can map a
/// public-looking name to the loopback fixture server.
pub trait Resolver: Send + Sync + 'static {
    /// All addresses of `host`.
    fn lookup<'a>(&'a self, host: &'a str) -> Lookup<'a>;
}

/// The operating system's resolver (`getaddrinfo`, through Tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn lookup<'a>(&'a self, host: &'a str) -> Lookup<'a> {
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host, 0)).await?;
            Ok(addrs.map(|a| a.ip()).collect())
        })
    }
}

/// A fixed table of names; unknown names fail to resolve. For tests and
/// for deployments that pin names to addresses.
#[derive(Debug, Clone, Default)]
pub struct StaticResolver {
    entries: Vec<(String, Vec<IpAddr>)>,
}

impl StaticResolver {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or extends) the addresses of `host` (ASCII case-insensitive).
    pub fn with(mut self, host: &str, addr: IpAddr) -> Self {
        let host = host.to_ascii_lowercase();
        match self.entries.iter_mut().find(|(h, _)| *h == host) {
            Some((_, addrs)) => addrs.push(addr),
            None => self.entries.push((host, vec![addr])),
        }
        self
    }
}

impl Resolver for StaticResolver {
    fn lookup<'a>(&'a self, host: &'a str) -> Lookup<'a> {
        let found = self
            .entries
            .iter()
            .find(|(h, _)| h.eq_ignore_ascii_case(host))
            .map(|(_, addrs)| addrs.clone());
        Box::pin(async move {
            found.ok_or_else(|| {
                io::Error::new(io::ErrorKind::NotFound, format!("no such host: {host}"))
            })
        })
    }
}

/// One answer of the service itself, produced in process by
/// [`InternalPages::get`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InternalPage {
    /// HTTP status code.
    pub status: u16,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// The `Location` header of a redirect, if any.
    pub location: Option<String>,
    /// The body, at most [`FetchConfig::max_body`] bytes of it.
    pub body: Vec<u8>,
}

/// What the service makes of a `GET` of one of its own URLs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InternalAnswer {
    /// One of its routes answered (a route's own 404 included).
    Page(InternalPage),
    /// No route of the service serves the path: the page is another
    /// application's on the same origin (a front end served beside the
    /// service), fetched from the base URL over HTTP.
    NotServed,
}

/// Future returned by [`InternalPages::get`].
pub type InternalFetch<'a> = Pin<Box<dyn Future<Output = Option<InternalAnswer>> + Send + 'a>>;

/// The service's own pages, answered in process.
///
/// Internal links (SPEC.md rule 1: a URL starting with `/`), absolute URLs
/// on the base URL's origin and redirect hops landing there are asked for
/// here first: a network fetch of the service's own routes could recurse
/// through `/api/link-preview`. Paths under `/api/` never reach this hook.
/// Only a path the hook does not serve ([`InternalAnswer::NotServed`]) is
/// fetched from the base URL over the network.
pub trait InternalPages: Send + Sync + 'static {
    /// Answers a `GET` of `path_and_query` (such as `/og-image-viewer?quote=Hi`),
    /// or `None` when the pages are not available (the server is not
    /// serving yet, or is stopping).
    fn get<'a>(&'a self, path_and_query: &'a str, max_body: usize) -> InternalFetch<'a>;
}

/// Error carried through the HTTP client when every address of a name was
/// refused; recognised again in [`classify_send_error`].
#[derive(Debug, thiserror::Error)]
#[error("{host} resolves to {addr}, which is not a public address")]
struct Refused {
    host: String,
    addr: IpAddr,
}

/// The DNS hook given to the HTTP client: resolves once, returns only the
/// permitted addresses, so the connector can only reach checked ones.
pub(crate) struct GuardedDns {
    resolver: Arc<dyn Resolver>,
    policy: AddressPolicy,
}

impl GuardedDns {
    pub(crate) fn new(resolver: Arc<dyn Resolver>, policy: AddressPolicy) -> Self {
        GuardedDns { resolver, policy }
    }
}

impl reqwest::dns::Resolve for GuardedDns {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let resolver = Arc::clone(&self.resolver);
        let policy = self.policy.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs = resolver.lookup(&host).await?;
            let Some(first) = addrs.first().copied() else {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no addresses for {host}"),
                )
                .into());
            };
            let permitted: Vec<SocketAddr> = addrs
                .into_iter()
                .filter(|ip| policy.permits(*ip))
                .map(|ip| SocketAddr::new(ip, 0))
                .collect();
            if permitted.is_empty() {
                return Err(Box::new(Refused { host, addr: first })
                    as Box<dyn std::error::Error + Send + Sync>);
            }
            let addrs: reqwest::dns::Addrs = Box::new(permitted.into_iter());
            Ok(addrs)
        })
    }
}

/// Fetches pages and turns them into [`LinkPreview`]s. Cheap to share:
/// build one per process and reuse it (it keeps a connection pool).
pub struct PreviewClient {
    config: FetchConfig,
    policy: AddressPolicy,
    /// The network client for every origin but the own one, with the
    /// guarded DNS hook: every such target passes the address policy.
    client: reqwest::Client,
    /// The network client for the own origin's pages that the service does
    /// not serve: private addresses allowed, used for no other origin.
    own_origin: reqwest::Client,
    /// The service's own pages; without it, own-origin URLs fail (502)
    /// rather than being fetched over the network.
    internal: Option<Arc<dyn InternalPages>>,
}

/// The HTTP client could not be built (TLS setup).
#[derive(Debug, thiserror::Error)]
#[error("could not build the link preview HTTP client: {0}")]
pub struct BuildError(String);

impl BuildError {
    pub(crate) fn new(cause: String) -> Self {
        BuildError(cause)
    }
}

impl PreviewClient {
    /// A client using the system resolver.
    pub fn new(config: FetchConfig) -> Result<Self, BuildError> {
        Self::with_resolver(config, Arc::new(SystemResolver))
    }

    /// A client resolving names through `resolver`.
    pub fn with_resolver(
        config: FetchConfig,
        resolver: Arc<dyn Resolver>,
    ) -> Result<Self, BuildError> {
        // reqwest is built without a default crypto provider; installing
        // ring is idempotent (an already installed provider is kept).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let policy = AddressPolicy {
            allow_private: config.allow_private,
            allowed_networks: config.allowed_networks.clone(),
        };
        let client = network_client(&config, Arc::clone(&resolver), policy.clone())?;
        // Only ever asked for the base URL's own origin, so the name it
        // resolves is the base URL's host as written.
        let own_origin = network_client(
            &config,
            resolver,
            AddressPolicy {
                allow_private: true,
                allowed_networks: Vec::new(),
            },
        )?;
        Ok(PreviewClient {
            client,
            own_origin,
            policy,
            config,
            internal: None,
        })
    }

    /// Answers the service's own origin through `pages`, in process.
    pub fn with_internal_pages(mut self, pages: Arc<dyn InternalPages>) -> Self {
        self.internal = Some(pages);
        self
    }

    /// The user agent sent with every request.
    pub fn user_agent(&self) -> String {
        user_agent(&self.config.app_name)
    }

    /// Previews `url`: a URL starting with `/` is an internal link resolved
    /// against `base_url` (SPEC.md rule 1); anything else must be an
    /// absolute `http`/`https` URL. URLs on `base_url`'s origin are refused
    /// under `/api/` and answered in process ([`InternalPages`]); only a
    /// path the service does not serve is fetched from `base_url`'s origin
    /// over the network, whatever address and port that origin has.
    /// Nothing is cached or stored.
    pub async fn preview(&self, url: &str, base_url: &Url) -> Result<LinkPreview, PreviewError> {
        let requested = url.trim();
        if requested.is_empty() {
            return Err(PreviewError::MissingUrl);
        }
        let target = if requested.starts_with('/') {
            base_url.join(requested)
        } else {
            Url::parse(requested)
        }
        .map_err(|e| PreviewError::InvalidUrl(e.to_string()))?;
        let metadata = tokio::time::timeout(self.config.timeout, self.fetch(target, base_url))
            .await
            .map_err(|_| PreviewError::Timeout(self.config.timeout))??;
        Ok(LinkPreview {
            title: metadata.title,
            description: metadata.description,
            image: metadata.image.unwrap_or_default(),
            url: requested.to_owned(),
        })
    }

    /// Checks what can be checked before connecting: scheme, port and an
    /// IP-literal host (names are checked by the DNS hook).
    fn check(&self, url: &Url) -> Result<(), PreviewError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(PreviewError::UnsupportedScheme(url.scheme().to_owned()));
        }
        let port = url.port_or_known_default().unwrap_or(0);
        if !(port == 80 || port == 443 || self.config.allowed_ports.contains(&port)) {
            return Err(PreviewError::PortNotAllowed(port));
        }
        let literal = match url.host() {
            Some(Host::Ipv4(ip)) => IpAddr::V4(ip),
            Some(Host::Ipv6(ip)) => IpAddr::V6(ip),
            Some(Host::Domain(_)) => return Ok(()),
            None => return Err(PreviewError::InvalidUrl("the URL has no host".to_owned())),
        };
        if self.policy.permits(literal) {
            Ok(())
        } else {
            Err(PreviewError::AddressRefused {
                host: url.host_str().unwrap_or_default().to_owned(),
                addr: literal,
            })
        }
    }

    async fn fetch(&self, mut url: Url, base_url: &Url) -> Result<Metadata, PreviewError> {
        let mut redirects = 0;
        loop {
            let answer = if url.origin() == base_url.origin() {
                match self.internal(&url).await? {
                    InternalAnswer::Page(page) => Answer::Internal(page),
                    InternalAnswer::NotServed => {
                        check_own_origin(&url)?;
                        Answer::Network(self.send(&self.own_origin, &url).await?)
                    }
                }
            } else {
                self.check(&url)?;
                Answer::Network(self.send(&self.client, &url).await?)
            };
            let status = answer.status();
            if (300..400).contains(&status) && status != 304 {
                if redirects >= self.config.max_redirects {
                    return Err(PreviewError::TooManyRedirects(self.config.max_redirects));
                }
                redirects += 1;
                let location = answer.location().ok_or(PreviewError::BadRedirect)?;
                url = url
                    .join(location.trim())
                    .map_err(|_| PreviewError::BadRedirect)?;
                continue;
            }
            if !(200..300).contains(&status) {
                return Err(PreviewError::Status(status));
            }
            return match answer {
                Answer::Network(response) => self.read(response, &url).await,
                Answer::Internal(page) => Ok(self.read_internal(&page, &url)),
            };
        }
    }

    /// A `GET` of `url` through `client`.
    async fn send(
        &self,
        client: &reqwest::Client,
        url: &Url,
    ) -> Result<reqwest::Response, PreviewError> {
        client
            .get(url.clone())
            .header(ACCEPT, "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8")
            .send()
            .await
            .map_err(|e| classify_send_error(&e))
    }

    /// Asks the in-process hook for a page of the own origin; its API is
    /// refused first, so no preview can nest another.
    async fn internal(&self, url: &Url) -> Result<InternalAnswer, PreviewError> {
        if is_api_path(url.path()) {
            return Err(PreviewError::OwnApi);
        }
        let unavailable =
            || PreviewError::Connect("the service's own pages are not available".to_owned());
        let pages = self.internal.as_ref().ok_or_else(unavailable)?;
        let path_and_query = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        };
        pages
            .get(&path_and_query, self.config.max_body)
            .await
            .ok_or_else(unavailable)
    }

    /// Metadata of an in-process answer, read like a network one.
    fn read_internal(&self, page: &InternalPage, url: &Url) -> Metadata {
        if let Some(metadata) = page
            .content_type
            .as_deref()
            .and_then(|ct| non_html(ct, url))
        {
            return metadata;
        }
        let body = &page.body[..page.body.len().min(self.config.max_body)];
        extract(body, page.content_type.as_deref(), url)
    }

    /// Reads the answer of the final hop: HTML is streamed up to the end of
    /// its head (when that already gave every field) or `max_body`; other
    /// types are described without reading their body.
    async fn read(
        &self,
        mut response: reqwest::Response,
        url: &Url,
    ) -> Result<Metadata, PreviewError> {
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if let Some(metadata) = content_type.as_deref().and_then(|ct| non_html(ct, url)) {
            return Ok(metadata);
        }
        let max = self.config.max_body;
        let mut body = Vec::with_capacity(max.min(64 * 1024));
        let mut head_seen = false;
        while body.len() < max {
            let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| PreviewError::Read(error_chain(&e)))?
            else {
                break;
            };
            let scan_from = body.len().saturating_sub(5);
            body.extend_from_slice(&chunk[..chunk.len().min(max - body.len())]);
            if !head_seen && contains_head_end(&body[scan_from..]) {
                head_seen = true;
                let metadata = extract(&body, content_type.as_deref(), url);
                if !metadata.title.is_empty()
                    && !metadata.description.is_empty()
                    && metadata.image.is_some()
                {
                    return Ok(metadata);
                }
            }
        }
        Ok(extract(&body, content_type.as_deref(), url))
    }
}

/// The one address rule of the own origin: an IP-literal host must not be
/// one no connection may go to (`0.0.0.0` reaches the local host on Linux).
/// A host name is checked by the own-origin client's DNS hook, which
/// refuses the same addresses.
fn check_own_origin(url: &Url) -> Result<(), PreviewError> {
    let literal = match url.host() {
        Some(Host::Ipv4(ip)) => IpAddr::V4(ip),
        Some(Host::Ipv6(ip)) => IpAddr::V6(ip),
        _ => return Ok(()),
    };
    if crate::policy::classify(literal) == crate::policy::AddressClass::Never {
        return Err(PreviewError::AddressRefused {
            host: url.host_str().unwrap_or_default().to_owned(),
            addr: literal,
        });
    }
    Ok(())
}

/// A network client that follows no redirect, sends no referer, uses no
/// proxy and connects only to the addresses `policy` permits.
fn network_client(
    config: &FetchConfig,
    resolver: Arc<dyn Resolver>,
    policy: AddressPolicy,
) -> Result<reqwest::Client, BuildError> {
    reqwest::Client::builder()
        .user_agent(user_agent(&config.app_name))
        .redirect(reqwest::redirect::Policy::none())
        .referer(false)
        .no_proxy()
        .dns_resolver(Arc::new(GuardedDns { resolver, policy }))
        .connect_timeout(config.timeout)
        .pool_idle_timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| BuildError(error_chain(&e)))
}

/// One hop's answer: from the network, or from the service itself.
enum Answer {
    Network(reqwest::Response),
    Internal(InternalPage),
}

impl Answer {
    fn status(&self) -> u16 {
        match self {
            Answer::Network(response) => response.status().as_u16(),
            Answer::Internal(page) => page.status,
        }
    }

    fn location(&self) -> Option<&str> {
        match self {
            Answer::Network(response) => response
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok()),
            Answer::Internal(page) => page.location.as_deref(),
        }
    }
}

/// Whether `path` (of an own-origin URL) is under `/api`, whatever its
/// case, percent-encoding or repeated slashes: the in-process router may
/// be more lenient than a byte comparison, and a miss here is a recursion.
fn is_api_path(path: &str) -> bool {
    let decoded = percent_decode(path.as_bytes()).to_ascii_lowercase();
    let first = decoded
        .split(|&b| b == b'/')
        .find(|segment| !segment.is_empty());
    first == Some(b"api".as_slice())
}

/// Whether `haystack` contains the end tag `</head` or the start tag `<body`
/// (ASCII case-insensitive, as whole tag names): the fetcher's cheap signal
/// that the document head is complete, so an extraction is worth trying.
///
/// This looks at undecoded bytes as they arrive, across `.await`s, which the
/// tokenizer cannot do (its buffers are not `Send`, and the encoding is not
/// known yet). A false signal, such as `</head>` inside a script, only costs
/// one extraction of the bytes read so far; the extraction itself
/// tokenizes properly.
fn contains_head_end(haystack: &[u8]) -> bool {
    let ends_name = |b: Option<&u8>| {
        b.is_none_or(|&b| matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' | b'/' | b'>'))
    };
    memchr::memchr_iter(b'<', haystack).any(|i| {
        let rest = &haystack[i + 1..];
        let is = |name: &[u8]| {
            rest.get(..name.len())
                .is_some_and(|r| r.eq_ignore_ascii_case(name))
                && ends_name(rest.get(name.len()))
        };
        is(b"/head") || is(b"body")
    })
}

/// `<app>-LinkPreview/1.0` with `app` reduced to product-token characters.
fn user_agent(app_name: &str) -> String {
    let app: String = app_name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "!#$%&'*+.^_`|~-".contains(*c))
        .collect();
    let app = if app.is_empty() {
        "Plaza"
    } else {
        app.as_str()
    };
    format!("{app}-LinkPreview/1.0")
}

/// Metadata for a non-HTML answer, or `None` when the body is HTML (or
/// could be: an unknown type is parsed as HTML).
fn non_html(content_type: &str, url: &Url) -> Option<Metadata> {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    if mime.is_empty() || mime == "text/html" || mime == "application/xhtml+xml" {
        return None;
    }
    let (description, image) = if mime.starts_with("image/") {
        (String::new(), absolute_image_url(url.as_str(), url))
    } else if mime == "application/pdf" {
        ("PDF document".to_owned(), None)
    } else if mime.starts_with("video/") {
        (format!("Video file ({mime})"), None)
    } else if mime.starts_with("audio/") {
        (format!("Audio file ({mime})"), None)
    } else {
        (format!("File ({mime})"), None)
    };
    Some(Metadata {
        title: file_name(url),
        description,
        image,
    })
}

/// The last path segment, percent-decoded, as a title for a file.
fn file_name(url: &Url) -> String {
    let segment = url
        .path_segments()
        .and_then(|mut s| s.next_back())
        .filter(|s| !s.is_empty())
        .unwrap_or_default();
    crate::text::clean(
        &String::from_utf8_lossy(&percent_decode(segment.as_bytes())),
        crate::extract::MAX_TITLE_CHARS,
    )
}

/// `%XX` sequences decoded; anything else kept as is.
fn percent_decode(bytes: &[u8]) -> Vec<u8> {
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
            Some(byte) if bytes[i] == b'%' => {
                decoded.push(byte);
                i += 3;
            }
            _ => {
                decoded.push(bytes[i]);
                i += 1;
            }
        }
    }
    decoded
}

/// Maps a client error: a refusal from the DNS hook is the client's fault
/// (400); anything else is a fetch failure (502): [`PreviewError::Connect`]
/// when no connection was made, else [`PreviewError::Read`].
fn classify_send_error(error: &reqwest::Error) -> PreviewError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(err) = source {
        if let Some(refused) = err.downcast_ref::<Refused>() {
            return PreviewError::AddressRefused {
                host: refused.host.clone(),
                addr: refused.addr,
            };
        }
        source = err.source();
    }
    if error.is_connect() {
        PreviewError::Connect(error_chain(error))
    } else {
        PreviewError::Read(error_chain(error))
    }
}

/// An error and its sources joined with `: `, skipping repeats.
pub(crate) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(err) = source {
        let text = err.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = err.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_end_detection() {
        assert!(contains_head_end(b"<meta></HEAD>"));
        assert!(contains_head_end(b"<Body>"));
        assert!(contains_head_end(b"</head"));
        assert!(!contains_head_end(b"<header></headline>"));
        assert!(!contains_head_end(b"<bod"));
    }

    #[test]
    fn user_agent_form() {
        assert_eq!(user_agent("Plaza"), "Plaza-LinkPreview/1.0");
        assert_eq!(user_agent("My App\r\n"), "MyApp-LinkPreview/1.0");
        assert_eq!(user_agent(""), "Plaza-LinkPreview/1.0");
    }

    #[test]
    fn status_mapping() {
        assert_eq!(PreviewError::MissingUrl.status(), 400);
        assert_eq!(PreviewError::PortNotAllowed(22).status(), 400);
        assert_eq!(PreviewError::Timeout(Duration::from_secs(1)).status(), 502);
        assert_eq!(PreviewError::Status(404).details(), "404 Not Found");
        assert_eq!(
            PreviewError::Status(404).error(),
            "Failed to fetch link preview"
        );
    }

    #[test]
    fn details_carry_no_address_or_error_chain() {
        let refused = PreviewError::AddressRefused {
            host: "example.test".to_owned(),
            addr: "10.1.2.3".parse().unwrap_or_else(|_| unreachable!()),
        };
        assert_eq!(refused.details(), "example.test is not a public address");
        assert!(refused.to_string().contains("10.1.2.3"), "the log keeps it");
        let connect = PreviewError::Connect("dns error: 10.0.0.1:53 refused".to_owned());
        assert_eq!(connect.details(), "could not connect to the target");
        assert_eq!(connect.status(), 502);
        let read = PreviewError::Read("connection reset by peer".to_owned());
        assert_eq!(read.details(), "the target's answer could not be read");
        assert_eq!(
            (PreviewError::OwnApi.status(), PreviewError::OwnApi.error()),
            (400, "URL not allowed")
        );
    }

    #[test]
    fn api_paths_are_recognised_in_every_spelling() {
        for path in [
            "/api",
            "/api/",
            "/api/link-preview",
            "/API/link-preview",
            "/%61pi/link-preview",
            "/%41%50%49/x",
            "//api/link-preview",
        ] {
            assert!(is_api_path(path), "{path}");
        }
        for path in ["/", "/og-image-viewer", "/apis", "/x/api/y", "/api-docs"] {
            assert!(!is_api_path(path), "{path}");
        }
    }

    #[test]
    fn non_html_answers() {
        let url = Url::parse("https://example.com/files/Annual%20report.pdf?x=1")
            .unwrap_or_else(|_| unreachable!());
        let pdf = non_html("application/pdf", &url);
        assert_eq!(
            pdf,
            Some(Metadata {
                title: "Annual report.pdf".to_owned(),
                description: "PDF document".to_owned(),
                image: None
            })
        );
        let img = non_html("image/png", &url).and_then(|m| m.image);
        assert_eq!(img.as_deref(), Some(url.as_str()));
        assert_eq!(non_html("text/html; charset=utf-8", &url), None);
    }
}
