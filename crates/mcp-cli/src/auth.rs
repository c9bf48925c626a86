//! OAuth for HTTP servers: `mcp login URL` runs the authorization-code
//! flow (loopback redirect, browser opener); `mcp logout` forgets; every
//! other subcommand uses, and refreshes, the stored credentials of its URL
//! but never starts an interactive flow itself.
//!
//! Credentials live in `$XDG_CONFIG_HOME/mcp/tokens/` (else
//! `~/.config/mcp/tokens/`), one `0600` file per issuer and resource, in a
//! `0700` directory (AUTH-28), through `mcp_auth`'s `FileStore`.

use crate::exit::{Failure, code};
use mcp_auth::client::{
    AuthorizationHandler, AuthorizationSession, BoxFuture, BrowserOpener, FileStore,
    LoopbackAuthorization, NetPolicy, OAuthClient, OAuthError, OAuthErrorKind,
};
use std::path::PathBuf;
use std::sync::Arc;
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

/// Loopback servers (local development, tests) may use plain `http` and
/// loopback authorization servers; anything else gets the strict policy
/// (public `https` only).
fn policy_for(url: &str) -> NetPolicy {
    let host = url
        .split_once("://")
        .map_or("", |(_, rest)| rest)
        .split(['/', '?', '#'])
        .next()
        .unwrap_or("");
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let name = if host.starts_with('[') {
        host.split(']').next().map_or(host, |h| &h[1..])
    } else {
        host.split(':').next().unwrap_or(host)
    };
    let loopback = name == "localhost"
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if loopback {
        NetPolicy::loopback_allowed()
    } else {
        NetPolicy::strict()
    }
}

/// The authorization handler of subcommands other than `login`: it only
/// explains how to log in.
struct StoredOnly {
    url: String,
}

impl AuthorizationHandler for StoredOnly {
    fn start(&self) -> BoxFuture<'_, Result<Box<dyn AuthorizationSession>, OAuthError>> {
        let url = self.url.clone();
        Box::pin(async move {
            Err(OAuthError::new(
                OAuthErrorKind::Authorization,
                format!("not logged in: run `mcp login {url}`"),
            ))
        })
    }

    fn redirect_uris(&self) -> Vec<String> {
        LoopbackAuthorization::new(Arc::new(|_: &str| Ok(()))).redirect_uris()
    }
}

fn oauth(
    url: &str,
    handler: Arc<dyn AuthorizationHandler>,
) -> Result<(OAuthClient, PathBuf), Failure> {
    let dir = token_dir()?;
    let client = OAuthClient::builder(url)
        .net_policy(policy_for(url))
        .authorization_handler(handler)
        .store(Arc::new(FileStore::new(&dir)))
        .client_name(CLIENT_NAME)
        .build()
        .map_err(|e| Failure::usage(format!("cannot set up OAuth for {url}: {e}")))?;
    Ok((client, dir))
}

/// The OAuth hook for ordinary subcommands: stored credentials only.
pub fn stored(url: &str) -> Result<Arc<OAuthClient>, Failure> {
    let (c, _) = oauth(
        url,
        Arc::new(StoredOnly {
            url: url.to_owned(),
        }),
    )?;
    Ok(Arc::new(c))
}

fn auth_failure(e: &OAuthError) -> Failure {
    Failure {
        code: code::AUTH,
        message: e.to_string(),
    }
}

/// `mcp login URL`: prints the authorization URL, opens it unless
/// `no_browser`, waits for the redirect on a loopback port.
pub async fn login(url: &str, no_browser: bool, timeout: Duration) -> Result<u8, Failure> {
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
    let (client, dir) = oauth(url, Arc::new(handler))?;
    client.login().await.map_err(|e| auth_failure(&e))?;
    let issuer = client.issuer().await.unwrap_or_else(|| "?".into());
    out!("logged in to {url} (issuer {issuer})");
    eprintln!("credentials stored in {}", dir.display());
    Ok(code::OK)
}

/// `mcp logout URL`: forgets the credentials for the URL's issuer.
pub async fn logout(url: &str) -> Result<u8, Failure> {
    let client = stored(url)?;
    client.logout().await.map_err(|e| auth_failure(&e))?;
    out!("logged out of {url}");
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
    fn loopback_urls_relax_the_policy() {
        for u in [
            "http://127.0.0.1:8080/mcp",
            "http://localhost/mcp",
            "http://[::1]:9/x",
        ] {
            assert_eq!(policy_for(u), NetPolicy::loopback_allowed(), "{u}");
        }
        for u in [
            "https://example.com/mcp",
            "http://10.0.0.1/mcp",
            "http://127.0.0.1.evil.example/",
        ] {
            assert_eq!(policy_for(u), NetPolicy::strict(), "{u}");
        }
    }
}
