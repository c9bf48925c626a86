//! Tools: `tools/list`, `tools/call`.
//!
//! ## Schemas are kept as [`JsonObject`]
//!
//! `inputSchema` / `outputSchema` are stored as an open JSON object, so every
//! keyword survives a decode/encode round trip unchanged in value: unknown
//! keywords such as `x-mcp-header`, `$defs`, `$anchor`, `$ref` (never
//! dereferenced), `$schema` and vendor extensions. `serde_json::Map` is
//! sorted unless the `preserve_order` feature is on, and this crate does not
//! turn it on (that would change every `Map` in the user's program). JSON
//! objects are unordered (RFC 8259 §4) and JSON Schema semantics do not
//! depend on keyword order, but a client lays out its argument fields in
//! the order of `properties`: that one order is carried next to the schema,
//! in [`Tool::property_order`], and the schema's `properties` are written in
//! it. A server deriving the schema from a Rust type fills it with the
//! struct's declaration order; a client decoding a tool fills it with the
//! wire order.
// TOOL-*, SCHEMA-06
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

use super::{
    CacheScope, ContentBlock, Cursor, Icon, InputResponses, JsonObject, Meta, OrderedMap,
    ResultType,
};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

// TOOL-03
/// A tool the server offers.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tool {
    // TOOL-04
    /// Programmatic name, unique per server.
    pub name: String,
    /// Display name.
    pub title: Option<String>,
    /// What the tool does; a hint for the model.
    pub description: Option<String>,
    /// Icons for user interfaces.
    pub icons: Option<Vec<Icon>>,
    /// JSON Schema of the arguments; `"type": "object"` at the root. Kept
    /// verbatim except for member order (see the module docs).
    pub input_schema: JsonObject,
    /// JSON Schema of `structuredContent`, if the tool returns structured output.
    pub output_schema: Option<JsonObject>,
    // TOOL-08
    /// Untrusted behaviour hints.
    pub annotations: Option<ToolAnnotations>,
    /// Open metadata.
    pub meta: Option<Meta>,
    /// The order in which the `properties` of [`Self::input_schema`] and
    /// [`Self::output_schema`] are written on the wire (see the module docs).
    pub property_order: PropertyOrder,
}

/// The order of the `properties` of a tool's schemas, for the user
/// interfaces that lay fields out in it (a `serde_json::Map` is sorted).
///
/// A name listed here comes first, in the listed order; members not listed
/// follow in the map's order, and a listed name the schema does not have is
/// ignored. Presentation only: two tools differing only here are equal.
#[derive(Debug, Clone, Default)]
pub struct PropertyOrder {
    /// Order of `inputSchema.properties`.
    pub input: Vec<String>,
    /// Order of `outputSchema.properties`.
    pub output: Vec<String>,
}

impl PartialEq for PropertyOrder {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// A schema written with its top-level `properties` in `order`.
struct OrderedSchema<'a> {
    schema: &'a JsonObject,
    order: &'a [String],
}

impl Serialize for OrderedSchema<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.schema.len()))?;
        for (k, v) in self.schema {
            match v {
                Value::Object(props) if k == "properties" && !self.order.is_empty() => {
                    map.serialize_entry(k, &OrderedProperties(props, self.order))?
                }
                _ => map.serialize_entry(k, v)?,
            }
        }
        map.end()
    }
}

struct OrderedProperties<'a>(&'a JsonObject, &'a [String]);

impl Serialize for OrderedProperties<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let (props, order) = (self.0, self.1);
        let mut map = s.serialize_map(Some(props.len()))?;
        let mut written = std::collections::BTreeSet::new();
        for name in order {
            if let Some(v) = props.get(name) {
                if written.insert(name.as_str()) {
                    map.serialize_entry(name, v)?;
                }
            }
        }
        for (k, v) in props {
            if !written.contains(k.as_str()) {
                map.serialize_entry(k, v)?;
            }
        }
        map.end()
    }
}

/// The wire form of [`Tool`], borrowed for writing.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolOut<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    icons: Option<&'a Vec<Icon>>,
    input_schema: OrderedSchema<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_schema: Option<OrderedSchema<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<&'a ToolAnnotations>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<&'a Meta>,
}

impl Serialize for Tool {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ToolOut {
            name: &self.name,
            title: self.title.as_ref(),
            description: self.description.as_ref(),
            icons: self.icons.as_ref(),
            input_schema: OrderedSchema {
                schema: &self.input_schema,
                order: &self.property_order.input,
            },
            output_schema: self.output_schema.as_ref().map(|schema| OrderedSchema {
                schema,
                order: &self.property_order.output,
            }),
            annotations: self.annotations.as_ref(),
            meta: self.meta.as_ref(),
        }
        .serialize(s)
    }
}

