//! Reading only what the bridge needs from a JSON-RPC message, and
//! rewriting single members without touching any other byte.
//!
//! A message is parsed as a list of top-level members whose values stay
//! raw slices of the input ([`RawValue`]); the id, the method and, where a
//! feature needs it, one member of `params` are read, and everything else
//! (unknown methods, extension members, new fields) crosses unchanged.
//! Rewriting an id splices the new id over the old one's bytes.

use ferromcp_protocol::RequestId;
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// An object's members in order, values left raw.
#[derive(Debug)]
pub(crate) struct RawObject<'a> {
    members: Vec<(Cow<'a, str>, &'a RawValue)>,
}

/// A key, borrowed when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> Deserialize<'de> for RawObject<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawObject<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawObject<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some(Key(k)) = map.next_key::<Key<'de>>()? {
                    let v: &'de RawValue = map.next_value()?;
                    members.push((k, v));
                }
                Ok(RawObject { members })
            }
        }
        d.deserialize_map(V)
    }
}

impl<'a> RawObject<'a> {
    /// Parses `text` as an object; `None` if it is not one.
    pub(crate) fn parse(text: &'a str) -> Option<Self> {
        serde_json::from_str(text).ok()
    }

    /// The member called `name`; `Err` when it appears more than once (an
    /// ambiguous message is refused, never guessed at).
    pub(crate) fn get(&self, name: &str) -> Result<Option<&'a RawValue>, Duplicate> {
        let mut found = None;
        for (k, v) in &self.members {
            if k == name {
                if found.is_some() {
                    return Err(Duplicate(name.to_owned()));
                }
                found = Some(*v);
            }
        }
        Ok(found)
    }
}

/// A member that appeared twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Duplicate(pub String);

/// A JSON array's elements, left raw.
pub(crate) fn raw_array(text: &str) -> Option<Vec<&RawValue>> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<&'de RawValue>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON array")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(v) = seq.next_element::<&'de RawValue>()? {
                out.push(v);
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let v = serde::Deserializer::deserialize_seq(&mut de, V).ok()?;
    de.end().ok()?;
    Some(v)
}

/// A raw string value, unescaped; `None` if it is not a string.
pub(crate) fn raw_str(v: &RawValue) -> Option<Cow<'_, str>> {
    serde_json::from_str::<Cow<'_, str>>(v.get()).ok()
}

/// What a message is, as far as the bridge needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A request: an id and a method.
    Request {
        /// The request id.
        id: RequestId,
        /// The method.
        method: String,
    },
    /// A notification: a method and no id.
    Notification {
        /// The method.
        method: String,
    },
    /// A response: `result` or `error`, and an id (`None` for the null id
    /// of an error about an unreadable request).
    Response {
        /// The id it answers.
        id: Option<RequestId>,
    },
}

/// Why a message could not be classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalid {
    /// Not JSON at all (JSON-RPC -32700).
    Parse,
    /// JSON, but not a JSON-RPC message the bridge can route (-32600);
    /// the id is given when one could be read.
    Request(Option<RequestId>, String),
}

/// A classified message: its kind and the bytes it came in.
#[derive(Debug)]
pub struct Classified<'a> {
    text: &'a str,
    object: RawObject<'a>,
    kind: Kind,
}

fn id_of(raw: &RawValue) -> Option<RequestId> {
    let v: serde_json::Value = serde_json::from_str(raw.get()).ok()?;
    RequestId::from_value(&v)
}

/// Classifies one message, reading only `id`, `method`, `result` and
/// `error` presence.
pub fn classify(bytes: &[u8]) -> Result<Classified<'_>, Invalid> {
    let text = std::str::from_utf8(bytes).map_err(|_| Invalid::Parse)?;
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        // Batches were removed in 2025-06-18 and are refused by 2026-07-28.
        return match serde_json::from_str::<&RawValue>(text) {
            Ok(_) => Err(Invalid::Request(
                None,
                "JSON-RPC batches are not supported".to_owned(),
            )),
            Err(_) => Err(Invalid::Parse),
        };
    }
    let object = match RawObject::parse(text) {
        Some(o) => o,
        None => {
            return match serde_json::from_str::<&RawValue>(text) {
                Ok(_) => Err(Invalid::Request(
                    None,
                    "a JSON-RPC message is a JSON object".to_owned(),
                )),
                Err(_) => Err(Invalid::Parse),
            };
        }
    };
    let dup = |d: Duplicate| Invalid::Request(None, format!("member {:?} appears twice", d.0));
    let raw_id = object.get("id").map_err(dup)?;
    let id = match raw_id {
        None => None,
        Some(r) if r.get() == "null" => None,
        Some(r) => Some(id_of(r).ok_or_else(|| {
            Invalid::Request(None, "the id must be a string or an integer".to_owned())
        })?),
    };
    let method = match object.get("method").map_err(dup)? {
        None => None,
        Some(m) => Some(raw_str(m).map(Cow::into_owned).ok_or_else(|| {
            Invalid::Request(id.clone(), "the method must be a string".to_owned())
        })?),
    };
    let kind = match (method, id) {
        (Some(method), Some(id)) => Kind::Request { id, method },
        (Some(_), None) if raw_id.is_some() => {
            return Err(Invalid::Request(
                None,
                "a request id must not be null".to_owned(),
            ));
        }
        (Some(method), None) => Kind::Notification { method },
        (None, id) => {
            let has_result = object.get("result").map_err(dup)?.is_some();
            let has_error = object.get("error").map_err(dup)?.is_some();
            if has_result == has_error {
                return Err(Invalid::Request(
                    id,
                    "a response has exactly one of result and error".to_owned(),
                ));
            }
            Kind::Response { id }
        }
    };
    Ok(Classified { text, object, kind })
}

