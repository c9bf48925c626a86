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
//!
//! Headless hosts: `mcp login --device` (RFC 8628; the test approves,
//! denies or expires the user code at the issuer; `slow_down` honoured,
//! counted by the issuer's early polls), a `--login` bridge with no
//! browser running the device flow then serving the call, `mcp login
//! --paste` fed the redirected URL on stdin (a wrong `state` refused), and
//! a bridge whose access and refresh tokens were revoked at the issuer
//! (the resource server checks revocation) answering with an error naming
//! `mcp login`, after which a new login works.
// AUTH-05, AUTH-20, AUTH-24, AUTH-26, AUTH-27, AUTH-28

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Run, mcp};
use ferromcp_auth::resource::{
    AuthLayer, BoxFuture, DpopPolicy, HyperFetch, JwtVerifier, ResourceUri, TokenVerifier,
    VerifiedToken, VerifyError,
};
use ferromcp_server::transport::http::{HttpConfig, McpService, serve_layered};
use ferromcp_test_issuer::{AuthServer, DeviceDecision};
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

/// The JWT verifier plus the issuer's revocation list (as introspection
/// would report a revoked token inactive).
struct Revocable {
    inner: JwtVerifier,
    authz: Arc<AuthServer>,
}

impl TokenVerifier for Revocable {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, VerifyError>> {
        Box::pin(async move {
            let jti = self
                .authz
                .key
                .verify_any_audience(token)
                .ok()
                .and_then(|c| c["jti"].as_str().map(str::to_owned));
            if jti.is_some_and(|j| self.authz.revoked_access.lock().unwrap().contains(&j)) {
                return Err(VerifyError::Invalid("revoked".into()));
            }
            self.inner.verify(token).await
        })
    }
}

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
        Self::start_with(None)
    }

    /// The resource server also accepts DPoP-bound tokens under `dpop`.
    fn start_with(dpop: Option<DpopPolicy>) -> Self {
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
            let verifier = Revocable {
                inner: verifier,
                authz: authz.clone(),
            };
            let mut layer = AuthLayer::builder(resource.clone(), verifier)
                .authorization_server(&authz.url)
                .require_scopes(["mcp"])
                .scopes_supported(["mcp"]);
            if let Some(policy) = dpop {
                layer = layer.dpop(policy);
            }
            let layer = layer.build().unwrap();
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
        // The ways a headless host has (the bridge cannot read stdin).
        assert!(message.contains("--device"), "{era}: {a}");
        assert!(message.contains("--paste"), "{era}: {a}");
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

/// Approves (or otherwise decides) the first device code the issuer hands
/// out, from a thread, once the CLI asked for one; the user code.
fn decide_when_asked(
    authz: &Arc<AuthServer>,
    decision: DeviceDecision,
) -> std::thread::JoinHandle<String> {
    let authz = authz.clone();
    std::thread::spawn(move || {
        let until = std::time::Instant::now() + WAIT;
        loop {
            if let Some(code) = authz.pending_user_codes().into_iter().next() {
                assert!(authz.decide(&code, decision));
                return code;
            }
            assert!(
                std::time::Instant::now() < until,
                "no device code asked for"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    })
}

impl Setup {
    /// `mcp login URL extra…` with the private config directory, stdin
    /// piped; the child.
    fn login_child(&self, extra: &[&str]) -> Child {
        mcp()
            .args(["login", &self.url, "--timeout", "60"])
            .args(extra)
            .env("XDG_CONFIG_HOME", &self.config)
            .env("HOME", &self.config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mcp login")
    }

    /// Whether a token is stored (a registration alone does not count).
    fn has_token(&self) -> bool {
        let dir = self.config.join("mcp").join("tokens");
        std::fs::read_dir(&dir).is_ok_and(|d| {
            d.filter_map(Result::ok).any(|e| {
                std::fs::read(e.path())
                    .ok()
                    .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                    .is_some_and(|v| v["token"].is_object())
            })
        })
    }
}

fn run_of(child: Child) -> Run {
    child.wait_with_output().unwrap().into()
}

#[test]
fn device_login_prints_the_code_on_stderr_and_stores_a_usable_credential() {
    let s = Setup::start();
    let approver = decide_when_asked(&s.authz, DeviceDecision::Approved);
    let r = run_of(s.login_child(&["--device"]));
    let user_code = approver.join().unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains(&user_code), "{r:?}");
    assert!(
        r.stderr.contains(&format!("{}/device", s.authz.url)),
        "{r:?}"
    );
    assert!(r.stderr.contains("user_code="), "the complete URI: {r:?}");
    assert!(
        !r.stdout.contains(&user_code),
        "prompts go to stderr: {r:?}"
    );
    // RFC 8628 with the resource indicator, no PKCE, no browser step.
    let log = s.authz.log.lock().unwrap();
    assert_eq!(log.device.len(), 1);
    assert_eq!(log.device[0].get("resource"), Some(&s.url));
    assert!(!log.device[0].contains_key("code_challenge"));
    assert!(log.authorize.is_empty());
    drop(log);
    let polls: Vec<_> = s
        .authz
        .log
        .lock()
        .unwrap()
        .token
        .iter()
        .filter(|(f, _)| f["grant_type"] == "urn:ietf:params:oauth:grant-type:device_code")
        .map(|(f, _)| f.get("resource").cloned())
        .collect();
    assert!(polls.iter().all(|r| r.as_deref() == Some(s.url.as_str())));
    let access = s.stored()["token"]["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    // The bridge uses it as it uses a browser login's.
    let mut host = s.bridge(&[]);
    let a = host.call(modern_echo(1, "device"));
    assert_eq!(text_of(&a), "device", "{a}");
    let (code, err) = host.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains(&access), "{err}");
}

#[test]
fn device_login_honours_slow_down() {
    let s = Setup::start();
    // One `slow_down` (interval 1 s → 6 s); a client that ignored it
    // would poll early, which the issuer counts (and answers slow_down).
    s.authz.device_slow_downs.store(1, Ordering::SeqCst);
    let approver = decide_when_asked(&s.authz, DeviceDecision::Approved);
    let r = run_of(s.login_child(&["--device"]));
    approver.join().unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(s.authz.device_early_polls.load(Ordering::SeqCst), 0);
    assert_eq!(
        s.authz
            .grants("urn:ietf:params:oauth:grant-type:device_code"),
        2,
        "one slow_down, then the token"
    );
    assert!(s.has_token());
}

#[test]
fn device_denial_and_expiry_are_clear_errors_and_store_no_token() {
    let s = Setup::start();
    for (decision, says) in [
        (DeviceDecision::Denied, "denied"),
        (DeviceDecision::Expired, "expired"),
    ] {
        let decider = decide_when_asked(&s.authz, decision);
        let r = run_of(s.login_child(&["--device"]));
        decider.join().unwrap();
        assert_eq!(r.code, 6, "{decision:?}: {r:?}");
        assert!(r.stderr.contains(says), "{decision:?}: {r:?}");
        assert!(!s.has_token(), "{decision:?}");
    }
    assert_eq!(s.authz.issued.load(Ordering::SeqCst), 0);
}

#[test]
fn a_login_bridge_without_a_browser_runs_the_device_flow_then_serves_the_call() {
    let s = Setup::start();
    for (i, flag) in ["--login", "--login=device"].into_iter().enumerate() {
        let _ = std::fs::remove_dir_all(s.config.join("mcp"));
        // No MCP_BROWSER, BROWSER or display: plain --login picks the
        // device flow.
        let approver = decide_when_asked(&s.authz, DeviceDecision::Approved);
        let mut host = s.bridge(&[flag]);
        let a = host.call(modern_echo(1, "after device login"));
        let user_code = approver.join().unwrap();
        assert_eq!(text_of(&a), "after device login", "{flag}: {a}");
        let access = s.stored()["token"]["access_token"]
            .as_str()
            .unwrap()
            .to_owned();
        let (code, err) = host.finish();
        assert_eq!(code, Some(0), "{flag}: {err}");
        assert!(err.contains(&user_code), "{flag}: {err}");
        assert!(!err.contains(&access), "{flag}: {err}");
        assert_eq!(s.authz.log.lock().unwrap().device.len(), i + 1);
    }
    assert!(s.authz.log.lock().unwrap().authorize.is_empty());
}

/// Reads `mcp login --paste`'s stderr until the authorization URL.
fn authorization_url(child: &mut Child) -> (String, std::thread::JoinHandle<String>) {
    let err = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let rest = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { break };
            if line.trim_start().starts_with("http") && line.contains("/authorize?") {
                let _ = tx.send(line.trim().to_owned());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let url = rx.recv_timeout(WAIT).expect("no authorization URL printed");
    (url, rest)
}

/// What the user's browser is redirected to: the `Location` of the
/// issuer's answer to `url` (curl, not following it).
fn redirected_to(url: &str) -> String {
    let out = std::process::Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{redirect_url}", url])
        .output()
        .unwrap();
    let loc = String::from_utf8(out.stdout).unwrap();
    assert!(loc.contains("/callback?"), "{loc}");
    loc
}

#[test]
fn paste_back_login_exchanges_the_pasted_redirect_url() {
    let s = Setup::start();
    let mut child = s.login_child(&["--paste"]);
    let (url, rest) = authorization_url(&mut child);
    let location = redirected_to(&url);
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{location}").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let err = rest.join().unwrap();
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("connection error"), "{err}");
    assert!(s.has_token());
    assert_eq!(s.authz.grants("authorization_code"), 1);
    let mut host = s.bridge(&[]);
    let a = host.call(modern_echo(1, "pasted"));
    assert_eq!(text_of(&a), "pasted", "{a}");
}

#[test]
fn paste_back_refuses_a_wrong_state_or_a_bare_code() {
    let s = Setup::start();
    for tamper in ["state", "bare"] {
        let mut child = s.login_child(&["--paste"]);
        let (url, rest) = authorization_url(&mut child);
        let location = redirected_to(&url);
        let pasted = if tamper == "state" {
            let (head, _) = location.split_once("state=").unwrap();
            let tail = location.split_once("state=").unwrap().1;
            let after = tail.find('&').map_or("", |i| &tail[i..]);
            format!("{head}state=forged{after}")
        } else {
            location
                .split("code=")
                .nth(1)
                .unwrap()
                .split('&')
                .next()
                .unwrap()
                .to_owned()
        };
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "{pasted}").unwrap();
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        let err = rest.join().unwrap();
        assert_eq!(out.status.code(), Some(6), "{tamper}: {err}");
        let says = if tamper == "state" {
            "state does not match"
        } else {
            "whole address"
        };
        assert!(err.contains(says), "{tamper}: {err}");
        assert!(!s.has_token(), "{tamper}");
    }
    assert_eq!(s.authz.grants("authorization_code"), 0);
}

#[test]
fn revoked_tokens_get_an_error_naming_mcp_login_and_a_new_login_works() {
    let s = Setup::start();
    s.login();
    let stored = s.stored();
    let access = stored["token"]["access_token"].as_str().unwrap().to_owned();
    let refresh = stored["token"]["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();
    s.authz.revoke_everything(&[&access]);
    let mut host = s.bridge(&[]);
    let a = host.call(modern_echo(1, "x"));
    assert_eq!(a["error"]["code"], -32603, "{a}");
    let message = a["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("revoked"), "{a}");
    assert!(message.contains(&format!("`mcp login {}`", s.url)), "{a}");
    // No loop: one refresh attempt, no authorization; a second call gets
    // the same answer.
    let a = host.call(modern_echo(2, "y"));
    assert!(
        a["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("mcp login"),
        "{a}"
    );
    let (code, err) = host.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains(&access) && !err.contains(&refresh), "{err}");
    assert!(s.authz.grants("refresh_token") <= 2);
    assert_eq!(s.authz.log.lock().unwrap().authorize.len(), 1);
    // The entry keeps the registration, not the dead token; a new login
    // reuses the registration and the bridge works again.
    assert!(!s.has_token());
    s.login();
    assert_eq!(s.authz.log.lock().unwrap().register.len(), 1);
    let mut host = s.bridge(&[]);
    let a = host.call(modern_echo(3, "again"));
    assert_eq!(text_of(&a), "again", "{a}");
}

// AUTH-14, AUTH-20
#[test]
fn client_credentials_authenticate_a_bridge_with_no_user_and_store_nothing() {
    let s = Setup::start();
    s.authz
        .secrets
        .lock()
        .unwrap()
        .insert("svc".into(), "svc-secret-42".into());
    let flags = [
        "--client-id",
        "svc",
        "--client-secret-env",
        "SVC_SECRET",
        "--client-scope",
        "mcp",
    ];
    let mut host = s.bridge_env(&flags, &[("SVC_SECRET", "svc-secret-42")]);
    let a = host.call(modern_echo(1, "service"));
    assert_eq!(text_of(&a), "service", "{a}");
    let (code, err) = host.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("svc-secret-42"), "{err}");
    assert!(s.authz.grants("client_credentials") >= 1);
    assert_eq!(s.authz.grants("authorization_code"), 0);
    {
        let log = s.authz.log.lock().unwrap();
        assert!(log.authorize.is_empty(), "no user authorization");
        let cc: Vec<_> = log
            .token
            .iter()
            .filter(|(f, _)| f.get("grant_type").map(String::as_str) == Some("client_credentials"))
            .collect();
        assert!(
            cc.iter()
                .all(|(f, _)| f["scope"] == "mcp" && f["resource"] == s.url),
            "{cc:?}"
        );
    }
    // Nothing in the `mcp login` store: the tokens belong to this run.
    let tokens = s.config.join("mcp").join("tokens");
    let stored = std::fs::read_dir(&tokens).map(|d| d.count()).unwrap_or(0);
    assert_eq!(stored, 0, "tokens stored in {}", tokens.display());

    // A wrong secret: the host's call fails with an error, the process
    // stays up and the secret never reaches stderr.
    let mut host = s.bridge_env(&flags, &[("SVC_SECRET", "wrong-secret-99")]);
    let a = host.call(modern_echo(2, "refused"));
    assert!(a.get("error").is_some(), "{a}");
    let (code, err) = host.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("wrong-secret-99"), "{err}");

    // The secret's variable must be set, and a second credential is refused.
    let r: Run = mcp()
        .args(["bridge", &s.url])
        .args(flags)
        .env_remove("SVC_SECRET")
        .stdin(Stdio::null())
        .output()
        .unwrap()
        .into();
    assert_ne!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("SVC_SECRET is not set"), "{r:?}");
    let r: Run = mcp()
        .args(["bridge", &s.url, "--header", "Authorization: Bearer x"])
        .args(flags)
        .env("SVC_SECRET", "svc-secret-42")
        .stdin(Stdio::null())
        .output()
        .unwrap()
        .into();
    assert_ne!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("give one credential"), "{r:?}");
}

