//! A small corpus written for the tests, into a fresh temporary folder.
#![allow(dead_code, missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

/// A temporary folder removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("mcp-docs-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    pub fn write(&self, rel: &str, text: &str) {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Eight documents on distinct topics (a made-up tool, "quill").
pub const FILES: &[(&str, &str)] = &[
    (
        "install.md",
        "# Installing quill\n\nHow to install quill on Linux, macOS and Windows.\n\n## Installation\n\nDownload the package for your platform and run the installer. On Linux use `apt install quill`; on macOS `brew install quill`.\n\n## Upgrading\n\nRun the installer of the newer version; settings are kept.\n",
    ),
    (
        "config.md",
        "# Configuration\n\nEvery setting of quill lives in one TOML file.\n\n## The configuration file\n\nquill reads `~/.config/quill/quill.toml`. Set `theme`, `font_size` and `autosave_interval` there.\n\n## Environment variables\n\n`QUILL_HOME` overrides where the configuration file is looked for.\n",
    ),
    (
        "sync.md",
        "# Synchronisation\n\nKeep notebooks in sync across devices.\n\n## Conflicts\n\nWhen two devices edit the same note offline, quill keeps both versions and marks the note as conflicted; merge them by hand.\n",
    ),
    (
        "shortcuts.md",
        "# Keyboard shortcuts\n\nWork faster without the mouse.\n\n## Editing\n\nCtrl+B bold, Ctrl+I italic, Ctrl+K inserts a hyperlink.\n\n## Navigation\n\nCtrl+P opens the command palette; Ctrl+Tab switches notebooks.\n",
    ),
    (
        "export.md",
        "# Exporting notes\n\nExport notebooks to other formats.\n\n## PDF\n\nFile → Export → PDF renders the note with its images; page size follows the printer settings.\n\n## HTML\n\nExport to HTML writes one page per note plus a stylesheet.\n",
    ),
    (
        "security/encryption.md",
        "# Encryption\n\nNotes can be encrypted at rest.\n\n## Passphrase\n\nEncrypted notebooks use AES-256 with a key derived from your passphrase by Argon2. A lost passphrase cannot be recovered.\n",
    ),
    (
        "plugins.md",
        "# Plugins\n\nExtend quill with plugins written in Lua.\n\n## Writing a plugin\n\nA plugin is a Lua script with a `manifest.toml`; register commands with `quill.command()`.\n",
    ),
    (
        "troubleshooting.txt",
        "Troubleshooting\n\nWhat to do when quill crashes or will not start.\n\nIf quill crashes at startup, delete the cache folder and start it again. Crash reports are written to the logs folder.\n",
    ),
];

/// Writes [`FILES`] into a new temporary folder.
pub fn corpus(tag: &str) -> TempDir {
    let d = TempDir::new(tag);
    for (rel, text) in FILES {
        d.write(rel, text);
    }
    d
}
