//! The skills extension over the HTTP service in both eras: the
//! declaration, `skills/list`, `skills/get`, `resources/directory/read`,
//! the `skill://` resources, and a reload's notifications.
// SEP-2640 (Skills Extension).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ferromcp_server::notify::Change;
use ferromcp_server::skills::Skill;
use ferromcp_server::transport::http::{HttpConfig, McpService};
use ferromcp_server::{Server, testing};
mod common;

use common::{handshake_post, handshake_session};
use serde_json::json;
use sha2::{Digest, Sha256};

fn server() -> Server {
    builder().build().unwrap()
}

fn builder() -> ferromcp_server::ServerBuilder {
    Server::builder("skills", "1.0.0")
        .skill(
            Skill::new(
                "pdf-processing",
                "Extract, fill, and assemble PDF documents",
                "# PDF\nSee templates/.\n",
            )
            .field("metadata", json!({"version": "2.1.0"}))
            .file("templates/invoice.md", "# Invoice\n")
            .file("templates/regional/eu-invoice.md", "# EU\n")
            .file("scripts/logo.bin", vec![0u8, 159, 146, 150]),
        )
        .skill(Skill::new("refunds", "Process refunds", "# Refunds\n").prefix("acme/billing"))
}

fn sha(bytes: &[u8]) -> String {
    let h = Sha256::digest(bytes);
    format!(
        "sha256:{}",
        h.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

// SEP-2640 "Capability Declaration", "Enumeration via skills/list",
// "Retrieval via skills/get", "Directory Listing", "Resource Metadata".
#[tokio::test]
async fn the_skills_methods_on_the_modern_wire() {
    let svc = McpService::new(server(), HttpConfig::default());
    let d = testing::request(&svc, "server/discover", json!({})).await;
    assert_eq!(
        d["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/skills"],
        json!({"directoryRead": true}),
        "{d}"
    );
    let l = testing::request(&svc, "skills/list", json!({})).await;
    let skills = l["result"]["skills"].as_array().expect("skills");
    let uris: Vec<&str> = skills.iter().filter_map(|s| s["uri"].as_str()).collect();
    assert_eq!(
        uris,
        [
            "skill://acme/billing/refunds/SKILL.md",
            "skill://pdf-processing/SKILL.md"
        ]
    );
    assert_eq!(l["result"]["resultType"], "complete");
    assert!(
        l["result"]["ttlMs"].is_u64(),
        "list-caching attributes: {l}"
    );
    let pdf = &skills[1];
    assert_eq!(pdf["frontmatter"]["metadata"]["version"], "2.1.0");
    let files = pdf["resources"].as_array().expect("files");
    assert_eq!(files.len(), 4);
    // Every listed digest and size is that of the bytes resources/read serves.
    for f in files {
        let uri = f["uri"].as_str().expect("uri");
        let r = testing::request(&svc, "resources/read", json!({"uri": uri})).await;
        let c = &r["result"]["contents"][0];
        let bytes = match (c["text"].as_str(), c["blob"].as_str()) {
            (Some(t), _) => t.as_bytes().to_vec(),
            (None, Some(b)) => {
                ferromcp_server::protocol::base64::decode(b.as_bytes()).expect("base64")
            }
            _ => panic!("no contents: {r}"),
        };
        assert_eq!(f["digest"], sha(&bytes), "{uri}");
        assert_eq!(f["size"], bytes.len(), "{uri}");
    }
    // The SKILL.md resource: text/markdown, name and description from the front matter.
    let list = testing::request(&svc, "resources/list", json!({})).await;
    let md = list["result"]["resources"]
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|r| r["uri"] == "skill://pdf-processing/SKILL.md")
                .cloned()
        })
        .expect("listed");
    assert_eq!(md["mimeType"], "text/markdown");
    assert_eq!(md["name"], "pdf-processing");
    assert_eq!(
        md["description"],
        "Extract, fill, and assemble PDF documents"
    );
    assert_eq!(
        md["_meta"]["io.modelcontextprotocol.skills/metadata"]["version"],
        "2.1.0"
    );
    // skills/get: the same entry; -32602 for what is not a skill.
    let g = testing::request(
        &svc,
        "skills/get",
        json!({"uri": "skill://pdf-processing/SKILL.md"}),
    )
    .await;
    assert_eq!(g["result"]["skill"], *pdf);
    // Caching attributes as on resources/read (the MCP Inspector requires
    // them on the 2026-07-28 wire).
    assert!(
        g["result"]["ttlMs"].is_u64() && g["result"]["cacheScope"].is_string(),
        "{g}"
    );
    for bad in [
        "skill://pdf-processing/templates/invoice.md",
        "skill://nope/SKILL.md",
        "skill://pdf-processing",
    ] {
        let e = testing::request(&svc, "skills/get", json!({"uri": bad})).await;
        assert_eq!(e["error"]["code"], -32602, "{bad}: {e}");
    }
    let e = testing::request(&svc, "skills/get", json!({})).await;
    assert_eq!(e["error"]["code"], -32602, "{e}");
    // resources/directory/read: direct children, directories as inode/directory.
    let r = testing::request(
        &svc,
        "resources/directory/read",
        json!({"uri": "skill://pdf-processing/templates"}),
    )
    .await;
    assert_eq!(
        r["result"]["resources"],
        json!([
            {"uri": "skill://pdf-processing/templates/invoice.md", "name": "templates/invoice.md", "mimeType": "text/markdown", "size": 10},
            {"uri": "skill://pdf-processing/templates/regional", "name": "regional", "mimeType": "inode/directory"}
        ]),
        "{r}"
    );
    let root = testing::request(
        &svc,
        "resources/directory/read",
        json!({"uri": "skill://acme"}),
    )
    .await;
    assert_eq!(
        root["result"]["resources"][0]["uri"],
        "skill://acme/billing"
    );
    for bad in [
        "skill://pdf-processing/templates/invoice.md",
        "skill://none",
        "skill://pdf-processing/",
    ] {
        let e = testing::request(&svc, "resources/directory/read", json!({"uri": bad})).await;
        assert_eq!(e["error"]["code"], -32602, "{bad}: {e}");
    }
}

