//! The change bus over Redis `PUBLISH`/`SUBSCRIBE`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferromcp_server::notify::{Change, ChangeBus};
use futures_util::StreamExt;
use tokio::sync::{broadcast, mpsc, oneshot};

use crate::{Error, ErrorKind, RedisConfig};

/// Wire format version of a bus message.
const WIRE_VERSION: &str = "1";

// SUB-11
/// A [`ChangeBus`] shared by every replica through one Redis channel,
/// `<prefix>changes`.
///
/// - `publish` delivers to this replica's subscribers at once and queues a
///   `PUBLISH` (one background task, so one replica's changes reach the
///   others in the order it published them). Messages carry the replica id;
///   each replica skips its own, so the publisher sees no duplicate.
/// - A [`Change::SessionMessage`] (a cancellation or an answer relayed for
///   shared sessions) goes to the other replicas only: its publisher could
///   not act on it. One bus is therefore one replica: services that share
///   sessions relay to each other only through separate buses (each with
///   its own replica id), even within one process.
/// - Each replica holds one `SUBSCRIBE` connection and fans messages out to
///   its local subscribers (a bounded broadcast channel, as `LocalBus`).
/// - When that connection is lost (or a health `PING` goes unanswered),
///   every local receiver is closed, so listen streams end and clients
///   re-listen instead of silently missing changes; until the
///   subscription is back, new receivers are closed at once. The bus
///   reconnects and resubscribes by itself with capped exponential backoff.
///
/// Dropping the bus stops its background tasks.
pub struct RedisChangeBus {
    shared: Arc<Shared>,
    queue: mpsc::Sender<Outgoing>,
    subscriber: tokio::task::JoinHandle<()>,
    publisher: tokio::task::JoinHandle<()>,
    timeout: Duration,
}

impl std::fmt::Debug for RedisChangeBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisChangeBus")
            .field("channel", &self.shared.channel)
            .field("replica", &self.shared.replica)
            .field("connected", &self.is_connected())
            .finish_non_exhaustive()
    }
}

struct Shared {
    channel: String,
    replica: String,
    backlog: usize,
    /// The current generation's sender; `None` while unsubscribed.
    local: Mutex<Option<broadcast::Sender<Change>>>,
    connected: AtomicBool,
    /// Changes that could not be queued for publishing.
    dropped: AtomicU64,
}

impl Shared {
    /// Hands a change this replica publishes to its own subscribers, at
    /// once (Redis does not echo it back). Not a
    /// [`Change::SessionMessage`]: the replica publishes one only because
    /// it could not act on it itself, so its own session relay would
    /// decode it just to drop it, and its listen streams never show it.
    fn deliver_locally(&self, change: &Change) {
        if matches!(change, Change::SessionMessage { .. }) {
            return;
        }
        let local = self.local.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = local.as_ref() {
            // No subscribers is not an error.
            let _ = tx.send(change.clone());
        }
    }

    /// Starts a new generation of local receivers.
    fn open_generation(&self) -> broadcast::Sender<Change> {
        let (tx, _) = broadcast::channel(self.backlog);
        *self.local.lock().unwrap_or_else(|p| p.into_inner()) = Some(tx.clone());
        self.connected.store(true, Ordering::SeqCst);
        tx
    }

    /// Closes every local receiver (they see `RecvError::Closed` once they
    /// have drained what was delivered before).
    fn close_generation(&self) {
        self.connected.store(false, Ordering::SeqCst);
        self.local.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}

struct Outgoing {
    payload: String,
    ack: Option<oneshot::Sender<Result<(), Error>>>,
}

impl RedisChangeBus {
    pub(crate) async fn connect(config: &RedisConfig) -> Result<Self, Error> {
        let shared = Arc::new(Shared {
            channel: format!("{}changes", config.key_prefix),
            replica: config.replica_id.clone(),
            backlog: config.bus_backlog,
            local: Mutex::new(None),
            connected: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
        });
        // Subscribe before returning: a Redis that is down at start-up is
        // an error for the caller, not a silent degraded mode.
        let first = subscribe(config, &shared.channel).await?;
        let conn = config.connection_manager().await?;
        let tx = shared.open_generation();
        let (queue, rx) = mpsc::channel(config.publish_queue);
        let subscriber = tokio::spawn(run_subscriber(shared.clone(), config.clone(), first, tx));
        let publisher = tokio::spawn(run_publisher(
            conn,
            shared.channel.clone(),
            config.command_timeout,
            rx,
        ));
        Ok(Self {
            shared,
            queue,
            subscriber,
            publisher,
            timeout: config.command_timeout,
        })
    }

