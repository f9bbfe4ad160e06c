//! How a [`Mapper`](super::Mapper) is set up and what it counts: [`MapperOptions`] (the
//! line cap, the bounds on the bad lines kept for diagnostics, a resumed session) with their
//! defaults, and [`MapperStats`].

/// Default line cap: 16 MiB lets every real pi 0.73.1 line through (its snapshots grow quadratically).
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 << 20;
/// Default number of bad lines kept for diagnostics.
pub const DEFAULT_MAX_INVALID_LINES: usize = 32;
/// Default total size of the kept excerpts.
pub const DEFAULT_MAX_INVALID_BYTES: usize = 16 << 10;

/// How a [`Mapper`](super::Mapper) behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapperOptions {
    /// Longest stdout line (bytes, without `\n`) that is parsed; longer ones are skipped and reported.
    pub max_line_bytes: usize,
    /// How many bad lines are kept for `terminal.failed` diagnostics.
    pub max_invalid_lines: usize,
    /// Total bytes of excerpts kept for those diagnostics.
    pub max_invalid_bytes: usize,
    /// The caller asked to continue an existing session: emit `session.resumed` instead of `session.started`.
    pub resumed_session: bool,
}

impl Default for MapperOptions {
    fn default() -> Self {
        MapperOptions {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_invalid_lines: DEFAULT_MAX_INVALID_LINES,
            max_invalid_bytes: DEFAULT_MAX_INVALID_BYTES,
            resumed_session: false,
        }
    }
}

/// Counters, for summaries and benchmarks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MapperStats {
    /// Lines framed (complete, final unterminated and oversized ones).
    pub lines: u64,
    /// Bytes pushed.
    pub bytes: u64,
    /// Lines that were not a usable event: not JSON, not an object, no `type`, over the cap,
    /// or a known event missing what it needs.
    pub invalid_lines: u64,
    /// Lines over the line cap ([`MapperOptions::max_line_bytes`]), skipped (counted in
    /// `invalid_lines` too).
    pub oversized_lines: u64,
    /// Events of a type the mapper does not know (not counted in `invalid_lines`).
    pub unknown_events: u64,
    /// Assistant messages whose `message_end` text did not continue what had been streamed.
    pub text_divergences: u64,
}
