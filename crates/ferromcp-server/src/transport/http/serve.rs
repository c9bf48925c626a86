//! The accept loop: TCP_NODELAY, HTTP/1.1 and (when
//! [`HttpConfig::http2`] is on) HTTP/2, header and version timeouts,
//! session sweeping and the graceful drain.

use super::conn_timer::ConnTimer;
use super::{HttpConfig, McpService};
use crate::error::Error;
use crate::server::Server;
use http::{Request, Response};
use http_body_util::BodyExt;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The protocol a connection speaks, told by its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Detected {
    /// Anything but the HTTP/2 preface (HTTP/1.x, or garbage hyper refuses).
    Http1,
    /// The whole HTTP/2 (h2c prior-knowledge) preface.
    Http2,
}

/// Waits, at most `limit`, until the client has sent enough bytes to tell
/// HTTP/1 from HTTP/2: a byte that differs from the HTTP/2 preface, or the
/// whole preface. `None` on timeout, end of stream or error.
///
/// hyper's header read timeout starts only once the version is known, and
/// version detection itself waits forever: a client that connects and stays
/// silent (or sends a partial preface such as `P`) held its connection and
/// task indefinitely.
pub(super) async fn version_bytes_arrived(
    stream: &tokio::net::TcpStream,
    limit: Duration,
) -> Option<Detected> {
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    let wait = async {
        let mut buf = [0u8; PREFACE.len()];
        loop {
            let n = stream.peek(&mut buf).await.ok()?;
            let seen = buf.get(..n)?;
            if n == 0 {
                return None;
            }
            if PREFACE.get(..n) != Some(seen) {
                return Some(Detected::Http1);
            }
            if n == PREFACE.len() {
                return Some(Detected::Http2);
            }
            // A prefix of the preface: the rest is on its way, or never comes.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(limit, wait).await.ok().flatten()
}

/// Requests in flight on one HTTP/2 connection, each counted from the
/// service call until its response body is dropped (so an SSE answer counts
/// while it streams).
#[derive(Clone)]
pub(super) struct Activity(Arc<tokio::sync::watch::Sender<usize>>);

/// One request in flight; dropping it ends the request.
pub(super) struct Busy(Arc<tokio::sync::watch::Sender<usize>>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl Activity {
    fn new() -> Self {
        Self(Arc::new(tokio::sync::watch::Sender::new(0)))
    }

    /// A request begins.
    pub(super) fn begin(&self) -> Busy {
        self.0.send_modify(|n| *n += 1);
        Busy(self.0.clone())
    }

    /// Resolves once no request has been in flight for `idle`; any request
    /// beginning or ending restarts the wait.
    async fn idle_for(&self, idle: Duration) {
        let mut rx = self.0.subscribe();
        loop {
            // The sender lives in `self`: never closed while this runs.
            if rx.wait_for(|n| *n == 0).await.is_err() {
                return std::future::pending().await;
            }
            tokio::select! {
                () = tokio::time::sleep(idle) => {
                    // Both ready at once: a request that began or ended
                    // meanwhile restarts the wait.
                    if !rx.has_changed().unwrap_or(true) {
                        return;
                    }
                }
                _ = rx.changed() => {}
            }
        }
    }
}

/// `response` with `busy` held until its body is dropped (after the last
/// frame is sent, or when the client goes away).
///
/// The guard rides in an identity `map_err`: unlike `map_frame`, it keeps
/// the body's size hint, so an HTTP/1 answer keeps its `content-length`
/// instead of turning chunked.
// The closure type cannot be named in a `type` alias (stable Rust); this
// keeps the response unboxed on the hot path.
#[allow(clippy::type_complexity)]
pub(super) fn hold_while_sent<B: http_body::Body>(
    busy: Option<Busy>,
    response: Response<B>,
) -> Response<http_body_util::combinators::MapErr<B, impl FnMut(B::Error) -> B::Error>> {
    response.map(move |body| {
        body.map_err(move |e| {
            let _held = &busy;
            e
        })
    })
}

/// Serves `server` on `addr` at `/mcp` until `shutdown` completes.
pub async fn serve(
    server: Server,
    addr: SocketAddr,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Error> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(Error::io)?;
    serve_listener(
        McpService::new(server, HttpConfig::default()),
        listener,
        shutdown,
    )
    .await
}

// Foreign type: the caller binds the tokio listener (port 0, socket options, systemd sockets).
/// Serves `service` on an already bound listener until `shutdown` completes:
/// TCP_NODELAY on every connection, HTTP/1.1 and HTTP/2 (see
/// [`HttpConfig::http2`]; asking for HTTP/2 in a build without feature
/// `http2` is a configuration error, returned at once), header read
/// timeout, then a graceful drain: the listener closes (new connections are
/// refused), listen streams end with their final result, HTTP/1 answers
/// carry `connection: close`, idle connections stay open for
/// [`crate::Limits::drain_grace`] (a request a load balancer already sent
/// on one is still answered), in-flight requests finish within
/// [`crate::Limits::drain_timeout`], and the function returns.
pub async fn serve_listener(
    service: McpService,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Error> {
    // Served directly, not through the tower `Service`: hyper keeps each
    // request's future in the connection's own slot, so no per-request box
    // (the tower path boxes the whole request future: a large allocation).
    let make = {
        let inner = service.inner.clone();
        move |activity: Option<Activity>| {
            let inner = inner.clone();
            hyper::service::service_fn(move |req| {
                let inner = inner.clone();
                let busy = activity.as_ref().map(Activity::begin);
                async move {
                    let response = super::handle(inner, req).await;
                    Ok::<_, Infallible>(hold_while_sent(busy, response))
                }
            })
        }
    };
    accept_loop(make, service, listener, shutdown).await
}

// Foreign type: tower `Service`/`Layer` is how HTTP middleware (auth, CORS, limits) composes with
// hyper and axum; the caller binds the tokio listener.
/// Like [`serve_listener`], with `layer` wrapped around the MCP service
/// (for example `ferromcp_auth::resource::AuthLayer`, or any tower layer).
///
/// The listener, timeouts, session sweeping and graceful shutdown are the
/// MCP service's; every request goes through `layer.layer(service)`.
pub async fn serve_layered<L, S, RB>(
    service: McpService,
    layer: L,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Error>
where
    L: tower_layer::Layer<McpService, Service = S>,
    S: tower_service::Service<Request<hyper::body::Incoming>, Response = Response<RB>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    RB: http_body::Body + Send + 'static,
    RB::Data: Send,
    RB::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let wrapped = layer.layer(service.clone());
    let make = move |activity: Option<Activity>| {
        let svc = wrapped.clone();
        hyper::service::service_fn(move |req| {
            let mut svc = svc.clone();
            let busy = activity.as_ref().map(Activity::begin);
            async move {
                futures_util::future::poll_fn(|cx| svc.poll_ready(cx)).await?;
                let response = svc.call(req).await?;
                Ok::<_, S::Error>(hold_while_sent(busy, response))
            }
        })
    };
    accept_loop(make, service, listener, shutdown).await
}

/// The connection's copy of the shared builder, with a [`ConnTimer`] of
/// its own for HTTP/1's header read timeout.
#[cfg(feature = "http2")]
fn with_conn_timer(
    shared: &hyper_util::server::conn::auto::Builder<hyper_util::rt::TokioExecutor>,
) -> hyper_util::server::conn::auto::Builder<hyper_util::rt::TokioExecutor> {
    let mut b = shared.clone();
    b.http1().timer(ConnTimer::new());
    b
}

/// The connection's copy of the shared builder, with a [`ConnTimer`] of
/// its own for the header read timeout.
#[cfg(not(feature = "http2"))]
fn with_conn_timer(
    shared: &hyper::server::conn::http1::Builder,
) -> hyper::server::conn::http1::Builder {
    let mut b = shared.clone();
    b.timer(ConnTimer::new());
    b
}

/// The accept loop and the drain, for any hyper service `make` builds per
/// connection (given the connection's [`Activity`] when it is HTTP/2).
async fn accept_loop<M, H, RB>(
    make: M,
    service: McpService,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Error>
where
    M: Fn(Option<Activity>) -> H + Clone + Send + 'static,
    H: hyper::service::Service<Request<hyper::body::Incoming>, Response = Response<RB>>
        + Send
        + 'static,
    H::Future: Send + 'static,
    H::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    RB: http_body::Body + Send + 'static,
    RB::Data: Send,
    RB::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    #[cfg(feature = "http2")]
    use hyper_util::rt::TokioExecutor;
    use hyper_util::rt::{TokioIo, TokioTimer};
    let limits = service.inner.shared.limits().clone();
    // The setting decides; the feature only supplies the HTTP/2 code.
    let http2 = service.inner.config.http2;
    if http2 && !cfg!(feature = "http2") {
        return Err(Error::config(
            "HttpConfig::http2(true) needs ferromcp-server's `http2` feature, \
             which this build leaves out",
        ));
    }
    // Feature `http2`: HTTP/1.1 or h2c per connection (h2c only when the
    // setting allows it, checked below); otherwise HTTP/1.1 only.
    #[cfg(feature = "http2")]
    let builder = {
        let mut b = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
        b.http1()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout)
            .max_headers(limits.max_headers);
        b.http2()
            .timer(TokioTimer::new())
            .keep_alive_interval(limits.http2_keep_alive_interval)
            .keep_alive_timeout(limits.http2_keep_alive_timeout)
            .max_header_list_size(limits.http2_max_header_list_bytes)
            .max_concurrent_streams(limits.http2_max_concurrent_streams);
        b
    };
    #[cfg(not(feature = "http2"))]
    let builder = {
        let mut b = hyper::server::conn::http1::Builder::new();
        b.timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout)
            .max_headers(limits.max_headers);
        b
    };
    let builder = Arc::new(builder);
    // Cancelled when the drain closes the connections (after the grace).
    let drain = CancellationToken::new();
    // One receiver per open connection; `closed()` on the sender resolves
    // when the last one is dropped.
    let (open_tx, open_rx) = tokio::sync::watch::channel(());
    let sweeper = {
        let s = service.clone();
        tokio::spawn(async move {
            let mut t = tokio::time::interval(Duration::from_secs(30));
            loop {
                t.tick().await;
                s.sweep_sessions();
            }
        })
    };
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            // The shutdown future first, every time: its first poll is what
            // installs a signal handler (the binaries' SIGTERM), and with
            // random order a burst of ready accepts could postpone that
            // poll, so an early SIGTERM killed the process instead of
            // draining it (seen as exit status 15 in drain.rs under load).
            biased;
            _ = &mut shutdown => break,
            accepted = listener.accept() => {
                let (stream, _peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // EMFILE and friends: back off briefly instead of spinning.
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let make = make.clone();
                let builder = builder.clone();
                let drain = drain.clone();
                let first_bytes_timeout = limits.header_read_timeout;
                let idle_timeout = limits.http2_idle_timeout;
                // Held for the connection's life: the drain waits until
                // every copy is gone.
                let open = open_rx.clone();
                tokio::spawn(async move {
                    let _open = open;
                    let Some(detected) = version_bytes_arrived(&stream, first_bytes_timeout).await
                    else {
                        return;
                    };
                    // HTTP/2 off: closed unanswered, as an HTTP/1-only
                    // server closes on the preface.
                    if detected == Detected::Http2 && !http2 {
                        tracing::debug!("closing an HTTP/2 connection: HttpConfig::http2 is off");
                        return;
                    }
                    // HTTP/1 keep-alive connections are bounded by hyper's
                    // header read timeout; HTTP/2 ones by their activity.
                    let activity = (detected == Detected::Http2).then(Activity::new);
                    let hyper_svc = make(activity.clone());
                    // HTTP/1: the header read timeout on one timer armed
                    // per connection, not one per request (conn_timer.rs).
                    let per_connection;
                    let builder = match detected {
                        Detected::Http2 => &*builder,
                        Detected::Http1 => {
                            per_connection = with_conn_timer(&builder);
                            &per_connection
                        }
                    };
                    #[cfg(feature = "http2")]
                    let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), hyper_svc);
                    #[cfg(not(feature = "http2"))]
                    let conn = builder.serve_connection(TokioIo::new(stream), hyper_svc);
                    let mut conn = std::pin::pin!(conn);
                    let idle = async {
                        match &activity {
                            Some(a) => a.idle_for(idle_timeout).await,
                            None => std::future::pending().await,
                        }
                    };
                    // After a GOAWAY, hyper waits for the peer to answer a
                    // PING before it closes; a silent peer never does, so
                    // an idle connection gets the same time again at most.
                    let bound = tokio::select! {
                        _ = conn.as_mut() => return,
                        () = drain.cancelled() => None,
                        () = idle => {
                            tracing::debug!(?idle_timeout, "closing an idle HTTP/2 connection");
                            Some(idle_timeout)
                        }
                    };
                    conn.as_mut().graceful_shutdown();
                    match bound {
                        Some(b) => {
                            let _ = tokio::time::timeout(b, conn).await;
                        }
                        None => {
                            let _ = conn.await;
                        }
                    }
                });
            }
        }
    }
    // Graceful drain. Closing the listener first makes new connections
    // fail at once (refused), so a load balancer retries them elsewhere
    // before they were sent; a listener kept open until exit would queue
    // them in the backlog and reset them after the request was written.
    drop(listener);
    sweeper.abort();
    // Listen streams end with their final result (SUB-10), handshake-era
    // GET streams close, and HTTP/1 answers carry `connection: close` from
    // now on.
    service.shutdown_streams();
    let deadline = tokio::time::Instant::now() + limits.drain_timeout;
    // The grace: idle keep-alive connections stay open, so a request a
    // load balancer already sent on one is answered (and the connection
    // then closed) instead of lost. Ends early when no connection is left.
    drop(open_rx);
    let grace_end = deadline.min(tokio::time::Instant::now() + limits.drain_grace);
    let _ = tokio::time::timeout_at(grace_end, open_tx.closed()).await;
    // Then in-flight requests finish (their connections close after the
    // answer), idle connections close now, within the drain deadline.
    drain.cancel();
    if tokio::time::timeout_at(deadline, open_tx.closed())
        .await
        .is_err()
    {
        tracing::warn!(
            deadline = ?limits.drain_timeout,
            "drain deadline passed: closing the connections still open"
        );
    }
    Ok(())
}
