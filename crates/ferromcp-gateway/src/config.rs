//! The gateway's configuration file: the `mcpServers` format hosts already
//! use, plus per-server policy and naming, validated at start with errors
//! that name the key.
//!
//! ```json
//! {
//!   "mcpServers": {
//!     "files": {"command": "mcp-files", "args": ["--root", "."], "env": {"TOKEN": "${FILES_TOKEN}"},
//!               "denyTools": ["delete_*"]},
//!     "github": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${GH_TOKEN}"},
//!                "allowTools": ["search_*"], "prefix": "gh", "timeoutMs": 20000}
//!   },
//!   "gateway": {"separator": "__", "toolMode": "search", "maxSearchResults": 20}
//! }
//! ```

use crate::breaker::{self, BreakerConfig};
use crate::cache::CacheConfig;
pub use crate::config_error::ConfigError;
use crate::config_error::whole_number;
use crate::credentials::{self, UpstreamAuth};
use crate::inbound::{self, InboundAuth};
use crate::naming::{self, Naming};
use crate::scopes::{self, ScopeRule};
use crate::tool_mode::{self, ToolMode};
use ferromcp_bridge::{Glob, ToolFilter, expand_env};
use ferromcp_protocol::authority::Authority;
use serde_json::{Map, Value};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default for a server's `timeoutMs`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The largest `timeoutMs` accepted (one hour).
const MAX_TIMEOUT_MS: u64 = 3_600_000;
/// The longest prefix (a prefixed tool name is at most 128 characters).
const MAX_PREFIX: usize = 120;
/// The default `gateway.separator`.
pub const DEFAULT_SEPARATOR: &str = "__";

/// How an upstream server is reached. Its `Debug` output shows the names
/// of `env` variables and `headers`, never their values (credentials).
#[derive(Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking newline-delimited JSON-RPC on stdio.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables (after `${VAR}` expansion).
        env: Vec<(String, String)>,
        /// Its working directory.
        cwd: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint (either era).
    Http {
        /// The endpoint URL.
        url: String,
        /// The headers sent on every request to it, and nothing else the
        /// gateway's own clients sent (after `${VAR}` expansion).
        headers: Vec<(String, String)>,
    },
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |v: &[(String, String)]| v.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
        match self {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &names(env))
                .field("cwd", cwd)
                .finish(),
            Transport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &names(headers))
                .finish(),
        }
    }
}

/// One entry of `mcpServers`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamConfig {
    name: String,
    prefix: String,
    transport: Transport,
    filter: ToolFilter,
    timeout: Duration,
    auth: Option<UpstreamAuth>,
    scopes: Vec<ScopeRule>,
    breaker: BreakerConfig,
    notification_rate: crate::flood::NotificationRate,
}

impl UpstreamConfig {
    /// How many notifications it may send (`notificationRate`:
    /// `perSecond`, `burst`); more are dropped.
    pub fn notification_rate(&self) -> crate::flood::NotificationRate {
        self.notification_rate
    }

    /// Its per-scope tool policy (`scopes`: globs over its own tool names
    /// and the scopes a caller needs for them).
    pub fn scopes(&self) -> &[ScopeRule] {
        &self.scopes
    }
    /// The credential it is given (`auth`; HTTP servers only).
    pub fn auth(&self) -> Option<&UpstreamAuth> {
        self.auth.as_ref()
    }
    /// The key under `mcpServers`.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// What its tool and prompt names are prefixed with (default: the name).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
    /// How it is reached.
    pub fn transport(&self) -> &Transport {
        &self.transport
    }
    /// Its tool policy (`allowTools`/`denyTools`, globs on its own names).
    pub fn filter(&self) -> &ToolFilter {
        &self.filter
    }
    /// Its circuit breaker (`breaker`: `failures`, `openMs`).
    pub fn breaker(&self) -> BreakerConfig {
        self.breaker
    }
    /// How long one request to it may take (`timeoutMs`).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
    /// A short description for messages: the URL or the command.
    pub fn target(&self) -> String {
        match &self.transport {
            Transport::Http { url, .. } => url.clone(),
            Transport::Stdio { command, .. } => command.clone(),
        }
    }
}

