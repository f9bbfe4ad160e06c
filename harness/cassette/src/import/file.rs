//! [`import_file`]: a capture read one line at a time, its cassette written as it goes to a
//! temp file beside the output, then read back through the one reader and checked (it is
//! the cassette built, and replays the capture byte for byte), and only then put in place.
//! Whatever the capture's size, what is held is a few lines (the line read, its record, its
//! encoded line), each within the line limit; the comparisons are by count and digest.

use std::hash::Hasher as _;
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::{Builder, ImportError, ImportOptions};
use crate::input::MAX_LINE_ENV;
use crate::output::{OutputError, Pending};
use crate::{Action, ActionRef, Cassette, CassetteReader, Header, Limits, Record};

/// What an import wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// Records after the header.
    pub records: usize,
    /// Bytes the cassette replays on stdout.
    pub stdout_bytes: u64,
    /// Its ending (`exit`, `signal` or `hang`).
    pub ending: Action,
}

impl Imported {
    /// What a cassette built in memory holds.
    pub fn of(c: &Cassette) -> Imported {
        Imported {
            records: c.records.len(),
            stdout_bytes: c.stdout_bytes().len() as u64,
            ending: c.ending().clone(),
        }
    }
}

/// Read `raw_path` (`-`: stdin; gzip recognised by its magic bytes) one line at a time,
/// import it with the stderr file already in `opts`, and write `out` (compressed when it
/// ends in `.zst` or `.gz`) as it goes; then read `out` back and check that it is the cassette built and
/// replays the input byte for byte. On any failure nothing is left at `out`. A capture that
/// is a FIFO or a device is refused at once; a line longer than the line limit, or a record
/// that would be, stops the import naming the line and the limit.
pub fn import_file(
    raw_path: &Path,
    out: &Path,
    opts: &ImportOptions,
) -> Result<Imported, ImportError> {
    if pi_grammar::Grammar::pinned_or_newer(&opts.pi_version).is_none() {
        return Err(ImportError::Usage(format!(
            "--pi-version {}: not a pinned pi version ({}); fake-pi replays only those. A capture of another producer in pi's format (snapshot-only, for example) is imported with the nearest pinned version and --dialect",
            opts.pi_version,
            pi_grammar::KNOWN_VERSIONS.join(", ")
        )));
    }
    let limits = Limits::from_env();
    let mut lines = Lines::open(raw_path, &limits)?;
    let name = lines.name.clone();
    let (mut builder, header) = Builder::new(&name, opts)?;
    let input = |message: &str| ImportError::Input {
        file: name.clone(),
        line: 0,
        message: message.into(),
    };
    let Some(mut newline) = lines.next()? else {
        return Err(input(
            "is empty: a captured `pi --mode json` stdout has at least the session line",
        ));
    };
    if crate::is_header_line(&lines.buf) || lines.buf.starts_with(b"{\"format\"") {
        return Err(input(
            "is already a cassette (its first line is a cassette header); import takes pi's raw stdout",
        ));
    }
    let mut inputs: Vec<&Path> = vec![raw_path];
    inputs.extend(opts.stderr_path.as_deref());
    let mut w = Writer::create(out, &inputs, &name, &opts.secret_values, &limits)?;
    w.header(&header)?;
    let mut stdout = Tally::default();
    loop {
        if newline {
            lines.buf.push(b'\n');
        }
        stdout.add(&lines.buf);
        lines.buf.truncate(lines.buf.len() - usize::from(newline));
        let at = lines.number;
        if at <= super::dialect::LINES_LOOKED_AT {
            if let Some(what) = super::dialect::foreign(&lines.buf) {
                // Nothing is written: the output is dropped uncommitted.
                return Err(ImportError::Input {
                    file: name.clone(),
                    line: at,
                    message: super::dialect::refusal(what),
                });
            }
        }
        // The line goes into its record (and then to the file), not copied.
        let line = std::mem::take(&mut lines.buf);
        builder.line_owned(line, newline, &mut |r| w.record(&r, &name, at))?;
        match lines.next()? {
            Some(nl) => newline = nl,
            None => break,
        }
    }
    let stderr_file = opts.stderr_path.clone().unwrap_or_else(|| name.clone());
    builder.finish(&mut |r| {
        let from = if matches!(r.action, Action::Stderr(_)) {
            &stderr_file
        } else {
            &name
        };
        w.record(&r, from, 0)
    })?;
    let ending = w.last_ending.clone().unwrap_or(Action::Hang);
    let records = w.records;
    let (pending, written) = w.finish()?;
    // What reading held goes before reading back (a line may be as long as the limit).
    drop(lines);
    let stderr = opts.stderr.as_deref().unwrap_or_default();
    read_back(&pending, out, &header, &written, &stdout, stderr)?;
    pending.commit().map_err(|e| output_err(out, e))?;
    Ok(Imported {
        records,
        stdout_bytes: stdout.bytes,
        ending,
    })
}

