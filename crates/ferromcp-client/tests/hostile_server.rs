//! The client against a hostile Streamable HTTP server (issue 6).
//!
//! A scriptable raw-TCP server on 127.0.0.1 answers `tools/call` according
//! to the tool's name (and `tools/list` according to the cursor): endless
//! bodies, giant SSE events, overflowing `retry` values, decoy and duplicate
//! responses, malformed JSON-RPC, odd HTTP statuses, broken connections,
//! silence, floods of server requests and notifications. Every case runs in
//! both eras (2026-07-28 stateless, and the 2025-11-25 session path), asserts
//! the exact outcome of the hostile call, then proves the same `Client` still
//! works with a normal call.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ferromcp_client::protocol::types::{
    CallToolRequestParams, ElicitAction, ElicitResult, JsonObject,
};
use ferromcp_client::{
    Client, ClientBuilder, EraPreference, Error, Limits, RequestOptions, TransportKind,
};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// Which era the hostile server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// 2026-07-28: every request stands alone, `Mcp-Method` required.
    Modern,
    /// 2025-11-25: `initialize`, `Mcp-Session-Id` required afterwards.
    Session,
}

const MODES: [Mode; 2] = [Mode::Modern, Mode::Session];
const SESSION: &str = "hostile-session-1";

/// The upper bound for "promptly" in these tests: far below every default
/// timeout a regression would fall back to (60 s per request), and far
/// above any stall a busy 2-core machine causes, so a test fails only when
/// the behaviour is wrong, never because the machine was loaded.
const PROMPTLY: Duration = Duration::from_secs(10);

struct Req {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Req {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the server saw and did, for the assertions.
#[derive(Default)]
struct Shared {
    log: Mutex<Vec<String>>,
    gets: AtomicUsize,
    connections: AtomicUsize,
    initializes: AtomicUsize,
    /// What a GET without `Last-Event-ID` gets: `None` → 405.
    get_behaviour: Mutex<Option<&'static str>>,
}

impl Shared {
    fn push(&self, s: String) {
        self.log.lock().unwrap().push(s);
    }
    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
    /// Waits until a log line satisfies `f`.
    async fn wait_for(&self, what: &str, f: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(l) = self.log().into_iter().find(|l| f(l)) {
                return l;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

struct Hostile {
    addr: SocketAddr,
    mode: Mode,
    shared: Arc<Shared>,
}

impl Hostile {
    async fn start(mode: Mode) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared::default());
        let s = shared.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                s.connections.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(connection(stream, mode, s.clone()));
            }
        });
        Self { addr, mode, shared }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    fn builder(&self) -> ClientBuilder {
        ClientBuilder::new("hostile-test", "1.0.0")
            .era(match self.mode {
                Mode::Modern => EraPreference::ModernNoProbe,
                Mode::Session => EraPreference::Handshake,
            })
            .request_timeout(Duration::from_secs(10))
            .cache(None)
    }

    async fn client(&self) -> Client {
        self.client_with(|b| b).await
    }

    async fn client_with(&self, f: impl FnOnce(ClientBuilder) -> ClientBuilder) -> Client {
        f(self.builder()).connect_url(&self.url()).await.unwrap()
    }
}

async fn read_request(r: &mut BufReader<TcpStream>) -> Option<Req> {
    let mut line = String::new();
    if r.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        r.read_line(&mut h).await.ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (n, v) = h.split_once(':')?;
        if n.eq_ignore_ascii_case("content-length") {
            len = v.trim().parse().ok()?;
        }
        headers.push((n.trim().to_owned(), v.trim().to_owned()));
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).await.ok()?;
    Some(Req {
        method,
        path,
        headers,
        body,
    })
}

async fn connection(stream: TcpStream, mode: Mode, st: Arc<Shared>) {
    let mut r = BufReader::new(stream);
    while let Some(req) = read_request(&mut r).await {
        if !serve(&mut r, req, mode, &st).await {
            return;
        }
    }
}

fn rpc(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

fn text(t: &str) -> Value {
    json!({"content": [{"type": "text", "text": t}]})
}

async fn write_json(s: &mut TcpStream, status: &str, body: &[u8], extra: &str) -> bool {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.is_ok() && s.write_all(body).await.is_ok()
}

async fn sse_head(s: &mut TcpStream) -> bool {
    s.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
    )
    .await
    .is_ok()
}

async fn chunk(s: &mut TcpStream, data: &[u8]) -> bool {
    if data.is_empty() {
        return true;
    }
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    s.write_all(&out).await.is_ok()
}

async fn end_chunks(s: &mut TcpStream) -> bool {
    s.write_all(b"0\r\n\r\n").await.is_ok()
}

fn event(msg: &str) -> Vec<u8> {
    format!("data: {msg}\n\n").into_bytes()
}

/// Writes `prefix` then `filler` forever; returns the bytes written before
/// the client hung up.
async fn endless(s: &mut TcpStream, prefix: &[u8], filler: &[u8]) -> usize {
    let mut n = 0;
    if !chunk(s, prefix).await {
        return n;
    }
    n += prefix.len();
    let block: Vec<u8> = filler.iter().copied().cycle().take(64 * 1024).collect();
    while chunk(s, &block).await {
        n += block.len();
        if n > 1 << 30 {
            break; // the client never stopped reading: a failure the test sees
        }
    }
    n
}

