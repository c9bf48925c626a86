//! Static resources changed at run time: `Server::remove_resource` and
//! `Server::update_resources` (one registry swap, one
//! `resources/list_changed`; a refused addition changes nothing), and
//! resource templates added and removed at run time, and tools and
//! prompts updated in one swap (`Server::update_tools`, `update_prompts`).
#![cfg(feature = "stdio")]

use ferromcp_server::notify::{Change, ChangeBus, LocalBus};
use ferromcp_server::protocol::types::{Resource, ResourceContents, ResourceTemplate};
use ferromcp_server::{RequestContext, ResourceDef, ResourceRequest, Server, TemplateDef};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

fn def(uri: &str) -> ResourceDef {
    ResourceDef::new(
        Resource::new(uri, uri),
        |req: ResourceRequest, _cx: RequestContext| async move {
            ResourceContents::text(req.uri, None, "x")
        },
    )
}

/// The URIs `resources/list` answers with (modern, stateless).
async fn listed(server: &Server) -> Vec<String> {
    listed_as(server, "resources/list", "resources", "uri").await
}

/// The `field` of each item of a list method's answer.
async fn listed_as(server: &Server, method: &str, key: &str, field: &str) -> Vec<String> {
    let (client, server_io) = tokio::io::duplex(64 * 1024);
    let (r, w) = tokio::io::split(server_io);
    tokio::spawn(server.clone().serve_io(r, w));
    let (client_read, mut client_write) = tokio::io::split(client);
    let env = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let req =
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{"_meta":{env}}}}}"#)
            + "\n";
    client_write.write_all(req.as_bytes()).await.ok();
    let mut lines = BufReader::new(client_read).lines();
    let line = tokio::time::timeout(Duration::from_secs(5), lines.next_line())
        .await
        .ok()
        .and_then(Result::ok)
        .flatten()
        .unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
    v["result"][key]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|r| r[field].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn drain(rx: &mut tokio::sync::broadcast::Receiver<Change>) -> Vec<Change> {
    let mut v = Vec::new();
    while let Ok(c) = rx.try_recv() {
        v.push(c);
    }
    v
}

#[tokio::test]
async fn resources_are_removed_and_replaced_in_one_swap() {
    let bus = Arc::new(LocalBus::new(16));
    let server = Server::builder("t", "1")
        .backplane(ferromcp_server::Backplane::default().change_bus(bus.clone()))
        .resource(def("a://1"))
        .resource(def("a://2"))
        .resource(def("a://3"))
        .build()
        .unwrap_or_else(|e| panic!("build: {e}"));
    let mut rx = bus.subscribe();

    assert!(server.remove_resource("a://2"));
    assert!(!server.remove_resource("a://2"), "already gone");
    assert_eq!(drain(&mut rx), [Change::ResourcesListChanged]);
    assert_eq!(listed(&server).await, ["a://1", "a://3"]);

    // Replace a://1, drop a://3, add a://4: one change.
    let changed = server
        .update_resources(["a://1", "a://3"], vec![def("a://1"), def("a://4")])
        .unwrap_or_else(|e| panic!("update: {e}"));
    assert!(changed);
    assert_eq!(drain(&mut rx), [Change::ResourcesListChanged]);
    assert_eq!(listed(&server).await, ["a://1", "a://4"]);

    // A duplicate addition is refused and nothing changes.
    let e = server.update_resources(["a://4"], vec![def("a://1")]);
    assert!(e.is_err());
    assert!(drain(&mut rx).is_empty());
    assert_eq!(listed(&server).await, ["a://1", "a://4"]);

    // Nothing to do: no change published.
    assert_eq!(
        server.update_resources(["a://none"], Vec::new()).ok(),
        Some(false)
    );
    assert!(drain(&mut rx).is_empty());
}

fn template(t: &str) -> TemplateDef {
    TemplateDef::new(
        ResourceTemplate {
            uri_template: t.to_owned(),
            name: t.to_owned(),
            ..ResourceTemplate::default()
        },
        |req: ResourceRequest, _cx: RequestContext| async move {
            ResourceContents::text(req.uri, None, "t")
        },
    )
}

#[tokio::test]
async fn templates_are_added_and_removed_at_run_time() {
    let bus = Arc::new(LocalBus::new(16));
    let server = Server::builder("t", "1")
        .backplane(ferromcp_server::Backplane::default().change_bus(bus.clone()))
        .build()
        .unwrap_or_else(|e| panic!("build: {e}"));
    let mut rx = bus.subscribe();
    server
        .add_resource_template(template("a://x/{n}"))
        .unwrap_or_else(|e| panic!("add: {e}"));
    server
        .add_resource_template(template("b://y/{n}"))
        .unwrap_or_else(|e| panic!("add: {e}"));
    assert_eq!(
        drain(&mut rx),
        [Change::ResourcesListChanged, Change::ResourcesListChanged]
    );
    let list = |s: &Server| {
        let s = s.clone();
        async move {
            listed_as(
                &s,
                "resources/templates/list",
                "resourceTemplates",
                "uriTemplate",
            )
            .await
        }
    };
    assert_eq!(list(&server).await, ["a://x/{n}", "b://y/{n}"]);
    assert!(server.remove_resource_template("a://x/{n}"));
    assert!(
        !server.remove_resource_template("a://x/{n}"),
        "already gone"
    );
    assert_eq!(drain(&mut rx), [Change::ResourcesListChanged]);
    assert_eq!(list(&server).await, ["b://y/{n}"]);
    // An invalid template is refused and changes nothing.
    assert!(server.add_resource_template(template("a://{")).is_err());
    assert!(drain(&mut rx).is_empty());
}

#[tokio::test]
async fn tools_and_prompts_are_updated_in_one_swap() {
    use ferromcp_server::{PromptArgs, prompt, tool};
    let bus = Arc::new(LocalBus::new(16));
    let t = |n: &str| tool(n).handler(|_: serde_json::Value, _cx: RequestContext| async { "x" });
    let p = |n: &str| prompt(n).handler(|_: PromptArgs, _cx: RequestContext| async { "p" });
    let server = Server::builder("t", "1")
        .backplane(ferromcp_server::Backplane::default().change_bus(bus.clone()))
        .tool(t("a"))
        .tool(t("b"))
        .build()
        .unwrap_or_else(|e| panic!("build: {e}"));
    let mut rx = bus.subscribe();
    // Replace a, drop b, add c and d: one change.
    let changed = server
        .update_tools(["a", "b"], vec![t("a"), t("c"), t("d")])
        .unwrap_or_else(|e| panic!("update: {e}"));
    assert!(changed);
    assert_eq!(drain(&mut rx), [Change::ToolsListChanged]);
    assert_eq!(
        listed_as(&server, "tools/list", "tools", "name").await,
        ["a", "c", "d"]
    );
    // A duplicate addition is refused and nothing changes.
    assert!(server.update_tools(["x"], vec![t("c")]).is_err());
    assert!(drain(&mut rx).is_empty());
    let changed = server
        .update_prompts(Vec::<&str>::new(), vec![p("p1"), p("p2")])
        .unwrap_or_else(|e| panic!("update: {e}"));
    assert!(changed);
    assert_eq!(drain(&mut rx), [Change::PromptsListChanged]);
    assert_eq!(
        listed_as(&server, "prompts/list", "prompts", "name").await,
        ["p1", "p2"]
    );
}
