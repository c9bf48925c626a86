//! Live reload of a skills folder: a file-system watcher, debounced, that
//! reads the folder again and swaps the served skills.

use super::load_dir;
use crate::error::Error;
use crate::server::Server;
use notify::{RecursiveMode, Watcher as _};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;

/// Keeps a skills folder watched; dropping it stops the watch.
pub struct SkillsWatcher {
    _inner: notify::RecommendedWatcher,
    task: tokio::task::JoinHandle<()>,
    reloads: Arc<AtomicU64>,
    refused: Arc<AtomicU64>,
}

impl SkillsWatcher {
    /// How many times the folder was read again and its skills swapped in.
    pub fn reloads(&self) -> u64 {
        self.reloads.load(Ordering::Relaxed)
    }

    /// How many reloads were refused (a skill broke a rule or a limit; the
    /// skills served before stay served).
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for SkillsWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillsWatcher")
            .field("reloads", &self.reloads())
            .finish_non_exhaustive()
    }
}

impl Drop for SkillsWatcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Watches `dir` (the folder `server` was built from with
/// [`crate::ServerBuilder::skills_dir`]): after each burst of changes
/// (quiet for `debounce`, at most five times that in all) the folder is
/// read again and [`Server::set_skills`] swaps the skills in, which sends
/// `notifications/resources/list_changed` (and `resources/updated` for
/// changed files). A reload that fails (a `SKILL.md` being edited into an
/// invalid state, a limit) keeps the skills served before and logs a
/// warning. Must be called inside a Tokio runtime.
pub fn watch(
    server: Server,
    dir: impl Into<PathBuf>,
    debounce: Duration,
) -> Result<SkillsWatcher, Error> {
    let dir: PathBuf = dir.into();
    let Some(limits) = server.shared.skills().as_ref().map(|s| s.limits.clone()) else {
        return Err(Error::config("this server serves no skills to reload"));
    };
    let (tx, mut rx) = mpsc::unbounded_channel::<()>();
    let mut inner = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
        // Reading changes nothing, and the reload itself reads every file:
        // acting on reads would loop.
        if let Ok(e) = &ev {
            if matches!(e.kind, notify::EventKind::Access(a)
                if a != notify::event::AccessKind::Close(notify::event::AccessMode::Write))
            {
                return;
            }
        }
        let _ = tx.send(());
    })
    .map_err(|e| Error::config(format!("cannot watch {}: {e}", dir.display())))?;
    inner
        .watch(&dir, RecursiveMode::Recursive)
        .map_err(|e| Error::config(format!("cannot watch {}: {e}", dir.display())))?;
    let reloads = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let (done, bad) = (reloads.clone(), refused.clone());
    let task = tokio::spawn(async move {
        while rx.recv().await.is_some() {
            let deadline = tokio::time::Instant::now() + debounce * 5;
            loop {
                let quiet = tokio::time::Instant::now() + debounce;
                match tokio::time::timeout_at(quiet.min(deadline), rx.recv()).await {
                    Ok(Some(())) => {}
                    Ok(None) => return,
                    Err(_) => break,
                }
            }
            let (d, l) = (dir.clone(), limits.clone());
            let loaded = tokio::task::spawn_blocking(move || load_dir(&d, &l)).await;
            let result = match loaded {
                Ok(Ok(skills)) => server.set_skills(skills),
                Ok(Err(e)) => Err(e),
                Err(_) => continue,
            };
            match result {
                Ok(()) => {
                    done.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    bad.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(error = %e, "skills: reload refused, the previous skills stay served");
                }
            }
        }
    });
    Ok(SkillsWatcher {
        _inner: inner,
        task,
        reloads,
        refused,
    })
}
