//! `pi-harness map`: the mapper alone over a captured pi stdout or a cassette.
//!
//! Streams: the input is read in 64 KiB chunks (raw JSONL) or one cassette line at a time
//! ([`CassetteReader`]), gzip is recognised by its magic bytes, and nothing but the current
//! chunk or line (at most the line limit, `PI_HARNESS_MAX_LINE_BYTES`: a longer line of raw
//! output is skipped as invalid, one of a cassette refused) and the mapper's state (a line's
//! worth of an assistant message) is held, so a capture of any size maps in constant memory. The normalized stream
//! goes to stdout (human text or JSONL with `--json`); a one-line summary (lines, bytes,
//! invalid lines, time, MB/s, peak memory) goes to stderr.

use std::io::{BufRead, BufWriter, Cursor, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::render::Renderer;
use crate::exit::{EXIT_FAILED, EXIT_OK};
use crate::{use_color, CliError};
use pi_cassette::{is_header_line, Action, CassetteError, CassetteReader};
use pi_provider::StderrTail;
use pi_wire::mapper::{EndCause, Mapper, MapperOptions, StreamEnd};
use pi_wire::message::{ExitInfo, Message};

/// Chunk size for raw input.
pub const CHUNK: usize = 64 << 10;
/// How far the first line is looked at to recognise a cassette header.
const HEADER_PROBE: usize = 1 << 20;

/// Map a captured `pi --mode json` stdout (raw JSONL or a cassette) to the normalized stream.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = MAP_HELP)]
pub struct MapArgs {
    /// Captured pi stdout or a cassette (`.gz` too); `-` or nothing for stdin.
    #[arg(value_name = "FILE|-")]
    pub input: Option<PathBuf>,
    /// Print the normalized messages as JSON lines.
    #[arg(long)]
    pub json: bool,
    /// The stream continues an existing session (`session.resumed` instead of `session.started`).
    #[arg(long)]
    pub resumed: bool,
    /// Draw the stream of a json-mode cassette as one HTML page to this file instead (each
    /// message at the time of the record it came from; `cassette show --html` draws the records).
    #[arg(long, value_name = "OUT.html", conflicts_with = "json")]
    pub html: Option<PathBuf>,
}

const MAP_HELP: &str = "Examples:
  pi-harness map cassettes/tool_bash.pi87.cassette.jsonl
  pi-harness map --json captured-stdout.jsonl | jq -c 'select(.type == \"tool.call\")'
  pi --mode json 'hi' < /dev/null | pi-harness map -
  zcat big.jsonl.gz | pi-harness map --json - > normalized.jsonl

A cassette is recognised by its header line; its stdout records are mapped and its final
`exit`/`signal` record gives the process end. A one-line summary goes to stderr.

The input streams, in constant memory whatever its size: a line of raw output longer than
PI_HARNESS_MAX_LINE_BYTES (64 MiB) is skipped as an invalid line, which the summary counts;
one in a cassette is an input error, like more than PI_HARNESS_MAX_INPUT_BYTES (4 GiB).
Exit status: 0 mapped (whatever the run's outcome), 1 output error, 2 input error (missing
file, malformed cassette with file:line).";

/// What a map pass saw.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Lines of pi's stdout the mapper read.
    pub lines: u64,
    /// Bytes of pi's stdout the mapper read (a cassette's stdout records, not the file).
    pub bytes: u64,
    /// Lines the mapper could not use (not JSON, not an event, too long).
    pub invalid_lines: u64,
    /// Of those, the lines longer than the line limit (skipped, not held).
    pub oversized_lines: u64,
    /// The line limit ([`pi_cassette::Limits::max_line_bytes`]).
    pub max_line_bytes: usize,
    /// Wall-clock time of the pass.
    pub seconds: f64,
    /// The input was a cassette.
    pub cassette: bool,
}

