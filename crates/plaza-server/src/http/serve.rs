//! Plaza's own accept loop, in place of `axum::serve`.
//!
//! `axum::serve` runs hyper without a timer, so hyper's header-read timeout
//! never fires, idle connections are never closed and there is no cap on
//! connections: 300 half-sent requests against a 256-file limit stopped the
//! server accepting. This loop adds:
//!
//! - hyper's header-read timeout (with a Tokio timer), and the same deadline
//!   for a connection's first bytes, before hyper knows its HTTP version;
//! - an idle watchdog per connection: one timer that sleeps until the last
//!   read or write plus the idle timeout, then shuts the connection down
//!   gracefully (and closes it when another idle period passes without
//!   progress). The IO wrapper only stores the time of each read and write;
//!   no timer is touched per request;
//! - a connection cap, answered with a minimal 503;
//! - lingering close: before a socket is dropped, the write side is shut and
//!   what the client still sends is read and discarded for a bounded time,
//!   so an answer such as a 413 sent before the whole body was read is not
//!   destroyed by the reset the kernel sends when unread data is dropped;
//! - accept errors (`EMFILE` when out of file descriptors) answered with a
//!   short back-off instead of ending the server;
//! - graceful shutdown: stop accepting, let every connection finish its
//!   request in flight, then return.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

/// Transport limits, from the settings.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// A request's headers must arrive within this (`header_read_timeout_secs`).
    pub header_read_timeout: Duration,
    /// A connection without I/O for this long is shut down (`idle_timeout_secs`).
    pub idle_timeout: Duration,
    /// Open connections at most (`max_connections`, after [`connection_cap`]).
    pub max_connections: usize,
}

/// How long a closing connection keeps reading (and discarding) what the
/// client still sends, at most.
const LINGER_TIME: Duration = Duration::from_secs(2);

/// How many bytes a closing connection reads and discards, at most: enough
/// for a client that sends a few MiB over the body limit before it reads
/// the answer, and a bound on the work a closing connection can cost.
const LINGER_BYTES: usize = 8 * 1024 * 1024;

/// Pause after an accept error other than a failed handshake: out of file
/// descriptors (`EMFILE`, `ENFILE`) or memory, which closing connections
/// will relieve. Retrying at once would spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Over-cap connections answered at once; beyond this they are closed
/// without an answer, so refusing cannot itself use unbounded descriptors.
const MAX_REFUSING: usize = 64;

/// File descriptors kept free for everything but client connections: the
/// listener, database files and connections, link-preview and identity
/// provider requests, logs.
const FD_RESERVE: u64 = 128;

/// The answer to a connection over the cap, in the general error shape.
static OVER_CAPACITY: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let body = r#"{"error":{"code":"SERVICE_UNAVAILABLE","message":"too many connections; retry in a moment"}}"#;
    format!(
        "HTTP/1.1 503 Service Unavailable\r\n\
         content-type: application/json\r\n\
         content-length: {}\r\n\
         connection: close\r\n\
         retry-after: 1\r\n\
         x-content-type-options: nosniff\r\n\
         \r\n\
         {body}",
        body.len()
    )
    .into_bytes()
});

/// Serves `app` on `listener` until `shutdown` completes, then stops
/// accepting and waits for every connection to finish its request in
/// flight (connections are bounded by the request timeout and the idle
/// watchdog, so this ends).
pub async fn serve(
    listener: TcpListener,
    app: Arc<Router>,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let builder = Arc::new(builder);
    let stopping = CancellationToken::new();
    let connections = TaskTracker::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let refusing = Arc::new(Semaphore::new(MAX_REFUSING));
    let mut shutdown = std::pin::pin!(shutdown);
    let mut backing_off = false;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let (stream, remote) = match accepted {
            Ok(accepted) => {
                backing_off = false;
                accepted
            }
            Err(error) if is_connection_error(&error) => continue,
            Err(error) => {
                if !backing_off {
                    tracing::warn!(%error, "cannot accept connections; retrying every 100 ms");
                    backing_off = true;
                }
                tokio::select! {
                    () = tokio::time::sleep(ACCEPT_BACKOFF) => continue,
                    () = &mut shutdown => break,
                }
            }
        };
        match slots.clone().try_acquire_owned() {
            Ok(slot) => {
                let connection = serve_connection(
                    stream,
                    remote,
                    slot,
                    app.clone(),
                    builder.clone(),
                    limits,
                    stopping.clone(),
                );
                connections.spawn(connection);
            }
            Err(_) => match refusing.clone().try_acquire_owned() {
                Ok(permit) => {
                    tokio::spawn(refuse(stream, permit));
                }
                Err(_) => drop(stream),
            },
        }
    }
    drop(listener);
    stopping.cancel();
    connections.close();
    connections.wait().await;
}

