//! Era classification: does a request follow the modern (2026-07-28,
//! stateless) rules or the handshake-era rules?
//!
//! ## HTTP (per request; our policy)
//!
//! The spec defines dual-era serving by "how the client opens" but not
//! mechanically. We decide per request, in this order:
//!
//! 1. An `Mcp-Session-Id` naming a live handshake session → **handshake**.
//!    Sessions exist only in the handshake era; a live one is conclusive.
//! 2. The body carries the modern envelope key
//!    `_meta["io.modelcontextprotocol/protocolVersion"]` → **modern**. The
//!    modern ladder then judges the headers; a client whose
//!    `MCP-Protocol-Version` header contradicts its envelope gets -32020,
//!    which the conformance `server-stateless` checks require. (The Python
//!    SDK routes on the header alone; the TypeScript reference routes like
//!    this; we follow the body because it is the only per-request truth.)
//! 3. `MCP-Protocol-Version` names a handshake revision → **handshake** at
//!    that revision.
//! 4. No `MCP-Protocol-Version` header → **handshake**: `initialize` opens a
//!    session; anything else is a handshake-era request at the revision the
//!    session negotiated, or `2025-03-26` when unknowable.
//! 5. Anything else (a modern or unknown header value without an envelope) →
//!    **modern**, so the ladder answers with a structured -32602 / -32022
//!    instead of a legacy 400.
//!
//! An `Mcp-Session-Id` that names no live session does not by itself make a
//! request handshake-era: a modern request carrying a stray id is served
//! statelessly; a handshake-era request with an unknown id gets 404
//! from the session layer.
//!
//! ## stdio (per process; our policy)
//!
//! The first request decides the era of the whole process: modern iff it is
//! not `initialize` and carries the modern envelope key. Afterwards,
//! cross-era traffic is refused: `initialize` on a modern process → -32022
//! naming the supported versions; an enveloped request on a handshake
//! process → -32600. See [`StdioEra`].
// ERA-01…ERA-12, ERA-03, LEGACY-11, HTTP-10, LEGACY-13, ERA-04; handbook Appendix C.11

use crate::error::ErrorObject;
use crate::version::ProtocolVersion;

/// The era chosen for one HTTP request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpEra {
    /// Serve through the modern ladder, statelessly.
    Modern,
    /// Serve with handshake-era semantics.
    Handshake {
        /// The revision from the header, if it named one.
        header_version: Option<ProtocolVersion>,
    },
}

/// What the transport knows about an `Mcp-Session-Id` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionHint {
    /// No `Mcp-Session-Id` header.
    Absent,
    /// The header names a live handshake session.
    Live,
    /// The header names no live session (unknown, expired or terminated).
    Unknown,
}

/// Classifies one HTTP request (see the module docs for the reasoning).
///
/// `header_version` is the trimmed `MCP-Protocol-Version` value, if any;
/// `modern_envelope` is whether the body's `_meta` carries the modern
/// protocol-version key.
pub fn classify_http(
    session: SessionHint,
    header_version: Option<&[u8]>,
    modern_envelope: bool,
) -> HttpEra {
    if session == SessionHint::Live {
        let v = header_version.and_then(parse_version);
        return HttpEra::Handshake {
            header_version: v.filter(|v| !v.is_modern()),
        };
    }
    if modern_envelope {
        return HttpEra::Modern;
    }
    match header_version {
        None => HttpEra::Handshake {
            header_version: None,
        },
        Some(raw) => match parse_version(raw) {
            Some(v) if !v.is_modern() => HttpEra::Handshake {
                header_version: Some(v),
            },
            _ => HttpEra::Modern,
        },
    }
}

fn parse_version(raw: &[u8]) -> Option<ProtocolVersion> {
    std::str::from_utf8(raw)
        .ok()
        .and_then(ProtocolVersion::parse)
}

