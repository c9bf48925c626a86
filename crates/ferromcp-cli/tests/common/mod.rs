//! Shared helpers: run the real `mcp` binary, start `mcp serve --http`, and
//! enumerate the four ways to reach the everything-server (HTTP and stdio,
//! each in the modern and the handshake era).
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

pub mod gateway;
pub mod python_remote;
pub mod raw;

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The binary under test.
pub const MCP: &str = env!("CARGO_BIN_EXE_mcp");
/// Both eras, as `--era` values.
pub const ERAS: [&str; 2] = ["modern", "handshake"];

/// What a run of `mcp` produced.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(out: Output) -> Self {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// `mcp` with a clean environment for the variables it reads.
pub fn mcp() -> Command {
    let mut c = Command::new(MCP);
    c.env_remove("MCP_SERVER")
        .env_remove("MCP_BROWSER")
        .env_remove("BROWSER")
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY");
    c
}

/// Runs `mcp args…` with stdin closed.
pub fn run(args: &[&str]) -> Run {
    mcp()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run mcp")
        .into()
}

/// Runs `mcp args…` with `input` on stdin and extra environment.
pub fn run_with(args: &[String], input: &str, env: &[(&str, &str)]) -> Run {
    use std::io::Write;
    let mut child = mcp()
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap().into()
}

/// A free loopback port.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Waits until something listens on `addr`.
pub fn wait_listening(addr: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(addr).is_err() {
        assert!(Instant::now() < deadline, "nothing listens on {addr}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `mcp serve --http` on a free loopback port; killed on drop.
pub struct HttpServer {
    child: Child,
    pub url: String,
}

impl HttpServer {
    pub fn start(extra: &[&str]) -> Self {
        let addr = format!("127.0.0.1:{}", free_port());
        let child = Command::new(MCP)
            .args(["serve", "--http", &addr])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mcp serve");
        wait_listening(&addr);
        Self {
            child,
            url: format!("http://{addr}/mcp"),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One way to reach the server.
#[derive(Debug, Clone)]
pub struct Target {
    /// `http/modern`, `stdio/handshake`, …
    pub label: String,
    /// `http` or `stdio`.
    pub transport: &'static str,
    /// `modern` or `handshake`.
    pub era: &'static str,
    /// Arguments before the subcommand's own (the URL).
    pub pre: Vec<String>,
    /// Arguments after them (`--era …`, then `-- mcp serve --stdio`).
    pub post: Vec<String>,
}

impl Target {
    /// `mcp CMD pre… args… post…`.
    pub fn args(&self, cmd: &str, args: &[&str]) -> Vec<String> {
        let mut all = vec![cmd.to_owned()];
        all.extend(self.pre.iter().cloned());
        all.extend(args.iter().map(|s| (*s).to_owned()));
        all.extend(self.post.iter().cloned());
        all
    }

    /// Runs `mcp CMD …` against this target, stdin closed.
    pub fn run(&self, cmd: &str, args: &[&str]) -> Run {
        let all = self.args(cmd, args);
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        run(&refs)
    }

    /// The protocol version this era negotiates with our server.
    pub fn version(&self) -> &'static str {
        if self.era == "modern" {
            "2026-07-28"
        } else {
            "2025-11-25"
        }
    }
}

/// HTTP (the given server) and stdio (`mcp serve --stdio`), both eras.
pub fn targets(http: &HttpServer) -> Vec<Target> {
    let mut v = Vec::new();
    for era in ERAS {
        v.push(Target {
            label: format!("http/{era}"),
            transport: "http",
            era,
            pre: vec![http.url.clone()],
            post: vec!["--era".into(), era.into()],
        });
        v.push(Target {
            label: format!("stdio/{era}"),
            transport: "stdio",
            era,
            pre: Vec::new(),
            post: vec![
                "--era".into(),
                era.into(),
                "--".into(),
                MCP.into(),
                "serve".into(),
                "--stdio".into(),
            ],
        });
    }
    v
}

/// The cells of a table row (columns are separated by two or more spaces).
pub fn cells(line: &str) -> Vec<String> {
    line.split("  ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The row of `table` whose first cell is `first`.
pub fn row(table: &str, first: &str) -> Vec<String> {
    table
        .lines()
        .map(cells)
        .find(|c| c.first().map(String::as_str) == Some(first))
        .unwrap_or_else(|| panic!("no row {first:?} in:\n{table}"))
}

/// A fresh scratch directory.
pub fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("mcp-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The `--` command running `tests/fixtures/scripted_server.py` in `mode`:
/// a handshake-era stdio server playing a behaviour of other SDKs' servers.
pub fn scripted(mode: &str) -> Vec<String> {
    vec![
        "python3".into(),
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/scripted_server.py"
        )
        .into(),
        mode.into(),
    ]
}

/// A pinned third-party peer the test needs is missing (`msg` says which
/// and how to install it): with `CI` set (and not `false`) the test fails,
/// giving `ci_reason`; elsewhere a loud SKIPPED line, and the caller returns.
pub fn peer_missing(msg: &str, ci_reason: &str) {
    if std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false") {
        panic!("{msg} ({ci_reason})");
    }
    eprintln!("\n!!! SKIPPED: {msg} !!!\n");
}

/// Asserts that `out` is the usage error (exit 2) of `--redis` without a
/// requestState key ring shared by the replicas, or, in a build without
/// the `redis` feature, of `--redis` itself.
pub fn assert_redis_needs_a_key_ring(out: &Output) {
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    if cfg!(feature = "redis") {
        assert!(
            err.contains("needs a key ring shared by every replica"),
            "{err}"
        );
    } else {
        assert!(err.contains("without the `redis` feature"), "{err}");
    }
}

/// A fresh EC P-256 client key: its PKCS#8 PEM (what `--client-key-file`
/// and `clientKeyFile` read) and its public JWK (what the test issuer
/// registers for `private_key_jwt`).
pub fn client_key() -> (String, serde_json::Value) {
    let secret = loop {
        let mut b = [0u8; 32];
        getrandom::fill(&mut b).unwrap();
        if let Ok(k) = p256::SecretKey::from_slice(&b) {
            break k;
        }
    };
    let pem = {
        use p256::pkcs8::EncodePrivateKey as _;
        secret.to_pkcs8_pem(Default::default()).unwrap().to_string()
    };
    let key = ferromcp_auth::client::Es256Key::from_pkcs8_pem(&pem).unwrap();
    (pem, serde_json::to_value(key.public_jwk()).unwrap())
}
