//! Shared helpers: the everything-server as a real child process.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

/// The everything-server binary: `$MCP_EVERYTHING_SERVER`, else the one in
/// this target directory (`cargo test --workspace` builds it, because
/// ferromcp-everything has integration tests), else built here once. After
/// changing the server, run the workspace tests (or `cargo build -p
/// ferromcp-everything`) so `cargo test -p ferromcp-client` does not use a stale one.
pub fn server_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Ok(p) = std::env::var("MCP_EVERYTHING_SERVER") {
            return PathBuf::from(p);
        }
        let exe = std::env::current_exe().expect("test exe");
        let dir = exe
            .parent()
            .and_then(|d| d.parent())
            .expect("target dir")
            .to_path_buf();
        let bin = dir.join("everything-server");
        if bin.exists() {
            return bin;
        }
        let status = Command::new(env!("CARGO"))
            .args([
                "build",
                "-q",
                "-p",
                "ferromcp-everything",
                "--bin",
                "everything-server",
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("cargo build everything-server");
        assert!(status.success(), "building everything-server failed");
        dir.join("everything-server")
    })
    .clone()
}

/// An HTTP everything-server on an ephemeral loopback port; killed on drop.
pub struct HttpServer {
    child: Child,
    pub url: String,
}

impl HttpServer {
    pub fn start() -> Self {
        // Pick a free port, then hand it to the server.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").port()
        };
        Self::start_on(port)
    }

    /// Kills the server and starts a fresh one on the same port (all
    /// handshake-era sessions are gone).
    pub fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let port: u16 = self
            .url
            .rsplit(':')
            .next()
            .and_then(|p| p.trim_end_matches("/mcp").parse().ok())
            .expect("port");
        let fresh = Self::start_on(port);
        let old = std::mem::replace(self, fresh);
        std::mem::forget(old);
    }

    fn start_on(port: u16) -> Self {
        let child = Command::new(server_bin())
            .args(["--http", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn everything-server");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Self {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The stdio command for the everything-server.
pub fn stdio_command() -> ferromcp_client::StdioCommand {
    let mut c = ferromcp_client::StdioCommand::new(server_bin(), ["--stdio"]);
    c.stderr = ferromcp_client::StderrMode::Null;
    c
}
