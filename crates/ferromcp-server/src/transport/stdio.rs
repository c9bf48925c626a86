//! stdio transport: newline-delimited JSON-RPC on stdin/stdout.
//!
//! - Lines longer than [`Limits::max_line_bytes`](crate::Limits) are
//!   discarded as they stream in and answered with -32600; memory stays
//!   bounded.
//! - At most [`Limits::max_in_flight`](crate::Limits) requests run at once;
//!   reading pauses while the cap is reached (backpressure instead of an
//!   unbounded queue), but notifications such as `notifications/cancelled`
//!   already read are still handled in order.
//! - One connection task owns stdout; every message is one line.
//!   [`serve_stdio`] also points file descriptor 1 at stderr, so a stray
//!   `println!` in a handler cannot corrupt the protocol stream.
//! - The first request decides the era of the process.
//!
//! Hot path (bench/RESULTS.md): when stdin and stdout are pipes (the usual
//! case: a client spawned us), they are reopened non-blocking and driven by
//! the runtime's reactor rather than tokio's blocking pool (one
//! `spawn_blocking` hand-off per read and per write before). A request whose
//! handler completes on its first poll is answered inline by the connection
//! task, with no task spawned; only handlers that wait run as tasks of their
//! own. Answers are collected in one buffer and written when no more input
//! is ready, so pipelined requests cost one `write` per batch. A tty, file or
//! socket on stdin/stdout falls back to tokio's blocking handles.
//!
//! [`serve_stdio`]: crate::Server::serve_stdio
// STDIO-*, STDIO-01, STDIO-02, ERA-04

use crate::admit::{Call, Modern, ModernInput, Text, admit_handshake, admit_modern};
use crate::context::{ContextParts, Outbound};
use crate::dispatch::{ClientRequester, Legacy};
use crate::error::Error;
use crate::future::Reply;
use crate::listen;
use crate::meta_cell::MetaCell;
use crate::server::Server;
use crate::session::HandshakeSession;
use crate::shared::Shared;
use crate::tool::BoxFuture;
use bytes::Bytes;
use ferromcp_protocol::era::StdioEra;
use ferromcp_protocol::framing::{FrameRef, LineFramer};
use ferromcp_protocol::jsonrpc::{
    Message, OutgoingError, OutgoingRequest, OutgoingResult, RequestId, decode_message, to_vec,
};
use ferromcp_protocol::ladder::ParamsProbe;
use ferromcp_protocol::method::ClientRequest;
use ferromcp_protocol::types::{CancelledNotificationParams, ClientCapabilities};
use ferromcp_protocol::{ErrorObject, ProtocolVersion};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

impl Server {
    /// Serves this server on the process's stdin and stdout until stdin
    /// closes. File descriptor 1 is redirected to stderr first (on Unix), so
    /// only protocol messages reach the real stdout.
    ///
    /// Pipes are driven by the runtime's I/O driver, so the runtime needs
    /// I/O enabled (`#[tokio::main]` and `Builder::enable_all` do that). The
    /// connection runs as a task of its own: on a multi-thread runtime the
    /// worker that receives the readiness event serves the request, with no
    /// hand-off to the thread blocked in `block_on`.
    pub async fn serve_stdio(self) -> Result<(), Error> {
        let out = protect_stdout().map_err(Error::io)?;
        let (reader, writer) = stdio_handles(out);
        match tokio::spawn(serve(self.shared, reader, writer)).await {
            Ok(r) => r,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // Cancelled: the runtime is shutting down.
            Err(_) => Ok(()),
        }
    }

    // Foreign type: the transports are tokio I/O; any tokio byte stream (pipe, socket, in-memory
    // duplex) works.
    /// Serves newline-delimited JSON-RPC over any reader/writer pair (pipes,
    /// sockets, in-memory duplexes in tests).
    pub async fn serve_io<R, W>(self, reader: R, writer: W) -> Result<(), Error>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        serve(self.shared, reader, writer).await
    }

    // Foreign type: the transports are tokio I/O; any tokio byte stream (pipe, socket, in-memory
    // duplex) works.
    /// Serves this server over a fresh in-memory duplex, on a task of its
    /// own, and returns the other end: a client speaking newline-delimited
    /// JSON-RPC on it talks to this server as if it were a stdio child,
    /// without a process or a socket. With `ferromcp-client`:
    /// `ClientBuilder::new(..).connect_io(read, write)`. Both eras work,
    /// decided by the client's first request. The server stops when the
    /// client shuts the write half down (or drops both halves).
    ///
    /// Must be called within a Tokio runtime.
    pub fn serve_in_memory(
        self,
    ) -> (
        tokio::io::ReadHalf<tokio::io::DuplexStream>,
        tokio::io::WriteHalf<tokio::io::DuplexStream>,
    ) {
        let (client, server) = tokio::io::duplex(IN_MEMORY_BUFFER);
        let (read, write) = tokio::io::split(server);
        tokio::spawn(async move {
            if let Err(e) = self.serve_io(read, write).await {
                tracing::debug!(error = %e, "the in-memory connection ended with an error");
            }
        });
        tokio::io::split(client)
    }
}

