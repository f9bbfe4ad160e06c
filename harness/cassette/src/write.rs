//! Writing a cassette back out as JSONL (plain or gzip) that a person can read and diff:
//! the header line, then one line per record, each payload in the form it was read in, so a
//! cassette read and written again is unchanged.

use std::io::Write;
use std::path::Path;

use base64::Engine as _;
use serde_json::value::RawValue;

use crate::raw::RawRecord;
use crate::{Action, Cassette, Form, Record};

impl Cassette {
    /// Write the cassette as JSONL: header line, then one line per record.
    pub fn write_to(&self, mut out: impl Write) -> std::io::Result<()> {
        out.write_all(self.header.to_json().as_bytes())?;
        out.write_all(b"\n")?;
        for record in &self.records {
            record.write_to(&mut out)?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Write the cassette to a file, compressed as its name asks (`.zst`, `.gz`; the forms
    /// [`Cassette::load`] reads back).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let bytes = self.encoded_for(path)?;
        crate::output::write(path, &bytes, &[]).map_err(std::io::Error::other)
    }

    /// The cassette's file bytes for a file named `path`: JSONL, compressed when the name
    /// ends in `.zst` (zstd) or `.gz` (gzip).
    pub fn encoded_for(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write_to(&mut out)?;
        crate::output::compress_for(path, out)
    }

    /// The cassette as a string (see [`Cassette::write_to`]).
    pub fn to_jsonl(&self) -> String {
        let mut buf = Vec::new();
        self.write_to(&mut buf)
            .expect("writing to a Vec cannot fail");
        String::from_utf8(buf).expect("a cassette is written as UTF-8")
    }
}

/// Why [`rewrite_header`] could not rewrite a cassette.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RewriteError {
    /// The cassette could not be read, or is not valid (the message names file and line).
    #[error("{0}")]
    Cassette(#[from] crate::CassetteError),
    /// The output could not be written (the message names it).
    #[error("{0}")]
    Output(#[from] crate::output::OutputError),
}

/// Copy the cassette `from` to `to` with its header changed by `edit`, compressed as `kind`,
/// a record at a time: every record is checked by the one reader as it passes, and nothing
/// but one record is held, whatever the cassette's size (`cassette relax`). `to` may be
/// `from` itself: it is replaced once the copy is whole ([`crate::output::create`]). The
/// header written is returned.
pub fn rewrite_header(
    from: &Path,
    to: &Path,
    kind: crate::input::Compression,
    edit: impl FnOnce(&mut crate::Header),
) -> Result<crate::Header, RewriteError> {
    let mut reader = crate::CassetteReader::open(from)?;
    let mut header = reader.header().clone();
    edit(&mut header);
    let mut pending = crate::output::create(to, &[])?;
    let io = |e: std::io::Error| pending_error(to, e);
    let file = pending.file().try_clone().map_err(io)?;
    let buffered = std::io::BufWriter::with_capacity(64 << 10, file);
    let mut out = match kind {
        crate::input::Compression::Zstd => {
            Encoder::Zstd(crate::output::zstd_encoder(buffered, None).map_err(io)?)
        }
        crate::input::Compression::Gzip => Encoder::Gzip(crate::output::gzip_encoder(buffered)),
        crate::input::Compression::None => Encoder::Plain(buffered),
    };
    out.write_all(header.to_json().as_bytes()).map_err(io)?;
    out.write_all(b"\n").map_err(io)?;
    while let Some(record) = reader.next_ref() {
        record?.into_owned().write_to(&mut out).map_err(io)?;
        out.write_all(b"\n").map_err(io)?;
    }
    out.finish().map_err(io)?;
    pending.commit()?;
    Ok(header)
}

/// The stream [`rewrite_header`] writes through, by compression.
enum Encoder<W: Write> {
    Zstd(zstd::stream::write::Encoder<'static, W>),
    Gzip(flate2::write::GzEncoder<W>),
    Plain(W),
}

impl<W: Write> Encoder<W> {
    /// Write the stream's end (zstd's epilogue, gzip's trailer) and flush.
    fn finish(self) -> std::io::Result<()> {
        let mut w = match self {
            Encoder::Zstd(e) => e.finish()?,
            Encoder::Gzip(e) => e.finish()?,
            Encoder::Plain(w) => w,
        };
        w.flush()
    }
}

impl<W: Write> Write for Encoder<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Encoder::Zstd(e) => e.write(buf),
            Encoder::Gzip(e) => e.write(buf),
            Encoder::Plain(w) => w.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Encoder::Zstd(e) => e.flush(),
            Encoder::Gzip(e) => e.flush(),
            Encoder::Plain(w) => w.flush(),
        }
    }
}

fn pending_error(to: &Path, e: std::io::Error) -> RewriteError {
    RewriteError::Output(crate::output::OutputError(format!(
        "{}: cannot write: {e}",
        to.display()
    )))
}

impl Record {
    /// Write the record as one JSON line (without its `\n`), its payload in its stored form.
    pub(crate) fn write_to(&self, out: &mut impl Write) -> std::io::Result<()> {
        let mut raw = RawRecord {
            dt_ms: Some(self.dt_ms),
            reply: self.reply,
            ..RawRecord::default()
        };
        let b64 = base64::engine::general_purpose::STANDARD;
        let json_line;
        let spawn_json;
        let client_json;
        match &self.action {
            Action::Stdout(b) => match b.form {
                Form::Json { newline } => {
                    let body = strip_newline(&b.data, newline);
                    let text = std::str::from_utf8(body).map_err(std::io::Error::other)?;
                    json_line =
                        serde_json::from_str::<&RawValue>(text).map_err(std::io::Error::other)?;
                    raw.stdout = Some(json_line);
                    if !newline {
                        raw.newline = Some(false);
                    }
                }
                Form::Text { newline } => {
                    let body = strip_newline(&b.data, newline);
                    raw.stdout_text = Some(
                        std::str::from_utf8(body)
                            .map_err(std::io::Error::other)?
                            .into(),
                    );
                    if !newline {
                        raw.newline = Some(false);
                    }
                }
                Form::Base64 => raw.stdout_b64 = Some(b64.encode(&b.data).into()),
            },
            Action::Stderr(b) => match b.form {
                Form::Base64 => raw.stderr_b64 = Some(b64.encode(&b.data).into()),
                _ => {
                    raw.stderr = Some(
                        std::str::from_utf8(&b.data)
                            .map_err(std::io::Error::other)?
                            .into(),
                    )
                }
            },
            Action::Exit(code) => raw.exit = Some(*code),
            Action::Signal(name) => raw.signal = Some(name.clone()),
            Action::Hang => raw.hang = Some(true),
            Action::Spawn(s) => {
                spawn_json = serde_json::value::to_raw_value(s).map_err(std::io::Error::other)?;
                raw.spawn = Some(&spawn_json);
            }
            Action::Stdin(c) => {
                client_json =
                    serde_json::from_str::<&RawValue>(&c.json).map_err(std::io::Error::other)?;
                raw.stdin = Some(client_json);
                raw.fields = c.fields.clone();
            }
            Action::StdinText(t) => raw.stdin_text = Some(t.clone()),
            Action::StdinClose => raw.stdin_close = Some(true),
            Action::ClientSignal(sig) => raw.client_signal = Some(sig.clone()),
            Action::Request(r) => {
                client_json =
                    serde_json::from_str::<&RawValue>(r).map_err(std::io::Error::other)?;
                raw.request = Some(client_json);
            }
            Action::Reap(id) => raw.reap = Some(id.clone()),
        }
        serde_json::to_writer(out, &raw).map_err(std::io::Error::other)
    }
}

fn strip_newline(data: &[u8], newline: bool) -> &[u8] {
    if newline {
        data.strip_suffix(b"\n").unwrap_or(data)
    } else {
        data
    }
}
