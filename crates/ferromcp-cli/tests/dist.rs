//! Distribution on the real binary: `mcp registry init` → `mcp registry
//! validate` → `mcp pack` → `mcp pack --check`, on the everything-server
//! (`mcp serve --stdio`) in both eras, plus what each check refuses.
//!
//! The manifest `mcp pack` writes is validated against the MCPB manifest
//! schema of the npm package @anthropic-ai/mcpb, fetched at test time by
//! scripts/mcpb-schema.sh (skipped loudly without it; a failure in CI).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{ERAS, MCP};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;

const NAME: &str = "io.github.ferromcp/everything-mcp";
const MCPB_URL: &str =
    "https://github.com/ferromcp/everything-mcp/releases/download/v0.1.0/everything-mcp-0.1.0.mcpb";
const BUNDLE: &str = "everything-mcp-0.1.0.mcpb";

/// A scratch crate: Cargo.toml, a README with the registry marker, and a
/// launcher script that starts the everything-server (`mcp serve --stdio`).
fn scratch_crate(tag: &str, readme: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mcp-dist-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("Cargo.toml"),
        "[package]\nname = \"everything-mcp\"\nversion = \"0.1.0\"\n\
         description = \"The ferromcp everything-server, packaged\"\n\
         repository = \"https://github.com/ferromcp/everything-mcp\"\n\
         license = \"MIT OR Apache-2.0\"\nauthors = [\"ferromcp developers\"]\n",
    )
    .unwrap();
    std::fs::write(d.join("README.md"), readme).unwrap();
    let launcher = d.join("everything-mcp");
    std::fs::write(
        &launcher,
        format!("#!/bin/sh\nexec '{MCP}' serve --stdio \"$@\"\n"),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    d
}

fn marker_readme() -> String {
    format!("# everything-mcp\n\n- MCP Registry name: `mcp-name: {NAME}`\n")
}

fn run_in(dir: &Path, args: &[&str]) -> common::Run {
    common::mcp()
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
        .into()
}

fn json_file(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The MCPB manifest schema (v0.3) fetched by scripts/mcpb-schema.sh, or
/// `None` after a loud message (a panic in CI).
fn mcpb_schema() -> Option<Value> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::var_os("MCP_MCPB_SCHEMA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/mcpb-schema"));
    let path = dir.join("package/schemas/mcpb-manifest-v0.3.schema.json");
    if let Ok(text) = std::fs::read_to_string(&path) {
        return Some(serde_json::from_str(&text).unwrap());
    }
    let msg = format!(
        "the MCPB manifest schema is not in {}: run `bash scripts/mcpb-schema.sh`",
        dir.display()
    );
    common::peer_missing(&msg, "CI must validate the manifests");
    None
}

