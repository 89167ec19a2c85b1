//! The link preview's target rules for Plaza's other outgoing requests to
//! addresses someone gave it (webhooks): an `http` or `https` URL with a
//! host, never a non-public address unless allowed, checked again by the
//! client's DNS hook at every connection (so a name that moved to a
//! private address is refused, and the address checked is the one
//! connected to), no redirects followed, no proxy, no referer.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use url::{Host, Url};

use crate::fetch::{BuildError, GuardedDns, PreviewError, Resolver, SystemResolver, error_chain};
use crate::policy::AddressPolicy;

/// What a guarded target may reach.
#[derive(Debug, Clone, Copy)]
pub struct TargetRules {
    /// Loopback, private and other non-public addresses allowed (tests,
    /// internal deployments); multicast, broadcast and unspecified ones
    /// stay refused.
    pub allow_private: bool,
}

impl TargetRules {
    fn policy(self) -> AddressPolicy {
        AddressPolicy {
            allow_private: self.allow_private,
            allowed_networks: Vec::new(),
        }
    }

    /// Checks `url` without connecting: `http` or `https`, a host, and an
    /// address written in it permitted. Any port is allowed.
    pub fn check_form(self, url: &Url) -> Result<(), PreviewError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(PreviewError::UnsupportedScheme(url.scheme().to_owned()));
        }
        let literal = match url.host() {
            Some(Host::Ipv4(ip)) => IpAddr::V4(ip),
            Some(Host::Ipv6(ip)) => IpAddr::V6(ip),
            Some(Host::Domain(_)) => return Ok(()),
            None => return Err(PreviewError::InvalidUrl("the URL has no host".to_owned())),
        };
        if self.policy().permits(literal) {
            Ok(())
        } else {
            Err(PreviewError::AddressRefused {
                host: url.host_str().unwrap_or_default().to_owned(),
                addr: literal,
            })
        }
    }

    /// [`TargetRules::check_form`], then a host name resolved with the
    /// system's resolver: it must resolve, and every address it has must
    /// be permitted.
    pub async fn check(self, url: &Url) -> Result<(), PreviewError> {
        self.check_form(url)?;
        let Some(Host::Domain(name)) = url.host() else {
            return Ok(());
        };
        let found = tokio::time::timeout(Duration::from_secs(5), SystemResolver.lookup(name))
            .await
            .map_err(|_| PreviewError::Connect(format!("resolving {name} timed out")))?
            .map_err(|error| PreviewError::Connect(format!("cannot resolve {name}: {error}")))?;
        if found.is_empty() {
            return Err(PreviewError::Connect(format!("{name} has no address")));
        }
        let policy = self.policy();
        match found.into_iter().find(|ip| !policy.permits(*ip)) {
            Some(addr) => Err(PreviewError::AddressRefused {
                host: name.to_owned(),
                addr,
            }),
            None => Ok(()),
        }
    }

    /// A client whose connections go only to addresses these rules permit,
    /// following no redirect, with `user_agent` and a `timeout` for each
    /// whole request.
    pub fn client(
        self,
        user_agent: &str,
        timeout: Duration,
    ) -> Result<reqwest::Client, BuildError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let resolver: Arc<dyn Resolver> = Arc::new(SystemResolver);
        reqwest::Client::builder()
            .user_agent(user_agent)
            .redirect(reqwest::redirect::Policy::none())
            .referer(false)
            .no_proxy()
            .dns_resolver(Arc::new(GuardedDns::new(resolver, self.policy())))
            .connect_timeout(timeout)
            .timeout(timeout)
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .map_err(|error| BuildError::new(error_chain(&error)))
    }
}