/// Serves one request; false closes the connection.
async fn serve(r: &mut BufReader<TcpStream>, req: Req, mode: Mode, st: &Shared) -> bool {
    let s = r.get_mut();
    match req.method.as_str() {
        "DELETE" => return write_json(s, "200 OK", b"", "").await,
        "GET" => return serve_get(s, &req, st).await,
        _ => {}
    }
    let Ok(msg) = serde_json::from_slice::<Value>(&req.body) else {
        return write_json(s, "400 Bad Request", b"", "").await;
    };
    let method = msg["method"].as_str().unwrap_or("").to_owned();
    let id = msg["id"].clone();
    if method.is_empty() {
        // A response to one of our requests (handshake era).
        st.push(format!(
            "answer {id} {} error={}",
            msg["result"], msg["error"]["code"]
        ));
        return write_json(s, "202 Accepted", b"", "").await;
    }
    if method == "initialize" {
        st.initializes.fetch_add(1, Ordering::SeqCst);
        let body = rpc(
            &id,
            json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                   "serverInfo": {"name": "hostile", "version": "1"}}),
        );
        return write_json(
            s,
            "200 OK",
            body.as_bytes(),
            &format!("Mcp-Session-Id: {SESSION}\r\n"),
        )
        .await;
    }
    // The era's path is really exercised: modern requests carry
    // `Mcp-Method`, handshake-era ones the session id.
    let ok = match mode {
        Mode::Modern => req.header("mcp-method") == Some(method.as_str()),
        Mode::Session => req.header("mcp-session-id") == Some(SESSION),
    };
    if !ok {
        st.push(format!("wrong era headers on {method}"));
        return write_json(s, "400 Bad Request", b"", "").await;
    }
    if id.is_null() {
        if method == "notifications/cancelled" {
            st.push(format!("cancelled {}", msg["params"]["requestId"]));
        }
        return write_json(s, "202 Accepted", b"", "").await;
    }
    match method.as_str() {
        "tools/list" => {
            let result = match msg["params"]["cursor"].as_str() {
                Some("tools-is-5") => json!({"tools": 5}),
                Some("tool-without-name") => json!({"tools": [{"inputSchema": {}}]}),
                Some("negative-ttl") => json!({
                    "tools": [{"name": "ok", "inputSchema": {"type": "object"}}],
                    "ttlMs": -5, "cacheScope": "public"}),
                _ => json!({"tools": [{"name": "ok", "inputSchema": {"type": "object"}}]}),
            };
            write_json(s, "200 OK", rpc(&id, result).as_bytes(), "").await
        }
        "tools/call" => {
            let name = msg["params"]["name"].as_str().unwrap_or("").to_owned();
            st.push(format!("call {name} {id}"));
            behave(s, &name, &id, mode, st).await
        }
        _ => write_json(s, "200 OK", rpc(&id, json!({})).as_bytes(), "").await,
    }
}

async fn serve_get(s: &mut TcpStream, req: &Req, st: &Shared) -> bool {
    st.gets.fetch_add(1, Ordering::SeqCst);
    if let Some(id) = req
        .header("last-event-id")
        .and_then(|l| l.strip_prefix("resume-"))
    {
        // A resumed POST stream: the event id carries the request id.
        st.push(format!("resume {id}"));
        let id: Value = serde_json::from_str(id).unwrap_or(Value::Null);
        let _ = sse_head(s).await && chunk(s, &event(&rpc(&id, text("resumed")))).await;
        return end_chunks(s).await;
    }
    let behaviour = *st.get_behaviour.lock().unwrap();
    match behaviour {
        None => write_json(s, "405 Method Not Allowed", b"", "").await,
        Some("retry0-empty") => {
            // A priming event with `retry: 0`, then the stream ends.
            let _ = sse_head(s).await && chunk(s, b"id: g\nretry: 0\n\n").await;
            end_chunks(s).await
        }
        Some("retry0-message") => {
            let note = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
            let _ = sse_head(s).await
                && chunk(s, b"id: g\nretry: 0\n\n").await
                && chunk(s, &event(&note.to_string())).await;
            end_chunks(s).await
        }
        Some(other) => panic!("unknown GET behaviour {other}"),
    }
}

