//! The relay loop: host lines in, remote messages out, and back.
//!
//! One task owns all state (the two id maps, the learned `x-mcp-header`
//! maps, the era); each message to the remote is its own spawned exchange
//! whose messages and end come back over one channel, in order, so an
//! answer is always seen before the end of its exchange. An exchange that
//! ends without the answer (the remote died, timed out, refused) answers
//! the host with an error for that id: never a hang.
// CANCEL-01, CANCEL-02, HTTP-15

use crate::filter::ToolFilter;
use crate::ids::IdMap;
use crate::message::{Classified, Invalid, Kind, RawObject, classify, raw_array, raw_str};
use crate::session_setup::SessionSetup;
use crate::upstream::{Failure, Inbound, Retries, Upstream};
use crate::{Error, Limits};
use ferromcp_protocol::framing::{Frame, LineFramer};
use ferromcp_protocol::header::codec::encode_header_value;
use ferromcp_protocol::header::x_mcp_header::{ParamHeaderMap, x_mcp_header_map};
use ferromcp_protocol::header::{MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, name_bearing_param};
use ferromcp_protocol::{ProtocolVersion, RequestId, meta, method};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

/// The id of the bridge's own `tools/list`.
// HDR-21: sent to refresh the tools' header annotations.
const TOOLS_LIST_ID: &str = "ferromcp-bridge/tools-list";

/// Whether a raw JSON-RPC error object is -32020 (header mismatch).
fn is_header_mismatch(error: &str) -> bool {
    serde_json::from_str::<Value>(error)
        .ok()
        .and_then(|e| e.get("code")?.as_i64())
        == Some(ferromcp_protocol::ErrorCode::HEADER_MISMATCH.0)
}

/// The id of the bridge's own `server/discover` probe.
const DISCOVER_ID: &str = "ferromcp-bridge/discover";

/// The id of the bridge's own `initialize` (a 2026-07-28 host in front of
/// a handshake-only remote).
const INITIALIZE_ID: &str = "ferromcp-bridge/initialize";

/// A 2026-07-28 host in front of a handshake-only remote: the bridge holds
/// one `initialize`d session towards the remote for all of the host's
/// requests.
struct Session {
    /// The remote's `initialize` result (it answers `server/discover`).
    init: Map<String, Value>,
    /// The level last set on the remote with `logging/setLevel`.
    log_level: Option<Value>,
    /// The host's `subscriptions/listen` requests: (their id, the
    /// notifications acknowledged).
    listens: Vec<(RequestId, Map<String, Value>)>,
}

/// The envelope members a handshake-era remote does not know: the
/// bridge's session carries them (`initialize`, `logging/setLevel`).
const ENVELOPE_KEYS: [&str; 4] = [
    meta::PROTOCOL_VERSION,
    meta::CLIENT_INFO,
    meta::CLIENT_CAPABILITIES,
    meta::LOG_LEVEL,
];

// META-03, BASE-12
/// The host's request without the 2026-07-28 envelope members (other
/// `_meta` keys, like `progressToken`, stay); `None` when params is not
/// an object or appears twice.
pub(crate) fn strip_envelope(c: &Classified<'_>) -> Option<Vec<u8>> {
    let Some(raw) = c.member_once("params").ok()? else {
        return Some(c.bytes().to_vec());
    };
    let mut params: Map<String, Value> = serde_json::from_str(raw.get()).ok()?;
    if let Some(Value::Object(m)) = params.get_mut("_meta") {
        for k in ENVELOPE_KEYS {
            m.remove(k);
        }
        if m.is_empty() {
            params.remove("_meta");
        }
    }
    Some(c.replace(raw, &serde_json::to_string(&params).ok()?))
}

/// The methods whose complete results carry cache hints.
// CACHE-01.
const CACHED: [&str; 5] = [
    method::TOOLS_LIST,
    method::PROMPTS_LIST,
    method::RESOURCES_LIST,
    method::RESOURCES_TEMPLATES_LIST,
    method::RESOURCES_READ,
];

// RESULT-01, CACHE-01
/// A handshake remote's answer as a 2026-07-28 result: `resultType`
/// `complete` when missing and, for the cacheable methods, `ttlMs: 0` and
/// `cacheScope: "private"` when missing (the remote gave no hint, so the
/// bridge claims none). Error answers are unchanged.
pub(crate) fn modern_result(body: Vec<u8>, method: &str) -> Vec<u8> {
    let Ok(c) = classify(&body) else { return body };
    let Some(raw) = c.member("result") else {
        return body;
    };
    let Ok(mut result) = serde_json::from_str::<Map<String, Value>>(raw.get()) else {
        return body;
    };
    result
        .entry("resultType")
        .or_insert_with(|| Value::from("complete"));
    if CACHED.contains(&method) {
        result.entry("ttlMs").or_insert_with(|| Value::from(0));
        result
            .entry("cacheScope")
            .or_insert_with(|| Value::from("private"));
    }
    match serde_json::to_string(&result) {
        Ok(text) => c.replace(raw, &text),
        Err(_) => body,
    }
}

/// The `subscriptions/listen` notification kinds and the capability that
/// must be declared for each.
// SUB-03, SUB-12.
const LIST_CHANGES: [(&str, &str, &str); 3] = [
    (
        "toolsListChanged",
        "tools",
        method::NOTIFICATIONS_TOOLS_LIST_CHANGED,
    ),
    (
        "promptsListChanged",
        "prompts",
        method::NOTIFICATIONS_PROMPTS_LIST_CHANGED,
    ),
    (
        "resourcesListChanged",
        "resources",
        method::NOTIFICATIONS_RESOURCES_LIST_CHANGED,
    ),
];

/// Whether the remote declared `capabilities.<area>.<flag>: true`.
fn declares(init: &Map<String, Value>, area: &str, flag: &str) -> bool {
    init.get("capabilities")
        .and_then(|c| c.get(area)?.get(flag)?.as_bool())
        == Some(true)
}

/// Whether a capabilities object has `<area>.<flag>: true`.
fn declares_value(caps: &Value, area: &str, flag: &str) -> bool {
    caps.get(area).and_then(|a| a.get(flag)?.as_bool()) == Some(true)
}

/// What the bridge adds to a handshake host's requests for a
/// 2026-07-28-only remote.
struct Translate {
    client_info: Value,
    capabilities: Value,
    log_level: Option<Value>,
    /// The `subscriptions/listen` notifications the bridge asks for on
    /// the host's behalf (the list changes the remote declared).
    listen: Map<String, Value>,
    /// The remote declared `resources.subscribe`: the host's
    /// `resources/subscribe` are answered by the bridge and become the
    /// listen's `resourceSubscriptions`.
    subscribe: bool,
    /// The URIs the host subscribed to, in order.
    resources: Vec<String>,
    /// Bumped each time the listen is opened again with another set: its
    /// request id, so an old stream's acknowledgement is never taken for
    /// the new one's.
    listen_gen: u64,
    /// The host's `resources/subscribe` and `resources/unsubscribe`
    /// (the bridge's ids) waiting for the remote to acknowledge the
    /// listen with the new set.
    waiters: Vec<RequestId>,
}

/// The id prefix of the bridge's own `subscriptions/listen` (a handshake
/// host in front of a 2026-07-28-only remote); the generation follows.
const LISTEN_ID: &str = "ferromcp-bridge/listen";

impl Translate {
    /// The id of the current listen.
    fn listen_id(&self) -> String {
        format!("{LISTEN_ID}/{}", self.listen_gen)
    }

    /// What the listen asks for: the list changes and the subscribed
    /// resources.
    // SUB-01
    fn notifications(&self) -> Map<String, Value> {
        let mut n = self.listen.clone();
        if !self.resources.is_empty() {
            n.insert(
                "resourceSubscriptions".into(),
                Value::from(self.resources.clone()),
            );
        }
        n
    }
}

/// The client capabilities declared to a 2026-07-28 remote for a
/// handshake host: the host's own (elicitation, sampling and roots are
/// answered through MRTR rounds the bridge maps onto pushed requests),
/// without `tasks`, which is not translated.
fn translated_capabilities(host: Option<&Value>) -> Value {
    let mut caps = host.cloned().unwrap_or_else(|| serde_json::json!({}));
    if let Some(o) = caps.as_object_mut() {
        o.remove("tasks");
    }
    caps
}

impl Translate {
    // META-03
    /// The host's request with the 2026-07-28 `_meta` envelope added to its
    /// params (keys the host set itself are kept); `None` when params is
    /// not an object or appears twice (a second copy would be left
    /// without the envelope).
    fn envelope(&self, c: &Classified<'_>) -> Option<Vec<u8>> {
        let raw = c.member_once("params").ok()?;
        let mut params: Map<String, Value> = match raw {
            Some(p) => serde_json::from_str(p.get()).ok()?,
            None => Map::new(),
        };
        let m = params
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()?;
        m.insert(
            meta::PROTOCOL_VERSION.to_owned(),
            Value::from(ProtocolVersion::LATEST.as_str()),
        );
        m.entry(meta::CLIENT_INFO)
            .or_insert_with(|| self.client_info.clone());
        m.entry(meta::CLIENT_CAPABILITIES)
            .or_insert_with(|| self.capabilities.clone());
        if let Some(level) = &self.log_level {
            m.entry(meta::LOG_LEVEL).or_insert_with(|| level.clone());
        }
        let text = serde_json::to_string(&params).ok()?;
        Some(match raw {
            Some(p) => c.replace(p, &text),
            None => c.insert_member("params", &text),
        })
    }
}

/// The host's request as a 2026-07-28 remote gets it from the bridge
/// (the `fuzzing` feature): the envelope of a handshake host that
/// declared `client_info` and `capabilities`, with `log_level` set.
#[cfg(feature = "fuzzing")]
pub(crate) fn with_envelope(
    c: &Classified<'_>,
    client_info: Value,
    capabilities: Option<&Value>,
    log_level: Option<Value>,
) -> Option<Vec<u8>> {
    Translate {
        client_info,
        capabilities: translated_capabilities(capabilities),
        log_level,
        listen: Map::new(),
        subscribe: false,
        resources: Vec::new(),
        listen_gen: 0,
        waiters: Vec::new(),
    }
    .envelope(c)
}

/// The result of an `input_required` answer, if this is one.
pub(crate) fn input_required(c: &Classified<'_>) -> Option<Map<String, Value>> {
    let raw = c.member("result")?;
    if !raw.get().contains("input_required") {
        return None;
    }
    let result: Map<String, Value> = serde_json::from_str(raw.get()).ok()?;
    (result.get("resultType").and_then(Value::as_str) == Some("input_required")).then_some(result)
}

