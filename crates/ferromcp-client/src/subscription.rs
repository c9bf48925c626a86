//! `subscriptions/listen`: open a stream, wait for the
//! acknowledgement, then receive the notifications tagged with this
//! subscription's id (demultiplexed on stdio). The end is reported
//! as a graceful completion (the listen result), a server
//! `notifications/cancelled`, or a loss (no automatic
//! re-listen). Dropping the subscription ends it: the HTTP stream is closed,
//! or `notifications/cancelled` is sent on stdio.
// SUB-01…SUB-11, STDIO-06, SUB-10, SUB-11, SUB-09; handbook Appendix C.1

use crate::core::Inner;
use crate::error::{Error, ErrorKind, Result};
use crate::message::Inbound;
use crate::transport::{Exchange, Outbound};
use ferromcp_protocol::jsonrpc::{self, OutgoingRequest};
use ferromcp_protocol::method;
use ferromcp_protocol::types::{
    JsonObject, SubscriptionFilter, SubscriptionsAcknowledgedNotificationParams,
};
use ferromcp_protocol::{ErrorObject, RequestId};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT_LISTEN: AtomicU64 = AtomicU64::new(1);

/// A notification delivered on a subscription.
#[derive(Debug, Clone, PartialEq)]
pub enum SubscriptionEvent {
    /// `notifications/tools/list_changed`
    ToolsListChanged,
    /// `notifications/prompts/list_changed`
    PromptsListChanged,
    /// `notifications/resources/list_changed`
    ResourcesListChanged,
    /// `notifications/resources/updated`
    ResourceUpdated {
        /// The updated resource.
        uri: String,
    },
    // SUB-11
    /// A resilient subscription ([`crate::Client::listen_resilient`])
    /// lost its stream and listens again: changes made in between may have
    /// been missed, so refetch what the application shows.
    Relistened {
        /// Whether the stream broke without a result (`false`: the server
        /// ended it gracefully, e.g. while draining for a restart).
        after_loss: bool,
    },
    /// Any other notification.
    Other {
        /// The method.
        method: String,
        /// The params.
        params: Option<Value>,
    },
}

/// How a subscription ended.
#[derive(Debug, Clone)]
pub enum SubscriptionEnd {
    // SUB-10
    /// The server ended it gracefully with the listen result.
    Completed,
    /// The server ended it with `notifications/cancelled`.
    CancelledByServer,
    /// The server answered the listen request with an error.
    Failed(ErrorObject),
    // SUB-11
    /// The stream broke without a result: re-listen and refetch.
    Lost(Error),
}

/// An open `subscriptions/listen` stream.
pub struct Subscription {
    inner: Arc<Inner>,
    id: RequestId,
    exchange: Option<Exchange>,
    acknowledged: SubscriptionFilter,
    ended: Option<SubscriptionEnd>,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .field("acknowledged", &self.acknowledged)
            .field("ended", &self.ended)
            .finish()
    }
}

