//! The stdio child behind `--expose`: spawned, initialized once, shared by
//! every HTTP client, and restarted with backoff when it exits.
//!
//! Requests to the child get the bridge's own ids from an [`IdMap`], so
//! two clients using the same id never collide; the answer is routed back
//! by that id alone. Progress tokens are replaced by the bridge's id the
//! same way. Every line the child writes is classified; a line that is not
//! a JSON-RPC message is reported and dropped, never forwarded. When the
//! child's stdout ends every call still waiting fails at once.
//!
//! A call writes its request to the child's stdin itself ([`Outbox`]) and
//! waits on a oneshot that the reader task completes with the answer.

mod outbox;

use crate::ids::IdMap;
use crate::message::{Kind, classify};
use ferromcp_protocol::jsonrpc::{
    OutgoingError, OutgoingNotification, OutgoingRequest, OutgoingResult,
};
use ferromcp_protocol::{ErrorObject, RequestId};
use outbox::Outbox;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use super::{Report, Settings};

/// A progress callback: (progress, total, message).
pub(crate) type ProgressSink = Box<dyn Fn(f64, Option<f64>, Option<String>) + Send + Sync>;

/// The child's answer to a call: its `result` as the child wrote it, or
/// its `error`.
pub(crate) type Reply = Result<Box<RawValue>, ErrorObject>;

/// One call waiting for the child's answer.
pub(crate) struct Pending {
    done: oneshot::Sender<Reply>,
    progress: Option<ProgressSink>,
}

/// The running child's side of the link (None while it is down).
struct Running {
    stdin: Arc<Outbox>,
    generation: u64,
}

struct State {
    running: Option<Running>,
    pending: IdMap<Pending>,
    /// Unique keys for the id map's "original" side (clients' own ids
    /// may collide; these never do).
    next_key: u64,
    generation: u64,
    /// Calls that take the child's requests, by the bridge's id.
    asking: std::collections::HashMap<RequestId, mpsc::Sender<Ask>>,
}

impl State {
    /// Forgets a call.
    fn remove(&mut self, local: &RequestId) -> Option<Pending> {
        self.asking.remove(local);
        self.pending.take(local).map(|(_, p)| p)
    }
}

/// The link to the child, shared by every HTTP request handler.
pub(crate) struct Link {
    state: Mutex<State>,
    settings: Settings,
    report: Report,
    /// Fired when the child sent `notifications/tools/list_changed`.
    pub(crate) tools_changed: tokio::sync::Notify,
    /// Fired on `notifications/prompts/list_changed`.
    pub(crate) prompts_changed: tokio::sync::Notify,
    /// Fired on `notifications/resources/list_changed`.
    pub(crate) resources_changed: tokio::sync::Notify,
    /// URIs from `notifications/resources/updated`, in order (bounded;
    /// taken by the one task passing them on).
    updates: mpsc::Sender<String>,
    pub(crate) updates_rx: Mutex<Option<mpsc::Receiver<String>>>,
    /// Cancelled by [`Link::stop`].
    stop: tokio_util::sync::CancellationToken,
    /// The child speaks only 2026-07-28: requests carry the `_meta` envelope.
    modern: std::sync::atomic::AtomicBool,
}

/// The capabilities the bridge declares to the child: what it can pass on
/// to the client whose call a request belongs to.
pub(crate) static CLIENT_CAPABILITIES: std::sync::LazyLock<Value> = std::sync::LazyLock::new(
    || json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}),
);

/// The bridge's `clientInfo` towards the child.
pub(crate) static CLIENT_INFO: std::sync::LazyLock<Value> = std::sync::LazyLock::new(
    || json!({"name": "mcp-bridge-expose", "version": env!("CARGO_PKG_VERSION")}),
);

/// The revision spoken to a child that refuses the handshake.
const MODERN: &str = "2026-07-28";

/// Resource updates waiting to be passed on at most.
const MAX_PENDING_UPDATES: usize = 256;

/// The text of the error a call gets when the child is not running.
pub(crate) const CHILD_DOWN: &str =
    "the stdio server behind the bridge is not running (it is being restarted); try again";

