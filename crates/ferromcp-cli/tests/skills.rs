//! Skills through the real `mcp` binary: `mcp serve skills DIR` over
//! Streamable HTTP and stdio in both eras, read by `mcp skills` and
//! `mcp skill [--save DIR]`; and a hostile server that cannot make
//! `mcp skill --save` write outside DIR.
// SEP-2640 (Skills Extension).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{ERAS, MCP, free_port, mcp, row, run, scratch, wait_listening};
use std::path::Path;
use std::process::{Child, Stdio};

struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}

/// A skills folder: a top-level skill with a subfolder, a prefixed one.
fn folder(tag: &str) -> std::path::PathBuf {
    let dir = scratch(tag);
    write(
        &dir.join("git-flow/SKILL.md"),
        "---\nname: git-flow\ndescription: Follow the team's Git conventions\n---\n# Git flow\nSee references/branches.md.\n",
    );
    write(
        &dir.join("git-flow/references/branches.md"),
        "Branch from main.\n",
    );
    write(
        &dir.join("acme/billing/refunds/SKILL.md"),
        "---\nname: refunds\ndescription: >\n  Process refund\n  requests\nlicense: Apache-2.0\n---\n# Refunds\n",
    );
    dir
}

#[test]
fn mcp_serve_skills_over_http_and_stdio_in_both_eras() {
    let dir = folder("skills-serve");
    let dir_s = dir.to_str().expect("utf-8");
    let addr = format!("127.0.0.1:{}", free_port());
    let _server = Served(
        mcp()
            .args(["serve", "skills", dir_s, "--http", &addr])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mcp serve skills"),
    );
    wait_listening(&addr);
    let url = format!("http://{addr}/mcp");
    let out = scratch("skills-saved");
    for era in ERAS {
        for transport in ["http", "stdio"] {
            let label = format!("{transport}/{era}");
            let with = |cmd: &str, args: &[&str]| {
                let mut all: Vec<&str> = vec![cmd];
                if transport == "http" {
                    all.push(&url);
                }
                all.extend_from_slice(args);
                all.extend_from_slice(&["--era", era]);
                if transport == "stdio" {
                    all.extend_from_slice(&["--", MCP, "serve", "skills", dir_s, "--no-watch"]);
                }
                run(&all)
            };
            let r = with("skills", &[]);
            assert_eq!(r.code, 0, "{label}: {r:?}");
            let git = row(&r.stdout, "git-flow");
            assert_eq!(
                git.get(1).map(String::as_str),
                Some("skill://git-flow/SKILL.md"),
                "{label}: {}",
                r.stdout
            );
            assert_eq!(
                git.get(2).map(String::as_str),
                Some("2"),
                "{label}: {}",
                r.stdout
            );
            let refunds = row(&r.stdout, "refunds");
            assert_eq!(
                refunds.get(1).map(String::as_str),
                Some("skill://acme/billing/refunds/SKILL.md"),
                "{label}: {}",
                r.stdout
            );
            // By name: SKILL.md printed, the other files listed.
            let r = with("skill", &["git-flow"]);
            assert_eq!(r.code, 0, "{label}: {r:?}");
            assert!(r.stdout.contains("# Git flow"), "{label}: {}", r.stdout);
            assert!(
                r.stdout.contains("skill://git-flow/references/branches.md"),
                "{label}: {}",
                r.stdout
            );
            // By URI (skills/get), saved: the same bytes as the folder's.
            let target = out.join(&label);
            let r = with(
                "skill",
                &[
                    "skill://acme/billing/refunds/SKILL.md",
                    "--save",
                    target.to_str().expect("utf-8"),
                ],
            );
            assert_eq!(r.code, 0, "{label}: {r:?}");
            assert_eq!(
                std::fs::read(target.join("refunds/SKILL.md")).ok(),
                std::fs::read(dir.join("acme/billing/refunds/SKILL.md")).ok(),
                "{label}"
            );
            let r = with(
                "skill",
                &["git-flow", "--save", target.to_str().expect("utf-8")],
            );
            assert_eq!(r.code, 0, "{label}: {r:?}");
            assert_eq!(
                std::fs::read(target.join("git-flow/references/branches.md")).ok(),
                Some(b"Branch from main.\n".to_vec()),
                "{label}"
            );
            // Not a skill: the server's -32602, a protocol failure.
            let r = with("skill", &["skill://git-flow/references/branches.md"]);
            assert_ne!(r.code, 0, "{label}: {r:?}");
        }
    }
}

#[test]
fn a_hostile_server_cannot_make_mcp_skill_save_write_outside_dir() {
    let python = "python3";
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile_skills_server.py");
    let base = scratch("skills-hostile");
    let dir = base.join("a/b/save");
    std::fs::create_dir_all(&dir).expect("mkdir");
    for (which, why) in [
        ("climb", "'..'"),
        ("rooted", "empty"),
        ("skill://../up/SKILL.md", "name"),
    ] {
        let r = run(&[
            "skill",
            which,
            "--save",
            dir.to_str().expect("utf-8"),
            "--era",
            "handshake",
            "--",
            python,
            script.to_str().expect("utf-8"),
        ]);
        assert_ne!(r.code, 0, "{which}: {r:?}");
        assert!(r.stderr.contains(why), "{which}: {}", r.stderr);
    }
    // Nothing was written anywhere: not even the valid SKILL.md (every
    // path is checked before the first write).
    let mut found = Vec::new();
    let mut stack = vec![base.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                found.push(e.path());
            }
        }
    }
    assert!(found.is_empty(), "written: {found:?}");
    assert!(
        !Path::new("/tmp/escaped.txt").exists()
            || std::fs::read("/tmp/escaped.txt").ok() != Some(b"pwned\n".to_vec())
    );
}

#[test]
fn mcp_serve_docs_serves_the_skills_in_its_folder() {
    let dir = folder("skills-docs");
    let dir_s = dir.to_str().expect("utf-8");
    for era in ERAS {
        let r = run(&[
            "skills",
            "--era",
            era,
            "--",
            MCP,
            "serve",
            "docs",
            dir_s,
            "--no-watch",
        ]);
        assert_eq!(r.code, 0, "{era}: {r:?}");
        assert_eq!(
            row(&r.stdout, "git-flow").get(1).map(String::as_str),
            Some("skill://git-flow/SKILL.md"),
            "{era}: {}",
            r.stdout
        );
    }
    // A folder whose skill breaks a rule is still served as documentation.
    write(
        &dir.join("bad/SKILL.md"),
        "---\nname: not-bad\ndescription: d\n---\n",
    );
    let r = run(&["resources", "--", MCP, "serve", "docs", dir_s, "--no-watch"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("docs://"), "{}", r.stdout);
    assert!(!r.stdout.contains("skill://"), "{}", r.stdout);
}
