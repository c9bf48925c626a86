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
