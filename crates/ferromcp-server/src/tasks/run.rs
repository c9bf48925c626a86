//! The tasks runtime: a task-capable `tools/call` run in the background,
//! the link between a handler's context and its task, and the answers of
//! `tasks/get`, `tasks/update` and `tasks/cancel`.

use super::{
    TaskCreation, TaskRecord, TaskSupport, TaskUpdate, Tasks, client_declares_tasks, mint_task_id,
    missing_tasks_capability, store, store_error, task_not_found,
};
use crate::context::{ContextParts, RequestContext};
use crate::error::HandlerError;
use crate::registry::RegisteredTool;
use crate::request_state::StateBinding;
use crate::shared::Shared;
use crate::sieve::sieve_call_result;
use ferromcp_protocol::ErrorObject;
use ferromcp_protocol::jsonrpc::RequestId;
use ferromcp_protocol::types::{
    CallToolResult, ContentBlock, CreateTaskResult, EmptyResult, InputRequest, InputRequiredResult,
    InputResponses, JsonObject, TaskIdParams, TaskStatus, UpdateTaskRequestParams,
};
use futures_util::FutureExt;
use serde::Deserialize;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// Ties a handler's context to its task (present only on task-capable calls).
pub(crate) struct TaskLink {
    tasks: Arc<Tasks>,
    owner: Option<String>,
    request_id: RequestId,
    id: OnceLock<String>,
    /// Answers the `tools/call` request: the `CreateTaskResult` on detach.
    reply: Mutex<Option<oneshot::Sender<Result<bytes::Bytes, ErrorObject>>>>,
    /// Serializes detach attempts.
    detaching: tokio::sync::Mutex<()>,
    cancel: CancellationToken,
    /// When the task's TTL elapses (set on detach): the handler is stopped.
    deadline: OnceLock<tokio::time::Instant>,
    shared: Arc<Shared>,
}

impl TaskLink {
    /// The task id, once the call became a task.
    pub(crate) fn task_id(&self) -> Option<&str> {
        self.id.get().map(String::as_str)
    }

    fn send_reply(&self, r: Result<bytes::Bytes, ErrorObject>) {
        let tx = self
            .reply
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(tx) = tx {
            let _ = tx.send(r);
        }
    }

    /// Makes the call a task (idempotent): stores the record, then answers
    /// the request with the `CreateTaskResult` (strong consistency: the
    /// handle is sent only once `tasks/get` would find it).
    pub(crate) async fn detach(&self) -> Result<(), ErrorObject> {
        let _g = self.detaching.lock().await;
        if self.id.get().is_some() {
            return Ok(());
        }
        let now = store::now_ms();
        let cfg = &self.tasks.config;
        let record = TaskRecord {
            task_id: mint_task_id()?,
            owner: self.owner.clone(),
            status: TaskStatus::Working,
            status_message: None,
            created_at_ms: now,
            last_updated_at_ms: now,
            ttl_ms: u64::try_from(cfg.ttl.as_millis())
                .unwrap_or(u64::MAX)
                .max(1),
            poll_interval_ms: u64::try_from(cfg.poll_interval.as_millis())
                .unwrap_or(u64::MAX)
                .max(1),
            input_requests: JsonObject::new(),
            input_responses: JsonObject::new(),
            result: None,
            error: None,
        };
        let task = record.task();
        self.tasks
            .store()
            .create(record)
            .await
            .map_err(store_error)?;
        self.tasks
            .running()
            .insert(task.task_id.clone(), self.cancel.clone());
        let _ = self.deadline.set(tokio::time::Instant::now() + cfg.ttl);
        let _ = self.id.set(task.task_id.clone());
        let bytes = self.shared.finish(
            &self.request_id,
            CreateTaskResult::new(task),
            ferromcp_protocol::ProtocolVersion::V2026_07_28,
        );
        self.send_reply(Ok(bytes));
        Ok(())
    }

    /// Progress while running as a task: the task's `statusMessage`.
    pub(crate) fn status_message(&self, message: String) {
        let Some(id) = self.task_id() else { return };
        let fut = self.tasks.store().update(id, TaskUpdate::Message(message));
        tokio::spawn(async move {
            let _ = fut.await;
        });
    }
}

impl crate::context::TaskHook for TaskLink {
    fn task_id(&self) -> Option<&str> {
        TaskLink::task_id(self)
    }
    fn detach(self: Arc<Self>) -> crate::future::BoxFuture<Result<(), ErrorObject>> {
        Box::pin(async move { TaskLink::detach(&self).await })
    }
    fn status_message(&self, message: String) {
        TaskLink::status_message(self, message);
    }
}