    /// True while the subscription to the channel is up.
    pub fn is_connected(&self) -> bool {
        self.shared.connected.load(Ordering::SeqCst)
    }

    /// This replica's id (skipped when it comes back from Redis).
    pub fn replica_id(&self) -> &str {
        &self.shared.replica
    }

    /// How many changes `publish` could not queue (queue full) since start.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// Like [`ChangeBus::publish`], but waits until Redis has accepted the
    /// `PUBLISH` (in order with every earlier publish of this replica) and
    /// reports a failure, within about twice the command timeout.
    pub async fn publish_checked(&self, change: Change) -> Result<(), Error> {
        self.shared.deliver_locally(&change);
        let (ack, done) = oneshot::channel();
        let item = Outgoing {
            payload: encode(&self.shared.replica, &change),
            ack: Some(ack),
        };
        let limit = self.timeout.saturating_mul(2);
        let wait = async {
            self.queue
                .send(item)
                .await
                .map_err(|_| Error::new(ErrorKind::Closed, "the change bus is shut down"))?;
            done.await
                .map_err(|_| Error::new(ErrorKind::Closed, "the change bus is shut down"))?
        };
        match tokio::time::timeout(limit, wait).await {
            Ok(r) => r,
            Err(_) => Err(Error::timeout("PUBLISH", limit)),
        }
    }
}

impl Drop for RedisChangeBus {
    fn drop(&mut self) {
        self.subscriber.abort();
        self.publisher.abort();
        self.shared.close_generation();
    }
}

impl ChangeBus for RedisChangeBus {
    fn publish(&self, change: Change) {
        self.shared.deliver_locally(&change);
        let item = Outgoing {
            payload: encode(&self.shared.replica, &change),
            ack: None,
        };
        if self.queue.try_send(item).is_err() {
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                "change bus publish queue full or closed; a change did not reach other replicas"
            );
        }
    }

    fn publish_confirmed(
        &self,
        change: Change,
    ) -> futures_util::future::BoxFuture<'_, Result<(), ferromcp_server::notify::PublishError>>
    {
        Box::pin(async move {
            self.publish_checked(change)
                .await
                .map_err(|e| ferromcp_server::notify::PublishError::new(e.to_string()))
        })
    }

    fn subscribe(&self) -> broadcast::Receiver<Change> {
        let local = self.shared.local.lock().unwrap_or_else(|p| p.into_inner());
        match local.as_ref() {
            Some(tx) => tx.subscribe(),
            None => {
                // Unsubscribed from Redis: a receiver that is closed at once,
                // so the listen stream ends rather than missing changes.
                let (tx, rx) = broadcast::channel(1);
                drop(tx);
                rx
            }
        }
    }
}

async fn subscribe(config: &RedisConfig, channel: &str) -> Result<redis::aio::PubSub, Error> {
    let attempt = async {
        let mut pubsub = config
            .client
            .get_async_pubsub()
            .await
            .map_err(|e| Error::redis("cannot open the Redis subscription", e))?;
        pubsub
            .subscribe(channel)
            .await
            .map_err(|e| Error::redis("SUBSCRIBE failed", e))?;
        Ok(pubsub)
    };
    let limit = config
        .connect_timeout
        .saturating_add(config.command_timeout);
    match tokio::time::timeout(limit, attempt).await {
        Ok(r) => r,
        Err(_) => Err(Error::timeout("SUBSCRIBE", limit)),
    }
}

async fn run_subscriber(
    shared: Arc<Shared>,
    config: RedisConfig,
    first: redis::aio::PubSub,
    first_tx: broadcast::Sender<Change>,
) {
    let mut current = Some((first, first_tx));
    let mut delay = config.reconnect_min_delay;
    loop {
        if let Some((pubsub, tx)) = current.take() {
            delay = config.reconnect_min_delay;
            pump(&shared, &config, pubsub, &tx).await;
            shared.close_generation();
            drop(tx);
            tracing::warn!(channel = %shared.channel, "lost the Redis change-bus subscription; listen streams end, reconnecting");
        }
        tokio::time::sleep(delay).await;
        delay = delay.saturating_mul(2).min(config.reconnect_max_delay);
        match subscribe(&config, &shared.channel).await {
            Ok(pubsub) => {
                let tx = shared.open_generation();
                tracing::info!(channel = %shared.channel, "Redis change-bus subscription restored");
                current = Some((pubsub, tx));
            }
            Err(e) => tracing::debug!(error = %e, "Redis change-bus resubscribe failed"),
        }
    }
}

