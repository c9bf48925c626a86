//! The one SSE response body: leading events, an event source, keep-alive
//! comments while the source is idle, an optional final event, and a
//! cleanup that runs once when the body ends or is dropped.
//!
//! Every SSE answer of the transport is one of these: the modern answer
//! committed to SSE (`modern.rs`), `subscriptions/listen` streams
//! (`streams.rs`) and the handshake era's POST and GET streams
//! (`legacy.rs`). The frame encoders ([`sse_event`], [`sse_priming`],
//! [`sse_keepalive`]) live here too.
// SSE-01, SSE-03, SSE-05, SSE-07, LEGACY-17

use bytes::Bytes;
use futures_util::Stream;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// What an event source yields.
pub(crate) enum SseItem {
    /// An encoded frame; more may follow.
    Event(Bytes),
    /// An encoded frame that is the stream's last: the body ends after it.
    Last(Bytes),
}

/// How an [`SseBody`] went away, as its cleanup hears it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Close {
    /// The body reached its end: its last frame was produced.
    Finished,
    /// The body was dropped before its end (the client went away, or the
    /// server dropped the response).
    Abandoned,
}

type Source = Pin<Box<dyn Stream<Item = SseItem> + Send>>;
type Finish = Pin<Box<dyn Future<Output = Option<Bytes>> + Send>>;
type OnClose = Box<dyn FnOnce(Close) + Send>;

/// An SSE response body.
///
/// Frames come out in this order: the leading frames ([`SseBody::event`]),
/// then, each time the body is polled, the first of these that is ready:
/// the source's next frame; the final event (its future resolved: frames
/// the source has ready are flushed, then the final event, then the end);
/// a keep-alive comment (the interval elapsed with nothing else to send).
/// The body ends after a [`SseItem::Last`], when the source ends, when the
/// final future resolves, or, with neither source nor final future, after
/// the leading frames.
pub(crate) struct SseBody {
    head: VecDeque<Bytes>,
    source: Option<Source>,
    finish: Option<Finish>,
    keepalive: Option<tokio::time::Interval>,
    on_close: Option<OnClose>,
    ended: bool,
}

impl SseBody {
    /// A body that sends nothing yet and then ends.
    pub(crate) fn new() -> Self {
        Self {
            head: VecDeque::new(),
            source: None,
            finish: None,
            keepalive: None,
            on_close: None,
            ended: false,
        }
    }

    /// Appends a leading frame (a priming event, an acknowledgement, a
    /// replayed event), sent before anything of the source.
    pub(crate) fn event(mut self, frame: Bytes) -> Self {
        self.head.push_back(frame);
        self
    }

    /// Appends leading frames.
    pub(crate) fn events(mut self, frames: impl IntoIterator<Item = Bytes>) -> Self {
        self.head.extend(frames);
        self
    }

    /// The stream of frames after the leading ones.
    pub(crate) fn source(mut self, source: impl Stream<Item = SseItem> + Send + 'static) -> Self {
        self.source = Some(Box::pin(source));
        self
    }

    /// The future of the final event: when it resolves the body flushes
    /// what the source has ready, sends the event (if any) and ends.
    pub(crate) fn finish(
        mut self,
        finish: impl Future<Output = Option<Bytes>> + Send + 'static,
    ) -> Self {
        self.finish = Some(Box::pin(finish));
        self
    }

    /// A keep-alive comment each `every` the body has nothing else to
    /// send; the first one `every` after this call. A zero interval sends
    /// none.
    pub(crate) fn keep_alive(mut self, every: Duration) -> Self {
        self.keepalive = (!every.is_zero()).then(|| {
            let mut tick = tokio::time::interval(every);
            tick.reset();
            tick
        });
        self
    }

    /// Cleanup run exactly once: when the body reaches its end
    /// ([`Close::Finished`]) or is dropped before it ([`Close::Abandoned`]).
    pub(crate) fn on_close(mut self, f: impl FnOnce(Close) + Send + 'static) -> Self {
        self.on_close = Some(Box::new(f));
        self
    }

    /// Marks the end: drops the source and the final future, runs the
    /// cleanup.
    fn end(&mut self, how: Close) {
        self.ended = true;
        self.source = None;
        self.finish = None;
        self.keepalive = None;
        if let Some(f) = self.on_close.take() {
            f(how);
        }
    }

    /// Frames the source has ready now, appended to `out`; ends the body
    /// when the source ends or yields its last frame.
    fn flush_source(&mut self, cx: &mut Context<'_>, out: &mut Vec<u8>) {
        while let Some(source) = self.source.as_mut() {
            match source.as_mut().poll_next(cx) {
                Poll::Ready(Some(SseItem::Event(b))) => out.extend_from_slice(&b),
                Poll::Ready(Some(SseItem::Last(b))) => {
                    out.extend_from_slice(&b);
                    self.source = None;
                }
                Poll::Ready(None) => self.source = None,
                Poll::Pending => break,
            }
        }
    }
}

