//! stdio line framing against a reference model.
//!
//! Input: byte 0 picks the line cap (1…64), byte 1 the chunk size (1…64),
//! the rest is the stream. Memory stays bounded by cap + chunk; every line
//! handed out is at most the cap; and when no line exceeds the cap the
//! framer yields exactly the lines of a plain split (trailing `\r` removed).
// STDIO-01
#![no_main]

use libfuzzer_sys::fuzz_target;
use ferromcp_protocol::framing::{Frame, LineFramer};

fuzz_target!(|data: &[u8]| {
    let [cap, chunk, stream @ ..] = data else {
        return;
    };
    let cap = usize::from(cap % 64) + 1;
    let chunk = usize::from(chunk % 64) + 1;
    let mut f = LineFramer::new(cap);
    let mut got = Vec::new();
    for c in stream.chunks(chunk) {
        f.push(c);
        while let Some(frame) = f.next_frame() {
            if let Frame::Line(l) = &frame {
                assert!(l.len() <= cap);
            }
            got.push(frame);
        }
        assert!(f.buffered() <= cap + chunk, "buffer grew past cap + chunk");
    }
    if let Some(last) = f.finish() {
        got.push(last);
    }
    // Reference: split on '\n', drop one trailing '\r'.
    let mut lines: Vec<&[u8]> = stream.split(|b| *b == b'\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let strip = |l: &[u8]| l.strip_suffix(b"\r").unwrap_or(l).to_vec();
    if lines.iter().all(|l| l.len() <= cap) {
        let want: Vec<Frame> = lines.iter().map(|l| Frame::Line(strip(l))).collect();
        assert_eq!(got, want);
    } else {
        let too_long = got.iter().filter(|f| **f == Frame::TooLong).count();
        assert!(too_long >= 1);
    }
});
