//! The one parser of `host[:port]` for the workspace: the `Host` header,
//! HTTP/2 `:authority`, the authority of an `Origin` or of a URL, and
//! configured host patterns.
//!
//! Strict by design, because every caller makes a security decision with
//! the answer (DNS-rebinding checks, the loopback exceptions of the network
//! policy):
//!
//! - no userinfo (`user@host` is refused, never skipped over);
//! - a host is a bracketed IPv6 literal (`[::1]`), or a name of RFC 3986
//!   `reg-name` characters (which covers dotted IPv4): ASCII only, no
//!   `IPvFuture`, not empty;
//! - a port, when the `:` is there, is digits whose value fits a `u16`
//!   (an empty port, a sign or `65536` are refused);
//! - hosts compare ASCII-case-insensitively, as text: `localhost.` (with a
//!   root dot) is not `localhost`.
//!
//! ```
//! use ferromcp_protocol::authority::Authority;
//!
//! let a = Authority::parse("[::1]:8080").unwrap();
//! assert_eq!(a.host(), "[::1]");
//! assert_eq!(a.port(), Some(8080));
//! assert!(a.is_loopback());
//! assert!(!Authority::parse("localhost.evil.com").unwrap().is_loopback());
//! assert!(Authority::parse("user@localhost").is_err());
//! assert!(Authority::from_url("http://LOCALHOST/mcp").unwrap().is_loopback());
//! ```

use crate::percent::{is_sub_delim, is_unreserved};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A parsed `host[:port]`, borrowing the text it was parsed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Authority<'a> {
    host: &'a str,
    ip: Option<IpAddr>,
    port: Option<u16>,
}

/// Why a value is not an acceptable authority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthorityError {
    /// The value (or its host) is empty.
    Empty,
    /// The value is not UTF-8.
    NotUtf8,
    /// The value carries userinfo (`user@host`).
    UserInfo,
    /// The host has a character a host cannot have, or an IPv6 literal is
    /// unbracketed, unclosed or not an IPv6 address.
    BadHost,
    /// The port is empty, not all digits, or larger than 65535.
    BadPort,
    /// A URL without `scheme://`.
    NotAbsoluteUrl,
}

impl fmt::Display for AuthorityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Empty => "empty host",
            Self::NotUtf8 => "authority is not UTF-8",
            Self::UserInfo => "userinfo is not allowed in an authority",
            Self::BadHost => "invalid host",
            Self::BadPort => "invalid port",
            Self::NotAbsoluteUrl => "not an absolute URL (scheme://authority)",
        })
    }
}

impl std::error::Error for AuthorityError {}

