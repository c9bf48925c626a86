//! An incremental `text/event-stream` parser (WHATWG HTML §9.2.6), pure:
//! feed it byte chunks as they arrive, get complete events out.
//!
//! - Lines end in CRLF, LF or CR, also when a CRLF pair is split across
//!   chunks.
//! - Multi-line `data:` fields are joined with `\n`.
//! - Comment lines (starting with `:`) are ignored.
//! - `retry:` (ASCII digits only) sets the reconnection delay, capped.
//! - `id:` sets the last event id (ids containing NUL are ignored); it is
//!   kept even for events with empty data, the 2025-11-25 priming event.
//! - A leading UTF-8 BOM is skipped.
//! - An event whose data or a line longer than the configured cap is an error,
//!   so a hostile peer cannot make the client buffer without bound.
// SSE-01, SSE-06, LEGACY-17

use std::fmt;
use std::time::Duration;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` type; `None` means the default, `message`.
    pub event: Option<String>,
    /// The joined `data:` lines.
    pub data: String,
    /// The last event id in force when this event was dispatched.
    pub id: Option<String>,
}

impl SseEvent {
    /// Whether this is a `message` event (the default type).
    pub fn is_message(&self) -> bool {
        matches!(self.event.as_deref(), None | Some("message"))
    }
}

/// A stream that broke the parser's limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseError {
    /// What was exceeded, one sentence.
    pub reason: String,
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for SseError {}

/// The incremental parser.
#[derive(Debug)]
pub struct SseParser {
    max_event_bytes: usize,
    retry_cap: Duration,
    line: Vec<u8>,
    skip_lf: bool,
    started: bool,
    data: String,
    has_data: bool,
    event: Option<String>,
    last_id: Option<String>,
    retry: Option<Duration>,
}

impl SseParser {
    /// A parser accepting events (and lines) up to `max_event_bytes`, and
    /// capping `retry` at `retry_cap`.
    pub fn new(max_event_bytes: usize, retry_cap: Duration) -> Self {
        Self {
            max_event_bytes,
            retry_cap,
            line: Vec::new(),
            skip_lf: false,
            started: false,
            data: String::new(),
            has_data: false,
            event: None,
            last_id: None,
            retry: None,
        }
    }

    /// The last event id seen (for `Last-Event-ID`).
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The server's reconnection delay, capped; `None` if never sent.
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// Feeds a chunk and returns the events it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        let mut out = Vec::new();
        if !self.started && !chunk.is_empty() {
            // A BOM may itself be split; handle only the common whole case
            // plus a partial prefix buffered in `line`.
            self.line.extend_from_slice(chunk);
            const BOM: &[u8] = b"\xEF\xBB\xBF";
            if self.line.len() < BOM.len() && BOM.starts_with(&self.line) {
                return Ok(out);
            }
            self.started = true;
            let buffered = std::mem::take(&mut self.line);
            let rest = buffered.strip_prefix(BOM).unwrap_or(&buffered);
            self.feed_bytes(rest, &mut out)?;
            return Ok(out);
        }
        self.feed_bytes(chunk, &mut out)?;
        Ok(out)
    }

    fn feed_bytes(&mut self, mut chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if self.skip_lf && !chunk.is_empty() {
            // The CR of a CRLF ended the previous chunk.
            self.skip_lf = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while let Some(pos) = chunk.iter().position(|b| *b == b'\n' || *b == b'\r') {
            self.push_line_bytes(&chunk[..pos])?;
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, out)?;
            let cr = chunk[pos] == b'\r';
            chunk = &chunk[pos + 1..];
            if cr {
                if let Some(rest) = chunk.strip_prefix(b"\n") {
                    chunk = rest;
                } else if chunk.is_empty() {
                    self.skip_lf = true;
                }
            }
        }
        self.push_line_bytes(chunk)
    }

    fn push_line_bytes(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        if self.line.len() + bytes.len() > self.max_event_bytes {
            return Err(SseError {
                reason: format!("SSE line longer than {} bytes", self.max_event_bytes),
            });
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(()); // comment (SSE-06)
        }
        let (name, value) = match line.iter().position(|b| *b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        let value = String::from_utf8_lossy(value);
        match name {
            b"data" => {
                if self.data.len() + value.len() + 1 > self.max_event_bytes {
                    return Err(SseError {
                        reason: format!("SSE event larger than {} bytes", self.max_event_bytes),
                    });
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&value);
                self.has_data = true;
            }
            b"event" => self.event = Some(value.into_owned()),
            b"id" if !value.contains('\0') => self.last_id = Some(value.into_owned()),
            b"retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                let ms = value.parse::<u64>().unwrap_or(u64::MAX);
                self.retry = Some(Duration::from_millis(ms).min(self.retry_cap));
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if !self.has_data {
            self.data.clear();
            return;
        }
        self.has_data = false;
        out.push(SseEvent {
            event: event.filter(|e| !e.is_empty()),
            data: std::mem::take(&mut self.data),
            id: self.last_id.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parser() -> SseParser {
        SseParser::new(1024, Duration::from_secs(10))
    }

    fn all(input: &[u8]) -> Vec<SseEvent> {
        parser().feed(input).unwrap_or_default()
    }

    #[test]
    fn joins_multi_line_data_with_lf() {
        // SSE-01
        let ev = all(b"data: a\ndata: b\n\n");
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].data, "a\nb");
        assert!(ev[0].is_message());
    }

    #[test]
    fn accepts_crlf_cr_and_lf() {
        for input in [
            &b"event: message\r\ndata: x\r\n\r\n"[..],
            b"event: message\rdata: x\r\r",
            b"event: message\ndata: x\n\n",
        ] {
            let ev = all(input);
            assert_eq!(ev.len(), 1, "{input:?}");
            assert_eq!(ev[0].data, "x");
        }
    }

    #[test]
    fn split_crlf_across_chunks_is_one_line_end() {
        let mut p = parser();
        let mut ev = p.feed(b"data: a\r").unwrap_or_default();
        ev.extend(p.feed(b"\ndata: b\r").unwrap_or_default());
        ev.extend(p.feed(b"\n\r\n").unwrap_or_default());
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].data, "a\nb");
    }

    #[test]
    fn comments_are_ignored() {
        // SSE-06
        let ev = all(b": ping\n\n:another\ndata: y\n\n");
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].data, "y");
    }

    #[test]
    fn priming_event_sets_id_and_retry_without_dispatch() {
        // LEGACY-17: id + empty data + retry.
        let mut p = parser();
        let ev = p.feed(b"id: 42\nretry: 500\ndata:\n\n").unwrap_or_default();
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].data, "");
        assert_eq!(p.last_event_id(), Some("42"));
        assert_eq!(p.retry(), Some(Duration::from_millis(500)));
        let mut p = parser();
        assert!(
            p.feed(b"id: 7\nretry: 500\n\n")
                .unwrap_or_default()
                .is_empty()
        );
        assert_eq!(p.last_event_id(), Some("7"));
    }

    #[test]
    fn retry_is_capped_and_non_digits_ignored() {
        let mut p = parser();
        let _ = p.feed(b"retry: 99999999\n\n");
        assert_eq!(p.retry(), Some(Duration::from_secs(10)));
        let mut p = parser();
        let _ = p.feed(b"retry: 5x\nretry: -1\n\n");
        assert_eq!(p.retry(), None);
    }

    #[test]
    fn oversized_events_and_lines_are_errors() {
        let mut p = SseParser::new(12, Duration::from_secs(1));
        assert!(p.feed(b"data: 0123456789\n\n").is_err());
        let mut p = SseParser::new(12, Duration::from_secs(1));
        assert!(p.feed(b"data: 0123").is_ok());
        assert!(p.feed(b"456789").is_err());
    }

    #[test]
    fn bom_field_without_colon_and_event_type() {
        let ev = all(b"\xEF\xBB\xBFevent: endpoint\ndata: /messages?s=1\n\ndata\n\n");
        assert_eq!(ev.len(), 2);
        assert_eq!(ev[0].event.as_deref(), Some("endpoint"));
        assert!(!ev[0].is_message());
        assert_eq!(ev[0].data, "/messages?s=1");
        assert_eq!(ev[1].data, "");
    }

    #[test]
    fn split_bom() {
        let mut p = parser();
        assert!(p.feed(b"\xEF").unwrap_or_default().is_empty());
        let ev = p.feed(b"\xBB\xBFdata: z\n\n").unwrap_or_default();
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].data, "z");
    }

    #[test]
    fn every_two_way_split_gives_the_same_event() {
        let s = "event: aaaa\ndata: a世世é\r\n\n".as_bytes();
        for i in 0..=s.len() {
            for j in i..=s.len() {
                let mut p = parser();
                let mut ev = p.feed(&s[..i]).unwrap_or_default();
                ev.extend(p.feed(&s[i..j]).unwrap_or_default());
                ev.extend(p.feed(&s[j..]).unwrap_or_default());
                assert_eq!(ev.len(), 1, "split at {i}, {j}: {ev:?}");
                assert_eq!(ev[0].data, "a世世é", "split at {i}, {j}");
            }
        }
    }

    #[test]
    fn id_with_nul_is_ignored() {
        let mut p = parser();
        let _ = p.feed(b"id: a\0b\ndata: q\n\n");
        assert_eq!(p.last_event_id(), None);
    }
}
