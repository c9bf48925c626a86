//! Correlation for message-stream transports (stdio, HTTP+SSE), where every
//! server message arrives on one stream: responses go to their request by
//! `id`, progress by `progressToken` (the client uses the request
//! id as token), listen-stream notifications by `subscriptionId`; everything
//! else (server requests, unrelated notifications) is unsolicited.
// STDIO-06

use crate::error::{Error, Result};
use crate::message::Inbound;
use ferromcp_protocol::RequestId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;

type Sink = mpsc::Sender<Result<Inbound>>;

/// What a transport does to cancel a request it had sent.
pub(crate) type CancelFn = Box<dyn Fn(&RequestId) + Send + Sync>;

#[derive(Default)]
struct State {
    pending: HashMap<RequestId, Sink>,
    unsolicited: Option<mpsc::Sender<Inbound>>,
    closed: Option<Error>,
}

/// Where one message goes.
enum Route {
    /// The last message for a request (its response or failure).
    Final(Sink, Result<Inbound>),
    /// A notification for a request or a listen stream.
    Related(Sink, Inbound),
    /// Everything else.
    Unsolicited(mpsc::Sender<Inbound>, Inbound),
    /// Nobody wants it.
    Drop,
}

/// Routes one inbound stream to the waiting requests.
///
/// Every queue is bounded ([`crate::Limits::message_queue`]). Unsolicited
/// messages wait for room (the client core always drains them), which slows
/// the reader and so the server. Messages for one request or listen stream
/// never wait, since the caller may not be reading (an idle
/// [`crate::Subscription`]) and one slow stream must not stall the others:
/// a notification that finds its queue full is dropped, and a final
/// response is handed over by a task of its own (one per request at most).
pub(crate) struct Router {
    state: Mutex<State>,
    queue: usize,
}

/// Hands over a request's last message without waiting.
fn deliver_final(tx: Sink, msg: Result<Inbound>) {
    if let Err(TrySendError::Full(msg)) = tx.try_send(msg) {
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = tx.send(msg).await;
            });
        }
    }
}

impl Router {
    /// A router with queues of `queue` messages, and the receiver of
    /// unsolicited messages.
    pub(crate) fn new(queue: usize) -> (Arc<Self>, mpsc::Receiver<Inbound>) {
        let queue = queue.max(1);
        let (tx, rx) = mpsc::channel(queue);
        let router = Router {
            state: Mutex::new(State {
                unsolicited: Some(tx),
                ..State::default()
            }),
            queue,
        };
        (Arc::new(router), rx)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a request before it is written.
    pub(crate) fn register(&self, id: RequestId) -> Result<mpsc::Receiver<Result<Inbound>>> {
        let mut st = self.lock();
        if let Some(e) = &st.closed {
            return Err(e.clone());
        }
        let (tx, rx) = mpsc::channel(self.queue);
        st.pending.insert(id, tx);
        Ok(rx)
    }

    /// Forgets a request; true when it was still waiting.
    pub(crate) fn forget(&self, id: &RequestId) -> bool {
        self.lock().pending.remove(id).is_some()
    }

    /// Decides where `msg` goes (under the lock; nothing is sent here).
    fn route(&self, msg: Inbound) -> Route {
        let mut st = self.lock();
        match &msg {
            Inbound::Response { id: Some(id), .. } => match st.pending.remove(id) {
                Some(tx) => Route::Final(tx, Ok(msg)),
                None => {
                    // CANCEL-06: a late answer to a cancelled request; or a
                    // duplicate, or an answer to a request never sent.
                    tracing::debug!(%id, "dropping a response to no pending request");
                    Route::Drop
                }
            },
            Inbound::Response { id: None, outcome } => {
                tracing::warn!(?outcome, "dropping a response with a null id");
                Route::Drop
            }
            Inbound::Notification { method, .. } => {
                if let Some(token) = msg.progress_token() {
                    if let Some(tx) = st.pending.get(&token) {
                        return Route::Related(tx.clone(), msg);
                    }
                }
                if let Some(sid) = msg.stream_id() {
                    if method == ferromcp_protocol::method::NOTIFICATIONS_CANCELLED {
                        if let Some(tx) = st.pending.remove(&sid) {
                            return Route::Final(tx, Ok(msg));
                        }
                    } else if let Some(tx) = st.pending.get(&sid) {
                        return Route::Related(tx.clone(), msg);
                    }
                }
                match &st.unsolicited {
                    Some(tx) => Route::Unsolicited(tx.clone(), msg),
                    None => Route::Drop,
                }
            }
            Inbound::Request { .. } => match &st.unsolicited {
                Some(tx) => Route::Unsolicited(tx.clone(), msg),
                None => Route::Drop,
            },
        }
    }

    /// Routes one message; waits only for room in the unsolicited queue.
    pub(crate) async fn dispatch(&self, msg: Inbound) {
        match self.route(msg) {
            Route::Final(tx, msg) => deliver_final(tx, msg),
            Route::Related(tx, msg) => {
                if let Err(TrySendError::Full(_)) = tx.try_send(Ok(msg)) {
                    tracing::debug!("dropping a notification: its stream's queue is full");
                }
            }
            Route::Unsolicited(tx, msg) => {
                let _ = tx.send(msg).await;
            }
            Route::Drop => {}
        }
    }

    /// Fails the waiting request `id` with `err`; true when it was waiting.
    pub(crate) fn fail(&self, id: &RequestId, err: Error) -> bool {
        let tx = self.lock().pending.remove(id);
        match tx {
            Some(tx) => {
                deliver_final(tx, Err(err));
                true
            }
            None => false,
        }
    }

    /// Fails every waiting request with `err` (new ones are still accepted).
    pub(crate) fn fail_pending(&self, err: Error) {
        let pending: Vec<Sink> = self.lock().pending.drain().map(|(_, tx)| tx).collect();
        for tx in pending {
            deliver_final(tx, Err(err.clone()));
        }
    }

    /// Fails every waiting request and refuses new ones.
    pub(crate) fn close(&self, err: Error) {
        let pending: Vec<Sink> = {
            let mut st = self.lock();
            st.unsolicited = None;
            st.closed.get_or_insert(err.clone());
            st.pending.drain().map(|(_, tx)| tx).collect()
        };
        for tx in pending {
            deliver_final(tx, Err(err.clone()));
        }
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
        let (router, mut unsolicited) = Router::new(8);
        let mut a = router
            .register(RequestId::number(1))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut l = router
            .register(RequestId::string("listen-1"))
            .unwrap_or_else(|e| panic!("{e}"));
        router.dispatch(msg(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#)).await;
        router.dispatch(msg(r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"}}}"#)).await;
        router.dispatch(msg(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}"#)).await;
        router
            .dispatch(msg(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#))
            .await;
        router
            .dispatch(msg(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#))
            .await; // late duplicate: dropped
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

    #[tokio::test]
    async fn a_full_queue_drops_notifications_but_never_the_response() {
        // A flooded request whose caller is not reading: the queue stays at
        // its bound and the response still arrives afterwards.
        let (router, _unsolicited) = Router::new(4);
        let mut a = router
            .register(RequestId::number(1))
            .unwrap_or_else(|e| panic!("{e}"));
        for _ in 0..100 {
            router.dispatch(msg(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#)).await;
        }
        router
            .dispatch(msg(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#))
            .await;
        let mut notes = 0;
        loop {
            match a.recv().await {
                Some(Ok(Inbound::Notification { .. })) => notes += 1,
                Some(Ok(Inbound::Response { .. })) => break,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(notes, 4);
        assert!(a.recv().await.is_none());
    }
}
