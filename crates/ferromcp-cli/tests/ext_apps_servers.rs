//! Interop with the MCP Apps package's own example servers (npm
//! `@modelcontextprotocol/server-basic-vanillajs` and `server-map` 2.0.3,
//! from modelcontextprotocol/ext-apps, pinned in interop/ext-apps-servers/,
//! installed by scripts/ext-apps-servers-peer.sh): our client with
//! `.mcp_apps()` and the real `mcp` binary read their tools' `_meta.ui`, the
//! `ui://` resources (MIME type, `_meta.ui.csp`) and save the HTML, over
//! stdio and Streamable HTTP. They are TypeScript SDK 2.0.0 servers that
//! speak the handshake era only (up to 2025-11-25): the modern era is
//! refused with a clear error, which is checked too. Skips with a loud
//! message when the servers are not installed; fails when `CI` is set.
// SEP-1865 (MCP Apps).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{free_port, row, run, scratch, wait_listening};
use ferromcp_client::protocol::types::{
    ResourceContents, UI_EXTENSION, UI_MIME_TYPE, UiVisibility,
};
use ferromcp_client::{ClientBuilder, EraPreference, StdioCommand};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The install folder's `node_modules/@modelcontextprotocol`, or `None`
/// after a loud message.
fn servers() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::var_os("MCP_EXT_APPS_SERVERS_PEER_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/ext-apps-servers-peer"));
    let mods = dir.join("node_modules/@modelcontextprotocol");
    let missing: Vec<PathBuf> = ["server-basic-vanillajs", "server-map"]
        .iter()
        .map(|p| entry(&mods, p))
        .filter(|p| !p.exists())
        .collect();
    if missing.is_empty() {
        return Some(mods);
    }
    let msg = format!(
        "the ext-apps example servers are not installed ({} missing): run `bash scripts/ext-apps-servers-peer.sh`",
        missing[0].display()
    );
    common::peer_missing(&msg, "CI must run the ext-apps servers interop");
    None
}

/// A package's entry point (`main.ts` built: `--stdio`, else HTTP on `$PORT`).
fn entry(mods: &Path, package: &str) -> PathBuf {
    mods.join(package).join("dist/index.js")
}

/// The package's own built HTML, which the server reads and serves.
fn packaged_html(mods: &Path, package: &str) -> String {
    std::fs::read_to_string(mods.join(package).join("dist/mcp-app.html")).expect("mcp-app.html")
}

/// The example over Streamable HTTP on a free port; killed on drop.
fn start_http(mods: &Path, package: &str) -> (Served, String) {
    let port = free_port();
    let child = Command::new("node")
        .arg(entry(mods, package))
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn node");
    let served = Served(child);
    wait_listening(&format!("127.0.0.1:{port}"));
    (served, format!("http://127.0.0.1:{port}/mcp"))
}

async fn connect(
    target: &str,
    era: EraPreference,
) -> ferromcp_client::Result<ferromcp_client::Client> {
    let builder = ClientBuilder::new("ext-apps-interop", "1")
        .era(era)
        .mcp_apps();
    if target.starts_with("http://") {
        builder.connect_url(target).await
    } else {
        builder
            .connect_command(StdioCommand::new("node", [target, "--stdio"]))
            .await
    }
}

// SEP-1865: the basic example's app tool and its ui:// resource, typed by
// our client, over stdio and HTTP (handshake era: its only one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_reads_the_ext_apps_basic_example_over_stdio_and_http() {
    let Some(mods) = servers() else { return };
    let package = "server-basic-vanillajs";
    let (_http, url) = start_http(&mods, package);
    let stdio = entry(&mods, package);
    let html = packaged_html(&mods, package);
    for target in [stdio.to_str().expect("utf-8 path"), url.as_str()] {
        // Auto probes `server/discover` and falls back to `initialize`.
        for era in [EraPreference::Handshake, EraPreference::Auto] {
            let what = format!("{target} {era:?}");
            let client = connect(target, era).await.expect("connect");
            assert_eq!(
                client.era(),
                ferromcp_client::Era::Handshake,
                "{what}: a handshake-era server"
            );
            // Our declaration is accepted; the package's server helpers add
            // no server-side declaration (docs/EXTENSIONS.md says so).
            let caps = client.server_capabilities();
            assert!(
                !caps
                    .extensions
                    .as_ref()
                    .is_some_and(|e| e.contains_key(UI_EXTENSION)),
                "{what}: {caps:?}"
            );
            let tools = client.list_tools().await.expect("tools/list");
            let tool = tools
                .iter()
                .find(|t| t.name == "get-time")
                .expect("get-time");
            let ui = tool.ui().expect("get-time has _meta.ui");
            assert_eq!(
                ui.resource_uri.as_deref(),
                Some("ui://get-time/mcp-app.html"),
                "{what}"
            );
            // No visibility given: both, per SEP-1865.
            assert!(tool.visible_to_model(), "{what}");
            assert!(ui.visible_to_app(), "{what}");
            assert!(
                ui.visibility.is_none()
                    || ui
                        .visibility
                        .as_deref()
                        .is_some_and(|v| v.contains(&UiVisibility::Model)),
                "{what}: {ui:?}"
            );
            let listed = client.list_resources().await.expect("resources/list");
            let r = listed
                .iter()
                .find(|r| r.uri == "ui://get-time/mcp-app.html")
                .expect("the app is listed");
            assert_eq!(r.mime_type.as_deref(), Some(UI_MIME_TYPE), "{what}");
            assert!(r.is_ui(), "{what}");
            let read = client
                .read_resource("ui://get-time/mcp-app.html")
                .await
                .expect("resources/read");
            let [c] = read.contents.as_slice() else {
                panic!(
                    "{what}: one content item expected: {:?}",
                    read.contents.len()
                );
            };
            let ResourceContents::Text(t) = c else {
                panic!("{what}: text contents expected");
            };
            assert_eq!(t.mime_type.as_deref(), Some(UI_MIME_TYPE), "{what}");
            assert_eq!(t.text, html, "{what}: the packaged HTML");
            // The call's result is text plus structured content.
            let out = client
                .call_tool("get-time", None)
                .await
                .expect("tools/call");
            assert_ne!(out.is_error, Some(true), "{what}: {out:?}");
        }
        // The modern era is refused with a clear error, not a hang.
        let Err(err) = connect(target, EraPreference::Modern).await else {
            panic!("{target}: a handshake-era server refuses the modern era");
        };
        assert!(err.to_string().contains("modern"), "{target}: {err}");
    }
}

