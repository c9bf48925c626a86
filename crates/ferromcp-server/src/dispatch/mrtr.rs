//! Multi round-trip requests: a handler's `input_required` answer, or
//! (handshake era) the input requests sent to the client and the handler
//! run again with the answers.

use super::{ClientRequester, Legacy};
use crate::context::{ContextParts, RequestContext};
use crate::error::{HandlerError, InputRequired};
use crate::future::{BoxFuture, Reply};
use crate::outcome::Failure;
use crate::request_state::StateBinding;
use crate::shared::Shared;
use bytes::Bytes;
use ferromcp_protocol::ErrorObject;
use ferromcp_protocol::types::{CallToolResult, ContentBlock, InputRequiredResult, InputResponses};
use futures_util::FutureExt;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

impl Shared {
    /// Runs `run` under MRTR rules ([`Self::run_mrtr`]) with the
    /// `inputResponses` and `requestState` of `input` and answers: a result
    /// through `complete`, an input request as an `InputRequiredResult`, a
    /// handler failure as `on_failure` says.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn answer_mrtr<T, F, C>(
        self: Arc<Self>,
        method: &str,
        target: &str,
        args: Value,
        input: (Option<InputResponses>, Option<String>),
        parts: ContextParts,
        legacy: Legacy,
        run: F,
        on_failure: OnFailure,
        complete: C,
    ) -> Reply
    where
        F: Fn(&Value, RequestContext) -> BoxFuture<Result<T, HandlerError>>,
        C: FnOnce(&Self, T) -> Result<Bytes, ErrorObject>,
    {
        let id = parts.id.clone();
        let version = parts.version;
        let (input, state) = input;
        let out = self
            .clone()
            .run_mrtr(method, target, args, input, state, parts, legacy, run)
            .await?;
        match out {
            Mrtr::Complete(r) => Ok(complete(&self, r)?),
            Mrtr::Failed(msg) => match on_failure {
                OnFailure::ToolError => {
                    crate::trace::note_tool_error();
                    Ok(self.finish(
                        &id,
                        CallToolResult::error(vec![ContentBlock::text(msg)]),
                        version,
                    ))
                }
                OnFailure::InternalError => Err(ErrorObject::internal(msg).into()),
            },
            Mrtr::InputRequired(r) => Ok(self.finish_input_required(&id, r)),
        }
    }

    // MRTR-01…MRTR-15, MRTR-15
    /// Runs a handler under MRTR rules.
    ///
    /// Modern: one round; an incoming `requestState` is verified and
    /// unsealed first (tampered, expired or mismatched → -32602); a
    /// `NeedInput` becomes an `InputRequiredResult` with freshly sealed state.
    /// Handshake era: the server fulfils `NeedInput` itself by sending the
    /// input requests to the client and calling the handler again, up to
    /// ten rounds.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn run_mrtr<T, F>(
        self: Arc<Self>,
        method: &str,
        target: &str,
        args: Value,
        input: Option<InputResponses>,
        request_state: Option<String>,
        parts: ContextParts,
        legacy: Legacy,
        run: F,
    ) -> Result<Mrtr<T>, Failure>
    where
        F: Fn(&Value, RequestContext) -> BoxFuture<Result<T, HandlerError>>,
    {
        let modern = parts.version.is_modern();
        let principal = parts.principal.as_ref().map(|p| p.subject.clone());
        // The binding (and the SHA-256 of the arguments in it) is only needed
        // when a requestState arrives or has to be sealed.
        let binding = |args: &Value| StateBinding {
            method,
            target,
            arguments_digest: crate::request_state::arguments_digest(Some(args)),
            principal: principal.as_deref(),
        };
        let mut state = match request_state {
            Some(token) if modern => {
                // Awaited inline: no store, or the in-process one, answers
                // at once; a shared store costs one round trip (no spawn).
                Some(
                    Box::pin(self.sealer().open_async(&token, &binding(&args)))
                        .await
                        .map_err(|e| {
                            tracing::debug!(reason = %e, "rejected requestState");
                            Failure::from(e)
                        })?,
                )
            }
            _ => None,
        };
        let mut input = input;
        let timeout = self.limits().handler_timeout;
        let max_rounds = if modern { 1 } else { 10 };
        let mut parts = Some(parts);
        for round in 0..max_rounds {
            // The last possible round (the only one on the modern wire)
            // takes the context parts instead of a copy.
            let round_parts = if round + 1 == max_rounds {
                parts.take()
            } else {
                parts.clone()
            };
            let Some(round_parts) = round_parts else {
                break;
            };
            let cx = RequestContext::new(round_parts, input.clone(), state.clone(), self.clone());
            match guarded(run(&args, cx.clone()), timeout, &cx).await {
                Ok(t) => return Ok(Mrtr::Complete(t)),
                Err(HandlerError::Failed(m)) => return Ok(Mrtr::Failed(m)),
                Err(HandlerError::Protocol(e)) => return Err(e.into()),
                Err(HandlerError::NeedInput(ir)) if modern => {
                    let sealed = self
                        .sealer()
                        .seal(&binding(&args), ir.state.as_deref().unwrap_or_default())
                        .map_err(|e| e.to_error_object())?;
                    let r = InputRequiredResult {
                        input_requests: (!ir.requests.is_empty()).then_some(ir.requests),
                        request_state: Some(sealed),
                        meta: None,
                    };
                    return Ok(Mrtr::InputRequired(r));
                }
                Err(HandlerError::NeedInput(ir)) => {
                    let Some(req) = legacy.requester.clone() else {
                        return Err(ErrorObject::internal(
                            "this transport cannot send requests to the client",
                        )
                        .into());
                    };
                    let answers =
                        Box::pin(fulfil(req, &ir, self.limits().client_request_timeout)).await?;
                    let mut merged = input.take().unwrap_or_default();
                    for (k, v) in answers {
                        merged.insert_raw(k, v);
                    }
                    input = Some(merged);
                    if ir.state.is_some() {
                        state = ir.state;
                    }
                }
            }
        }
        Err(
            ErrorObject::internal("the handler kept asking for input; giving up after 10 rounds")
                .into(),
        )
    }
}

