//! Reading a cassette: [`CassetteReader`] walks one a line at a time (plain or gzip,
//! within the size limits, holding one line), checking each line as it goes, and
//! `Cassette::load`, `Cassette::parse` and `Cassette::read_from` collect it whole through
//! the same reader.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::parse::{line_text, parse_header, parse_record_ref, Replies};
use crate::{ActionRef, Cassette, CassetteError, Header, Limits, Record, RecordRef};

/// Reads a cassette one line at a time, so a tool can walk a cassette of any size without
/// holding it in memory (`pi-harness map`). It applies the rules of [`Cassette::parse`] (header
/// first, one action per record, nothing after the final record, a final record at the end) and
/// reports problems the same way (`file:line: ...`); only one line is held at a time.
pub struct CassetteReader<R> {
    path: PathBuf,
    input: R,
    header: Header,
    lineno: usize,
    buf: Vec<u8>,
    /// Key and line of the previous record, and whether it was final.
    last: Option<(&'static str, usize, bool)>,
    replies: Replies,
    done: bool,
    max_line: usize,
    /// Bytes of the input's buffer holding the last line read in place (given back to the
    /// input before the next line is read).
    in_place: usize,
    /// The length of the last record's line.
    line_bytes: usize,
}

impl CassetteReader<Box<dyn BufRead + Send>> {
    /// Open a cassette file (gzip recognised by its magic bytes), within the size limits
    /// ([`Limits::from_env`]). `-` is stdin.
    pub fn open(path: &Path) -> Result<Self, CassetteError> {
        let input = crate::input::open(path, &Limits::from_env())?;
        CassetteReader::new(path, input)
    }
}

impl<'a> CassetteReader<Box<dyn BufRead + Send + 'a>> {
    /// Read a cassette from `raw` (an open file, say), as [`CassetteReader::open`] reads a
    /// path: gzip recognised by its magic bytes, within the size limits. Only the header
    /// line is read before this returns.
    pub fn from_read(path: &Path, raw: impl Read + Send + 'a) -> Result<Self, CassetteError> {
        let input = crate::input::decompress(path, Box::new(raw), &Limits::from_env())?;
        CassetteReader::new(path, input)
    }
}

impl<R: BufRead> CassetteReader<R> {
    /// Read and check the header line; `path` only names the source in errors.
    pub fn new(path: &Path, mut input: R) -> Result<Self, CassetteError> {
        let mut buf = Vec::new();
        let max_line = Limits::from_env().max_line_bytes;
        if read_line(&mut input, &mut buf, path, 1, max_line)?.is_none() {
            return Err(CassetteError::invalid(
                path,
                1,
                "empty file: a cassette starts with a header line",
            ));
        }
        let header = parse_header(path, 1, line_text(path, 1, &buf)?)?;
        Ok(CassetteReader {
            path: path.to_path_buf(),
            input,
            header,
            lineno: 1,
            buf,
            last: None,
            replies: Replies::default(),
            done: false,
            max_line,
            in_place: 0,
            line_bytes: 0,
        })
    }

    /// The header, read and checked when the reader was made.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The header and the input after it, unread, when no record has been read yet (a copy
    /// of a cassette with another header streams the rest through); `None` after a record.
    pub fn into_rest(self) -> Option<(Header, R)> {
        (self.lineno == 1 && self.in_place == 0).then_some((self.header, self.input))
    }

    /// The next record, its payload borrowed from the reader's line where it can be (see
    /// [`RecordRef`]); the same checks, errors and end as the [`Iterator`] (which is this,
    /// made owned). After an error or the last record, `None`.
    pub fn next_ref(&mut self) -> Option<Result<RecordRef<'_>, CassetteError>> {
        self.read_record().transpose()
    }

