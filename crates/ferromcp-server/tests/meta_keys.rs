//! The `_meta` an application puts on its tools, prompts, resources and
//! templates follows the key rules: a misuse is refused
//! when the server is built or the item added, with the key named
//! (issue 13 item 12).
// META-01, META-02

use ferromcp_server::protocol::types::JsonObject;
use ferromcp_server::protocol::types::Resource;
use ferromcp_server::{NoArgs, PromptArgs, RequestContext, ResourceDef, Server, prompt, tool};
use serde_json::json;

fn meta(v: serde_json::Value) -> JsonObject {
    match v {
        serde_json::Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

fn with_tool_meta(m: JsonObject) -> Result<Server, ferromcp_server::Error> {
    Server::builder("meta", "1.0.0")
        .tool(
            tool("t")
                .meta(m)
                .handler(|_: NoArgs, _cx: RequestContext| async { "ok" }),
        )
        .build()
}

#[test]
fn reserved_prefixes_and_bad_keys_are_refused_at_build_time() {
    for bad in [
        "io.modelcontextprotocol/custom",
        "dev.mcp/x",
        "modelcontextprotocol.io/x", // reserved under 2025-06-18's reading
        "bad key",
        "-leading-dash",
    ] {
        let e = with_tool_meta(meta(json!({ bad: 1 }))).expect_err(bad);
        assert!(e.is_config(), "{bad}: {e}");
        assert!(e.to_string().contains(&format!("{bad:?}")), "{bad}: {e}");
    }
    for ok in ["com.example/ui", "progressToken", "traceparent", "plain"] {
        assert!(with_tool_meta(meta(json!({ ok: 1 }))).is_ok(), "{ok}");
    }
}

#[test]
fn prompts_resources_and_runtime_additions_are_checked_too() {
    let bad = meta(json!({"io.modelcontextprotocol/mine": true}));
    let e =
        Server::builder("meta", "1.0.0")
            .prompt(prompt("p").meta(bad.clone()).handler(
                |_: PromptArgs, _cx: RequestContext| async {
                    Vec::<ferromcp_server::protocol::types::PromptMessage>::new()
                },
            ))
            .build()
            .expect_err("prompt _meta");
    assert!(e.is_config() && e.to_string().contains("prompt"), "{e}");
    let e = Server::builder("meta", "1.0.0")
        .resource(ResourceDef::new(
            Resource {
                meta: Some(bad.clone()),
                ..Resource::new("test://r", "r")
            },
            |_r, _cx: RequestContext| async {
                Vec::<ferromcp_server::protocol::types::ResourceContents>::new()
            },
        ))
        .build()
        .expect_err("resource _meta");
    assert!(e.is_config(), "{e}");
    let server = with_tool_meta(JsonObject::new()).expect("valid server");
    let e = server
        .add_tool(
            tool("later")
                .meta(bad)
                .handler(|_: NoArgs, _cx: RequestContext| async { "ok" }),
        )
        .expect_err("add_tool _meta");
    assert!(e.is_config(), "{e}");
}
