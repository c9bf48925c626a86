//! Relaying a handshake-era upstream's server requests (`elicitation/create`,
//! `sampling/createMessage`, `roots/list` on its session) to the
//! handshake-era client whose call caused them.
//!
//! The client connection does not say which call a server request belongs
//! to, so a request is relayed only while exactly one call of the gateway's
//! is in flight on that upstream; with none, or several (it cannot be told
//! which one asked), it is refused. While it waits for the client, the
//! upstream call is held ("parked") under a number kept in the gateway's
//! sealed request state; the server pushes the request on the client's
//! session and runs the call's handler again with the answer, which
//! resumes the held call. A 2026-07-28 client is not served this way (its
//! rounds would need the upstream call held across separate HTTP
//! requests): the call fails with a message saying so.

use crate::failure::Failure;
use ferromcp_protocol::types::InputRequest;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::{mpsc, oneshot};

/// One server request on its way to the client, and where its answer goes.
pub(crate) struct Pushed {
    pub(crate) request: InputRequest,
    pub(crate) answer: oneshot::Sender<Result<Value, String>>,
}

/// An upstream call waiting for its client's answer.
pub(crate) struct Parked {
    pub(crate) task: tokio::task::JoinHandle<Result<Value, Failure>>,
    pub(crate) rx: mpsc::Receiver<Pushed>,
    pub(crate) answer: oneshot::Sender<Result<Value, String>>,
}

/// The calls in flight on one upstream and the parked ones.
#[derive(Default)]
pub(crate) struct Live {
    calls: Mutex<HashMap<u64, mpsc::Sender<Pushed>>>,
    parked: Mutex<HashMap<u64, Parked>>,
    next: AtomicU64,
}

/// Removes a call from [`Live`] when its upstream request ends.
struct Registered {
    live: Arc<Live>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        lock(&self.live.calls).remove(&self.id);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Live {
    /// Starts `call` as a task registered as in flight; returns it and
    /// where its upstream's server requests arrive.
    pub(crate) fn start(
        self: &Arc<Self>,
        call: impl std::future::Future<Output = Result<Value, Failure>> + Send + 'static,
    ) -> (
        tokio::task::JoinHandle<Result<Value, Failure>>,
        mpsc::Receiver<Pushed>,
    ) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(1);
        lock(&self.calls).insert(id, tx);
        let guard = Registered {
            live: self.clone(),
            id,
        };
        let task = tokio::spawn(async move {
            let _guard = guard;
            call.await
        });
        (task, rx)
    }

    /// Holds a call until its client answers; returns its number. Calls
    /// held before whose upstream request ended meanwhile are dropped.
    pub(crate) fn park(&self, p: Parked) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut parked = lock(&self.parked);
        parked.retain(|_, p| !p.task.is_finished() && !p.answer.is_closed());
        parked.insert(id, p);
        id
    }

    /// Takes back a held call.
    pub(crate) fn unpark(&self, id: u64) -> Option<Parked> {
        lock(&self.parked).remove(&id)
    }

    /// Relays one server request of the upstream to the only call in
    /// flight on it, and waits (at most `timeout`) for the answer.
    pub(crate) async fn ask(
        &self,
        request: InputRequest,
        timeout: std::time::Duration,
    ) -> Result<Value, String> {
        let what = request.method();
        let tx = {
            let calls = lock(&self.calls);
            let mut it = calls.values();
            match (it.next(), it.next()) {
                (Some(tx), None) => tx.clone(),
                (None, _) => {
                    return Err(format!(
                        "the gateway has no call in flight to relay {what} to"
                    ));
                }
                (Some(_), Some(_)) => {
                    return Err(format!(
                        "the gateway cannot tell which of its calls in flight sent {what}; it is relayed only while one call is"
                    ));
                }
            }
        };
        let (answer, rx) = oneshot::channel();
        // A call already waiting for one answer gets no second request.
        tx.try_send(Pushed { request, answer }).map_err(|_| {
            format!("the call is already waiting for another input; {what} refused")
        })?;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(format!("the calling client gave no answer to {what}")),
            Err(_) => Err(format!(
                "the calling client did not answer {what} within the upstream's timeoutMs"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots() -> InputRequest {
        InputRequest::ListRoots(None)
    }

    #[tokio::test]
    async fn a_server_request_goes_only_to_the_one_call_in_flight() {
        let live = Arc::new(Live::default());
        let t = std::time::Duration::from_secs(30);
        // No call: refused.
        let e = live.ask(roots(), t).await.err().unwrap_or_default();
        assert!(e.contains("no call in flight"), "{e}");
        // One call: it gets the request, and its answer goes back.
        let (a, mut rx) = live.start(std::future::pending());
        let asker = {
            let live = live.clone();
            tokio::spawn(async move { live.ask(roots(), t).await })
        };
        let p = rx.recv().await.map(|p| (p.request.method(), p.answer));
        let Some((method, answer)) = p else {
            panic!("the call got no request")
        };
        assert_eq!(method, "roots/list");
        let _ = answer.send(Ok(serde_json::json!({"roots": []})));
        let got = asker.await.ok().and_then(Result::ok);
        assert_eq!(got, Some(serde_json::json!({"roots": []})));
        // Two calls: it cannot be told which asked, so neither gets it.
        let (b, mut rx_b) = live.start(std::future::pending());
        let e = live.ask(roots(), t).await.err().unwrap_or_default();
        assert!(e.contains("cannot tell"), "{e}");
        assert!(rx.try_recv().is_err() && rx_b.try_recv().is_err());
        // A call that ended is no longer in flight.
        b.abort();
        let _ = b.await;
        a.abort();
        let _ = a.await;
        let e = live.ask(roots(), t).await.err().unwrap_or_default();
        assert!(e.contains("no call in flight"), "{e}");
    }
}
