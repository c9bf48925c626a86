//! The credential an upstream is given (`mcpServers.NAME.auth`): a static
//! bearer token from an environment variable, the credentials `mcp login
//! URL` stored, or OAuth client credentials. Each upstream gets only its
//! own; nothing of the gateway's clients' requests is ever forwarded.
//!
//! ```json
//! {"auth": {"bearerEnv": "SEARCH_TOKEN"}}
//! {"auth": {"login": true}}
//! {"auth": {"clientCredentials": {"clientId": "gw", "clientSecretEnv": "GW_SECRET", "scope": "mcp"}}}
//! {"auth": {"clientCredentials": {"clientId": "gw", "clientKeyFile": "/etc/gw/key.pem"}}}
//! ```
// AUTH-20

use crate::config_error::ConfigError;
use serde_json::{Map, Value};
use std::fmt;

/// How the gateway authenticates to one HTTP upstream. `Debug` never
/// shows a secret, only where it came from.
#[derive(Clone, PartialEq, Eq)]
pub enum UpstreamAuth {
    /// `{"bearerEnv": VAR}`: `Authorization: Bearer <$VAR>` on every request.
    Bearer {
        /// The environment variable the token came from.
        var: String,
        /// The token.
        token: String,
    },
    /// `{"login": true}`: the credentials `mcp login URL` stored for the
    /// upstream's URL, refreshed (under the store's lock) when they expire.
    Login,
    /// `{"clientCredentials": {…}}`: the OAuth `client_credentials` grant
    /// with a client secret, at the authorization server the upstream's
    /// Protected Resource Metadata names.
    ClientCredentials {
        /// The `client_id`.
        client_id: String,
        /// The environment variable the secret came from.
        secret_var: String,
        /// The `client_secret`.
        client_secret: String,
        /// The scopes to ask for (`None`: those the upstream advertises).
        scope: Option<String>,
    },
    /// `{"clientCredentials": {"clientId", "clientKeyFile"}}`: the OAuth
    /// `client_credentials` grant, the client proving itself with a
    /// short-lived assertion signed by its EC P-256 key (`private_key_jwt`)
    /// instead of a secret. The PEM file is read when the upstream
    /// connects.
    ClientKey {
        /// The `client_id`.
        client_id: String,
        /// The PKCS#8 PEM file holding the private key.
        key_file: std::path::PathBuf,
        /// The scopes to ask for (`None`: those the upstream advertises).
        scope: Option<String>,
    },
}

impl fmt::Debug for UpstreamAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UpstreamAuth::Bearer { var, .. } => f.debug_struct("Bearer").field("var", var).finish(),
            UpstreamAuth::Login => f.write_str("Login"),
            UpstreamAuth::ClientCredentials {
                client_id,
                secret_var,
                scope,
                ..
            } => f
                .debug_struct("ClientCredentials")
                .field("client_id", client_id)
                .field("secret_var", secret_var)
                .field("scope", scope)
                .finish(),
            UpstreamAuth::ClientKey {
                client_id,
                key_file,
                scope,
            } => f
                .debug_struct("ClientKey")
                .field("client_id", client_id)
                .field("key_file", key_file)
                .field("scope", scope)
                .finish(),
        }
    }
}

impl UpstreamAuth {
    /// What to tell an operator whose upstream refused this credential.
    pub(crate) fn remedy(&self, name: &str, target: &str) -> String {
        match self {
            UpstreamAuth::Bearer { var, .. } => format!(
                "the token in ${var} (mcpServers.{name}.auth.bearerEnv) was refused: put a valid one there and reload"
            ),
            UpstreamAuth::Login => format!(
                "run `mcp login {target}` (as the user the gateway runs as) to store fresh credentials"
            ),
            UpstreamAuth::ClientCredentials { client_id, .. }
            | UpstreamAuth::ClientKey { client_id, .. } => format!(
                "the client credentials of {client_id:?} (mcpServers.{name}.auth.clientCredentials) were refused or lack a scope it needs"
            ),
        }
    }
}

pub(crate) fn env_value(
    o: &Map<String, Value>,
    key: &str,
    path: &str,
    lookup: &impl Fn(&str) -> Option<String>,
) -> Result<(String, String), ConfigError> {
    let at = format!("{path}.{key}");
    let var = o
        .get(key)
        .ok_or_else(|| ConfigError::new(&at, "missing (the name of an environment variable)"))?
        .as_str()
        .ok_or_else(|| ConfigError::new(&at, "must be a string"))?;
    if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(ConfigError::new(
            &at,
            "must be an environment variable name (A-Z a-z 0-9 _)",
        ));
    }
    match lookup(var) {
        Some(v) if !v.trim().is_empty() => {
            if v.chars().any(|c| c.is_control()) {
                return Err(ConfigError::new(
                    &at,
                    format!("environment variable {var} holds control characters"),
                ));
            }
            Ok((var.to_owned(), v.trim().to_owned()))
        }
        Some(_) => Err(ConfigError::new(
            &at,
            format!("environment variable {var} is empty"),
        )),
        None => Err(ConfigError::new(
            &at,
            format!("environment variable {var} is not set"),
        )),
    }
}

