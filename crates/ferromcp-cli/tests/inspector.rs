//! Interop with the MCP Inspector (npm `@modelcontextprotocol/inspector`,
//! pinned in interop/inspector/, installed by scripts/inspector-peer.sh):
//! its `--cli` drives `mcp serve skills` over stdio and Streamable HTTP in
//! both eras (`skills/list` with its SEP-2640 `--verify` checks,
//! `skills/get`, `resources/directory/read`, `resources/read`) and reads an
//! MCP Apps server's tool metadata and `ui://` resource. Skips with a loud
//! message when the Inspector is not installed; fails when `CI` is set.
// SEP-2640 (Skills Extension), SEP-1865 (MCP Apps).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{MCP, free_port, mcp, scratch, wait_listening};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The Inspector's CLI entry point, or `None` after a loud message.
fn inspector() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::var_os("MCP_INSPECTOR_PEER_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/inspector-peer"));
    let cli = dir.join("node_modules/@modelcontextprotocol/inspector/clients/cli/build/index.js");
    if cli.exists() {
        return Some(cli);
    }
    let msg = format!(
        "the MCP Inspector is not installed ({} is missing): run `bash scripts/inspector-peer.sh`",
        cli.display()
    );
    common::peer_missing(&msg, "CI must run the Inspector interop");
    None
}

/// Runs the Inspector CLI; returns its exit code and stdout as JSON.
fn inspect(cli: &Path, args: &[&str], target: &[&str]) -> (i32, Value, String) {
    let out = Command::new("node")
        .arg(cli)
        .args(["--format", "json", "-q"])
        .args(args)
        .args(target)
        .stdin(Stdio::null())
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = serde_json::from_str(stdout.trim())
        .or_else(|_| {
            // --verify prints one JSON report per line.
            let lines: Result<Vec<Value>, _> = stdout
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(serde_json::from_str)
                .collect();
            lines.map(Value::Array)
        })
        .unwrap_or(Value::Null);
    // `--format json` wraps the method's result as {"result": …}.
    let json = match json {
        Value::Object(mut o) if o.contains_key("result") => o.remove("result").unwrap_or_default(),
        other => other,
    };
    (
        out.status.code().unwrap_or(-1),
        json,
        format!("{stdout}\n{stderr}"),
    )
}

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}

