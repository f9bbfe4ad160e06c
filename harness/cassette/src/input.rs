//! Opening a cassette (or any input a tool reads): a file or `-` for stdin, gzip recognised by
//! its magic bytes whatever the name, and size limits so that a small `.gz` that expands to
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

/// Open `path` (`-`: stdin) for reading, decompressing gzip.
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

/// `raw` as lines: decompressed when it starts with gzip's magic bytes, and cut off with an
/// error past `limits.max_bytes`. Gzip is inflated on a thread of its own beside the caller
/// (the crate's `inflate` module); the compressed bytes are still read on the caller's thread.
pub fn decompress<'a>(
    path: &Path,
    raw: Box<dyn Read + Send + 'a>,
    limits: &Limits,
) -> Result<Box<dyn BufRead + Send + 'a>, CassetteError> {
    let mut peek = BufReader::new(raw);
    let head = peek.fill_buf().map_err(|source| CassetteError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let max = limits.max_bytes;
    if !head.starts_with(&[0x1f, 0x8b]) {
        return Ok(Box::new(BufReader::with_capacity(
            64 << 10,
            capped(peek, max),
        )));
    }
    // Every member of a multi-member stream; anything after the last that is not gzip is
    // an error, not ignored.
    let gunzip = move |compressed| capped(flate2::bufread::MultiGzDecoder::new(compressed), max);
    match crate::inflate::Inflating::start(Box::new(peek), gunzip) {
        Ok(on_a_thread) => Ok(Box::new(on_a_thread)),
        // No thread to be had: inflate here.
        Err(peek) => Ok(Box::new(BufReader::with_capacity(
            64 << 10,
            capped(
                flate2::bufread::MultiGzDecoder::new(BufReader::new(peek)),
                max,
            ),
        ))),
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
