//! One rate limiter for every surface.
//!
//! A route group declares its limit where its routes are declared, with
//! [`limited`]: the [`Limit`] says which quota applies to whom and which
//! way the limiter fails when its shared store (Redis) cannot answer.
//! Requests are counted per user when they carry a valid session or admin
//! token, else per client address (see [`address`]); the algorithm is GCRA
//! ([`gcra`]), kept in process or, with `redis_url`, in Redis ([`shared`]).
//! Every answer of a limited route carries `X-RateLimit-Limit`,
//! `X-RateLimit-Remaining` and `X-RateLimit-Reset`; a refusal is 429
//! `RATE_LIMITED` with `Retry-After`, in the error shape of its surface.

pub mod address;
pub mod gcra;
pub mod shared;

use std::convert::Infallible;
use std::fmt::Write;
use std::marker::PhantomData;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Request};
use axum::http::HeaderValue;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use futures_util::future::BoxFuture;
use tower::{Layer, Service};
use utoipa_axum::router::OpenApiRouter;

use crate::http::error::AppError;
use crate::http::limit_headers::{ADMIN_TIER_HEADER, LIMIT_HEADER, write_headers};
use crate::settings::{LimitSettings, Quota, TrustedProxies};
use address::{client_behind, counted_prefix};
use gcra::{LocalStore, Outcome};
use sha2::Digest as _;
use shared::{SharedError, SharedStore};

/// What a limited route group reads from the router's state, which the
/// app puts in every request's extensions: the limiter, and who is calling
/// as the credentials say (the auth layer above answers it; the app's
/// state, which composes both, lends them).
pub trait LimitState: Clone + Send + Sync + 'static {
    fn rate_limiter(&self) -> &RateLimiter;

    /// The user behind the request's valid credential (an admin token's,
    /// else the session's), resolved as `limit`'s routes resolve it;
    /// `None` for anyone else, who is counted by address.
    fn credited_user(
        &self,
        limit: Limit,
        parts: &mut Parts,
    ) -> impl Future<Output = Option<Credited>> + Send;
}

/// A user a request is counted as.
#[derive(Debug, Clone, Copy)]
pub struct Credited {
    pub user_id: i64,
    /// A valid admin token holding `admin:super`.
    pub super_token: bool,
}

/// A route group's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// SPEC.md's general limit: `rate_limit_anonymous` per client address,
    /// `rate_limit_authenticated` per signed-in user. Without Redis it
    /// fails open: reads stay up, with a warning and a metric.
    General,
    /// The general limit on the routes that start a sign-in (credentials,
    /// identity providers): one budget with [`Limit::General`], but it fails
    /// closed (503), because these routes hash passwords and write rows.
    SignIn,
    /// The versioned admin surface, per admin: tier `general`
    /// (`rate_limit_admin`) or, for a token holding `admin:super`, tier
    /// `super` (`rate_limit_admin_super`); each answer names its tier in
    /// `X-Admin-Tier`. Fails open, like reads elsewhere.
    AdminV1,
    /// The versioned admin surface's system actions (maintenance), per
    /// admin: tier `system` (`rate_limit_admin_system`) for every token,
    /// `admin:super` included, counted apart from the other tiers. Fails
    /// closed (503): these actions are heavy (backups, index rebuilds) and
    /// the limit is what bounds them.
    SystemAction,
    /// Analytics collection, per user (`rate_limit_analytics`, 100 a minute):
    /// each event counts, so a batch of 40 takes 40 (the batch handler
    /// charges the events beyond the first with [`RateLimiter::charge`]).
    /// Fails open, with a warning and a metric.
    Analytics,
    /// The unversioned admin user list (`GET /api/admin/users`), per admin
    /// (`rate_limit_admin_user_list`, 100 an hour), counted apart from the
    /// general limit. Fails open, like reads elsewhere.
    AdminUserList,
    /// The routes that mail a link (password forgotten, password reset,
    /// verification resent), per client address or signed-in user
    /// (`rate_limit_account_mail`), a budget of their own; their handlers
    /// also count each email address ([`RateLimiter::charge_email`],
    /// `rate_limit_account_mail_per_email`). Fails closed (503): the limit
    /// is what keeps them from flooding a mailbox.
    AccountMail,
}