// ERA-04
/// The era a stdio process has settled into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StdioEra {
    /// No request seen yet.
    #[default]
    Undecided,
    /// Modern: every request must carry the envelope.
    Modern,
    /// Handshake era, after `initialize`.
    Handshake,
}

impl StdioEra {
    /// Admits one request, settling the era on the first one.
    ///
    /// Returns the era to serve this request with, or the error to answer
    /// with when it crosses eras. `supported` feeds the -32022 `supported`
    /// list for an `initialize` on a modern process.
    pub fn admit(
        &mut self,
        method: &str,
        modern_envelope: bool,
        initialize_version: Option<&str>,
        supported: &[ProtocolVersion],
    ) -> Result<StdioEra, ErrorObject> {
        let is_init = method == "initialize";
        match *self {
            StdioEra::Undecided => {
                *self = if !is_init && modern_envelope {
                    StdioEra::Modern
                } else {
                    StdioEra::Handshake
                };
                Ok(*self)
            }
            StdioEra::Modern if is_init => Err(ErrorObject::unsupported_version(
                initialize_version.unwrap_or(""),
                supported.iter().map(|v| v.as_str()),
            )),
            StdioEra::Handshake if modern_envelope && !is_init => {
                Err(ErrorObject::invalid_request(
                    "this connection was initialized with the handshake; modern enveloped requests are not accepted on it",
                ))
            }
            era => Ok(era),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_rules_in_order() {
        use HttpEra::*;
        use SessionHint::*;
        let hs = |v| Handshake { header_version: v };
        // 1. live session wins.
        assert_eq!(
            classify_http(Live, Some(b"2025-11-25"), true),
            hs(Some(ProtocolVersion::V2025_11_25))
        );
        assert_eq!(classify_http(Live, None, false), hs(None));
        // 2. envelope means modern, whatever the header says.
        assert_eq!(classify_http(Absent, Some(b"2025-11-25"), true), Modern);
        assert_eq!(classify_http(Unknown, None, true), Modern);
        // 3. handshake header without envelope.
        assert_eq!(
            classify_http(Absent, Some(b"2025-06-18"), false),
            hs(Some(ProtocolVersion::V2025_06_18))
        );
        assert_eq!(
            classify_http(Unknown, Some(b"2025-03-26"), false),
            hs(Some(ProtocolVersion::V2025_03_26))
        );
        // 4. no header, no envelope (e.g. initialize).
        assert_eq!(classify_http(Absent, None, false), hs(None));
        // 5. modern or unknown header without envelope → modern ladder.
        assert_eq!(classify_http(Absent, Some(b"2026-07-28"), false), Modern);
        assert_eq!(classify_http(Absent, Some(b"1999-01-01"), false), Modern);
    }

    #[test]
    fn stdio_first_request_decides() {
        let sup = [ProtocolVersion::V2026_07_28];
        let mut e = StdioEra::default();
        assert_eq!(
            e.admit("tools/list", true, None, &sup),
            Ok(StdioEra::Modern)
        );
        assert_eq!(
            e.admit("tools/call", true, None, &sup),
            Ok(StdioEra::Modern)
        );
        let err = e.admit("initialize", false, Some("2025-11-25"), &sup).err();
        assert_eq!(err.map(|e| e.code.0), Some(-32022));

        let mut e = StdioEra::default();
        assert_eq!(
            e.admit("initialize", false, Some("2025-11-25"), &sup),
            Ok(StdioEra::Handshake)
        );
        assert_eq!(
            e.admit("tools/list", false, None, &sup),
            Ok(StdioEra::Handshake)
        );
        assert_eq!(
            e.admit("tools/list", true, None, &sup)
                .err()
                .map(|e| e.code.0),
            Some(-32600)
        );

        // A non-initialize request without envelope settles handshake too.
        let mut e = StdioEra::default();
        assert_eq!(e.admit("ping", false, None, &sup), Ok(StdioEra::Handshake));
    }
}