/// How a handler round ended.
enum Round {
    Done(Result<CallToolResult, HandlerError>),
    Cancelled,
}

impl Shared {
    /// Whether this `tools/call` runs as a task: `Ok(None)` for a plain call,
    /// -32021 for a required-task tool called without the extension.
    pub(crate) fn task_mode(
        &self,
        tool: &RegisteredTool,
        parts: &ContextParts,
    ) -> Result<Option<TaskCreation>, ErrorObject> {
        let support = tool.def.task_support;
        if support == TaskSupport::Forbidden || self.tasks().is_none() {
            return Ok(None);
        }
        if !parts.version.is_modern() {
            // Handshake revisions know nothing of this extension.
            return Ok(None);
        }
        if client_declares_tasks(parts.capabilities()) {
            return Ok(Some(tool.def.task_creation));
        }
        if support == TaskSupport::Required {
            return Err(missing_tasks_capability());
        }
        Ok(None)
    }

    /// Runs a `tools/call` that may become a task. The handler runs on a
    /// spawned task; the request is answered by whichever comes first: the
    /// task handle (detach) or the handler's own first answer.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn call_tool_as_task(
        self: Arc<Self>,
        tool: Arc<RegisteredTool>,
        args: Value,
        input: Option<InputResponses>,
        request_state: Option<String>,
        mut parts: ContextParts,
        creation: TaskCreation,
    ) -> crate::future::Reply {
        let Some(tasks) = self.tasks().clone() else {
            return Err(ErrorObject::internal("tasks are not enabled").into());
        };
        let name = tool.def.tool.name.clone();
        let owner = parts.principal.as_ref().map(|p| p.subject.clone());
        let binding = |args: &Value, owner: &Option<String>| -> ([u8; 32], Option<String>) {
            (
                crate::request_state::arguments_digest(Some(args)),
                owner.clone(),
            )
        };
        let state = match request_state {
            Some(token) => {
                let (digest, principal) = binding(&args, &owner);
                let b = StateBinding {
                    method: "tools/call",
                    target: &name,
                    arguments_digest: digest,
                    principal: principal.as_deref(),
                };
                Some(self.sealer().open(&token, &b).map_err(|e| {
                    tracing::debug!(reason = %e, "rejected requestState");
                    crate::outcome::Failure::from(e)
                })?)
            }
            None => None,
        };
        let request_cancel = parts.cancel.clone();
        let task_cancel = CancellationToken::new();
        parts.cancel = task_cancel.clone();
        let (tx, rx) = oneshot::channel();
        let link = Arc::new(TaskLink {
            tasks,
            owner,
            request_id: parts.id.clone(),
            id: OnceLock::new(),
            reply: Mutex::new(Some(tx)),
            detaching: tokio::sync::Mutex::new(()),
            cancel: task_cancel.clone(),
            deadline: OnceLock::new(),
            shared: self.clone(),
        });
        let runner = run_task(
            self.clone(),
            tool,
            args,
            input,
            state,
            parts,
            link.clone(),
            creation,
        );
        tokio::spawn(runner);
        tokio::select! {
            r = rx => r
                .unwrap_or_else(|_| Err(ErrorObject::internal("the task runner stopped")))
                .map_err(Into::into),
            () = request_cancel.cancelled() => {
                // The request is gone before it was answered: nobody will
                // ever learn a task id, so stop the work.
                if link.task_id().is_none() {
                    task_cancel.cancel();
                }
                Err(ErrorObject::internal("request cancelled").into())
            }
            // Until it becomes a task, the call is an ordinary request,
            // bound by the handler timeout.
            () = tokio::time::sleep(self.limits().handler_timeout) => {
                if link.task_id().is_none() {
                    task_cancel.cancel();
                }
                Err(ErrorObject::internal("the handler timed out").into())
            }
        }
    }

    /// `tasks/get`.
    pub(crate) async fn task_get(
        self: Arc<Self>,
        p: TaskIdParams,
        parts: ContextParts,
    ) -> crate::future::Reply {
        let tasks = self.tasks_for(&parts)?;
        let owner = parts.principal.as_ref().map(|p| p.subject.as_str());
        let rec = tasks
            .store()
            .get(&p.task_id, owner)
            .await
            .map_err(store_error)?
            .ok_or_else(|| task_not_found(&p.task_id))?;
        Ok(self.finish(&parts.id, rec.to_get_result(), parts.version))
    }

    /// `tasks/update`: records the answers to outstanding keys; an empty ack.
    pub(crate) async fn task_update(
        self: Arc<Self>,
        p: UpdateTaskRequestParams,
        parts: ContextParts,
    ) -> crate::future::Reply {
        let tasks = self.tasks_for(&parts)?;
        let owner = parts.principal.as_ref().map(|p| p.subject.as_str());
        let store = tasks.store();
        // MRTR-11: an answer to an outstanding key must have the shape its
        // request asks for. A malformed one is refused (-32602 naming the
        // key) and nothing of the update is recorded; recorded, it woke the
        // handler, which asked again under the same key, and a client that
        // answers each key once waited until the TTL. Keys that are not
        // outstanding are ignored, as below.
        if let Some(rec) = store.get(&p.task_id, owner).await.map_err(store_error)? {
            if rec.status == TaskStatus::InputRequired {
                for (key, answer) in &p.input_responses.0 {
                    let asked = rec
                        .input_requests
                        .get(key)
                        .and_then(|r| InputRequest::deserialize(r).ok());
                    if let Some(asked) = asked {
                        crate::context::check_answer(key, &asked, answer)?;
                    }
                }
            }
        }
        // Unknown ids are acknowledged too (SEP-2663 "Task Input Requests"):
        // the ack reveals nothing about other principals' tasks.
        store
            .submit_input(&p.task_id, owner, p.input_responses.0)
            .await
            .map_err(store_error)?;
        Ok(self.finish(&parts.id, EmptyResult::default(), parts.version))
    }

    /// `tasks/cancel`: an empty ack; the cancelled status is seen on the next
    /// `tasks/get`. Idempotent on finished tasks; -32602 for unknown ids.
    pub(crate) async fn task_cancel(
        self: Arc<Self>,
        p: TaskIdParams,
        parts: ContextParts,
    ) -> crate::future::Reply {
        let tasks = self.tasks_for(&parts)?;
        let owner = parts.principal.as_ref().map(|p| p.subject.as_str());
        let store = tasks.store();
        let rec = store
            .get(&p.task_id, owner)
            .await
            .map_err(store_error)?
            .ok_or_else(|| task_not_found(&p.task_id))?;
        if !rec.status.is_terminal() {
            store
                .update(&p.task_id, TaskUpdate::Cancel)
                .await
                .map_err(store_error)?;
            let token = tasks.running().get(&p.task_id).cloned();
            if let Some(t) = token {
                t.cancel();
            }
        }
        Ok(self.finish(&parts.id, EmptyResult::default(), parts.version))
    }

    fn tasks_for(&self, parts: &ContextParts) -> Result<Arc<Tasks>, ErrorObject> {
        let Some(tasks) = self.tasks().clone() else {
            return Err(ErrorObject::method_not_found(parts.method.as_ref()));
        };
        if !client_declares_tasks(parts.capabilities()) {
            return Err(missing_tasks_capability());
        }
        Ok(tasks)
    }
}