    fn read_record(&mut self) -> Result<Option<RecordRef<'_>>, CassetteError> {
        if self.done {
            return Ok(None);
        }
        // Until a record is returned, the reader is done (errors and the end stop it).
        self.done = true;
        // The previous record's line, when it was read in place, is given back now.
        self.input.consume(std::mem::take(&mut self.in_place));
        // A whole line in the input's buffer is read in place; one that is cut by the end of
        // the buffer (or too long) is gathered in `buf` by `read_line`.
        // An error is the reader's verdict, never swallowed: a gzip stream reports a bad
        // checksum once, and the read after it looks like a clean end.
        let whole = match self.input.fill_buf() {
            Ok(chunk) => memchr::memchr(b'\n', chunk).filter(|&i| i <= self.max_line),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => None,
            Err(source) => {
                return Err(CassetteError::Io {
                    path: self.path.clone(),
                    source,
                })
            }
        };
        let line: &[u8] = match whole {
            Some(i) => {
                self.in_place = i + 1;
                // The same bytes as just looked at: nothing was consumed in between.
                let chunk = self.input.fill_buf().map_err(|source| CassetteError::Io {
                    path: self.path.clone(),
                    source,
                })?;
                &chunk[..i]
            }
            None => {
                if read_line(
                    &mut self.input,
                    &mut self.buf,
                    &self.path,
                    self.lineno + 1,
                    self.max_line,
                )?
                .is_none()
                {
                    return match self.last {
                        Some((_, _, true)) => Ok(None),
                        Some((_, line, false)) => Err(CassetteError::invalid(
                            &self.path,
                            line,
                            "the last record must be `exit`, `signal` or `hang` (how the process ends)",
                        )),
                        None => Err(CassetteError::invalid(
                            &self.path,
                            1,
                            "no records after the header: a cassette must at least say how the process ends",
                        )),
                    };
                }
                &self.buf
            }
        };
        self.lineno += 1;
        self.line_bytes = line.len();
        let record = parse_record_ref(
            &self.path,
            self.lineno,
            line_text(&self.path, self.lineno, line)?,
            self.header.version,
        )?;
        let (spawn, reap) = match &record.action {
            ActionRef::Spawn(s) => (Some(s), None),
            ActionRef::Reap(id) => (None, Some(id.as_str())),
            _ => (None, None),
        };
        self.replies
            .check(record.action.is_client_line(), spawn, reap, record.reply)
            .map_err(|what| CassetteError::invalid(&self.path, self.lineno, what))?;
        if let Some((key, line, true)) = self.last {
            return Err(CassetteError::invalid(
                &self.path,
                self.lineno,
                format!(
                    "record after the final `{key}` record on line {line} (exit, signal and hang end a cassette)"
                ),
            ));
        }
        self.last = Some((record.action.key(), record.line, record.action.is_final()));
        self.done = false;
        Ok(Some(record))
    }
}

impl<R: BufRead> Iterator for CassetteReader<R> {
    type Item = Result<Record, CassetteError>;

    /// The next record; after an error or the last record, `None`.
    fn next(&mut self) -> Option<Self::Item> {
        self.next_ref().map(|r| r.map(RecordRef::into_owned))
    }
}

/// Read one line into `buf` without its `\n`: `Some(true)` when a `\n` ended it, `Some(false)`
/// when the end of the input did, `None` at the end of the input. A line longer than `max`
/// bytes is an error naming the line (nothing past the cap is kept).
pub(crate) fn read_line(
    input: &mut (impl BufRead + ?Sized),
    buf: &mut Vec<u8>,
    path: &Path,
    lineno: usize,
    max: usize,
) -> Result<Option<bool>, CassetteError> {
    buf.clear();
    let io = |source| CassetteError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut any = false;
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        };
        if chunk.is_empty() {
            return Ok(any.then_some(false));
        }
        any = true;
        let (take, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        if buf.len() + take > max {
            return Err(CassetteError::invalid(
                path,
                lineno,
                format!(
                    "line longer than {max} bytes (the limit; raise it with {}=BYTES)",
                    crate::input::MAX_LINE_ENV
                ),
            ));
        }
        buf.extend_from_slice(&chunk[..take]);
        input.consume(take + usize::from(done));
        if done {
            return Ok(Some(true));
        }
    }
}

/// The variable that sets how much a command that holds a whole cassette may hold
/// ([`Cassette::load_held`]).
pub const MAX_HELD_ENV: &str = "PI_HARNESS_MAX_HELD_BYTES";

/// How much of a cassette's records a command that holds a whole cassette holds at most
/// (32 MiB of lines, each counted with [`HELD_PER_RECORD`]), unless [`MAX_HELD_ENV`] says:
/// the largest recorded cassette is 22 MB (pi 0.73.1's long answer, snapshots and deltas);
/// a bomb of short records took 700 MB whole.
pub const DEFAULT_MAX_HELD_BYTES: u64 = 32 << 20;

/// What a record costs in memory beside its line: its slot in the vector three times (the
/// vector doubles, and holds the old and the new while it moves) and its payload's
/// allocation, so that a bomb of short lines is counted at what it takes.
const HELD_PER_RECORD: u64 = 3 * std::mem::size_of::<Record>() as u64 + 64;

