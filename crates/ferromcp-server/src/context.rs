//! The per-request context handed to every handler.
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

use crate::error::{HandlerError, InputRequired};
use crate::future::BoxFuture;
use crate::meta_cell::MetaCell;
use crate::notify::{Change, ChangeBus};
use crate::state::{State, StateMap};
use bytes::Bytes;
use ferromcp_protocol::jsonrpc::{OutgoingNotification, RequestId, to_vec};
use ferromcp_protocol::meta::{ProgressToken, RequestMeta};
use ferromcp_protocol::types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, Implementation, InputRequest, InputResponses, ListRootsResult, LoggingLevel,
    LoggingMessageNotificationParams, ProgressNotificationParams,
};
use ferromcp_protocol::{ErrorObject, ProtocolVersion};
use serde::de::DeserializeOwned;
use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio_util::sync::CancellationToken;

/// Where request-scoped notifications (progress, log) go: the request's SSE
/// stream on HTTP, stdout on stdio.
pub(crate) trait Outbound: Send + Sync {
    // PROG-05
    /// Sends one serialized JSON-RPC notification. Lossy by design: if the
    /// peer is not keeping up the notification may be dropped.
    fn notify(&self, message: Bytes);
    // LEGACY-17
    /// Ends the request's SSE stream early with a `retry` hint so the client
    /// reconnects with `Last-Event-ID` (handshake-era resumability).
    /// Transports without resumability ignore it.
    fn close_stream(&self, _retry_ms: Option<u64>) {}
}

pub use ferromcp_protocol::Principal;

/// What a request context reads of the server: the core (its one
/// implementor) fills it in, so this module, and the handler-facing files
/// that build on it, name no core type and do not reach back into the core.
///
/// The context holds it as one `Arc` clone per request, as it held the core
/// before; the virtual calls are off the per-request path (logging, state
/// extractors, `notify_tools_changed`, `server()`).
pub(crate) trait ServerCore: Send + Sync + 'static {
    /// Whether `logging/setLevel` is served: log notifications go out only then.
    fn logging_enabled(&self) -> bool;
    /// Where list changes and resource updates are published.
    fn bus(&self) -> &Arc<dyn ChangeBus>;
    /// The application state given to `ServerBuilder::with_state`.
    fn app_state(&self) -> &StateMap;
    /// The core itself, for `RequestContext::server` to give back as a
    /// `Server`.
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

/// What a handler's context reaches of its task, on task-capable calls
/// (tasks extension); the tasks runtime implements it.
pub(crate) trait TaskHook: Send + Sync + 'static {
    /// The task id, once the call became a task.
    fn task_id(&self) -> Option<&str>;
    /// Makes the call a task (idempotent).
    fn detach(self: Arc<Self>) -> BoxFuture<Result<(), ErrorObject>>;
    /// Progress while running as a task: the task's `statusMessage`.
    fn status_message(&self, message: String);
}

pub(crate) struct ContextInner {
    pub(crate) id: RequestId,
    pub(crate) method: std::borrow::Cow<'static, str>,
    pub(crate) version: ProtocolVersion,
    pub(crate) meta: MetaCell,
    /// The session's capabilities (handshake era); `None`: those in `meta`.
    pub(crate) capabilities: Option<Arc<ClientCapabilities>>,
    pub(crate) log_level: Option<LoggingLevel>,
    pub(crate) cancel: CancellationToken,
    pub(crate) outbound: Option<Arc<dyn Outbound>>,
    pub(crate) input: Option<InputResponses>,
    pub(crate) state: Option<Vec<u8>>,
    pub(crate) principal: Option<Principal>,
    #[cfg(feature = "http")]
    pub(crate) http: Option<Arc<http::request::Parts>>,
    pub(crate) core: Arc<dyn ServerCore>,
    /// Set on task-capable `tools/call`s (tasks extension).
    pub(crate) task: Option<Arc<dyn TaskHook>>,
    last_progress: AtomicU64,
}

/// Everything a handler may need about the request it serves.
///
/// Cheap to clone. Built by the server; handlers receive it by value.
#[derive(Clone)]
pub struct RequestContext {
    pub(crate) inner: Arc<ContextInner>,
}

impl std::fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestContext")
            .field("id", &self.inner.id)
            .field("method", &self.inner.method)
            .field("version", &self.inner.version)
            .finish_non_exhaustive()
    }
}

