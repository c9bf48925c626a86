//! OAuth for HTTP servers: `mcp login URL` runs the authorization-code
//! flow (loopback redirect, browser opener; `--paste`: the redirected URL
//! pasted back into the terminal) or the RFC 8628 device flow
//! (`--device`), always afresh (a stored token is replaced, the client
//! registration reused); `mcp logout` revokes
//! (RFC 7009, when the AS has a `revocation_endpoint`) and forgets; every
//! other subcommand uses, and refreshes, the stored credentials of its URL
//! but never starts an interactive flow itself: when they are missing,
//! expired beyond refresh, or lack a scope the server asks for (403
//! `insufficient_scope`), it fails with exit code 6 and says to run
//! `mcp login URL` (again).
//!
//! Credentials live in `$XDG_CONFIG_HOME/mcp/tokens/` (else
//! `~/.config/mcp/tokens/`), one `0600` file per issuer and resource, in a
//! `0700` directory, through `ferromcp_auth`'s `FileStore`; the lock files
//! that make refreshes and authorizations happen once across processes
//! (`mcp bridge` copies started together) are in `locks/` beside it.
// AUTH-28

use crate::exit::{Failure, code};
use ferromcp_auth::client::client_auth::CLIENT_SECRET_BASIC;
use ferromcp_auth::client::grants::CredentialSource;
use ferromcp_auth::client::{
    AuthorizationHandler, AuthorizationSession, BoxFuture, BrowserOpener, ClientAuthentication,
    ClientCredentialsGrant, ClientSecret, DeviceCodePrompt, DeviceGrant, DevicePrompt, DpopProver,
    FileStore, Grant, GrantContext, HttpClient, JwtBearerGrant, LockAttempt, LoopbackAuthorization,
    NetPolicy, OAuthClient, OAuthError, OAuthErrorKind, PrivateKeyJwt, StoreKey, StoredCredentials,
    TokenResponse, TokenStore, revoke_stored,
};
use ferromcp_protocol::authority::Authority;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long `mcp login` waits for the browser to come back.
pub const DEFAULT_LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// The `client_name` registered with authorization servers.
const CLIENT_NAME: &str = "mcp command-line tool";

/// `$XDG_CONFIG_HOME/mcp` or `~/.config/mcp`.
pub fn config_dir() -> Option<PathBuf> {
    let from = |v: &str| {
        std::env::var_os(v)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
    };
    from("XDG_CONFIG_HOME")
        .map(|d| d.join("mcp"))
        .or_else(|| from("HOME").map(|h| h.join(".config").join("mcp")))
}

/// Where credentials are stored.
pub fn token_dir() -> Result<PathBuf, Failure> {
    config_dir()
        .map(|d| d.join("tokens"))
        .ok_or_else(|| Failure::usage("no config directory: set XDG_CONFIG_HOME or HOME"))
}

/// The credentials store: `tokens/`, with the cross-process lock files
/// in `locks/` beside it (so a lock never creates `tokens/`).
fn file_store() -> Result<FileStore, Failure> {
    let dir = token_dir()?;
    let locks = dir.with_file_name("locks");
    Ok(FileStore::new(dir).lock_dir(locks))
}

/// Loopback servers (local development, tests) may use plain `http` and
/// loopback authorization servers; anything else gets the strict policy
/// (public `https` only).
fn policy_for(url: &str) -> NetPolicy {
    if is_loopback_url(url) {
        NetPolicy::loopback_allowed()
    } else {
        NetPolicy::strict()
    }
}

/// Whether `url`'s host is `localhost` or a loopback address (127.0.0.0/8,
/// `[::1]`). A URL with userinfo, or one whose authority does not parse, is
/// not: the strict policy applies to it.
pub fn is_loopback_url(url: &str) -> bool {
    Authority::from_url(url).is_ok_and(|a| a.is_loopback())
}

