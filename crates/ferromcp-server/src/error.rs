//! Errors handlers return, and the server's own error type.

use ferromcp_protocol::ErrorObject;
use ferromcp_protocol::types::{InputRequest, InputRequests};
use std::fmt;

// TOOL-06
/// What a handler returns instead of a result.
///
/// - `?` on any `std::error::Error` gives [`HandlerError::Failed`]: for tools
///   that becomes a result with `isError: true` the model can read;
///   for other methods a -32603 error.
/// - `?` on an [`ErrorObject`] gives [`HandlerError::Protocol`]: answered as
///   that JSON-RPC error (e.g. -32602, -32021).
/// - `?` on [`RequestContext::elicit`](crate::RequestContext::elicit) and
///   friends gives [`HandlerError::NeedInput`] when the client has not
///   answered yet: the server answers `input_required` (modern) or asks the
///   client itself (handshake era) and calls the handler again.
///
/// A handler may also return `Result<_, E>` for any `E: Display` (e.g.
/// `String`): see [`IntoHandlerError`].
///
/// Deliberately not `std::error::Error` itself, so the blanket conversion
/// above stays coherent (the same trick as `anyhow::Error`); an
/// `ErrorObject` passing through it is recognised and kept as
/// [`HandlerError::Protocol`].
#[derive(Debug)]
pub enum HandlerError {
    /// A failure to report to the model / caller.
    Failed(String),
    /// A JSON-RPC error to answer with.
    Protocol(ErrorObject),
    /// Input the client must provide before the handler can finish.
    NeedInput(InputRequired),
}

impl HandlerError {
    /// A failure with a message.
    pub fn failed(msg: impl Into<String>) -> Self {
        Self::Failed(msg.into())
    }
    /// -32602 Invalid params.
    pub fn invalid_params(msg: impl fmt::Display) -> Self {
        Self::Protocol(ErrorObject::invalid_params(msg))
    }
    /// True for [`HandlerError::NeedInput`].
    pub fn is_need_input(&self) -> bool {
        matches!(self, Self::NeedInput(_))
    }

    // MRTR-08
    /// Keeps `work` across the round trip when this is a question to the
    /// client ([`HandlerError::NeedInput`]): the server seals it into the
    /// `requestState` (2026-07-28) or holds it (handshake era), and the
    /// handler's next run reads it back with
    /// [`RequestContext::kept_state`](crate::RequestContext::kept_state).
    /// Any other error is returned unchanged.
    ///
    /// The handler runs again from the top once the client answers, so
    /// work done before the question runs twice unless it is kept:
    ///
    /// ```
    /// use ferromcp_server::{Elicited, HandlerError, NoArgs, RequestContext, tool};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Confirm { sure: bool }
    ///
    /// let def = tool("reserve").handler(|_: NoArgs, cx: RequestContext| async move {
    ///     // First run: reserve (a side effect); re-run: reuse the reservation.
    ///     let id: u64 = match cx.kept_state::<u64>() {
    ///         Some(id) => id,
    ///         None => 42, // e.g. reserve_seat().await?
    ///     };
    ///     let answer = cx
    ///         .elicit_form::<Confirm>("confirm", "Keep the seat?")
    ///         .map_err(|e| e.keep_state(&id))?;
    ///     Ok::<_, HandlerError>(match answer {
    ///         Elicited::Accepted(Confirm { sure: true }) => format!("seat {id} is yours"),
    ///         _ => format!("seat {id} released"),
    ///     })
    /// });
    /// # let _ = def;
    /// ```
    ///
    /// `work` is serialized as JSON; the sealed state counts against
    /// [`Limits`](crate::Limits)' request size on its way back, so keep it
    /// small (an id, a cursor, a result), not a whole data set.
    pub fn keep_state<S: serde::Serialize + ?Sized>(self, work: &S) -> Self {
        match self {
            Self::NeedInput(i) => match serde_json::to_vec(work) {
                Ok(bytes) => Self::NeedInput(i.state(bytes)),
                Err(e) => Self::Protocol(ErrorObject::internal(format!(
                    "the state to keep cannot be serialized: {e}"
                ))),
            },
            other => other,
        }
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for HandlerError {
    fn from(e: E) -> Self {
        // A JSON-RPC error object is answered as itself, not as a failure.
        match (&e as &dyn std::any::Any).downcast_ref::<ErrorObject>() {
            Some(obj) => Self::Protocol(obj.clone()),
            None => Self::Failed(with_causes(&e)),
        }
    }
}

/// `e`'s message followed by its causes (`source()` chain), `: `-separated
/// as anyhow's `{:#}` writes them: "reading /x: No such file or directory".
fn with_causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut next = e.source();
    // A cycle in a hand-written `source()` cannot loop forever.
    let mut left = 64;
    while let (Some(cause), true) = (next, left > 0) {
        let msg = cause.to_string();
        // Errors that already print their cause (`"{0}"` wrappers) would
        // repeat it.
        if !text.ends_with(&msg) {
            text.push_str(": ");
            text.push_str(&msg);
        }
        next = cause.source();
        left -= 1;
    }
    text
}

impl HandlerError {
    /// The same error, for one that travelled inside another error type
    /// (an `anyhow::Error`) and is only reachable by reference.
    #[cfg(feature = "anyhow")]
    fn duplicate(&self) -> Self {
        match self {
            Self::Failed(m) => Self::Failed(m.clone()),
            Self::Protocol(o) => Self::Protocol(o.clone()),
            Self::NeedInput(i) => Self::NeedInput(i.clone()),
        }
    }
}

/// A [`HandlerError`] carried inside an `anyhow::Error`, so `?` on the SDK's
/// calls works in a handler returning `anyhow::Result` and the server gets
/// the original back (an `input_required` stays one).
#[cfg(feature = "anyhow")]
#[derive(Debug)]
struct Carried(HandlerError);

#[cfg(feature = "anyhow")]
impl fmt::Display for Carried {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            HandlerError::Failed(m) => f.write_str(m),
            HandlerError::Protocol(o) => write!(f, "{} ({})", o.message, o.code),
            HandlerError::NeedInput(_) => f.write_str("input required from the client"),
        }
    }
}

