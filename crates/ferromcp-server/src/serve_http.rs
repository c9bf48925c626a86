//! [`Server::serve_http`]: Streamable HTTP as directly as
//! [`Server::serve_stdio`](crate::Server::serve_stdio), with the graceful
//! drain a deployment needs on Ctrl-C and SIGTERM.

use crate::error::Error;
use crate::server::Server;
use crate::transport::http::{HttpConfig, McpService, serve_listener};

impl Server {
    /// Serves this server over Streamable HTTP at `http://<addr>/mcp`,
    /// both protocol eras on the one endpoint, until Ctrl-C (SIGINT) or,
    /// on Unix, SIGTERM; then drains gracefully (new connections refused,
    /// in-flight requests finish within
    /// [`Limits::drain_timeout`](crate::Limits::drain_timeout)) and returns.
    ///
    /// Only loopback `Host` and `Origin` values are accepted (DNS rebinding
    /// protection; others get 421 / 403). To serve a container or LAN name,
    /// use [`Self::serve_http_with`] and an
    /// [`OriginPolicy`](crate::transport::origin::OriginPolicy) that allows it.
    ///
    /// ```no_run
    /// # async fn run(server: ferromcp_server::Server) -> Result<(), ferromcp_server::Error> {
    /// server.serve_http("127.0.0.1:8080").await
    /// # }
    /// ```
    pub async fn serve_http(self, addr: impl tokio::net::ToSocketAddrs) -> Result<(), Error> {
        self.serve_http_with(addr, HttpConfig::default()).await
    }

    /// [`Self::serve_http`] with an [`HttpConfig`]: the Host/Origin policy,
    /// the path, JSON-only answers, …
    ///
    /// ```no_run
    /// use ferromcp_server::transport::http::HttpConfig;
    /// use ferromcp_server::transport::origin::OriginPolicy;
    ///
    /// # async fn run(server: ferromcp_server::Server) -> Result<(), ferromcp_server::Error> {
    /// // In a container reached as http://mcp:8080/mcp by other services.
    /// let config = HttpConfig::default().origin(OriginPolicy::default().allow_host("mcp:8080"));
    /// server.serve_http_with("0.0.0.0:8080", config).await
    /// # }
    /// ```
    pub async fn serve_http_with(
        self,
        addr: impl tokio::net::ToSocketAddrs,
        config: HttpConfig,
    ) -> Result<(), Error> {
        // Before the port opens: a SIGTERM once clients can connect drains.
        let shutdown = shutdown_signal();
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(Error::io)?;
        serve_listener(McpService::new(self, config), listener, shutdown).await
    }
}

/// A future completing at Ctrl-C (SIGINT) or, on Unix, SIGTERM (what
/// `docker stop`, systemd and Kubernetes send), for
/// [`serve_listener`]'s `shutdown`. On Unix the handlers are installed
/// when this is called, not when the future is first polled, so a signal
/// arriving while the server starts is not lost (call it before binding).
/// If a handler cannot be installed, that signal is not waited for.
///
/// # Panics
///
/// On Unix, when called outside a Tokio runtime.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{Signal, SignalKind, signal};
        let int = signal(SignalKind::interrupt()).ok();
        let term = signal(SignalKind::terminate()).ok();
        async fn wait(s: Option<Signal>) {
            match s {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
        async move {
            tokio::select! {
                () = wait(int) => {}
                () = wait(term) => {}
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}