/// Moves the real stdout to a new descriptor for protocol output and points
/// descriptor 1 at stderr.
#[cfg(unix)]
fn protect_stdout() -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::AsFd;
    let protocol = std::io::stdout().as_fd().try_clone_to_owned()?;
    let stderr = std::io::stderr();
    rustix::stdio::dup2_stdout(stderr.as_fd())?;
    Ok(protocol)
}

#[cfg(not(unix))]
fn protect_stdout() -> std::io::Result<tokio::io::Stdout> {
    Ok(tokio::io::stdout())
}

/// Non-blocking, reactor-driven handles when stdin / the protocol stdout
/// are pipes; tokio's blocking-pool handles otherwise (tty, file, socket).
///
/// The pipes are reopened through `/proc/self/fd`, which gives this process
/// new open file descriptions: `O_NONBLOCK` is set on those only, never on
/// the descriptions shared with the parent (a shell or a client that
/// expects blocking I/O on its ends).
#[cfg(target_os = "linux")]
fn stdio_handles(
    out: std::os::fd::OwnedFd,
) -> (
    impl AsyncRead + Unpin + Send + 'static,
    impl AsyncWrite + Unpin + Send + 'static,
) {
    use std::os::fd::AsRawFd;
    use tokio::net::unix::pipe;
    use tokio_util::either::Either;
    let reader = match pipe::OpenOptions::new().open_receiver("/proc/self/fd/0") {
        Ok(r) => Either::Left(r),
        Err(_) => Either::Right(tokio::io::stdin()),
    };
    let path = format!("/proc/self/fd/{}", out.as_raw_fd());
    let writer = match pipe::OpenOptions::new().open_sender(path) {
        // `out` closes here; the reopened description keeps the pipe open.
        Ok(w) => Either::Left(w),
        Err(_) => Either::Right(tokio::fs::File::from_std(std::fs::File::from(out))),
    };
    (reader, writer)
}

#[cfg(all(unix, not(target_os = "linux")))]
fn stdio_handles(
    out: std::os::fd::OwnedFd,
) -> (
    impl AsyncRead + Unpin + Send + 'static,
    impl AsyncWrite + Unpin + Send + 'static,
) {
    (
        tokio::io::stdin(),
        tokio::fs::File::from_std(std::fs::File::from(out)),
    )
}

#[cfg(not(unix))]
fn stdio_handles(
    out: tokio::io::Stdout,
) -> (
    impl AsyncRead + Unpin + Send + 'static,
    impl AsyncWrite + Unpin + Send + 'static,
) {
    (tokio::io::stdin(), out)
}

/// Bytes buffered in each direction of [`Server::serve_in_memory`]'s duplex.
const IN_MEMORY_BUFFER: usize = 256 * 1024;

/// Per-connection state.
struct Conn {
    shared: Arc<Shared>,
    tx: mpsc::Sender<Bytes>,
    /// Handed to every request context (one shared allocation).
    outbound: Arc<dyn Outbound>,
    in_flight: Mutex<HashMap<RequestId, CancellationToken>>,
    pending: Mutex<HashMap<RequestId, oneshot::Sender<Result<Value, ErrorObject>>>>,
    next_id: AtomicI64,
    era: Mutex<StdioEra>,
    session: Mutex<Option<Arc<HandshakeSession>>>,
    listens: std::sync::atomic::AtomicUsize,
    /// Cancelled when the keep-alive gives the client up for dead.
    dead: CancellationToken,
}

impl Conn {
    async fn send(&self, msg: Bytes) {
        // The writer only stops when stdout is gone; then nothing can be sent.
        let _ = self.tx.send(msg).await;
    }

