//! `mcp registry init` and `mcp registry validate`: the `server.json` that
//! describes a server to the official MCP Registry.
//!
//! `init` takes what the server reports about itself (its `server/discover`
//! or `initialize` answer) and the crate's `Cargo.toml`. `validate` checks
//! the registry's rules as this crate implements them from the registry's
//! published documentation (the schema file itself is not bundled): the
//! required fields and their limits, the name's reverse-DNS namespace, exact
//! versions, package and transport types, the README `mcp-name:` marker of
//! `cargo` packages, `fileSha256` of `mcpb` packages, and no secret-looking
//! defaults. Each problem names its key path and line:column.

use crate::cargo_toml::{self, Package};
use crate::connect::{self, Target};
use crate::exit::{Failure, code};
use crate::jsonc;
use crate::{Common, no_extra};
use clap::Args;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// The `$schema` of the `server.json` this version writes.
pub const SCHEMA_URL: &str =
    "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json";

/// Package types the registry accepts.
const REGISTRY_TYPES: [&str; 7] = ["npm", "pypi", "nuget", "oci", "mcpb", "cargo", "go"];
/// Package types whose `version` is required and exact.
const VERSIONED: [&str; 5] = ["npm", "pypi", "nuget", "cargo", "go"];
/// The order keys are written in (the registry documentation's).
pub const KEY_ORDER: &[&str] = &[
    "$schema",
    "name",
    "title",
    "description",
    "registryType",
    "identifier",
    "version",
    "fileSha256",
    "websiteUrl",
    "repository",
    "url",
    "source",
    "icons",
    "src",
    "type",
    "transport",
    "environmentVariables",
    "isRequired",
    "isSecret",
    "packages",
    "remotes",
];
/// The longest `description` and `title`.
const MAX_DESCRIPTION: usize = 100;

/// Arguments of `mcp registry init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// A remote server's URL: it becomes a `remotes` entry.
    #[arg(long, value_name = "URL")]
    pub from: Option<String>,
    /// The registry name, reverse-DNS: `io.github.OWNER/NAME` (default:
    /// from the crate's GitHub repository and name).
    #[arg(long)]
    pub name: Option<String>,
    /// Where to write.
    #[arg(long, value_name = "FILE", default_value = "server.json")]
    pub out: PathBuf,
    /// The crate's Cargo.toml (default: the nearest one from the current
    /// directory up).
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// Also list an MCPB bundle at this release URL (with --mcpb-file).
    #[arg(long, value_name = "URL", requires = "mcpb_file")]
    pub mcpb_url: Option<String>,
    /// The local bundle whose SHA-256 goes in `fileSha256`.
    #[arg(long, value_name = "FILE", requires = "mcpb_url")]
    pub mcpb_file: Option<PathBuf>,
    /// An environment variable the server needs (repeatable); names that
    /// look like secrets are marked `isSecret`.
    #[arg(long = "env-var", value_name = "NAME")]
    pub env_vars: Vec<String>,
    /// Replace an existing file.
    #[arg(long)]
    pub force: bool,
    /// `[URL]`
    #[arg(value_name = "URL")]
    pub positional: Vec<String>,
    #[command(flatten)]
    pub common: Common,
}

/// Arguments of `mcp registry validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The file to check.
    #[arg(value_name = "FILE", default_value = "server.json")]
    pub file: PathBuf,
    /// The crate's Cargo.toml for the version and README checks (default:
    /// the nearest one from the file's directory up).
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// With a server (`--server URL` or `-- CMD ARGS…`): it is started or
    /// connected and the version it reports must be `server.json`'s.
    #[command(flatten)]
    pub common: Common,
}

/// Whether an environment variable's name says it holds a secret.
pub fn secret_name(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    [
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "API_KEY",
        "APIKEY",
        "PRIVATE",
        "CREDENTIAL",
    ]
    .iter()
    .any(|w| n.contains(w))
        || n.ends_with("_KEY")
}

