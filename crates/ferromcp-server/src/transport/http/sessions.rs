//! Handshake-era HTTP sessions: cryptographically
//! random ids, a cap on live sessions, idle expiry that really frees them,
//! and per-stream event logs for `Last-Event-ID` resumption.
//!
//! The store is in-process; replicas behind a load balancer need sticky
//! routing for the handshake era.
//!
//! A session belongs to the principal that initialized it (a
//! session id is a handle, not a credential). The subject of the request's
//! `Principal` (set by an authentication layer) is recorded at
//! `initialize`; a later request, GET or DELETE naming the session under a
//! different principal (or none, when it had one) is treated as naming an
//! unknown session: 404, without touching the session.
// LEGACY-12…LEGACY-20, LEGACY-17, LEGACY-20, STATE-06, LEGACY-13

use crate::session::HandshakeSession;
use bytes::Bytes;
use ferromcp_protocol::ErrorObject;
use ferromcp_protocol::jsonrpc::RequestId;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// Stream id of the standalone GET stream.
pub(crate) const GET_STREAM: u64 = 0;
/// Most stream logs kept per session.
const MAX_STREAMS: usize = 64;

/// One message on a session stream.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    /// SSE event id, `"<stream>-<seq>"`.
    pub(crate) id: String,
    /// The JSON-RPC message.
    pub(crate) data: Bytes,
    /// This is the final response of a request stream.
    pub(crate) last: bool,
    /// A control event: end the live response now with this `retry` hint.
    pub(crate) close_retry: Option<Option<u64>>,
}

struct StreamLog {
    next_seq: u64,
    events: VecDeque<Event>,
    live: Option<mpsc::Sender<Event>>,
    finished: bool,
}

/// A live handshake-era session.
pub(crate) struct HttpSession {
    pub(crate) id: String,
    pub(crate) handshake: Arc<HandshakeSession>,
    /// Subject of the principal that initialized the session.
    pub(crate) owner: Option<String>,
    last_seen: Mutex<Instant>,
    pub(crate) closed: CancellationToken,
    pending: Mutex<HashMap<RequestId, oneshot::Sender<Result<Value, ErrorObject>>>>,
    next_id: AtomicI64,
    /// Makes this process's server-to-client request ids unique in a fleet
    /// sharing the session (empty for a lone process).
    id_tag: Arc<str>,
    in_flight: Mutex<HashMap<RequestId, CancellationToken>>,
    streams: Mutex<(u64, HashMap<u64, StreamLog>, VecDeque<u64>)>,
    event_buffer: usize,
    pub(crate) forwarding: AtomicBool,
}

impl HttpSession {
    fn touch(&self) {
        if let Ok(mut t) = self.last_seen.lock() {
            *t = Instant::now();
        }
    }

    fn idle_for(&self) -> Duration {
        self.last_seen
            .lock()
            .map(|t| t.elapsed())
            .unwrap_or_default()
    }

