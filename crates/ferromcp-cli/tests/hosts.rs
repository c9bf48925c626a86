//! `mcp add`, `mcp remove`, `mcp hosts` on the real binary, with
//! `MCP_HOSTS_HOME` pointing at a scratch directory: golden files per host
//! (other servers and settings present, comments where the host reads
//! JSONC), `--force`, the backup, and files that are not JSON.
//!
//! Regenerate the golden files with `UPDATE_GOLDEN=1` (then review them).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hosts")
}

/// A fresh scratch directory with `home/` and `proj/`.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mcp-hosts-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("home")).unwrap();
    std::fs::create_dir_all(d.join("proj")).unwrap();
    d
}

/// Runs `mcp args…` with the scratch home, in the scratch project.
fn run(dir: &Path, args: &[&str]) -> common::Run {
    common::mcp()
        .args(args)
        .env("MCP_HOSTS_HOME", dir.join("home"))
        .env_remove("HOME")
        .env_remove("APPDATA")
        .env_remove("XDG_CONFIG_HOME")
        .current_dir(dir.join("proj"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
        .into()
}

/// The file's text with this binary's path (the bridge command) replaced by
/// `MCP`, so that golden files do not depend on the build directory.
fn normalized(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .replace(common::MCP, "MCP")
}

fn golden(name: &str, got: &str) {
    let path = fixtures().join(format!("{name}.after.json"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, got).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap();
    assert_eq!(got, want, "golden {name} differs; got:\n{got}");
}

/// One case: the host's file (under `home/` or `proj/`), optionally seeded
/// from `NAME.before.json`, after `mcp add args…`.
fn case(name: &str, rel: &str, seed: bool, args: &[&str]) {
    let dir = scratch(name);
    let path = dir.join(rel);
    let before = fixtures().join(format!("{name}.before.json"));
    if seed {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::copy(&before, &path).unwrap();
    }
    let r = run(&dir, args);
    assert_eq!(r.code, 0, "{r:?}");
    golden(name, &normalized(&path));
    // The host's file still parses, and lists the new server.
    let h = run(&dir, &["hosts", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&h.stdout).unwrap();
    let file = v
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["host"] == args[args.iter().position(|a| *a == "--host").unwrap() + 1])
        .unwrap();
    assert!(file.get("error").is_none(), "{file}");
    assert!(
        file["servers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == args[1]),
        "{file}"
    );
    if seed {
        // The previous file is kept beside it, byte for byte.
        let bak = PathBuf::from(format!("{}.bak", path.display()));
        assert_eq!(
            std::fs::read(&bak).unwrap(),
            std::fs::read(&before).unwrap()
        );
    }
    // Nothing else is left behind (no temp file).
    let siblings = std::fs::read_dir(path.parent().unwrap()).unwrap().count();
    assert_eq!(siblings, if seed { 2 } else { 1 });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn claude_desktop_bridges_a_url() {
    case(
        "claude-desktop",
        "home/.config/Claude/claude_desktop_config.json",
        true,
        &[
            "add",
            "docs",
            "https://example.com/mcp",
            "--host",
            "claude-desktop",
            "--header",
            "Authorization: Bearer ${DOCS_TOKEN}",
        ],
    );
}

#[test]
fn claude_code_user_url_natively() {
    case(
        "claude-code",
        "home/.claude.json",
        true,
        &[
            "add",
            "docs",
            "https://example.com/mcp",
            "--host",
            "claude-code",
            "-H",
            "X-Api-Key: k",
        ],
    );
}

#[test]
fn vscode_jsonc_keeps_comments() {
    case(
        "vscode",
        "home/.config/Code/User/mcp.json",
        true,
        &[
            "add",
            "everything",
            "--host",
            "vscode",
            "--env",
            "LOG=debug",
            "--",
            "everything-server",
            "--stdio",
        ],
    );
}

#[test]
fn cursor_project_file_is_created() {
    case(
        "cursor",
        "proj/.cursor/mcp.json",
        false,
        &[
            "add",
            "everything",
            "--host",
            "cursor",
            "--scope",
            "project",
            "--",
            "everything-server",
            "--stdio",
        ],
    );
}

#[test]
fn windsurf_server_url() {
    case(
        "windsurf",
        "home/.codeium/windsurf/mcp_config.json",
        true,
        &[
            "add",
            "remote",
            "http://127.0.0.1:8080/mcp",
            "--host",
            "windsurf",
        ],
    );
}

#[test]
fn zed_settings_with_comments_get_context_servers() {
    case(
        "zed",
        "home/.config/zed/settings.json",
        true,
        &[
            "add",
            "everything",
            "--host",
            "zed",
            "--",
            "everything-server",
            "--stdio",
        ],
    );
}

#[test]
fn existing_entry_needs_force_then_remove_and_list() {
    let dir = scratch("force");
    let path = dir.join("home/.cursor/mcp.json");
    let add = |extra: &[&str], cmd: &str| {
        let mut a = vec!["add", "s", "--host", "cursor"];
        a.extend_from_slice(extra);
        a.extend_from_slice(&["--", cmd]);
        run(&dir, &a)
    };
    assert_eq!(add(&[], "one").code, 0);
    let first = std::fs::read_to_string(&path).unwrap();
    let r = add(&[], "two");
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("--force"), "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), first);
    assert_eq!(add(&["--force"], "two").code, 0);
    assert!(std::fs::read_to_string(&path).unwrap().contains("\"two\""));
    assert_eq!(add(&[], "other").code, 2);

    let h = run(&dir, &["hosts", "--json"]);
    assert_eq!(h.code, 0, "{h:?}");
    let v: serde_json::Value = serde_json::from_str(&h.stdout).unwrap();
    assert_eq!(v[0]["host"], "cursor");
    assert_eq!(v[0]["servers"][0]["name"], "s");
    assert_eq!(v[0]["servers"][0]["target"], "two");

    let r = run(&dir, &["remove", "s", "--host", "cursor"]);
    assert_eq!(r.code, 0, "{r:?}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(v, serde_json::json!({"mcpServers": {}}));
    let r = run(&dir, &["remove", "s", "--host", "cursor"]);
    assert_eq!(r.code, 2, "{r:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_file_that_is_not_json_is_left_alone() {
    let dir = scratch("bad");
    let path = dir.join("home/.claude.json");
    std::fs::write(&path, "{\"mcpServers\": {\"a\": 1,,}}").unwrap();
    let r = run(&dir, &["add", "s", "--host", "claude-code", "--", "server"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("left unchanged"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "{\"mcpServers\": {\"a\": 1,,}}"
    );
    assert!(!dir.join("home/.claude.json.bak").exists());
    // `mcp hosts` reports it rather than failing.
    let h = run(&dir, &["hosts"]);
    assert_eq!(h.code, 0, "{h:?}");
    assert!(h.stdout.contains("error: line 1"), "{}", h.stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn secrets_warn_and_mismatched_flags_are_usage_errors() {
    let dir = scratch("flags");
    let r = run(
        &dir,
        &["add", "s", "--host", "zed", "--env", "K=v", "--", "server"],
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("plain text"), "{}", r.stderr);
    let r = run(
        &dir,
        &["add", "u", "https://x/mcp", "--host", "zed", "--env", "K=v"],
    );
    assert_eq!(r.code, 2, "{r:?}");
    let r = run(&dir, &["add", "u", "--host", "zed"]);
    assert_eq!(r.code, 2, "{r:?}");
    let r = run(
        &dir,
        &[
            "add", "u", "--host", "windsurf", "--scope", "project", "--", "x",
        ],
    );
    assert_eq!(r.code, 2, "{r:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

// A configuration file kept elsewhere (dotfiles) and linked into place
// stays a link: the file it points to is edited.
#[cfg(unix)]
#[test]
fn a_symlinked_file_stays_a_symlink() {
    let dir = scratch("symlink");
    let real = dir.join("dotfiles/mcp.json");
    std::fs::create_dir_all(real.parent().unwrap()).unwrap();
    std::fs::write(&real, "{\"mcpServers\": {}}\n").unwrap();
    let link = dir.join("home/.cursor/mcp.json");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let r = run(&dir, &["add", "s", "--host", "cursor", "--", "server"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::read_to_string(&real)
            .unwrap()
            .contains("\"server\"")
    );
    let _ = std::fs::remove_dir_all(&dir);
}