/// What the store has seen of this URL's token, for the message when a
/// new authorization would be needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Seen {
    /// No token was stored.
    #[default]
    Nothing,
    /// A token was loaded and is still held (so the server wants more
    /// scope than it carries: step-up).
    Token,
    /// A token was loaded, then dropped (expired and not refreshable).
    Dropped,
}

/// The file store, noting what it loads and saves (the token only by
/// presence; nothing secret is kept or printed).
struct Watched {
    inner: FileStore,
    seen: Arc<Mutex<Seen>>,
}

impl Watched {
    fn note(&self, had: bool, on_save: bool) {
        let mut s = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        *s = match (had, on_save, *s) {
            (true, _, _) => Seen::Token,
            (false, true, Seen::Token | Seen::Dropped) => Seen::Dropped,
            (false, _, prev) => prev,
        };
    }
}

impl TokenStore for Watched {
    fn load(&self, key: &StoreKey) -> Result<Option<StoredCredentials>, OAuthError> {
        let v = self.inner.load(key)?;
        self.note(v.as_ref().is_some_and(|c| c.token.is_some()), false);
        Ok(v)
    }

    fn save(&self, key: &StoreKey, value: &StoredCredentials) -> Result<(), OAuthError> {
        self.note(value.token.is_some(), true);
        self.inner.save(key, value)
    }

    fn remove(&self, key: &StoreKey) -> Result<(), OAuthError> {
        self.inner.remove(key)
    }

    fn try_lock(&self, key: &StoreKey) -> Result<LockAttempt, OAuthError> {
        self.inner.try_lock(key)
    }
}

// AUTH-17
/// The store `mcp login` uses: a stored token is not offered back, so the
/// authorization always runs anew (with the PRM's scopes), while
/// the stored client registration is reused.
struct Fresh(FileStore);

impl TokenStore for Fresh {
    fn load(&self, key: &StoreKey) -> Result<Option<StoredCredentials>, OAuthError> {
        Ok(self
            .0
            .load(key)?
            .map(|c| StoredCredentials { token: None, ..c }))
    }

    fn save(&self, key: &StoreKey, value: &StoredCredentials) -> Result<(), OAuthError> {
        self.0.save(key, value)
    }

    fn remove(&self, key: &StoreKey) -> Result<(), OAuthError> {
        self.0.remove(key)
    }

    fn try_lock(&self, key: &StoreKey) -> Result<LockAttempt, OAuthError> {
        self.0.try_lock(key)
    }
}

/// The authorization handler of subcommands other than `login`: it only
/// explains how to log in (again).
struct StoredOnly {
    url: String,
    seen: Arc<Mutex<Seen>>,
}

/// The ways to log in, for machines with and without a browser.
fn login_ways(url: &str) -> String {
    format!(
        "run `mcp login {url}` (without a browser here: `mcp login {url} --device`, \
         or `mcp login {url} --paste` to paste the redirected URL back)"
    )
}

/// Why a subcommand needs `mcp login`, for the error message.
fn login_hint(url: &str, seen: Seen) -> String {
    match seen {
        Seen::Nothing => format!("not logged in: {}", login_ways(url)),
        Seen::Dropped => format!(
            "the stored credentials were refused (expired or revoked) and could not be \
             refreshed: log in again: {}",
            login_ways(url)
        ),
        Seen::Token => format!(
            "the server asks for more scope than the stored credentials carry \
             (insufficient_scope): run `mcp login {url}` again to re-authorize"
        ),
    }
}

impl AuthorizationHandler for StoredOnly {
    fn start(&self) -> BoxFuture<'_, Result<Box<dyn AuthorizationSession>, OAuthError>> {
        let seen = *self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let message = login_hint(&self.url, seen);
        Box::pin(async move { Err(OAuthError::new(OAuthErrorKind::Authorization, message)) })
    }

    fn redirect_uris(&self) -> Vec<String> {
        LoopbackAuthorization::new(Arc::new(|_: &str| Ok(()))).redirect_uris()
    }

    fn interactive(&self) -> bool {
        false
    }
}