    async fn send_error(&self, id: Option<&RequestId>, e: &ErrorObject) {
        self.send(Bytes::from(to_vec(&OutgoingError::new(id, e))))
            .await;
    }

    fn session(&self) -> Option<Arc<HandshakeSession>> {
        self.session.lock().ok().and_then(|g| g.clone())
    }

    // BASE-03
    /// Ids must not collide with in-flight ones.
    fn is_in_flight(&self, id: &RequestId) -> bool {
        match self.in_flight.lock() {
            Ok(map) => !map.is_empty() && map.contains_key(id),
            Err(_) => true,
        }
    }

    /// A new cancellation token recorded for the in-flight request `id`;
    /// `None` if that id is already in flight.
    fn register(&self, id: &RequestId) -> Option<CancellationToken> {
        let Ok(mut map) = self.in_flight.lock() else {
            return None;
        };
        if map.contains_key(id) {
            return None;
        }
        let token = CancellationToken::new();
        map.insert(id.clone(), token.clone());
        Some(token)
    }

    fn unregister(&self, id: &RequestId) {
        if let Ok(mut m) = self.in_flight.lock() {
            m.remove(id);
        }
    }
}

struct StdioOutbound(mpsc::Sender<Bytes>);

impl Outbound for StdioOutbound {
    fn notify(&self, message: Bytes) {
        // Lossy under pressure (PROG-05): never block a handler on stdout.
        let _ = self.0.try_send(message);
    }
}

struct StdioRequester(Arc<Conn>);

impl ClientRequester for StdioRequester {
    fn request(
        &self,
        method: &'static str,
        params: Box<serde_json::value::RawValue>,
    ) -> BoxFuture<Result<Value, ErrorObject>> {
        let conn = self.0.clone();
        Box::pin(async move {
            let id = RequestId::string(format!(
                "srv-{}",
                conn.next_id.fetch_add(1, Ordering::Relaxed)
            ));
            let (tx, rx) = oneshot::channel();
            if let Ok(mut p) = conn.pending.lock() {
                p.insert(id.clone(), tx);
            }
            conn.send(Bytes::from(to_vec(&OutgoingRequest::new(
                &id,
                method,
                Some(&params),
            ))))
            .await;
            match rx.await {
                Ok(r) => r,
                Err(_) => Err(ErrorObject::internal("the client went away")),
            }
        })
    }
}

/// Answers collected by the connection task, written when no more input is
/// ready (or the buffer passes [`FLUSH_AT`]).
struct Output<W> {
    w: W,
    buf: Vec<u8>,
}

/// Write the collected answers once they reach this many bytes, even if
/// more input is ready.
const FLUSH_AT: usize = 64 * 1024;

impl<W: AsyncWrite + Unpin> Output<W> {
    fn push(&mut self, msg: &[u8]) {
        self.buf.extend_from_slice(msg);
        self.buf.push(b'\n');
    }

    async fn flush(&mut self) -> std::io::Result<()> {
        if !self.buf.is_empty() {
            let r = self.w.write_all(&self.buf).await;
            self.buf.clear();
            r?;
            self.w.flush().await?;
        }
        Ok(())
    }

    async fn flush_if_full(&mut self) -> std::io::Result<()> {
        if self.buf.len() >= FLUSH_AT {
            self.flush().await?;
        }
        Ok(())
    }
}

/// The connection task's state besides the framer.
struct Driver<W> {
    conn: Arc<Conn>,
    rx: mpsc::Receiver<Bytes>,
    out: Output<W>,
    permits: Arc<Semaphore>,
    tasks: JoinSet<()>,
    shutdown: CancellationToken,
}

impl<W: AsyncWrite + Unpin> Driver<W> {
    /// Moves what tasks have queued (answers, notifications) to the output.
    fn collect(&mut self) {
        while let Ok(m) = self.rx.try_recv() {
            self.out.push(&m);
        }
    }

    /// A permit for one more request. While the cap is reached, queued
    /// output keeps flowing, so tasks holding permits can finish.
    async fn permit(&mut self) -> std::io::Result<Option<OwnedSemaphorePermit>> {
        if let Ok(p) = self.permits.clone().try_acquire_owned() {
            return Ok(Some(p));
        }
        loop {
            self.collect();
            self.out.flush().await?;
            tokio::select! {
                p = self.permits.clone().acquire_owned() => return Ok(p.ok()),
                Some(m) = self.rx.recv() => self.out.push(&m),
            }
        }
    }
}