impl Stream for SseBody {
    type Item = Bytes;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        // Every field is `Unpin` (the futures are boxed).
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        if let Some(frame) = this.head.pop_front() {
            return Poll::Ready(Some(frame));
        }
        if this.source.is_none() && this.finish.is_none() {
            this.end(Close::Finished);
            return Poll::Ready(None);
        }
        if let Some(source) = this.source.as_mut() {
            match source.as_mut().poll_next(cx) {
                Poll::Ready(Some(SseItem::Event(b))) => return Poll::Ready(Some(b)),
                Poll::Ready(Some(SseItem::Last(b))) => {
                    this.end(Close::Finished);
                    return Poll::Ready(Some(b));
                }
                Poll::Ready(None) => {
                    this.end(Close::Finished);
                    return Poll::Ready(None);
                }
                Poll::Pending => {}
            }
        }
        if let Some(finish) = this.finish.as_mut() {
            if let Poll::Ready(last) = finish.as_mut().poll(cx) {
                this.finish = None;
                // What the source queued while the final future ran goes
                // first: nothing is lost behind the final event.
                let mut out = Vec::new();
                this.flush_source(cx, &mut out);
                if let Some(last) = last {
                    out.extend_from_slice(&last);
                }
                this.end(Close::Finished);
                return Poll::Ready((!out.is_empty()).then(|| Bytes::from(out)));
            }
        }
        if let Some(tick) = this.keepalive.as_mut() {
            if tick.poll_tick(cx).is_ready() {
                return Poll::Ready(Some(sse_keepalive()));
            }
        }
        Poll::Pending
    }
}

impl Drop for SseBody {
    fn drop(&mut self) {
        if !self.ended {
            self.end(Close::Abandoned);
        }
    }
}

// SSE-01, SSE-07
/// One SSE `message` event carrying a JSON-RPC message, with an
/// optional event id (handshake-era resumability only).
pub(crate) fn sse_event(id: Option<&str>, data: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(data.len() + 48);
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"event: message\ndata: ");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

// LEGACY-17
/// A priming event: an id and empty data, with a `retry` hint.
pub(crate) fn sse_priming(id: &str, retry_ms: Option<u64>) -> Bytes {
    let mut s = format!("id: {id}\n");
    if let Some(r) = retry_ms {
        s.push_str(&format!("retry: {r}\n"));
    }
    s.push_str("data: \n\n");
    Bytes::from(s)
}

