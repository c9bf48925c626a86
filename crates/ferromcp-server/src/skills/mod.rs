//! Skills (extension `io.modelcontextprotocol/skills`): packaged agent
//! instructions, each a `SKILL.md` (YAML front matter, then Markdown) with
//! supporting files, served as `skill://` resources.
//!
//! Register skills defined in code with [`ServerBuilder::skill`](crate::ServerBuilder::skill), or a
//! folder of skill directories with `ServerBuilder::skills_dir` (feature
//! `fs`, which also gives live reload with `skills::watch`). The server
//! then declares the extension (`{"directoryRead": true}`) in both protocol
//! eras, answers `skills/list`, `skills/get` and `resources/directory/read`,
//! and serves every file of every skill through `resources/list` and
//! `resources/read` (`SKILL.md` as `text/markdown`, with the skill's name
//! and description).
//!
//! ```
//! use ferromcp_server::{Server, skills::Skill};
//!
//! let server = Server::builder("skills", "1.0.0")
//!     .skill(
//!         Skill::new("git-workflow", "Follow this team's Git conventions", "# Git\nRebase, then merge.\n")
//!             .file("references/branches.md", "Branch from main.\n"),
//!     )
//!     .skill(Skill::new("refunds", "Process refunds", "# Refunds\n").prefix("acme/billing"))
//!     .build();
//! assert!(server.is_ok());
//! ```
//!
//! Names and front matter follow the Agent Skills rules (a `name` of 1 to
//! 64 lowercase letters, digits and hyphens equal to the skill's directory,
//! a non-empty `description` of at most 1024 characters, …): a skill that
//! breaks one is refused with an error naming its `SKILL.md`. Every size
//! and count is bounded by [`SkillsLimits`].
// SEP-2640 (Skills Extension, draft of 2026-08-21).

mod catalog;
#[cfg(feature = "fs")]
mod folder;
mod frontmatter;
#[cfg(feature = "fs")]
mod watch;
pub(crate) mod wire;

pub(crate) use catalog::Catalog;
#[cfg(feature = "fs")]
pub use folder::load_dir;
#[cfg(feature = "fs")]
pub use watch::{SkillsWatcher, watch};

use ferromcp_protocol::types::{JsonObject, SKILL_FILE};
use serde_json::Value;
use std::sync::Arc;

/// Bounds on what a server loads as skills. The per-skill defaults are the
/// limits every conforming host accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SkillsLimits {
    /// Skills served at most. Default 1000.
    pub max_skills: usize,
    /// Files per skill (`SKILL.md` and nested skills' files included).
    /// Default 512.
    pub max_files_per_skill: usize,
    /// Bytes per skill (the sum of its files' sizes). Default 16 MiB.
    pub max_bytes_per_skill: u64,
    /// Bytes of all skills together (each file counted once). Default
    /// 256 MiB.
    pub max_total_bytes: u64,
    /// Bytes of one `SKILL.md` front matter. Default 64 KiB.
    pub max_frontmatter_bytes: usize,
    /// Directory levels below the folder's root a scan descends. Default 16.
    pub max_depth: usize,
    /// Directory entries a folder scan looks at, in all. Default 100 000.
    pub max_scanned_entries: usize,
}

impl Default for SkillsLimits {
    fn default() -> Self {
        Self {
            max_skills: 1000,
            max_files_per_skill: ferromcp_protocol::types::MAX_RESOURCES_PER_SKILL,
            max_bytes_per_skill: ferromcp_protocol::types::MAX_BYTES_PER_SKILL,
            max_total_bytes: 256 * 1024 * 1024,
            max_frontmatter_bytes: 64 * 1024,
            max_depth: 16,
            max_scanned_entries: 100_000,
        }
    }
}

/// One skill: its `SKILL.md` and supporting files, defined in code
/// ([`Skill::new`], [`Skill::from_skill_md`]) or read from a folder.
#[derive(Debug, Clone)]
pub struct Skill {
    /// The organizational prefix (`acme/billing`), empty for none.
    prefix: String,
    /// The skill's directory name (the front matter's `name` must equal it).
    dir: String,
    /// The `SKILL.md` bytes.
    skill_md: Arc<[u8]>,
    /// Front-matter fields to render (only for [`Skill::new`]).
    rendered: Option<(JsonObject, String)>,
    /// Supporting files: `/`-separated path under the skill, bytes.
    files: Vec<(String, Arc<[u8]>)>,
    /// Where the skill came from, for error messages.
    origin: String,
}

