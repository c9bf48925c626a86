//! Property tests for the `host[:port]` parser behind the Host/Origin
//! checks and the loopback exceptions.
// SEC-01, SEC-04, LADDER-01, AUTH-28

use ferromcp_protocol::authority::{Authority, AuthorityError};
use proptest::prelude::*;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// DNS-style names, mixed case, sometimes numeric labels.
fn name() -> impl Strategy<Value = String> {
    proptest::collection::vec("[a-zA-Z0-9]([a-zA-Z0-9-]{0,8}[a-zA-Z0-9])?", 1..4)
        .prop_map(|labels| labels.join("."))
}

/// A host as written in an authority, with the address it denotes.
fn host() -> impl Strategy<Value = (String, Option<IpAddr>)> {
    prop_oneof![
        name().prop_map(|n| {
            let ip = n.parse::<Ipv4Addr>().ok().map(IpAddr::V4);
            (n, ip)
        }),
        any::<[u8; 4]>().prop_map(|o| {
            let ip = Ipv4Addr::from(o);
            (ip.to_string(), Some(IpAddr::V4(ip)))
        }),
        any::<[u16; 8]>().prop_map(|s| {
            let ip = Ipv6Addr::from(s);
            (format!("[{ip}]"), Some(IpAddr::V6(ip)))
        }),
        Just(("localhost".to_owned(), None)),
        Just(("[::1]".to_owned(), Some(IpAddr::V6(Ipv6Addr::LOCALHOST)))),
    ]
}

fn text(host: &str, port: Option<u16>) -> String {
    match port {
        Some(p) => format!("{host}:{p}"),
        None => host.to_owned(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn never_panics_on_arbitrary_input(bytes in proptest::collection::vec(any::<u8>(), 0..64),
                                       s in "\\PC{0,40}") {
        let _ = Authority::parse_bytes(&bytes);
        let _ = Authority::parse(&s);
        let _ = Authority::from_url(&s);
        if let Ok(a) = Authority::parse(&s) {
            // What is accepted is ASCII, has no userinfo and a host.
            prop_assert!(s.is_ascii() && !s.contains('@') && !a.host().is_empty());
        }
    }

    #[test]
    fn round_trips((h, ip) in host(), port in proptest::option::of(any::<u16>())) {
        let s = text(&h, port);
        let a = Authority::parse(&s);
        prop_assert!(a.is_ok(), "{s}: {a:?}");
        if let Ok(a) = a {
            prop_assert_eq!(a.host(), h.as_str());
            prop_assert_eq!(a.port(), port);
            prop_assert_eq!(a.ip(), ip);
            prop_assert_eq!(a.to_string(), s.clone());
            let url = format!("https://{s}/p?q#f");
            prop_assert_eq!(Authority::from_url(&url), Ok(a));
            // The same parse as the `http` crate, wherever both accept.
            let theirs: Result<http::uri::Authority, _> = s.parse();
            prop_assert!(theirs.is_ok(), "{s}");
            if let Ok(t) = theirs {
                prop_assert_eq!(t.host(), a.host());
                prop_assert_eq!(t.port_u16(), a.port());
            }
        }
    }

    #[test]
    fn ipv6_needs_brackets(seg in any::<[u16; 8]>(), port in any::<u16>()) {
        let ip = Ipv6Addr::from(seg);
        let (bare, bare_port) = (ip.to_string(), format!("{ip}:{port}"));
        prop_assert_eq!(Authority::parse(&bare), Err(AuthorityError::BadHost));
        prop_assert_eq!(Authority::parse(&bare_port), Err(AuthorityError::BadHost));
        let (open, close) = (format!("[{ip}"), format!("{ip}]"));
        prop_assert!(Authority::parse(&open).is_err(), "{}", open);
        prop_assert!(Authority::parse(&close).is_err(), "{}", close);
        let bracketed = format!("[{ip}]:{port}");
        let a = Authority::parse(&bracketed);
        prop_assert_eq!(a.map(|a| (a.ip(), a.port())), Ok((Some(IpAddr::V6(ip)), Some(port))));
    }

    #[test]
    fn ports_out_of_range_or_not_digits_are_refused((h, _) in host(),
                                                    big in 65_536u64..u64::MAX,
                                                    junk in "[^0-9/?#@]{1,4}") {
        let (big, empty) = (format!("{h}:{big}"), format!("{h}:"));
        prop_assert_eq!(Authority::parse(&big), Err(AuthorityError::BadPort));
        prop_assert_eq!(Authority::parse(&empty), Err(AuthorityError::BadPort));
        let (junk, plus) = (format!("{h}:{junk}"), format!("{h}:+1"));
        prop_assert!(Authority::parse(&junk).is_err(), "{}", junk);
        prop_assert!(Authority::parse(&plus).is_err(), "{}", plus);
    }

    #[test]
    fn case_does_not_matter((h, _) in host(), port in proptest::option::of(any::<u16>())) {
        let s = text(&h, port);
        let (lower, upper) = (s.to_ascii_lowercase(), s.to_ascii_uppercase());
        let (l, u) = (Authority::parse(&lower), Authority::parse(&upper));
        prop_assert!(l.is_ok() && u.is_ok(), "{s}");
        if let (Ok(l), Ok(u)) = (l, u) {
            prop_assert!(l.host_eq(u.host()));
            prop_assert_eq!(l.is_loopback(), u.is_loopback());
            prop_assert_eq!(l.port(), u.port());
        }
    }

    #[test]
    fn a_trailing_dot_or_a_suffix_is_another_host(n in name(), tail in name()) {
        let dotted = format!("{n}.");
        prop_assert!(Authority::parse(&dotted).is_ok_and(|a| !a.host_eq(&n)), "{dotted}");
        for s in [dotted.clone(), format!("localhost.{tail}"), format!("127.0.0.1.{tail}"),
                  format!("{tail}.localhost"), "localhost.".to_owned()] {
            prop_assert!(Authority::parse(&s).is_ok_and(|a| !a.is_loopback()), "{s}");
        }
    }

    #[test]
    fn userinfo_is_never_skipped((h, _) in host(), user in "[a-zA-Z0-9:.]{0,8}") {
        let s = format!("{user}@{h}");
        prop_assert_eq!(Authority::parse(&s), Err(AuthorityError::UserInfo));
        let url = format!("http://{s}/");
        prop_assert_eq!(Authority::from_url(&url), Err(AuthorityError::UserInfo));
    }

    #[test]
    fn loopback_is_exactly_127_8_ipv6_one_and_localhost((h, ip) in host()) {
        let a = Authority::parse(&h);
        prop_assert!(a.is_ok(), "{h}");
        if let Ok(a) = a {
            let expected = match ip {
                Some(IpAddr::V4(v4)) => v4.octets()[0] == 127,
                Some(IpAddr::V6(v6)) => v6 == Ipv6Addr::LOCALHOST,
                None => h.eq_ignore_ascii_case("localhost"),
            };
            prop_assert_eq!(a.is_loopback(), expected, "{}", h);
        }
    }
}