/// Whether a value looks like a credential: well-known key prefixes, or a
/// long random-looking token.
fn secret_value(v: &str) -> bool {
    const PREFIXES: [&str; 9] = [
        "sk-",
        "ghp_",
        "gho_",
        "github_pat_",
        "xoxb-",
        "xoxp-",
        "AKIA",
        "glpat-",
        "Bearer ",
    ];
    if PREFIXES.iter().any(|p| v.starts_with(p)) {
        return true;
    }
    v.len() >= 24
        && !v.contains(char::is_whitespace)
        && !v.contains("://")
        && !v.contains('/')
        && v.chars().any(|c| c.is_ascii_digit())
        && v.chars().any(|c| c.is_ascii_alphabetic())
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut t: String = s.chars().take(max - 1).collect();
    t.push('…');
    t
}

pub(crate) async fn init(a: InitArgs) -> Result<u8, Failure> {
    let target = match a.from.clone() {
        Some(u) if connect::is_url(&u) => {
            no_extra(&a.positional)?;
            Target::Url(u)
        }
        Some(u) => {
            return Err(Failure::usage(format!(
                "--from wants an http(s) URL, not {u:?}"
            )));
        }
        None => {
            let (t, rest) = connect::split_target(&a.common, a.positional.clone())?;
            no_extra(&rest)?;
            t
        }
    };
    if a.out.exists() && !a.force {
        return Err(Failure::usage(format!(
            "{} exists; use --force to replace it",
            a.out.display()
        )));
    }
    let manifest = match &a.manifest_path {
        Some(p) => Some(p.clone()),
        None => std::env::current_dir()
            .ok()
            .and_then(|d| cargo_toml::find(&d)),
    };
    let package = match manifest {
        Some(p) => Some(cargo_toml::read(&p).map_err(Failure::usage)?),
        None => None,
    };
    let client = connect::connect(&target, &a.common).await?;
    let info = client.server_info();
    let r: Result<Value, Failure> = (|| {
        let info = info.ok_or_else(|| {
            Failure::new(
                code::PROTOCOL,
                "the server did not say who it is (no serverInfo)",
            )
        })?;
        let mcpb = match (&a.mcpb_url, &a.mcpb_file) {
            (Some(u), Some(f)) => Some((u.clone(), sha256_file(f)?)),
            _ => None,
        };
        build(&BuildInput {
            info: serde_json::to_value(&info).unwrap_or_default(),
            package: package.as_ref(),
            target: &target,
            name: a.name.as_deref(),
            mcpb,
            env_vars: &a.env_vars,
        })
        .map_err(Failure::usage)
    })();
    connect::close(&client, &r).await;
    let doc = r?;
    let text = jsonc::pretty_ordered(&doc, KEY_ORDER);
    std::fs::write(&a.out, text)
        .map_err(|e| Failure::transport(format!("cannot write {}: {e}", a.out.display())))?;
    eprintln!("mcp: wrote {}", a.out.display());
    if let Some(n) = doc["name"].as_str()
        && doc["packages"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p["registryType"] == "cargo"))
    {
        eprintln!(
            "mcp: the crate's README must show `mcp-name: {n}` as visible text (crates.io strips HTML comments)"
        );
    }
    Ok(code::OK)
}

/// The SHA-256 of a file, hex.
pub fn sha256_file(path: &Path) -> Result<String, Failure> {
    use sha2::Digest as _;
    let bytes = std::fs::read(path)
        .map_err(|e| Failure::transport(format!("cannot read {}: {e}", path.display())))?;
    Ok(hex(&sha2::Sha256::digest(&bytes)))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What `server.json` is made from.
pub struct BuildInput<'a> {
    /// The server's `serverInfo` (JSON, camelCase).
    pub info: Value,
    /// The crate, when a Cargo.toml was found.
    pub package: Option<&'a Package>,
    /// How the server was reached.
    pub target: &'a Target,
    /// `--name`.
    pub name: Option<&'a str>,
    /// An MCPB bundle: release URL and SHA-256.
    pub mcpb: Option<(String, String)>,
    /// Environment variables the server needs.
    pub env_vars: &'a [String],
}

