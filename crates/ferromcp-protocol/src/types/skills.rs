//! Skills (extension `io.modelcontextprotocol/skills`): packaged agent
//! instructions served as resources.
//!
//! A skill is a directory holding a `SKILL.md` (YAML front matter with at
//! least `name` and `description`, then Markdown) and any supporting files.
//! Each file is a resource, conventionally `skill://<skill-path>/<file>`,
//! where the last segment of `<skill-path>` is the skill's `name`.
//! `skills/list` enumerates a server's skills, `skills/get` returns one by
//! the URI of its `SKILL.md`, and `resources/directory/read` (when the
//! server declares `directoryRead`) lists the direct children of a
//! directory resource.
//!
//! ```
//! use ferromcp_protocol::types::{SkillEntry, SkillResources};
//!
//! let entry: SkillEntry = serde_json::from_value(serde_json::json!({
//!     "uri": "skill://acme/billing/refunds/SKILL.md",
//!     "frontmatter": {"name": "refunds", "description": "Process refunds"},
//!     "resources": "dynamic"
//! }))
//! .expect("an entry");
//! assert_eq!(entry.skill_path(), Some("acme/billing/refunds"));
//! assert_eq!(entry.resources, SkillResources::Dynamic);
//! ```
// SEP-2640 (Skills Extension, draft of 2026-08-21): "Enumeration via
// skills/list", "Retrieval via skills/get", "Capability Declaration",
// "Directory Listing".

use super::{CacheScope, ClientCapabilities, Cursor, JsonObject, Meta, Resource, ResultType};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The extension identifier, the key in `capabilities.extensions`.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The URI scheme skills are conventionally served under, with its `://`.
pub const SKILL_SCHEME: &str = "skill://";

/// The file every skill directory holds at its root.
pub const SKILL_FILE: &str = "SKILL.md";

/// The MIME type of a `SKILL.md` resource.
pub const SKILL_MIME_TYPE: &str = "text/markdown";

/// The MIME type of a directory resource (`resources/directory/read`).
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";

/// The prefix of `_meta` keys carrying extra front-matter fields on a
/// `SKILL.md` resource.
pub const SKILLS_META_PREFIX: &str = "io.modelcontextprotocol.skills/";

/// Resources per skill every conforming host accepts (`SKILL.md` included).
pub const MAX_RESOURCES_PER_SKILL: usize = 512;

/// Total bytes per skill every conforming host accepts (16 MiB).
pub const MAX_BYTES_PER_SKILL: u64 = 16 * 1024 * 1024;

/// The longest skill `name` the Agent Skills specification allows.
pub const MAX_SKILL_NAME_CHARS: usize = 64;

/// The longest skill `description` the Agent Skills specification allows.
pub const MAX_SKILL_DESCRIPTION_CHARS: usize = 1024;

/// The longest `compatibility` the Agent Skills specification allows.
pub const MAX_SKILL_COMPATIBILITY_CHARS: usize = 500;

/// Why a skill `name` breaks the Agent Skills naming rules, or `None`
/// when it is valid: 1 to 64 characters, lowercase letters `a`–`z`,
/// digits and hyphens, no leading, trailing or doubled hyphen.
pub fn skill_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("is empty");
    }
    if name.chars().count() > MAX_SKILL_NAME_CHARS {
        return Some("is longer than 64 characters");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Some("may hold only lowercase letters a-z, digits and hyphens");
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Some("must not start or end with a hyphen");
    }
    if name.contains("--") {
        return Some("must not contain consecutive hyphens");
    }
    None
}

/// The settings of the extension in `capabilities.extensions`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillsCapability {
    /// Whether the server implements `resources/directory/read`
    /// (absent means `false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory_read: Option<bool>,
    /// Settings this crate does not know, kept as they came.
    #[serde(flatten)]
    pub other: JsonObject,
}

impl SkillsCapability {
    /// The settings as a JSON object (for `capabilities.extensions`).
    pub fn to_object(&self) -> JsonObject {
        match serde_json::to_value(self) {
            Ok(Value::Object(o)) => o,
            _ => JsonObject::new(),
        }
    }