/// The `--stderr` file's bytes, at most a line's worth (its record is one line): a FIFO
/// or a device is refused at once, a longer file names the limit.
pub fn read_stderr_file(path: &Path) -> Result<Vec<u8>, ImportError> {
    let err = |message: String| ImportError::Input {
        file: path.to_path_buf(),
        line: 0,
        message,
    };
    if let Some(kind) = crate::input::not_a_regular_file(path) {
        return Err(err(format!(
            "cannot read --stderr file: {kind}, not a file"
        )));
    }
    let max = Limits::from_env().max_line_bytes;
    let file =
        std::fs::File::open(path).map_err(|e| err(format!("cannot read --stderr file: {e}")))?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(file, max as u64 + 1), &mut bytes)
        .map_err(|e| err(format!("cannot read --stderr file: {e}")))?;
    if bytes.len() > max {
        return Err(err(format!(
            "--stderr file longer than {max} bytes (its record is one line: the line limit; raise it with {MAX_LINE_ENV}=BYTES)"
        )));
    }
    Ok(bytes)
}

/// A capture's lines, each within the line limit.
struct Lines {
    input: Box<dyn BufRead + Send>,
    /// The capture's name in messages (`<stdin>` for `-`).
    name: PathBuf,
    max: usize,
    /// The last line read, without its `\n`.
    buf: Vec<u8>,
    /// Its number (1-based).
    number: usize,
}

impl Lines {
    /// Open `path` (`-`: stdin) within `limits`; a FIFO or a device is refused.
    fn open(path: &Path, limits: &Limits) -> Result<Lines, ImportError> {
        let stdin = path.as_os_str() == "-";
        let name = if stdin {
            PathBuf::from("<stdin>")
        } else {
            path.to_path_buf()
        };
        let err = |message: String| ImportError::Input {
            file: name.clone(),
            line: 0,
            message,
        };
        if let Some(kind) = (!stdin)
            .then(|| crate::input::not_a_regular_file(path))
            .flatten()
        {
            return Err(err(format!(
                "cannot read: {kind}, not a file (give a file, or `-` to read stdin)"
            )));
        }
        let input = crate::input::open(path, limits).map_err(|e| match e {
            crate::CassetteError::Io { source, .. } => err(format!("cannot read: {source}")),
            other => err(format!("cannot read: {other}")),
        })?;
        Ok(Lines {
            input,
            name,
            max: limits.max_line_bytes,
            buf: Vec::new(),
            number: 0,
        })
    }

    /// Read the next line into `buf`: `Some(true)` when a `\n` ended it, `Some(false)` for a
    /// last line without one, `None` at the end.
    fn next(&mut self) -> Result<Option<bool>, ImportError> {
        self.buf.clear();
        loop {
            let chunk = match self.input.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(ImportError::Input {
                        file: self.name.clone(),
                        line: 0,
                        message: format!("cannot read: {e}"),
                    })
                }
            };
            if chunk.is_empty() {
                if self.buf.is_empty() {
                    return Ok(None);
                }
                self.number += 1;
                return Ok(Some(false));
            }
            let (take, done) = match memchr::memchr(b'\n', chunk) {
                Some(i) => (i, true),
                None => (chunk.len(), false),
            };
            if self.buf.len() + take > self.max {
                return Err(ImportError::Input {
                    file: self.name.clone(),
                    line: self.number + 1,
                    message: format!(
                        "line longer than {} bytes (the limit; raise it with {MAX_LINE_ENV}=BYTES)",
                        self.max
                    ),
                });
            }
            self.buf.extend_from_slice(&chunk[..take]);
            self.input.consume(take + usize::from(done));
            if done {
                self.number += 1;
                return Ok(Some(true));
            }
        }
    }
}

