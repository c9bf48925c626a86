//! SSRF guards for every URL the client flow fetches (metadata,
//! registration, token, and the headless authorization GET).
//!
//! URLs come from untrusted documents (a `WWW-Authenticate` header, PRM,
//! AS metadata), so each fetch is checked twice:
//!
//! - [`NetPolicy::check_url`] before connecting: scheme (`https`, or `http`
//!   only to loopback hosts when [`NetPolicy::allow_loopback`] is set),
//!   no userinfo, and IP-literal hosts classified;
//! - the resolver ([`GuardedResolver`]) at connect time: every address a
//!   host name resolves to is classified and forbidden ones are dropped, so
//!   a public name cannot point at `127.0.0.1` or `169.254.169.254` (DNS
//!   answers are checked where they are used, not in a separate lookup).
//!
//! Redirects are never followed (see [`super::http::HttpClient`]).
// AUTH-28

use super::error::OAuthError;
use ferromcp_protocol::authority::Authority;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};

/// What kind of destination an IP address is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddrClass {
    /// Globally routable.
    Public,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// RFC 1918, CGNAT `100.64.0.0/10`, IPv6 ULA `fc00::/7`.
    Private,
    /// `169.254.0.0/16` (cloud metadata lives here), `fe80::/10`.
    LinkLocal,
    /// Never a valid destination: unspecified, broadcast, multicast,
    /// documentation, `0.0.0.0/8`, reserved `240.0.0.0/4`.
    Forbidden,
}

/// Classifies `ip`; IPv4-mapped (`::ffff:a.b.c.d`) and NAT64
/// (`64:ff9b::a.b.c.d`) addresses are classified by their IPv4 part.
pub fn classify(ip: IpAddr) -> AddrClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return classify_v4(v4);
            }
            let seg = v6.segments();
            if seg[0] == 0x64 && seg[1] == 0xff9b && seg[2..6] == [0, 0, 0, 0] {
                let o = v6.octets();
                return classify_v4(Ipv4Addr::new(o[12], o[13], o[14], o[15]));
            }
            classify_v6(v6)
        }
    }
}

fn classify_v4(ip: Ipv4Addr) -> AddrClass {
    let o = ip.octets();
    if ip.is_loopback() {
        AddrClass::Loopback
    } else if ip.is_private() || (o[0] == 100 && (o[1] & 0xc0) == 64) {
        AddrClass::Private
    } else if ip.is_link_local() {
        AddrClass::LinkLocal
    } else if o[0] == 0
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || o[0] >= 240
        || (o[0] == 192 && o[1] == 0 && o[2] == 0)
        || (o[0] == 198 && (o[1] & 0xfe) == 18)
    {
        AddrClass::Forbidden
    } else {
        AddrClass::Public
    }
}

fn classify_v6(ip: Ipv6Addr) -> AddrClass {
    let seg = ip.segments();
    if ip.is_loopback() {
        AddrClass::Loopback
    } else if ip.is_unspecified() || ip.is_multicast() || (seg[0] == 0x2001 && seg[1] == 0x0db8) {
        AddrClass::Forbidden
    } else if (seg[0] & 0xfe00) == 0xfc00 {
        AddrClass::Private
    } else if (seg[0] & 0xffc0) == 0xfe80 {
        AddrClass::LinkLocal
    } else if seg[0] == 0 {
        // Other ::/8 forms (IPv4-compatible, reserved) are not destinations.
        AddrClass::Forbidden
    } else {
        AddrClass::Public
    }
}

/// Which destinations the client flow may contact.
///
/// The default is strict: `https` to public addresses only. Tests and local
/// development enable loopback (which also permits plain `http` to loopback
/// hosts); private networks must be enabled explicitly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NetPolicy {
    /// Allow loopback destinations, and plain `http` to them. Default off.
    pub allow_loopback: bool,
    /// Allow private (RFC 1918, CGNAT, ULA) and link-local destinations.
    /// Default off.
    pub allow_private: bool,
}

impl NetPolicy {
    /// The strict default: public `https` only.
    pub fn strict() -> Self {
        Self::default()
    }

    /// Public `https` plus anything on loopback (tests, development).
    pub fn loopback_allowed() -> Self {
        Self {
            allow_loopback: true,
            allow_private: false,
        }
    }