    /// The extension's settings in `capabilities`, when declared there.
    pub fn from_extensions(extensions: Option<&JsonObject>) -> Option<Self> {
        let v = extensions?.get(SKILLS_EXTENSION)?;
        serde_json::from_value(v.clone()).ok()
    }

    /// The extension's settings in a client's capabilities, when declared.
    pub fn from_client_capabilities(caps: &ClientCapabilities) -> Option<Self> {
        Self::from_extensions(caps.extensions.as_ref())
    }
}

/// One file of a skill as a listing entry describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillFile {
    /// The file's resource URI.
    pub uri: String,
    /// `sha256:` and the 64 lowercase hex digits of the raw bytes' SHA-256.
    pub digest: String,
    /// Length of the raw bytes.
    pub size: u64,
}

/// A skill's files: every one with its digest and size, or `"dynamic"`
/// for content generated on demand (no integrity offered).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillResources {
    /// The complete list, `SKILL.md` included.
    Files(Vec<SkillFile>),
    /// `"dynamic"`.
    Dynamic,
}

impl Serialize for SkillResources {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Files(f) => f.serialize(s),
            Self::Dynamic => s.serialize_str("dynamic"),
        }
    }
}

impl<'de> Deserialize<'de> for SkillResources {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // An entry whose resources is neither an array nor "dynamic" is
        // invalid (SEP-2640 "Resources").
        match Value::deserialize(d)? {
            Value::String(s) if s == "dynamic" => Ok(Self::Dynamic),
            v @ Value::Array(_) => serde_json::from_value(v)
                .map(Self::Files)
                .map_err(D::Error::custom),
            _ => Err(D::Error::custom(
                "resources must be an array of {uri, digest, size} or \"dynamic\"",
            )),
        }
    }
}

/// One skill, as `skills/list` and `skills/get` describe it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillEntry {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// The `SKILL.md` front matter, verbatim, as a JSON object.
    pub frontmatter: JsonObject,
    /// The skill's files (required; see [`SkillResources`]).
    pub resources: SkillResources,
}

impl SkillEntry {
    /// The front matter's `name`, when a string.
    pub fn name(&self) -> Option<&str> {
        self.frontmatter.get("name").and_then(Value::as_str)
    }

    /// The front matter's `description`, when a string.
    pub fn description(&self) -> Option<&str> {
        self.frontmatter.get("description").and_then(Value::as_str)
    }

    /// The skill path of a `skill://` URI (between the scheme and
    /// `/SKILL.md`), or `None` for another form.
    pub fn skill_path(&self) -> Option<&str> {
        skill_path_of(&self.uri)
    }

    /// The skill's root directory URI (the `SKILL.md` URI without
    /// `/SKILL.md`), or `None` when the URI does not end that way.
    pub fn root_uri(&self) -> Option<&str> {
        self.uri
            .strip_suffix(SKILL_FILE)
            .and_then(|r| r.strip_suffix('/'))
    }

    /// The total of the files' sizes (`None` for dynamic content).
    pub fn total_size(&self) -> Option<u64> {
        match &self.resources {
            SkillResources::Files(f) => Some(f.iter().map(|x| x.size).sum()),
            SkillResources::Dynamic => None,
        }
    }
}

/// The skill path of `skill://<path>/SKILL.md`, or `None`.
pub fn skill_path_of(uri: &str) -> Option<&str> {
    uri.strip_prefix(SKILL_SCHEME)?
        .strip_suffix(SKILL_FILE)?
        .strip_suffix('/')
        .filter(|p| !p.is_empty())
}

/// `skills/list` params (an optional cursor).
pub type ListSkillsRequestParams = super::PaginatedRequestParams;

/// `skills/list` result (paginated; list-caching attributes on the
/// 2026-07-28 wire).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSkillsResult {
    /// `resultType` (modern wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The skills on this page.
    pub skills: Vec<SkillEntry>,
    /// Cursor of the next page; absent at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// Cache lifetime in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Cache scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Open metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// `skills/get` params: the URI of a skill's `SKILL.md`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct GetSkillRequestParams {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
}

