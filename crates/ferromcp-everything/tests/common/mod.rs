//! Helpers for wire-level tests: a real everything-server process and a raw
//! HTTP/1.1 client (raw so tests can send duplicate headers, lying lengths
//! and malformed bodies).

#![allow(dead_code)]

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_everything-server");

/// An everything-server serving HTTP on an ephemeral loopback port.
pub struct HttpServer {
    pub child: Child,
    pub port: u16,
}

impl HttpServer {
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// Starts a server with extra environment variables (the `MCP_*` limit
    /// overrides documented in `src/bin/everything-server.rs`).
    pub fn start_with(env: &[(&str, &str)]) -> Self {
        Self::start_with_args(&[], env)
    }

    /// Starts a server with extra arguments (e.g. `--redis URL`) and
    /// environment variables.
    pub fn start_with_args(args: &[&str], env: &[(&str, &str)]) -> Self {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").port()
        };
        let child = Command::new(BIN)
            .args(["--http", &format!("127.0.0.1:{port}")])
            .args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn everything-server");
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Self { child, port }
    }

    pub fn host(&self) -> String {
        self.client().host()
    }

    /// A client for this server that can be moved to other threads.
    pub fn client(&self) -> Client {
        Client { port: self.port }
    }

    /// Sends a raw request; returns (status, headers lowercased, body).
    pub fn raw(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Response {
        self.client().raw(method, path, headers, body)
    }

    /// A modern POST with correct standard headers for `body`.
    pub fn post(&self, body: &Value, extra: &[(&str, &str)]) -> Response {
        self.client().post(body, extra)
    }
}

/// Sends requests to a server's port (one connection per request).
#[derive(Debug, Clone, Copy)]
pub struct Client {
    pub port: u16,
}

impl Client {
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Sends a raw request; returns (status, headers lowercased, body).
    pub fn raw(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Response {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(20))).ok();
        let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
            req.push_str(&format!("Host: {}\r\n", self.host()));
        }
        for (n, v) in headers {
            req.push_str(&format!("{n}: {v}\r\n"));
        }
        if !headers.iter().any(|(n, _)| {
            n.eq_ignore_ascii_case("content-length") || n.eq_ignore_ascii_case("transfer-encoding")
        }) {
            req.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        req.push_str("\r\n");
        s.write_all(req.as_bytes()).expect("write");
        // The server may answer (413) and close before the whole body is sent.
        let _ = s.write_all(body);
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        parse_response(&out)
    }

    /// A modern POST with correct standard headers for `body`.
    pub fn post(&self, body: &Value, extra: &[(&str, &str)]) -> Response {
        let method = body["method"].as_str().unwrap_or_default().to_owned();
        let mut h: Vec<(&str, String)> = vec![
            ("Content-Type", "application/json".into()),
            ("Accept", "application/json, text/event-stream".into()),
            ("MCP-Protocol-Version", "2026-07-28".into()),
            ("Mcp-Method", method.clone()),
        ];
        if let Some(n) = body["params"]["name"]
            .as_str()
            .or(body["params"]["uri"].as_str())
        {
            h.push(("Mcp-Name", n.to_owned()));
        }
        for (n, v) in extra {
            h.retain(|(k, _)| !k.eq_ignore_ascii_case(n));
            h.push((n, (*v).to_owned()));
        }
        let hs: Vec<(&str, &str)> = h.iter().map(|(n, v)| (*n, v.as_str())).collect();
        self.raw("POST", "/mcp", &hs, body.to_string().as_bytes())
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
    /// The JSON-RPC messages of an SSE body (or the single JSON body).
    pub fn messages(&self) -> Vec<Value> {
        if self
            .header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream"))
        {
            String::from_utf8_lossy(&self.body)
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .filter(|d| !d.trim().is_empty())
                .filter_map(|d| serde_json::from_str(d).ok())
                .collect()
        } else {
            vec![self.json()]
        }
    }
    pub fn error_code(&self) -> Option<i64> {
        self.messages()
            .last()
            .and_then(|m| m["error"]["code"].as_i64())
    }
}

fn parse_response(raw: &[u8]) -> Response {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(raw.len());
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = raw.get(split + 4..).unwrap_or_default().to_vec();
    if headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"))
    {
        body = dechunk(&body);
    }
    Response {
        status,
        headers,
        body,
    }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(nl) = b.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&b[..nl]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = nl + 2;
        out.extend_from_slice(b.get(start..start + size).unwrap_or_default());
        b = b.get(start + size + 2..).unwrap_or_default();
    }
    out
}

pub fn envelope() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "wire-test", "version": "1"}
    })
}

pub fn envelope_with(caps: Value) -> Value {
    let mut e = envelope();
    e["io.modelcontextprotocol/clientCapabilities"] = caps;
    e
}

