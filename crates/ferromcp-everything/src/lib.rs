//! The everything-server: every fixture the official conformance suite
//! needs (the scenarios of the `@modelcontextprotocol/conformance` suite), plus an `echo` tool used by the
//! benchmarks. Also a readable tour of the server API.

pub mod config;
pub mod tasks;

use ferromcp_protocol::base64;
use ferromcp_protocol::types::{
    CallToolResult, Completion, ContentBlock, CreateMessageRequestParams, ElicitAction,
    ElicitRequestParams, ElicitResult, GetPromptResult, InputRequest, LoggingLevel, PromptMessage,
    Resource, ResourceContents, ResourceTemplate, Role,
};
use ferromcp_server::{
    HandlerError, Limits, NoArgs, PromptArgs, RequestContext, ResourceDef, ResourceRequest, Server,
    ServerBuilder, TemplateDef, prompt, tool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A 1×1 PNG.
pub const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// A short silent 8 kHz mono 16-bit WAV, base64.
pub fn wav_base64() -> String {
    let samples = 80u32;
    let data_len = samples * 2;
    let mut b = Vec::with_capacity(44 + data_len as usize);
    b.extend_from_slice(b"RIFF");
    b.extend_from_slice(&(36 + data_len).to_le_bytes());
    b.extend_from_slice(b"WAVEfmt ");
    b.extend_from_slice(&16u32.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes()); // PCM
    b.extend_from_slice(&1u16.to_le_bytes()); // mono
    b.extend_from_slice(&8000u32.to_le_bytes());
    b.extend_from_slice(&16000u32.to_le_bytes());
    b.extend_from_slice(&2u16.to_le_bytes());
    b.extend_from_slice(&16u16.to_le_bytes());
    b.extend_from_slice(b"data");
    b.extend_from_slice(&data_len.to_le_bytes());
    b.resize(44 + data_len as usize, 0);
    base64::encode(&b)
}

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct SleepArgs {
    /// How long to sleep, in milliseconds.
    #[schemars(range(max = 600000))]
    ms: u64,
}

#[derive(Deserialize, JsonSchema)]
struct PromptArg {
    /// The prompt to send to the client's model.
    prompt: String,
}

#[derive(Deserialize, JsonSchema)]
struct UrlArg {
    /// The URL the user should visit.
    url: String,
}

#[derive(Deserialize, JsonSchema)]
struct MessageArg {
    /// The message to show the user.
    message: String,
}

fn from_json<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, HandlerError> {
    serde_json::from_value(v)
        .map_err(|e| HandlerError::Protocol(ferromcp_protocol::ErrorObject::internal(e)))
}

fn elicit_name() -> Result<ElicitRequestParams, HandlerError> {
    from_json(json!({
        "mode": "form",
        "message": "What is your name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string", "description": "Your name"}}, "required": ["name"]}
    }))
}

fn sampling(prompt: &str) -> Result<CreateMessageRequestParams, HandlerError> {
    from_json(json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": 100
    }))
}

/// The longest a `debug_slow_*` fixture waits (ten minutes).
const MAX_SLOW_MS: u64 = 600_000;

/// How often a `debug_slow_*` fixture reports progress.
const SLOW_TICK: Duration = Duration::from_millis(100);

/// Counts a request that ended before its wait did: cancelled, or
/// dropped by the server (a modern HTTP client closed the connection).
struct CountUnlessDone<'a> {
    count: &'a AtomicU64,
    done: bool,
}

impl Drop for CountUnlessDone<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.count.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Waits `ms` milliseconds (capped at [`MAX_SLOW_MS`]), reporting progress
/// every [`SLOW_TICK`] as milliseconds waited of `ms`; returns `false` when
/// the request was cancelled first. A cancelled or dropped wait is counted
/// in `cancelled`.
async fn slow(cx: &RequestContext, ms: u64, cancelled: &AtomicU64) -> bool {
    let total = ms.min(MAX_SLOW_MS);
    let start = tokio::time::Instant::now();
    let mut guard = CountUnlessDone {
        count: cancelled,
        done: false,
    };
    loop {
        let waited = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
        if waited >= total {
            guard.done = true;
            return true;
        }
        cx.progress(
            waited as f64,
            Some(total as f64),
            Some(&format!("waited {waited} of {total} ms")),
        );
        let step = SLOW_TICK.min(Duration::from_millis(total - waited));
        tokio::select! {
            _ = tokio::time::sleep(step) => {}
            _ = cx.cancelled() => return false,
        }
    }
}

