//! The bridge's diagnostics on stderr (`mcp bridge --log-level`).
//!
//! stdout is the host's wire, so every event goes to stderr, one line each
//! (newlines inside a message become spaces). Only the project's own
//! events are shown: the libraries underneath are not asked what they
//! print, and the bridge itself never logs a header value.

use clap::ValueEnum;
use std::fmt::{self, Write as _};
use std::io::Write as _;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// How much `mcp bridge` writes to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum, Default)]
pub enum LogLevel {
    /// Nothing.
    Off,
    /// Failures only.
    Error,
    /// Failures and warnings (a remote answer that is not JSON-RPC, a
    /// GET stream given up on).
    #[default]
    Warn,
    /// Also what the bridge decided (era translation, retries).
    Info,
    /// Also each dropped or unexpected message and stream event.
    Debug,
    /// Everything.
    Trace,
}

impl LogLevel {
    /// Whether an event of `level` is shown.
    fn shows(self, level: &Level) -> bool {
        let rank = match *level {
            Level::ERROR => Self::Error,
            Level::WARN => Self::Warn,
            Level::INFO => Self::Info,
            Level::DEBUG => Self::Debug,
            Level::TRACE => Self::Trace,
        };
        rank <= self
    }
}

/// A subscriber writing the project's events to stderr.
struct Stderr {
    level: LogLevel,
}

/// Collects an event's message and fields into one line.
#[derive(Default)]
struct Line {
    message: String,
    fields: String,
}

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }
}

/// The event as one stderr line.
fn format_line(level: &Level, line: &Line) -> String {
    let mut s = format!(
        "mcp bridge: {}: {}{}",
        level.as_str().to_ascii_lowercase(),
        line.message,
        line.fields
    );
    s = s.replace(['\n', '\r'], " ");
    s.push('\n');
    s
}

impl Subscriber for Stderr {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target().starts_with("ferromcp") && self.level.shows(metadata.level())
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut line = Line::default();
        event.record(&mut line);
        let text = format_line(event.metadata().level(), &line);
        // A closed stderr loses the diagnostics, never the relay.
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// Sends the bridge's events at `level` and above to stderr.
pub fn init(level: LogLevel) {
    if level == LogLevel::Off {
        return;
    }
    // Already set (a second bridge in one process): the first one stays.
    let _ = tracing::subscriber::set_global_default(Stderr { level });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_include_the_more_severe_ones() {
        assert!(LogLevel::Warn.shows(&Level::ERROR));
        assert!(LogLevel::Warn.shows(&Level::WARN));
        assert!(!LogLevel::Warn.shows(&Level::INFO));
        assert!(!LogLevel::Off.shows(&Level::ERROR));
        assert!(LogLevel::Trace.shows(&Level::TRACE));
    }

    #[test]
    fn an_event_is_one_line() {
        let line = Line {
            message: "a\nb\r\nc".into(),
            fields: " k=1".into(),
        };
        assert_eq!(
            format_line(&Level::WARN, &line),
            "mcp bridge: warn: a b  c k=1\n"
        );
    }
}
