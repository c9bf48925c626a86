//! stdio: the server is a child process speaking newline-delimited JSON-RPC.
//!
//! The child runs in its own process group, so shutdown reaches every process
//! it started. `close` follows the spec's shutdown order: close stdin, wait, SIGTERM the group,
//! wait, SIGKILL it, and reap the child. Dropping the transport without
//! `close` kills the group at once; tokio reaps the child (no zombies).
//! stderr is forwarded, discarded or captured line by line (never
//! an error signal; captured lines are decoded lossily and cut at
//! `max_line_bytes`, so a hostile server cannot stall or bloat the capture).
//!
//! A hostile server is contained: stdin is fed through a bounded queue (a
//! server that stops reading makes writers wait, and time out, instead of
//! growing memory); a stdout line over `max_line_bytes` fails the pending
//! requests with a size-limit error and ends the connection; a line that is
//! not a valid JSON-RPC message but names a pending request's id fails that
//! request at once; other garbage is skipped.
// STDIO-01, STDIO-08, STDIO-04

use super::router::{CancelFn, CancelGuard, Router};
use super::{Exchange, Outbound, Transport, TransportKind};
use crate::error::{Error, Result};
use crate::message::Inbound;
use ferromcp_protocol::RequestId;
use futures_util::future::BoxFuture;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

/// What happens to the child's stderr.
#[derive(Clone, Default)]
pub enum StderrMode {
    /// Forwarded to this process's stderr (the default).
    #[default]
    Inherit,
    /// Discarded.
    Null,
    /// Each line is handed to the callback.
    Capture(Arc<dyn Fn(String) + Send + Sync>),
}

impl std::fmt::Debug for StderrMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Inherit => "Inherit",
            Self::Null => "Null",
            Self::Capture(_) => "Capture",
        })
    }
}

/// How to start the server process.
#[derive(Debug, Clone)]
pub struct StdioCommand {
    /// The program.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Extra environment variables.
    pub env: Vec<(OsString, OsString)>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// What happens to stderr.
    pub stderr: StderrMode,
}

impl StdioCommand {
    /// `program` with `args`, stderr forwarded.
    pub fn new<I, S>(program: impl Into<OsString>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            cwd: None,
            stderr: StderrMode::default(),
        }
    }
}

/// The stdio transport's limits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StdioLimits {
    /// Largest stdout (and captured stderr) line.
    pub max_line: usize,
    // STDIO-08
    /// Grace period of each shutdown step.
    pub grace: Duration,
    /// Messages queued for the child's stdin.
    pub write_queue: usize,
    /// Messages queued from stdout to the client core, per stream.
    pub queue: usize,
}

pub(crate) struct StdioTransport {
    router: Arc<Router>,
    writer: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    unsolicited: Mutex<Option<mpsc::Receiver<Inbound>>>,
    child: tokio::sync::Mutex<Option<Child>>,
    pgid: Option<i32>,
    /// Over a caller's reader/writer pair rather than a child process.
    io: bool,
    identity: String,
    grace: Duration,
}