async fn serve<R, W>(shared: Arc<Shared>, mut reader: R, writer: W) -> Result<(), Error>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let limits = shared.limits().clone();
    let (tx, rx) = mpsc::channel::<Bytes>(1024);
    let conn = Arc::new(Conn {
        shared,
        outbound: Arc::new(StdioOutbound(tx.clone())),
        tx,
        in_flight: Mutex::new(HashMap::new()),
        pending: Mutex::new(HashMap::new()),
        next_id: AtomicI64::new(1),
        era: Mutex::new(StdioEra::default()),
        session: Mutex::new(None),
        listens: std::sync::atomic::AtomicUsize::new(0),
        dead: CancellationToken::new(),
    });
    let mut d = Driver {
        conn,
        rx,
        out: Output {
            w: writer,
            buf: Vec::with_capacity(16 * 1024),
        },
        permits: Arc::new(Semaphore::new(limits.max_in_flight.max(1))),
        tasks: JoinSet::new(),
        shutdown: CancellationToken::new(),
    };
    let result = drive(&mut d, &mut reader, limits.max_line_bytes).await;
    // stdin closed (STDIO-09): listen streams end; in-flight requests finish
    // (bounded by the handler timeout) so piped input gets their answers.
    d.shutdown.cancel();
    let finished = match result {
        Ok(()) => finish(&mut d).await,
        Err(_) => Ok(()),
    };
    if let Ok(mut p) = d.conn.pending.lock() {
        p.clear();
    }
    match result.and(finished) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::io(e)),
    }
}

/// Waits for the running handlers, writing their answers.
async fn finish<W: AsyncWrite + Unpin>(d: &mut Driver<W>) -> std::io::Result<()> {
    loop {
        d.collect();
        d.out.flush().await?;
        tokio::select! {
            t = d.tasks.join_next() => if t.is_none() { break },
            Some(m) = d.rx.recv() => d.out.push(&m),
        }
    }
    d.collect();
    d.out.flush().await
}

/// Reads and serves until end of input.
async fn drive<R, W>(d: &mut Driver<W>, reader: &mut R, max_line: usize) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut framer = LineFramer::new(max_line);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // Nothing more is ready: what the last input produced goes out now.
        d.collect();
        d.out.flush().await?;
        let n = tokio::select! {
            biased;
            r = reader.read(&mut buf) => r?,
            Some(m) = d.rx.recv() => {
                d.out.push(&m);
                continue;
            }
            _ = d.conn.dead.cancelled() => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the client did not answer a keep-alive ping; connection ended",
                ));
            }
        };
        if n == 0 {
            if let Some(ferromcp_protocol::framing::Frame::Line(l)) = framer.finish() {
                handle_frame(d, FrameRef::Line(&l)).await?;
            }
            return Ok(());
        }
        framer.push(buf.get(..n).unwrap_or_default());
        while let Some(f) = framer.next_line() {
            handle_frame(d, f).await?;
            d.out.flush_if_full().await?;
        }
        while d.tasks.try_join_next().is_some() {}
    }
}

