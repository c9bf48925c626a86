//! W3C Trace Context (`traceparent`) parsing and formatting: a small pure
//! module, no I/O and no OpenTelemetry dependency.
//!
//! MCP carries the trace context in a request's `_meta`
//! ([`crate::meta::TRACEPARENT`], [`crate::meta::TRACESTATE`]). A server
//! continues a valid `traceparent` (its trace id becomes the request span's
//! trace id, its parent id the span's parent); an invalid one is ignored,
//! never an error. See <https://www.w3.org/TR/trace-context/#traceparent-header>.

use std::fmt;

/// A parsed `traceparent`: `version-traceid-parentid-flags`, all lowercase
/// hex.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TraceParent {
    /// The 16-byte trace id (never all zero).
    pub trace_id: [u8; 16],
    /// The 8-byte id of the parent span (never all zero).
    pub parent_id: [u8; 8],
    /// The trace flags (bit 0: sampled).
    pub flags: u8,
}

impl TraceParent {
    /// Parses a `traceparent` value; `None` when it is not valid.
    ///
    /// Version `00` must be exactly 55 characters. A higher version (other
    /// than the invalid `ff`) may carry more fields after a `-`, which are
    /// ignored, as the specification asks of a version-00 parser.
    pub fn parse(s: &str) -> Option<Self> {
        let b = s.as_bytes();
        if b.len() < 55 {
            return None;
        }
        let version = hex_byte(&b[0..2])?;
        if version == 0xff || (version == 0 && b.len() != 55) {
            return None;
        }
        if b.len() > 55 && b[55] != b'-' {
            return None;
        }
        if b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
            return None;
        }
        let mut trace_id = [0u8; 16];
        for (i, out) in trace_id.iter_mut().enumerate() {
            *out = hex_byte(&b[3 + 2 * i..5 + 2 * i])?;
        }
        let mut parent_id = [0u8; 8];
        for (i, out) in parent_id.iter_mut().enumerate() {
            *out = hex_byte(&b[36 + 2 * i..38 + 2 * i])?;
        }
        let flags = hex_byte(&b[53..55])?;
        if trace_id == [0; 16] || parent_id == [0; 8] {
            return None;
        }
        Some(Self {
            trace_id,
            parent_id,
            flags,
        })
    }

    /// Whether the caller sampled the trace (flag bit 0).
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }

    /// The trace id as 32 lowercase hex characters.
    pub fn trace_id_hex(&self) -> String {
        hex(&self.trace_id)
    }

    /// The parent span id as 16 lowercase hex characters.
    pub fn parent_id_hex(&self) -> String {
        hex(&self.parent_id)
    }

    /// The same trace with a new parent (the caller's own span id), for
    /// propagating onwards.
    pub fn with_parent(mut self, parent_id: [u8; 8]) -> Self {
        self.parent_id = parent_id;
        self
    }
}

/// Formats as a version-00 `traceparent`.
impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("00-")?;
        write_hex(f, &self.trace_id)?;
        f.write_str("-")?;
        write_hex(f, &self.parent_id)?;
        write!(f, "-{:02x}", self.flags)
    }
}

/// Whether `s` is an acceptable `tracestate` to pass on: at most 512
/// characters, printable ASCII, and not empty. (Members are not parsed;
/// a vendor's entries are opaque to MCP.)
pub fn tracestate_is_valid(s: &str) -> bool {
    !s.is_empty() && s.len() <= 512 && s.bytes().all(|c| (0x20..0x7f).contains(&c))
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

fn hex_byte(two: &[u8]) -> Option<u8> {
    match two {
        [h, l] => Some(hex_digit(*h)? << 4 | hex_digit(*l)?),
        _ => None,
    }
}

fn write_hex(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    for b in bytes {
        write!(f, "{b:02x}")?;
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    use fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SAMPLE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn parses_the_specification_example() {
        let Some(t) = TraceParent::parse(SAMPLE) else {
            panic!("the W3C example must parse");
        };
        assert_eq!(t.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(t.parent_id_hex(), "00f067aa0ba902b7");
        assert!(t.sampled());
        assert_eq!(t.to_string(), SAMPLE);
    }

    #[test]
    fn rejects_invalid_values() {
        for bad in [
            "",
            "00-abc-def-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "0é-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_later_version_may_carry_more_fields() {
        let v = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future";
        assert!(TraceParent::parse(v).is_some());
        let v = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x";
        assert!(TraceParent::parse(v).is_none());
    }

    #[test]
    fn tracestate_rules() {
        assert!(tracestate_is_valid(
            "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
        ));
        assert!(!tracestate_is_valid(""));
        assert!(!tracestate_is_valid("a=\n"));
        assert!(!tracestate_is_valid(&"a".repeat(513)));
    }

    proptest! {
        #[test]
        fn format_then_parse_round_trips(
            trace_id in any::<[u8; 16]>(),
            parent_id in any::<[u8; 8]>(),
            flags in any::<u8>(),
        ) {
            let t = TraceParent { trace_id, parent_id, flags };
            let parsed = TraceParent::parse(&t.to_string());
            if trace_id == [0; 16] || parent_id == [0; 8] {
                prop_assert_eq!(parsed, None);
            } else {
                prop_assert_eq!(parsed, Some(t));
            }
        }

        #[test]
        fn parse_never_panics_and_accepts_only_what_it_formats(s in "\\PC{0,80}") {
            if let Some(t) = TraceParent::parse(&s) {
                if s.len() == 55 {
                    prop_assert_eq!(t.to_string(), s);
                }
            }
        }

        #[test]
        fn parse_never_panics_on_near_misses(
            s in "[0-9a-fA-F-]{53,57}",
        ) {
            let _ = TraceParent::parse(&s);
        }
    }
}