#[cfg(feature = "anyhow")]
impl std::error::Error for Carried {}

// Foreign type: `anyhow::Error` is the error type most applications' handlers return.
/// `?` on an SDK call (`elicit_form`, `elicit`, …) inside a handler that
/// returns `anyhow::Result`. The server unwraps it again when the handler
/// returns the error, also under added `.context(..)`.
///
/// The other direction, `?` on an `anyhow::Error` in a handler returning
/// `Result<_, HandlerError>`, cannot be a `From` impl (it would overlap the
/// blanket one for `std::error::Error` types, which anyhow may one day
/// implement): return `anyhow::Result` from such a handler, or write
/// `.map_err(IntoHandlerError::into_handler_error)?`.
#[cfg(feature = "anyhow")]
impl From<HandlerError> for anyhow::Error {
    fn from(e: HandlerError) -> Self {
        anyhow::Error::new(Carried(e))
    }
}

/// The handler error an `anyhow::Error` stands for: a carried
/// [`HandlerError`] or [`ErrorObject`] as itself, anything else a failure
/// with the whole cause chain.
#[cfg(feature = "anyhow")]
fn from_anyhow(e: &anyhow::Error) -> HandlerError {
    if let Some(Carried(h)) = e.downcast_ref::<Carried>() {
        return h.duplicate();
    }
    if let Some(obj) = e.downcast_ref::<ErrorObject>() {
        return HandlerError::Protocol(obj.clone());
    }
    HandlerError::Failed(format!("{e:#}"))
}

impl From<InputRequired> for HandlerError {
    fn from(i: InputRequired) -> Self {
        Self::NeedInput(i)
    }
}

/// Conversion of the error half of a handler's `Result` into a
/// [`HandlerError`].
///
/// Implemented for [`HandlerError`] and [`InputRequired`] (kept as they
/// are) and for every `E: Display + 'static`: `String`, `&str`, any
/// `std::error::Error`, `anyhow::Error`, `Box<dyn Error + Send + Sync>`, …
/// Those become [`HandlerError::Failed`] with the displayed message (for a
/// tool: a result with `isError: true` the model can read), except an
/// [`ErrorObject`], which is answered as that JSON-RPC error.
///
/// An `anyhow::Error` (feature `anyhow`, on by default) and a boxed
/// `dyn Error` keep their cause chain in the message, as `{:#}` prints it
/// ("reading /etc/x: No such file or directory (os error 2)"), and an
/// SDK error that travelled through `anyhow` with `?` (an
/// `elicit_form(..)?` asking the client) is answered as what it was:
///
/// ```
/// # #[cfg(feature = "anyhow")] {
/// use anyhow::Context;
/// use ferromcp_server::{tool, Elicited, RequestContext};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Confirm { sure: bool }
///
/// let def = tool("wipe").handler(|_: ferromcp_server::NoArgs, cx: RequestContext| async move {
///     let answer = cx.elicit_form::<Confirm>("confirm", "Really?")?; // -> anyhow::Error
///     if !matches!(answer, Elicited::Accepted(Confirm { sure: true })) {
///         return Ok("kept".to_string());
///     }
///     std::fs::read_to_string("/nonexistent").context("reading /nonexistent")?;
///     anyhow::Ok("wiped".to_string())
/// });
/// # let _ = def;
/// # }
/// ```
///
/// ```
/// use ferromcp_server::{tool, RequestContext};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Path { path: String }
///
/// // `Err(String)` becomes `{"isError": true, "content": [{"type": "text", "text": ...}]}`.
/// let def = tool("read").handler(|p: Path, _cx: RequestContext| async move {
///     if p.path.contains("..") {
///         return Err(format!("{} leaves the root", p.path));
///     }
///     Ok(format!("contents of {}", p.path))
/// });
/// # let _ = def;
/// ```
pub trait IntoHandlerError {
    /// Converts.
    fn into_handler_error(self) -> HandlerError;
}

