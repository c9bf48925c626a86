//! Newline-delimited framing for stdio with a hard line-length cap.
//! Pure buffer logic, no I/O, so it can be fuzzed directly.
// STDIO-01

/// One framing outcome.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete line (without `\n`, a trailing `\r` removed).
    Line(Vec<u8>),
    /// A line longer than the cap was discarded up to its newline.
    TooLong,
}

/// One framing outcome, borrowing the line from the framer's buffer (no copy).
#[derive(Debug, PartialEq, Eq)]
pub enum FrameRef<'a> {
    /// A complete line (without `\n`, a trailing `\r` removed).
    Line(&'a [u8]),
    /// A line longer than the cap was discarded up to its newline.
    TooLong,
}

impl FrameRef<'_> {
    /// The owned form.
    pub fn to_owned_frame(&self) -> Frame {
        match self {
            FrameRef::Line(l) => Frame::Line(l.to_vec()),
            FrameRef::TooLong => Frame::TooLong,
        }
    }
}

/// Splits a byte stream into lines of at most `max` bytes.
///
/// Feed chunks with [`LineFramer::push`]; take lines with
/// [`LineFramer::next_line`] (borrowed) or [`LineFramer::next_frame`]
/// (owned). Memory is bounded by `max` plus one chunk: an over-long line is
/// dropped as it arrives, never buffered whole.
///
/// Taking a line only advances an offset; consumed bytes are released once
/// per [`LineFramer::push`], so a chunk holding many lines costs one pass
/// over it (the earlier `Vec::drain` per line moved the rest of the buffer
/// for every line: quadratic in the lines per chunk).
#[derive(Debug)]
pub struct LineFramer {
    buf: Vec<u8>,
    /// Start of the unconsumed bytes in `buf`.
    start: usize,
    /// Bytes of `buf` before this offset are known to hold no newline past `start`.
    scanned: usize,
    max: usize,
    discarding: bool,
}

impl LineFramer {
    /// A framer accepting lines up to `max` bytes.
    pub fn new(max: usize) -> Self {
        Self {
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            max: max.max(1),
            discarding: false,
        }
    }

    /// Appends input. Call [`Self::next_frame`] (or [`Self::next_line`])
    /// until it returns `None` before pushing again.
    pub fn push(&mut self, mut chunk: &[u8]) {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
        if self.discarding {
            match memchr::memchr(b'\n', chunk) {
                None => return,
                Some(i) => {
                    self.discarding = false;
                    chunk = &chunk[i + 1..];
                }
            }
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete frame, if any, borrowed from the buffer.
    pub fn next_line(&mut self) -> Option<FrameRef<'_>> {
        let from = self.scanned.max(self.start);
        let found = self
            .buf
            .get(from..)
            .and_then(|rest| memchr::memchr(b'\n', rest))
            .map(|i| from + i);
        match found {
            Some(nl) if nl - self.start <= self.max => {
                let begin = self.start;
                self.start = nl + 1;
                self.scanned = self.start;
                let mut line = self.buf.get(begin..nl).unwrap_or_default();
                if let Some(stripped) = line.strip_suffix(b"\r") {
                    line = stripped;
                }
                Some(FrameRef::Line(line))
            }
            Some(nl) => {
                self.start = nl + 1;
                self.scanned = self.start;
                Some(FrameRef::TooLong)
            }
            None if self.buf.len() - self.start > self.max => {
                // Over the cap without a newline yet: drop what we have and
                // the rest of the line as it arrives.
                self.buf.clear();
                self.start = 0;
                self.scanned = 0;
                self.discarding = true;
                Some(FrameRef::TooLong)
            }
            None => {
                self.scanned = self.buf.len();
                None
            }
        }
    }

    /// The next complete frame, if any.
    pub fn next_frame(&mut self) -> Option<Frame> {
        self.next_line().map(|f| f.to_owned_frame())
    }

    /// At end of input: the unterminated last line, if any.
    pub fn finish(&mut self) -> Option<Frame> {
        if self.discarding || self.buf.len() <= self.start {
            return None;
        }
        let mut line = self.buf.split_off(self.start);
        self.buf.clear();
        self.start = 0;
        self.scanned = 0;
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Some(Frame::Line(line))
    }

    /// Bytes currently buffered and not yet handed out.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn all(f: &mut LineFramer) -> Vec<Frame> {
        std::iter::from_fn(|| f.next_frame()).collect()
    }

    #[test]
    fn splits_lines_and_strips_cr() {
        let mut f = LineFramer::new(100);
        f.push(b"a\r\nbc\n\nd");
        assert_eq!(
            all(&mut f),
            vec![
                Frame::Line(b"a".to_vec()),
                Frame::Line(b"bc".to_vec()),
                Frame::Line(vec![])
            ]
        );
        f.push(b"e\n");
        assert_eq!(all(&mut f), vec![Frame::Line(b"de".to_vec())]);
        assert_eq!(f.finish(), None);
    }

    #[test]
    fn over_long_lines_are_dropped_in_stream() {
        let mut f = LineFramer::new(4);
        f.push(b"12345678");
        assert_eq!(all(&mut f), vec![Frame::TooLong]);
        f.push(b"9999");
        assert_eq!(all(&mut f), vec![]);
        assert_eq!(f.buffered(), 0);
        f.push(b"99\nok\n");
        assert_eq!(all(&mut f), vec![Frame::Line(b"ok".to_vec())]);
        f.push(b"toolong\nfine\n");
        assert_eq!(
            all(&mut f),
            vec![Frame::TooLong, Frame::Line(b"fine".to_vec())]
        );
    }

    #[test]
    fn many_lines_per_chunk_and_lines_split_across_chunks() {
        let mut f = LineFramer::new(8);
        f.push(b"ab\ncd\r\nef");
        assert_eq!(f.next_line(), Some(FrameRef::Line(b"ab")));
        assert_eq!(f.next_line(), Some(FrameRef::Line(b"cd")));
        assert_eq!(f.next_line(), None);
        assert_eq!(f.buffered(), 2);
        f.push(b"gh");
        assert_eq!(f.next_line(), None);
        f.push(b"\n123456789\nz");
        assert_eq!(f.next_line(), Some(FrameRef::Line(b"efgh")));
        assert_eq!(f.next_line(), Some(FrameRef::TooLong));
        assert_eq!(f.next_line(), None);
        assert_eq!(f.finish(), Some(Frame::Line(b"z".to_vec())));
        assert_eq!(f.buffered(), 0);
    }

    proptest! {
        #[test]
        fn memory_is_bounded_and_lines_survive(chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..32)) {
            let mut f = LineFramer::new(16);
            for c in &chunks {
                f.push(c);
                while let Some(fr) = f.next_frame() {
                    if let Frame::Line(l) = fr {
                        prop_assert!(l.len() <= 16);
                    }
                }
                prop_assert!(f.buffered() <= 16 + 64);
            }
        }
    }
}
