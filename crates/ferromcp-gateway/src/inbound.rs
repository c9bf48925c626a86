//! Inbound bearer protection (`gateway.auth`): what the HTTP front of the
//! gateway needs to act as an OAuth resource server (Protected Resource
//! Metadata, JWTs checked against the issuer's JWKS, 401 with
//! `WWW-Authenticate`). The layer itself is built by the caller (the `mcp`
//! command, with `ferromcp-auth`); this is the validated configuration.
//!
//! ```json
//! {"gateway": {"auth": {"issuer": "https://as.example.com",
//!                       "resource": "https://gw.example.com/mcp",
//!                       "requiredScopes": ["mcp"]}}}
//! ```
//!
//! With `"introspection": {"endpoint": URL, "clientId": ID,
//! "clientSecretEnv": VAR}`, tokens are checked by asking the
//! authorization server (RFC 7662) instead of verifying JWTs: opaque
//! tokens work, and a revoked token is refused once the verifier's cache
//! entry for it ends.
// AUTH-01, AUTH-03

use crate::config_error::ConfigError;
use serde_json::Value;

/// The validated `gateway.auth`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboundAuth {
    issuer: String,
    resource: String,
    required_scopes: Vec<String>,
    scopes_supported: Option<Vec<String>>,
    introspection: Option<Introspection>,
}

/// `gateway.auth.introspection`: where and as whom tokens are
/// introspected. `Debug` shows the secret's variable, never the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Introspection {
    endpoint: String,
    client_id: String,
    secret_var: String,
    client_secret: String,
}

impl std::fmt::Debug for Introspection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Introspection")
            .field("endpoint", &self.endpoint)
            .field("client_id", &self.client_id)
            .field("secret_var", &self.secret_var)
            .finish_non_exhaustive()
    }
}

impl Introspection {
    /// The RFC 7662 endpoint.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }
    /// The gateway's client id at the authorization server.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }
    /// Its secret (`client_secret_basic`), from `clientSecretEnv`.
    pub fn client_secret(&self) -> &str {
        &self.client_secret
    }
}

impl InboundAuth {
    /// The authorization server whose JWTs are accepted (its metadata
    /// names the JWKS).
    pub fn issuer(&self) -> &str {
        &self.issuer
    }
    /// The gateway's canonical resource URI (tokens' audience, the PRM
    /// `resource`).
    pub fn resource(&self) -> &str {
        &self.resource
    }
    /// Scopes every request needs (`requiredScopes`, default none).
    pub fn required_scopes(&self) -> &[String] {
        &self.required_scopes
    }
    /// `scopesSupported` for the PRM document, when given.
    pub fn scopes_supported(&self) -> Option<&[String]> {
        self.scopes_supported.as_deref()
    }
    /// Token introspection instead of JWT verification, when configured.
    pub fn introspection(&self) -> Option<&Introspection> {
        self.introspection.as_ref()
    }
}

fn scope_list(v: &Value, path: &str) -> Result<Vec<String>, ConfigError> {
    let a = v
        .as_array()
        .ok_or_else(|| ConfigError::new(path, "must be an array of scopes"))?;
    a.iter()
        .enumerate()
        .map(|(i, s)| match s.as_str() {
            Some(s)
                if !s.is_empty()
                    && s.bytes()
                        .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\') =>
            {
                Ok(s.to_owned())
            }
            _ => Err(ConfigError::new(
                format!("{path}[{i}]"),
                "must be a scope token (printable ASCII, no space, \" or \\)",
            )),
        })
        .collect()
}

/// Parses `gateway.auth`.
pub(crate) fn parse(
    v: &Value,
    valid_url: impl Fn(&str) -> bool,
    lookup: &impl Fn(&str) -> Option<String>,
) -> Result<InboundAuth, ConfigError> {
    const PATH: &str = "gateway.auth";
    const KEYS: [&str; 5] = [
        "issuer",
        "resource",
        "requiredScopes",
        "scopesSupported",
        "introspection",
    ];
    let o = v
        .as_object()
        .ok_or_else(|| ConfigError::new(PATH, "must be a JSON object"))?;
    if let Some(k) = o.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(ConfigError::new(
            format!("{PATH}.{k}"),
            format!("unknown key (expected one of: {})", KEYS.join(", ")),
        ));
    }
    let url = |k: &str| -> Result<String, ConfigError> {
        let at = format!("{PATH}.{k}");
        match o.get(k) {
            None => Err(ConfigError::new(at, "missing")),
            Some(Value::String(s)) if valid_url(s) && !s.contains('#') => Ok(s.clone()),
            Some(_) => Err(ConfigError::new(
                at,
                "not a valid URL (http:// or https:// with a host, no fragment)",
            )),
        }
    };
    let issuer = url("issuer")?;
    let resource = url("resource")?;
    let required_scopes = match o.get("requiredScopes") {
        Some(v) => scope_list(v, &format!("{PATH}.requiredScopes"))?,
        None => Vec::new(),
    };
    let scopes_supported = match o.get("scopesSupported") {
        Some(v) => Some(scope_list(v, &format!("{PATH}.scopesSupported"))?),
        None => None,
    };
    let introspection = match o.get("introspection") {
        Some(v) => Some(introspection(v, &valid_url, lookup)?),
        None => None,
    };
    Ok(InboundAuth {
        issuer,
        resource,
        required_scopes,
        scopes_supported,
        introspection,
    })
}

