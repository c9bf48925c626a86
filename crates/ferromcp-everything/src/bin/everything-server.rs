//! `everything-server --http 127.0.0.1:PORT` (endpoint `/mcp`) or
//! `everything-server --stdio`. SIGTERM and Ctrl-C exit cleanly.
//!
//! Limits default to [`Limits::default`]; each can be overridden by an
//! environment variable (used by the abuse tests and the soak script to get
//! small caps and short timeouts). Sizes and counts are plain integers,
//! durations are milliseconds. An unparsable value is a start-up error, never
//! silently ignored.
//!
//! | Variable | `Limits` field |
//! |---|---|
//! | `MCP_MAX_BODY_BYTES` | `max_body_bytes` |
//! | `MCP_MAX_LINE_BYTES` | `max_line_bytes` |
//! | `MCP_MAX_IN_FLIGHT` | `max_in_flight` |
//! | `MCP_MAX_CONCURRENT_REQUESTS` | `max_concurrent_requests` |
//! | `MCP_HANDLER_TIMEOUT_MS` | `handler_timeout` |
//! | `MCP_BODY_READ_TIMEOUT_MS` | `body_read_timeout` |
//! | `MCP_HEADER_READ_TIMEOUT_MS` | `header_read_timeout` |
//! | `MCP_MAX_HEADERS` | `max_headers` |
//! | `MCP_HTTP2_IDLE_TIMEOUT_MS` | `http2_idle_timeout` |
//! | `MCP_HTTP2_KEEP_ALIVE_MS` | `http2_keep_alive_interval` (0: off) |
//! | `MCP_HTTP2_KEEP_ALIVE_TIMEOUT_MS` | `http2_keep_alive_timeout` |
//! | `MCP_HTTP2_MAX_HEADER_LIST_BYTES` | `http2_max_header_list_bytes` |
//! | `MCP_HTTP2_MAX_CONCURRENT_STREAMS` | `http2_max_concurrent_streams` |
//! | `MCP_MAX_SESSIONS` | `max_sessions` |
//! | `MCP_SESSION_IDLE_TIMEOUT_MS` | `session_idle_timeout` |
//! | `MCP_MAX_LISTEN_STREAMS` | `max_listen_streams` |
//! | `MCP_LISTEN_BACKLOG` | `listen_backlog` |
//! | `MCP_SSE_KEEPALIVE_MS` | `sse_keepalive` |
//! | `MCP_SSE_COMMIT_AFTER_MS` | `sse_commit_after` |
//! | `MCP_SESSION_EVENT_BUFFER` | `session_event_buffer` |
//! | `MCP_MAX_SUBSCRIPTIONS_PER_SESSION` | `max_subscriptions_per_session` |
//! | `MCP_MAX_SUBSCRIPTION_URI_BYTES` | `max_subscription_uri_bytes` |
//! | `MCP_MAX_CLIENT_METADATA_BYTES` | `max_client_metadata_bytes` |
//! | `MCP_CLIENT_REQUEST_TIMEOUT_MS` | `client_request_timeout` |
//! | `MCP_KEEP_ALIVE_MS` | `keep_alive_interval` (unset: off) |
//! | `MCP_KEEP_ALIVE_TIMEOUT_MS` | `keep_alive_timeout` |
//! | `MCP_DRAIN_TIMEOUT_MS` | `drain_timeout` (SIGTERM/Ctrl-C: graceful drain, exit 0) |
//! | `MCP_DRAIN_GRACE_MS` | `drain_grace` (idle connections kept open during the drain) |
//!
//! `requestState` keys: `MCP_STATE_KEYS=hex1,hex2,…` (64 hex digits each)
//! is a key ring shared by replicas: the first key seals, all open, so keys
//! rotate across a fleet (`[A]` → `[A,B]` → `[B,A]` → `[B]`, each step
//! everywhere before the next, the last one a TTL later). `MCP_STATE_KEY`
//! (one key) still works as a ring of one that also opens tokens minted
//! under the old key id `env`. Setting both is a start-up error. Without
//! either, the key is random per process. `MCP_STATE_TTL_MS` sets the token
//! lifetime (whole seconds, at least one). `MCP_STATE_SINGLE_USE` (a number
//! of tokens) makes every `requestState` single-use, remembering at most
//! that many unexpired tokens; with `--redis` the record is in
//! Redis, shared by every replica.
//!
//! `--redis redis://HOST:PORT/DB` (feature `redis`) shares the change bus
//! (list changes, resource updates) and the single-use record between
//! replicas; it refuses to start without `MCP_STATE_KEYS`/`MCP_STATE_KEY`.
//! `MCP_REDIS_PREFIX` sets the key/channel prefix (default `mcp:`),
//! `MCP_REPLICA_ID` this replica's id (default random).
// MRTR-09