// MRTR-03
/// `sent` (a request) with `params.inputResponses` and
/// `params.requestState` set for the next round.
pub(crate) fn with_input_responses(
    sent: &[u8],
    responses: Map<String, Value>,
    state: Option<Value>,
) -> Option<Vec<u8>> {
    let c = classify(sent).ok()?;
    let raw = c.member("params")?;
    let mut params: Map<String, Value> = serde_json::from_str(raw.get()).ok()?;
    params.insert("inputResponses".into(), Value::Object(responses));
    match state {
        Some(s) => params.insert("requestState".into(), s),
        None => params.remove("requestState"),
    };
    Some(c.replace(raw, &serde_json::to_string(&params).ok()?))
}

/// MCP request headers as (name, value) pairs.
type Headers = Vec<(String, String)>;

/// A host request waiting for the remote's answer.
struct Pending {
    method: String,
    task: Option<AbortHandle>,
    /// Translation only: what was sent, to send again with the input
    /// responses of an MRTR round.
    sent: Option<(Vec<u8>, Headers)>,
    /// Translation only: an MRTR round waiting for the host's answers.
    round: Option<Round>,
    /// MRTR rounds taken so far.
    rounds: u32,
    /// A `tools/call` already sent again after refreshing the tools'
    /// header annotations (at most once).
    // HDR-21.
    retried: bool,
    /// A 2026-07-28 host's call to a handshake-era remote: pushed requests
    /// become input rounds.
    ask: Option<Ask>,
    /// Input requests asked so far (for unique keys).
    inputs: u32,
    /// Waiting for the host's retry of an input round.
    parked: Option<Parked>,
}

/// One MRTR `input_required` round a handshake host answers through
/// pushed requests (elicitation/create, sampling/createMessage,
/// roots/list).
struct Round {
    /// Input requests not answered yet.
    waiting: usize,
    /// The answers so far, by input key.
    responses: Map<String, Value>,
    /// The round's requestState, echoed back.
    state: Option<Value>,
}

// MRTR-01
/// The methods that may answer `input_required`.
const MRTR_METHODS: [&str; 3] = [
    method::TOOLS_CALL,
    method::PROMPTS_GET,
    method::RESOURCES_READ,
];

// MRTR-03, MRTR-04
/// The requests a handshake-era remote pushes that become input requests
/// of a 2026-07-28 host's round, with the client capability each needs.
const INPUT_METHODS: [(&str, &str); 3] = [
    ("elicitation/create", "elicitation"),
    ("sampling/createMessage", "sampling"),
    ("roots/list", "roots"),
];

/// A 2026-07-28 host's call to a handshake-era remote: what an input round
/// is bound to and what the host may be asked.
struct Ask {
    /// The tool or prompt name, or the resource URI.
    name: Option<String>,
    /// The host's client capabilities for this request.
    caps: Map<String, Value>,
}

/// A call whose host request was answered with an `input_required` round:
/// the remote's pushed requests wait here for the host's retry.
struct Parked {
    /// The round's `requestState`.
    token: String,
    /// The round's input keys, the remote's request ids and the input
    /// requests.
    asks: Vec<(String, RequestId, Value)>,
    /// Requests the remote pushed after the round went out: the next round.
    queued: Vec<(String, RequestId, Value)>,
    since: std::time::Instant,
    /// The remote's answer (or an error for the call), when it came before
    /// the retry: given to the retry.
    done: Option<Vec<u8>>,
}

/// A notification without the `subscriptionId` of its listen stream in
/// `_meta` (dropped with `_meta` when it was the only key); `None` when
/// it has none.
pub(crate) fn without_subscription_id(c: &Classified<'_>) -> Option<Vec<u8>> {
    let raw = c.member("params")?;
    let mut params: Map<String, Value> = serde_json::from_str(raw.get()).ok()?;
    let Some(Value::Object(m)) = params.get_mut("_meta") else {
        return None;
    };
    m.remove(meta::SUBSCRIPTION_ID)?;
    if m.is_empty() {
        params.remove("_meta");
    }
    Some(c.replace(raw, &serde_json::to_string(&params).ok()?))
}

/// A fresh, unguessable `requestState`.
fn new_token() -> Option<String> {
    let mut b = [0u8; 18];
    getrandom::fill(&mut b).ok()?;
    Some(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// The name an input round is bound to: `name` or `uri`.
fn bound_name(c: &Classified<'_>) -> Option<String> {
    c.param("name")
        .or_else(|| c.param("uri"))
        .and_then(|r| serde_json::from_str::<String>(r.get()).ok())
}

/// The host's `clientCapabilities` from the request's envelope.
fn envelope_capabilities(c: &Classified<'_>) -> Map<String, Value> {
    c.param("_meta")
        .and_then(|m| serde_json::from_str::<Map<String, Value>>(m.get()).ok())
        .and_then(|mut m| match m.remove(meta::CLIENT_CAPABILITIES) {
            Some(Value::Object(caps)) => Some(caps),
            _ => None,
        })
        .unwrap_or_default()
}

/// An `input_required` answer for the host's request `id`.
fn input_round_answer(id: &RequestId, asks: &[(String, RequestId, Value)], token: &str) -> Vec<u8> {
    let requests: Map<String, Value> = asks
        .iter()
        .map(|(k, _, v)| (k.clone(), v.clone()))
        .collect();
    serde_json::json!({
        "jsonrpc": "2.0", "id": id.to_value(),
        "result": {"resultType": "input_required", "inputRequests": requests, "requestState": token}
    })
    .to_string()
    .into_bytes()
}

/// Who is waiting for the host's answer to a request the bridge sent it.
#[derive(Debug, Clone)]
enum ToHost {
    /// The remote's own request: the answer is relayed.
    Remote,
    /// An input request of an MRTR round of the host request the bridge
    /// knows as `local`.
    Input { local: RequestId, key: String },
}

/// The most MRTR rounds one translated request may take.
const MAX_INPUT_ROUNDS: u32 = 16;

struct Relay {
    up: Arc<Upstream>,
    filter: ToolFilter,
    limits: Limits,
    /// Host request ids ↔ the ids sent to the remote.
    host_ids: IdMap<Pending>,
    /// Remote request ids ↔ the ids sent to the host.
    server_ids: IdMap<ToHost>,
    /// `x-mcp-header` maps from `tools/list` answers, by tool name.
    tool_headers: HashMap<String, ParamHeaderMap>,
    /// The host opened a handshake-era session (`initialize`) that the
    /// remote serves itself.
    handshake: bool,
    /// The host speaks the handshake era, the remote only 2026-07-28: the
    /// bridge answered `initialize` from `server/discover` and adds the
    /// `_meta` envelope to each request.
    translate: Option<Translate>,
    /// The host speaks 2026-07-28, the remote only the handshake era.
    session: Option<Session>,
    /// The remote's era was probed (or the host sent `initialize`).
    probed: bool,
    listen: Option<AbortHandle>,
    /// The bridge's id of a forwarded `initialize` (handshake era).
    init_local: Option<RequestId>,
    /// Host lines that arrived while that `initialize` was unanswered: they
    /// need the session id its answer brings (bounded by max_in_flight).
    held: std::collections::VecDeque<Vec<u8>>,
    /// The GET stream opened after `notifications/initialized` has not
    /// been answered yet: host lines are held meanwhile (at most
    /// `stream_open_wait`).
    opening_stream: bool,
    to_host: mpsc::Sender<Vec<u8>>,
    events: mpsc::Sender<Inbound>,
    /// Input rounds waiting for the host's retry: requestState → the
    /// bridge's id of the call.
    tokens: HashMap<String, RequestId>,
    /// Methods of unroutable remote requests already warned about.
    warned: std::collections::HashSet<String>,
    /// Tools whose `tools/list` annotations say `readOnlyHint` or
    /// `idempotentHint`: their calls may be sent again.
    repeatable_tools: std::collections::HashSet<String>,
}

/// The methods that only read, sent again when the remote could not be
/// reached or was unavailable (`Limits::retries`).
const REPEATABLE: [&str; 8] = [
    method::SERVER_DISCOVER,
    method::TOOLS_LIST,
    method::PROMPTS_LIST,
    method::RESOURCES_LIST,
    method::RESOURCES_TEMPLATES_LIST,
    method::RESOURCES_READ,
    method::PROMPTS_GET,
    method::COMPLETION_COMPLETE,
];

/// How many distinct methods of unroutable remote requests get their own
/// warning.
const MAX_WARNED_METHODS: usize = 64;

/// A JSON-RPC error answer.
fn error_answer(id: Option<&RequestId>, code: i64, message: &str) -> Vec<u8> {
    let id = id.map_or(Value::Null, RequestId::to_value);
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{code},"message":{}}}}}"#,
        Value::from(message)
    )
    .into_bytes()
}

/// One line for the host: raw newlines (only ever whitespace between JSON
/// tokens, since strings escape them) become spaces.
fn one_line(mut bytes: Vec<u8>) -> Vec<u8> {
    for b in &mut bytes {
        if *b == b'\n' || *b == b'\r' {
            *b = b' ';
        }
    }
    bytes.push(b'\n');
    bytes
}

pub(crate) async fn run<R, W>(
    up: Upstream,
    filter: ToolFilter,
    limits: Limits,
    mut reader: R,
    mut writer: W,
) -> Result<(), Error>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_host, mut host_out) = mpsc::channel::<Vec<u8>>(256);
    let writer_task = tokio::spawn(async move {
        while let Some(line) = host_out.recv().await {
            if writer.write_all(&one_line(line)).await.is_err() || writer.flush().await.is_err() {
                return Err(Error::config("the host closed its input"));
            }
        }
        Ok(())
    });
    let (lines_tx, mut lines) = mpsc::channel::<Frame>(64);
    let max = limits.max_message;
    let reader_task = tokio::spawn(async move {
        let mut framer = LineFramer::new(max);
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match reader.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            framer.push(&buf[..n]);
            while let Some(f) = framer.next_frame() {
                if lines_tx.send(f).await.is_err() {
                    return;
                }
            }
        }
        if let Some(f) = framer.finish() {
            let _ = lines_tx.send(f).await;
        }
    });
    let (events, mut inbound) = mpsc::channel::<Inbound>(256);
    let mut relay = Relay {
        up: Arc::new(up),
        filter,
        host_ids: IdMap::new(limits.max_in_flight),
        server_ids: IdMap::new(limits.max_server_requests),
        limits,
        tool_headers: HashMap::new(),
        handshake: false,
        translate: None,
        session: None,
        probed: false,
        listen: None,
        init_local: None,
        held: std::collections::VecDeque::new(),
        opening_stream: false,
        to_host,
        events,
        tokens: HashMap::new(),
        warned: std::collections::HashSet::new(),
        repeatable_tools: std::collections::HashSet::new(),
    };
    let mut host_open = true;
    loop {
        tokio::select! {
            line = lines.recv(), if host_open => match line {
                Some(Frame::Line(l)) if relay.initializing() => {
                    if relay.held.len() >= relay.limits.max_in_flight {
                        relay.answer(error_answer(None, -32600, "too many messages before the remote's session is ready")).await;
                    } else {
                        relay.held.push_back(l);
                    }
                }
                Some(Frame::Line(l)) => relay.on_host_line(&l).await,
                Some(Frame::TooLong) => {
                    relay.answer(error_answer(None, -32600, "message too large")).await;
                }
                None => {
                    host_open = false;
                    relay.host_closed().await;
                }
            },
            Some(ev) = inbound.recv() => relay.on_remote(ev).await,
        }
        while !relay.initializing() {
            let Some(l) = relay.held.pop_front() else {
                break;
            };
            relay.on_host_line(&l).await;
        }
        if !host_open && relay.host_ids.is_empty() && relay.held.is_empty() {
            break;
        }
        if relay.to_host.is_closed() {
            break;
        }
    }
    reader_task.abort();
    for (_, p) in relay.host_ids.drain() {
        if let Some(t) = p.task {
            t.abort();
        }
    }
    if let Some(l) = relay.listen.take() {
        l.abort();
    }
    relay.up.close().await;
    let Relay { to_host, .. } = relay;
    drop(to_host);
    writer_task
        .await
        .map_err(|e| Error::config(format!("the writer failed: {e}")))?
}