impl<'a> Authority<'a> {
    /// Parses `host[:port]` (a `Host` value, an `:authority`, the part of
    /// an `Origin` after `scheme://`). Surrounding whitespace is not
    /// trimmed: callers trim what their grammar allows.
    pub fn parse(s: &'a str) -> Result<Self, AuthorityError> {
        if s.is_empty() {
            return Err(AuthorityError::Empty);
        }
        if s.contains('@') {
            return Err(AuthorityError::UserInfo);
        }
        let (host, port, ip) = if let Some(inner) = s.strip_prefix('[') {
            let end = inner.find(']').ok_or(AuthorityError::BadHost)?;
            let literal = &inner[..end];
            let rest = &inner[end + 1..];
            let ip: Ipv6Addr = literal.parse().map_err(|_| AuthorityError::BadHost)?;
            let port = match rest {
                "" => None,
                _ => Some(rest.strip_prefix(':').ok_or(AuthorityError::BadHost)?),
            };
            (&s[..end + 2], port, Some(IpAddr::V6(ip)))
        } else {
            if s.bytes().filter(|b| *b == b':').count() > 1 {
                // An unbracketed IPv6 address, or two ports.
                return Err(AuthorityError::BadHost);
            }
            let (host, port) = match s.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (s, None),
            };
            if host.is_empty() {
                return Err(AuthorityError::Empty);
            }
            if !host.bytes().all(reg_name_byte) {
                return Err(AuthorityError::BadHost);
            }
            let ip = host.parse::<Ipv4Addr>().ok().map(IpAddr::V4);
            (host, port, ip)
        };
        let port = port.map(parse_port).transpose()?;
        Ok(Self { host, ip, port })
    }

    /// Parses raw header bytes (`Host`, `:authority`): UTF-8 first, then
    /// as [`Authority::parse`].
    pub fn parse_bytes(b: &'a [u8]) -> Result<Self, AuthorityError> {
        Self::parse(std::str::from_utf8(b).map_err(|_| AuthorityError::NotUtf8)?)
    }

    /// The authority of an absolute URL `scheme://authority[/?#…]`, parsed
    /// as [`Authority::parse`] (so a URL with userinfo is refused).
    pub fn from_url(url: &'a str) -> Result<Self, AuthorityError> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or(AuthorityError::NotAbsoluteUrl)?;
        let mut chars = scheme.bytes();
        let scheme_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'));
        if !scheme_ok {
            return Err(AuthorityError::NotAbsoluteUrl);
        }
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        Self::parse(&rest[..end])
    }

    /// The host as written, brackets kept for IPv6 (`[::1]`), case kept.
    pub fn host(&self) -> &'a str {
        self.host
    }

    /// The port, if one was given.
    pub fn port(&self) -> Option<u16> {
        self.port
    }

    /// The IP address when the host is an IPv4 or bracketed IPv6 literal.
    pub fn ip(&self) -> Option<IpAddr> {
        self.ip
    }

    /// Whether `other` names the same host, ASCII-case-insensitively and
    /// as text (`[::1]` is not `[0::1]`; `localhost.` is not `localhost`).
    pub fn host_eq(&self, other: &str) -> bool {
        self.host.eq_ignore_ascii_case(other)
    }

    /// Whether the host is loopback: the name `localhost` (any case), an
    /// IPv4 address in 127.0.0.0/8, or `[::1]`. Subdomains of `localhost`,
    /// a trailing root dot and IPv4-mapped IPv6 addresses are not, because
    /// nothing guarantees a resolver maps them to loopback.
    pub fn is_loopback(&self) -> bool {
        match self.ip {
            Some(ip) => ip.is_loopback(),
            None => self.host.eq_ignore_ascii_case("localhost"),
        }
    }
}

impl fmt::Display for Authority<'_> {
    /// `host[:port]`, the host as written and the port in canonical digits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.host)?;
        match self.port {
            Some(p) => write!(f, ":{p}"),
            None => Ok(()),
        }
    }
}

/// RFC 3986 `reg-name`: unreserved, `%` of a pct-encoding, sub-delims.
/// (IPv4 dotted-quads are made of these too.)
fn reg_name_byte(b: u8) -> bool {
    is_unreserved(b) || b == b'%' || is_sub_delim(b)
}