/// A validated configuration: upstreams in name order.
#[derive(Debug, Clone)]
pub struct Config {
    upstreams: Vec<UpstreamConfig>,
    separator: String,
    naming: Naming,
    auth: Option<InboundAuth>,
    tool_mode: ToolMode,
    max_search_results: usize,
    cache: CacheConfig,
    metrics_listen: Option<std::net::SocketAddr>,
    relay: crate::relay_config::RelayConfig,
}

impl Config {
    /// Reads and validates the file at `path`, expanding `${VAR}` from the
    /// process environment.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::new("", format!("cannot read {}: {e}", path.display())))?;
        Self::parse(&text, |v| std::env::var(v).ok())
    }

    /// Validates `text`, expanding `${VAR}` in `env` and `headers` values
    /// with `lookup`.
    pub fn parse(text: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let root: Value = serde_json::from_str(text)
            .map_err(|e| ConfigError::new("", format!("not valid JSON: {e}")))?;
        let root = object(&root, "")?;
        known_keys(root, "", &["mcpServers", "gateway"])?;
        let mut separator = DEFAULT_SEPARATOR.to_owned();
        let mut naming = Naming::Prefix;
        let mut auth = None;
        let mut tool_mode = ToolMode::All;
        let mut max_search_results = tool_mode::DEFAULT_MAX_RESULTS;
        let mut cache = CacheConfig::default();
        let mut metrics_listen = None;
        let mut relay = crate::relay_config::RelayConfig::default();
        let mut notification_rate = crate::flood::NotificationRate::default();
        if let Some(g) = root.get("gateway") {
            let g = object(g, "gateway")?;
            known_keys(
                g,
                "gateway",
                &[
                    "separator",
                    "naming",
                    "auth",
                    "toolMode",
                    "maxSearchResults",
                    "cache",
                    "metrics",
                    "relay",
                    "notificationRate",
                ],
            )?;
            if let Some(r) = g.get("notificationRate") {
                // The default of every server without its own.
                notification_rate =
                    crate::flood::parse(r, "gateway.notificationRate", notification_rate)?;
            }
            if let Some(r) = g.get("relay") {
                relay = crate::relay_config::parse(r)?;
            }
            if let Some(c) = g.get("cache") {
                cache = crate::cache::parse(c)?;
            }
            if let Some(m) = g.get("metrics") {
                let m = object(m, "gateway.metrics")?;
                known_keys(m, "gateway.metrics", &["listen"])?;
                let l = m
                    .get("listen")
                    .ok_or_else(|| ConfigError::new("gateway.metrics.listen", "missing"))?;
                let l = string(l, "gateway.metrics.listen")?;
                metrics_listen = Some(l.parse().map_err(|_| {
                    ConfigError::new(
                        "gateway.metrics.listen",
                        format!("{l:?} is not an IP:PORT address (e.g. \"127.0.0.1:9464\")"),
                    )
                })?);
            }
            if let Some(n) = g.get("naming") {
                naming = match string(n, "gateway.naming")? {
                    "prefix" => Naming::Prefix,
                    "onCollision" => Naming::OnCollision,
                    other => {
                        return Err(ConfigError::new(
                            "gateway.naming",
                            format!(
                                "{other:?} is not a naming scheme (expected \"prefix\" or \"onCollision\")"
                            ),
                        ));
                    }
                };
            }
            if let Some(m) = g.get("toolMode") {
                tool_mode = match string(m, "gateway.toolMode")? {
                    "all" => ToolMode::All,
                    "search" => ToolMode::Search,
                    other => {
                        return Err(ConfigError::new(
                            "gateway.toolMode",
                            format!(
                                "{other:?} is not a tool mode (expected \"all\" or \"search\")"
                            ),
                        ));
                    }
                };
            }
            if let Some(n) = g.get("maxSearchResults") {
                max_search_results = whole_number(
                    n,
                    "gateway.maxSearchResults",
                    1,
                    tool_mode::MAX_RESULTS_LIMIT as u64,
                )? as usize;
            }
            if let Some(a) = g.get("auth") {
                auth = Some(inbound::parse(a, valid_url, &lookup)?);
            }
            if let Some(s) = g.get("separator") {
                let s = string(s, "gateway.separator")?;
                if s.is_empty() || s.len() > 8 || !s.chars().all(naming::is_name_char) {
                    return Err(ConfigError::new(
                        "gateway.separator",
                        "must be 1 to 8 characters of A-Z a-z 0-9 _ . -",
                    ));
                }
                separator = s.to_owned();
            }
        }
        let servers = root
            .get("mcpServers")
            .ok_or_else(|| ConfigError::new("mcpServers", "missing"))?;
        let servers = object(servers, "mcpServers")?;
        let mut upstreams = Vec::new();
        for (name, v) in servers {
            let path = format!("mcpServers.{name}");
            if let Some(u) = upstream(name, v, &path, &lookup, notification_rate)? {
                upstreams.push(u);
            }
        }
        // Deterministic order: by name (serde_json's map is ordered by
        // key already; sorted again so that never matters).
        upstreams.sort_by(|a, b| a.name.cmp(&b.name));
        for (i, a) in upstreams.iter().enumerate() {
            if let Some(b) = upstreams[..i].iter().find(|b| b.prefix == a.prefix) {
                return Err(ConfigError::new(
                    format!("mcpServers.{}.prefix", a.name),
                    format!(
                        "{:?} is also the prefix of {}; every server needs its own",
                        a.prefix, b.name
                    ),
                ));
            }
        }
        if tool_mode == ToolMode::Search {
            // The meta-tools' names must not fall under an upstream's
            // prefix: its scope rules and tools would claim them.
            for u in &upstreams {
                let head = format!("{}{separator}", u.prefix);
                if let Some(meta) = tool_mode::META_TOOLS.iter().find(|m| m.starts_with(&head)) {
                    return Err(ConfigError::new(
                        format!("mcpServers.{}.prefix", u.name),
                        format!(
                            "{:?} + {separator:?} would claim the meta-tool {meta:?} of gateway.toolMode \"search\"; set another \"prefix\"",
                            u.prefix
                        ),
                    ));
                }
            }
        }
        Ok(Self {
            upstreams,
            separator,
            naming,
            auth,
            tool_mode,
            max_search_results,
            cache,
            metrics_listen,
            relay,
        })
    }

    /// The limits of relaying upstreams' input requests to the calling
    /// client (`gateway.relay`).
    pub fn relay(&self) -> crate::relay_config::RelayConfig {
        self.relay
    }

    /// How upstreams' caching hints are honoured (`gateway.cache`).
    pub fn cache(&self) -> CacheConfig {
        self.cache
    }

    /// Where the Prometheus `/metrics` endpoint listens
    /// (`gateway.metrics.listen`); none unless configured.
    pub fn metrics_listen(&self) -> Option<std::net::SocketAddr> {
        self.metrics_listen
    }

    /// How the aggregated tools are offered (`gateway.toolMode`, default
    /// [`ToolMode::All`]).
    pub fn tool_mode(&self) -> ToolMode {
        self.tool_mode
    }

    /// The most tools one `search_tools` answer holds
    /// (`gateway.maxSearchResults`).
    pub fn max_search_results(&self) -> usize {
        self.max_search_results
    }

    /// The upstreams, in name order (the order collisions are decided in).
    pub fn upstreams(&self) -> &[UpstreamConfig] {
        &self.upstreams
    }

    /// Inbound bearer protection (`gateway.auth`), when configured.
    pub fn auth(&self) -> Option<&InboundAuth> {
        self.auth.as_ref()
    }

    /// What joins a prefix and a tool or prompt name (`gateway.separator`).
    pub fn separator(&self) -> &str {
        &self.separator
    }

    /// How tools and prompts are named (`gateway.naming`, default
    /// [`Naming::Prefix`]).
    pub fn naming(&self) -> Naming {
        self.naming
    }
}

