//! Reloading `mcp gateway`'s configuration: on SIGHUP and, unless
//! `--no-watch`, when the file changes (a burst of changes makes one
//! reload). Both causes go through one function that reads, validates and
//! applies the file; a file that does not validate (one being edited, say)
//! is reported and the running configuration stays.

use ferromcp_gateway::{Config, InboundAuth, Running};
use notify::Watcher as _;
use notify::event::{AccessKind, AccessMode, EventKind, ModifyKind};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The longest settle time honoured (a larger `--reload-debounce-ms` is
/// cut to it).
const MAX_QUIET: Duration = Duration::from_secs(600);

/// When a burst of changes is over: `quiet` after the last change, and at
/// the latest five times that after the first (a file rewritten without
/// pause is still read).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settle {
    quiet: Duration,
}

impl Settle {
    /// Bursts that end after `quiet` without a change (at most
    /// [`MAX_QUIET`]).
    pub(crate) fn new(quiet: Duration) -> Self {
        Self {
            quiet: quiet.min(MAX_QUIET),
        }
    }

    /// When a burst that began at `first` and last changed at `last` is
    /// over.
    fn deadline(&self, first: Instant, last: Instant) -> Instant {
        (last + self.quiet).min(first + self.quiet * 5)
    }

    /// Waits for a change signalled on `changes`, then until the burst it
    /// starts is over.
    async fn burst(&self, changes: &Notify) {
        changes.notified().await;
        let first = Instant::now();
        let mut last = first;
        while tokio::time::timeout_at(self.deadline(first, last), changes.notified())
            .await
            .is_ok()
        {
            last = Instant::now();
        }
    }
}

/// What makes the gateway read its configuration again, set up before it
/// serves (a SIGHUP or a save right after start is not missed).
pub(crate) struct Reloader {
    path: PathBuf,
    hup: Hangups,
    watch: Option<(notify::RecommendedWatcher, Arc<Notify>, Settle)>,
}

/// The SIGHUPs received (none where there are no signals or no handler).
struct Hangups {
    #[cfg(unix)]
    signal: Option<tokio::signal::unix::Signal>,
}

impl Hangups {
    /// Installs the handler, saying on stderr if it cannot.
    fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let signal = match signal(SignalKind::hangup()) {
                Ok(s) => Some(s),
                Err(e) => {
                    eprintln!(
                        "mcp gateway: cannot install the SIGHUP handler ({e}); reload on SIGHUP is off"
                    );
                    None
                }
            };
            Self { signal }
        }
        #[cfg(not(unix))]
        Self {}
    }

    /// The next SIGHUP (never, without a handler).
    async fn next(&mut self) {
        #[cfg(unix)]
        if let Some(s) = &mut self.signal
            && s.recv().await.is_some()
        {
            return;
        }
        std::future::pending::<()>().await;
    }
}

impl Reloader {
    /// Reloads `path` on SIGHUP and, with `settle`, when it changes. What
    /// cannot be set up (the signal handler, the watch) is reported on
    /// stderr; the rest works without it.
    pub(crate) fn new(path: &Path, settle: Option<Settle>) -> Self {
        let hup = Hangups::new();
        let watch = settle.and_then(|settle| {
            let changes = Arc::new(Notify::new());
            match watch(path, changes.clone()) {
                Ok(w) => Some((w, changes, settle)),
                Err(e) => {
                    eprintln!(
                        "mcp gateway: cannot watch {} ({e}); reload on SIGHUP only",
                        path.display()
                    );
                    None
                }
            }
        });
        Self {
            path: path.to_owned(),
            hup,
            watch,
        }
    }

    /// Applies the file to `running` after each SIGHUP and each settled
    /// burst of changes, one reload at a time; `auth` is the inbound auth
    /// the gateway started with (it cannot change on a reload).
    pub(crate) async fn run(self, running: Arc<Running>, auth: Option<InboundAuth>) {
        let Self {
            path,
            mut hup,
            watch,
        } = self;
        // The watcher stays alive (and watching) as long as this loop.
        let changes = watch.as_ref().map(|(_, changes, settle)| (changes, settle));
        loop {
            tokio::select! {
                () = hup.next() => {}
                () = changed(changes) => {}
            }
            reload(&running, &path, auth.as_ref()).await;
        }
    }
}

/// The end of the next burst of changes to the file (never, without a
/// watch).
async fn changed(watch: Option<(&Arc<Notify>, &Settle)>) {
    match watch {
        Some((changes, settle)) => settle.burst(changes).await,
        None => std::future::pending::<()>().await,
    }
}

/// Reads `path` and applies it to `running`, saying on stderr what changed
/// or why nothing did.
async fn reload(running: &Running, path: &Path, auth: Option<&InboundAuth>) {
    match Config::load(path) {
        Ok(config) => {
            if config.auth() != auth {
                eprintln!(
                    "mcp gateway: gateway.auth cannot change on a reload (the running one stays); restart the gateway to change it"
                );
            }
            let r = running.reload(config).await;
            eprintln!(
                "mcp gateway: reloaded {}: added [{}], removed [{}], changed [{}]",
                path.display(),
                r.added.join(", "),
                r.removed.join(", "),
                r.changed.join(", ")
            );
        }
        Err(e) => eprintln!(
            "mcp gateway: not reloaded, the running configuration stays: {}: {e}",
            path.display()
        ),
    }
}

