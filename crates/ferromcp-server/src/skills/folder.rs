//! Reading a folder of skills: every directory holding a `SKILL.md` is a
//! skill, served at its path under the folder; its files are read with the
//! no-follow opener ([`crate::safe_fs`]) and bounded by [`SkillsLimits`].

use super::{Skill, SkillsLimits, safe_segment};
use crate::error::Error;
use crate::safe_fs::{Kind, list_dir, open_regular, read_bounded};
use ferromcp_protocol::types::SKILL_FILE;
use std::collections::BTreeSet;
use std::path::Path;

/// Reads the skills in `dir`: each directory below it that holds a
/// `SKILL.md` is a skill whose path is its path under `dir` (so
/// `dir/acme/billing/refunds/SKILL.md` is `skill://acme/billing/refunds/SKILL.md`);
/// when `dir` itself holds a `SKILL.md`, it is one skill named after it.
/// Files outside every skill are not served.
///
/// Symbolic links, hidden entries (a leading `.`), names that are not
/// plain (anything but ASCII letters, digits, `.`, `_` and `-`) and
/// special files are skipped with a warning (`tracing`); nothing is
/// followed out of the folder. A `SKILL.md` that breaks a rule is an error
/// naming its file, and so is a file beyond a limit.
pub fn load_dir(dir: &Path, limits: &SkillsLimits) -> Result<Vec<Skill>, Error> {
    let root = dir
        .canonicalize()
        .map_err(|e| Error::config(format!("skills folder {}: {e}", dir.display())))?;
    let mut files: Vec<String> = Vec::new();
    let mut skill_dirs: BTreeSet<String> = BTreeSet::new();
    let mut scanned = 0usize;
    let mut stack: Vec<(String, usize)> = vec![(String::new(), 0)];
    while let Some((prefix, depth)) = stack.pop() {
        let entries = list_dir(&root, &prefix).map_err(|e| {
            Error::config(format!(
                "skills folder {}: cannot list {:?}: {}",
                root.display(),
                prefix,
                e.reason()
            ))
        })?;
        for (name, kind) in entries {
            scanned += 1;
            if scanned > limits.max_scanned_entries {
                return Err(Error::config(format!(
                    "skills folder {}: more than {} entries (max_scanned_entries)",
                    root.display(),
                    limits.max_scanned_entries
                )));
            }
            let rel = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}/{name}")
            };
            if name.starts_with('.') {
                continue;
            }
            if !safe_segment(&name) {
                tracing::warn!(path = %root.join(&rel).display(), "skills: name is not plain, skipped");
                continue;
            }
            match kind {
                Kind::Dir if depth + 1 > limits.max_depth => {
                    tracing::warn!(path = %root.join(&rel).display(), "skills: deeper than max_depth, skipped");
                }
                Kind::Dir => stack.push((rel, depth + 1)),
                Kind::File => {
                    if name == SKILL_FILE {
                        skill_dirs.insert(prefix.clone());
                    }
                    files.push(rel);
                }
                Kind::Link | Kind::Other => {
                    tracing::warn!(path = %root.join(&rel).display(), "skills: symbolic link or special file, skipped");
                }
            }
        }
    }
    let root_name = root
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("")
        .to_owned();
    let root_is_skill = skill_dirs.contains("");
    let mut skills = Vec::with_capacity(skill_dirs.len());
    for d in &skill_dirs {
        let owner_of = |file: &str| -> Option<&String> {
            // The deepest skill directory enclosing `file`.
            skill_dirs
                .iter()
                .filter(|s| s.is_empty() || file.starts_with(&format!("{s}/")))
                .max_by_key(|s| s.len())
        };
        let md_rel = if d.is_empty() {
            SKILL_FILE.to_owned()
        } else {
            format!("{d}/{SKILL_FILE}")
        };
        let md = read(&root, &md_rel, limits)?;
        let skill_path = match (root_is_skill, d.is_empty()) {
            (true, true) => root_name.clone(),
            (true, false) => format!("{root_name}/{d}"),
            _ => d.clone(),
        };
        let mut skill = Skill::from_skill_md(&skill_path, md)
            .with_origin(root.join(&md_rel).display().to_string());
        for f in &files {
            if *f == md_rel || owner_of(f) != Some(d) {
                continue;
            }
            let within = if d.is_empty() {
                f.as_str()
            } else {
                f.get(d.len() + 1..).unwrap_or_default()
            };
            skill = skill.file(within, read(&root, f, limits)?);
        }
        skills.push(skill);
    }
    Ok(skills)
}

