//! The child's stdin, written by the task that has a line to send.
//!
//! While nothing is queued, a line goes to the pipe with one non-blocking
//! write made by the sending task itself: no channel and no writer task in
//! between, so a call costs no hand-off on its way to the child. When the
//! pipe is full (the child reads slower than clients send), what did not fit
//! is queued and one drainer task writes the queue as the pipe drains; every
//! later line queues behind it. Lines therefore reach the child whole and
//! in the order they were sent, and a sender that is cancelled cannot leave
//! half a line behind: the write is synchronous, and what it did not write
//! is already queued. The queue is bounded; a line that would overflow it
//! is refused, and so is every line once the pipe is broken (the child
//! closed its stdin), each with an error for the call that sent it.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use tokio::io::AsyncWrite;
use tokio_util::sync::CancellationToken;

/// The pipe to the child (any writer in tests).
pub(crate) type Pipe = Pin<Box<dyn AsyncWrite + Send>>;

/// Why a line was not sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The pipe is closed or broken; nothing more can be sent.
    Closed(String),
    /// The queue is full: the child is not reading its stdin.
    Full(usize),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Closed(why) => write!(f, "the stdio server's stdin is closed ({why})"),
            Refused::Full(n) => write!(
                f,
                "the stdio server is not reading its stdin ({n} bytes already wait for it)"
            ),
        }
    }
}

/// Bytes accepted but not yet written to the pipe.
struct Queue {
    /// `None` once closed (the pipe is then dropped) or broken.
    pipe: Option<Pipe>,
    /// Why it was closed.
    closed: String,
    bytes: Vec<u8>,
    /// How much of `bytes` is written already.
    start: usize,
}

impl Queue {
    fn waiting(&self) -> &[u8] {
        &self.bytes[self.start..]
    }

    fn advance(&mut self, n: usize) {
        self.start += n;
        if self.start >= self.bytes.len() {
            self.bytes.clear();
            self.start = 0;
        }
    }

    fn shut(&mut self, why: String) {
        self.pipe = None;
        self.closed = why;
        self.bytes = Vec::new();
        self.start = 0;
    }

    /// One write of `line`, or else of what is queued (whole, in part, or
    /// not at all when the pipe is full); `Err` when the pipe is closed or
    /// broke now.
    fn write(&mut self, cx: &mut Context<'_>, line: Option<&[u8]>) -> Result<Poll<usize>, ()> {
        let Some(pipe) = self.pipe.as_mut() else {
            return Err(());
        };
        let buf = line.unwrap_or(&self.bytes[self.start..]);
        match pipe.as_mut().poll_write(cx, buf) {
            Poll::Pending => Ok(Poll::Pending),
            Poll::Ready(Ok(0)) if !buf.is_empty() => {
                self.shut("it accepts no more bytes".to_owned());
                Err(())
            }
            Poll::Ready(Ok(n)) => Ok(Poll::Ready(n)),
            Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => Ok(Poll::Ready(0)),
            Poll::Ready(Err(e)) => {
                self.shut(e.to_string());
                Err(())
            }
        }
    }
}

/// The write side of the child's stdin, shared by every sender.
pub(crate) struct Outbox {
    queue: Mutex<Queue>,
    /// Most bytes queued at once.
    max_queued: usize,
    /// Wakes the drainer when a line was queued.
    wake: tokio::sync::Notify,
    /// Ends the drainer.
    closed: CancellationToken,
}