use ferromcp_everything::config::{RedisOptions, state_key_ring, with_redis};
use ferromcp_server::{Limits, RequestStateConfig};
use std::process::ExitCode;
use std::time::Duration;

fn usage() -> ExitCode {
    eprintln!(
        "usage: everything-server (--http HOST:PORT | --stdio) [--redis redis://HOST:PORT/DB]"
    );
    ExitCode::from(2)
}

/// SIGTERM or Ctrl-C. The SIGTERM handler is installed when this is called,
/// not when the future is first polled: `serve` binds its listener first,
/// so a SIGTERM right after the port accepts connections (a test, an
/// orchestrator) must already be caught, or it kills the process instead of
/// draining it.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    async move {
        #[cfg(unix)]
        if let Some(mut term) = term {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn env_value<T: std::str::FromStr>(name: &str) -> Result<Option<T>, String> {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| format!("{name}={v:?} is not a valid value")),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(format!("{name} is not valid UTF-8")),
    }
}

fn set_count(name: &str, slot: &mut usize) -> Result<(), String> {
    if let Some(v) = env_value::<usize>(name)? {
        *slot = v;
    }
    Ok(())
}

fn set_millis(name: &str, slot: &mut Duration) -> Result<(), String> {
    if let Some(v) = env_value::<u64>(name)? {
        *slot = Duration::from_millis(v);
    }
    Ok(())
}

/// The limits from `MCP_*` environment variables over the defaults.
fn limits_from_env() -> Result<Limits, String> {
    let mut l = Limits::default();
    set_count("MCP_MAX_BODY_BYTES", &mut l.max_body_bytes)?;
    set_count("MCP_MAX_LINE_BYTES", &mut l.max_line_bytes)?;
    set_count("MCP_MAX_IN_FLIGHT", &mut l.max_in_flight)?;
    set_count(
        "MCP_MAX_CONCURRENT_REQUESTS",
        &mut l.max_concurrent_requests,
    )?;
    set_millis("MCP_HANDLER_TIMEOUT_MS", &mut l.handler_timeout)?;
    set_millis("MCP_BODY_READ_TIMEOUT_MS", &mut l.body_read_timeout)?;
    set_millis("MCP_HEADER_READ_TIMEOUT_MS", &mut l.header_read_timeout)?;
    set_count("MCP_MAX_HEADERS", &mut l.max_headers)?;
    set_millis("MCP_HTTP2_IDLE_TIMEOUT_MS", &mut l.http2_idle_timeout)?;
    if let Some(ms) = env_value::<u64>("MCP_HTTP2_KEEP_ALIVE_MS")? {
        l.http2_keep_alive_interval = (ms > 0).then(|| Duration::from_millis(ms));
    }
    set_millis(
        "MCP_HTTP2_KEEP_ALIVE_TIMEOUT_MS",
        &mut l.http2_keep_alive_timeout,
    )?;
    if let Some(v) = env_value::<u32>("MCP_HTTP2_MAX_HEADER_LIST_BYTES")? {
        l.http2_max_header_list_bytes = v;
    }
    if let Some(v) = env_value::<u32>("MCP_HTTP2_MAX_CONCURRENT_STREAMS")? {
        l.http2_max_concurrent_streams = v;
    }
    set_count("MCP_MAX_SESSIONS", &mut l.max_sessions)?;
    set_millis("MCP_SESSION_IDLE_TIMEOUT_MS", &mut l.session_idle_timeout)?;
    set_count("MCP_MAX_LISTEN_STREAMS", &mut l.max_listen_streams)?;
    set_count("MCP_LISTEN_BACKLOG", &mut l.listen_backlog)?;
    set_millis("MCP_SSE_KEEPALIVE_MS", &mut l.sse_keepalive)?;
    set_millis("MCP_SSE_COMMIT_AFTER_MS", &mut l.sse_commit_after)?;
    set_count("MCP_SESSION_EVENT_BUFFER", &mut l.session_event_buffer)?;
    set_count(
        "MCP_MAX_SUBSCRIPTIONS_PER_SESSION",
        &mut l.max_subscriptions_per_session,
    )?;
    set_count(
        "MCP_MAX_SUBSCRIPTION_URI_BYTES",
        &mut l.max_subscription_uri_bytes,
    )?;
    set_count(
        "MCP_MAX_CLIENT_METADATA_BYTES",
        &mut l.max_client_metadata_bytes,
    )?;
    set_millis(
        "MCP_CLIENT_REQUEST_TIMEOUT_MS",
        &mut l.client_request_timeout,
    )?;
    if let Some(ms) = env_value::<u64>("MCP_KEEP_ALIVE_MS")? {
        l.keep_alive_interval = Some(std::time::Duration::from_millis(ms.max(1)));
    }
    set_millis("MCP_KEEP_ALIVE_TIMEOUT_MS", &mut l.keep_alive_timeout)?;
    set_millis("MCP_DRAIN_TIMEOUT_MS", &mut l.drain_timeout)?;
    set_millis("MCP_DRAIN_GRACE_MS", &mut l.drain_grace)?;
    Ok(l)
}

