//! `mcp login` / `mcp logout` end to end, against the real `mcp` binary:
//! a real authorization server (`ferromcp-test-issuer`) and the
//! everything-server fixtures behind `ferromcp-auth`'s `AuthLayer` with a
//! `JwtVerifier` reading the issuer's JWKS, all on 127.0.0.1. The browser
//! is the CLI's documented hook, `MCP_BROWSER`, set to `curl -fsSL -o
//! /dev/null`: curl follows the authorization URL, the issuer approves at
//! once and redirects to the CLI's loopback listener.
//!
//! Covers the 401 and discovery, DCR, scopes (insufficient_scope needs a
//! new login), the stored token on every request, PKCE, `iss` and `state`
//! through the loopback redirect, refresh with rotation, the 0600 token
//! file in a 0700 directory and RFC 7009 revocation on logout.
// AUTH-04/05, AUTH-13, AUTH-17/19, AUTH-20, AUTH-23/24/26, AUTH-27, AUTH-28

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Run, mcp};
use ferromcp_auth::resource::{AuthLayer, HyperFetch, JwtVerifier, ResourceUri};
use ferromcp_server::transport::http::{HttpConfig, McpService, serve_layered};
use ferromcp_test_issuer::{AuthServer, Revocation};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The headless browser: follows the authorization URL and its redirect.
const BROWSER: &str = "curl -fsSL -o /dev/null";