/// The hostile behaviours of `tools/call`, by tool name.
async fn behave(s: &mut TcpStream, name: &str, id: &Value, mode: Mode, st: &Shared) -> bool {
    let real = rpc(id, text(&format!("real {name}")));
    let id_num = id.as_i64().unwrap_or(0);
    match name {
        "ok" => write_json(s, "200 OK", real.as_bytes(), "").await,
        "ok_sse" => {
            let _ = sse_head(s).await && chunk(s, &event(&real)).await;
            end_chunks(s).await
        }
        // --- size limits
        "endless_json" => {
            let _ = s
                .write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
                )
                .await;
            let prefix = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"pad":""#);
            let n = endless(s, prefix.as_bytes(), b"a").await;
            st.push(format!("endless {name} wrote {n}"));
            false
        }
        "endless_error_json" => {
            let _ = s
                .write_all(
                    b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
                )
                .await;
            let n = endless(s, b"{\"x\":\"", b"e").await;
            st.push(format!("endless {name} wrote {n}"));
            false
        }
        "endless_sse_line" => {
            let _ = sse_head(s).await;
            let prefix = format!(r#"data: {{"jsonrpc":"2.0","id":{id},"result":{{"pad":""#);
            let n = endless(s, prefix.as_bytes(), b"a").await;
            st.push(format!("endless {name} wrote {n}"));
            false
        }
        "endless_sse_event" => {
            // Many short `data:` lines and never the blank line that ends the event.
            let _ = sse_head(s).await;
            let n = endless(
                s,
                b"data: {\n",
                b"data: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
            )
            .await;
            st.push(format!("endless {name} wrote {n}"));
            false
        }
        "endless_sse_line_cr" => {
            // A line that never ends, made of bytes that look like field names.
            let _ = sse_head(s).await;
            let n = endless(s, b"retry: ", b"9").await;
            st.push(format!("endless {name} wrote {n}"));
            false
        }
        // --- retry values
        n if n.starts_with("retry:") => {
            let value = &n["retry:".len()..];
            if mode == Mode::Session {
                // A priming event, then the stream breaks: the client must
                // resume with Last-Event-ID after a sane delay.
                let prime = format!("id: resume-{id}\nretry: {value}\ndata:\n\n");
                let _ = sse_head(s).await && chunk(s, prime.as_bytes()).await;
                end_chunks(s).await
            } else {
                let prime = format!("retry: {value}\n\n");
                let _ = sse_head(s).await
                    && chunk(s, prime.as_bytes()).await
                    && chunk(s, &event(&real)).await;
                end_chunks(s).await
            }
        }
        // --- ids
        "decoys" => {
            let decoy = |i: Value| rpc(&i, text("decoy"));
            let mut out = Vec::new();
            for d in [
                decoy(json!(id_num + 1)),
                decoy(json!(id_num - 1)),
                decoy(json!(999_999_999)),
                decoy(json!(id_num.to_string())),
                decoy(json!(id_num as f64 + 0.5)),
                decoy(Value::Null),
                decoy(json!([id_num])),
                json!({"jsonrpc":"2.0","id": id_num + 1,"error":{"code":-32000,"message":"decoy"}})
                    .to_string(),
                json!({"jsonrpc":"2.0","id": null,"error":{"code":-32000,"message":"decoy"}})
                    .to_string(),
            ] {
                out.extend(event(&d));
            }
            out.extend(event(&real));
            out.extend(event(&rpc(id, text("duplicate"))));
            let _ = sse_head(s).await && chunk(s, &out).await;
            // Keep the stream open a little: the client must not wait for its end.
            tokio::time::sleep(Duration::from_millis(50)).await;
            end_chunks(s).await
        }
        "json_other_id" => {
            let body = rpc(&json!(id_num + 1), text("decoy"));
            write_json(s, "200 OK", body.as_bytes(), "").await
        }
        "json_string_id" => {
            let body = rpc(&json!(id_num.to_string()), text("decoy"));
            write_json(s, "200 OK", body.as_bytes(), "").await
        }
        "json_notification" => {
            let body = json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}});
            write_json(s, "200 OK", body.to_string().as_bytes(), "").await
        }
        "json_request" => {
            let body = json!({"jsonrpc":"2.0","id":"srv-1","method":"ping"});
            write_json(s, "200 OK", body.to_string().as_bytes(), "").await
        }
        n if n.starts_with("body:") || n.starts_with("sse:") => {
            let (sse, key) = match n.strip_prefix("sse:") {
                Some(k) => (true, k),
                None => (false, &n["body:".len()..]),
            };
            let body = malformed(key, id);
            if sse {
                let mut ev = b"data: ".to_vec();
                ev.extend_from_slice(&body);
                ev.extend_from_slice(b"\n\n");
                let _ = sse_head(s).await && chunk(s, &ev).await;
                end_chunks(s).await
            } else {
                write_json(s, "200 OK", &body, "").await
            }
        }
        // --- HTTP statuses and headers
        "status_500" => {
            let _ = s
                .write_all(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\noops")
                .await;
            true
        }
        "status_503_rpc" => {
            let body = json!({"jsonrpc":"2.0","id":id,"error":{"code":-32603,"message":"busy"}});
            write_json(
                s,
                "503 Service Unavailable",
                body.to_string().as_bytes(),
                "",
            )
            .await
        }
        "status_404" => write_json(s, "404 Not Found", b"", "").await,
        "status_204" => {
            let _ = s.write_all(b"HTTP/1.1 204 No Content\r\n\r\n").await;
            true
        }
        "redirect_elsewhere" | "redirect_same" => {
            let target = st
                .log()
                .iter()
                .find_map(|l| l.strip_prefix("redirect-target ").map(str::to_owned));
            let location = match (name, target) {
                ("redirect_elsewhere", Some(t)) => t,
                _ => "/mcp".to_owned(),
            };
            write_json(
                s,
                "307 Temporary Redirect",
                b"",
                &format!("Location: {location}\r\n"),
            )
            .await
        }
        "accepted" => write_json(s, "202 Accepted", b"", "").await,
        "empty_200" => write_json(s, "200 OK", b"", "").await,
        "empty_200_no_type" => {
            let _ = s
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                .await;
            true
        }
        "wrong_content_type" => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n",
                real.len()
            );
            let _ = s.write_all(head.as_bytes()).await;
            let _ = s.write_all(real.as_bytes()).await;
            true
        }
        // --- broken connections
        "truncated_chunked" => {
            let _ = s
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
                .await;
            let _ = chunk(s, &real.as_bytes()[..10]).await;
            false
        }
        "truncated_sse" => {
            let _ = sse_head(s).await && chunk(s, b"data: {\"jsonrpc\":\"2.0\",").await;
            false
        }
        "short_content_length" => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                real.len() + 100
            );
            let _ = s.write_all(head.as_bytes()).await;
            let _ = s.write_all(real.as_bytes()).await;
            false
        }
        "reset_mid_body" => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                real.len()
            );
            let _ = s.write_all(head.as_bytes()).await;
            let _ = s.write_all(&real.as_bytes()[..5]).await;
            #[allow(deprecated)] // blocking on drop is what a reset needs here
            let _ = s.set_linger(Some(Duration::ZERO)); // RST on close
            false
        }
        "close_before_answer" => false,
        "garbage_status_line" => {
            let _ = s.write_all(b"HELLO WORLD\r\n\r\n").await;
            false
        }
        "silent" | "silent_sse" => {
            if name == "silent_sse" {
                let _ = sse_head(s).await && chunk(s, b": keep-alive\n\n").await;
            }
            // Never answer; report when the client hangs up.
            let mut buf = [0u8; 1024];
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            st.push(format!("hung up {name} {id}"));
            false
        }
        // --- floods
        "flood_notifications" => {
            let note = json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"flood"}}).to_string();
            let one = event(&note);
            let _ = sse_head(s).await;
            let batch: Vec<u8> = one.iter().copied().cycle().take(one.len() * 1000).collect();
            for _ in 0..20 {
                if !chunk(s, &batch).await {
                    return false;
                }
            }
            let _ = chunk(s, &event(&real)).await;
            end_chunks(s).await
        }
        "endless_notifications" | "endless_progress" => {
            // Valid events forever: only the timeouts can end this call.
            let note = if name == "endless_progress" {
                json!({"jsonrpc":"2.0","method":"notifications/progress",
                    "params":{"progressToken": id, "progress": 1}})
            } else {
                json!({"jsonrpc":"2.0","method":"notifications/message",
                    "params":{"level":"info","data":"forever"}})
            };
            let one = event(&note.to_string());
            let batch: Vec<u8> = one.iter().copied().cycle().take(one.len() * 100).collect();
            let mut n = 0usize;
            if sse_head(s).await {
                while chunk(s, &batch).await {
                    n += 100;
                    if name == "endless_progress" {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
            st.push(format!("hung up {name} after {n} events"));
            false
        }
        "flood_requests" => {
            let _ = sse_head(s).await;
            let mut out = Vec::new();
            for i in 0..2000 {
                let e = json!({"jsonrpc":"2.0","id": format!("e{i}"),"method":"elicitation/create",
                    "params":{"mode":"form","message":"m","requestedSchema":{"type":"object","properties":{}}}});
                let p = json!({"jsonrpc":"2.0","id": format!("p{i}"),"method":"ping"});
                out.extend(event(&e.to_string()));
                out.extend(event(&p.to_string()));
            }
            let _ = chunk(s, &out).await;
            // Let the client work through the flood before the answer.
            tokio::time::sleep(Duration::from_millis(300)).await;
            let _ = chunk(s, &event(&real)).await;
            end_chunks(s).await
        }
        "push_unhandled" => {
            // Requests the client has no handler for (issue 13 item 8).
            let _ = sse_head(s).await;
            let mut out = Vec::new();
            for (id, method, params) in [
                (
                    "s1",
                    "sampling/createMessage",
                    json!({"messages": [], "maxTokens": 1}),
                ),
                ("r1", "roots/list", json!({})),
                (
                    "e1",
                    "elicitation/create",
                    json!({"mode": "form", "message": "m",
                    "requestedSchema": {"type": "object", "properties": {}}}),
                ),
            ] {
                let m = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
                out.extend(event(&m.to_string()));
            }
            let _ = chunk(s, &out).await;
            // The answers are POSTed back while this stream stays open.
            for _ in 0..200 {
                let answered = st.log().iter().filter(|l| l.starts_with("answer ")).count();
                if answered >= 3 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let _ = chunk(s, &event(&real)).await;
            end_chunks(s).await
        }
        other => panic!("unknown behaviour {other}"),
    }
}

/// Malformed JSON-RPC answers, by key.
fn malformed(key: &str, id: &Value) -> Vec<u8> {
    let v = match key {
        "invalid_json" => return format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#).into_bytes(),
        "not_utf8" => {
            let mut b = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#
            )
            .into_bytes();
            b.extend_from_slice(b"\xff\xfe\"}]}}");
            return b;
        }
        "array" => json!([1, 2, 3]),
        "number" => json!(42),
        "string" => json!("result"),
        "null" => Value::Null,
        "code_string" => json!({"jsonrpc":"2.0","id":id,"error":{"code":"-32000","message":"x"}}),
        "missing_message" => json!({"jsonrpc":"2.0","id":id,"error":{"code":-32000}}),
        "error_not_object" => json!({"jsonrpc":"2.0","id":id,"error":"boom"}),
        "result_and_error" => {
            json!({"jsonrpc":"2.0","id":id,"result":{},"error":{"code":-32000,"message":"x"}})
        }
        "neither" => json!({"jsonrpc":"2.0","id":id}),
        "wrong_version" => json!({"jsonrpc":"1.0","id":id,"result":{}}),
        "no_version" => json!({"id":id,"result":{}}),
        "content_is_5" => json!({"jsonrpc":"2.0","id":id,"result":{"content":5}}),
        "result_is_array" => json!({"jsonrpc":"2.0","id":id,"result":[1]}),
        "huge_data" => json!({"jsonrpc":"2.0","id":id,"error":{"code":-32001,"message":"big",
            "data":"d".repeat(512 * 1024)}}),
        other => panic!("unknown malformed key {other}"),
    };
    v.to_string().into_bytes()
}

fn result_text(r: &ferromcp_client::protocol::types::CallToolResult) -> String {
    let v = serde_json::to_value(r).unwrap();
    v["content"][0]["text"].as_str().unwrap_or("").to_owned()
}

/// The client still works: a JSON and an SSE answer.
async fn assert_usable(c: &Client, ctx: &str) {
    let r = c.call_tool("ok", None).await;
    assert_eq!(
        r.as_ref().map(result_text).map_err(|e| e.to_string()),
        Ok("real ok".to_owned()),
        "{ctx}: the client is not usable afterwards"
    );
    let r = c.call_tool("ok_sse", None).await;
    assert_eq!(
        r.as_ref().map(result_text).map_err(|e| e.to_string()),
        Ok("real ok_sse".to_owned()),
        "{ctx}: the client is not usable afterwards (SSE)"
    );
}

async fn call(c: &Client, name: &str) -> Result<String, Error> {
    c.call_tool(name, None).await.map(|r| result_text(&r))
}

async fn call_timeout(c: &Client, name: &str, t: Duration) -> Result<String, Error> {
    c.call_tool_with(
        CallToolRequestParams::new(name, None::<JsonObject>),
        RequestOptions::default().timeout(t),
    )
    .await
    .map(|r| result_text(&r))
}

fn small_limits() -> Limits {
    Limits {
        max_response_bytes: 256 * 1024,
        max_sse_event_bytes: 256 * 1024,
        ..Limits::default()
    }
}

#[tokio::test]
async fn endless_bodies_hit_the_size_cap_and_the_client_stays_usable() {
    for mode in MODES {
        let h = Hostile::start(mode).await;
        let c = h.client_with(|b| b.limits(small_limits())).await;
        for name in [
            "endless_json",
            "endless_sse_line",
            "endless_sse_event",
            "endless_sse_line_cr",
        ] {
            let ctx = format!("{mode:?} {name}");
            let started = Instant::now();
            let e = call(&c, name).await.expect_err(&ctx);
            assert!(e.is_too_large(), "{ctx}: {e:?}");
            assert!(e.is_local() && !e.is_transport(), "{ctx}: {e:?}");
            assert!(started.elapsed() < Duration::from_secs(5), "{ctx}");
            // The client hung up near the cap instead of buffering: the
            // server could not write more than the cap plus socket buffers.
            let line = h
                .shared
                .wait_for(&ctx, |l| l.starts_with(&format!("endless {name} wrote")))
                .await;
            let n: usize = line.rsplit(' ').next().unwrap().parse().unwrap();
            eprintln!("{ctx}: the server wrote {n} bytes before the client hung up");
            assert!(n < 64 << 20, "{ctx}: the server wrote {n} bytes");
            assert_usable(&c, &ctx).await;
        }
        // An endless error body on a 500: the status is reported, the body capped.
        let e = call(&c, "endless_error_json").await.unwrap_err();
        assert_eq!(e.status(), Some(500), "{mode:?}: {e:?}");
        h.shared
            .wait_for("endless error body", |l| {
                l.starts_with("endless endless_error_json")
            })
            .await;
        assert_usable(&c, &format!("{mode:?} endless_error_json")).await;
    }
}

#[tokio::test]
async fn hostile_retry_values_are_clamped_or_ignored() {
    // LEGACY-17: a priming event's `retry` may be huge, overflow u64, be
    // negative or garbage; the handshake-era resume waits at most the cap.
    let values = [
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999999999999999999999999999",
        "-1",
        "-18446744073709551616",
        "1e9",
        "0x7fffffff",
        " 100",
        "",
        "NaN",
        "0",
    ];
    for mode in MODES {
        let h = Hostile::start(mode).await;
        let limits = Limits {
            sse_retry_cap: Duration::from_millis(200),
            sse_default_retry: Duration::from_millis(100),
            ..Limits::default()
        };
        let c = h.client_with(|b| b.limits(limits)).await;
        for v in values {
            let ctx = format!("{mode:?} retry {v:?}");
            let started = Instant::now();
            let r = call(&c, &format!("retry:{v}")).await;
            let expected = match mode {
                Mode::Modern => format!("real retry:{v}"),
                Mode::Session => "resumed".to_owned(),
            };
            assert_eq!(r.map_err(|e| e.to_string()), Ok(expected), "{ctx}");
            assert!(
                started.elapsed() < PROMPTLY,
                "{ctx}: took {:?}",
                started.elapsed()
            );
        }
        if mode == Mode::Session {
            assert_eq!(
                h.shared
                    .log()
                    .iter()
                    .filter(|l| l.starts_with("resume "))
                    .count(),
                values.len()
            );
        }
        assert_usable(&c, &format!("{mode:?} retry")).await;
    }
}

#[tokio::test]
async fn standalone_stream_with_retry_zero_does_not_reconnect_in_a_busy_loop() {
    // LEGACY-15/17: a GET stream that ends at once with `retry: 0`.
    for (behaviour, max_gets) in [("retry0-empty", 7), ("retry0-message", 25)] {
        let h = Hostile::start(Mode::Session).await;
        *h.shared.get_behaviour.lock().unwrap() = Some(behaviour);
        let c = h.client().await;
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let gets = h.shared.gets.load(Ordering::SeqCst);
        assert!(
            (1..=max_gets).contains(&gets),
            "{behaviour}: {gets} GETs in 1.5 s"
        );
        assert_usable(&c, behaviour).await;
        c.close().await;
    }
}

#[tokio::test]
async fn decoy_duplicate_and_mistyped_ids_never_mix_up_concurrent_calls() {
    for mode in MODES {
        let h = Hostile::start(mode).await;
        let c = h.client().await;
        let mut tasks = Vec::new();
        for _ in 0..24 {
            let c = c.clone();
            tasks.push(tokio::spawn(async move { call(&c, "decoys").await }));
        }
        for t in tasks {
            let r = t.await.unwrap();
            assert_eq!(
                r.map_err(|e| e.to_string()),
                Ok("real decoys".to_owned()),
                "{mode:?}"
            );
        }
        // A JSON body answering another id, or the right number as a
        // string, or something that is not a response, is an invalid
        // answer for this call.
        for name in [
            "json_other_id",
            "json_string_id",
            "json_notification",
            "json_request",
        ] {
            let e = call(&c, name).await.unwrap_err();
            assert!(e.is_invalid_response(), "{mode:?} {name}: {e:?}");
        }
        assert_usable(&c, &format!("{mode:?} ids")).await;
    }
}

#[tokio::test]
async fn malformed_answers_are_invalid_responses_and_the_client_stays_usable() {
    let keys = [
        "invalid_json",
        "not_utf8",
        "array",
        "number",
        "string",
        "null",
        "code_string",
        "missing_message",
        "error_not_object",
        "result_and_error",
        "neither",
        "wrong_version",
        "no_version",
        "content_is_5",
        "result_is_array",
    ];
    for mode in MODES {
        let h = Hostile::start(mode).await;
        let c = h.client().await;
        for key in keys {
            for via in ["body", "sse"] {
                let ctx = format!("{mode:?} {via}:{key}");
                let started = Instant::now();
                let r = call(&c, &format!("{via}:{key}")).await;
                if (via, key) == ("sse", "not_utf8") {
                    // An event stream is decoded as UTF-8 with replacement
                    // (WHATWG HTML §9.2.6), so this one is well-formed.
                    assert_eq!(r.map_err(|e| e.to_string()), Ok("\u{FFFD}\u{FFFD}".into()));
                    continue;
                }
                let e = r.expect_err(&ctx);
                assert!(e.is_invalid_response(), "{ctx}: {e:?}");
                assert!(started.elapsed() < Duration::from_secs(5), "{ctx}");
            }
        }
        // A huge `data` member within the body cap is the peer's error, intact.
        for via in ["body", "sse"] {
            let e = call(&c, &format!("{via}:huge_data")).await.unwrap_err();
            let obj = e
                .rpc_error()
                .unwrap_or_else(|| panic!("{mode:?} {via}: {e:?}"));
            assert_eq!(obj.code.0, -32001);
            assert_eq!(
                obj.data.as_ref().and_then(Value::as_str).map(str::len),
                Some(512 * 1024)
            );
        }
        // tools/list whose result does not match the schema.
        for cursor in ["tools-is-5", "tool-without-name"] {
            let e = c.list_tools_page(Some(cursor.into())).await.unwrap_err();
            assert!(e.is_invalid_response(), "{mode:?} {cursor}: {e:?}");
        }
        // CACHE-07: a negative ttlMs is read as 0 (no caching), not refused.
        let p = c
            .list_tools_page(Some("negative-ttl".into()))
            .await
            .unwrap_or_else(|e| panic!("{mode:?} negative ttl: {e:?}"));
        assert_eq!(p.ttl_ms, Some(0), "{mode:?}");
        assert_eq!(p.tools.len(), 1, "{mode:?}");
        assert_eq!(c.list_tools().await.unwrap().len(), 1);
        assert_usable(&c, &format!("{mode:?} malformed")).await;
    }
}

#[tokio::test]
async fn odd_statuses_and_content_types_are_typed_errors() {
    for mode in MODES {
        let h = Hostile::start(mode).await;
        let c = h.client().await;
        let e = call(&c, "status_500").await.unwrap_err();
        assert!(
            e.is_transport() && e.status() == Some(500),
            "{mode:?}: {e:?}"
        );
        // HTTP-20: a JSON-RPC error in a non-2xx body is the peer's error.
        let e = call(&c, "status_503_rpc").await.unwrap_err();
        assert_eq!(
            e.rpc_error().map(|o| o.code.0),
            Some(-32603),
            "{mode:?}: {e:?}"
        );
        // HTTP-19: 202 to a request.
        let e = call(&c, "accepted").await.unwrap_err();
        assert!(e.is_invalid_response(), "{mode:?}: {e:?}");
        for name in [
            "empty_200",
            "empty_200_no_type",
            "wrong_content_type",
            "status_204",
        ] {
            let e = call(&c, name).await.unwrap_err();
            assert!(e.is_invalid_response(), "{mode:?} {name}: {e:?}");
        }
        let inits = h.shared.initializes.load(Ordering::SeqCst);
        let e = call(&c, "status_404").await.unwrap_err();
        assert_eq!(e.status(), Some(404), "{mode:?}: {e:?}");
        if mode == Mode::Session {
            // LEGACY-13: one new session, one retry, then the error.
            assert_eq!(h.shared.initializes.load(Ordering::SeqCst), inits + 1);
        }
        assert_usable(&c, &format!("{mode:?} statuses")).await;
    }
}

#[tokio::test]
async fn redirects_are_not_followed_and_credentials_stay_home() {
    let elsewhere = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let other = elsewhere.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let hc = hits.clone();
    tokio::spawn(async move {
        while let Ok((_s, _)) = elsewhere.accept().await {
            hc.fetch_add(1, Ordering::SeqCst);
        }
    });
    for mode in MODES {
        let h = Hostile::start(mode).await;
        h.shared
            .push(format!("redirect-target http://{other}/steal"));
        let c = h.client_with(|b| b.bearer_token("secret-token-123")).await;
        for name in ["redirect_elsewhere", "redirect_same"] {
            let calls = h
                .shared
                .log()
                .iter()
                .filter(|l| l.starts_with(&format!("call {name}")))
                .count();
            let e = call(&c, name).await.unwrap_err();
            assert!(
                e.is_transport() && e.status() == Some(307),
                "{mode:?} {name}: {e:?}"
            );
            // Not followed, not even to the same URL.
            let after = h
                .shared
                .log()
                .iter()
                .filter(|l| l.starts_with(&format!("call {name}")))
                .count();
            assert_eq!(after, calls + 1, "{mode:?} {name}");
        }
        assert_usable(&c, &format!("{mode:?} redirects")).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "the redirect target was contacted"
    );
}

#[tokio::test]
async fn broken_connections_are_transport_errors_and_the_client_reconnects() {
    for mode in MODES {
        let h = Hostile::start(mode).await;
        let c = h.client().await;
        for name in [
            "truncated_chunked",
            "truncated_sse",
            "short_content_length",
            "reset_mid_body",
            "close_before_answer",
            "garbage_status_line",
        ] {
            let ctx = format!("{mode:?} {name}");
            let e = call(&c, name).await.expect_err(&ctx);
            assert!(e.is_transport(), "{ctx}: {e:?}");
            assert_eq!(e.status(), None, "{ctx}");
            assert_usable(&c, &ctx).await;
        }
    }
}

#[tokio::test]
async fn silent_servers_time_out_and_the_request_is_cancelled() {
    for mode in MODES {
        let h = Hostile::start(mode).await;
        let c = h.client().await;
        for name in ["silent", "silent_sse"] {
            let ctx = format!("{mode:?} {name}");
            let started = Instant::now();
            let e = call_timeout(&c, name, Duration::from_millis(300))
                .await
                .expect_err(&ctx);
            assert!(e.is_timeout(), "{ctx}: {e:?}");
            assert!(started.elapsed() < PROMPTLY, "{ctx}");
            // HTTP-15 / CANCEL-01: the exchange is aborted (the server sees
            // the connection close) ...
            let line = h
                .shared
                .wait_for(&ctx, |l| l.starts_with(&format!("hung up {name} ")))
                .await;
            let id = line.rsplit(' ').next().unwrap().to_owned();
            // ... and in the handshake era also cancelled explicitly (LEGACY-07).
            if mode == Mode::Session {
                h.shared
                    .wait_for(&ctx, |l| l == format!("cancelled {id}"))
                    .await;
            } else {
                assert!(!h.shared.log().iter().any(|l| l.starts_with("cancelled")));
            }
            assert_usable(&c, &ctx).await;
        }
    }
    // A server that accepts and never reads or answers: connect-level silence.
    let quiet = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = quiet.local_addr().unwrap();
    let held = Arc::new(Mutex::new(Vec::new()));
    let hh = held.clone();
    tokio::spawn(async move {
        while let Ok((s, _)) = quiet.accept().await {
            hh.lock().unwrap().push(s);
        }
    });
    let started = Instant::now();
    let e = ClientBuilder::new("hostile-test", "1.0.0")
        .request_timeout(Duration::from_millis(300))
        .connect_url(&format!("http://{addr}/mcp"))
        .await
        .unwrap_err();
    assert!(e.is_timeout(), "{e:?}");
    assert!(started.elapsed() < PROMPTLY);
}

#[tokio::test]
async fn floods_of_notifications_are_delivered_with_bounded_work() {
    for mode in MODES {
        let h = Hostile::start(mode).await;
        let seen = Arc::new(AtomicUsize::new(0));
        let s = seen.clone();
        let c = h
            .client_with(|b| {
                b.on_notification(move |n| {
                    if n.method == "notifications/message" {
                        s.fetch_add(1, Ordering::SeqCst);
                    }
                })
            })
            .await;
        let r = call(&c, "flood_notifications").await;
        assert_eq!(
            r.map_err(|e| e.to_string()),
            Ok("real flood_notifications".to_owned())
        );
        assert_eq!(seen.load(Ordering::SeqCst), 20_000, "{mode:?}");
        assert_usable(&c, &format!("{mode:?} notification flood")).await;
    }
}

/// Issue 13 item 8: a pushed request the client has no handler for is
/// answered -32601 (the method is not implemented here), not -32603.
#[tokio::test]
async fn server_requests_without_a_handler_are_method_not_found() {
    let h = Hostile::start(Mode::Session).await;
    let c = h.client().await;
    let r = call(&c, "push_unhandled").await;
    assert_eq!(
        r.map_err(|e| e.to_string()),
        Ok("real push_unhandled".to_owned())
    );
    let answers: Vec<String> = h
        .shared
        .log()
        .into_iter()
        .filter(|l| l.starts_with("answer "))
        .collect();
    for id in ["s1", "r1", "e1"] {
        let line = answers
            .iter()
            .find(|l| l.starts_with(&format!("answer \"{id}\"")))
            .unwrap_or_else(|| panic!("no answer to {id}: {answers:?}"));
        assert!(line.ends_with("error=-32601"), "{line}");
    }
}

#[tokio::test]
async fn floods_of_server_requests_run_with_bounded_concurrency() {
    // Handshake era: 2000 elicitation/create and 2000 ping requests on one
    // POST stream (LEGACY-18). The handler runs at most
    // `max_concurrent_server_requests` at a time; the rest are refused.
    let h = Hostile::start(Mode::Session).await;
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let calls = Arc::new(AtomicUsize::new(0));
    let (r, p, n) = (running.clone(), peak.clone(), calls.clone());
    let c = h
        .client_with(|b| {
            b.max_concurrent_server_requests(4)
                .on_elicitation(move |_| {
                    let (r, p, n) = (r.clone(), p.clone(), n.clone());
                    async move {
                        n.fetch_add(1, Ordering::SeqCst);
                        let now = r.fetch_add(1, Ordering::SeqCst) + 1;
                        p.fetch_max(now, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        r.fetch_sub(1, Ordering::SeqCst);
                        Ok(ElicitResult::new(ElicitAction::Decline))
                    }
                })
        })
        .await;
    let r = call(&c, "flood_requests").await;
    assert_eq!(
        r.map_err(|e| e.to_string()),
        Ok("real flood_requests".to_owned())
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        peak.load(Ordering::SeqCst) <= 4,
        "peak {}",
        peak.load(Ordering::SeqCst)
    );
    let handled = calls.load(Ordering::SeqCst);
    assert!(
        (1..2000).contains(&handled),
        "{handled} elicitations handled"
    );
    // Every answer the server got names a flooded id, once.
    let answers: Vec<String> = h
        .shared
        .log()
        .into_iter()
        .filter(|l| l.starts_with("answer "))
        .collect();
    let mut ids: Vec<&str> = answers
        .iter()
        .map(|l| l.split(' ').nth(1).unwrap())
        .collect();
    let total = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), total, "duplicate answers");
    assert!(
        ids.iter()
            .all(|i| i.starts_with("\"e") || i.starts_with("\"p"))
    );
    assert!((1..4000).contains(&total), "{total} answers");
    assert_usable(&c, "server request flood").await;
}

fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn endless_streams_of_valid_events_end_at_the_timeouts_with_bounded_memory() {
    for mode in MODES {
        let h = Hostile::start(mode).await;
        let seen = Arc::new(AtomicUsize::new(0));
        let s = seen.clone();
        let c = h
            .client_with(|b| {
                b.on_notification(move |_| {
                    s.fetch_add(1, Ordering::Relaxed);
                })
            })
            .await;
        // Notifications forever: the request timeout fires (they do not
        // reset it), the exchange is dropped, the server sees the hang-up.
        let before = rss_kib();
        let started = Instant::now();
        let e = call_timeout(&c, "endless_notifications", Duration::from_secs(2))
            .await
            .unwrap_err();
        assert!(e.is_timeout(), "{mode:?}: {e:?}");
        assert!(started.elapsed() < PROMPTLY);
        let grown = rss_kib().saturating_sub(before);
        eprintln!(
            "{mode:?} endless notifications: {} handled in 2 s, RSS grew by {grown} KiB",
            seen.load(Ordering::Relaxed)
        );
        assert!(seen.load(Ordering::Relaxed) > 1000, "{mode:?}");
        assert!(grown < 8 * 1024, "{mode:?}: RSS grew by {grown} KiB");
        h.shared
            .wait_for("hang-up", |l| {
                l.starts_with("hung up endless_notifications")
            })
            .await;
        // Progress forever resets the timeout, up to the hard maximum
        // (CANCEL-08).
        let progress = Arc::new(AtomicUsize::new(0));
        let p = progress.clone();
        let started = Instant::now();
        let e = c
            .call_tool_with(
                CallToolRequestParams::new("endless_progress", None::<JsonObject>),
                RequestOptions::default()
                    .timeout(Duration::from_millis(300))
                    .max_total_timeout(Duration::from_millis(1500))
                    .on_progress(move |_| {
                        p.fetch_add(1, Ordering::Relaxed);
                    }),
            )
            .await
            .unwrap_err();
        assert!(e.is_timeout(), "{mode:?}: {e:?}");
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(1400) && took < PROMPTLY,
            "{mode:?}: {took:?}"
        );
        assert!(progress.load(Ordering::Relaxed) > 100, "{mode:?}");
        h.shared
            .wait_for("hang-up", |l| l.starts_with("hung up endless_progress"))
            .await;
        assert_usable(&c, &format!("{mode:?} endless events")).await;
    }
}

