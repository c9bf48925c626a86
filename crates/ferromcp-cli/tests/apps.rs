//! MCP Apps through the real `mcp` binary: `mcp tools` marks tools with an
//! app, `mcp read ui://… --save FILE` writes the HTML, over Streamable HTTP
//! in both eras, against a server with an app run in this test process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{ERAS, free_port, row, run, scratch, wait_listening};
use ferromcp_server::protocol::types::{UiToolMeta, UiVisibility};
use ferromcp_server::{NoArgs, RequestContext, Server, tool, ui_resource};

const HTML: &str = "<!DOCTYPE html><html><body><p>chart</p></body></html>";

/// A server with one app, two tools linked to it (one app-only) and a plain
/// tool, on a free loopback port; runs until the test process ends.
fn start_apps_server() -> String {
    let addr = format!("127.0.0.1:{}", free_port());
    let server = Server::builder("charts", "1")
        .ui_resource(ui_resource("ui://charts/view.html", "chart_view").html(HTML))
        .tool(
            tool("chart")
                .handler(|_: NoArgs, _cx: RequestContext| async { "3 points" })
                .with_ui("ui://charts/view.html"),
        )
        .tool(
            tool("zoom")
                .handler(|_: NoArgs, _cx: RequestContext| async { "zoomed" })
                .with_ui(UiToolMeta::new("ui://charts/view.html").visibility([UiVisibility::App])),
        )
        .tool(tool("plain").handler(|_: NoArgs, _cx: RequestContext| async { "text" }))
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
    format!("http://{addr}/mcp")
}

#[test]
fn mcp_tools_marks_tools_with_an_app_in_both_eras() {
    let url = start_apps_server();
    for era in ERAS {
        let r = run(&["tools", &url, "--era", era]);
        assert_eq!(r.code, 0, "{era}: {r:?}");
        let header = r.stdout.lines().next().unwrap_or_default();
        assert!(header.contains("APP"), "{era}: {}", r.stdout);
        assert_eq!(
            row(&r.stdout, "chart").last().map(String::as_str),
            Some("ui://charts/view.html")
        );
        assert_eq!(
            row(&r.stdout, "zoom").last().map(String::as_str),
            Some("ui://charts/view.html (app only)"),
            "{era}: {}",
            r.stdout
        );
        // The plain tool's row has no APP cell.
        assert_eq!(row(&r.stdout, "plain").len(), 1, "{era}: {}", r.stdout);
    }
}

#[test]
fn mcp_read_save_writes_the_app_html_in_both_eras() {
    let url = start_apps_server();
    let dir = scratch("apps-save");
    for era in ERAS {
        let file = dir.join(format!("{era}.html"));
        let file_s = file.to_str().expect("utf-8");
        let r = run(&[
            "read",
            &url,
            "ui://charts/view.html",
            "--save",
            file_s,
            "--era",
            era,
        ]);
        assert_eq!(r.code, 0, "{era}: {r:?}");
        assert_eq!(
            std::fs::read_to_string(&file).ok().as_deref(),
            Some(HTML),
            "{era}"
        );
        assert!(
            r.stderr.contains("text/html;profile=mcp-app"),
            "{era}: {}",
            r.stderr
        );
        assert!(
            !r.stdout.contains("chart"),
            "{era}: --save prints no contents: {}",
            r.stdout
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_server_without_apps_keeps_the_three_column_table() {
    let http = common::HttpServer::start(&[]);
    let r = run(&["tools", &http.url]);
    assert_eq!(r.code, 0, "{r:?}");
    let header = r.stdout.lines().next().unwrap_or_default();
    assert!(
        header.starts_with("TOOL") && !header.contains("APP"),
        "{}",
        r.stdout
    );
}
