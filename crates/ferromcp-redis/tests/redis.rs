//! Integration tests against a real `redis-server` started per test on a
//! free loopback port, without persistence. Skipped (with a loud message)
//! only when `redis-server` is not installed; scripts/test.sh installs it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferromcp_redis::{RedisChangeBus, RedisConfig, RedisSingleUse};
use ferromcp_server::notify::{Change, ChangeBus};
use ferromcp_server::request_state::{KeyRing, StateBinding, StateError, StateSealer};
use ferromcp_server::single_use::SingleUseStore;
use tokio::sync::broadcast::error::RecvError;

struct RedisServer {
    child: Option<Child>,
    port: u16,
}

impl RedisServer {
    /// A fresh redis-server, or `None` (after a loud message) when the
    /// binary is missing.
    fn start() -> Option<Self> {
        if Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_err()
        {
            eprintln!(
                "\n!!! SKIPPED: redis-server is not installed; \
                 install it (apt-get install redis-server) to run the ferromcp-redis integration tests !!!\n"
            );
            return None;
        }
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let mut s = Self { child: None, port };
        s.spawn();
        Some(s)
    }

    fn spawn(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn redis-server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", self.port)) {
                use std::io::{Read, Write};
                let mut buf = [0u8; 7];
                if s.write_all(b"PING\r\n").is_ok()
                    && s.read_exact(&mut buf).is_ok()
                    && &buf == b"+PONG\r\n"
                {
                    return;
                }
            }
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    fn config(&self, replica: &str) -> RedisConfig {
        RedisConfig::new(&self.url())
            .unwrap()
            .key_prefix(format!("test{}:", self.port))
            .replica_id(replica)
            .command_timeout(Duration::from_millis(300))
            .connect_timeout(Duration::from_millis(500))
            .reconnect_delay(Duration::from_millis(20), Duration::from_millis(200))
            .ping_interval(Duration::from_millis(200))
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn recv(rx: &mut tokio::sync::broadcast::Receiver<Change>) -> Change {
    tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("a change within 5 s")
        .expect("an open bus")
}

fn change(i: usize) -> Change {
    match i % 4 {
        0 => Change::ToolsListChanged,
        1 => Change::PromptsListChanged,
        2 => Change::ResourcesListChanged,
        _ => Change::ResourceUpdated(format!("file:///r/{i}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_fan_out_across_replicas_in_order_without_self_duplicates() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let a = redis.config("a").connect_change_bus().await.unwrap();
    let b = redis.config("b").connect_change_bus().await.unwrap();
    assert!(a.is_connected() && b.is_connected());
    let mut on_a = a.subscribe();
    let mut on_b = b.subscribe();
    let mut on_b2 = b.subscribe();

    for i in 0..40 {
        if i % 10 == 9 {
            a.publish_checked(change(i)).await.unwrap();
        } else {
            a.publish(change(i));
        }
    }
    for i in 0..40 {
        // The publisher's own subscribers get each change once, at once.
        assert_eq!(recv(&mut on_a).await, change(i));
        // Every subscriber on the other replica, in publish order.
        assert_eq!(recv(&mut on_b).await, change(i), "at {i}");
        assert_eq!(recv(&mut on_b2).await, change(i));
    }
    // Order is per publisher: B's own change reaches B's subscribers at
    // once, and A's through Redis.
    b.publish(Change::ResourceUpdated("from-b".into()));
    let from_b = Change::ResourceUpdated("from-b".into());
    assert_eq!(recv(&mut on_a).await, from_b);
    assert_eq!(recv(&mut on_b).await, from_b);
    // No echo of a replica's own messages through Redis.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(matches!(
        on_a.try_recv(),
        Err(tokio::sync::broadcast::error::TryRecvError::Empty)
    ));
    assert!(matches!(
        on_b.try_recv(),
        Err(tokio::sync::broadcast::error::TryRecvError::Empty)
    ));
    assert_eq!(a.dropped(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_messages_go_to_other_replicas_only() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let a = redis.config("a").connect_change_bus().await.unwrap();
    let b = redis.config("b").connect_change_bus().await.unwrap();
    let mut on_a = a.subscribe();
    let mut on_b = b.subscribe();
    let relayed = |n: u32| Change::SessionMessage {
        session: "ab12".into(),
        message: format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{{\"requestId\":{n}}}}}"
        ),
    };
    // A relays what it could not act on itself, both ways of publishing.
    a.publish(relayed(1));
    a.publish_checked(relayed(2)).await.unwrap();
    a.publish(Change::ToolsListChanged);
    // The other replica gets every one, in order.
    assert_eq!(recv(&mut on_b).await, relayed(1));
    assert_eq!(recv(&mut on_b).await, relayed(2));
    assert_eq!(recv(&mut on_b).await, Change::ToolsListChanged);
    // The publisher's own subscribers get only the ordinary change: its
    // session relay is not handed back what it could not act on.
    assert_eq!(recv(&mut on_a).await, Change::ToolsListChanged);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(matches!(
        on_a.try_recv(),
        Err(tokio::sync::broadcast::error::TryRecvError::Empty)
    ));
    // And B's relayed answer reaches A, not B itself.
    b.publish_checked(relayed(3)).await.unwrap();
    assert_eq!(recv(&mut on_a).await, relayed(3));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(matches!(
        on_b.try_recv(),
        Err(tokio::sync::broadcast::error::TryRecvError::Empty)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_token_consumed_concurrently_on_three_replicas_succeeds_once() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let mut stores = Vec::new();
    for r in ["r1", "r2", "r3"] {
        stores.push(Arc::new(
            redis.config(r).connect_single_use().await.unwrap(),
        ));
    }
    let token = [7u8; 32];
    let mut tasks = Vec::new();
    for i in 0..1000 {
        let store = stores[i % 3].clone();
        tasks.push(tokio::spawn(async move {
            store.consume(&token, 1_000_600, 1_000_000).await
        }));
    }
    let mut firsts = 0;
    for t in tasks {
        if t.await.unwrap().expect("store answers") {
            firsts += 1;
        }
    }
    assert_eq!(firsts, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sealed_state_is_single_use_across_replicas() {
    // End to end through StateSealer: three replicas sharing a key ring and
    // the Redis store open one echoed token concurrently; exactly one wins.
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let keys = "11".repeat(32);
    let mut sealers = Vec::new();
    for r in ["r1", "r2", "r3"] {
        let store: Arc<RedisSingleUse> =
            Arc::new(redis.config(r).connect_single_use().await.unwrap());
        sealers.push(Arc::new(
            StateSealer::new(KeyRing::from_hex_list(&keys).unwrap()).with_single_use_store(store),
        ));
    }
    let binding = StateBinding::new("tools/call", "pay", None, Some("alice"));
    let token = sealers[0].seal(&binding, b"step-2").unwrap();
    let mut tasks = Vec::new();
    for i in 0..30 {
        let sealer = sealers[i % 3].clone();
        let token = token.clone();
        tasks.push(tokio::spawn(async move {
            let binding = StateBinding::new("tools/call", "pay", None, Some("alice"));
            sealer.open_async(&token, &binding).await
        }));
    }
    let mut ok = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(state) => {
                assert_eq!(state, b"step-2");
                ok += 1;
            }
            Err(e) => assert_eq!(e, StateError::Replayed),
        }
    }
    assert_eq!(ok, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumed_tokens_expire() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let store = redis.config("r1").connect_single_use().await.unwrap();
    let token = [3u8; 32];
    assert!(
        store
            .consume_for(&token, Duration::from_millis(150))
            .await
            .unwrap()
    );
    assert!(
        !store
            .consume_for(&token, Duration::from_millis(150))
            .await
            .unwrap()
    );
    // The trait form: the key lives for the token's remaining lifetime.
    assert!(store.consume(&[4; 32], 101, 100).await.unwrap());
    assert!(!store.consume(&[4; 32], 101, 100).await.unwrap());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        store
            .consume_for(&token, Duration::from_secs(60))
            .await
            .unwrap()
    );
    assert!(
        store
            .key_for(&token)
            .starts_with(&format!("test{}:su:", redis.port))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_outage_is_reported_promptly_and_recovered_from() {
    let Some(mut redis) = RedisServer::start() else {
        return;
    };
    let a = redis.config("a").connect_change_bus().await.unwrap();
    let b = redis.config("b").connect_change_bus().await.unwrap();
    let store = redis.config("a").connect_single_use().await.unwrap();
    let mut on_b = b.subscribe();
    a.publish_checked(Change::ToolsListChanged).await.unwrap();
    assert_eq!(recv(&mut on_b).await, Change::ToolsListChanged);

    redis.kill();
    // Subscribers are told: their receivers close (listen streams end).
    let closed = tokio::time::timeout(Duration::from_secs(3), on_b.recv())
        .await
        .expect("subscribers notified within 3 s");
    assert_eq!(closed, Err(RecvError::Closed));
    assert!(!b.is_connected());
    // New subscribers during the outage are closed at once.
    let mut during = b.subscribe();
    assert_eq!(during.recv().await, Err(RecvError::Closed));
    // Publish and consume fail within their bounds.
    let started = Instant::now();
    let e = a
        .publish_checked(Change::PromptsListChanged)
        .await
        .unwrap_err();
    assert!(e.is_connection() || e.is_timeout(), "{e}");
    let e = store.consume(&[1; 32], 2_000, 1_000).await.unwrap_err();
    assert!(e.is_unavailable() || e.is_timeout(), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    // Redis comes back on the same port: everything recovers by itself.
    redis.spawn();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(a.is_connected() && b.is_connected()) {
        assert!(Instant::now() < deadline, "bus did not resubscribe");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut on_b = b.subscribe();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match a.publish_checked(Change::ResourcesListChanged).await {
            Ok(()) => break,
            Err(e) => {
                assert!(Instant::now() < deadline, "publish did not recover: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    assert_eq!(recv(&mut on_b).await, Change::ResourcesListChanged);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match store.consume(&[1; 32], 2_000, 1_000).await {
            Ok(first) => {
                assert!(first);
                break;
            }
            Err(e) => {
                assert!(Instant::now() < deadline, "store did not recover: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_redis_is_a_prompt_startup_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let config = RedisConfig::new(&format!("redis://127.0.0.1:{port}/0"))
        .unwrap()
        .connect_timeout(Duration::from_millis(300))
        .reconnect_delay(Duration::from_millis(10), Duration::from_millis(50));
    let started = Instant::now();
    let e = config.connect_change_bus().await.unwrap_err();
    assert!(e.is_connection() || e.is_timeout(), "{e}");
    let e = config.connect_single_use().await.unwrap_err();
    assert!(e.is_connection() || e.is_timeout(), "{e}");
    assert!(started.elapsed() < Duration::from_secs(3));
    let e = config
        .clone()
        .replica_id("bad id")
        .connect_change_bus()
        .await
        .unwrap_err();
    assert!(e.is_config());
}

#[test]
fn bus_is_a_change_bus() {
    fn takes(_: Option<Arc<dyn ChangeBus>>, _: Option<Arc<dyn SingleUseStore>>) {}
    let _: Option<RedisChangeBus> = None;
    takes(None, None);
}

// ISSUE-23 items 4 and 6
/// Two stores (two replicas) change one session concurrently: every
/// acknowledged subscribe is kept, the log level set meanwhile survives,
/// the subscription cap holds exactly across both, and a store whose
/// scripts Redis forgot (`SCRIPT FLUSH`, as after a restart) loads them
/// again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_session_updates_from_two_stores_all_survive() {
    use ferromcp_server::shared_sessions::{
        SessionRecord, SessionUpdate, SharedSessions, UpdateOutcome,
    };
    let Some(server) = RedisServer::start() else {
        return;
    };
    let a = Arc::new(server.config("a").connect_sessions().await.unwrap());
    let b = Arc::new(server.config("b").connect_sessions().await.unwrap());
    let idle = Duration::from_secs(60);
    let record: SessionRecord = serde_json::from_value(serde_json::json!({
        "version": "2025-11-25", "capabilities": {"roots": {}},
        "clientInfo": {"name": "c", "version": "1"}, "owner": "alice"}))
    .unwrap();
    a.put("s1", &record, idle).await.unwrap();
    let stores = [a.clone(), b.clone()];
    let mut tasks = Vec::new();
    for i in 0..1000usize {
        let store = stores[i % 2].clone();
        tasks.push(tokio::spawn(async move {
            let uri = format!("test://{i}");
            let up = SessionUpdate::Subscribe {
                uri: &uri,
                max: 10_000,
            };
            store.update("s1", up, idle).await.unwrap()
        }));
    }
    let level = serde_json::from_value(serde_json::json!("error")).unwrap();
    let set = b
        .update("s1", SessionUpdate::SetLogLevel(level), idle)
        .await
        .unwrap();
    let mut applied = 0;
    for t in tasks {
        applied += usize::from(t.await.unwrap() == UpdateOutcome::Applied);
    }
    assert_eq!((applied, set), (1000, UpdateOutcome::Applied));
    let got = a.fetch("s1", idle).await.unwrap().unwrap();
    assert_eq!(got.subscriptions.len(), 1000);
    assert_eq!(serde_json::to_value(got.log_level).unwrap(), "error");
    assert_eq!(got.owner.as_deref(), Some("alice"));
    assert_eq!(got.client_info, record.client_info);

    // The cap, checked atomically with the insert: 40 concurrent subscribes
    // to a session with room for 10 leave exactly 10.
    a.put("s2", &record, idle).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..40usize {
        let store = stores[i % 2].clone();
        tasks.push(tokio::spawn(async move {
            let uri = format!("test://{i}");
            let up = SessionUpdate::Subscribe { uri: &uri, max: 10 };
            store.update("s2", up, idle).await.unwrap()
        }));
    }
    let mut outcomes = (0, 0);
    for t in tasks {
        match t.await.unwrap() {
            UpdateOutcome::Applied => outcomes.0 += 1,
            UpdateOutcome::TooManySubscriptions => outcomes.1 += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(outcomes, (10, 30));
    let held = a.fetch("s2", idle).await.unwrap().unwrap().subscriptions;
    assert_eq!(held.len(), 10);
    // Unsubscribing makes room; a gone session is reported as gone.
    let gone = SessionUpdate::Unsubscribe(&held[0]);
    assert_eq!(
        b.update("s2", gone, idle).await.unwrap(),
        UpdateOutcome::Applied
    );
    let again = SessionUpdate::Subscribe {
        uri: "test://new",
        max: 10,
    };
    assert_eq!(
        a.update("s2", again, idle).await.unwrap(),
        UpdateOutcome::Applied
    );
    b.remove("s2").await.unwrap();
    assert!(a.fetch("s2", idle).await.unwrap().is_none());
    assert_eq!(
        a.update("s2", again, idle).await.unwrap(),
        UpdateOutcome::Gone
    );

    // Redis forgets its scripts: the stores load them again.
    let client = redis::Client::open(server.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        a.fetch("s1", idle)
            .await
            .unwrap()
            .unwrap()
            .subscriptions
            .len(),
        1000
    );
    let up = SessionUpdate::Unsubscribe("test://0");
    assert_eq!(
        b.update("s1", up, idle).await.unwrap(),
        UpdateOutcome::Applied
    );
}