#[test]
fn the_inspector_drives_mcp_serve_skills_over_stdio_and_http_in_both_eras() {
    let Some(cli) = inspector() else { return };
    let dir = scratch("inspector-skills");
    write(
        &dir.join("git-flow/SKILL.md"),
        "---\nname: git-flow\ndescription: Follow the team's Git conventions\n---\n# Git flow\n",
    );
    write(
        &dir.join("git-flow/references/branches.md"),
        "Branch from main.\n",
    );
    write(
        &dir.join("acme/billing/refunds/SKILL.md"),
        "---\nname: refunds\ndescription: Process refunds\nmetadata:\n  version: \"2\"\n---\n# Refunds\n",
    );
    let dir_s = dir.to_str().expect("utf-8");
    let addr = format!("127.0.0.1:{}", free_port());
    let _http = Served(
        mcp()
            .args(["serve", "skills", dir_s, "--http", &addr, "--no-watch"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mcp serve skills"),
    );
    wait_listening(&addr);
    let url = format!("http://{addr}/mcp");
    let stdio = [MCP, "serve", "skills", dir_s, "--no-watch"];
    for era in ["legacy", "modern"] {
        for (label, target) in [("http", vec![url.as_str()]), ("stdio", stdio.to_vec())] {
            let what = format!("{label}/{era}");
            let e = ["--protocol-era", era];
            let (code, list, out) = inspect(
                &cli,
                &[&e[..], &["--method", "skills/list"]].concat(),
                &target,
            );
            assert_eq!(code, 0, "{what}: {out}");
            let uris: Vec<&str> = list["skills"]
                .as_array()
                .map(|a| a.iter().filter_map(|s| s["uri"].as_str()).collect())
                .unwrap_or_default();
            assert_eq!(
                uris,
                [
                    "skill://acme/billing/refunds/SKILL.md",
                    "skill://git-flow/SKILL.md"
                ],
                "{what}: {out}"
            );
            // The Inspector's own SEP-2640 conformance and digest checks.
            let (code, _, out) = inspect(
                &cli,
                &[
                    &e[..],
                    &["--method", "skills/list", "--verify", "--require-digests"],
                ]
                .concat(),
                &target,
            );
            assert_eq!(code, 0, "{what}: --verify: {out}");
            let (code, get, out) = inspect(
                &cli,
                &[
                    &e[..],
                    &[
                        "--method",
                        "skills/get",
                        "--uri",
                        "skill://git-flow/SKILL.md",
                    ],
                ]
                .concat(),
                &target,
            );
            assert_eq!(code, 0, "{what}: {out}");
            assert_eq!(
                get["skill"]["frontmatter"]["name"], "git-flow",
                "{what}: {out}"
            );
            let (code, listing, out) = inspect(
                &cli,
                &[
                    &e[..],
                    &[
                        "--method",
                        "resources/directory/read",
                        "--uri",
                        "skill://git-flow",
                    ],
                ]
                .concat(),
                &target,
            );
            assert_eq!(code, 0, "{what}: {out}");
            let kids: Vec<(&str, &str)> = listing["resources"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|r| Some((r["uri"].as_str()?, r["mimeType"].as_str()?)))
                        .collect()
                })
                .unwrap_or_default();
            assert_eq!(
                kids,
                [
                    ("skill://git-flow/SKILL.md", "text/markdown"),
                    ("skill://git-flow/references", "inode/directory")
                ],
                "{what}: {out}"
            );
            let (code, read, out) = inspect(
                &cli,
                &[
                    &e[..],
                    &[
                        "--method",
                        "resources/read",
                        "--uri",
                        "skill://git-flow/references/branches.md",
                    ],
                ]
                .concat(),
                &target,
            );
            assert_eq!(code, 0, "{what}: {out}");
            assert_eq!(
                read["contents"][0]["text"], "Branch from main.\n",
                "{what}: {out}"
            );
            // Not a skill: the server's -32602 makes the Inspector fail.
            let (code, _, out) = inspect(
                &cli,
                &[
                    &e[..],
                    &[
                        "--method",
                        "skills/get",
                        "--uri",
                        "skill://git-flow/references/branches.md",
                    ],
                ]
                .concat(),
                &target,
            );
            assert_ne!(code, 0, "{what}: {out}");
        }
    }
}

#[test]
fn the_inspector_reads_an_apps_server_tool_and_ui_resource_in_both_eras() {
    let Some(cli) = inspector() else { return };
    use ferromcp_server::{NoArgs, RequestContext, Server, tool, ui_resource};
    let addr = format!("127.0.0.1:{}", free_port());
    let server = Server::builder("charts", "1")
        .ui_resource(
            ui_resource("ui://charts/view.html", "chart_view")
                .html("<!DOCTYPE html><html><body>chart</body></html>")
                .connect_domain("https://api.example.com"),
        )
        .tool(
            tool("chart")
                .handler(|_: NoArgs, _cx: RequestContext| async { "3 points" })
                .with_ui("ui://charts/view.html"),
        )
        .build()
        .expect("build");
    let bind: std::net::SocketAddr = addr.parse().expect("addr");
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move { server.serve_http(bind).await })
    });
    wait_listening(&addr);
    let url = format!("http://{addr}/mcp");
    for era in ["legacy", "modern"] {
        let e = ["--protocol-era", era];
        let (code, info, out) = inspect(
            &cli,
            &[
                &e[..],
                &[
                    "--method",
                    "tools/call",
                    "--tool-name",
                    "chart",
                    "--app-info",
                    "--advertise-apps",
                ],
            ]
            .concat(),
            &[url.as_str()],
        );
        assert_eq!(code, 0, "{era}: {out}");
        let text = info.to_string();
        assert!(text.contains("ui://charts/view.html"), "{era}: {out}");
        assert!(text.contains("https://api.example.com"), "{era}: {out}");
        let (code, read, out) = inspect(
            &cli,
            &[
                &e[..],
                &[
                    "--method",
                    "resources/read",
                    "--uri",
                    "ui://charts/view.html",
                ],
            ]
            .concat(),
            &[url.as_str()],
        );
        assert_eq!(code, 0, "{era}: {out}");
        assert_eq!(
            read["contents"][0]["mimeType"], "text/html;profile=mcp-app",
            "{era}: {out}"
        );
        assert!(
            read["contents"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("chart")),
            "{era}: {out}"
        );
    }
}