impl StdioTransport {
    /// Spawns the child and the reader/writer tasks.
    pub(crate) fn spawn(cmd: &StdioCommand, limits: StdioLimits) -> Result<Self> {
        let max_line = limits.max_line;
        let mut c = Command::new(&cmd.program);
        c.args(&cmd.args)
            .envs(cmd.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(match cmd.stderr {
                StderrMode::Inherit => Stdio::inherit(),
                StderrMode::Null => Stdio::null(),
                StderrMode::Capture(_) => Stdio::piped(),
            })
            .kill_on_drop(true);
        if let Some(d) = &cmd.cwd {
            c.current_dir(d);
        }
        #[cfg(unix)]
        c.process_group(0);
        let mut child = c.spawn().map_err(|e| {
            Error::transport(format!("cannot start {:?}", cmd.program)).with_source(e)
        })?;
        let pgid = child.id().and_then(|p| i32::try_from(p).ok());
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| Error::transport("child has no stdin"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| Error::transport("child has no stdout"))?;
        if let (StderrMode::Capture(cb), Some(err)) = (&cmd.stderr, child.stderr.take()) {
            let cb = cb.clone();
            tokio::spawn(capture_stderr(err, max_line, cb));
        }
        let identity = std::iter::once(&cmd.program)
            .chain(cmd.args.iter())
            .map(|s| s.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        let mut t = Self::over(
            stdout,
            stdin,
            format!("stdio:{identity}"),
            limits,
            "the server process closed stdout",
        );
        t.child = tokio::sync::Mutex::new(Some(child));
        t.pgid = pgid;
        Ok(t)
    }

    /// The transport over any reader/writer pair (an in-memory duplex, a
    /// socket): no child process; closing it closes `writer`, which ends the
    /// server's input.
    pub(crate) fn from_io<R, W>(reader: R, writer: W, identity: String, limits: StdioLimits) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let mut t = Self::over(
            reader,
            writer,
            identity,
            limits,
            "the server closed its output",
        );
        t.io = true;
        t
    }

    /// Starts the reader and writer tasks over `reader`/`writer`.
    fn over<R, W>(
        reader: R,
        writer: W,
        identity: String,
        limits: StdioLimits,
        eof: &'static str,
    ) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let StdioLimits {
            max_line,
            grace,
            write_queue,
            queue,
        } = limits;
        let (router, unsolicited) = Router::new(queue);
        let (wtx, mut wrx) = mpsc::channel::<Vec<u8>>(write_queue.max(1));
        tokio::spawn(async move {
            let mut stdin = writer;
            while let Some(mut line) = wrx.recv().await {
                line.push(b'\n');
                if stdin.write_all(&line).await.is_err() || stdin.flush().await.is_err() {
                    break;
                }
            }
            // Shutting down / dropping the writer closes it: the server's
            // signal to exit (STDIO-08).
            let _ = stdin.shutdown().await;
        });
        let r = router.clone();
        tokio::spawn(async move {
            match read_lines(reader, max_line, &r).await {
                Stop::TooLong => {
                    r.fail_pending(Error::too_large(
                        max_line,
                        format!("the server sent a line longer than {max_line} bytes"),
                    ));
                    r.close(Error::transport(format!(
                        "the connection was closed after the server sent a line longer than {max_line} bytes"
                    )));
                }
                Stop::End(why) => r.close(Error::transport(format!("{eof}: {why}"))),
            }
        });
        Self {
            router,
            writer: Mutex::new(Some(wtx)),
            unsolicited: Mutex::new(Some(unsolicited)),
            child: tokio::sync::Mutex::new(None),
            pgid: None,
            io: false,
            identity,
            grace,
        }
    }