// SSE-05
/// A keep-alive comment.
pub(crate) fn sse_keepalive() -> Bytes {
    Bytes::from_static(b": ping\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use std::sync::{Arc, Mutex};
    use tokio::sync::{mpsc, oneshot};

    const EVERY: Duration = Duration::from_secs(15);

    /// A source fed by the test: `Event` frames until the sender goes.
    fn channel_source() -> (mpsc::UnboundedSender<SseItem>, impl Stream<Item = SseItem>) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        (
            tx,
            futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)),
        )
    }

    /// A cleanup that records every call.
    fn recorder() -> (Arc<Mutex<Vec<Close>>>, impl FnOnce(Close) + Send + 'static) {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let c = calls.clone();
        (calls, move |how| c.lock().unwrap().push(how))
    }

    fn text(b: Option<Bytes>) -> Option<String> {
        b.map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    // SSE-05
    #[tokio::test(start_paused = true)]
    async fn an_idle_source_gets_a_keep_alive_after_the_interval_and_not_before() {
        let (_tx, source) = channel_source();
        let mut body = SseBody::new().source(source).keep_alive(EVERY);
        let early = tokio::time::timeout(EVERY - Duration::from_millis(1), body.next()).await;
        assert!(early.is_err(), "nothing is due before the interval");
        assert_eq!(text(body.next().await).as_deref(), Some(": ping\n\n"));
        assert_eq!(text(body.next().await).as_deref(), Some(": ping\n\n"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_interval_sends_no_keep_alive() {
        let (_tx, source) = channel_source();
        let mut body = SseBody::new().source(source).keep_alive(Duration::ZERO);
        let r = tokio::time::timeout(EVERY * 10, body.next()).await;
        assert!(r.is_err(), "no frame without a keep-alive interval");
    }

    #[tokio::test(start_paused = true)]
    async fn leading_frames_then_source_events_in_order() {
        let (tx, source) = channel_source();
        let mut body = SseBody::new()
            .event(Bytes::from_static(b"prime"))
            .events([Bytes::from_static(b"r1"), Bytes::from_static(b"r2")])
            .source(source)
            .keep_alive(EVERY);
        for f in ["a", "b", "c"] {
            assert!(tx.send(SseItem::Event(Bytes::from(f))).is_ok());
        }
        let mut got = Vec::new();
        for _ in 0..6 {
            got.extend(text(body.next().await));
        }
        assert_eq!(got, ["prime", "r1", "r2", "a", "b", "c"]);
    }

    // SSE-03
    #[tokio::test(start_paused = true)]
    async fn the_final_event_comes_last_after_queued_events_then_the_end() {
        let (tx, source) = channel_source();
        let (done_tx, done_rx) = oneshot::channel::<Bytes>();
        let (calls, on_close) = recorder();
        // The final future queues one more event as it resolves, as a
        // handler's last notification races its result.
        let late = tx.clone();
        let mut body = SseBody::new()
            .source(source)
            .finish(async move {
                let last = done_rx.await.ok();
                assert!(late.send(SseItem::Event(Bytes::from("late"))).is_ok());
                last
            })
            .keep_alive(EVERY)
            .on_close(on_close);
        assert!(tx.send(SseItem::Event(Bytes::from("n1"))).is_ok());
        assert!(tx.send(SseItem::Event(Bytes::from("n2"))).is_ok());
        assert!(done_tx.send(Bytes::from("final")).is_ok());
        // The source first, in order; then what was queued as the final
        // future resolved, and the final event, in one frame.
        assert_eq!(text(body.next().await).as_deref(), Some("n1"));
        assert_eq!(text(body.next().await).as_deref(), Some("n2"));
        assert_eq!(text(body.next().await).as_deref(), Some("latefinal"));
        assert_eq!(*calls.lock().unwrap(), [Close::Finished]);
        assert!(body.next().await.is_none());
        assert!(body.next().await.is_none());
        drop(body);
        assert_eq!(*calls.lock().unwrap(), [Close::Finished], "once");
    }

    #[tokio::test(start_paused = true)]
    async fn a_final_future_without_an_event_ends_the_body() {
        let (_tx, source) = channel_source();
        let (calls, on_close) = recorder();
        let mut body = SseBody::new()
            .source(source)
            .finish(async { None })
            .on_close(on_close);
        assert!(body.next().await.is_none());
        assert_eq!(*calls.lock().unwrap(), [Close::Finished]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_last_item_or_the_source_end_ends_the_body() {
        let (tx, source) = channel_source();
        let (calls, on_close) = recorder();
        let mut body = SseBody::new()
            .source(source)
            .keep_alive(EVERY)
            .on_close(on_close);
        assert!(tx.send(SseItem::Last(Bytes::from("bye"))).is_ok());
        assert!(tx.send(SseItem::Event(Bytes::from("never"))).is_ok());
        assert_eq!(text(body.next().await).as_deref(), Some("bye"));
        assert!(body.next().await.is_none());
        assert_eq!(*calls.lock().unwrap(), [Close::Finished]);

        let (tx, source) = channel_source();
        let (calls, on_close) = recorder();
        let mut body = SseBody::new().source(source).on_close(on_close);
        drop(tx);
        assert!(body.next().await.is_none());
        assert_eq!(*calls.lock().unwrap(), [Close::Finished]);
    }

    #[tokio::test(start_paused = true)]
    async fn leading_frames_alone_end_the_body() {
        let (calls, on_close) = recorder();
        let mut body = SseBody::new()
            .event(Bytes::from("only"))
            .keep_alive(EVERY)
            .on_close(on_close);
        assert_eq!(text(body.next().await).as_deref(), Some("only"));
        assert!(body.next().await.is_none());
        assert_eq!(*calls.lock().unwrap(), [Close::Finished]);
    }

    // CANCEL-01
    #[tokio::test(start_paused = true)]
    async fn dropping_the_body_runs_the_cleanup_once_after_dropping_the_final_future() {
        struct Flag(Arc<Mutex<Vec<&'static str>>>);
        impl Drop for Flag {
            fn drop(&mut self) {
                self.0.lock().unwrap().push("final future dropped");
            }
        }
        let order = Arc::new(Mutex::new(Vec::new()));
        let flag = Flag(order.clone());
        let (tx, source) = channel_source();
        let o = order.clone();
        let calls = Arc::new(Mutex::new(Vec::new()));
        let c = calls.clone();
        let mut body = SseBody::new()
            .source(source)
            .finish(async move {
                let _flag = flag;
                std::future::pending::<Option<Bytes>>().await
            })
            .keep_alive(EVERY)
            .on_close(move |how| {
                c.lock().unwrap().push(how);
                o.lock().unwrap().push("cleanup");
            });
        assert!(tx.send(SseItem::Event(Bytes::from("n"))).is_ok());
        assert_eq!(text(body.next().await).as_deref(), Some("n"));
        drop(body);
        assert_eq!(*calls.lock().unwrap(), [Close::Abandoned]);
        assert_eq!(*order.lock().unwrap(), ["final future dropped", "cleanup"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_dropped_unpolled_is_abandoned() {
        let (calls, on_close) = recorder();
        let body = SseBody::new()
            .event(Bytes::from("unsent"))
            .on_close(on_close);
        drop(body);
        assert_eq!(*calls.lock().unwrap(), [Close::Abandoned]);
    }
}