/// Builds the `server.json` document.
pub fn build(i: &BuildInput<'_>) -> Result<Value, String> {
    let s = |k: &str| i.info.get(k).and_then(Value::as_str).map(str::to_owned);
    let pkg = i.package;
    let name = match (i.name, pkg) {
        (Some(n), _) => n.to_owned(),
        (None, Some(p)) => match p.github_owner() {
            Some(owner) => format!("io.github.{owner}/{}", p.name),
            None => {
                return Err(
                    "cannot guess the registry name (no GitHub repository in Cargo.toml): give --name io.github.OWNER/NAME"
                        .to_owned(),
                );
            }
        },
        (None, None) => {
            return Err("no Cargo.toml found: give --name io.github.OWNER/NAME".to_owned());
        }
    };
    let description = s("description")
        .or_else(|| pkg.and_then(|p| p.description.clone()))
        .ok_or("neither the server nor Cargo.toml gives a description")?;
    if description.chars().count() > MAX_DESCRIPTION {
        eprintln!("mcp: the description is longer than {MAX_DESCRIPTION} characters; shortened");
    }
    let server_version = s("version").unwrap_or_default();
    let version = match pkg.and_then(|p| p.version.clone()) {
        Some(v) => {
            if !server_version.is_empty() && v != server_version {
                eprintln!(
                    "mcp: warning: the server reports version {server_version} but Cargo.toml says {v}; using {v}"
                );
            }
            v
        }
        None => server_version,
    };
    let mut doc = Map::new();
    doc.insert("$schema".into(), json!(SCHEMA_URL));
    doc.insert("name".into(), json!(name));
    if let Some(t) = s("title") {
        doc.insert("title".into(), json!(truncate(&t, MAX_DESCRIPTION)));
    }
    doc.insert(
        "description".into(),
        json!(truncate(&description, MAX_DESCRIPTION)),
    );
    doc.insert("version".into(), json!(version));
    if let Some(w) = s("websiteUrl").or_else(|| pkg.and_then(|p| p.homepage.clone())) {
        doc.insert("websiteUrl".into(), json!(w));
    }
    if let Some(icons) = i.info.get("icons").filter(|v| v.is_array()) {
        doc.insert("icons".into(), icons.clone());
    }
    if let Some(repo) = pkg.and_then(|p| p.repository.clone()) {
        let source = if repo.contains("github.com") {
            "github"
        } else if repo.contains("gitlab") {
            "gitlab"
        } else {
            "git"
        };
        doc.insert("repository".into(), json!({"url": repo, "source": source}));
    }
    let env: Vec<Value> = i
        .env_vars
        .iter()
        .map(|n| {
            json!({
                "name": n,
                "description": format!("{n} for the server"),
                "isRequired": true,
                "isSecret": secret_name(n),
            })
        })
        .collect();
    match i.target {
        Target::Url(u) => {
            doc.insert(
                "remotes".into(),
                json!([{"type": "streamable-http", "url": u}]),
            );
        }
        Target::Command(_) => {
            let mut packages = Vec::new();
            let mut stdio = |mut p: Value| {
                if !env.is_empty() {
                    p["environmentVariables"] = json!(env);
                }
                packages.push(p);
            };
            if let Some(p) = pkg {
                stdio(json!({
                    "registryType": "cargo",
                    "identifier": p.name,
                    "version": version,
                    "transport": {"type": "stdio"},
                }));
            }
            if let Some((url, sha)) = &i.mcpb {
                stdio(json!({
                    "registryType": "mcpb",
                    "identifier": url,
                    "fileSha256": sha,
                    "transport": {"type": "stdio"},
                }));
            }
            if packages.is_empty() {
                return Err(
                    "nothing to list: no Cargo.toml (cargo package) and no --mcpb-url".to_owned(),
                );
            }
            doc.insert("packages".into(), Value::Array(packages));
        }
    }
    Ok(Value::Object(doc))
}

/// One problem in a `server.json`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    /// The key path (a JSON pointer).
    pub pointer: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

/// What the validator may look at besides the document.
#[derive(Debug, Default)]
pub struct Context {
    /// The crate (for the version and the README marker).
    pub package: Option<Package>,
    /// The directory of the `server.json` (for local `.mcpb` files).
    pub dir: PathBuf,
    /// The version the running server reports (`serverInfo.version`), when
    /// validation was given a server.
    pub server_version: Option<String>,
}

struct Checker<'a> {
    text: &'a str,
    problems: Vec<Problem>,
}

