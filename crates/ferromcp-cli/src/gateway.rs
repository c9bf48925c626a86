//! `mcp gateway --config FILE (--http HOST:PORT | --stdio)`: many MCP
//! servers behind one endpoint (see docs/GATEWAY.md).
//!
//! The configuration is validated before anything starts (errors name the
//! key); problems with upstreams (unreachable, lost, skipped names) are
//! reported on stderr and never stop the gateway.

use crate::bridge_expose::origin_policy;
use crate::exit::{Failure, code};
use crate::gateway_reload::{Reloader, Settle};
use clap::Args;
use ferromcp_auth::resource::{
    AuthLayer, HyperFetch, IntrospectionVerifier, JwtVerifier, ResourceUri,
};
use ferromcp_gateway::{Config, Gateway, InboundAuth, Restart, UpstreamAuth};
use ferromcp_server::transport::http::{HttpConfig, McpService, serve_layered, serve_listener};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The options of `mcp gateway`.
#[derive(Debug, Args)]
#[command(after_help = "\
The config file uses the mcpServers format hosts already use:
  {\"mcpServers\": {
     \"files\":  {\"command\": \"mcp-files\", \"args\": [\"--root\", \".\"], \"denyTools\": [\"delete_*\"]},
     \"remote\": {\"url\": \"https://example.com/mcp\",
                \"headers\": {\"Authorization\": \"Bearer ${REMOTE_TOKEN}\"}, \"timeoutMs\": 20000}}}
Tools and prompts are exposed as NAME__TOOL; resources keep their URIs.
allowTools/denyTools are enforced on calls, not only hidden from tools/list.
Each upstream gets only its configured headers; a client's are never forwarded.
The file is read again on SIGHUP and when it changes (--no-watch: SIGHUP only).
See docs/GATEWAY.md for every key and what is not implemented yet.")]
pub struct GatewayArgs {
    /// The JSON configuration file (`{"mcpServers": {…}}`).
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// Serve Streamable HTTP at http://HOST:PORT/mcp (port 0 picks a free
    /// one; the address is printed on stderr).
    #[arg(long, value_name = "HOST:PORT", required_unless_present = "stdio")]
    pub http: Option<String>,
    /// Serve on stdin/stdout (for a host that starts local servers).
    #[arg(long, conflicts_with = "http")]
    pub stdio: bool,
    /// With --http: also accept this Host (`name`, `name:port`, or
    /// `name:*`; repeatable). Only loopback hosts are accepted otherwise.
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    pub allow_hosts: Vec<String>,
    /// With --http: also accept requests from this Origin (repeatable).
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    pub allow_origins: Vec<String>,
    /// Milliseconds before an unreachable or lost upstream is tried again;
    /// the wait doubles up to --restart-max-ms.
    #[arg(long, value_name = "MS", default_value_t = 200)]
    pub restart_initial_ms: u64,
    /// The longest wait before trying an upstream again.
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    pub restart_max_ms: u64,
    /// Seconds between health checks of a connected upstream (a request
    /// that finds it broken triggers one at once).
    #[arg(long, value_name = "SECS", default_value_t = 5)]
    pub health_interval: u64,
    /// Milliseconds the config file must stay unchanged before a change
    /// is applied (an editor's burst of writes makes one reload; a file
    /// changing without pause is read after five times this).
    #[arg(long, value_name = "MS", default_value_t = 300)]
    pub reload_debounce_ms: u64,
    /// Do not watch the config file: reload on SIGHUP only.
    #[arg(long)]
    pub no_watch: bool,
    /// Run as one replica of a fleet (built with the `redis` feature):
    /// handshake-era sessions, list changes and resource updates are
    /// shared through Redis, so a load balancer may send any request to
    /// any replica. Each replica
    /// still starts its own upstreams. Needs a requestState key ring
    /// shared by every replica: MCP_STATE_KEYS=hex1,hex2 (or
    /// MCP_STATE_KEY=hex). See docs/GATEWAY.md, "A fleet of gateways".
    #[arg(long, value_name = "redis://HOST:PORT/DB")]
    pub redis: Option<String>,
    /// With --redis: the prefix of this fleet's Redis keys and channels
    /// (default `mcp:`); fleets sharing one Redis database need
    /// different prefixes.
    #[arg(long, value_name = "PREFIX", requires = "redis")]
    pub redis_prefix: Option<String>,
}

/// Runs the gateway until SIGINT/SIGTERM (or, with --stdio, until stdin
/// ends).
pub async fn run(a: GatewayArgs) -> Result<u8, Failure> {
    let config = Config::load(&a.config)
        .map_err(|e| Failure::usage(format!("{}: {e}", a.config.display())))?;
    let origin = origin_policy(&a.allow_hosts, &a.allow_origins)?;
    let restart = Restart {
        initial: Duration::from_millis(a.restart_initial_ms.max(1)),
        max: Duration::from_millis(a.restart_max_ms.max(a.restart_initial_ms).max(1)),
        ..Restart::default()
    };
    let listener = match &a.http {
        Some(addr) => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| Failure::usage(format!("--http {addr}: cannot listen: {e}")))?,
        ),
        None => None,
    };
    // Off unless configured; its own listener (see gateway_metrics).
    let metrics_listener = match config.metrics_listen() {
        Some(addr) => Some(tokio::net::TcpListener::bind(addr).await.map_err(|e| {
            Failure::usage(format!(
                "{}: gateway.metrics.listen {addr}: cannot listen: {e}",
                a.config.display()
            ))
        })?),
        None => None,
    };
    let inbound = match (config.auth(), &listener) {
        (Some(a), Some(_)) => Some(inbound_layer(a, &config)?),
        (Some(_), None) => {
            return Err(Failure::usage(format!(
                "{}: gateway.auth protects --http only (a --stdio host is the one client)",
                a.config.display()
            )));
        }
        (None, _) => None,
    };
    let initial_auth = config.auth().cloned();
    // Before the upstreams start: a save meanwhile is applied once they run.
    let reloader = Reloader::new(
        &a.config,
        (!a.no_watch).then(|| Settle::new(Duration::from_millis(a.reload_debounce_ms))),
    );
    let builder = server_builder(&a).await?;
    let n = config.upstreams().len();
    let running = Gateway::new(config)
        .server(builder)
        .auth_provider(Arc::new(upstream_auth))
        .restart(restart)
        .health_interval(Duration::from_secs(a.health_interval.max(1)))
        .report(Arc::new(|m| eprintln!("mcp gateway: {m}")))
        .start()
        .await
        .map_err(|e| Failure::usage(format!("cannot build the gateway: {e}")))?;
    let up = running.connected().await;
    eprintln!(
        "mcp gateway: {} of {n} upstream(s) connected{}",
        up.len(),
        if up.is_empty() {
            String::new()
        } else {
            format!(" ({})", up.join(", "))
        }
    );
    let server = running.server();
    let running = Arc::new(running);
    let reloader = tokio::spawn(reloader.run(running.clone(), initial_auth));
    let metrics = match metrics_listener {
        Some(l) => {
            if let Ok(at) = l.local_addr() {
                eprintln!("mcp gateway: metrics on http://{at}/metrics");
            }
            Some(tokio::spawn(crate::gateway_metrics::serve(
                l,
                running.clone(),
            )))
        }
        None => None,
    };
    let r = match listener {
        Some(listener) => {
            let local = listener
                .local_addr()
                .map_err(|e| Failure::transport(e.to_string()))?;
            eprintln!("mcp gateway: listening on http://{local}/mcp");
            let http = HttpConfig::default().origin(origin);
            let svc = McpService::new(server, http);
            match inbound {
                // AUTH-01: the resource-server layer in front of the
                // endpoint (PRM, 401 + WWW-Authenticate); the verified
                // token stays here, upstreams never see it.
                Some(layer) => {
                    eprintln!(
                        "mcp gateway: bearer tokens required ({})",
                        layer.metadata_url()
                    );
                    serve_layered(svc, layer, listener, crate::serve::shutdown_signal())
                        .await
                        .map_err(|e| e.to_string())
                }
                None => serve_listener(svc, listener, crate::serve::shutdown_signal())
                    .await
                    .map_err(|e| e.to_string()),
            }
        }
        None => tokio::select! {
            r = server.serve_stdio() => r.map_err(|e| e.to_string()),
            _ = crate::serve::shutdown_signal() => Ok(()),
        },
    };
    reloader.abort();
    let _ = reloader.await;
    if let Some(m) = metrics {
        m.abort();
        let _ = m.await;
    }
    if let Ok(running) = Arc::try_unwrap(running) {
        running.shutdown().await;
    }
    r.map_err(|e| Failure::transport(format!("gateway: {e}")))?;
    Ok(code::OK)
}

