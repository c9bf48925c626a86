//! Elicitation: `elicitation/create`, asked through MRTR on the
//! modern wire and as a server→client request on handshake revisions, plus
//! the 2025-11-25 `notifications/elicitation/complete`.
//!
//! Requested schemas are typed by their `"type"` keyword; keywords this crate
//! does not model are kept in each schema's `other` map, and a property of an
//! unknown type is kept verbatim in [`PrimitiveSchemaDefinition::Other`].
// ELICIT-*, LEGACY-22
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

use super::tagged::{Tagged, const_str, deserialize_tagged, keep_unknown};
use super::{JsonObject, Meta, OrderedMap};
use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Number;
use std::collections::BTreeMap;
use std::fmt;

// ELICIT-02
/// `elicitation/create` params: form or URL mode, keyed on `"mode"`. A
/// missing `mode` means form; `mode` is always written.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "mode")]
pub enum ElicitRequestParams {
    /// `"form"`: structured input through a form.
    #[serde(rename = "form")]
    Form(ElicitRequestFormParams),
    /// `"url"`: an out-of-band interaction at a URL.
    #[serde(rename = "url")]
    Url(ElicitRequestUrlParams),
}

impl ElicitRequestParams {
    /// The message shown to the user.
    pub fn message(&self) -> &str {
        match self {
            Self::Form(f) => &f.message,
            Self::Url(u) => &u.message,
        }
    }
}

impl Tagged for ElicitRequestParams {
    const TAG: &'static str = "mode";
    const EXPECTING: &'static str = "elicitation params";

    fn decode<'de, D: Deserializer<'de>>(tag: &str, rest: D) -> Result<Self, D::Error> {
        match tag {
            "form" => Ok(Self::Form(ElicitRequestFormParams::deserialize(rest)?)),
            "url" => Ok(Self::Url(ElicitRequestUrlParams::deserialize(rest)?)),
            other => Err(de::Error::unknown_variant(other, &["form", "url"])),
        }
    }

    fn decode_untagged<'de, D: Deserializer<'de>>(rest: D) -> Result<Self, D::Error> {
        Ok(Self::Form(ElicitRequestFormParams::deserialize(rest)?))
    }
}

impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_tagged(d)
    }
}

// ELICIT-03
/// Form-mode params.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestFormParams {
    /// Why the input is needed.
    pub message: String,
    // ELICIT-04
    /// A flat object schema of primitive properties.
    pub requested_schema: ElicitationSchema,
}

// ELICIT-03, LEGACY-22
/// URL-mode params.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestUrlParams {
    /// Why the interaction is needed.
    pub message: String,
    /// Where the user should go.
    pub url: String,
    /// 2025-11-25 only (required there); never sent on the modern wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
}

const_str!(
    /// The constant `"object"`.
    ObjectType = "object"
);

/// The `requestedSchema` of a form elicitation.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ElicitationSchema {
    /// Dialect, if declared.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Always `"object"`.
    #[serde(rename = "type")]
    pub schema_type: ObjectType,
    /// The fields, by name, in the server's order: a client asks for them
    /// in this order, so the wire order survives decoding and encoding.
    pub properties: OrderedMap<PrimitiveSchemaDefinition>,
    /// Names of required fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
}

// ELICIT-04
/// A property schema of a form, keyed on `"type"`.
///
/// Single-select enums are string schemas with `enum` or `oneOf`;
/// multi-select enums are `"array"` schemas.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type")]
pub enum PrimitiveSchemaDefinition {
    /// `"string"`, including single-select enums.
    #[serde(rename = "string")]
    String(StringSchema),
    /// `"number"`
    #[serde(rename = "number")]
    Number(NumberSchema),
    /// `"integer"`
    #[serde(rename = "integer")]
    Integer(NumberSchema),
    /// `"boolean"`
    #[serde(rename = "boolean")]
    Boolean(BooleanSchema),
    /// `"array"`: a multi-select enum.
    #[serde(rename = "array")]
    Array(MultiSelectEnumSchema),
    /// Any other schema (unknown or missing `type`), kept verbatim.
    #[serde(untagged)]
    Other(JsonObject),
}

