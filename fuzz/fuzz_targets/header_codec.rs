//! The header value codec.
//!
//! - decoding any byte string never panics;
//! - a decoded value re-encodes to a header that decodes to the same value;
//! - base64 decoding is canonical: whatever decodes re-encodes byte for
//!   byte (non-canonical sentinels are refused);
//! - encoding any string yields a valid field value that decodes back to it.
// HDR-06…HDR-10
#![no_main]

use libfuzzer_sys::fuzz_target;
use ferromcp_protocol::header::codec::{
    base64_decode, base64_encode, decode_header_value, encode_header_value, is_valid_field_value,
    try_decode_header_value,
};
use ferromcp_protocol::header::trim_ows;

fuzz_target!(|data: &[u8]| {
    let _ = try_decode_header_value(data);
    if let Some(v) = decode_header_value(trim_ows(data)) {
        let again = encode_header_value(&v);
        assert_eq!(decode_header_value(again.as_bytes()).as_deref(), Some(&*v));
    }
    if let Some(bytes) = base64_decode(data) {
        assert_eq!(
            base64_encode(&bytes).as_bytes(),
            data,
            "non-canonical base64 accepted"
        );
    }
    let encoded = base64_encode(data);
    assert_eq!(base64_decode(encoded.as_bytes()).as_deref(), Some(data));
    if let Ok(s) = std::str::from_utf8(data) {
        let h = encode_header_value(s);
        assert!(is_valid_field_value(h.as_bytes()), "{h:?}");
        assert_eq!(decode_header_value(h.as_bytes()).as_deref(), Some(s));
    }
});
