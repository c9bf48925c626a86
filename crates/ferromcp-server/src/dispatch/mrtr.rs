//! Multi round-trip requests: a handler's `input_required` answer, or
//! (handshake era) the input requests sent to the client and the handler
//! run again with the answers.

use super::arguments::AsValue;
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

/// Rounds a handshake-era handler gets before the server gives up.
const HANDSHAKE_ROUNDS: usize = 10;

impl Shared {
    // MRTR-01…MRTR-15
    /// Runs `run` under MRTR rules with the `inputResponses` and
    /// `requestState` of `input` and answers: a result through `complete`,
    /// an input request as an `InputRequiredResult`, a handler failure as
    /// `on_failure` says.
    ///
    /// Modern: one round; an incoming `requestState` is verified and
    /// unsealed first (tampered, expired or mismatched → -32602); a
    /// `NeedInput` becomes an `InputRequiredResult` with freshly sealed state.
    /// Handshake era: the server fulfils `NeedInput` itself by sending the
    /// input requests to the client and calling the handler again, up to
    /// ten rounds ([`Self::handshake_rounds`]).
    ///
    /// The first round is the only await on the common path; opening a
    /// state and the later rounds are boxed, so they do not size this
    /// future (one boxed future per request, kept small).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn answer_mrtr<'a, A, T, S, F, C>(
        self: Arc<Self>,
        method: &'a str,
        target: S,
        args: A,
        input: (Option<InputResponses>, Option<String>),
        parts: ContextParts,
        legacy: Legacy,
        run: F,
        on_failure: OnFailure,
        complete: C,
    ) -> impl Future<Output = Reply> + Send + 'a
    where
        A: AsValue + 'a,
        T: Send + 'a,
        S: AsRef<str> + Send + 'a,
        F: Fn(&A, RequestContext) -> BoxFuture<Result<T, HandlerError>> + Send + Sync + 'a,
        C: FnOnce(&Self, T) -> Result<Bytes, ErrorObject> + Send + 'a,
    {
        // Built before the future: what it keeps is small (the context is
        // one pointer), so the one boxed future per request stays small.
        let id = parts.id.clone();
        let version = parts.version;
        let modern = version.is_modern();
        let (input, request_state) = input;
        let first = match request_state {
            Some(token) if modern => Err(Box::new((parts, input, token))),
            _ => Ok(RequestContext::new(parts, input, None, self.clone())),
        };
        let requester = legacy.requester;
        async move {
            let cx = match first {
                Ok(cx) => cx,
                Err(b) => {
                    let (parts, input, token) = *b;
                    let target = target.as_ref();
                    let args = args.as_value();
                    Box::pin(self.open_context(method, target, &args, parts, input, token)).await?
                }
            };
            let timeout = self.limits().handler_timeout;
            let out = match guarded(run(&args, cx.clone()), timeout, &cx).await {
                Ok(t) => Mrtr::Complete(t),
                Err(HandlerError::Failed(m)) => Mrtr::Failed(m),
                Err(HandlerError::Protocol(e)) => return Err(e.into()),
                Err(HandlerError::NeedInput(ir)) if modern => {
                    let principal = cx.inner.principal.as_ref().map(|p| p.subject.as_str());
                    let sealed = self
                        .sealer()
                        .seal(
                            &state_binding(method, target.as_ref(), &args.as_value(), principal),
                            ir.state.as_deref().unwrap_or_default(),
                        )
                        .map_err(|e| e.to_error_object())?;
                    Mrtr::InputRequired(InputRequiredResult {
                        input_requests: (!ir.requests.is_empty()).then_some(ir.requests),
                        request_state: Some(sealed),
                        meta: None,
                    })
                }
                Err(HandlerError::NeedInput(ir)) => {
                    Box::pin(self.handshake_rounds(&args, ir, cx, requester, &run)).await?
                }
            };
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
    }

    /// The first round's context when a `requestState` came: verified and
    /// unsealed first (rare; boxed by the caller).
    async fn open_context(
        self: &Arc<Self>,
        method: &str,
        target: &str,
        args: &Value,
        parts: ContextParts,
        input: Option<InputResponses>,
        token: String,
    ) -> Result<RequestContext, Failure> {
        let principal = parts.principal.as_ref().map(|p| p.subject.as_str());
        let binding = state_binding(method, target, args, principal);
        // Awaited inline: no store, or the in-process one, answers at once;
        // a shared store costs one round trip (no spawn).
        let state = self.open_state(token, binding).await?;
        Ok(RequestContext::new(parts, input, Some(state), self.clone()))
    }

    /// Verifies and unseals an incoming `requestState` for `binding`.
    async fn open_state(
        &self,
        token: String,
        binding: StateBinding<'_>,
    ) -> Result<Vec<u8>, Failure> {
        self.sealer()
            .open_async(&token, &binding)
            .await
            .map_err(|e| {
                tracing::debug!(reason = %e, "rejected requestState");
                Failure::from(e)
            })
    }

    // MRTR-13
    /// The handshake era's rounds after the first asked for input `ir`:
    /// the server sends the input requests to the client, merges the
    /// answers into `input` and runs the handler again, up to
    /// [`HANDSHAKE_ROUNDS`] runs in all.
    async fn handshake_rounds<A, T, F>(
        self: &Arc<Self>,
        args: &A,
        ir: InputRequired,
        first: RequestContext,
        requester: Option<Arc<dyn ClientRequester>>,
        run: &F,
    ) -> Result<Mrtr<T>, Failure>
    where
        F: Fn(&A, RequestContext) -> BoxFuture<Result<T, HandlerError>>,
    {
        let Some(req) = requester else {
            return Err(
                ErrorObject::internal("this transport cannot send requests to the client").into(),
            );
        };
        // The next rounds' parts and input are the first round's.
        let mut input = first.inner.input.clone();
        let mut parts = Some(parts_of(&first));
        drop(first);
        let timeout = self.limits().handler_timeout;
        let mut ir = ir;
        let mut state = None;
        // Each run that asked for input has its requests sent, the last
        // one's too, before giving up.
        for round in 1..=HANDSHAKE_ROUNDS {
            let answers = fulfil(req.clone(), &ir, self.limits().client_request_timeout).await?;
            let mut merged = input.take().unwrap_or_default();
            for (k, v) in answers {
                merged.insert_raw(k, v);
            }
            input = Some(merged);
            if ir.state.is_some() {
                state = ir.state.take();
            }
            if round == HANDSHAKE_ROUNDS {
                break;
            }
            // The last possible round takes the parts instead of a copy.
            let round_parts = if round + 1 == HANDSHAKE_ROUNDS {
                parts.take()
            } else {
                parts.clone()
            };
            let Some(round_parts) = round_parts else {
                break;
            };
            let cx = RequestContext::new(round_parts, input.clone(), state.clone(), self.clone());
            match guarded(run(args, cx.clone()), timeout, &cx).await {
                Ok(t) => return Ok(Mrtr::Complete(t)),
                Err(HandlerError::Failed(m)) => return Ok(Mrtr::Failed(m)),
                Err(HandlerError::Protocol(e)) => return Err(e.into()),
                Err(HandlerError::NeedInput(next)) => ir = next,
            }
        }
        Err(
            ErrorObject::internal("the handler kept asking for input; giving up after 10 rounds")
                .into(),
        )
    }
}

/// The parts `cx` was built from, for a next round's context.
fn parts_of(cx: &RequestContext) -> ContextParts {
    let i = &cx.inner;
    ContextParts {
        id: i.id.clone(),
        method: i.method.clone(),
        version: i.version,
        meta: i.meta.clone(),
        capabilities: i.capabilities.clone(),
        log_level: i.log_level,
        cancel: i.cancel.clone(),
        outbound: i.outbound.clone(),
        principal: i.principal.clone(),
        #[cfg(feature = "http")]
        http: i.http.clone(),
    }
}

/// What a `requestState` is bound to (the binding, and the SHA-256 of the
/// arguments in it, is only made when a state arrives or is sealed).
fn state_binding<'a>(
    method: &'a str,
    target: &'a str,
    args: &Value,
    principal: Option<&'a str>,
) -> StateBinding<'a> {
    StateBinding {
        method,
        target,
        arguments_digest: crate::request_state::arguments_digest(Some(args)),
        principal,
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
