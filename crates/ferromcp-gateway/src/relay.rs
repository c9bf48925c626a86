//! Relaying an upstream's input requests (elicitation, sampling, roots)
//! to the client whose call caused them.
//!
//! A 2026-07-28 upstream answers a `tools/call`, `prompts/get` or
//! `resources/read` with an `input_required` result. The gateway passes its
//! `inputRequests` on as its own: the server crate turns them into an
//! `input_required` answer for a 2026-07-28 client, or into requests pushed
//! on a handshake-era client's session. The upstream's `requestState`
//! travels inside the gateway's own request state, which the server seals
//! and binds to the call (method, exposed name, arguments, principal): a
//! client can neither read nor change it, nor replay it on another tool.
//! On the retry the gateway sends the upstream the answers to the keys it
//! asked for (only those) and its state, byte for byte.
//!
//! Limits (`gateway.relay`):
//!
//! ```json
//! {"gateway": {"relay": {"maxRounds": 10, "maxRequests": 16}}}
//! ```
//!
//! - `maxRounds`: the most input rounds one call may take; the next ask
//!   fails the call with an error naming the upstream.
//! - `maxRequests`: the most input requests one round may carry.
//!
//! A request the calling client did not declare the capability for is
//! refused with -32021 (missing client capability), naming the upstream.
// MRTR-04, MRTR-06, MRTR-08, MRTR-11

use crate::upstream::{Failure, Upstream};
use ferromcp_protocol::ErrorObject;
use ferromcp_protocol::types::{InputRequiredResult, JsonObject};
use ferromcp_server::{HandlerError, InputRequired, RequestContext};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// What the gateway keeps, sealed by its server, across one relayed
/// round: whose state it is, the upstream's `requestState`, the keys the
/// upstream asked for, and how many rounds were taken.
#[derive(Debug, Serialize, Deserialize)]
struct Kept {
    /// The upstream's name.
    u: String,
    /// Its `requestState`, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    s: Option<String>,
    /// The keys of its `inputRequests`.
    #[serde(default)]
    k: Vec<String>,
    /// Rounds taken so far.
    r: u32,
    /// The number of the held upstream call (handshake-era upstream).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    p: Option<u64>,
}

/// The key of a handshake-era upstream's one server request.
const PUSHED_KEY: &str = "input";

/// Where a retry resumes.
struct Resumed {
    round: u32,
    /// A held call's number and the client's answer.
    parked: Option<(u64, Option<Value>)>,
}

/// Sends `method` to `up` for the client of `cx`, relaying the upstream's
/// input requests to that client. The outer error ends the handler's run
/// as is (input needed, or the relay refused); the inner result is the
/// upstream's answer or why it has none.
pub(crate) async fn request(
    up: &Arc<Upstream>,
    method: &str,
    mut params: JsonObject,
    cx: &RequestContext,
) -> Result<Result<Value, Failure>, HandlerError> {
    let resumed = resume(up, &mut params, cx)?;
    let round = resumed.round;
    if resumed.parked.is_some() || applies(up, cx.protocol_version().is_modern()) {
        return held(up, method, params, cx, resumed).await;
    }
    let v = match up.request_for(method, params, Some(cx)).await {
        Ok(v) => v,
        Err(f) => return Ok(Err(f)),
    };
    if v.get("resultType").and_then(Value::as_str) != Some("input_required") {
        return Ok(Ok(v));
    }
    let ir: InputRequiredResult = match serde_json::from_value(v) {
        Ok(ir) => ir,
        Err(e) => {
            return Err(HandlerError::Protocol(ErrorObject::internal(format!(
                "upstream {:?} sent a malformed input_required result for {method}: {e}",
                up.name()
            ))));
        }
    };
    Err(ask(up, method, ir, round, cx))
}

/// The upstream's state and the client's answers for a retry, added to
/// `params`; returns the rounds taken so far.
fn resume(
    up: &Upstream,
    params: &mut JsonObject,
    cx: &RequestContext,
) -> Result<Resumed, HandlerError> {
    if cx.state().is_none() {
        // A first round: answers nobody asked for are not passed on.
        return Ok(Resumed {
            round: 0,
            parked: None,
        });
    }
    let Some(kept) = cx.kept_state::<Kept>() else {
        return Err(HandlerError::Protocol(ErrorObject::invalid_params(
            "requestState is not one the gateway issued for this call",
        )));
    };
    // The seal binds the state to this call's exposed name already; this
    // also keeps one upstream's state from ever reaching another.
    if kept.u != up.name() {
        return Err(HandlerError::Protocol(ErrorObject::invalid_params(
            "requestState belongs to another upstream",
        )));
    }
    if let Some(id) = kept.p {
        let answer = cx
            .input_responses()
            .and_then(|a| a.get(PUSHED_KEY))
            .cloned();
        return Ok(Resumed {
            round: kept.r,
            parked: Some((id, answer)),
        });
    }
    if let Some(s) = kept.s {
        params.insert("requestState".into(), Value::String(s));
    }
    if let Some(answers) = cx.input_responses() {
        // MRTR-06: only the answers to the keys the upstream asked for.
        let mine: JsonObject = kept
            .k
            .iter()
            .filter_map(|k| answers.get(k).map(|v| (k.clone(), v.clone())))
            .collect();
        if !mine.is_empty() {
            params.insert("inputResponses".into(), Value::Object(mine));
        }
    }
    Ok(Resumed {
        round: kept.r,
        parked: None,
    })
}