impl Link {
    pub(crate) fn new(settings: Settings, report: Report) -> Arc<Self> {
        let (updates, updates_rx) = mpsc::channel(MAX_PENDING_UPDATES);
        Arc::new(Self {
            state: Mutex::new(State {
                running: None,
                pending: IdMap::new(settings.max_in_flight),
                next_key: 0,
                generation: 0,
                asking: Default::default(),
            }),
            settings,
            report,
            tools_changed: tokio::sync::Notify::new(),
            prompts_changed: tokio::sync::Notify::new(),
            resources_changed: tokio::sync::Notify::new(),
            updates,
            updates_rx: Mutex::new(Some(updates_rx)),
            stop: tokio_util::sync::CancellationToken::new(),
            modern: std::sync::atomic::AtomicBool::new(false),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave the state half
        // written (every update is one map operation), so a poisoned lock
        // is still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends a request to the child and waits for its answer (the
    /// `result` member), an error answer, the timeout, or the child's
    /// exit, whichever comes first. `cancel` ends the wait early and tells
    /// the child with `notifications/cancelled`. Requests the child sends
    /// meanwhile are refused.
    pub(crate) async fn request(
        self: &Arc<Self>,
        method: &str,
        params: Value,
        progress: Option<ProgressSink>,
        cancel: Option<tokio_util::sync::CancellationToken>,
    ) -> Result<Value, ErrorObject> {
        let mut call = self.start(method, params, progress, false).await?;
        loop {
            match call.wait(cancel.as_ref()).await {
                Wait::Answer(a) => {
                    return serde_json::from_str(a?.get()).map_err(|e| {
                        ErrorObject::internal(format!(
                            "the stdio server's {method} result is malformed: {e}"
                        ))
                    });
                }
                Wait::Ask(ask) => {
                    self.respond(&ask.id, Err(ErrorObject::method_not_found(&ask.method)))
                        .await
                }
            }
        }
    }

    /// Sends a request to the child; [`Call::wait`] waits for its answer.
    /// With `asks`, requests the child sends while this is the only call
    /// able to take them (elicitation, sampling, roots) come to the call.
    pub(crate) async fn start(
        self: &Arc<Self>,
        method: &str,
        mut params: Value,
        progress: Option<ProgressSink>,
        asks: bool,
    ) -> Result<Call, ErrorObject> {
        let (done, rx) = oneshot::channel();
        let wants_progress = progress.is_some();
        let (ask_tx, ask_rx) = mpsc::channel(4);
        let (local, stdin) = {
            let mut st = self.lock();
            let Some(stdin) = st.running.as_ref().map(|r| r.stdin.clone()) else {
                return Err(ErrorObject::internal(CHILD_DOWN));
            };
            st.next_key += 1;
            let key = RequestId::string(format!("k{}", st.next_key));
            let local = st
                .pending
                .insert(key, Pending { done, progress })
                .map_err(ErrorObject::internal)?;
            if asks {
                st.asking.insert(local.clone(), ask_tx);
            }
            (local, stdin)
        };
        if self.modern.load(std::sync::atomic::Ordering::Relaxed) {
            if let Value::Object(p) = &mut params {
                let meta = p
                    .entry("_meta")
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Value::Object(m) = meta {
                    use ferromcp_protocol::meta;
                    m.insert(meta::PROTOCOL_VERSION.into(), json!(MODERN));
                    m.insert(
                        meta::CLIENT_CAPABILITIES.into(),
                        CLIENT_CAPABILITIES.clone(),
                    );
                    m.insert(meta::CLIENT_INFO.into(), CLIENT_INFO.clone());
                }
            }
        }
        if wants_progress {
            // The client's own progress token may collide with another
            // client's; the child sees the bridge's id instead.
            if let Value::Object(p) = &mut params {
                let meta = p
                    .entry("_meta")
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Value::Object(m) = meta {
                    m.insert("progressToken".into(), local.to_value());
                }
            }
        } else if let Value::Object(p) = &mut params {
            if let Some(Value::Object(m)) = p.get_mut("_meta") {
                m.remove("progressToken");
            }
        }
        let line = encode(&OutgoingRequest::new(&local, method, Some(&params)));
        if let Err(e) = stdin.send(&line) {
            // This call fails; calls already sent wait for their answers.
            self.lock().remove(&local);
            return Err(ErrorObject::internal(format!("{e}; the call was not sent")));
        }
        Ok(Call {
            link: self.clone(),
            local,
            stdin,
            rx,
            asks: ask_rx,
            finished: false,
        })
    }

    /// Answers a request the child sent.
    pub(crate) async fn respond(&self, id: &RequestId, answer: Result<Value, ErrorObject>) {
        match &answer {
            Ok(result) => self.send(&OutgoingResult::new(id, result)),
            Err(e) => self.send(&OutgoingError::new(Some(id), e)),
        }
    }

    /// Sends a notification to the child (dropped while it is down).
    pub(crate) async fn notify(&self, method: &str, params: Value) {
        self.send(&OutgoingNotification::new(method, Some(&params)));
    }

    /// Sends a message no call waits on: dropped while the child is down,
    /// reported when its stdin refuses it.
    fn send(&self, msg: &impl serde::Serialize) {
        let stdin = self.lock().running.as_ref().map(|r| r.stdin.clone());
        if let Some(stdin) = stdin {
            if let Err(e) = stdin.send(&encode(msg)) {
                (self.report)(&format!("{e}; a message to it was dropped"));
            }
        }
    }

    /// Where problems with the child are reported.
    pub(crate) fn report(&self) -> Report {
        self.report.clone()
    }

    /// Whether requests carry the 2026-07-28 `_meta` envelope.
    pub(crate) fn set_modern(&self, on: bool) {
        self.modern.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether a child is running (started and not exited).
    pub(crate) fn is_running(&self) -> bool {
        self.lock().running.is_some()
    }

    /// Stops the child for good: its stdin is closed, waiting calls fail,
    /// and it is killed if it has not exited within a few seconds.
    pub(crate) fn stop(&self) {
        if let Some(r) = self.lock().running.take() {
            r.stdin.close("the bridge is stopping");
        }
        self.stop.cancel();
    }

    /// Spawns the child and wires its pipes; returns a receiver that
    /// completes when its stdout ends (it exited or closed it).
    pub(crate) fn spawn(
        self: &Arc<Self>,
        program: &str,
        args: &[String],
    ) -> Result<oneshot::Receiver<String>, String> {
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {program}: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(format!("{program}: no stdin/stdout pipe"));
        };
        let stdin = Outbox::new(Box::pin(stdin), self.settings.max_queued());
        let generation = {
            let mut st = self.lock();
            st.generation += 1;
            st.running = Some(Running {
                stdin: stdin.clone(),
                generation: st.generation,
            });
            st.generation
        };
        let (exited, exit_rx) = oneshot::channel();
        let link = self.clone();
        let stop = self.stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = link.read(stdout) => {}
                // Stopped: stdin is closed (the child's cue to exit); it is
                // killed below if it does not.
                _ = stop.cancelled() => {}
            }
            // The child's stdout ended: fail every waiting call now, close
            // its stdin, then reap the process for its status.
            let failed = link.down(generation);
            stdin.close("the stdio server exited");
            let status = match tokio::time::timeout(Duration::from_secs(5), child.wait()).await {
                Ok(Ok(s)) => s.to_string(),
                Ok(Err(e)) => e.to_string(),
                Err(_) => {
                    let _ = child.kill().await;
                    "closed its stdout and was killed".to_owned()
                }
            };
            let _ = exited.send(format!("{status}; {failed} call(s) in flight failed"));
        });
        Ok(exit_rx)
    }

