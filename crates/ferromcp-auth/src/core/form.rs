//! `application/x-www-form-urlencoded` encoding and query parsing
//! (WHATWG URL §5): the client half's authorization URLs, token requests
//! and callbacks (public as `client::form`), and the resource half's
//! token introspection requests (RFC 7662).

/// Percent-encodes `s` for a form/query component: unreserved bytes
/// (`A-Z a-z 0-9 - . _ ~`) stay, space becomes `+`, the rest `%XX`.
pub fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Encodes pairs as `k=v&k=v`.
pub fn encode(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode_component(k), encode_component(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Decodes one component: `+` is space, `%XX` a byte; malformed escapes
/// are kept literally; invalid UTF-8 is replaced.
pub fn decode_component(s: &str) -> String {
    ferromcp_protocol::percent::decode_form(s)
}

/// Parses `k=v&k=v` (no leading `?`) into decoded pairs, in order.
pub fn parse(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (decode_component(k), decode_component(v)),
            None => (decode_component(p), String::new()),
        })
        .collect()
}

/// The decoded query parameters of a URL (ignoring any fragment).
pub fn query_of(url: &str) -> Vec<(String, String)> {
    let no_fragment = url.split('#').next().unwrap_or("");
    match no_fragment.split_once('?') {
        Some((_, q)) => parse(q),
        None => Vec::new(),
    }
}

/// Appends `pairs` to `url`'s query (keeping an existing query).
pub fn append_query(url: &str, pairs: &[(String, String)]) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{}", encode(pairs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn encodes_and_decodes() {
        assert_eq!(encode_component("a b&c=d/é"), "a+b%26c%3Dd%2F%C3%A9");
        // RFC 3986 unreserved bytes stay; `*` (a sub-delimiter) is escaped.
        assert_eq!(encode_component("Az09-._~*"), "Az09-._~%2A");
        assert_eq!(decode_component("a+b%26c%3Dd%2F%C3%A9"), "a b&c=d/é");
        assert_eq!(decode_component("100%"), "100%");
        assert_eq!(decode_component("%zz%4"), "%zz%4");
        assert_eq!(
            query_of("http://x/cb?code=abc&state=s%2B1&iss=http%3A%2F%2Fas#frag"),
            vec![
                ("code".to_owned(), "abc".to_owned()),
                ("state".to_owned(), "s+1".to_owned()),
                ("iss".to_owned(), "http://as".to_owned()),
            ]
        );
        assert_eq!(
            append_query("https://as/authorize?x=1", &[("a".into(), "b c".into())]),
            "https://as/authorize?x=1&a=b+c"
        );
    }

    proptest! {
        #[test]
        fn round_trips(k in ".*", v in ".*") {
            let enc = encode(&[(k.clone(), v.clone())]);
            prop_assert_eq!(parse(&enc), vec![(k, v)]);
        }
    }
}