/// Watches the directory of `file`, not the file itself (editors save by
/// writing another file and renaming it over this one, which would end a
/// watch of the file), and signals `changes` for each event that may have
/// changed `file`.
fn watch(file: &Path, changes: Arc<Notify>) -> notify::Result<notify::RecommendedWatcher> {
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = file.file_name().map(OsStr::to_owned);
    let mut w = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
        if concerns(&ev, name.as_deref()) {
            changes.notify_one();
        }
    })?;
    w.watch(&dir, notify::RecursiveMode::NonRecursive)?;
    Ok(w)
}

/// Whether `ev` may have changed the file called `name`: an event naming
/// it that is not a read or a metadata change (the reload reads the file:
/// acting on that would loop), or an error or rescan (events may have been
/// lost).
fn concerns(ev: &notify::Result<notify::Event>, name: Option<&OsStr>) -> bool {
    let Ok(e) = ev else { return true };
    if e.need_rescan() {
        return true;
    }
    match e.kind {
        EventKind::Access(a) if a != AccessKind::Close(AccessMode::Write) => return false,
        EventKind::Modify(ModifyKind::Metadata(_)) => return false,
        _ => {}
    }
    name.is_some_and(|n| e.paths.iter().any(|p| p.file_name() == Some(n)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, Flag, ModifyKind, RenameMode};

    fn ev(kind: EventKind, paths: &[&str]) -> notify::Result<notify::Event> {
        Ok(paths.iter().fold(notify::Event::new(kind), |e, p| {
            e.add_path(PathBuf::from(p))
        }))
    }

    #[test]
    fn a_burst_ends_quiet_after_its_last_change_and_at_most_five_settles_after_its_first() {
        let s = Settle::new(Duration::from_millis(300));
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // One change: quiet after it.
        assert_eq!(s.deadline(t0, t0), t0 + ms(300));
        // Each change pushes the end back...
        assert_eq!(s.deadline(t0, t0 + ms(200)), t0 + ms(500));
        assert_eq!(s.deadline(t0, t0 + ms(1000)), t0 + ms(1300));
        // ...but never beyond five settle times after the first.
        assert_eq!(s.deadline(t0, t0 + ms(1400)), t0 + ms(1500));
        assert_eq!(s.deadline(t0, t0 + ms(9000)), t0 + ms(1500));
        // An absurd settle time is cut (no overflow).
        let big = Settle::new(Duration::from_secs(u64::MAX / 4));
        assert_eq!(big.deadline(t0, t0), t0 + MAX_QUIET);
    }

    #[tokio::test]
    async fn changes_during_a_burst_make_one_reload() {
        let changes = Notify::new();
        let s = Settle::new(Duration::from_millis(5));
        for _ in 0..50 {
            changes.notify_one();
        }
        // The stored signals stand for one change: one burst, then nothing
        // until the next change.
        s.burst(&changes).await;
        let stored = tokio::time::timeout(Duration::ZERO, changes.notified()).await;
        assert!(stored.is_err(), "a change left over after the burst");
        changes.notify_one();
        tokio::time::timeout(Duration::from_secs(30), s.burst(&changes))
            .await
            .expect("a change after the burst starts another");
    }

    #[test]
    fn only_events_that_may_change_the_file_count() {
        let name = Some(OsStr::new("gateway.json"));
        let f = "/d/gateway.json";
        // Editors: write a temp file, rename it over the config.
        assert!(!concerns(
            &ev(
                EventKind::Create(CreateKind::File),
                &["/d/.gateway.json.tmp"]
            ),
            name
        ));
        assert!(concerns(
            &ev(
                EventKind::Modify(ModifyKind::Name(RenameMode::Both)),
                &["/d/.gateway.json.tmp", f]
            ),
            name
        ));
        assert!(concerns(
            &ev(EventKind::Modify(ModifyKind::Name(RenameMode::To)), &[f]),
            name
        ));
        assert!(concerns(
            &ev(
                EventKind::Access(AccessKind::Close(AccessMode::Write)),
                &[f]
            ),
            name
        ));
        assert!(concerns(
            &ev(EventKind::Remove(notify::event::RemoveKind::File), &[f]),
            name
        ));
        // Other files of the directory.
        assert!(!concerns(
            &ev(EventKind::Modify(ModifyKind::Any), &["/d/other.json"]),
            name
        ));
        // Reading it (what a reload does) and metadata.
        assert!(!concerns(
            &ev(EventKind::Access(AccessKind::Open(AccessMode::Any)), &[f]),
            name
        ));
        assert!(!concerns(
            &ev(EventKind::Access(AccessKind::Close(AccessMode::Read)), &[f]),
            name
        ));
        assert!(!concerns(
            &ev(
                EventKind::Modify(ModifyKind::Metadata(notify::event::MetadataKind::Any)),
                &[f]
            ),
            name
        ));
        // Lost events: read again to be sure.
        assert!(concerns(&Err(notify::Error::generic("overflow")), name));
        let rescan = notify::Event::new(EventKind::Other).set_flag(Flag::Rescan);
        assert!(concerns(&Ok(rescan), name));
    }
}