/// A count and a digest of byte strings, to compare what was written with what reads back
/// without holding either.
#[derive(Default)]
struct Tally {
    hash: std::collections::hash_map::DefaultHasher,
    bytes: u64,
    count: u64,
}

impl Tally {
    fn add(&mut self, b: &[u8]) {
        self.hash.write(b);
        self.bytes += b.len() as u64;
        self.count += 1;
    }

    /// More bytes of the last string added (the digest streams: the same as one `add`).
    fn extend(&mut self, b: &[u8]) {
        self.hash.write(b);
        self.bytes += b.len() as u64;
    }

    fn same(&self, other: &Tally) -> bool {
        (self.hash.finish(), self.bytes, self.count)
            == (other.hash.finish(), other.bytes, other.count)
    }
}

/// Where the cassette's bytes go: the temp file, plain, gzipped or zstd-compressed.
enum Sink {
    Plain(BufWriter<std::fs::File>),
    /// Boxed: the encoder's state is large beside a plain writer.
    Gzip(Box<flate2::write::GzEncoder<BufWriter<std::fs::File>>>),
    Zstd(Box<zstd::stream::write::Encoder<'static, BufWriter<std::fs::File>>>),
}

impl Sink {
    /// The sink a file named `out` asks for (`.zst`, `.gz`, else plain).
    fn for_name(out: &Path, file: BufWriter<std::fs::File>) -> std::io::Result<Sink> {
        Ok(match out.extension().and_then(|e| e.to_str()) {
            Some("zst") => Sink::Zstd(Box::new(crate::output::zstd_encoder(file, None)?)),
            Some("gz") => Sink::Gzip(Box::new(crate::output::gzip_encoder(file))),
            _ => Sink::Plain(file),
        })
    }

    fn writer(&mut self) -> &mut dyn Write {
        match self {
            Sink::Plain(w) => w,
            Sink::Gzip(w) => w,
            Sink::Zstd(w) => w,
        }
    }

    fn finish(self) -> std::io::Result<()> {
        match self {
            Sink::Plain(mut w) => w.flush(),
            Sink::Gzip(w) => (*w).finish()?.flush(),
            Sink::Zstd(w) => (*w).finish()?.flush(),
        }
    }
}

/// The cassette being written, a line at a time: each line checked (within the line limit,
/// no secret) before it is written, and counted.
struct Writer<'a> {
    out: PathBuf,
    /// The first input, named when the cassette would hold a secret.
    input: &'a Path,
    secrets: &'a [(String, String)],
    max_line: usize,
    pending: Pending,
    sink: Sink,
    line: Vec<u8>,
    lines: Tally,
    records: usize,
    last_ending: Option<Action>,
}