impl Cassette {
    /// [`Cassette::load`] for a command that must hold a whole cassette (a normalized diff:
    /// `cassette review`, `record --record-mode all`, `drift`): past [`DEFAULT_MAX_HELD_BYTES`]
    /// (or [`MAX_HELD_ENV`]) of records, an error naming the line and the limit, before
    /// memory grows with the input.
    pub fn load_held(path: &Path) -> Result<Cassette, CassetteError> {
        let budget = std::env::var(MAX_HELD_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|n| *n > 0)
            .unwrap_or(DEFAULT_MAX_HELD_BYTES);
        let mut reader = CassetteReader::open(path)?;
        let mut records = Vec::new();
        let mut held = 0u64;
        while let Some(r) = reader.next_ref() {
            let record = r?.into_owned();
            held += reader.line_bytes as u64 + HELD_PER_RECORD;
            if held > budget {
                return Err(CassetteError::invalid(
                    path,
                    reader.lineno,
                    format!(
                        "more than {budget} bytes of records to hold (the limit of a command that holds a whole cassette; raise it with {MAX_HELD_ENV}=BYTES)"
                    ),
                ));
            }
            records.push(record);
        }
        Ok(Cassette {
            header: reader.header,
            records,
        })
    }

    /// Read a cassette from a file (gzip is recognised by its magic bytes, whatever the
    /// name), through the one reader every tool uses ([`CassetteReader`]).
    pub fn load(path: &Path) -> Result<Cassette, CassetteError> {
        let reader = CassetteReader::open(path)?;
        Cassette::collect(reader)
    }

    /// Parse cassette bytes (plain or gzip); `path` only names the source in errors.
    pub fn parse(path: &Path, data: &[u8]) -> Result<Cassette, CassetteError> {
        let input = crate::input::decompress(path, Box::new(data), &Limits::from_env())?;
        Cassette::collect(CassetteReader::new(path, input)?)
    }

    /// Read a cassette from a stream (plain or gzip; stdin, say); `name` only names the
    /// source in errors.
    pub fn read_from(name: &Path, raw: impl Read + Send) -> Result<Cassette, CassetteError> {
        let input = crate::input::decompress(name, Box::new(raw), &Limits::from_env())?;
        Cassette::collect(CassetteReader::new(name, input)?)
    }

    /// Every record of `reader`, after its header.
    fn collect<R: BufRead>(mut reader: CassetteReader<R>) -> Result<Cassette, CassetteError> {
        let mut records = Vec::new();
        for r in reader.by_ref() {
            records.push(r?);
        }
        Ok(Cassette {
            header: reader.header,
            records,
        })
    }
}