impl Checker<'_> {
    fn add(&mut self, path: &[String], message: impl Into<String>) {
        let (line, column) = jsonc::line_col(self.text, jsonc::locate(self.text, path));
        let pointer = path.iter().fold(String::new(), |mut s, p| {
            s.push('/');
            s.push_str(&p.replace('~', "~0").replace('/', "~1"));
            s
        });
        self.problems.push(Problem {
            pointer,
            line,
            column,
            message: message.into(),
        });
    }
}

fn path(base: &[String], more: &[&str]) -> Vec<String> {
    base.iter()
        .cloned()
        .chain(more.iter().map(|s| (*s).to_owned()))
        .collect()
}

/// Whether `v` names one exact version (not `latest`, a range or a
/// wildcard).
fn exact_version(v: &str) -> bool {
    !v.is_empty()
        && v != "latest"
        && !v.contains(['^', '~', '>', '<', '*', '|', ' ', ','])
        && !v.split('.').any(|p| p == "x" || p == "X")
}

/// Whether `ns` is a reverse-DNS namespace (`io.github.owner`, `com.example`).
fn reverse_dns(ns: &str) -> bool {
    let labels: Vec<&str> = ns.split('.').collect();
    labels.len() >= 2
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

/// Whether the README shows `mcp-name: NAME` as visible text, followed by
/// a boundary.
pub fn readme_has_marker(readme: &str, name: &str) -> bool {
    // crates.io drops HTML comments: take them out first.
    let mut visible = String::new();
    let mut rest = readme;
    while let Some(start) = rest.find("<!--") {
        visible.push_str(&rest[..start]);
        rest = match rest[start..].find("-->") {
            Some(end) => &rest[start + end + 3..],
            None => "",
        };
    }
    visible.push_str(rest);
    let needle = format!("mcp-name: {name}");
    visible.match_indices(&needle).any(|(at, m)| {
        visible[at + m.len()..]
            .chars()
            .next()
            .is_none_or(|c| c.is_whitespace() || matches!(c, '<' | '`' | ')' | '*' | '_'))
    })
}

/// Checks `text` (a `server.json`); no problems means it passes.
pub fn validate(text: &str, ctx: &Context) -> Vec<Problem> {
    let mut c = Checker {
        text,
        problems: Vec::new(),
    };
    let doc: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return vec![Problem {
                pointer: String::new(),
                line: e.line(),
                column: e.column(),
                message: format!("not valid JSON: {e}"),
            }];
        }
    };
    let Some(obj) = doc.as_object() else {
        c.add(&[], "the top level must be an object");
        return c.problems;
    };
    let root: Vec<String> = Vec::new();
    let str_field = |k: &str| obj.get(k).and_then(Value::as_str);
    match str_field("$schema") {
        None => c.add(
            &path(&root, &["$schema"]),
            format!("missing $schema (use {SCHEMA_URL})"),
        ),
        Some(s) if !s.starts_with("https://static.modelcontextprotocol.io/schemas/") => c.add(
            &path(&root, &["$schema"]),
            format!("$schema is not a registry schema URL (use {SCHEMA_URL})"),
        ),
        _ => {}
    }
    let name = str_field("name").unwrap_or_default();
    match obj.get("name") {
        None => c.add(&[], "missing required \"name\""),
        Some(Value::String(n)) => {
            let p = path(&root, &["name"]);
            let ok_chars = n.split_once('/').is_some_and(|(ns, server)| {
                !server.is_empty()
                    && !server.contains('/')
                    && ns
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || ".-".contains(c))
                    && server
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
            });
            if !(3..=200).contains(&n.len()) || !ok_chars {
                c.add(&p, "name must be NAMESPACE/NAME (letters, digits, . - _; one '/'; 3 to 200 characters)");
            } else if let Some((ns, _)) = n.split_once('/')
                && !reverse_dns(ns)
            {
                c.add(
                    &p,
                    format!("namespace {ns:?} is not reverse-DNS (io.github.OWNER or com.example)"),
                );
            }
            if let Some(owner) = n
                .strip_prefix("io.github.")
                .and_then(|r| r.split('/').next())
                && let Some(url) = obj
                    .get("repository")
                    .and_then(|r| r.get("url"))
                    .and_then(Value::as_str)
                && let Some(repo_owner) = cargo_toml::github_owner(url)
                && !repo_owner.eq_ignore_ascii_case(owner)
            {
                c.add(
                    &p,
                    format!("namespace io.github.{owner} does not match the repository owner {repo_owner:?}"),
                );
            }
        }
        Some(_) => c.add(&path(&root, &["name"]), "name must be a string"),
    }
    match obj.get("description") {
        Some(Value::String(d)) if !d.is_empty() && d.chars().count() <= MAX_DESCRIPTION => {}
        Some(Value::String(_)) => c.add(
            &path(&root, &["description"]),
            format!("description must be 1 to {MAX_DESCRIPTION} characters"),
        ),
        Some(_) => c.add(
            &path(&root, &["description"]),
            "description must be a string",
        ),
        None => c.add(&[], "missing required \"description\""),
    }
    if let Some(t) = obj.get("title")
        && !t
            .as_str()
            .is_some_and(|t| !t.is_empty() && t.chars().count() <= MAX_DESCRIPTION)
    {
        c.add(
            &path(&root, &["title"]),
            format!("title must be 1 to {MAX_DESCRIPTION} characters"),
        );
    }
    let version = str_field("version").unwrap_or_default();
    match obj.get("version") {
        None => c.add(&[], "missing required \"version\""),
        Some(Value::String(v)) if exact_version(v) && v.len() <= 255 => {}
        Some(_) => c.add(
            &path(&root, &["version"]),
            "version must be one exact version (not latest, a range or a wildcard)",
        ),
    }
    if let Some(pkg) = &ctx.package
        && let Some(cv) = &pkg.version
        && !version.is_empty()
        && version != cv
        && obj
            .get("packages")
            .and_then(Value::as_array)
            .is_some_and(|ps| ps.iter().any(|p| p["registryType"] == "cargo"))
    {
        c.add(
            &path(&root, &["version"]),
            format!(
                "version {version} differs from Cargo.toml's {cv} ({})",
                pkg.manifest.display()
            ),
        );
    }
    if let Some(sv) = &ctx.server_version
        && !version.is_empty()
        && version != sv
    {
        c.add(
            &path(&root, &["version"]),
            format!(
                "version {version} differs from the running server's {sv} (serverInfo.version)"
            ),
        );
    }
    if let Some(w) = obj.get("websiteUrl")
        && !w
            .as_str()
            .is_some_and(|w| w.starts_with("https://") || w.starts_with("http://"))
    {
        c.add(
            &path(&root, &["websiteUrl"]),
            "websiteUrl must be an http(s) URL",
        );
    }
    if let Some(r) = obj.get("repository") {
        for k in ["url", "source"] {
            if !r.get(k).is_some_and(Value::is_string) {
                c.add(
                    &path(&root, &["repository"]),
                    format!("repository needs a string \"{k}\""),
                );
            }
        }
    }
    let packages = obj.get("packages").and_then(Value::as_array);
    let remotes = obj.get("remotes").and_then(Value::as_array);
    if packages.is_none_or(Vec::is_empty) && remotes.is_none_or(Vec::is_empty) {
        c.add(
            &[],
            "list at least one entry in \"packages\" or \"remotes\"",
        );
    }
    for (i, p) in packages.into_iter().flatten().enumerate() {
        let base = vec!["packages".to_owned(), i.to_string()];
        check_package(&mut c, &base, p, name, ctx);
    }
    for (i, r) in remotes.into_iter().flatten().enumerate() {
        let base = vec!["remotes".to_owned(), i.to_string()];
        match r.get("type").and_then(Value::as_str) {
            Some("streamable-http" | "sse") => {}
            _ => c.add(
                &path(&base, &["type"]),
                "remote type must be streamable-http or sse",
            ),
        }
        if !r
            .get("url")
            .and_then(Value::as_str)
            .is_some_and(connect::is_url)
        {
            c.add(&path(&base, &["url"]), "remote needs an http(s) \"url\"");
        }
        check_headers_and_vars(&mut c, &base, r, "headers");
    }
    c.problems
}

