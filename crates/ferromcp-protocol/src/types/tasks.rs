//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) as the
//! pinned conformance harness checks it for 2026-07-28: a `tools/call` may
//! be answered with a [`CreateTaskResult`] (`resultType: "task"`), polled
//! with `tasks/get` (the result or error is inlined, there is no
//! `tasks/result` and no `tasks/list`), fed input with `tasks/update` and
//! cancelled with `tasks/cancel`. Durations are integer milliseconds
//! (`ttlMs`, `pollIntervalMs`); the wire carries no `requestState`.
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

use super::{InputResponses, JsonObject, Meta, ResultType};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The extension identifier, used in `capabilities.extensions` on both sides.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The `resultType` of a [`CreateTaskResult`].
pub const RESULT_TYPE_TASK: &str = "task";

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for the client to answer `inputRequests` via `tasks/update`.
    InputRequired,
    /// Finished with a result (tool errors included: `result.isError`).
    Completed,
    /// Finished with a JSON-RPC error (inlined as `error`).
    Failed,
    /// Cancelled before it finished.
    Cancelled,
}

impl TaskStatus {
    /// Whether the status is final (completed, failed or cancelled).
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

/// The members every task-bearing message carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Server-minted, unguessable identifier.
    pub task_id: String,
    /// Current status.
    pub status: TaskStatus,
    /// Human-readable note on the current status (progress, failure reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// ISO 8601 creation time.
    pub created_at: String,
    /// ISO 8601 time of the last status change.
    pub last_updated_at: String,
    /// Lifetime from creation in milliseconds; `null` for unlimited.
    pub ttl_ms: Option<u64>,
    /// Suggested polling interval in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
}

/// `tools/call` answered with a task handle (`resultType: "task"`): a flat
/// `Result & Task`, never `result`, `error` or `inputRequests`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTaskResult {
    /// Always `"task"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The task.
    #[serde(flatten)]
    pub task: Task,
    /// Open metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// `tasks/get` result: the task plus what its status inlines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskResult {
    /// `"complete"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The task.
    #[serde(flatten)]
    pub task: Task,
    /// Pending input requests, keyed (only while `input_required`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<JsonObject>,
    /// The original request's result (only when `completed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The JSON-RPC error (only when `failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// Open metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// `tasks/get` and `tasks/cancel` params.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The task.
    pub task_id: String,
}

/// `tasks/update` params.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskRequestParams {
    /// The task.
    pub task_id: String,
    /// Answers keyed like the task's `inputRequests`; unknown or already
    /// answered keys are ignored.
    #[serde(default)]
    pub input_responses: InputResponses,
}

impl CreateTaskResult {
    /// The handle for `task`, with `resultType: "task"`.
    pub fn new(task: Task) -> Self {
        Self {
            result_type: Some(ResultType::Other(RESULT_TYPE_TASK.to_owned())),
            task,
            meta: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> Task {
        Task {
            task_id: "t1".into(),
            status: TaskStatus::InputRequired,
            status_message: None,
            created_at: "2026-01-01T00:00:00.000Z".into(),
            last_updated_at: "2026-01-01T00:00:00.000Z".into(),
            ttl_ms: Some(60_000),
            poll_interval_ms: Some(500),
        }
    }

    #[test]
    fn create_task_result_is_flat_with_ms_fields() {
        let v = serde_json::to_value(CreateTaskResult::new(task())).expect("json");
        assert_eq!(v["resultType"], "task");
        assert_eq!(v["taskId"], "t1");
        assert_eq!(v["status"], "input_required");
        assert_eq!(v["ttlMs"], 60_000);
        assert_eq!(v["pollIntervalMs"], 500);
        for absent in [
            "task",
            "ttl",
            "pollInterval",
            "result",
            "error",
            "requestState",
        ] {
            assert!(v.get(absent).is_none(), "{absent}");
        }
        let back: CreateTaskResult = serde_json::from_value(v).expect("decode");
        assert_eq!(back.task, task());
    }

    #[test]
    fn null_ttl_is_kept() {
        let mut t = task();
        t.ttl_ms = None;
        let v = serde_json::to_value(&t).expect("json");
        assert!(v.get("ttlMs").is_some_and(Value::is_null));
    }
}
