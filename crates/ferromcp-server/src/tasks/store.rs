//! Where task state lives: the [`TaskStore`] trait and its in-memory default.
//!
//! Every operation is one atomic step on one record, expressed as data
//! ([`TaskUpdate`]) rather than a closure, so that a shared backend (Redis:
//! one hash per task, a Lua script per update, keyspace expiry for the TTL,
//! pub/sub for [`TaskStore::changed`]) can implement it and a task created
//! on one replica can be polled, updated and cancelled on another.
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

use crate::tool::BoxFuture;
use ferromcp_protocol::types::{GetTaskResult, JsonObject, ResultType, Task, TaskStatus};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// One task as stored: everything `tasks/get` shows, plus its owner and
/// the answers not yet handed to the handler.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// Server-minted, unguessable identifier.
    pub task_id: String,
    /// The principal (subject) that created it; `None` when unauthenticated.
    /// Only the same owner sees the task.
    pub owner: Option<String>,
    /// Current status.
    pub status: TaskStatus,
    /// Note on the current status (progress message, failure reason).
    pub status_message: Option<String>,
    /// Creation time, Unix milliseconds.
    pub created_at_ms: u64,
    /// Last status change, Unix milliseconds.
    pub last_updated_at_ms: u64,
    /// Lifetime from creation in milliseconds; the record is dropped after.
    pub ttl_ms: u64,
    /// Suggested polling interval in milliseconds.
    pub poll_interval_ms: u64,
    /// Outstanding input requests (serialized `InputRequest`s), by key.
    pub input_requests: JsonObject,
    /// Answers received for keys that were outstanding, not yet consumed.
    pub input_responses: JsonObject,
    /// The `CallToolResult` once completed.
    pub result: Option<Value>,
    /// The JSON-RPC error object once failed.
    pub error: Option<Value>,
}

impl TaskRecord {
    /// When the record may be dropped, Unix milliseconds.
    pub fn expires_at_ms(&self) -> u64 {
        self.created_at_ms.saturating_add(self.ttl_ms)
    }

    /// The wire `Task` members.
    pub fn task(&self) -> Task {
        Task {
            task_id: self.task_id.clone(),
            status: self.status,
            status_message: self.status_message.clone(),
            created_at: iso8601(self.created_at_ms),
            last_updated_at: iso8601(self.last_updated_at_ms),
            ttl_ms: Some(self.ttl_ms),
            poll_interval_ms: Some(self.poll_interval_ms),
        }
    }

    /// The `tasks/get` result for this record: the status decides what is
    /// inlined (`inputRequests`, `result` or `error`).
    pub fn to_get_result(&self) -> GetTaskResult {
        GetTaskResult {
            result_type: Some(ResultType::Complete),
            task: self.task(),
            input_requests: (self.status == TaskStatus::InputRequired)
                .then(|| self.input_requests.clone()),
            result: (self.status == TaskStatus::Completed)
                .then(|| self.result.clone())
                .flatten(),
            error: (self.status == TaskStatus::Failed)
                .then(|| self.error.clone())
                .flatten(),
            meta: None,
        }
    }
}

/// One atomic change to a task. Changes to a task in a terminal status are
/// ignored: the first terminal status wins, so a cancel racing completion
/// ends in exactly one of the two.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskUpdate {
    /// Sets the status message (progress) without changing the status.
    Message(String),
    /// Parks the task in `input_required` with these requests outstanding.
    NeedInput(JsonObject),
    /// Back to `working`; consumed answers are cleared.
    Resume,
    /// Completed with this `CallToolResult`.
    Complete(Value),
    /// Failed with this JSON-RPC error object.
    Fail(Value),
    /// Cancelled.
    Cancel,
}

/// Why a store operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskStoreError {
    /// A cap is reached (live tasks or retained tasks); the message says which.
    Full(String),
    /// The backend failed.
    Backend(String),
}

impl std::fmt::Display for TaskStoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Full(m) => write!(f, "task capacity reached: {m}"),
            Self::Backend(m) => write!(f, "task store failed: {m}"),
        }
    }
}

impl std::error::Error for TaskStoreError {}

