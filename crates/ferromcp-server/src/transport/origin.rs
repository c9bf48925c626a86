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

/// A parsed `Origin` header value: `scheme "://" authority`, nothing after
/// it. The opaque origin `null`, a path, userinfo or a bad port do not
/// parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WebOrigin<'a> {
    scheme: &'a str,
    authority: Authority<'a>,
}

impl<'a> WebOrigin<'a> {
    /// Parses one `Origin` value (surrounding whitespace ignored).
    pub(crate) fn parse(v: &'a [u8]) -> Option<Self> {
        let v = std::str::from_utf8(v).ok()?.trim();
        let (scheme, rest) = v.split_once("://")?;
        if rest.contains('/') {
            return None;
        }
        Some(Self {
            scheme,
            authority: Authority::parse(rest).ok()?,
        })
    }
}

/// Parses one `Host` (or `:authority`) value (surrounding whitespace
/// ignored).
pub(crate) fn parse_host(v: &[u8]) -> Option<Authority<'_>> {
    Authority::parse(std::str::from_utf8(v).ok()?.trim()).ok()
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
        self.verdict(host.map(parse_host), origin.map(WebOrigin::parse))
    }

    /// Whether the policy checks anything ([`Self::disabled`] does not).
    pub(crate) fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The verdict on parsed values: `Some(None)` is a value present that
    /// did not parse, refused like one not allow-listed.
    pub(crate) fn verdict(
        &self,
        host: Option<Option<Authority<'_>>>,
        origin: Option<Option<WebOrigin<'_>>>,
    ) -> OriginVerdict {
        if !self.enabled {
            return OriginVerdict::Allowed;
        }
        if let Some(h) = host
            && !h.is_some_and(|a| self.hosts.iter().any(|p| p.matches(&a)))
        {
            return OriginVerdict::BadHost;
        }
        if let Some(o) = origin
            && !o.is_some_and(|o| {
                self.origins
                    .iter()
                    .any(|(s, p)| s.eq_ignore_ascii_case(o.scheme) && p.matches(&o.authority))
            })
        {
            return OriginVerdict::BadOrigin;
        }
        OriginVerdict::Allowed
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
    fn values_are_parsed_once_and_a_value_that_does_not_parse_is_refused() {
        fn o(v: &str) -> Option<(String, String)> {
            WebOrigin::parse(v.as_bytes())
                .map(|o| (o.scheme.to_owned(), o.authority.host().to_owned()))
        }
        assert_eq!(
            o(" https://LocalHost:8 "),
            Some(("https".into(), "LocalHost".into()))
        );
        for bad in [
            "null",
            "http://localhost/",
            "localhost",
            "http://u@h",
            "http://h:+1",
        ] {
            assert_eq!(o(bad), None, "{bad}");
        }
        assert_eq!(parse_host(b" [::1]:9 ").map(|a| a.port()), Some(Some(9)));
        assert!(parse_host(b"\xff").is_none());
        let p = OriginPolicy::default();
        // Present but unparsable: refused like a foreign value.
        assert_eq!(p.verdict(Some(None), None), OriginVerdict::BadHost);
        assert_eq!(p.verdict(None, Some(None)), OriginVerdict::BadOrigin);
        assert_eq!(p.verdict(None, None), OriginVerdict::Allowed);
        assert_eq!(
            OriginPolicy::disabled().verdict(Some(None), Some(None)),
            OriginVerdict::Allowed
        );
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