    /// Whether an address of `class` may be contacted.
    pub fn allows(&self, class: AddrClass) -> bool {
        match class {
            AddrClass::Public => true,
            AddrClass::Loopback => self.allow_loopback,
            AddrClass::Private | AddrClass::LinkLocal => self.allow_private,
            AddrClass::Forbidden => false,
        }
    }

    // Foreign type: the OAuth HTTP plumbing speaks `http` types, like the rest of the HTTP stack
    // (hyper, the MCP client transport).
    /// Checks `url` before any connection: absolute `https` (or `http` to a
    /// loopback host when loopback is allowed), no userinfo, no fragment,
    /// and an IP-literal host of an allowed class.
    pub fn check_url(&self, url: &str) -> Result<http::Uri, OAuthError> {
        let uri: http::Uri = url
            .parse()
            .map_err(|_| OAuthError::policy(format!("invalid URL {url:?}")))?;
        let authority = uri
            .authority()
            .ok_or_else(|| OAuthError::policy(format!("{url}: not an absolute URL")))?;
        // One parser for every authority (userinfo, port and IPv6 brackets
        // included); the `http` crate's is more lenient.
        let parsed = Authority::parse(authority.as_str())
            .map_err(|e| OAuthError::policy(format!("{url}: {e}")))?;
        let literal = parsed.ip();
        if let Some(ip) = literal {
            let class = classify(ip);
            if !self.allows(class) {
                return Err(OAuthError::policy(format!(
                    "{url}: destination {ip} ({class:?}) is not allowed"
                )));
            }
        }
        // `localhost`, 127.0.0.0/8 or `[::1]` as written: not
        // `*.localhost`, `localhost.` or an IPv4-mapped address, which a
        // resolver need not send to loopback.
        let loopback_host = parsed.is_loopback();
        match uri.scheme_str() {
            Some("https") => Ok(uri),
            Some("http") if self.allow_loopback && loopback_host => Ok(uri),
            Some("http") => Err(OAuthError::policy(format!(
                "{url}: authorization endpoints must use https (AUTH-28)"
            ))),
            _ => Err(OAuthError::policy(format!("{url}: not an http(s) URL"))),
        }
    }
}

/// A DNS resolver for hyper's connector that drops every address the
/// policy forbids (and fails when none is left).
#[derive(Debug, Clone, Copy)]
pub struct GuardedResolver {
    policy: NetPolicy,
}

impl GuardedResolver {
    /// A resolver enforcing `policy`.
    pub fn new(policy: NetPolicy) -> Self {
        Self { policy }
    }
}

type Resolved = std::vec::IntoIter<SocketAddr>;

