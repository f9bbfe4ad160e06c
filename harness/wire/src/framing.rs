//! Line framing for pi's stdout: turns arbitrary read chunks into lines.
//!
//! This module owns only the byte-level rules (see `docs/normalized-stream.md`,
//! "Framing"): lines end at `\n` and nowhere else (U+2028/U+2029 and lone `\r` are
//! ordinary bytes); one trailing `\r` is stripped; a final line without a newline is
//! yielded by [`LineSplitter::finish`]; a line longer than the cap is skipped without
//! buffering past the cap and reported with its full size. It knows nothing of JSON.

/// Bytes of an oversized line kept for diagnostics.
pub const OVERSIZED_HEAD_BYTES: usize = 128;

/// One framed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line<'a> {
    /// A whole line, without its `\n` and without one trailing `\r`.
    Complete {
        /// 1-based line number.
        number: u64,
        /// The line's bytes.
        bytes: &'a [u8],
    },
    /// A line longer than the cap: its content was not kept.
    Oversized {
        /// 1-based line number.
        number: u64,
        /// Full length of the line in bytes (without the `\n`).
        bytes: u64,
        /// Its first [`OVERSIZED_HEAD_BYTES`] bytes, for diagnostics.
        head: &'a [u8],
    },
}

/// Splits a byte stream into lines, whatever the chunking.
#[derive(Debug)]
pub struct LineSplitter {
    max_line_bytes: usize,
    /// The start of the current line when it has not ended yet (never more than the cap).
    partial: Vec<u8>,
    /// Set while skipping an oversized line: its length so far and its head.
    skipping: Option<(u64, Vec<u8>)>,
    /// Number of the next line.
    next_number: u64,
}

impl LineSplitter {
    /// `max_line_bytes`: the longest line (without `\n`, with a `\r` if any) that is yielded.
    pub fn new(max_line_bytes: usize) -> Self {
        LineSplitter {
            max_line_bytes,
            partial: Vec::new(),
            skipping: None,
            next_number: 1,
        }
    }

    /// Lines started so far (the number of the line being read, minus one, once finished).
    pub fn lines_seen(&self) -> u64 {
        self.next_number - 1
    }