/// The bytes of `rel` under `root`, refusing links and special files and
/// anything beyond `max_bytes_per_skill`.
fn read(root: &Path, rel: &str, limits: &SkillsLimits) -> Result<Vec<u8>, Error> {
    let path = root.join(rel);
    let (file, _) = open_regular(root, rel)
        .map_err(|e| Error::config(format!("{}: {}", path.display(), e.reason())))?;
    read_bounded(file, limits.max_bytes_per_skill)
        .map_err(|e| Error::config(format!("{}: {e}", path.display())))?
        .ok_or_else(|| {
            Error::config(format!(
                "{}: larger than {} bytes (max_bytes_per_skill)",
                path.display(),
                limits.max_bytes_per_skill
            ))
        })
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::skills::Catalog;

    fn fixture(tag: &str) -> std::path::PathBuf {
        let base = std::env::temp_dir().join(format!("mcp-skills-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        base
    }

    fn write(p: &Path, text: &str) {
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).unwrap_or_default();
        }
        std::fs::write(p, text).unwrap_or_default();
    }

    #[test]
    fn a_folder_of_skills_with_nesting_links_and_hidden_files() {
        let base = fixture("load");
        let root = base.join("skills");
        write(
            &root.join("git-flow/SKILL.md"),
            "---\nname: git-flow\ndescription: Git\n---\n# Git\n",
        );
        write(&root.join("git-flow/references/a.md"), "A");
        write(&root.join("git-flow/.DS_Store"), "x");
        write(
            &root.join("acme/billing/refunds/SKILL.md"),
            "---\nname: refunds\ndescription: R\n---\n",
        );
        write(
            &root.join("acme/billing/refunds/sub/inner/SKILL.md"),
            "---\nname: inner\ndescription: I\n---\n",
        );
        write(&root.join("acme/billing/refunds/sub/inner/x.md"), "x");
        write(&root.join("acme/README.md"), "not in a skill");
        write(&base.join("outside/secret.md"), "secret");
        let linked = std::os::unix::fs::symlink("../../outside", root.join("git-flow/out")).is_ok()
            && std::os::unix::fs::symlink("../outside/secret.md", root.join("git-flow/s.md"))
                .is_ok();
        assert!(linked, "fixture");
        let skills = load_dir(&root, &SkillsLimits::default()).expect("loads");
        let c = Catalog::build(skills, &SkillsLimits::default()).expect("valid");
        let files: Vec<&str> = c.files.keys().map(String::as_str).collect();
        assert_eq!(
            files,
            [
                "skill://acme/billing/refunds/SKILL.md",
                "skill://acme/billing/refunds/sub/inner/SKILL.md",
                "skill://acme/billing/refunds/sub/inner/x.md",
                "skill://git-flow/SKILL.md",
                "skill://git-flow/references/a.md",
            ]
        );
        assert!(c.files.values().all(|f| &*f.bytes != b"secret"));
        assert_eq!(c.entries.len(), 3);
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn a_bad_skill_md_is_an_error_naming_the_file() {
        let base = fixture("bad");
        write(
            &base.join("ok/SKILL.md"),
            "---\nname: not-ok\ndescription: d\n---\n",
        );
        let skills = load_dir(&base, &SkillsLimits::default()).expect("read");
        let e = Catalog::build(skills, &SkillsLimits::default()).expect_err("name differs");
        assert!(
            e.contains(&base.join("ok/SKILL.md").display().to_string()),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn a_folder_that_is_one_skill_and_an_oversized_file() {
        let base = fixture("one");
        let root = base.join("pdf");
        write(
            &root.join("SKILL.md"),
            "---\nname: pdf\ndescription: d\n---\n",
        );
        write(&root.join("big.bin"), &"x".repeat(300));
        let limits = SkillsLimits {
            max_bytes_per_skill: 100,
            ..SkillsLimits::default()
        };
        let e = load_dir(&root, &limits).expect_err("too big");
        assert!(e.to_string().contains("big.bin"), "{e}");
        let skills = load_dir(&root, &SkillsLimits::default()).expect("loads");
        assert_eq!(
            skills.first().map(Skill::skill_path).as_deref(),
            Some("pdf")
        );
        let _ = std::fs::remove_dir_all(&base);
    }
}
