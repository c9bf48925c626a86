//! `mcp serve`: the everything-server fixtures, optionally with a folder of
//! Markdown documents as `docs://` resources and a `search_docs` tool.

use crate::exit::{Failure, code};
use clap::Args;
use mcp_server::protocol::types::{Resource, ResourceContents};
use mcp_server::{RequestContext, ResourceDef, ResourceRequest, Server, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Arguments of `mcp serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Serve Streamable HTTP at http://ADDR/mcp (e.g. 127.0.0.1:8080).
    #[arg(long, value_name = "ADDR", conflicts_with = "stdio")]
    http: Option<SocketAddr>,
    /// Serve over stdin/stdout (the default).
    #[arg(long)]
    stdio: bool,
    /// Also serve the Markdown files under DIR as `docs://<relative path>`
    /// resources, with a `search_docs` tool.
    #[arg(long, value_name = "DIR")]
    docs: Option<PathBuf>,
    /// Share list changes and resource updates with other replicas through
    /// Redis (built with the `redis` feature). Needs a shared requestState
    /// key ring: MCP_STATE_KEYS=hex1,hex2 (or MCP_STATE_KEY=hex).
    #[arg(long, value_name = "redis://HOST:PORT/DB")]
    redis: Option<String>,
    /// On SIGTERM or Ctrl-C (HTTP): stop accepting, end listen streams with
    /// their final result, give in-flight requests this many seconds to
    /// finish, then exit 0.
    #[arg(long, value_name = "SECONDS", default_value_t = mcp_server::Limits::DEFAULT_DRAIN_TIMEOUT.as_secs_f64())]
    drain_timeout: f64,
}

/// The server `mcp serve` runs: the everything-server fixtures, with the
/// requestState key ring from `MCP_STATE_KEY`/`MCP_STATE_KEYS` (as
/// `everything-server`) and, with `--redis`, the shared change bus.
async fn build_server(a: &ServeArgs) -> Result<Server, Failure> {
    let env = |name: &str| match std::env::var(name) {
        Ok(v) => Ok(Some(v)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => {
            Err(Failure::usage(format!("{name} is not valid UTF-8")))
        }
    };
    let (key, keys) = (env("MCP_STATE_KEY")?, env("MCP_STATE_KEYS")?);
    let ring = mcp_everything::config::state_key_ring(key.as_deref(), keys.as_deref())
        .map_err(Failure::usage)?;
    let shared_keys = ring.is_some();
    let drain = std::time::Duration::try_from_secs_f64(a.drain_timeout)
        .map_err(|_| Failure::usage("--drain-timeout wants a number of seconds, at least 0"))?;
    let mut limits = mcp_server::Limits::default();
    limits.drain_timeout = drain;
    let mut builder = mcp_everything::everything_builder().limits(limits);
    if let Some(ring) = ring {
        builder = builder.state_keys(ring);
    }
    if let Some(url) = &a.redis {
        let opts = mcp_everything::config::RedisOptions {
            url: url.clone(),
            backlog: mcp_server::Limits::default().listen_backlog,
            ..Default::default()
        };
        builder = mcp_everything::config::with_redis(builder, &opts, shared_keys)
            .await
            .map_err(Failure::usage)?;
    }
    builder
        .build()
        .map_err(|e| Failure::usage(format!("cannot build the server: {e}")))
}

/// One served document.
#[derive(Debug, Clone)]
struct Doc {
    /// Path relative to the root, with `/` separators.
    rel: String,
    /// Canonical absolute path, inside the root.
    path: PathBuf,
}

/// The Markdown files under `root` (canonicalised): symlinks and anything
/// resolving outside the root are skipped (RES-05), as are hidden entries.
fn collect_docs(root: &Path) -> std::io::Result<Vec<Doc>> {
    let root = root.canonicalize()?;
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir)?.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with('.') {
                continue;
            }
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_symlink() {
                continue;
            }
            let Ok(path) = e.path().canonicalize() else {
                continue;
            };
            if !path.starts_with(&root) {
                continue;
            }
            if ft.is_dir() {
                stack.push(path);
            } else if ft.is_file()
                && Path::new(name).extension().is_some_and(|x| {
                    x.eq_ignore_ascii_case("md") || x.eq_ignore_ascii_case("markdown")
                })
            {
                let Ok(rel) = path.strip_prefix(&root) else {
                    continue;
                };
                let parts: Option<Vec<&str>> =
                    rel.components().map(|c| c.as_os_str().to_str()).collect();
                let Some(parts) = parts else { continue };
                out.push(Doc {
                    rel: parts.join("/"),
                    path,
                });
            }
        }
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(out)
}