/// ASCII digits (at least one) whose value fits a `u16` (`u16::from_str`
/// alone would take a leading `+`).
fn parse_port(p: &str) -> Result<u16, AuthorityError> {
    if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err(AuthorityError::BadPort);
    }
    p.parse().map_err(|_| AuthorityError::BadPort)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hp(s: &str) -> Option<(String, Option<u16>)> {
        Authority::parse(s)
            .ok()
            .map(|a| (a.host().to_owned(), a.port()))
    }

    #[test]
    fn parses_names_ipv4_and_bracketed_ipv6() {
        assert_eq!(hp("localhost"), Some(("localhost".into(), None)));
        assert_eq!(hp("LocalHost:3000"), Some(("LocalHost".into(), Some(3000))));
        assert_eq!(hp("127.0.0.1:0"), Some(("127.0.0.1".into(), Some(0))));
        assert_eq!(hp("[::1]"), Some(("[::1]".into(), None)));
        assert_eq!(hp("[::1]:65535"), Some(("[::1]".into(), Some(65535))));
        assert_eq!(
            hp("example.com:0000080"),
            Some(("example.com".into(), Some(80)))
        );
        assert_eq!(hp("2130706433"), Some(("2130706433".into(), None)));
    }

    // SEC-04: every value below names no TCP endpoint unambiguously.
    #[test]
    fn refuses_what_is_not_host_port() {
        for (s, e) in [
            ("", AuthorityError::Empty),
            (":80", AuthorityError::Empty),
            ("user@localhost", AuthorityError::UserInfo),
            ("localhost:80@evil.com", AuthorityError::UserInfo),
            ("evil.com#@localhost", AuthorityError::UserInfo),
            ("localhost:", AuthorityError::BadPort),
            ("localhost:65536", AuthorityError::BadPort),
            ("localhost:+80", AuthorityError::BadPort),
            ("localhost:-1", AuthorityError::BadPort),
            ("localhost:8080:1", AuthorityError::BadHost),
            ("localhost:99999999999999999999", AuthorityError::BadPort),
            ("[::1]:", AuthorityError::BadPort),
            ("::1", AuthorityError::BadHost),
            ("::1:80", AuthorityError::BadHost),
            ("[::1", AuthorityError::BadHost),
            ("[]", AuthorityError::BadHost),
            ("[v1.x]", AuthorityError::BadHost),
            ("[127.0.0.1]", AuthorityError::BadHost),
            ("[::1]x", AuthorityError::BadHost),
            ("[::1]]", AuthorityError::BadHost),
            ("local host", AuthorityError::BadHost),
            ("localhost/path", AuthorityError::BadHost),
            ("lοcalhost", AuthorityError::BadHost),
            ("localhost\u{0}", AuthorityError::BadHost),
        ] {
            assert_eq!(Authority::parse(s), Err(e), "{s:?}");
        }
        assert_eq!(
            Authority::parse_bytes(b"local\xffhost"),
            Err(AuthorityError::NotUtf8)
        );
    }

    #[test]
    fn loopback_is_localhost_127_8_and_ipv6_one() {
        for s in [
            "localhost",
            "LOCALHOST:1",
            "127.0.0.1",
            "127.1.2.3:9",
            "127.255.255.255",
            "[::1]",
            "[0:0:0:0:0:0:0:1]:80",
        ] {
            assert!(Authority::parse(s).is_ok_and(|a| a.is_loopback()), "{s}");
        }
        for s in [
            "localhost.",
            "a.localhost",
            "localhost.evil.com",
            "127.0.0.1.evil.com",
            "127.0.0.1.nip.io:80",
            "128.0.0.1",
            "0.0.0.0",
            "[::]",
            "[::ffff:127.0.0.1]",
            "2130706433",
            "127.1",
            "evil.example",
        ] {
            assert!(Authority::parse(s).is_ok_and(|a| !a.is_loopback()), "{s}");
        }
    }

    #[test]
    fn authority_of_a_url() {
        let a = |u| Authority::from_url(u).map(|a| (a.host(), a.port()));
        assert_eq!(a("http://localhost/x"), Ok(("localhost", None)));
        assert_eq!(a("https://[::1]:9/?q#f"), Ok(("[::1]", Some(9))));
        assert_eq!(a("http://h:1?x"), Ok(("h", Some(1))));
        assert_eq!(a("http://h#x"), Ok(("h", None)));
        assert_eq!(a("h2c+x://h"), Ok(("h", None)));
        assert_eq!(a("http://user@localhost/"), Err(AuthorityError::UserInfo));
        assert_eq!(
            a("http://localhost\\@evil.com/"),
            Err(AuthorityError::UserInfo)
        );
        assert_eq!(a("http:///x"), Err(AuthorityError::Empty));
        assert_eq!(a("localhost:80"), Err(AuthorityError::NotAbsoluteUrl));
        assert_eq!(a("://localhost"), Err(AuthorityError::NotAbsoluteUrl));
        assert_eq!(a("1x://localhost"), Err(AuthorityError::NotAbsoluteUrl));
        assert_eq!(a("null"), Err(AuthorityError::NotAbsoluteUrl));
    }

    #[test]
    fn hosts_compare_case_insensitively_as_text() {
        let a = Authority::parse("LocalHost:1").unwrap_or_else(|e| panic!("{e}"));
        assert!(a.host_eq("localhost"));
        assert!(!a.host_eq("localhost."));
        let v6 = Authority::parse("[::A]").unwrap_or_else(|e| panic!("{e}"));
        assert!(v6.host_eq("[::a]"));
        assert!(!v6.host_eq("[0::a]"));
        assert_eq!(a.to_string(), "LocalHost:1");
    }
}
