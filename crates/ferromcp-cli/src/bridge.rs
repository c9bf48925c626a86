//! `mcp bridge URL`: a stdio MCP server for hosts that only start local
//! servers, relaying to a remote Streamable HTTP server.
//!
//! stdout is the host's wire: nothing else is ever written there; errors
//! go to stderr, and header values are never printed. Unless an
//! `Authorization` header is given, the credentials `mcp login URL` stored
//! are used when the remote answers 401, refreshed when expired (once
//! across every bridge sharing the store), and a host request that cannot
//! be authorized gets a JSON-RPC error saying to run `mcp login URL`.

use crate::bridge_log::{self, LogLevel};
use crate::exit::Failure;
use clap::Args;
use ferromcp_bridge::{Bridge, Glob, Limits, ToolFilter, expand_env};

/// Arguments of `mcp bridge`.
#[derive(Debug, Args)]
#[command(group(
    clap::ArgGroup::new("service_credential")
        .args(["client_secret_env", "client_key_file", "workload_token_file"])
        .multiple(false)
        .requires("client_id")
))]
pub struct BridgeArgs {
    /// The remote server's Streamable HTTP URL.
    #[arg(required_unless_present = "expose")]
    pub url: Option<String>,
    /// A header sent on every request to the remote, as 'Name: value'
    /// (repeatable). `${VAR}` in the value is taken from the environment;
    /// a variable that is not set is an error.
    #[arg(long = "header", short = 'H', value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// Only tools matching this glob (`*`, `?`; case-sensitive) are listed
    /// and callable (repeatable).
    #[arg(long = "allow-tool", value_name = "GLOB")]
    pub allow_tools: Vec<String>,
    /// Tools matching this glob are neither listed nor callable
    /// (repeatable; wins over --allow-tool).
    #[arg(long = "deny-tool", value_name = "GLOB")]
    pub deny_tools: Vec<String>,
    /// Seconds to wait for the remote's next message on a request
    /// (progress restarts it, keep-alive comments do not); the host then
    /// gets an error answer.
    #[arg(long, value_name = "SECS", default_value_t = Limits::DEFAULT_TIMEOUT.as_secs())]
    pub timeout: u64,
    /// Host requests waiting for the remote at once; more are refused.
    #[arg(long, value_name = "N", default_value_t = Limits::DEFAULT_MAX_IN_FLIGHT)]
    pub max_in_flight: usize,
    /// How many times a request that only reads (the lists,
    /// `resources/read`, `prompts/get`, `completion/complete`,
    /// `server/discover`, and `tools/call` of a tool annotated
    /// `readOnlyHint` or `idempotentHint`) is sent again when the remote
    /// cannot be reached or answers HTTP 429, 502, 503 or 504, and (not
    /// `tools/call`) when it sent no answer within `--timeout`; 0 never.
    #[arg(long, value_name = "N", default_value_t = Limits::DEFAULT_RETRIES)]
    pub retries: u32,
    /// The longest wait before such a retry (the backoff's bound); a
    /// remote whose `Retry-After` (seconds or an HTTP date) asks for
    /// longer is not retried.
    #[arg(long, value_name = "SECS", default_value_t = Limits::DEFAULT_RETRY_MAX_WAIT.as_secs())]
    pub retry_max_wait: u64,
    /// When the remote needs authorization and no stored credentials are
    /// usable, run the OAuth flow: `browser` prints the URL on stderr and
    /// opens it (`$MCP_BROWSER`, `$BROWSER`, a display's opener);
    /// `device` prints an RFC 8628 user code on stderr to enter on any
    /// device; `auto` (plain `--login`) is `browser` when an opener is
    /// available, else `device`. The token is stored as `mcp login` stores
    /// it. Bridges started together run one flow.
    #[arg(long, value_enum, value_name = "FLOW", num_args = 0..=1, require_equals = true, default_missing_value = "auto")]
    pub login: Option<crate::auth::LoginFlow>,
    /// Authenticate as a service, with no user, as this client id
    /// registered at the remote's authorization server (found from the
    /// remote's metadata), proving it with one of `--client-secret-env`,
    /// `--client-key-file` (both: the OAuth `client_credentials` grant) or
    /// `--workload-token-file` (the JWT-bearer grant). Tokens are kept in
    /// memory only and obtained again when they expire or are refused.
    #[arg(
        long,
        value_name = "ID",
        requires = "service_credential",
        conflicts_with = "login"
    )]
    pub client_id: Option<String>,
    /// The environment variable holding the `--client-id` secret (never
    /// given on the command line, where other users can read it).
    #[arg(long, value_name = "VAR")]
    pub client_secret_env: Option<String>,
    /// A PEM file with the `--client-id`'s EC P-256 private key (PKCS#8):
    /// the client signs a short-lived assertion instead of sending a
    /// secret (`private_key_jwt`).
    #[arg(long, value_name = "PATH")]
    pub client_key_file: Option<std::path::PathBuf>,
    /// A file holding a JWT the platform issued to this workload (e.g. a
    /// Kubernetes projected service-account token): exchanged for an
    /// access token with the JWT-bearer grant (workload identity
    /// federation), read again each time, since platforms rotate it.
    #[arg(long, value_name = "PATH")]
    pub workload_token_file: Option<std::path::PathBuf>,
    /// With `--client-id`: bind the tokens to a key this process generates
    /// (DPoP, RFC 9449), so a token copied from a log or a proxy is useless
    /// without it; each request carries a fresh proof.
    #[arg(long, requires = "client_id")]
    pub dpop: bool,
    /// The scopes (space-separated) to ask for with `--client-id`;
    /// without it, those the remote's metadata advertises.
    #[arg(long = "client-scope", value_name = "SCOPES", requires = "client_id")]
    pub client_scope: Option<String>,
    /// A 2026-07-28 host in front of a handshake-era remote: seconds a call
    /// waits for the host's retry of an `input_required` round (the
    /// remote's elicitation or sampling request held open); then it is
    /// cancelled and its `requestState` refused.
    #[arg(long, value_name = "SECS", default_value_t = Limits::DEFAULT_INPUT_WAIT.as_secs())]
    pub input_wait: u64,
    /// Calls waiting at once for the host's retry of an input round; a
    /// further pushed request is refused at the remote.
    #[arg(long, value_name = "N", default_value_t = Limits::DEFAULT_MAX_INPUT_WAITS)]
    pub max_input_waits: usize,
    /// A handshake host: milliseconds its messages after
    /// `notifications/initialized` wait for the remote to answer the GET
    /// stream (a request the remote pushes there at once is not lost); 0
    /// does not wait.
    #[arg(long, value_name = "MS", default_value_t = Limits::DEFAULT_STREAM_OPEN_WAIT.as_millis() as u64)]
    pub stream_open_wait: u64,
    /// What the bridge reports on stderr (never on stdout, the host's
    /// wire): off, error, warn, info, debug or trace.
    #[arg(long, value_enum, value_name = "LEVEL", env = "MCP_BRIDGE_LOG", default_value_t = LogLevel::Warn)]
    pub log_level: LogLevel,
    #[command(flatten)]
    pub expose: crate::bridge_expose::ExposeArgs,
}