/// A versioned admin tier, as `X-Admin-Tier` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tier {
    General,
    Super,
    System,
}

impl Tier {
    fn header(self) -> HeaderValue {
        HeaderValue::from_static(match self {
            Tier::General => "general",
            Tier::Super => "super",
            Tier::System => "system",
        })
    }
}

impl Limit {
    /// The versioned admin tier of `caller`, on that surface only.
    fn tier(self, caller: &Caller) -> Option<Tier> {
        match self {
            Limit::AdminV1 if caller.super_token => Some(Tier::Super),
            Limit::AdminV1 => Some(Tier::General),
            Limit::SystemAction => Some(Tier::System),
            Limit::General
            | Limit::SignIn
            | Limit::Analytics
            | Limit::AdminUserList
            | Limit::AccountMail => None,
        }
    }

    /// The budget counted: limits naming the same bucket share one count.
    fn bucket(self, caller: &Caller) -> Bucket {
        if self == Limit::AccountMail {
            return match caller.subject {
                Subject::User(_) => Bucket::MailUser,
                Subject::Address(_) => Bucket::MailAddress,
                Subject::Email(_) => Bucket::MailEmail,
                Subject::EmailCeiling(_) => Bucket::MailEmailCeiling,
            };
        }
        match (self.tier(caller), caller.subject) {
            (None, Subject::User(_)) if self == Limit::Analytics => Bucket::Analytics,
            (None, Subject::User(_)) if self == Limit::AdminUserList => Bucket::AdminUsers,
            (None, Subject::User(_)) => Bucket::User,
            (None, Subject::Address(_)) => Bucket::Address,
            (Some(Tier::Super), Subject::User(_)) => Bucket::AdminSuper,
            (Some(Tier::System), Subject::User(_)) => Bucket::AdminSystem,
            (Some(Tier::General), Subject::User(_)) => Bucket::Admin,
            (Some(_), Subject::Address(_)) => Bucket::AdminAddress,
            (_, Subject::Email(_)) => Bucket::MailEmail,
            (_, Subject::EmailCeiling(_)) => Bucket::MailEmailCeiling,
        }
    }

    fn quota(self, caller: &Caller, settings: &LimitSettings) -> Quota {
        match caller.subject {
            Subject::Email(_) => return settings.rate_limit_account_mail_per_email,
            Subject::EmailCeiling(_) => return settings.rate_limit_account_mail_email_ceiling,
            _ => {}
        }
        if self == Limit::AccountMail {
            return settings.rate_limit_account_mail;
        }
        match (self.tier(caller), caller.subject) {
            // Without a valid credential, every surface grants what an
            // anonymous client gets.
            (_, Subject::Address(_)) => settings.rate_limit_anonymous,
            (None, Subject::User(_)) if self == Limit::Analytics => settings.rate_limit_analytics,
            (None, Subject::User(_)) if self == Limit::AdminUserList => {
                settings.rate_limit_admin_user_list
            }
            (None, Subject::User(_)) => settings.rate_limit_authenticated,
            (Some(Tier::Super), Subject::User(_)) => settings.rate_limit_admin_super,
            (Some(Tier::General), Subject::User(_)) => settings.rate_limit_admin,
            (Some(Tier::System), Subject::User(_)) => settings.rate_limit_admin_system,
            (_, Subject::Email(_)) => settings.rate_limit_account_mail_per_email,
            (_, Subject::EmailCeiling(_)) => settings.rate_limit_account_mail_email_ceiling,
        }
    }

    fn fails_closed(self) -> bool {
        matches!(
            self,
            Limit::SignIn | Limit::SystemAction | Limit::AccountMail
        )
    }

    fn name(self) -> &'static str {
        match self {
            Limit::General => "general",
            Limit::SignIn => "sign_in",
            Limit::AdminV1 => "versioned_admin",
            Limit::SystemAction => "system_action",
            Limit::Analytics => "analytics",
            Limit::AdminUserList => "admin_user_list",
            Limit::AccountMail => "account_mail",
        }
    }
}

/// Who is asking, as the limiter sees it. A request under
/// [`Limit::Analytics`] carries it in its extensions, for the batch handler,
/// which charges more than one request.
#[derive(Debug, Clone, Copy)]
pub struct Caller {
    subject: Subject,
    /// A valid admin token holding `admin:super`.
    super_token: bool,
}

