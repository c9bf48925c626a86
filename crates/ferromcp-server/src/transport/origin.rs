//! Origin and Host validation against DNS rebinding.
//! On by default: only loopback hosts and origins are allowed
//! until the operator configures others.
// SEC-01, SEC-04, LADDER-01

use ferromcp_protocol::authority::Authority;

/// Where a request came from, as far as the browser-facing headers tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginVerdict {
    /// Allowed.
    Allowed,
    /// `Host` names a host that is not allow-listed → 421.
    BadHost,
    /// `Origin` is present and not allow-listed → 403.
    BadOrigin,
}

/// A `host[:port]` pattern; port `*` (or no port) matches any port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    host: String,
    port: Option<u16>,
}

impl HostPattern {
    /// Parses `"localhost"`, `"localhost:*"`, `"example.com:8443"`,
    /// `"[::1]:*"`. Hosts compare case-insensitively.
    pub fn parse(s: &str) -> Option<Self> {
        let (text, any_port) = match s.strip_suffix(":*") {
            Some(h) => (h, true),
            None => (s, false),
        };
        let a = Authority::parse(text).ok()?;
        if any_port && a.port().is_some() {
            return None;
        }
        Some(Self {
            host: a.host().to_ascii_lowercase(),
            port: a.port(),
        })
    }

    fn matches(&self, a: &Authority<'_>) -> bool {
        a.host_eq(&self.host) && (self.port.is_none() || self.port == a.port())
    }
}

/// The Origin/Host policy.
#[derive(Debug, Clone)]
pub struct OriginPolicy {
    hosts: Vec<HostPattern>,
    /// Allowed origins as `scheme://host[:port]` patterns (scheme, host pattern).
    origins: Vec<(String, HostPattern)>,
    enabled: bool,
}

impl Default for OriginPolicy {
    /// Loopback only: `localhost`, `127.0.0.1` and `[::1]` on any port, for
    /// both `Host` and `Origin` (http and https).
    fn default() -> Self {
        let hosts: Vec<HostPattern> = ["localhost:*", "127.0.0.1:*", "[::1]:*"]
            .iter()
            .filter_map(|h| HostPattern::parse(h))
            .collect();
        let origins = ["http", "https"]
            .iter()
            .flat_map(|s| hosts.iter().map(move |h| (s.to_string(), h.clone())))
            .collect();
        Self {
            hosts,
            origins,
            enabled: true,
        }
    }
}