/// The gateway's client-facing server: [`Gateway::default_server`] with
/// the requestState key ring of `MCP_STATE_KEY`/`MCP_STATE_KEYS` (as
/// `mcp serve`) and, with `--redis`, the shared session store and change
/// bus.
async fn server_builder(a: &GatewayArgs) -> Result<ferromcp_server::ServerBuilder, Failure> {
    let ring = crate::serve::state_key_ring_from_env()?;
    let shared_keys = ring.is_some();
    let mut builder = Gateway::default_server();
    let mut state = ferromcp_server::RequestStateConfig::default();
    if let Some(ring) = ring {
        state = state.keys(ring);
    }
    if let Some(url) = &a.redis {
        let opts = ferromcp_everything::config::RedisOptions {
            url: url.clone(),
            prefix: a.redis_prefix.clone(),
            backlog: ferromcp_server::Limits::default().listen_backlog,
            ..Default::default()
        };
        let backplane;
        (state, backplane) = ferromcp_everything::config::with_redis(state, &opts, shared_keys)
            .await
            .map_err(Failure::usage)?;
        builder = builder.backplane(backplane);
    }
    Ok(builder.request_state(state))
}

// AUTH-01, AUTH-03
/// The resource-server layer of `gateway.auth`: JWTs of `issuer` (keys
/// from its JWKS, found through its metadata; plain `http` only for a
/// loopback issuer), audience `resource`, the PRM document served with
/// `scopes_supported` as given, else every scope the file names.
fn inbound_layer(a: &InboundAuth, config: &Config) -> Result<AuthLayer, Failure> {
    let usage = |e: &dyn std::fmt::Display| Failure::usage(format!("gateway.auth: {e}"));
    let resource = ResourceUri::parse(a.resource()).map_err(|e| usage(&e))?;
    let mut b = match a.introspection() {
        // RFC 7662: the authorization server says whether a token is
        // active (opaque tokens; revocation seen within the cache's time).
        Some(i) => {
            let fetch =
                HyperFetch::new().allow_plain_http(crate::auth::is_loopback_url(i.endpoint()));
            let verifier = IntrospectionVerifier::builder(
                i.endpoint(),
                i.client_id(),
                i.client_secret(),
                &resource,
            )
            .issuer(a.issuer())
            .fetcher(Arc::new(fetch))
            .build()
            .map_err(|e| usage(&e))?;
            AuthLayer::builder(resource, verifier)
        }
        None => {
            let fetch =
                HyperFetch::new().allow_plain_http(crate::auth::is_loopback_url(a.issuer()));
            let verifier = JwtVerifier::builder(a.issuer(), &resource)
                .fetcher(Arc::new(fetch))
                .build()
                .map_err(|e| usage(&e))?;
            AuthLayer::builder(resource, verifier)
        }
    };
    b = b
        .authorization_server(a.issuer())
        .require_scopes(a.required_scopes().iter().cloned());
    // scopes_supported: as given, else every scope the file names.
    let mut supported: Vec<String> = match a.scopes_supported() {
        Some(s) => s.to_vec(),
        None => a.required_scopes().to_vec(),
    };
    if a.scopes_supported().is_none() {
        for u in config.upstreams() {
            for r in u.scopes() {
                supported.extend(r.scopes().iter().cloned());
            }
        }
    }
    supported.sort();
    supported.dedup();
    if !supported.is_empty() {
        b = b.scopes_supported(supported);
    }
    b.build().map_err(|e| usage(&e))
}

