//! `--protocol-version REV` pins the revision the client speaks, over
//! stdio and HTTP; anything but the four
//! supported revisions is a usage error (exit 2).
// VER-03, ERA-08, LEGACY-01
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{HttpServer, MCP, run};
use serde_json::Value;

const PINNABLE: [(&str, &str); 4] = [
    ("2026-07-28", "modern"),
    ("2025-11-25", "handshake"),
    ("2025-06-18", "handshake"),
    ("2025-03-26", "handshake"),
];

#[test]
fn discover_shows_the_pinned_version_over_stdio_and_http() {
    let http = HttpServer::start(&[]);
    for (rev, era) in PINNABLE {
        let stdio_args = [
            "discover",
            "--json",
            "--protocol-version",
            rev,
            "--",
            MCP,
            "serve",
            "--stdio",
        ];
        let http_args = ["discover", &http.url, "--json", "--protocol-version", rev];
        for (label, args) in [("stdio", &stdio_args[..]), ("http", &http_args[..])] {
            let r = run(args);
            assert_eq!(r.code, 0, "{label} {rev}: {r:?}");
            let v: Value = serde_json::from_str(&r.stdout).unwrap();
            assert_eq!(v["protocolVersion"], rev, "{label}");
            assert_eq!(v["era"], era, "{label}");
        }
    }
    // The human-readable form, and a pinned era used for real work.
    let r = run(&[
        "discover",
        "--protocol-version",
        "2025-03-26",
        "--",
        MCP,
        "serve",
        "--stdio",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("era:          handshake"), "{r:?}");
    assert!(r.stdout.contains("version:      2025-03-26"), "{r:?}");
    let r = run(&[
        "call",
        &http.url,
        "echo",
        "text=pinned",
        "--protocol-version",
        "2025-06-18",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout.trim(), "pinned");
}

#[test]
fn unsupported_revisions_are_usage_errors() {
    for bad in ["2024-11-05", "latest", "2025-13-01", ""] {
        let r = run(&[
            "discover",
            "--protocol-version",
            bad,
            "--",
            MCP,
            "serve",
            "--stdio",
        ]);
        assert_eq!(r.code, 2, "{bad:?}: {r:?}");
        assert!(
            r.stderr
                .contains("2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26"),
            "{bad:?}: {r:?}"
        );
    }
}
