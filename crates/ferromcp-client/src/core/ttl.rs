//! Reading a cacheable result's `ttlMs` the lenient way: a value the typed
//! results cannot hold (negative, fractional, out of range) counts as `0`,
//! no caching, instead of making the whole result malformed.
// CACHE-07: "negative → treat as 0"; CACHE-01: ttlMs is an integer ≥ 0.

use serde_json::value::RawValue;
use serde_json::{Number, Value};

/// Only the one field; everything else is skipped without being built.
#[derive(serde::Deserialize)]
struct Probe {
    #[serde(rename = "ttlMs")]
    ttl_ms: Option<Value>,
}

/// `raw` with a `ttlMs` that is a number but not a `u64` replaced by `0`;
/// `raw` itself (not copied) otherwise, including when it is not an
/// object or has no such key (the typed decode then says what is wrong).
pub(crate) fn zero_unusable_ttl(raw: Box<RawValue>) -> Box<RawValue> {
    let unusable = match serde_json::from_str::<Probe>(raw.get()) {
        Ok(Probe {
            ttl_ms: Some(Value::Number(n)),
        }) => n.as_u64().is_none(),
        _ => false,
    };
    if !unusable {
        return raw;
    }
    let Ok(Value::Object(mut o)) = serde_json::from_str::<Value>(raw.get()) else {
        return raw;
    };
    o.insert("ttlMs".into(), Value::Number(Number::from(0u64)));
    match serde_json::value::to_raw_value(&o) {
        Ok(fixed) => fixed,
        Err(_) => raw,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferromcp_protocol::types::{ListToolsResult, ReadResourceResult};

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    // CACHE-07
    #[test]
    fn a_negative_ttl_on_a_list_page_decodes_as_zero() {
        let page = r#"{"resultType":"complete","tools":[{"name":"t","inputSchema":{"type":"object"}}],"ttlMs":-5,"cacheScope":"public"}"#;
        // The typed result alone refuses it: this is what the fix is for.
        assert!(serde_json::from_str::<ListToolsResult>(page).is_err());
        let fixed = zero_unusable_ttl(raw(page));
        let p: ListToolsResult = serde_json::from_str(fixed.get()).unwrap();
        assert_eq!(p.ttl_ms, Some(0));
        assert_eq!(p.tools.len(), 1);
        assert_eq!(p.tools[0].name, "t");
    }

    // CACHE-07
    #[test]
    fn a_fractional_or_huge_ttl_decodes_as_zero() {
        for t in ["1.5", "-0.5", "1e30"] {
            let r = format!(r#"{{"contents":[],"ttlMs":{t}}}"#);
            let fixed = zero_unusable_ttl(raw(&r));
            let p: ReadResourceResult = serde_json::from_str(fixed.get()).unwrap();
            assert_eq!(p.ttl_ms, Some(0), "ttlMs {t}");
        }
    }

    #[test]
    fn a_valid_absent_or_non_numeric_ttl_is_left_as_it_came() {
        for r in [
            r#"{"tools":[],"ttlMs":1000}"#,
            r#"{"tools":[]}"#,
            r#"{"tools":[],"ttlMs":"soon"}"#,
            r#"[1,2]"#,
        ] {
            assert_eq!(zero_unusable_ttl(raw(r)).get(), r);
        }
        // A string ttl stays malformed for the typed decode.
        assert!(serde_json::from_str::<ListToolsResult>(r#"{"tools":[],"ttlMs":"soon"}"#).is_err());
    }
}
