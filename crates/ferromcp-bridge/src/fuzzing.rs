//! The relay's era translation steps, for the cargo-fuzz targets in
//! `fuzz/` (the `fuzzing` feature). Each takes one message as the bridge
//! receives it (the host's line or the remote's answer) and returns what
//! the bridge would send on, with no I/O. Not a stable API: the relay's
//! internals, exposed so hostile input can reach them directly.

use crate::message::classify;
use serde_json::{Map, Value};

/// A 2026-07-28 host's request as a handshake-era remote gets it: the
/// envelope members removed from `params._meta` (other `_meta` keys
/// stay). `None` when the line is not a JSON-RPC message or its params
/// are not an object.
pub fn strip_envelope(line: &[u8]) -> Option<Vec<u8>> {
    crate::relay::strip_envelope(&classify(line).ok()?)
}

/// A handshake host's request as a 2026-07-28 remote gets it: the
/// `_meta` envelope added to `params` (keys the host set itself are
/// kept), from the host's `initialize` `clientInfo` and `capabilities`
/// and the level it last set. `None` when the line is not a JSON-RPC
/// message or its params are not an object.
pub fn add_envelope(
    line: &[u8],
    client_info: Value,
    capabilities: Option<&Value>,
    log_level: Option<Value>,
) -> Option<Vec<u8>> {
    crate::relay::with_envelope(&classify(line).ok()?, client_info, capabilities, log_level)
}

/// A handshake-era remote's answer to a `method` request as a 2026-07-28
/// host gets it (`resultType`, and the cache hints of the cacheable
/// methods when missing). Anything else is returned unchanged.
pub fn modern_result(answer: Vec<u8>, method: &str) -> Vec<u8> {
    crate::relay::modern_result(answer, method)
}

/// A notification from the bridge's `subscriptions/listen` without the
/// listen's `subscriptionId` in `_meta`; `None` when it has none.
pub fn without_subscription_id(line: &[u8]) -> Option<Vec<u8>> {
    crate::relay::without_subscription_id(&classify(line).ok()?)
}

/// The result of an answer whose `resultType` is `input_required`.
pub fn input_required(answer: &[u8]) -> Option<Map<String, Value>> {
    crate::relay::input_required(&classify(answer).ok()?)
}

/// The request `sent` with `params.inputResponses` and
/// `params.requestState` set for the next round of an input exchange.
pub fn with_input_responses(
    sent: &[u8],
    responses: Map<String, Value>,
    state: Option<Value>,
) -> Option<Vec<u8>> {
    crate::relay::with_input_responses(sent, responses, state)
}
