//! `mcp pack`: an MCPB bundle (the one-click install format of desktop
//! hosts) for a native server binary, and `mcp pack --check FILE`.
//!
//! The bundle is a ZIP archive (see [`crate::zip`]) with `manifest.json`
//! (manifest version 0.3: `server.type = "binary"`, the tools and prompts
//! the running server lists, `user_config` prompts for the environment
//! variables it needs, the platform it was built for) and the binary under
//! `server/`.

use crate::Common;
use crate::cargo_toml::{self, Package};
use crate::connect::{self, Target};
use crate::exit::{Failure, code};
use crate::jsonc;
use crate::registry::secret_name;
use crate::zip;
use clap::Args;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// The manifest version written.
pub const MANIFEST_VERSION: &str = "0.3";
/// Manifest versions `--check` knows.
const KNOWN_VERSIONS: [&str; 4] = ["0.1", "0.2", "0.3", "0.4"];
/// The default `--max-bytes` of `--check`: 1 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;
/// The most entries `--check` accepts.
pub const DEFAULT_MAX_ENTRIES: usize = 10_000;
/// The order manifest keys are written in.
const KEY_ORDER: &[&str] = &[
    "manifest_version",
    "name",
    "display_name",
    "version",
    "description",
    "author",
    "repository",
    "homepage",
    "license",
    "server",
    "type",
    "entry_point",
    "mcp_config",
    "command",
    "args",
    "env",
    "tools",
    "prompts",
    "user_config",
    "title",
    "required",
    "sensitive",
    "compatibility",
    "url",
];

/// Arguments of `mcp pack`.
#[derive(Debug, Args)]
pub struct PackArgs {
    /// Validate this bundle instead of building one.
    #[arg(long, value_name = "FILE.mcpb", conflicts_with_all = ["binary", "out"])]
    pub check: Option<PathBuf>,
    /// The server binary to bundle (default: the command after `--`).
    #[arg(long, value_name = "PATH")]
    pub binary: Option<PathBuf>,
    /// The bundle to write (default: NAME-VERSION.mcpb).
    #[arg(long, value_name = "FILE.mcpb")]
    pub out: Option<PathBuf>,
    /// The bundle's name (default: the crate's, else the server's).
    #[arg(long)]
    pub name: Option<String>,
    /// The author (default: the first of Cargo.toml's `authors`).
    #[arg(long)]
    pub author: Option<String>,
    /// An environment variable the server needs (repeatable): the host
    /// asks the user for it at install time (hidden input when the name
    /// looks like a secret).
    #[arg(long = "env-var", value_name = "NAME")]
    pub env_vars: Vec<String>,
    /// A directory the user chooses at install time, as KEY=PATH
    /// (repeatable): PATH is used to run the server now, and every argument
    /// equal to PATH becomes `${user_config.KEY}` in the manifest.
    #[arg(long = "user-dir", value_name = "KEY=PATH")]
    pub user_dirs: Vec<String>,
    /// The crate's Cargo.toml (default: the nearest one from the current
    /// directory up).
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// With --check: the largest bundle read, in bytes.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_BYTES)]
    pub max_bytes: u64,
    /// Replace an existing bundle.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub common: Common,
}