/// Percent-encodes what a URI path may not hold verbatim.
fn uri_path(rel: &str) -> String {
    let mut s = String::new();
    for b in rel.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            s.push(char::from(b));
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

fn title_of(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix("# "))
        .map(|t| t.trim().to_owned())
}

#[derive(Debug, Deserialize, JsonSchema)]
struct SearchArgs {
    /// Words to look for (case-insensitive; every word must occur).
    query: String,
    /// At most this many documents (default 10).
    #[serde(default)]
    limit: Option<usize>,
}

/// Adds the documents under `dir` to `server`.
fn add_docs(server: &Server, dir: &Path) -> Result<usize, Failure> {
    let docs = collect_docs(dir)
        .map_err(|e| Failure::usage(format!("cannot read --docs {}: {e}", dir.display())))?;
    let n = docs.len();
    for d in &docs {
        let uri = format!("docs://{}", uri_path(&d.rel));
        let text = std::fs::read_to_string(&d.path).unwrap_or_default();
        let mut r = Resource::new(uri.clone(), d.rel.clone());
        r.title = title_of(&text);
        r.mime_type = Some("text/markdown".into());
        let path = d.path.clone();
        let def = ResourceDef::new(r, move |req: ResourceRequest, _cx: RequestContext| {
            let path = path.clone();
            async move {
                let text = tokio::fs::read_to_string(&path).await?;
                Ok::<_, std::io::Error>(ResourceContents::text(
                    req.uri,
                    Some("text/markdown".into()),
                    text,
                ))
            }
        });
        server
            .add_resource(def)
            .map_err(|e| Failure::usage(format!("cannot serve {}: {e}", d.rel)))?;
    }
    let docs = Arc::new(docs);
    let search = tool("search_docs")
        .description("Searches the served Markdown documents; returns matching docs:// URIs with the first matching line")
        .handler(move |a: SearchArgs, _cx: RequestContext| {
            let docs = docs.clone();
            async move {
                let words: Vec<String> = a.query.split_whitespace().map(str::to_lowercase).collect();
                let limit = a.limit.unwrap_or(10).max(1);
                let mut hits = Vec::new();
                for d in docs.iter() {
                    let Ok(text) = tokio::fs::read_to_string(&d.path).await else { continue };
                    let lower = text.to_lowercase();
                    if words.is_empty() || !words.iter().all(|w| lower.contains(w.as_str()) || d.rel.to_lowercase().contains(w.as_str())) {
                        continue;
                    }
                    let line = text
                        .lines()
                        .find(|l| words.iter().any(|w| l.to_lowercase().contains(w.as_str())))
                        .unwrap_or("")
                        .trim();
                    hits.push(format!("docs://{}  {}", uri_path(&d.rel), line));
                    if hits.len() >= limit {
                        break;
                    }
                }
                if hits.is_empty() {
                    "no matching documents".to_owned()
                } else {
                    hits.join("\n")
                }
            }
        });
    server
        .add_tool(search)
        .map_err(|e| Failure::usage(format!("cannot add search_docs: {e}")))?;
    Ok(n)
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

/// Runs `mcp serve`.
pub async fn run(a: ServeArgs) -> Result<u8, Failure> {
    let server = build_server(&a).await?;
    if let Some(dir) = &a.docs {
        let n = add_docs(&server, dir)?;
        eprintln!(
            "mcp serve: {n} Markdown documents from {} as docs:// resources",
            dir.display()
        );
    }
    let _ = a.stdio;
    let r = match a.http {
        Some(addr) => {
            eprintln!("mcp serve: listening on http://{addr}/mcp");
            mcp_server::transport::http::serve(server, addr, shutdown_signal()).await
        }
        None => {
            tokio::select! {
                r = server.serve_stdio() => r,
                _ = shutdown_signal() => Ok(()),
            }
        }
    };
    r.map_err(|e| Failure::transport(format!("serve: {e}")))?;
    Ok(code::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_paths_are_encoded() {
        assert_eq!(uri_path("a b/c.md"), "a%20b/c.md");
        assert_eq!(title_of("x\n# Hello \n"), Some("Hello".into()));
    }
}
