//! A Python SDK server of tests/python/ (e.g. `server.py`, the SDK's
//! `MCPServer` over Streamable HTTP) on a free loopback port, killed on
//! drop.

use super::free_port;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Long enough to never fire on a slow CI machine; only guards against a hang.
const WAIT: Duration = Duration::from_secs(60);

/// A running Python remote.
pub struct PythonRemote {
    child: Child,
    /// Its endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
}

/// A file of tests/python/.
pub fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(name)
}

impl PythonRemote {
    /// `py` runs `server` (a file of tests/python/) with the port as its
    /// argument; returns once the port accepts connections.
    pub fn start(py: &Path, server: &str) -> Self {
        let port = free_port();
        let mut child = Command::new(py)
            .arg(script(server))
            .arg(port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the Python remote");
        let addr = format!("127.0.0.1:{port}");
        let deadline = Instant::now() + WAIT;
        while std::net::TcpStream::connect(&addr).is_err() {
            if let Some(s) = child.try_wait().unwrap() {
                panic!("the Python remote exited before listening: {s}");
            }
            assert!(
                Instant::now() < deadline,
                "the Python remote never listened"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            child,
            url: format!("http://{addr}/mcp"),
        }
    }
}

impl Drop for PythonRemote {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
