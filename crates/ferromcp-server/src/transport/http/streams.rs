//! `subscriptions/listen` streams and their counted slots.

use super::*;

// SUB-*, HTTP-16
/// A `subscriptions/listen` stream: acknowledgement first,
/// then matching changes tagged with the subscription id, keep-alives, and
/// the listen result on server shutdown.
pub(super) fn listen_stream(
    inner: &Arc<HttpInner>,
    id: RequestId,
    requested: ferromcp_protocol::types::SubscriptionFilter,
) -> Response<McpBody> {
    let shared = inner.shared.clone();
    let Some(slot) = ListenSlot::acquire(
        &inner.sessions.listen_count,
        shared.limits.max_listen_streams,
    ) else {
        return Rejection::TooManySubscriptions.into_response();
    };
    let filter = listen::honoured(&shared, &requested);
    // Subscribe before acknowledging (SUB-13).
    let rx = shared.bus.subscribe();
    let ack = sse_event(None, &listen::acknowledgement(&id, &filter));
    let mut tick = tokio::time::interval(shared.limits.sse_keepalive);
    tick.reset();
    let shutdown = inner.shutdown.clone();
    struct St {
        rx: tokio::sync::broadcast::Receiver<crate::notify::Change>,
        filter: ferromcp_protocol::types::SubscriptionFilter,
        id: RequestId,
        tick: tokio::time::Interval,
        shutdown: CancellationToken,
        done: bool,
        _slot: ListenSlot,
    }
    let st = St {
        rx,
        filter,
        id,
        tick,
        shutdown,
        done: false,
        _slot: slot,
    };
    let rest = futures_util::stream::unfold(st, |mut st| async move {
        if st.done {
            return None;
        }
        loop {
            tokio::select! {
                _ = st.shutdown.cancelled() => {
                    st.done = true;
                    let b = sse_event(None, &listen::ended(&st.id));
                    return Some((b, st));
                }
                c = st.rx.recv() => match c {
                    Ok(c) => {
                        if let Some(m) = listen::render_for_listen(&c, &st.filter, &st.id) {
                            return Some((sse_event(None, &m), st));
                        }
                    }
                    // Lagged past the backlog, or bus closed: end the stream (SUB-13).
                    Err(_) => return None,
                },
                _ = st.tick.tick() => return Some((sse_keepalive(), st)),
            }
        }
    });
    sse_response(futures_util::stream::once(async move { ack }).chain(rest))
}

/// A counted slot for an open listen stream, released on drop.
pub(crate) struct ListenSlot(Arc<std::sync::atomic::AtomicUsize>);

impl ListenSlot {
    fn acquire(counter: &Arc<std::sync::atomic::AtomicUsize>, max: usize) -> Option<Self> {
        use std::sync::atomic::Ordering;
        if counter.fetch_add(1, Ordering::AcqRel) >= max {
            counter.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Self(counter.clone()))
    }
}

impl Drop for ListenSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}
