//! The user's answers to server input requests: elicitation (form and URL),
//! sampling and roots.
//!
//! One set of handlers serves both eras: modern `input_required` results
//! (MRTR) and handshake-era server→client requests.
//! The client's declared capabilities follow from which handlers are set.
// MRTR-15, LEGACY-18, ELICIT-01, SAMP-01, ROOTS-01

use crate::error::{Error, ErrorKind, Result};
use ferromcp_protocol::types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationCapability, InputRequest, JsonObject, ListChangedCapability,
    ListRootsResult, SamplingCapability,
};
use futures_util::future::BoxFuture;
use serde_json::Value;
use std::fmt;
use std::sync::Arc;

// MRTR-13
/// A handler's refusal, surfaced to the caller of the whole request.
#[derive(Debug, Clone)]
pub struct HandlerError {
    /// Why, one sentence.
    pub message: String,
}

impl HandlerError {
    /// A refusal with `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HandlerError {}

// Foreign type: an alias of `Pin<Box<dyn Future + Send>>`; nothing beyond std is exposed.
/// The future a handler returns.
pub type HandlerFuture<T> = BoxFuture<'static, Result<T, HandlerError>>;

type ElicitFn = dyn Fn(ElicitRequestParams) -> HandlerFuture<ElicitResult> + Send + Sync;
type SamplingFn =
    dyn Fn(CreateMessageRequestParams) -> HandlerFuture<CreateMessageResult> + Send + Sync;
type RootsFn = dyn Fn() -> HandlerFuture<ListRootsResult> + Send + Sync;

/// The installed handlers.
#[derive(Clone, Default)]
pub struct Handlers {
    elicit: Option<Arc<ElicitFn>>,
    elicit_form: bool,
    elicit_url: bool,
    sampling: Option<Arc<SamplingFn>>,
    roots: Option<Arc<RootsFn>>,
}

impl fmt::Debug for Handlers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handlers")
            .field("elicitation_form", &self.elicit_form)
            .field("elicitation_url", &self.elicit_url)
            .field("sampling", &self.sampling.is_some())
            .field("roots", &self.roots.is_some())
            .finish()
    }
}

impl Handlers {
    /// Sets the elicitation handler and the modes it supports (at least one).
    pub(crate) fn set_elicitation<F, Fut>(&mut self, form: bool, url: bool, f: F)
    where
        F: Fn(ElicitRequestParams) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<ElicitResult, HandlerError>> + Send + 'static,
    {
        self.elicit = Some(Arc::new(move |p| Box::pin(f(p))));
        self.elicit_form = form || !url;
        self.elicit_url = url;
    }

    /// Sets the sampling handler.
    pub(crate) fn set_sampling<F, Fut>(&mut self, f: F)
    where
        F: Fn(CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<CreateMessageResult, HandlerError>>
            + Send
            + 'static,
    {
        self.sampling = Some(Arc::new(move |p| Box::pin(f(p))));
    }

    /// Sets the roots handler.
    pub(crate) fn set_roots<F, Fut>(&mut self, f: F)
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<ListRootsResult, HandlerError>> + Send + 'static,
    {
        self.roots = Some(Arc::new(move || Box::pin(f())));
    }

    /// The capabilities these handlers let the client declare.
    pub fn capabilities(&self) -> ClientCapabilities {
        let mut caps = ClientCapabilities::default();
        if self.elicit.is_some() {
            caps.elicitation = Some(ElicitationCapability {
                form: self.elicit_form.then(JsonObject::new),
                url: self.elicit_url.then(JsonObject::new),
                ..ElicitationCapability::default()
            });
        }
        if self.sampling.is_some() {
            caps.sampling = Some(SamplingCapability::default());
        }
        if self.roots.is_some() {
            caps.roots = Some(ListChangedCapability::default());
        }
        caps
    }

    // RESULT-05
    /// Answers one input request, as the JSON value to send back
    /// (no `resultType`).
    pub(crate) async fn fulfil(&self, req: InputRequest) -> Result<Value> {
        let refused = |e: HandlerError| {
            Error::new(
                ErrorKind::Handler,
                format!("input request refused: {}", e.message),
            )
        };
        // No handler at all: the client does not implement the method, so
        // the pushed request is answered -32601 (`ErrorKind::Unsupported`).
        let unhandled = |what: &str| {
            Error::new(
                ErrorKind::Unsupported,
                format!("the server asked for {what}, but no handler is installed"),
            )
        };
        let missing = |what: &str| {
            Error::new(
                ErrorKind::Handler,
                format!("the server asked for {what}, but no handler is installed"),
            )
        };
        let v = match req {
            InputRequest::Elicitation(p) => {
                let h = self
                    .elicit
                    .as_ref()
                    .ok_or_else(|| unhandled("elicitation"))?;
                let url_mode = matches!(p, ElicitRequestParams::Url(_));
                if (url_mode && !self.elicit_url) || (!url_mode && !self.elicit_form) {
                    return Err(missing("an elicitation mode the client did not declare"));
                }
                serde_json::to_value(unwinding(h(p), "elicitation").await?.map_err(refused)?)
            }
            InputRequest::Sampling(p) => {
                let h = self
                    .sampling
                    .as_ref()
                    .ok_or_else(|| unhandled("sampling"))?;
                if p.tools.is_some() || p.tool_choice.is_some() {
                    // SAMP-02: the client declared no sampling.tools.
                    return Err(missing("tool-enabled sampling"));
                }
                serde_json::to_value(unwinding(h(p), "sampling").await?.map_err(refused)?)
            }
            InputRequest::ListRoots(_) => {
                let h = self.roots.as_ref().ok_or_else(|| unhandled("roots"))?;
                serde_json::to_value(unwinding(h(), "roots").await?.map_err(refused)?)
            }
        };
        v.map_err(|e| {
            Error::new(ErrorKind::Handler, "cannot serialize the handler's answer").with_source(e)
        })
    }
}

/// Runs an application's input handler, turning a panic into an error
/// answer: the server is told the request failed instead of waiting for an
/// answer that never comes (until its timeout), and the connection lives on.
async fn unwinding<T>(fut: impl std::future::Future<Output = T>, what: &str) -> Result<T> {
    use futures_util::FutureExt;
    std::panic::AssertUnwindSafe(fut)
        .catch_unwind()
        .await
        .map_err(|_| {
            tracing::error!("the {what} handler panicked");
            Error::new(
                ErrorKind::Handler,
                format!("the client's {what} handler failed"),
            )
        })
}