impl IntoHandlerError for HandlerError {
    fn into_handler_error(self) -> HandlerError {
        self
    }
}

impl IntoHandlerError for InputRequired {
    fn into_handler_error(self) -> HandlerError {
        HandlerError::NeedInput(self)
    }
}

impl<E: fmt::Display + 'static> IntoHandlerError for E {
    fn into_handler_error(self) -> HandlerError {
        let any = &self as &dyn std::any::Any;
        if let Some(obj) = any.downcast_ref::<ErrorObject>() {
            return HandlerError::Protocol(obj.clone());
        }
        #[cfg(feature = "anyhow")]
        if let Some(e) = any.downcast_ref::<anyhow::Error>() {
            return from_anyhow(e);
        }
        if let Some(e) = any.downcast_ref::<Box<dyn std::error::Error + Send + Sync>>() {
            return HandlerError::Failed(with_causes(e.as_ref()));
        }
        if let Some(e) = any.downcast_ref::<Box<dyn std::error::Error>>() {
            return HandlerError::Failed(with_causes(e.as_ref()));
        }
        HandlerError::Failed(self.to_string())
    }
}

// MRTR-02
/// An interim "input required" answer under construction.
///
/// The server seals `state` into `requestState` (bound to the method, the
/// tool/prompt name or resource URI and a digest of the arguments) and
/// returns it to the handler, unsealed, on the retry via
/// [`RequestContext::state`](crate::RequestContext::state).
#[derive(Debug, Clone, Default)]
pub struct InputRequired {
    pub(crate) requests: InputRequests,
    pub(crate) state: Option<Vec<u8>>,
}

impl InputRequired {
    /// An empty answer; add requests and/or state.
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds an input request under `key` (unique within this request).
    pub fn request(mut self, key: impl Into<String>, request: InputRequest) -> Self {
        self.requests.insert(key.into(), request);
        self
    }
    /// Sets the opaque state the handler wants back on the retry.
    pub fn state(mut self, state: impl Into<Vec<u8>>) -> Self {
        self.state = Some(state.into());
        self
    }
    /// The requests gathered so far.
    pub fn requests(&self) -> &InputRequests {
        &self.requests
    }
}
/// Errors from building or running a server.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    /// The I/O error an [`ErrorKind::Io`] error came from.
    source: Option<std::io::Error>,
}

/// What went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A registration was invalid (bad schema, duplicate name, bad template).
    Config,
    /// An I/O failure (bind, accept, stdio).
    Io,
}

impl Error {
    pub(crate) fn config(msg: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::Config,
            message: msg.into(),
            source: None,
        }
    }
    pub(crate) fn io(e: std::io::Error) -> Self {
        Self {
            kind: ErrorKind::Io,
            message: e.to_string(),
            source: Some(e),
        }
    }
    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    /// True for configuration errors.
    pub fn is_config(&self) -> bool {
        self.kind == ErrorKind::Config
    }
    /// True for I/O errors.
    pub fn is_io(&self) -> bool {
        self.kind == ErrorKind::Io
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {
    /// The underlying [`std::io::Error`] of an I/O error (its
    /// [`kind`](std::io::Error::kind) tells e.g. "address in use" from
    /// "permission denied").
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod error_source_tests {
    use super::*;

    #[test]
    fn an_io_error_keeps_its_source() {
        let e = Error::io(std::io::Error::new(
            std::io::ErrorKind::AddrInUse,
            "address in use",
        ));
        assert!(e.is_io());
        let source = std::error::Error::source(&e)
            .and_then(|s| s.downcast_ref::<std::io::Error>())
            .map(std::io::Error::kind);
        assert_eq!(source, Some(std::io::ErrorKind::AddrInUse));
        assert!(std::error::Error::source(&Error::config("bad")).is_none());
    }
}
