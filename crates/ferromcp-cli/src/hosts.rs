//! `mcp add`, `mcp remove`, `mcp hosts`: servers in the configuration files
//! of MCP hosts (Claude Desktop, Claude Code, VS Code, Cursor, Windsurf,
//! Zed), each in its own format at its own path.
//!
//! Files are edited in place (see [`crate::jsonc`]): other entries, other
//! settings, key order and comments outside the edited entry survive. The
//! previous file is kept as `FILE.bak`, and the new one replaces it by an
//! atomic rename.

use crate::connect::is_url;
use crate::exit::{Failure, code};
use crate::jsonc;
use clap::{Args, ValueEnum};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A host application whose configuration `mcp add` edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Host {
    /// Claude Desktop (`claude_desktop_config.json`, stdio servers only).
    ClaudeDesktop,
    /// Claude Code (`~/.claude.json`, or `.mcp.json` in the project).
    ClaudeCode,
    /// VS Code (`mcp.json`, or `.vscode/mcp.json` in the project).
    Vscode,
    /// Cursor (`~/.cursor/mcp.json`, or `.cursor/mcp.json`).
    Cursor,
    /// Windsurf (`~/.codeium/windsurf/mcp_config.json`).
    Windsurf,
    /// Zed (`settings.json`, or `.zed/settings.json` in the project).
    Zed,
}

/// Every host, in the order `mcp hosts` lists them.
pub const ALL: [Host; 6] = [
    Host::ClaudeDesktop,
    Host::ClaudeCode,
    Host::Vscode,
    Host::Cursor,
    Host::Windsurf,
    Host::Zed,
];

/// Whose configuration: the user's, or the current project's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Scope {
    /// The user's configuration (every project).
    #[default]
    User,
    /// The project in the current directory (a file meant for version
    /// control; do not put secrets there).
    Project,
}

/// The operating system's conventions for configuration paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    /// Linux and other Unix systems (XDG).
    Linux,
    /// macOS (`~/Library/Application Support`).
    Mac,
    /// Windows (`%APPDATA%`).
    Windows,
}

impl Os {
    /// The system this binary runs on.
    pub fn current() -> Self {
        if cfg!(windows) {
            Os::Windows
        } else if cfg!(target_os = "macos") {
            Os::Mac
        } else {
            Os::Linux
        }
    }
}

/// The directories configuration paths are built from.
#[derive(Debug, Clone)]
pub struct Roots {
    /// The home directory.
    pub home: PathBuf,
    /// `%APPDATA%` (Windows).
    pub appdata: PathBuf,
    /// `$XDG_CONFIG_HOME` (Linux).
    pub xdg_config: PathBuf,
    /// The project directory (for `--scope project`).
    pub project: PathBuf,
}

/// The environment variable that replaces the home directory (and with it
/// `%APPDATA%` and `$XDG_CONFIG_HOME`, taken beneath it) for tests and
/// sandboxes: no real configuration is touched.
pub const HOME_OVERRIDE: &str = "MCP_HOSTS_HOME";

impl Roots {
    /// The roots from the environment (`MCP_HOSTS_HOME` first).
    pub fn from_env() -> Result<Self, Failure> {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let project = std::env::current_dir()
            .map_err(|e| Failure::transport(format!("cannot read the current directory: {e}")))?;
        if let Some(home) = var(HOME_OVERRIDE) {
            return Ok(Self {
                appdata: home.join("AppData").join("Roaming"),
                xdg_config: home.join(".config"),
                home,
                project,
            });
        }
        let home = var("HOME")
            .or_else(|| var("USERPROFILE"))
            .ok_or_else(|| Failure::usage("no home directory: set HOME (or MCP_HOSTS_HOME)"))?;
        Ok(Self {
            appdata: var("APPDATA").unwrap_or_else(|| home.join("AppData").join("Roaming")),
            xdg_config: var("XDG_CONFIG_HOME").unwrap_or_else(|| home.join(".config")),
            home,
            project,
        })
    }
}