    /// Registers a server→client request; the answer arrives by POST.
    pub(crate) fn expect_answer(
        &self,
    ) -> (RequestId, oneshot::Receiver<Result<Value, ErrorObject>>) {
        let id = RequestId::string(format!(
            "srv-{}{}",
            self.id_tag,
            self.next_id.fetch_add(1, Ordering::Relaxed)
        ));
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id.clone(), tx);
        }
        (id, rx)
    }

    /// Delivers a client's answer; false when this process sent no such
    /// request (another replica may have).
    pub(crate) fn answer(&self, id: &RequestId, outcome: Result<Value, ErrorObject>) -> bool {
        let w = self.pending.lock().ok().and_then(|mut p| p.remove(id));
        match w {
            Some(w) => {
                // The requester may have given up (session closing): the
                // answer still found its request.
                let _ = w.send(outcome);
                true
            }
            None => false,
        }
    }

    // BASE-03
    /// Tracks an in-flight client request so `notifications/cancelled` can
    /// reach it; `None` when the id is already in flight.
    pub(crate) fn register(&self, id: &RequestId) -> Option<CancellationToken> {
        let mut m = self.in_flight.lock().ok()?;
        if m.contains_key(id) {
            return None;
        }
        let t = self.closed.child_token();
        m.insert(id.clone(), t.clone());
        Some(t)
    }

    pub(crate) fn unregister(&self, id: &RequestId) {
        if let Ok(mut m) = self.in_flight.lock() {
            m.remove(id);
        }
    }

    /// Cancels an in-flight request; false when this process runs no such
    /// request (another replica may).
    pub(crate) fn cancel(&self, id: &RequestId) -> bool {
        match self.in_flight.lock().ok().and_then(|m| m.get(id).cloned()) {
            Some(t) => {
                t.cancel();
                true
            }
            None => false,
        }
    }

    /// Opens a new stream log with a live receiver.
    pub(crate) fn open_stream(&self) -> (u64, mpsc::Receiver<Event>) {
        let (tx, rx) = mpsc::channel(64);
        let mut g = match self.streams.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        g.0 += 1;
        let sid = g.0;
        g.1.insert(
            sid,
            StreamLog {
                next_seq: 1,
                events: VecDeque::new(),
                live: Some(tx),
                finished: false,
            },
        );
        g.2.push_back(sid);
        while g.2.len() > MAX_STREAMS {
            if let Some(old) = g.2.pop_front() {
                g.1.remove(&old);
            }
        }
        (sid, rx)
    }

    /// Opens the standalone GET stream; `None` if one is already attached.
    pub(crate) fn open_get_stream(&self) -> Option<mpsc::Receiver<Event>> {
        let (tx, rx) = mpsc::channel(64);
        let mut g = self.streams.lock().ok()?;
        let log = g.1.entry(GET_STREAM).or_insert_with(|| StreamLog {
            next_seq: 1,
            events: VecDeque::new(),
            live: None,
            finished: false,
        });
        if log.live.as_ref().is_some_and(|l| !l.is_closed()) {
            return None;
        }
        log.live = Some(tx);
        Some(rx)
    }

    fn append(
        &self,
        sid: u64,
        data: Bytes,
        last: bool,
    ) -> Option<(Event, Option<mpsc::Sender<Event>>)> {
        let mut g = match self.streams.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let log = g.1.get_mut(&sid)?;
        let ev = Event {
            id: format!("{sid}-{}", log.next_seq),
            data,
            last,
            close_retry: None,
        };
        log.next_seq += 1;
        log.events.push_back(ev.clone());
        while log.events.len() > self.event_buffer {
            log.events.pop_front();
        }
        if last {
            log.finished = true;
        }
        let live = if last {
            log.live.take()
        } else {
            log.live.clone()
        };
        Some((ev, live))
    }

    /// Appends a message to a stream and forwards it to the live receiver,
    /// waiting (bounded) for a slow reader.
    pub(crate) async fn push(&self, sid: u64, data: Bytes, last: bool) {
        if let Some((ev, Some(tx))) = self.append(sid, data, last) {
            // A slow or departed reader loses the live copy; the log keeps it
            // for resumption.
            let _ = tokio::time::timeout(Duration::from_secs(5), tx.send(ev)).await;
        }
    }

    // PROG-05
    /// Like [`Self::push`] without waiting: the live copy is dropped when the
    /// reader is behind (progress and log notifications).
    pub(crate) fn push_now(&self, sid: u64, data: Bytes) {
        if let Some((ev, Some(tx))) = self.append(sid, data, false) {
            let _ = tx.try_send(ev);
        }
    }

    /// Ends the live response of a stream early (the handler keeps running;
    /// its later messages are logged for resumption).
    pub(crate) fn close_live(&self, sid: u64, retry_ms: Option<u64>) {
        let live = self
            .streams
            .lock()
            .ok()
            .and_then(|mut g| g.1.get_mut(&sid).and_then(|l| l.live.take()));
        if let Some(tx) = live {
            let _ = tx.try_send(Event {
                id: String::new(),
                data: Bytes::new(),
                last: false,
                close_retry: Some(retry_ms),
            });
        }
    }

    /// Detaches the live receiver of a stream (the response ends; the client
    /// may resume with `Last-Event-ID`).
    pub(crate) fn detach(&self, sid: u64) {
        if let Ok(mut g) = self.streams.lock() {
            if let Some(log) = g.1.get_mut(&sid) {
                log.live = None;
            }
        }
    }

    // LEGACY-17
    /// Resumes the stream named by a `Last-Event-ID`: the events after it,
    /// and a live receiver when the stream is still running. Never replays
    /// another stream's events.
    pub(crate) fn resume(
        &self,
        last_event_id: &str,
    ) -> Option<(Vec<Event>, Option<mpsc::Receiver<Event>>)> {
        let (sid, seq) = last_event_id.split_once('-')?;
        let sid: u64 = sid.parse().ok()?;
        let seq: u64 = seq.parse().ok()?;
        let mut g = self.streams.lock().ok()?;
        let log = g.1.get_mut(&sid)?;
        let replay: Vec<Event> = log
            .events
            .iter()
            .filter(|e| {
                e.id.split_once('-')
                    .and_then(|(_, s)| s.parse::<u64>().ok())
                    .is_some_and(|s| s > seq)
            })
            .cloned()
            .collect();
        let live = if log.finished {
            None
        } else {
            let (tx, rx) = mpsc::channel(64);
            log.live = Some(tx);
            Some(rx)
        };
        Some((replay, live))
    }
}

