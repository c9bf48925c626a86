//! Opening a URL in the user's browser.
//!
//! `$MCP_BROWSER` is a command line (split on whitespace) run with the URL
//! as its last argument, e.g. `MCP_BROWSER=firefox`, or a headless
//! follower such as `MCP_BROWSER='curl -fsSL -o /dev/null'` on a machine
//! without a browser (CI, SSH). Otherwise `$BROWSER`, otherwise the
//! platform opener (`open` on macOS; `xdg-open` elsewhere, only when a
//! display is available). The URL is always printed as well, by the caller.

use std::process::{Command, Stdio};

/// The command line that would open a URL, if any.
fn opener() -> Option<Vec<String>> {
    for var in ["MCP_BROWSER", "BROWSER"] {
        if let Some(v) = std::env::var_os(var) {
            let words: Vec<String> = v
                .to_string_lossy()
                .split_whitespace()
                .map(str::to_owned)
                .collect();
            if !words.is_empty() {
                return Some(words);
            }
        }
    }
    if cfg!(target_os = "macos") {
        return Some(vec!["open".into()]);
    }
    let display = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()));
    display.then(|| vec!["xdg-open".into()])
}

/// Whether a browser opener is configured or available (else the bridge
/// logs in with the device flow).
pub fn available() -> bool {
    opener().is_some()
}

/// Opens `url` (only `http`/`https`) with the opener; returns the program
/// run, or `None` when there is none or it could not start. The opener
/// runs in the background, its output discarded.
pub fn open(url: &str) -> Option<String> {
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return None;
    }
    let words = opener()?;
    let (program, args) = words.split_first()?;
    let child = Command::new(program)
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    // Reap it whenever it ends, without holding anything up.
    std::thread::spawn(move || {
        let mut child = child;
        let _ = child.wait();
    });
    Some(program.clone())
}