    fn writer(&self) -> Option<mpsc::Sender<Vec<u8>>> {
        self.writer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Queues a message for stdin, waiting while the queue is full.
    async fn write(&self, body: Vec<u8>) -> Result<()> {
        let w = self.writer().ok_or_else(Error::closed)?;
        w.send(body)
            .await
            .map_err(|_| Error::transport("the server process's stdin is closed"))
    }

    fn signal_group(&self, kill: bool) {
        #[cfg(unix)]
        if let Some(pid) = self.pgid.and_then(rustix::process::Pid::from_raw) {
            let sig = if kill {
                rustix::process::Signal::KILL
            } else {
                rustix::process::Signal::TERM
            };
            let _ = rustix::process::kill_process_group(pid, sig);
        }
        #[cfg(not(unix))]
        let _ = kill;
    }
}

/// Why the stdout reader stopped.
enum Stop {
    /// End of file or a read error.
    End(String),
    /// A line over the limit: framing can no longer be trusted.
    TooLong,
}

/// Reads newline-delimited messages until EOF, an error or an over-long line.
async fn read_lines(out: impl AsyncRead + Unpin, max_line: usize, router: &Router) -> Stop {
    let mut reader = BufReader::new(out);
    let mut line = Vec::new();
    loop {
        let chunk = match reader.fill_buf().await {
            Ok(c) => c,
            Err(e) => return Stop::End(e.to_string()),
        };
        if chunk.is_empty() {
            return Stop::End("end of file".into());
        }
        let (take, complete) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        line.extend_from_slice(&chunk[..if complete { take - 1 } else { take }]);
        reader.consume(take);
        if line.len() > max_line {
            return Stop::TooLong;
        }
        if !complete {
            continue;
        }
        if line.last() == Some(&b'\r') {
            line.pop(); // STDIO-01 POLICY: tolerate CRLF
        }
        if !line.iter().all(u8::is_ascii_whitespace) {
            match Inbound::decode(&line) {
                Ok(m) => router.dispatch(m).await,
                Err(e) => match crate::message::answered_id(&line) {
                    // A malformed answer to a pending request fails it now
                    // rather than at its timeout.
                    Some(id) if router.fail(&id, e.clone()) => {
                        tracing::warn!(error = %e, %id, "a malformed response failed its request");
                    }
                    _ => tracing::warn!(error = %e, "ignoring a non-JSON-RPC line on stdout"),
                },
            }
        }
        line.clear();
        // One unit of the task budget per line, so the reader yields as
        // often as the consumers of its queues do (tokio charges them per
        // message) and a flood cannot outpace them.
        tokio::task::consume_budget().await;
    }
}

// STDIO-04
/// Hands each stderr line to `cb`: decoded lossily (stderr is
/// free-form), a line longer than `max_line` cut there and the rest of it
/// skipped, so neither bad bytes nor an endless line stall the child.
async fn capture_stderr(
    err: impl AsyncRead + Unpin,
    max_line: usize,
    cb: Arc<dyn Fn(String) + Send + Sync>,
) {
    let mut reader = BufReader::new(err);
    let mut line = Vec::new();
    let mut skipping = false;
    loop {
        let chunk = match reader.fill_buf().await {
            Ok(c) if !c.is_empty() => c,
            _ => break,
        };
        let (take, complete) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let body = &chunk[..if complete { take - 1 } else { take }];
        if !skipping {
            let room = max_line.saturating_sub(line.len());
            line.extend_from_slice(&body[..body.len().min(room)]);
            if body.len() > room {
                cb(String::from_utf8_lossy(&line).into_owned());
                line.clear();
                skipping = true;
            }
        }
        reader.consume(take);
        if complete {
            if !skipping {
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                cb(String::from_utf8_lossy(&line).into_owned());
            }
            line.clear();
            skipping = false;
        }
    }
    if !line.is_empty() && !skipping {
        cb(String::from_utf8_lossy(&line).into_owned());
    }
}

impl Transport for StdioTransport {
    fn request(&self, out: Outbound) -> BoxFuture<'_, Result<Exchange>> {
        Box::pin(async move {
            let id = out
                .id
                .clone()
                .ok_or_else(|| Error::invalid("a request needs an id"))?;
            let rx = self.router.register(id.clone())?;
            let cancel: Option<CancelFn> = if out.cancellable {
                let w = self.writer();
                Some(Box::new(move |id: &RequestId| {
                    // CANCEL-02 / SUB-09
                    // Best effort: with the queue full the server is not
                    // reading, and the cancellation is dropped.
                    if let Some(w) = &w {
                        let _ = w.try_send(crate::core::cancelled_notification(id));
                    }
                }))
            } else {
                None
            };
            let guard = CancelGuard {
                router: self.router.clone(),
                id,
                cancel,
            };
            self.write(out.body).await?;
            Ok(Exchange {
                rx,
                _guard: Box::new(guard),
            })
        })
    }