impl<'a> Writer<'a> {
    fn create(
        out: &Path,
        inputs: &[&Path],
        input: &'a Path,
        secrets: &'a [(String, String)],
        limits: &Limits,
    ) -> Result<Writer<'a>, ImportError> {
        let mut pending = crate::output::create(out, inputs).map_err(|e| output_err(out, e))?;
        let file = pending
            .file()
            .try_clone()
            .map_err(|e| ImportError::Output {
                file: out.to_path_buf(),
                message: format!("cannot write: {e}"),
            })?;
        let file = BufWriter::with_capacity(64 << 10, file);
        let sink = Sink::for_name(out, file).map_err(|e| ImportError::Output {
            file: out.to_path_buf(),
            message: format!("cannot write: {e}"),
        })?;
        Ok(Writer {
            out: out.to_path_buf(),
            input,
            secrets,
            max_line: limits.max_line_bytes,
            pending,
            sink,
            line: Vec::new(),
            lines: Tally::default(),
            records: 0,
            last_ending: None,
        })
    }

    fn header(&mut self, h: &Header) -> Result<(), ImportError> {
        self.line.clear();
        self.line.extend_from_slice(h.to_json().as_bytes());
        if self.line.len() > self.max_line {
            return Err(ImportError::Usage(format!(
                "the cassette's header would be a line longer than {} bytes (the limit; raise it with {MAX_LINE_ENV}=BYTES)",
                self.max_line
            )));
        }
        self.put(None)
    }

    /// Write `r`, made from line `at` of `from` (0: the whole file).
    fn record(&mut self, r: &Record, from: &Path, at: usize) -> Result<(), ImportError> {
        if let Some(payload) = crate::redact::payload(&r.action) {
            return self.stream(r, payload, from, at);
        }
        self.line.clear();
        let mut capped = Capped {
            buf: &mut self.line,
            max: self.max_line,
            over: false,
        };
        if let Err(e) = r.write_to(&mut capped) {
            return Err(if capped.over {
                ImportError::Input {
                    file: from.to_path_buf(),
                    line: at,
                    message: format!(
                        "its record would be a line longer than {} bytes (the limit; raise it with {MAX_LINE_ENV}=BYTES)",
                        self.max_line
                    ),
                }
            } else {
                ImportError::Output {
                    file: self.out.clone(),
                    message: format!("cannot encode: {e}"),
                }
            });
        }
        self.put(crate::redact::payload(&r.action))?;
        self.records += 1;
        if r.action.is_final() {
            self.last_ending = Some(r.action.clone());
        }
        Ok(())
    }

    /// Write the stdout or stderr record `r` (whose bytes are `payload`) straight to the file,
    /// never held as a line: its payload is as long as the capture's line, and a second copy
    /// would double what import holds. The secrets are looked for in the payload (the line's
    /// JSON text is the payload, as it is or escaped); past the line limit the temp file is
    /// left unfinished and never committed.
    fn stream(
        &mut self,
        r: &Record,
        payload: &[u8],
        from: &Path,
        at: usize,
    ) -> Result<(), ImportError> {
        self.refuse_secrets(&[], Some(payload))?;
        self.lines.add(&[]);
        let mut to_file = Streamed {
            out: self.sink.writer(),
            tally: &mut self.lines,
            written: 0,
            max: self.max_line,
            over: false,
        };
        let wrote = r.write_to(&mut to_file);
        let over = to_file.over;
        if let Err(e) = wrote.and_then(|()| self.sink.writer().write_all(b"\n")) {
            return Err(if over {
                ImportError::Input {
                    file: from.to_path_buf(),
                    line: at,
                    message: format!(
                        "its record would be a line longer than {} bytes (the limit; raise it with {MAX_LINE_ENV}=BYTES)",
                        self.max_line
                    ),
                }
            } else {
                ImportError::Output {
                    file: self.out.clone(),
                    message: format!("cannot write: {e}"),
                }
            });
        }
        self.records += 1;
        if r.action.is_final() {
            self.last_ending = Some(r.action.clone());
        }
        Ok(())
    }

    /// Refuse a line (its JSON text `line`, its stdout or stderr bytes `payload`) that holds a
    /// secret's value.
    fn refuse_secrets(&self, line: &[u8], payload: Option<&[u8]>) -> Result<(), ImportError> {
        let number = self.lines.count + 1;
        match crate::redact::secrets_in_line(line, payload, self.secrets).first() {
            Some(name) => Err(ImportError::Input {
                file: self.input.to_path_buf(),
                line: 0,
                message: format!(
                    "holds the value of ${name} (--secret-env), which would be line {number} of {}; put a placeholder in its place (with --redaction) and import again",
                    self.out.display()
                ),
            }),
            None => Ok(()),
        }
    }

    /// Write the line in `line` (whose stdout or stderr bytes are `payload`) unless it holds
    /// a secret.
    fn put(&mut self, payload: Option<&[u8]>) -> Result<(), ImportError> {
        self.refuse_secrets(&self.line, payload)?;
        self.lines.add(&self.line);
        let w = self.sink.writer();
        w.write_all(&self.line)
            .and_then(|()| w.write_all(b"\n"))
            .map_err(|e| ImportError::Output {
                file: self.out.clone(),
                message: format!("cannot write: {e}"),
            })
    }

    /// Flush everything to the temp file: the pending output and the tally of its lines.
    fn finish(self) -> Result<(Pending, Tally), ImportError> {
        let out = self.out;
        self.sink.finish().map_err(|e| ImportError::Output {
            file: out.clone(),
            message: format!("cannot write: {e}"),
        })?;
        Ok((self.pending, self.lines))
    }
}