/// The background side of a task-capable call.
#[allow(clippy::too_many_arguments)]
async fn run_task(
    shared: Arc<Shared>,
    tool: Arc<RegisteredTool>,
    args: Value,
    mut input: Option<InputResponses>,
    mut state: Option<Vec<u8>>,
    parts: ContextParts,
    link: Arc<TaskLink>,
    creation: TaskCreation,
) {
    if creation == TaskCreation::Immediate {
        if let Err(e) = link.detach().await {
            link.send_reply(Err(e));
            return;
        }
    }
    let mut round_parts = parts.clone();
    loop {
        let cx = RequestContext::new_in_task(
            round_parts.clone(),
            input.clone(),
            state.clone(),
            shared.clone(),
            link.clone(),
        );
        let fut = AssertUnwindSafe(tool.def.handler.call(&args, cx)).catch_unwind();
        let round = tokio::select! {
            r = fut => Round::Done(r.unwrap_or_else(|panic| {
                let msg = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "handler panicked".into());
                tracing::error!(tool = %tool.def.tool.name, "task handler panicked: {msg}");
                Err(HandlerError::Protocol(ErrorObject::internal(
                    "the handler failed unexpectedly",
                )))
            })),
            () = link.cancel.cancelled() => Round::Cancelled,
            // The record is gone once the TTL elapsed: stop the work too.
            () = until(link.deadline.get().copied()) => Round::Cancelled,
        };
        // Later rounds run after the request was answered: nothing to stream to.
        round_parts.outbound = None;
        let Some(id) = link.task_id().map(str::to_owned) else {
            // Never became a task: answer the request like a plain call.
            link.send_reply(plain_reply(&shared, &tool, &args, &parts, round, &link));
            return;
        };
        let store = link.tasks.store();
        let change = match round {
            Round::Cancelled => TaskUpdate::Cancel,
            Round::Done(Ok(r)) => match shared.check_output(&tool, r) {
                Ok(r) => TaskUpdate::Complete(
                    serde_json::to_value(sieve_call_result(parts.version, r))
                        .unwrap_or(Value::Null),
                ),
                Err(e) => TaskUpdate::Fail(error_value(&e)),
            },
            Round::Done(Err(HandlerError::Failed(m))) => TaskUpdate::Complete(
                serde_json::to_value(CallToolResult::error(vec![ContentBlock::text(m)]))
                    .unwrap_or(Value::Null),
            ),
            Round::Done(Err(HandlerError::Protocol(e))) => TaskUpdate::Fail(error_value(&e)),
            Round::Done(Err(HandlerError::NeedInput(ir))) => {
                let mut requests = JsonObject::new();
                for (k, r) in &ir.requests {
                    requests.insert(k.clone(), serde_json::to_value(r).unwrap_or(Value::Null));
                }
                if ir.state.is_some() {
                    state = ir.state;
                }
                match wait_for_input(&link, &id, requests).await {
                    Some(answers) => {
                        let mut merged = input.take().unwrap_or_default();
                        for (k, v) in answers {
                            merged.insert_raw(k, v);
                        }
                        input = Some(merged);
                        continue;
                    }
                    None => break,
                }
            }
        };
        let _ = store.update(&id, change).await;
        break;
    }
    if let Some(id) = link.task_id() {
        link.tasks.running().remove(id);
    }
}