fn check_package(c: &mut Checker<'_>, base: &[String], p: &Value, name: &str, ctx: &Context) {
    let rt = p
        .get("registryType")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !REGISTRY_TYPES.contains(&rt) {
        c.add(
            &path(base, &["registryType"]),
            format!("registryType must be one of {}", REGISTRY_TYPES.join(", ")),
        );
    }
    let identifier = p
        .get("identifier")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if identifier.is_empty() {
        c.add(base, "package needs an \"identifier\"");
    }
    let pv = p.get("version").and_then(Value::as_str);
    if VERSIONED.contains(&rt) {
        match pv {
            Some(v) if exact_version(v) => {}
            Some(_) => c.add(
                &path(base, &["version"]),
                "package version must be one exact version",
            ),
            None => c.add(base, format!("a {rt} package needs a \"version\"")),
        }
    }
    match p.pointer("/transport/type").and_then(Value::as_str) {
        Some("stdio") => {}
        Some("streamable-http" | "sse") => {
            if !p.pointer("/transport/url").is_some_and(Value::is_string) {
                c.add(
                    &path(base, &["transport"]),
                    "an HTTP transport needs a \"url\"",
                );
            }
        }
        _ => c.add(
            &path(base, &["transport"]),
            "transport.type must be stdio, streamable-http or sse",
        ),
    }
    if rt == "cargo"
        && let Some(pkg) = &ctx.package
        && pkg.name == identifier
    {
        if let (Some(v), Some(cv)) = (pv, &pkg.version)
            && v != cv
        {
            c.add(
                &path(base, &["version"]),
                format!("version {v} differs from Cargo.toml's {cv}"),
            );
        }
        let readme = pkg.readme_path();
        match std::fs::read_to_string(&readme) {
            Ok(t) if readme_has_marker(&t, name) => {}
            Ok(_) => c.add(
                &path(base, &["identifier"]),
                format!(
                    "{} must show `mcp-name: {name}` as visible text (crates.io strips HTML comments, so a comment does not count)",
                    readme.display()
                ),
            ),
            Err(e) => c.add(
                &path(base, &["identifier"]),
                format!("cannot read the README {}: {e}", readme.display()),
            ),
        }
    }
    if rt == "mcpb" {
        if !identifier.contains("mcp") {
            c.add(
                &path(base, &["identifier"]),
                "an mcpb URL must contain \"mcp\"",
            );
        }
        match p.get("fileSha256").and_then(Value::as_str) {
            Some(h)
                if h.len() == 64
                    && h.chars()
                        .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()) =>
            {
                // A bundle of that name beside server.json must match.
                let file = identifier.rsplit('/').next().unwrap_or_default();
                let local = ctx.dir.join(file);
                if !file.is_empty()
                    && local.is_file()
                    && let Ok(actual) = sha256_file(&local)
                    && actual != h
                {
                    c.add(
                        &path(base, &["fileSha256"]),
                        format!(
                            "fileSha256 does not match {} (its SHA-256 is {actual})",
                            local.display()
                        ),
                    );
                }
            }
            Some(_) => c.add(
                &path(base, &["fileSha256"]),
                "fileSha256 must be 64 lowercase hex digits",
            ),
            None => c.add(base, "an mcpb package needs \"fileSha256\""),
        }
    }
    if let Some(vars) = p.get("environmentVariables") {
        let Some(vars) = vars.as_array() else {
            c.add(
                &path(base, &["environmentVariables"]),
                "environmentVariables must be an array",
            );
            return;
        };
        for (j, v) in vars.iter().enumerate() {
            let vb = path(base, &["environmentVariables", &j.to_string()]);
            check_input(c, &vb, v, true);
        }
    }
    check_headers_and_vars(
        c,
        &path(base, &["transport"]),
        p.get("transport").unwrap_or(&Value::Null),
        "headers",
    );
}

