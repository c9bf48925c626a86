//! Era and version negotiation, as pure decisions (Python's `negotiate_auto`).
//!
//! The client probes with `server/discover` at its newest modern revision:
//! a DiscoverResult listing a modern version → modern; a -32022 naming a
//! mutual modern version → one re-probe at it; a -32022 whose `supported`
//! is modern-only and disjoint → fatal; anything else (another JSON-RPC
//! error, an unparseable result, a result listing no modern version, an
//! HTTP 4xx without a JSON-RPC body, silence on stdio) → the handshake era
//! (`initialize`). The fallback never keys on one error code.
//! Connection failures propagate.
// ERA-06…ERA-11, VER-03, DISC-06, ERA-07

use crate::error::{Error, ErrorKind, Result};
use ferromcp_protocol::types::DiscoverResult;
use ferromcp_protocol::{ErrorCode, ErrorObject, ProtocolVersion};
use serde_json::value::RawValue;

/// Which era the caller wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EraPreference {
    /// Probe, fall back to the handshake era when the server is older.
    #[default]
    Auto,
    // ERA-08
    /// Modern (2026-07-28) only: a handshake-era server is an error.
    Modern,
    // VER-04, VER-03
    /// Modern without the `server/discover` probe (the probe is
    /// optional); version errors are still handled per request.
    ModernNoProbe,
    /// Skip the probe; `initialize` straight away.
    Handshake,
}

/// What to do after the probe.
#[derive(Debug)]
pub(crate) enum ProbeVerdict {
    /// Speak `version`; the server described itself.
    Modern {
        version: ProtocolVersion,
        discover: Box<DiscoverResult>,
    },
    // VER-03
    /// Probe once more at `version`.
    RetryAt(ProtocolVersion),
    /// Use the handshake era.
    Handshake,
    /// Give up.
    Fatal(Error),
}

/// The first modern version in `supported` this client speaks.
pub(crate) fn mutual_modern<'a>(
    supported: impl IntoIterator<Item = &'a str>,
) -> Option<ProtocolVersion> {
    supported
        .into_iter()
        .filter_map(ProtocolVersion::parse)
        .find(|v| v.is_modern())
}

/// `data.supported` of a -32022 error.
pub(crate) fn supported_versions(e: &ErrorObject) -> Vec<String> {
    e.data
        .as_ref()
        .and_then(|d| d.get("supported"))
        .and_then(|s| s.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Judges the outcome of a `server/discover` probe sent at `requested`.
pub(crate) fn judge_probe(
    outcome: Result<Box<RawValue>>,
    requested: ProtocolVersion,
    already_retried: bool,
) -> ProbeVerdict {
    match outcome {
        Ok(raw) => match serde_json::from_str::<DiscoverResult>(raw.get()) {
            Ok(d) => {
                let listed =
                    |v: ProtocolVersion| d.supported_versions.iter().any(|s| s == v.as_str());
                let version = if listed(requested) {
                    Some(requested)
                } else {
                    mutual_modern(d.supported_versions.iter().map(String::as_str))
                };
                match version {
                    Some(version) => ProbeVerdict::Modern {
                        version,
                        discover: Box::new(d),
                    },
                    None => ProbeVerdict::Handshake, // DISC-06
                }
            }
            Err(_) => ProbeVerdict::Handshake,
        },
        Err(e) => match e.kind() {
            ErrorKind::Protocol(obj) if obj.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION => {
                let supported = supported_versions(obj);
                if let Some(v) = mutual_modern(supported.iter().map(String::as_str)) {
                    if !already_retried {
                        return ProbeVerdict::RetryAt(v);
                    }
                }
                let handshake = supported
                    .iter()
                    .filter_map(|s| ProtocolVersion::parse(s))
                    .any(|v| !v.is_modern());
                if handshake || supported.is_empty() {
                    ProbeVerdict::Handshake
                } else {
                    ProbeVerdict::Fatal(Error::new(
                        ErrorKind::Negotiation,
                        format!(
                            "the server supports only {supported:?}, none of which this client speaks"
                        ),
                    ))
                }
            }
            ErrorKind::Protocol(_) | ErrorKind::InvalidResponse | ErrorKind::Timeout { .. } => {
                ProbeVerdict::Handshake
            }
            ErrorKind::Transport {
                status: Some(400 | 404 | 405),
            } => ProbeVerdict::Handshake,
            _ => ProbeVerdict::Fatal(e),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const V: ProtocolVersion = ProtocolVersion::V2026_07_28;

    fn ok(v: serde_json::Value) -> Result<Box<RawValue>> {
        Ok(RawValue::from_string(v.to_string()).unwrap_or_else(|_| Box::<RawValue>::default()))
    }

    fn rpc(code: i64, data: serde_json::Value) -> Result<Box<RawValue>> {
        Err(Error::protocol(
            ErrorObject::new(ErrorCode(code), "x").with_data(data),
        ))
    }

    #[test]
    fn discover_result_with_modern_version_is_modern() {
        let r = ok(
            json!({"supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{},"resultType":"complete"}),
        );
        assert!(matches!(
            judge_probe(r, V, false),
            ProbeVerdict::Modern { version: V, .. }
        ));
    }

    #[test]
    fn legacy_only_listing_or_garbage_falls_back() {
        // DISC-06
        let r = ok(json!({"supportedVersions":["2025-11-25"],"capabilities":{}}));
        assert!(matches!(judge_probe(r, V, false), ProbeVerdict::Handshake));
        assert!(matches!(
            judge_probe(ok(json!({"x":1})), V, false),
            ProbeVerdict::Handshake
        ));
    }

    #[test]
    fn unsupported_version_with_mutual_retries_once() {
        // VER-03, request-metadata scenario
        let e = || {
            rpc(
                -32022,
                json!({"supported":["2026-07-28"],"requested":"2026-07-28"}),
            )
        };
        assert!(matches!(
            judge_probe(e(), V, false),
            ProbeVerdict::RetryAt(V)
        ));
        assert!(matches!(judge_probe(e(), V, true), ProbeVerdict::Fatal(_)));
        let legacy = rpc(-32022, json!({"supported":["2025-11-25"]}));
        assert!(matches!(
            judge_probe(legacy, V, false),
            ProbeVerdict::Handshake
        ));
        let disjoint = rpc(-32022, json!({"supported":["2099-01-01"]}));
        assert!(matches!(
            judge_probe(disjoint, V, false),
            ProbeVerdict::Fatal(_)
        ));
    }

    #[test]
    fn any_other_error_falls_back_but_connection_failures_propagate() {
        // ERA-07
        for code in [-32601, -32602, -32600, -32000, -32020] {
            assert!(matches!(
                judge_probe(rpc(code, json!(null)), V, false),
                ProbeVerdict::Handshake
            ));
        }
        let bad_request = Err(Error::http_status(400, "bad"));
        assert!(matches!(
            judge_probe(bad_request, V, false),
            ProbeVerdict::Handshake
        ));
        let refused = Err(Error::transport("connection refused"));
        assert!(matches!(
            judge_probe(refused, V, false),
            ProbeVerdict::Fatal(_)
        ));
    }
}