impl Summary {
    /// `map: 12 lines, 3456 bytes, 0 invalid lines, 0.002 s, 1.7 MB/s`.
    pub fn line(&self, peak_rss: Option<u64>) -> String {
        let mbs = if self.seconds > 0.0 {
            self.bytes as f64 / 1e6 / self.seconds
        } else {
            0.0
        };
        let oversized = match self.oversized_lines {
            0 => String::new(),
            n => format!(
                " ({n} over the line limit of {} bytes; raise it with {}=BYTES)",
                self.max_line_bytes,
                pi_cassette::input::MAX_LINE_ENV
            ),
        };
        let mut s = format!(
            "map: {} lines, {} bytes{}, {} invalid lines{oversized}, {:.3} s, {:.1} MB/s",
            self.lines,
            self.bytes,
            if self.cassette {
                " of cassette stdout"
            } else {
                ""
            },
            self.invalid_lines,
            self.seconds,
            mbs
        );
        if let Some(kb) = peak_rss {
            s.push_str(&format!(", peak RSS {:.1} MB", kb as f64 / 1024.0));
        }
        s
    }
}

/// Where mapped messages go.
pub struct Sink<W: Write> {
    out: W,
    json: bool,
    renderer: Renderer,
    buf: Vec<Message>,
}

impl<W: Write> Sink<W> {
    /// Messages to `out`: JSON lines with `json`, else human text (coloured with `color`).
    pub fn new(out: W, json: bool, color: bool) -> Self {
        Sink {
            out,
            json,
            renderer: Renderer::new(color),
            buf: Vec::new(),
        }
    }

    fn drain(&mut self) -> std::io::Result<()> {
        for m in self.buf.drain(..) {
            if self.json {
                serde_json::to_writer(&mut self.out, &m)?;
                self.out.write_all(b"\n")?;
            } else {
                self.out.write_all(self.renderer.render(&m).as_bytes())?;
            }
        }
        self.out.flush()
    }
}

/// A cassette is told from raw pi output by its first bytes: raw pi output never starts
/// with a `format` key, and a cassette header says `"format":"pi-cassette"` (possibly after
/// a byte order mark, or further into a hand-written header). What looks like a cassette is
/// read as one, and refused with `file:line` when it is broken.
pub fn looks_like_cassette(first: &[u8]) -> bool {
    let line = first.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(first);
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.starts_with(b"{\"format\"")
        || memchr::memmem::find(line, b"\"format\":\"pi-cassette\"").is_some()
        || is_header_line(line)
}

/// Why a map pass stopped early.
#[derive(Debug)]
pub enum MapError {
    /// The input is wrong (cannot be read, malformed cassette): a user error.
    Input(String),
    /// Writing the output failed (a closed pipe, typically).
    Output(std::io::Error),
}