impl<'a> Classified<'a> {
    /// What the message is.
    pub fn kind(&self) -> &Kind {
        &self.kind
    }

    /// The message exactly as received.
    pub fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// A top-level member, raw (`None` when absent; duplicates of the
    /// members read here were refused by [`classify`]).
    pub(crate) fn member(&self, name: &str) -> Option<&'a RawValue> {
        self.object.get(name).ok().flatten()
    }

    /// A top-level member, raw, that must appear at most once: `Err`
    /// when it appears twice (a rewrite of one copy would leave the other,
    /// and peers disagree on which counts).
    pub(crate) fn member_once(&self, name: &str) -> Result<Option<&'a RawValue>, Duplicate> {
        self.object.get(name)
    }

    /// A member of `params`, raw.
    pub(crate) fn param(&self, name: &str) -> Option<&'a RawValue> {
        let params = self.member("params")?;
        RawObject::parse(params.get())?.get(name).ok().flatten()
    }

    /// A string member of `params` (the tool name of a `tools/call`).
    pub fn param_str(&self, name: &str) -> Option<Cow<'a, str>> {
        raw_str(self.param(name)?)
    }

    /// A string member of `params` read strictly: `params` and the
    /// member must each appear exactly once and the member must be a
    /// string. Used where a wrong reading would be a security decision
    /// (the tool filter): peers disagree on which of two duplicate keys
    /// counts, so an ambiguous message is refused, not guessed at.
    pub fn param_str_strict(&self, name: &str) -> Result<Cow<'a, str>, String> {
        let params = self
            .object
            .get("params")
            .map_err(|_| "params appears twice".to_owned())?
            .ok_or_else(|| "params is missing".to_owned())?;
        let params =
            RawObject::parse(params.get()).ok_or_else(|| "params is not an object".to_owned())?;
        let value = params
            .get(name)
            .map_err(|_| format!("params.{name} appears twice"))?
            .ok_or_else(|| format!("params.{name} is missing"))?;
        raw_str(value).ok_or_else(|| format!("params.{name} is not a string"))
    }

    /// The message with its top-level `id` replaced by `id`, all other
    /// bytes unchanged. A message without an id is returned as is.
    pub fn with_id(&self, id: &RequestId) -> Vec<u8> {
        match self.member("id") {
            Some(old) => splice(self.text, old, &id.to_value().to_string()),
            None => self.text.as_bytes().to_vec(),
        }
    }

    /// The message with a member `name` (absent so far) added first.
    pub(crate) fn insert_member(&self, name: &str, value: &str) -> Vec<u8> {
        let text = self.text;
        let Some(open) = text.find('{') else {
            return text.as_bytes().to_vec();
        };
        let empty = text[open + 1..].trim_start().starts_with('}');
        let mut out = Vec::with_capacity(text.len() + name.len() + value.len() + 4);
        out.extend_from_slice(&text.as_bytes()[..=open]);
        out.extend_from_slice(serde_json::Value::from(name).to_string().as_bytes());
        out.push(b':');
        out.extend_from_slice(value.as_bytes());
        if !empty {
            out.push(b',');
        }
        out.extend_from_slice(&text.as_bytes()[open + 1..]);
        out
    }

    /// The message with the raw value `old` (a slice of this message, from
    /// [`Classified::param`] or [`Classified::member`]) replaced by
    /// `replacement`.
    pub(crate) fn replace(&self, old: &RawValue, replacement: &str) -> Vec<u8> {
        splice(self.text, old, replacement)
    }
}

