//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663 as the
//! pinned conformance harness checks it for 2026-07-28; docs/TASKS.md).
//!
//! [`Client::call_tool_as_task`] declares the extension on that one
//! request, so the server may answer with a task handle
//! ([`ToolCallOutcome::Task`]) or, at its discretion, with the result
//! ([`ToolCallOutcome::Complete`]); MRTR rounds before either are answered
//! by the installed handlers. [`Client::wait_task`] polls `tasks/get` with
//! the server's `pollIntervalMs` (growing from a short first poll),
//! answers `input_required` with the handlers through `tasks/update`, and
//! reports every status to a callback. [`Client::call_tool_task`] does it
//! all and returns the tool result.

use crate::client::Client;
use crate::core::decode;
use crate::error::{Error, ErrorKind, Result};
use crate::options::RequestOptions;
use ferromcp_protocol::method;
use ferromcp_protocol::types::{
    CallToolRequestParams, CallToolResult, CreateTaskResult, GetTaskResult, InputRequest,
    InputRequests, InputRequiredResult, InputResponses, JsonObject, RESULT_TYPE_TASK, ResultType,
    TaskStatus, probe_result_type,
};
use serde_json::Value;
use std::time::Duration;

/// First poll delay; doubled up to the server's `pollIntervalMs`.
const FIRST_POLL: Duration = Duration::from_millis(50);
/// Poll delay when the server suggests none.
const DEFAULT_POLL: Duration = Duration::from_millis(1000);
/// Longest poll delay honoured (a server suggesting more is capped).
const MAX_POLL: Duration = Duration::from_secs(30);

/// What a task-enabled `tools/call` came back with.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCallOutcome {
    /// The server answered at once (it chose not to create a task).
    Complete(CallToolResult),
    /// The server created a task: poll it with [`Client::wait_task`].
    Task(CreateTaskResult),
}

impl Client {
    /// `tools/call` declaring the tasks extension on this request only.
    /// Input requests before the server decides (MRTR) are answered by
    /// the installed handlers.
    pub async fn call_tool_as_task(
        &self,
        params: CallToolRequestParams,
        opts: RequestOptions,
    ) -> Result<ToolCallOutcome> {
        self.require_modern("tasks")?;
        let opts = opts.tasks();
        let base = to_object(&params)?;
        let mut params = base.clone();
        let limit = self.inner.config.limits.max_mrtr_rounds;
        for _ in 0..limit {
            let raw = self
                .inner
                .request_cached(method::TOOLS_CALL, &params, &opts)
                .await?;
            let rt = probe_result_type(raw.get())
                .map_err(|e| Error::invalid("malformed tools/call result").with_source(e))?;
            let ir: InputRequiredResult = match rt {
                None | Some(ResultType::Complete) => {
                    return Ok(ToolCallOutcome::Complete(decode(&raw, method::TOOLS_CALL)?));
                }
                Some(ResultType::Other(t)) if t == RESULT_TYPE_TASK => {
                    return Ok(ToolCallOutcome::Task(decode(&raw, method::TOOLS_CALL)?));
                }
                Some(ResultType::InputRequired) => decode(&raw, method::TOOLS_CALL)?,
                Some(other) => {
                    return Err(Error::invalid(format!(
                        "unrecognised resultType {:?} for tools/call",
                        other.as_str()
                    )));
                }
            };
            params = base.clone();
            if let Some(reqs) = ir.input_requests.as_ref().filter(|r| !r.is_empty()) {
                let answers = self.fulfil(reqs).await?;
                params.insert("inputResponses".into(), to_value(&answers)?);
            }
            if let Some(state) = ir.request_state {
                params.insert("requestState".into(), Value::String(state));
            }
        }
        Err(Error::new(
            ErrorKind::TooManyRounds { limit },
            format!("tools/call still needed input after {limit} rounds"),
        ))
    }

    /// `tasks/get`: the task's status, with its result, error or pending
    /// input requests inlined.
    pub async fn get_task(&self, task_id: &str) -> Result<GetTaskResult> {
        let raw = self.task_request(method::TASKS_GET, task_id, None).await?;
        decode(&raw, method::TASKS_GET)
    }

    /// `tasks/update`: answers some or all of the task's input requests.
    pub async fn update_task(&self, task_id: &str, responses: InputResponses) -> Result<()> {
        let mut extra = JsonObject::new();
        extra.insert("inputResponses".into(), to_value(&responses)?);
        self.task_request(method::TASKS_UPDATE, task_id, Some(extra))
            .await
            .map(drop)
    }

    /// `tasks/cancel`: asks the server to cancel; the outcome shows on the
    /// next [`Self::get_task`] (it may still complete).
    pub async fn cancel_task(&self, task_id: &str) -> Result<()> {
        self.task_request(method::TASKS_CANCEL, task_id, None)
            .await
            .map(drop)
    }

