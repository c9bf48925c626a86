//! The few `Cargo.toml` fields `mcp registry` and `mcp pack` use.
//!
//! A deliberately small reader: `key = "string"`, `key = ["a", "b"]` and
//! `key.workspace = true` (or `key = { workspace = true }`) inside
//! `[package]`, the inherited values from the workspace's
//! `[workspace.package]`. Anything else is ignored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A crate's package metadata.
#[derive(Debug, Clone, Default)]
pub struct Package {
    /// The `Cargo.toml` it came from.
    pub manifest: PathBuf,
    /// `name`.
    pub name: String,
    /// `version` (inherited from the workspace when it says so).
    pub version: Option<String>,
    /// `description`.
    pub description: Option<String>,
    /// `repository`.
    pub repository: Option<String>,
    /// `homepage`.
    pub homepage: Option<String>,
    /// `license`.
    pub license: Option<String>,
    /// `readme` (a path relative to the manifest; `README.md` by default).
    pub readme: Option<String>,
    /// `authors`.
    pub authors: Vec<String>,
}

/// The `[section]` tables of a manifest: key → raw value text.
fn tables(text: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut section = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("[[") {
            section = String::from("[[array]]");
            continue;
        }
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.split(']').next()) {
            section = s.trim().to_owned();
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        out.entry(section.clone())
            .or_default()
            .insert(k.trim().to_owned(), v.trim().to_owned());
    }
    out
}

/// A TOML basic or literal string at the start of `v`.
fn string(v: &str) -> Option<String> {
    if let Some(rest) = v.strip_prefix('\'') {
        return rest.split('\'').next().map(str::to_owned);
    }
    let rest = v.strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                c => out.push(c),
            },
            c => out.push(c),
        }
    }
    None
}

/// `["a", "b"]` on one line.
fn strings(v: &str) -> Vec<String> {
    let Some(inner) = v.strip_prefix('[').and_then(|r| r.split(']').next()) else {
        return Vec::new();
    };
    inner.split(',').filter_map(|s| string(s.trim())).collect()
}

/// Whether the package's `key` says `workspace = true`.
fn inherited(pkg: &BTreeMap<String, String>, key: &str) -> bool {
    pkg.get(&format!("{key}.workspace"))
        .is_some_and(|v| v.starts_with("true"))
        || pkg
            .get(key)
            .is_some_and(|v| v.replace(' ', "").contains("workspace=true"))
}

/// The workspace root's `[workspace.package]` above `dir`, if any.
fn workspace_package(dir: &Path) -> BTreeMap<String, String> {
    for d in dir.ancestors() {
        let Ok(text) = std::fs::read_to_string(d.join("Cargo.toml")) else {
            continue;
        };
        let mut t = tables(&text);
        if t.contains_key("workspace") || t.contains_key("workspace.package") {
            return t.remove("workspace.package").unwrap_or_default();
        }
    }
    BTreeMap::new()
}

/// Reads the package of the manifest at `path`.
pub fn read(path: &Path) -> Result<Package, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let t = tables(&text);
    let pkg = t
        .get("package")
        .ok_or_else(|| format!("{} has no [package]", path.display()))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let ws = workspace_package(dir.parent().unwrap_or(dir));
    let field = |k: &str| -> Option<String> {
        if inherited(pkg, k) {
            ws.get(k).and_then(|v| string(v))
        } else {
            pkg.get(k).and_then(|v| string(v))
        }
    };
    let authors = if inherited(pkg, "authors") {
        ws.get("authors").map(|v| strings(v)).unwrap_or_default()
    } else {
        pkg.get("authors").map(|v| strings(v)).unwrap_or_default()
    };
    Ok(Package {
        manifest: path.to_owned(),
        name: field("name").ok_or_else(|| format!("{} has no package name", path.display()))?,
        version: field("version"),
        description: field("description"),
        repository: field("repository"),
        homepage: field("homepage"),
        license: field("license"),
        readme: field("readme"),
        authors,
    })
}

/// The nearest `Cargo.toml` with a `[package]`, from `dir` upwards.
pub fn find(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .map(|d| d.join("Cargo.toml"))
        .find(|p| std::fs::read_to_string(p).is_ok_and(|t| tables(&t).contains_key("package")))
}

impl Package {
    /// The README's path.
    pub fn readme_path(&self) -> PathBuf {
        let dir = self.manifest.parent().unwrap_or(Path::new("."));
        dir.join(self.readme.as_deref().unwrap_or("README.md"))
    }

    /// `OWNER` of a `https://github.com/OWNER/…` repository.
    pub fn github_owner(&self) -> Option<String> {
        github_owner(self.repository.as_deref()?)
    }
}

/// `OWNER` of a `https://github.com/OWNER/…` URL.
pub fn github_owner(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("https://github.com/")
        .or_else(|| url.strip_prefix("http://github.com/"))?;
    let owner = rest.split('/').next()?;
    (!owner.is_empty()).then(|| owner.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_package_and_inherits_from_the_workspace() {
        let d = std::env::temp_dir().join(format!("mcp-cargo-toml-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("crates/a")).unwrap_or_default();
        std::fs::write(
            d.join("Cargo.toml"),
            "[workspace]\nmembers = [\"crates/a\"]\n\n[workspace.package]\nversion = \"1.2.3\"\nlicense = \"MIT\"\n",
        )
        .unwrap_or_default();
        std::fs::write(
            d.join("crates/a/Cargo.toml"),
            "[package]\nname = \"a-mcp\" # the crate\nversion.workspace = true\nlicense = { workspace = true }\ndescription = \"A \\\"quoted\\\" server\"\nrepository = 'https://github.com/Owner/a'\nauthors = [\"Ann <a@x>\", \"Bo\"]\n\n[dependencies]\nname = \"not this\"\n",
        )
        .unwrap_or_default();
        let p = read(&d.join("crates/a/Cargo.toml")).unwrap_or_default();
        assert_eq!(p.name, "a-mcp");
        assert_eq!(p.version.as_deref(), Some("1.2.3"));
        assert_eq!(p.license.as_deref(), Some("MIT"));
        assert_eq!(p.description.as_deref(), Some("A \"quoted\" server"));
        assert_eq!(p.github_owner().as_deref(), Some("Owner"));
        assert_eq!(p.authors, ["Ann <a@x>", "Bo"]);
        assert_eq!(
            find(&d.join("crates/a")),
            Some(d.join("crates/a/Cargo.toml"))
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
