//! A raw HTTP/1.1 driver for `/mcp` (ids chosen by the test, both eras):
//! one POST, the answer in a JSON or SSE body, and a client of one era.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Long enough to never fire on a slow CI machine; only guards against a hang.
pub const WAIT: Duration = Duration::from_secs(30);
pub const MODERN: &str = "2026-07-28";
pub const HANDSHAKE: &str = "2025-11-25";

/// One HTTP/1.1 POST to `/mcp`; (status, headers lower-cased, body).
pub fn post(
    addr: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> (u16, Vec<(String, String)>, String) {
    let body = body.to_string();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)
        .expect("the bridge did not finish its answer (hang?)");
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_owned()
    };
    (status, headers, body)
}

/// `METHOD path` on `addr` (HOST:PORT) with `Connection: close`:
/// (status, head, body); the body as sent (not dechunked).
pub fn http_call(addr: &str, method: &str, path: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let status = raw
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    (status, head.to_owned(), body.to_owned())
}

pub fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// The JSON-RPC answer in a JSON or SSE body (the message with an id and
/// no method).
pub fn answer(body: &str) -> Value {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        return v;
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|m| m.get("id").is_some() && m.get("method").is_none())
        .unwrap_or_else(|| panic!("no answer in {body}"))
}

/// Every JSON-RPC message in a JSON or SSE body.
pub fn messages(body: &str) -> Vec<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        return vec![v];
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .collect()
}

/// A client of one era.
pub struct Client {
    pub addr: String,
    pub era: &'static str,
    pub session: Option<String>,
    pub init: Option<Value>,
    pub caps: Value,
    /// Headers sent on every request besides the protocol's own.
    pub extra: Vec<(String, String)>,
}

impl Client {
    pub fn new(addr: &str, era: &'static str) -> Self {
        Self::with_caps(addr, era, json!({}))
    }

    pub fn with_caps(addr: &str, era: &'static str, caps: Value) -> Self {
        Self::with_headers(addr, era, caps, &[])
    }

    /// A client sending `extra` headers on every request, the
    /// handshake's included.
    pub fn with_headers(
        addr: &str,
        era: &'static str,
        caps: Value,
        extra: &[(&str, &str)],
    ) -> Self {
        let mut c = Self {
            addr: addr.to_owned(),
            era,
            session: None,
            init: None,
            caps,
            extra: extra
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        };
        if era == HANDSHAKE {
            let (status, headers, body) = post(
                addr,
                extra,
                &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
                    "protocolVersion": HANDSHAKE, "capabilities": c.caps,
                    "clientInfo": {"name": "t", "version": "1"}}}),
            );
            assert_eq!(status, 200, "{body}");
            c.session = headers
                .iter()
                .find(|(k, _)| k == "mcp-session-id")
                .map(|(_, v)| v.clone());
            assert!(c.session.is_some(), "no session id: {headers:?}");
            c.init = Some(answer(&body));
            let (status, _, _) = c.send_raw(
                "notifications/initialized",
                None,
                &json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
            );
            assert_eq!(status, 202);
        }
        c
    }

    pub fn send_raw(
        &self,
        method: &str,
        name: Option<&str>,
        body: &Value,
    ) -> (u16, Vec<(String, String)>, String) {
        let mut h: Vec<(&str, &str)> = vec![("MCP-Protocol-Version", self.era)];
        h.extend(self.extra.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        if let Some(s) = &self.session {
            h.push(("Mcp-Session-Id", s));
        }
        if self.era == MODERN {
            h.push(("Mcp-Method", method));
            if let Some(n) = name {
                h.push(("Mcp-Name", n));
            }
        }
        post(&self.addr, &h, body)
    }

    /// A request with `id`; returns the answer.
    pub fn request(&self, id: Value, method: &str, mut params: Value) -> Value {
        if self.era == MODERN {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": self.caps,
            });
        }
        // Mcp-Name: the tool or prompt name, or the resource URI.
        let name = match method {
            "tools/call" | "prompts/get" => params["name"].as_str().map(str::to_owned),
            "resources/read" => params["uri"].as_str().map(str::to_owned),
            _ => None,
        };
        let (_, _, body) = self.send_raw(
            method,
            name.as_deref(),
            &json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}),
        );
        answer(&body)
    }

    pub fn call(&self, id: Value, tool: &str, args: Value) -> Value {
        self.request(id, "tools/call", json!({"name": tool, "arguments": args}))
    }

    /// A handshake-era request (`id`, `method`, `params`) whose SSE answer
    /// is read as it comes: each server→client request on it is answered
    /// with `reply(request)` (a POST on the session); returns (the
    /// requests seen, the final answer).
    pub fn request_answering(
        &self,
        id: Value,
        method: &str,
        params: Value,
        reply: impl Fn(&Value) -> Value,
    ) -> (Vec<Value>, Value) {
        let c = self;
        use std::io::BufRead;
        let body = json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}).to_string();
        let mut s = TcpStream::connect(&c.addr).unwrap();
        s.set_read_timeout(Some(WAIT)).unwrap();
        let req = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nConnection: close\r\nMCP-Protocol-Version: {HANDSHAKE}\r\nMcp-Session-Id: {}\r\nContent-Length: {}\r\n\r\n{body}",
            c.addr,
            c.session.as_deref().unwrap_or_default(),
            body.len()
        );
        s.write_all(req.as_bytes()).unwrap();
        let mut asked = Vec::new();
        let mut seen = Vec::new();
        for line in std::io::BufReader::new(s).lines() {
            let line = line.expect("the bridge's answer stream broke (hang?)");
            seen.push(line.clone());
            // An SSE event's data, or a plain JSON answer.
            let data = line.strip_prefix("data:").unwrap_or(&line);
            let Ok(m) = serde_json::from_str::<Value>(data.trim()) else {
                continue;
            };
            if m.get("method").is_some() && m.get("id").is_some() {
                let answer = json!({"jsonrpc":"2.0","id":m["id"],"result":reply(&m)});
                let (status, _, b) = c.send_raw("", None, &answer);
                assert!(status == 202 || status == 200, "{status}: {b}");
                asked.push(m);
            } else if m["id"] == id && m.get("method").is_none() {
                return (asked, m);
            }
        }
        panic!("the stream ended without an answer; asked {asked:?}; read {seen:?}");
    }
}

pub fn text_of(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {answer}"))
        .to_owned()
}

pub fn tool_names(c: &Client) -> Vec<String> {
    let a = c.request(json!(1), "tools/list", json!({}));
    a["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {a}"))
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

// Issue 24: 8+ concurrent clients of both eras on one shared child, ids colliding.