// ERA-10
/// A hostile 2024-11-05 HTTP+SSE server: POSTs on `/mcp` are
/// refused, so the client falls back, GETs `/mcp` and POSTs to `/messages`;
/// every answer travels on the one GET stream, shared by all requests.
async fn start_legacy() -> SocketAddr {
    type Stream = Arc<Mutex<Option<mpsc::UnboundedSender<Vec<u8>>>>>;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stream: Stream = Arc::default();
    tokio::spawn(async move {
        while let Ok((conn, _)) = listener.accept().await {
            let stream = stream.clone();
            tokio::spawn(async move {
                let mut r = BufReader::new(conn);
                while let Some(req) = read_request(&mut r).await {
                    let s = r.get_mut();
                    match (req.method.as_str(), req.path.as_str()) {
                        ("GET", "/mcp") => {
                            let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
                            *stream.lock().unwrap() = Some(tx);
                            if !(sse_head(s).await
                                && chunk(s, b"event: endpoint\ndata: /messages\n\n").await)
                            {
                                return;
                            }
                            while let Some(data) = rx.recv().await {
                                if data == b"ENDLESS" {
                                    endless(s, b"data: ", b"a").await;
                                    return;
                                }
                                if !chunk(s, &data).await {
                                    return;
                                }
                            }
                            return;
                        }
                        ("POST", "/messages") => {
                            if !write_json(s, "202 Accepted", b"", "").await {
                                return;
                            }
                            let Ok(msg) = serde_json::from_slice::<Value>(&req.body) else {
                                continue;
                            };
                            let out = legacy_answer(&msg);
                            if let Some(tx) = stream.lock().unwrap().as_ref() {
                                let _ = tx.send(out);
                            }
                        }
                        _ => {
                            let _ = write_json(s, "405 Method Not Allowed", b"", "").await;
                        }
                    }
                }
            });
        }
    });
    addr
}

