//! The canonical resource URI and the Protected Resource Metadata
//! document (RFC 9728).
// AUTH-22, AUTH-03/AUTH-04

use super::ConfigError;
pub use crate::core::discovery::PRM_WELL_KNOWN;
use crate::core::discovery::prm_url;
pub use crate::core::metadata::ProtectedResourceMetadata;
use crate::core::uri;
use ferromcp_protocol::authority::Authority;

// AUTH-22, AUTH-21
/// This server's canonical resource URI (RFC 8707): absolute,
/// lowercase scheme and host, no default port, no fragment, no query, no
/// trailing slash, e.g. `https://mcp.example.com/mcp`.
///
/// It is the `resource` of the metadata document, the audience every token
/// must carry, and the base of the metadata URL. The metadata URL
/// is derived from it, never from the request's `Host` header.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResourceUri {
    uri: String,
    /// Byte offset where the path starts (`uri.len()` when there is none).
    path_at: usize,
}

impl ResourceUri {
    // AUTH-22
    /// Parses and canonicalizes `input`. Uppercase scheme and host are
    /// accepted and lowered; a trailing slash and a default port
    /// (`:443` for https, `:80` for http) are dropped; fragments, queries,
    /// userinfo and schemes other than `http`/`https` are rejected.
    pub fn parse(input: &str) -> Result<Self, ConfigError> {
        let bad = |why: &str| ConfigError::new(format!("resource URI {input:?}: {why}"));
        if input.contains('#') {
            return Err(bad("must not have a fragment"));
        }
        if input.contains('?') {
            return Err(bad("must not have a query"));
        }
        if input.bytes().any(|b| !b.is_ascii_graphic()) {
            return Err(bad("must be visible ASCII (percent-encode the rest)"));
        }
        let (scheme, authority, path) = uri::split(input).ok_or_else(|| bad("must be absolute"))?;
        let scheme = scheme.to_ascii_lowercase();
        let default_port =
            uri::default_port_suffix(&scheme).ok_or_else(|| bad("scheme must be https or http"))?;
        if authority.is_empty() {
            return Err(bad("has no host"));
        }
        if authority.contains('@') {
            return Err(bad("must not have userinfo"));
        }
        let mut authority = authority.to_ascii_lowercase();
        if authority.ends_with(default_port) {
            authority.truncate(authority.len() - default_port.len());
        }
        if Authority::parse(&authority).is_err() {
            return Err(bad("has an invalid host or port"));
        }
        let path = path.trim_end_matches('/');
        if path.contains("//") {
            return Err(bad("has an empty path segment"));
        }
        let head = format!("{scheme}://{authority}");
        let path_at = head.len();
        Ok(Self {
            uri: format!("{head}{path}"),
            path_at,
        })
    }

    /// The canonical URI.
    pub fn as_str(&self) -> &str {
        &self.uri
    }

    /// The path (`""` or `/mcp`-style, no trailing slash).
    pub fn path(&self) -> &str {
        self.uri.get(self.path_at..).unwrap_or_default()
    }

    /// `scheme://authority`.
    pub fn origin(&self) -> &str {
        self.uri.get(..self.path_at).unwrap_or_default()
    }

    /// The metadata URL announced in challenges: the path-inserted
    /// well-known URI (RFC 9728 §3.1), e.g.
    /// `https://host/.well-known/oauth-protected-resource/mcp`.
    pub fn metadata_url(&self) -> String {
        prm_url(self.origin(), self.path())
    }
}

impl std::fmt::Display for ResourceUri {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.uri)
    }
}

impl ProtectedResourceMetadata {
    /// A document for `resource` trusting `authorization_servers`, with
    /// `bearer_methods_supported: ["header"]`.
    pub fn new(resource: &ResourceUri, authorization_servers: Vec<String>) -> Self {
        Self {
            resource: resource.as_str().to_owned(),
            authorization_servers,
            scopes_supported: None,
            bearer_methods_supported: vec!["header".into()],
            resource_name: None,
            resource_documentation: None,
            resource_policy_uri: None,
            resource_tos_uri: None,
            extra: serde_json::Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonicalizes_per_auth_22() {
        let ok = |s: &str| {
            ResourceUri::parse(s)
                .map(|u| u.to_string())
                .unwrap_or_default()
        };
        assert_eq!(
            ok("HTTPS://MCP.Example.COM/mcp"),
            "https://mcp.example.com/mcp"
        );
        assert_eq!(
            ok("https://mcp.example.com/mcp/"),
            "https://mcp.example.com/mcp"
        );
        assert_eq!(ok("https://mcp.example.com/"), "https://mcp.example.com");
        assert_eq!(
            ok("https://mcp.example.com:443/MCP"),
            "https://mcp.example.com/MCP"
        );
        assert_eq!(ok("http://127.0.0.1:8080/mcp"), "http://127.0.0.1:8080/mcp");
        assert_eq!(ok("http://[::1]:80/x"), "http://[::1]/x");
        for bad in [
            "mcp.example.com/mcp",
            "ftp://x/y",
            "https://x/mcp#frag",
            "https://x/mcp?q=1",
            "https://u:p@x/mcp",
            "https:///mcp",
            "https://x y/mcp",
            "https://x:port/mcp",
            "https://x//mcp",
            "https://x:/mcp",
            "https://x:99999/mcp",
        ] {
            assert!(ResourceUri::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn metadata_url_is_path_inserted() {
        // AUTH-04 / RFC 9728 §3.1.
        let u =
            ResourceUri::parse("https://mcp.example.com/api/mcp").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(u.path(), "/api/mcp");
        assert_eq!(u.origin(), "https://mcp.example.com");
        assert_eq!(
            u.metadata_url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/api/mcp"
        );
        let root = ResourceUri::parse("https://mcp.example.com").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            root.metadata_url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn document_shape() {
        let u = ResourceUri::parse("https://mcp.example.com/mcp").unwrap_or_else(|e| panic!("{e}"));
        let mut d = ProtectedResourceMetadata::new(&u, vec!["https://as.example.com".into()]);
        d.scopes_supported = Some(vec!["mcp".into()]);
        let v = serde_json::to_value(&d).unwrap_or_default();
        assert_eq!(
            v,
            serde_json::json!({
                "resource": "https://mcp.example.com/mcp",
                "authorization_servers": ["https://as.example.com"],
                "scopes_supported": ["mcp"],
                "bearer_methods_supported": ["header"],
            })
        );
        let back: ProtectedResourceMetadata =
            serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, d);
    }
}
