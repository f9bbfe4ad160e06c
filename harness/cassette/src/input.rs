//! Opening a cassette (or any input a tool reads): a file or `-` for stdin, gzip and zstd
//! recognised by their magic bytes whatever the name ([`Compression`]), and size limits so that a small `.gz` that expands to
//! one huge line cannot take the machine's memory.
//!
//! The limits default to [`DEFAULT_MAX_LINE_BYTES`] per line and [`DEFAULT_MAX_BYTES`] in
//! all, and are raised with the environment variables [`MAX_LINE_ENV`] and [`MAX_BYTES_ENV`]
//! (every tool reads them, so every tool gives the same verdict on the same file).

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::CassetteError;

/// Longest line read (bytes, without `\n`): 64 MiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 << 20;
/// Most bytes read from one input, after decompression: 4 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 4 << 30;
/// Raises the line limit (bytes).
pub const MAX_LINE_ENV: &str = "PI_HARNESS_MAX_LINE_BYTES";
/// Raises the total limit (bytes, after decompression).
pub const MAX_BYTES_ENV: &str = "PI_HARNESS_MAX_INPUT_BYTES";

/// How much a reader takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The longest line read, in bytes ([`DEFAULT_MAX_LINE_BYTES`] unless raised).
    pub max_line_bytes: usize,
    /// The most bytes read from one input after decompression ([`DEFAULT_MAX_BYTES`] unless raised).
    pub max_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

impl Limits {
    /// The defaults, raised (or lowered) by [`MAX_LINE_ENV`] and [`MAX_BYTES_ENV`] when set
    /// to a positive integer.
    pub fn from_env() -> Limits {
        let num = |k: &str| {
            std::env::var(k)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|n| *n > 0)
        };
        let d = Limits::default();
        Limits {
            max_line_bytes: num(MAX_LINE_ENV)
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(d.max_line_bytes),
            max_bytes: num(MAX_BYTES_ENV).unwrap_or(d.max_bytes),
        }
    }
}

/// The endings of a compressed cassette's name (`.gz`, `.zst`). Readers go by the bytes,
/// never the name; these are for finding cassettes in a directory and naming what is written.
pub const COMPRESSED_SUFFIXES: [&str; 2] = [".gz", ".zst"];

/// `name` without its compression suffix (`x.cassette.jsonl.zst` -> `x.cassette.jsonl`).
pub fn without_compression_suffix(name: &str) -> &str {
    COMPRESSED_SUFFIXES
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .unwrap_or(name)
}

/// `name` is a cassette file's: `*.cassette.jsonl`, plain, `.gz` or `.zst`.
pub fn is_cassette_file_name(name: &str) -> bool {
    without_compression_suffix(name).ends_with(".cassette.jsonl")
}

/// Open `path` (`-`: stdin) for reading, decompressing gzip or zstd.
pub fn open(path: &Path, limits: &Limits) -> Result<Box<dyn BufRead + Send>, CassetteError> {
    let raw: Box<dyn Read + Send> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin())
    } else {
        let file = std::fs::File::open(path).map_err(|source| CassetteError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Box::new(file)
    };
    decompress(path, raw, limits)
}

/// What `path` is when it is not a regular file (`a directory`, `a FIFO`, `a device`, `not a
/// regular file`); `None` for a regular file, or a path that cannot be looked at (opening it
/// names that error). Reads only the metadata: a FIFO is not opened.
pub fn not_a_regular_file(path: &Path) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt as _;
    let t = std::fs::metadata(path).ok()?.file_type();
    Some(if t.is_file() {
        return None;
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    })
}

/// Refuse `path` unless it is a regular file (`-`, stdin, is whatever the caller gave):
/// a FIFO would block until some writer came, a device such as `/dev/zero` never ends. The
/// error says what it is instead.
pub fn require_regular_file(path: &Path) -> Result<(), CassetteError> {
    if path.as_os_str() == "-" {
        return Ok(());
    }
    let Some(kind) = not_a_regular_file(path) else {
        return Ok(());
    };
    Err(CassetteError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(format!(
            "{kind}, not a cassette file (give a file, or `-` to read stdin)"
        )),
    })
}

/// How an input is compressed, told by its first bytes (never by its name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Plain text.
    None,
    /// gzip (`1f 8b`): every member of a multi-member stream is read.
    Gzip,
    /// Zstandard (`28 b5 2f fd`, or a skippable frame first, `5? 2a 4d 18`, as `pzstd`
    /// writes): every frame is read, a skippable one passed over; the window a frame may
    /// ask for is at most [`ZSTD_MAX_WINDOW_LOG`].
    Zstd,
}

/// The largest zstd window a reader accepts, as a power of two: 16 MiB. Decoding needs
/// about the window in memory, so a hostile frame asking for more is refused, not obeyed;
/// the writer ([`crate::output::zstd`]) stays well within it.
pub const ZSTD_MAX_WINDOW_LOG: u32 = 24;

impl Compression {
    /// What a file's name asks for: `.zst`, `.gz`, else plain.
    pub fn for_name(path: &Path) -> Compression {
        match path.extension().and_then(|e| e.to_str()) {
            Some("zst") => Compression::Zstd,
            Some("gz") => Compression::Gzip,
            _ => Compression::None,
        }
    }