fn oauth(
    url: &str,
    handler: Arc<dyn AuthorizationHandler>,
    store: Arc<dyn TokenStore>,
) -> Result<OAuthClient, Failure> {
    OAuthClient::builder(url)
        .net_policy(policy_for(url))
        .authorization_handler(handler)
        .store(store)
        .client_name(CLIENT_NAME)
        .build()
        .map_err(|e| Failure::usage(format!("cannot set up OAuth for {url}: {e}")))
}

/// The OAuth hook for ordinary subcommands: stored credentials only.
pub fn stored(url: &str) -> Result<Arc<OAuthClient>, Failure> {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let store = Watched {
        inner: file_store()?,
        seen: seen.clone(),
    };
    let handler = StoredOnly {
        url: url.to_owned(),
        seen,
    };
    Ok(Arc::new(oauth(url, Arc::new(handler), Arc::new(store))?))
}

/// How `mcp login` and `mcp bridge --login` obtain a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LoginFlow {
    /// The browser flow when a browser opener is available, else the
    /// device flow (the bridge's default).
    Auto,
    /// Authorization code: the browser comes back to a loopback port.
    Browser,
    /// RFC 8628 device authorization: a code entered on any device.
    Device,
}

/// The device flow's prompt, on stderr (`who` prefixes it).
fn device_prompt(who: &'static str) -> DevicePrompt {
    Arc::new(move |p: &DeviceCodePrompt| {
        eprintln!(
            "{who}To log in, open {} on any device and enter the code\n  {}\n(valid for {}s)",
            p.verification_uri,
            p.user_code,
            p.expires_in.as_secs()
        );
        if let Some(u) = &p.verification_uri_complete {
            eprintln!("{who}or open this URL, which carries the code:\n  {u}");
        }
    })
}

/// [`oauth`] with the device grant (the loopback handler stays the
/// registration's source of redirect URIs, so one registration serves
/// every flow).
fn oauth_device(
    url: &str,
    who: &'static str,
    timeout: Duration,
    store: Arc<dyn TokenStore>,
) -> Result<OAuthClient, Failure> {
    let handler = LoopbackAuthorization::new(Arc::new(|_: &str| Ok(())));
    OAuthClient::builder(url)
        .net_policy(policy_for(url))
        .authorization_handler(Arc::new(handler))
        .grant(Arc::new(
            DeviceGrant::new(device_prompt(who)).timeout(timeout),
        ))
        .store(store)
        .client_name(CLIENT_NAME)
        .build()
        .map_err(|e| Failure::usage(format!("cannot set up OAuth for {url}: {e}")))
}

/// The OAuth hook of `mcp bridge --login`: the stored credentials first;
/// when none are usable, the authorization-code flow, its URL printed on
/// stderr (never stdout: that is the host's wire) and opened with the
/// browser opener, or the device flow, its code printed on stderr.
/// Bridges sharing the store run one flow at a time per issuer and
/// resource; the others use the token it stored.
pub fn interactive(
    url: &str,
    flow: LoginFlow,
    timeout: Duration,
) -> Result<Arc<OAuthClient>, Failure> {
    let device = match flow {
        LoginFlow::Device => true,
        LoginFlow::Browser => false,
        LoginFlow::Auto => !crate::browser::available(),
    };
    if device {
        return Ok(Arc::new(oauth_device(
            url,
            "mcp bridge: ",
            timeout,
            Arc::new(file_store()?),
        )?));
    }
    let opener: BrowserOpener = Arc::new(move |u: &str| {
        eprintln!("mcp bridge: the server needs authorization; open this URL in a browser:\n  {u}");
        if let Some(p) = crate::browser::open(u) {
            eprintln!("mcp bridge: (opened with {p}; waiting for the redirect)");
        }
        Ok(())
    });
    let handler = LoopbackAuthorization::new(opener).timeout(timeout);
    Ok(Arc::new(oauth(
        url,
        Arc::new(handler),
        Arc::new(file_store()?),
    )?))
}