/// Who a request is counted as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Subject {
    User(i64),
    /// The client address, IPv6 cut to its /64.
    Address(IpAddr),
    /// An email address a request names together with the client that
    /// names it, by the first half of the SHA-256 of the address's stored
    /// form and the client's counted prefix (the address itself is kept
    /// nowhere).
    Email([u8; 16]),
    /// An email address a request names, from any client, by the first
    /// half of the SHA-256 of its stored form.
    EmailCeiling([u8; 16]),
}

impl Subject {
    fn store_key(self, bucket: Bucket) -> StoreKey {
        StoreKey {
            bucket,
            subject: self,
        }
    }
}

/// A budget of its own: the limits and tiers that count apart. A byte, so
/// a key of the in-process store hashes and holds little.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Bucket {
    User,
    Address,
    Analytics,
    AdminUsers,
    Admin,
    AdminSuper,
    AdminSystem,
    AdminAddress,
    MailUser,
    MailAddress,
    MailEmail,
    MailEmailCeiling,
}

impl Bucket {
    /// Its name in the shared store's keys.
    fn name(self) -> &'static str {
        match self {
            Bucket::User => "user",
            Bucket::Address => "addr",
            Bucket::Analytics => "analytics",
            Bucket::AdminUsers => "admin_users",
            Bucket::Admin => "admin",
            Bucket::AdminSuper => "admin_super",
            Bucket::AdminSystem => "admin_system",
            Bucket::AdminAddress => "admin_addr",
            Bucket::MailUser => "mail_user",
            Bucket::MailAddress => "mail_addr",
            Bucket::MailEmail => "mail_email",
            Bucket::MailEmailCeiling => "mail_email_all",
        }
    }
}

/// A key of the in-process store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct StoreKey {
    bucket: Bucket,
    subject: Subject,
}

/// The limiter every limited route shares.
pub struct RateLimiter {
    settings: LimitSettings,
    trusted_proxies: TrustedProxies,
    local: LocalStore<StoreKey>,
    shared: Option<SharedStore>,
    /// The monotonic clock's origin for the in-process store.
    epoch: Instant,
    /// The second (since `epoch`) of the last warning that the shared store
    /// failed: one line a second at most, not one per request.
    last_warning: AtomicU64,
}

/// A check's result when the store could not answer.
enum Verdict {
    Counted(Outcome),
    /// The shared store did not answer; the limit's direction decides.
    Unknown,
}

impl RateLimiter {
    pub fn new(settings: &LimitSettings) -> Result<Self, String> {
        let shared = match &settings.redis_url {
            Some(url) => Some(SharedStore::new(
                url,
                settings.redis_ca_file.as_deref(),
                Duration::from_millis(settings.redis_timeout_ms),
            )?),
            None => None,
        };
        Ok(RateLimiter {
            trusted_proxies: TrustedProxies::parse(&settings.trusted_proxies)?,
            settings: settings.clone(),
            local: LocalStore::new(settings.rate_limit_max_keys),
            shared,
            epoch: Instant::now(),
            last_warning: AtomicU64::new(u64::MAX),
        })
    }

