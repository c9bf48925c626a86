//! The arguments of a call, typed once: as the `Value` the general decode
//! made, or as the JSON text the one-pass `tools/call` decode left them
//! in, which a handler built by `handler(f)` deserializes its arguments
//! type from directly. A `Value` is made of the text only where one is
//! needed (a schema the text check cannot accept, a task, a raw-result
//! handler, a `requestState` binding).

use bytes::Bytes;
use serde_json::Value;
use std::borrow::Cow;

/// A call's arguments.
pub(crate) enum Arguments {
    /// Typed by the general decode (an object; an absent one is empty).
    Value(Value),
    /// A JSON object as text, UTF-8, checked by the protocol crate to type
    /// as the object the general decode would make of it.
    Json(Bytes),
}

impl Arguments {
    /// The JSON text, when the arguments are still text.
    pub(crate) fn json(&self) -> Option<&str> {
        match self {
            Self::Value(_) => None,
            // Checked as UTF-8 JSON text when it was decoded.
            Self::Json(b) => std::str::from_utf8(b).ok(),
        }
    }

    /// The arguments as a `Value`: borrowed, or made from the text.
    pub(crate) fn value(&self) -> Cow<'_, Value> {
        match self {
            Self::Value(v) => Cow::Borrowed(v),
            Self::Json(b) => Cow::Owned(value_of(b)),
        }
    }

    /// The arguments as an owned `Value`.
    pub(crate) fn into_value(self) -> Value {
        match self {
            Self::Value(v) => v,
            json @ Self::Json(_) => json.value().into_owned(),
        }
    }
}

/// The `Value` of arguments text, which was checked to type as an object
/// when it was decoded; were it not to, the empty object stands in (and
/// an error is logged).
pub(crate) fn value_of(text: &[u8]) -> Value {
    serde_json::from_slice(text).unwrap_or_else(|e| {
        tracing::error!(target: "ferromcp_server::request", error = %e,
            "tools/call arguments checked to type no longer do");
        Value::Object(serde_json::Map::new())
    })
}

/// What a handler run under MRTR is given: arguments that can be seen as
/// a `Value` (to bind a `requestState` to them).
pub(crate) trait AsValue: Send + Sync {
    /// The arguments as a `Value`.
    fn as_value(&self) -> Cow<'_, Value>;
}

impl AsValue for Value {
    fn as_value(&self) -> Cow<'_, Value> {
        Cow::Borrowed(self)
    }
}

impl AsValue for Arguments {
    fn as_value(&self) -> Cow<'_, Value> {
        self.value()
    }
}

impl From<Value> for Arguments {
    fn from(v: Value) -> Self {
        Self::Value(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_and_value_are_the_same_arguments() {
        let text = Arguments::Json(Bytes::from_static(br#"{"b":[1,{"c":null}],"a":"\u00e9"}"#));
        let value = Arguments::from(json!({"a": "é", "b": [1, {"c": null}]}));
        assert_eq!(text.value(), value.value());
        assert_eq!(text.json(), Some(r#"{"b":[1,{"c":null}],"a":"\u00e9"}"#));
        assert_eq!(value.json(), None);
        assert_eq!(text.into_value(), value.into_value());
    }
}