async fn handle_frame<W: AsyncWrite + Unpin>(
    d: &mut Driver<W>,
    frame: FrameRef<'_>,
) -> std::io::Result<()> {
    let line = match frame {
        FrameRef::TooLong => {
            let e = ErrorObject::invalid_request(format_args!(
                "message exceeds the {} byte line limit",
                d.conn.shared.limits().max_line_bytes
            ));
            d.out.push(&to_vec(&OutgoingError::new(None, &e)));
            return Ok(());
        }
        FrameRef::Line(l) => l,
    };
    if line.iter().all(|b| b.is_ascii_whitespace()) {
        return Ok(());
    }
    // The common request, a modern `tools/call`, is decoded, probed and
    // typed in one scan of the line (as on HTTP); anything else, or
    // anything unusual about it, takes the general path below, which
    // answers it exactly as before.
    if let Some(call) =
        ferromcp_protocol::ladder::decode_tools_call(line).filter(|c| c.probe.has_modern_envelope())
    {
        return serve_request(d, Incoming::ToolsCall(call), line).await;
    }
    let msg = match decode_message(line) {
        Ok(m) => m,
        Err(e) => {
            d.out
                .push(&to_vec(&OutgoingError::new(e.id.as_ref(), &e.error)));
            return Ok(());
        }
    };
    let conn = &d.conn;
    match msg {
        Message::Response(r) => {
            // An answer to one of our handshake-era requests.
            let Some(id) = r.id else { return Ok(()) };
            let waiter = conn.pending.lock().ok().and_then(|mut p| p.remove(&id));
            if let Some(w) = waiter {
                let out = r
                    .outcome
                    .map(|raw| serde_json::from_str(raw.get()).unwrap_or(Value::Null));
                let _ = w.send(out);
            }
        }
        Message::Notification(n) => {
            if n.method == ferromcp_protocol::method::NOTIFICATIONS_CANCELLED {
                // CANCEL-05: malformed or unknown cancellations are ignored.
                let p = n.params.and_then(|p| {
                    serde_json::from_str::<CancelledNotificationParams>(p.get()).ok()
                });
                if let Some(id) = p.and_then(|p| p.request_id) {
                    if let Some(t) = conn.in_flight.lock().ok().and_then(|m| m.get(&id).cloned()) {
                        t.cancel();
                    }
                }
            }
        }
        Message::Request(req) => return serve_request(d, Incoming::General(req), line).await,
    }
    Ok(())
}

/// A request as read from a line.
// Lives on the stack for the one call that serves it; boxing the large
// variant would add an allocation to every request.
#[allow(clippy::large_enum_variant)]
enum Incoming<'a> {
    /// Decoded by the general path.
    General(ferromcp_protocol::Request<'a>),
    /// A modern `tools/call` decoded, probed and typed in one scan
    /// (`ferromcp_protocol::ladder::decode_tools_call`).
    ToolsCall(ferromcp_protocol::ladder::ProbedCall<'a>),
}

impl Incoming<'_> {
    fn id(&self) -> &RequestId {
        match self {
            Incoming::General(r) => &r.id,
            Incoming::ToolsCall(c) => &c.id,
        }
    }
}

/// Serves one request: a permit, the era and the ladder, then the
/// handler, answered inline when it is ready on its first poll.
async fn serve_request<W: AsyncWrite + Unpin>(
    d: &mut Driver<W>,
    req: Incoming<'_>,
    line: &[u8],
) -> std::io::Result<()> {
    let Some(permit) = d.permit().await? else {
        return Ok(());
    };
    let conn = &d.conn;
    let id = req.id().clone();
    match prepare(conn, req, line) {
        Err(e) => d.out.push(&to_vec(&OutgoingError::new(Some(&id), &e))),
        Ok(Prepared::Reply(bytes)) => d.out.push(&bytes),
        Ok(Prepared::Listen(filter)) => {
            drop(permit);
            start_listen(conn, id, filter, &mut d.tasks, &d.shutdown);
        }
        Ok(Prepared::Call(call, parts, legacy)) => {
            if conn.is_in_flight(&id) {
                let e = ErrorObject::invalid_request(format_args!(
                    "request id {id} is already in flight"
                ));
                d.out.push(&to_vec(&OutgoingError::new(Some(&id), &e)));
                return Ok(());
            }
            // Two tokens: the handler's own (in its context), and the
            // client's, made only when the handler does not finish on its
            // first poll. A handler timeout cancels only the handler's, so
            // its -32603 still goes out; notifications/cancelled cancels
            // the client's, which cancels the handler's, and nothing is
            // sent (CANCEL-03).
            let handler_token = parts.cancel.clone();
            let mut fut = conn.shared.clone().dispatch(call, *parts, legacy);
            // Most handlers finish on their first poll: answer
            // inline, no task, no in-flight entry (nothing can
            // cancel a request between reading and answering it).
            if let Poll::Ready(reply) = futures_util::poll!(&mut fut) {
                match reply {
                    Ok(bytes) => d.out.push(&bytes),
                    Err(f) => d
                        .out
                        .push(&to_vec(&OutgoingError::new(Some(&id), f.error()))),
                }
                return Ok(());
            }
            let Some(token) = conn.register(&id) else {
                // Unreachable after the check above (one reader);
                // answered rather than assumed.
                let e = ErrorObject::invalid_request(format_args!(
                    "request id {id} is already in flight"
                ));
                d.out.push(&to_vec(&OutgoingError::new(Some(&id), &e)));
                return Ok(());
            };
            let conn = conn.clone();
            d.tasks.spawn(async move {
                let reply: Option<Reply> = tokio::select! {
                    r = fut => Some(r),
                    _ = token.cancelled() => {
                        handler_token.cancel();
                        None
                    }
                };
                conn.unregister(&id);
                // CANCEL-03: nothing is sent for a cancelled request.
                match reply {
                    Some(Ok(bytes)) if !token.is_cancelled() => conn.send(bytes).await,
                    Some(Err(f)) if !token.is_cancelled() => {
                        conn.send_error(Some(&id), f.error()).await
                    }
                    _ => {}
                }
                drop(permit);
            });
        }
    }
    Ok(())
}

