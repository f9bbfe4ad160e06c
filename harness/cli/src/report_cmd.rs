//! `pi-harness report --html OUT`: a replay as it happened beside the cassette's own run, one
//! page ([`crate::timeline::Replay`] over [`crate::show::html::draw_cassette`]). The test
//! helpers run it for a failing test (`PI_HARNESS_HTML=DIR`) with the files of its world:
//! fake-pi's report (`FAKE_PI_REPORT`), its timeline (`FAKE_PI_TIMELINE`), the processes the
//! world found left over, the failure. Each input is read within [`MAX_INPUT`] bytes.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use crate::html_out::NewFile;
use crate::show::html::{absolute, draw_cassette, finish, mask, say_written, title, Failure};
use crate::show::Recording;
use crate::timeline::{Page, Replay, Said};
use crate::CliError;

/// The most bytes a report, a timeline or a leftover list may hold.
pub const MAX_INPUT: u64 = 16 << 20;

/// Command-line arguments of `pi-harness report`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = REPORT_HELP)]
pub struct ReportArgs {
    /// Write the page here (a regular file or a new path; never through a link).
    #[arg(long, value_name = "OUT.html")]
    pub html: PathBuf,
    /// The cassette the replay played.
    #[arg(long, value_name = "FILE")]
    pub cassette: PathBuf,
    /// fake-pi's report file (`FAKE_PI_REPORT`): what it said of its own.
    #[arg(long, value_name = "FILE")]
    pub fake_pi_report: Option<PathBuf>,
    /// fake-pi's timeline file (`FAKE_PI_TIMELINE`): each start, its call, signals, end.
    #[arg(long, value_name = "FILE")]
    pub fake_pi_timeline: Option<PathBuf>,
    /// The processes left over, one a line (`{"what": "..."}` or the text itself).
    #[arg(long, value_name = "FILE")]
    pub leftovers: Option<PathBuf>,
    /// The test's failure message.
    #[arg(long, value_name = "TEXT")]
    pub failure: Option<String>,
    /// The test's name (the page's title).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}

const REPORT_HELP: &str = "Example:
  pi-harness report --html failed.html --cassette cassettes/sigint_mid_tool.pi73.cassette.jsonl \\
      --fake-pi-report fake-pi-report.jsonl --fake-pi-timeline fake-pi-timeline.jsonl

The page has two time axes' worth of rows on one scale: the replay as it happened (each start
of fake-pi with what the call sent, the signals it received and how it ended, what fake-pi
said, where it ended otherwise than the recording, the processes left over, the failure),
and the cassette's own run as `cassette show --html` draws it. The test helpers write it for
a failing test when PI_HARNESS_HTML=DIR is set (their README says how).

Exit status: 0 written; 1 the page could not be written; 2 a missing or malformed input
(FILE:LINE: what), an input over 16 MiB, or an OUT.html that is a link or not a file.";

/// Run `pi-harness report`; returns the exit status.
pub fn report_command(args: &ReportArgs) -> i32 {
    match write(args) {
        Ok(()) => crate::exit::EXIT_OK,
        Err(e) => e.report(),
    }
}

fn write(args: &ReportArgs) -> Result<(), CliError> {
    let replay = Replay {
        starts: lines(args.fake_pi_timeline.as_deref(), "fake_pi_timeline")?,
        said: lines::<Said>(args.fake_pi_report.as_deref(), "fake_pi_report")?,
        leftovers: leftovers(args.leftovers.as_deref())?,
        failure: args.failure.clone(),
    };
    let inputs: Vec<&Path> = [
        &args.fake_pi_report,
        &args.fake_pi_timeline,
        &args.leftovers,
    ]
    .into_iter()
    .flatten()
    .map(PathBuf::as_path)
    .collect();
    let name = args.name.as_deref().unwrap_or("a replay");
    let len = write_page(&args.html, &args.cassette, &replay, name, &inputs)?;
    say_written(&args.html, len);
    Ok(())
}