/// Fields a transport fills in when building a context.
#[derive(Clone)]
pub(crate) struct ContextParts {
    pub(crate) id: RequestId,
    pub(crate) method: std::borrow::Cow<'static, str>,
    pub(crate) version: ProtocolVersion,
    pub(crate) meta: MetaCell,
    /// The session's capabilities (handshake era, shared with the session);
    /// `None`: the request's own, in `meta` (2026-07-28). Either way no copy
    /// is made per request, and the parts stay small enough to move cheaply.
    pub(crate) capabilities: Option<Arc<ClientCapabilities>>,
    pub(crate) log_level: Option<LoggingLevel>,
    pub(crate) cancel: CancellationToken,
    pub(crate) outbound: Option<Arc<dyn Outbound>>,
    pub(crate) principal: Option<Principal>,
    #[cfg(feature = "http")]
    pub(crate) http: Option<Arc<http::request::Parts>>,
}

impl ContextParts {
    /// The one constructor: what every request has. The rest (the session's
    /// capabilities, log level, outbound, principal, HTTP parts) starts
    /// empty; transports set what they have with struct-update syntax.
    pub(crate) fn new(
        id: RequestId,
        method: &str,
        version: ProtocolVersion,
        meta: impl Into<MetaCell>,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            id,
            method: method_name(method),
            version,
            meta: meta.into(),
            capabilities: None,
            log_level: None,
            cancel,
            outbound: None,
            principal: None,
            #[cfg(feature = "http")]
            http: None,
        }
    }

    /// The client's capabilities for this request.
    pub(crate) fn capabilities(&self) -> &ClientCapabilities {
        capabilities_of(self.capabilities.as_deref(), &self.meta)
    }
}

/// The session's capabilities, else the request's, else none declared.
fn capabilities_of<'a>(
    session: Option<&'a ClientCapabilities>,
    meta: &'a MetaCell,
) -> &'a ClientCapabilities {
    static NONE: std::sync::OnceLock<ClientCapabilities> = std::sync::OnceLock::new();
    session
        .or_else(|| meta.get().client_capabilities.as_ref())
        .unwrap_or_else(|| NONE.get_or_init(ClientCapabilities::default))
}

/// The method name of a request, without a copy for the known ones.
pub(crate) fn method_name(method: &str) -> std::borrow::Cow<'static, str> {
    match ferromcp_protocol::method::known_client_method(method) {
        Some(m) => std::borrow::Cow::Borrowed(m),
        None => std::borrow::Cow::Owned(method.to_owned()),
    }
}

impl RequestContext {
    pub(crate) fn new(
        p: ContextParts,
        input: Option<InputResponses>,
        state: Option<Vec<u8>>,
        core: Arc<dyn ServerCore>,
    ) -> Self {
        Self {
            inner: Arc::new(ContextInner {
                id: p.id,
                method: p.method,
                version: p.version,
                meta: p.meta,
                capabilities: p.capabilities,
                log_level: p.log_level,
                cancel: p.cancel,
                outbound: p.outbound,
                input,
                state,
                principal: p.principal,
                #[cfg(feature = "http")]
                http: p.http,
                core,
                task: None,
                last_progress: AtomicU64::new(f64::NEG_INFINITY.to_bits()),
            }),
        }
    }

    /// A context for a handler run of a task-capable call.
    pub(crate) fn new_in_task(
        p: ContextParts,
        input: Option<InputResponses>,
        state: Option<Vec<u8>>,
        core: Arc<dyn ServerCore>,
        task: Arc<dyn TaskHook>,
    ) -> Self {
        let mut cx = Self::new(p, input, state, core);
        if let Some(inner) = Arc::get_mut(&mut cx.inner) {
            inner.task = Some(task);
        }
        cx
    }

    /// The id of the task this handler runs in, once the call became a task.
    pub fn task_id(&self) -> Option<&str> {
        self.inner.task.as_ref().and_then(|t| t.task_id())
    }

    /// Turns this call into a task (tasks extension), for tools registered
    /// with [`crate::TaskCreation::OnRequest`]: the client gets the task
    /// handle now and the handler keeps running in the background.
    ///
    /// Returns `Ok(true)` once the call is a task (at once if it already
    /// was), `Ok(false)` when it cannot become one (the tool has no task
    /// support or the client did not declare the extension): carry on as a
    /// plain call. Errors (e.g. the task cap is reached) are for `?`.
    pub async fn run_as_task(&self) -> Result<bool, HandlerError> {
        match &self.inner.task {
            None => Ok(false),
            Some(link) => link
                .clone()
                .detach()
                .await
                .map(|()| true)
                .map_err(HandlerError::Protocol),
        }
    }