    /// Marks the child down and fails every call waiting for it.
    fn down(&self, generation: u64) -> usize {
        let drained = {
            let mut st = self.lock();
            if st.running.as_ref().map(|r| r.generation) == Some(generation) {
                st.running = None;
            }
            st.asking.clear();
            st.pending.drain()
        };
        let n = drained.len();
        for (_, p) in drained {
            let _ = p.done.send(Err(ErrorObject::internal(EXITED)));
        }
        n
    }

    /// Reads the child's stdout until it ends.
    async fn read(&self, stdout: tokio::process::ChildStdout) {
        let max = self.settings.max_message;
        let mut reader = BufReader::new(stdout);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let mut limited = (&mut reader).take(max as u64 + 1);
            match limited.read_until(b'\n', &mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if buf.len() > max && buf.last() != Some(&b'\n') {
                (self.report)(&format!(
                    "the stdio server wrote a line longer than {max} bytes; dropped"
                ));
                // Skip the rest of the line.
                loop {
                    buf.clear();
                    let mut limited = (&mut reader).take(max as u64);
                    match limited.read_until(b'\n', &mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(_) if buf.last() == Some(&b'\n') => break,
                        Ok(_) => {}
                    }
                }
                continue;
            }
            let line = trim_line(&buf);
            if line.is_empty() {
                continue;
            }
            self.line(line).await;
        }
    }

