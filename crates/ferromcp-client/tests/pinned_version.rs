//! `ClientBuilder::protocol_version`: a pinned handshake revision is what
//! `initialize` offers and the only one accepted back; a pinned modern
//! revision probes and never falls back.
// VER-03, ERA-08, LEGACY-01
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{HttpServer, stdio_command};
use ferromcp_client::{ClientBuilder, Era, ErrorKind, ProtocolVersion, StderrMode, StdioCommand};
use std::time::Duration;

const HANDSHAKE: [ProtocolVersion; 3] = [
    ProtocolVersion::V2025_11_25,
    ProtocolVersion::V2025_06_18,
    ProtocolVersion::V2025_03_26,
];

fn pinned(v: ProtocolVersion) -> ClientBuilder {
    ClientBuilder::new("pin-test", "0.0.1")
        .request_timeout(Duration::from_secs(15))
        .protocol_version(v)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pinned_handshake_versions_are_spoken_over_stdio_and_http() {
    let server = HttpServer::start();
    for v in HANDSHAKE {
        let stdio = pinned(v).connect_command(stdio_command()).await.unwrap();
        let http = pinned(v).connect_url(&server.url).await.unwrap();
        for (label, c) in [("stdio", &stdio), ("http", &http)] {
            assert_eq!(c.protocol_version(), v, "{label}");
            assert_eq!(c.era(), Era::Handshake, "{label}");
            let tools = c.list_tools().await.unwrap();
            assert!(tools.iter().any(|t| t.name == "echo"), "{label} {v}");
        }
        stdio.close().await;
        http.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pinned_modern_version_wins_over_the_era_preference() {
    let c = pinned(ProtocolVersion::V2026_07_28)
        .era(ferromcp_client::EraPreference::Handshake)
        .connect_command(stdio_command())
        .await
        .unwrap();
    assert_eq!(c.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(c.era(), Era::Modern);
    c.close().await;
}

/// A server answering `initialize` with another version than the pinned
/// one is refused with a negotiation error naming both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_choosing_another_version_is_refused() {
    let script = r#"read -r line; printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"other","version":"1"}}}'; sleep 5"#;
    let mut cmd = StdioCommand::new("sh", ["-c", script]);
    cmd.stderr = StderrMode::Null;
    let err = pinned(ProtocolVersion::V2025_06_18)
        .connect_command(cmd)
        .await
        .expect_err("must refuse");
    assert!(matches!(err.kind(), ErrorKind::Negotiation), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("2025-11-25") && msg.contains("2025-06-18 is pinned"),
        "{msg}"
    );
}