/// The credential `--client-id` is proven with (clap lets exactly one
/// through).
fn service_credential(
    a: &BridgeArgs,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<crate::auth::ServiceCredential, Failure> {
    use crate::auth::ServiceCredential;
    if let Some(var) = &a.client_secret_env {
        let secret = lookup(var).ok_or_else(|| {
            Failure::usage(format!(
                "--client-secret-env: environment variable {var} is not set"
            ))
        })?;
        return Ok(ServiceCredential::Secret(secret));
    }
    if let Some(path) = &a.client_key_file {
        let pem = std::fs::read_to_string(path)
            .map_err(|e| Failure::usage(format!("--client-key-file {}: {e}", path.display())))?;
        return Ok(ServiceCredential::PrivateKey(pem));
    }
    if let Some(path) = &a.workload_token_file {
        // Read once now so a wrong path fails at start, not at the first
        // call; read again at each token request.
        std::fs::metadata(path).map_err(|e| {
            Failure::usage(format!("--workload-token-file {}: {e}", path.display()))
        })?;
        return Ok(ServiceCredential::WorkloadToken(path.clone()));
    }
    Err(Failure::usage(
        "--client-id needs --client-secret-env, --client-key-file or --workload-token-file",
    ))
}

/// Builds the bridge from the arguments and `lookup` (the environment).
fn build(a: &BridgeArgs, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Bridge, Failure> {
    let usage = |e: ferromcp_bridge::Error| Failure::usage(e.message().to_owned());
    let mut bridge = Bridge::new(a.url.as_deref().unwrap_or_default()).map_err(usage)?;
    for h in &a.headers {
        let Some((name, value)) = h.split_once(':') else {
            return Err(Failure::usage(format!(
                "--header wants 'Name: value' (no ':' in the argument starting {:?})",
                h.chars()
                    .take_while(|c| *c != ' ')
                    .take(40)
                    .collect::<String>()
            )));
        };
        let value = expand_env(value, lookup)
            .map_err(|e| Failure::usage(format!("--header {}: {e}", name.trim())))?;
        bridge = bridge.header(name, &value).map_err(usage)?;
    }
    let mut filter = ToolFilter::new();
    for g in &a.allow_tools {
        filter =
            filter.allow(Glob::new(g).map_err(|e| Failure::usage(format!("--allow-tool: {e}")))?);
    }
    for g in &a.deny_tools {
        filter =
            filter.deny(Glob::new(g).map_err(|e| Failure::usage(format!("--deny-tool: {e}")))?);
    }
    // A configured Authorization header is the only credential sent;
    // otherwise the tokens `mcp login URL` stored are used (and refreshed)
    // when the remote asks for authorization.
    let configured = a.headers.iter().any(|h| {
        h.split_once(':')
            .is_some_and(|(n, _)| n.trim().eq_ignore_ascii_case("authorization"))
    });
    if let Some(id) = &a.client_id {
        if configured {
            return Err(Failure::usage(
                "--client-id and an Authorization header: give one credential",
            ));
        }
        let Some(url) = a.url.as_deref() else {
            return Err(Failure::usage("--client-id needs the remote's URL"));
        };
        let credential = service_credential(a, lookup)?;
        let hook = crate::auth::service(url, id, credential, a.client_scope.as_deref(), a.dpop)?;
        bridge = bridge.auth(hook);
    } else if let (false, Some(url)) = (configured, a.url.as_deref()) {
        let hook = match a.login {
            Some(flow) => crate::auth::interactive(url, flow, crate::auth::DEFAULT_LOGIN_TIMEOUT),
            None => crate::auth::stored(url),
        };
        match hook {
            Ok(oauth) => bridge = bridge.auth(oauth),
            Err(e) => tracing::debug!("no stored credentials will be used: {}", e.message),
        }
    }
    let limits = Limits::default()
        .timeout(std::time::Duration::from_secs(a.timeout.max(1)))
        .max_in_flight(a.max_in_flight)
        .input_wait(std::time::Duration::from_secs(a.input_wait.max(1)))
        .max_input_waits(a.max_input_waits)
        .stream_open_wait(std::time::Duration::from_millis(a.stream_open_wait))
        .retries(a.retries)
        .retry_max_wait(std::time::Duration::from_secs(a.retry_max_wait));
    Ok(bridge.filter(filter).limits(limits))
}

/// Runs the bridge on stdin/stdout until the host closes stdin.
pub async fn run(a: BridgeArgs) -> Result<u8, Failure> {
    bridge_log::init(a.log_level);
    if let Some(addr) = a.expose.expose.clone() {
        return crate::bridge_expose::run(a, addr).await;
    }
    if a.expose.auth.enabled() {
        return Err(Failure::usage(
            "--auth-issuer protects the --expose endpoint; towards a remote URL use mcp login",
        ));
    }
    let bridge = build(&a, &|name| std::env::var(name).ok())?;
    bridge
        .run(tokio::io::stdin(), tokio::io::stdout())
        .await
        .map_err(|e| Failure::transport(e.message().to_owned()))?;
    Ok(crate::exit::code::OK)
}