/// A call to a handshake-era upstream for a handshake-era client: its
/// server requests are relayed to the client while the call is held.
async fn held(
    up: &Arc<Upstream>,
    method: &str,
    params: JsonObject,
    cx: &RequestContext,
    resumed: Resumed,
) -> Result<Result<Value, Failure>, HandlerError> {
    let name = up.name();
    let live = up.live();
    let (mut task, mut rx) = match resumed.parked {
        Some((id, answer)) => {
            let Some(p) = live.unpark(id) else {
                return Err(HandlerError::Protocol(ErrorObject::internal(format!(
                    "the call to upstream {name:?} is no longer held (it ended or timed out)"
                ))));
            };
            let _ = p
                .answer
                .send(answer.ok_or_else(|| "the calling client gave no answer".to_owned()));
            (p.task, p.rx)
        }
        None => {
            let (up2, cx2, m) = (up.clone(), cx.clone(), method.to_owned());
            live.start(async move { up2.request_for(&m, params, Some(&cx2)).await })
        }
    };
    loop {
        tokio::select! {
            r = &mut task => {
                return Ok(r.unwrap_or_else(|e| Err(Failure::Other(e.to_string()))));
            }
            Some(p) = rx.recv() => {
                let limits = up.relay();
                if resumed.round.saturating_add(1) >= limits.max_rounds() {
                    task.abort();
                    return Err(HandlerError::Protocol(ErrorObject::internal(format!(
                        "upstream {name:?} still asked for input during {method} after {} rounds (gateway.relay.maxRounds)",
                        limits.max_rounds()
                    ))));
                }
                if !p.request.is_allowed_by(cx.client_capabilities()) {
                    // The upstream hears why, and decides what to do.
                    let _ = p.answer.send(Err(format!(
                        "the gateway's calling client did not declare the capability for {}",
                        p.request.method()
                    )));
                    continue;
                }
                let request = p.request.clone();
                let id = live.park(crate::pushed::Parked { task, rx, answer: p.answer });
                let kept = Kept {
                    u: name.to_owned(),
                    s: None,
                    k: vec![PUSHED_KEY.to_owned()],
                    r: resumed.round.saturating_add(1),
                    p: Some(id),
                };
                return Err(HandlerError::NeedInput(
                    InputRequired::new().request(PUSHED_KEY, request),
                )
                .keep_state(&kept));
            }
        }
    }
}

/// The handler's answer to an upstream's `input_required`: its requests
/// as the gateway's own (checked against the limits and the client's
/// capabilities), its state kept sealed.
fn ask(
    up: &Upstream,
    method: &str,
    ir: InputRequiredResult,
    round: u32,
    cx: &RequestContext,
) -> HandlerError {
    let limits = up.relay();
    let name = up.name();
    if round.saturating_add(1) >= limits.max_rounds() {
        return HandlerError::Protocol(ErrorObject::internal(format!(
            "upstream {name:?} still asked for input during {method} after {} rounds (gateway.relay.maxRounds)",
            limits.max_rounds()
        )));
    }
    let requests = ir.input_requests.unwrap_or_default();
    if requests.len() > limits.max_requests() {
        return HandlerError::Protocol(ErrorObject::internal(format!(
            "upstream {name:?} asked for {} inputs at once during {method}; at most {} are relayed (gateway.relay.maxRequests)",
            requests.len(),
            limits.max_requests()
        )));
    }
    let caps = cx.client_capabilities();
    if let Some(req) = requests.values().find(|r| !r.is_allowed_by(caps)) {
        let required = serde_json::to_value(req.required_capabilities())
            .unwrap_or_else(|_| serde_json::json!({}));
        let mut e = ErrorObject::missing_client_capability(required);
        e.message = format!(
            "upstream {name:?} asked for {} during {method}, which this client did not declare (missing required client capability)",
            req.method()
        );
        return HandlerError::Protocol(e);
    }
    let kept = Kept {
        u: name.to_owned(),
        s: ir.request_state,
        k: requests.keys().cloned().collect(),
        r: round.saturating_add(1),
        p: None,
    };
    let mut out = InputRequired::new();
    for (k, r) in requests {
        out = out.request(k, r);
    }
    HandlerError::NeedInput(out).keep_state(&kept)
}

/// Whether calls to `up` for the client of a request in `version` are
/// sent through [`Live`]: a handshake-era upstream and a handshake-era
/// client.
pub(crate) fn applies(up: &Upstream, client_modern: bool) -> bool {
    !client_modern
        && up
            .current()
            .is_some_and(|c| c.era() != ferromcp_protocol::Era::Modern)
}