impl Tagged for PrimitiveSchemaDefinition {
    const TAG: &'static str = "type";
    const EXPECTING: &'static str = "a property schema object";

    fn decode<'de, D: Deserializer<'de>>(tag: &str, rest: D) -> Result<Self, D::Error> {
        Ok(match tag {
            "string" => Self::String(StringSchema::deserialize(rest)?),
            "number" => Self::Number(NumberSchema::deserialize(rest)?),
            "integer" => Self::Integer(NumberSchema::deserialize(rest)?),
            "boolean" => Self::Boolean(BooleanSchema::deserialize(rest)?),
            "array" => Self::Array(MultiSelectEnumSchema::deserialize(rest)?),
            other => Self::Other(keep_unknown(Self::TAG, other, rest)?),
        })
    }

    fn decode_untagged<'de, D: Deserializer<'de>>(rest: D) -> Result<Self, D::Error> {
        Ok(Self::Other(JsonObject::deserialize(rest)?))
    }
}

impl<'de> Deserialize<'de> for PrimitiveSchemaDefinition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_tagged(d)
    }
}

/// A string field, or a single-select enum.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StringSchema {
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// Maximum length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// `email`, `uri`, `date` or `date-time`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Pre-filled value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Single-select values without titles (`enum`).
    #[serde(rename = "enum", default, skip_serializing_if = "Option::is_none")]
    pub enum_values: Option<Vec<String>>,
    /// Single-select values with titles (`oneOf: [{const, title}]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_of: Option<Vec<EnumOption>>,
    /// Legacy display names parallel to `enum`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enum_names: Option<Vec<String>>,
    /// Other keywords, verbatim.
    #[serde(flatten)]
    pub other: JsonObject,
}

impl StringSchema {
    /// The choices of a single-select enum as `(value, title)` pairs, from
    /// `oneOf`, or from `enum` with legacy `enumNames`; `None` for a plain string.
    pub fn choices(&self) -> Option<Vec<(&str, Option<&str>)>> {
        if let Some(one_of) = &self.one_of {
            return Some(
                one_of
                    .iter()
                    .map(|o| (o.value.as_str(), Some(o.title.as_str())))
                    .collect(),
            );
        }
        let values = self.enum_values.as_ref()?;
        let names = self.enum_names.as_deref().unwrap_or_default();
        Some(
            values
                .iter()
                .enumerate()
                .map(|(i, v)| (v.as_str(), names.get(i).map(String::as_str)))
                .collect(),
        )
    }
}

/// A number or integer field.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NumberSchema {
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Inclusive minimum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<Number>,
    /// Inclusive maximum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<Number>,
    /// Pre-filled value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Number>,
    /// Other keywords, verbatim.
    #[serde(flatten)]
    pub other: JsonObject,
}

/// A boolean field.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BooleanSchema {
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Pre-filled value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
    /// Other keywords, verbatim.
    #[serde(flatten)]
    pub other: JsonObject,
}

/// A multi-select enum field (`"type": "array"`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MultiSelectEnumSchema {
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum number of selections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Maximum number of selections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The selectable values.
    pub items: MultiSelectItems,
    /// Pre-selected values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Other keywords, verbatim.
    #[serde(flatten)]
    pub other: JsonObject,
}

/// The `items` of a multi-select enum: `enum` (untitled) or `anyOf` (titled).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MultiSelectItems {
    /// `"string"` for untitled items; absent for titled ones.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub item_type: Option<String>,
    /// Untitled values.
    #[serde(rename = "enum", default, skip_serializing_if = "Option::is_none")]
    pub enum_values: Option<Vec<String>>,
    /// Titled values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub any_of: Option<Vec<EnumOption>>,
    /// Other keywords, verbatim.
    #[serde(flatten)]
    pub other: JsonObject,
}

/// One titled enum value: `{"const": value, "title": label}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct EnumOption {
    /// The value.
    #[serde(rename = "const")]
    pub value: String,
    /// The label.
    pub title: String,
}

