//! The least work that answers the benchmark's requests: decode the
//! JSON-RPC message with serde_json (borrowing, no `Value` tree), dispatch on
//! the method, and serialize the same result shape an MCP server sends. No
//! header checks, no protocol ladder, no schema validation: the physical
//! limit for this work.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::borrow::Cow;

#[derive(Deserialize)]
struct Incoming<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow, default)]
    params: Option<Params<'a>>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<EchoArgs<'a>>,
}

#[derive(Deserialize)]
struct EchoArgs<'a> {
    #[serde(borrow)]
    text: Cow<'a, str>,
}

#[derive(Serialize)]
struct Envelope<'a, R> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    result: R,
}

#[derive(Serialize)]
struct ErrorEnvelope<'a> {
    jsonrpc: &'static str,
    id: Option<&'a RawValue>,
    error: ErrorBody,
}

#[derive(Serialize)]
struct ErrorBody {
    code: i64,
    message: &'static str,
}

#[derive(Serialize)]
struct ServerInfo {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
struct ResultMeta {
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    server_info: ServerInfo,
}

const INFO: ServerInfo = ServerInfo {
    name: "bench-bare",
    version: "0.0.0",
};

#[derive(Serialize)]
struct Text<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CallResult<'a> {
    result_type: &'static str,
    content: [Text<'a>; 1],
    #[serde(rename = "_meta")]
    meta: ResultMeta,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ListResult<'a> {
    result_type: &'static str,
    tools: &'a RawValue,
    #[serde(rename = "_meta")]
    meta: ResultMeta,
}

/// One entry of `tools/list`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Tool {
    name: String,
    description: &'static str,
    input_schema: serde_json::Value,
}

/// The `tools` array a `tools/list` returns, serialized once: `n` copies of
/// the echo tool named `tool_000`, `tool_001`, …, with the same input schema
/// as the MCP servers'. A list that never changes needs no per-request
/// serialization, so the floor is copying these bytes.
pub fn tools(n: usize) -> Box<RawValue> {
    let tools: Vec<Tool> = (0..n)
        .map(|i| Tool {
            name: format!("tool_{i:03}"),
            description: "Echoes the text back",
            input_schema: serde_json::json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "title": "EchoArgs",
                "type": "object",
                "properties": {"text": {"type": "string", "description": "The text to send back."}},
                "required": ["text"],
            }),
        })
        .collect();
    let json = serde_json::to_string(&tools).unwrap_or_else(|_| "[]".into());
    RawValue::from_string(json).unwrap_or_else(|_| RawValue::from_string("[]".into()).expect("[] is JSON"))
}

/// What to send back for one message.
pub enum Answer {
    /// A response body.
    Reply(Vec<u8>),
    /// A notification: nothing to send (HTTP 202).
    Nothing,
}

fn error(id: Option<&RawValue>, code: i64, message: &'static str) -> Answer {
    let e = ErrorEnvelope {
        jsonrpc: "2.0",
        id,
        error: ErrorBody { code, message },
    };
    Answer::Reply(serde_json::to_vec(&e).unwrap_or_default())
}

/// Decodes one JSON-RPC message and answers it.
pub fn answer(body: &[u8], tools: &RawValue) -> Answer {
    let msg: Incoming<'_> = match serde_json::from_slice(body) {
        Ok(m) => m,
        Err(_) => return error(None, -32700, "Parse error"),
    };
    let Some(id) = msg.id else {
        return Answer::Nothing;
    };
    let mut out = Vec::with_capacity(256);
    let written = match (msg.method.as_ref(), msg.params) {
        ("tools/call", Some(Params { name: Some(name), arguments: Some(args) })) if name == "echo" => {
            let r = Envelope {
                jsonrpc: "2.0",
                id,
                result: CallResult {
                    result_type: "complete",
                    content: [Text { kind: "text", text: &args.text }],
                    meta: ResultMeta { server_info: INFO },
                },
            };
            serde_json::to_writer(&mut out, &r)
        }
        ("tools/list", _) => {
            let r = Envelope {
                jsonrpc: "2.0",
                id,
                result: ListResult {
                    result_type: "complete",
                    tools,
                    meta: ResultMeta { server_info: INFO },
                },
            };
            serde_json::to_writer(&mut out, &r)
        }
        _ => return error(Some(id), -32601, "Method not found"),
    };
    match written {
        Ok(()) => Answer::Reply(out),
        Err(_) => error(Some(id), -32603, "Internal error"),
    }
}

/// `--tools N` from the command line (default 100).
pub fn tools_arg(args: &[String]) -> usize {
    args.iter()
        .position(|a| a == "--tools")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(100)
}