/// Map everything `input` holds (named `name` in messages) into `sink`.
pub fn map_stream<W: Write>(
    name: &Path,
    input: impl Read + Send,
    resumed: bool,
    sink: &mut Sink<W>,
) -> Result<Summary, MapError> {
    let started = Instant::now();
    let read_err =
        |e: std::io::Error| MapError::Input(format!("{}: cannot read: {e}", name.display()));
    // gzip by its magic bytes (so a compressed stdin works too), within the input limits:
    // the same opening every cassette tool uses.
    let limits = pi_cassette::Limits::from_env();
    let mut input = pi_cassette::input::decompress(name, Box::new(input), &limits)
        .map_err(|e| MapError::Input(e.to_string()))?;
    let mut first = Vec::new();
    (&mut input)
        .take(HEADER_PROBE as u64)
        .read_until(b'\n', &mut first)
        .map_err(read_err)?;
    let is_cassette = looks_like_cassette(&first);
    // A line of raw output past the line limit is skipped as an invalid line, as `run` skips
    // one past its cap: nothing longer than the limit is held.
    let mut mapper = Mapper::new(MapperOptions {
        resumed_session: resumed,
        max_line_bytes: limits.max_line_bytes,
        ..MapperOptions::default()
    });
    let mut exit: Option<ExitInfo> = None;
    let mut tail = StderrTail::new(64 << 10, None);
    if is_cassette {
        let reader =
            CassetteReader::new(name, Cursor::new(first).chain(input)).map_err(cassette_err)?;
        let agent = reader.header().agent();
        if agent != pi_grammar::Agent::Pi && reader.header().mode.is_none() {
            return Err(MapError::Input(format!(
                "{}:1: a {} cassette: `map` reads pi's json-mode runs; its stream is mapped by `pi-harness run --agent {}` (replaying it with fake-pi) or `conform`",
                name.display(),
                agent.display_name(),
                agent.name()
            )));
        }
        if let Some(mode) = &reader.header().mode {
            return Err(MapError::Input(format!(
                "{}:1: a two-way ({mode}) cassette: `map` reads json-mode runs; its stdout holds responses to a client's commands (replay it with fake-pi --mode {mode})",
                name.display()
            )));
        }
        for record in reader {
            match record.map_err(cassette_err)?.action {
                Action::Stdout(b) => mapper.push(&b.data, &mut sink.buf),
                Action::Stderr(b) => tail.push(&b.data),
                Action::Exit(code) => {
                    exit = Some(ExitInfo {
                        code: Some(code),
                        signal: None,
                    })
                }
                Action::Signal(sig) => {
                    exit = Some(ExitInfo {
                        code: None,
                        signal: Some(sig),
                    })
                }
                Action::Hang
                | Action::Spawn(_)
                | Action::Stdin(_)
                | Action::StdinText(_)
                | Action::StdinClose
                | Action::ClientSignal(_)
                | Action::Request(_)
                | Action::Reap(_) => {}
            }
            if !sink.buf.is_empty() {
                sink.drain().map_err(MapError::Output)?;
            }
        }
    } else {
        mapper.push(&first, &mut sink.buf);
        drop(first);
        let mut chunk = vec![0u8; CHUNK];
        loop {
            let n = match input.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(read_err(e)),
            };
            mapper.push(&chunk[..n], &mut sink.buf);
            if !sink.buf.is_empty() {
                sink.drain().map_err(MapError::Output)?;
            }
        }
    }
    mapper.finish(
        StreamEnd {
            exit,
            stderr_tail: tail.text(),
            cause: EndCause::Eof,
        },
        &mut sink.buf,
    );
    sink.drain().map_err(MapError::Output)?;
    let stats = mapper.stats();
    Ok(Summary {
        lines: stats.lines,
        bytes: stats.bytes,
        invalid_lines: stats.invalid_lines,
        oversized_lines: stats.oversized_lines,
        max_line_bytes: limits.max_line_bytes,
        seconds: started.elapsed().as_secs_f64(),
        cassette: is_cassette,
    })
}

fn cassette_err(e: CassetteError) -> MapError {
    MapError::Input(match e {
        CassetteError::Invalid { .. } => format!("malformed cassette: {e}"),
        CassetteError::Io { .. } => e.to_string(),
        _ => e.to_string(),
    })
}