fn check_headers_and_vars(c: &mut Checker<'_>, base: &[String], v: &Value, key: &str) {
    for (j, h) in v
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        check_input(c, &path(base, &[key, &j.to_string()]), h, true);
    }
}

/// An environment variable or header: a name, and no secret default.
fn check_input(c: &mut Checker<'_>, base: &[String], v: &Value, named: bool) {
    let name = v.get("name").and_then(Value::as_str).unwrap_or_default();
    if named && name.is_empty() {
        c.add(base, "needs a \"name\"");
    }
    for key in ["default", "value"] {
        let Some(d) = v.get(key).and_then(Value::as_str) else {
            continue;
        };
        if d.is_empty() {
            continue;
        }
        let is_secret = v.get("isSecret").and_then(Value::as_bool).unwrap_or(false);
        // A `{placeholder}` is a template the user fills in, not a secret.
        let template = d.starts_with('{') || d.contains("${");
        if !template && (is_secret || secret_name(name) || secret_value(d)) {
            c.add(
                &path(base, &[key]),
                format!(
                    "{name}: a secret must not have a {key} (it would be published); leave it out"
                ),
            );
        }
    }
}

pub(crate) async fn validate_cmd(a: &ValidateArgs) -> Result<u8, Failure> {
    let running = if a.common.server.is_some() || !a.common.command.is_empty() {
        let (target, rest) = connect::split_target(&a.common, Vec::new())?;
        no_extra(&rest)?;
        let client = connect::connect(&target, &a.common).await?;
        let info = client.server_info();
        let r: Result<String, Failure> = info.map(|i| i.version.clone()).ok_or_else(|| {
            Failure::new(
                code::PROTOCOL,
                "the server did not say who it is (no serverInfo)",
            )
        });
        connect::close(&client, &r).await;
        Some(r?)
    } else {
        None
    };
    validate_file_with(&a.file, a.manifest_path.as_deref(), a.common.json, running)?;
    Ok(code::OK)
}

