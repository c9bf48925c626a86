//! Long requests: a progress bar from `notifications/progress`
//! and Ctrl-C cancellation.
//!
//! Dropping the request future cancels it the transport's way: in the
//! handshake era the client sends `notifications/cancelled` (stdio, and a
//! POST over HTTP); a stateless modern HTTP request is cancelled by closing
//! its connection.
// PROG-01, CANCEL-02, CANCEL-08

use crate::exit::{Failure, code};
use clap::ValueEnum;
use ferromcp_client::RequestOptions;
use ferromcp_client::protocol::types::ProgressNotificationParams;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::future::Future;
use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// When to show progress.
#[derive(Debug, Clone, Copy, ValueEnum, Default, PartialEq, Eq)]
pub enum ProgressMode {
    /// A bar when stderr is a terminal, nothing otherwise.
    #[default]
    Auto,
    /// A bar on a terminal, otherwise one plain line per notification.
    Always,
    /// Never (no progress token is sent).
    Never,
}

/// The bar being drawn, so that a terminal prompt can hide it.
static ACTIVE: Mutex<Option<ProgressBar>> = Mutex::new(None);
/// Set while the user is being asked something: no drawing.
static PAUSED: AtomicBool = AtomicBool::new(false);

/// Hides the progress bar while it lives (the terminal is prompting).
#[derive(Debug)]
pub struct Pause(());

/// Hides the bar until the returned guard is dropped.
pub fn pause() -> Pause {
    PAUSED.store(true, Ordering::Release);
    if let Some(b) = ACTIVE.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
        b.set_draw_target(ProgressDrawTarget::hidden());
    }
    Pause(())
}

impl Drop for Pause {
    fn drop(&mut self) {
        PAUSED.store(false, Ordering::Release);
        if let Some(b) = ACTIVE.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            b.set_draw_target(ProgressDrawTarget::stderr());
        }
    }
}

/// How progress of one request is shown.
#[derive(Debug)]
pub struct Progress {
    mode: ProgressMode,
    bar: Option<ProgressBar>,
}

/// `12.5` → `"12.5"`, `50.0` → `"50"`.
fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// One plain progress line: `progress 50/100 Completed step 50`.
pub fn plain_line(p: &ProgressNotificationParams) -> String {
    let mut s = format!("progress {}", number(p.progress));
    if let Some(t) = p.total {
        s.push('/');
        s.push_str(&number(t));
    }
    if let Some(m) = &p.message {
        s.push(' ');
        s.push_str(m);
    }
    s
}

impl Progress {
    /// Progress display for `mode` (a bar only when stderr is a terminal).
    pub fn new(mode: ProgressMode) -> Self {
        let bar = (mode != ProgressMode::Never && std::io::stderr().is_terminal()).then(|| {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            if let Ok(style) =
                ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} {wide_msg}")
            {
                b.set_style(style.progress_chars("=> "));
            }
            *ACTIVE.lock().unwrap_or_else(|p| p.into_inner()) = Some(b.clone());
            b
        });
        Self { mode, bar }
    }

    /// Request options asking for progress (unless `--progress never`).
    pub fn options(&self) -> RequestOptions {
        let opts = RequestOptions::new();
        match (&self.bar, self.mode) {
            (_, ProgressMode::Never) => opts,
            (Some(bar), _) => {
                let b = bar.clone();
                opts.on_progress(move |p| {
                    if let Some(t) = p.total {
                        b.set_length(t.max(0.0) as u64);
                    }
                    b.set_position(p.progress.max(0.0) as u64);
                    if let Some(m) = &p.message {
                        b.set_message(m.clone());
                    }
                })
            }
            (None, ProgressMode::Always) => opts.on_progress(|p| {
                if PAUSED.load(Ordering::Acquire) {
                    return;
                }
                let mut e = std::io::stderr().lock();
                let _ = writeln!(e, "{}", plain_line(p));
            }),
            // Auto without a terminal: still ask, so that progress keeps
            // long requests from timing out, but show nothing.
            (None, _) => opts.on_progress(|_| {}),
        }
    }

    fn clear(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
        *ACTIVE.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Awaits `fut` with the bar shown; Ctrl-C drops it (which cancels the
    /// request on the wire) and fails with exit code 130. `what` names the
    /// request in the message (`call`, `read`, `prompt`).
    pub async fn run<T>(
        &self,
        what: &str,
        fut: impl Future<Output = Result<T, Failure>>,
    ) -> Result<T, Failure> {
        let r = tokio::select! {
            r = fut => r,
            _ = tokio::signal::ctrl_c() => Err(Failure::new(
                code::INTERRUPTED,
                format!("interrupted; the {what} was cancelled"),
            )),
        };
        self.clear();
        if r.as_ref().is_err_and(|f| f.code == code::INTERRUPTED) {
            // Let the cancellation (a spawned POST over handshake-era HTTP)
            // leave before the connection is closed.
            tokio::time::sleep(CANCEL_GRACE).await;
        }
        r
    }
}

/// How long an interrupted command waits for its cancellation to be sent.
pub const CANCEL_GRACE: std::time::Duration = std::time::Duration::from_millis(100);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines() {
        let p: ProgressNotificationParams = match serde_json::from_value(serde_json::json!({
            "progressToken": 1, "progress": 50.0, "total": 100.0, "message": "half"
        })) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(plain_line(&p), "progress 50/100 half");
        let p: ProgressNotificationParams = match serde_json::from_value(
            serde_json::json!({"progressToken": "t", "progress": 2.5}),
        ) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(plain_line(&p), "progress 2.5");
    }
}
