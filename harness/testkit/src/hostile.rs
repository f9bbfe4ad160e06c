//! Inputs that test a reader's bounds, made in a test's temp dir in a moment and a few
//! megabytes: gzip or zstd that expands to gigabytes (one endless line, or many valid
//! records), a FIFO; and the check that a tool stayed within its memory bound on them
//! ([`assert_bounded`]).
//!
//! Big inputs are gzip members (or zstd frames, for a path ending in `.zst`), each compressed
//! once and written many times: a multi-member gzip stream, like a run of zstd frames, is one
//! stream to every reader of the workspace, so 2 GiB of `a` costs 2 MiB on disk and no time
//! to make.

use std::io::Write as _;
use std::path::Path;

use crate::process::Measured;

/// The memory every tool that reads a cassette or a capture stays under, besides the lines
/// it holds: 64 MiB.
pub const BASE_BYTES: u64 = 64 << 20;

/// Write `path` as gzip (zstd when its name ends in `.zst`): each part compressed once (one
/// member, or frame) and written `times` times, in order. Returns the bytes it holds once
/// decompressed.
pub fn compressed_parts(path: &Path, parts: &[(&[u8], u64)]) -> u64 {
    let zstd = path.extension().is_some_and(|e| e == "zst");
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    let mut total = 0;
    for (bytes, times) in parts {
        let member = if zstd {
            zstd::stream::encode_all(*bytes, 19).expect("compress")
        } else {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            enc.write_all(bytes).expect("compress");
            enc.finish().expect("compress")
        };
        for _ in 0..*times {
            file.write_all(&member).expect("write");
        }
        total += bytes.len() as u64 * times;
    }
    file.flush().expect("write");
    total
}

/// A bomb (gzip, or zstd for a `.zst` name): `head` (a cassette header line, say, or nothing), then `bytes` of `a`
/// without a newline: one endless line. About a thousandth of `bytes` on disk.
pub fn bomb(path: &Path, head: &[u8], bytes: u64) {
    const MIB: u64 = 1 << 20;
    let a = vec![b'a'; MIB as usize];
    compressed_parts(path, &[(head, 1), (&a, bytes / MIB)]);
}

/// Many valid lines: `head` (a header line with its `\n`, or nothing), `line` (with its
/// `\n`) repeated to about `bytes`, then `tail`. Returns how many times `line` was written.
pub fn compressed_lines(path: &Path, head: &str, line: &str, bytes: u64, tail: &str) -> u64 {
    // A block of a few hundred kilobytes, so that the file holds a few hundred members.
    let per_block = (256 << 10) / line.len().max(1) + 1;
    let block = line.repeat(per_block);
    let blocks = bytes / block.len() as u64 + 1;
    compressed_parts(
        path,
        &[
            (head.as_bytes(), 1),
            (block.as_bytes(), blocks),
            (tail.as_bytes(), 1),
        ],
    );
    blocks * per_block as u64
}

/// Make a FIFO at `path` (mode 0600).
pub fn fifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
}

/// A writer for the FIFO at `path` in a thread of its own: it opens the FIFO (which waits
/// for a reader) and writes zeros until the reader goes away. Returns how many bytes it
/// wrote when joined.
pub fn feed_zeros(path: &Path) -> std::thread::JoinHandle<u64> {
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&path) else {
            return 0;
        };
        let zeros = vec![0u8; 1 << 16];
        let mut n = 0;
        while f.write_all(&zeros).is_ok() {
            n += zeros.len() as u64;
        }
        n
    })
}

/// The run `m` of `what` ended by itself with `code` (no signal, not past its time limit),
/// said one line on stderr that starts with `stderr` (the whole message, for an error;
/// nothing at all when `stderr` is empty), and its peak RSS stayed under [`BASE_BYTES`] plus `line_bytes` (the line limit in force).
pub fn assert_bounded(what: &str, m: &Measured, code: i32, stderr: &str, line_bytes: u64) {
    let err = String::from_utf8_lossy(&m.stderr);
    assert!(
        !m.timed_out,
        "{what}: still running at its time limit; stderr {err:?}"
    );
    assert_eq!(m.code, Some(code), "{what}: {err}");
    assert!(
        (stderr.is_empty() && err.is_empty())
            || (err.starts_with(stderr) && err.ends_with('\n') && err.lines().count() == 1),
        "{what}: stderr {err:?}, expected one line starting {stderr:?}"
    );
    let bound_kib = (BASE_BYTES + line_bytes) / 1024;
    assert!(
        m.peak_rss_kib < bound_kib,
        "{what}: peak RSS {} KiB, over {bound_kib} KiB",
        m.peak_rss_kib
    );
}
