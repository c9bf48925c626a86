//! Property tests for the incremental SSE parser.
// SSE-01, SSE-06, LEGACY-17
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ferromcp_client::sse::{SseEvent, SseParser};
use proptest::prelude::*;
use std::time::Duration;

#[derive(Debug, Clone)]
struct Ev {
    event: Option<String>,
    id: Option<String>,
    lines: Vec<String>,
    comment: bool,
}

fn text() -> impl Strategy<Value = String> {
    // No CR/LF/NUL; may start with a space or colon.
    "[ -~é世]{0,12}".prop_map(|s| s.replace(['\r', '\n', '\0'], ""))
}

fn ev() -> impl Strategy<Value = Ev> {
    (
        proptest::option::of("[a-z]{1,8}"),
        proptest::option::of("[a-z0-9-]{1,8}"),
        proptest::collection::vec(text(), 1..4),
        any::<bool>(),
    )
        .prop_map(|(event, id, lines, comment)| Ev {
            event,
            id,
            lines,
            comment,
        })
}

fn serialize(evs: &[Ev], eol: &[&str]) -> (Vec<u8>, Vec<SseEvent>) {
    let mut out = String::new();
    let mut expected = Vec::new();
    let mut last_id = None;
    let mut k = 0;
    let mut nl = |out: &mut String| {
        out.push_str(eol[k % eol.len()]);
        k += 1;
    };
    for e in evs {
        if e.comment {
            out.push_str(": keep-alive");
            nl(&mut out);
        }
        if let Some(t) = &e.event {
            out.push_str("event: ");
            out.push_str(t);
            nl(&mut out);
        }
        if let Some(i) = &e.id {
            out.push_str("id: ");
            out.push_str(i);
            nl(&mut out);
            last_id = Some(i.clone());
        }
        for l in &e.lines {
            out.push_str("data: ");
            out.push_str(l);
            nl(&mut out);
        }
        nl(&mut out);
        expected.push(SseEvent {
            event: e.event.clone(),
            data: e.lines.join("\n"),
            id: last_id.clone(),
        });
    }
    (out.into_bytes(), expected)
}

fn feed_chunked(bytes: &[u8], cuts: &[usize]) -> Vec<SseEvent> {
    let mut p = SseParser::new(1 << 20, Duration::from_secs(5));
    let mut out = Vec::new();
    let mut start = 0;
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    points.sort_unstable();
    for c in points.into_iter().chain(std::iter::once(bytes.len())) {
        if c < start {
            continue;
        }
        out.extend(p.feed(&bytes[start..c]).unwrap());
        start = c;
    }
    out
}

proptest! {
    #[test]
    fn chunking_and_line_endings_do_not_change_events(
        evs in proptest::collection::vec(ev(), 0..6),
        eol_kind in 0usize..4,
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let eol: &[&str] = match eol_kind {
            0 => &["\n"],
            1 => &["\r\n"],
            2 => &["\r"],
            // A lone CR followed by an LF would read as one CRLF: mix only these.
            _ => &["\n", "\r\n"],
        };
        let (bytes, expected) = serialize(&evs, eol);
        prop_assert_eq!(feed_chunked(&bytes, &[]), expected.clone());
        prop_assert_eq!(feed_chunked(&bytes, &cuts), expected);
    }

    #[test]
    fn arbitrary_input_never_panics(
        bytes in proptest::collection::vec(any::<u8>(), 0..512),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        let mut p = SseParser::new(64, Duration::from_millis(700));
        let mut start = 0;
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        points.sort_unstable();
        for c in points.into_iter().chain(std::iter::once(bytes.len())) {
            if c < start { continue; }
            if let Ok(evs) = p.feed(&bytes[start..c]) {
                for e in evs {
                    prop_assert!(e.data.len() <= 64);
                }
            }
            start = c;
        }
        if let Some(r) = p.retry() {
            prop_assert!(r <= Duration::from_millis(700));
        }
    }

    #[test]
    fn retry_is_honoured_and_capped(ms in any::<u32>()) {
        let mut p = SseParser::new(1024, Duration::from_millis(5000));
        let _ = p.feed(format!("retry: {ms}\n\n").as_bytes()).unwrap();
        prop_assert_eq!(p.retry(), Some(Duration::from_millis(u64::from(ms)).min(Duration::from_millis(5000))));
    }
}