#[tokio::test]
async fn the_skills_methods_in_a_handshake_session() {
    let svc = McpService::new(server(), HttpConfig::default());
    let (session, init) = handshake_session(&svc).await;
    assert_eq!(
        init["result"]["capabilities"]["extensions"],
        json!({"io.modelcontextprotocol/skills": {"directoryRead": true}}),
        "{init}"
    );
    let l = testing::send(
        &svc,
        handshake_post(
            json!({"jsonrpc":"2.0","id":2,"method":"skills/list"}),
            Some(&session),
        ),
    )
    .await;
    assert_eq!(
        l["result"]["skills"].as_array().map(Vec::len),
        Some(2),
        "{l}"
    );
    assert!(l["result"].get("resultType").is_none(), "{l}");
    let g = testing::send(
        &svc,
        handshake_post(json!({"jsonrpc":"2.0","id":3,"method":"skills/get","params":{"uri":"skill://acme/billing/refunds/SKILL.md"}}), Some(&session)),
    )
    .await;
    assert_eq!(
        g["result"]["skill"]["frontmatter"]["name"], "refunds",
        "{g}"
    );
    let r = testing::send(
        &svc,
        handshake_post(json!({"jsonrpc":"2.0","id":4,"method":"resources/directory/read","params":{"uri":"skill://acme/billing/refunds"}}), Some(&session)),
    )
    .await;
    assert_eq!(
        r["result"]["resources"][0]["uri"], "skill://acme/billing/refunds/SKILL.md",
        "{r}"
    );
}

