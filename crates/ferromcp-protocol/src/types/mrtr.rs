//! Multi round-trip requests: `InputRequiredResult`, the input
//! requests a server may embed in it, the `inputResponses` a client sends
//! back, and [`MaybeInputRequired`], the result of `tools/call`,
//! `prompts/get` and `resources/read` as a client reads it.
// MRTR-*
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

use super::tagged::{Tagged, const_str, deserialize_tagged};
use super::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationCapability, IncludeContext, JsonObject, ListChangedCapability,
    ListRootsRequestParams, ListRootsResult, Meta, ResultType, SamplingCapability,
};
use crate::error::ErrorObject;
use serde::de::{self, DeserializeOwned};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::method::{
    ELICITATION_CREATE as ELICIT, ROOTS_LIST as ROOTS, SAMPLING_CREATE_MESSAGE as SAMPLING,
};

// MRTR-03
/// A request a server embeds in an `InputRequiredResult`: `{method, params}`
/// without `jsonrpc`/`id`. Only three methods are allowed; any
/// other `method` fails to decode.
#[derive(Debug, Clone, PartialEq)]
pub enum InputRequest {
    /// `elicitation/create`
    Elicitation(ElicitRequestParams),
    /// `sampling/createMessage`
    Sampling(CreateMessageRequestParams),
    /// `roots/list`; `params` is optional.
    ListRoots(Option<ListRootsRequestParams>),
}

impl InputRequest {
    /// The method name.
    pub fn method(&self) -> &'static str {
        match self {
            Self::Elicitation(_) => ELICIT,
            Self::Sampling(_) => SAMPLING,
            Self::ListRoots(_) => ROOTS,
        }
    }

    /// A `roots/list` input request without params.
    pub fn list_roots() -> Self {
        Self::ListRoots(None)
    }

    // MRTR-04
    /// The client capabilities this request needs: `elicitation`
    /// with the mode used, `sampling` (plus `tools` for tool-enabled
    /// sampling and `context` for the deprecated `includeContext` values),
    /// or `roots`. Usable as `data.requiredCapabilities` of a -32021 error.
    pub fn required_capabilities(&self) -> ClientCapabilities {
        let mut caps = ClientCapabilities::default();
        match self {
            Self::Elicitation(p) => {
                let mut e = ElicitationCapability::default();
                match p {
                    ElicitRequestParams::Form(_) => e.form = Some(JsonObject::new()),
                    ElicitRequestParams::Url(_) => e.url = Some(JsonObject::new()),
                }
                caps.elicitation = Some(e);
            }
            Self::Sampling(p) => {
                let mut s = SamplingCapability::default();
                if p.tools.is_some() || p.tool_choice.is_some() {
                    s.tools = Some(JsonObject::new());
                }
                if matches!(
                    p.include_context,
                    Some(IncludeContext::ThisServer | IncludeContext::AllServers)
                ) {
                    s.context = Some(JsonObject::new());
                }
                caps.sampling = Some(s);
            }
            Self::ListRoots(_) => caps.roots = Some(ListChangedCapability::default()),
        }
        caps
    }

    // MRTR-04
    /// Whether `caps` (the request's own `clientCapabilities`) allows this
    /// input request.
    pub fn is_allowed_by(&self, caps: &ClientCapabilities) -> bool {
        match self {
            Self::Elicitation(p) => caps.elicitation.as_ref().is_some_and(|e| match p {
                ElicitRequestParams::Form(_) => e.supports_form(),
                ElicitRequestParams::Url(_) => e.supports_url(),
            }),
            Self::Sampling(p) => caps.sampling.as_ref().is_some_and(|s| {
                let tools_ok = (p.tools.is_none() && p.tool_choice.is_none()) || s.tools.is_some();
                let context_ok = !matches!(
                    p.include_context,
                    Some(IncludeContext::ThisServer | IncludeContext::AllServers)
                ) || s.context.is_some();
                tools_ok && context_ok
            }),
            Self::ListRoots(_) => caps.roots.is_some(),
        }
    }
}

impl Serialize for InputRequest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let has_params = !matches!(self, Self::ListRoots(None));
        let mut m = s.serialize_map(Some(1 + usize::from(has_params)))?;
        m.serialize_entry("method", self.method())?;
        match self {
            Self::Elicitation(p) => m.serialize_entry("params", p)?,
            Self::Sampling(p) => m.serialize_entry("params", p)?,
            Self::ListRoots(Some(p)) => m.serialize_entry("params", p)?,
            Self::ListRoots(None) => {}
        }
        m.end()
    }
}

#[derive(Deserialize)]
struct WithParams<T> {
    params: T,
}

#[derive(Deserialize)]
struct WithOptionalParams<T> {
    #[serde(default)]
    params: Option<T>,
}

impl Tagged for InputRequest {
    const TAG: &'static str = "method";
    const EXPECTING: &'static str = "an input request object";