/// `text` with the bytes of `old` (a subslice of `text`) replaced. If `old`
/// were not inside `text` (it always is: raw values borrow from the input)
/// the text is rebuilt by search instead of guessed at.
fn splice(text: &str, old: &RawValue, replacement: &str) -> Vec<u8> {
    let base = text.as_ptr() as usize;
    let start = (old.get().as_ptr() as usize).wrapping_sub(base);
    let end = start.checked_add(old.get().len());
    let mut out = Vec::with_capacity(text.len() + replacement.len());
    match end {
        Some(end) if end <= text.len() && text.get(start..end) == Some(old.get()) => {
            out.extend_from_slice(&text.as_bytes()[..start]);
            out.extend_from_slice(replacement.as_bytes());
            out.extend_from_slice(&text.as_bytes()[end..]);
        }
        _ => {
            // Not reachable with borrowed raw values; keep the message intact.
            let s = text.replacen(old.get(), replacement, 1);
            out.extend_from_slice(s.as_bytes());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Classified<'_> {
        classify(s.as_bytes()).unwrap_or_else(|e| panic!("{s}: {e:?}"))
    }

    #[test]
    fn kinds() {
        assert_eq!(
            ok(r#"{"jsonrpc":"2.0","id":"1","method":"x/y"}"#).kind(),
            &Kind::Request {
                id: RequestId::string("1"),
                method: "x/y".into()
            }
        );
        assert_eq!(
            ok(r#"{"jsonrpc":"2.0","id":1,"method":"x"}"#).kind(),
            &Kind::Request {
                id: RequestId::number(1),
                method: "x".into()
            }
        );
        assert_eq!(
            ok(r#"{"jsonrpc":"2.0","method":"notifications/x"}"#).kind(),
            &Kind::Notification {
                method: "notifications/x".into()
            }
        );
        assert_eq!(
            ok(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#).kind(),
            &Kind::Response {
                id: Some(RequestId::number(7))
            }
        );
        assert_eq!(
            ok(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#).kind(),
            &Kind::Response { id: None }
        );
    }

    #[test]
    fn invalid_messages() {
        assert_eq!(classify(b"{nope").err(), Some(Invalid::Parse));
        assert!(matches!(classify(b"[1]"), Err(Invalid::Request(None, _))));
        assert!(matches!(classify(b"42"), Err(Invalid::Request(None, _))));
        assert!(matches!(
            classify(br#"{"id":1.5,"method":"x"}"#),
            Err(Invalid::Request(None, _))
        ));
        assert!(matches!(
            classify(br#"{"id":null,"method":"x"}"#),
            Err(Invalid::Request(None, _))
        ));
        assert!(matches!(
            classify(br#"{"id":1,"id":2,"method":"x"}"#),
            Err(Invalid::Request(None, _))
        ));
        assert!(matches!(
            classify(br#"{"id":1,"result":{},"error":{}}"#),
            Err(Invalid::Request(Some(_), _))
        ));
    }

    #[test]
    fn with_id_keeps_every_other_byte() {
        let s = r#"{ "jsonrpc" : "2.0", "x-ext": {"id": 9, "a":[1, 2]},"id" : "abc" , "method":"ext/unknown","params":{"z":"\u00e9"} }"#;
        let out = ok(s).with_id(&RequestId::number(42));
        let expected = s.replace(r#""id" : "abc""#, r#""id" : 42"#);
        assert_eq!(String::from_utf8_lossy(&out), expected);
        let out = ok(r#"{"id":42,"result":{"id":1}}"#).with_id(&RequestId::string("1"));
        assert_eq!(
            String::from_utf8_lossy(&out),
            r#"{"id":"1","result":{"id":1}}"#
        );
    }

    #[test]
    fn params_are_read_on_demand() {
        let c = ok(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ec\"ho","arguments":{}}}"#,
        );
        assert_eq!(c.param_str("name").as_deref(), Some("ec\"ho"));
        assert_eq!(c.param_str("missing"), None);
        assert_eq!(c.param_str_strict("name").as_deref(), Ok("ec\"ho"));
        assert!(c.param_str_strict("missing").is_err());
        let dup = ok(r#"{"id":1,"method":"tools/call","params":{"name":"a","name":"b"}}"#);
        assert!(dup.param_str_strict("name").is_err());
        let dup =
            ok(r#"{"id":1,"method":"tools/call","params":{"name":"a"},"params":{"name":"b"}}"#);
        assert!(dup.param_str_strict("name").is_err());
        let not_str = ok(r#"{"id":1,"method":"tools/call","params":{"name":7}}"#);
        assert!(not_str.param_str_strict("name").is_err());
        let c = ok(
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"1"}}"#,
        );
        let Some(raw) = c.param("requestId") else {
            panic!("no requestId")
        };
        let out = c.replace(raw, "17");
        assert_eq!(
            String::from_utf8_lossy(&out),
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":17}}"#
        );
    }

    #[test]
    fn members_can_be_added() {
        let out = ok(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).insert_member("params", "{}");
        assert_eq!(
            String::from_utf8_lossy(&out),
            r#"{"params":{},"jsonrpc":"2.0","id":1,"method":"ping"}"#
        );
    }

    #[test]
    fn raw_arrays() {
        let a = raw_array(r#"[ {"name":"a"}, 1 ,"x"]"#).unwrap_or_default();
        assert_eq!(a.len(), 3);
        assert_eq!(a[1].get(), "1");
        assert!(raw_array("{}").is_none());
    }
}