/// The largest `max_connections` the open-file limit allows: the soft limit
/// is first raised to the hard limit (the usual way for a server to get
/// the descriptors the operator allowed), then a reserve is kept for
/// everything else. Logs when the setting is lowered.
pub fn connection_cap(wanted: usize) -> usize {
    let Some(limit) = open_file_limit() else {
        return wanted;
    };
    let allowed = usize::try_from(limit.saturating_sub(FD_RESERVE))
        .unwrap_or(usize::MAX)
        .max(1);
    if wanted > allowed {
        tracing::warn!(
            max_connections = wanted,
            open_file_limit = limit,
            using = allowed,
            "max_connections lowered to what the open-file limit allows"
        );
        allowed
    } else {
        wanted
    }
}

/// The open-file soft limit after raising it to the hard limit, if known.
#[cfg(unix)]
fn open_file_limit() -> Option<u64> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        let raised = rustix::process::Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        match setrlimit(Resource::Nofile, raised) {
            Ok(()) => limit = raised,
            Err(error) => tracing::debug!(%error, "cannot raise the open-file limit"),
        }
    }
    limit.current
}

#[cfg(not(unix))]
fn open_file_limit() -> Option<u64> {
    None
}

/// Errors of one connection attempt that say nothing about the listener.
fn is_connection_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// Answers a connection over the cap with [`OVER_CAPACITY`] and closes it
/// lingering, so the client reads the answer rather than a reset.
async fn refuse(stream: TcpStream, _permit: OwnedSemaphorePermit) {
    let mut stream = Tracked::new(stream, Arc::new(Activity::new()), None);
    let _ = tokio::time::timeout(LINGER_TIME, async {
        stream.write_all(&OVER_CAPACITY).await?;
        stream.shutdown().await
    })
    .await;
}

/// One connection, from accept to close.
async fn serve_connection(
    stream: TcpStream,
    remote: SocketAddr,
    slot: OwnedSemaphorePermit,
    app: Arc<Router>,
    builder: Arc<Builder<TokioExecutor>>,
    limits: Limits,
    stopping: CancellationToken,
) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Tracked::new(stream, activity.clone(), Some(slot)));
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(remote));
        (*app).clone().oneshot(request.map(Body::new))
    });
    let connection = builder.serve_connection(io, service);
    let mut connection = std::pin::pin!(connection);
    let mut stopped = std::pin::pin!(stopping.cancelled_owned());
    let mut watchdog = Watchdog::new(activity, limits);
    let mut shut_down = false;
    let outcome = std::future::poll_fn(|cx| {
        let mut shut = !shut_down && stopped.as_mut().poll(cx).is_ready();
        while let Poll::Ready(verdict) = watchdog.poll_expired(cx) {
            match verdict {
                Verdict::ShutDown => shut = !shut_down,
                Verdict::Close => return Poll::Ready(None),
            }
        }
        if shut {
            shut_down = true;
            connection.as_mut().graceful_shutdown();
        }
        connection.as_mut().poll(cx).map(Some)
    })
    .await;
    match outcome {
        Some(Err(error)) => tracing::debug!(%remote, %error, "connection ended with an error"),
        Some(Ok(())) => {}
        None => tracing::debug!(%remote, "connection closed: no progress after shutting it down"),
    }
}

/// The start of the clock [`Activity`] counts from.
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

/// When a connection last read or wrote, shared by its IO and its watchdog.
struct Activity {
    /// Milliseconds since [`EPOCH`].
    last: AtomicU64,
    /// Whether anything was written yet: a server writes only once a
    /// request's head (HTTP/1) or the connection preface (HTTP/2) arrived.
    written: AtomicBool,
}

impl Activity {
    fn new() -> Self {
        let activity = Activity {
            last: AtomicU64::new(0),
            written: AtomicBool::new(false),
        };
        activity.touch();
        activity
    }