impl Skill {
    /// A skill named `name` with `description` and the Markdown `body`
    /// after the front matter. More front-matter fields with
    /// [`Self::field`], files with [`Self::file`].
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        body: impl Into<String>,
    ) -> Self {
        let name = name.into();
        let mut fm = JsonObject::new();
        fm.insert("name".into(), Value::String(name.clone()));
        fm.insert("description".into(), Value::String(description.into()));
        Self {
            prefix: String::new(),
            origin: format!("skill {name:?}"),
            dir: name,
            skill_md: Arc::from(&b""[..]),
            rendered: Some((fm, body.into())),
            files: Vec::new(),
        }
    }

    /// A skill whose `SKILL.md` is `text` (front matter included), served
    /// at `skill://<skill_path>/SKILL.md`; the last segment of
    /// `skill_path` must equal the front matter's `name`.
    pub fn from_skill_md(skill_path: &str, text: impl Into<Vec<u8>>) -> Self {
        let (prefix, dir) = match skill_path.trim_matches('/').rsplit_once('/') {
            Some((p, d)) => (p.to_owned(), d.to_owned()),
            None => (String::new(), skill_path.trim_matches('/').to_owned()),
        };
        Self {
            origin: format!("skill://{}/{SKILL_FILE}", skill_path.trim_matches('/')),
            prefix,
            dir,
            skill_md: Arc::from(text.into()),
            rendered: None,
            files: Vec::new(),
        }
    }

    /// Serves the skill under the organizational prefix `prefix`
    /// (`/`-separated): `skill://<prefix>/<name>/SKILL.md`.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into().trim_matches('/').to_owned();
        self
    }

    /// Adds a front-matter field (`license`, `compatibility`, `metadata`,
    /// `allowed-tools`, …) to a skill made with [`Self::new`]; ignored
    /// for one made from its `SKILL.md` text.
    pub fn field(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        if let Some((fm, _)) = &mut self.rendered {
            fm.insert(key.into(), value.into());
        }
        self
    }

    /// Adds a supporting file at `path` (`/`-separated, relative to the
    /// skill's directory, e.g. `references/GUIDE.md`).
    pub fn file(mut self, path: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        self.files.push((path.into(), Arc::from(bytes.into())));
        self
    }

    /// The skill path: the prefix and the directory name.
    pub fn skill_path(&self) -> String {
        if self.prefix.is_empty() {
            self.dir.clone()
        } else {
            format!("{}/{}", self.prefix, self.dir)
        }
    }

    /// The `SKILL.md` bytes (rendered for a skill made with [`Self::new`]).
    pub(crate) fn skill_md_bytes(&self) -> Arc<[u8]> {
        match &self.rendered {
            Some((fm, body)) => {
                let mut s = frontmatter::render(fm);
                if !body.is_empty() {
                    s.push('\n');
                    s.push_str(body);
                }
                Arc::from(s.into_bytes())
            }
            None => self.skill_md.clone(),
        }
    }

    /// Sets where the skill came from (a file path), for error messages.
    #[cfg(feature = "fs")]
    pub(crate) fn with_origin(mut self, origin: String) -> Self {
        self.origin = origin;
        self
    }
}

/// Whether `seg` may be a segment of a skill path or file path: not empty,
/// not `.` or `..`, no leading dot, and only ASCII letters, digits, `.`,
/// `_` and `-` (so the URI needs no escaping and names no hidden file).
pub(crate) fn safe_segment(seg: &str) -> bool {
    !seg.is_empty()
        && !seg.starts_with('.')
        && seg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The MIME type of a file, from its extension.
pub(crate) fn mime_of(path: &str) -> &'static str {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("md" | "markdown") => "text/markdown",
        Some("txt") => "text/plain",
        Some("py") => "text/x-python",
        Some("sh") => "application/x-sh",
        Some("js" | "mjs") => "text/javascript",
        Some("ts") => "text/x-typescript",
        Some("rs") => "text/x-rust",
        Some("json") => "application/json",
        Some("yaml" | "yml") => "application/yaml",
        Some("toml") => "application/toml",
        Some("csv") => "text/csv",
        Some("html" | "htm") => "text/html",
        Some("css") => "text/css",
        Some("xml") => "application/xml",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("pdf") => "application/pdf",
        Some("zip") => "application/zip",
        _ => "application/octet-stream",
    }
}