impl Host {
    /// The name on the command line.
    pub fn id(self) -> &'static str {
        match self {
            Host::ClaudeDesktop => "claude-desktop",
            Host::ClaudeCode => "claude-code",
            Host::Vscode => "vscode",
            Host::Cursor => "cursor",
            Host::Windsurf => "windsurf",
            Host::Zed => "zed",
        }
    }

    /// The object holding the servers, from the file's root.
    pub fn container(self) -> &'static str {
        match self {
            Host::Vscode => "servers",
            Host::Zed => "context_servers",
            _ => "mcpServers",
        }
    }

    /// Whether the host connects to Streamable HTTP servers itself.
    pub fn speaks_http(self) -> bool {
        self != Host::ClaudeDesktop
    }

    /// The configuration file for `scope` on `os`.
    pub fn path(self, scope: Scope, os: Os, r: &Roots) -> Result<PathBuf, String> {
        let app_support = r.home.join("Library").join("Application Support");
        let p = match (self, scope) {
            (Host::ClaudeDesktop, Scope::User) => match os {
                Os::Mac => app_support.join("Claude"),
                Os::Windows => r.appdata.join("Claude"),
                Os::Linux => r.xdg_config.join("Claude"),
            }
            .join("claude_desktop_config.json"),
            (Host::ClaudeCode, Scope::User) => r.home.join(".claude.json"),
            (Host::ClaudeCode, Scope::Project) => r.project.join(".mcp.json"),
            (Host::Vscode, Scope::User) => match os {
                Os::Mac => app_support.join("Code"),
                Os::Windows => r.appdata.join("Code"),
                Os::Linux => r.xdg_config.join("Code"),
            }
            .join("User")
            .join("mcp.json"),
            (Host::Vscode, Scope::Project) => r.project.join(".vscode").join("mcp.json"),
            (Host::Cursor, Scope::User) => r.home.join(".cursor").join("mcp.json"),
            (Host::Cursor, Scope::Project) => r.project.join(".cursor").join("mcp.json"),
            (Host::Windsurf, Scope::User) => r
                .home
                .join(".codeium")
                .join("windsurf")
                .join("mcp_config.json"),
            (Host::Zed, Scope::User) => match os {
                Os::Windows => r.appdata.join("Zed"),
                Os::Mac | Os::Linux => r.xdg_config.join("zed"),
            }
            .join("settings.json"),
            (Host::Zed, Scope::Project) => r.project.join(".zed").join("settings.json"),
            (Host::ClaudeDesktop | Host::Windsurf, Scope::Project) => {
                return Err(format!(
                    "{} has no project configuration; use --scope user",
                    self.id()
                ));
            }
        };
        Ok(p)
    }
}

/// How the host reaches the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launch {
    /// A command speaking stdio.
    Command(Vec<String>),
    /// A Streamable HTTP URL the host connects to itself.
    Url(String),
}

/// What `mcp add` writes.
#[derive(Debug, Clone)]
pub struct Server {
    /// How the host reaches it.
    pub launch: Launch,
    /// Environment variables for a command.
    pub env: Vec<(String, String)>,
    /// HTTP headers for a URL.
    pub headers: Vec<(String, String)>,
}

/// A remote `url` as a local `mcp bridge` command, headers as `--header`.
pub fn bridged(mcp: &str, url: &str, headers: &[(String, String)]) -> Vec<String> {
    let mut cmd = vec![mcp.to_owned(), "bridge".to_owned(), url.to_owned()];
    for (k, v) in headers {
        cmd.push("--header".to_owned());
        cmd.push(format!("{k}: {v}"));
    }
    cmd
}

fn object(pairs: &[(String, String)]) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

/// The host's entry for `s`, keys in the order they are written. A URL for
/// a host that only starts stdio servers must have been bridged before.
pub fn entry(host: Host, s: &Server) -> Result<Vec<(String, Value)>, String> {
    let mut e: Vec<(String, Value)> = Vec::new();
    let mut put = |k: &str, v: Value| e.push((k.to_owned(), v));
    match &s.launch {
        Launch::Command(cmd) => {
            let Some((program, args)) = cmd.split_first() else {
                return Err("empty server command after `--`".to_owned());
            };
            if matches!(host, Host::ClaudeCode | Host::Vscode) {
                put("type", json!("stdio"));
            }
            put("command", json!(program));
            put("args", json!(args));
            if !s.env.is_empty() {
                put("env", object(&s.env));
            }
        }
        Launch::Url(url) => {
            match host {
                Host::ClaudeDesktop => {
                    return Err("Claude Desktop only starts stdio servers".to_owned());
                }
                Host::ClaudeCode | Host::Vscode => {
                    put("type", json!("http"));
                    put("url", json!(url));
                }
                Host::Windsurf => put("serverUrl", json!(url)),
                Host::Cursor | Host::Zed => put("url", json!(url)),
            }
            if !s.headers.is_empty() {
                put("headers", object(&s.headers));
            }
        }
    }
    Ok(e)
}