/// The user's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Submitted (form) or consented (URL).
    Accept,
    /// Explicitly declined.
    Decline,
    /// Dismissed without a choice.
    Cancel,
}

// ELICIT-05, RESULT-05
/// The client's answer to `elicitation/create`. An input
/// response on the modern wire, so it carries no `resultType`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// Submitted values; only for `accept` in form mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<BTreeMap<String, ElicitValue>>,
    /// Open metadata (handshake revisions).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ElicitResult {
    /// An answer with `action` and no content.
    pub fn new(action: ElicitAction) -> Self {
        Self {
            action,
            content: None,
            meta: None,
        }
    }

    /// An accepted form answer with `content`.
    pub fn accept(content: BTreeMap<String, ElicitValue>) -> Self {
        Self {
            action: ElicitAction::Accept,
            content: Some(content),
            meta: None,
        }
    }

    // ELICIT-04
    /// An accepting answer from a typed value: a struct (or map) whose
    /// fields are strings, numbers, booleans or lists of strings, the
    /// shape a form's answer has. `None` fields are left out. Anything else
    /// is an error naming the field.
    pub fn accept_from<T: Serialize + ?Sized>(answer: &T) -> Result<Self, String> {
        let value = serde_json::to_value(answer).map_err(|e| e.to_string())?;
        let serde_json::Value::Object(fields) = value else {
            return Err("a form answer must serialize to a JSON object".into());
        };
        let mut content = BTreeMap::new();
        for (name, v) in fields {
            if v.is_null() {
                continue;
            }
            let v = ElicitValue::deserialize(v).map_err(|e| format!("field {name:?}: {e}"))?;
            content.insert(name, v);
        }
        Ok(Self::accept(content))
    }
}

/// One submitted form value: a string, number, boolean or list of strings.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitValue {
    /// A string.
    String(String),
    /// A number (integer or not), as sent.
    Number(Number),
    /// A boolean.
    Bool(bool),
    /// The selections of a multi-select enum.
    StringArray(Vec<String>),
}

impl From<String> for ElicitValue {
    fn from(v: String) -> Self {
        Self::String(v)
    }
}

impl From<&str> for ElicitValue {
    fn from(v: &str) -> Self {
        Self::String(v.to_owned())
    }
}

impl From<bool> for ElicitValue {
    fn from(v: bool) -> Self {
        Self::Bool(v)
    }
}

impl From<i64> for ElicitValue {
    fn from(v: i64) -> Self {
        Self::Number(v.into())
    }
}

impl From<Vec<String>> for ElicitValue {
    fn from(v: Vec<String>) -> Self {
        Self::StringArray(v)
    }
}

impl Serialize for ElicitValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::String(v) => s.serialize_str(v),
            Self::Number(v) => v.serialize(s),
            Self::Bool(v) => s.serialize_bool(*v),
            Self::StringArray(v) => v.serialize(s),
        }
    }
}

struct ElicitValueVisitor;

impl<'de> Visitor<'de> for ElicitValueVisitor {
    type Value = ElicitValue;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string, number, boolean or array of strings")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<ElicitValue, E> {
        Ok(ElicitValue::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<ElicitValue, E> {
        Ok(ElicitValue::String(v))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<ElicitValue, E> {
        Ok(ElicitValue::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ElicitValue, E> {
        Ok(ElicitValue::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ElicitValue, E> {
        Ok(ElicitValue::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<ElicitValue, E> {
        Number::from_f64(v)
            .map(ElicitValue::Number)
            .ok_or_else(|| E::custom("number must be finite"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ElicitValue, A::Error> {
        let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(s) = seq.next_element::<String>()? {
            v.push(s);
        }
        Ok(ElicitValue::StringArray(v))
    }
}

impl<'de> Deserialize<'de> for ElicitValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ElicitValueVisitor)
    }
}

// LEGACY-22
/// `notifications/elicitation/complete` params (2025-11-25 only).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationCompleteNotificationParams {
    /// The `elicitationId` of the URL elicitation that finished.
    pub elicitation_id: String,
    /// Open metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}