// AUTH-20
/// The authorization hook of an upstream with `auth.login` (the stored
/// `mcp login` credentials, refreshed under the store's lock: the same
/// hook `mcp bridge` uses) or `auth.clientCredentials` (a secret, or a
/// key file for `private_key_jwt`).
fn upstream_auth(
    u: &ferromcp_gateway::UpstreamConfig,
) -> Result<Arc<dyn ferromcp_client::HttpAuth>, String> {
    let url = match u.transport() {
        ferromcp_gateway::Transport::Http { url, .. } => url,
        ferromcp_gateway::Transport::Stdio { .. } => {
            return Err("auth applies to a \"url\" server only".to_owned());
        }
    };
    let hook = match u.auth() {
        Some(UpstreamAuth::Login) => crate::auth::stored(url),
        Some(UpstreamAuth::ClientCredentials {
            client_id,
            client_secret,
            scope,
            ..
        }) => crate::auth::client_credentials(url, client_id, client_secret, scope.as_deref()),
        Some(UpstreamAuth::ClientKey {
            client_id,
            key_file,
            scope,
        }) => match std::fs::read_to_string(key_file) {
            Ok(pem) => crate::auth::service(
                url,
                client_id,
                crate::auth::ServiceCredential::PrivateKey(pem),
                scope.as_deref(),
                false,
            ),
            Err(e) => Err(Failure::usage(format!(
                "clientCredentials.clientKeyFile {}: {e}",
                key_file.display()
            ))),
        },
        _ => return Err("no OAuth client is needed for this credential".to_owned()),
    };
    match hook {
        Ok(h) => Ok(h),
        Err(e) => Err(format!("mcpServers.{}.auth: {}", u.name(), e.message)),
    }
}