/// A record streamed to the file: counted into the tally, refused past `max` bytes.
struct Streamed<'w> {
    out: &'w mut dyn Write,
    tally: &'w mut Tally,
    written: usize,
    max: usize,
    over: bool,
}

impl Write for Streamed<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if self.written + b.len() > self.max {
            self.over = true;
            return Err(std::io::Error::other("line too long"));
        }
        self.out.write_all(b)?;
        self.tally.extend(b);
        self.written += b.len();
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A line being encoded, refused past `max` bytes (nothing past it is kept).
struct Capped<'b> {
    buf: &'b mut Vec<u8>,
    max: usize,
    over: bool,
}

impl Write for Capped<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() + b.len() > self.max {
            self.over = true;
            return Err(std::io::Error::other("line too long"));
        }
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Read the written cassette back through the one reader, a record at a time: its header
/// and every line must be what was written (each record encoded again), its stdout the
/// capture's bytes, its stderr the `--stderr` file's.
fn read_back(
    pending: &Pending,
    out: &Path,
    header: &Header,
    written: &Tally,
    stdout: &Tally,
    stderr: &[u8],
) -> Result<(), ImportError> {
    let fail = |message: String| ImportError::Output {
        file: out.to_path_buf(),
        message,
    };
    let unreadable =
        |e: crate::CassetteError| fail(format!("written cassette does not read back: {e}"));
    let different = || fail("written cassette reads back different from what was written".into());
    // The file holds the lines written, byte for byte (one line held at a time)...
    let limits = Limits::from_env();
    let mut input = crate::input::open(pending.temp_path(), &limits).map_err(unreadable)?;
    let mut lines = Tally::default();
    let mut line = Vec::new();
    let mut number = 0;
    loop {
        number += 1;
        let read =
            crate::reader::read_line(&mut input, &mut line, out, number, limits.max_line_bytes)
                .map_err(unreadable)?;
        match read {
            Some(_) => lines.add(&line),
            None => break,
        }
    }
    drop((input, line));
    if !lines.same(written) {
        return Err(different());
    }
    // ...and they read as a cassette whose output is the input's (records borrowed from the
    // reader's line: no copy of a long one).
    let file = std::fs::File::open(pending.temp_path())
        .map_err(|e| fail(format!("written cassette does not read back: {e}")))?;
    let mut reader = CassetteReader::from_read(out, file).map_err(unreadable)?;
    if reader.header() != header {
        return Err(different());
    }
    let mut replayed = Tally::default();
    let mut stderr_seen = 0usize;
    let mut stderr_same = true;
    while let Some(r) = reader.next_ref() {
        match r.map_err(unreadable)?.action {
            ActionRef::Stdout { body, form } => {
                // One input line: its bytes, then the `\n` the form adds.
                replayed.add(&body);
                if form.newline() {
                    replayed.extend(b"\n");
                }
            }
            ActionRef::Stderr { body, .. } => {
                let end = stderr_seen + body.len();
                stderr_same &= stderr.get(stderr_seen..end) == Some(&body[..]);
                stderr_seen = end;
            }
            _ => {}
        }
    }
    if !replayed.same(stdout) {
        return Err(fail(format!(
            "refused: replayed stdout differs from the input; input {} bytes, replay {} bytes",
            stdout.bytes, replayed.bytes
        )));
    }
    if !stderr_same || stderr_seen != stderr.len() {
        return Err(fail(
            "refused: replayed stderr differs from the --stderr file".into(),
        ));
    }
    Ok(())
}

/// An output error of `out`, without the path the message already starts with.
fn output_err(out: &Path, e: OutputError) -> ImportError {
    let prefix = format!("{}: ", out.display());
    let message = e.0.strip_prefix(&prefix).unwrap_or(&e.0).to_string();
    ImportError::Output {
        file: out.to_path_buf(),
        message,
    }
}

#[cfg(test)]
mod tests;