/// Storage for tasks. Implementations must make each call atomic per task
/// and must not return a record after its TTL elapsed.
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new task; it must be visible to [`Self::get`] on every
    /// replica once this resolves (tasks are created strongly consistent).
    /// Fails with [`TaskStoreError::Full`] when a cap is reached.
    fn create(&self, record: TaskRecord) -> BoxFuture<Result<(), TaskStoreError>>;

    /// The task, if it exists, has not expired and belongs to `owner`.
    fn get(
        &self,
        task_id: &str,
        owner: Option<&str>,
    ) -> BoxFuture<Result<Option<TaskRecord>, TaskStoreError>>;

    /// Applies `change` (ignored on a terminal task) and returns the record
    /// as it is afterwards; `None` when the task does not exist.
    fn update(
        &self,
        task_id: &str,
        change: TaskUpdate,
    ) -> BoxFuture<Result<Option<TaskRecord>, TaskStoreError>>;

    /// Records the answers whose keys are outstanding (others are ignored)
    /// and removes those keys from the outstanding requests. Returns whether
    /// the task exists for `owner`.
    fn submit_input(
        &self,
        task_id: &str,
        owner: Option<&str>,
        responses: JsonObject,
    ) -> BoxFuture<Result<bool, TaskStoreError>>;

    /// Resolves after the next change to the task (or its removal). The
    /// watch starts when this is called, not when the future is first polled,
    /// so call it before reading the state it guards.
    fn changed(&self, task_id: &str) -> BoxFuture<()>;
}

/// Caps of the [`InMemoryTaskStore`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InMemoryLimits {
    /// Most tasks in a non-terminal status at once. Default 1 000.
    pub max_live: usize,
    /// Most tasks kept at once, finished ones (and their results) included,
    /// until their TTL frees them. Default 10 000.
    pub max_retained: usize,
}

impl Default for InMemoryLimits {
    fn default() -> Self {
        Self {
            max_live: 1_000,
            max_retained: 10_000,
        }
    }
}

type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

struct Entry {
    record: TaskRecord,
    version: watch::Sender<u64>,
}

/// The default store: a map in this process. Expired tasks are removed
/// (memory freed) whenever a task is created and whenever one is looked up.
pub struct InMemoryTaskStore {
    map: Mutex<HashMap<String, Entry>>,
    limits: InMemoryLimits,
    clock: Clock,
}

impl std::fmt::Debug for InMemoryTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryTaskStore")
            .field("limits", &self.limits)
            .field("len", &self.len())
            .finish()
    }
}

impl Default for InMemoryTaskStore {
    fn default() -> Self {
        Self::new(InMemoryLimits::default())
    }
}

impl InMemoryTaskStore {
    /// An empty store with these caps.
    pub fn new(limits: InMemoryLimits) -> Self {
        Self::with_clock(limits, Arc::new(now_ms))
    }

    /// An empty store reading time (Unix milliseconds) from `clock`; for
    /// tests that need TTLs to elapse without waiting.
    pub fn with_clock(limits: InMemoryLimits, clock: Arc<dyn Fn() -> u64 + Send + Sync>) -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
            limits,
            clock,
        }
    }

    /// Tasks held right now, expired ones not yet swept included.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether the store holds no task.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        // A panic while holding the lock leaves whole records behind (every
        // change is one assignment), so the map is still consistent.
        self.map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn sweep(map: &mut HashMap<String, Entry>, now: u64) {
        // Dropping an entry drops its watch sender, which wakes its watchers.
        map.retain(|_, e| e.record.expires_at_ms() > now);
    }

    fn live<'m>(
        map: &'m mut HashMap<String, Entry>,
        task_id: &str,
        now: u64,
    ) -> Option<&'m mut Entry> {
        if map
            .get(task_id)
            .is_some_and(|e| e.record.expires_at_ms() <= now)
        {
            map.remove(task_id);
            return None;
        }
        map.get_mut(task_id)
    }
}

impl TaskStore for InMemoryTaskStore {
    fn create(&self, record: TaskRecord) -> BoxFuture<Result<(), TaskStoreError>> {
        let now = (self.clock)();
        let mut map = self.lock();
        Self::sweep(&mut map, now);
        let r = if map.len() >= self.limits.max_retained {
            Err(TaskStoreError::Full(format!(
                "{} tasks are retained (the cap); finished tasks are freed when their TTL elapses",
                self.limits.max_retained
            )))
        } else if map
            .values()
            .filter(|e| !e.record.status.is_terminal())
            .count()
            >= self.limits.max_live
        {
            Err(TaskStoreError::Full(format!(
                "{} tasks are running (the cap)",
                self.limits.max_live
            )))
        } else if map.contains_key(&record.task_id) {
            Err(TaskStoreError::Backend("duplicate task id".into()))
        } else {
            let (version, _) = watch::channel(0);
            map.insert(record.task_id.clone(), Entry { record, version });
            Ok(())
        };
        Box::pin(std::future::ready(r))
    }