/// A workload JWT from the issuer the test AS trusts (SEP-1933).
fn workload_jwt(authz: &AuthServer, sub: &str) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    authz.workload_key.sign_typ(
        "JWT",
        &json!({"iss": "https://workload-issuer.example", "sub": sub,
                "aud": authz.url, "iat": now, "exp": now + 300}),
    )
}

// AUTH-20, SEP-1933, RFC 9449
#[test]
fn a_workload_token_file_and_dpop_authenticate_a_bridge_with_no_user() {
    let s = Setup::start_with(Some(DpopPolicy::default()));
    let token_file = s.config.join("workload.jwt");
    let jwt = workload_jwt(&s.authz, "spiffe://example/ns/bridge");
    std::fs::write(&token_file, format!("{jwt}\n")).unwrap();
    let file = token_file.to_str().unwrap();
    let flags = [
        "--client-id",
        "workload-1",
        "--workload-token-file",
        file,
        "--client-scope",
        "mcp",
        "--dpop",
    ];
    let mut host = s.bridge(&flags);
    let a = host.call(modern_echo(1, "workload"));
    assert_eq!(text_of(&a), "workload", "{a}");
    let (code, err) = host.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains(&jwt), "{err}");
    {
        let log = s.authz.log.lock().unwrap();
        assert!(log.register.is_empty() && log.authorize.is_empty());
        assert!(!log.token.is_empty());
        for (f, proof) in &log.token {
            assert_eq!(
                f["grant_type"], "urn:ietf:params:oauth:grant-type:jwt-bearer",
                "{f:?}"
            );
            // The file's token, trimmed, is the assertion.
            assert_eq!(f["assertion"], jwt);
            assert_eq!(f["client_id"], "workload-1");
            assert_eq!(f["resource"], s.url);
            // Each token request carried a DPoP proof, so the token is
            // bound to the bridge's key.
            assert!(proof.is_some(), "no DPoP proof: {f:?}");
        }
    }
    // Nothing stored.
    let tokens = s.config.join("mcp").join("tokens");
    assert_eq!(
        std::fs::read_dir(&tokens).map(|d| d.count()).unwrap_or(0),
        0
    );

    // A file that holds no JWT: the call fails with an error naming the
    // file, the bridge stays up.
    std::fs::write(&token_file, "not a token").unwrap();
    let mut host = s.bridge(&flags);
    let a = host.call(modern_echo(2, "refused"));
    let msg = a["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(a.get("error").is_some(), "{a}");
    let (code, err) = host.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(
        msg.contains("workload.jwt") || err.contains("workload.jwt"),
        "{msg}\n{err}"
    );

    // A missing file is refused at start; so are two credentials at once.
    let missing = s.config.join("absent.jwt");
    for (args, want) in [
        (
            vec![
                "--client-id",
                "w",
                "--workload-token-file",
                missing.to_str().unwrap(),
            ],
            "--workload-token-file",
        ),
        (
            vec![
                "--client-id",
                "w",
                "--workload-token-file",
                file,
                "--client-secret-env",
                "X",
            ],
            "cannot be used with",
        ),
        (vec!["--client-id", "w"], "--client-secret-env"),
        (vec!["--dpop"], "--client-id"),
    ] {
        let r: Run = mcp()
            .args(["bridge", &s.url])
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
            .into();
        assert_ne!(r.code, 0, "{args:?}: {r:?}");
        assert!(r.stderr.contains(want), "{args:?}: {r:?}");
    }
}