impl GetSkillRequestParams {
    /// Params naming `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Self { uri: uri.into() }
    }
}

/// `skills/get` result: one entry, no cursor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetSkillResult {
    /// `resultType` (modern wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The skill.
    pub skill: SkillEntry,
    /// Cache lifetime in milliseconds (2026-07-28 wire; the SEP leaves it
    /// open, the MCP Inspector requires it, as on `resources/read`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Cache scope (2026-07-28 wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Open metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// `resources/directory/read` params: a directory URI (no trailing
/// slash) and an optional cursor.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ReadDirectoryRequestParams {
    /// The directory's URI.
    pub uri: String,
    /// Opaque cursor from a previous page's `nextCursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<Cursor>,
}

impl ReadDirectoryRequestParams {
    /// Params reading the first page of `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            cursor: None,
        }
    }
}

/// `resources/directory/read` result: the direct children, files with
/// their resource metadata and subdirectories as `inode/directory`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadDirectoryResult {
    /// `resultType` (modern wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The children on this page.
    pub resources: Vec<Resource>,
    /// Cursor of the next page; absent at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// Cache lifetime in milliseconds (2026-07-28 wire, as `resources/list`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Cache scope (2026-07-28 wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Open metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl Resource {
    /// Whether this is a directory resource (`mimeType` `inode/directory`).
    pub fn is_directory(&self) -> bool {
        self.mime_type.as_deref() == Some(DIRECTORY_MIME_TYPE)
    }
}