    /// Handles one line from the child.
    async fn line(&self, line: &[u8]) {
        let msg = match classify(line) {
            Ok(m) => m,
            Err(_) => {
                let shown: String = String::from_utf8_lossy(line).chars().take(80).collect();
                (self.report)(&format!(
                    "the stdio server wrote a line that is not a JSON-RPC message; dropped: {shown:?}"
                ));
                return;
            }
        };
        match msg.kind().clone() {
            Kind::Response { id: Some(id) } => {
                let Some(p) = self.lock().remove(&id) else {
                    (self.report)(
                        "the stdio server answered a request the bridge did not send (or no longer waits for); dropped",
                    );
                    return;
                };
                let _ = p.done.send(answer(msg.bytes()));
            }
            Kind::Response { id: None } => {
                (self.report)("the stdio server sent an error answer with a null id; dropped");
            }
            Kind::Notification { method } => self.notification(&method, msg.bytes()),
            Kind::Request { id, method } => {
                if method == "ping" {
                    self.respond(&id, Ok(json!({}))).await;
                    return;
                }
                // stdio carries no link from a request of the child's to
                // the call that caused it: it goes to the one call able to
                // take it, and is refused when there are several (never
                // guessed at: the wrong client would see it).
                let v: Value = serde_json::from_slice(msg.bytes()).unwrap_or(Value::Null);
                let params = v.get("params").cloned().unwrap_or(Value::Null);
                let target = {
                    let st = self.lock();
                    match st.asking.len() {
                        1 => st.asking.values().next().cloned().ok_or(0),
                        n => Err(n),
                    }
                };
                let refusal = match target {
                    Ok(tx) => {
                        let ask = Ask {
                            id: id.clone(),
                            method: method.clone(),
                            params,
                        };
                        match tx.try_send(ask) {
                            Ok(()) => return,
                            Err(_) => "the call it belongs to is not taking requests".to_owned(),
                        }
                    }
                    Err(0) => "no call is in flight".to_owned(),
                    Err(n) => format!(
                        "{n} calls are in flight and stdio does not say which one it is for"
                    ),
                };
                (self.report)(&format!(
                    "the stdio server sent a {method} request; refused: {refusal}"
                ));
                self.respond(
                    &id,
                    Err(ErrorObject::internal(format!(
                        "the bridge cannot route {method} to a client: {refusal}"
                    ))),
                )
                .await;
            }
        }
    }

    fn notification(&self, method: &str, bytes: &[u8]) {
        match method {
            "notifications/progress" => {
                let v: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
                let p = &v["params"];
                let Some(token) = p.get("progressToken").and_then(RequestId::from_value) else {
                    return;
                };
                let st = self.lock();
                if let Some((_, pending)) = st.pending.get(&token) {
                    if let (Some(sink), Some(progress)) =
                        (&pending.progress, p["progress"].as_f64())
                    {
                        sink(
                            progress,
                            p["total"].as_f64(),
                            p["message"].as_str().map(str::to_owned),
                        );
                    }
                }
            }
            "notifications/tools/list_changed" => self.tools_changed.notify_one(),
            "notifications/prompts/list_changed" => self.prompts_changed.notify_one(),
            "notifications/resources/list_changed" => self.resources_changed.notify_one(),
            "notifications/resources/updated" => {
                let v: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
                if let Some(uri) = v["params"]["uri"].as_str() {
                    if self.updates.try_send(uri.to_owned()).is_err() {
                        (self.report)(
                            "resource updates arrive faster than they are passed on; one dropped",
                        );
                    }
                }
            }
            _ => {}
        }
    }
}