fn object<'a>(v: &'a Value, path: &str) -> Result<&'a Map<String, Value>, ConfigError> {
    v.as_object()
        .ok_or_else(|| ConfigError::new(path, "must be a JSON object"))
}

fn string<'a>(v: &'a Value, path: &str) -> Result<&'a str, ConfigError> {
    v.as_str()
        .ok_or_else(|| ConfigError::new(path, "must be a string"))
}

fn strings(v: &Value, path: &str) -> Result<Vec<String>, ConfigError> {
    let a = v
        .as_array()
        .ok_or_else(|| ConfigError::new(path, "must be an array of strings"))?;
    a.iter()
        .enumerate()
        .map(|(i, s)| string(s, &format!("{path}[{i}]")).map(str::to_owned))
        .collect()
}

fn known_keys(o: &Map<String, Value>, path: &str, known: &[&str]) -> Result<(), ConfigError> {
    for k in o.keys() {
        if !known.contains(&k.as_str()) {
            let at = if path.is_empty() {
                k.clone()
            } else {
                format!("{path}.{k}")
            };
            return Err(ConfigError::new(
                at,
                format!("unknown key (expected one of: {})", known.join(", ")),
            ));
        }
    }
    Ok(())
}

/// A string map whose values get `${VAR}` expansion (env, headers).
fn expanded_map(
    v: &Value,
    path: &str,
    lookup: &impl Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, ConfigError> {
    let o = object(v, path)?;
    let mut out = Vec::new();
    for (k, v) in o {
        let at = format!("{path}.{k}");
        let raw = string(v, &at)?;
        let value = expand_env(raw, lookup).map_err(|e| ConfigError::new(at, e))?;
        out.push((k.clone(), value));
    }
    Ok(out)
}

const KEYS: [&str; 17] = [
    "auth",
    "breaker",
    "notificationRate",
    "scopes",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "type",
    "allowTools",
    "denyTools",
    "prefix",
    "timeoutMs",
    "disabled",
    "description",
];

fn upstream(
    name: &str,
    v: &Value,
    path: &str,
    lookup: &impl Fn(&str) -> Option<String>,
    default_rate: crate::flood::NotificationRate,
) -> Result<Option<UpstreamConfig>, ConfigError> {
    let o = object(v, path)?;
    known_keys(o, path, &KEYS)?;
    let at = |k: &str| format!("{path}.{k}");
    if let Some(d) = o.get("disabled")
        && d.as_bool()
            .ok_or_else(|| ConfigError::new(at("disabled"), "must be true or false"))?
    {
        return Ok(None);
    }
    if let Some(d) = o.get("description") {
        string(d, &at("description"))?;
    }
    let transport = match (o.get("command"), o.get("url")) {
        (Some(_), Some(_)) => {
            return Err(ConfigError::new(
                path,
                "has both \"command\" (stdio) and \"url\" (HTTP); give one",
            ));
        }
        (None, None) => {
            return Err(ConfigError::new(
                path,
                "needs \"command\" (a stdio server) or \"url\" (an HTTP server)",
            ));
        }
        (Some(c), None) => {
            for k in ["headers", "auth"] {
                if o.contains_key(k) {
                    return Err(ConfigError::new(at(k), "applies to a \"url\" server only"));
                }
            }
            let command = string(c, &at("command"))?;
            if command.trim().is_empty() {
                return Err(ConfigError::new(at("command"), "is empty"));
            }
            let args = match o.get("args") {
                Some(a) => strings(a, &at("args"))?,
                None => Vec::new(),
            };
            let env = match o.get("env") {
                Some(e) => expanded_map(e, &at("env"), lookup)?,
                None => Vec::new(),
            };
            let cwd = match o.get("cwd") {
                Some(c) => Some(PathBuf::from(string(c, &at("cwd"))?)),
                None => None,
            };
            check_type(o, &at("type"), &["stdio"])?;
            Transport::Stdio {
                command: command.to_owned(),
                args,
                env,
                cwd,
            }
        }
        (None, Some(u)) => {
            for k in ["args", "env", "cwd"] {
                if o.contains_key(k) {
                    return Err(ConfigError::new(
                        at(k),
                        "applies to a \"command\" server only",
                    ));
                }
            }
            let url = string(u, &at("url"))?;
            if !valid_url(url) {
                return Err(ConfigError::new(
                    at("url"),
                    "not a valid URL (http:// or https:// with a host)",
                ));
            }
            let headers = match o.get("headers") {
                Some(h) => expanded_map(h, &at("headers"), lookup)?,
                None => Vec::new(),
            };
            for (k, v) in &headers {
                naming::check_header(k, v).map_err(|e| ConfigError::new(at("headers"), e))?;
                if o.contains_key("auth") && k.eq_ignore_ascii_case("authorization") {
                    return Err(ConfigError::new(
                        at("headers"),
                        "an Authorization header and \"auth\" contradict each other; give one",
                    ));
                }
            }
            check_type(
                o,
                &at("type"),
                &["http", "streamable-http", "streamableHttp", "sse"],
            )?;
            Transport::Http {
                url: url.to_owned(),
                headers,
            }
        }
    };
    let prefix = match o.get("prefix") {
        Some(p) => string(p, &at("prefix"))?.to_owned(),
        None => name.to_owned(),
    };
    if prefix.is_empty() || prefix.len() > MAX_PREFIX || !prefix.chars().all(naming::is_name_char) {
        let (key, what) = if o.contains_key("prefix") {
            (at("prefix"), "the prefix")
        } else {
            (path.to_owned(), "the server name (the default prefix)")
        };
        return Err(ConfigError::new(
            key,
            format!(
                "{what} {prefix:?} must be 1 to {MAX_PREFIX} characters of A-Z a-z 0-9 _ . - (set \"prefix\")"
            ),
        ));
    }
    let mut filter = ToolFilter::new();
    if let Some(a) = o.get("allowTools") {
        for (i, g) in strings(a, &at("allowTools"))?.iter().enumerate() {
            let g =
                Glob::new(g).map_err(|e| ConfigError::new(format!("{path}.allowTools[{i}]"), e))?;
            filter = filter.allow(g);
        }
    }
    if let Some(d) = o.get("denyTools") {
        for (i, g) in strings(d, &at("denyTools"))?.iter().enumerate() {
            let g =
                Glob::new(g).map_err(|e| ConfigError::new(format!("{path}.denyTools[{i}]"), e))?;
            filter = filter.deny(g);
        }
    }
    let timeout = match o.get("timeoutMs") {
        Some(t) => match t.as_u64() {
            Some(ms) if (1..=MAX_TIMEOUT_MS).contains(&ms) => Duration::from_millis(ms),
            _ => {
                return Err(ConfigError::new(
                    at("timeoutMs"),
                    format!("must be a whole number of milliseconds from 1 to {MAX_TIMEOUT_MS}"),
                ));
            }
        },
        None => DEFAULT_TIMEOUT,
    };
    let auth = match o.get("auth") {
        Some(a) => Some(credentials::parse(a, &at("auth"), lookup)?),
        None => None,
    };
    let scopes = match o.get("scopes") {
        Some(s) => scopes::parse(s, &at("scopes"))?,
        None => Vec::new(),
    };
    let breaker = match o.get("breaker") {
        Some(b) => breaker::parse(b, &at("breaker"))?,
        None => BreakerConfig::default(),
    };
    let notification_rate = match o.get("notificationRate") {
        Some(r) => crate::flood::parse(r, &at("notificationRate"), default_rate)?,
        None => default_rate,
    };
    Ok(Some(UpstreamConfig {
        name: name.to_owned(),
        prefix,
        transport,
        filter,
        timeout,
        auth,
        scopes,
        breaker,
        notification_rate,
    }))
}

fn check_type(o: &Map<String, Value>, path: &str, ok: &[&str]) -> Result<(), ConfigError> {
    if let Some(t) = o.get("type") {
        let t = string(t, path)?;
        if !ok.contains(&t) {
            return Err(ConfigError::new(
                path,
                format!(
                    "{t:?} does not fit this server (expected {})",
                    ok.join(" or ")
                ),
            ));
        }
    }
    Ok(())
}

/// An `http`/`https` URL with a host, a port that fits and no userinfo
/// (the client parses it again when it connects, and would drop userinfo).
fn valid_url(url: &str) -> bool {
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    url.parse::<http::Uri>().is_ok_and(|u| {
        matches!(u.scheme_str(), Some("http" | "https"))
            && u.authority()
                .is_some_and(|a| Authority::parse(a.as_str()).is_ok())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(v: &str) -> Option<String> {
        (v == "TOKEN").then(|| "s3cret".to_owned())
    }

    fn err(text: &str) -> String {
        match Config::parse(text, env) {
            Ok(c) => panic!("accepted: {c:?}"),
            Err(e) => e.to_string(),
        }
    }

    fn ok(text: &str) -> Config {
        Config::parse(text, env).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_full_config_parses_in_name_order() {
        let c = ok(r#"{"mcpServers": {
            "zeta": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"},
                     "timeoutMs": 1500, "allowTools": ["search_*"], "type": "http"},
            "alpha": {"command": "srv", "args": ["--stdio"], "env": {"K": "${TOKEN}"}, "cwd": "/tmp",
                      "denyTools": ["rm"], "prefix": "a"},
            "off": {"command": "x", "disabled": true}
        }, "gateway": {"separator": "-"}}"#);
        let names: Vec<&str> = c.upstreams().iter().map(|u| u.name()).collect();
        assert_eq!(names, ["alpha", "zeta"]);
        assert_eq!(c.separator(), "-");
        let a = &c.upstreams()[0];
        assert_eq!(a.prefix(), "a");
        assert_eq!(a.timeout(), DEFAULT_TIMEOUT);
        assert!(!a.filter().permits("rm") && a.filter().permits("ls"));
        assert_eq!(
            a.transport(),
            &Transport::Stdio {
                command: "srv".into(),
                args: vec!["--stdio".into()],
                env: vec![("K".into(), "s3cret".into())],
                cwd: Some("/tmp".into()),
            }
        );
        let z = &c.upstreams()[1];
        assert_eq!(z.prefix(), "zeta");
        assert_eq!(z.timeout(), Duration::from_millis(1500));
        assert!(z.filter().permits("search_x") && !z.filter().permits("other"));
        assert_eq!(
            z.transport(),
            &Transport::Http {
                url: "https://example.com/mcp".into(),
                headers: vec![("Authorization".into(), "Bearer s3cret".into())],
            }
        );
        assert_eq!(ok(r#"{"mcpServers": {}}"#).separator(), "__");
    }

    #[test]
    fn tool_mode_and_search_limit_are_validated_naming_the_key() {
        let c = ok(r#"{"mcpServers": {}}"#);
        assert_eq!(c.tool_mode(), ToolMode::All);
        assert_eq!(c.max_search_results(), tool_mode::DEFAULT_MAX_RESULTS);
        let c =
            ok(r#"{"mcpServers": {}, "gateway": {"toolMode": "search", "maxSearchResults": 3}}"#);
        assert_eq!(
            (c.tool_mode(), c.max_search_results()),
            (ToolMode::Search, 3)
        );
        let e = |g: &str| err(&format!(r#"{{"mcpServers": {{}}, "gateway": {g}}}"#));
        assert!(e(r#"{"toolMode": "some"}"#).starts_with("gateway.toolMode: \"some\" is not"));
        assert!(e(r#"{"toolMode": 1}"#).starts_with("gateway.toolMode: must be a string"));
        for n in ["0", "101", "-1", "2.5", "\"5\""] {
            let m = e(&format!(r#"{{"maxSearchResults": {n}}}"#));
            assert!(
                m.starts_with("gateway.maxSearchResults: must be"),
                "{n}: {m}"
            );
        }
        // An upstream prefix that would claim a meta-tool name.
        let m = err(r#"{"mcpServers": {"x": {"command": "c", "prefix": "call"}},
                        "gateway": {"toolMode": "search", "separator": "_"}}"#);
        assert!(
            m.starts_with("mcpServers.x.prefix: \"call\" + \"_\" would claim"),
            "{m}"
        );
        ok(
            r#"{"mcpServers": {"x": {"command": "c", "prefix": "call"}}, "gateway": {"separator": "_"}}"#,
        );
    }

    #[test]
    fn debug_output_never_shows_header_or_env_values() {
        let c = ok(r#"{"mcpServers": {
            "a": {"command": "srv", "env": {"K": "${TOKEN}"}},
            "b": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}}}"#);
        let shown = format!("{c:?}");
        assert!(
            shown.contains("Authorization") && shown.contains("\"K\""),
            "{shown}"
        );
        assert!(!shown.contains("s3cret"), "{shown}");
    }

    #[test]
    fn metrics_listen_is_off_by_default_and_validated_naming_the_key() {
        assert_eq!(ok(r#"{"mcpServers": {}}"#).metrics_listen(), None);
        let c = ok(r#"{"mcpServers": {}, "gateway": {"metrics": {"listen": "127.0.0.1:9464"}}}"#);
        assert_eq!(c.metrics_listen(), Some("127.0.0.1:9464".parse().unwrap()));
        let e = |g: &str| {
            err(&format!(
                r#"{{"mcpServers": {{}}, "gateway": {{"metrics": {g}}}}}"#
            ))
        };
        assert!(
            e(r#"{"listen": "nowhere"}"#).starts_with("gateway.metrics.listen: \"nowhere\" is not")
        );
        assert!(e(r#"{}"#).starts_with("gateway.metrics.listen: missing"));
        assert!(e(r#"{"path": "/m"}"#).starts_with("gateway.metrics.path: unknown key"));
        assert!(e(r#""127.0.0.1:1""#).starts_with("gateway.metrics: must be"));
    }

    #[test]
    fn a_gateway_notification_rate_is_every_servers_default_key_by_key() {
        let c = ok(r#"{"mcpServers": {
            "plain": {"command": "x"},
            "own": {"command": "x", "notificationRate": {"burst": 7}},
            "both": {"command": "x", "notificationRate": {"perSecond": 3, "burst": 4}}
        }, "gateway": {"notificationRate": {"perSecond": 20}}}"#);
        let rate = |n: &str| {
            let u = c.upstreams().iter().find(|u| u.name() == n).unwrap();
            let r = u.notification_rate();
            (r.per_second(), r.burst())
        };
        let burst = crate::flood::DEFAULT_BURST;
        assert_eq!(rate("plain"), (20, burst));
        assert_eq!(rate("own"), (20, 7));
        assert_eq!(rate("both"), (3, 4));
        // Without the gateway key: the built-in defaults, as before.
        let c = ok(r#"{"mcpServers": {"plain": {"command": "x"}}}"#);
        let r = c.upstreams()[0].notification_rate();
        assert_eq!(r, crate::flood::NotificationRate::default());
        let e = |g: &str| {
            err(&format!(
                r#"{{"mcpServers": {{}}, "gateway": {{"notificationRate": {g}}}}}"#
            ))
        };
        assert!(
            e(r#"{"perSecond": 0}"#).starts_with("gateway.notificationRate.perSecond: must be")
        );
        assert!(e(r#"{"rate": 1}"#).starts_with("gateway.notificationRate.rate: unknown key"));
        assert!(e("[]").starts_with("gateway.notificationRate: must be an object"));
    }

    #[test]
    fn file_level_errors() {
        assert!(err("{").starts_with("not valid JSON"));
        assert_eq!(err("[]"), "must be a JSON object");
        assert_eq!(err("{}"), "mcpServers: missing");
        assert_eq!(
            err(r#"{"mcpServers": []}"#),
            "mcpServers: must be a JSON object"
        );
        assert!(err(r#"{"mcpServers": {}, "servers": {}}"#).starts_with("servers: unknown key"));
        assert!(
            err(r#"{"mcpServers": {}, "gateway": {"sep": "x"}}"#)
                .starts_with("gateway.sep: unknown key")
        );
        assert!(
            err(r#"{"mcpServers": {}, "gateway": {"separator": "/"}}"#)
                .starts_with("gateway.separator: must be")
        );
        assert!(
            err(r#"{"mcpServers": {}, "gateway": {"separator": 3}}"#)
                .starts_with("gateway.separator: must be a string")
        );
        let e = Config::load(Path::new("/nonexistent/gw.json"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("cannot read /nonexistent/gw.json"), "{e}");
    }

    #[test]
    fn server_level_errors_name_the_key() {
        let cases = [
            (r#"{"a": 1}"#, "mcpServers.a: must be a JSON object"),
            (r#"{"a": {}}"#, "mcpServers.a: needs \"command\""),
            (
                r#"{"a": {"command": "x", "url": "http://h/mcp"}}"#,
                "mcpServers.a: has both",
            ),
            (
                r#"{"a": {"command": "x", "bogus": 1}}"#,
                "mcpServers.a.bogus: unknown key",
            ),
            (
                r#"{"a": {"command": 3}}"#,
                "mcpServers.a.command: must be a string",
            ),
            (
                r#"{"a": {"command": " "}}"#,
                "mcpServers.a.command: is empty",
            ),
            (
                r#"{"a": {"command": "x", "args": "y"}}"#,
                "mcpServers.a.args: must be an array",
            ),
            (
                r#"{"a": {"command": "x", "args": [1]}}"#,
                "mcpServers.a.args[0]: must be a string",
            ),
            (
                r#"{"a": {"command": "x", "env": {"K": 1}}}"#,
                "mcpServers.a.env.K: must be a string",
            ),
            (
                r#"{"a": {"command": "x", "env": {"K": "${NOPE}"}}}"#,
                "mcpServers.a.env.K: environment variable NOPE is not set",
            ),
            (
                r#"{"a": {"command": "x", "headers": {}}}"#,
                "mcpServers.a.headers: applies to a \"url\" server only",
            ),
            (
                r#"{"a": {"command": "x", "type": "http"}}"#,
                "mcpServers.a.type: \"http\" does not fit",
            ),
            (
                r#"{"a": {"command": "x", "disabled": "no"}}"#,
                "mcpServers.a.disabled: must be true or false",
            ),
            (
                r#"{"github": {"url": "not a url"}}"#,
                "mcpServers.github.url: not a valid URL",
            ),
            (
                r#"{"github": {"url": "ftp://h/x"}}"#,
                "mcpServers.github.url: not a valid URL",
            ),
            (
                r#"{"github": {"url": "http:///x"}}"#,
                "mcpServers.github.url: not a valid URL",
            ),
            (
                r#"{"github": {"url": "http://h:99999/x"}}"#,
                "mcpServers.github.url: not a valid URL",
            ),
            // Regression (issue 25): this file's own port check read `+80`
            // as a port and let userinfo through (the client drops it).
            (
                r#"{"github": {"url": "http://h:+80/x"}}"#,
                "mcpServers.github.url: not a valid URL",
            ),
            (
                r#"{"github": {"url": "https://user:pw@h/x"}}"#,
                "mcpServers.github.url: not a valid URL",
            ),
            (
                r#"{"g": {"url": "http://h/x", "env": {}}}"#,
                "mcpServers.g.env: applies to a \"command\" server only",
            ),
            (
                r#"{"g": {"url": "http://h/x", "headers": {"X": "${MISSING}"}}}"#,
                "mcpServers.g.headers.X: environment variable MISSING is not set",
            ),
            (
                r#"{"g": {"url": "http://h/x", "headers": {"Mcp-Session-Id": "s"}}}"#,
                "mcpServers.g.headers: header Mcp-Session-Id is set by the gateway",
            ),
            (
                r#"{"g": {"url": "http://h/x", "headers": {"X": "a\nb"}}}"#,
                "mcpServers.g.headers: the value of header X is not a valid header value",
            ),
            (
                r#"{"g": {"url": "http://h/x", "headers": {"a b": "v"}}}"#,
                "mcpServers.g.headers: \"a b\" is not a valid header name",
            ),
            (
                r#"{"a": {"command": "x", "auth": {"login": true}}}"#,
                "mcpServers.a.auth: applies to a \"url\" server only",
            ),
            (
                r#"{"g": {"url": "http://h/x", "auth": {"bearerEnv": "GONE"}}}"#,
                "mcpServers.g.auth.bearerEnv: environment variable GONE is not set",
            ),
            (
                r#"{"g": {"url": "http://h/x", "auth": {"login": true}, "headers": {"authorization": "x"}}}"#,
                "mcpServers.g.headers: an Authorization header and \"auth\" contradict",
            ),
            (
                r#"{"g": {"url": "http://h/x", "type": "stdio"}}"#,
                "mcpServers.g.type: \"stdio\" does not fit",
            ),
            (
                r#"{"a": {"command": "x", "prefix": ""}}"#,
                "mcpServers.a.prefix: the prefix \"\" must be",
            ),
            (
                r#"{"a b": {"command": "x"}}"#,
                "mcpServers.a b: the server name (the default prefix)",
            ),
            (
                r#"{"a": {"command": "x", "allowTools": [""]}}"#,
                "mcpServers.a.allowTools[0]: an empty tool pattern",
            ),
            (
                r#"{"a": {"command": "x", "denyTools": "x"}}"#,
                "mcpServers.a.denyTools: must be an array",
            ),
            (
                r#"{"a": {"command": "x", "timeoutMs": 0}}"#,
                "mcpServers.a.timeoutMs: must be a whole number",
            ),
            (
                r#"{"a": {"command": "x", "timeoutMs": 1.5}}"#,
                "mcpServers.a.timeoutMs: must be a whole number",
            ),
            (
                r#"{"a": {"command": "x", "timeoutMs": 99999999}}"#,
                "mcpServers.a.timeoutMs: must be a whole number",
            ),
            (
                r#"{"a": {"command": "x"}, "b": {"command": "y", "prefix": "a"}}"#,
                "mcpServers.b.prefix: \"a\" is also the prefix of a",
            ),
        ];
        for (servers, want) in cases {
            let e = err(&format!(r#"{{"mcpServers": {servers}}}"#));
            assert!(e.starts_with(want), "{servers}: {e}");
            assert!(!e.contains("s3cret"), "{e}");
        }
    }
}