/// Validates `file`, printing each problem (`json`: a report on stdout);
/// an error when there is any.
pub fn validate_file(
    file: &Path,
    manifest_path: Option<&Path>,
    json_out: bool,
) -> Result<(), Failure> {
    validate_file_with(file, manifest_path, json_out, None)
}

/// [`validate_file`], also checking `server.json`'s version against the
/// version the running server reported.
fn validate_file_with(
    file: &Path,
    manifest_path: Option<&Path>,
    json_out: bool,
    server_version: Option<String>,
) -> Result<(), Failure> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", file.display())))?;
    let dir = file
        .parent()
        .map(|p| {
            if p.as_os_str().is_empty() {
                Path::new(".")
            } else {
                p
            }
        })
        .unwrap_or(Path::new("."))
        .to_owned();
    let manifest = match manifest_path {
        Some(p) => Some(p.to_owned()),
        None => std::fs::canonicalize(&dir)
            .ok()
            .and_then(|d| cargo_toml::find(&d)),
    };
    let package = match manifest {
        Some(p) => Some(cargo_toml::read(&p).map_err(Failure::usage)?),
        None => None,
    };
    let problems = validate(
        &text,
        &Context {
            package,
            dir,
            server_version,
        },
    );
    if json_out {
        crate::output::print_json(&json!({"valid": problems.is_empty(), "problems": problems}))?;
    } else {
        for p in &problems {
            let at = if p.pointer.is_empty() {
                "(top level)"
            } else {
                &p.pointer
            };
            eprintln!(
                "{}:{}:{}: {at}: {}",
                file.display(),
                p.line,
                p.column,
                p.message
            );
        }
    }
    if problems.is_empty() {
        if !json_out {
            eprintln!("mcp: {} is valid", file.display());
        }
        Ok(())
    } else {
        Err(Failure::usage(format!(
            "{} has {} problem(s)",
            file.display(),
            problems.len()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn good() -> Value {
        json!({
            "$schema": SCHEMA_URL,
            "name": "io.github.owner/widget-mcp",
            "description": "A widget server",
            "version": "0.3.0",
            "repository": {"url": "https://github.com/owner/widget", "source": "github"},
            "packages": [{
                "registryType": "cargo",
                "identifier": "widget-mcp",
                "version": "0.3.0",
                "transport": {"type": "stdio"},
                "environmentVariables": [{"name": "WIDGET_TOKEN", "isSecret": true}]
            }]
        })
    }

    fn check(v: &Value) -> Vec<Problem> {
        validate(
            &serde_json::to_string_pretty(v).unwrap_or_default(),
            &Context::default(),
        )
    }

    #[test]
    fn a_good_file_passes() {
        assert_eq!(check(&good()), []);
    }

    #[test]
    fn the_running_servers_version_must_be_the_files() {
        let text = serde_json::to_string_pretty(&good()).unwrap_or_default();
        let with = |v: &str| {
            validate(
                &text,
                &Context {
                    server_version: Some(v.to_owned()),
                    ..Context::default()
                },
            )
        };
        assert_eq!(with("0.3.0"), []);
        let problems = with("0.4.0");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].pointer, "/version");
        assert!(
            problems[0].message.contains("running server's 0.4.0"),
            "{problems:?}"
        );
        // The line of the top-level "version" key (two-space indent).
        let line = text
            .lines()
            .position(|l| l.starts_with("  \"version\""))
            .map(|i| i + 1);
        assert_eq!(Some(problems[0].line), line, "{problems:?}");
    }

    #[test]
    fn each_rule_reports_its_path_and_line() {
        let cases: [(&str, Value, &str); 9] = [
            ("/name", json!("widget"), "NAMESPACE/NAME"),
            ("/name", json!("widget/x"), "reverse-DNS"),
            ("/name", json!("io.github.other/x"), "repository owner"),
            ("/version", json!("^0.3"), "exact"),
            ("/description", json!("x".repeat(101)), "1 to 100"),
            ("/packages/0/registryType", json!("crate"), "registryType"),
            (
                "/packages/0/transport",
                json!({"type": "ws"}),
                "transport.type",
            ),
            (
                "/packages/0/environmentVariables/0/default",
                json!([{"name": "WIDGET_TOKEN", "default": "abc"}]),
                "secret",
            ),
            (
                "/packages/0/environmentVariables/0/default",
                json!([{"name": "MODE", "default": "sk-live-1234"}]),
                "secret",
            ),
        ];
        for (ptr, value, words) in cases {
            let mut v = good();
            let field = match ptr {
                "/packages/0/registryType" => "/packages/0/registryType",
                "/packages/0/transport" => "/packages/0/transport",
                p if p.starts_with("/packages/0/environmentVariables") => {
                    "/packages/0/environmentVariables"
                }
                p => p,
            };
            if let Some(slot) = v.pointer_mut(field) {
                *slot = value;
            }
            let text = serde_json::to_string_pretty(&v).unwrap_or_default();
            let problems = validate(&text, &Context::default());
            let p = problems.iter().find(|p| p.pointer == ptr);
            assert!(
                p.is_some_and(|p| p.message.contains(words)),
                "{ptr}: {problems:?}"
            );
            // The line and column point at the offending key's value.
            let p = p.cloned().unwrap_or_else(|| unreachable!());
            let line = text.lines().nth(p.line - 1).unwrap_or_default();
            let last = ptr.rsplit('/').next().unwrap_or_default();
            let indent = 2 * ptr.split('/').count().saturating_sub(1);
            assert!(
                line.starts_with(&format!("{}\"{last}\": ", " ".repeat(indent))),
                "{ptr}: line {line:?}"
            );
            assert_eq!(p.column, indent + last.len() + 5, "{ptr}: {line:?}");
        }
    }

    #[test]
    fn mcpb_needs_a_hash_and_a_url_with_mcp() {
        let mut v = good();
        v["packages"] = json!([{"registryType": "mcpb", "identifier": "https://x/a.zip", "transport": {"type": "stdio"}}]);
        let problems = check(&v);
        assert!(
            problems.iter().any(|p| p.message.contains("fileSha256")),
            "{problems:?}"
        );
        assert!(
            problems.iter().any(|p| p.message.contains("\"mcp\"")),
            "{problems:?}"
        );
    }

    #[test]
    fn readme_marker_must_be_visible() {
        let n = "io.github.o/x";
        assert!(readme_has_marker(
            "- MCP Registry name: `mcp-name: io.github.o/x`\n",
            n
        ));
        assert!(readme_has_marker("mcp-name: io.github.o/x\n", n));
        assert!(!readme_has_marker("<!-- mcp-name: io.github.o/x -->\n", n));
        assert!(!readme_has_marker("mcp-name: io.github.o/x.\n", n));
        assert!(!readme_has_marker("mcp-name: io.github.o/xy\n", n));
    }

    #[test]
    fn invalid_json_points_at_the_spot() {
        let p = validate("{\n  \"name\": \"a\",\n  \"x\" 1\n}", &Context::default());
        assert_eq!((p[0].line, p[0].column), (3, 7));
    }
}