    /// Polls the task until it is terminal and returns its final state.
    /// `on_status` sees every state polled (to show progress). Input
    /// requests are answered with the installed handlers, each key once.
    pub async fn wait_task(
        &self,
        task_id: &str,
        mut on_status: impl FnMut(&GetTaskResult),
    ) -> Result<GetTaskResult> {
        let mut delay = FIRST_POLL;
        let mut answered = std::collections::BTreeSet::new();
        loop {
            let t = self.get_task(task_id).await?;
            on_status(&t);
            if t.task.status.is_terminal() {
                return Ok(t);
            }
            if t.task.status == TaskStatus::InputRequired {
                let pending: InputRequests = t
                    .input_requests
                    .iter()
                    .flatten()
                    .filter(|(k, _)| !answered.contains(*k))
                    .filter_map(|(k, v)| {
                        serde_json::from_value::<InputRequest>(v.clone())
                            .ok()
                            .map(|r| (k.clone(), r))
                    })
                    .collect();
                if !pending.is_empty() {
                    let answers = self.fulfil(&pending).await?;
                    answered.extend(pending.into_keys());
                    self.update_task(task_id, answers).await?;
                    delay = FIRST_POLL;
                    continue;
                }
            }
            let suggested = t
                .task
                .poll_interval_ms
                .map_or(DEFAULT_POLL, Duration::from_millis)
                .min(MAX_POLL);
            tokio::time::sleep(delay.min(suggested)).await;
            delay = (delay * 2).min(suggested.max(FIRST_POLL));
        }
    }

    /// Calls a tool allowing a task, waits for it, and returns the tool
    /// result. A task that failed is the error it failed with; a cancelled
    /// one is [`Error::is_cancelled`].
    pub async fn call_tool_task(
        &self,
        params: CallToolRequestParams,
        opts: RequestOptions,
        on_status: impl FnMut(&GetTaskResult),
    ) -> Result<CallToolResult> {
        match self.call_tool_as_task(params, opts).await? {
            ToolCallOutcome::Complete(r) => Ok(r),
            ToolCallOutcome::Task(t) => {
                let done = self.wait_task(&t.task.task_id, on_status).await?;
                task_outcome(done)
            }
        }
    }

    async fn task_request(
        &self,
        method: &str,
        task_id: &str,
        extra: Option<JsonObject>,
    ) -> Result<Box<serde_json::value::RawValue>> {
        self.require_modern("tasks")?;
        let mut params = extra.unwrap_or_default();
        params.insert("taskId".into(), Value::String(task_id.to_owned()));
        let opts = RequestOptions::default().tasks().bypass_cache();
        self.inner.request_cached(method, &params, &opts).await
    }
}

/// The tool result of a terminal task.
pub fn task_outcome(t: GetTaskResult) -> Result<CallToolResult> {
    match t.task.status {
        TaskStatus::Completed => {
            let v = t
                .result
                .ok_or_else(|| Error::invalid("a completed task without a result"))?;
            serde_json::from_value(v)
                .map_err(|e| Error::invalid("malformed task result").with_source(e))
        }
        TaskStatus::Failed => {
            let e = t
                .error
                .and_then(|v| serde_json::from_value(v).ok())
                .unwrap_or_else(|| ferromcp_protocol::ErrorObject::internal("the task failed"));
            Err(Error::protocol(e))
        }
        TaskStatus::Cancelled => Err(Error::new(ErrorKind::Cancelled, "the task was cancelled")),
        TaskStatus::Working | TaskStatus::InputRequired => {
            Err(Error::invalid("the task has not finished"))
        }
    }
}

fn to_object<T: serde::Serialize>(v: &T) -> Result<JsonObject> {
    match serde_json::to_value(v) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(Error::invalid("params must serialize as an object")),
        Err(e) => Err(Error::invalid("cannot serialize params").with_source(e)),
    }
}

fn to_value<T: serde::Serialize>(v: &T) -> Result<Value> {
    serde_json::to_value(v).map_err(|e| Error::invalid("cannot serialize params").with_source(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn get(v: Value) -> GetTaskResult {
        serde_json::from_value(v).expect("task")
    }

    fn base(status: &str) -> Value {
        json!({"resultType": "complete", "taskId": "t", "status": status,
            "createdAt": "2026-07-28T00:00:00Z", "lastUpdatedAt": "2026-07-28T00:00:00Z",
            "ttlMs": 1000})
    }

    #[test]
    fn outcomes_of_terminal_tasks() {
        let mut v = base("completed");
        v["result"] = json!({"content": [{"type": "text", "text": "hi"}]});
        let r = task_outcome(get(v)).expect("completed");
        assert_eq!(r.content.len(), 1);
        let mut v = base("failed");
        v["error"] = json!({"code": -32603, "message": "boom"});
        let e = task_outcome(get(v)).expect_err("failed");
        assert_eq!(e.rpc_error().map(|e| e.code.0), Some(-32603));
        let e = task_outcome(get(base("cancelled"))).expect_err("cancelled");
        assert!(e.is_cancelled());
        assert!(task_outcome(get(base("working"))).is_err());
    }
}
