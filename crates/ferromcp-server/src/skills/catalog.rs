//! The skills a server serves, as one immutable snapshot: the listing
//! entries with their digests, every file as a resource, and the
//! directory tree for `resources/directory/read`.

use super::{Skill, SkillsLimits, frontmatter, mime_of, safe_segment};
use crate::resource::ResourceDef;
use ferromcp_protocol::types::{
    DIRECTORY_MIME_TYPE, JsonObject, Resource, ResourceContents, SKILL_FILE, SKILL_MIME_TYPE,
    SKILL_SCHEME, SKILLS_META_PREFIX, SkillEntry, SkillFile, SkillResources, format_digest,
};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// One served file.
#[derive(Debug, Clone)]
pub(crate) struct FileData {
    pub(crate) resource: Resource,
    pub(crate) bytes: Arc<[u8]>,
    pub(crate) digest: String,
}

/// A snapshot of the served skills.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    /// Sorted by URI.
    pub(crate) entries: Vec<SkillEntry>,
    by_uri: HashMap<String, usize>,
    pub(crate) files: BTreeMap<String, FileData>,
    /// Directory URI → its direct children, sorted by URI.
    pub(crate) dirs: BTreeMap<String, Vec<Resource>>,
}

impl Catalog {
    /// Validates and indexes `skills`. The error names the skill's origin
    /// (its `SKILL.md` file or the code that defined it) and the rule.
    pub(crate) fn build(skills: Vec<Skill>, limits: &SkillsLimits) -> Result<Self, String> {
        if skills.len() > limits.max_skills {
            return Err(format!(
                "{} skills, more than the limit of {} (max_skills)",
                skills.len(),
                limits.max_skills
            ));
        }
        let mut files: BTreeMap<String, FileData> = BTreeMap::new();
        let mut roots: Vec<(String, JsonObject)> = Vec::with_capacity(skills.len());
        let mut total: u64 = 0;
        // SKILL.md files first, so a nested skill's SKILL.md keeps its
        // skill metadata when an enclosing skill also lists it.
        let mut supporting: Vec<(String, String, Arc<[u8]>, String)> = Vec::new();
        for skill in skills {
            let origin = skill.origin.clone();
            let path = skill.skill_path();
            if let Some(bad) = path.split('/').find(|s| !safe_segment(s)) {
                return Err(format!(
                    "{origin}: the skill path {path:?} has a segment {bad:?} that is not a plain name \
                     (ASCII letters, digits, '.', '_', '-'; no leading dot)"
                ));
            }
            let md = skill.skill_md_bytes();
            let text = std::str::from_utf8(&md)
                .map_err(|_| format!("{origin}: {SKILL_FILE} is not UTF-8"))?;
            let fm = frontmatter::parse(text, limits.max_frontmatter_bytes)
                .map_err(|e| format!("{origin}: {e}"))?
                .frontmatter;
            frontmatter::validate(&fm, &skill.dir).map_err(|e| format!("{origin}: {e}"))?;
            let root = format!("{SKILL_SCHEME}{path}");
            if roots.iter().any(|(r, _)| *r == root) {
                return Err(format!(
                    "{origin}: another skill is already served at {root}"
                ));
            }
            let uri = format!("{root}/{SKILL_FILE}");
            let mut res = Resource::new(uri.clone(), skill.dir.clone());
            res.description = fm
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned);
            res.mime_type = Some(SKILL_MIME_TYPE.to_owned());
            let extra: JsonObject = fm
                .iter()
                .filter(|(k, _)| *k != "name" && *k != "description")
                .map(|(k, v)| (format!("{SKILLS_META_PREFIX}{k}"), v.clone()))
                // A field whose name cannot be a `_meta` key stays in the
                // listing's frontmatter only.
                .filter(|(k, _)| {
                    ferromcp_protocol::meta::validate_key_syntax(
                        k,
                        ferromcp_protocol::ProtocolVersion::V2026_07_28,
                    )
                    .is_ok()
                })
                .collect();
            if !extra.is_empty() {
                res.meta = Some(extra);
            }
            insert(&mut files, &origin, uri, res, md, &mut total, limits)?;
            for (rel, bytes) in skill.files {
                if rel == SKILL_FILE {
                    return Err(format!("{origin}: {SKILL_FILE} is given twice"));
                }
                if let Some(bad) = rel.split('/').find(|s| !safe_segment(s)) {
                    return Err(format!(
                        "{origin}: file {rel:?} has a segment {bad:?} that is not a plain name \
                         (ASCII letters, digits, '.', '_', '-'; no leading dot)"
                    ));
                }
                supporting.push((origin.clone(), format!("{root}/{rel}"), bytes, rel));
            }
            roots.push((root, fm));
        }
        for (origin, uri, bytes, rel) in supporting {
            let mut res = Resource::new(uri.clone(), rel.clone());
            res.mime_type = Some(mime_of(&rel).to_owned());
            insert(&mut files, &origin, uri, res, bytes, &mut total, limits)?;
        }
        roots.sort_by(|a, b| a.0.cmp(&b.0));
        let mut entries = Vec::with_capacity(roots.len());
        for (root, fm) in roots {
            let prefix = format!("{root}/");
            // Complete: every file under the root, nested skills' included
            // (SEP-2640 "Resources").
            let listed: Vec<SkillFile> = files
                .range(prefix.clone()..)
                .take_while(|(u, _)| u.starts_with(&prefix))
                .map(|(u, f)| SkillFile {
                    uri: u.clone(),
                    digest: f.digest.clone(),
                    size: f.bytes.len() as u64,
                })
                .collect();
            let bytes: u64 = listed.iter().map(|f| f.size).sum();
            if listed.len() > limits.max_files_per_skill {
                return Err(format!(
                    "{root}/{SKILL_FILE}: {} files, more than the limit of {} per skill (max_files_per_skill)",
                    listed.len(),
                    limits.max_files_per_skill
                ));
            }
            if bytes > limits.max_bytes_per_skill {
                return Err(format!(
                    "{root}/{SKILL_FILE}: {bytes} bytes, more than the limit of {} per skill (max_bytes_per_skill)",
                    limits.max_bytes_per_skill
                ));
            }
            entries.push(SkillEntry {
                uri: format!("{root}/{SKILL_FILE}"),
                frontmatter: fm,
                resources: SkillResources::Files(listed),
            });
        }
        let by_uri = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.uri.clone(), i))
            .collect();
        let dirs = directory_tree(&files);
        Ok(Self {
            entries,
            by_uri,
            files,
            dirs,
        })
    }

    /// The entry of the skill whose `SKILL.md` is at `uri`.
    pub(crate) fn get(&self, uri: &str) -> Option<&SkillEntry> {
        self.by_uri.get(uri).and_then(|i| self.entries.get(*i))
    }

    /// One resource definition per file, each serving its bytes.
    pub(crate) fn resource_defs(&self) -> Vec<ResourceDef> {
        self.files.values().map(resource_def).collect()
    }
}