    /// The JSON-RPC id of this request.
    pub fn id(&self) -> &RequestId {
        &self.inner.id
    }
    /// The method being served.
    pub fn method(&self) -> &str {
        &self.inner.method
    }
    /// The protocol version of this request (modern: from its envelope;
    /// handshake era: negotiated for the session).
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.inner.version
    }
    // META-09
    /// The client's capabilities for this request (never inferred
    /// from earlier requests on the modern wire).
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        capabilities_of(self.inner.capabilities.as_deref(), &self.inner.meta)
    }
    // META-10
    /// The client's self-description, for display and logging only.
    pub fn client_info(&self) -> Option<&Implementation> {
        self.inner.meta.get().client_info.as_ref()
    }
    /// The decoded request `_meta`.
    pub fn meta(&self) -> &RequestMeta {
        self.inner.meta.get()
    }
    /// The authenticated principal, if any.
    pub fn principal(&self) -> Option<&Principal> {
        self.inner.principal.as_ref()
    }
    // Foreign type: this is an HTTP transport; `http`/`http-body` are the shared vocabulary of
    // hyper, axum and tower, so it plugs into them without conversion.
    /// The HTTP request head (method, URI, headers), on the HTTP transport.
    #[cfg(feature = "http")]
    pub fn http_parts(&self) -> Option<&http::request::Parts> {
        self.inner.http.as_deref()
    }
    /// True once the request was cancelled (client disconnect,
    /// `notifications/cancelled`, timeout or shutdown).
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }
    /// Completes when the request is cancelled.
    pub async fn cancelled(&self) {
        self.inner.cancel.cancelled().await
    }
    // Foreign type: the server runs on tokio; handlers `select!` on this token and hand it to
    // tokio-based code.
    /// A token that is cancelled with the request; hand it to spawned work.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.inner.cancel.clone()
    }

    // PROG-01
    /// The client's progress token, if it asked for progress.
    pub fn progress_token(&self) -> Option<&ProgressToken> {
        self.inner.meta.progress_token()
    }

    // PROG-02, CANCEL-03
    /// Reports progress. A no-op unless the client sent a progress token;
    /// values that do not increase are dropped; nothing is sent
    /// after cancellation.
    ///
    /// In a task, progress becomes the task's `statusMessage` instead (the
    /// request that created the task has been answered).
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(link) = self.inner.task.as_ref().filter(|l| l.task_id().is_some()) {
            if self.is_cancelled() || !progress.is_finite() {
                return;
            }
            let text = match (message, total) {
                (Some(m), _) => m.to_owned(),
                (None, Some(t)) => format!("{progress}/{t}"),
                (None, None) => format!("{progress}"),
            };
            link.status_message(text);
            return;
        }
        let (Some(token), Some(out)) = (self.progress_token(), &self.inner.outbound) else {
            return;
        };
        if self.is_cancelled() || !progress.is_finite() {
            return;
        }
        let last = f64::from_bits(self.inner.last_progress.load(Ordering::Relaxed));
        if progress <= last {
            return;
        }
        self.inner
            .last_progress
            .store(progress.to_bits(), Ordering::Relaxed);
        let mut params = ProgressNotificationParams::new(token.clone(), progress, total);
        params.message = message.map(str::to_owned);
        let msg = OutgoingNotification::new("notifications/progress", Some(&params));
        out.notify(Bytes::from(to_vec(&msg)));
    }

    // LOG-01
    /// The log level the client asked for on this request (modern) or for
    /// its session (handshake era). `None` means no log notifications.
    pub fn log_level(&self) -> Option<LoggingLevel> {
        self.inner.log_level
    }

    // LOG-01, LOG-02, LOG-03
    /// Sends a `notifications/message` if the client opted in at or below
    /// `level`. Logging must be declared in the server
    /// capabilities; the builder does that when logging is enabled.
    pub fn log(&self, level: LoggingLevel, logger: Option<&str>, data: serde_json::Value) {
        let (Some(min), Some(out)) = (self.inner.log_level, &self.inner.outbound) else {
            return;
        };
        if level < min || self.is_cancelled() || !self.inner.core.logging_enabled() {
            return;
        }
        let mut params = LoggingMessageNotificationParams::new(level, data);
        params.logger = logger.map(str::to_owned);
        let msg = OutgoingNotification::new("notifications/message", Some(&params));
        out.notify(Bytes::from(to_vec(&msg)));
    }

    /// The client's answers to earlier input requests (MRTR retry), if any.
    pub fn input_responses(&self) -> Option<&InputResponses> {
        self.inner.input.as_ref()
    }

    // MRTR-08
    /// The state the handler attached to its previous `input_required`
    /// answer, verified and unsealed by the server.
    pub fn state(&self) -> Option<&[u8]> {
        self.inner.state.as_deref()
    }

    // MRTR-08
    /// The work a previous run of this handler kept with
    /// [`HandlerError::keep_state`], decoded as `S`; `None` on the first
    /// run (or when the kept state is not an `S`).
    pub fn kept_state<S: DeserializeOwned>(&self) -> Option<S> {
        serde_json::from_slice(self.state()?).ok()
    }

    // MRTR-11
    /// Looks up the answer to input request `key`, decoded as `T`.
    ///
    /// Returns `Ok(Some(t))` when answered, `Ok(None)` when not answered yet
    /// (or answered with a value of the wrong shape, which the specification says to
    /// re-request rather than trust).
    pub fn input<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        let v = self.inner.input.as_ref()?.get(key)?;
        T::deserialize(v).ok()
    }

    // MRTR-04
    /// Asks for one input, or returns it when the client already answered.
    ///
    /// Use with `?`: without an answer this yields
    /// [`HandlerError::NeedInput`]. When the client's capabilities for this
    /// request do not allow the request it yields -32021 instead.
    pub fn ask<T: DeserializeOwned>(
        &self,
        key: &str,
        request: InputRequest,
    ) -> Result<T, HandlerError> {
        if let Some(t) = self.input::<T>(key) {
            return Ok(t);
        }
        if !request.is_allowed_by(self.client_capabilities()) {
            let required = serde_json::to_value(request.required_capabilities())
                .unwrap_or_else(|_| serde_json::json!({}));
            return Err(HandlerError::Protocol(
                ErrorObject::missing_client_capability(required),
            ));
        }
        Err(HandlerError::NeedInput(
            InputRequired::new().request(key, request),
        ))
    }

    // MRTR-05
    /// Asks several inputs at once, so the client can fulfil them together.
    /// Returns `Ok(())` when every key is answered; otherwise one
    /// `NeedInput` naming all missing ones. Read the answers with [`Self::input`].
    pub fn ask_all(
        &self,
        requests: impl IntoIterator<Item = (String, InputRequest)>,
    ) -> Result<(), HandlerError> {
        let mut missing = InputRequired::new();
        for (key, req) in requests {
            let answered = self
                .inner
                .input
                .as_ref()
                .and_then(|i| i.get(&key))
                .is_some_and(|v| answer_fits(&req, v));
            if answered {
                continue;
            }
            if !req.is_allowed_by(self.client_capabilities()) {
                let required = serde_json::to_value(req.required_capabilities())
                    .unwrap_or_else(|_| serde_json::json!({}));
                return Err(HandlerError::Protocol(
                    ErrorObject::missing_client_capability(required),
                ));
            }
            missing = missing.request(key, req);
        }
        if missing.requests.is_empty() {
            Ok(())
        } else {
            Err(HandlerError::NeedInput(missing))
        }
    }

    /// Elicitation: asks the user (form or URL mode) via the client.
    ///
    /// Use with `?`. On the 2026-07-28 wire an unanswered request ends this
    /// run of the handler (an `input_required` result); once the client has
    /// the answer the handler runs **again from the top** with it. In the
    /// handshake era the server asks over the session and also re-runs the
    /// handler with the answer, so one handler serves both.
    ///
    /// # Warning: code before the question runs twice
    ///
    /// Put side effects (a payment, a row written, a message sent) *after*
    /// the questions, or keep their result across the round with
    /// `.map_err(|e| e.keep_state(&work))?` and read it back with
    /// [`Self::kept_state`] (see [`HandlerError::keep_state`]).
    pub fn elicit(
        &self,
        key: &str,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, HandlerError> {
        self.ask(key, InputRequest::Elicitation(params))
    }

    // Foreign type: tool and form schemas are derived with schemars; the crate re-exports
    // `schemars` so the versions match.
    /// Typed form elicitation: the requested schema is derived from `T`
    /// (a struct of string, number, boolean and enum fields; doc comments
    /// become field descriptions), and an accepted answer is read back
    /// into `T`. The fields are asked in `T`'s declaration order. See
    /// [`crate::Elicited`] for the outcomes. A `T` that is not a flat form
    /// is an error naming the field.
    ///
    /// # Warning: code before the question runs twice
    ///
    /// Without an answer yet the `?` ends this run; the handler then runs
    /// again from the top with the answer (both eras). Put side effects
    /// after the question, or keep their result with
    /// [`HandlerError::keep_state`] and [`Self::kept_state`].
    pub fn elicit_form<T: schemars::JsonSchema + DeserializeOwned>(
        &self,
        key: &str,
        message: &str,
    ) -> Result<crate::Elicited<T>, HandlerError> {
        let params = crate::elicit::form_params::<T>(message)?;
        let answer = self.elicit(key, params)?;
        crate::elicit::read_answer(answer)
    }

    /// Sampling: asks the client's model for a completion.
    pub fn sample(
        &self,
        key: &str,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, HandlerError> {
        self.ask(key, InputRequest::Sampling(params))
    }

    /// Roots: asks the client for its filesystem roots.
    pub fn roots(&self, key: &str) -> Result<ListRootsResult, HandlerError> {
        self.ask(key, InputRequest::list_roots())
    }

    /// Closes this request's SSE stream early, asking the client to reconnect
    /// after `retry_ms` and resume with `Last-Event-ID` (2025-11-25 SSE
    /// polling, SEP-1699). Later messages of this request, the result
    /// included, are delivered on the resumed stream. A no-op on the modern
    /// wire and on stdio.
    pub fn close_sse_stream(&self, retry_ms: Option<u64>) {
        if let Some(out) = &self.inner.outbound {
            out.close_stream(retry_ms);
        }
    }

    /// Tells subscribers (listen streams and handshake-era sessions) that
    /// the tool list changed.
    pub fn notify_tools_changed(&self) {
        self.inner.core.bus().publish(Change::ToolsListChanged);
    }
}

/// Extracts `State<T>` from a request context.
pub(crate) fn extract_state<T: Clone + Send + Sync + 'static>(
    cx: &RequestContext,
) -> Result<State<T>, HandlerError> {
    cx.app_state::<T>()
        .map(State)
        .ok_or_else(crate::state::missing::<T>)
}

