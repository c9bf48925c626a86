//! The client's incremental SSE parser on
//! hostile streams.
//!
//! Input: byte 0 picks the chunk size (1…64), the rest is the stream. The
//! parser never panics; events and lines stay within the cap; `retry` stays
//! within its cap; and the result does not depend on how the stream is cut
//! into chunks (CRLF or a BOM split across chunks included).
// SSE-01, SSE-06, LEGACY-17
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::time::Duration;

use ferromcp_protocol::sse::{SseEvent, SseParser};

const MAX: usize = 256;
const RETRY_CAP: Duration = Duration::from_secs(30);

type Outcome = (Vec<SseEvent>, Option<String>, Option<Duration>);

fn run(stream: &[u8], chunk: usize) -> Option<Outcome> {
    let mut p = SseParser::new(MAX, RETRY_CAP);
    let mut events = Vec::new();
    for c in stream.chunks(chunk) {
        events.extend(p.feed(c).ok()?);
    }
    Some((events, p.last_event_id().map(str::to_owned), p.retry()))
}

fuzz_target!(|data: &[u8]| {
    let Some((&chunk, stream)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(chunk % 64) + 1;
    let whole = run(stream, stream.len().max(1));
    let pieces = run(stream, chunk);
    if let (Some(whole), Some(pieces)) = (&whole, &pieces) {
        assert_eq!(whole, pieces, "result depends on chunking");
        for e in &whole.0 {
            assert!(e.data.len() <= MAX);
            assert!(e.id.as_deref().is_none_or(|id| !id.contains('\0')));
        }
        assert!(whole.2.is_none_or(|r| r <= RETRY_CAP));
    }
    // Over-long input fails the same way whatever the chunking.
    assert_eq!(
        whole.is_none(),
        pieces.is_none(),
        "error depends on chunking"
    );
});