/// `mcp pack`.
pub async fn run(a: PackArgs) -> Result<u8, Failure> {
    if let Some(file) = &a.check {
        return check_cmd(file, a.max_bytes, a.common.json);
    }
    let mut cmd = a.common.command.clone();
    let binary = match (&a.binary, cmd.first()) {
        (Some(b), _) => b.clone(),
        (None, Some(c)) => which(c),
        (None, None) => {
            return Err(Failure::usage(
                "which server? mcp pack --binary PATH [-- PATH ARGS…] (the command is run to list its tools)",
            ));
        }
    };
    if cmd.is_empty() {
        cmd.push(binary.display().to_string());
    }
    let bin_name = binary
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Failure::usage(format!("{} is not a file name", binary.display())))?
        .to_owned();
    let bin_data = std::fs::read(&binary)
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", binary.display())))?;
    let manifest_path = match &a.manifest_path {
        Some(p) => Some(p.clone()),
        None => std::env::current_dir()
            .ok()
            .and_then(|d| cargo_toml::find(&d)),
    };
    let package = match manifest_path {
        Some(p) => Some(cargo_toml::read(&p).map_err(Failure::usage)?),
        None => None,
    };
    let user_dirs = a
        .user_dirs
        .iter()
        .map(|d| match d.split_once('=') {
            Some((k, p)) if !k.is_empty() && !p.is_empty() => Ok((k.to_owned(), p.to_owned())),
            _ => Err(Failure::usage(format!(
                "--user-dir wants KEY=PATH, not {d:?}"
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let target = Target::Command(cmd.clone());
    let client = connect::connect(&target, &a.common).await?;
    let r = async {
        let info = client
            .server_info()
            .map(|i| serde_json::to_value(i).unwrap_or_default());
        let caps = client.server_capabilities();
        let tools = if caps.tools.is_some() {
            client.list_tools().await.map_err(Failure::from)?
        } else {
            Vec::new()
        };
        let prompts = if caps.prompts.is_some() {
            client.list_prompts().await.map_err(Failure::from)?
        } else {
            Vec::new()
        };
        let tools: Vec<Value> = tools
            .iter()
            .map(|t| {
                let mut v = json!({"name": t.name});
                if let Some(d) = &t.description {
                    v["description"] = json!(d);
                }
                v
            })
            .collect();
        let prompts: Vec<Value> = prompts
            .iter()
            .map(|p| {
                let args: Vec<&str> = p
                    .arguments
                    .iter()
                    .flatten()
                    .map(|a| a.name.as_str())
                    .collect();
                let text = p.description.clone().unwrap_or_else(|| p.name.clone());
                let mut v = json!({"name": p.name, "text": text});
                if let Some(d) = &p.description {
                    v["description"] = json!(d);
                }
                if !args.is_empty() {
                    v["arguments"] = json!(args);
                }
                v
            })
            .collect();
        manifest(&ManifestInput {
            info: info.unwrap_or(Value::Null),
            package: package.as_ref(),
            name: a.name.as_deref(),
            author: a.author.as_deref(),
            bin_name: &bin_name,
            args: cmd.get(1..).unwrap_or_default(),
            env_vars: &a.env_vars,
            user_dirs: &user_dirs,
            tools,
            prompts,
        })
        .map_err(Failure::usage)
    }
    .await;
    connect::close(&client, &r).await;
    let m = r?;
    let out = a.out.clone().unwrap_or_else(|| {
        PathBuf::from(format!(
            "{}-{}.mcpb",
            m["name"].as_str().unwrap_or("server"),
            m["version"].as_str().unwrap_or("0")
        ))
    });
    if out.exists() && !a.force {
        return Err(Failure::usage(format!(
            "{} exists; use --force to replace it",
            out.display()
        )));
    }
    let archive = zip::write(&[
        zip::Entry {
            name: "manifest.json".into(),
            mode: 0o644,
            data: jsonc::pretty_ordered(&m, KEY_ORDER).into_bytes(),
            method: 0,
        },
        zip::Entry {
            name: format!("server/{bin_name}"),
            mode: 0o755,
            data: bin_data,
            method: 0,
        },
    ])
    .map_err(Failure::usage)?;
    std::fs::write(&out, &archive)
        .map_err(|e| Failure::transport(format!("cannot write {}: {e}", out.display())))?;
    let sha = crate::registry::sha256_file(&out)?;
    eprintln!("mcp: wrote {} (sha256 {sha})", out.display());
    Ok(code::OK)
}

/// `PATH`-resolved program (as given when not found).
fn which(program: &str) -> PathBuf {
    let p = Path::new(program);
    if p.components().count() > 1 {
        return p.to_owned();
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|d| d.join(program))
        .find(|c| c.is_file())
        .unwrap_or_else(|| p.to_owned())
}

/// The MCPB platform of this build.
fn platform() -> &'static str {
    if cfg!(windows) {
        "win32"
    } else if cfg!(target_os = "macos") {
        "darwin"
    } else {
        "linux"
    }
}

/// What a manifest is made from.
pub struct ManifestInput<'a> {
    /// The server's `serverInfo` (JSON, camelCase), or null.
    pub info: Value,
    /// The crate, when a Cargo.toml was found.
    pub package: Option<&'a Package>,
    /// `--name`.
    pub name: Option<&'a str>,
    /// `--author`.
    pub author: Option<&'a str>,
    /// The binary's file name.
    pub bin_name: &'a str,
    /// Its arguments.
    pub args: &'a [String],
    /// Environment variables asked of the user.
    pub env_vars: &'a [String],
    /// Directories chosen by the user: key and the path used now.
    pub user_dirs: &'a [(String, String)],
    /// `[{name, description}]`.
    pub tools: Vec<Value>,
    /// `[{name, description, arguments, text}]`.
    pub prompts: Vec<Value>,
}

/// The `user_config` key for an environment variable.
fn config_key(var: &str) -> String {
    var.to_ascii_lowercase()
}

/// Builds `manifest.json`.
pub fn manifest(i: &ManifestInput<'_>) -> Result<Value, String> {
    let s = |k: &str| i.info.get(k).and_then(Value::as_str).map(str::to_owned);
    let pkg = i.package;
    let name = i
        .name
        .map(str::to_owned)
        .or_else(|| pkg.map(|p| p.name.clone()))
        .or_else(|| s("name"))
        .ok_or("no name: give --name")?;
    let version = pkg
        .and_then(|p| p.version.clone())
        .or_else(|| s("version"))
        .ok_or("no version (neither Cargo.toml nor the server gives one)")?;
    let description = s("description")
        .or_else(|| pkg.and_then(|p| p.description.clone()))
        .ok_or("no description (neither the server nor Cargo.toml gives one)")?;
    let author = i
        .author
        .map(str::to_owned)
        .or_else(|| pkg.and_then(|p| p.authors.first().cloned()))
        .or_else(|| pkg.and_then(Package::github_owner))
        .ok_or("no author: give --author NAME (or set `authors` in Cargo.toml)")?;
    // "Name <email>" → name and email.
    let author = match author.split_once('<') {
        Some((n, rest)) => json!({
            "name": n.trim(),
            "email": rest.trim_end_matches('>').trim(),
        }),
        None => json!({"name": author}),
    };
    let mut env = Map::new();
    let mut user_config = Map::new();
    for var in i.env_vars {
        let key = config_key(var);
        env.insert(var.clone(), json!(format!("${{user_config.{key}}}")));
        user_config.insert(
            key,
            json!({
                "type": "string",
                "title": var,
                "description": format!("The {var} environment variable of the server"),
                "required": true,
                "sensitive": secret_name(var),
            }),
        );
    }
    let mut args: Vec<String> = i.args.to_vec();
    for (key, path) in i.user_dirs {
        let mut used = false;
        for a in args.iter_mut().filter(|a| *a == path) {
            *a = format!("${{user_config.{key}}}");
            used = true;
        }
        if !used {
            return Err(format!("--user-dir {key}={path}: no argument is {path:?}"));
        }
        user_config.insert(
            key.clone(),
            json!({
                "type": "directory",
                "title": key,
                "description": format!("The directory given to the server as {key}"),
                "required": true,
            }),
        );
    }
    let mut mcp_config = json!({
        "command": format!("${{__dirname}}/server/{}", i.bin_name),
        "args": args,
    });
    if !env.is_empty() {
        mcp_config["env"] = Value::Object(env);
    }
    let mut m = Map::new();
    m.insert("manifest_version".into(), json!(MANIFEST_VERSION));
    m.insert("name".into(), json!(name));
    if let Some(t) = s("title") {
        m.insert("display_name".into(), json!(t));
    }
    m.insert("version".into(), json!(version));
    m.insert("description".into(), json!(description));
    m.insert("author".into(), author);
    if let Some(r) = pkg.and_then(|p| p.repository.clone()) {
        m.insert("repository".into(), json!({"type": "git", "url": r}));
    }
    if let Some(h) = s("websiteUrl").or_else(|| pkg.and_then(|p| p.homepage.clone())) {
        m.insert("homepage".into(), json!(h));
    }
    if let Some(l) = pkg.and_then(|p| p.license.clone()) {
        m.insert("license".into(), json!(l));
    }
    m.insert(
        "server".into(),
        json!({
            "type": "binary",
            "entry_point": format!("server/{}", i.bin_name),
            "mcp_config": mcp_config,
        }),
    );
    if !i.tools.is_empty() {
        m.insert("tools".into(), json!(i.tools));
    }
    if !i.prompts.is_empty() {
        m.insert("prompts".into(), json!(i.prompts));
    }
    if !user_config.is_empty() {
        m.insert("user_config".into(), Value::Object(user_config));
    }
    m.insert("compatibility".into(), json!({"platforms": [platform()]}));
    Ok(Value::Object(m))
}

/// Problems of a bundle's manifest and contents (empty: it passes).
pub fn check_manifest(text: &str, entries: &[zip::Entry]) -> Vec<String> {
    let mut problems = Vec::new();
    let v: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return vec![format!(
                "manifest.json:{}:{}: not valid JSON: {e}",
                e.line(),
                e.column()
            )];
        }
    };
    let mut add = |path: &[&str], msg: String| {
        let p: Vec<String> = path.iter().map(|s| (*s).to_owned()).collect();
        let (l, c) = jsonc::line_col(text, jsonc::locate(text, &p));
        problems.push(format!("manifest.json:{l}:{c}: /{}: {msg}", path.join("/")));
    };
    let str_at = |p: &str| v.pointer(p).and_then(Value::as_str);
    match str_at("/manifest_version").or_else(|| str_at("/dxt_version")) {
        Some(mv) if KNOWN_VERSIONS.contains(&mv) => {}
        Some(mv) => add(
            &["manifest_version"],
            format!("unknown manifest version {mv:?}"),
        ),
        None => add(&[], "missing \"manifest_version\"".into()),
    }
    for k in ["name", "version", "description"] {
        if str_at(&format!("/{k}")).is_none_or(str::is_empty) {
            add(&[k], format!("missing or empty \"{k}\""));
        }
    }
    if str_at("/author/name").is_none() {
        add(&["author"], "\"author\" needs a \"name\"".into());
    }
    match str_at("/server/type") {
        Some("binary" | "node" | "python") => {}
        _ => add(
            &["server", "type"],
            "server.type must be binary, node or python".into(),
        ),
    }
    match str_at("/server/entry_point") {
        Some(ep) => match entries.iter().find(|e| e.name == ep) {
            None => add(
                &["server", "entry_point"],
                format!("{ep} is not in the bundle"),
            ),
            Some(e) if str_at("/server/type") == Some("binary") && e.mode & 0o111 == 0 => add(
                &["server", "entry_point"],
                format!("{ep} is not executable in the bundle"),
            ),
            Some(_) => {}
        },
        None => add(&["server"], "missing \"entry_point\"".into()),
    }
    if str_at("/server/mcp_config/command").is_none() {
        add(&["server", "mcp_config"], "missing \"command\"".into());
    }
    // Every ${user_config.KEY} the config uses is declared.
    let config = v
        .pointer("/server/mcp_config")
        .map(Value::to_string)
        .unwrap_or_default();
    let declared = v.get("user_config").and_then(Value::as_object);
    for part in config.split("${user_config.").skip(1) {
        let key = part.split('}').next().unwrap_or_default();
        if !declared.is_some_and(|d| d.contains_key(key)) {
            add(
                &["server", "mcp_config"],
                format!("uses ${{user_config.{key}}}, which user_config does not declare"),
            );
        }
    }
    for (k, c) in declared.into_iter().flatten() {
        for f in ["type", "title", "description"] {
            if !c.get(f).is_some_and(Value::is_string) {
                add(&["user_config", k], format!("needs a string \"{f}\""));
            }
        }
    }
    for (list, need) in [("tools", &["name"][..]), ("prompts", &["name", "text"][..])] {
        for (n, item) in v
            .get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            for f in need {
                if !item.get(*f).is_some_and(Value::is_string) {
                    add(&[list, &n.to_string()], format!("needs a string \"{f}\""));
                }
            }
        }
    }
    for (n, p) in v
        .pointer("/compatibility/platforms")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if !p
            .as_str()
            .is_some_and(|p| ["darwin", "win32", "linux"].contains(&p))
        {
            add(
                &["compatibility", "platforms", &n.to_string()],
                "platform must be darwin, win32 or linux".into(),
            );
        }
    }
    problems
}

