//! `mcp skills` and `mcp skill`: the skills extension
//! (`io.modelcontextprotocol/skills`) from the client side.
// SEP-2640 (Skills Extension).

use crate::exit::{Failure, code};
use crate::output::{one_line, print_json, table};
use ferromcp_client::Client;
use ferromcp_protocol::types::{SKILL_FILE, SkillEntry, SkillResources, skill_name_problem};
use std::path::{Path, PathBuf};

/// `mcp skills`: the table of `skills/list`.
pub async fn list(client: &Client, json: bool) -> Result<u8, Failure> {
    let skills = client.list_skills().await?;
    if json {
        print_json(&serde_json::json!({ "skills": skills }))?;
        return Ok(code::OK);
    }
    let rows: Vec<Vec<String>> = skills
        .iter()
        .map(|s| {
            let (files, bytes) = match &s.resources {
                SkillResources::Files(f) => (
                    f.len().to_string(),
                    f.iter().map(|x| x.size).sum::<u64>().to_string(),
                ),
                SkillResources::Dynamic => ("dynamic".into(), "-".into()),
            };
            vec![
                s.name().unwrap_or("?").to_owned(),
                s.uri.clone(),
                files,
                bytes,
                one_line(s.description().unwrap_or(""), 60),
            ]
        })
        .collect();
    table(&["SKILL", "URI", "FILES", "BYTES", "DESCRIPTION"], &rows);
    Ok(code::OK)
}

/// The entry `which` names: a URI (`skills/get`) or a name from the listing.
async fn find(client: &Client, which: &str) -> Result<SkillEntry, Failure> {
    if which.contains("://") {
        return Ok(client.get_skill(which).await?);
    }
    let all = client.list_skills().await?;
    let hits: Vec<&SkillEntry> = all.iter().filter(|s| s.name() == Some(which)).collect();
    match hits.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(Failure::usage(format!(
            "no listed skill is named {which:?} (give its SKILL.md URI to get an unlisted one)"
        ))),
        many => Err(Failure::usage(format!(
            "{} skills are named {which:?}; give one of their URIs: {}",
            many.len(),
            many.iter()
                .map(|s| s.uri.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// `mcp skill NAME|URI [--save DIR]`: prints the skill's `SKILL.md` and
/// its files, or writes them all under `DIR/<name>/`, each checked
/// against the entry's digest.
pub async fn show(
    client: &Client,
    which: &str,
    save: Option<&Path>,
    json: bool,
) -> Result<u8, Failure> {
    let entry = find(client, which).await?;
    let Some(dir) = save else {
        let md = client.read_skill_file(&entry, &entry.uri).await?;
        if json {
            print_json(&serde_json::json!({
                "skill": entry,
                "SKILL.md": String::from_utf8_lossy(&md),
            }))?;
            return Ok(code::OK);
        }
        print!("{}", String::from_utf8_lossy(&md));
        if let SkillResources::Files(f) = &entry.resources {
            let others: Vec<&str> = f
                .iter()
                .map(|x| x.uri.as_str())
                .filter(|u| *u != entry.uri)
                .collect();
            if !others.is_empty() {
                println!("\n-- files --");
                for u in others {
                    println!("{u}");
                }
            }
        }
        return Ok(code::OK);
    };
    let written = save_skill(client, &entry, dir).await?;
    for p in &written {
        eprintln!("mcp skill: wrote {}", p.display());
    }
    if json {
        print_json(&serde_json::json!({ "skill": entry, "written": written }))?;
    }
    Ok(code::OK)
}

/// Writes every file of `entry` under `dir/<name>/`. The name and every
/// relative path come from the server, so each is checked: the name by
/// the skill naming rules, each path segment plain (no `..`, `.`, empty,
/// absolute, backslash or NUL), and no component of the target may be a
/// symbolic link.
async fn save_skill(
    client: &Client,
    entry: &SkillEntry,
    dir: &Path,
) -> Result<Vec<PathBuf>, Failure> {
    let name = entry.name().unwrap_or("");
    if let Some(p) = skill_name_problem(name) {
        return Err(Failure::protocol(format!(
            "the server's skill name {name:?} {p}: not saved"
        )));
    }
    let Some(root) = entry.root_uri() else {
        return Err(Failure::protocol(format!(
            "{} does not end in /{SKILL_FILE}: not saved",
            entry.uri
        )));
    };
    let SkillResources::Files(files) = &entry.resources else {
        return Err(Failure::usage(
            "this skill's files are \"dynamic\" (not listed): read them with `mcp read`",
        ));
    };
    // Check every path before writing anything.
    let mut plan = Vec::with_capacity(files.len());
    for f in files {
        let rel = f
            .uri
            .strip_prefix(root)
            .and_then(|r| r.strip_prefix('/'))
            .ok_or_else(|| {
                Failure::protocol(format!(
                    "{} is not inside the skill {root}: not saved",
                    f.uri
                ))
            })?;
        safe_relative(rel)
            .map_err(|why| Failure::protocol(format!("{}: {why}: not saved", f.uri)))?;
        plan.push((f.uri.clone(), rel.to_owned()));
    }
    let base = dir.join(name);
    let mut written = Vec::with_capacity(plan.len());
    for (uri, rel) in plan {
        let bytes = client.read_skill_file(entry, &uri).await?;
        let target = base.join(&rel);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| Failure::usage(format!("cannot create {}: {e}", parent.display())))?;
        }
        no_links(dir, &target)?;
        std::fs::write(&target, &bytes)
            .map_err(|e| Failure::usage(format!("cannot write {}: {e}", target.display())))?;
        written.push(target);
    }
    Ok(written)
}

/// Why `rel` (a server-given `/`-separated path) may not be written under
/// a folder, if it may not.
fn safe_relative(rel: &str) -> Result<(), &'static str> {
    if rel.is_empty() {
        return Err("an empty path");
    }
    for seg in rel.split('/') {
        if seg.is_empty() || seg == "." || seg == ".." {
            return Err("a path with an empty, '.' or '..' segment");
        }
        if seg.contains(['\\', '\0', ':']) {
            return Err("a path segment with '\\', ':' or NUL");
        }
    }
    Ok(())
}

/// Refuses a target whose path below `dir` goes through a symbolic link.
fn no_links(dir: &Path, target: &Path) -> Result<(), Failure> {
    let rel = target.strip_prefix(dir).unwrap_or(target);
    let mut p = dir.to_path_buf();
    for c in rel.components() {
        p.push(c);
        if std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(Failure::usage(format!(
                "{} is a symbolic link: not written through",
                p.display()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_given_paths_cannot_climb() {
        for ok in ["SKILL.md", "references/a.md", "a/b/c.txt", "x..y"] {
            assert_eq!(safe_relative(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "../x",
            "a/../../x",
            "/etc/passwd",
            "a//b",
            "./a",
            "a\\..\\b",
            "C:x",
            "a\0b",
        ] {
            assert!(safe_relative(bad).is_err(), "{bad:?}");
        }
    }
}
