//! Live updates: a file-system watcher on the library's root, debounced,
//! applied to the index and published to subscribers.

use crate::DocsError;
use crate::library::Library;
use crate::mcp::resource_def;
use ferromcp_server::Server;
use notify::{RecursiveMode, Watcher as _};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Keeps the watch running; dropping it stops the watcher and its task.
pub struct Watcher {
    _inner: notify::RecommendedWatcher,
    task: tokio::task::JoinHandle<()>,
    refreshes: Arc<std::sync::atomic::AtomicU64>,
}

impl Watcher {
    /// How many times the index has been refreshed (once per burst of
    /// file-system events): for monitoring and tests.
    pub fn refreshes(&self) -> u64 {
        self.refreshes.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher").finish_non_exhaustive()
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The longest a burst of events may postpone an update.
const MAX_DELAY_FACTOR: u32 = 5;

/// Watches `lib`'s root: after each burst of events (quiet for
/// [`crate::Options::debounce`], at most five times that in all) the library
/// is refreshed, `server`'s resource list updated in one swap (one
/// `notifications/resources/list_changed`), and
/// `notifications/resources/updated` published for every changed file and
/// section URI. Must be called inside a Tokio runtime.
pub fn watch(lib: Arc<Library>, server: Server) -> Result<Watcher, DocsError> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<PathBuf>>();
    let mut inner = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
        let paths = match ev {
            // Opening or reading changes nothing, and the rescan itself
            // opens files and folders: acting on these would loop. (A
            // close after writing is kept: it ends a write.)
            Ok(e)
                if matches!(e.kind, notify::EventKind::Access(a)
                if a != notify::event::AccessKind::Close(notify::event::AccessMode::Write)) =>
            {
                return;
            }
            Ok(e) => e.paths,
            // An error (e.g. an overflowed queue): a full rescan.
            Err(_) => Vec::new(),
        };
        let _ = tx.send(paths);
    })
    .map_err(|e| DocsError::Io(format!("cannot watch {}: {e}", lib.root().display())))?;
    inner
        .watch(lib.root(), RecursiveMode::Recursive)
        .map_err(|e| DocsError::Io(format!("cannot watch {}: {e}", lib.root().display())))?;
    let debounce = lib.options().debounce;
    let refreshes = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let count = refreshes.clone();
    let task = tokio::spawn(async move {
        while let Some(first) = rx.recv().await {
            let mut touched = first;
            let deadline = tokio::time::Instant::now() + debounce * MAX_DELAY_FACTOR;
            loop {
                let quiet = tokio::time::Instant::now() + debounce;
                match tokio::time::timeout_at(quiet.min(deadline), rx.recv()).await {
                    Ok(Some(more)) => touched.extend(more),
                    Ok(None) => return,
                    Err(_) => break,
                }
            }
            touched.sort();
            touched.dedup();
            let l = lib.clone();
            let changes = match tokio::task::spawn_blocking(move || l.refresh(&touched)).await {
                Ok(c) => c,
                Err(_) => continue,
            };
            count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if changes.is_empty() {
                continue;
            }
            let remove: Vec<String> = changes
                .changed
                .iter()
                .chain(&changes.removed)
                .map(|rel| format!("{}{}", crate::SCHEME, crate::uri_path(rel)))
                .collect();
            let add = changes
                .added
                .iter()
                .chain(&changes.changed)
                .filter_map(|rel| lib.file(rel))
                .map(|d| resource_def(&lib, &d))
                .collect();
            let _ = server.update_resources(remove.iter().map(String::as_str), add);
            for uri in &changes.updated_uris {
                server.notify_resource_updated(uri.clone());
            }
        }
    });
    Ok(Watcher {
        _inner: inner,
        task,
        refreshes,
    })
}