/// Parks the task in `input_required` until every outstanding key is
/// answered; returns the answers, or `None` when the task ended meanwhile
/// (cancelled, expired).
async fn wait_for_input(link: &TaskLink, id: &str, requests: JsonObject) -> Option<JsonObject> {
    let store = link.tasks.store();
    let mut watch = store.changed(id);
    store
        .update(id, TaskUpdate::NeedInput(requests))
        .await
        .ok()??;
    loop {
        let rec = store.get(id, link.owner.as_deref()).await.ok()??;
        if rec.status.is_terminal() {
            return None;
        }
        if rec.status == TaskStatus::InputRequired && rec.input_requests.is_empty() {
            let answers = rec.input_responses;
            store.update(id, TaskUpdate::Resume).await.ok()??;
            return Some(answers);
        }
        tokio::select! {
            () = watch => {}
            () = link.cancel.cancelled() => {
                let _ = store.update(id, TaskUpdate::Cancel).await;
                return None;
            }
        }
        watch = store.changed(id);
    }
}

/// Sleeps until `deadline`; never resolves without one.
async fn until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

fn error_value(e: &ErrorObject) -> Value {
    serde_json::to_value(e)
        .unwrap_or_else(|_| serde_json::json!({"code": -32603, "message": "Internal error"}))
}

/// The answer of a task-capable call that did not become a task.
fn plain_reply(
    shared: &Arc<Shared>,
    tool: &RegisteredTool,
    args: &Value,
    parts: &ContextParts,
    round: Round,
    link: &TaskLink,
) -> Result<bytes::Bytes, ErrorObject> {
    let version = parts.version;
    match round {
        Round::Cancelled => Err(ErrorObject::internal("request cancelled")),
        Round::Done(Ok(r)) => {
            let r = shared.check_output(tool, r)?;
            Ok(shared.finish(&parts.id, sieve_call_result(version, r), version))
        }
        Round::Done(Err(HandlerError::Failed(m))) => Ok(shared.finish(
            &parts.id,
            CallToolResult::error(vec![ContentBlock::text(m)]),
            version,
        )),
        Round::Done(Err(HandlerError::Protocol(e))) => Err(e),
        Round::Done(Err(HandlerError::NeedInput(ir))) => {
            let b = StateBinding {
                method: "tools/call",
                target: &tool.def.tool.name,
                arguments_digest: crate::request_state::arguments_digest(Some(args)),
                principal: link.owner.as_deref(),
            };
            let sealed = shared
                .sealer()
                .seal(&b, ir.state.as_deref().unwrap_or_default())
                .map_err(|e| e.to_error_object())?;
            let r = InputRequiredResult {
                input_requests: (!ir.requests.is_empty()).then_some(ir.requests),
                request_state: Some(sealed),
                meta: None,
            };
            Ok(shared.finish_input_required(&parts.id, r))
        }
    }
}
