//! The declaration order of a struct's fields, read from its `Deserialize`
//! implementation: serde's derive hands the field names (after `rename`)
//! to `Deserializer::deserialize_struct` in the order they are written. A
//! JSON Schema built by schemars has them sorted (a `serde_json::Map` is a
//! `BTreeMap` unless `serde_json/preserve_order` is on somewhere in the
//! program), so tool schemas and forms put them back in this order.

use serde::de::{self, DeserializeOwned, Visitor};
use std::fmt;

/// Why the probe stopped: the field list it came for, or anything else.
#[derive(Debug)]
enum Probe {
    Fields(&'static [&'static str]),
    Other,
}

impl fmt::Display for Probe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("field order probe")
    }
}

impl std::error::Error for Probe {}

impl de::Error for Probe {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Probe::Other
    }
}

/// A deserializer that has no data: it records the field list of the
/// first struct asked for and fails.
struct FieldProbe;

impl<'de> de::Deserializer<'de> for FieldProbe {
    type Error = Probe;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Probe> {
        Err(Probe::Other)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Probe> {
        Err(Probe::Fields(fields))
    }

    // `#[serde(transparent)]` and newtype wrappers: look inside.
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Probe> {
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// The names of `T`'s fields in declaration order (serde's names, aliases
/// included), or an empty list when `T` is not a plain struct (a map, an
/// enum, a struct with a `#[serde(flatten)]` field).
pub(crate) fn declared_fields<T: DeserializeOwned>() -> Vec<String> {
    match T::deserialize(FieldProbe) {
        Err(Probe::Fields(fields)) => fields.iter().map(|f| (*f).to_owned()).collect(),
        _ => Vec::new(),
    }
}

/// The order to write a derived schema's `properties` in: `T`'s declared
/// fields when it has a list, else the schema's `required` array (which
/// schemars writes in declaration order), else none.
pub(crate) fn property_order(fields: Vec<String>, schema: &serde_json::Value) -> Vec<String> {
    if !fields.is_empty() {
        return fields;
    }
    schema
        .get("required")
        .and_then(serde_json::Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Signup {
        name: String,
        #[serde(rename = "yearsOld")]
        age: u8,
        newsletter: bool,
        plan: Option<String>,
    }

    #[derive(serde::Deserialize)]
    #[serde(transparent)]
    #[allow(dead_code)]
    struct Wrapped(Signup);

    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Flat {
        b: u8,
        #[serde(flatten)]
        rest: std::collections::HashMap<String, u8>,
    }

    #[test]
    fn a_struct_gives_its_fields_in_declaration_order() {
        assert_eq!(
            declared_fields::<Signup>(),
            ["name", "yearsOld", "newsletter", "plan"]
        );
        assert_eq!(declared_fields::<Wrapped>(), declared_fields::<Signup>());
    }

    #[test]
    fn what_is_not_a_plain_struct_gives_none() {
        assert!(declared_fields::<Flat>().is_empty());
        assert!(declared_fields::<std::collections::HashMap<String, u8>>().is_empty());
        assert!(declared_fields::<u8>().is_empty());
    }

    #[test]
    fn without_a_field_list_the_required_order_is_used() {
        let schema = serde_json::json!({"required": ["z", "a"]});
        assert_eq!(property_order(Vec::new(), &schema), ["z", "a"]);
        assert_eq!(property_order(vec!["q".into()], &schema), ["q"]);
    }
}