/// The SSE bytes answering one message on the legacy stream.
fn legacy_answer(msg: &Value) -> Vec<u8> {
    let id = &msg["id"];
    let name = msg["params"]["name"].as_str().unwrap_or("");
    let real = rpc(id, text(&format!("real {name}")));
    match msg["method"].as_str().unwrap_or("") {
        "initialize" => event(&rpc(
            id,
            json!({"protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
                   "serverInfo": {"name": "hostile-legacy", "version": "1"}}),
        )),
        "tools/call" => match name {
            "ok" => event(&real),
            "decoys" => {
                let n = id.as_i64().unwrap_or(0);
                let mut out = Vec::new();
                for d in [json!(n + 1000), json!(n.to_string()), json!([n])] {
                    out.extend(event(&rpc(&d, text("decoy"))));
                }
                out.extend(event(&real));
                out.extend(event(&rpc(id, text("duplicate"))));
                out
            }
            "endless" => b"ENDLESS".to_vec(),
            "silent" => Vec::new(),
            other => {
                let key = other.strip_prefix("malformed:").unwrap_or("invalid_json");
                let mut ev = b"data: ".to_vec();
                ev.extend_from_slice(&malformed(key, id));
                ev.extend_from_slice(b"\n\n");
                ev
            }
        },
        m if m.starts_with("notifications/") || m.is_empty() => Vec::new(),
        _ => event(&rpc(id, json!({}))),
    }
}