/// The issuer, the protected MCP server and a private config directory.
struct Setup {
    rt: tokio::runtime::Runtime,
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
                .require_tool_scopes("test_simple_text", ["admin"])
                .scopes_supported(["mcp", "admin"])
                .build()
                .unwrap();
            let server = ferromcp_everything::everything_builder()
                .layer(layer.scope_layer())
                .build()
                .unwrap();
            let svc = McpService::new(server, HttpConfig::default());
            tokio::spawn(async move {
                let _ = serve_layered(svc, layer, listener, std::future::pending::<()>()).await;
            });
            (authz, resource.to_string())
        });
        let config = std::env::temp_dir().join(format!(
            "mcp-login-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&config);
        std::fs::create_dir_all(&config).unwrap();
        Self {
            rt,
            authz,
            url,
            config,
        }
    }

    /// `mcp args…` with the private config directory and the browser hook.
    fn run(&self, args: &[&str]) -> Run {
        mcp()
            .args(args)
            .env("XDG_CONFIG_HOME", &self.config)
            .env("HOME", &self.config)
            .env("MCP_BROWSER", BROWSER)
            .stdin(Stdio::null())
            .output()
            .unwrap()
            .into()
    }

    fn login(&self) -> Run {
        self.run(&["login", &self.url, "--timeout", "30"])
    }

    fn tokens_dir(&self) -> PathBuf {
        self.config.join("mcp").join("tokens")
    }

    /// The stored credential files (not the refresh lock files beside
    /// them).
    fn token_files(&self) -> Vec<PathBuf> {
        match std::fs::read_dir(self.tokens_dir()) {
            Ok(d) => d
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_none_or(|x| x != "lock"))
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// The one stored credential file, parsed.
    fn stored(&self) -> (PathBuf, Value) {
        let files = self.token_files();
        assert_eq!(files.len(), 1, "{files:?}");
        let v = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
        (files[0].clone(), v)
    }
}

fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn assert_no_secret(run: &Run, secrets: &[&str]) {
    for s in secrets {
        assert!(
            !run.stdout.contains(s) && !run.stderr.contains(s),
            "a secret leaked into the output: {run:?}"
        );
    }
}

#[test]
fn login_stores_a_private_token_that_later_commands_use_and_logout_revokes() {
    let s = Setup::start();
    // Before logging in: exit 6 and the hint.
    let r = s.run(&["tools", &s.url]);
    assert_eq!(r.code, 6, "{r:?}");
    assert!(
        r.stderr
            .contains(&format!("not logged in: run `mcp login {}`", s.url)),
        "{r:?}"
    );
    assert_eq!(r.stderr.matches("run `mcp login").count(), 1, "{r:?}");

    let r = s.login();
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.stdout.trim(),
        format!("logged in to {} (issuer {})", s.url, s.authz.url)
    );
    assert!(r.stderr.contains("To log in, open this URL in a browser:"));
    assert!(
        r.stderr
            .contains("(opened with curl; waiting for the redirect)")
    );
    assert!(r.stderr.contains("credentials stored in "));
    // The browser hook was used: one authorization request, PKCE, state,
    // the resource; one registration.
    {
        let log = s.authz.log.lock().unwrap();
        assert_eq!(log.authorize.len(), 1);
        assert_eq!(log.register.len(), 1);
        assert_eq!(log.register[0]["application_type"], "native");
        let a = &log.authorize[0];
        assert_eq!(a["code_challenge_method"], "S256");
        assert_eq!(a["resource"], s.url);
        assert!(a["redirect_uri"].starts_with("http://127.0.0.1:"));
    }
    // AUTH-28: 0600 file in a 0700 directory.
    let (file, stored) = s.stored();
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(&s.tokens_dir()), 0o700);
    let access = stored["token"]["access_token"].as_str().unwrap().to_owned();
    let refresh = stored["token"]["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_no_secret(&r, &[&access, &refresh]);

    // Later commands use the stored token.
    let r = s.run(&["tools", &s.url]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("echo"), "{r:?}");
    let r = s.run(&["call", &s.url, "echo", "text=hi"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout.trim(), "hi");
    assert_no_secret(&r, &[&access, &refresh]);
    assert_eq!(s.authz.grants("authorization_code"), 1, "no new login");

    // Logout revokes (refresh token first), then deletes.
    let r = s.run(&["logout", &s.url]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.stdout.trim(),
        format!(
            "logged out of {} (revoked: refresh_token, access_token; credentials deleted)",
            s.url
        )
    );
    assert!(s.token_files().is_empty());
    let revoked: Vec<String> = s
        .authz
        .log
        .lock()
        .unwrap()
        .revoke
        .iter()
        .map(|f| f["token_type_hint"].clone())
        .collect();
    assert_eq!(revoked, ["refresh_token", "access_token"]);
    // The refresh token in the (current) file was the one revoked.
    let current_refresh = s.authz.log.lock().unwrap().revoke[0]["token"].clone();
    assert!(!s.authz.refresh_token_is_live(&current_refresh));

    let r = s.run(&["call", &s.url, "echo", "text=hi"]);
    assert_eq!(r.code, 6, "{r:?}");
    assert!(r.stderr.contains("run `mcp login"), "{r:?}");
    // Logging out again: nothing there, still success.
    let r = s.run(&["logout", &s.url]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("not logged in"), "{r:?}");
}

#[test]
fn an_expired_access_token_is_refreshed_transparently() {
    let s = Setup::start();
    // Tokens living one second: expired by the time they are used.
    s.authz.lifetime.store(1, Ordering::SeqCst);
    let r = s.login();
    assert_eq!(r.code, 0, "{r:?}");
    let (_, before) = s.stored();
    std::thread::sleep(Duration::from_millis(1100));
    let r = s.run(&["call", &s.url, "echo", "text=again"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout.trim(), "again");
    assert!(s.authz.grants("refresh_token") >= 1);
    assert_eq!(s.authz.grants("authorization_code"), 1, "no new login");
    assert_eq!(s.authz.log.lock().unwrap().authorize.len(), 1);
    // The rotated refresh token was stored; the old one is dead.
    let (_, after) = s.stored();
    let old = before["token"]["refresh_token"].as_str().unwrap();
    let new = after["token"]["refresh_token"].as_str().unwrap();
    assert_ne!(old, new);
    assert!(!s.authz.refresh_token_is_live(old));
    assert!(s.authz.refresh_token_is_live(new));
    assert_no_secret(&r, &[old, new]);
}

#[test]
fn a_token_that_cannot_be_refreshed_needs_a_new_login() {
    let s = Setup::start();
    s.authz.lifetime.store(1, Ordering::SeqCst);
    assert_eq!(s.login().code, 0);
    // Revoke the grant behind the CLI's back (as an admin would).
    let (_, stored) = s.stored();
    let client_id = stored["client"]["client_id"].as_str().unwrap().to_owned();
    let refresh = stored["token"]["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();
    s.rt.block_on(async {
        let http = ferromcp_auth::client::HttpClient::new(
            ferromcp_auth::client::NetPolicy::loopback_allowed(),
        );
        let form = [
            ("token".to_owned(), refresh.clone()),
            ("client_id".to_owned(), client_id),
        ];
        let r = http
            .post_form(&format!("{}/revoke", s.authz.url), &form, &[])
            .await
            .unwrap();
        assert_eq!(r.status.as_u16(), 200);
    });
    std::thread::sleep(Duration::from_millis(1100));
    let r = s.run(&["tools", &s.url]);
    assert_eq!(r.code, 6, "{r:?}");
    assert!(
        r.stderr.contains(&format!(
            "the stored credentials were refused (expired or revoked) and could not be \
             refreshed: log in again: run `mcp login {}`",
            s.url
        )),
        "{r:?}"
    );
    // Logging in again works, reusing the registration.
    s.authz.lifetime.store(300, Ordering::SeqCst);
    assert_eq!(s.login().code, 0);
    assert_eq!(s.run(&["tools", &s.url]).code, 0);
    assert_eq!(s.authz.log.lock().unwrap().register.len(), 1);
}

// AUTH-19
/// Step-up for a CLI: a 403 insufficient_scope cannot be stepped up by an
/// ordinary command (no browser flow there); it says to log in again, and
/// `mcp login` then re-authorizes with the server's scopes.
#[test]
fn insufficient_scope_asks_for_a_new_login_which_fixes_it() {
    let s = Setup::start();
    // The user consents to `mcp` only.
    *s.authz.consent.lock().unwrap() = Some(vec!["mcp".into()]);
    assert_eq!(s.login().code, 0);
    assert_eq!(s.run(&["call", &s.url, "echo", "text=hi"]).code, 0);
    let r = s.run(&["call", &s.url, "test_simple_text"]);
    assert_eq!(r.code, 6, "{r:?}");
    assert!(
        r.stderr.contains(&format!(
            "the server asks for more scope than the stored credentials carry \
             (insufficient_scope): run `mcp login {}` again to re-authorize",
            s.url
        )),
        "{r:?}"
    );
    // This time the user consents to everything asked for.
    *s.authz.consent.lock().unwrap() = None;
    let r = s.login();
    assert_eq!(r.code, 0, "{r:?}");
    let r = s.run(&["call", &s.url, "test_simple_text"]);
    assert_eq!(r.code, 0, "{r:?}");
    let log = s.authz.log.lock().unwrap();
    assert_eq!(log.authorize.len(), 2, "login re-authorized");
    let mut scopes: Vec<&str> = log.authorize[1]["scope"].split(' ').collect();
    scopes.sort_unstable();
    assert_eq!(scopes, ["admin", "mcp"]);
    assert_eq!(log.register.len(), 1, "the registration is reused");
}

#[test]
fn failed_or_impossible_revocation_warns_and_still_deletes() {
    let s = Setup::start();
    assert_eq!(s.login().code, 0);
    *s.authz.revocation.lock().unwrap() = Revocation::Failing;
    let r = s.run(&["logout", &s.url]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stderr
            .contains("mcp: warning: refresh_token not revoked: revocation endpoint"),
        "{r:?}"
    );
    for hint in ["refresh_token", "access_token"] {
        let line = format!(
            "mcp: warning: {hint} not revoked: revocation endpoint {}/revoke answered \
             503 Service Unavailable: temporarily_unavailable\n",
            s.authz.url
        );
        assert!(r.stderr.contains(&line), "{r:?}");
    }
    assert_eq!(
        r.stdout.trim(),
        format!("logged out of {} (credentials deleted; not revoked)", s.url)
    );
    assert!(s.token_files().is_empty());

    assert_eq!(s.login().code, 0);
    *s.authz.revocation.lock().unwrap() = Revocation::Absent;
    let r = s.run(&["logout", &s.url]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stderr.contains("publishes no revocation_endpoint"),
        "{r:?}"
    );
    assert!(s.token_files().is_empty());
    assert_eq!(s.run(&["tools", &s.url]).code, 6);
}

#[test]
fn logout_all_removes_every_credential() {
    let s = Setup::start();
    assert_eq!(s.login().code, 0);
    assert_eq!(s.token_files().len(), 1);
    let r = s.run(&["logout", "--all"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.stdout.trim(),
        format!("removed all credentials ({})", s.tokens_dir().display())
    );
    assert!(!s.tokens_dir().exists());
    assert_eq!(s.run(&["tools", &s.url]).code, 6);
    let r = s.run(&["logout", "--all"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout.trim(), "no stored credentials");
}
