//! Base64 (RFC 4648) for the whole crate, through the workspace's one
//! codec (`ferromcp_protocol::base64`): the unpadded URL-safe alphabet of
//! JOSE (RFC 7515 §2), PKCE (RFC 7636 §4.2) and DPoP (RFC 9449), and the
//! padded standard alphabet of HTTP Basic (RFC 7617, RFC 6749 §2.3.1).

use ferromcp_protocol::base64 as codec;

/// base64url without padding.
pub(crate) fn url_encode(bytes: impl AsRef<[u8]>) -> String {
    codec::url_encode(bytes.as_ref())
}

/// Decodes base64url without padding, strictly: the URL-safe alphabet
/// only (no `+`, `/`, `=`, whitespace), no impossible length, and zero
/// trailing bits in the last character (the canonical encoding, as
/// `jsonwebtoken` requires of the token it then verifies). `None` when
/// `s` is anything else.
pub(crate) fn url_decode(s: &str) -> Option<Vec<u8>> {
    codec::url_decode(s.as_bytes())
}

/// Standard base64 with padding (HTTP Basic credentials).
pub(crate) fn encode(bytes: impl AsRef<[u8]>) -> String {
    codec::encode(bytes.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_round_trips_every_length() {
        let data: Vec<u8> = (0..=255u8).collect();
        for n in 0..40 {
            let enc = url_encode(&data[..n]);
            assert!(!enc.contains(['=', '+', '/']), "{enc}");
            assert_eq!(enc.len(), (n * 4).div_ceil(3));
            assert_eq!(url_decode(&enc).as_deref(), Some(&data[..n]));
        }
    }

    #[test]
    fn url_decode_edge_cases() {
        assert_eq!(url_decode("eyJhIjoxfQ").as_deref(), Some(&b"{\"a\":1}"[..]));
        assert_eq!(url_decode("").as_deref(), Some(&b""[..]));
        // Bytes 0xfb 0xff: `-` and `_` where standard base64 has `+` and `/`.
        assert_eq!(url_decode("-_8").as_deref(), Some(&[0xfb, 0xff][..]));
        assert_eq!(url_encode([0xfb, 0xff]), "-_8");
        // One character cannot encode a byte.
        assert!(url_decode("a").is_none());
        assert!(url_decode("abcde").is_none());
        // The standard alphabet, padding and whitespace are refused.
        assert!(url_decode("ab+/").is_none());
        assert!(url_decode("YQ==").is_none());
        assert!(url_decode("YQ=").is_none());
        assert!(url_decode("YW Jj").is_none());
        assert!(url_decode("YWJj\n").is_none());
        assert!(url_decode("é").is_none());
        // Non-canonical: "YR" has non-zero trailing bits ("YQ" is "a").
        assert_eq!(url_decode("YQ").as_deref(), Some(&b"a"[..]));
        assert!(url_decode("YR").is_none());
    }

    #[test]
    fn standard_is_padded() {
        assert_eq!(encode(b""), "");
        assert_eq!(encode(b"a"), "YQ==");
        assert_eq!(encode(b"ab"), "YWI=");
        assert_eq!(encode(b"abc"), "YWJj");
        assert_eq!(encode([0xfb, 0xff]), "+/8=");
        // RFC 7617 §2's example.
        assert_eq!(
            encode(b"Aladdin:open sesame"),
            "QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
    }
}