/// The session table.
pub(crate) struct SessionStore {
    map: Mutex<HashMap<String, Arc<HttpSession>>>,
    max: usize,
    idle: Duration,
    event_buffer: AtomicUsize,
    pub(crate) listen_count: Arc<AtomicUsize>,
    id_tag: Mutex<Arc<str>>,
}

/// The table is full.
#[derive(Debug)]
pub(crate) struct Full;

impl SessionStore {
    pub(crate) fn new(max: usize, idle: Duration) -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
            max,
            idle,
            event_buffer: AtomicUsize::new(256),
            listen_count: Arc::new(AtomicUsize::new(0)),
            id_tag: Mutex::new(Arc::from("")),
        }
    }

    /// Tags this process's server-to-client request ids with a random
    /// prefix, so replicas sharing a session never issue the same id.
    pub(crate) fn tag_request_ids(&self) {
        let mut b = [0u8; 6];
        if getrandom::fill(&mut b).is_ok() {
            let tag: String = b.iter().map(|x| format!("{x:02x}")).collect();
            if let Ok(mut t) = self.id_tag.lock() {
                *t = Arc::from(format!("{tag}-"));
            }
        }
    }

    /// The session `id` whatever its owner, without marking it used: for
    /// messages another replica relayed after checking the owner.
    pub(crate) fn get_relayed(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.map.lock().ok()?.get(id).cloned()
    }

    pub(crate) fn set_event_buffer(&self, n: usize) {
        self.event_buffer.store(n.max(1), Ordering::Relaxed);
    }

    /// Looks a session up by the raw header value for the request's
    /// principal (`None` when unauthenticated) and marks it used. A session
    /// owned by another principal is not found.
    pub(crate) fn get(&self, id: &[u8], principal: Option<&str>) -> Option<Arc<HttpSession>> {
        let id = std::str::from_utf8(id).ok()?;
        let s = self.map.lock().ok()?.get(id).cloned()?;
        if s.owner.as_deref() != principal {
            return None;
        }
        if s.idle_for() > self.idle {
            self.remove(id);
            return None;
        }
        s.touch();
        Some(s)
    }

    /// Creates a session owned by `owner` (the initializing principal's
    /// subject), after freeing idle ones if the table is full.
    pub(crate) fn create(
        &self,
        state: HandshakeSession,
        owner: Option<String>,
    ) -> Result<Arc<HttpSession>, Full> {
        let id = new_session_id().ok_or(Full)?;
        self.insert(id, state, owner)
    }

    /// Takes in a session another replica created (its shared record was
    /// found), under its existing id.
    pub(crate) fn adopt(
        &self,
        id: &str,
        state: HandshakeSession,
        owner: Option<String>,
    ) -> Result<Arc<HttpSession>, Full> {
        if let Some(s) = self.map.lock().map_err(|_| Full)?.get(id) {
            return Ok(s.clone()); // adopted concurrently by another request
        }
        self.insert(id.to_owned(), state, owner)
    }

    fn insert(
        &self,
        id: String,
        state: HandshakeSession,
        owner: Option<String>,
    ) -> Result<Arc<HttpSession>, Full> {
        let mut map = self.map.lock().map_err(|_| Full)?;
        if map.len() >= self.max {
            let idle = self.idle;
            map.retain(|_, s| {
                let keep = s.idle_for() <= idle;
                if !keep {
                    s.closed.cancel();
                }
                keep
            });
            if map.len() >= self.max {
                return Err(Full);
            }
        }
        let s = Arc::new(HttpSession {
            id: id.clone(),
            handshake: Arc::new(state),
            owner,
            last_seen: Mutex::new(Instant::now()),
            closed: CancellationToken::new(),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(1),
            id_tag: self
                .id_tag
                .lock()
                .map(|t| t.clone())
                .unwrap_or_else(|_| Arc::from("")),
            in_flight: Mutex::new(HashMap::new()),
            streams: Mutex::new((0, HashMap::new(), VecDeque::new())),
            event_buffer: self.event_buffer.load(Ordering::Relaxed),
            forwarding: AtomicBool::new(false),
        });
        map.insert(id, s.clone());
        Ok(s)
    }

    // LEGACY-13
    /// Terminates a session (DELETE or expiry): its streams end and later
    /// requests with its id get 404.
    pub(crate) fn remove(&self, id: &str) -> bool {
        let s = self.map.lock().ok().and_then(|mut m| m.remove(id));
        match s {
            Some(s) => {
                s.closed.cancel();
                true
            }
            None => false,
        }
    }

    /// Frees idle sessions; returns how many.
    pub(crate) fn sweep(&self) -> usize {
        let Ok(mut map) = self.map.lock() else {
            return 0;
        };
        let before = map.len();
        let idle = self.idle;
        map.retain(|_, s| {
            let keep = s.idle_for() <= idle;
            if !keep {
                s.closed.cancel();
            }
            keep
        });
        before - map.len()
    }

    pub(crate) fn clear(&self) {
        if let Ok(mut map) = self.map.lock() {
            for s in map.values() {
                s.closed.cancel();
            }
            map.clear();
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.map.lock().map(|m| m.len()).unwrap_or(0)
    }
}