/// Write the page of `replay` beside the run of `cassette` to `out` (named `name`); its size.
/// `inputs` are files the page must not overwrite.
pub fn write_page(
    out: &Path,
    cassette: &Path,
    replay: &Replay,
    name: &str,
    inputs: &[&Path],
) -> Result<u64, CliError> {
    let reader = Recording::open(cassette).map_err(|e| CliError::usage(e.to_string()))?;
    let path = absolute(cassette);
    let mut all: Vec<&Path> = path.as_deref().into_iter().collect();
    all.extend_from_slice(inputs);
    let mut dest = NewFile::create(out, &all)?;
    let drawn = (|| -> Result<(), Failure> {
        let header = reader.header().clone();
        let page_title = format!("{name}: {}", title(&header));
        let mut page = Page::start(dest.writer(), mask(&header), &page_title)?;
        let drawn = draw_cassette(
            &mut page,
            reader,
            cassette,
            path.as_deref(),
            "the recording (the cassette)",
        )?;
        page.section("the replay, as it happened")?;
        let recorded = drawn.ending.as_ref().map(|(t, e)| (*t, e));
        let end = replay.draw(&mut page, header.agent().name(), recorded)?;
        page.end_section(end)?;
        let mut facts = drawn.facts;
        facts["report"] = serde_json::json!({
            "failure": replay.failure,
            "fake-pi said": replay.said.iter().flat_map(|s| s.lines.clone()).collect::<Vec<_>>(),
            "left over": replay.leftovers,
        });
        let subtitle = replay
            .failure
            .clone()
            .unwrap_or_else(|| header.scenario.description.clone());
        page.finish(&facts, &subtitle)?;
        Ok(())
    })();
    finish(drawn, dest)
}

/// A bounded input's text; `None` when not given.
fn text(file: Option<&Path>) -> Result<Option<String>, CliError> {
    let Some(file) = file else {
        return Ok(None);
    };
    let shown = file.display();
    let f = std::fs::File::open(file).map_err(|e| CliError::usage(format!("{shown}: {e}")))?;
    let mut bytes = Vec::new();
    f.take(MAX_INPUT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CliError::usage(format!("{shown}: {e}")))?;
    if bytes.len() as u64 > MAX_INPUT {
        return Err(CliError::usage(format!(
            "{shown}: more than {MAX_INPUT} bytes; a report this long is not one fake-pi wrote"
        )));
    }
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// The JSON lines of `file` whose object has the key `mark` (a report's own lines), each read
/// as `T`; a line that is not JSON is an error naming it.
fn lines<T: serde::de::DeserializeOwned>(
    file: Option<&Path>,
    mark: &str,
) -> Result<Vec<T>, CliError> {
    let Some(text) = text(file)? else {
        return Ok(Vec::new());
    };
    let shown = file.map(Path::display).expect("a file was read");
    let mut out = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| CliError::usage(format!("{shown}:{}: not a JSON line: {e}", n + 1)))?;
        if v.get(mark).is_none() {
            continue;
        }
        out.push(
            serde_json::from_value(v)
                .map_err(|e| CliError::usage(format!("{shown}:{}: {e}", n + 1)))?,
        );
    }
    Ok(out)
}

/// The processes left over: one a line, `{"what": "..."}` or the text itself.
fn leftovers(file: Option<&Path>) -> Result<Vec<String>, CliError> {
    Ok(text(file)?
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l)
                .ok()
                .and_then(|v| v.get("what").and_then(|w| w.as_str()).map(str::to_string))
                .unwrap_or_else(|| l.to_string())
        })
        .collect())
}

/// Where `conform --junit FILE` puts the pages of failed cases: `FILE` without its
/// extension, `.pages`, beside it.
pub fn pages_dir(junit: &Path) -> PathBuf {
    junit.with_extension("pages")
}

/// The page of a failed conformance case in `dir` (its cassette's run, the case's report as
/// the failure); its path, or `None` (said on stderr) when it could not be written.
pub fn case_page(
    dir: &Path,
    r: &conformance::verdict::CaseResult,
    cassette: &Path,
) -> Option<PathBuf> {
    let file: String = r
        .case
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let out = dir.join(format!("{file}.html"));
    let replay = Replay {
        failure: Some(conformance::report::case_text(r)),
        ..Replay::default()
    };
    let made = std::fs::create_dir_all(dir)
        .map_err(|e| CliError::usage(format!("{}: {e}", dir.display())))
        .and_then(|()| write_page(&out, cassette, &replay, &r.case, &[]));
    match made {
        Ok(_) => Some(std::path::absolute(&out).unwrap_or(out)),
        Err(e) => {
            eprintln!(
                "warning: the timeline of {} was not written: {}",
                r.case, e.message
            );
            None
        }
    }
}
