//! `mcp bridge URL` in front of a remote behind OAuth, at the wire: a real
//! authorization server (`ferromcp-test-issuer`), the everything-server
//! behind `ferromcp-auth`'s `AuthLayer` (JWTs checked against the issuer's
//! JWKS), the real `mcp` binary for `mcp login` and for the bridges, the
//! test as the host on their stdin/stdout, each test with its own config
//! directory (the shared token store).
//!
//! Covers: the stored login used after the remote's 401 (both host eras),
//! an expired token refreshed once, four bridges started at once sharing
//! one expired token (one refresh at the issuer, every call answered), no
//! stored credentials (a JSON-RPC error naming `mcp login URL`, no
//! browser), a configured `Authorization` header winning over the stored
//! token, and two `--login` bridges started at once running one
//! authorization (the browser is `MCP_BROWSER`, curl following the
//! redirect).
// AUTH-05, AUTH-20, AUTH-27, AUTH-28

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Run, mcp};
use ferromcp_auth::resource::{AuthLayer, HyperFetch, JwtVerifier, ResourceUri};
use ferromcp_server::transport::http::{HttpConfig, McpService, serve_layered};
use ferromcp_test_issuer::AuthServer;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

/// Long enough to never fire on a slow CI machine; only guards against a hang.
const WAIT: Duration = Duration::from_secs(60);

/// The headless browser of `mcp login`: follows the authorization URL and
/// its redirect to the CLI's loopback listener.
const BROWSER: &str = "curl -fsSL -o /dev/null";

/// The issuer, the protected MCP server and a private config directory.
struct Setup {
    _rt: tokio::runtime::Runtime,
    authz: Arc<AuthServer>,
    url: String,
    config: PathBuf,
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.config);
    }
}

static N: AtomicUsize = AtomicUsize::new(0);

impl Setup {
    fn start() -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (authz, url) = rt.block_on(async {
            let authz = AuthServer::start().await;
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let resource = ResourceUri::parse(&format!("http://{addr}/mcp")).unwrap();
            let verifier = JwtVerifier::builder(&authz.url, &resource)
                .fetcher(Arc::new(HyperFetch::new().allow_plain_http(true)))
                .clock_skew(Duration::ZERO)
                .build()
                .unwrap();
            let layer = AuthLayer::builder(resource.clone(), verifier)
                .authorization_server(&authz.url)
                .require_scopes(["mcp"])
                .scopes_supported(["mcp"])
                .build()
                .unwrap();
            let server = ferromcp_everything::everything_builder().build().unwrap();
            let svc = McpService::new(server, HttpConfig::default());
            tokio::spawn(async move {
                let _ = serve_layered(svc, layer, listener, std::future::pending::<()>()).await;
            });
            (authz, resource.to_string())
        });
        let config = std::env::temp_dir().join(format!(
            "mcp-bridge-oauth-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&config);
        std::fs::create_dir_all(&config).unwrap();
        Self {
            _rt: rt,
            authz,
            url,
            config,
        }
    }

    /// `mcp login URL` with the private config directory.
    fn login(&self) {
        let r: Run = mcp()
            .args(["login", &self.url, "--timeout", "30"])
            .env("XDG_CONFIG_HOME", &self.config)
            .env("HOME", &self.config)
            .env("MCP_BROWSER", BROWSER)
            .stdin(Stdio::null())
            .output()
            .unwrap()
            .into();
        assert_eq!(r.code, 0, "{r:?}");
    }

    /// `mcp bridge URL extra…` with the private config directory and no
    /// browser.
    fn bridge(&self, extra: &[&str]) -> Host {
        self.bridge_env(extra, &[])
    }

    /// [`Setup::bridge`] with more environment.
    fn bridge_env(&self, extra: &[&str], env: &[(&str, &str)]) -> Host {
        let mut child = mcp()
            .arg("bridge")
            .arg(&self.url)
            .args(extra)
            .envs(env.iter().copied())
            .env("XDG_CONFIG_HOME", &self.config)
            .env("HOME", &self.config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mcp bridge");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // Every line on stdout must be one JSON-RPC message.
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON on the bridge's stdout ({e}): {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let mut err = child.stderr.take().unwrap();
        let (etx, stderr) = mpsc::channel();
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            let _ = etx.send(s);
        });
        let stdin = child.stdin.take();
        Host {
            child,
            stdin,
            rx,
            stderr,
        }
    }