impl OriginPolicy {
    /// Turns validation off entirely (for servers behind a gateway that does it).
    pub fn disabled() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }

    /// Adds an allowed `Host` pattern (e.g. `"mcp.example.com"`, `"10.0.0.5:8080"`).
    pub fn allow_host(mut self, pattern: &str) -> Self {
        if let Some(p) = HostPattern::parse(pattern) {
            self.hosts.push(p);
        }
        self
    }

    /// Adds an allowed origin (e.g. `"https://app.example.com"`, `"http://localhost:*"`).
    pub fn allow_origin(mut self, origin: &str) -> Self {
        if let Some((scheme, rest)) = origin.split_once("://") {
            if let Some(p) = HostPattern::parse(rest.trim_end_matches('/')) {
                self.origins.push((scheme.to_ascii_lowercase(), p));
            }
        }
        self
    }

    /// Checks the raw `Host` (or `:authority`) and `Origin` values.
    pub fn check(&self, host: Option<&[u8]>, origin: Option<&[u8]>) -> OriginVerdict {
        if !self.enabled {
            return OriginVerdict::Allowed;
        }
        if let Some(h) = host {
            let ok = std::str::from_utf8(h)
                .ok()
                .and_then(|h| self.host_allowed(h.trim()))
                .unwrap_or(false);
            if !ok {
                return OriginVerdict::BadHost;
            }
        }
        if let Some(o) = origin {
            let ok = std::str::from_utf8(o)
                .ok()
                .map(|o| self.origin_allowed(o.trim()))
                .unwrap_or(false);
            if !ok {
                return OriginVerdict::BadOrigin;
            }
        }
        OriginVerdict::Allowed
    }

    fn host_allowed(&self, value: &str) -> Option<bool> {
        let a = Authority::parse(value).ok()?;
        Some(self.hosts.iter().any(|p| p.matches(&a)))
    }

    fn origin_allowed(&self, value: &str) -> bool {
        let Some((scheme, rest)) = value.split_once("://") else {
            return false; // includes the opaque origin "null"
        };
        if rest.contains('/') {
            return false;
        }
        // Refuses userinfo, a bad port and anything that is no host.
        let Ok(a) = Authority::parse(rest) else {
            return false;
        };
        self.origins
            .iter()
            .any(|(s, p)| s.eq_ignore_ascii_case(scheme) && p.matches(&a))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_default() {
        let p = OriginPolicy::default();
        for h in [
            "localhost",
            "localhost:3000",
            "127.0.0.1:8080",
            "[::1]:9",
            "LOCALHOST:1",
        ] {
            assert_eq!(
                p.check(Some(h.as_bytes()), None),
                OriginVerdict::Allowed,
                "{h}"
            );
        }
        for h in [
            "evil.example.com",
            "localhost.evil.com",
            "127.0.0.1.nip.io:80",
            "localhost.",
            "localhost:abc",
            "[::1",
            "",
            "0.0.0.0:80",
            // Regression (issue 25): the old splitter took `+80` as port 80
            // (the other three were refused before too, and still are).
            "localhost:+80",
            "user@localhost",
            "[::1]:+9",
            "localhost:65536",
        ] {
            assert_eq!(
                p.check(Some(h.as_bytes()), None),
                OriginVerdict::BadHost,
                "{h}"
            );
        }
        assert_eq!(
            p.check(Some(b"localhost:1"), Some(b"http://localhost:1")),
            OriginVerdict::Allowed
        );
        assert_eq!(
            p.check(None, Some(b"https://127.0.0.1")),
            OriginVerdict::Allowed
        );
        for o in [
            "http://evil.example.com",
            "null",
            "http://localhost.evil.com",
            "file://",
            "http://user@localhost",
            "http://localhost/x",
            "ftp://localhost",
            // Regression (issue 25): the old splitter read `+80` as port 80,
            // and took a non-ASCII look-alike or a bad IPv6 literal as a host.
            "http://localhost:+80",
            "http://127.0.0.1:+1",
            "http://[::1]:+9",
        ] {
            assert_eq!(
                p.check(None, Some(o.as_bytes())),
                OriginVerdict::BadOrigin,
                "{o}"
            );
        }
        // Non-UTF-8 values are rejected, not panicked on.
        assert_eq!(p.check(Some(b"\xff"), None), OriginVerdict::BadHost);
    }

    #[test]
    fn configured_allowlist_and_disabled() {
        let p = OriginPolicy::default()
            .allow_host("mcp.example.com")
            .allow_origin("https://app.example.com");
        assert_eq!(
            p.check(
                Some(b"mcp.example.com:443"),
                Some(b"https://app.example.com")
            ),
            OriginVerdict::Allowed
        );
        assert_eq!(
            p.check(Some(b"mcp.example.com"), Some(b"http://app.example.com")),
            OriginVerdict::BadOrigin
        );
        // Regression (issue 25): patterns the old splitter accepted.
        for bad in [
            "user@localhost",
            "localhost:+80",
            "localhost:80:*",
            "",
            "[::1",
        ] {
            assert_eq!(HostPattern::parse(bad), None, "{bad:?}");
        }
        assert_eq!(
            HostPattern::parse("[::1]:*"),
            HostPattern::parse("[::1]"),
            "no port and `*` are the same pattern"
        );
        assert_eq!(
            OriginPolicy::disabled().check(Some(b"evil"), Some(b"null")),
            OriginVerdict::Allowed
        );
    }
}
