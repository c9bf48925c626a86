//! `mcp bridge --expose HOST:PORT -- CMD [ARGS…]`: Streamable HTTP at
//! `/mcp` in front of a stdio server child (the reverse of `mcp bridge URL`).
//!
//! The HTTP side is `mcp serve --http`'s transport; problems with the
//! child (garbage on its stdout, exits, restarts) are reported on stderr.

use crate::bridge::BridgeArgs;
use crate::exit::{Failure, code};
use clap::Args;
use ferromcp_bridge::expose::{Expose, Restart};
use ferromcp_bridge::{Glob, Limits, ToolFilter};
use ferromcp_server::transport::http::HttpConfig;
use ferromcp_server::transport::origin::{HostPattern, OriginPolicy};
use std::sync::Arc;
use std::time::Duration;

/// The `--expose` options of `mcp bridge`.
#[derive(Debug, Args)]
pub struct ExposeArgs {
    /// Serve the stdio server given after `--` over Streamable HTTP at
    /// http://HOST:PORT/mcp instead of bridging to a URL.
    #[arg(long, value_name = "HOST:PORT", conflicts_with = "url")]
    pub expose: Option<String>,
    /// With --expose: the stdio server's command and arguments, after `--`.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
    /// With --expose: also accept this Host (`name`, `name:port`, or
    /// `name:*`; repeatable). Only loopback hosts are accepted otherwise.
    #[arg(long = "allow-host", value_name = "HOST", requires = "expose")]
    pub allow_hosts: Vec<String>,
    /// With --expose: also accept requests from this Origin (repeatable).
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "expose")]
    pub allow_origins: Vec<String>,
    /// With --expose: milliseconds before the first restart of a child
    /// that exited; the wait doubles up to --restart-max-ms.
    #[arg(long, value_name = "MS", default_value_t = 200, requires = "expose")]
    pub restart_initial_ms: u64,
    /// With --expose: the longest wait before restarting the child.
    #[arg(long, value_name = "MS", default_value_t = 30_000, requires = "expose")]
    pub restart_max_ms: u64,
    /// With --expose: start one child per handshake-era session (for
    /// stdio servers that keep state per connection); 2026-07-28 requests
    /// go to the shared child.
    #[arg(long, requires = "expose")]
    pub child_per_session: bool,
    /// With --child-per-session: session children running at once; a new
    /// session's calls are refused beyond it.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 64,
        requires = "child_per_session"
    )]
    pub max_session_children: usize,
    /// With --child-per-session: seconds a session child may sit idle
    /// before it is stopped.
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 1800,
        requires = "child_per_session"
    )]
    pub session_child_idle: u64,
    /// With --expose: bearer protection of the HTTP endpoint.
    #[command(flatten)]
    pub auth: crate::resource_auth::ResourceAuthArgs,
}

/// The tool filter from --allow-tool/--deny-tool.
fn tool_filter(allow: &[String], deny: &[String]) -> Result<ToolFilter, Failure> {
    let mut filter = ToolFilter::new();
    for g in allow {
        filter =
            filter.allow(Glob::new(g).map_err(|e| Failure::usage(format!("--allow-tool: {e}")))?);
    }
    for g in deny {
        filter =
            filter.deny(Glob::new(g).map_err(|e| Failure::usage(format!("--deny-tool: {e}")))?);
    }
    Ok(filter)
}

/// The Host/Origin policy from --allow-host/--allow-origin (loopback only
/// otherwise).
pub(crate) fn origin_policy(hosts: &[String], origins: &[String]) -> Result<OriginPolicy, Failure> {
    let mut origin = OriginPolicy::default();
    for h in hosts {
        if HostPattern::parse(h).is_none() {
            return Err(Failure::usage(format!(
                "--allow-host {h:?} is not a host pattern"
            )));
        }
        origin = origin.allow_host(h);
    }
    for o in origins {
        let ok = o
            .split_once("://")
            .is_some_and(|(_, rest)| HostPattern::parse(rest.trim_end_matches('/')).is_some());
        if !ok {
            return Err(Failure::usage(format!(
                "--allow-origin {o:?} is not an origin (scheme://host[:port])"
            )));
        }
        origin = origin.allow_origin(o);
    }
    Ok(origin)
}

/// Runs `mcp bridge --expose` until SIGINT/SIGTERM.
pub async fn run(a: BridgeArgs, addr: String) -> Result<u8, Failure> {
    let x = &a.expose;
    let Some((program, args)) = x.command.split_first() else {
        return Err(Failure::usage(
            "--expose needs the stdio server's command after `--` (mcp bridge --expose 127.0.0.1:8080 -- CMD ARGS…)",
        ));
    };
    if !a.headers.is_empty() {
        return Err(Failure::usage(
            "--header applies to a remote URL, not to --expose",
        ));
    }
    let origin = origin_policy(&x.allow_hosts, &x.allow_origins)?;
    let http = HttpConfig::default().origin(origin);
    let limits = Limits::default()
        .timeout(Duration::from_secs(a.timeout.max(1)))
        .max_in_flight(a.max_in_flight);
    let restart = Restart {
        initial: Duration::from_millis(x.restart_initial_ms.max(1)),
        max: Duration::from_millis(x.restart_max_ms.max(x.restart_initial_ms).max(1)),
        ..Restart::default()
    };
    let mut expose = Expose::new(program.clone(), args.to_vec());
    if x.child_per_session {
        expose = expose.child_per_session(
            x.max_session_children,
            Duration::from_secs(x.session_child_idle.max(1)),
        );
    }
    let expose = expose
        .filter(tool_filter(&a.allow_tools, &a.deny_tools)?)
        .limits(limits)
        .restart(restart)
        .http(http)
        .report(Arc::new(|m| eprintln!("mcp bridge --expose: {m}")));
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .map_err(|e| Failure::usage(format!("--expose {addr}: cannot listen: {e}")))?;
    let local = listener
        .local_addr()
        .map_err(|e| Failure::transport(e.to_string()))?;
    // The child is started with the bridge's own environment and the
    // arguments after `--`; an inbound Authorization header stays in the
    // HTTP layer (the token is checked there and never forwarded).
    let auth = x.auth.layer(local)?;
    let protected = if auth.is_some() {
        " (bearer tokens required)"
    } else {
        ""
    };
    eprintln!("mcp bridge --expose: listening on http://{local}/mcp{protected} for {program}");
    let shutdown = crate::serve::shutdown_signal();
    match auth {
        Some(layer) => expose.run_layered(listener, layer, shutdown).await,
        None => expose.run(listener, shutdown).await,
    }
    .map_err(|e| Failure::transport(e.message().to_owned()))?;
    Ok(code::OK)
}