impl Relay {
    /// The host closed its side: nothing it was asked can be answered any
    /// more. The remote's requests get an error answer (so its exchanges
    /// can end), and host requests waiting on an input round fail; the
    /// bridge then waits only for answers already on their way.
    async fn host_closed(&mut self) {
        let unanswerable = self.server_ids.drain();
        for (_, local) in std::mem::take(&mut self.tokens) {
            if let Some((_, p)) = self.host_ids.take(&local) {
                if let Some(t) = p.task {
                    t.abort();
                }
            }
        }
        self.up.set_waiting_on_host(0);
        for (original, to) in unanswerable {
            match to {
                ToHost::Remote => {
                    let body = error_answer(Some(&original), -32603, "bridge: the host went away");
                    self.spawn_send(body, Vec::new(), None);
                }
                ToHost::Input { local, .. } => {
                    if let Some((_, p)) = self.host_ids.take(&local) {
                        if let Some(t) = p.task {
                            t.abort();
                        }
                    }
                }
            }
        }
    }

    /// Whether a forwarded `initialize` is still unanswered.
    /// Host lines wait: the `initialize` is unanswered, or the GET stream
    /// opened after `notifications/initialized` is.
    fn initializing(&self) -> bool {
        self.opening_stream
            || self
                .init_local
                .as_ref()
                .is_some_and(|l| self.host_ids.get(l).is_some())
    }

    async fn answer(&self, bytes: Vec<u8>) {
        let _ = self.to_host.send(bytes).await;
    }