/// Arguments of `mcp add`.
#[derive(Debug, Args)]
pub struct AddArgs {
    /// The server's name in the host's configuration.
    pub name: String,
    /// The server's Streamable HTTP URL (or give a command after `--`).
    #[arg(value_name = "URL")]
    pub url: Option<String>,
    /// The host whose configuration is edited.
    #[arg(long, value_enum)]
    pub host: Host,
    /// The user's configuration or the current project's.
    #[arg(long, value_enum, default_value_t = Scope::User)]
    pub scope: Scope,
    /// An environment variable for the server command (repeatable).
    /// Stored in plain text in the host's file.
    #[arg(long = "env", short = 'e', value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// An HTTP header for a URL, as 'Name: value' (repeatable). Stored in
    /// plain text in the host's file.
    #[arg(long = "header", short = 'H', value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// Reach a URL through `mcp bridge` (a stdio server the host starts)
    /// even when the host speaks HTTP itself.
    #[arg(long)]
    pub via_bridge: bool,
    /// Replace an existing entry of the same name.
    #[arg(long)]
    pub force: bool,
    /// The server command (stdio), after `--`.
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// Arguments of `mcp remove`.
#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// The server's name in the host's configuration.
    pub name: String,
    /// The host whose configuration is edited.
    #[arg(long, value_enum)]
    pub host: Host,
    /// The user's configuration or the current project's.
    #[arg(long, value_enum, default_value_t = Scope::User)]
    pub scope: Scope,
}

/// Arguments of `mcp hosts`.
#[derive(Debug, Args)]
pub struct HostsArgs {
    /// Machine-readable JSON output.
    #[arg(long)]
    pub json: bool,
}

fn parse_env(pairs: &[String]) -> Result<Vec<(String, String)>, Failure> {
    pairs
        .iter()
        .map(|p| match p.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
            _ => Err(Failure::usage(format!("--env wants KEY=VALUE, not {p:?}"))),
        })
        .collect()
}

fn parse_headers(pairs: &[String]) -> Result<Vec<(String, String)>, Failure> {
    pairs
        .iter()
        .map(|p| match p.split_once(':') {
            Some((k, v)) if !k.trim().is_empty() => {
                Ok((k.trim().to_owned(), v.trim_start().to_owned()))
            }
            _ => Err(Failure::usage(
                "--header wants 'Name: value' (the value is not shown here)",
            )),
        })
        .collect()
}

/// The command hosts start for `mcp bridge`: this binary's absolute path
/// (hosts such as Claude Desktop do not see the shell's PATH), else `mcp`.
fn mcp_program() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.to_str().map(str::to_owned))
        .unwrap_or_else(|| "mcp".to_owned())
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> Failure {
    Failure::transport(format!("cannot {what} {}: {e}", path.display()))
}

/// Reads the file (empty when it does not exist).
fn read(path: &Path) -> Result<Option<String>, Failure> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err("read", path, e)),
    }
}

