//! One pager for every list method: opaque cursors over a registry
//! snapshot's order.
// PAGE-01…PAGE-04

use crate::shared::Shared;
use ferromcp_protocol::ErrorObject;

impl Shared {
    pub(super) fn page_bounds(
        &self,
        len: usize,
        cursor: Option<&str>,
    ) -> Result<(usize, usize, Option<String>), ErrorObject> {
        let start = match cursor {
            None => 0,
            Some(c) => decode_cursor(c)
                .filter(|s| *s <= len)
                .ok_or_else(|| ErrorObject::invalid_params("invalid cursor"))?,
        };
        let end = match self.page_size() {
            Some(n) => (start + n).min(len),
            None => len,
        };
        let next = (end < len).then(|| encode_cursor(end));
        Ok((start, end, next))
    }

    // LEGACY-25
    /// One page of registered definitions: `item` copies a definition out
    /// (and sieves it for the request's revision).
    pub(crate) fn page<D, T>(
        &self,
        all: &[D],
        cursor: Option<&str>,
        item: impl Fn(&D) -> T,
    ) -> Result<(Vec<T>, Option<String>), ErrorObject> {
        let (start, end, next) = self.page_bounds(all.len(), cursor)?;
        let items = all.get(start..end).unwrap_or_default();
        Ok((items.iter().map(item).collect(), next))
    }
}

pub(super) fn encode_cursor(offset: usize) -> String {
    format!("c{offset:x}")
}

pub(super) fn decode_cursor(c: &str) -> Option<usize> {
    let hex = c.strip_prefix('c')?;
    if hex.is_empty() || hex.len() > 16 {
        return None;
    }
    usize::from_str_radix(hex, 16).ok()
}
