//! Decoding helpers for JSON objects whose shape is named by one member
//! (`type` on content blocks, `method` on input requests, `mode` on
//! elicitation params).
//!
//! serde's internally tagged enums buffer the whole object before picking a
//! variant. Here the common case is a single pass instead: when the tag is
//! the first member (which is how this crate and most SDKs write it), the
//! rest of the object is decoded straight into the variant's struct through
//! the same `MapAccess`. Only when the tag comes later is the object buffered
//! into a [`serde_json::Value`] and decoded from there.

use super::JsonObject;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

/// A string that borrows from the input when the deserializer allows it.
pub(crate) struct Str<'de>(pub(crate) Cow<'de, str>);

struct StrVisitor;

impl<'de> Visitor<'de> for StrVisitor {
    type Value = Str<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Str<'de>, E> {
        Ok(Str(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Str<'de>, E> {
        Ok(Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Str<'de>, E> {
        Ok(Str(Cow::Owned(v)))
    }
}

impl<'de> Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(StrVisitor)
    }
}

/// A type decoded from an object whose member [`Tagged::TAG`] names the shape.
pub(crate) trait Tagged: Sized {
    /// The member naming the shape.
    const TAG: &'static str;
    /// For "invalid type" messages.
    const EXPECTING: &'static str;

    /// Decodes the shape named `tag` from `rest`: the object without its tag.
    fn decode<'de, D: Deserializer<'de>>(tag: &str, rest: D) -> Result<Self, D::Error>;

    /// Decodes an object that has no tag member. Default: an error.
    fn decode_untagged<'de, D: Deserializer<'de>>(rest: D) -> Result<Self, D::Error> {
        let _ = rest;
        Err(de::Error::missing_field(Self::TAG))
    }
}

/// Deserializes a [`Tagged`] type (the body of its `Deserialize` impl).
pub(crate) fn deserialize_tagged<'de, T: Tagged, D: Deserializer<'de>>(
    d: D,
) -> Result<T, D::Error> {
    d.deserialize_map(TaggedVisitor::<T>(PhantomData))
}

struct TaggedVisitor<T>(PhantomData<T>);

impl<'de, T: Tagged> Visitor<'de> for TaggedVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let Some(first) = map.next_key::<Str<'de>>()? else {
            return T::decode_untagged(Value::Object(JsonObject::new())).map_err(de::Error::custom);
        };
        if first.0 == T::TAG {
            let tag = map.next_value::<Str<'de>>()?;
            return T::decode(&tag.0, MapAccessDeserializer::new(map));
        }
        // The tag is not first: buffer the object, then decode from the buffer.
        let mut obj = JsonObject::new();
        let v: Value = map.next_value()?;
        obj.insert(first.0.into_owned(), v);
        while let Some((k, v)) = map.next_entry::<String, Value>()? {
            obj.insert(k, v);
        }
        match obj.remove(T::TAG) {
            Some(Value::String(tag)) => {
                T::decode(&tag, Value::Object(obj)).map_err(de::Error::custom)
            }
            Some(_) => Err(de::Error::custom(format_args!(
                "`{}` must be a string",
                T::TAG
            ))),
            None => T::decode_untagged(Value::Object(obj)).map_err(de::Error::custom),
        }
    }
}

/// Decodes the rest of an object of unknown shape and puts its tag back, so
/// the object is kept verbatim.
pub(crate) fn keep_unknown<'de, D: Deserializer<'de>>(
    tag_member: &str,
    tag: &str,
    rest: D,
) -> Result<JsonObject, D::Error> {
    let mut obj = JsonObject::deserialize(rest)?;
    obj.insert(tag_member.to_owned(), Value::String(tag.to_owned()));
    Ok(obj)
}

/// Declares a unit struct that is always written as one constant string and
/// only accepts that string when read (`"type": "object"` and the like).
macro_rules! const_str {
    ($(#[$doc:meta])* $name:ident = $value:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name;

        impl $name {
            /// The constant wire string.
            pub const VALUE: &'static str = $value;
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str($value)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = $crate::types::tagged::Str::deserialize(d)?;
                if s.0 == $value {
                    Ok($name)
                } else {
                    Err(serde::de::Error::invalid_value(
                        serde::de::Unexpected::Str(&s.0),
                        &concat!("\"", $value, "\""),
                    ))
                }
            }
        }
    };
}

pub(crate) use const_str;
