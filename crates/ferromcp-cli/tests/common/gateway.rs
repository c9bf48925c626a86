//! `mcp gateway --config F --http ADDR` as a test driver: started from a
//! config value, its listen address read from stderr, killed on drop.

use super::raw::{Client, HANDSHAKE, WAIT};
use super::{MCP, wait_listening};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A running gateway.
pub struct Gateway {
    child: Child,
    /// `HOST:PORT` it listens on.
    pub addr: String,
    stderr: mpsc::Receiver<String>,
    /// Everything read from its stderr so far.
    pub seen: String,
}

impl Gateway {
    /// On `127.0.0.1:0`, waiting up to [`WAIT`] for it to listen.
    pub fn start(dir: &std::path::Path, config: &Value, env: &[(&str, &str)]) -> Self {
        Self::start_at(dir, config, env, "127.0.0.1:0", WAIT)
    }

    /// Listening on `listen`, waiting up to `wait` for it (upstreams that
    /// are slow to start delay the gateway's "listening" line).
    pub fn start_at(
        dir: &std::path::Path,
        config: &Value,
        env: &[(&str, &str)],
        listen: &str,
        wait: Duration,
    ) -> Self {
        Self::spawn(dir, config, env, listen, wait, &[])
    }

    /// On `127.0.0.1:0` with `args` added to the command line.
    pub fn start_with_args(dir: &std::path::Path, config: &Value, args: &[&str]) -> Self {
        Self::spawn(dir, config, &[], "127.0.0.1:0", WAIT, args)
    }

    /// On `127.0.0.1:0` with `env` set and `args` added to the command
    /// line.
    pub fn start_with(
        dir: &std::path::Path,
        config: &Value,
        env: &[(&str, &str)],
        args: &[&str],
    ) -> Self {
        Self::spawn(dir, config, env, "127.0.0.1:0", WAIT, args)
    }

    fn spawn(
        dir: &std::path::Path,
        config: &Value,
        env: &[(&str, &str)],
        listen: &str,
        wait: Duration,
        args: &[&str],
    ) -> Self {
        let file = dir.join("gateway.json");
        std::fs::write(&file, config.to_string()).unwrap();
        let mut child = Command::new(MCP)
            .args(["gateway", "--config"])
            .arg(&file)
            .args(["--http", listen, "--restart-initial-ms", "100"])
            .args(["--restart-max-ms", "500"])
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mcp gateway");
        let err = child.stderr.take().unwrap();
        let (tx, stderr) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut g = Self {
            child,
            addr: String::new(),
            stderr,
            seen: String::new(),
        };
        assert!(
            g.stderr_within("listening on http://", wait),
            "the gateway did not start: {}",
            g.seen
        );
        let at = g.seen.find("listening on http://").unwrap() + "listening on http://".len();
        g.addr = g.seen[at..].split('/').next().unwrap().trim().to_owned();
        wait_listening(&g.addr);
        g
    }

    /// Waits up to [`WAIT`] for `needle` on stderr; everything read is kept
    /// in `seen`.
    pub fn stderr_until(&mut self, needle: &str) -> bool {
        self.stderr_within(needle, WAIT)
    }

    /// The gateway's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn stderr_within(&mut self, needle: &str, wait: Duration) -> bool {
        let deadline = Instant::now() + wait;
        while !self.seen.contains(needle) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(s) => {
                    self.seen.push_str(&s);
                    self.seen.push('\n');
                }
                Err(_) => return false,
            }
        }
        true
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Opens `c`'s GET stream (a handshake session's notifications tied to no
/// request); its status line is checked.
pub fn get_stream(addr: &str, c: &Client) -> std::io::Lines<BufReader<std::net::TcpStream>> {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        s,
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: {HANDSHAKE}\r\nMcp-Session-Id: {}\r\n\r\n",
        c.session.as_deref().unwrap_or_default()
    )
    .unwrap();
    let mut lines = BufReader::new(s).lines();
    let status = lines.next().unwrap().unwrap();
    assert!(status.contains(" 200"), "{status}");
    lines
}

/// Reads `stream` until a message with `method` arrives (keep-alive
/// comments and other messages are skipped), within [`WAIT`].
pub fn until_message(stream: &mut std::io::Lines<BufReader<std::net::TcpStream>>, method: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        assert!(Instant::now() < deadline, "no {method} within {WAIT:?}");
        let line = stream
            .next()
            .expect("the GET stream ended")
            .unwrap_or_else(|e| panic!("no {method} ({e})"));
        let Some(m) = line
            .strip_prefix("data:")
            .and_then(|d| serde_json::from_str::<Value>(d.trim()).ok())
        else {
            continue;
        };
        if m["method"] == method {
            return;
        }
    }
}