    /// The stored credentials of the one resource, parsed.
    fn stored(&self) -> Value {
        let dir = self.config.join("mcp").join("tokens");
        let files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap()
    }

    /// Logs in with access tokens that are already expiring, then lets
    /// the issuer hand out long-lived ones again (a refresh is needed once).
    fn login_with_an_expiring_token(&self) -> String {
        self.authz.lifetime.store(1, Ordering::SeqCst);
        self.login();
        self.authz.lifetime.store(300, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(1100));
        self.stored()["token"]["refresh_token"]
            .as_str()
            .unwrap()
            .to_owned()
    }
}

/// The host side of one bridge.
struct Host {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<Value>,
    stderr: mpsc::Receiver<String>,
}

impl Host {
    fn send(&mut self, v: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(v.to_string().as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The answer for `id` (other messages are skipped).
    fn answer_for(&self, id: &Value) -> Value {
        loop {
            let m = self
                .rx
                .recv_timeout(WAIT)
                .unwrap_or_else(|_| panic!("no answer for {id} (hang?)"));
            if m.get("id") == Some(id) && m.get("method").is_none() {
                return m;
            }
        }
    }

    fn call(&mut self, v: Value) -> Value {
        self.send(&v);
        self.answer_for(&v["id"])
    }

    /// Closes stdin and waits for the bridge to exit; (code, stderr).
    fn finish(mut self) -> (Option<i32>, String) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        let err = self.stderr.recv_timeout(WAIT).unwrap_or_default();
        (status.code(), err)
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A 2026-07-28 `tools/call` of `echo`.
fn modern_echo(id: i64, text: &str) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {
            "name": "echo", "arguments": {"text": text},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "bridge-oauth-test", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    })
}

fn text_of(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content in {answer}"))
}

#[test]
fn the_bridge_uses_the_stored_login_in_both_host_eras() {
    let s = Setup::start();
    s.login();
    let stored = s.stored();
    let access = stored["token"]["access_token"].as_str().unwrap().to_owned();
    let refresh = stored["token"]["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();

    // A 2026-07-28 host.
    let mut host = s.bridge(&[]);
    let a = host.call(modern_echo(1, "modern"));
    assert_eq!(text_of(&a), "modern", "{a}");
    let (code, err) = host.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains(&access) && !err.contains(&refresh), "{err}");

    // A handshake host: initialize, then a call in the session.
    let mut host = s.bridge(&[]);
    let init = host.call(json!({
        "jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "bridge-oauth-test", "version": "1"}
        }
    }));
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    host.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let a = host.call(json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "handshake"}}
    }));
    assert_eq!(text_of(&a), "handshake", "{a}");
    let (code, err) = host.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains(&access) && !err.contains(&refresh), "{err}");

    // The stored token was used as is: no new authorization, no refresh.
    assert_eq!(s.authz.log.lock().unwrap().authorize.len(), 1);
    assert_eq!(s.authz.grants("authorization_code"), 1);
    assert_eq!(s.authz.grants("refresh_token"), 0);
}