    async fn on_host_line(&mut self, line: &[u8]) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let c = match classify(line) {
            Ok(c) => c,
            Err(Invalid::Parse) => {
                return self.answer(error_answer(None, -32700, "parse error")).await;
            }
            Err(Invalid::Request(id, why)) => {
                return self.answer(error_answer(id.as_ref(), -32600, &why)).await;
            }
        };
        match c.kind().clone() {
            Kind::Request { id, method } => self.host_request(&c, id, method).await,
            Kind::Response { id: Some(id) } => match self.server_ids.take(&id) {
                Some((original, ToHost::Remote)) => {
                    self.sync_waiting();
                    let body = c.with_id(&original);
                    self.spawn_send(body, Vec::new(), None);
                }
                Some((_, ToHost::Input { local, key })) => {
                    self.sync_waiting();
                    self.input_answered(&c, local, key).await;
                }
                None => tracing::warn!("the host answered a request the bridge did not send"),
            },
            Kind::Response { id: None } => {
                tracing::warn!("the host sent an error answer with a null id; dropped")
            }
            Kind::Notification { method } => self.host_notification(&c, &method).await,
        }
    }

    async fn host_request(&mut self, c: &Classified<'_>, id: RequestId, method: String) {
        if method == method::TOOLS_CALL && !self.filter.is_open() {
            // The filter is enforced here, before anything reaches the
            // remote: a filtered tool cannot be called by name, and a call
            // whose name cannot be read unambiguously is refused.
            let refusal = match c.param_str_strict("name") {
                Ok(name) if self.filter.permits(&name) => None,
                Ok(name) => Some(format!("Unknown tool: {name}")),
                Err(why) => Some(format!("Invalid tools/call: {why}")),
            };
            if let Some(msg) = refusal {
                return self.answer(error_answer(Some(&id), -32602, &msg)).await;
            }
        }
        let initialize = method == method::INITIALIZE;
        if !self.probed && !initialize && !self.handshake && self.translate.is_none() {
            // ERA-06: a 2026-07-28 host's first request decides the
            // remote's era.
            self.probed = true;
            if let Some(session) = self.open_session(c).await {
                self.session = Some(session);
                self.handshake = true;
            }
        }
        self.probed = true;
        if self.session.is_some() {
            if let Some(done) = self.session_local(c, &id, &method).await {
                return self.answer(done).await;
            }
        }
        let mrtr = self.session.is_some() && MRTR_METHODS.contains(&method.as_str());
        if mrtr {
            if let Some(state) = c.param("requestState") {
                return self.resume(c, id, &method, state.get()).await;
            }
        }
        let ask = mrtr.then(|| Ask {
            name: bound_name(c),
            caps: envelope_capabilities(c),
        });
        if initialize && !self.handshake && self.translate.is_none() {
            if let Some(answer) = self.initialize_from_discover(c, &id).await {
                return self.answer(answer).await;
            }
        }
        if initialize && self.translate.is_none() {
            self.handshake = true;
        }
        let enveloped;
        let reclassified;
        if method == "logging/setLevel" {
            if let Some(t) = self.translate.as_mut() {
                // 2026-07-28 has no session to set a level on: the level
                // travels in each request's _meta from now on.
                t.log_level = c
                    .param("level")
                    .and_then(|l| serde_json::from_str(l.get()).ok());
                let ok = serde_json::json!({"jsonrpc": "2.0", "id": id.to_value(), "result": {}});
                return self.answer(ok.to_string().into_bytes()).await;
            }
        }
        if (method == method::RESOURCES_SUBSCRIBE || method == method::RESOURCES_UNSUBSCRIBE)
            && self.translate.as_ref().is_some_and(|t| t.subscribe)
        {
            return self.subscribe_for_host(c, id, &method).await;
        }
        let translated = match (&self.translate, &self.session) {
            (Some(t), _) => Some(t.envelope(c)),
            (None, Some(_)) => Some(strip_envelope(c)),
            (None, None) => None,
        };
        let c = match translated {
            Some(t) => match t {
                Some(bytes) => {
                    enveloped = bytes;
                    match classify(&enveloped) {
                        Ok(r) => {
                            reclassified = r;
                            &reclassified
                        }
                        Err(_) => c,
                    }
                }
                None => {
                    let msg = "params must be one object";
                    return self.answer(error_answer(Some(&id), -32602, msg)).await;
                }
            },
            None => c,
        };
        // LEGACY-12: what sets the host's session up is sent again in a
        // session the bridge renews.
        if self.handshake && self.translate.is_none() {
            if let Some(member) = SessionSetup::member(&method) {
                self.up.note_setup(&method, c.param_str(member).as_deref());
            }
        }
        let headers = if self.handshake {
            Vec::new()
        } else {
            self.modern_headers(c, &method)
        };
        let retries = if self.safe_to_repeat(c, &method) {
            Retries {
                max: self.limits.retries,
                // A timeout is retried for the read-only methods only,
                // never for a tools/call (annotations or not): the remote
                // may still be running the first one.
                on_timeout: REPEATABLE.contains(&method.as_str()),
            }
        } else {
            Retries::NONE
        };
        let pending = Pending {
            method,
            task: None,
            sent: None,
            round: None,
            rounds: 0,
            retried: false,
            ask,
            inputs: 0,
            parked: None,
        };
        let local = match self.host_ids.insert(id.clone(), pending) {
            Ok(l) => l,
            Err(e) => {
                return self
                    .answer(error_answer(Some(&id), -32600, &e.to_string()))
                    .await;
            }
        };
        let body = c.with_id(&local);
        let keep = self.translate.is_some()
            || (!self.handshake
                && self
                    .host_ids
                    .get(&local)
                    .is_some_and(|(_, p)| p.method == method::TOOLS_CALL));
        if keep {
            if let Some(p) = self.host_ids.get_mut(&local) {
                p.sent = Some((body.clone(), headers.clone()));
            }
        }
        if initialize && self.handshake {
            self.init_local = Some(local.clone());
        }
        let task = self.spawn_exchange(body, headers, Some(local.clone()), initialize, retries);
        if let Some(p) = self.host_ids.get_mut(&local) {
            p.task = Some(task);
        }
    }

    async fn host_notification(&mut self, c: &Classified<'_>, method: &str) {
        if method == "notifications/cancelled" {
            let Some(raw) = c.param("requestId") else {
                return;
            };
            let Some(original) = serde_json::from_str::<Value>(raw.get())
                .ok()
                .and_then(|v| RequestId::from_value(&v))
            else {
                return;
            };
            // SUB-09: the host ends a subscription the bridge serves.
            if let Some(s) = self.session.as_mut() {
                if let Some(i) = s.listens.iter().position(|(l, _)| *l == original) {
                    s.listens.remove(i);
                    return;
                }
            }
            // CANCEL-01: abort the exchange (the transport's way over
            // HTTP); the handshake era also tells the session.
            let Some((local, pending)) = self.host_ids.take_original(&original) else {
                return;
            };
            if let Some(t) = pending.task {
                t.abort();
            }
            if self.handshake {
                let body = c.replace(raw, &local.to_value().to_string());
                self.spawn_send(body, Vec::new(), None);
            }
            return;
        }
        if self.translate.is_some() {
            // A 2026-07-28 server takes no notifications from clients
            // (notifications/initialized has no session to complete);
            // cancellation was handled above. The host's session is open:
            // list changes start flowing.
            if method == "notifications/initialized" {
                self.listen_for_host(false);
            }
            tracing::debug!("{method} has no 2026-07-28 counterpart; not forwarded");
            return;
        }
        let headers = if self.handshake {
            Vec::new()
        } else {
            self.modern_headers(c, method)
        };
        let then_listen =
            self.handshake && method == "notifications/initialized" && self.listen.is_none();
        let task = self.spawn_send(
            c.bytes().to_vec(),
            headers,
            then_listen.then(|| self.events.clone()),
        );
        if then_listen {
            self.listen = Some(task);
            self.hold_until_stream_opens();
        }
    }

    // LEGACY-15, LEGACY-18
    /// A remote may push a request on its GET stream as soon as the session
    /// is ready and drop it when no stream is open yet (the TypeScript SDK
    /// does): the host's next messages, which may cause such a push, wait
    /// until the remote answered the GET (or `stream_open_wait` ran out).
    fn hold_until_stream_opens(&mut self) {
        let wait = self.limits.stream_open_wait;
        if wait.is_zero() {
            return;
        }
        self.opening_stream = true;
        let up = self.up.clone();
        let events = self.events.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(wait, up.wait_get_stream()).await;
            let _ = events.send(Inbound::StreamSettled).await;
        });
    }

    // DISC-01, LADDER-01
    /// Sends the bridge's own `server/discover` probe at `version` (with
    /// its `Mcp-Method` header) and returns the remote's answer to it, if
    /// one came.
    async fn discover(
        &self,
        version: &str,
        client_info: Value,
        capabilities: Value,
    ) -> Result<Option<Value>, crate::upstream::Failure> {
        let probe = serde_json::json!({
            "jsonrpc": "2.0",
            "id": DISCOVER_ID,
            "method": method::SERVER_DISCOVER,
            "params": {"_meta": {
                (meta::PROTOCOL_VERSION): version,
                (meta::CLIENT_INFO): client_info,
                (meta::CLIENT_CAPABILITIES): capabilities,
            }}
        });
        let headers = vec![
            (MCP_PROTOCOL_VERSION.to_owned(), version.to_owned()),
            (MCP_METHOD.to_owned(), method::SERVER_DISCOVER.to_owned()),
        ];
        let answers = self
            .up
            .collect(probe.to_string().into_bytes(), &headers, false)
            .await?;
        Ok(answers.iter().find_map(|a| {
            let v: Value = serde_json::from_slice(a).ok()?;
            (v.get("id")? == DISCOVER_ID).then_some(v)
        }))
    }

    // DISC-01, LADDER-01
    /// A handshake host's `initialize`: probes the remote with
    /// `server/discover` (with its `Mcp-Method` header). When the remote
    /// serves the host's revision the `initialize` is forwarded as is
    /// (`None`); when it serves only 2026-07-28 the bridge answers the
    /// `initialize` itself from the discover result and translates from
    /// then on.
    async fn initialize_from_discover(
        &mut self,
        c: &Classified<'_>,
        id: &RequestId,
    ) -> Option<Vec<u8>> {
        let params: Map<String, Value> = serde_json::from_str(c.member("params")?.get()).ok()?;
        let requested = params
            .get("protocolVersion")
            .and_then(Value::as_str)?
            .to_owned();
        let client_info = params.get("clientInfo").cloned().unwrap_or(Value::Null);
        let capabilities = translated_capabilities(params.get("capabilities"));
        let modern = ProtocolVersion::LATEST.as_str();
        let result = self
            .discover(modern, client_info, capabilities)
            .await
            .ok()??
            .get("result")?
            .clone();
        let supported: Vec<&str> = result
            .get("supportedVersions")?
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        if supported.contains(&requested.as_str()) || !supported.contains(&modern) {
            // Same era on both sides (or nothing we could translate to):
            // the remote answers the initialize itself.
            return None;
        }
        let version = match ProtocolVersion::parse(&requested) {
            Some(v) if !v.is_modern() => requested.clone(),
            _ => ProtocolVersion::LATEST_HANDSHAKE.as_str().to_owned(),
        };
        let mut caps = result
            .get("capabilities")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({}));
        // SUB-14: the list changes the remote declares reach the host
        // through the bridge's own subscriptions/listen.
        let mut listen = Map::new();
        let subscribe = declares_value(&caps, "resources", "subscribe");
        if let Some(caps) = caps.as_object_mut() {
            // Not translated yet: extensions; the host is not told it
            // will get them. Resource updates are: `subscribe` stays when
            // the remote declared it (the listen's resourceSubscriptions).
            caps.remove("extensions");
            for (kind, area, _) in LIST_CHANGES {
                if let Some(Value::Object(o)) = caps.get_mut(area) {
                    if !(subscribe && area == "resources") {
                        o.remove("subscribe");
                    }
                    if o.get("listChanged").and_then(Value::as_bool) == Some(true) {
                        listen.insert(kind.to_owned(), Value::Bool(true));
                    } else {
                        o.remove("listChanged");
                    }
                }
            }
        }
        let mut init = serde_json::json!({
            "protocolVersion": version,
            "capabilities": caps,
            "serverInfo": result
                .get("_meta")
                .and_then(|m| m.get(meta::SERVER_INFO))
                .cloned()
                .unwrap_or_else(|| serde_json::json!({"name": "unknown (via mcp bridge)", "version": "0"})),
        });
        if let Some(i) = result.get("instructions") {
            init["instructions"] = i.clone();
        }
        tracing::info!("the remote serves only 2026-07-28; translating for a {version} host");
        self.translate = Some(Translate {
            client_info: params.get("clientInfo").cloned().unwrap_or(Value::Null),
            capabilities: translated_capabilities(params.get("capabilities")),
            log_level: None,
            listen,
            subscribe,
            resources: Vec::new(),
            listen_gen: 0,
            waiters: Vec::new(),
        });
        let answer = serde_json::json!({"jsonrpc": "2.0", "id": id.to_value(), "result": init});
        Some(answer.to_string().into_bytes())
    }

    // ERA-06, DISC-06
    /// A 2026-07-28 host's first request: probes the remote with
    /// `server/discover`. A remote serving the host's version is left to
    /// answer everything itself (`None`); otherwise the bridge opens a
    /// handshake-era session (`initialize` with the host's client info and
    /// capabilities from this request's envelope, then
    /// `notifications/initialized` and the GET stream) and serves the host
    /// through it.
    async fn open_session(&mut self, c: &Classified<'_>) -> Option<Session> {
        let envelope: Map<String, Value> = c
            .param("_meta")
            .and_then(|m| serde_json::from_str(m.get()).ok())?;
        let version = envelope
            .get(meta::PROTOCOL_VERSION)
            .and_then(Value::as_str)?
            .to_owned();
        let probed = self
            .discover(
                &version,
                envelope
                    .get(meta::CLIENT_INFO)
                    .cloned()
                    .unwrap_or(Value::Null),
                envelope
                    .get(meta::CLIENT_CAPABILITIES)
                    .cloned()
                    .unwrap_or_else(|| serde_json::json!({})),
            )
            .await;
        let answer = probed.as_ref().ok().cloned().flatten();
        let error: Option<Value> = match &probed {
            Ok(_) => answer.as_ref().and_then(|a| a.get("error").cloned()),
            Err(crate::upstream::Failure::Rpc(e)) => serde_json::from_str(e).ok(),
            Err(crate::upstream::Failure::Transport(why)) => {
                if !why.contains("HTTP 4") {
                    // Unreachable rather than handshake-only: the request
                    // is sent as it is and fails with its own error.
                    return None;
                }
                None
            }
        };
        // DISC-06: a result listing no 2026-07-28 version is a handshake
        // advertisement; any other result is a modern remote (one without
        // the host's version answers the host's requests with its own
        // error).
        let served = answer
            .as_ref()
            .and_then(|a| a.get("result"))
            .is_some_and(|r| {
                r.get("supportedVersions")
                    .and_then(Value::as_array)
                    .is_none_or(|vs| {
                        vs.iter()
                            .filter_map(Value::as_str)
                            .filter_map(ProtocolVersion::parse)
                            .any(|v| v.is_modern())
                    })
            });
        // A -32022 listing a 2026-07-28 version is a modern remote that
        // wants another version: stay modern (ERA-06).
        let modern_elsewhere = error.as_ref().is_some_and(|e| {
            e.get("code").and_then(Value::as_i64)
                == Some(ferromcp_protocol::ErrorCode::UNSUPPORTED_PROTOCOL_VERSION.0)
                && e.get("data")
                    .and_then(|d| d.get("supported")?.as_array().cloned())
                    .is_some_and(|vs| {
                        vs.iter()
                            .filter_map(Value::as_str)
                            .filter_map(ProtocolVersion::parse)
                            .any(|v| v.is_modern())
                    })
        });
        if served || modern_elsewhere {
            return None;
        }
        let mut caps = envelope
            .get(meta::CLIENT_CAPABILITIES)
            .cloned()
            .unwrap_or_else(|| serde_json::json!({}));
        if let Some(o) = caps.as_object_mut() {
            // Extensions (tasks) are not translated.
            o.remove("extensions");
            o.remove("tasks");
        }
        let init = serde_json::json!({
            "jsonrpc": "2.0",
            "id": INITIALIZE_ID,
            "method": method::INITIALIZE,
            "params": {
                "protocolVersion": ProtocolVersion::LATEST_HANDSHAKE.as_str(),
                "capabilities": caps,
                "clientInfo": envelope.get(meta::CLIENT_INFO).cloned()
                    .unwrap_or_else(|| serde_json::json!({"name": "mcp bridge", "version": env!("CARGO_PKG_VERSION")})),
            }
        });
        let answers = self
            .up
            .collect(init.to_string().into_bytes(), &[], true)
            .await
            .ok()?;
        let result = answers.iter().find_map(|a| {
            let v: Value = serde_json::from_slice(a).ok()?;
            if v.get("id")? != INITIALIZE_ID {
                return None;
            }
            match v.get("result")? {
                Value::Object(r) => Some(r.clone()),
                _ => None,
            }
        })?;
        let negotiated = result.get("protocolVersion").and_then(Value::as_str)?;
        self.up.set_version(negotiated);
        tracing::info!(
            "the remote serves only the handshake era ({negotiated}); holding one session for a 2026-07-28 host"
        );
        let done =
            serde_json::json!({"jsonrpc": "2.0", "method": method::NOTIFICATIONS_INITIALIZED});
        if self
            .up
            .collect(done.to_string().into_bytes(), &[], false)
            .await
            .is_err()
        {
            tracing::warn!("the remote refused notifications/initialized");
        }
        let up = self.up.clone();
        let tx = self.events.clone();
        self.listen = Some(tokio::spawn(async move { up.listen(tx).await }).abort_handle());
        Some(Session {
            init: result,
            log_level: None,
            listens: Vec::new(),
        })
    }

    /// In a held session: what the bridge answers itself
    /// (`server/discover`, `subscriptions/listen`, a refused request), and
    /// the envelope's log level set on the remote when it changed. `None`
    /// sends the request on.
    async fn session_local(
        &mut self,
        c: &Classified<'_>,
        id: &RequestId,
        method: &str,
    ) -> Option<Vec<u8>> {
        let session = self.session.as_mut()?;
        if method == method::SERVER_DISCOVER {
            // DISC-02, CACHE-01: the remote gave no cache hint, so the
            // bridge claims none (ttlMs 0, private).
            let mut r = Map::new();
            r.insert("resultType".into(), Value::from("complete"));
            r.insert(
                "supportedVersions".into(),
                serde_json::json!([ProtocolVersion::LATEST.as_str()]),
            );
            let mut caps = session
                .init
                .get("capabilities")
                .cloned()
                .unwrap_or_else(|| serde_json::json!({}));
            if let Some(o) = caps.as_object_mut() {
                o.remove("tasks");
            }
            r.insert("capabilities".into(), caps);
            if let Some(i) = session.init.get("instructions") {
                r.insert("instructions".into(), i.clone());
            }
            r.insert("ttlMs".into(), Value::from(0));
            r.insert("cacheScope".into(), Value::from("private"));
            if let Some(info) = session.init.get("serverInfo") {
                r.insert(
                    "_meta".into(),
                    serde_json::json!({(meta::SERVER_INFO): info}),
                );
            }
            let answer = serde_json::json!({"jsonrpc": "2.0", "id": id.to_value(), "result": r});
            return Some(answer.to_string().into_bytes());
        }
        if method == method::SUBSCRIPTIONS_LISTEN {
            return Some(self.listen_locally(c, id).await);
        }
        let level = c
            .param("_meta")
            .and_then(|m| serde_json::from_str::<Map<String, Value>>(m.get()).ok())
            .and_then(|m| m.get(meta::LOG_LEVEL).cloned());
        if level.is_some()
            && level != session.log_level
            && session
                .init
                .get("capabilities")
                .and_then(|c| c.get("logging"))
                .is_some()
        {
            session.log_level.clone_from(&level);
            self.up.note_setup(
                method::LOGGING_SET_LEVEL,
                level.as_ref().and_then(Value::as_str),
            );
            let set = serde_json::json!({
                "jsonrpc": "2.0", "id": "ferromcp-bridge/set-level",
                "method": method::LOGGING_SET_LEVEL, "params": {"level": level}
            });
            if self
                .up
                .collect(set.to_string().into_bytes(), &[], false)
                .await
                .is_err()
            {
                tracing::warn!("the remote refused logging/setLevel");
            }
        }
        None
    }

    // SUB-01, SUB-03, SUB-12
    /// `subscriptions/listen` served from the held session: acknowledged at
    /// once with the kinds the remote declared, resource subscriptions
    /// made with `resources/subscribe`; notifications from the remote then
    /// reach the host tagged with the listen id. The answer is the
    /// acknowledgement (the listen request itself stays open).
    async fn listen_locally(&mut self, c: &Classified<'_>, id: &RequestId) -> Vec<u8> {
        let Some(session) = self.session.as_mut() else {
            return error_answer(Some(id), -32603, "bridge: no session");
        };
        if session.listens.len() >= self.limits.max_in_flight {
            return error_answer(Some(id), -32600, "bridge: too many subscriptions");
        }
        let wanted: Map<String, Value> = c
            .param("notifications")
            .and_then(|n| serde_json::from_str(n.get()).ok())
            .unwrap_or_default();
        let mut honoured = Map::new();
        for (kind, area, _) in LIST_CHANGES {
            if wanted.get(kind).and_then(Value::as_bool) == Some(true)
                && declares(&session.init, area, "listChanged")
            {
                honoured.insert(kind.into(), Value::from(true));
            }
        }
        let mut subscribe = Vec::new();
        if let Some(Value::Array(uris)) = wanted.get("resourceSubscriptions") {
            if declares(&session.init, "resources", "subscribe") {
                let uris: Vec<Value> = uris.iter().filter(|u| u.is_string()).cloned().collect();
                subscribe.clone_from(&uris);
                honoured.insert("resourceSubscriptions".into(), Value::Array(uris));
            }
        }
        session.listens.push((id.clone(), honoured.clone()));
        if !honoured.is_empty() && !self.up.wait_get_stream().await {
            tracing::warn!(
                "the remote's GET stream is not open; change notifications may be missed"
            );
        }
        for (n, uri) in subscribe.into_iter().enumerate() {
            self.up
                .note_setup(method::RESOURCES_SUBSCRIBE, uri.as_str());
            let body = serde_json::json!({
                "jsonrpc": "2.0", "id": format!("ferromcp-bridge/subscribe/{id:?}/{n}"),
                "method": method::RESOURCES_SUBSCRIBE, "params": {"uri": uri}
            });
            self.spawn_exchange(
                body.to_string().into_bytes(),
                Vec::new(),
                None,
                false,
                Retries::NONE,
            );
        }
        serde_json::json!({
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {"_meta": {(meta::SUBSCRIPTION_ID): id.to_value()}, "notifications": honoured}
        })
        .to_string()
        .into_bytes()
    }

    // SUB-02, SUB-04, META-11, ERA-12
    /// A change notification from the held session goes to each
    /// subscription that asked for it, tagged with its listen id; `true`
    /// when it was a change notification (delivered or not: never
    /// untagged).
    async fn deliver_to_listens(&mut self, bytes: &[u8], method: &str) -> bool {
        let Some(session) = self.session.as_ref() else {
            return false;
        };
        let kind = LIST_CHANGES
            .iter()
            .find(|(_, _, m)| *m == method)
            .map(|(k, _, _)| *k);
        let updated = method == method::NOTIFICATIONS_RESOURCES_UPDATED;
        if kind.is_none() && !updated {
            return false;
        }
        let Ok(mut note) = serde_json::from_slice::<Value>(bytes) else {
            return true;
        };
        let uri = note
            .get("params")
            .and_then(|p| p.get("uri"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let targets: Vec<RequestId> = session
            .listens
            .iter()
            .filter(|(_, honoured)| match (kind, &uri) {
                (Some(k), _) => honoured.get(k).and_then(Value::as_bool) == Some(true),
                (None, Some(u)) => honoured
                    .get("resourceSubscriptions")
                    .and_then(Value::as_array)
                    .is_some_and(|subs| {
                        subs.iter()
                            .filter_map(Value::as_str)
                            .any(|s| u == s || u.starts_with(s))
                    }),
                (None, None) => false,
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in targets {
            if let Some(o) = note.as_object_mut() {
                let params = o
                    .entry("params")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Some(p) = params.as_object_mut() {
                    let m = p
                        .entry("_meta")
                        .or_insert_with(|| Value::Object(Map::new()));
                    if let Some(m) = m.as_object_mut() {
                        m.insert(meta::SUBSCRIPTION_ID.to_owned(), id.to_value());
                    }
                }
            }
            self.answer(note.to_string().into_bytes()).await;
        }
        true
    }

    // HDR-01, HDR-02, HDR-03, HDR-15
    /// The 2026-07-28 request headers, from the message itself and the
    /// tool's `x-mcp-header` annotations (the protocol crate's codec).
    fn modern_headers(&self, c: &Classified<'_>, method: &str) -> Vec<(String, String)> {
        let version = c
            .param("_meta")
            .and_then(|m| RawObject::parse(m.get()))
            .and_then(|m| m.get(meta::PROTOCOL_VERSION).ok().flatten())
            .and_then(raw_str)
            .map_or_else(
                || ProtocolVersion::LATEST.as_str().to_owned(),
                |v| v.into_owned(),
            );
        let mut h = vec![
            (MCP_PROTOCOL_VERSION.to_owned(), version),
            (MCP_METHOD.to_owned(), method.to_owned()),
        ];
        if let Some(member) = name_bearing_param(method) {
            if let Some(name) = c.param_str(member) {
                h.push((MCP_NAME.to_owned(), encode_header_value(&name).into_owned()));
            }
        }
        if method == method::TOOLS_CALL {
            if let Some(map) = c
                .param_str("name")
                .and_then(|n| self.tool_headers.get(n.as_ref()))
            {
                let args = c
                    .param("arguments")
                    .and_then(|a| serde_json::from_str::<Map<String, Value>>(a.get()).ok());
                h.extend(map.emit(args.as_ref()));
            }
        }
        h
    }

    /// Whether a request may be sent again when the remote could not be
    /// reached or was unavailable: the read-only methods, and calls of
    /// tools the remote annotated `readOnlyHint` or `idempotentHint`.
    fn safe_to_repeat(&self, c: &Classified<'_>, method: &str) -> bool {
        REPEATABLE.contains(&method)
            || (method == method::TOOLS_CALL
                && c.param_str("name")
                    .is_some_and(|n| self.repeatable_tools.contains(n.as_ref())))
    }

    /// Sends a request and reports its messages and its end.
    fn spawn_exchange(
        &self,
        body: Vec<u8>,
        headers: Vec<(String, String)>,
        local: Option<RequestId>,
        initialize: bool,
        retries: Retries,
    ) -> AbortHandle {
        let up = self.up.clone();
        let tx = self.events.clone();
        tokio::spawn(async move {
            let r = up
                .post(body, &headers, initialize, local.as_ref(), &tx, retries)
                .await;
            let _ = tx
                .send(Inbound::Ended {
                    local,
                    failure: r.err(),
                })
                .await;
        })
        .abort_handle()
    }

    /// Sends a notification or response; with `listen`, opens the
    /// handshake-era GET stream once it was accepted.
    fn spawn_send(
        &self,
        body: Vec<u8>,
        headers: Vec<(String, String)>,
        listen: Option<mpsc::Sender<Inbound>>,
    ) -> AbortHandle {
        let up = self.up.clone();
        let tx = self.events.clone();
        tokio::spawn(async move {
            let r = up
                .post(body, &headers, false, None, &tx, Retries::NONE)
                .await;
            if let Err(f) = r {
                let _ = tx
                    .send(Inbound::Ended {
                        local: None,
                        failure: Some(f),
                    })
                    .await;
            }
            if let Some(l) = listen {
                up.listen(l).await;
            }
        })
        .abort_handle()
    }

    async fn on_remote(&mut self, ev: Inbound) {
        match ev {
            Inbound::Message(bytes, origin) => self.remote_message(&bytes, origin).await,
            Inbound::Ended {
                local: Some(local),
                failure,
            } => {
                // The exchange ended; if its answer has not crossed, the
                // host gets an error for the id instead of waiting forever
                // (unless an MRTR round now waits for the host's input).
                if self
                    .host_ids
                    .get(&local)
                    .is_some_and(|(_, p)| p.round.is_some() && failure.is_none())
                {
                    return;
                }
                if let Some(parked) = self
                    .host_ids
                    .get_mut(&local)
                    .and_then(|p| p.parked.as_mut())
                {
                    // The host's retry gets the outcome.
                    if parked.done.is_none() {
                        let why = match &failure {
                            Some(Failure::Transport(why)) => why.clone(),
                            Some(Failure::Rpc(e)) => format!("the remote refused the call: {e}"),
                            None => "the remote ended the exchange without answering".to_owned(),
                        };
                        parked.done = Some(error_answer(
                            Some(&local),
                            -32603,
                            &format!("bridge: {why}"),
                        ));
                    }
                    return;
                }
                if let Some(Failure::Rpc(error)) = &failure {
                    if is_header_mismatch(error) && self.retry_with_fresh_headers(&local).await {
                        return;
                    }
                }
                let Some((original, _)) = self.host_ids.take(&local) else {
                    return;
                };
                let answer = match failure {
                    Some(Failure::Rpc(error)) => {
                        let mut s = String::from("{\"jsonrpc\":\"2.0\",\"id\":");
                        s.push_str(&original.to_value().to_string());
                        s.push_str(",\"error\":");
                        s.push_str(&error);
                        s.push('}');
                        s.into_bytes()
                    }
                    Some(Failure::Transport(why)) => {
                        error_answer(Some(&original), -32603, &format!("bridge: {why}"))
                    }
                    None => error_answer(
                        Some(&original),
                        -32603,
                        "bridge: the remote ended the exchange without answering",
                    ),
                };
                self.answer(answer).await;
            }
            Inbound::Ended {
                local: None,
                failure: Some(f),
            } => match f {
                Failure::Rpc(_) => tracing::warn!("the remote refused a notification or answer"),
                Failure::Transport(why) => tracing::warn!("sending to the remote failed: {why}"),
            },
            Inbound::Ended {
                local: None,
                failure: None,
            } => {}
            Inbound::StreamSettled => self.opening_stream = false,
        }
    }

    async fn remote_message(&mut self, bytes: &[u8], origin: Option<RequestId>) {
        let c = match classify(bytes) {
            Ok(c) => c,
            Err(_) => {
                tracing::warn!("the remote sent something that is not a JSON-RPC message; dropped");
                return;
            }
        };
        match c.kind().clone() {
            Kind::Response { id: Some(id) } => {
                if let Some(parked) = self.host_ids.get_mut(&id).and_then(|p| p.parked.as_mut()) {
                    // The remote answered before the host's retry.
                    parked.done = Some(bytes.to_vec());
                    return;
                }
                if self.translate.is_some() && self.host_ids.get(&id).is_some() {
                    if let Some(result) = input_required(&c) {
                        return self.start_round(&id, result).await;
                    }
                }
                if let Some(error) = c.member("error") {
                    if is_header_mismatch(error.get()) && self.retry_with_fresh_headers(&id).await {
                        return;
                    }
                }
                let Some((original, pending)) = self.host_ids.take(&id) else {
                    tracing::debug!("an answer for a request no longer waiting; dropped");
                    return;
                };
                let mut body = c.with_id(&original);
                if self.session.is_some() {
                    body = modern_result(body, &pending.method);
                }
                if pending.method == method::TOOLS_LIST {
                    body = self.filter_tools(body);
                } else if pending.method == method::INITIALIZE {
                    self.learn_version(&body);
                }
                self.answer(body).await;
            }
            Kind::Response { id: None } => self.answer(bytes.to_vec()).await,
            Kind::Request { id, method }
                if origin.is_some() && self.ask_host(&c, &id, &method, origin.as_ref()).await => {}
            Kind::Request { id, method } if self.session.is_some() => {
                self.refuse_unroutable(&id, &method);
            }
            Kind::Request { id, .. } => match self.server_ids.insert(id.clone(), ToHost::Remote) {
                Ok(host_id) => {
                    self.sync_waiting();
                    self.answer(c.with_id(&host_id)).await
                }
                Err(e) => {
                    let body = error_answer(Some(&id), -32603, &format!("bridge: {e}"));
                    self.spawn_send(body, Vec::new(), None);
                }
            },
            Kind::Notification { method } => {
                if self.session.is_some() && self.deliver_to_listens(bytes, &method).await {
                    return;
                }
                if self.translate.is_some() {
                    // SUB-14: the bridge's listen, seen by a handshake host
                    // as plain notifications.
                    if method == "notifications/subscriptions/acknowledged" {
                        return self.listen_acknowledged(&c).await;
                    }
                    if let Some(plain) = without_subscription_id(&c) {
                        return self.answer(plain).await;
                    }
                }
                if method == "notifications/cancelled" {
                    if let Some(raw) = c.param("requestId") {
                        let remote_id = serde_json::from_str::<Value>(raw.get())
                            .ok()
                            .and_then(|v| RequestId::from_value(&v));
                        if let Some((host_id, _)) =
                            remote_id.and_then(|r| self.server_ids.take_original(&r))
                        {
                            self.sync_waiting();
                            let body = c.replace(raw, &host_id.to_value().to_string());
                            return self.answer(body).await;
                        }
                    }
                }
                self.answer(bytes.to_vec()).await;
            }
        }
    }

    // SUB-01, SUB-11, SUB-14
    /// A handshake host in front of a 2026-07-28-only remote: the bridge's
    /// own `subscriptions/listen` for the list changes the remote declared
    /// and the resources the host subscribed to, opened again when it ends
    /// (at most `Limits::max_listen_retries` short-lived streams in a row);
    /// its notifications reach the host as handshake-era notifications.
    /// With `reopen`, a running listen is replaced by one with the current
    /// set under a new id; without, an open one is kept.
    fn listen_for_host(&mut self, reopen: bool) {
        if self.listen.is_some() && !reopen {
            return;
        }
        if let Some(old) = self.listen.take() {
            old.abort();
        }
        let Some(t) = self.translate.as_mut() else {
            return;
        };
        let notifications = t.notifications();
        if notifications.is_empty() {
            return;
        }
        t.listen_gen += 1;
        let request = serde_json::json!({
            "jsonrpc": "2.0", "id": t.listen_id(), "method": method::SUBSCRIPTIONS_LISTEN,
            "params": {"notifications": notifications}
        })
        .to_string()
        .into_bytes();
        let Some(body) = classify(&request).ok().and_then(|c| t.envelope(&c)) else {
            return;
        };
        let Ok(c) = classify(&body) else { return };
        let headers = self.modern_headers(&c, method::SUBSCRIPTIONS_LISTEN);
        let up = self.up.clone();
        let tx = self.events.clone();
        let max = self.limits.max_listen_retries;
        let task = tokio::spawn(async move {
            let mut failures = 0u32;
            while !tx.is_closed() {
                let started = tokio::time::Instant::now();
                let r = up.post_listen(body.clone(), &headers, &tx).await;
                if r.is_ok() && started.elapsed() > std::time::Duration::from_secs(30) {
                    failures = 0;
                } else {
                    failures += 1;
                }
                if let Err(Failure::Transport(why)) = &r {
                    tracing::debug!("the remote's subscriptions/listen ended: {why}");
                }
                if failures > max {
                    tracing::warn!("giving up on the remote's subscriptions/listen");
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        });
        self.listen = Some(task.abort_handle());
    }

    // SUB-01, SUB-12, SUB-14
    /// A handshake host's `resources/subscribe` or `resources/unsubscribe`
    /// in front of a 2026-07-28-only remote that declared
    /// `resources.subscribe`: the bridge's listen is opened again with the
    /// new `resourceSubscriptions`, and the host is answered once the
    /// remote acknowledged it (an error after `Limits::timeout` without
    /// the acknowledgement). A request that changes nothing is answered at
    /// once.
    async fn subscribe_for_host(&mut self, c: &Classified<'_>, id: RequestId, method: &str) {
        let Some(uri) = c.param_str("uri").map(|u| u.into_owned()) else {
            let why = "params.uri must be a string";
            return self.answer(error_answer(Some(&id), -32602, why)).await;
        };
        let max = self.limits.max_resource_subscriptions;
        let Some(t) = self.translate.as_mut() else {
            return;
        };
        let known = t.resources.iter().position(|u| *u == uri);
        let changed = match (method == method::RESOURCES_SUBSCRIBE, known) {
            (true, Some(_)) | (false, None) => false,
            (true, None) if t.resources.len() >= max => {
                let why = format!("bridge: too many resource subscriptions (at most {max})");
                return self.answer(error_answer(Some(&id), -32600, &why)).await;
            }
            (true, None) => {
                t.resources.push(uri);
                true
            }
            (false, Some(i)) => {
                t.resources.remove(i);
                true
            }
        };
        let ok = serde_json::json!({"jsonrpc": "2.0", "id": id.to_value(), "result": {}})
            .to_string()
            .into_bytes();
        if !changed {
            return self.answer(ok).await;
        }
        self.listen_for_host(true);
        if self.listen.is_none() {
            // Nothing is listened for any more.
            return self.answer(ok).await;
        }
        let pending = Pending {
            method: method.to_owned(),
            task: None,
            sent: None,
            round: None,
            rounds: 0,
            retried: false,
            ask: None,
            inputs: 0,
            parked: None,
        };
        let local = match self.host_ids.insert(id.clone(), pending) {
            Ok(l) => l,
            Err(e) => {
                return self
                    .answer(error_answer(Some(&id), -32600, &e.to_string()))
                    .await;
            }
        };
        let tx = self.events.clone();
        let wait = self.limits.timeout;
        let l = local.clone();
        let timer = tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            let why = format!("the remote did not acknowledge the subscription within {wait:?}");
            let _ = tx
                .send(Inbound::Ended {
                    local: Some(l),
                    failure: Some(Failure::Transport(why)),
                })
                .await;
        });
        if let Some(p) = self.host_ids.get_mut(&local) {
            p.task = Some(timer.abort_handle());
        }
        let host_ids = &self.host_ids;
        if let Some(t) = self.translate.as_mut() {
            t.waiters.retain(|w| host_ids.get(w).is_some());
            t.waiters.push(local);
        }
    }

    // SUB-03, SUB-05
    /// The remote acknowledged a listen of the bridge's: when it is the
    /// current one, the host's subscription changes waiting for it are
    /// answered.
    async fn listen_acknowledged(&mut self, c: &Classified<'_>) {
        let Some(t) = self.translate.as_mut() else {
            return;
        };
        let envelope = c
            .param("_meta")
            .and_then(|m| serde_json::from_str::<Map<String, Value>>(m.get()).ok());
        let current = envelope
            .as_ref()
            .and_then(|m| m.get(meta::SUBSCRIPTION_ID))
            .and_then(Value::as_str)
            == Some(t.listen_id().as_str());
        if !current {
            return;
        }
        let honoured = c
            .param("notifications")
            .and_then(|n| serde_json::from_str::<Map<String, Value>>(n.get()).ok())
            .unwrap_or_default();
        if !t.resources.is_empty() && !honoured.contains_key("resourceSubscriptions") {
            tracing::warn!(
                "the remote did not acknowledge the resource subscriptions; updates may not arrive"
            );
        }
        for w in std::mem::take(&mut t.waiters) {
            let Some((original, p)) = self.host_ids.take(&w) else {
                continue;
            };
            if let Some(task) = p.task {
                task.abort();
            }
            let ok = serde_json::json!({"jsonrpc": "2.0", "id": original.to_value(), "result": {}});
            let _ = self.to_host.send(ok.to_string().into_bytes()).await;
        }
    }

    // MRTR-15, LEGACY-18
    /// A 2026-07-28 host in front of a handshake-era remote: a request the
    /// remote pushed that cannot become an input round (on its GET stream,
    /// tied to no call, or during a call that takes no input) has no way
    /// to the host, which answers no pushed requests. `ping` is answered by
    /// the bridge; anything else gets -32601 at the remote, with a warning
    /// on stderr once per method (for the first few methods).
    fn refuse_unroutable(&mut self, id: &RequestId, method: &str) {
        let body = if method == "ping" {
            serde_json::json!({"jsonrpc": "2.0", "id": id.to_value(), "result": {}})
                .to_string()
                .into_bytes()
        } else {
            if self.warned.len() < MAX_WARNED_METHODS && self.warned.insert(method.to_owned()) {
                tracing::warn!(
                    "the remote sent {method:?} outside a call; a 2026-07-28 host cannot be asked, so the bridge refused it"
                );
            }
            let why = format!("bridge: a 2026-07-28 host cannot be asked {method} outside a call");
            error_answer(Some(id), -32601, &why)
        };
        self.spawn_send(body, Vec::new(), None);
    }

    /// Tells the remote side how many requests wait on the host (pushed
    /// requests and input rounds): meanwhile a quiet stream is not stalled.
    fn sync_waiting(&self) {
        self.up
            .set_waiting_on_host(self.server_ids.len() + self.tokens.len());
    }

    // MRTR-15, MRTR-02, MRTR-03, MRTR-04
    /// A 2026-07-28 host in front of a handshake-era remote: a request the
    /// remote pushed on the answer stream of the host's `tools/call`,
    /// `prompts/get` or `resources/read` becomes an `input_required` round
    /// answering that host request (the call goes on waiting at the
    /// remote), or joins the next round when one is out. `false` when it
    /// is not such a request (it is then forwarded as a request).
    async fn ask_host(
        &mut self,
        c: &Classified<'_>,
        rid: &RequestId,
        method: &str,
        origin: Option<&RequestId>,
    ) -> bool {
        let (Some(local), Some(_)) = (origin, self.session.as_ref()) else {
            return false;
        };
        let Some(&(_, cap)) = INPUT_METHODS.iter().find(|(m, _)| *m == method) else {
            return false;
        };
        let Some((_, pending)) = self.host_ids.get(local) else {
            return false;
        };
        let Some(ask) = &pending.ask else {
            return false;
        };
        let refuse = |relay: &Self, code: i64, why: &str| {
            relay.spawn_send(error_answer(Some(rid), code, why), Vec::new(), None);
        };
        if !ask.caps.contains_key(cap) {
            // MRTR-04: never ask what the host did not declare.
            let why = format!("bridge: the host did not declare the {cap} capability");
            refuse(self, -32601, &why);
            return true;
        }
        self.sweep_input_waits();
        let mut input = Map::new();
        input.insert("method".into(), Value::from(method));
        if let Some(p) = c
            .member("params")
            .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
        {
            input.insert("params".into(), p);
        }
        let Some(pending) = self.host_ids.get_mut(local) else {
            return false;
        };
        pending.inputs += 1;
        let key = format!("{cap}-{}", pending.inputs);
        if let Some(parked) = pending.parked.as_mut() {
            parked.queued.push((key, rid.clone(), Value::Object(input)));
            return true;
        }
        if self.tokens.len() >= self.limits.max_input_waits {
            refuse(
                self,
                -32603,
                "bridge: too many calls wait for the host's input",
            );
            return true;
        }
        let Some(token) = new_token() else {
            refuse(self, -32603, "bridge: no randomness for a requestState");
            return true;
        };
        // The host's request is answered now; the call waits at the
        // remote under a placeholder until the host's retry takes it over.
        let placeholder = RequestId::string(format!("ferromcp-bridge/input/{token}"));
        let original = match self.host_ids.rebind(local, placeholder) {
            Ok(Some(o)) => o,
            _ => {
                refuse(self, -32603, "bridge: the call is no longer waiting");
                return true;
            }
        };
        let asks = vec![(key, rid.clone(), Value::Object(input))];
        let answer = input_round_answer(&original, &asks, &token);
        if let Some(p) = self.host_ids.get_mut(local) {
            p.parked = Some(Parked {
                token: token.clone(),
                asks,
                queued: Vec::new(),
                since: std::time::Instant::now(),
                done: None,
            });
        }
        self.tokens.insert(token, local.clone());
        self.sync_waiting();
        self.answer(answer).await;
        true
    }

    // MRTR-06, MRTR-08, MRTR-09, MRTR-11
    /// The host's retry of an input round: its `requestState` must be one
    /// the bridge issued, for this method and name, not used before and not
    /// older than `Limits::input_wait` (else -32602). Its `inputResponses`
    /// answer the remote's pushed requests; the call then continues under
    /// the retry's id (or the next round is asked).
    async fn resume(&mut self, c: &Classified<'_>, id: RequestId, method: &str, state: &str) {
        self.sweep_input_waits();
        let token = serde_json::from_str::<String>(state).ok();
        let local = token.as_ref().and_then(|t| self.tokens.get(t)).cloned();
        let name = bound_name(c);
        let bound = local
            .as_ref()
            .and_then(|l| self.host_ids.get(l))
            .is_some_and(|(_, p)| {
                p.method == method
                    && p.ask.as_ref().is_some_and(|a| a.name == name)
                    && p.parked.as_ref().map(|k| Some(&k.token)) == Some(token.as_ref())
            });
        let (Some(local), Some(token), true) = (local, token, bound) else {
            let why = "Invalid or expired requestState";
            return self.answer(error_answer(Some(&id), -32602, why)).await;
        };
        let responses: Map<String, Value> = c
            .param("inputResponses")
            .and_then(|r| serde_json::from_str(r.get()).ok())
            .unwrap_or_default();
        let Some(pending) = self.host_ids.get_mut(&local) else {
            return;
        };
        if let Some(caps) = Some(envelope_capabilities(c)).filter(|c| !c.is_empty()) {
            if let Some(a) = pending.ask.as_mut() {
                a.caps = caps;
            }
        }
        let Some(parked) = pending.parked.as_mut() else {
            return;
        };
        // MRTR-11: answers missing → the same round again.
        let missing: Vec<(String, RequestId, Value)> = parked
            .asks
            .iter()
            .filter(|(k, _, _)| !responses.contains_key(k))
            .cloned()
            .collect();
        if !missing.is_empty() {
            let answer = input_round_answer(&id, &missing, &token);
            return self.answer(answer).await;
        }
        let Some(mut parked) = pending.parked.take() else {
            return;
        };
        self.tokens.remove(&token);
        for (key, rid, _) in parked.asks.drain(..) {
            let result = responses.get(&key).cloned().unwrap_or(Value::Null);
            let body =
                serde_json::json!({"jsonrpc": "2.0", "id": rid.to_value(), "result": result});
            self.spawn_send(body.to_string().into_bytes(), Vec::new(), None);
        }
        if !parked.queued.is_empty() {
            // Requests pushed meanwhile: the next round, a new state.
            let Some(next) = new_token() else {
                self.sync_waiting();
                let why = "bridge: no randomness for a requestState";
                return self.answer(error_answer(Some(&id), -32603, why)).await;
            };
            parked.asks = std::mem::take(&mut parked.queued);
            parked.token = next.clone();
            parked.since = std::time::Instant::now();
            let answer = input_round_answer(&id, &parked.asks, &next);
            if let Some(p) = self.host_ids.get_mut(&local) {
                p.parked = Some(parked);
            }
            self.tokens.insert(next, local);
            self.sync_waiting();
            return self.answer(answer).await;
        }
        self.sync_waiting();
        if let Some(done) = parked.done {
            // The remote finished before the retry.
            let Some((_, pending)) = self.host_ids.take(&local) else {
                return;
            };
            let Ok(d) = classify(&done) else { return };
            let body = modern_result(d.with_id(&id), &pending.method);
            return self.answer(body).await;
        }
        if let Err(e) = self.host_ids.rebind(&local, id.clone()) {
            // The host reused an id still in flight: the call cannot be
            // handed to it; it is cancelled at the remote.
            if let Some((_, p)) = self.host_ids.take(&local) {
                if let Some(t) = p.task {
                    t.abort();
                }
            }
            self.answer(error_answer(Some(&id), -32600, &e.to_string()))
                .await;
        }
    }

    /// Drops input rounds older than `Limits::input_wait` (or whose call
    /// is gone): the call is cancelled at the remote and its state is no
    /// longer accepted.
    fn sweep_input_waits(&mut self) {
        let now = std::time::Instant::now();
        let wait = self.limits.input_wait;
        let expired: Vec<(String, RequestId)> = self
            .tokens
            .iter()
            .filter(|(_, l)| {
                self.host_ids
                    .get(l)
                    .and_then(|(_, p)| p.parked.as_ref())
                    .is_none_or(|k| now.duration_since(k.since) > wait)
            })
            .map(|(t, l)| (t.clone(), l.clone()))
            .collect();
        for (token, local) in expired {
            self.tokens.remove(&token);
            let Some((_, p)) = self.host_ids.take(&local) else {
                continue;
            };
            if let Some(t) = p.task {
                t.abort();
            }
            let cancel = serde_json::json!({
                "jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": local.to_value(), "reason": "the host did not answer the input request in time"}
            });
            self.spawn_send(cancel.to_string().into_bytes(), Vec::new(), None);
        }
        self.sync_waiting();
    }

    // MRTR-01, MRTR-05
    /// A translated request came back `input_required`: each input request
    /// goes to the handshake host as a pushed request with an id of the
    /// bridge's; the request is sent again once all are answered.
    async fn start_round(&mut self, local: &RequestId, result: Map<String, Value>) {
        let Some((original, pending)) = self.host_ids.get(local) else {
            return;
        };
        let original = original.clone();
        let rounds = pending.rounds + 1;
        let requests = match result.get("inputRequests") {
            Some(Value::Object(r)) if !r.is_empty() => r.clone(),
            _ => Map::new(),
        };
        if rounds > MAX_INPUT_ROUNDS || requests.is_empty() {
            self.fail(local, &original, "bridge: the remote's input rounds cannot be completed (none asked, or too many rounds)")
                .await;
            return;
        }
        let mut pushed = Vec::new();
        for (key, req) in &requests {
            let Some(method) = req.get("method").and_then(Value::as_str) else {
                self.fail(
                    local,
                    &original,
                    "bridge: an input request without a method",
                )
                .await;
                return;
            };
            let synthetic = RequestId::string(format!("{local:?}/{rounds}/{key}"));
            let host_id = match self.server_ids.insert(
                synthetic,
                ToHost::Input {
                    local: local.clone(),
                    key: key.clone(),
                },
            ) {
                Ok(h) => h,
                Err(e) => {
                    self.fail(local, &original, &format!("bridge: {e}")).await;
                    return;
                }
            };
            let mut msg = Map::new();
            msg.insert("jsonrpc".into(), Value::from("2.0"));
            msg.insert("id".into(), host_id.to_value());
            msg.insert("method".into(), Value::from(method));
            if let Some(p) = req.get("params") {
                msg.insert("params".into(), p.clone());
            }
            pushed.push(Value::Object(msg).to_string().into_bytes());
        }
        if let Some(p) = self.host_ids.get_mut(local) {
            p.rounds = rounds;
            p.round = Some(Round {
                waiting: pushed.len(),
                responses: Map::new(),
                state: result.get("requestState").cloned(),
            });
        }
        self.sync_waiting();
        for m in pushed {
            self.answer(m).await;
        }
    }

    /// The host answered one input request of a round; the last answer
    /// sends the request again with `inputResponses` and `requestState`.
    async fn input_answered(&mut self, c: &Classified<'_>, local: RequestId, key: String) {
        let Some((original, _)) = self.host_ids.get(&local) else {
            return; // cancelled or failed meanwhile
        };
        let original = original.clone();
        let Some(result) = c
            .member("result")
            .and_then(|r| serde_json::from_str::<Value>(r.get()).ok())
        else {
            // The host refused (an error answer): the request fails with it.
            let error = c.member("error").map_or_else(
                || r#"{"code":-32603,"message":"the host did not answer"}"#.to_owned(),
                |e| e.get().to_owned(),
            );
            let answer = format!(
                r#"{{"jsonrpc":"2.0","id":{},"error":{error}}}"#,
                original.to_value()
            );
            self.host_ids.take(&local);
            return self.answer(answer.into_bytes()).await;
        };
        let Some(pending) = self.host_ids.get_mut(&local) else {
            return;
        };
        let Some(round) = pending.round.as_mut() else {
            return;
        };
        round.responses.insert(key, result);
        round.waiting = round.waiting.saturating_sub(1);
        if round.waiting > 0 {
            return;
        }
        let Some(round) = pending.round.take() else {
            return;
        };
        let Some((sent, headers)) = pending.sent.clone() else {
            return;
        };
        let Some(body) = with_input_responses(&sent, round.responses, round.state) else {
            self.fail(
                &local,
                &original,
                "bridge: cannot build the retried request",
            )
            .await;
            return;
        };
        // The next round is a new exchange under a new id of the bridge's,
        // so the end of the previous one can never be taken for its end.
        let Some((original, pending)) = self.host_ids.take(&local) else {
            return;
        };
        let next = match self.host_ids.insert(original.clone(), pending) {
            Ok(n) => n,
            Err(e) => {
                let msg = format!("bridge: {e}");
                return self
                    .answer(error_answer(Some(&original), -32603, &msg))
                    .await;
            }
        };
        let Ok(c) = classify(&body) else { return };
        let body = c.with_id(&next);
        let task = self.spawn_exchange(body, headers, Some(next.clone()), false, Retries::NONE);
        if let Some(p) = self.host_ids.get_mut(&next) {
            p.task = Some(task);
        }
    }

    // HDR-21
    /// A 2026-07-28 `tools/call` was refused for its `Mcp-Param-*` headers
    /// (the host called the tool before the bridge saw its annotations in
    /// a `tools/list` answer, or they changed): fetch `tools/list` again and
    /// send the call once more, under a new id, if its headers changed.
    /// `false` leaves the refusal to be passed on.
    async fn retry_with_fresh_headers(&mut self, local: &RequestId) -> bool {
        let Some((_, p)) = self.host_ids.get(local) else {
            return false;
        };
        if self.handshake || p.retried || p.method != method::TOOLS_CALL {
            return false;
        }
        let Some((sent, old_headers)) = p.sent.clone() else {
            return false;
        };
        let Ok(c) = classify(&sent) else { return false };
        let envelope = c
            .param("_meta")
            .and_then(|m| serde_json::from_str::<Map<String, Value>>(m.get()).ok())
            .unwrap_or_default();
        self.refresh_tool_headers(envelope).await;
        let headers = self.modern_headers(&c, method::TOOLS_CALL);
        if headers == old_headers {
            return false;
        }
        let Some((original, mut pending)) = self.host_ids.take(local) else {
            return false;
        };
        tracing::info!("tools/call refused for its Mcp-Param headers; sending it once more");
        pending.retried = true;
        pending.sent = Some((sent.clone(), headers.clone()));
        let next = match self.host_ids.insert(original.clone(), pending) {
            Ok(n) => n,
            Err(_) => return false,
        };
        let body = c.with_id(&next);
        let task = self.spawn_exchange(body, headers, Some(next.clone()), false, Retries::NONE);
        if let Some(p) = self.host_ids.get_mut(&next) {
            p.task = Some(task);
        }
        true
    }

    /// Fetches every page of `tools/list` (at most 32) with the given
    /// `_meta` envelope and learns the tools' `x-mcp-header` maps.
    async fn refresh_tool_headers(&mut self, envelope: Map<String, Value>) {
        let version = envelope
            .get(meta::PROTOCOL_VERSION)
            .and_then(Value::as_str)
            .unwrap_or(ProtocolVersion::LATEST.as_str())
            .to_owned();
        let headers = vec![
            (MCP_PROTOCOL_VERSION.to_owned(), version),
            (MCP_METHOD.to_owned(), method::TOOLS_LIST.to_owned()),
        ];
        let mut cursor: Option<Value> = None;
        for _ in 0..32 {
            let mut params = Map::new();
            params.insert("_meta".into(), Value::Object(envelope.clone()));
            if let Some(c) = cursor.take() {
                params.insert("cursor".into(), c);
            }
            let req = serde_json::json!({"jsonrpc": "2.0", "id": TOOLS_LIST_ID, "method": method::TOOLS_LIST, "params": params});
            let Ok(answers) = self
                .up
                .collect(req.to_string().into_bytes(), &headers, false)
                .await
            else {
                return;
            };
            let Some(answer) = answers.into_iter().find(|a| {
                serde_json::from_slice::<Value>(a)
                    .is_ok_and(|v| v.get("id").is_some_and(|i| i == TOOLS_LIST_ID))
            }) else {
                return;
            };
            cursor = serde_json::from_slice::<Value>(&answer)
                .ok()
                .and_then(|v| v.get("result")?.get("nextCursor").cloned())
                .filter(|c| !c.is_null());
            let _ = self.filter_tools(answer);
            if cursor.is_none() {
                return;
            }
        }
    }

    /// Answers the host's request with an error and forgets it.
    async fn fail(&mut self, local: &RequestId, original: &RequestId, why: &str) {
        if let Some((_, p)) = self.host_ids.take(local) {
            if let Some(t) = p.task {
                t.abort();
            }
        }
        self.answer(error_answer(Some(original), -32603, why)).await;
    }

    /// Records the version an `initialize` answer negotiated.
    fn learn_version(&self, body: &[u8]) {
        let Ok(c) = classify(body) else { return };
        let version = c
            .member("result")
            .and_then(|r| RawObject::parse(r.get()))
            .and_then(|r| r.get("protocolVersion").ok().flatten())
            .and_then(raw_str);
        if let Some(v) = version {
            self.up.set_version(&v);
        }
    }

    /// Removes filtered tools from a `tools/list` answer (all other bytes
    /// unchanged) and learns the `x-mcp-header` maps of the others.
    fn filter_tools(&mut self, body: Vec<u8>) -> Vec<u8> {
        let Ok(c) = classify(&body) else { return body };
        let Some(tools_raw) = c
            .member("result")
            .and_then(|r| RawObject::parse(r.get()))
            .and_then(|r| r.get("tools").ok().flatten())
        else {
            return body;
        };
        let Some(tools) = raw_array(tools_raw.get()) else {
            return body;
        };
        let mut kept = Vec::with_capacity(tools.len());
        for t in &tools {
            let parsed = RawObject::parse(t.get())
                .and_then(|o| Some((o.get("name").ok().flatten().and_then(raw_str)?, o)));
            let Some((name, obj)) = parsed else {
                // A tool without a readable name cannot be matched: it
                // crosses only when no filter is set.
                if self.filter.is_open() {
                    kept.push(t.get());
                }
                continue;
            };
            if !self.filter.permits(&name) {
                continue;
            }
            let repeatable = t.get().contains("Hint")
                && obj
                    .get("annotations")
                    .ok()
                    .flatten()
                    .and_then(|a| serde_json::from_str::<Value>(a.get()).ok())
                    .is_some_and(|a| {
                        a.get("readOnlyHint") == Some(&Value::Bool(true))
                            || a.get("idempotentHint") == Some(&Value::Bool(true))
                    });
            if !repeatable {
                self.repeatable_tools.remove(name.as_ref());
            } else if self.repeatable_tools.len() < self.limits.max_tools {
                self.repeatable_tools.insert(name.clone().into_owned());
            }
            if !self.handshake
                && t.get().contains("x-mcp-header")
                && self.tool_headers.len() < self.limits.max_tools
            {
                if let Some(map) = obj
                    .get("inputSchema")
                    .ok()
                    .flatten()
                    .and_then(|s| serde_json::from_str::<Value>(s.get()).ok())
                    .and_then(|s| x_mcp_header_map(&s).ok())
                {
                    self.tool_headers.insert(name.into_owned(), map);
                }
            }
            kept.push(t.get());
        }
        if kept.len() == tools.len() {
            return body;
        }
        let mut array = String::from("[");
        array.push_str(&kept.join(","));
        array.push(']');
        c.replace(tools_raw, &array)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duplicated_params_is_not_translated() {
        // Found by the bridge_message fuzz target: with params twice, the
        // envelope was added as a third params member (a last-wins remote
        // saw none of it) and nothing was stripped. Now refused (-32602).
        let line = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let c = classify(line).unwrap_or_else(|_| panic!("classify"));
        assert!(strip_envelope(&c).is_none());
        let t = Translate {
            client_info: serde_json::json!({"name": "h", "version": "1"}),
            capabilities: serde_json::json!({}),
            log_level: None,
            listen: Map::new(),
            subscribe: false,
            resources: Vec::new(),
            listen_gen: 0,
            waiters: Vec::new(),
        };
        assert!(t.envelope(&c).is_none());
        // Once is translated.
        let line = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#;
        let c = classify(line).unwrap_or_else(|_| panic!("classify"));
        assert!(t.envelope(&c).is_some() && strip_envelope(&c).is_some());
    }

    #[test]
    fn the_envelope_is_stripped_and_other_meta_keys_stay() {
        let line = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"h"},"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"debug","progressToken":7}}}"#;
        let c = classify(line).unwrap_or_else(|_| panic!("classify"));
        let out = strip_envelope(&c).unwrap_or_else(|| panic!("strip"));
        let v: Value = serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            v["params"]["_meta"],
            serde_json::json!({"progressToken": 7})
        );
        assert_eq!(v["params"]["name"], "echo");
        // Only the envelope: no _meta at all.
        let line = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let c = classify(line).unwrap_or_else(|_| panic!("classify"));
        let out = strip_envelope(&c).unwrap_or_else(|| panic!("strip"));
        let v: Value = serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(v["params"], serde_json::json!({}));
        // params that is not an object cannot be sent.
        let line = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]}"#;
        let c = classify(line).unwrap_or_else(|_| panic!("classify"));
        assert!(strip_envelope(&c).is_none());
    }

    #[test]
    fn only_declared_capabilities_count() {
        let init: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "capabilities": {"tools": {"listChanged": true}, "resources": {"subscribe": false}}
        }))
        .unwrap_or_default();
        assert!(declares(&init, "tools", "listChanged"));
        assert!(!declares(&init, "resources", "subscribe"));
        assert!(!declares(&init, "prompts", "listChanged"));
    }
}