/// Outcome of a handler under MRTR.
pub(super) enum Mrtr<T> {
    Complete(T),
    Failed(String),
    InputRequired(InputRequiredResult),
}

/// What a handler's failure becomes in [`Shared::answer_mrtr`].
#[derive(Clone, Copy)]
pub(super) enum OnFailure {
    /// A `CallToolResult` with `isError` (`tools/call`).
    ToolError,
    /// A JSON-RPC internal error (every other method).
    InternalError,
}

// MRTR-13
/// Sends every input request to the client concurrently and
/// collects the answers by key.
pub(super) async fn fulfil(
    req: Arc<dyn ClientRequester>,
    ir: &InputRequired,
    timeout: std::time::Duration,
) -> Result<Vec<(String, Value)>, ErrorObject> {
    let futs = ir.requests.iter().map(|(k, r)| {
        // Serialized straight to text, not through `Value`: a `Value` map is
        // sorted unless serde_json's `preserve_order` is on somewhere in the
        // program, which would put a form's fields in alphabetical order.
        // ELICIT-04
        use serde_json::value::to_raw_value;
        let params = match r {
            ferromcp_protocol::types::InputRequest::Elicitation(p) => to_raw_value(p),
            ferromcp_protocol::types::InputRequest::Sampling(p) => to_raw_value(p),
            ferromcp_protocol::types::InputRequest::ListRoots(p) => {
                to_raw_value(&(*p).unwrap_or_default())
            }
        };
        let params = match params {
            Ok(p) => p,
            Err(e) => {
                let e = ErrorObject::internal(format!("cannot serialize an input request: {e}"));
                return futures_util::future::Either::Left(std::future::ready(Err(e)));
            }
        };
        let fut = req.request(r.method(), params);
        let k = k.clone();
        futures_util::future::Either::Right(async move {
            match tokio::time::timeout(timeout, fut).await {
                Ok(Ok(v)) => Ok((k, v)),
                Ok(Err(e)) => Err(e),
                Err(_) => Err(ErrorObject::internal("the client did not answer in time")),
            }
        })
    });
    futures_util::future::try_join_all(futs).await
}

/// Runs a handler future with a timeout, turning a panic into -32603 so one
/// bad handler never takes the connection down.
pub(crate) async fn guarded<T>(
    fut: BoxFuture<Result<T, HandlerError>>,
    timeout: std::time::Duration,
    cx: &RequestContext,
) -> Result<T, HandlerError> {
    let mut fut = AssertUnwindSafe(fut).catch_unwind();
    // Most handlers finish on their first poll: answer without reading the
    // clock or arming a timer (the timeout counts from the first pending poll).
    let outcome = match futures_util::poll!(&mut fut) {
        std::task::Poll::Ready(r) => Ok(r),
        std::task::Poll::Pending => tokio::time::timeout(timeout, fut).await,
    };
    match outcome {
        Ok(Ok(r)) => r,
        Ok(Err(panic)) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "handler panicked".into());
            tracing::error!(method = %cx.method(), "handler panicked: {msg}");
            Err(HandlerError::Protocol(ErrorObject::internal(
                "the handler failed unexpectedly",
            )))
        }
        Err(_) => {
            cx.inner.cancel.cancel();
            Err(HandlerError::Protocol(ErrorObject::internal(
                "the handler timed out",
            )))
        }
    }
}