    /// What the file at `path` is, by its first bytes (plain when it cannot be read).
    pub fn of_file(path: &Path) -> Compression {
        let mut head = Vec::new();
        let _ = std::fs::File::open(path).and_then(|f| f.take(4).read_to_end(&mut head));
        Compression::sniff(&head)
    }

    /// What the first bytes of an input say it is. A zstd stream may begin with a
    /// skippable frame (magic `0x184D2A50` to `0x184D2A5F`, little-endian: `pzstd` puts one
    /// before its frames); text never does (its first byte is `{`, or at worst other text,
    /// not `0x50`-`0x5F` followed by `2a 4d 18`).
    pub fn sniff(head: &[u8]) -> Compression {
        if head.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
            || (head.len() >= 4 && head[0] & 0xf0 == 0x50 && head[1..4] == [0x2a, 0x4d, 0x18])
        {
            Compression::Zstd
        } else {
            Compression::None
        }
    }
}

/// `raw` as lines: decompressed when it starts with gzip's or zstd's magic bytes, and cut
/// off with an error past `limits.max_bytes`. The decoder runs on a thread of its own beside
/// the caller (the crate's `inflate` module); the compressed bytes are still read on the
/// caller's thread.
pub fn decompress<'a>(
    path: &Path,
    raw: Box<dyn Read + Send + 'a>,
    limits: &Limits,
) -> Result<Box<dyn BufRead + Send + 'a>, CassetteError> {
    // Four bytes decide; a short read (a pipe) is topped up; a shorter input is plain.
    let mut raw = raw;
    let head = read_head(&mut raw, 4).map_err(|source| CassetteError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let kind = Compression::sniff(&head);
    let src = std::io::Cursor::new(head).chain(raw);
    let max = limits.max_bytes;
    if kind == Compression::None {
        return Ok(Box::new(BufReader::with_capacity(
            64 << 10,
            capped(src, max),
        )));
    }
    match crate::inflate::Inflating::start(Box::new(src), move |c| decoder(kind, max, c)) {
        Ok(on_a_thread) => Ok(Box::new(on_a_thread)),
        // No thread to be had: decode here.
        Err(src) => Ok(Box::new(BufReader::with_capacity(
            256 << 10,
            decoder(kind, max, Box::new(BufReader::with_capacity(64 << 10, src))),
        ))),
    }
}

/// The decoder of `kind` over `compressed`, with the byte cap on top.
fn decoder<'b>(
    kind: Compression,
    max: u64,
    compressed: Box<dyn BufRead + Send + 'b>,
) -> Box<dyn Read + Send + 'b> {
    match kind {
        // Every member of a multi-member stream; anything after the last that is not gzip
        // is an error, not ignored.
        Compression::Gzip => Box::new(capped(
            flate2::bufread::MultiGzDecoder::new(compressed),
            max,
        )),
        // Every frame; anything after the last that is not a frame is an error.
        Compression::Zstd => Box::new(capped(Unzstd::new(compressed), max)),
        Compression::None => Box::new(capped(compressed, max)),
    }
}

/// The first `n` bytes of `r` (fewer only at its end).
fn read_head(r: &mut dyn Read, n: usize) -> std::io::Result<Vec<u8>> {
    let mut head = vec![0; n];
    let mut have = 0;
    while have < n {
        match r.read(&mut head[have..]) {
            Ok(0) => break,
            Ok(got) => have += got,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    head.truncate(have);
    Ok(head)
}

/// A zstd stream (every frame, one after another) as text, with the window
/// [`ZSTD_MAX_WINDOW_LOG`] allows; a frame asking for more fails with a line that says so.
struct Unzstd<R: BufRead> {
    inner: Result<zstd::stream::read::Decoder<'static, R>, Option<std::io::Error>>,
}

impl<R: BufRead> Unzstd<R> {
    fn new(compressed: R) -> Self {
        let inner = zstd::stream::read::Decoder::with_buffer(compressed).and_then(|mut d| {
            d.window_log_max(ZSTD_MAX_WINDOW_LOG)?;
            Ok(d)
        });
        Unzstd {
            inner: inner.map_err(Some),
        }
    }
}

impl<R: BufRead> Read for Unzstd<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match &mut self.inner {
            Ok(d) => d.read(buf).map_err(|e| {
                // libzstd's own words for a too-large window name no limit.
                if e.to_string().contains("too much memory") {
                    std::io::Error::other(format!(
                        "a zstd frame asks for a window larger than {} MiB (the limit)",
                        (1u64 << ZSTD_MAX_WINDOW_LOG) >> 20
                    ))
                } else {
                    e
                }
            }),
            Err(e) => Err(e
                .take()
                .unwrap_or_else(|| std::io::Error::other("the zstd decoder could not start"))),
        }
    }
}

/// `inner`, failing once more than `max` bytes came through.
fn capped<R: Read>(inner: R, max: u64) -> Capped<R> {
    Capped {
        inner,
        left: max,
        max,
    }
}

/// A reader that fails once more than `max` bytes came through.
struct Capped<R> {
    inner: R,
    left: u64,
    max: u64,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n as u64 > self.left {
            return Err(std::io::Error::other(format!(
                "more than {} bytes (the limit; raise it with {MAX_BYTES_ENV}=BYTES)",
                self.max
            )));
        }
        self.left -= n as u64;
        Ok(n)
    }
}