/// Applies the environment configuration to the builder, then Redis.
async fn configure(
    b: ferromcp_server::ServerBuilder,
    redis: Option<String>,
) -> Result<ferromcp_server::ServerBuilder, String> {
    let limits = limits_from_env()?;
    let backlog = limits.listen_backlog;
    let mut b = b.limits(limits);
    let key = env_value::<String>("MCP_STATE_KEY")?;
    let keys = env_value::<String>("MCP_STATE_KEYS")?;
    let ring = state_key_ring(key.as_deref(), keys.as_deref())?;
    let shared_keys = ring.is_some();
    let mut state = RequestStateConfig::default();
    if let Some(ring) = ring {
        state = state.keys(ring);
    }
    if let Some(ms) = env_value::<u64>("MCP_STATE_TTL_MS")? {
        state = state.ttl(Duration::from_millis(ms));
    }
    let single_use = env_value::<usize>("MCP_STATE_SINGLE_USE")?;
    if let Some(n) = single_use {
        state = state.single_use(n);
    }
    if let Some(url) = redis {
        let opts = RedisOptions {
            url,
            prefix: env_value("MCP_REDIS_PREFIX")?,
            replica_id: env_value("MCP_REPLICA_ID")?,
            single_use: single_use.is_some(),
            backlog,
        };
        let backplane;
        (state, backplane) = with_redis(state, &opts, shared_keys).await?;
        b = b.backplane(backplane);
    }
    Ok(b.request_state(state))
}

/// `--http ADDR` or `--stdio`, plus an optional `--redis URL`, in any order.
fn parse_args(args: &[String]) -> Result<(Option<std::net::SocketAddr>, Option<String>), String> {
    let mut mode: Option<Option<std::net::SocketAddr>> = None;
    let mut redis = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--http" if mode.is_none() => {
                let addr = it.next().ok_or("--http needs HOST:PORT")?;
                let a = addr
                    .parse()
                    .map_err(|e| format!("invalid address {addr:?}: {e}"))?;
                mode = Some(Some(a));
            }
            "--stdio" if mode.is_none() => mode = Some(None),
            "--redis" if redis.is_none() => {
                redis = Some(it.next().ok_or("--redis needs a URL")?.clone());
            }
            other => return Err(format!("unexpected argument {other:?}")),
        }
    }
    let mode = mode.ok_or("one of --http HOST:PORT or --stdio is required")?;
    Ok((mode, redis))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mode, redis) = match parse_args(&args) {
        Ok(parsed) => parsed,
        Err(e) => {
            eprintln!("everything-server: {e}");
            return usage();
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("everything-server: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Configuration (and connecting to Redis) needs the runtime.
    let builder = match rt.block_on(configure(ferromcp_everything::everything_builder(), redis)) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("everything-server: {e}");
            return ExitCode::from(2);
        }
    };
    let server = match builder.build() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("everything-server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = rt.block_on(async move {
        let shutdown = shutdown_signal();
        match mode {
            Some(addr) => {
                eprintln!("everything-server listening on http://{addr}/mcp");
                ferromcp_server::transport::http::serve(server, addr, shutdown).await
            }
            None => {
                tokio::select! {
                    r = server.serve_stdio() => r,
                    _ = shutdown => Ok(()),
                }
            }
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("everything-server: {e}");
            ExitCode::FAILURE
        }
    }
}