/// Checks a bundle file: the archive, then the manifest.
pub fn check_file(file: &Path, max_bytes: u64) -> Result<(Value, Vec<String>), Failure> {
    let size = std::fs::metadata(file)
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", file.display())))?
        .len();
    if size > max_bytes {
        return Err(Failure::usage(format!(
            "{} is {size} bytes, more than --max-bytes {max_bytes}",
            file.display()
        )));
    }
    let bytes = std::fs::read(file)
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", file.display())))?;
    let entries = zip::read(&bytes, DEFAULT_MAX_ENTRIES)
        .map_err(|e| Failure::usage(format!("{}: {e}", file.display())))?;
    let Some(m) = entries.iter().find(|e| e.name == "manifest.json") else {
        return Err(Failure::usage(format!(
            "{} has no manifest.json",
            file.display()
        )));
    };
    if m.method != 0 {
        return Err(Failure::usage(format!(
            "{}: manifest.json is compressed (method {}); this checker reads stored entries only",
            file.display(),
            m.method
        )));
    }
    let text = String::from_utf8_lossy(&m.data).into_owned();
    let problems = check_manifest(&text, &entries);
    let v = serde_json::from_str(&text).unwrap_or(Value::Null);
    Ok((v, problems))
}

fn check_cmd(file: &Path, max_bytes: u64, json_out: bool) -> Result<u8, Failure> {
    let (manifest, problems) = check_file(file, max_bytes)?;
    if json_out {
        crate::output::print_json(&json!({
            "valid": problems.is_empty(),
            "problems": problems,
            "manifest": manifest,
        }))?;
    } else {
        for p in &problems {
            eprintln!("{}: {p}", file.display());
        }
    }
    if problems.is_empty() {
        if !json_out {
            eprintln!("mcp: {} is a valid bundle", file.display());
        }
        Ok(code::OK)
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

    fn input<'a>(env: &'a [String], args: &'a [String]) -> ManifestInput<'a> {
        ManifestInput {
            info: json!({"name": "s", "version": "1.0.0", "description": "d", "title": "S"}),
            package: None,
            name: None,
            author: Some("Ann <ann@example.com>"),
            bin_name: "srv",
            args,
            env_vars: env,
            user_dirs: &[],
            tools: vec![json!({"name": "t"})],
            prompts: vec![json!({"name": "p", "text": "p"})],
        }
    }

    fn bundle(m: &Value, mode: u32) -> Vec<zip::Entry> {
        vec![
            zip::Entry {
                name: "manifest.json".into(),
                mode: 0o644,
                data: jsonc::pretty_ordered(m, KEY_ORDER).into_bytes(),
                method: 0,
            },
            zip::Entry {
                name: "server/srv".into(),
                mode,
                data: vec![1],
                method: 0,
            },
        ]
    }

    #[test]
    fn a_built_manifest_passes_its_check() {
        let env = vec!["API_TOKEN".to_owned()];
        let args = vec!["--stdio".to_owned()];
        let m = manifest(&input(&env, &args)).unwrap_or_default();
        assert_eq!(m["user_config"]["api_token"]["sensitive"], true);
        assert_eq!(
            m["server"]["mcp_config"]["env"]["API_TOKEN"],
            "${user_config.api_token}"
        );
        assert_eq!(
            m["author"],
            json!({"name": "Ann", "email": "ann@example.com"})
        );
        let es = bundle(&m, 0o755);
        let text = String::from_utf8_lossy(&es[0].data).into_owned();
        assert_eq!(check_manifest(&text, &es), Vec::<String>::new());
    }

    #[test]
    fn user_dirs_become_user_config() {
        let args = vec!["serve".to_owned(), "docs".to_owned(), "/my/docs".to_owned()];
        let dirs = vec![("docs_dir".to_owned(), "/my/docs".to_owned())];
        let mut i = input(&[], &args);
        i.user_dirs = &dirs;
        let m = manifest(&i).unwrap_or_default();
        assert_eq!(
            m["server"]["mcp_config"]["args"],
            json!(["serve", "docs", "${user_config.docs_dir}"])
        );
        assert_eq!(m["user_config"]["docs_dir"]["type"], "directory");
        let es = bundle(&m, 0o755);
        let text = String::from_utf8_lossy(&es[0].data).into_owned();
        assert_eq!(check_manifest(&text, &es), Vec::<String>::new());
        let wrong = vec![("d".to_owned(), "/elsewhere".to_owned())];
        i.user_dirs = &wrong;
        assert!(manifest(&i).is_err());
    }

    #[test]
    fn check_finds_each_problem_with_a_line() {
        let m = manifest(&input(&[], &[])).unwrap_or_default();
        let mut bad = m.clone();
        bad["server"]["mcp_config"]["env"] = json!({"K": "${user_config.k}"});
        bad["compatibility"]["platforms"] = json!(["beos"]);
        bad["author"] = json!({});
        let es = bundle(&bad, 0o644);
        let text = String::from_utf8_lossy(&es[0].data).into_owned();
        let p = check_manifest(&text, &es);
        assert!(p.iter().any(|p| p.contains("user_config.k")), "{p:?}");
        assert!(
            p.iter().any(|p| p.contains("/compatibility/platforms/0")),
            "{p:?}"
        );
        assert!(p.iter().any(|p| p.contains("/author:")), "{p:?}");
        assert!(p.iter().any(|p| p.contains("not executable")), "{p:?}");
        assert!(p.iter().all(|p| p.starts_with("manifest.json:")), "{p:?}");
        let mut gone = bundle(&m, 0o755);
        gone.pop();
        let text = String::from_utf8_lossy(&gone[0].data).into_owned();
        assert!(
            check_manifest(&text, &gone)
                .iter()
                .any(|p| p.contains("not in the bundle"))
        );
    }
}