/// Parses `gateway.auth.introspection`.
fn introspection(
    v: &Value,
    valid_url: &impl Fn(&str) -> bool,
    lookup: &impl Fn(&str) -> Option<String>,
) -> Result<Introspection, ConfigError> {
    const PATH: &str = "gateway.auth.introspection";
    const KEYS: [&str; 3] = ["endpoint", "clientId", "clientSecretEnv"];
    let o = v
        .as_object()
        .ok_or_else(|| ConfigError::new(PATH, "must be a JSON object"))?;
    if let Some(k) = o.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(ConfigError::new(
            format!("{PATH}.{k}"),
            format!("unknown key (expected one of: {})", KEYS.join(", ")),
        ));
    }
    let endpoint = match o.get("endpoint") {
        Some(Value::String(s)) if valid_url(s) && !s.contains('#') => s.clone(),
        Some(_) => {
            return Err(ConfigError::new(
                format!("{PATH}.endpoint"),
                "not a valid URL (http:// or https:// with a host, no fragment)",
            ));
        }
        None => return Err(ConfigError::new(format!("{PATH}.endpoint"), "missing")),
    };
    let client_id = match o.get("clientId") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => {
            return Err(ConfigError::new(
                format!("{PATH}.clientId"),
                "missing or not a non-empty string",
            ));
        }
    };
    let (secret_var, client_secret) =
        crate::credentials::env_value(o, "clientSecretEnv", PATH, lookup)?;
    Ok(Introspection {
        endpoint,
        client_id,
        secret_var,
        client_secret,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(s: &str) -> bool {
        s.starts_with("http")
    }

    #[test]
    fn parses_and_names_the_key_on_errors() {
        let none = |_: &str| None;
        let a = parse(
            &json!({"issuer": "http://as", "resource": "http://gw/mcp", "requiredScopes": ["mcp"]}),
            ok,
            &none,
        )
        .unwrap();
        assert_eq!(
            (a.issuer(), a.resource(), a.required_scopes()),
            ("http://as", "http://gw/mcp", &["mcp".to_owned()][..])
        );
        assert_eq!(a.scopes_supported(), None);
        let e = |v: Value| parse(&v, ok, &none).unwrap_err().to_string();
        assert_eq!(
            e(json!({"resource": "http://gw/mcp"})),
            "gateway.auth.issuer: missing"
        );
        assert!(
            e(json!({"issuer": "x", "resource": "http://gw/mcp"}))
                .starts_with("gateway.auth.issuer: not a valid URL")
        );
        assert!(
            e(json!({"issuer": "http://as", "resource": "http://gw/mcp#f"}))
                .starts_with("gateway.auth.resource: not a valid URL")
        );
        assert!(
            e(json!({"issuer": "http://as", "resource": "http://gw", "requiredScopes": ["a b"]}))
                .starts_with("gateway.auth.requiredScopes[0]:")
        );
        assert!(
            e(json!({"issuer": "http://as", "jwks": "x"}))
                .starts_with("gateway.auth.jwks: unknown key")
        );
    }

    #[test]
    fn introspection_is_parsed_and_its_secret_never_shown() {
        let env = |v: &str| (v == "GW_INTROSPECT").then(|| "s3cret-value".to_owned());
        let base = json!({"issuer": "http://as", "resource": "http://gw/mcp"});
        let with = |i: Value| {
            let mut v = base.clone();
            v["introspection"] = i;
            v
        };
        let a = parse(
            &with(json!({"endpoint": "http://as/introspect", "clientId": "gw",
                         "clientSecretEnv": "GW_INTROSPECT"})),
            ok,
            &env,
        )
        .unwrap();
        let i = a.introspection().unwrap();
        assert_eq!(
            (i.endpoint(), i.client_id(), i.client_secret()),
            ("http://as/introspect", "gw", "s3cret-value")
        );
        let shown = format!("{a:?}");
        assert!(
            !shown.contains("s3cret-value") && shown.contains("GW_INTROSPECT"),
            "{shown}"
        );
        let e = |i: Value| parse(&with(i), ok, &env).unwrap_err().to_string();
        assert!(
            e(json!({"clientId": "gw", "clientSecretEnv": "GW_INTROSPECT"}))
                .starts_with("gateway.auth.introspection.endpoint: missing")
        );
        assert!(
            e(json!({"endpoint": "x", "clientId": "gw", "clientSecretEnv": "GW_INTROSPECT"}))
                .starts_with("gateway.auth.introspection.endpoint: not a valid URL")
        );
        assert!(
            e(json!({"endpoint": "http://as/i", "clientSecretEnv": "GW_INTROSPECT"}))
                .starts_with("gateway.auth.introspection.clientId:")
        );
        let unset = e(json!({"endpoint": "http://as/i", "clientId": "gw",
                             "clientSecretEnv": "NOT_SET"}));
        assert!(
            unset.starts_with("gateway.auth.introspection.clientSecretEnv:")
                && unset.contains("NOT_SET is not set"),
            "{unset}"
        );
        assert!(
            e(json!({"endpoint": "http://as/i", "clientId": "gw",
                     "clientSecretEnv": "GW_INTROSPECT", "x": 1}))
            .starts_with("gateway.auth.introspection.x: unknown key")
        );
    }
}
