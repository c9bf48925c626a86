//! `--child-per-session`: one child per handshake-era session, for stdio
//! servers that keep state per connection.
//!
//! A session's child is started (and initialized) by the first call made
//! in that session and serves only it; requests without a session (the
//! 2026-07-28 era) go to the shared child. A child idle for longer than the
//! idle limit is stopped, and the number of session children is bounded.
//! A session whose child exited gets a fresh child on its next call (the
//! old one's state is gone; this is reported).

use super::child::Link;
use super::{Report, Settings, handshake};
use ferromcp_protocol::ErrorObject;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// The children of live sessions.
pub(crate) struct Sessions {
    children: Mutex<HashMap<String, (Arc<Link>, Instant)>>,
    /// Serializes starting children, so two first calls of one session
    /// start one child.
    starting: tokio::sync::Mutex<()>,
    program: String,
    args: Vec<String>,
    settings: Settings,
    report: Report,
    max: usize,
    idle: Duration,
}

impl Sessions {
    pub(crate) fn new(
        program: String,
        args: Vec<String>,
        settings: Settings,
        report: Report,
        max: usize,
        idle: Duration,
    ) -> Self {
        Self {
            children: Mutex::new(HashMap::new()),
            starting: tokio::sync::Mutex::new(()),
            program,
            args,
            settings,
            report,
            max: max.max(1),
            idle,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Arc<Link>, Instant)>> {
        self.children.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The child of `session`, started on first use.
    pub(crate) async fn link(&self, session: &str) -> Result<Arc<Link>, ErrorObject> {
        if let Some(link) = self.touch(session) {
            return Ok(link);
        }
        let _one = self.starting.lock().await;
        if let Some(link) = self.touch(session) {
            return Ok(link);
        }
        self.sweep();
        if self.lock().len() >= self.max {
            return Err(ErrorObject::internal(format!(
                "too many sessions have their own stdio server (the limit is {})",
                self.max
            )));
        }
        let link = Link::new(self.settings.clone(), self.report.clone());
        let exited = link
            .spawn(&self.program, &self.args)
            .map_err(ErrorObject::internal)?;
        handshake(&link).await.map_err(|e| {
            ErrorObject::internal(format!(
                "the session's stdio server did not initialize: {e}"
            ))
        })?;
        self.lock()
            .insert(session.to_owned(), (link.clone(), Instant::now()));
        let report = self.report.clone();
        let session_tag: String = session.chars().take(8).collect();
        tokio::spawn(async move {
            if let Ok(why) = exited.await {
                report(&format!(
                    "the stdio server of session {session_tag}… exited ({why})"
                ));
            }
        });
        Ok(link)
    }

    /// The live child of `session`, marked used now.
    fn touch(&self, session: &str) -> Option<Arc<Link>> {
        let mut children = self.lock();
        let (link, used) = children.get_mut(session)?;
        if !link.is_running() {
            children.remove(session);
            return None;
        }
        *used = Instant::now();
        Some(link.clone())
    }

    /// Stops children idle for longer than the limit.
    fn sweep(&self) {
        let idle = self.idle;
        self.lock().retain(|_, (link, used)| {
            let keep = used.elapsed() < idle && link.is_running();
            if !keep {
                link.stop();
            }
            keep
        });
    }

    /// The child of `session` if it has one already (none is started).
    pub(crate) fn existing(&self, session: &str) -> Option<Arc<Link>> {
        self.touch(session)
    }

    /// Stops every session child (shutdown).
    pub(crate) fn stop_all(&self) {
        for (_, (link, _)) in self.lock().drain() {
            link.stop();
        }
    }
}
