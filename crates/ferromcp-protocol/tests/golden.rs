//! Golden round trips of the typed wire model: every JSON document below
//! decodes into its type and re-encodes to the same JSON value, through both
//! the text decoder (member order as written, usually the one-pass path)
//! and the `Value` decoder (members sorted, usually the buffered path).
//!
//! Documents are modeled on the examples of the 2026-07-28 and 2025-11-25
//! specification and on `schema.ts`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests: a panic is the failure report"
)]

use ferromcp_protocol::error::ErrorCode;
use ferromcp_protocol::jsonrpc::RequestId;
use ferromcp_protocol::meta::{RequestMeta, SERVER_INFO, SUBSCRIPTION_ID};
use ferromcp_protocol::method::{
    self, ClientNotification, ClientRequest, ServerNotification, ServerRequest, WithMeta,
};
use ferromcp_protocol::types::*;
use ferromcp_protocol::version::ProtocolVersion;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::fmt::Debug;

/// JSON equality where numbers compare by value (`50` == `50.0`): fields
/// typed `f64` re-encode integers with a fraction.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// Decodes `text` as `T` (from text and from a `Value`), checks both agree,
/// re-encodes and compares with the input; returns the decoded value.
fn golden<T>(text: &str) -> T
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let expected: Value = serde_json::from_str(text).expect("golden JSON is valid");
    let from_text: T = serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("decode from text failed: {e}\n{text}"));
    let from_value: T = serde_json::from_value(expected.clone())
        .unwrap_or_else(|e| panic!("decode from value failed: {e}\n{text}"));
    assert_eq!(from_text, from_value, "text and value decoders disagree");
    let encoded = serde_json::to_value(&from_text).expect("encodes");
    assert!(
        same_json(&encoded, &expected),
        "round trip changed the document\n  in:  {expected}\n  out: {encoded}"
    );
    // Our own output decodes to the same value again.
    let again: T = serde_json::from_value(encoded).expect("re-decodes");
    assert_eq!(again, from_text);
    from_text
}

fn raw(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_owned()).expect("raw JSON")
}

// ---------------------------------------------------------------- discover

#[test]
fn discover_result() {
    let r: DiscoverResult = golden(
        r#"{
        "resultType": "complete",
        "supportedVersions": ["2026-07-28", "2025-11-25"],
        "capabilities": {
            "tools": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "prompts": {"listChanged": false},
            "completions": {},
            "logging": {},
            "experimental": {"com.example/beta": {"level": 2}},
            "extensions": {"io.modelcontextprotocol/tasks": {}},
            "com.example/unknownCapability": {"keep": ["me", 1, true]}
        },
        "instructions": "Use the search tool first.",
        "ttlMs": 3600000,
        "cacheScope": "public",
        "_meta": {
            "io.modelcontextprotocol/serverInfo": {"name": "example-server", "version": "1.0.0"},
            "com.example/trace": "abc"
        }
    }"#,
    );
    assert!(r.lists_modern_version());
    assert_eq!(
        r.cache_hint(),
        Some(CacheHint {
            ttl_ms: 3_600_000,
            scope: CacheScope::Public
        })
    );
    assert!(
        r.capabilities
            .other
            .contains_key("com.example/unknownCapability")
    );
    let legacy_only: DiscoverResult = serde_json::from_value(json!({
        "supportedVersions": ["2025-11-25"], "capabilities": {}
    }))
    .unwrap();
    assert!(!legacy_only.lists_modern_version());
}

#[test]
fn unknown_capability_members_survive() {
    let c: ClientCapabilities = golden(
        r#"{
        "elicitation": {"form": {}, "url": {}, "com.example/x": 1},
        "sampling": {"tools": {}, "context": {}, "future": {"a": true}},
        "roots": {"listChanged": true, "other": "kept"},
        "experimental": {"x": {}},
        "extensions": {"com.example/ext": {"setting": "on"}},
        "tasks": {"requests": {"elicitation": {"create": {}}}}
    }"#,
    );
    assert!(c.other.contains_key("tasks"));
    assert_eq!(
        c.sampling.as_ref().unwrap().other.get("future"),
        Some(&json!({"a": true}))
    );
    assert_eq!(
        c.roots.as_ref().unwrap().other.get("other"),
        Some(&json!("kept"))
    );
}

// ------------------------------------------------------------------- tools

const TOOL_SCHEMA: &str = r##"{
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"unit": {"$anchor": "unit", "type": "string", "enum": ["c", "f"]}},
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region", "description": "Cloud region"},
        "count": {"type": "integer", "minimum": 1, "x-mcp-header": "Count"},
        "unit": {"$ref": "#unit"},
        "nested": {"type": "object", "properties": {"flag": {"type": "boolean", "x-mcp-header": "Flag"}}},
        "ratio": {"type": "number", "multipleOf": 0.25}
    },
    "required": ["region"],
    "additionalProperties": false,
    "x-vendor-extension": {"anything": [1, 2.5, null, "x"]}
}"##;