    fn touch(&self) {
        let millis = u64::try_from(EPOCH.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last.store(millis, Ordering::Relaxed);
    }

    fn last(&self) -> Instant {
        *EPOCH + Duration::from_millis(self.last.load(Ordering::Relaxed))
    }
}

/// What the watchdog asks of a connection.
enum Verdict {
    /// Finish the request in flight, if any, then close.
    ShutDown,
    /// Close now: shutting down did not end the connection within another
    /// idle period without I/O (a client that does not read its answer).
    Close,
}

/// One timer per connection, reset only when it fires.
struct Watchdog {
    activity: Arc<Activity>,
    limits: Limits,
    timer: Pin<Box<Sleep>>,
    /// Until the first bytes are written (the first request's head has
    /// arrived), the header-read deadline applies: hyper's own timer only
    /// starts once it knows the connection's HTTP version.
    first_head_by: Option<Instant>,
    /// Start of the current quiet period when it began after the last I/O:
    /// the connection's start, or the last verdict.
    since: Instant,
    shut_down: bool,
}

impl Watchdog {
    fn new(activity: Arc<Activity>, limits: Limits) -> Self {
        let now = Instant::now();
        let first_head_by = now + limits.header_read_timeout;
        Watchdog {
            timer: Box::pin(tokio::time::sleep_until(
                first_head_by.min(now + limits.idle_timeout),
            )),
            first_head_by: Some(first_head_by),
            since: now,
            activity,
            limits,
            shut_down: false,
        }
    }

    /// Ready with a verdict when the connection has been quiet for the idle
    /// timeout, or has not sent its first request head in time; otherwise
    /// re-arms the timer for the next deadline.
    fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<Verdict> {
        loop {
            ready!(self.timer.as_mut().poll(cx));
            let now = Instant::now();
            if self.activity.written.load(Ordering::Relaxed) {
                self.first_head_by = None;
            }
            let idle_until = self.activity.last().max(self.since) + self.limits.idle_timeout;
            let head_late = self.first_head_by.is_some_and(|deadline| now >= deadline);
            if head_late || now >= idle_until {
                self.first_head_by = None;
                self.since = now;
                self.timer.as_mut().reset(now + self.limits.idle_timeout);
                return Poll::Ready(if std::mem::replace(&mut self.shut_down, true) {
                    Verdict::Close
                } else {
                    Verdict::ShutDown
                });
            }
            let next = self
                .first_head_by
                .map_or(idle_until, |deadline| deadline.min(idle_until));
            self.timer.as_mut().reset(next);
        }
    }
}

/// A client socket that records its activity, holds its connection slot,
/// and closes lingering (see the module documentation).
struct Tracked {
    stream: TcpStream,
    activity: Arc<Activity>,
    /// Released when the socket is dropped, not before: the cap counts
    /// descriptors, and a lingering socket still holds one.
    _slot: Option<OwnedSemaphorePermit>,
    write_shut: bool,
    drained: usize,
    linger: Option<Pin<Box<Sleep>>>,
}

impl Tracked {
    fn new(stream: TcpStream, activity: Arc<Activity>, slot: Option<OwnedSemaphorePermit>) -> Self {
        Tracked {
            stream,
            activity,
            _slot: slot,
            write_shut: false,
            drained: 0,
            linger: None,
        }
    }
}

impl AsyncRead for Tracked {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.activity.touch();
        }
        polled
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            this.wrote();
        }
        polled
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            this.wrote();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    /// Shuts the write side (the client sees the end of the answer), then
    /// reads and discards until the client closes too, [`LINGER_BYTES`]
    /// have been read or [`LINGER_TIME`] has passed. Closing a socket with
    /// unread data makes the kernel send a reset, and a reset can destroy
    /// the answer before the client has read it.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.write_shut {
            ready!(Pin::new(&mut this.stream).poll_shutdown(cx))?;
            this.write_shut = true;
        }
        let mut scratch = [0u8; 8192];
        while this.drained < LINGER_BYTES {
            let mut buf = ReadBuf::new(&mut scratch);
            match Pin::new(&mut this.stream).poll_read(cx, &mut buf) {
                Poll::Ready(Ok(())) if buf.filled().is_empty() => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(())) => this.drained += buf.filled().len(),
                Poll::Ready(Err(_)) => return Poll::Ready(Ok(())),
                Poll::Pending => {
                    let linger = this
                        .linger
                        .get_or_insert_with(|| Box::pin(tokio::time::sleep(LINGER_TIME)));
                    return linger.as_mut().poll(cx).map(Ok);
                }
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl Tracked {
    fn wrote(&mut self) {
        self.activity.touch();
        if !self.activity.written.load(Ordering::Relaxed) {
            self.activity.written.store(true, Ordering::Relaxed);
        }
    }
}