    fn decode<'de, D: Deserializer<'de>>(tag: &str, rest: D) -> Result<Self, D::Error> {
        match tag {
            ELICIT => Ok(Self::Elicitation(WithParams::deserialize(rest)?.params)),
            SAMPLING => Ok(Self::Sampling(WithParams::deserialize(rest)?.params)),
            ROOTS => Ok(Self::ListRoots(
                WithOptionalParams::deserialize(rest)?.params,
            )),
            other => Err(de::Error::unknown_variant(
                other,
                &[ELICIT, SAMPLING, ROOTS],
            )),
        }
    }
}

impl<'de> Deserialize<'de> for InputRequest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_tagged(d)
    }
}

// MRTR-03
/// `inputRequests`: server-chosen keys → input requests.
pub type InputRequests = BTreeMap<String, InputRequest>;

// MRTR-06, MRTR-11
/// `inputResponses`: the keys of a previous round's `inputRequests` → the
/// client's answers.
///
/// Values are kept as raw JSON: what a value means depends on what the
/// server asked under that key, so the server decodes each one with the
/// typed accessors ([`InputResponses::elicit_result`] and friends). Unknown
/// extra keys are simply never asked for.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct InputResponses(pub JsonObject);

impl InputResponses {
    /// No responses.
    pub fn new() -> Self {
        Self::default()
    }

    /// The raw answer under `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// Whether `key` was answered.
    pub fn contains_key(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    /// Number of answers.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no answers.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The answered keys.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// Stores a raw answer.
    pub fn insert_raw(&mut self, key: impl Into<String>, value: Value) {
        self.0.insert(key.into(), value);
    }

    /// Stores a typed answer (an [`ElicitResult`], [`CreateMessageResult`] or
    /// [`ListRootsResult`]).
    pub fn insert<T: Serialize>(
        &mut self,
        key: impl Into<String>,
        value: &T,
    ) -> Result<(), serde_json::Error> {
        let v = serde_json::to_value(value)?;
        self.0.insert(key.into(), v);
        Ok(())
    }

    // MRTR-11
    /// Decodes the answer under `key` as `T`: `None` when absent, a -32602
    /// error naming the key when malformed.
    pub fn decode<T: DeserializeOwned>(&self, key: &str) -> Option<Result<T, ErrorObject>> {
        let v = self.0.get(key)?;
        Some(
            T::deserialize(v).map_err(|e| {
                ErrorObject::invalid_params(format_args!("inputResponses[{key:?}]: {e}"))
            }),
        )
    }

    /// The answer to an `elicitation/create` asked under `key`.
    pub fn elicit_result(&self, key: &str) -> Option<Result<ElicitResult, ErrorObject>> {
        self.decode(key)
    }

    /// The answer to a `sampling/createMessage` asked under `key`.
    pub fn create_message_result(
        &self,
        key: &str,
    ) -> Option<Result<CreateMessageResult, ErrorObject>> {
        self.decode(key)
    }

    /// The answer to a `roots/list` asked under `key`.
    pub fn list_roots_result(&self, key: &str) -> Option<Result<ListRootsResult, ErrorObject>> {
        self.decode(key)
    }
}

impl FromIterator<(String, Value)> for InputResponses {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

const_str!(
    /// The constant `"input_required"`.
    InputRequiredTag = "input_required"
);

// MRTR-02, MRTR-12
/// An interim MRTR result: `{"resultType":"input_required", inputRequests?,
/// requestState?, _meta?}`. `resultType` is implied by the type:
/// always written, and required on read. It never carries cache hints.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(from = "InputRequiredWire")]
pub struct InputRequiredResult {
    /// What the client must answer before retrying.
    pub input_requests: Option<InputRequests>,
    /// Opaque state the client echoes byte for byte on the retry.
    pub request_state: Option<String>,
    /// Open metadata.
    pub meta: Option<Meta>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InputRequiredWire {
    #[allow(dead_code)]
    result_type: InputRequiredTag,
    #[serde(default)]
    input_requests: Option<InputRequests>,
    #[serde(default)]
    request_state: Option<String>,
    #[serde(rename = "_meta", default)]
    meta: Option<Meta>,
}

impl From<InputRequiredWire> for InputRequiredResult {
    fn from(w: InputRequiredWire) -> Self {
        Self {
            input_requests: w.input_requests,
            request_state: w.request_state,
            meta: w.meta,
        }
    }
}

impl Serialize for InputRequiredResult {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let n = 1
            + usize::from(self.input_requests.is_some())
            + usize::from(self.request_state.is_some())
            + usize::from(self.meta.is_some());
        let mut m = s.serialize_map(Some(n))?;
        m.serialize_entry("resultType", InputRequiredTag::VALUE)?;
        if let Some(v) = &self.input_requests {
            m.serialize_entry("inputRequests", v)?;
        }
        if let Some(v) = &self.request_state {
            m.serialize_entry("requestState", v)?;
        }
        if let Some(v) = &self.meta {
            m.serialize_entry("_meta", v)?;
        }
        m.end()
    }
}

impl InputRequiredResult {
    /// An empty interim result; add requests or state before sending.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an input request under `key`.
    pub fn with_request(mut self, key: impl Into<String>, request: InputRequest) -> Self {
        self.input_requests
            .get_or_insert_with(InputRequests::new)
            .insert(key.into(), request);
        self
    }

