//! `mcp serve docs DIR` against a hostile docs folder, over HTTP with a raw
//! client: a file swapped for a symbolic link during re-indexing, FIFOs and
//! devices, files vanishing mid-read, links into an outside folder, huge
//! sections in the `ask` prompt, and `search_docs` with `limit: 0`.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A base folder holding `docs/` (served) and `outside/` (not).
struct Base(PathBuf);

impl Base {
    fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!("mcp-docs-hostile-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(p.join("docs")).unwrap();
        std::fs::create_dir_all(p.join("outside")).unwrap();
        std::fs::write(
            p.join("outside/secret.md"),
            "# Secret\n\nzanzibarsecret treasure map\n",
        )
        .unwrap();
        std::fs::write(
            p.join("docs/guide.md"),
            "# Guide\n\nHow to use quill.\n\n## Install\n\nRun the installer.\n",
        )
        .unwrap();
        Self(p)
    }
    fn docs(&self) -> PathBuf {
        self.0.join("docs")
    }
}

impl Drop for Base {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Served {
    child: Child,
    port: u16,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(dir: &Path, extra: &[&str]) -> Served {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let child = mcp()
        .args(["serve", "docs", dir.to_str().unwrap(), "--http", &addr])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn mcp serve docs");
    wait_listening(&addr);
    Served { child, port }
}

/// What came back: the HTTP status (0 when nothing did in time) and the
/// JSON-RPC message.
struct Answer {
    status: u16,
    body: String,
    msg: Value,
}

impl Answer {
    fn code(&self) -> Option<i64> {
        self.msg["error"]["code"].as_i64()
    }
    fn error(&self) -> String {
        self.msg["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

/// A stateless (2026-07-28) request, one connection each; gives up after
/// `wait` (a generous bound against hangs, not a timing assertion).
fn ask(port: u16, method: &str, params: Value, wait: Duration) -> Answer {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "hostile-docs", "version": "1"}
    });
    let name = params["name"]
        .as_str()
        .or(params["uri"].as_str())
        .map(str::to_owned);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(n) = name {
        req.push_str(&format!("Mcp-Name: {n}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    let none = Answer {
        status: 0,
        body: String::new(),
        msg: Value::Null,
    };
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return none;
    };
    s.set_read_timeout(Some(wait)).unwrap();
    if s.write_all(req.as_bytes()).is_err() {
        return none;
    }
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(raw.len());
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut payload = raw.get(split + 4..).unwrap_or_default().to_vec();
    if head.contains("transfer-encoding: chunked") {
        payload = dechunk(&payload);
    }
    let body = String::from_utf8_lossy(&payload).into_owned();
    let msg = if head.contains("text/event-stream") {
        body.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .next_back()
            .unwrap_or(Value::Null)
    } else {
        serde_json::from_str(&body).unwrap_or(Value::Null)
    };
    Answer { status, body, msg }
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

const WAIT: Duration = Duration::from_secs(20);

fn read(port: u16, uri: &str) -> Answer {
    ask(port, "resources/read", json!({"uri": uri}), WAIT)
}

fn search(port: u16, args: Value) -> Answer {
    ask(
        port,
        "tools/call",
        json!({"name": "search_docs", "arguments": args}),
        WAIT,
    )
}

#[test]
fn a_file_or_folder_swapped_for_a_symlink_during_reindexing_never_serves_the_outside() {
    let base = Base::new("swap");
    let docs = base.docs();
    let inside = "# Inside\n\nplain inside words\n";
    std::fs::write(docs.join("f.md"), inside).unwrap();
    // A folder whose twin outside holds the secret under the same name.
    std::fs::create_dir(docs.join("sub")).unwrap();
    std::fs::write(docs.join("sub/secret.md"), "# Sub\n\nharmless words\n").unwrap();
    // A short debounce: many re-indexes while the file and folder flip.
    let s = serve(&docs, &["--debounce-ms", "5"]);
    let stop = Arc::new(AtomicBool::new(false));
    let pause = || std::thread::sleep(Duration::from_micros(300));
    let file_swapper = {
        let stop = stop.clone();
        let docs = docs.clone();
        std::thread::spawn(move || {
            let mut flips = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // `ln -s ../outside/secret.md tmp && mv -T tmp f.md`, then back.
                // Each state lasts a little: a flip every few microseconds
                // floods the watcher and lets fewer re-indexes through.
                let _ = std::fs::remove_file(docs.join(".link"));
                std::os::unix::fs::symlink("../outside/secret.md", docs.join(".link")).unwrap();
                std::fs::rename(docs.join(".link"), docs.join("f.md")).unwrap();
                pause();
                std::fs::write(docs.join(".file"), inside).unwrap();
                std::fs::rename(docs.join(".file"), docs.join("f.md")).unwrap();
                pause();
                flips += 1;
            }
            flips
        })
    };
    let dir_swapper = {
        let stop = stop.clone();
        let docs = docs.clone();
        std::thread::spawn(move || {
            let mut flips = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // sub/ becomes a link to ../outside (which has a secret.md),
                // then the real folder again.
                std::fs::rename(docs.join("sub"), docs.join(".sub")).unwrap();
                std::os::unix::fs::symlink("../outside", docs.join("sub")).unwrap();
                pause();
                std::fs::remove_file(docs.join("sub")).unwrap();
                std::fs::rename(docs.join(".sub"), docs.join("sub")).unwrap();
                pause();
                flips += 1;
            }
            flips
        })
    };
    let (mut reads, mut searches, mut leaks) = (0u32, 0u32, Vec::new());
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        for uri in ["docs://f.md", "docs://sub/secret.md"] {
            let r = read(s.port, uri);
            reads += u32::from(r.status != 0);
            if r.body.contains("treasure") {
                leaks.push(format!("read {uri}: {}", r.body));
            }
        }
        let r = search(s.port, json!({"query": "zanzibarsecret"}));
        searches += u32::from(r.status != 0);
        if r.body.contains("treasure") {
            leaks.push(format!("search: {}", r.body));
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips = file_swapper.join().unwrap();
    let dir_flips = dir_swapper.join().unwrap();
    assert!(
        flips > 100 && dir_flips > 100 && reads > 20 && searches > 20,
        "the race barely ran: {flips} + {dir_flips} flips, {reads} reads, {searches} searches"
    );
    assert!(
        leaks.is_empty(),
        "{} of {reads} reads and {searches} searches leaked the outside file ({flips} + {dir_flips} flips); first: {}",
        leaks.len(),
        leaks[0]
    );
}

fn mkfifo(path: &Path) {
    let st = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(st.success(), "mkfifo {}", path.display());
}

#[test]
fn fifos_are_refused_without_stalling_the_server() {
    let base = Base::new("fifo");
    let docs = base.docs();
    // More FIFOs than the runtime has workers (CPUs + 1 on the CI box).
    let n = std::thread::available_parallelism().map_or(2, usize::from) + 2;
    for i in 0..n {
        mkfifo(&docs.join(format!("p{i}.md")));
    }
    std::os::unix::fs::symlink("/dev/zero", docs.join("zero.md")).unwrap();
    let s = serve(&docs, &["--no-watch"]);
    let port = s.port;
    let readers: Vec<_> = (0..n)
        .map(|i| std::thread::spawn(move || read(port, &format!("docs://p{i}.md"))))
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    // Other requests are answered while (or after) the FIFOs are looked at.
    let r = search(port, json!({"query": "installer"}));
    assert_eq!(r.status, 200, "search while FIFOs are read: {}", r.body);
    assert!(
        r.msg["result"]["structuredContent"]["total"].as_u64() >= Some(1),
        "{}",
        r.body
    );
    for (i, h) in readers.into_iter().enumerate() {
        let r = h.join().unwrap();
        assert_eq!(
            r.code(),
            Some(-32602),
            "p{i}.md: status {} {}",
            r.status,
            r.body
        );
        assert!(
            r.error().contains("not a regular file"),
            "p{i}.md: {}",
            r.body
        );
    }
    // A link to a device is a link: refused without being read.
    let r = read(port, "docs://zero.md");
    assert_eq!(r.code(), Some(-32602), "{}", r.body);
    assert!(r.error().contains("symbolic link"), "{}", r.body);
}

#[test]
fn a_device_node_is_refused_without_reading_it() {
    let base = Base::new("device");
    let docs = base.docs();
    // /dev/zero's numbers; needs root (CI runs as root). Skip without.
    let made = std::process::Command::new("mknod")
        .arg(docs.join("zero.md"))
        .args(["c", "1", "5"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        eprintln!("skipped: mknod needs privileges this run does not have");
        return;
    }
    let s = serve(&docs, &["--no-watch"]);
    let r = read(s.port, "docs://zero.md");
    assert_eq!(r.code(), Some(-32602), "{}", r.body);
    assert!(r.error().contains("not a regular file"), "{}", r.body);
    let r = search(s.port, json!({"query": "installer"}));
    assert_eq!(r.status, 200, "{}", r.body);
}

#[test]
fn a_file_vanishing_mid_read_is_not_found() {
    // RES-03: a resource that is not there is -32602, never -32603.
    let base = Base::new("vanish");
    let docs = base.docs();
    let s = serve(&docs, &["--no-watch"]);
    let stop = Arc::new(AtomicBool::new(false));
    let churn = {
        let stop = stop.clone();
        let f = docs.join("v.md");
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::fs::write(&f, "# V\n\nsoon gone\n").unwrap();
                let _ = std::fs::remove_file(&f);
            }
        })
    };
    let (mut answered, mut internal) = (0u32, Vec::new());
    let until = Instant::now() + Duration::from_secs(4);
    while Instant::now() < until {
        let r = read(s.port, "docs://v.md");
        answered += u32::from(r.status != 0);
        match r.code() {
            Some(-32602) => {}
            _ => internal.push(r.body),
        }
    }
    stop.store(true, Ordering::Relaxed);
    churn.join().unwrap();
    assert!(answered > 50, "only {answered} reads");
    assert!(
        internal.is_empty(),
        "{} of {answered} reads were not -32602; first: {}",
        internal.len(),
        internal[0]
    );
}

#[test]
fn links_answer_alike_whether_or_not_their_target_exists() {
    let base = Base::new("links");
    let docs = base.docs();
    std::os::unix::fs::symlink("../outside", docs.join("linkdir")).unwrap();
    std::os::unix::fs::symlink("../outside/secret.md", docs.join("real.md")).unwrap();
    std::os::unix::fs::symlink("../outside/nosuch.md", docs.join("dangling.md")).unwrap();
    let s = serve(&docs, &["--no-watch"]);
    let text = |uri: &str, name: &str| {
        let r = read(s.port, uri);
        assert_eq!(r.code(), Some(-32602), "{uri}: {}", r.body);
        r.error().replace(name, "NAME")
    };
    assert_eq!(
        text("docs://linkdir/secret.md", "secret"),
        text("docs://linkdir/nosuch.md", "nosuch"),
        "a path through a linked folder tells whether the outside file exists"
    );
    assert_eq!(
        text("docs://real.md", "real"),
        text("docs://dangling.md", "dangling"),
        "a link tells whether its outside target exists"
    );
}

#[test]
fn the_ask_prompt_is_bounded_however_large_the_sections() {
    let base = Base::new("ask");
    let docs = base.docs();
    // Five single-section files of ~600 KB, each matching the question.
    let filler = "gizmo widget lever ".repeat(1 << 15);
    for i in 0..5 {
        std::fs::write(
            docs.join(format!("big{i}.md")),
            format!("# Gizmo {i}\n\n{filler}\n"),
        )
        .unwrap();
    }
    let s = serve(&docs, &["--no-watch"]);
    let r = ask(
        s.port,
        "prompts/get",
        json!({"name": "ask", "arguments": {"question": "gizmo widget"}}),
        WAIT,
    );
    assert_eq!(r.status, 200, "{}", &r.body[..r.body.len().min(500)]);
    let default_total = 64 * 1024;
    assert!(
        r.body.len() < default_total + 16 * 1024,
        "a 40-byte question produced a {} byte prompt",
        r.body.len()
    );
    let msgs = r.msg["result"]["messages"].as_array().unwrap();
    let embedded: usize = msgs
        .iter()
        .filter_map(|m| m["content"]["resource"]["text"].as_str())
        .map(str::len)
        .sum();
    assert!(embedded <= default_total, "{embedded} bytes embedded");
    // Every cut section is linked for the rest.
    let links: Vec<&str> = msgs
        .iter()
        .filter(|m| m["content"]["type"] == "resource_link")
        .filter_map(|m| m["content"]["uri"].as_str())
        .collect();
    assert_eq!(links.len(), 5, "{links:?}");
    assert!(
        links.iter().all(|u| u.starts_with("docs://big")),
        "{links:?}"
    );
    // Search stays usable on them.
    let r = search(s.port, json!({"query": "gizmo", "limit": 5}));
    assert_eq!(r.status, 200);
    let hits = r.msg["result"]["structuredContent"]["results"]
        .as_array()
        .unwrap();
    assert_eq!(hits.len(), 5, "{}", r.body);
    assert!(hits.iter().all(|h| {
        h["snippet"]
            .as_str()
            .is_some_and(|s| s.contains("**gizmo**"))
    }));
}

#[test]
fn search_with_limit_zero_is_refused_naming_the_bound() {
    let base = Base::new("limit");
    let s = serve(&base.docs(), &["--no-watch"]);
    let r = search(s.port, json!({"query": "installer", "limit": 0}));
    assert_eq!(r.status, 200, "{}", r.body);
    // TOOL-06: an argument failure is a tool error the model sees.
    assert_eq!(r.msg["result"]["isError"], true, "{}", r.body);
    // The schema validator's words ("less than the minimum of 1 at
    // '/limit'") or, without validation, the handler's ("at least 1").
    let text = r.msg["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("limit"), "{}", r.body);
    assert!(
        text.contains("minimum of 1") || text.contains("at least 1"),
        "{}",
        r.body
    );
    let tools = ask(s.port, "tools/list", json!({}), WAIT);
    let schema = &tools.msg["result"]["tools"][0]["inputSchema"]["properties"]["limit"];
    assert_eq!(schema["minimum"], 1, "{}", tools.body);
    let r = search(s.port, json!({"query": "installer", "limit": 1}));
    assert_eq!(
        r.msg["result"]["structuredContent"]["results"]
            .as_array()
            .map(Vec::len),
        Some(1),
        "{}",
        r.body
    );
}
