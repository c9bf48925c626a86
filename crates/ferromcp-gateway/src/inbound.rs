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
) -> Result<InboundAuth, ConfigError> {
    const PATH: &str = "gateway.auth";
    const KEYS: [&str; 4] = ["issuer", "resource", "requiredScopes", "scopesSupported"];
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
    Ok(InboundAuth {
        issuer,
        resource,
        required_scopes,
        scopes_supported,
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
        let a = parse(
            &json!({"issuer": "http://as", "resource": "http://gw/mcp", "requiredScopes": ["mcp"]}),
            ok,
        )
        .unwrap();
        assert_eq!(
            (a.issuer(), a.resource(), a.required_scopes()),
            ("http://as", "http://gw/mcp", &["mcp".to_owned()][..])
        );
        assert_eq!(a.scopes_supported(), None);
        let e = |v: Value| parse(&v, ok).unwrap_err().to_string();
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
}
