//! `mcp registry publish`: sends a validated `server.json` to a registry's
//! `POST /v0/publish` with a registry token from the environment.
//!
//! Only the documented HTTP API is used; the tests run it against a local
//! mock of that endpoint (the real registry cannot be exercised from the
//! test suite). The token is sent as `Authorization: Bearer …` and never
//! printed.

use crate::exit::{Failure, code};
use crate::registry;
use bytes::Bytes;
use clap::Args;
use ferromcp_auth::client::{HttpClient, NetPolicy};
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

/// The official registry.
pub const DEFAULT_REGISTRY: &str = "https://registry.modelcontextprotocol.io";
/// The environment variable holding the registry token.
pub const TOKEN_VAR: &str = "MCP_REGISTRY_TOKEN";
/// The default `--timeout`, in seconds.
const DEFAULT_TIMEOUT_SECS: u64 = 30;

/// Arguments of `mcp registry publish`.
#[derive(Debug, Args)]
pub struct PublishArgs {
    /// The file to publish (validated first).
    #[arg(value_name = "FILE", default_value = "server.json")]
    pub file: PathBuf,
    /// The registry's base URL (loopback `http://` is accepted for tests).
    #[arg(long, value_name = "URL", default_value = DEFAULT_REGISTRY)]
    pub registry: String,
    /// The crate's Cargo.toml for the checks (default: the nearest one from
    /// the file's directory up).
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// Seconds for the whole exchange with the registry.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_TIMEOUT_SECS)]
    pub timeout: u64,
}

/// What the registry said, for the user: `detail`, then each error.
fn explain(body: &[u8]) -> String {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return String::from_utf8_lossy(body).chars().take(500).collect();
    };
    let mut parts: Vec<String> = Vec::new();
    for k in ["title", "detail", "error"] {
        if let Some(s) = v.get(k).and_then(Value::as_str) {
            parts.push(s.to_owned());
        }
    }
    for e in v
        .get("errors")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let msg = e.get("message").and_then(Value::as_str).unwrap_or_default();
        match e.get("location").and_then(Value::as_str) {
            Some(loc) => parts.push(format!("{loc}: {msg}")),
            None => parts.push(msg.to_owned()),
        }
    }
    parts.join("; ")
}

/// `mcp registry publish`.
pub async fn run(a: PublishArgs) -> Result<u8, Failure> {
    // Never send a file that fails the local checks.
    registry::validate_file(&a.file, a.manifest_path.as_deref(), false)?;
    let token = std::env::var(TOKEN_VAR)
        .ok()
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| {
            Failure::new(
                code::AUTH,
                format!(
                    "no registry token: set {TOKEN_VAR} (a registry token, e.g. from `mcp-publisher login github`)"
                ),
            )
        })?;
    let body = std::fs::read(&a.file)
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", a.file.display())))?;
    let base = a.registry.trim_end_matches('/');
    let url = format!("{base}/v0/publish");
    let policy = if crate::auth::is_loopback_url(base) {
        NetPolicy::loopback_allowed()
    } else {
        NetPolicy::strict()
    };
    let client = HttpClient::new(policy).timeout(Duration::from_secs(a.timeout.max(1)));
    let request = http::Request::post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .header("authorization", format!("Bearer {}", token.trim()))
        .body(Bytes::from(body))
        .map_err(|e| Failure::usage(format!("bad registry URL {url:?}: {e}")))?;
    let resp = client
        .send(request)
        .await
        .map_err(|e| Failure::transport(format!("publish: {}", e.message())))?;
    let status = resp.status.as_u16();
    if resp.status.is_success() {
        let v: Value = serde_json::from_slice(&resp.body).unwrap_or(Value::Null);
        let server = v.get("server").unwrap_or(&v);
        let name = server.get("name").and_then(Value::as_str).unwrap_or("?");
        let version = server.get("version").and_then(Value::as_str).unwrap_or("?");
        out!("published {name} {version} to {base}");
        return Ok(code::OK);
    }
    let why = explain(&resp.body);
    let code = if status == 401 || status == 403 {
        code::AUTH
    } else {
        code::PROTOCOL
    };
    Err(Failure::new(
        code,
        format!("the registry refused the publication (HTTP {status}): {why}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        let loopback = crate::auth::is_loopback_url;
        for u in [
            "http://127.0.0.1:8080",
            "http://localhost/x",
            "http://[::1]:9/",
            "http://127.1.2.3",
        ] {
            assert!(loopback(u), "{u}");
        }
        for u in [
            DEFAULT_REGISTRY,
            "http://10.0.0.1",
            "http://localhost.evil.com",
            // Regression (issue 25): this file's own parser read the
            // userinfo of these URLs as their host, so a registry at
            // evil.example counted as loopback.
            "http://localhost:80@evil.example/",
            "http://[::1]@evil.example/",
        ] {
            assert!(!loopback(u), "{u}");
        }
    }

    // The official registry is https: the build must speak it (the
    // ferromcp-auth `rustls` feature), so a refused connection is a
    // network error, not "https needs the feature".
    #[tokio::test]
    async fn https_is_supported() {
        let client = HttpClient::new(NetPolicy::loopback_allowed());
        let req = http::Request::post("https://127.0.0.1:1/v0/publish")
            .body(Bytes::new())
            .unwrap_or_default();
        let e = client.send(req).await.err().map(|e| e.message().to_owned());
        assert!(e.is_some_and(|m| !m.contains("rustls")));
    }

    #[test]
    fn registry_errors_are_explained() {
        let body = br#"{"title":"Bad Request","detail":"validation failed","errors":[{"message":"bad name","location":"body.name"}]}"#;
        assert_eq!(
            explain(body),
            "Bad Request; validation failed; body.name: bad name"
        );
        assert_eq!(explain(b"plain"), "plain");
    }
}
