//! Tool results that arrive already serialized (a relay's answer from the
//! server behind it), spliced into the JSON-RPC answer without being
//! parsed into a [`CallToolResult`] and serialized again.
//!
//! Only the top-level members are looked at: the server still adds what
//! it adds to every tool result (`resultType` and the `serverInfo` entry
//! of `_meta` for 2026-07-28 clients, the removal of what an older
//! revision does not know), checks an `outputSchema`, and refuses a
//! result that is not one JSON object with distinct member names; every
//! other member, known or not, reaches the client byte for byte.

use crate::error::HandlerError;
use ferromcp_protocol::ErrorObject;
use ferromcp_protocol::types::CallToolResult;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;

/// A tool result that is already JSON text: one JSON object, known to be
/// valid JSON when constructed.
///
/// A tool built with
/// [`ToolBuilder::raw_result_handler`](crate::ToolBuilder::raw_result_handler)
/// returns it; its members reach the client as they are, unknown ones
/// included. The server does not parse it into a [`CallToolResult`]
/// except when the call runs as a task (the task store keeps typed
/// results; members the protocol crate does not know are dropped there).
/// Its size is whatever the producer allowed: a relay should bound the
/// answers it reads (the bridge does, with its message limit).
#[derive(Debug, Clone)]
pub struct RawResult(Box<RawValue>);

impl RawResult {
    /// Wraps JSON text already known to be valid; fails (an internal
    /// error for the client) unless it is a JSON object.
    pub fn new(raw: Box<RawValue>) -> Result<Self, ErrorObject> {
        if raw.get().trim_start().starts_with('{') {
            Ok(Self(raw))
        } else {
            Err(ErrorObject::internal(
                "the tool's result is not a JSON object",
            ))
        }
    }

    /// Checks that `json` is one JSON object and wraps it.
    pub fn from_string(json: String) -> Result<Self, ErrorObject> {
        let raw = RawValue::from_string(json).map_err(|e| {
            ErrorObject::internal(format!("the tool's result is not valid JSON: {e}"))
        })?;
        Self::new(raw)
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// The result typed (members the protocol crate does not know are
    /// dropped).
    pub(crate) fn typed(&self) -> Result<CallToolResult, HandlerError> {
        serde_json::from_str(self.get()).map_err(|e| {
            HandlerError::Protocol(ErrorObject::internal(format!(
                "the tool's result is malformed: {e}"
            )))
        })
    }
}

/// The top-level members of a JSON object, in order, values unparsed.
pub(crate) struct Members<'a>(pub(crate) Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'a> Members<'a> {
    /// The members of `json`; fails unless it is one JSON object whose
    /// member names are distinct (a duplicate would let the server check
    /// one value while the client reads the other).
    pub(crate) fn of(json: &'a str) -> Result<Self, ErrorObject> {
        let m: Self = serde_json::from_str(json).map_err(|e| {
            ErrorObject::internal(format!("the tool's result is not a JSON object: {e}"))
        })?;
        let names = &m.0;
        let duplicate = if names.len() <= 16 {
            names
                .iter()
                .enumerate()
                .find(|(i, (k, _))| names[..*i].iter().any(|(j, _)| j == k))
                .map(|(_, (k, _))| k)
        } else {
            let mut seen = std::collections::HashSet::with_capacity(names.len());
            names.iter().map(|(k, _)| k).find(|k| !seen.insert(*k))
        };
        if let Some(k) = duplicate {
            return Err(ErrorObject::internal(format!(
                "the tool's result has the member {k:?} twice"
            )));
        }
        Ok(m)
    }

    /// The value of member `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&'a RawValue> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }
}

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(4));
                while let Some((Key(k), v)) = map.next_entry::<Key<'de>, &'de RawValue>()? {
                    out.push((k, v));
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// A member name, borrowed unless it has escapes.
pub(crate) struct Key<'a>(pub(crate) Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// An object serialized from (name, raw value) members.
pub(crate) struct Object<'a>(pub(crate) Vec<(&'a str, &'a RawValue)>);

impl serde::Serialize for Object<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_objects_are_results() {
        assert!(RawResult::from_string(r#" {"content":[]}"#.into()).is_ok());
        for bad in ["[1]", "3", "\"x\"", "null", "{", "{\"a\":1} x", ""] {
            assert!(RawResult::from_string(bad.into()).is_err(), "{bad}");
        }
    }

    #[test]
    fn members_keep_order_and_bytes_and_refuse_duplicates() {
        let json = r#"{"z":1,"a\u0062":{"x": [1, 2]},"content":[]}"#;
        let m = Members::of(json).unwrap_or_else(|e| panic!("{e:?}"));
        let names: Vec<&str> = m.0.iter().map(|(k, _)| k.as_ref()).collect();
        assert_eq!(names, ["z", "ab", "content"]);
        assert_eq!(m.get("ab").map(RawValue::get), Some(r#"{"x": [1, 2]}"#));
        assert!(Members::of(r#"{"isError":false,"isError":true}"#).is_err());
        let many: String = (0..40).map(|i| format!("\"k{i}\":0,")).collect();
        assert!(Members::of(&format!("{{{many}\"k3\":1}}")).is_err());
        assert!(Members::of(&format!("{{{many}\"k40\":1}}")).is_ok());
    }
}