/// A grant asking for the scopes configured, not those the resource
/// advertises.
struct Scoped {
    inner: Box<dyn Grant>,
    scopes: Option<Vec<String>>,
}

impl Grant for Scoped {
    fn client(&self) -> Option<Arc<dyn ClientAuthentication>> {
        self.inner.client()
    }

    fn obtain<'a>(
        &'a self,
        mut ctx: GrantContext<'a>,
    ) -> BoxFuture<'a, Result<TokenResponse, OAuthError>> {
        if let Some(s) = &self.scopes {
            ctx.scopes = Some(s);
        }
        self.inner.obtain(ctx)
    }
}

/// How a service proves who it is, with no user (`mcp bridge --client-id`,
/// a gateway upstream's `clientCredentials`).
pub enum ServiceCredential {
    /// A client secret (`client_secret_basic`, `client_credentials` grant).
    Secret(String),
    /// A PEM (PKCS#8) EC P-256 private key: `private_key_jwt` client
    /// authentication, `client_credentials` grant.
    PrivateKey(String),
    /// A file holding a JWT the platform issued to this workload (workload
    /// identity federation: the RFC 7523 JWT-bearer grant), read again each
    /// time a token is obtained, since platforms rotate it.
    WorkloadToken(PathBuf),
}

// AUTH-11, AUTH-14, AUTH-20
/// The OAuth hook of a service with no user: tokens are obtained with the
/// grant its [`ServiceCredential`] calls for, at the authorization server
/// the resource's metadata names, kept in memory (never in the `mcp login`
/// store: they belong to the configuration, not to a user), and obtained
/// again when they expire or are refused. `dpop`: tokens bound to a key
/// this process generates (RFC 9449), sent as `Authorization: DPoP` with a
/// fresh proof per request.
pub fn service(
    url: &str,
    client_id: &str,
    credential: ServiceCredential,
    scope: Option<&str>,
    dpop: bool,
) -> Result<Arc<OAuthClient>, Failure> {
    let inner: Box<dyn Grant> = match credential {
        ServiceCredential::Secret(secret) => {
            Box::new(ClientCredentialsGrant::new(Arc::new(ClientSecret {
                client_id: client_id.to_owned(),
                client_secret: Some(secret),
                method: CLIENT_SECRET_BASIC.to_owned(),
            })))
        }
        ServiceCredential::PrivateKey(pem) => {
            let key = PrivateKeyJwt::from_pem(client_id, &pem).map_err(|e| {
                Failure::usage(format!("the client key is not a PKCS#8 P-256 PEM key: {e}"))
            })?;
            Box::new(ClientCredentialsGrant::new(Arc::new(key)))
        }
        ServiceCredential::WorkloadToken(path) => {
            let source: CredentialSource = Arc::new(move || read_workload_token(&path));
            Box::new(JwtBearerGrant::new(client_id, source))
        }
    };
    let grant = Scoped {
        inner,
        scopes: scope.map(|s| s.split_whitespace().map(str::to_owned).collect()),
    };
    let mut builder = OAuthClient::builder(url)
        .net_policy(policy_for(url))
        .grant(Arc::new(grant))
        .client_name(CLIENT_NAME);
    if dpop {
        let prover = DpopProver::generate()
            .map_err(|e| Failure::usage(format!("cannot make a DPoP key: {e}")))?;
        builder = builder.proof(Arc::new(prover));
    }
    builder
        .build()
        .map(Arc::new)
        .map_err(|e| Failure::usage(format!("cannot set up OAuth for {url}: {e}")))
}

/// Longest workload token file read (a JWT is a few KiB).
const MAX_WORKLOAD_TOKEN_BYTES: u64 = 64 * 1024;