/// A request the child sent while a call was waiting (elicitation,
/// sampling, roots), to be answered with [`Link::respond`].
#[derive(Debug)]
pub(crate) struct Ask {
    pub(crate) id: RequestId,
    pub(crate) method: String,
    pub(crate) params: Value,
}

/// What [`Call::wait`] ended with.
pub(crate) enum Wait {
    /// The child's answer (or why there is none).
    Answer(Reply),
    /// The child asks the caller something first.
    Ask(Ask),
}

/// A request sent to the child. Dropped before its answer arrived, it is
/// forgotten and the child is told with `notifications/cancelled`.
pub(crate) struct Call {
    link: Arc<Link>,
    local: RequestId,
    stdin: Arc<Outbox>,
    rx: oneshot::Receiver<Reply>,
    asks: mpsc::Receiver<Ask>,
    finished: bool,
}

impl Call {
    /// The child this call went to.
    pub(crate) fn link(&self) -> &Arc<Link> {
        &self.link
    }

    /// Waits for the answer, a request from the child for this call, the
    /// timeout (restarted by each request from the child) or `cancel`.
    pub(crate) async fn wait(
        &mut self,
        cancel: Option<&tokio_util::sync::CancellationToken>,
    ) -> Wait {
        let cancelled = async {
            match cancel {
                Some(c) => c.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let timeout = self.link.settings.timeout;
        tokio::select! {
            r = &mut self.rx => {
                self.finished = true;
                Wait::Answer(match r {
                    Ok(answer) => answer,
                    // The sender was dropped: the child exited with this
                    // call in flight.
                    Err(_) => Err(ErrorObject::internal(EXITED)),
                })
            }
            Some(ask) = self.asks.recv() => Wait::Ask(ask),
            _ = tokio::time::sleep(timeout) => {
                self.abandon("timed out");
                Wait::Answer(Err(ErrorObject::internal(format!(
                    "the stdio server behind the bridge did not answer within {} s",
                    timeout.as_secs_f64()
                ))))
            }
            _ = cancelled => {
                self.abandon("cancelled by the client");
                Wait::Answer(Err(ErrorObject::internal("cancelled")))
            }
        }
    }

    /// Drops the call and tells the child it is cancelled.
    fn abandon(&mut self, reason: &str) {
        self.finished = true;
        if self.link.lock().remove(&self.local).is_some() {
            let params = json!({"requestId": self.local.to_value(), "reason": reason});
            // Best effort: a full queue means the child is not reading.
            let _ = self.stdin.send(&encode(&OutgoingNotification::new(
                "notifications/cancelled",
                Some(&params),
            )));
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if !self.finished {
            self.abandon("abandoned by the bridge");
        }
    }
}

impl Settings {
    /// Bytes the child's stdin queues at most while the child is not
    /// reading: two of the largest messages.
    fn max_queued(&self) -> usize {
        self.max_message.saturating_mul(2)
    }
}

/// The error of a call whose child exited before answering.
const EXITED: &str = "the stdio server behind the bridge exited before answering; the call may or may not have taken effect";

/// One line for the child's stdin, newline included: a message of the
/// protocol crate's `Outgoing*` types, serialized from borrowed parts.
fn encode(msg: &impl serde::Serialize) -> Vec<u8> {
    let mut line = Vec::with_capacity(256);
    // Serializing a Value, an id and strings into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut line, msg);
    line.push(b'\n');
    line
}

/// The members of an answer the call needs (the line is known to be a
/// JSON-RPC response with exactly one of them).
#[derive(serde::Deserialize)]
struct Answer<'a> {
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    // `"error": null` is an error too (a malformed one), not an absent one.
    #[serde(borrow, default, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue as serde::Deserialize>::deserialize(d).map(Some)
}

/// The outcome a call gets from the child's answer: its `result` as the
/// child wrote it (valid JSON, not parsed into a `Value`), or its `error`.
fn answer(bytes: &[u8]) -> Reply {
    let malformed = || ErrorObject::internal("the stdio server sent a malformed error");
    match serde_json::from_slice::<Answer<'_>>(bytes) {
        Ok(Answer { error: Some(e), .. }) => {
            Err(serde_json::from_str::<ErrorObject>(e.get()).unwrap_or_else(|_| malformed()))
        }
        Ok(Answer { result, .. }) => Ok(result.unwrap_or(RawValue::NULL).to_owned()),
        Err(_) => Err(malformed()),
    }
}

fn trim_line(b: &[u8]) -> &[u8] {
    let mut end = b.len();
    while end > 0 && matches!(b[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    &b[..end]
}

#[cfg(test)]
impl Link {
    /// A link whose "child" is the returned stdin (no process).
    pub(crate) fn fake(settings: Settings) -> (Arc<Self>, FakeStdin) {
        let link = Self::new(settings, Arc::new(|_| {}));
        let (tx, rx) = tokio::io::duplex(64 << 10);
        let stdin = Outbox::new(Box::pin(tx), link.settings.max_queued());
        link.lock().running = Some(Running {
            stdin,
            generation: 1,
        });
        (
            link,
            FakeStdin {
                rx,
                buf: Vec::new(),
            },
        )
    }
}

/// What a fake child reads on its stdin.
#[cfg(test)]
pub(crate) struct FakeStdin {
    rx: tokio::io::DuplexStream,
    buf: Vec<u8>,
}

#[cfg(test)]
impl FakeStdin {
    /// The next line written so far (without its newline), if any.
    pub(crate) fn try_recv(&mut self) -> Result<Vec<u8>, &'static str> {
        use tokio::io::AsyncRead;
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = self.buf.drain(..=i).collect();
                line.pop();
                return Ok(line);
            }
            let mut chunk = [0u8; 4096];
            let mut rb = tokio::io::ReadBuf::new(&mut chunk);
            match std::pin::Pin::new(&mut self.rx).poll_read(&mut cx, &mut rb) {
                std::task::Poll::Ready(Ok(())) if !rb.filled().is_empty() => {
                    self.buf.extend_from_slice(rb.filled());
                }
                _ => return Err("no whole line written"),
            }
        }
    }