impl Outbox {
    /// Takes over `pipe`, queuing at most `max_queued` bytes while it is
    /// full, and starts the task that drains the queue (it ends on
    /// [`Outbox::close`]). Must be called within the runtime.
    pub(crate) fn new(pipe: Pipe, max_queued: usize) -> Arc<Self> {
        let outbox = Arc::new(Self {
            queue: Mutex::new(Queue {
                pipe: Some(pipe),
                closed: String::new(),
                bytes: Vec::new(),
                start: 0,
            }),
            max_queued,
            wake: tokio::sync::Notify::new(),
            closed: CancellationToken::new(),
        });
        let drainer = outbox.clone();
        tokio::spawn(async move {
            let closed = drainer.closed.clone();
            tokio::select! {
                _ = drainer.drain() => {}
                _ = closed.cancelled() => {}
            }
        });
        outbox
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // Every update leaves the queue consistent (a write either happened
        // and is accounted for, or did not), so a poisoned lock is usable.
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends one whole line (with its newline): written now if the pipe
    /// takes it, else queued behind what already waits.
    pub(crate) fn send(&self, line: &[u8]) -> Result<(), Refused> {
        let mut q = self.lock();
        if q.pipe.is_none() {
            return Err(Refused::Closed(q.closed.clone()));
        }
        let mut written = 0;
        if q.waiting().is_empty() {
            // Nothing queued, so the drainer is not waiting on the pipe:
            // a write that finds it full registers no waker of interest.
            let mut cx = Context::from_waker(Waker::noop());
            while written < line.len() {
                match q.write(&mut cx, Some(&line[written..])) {
                    Ok(Poll::Ready(n)) => written += n,
                    Ok(Poll::Pending) => break,
                    // The pipe broke: this call fails (and so will every
                    // later one); had part of the line gone out, the child
                    // could not read the rest either.
                    Err(()) => return Err(Refused::Closed(q.closed.clone())),
                }
            }
            if written == line.len() {
                return Ok(());
            }
        }
        let rest = &line[written..];
        // A line partly written is finished whatever the bound, or the
        // child would read it run into the next one.
        if written == 0 && q.waiting().len() + rest.len() > self.max_queued {
            return Err(Refused::Full(q.waiting().len()));
        }
        q.bytes.extend_from_slice(rest);
        drop(q);
        self.wake.notify_one();
        Ok(())
    }

    /// Bytes waiting for the pipe.
    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        self.lock().waiting().len()
    }

    /// Closes the pipe (the child sees its stdin end once it has read
    /// what was written), drops what is queued and ends the drainer.
    /// Later sends are refused.
    pub(crate) fn close(&self, why: &str) {
        self.lock().shut(why.to_owned());
        self.closed.cancel();
    }

    /// Writes the queue whenever it is not empty, as fast as the pipe
    /// takes it.
    async fn drain(&self) {
        loop {
            self.wake.notified().await;
            let gone = std::future::poll_fn(|cx| {
                let mut q = self.lock();
                while !q.waiting().is_empty() {
                    match q.write(cx, None) {
                        Ok(Poll::Ready(n)) => q.advance(n),
                        Ok(Poll::Pending) => return Poll::Pending,
                        Err(()) => return Poll::Ready(true),
                    }
                }
                Poll::Ready(q.pipe.is_none())
            })
            .await;
            if gone {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn lines_beyond_the_pipe_are_queued_whole_and_in_order() {
        // A pipe that holds 64 KiB, none of it read yet.
        let (tx, mut rx) = tokio::io::duplex(64 << 10);
        let outbox = Outbox::new(Box::pin(tx), 1 << 20);
        let lines: Vec<Vec<u8>> = (0..64)
            .map(|i| format!("{i:04}{}\n", "x".repeat(4000 + i)).into_bytes())
            .collect();
        for l in &lines {
            assert_eq!(outbox.send(l), Ok(()));
        }
        assert!(outbox.queued() > 0, "the pipe should be full");
        let expected: Vec<u8> = lines.concat();
        let mut got = vec![0u8; expected.len()];
        tokio::time::timeout(std::time::Duration::from_secs(10), rx.read_exact(&mut got))
            .await
            .unwrap_or_else(|_| panic!("not everything arrived"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(got == expected, "lines were cut, interleaved or reordered");
        assert_eq!(outbox.queued(), 0);
    }

    #[tokio::test]
    async fn the_queue_is_bounded() {
        let (tx, _rx) = tokio::io::duplex(4096);
        let outbox = Outbox::new(Box::pin(tx), 10_000);
        let line = vec![b'x'; 3000];
        let refused = (0..64).find_map(|_| outbox.send(&line).err());
        let Some(Refused::Full(queued)) = refused else {
            panic!("never refused: {refused:?}")
        };
        assert!(queued <= 10_000, "{queued}");
        assert!(outbox.queued() <= 10_000);
    }

    #[tokio::test]
    async fn a_broken_pipe_refuses_the_line_that_met_it() {
        let (tx, rx) = tokio::io::duplex(4096);
        let outbox = Outbox::new(Box::pin(tx), 1 << 20);
        assert_eq!(outbox.send(b"{}\n"), Ok(()));
        drop(rx);
        assert!(matches!(outbox.send(b"{}\n"), Err(Refused::Closed(_))));
        assert!(matches!(outbox.send(b"{}\n"), Err(Refused::Closed(_))));
        outbox.close("stopped");
        assert_eq!(
            outbox.send(b"{}\n"),
            Err(Refused::Closed("stopped".to_owned()))
        );
    }
}
