//! Tools: `tools/list`, `tools/call`.
//!
//! ## Schemas are kept as [`JsonObject`]
//!
//! `inputSchema` / `outputSchema` are stored as an open JSON object, so every
//! keyword survives a decode/encode round trip unchanged in value: unknown
//! keywords such as `x-mcp-header`, `$defs`, `$anchor`, `$ref` (never
//! dereferenced), `$schema` and vendor extensions. What is *not*
//! kept is member order: `serde_json::Map` is sorted unless the
//! `preserve_order` feature is on, and this crate does not turn it on. JSON
//! objects are unordered (RFC 8259 §4) and JSON Schema semantics do not
//! depend on keyword order, while an object form lets the header rules walk
//! `properties` without re-parsing, so order is the one thing given up.
// TOOL-*, SCHEMA-06
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

use super::{CacheScope, ContentBlock, Cursor, Icon, InputResponses, JsonObject, Meta, ResultType};
use serde::{Deserialize, Serialize};
use serde_json::Value;

// TOOL-03
/// A tool the server offers.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    // TOOL-04
    /// Programmatic name, unique per server.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does; a hint for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons for user interfaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// JSON Schema of the arguments; `"type": "object"` at the root. Kept
    /// verbatim except for member order (see the module docs).
    pub input_schema: JsonObject,
    /// JSON Schema of `structuredContent`, if the tool returns structured output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<JsonObject>,
    // TOOL-08
    /// Untrusted behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Open metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
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