#[test]
fn list_tools_result_keeps_schemas_verbatim() {
    let text = format!(
        r#"{{
        "resultType": "complete",
        "tools": [
            {{
                "name": "get_weather",
                "title": "Weather",
                "description": "Current weather for a location",
                "icons": [{{"src": "https://example.com/w.png", "mimeType": "image/png", "sizes": ["48x48"], "theme": "light"}}],
                "inputSchema": {TOOL_SCHEMA},
                "outputSchema": {{"type": "object", "properties": {{"temperature": {{"type": "number"}}}}, "required": ["temperature"]}},
                "annotations": {{"title": "Weather lookup", "readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": true}},
                "_meta": {{"com.example/owner": "team-a"}}
            }},
            {{"name": "noop", "inputSchema": {{"type": "object", "additionalProperties": false}}}}
        ],
        "nextCursor": "",
        "ttlMs": 0,
        "cacheScope": "private"
    }}"#
    );
    let r: ListToolsResult = golden(&text);
    // Every keyword survives, with its value, at every depth.
    let schema: Value = serde_json::from_str(TOOL_SCHEMA).unwrap();
    assert_eq!(Value::Object(r.tools[0].input_schema.clone()), schema);
    let props = &r.tools[0].input_schema["properties"];
    assert_eq!(props["region"]["x-mcp-header"], "Region");
    assert_eq!(
        props["nested"]["properties"]["flag"]["x-mcp-header"],
        "Flag"
    );
    assert_eq!(r.tools[0].input_schema["$defs"]["unit"]["$anchor"], "unit");
    assert_eq!(props["unit"]["$ref"], "#unit");
    assert_eq!(props["ratio"]["multipleOf"], json!(0.25));
    assert_eq!(
        r.tools[0].input_schema["x-vendor-extension"],
        json!({"anything": [1, 2.5, null, "x"]})
    );
    // An empty cursor is a cursor, not the end (PAGE-02).
    assert_eq!(r.next_cursor(), Some(""));
    assert_eq!(r.tools[0].display_name(), "Weather");
    assert_eq!(r.tools[1].display_name(), "noop");
    assert_eq!(
        Value::Object(r.tools[1].input_schema.clone()),
        Value::Object(Tool::no_arguments_schema())
    );
}

#[test]
fn call_tool_request_params() {
    let p: CallToolRequestParams = golden(
        r#"{
        "name": "get_weather",
        "arguments": {"region": "eu-west-1", "count": 3, "nested": {"flag": true}, "ratio": 0.5},
        "inputResponses": {
            "confirm": {"action": "accept", "content": {"ok": true}},
            "roots": {"roots": [{"uri": "file:///home/u/project", "name": "project"}]}
        },
        "requestState": "v1.opaque+/state=="
    }"#,
    );
    assert_eq!(p.request_state.as_deref(), Some("v1.opaque+/state=="));
    let ir = p.input_responses.as_ref().unwrap();
    assert_eq!(
        ir.elicit_result("confirm").unwrap().unwrap().action,
        ElicitAction::Accept
    );
    assert_eq!(
        ir.list_roots_result("roots").unwrap().unwrap().roots.len(),
        1
    );
    assert!(ir.elicit_result("absent").is_none());
    // A malformed answer is -32602 naming the key.
    let err = ir.create_message_result("confirm").unwrap().unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
    assert!(err.message.contains("\"confirm\""), "{}", err.message);
}

#[test]
fn call_tool_result_with_every_block_type() {
    let r: CallToolResult = golden(
        r#"{
        "resultType": "complete",
        "content": [
            {"type": "text", "text": "Sunny, 22°C", "annotations": {"audience": ["user", "assistant"], "priority": 0.9, "lastModified": "2025-01-12T15:00:58Z"}},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav", "_meta": {"k": 1}},
            {"type": "resource_link", "uri": "file:///project/src/main.rs", "name": "main.rs", "mimeType": "text/x-rust", "size": 1234, "description": "Entry point"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "hello"}},
            {"type": "resource", "resource": {"uri": "file:///a.bin", "blob": "AAEC"}},
            {"type": "hologram", "frames": [1, 2, 3], "meta": {"deep": {"x": null}}}
        ],
        "structuredContent": {"temperature": 22.5, "conditions": "Sunny"},
        "isError": false,
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}
    }"#,
    );
    assert_eq!(r.content.len(), 7);
    assert_eq!(r.content[0].as_text(), Some("Sunny, 22°C"));
    assert!(
        matches!(r.content[4], ContentBlock::Resource(ref e) if matches!(e.resource, ResourceContents::Text(_)))
    );
    assert!(
        matches!(r.content[5], ContentBlock::Resource(ref e) if matches!(e.resource, ResourceContents::Blob(_)))
    );
    // The unknown block is kept verbatim, "type" included.
    match &r.content[6] {
        ContentBlock::Unknown(o) => {
            assert_eq!(o["type"], "hologram");
            assert_eq!(o["frames"], json!([1, 2, 3]));
        }
        other => panic!("expected Unknown, got {other:?}"),
    }
    assert_eq!(r.content[6].type_name(), Some("hologram"));
    assert!(!r.is_error());
}