/// Read a file's lines lazily (used by tools that scan cassettes without parsing them all).
pub fn read_lines(path: &Path) -> std::io::Result<impl Iterator<Item = std::io::Result<String>>> {
    Ok(BufReader::new(std::fs::File::open(path)?).lines())
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::io::Write as _;

    use super::*;
    use crate::{is_header_line, Action};

    const HEADER: &str = r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"t","description":"d"},"origin":{"kind":"hand-made","timing":"synthetic"}}"#;

    fn both(body: &str) -> (Result<Cassette, String>, Result<Vec<Record>, String>) {
        let data = format!("{HEADER}\n{body}");
        let path = Path::new("s.cassette.jsonl");
        let whole = Cassette::parse(path, data.as_bytes()).map_err(|e| e.to_string());
        let streamed = CassetteReader::new(path, data.as_bytes())
            .map_err(|e| e.to_string())
            .and_then(|r| r.collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string()));
        (whole, streamed)
    }

    #[test]
    fn agrees_with_the_whole_file_parser() {
        let cases = [
            "{\"dt_ms\":0,\"stdout\":{\"type\":\"a\"}}\n{\"dt_ms\":0,\"stderr\":\"x\"}\n{\"dt_ms\":1,\"exit\":0}\n",
            "{\"dt_ms\":0,\"stdout\":{\"type\":\"a\"}}\n{\"dt_ms\":1,\"exit\":0}",
            "{\"dt_ms\":0,\"stdout\":{}}\n",
            "{\"dt_ms\":0,\"exit\":0}\n{\"dt_ms\":0,\"stdout\":{}}\n",
            "{\"dt_ms\":0,\"stdout\":{}}\n\n{\"dt_ms\":0,\"exit\":0}\n",
            "{\"dt_ms\":0,\"stdout\":{},\"exit\":0}\n",
            "",
            "{\"dt_ms\":0,\"signal\":\"SIGKILL\"}\n",
        ];
        for body in cases {
            // Lines read in place (all in one buffer) and gathered (a 5-byte buffer): the same.
            let data = format!("{HEADER}\n{body}");
            let path = Path::new("s.cassette.jsonl");
            fn read<R: BufRead>(
                r: Result<CassetteReader<R>, CassetteError>,
            ) -> Result<Vec<Record>, String> {
                r.map_err(|e| e.to_string())
                    .and_then(|r| r.collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string()))
            }
            assert_eq!(
                read(CassetteReader::new(path, data.as_bytes())),
                read(CassetteReader::new(
                    path,
                    BufReader::with_capacity(5, data.as_bytes())
                )),
                "{body:?}"
            );
            let (whole, streamed) = both(body);
            match (whole, streamed) {
                (Ok(c), Ok(recs)) => assert_eq!(c.records, recs, "{body:?}"),
                (Err(a), Err(b)) => assert_eq!(a, b, "{body:?}"),
                (a, b) => panic!("{body:?}: whole {a:?} vs streamed {b:?}"),
            }
        }
    }

    #[test]
    fn next_ref_borrows_json_lines_and_reads_as_the_iterator_does() {
        let body = concat!(
            "{\"dt_ms\":0,\"stdout\":{\"type\":\"a\"}}\n",
            "{\"dt_ms\":1,\"stdout\":[1],\"newline\":false}\n",
            "{\"dt_ms\":0,\"stdout_text\":\"t\\u0041\"}\n",
            "{\"dt_ms\":0,\"stdout_b64\":\"/w==\"}\n",
            "{\"dt_ms\":0,\"stderr\":\"e\\n\"}\n",
            "{\"dt_ms\":0,\"spawn\":{\"id\":\"tool\"}}\n",
            "{\"dt_ms\":2,\"exit\":3}\n",
        );
        let data = format!("{HEADER}\n{body}");
        let path = Path::new("s.cassette.jsonl");
        let owned: Vec<Record> = CassetteReader::new(path, data.as_bytes())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let mut reader = CassetteReader::new(path, data.as_bytes()).unwrap();
        let mut n = 0;
        while let Some(r) = reader.next_ref() {
            let r = r.unwrap();
            if n == 0 {
                assert!(
                    matches!(&r.action, ActionRef::Stdout { body: Cow::Borrowed(b), .. } if *b == b"{\"type\":\"a\"}"),
                    "{r:?}"
                );
            }
            assert_eq!(r.into_owned(), owned[n]);
            n += 1;
        }
        assert_eq!(n, 7);
        assert!(reader.next_ref().is_none());
        // A late bad record: the records before it, then the error, then nothing.
        let bad = format!(
            "{HEADER}\n{{\"dt_ms\":0,\"stdout\":{{}}}}\n{{\"dt_ms\":0,\"exit\":0,\"x\":1}}\n"
        );
        let mut reader = CassetteReader::new(path, bad.as_bytes()).unwrap();
        assert!(reader.next_ref().unwrap().is_ok());
        let e = reader.next_ref().unwrap().unwrap_err().to_string();
        assert!(
            e.starts_with("s.cassette.jsonl:3: record: unknown field `x`"),
            "{e}"
        );
        assert!(reader.next_ref().is_none());
    }

    #[test]
    fn the_header_is_read_without_the_lines_after_it() {
        // A body line past the line limit is not read until a record is asked for.
        let huge = "x".repeat((64 << 10) * 3);
        let data = format!("{HEADER}\n{huge}\n");
        let mut reader = CassetteReader::from_read(Path::new("h"), data.as_bytes()).unwrap();
        assert_eq!(reader.header().scenario.name, "t");
        let e = reader.next_ref().unwrap().unwrap_err().to_string();
        assert!(e.starts_with("h:2: record: "), "{e}");
    }

    #[test]
    fn opens_plain_and_gzip_files() {
        let dir = tempfile::tempdir().unwrap();
        let body = format!(
            "{HEADER}\n{{\"dt_ms\":0,\"stdout\":{{\"type\":\"a\"}}}}\n{{\"dt_ms\":0,\"exit\":3}}\n"
        );
        let plain = dir.path().join("c.cassette.jsonl");
        std::fs::write(&plain, &body).unwrap();
        let gz = dir.path().join("c.cassette.jsonl.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(body.as_bytes()).unwrap();
        std::fs::write(&gz, enc.finish().unwrap()).unwrap();
        for path in [&plain, &gz] {
            let reader = CassetteReader::open(path).unwrap();
            assert_eq!(reader.header().scenario.name, "t");
            let recs: Vec<Record> = reader.collect::<Result<_, _>>().unwrap();
            assert_eq!(recs.len(), 2);
            assert_eq!(recs[1].action, Action::Exit(3));
            assert_eq!(recs[1].line, 3);
        }
        let e = CassetteReader::open(&dir.path().join("nope"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("nope: cannot read cassette"), "{e}");
    }

    #[test]
    fn header_problems_and_probe() {
        let e = CassetteReader::new(Path::new("f"), &b""[..])
            .err()
            .unwrap()
            .to_string();
        assert_eq!(e, "f:1: empty file: a cassette starts with a header line");
        let e = CassetteReader::new(Path::new("f"), &b"{\"type\":\"session\"}\n"[..])
            .err()
            .unwrap()
            .to_string();
        assert!(e.starts_with("f:1: header field `format` missing"), "{e}");
        assert!(is_header_line(HEADER.as_bytes()));
        assert!(!is_header_line(br#"{"type":"session","format":"x"}"#));
        assert!(!is_header_line(b"not json"));
    }
}