pub fn request(id: i64, method: &str, mut params: Value) -> Value {
    if params.get("_meta").is_none() {
        params["_meta"] = envelope();
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// An everything-server on stdio.
pub struct StdioServer {
    pub child: Child,
    pub stdin: ChildStdin,
    pub stdout: BufReader<ChildStdout>,
}

impl StdioServer {
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// Starts a stdio server with extra environment variables.
    pub fn start_with(env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(BIN)
            .arg("--stdio")
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Self {
            child,
            stdin,
            stdout,
        }
    }
    pub fn send_raw(&mut self, line: &[u8]) {
        self.stdin.write_all(line).expect("write");
        self.stdin.write_all(b"\n").expect("write");
        self.stdin.flush().expect("flush");
    }
    pub fn send(&mut self, v: &Value) {
        self.send_raw(v.to_string().as_bytes());
    }
    pub fn recv(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read");
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"))
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Memory of a process from `/proc/<pid>/status`, in KiB.
#[derive(Debug, Clone, Copy)]
pub struct Mem {
    /// Resident set size now.
    pub rss_kb: u64,
    /// Peak resident set size ("high water mark").
    pub hwm_kb: u64,
}

/// Reads `VmRSS` and `VmHWM` of `pid` (Linux).
pub fn mem_of(pid: u32) -> Mem {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Mem {
        rss_kb: field("VmRSS:"),
        hwm_kb: field("VmHWM:"),
    }
}

/// Open file descriptors of `pid` (sockets included).
pub fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Polls `f` every 20 ms until it holds or `within` passes; returns whether it held.
pub fn eventually(within: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The standard modern request headers for `body` (as [`HttpServer::post`] sends them).
pub fn modern_headers(body: &Value) -> Vec<(String, String)> {
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    let mut h = vec![
        ("Content-Type".to_owned(), "application/json".to_owned()),
        (
            "Accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ),
        ("MCP-Protocol-Version".to_owned(), "2026-07-28".to_owned()),
        ("Mcp-Method".to_owned(), method),
    ];
    if let Some(n) = body["params"]["name"]
        .as_str()
        .or(body["params"]["uri"].as_str())
    {
        h.push(("Mcp-Name".to_owned(), n.to_owned()));
    }
    h
}

/// A complete HTTP/1.1 request (keep-alive unless `close`), as bytes.
pub fn http_request(host: &str, headers: &[(String, String)], body: &[u8], close: bool) -> Vec<u8> {
    let mut req = format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\n");
    if close {
        req.push_str("Connection: close\r\n");
    }
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut out = req.into_bytes();
    out.extend_from_slice(body);
    out
}

/// Reads one HTTP/1.1 response with a `Content-Length` body from `r`.
pub fn read_response<R: BufRead>(r: &mut R) -> Option<Response> {
    let mut head = Vec::new();
    loop {
        let mut line = Vec::new();
        if r.read_until(b'\n', &mut line).ok()? == 0 {
            return None;
        }
        head.extend_from_slice(&line);
        if line == b"\r\n" {
            break;
        }
    }
    let mut resp = parse_response(&head);
    let len: usize = resp
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).ok()?;
    resp.body = body;
    Some(resp)
}

/// An everything-server on stdio whose stdout is read by a background
/// thread, line by line, so tests can wait with a timeout and assert that
/// nothing (or only valid JSON) arrives.
pub struct StdioPipe {
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    pub lines: std::sync::mpsc::Receiver<Vec<u8>>,
}

impl StdioPipe {
    pub fn start_with(env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(BIN)
            .arg("--stdio")
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            loop {
                let mut line = Vec::new();
                match stdout.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Self {
            child,
            stdin,
            lines,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes `bytes` as they are (no newline added).
    pub fn write(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write");
        stdin.flush().expect("flush");
    }

    /// Writes one line.
    pub fn send_line(&mut self, line: &[u8]) {
        let mut l = line.to_vec();
        l.push(b'\n');
        self.write(&l);
    }

    pub fn send(&mut self, v: &Value) {
        self.send_line(v.to_string().as_bytes());
    }

    // STDIO-02
    /// The next stdout line as JSON; panics if it is not JSON or
    /// nothing arrives within `within`.
    pub fn recv_within(&self, within: Duration) -> Value {
        let line = self
            .lines
            .recv_timeout(within)
            .unwrap_or_else(|e| panic!("no stdout line within {within:?}: {e}"));
        serde_json::from_slice(&line).unwrap_or_else(|e| {
            panic!(
                "stdout line is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&line)
            )
        })
    }

    pub fn recv(&self) -> Value {
        self.recv_within(Duration::from_secs(20))
    }

    /// Asserts that no stdout line arrives within `within`.
    pub fn assert_silent(&self, within: Duration) {
        if let Ok(line) = self.lines.recv_timeout(within) {
            panic!("unexpected output: {:?}", String::from_utf8_lossy(&line));
        }
    }

    /// Closes stdin (EOF for the server).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }
}

impl Drop for StdioPipe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
