//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663, the
//! revision the pinned conformance harness checks for 2026-07-28; see
//! docs/TASKS.md).
//!
//! A tool registered with [`TaskSupport::Optional`] or
//! [`TaskSupport::Required`] is run as a task when the request's client
//! capabilities include the extension: `tools/call` answers at once with a
//! `CreateTaskResult` and the handler runs in the background with a context
//! of its own (cancelled by `tasks/cancel`; progress becomes the task's
//! `statusMessage`; an input request parks the task in `input_required`
//! until `tasks/update` answers it, then the handler runs again with the
//! answers, as on an MRTR retry). `tasks/get` inlines the result or error.
//!
//! With [`TaskCreation::OnRequest`] the handler runs as an ordinary call
//! first (so it can gather input with MRTR rounds) and becomes a task when
//! it calls [`crate::RequestContext::run_as_task`].
//!
//! State lives in a [`TaskStore`]; tasks are bound to the principal that
//! created them (another principal gets the not-found error).

mod store;

pub use store::{
    InMemoryLimits, InMemoryTaskStore, TaskRecord, TaskStore, TaskStoreError, TaskUpdate,
};

mod run;
pub(crate) mod support;
pub use support::{TaskCreation, TaskSupport};

use ferromcp_protocol::ErrorObject;
use ferromcp_protocol::types::{ClientCapabilities, TASKS_EXTENSION};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// Task settings of a server.
#[derive(Clone)]
pub struct TaskConfig {
    /// Where tasks live. Default: an [`InMemoryTaskStore`] with default caps.
    pub store: Arc<dyn TaskStore>,
    /// Lifetime of a task from creation (`ttlMs`); its record and result
    /// are freed after. Default 1 hour.
    pub ttl: std::time::Duration,
    /// Suggested polling interval (`pollIntervalMs`). Default 500 ms.
    pub poll_interval: std::time::Duration,
}

impl Default for TaskConfig {
    fn default() -> Self {
        Self {
            store: Arc::new(InMemoryTaskStore::default()),
            ttl: std::time::Duration::from_secs(3600),
            poll_interval: std::time::Duration::from_millis(500),
        }
    }
}

impl std::fmt::Debug for TaskConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskConfig")
            .field("ttl", &self.ttl)
            .field("poll_interval", &self.poll_interval)
            .finish_non_exhaustive()
    }
}

/// The server's task machinery: the store plus the cancellation tokens of
/// the tasks running in this process.
pub(crate) struct Tasks {
    config: TaskConfig,
    running: Mutex<HashMap<String, CancellationToken>>,
}

impl Tasks {
    pub(crate) fn new(config: TaskConfig) -> Self {
        Self {
            config,
            running: Mutex::new(HashMap::new()),
        }
    }

    pub(super) fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn store(&self) -> &dyn TaskStore {
        &*self.config.store
    }
}

/// Whether the request's capabilities declare the tasks extension.
pub(crate) fn client_declares_tasks(caps: &ClientCapabilities) -> bool {
    caps.extensions
        .as_ref()
        .is_some_and(|e| e.contains_key(TASKS_EXTENSION))
}

/// -32021 naming the extension (SEP-2575 / SEP-2663 "Required Capabilities").
pub(crate) fn missing_tasks_capability() -> ErrorObject {
    ErrorObject::missing_client_capability(serde_json::json!({
        "extensions": { TASKS_EXTENSION: {} }
    }))
}

pub(super) fn task_not_found(id: &str) -> ErrorObject {
    ErrorObject::invalid_params(format_args!(
        "Failed to retrieve task: Task not found ({id})"
    ))
}

pub(super) fn store_error(e: TaskStoreError) -> ErrorObject {
    match e {
        TaskStoreError::Full(m) => ErrorObject::internal(format_args!(
            "cannot create a task: capacity reached ({m}); retry later"
        ))
        .with_data(serde_json::json!({ "reason": "task_capacity" })),
        TaskStoreError::Backend(m) => ErrorObject::internal(format_args!("task store: {m}")),
    }
}

pub(super) fn mint_task_id() -> Result<String, ErrorObject> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).map_err(|_| ErrorObject::internal("no randomness for a task id"))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}