enum Prepared {
    Reply(Bytes),
    Listen(ferromcp_protocol::types::SubscriptionFilter),
    Call(Call, Box<ContextParts>, Legacy),
}

// LEGACY-06
/// Keep-alive ([`crate::Limits::keep_alive_interval`]): pings
/// the client of a handshake-era connection every interval; any answer (an
/// error too) proves it alive, none within the timeout ends the connection
/// (`serve_stdio` returns a timed-out I/O error). The modern era has no
/// server-to-client requests, so nothing is sent there.
fn start_keep_alive(conn: &Arc<Conn>) {
    let Some(interval) = conn.shared.limits().keep_alive_interval else {
        return;
    };
    let timeout = conn.shared.limits().keep_alive_timeout;
    let weak = Arc::downgrade(conn);
    tokio::spawn(async move {
        let start = tokio::time::Instant::now() + interval;
        let mut tick =
            tokio::time::interval_at(start, interval.max(std::time::Duration::from_millis(1)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(conn) = weak.upgrade() else { return };
            if conn.tx.is_closed() || conn.dead.is_cancelled() {
                return;
            }
            // "{}" is valid JSON; the `else` is never taken.
            let Ok(empty) = serde_json::value::RawValue::from_string("{}".to_owned()) else {
                return;
            };
            let ping = StdioRequester(conn.clone()).request("ping", empty);
            if tokio::time::timeout(timeout, ping).await.is_err() {
                tracing::warn!(
                    ?timeout,
                    "the client did not answer a keep-alive ping; ending the connection"
                );
                conn.dead.cancel();
                return;
            }
        }
    });
}

// ERA-12
/// Forwards list changes and resource updates to the handshake-era session
/// of this process, until stdout is gone.
fn forward_session_changes(conn: &Arc<Conn>, session: Arc<HandshakeSession>) {
    let conn = conn.clone();
    let mut rx = conn.shared.bus().subscribe();
    tokio::spawn(async move {
        loop {
            match rx.recv().await {
                Ok(c) => {
                    if let Some(m) = listen::render_for_session(&conn.shared, &c, &session) {
                        if conn.tx.send(m).await.is_err() {
                            break;
                        }
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(_) => break,
            }
        }
    });
}

/// The synchronous part of serving a request (read from `line`): era,
/// ladder, typed decode.
fn prepare(conn: &Arc<Conn>, req: Incoming<'_>, line: &[u8]) -> Result<Prepared, ErrorObject> {
    let req = match req {
        Incoming::General(r) => r,
        Incoming::ToolsCall(call) => return prepare_call(conn, call, line),
    };
    let shared = &conn.shared;
    let probe = ParamsProbe::parse(req.params);
    let modern_envelope = probe.has_modern_envelope();
    let init_version = (req.method == "initialize")
        .then(|| {
            req.params
                .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
        })
        .flatten()
        .and_then(|v| {
            v.get("protocolVersion")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
    let era = match conn.era.lock() {
        Ok(mut e) => e.admit(
            &req.method,
            modern_envelope,
            init_version.as_deref(),
            shared.modern_versions(),
        )?,
        Err(_) => return Err(ErrorObject::internal("connection state poisoned")),
    };
    match era {
        StdioEra::Modern | StdioEra::Undecided => {
            let input = ModernInput::Request {
                id: &req.id,
                method: &req.method,
                params: req.params,
                probe,
            };
            match admit_modern(shared, input, None)? {
                Modern::Call(call, route) => {
                    Ok(modern_call(conn, &req.id, &req.method, call, route, line))
                }
                Modern::Listen(filter) => Ok(Prepared::Listen(filter)),
            }
        }
        StdioEra::Handshake => {
            let call = admit_handshake(shared, &req.method, req.params)?;
            if let Some(ClientRequest::Initialize(p)) = call.request.known() {
                let (result, session) = shared.initialize(p)?;
                let session = Arc::new(session);
                let first = match conn.session.lock() {
                    Ok(mut s) => s.replace(session.clone()).is_none(),
                    Err(_) => false,
                };
                if first {
                    forward_session_changes(conn, session);
                    start_keep_alive(conn);
                }
                return Ok(Prepared::Reply(Bytes::from(to_vec(&OutgoingResult::new(
                    &req.id, &result,
                )))));
            }
            let outbound = conn.outbound.clone();
            let session = conn.session();
            let (version, caps, level) = match &session {
                Some(s) => (s.version, s.capabilities.clone(), s.log_level()),
                None => (
                    ProtocolVersion::V2025_03_26,
                    Arc::new(ClientCapabilities::default()),
                    None,
                ),
            };
            let meta = probe.meta.unwrap_or_default();
            let parts = ContextParts {
                capabilities: Some(caps),
                log_level: level,
                outbound: Some(outbound),
                ..ContextParts::new(
                    req.id.clone(),
                    &req.method,
                    version,
                    meta,
                    CancellationToken::new(),
                )
            };
            let legacy = Legacy {
                requester: Some(Arc::new(StdioRequester(conn.clone()))),
                session,
                shared_record: false,
            };
            Ok(Prepared::Call(call, Box::new(parts), legacy))
        }
    }
}

/// [`prepare`] for a `tools/call` with a modern envelope, decoded in one
/// scan: the same era rule and the same admission.
fn prepare_call(
    conn: &Arc<Conn>,
    call: ferromcp_protocol::ladder::ProbedCall<'_>,
    line: &[u8],
) -> Result<Prepared, ErrorObject> {
    use ferromcp_protocol::method::TOOLS_CALL;
    let shared = &conn.shared;
    // A modern envelope settles an undecided process as modern and is
    // refused on a handshake-era one, as in `prepare`.
    match conn.era.lock() {
        Ok(mut e) => e.admit(TOOLS_CALL, true, None, shared.modern_versions())?,
        Err(_) => return Err(ErrorObject::internal("connection state poisoned")),
    };
    let id = call.id.clone();
    match admit_modern(shared, ModernInput::ToolsCall(call, Text::Line), None)? {
        Modern::Call(call, route) => Ok(modern_call(conn, &id, TOOLS_CALL, call, route, line)),
        // A tools/call is never a listen.
        Modern::Listen(_) => Err(ErrorObject::internal("unexpected listen")),
    }
}

/// The call and context of an admitted modern request, read from `line`.
fn modern_call(
    conn: &Arc<Conn>,
    id: &RequestId,
    method: &str,
    call: Call,
    route: ferromcp_protocol::ladder::ModernRoute,
    line: &[u8],
) -> Prepared {
    let parts = ContextParts {
        log_level: route.meta.log_level(),
        outbound: Some(conn.outbound.clone()),
        ..ContextParts::new(
            id.clone(),
            method,
            route.version,
            MetaCell::admitted_from_line(route.meta, line),
            CancellationToken::new(),
        )
    };
    Prepared::Call(call, Box::new(parts), Legacy::default())
}

fn start_listen(
    conn: &Arc<Conn>,
    id: RequestId,
    requested: ferromcp_protocol::types::SubscriptionFilter,
    tasks: &mut JoinSet<()>,
    shutdown: &CancellationToken,
) {
    let max = conn.shared.limits().max_listen_streams;
    if conn.listens.fetch_add(1, Ordering::AcqRel) >= max {
        conn.listens.fetch_sub(1, Ordering::AcqRel);
        let conn = conn.clone();
        tasks.spawn(async move {
            conn.send_error(
                Some(&id),
                &ErrorObject::internal("too many open subscriptions"),
            )
            .await;
        });
        return;
    }
    let Some(token) = conn.register(&id) else {
        conn.listens.fetch_sub(1, Ordering::AcqRel);
        return;
    };
    let conn = conn.clone();
    let shutdown = shutdown.clone();
    tasks.spawn(async move {
        let filter = listen::honoured(&conn.shared, &requested);
        // Subscribe before acknowledging so nothing published in between is lost (SUB-13).
        let mut rx = conn.shared.bus().subscribe();
        conn.send(listen::acknowledgement(&id, &filter)).await;
        loop {
            tokio::select! {
                _ = token.cancelled() => break,
                _ = shutdown.cancelled() => {
                    conn.send(listen::ended(&id)).await;
                    break;
                }
                change = rx.recv() => match change {
                    Ok(c) => {
                        if let Some(msg) = listen::render_for_listen(&c, &filter, &id) {
                            conn.send(msg).await;
                        }
                    }
                    // Overflowed or bus gone: end the stream; the client re-listens (SUB-11).
                    Err(_) => {
                        conn.send(listen::ended(&id)).await;
                        break;
                    }
                },
            }
        }
        conn.unregister(&id);
        conn.listens.fetch_sub(1, Ordering::AcqRel);
    });
}

#[cfg(test)]
mod tests {
    use crate::{Limits, NoArgs, RequestContext, Server, tool};
    use std::time::Duration;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    /// One line: a 2026-07-28 `tools/call` of `tool` with no arguments.
    fn modern_call(id: u32, tool: &str) -> String {
        let env = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","_meta":{env}}}}}"#
        ) + "\n"
    }

    // CANCEL-03: a client's notifications/cancelled reaches the handler's
    // own token (what its spawned work watches), and nothing is sent.
    #[tokio::test]
    async fn a_client_cancellation_cancels_the_handlers_token() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let seen = Arc::new(AtomicBool::new(false));
        let flag = seen.clone();
        let server = Server::builder("t", "1")
            .tool(tool("wait").handler(move |_: NoArgs, cx: RequestContext| {
                let flag = flag.clone();
                async move {
                    let watcher = cx.clone();
                    tokio::spawn(async move {
                        watcher.cancelled().await;
                        flag.store(true, Ordering::SeqCst);
                    });
                    tokio::time::sleep(Duration::from_secs(600)).await;
                    "slept"
                }
            }))
            .build()
            .unwrap_or_else(|e| panic!("build: {e}"));
        let (client_read, mut client_write) = server.serve_in_memory();
        let mut lines = BufReader::new(client_read).lines();
        client_write
            .write_all(modern_call(1, "wait").as_bytes())
            .await
            .ok();
        // Give the handler time to start before cancelling it.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let cancel =
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#;
        client_write
            .write_all(format!("{cancel}\n").as_bytes())
            .await
            .ok();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !seen.load(Ordering::SeqCst) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(
            seen.load(Ordering::SeqCst),
            "the handler's token was not cancelled"
        );
        let more = tokio::time::timeout(Duration::from_millis(200), lines.next_line()).await;
        assert!(more.is_err(), "nothing for the cancelled request: {more:?}");
    }

    /// Regression: the handler timeout cancelled the same token that
    /// `notifications/cancelled` uses, so the stdio loop took a timed-out
    /// request for a cancelled one and sent nothing at all — the client
    /// waited forever instead of getting -32603.
    #[tokio::test]
    async fn handler_timeout_is_answered_and_cancellation_is_not() {
        let limits = Limits {
            handler_timeout: Duration::from_millis(50),
            ..Limits::default()
        };
        let server = Server::builder("t", "1")
            .limits(limits)
            .tool(
                tool("hang").handler(|_: NoArgs, cx: RequestContext| async move {
                    tokio::select! {
                        _ = cx.cancelled() => "cancelled",
                        _ = tokio::time::sleep(Duration::from_secs(600)) => "slept",
                    }
                }),
            )
            .build()
            .unwrap_or_else(|e| panic!("build: {e}"));
        let (client_read, mut client_write) = server.serve_in_memory();
        let mut lines = BufReader::new(client_read).lines();
        let call = |id| modern_call(id, "hang");
        // Cancelled by the client: no answer. Timed out: -32603.
        let cancel =
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#;
        let input = format!("{}{cancel}\n{}", call(1), call(2));
        client_write.write_all(input.as_bytes()).await.ok();
        let line = tokio::time::timeout(Duration::from_secs(5), lines.next_line()).await;
        let line = line.ok().and_then(|l| l.ok()).flatten().unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(v["id"], 2, "{line}");
        assert_eq!(v["error"]["code"], -32603, "{line}");
        let more = tokio::time::timeout(Duration::from_millis(200), lines.next_line()).await;
        assert!(more.is_err(), "nothing for the cancelled request: {more:?}");
    }
}
