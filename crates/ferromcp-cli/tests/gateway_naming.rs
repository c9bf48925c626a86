//! `gateway.naming` "onCollision" and the rewrite of shared resource
//! URIs, through `mcp gateway --http` with real upstreams: two
//! everything-servers (`mcp serve --stdio`), which share every name and
//! URI, and `tests/fixtures/expose_child.py`, whose names are its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::gateway::Gateway;
use common::raw::{Client, HANDSHAKE, MODERN, text_of, tool_names};
use common::{MCP, scratch};
use serde_json::{Value, json};

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn uris(c: &Client, method: &str, list: &str, key: &str) -> Vec<String> {
    let a = c.request(json!(1), method, json!({}));
    let mut v: Vec<String> = a["result"][list]
        .as_array()
        .unwrap_or_else(|| panic!("no {list} in {a}"))
        .iter()
        .map(|r| r[key].as_str().unwrap().to_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn on_collision_prefixes_only_shared_names_and_rewrites_shared_uris() {
    let dir = scratch("gateway-naming");
    let ev =
        |allow: Value| json!({"command": MCP, "args": ["serve", "--stdio"], "allowTools": allow});
    let config = json!({
        "gateway": {"naming": "onCollision"},
        "mcpServers": {
            "ev1": ev(json!(["echo", "test_simple_text"])),
            "ev2": ev(json!(["echo"])),
            "kid": {"command": "python3", "args": [fixture("expose_child.py")],
                    "allowTools": ["touch", "pid", "echo"], "denyTools": ["pid"]},
        }
    });
    let g = Gateway::start(&dir, &config, &[]);
    for era in [MODERN, HANDSHAKE] {
        let c = Client::new(&g.addr, era);
        let mut names = tool_names(&c);
        names.sort();
        // echo is everyone's: prefixed for all three; the others keep
        // their own names.
        assert_eq!(
            names,
            [
                "ev1__echo",
                "ev2__echo",
                "kid__echo",
                "test_simple_text",
                "touch"
            ],
            "{era}"
        );
        let a = c.call(json!(2), "ev2__echo", json!({"text": "two"}));
        assert_eq!(text_of(&a), "two", "{era}: {a}");
        let a = c.call(json!(3), "kid__echo", json!({"text": "kid"}));
        assert_eq!(text_of(&a), "kid", "{era}: {a}");
        let a = c.call(json!(4), "test_simple_text", json!({}));
        assert!(a["result"]["content"].is_array(), "{era}: {a}");
        let a = c.call(json!(5), "touch", json!({}));
        assert_eq!(text_of(&a), "touch", "{era}: {a}");
        // The shared plain name routes to nobody; a filtered tool is
        // refused under either form; so is a prefixed unique name.
        for (i, name) in ["echo", "pid", "kid__pid", "kid__touch", "ev1__touch"]
            .iter()
            .enumerate()
        {
            let a = c.call(json!(10 + i), name, json!({"text": "x"}));
            assert!(a.get("error").is_some(), "{era}: {name} answered {a}");
        }

        // Resources: the everything-servers share theirs (rewritten for
        // both), the child's test://r is its own (unchanged).
        let listed = uris(&c, "resources/list", "resources", "uri");
        assert!(listed.contains(&"test://r".to_owned()), "{listed:?}");
        for up in ["ev1", "ev2"] {
            let want = format!("mcp-gateway://{up}/test://static-text");
            assert!(listed.contains(&want), "{era}: {want} not in {listed:?}");
        }
        assert!(
            !listed.iter().any(|u| u.starts_with("test://static")),
            "{era}: a shared URI is listed plain: {listed:?}"
        );
        let a = c.request(
            json!(20),
            "resources/read",
            json!({"uri": "mcp-gateway://ev2/test://static-text"}),
        );
        assert_eq!(
            a["result"]["contents"][0]["uri"], "mcp-gateway://ev2/test://static-text",
            "{era}: {a}"
        );
        assert!(a["result"]["contents"][0]["text"].is_string(), "{a}");
        for bad in [
            "test://static-text",
            "mcp-gateway://nosuch/test://static-text",
            "mcp-gateway://kid/test://static-text",
            "mcp-gateway://ev1/",
        ] {
            let a = c.request(json!(21), "resources/read", json!({"uri": bad}));
            assert!(a.get("error").is_some(), "{era}: {bad} answered {a}");
        }
        // Templates: rewritten the same way, reads and completion mapped back.
        let templates = uris(
            &c,
            "resources/templates/list",
            "resourceTemplates",
            "uriTemplate",
        );
        let t = "mcp-gateway://ev1/test://template/{id}/data";
        assert!(templates.contains(&t.to_owned()), "{era}: {templates:?}");
        let a = c.request(
            json!(22),
            "resources/read",
            json!({"uri": "mcp-gateway://ev1/test://template/42/data"}),
        );
        assert_eq!(
            a["result"]["contents"][0]["uri"], "mcp-gateway://ev1/test://template/42/data",
            "{era}: {a}"
        );
        assert!(
            a["result"]["contents"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("42")),
            "{era}: {a}"
        );
        let a = c.request(
            json!(23),
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": t},
                   "argument": {"name": "resourceUri", "value": "test://static-t"}}),
        );
        assert_eq!(
            a["result"]["completion"]["values"],
            json!(["test://static-text"]),
            "{era}: {a}"
        );
    }
}

#[test]
fn an_unknown_naming_scheme_is_refused_at_start_naming_the_key() {
    let dir = scratch("gateway-naming-bad");
    let file = dir.join("gateway.json");
    std::fs::write(
        &file,
        json!({"gateway": {"naming": "sometimes"}, "mcpServers": {}}).to_string(),
    )
    .unwrap();
    let out = std::process::Command::new(MCP)
        .args(["gateway", "--config"])
        .arg(&file)
        .args(["--http", "127.0.0.1:0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("gateway.naming") && err.contains("onCollision"),
        "{err}"
    );
}
