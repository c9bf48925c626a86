//! RFC 6570 URI templates: parsing any template, expanding it
//! and matching any URI against it never panics, and matching is bounded.
//!
//! Input: a template, a newline, then a URI. When the URI matches, the
//! bound variables expand back into a URI the template matches again.
// RES-04/05
#![no_main]

use libfuzzer_sys::fuzz_target;
use ferromcp_protocol::uri_template::{UriTemplate, VarValue};
use std::collections::BTreeMap;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (template, uri) = text.split_once('\n').unwrap_or((text, ""));
    let Ok(t) = UriTemplate::parse(template) else {
        return;
    };
    let _ = t.variable_names();
    let vars: BTreeMap<String, VarValue> = t
        .variable_names()
        .into_iter()
        .map(|n| (n.to_owned(), VarValue::from(uri)))
        .collect();
    let expanded = t.expand(&vars);
    let _ = t.match_uri(&expanded);
    if let Some(bound) = t.match_uri(uri) {
        let vars: BTreeMap<String, VarValue> = bound
            .into_iter()
            .map(|(k, v)| (k, VarValue::String(v)))
            .collect();
        let again = t.expand(&vars);
        let _ = t.match_uri(&again);
    }
});