    fn get(
        &self,
        task_id: &str,
        owner: Option<&str>,
    ) -> BoxFuture<Result<Option<TaskRecord>, TaskStoreError>> {
        let now = (self.clock)();
        let mut map = self.lock();
        let r = Self::live(&mut map, task_id, now)
            .filter(|e| e.record.owner.as_deref() == owner)
            .map(|e| e.record.clone());
        Box::pin(std::future::ready(Ok(r)))
    }

    fn update(
        &self,
        task_id: &str,
        change: TaskUpdate,
    ) -> BoxFuture<Result<Option<TaskRecord>, TaskStoreError>> {
        let now = (self.clock)();
        let mut map = self.lock();
        let r = Self::live(&mut map, task_id, now).map(|e| {
            if apply(&mut e.record, change, now) {
                e.version.send_modify(|v| *v += 1);
            }
            e.record.clone()
        });
        Box::pin(std::future::ready(Ok(r)))
    }

    fn submit_input(
        &self,
        task_id: &str,
        owner: Option<&str>,
        responses: JsonObject,
    ) -> BoxFuture<Result<bool, TaskStoreError>> {
        let now = (self.clock)();
        let mut map = self.lock();
        let r = match Self::live(&mut map, task_id, now)
            .filter(|e| e.record.owner.as_deref() == owner)
        {
            None => false,
            Some(e) => {
                let mut changed = false;
                if e.record.status == TaskStatus::InputRequired {
                    for (k, v) in responses {
                        if e.record.input_requests.remove(&k).is_some() {
                            e.record.input_responses.insert(k, v);
                            changed = true;
                        }
                    }
                }
                if changed {
                    e.record.last_updated_at_ms = now;
                    e.version.send_modify(|v| *v += 1);
                }
                true
            }
        };
        Box::pin(std::future::ready(Ok(r)))
    }

    fn changed(&self, task_id: &str) -> BoxFuture<()> {
        let rx = self.lock().get(task_id).map(|e| e.version.subscribe());
        Box::pin(async move {
            if let Some(mut rx) = rx {
                // Err: the task was removed, which is a change too.
                let _ = rx.changed().await;
            }
        })
    }
}

/// Applies `change`; false when ignored (terminal task, nothing to do).
fn apply(r: &mut TaskRecord, change: TaskUpdate, now: u64) -> bool {
    if r.status.is_terminal() {
        return false;
    }
    match change {
        TaskUpdate::Message(m) => r.status_message = Some(m),
        TaskUpdate::NeedInput(requests) => {
            r.status = TaskStatus::InputRequired;
            r.input_requests.extend(requests);
        }
        TaskUpdate::Resume => {
            r.status = TaskStatus::Working;
            r.input_requests.clear();
            r.input_responses.clear();
        }
        TaskUpdate::Complete(result) => {
            r.status = TaskStatus::Completed;
            // A progress note of the run would be stale now.
            r.status_message = None;
            r.result = Some(result);
        }
        TaskUpdate::Fail(error) => {
            r.status = TaskStatus::Failed;
            r.status_message = error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned);
            r.error = Some(error);
        }
        TaskUpdate::Cancel => {
            r.status = TaskStatus::Cancelled;
            r.status_message = Some("cancelled by the client".into());
        }
    }
    if r.status.is_terminal() {
        r.input_requests.clear();
        r.input_responses.clear();
    }
    r.last_updated_at_ms = now;
    true
}