#[tokio::test]
async fn without_skills_nothing_is_declared_or_answered() {
    let svc = McpService::new(
        Server::builder("plain", "1").build().unwrap(),
        HttpConfig::default(),
    );
    let d = testing::request(&svc, "server/discover", json!({})).await;
    assert!(
        d["result"]["capabilities"].get("extensions").is_none(),
        "{d}"
    );
    let e = testing::request(&svc, "skills/list", json!({})).await;
    assert_eq!(e["error"]["code"], -32601, "{e}");
}

#[tokio::test]
async fn a_reload_swaps_the_skills_and_notifies() {
    let bus = std::sync::Arc::new(ferromcp_server::notify::LocalBus::new(64));
    let server = builder()
        .backplane(ferromcp_server::Backplane::default().change_bus(bus.clone()))
        .build()
        .unwrap();
    let svc = McpService::new(server.clone(), HttpConfig::default());
    let mut changes = ferromcp_server::notify::ChangeBus::subscribe(&*bus);
    server
        .set_skills(vec![Skill::new("pdf-processing", "PDFs, v2", "# PDF v2\n")])
        .expect("valid");
    let l = testing::request(&svc, "skills/list", json!({})).await;
    let skills = l["result"]["skills"].as_array().expect("skills");
    assert_eq!(skills.len(), 1, "{l}");
    assert_eq!(skills[0]["frontmatter"]["description"], "PDFs, v2");
    let gone = testing::request(
        &svc,
        "resources/read",
        json!({"uri": "skill://acme/billing/refunds/SKILL.md"}),
    )
    .await;
    assert!(gone.get("error").is_some(), "{gone}");
    let mut seen = Vec::new();
    while let Ok(c) = changes.try_recv() {
        seen.push(c);
    }
    assert!(
        seen.iter()
            .any(|c| matches!(c, Change::ResourcesListChanged)),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(
            |c| matches!(c, Change::ResourceUpdated(u) if u == "skill://pdf-processing/SKILL.md")
        ),
        "{seen:?}"
    );
    // A refused reload changes nothing.
    assert!(server.set_skills(vec![Skill::new("Bad", "d", "")]).is_err());
    let l = testing::request(&svc, "skills/list", json!({})).await;
    assert_eq!(
        l["result"]["skills"][0]["frontmatter"]["description"],
        "PDFs, v2"
    );
}

// The folder watcher: an edit is picked up (a reload, the new description
// listed); an edit that breaks a rule is refused and the skills stay.
#[cfg(feature = "fs")]
#[tokio::test]
async fn the_watcher_reloads_a_changed_folder_and_keeps_skills_on_a_bad_edit() {
    let dir = std::env::temp_dir().join(format!("mcp-skills-watch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("notes")).unwrap();
    let md = dir.join("notes/SKILL.md");
    std::fs::write(&md, "---\nname: notes\ndescription: v1\n---\n").unwrap();
    let server = Server::builder("w", "1").skills_dir(&dir).build().unwrap();
    let svc = McpService::new(server.clone(), HttpConfig::default());
    let watcher =
        ferromcp_server::skills::watch(server.clone(), &dir, std::time::Duration::from_millis(50))
            .unwrap();
    std::fs::write(&md, "---\nname: notes\ndescription: v2\n---\n").unwrap();
    let description = || async {
        let l = testing::request(&svc, "skills/list", json!({})).await;
        l["result"]["skills"][0]["frontmatter"]["description"].clone()
    };
    // Generous bound against a hang, not a timing assertion.
    for _ in 0..200 {
        if description().await == "v2" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(description().await, "v2");
    assert!(watcher.reloads() >= 1);
    std::fs::write(&md, "---\nname: Not-Valid\ndescription: v3\n---\n").unwrap();
    for _ in 0..200 {
        if watcher.refused() >= 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(watcher.refused() >= 1);
    assert_eq!(description().await, "v2");
    let _ = std::fs::remove_dir_all(&dir);
}
