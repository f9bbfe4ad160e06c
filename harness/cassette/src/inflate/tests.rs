//! The gzip thread: the same text as inflating in place, errors in their place, bounded
//! reading ahead, no hang when the reader goes early, no signal taken by the thread.

use std::io::{self, BufRead, Read, Write};
use std::path::Path;

use crate::input::{decompress, Compression, Limits, MAX_BYTES_ENV};

/// Text that compresses a little (a counter and a hash of it), `n` bytes.
fn text(n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n + 64);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut i = 0u64;
    while out.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        writeln!(out, "{{\"line\":{i},\"noise\":\"{x:x}\"}}").unwrap();
        i += 1;
    }
    out.truncate(n);
    out
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// A reader giving at most `step` bytes a read, failing with `fail` once `fail_at` bytes
/// were given.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
    fail_at: Option<usize>,
    given: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.fail_at.is_some_and(|at| self.given >= at) {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "the disk went",
            ));
        }
        let mut n = self.step.min(buf.len()).min(self.data.len());
        if let Some(at) = self.fail_at {
            n = n.min(at - self.given);
        }
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        self.given += n;
        Ok(n)
    }
}

fn open<'a>(raw: impl Read + Send + 'a, limits: &Limits) -> Box<dyn BufRead + Send + 'a> {
    decompress(Path::new("t.gz"), Box::new(raw), limits).unwrap()
}

/// Read to the end (or the first error): the text and the error.
fn drain(mut r: impl Read) -> (Vec<u8>, Option<io::Error>) {
    let mut out = Vec::new();
    let mut buf = vec![0; 7919];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return (out, None),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => return (out, Some(e)),
        }
    }
}

/// What inflating in place gives: the text and whether an error ended it.
fn in_place(data: &[u8]) -> (Vec<u8>, bool) {
    let (out, err) = drain(flate2::read::MultiGzDecoder::new(data));
    (out, err.is_some())
}

#[test]
fn gives_the_text_of_every_member_whatever_the_reads() {
    let a = text(3 << 20);
    let b = text(100_000);
    let mut two = gz(&a);
    two.extend_from_slice(&gz(&b));
    let mut whole = a.clone();
    whole.extend_from_slice(&b);
    assert_eq!(in_place(&two), (whole, false));
    // Cut anywhere (in the header, in the deflate stream, in the trailer, in the second
    // member): what the decoder gives in place, error or not.
    for cut in [
        5,
        20_000,
        two.len() / 2,
        gz(&a).len() - 3,
        two.len() - 1,
        two.len(),
    ] {
        for step in [1 << 20, 65_536, 1000, 7] {
            if step == 7 && cut > 100_000 {
                continue;
            }
            let raw = Trickle {
                data: &two[..cut],
                step,
                fail_at: None,
                given: 0,
            };
            let (out, err) = drain(open(raw, &Limits::default()));
            let (want, want_err) = in_place(&two[..cut]);
            assert!(
                out == want,
                "cut {cut}, step {step}: {} bytes, want {}",
                out.len(),
                want.len()
            );
            assert_eq!(err.is_some(), want_err, "cut {cut}, step {step}: {err:?}");
        }
    }
}

#[test]
fn input_without_text_out_of_it_does_not_stall_it() {
    // Chunks of input that give no text (a long header comment, read 1000 bytes at a
    // time): the thread asks for more on its own.
    let mut e = flate2::GzBuilder::new()
        .comment(vec![b'c'; 60_000])
        .write(Vec::new(), flate2::Compression::fast());
    e.write_all(b"after the comment\n").unwrap();
    let data = e.finish().unwrap();
    let raw = Trickle {
        data: &data,
        step: 1000,
        fail_at: None,
        given: 0,
    };
    let (out, err) = drain(open(raw, &Limits::default()));
    assert!(err.is_none(), "{err:?}");
    assert_eq!(out, b"after the comment\n");
}

