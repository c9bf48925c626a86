//! Percent-decoding (RFC 3986 §2.1) for the workspace: strict for URIs
//! (resource URIs, URI-template variables, `docs://` paths) and lenient for
//! `application/x-www-form-urlencoded` bodies and queries.

/// Decodes `%XX` triplets strictly: `None` for a `%` not followed by two
/// hex digits or for a result that is not UTF-8. Other bytes are kept.
pub fn decode(raw: &str) -> Option<String> {
    if !raw.contains('%') {
        return Some(raw.to_owned());
    }
    let b = raw.as_bytes();
    let mut bytes = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c == b'%' {
            let hi = hex_value(*b.get(i + 1)?)?;
            let lo = hex_value(*b.get(i + 2)?)?;
            bytes.push(hi << 4 | lo);
            i += 3;
        } else {
            bytes.push(c);
            i += 1;
        }
    }
    String::from_utf8(bytes).ok()
}

/// Decodes one form component (`application/x-www-form-urlencoded`): `+`
/// is a space, `%XX` a byte, a malformed escape is kept literally and
/// invalid UTF-8 is replaced (U+FFFD). Never fails.
pub fn decode_form(raw: &str) -> String {
    let b = raw.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'+' => out.push(b' '),
            b'%' => match (
                b.get(i + 1).copied().and_then(hex_value),
                b.get(i + 2).copied().and_then(hex_value),
            ) {
                (Some(h), Some(l)) => {
                    out.push(h << 4 | l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// RFC 3986 §2.3 `unreserved`: ALPHA / DIGIT / `-` / `.` / `_` / `~`.
pub(crate) fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// RFC 3986 §2.2 `sub-delims`: `!$&'()*+,;=`.
pub(crate) fn is_sub_delim(b: u8) -> bool {
    matches!(
        b,
        b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'='
    )
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn strict() {
        assert_eq!(decode("a%20b%2Fc").as_deref(), Some("a b/c"));
        assert_eq!(decode("caf%C3%A9").as_deref(), Some("café"));
        assert_eq!(decode("a+b").as_deref(), Some("a+b"));
        // A stray or short escape, a sign where a digit belongs, bad UTF-8.
        for bad in ["%", "%2", "%zz", "%+F", "%-1", "%FF", "a%2"] {
            assert_eq!(decode(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn form() {
        assert_eq!(decode_form("a+b%21"), "a b!");
        assert_eq!(decode_form("100%"), "100%");
        assert_eq!(decode_form("%zz%4"), "%zz%4");
        assert_eq!(decode_form("%41%42"), "AB");
        assert_eq!(decode_form("%FF"), "\u{FFFD}");
    }

    proptest! {
        #[test]
        fn strict_inverts_full_encoding(s in ".{0,40}") {
            let enc: String = s.bytes().map(|b| format!("%{b:02X}")).collect();
            prop_assert_eq!(decode(&enc), Some(s.clone()));
            prop_assert_eq!(decode_form(&enc), s);
        }

        #[test]
        fn never_panic(s in "[%+0-9a-fA-Fg-z]{0,24}") {
            let _ = decode(&s);
            let _ = decode_form(&s);
        }
    }
}
