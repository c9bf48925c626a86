//! Tool arguments are typed once. The one-pass `tools/call` decode leaves
//! the arguments as JSON text; the schema check walks the text (a `Value`
//! is made only for keywords the walk leaves to it), and a handler built by
//! `handler(f)` reads its arguments type from the text. The answers are
//! those of reading a `Value`; reading the text is more lenient only where
//! a `Value` loses information (`Box<RawValue>` members, integers beyond
//! 64 bits).
// TOOL-05, TOOL-06

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ferromcp_server::testing::{modern_request, send};
use ferromcp_server::transport::http::{HttpConfig, McpService};
use ferromcp_server::{RequestContext, Server, tool};
use serde_json::Value;
use serde_json::value::RawValue;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Text {
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Raw {
    #[schemars(with = "Value")]
    raw: Box<RawValue>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Wide {
    n: i128,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
enum Kind {
    A,
    B,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Mode {
    mode: Kind,
}

fn service() -> McpService {
    let server = Server::builder("arguments", "1.0.0")
        .tool(tool("text").handler(|a: Text, _cx: RequestContext| async move { a.text }))
        .tool(
            tool("raw")
                .handler(|a: Raw, _cx: RequestContext| async move { a.raw.get().to_owned() }),
        )
        .tool(tool("wide").handler(|a: Wide, _cx: RequestContext| async move { a.n.to_string() }))
        .tool(
            tool("mode").handler(|a: Mode, _cx: RequestContext| async move {
                match a.mode {
                    Kind::A => "a",
                    Kind::B => "b",
                }
                .to_owned()
            }),
        )
        .build()
        .expect("server");
    McpService::new(server, HttpConfig::default())
}

/// `tools/call` of `name` with `arguments` exactly as written (a 2026-07-28
/// request, so the one-pass decode takes it); the result.
async fn call(name: &str, arguments: &str) -> Value {
    let req = modern_request(
        "tools/call",
        serde_json::json!({"name": name, "arguments": {}}),
    );
    let (parts, body) = req.into_parts();
    let text = String::from_utf8(
        http_body_util::BodyExt::collect(body)
            .await
            .unwrap()
            .to_bytes()
            .to_vec(),
    )
    .unwrap()
    .replacen(
        r#""arguments":{}"#,
        &format!(r#""arguments":{arguments}"#),
        1,
    );
    let req = http::Request::from_parts(parts, http_body_util::Full::new(bytes::Bytes::from(text)));
    let r = send(&service(), req).await;
    r.get("result")
        .cloned()
        .unwrap_or_else(|| panic!("no result: {r}"))
}

fn text_of(r: &Value) -> &str {
    r["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {r}"))
}

#[tokio::test]
async fn a_handler_reads_its_arguments_from_the_text() {
    // Byte for byte: no `Value` stood in between.
    let r = call("raw", r#"{"raw": {"b":[1, 2.50]}}"#).await;
    assert_eq!(text_of(&r), r#"{"b":[1, 2.50]}"#, "{r}");
    let r = call("wide", r#"{"n":1180591620717411303424}"#).await;
    assert_eq!(text_of(&r), "1180591620717411303424", "{r}");
    let r = call("text", r#"{"\u0074ext":"h\u00e9"}"#).await;
    assert_eq!(text_of(&r), "hé", "{r}");
}

#[tokio::test]
async fn what_the_text_does_not_read_is_read_as_a_value_as_before() {
    // A duplicate member: the text read refuses it, the `Value` keeps the
    // last, as it always did.
    let r = call("text", r#"{"text":"a","text":"b"}"#).await;
    assert_eq!(text_of(&r), "b", "{r}");
    let r = call("text", r#"{"text":5}"#).await;
    assert_eq!(r["isError"], true, "{r}");
}

#[tokio::test]
async fn keywords_the_walk_leaves_to_the_value_are_still_checked() {
    // The arguments type's schema has an `enum`: checked on the `Value`.
    let r = call("mode", r#"{"mode":"A"}"#).await;
    assert_eq!(text_of(&r), "a", "{r}");
    let r = call("mode", r#"{"mode":"C"}"#).await;
    assert_eq!(r["isError"], true, "{r}");
    #[cfg(feature = "schema-validation")]
    assert!(
        text_of(&r).contains("/mode"),
        "the schema check answered: {r}"
    );
}