    /// A ping of the shared store, when limits are on and counted in Redis
    /// (the health check's; see [`crate::services::health`]).
    pub fn redis_ping(&self) -> Option<impl Future<Output = Result<(), SharedError>> + '_> {
        let shared = self
            .shared
            .as_ref()
            .filter(|_| self.settings.rate_limits_enabled)?;
        Some(shared.ping())
    }

    /// The proxies whose forwarding headers name the client.
    pub fn trusted_proxies(&self) -> &TrustedProxies {
        &self.trusted_proxies
    }

    /// Whether rate limits are on (`rate_limits_enabled`).
    pub fn enabled(&self) -> bool {
        self.settings.rate_limits_enabled
    }

    fn now_micros(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    async fn check(&self, limit: Limit, caller: Caller, cost: u32) -> Verdict {
        let subject = caller.subject;
        let bucket = limit.bucket(&caller);
        let quota = limit.quota(&caller, &self.settings);
        let Some(shared) = &self.shared else {
            let overflow = Subject::Address(IpAddr::from([0, 0, 0, 0])).store_key(bucket);
            return Verdict::Counted(self.local.check(
                subject.store_key(bucket),
                overflow,
                quota,
                self.now_micros(),
                cost,
            ));
        };
        match shared.check(redis_key(bucket, subject), quota, cost).await {
            Ok(outcome) => Verdict::Counted(outcome),
            Err(error) => {
                metrics::counter!("plaza_rate_limit_store_errors_total").increment(1);
                let second = self.epoch.elapsed().as_secs();
                if self.last_warning.swap(second, Ordering::Relaxed) != second {
                    tracing::warn!(
                        %error,
                        limit = limit.name(),
                        fails = if limit.fails_closed() { "closed" } else { "open" },
                        "the shared rate-limit store did not answer (at most one line a second; plaza_rate_limit_store_errors_total counts every failure)"
                    );
                }
                Verdict::Unknown
            }
        }
    }

    /// Counts `cost` more requests of `caller` under `limit`, for a request
    /// that stands for several (a batch of analytics events). Refused, it
    /// counts none of them and answers the 429 to send; when the shared
    /// store cannot answer, the limit's direction decides, as for one
    /// request.
    pub async fn charge(
        &self,
        limit: Limit,
        caller: Caller,
        cost: u32,
    ) -> Result<Option<Outcome>, AppError> {
        match self.check(limit, caller, cost).await {
            Verdict::Counted(outcome) if outcome.allowed => Ok(Some(outcome)),
            Verdict::Counted(outcome) => Err(refusal(limit, outcome)),
            Verdict::Unknown if limit.fails_closed() => Err(store_down()),
            Verdict::Unknown => Ok(None),
        }
    }

    /// Counts one request naming `email` from `client` under
    /// [`Limit::AccountMail`]'s budgets per email address (nothing with
    /// rate limits off): per address and client
    /// (`rate_limit_account_mail_per_email`), so strangers elsewhere cannot
    /// spend the owner's, and per address from every client
    /// (`rate_limit_account_mail_email_ceiling`), which bounds the mail one
    /// mailbox gets. A refusal is the 429 to send; when the shared store
    /// cannot answer, it fails closed as the route group does.
    pub async fn charge_email(&self, email: &str, client: Option<IpAddr>) -> Result<(), AppError> {
        if !self.settings.rate_limits_enabled {
            return Ok(());
        }
        let email = plaza_domain::users::normalize_email(email);
        let mut pair = sha2::Sha256::new();
        pair.update(email.as_bytes());
        pair.update([0]);
        if let Some(client) = client {
            pair.update(counted_prefix(client).to_string().as_bytes());
        }
        let charge = |subject| async move {
            let caller = Caller {
                subject,
                super_token: false,
            };
            self.charge(Limit::AccountMail, caller, 1).await.map(|_| ())
        };
        charge(Subject::Email(first_half(&pair.finalize()))).await?;
        charge(Subject::EmailCeiling(first_half(&sha2::Sha256::digest(
            email.as_bytes(),
        ))))
        .await
    }

    /// Counts a request of `client` under [`Limit::AccountMail`]'s budget
    /// per client, for a route outside that group that spends it only on
    /// some requests (a reset whose token is no good). A refusal is the
    /// 429 to send.
    pub async fn charge_mail_client(&self, client: Option<IpAddr>) -> Result<(), AppError> {
        if !self.settings.rate_limits_enabled {
            return Ok(());
        }
        let caller = Caller {
            subject: Subject::Address(client.map_or(IpAddr::from([0, 0, 0, 0]), counted_prefix)),
            super_token: false,
        };
        self.charge(Limit::AccountMail, caller, 1).await.map(|_| ())
    }

    /// Drops in-process entries whose buckets are full again (the job
    /// runner's `rate_limit_sweep`).
    pub fn sweep(&self) {
        self.local.sweep(self.now_micros());
    }

    /// Keys the in-process store holds.
    pub fn local_keys(&self) -> usize {
        self.local.key_count()
    }
}