/// Unix time in milliseconds.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `2026-07-28T12:34:56.789Z` for Unix milliseconds (UTC, proleptic Gregorian).
pub(crate) fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days, on days since 1970-01-01.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn record(id: &str, owner: Option<&str>, now: u64) -> TaskRecord {
        TaskRecord {
            task_id: id.into(),
            owner: owner.map(str::to_owned),
            status: TaskStatus::Working,
            status_message: None,
            created_at_ms: now,
            last_updated_at_ms: now,
            ttl_ms: 1_000,
            poll_interval_ms: 100,
            input_requests: JsonObject::new(),
            input_responses: JsonObject::new(),
            result: None,
            error: None,
        }
    }

    fn clocked(limits: InMemoryLimits) -> (InMemoryTaskStore, Arc<AtomicU64>) {
        let t = Arc::new(AtomicU64::new(1_000_000));
        let c = t.clone();
        (
            InMemoryTaskStore::with_clock(limits, Arc::new(move || c.load(Ordering::SeqCst))),
            t,
        )
    }

    #[tokio::test]
    async fn ttl_expiry_frees_the_record() {
        let (s, t) = clocked(InMemoryLimits::default());
        s.create(record("a", None, 1_000_000))
            .await
            .expect("create");
        t.store(1_000_999, Ordering::SeqCst);
        assert!(s.get("a", None).await.expect("get").is_some());
        t.store(1_001_000, Ordering::SeqCst);
        assert!(s.get("a", None).await.expect("get").is_none());
        assert!(s.is_empty(), "lookup of an expired task frees it");
        s.create(record("b", None, 1_001_000))
            .await
            .expect("create");
        t.store(1_002_000, Ordering::SeqCst);
        s.create(record("c", None, 1_002_000))
            .await
            .expect("create");
        assert_eq!(s.len(), 1, "creating sweeps expired tasks");
    }

    #[tokio::test]
    async fn caps_on_live_and_retained() {
        let (s, _) = clocked(InMemoryLimits {
            max_live: 2,
            max_retained: 3,
        });
        let now = 1_000_000;
        s.create(record("a", None, now)).await.expect("a");
        s.create(record("b", None, now)).await.expect("b");
        let e = s
            .create(record("c", None, now))
            .await
            .expect_err("live cap");
        assert!(
            matches!(e, TaskStoreError::Full(ref m) if m.contains("running")),
            "{e}"
        );
        s.update("a", TaskUpdate::Complete(serde_json::json!({})))
            .await
            .expect("update");
        s.create(record("c", None, now))
            .await
            .expect("c after a finished");
        s.update("b", TaskUpdate::Cancel).await.expect("update");
        let e = s
            .create(record("d", None, now))
            .await
            .expect_err("retained cap");
        assert!(
            matches!(e, TaskStoreError::Full(ref m) if m.contains("retained")),
            "{e}"
        );
    }

    #[tokio::test]
    async fn owner_binding_hides_tasks() {
        let (s, _) = clocked(InMemoryLimits::default());
        s.create(record("a", Some("alice"), 1_000_000))
            .await
            .expect("create");
        assert!(s.get("a", Some("alice")).await.expect("get").is_some());
        assert!(s.get("a", Some("bob")).await.expect("get").is_none());
        assert!(s.get("a", None).await.expect("get").is_none());
        let known = s
            .submit_input("a", Some("bob"), JsonObject::new())
            .await
            .expect("submit");
        assert!(!known);
    }

    #[tokio::test]
    async fn first_terminal_status_wins() {
        let (s, _) = clocked(InMemoryLimits::default());
        s.create(record("a", None, 1_000_000))
            .await
            .expect("create");
        let r = s.update("a", TaskUpdate::Cancel).await.expect("cancel");
        assert_eq!(r.map(|r| r.status), Some(TaskStatus::Cancelled));
        let r = s
            .update(
                "a",
                TaskUpdate::Complete(serde_json::json!({"content": []})),
            )
            .await
            .expect("complete");
        let r = r.expect("exists");
        assert_eq!(r.status, TaskStatus::Cancelled);
        assert!(r.result.is_none());
    }

    #[tokio::test]
    async fn partial_input_keeps_the_remaining_key() {
        let (s, _) = clocked(InMemoryLimits::default());
        s.create(record("a", None, 1_000_000))
            .await
            .expect("create");
        let mut reqs = JsonObject::new();
        reqs.insert(
            "x".into(),
            serde_json::json!({"method": "elicitation/create"}),
        );
        reqs.insert(
            "y".into(),
            serde_json::json!({"method": "elicitation/create"}),
        );
        s.update("a", TaskUpdate::NeedInput(reqs))
            .await
            .expect("park");
        let watch = s.changed("a");
        let mut ans = JsonObject::new();
        ans.insert("x".into(), serde_json::json!({"action": "accept"}));
        ans.insert("never-issued".into(), serde_json::json!({}));
        assert!(s.submit_input("a", None, ans).await.expect("submit"));
        watch.await;
        let r = s.get("a", None).await.expect("get").expect("exists");
        assert_eq!(r.status, TaskStatus::InputRequired);
        assert_eq!(r.input_requests.keys().collect::<Vec<_>>(), ["y"]);
        assert_eq!(r.input_responses.keys().collect::<Vec<_>>(), ["x"]);
        let wire = serde_json::to_value(r.to_get_result()).expect("json");
        assert_eq!(wire["inputRequests"].as_object().map(|o| o.len()), Some(1));
        assert!(wire.get("result").is_none() && wire.get("requestState").is_none());
    }

    #[test]
    fn iso8601_formats_utc() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601(1_785_196_800_000), "2026-07-28T00:00:00.000Z");
    }
}