// Foreign type: hyper-util's connector takes its DNS resolver as a tower `Service`; this is how the
// SSRF policy sees resolved addresses.
impl tower_service::Service<hyper_util::client::legacy::connect::dns::Name> for GuardedResolver {
    type Response = Resolved;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Resolved, std::io::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: hyper_util::client::legacy::connect::dns::Name) -> Self::Future {
        let policy = self.policy;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|a| policy.allows(classify(a.ip())))
                .collect();
            if addrs.is_empty() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    format!("{host} resolves to no address the network policy allows"),
                ));
            }
            Ok(addrs.into_iter())
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn classifies_address_ranges() {
        let c = |s: &str| classify(s.parse().unwrap());
        assert_eq!(c("8.8.8.8"), AddrClass::Public);
        assert_eq!(c("127.0.0.1"), AddrClass::Loopback);
        assert_eq!(c("127.8.9.10"), AddrClass::Loopback);
        assert_eq!(c("10.1.2.3"), AddrClass::Private);
        assert_eq!(c("172.16.0.1"), AddrClass::Private);
        assert_eq!(c("172.32.0.1"), AddrClass::Public);
        assert_eq!(c("192.168.1.1"), AddrClass::Private);
        assert_eq!(c("100.64.0.1"), AddrClass::Private);
        assert_eq!(c("169.254.169.254"), AddrClass::LinkLocal);
        assert_eq!(c("0.0.0.0"), AddrClass::Forbidden);
        assert_eq!(c("255.255.255.255"), AddrClass::Forbidden);
        assert_eq!(c("224.0.0.1"), AddrClass::Forbidden);
        assert_eq!(c("::1"), AddrClass::Loopback);
        assert_eq!(c("::"), AddrClass::Forbidden);
        assert_eq!(c("fd00::1"), AddrClass::Private);
        assert_eq!(c("fe80::1"), AddrClass::LinkLocal);
        assert_eq!(c("::ffff:127.0.0.1"), AddrClass::Loopback);
        assert_eq!(c("::ffff:169.254.169.254"), AddrClass::LinkLocal);
        assert_eq!(c("64:ff9b::a9fe:a9fe"), AddrClass::LinkLocal);
        assert_eq!(c("2606:4700::1111"), AddrClass::Public);
    }

    #[test]
    fn url_policy_requires_https_except_allowed_loopback() {
        // AUTH-28
        let strict = NetPolicy::strict();
        assert!(strict.check_url("https://as.example.com/token").is_ok());
        assert!(strict.check_url("http://as.example.com/token").is_err());
        assert!(strict.check_url("http://localhost:3000/x").is_err());
        assert!(strict.check_url("https://127.0.0.1/x").is_err());
        assert!(strict.check_url("https://[::1]/x").is_err());
        assert!(strict.check_url("https://169.254.169.254/latest").is_err());
        assert!(strict.check_url("https://10.0.0.1/x").is_err());
        assert!(strict.check_url("https://user@as.example.com/x").is_err());
        assert!(strict.check_url("ftp://as.example.com/x").is_err());
        assert!(strict.check_url("/relative").is_err());
        let dev = NetPolicy::loopback_allowed();
        assert!(dev.check_url("http://localhost:3000/x").is_ok());
        assert!(dev.check_url("http://127.0.0.1:3000/x").is_ok());
        assert!(dev.check_url("http://[::1]:3000/x").is_ok());
        assert!(dev.check_url("http://as.example.com/x").is_err());
        assert!(dev.check_url("https://10.0.0.1/x").is_err());
        assert!(dev.check_url("https://169.254.169.254/x").is_err());
        assert!(dev.check_url("http://LOCALHOST:3000/x").is_ok());
        // Regression (issue 25): plain `http` went to any `*.localhost`
        // name or `localhost.` (which DNS may answer with a public
        // address the resolver lets through) and to IPv4-mapped loopback.
        for u in [
            "http://evil.localhost/x",
            "http://localhost./x",
            "http://LOCALHOST.evil.example/x",
            "http://[::ffff:127.0.0.1]/x",
            "http://localhost:99999/x",
        ] {
            assert!(dev.check_url(u).is_err(), "{u}");
        }
        assert!(dev.check_url("https://user@localhost/x").is_err());
        let lan = NetPolicy {
            allow_loopback: false,
            allow_private: true,
        };
        assert!(lan.check_url("https://10.0.0.1/x").is_ok());
        assert!(lan.check_url("http://10.0.0.1/x").is_err());
    }

    #[tokio::test]
    async fn resolver_drops_forbidden_answers() {
        use tower_service::Service;
        let name: hyper_util::client::legacy::connect::dns::Name = "localhost".parse().unwrap();
        let mut strict = GuardedResolver::new(NetPolicy::strict());
        assert!(strict.call(name.clone()).await.is_err());
        let mut dev = GuardedResolver::new(NetPolicy::loopback_allowed());
        let addrs: Vec<_> = dev.call(name).await.unwrap().collect();
        assert!(!addrs.is_empty());
        assert!(addrs.iter().all(|a| a.ip().is_loopback()));
    }

    proptest! {
        #[test]
        fn strict_policy_never_allows_non_public_v4(a: u8, b: u8, c: u8, d: u8) {
            let ip = Ipv4Addr::new(a, b, c, d);
            let class = classify(IpAddr::V4(ip));
            let url = format!("https://{ip}/x");
            prop_assert_eq!(NetPolicy::strict().check_url(&url).is_ok(), class == AddrClass::Public);
            // The same address through IPv4-mapped IPv6 gets the same verdict.
            let mapped = IpAddr::V6(ip.to_ipv6_mapped());
            prop_assert_eq!(classify(mapped), class);
            if ip.is_loopback() || ip.is_private() || ip.is_link_local() {
                prop_assert_ne!(class, AddrClass::Public);
            }
        }
    }
}