    /// Feed a chunk; `emit` is called for each line that ends inside it.
    pub fn push(&mut self, mut chunk: &[u8], emit: &mut impl FnMut(Line<'_>)) {
        while !chunk.is_empty() {
            let newline = memchr::memchr(b'\n', chunk);
            let (piece, rest, ended) = match newline {
                Some(i) => (&chunk[..i], &chunk[i + 1..], true),
                None => (chunk, &chunk[chunk.len()..], false),
            };
            chunk = rest;
            if let Some((len, head)) = &mut self.skipping {
                *len += piece.len() as u64;
                let room = OVERSIZED_HEAD_BYTES.saturating_sub(head.len());
                head.extend_from_slice(&piece[..room.min(piece.len())]);
                if ended {
                    let (len, head) = self.skipping.take().expect("checked above");
                    self.emit_oversized(len, &head, emit);
                }
                continue;
            }
            let total = self.partial.len() + piece.len();
            // A line may hold one byte more than the cap while it could still end in `\r`.
            let too_long = total > self.max_line_bytes.saturating_add(1)
                || (ended && total > self.max_line_bytes && !self.ends_with_cr(piece));
            if too_long {
                let mut head = std::mem::take(&mut self.partial);
                let room = OVERSIZED_HEAD_BYTES.saturating_sub(head.len());
                head.extend_from_slice(&piece[..room.min(piece.len())]);
                head.truncate(OVERSIZED_HEAD_BYTES);
                if ended {
                    self.emit_oversized(total as u64, &head, emit);
                } else {
                    self.skipping = Some((total as u64, head));
                }
                continue;
            }
            if !ended {
                self.partial.extend_from_slice(piece);
                continue;
            }
            let number = self.take_number();
            if self.partial.is_empty() {
                emit(Line::Complete {
                    number,
                    bytes: strip_cr(piece),
                });
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(piece);
                emit(Line::Complete {
                    number,
                    bytes: strip_cr(&line),
                });
                // Keep the allocation for the next partial line.
                line.clear();
                self.partial = line;
            }
        }
    }

    /// End of input: yields a final line that had no `\n`.
    pub fn finish(&mut self, emit: &mut impl FnMut(Line<'_>)) {
        if let Some((len, head)) = self.skipping.take() {
            self.emit_oversized(len, &head, emit);
        } else if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            let content = strip_cr(&line);
            if content.len() > self.max_line_bytes {
                let head = &line[..line.len().min(OVERSIZED_HEAD_BYTES)];
                self.emit_oversized(line.len() as u64, head, emit);
            } else {
                let number = self.take_number();
                emit(Line::Complete {
                    number,
                    bytes: content,
                });
            }
        }
    }

    /// True when the current line, ending with `piece`, ends in `\r`.
    fn ends_with_cr(&self, piece: &[u8]) -> bool {
        match piece.last() {
            Some(&b) => b == b'\r',
            None => self.partial.last() == Some(&b'\r'),
        }
    }

    fn emit_oversized(&mut self, len: u64, head: &[u8], emit: &mut impl FnMut(Line<'_>)) {
        let number = self.take_number();
        emit(Line::Oversized {
            number,
            bytes: len,
            head,
        });
    }

    fn take_number(&mut self) -> u64 {
        let n = self.next_number;
        self.next_number += 1;
        n
    }
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Owned {
        Line(u64, Vec<u8>),
        Big(u64, u64, Vec<u8>),
    }

    fn split(chunks: &[&[u8]], max: usize) -> Vec<Owned> {
        let mut s = LineSplitter::new(max);
        let mut out = Vec::new();
        let mut f = |l: Line<'_>| {
            out.push(match l {
                Line::Complete { number, bytes } => Owned::Line(number, bytes.to_vec()),
                Line::Oversized {
                    number,
                    bytes,
                    head,
                } => Owned::Big(number, bytes, head.to_vec()),
            })
        };
        for c in chunks {
            s.push(c, &mut f);
        }
        s.finish(&mut f);
        out
    }

    fn l(n: u64, s: &str) -> Owned {
        Owned::Line(n, s.as_bytes().to_vec())
    }

    #[test]
    fn splits_on_newline_only_and_strips_one_cr() {
        let out = split(&["a\r\nb\rc\n\r\r\nd\u{2028}e\n".as_bytes()], 100);
        assert_eq!(
            out,
            vec![l(1, "a"), l(2, "b\rc"), l(3, "\r"), l(4, "d\u{2028}e")]
        );
    }

    #[test]
    fn final_line_without_newline_comes_at_finish() {
        assert_eq!(split(&[b"a\nb"], 100), vec![l(1, "a"), l(2, "b")]);
        assert_eq!(split(&[b"a\n"], 100), vec![l(1, "a")]);
        assert_eq!(split(&[b"a\r"], 100), vec![l(1, "a")]);
        assert_eq!(split(&[b""], 100), vec![]);
        assert_eq!(split(&[b"\n"], 100), vec![l(1, "")]);
    }

    #[test]
    fn utf8_split_across_chunks_is_reassembled() {
        let text = "é€😀\n".as_bytes();
        let chunks: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(split(&chunks, 100), vec![l(1, "é€😀")]);
    }

    #[test]
    fn oversized_lines_are_skipped_and_reported_with_full_size() {
        let long = "x".repeat(300);
        let input = format!("ok\n{long}\nnext\n{long}");
        let bytes = input.as_bytes();
        let chunks: Vec<&[u8]> = bytes.chunks(7).collect();
        let head = vec![b'x'; OVERSIZED_HEAD_BYTES];
        assert_eq!(
            split(&chunks, 10),
            vec![
                l(1, "ok"),
                Owned::Big(2, 300, head.clone()),
                l(3, "next"),
                Owned::Big(4, 300, head)
            ]
        );
        // Exactly at the cap is fine, one more byte is not; a trailing `\r` does not count.
        assert_eq!(split(&[b"0123456789\n"], 10), vec![l(1, "0123456789")]);
        assert_eq!(split(&[b"0123456789\r\n"], 10), vec![l(1, "0123456789")]);
        assert_eq!(
            split(&[b"0123456789a\n"], 10),
            vec![Owned::Big(1, 11, b"0123456789a".to_vec())]
        );
    }

    #[test]
    fn never_buffers_past_the_cap() {
        let mut s = LineSplitter::new(16);
        let mut n = 0;
        for _ in 0..1000 {
            s.push(&[b'y'; 1000], &mut |_| n += 1);
            assert!(s.partial.len() <= 17);
            assert!(s.skipping.as_ref().unwrap().1.len() <= OVERSIZED_HEAD_BYTES);
        }
        s.push(b"\nz\n", &mut |l| {
            n += 1;
            if let Line::Oversized { bytes, .. } = l {
                assert_eq!(bytes, 1_000_000)
            }
        });
        assert_eq!(n, 2);
    }

    proptest! {
        #[test]
        fn chunking_does_not_change_lines(
            data in proptest::collection::vec(prop_oneof![Just(b'\n'), Just(b'\r'), Just(b'a'), any::<u8>()], 0..400),
            cuts in proptest::collection::vec(0usize..400, 0..20),
            max in 0usize..40,
        ) {
            let whole = split(&[data.as_slice()], max);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(data.len())).collect();
            cuts.sort();
            let mut chunks = Vec::new();
            let mut at = 0;
            for c in cuts { chunks.push(&data[at..c]); at = c; }
            chunks.push(&data[at..]);
            prop_assert_eq!(split(&chunks, max), whole.clone());
            // Reference: split on `\n` by hand.
            let mut parts: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
            if parts.last().is_some_and(|p| p.is_empty()) { parts.pop(); }
            prop_assert_eq!(whole.len(), parts.len());
            for (i, (got, raw)) in whole.iter().zip(parts).enumerate() {
                let content = raw.strip_suffix(b"\r").unwrap_or(raw);
                let n = i as u64 + 1;
                if content.len() <= max {
                    prop_assert_eq!(got, &Owned::Line(n, content.to_vec()));
                } else {
                    let head = raw[..raw.len().min(OVERSIZED_HEAD_BYTES)].to_vec();
                    prop_assert_eq!(got, &Owned::Big(n, raw.len() as u64, head));
                }
            }
        }
    }
}