impl RequestContext {
    /// The application state of type `T` given to
    /// [`ServerBuilder::with_state`](crate::ServerBuilder::with_state), cloned;
    /// `None` when no value of that type was given.
    ///
    /// (Not to be confused with [`RequestContext::state`], the opaque MRTR
    /// `requestState` of a retried call.)
    ///
    /// ```
    /// use ferromcp_server::{tool, RequestContext, NoArgs};
    /// use std::sync::Arc;
    ///
    /// let def = tool("count").handler(|_: NoArgs, cx: RequestContext| async move {
    ///     let counter = cx.app_state::<Arc<std::sync::atomic::AtomicU64>>().ok_or("no counter")?;
    ///     let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    ///     Ok::<_, &str>(n.to_string())
    /// });
    /// # let _ = def;
    /// ```
    pub fn app_state<T: Clone + Send + Sync + 'static>(&self) -> Option<T> {
        crate::state::lookup::<T>(self.inner.core.app_state())
    }
}

/// Whether a stored answer has the shape the request expects.
fn answer_fits(req: &InputRequest, v: &serde_json::Value) -> bool {
    check_answer("", req, v).is_ok()
}

// MRTR-11
/// Checks that `v`, the answer under `key`, has the shape `req` asks for:
/// -32602 naming the key and the expected result type when it does not.
pub(crate) fn check_answer(
    key: &str,
    req: &InputRequest,
    v: &serde_json::Value,
) -> Result<(), ErrorObject> {
    let (expected, outcome) = match req {
        InputRequest::Elicitation(_) => (
            "an elicitation result (ElicitResult)",
            ElicitResult::deserialize(v).map(drop),
        ),
        InputRequest::Sampling(_) => (
            "a sampling result (CreateMessageResult)",
            CreateMessageResult::deserialize(v).map(drop),
        ),
        InputRequest::ListRoots(_) => (
            "a roots/list result (ListRootsResult)",
            ListRootsResult::deserialize(v).map(drop),
        ),
    };
    outcome.map_err(|e| {
        ErrorObject::invalid_params(format_args!(
            "inputResponses[{key:?}]: expected {expected}: {e}"
        ))
    })
}

use serde::Deserialize;
