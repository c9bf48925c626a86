//! Fixtures of the tasks extension scenarios (`tasks-*`, SEP-2663) of the
//! pinned conformance harness: `greet` (never a task), `slow_compute`,
//! `failing_job`, `protocol_error_job`, `confirm_delete`, `multi_input`
//! and `test_tool_with_task`.

use ferromcp_protocol::ErrorObject;
use ferromcp_protocol::types::{
    CallToolResult, ContentBlock, ElicitAction, ElicitResult, ElicitValue, InputRequest,
};
use ferromcp_server::tasks::{InMemoryLimits, InMemoryTaskStore};
use ferromcp_server::{
    HandlerError, NoArgs, RequestContext, ServerBuilder, TaskConfig, TaskCreation, TaskSupport,
    tool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct ComputeArgs {
    /// How long to work, in whole seconds (at most 600).
    #[schemars(range(max = 600))]
    seconds: u64,
    /// A label echoed in the result.
    #[serde(default)]
    label: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct DeleteArgs {
    /// The file to (pretend to) delete.
    filename: String,
}

/// Sleeps `d` unless the call is cancelled first; false when cancelled.
async fn work(cx: &RequestContext, d: Duration) -> bool {
    tokio::select! {
        () = tokio::time::sleep(d) => true,
        () = cx.cancelled() => false,
    }
}

fn form(message: &str, properties: serde_json::Value) -> Result<InputRequest, HandlerError> {
    serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {"type": "object", "properties": properties}
        }
    }))
    .map_err(|e| HandlerError::Protocol(ErrorObject::internal(e)))
}

fn accepted(r: &ElicitResult) -> bool {
    r.action == ElicitAction::Accept
}

/// Task settings from the environment, for wire tests that need small caps
/// or short lifetimes: `MCP_TASKS_MAX_LIVE`, `MCP_TASKS_MAX_RETAINED` (the
/// in-memory store's caps) and `MCP_TASK_TTL_MS`. Unset or unparsable
/// variables keep the defaults.
fn config_from_env() -> TaskConfig {
    fn var(name: &str) -> Option<u64> {
        std::env::var(name).ok().and_then(|v| v.parse().ok())
    }
    let mut limits = InMemoryLimits::default();
    if let Some(n) = var("MCP_TASKS_MAX_LIVE") {
        limits.max_live = usize::try_from(n).unwrap_or(usize::MAX);
    }
    if let Some(n) = var("MCP_TASKS_MAX_RETAINED") {
        limits.max_retained = usize::try_from(n).unwrap_or(usize::MAX);
    }
    let mut config = TaskConfig {
        store: Arc::new(InMemoryTaskStore::new(limits)),
        ..TaskConfig::default()
    };
    if let Some(ms) = var("MCP_TASK_TTL_MS") {
        config.ttl = Duration::from_millis(ms.max(1));
    }
    config
}

/// Registers the task fixtures on `b` (task settings: the `MCP_TASK*` variables read by `config_from_env`).
pub fn register(b: ServerBuilder) -> ServerBuilder {
    b.tasks(config_from_env())
    .tool(tool("greet").description("Greets by name (never a task)").handler(
        |a: GreetArgs, _cx: RequestContext| async move { format!("Hello, {}!", a.name) },
    ))
    .tool(
        tool("slow_compute")
            .description("Works for `seconds` seconds, as a task when the client supports tasks; cancellable")
            .task_support(TaskSupport::Optional)
            .handler(|a: ComputeArgs, cx: RequestContext| async move {
                let secs = a.seconds.min(600);
                let label = a.label.unwrap_or_default();
                for i in 0..secs {
                    cx.progress(i as f64, Some(secs as f64), Some(&format!("{i} of {secs} s")));
                    if !work(&cx, Duration::from_secs(1)).await {
                        return Err(HandlerError::Failed("cancelled".into()));
                    }
                }
                Ok(format!("Computed {label} in {secs} s"))
            }),
    )
    .tool(
        tool("failing_job")
            .description("A task that ends with a tool error (isError) after a short while")
            .task_support(TaskSupport::Required)
            .handler(|_: NoArgs, cx: RequestContext| async move {
                work(&cx, Duration::from_millis(300)).await;
                Ok::<_, HandlerError>(CallToolResult::error(vec![ContentBlock::text(
                    "the job failed (by design)",
                )]))
            }),
    )
    .tool(
        tool("protocol_error_job")
            .description("A task that ends with a JSON-RPC error (status failed)")
            .task_support(TaskSupport::Optional)
            .handler(|_: NoArgs, cx: RequestContext| async move {
                work(&cx, Duration::from_millis(100)).await;
                Err::<String, _>(HandlerError::Protocol(ErrorObject::internal(
                    "the job hit an internal error (by design)",
                )))
            }),
    )
    .tool(
        tool("confirm_delete")
            .description("A task that asks the user to confirm (elicitation), then completes")
            .task_support(TaskSupport::Optional)
            .handler(|a: DeleteArgs, cx: RequestContext| async move {
                let ask = form(
                    &format!("Delete {}?", a.filename),
                    json!({"confirm": {"type": "boolean"}}),
                )?;
                let r: ElicitResult = cx.ask("confirm", ask)?;
                Ok::<_, HandlerError>(if accepted(&r) {
                    format!("Deleted {}", a.filename)
                } else {
                    format!("Kept {}", a.filename)
                })
            }),
    )
    .tool(
        tool("multi_input")
            .description("A task that asks two questions at once (two input requests)")
            .task_support(TaskSupport::Optional)
            .handler(|_: NoArgs, cx: RequestContext| async move {
                cx.ask_all([
                    ("name".to_string(), form("Your name?", json!({"name": {"type": "string"}}))?),
                    (
                        "confirm".to_string(),
                        form("Proceed?", json!({"confirm": {"type": "boolean"}}))?,
                    ),
                ])?;
                Ok::<_, HandlerError>("Both inputs received")
            }),
    )
    .tool(
        tool("test_tool_with_task")
            .description("Asks the user's name via MRTR, then continues as a task that greets them")
            .task_support(TaskSupport::Required)
            .task_creation(TaskCreation::OnRequest)
            .handler(|_: NoArgs, cx: RequestContext| async move {
                let ask = form("What is your name?", json!({"name": {"type": "string"}}))?;
                let r: ElicitResult = cx.ask("user_name", ask)?;
                let name = r
                    .content
                    .as_ref()
                    .and_then(|c| c.get("name"))
                    .and_then(|v| match v {
                        ElicitValue::String(s) => Some(s.clone()),
                        _ => None,
                    })
                    .unwrap_or_else(|| "stranger".to_owned());
                cx.run_as_task().await?;
                work(&cx, Duration::from_millis(200)).await;
                Ok::<_, HandlerError>(format!("Hello, {name}!"))
            }),
    )
}
