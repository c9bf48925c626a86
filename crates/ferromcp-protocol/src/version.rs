//! Protocol revisions as an enumerated registry.
//!
//! Versions are opaque members of two sets, never ordered lexically: the
//! *handshake* era (`initialize`, sessions) and the *modern* era (stateless,
//! per-request `_meta` envelope). Unknown strings are representable so they
//! can be echoed back in a `-32022` error, but they never compare "newer".
// VER-09

use std::fmt;

/// A protocol revision this crate knows about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProtocolVersion {
    /// `2024-11-05`: only reachable through the deprecated HTTP+SSE transport.
    V2024_11_05,
    /// `2025-03-26`: handshake era, JSON-RPC batches allowed.
    V2025_03_26,
    /// `2025-06-18`: handshake era.
    V2025_06_18,
    /// `2025-11-25`: handshake era, SSE resumability, URL elicitation, icons.
    V2025_11_25,
    /// `2026-07-28`: the modern, stateless revision.
    V2026_07_28,
}

/// Which family a revision belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// `initialize` handshake, sessions, server-to-client requests.
    Handshake,
    /// Stateless requests carrying their own `_meta` envelope.
    Modern,
}

impl ProtocolVersion {
    /// Every known revision, oldest first (registry order, not a comparison).
    pub const ALL: [ProtocolVersion; 5] = [
        Self::V2024_11_05,
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
        Self::V2026_07_28,
    ];
    /// The handshake-era revisions.
    pub const HANDSHAKE: [ProtocolVersion; 4] = [
        Self::V2024_11_05,
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
    ];
    /// The modern revisions.
    pub const MODERN: [ProtocolVersion; 1] = [Self::V2026_07_28];
    /// The newest modern revision: what a client probes with first.
    pub const LATEST: ProtocolVersion = Self::V2026_07_28;
    /// The newest handshake revision: what a client offers in `initialize`.
    pub const LATEST_HANDSHAKE: ProtocolVersion = Self::V2025_11_25;

    /// The wire string, e.g. `"2026-07-28"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// Looks a wire string up in the registry; exact, case-sensitive match.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// The era this revision belongs to.
    pub const fn era(self) -> Era {
        match self {
            Self::V2026_07_28 => Era::Modern,
            _ => Era::Handshake,
        }
    }

    /// True for modern revisions.
    pub const fn is_modern(self) -> bool {
        matches!(self.era(), Era::Modern)
    }

    // BASE-09
    /// Whether this revision forbids JSON-RPC batches (2025-06-18 and later).
    pub const fn forbids_batches(self) -> bool {
        !matches!(self, Self::V2024_11_05 | Self::V2025_03_26)
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for ProtocolVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for ProtocolVersion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Self::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(format_args!("unknown protocol version {s:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_round_trips_every_version() {
        for v in ProtocolVersion::ALL {
            assert_eq!(ProtocolVersion::parse(v.as_str()), Some(v));
        }
        assert_eq!(ProtocolVersion::parse("2026-07-29"), None);
        assert_eq!(ProtocolVersion::parse("2026-07-28 "), None);
        assert_eq!(ProtocolVersion::parse("9999-99-99"), None);
    }

    #[test]
    fn eras_are_partitioned() {
        for v in ProtocolVersion::HANDSHAKE {
            assert_eq!(v.era(), Era::Handshake);
        }
        for v in ProtocolVersion::MODERN {
            assert!(v.is_modern());
        }
        assert!(!ProtocolVersion::V2025_03_26.forbids_batches());
        assert!(ProtocolVersion::V2025_06_18.forbids_batches());
    }
}
