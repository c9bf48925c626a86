//! (temporary stub; replaced by the header branch)
use std::borrow::Cow;
/// stub
pub fn decode_header_value(raw: &[u8]) -> Option<Cow<'_, str>> {
    std::str::from_utf8(raw).ok().map(Cow::Borrowed)
}