/// The shared store's key of `subject` in `bucket`, such as
/// `plaza:rl:addr:a:192.0.2.1` or `plaza:rl:user:u:42`. Written piece by
/// piece into one allocation: `format!` (which grew the string and formats
/// an IPv4 address through a buffer) was a sixth of the instructions Redis
/// added to a request in Plaza (`bench/rate-limit-instructions.sh` counts
/// it).
fn redis_key(bucket: Bucket, subject: Subject) -> String {
    let mut key = String::with_capacity(48);
    key.push_str("plaza:rl:");
    key.push_str(bucket.name());
    let mut digits = itoa::Buffer::new();
    match subject {
        Subject::User(id) => {
            key.push_str(":u:");
            key.push_str(digits.format(id));
        }
        Subject::Address(IpAddr::V4(address)) => {
            key.push_str(":a:");
            for (index, octet) in address.octets().into_iter().enumerate() {
                if index > 0 {
                    key.push('.');
                }
                key.push_str(digits.format(octet));
            }
        }
        Subject::Address(address) => {
            // Writing to a `String` cannot fail.
            let _ = write!(key, ":a:{address}");
        }
        Subject::Email(digest) | Subject::EmailCeiling(digest) => {
            key.push_str(":e:");
            for byte in digest {
                // Writing to a `String` cannot fail.
                let _ = write!(key, "{byte:02x}");
            }
        }
    }
    key
}

/// The first 16 bytes of a SHA-256 digest.
fn first_half(digest: &[u8]) -> [u8; 16] {
    let mut half = [0u8; 16];
    half.copy_from_slice(&digest[..16]);
    half
}

/// Puts `limit` on every route of `router`, and documents its 429 (with the
/// headers) on each of their operations.
pub fn limited<St: LimitState>(limit: Limit, mut router: OpenApiRouter<St>) -> OpenApiRouter<St> {
    let admin_tiers = match limit {
        Limit::AdminV1 => Some("`general`, or `super` for a token holding `admin:super`"),
        Limit::SystemAction => Some("`system`"),
        Limit::General
        | Limit::SignIn
        | Limit::Analytics
        | Limit::AdminUserList
        | Limit::AccountMail => None,
    };
    for item in router.get_openapi_mut().paths.paths.values_mut() {
        crate::http::extract::documented::document_rate_limit(item, admin_tiers);
    }
    router.route_layer(LimitLayer::<St> {
        limit,
        state: PhantomData,
    })
}

/// The layer [`limited`] adds; it finds the router's state `St` in the
/// request's extensions.
struct LimitLayer<St> {
    limit: Limit,
    state: PhantomData<fn() -> St>,
}

impl<St> Clone for LimitLayer<St> {
    fn clone(&self) -> Self {
        LimitLayer {
            limit: self.limit,
            state: PhantomData,
        }
    }
}

impl<S, St> Layer<S> for LimitLayer<St> {
    type Service = LimitService<S, St>;

    fn layer(&self, inner: S) -> Self::Service {
        LimitService {
            inner,
            limit: self.limit,
            state: PhantomData,
        }
    }
}

struct LimitService<S, St> {
    inner: S,
    limit: Limit,
    state: PhantomData<fn() -> St>,
}

impl<S: Clone, St> Clone for LimitService<S, St> {
    fn clone(&self) -> Self {
        LimitService {
            inner: self.inner.clone(),
            limit: self.limit,
            state: PhantomData,
        }
    }
}

impl<S, St> Service<Request> for LimitService<S, St>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
    St: LimitState,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let limit = self.limit;
        Box::pin(async move {
            let Some(state) = request.extensions().get::<St>().cloned() else {
                return inner.call(request).await;
            };
            if !state.rate_limiter().enabled() {
                return inner.call(request).await;
            }
            let (mut parts, body) = request.into_parts();
            let caller = caller_of(limit, &mut parts, &state).await;
            // Off a socket: the service's own pages, fetched in process for
            // a link preview that was itself counted.
            let Some(caller) = caller else {
                return inner.call(Request::from_parts(parts, body)).await;
            };
            // Only a batch of events charges more than one request.
            if limit == Limit::Analytics {
                parts.extensions.insert(caller);
            }
            let request = Request::from_parts(parts, body);
            let tier = limit.tier(&caller);
            let mut response = match state.rate_limiter().check(limit, caller, 1).await {
                Verdict::Counted(outcome) if outcome.allowed => {
                    let mut response = inner.call(request).await?;
                    // A refusal from inside (the sign-in throttle's) keeps
                    // its own numbers.
                    if !response.headers().contains_key(&LIMIT_HEADER) {
                        write_headers(
                            response.headers_mut(),
                            outcome.limit,
                            outcome.remaining,
                            outcome.reset_after,
                        );
                    }
                    response
                }
                Verdict::Counted(outcome) => refusal(limit, outcome).into_response(),
                Verdict::Unknown if limit.fails_closed() => store_down().into_response(),
                Verdict::Unknown => inner.call(request).await?,
            };
            if let Some(tier) = tier {
                response
                    .headers_mut()
                    .insert(ADMIN_TIER_HEADER, tier.header());
            }
            Ok(response)
        })
    }
}