#[test]
fn errors_come_after_the_text_before_them_then_the_end() {
    let plain = text(2 << 20);
    let data = gz(&plain);
    // The input fails: its error, after the text of what was read.
    let raw = Trickle {
        data: &data,
        step: 4096,
        fail_at: Some(data.len() / 2),
        given: 0,
    };
    let (out, err) = drain(open(raw, &Limits::default()));
    let err = err.expect("the input's error");
    assert_eq!(err.kind(), io::ErrorKind::ConnectionReset);
    assert_eq!(err.to_string(), "the disk went");
    assert!(!out.is_empty() && out[..] == plain[..out.len()]);
    // A bad CRC: every byte of text, then the error, then the end, as from the decoder
    // itself (which is why `CassetteReader` never takes an error lightly).
    let mut bad = data.clone();
    let at = bad.len() - 8;
    bad[at] ^= 0xff;
    let mut r = open(&bad[..], &Limits::default());
    let (out, err) = drain(&mut r);
    assert!(err.is_some());
    assert_eq!(out, plain);
    assert_eq!(r.fill_buf().unwrap(), b"");
}

#[test]
fn the_byte_cap_stops_the_inflating() {
    let data = gz(&vec![b'y'; 50 << 20]);
    let limits = Limits {
        max_bytes: 1 << 20,
        ..Limits::default()
    };
    let (out, err) = drain(open(&data[..], &limits));
    let err = err.expect("over the cap");
    assert!(err.to_string().contains(MAX_BYTES_ENV), "{err}");
    assert!(out.len() <= 1 << 20);
}

#[test]
fn a_reader_dropped_early_ends_its_thread() {
    let data = gz(&vec![b'z'; 200 << 20]);
    for _ in 0..20 {
        let mut r = open(&data[..], &Limits::default());
        assert!(!r.fill_buf().unwrap().is_empty());
        drop(r);
    }
    // Not even read once.
    drop(open(&data[..], &Limits::default()));
}

#[test]
fn the_thread_blocks_every_signal() {
    if std::thread::available_parallelism().map_or(true, |n| n.get() < 2) {
        return; // One CPU: no thread (see `Inflating::start`).
    }
    let data = gz(&vec![b'x'; 100 << 20]);
    let mut r = open(&data[..], &Limits::default());
    assert!(!r.fill_buf().unwrap().is_empty());
    // The thread is alive (reading ahead) while the reader is: find it by name.
    let mut masks = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let dir = task.unwrap().path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim() == "pi-gunzip" {
            let status = std::fs::read_to_string(dir.join("status")).unwrap_or_default();
            if let Some(l) = status.lines().find(|l| l.starts_with("SigBlk:")) {
                masks.push(l.to_string());
            }
        }
    }
    drop(r);
    assert!(!masks.is_empty(), "no pi-gunzip thread found");
    for m in masks {
        // Every signal the kernel lets a thread block (all but SIGKILL and SIGSTOP; the
        // two reserved by the C library for its own use may show too).
        let bits = u64::from_str_radix(m.trim_start_matches("SigBlk:").trim(), 16).unwrap();
        for sig in [
            libc::SIGTERM,
            libc::SIGINT,
            libc::SIGHUP,
            libc::SIGCHLD,
            libc::SIGPIPE,
        ] {
            assert!(
                bits & (1 << (sig - 1)) != 0,
                "signal {sig} not blocked: {m}"
            );
        }
    }
}