/// `sha256:` and the lowercase hex SHA-256 of `bytes`, given the raw
/// 32-byte hash (the caller computes it; this crate has no hasher).
pub fn format_digest(hash: &[u8; 32]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(7 + 64);
    s.push_str("sha256:");
    for b in hash {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Whether `digest` has the form `sha256:` and 64 lowercase hex digits.
pub fn is_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // SEP-2640 "Enumeration via skills/list": the result example (written
    // from the text; the digests shortened there are full here).
    #[test]
    fn list_result_matches_the_sep_example_shape() {
        let d = format!("sha256:{}", "a1".repeat(32));
        let wire = json!({
            "resultType": "complete",
            "skills": [
                {
                    "uri": "skill://git-workflow/SKILL.md",
                    "frontmatter": {"name": "git-workflow", "description": "Follow this team's Git conventions"},
                    "resources": [{"uri": "skill://git-workflow/SKILL.md", "digest": d, "size": 2314}]
                },
                {
                    "uri": "skill://acme/billing/refunds/SKILL.md",
                    "frontmatter": {"name": "refunds", "description": "Process refunds", "license": "Apache-2.0",
                                    "metadata": {"version": "2.1.0"}},
                    "resources": [
                        {"uri": "skill://acme/billing/refunds/SKILL.md", "digest": d, "size": 3871},
                        {"uri": "skill://acme/billing/refunds/examples/email.md", "digest": d, "size": 962}
                    ]
                }
            ],
            "nextCursor": "2"
        });
        let r: ListSkillsResult = serde_json::from_value(wire.clone()).expect("typed");
        assert_eq!(r.result_type, Some(ResultType::Complete));
        assert_eq!(r.skills.len(), 2);
        let refunds = &r.skills[1];
        assert_eq!(refunds.name(), Some("refunds"));
        assert_eq!(refunds.skill_path(), Some("acme/billing/refunds"));
        assert_eq!(refunds.root_uri(), Some("skill://acme/billing/refunds"));
        assert_eq!(refunds.total_size(), Some(3871 + 962));
        assert!(
            matches!(&refunds.resources, SkillResources::Files(f) if f.iter().all(|x| is_digest(&x.digest)))
        );
        // Front matter passes through verbatim, unknown fields included.
        assert_eq!(refunds.frontmatter["metadata"]["version"], "2.1.0");
        assert_eq!(serde_json::to_value(&r).expect("json"), wire);
    }

    #[test]
    fn get_request_and_result_shapes() {
        let p = GetSkillRequestParams::new("skill://pdf-processing/SKILL.md");
        assert_eq!(
            serde_json::to_value(&p).expect("json"),
            json!({"uri": "skill://pdf-processing/SKILL.md"})
        );
        let wire = json!({
            "resultType": "complete",
            "skill": {
                "uri": "skill://pdf-processing/SKILL.md",
                "frontmatter": {"name": "pdf-processing", "description": "PDFs"},
                "resources": "dynamic"
            }
        });
        let r: GetSkillResult = serde_json::from_value(wire.clone()).expect("typed");
        assert_eq!(r.skill.resources, SkillResources::Dynamic);
        assert_eq!(r.skill.total_size(), None);
        assert_eq!(serde_json::to_value(&r).expect("json"), wire);
    }

    // SEP-2640 "Resources": no resources, or anything but an array or
    // "dynamic", is an invalid entry.
    #[test]
    fn an_entry_without_valid_resources_is_refused() {
        for bad in [
            json!({"uri": "skill://a/SKILL.md", "frontmatter": {}}),
            json!({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": "static"}),
            json!({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": {}}),
            json!({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": [{"uri": "x"}]}),
        ] {
            assert!(
                serde_json::from_value::<SkillEntry>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    // SEP-2640 "Directory Listing": the request and result examples.
    #[test]
    fn directory_read_shapes() {
        let p: ReadDirectoryRequestParams =
            serde_json::from_value(json!({"uri": "skill://pdf-processing/templates"}))
                .expect("typed");
        assert_eq!(
            p,
            ReadDirectoryRequestParams::new("skill://pdf-processing/templates")
        );
        let wire = json!({
            "resultType": "complete",
            "resources": [
                {"uri": "skill://pdf-processing/templates/invoice.md", "name": "invoice.md", "mimeType": "text/markdown"},
                {"uri": "skill://pdf-processing/templates/regional", "name": "regional", "mimeType": "inode/directory"}
            ]
        });
        let r: ReadDirectoryResult = serde_json::from_value(wire.clone()).expect("typed");
        assert!(!r.resources[0].is_directory());
        assert!(r.resources[1].is_directory());
        assert_eq!(serde_json::to_value(&r).expect("json"), wire);
    }

    // SEP-2640 "Capability Declaration".
    #[test]
    fn capability_round_trip() {
        let mut ext = JsonObject::new();
        ext.insert(
            SKILLS_EXTENSION.into(),
            json!({"directoryRead": true, "future": 1}),
        );
        let c = SkillsCapability::from_extensions(Some(&ext)).expect("declared");
        assert_eq!(c.directory_read, Some(true));
        assert_eq!(
            Value::Object(c.to_object()),
            json!({"directoryRead": true, "future": 1})
        );
        assert_eq!(
            Value::Object(SkillsCapability::default().to_object()),
            json!({})
        );
        assert!(SkillsCapability::from_extensions(None).is_none());
    }

    #[test]
    fn names_follow_the_agent_skills_rules() {
        for ok in ["a", "pdf-processing", "git2-flow", &"x".repeat(64)] {
            assert_eq!(skill_name_problem(ok), None, "{ok}");
        }
        for bad in [
            "",
            "PDF",
            "-pdf",
            "pdf-",
            "pdf--x",
            "pdf x",
            "pdf_x",
            "../x",
            &"x".repeat(65),
        ] {
            assert!(skill_name_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn digests_and_paths() {
        let d = format_digest(&[0xab; 32]);
        assert!(is_digest(&d));
        assert!(!is_digest("sha256:AB"));
        assert!(!is_digest(&d.to_uppercase()));
        assert_eq!(skill_path_of("skill://a/b/SKILL.md"), Some("a/b"));
        assert_eq!(skill_path_of("skill:///SKILL.md"), None);
        assert_eq!(skill_path_of("skill://a/README.md"), None);
    }
}