    fn send(&self, out: Outbound) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move { self.write(out.body).await })
    }

    fn take_unsolicited(&self) -> Option<mpsc::Receiver<Inbound>> {
        self.unsolicited
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    fn kind(&self) -> TransportKind {
        if self.io {
            TransportKind::Io
        } else {
            TransportKind::Stdio
        }
    }

    fn identity(&self) -> String {
        self.identity.clone()
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        self.close_within(self.grace)
    }

    fn close_within(&self, grace: Duration) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            // STDIO-08: close stdin, wait, SIGTERM, wait, SIGKILL.
            self.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
            let mut guard = self.child.lock().await;
            let Some(child) = guard.as_mut() else {
                // No child (a reader/writer pair, or already reaped): the
                // closed writer was the whole shutdown.
                self.router.close(Error::closed());
                return;
            };
            if tokio::time::timeout(grace, child.wait()).await.is_err() {
                self.signal_group(false);
                if tokio::time::timeout(grace, child.wait()).await.is_err() {
                    self.signal_group(true);
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                }
            }
            // Stragglers the server left in its group.
            self.signal_group(true);
            guard.take();
            self.router.close(Error::closed());
        })
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        // Kill the whole group; tokio's kill_on_drop kills and reaps the child.
        let running = self
            .child
            .try_lock()
            .map(|mut c| match c.as_mut() {
                Some(ch) => !matches!(ch.try_wait(), Ok(Some(_))),
                None => false,
            })
            .unwrap_or(true);
        if running {
            self.signal_group(true);
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn alive(pid: i32) -> bool {
        // Signal 0 probes for existence (a reaped child is gone; a zombie
        // would still answer, so this also checks that it was reaped).
        rustix::process::Pid::from_raw(pid)
            .is_some_and(|p| rustix::process::test_kill_process(p).is_ok())
    }

    #[tokio::test]
    async fn close_escalates_to_sigkill_and_reaps_the_group() {
        // STDIO-08: a child that ignores SIGTERM and has a grandchild.
        let cmd = StdioCommand::new("sh", ["-c", "trap '' TERM; sleep 30 & echo $! >&2; wait"]);
        let grandchild = Arc::new(Mutex::new(None::<i32>));
        let g = grandchild.clone();
        let mut cmd = cmd;
        cmd.stderr = StderrMode::Capture(Arc::new(move |line| {
            *g.lock().unwrap_or_else(|p| p.into_inner()) = line.trim().parse().ok();
        }));
        let t = StdioTransport::spawn(
            &cmd,
            StdioLimits {
                max_line: 1024,
                grace: Duration::from_millis(100),
                write_queue: 16,
                queue: 16,
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let pid = t.pgid.unwrap_or_default();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while grandchild
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
        {
            assert!(std::time::Instant::now() < deadline, "no grandchild pid");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let gpid = grandchild
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .unwrap_or_default();
        assert!(alive(pid) && alive(gpid));
        let started = std::time::Instant::now();
        t.close().await;
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(!alive(pid), "the child was not reaped");
        // The grandchild was killed too (it may linger as init's zombie briefly).
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while alive(gpid) && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let status = std::fs::read_to_string(format!("/proc/{gpid}/status")).unwrap_or_default();
        assert!(
            !alive(gpid) || status.contains("zombie"),
            "grandchild survived"
        );
    }

    #[tokio::test]
    async fn a_request_after_exit_fails_instead_of_hanging() {
        let cmd = StdioCommand::new("true", Vec::<String>::new());
        let t = StdioTransport::spawn(
            &cmd,
            StdioLimits {
                max_line: 1024,
                grace: Duration::from_millis(100),
                write_queue: 16,
                queue: 16,
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        tokio::time::sleep(Duration::from_millis(200)).await;
        let r = t
            .request(Outbound {
                id: Some(RequestId::number(1)),
                body: b"{}".to_vec(),
                headers: Vec::new(),
                cancellable: true,
                resumable: false,
            })
            .await;
        match r {
            Err(_) => {}
            Ok(mut ex) => assert!(matches!(ex.rx.recv().await, Some(Err(_)) | None)),
        }
        t.close().await;
    }
}
