//! Correlation for message-stream transports (stdio, HTTP+SSE), where every
//! server message arrives on one stream: responses go to their request by
//! `id` (STDIO-06), progress by `progressToken` (the client uses the request
//! id as token), listen-stream notifications by `subscriptionId`; everything
//! else (server requests, unrelated notifications) is unsolicited.

use crate::error::{Error, Result};
use crate::message::Inbound;
use mcp_protocol::RequestId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::mpsc;

type Sink = mpsc::UnboundedSender<Result<Inbound>>;

/// What a transport does to cancel a request it had sent.
pub(crate) type CancelFn = Box<dyn Fn(&RequestId) + Send + Sync>;

#[derive(Default)]
struct State {
    pending: HashMap<RequestId, Sink>,
    unsolicited: Option<mpsc::UnboundedSender<Inbound>>,
    closed: Option<Error>,
}

/// Routes one inbound stream to the waiting requests.
pub(crate) struct Router {
    state: Mutex<State>,
}

impl Router {
    /// A router and the receiver of unsolicited messages.
    pub(crate) fn new() -> (Arc<Self>, mpsc::UnboundedReceiver<Inbound>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let router = Router {
            state: Mutex::new(State {
                unsolicited: Some(tx),
                ..State::default()
            }),
        };
        (Arc::new(router), rx)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a request before it is written.
    pub(crate) fn register(
        &self,
        id: RequestId,
    ) -> Result<mpsc::UnboundedReceiver<Result<Inbound>>> {
        let mut st = self.lock();
        if let Some(e) = &st.closed {
            return Err(e.clone());
        }
        let (tx, rx) = mpsc::unbounded_channel();
        st.pending.insert(id, tx);
        Ok(rx)
    }

    /// Forgets a request; true when it was still waiting.
    pub(crate) fn forget(&self, id: &RequestId) -> bool {
        self.lock().pending.remove(id).is_some()
    }

    /// Routes one message.
    pub(crate) fn dispatch(&self, msg: Inbound) {
        let mut st = self.lock();
        match &msg {
            Inbound::Response { id: Some(id), .. } => {
                if let Some(tx) = st.pending.remove(id) {
                    let _ = tx.send(Ok(msg));
                } else {
                    // CANCEL-06: a late answer to a cancelled request.
                    tracing::debug!(%id, "dropping a response to no pending request");
                }
            }
            Inbound::Response { id: None, outcome } => {
                tracing::warn!(?outcome, "dropping a response with a null id");
            }
            Inbound::Notification { method, .. } => {
                if let Some(token) = msg.progress_token() {
                    if let Some(tx) = st.pending.get(&token) {
                        let _ = tx.send(Ok(msg));
                        return;
                    }
                }
                if let Some(sid) = msg.stream_id() {
                    let ends = method == "notifications/cancelled";
                    if let Some(tx) = st.pending.get(&sid) {
                        let _ = tx.send(Ok(msg));
                        if ends {
                            st.pending.remove(&sid);
                        }
                        return;
                    }
                }
                if let Some(tx) = &st.unsolicited {
                    let _ = tx.send(msg);
                }
            }
            Inbound::Request { .. } => {
                if let Some(tx) = &st.unsolicited {
                    let _ = tx.send(msg);
                }
            }
        }
    }

    /// Fails the waiting request `id` with `err`; true when it was waiting.
    pub(crate) fn fail(&self, id: &RequestId, err: Error) -> bool {
        match self.lock().pending.remove(id) {
            Some(tx) => {
                let _ = tx.send(Err(err));
                true
            }
            None => false,
        }
    }

    /// Fails every waiting request with `err` (new ones are still accepted).
    pub(crate) fn fail_pending(&self, err: Error) {
        for (_, tx) in self.lock().pending.drain() {
            let _ = tx.send(Err(err.clone()));
        }
    }

    /// Fails every waiting request and refuses new ones.
    pub(crate) fn close(&self, err: Error) {
        let mut st = self.lock();
        for (_, tx) in st.pending.drain() {
            let _ = tx.send(Err(err.clone()));
        }
        st.unsolicited = None;
        st.closed.get_or_insert(err);
    }
}

/// Dropped with an exchange: forgets the request and, when it was still
/// pending and may be cancelled, runs the transport's cancel action.
pub(crate) struct CancelGuard {
    pub(crate) router: Arc<Router>,
    pub(crate) id: RequestId,
    pub(crate) cancel: Option<CancelFn>,
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if self.router.forget(&self.id) {
            if let Some(cancel) = &self.cancel {
                cancel(&self.id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(s: &str) -> Inbound {
        match Inbound::decode(s.as_bytes()) {
            Ok(m) => m,
            Err(e) => panic!("{e}"),
        }
    }

    #[tokio::test]
    async fn routes_by_id_token_and_subscription() {
        let (router, mut unsolicited) = Router::new();
        let mut a = router
            .register(RequestId::number(1))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut l = router
            .register(RequestId::string("listen-1"))
            .unwrap_or_else(|e| panic!("{e}"));
        router.dispatch(msg(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#));
        router.dispatch(msg(r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"}}}"#));
        router.dispatch(msg(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}"#));
        router.dispatch(msg(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        router.dispatch(msg(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#)); // late duplicate: dropped
        assert!(matches!(
            a.recv().await,
            Some(Ok(Inbound::Notification { .. }))
        ));
        assert!(matches!(a.recv().await, Some(Ok(Inbound::Response { .. }))));
        assert!(a.recv().await.is_none());
        assert!(matches!(
            l.recv().await,
            Some(Ok(Inbound::Notification { .. }))
        ));
        assert!(matches!(
            unsolicited.recv().await,
            Some(Inbound::Notification { .. })
        ));
        router.close(Error::transport("gone"));
        assert!(matches!(l.recv().await, Some(Err(_))));
        assert!(router.register(RequestId::number(2)).is_err());
    }
}