#[test]
fn an_expired_token_is_refreshed_once_and_the_call_succeeds() {
    let s = Setup::start();
    let old = s.login_with_an_expiring_token();
    let mut host = s.bridge(&[]);
    let a = host.call(modern_echo(1, "after refresh"));
    assert_eq!(text_of(&a), "after refresh", "{a}");
    // The new token is good for the next call: no second refresh.
    let a = host.call(modern_echo(2, "again"));
    assert_eq!(text_of(&a), "again", "{a}");
    let (code, err) = host.finish();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(s.authz.grants("refresh_token"), 1);
    assert_eq!(s.authz.grants("authorization_code"), 1, "no new login");
    // The rotated refresh token was stored; the old one is spent.
    let new = s.stored()["token"]["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(old, new);
    assert!(!s.authz.refresh_token_is_live(&old));
    assert!(s.authz.refresh_token_is_live(&new));
    assert!(!err.contains(&old) && !err.contains(&new), "{err}");
}

#[test]
fn four_bridges_started_at_once_refresh_a_shared_expired_token_once() {
    let s = Setup::start();
    let old = s.login_with_an_expiring_token();
    // A host starting its servers together: four bridges, one store.
    let mut hosts: Vec<Host> = (0..4).map(|_| s.bridge(&[])).collect();
    for (i, h) in hosts.iter_mut().enumerate() {
        h.send(&modern_echo(i as i64, &format!("bridge {i}")));
    }
    for (i, h) in hosts.iter().enumerate() {
        let a = h.answer_for(&json!(i));
        assert_eq!(text_of(&a), format!("bridge {i}"), "bridge {i}: {a}");
    }
    for h in hosts {
        let (code, err) = h.finish();
        assert_eq!(code, Some(0), "{err}");
    }
    // One refresh for all four: the others waited for the store's lock
    // and read the token it stored (the rotated refresh token works once).
    assert_eq!(s.authz.grants("refresh_token"), 1);
    assert_eq!(s.authz.grants("authorization_code"), 1, "no new login");
    let new = s.stored()["token"]["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!s.authz.refresh_token_is_live(&old));
    assert!(s.authz.refresh_token_is_live(&new));
}

#[test]
fn without_stored_credentials_the_host_gets_an_error_naming_mcp_login() {
    let s = Setup::start();
    for era in ["modern", "handshake"] {
        let mut host = s.bridge(&[]);
        let request = if era == "modern" {
            modern_echo(1, "x")
        } else {
            json!({
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "bridge-oauth-test", "version": "1"}
                }
            })
        };
        let a = host.call(request);
        assert_eq!(a["error"]["code"], -32603, "{era}: {a}");
        let message = a["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!("not logged in: run `mcp login {}`", s.url)),
            "{era}: {a}"
        );
        let (code, err) = host.finish();
        assert_eq!(code, Some(0), "{err}");
    }
    // No authorization was started (no browser from a stdio server).
    assert!(s.authz.log.lock().unwrap().authorize.is_empty());
    assert_eq!(s.authz.grants("authorization_code"), 0);
}

#[test]
fn a_configured_authorization_header_wins_over_the_stored_login() {
    let s = Setup::start();
    s.login();
    let mut host = s.bridge(&["--header", "Authorization: Bearer not-a-valid-token"]);
    let a = host.call(modern_echo(1, "x"));
    // The remote refused the configured token; the stored one was not
    // tried instead.
    assert!(a.get("error").is_some(), "{a}");
    assert!(
        !a["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("mcp login"),
        "{a}"
    );
    let (code, err) = host.finish();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(s.authz.grants("refresh_token"), 0);
    assert_eq!(s.authz.log.lock().unwrap().authorize.len(), 1);
    // With a valid configured token the call goes through.
    let token = s.authz.mint(&s.url, "mcp");
    let header = format!("Authorization: Bearer {token}");
    let mut host = s.bridge(&["--header", &header]);
    let a = host.call(modern_echo(2, "configured"));
    assert_eq!(text_of(&a), "configured", "{a}");
    let (code, err) = host.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains(&token), "{err}");
}

#[test]
fn two_bridges_with_login_started_at_once_run_one_authorization() {
    let s = Setup::start();
    let mut hosts: Vec<Host> = (0..2)
        .map(|_| s.bridge_env(&["--login"], &[("MCP_BROWSER", BROWSER)]))
        .collect();
    for (i, h) in hosts.iter_mut().enumerate() {
        h.send(&modern_echo(i as i64, &format!("bridge {i}")));
    }
    for (i, h) in hosts.iter().enumerate() {
        let a = h.answer_for(&json!(i));
        assert_eq!(text_of(&a), format!("bridge {i}"), "bridge {i}: {a}");
    }
    let mut told = 0;
    for h in hosts {
        let (code, err) = h.finish();
        assert_eq!(code, Some(0), "{err}");
        told += usize::from(err.contains("open this URL in a browser"));
    }
    // One flow: the other bridge waited for the store's lock and used the
    // token the first one stored (one registration, one authorization).
    assert_eq!(told, 1);
    let log = s.authz.log.lock().unwrap();
    assert_eq!(log.authorize.len(), 1);
    assert_eq!(log.register.len(), 1);
    drop(log);
    assert_eq!(s.authz.grants("authorization_code"), 1);
}