/// Writes `text` to `path`: the old file is kept as `FILE.bak`, the new one
/// is written beside it and renamed over it. A symbolic link is followed
/// (the file it points to is replaced; the link stays).
fn write(path: &Path, old: Option<&str>, text: &str) -> Result<(), Failure> {
    let resolved;
    let path = match std::fs::canonicalize(path) {
        Ok(p) if old.is_some() => {
            resolved = p;
            resolved.as_path()
        }
        _ => path,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| io_err("create", dir, e))?;
    }
    let with_suffix = |s: &str| {
        let mut p = path.as_os_str().to_owned();
        p.push(s);
        PathBuf::from(p)
    };
    if old.is_some() {
        let bak = with_suffix(".bak");
        std::fs::copy(path, &bak).map_err(|e| io_err("back up to", &bak, e))?;
    }
    let tmp = with_suffix(&format!(".mcp-tmp-{}", std::process::id()));
    let result = (|| {
        std::fs::write(&tmp, text).map_err(|e| io_err("write", &tmp, e))?;
        // Keep the old file's permissions (a private config stays private).
        if let Ok(meta) = std::fs::metadata(path) {
            let _ = std::fs::set_permissions(&tmp, meta.permissions());
        }
        std::fs::rename(&tmp, path).map_err(|e| io_err("replace", path, e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn bad_file(path: &Path, e: &str) -> Failure {
    Failure::usage(format!(
        "{} is not valid JSON ({e}); it was left unchanged",
        path.display()
    ))
}

/// `mcp add`.
pub fn add(a: AddArgs) -> Result<u8, Failure> {
    add_with(a, &Roots::from_env()?, Os::current(), &mcp_program())
}

/// `mcp add` with explicit roots, OS and bridge program.
pub fn add_with(a: AddArgs, roots: &Roots, os: Os, mcp: &str) -> Result<u8, Failure> {
    let env = parse_env(&a.env)?;
    let headers = parse_headers(&a.headers)?;
    let secrets = !env.is_empty() || !headers.is_empty();
    let launch = match (a.url, a.command.is_empty()) {
        (Some(u), true) if is_url(&u) => Launch::Url(u),
        (Some(u), true) => {
            return Err(Failure::usage(format!(
                "{u:?} is not an http(s) URL; give a command after `--` for a local server"
            )));
        }
        (None, false) => Launch::Command(a.command),
        (Some(_), false) => {
            return Err(Failure::usage(
                "give either a URL or a command after `--`, not both",
            ));
        }
        (None, true) => {
            return Err(Failure::usage(
                "no server: give a URL or a command after `--` (mcp add NAME --host H -- CMD ARGS…)",
            ));
        }
    };
    let launch = match launch {
        Launch::Url(u) if a.via_bridge || !a.host.speaks_http() => {
            if !a.host.speaks_http() {
                eprintln!(
                    "mcp: {} only starts stdio servers: adding {u} through `mcp bridge`",
                    a.host.id()
                );
            }
            Launch::Command(bridged(mcp, &u, &headers))
        }
        Launch::Url(_) if !env.is_empty() => {
            return Err(Failure::usage(
                "--env is for a server command; a URL takes --header",
            ));
        }
        Launch::Command(_) if !headers.is_empty() => {
            return Err(Failure::usage(
                "--header is for a URL; a server command takes --env",
            ));
        }
        l => l,
    };
    let headers = if matches!(launch, Launch::Url(_)) {
        headers
    } else {
        Vec::new()
    };
    if secrets {
        eprintln!(
            "mcp: warning: --env and --header values are stored in plain text in the host's configuration file"
        );
    }
    let server = Server {
        launch,
        env,
        headers,
    };
    let path = a.host.path(a.scope, os, roots).map_err(Failure::usage)?;
    let old = read(&path)?;
    let text = old.clone().unwrap_or_default();
    let container = [a.host.container()];
    let exists = jsonc::has_member(&text, &container, &a.name).map_err(|e| bad_file(&path, &e))?;
    if exists && !a.force {
        return Err(Failure::new(
            code::USAGE,
            format!(
                "{} already has a server named {:?} in {}; use --force to replace it",
                a.host.id(),
                a.name,
                path.display()
            ),
        ));
    }
    let e = entry(a.host, &server).map_err(Failure::usage)?;
    let new = jsonc::set_member(&text, &container, &a.name, &e).map_err(|e| bad_file(&path, &e))?;
    write(&path, old.as_deref(), &new)?;
    eprintln!(
        "mcp: {} {:?} in {}",
        if exists { "replaced" } else { "added" },
        a.name,
        path.display()
    );
    Ok(code::OK)
}

/// `mcp remove`.
pub fn remove(a: RemoveArgs) -> Result<u8, Failure> {
    remove_with(a, &Roots::from_env()?, Os::current())
}

/// `mcp remove` with explicit roots and OS.
pub fn remove_with(a: RemoveArgs, roots: &Roots, os: Os) -> Result<u8, Failure> {
    let path = a.host.path(a.scope, os, roots).map_err(Failure::usage)?;
    let not_there = || {
        Failure::usage(format!(
            "{} has no server named {:?} in {}",
            a.host.id(),
            a.name,
            path.display()
        ))
    };
    let Some(old) = read(&path)? else {
        return Err(not_there());
    };
    let new = jsonc::remove_member(&old, &[a.host.container()], &a.name)
        .map_err(|e| bad_file(&path, &e))?
        .ok_or_else(not_there)?;
    write(&path, Some(&old), &new)?;
    eprintln!("mcp: removed {:?} from {}", a.name, path.display());
    Ok(code::OK)
}

/// `mcp hosts`: each host's configuration files that exist, and their
/// servers.
pub fn hosts(a: HostsArgs) -> Result<u8, Failure> {
    let report = hosts_report(&Roots::from_env()?, Os::current());
    if a.json {
        crate::output::print_json(&report)?;
        return Ok(code::OK);
    }
    let mut any = false;
    for f in report.as_array().into_iter().flatten() {
        any = true;
        let host = f["host"].as_str().unwrap_or_default();
        let scope = f["scope"].as_str().unwrap_or_default();
        let path = f["path"].as_str().unwrap_or_default();
        out!("{host} ({scope}): {path}");
        if let Some(e) = f["error"].as_str() {
            out!("  error: {e}");
        }
        for s in f["servers"].as_array().into_iter().flatten() {
            out!(
                "  {}  {}",
                s["name"].as_str().unwrap_or_default(),
                s["target"].as_str().unwrap_or_default()
            );
        }
    }
    if !any {
        out!("no host configuration found");
    }
    Ok(code::OK)
}

/// What an entry starts, in one line.
fn target_of(v: &Value) -> String {
    let s = |k: &str| v.get(k).and_then(Value::as_str);
    if let Some(u) = s("url").or_else(|| s("serverUrl")) {
        return u.to_owned();
    }
    let mut parts: Vec<String> = s("command").map(str::to_owned).into_iter().collect();
    // Zed's older form: "command": {"path", "args"}.
    if let Some(p) = v.pointer("/command/path").and_then(Value::as_str) {
        parts.push(p.to_owned());
    }
    let args = v
        .get("args")
        .or_else(|| v.pointer("/command/args"))
        .and_then(Value::as_array);
    // Header values (tokens) are not shown: only their names.
    let mut after_header = false;
    for a in args.into_iter().flatten().filter_map(Value::as_str) {
        if after_header {
            let name = a.split_once(':').map_or("", |(n, _)| n);
            parts.push(format!("{name}: …"));
        } else {
            parts.push(a.to_owned());
        }
        after_header = a == "--header" || a == "-H";
    }
    parts.join(" ")
}

/// The report of [`hosts`], as JSON.
pub fn hosts_report(roots: &Roots, os: Os) -> Value {
    let mut files = Vec::new();
    for host in ALL {
        for scope in [Scope::User, Scope::Project] {
            let Ok(path) = host.path(scope, os, roots) else {
                continue;
            };
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(_) => continue,
            };
            let mut f = json!({
                "host": host.id(),
                "scope": if scope == Scope::User { "user" } else { "project" },
                "path": path.display().to_string(),
                "servers": [],
            });
            match jsonc::parse(&text) {
                Ok(v) => {
                    let servers: Vec<Value> = v
                        .get(host.container())
                        .and_then(Value::as_object)
                        .into_iter()
                        .flatten()
                        .map(|(name, e)| json!({"name": name, "target": target_of(e)}))
                        .collect();
                    f["servers"] = Value::Array(servers);
                }
                Err(e) => f["error"] = json!(e),
            }
            files.push(f);
        }
    }
    Value::Array(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots(home: &str, appdata: &str) -> Roots {
        Roots {
            home: PathBuf::from(home),
            appdata: PathBuf::from(appdata),
            xdg_config: PathBuf::from(home).join(".config"),
            project: PathBuf::from("/proj"),
        }
    }

    #[test]
    fn paths_per_os() {
        let r = roots("/home/me", "/unused");
        let p = |h: Host, s: Scope, os: Os| h.path(s, os, &r).unwrap_or_default();
        assert_eq!(
            p(Host::ClaudeDesktop, Scope::User, Os::Linux),
            PathBuf::from("/home/me/.config/Claude/claude_desktop_config.json")
        );
        assert_eq!(
            p(Host::ClaudeDesktop, Scope::User, Os::Mac),
            PathBuf::from("/home/me/Library/Application Support/Claude/claude_desktop_config.json")
        );
        assert_eq!(
            p(Host::Vscode, Scope::User, Os::Mac),
            PathBuf::from("/home/me/Library/Application Support/Code/User/mcp.json")
        );
        assert_eq!(
            p(Host::Vscode, Scope::Project, Os::Linux),
            PathBuf::from("/proj/.vscode/mcp.json")
        );
        assert_eq!(
            p(Host::ClaudeCode, Scope::User, Os::Windows),
            PathBuf::from("/home/me/.claude.json")
        );
        assert_eq!(
            p(Host::ClaudeCode, Scope::Project, Os::Mac),
            PathBuf::from("/proj/.mcp.json")
        );
        assert_eq!(
            p(Host::Cursor, Scope::Project, Os::Linux),
            PathBuf::from("/proj/.cursor/mcp.json")
        );
        assert_eq!(
            p(Host::Windsurf, Scope::User, Os::Linux),
            PathBuf::from("/home/me/.codeium/windsurf/mcp_config.json")
        );
        assert_eq!(
            p(Host::Zed, Scope::User, Os::Mac),
            PathBuf::from("/home/me/.config/zed/settings.json")
        );
        assert!(
            Host::ClaudeDesktop
                .path(Scope::Project, Os::Linux, &r)
                .is_err()
        );
        assert!(Host::Windsurf.path(Scope::Project, Os::Linux, &r).is_err());
    }

    #[test]
    fn windows_paths_live_under_appdata() {
        let appdata = r"C:\Users\me\AppData\Roaming";
        let r = roots(r"C:\Users\me", appdata);
        for (host, dir, file) in [
            (Host::ClaudeDesktop, "Claude", "claude_desktop_config.json"),
            (Host::Zed, "Zed", "settings.json"),
        ] {
            let p = host.path(Scope::User, Os::Windows, &r).unwrap_or_default();
            assert_eq!(p, PathBuf::from(appdata).join(dir).join(file));
        }
        let p = Host::Vscode
            .path(Scope::User, Os::Windows, &r)
            .unwrap_or_default();
        assert_eq!(
            p,
            PathBuf::from(appdata)
                .join("Code")
                .join("User")
                .join("mcp.json")
        );
        let p = Host::Cursor
            .path(Scope::User, Os::Windows, &r)
            .unwrap_or_default();
        assert_eq!(
            p,
            PathBuf::from(r"C:\Users\me")
                .join(".cursor")
                .join("mcp.json")
        );
    }

    #[test]
    fn listed_targets_hide_header_values() {
        let v = json!({"command": "mcp", "args": ["bridge", "https://x", "--header", "Authorization: Bearer sk-1", "-H", "K: v"]});
        assert_eq!(
            target_of(&v),
            "mcp bridge https://x --header Authorization: … -H K: …"
        );
        assert_eq!(target_of(&json!({"serverUrl": "https://y"})), "https://y");
        assert_eq!(
            target_of(&json!({"command": {"path": "p", "args": ["a"]}})),
            "p a"
        );
    }

    #[test]
    fn entries_per_host() {
        let url = Server {
            launch: Launch::Url("https://x/mcp".into()),
            env: vec![],
            headers: vec![("Authorization".into(), "Bearer t".into())],
        };
        let keys = |h: Host| -> Vec<String> {
            entry(h, &url)
                .unwrap_or_default()
                .into_iter()
                .map(|(k, _)| k)
                .collect()
        };
        assert_eq!(keys(Host::Vscode), ["type", "url", "headers"]);
        assert_eq!(keys(Host::Windsurf), ["serverUrl", "headers"]);
        assert_eq!(keys(Host::Zed), ["url", "headers"]);
        assert!(entry(Host::ClaudeDesktop, &url).is_err());
        assert_eq!(
            bridged("mcp", "https://x/mcp", &url.headers),
            [
                "mcp",
                "bridge",
                "https://x/mcp",
                "--header",
                "Authorization: Bearer t"
            ]
        );
    }
}