// AUTH-11, AUTH-20
#[test]
fn a_client_key_file_authenticates_a_bridge_with_private_key_jwt() {
    let s = Setup::start();
    // A client registered with its public key; the bridge holds the
    // private key in a PEM file.
    let (pem, jwk) = common::client_key();
    s.authz.clients.lock().unwrap().insert(
        "svc-key".into(),
        ferromcp_test_issuer::RegisteredClient {
            redirect_uris: vec![],
            jwk: Some(jwk),
        },
    );
    let pem_file = s.config.join("svc.pem");
    std::fs::write(&pem_file, pem.as_bytes()).unwrap();
    let flags = [
        "--client-id",
        "svc-key",
        "--client-key-file",
        pem_file.to_str().unwrap(),
        "--client-scope",
        "mcp",
    ];
    let mut host = s.bridge(&flags);
    let a = host.call(modern_echo(1, "keyed"));
    assert_eq!(text_of(&a), "keyed", "{a}");
    let (code, err) = host.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("PRIVATE KEY"), "{err}");
    let log = s.authz.log.lock().unwrap();
    let cc: Vec<_> = log
        .token
        .iter()
        .filter(|(f, _)| f.get("grant_type").map(String::as_str) == Some("client_credentials"))
        .collect();
    assert!(!cc.is_empty());
    for (f, proof) in cc {
        assert_eq!(
            f["client_assertion_type"],
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        );
        assert!(f.get("client_secret").is_none(), "{f:?}");
        assert!(proof.is_none(), "no --dpop, no proof");
    }
}
