//! The originating request a token is bound to, and the tags of its
//! fields.

use serde_json::Value;
use sha2::{Digest, Sha256};

pub(super) const METHOD_LABEL: &[u8] = b"mcp-rs/request-state/v1/method\0";
pub(super) const TARGET_LABEL: &[u8] = b"mcp-rs/request-state/v1/target\0";
pub(super) const PRINCIPAL_LABEL: &[u8] = b"mcp-rs/request-state/v1/principal\0";
pub(super) const AUDIENCE_LABEL: &[u8] = b"mcp-rs/request-state/v1/audience\0";

// MRTR-09, MRTR-06
/// The originating request a token is bound to.
///
/// Build it identically when sealing (from the request that returned
/// `input_required`) and when opening (from the retry, which carries the same
/// method and original params).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateBinding<'a> {
    /// The JSON-RPC method (`tools/call`, `prompts/get`, `resources/read`).
    pub method: &'a str,
    /// The tool or prompt `name`, or the resource `uri`.
    pub target: &'a str,
    /// [`arguments_digest`] of the request's `arguments`.
    pub arguments_digest: [u8; 32],
    // STATE-06
    /// The authenticated principal, when the transport has one.
    pub principal: Option<&'a str>,
}

impl<'a> StateBinding<'a> {
    /// A binding from its parts; `arguments` is digested with
    /// [`arguments_digest`].
    pub fn new(
        method: &'a str,
        target: &'a str,
        arguments: Option<&Value>,
        principal: Option<&'a str>,
    ) -> Self {
        Self {
            method,
            target,
            arguments_digest: arguments_digest(arguments),
            principal,
        }
    }

    // MRTR-09
    /// The binding of a request from its method and `params`.
    ///
    /// An allowlist per method, so a future wire field never silently joins
    /// the binding: `resources/read` binds `uri` (and no arguments); every
    /// other method binds `name` and `arguments`. A missing or non-string
    /// target binds as `""`; such a request is rejected elsewhere anyway.
    pub fn from_request(
        method: &'a str,
        params: Option<&'a Value>,
        principal: Option<&'a str>,
    ) -> Self {
        let field = |key: &str| params.and_then(|p| p.get(key));
        if method == "resources/read" {
            let target = field("uri").and_then(Value::as_str).unwrap_or("");
            Self::new(method, target, None, principal)
        } else {
            let target = field("name").and_then(Value::as_str).unwrap_or("");
            Self::new(method, target, field("arguments"), principal)
        }
    }
}

// MRTR-09
/// SHA-256 of the canonical JSON form of a request's `arguments`.
///
/// Canonical form: compact JSON with object keys sorted by their UTF-8 bytes
/// at every depth, strings escaped as `serde_json` does, numbers written as
/// `serde_json` writes the parsed number. The sorting is done here rather
/// than relying on `serde_json::Map` being a `BTreeMap`: a dependent crate
/// enabling `serde_json/preserve_order` would otherwise change the digest.
///
/// Absent arguments and JSON `null` digest the same as `{}`: all three mean
/// "no arguments" (`arguments` is optional on the wire), so a client that
/// normalises one to another on retry is not rejected. Any other value,
/// including `[]`, `""` or `false`, digests as itself.
pub fn arguments_digest(arguments: Option<&Value>) -> [u8; 32] {
    let mut canonical = Vec::new();
    match arguments {
        None | Some(Value::Null) => canonical.extend_from_slice(b"{}"),
        Some(v) => write_canonical(v, &mut canonical),
    }
    Sha256::digest(&canonical).into()
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::String(s) => write_json_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push(b'{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json_string(key, out);
                out.push(b':');
                write_canonical(item, out);
            }
            out.push(b'}');
        }
    }
}

fn write_json_string(s: &str, out: &mut Vec<u8>) {
    // Serialising a &str to JSON cannot fail; the fallback keeps this total.
    match serde_json::to_vec(s) {
        Ok(bytes) => out.extend_from_slice(&bytes),
        Err(_) => out.extend_from_slice(s.as_bytes()),
    }
}

pub(super) fn tag(label: &[u8], value: &str) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(label);
    hasher.update(value.as_bytes());
    hasher.finalize().into()
}

/// Constant-time equality of two 32-byte tags.
pub(super) fn ct_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_digest_is_canonical() {
        let x: Value = serde_json::from_str(r#"{"b":1,"a":{"d":[1,2],"c":"é"}}"#).unwrap();
        let y: Value = serde_json::from_str(r#"{"a":{"c":"é","d":[1,2]},"b":1}"#).unwrap();
        assert_eq!(arguments_digest(Some(&x)), arguments_digest(Some(&y)));

        let mut canonical = Vec::new();
        write_canonical(&x, &mut canonical);
        assert_eq!(canonical, r#"{"a":{"c":"é","d":[1,2]},"b":1}"#.as_bytes());

        let empty = arguments_digest(Some(&json!({})));
        assert_eq!(arguments_digest(None), empty);
        assert_eq!(arguments_digest(Some(&Value::Null)), empty);
        assert_ne!(arguments_digest(Some(&json!([]))), empty);
        assert_ne!(arguments_digest(Some(&json!(false))), empty);
        assert_ne!(
            arguments_digest(Some(&json!({"a": [1, 2]}))),
            arguments_digest(Some(&json!({"a": [2, 1]})))
        );
        let expected: [u8; 32] = Sha256::digest(b"{}").into();
        assert_eq!(empty, expected);
    }

    #[test]
    fn binding_from_request() {
        let params = json!({"name": "weather", "arguments": {"days": 3, "city": "Paris"},
                            "_meta": {"x": 1}, "requestState": "ignored"});
        let b = StateBinding::from_request("tools/call", Some(&params), Some("alice"));
        let args = json!({"city": "Paris", "days": 3});
        assert_eq!(
            b,
            StateBinding::new("tools/call", "weather", Some(&args), Some("alice"))
        );

        let params = json!({"uri": "file:///a.txt", "arguments": {"ignored": true}});
        let b = StateBinding::from_request("resources/read", Some(&params), None);
        assert_eq!(b.target, "file:///a.txt");
        assert_eq!(b.arguments_digest, arguments_digest(None));

        let b = StateBinding::from_request("prompts/get", None, None);
        assert_eq!(b.target, "");
    }
}