/// Parses `mcpServers.NAME.auth` at `path`.
pub(crate) fn parse(
    v: &Value,
    path: &str,
    lookup: &impl Fn(&str) -> Option<String>,
) -> Result<UpstreamAuth, ConfigError> {
    let o = v
        .as_object()
        .ok_or_else(|| ConfigError::new(path, "must be a JSON object"))?;
    const KINDS: [&str; 3] = ["bearerEnv", "login", "clientCredentials"];
    if let Some(k) = o.keys().find(|k| !KINDS.contains(&k.as_str())) {
        return Err(ConfigError::new(
            format!("{path}.{k}"),
            format!("unknown key (expected one of: {})", KINDS.join(", ")),
        ));
    }
    if o.len() != 1 {
        return Err(ConfigError::new(
            path,
            format!("give exactly one of: {}", KINDS.join(", ")),
        ));
    }
    if o.contains_key("bearerEnv") {
        let (var, token) = env_value(o, "bearerEnv", path, lookup)?;
        if token.chars().any(char::is_whitespace) {
            return Err(ConfigError::new(
                format!("{path}.bearerEnv"),
                format!("environment variable {var} holds whitespace; a bearer token has none"),
            ));
        }
        return Ok(UpstreamAuth::Bearer { var, token });
    }
    if let Some(l) = o.get("login") {
        return match l {
            Value::Bool(true) => Ok(UpstreamAuth::Login),
            _ => Err(ConfigError::new(
                format!("{path}.login"),
                "must be true (leave \"auth\" out for no credentials)",
            )),
        };
    }
    let at = format!("{path}.clientCredentials");
    let c = o
        .get("clientCredentials")
        .and_then(Value::as_object)
        .ok_or_else(|| ConfigError::new(&at, "must be a JSON object"))?;
    const CC: [&str; 4] = ["clientId", "clientSecretEnv", "clientKeyFile", "scope"];
    if let Some(k) = c.keys().find(|k| !CC.contains(&k.as_str())) {
        return Err(ConfigError::new(
            format!("{at}.{k}"),
            format!("unknown key (expected one of: {})", CC.join(", ")),
        ));
    }
    let client_id = match c.get("clientId") {
        Some(Value::String(s)) if !s.is_empty() && !s.chars().any(char::is_control) => s.clone(),
        Some(_) => {
            return Err(ConfigError::new(
                format!("{at}.clientId"),
                "must be a non-empty string",
            ));
        }
        None => return Err(ConfigError::new(format!("{at}.clientId"), "missing")),
    };
    let key_file = match (c.get("clientKeyFile"), c.contains_key("clientSecretEnv")) {
        (Some(_), true) => {
            return Err(ConfigError::new(
                &at,
                "give one of clientSecretEnv and clientKeyFile",
            ));
        }
        (Some(Value::String(p)), false) if !p.is_empty() => Some(std::path::PathBuf::from(p)),
        (Some(_), false) => {
            return Err(ConfigError::new(
                format!("{at}.clientKeyFile"),
                "must be the path of a PEM file",
            ));
        }
        (None, _) => None,
    };
    let scope = match c.get("scope") {
        None => None,
        Some(Value::String(s))
            if !s.trim().is_empty()
                && s.chars().all(|ch| ch == ' ' || ch.is_ascii_graphic())
                && !s.contains(['"', '\\']) =>
        {
            Some(s.split_whitespace().collect::<Vec<_>>().join(" "))
        }
        Some(_) => {
            return Err(ConfigError::new(
                format!("{at}.scope"),
                "must be space-separated scope tokens (printable ASCII, no \" or \\)",
            ));
        }
    };
    if let Some(key_file) = key_file {
        return Ok(UpstreamAuth::ClientKey {
            client_id,
            key_file,
            scope,
        });
    }
    let (secret_var, client_secret) = env_value(c, "clientSecretEnv", &at, lookup)?;
    Ok(UpstreamAuth::ClientCredentials {
        client_id,
        secret_var,
        client_secret,
        scope,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(v: &str) -> Option<String> {
        match v {
            "TOKEN" => Some("tok-123".into()),
            "SECRET" => Some("sh-456".into()),
            "EMPTY" => Some("  ".into()),
            "SPACED" => Some("x9 y9".into()),
            _ => None,
        }
    }

    fn err(v: Value) -> String {
        match parse(&v, "mcpServers.s.auth", &env) {
            Ok(a) => panic!("accepted: {a:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn the_three_kinds_parse() {
        assert_eq!(
            parse(&json!({"bearerEnv": "TOKEN"}), "p", &env).unwrap(),
            UpstreamAuth::Bearer {
                var: "TOKEN".into(),
                token: "tok-123".into()
            }
        );
        assert_eq!(
            parse(&json!({"login": true}), "p", &env).unwrap(),
            UpstreamAuth::Login
        );
        assert_eq!(
            parse(
                &json!({"clientCredentials": {"clientId": "gw", "clientSecretEnv": "SECRET", "scope": " a  b "}}),
                "p",
                &env
            )
            .unwrap(),
            UpstreamAuth::ClientCredentials {
                client_id: "gw".into(),
                secret_var: "SECRET".into(),
                client_secret: "sh-456".into(),
                scope: Some("a b".into()),
            }
        );
    }

    #[test]
    fn a_client_key_file_replaces_the_secret() {
        assert_eq!(
            parse(
                &json!({"clientCredentials": {"clientId": "gw", "clientKeyFile": "/k.pem"}}),
                "p",
                &env
            )
            .unwrap(),
            UpstreamAuth::ClientKey {
                client_id: "gw".into(),
                key_file: "/k.pem".into(),
                scope: None
            }
        );
        assert_eq!(
            err(
                json!({"clientCredentials": {"clientId": "gw", "clientKeyFile": "/k.pem",
                                             "clientSecretEnv": "SECRET"}})
            ),
            "mcpServers.s.auth.clientCredentials: give one of clientSecretEnv and clientKeyFile"
        );
        assert!(
            err(json!({"clientCredentials": {"clientId": "gw", "clientKeyFile": 3}}))
                .starts_with("mcpServers.s.auth.clientCredentials.clientKeyFile:")
        );
    }

    #[test]
    fn errors_name_the_key_and_the_variable_never_the_value() {
        let e = err(json!({"bearerEnv": "NOPE"}));
        assert_eq!(
            e,
            "mcpServers.s.auth.bearerEnv: environment variable NOPE is not set"
        );
        assert!(err(json!({"bearerEnv": "EMPTY"})).contains("EMPTY is empty"));
        let e = err(json!({"bearerEnv": "SPACED"}));
        assert!(e.contains("whitespace") && !e.contains("x9"), "{e}");
        assert!(err(json!({"bearerEnv": "A-B"})).starts_with("mcpServers.s.auth.bearerEnv:"));
        assert!(err(json!({"login": false})).starts_with("mcpServers.s.auth.login: must be true"));
        assert!(err(json!({"bearer": "x"})).starts_with("mcpServers.s.auth.bearer: unknown key"));
        assert!(
            err(json!({"login": true, "bearerEnv": "TOKEN"}))
                .starts_with("mcpServers.s.auth: give exactly one")
        );
        assert!(err(json!({})).starts_with("mcpServers.s.auth: give exactly one"));
        assert!(err(json!("TOKEN")).starts_with("mcpServers.s.auth: must be a JSON object"));
        let cc = |c: Value| err(json!({"clientCredentials": c}));
        assert_eq!(
            cc(json!({"clientSecretEnv": "SECRET"})),
            "mcpServers.s.auth.clientCredentials.clientId: missing"
        );
        assert_eq!(
            cc(json!({"clientId": "gw", "clientSecretEnv": "GONE"})),
            "mcpServers.s.auth.clientCredentials.clientSecretEnv: environment variable GONE is not set"
        );
        assert!(
            cc(json!({"clientId": "gw", "clientSecretEnv": "SECRET", "scope": "a\"b"}))
                .starts_with("mcpServers.s.auth.clientCredentials.scope:")
        );
        assert!(
            cc(json!({"clientId": "gw", "clientSecret": "inline"}))
                .starts_with("mcpServers.s.auth.clientCredentials.clientSecret: unknown key")
        );
    }

    #[test]
    fn debug_never_shows_a_secret() {
        for v in [
            json!({"bearerEnv": "TOKEN"}),
            json!({"clientCredentials": {"clientId": "gw", "clientSecretEnv": "SECRET"}}),
        ] {
            let d = format!("{:?}", parse(&v, "p", &env).unwrap());
            assert!(!d.contains("tok-123") && !d.contains("sh-456"), "{d}");
        }
    }
}