    /// Sets `requestState`.
    pub fn with_state(mut self, state: impl Into<String>) -> Self {
        self.request_state = Some(state.into());
        self
    }

    // MRTR-02
    /// Whether it carries at least one of `inputRequests` / `requestState`,
    /// as the specification requires.
    pub fn is_well_formed(&self) -> bool {
        self.input_requests.is_some() || self.request_state.is_some()
    }
}

// RESULT-02, RESULT-03
/// A result that is either final (`T`) or an MRTR interim result, as a
/// client reads `tools/call`, `prompts/get` and `resources/read` results.
///
/// Decoding dispatches on `resultType`: absent or `"complete"` → `Complete`,
/// `"input_required"` → `InputRequired`, anything else → an
/// error (a client that negotiated an extension defining more
/// values checks [`probe_result_type`] first). Encoding writes the inner
/// value unchanged.
#[derive(Debug, Clone, PartialEq)]
pub enum MaybeInputRequired<T> {
    /// The final result.
    Complete(T),
    /// More input is needed.
    InputRequired(InputRequiredResult),
}

impl<T> MaybeInputRequired<T> {
    /// The final result, if this is one.
    pub fn into_complete(self) -> Option<T> {
        match self {
            Self::Complete(t) => Some(t),
            Self::InputRequired(_) => None,
        }
    }

    /// Whether more input is needed.
    pub fn is_input_required(&self) -> bool {
        matches!(self, Self::InputRequired(_))
    }
}

impl<T> From<InputRequiredResult> for MaybeInputRequired<T> {
    fn from(r: InputRequiredResult) -> Self {
        Self::InputRequired(r)
    }
}

impl<T: Serialize> Serialize for MaybeInputRequired<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Complete(t) => t.serialize(s),
            Self::InputRequired(r) => r.serialize(s),
        }
    }
}

/// Which way to decode a result.
enum Dispatch {
    Complete,
    InputRequired,
}

fn dispatch<E: de::Error>(result_type: Option<&str>) -> Result<Dispatch, E> {
    match result_type {
        None | Some("complete") => Ok(Dispatch::Complete),
        Some("input_required") => Ok(Dispatch::InputRequired),
        Some(other) => Err(E::custom(format_args!("unrecognised resultType {other:?}"))),
    }
}

/// Generic decoding buffers the object to find `resultType` wherever it is;
/// prefer [`MaybeInputRequired::from_json_str`] / [`MaybeInputRequired::from_raw`]
/// when the result is still text.
impl<'de, T: DeserializeOwned> Deserialize<'de> for MaybeInputRequired<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let rt = match v.get("resultType") {
            None => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(_) => return Err(de::Error::custom("resultType must be a string")),
        };
        match dispatch::<D::Error>(rt)? {
            Dispatch::Complete => T::deserialize(v)
                .map(Self::Complete)
                .map_err(de::Error::custom),
            Dispatch::InputRequired => InputRequiredResult::deserialize(v)
                .map(Self::InputRequired)
                .map_err(de::Error::custom),
        }
    }
}

#[derive(Deserialize)]
struct Probe<'a> {
    #[serde(rename = "resultType", borrow, default)]
    result_type: Option<Cow<'a, str>>,
}

/// Reads only `resultType` from a result object (a fast scan that skips
/// everything else). `Ok(None)` when absent.
pub fn probe_result_type(json: &str) -> Result<Option<ResultType>, serde_json::Error> {
    let p: Probe<'_> = serde_json::from_str(json)?;
    Ok(p.result_type.map(|s| match &*s {
        "complete" => ResultType::Complete,
        "input_required" => ResultType::InputRequired,
        _ => ResultType::Other(s.into_owned()),
    }))
}

impl<'a, T: Deserialize<'a>> MaybeInputRequired<T> {
    /// Decodes a result from JSON text in two passes over the text (a
    /// `resultType` probe, then the chosen type) without buffering values.
    pub fn from_json_str(json: &'a str) -> Result<Self, serde_json::Error> {
        let p: Probe<'_> = serde_json::from_str(json)?;
        match dispatch::<serde_json::Error>(p.result_type.as_deref())? {
            Dispatch::Complete => serde_json::from_str(json).map(Self::Complete),
            Dispatch::InputRequired => serde_json::from_str(json).map(Self::InputRequired),
        }
    }

    /// Decodes a result from a raw JSON-RPC `result` member.
    pub fn from_raw(raw: &'a RawValue) -> Result<Self, serde_json::Error> {
        Self::from_json_str(raw.get())
    }
}