#[tokio::test]
async fn legacy_http_sse_transport_under_hostile_answers() {
    // The deprecated 2024-11-05 transport shares one stream between all
    // requests, like stdio: the same rules apply.
    let addr = start_legacy().await;
    let c = ClientBuilder::new("hostile-test", "1.0.0")
        .request_timeout(Duration::from_secs(10))
        .cache(None)
        .limits(small_limits())
        .connect_url(&format!("http://{addr}/mcp"))
        .await
        .unwrap();
    assert_eq!(c.transport_kind(), TransportKind::HttpSse);
    assert_eq!(
        call(&c, "decoys").await.map_err(|e| e.to_string()),
        Ok("real decoys".into())
    );
    assert_eq!(
        call(&c, "ok").await.map_err(|e| e.to_string()),
        Ok("real ok".into())
    );
    for key in [
        "code_string",
        "missing_message",
        "error_not_object",
        "result_and_error",
        "neither",
        "wrong_version",
        "content_is_5",
    ] {
        let started = Instant::now();
        let e = call(&c, &format!("malformed:{key}")).await.unwrap_err();
        assert!(e.is_invalid_response(), "{key}: {e:?}");
        assert!(started.elapsed() < PROMPTLY, "{key}");
        assert_eq!(
            call(&c, "ok").await.map_err(|e| e.to_string()),
            Ok("real ok".into()),
            "{key}"
        );
    }
    // Unparseable: it names no request, which times out.
    let e = call_timeout(&c, "malformed:invalid_json", Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(e.is_timeout(), "{e:?}");
    // An endless event: the pending call fails with the size limit, the
    // shared stream is gone and later calls fail at once.
    let e = call(&c, "endless").await.unwrap_err();
    assert!(e.is_too_large(), "{e:?}");
    let started = Instant::now();
    let e = call(&c, "ok").await.unwrap_err();
    assert!(e.is_transport(), "{e:?}");
    assert!(started.elapsed() < PROMPTLY);
}
