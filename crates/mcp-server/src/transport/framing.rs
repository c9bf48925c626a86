//! Newline-delimited framing for stdio with a hard line-length cap
//! (STDIO-01). Pure buffer logic, no I/O, so it can be fuzzed directly.

/// One framing outcome.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete line (without `\n`, a trailing `\r` removed).
    Line(Vec<u8>),
    /// A line longer than the cap was discarded up to its newline.
    TooLong,
}

/// Splits a byte stream into lines of at most `max` bytes.
///
/// Feed chunks with [`LineFramer::push`]; take lines with
/// [`LineFramer::next_frame`]. Memory is bounded by `max` plus one chunk:
/// an over-long line is dropped as it arrives, never buffered whole.
#[derive(Debug)]
pub struct LineFramer {
    buf: Vec<u8>,
    max: usize,
    discarding: bool,
    pending_too_long: bool,
}

impl LineFramer {
    /// A framer accepting lines up to `max` bytes.
    pub fn new(max: usize) -> Self {
        Self {
            buf: Vec::new(),
            max: max.max(1),
            discarding: false,
            pending_too_long: false,
        }
    }

    /// Appends input. Call [`Self::next_frame`] until it returns `None`
    /// before pushing again.
    pub fn push(&mut self, mut chunk: &[u8]) {
        if self.discarding {
            match chunk.iter().position(|b| *b == b'\n') {
                None => return,
                Some(i) => {
                    self.discarding = false;
                    chunk = &chunk[i + 1..];
                }
            }
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete frame, if any.
    pub fn next_frame(&mut self) -> Option<Frame> {
        if self.pending_too_long {
            self.pending_too_long = false;
            return Some(Frame::TooLong);
        }
        match self.buf.iter().position(|b| *b == b'\n') {
            Some(i) if i <= self.max => {
                let mut line: Vec<u8> = self.buf.drain(..=i).collect();
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                Some(Frame::Line(line))
            }
            Some(i) => {
                self.buf.drain(..=i);
                Some(Frame::TooLong)
            }
            None if self.buf.len() > self.max => {
                // Over the cap without a newline yet: drop what we have and
                // the rest of the line as it arrives.
                self.buf.clear();
                self.discarding = true;
                Some(Frame::TooLong)
            }
            None => None,
        }
    }

    /// At end of input: the unterminated last line, if any.
    pub fn finish(&mut self) -> Option<Frame> {
        if self.discarding || self.buf.is_empty() {
            return None;
        }
        let mut line = std::mem::take(&mut self.buf);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Some(Frame::Line(line))
    }

    /// Bytes currently buffered.
    pub fn buffered(&self) -> usize {
        self.buf.len()
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