/// Forwards messages until the subscription is lost.
async fn pump(
    shared: &Shared,
    config: &RedisConfig,
    pubsub: redis::aio::PubSub,
    tx: &broadcast::Sender<Change>,
) {
    let (mut sink, mut stream) = pubsub.split();
    let mut ping = tokio::time::interval(config.ping_interval);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ping.tick().await;
    loop {
        tokio::select! {
            msg = stream.next() => {
                let Some(msg) = msg else { return };
                match decode(msg.get_payload_bytes()) {
                    Some((replica, _)) if replica == shared.replica => {}
                    Some((_, change)) => {
                        let _ = tx.send(change);
                    }
                    None => tracing::debug!("ignored an unreadable change-bus message"),
                }
            }
            _ = ping.tick() => {
                let answered = tokio::time::timeout(
                    config.command_timeout,
                    sink.ping::<redis::Value>(),
                )
                .await;
                if !matches!(answered, Ok(Ok(_))) {
                    return;
                }
            }
        }
    }
}

async fn run_publisher(
    mut conn: redis::aio::ConnectionManager,
    channel: String,
    timeout: Duration,
    mut rx: mpsc::Receiver<Outgoing>,
) {
    while let Some(item) = rx.recv().await {
        let mut cmd = redis::cmd("PUBLISH");
        cmd.arg(&channel).arg(&item.payload);
        let result = match tokio::time::timeout(timeout, cmd.query_async::<i64>(&mut conn)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(Error::redis("PUBLISH failed", e)),
            Err(_) => Err(Error::timeout("PUBLISH", timeout)),
        };
        match item.ack {
            Some(ack) => {
                let _ = ack.send(result);
            }
            None => {
                if let Err(e) = result {
                    tracing::warn!(error = %e, "a change did not reach other replicas");
                }
            }
        }
    }
}

/// `1\n<replica>\n<kind>[\n<uri>]` with kind `T`, `P`, `R` or `U`.
fn encode(replica: &str, change: &Change) -> String {
    let (kind, rest) = match change {
        Change::ToolsListChanged => ("T", None),
        Change::PromptsListChanged => ("P", None),
        Change::ResourcesListChanged => ("R", None),
        Change::ResourceUpdated(uri) => ("U", Some(uri.clone())),
        // The session id never holds a newline (ours are hex); the message
        // may: it is the rest of the payload.
        Change::SessionMessage { session, message } => ("S", Some(format!("{session}\n{message}"))),
        Change::SessionEnded(session) => ("E", Some(session.clone())),
        // A change this build does not know how to carry stays local.
        _ => ("?", None),
    };
    let mut s = format!("{WIRE_VERSION}\n{replica}\n{kind}");
    if let Some(rest) = rest {
        s.push('\n');
        s.push_str(&rest);
    }
    s
}

fn decode(bytes: &[u8]) -> Option<(&str, Change)> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut parts = text.splitn(4, '\n');
    if parts.next()? != WIRE_VERSION {
        return None;
    }
    let replica = parts.next()?;
    let change = match (parts.next()?, parts.next()) {
        ("T", None) => Change::ToolsListChanged,
        ("P", None) => Change::PromptsListChanged,
        ("R", None) => Change::ResourcesListChanged,
        ("U", Some(uri)) => Change::ResourceUpdated(uri.to_owned()),
        ("E", Some(session)) => Change::SessionEnded(session.to_owned()),
        ("S", Some(rest)) => {
            let (session, message) = rest.split_once('\n')?;
            Change::SessionMessage {
                session: session.to_owned(),
                message: message.to_owned(),
            }
        }
        _ => return None,
    };
    Some((replica, change))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn wire_round_trip() {
        for c in [
            Change::ToolsListChanged,
            Change::PromptsListChanged,
            Change::ResourcesListChanged,
            Change::ResourceUpdated("file:///a\nb c".into()),
            Change::ResourceUpdated(String::new()),
            Change::SessionMessage {
                session: "ab12".into(),
                message: "{\"jsonrpc\":\"2.0\",\n\"id\":\"srv-1\",\"result\":{}}".into(),
            },
            Change::SessionEnded("ab12".into()),
        ] {
            let wire = encode("r1", &c);
            assert_eq!(decode(wire.as_bytes()), Some(("r1", c)));
        }
        for bad in [
            "",
            "2\nr\nT",
            "1\nr",
            "1\nr\nX",
            "1\nr\nT\nextra",
            "1\nr\nU",
        ] {
            assert_eq!(decode(bad.as_bytes()), None, "{bad:?}");
        }
        assert_eq!(decode(&[0xff, b'\n']), None);
    }
}
