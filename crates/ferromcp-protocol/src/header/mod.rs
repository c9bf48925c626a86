//! The one header codec shared by client emit and server validate.
//!
//! - [`codec`]: `=?base64?…?=` value encoding/decoding and header-value safety.
//! - [`x_mcp_header`]: validation of `x-mcp-header` annotations in a tool's
//!   `inputSchema` and the header map (property path → header name).
//! - [`params`]: `Mcp-Param-*` emission from arguments (client) and
//!   validation of received headers against arguments (server).
//!
//! Header lists are passed as [`HeaderList`], a raw list of lines (not a
//! folded map) so duplicates stay visible.
// HDR-*, LADDER-07, HDR-19

pub mod codec;
pub mod params;
pub mod x_mcp_header;

// HDR-01
/// `MCP-Protocol-Version`.
pub const MCP_PROTOCOL_VERSION: &str = "MCP-Protocol-Version";
// HDR-02
/// `Mcp-Method`.
pub const MCP_METHOD: &str = "Mcp-Method";
// HDR-03
/// `Mcp-Name`.
pub const MCP_NAME: &str = "Mcp-Name";
// LEGACY-12
/// `Mcp-Session-Id` (handshake era).
pub const MCP_SESSION_ID: &str = "Mcp-Session-Id";
// HDR-15
/// Prefix of custom parameter headers, `Mcp-Param-<Name>`.
pub const MCP_PARAM_PREFIX: &str = "Mcp-Param-";

// HDR-04
/// A raw list of HTTP header lines as received, duplicates included.
///
/// Names compare case-insensitively; values are raw bytes, so
/// non-ASCII and control bytes remain visible to the validators.
pub trait HeaderList {
    /// Calls `f(name, value)` once per header line, in arrival order.
    fn visit<'h>(&'h self, f: &mut dyn FnMut(&'h str, &'h [u8]));
}

impl<N: AsRef<str>, V: AsRef<[u8]>> HeaderList for [(N, V)] {
    fn visit<'h>(&'h self, f: &mut dyn FnMut(&'h str, &'h [u8])) {
        for (n, v) in self {
            f(n.as_ref(), v.as_ref());
        }
    }
}

impl<N: AsRef<str>, V: AsRef<[u8]>> HeaderList for Vec<(N, V)> {
    fn visit<'h>(&'h self, f: &mut dyn FnMut(&'h str, &'h [u8])) {
        self.as_slice().visit(f)
    }
}

// HDR-05
/// Strips RFC 9110 optional whitespace (SP / HTAB) around a field value.
pub fn trim_ows(v: &[u8]) -> &[u8] {
    let start = v
        .iter()
        .position(|b| *b != b' ' && *b != b'\t')
        .unwrap_or(v.len());
    let end = v
        .iter()
        .rposition(|b| *b != b' ' && *b != b'\t')
        .map_or(start, |i| i + 1);
    &v[start..end]
}

// HDR-03
/// The methods whose name travels in `Mcp-Name`, and the params member it mirrors.
pub fn name_bearing_param(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        // SEP-2663: the task methods route by task id.
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}