/// A schema as read from the wire, with the order of its `properties`.
struct SchemaIn {
    schema: JsonObject,
    order: Vec<String>,
}

impl<'de> Deserialize<'de> for SchemaIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Only the top-level `properties` member is read in order; the rest
        // is an ordinary map.
        let members: OrderedMap<OrderedMember> = OrderedMap::deserialize(d)?;
        let mut schema = JsonObject::new();
        let mut order = Vec::new();
        for (k, v) in members {
            let v = match v.0 {
                Some(props) if k == "properties" => {
                    order = props.keys().cloned().collect();
                    Value::Object(props.into_iter().collect())
                }
                Some(obj) => Value::Object(obj.into_iter().collect()),
                None => v.1,
            };
            schema.insert(k, v);
        }
        Ok(SchemaIn { schema, order })
    }
}

/// A member of a schema: an object read in order, or any other value.
struct OrderedMember(Option<OrderedMap<Value>>, Value);

impl<'de> Deserialize<'de> for OrderedMember {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
        use serde::de::{MapAccess, SeqAccess, Visitor};
        struct V;
        fn plain<E>(v: Value) -> Result<OrderedMember, E> {
            Ok(OrderedMember(None, v))
        }
        impl<'de> Visitor<'de> for V {
            type Value = OrderedMember;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<OrderedMember, A::Error> {
                let m = OrderedMap::<Value>::deserialize(MapAccessDeserializer::new(a))?;
                Ok(OrderedMember(Some(m), Value::Null))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, a: A) -> Result<OrderedMember, A::Error> {
                plain(Value::deserialize(SeqAccessDeserializer::new(a))?)
            }
            fn visit_bool<E>(self, v: bool) -> Result<OrderedMember, E> {
                plain(Value::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<OrderedMember, E> {
                plain(Value::from(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<OrderedMember, E> {
                plain(Value::from(v))
            }
            fn visit_f64<E>(self, v: f64) -> Result<OrderedMember, E> {
                plain(Value::from(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<OrderedMember, E> {
                plain(Value::String(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<OrderedMember, E> {
                plain(Value::String(v))
            }
            fn visit_unit<E>(self) -> Result<OrderedMember, E> {
                plain(Value::Null)
            }
            fn visit_none<E>(self) -> Result<OrderedMember, E> {
                plain(Value::Null)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<OrderedMember, D::Error> {
                OrderedMember::deserialize(d)
            }
        }
        d.deserialize_any(V)
    }
}

/// The wire form of [`Tool`], owned for reading.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolIn {
    name: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    icons: Option<Vec<Icon>>,
    input_schema: SchemaIn,
    #[serde(default)]
    output_schema: Option<SchemaIn>,
    #[serde(default)]
    annotations: Option<ToolAnnotations>,
    #[serde(rename = "_meta", default)]
    meta: Option<Meta>,
}

impl<'de> Deserialize<'de> for Tool {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let t = ToolIn::deserialize(d)?;
        let (output_schema, output_order) = match t.output_schema {
            Some(o) => (Some(o.schema), o.order),
            None => (None, Vec::new()),
        };
        Ok(Tool {
            name: t.name,
            title: t.title,
            description: t.description,
            icons: t.icons,
            input_schema: t.input_schema.schema,
            output_schema,
            annotations: t.annotations,
            meta: t.meta,
            property_order: PropertyOrder {
                input: t.input_schema.order,
                output: output_order,
            },
        })
    }
}

impl Tool {
    /// A tool with a name and an input schema.
    pub fn new(name: impl Into<String>, input_schema: JsonObject) -> Self {
        Self {
            name: name.into(),
            input_schema,
            ..Self::default()
        }
    }

    // TOOL-03
    /// `{"type":"object","additionalProperties":false}`: the recommended
    /// schema of a tool without arguments.
    pub fn no_arguments_schema() -> JsonObject {
        let mut s = JsonObject::new();
        s.insert("type".into(), Value::String("object".into()));
        s.insert("additionalProperties".into(), Value::Bool(false));
        s
    }

    // TOOL-08
    /// The name to show: `title`, else `annotations.title`, else `name`.
    pub fn display_name(&self) -> &str {
        self.title
            .as_deref()
            .or_else(|| self.annotations.as_ref().and_then(|a| a.title.as_deref()))
            .unwrap_or(&self.name)
    }
}

// TOOL-08
/// Hints about a tool's behaviour. Untrusted unless the server is.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Does not modify its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// May perform destructive updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating a call with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// Interacts with an open world of external entities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    /// No hints.
    pub fn new() -> Self {
        Self::default()
    }
    /// `readOnlyHint`.
    pub fn read_only(mut self, v: bool) -> Self {
        self.read_only_hint = Some(v);
        self
    }
    /// `destructiveHint`.
    pub fn destructive(mut self, v: bool) -> Self {
        self.destructive_hint = Some(v);
        self
    }
    /// `idempotentHint`.
    pub fn idempotent(mut self, v: bool) -> Self {
        self.idempotent_hint = Some(v);
        self
    }
    /// `openWorldHint`.
    pub fn open_world(mut self, v: bool) -> Self {
        self.open_world_hint = Some(v);
        self
    }
    /// `title`.
    pub fn title(mut self, t: impl Into<String>) -> Self {
        self.title = Some(t.into());
        self
    }
}

/// `tools/list` params.
pub type ListToolsRequestParams = super::PaginatedRequestParams;

/// `tools/list` result (cacheable, paginated).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// `resultType` (modern wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The tools on this page.
    pub tools: Vec<Tool>,
    /// Cursor of the next page; absent at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// Cache lifetime in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Cache scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Open metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

// TOOL-05
/// `tools/call` params (MRTR on the modern wire).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolRequestParams {
    /// The tool to call.
    pub name: String,
    /// Arguments, checked against the tool's `inputSchema` by the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
    // MRTR-06
    /// Answers to the input requests of a previous round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// Opaque state echoed from the previous round, byte for byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

impl CallToolRequestParams {
    /// A call of `name` with `arguments`.
    pub fn new(name: impl Into<String>, arguments: Option<JsonObject>) -> Self {
        Self {
            name: name.into(),
            arguments,
            ..Self::default()
        }
    }
}

// TOOL-05, TOOL-06
/// `tools/call` result. Execution failures are results with
/// `isError: true`, not JSON-RPC errors.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// `resultType` (modern wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Unstructured result.
    pub content: Vec<ContentBlock>,
    /// Structured result; conforms to `outputSchema` when the tool has one.
    /// Any JSON on 2026-07-28; an object on handshake revisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Open metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl CallToolResult {
    /// A successful result with `content`.
    pub fn success(content: Vec<ContentBlock>) -> Self {
        Self {
            content,
            ..Self::default()
        }
    }

    /// A failed result (`isError: true`) with `content` the model can read.
    pub fn error(content: Vec<ContentBlock>) -> Self {
        Self {
            content,
            is_error: Some(true),
            ..Self::default()
        }
    }

    /// A successful single-text result.
    pub fn text(text: impl Into<String>) -> Self {
        Self::success(vec![ContentBlock::text(text)])
    }

    // TOOL-07
    /// A structured result, with its serialization as a text block as
    /// the specification recommends.
    pub fn structured(value: Value) -> Self {
        let text = value.to_string();
        Self {
            content: vec![ContentBlock::text(text)],
            structured_content: Some(value),
            ..Self::default()
        }
    }

    /// Whether `isError` is true.
    pub fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }
}

#[cfg(test)]
mod order_tests {
    use super::*;
    use serde_json::json;

    fn props() -> JsonObject {
        match json!({"type": "object", "properties": {"zeta": {}, "alpha": {}, "mid": {}}}) {
            Value::Object(m) => m,
            _ => JsonObject::new(),
        }
    }

    // TOOL-03
    #[test]
    fn properties_are_written_in_the_carried_order() {
        let mut t = Tool::new("t", props());
        t.property_order.input = vec!["zeta".into(), "nope".into(), "alpha".into()];
        let text = serde_json::to_string(&t).unwrap_or_default();
        let at = |k: &str| text.find(&format!("\"{k}\"")).unwrap_or(usize::MAX);
        // Listed names first in the listed order, unlisted ones after.
        assert!(
            at("zeta") < at("alpha") && at("alpha") < at("mid"),
            "{text}"
        );
        assert!(
            !text.contains("nope") && !text.contains("propertyOrder"),
            "{text}"
        );
    }

    #[test]
    fn decoding_keeps_the_wire_order_of_properties() {
        // Only the order of `properties` is carried: other keywords are
        // written sorted, so the text has them sorted to round-trip.
        let text = r#"{"name":"t","inputSchema":{"properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}},"type":"object"},"outputSchema":{"properties":{"y":{},"x":{}},"type":"object"}}"#;
        let t: Tool = serde_json::from_str(text).unwrap_or_default();
        assert_eq!(t.property_order.input, ["zeta", "alpha"]);
        assert_eq!(t.property_order.output, ["y", "x"]);
        assert_eq!(t.input_schema["properties"]["alpha"]["type"], "integer");
        assert_eq!(serde_json::to_string(&t).unwrap_or_default(), text);
        // From a `Value` (sorted maps) it decodes too, in the map's order.
        let v: Value = serde_json::from_str(text).unwrap_or_default();
        let from_value: Tool = serde_json::from_value(v).unwrap_or_default();
        assert_eq!(from_value, t);
    }
}