impl Subscription {
    pub(crate) async fn open(inner: Arc<Inner>, filter: SubscriptionFilter) -> Result<Self> {
        // SUB-07: string ids, never clashing with numeric request ids.
        let id = RequestId::string(format!(
            "listen-{}",
            NEXT_LISTEN.fetch_add(1, Ordering::Relaxed)
        ));
        let st = inner.state();
        let mut params = JsonObject::new();
        params.insert(
            "notifications".into(),
            serde_json::to_value(&filter)
                .map_err(|e| Error::invalid("bad filter").with_source(e))?,
        );
        let meta = inner.envelope_value(st.version)?;
        params.insert("_meta".into(), meta);
        let body = jsonrpc::to_vec(&OutgoingRequest::new(
            &id,
            method::SUBSCRIPTIONS_LISTEN,
            Some(&params),
        ));
        let headers = inner.headers_for(&st, method::SUBSCRIPTIONS_LISTEN, &params);
        let mut exchange = inner
            .transport
            .request(Outbound {
                id: Some(id.clone()),
                body,
                headers,
                cancellable: true,
                resumable: false,
            })
            .await?;
        let timeout = inner.config.limits.request_timeout;
        let ack = tokio::time::timeout(timeout, async {
            loop {
                match exchange.rx.recv().await {
                    None => {
                        return Err(Error::transport(
                            "the listen stream ended before its acknowledgement",
                        ));
                    }
                    Some(Err(e)) => return Err(e),
                    Some(Ok(Inbound::Response {
                        outcome: Err(e), ..
                    })) => return Err(Error::protocol(e)),
                    Some(Ok(Inbound::Response { .. })) => {
                        return Err(Error::invalid(
                            "the listen stream ended before its acknowledgement",
                        ));
                    }
                    Some(Ok(Inbound::Notification { method: m, params }))
                        if m == method::NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED =>
                    {
                        let p: SubscriptionsAcknowledgedNotificationParams =
                            serde_json::from_str(params.as_ref().map_or("{}", |p| p.get()))
                                .map_err(|e| {
                                    Error::invalid("malformed acknowledgement").with_source(e)
                                })?;
                        return Ok(p.notifications);
                    }
                    Some(Ok(other)) => {
                        tracing::debug!(?other, "message before the listen acknowledgement")
                    }
                }
            }
        })
        .await
        .map_err(|_| {
            Error::new(
                ErrorKind::Timeout { elapsed: timeout },
                "no acknowledgement for subscriptions/listen",
            )
        })??;
        if ack != filter {
            // SUB-05: degrade gracefully; the caller can inspect `acknowledged`.
            tracing::debug!(
                ?filter,
                ?ack,
                "the server honours only part of the subscription"
            );
        }
        Ok(Self {
            inner,
            id,
            exchange: Some(exchange),
            acknowledged: ack,
            ended: None,
        })
    }

    /// The listen request id (the `subscriptionId`).
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    // SUB-03, SUB-05
    /// The filter the server acknowledged.
    pub fn acknowledged(&self) -> &SubscriptionFilter {
        &self.acknowledged
    }

    /// The next event, or how the stream ended (repeated on later calls).
    pub async fn next(&mut self) -> std::result::Result<SubscriptionEvent, SubscriptionEnd> {
        loop {
            if let Some(end) = &self.ended {
                return Err(end.clone());
            }
            let Some(ex) = self.exchange.as_mut() else {
                return Err(SubscriptionEnd::Lost(Error::closed()));
            };
            let end = match ex.rx.recv().await {
                None => SubscriptionEnd::Lost(Error::transport(
                    "the listen stream ended without a result",
                )),
                Some(Err(e)) => SubscriptionEnd::Lost(e),
                Some(Ok(Inbound::Response { outcome: Ok(_), .. })) => SubscriptionEnd::Completed,
                Some(Ok(Inbound::Response {
                    outcome: Err(e), ..
                })) => SubscriptionEnd::Failed(e),
                Some(Ok(Inbound::Notification { method: m, params })) => {
                    let params: Option<Value> =
                        params.and_then(|p| serde_json::from_str(p.get()).ok());
                    if m == method::NOTIFICATIONS_CANCELLED {
                        SubscriptionEnd::CancelledByServer
                    } else {
                        self.inner.invalidate_for(&m, params.as_ref()); // CACHE-10
                        return Ok(match m.as_str() {
                            method::NOTIFICATIONS_TOOLS_LIST_CHANGED => {
                                SubscriptionEvent::ToolsListChanged
                            }
                            method::NOTIFICATIONS_PROMPTS_LIST_CHANGED => {
                                SubscriptionEvent::PromptsListChanged
                            }
                            method::NOTIFICATIONS_RESOURCES_LIST_CHANGED => {
                                SubscriptionEvent::ResourcesListChanged
                            }
                            method::NOTIFICATIONS_RESOURCES_UPDATED => {
                                SubscriptionEvent::ResourceUpdated {
                                    uri: params
                                        .as_ref()
                                        .and_then(|p| p.get("uri"))
                                        .and_then(Value::as_str)
                                        .unwrap_or_default()
                                        .to_owned(),
                                }
                            }
                            _ => SubscriptionEvent::Other { method: m, params },
                        });
                    }
                }
                Some(Ok(Inbound::Request { method: m, .. })) => {
                    tracing::warn!(method = %m, "ignoring a server request on a listen stream (BASE-07)");
                    continue;
                }
            };
            // The stream is over; nothing needs cancelling.
            self.exchange = None;
            self.ended = Some(end);
        }
    }
}