/// The workload JWT in `path`, trimmed; an error names the file, never
/// its content.
fn read_workload_token(path: &std::path::Path) -> Result<String, OAuthError> {
    use std::io::Read as _;
    let fail = |why: String| {
        OAuthError::new(
            OAuthErrorKind::Registration,
            format!("workload token file {}: {why}", path.display()),
        )
    };
    let file = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
    let mut text = String::new();
    file.take(MAX_WORKLOAD_TOKEN_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| fail(e.to_string()))?;
    if text.len() as u64 > MAX_WORKLOAD_TOKEN_BYTES {
        return Err(fail(format!(
            "larger than {MAX_WORKLOAD_TOKEN_BYTES} bytes"
        )));
    }
    let token = text.trim();
    if token.split('.').count() != 3 || token.chars().any(char::is_whitespace) {
        return Err(fail("not a compact JWT".into()));
    }
    Ok(token.to_owned())
}

/// [`service`] with a client secret (a gateway upstream's
/// `clientCredentials`).
pub fn client_credentials(
    url: &str,
    client_id: &str,
    client_secret: &str,
    scope: Option<&str>,
) -> Result<Arc<OAuthClient>, Failure> {
    service(
        url,
        client_id,
        ServiceCredential::Secret(client_secret.to_owned()),
        scope,
        false,
    )
}

fn auth_failure(e: &OAuthError) -> Failure {
    Failure::new(code::AUTH, e.to_string())
}

/// How `mcp login` runs the authorization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginMode {
    /// The browser flow; `no_browser`: only print the URL.
    Browser {
        /// Print the URL without opening it.
        no_browser: bool,
    },
    /// The device flow (RFC 8628).
    Device,
    /// The redirected URL pasted back on stdin.
    Paste,
}

/// `mcp login URL`: prints the authorization URL, opens it unless
/// `no_browser`, waits for the redirect on a loopback port; or the device
/// flow, or paste-back (see [`LoginMode`]).
pub async fn login(url: &str, mode: LoginMode, timeout: Duration) -> Result<u8, Failure> {
    let dir = token_dir()?;
    let store = Arc::new(Fresh(file_store()?));
    let client = match mode {
        LoginMode::Browser { no_browser } => browser_login(url, no_browser, timeout, store)?,
        LoginMode::Device => oauth_device(url, "", timeout, store)?,
        LoginMode::Paste => oauth(
            url,
            Arc::new(crate::paste::PasteAuthorization::new(timeout)),
            store,
        )?,
    };
    client.login().await.map_err(|e| auth_failure(&e))?;
    let issuer = client.issuer().await.unwrap_or_else(|| "?".into());
    out!("logged in to {url} (issuer {issuer})");
    eprintln!("credentials stored in {}", dir.display());
    Ok(code::OK)
}

fn browser_login(
    url: &str,
    no_browser: bool,
    timeout: Duration,
    store: Arc<dyn TokenStore>,
) -> Result<OAuthClient, Failure> {
    let opener: BrowserOpener = Arc::new(move |u: &str| {
        eprintln!("To log in, open this URL in a browser:\n  {u}");
        if !no_browser {
            match crate::browser::open(u) {
                Some(p) => eprintln!("(opened with {p}; waiting for the redirect)"),
                None => eprintln!("(no browser found: open it yourself; waiting)"),
            }
        }
        Ok(())
    });
    let handler = LoopbackAuthorization::new(opener).timeout(timeout);
    oauth(url, Arc::new(handler), store)
}

/// `mcp logout URL`: revokes the stored tokens at the AS (RFC 7009: the
/// refresh token, then the access token; failures are warnings) and
/// deletes the credentials for the URL's issuer and resource.
pub async fn logout(url: &str) -> Result<u8, Failure> {
    let store = FileStore::new(token_dir()?);
    let http = HttpClient::new(policy_for(url));
    let report = revoke_stored(&http, url, &store).await.map_err(|e| {
        Failure::new(
            code::AUTH,
            format!(
                "cannot tell which stored credentials belong to {url}: {e} \
             (`mcp logout --all` deletes every one)"
            ),
        )
    })?;
    for w in &report.warnings {
        eprintln!("mcp: warning: {w}");
    }
    store.remove(&report.key).map_err(|e| auth_failure(&e))?;
    if !report.had_token {
        out!("not logged in to {url}; nothing to remove");
    } else if report.revoked.is_empty() {
        out!("logged out of {url} (credentials deleted; not revoked)");
    } else {
        let what: Vec<&str> = report.revoked.iter().map(|h| h.as_str()).collect();
        out!(
            "logged out of {url} (revoked: {}; credentials deleted)",
            what.join(", ")
        );
    }
    Ok(code::OK)
}