/// Peak resident memory of this process in KiB (`VmHWM`), where `/proc` tells it.
pub fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `pi-harness map`: returns the exit status.
pub fn map_command(args: MapArgs) -> i32 {
    if let Some(out) = &args.html {
        let input = args.input.clone().unwrap_or_else(|| PathBuf::from("-"));
        return match crate::map_html::write_page(&input, out, args.resumed) {
            Ok(()) => EXIT_OK,
            Err(e) => e.report(),
        };
    }
    let stdin_name = PathBuf::from("<stdin>");
    let (name, input): (PathBuf, Box<dyn Read + Send>) = match &args.input {
        Some(p) if p.as_os_str() != "-" => match std::fs::File::open(p) {
            Ok(f) if f.metadata().is_ok_and(|m| m.is_dir()) => {
                return CliError::usage(format!("{}: is a directory", p.display())).report()
            }
            Ok(f) => (p.clone(), Box::new(f)),
            Err(e) => {
                let why = match e.kind() {
                    std::io::ErrorKind::NotFound => "no such file".to_string(),
                    std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
                    _ => e.to_string(),
                };
                return CliError::usage(format!("{}: {why}", p.display())).report();
            }
        },
        _ => {
            if std::io::stdin().is_terminal() {
                return CliError::usage(
                    "no input: give a FILE, or pipe pi's stdout into `pi-harness map -`",
                )
                .report();
            }
            (stdin_name, Box::new(std::io::stdin()))
        }
    };
    let stdout = std::io::stdout();
    let color = use_color(stdout.is_terminal());
    let mut sink = Sink::new(
        BufWriter::with_capacity(CHUNK, stdout.lock()),
        args.json,
        color,
    );
    match map_stream(&name, input, args.resumed, &mut sink) {
        Ok(summary) => {
            eprintln!("{}", summary.line(peak_rss_kib()));
            EXIT_OK
        }
        Err(MapError::Input(message)) => CliError::usage(message).report(),
        // The reader went away (`| head`): nothing more to say.
        Err(MapError::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => EXIT_OK,
        Err(MapError::Output(e)) => {
            eprintln!("error: cannot write the output: {e}");
            EXIT_FAILED
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"t","description":"d"},"origin":{"kind":"hand-made","timing":"synthetic"}}"#;
    const SESSION: &str = r#"{"type":"session","version":3,"id":"s-9","timestamp":"T","cwd":"/w"}"#;

    fn map(input: &[u8], json: bool) -> (Result<Summary, MapError>, String) {
        let mut sink = Sink::new(Vec::new(), json, false);
        let r = map_stream(Path::new("in.jsonl"), input, false, &mut sink);
        (r, String::from_utf8(sink.out).unwrap())
    }

    #[test]
    fn raw_stdout_is_mapped_and_counted() {
        let raw = format!("{SESSION}\nnot json\n");
        let (r, out) = map(raw.as_bytes(), true);
        let s = r.unwrap();
        assert_eq!(
            (s.lines, s.bytes, s.invalid_lines, s.cassette),
            (2, raw.len() as u64, 1, false)
        );
        let msgs: Vec<Message> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            msgs[0],
            Message::SessionStarted {
                session_id: "s-9".into()
            }
        );
        assert!(msgs.last().unwrap().is_terminal());
    }

    #[test]
    fn cassette_stdout_and_ending_are_used() {
        let c = format!("{HEADER}\n{{\"dt_ms\":0,\"stdout\":{SESSION}}}\n{{\"dt_ms\":0,\"stderr\":\"boom\\n\"}}\n{{\"dt_ms\":0,\"signal\":\"SIGKILL\"}}\n");
        let (r, out) = map(c.as_bytes(), true);
        let s = r.unwrap();
        assert!(s.cassette);
        assert_eq!((s.lines, s.bytes), (1, SESSION.len() as u64 + 1));
        let last: Message = serde_json::from_str(out.lines().last().unwrap()).unwrap();
        match last {
            Message::TerminalFailed(f) => {
                assert_eq!(f.exit.and_then(|e| e.signal).as_deref(), Some("SIGKILL"));
                assert_eq!(f.stderr_tail.as_deref(), Some("boom\n"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn gzip_is_recognised() {
        let raw = format!("{SESSION}\n");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(raw.as_bytes()).unwrap();
        let (r, out) = map(&gz.finish().unwrap(), false);
        assert_eq!(r.unwrap().bytes, raw.len() as u64);
        assert!(out.starts_with("[session s-9]\n"), "{out}");
    }

    #[test]
    fn malformed_cassette_names_file_and_line() {
        let c = format!("{HEADER}\n{{\"dt_ms\":0,\"stdout\":{SESSION}}}\n{{\"dt_ms\":0,\"exit\":0,\"hang\":true}}\n");
        let (r, _) = map(c.as_bytes(), false);
        match r {
            Err(MapError::Input(m)) => {
                assert_eq!(m, "malformed cassette: in.jsonl:3: record has several actions (exit, hang); one per line")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn summary_line() {
        let s = Summary {
            lines: 10,
            bytes: 2_000_000,
            invalid_lines: 1,
            oversized_lines: 0,
            max_line_bytes: 1000,
            seconds: 0.5,
            cassette: false,
        };
        assert_eq!(
            s.line(Some(2048)),
            "map: 10 lines, 2000000 bytes, 1 invalid lines, 0.500 s, 4.0 MB/s, peak RSS 2.0 MB"
        );
        let s = Summary {
            oversized_lines: 1,
            ..s
        };
        assert_eq!(
            s.line(None),
            "map: 10 lines, 2000000 bytes, 1 invalid lines (1 over the line limit of 1000 bytes; raise it with PI_HARNESS_MAX_LINE_BYTES=BYTES), 0.500 s, 4.0 MB/s"
        );
    }
}