/// A `subscriptions/listen` that listens again, with backoff, whenever its
/// stream ends other than by an error answer (see
/// [`crate::Client::listen_resilient`]).
pub struct ResilientSubscription {
    inner: Arc<Inner>,
    filter: SubscriptionFilter,
    policy: crate::RetryPolicy,
    current: Option<Subscription>,
    /// Why the previous stream ended, while a new one is being opened.
    reopen_after_loss: Option<bool>,
}

impl std::fmt::Debug for ResilientSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResilientSubscription")
            .field("filter", &self.filter)
            .field("policy", &self.policy)
            .field("current", &self.current)
            .finish_non_exhaustive()
    }
}

impl ResilientSubscription {
    pub(crate) async fn open(
        inner: Arc<Inner>,
        filter: SubscriptionFilter,
        policy: crate::RetryPolicy,
    ) -> Result<Self> {
        let current = Subscription::open(inner.clone(), filter.clone()).await?;
        Ok(Self {
            inner,
            filter,
            policy,
            current: Some(current),
            reopen_after_loss: None,
        })
    }

    /// The current stream's acknowledged filter.
    pub fn acknowledged(&self) -> Option<&SubscriptionFilter> {
        self.current.as_ref().map(Subscription::acknowledged)
    }

    /// The next event. After a lost or gracefully ended stream it listens
    /// again (exponential backoff with jitter, at most the policy's attempts
    /// per loss, within its time budget) and yields
    /// [`SubscriptionEvent::Relistened`]. It ends only when the server
    /// refuses the listen with an error, or when listening again failed
    /// every attempt (the last failure is returned as
    /// [`SubscriptionEnd::Lost`]).
    pub async fn next(&mut self) -> std::result::Result<SubscriptionEvent, SubscriptionEnd> {
        if let Some(sub) = self.current.as_mut() {
            match sub.next().await {
                Ok(ev) => return Ok(ev),
                Err(SubscriptionEnd::Failed(e)) => {
                    self.current = None;
                    return Err(SubscriptionEnd::Failed(e));
                }
                Err(end) => {
                    tracing::debug!(?end, "listen stream ended; listening again");
                    self.current = None;
                    self.reopen_after_loss = Some(matches!(end, SubscriptionEnd::Lost(_)));
                }
            }
        }
        let after_loss = self.reopen_after_loss.unwrap_or(true);
        let started = std::time::Instant::now();
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let wait = if attempt == 1 {
                std::time::Duration::ZERO
            } else {
                self.policy.delay(attempt - 1, None)
            };
            tokio::time::sleep(wait).await;
            match Subscription::open(self.inner.clone(), self.filter.clone()).await {
                Ok(s) => {
                    self.current = Some(s);
                    self.reopen_after_loss = None;
                    return Ok(SubscriptionEvent::Relistened { after_loss });
                }
                Err(e) if e.is_protocol() => {
                    return Err(SubscriptionEnd::Failed(
                        e.rpc_error()
                            .cloned()
                            .unwrap_or_else(|| ErrorObject::internal("listen refused")),
                    ));
                }
                Err(e) => {
                    let next_wait = self.policy.delay(attempt, None);
                    if attempt >= self.policy.attempts()
                        || started.elapsed() + next_wait >= self.policy.budget()
                    {
                        return Err(SubscriptionEnd::Lost(e));
                    }
                    tracing::debug!(attempt, error = %e, "listening again failed; backing off");
                }
            }
        }
    }
}