/// `ms` of a `debug_slow_*` prompt or resource (a decimal number).
fn slow_ms(raw: Option<&String>) -> Result<u64, HandlerError> {
    let raw = raw.map(String::as_str).unwrap_or("1000");
    raw.parse::<u64>().map_err(|_| {
        HandlerError::Protocol(ferromcp_protocol::ErrorObject::invalid_params(format!(
            "ms must be a whole number of milliseconds, not {raw:?}"
        )))
    })
}

fn elicit_summary(r: &ElicitResult) -> String {
    let action = match r.action {
        ElicitAction::Accept => "accept",
        ElicitAction::Decline => "decline",
        ElicitAction::Cancel => "cancel",
    };
    let content = serde_json::to_string(&r.content).unwrap_or_default();
    format!("User response: action={action}, content={content}")
}

/// Builds the everything-server with the default [`Limits`].
pub fn everything_server() -> Result<Server, ferromcp_server::Error> {
    everything_builder().build()
}

/// Builds the everything-server with `limits` instead of the defaults (the
/// `everything-server` binary reads them from `MCP_*` environment variables
/// so abuse tests can run with small caps and short timeouts).
pub fn everything_server_with(limits: Limits) -> Result<Server, ferromcp_server::Error> {
    everything_builder().limits(limits).build()
}

/// The everything-server's builder with every fixture registered, for callers
/// that want to set more than limits (e.g. `requestState` keys) before
/// building.
pub fn everything_builder() -> ServerBuilder {
    tasks::register(everything_fixtures())
}