/// The 429 for a refused `outcome`, counted in the metrics.
fn refusal(limit: Limit, outcome: Outcome) -> AppError {
    metrics::counter!("plaza_rate_limit_refused_total", "limit" => limit.name()).increment(1);
    AppError::RateLimited {
        retry_after_secs: outcome.retry_after.as_secs_f64().ceil() as u64,
        limit: outcome.limit,
        reset_after_secs: outcome.reset_after.as_secs_f64().ceil() as u64,
    }
}

/// The user behind a valid admin token or session, else the client
/// address.
async fn caller_of<St: LimitState>(limit: Limit, parts: &mut Parts, state: &St) -> Option<Caller> {
    if let Some(user) = state.credited_user(limit, parts).await {
        return Some(Caller {
            subject: Subject::User(user.user_id),
            super_token: user.super_token,
        });
    }
    let address = client_address(parts, state.rate_limiter().trusted_proxies())?;
    Some(Caller {
        subject: Subject::Address(counted_prefix(address)),
        super_token: false,
    })
}

/// The client's address: the peer, or the right-most untrusted forwarded hop
/// when the peer is one of `proxies`. `None` only off a socket (in-process
/// link previews of the service's own pages).
pub fn client_address(parts: &Parts, proxies: &TrustedProxies) -> Option<IpAddr> {
    let peer = parts.extensions.get::<ConnectInfo<SocketAddr>>()?.0.ip();
    Some(client_behind(proxies, peer, &parts.headers))
}

/// The answer of a group that fails closed while the shared store is down.
fn store_down() -> AppError {
    AppError::DependencyDown {
        dependency: "the shared rate-limit store (Redis)",
        title: "Service unavailable",
        retry_after_secs: 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_and_addresses_have_separate_budgets_and_keys() {
        let caller = |subject, super_token| Caller {
            subject,
            super_token,
        };
        let user = Subject::User(7);
        let address = Subject::Address("2001:db8::".parse().unwrap());
        let (member, visitor) = (caller(user, false), caller(address, false));
        assert_ne!(
            Limit::General.bucket(&member),
            Limit::General.bucket(&visitor)
        );
        assert_eq!(
            Limit::General.bucket(&member),
            Limit::SignIn.bucket(&member)
        );
        assert_ne!(
            Limit::AdminV1.bucket(&member),
            Limit::AdminV1.bucket(&caller(user, true))
        );
        assert_ne!(
            Limit::General.bucket(&member),
            Limit::AdminV1.bucket(&member)
        );
        let root = caller(user, true);
        assert_eq!(Limit::SystemAction.tier(&root), Some(Tier::System));
        assert_ne!(
            Limit::SystemAction.bucket(&root),
            Limit::AdminV1.bucket(&root)
        );
        assert_eq!(
            Limit::SystemAction.bucket(&root),
            Limit::SystemAction.bucket(&member)
        );
        assert!(Limit::SystemAction.fails_closed() && !Limit::AdminV1.fails_closed());
        assert_eq!(redis_key(Bucket::User, user), "plaza:rl:user:u:7");
        assert_eq!(
            redis_key(Bucket::Address, address),
            "plaza:rl:addr:a:2001:db8::"
        );
        for (v4, written) in [("192.0.2.10", "192.0.2.10"), ("0.0.0.0", "0.0.0.0")] {
            let subject = Subject::Address(v4.parse().unwrap());
            assert_eq!(
                redis_key(Bucket::AdminAddress, subject),
                format!("plaza:rl:admin_addr:a:{written}")
            );
        }
        assert_eq!(
            redis_key(Bucket::Analytics, Subject::User(-3)),
            "plaza:rl:analytics:u:-3"
        );
    }
}