// LEGACY-12
/// 32 bytes from the OS CSPRNG as 64 hex characters (visible ASCII).
fn new_session_id() -> Option<String> {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).ok()?;
    let mut s = String::with_capacity(64);
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferromcp_protocol::ProtocolVersion;
    use ferromcp_protocol::types::InitializeRequestParams;

    fn state() -> HandshakeSession {
        HandshakeSession::new(
            ProtocolVersion::V2025_11_25,
            &InitializeRequestParams::default(),
        )
    }

    #[test]
    fn ids_are_random_visible_ascii() {
        let a = new_session_id().unwrap_or_default();
        let b = new_session_id().unwrap_or_default();
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert!(a.bytes().all(|c| (0x21..=0x7e).contains(&c)));
    }

    #[test]
    fn cap_expiry_and_removal() {
        let store = SessionStore::new(2, Duration::from_millis(50));
        let a = store.create(state(), None).ok();
        assert!(a.is_some());
        assert!(store.create(state(), None).is_ok());
        assert!(store.create(state(), None).is_err(), "cap reached");
        std::thread::sleep(Duration::from_millis(80));
        // Full table: idle sessions are freed to make room.
        assert!(store.create(state(), None).is_ok());
        assert_eq!(store.len(), 1);
        let id = a.map(|s| s.id.clone()).unwrap_or_default();
        assert!(store.get(id.as_bytes(), None).is_none());
        std::thread::sleep(Duration::from_millis(80));
        assert_eq!(store.sweep(), 1);
        assert_eq!(store.len(), 0);
    }

    #[test]
    fn sessions_are_bound_to_their_principal() {
        // STATE-06: another principal's request for the session finds nothing.
        let store = SessionStore::new(4, Duration::from_secs(60));
        let Ok(s) = store.create(state(), Some("alice".into())) else {
            panic!("create")
        };
        let id = s.id.as_bytes();
        assert!(store.get(id, Some("alice")).is_some());
        assert!(store.get(id, Some("bob")).is_none());
        assert!(store.get(id, None).is_none());
        let Ok(anon) = store.create(state(), None) else {
            panic!("create")
        };
        assert!(store.get(anon.id.as_bytes(), None).is_some());
        assert!(store.get(anon.id.as_bytes(), Some("alice")).is_none());
        // A refused lookup leaves the session alive for its owner.
        assert!(store.get(id, Some("alice")).is_some());
        assert_eq!(store.len(), 2);
    }

    #[tokio::test]
    async fn resume_replays_only_later_events_of_that_stream() {
        let store = SessionStore::new(4, Duration::from_secs(60));
        let Ok(s) = store.create(state(), None) else {
            panic!("create")
        };
        let (sid, rx) = s.open_stream();
        drop(rx);
        s.push(sid, Bytes::from_static(b"1"), false).await;
        s.push(sid, Bytes::from_static(b"2"), false).await;
        let (other, _rx2) = s.open_stream();
        s.push(other, Bytes::from_static(b"x"), false).await;
        let (replay, live) = s.resume(&format!("{sid}-1")).unwrap_or_default_pair();
        assert_eq!(
            replay.iter().map(|e| e.data.clone()).collect::<Vec<_>>(),
            vec![Bytes::from_static(b"2")]
        );
        let mut live = live.unwrap_or_else(|| panic!("stream still running"));
        s.push(sid, Bytes::from_static(b"3"), true).await;
        assert_eq!(
            live.recv().await.map(|e| (e.data, e.last)),
            Some((Bytes::from_static(b"3"), true))
        );
        assert!(s.resume("garbage").is_none());
        assert!(s.resume("99-1").is_none());
    }

    trait PairExt {
        fn unwrap_or_default_pair(self) -> (Vec<Event>, Option<mpsc::Receiver<Event>>);
    }
    impl PairExt for Option<(Vec<Event>, Option<mpsc::Receiver<Event>>)> {
        fn unwrap_or_default_pair(self) -> (Vec<Event>, Option<mpsc::Receiver<Event>>) {
            self.unwrap_or((Vec::new(), None))
        }
    }
}
