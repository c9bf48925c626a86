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
//! | `MCP_MAX_SESSIONS` | `max_sessions` |
//! | `MCP_SESSION_IDLE_TIMEOUT_MS` | `session_idle_timeout` |
//! | `MCP_MAX_LISTEN_STREAMS` | `max_listen_streams` |
//! | `MCP_LISTEN_BACKLOG` | `listen_backlog` |
//! | `MCP_SSE_KEEPALIVE_MS` | `sse_keepalive` |
//! | `MCP_SSE_COMMIT_AFTER_MS` | `sse_commit_after` |
//! | `MCP_SESSION_EVENT_BUFFER` | `session_event_buffer` |
//! | `MCP_CLIENT_REQUEST_TIMEOUT_MS` | `client_request_timeout` |
//! | `MCP_KEEP_ALIVE_MS` | `keep_alive_interval` (unset: off) |
//! | `MCP_KEEP_ALIVE_TIMEOUT_MS` | `keep_alive_timeout` |
//!
//! `MCP_STATE_KEY` (64 hex digits) replaces the random per-process
//! `requestState` key with a fixed one under key id `env` — for tests that
//! mint their own tokens (expired, wrongly bound) and for replicas that must
//! open each other's tokens. `MCP_STATE_TTL_MS` sets the token lifetime
//! (whole seconds, at least one). `MCP_STATE_SINGLE_USE` (a number of
//! tokens) makes every `requestState` single-use, remembering at most that
//! many unexpired tokens (MRTR-09).

use mcp_server::Limits;
use mcp_server::request_state::KeyRing;
use std::process::ExitCode;
use std::time::Duration;

fn usage() -> ExitCode {
    eprintln!("usage: everything-server --http HOST:PORT | --stdio");
    ExitCode::from(2)
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
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
    set_count("MCP_MAX_SESSIONS", &mut l.max_sessions)?;
    set_millis("MCP_SESSION_IDLE_TIMEOUT_MS", &mut l.session_idle_timeout)?;
    set_count("MCP_MAX_LISTEN_STREAMS", &mut l.max_listen_streams)?;
    set_count("MCP_LISTEN_BACKLOG", &mut l.listen_backlog)?;
    set_millis("MCP_SSE_KEEPALIVE_MS", &mut l.sse_keepalive)?;
    set_millis("MCP_SSE_COMMIT_AFTER_MS", &mut l.sse_commit_after)?;
    set_count("MCP_SESSION_EVENT_BUFFER", &mut l.session_event_buffer)?;
    set_millis(
        "MCP_CLIENT_REQUEST_TIMEOUT_MS",
        &mut l.client_request_timeout,
    )?;
    if let Some(ms) = env_value::<u64>("MCP_KEEP_ALIVE_MS")? {
        l.keep_alive_interval = Some(std::time::Duration::from_millis(ms.max(1)));
    }
    set_millis("MCP_KEEP_ALIVE_TIMEOUT_MS", &mut l.keep_alive_timeout)?;
    Ok(l)
}

fn parse_key(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim().as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let mut key = [0u8; 32];
    for (out, pair) in key.iter_mut().zip(hex.chunks_exact(2)) {
        let s = std::str::from_utf8(pair).ok()?;
        *out = u8::from_str_radix(s, 16).ok()?;
    }
    Some(key)
}

/// Applies the environment configuration to the builder.
fn configure(b: mcp_server::ServerBuilder) -> Result<mcp_server::ServerBuilder, String> {
    let mut b = b.limits(limits_from_env()?);
    if let Some(hex) = env_value::<String>("MCP_STATE_KEY")? {
        let key = parse_key(&hex).ok_or("MCP_STATE_KEY must be 64 hex digits")?;
        let ring = KeyRing::new("env", key).map_err(|e| e.to_string())?;
        b = b.state_keys(ring);
    }
    if let Some(ms) = env_value::<u64>("MCP_STATE_TTL_MS")? {
        b = b.state_ttl(Duration::from_millis(ms));
    }
    if let Some(n) = env_value::<usize>("MCP_STATE_SINGLE_USE")? {
        b = b.state_single_use(n);
    }
    Ok(b)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = match args.as_slice() {
        [flag, addr] if flag == "--http" => match addr.parse::<std::net::SocketAddr>() {
            Ok(a) => Some(a),
            Err(e) => {
                eprintln!("invalid address {addr:?}: {e}");
                return usage();
            }
        },
        [flag] if flag == "--stdio" => None,
        _ => return usage(),
    };
    let builder = match configure(mcp_everything::everything_builder()) {
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
    let result = rt.block_on(async move {
        match mode {
            Some(addr) => {
                eprintln!("everything-server listening on http://{addr}/mcp");
                mcp_server::transport::http::serve(server, addr, shutdown_signal()).await
            }
            None => {
                tokio::select! {
                    r = server.serve_stdio() => r,
                    _ = shutdown_signal() => Ok(()),
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