fn insert(
    files: &mut BTreeMap<String, FileData>,
    origin: &str,
    uri: String,
    mut resource: Resource,
    bytes: Arc<[u8]>,
    total: &mut u64,
    limits: &SkillsLimits,
) -> Result<(), String> {
    if let Some(f) = files.get(&uri) {
        if *f.bytes != *bytes {
            return Err(format!(
                "{origin}: {uri} is served by two skills with different content"
            ));
        }
        return Ok(());
    }
    *total = total.saturating_add(bytes.len() as u64);
    if *total > limits.max_total_bytes {
        return Err(format!(
            "{origin}: the skills hold more than {} bytes in all (max_total_bytes)",
            limits.max_total_bytes
        ));
    }
    resource.size = Some(bytes.len() as u64);
    let digest = format_digest(&Sha256::digest(&bytes).into());
    files.insert(
        uri,
        FileData {
            resource,
            bytes,
            digest,
        },
    );
    Ok(())
}

/// Every directory level of every file's URI, with its direct children.
fn directory_tree(files: &BTreeMap<String, FileData>) -> BTreeMap<String, Vec<Resource>> {
    let mut tree: BTreeMap<String, BTreeMap<String, Resource>> = BTreeMap::new();
    for (uri, f) in files {
        let Some(path) = uri.strip_prefix(SKILL_SCHEME) else {
            continue;
        };
        let segs: Vec<&str> = path.split('/').collect();
        for k in 1..segs.len() {
            let dir = format!("{SKILL_SCHEME}{}", segs[..k].join("/"));
            let child = format!("{SKILL_SCHEME}{}", segs[..=k].join("/"));
            let entry = tree.entry(dir).or_default();
            if k + 1 == segs.len() {
                entry.insert(child, f.resource.clone());
            } else {
                entry.entry(child.clone()).or_insert_with(|| {
                    let mut r = Resource::new(child, segs[k]);
                    r.mime_type = Some(DIRECTORY_MIME_TYPE.to_owned());
                    r
                });
            }
        }
    }
    tree.into_iter()
        .map(|(d, c)| (d, c.into_values().collect()))
        .collect()
}