/// `mcp logout --all`: deletes every stored credential.
pub fn logout_all() -> Result<u8, Failure> {
    let dir = token_dir()?;
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => out!("removed all credentials ({})", dir.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => out!("no stored credentials"),
        Err(e) => {
            return Err(Failure::transport(format!(
                "cannot remove {}: {e}",
                dir.display()
            )));
        }
    }
    Ok(code::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_login_hint_follows_what_the_store_saw() {
        let dir = std::env::temp_dir().join(format!("mcp-cli-seen-{}", std::process::id()));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let store = Watched {
            inner: FileStore::new(&dir),
            seen: seen.clone(),
        };
        let get = || *seen.lock().unwrap_or_else(|p| p.into_inner());
        let key = StoreKey {
            issuer: "http://127.0.0.1:1".into(),
            resource: "http://127.0.0.1:2/mcp".into(),
        };
        assert!(matches!(store.load(&key), Ok(None)));
        assert_eq!(get(), Seen::Nothing);
        // A save without a token (a registration) changes nothing.
        assert!(store.save(&key, &StoredCredentials::default()).is_ok());
        assert_eq!(get(), Seen::Nothing);
        let token: ferromcp_auth::client::StoredToken = serde_json::from_value(serde_json::json!({
            "access_token": "a", "token_type": "Bearer", "scopes": []
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let with_token = StoredCredentials {
            token: Some(token),
            ..StoredCredentials::default()
        };
        assert!(store.save(&key, &with_token).is_ok());
        assert!(matches!(store.load(&key), Ok(Some(_))));
        assert_eq!(get(), Seen::Token);
        // The refresh failed: the token is dropped and saved as such.
        assert!(store.save(&key, &StoredCredentials::default()).is_ok());
        assert_eq!(get(), Seen::Dropped);
        let url = "http://127.0.0.1:2/mcp";
        assert!(login_hint(url, Seen::Nothing).starts_with("not logged in"));
        assert!(login_hint(url, Seen::Dropped).contains("could not be refreshed"));
        assert!(login_hint(url, Seen::Token).contains("insufficient_scope"));
        // `mcp login` never gets the stored token back.
        assert!(store.save(&key, &with_token).is_ok());
        let fresh = Fresh(FileStore::new(&dir));
        assert!(matches!(fresh.load(&key), Ok(Some(c)) if c.token.is_none()));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn loopback_urls_relax_the_policy() {
        for u in [
            "http://127.0.0.1:8080/mcp",
            "http://localhost/mcp",
            "http://[::1]:9/x",
            "http://LOCALHOST:1/mcp",
            "http://127.9.9.9/",
        ] {
            assert_eq!(policy_for(u), NetPolicy::loopback_allowed(), "{u}");
        }
        for u in [
            "https://example.com/mcp",
            "http://10.0.0.1/mcp",
            "http://127.0.0.1.evil.example/",
            // Regression (issue 25): the old copy skipped userinfo, so a
            // URL naming two hosts counted as loopback.
            "http://evil.example@localhost/mcp",
            "http://127.0.0.1:80@evil.example/mcp",
            "http://localhost./mcp",
            "http://a.localhost/mcp",
            "http://[::ffff:127.0.0.1]/mcp",
            "http://localhost:99999/mcp",
        ] {
            assert_eq!(policy_for(u), NetPolicy::strict(), "{u}");
        }
    }
}
