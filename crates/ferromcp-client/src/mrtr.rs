//! The MRTR driver: an `input_required`
//! result is fulfilled by the user's handlers, concurrently, and the request
//! is retried with a fresh id (and, on HTTP, freshly computed headers), the
//! original params plus `inputResponses` and the byte-exact `requestState`.
//! A state-only round retries after a short backoff (50 ms doubling to
//! 250 ms). A result without `resultType` is complete; an
//! unknown `resultType` is invalid. The loop is bounded.
// MRTR-05…MRTR-07, MRTR-12…MRTR-14, RESULT-02, RESULT-03

use crate::core::{Inner, decode};
use crate::error::{Error, ErrorKind, Result};
use crate::handlers::Handlers;
use crate::options::RequestOptions;
use ferromcp_protocol::method;
use ferromcp_protocol::types::{
    InputRequests, InputRequiredResult, InputResponses, JsonObject, MaybeInputRequired, ResultType,
    probe_result_type,
};
use futures_util::future::try_join_all;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;
use std::sync::Arc;
use std::time::Duration;

/// First state-only backoff.
const STATE_BACKOFF_START: Duration = Duration::from_millis(50);
/// Backoff ceiling.
const STATE_BACKOFF_MAX: Duration = Duration::from_millis(250);

/// Classifies a raw result of `method`.
pub(crate) fn classify<T: DeserializeOwned>(
    method: &str,
    raw: &RawValue,
) -> Result<MaybeInputRequired<T>> {
    let rt = probe_result_type(raw.get())
        .map_err(|e| Error::invalid(format!("malformed {method} result")).with_source(e))?;
    match rt {
        None | Some(ResultType::Complete) => Ok(MaybeInputRequired::Complete(decode(raw, method)?)),
        Some(ResultType::InputRequired) if method::allows_input_required(method) => {
            let ir: InputRequiredResult = decode(raw, method)?;
            if !ir.is_well_formed() {
                return Err(Error::invalid(
                    "an input_required result with neither inputRequests nor requestState",
                ));
            }
            Ok(MaybeInputRequired::InputRequired(ir))
        }
        Some(other) => Err(Error::invalid(format!(
            "unrecognised resultType {:?} for {method}",
            other.as_str()
        ))),
    }
}

// MRTR-13
/// Fulfils every input request concurrently; the first refusal aborts all.
pub(crate) async fn fulfil(
    handlers: &Handlers,
    requests: &InputRequests,
) -> Result<InputResponses> {
    let futs = requests.iter().map(|(key, req)| {
        let key = key.clone();
        let req = req.clone();
        async move { handlers.fulfil(req).await.map(|v| (key, v)) }
    });
    let answers = try_join_all(futs).await?;
    Ok(answers.into_iter().collect())
}

/// Runs `method` to completion.
pub(crate) async fn drive<T: DeserializeOwned>(
    inner: &Arc<Inner>,
    method: &str,
    base: JsonObject,
    opts: &RequestOptions,
) -> Result<T> {
    let limit = inner.config.limits.max_mrtr_rounds;
    let mut params = base.clone();
    let mut backoff = STATE_BACKOFF_START;
    for _ in 0..limit {
        let raw = inner.request_cached(method, &params, opts).await?;
        let ir = match classify::<T>(method, &raw)? {
            MaybeInputRequired::Complete(v) => return Ok(v),
            MaybeInputRequired::InputRequired(ir) => ir,
        };
        // MRTR-06/07: the original params, plus this round's answers only.
        params = base.clone();
        match &ir.input_requests {
            Some(reqs) if !reqs.is_empty() => {
                let answers = fulfil(&inner.config.handlers, reqs).await?;
                let v = serde_json::to_value(&answers).map_err(|e| {
                    Error::invalid("cannot serialize inputResponses").with_source(e)
                })?;
                params.insert("inputResponses".into(), v);
            }
            _ => {
                tokio::time::sleep(backoff).await; // MRTR-05 POLICY
                backoff = (backoff * 2).min(STATE_BACKOFF_MAX);
            }
        }
        if let Some(state) = ir.request_state {
            params.insert("requestState".into(), Value::String(state));
        }
    }
    Err(Error::new(
        ErrorKind::TooManyRounds { limit },
        format!("{method} still needed input after {limit} rounds"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferromcp_protocol::types::CallToolResult;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap_or_else(|_| Box::<RawValue>::default())
    }

    #[test]
    fn missing_result_type_is_complete() {
        // RESULT-02
        let r = classify::<CallToolResult>("tools/call", &raw(r#"{"content":[]}"#));
        assert!(matches!(r, Ok(MaybeInputRequired::Complete(_))));
    }

    #[test]
    fn unknown_result_type_is_invalid() {
        // RESULT-03
        let r = classify::<CallToolResult>(
            "tools/call",
            &raw(r#"{"resultType":"later","content":[]}"#),
        );
        assert!(r.is_err_and(|e| e.is_invalid_response()));
    }

    #[test]
    fn input_required_only_for_mrtr_methods() {
        // MRTR-01
        let ir = r#"{"resultType":"input_required","requestState":"s"}"#;
        assert!(matches!(
            classify::<CallToolResult>("tools/call", &raw(ir)),
            Ok(MaybeInputRequired::InputRequired(_))
        ));
        assert!(classify::<Value>("tools/list", &raw(ir)).is_err());
        let empty = r#"{"resultType":"input_required"}"#;
        assert!(classify::<CallToolResult>("tools/call", &raw(empty)).is_err());
    }
}