    /// Stops reading: the child closed its stdin.
    pub(crate) fn close(self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            max_in_flight: 2,
            max_message: 1024,
            timeout: Duration::from_secs(30),
        }
    }

    fn line(rx: &mut FakeStdin) -> Value {
        let bytes = rx
            .try_recv()
            .unwrap_or_else(|e| panic!("nothing sent: {e}"));
        serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{e}"))
    }

    #[tokio::test]
    async fn ids_towards_the_child_are_the_bridges_and_bounded() {
        let (link, mut rx) = Link::fake(settings());
        let a = link
            .start(
                "tools/call",
                json!({"_meta": {"progressToken": "client"}}),
                None,
                false,
            )
            .await;
        let b = link.start("tools/call", json!({}), None, false).await;
        let (Ok(a), Ok(_b)) = (a, b) else {
            panic!("start failed")
        };
        let (ma, mb) = (line(&mut rx), line(&mut rx));
        assert_ne!(ma["id"], mb["id"]);
        // A client's progress token never reaches the child unless the
        // bridge replaced it with its own id.
        assert!(ma["params"]["_meta"].get("progressToken").is_none(), "{ma}");
        // Limits::max_in_flight is enforced.
        let third = link.start("tools/call", json!({}), None, false).await;
        assert!(third.is_err());
        // A call dropped unanswered is cancelled at the child and frees its slot.
        let id = ma["id"].clone();
        drop(a);
        let c = line(&mut rx);
        assert_eq!(c["method"], "notifications/cancelled");
        assert_eq!(c["params"]["requestId"], id);
        assert!(
            link.start("tools/call", json!({}), None, false)
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn answers_and_the_childs_requests_reach_the_right_call() {
        let (link, mut rx) = Link::fake(settings());
        let mut call = match link.start("tools/call", json!({}), None, true).await {
            Ok(c) => c,
            Err(e) => panic!("{e:?}"),
        };
        let id = line(&mut rx)["id"].clone();
        // A request of the child's goes to the one call taking them.
        link.line(br#"{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"m"}}"#)
            .await;
        match call.wait(None).await {
            Wait::Ask(ask) => {
                assert_eq!(ask.method, "elicitation/create");
                assert_eq!(ask.params["message"], "m");
            }
            Wait::Answer(a) => panic!("answer instead of the ask: {a:?}"),
        }
        // Garbage is dropped, not taken for an answer.
        link.line(b"not json").await;
        let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"ok": true}}).to_string();
        link.line(answer.as_bytes()).await;
        match call.wait(None).await {
            Wait::Answer(Ok(v)) => assert_eq!(v.get(), r#"{"ok":true}"#),
            _ => panic!("no answer"),
        }
    }

    #[tokio::test]
    async fn a_refused_write_fails_its_call_not_the_link() {
        let (link, mut rx) = Link::fake(settings());
        let mut sent = match link.start("tools/call", json!({}), None, false).await {
            Ok(c) => c,
            Err(e) => panic!("{e:?}"),
        };
        let id = line(&mut rx)["id"].clone();
        // The child closes its stdin but still answers what it read.
        rx.close();
        for _ in 0..3 {
            // Each call whose write is refused fails at once (never waits
            // for the timeout) and frees its slot: max_in_flight is 2.
            match link.start("tools/call", json!({}), None, false).await {
                Err(e) => assert!(e.message.contains("stdin is closed"), "{e:?}"),
                Ok(_) => panic!("a call was sent to a closed stdin"),
            }
        }
        assert!(link.is_running());
        let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"ok": 1}}).to_string();
        link.line(answer.as_bytes()).await;
        match sent.wait(None).await {
            Wait::Answer(Ok(v)) => assert_eq!(v.get(), r#"{"ok":1}"#),
            _ => panic!("the call sent before lost its answer"),
        }
    }

    #[test]
    fn answers_keep_the_childs_bytes_and_a_null_error_is_malformed() {
        let text = |r: Reply| r.map(|v| v.get().to_owned());
        // The result's bytes as the child wrote them.
        assert_eq!(
            text(answer(
                br#"{"jsonrpc":"2.0","id":1,"result":{"a": [1,2],"x-new":{}}}"#
            )),
            Ok(r#"{"a": [1,2],"x-new":{}}"#.to_owned())
        );
        assert_eq!(
            text(answer(br#"{"jsonrpc":"2.0","id":1,"result":null}"#)),
            Ok("null".to_owned())
        );
        assert_eq!(
            text(answer(br#"{"jsonrpc":"2.0","id":1}"#)),
            Ok("null".to_owned())
        );
        let e = answer(br#"{"id":1,"jsonrpc":"2.0","error":{"code":-32602,"message":"bad"}}"#);
        assert_eq!(e.err().map(|e| e.message), Some("bad".to_owned()));
        for malformed in [
            &br#"{"jsonrpc":"2.0","id":1,"error":null}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}"#,
        ] {
            let e = answer(malformed).map_err(|e| e.message);
            assert!(matches!(&e, Err(m) if m.contains("malformed")), "{e:?}");
        }
    }

    #[tokio::test]
    async fn the_childs_request_with_no_call_to_take_it_is_refused() {
        let (link, mut rx) = Link::fake(settings());
        link.line(br#"{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{}}"#)
            .await;
        let r = line(&mut rx);
        assert_eq!(r["id"], 5);
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("no call"),
            "{r}"
        );
        link.line(br#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#)
            .await;
        assert_eq!(
            line(&mut rx),
            json!({"jsonrpc": "2.0", "id": 6, "result": {}})
        );
    }
}
