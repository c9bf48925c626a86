//! `subscriptions/listen` streams and their counted slots.

use super::reject::Rejection;
use super::sse::{SseBody, SseItem, sse_event};
use super::{HttpInner, McpBody, sse_response};
use crate::listen;
use ferromcp_protocol::jsonrpc::RequestId;
use http::Response;
use std::sync::Arc;

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
        shared.limits().max_listen_streams,
    ) else {
        return Rejection::TooManySubscriptions.into_response();
    };
    let filter = listen::honoured(&shared, &requested);
    // Subscribe before acknowledging (SUB-13).
    let rx = shared.bus().subscribe();
    let ack = sse_event(None, &listen::acknowledgement(&id, &filter));
    let ended = sse_event(None, &listen::ended(&id));
    // Matching changes; a lagged (past the backlog) or closed bus ends
    // the stream (SUB-13).
    let changes =
        futures_util::stream::unfold((rx, filter, id), |(mut rx, filter, id)| async move {
            loop {
                match rx.recv().await {
                    Ok(c) => {
                        if let Some(m) = listen::render_for_listen(&c, &filter, &id) {
                            return Some((SseItem::Event(sse_event(None, &m)), (rx, filter, id)));
                        }
                    }
                    Err(_) => return None,
                }
            }
        });
    let shutdown = inner.shutdown.clone();
    sse_response(
        SseBody::new()
            .event(ack)
            .source(changes)
            // Server shutdown: the listen result ends the stream.
            .finish(async move {
                shutdown.cancelled_owned().await;
                Some(ended)
            })
            .keep_alive(shared.limits().sse_keepalive)
            .on_close(move |_| drop(slot)),
    )
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
