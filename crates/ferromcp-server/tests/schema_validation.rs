//! What JSON Schema validation changes: a runtime setting
//! (`ServerBuilder::validate_schemas`) that the `schema-validation` feature
//! implements. With it on (the default with the feature), arguments failing
//! a tool's `inputSchema` never reach the handler and come back as an
//! `isError` result, and `structuredContent` not matching the
//! `outputSchema` is a -32603. Off (the only choice without the feature),
//! the schema is only advertised: a typed handler still rejects arguments
//! its parameter type cannot deserialize (`isError`), but schema-only
//! constraints such as `pattern` are the handler's job. Run both ways:
//! `cargo nextest run -p ferromcp-server --test schema_validation` and
//! `cargo nextest run -p ferromcp-server --test schema_validation --no-default-features --features http`.
// TOOL-06, TOOL-07, TOOL-09, SCHEMA-02

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ferromcp_server::testing::call_tool;
use ferromcp_server::transport::http::{HttpConfig, McpService};
use ferromcp_server::{Json, RequestContext, Server, ServerBuilder, tool};
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Word {
    word: String,
}

fn object(v: Value) -> serde_json::Map<String, Value> {
    match v {
        Value::Object(o) => o,
        _ => panic!("not an object"),
    }
}

fn builder() -> ServerBuilder {
    Server::builder("schemas", "1.0.0")
        .tool(
            tool("lower")
                .description("Echoes a lower-case word")
                .input_schema(object(json!({
                    "type": "object",
                    "properties": {"word": {"type": "string", "pattern": "^[a-z]+$"}},
                    "required": ["word"]
                })))
                .handler(|a: Word, _cx: RequestContext| async move { a.word }),
        )
        .tool(
            tool("count")
                .description("Returns a count that breaks its outputSchema")
                .output_schema(object(json!({
                    "type": "object",
                    "properties": {"n": {"type": "integer", "minimum": 0}},
                    "required": ["n"]
                })))
                .handler(|_: Word, _cx: RequestContext| async move { Json(json!({"n": -1})) }),
        )
}

/// The server with the default validation setting.
fn service() -> McpService {
    McpService::new(builder().build().expect("server"), HttpConfig::default())
}

/// The server with validation turned off at run time.
fn unvalidated() -> McpService {
    let server = builder().validate_schemas(false).build().expect("server");
    McpService::new(server, HttpConfig::default())
}

#[tokio::test]
async fn arguments_matching_the_schema_reach_the_handler() {
    let r = call_tool(&service(), "lower", json!({"word": "hello"})).await;
    assert_eq!(r["result"]["content"][0]["text"], "hello", "{r}");
    assert_ne!(r["result"]["isError"], true, "{r}");
}

#[tokio::test]
async fn undeserializable_arguments_are_an_is_error_result_either_way() {
    let r = call_tool(&service(), "lower", json!({"word": 42})).await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(r.get("error").is_none(), "{r}");
}

#[cfg(feature = "schema-validation")]
#[tokio::test]
async fn schema_only_constraints_are_enforced_with_schema_validation() {
    let r = call_tool(&service(), "lower", json!({"word": "Hello"})).await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(text.contains("/word"), "names the failing property: {text}");
}

// Issue 30 item 11: an error at the root names it instead of "at ''".
#[cfg(feature = "schema-validation")]
#[tokio::test]
async fn an_error_at_the_root_says_the_arguments_object() {
    let r = call_tool(&service(), "lower", json!({})).await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(text.contains("at the arguments object"), "{text}");
    assert!(!text.contains("''"), "{text}");
}

#[cfg(feature = "schema-validation")]
#[tokio::test]
async fn structured_content_breaking_the_output_schema_is_an_internal_error() {
    let r = call_tool(&service(), "count", json!({"word": "x"})).await;
    assert_eq!(r["error"]["code"], -32603, "{r}");
}

// Issue 25 item 3: validation is a runtime setting; off, a schema-only
// violation reaches the handler even where the feature is compiled in.
#[tokio::test]
async fn schema_only_constraints_are_the_handlers_job_with_validation_off() {
    let r = call_tool(&unvalidated(), "lower", json!({"word": "Hello"})).await;
    assert_eq!(r["result"]["content"][0]["text"], "Hello", "{r}");
    assert_ne!(r["result"]["isError"], true, "{r}");
}

#[tokio::test]
async fn structured_content_is_not_checked_with_validation_off() {
    let r = call_tool(&unvalidated(), "count", json!({"word": "x"})).await;
    assert_eq!(r["result"]["structuredContent"]["n"], -1, "{r}");
}

#[tokio::test]
async fn undeserializable_arguments_are_an_is_error_result_with_validation_off() {
    let r = call_tool(&unvalidated(), "lower", json!({"word": 42})).await;
    assert_eq!(r["result"]["isError"], true, "{r}");
}

#[cfg(not(feature = "schema-validation"))]
#[tokio::test]
async fn schema_only_constraints_are_the_handlers_job_without_schema_validation() {
    let r = call_tool(&service(), "lower", json!({"word": "Hello"})).await;
    assert_eq!(r["result"]["content"][0]["text"], "Hello", "{r}");
    assert_ne!(r["result"]["isError"], true, "{r}");
}

#[cfg(not(feature = "schema-validation"))]
#[tokio::test]
async fn structured_content_is_not_checked_without_schema_validation() {
    let r = call_tool(&service(), "count", json!({"word": "x"})).await;
    assert_eq!(r["result"]["structuredContent"]["n"], -1, "{r}");
}

// Asking for validation the build cannot do is a configuration error, not
// a server that silently serves unchecked.
#[cfg(not(feature = "schema-validation"))]
#[test]
fn validation_without_the_feature_is_a_configuration_error() {
    let e = builder()
        .validate_schemas(true)
        .build()
        .expect_err("refused");
    assert!(e.is_config(), "{e}");
    assert!(e.to_string().contains("schema-validation"), "{e}");
}

#[cfg(feature = "schema-validation")]
#[tokio::test]
async fn the_last_validation_setting_wins() {
    let server = builder()
        .validate_schemas(false)
        .validate_schemas(true)
        .build()
        .expect("server");
    let svc = McpService::new(server, HttpConfig::default());
    let r = call_tool(&svc, "lower", json!({"word": "Hello"})).await;
    assert_eq!(r["result"]["isError"], true, "{r}");
}
