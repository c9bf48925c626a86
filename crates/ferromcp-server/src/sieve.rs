//! What each handshake revision can understand of the newer wire:
//! fields a 2025-06-18 or 2025-03-26 client does not know are
//! removed from what it is sent. Used by the dispatcher (results), the
//! registry (pre-serialized tool lists per level) and sessions.
// LEGACY-25

use ferromcp_protocol::ProtocolVersion;
use ferromcp_protocol::types::{CallToolResult, Tool};

// LEGACY-25
/// How much of the newer wire a handshake revision understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sieve {
    /// 2025-11-25 and modern: everything.
    Full,
    /// 2025-06-18: no icons.
    NoIcons,
    /// 2025-03-26: no icons, titles, output schemas, structured content, resource links.
    Minimal,
}

impl Sieve {
    pub(crate) fn for_version(v: ProtocolVersion) -> Self {
        match v {
            ProtocolVersion::V2026_07_28 | ProtocolVersion::V2025_11_25 => Self::Full,
            ProtocolVersion::V2025_06_18 => Self::NoIcons,
            ProtocolVersion::V2025_03_26 | ProtocolVersion::V2024_11_05 => Self::Minimal,
        }
    }
    pub(crate) fn index(self) -> usize {
        self as usize
    }
    pub(crate) fn apply_tool(self, t: &mut Tool) {
        if self != Sieve::Full {
            t.icons = None;
        }
        if self == Sieve::Minimal {
            t.title = None;
            t.output_schema = None;
            if let Some(a) = &mut t.annotations {
                a.title = None;
            }
        }
    }
}

pub(crate) fn sieve_icons_title<I>(
    version: ProtocolVersion,
    icons: &mut Option<I>,
    title: &mut Option<String>,
) {
    let s = Sieve::for_version(version);
    if s != Sieve::Full {
        *icons = None;
    }
    if s == Sieve::Minimal {
        *title = None;
    }
}

pub(crate) fn sieve_call_result(version: ProtocolVersion, mut r: CallToolResult) -> CallToolResult {
    if Sieve::for_version(version) == Sieve::Minimal {
        r.structured_content = None;
        r.content.retain(|c| c.type_name() != Some("resource_link"));
    }
    r
}