/// zstd goes through the same thread: every frame's text, whatever the reads (a pipe
/// giving a byte at a time is still recognised by its four magic bytes), a cut stream an
/// error at its place, the byte cap on the text.
#[test]
fn zstd_gives_the_text_of_every_frame_and_cut_streams_fail() {
    let a = text(3 << 20);
    let b = text(100_000);
    let mut two = crate::output::zstd(&a).unwrap();
    let first = two.len();
    two.extend_from_slice(&crate::output::zstd(&b).unwrap());
    let mut whole = a.clone();
    whole.extend_from_slice(&b);
    let small = crate::output::zstd(&b).unwrap();
    for step in [1 << 20, 4096, 1] {
        // A byte at a time: the small frame only (a debug build reads slowly).
        let (data, want) = if step == 1 {
            (&small[..], &b)
        } else {
            (&two[..], &whole)
        };
        let raw = Trickle {
            data,
            step,
            fail_at: None,
            given: 0,
        };
        let (out, err) = drain(open(raw, &Limits::default()));
        assert!(err.is_none(), "step {step}: {err:?}");
        assert!(out == *want, "step {step}: {} bytes", out.len());
    }
    for cut in [2, 5, first / 2, first - 1, two.len() - 2] {
        let raw = Trickle {
            data: &two[..cut],
            step: 65_536,
            fail_at: None,
            given: 0,
        };
        let (out, err) = drain(open(raw, &Limits::default()));
        if cut < 4 {
            // Fewer bytes than the magic: plain text.
            assert_eq!((out.as_slice(), err.is_none()), (&two[..cut], true));
        } else {
            assert!(
                err.is_some(),
                "cut {cut}: no error after {} bytes",
                out.len()
            );
            assert!(whole.starts_with(&out), "cut {cut}");
        }
    }
    let limits = Limits {
        max_bytes: 1 << 20,
        ..Limits::default()
    };
    let (out, err) = drain(open(&two[..], &limits));
    let err = err.expect("the cap");
    assert!(err.to_string().contains(MAX_BYTES_ENV), "{err}");
    assert!(out.len() <= 1 << 20);
}

/// A skippable frame (magic `0x184D2A5X`, a 4-byte little-endian size, that many bytes)
/// holding `content`.
fn skippable(nibble: u8, content: &[u8]) -> Vec<u8> {
    let mut f = vec![0x50 | nibble, 0x2a, 0x4d, 0x18];
    f.extend_from_slice(&(content.len() as u32).to_le_bytes());
    f.extend_from_slice(content);
    f
}

/// `pzstd` writes a skippable frame before each frame (its size); a stream that begins with
/// one was read as text ("not UTF-8 at byte 8"). It is zstd, its skippable frames passed
/// over wherever they are; one that claims more bytes than there are is an error.
#[test]
fn a_zstd_stream_that_begins_with_a_skippable_frame_is_zstd() {
    assert_eq!(Compression::sniff(&skippable(0, b"")), Compression::Zstd);
    assert_eq!(Compression::sniff(&skippable(0xf, b"")), Compression::Zstd);
    assert_eq!(Compression::sniff(b"P*M\x17"), Compression::None);
    assert_eq!(Compression::sniff(b"{\"format\""), Compression::None);
    let a = text(300_000);
    let b = text(1000);
    let mut stream = skippable(0, &[0x12, 0x34, 0, 0]);
    stream.extend_from_slice(&crate::output::zstd(&a).unwrap());
    stream.extend_from_slice(&skippable(7, &[0; 100]));
    stream.extend_from_slice(&crate::output::zstd(&b).unwrap());
    let mut whole = a.clone();
    whole.extend_from_slice(&b);
    for step in [1 << 20, 4096, 3] {
        let raw = Trickle {
            data: &stream,
            step,
            fail_at: None,
            given: 0,
        };
        let (out, err) = drain(open(raw, &Limits::default()));
        assert!(err.is_none(), "step {step}: {err:?}");
        assert!(out == whole, "step {step}: {} bytes", out.len());
    }
    // A skippable frame that claims 4 GiB and ends at once: an error, nothing held.
    let mut lying = skippable(0, b"");
    lying[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    lying.extend_from_slice(b"short");
    let (out, err) = drain(open(&lying[..], &Limits::default()));
    assert!(out.is_empty());
    assert!(err.is_some(), "a cut skippable frame");
}