// SEP-1865 "UI Resource Format": the map example's read contents carry
// `_meta.ui.csp` domains, parsed by our types; a tool without an app has no
// `_meta.ui`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_reads_the_csp_of_the_ext_apps_map_example() {
    let Some(mods) = servers() else { return };
    let stdio = entry(&mods, "server-map");
    let client = connect(
        stdio.to_str().expect("utf-8 path"),
        EraPreference::Handshake,
    )
    .await
    .expect("connect");
    let tools = client.list_tools().await.expect("tools/list");
    let map = tools
        .iter()
        .find(|t| t.name == "show-map")
        .expect("show-map");
    assert_eq!(
        map.ui().and_then(|u| u.resource_uri).as_deref(),
        Some("ui://cesium-map/mcp-app.html")
    );
    let geocode = tools.iter().find(|t| t.name == "geocode").expect("geocode");
    assert!(geocode.ui().is_none(), "{geocode:?}");
    assert!(geocode.visible_to_model());
    let read = client
        .read_resource("ui://cesium-map/mcp-app.html")
        .await
        .expect("resources/read");
    let c = read.contents.first().expect("one content item");
    let csp = c.ui().and_then(|u| u.csp).expect("_meta.ui.csp");
    let want = [
        "https://*.openstreetmap.org",
        "https://cesium.com",
        "https://*.cesium.com",
    ];
    assert_eq!(
        csp.connect_domains.as_deref(),
        Some(&want.map(String::from)[..])
    );
    assert_eq!(
        csp.resource_domains.as_deref(),
        Some(&want.map(String::from)[..])
    );
    assert!(csp.frame_domains.is_none());
    let ResourceContents::Text(t) = c else {
        panic!("text contents expected");
    };
    assert_eq!(t.text, packaged_html(&mods, "server-map"));
}

// The `mcp` CLI: the APP column and `read ui://… --save FILE`, over stdio
// and HTTP.
#[test]
fn mcp_tools_and_read_save_work_against_the_ext_apps_basic_example() {
    let Some(mods) = servers() else { return };
    let package = "server-basic-vanillajs";
    let (_http, url) = start_http(&mods, package);
    let stdio = entry(&mods, package);
    let stdio_s = stdio.to_str().expect("utf-8 path");
    let html = packaged_html(&mods, package);
    let dir = scratch("ext-apps-save");
    let targets: [(&str, Vec<&str>); 2] = [
        ("stdio", vec!["--", "node", stdio_s, "--stdio"]),
        ("http", vec![url.as_str()]),
    ];
    for (label, target) in &targets {
        // `auto` (the default): the probe falls back to `initialize`.
        let tools: Vec<&str> = [&["tools"][..], target].concat();
        let r = run(&tools);
        assert_eq!(r.code, 0, "{label}: {r:?}");
        assert!(
            r.stdout.lines().next().is_some_and(|h| h.contains("APP")),
            "{label}: {}",
            r.stdout
        );
        assert_eq!(
            row(&r.stdout, "get-time").last().map(String::as_str),
            Some("ui://get-time/mcp-app.html"),
            "{label}: {}",
            r.stdout
        );
        let file = dir.join(format!("{label}.html"));
        let file_s = file.to_str().expect("utf-8");
        // Options before `--`: the server command takes the rest.
        let (head, tail) = match target.iter().position(|a| *a == "--") {
            Some(i) => target.split_at(i),
            None => (&target[..], &[][..]),
        };
        let read: Vec<&str> = [
            &["read"][..],
            head,
            &["ui://get-time/mcp-app.html", "--save", file_s],
            tail,
        ]
        .concat();
        let r = run(&read);
        assert_eq!(r.code, 0, "{label}: {r:?}");
        assert!(r.stderr.contains(UI_MIME_TYPE), "{label}: {}", r.stderr);
        assert_eq!(
            std::fs::read_to_string(&file).ok().as_deref(),
            Some(html.as_str()),
            "{label}"
        );
        let modern: Vec<&str> = [&["tools"][..], head, &["--era", "modern"], tail].concat();
        let r = run(&modern);
        assert_ne!(r.code, 0, "{label}: {r:?}");
        assert!(r.stderr.contains("modern"), "{label}: {}", r.stderr);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