/// The resource definition serving `f`: text when the bytes are UTF-8,
/// else base64 `blob`.
pub(crate) fn resource_def(f: &FileData) -> ResourceDef {
    let bytes = f.bytes.clone();
    let mime = f.resource.mime_type.clone();
    ResourceDef::new(f.resource.clone(), move |req, _cx| {
        let bytes = bytes.clone();
        let mime = mime.clone();
        async move {
            match std::str::from_utf8(&bytes) {
                Ok(t) => ResourceContents::text(req.uri, mime, t),
                Err(_) => {
                    ResourceContents::blob(req.uri, mime, ferromcp_protocol::base64::encode(&bytes))
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferromcp_protocol::types::is_digest;

    fn build(skills: Vec<Skill>) -> Result<Catalog, String> {
        Catalog::build(skills, &SkillsLimits::default())
    }

    #[test]
    fn entries_digests_resources_and_directories() {
        let c = build(vec![
            Skill::new("pdf-processing", "PDFs", "# PDF\n")
                .field("license", "Apache-2.0")
                .file("templates/invoice.md", "inv")
                .file("templates/regional/eu.md", "eu")
                .file("scripts/run.py", "print(1)"),
            Skill::new("refunds", "Refunds", "").prefix("acme/billing"),
        ])
        .expect("valid");
        let uris: Vec<&str> = c.entries.iter().map(|e| e.uri.as_str()).collect();
        assert_eq!(
            uris,
            [
                "skill://acme/billing/refunds/SKILL.md",
                "skill://pdf-processing/SKILL.md"
            ]
        );
        let pdf = c.get("skill://pdf-processing/SKILL.md").expect("entry");
        assert_eq!(pdf.frontmatter["license"], "Apache-2.0");
        let SkillResources::Files(f) = &pdf.resources else {
            panic!("files")
        };
        assert_eq!(f.len(), 4);
        assert!(f.iter().all(|x| is_digest(&x.digest)));
        let inv = f
            .iter()
            .find(|x| x.uri.ends_with("invoice.md"))
            .expect("listed");
        assert_eq!(inv.size, 3);
        assert_eq!(inv.digest, format_digest(&Sha256::digest(b"inv").into()));
        let md = &c.files["skill://pdf-processing/SKILL.md"].resource;
        assert_eq!(md.mime_type.as_deref(), Some("text/markdown"));
        assert_eq!(md.name, "pdf-processing");
        assert_eq!(md.description.as_deref(), Some("PDFs"));
        assert_eq!(
            md.meta
                .as_ref()
                .map(|m| m["io.modelcontextprotocol.skills/license"].clone()),
            Some(Value::from("Apache-2.0"))
        );
        let kids: Vec<(&str, Option<&str>)> = c.dirs["skill://pdf-processing/templates"]
            .iter()
            .map(|r| (r.uri.as_str(), r.mime_type.as_deref()))
            .collect();
        assert_eq!(
            kids,
            [
                (
                    "skill://pdf-processing/templates/invoice.md",
                    Some("text/markdown")
                ),
                (
                    "skill://pdf-processing/templates/regional",
                    Some("inode/directory")
                ),
            ]
        );
        assert!(c.dirs.contains_key("skill://acme"));
        assert!(c.dirs.contains_key("skill://acme/billing/refunds"));
        assert!(!c.dirs.contains_key("skill://pdf-processing/scripts/run.py"));
    }

    #[test]
    fn a_nested_skill_is_listed_in_the_enclosing_one() {
        let c = build(vec![
            Skill::new("outer", "o", "").file("a.md", "a"),
            Skill::new("inner", "i", "").prefix("outer/sub"),
        ])
        .expect("valid");
        let outer = c.get("skill://outer/SKILL.md").expect("outer");
        let SkillResources::Files(f) = &outer.resources else {
            panic!("files")
        };
        assert!(
            f.iter()
                .any(|x| x.uri == "skill://outer/sub/inner/SKILL.md")
        );
        assert_eq!(f.len(), 3);
    }

    #[test]
    fn bad_skills_are_refused_naming_their_origin() {
        let cases = [
            (Skill::new("Bad", "d", ""), "lowercase"),
            (Skill::new("ok", "", ""), "empty"),
            (Skill::new("ok", "d", "").file("../x", "x"), "plain name"),
            (Skill::new("ok", "d", "").file(".hidden", "x"), "plain name"),
            (Skill::new("ok", "d", "").prefix("a/../b"), "plain name"),
            (
                Skill::from_skill_md("dir/other", "---\nname: ok\ndescription: d\n---\n"),
                "differs",
            ),
            (Skill::from_skill_md("x", "no front matter"), "front matter"),
        ];
        for (skill, word) in cases {
            let e = build(vec![skill]).expect_err(word);
            assert!(e.contains(word), "{e}");
            assert!(e.contains("skill"), "names its origin: {e}");
        }
        let two = build(vec![Skill::new("a", "d", ""), Skill::new("a", "d", "")]);
        assert!(two.is_err_and(|e| e.contains("already served")));
    }

    #[test]
    fn limits_are_enforced() {
        let limits = SkillsLimits {
            max_files_per_skill: 2,
            ..SkillsLimits::default()
        };
        let three = Skill::new("a", "d", "").file("x", "1").file("y", "2");
        assert!(
            Catalog::build(vec![three], &limits).is_err_and(|e| e.contains("max_files_per_skill"))
        );
        let limits = SkillsLimits {
            max_bytes_per_skill: 100,
            ..SkillsLimits::default()
        };
        let big = Skill::new("a", "d", "").file("x", vec![b'x'; 200]);
        assert!(
            Catalog::build(vec![big], &limits).is_err_and(|e| e.contains("max_bytes_per_skill"))
        );
        let limits = SkillsLimits {
            max_skills: 1,
            ..SkillsLimits::default()
        };
        let two = vec![Skill::new("a", "d", ""), Skill::new("b", "d", "")];
        assert!(Catalog::build(two, &limits).is_err_and(|e| e.contains("max_skills")));
    }
}