#[test]
fn init_validate_pack_check_round_trip_in_both_eras() {
    for era in ERAS {
        let d = scratch_crate(era, &marker_readme());
        let launcher = d.join("everything-mcp");
        let launcher = launcher.to_str().unwrap();

        // init: from the server's own answer and Cargo.toml.
        let r = run_in(&d, &["registry", "init", "--era", era, "--", launcher]);
        assert_eq!(r.code, 0, "{era}: {r:?}");
        let sj = json_file(&d.join("server.json"));
        assert_eq!(sj["name"], NAME);
        assert_eq!(sj["version"], "0.1.0");
        assert!(
            sj["$schema"]
                .as_str()
                .unwrap()
                .ends_with("/server.schema.json")
        );
        assert_eq!(sj["packages"][0]["registryType"], "cargo");
        assert_eq!(sj["packages"][0]["identifier"], "everything-mcp");
        assert_eq!(sj["packages"][0]["transport"]["type"], "stdio");
        assert_eq!(sj["repository"]["source"], "github");

        let r = run_in(&d, &["registry", "validate"]);
        assert_eq!(r.code, 0, "{era}: {r:?}");
        // The running binary reports the same version.
        let r = run_in(&d, &["registry", "validate", "--era", era, "--", launcher]);
        assert_eq!(r.code, 0, "{era}: {r:?}");
        // A server.json claiming another version than the binary's is refused.
        let mut other = sj.clone();
        other["version"] = Value::from("0.1.1");
        other["packages"][0]["version"] = Value::from("0.1.1");
        std::fs::write(
            d.join("other.json"),
            serde_json::to_string_pretty(&other).unwrap(),
        )
        .unwrap();
        let r = run_in(
            &d,
            &[
                "registry",
                "validate",
                "other.json",
                "--era",
                era,
                "--",
                launcher,
            ],
        );
        assert_ne!(r.code, 0, "{era}: {r:?}");
        assert!(r.stderr.contains("running server's 0.1.0"), "{era}: {r:?}");

        // pack: the launcher as the bundle's binary; tools from the server.
        let r = run_in(
            &d,
            &[
                "pack",
                "--era",
                era,
                "--out",
                BUNDLE,
                "--",
                launcher,
                "--quiet-flag-for-args",
            ],
        );
        // The everything-server rejects an unknown flag: pack fails cleanly.
        assert_ne!(r.code, 0, "{era}: {r:?}");
        assert!(!d.join(BUNDLE).exists());
        let r = run_in(&d, &["pack", "--era", era, "--out", BUNDLE, "--", launcher]);
        assert_eq!(r.code, 0, "{era}: {r:?}");
        assert!(r.stderr.contains("sha256"), "{}", r.stderr);

        let r = run_in(&d, &["pack", "--check", BUNDLE, "--json"]);
        assert_eq!(r.code, 0, "{era}: {r:?}");
        let checked: Value = serde_json::from_str(&r.stdout).unwrap();
        let manifest = &checked["manifest"];
        assert_eq!(manifest["server"]["type"], "binary");
        assert_eq!(manifest["server"]["entry_point"], "server/everything-mcp");
        assert_eq!(manifest["version"], "0.1.0");
        assert_eq!(manifest["author"]["name"], "ferromcp developers");
        // The tools are exactly the ones the server lists.
        let tools = run_in(&d, &["tools", "--json", "--era", era, "--", launcher]);
        assert_eq!(tools.code, 0, "{tools:?}");
        let listed: Value = serde_json::from_str(&tools.stdout).unwrap();
        let listed = listed
            .as_array()
            .or_else(|| listed["tools"].as_array())
            .cloned()
            .unwrap();
        let names = |v: &[Value]| -> Vec<String> {
            let mut n: Vec<String> = v
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect();
            n.sort();
            n
        };
        assert!(!listed.is_empty());
        assert_eq!(names(manifest["tools"].as_array().unwrap()), names(&listed));
        if let Some(schema) = mcpb_schema() {
            let v = jsonschema::validator_for(&schema).unwrap();
            let errors: Vec<String> = v.iter_errors(manifest).map(|e| e.to_string()).collect();
            assert!(
                errors.is_empty(),
                "{era}: manifest breaks the MCPB schema: {errors:?}"
            );
        }

        // server.json listing the bundle: the hash is checked against the
        // file beside it.
        let r = run_in(
            &d,
            &[
                "registry",
                "init",
                "--force",
                "--era",
                era,
                "--mcpb-url",
                MCPB_URL,
                "--mcpb-file",
                BUNDLE,
                "--",
                launcher,
            ],
        );
        assert_eq!(r.code, 0, "{era}: {r:?}");
        let sj = json_file(&d.join("server.json"));
        assert_eq!(sj["packages"][1]["registryType"], "mcpb");
        let r = run_in(&d, &["registry", "validate"]);
        assert_eq!(r.code, 0, "{era}: {r:?}");
        let mut bytes = std::fs::read(d.join(BUNDLE)).unwrap();
        bytes.push(0);
        std::fs::write(d.join(BUNDLE), &bytes).unwrap();
        let r = run_in(&d, &["registry", "validate"]);
        assert_eq!(r.code, 2, "{era}: {r:?}");
        assert!(
            r.stderr
                .contains("/packages/1/fileSha256: fileSha256 does not match"),
            "{}",
            r.stderr
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}

#[test]
fn validate_points_at_the_line_of_each_problem() {
    // The marker only inside an HTML comment: crates.io would strip it.
    let d = scratch_crate("marker", &format!("# x\n<!-- mcp-name: {NAME} -->\n"));
    let text = format!(
        "{{\n  \"$schema\": \"https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json\",\n  \"name\": \"{NAME}\",\n  \"description\": \"d\",\n  \"version\": \"0.2.0\",\n  \"packages\": [\n    {{\n      \"registryType\": \"cargo\",\n      \"identifier\": \"everything-mcp\",\n      \"version\": \"0.1.0\",\n      \"transport\": {{\"type\": \"stdio\"}},\n      \"environmentVariables\": [{{\"name\": \"API_TOKEN\", \"default\": \"hunter2\"}}]\n    }}\n  ]\n}}\n"
    );
    std::fs::write(d.join("server.json"), &text).unwrap();
    let r = run_in(&d, &["registry", "validate"]);
    assert_eq!(r.code, 2, "{r:?}");
    for want in [
        "server.json:5:14: /version: version 0.2.0 differs from Cargo.toml's 0.1.0",
        "server.json:9:21: /packages/0/identifier: ",
        "README.md must show `mcp-name:",
        "server.json:12:65: /packages/0/environmentVariables/0/default: API_TOKEN: a secret",
    ] {
        assert!(
            r.stderr.contains(want),
            "missing {want:?} in:\n{}",
            r.stderr
        );
    }
    let r = run_in(&d, &["registry", "validate", "--json"]);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["valid"], false);
    assert_eq!(v["problems"].as_array().unwrap().len(), 3, "{v}");

    // Not JSON at all: the parser's position.
    std::fs::write(d.join("server.json"), "{\n  \"name\": 1,\n  oops\n}").unwrap();
    let r = run_in(&d, &["registry", "validate"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("server.json:3:3: (top level): not valid JSON"),
        "{}",
        r.stderr
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn pack_check_refuses_corrupt_and_non_bundles() {
    let d = scratch_crate("corrupt", &marker_readme());
    let launcher = d.join("everything-mcp");
    let r = run_in(
        &d,
        &["pack", "--out", "b.mcpb", "--", launcher.to_str().unwrap()],
    );
    assert_eq!(r.code, 0, "{r:?}");
    let mut bytes = std::fs::read(d.join("b.mcpb")).unwrap();
    let at = bytes
        .windows(b"everything".len())
        .position(|w| w == b"everything")
        .unwrap();
    bytes[at] = b'E';
    std::fs::write(d.join("bad.mcpb"), &bytes).unwrap();
    let r = run_in(&d, &["pack", "--check", "bad.mcpb"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("CRC mismatch"), "{}", r.stderr);
    std::fs::write(d.join("text.mcpb"), "not a bundle").unwrap();
    let r = run_in(&d, &["pack", "--check", "text.mcpb"]);
    assert_eq!(r.code, 2, "{r:?}");
    // The size limit is explicit.
    let r = run_in(&d, &["pack", "--check", "b.mcpb", "--max-bytes", "10"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("--max-bytes"), "{}", r.stderr);
    let _ = std::fs::remove_dir_all(&d);
}

/// A one-shot mock of the registry's `POST /v0/publish`: answers the first
/// request with `status` and `body`, and hands back what it received.
fn mock_registry(status: &str, body: &str) -> (String, std::thread::JoinHandle<(String, Vec<u8>)>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let status = status.to_owned();
    let body = body.to_owned();
    let handle = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut head = String::new();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            if line == "\r\n" || line.is_empty() {
                break;
            }
            head.push_str(&line);
        }
        let mut received = vec![0u8; length];
        reader.read_exact(&mut received).unwrap();
        let mut stream = stream;
        write!(
            stream,
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        (head, received)
    });
    (url, handle)
}

fn publish(dir: &Path, registry: &str, token: Option<&str>) -> common::Run {
    let mut c = common::mcp();
    c.args(["registry", "publish", "--registry", registry])
        .current_dir(dir)
        .stdin(Stdio::null())
        .env_remove("MCP_REGISTRY_TOKEN");
    if let Some(t) = token {
        c.env("MCP_REGISTRY_TOKEN", t);
    }
    c.output().unwrap().into()
}

#[test]
fn publish_posts_to_a_mock_registry() {
    let d = scratch_crate("publish", &marker_readme());
    let launcher = d.join("everything-mcp");
    let r = run_in(&d, &["registry", "init", "--", launcher.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r:?}");
    let file = std::fs::read(d.join("server.json")).unwrap();

    // Accepted: the file is sent as is, with the token as a bearer.
    let answer = format!(
        "{{\"server\": {}, \"_meta\": {{}}}}",
        String::from_utf8_lossy(&file)
    );
    let (url, mock) = mock_registry("200 OK", &answer);
    let r = publish(&d, &url, Some("reg-token-123"));
    let (head, received) = mock.join().unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    assert!(head.starts_with("POST /v0/publish HTTP/1.1\r\n"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("authorization: bearer reg-token-123\r\n"),
        "{head}"
    );
    assert_eq!(received, file);
    assert!(
        r.stdout.contains(&format!("published {NAME} 0.1.0")),
        "{}",
        r.stdout
    );

    // Refused: the registry's reason, exit 6; the token is never printed.
    let (url, mock) = mock_registry(
        "403 Forbidden",
        r#"{"title":"Forbidden","status":403,"detail":"You do not have permission to publish this server"}"#,
    );
    let r = publish(&d, &url, Some("reg-token-123"));
    mock.join().unwrap();
    assert_eq!(r.code, 6, "{r:?}");
    assert!(r.stderr.contains("HTTP 403"), "{}", r.stderr);
    assert!(r.stderr.contains("do not have permission"), "{}", r.stderr);
    assert!(!r.stderr.contains("reg-token-123") && !r.stdout.contains("reg-token-123"));

    // No token, or a file that fails validation: nothing is sent (the
    // registry URL is a closed port, so a connection would be exit 4).
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let r = publish(&d, &closed, None);
    assert_eq!(r.code, 6, "{r:?}");
    assert!(r.stderr.contains("MCP_REGISTRY_TOKEN"), "{}", r.stderr);
    std::fs::write(d.join("README.md"), "no marker\n").unwrap();
    let r = publish(&d, &closed, Some("t"));
    assert_eq!(r.code, 2, "{r:?}");
    let _ = std::fs::remove_dir_all(&d);
}

// The docs assistant (`mcp serve docs DIR`): the folder becomes a directory
// the user picks at install time.
#[test]
fn the_docs_assistant_round_trip_with_a_user_directory() {
    let d = scratch_crate("docs", &marker_readme());
    let docs = d.join("my-docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("guide.md"), "# Guide\n\nHow to widget.\n").unwrap();
    let launcher = d.join("docs-mcp");
    std::fs::write(
        &launcher,
        format!("#!/bin/sh\nexec '{MCP}' serve docs \"$@\"\n"),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (launcher, docs) = (launcher.to_str().unwrap(), docs.to_str().unwrap());
    let r = run_in(&d, &["registry", "init", "--", launcher, docs]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(run_in(&d, &["registry", "validate"]).code, 0);
    let r = run_in(
        &d,
        &[
            "pack",
            "--out",
            "docs.mcpb",
            "--user-dir",
            &format!("docs_dir={docs}"),
            "--",
            launcher,
            docs,
        ],
    );
    assert_eq!(r.code, 0, "{r:?}");
    let r = run_in(&d, &["pack", "--check", "docs.mcpb", "--json"]);
    assert_eq!(r.code, 0, "{r:?}");
    let m = &serde_json::from_str::<Value>(&r.stdout).unwrap()["manifest"];
    assert_eq!(
        m["server"]["mcp_config"]["args"],
        serde_json::json!(["${user_config.docs_dir}"])
    );
    assert_eq!(m["user_config"]["docs_dir"]["type"], "directory");
    // Tools and prompts as the server lists them.
    let listed = |what: &str| -> Vec<String> {
        let r = run_in(&d, &[what, "--json", "--", launcher, docs]);
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        let items = v
            .as_array()
            .or_else(|| v[what].as_array())
            .cloned()
            .unwrap();
        let mut n: Vec<String> = items
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        n.sort();
        n
    };
    let names = |v: &Value| -> Vec<String> {
        let mut n: Vec<String> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        n.sort();
        n
    };
    assert_eq!(names(&m["tools"]), listed("tools"));
    assert_eq!(names(&m["prompts"]), listed("prompts"));
    if let Some(schema) = mcpb_schema() {
        let v = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = v.iter_errors(m).map(|e| e.to_string()).collect();
        assert!(
            errors.is_empty(),
            "manifest breaks the MCPB schema: {errors:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}
