//! Per-request options: timeouts, progress, cache bypass.
// CANCEL-08, PROG-01

use ferromcp_protocol::types::ProgressNotificationParams;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Called with every progress notification of a request.
pub type ProgressCallback = Arc<dyn Fn(&ProgressNotificationParams) + Send + Sync>;

/// Options for one request; unset fields take the client's defaults.
#[derive(Clone, Default)]
pub struct RequestOptions {
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_total_timeout: Option<Duration>,
    pub(crate) reset_on_progress: Option<bool>,
    pub(crate) on_progress: Option<ProgressCallback>,
    pub(crate) bypass_cache: bool,
    pub(crate) meta: Option<ferromcp_protocol::types::JsonObject>,
    pub(crate) tasks: bool,
    pub(crate) trace_context: Option<crate::TraceContext>,
}

impl fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestOptions")
            .field("timeout", &self.timeout)
            .field("max_total_timeout", &self.max_total_timeout)
            .field("reset_on_progress", &self.reset_on_progress)
            .field("on_progress", &self.on_progress.is_some())
            .field("bypass_cache", &self.bypass_cache)
            .field("meta", &self.meta)
            .field("tasks", &self.tasks)
            .field("trace_context", &self.trace_context)
            .finish()
    }
}

impl RequestOptions {
    /// Default options.
    pub fn new() -> Self {
        Self::default()
    }

    /// Time allowed without an answer (restarted by progress unless turned off).
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = Some(d);
        self
    }

    /// Hard maximum, progress resets included.
    pub fn max_total_timeout(mut self, d: Duration) -> Self {
        self.max_total_timeout = Some(d);
        self
    }

    /// Whether progress restarts the timeout.
    pub fn reset_timeout_on_progress(mut self, yes: bool) -> Self {
        self.reset_on_progress = Some(yes);
        self
    }

    /// Asks for progress (sends a `progressToken`) and calls `f` with each
    /// notification.
    pub fn on_progress(
        mut self,
        f: impl Fn(&ProgressNotificationParams) + Send + Sync + 'static,
    ) -> Self {
        self.on_progress = Some(Arc::new(f));
        self
    }

    // META-01, META-02
    /// Application `_meta` for the request (e.g. `traceparent`, or keys
    /// under your own `com.example/` prefix), sent next to the client's
    /// envelope. Keys are checked before sending: a
    /// reserved prefix or a key the client sets itself fails with
    /// [`crate::Error::is_invalid_meta`].
    pub fn meta(mut self, meta: ferromcp_protocol::types::JsonObject) -> Self {
        self.meta = Some(meta);
        self
    }

    /// The W3C trace context to send in this request's `_meta`
    /// (`traceparent`, `tracestate`), overriding the client's hook
    /// ([`crate::ClientBuilder::trace_context`]). A `traceparent` given in
    /// [`RequestOptions::meta`] or the params' `_meta` wins over this; an
    /// invalid `traceparent` is not sent.
    pub fn trace_context(mut self, cx: crate::TraceContext) -> Self {
        self.trace_context = Some(cx);
        self
    }

    /// Shorthand for [`RequestOptions::trace_context`] with a
    /// `traceparent` and no `tracestate`.
    pub fn traceparent(self, traceparent: impl Into<String>) -> Self {
        self.trace_context(crate::TraceContext::new(traceparent))
    }

    /// Declares the tasks extension in this request's client capabilities
    /// (used by the task methods of [`crate::Client`]).
    pub(crate) fn tasks(mut self) -> Self {
        self.tasks = true;
        self
    }

    /// Skips the response cache for this request (neither read nor written).
    pub fn bypass_cache(mut self) -> Self {
        self.bypass_cache = true;
        self
    }
}