/// Every fixture but the tasks extension ones.
fn everything_fixtures() -> ServerBuilder {
    // Requests cancelled while a diagnostic fixture waited (`debug_sleep`,
    // `debug_slow_prompt`, `test://debug/slow/{ms}`), for `debug_cancellations`.
    let cancelled = Arc::new(AtomicU64::new(0));
    let (c_sleep, c_prompt, c_read, c_count) = (
        cancelled.clone(),
        cancelled.clone(),
        cancelled.clone(),
        cancelled,
    );
    Server::builder("mcp-rs-everything-server", env!("CARGO_PKG_VERSION"))
        .instructions("Conformance fixtures for the Rust MCP SDK.")
        .logging(true)
        .resource_subscriptions(true)
        .tool(tool("echo").description("Echoes the text back").handler(|a: EchoArgs, _cx: RequestContext| async move { a.text }))
        .tool(
            tool("test_simple_text")
                .description("Returns a simple text response")
                .handler(|_: NoArgs, _cx: RequestContext| async { "This is a simple text response for testing." }),
        )
        .tool(tool("test_image_content").description("Returns an image").handler(|_: NoArgs, _cx: RequestContext| async {
            ContentBlock::image(PNG_BASE64, "image/png")
        }))
        .tool(tool("test_audio_content").description("Returns audio").handler(|_: NoArgs, _cx: RequestContext| async {
            ContentBlock::audio(wav_base64(), "audio/wav")
        }))
        .tool(tool("test_embedded_resource").description("Returns an embedded resource").handler(|_: NoArgs, _cx: RequestContext| async {
            ContentBlock::embedded(ResourceContents::text("test://embedded-resource", Some("text/plain".into()), "This is an embedded resource content."))
        }))
        .tool(tool("test_multiple_content_types").description("Returns text, image and a resource").handler(|_: NoArgs, _cx: RequestContext| async {
            vec![
                ContentBlock::text("Multiple content types test:"),
                ContentBlock::image(PNG_BASE64, "image/png"),
                ContentBlock::embedded(ResourceContents::text(
                    "test://mixed-content-resource",
                    Some("application/json".into()),
                    r#"{"test":"data","value":123}"#,
                )),
            ]
        }))
        .tool(tool("test_error_handling").description("Always fails with a tool error").handler(|_: NoArgs, _cx: RequestContext| async {
            CallToolResult::error(vec![ContentBlock::text("This tool intentionally returns an error for testing")])
        }))
        .tool(tool("test_tool_with_progress").description("Reports progress three times").handler(|_: NoArgs, cx: RequestContext| async move {
            for p in [0.0, 50.0, 100.0] {
                cx.progress(p, Some(100.0), Some(&format!("Completed step {p}")));
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            "Progress test completed"
        }))
        .tool(tool("test_tool_with_logging").description("Sends three log notifications").handler(|_: NoArgs, cx: RequestContext| async move {
            for (i, msg) in ["Tool execution started", "Tool processing data", "Tool execution completed"].iter().enumerate() {
                cx.log(LoggingLevel::Info, Some("test_tool_with_logging"), json!(msg));
                if i < 2 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            "Logging test completed"
        }))
        .tool(tool("test_reconnection").description("Closes its SSE stream mid-call; the result arrives on the resumed stream (SEP-1699)").handler(|_: NoArgs, cx: RequestContext| async move {
            cx.close_sse_stream(Some(500));
            tokio::time::sleep(Duration::from_millis(100)).await;
            "Reconnection test completed successfully"
        }))
        .tool(tool("debug_print_stdout").description("Diagnostic: prints to stdout, which must never reach the protocol stream").handler(|_: NoArgs, _cx: RequestContext| async {
            println!("this line must not corrupt the stdio protocol stream");
            "printed"
        }))
        .tool(tool("debug_panic").description("Diagnostic: panics; the server answers -32603 and keeps serving").handler(|_: NoArgs, _cx: RequestContext| async {
            if std::hint::black_box(true) {
                panic!("deliberate panic from debug_panic");
            }
            "unreachable"
        }))
        .tool(tool("debug_sleep").description("Diagnostic: sleeps for ms milliseconds unless cancelled, reporting progress").handler(move |a: SleepArgs, cx: RequestContext| {
            let cancelled = c_sleep.clone();
            async move { if slow(&cx, a.ms, &cancelled).await { "slept" } else { "cancelled" } }
        }))
        .tool(tool("debug_cancellations").description("Diagnostic: how many waiting debug_* requests were cancelled or dropped before they finished").handler(move |_: NoArgs, _cx: RequestContext| {
            let n = c_count.load(Ordering::Relaxed);
            async move { n.to_string() }
        }))
        .tool(tool("test_logging_tool").description("Logs, if the request asked for logs").handler(|_: NoArgs, cx: RequestContext| async move {
            cx.log(LoggingLevel::Info, Some("test_logging_tool"), json!("log message from test_logging_tool"));
            "Logging tool completed"
        }))
        .tool(tool("test_sampling").description("Asks the client's model").handler(|a: PromptArg, cx: RequestContext| async move {
            let r = cx.sample("sampling", sampling(&a.prompt)?)?;
            let text = r.content.blocks().iter().find_map(|b| b.as_text().map(str::to_owned)).unwrap_or_default();
            Ok::<_, HandlerError>(format!("LLM response: {text}"))
        }))
        .tool(tool("test_elicitation").description("Asks the user").handler(|a: MessageArg, cx: RequestContext| async move {
            let params = from_json(json!({
                "mode": "form",
                "message": a.message,
                "requestedSchema": {"type": "object", "properties": {"response": {"type": "string", "description": "Your response"}}, "required": ["response"]}
            }))?;
            let r = cx.elicit("elicitation", params)?;
            Ok::<_, HandlerError>(elicit_summary(&r))
        }))
        .tool(tool("debug_request_meta").description("Diagnostic: returns the request's _meta keys other than the protocol envelope (trace context and application keys), as JSON text").handler(|_: NoArgs, cx: RequestContext| async move {
            let m = cx.meta();
            let mut out = m.other.clone();
            for (k, v) in [(ferromcp_protocol::meta::TRACEPARENT, &m.traceparent), (ferromcp_protocol::meta::TRACESTATE, &m.tracestate), (ferromcp_protocol::meta::BAGGAGE, &m.baggage)] {
                if let Some(v) = v {
                    out.insert(k.to_owned(), Value::String(v.clone()));
                }
            }
            Value::Object(out).to_string()
        }))
        .tool(tool("debug_url_elicitation").description("Diagnostic: asks the user to visit a URL (URL-mode elicitation)").handler(|a: UrlArg, cx: RequestContext| async move {
            let params = from_json(json!({
                "mode": "url",
                "message": "Please confirm on the web page",
                "url": a.url,
                "elicitationId": "debug-url-elicitation"
            }))?;
            let r = cx.elicit("visit", params)?;
            Ok::<_, HandlerError>(elicit_summary(&r))
        }))
        .tool(tool("test_elicitation_sep1034_defaults").description("Elicitation with default values").handler(|_: NoArgs, cx: RequestContext| async move {
            let params = from_json(json!({
                "mode": "form",
                "message": "Please review and update the form fields with defaults",
                "requestedSchema": {"type": "object", "properties": {
                    "name": {"type": "string", "description": "User name", "default": "John Doe"},
                    "age": {"type": "integer", "description": "User age", "default": 30},
                    "score": {"type": "number", "description": "User score", "default": 95.5},
                    "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "description": "Verification status", "default": true}
                }}
            }))?;
            let r = cx.elicit("defaults", params)?;
            Ok::<_, HandlerError>(elicit_summary(&r))
        }))
        .tool(tool("test_elicitation_sep1330_enums").description("Elicitation with enum schemas").handler(|_: NoArgs, cx: RequestContext| async move {
            let params = from_json(json!({
                "mode": "form",
                "message": "Please select options from the enum fields",
                "requestedSchema": {"type": "object", "properties": {
                    "untitledSingle": {"type": "string", "description": "Untitled single-select", "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {"type": "string", "description": "Titled single-select", "oneOf": [
                        {"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"}, {"const": "value3", "title": "Third Option"}]},
                    "legacyEnum": {"type": "string", "description": "Legacy titled enum", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
                    "untitledMulti": {"type": "array", "description": "Untitled multi-select", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                    "titledMulti": {"type": "array", "description": "Titled multi-select", "items": {"anyOf": [
                        {"const": "value1", "title": "First Choice"}, {"const": "value2", "title": "Second Choice"}, {"const": "value3", "title": "Third Choice"}]}}
                }}
            }))?;
            let r = cx.elicit("enums", params)?;
            Ok::<_, HandlerError>(elicit_summary(&r))
        }))
        .tool(
            tool("json_schema_2020_12_tool")
                .description("A tool whose inputSchema uses JSON Schema 2020-12 features")
                .input_schema(schema_2020_12())
                .raw_handler(|args, _cx: RequestContext| async move {
                    format!("Received: {}", serde_json::Value::Object(args))
                }),
        )
        .tool(tool("test_missing_capability").description("Needs the sampling capability").handler(|_: NoArgs, cx: RequestContext| async move {
            let r = cx.sample("needs_sampling", sampling("Say hello")?)?;
            let text = r.content.blocks().iter().find_map(|b| b.as_text().map(str::to_owned)).unwrap_or_default();
            Ok::<_, HandlerError>(format!("Sampling answered: {text}"))
        }))
        .tool(tool("test_streaming_elicitation").description("Completes without server-to-client requests").handler(|_: NoArgs, cx: RequestContext| async move {
            cx.progress(1.0, Some(1.0), Some("working"));
            "Streaming elicitation diagnostic completed"
        }))
        .tool(tool("test_trigger_tool_change").description("Adds or removes a tool and notifies listeners").handler(|_: NoArgs, cx: RequestContext| async move {
            let server = cx.server();
            if !server.remove_tool("dynamic_tool") {
                server.add_tool(tool("dynamic_tool").description("Added at run time").handler(|_: NoArgs, _cx: RequestContext| async { "dynamic" }))?;
            }
            Ok::<_, HandlerError>("Tool list changed")
        }))
        .tool(tool("test_trigger_prompt_change").description("Adds or removes a prompt and notifies listeners").handler(|_: NoArgs, cx: RequestContext| async move {
            let server = cx.server();
            if !server.remove_prompt("dynamic_prompt") {
                server.add_prompt(prompt("dynamic_prompt").description("Added at run time").handler(|_: PromptArgs, _cx: RequestContext| async {
                    vec![PromptMessage::new(Role::User, ContentBlock::text("dynamic"))]
                }))?;
            }
            Ok::<_, HandlerError>("Prompt list changed")
        }))
        .tool(
            tool("test_x_mcp_header")
                .description("Mirrors its region argument into the Mcp-Param-Region header")
                .input_schema(
                    serde_json::from_value(json!({
                        "type": "object",
                        "properties": {"region": {"type": "string", "x-mcp-header": "Region", "description": "Region"}},
                        "required": ["region"]
                    }))
                    .unwrap_or_default(),
                )
                .raw_handler(|args, _cx: RequestContext| async move {
                    format!("region={}", args.get("region").and_then(Value::as_str).unwrap_or(""))
                }),
        )
        // MRTR fixtures (SEP-2322).
        .tool(tool("test_input_required_result_elicitation").description("Asks the user's name via MRTR").handler(|_: NoArgs, cx: RequestContext| async move {
            let r = cx.elicit("user_name", elicit_name()?)?;
            Ok::<_, HandlerError>(format!("Hello! {}", elicit_summary(&r)))
        }))
        .tool(tool("test_input_required_result_sampling").description("Asks the client's model via MRTR").handler(|_: NoArgs, cx: RequestContext| async move {
            let r = cx.sample("capital_question", sampling("What is the capital of France?")?)?;
            let text = r.content.blocks().iter().find_map(|b| b.as_text().map(str::to_owned)).unwrap_or_default();
            Ok::<_, HandlerError>(format!("The model said: {text}"))
        }))
        .tool(tool("test_input_required_result_list_roots").description("Asks for the client's roots via MRTR").handler(|_: NoArgs, cx: RequestContext| async move {
            cx.ask_all([("client_roots".to_string(), InputRequest::ListRoots(Some(Default::default())))])?;
            let roots: ferromcp_protocol::types::ListRootsResult = cx.input("client_roots").unwrap_or_default();
            Ok::<_, HandlerError>(format!("Client has {} root(s)", roots.roots.len()))
        }))
        .tool(tool("test_input_required_result_request_state").description("MRTR with request state").handler(|_: NoArgs, cx: RequestContext| async move {
            if cx.state() != Some(b"awaiting-confirmation".as_slice()) || cx.input::<ElicitResult>("confirm").is_none() {
                let ask = from_json(json!({"mode":"form","message":"Confirm?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}))?;
                return Err(HandlerError::NeedInput(ferromcp_server::InputRequired::new().request("confirm", InputRequest::Elicitation(ask)).state("awaiting-confirmation")));
            }
            Ok("Request state round trip completed")
        }))
        .tool(tool("test_input_required_result_multiple_inputs").description("MRTR with several input requests").handler(|_: NoArgs, cx: RequestContext| async move {
            cx.ask_all([
                ("user_name".to_string(), InputRequest::Elicitation(elicit_name()?)),
                ("capital_question".to_string(), InputRequest::Sampling(sampling("What is the capital of France?")?)),
                ("client_roots".to_string(), InputRequest::ListRoots(Some(Default::default()))),
            ])?;
            Ok::<_, HandlerError>("All inputs received")
        }))
        .tool(tool("test_input_required_result_multi_round").description("MRTR over several rounds").handler(|_: NoArgs, cx: RequestContext| async move {
            let step = cx.state().map(|s| s.to_vec()).unwrap_or_default();
            let ask = |key: &str, msg: &str| -> Result<InputRequest, HandlerError> {
                Ok(InputRequest::Elicitation(from_json(json!({"mode":"form","message":msg,"requestedSchema":{"type":"object","properties":{key:{"type":"string"}}}}))?))
            };
            match step.as_slice() {
                b"step2" if cx.input::<ElicitResult>("step2").is_some() => Ok("Multi-round flow completed"),
                b"step1" | b"step2" if cx.input::<ElicitResult>("step1").is_some() => Err(HandlerError::NeedInput(
                    ferromcp_server::InputRequired::new().request("step2", ask("step2", "Second question")?).state("step2"),
                )),
                _ => Err(HandlerError::NeedInput(ferromcp_server::InputRequired::new().request("step1", ask("step1", "First question")?).state("step1"))),
            }
        }))
        .tool(tool("test_input_required_result_tampered_state").description("MRTR whose state must not be tampered with").handler(|_: NoArgs, cx: RequestContext| async move {
            if cx.state() == Some(b"issued".as_slice()) && cx.input::<ElicitResult>("user_name").is_some() {
                return Ok("State verified");
            }
            Err(HandlerError::NeedInput(ferromcp_server::InputRequired::new().request("user_name", InputRequest::Elicitation(elicit_name()?)).state("issued")))
        }))
        .tool(tool("test_input_required_result_capabilities").description("Asks only for what the client supports").handler(|_: NoArgs, cx: RequestContext| async move {
            let candidates = [
                ("user_name", InputRequest::Elicitation(elicit_name()?)),
                ("capital_question", InputRequest::Sampling(sampling("What is the capital of France?")?)),
                ("client_roots", InputRequest::ListRoots(Some(Default::default()))),
            ];
            let caps = cx.client_capabilities().clone();
            let Some((key, req)) = candidates.into_iter().find(|(_, r)| r.is_allowed_by(&caps)) else {
                return Err(HandlerError::Protocol(ferromcp_protocol::ErrorObject::missing_client_capability(json!({"elicitation": {}}))));
            };
            cx.ask_all([(key.to_string(), req)])?;
            Ok("Capability-aware input received")
        }))
        // Resources.
        .resource(ResourceDef::new(
            Resource { mime_type: Some("text/plain".into()), description: Some("A static text resource".into()), ..Resource::new("test://static-text", "static-text") },
            |r: ResourceRequest, _cx: RequestContext| async move {
                ResourceContents::text(r.uri, Some("text/plain".into()), "This is the content of the static text resource.")
            },
        ))
        .resource(ResourceDef::new(
            Resource { mime_type: Some("image/png".into()), description: Some("A static binary resource".into()), ..Resource::new("test://static-binary", "static-binary") },
            |r: ResourceRequest, _cx: RequestContext| async move { ResourceContents::blob(r.uri, Some("image/png".into()), PNG_BASE64) },
        ))
        .resource(ResourceDef::new(
            Resource { mime_type: Some("text/plain".into()), description: Some("A resource that can be subscribed to".into()), ..Resource::new("test://watched-resource", "watched-resource") },
            |r: ResourceRequest, _cx: RequestContext| async move { ResourceContents::text(r.uri, Some("text/plain".into()), "Watched resource content") },
        ))
        .resource_template(TemplateDef::new(
            ResourceTemplate {
                uri_template: "test://template/{id}/data".into(),
                name: "template".into(),
                description: Some("A templated resource".into()),
                mime_type: Some("application/json".into()),
                ..Default::default()
            },
            |r: ResourceRequest, _cx: RequestContext| async move {
                let id = r.vars.get("id").cloned().unwrap_or_default();
                let text = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string();
                ResourceContents::text(r.uri, Some("application/json".into()), text)
            },
        ))
        .resource_template(TemplateDef::new(
            ResourceTemplate {
                uri_template: "test://debug/slow/{ms}".into(),
                name: "debug-slow".into(),
                description: Some("Diagnostic: answers after ms milliseconds unless cancelled, reporting progress".into()),
                mime_type: Some("text/plain".into()),
                ..Default::default()
            },
            move |r: ResourceRequest, cx: RequestContext| {
                let cancelled = c_read.clone();
                async move {
                    let ms = slow_ms(r.vars.get("ms"))?;
                    let text = if slow(&cx, ms, &cancelled).await { format!("waited {ms} ms") } else { "cancelled".to_owned() };
                    Ok::<_, HandlerError>(ResourceContents::text(r.uri, Some("text/plain".into()), text))
                }
            },
        ))
        // Prompts.
        .prompt(prompt("test_simple_prompt").description("A simple prompt without arguments").handler(|_: PromptArgs, _cx: RequestContext| async {
            vec![PromptMessage::new(Role::User, ContentBlock::text("This is a simple prompt for testing."))]
        }))
        .prompt(
            prompt("test_prompt_with_arguments")
                .description("A prompt with two required arguments")
                .argument("arg1", "First test argument", true)
                .argument("arg2", "Second test argument", true)
                .handler(|a: PromptArgs, _cx: RequestContext| async move {
                    let (a1, a2) = (a.get("arg1").cloned().unwrap_or_default(), a.get("arg2").cloned().unwrap_or_default());
                    vec![PromptMessage::new(Role::User, ContentBlock::text(format!("Prompt with arguments: arg1='{a1}', arg2='{a2}'")))]
                }),
        )
        .prompt(
            prompt("test_prompt_with_embedded_resource")
                .description("A prompt embedding a resource")
                .argument("resourceUri", "URI of the resource to embed", true)
                .handler(|a: PromptArgs, _cx: RequestContext| async move {
                    let uri = a.get("resourceUri").cloned().unwrap_or_default();
                    vec![
                        PromptMessage::new(Role::User, ContentBlock::embedded(ResourceContents::text(uri, Some("text/plain".into()), "Embedded resource content for testing."))),
                        PromptMessage::new(Role::User, ContentBlock::text("Please process the embedded resource above.")),
                    ]
                }),
        )
        .prompt(prompt("test_prompt_with_image").description("A prompt with an image").handler(|_: PromptArgs, _cx: RequestContext| async {
            vec![
                PromptMessage::new(Role::User, ContentBlock::image(PNG_BASE64, "image/png")),
                PromptMessage::new(Role::User, ContentBlock::text("Please analyze the image above.")),
            ]
        }))
        .prompt(prompt("test_input_required_result_prompt").description("A prompt that asks for context via MRTR").handler(|_: PromptArgs, cx: RequestContext| async move {
            let ask = from_json(json!({"mode":"form","message":"What context should the prompt use?","requestedSchema":{"type":"object","properties":{"context":{"type":"string"}},"required":["context"]}}))?;
            let r = cx.elicit("user_context", ask)?;
            Ok::<_, HandlerError>(GetPromptResult {
                description: Some("Prompt built from elicited context".into()),
                messages: vec![PromptMessage::new(Role::User, ContentBlock::text(format!("Context: {}", elicit_summary(&r))))],
                ..Default::default()
            })
        }))
        .prompt(
            prompt("debug_slow_prompt")
                .description("Diagnostic: answers after ms milliseconds unless cancelled, reporting progress")
                .argument("ms", "How long to wait, in milliseconds", true)
                .handler(move |a: PromptArgs, cx: RequestContext| {
                    let cancelled = c_prompt.clone();
                    async move {
                        let ms = slow_ms(a.get("ms"))?;
                        let text = if slow(&cx, ms, &cancelled).await { format!("waited {ms} ms") } else { "cancelled".to_owned() };
                        Ok::<_, HandlerError>(vec![PromptMessage::new(Role::User, ContentBlock::text(text))])
                    }
                }),
        )
        .completion(|p: ferromcp_protocol::types::CompleteRequestParams, _cx: RequestContext| async move {
            let candidates: &[&str] = match p.argument.name.as_str() {
                "arg1" | "arg2" => &["test1", "test2", "test3", "testing"],
                "resourceUri" => &["test://static-text", "test://static-binary"],
                _ => &[],
            };
            let values = candidates.iter().filter(|c| c.starts_with(&p.argument.value)).map(|s| s.to_string()).collect();
            Ok(Completion::from_values(values))
        })
}

fn schema_2020_12() -> ferromcp_protocol::types::JsonObject {
    serde_json::from_value(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    }))
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    // TOOL-06, TOOL-09: the plain tool schemas take the built-in checker,
    // so serving them runs no `jsonschema` code (the idle-RSS figure).
    #[test]
    fn only_the_tools_with_non_plain_schemas_take_the_full_validator() {
        let server = super::everything_server().expect("the fixtures build");
        let outside = ferromcp_server::testing::tools_outside_plain_schemas(&server);
        // None: even the 2020-12 conformance fixture (`$defs`, `$ref`,
        // `$anchor`, `allOf`/`anyOf`, `if`/`then`/`else`) is plain, so the
        // server runs no `jsonschema` code at start-up or for valid calls.
        assert!(outside.is_empty(), "{outside:?}");
    }
}
