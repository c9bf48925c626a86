//! `mcp gateway --config F --http ADDR` as a test driver: started from a
//! config value, its listen address read from stderr, killed on drop.

use super::raw::WAIT;
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
