//! The accept loop: TCP_NODELAY, HTTP/1.1 and HTTP/2, header and version
//! timeouts, session sweeping and the graceful drain.

use super::*;

/// Waits, at most `limit`, until the client has sent enough bytes to tell
/// HTTP/1 from HTTP/2: a byte that differs from the HTTP/2 preface, or the
/// whole preface. False on timeout, end of stream or error.
///
/// hyper's header read timeout starts only once the version is known, and
/// version detection itself waits forever: a client that connects and stays
/// silent (or sends a partial preface such as `P`) held its connection and
/// task indefinitely.
pub(super) async fn version_bytes_arrived(stream: &tokio::net::TcpStream, limit: Duration) -> bool {
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    let wait = async {
        let mut buf = [0u8; PREFACE.len()];
        loop {
            let n = stream.peek(&mut buf).await.ok()?;
            let seen = buf.get(..n)?;
            if n == 0 {
                return None;
            }
            if n == PREFACE.len() || PREFACE.get(..n) != Some(seen) {
                return Some(());
            }
            // A prefix of the preface: the rest is on its way, or never comes.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    matches!(tokio::time::timeout(limit, wait).await, Ok(Some(())))
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
/// TCP_NODELAY on every connection, HTTP/1.1 and HTTP/2, header read
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
        move || {
            let inner = inner.clone();
            hyper::service::service_fn(move |req| {
                let inner = inner.clone();
                async move { Ok::<_, Infallible>(super::handle(inner, req).await) }
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
    let make = move || {
        let svc = wrapped.clone();
        hyper::service::service_fn(move |req| {
            let mut svc = svc.clone();
            async move {
                futures_util::future::poll_fn(|cx| svc.poll_ready(cx)).await?;
                svc.call(req).await
            }
        })
    };
    accept_loop(make, service, listener, shutdown).await
}

/// The accept loop and the drain, for any hyper service `make` builds per
/// connection.
async fn accept_loop<M, H, RB>(
    make: M,
    service: McpService,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Error>
where
    M: Fn() -> H,
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
    let limits = service.inner.shared.limits.clone();
    // Feature `http2`: HTTP/1.1 or h2c per connection; otherwise HTTP/1.1 only.
    #[cfg(feature = "http2")]
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    #[cfg(feature = "http2")]
    let mut h1 = builder.http1();
    #[cfg(not(feature = "http2"))]
    let mut builder = hyper::server::conn::http1::Builder::new();
    #[cfg(not(feature = "http2"))]
    let h1 = &mut builder;
    h1.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_headers(limits.max_headers);
    let builder = Arc::new(builder);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
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
                let hyper_svc = make();
                let builder = builder.clone();
                let watcher = graceful.watcher();
                let first_bytes_timeout = limits.header_read_timeout;
                // Held for the connection's life: the drain grace waits
                // until every copy is gone.
                let open = open_rx.clone();
                tokio::spawn(async move {
                    let _open = open;
                    if !version_bytes_arrived(&stream, first_bytes_timeout).await {
                        return;
                    }
                    #[cfg(feature = "http2")]
                    let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), hyper_svc).into_owned();
                    #[cfg(not(feature = "http2"))]
                    let conn = builder.serve_connection(TokioIo::new(stream), hyper_svc);
                    let _ = watcher.watch(conn).await;
                });
            }
            _ = &mut shutdown => break,
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
    if tokio::time::timeout_at(deadline, graceful.shutdown())
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