#[test]
fn call_tool_result_legacy_and_error() {
    // Handshake-era: no resultType; an execution failure is a result (TOOL-06).
    let r: CallToolResult = golden(
        r#"{"content": [{"type": "text", "text": "Invalid date: must be in the future"}], "isError": true}"#,
    );
    assert!(r.is_error());
    assert_eq!(r.result_type, None);
    // structuredContent may be any JSON on 2026-07-28.
    let r: CallToolResult =
        golden(r#"{"resultType": "complete", "content": [], "structuredContent": [1, "two"]}"#);
    assert_eq!(r.structured_content, Some(json!([1, "two"])));
}

#[test]
fn content_block_tag_position_and_errors() {
    // Tag last (buffered path) and first (one pass) give the same block.
    let a: ContentBlock =
        serde_json::from_str(r#"{"text": "hi", "_meta": {"a": 1}, "type": "text"}"#).unwrap();
    let b: ContentBlock =
        serde_json::from_str(r#"{"type": "text", "text": "hi", "_meta": {"a": 1}}"#).unwrap();
    assert_eq!(a, b);
    // Unknown type with the tag in the middle is kept whole.
    let u: ContentBlock =
        serde_json::from_str(r#"{"a": 1, "type": "x-new", "b": [true]}"#).unwrap();
    assert_eq!(
        serde_json::to_value(&u).unwrap(),
        json!({"a": 1, "type": "x-new", "b": [true]})
    );
    // We write "type" first.
    let s = serde_json::to_string(&ContentBlock::text("hi")).unwrap();
    assert_eq!(s, r#"{"type":"text","text":"hi"}"#);
    // Malformed known blocks and untyped blocks are errors.
    assert!(serde_json::from_str::<ContentBlock>(r#"{"type": "text"}"#).is_err());
    assert!(serde_json::from_str::<ContentBlock>(r#"{"text": "no type"}"#).is_err());
    assert!(serde_json::from_str::<ContentBlock>(r#"{"type": 7, "text": "x"}"#).is_err());
    assert!(serde_json::from_str::<ContentBlock>(r#"{}"#).is_err());
    assert!(serde_json::from_str::<ContentBlock>(r#""text""#).is_err());
    // Resource contents need text or blob; with both, text wins.
    assert!(serde_json::from_str::<ResourceContents>(r#"{"uri": "file:///x"}"#).is_err());
    let both: ResourceContents =
        serde_json::from_str(r#"{"uri": "file:///x", "text": "t", "blob": "AA=="}"#).unwrap();
    assert!(matches!(both, ResourceContents::Text(_)));
}

// --------------------------------------------------------------- resources

#[test]
fn list_resources_result() {
    let r: ListResourcesResult = golden(
        r#"{
        "resultType": "complete",
        "resources": [{
            "uri": "file:///project/src/main.rs",
            "name": "main.rs",
            "title": "Rust Software Application Main File",
            "description": "Primary application entry point",
            "mimeType": "text/x-rust",
            "size": 2048,
            "annotations": {"audience": ["assistant"], "priority": 1},
            "icons": [{"src": "data:image/svg+xml;base64,PHN2Zz4=", "sizes": ["any"], "theme": "dark"}],
            "_meta": {"x": "y"}
        }],
        "nextCursor": "next-page-cursor",
        "ttlMs": 60000,
        "cacheScope": "private"
    }"#,
    );
    assert_eq!(r.next_cursor(), Some("next-page-cursor"));
}

#[test]
fn list_resource_templates_result() {
    let _: ListResourceTemplatesResult = golden(
        r#"{
        "resultType": "complete",
        "resourceTemplates": [{
            "uriTemplate": "file:///{path}",
            "name": "Project Files",
            "title": "📁 Project Files",
            "description": "Access files in the project directory",
            "mimeType": "application/octet-stream",
            "annotations": {"priority": 0.5},
            "icons": [{"src": "https://example.com/f.png"}]
        }],
        "ttlMs": 0,
        "cacheScope": "public"
    }"#,
    );
}

#[test]
fn read_resource_request_and_result() {
    let p: ReadResourceRequestParams = golden(
        r#"{"uri": "file:///project/src/main.rs", "inputResponses": {"k": {"action": "decline"}}, "requestState": "s"}"#,
    );
    assert_eq!(p.uri, "file:///project/src/main.rs");
    let r: ReadResourceResult = golden(
        r#"{
        "resultType": "complete",
        "contents": [
            {"uri": "file:///project/src/main.rs", "mimeType": "text/x-rust", "text": "fn main() {}", "_meta": {"a": 1}},
            {"uri": "file:///project/logo.png", "mimeType": "image/png", "blob": "iVBORw0KGgo="}
        ],
        "ttlMs": 5000,
        "cacheScope": "private",
        "_meta": {"com.example/etag": "W/\"1\""}
    }"#,
    );
    assert_eq!(r.contents[0].uri(), "file:///project/src/main.rs");
    assert_eq!(r.contents[1].mime_type(), Some("image/png"));
}

#[test]
fn legacy_subscribe_and_updated() {
    let p: SubscribeRequestParams = golden(r#"{"uri": "file:///project/src/main.rs"}"#);
    assert_eq!(p.uri, "file:///project/src/main.rs");
    let n: ResourceUpdatedNotificationParams = golden(
        r#"{"uri": "file:///project/src/main.rs", "_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"}}"#,
    );
    assert_eq!(
        subscription_id(n.meta.as_ref()),
        Some(RequestId::string("listen-1"))
    );
}

// ----------------------------------------------------------------- prompts

#[test]
fn prompts() {
    let _: ListPromptsResult = golden(
        r#"{
        "resultType": "complete",
        "prompts": [{
            "name": "code_review",
            "title": "Request Code Review",
            "description": "Asks the LLM to analyze code quality and suggest improvements",
            "arguments": [{"name": "code", "title": "Code", "description": "The code to review", "required": true}],
            "icons": [{"src": "https://example.com/r.svg", "mimeType": "image/svg+xml"}]
        }],
        "nextCursor": "n",
        "ttlMs": 1,
        "cacheScope": "public"
    }"#,
    );
    let p: GetPromptRequestParams = golden(
        r#"{"name": "code_review", "arguments": {"code": "def hello():\n    print('world')"}, "requestState": "abc"}"#,
    );
    assert_eq!(
        p.arguments.unwrap()["code"],
        "def hello():\n    print('world')"
    );
    let r: GetPromptResult = golden(
        r#"{
        "resultType": "complete",
        "description": "Code review prompt",
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "Please review this Python code"}},
            {"role": "user", "content": {"type": "image", "data": "R0lGOD==", "mimeType": "image/gif"}},
            {"role": "assistant", "content": {"type": "resource", "resource": {"uri": "resource://example", "mimeType": "text/plain", "text": "Resource content"}}}
        ]
    }"#,
    );
    assert_eq!(r.messages[2].role, Role::Assistant);
}

// -------------------------------------------------------------- completion

#[test]
fn completion() {
    let p: CompleteRequestParams = golden(
        r#"{"ref": {"type": "ref/prompt", "name": "code_review", "title": "Code Review"}, "argument": {"name": "language", "value": "py"}, "context": {"arguments": {"framework": "flask"}}}"#,
    );
    assert!(matches!(p.reference, CompletionReference::Prompt(ref r) if r.name == "code_review"));
    let p: CompleteRequestParams = golden(
        r#"{"argument": {"value": "src/", "name": "path"}, "ref": {"uri": "file:///{path}", "type": "ref/resource"}}"#,
    );
    assert!(
        matches!(p.reference, CompletionReference::ResourceTemplate(ref r) if r.uri == "file:///{path}")
    );
    assert!(
        serde_json::from_str::<CompleteRequestParams>(
            r#"{"ref": {"type": "ref/tool", "name": "x"}, "argument": {"name": "a", "value": "b"}}"#
        )
        .is_err()
    );
    let _: CompleteResult = golden(
        r#"{"resultType": "complete", "completion": {"values": ["python", "pytorch", "pyside"], "total": 10, "hasMore": true}}"#,
    );
    let c = Completion::from_values((0..150).map(|i| i.to_string()).collect());
    assert_eq!(c.values.len(), Completion::MAX_VALUES);
    assert_eq!((c.total, c.has_more), (Some(150), Some(true)));
}

// ----------------------------------------------------------- subscriptions

#[test]
fn subscriptions() {
    let p: SubscriptionsListenRequestParams = golden(
        r#"{"notifications": {"toolsListChanged": true, "promptsListChanged": false, "resourcesListChanged": true, "resourceSubscriptions": ["file:///a", "file:///b"]}}"#,
    );
    assert!(!p.notifications.is_empty());
    assert!(SubscriptionFilter::default().is_empty());
    let ack: SubscriptionsAcknowledgedNotificationParams = golden(
        r#"{"notifications": {"toolsListChanged": true}, "_meta": {"io.modelcontextprotocol/subscriptionId": 7}}"#,
    );
    assert_eq!(ack.subscription_id(), Some(RequestId::number(7)));
    // The id keeps its JSON type (SUB-04).
    let built = SubscriptionsAcknowledgedNotificationParams::new(
        &RequestId::string("listen-1"),
        SubscriptionFilter {
            tools_list_changed: Some(true),
            ..Default::default()
        },
    );
    assert_eq!(
        serde_json::to_value(&built).unwrap(),
        json!({"notifications": {"toolsListChanged": true}, "_meta": {SUBSCRIPTION_ID: "listen-1"}})
    );
    let end: SubscriptionsListenResult = golden(
        r#"{"resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"}}"#,
    );
    assert_eq!(
        end,
        SubscriptionsListenResult::ended(&RequestId::string("listen-1"))
    );
    assert_eq!(end.subscription_id(), Some(RequestId::string("listen-1")));
}

// ----------------------------------------------------------- notifications

#[test]
fn notification_params() {
    let p: ProgressNotificationParams = golden(
        r#"{"progressToken": "abc123", "progress": 50, "total": 100, "message": "Reticulating splines..."}"#,
    );
    assert_eq!(p.progress_token, RequestId::string("abc123"));
    let p: ProgressNotificationParams = golden(r#"{"progressToken": 5, "progress": 0.25}"#);
    assert_eq!(p.progress_token, RequestId::number(5));
    let c: CancelledNotificationParams =
        golden(r#"{"requestId": "123", "reason": "User requested cancellation"}"#);
    assert_eq!(c.request_id, Some(RequestId::string("123")));
    let c: CancelledNotificationParams =
        golden(r#"{"requestId": 9, "_meta": {"io.modelcontextprotocol/subscriptionId": 9}}"#);
    assert_eq!(c.request_id, Some(RequestId::number(9)));
    let l: LoggingMessageNotificationParams = golden(
        r#"{"level": "error", "logger": "database", "data": {"error": "Connection failed", "details": {"host": "localhost", "port": 5432}}}"#,
    );
    assert_eq!(l.level, LoggingLevel::Error);
    let _: LoggingMessageNotificationParams = golden(r#"{"level": "debug", "data": null}"#);
    let _: NotificationParams = golden(r#"{}"#);
    let _: NotificationParams =
        golden(r#"{"_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"}}"#);
    let e: ElicitationCompleteNotificationParams =
        golden(r#"{"elicitationId": "550e8400-e29b-41d4-a716-446655440000"}"#);
    assert_eq!(e.elicitation_id, "550e8400-e29b-41d4-a716-446655440000");
}

// ------------------------------------------------------------- elicitation

const FORM: &str = r#"{
    "mode": "form",
    "message": "Please provide your contact information",
    "requestedSchema": {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Full name", "description": "Your name", "minLength": 1, "maxLength": 100, "default": "Ada"},
            "email": {"type": "string", "format": "email", "x-ui-widget": "email"},
            "age": {"type": "integer", "minimum": 18, "maximum": 150, "default": 30},
            "score": {"type": "number", "minimum": 0.5, "maximum": 9.5, "default": 1.5},
            "subscribe": {"type": "boolean", "title": "Subscribe", "default": false},
            "color": {"type": "string", "enum": ["red", "green"], "default": "red"},
            "size": {"type": "string", "title": "Size", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
            "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["Option A", "Option B"]},
            "tags": {"type": "array", "title": "Tags", "minItems": 1, "maxItems": 2, "items": {"type": "string", "enum": ["x", "y", "z"]}, "default": ["x"]},
            "toppings": {"type": "array", "items": {"anyOf": [{"const": "c", "title": "Cheese"}, {"const": "h", "title": "Ham"}]}},
            "future": {"type": "object", "properties": {"a": {"type": "string"}}},
            "untyped": {"description": "no type at all"}
        },
        "required": ["name", "email"]
    }
}"#;

#[test]
fn elicitation_form() {
    let p: ElicitRequestParams = golden(FORM);
    let ElicitRequestParams::Form(f) = &p else {
        panic!("expected form, got {p:?}")
    };
    let props = &f.requested_schema.properties;
    assert!(matches!(
        props["age"],
        PrimitiveSchemaDefinition::Integer(_)
    ));
    assert!(matches!(
        props["score"],
        PrimitiveSchemaDefinition::Number(_)
    ));
    assert!(matches!(
        props["subscribe"],
        PrimitiveSchemaDefinition::Boolean(_)
    ));
    assert!(matches!(props["tags"], PrimitiveSchemaDefinition::Array(_)));
    assert!(
        matches!(props["future"], PrimitiveSchemaDefinition::Other(ref o) if o["type"] == "object")
    );
    assert!(matches!(
        props["untyped"],
        PrimitiveSchemaDefinition::Other(_)
    ));
    let PrimitiveSchemaDefinition::String(email) = &props["email"] else {
        panic!()
    };
    assert_eq!(email.other.get("x-ui-widget"), Some(&json!("email")));
    let PrimitiveSchemaDefinition::String(legacy) = &props["legacy"] else {
        panic!()
    };
    assert_eq!(
        legacy.choices(),
        Some(vec![("a", Some("Option A")), ("b", Some("Option B"))])
    );
    let PrimitiveSchemaDefinition::String(size) = &props["size"] else {
        panic!()
    };
    assert_eq!(
        size.choices(),
        Some(vec![("s", Some("Small")), ("l", Some("Large"))])
    );
    let PrimitiveSchemaDefinition::String(name) = &props["name"] else {
        panic!()
    };
    assert_eq!(name.choices(), None);
    // Integer bounds and defaults stay integers.
    let out = serde_json::to_value(&p).unwrap();
    assert_eq!(
        out["requestedSchema"]["properties"]["age"]["default"],
        json!(30)
    );
    assert!(out["requestedSchema"]["properties"]["age"]["default"].is_u64());
}

#[test]
fn elicitation_mode_defaults_to_form() {
    let p: ElicitRequestParams = serde_json::from_str(
        r#"{"message": "m", "requestedSchema": {"type": "object", "properties": {}}}"#,
    )
    .unwrap();
    assert!(matches!(p, ElicitRequestParams::Form(_)));
    // `mode` is always written.
    assert_eq!(serde_json::to_value(&p).unwrap()["mode"], "form");
    // The schema root must be an object schema.
    assert!(
        serde_json::from_str::<ElicitRequestParams>(
            r#"{"message": "m", "requestedSchema": {"type": "array", "properties": {}}}"#
        )
        .is_err()
    );
    assert!(
        serde_json::from_str::<ElicitRequestParams>(r#"{"mode": "telepathy", "message": "m"}"#)
            .is_err()
    );
}

#[test]
fn elicitation_url_and_result() {
    let p: ElicitRequestParams = golden(
        r#"{"mode": "url", "message": "Please authorize access", "url": "https://example.com/oauth/authorize?state=xyz", "elicitationId": "550e8400"}"#,
    );
    assert!(
        matches!(p, ElicitRequestParams::Url(ref u) if u.elicitation_id.as_deref() == Some("550e8400"))
    );
    assert_eq!(p.message(), "Please authorize access");
    let _: ElicitRequestParams =
        golden(r#"{"url": "https://example.com/x", "message": "m", "mode": "url"}"#);
    let r: ElicitResult = golden(
        r#"{"action": "accept", "content": {"name": "Ada", "age": 36, "score": 9.25, "subscribe": true, "tags": ["x", "z"]}}"#,
    );
    let c = r.content.unwrap();
    assert_eq!(c["age"], ElicitValue::Number(36.into()));
    assert_eq!(
        c["tags"],
        ElicitValue::StringArray(vec!["x".into(), "z".into()])
    );
    let _: ElicitResult = golden(r#"{"action": "decline"}"#);
    let _: ElicitResult = golden(r#"{"action": "cancel", "_meta": {"a": 1}}"#);
    assert!(serde_json::from_str::<ElicitResult>(r#"{"action": "maybe"}"#).is_err());
    assert!(
        serde_json::from_str::<ElicitResult>(r#"{"action": "accept", "content": {"x": {"o": 1}}}"#)
            .is_err()
    );
}

// ---------------------------------------------------------------- sampling

#[test]
fn sampling() {
    let p: CreateMessageRequestParams = golden(
        r#"{
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "What is the weather in Paris?"}},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "toolUseId": "call_1", "content": [{"type": "text", "text": "18°C"}], "structuredContent": {"t": 18}, "isError": false}
            ], "_meta": {"m": true}}
        ],
        "modelPreferences": {"hints": [{"name": "claude-3-sonnet"}, {}], "intelligencePriority": 0.8, "speedPriority": 0.5, "costPriority": 0.25},
        "systemPrompt": "You are a helpful assistant.",
        "includeContext": "none",
        "temperature": 0.7,
        "maxTokens": 100,
        "stopSequences": ["\n\n"],
        "metadata": {"provider": {"x": 1}},
        "tools": [{"name": "get_weather", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
        "toolChoice": {"mode": "auto"}
    }"#,
    );
    assert!(matches!(p.messages[0].content, SamplingContent::Single(_)));
    assert_eq!(p.messages[1].content.blocks().len(), 1);
    assert!(
        matches!(p.messages[1].content.blocks()[0], ContentBlock::ToolUse(ref u) if u.id == "call_1")
    );
    let r: CreateMessageResult = golden(
        r#"{"role": "assistant", "content": {"type": "text", "text": "The capital of France is Paris."}, "model": "claude-3-sonnet-20240307", "stopReason": "endTurn"}"#,
    );
    assert_eq!(r.stop_reason, Some(StopReason::EndTurn));
    let r: CreateMessageResult = golden(
        r#"{"role": "assistant", "content": [{"type": "tool_use", "id": "c2", "name": "f", "input": {}}], "model": "m", "stopReason": "somethingNew"}"#,
    );
    assert_eq!(
        r.stop_reason,
        Some(StopReason::Other("somethingNew".into()))
    );
}

// ------------------------------------------------------------------- roots

#[test]
fn roots() {
    let r: ListRootsResult = golden(
        r#"{"roots": [{"uri": "file:///home/user/projects/myproject", "name": "My Project", "_meta": {"a": 1}}, {"uri": "file:///tmp"}]}"#,
    );
    assert_eq!(r.roots[1], Root::new("file:///tmp"));
}

// -------------------------------------------------------------------- MRTR

const INPUT_REQUIRED: &str = r#"{
    "resultType": "input_required",
    "inputRequests": {
        "confirm": {"method": "elicitation/create", "params": {"mode": "form", "message": "Proceed?", "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}},
        "summary": {"method": "sampling/createMessage", "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "Summarize"}}], "maxTokens": 50}},
        "roots": {"method": "roots/list"},
        "roots2": {"params": {}, "method": "roots/list"}
    },
    "requestState": "eyJ2IjoxfQ",
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}
}"#;

#[test]
fn input_required_result() {
    let r: InputRequiredResult = golden(INPUT_REQUIRED);
    let reqs = r.input_requests.as_ref().unwrap();
    assert_eq!(reqs["confirm"].method(), "elicitation/create");
    assert_eq!(reqs["summary"].method(), "sampling/createMessage");
    assert_eq!(reqs["roots"], InputRequest::ListRoots(None));
    assert_eq!(
        reqs["roots2"],
        InputRequest::ListRoots(Some(EmptyParams {}))
    );
    assert!(r.is_well_formed());
    // resultType is required and must be "input_required".
    assert!(serde_json::from_str::<InputRequiredResult>(r#"{"requestState": "s"}"#).is_err());
    assert!(
        serde_json::from_str::<InputRequiredResult>(
            r#"{"resultType": "complete", "requestState": "s"}"#
        )
        .is_err()
    );
    // Only three methods may be asked for (MRTR-03).
    assert!(
        serde_json::from_str::<InputRequest>(r#"{"method": "tools/call", "params": {}}"#).is_err()
    );
    assert!(serde_json::from_str::<InputRequest>(r#"{"method": "elicitation/create"}"#).is_err());
    // Builder output.
    let built = InputRequiredResult::new()
        .with_request("roots", InputRequest::list_roots())
        .with_state("st");
    assert_eq!(
        serde_json::to_value(&built).unwrap(),
        json!({"resultType": "input_required", "inputRequests": {"roots": {"method": "roots/list"}}, "requestState": "st"})
    );
    assert!(!InputRequiredResult::new().is_well_formed());
}

#[test]
fn input_request_capability_checks() {
    let r: InputRequiredResult = serde_json::from_str(INPUT_REQUIRED).unwrap();
    let reqs = r.input_requests.unwrap();
    let none = ClientCapabilities::default();
    let form_only: ClientCapabilities = serde_json::from_value(json!({"elicitation": {}})).unwrap();
    let all: ClientCapabilities =
        serde_json::from_value(json!({"elicitation": {"form": {}}, "sampling": {}, "roots": {}}))
            .unwrap();
    for r in reqs.values() {
        assert!(!r.is_allowed_by(&none));
        assert!(r.is_allowed_by(&all), "{r:?}");
    }
    assert!(reqs["confirm"].is_allowed_by(&form_only));
    assert_eq!(
        serde_json::to_value(reqs["confirm"].required_capabilities()).unwrap(),
        json!({"elicitation": {"form": {}}})
    );
    let url = InputRequest::Elicitation(ElicitRequestParams::Url(ElicitRequestUrlParams {
        message: "m".into(),
        url: "https://example.com".into(),
        elicitation_id: None,
    }));
    assert!(!url.is_allowed_by(&form_only));
    let tools = InputRequest::Sampling(CreateMessageRequestParams {
        max_tokens: 1,
        tools: Some(vec![]),
        ..Default::default()
    });
    assert!(!tools.is_allowed_by(&all));
    assert_eq!(
        serde_json::to_value(tools.required_capabilities()).unwrap(),
        json!({"sampling": {"tools": {}}})
    );
}

#[test]
fn maybe_input_required_dispatch() {
    type R = MaybeInputRequired<CallToolResult>;
    let complete_legacy = r#"{"content": [{"type": "text", "text": "ok"}]}"#;
    let complete = r#"{"content": [], "resultType": "complete"}"#;
    let bogus = r#"{"content": [], "resultType": "bogus"}"#;
    let not_string = r#"{"content": [], "resultType": 1}"#;

    for decode in [
        (|s: &str| serde_json::from_str::<R>(s).map_err(|e| e.to_string()))
            as fn(&str) -> Result<R, String>,
        |s: &str| {
            serde_json::from_value::<R>(serde_json::from_str(s).unwrap()).map_err(|e| e.to_string())
        },
        |s: &str| R::from_json_str(s).map_err(|e| e.to_string()),
        |s: &str| R::from_raw(&raw(s)).map_err(|e| e.to_string()),
    ] {
        // Absent resultType → complete (RESULT-02).
        let r = decode(complete_legacy).unwrap();
        assert!(matches!(r, MaybeInputRequired::Complete(ref c) if c.result_type.is_none()));
        assert!(matches!(
            decode(complete).unwrap(),
            MaybeInputRequired::Complete(_)
        ));
        let r = decode(INPUT_REQUIRED).unwrap();
        assert!(r.is_input_required());
        // Unknown resultType → invalid response (RESULT-03).
        let e = decode(bogus).unwrap_err();
        assert!(e.contains("bogus"), "{e}");
        assert!(decode(not_string).is_err());
    }
    // Encoding writes the inner value unchanged.
    let r = R::from_json_str(INPUT_REQUIRED).unwrap();
    assert!(same_json(
        &serde_json::to_value(&r).unwrap(),
        &serde_json::from_str(INPUT_REQUIRED).unwrap()
    ));
    assert_eq!(
        probe_result_type(bogus).unwrap(),
        Some(ResultType::Other("bogus".into()))
    );
    assert_eq!(probe_result_type(complete_legacy).unwrap(), None);
    let _: MaybeInputRequired<GetPromptResult> = golden(r#"{"messages": []}"#);
    let _: MaybeInputRequired<ReadResourceResult> = golden(INPUT_REQUIRED);
}

// --------------------------------------------------------------- handshake

#[test]
fn handshake() {
    let p: InitializeRequestParams = golden(
        r#"{
        "protocolVersion": "2025-11-25",
        "capabilities": {"roots": {"listChanged": true}, "sampling": {}, "elicitation": {"form": {}, "url": {}}, "tasks": {"list": {}}},
        "clientInfo": {"name": "ExampleClient", "title": "Example Client Display Name", "version": "1.0.0", "description": "An example MCP client", "icons": [{"src": "https://example.com/icon.png", "mimeType": "image/png", "sizes": ["48x48"]}], "websiteUrl": "https://example.com"}
    }"#,
    );
    assert_eq!(p.client_info.name, "ExampleClient");
    // An unknown version string is kept as sent (LEGACY-02 answers it).
    let p: InitializeRequestParams = golden(
        r#"{"protocolVersion": "2099-01-01", "capabilities": {}, "clientInfo": {"name": "c", "version": "0"}}"#,
    );
    assert_eq!(p.protocol_version, "2099-01-01");
    let _: InitializeResult = golden(
        r#"{
        "protocolVersion": "2025-11-25",
        "capabilities": {"logging": {}, "prompts": {"listChanged": true}, "resources": {"subscribe": true, "listChanged": true}, "tools": {"listChanged": true}, "tasks": {"list": {}}},
        "serverInfo": {"name": "ExampleServer", "title": "Example Server Display Name", "version": "1.0.0"},
        "instructions": "Optional instructions for the client"
    }"#,
    );
    let l: SetLevelRequestParams = golden(r#"{"level": "warning"}"#);
    assert_eq!(l.level, LoggingLevel::Warning);
    assert!(serde_json::from_str::<SetLevelRequestParams>(r#"{"level": "loud"}"#).is_err());
    let _: EmptyResult = golden(r#"{}"#);
    let _: EmptyResult = golden(r#"{"resultType": "complete", "_meta": {"a": 1}}"#);
    let _: EmptyParams = serde_json::from_str(r#"{"_meta": {"progressToken": 1}}"#).unwrap();
    let _: PaginatedRequestParams = golden(r#"{"cursor": "c"}"#);
    let _: PaginatedRequestParams = golden(r#"{}"#);
}

// ---------------------------------------------------- result stamping traits

#[test]
fn result_traits_stamp_type_server_info_and_cache_hints() {
    let mut r = ListToolsResult::default();
    r.ensure_result_type();
    r.fill_cache_hint(CacheHint::UNCACHED);
    r.stamp_server_info(&Implementation::new("srv", "2.0"));
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "private",
               "_meta": {SERVER_INFO: {"name": "srv", "version": "2.0"}}})
    );
    // A handler-set hint and serverInfo win; resultType is kept.
    let mut r = ReadResourceResult {
        result_type: Some(ResultType::Other("x".into())),
        ttl_ms: Some(10),
        ..Default::default()
    };
    r.meta_mut()
        .insert(SERVER_INFO.into(), json!({"name": "h", "version": "1"}));
    r.ensure_result_type();
    r.fill_cache_hint(CacheHint {
        ttl_ms: 99,
        scope: CacheScope::Public,
    });
    r.stamp_server_info(&Implementation::new("srv", "2.0"));
    assert_eq!(r.result_type, Some(ResultType::Other("x".into())));
    assert_eq!(
        r.cache_hint(),
        Some(CacheHint {
            ttl_ms: 10,
            scope: CacheScope::Public
        })
    );
    assert_eq!(r.meta.unwrap()[SERVER_INFO]["name"], "h");
}

// ------------------------------------------------------------ method dispatch

fn envelope() -> RequestMeta {
    let mut m = RequestMeta::modern(ProtocolVersion::V2026_07_28, ClientCapabilities::default());
    m.client_info = Some(Implementation::new("test-client", "0.1.0"));
    m
}

#[test]
fn client_request_decodes_by_method_ignoring_meta() {
    let params = raw(
        r#"{"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}, "name": "echo", "arguments": {"text": "hi"}}"#,
    );
    let r = ClientRequest::decode(method::TOOLS_CALL, Some(&params)).unwrap();
    let ClientRequest::CallTool(p) = &r else {
        panic!("{r:?}")
    };
    assert_eq!(p.name, "echo");
    assert_eq!(r.method(), "tools/call");
    assert!(!r.is_handshake_only() && !r.is_modern_only());

    // Missing / wrong members → -32602 naming the method and the problem.
    let e =
        ClientRequest::decode(method::TOOLS_CALL, Some(&raw(r#"{"arguments": {}}"#))).unwrap_err();
    assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
    assert!(
        e.message.contains("tools/call") && e.message.contains("name"),
        "{}",
        e.message
    );
    let e = ClientRequest::decode(method::TOOLS_CALL, None).unwrap_err();
    assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
    let e = ClientRequest::decode(method::RESOURCES_READ, Some(&raw(r#"{"uri": 5}"#))).unwrap_err();
    assert!(e.message.contains("resources/read"), "{}", e.message);
    let e = ClientRequest::decode(
        method::LOGGING_SET_LEVEL,
        Some(&raw(r#"{"level": "loud"}"#)),
    )
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::INVALID_PARAMS);

    // Optional params default when absent.
    assert!(matches!(
        ClientRequest::decode(method::TOOLS_LIST, None).unwrap(),
        ClientRequest::ListTools(PaginatedRequestParams { cursor: None })
    ));
    assert!(matches!(
        ClientRequest::decode(method::PING, None).unwrap(),
        ClientRequest::Ping(_)
    ));
    let empty = raw(r#"{"_meta": {}}"#);
    let d = ClientRequest::decode(method::SERVER_DISCOVER, Some(&empty)).unwrap();
    assert!(d.is_modern_only());

    // Unknown methods route as Custom with raw params.
    let p = raw(r#"{"x": 1}"#);
    let c = ClientRequest::decode("com.example/custom", Some(&p)).unwrap();
    assert!(matches!(
        c,
        ClientRequest::Custom {
            method: "com.example/custom",
            params: Some(_)
        }
    ));
    assert!(c.is_custom());

    // Every client method decodes from a minimal valid params object.
    for (m, p) in [
        (
            method::INITIALIZE,
            r#"{"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}"#,
        ),
        (method::RESOURCES_TEMPLATES_LIST, r#"{"cursor": "x"}"#),
        (method::RESOURCES_LIST, "{}"),
        (method::RESOURCES_SUBSCRIBE, r#"{"uri": "file:///a"}"#),
        (method::RESOURCES_UNSUBSCRIBE, r#"{"uri": "file:///a"}"#),
        (method::PROMPTS_LIST, "{}"),
        (method::PROMPTS_GET, r#"{"name": "p"}"#),
        (
            method::COMPLETION_COMPLETE,
            r#"{"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}}"#,
        ),
        (method::SUBSCRIPTIONS_LISTEN, r#"{"notifications": {}}"#),
    ] {
        let p = raw(p);
        let r = ClientRequest::decode(m, Some(&p)).unwrap_or_else(|e| panic!("{m}: {e}"));
        assert_eq!(r.method(), m);
        assert!(!r.is_custom());
    }
}

#[test]
fn client_request_params_value_and_with_meta() {
    let meta = envelope();
    let r = ClientRequest::CallTool(CallToolRequestParams::new("echo", None));
    let v = r.params_value(Some(&meta)).unwrap().unwrap();
    assert_eq!(v["name"], "echo");
    assert_eq!(
        v["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    let p = CallToolRequestParams::new("echo", None);
    let w = serde_json::to_value(WithMeta::new(&meta, &p)).unwrap();
    assert_eq!(w, v);
    let e = serde_json::to_value(WithMeta::new(&meta, &EmptyParams {})).unwrap();
    assert_eq!(e.as_object().unwrap().len(), 1);
    // A custom request keeps its params and gains the envelope.
    let p = raw(r#"{"x": 1}"#);
    let c = ClientRequest::decode("x/y", Some(&p)).unwrap();
    let v = c.params_value(Some(&meta)).unwrap().unwrap();
    assert_eq!(v["x"], 1);
    assert!(v["_meta"].is_object());
    assert_eq!(
        ClientRequest::decode("x/y", None)
            .unwrap()
            .params_value(None)
            .unwrap(),
        None
    );
    // MRTR retry echoes are visible for the cache rule (CACHE-06).
    let retry = ClientRequest::GetPrompt(GetPromptRequestParams {
        request_state: Some("s".into()),
        ..GetPromptRequestParams::new("p")
    });
    assert_eq!(retry.mrtr_echo(), (None, Some("s")));
}

#[test]
fn notifications_and_server_requests_decode() {
    let p = raw(r#"{"requestId": 3}"#);
    let n = ClientNotification::decode(method::NOTIFICATIONS_CANCELLED, Some(&p)).unwrap();
    assert!(
        matches!(n, ClientNotification::Cancelled(ref c) if c.request_id == Some(RequestId::number(3)))
    );
    assert!(matches!(
        ClientNotification::decode(method::NOTIFICATIONS_INITIALIZED, None).unwrap(),
        ClientNotification::Initialized(_)
    ));
    assert!(matches!(
        ClientNotification::decode(method::NOTIFICATIONS_ROOTS_LIST_CHANGED, None).unwrap(),
        ClientNotification::RootsListChanged(_)
    ));
    assert!(ClientNotification::decode(method::NOTIFICATIONS_PROGRESS, None).is_err());

    let p = raw(r#"{"_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"}}"#);
    let n = ServerNotification::decode(method::NOTIFICATIONS_TOOLS_LIST_CHANGED, Some(&p)).unwrap();
    assert_eq!(n.subscription_id(), Some(RequestId::string("listen-1")));
    let c = ServerNotification::decode("com.example/notice", Some(&p)).unwrap();
    assert_eq!(c.subscription_id(), Some(RequestId::string("listen-1")));
    let log = raw(r#"{"level": "info", "data": "x"}"#);
    let n = ServerNotification::decode(method::NOTIFICATIONS_MESSAGE, Some(&log)).unwrap();
    assert_eq!(n.method(), "notifications/message");
    assert_eq!(n.subscription_id(), None);
    for (m, p) in [
        (
            method::NOTIFICATIONS_PROGRESS,
            r#"{"progressToken": 1, "progress": 1}"#,
        ),
        (
            method::NOTIFICATIONS_RESOURCES_UPDATED,
            r#"{"uri": "file:///a"}"#,
        ),
        (method::NOTIFICATIONS_RESOURCES_LIST_CHANGED, "{}"),
        (method::NOTIFICATIONS_PROMPTS_LIST_CHANGED, "{}"),
        (
            method::NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED,
            r#"{"notifications": {}}"#,
        ),
        (
            method::NOTIFICATIONS_ELICITATION_COMPLETE,
            r#"{"elicitationId": "e"}"#,
        ),
        (
            method::NOTIFICATIONS_CANCELLED,
            r#"{"requestId": "a", "reason": "r"}"#,
        ),
    ] {
        let p = raw(p);
        let n = ServerNotification::decode(m, Some(&p)).unwrap_or_else(|e| panic!("{m}: {e}"));
        assert_eq!(n.method(), m);
    }

    let form = raw(FORM);
    let s = ServerRequest::decode(method::ELICITATION_CREATE, Some(&form)).unwrap();
    assert!(matches!(
        s,
        ServerRequest::Elicit(ElicitRequestParams::Form(_))
    ));
    assert!(matches!(
        ServerRequest::decode(method::ROOTS_LIST, None).unwrap(),
        ServerRequest::ListRoots(_)
    ));
    assert!(matches!(
        ServerRequest::decode(method::PING, None).unwrap(),
        ServerRequest::Ping(_)
    ));
    let sampling = raw(r#"{"messages": [], "maxTokens": 1}"#);
    let s = ServerRequest::decode(method::SAMPLING_CREATE_MESSAGE, Some(&sampling)).unwrap();
    assert_eq!(s.method(), "sampling/createMessage");
    // An MRTR input request maps onto the handshake-era request.
    let s: ServerRequest<'_> = InputRequest::list_roots().into();
    assert!(matches!(s, ServerRequest::ListRoots(_)));
}

#[test]
fn method_tables() {
    assert!(method::allows_input_required("tools/call"));
    assert!(!method::allows_input_required("tools/list"));
    assert!(method::is_cacheable("server/discover"));
    assert!(!method::is_cacheable("tools/call"));
    for m in method::MODERN_CLIENT_METHODS {
        assert!(!method::HANDSHAKE_ONLY_CLIENT_METHODS.contains(&m));
    }
    assert_eq!(method::PAGINATED_METHODS.len(), 4);
}
