//! Client-facing names: `PREFIX` + separator + the upstream's own name,
//! checked against the tool-name rules and never mangled.

/// Whether `c` may appear in a tool name: `A-Z a-z 0-9 _ . -`.
pub fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

// TOOL-04
/// Whether `name` follows the tool-name rules: 1 to 128 characters of
/// `A-Z a-z 0-9 _ . -`.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 128 && name.chars().all(is_name_char)
}

/// The client-facing name of an upstream's tool or prompt.
pub fn exposed(prefix: &str, separator: &str, name: &str) -> String {
    format!("{prefix}{separator}{name}")
}

/// How tools and prompts are named for clients (`gateway.naming`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Naming {
    /// Always `PREFIX` + separator + name (the default).
    #[default]
    Prefix,
    /// The upstream's own name while no other upstream (and no
    /// meta-tool of the search mode) has it; `PREFIX` + separator + name
    /// for every upstream that shares it.
    OnCollision,
}

/// The scheme of rewritten resource URIs.
pub const REWRITE_SCHEME: &str = "mcp-gateway";

/// What a colliding resource URI (or template) of the upstream with
/// `prefix` is prefixed with: `mcp-gateway://PREFIX/`.
pub fn rewrite_head(prefix: &str) -> String {
    format!("{REWRITE_SCHEME}://{prefix}/")
}

/// The client-facing form of a resource URI (or URI template) that two
/// upstreams share: `mcp-gateway://PREFIX/` followed by the upstream's
/// URI unchanged, so the rewrite is undone by removing the head (a
/// template stays a template of the same variables).
pub fn rewritten_uri(prefix: &str, uri: &str) -> String {
    format!("{}{uri}", rewrite_head(prefix))
}

/// Header names the HTTP stack sets itself or that belong to the
/// connection; a configured `headers` entry cannot override them.
const RESERVED_HEADERS: [&str; 6] = [
    "host",
    "content-type",
    "content-length",
    "accept",
    "transfer-encoding",
    "connection",
];

/// Checks one configured upstream header; the error never repeats the
/// value.
pub(crate) fn check_header(name: &str, value: &str) -> Result<(), String> {
    let n = http::header::HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("{name:?} is not a valid header name"))?;
    if RESERVED_HEADERS.contains(&n.as_str()) || n.as_str().starts_with("mcp-") {
        return Err(format!(
            "header {name} is set by the gateway itself and cannot be given"
        ));
    }
    http::header::HeaderValue::from_str(value)
        .map_err(|_| format!("the value of header {name} is not a valid header value"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_name_rules() {
        assert!(is_valid_tool_name("a"));
        assert!(is_valid_tool_name("fs__read_file.v2-x"));
        assert!(is_valid_tool_name(&"x".repeat(128)));
        assert!(!is_valid_tool_name(&"x".repeat(129)));
        assert!(!is_valid_tool_name(""));
        assert!(!is_valid_tool_name("fs__read file"));
        assert!(!is_valid_tool_name("fs__é"));
        assert!(!is_valid_tool_name("fs/read"));
        assert_eq!(exposed("fs", "__", "read"), "fs__read");
    }

    #[test]
    fn a_rewritten_uri_is_undone_by_removing_its_head() {
        assert_eq!(
            rewritten_uri("fs", "file:///tmp/a b?x#y"),
            "mcp-gateway://fs/file:///tmp/a b?x#y"
        );
        for uri in ["file:///x", "", "mcp-gateway://other/y", "r://{id}/z"] {
            let r = rewritten_uri("a.b-c_1", uri);
            assert_eq!(r.strip_prefix(&rewrite_head("a.b-c_1")), Some(uri));
            // Another upstream's head does not undo it.
            assert_ne!(r.strip_prefix(&rewrite_head("a.b")), Some(uri));
        }
        // A rewritten template is still a template of the same variables.
        let t = rewritten_uri("fs", "file:///{path}");
        let parsed = ferromcp_server::uri_template::UriTemplate::parse(&t);
        assert_eq!(
            parsed.map(|t| t.variable_names().join(",")).ok(),
            Some("path".to_owned())
        );
    }

    #[test]
    fn reserved_and_bad_headers_are_refused() {
        assert!(check_header("Authorization", "Bearer x").is_ok());
        assert!(check_header("X-Api-Key", "k").is_ok());
        for n in [
            "Host",
            "Content-Type",
            "Mcp-Session-Id",
            "MCP-Protocol-Version",
            "Accept",
        ] {
            assert!(check_header(n, "v").is_err(), "{n}");
        }
        let e = check_header("Authorization", "Bearer se\ncret")
            .err()
            .unwrap_or_default();
        assert!(e.contains("Authorization") && !e.contains("cret"), "{e}");
    }
}
