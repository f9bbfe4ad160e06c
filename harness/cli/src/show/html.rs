//! `cassette show FILE --html OUT`: the cassette read once, each record drawn as it comes
//! ([`crate::timeline`]) while `show`'s facts are gathered, the page written to a new file
//! put in place at the end ([`crate::html_out`]). [`draw_cassette`] is that drawing, which
//! `pi-harness report --html` shares.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use pi_cassette::{CassetteReader, Header};
use serde_json::Value;

use crate::html_out::NewFile;
use crate::timeline::{CassetteView, End, Mask, Page};
use crate::CliError;

use super::{facts, render_json, Recording};

/// Why a page was not drawn: the cassette, or the writing.
pub enum Failure {
    /// The input (a cassette, a report): its one-line error.
    Input(CliError),
    /// Writing the page.
    Write(std::io::Error),
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Write(e)
    }
}

/// What drawing a cassette gives besides its section: `show`'s facts (as `--json` prints
/// them) and how the recorded run ends.
pub struct Drawn {
    /// The facts, as JSON.
    pub facts: Value,
    /// When and how the run ends.
    pub ending: Option<(f64, End)>,
}

/// Write the page of the cassette `file` to `out`; one line on stdout says where it is.
pub fn write_page(file: &Path, out: &Path) -> Result<(), CliError> {
    let reader = Recording::open(file).map_err(|e| CliError::usage(e.to_string()))?;
    let path = absolute(file);
    let inputs: Vec<&Path> = path.as_deref().into_iter().collect();
    let mut dest = NewFile::create(out, &inputs)?;
    let drawn = (|| -> Result<(), Failure> {
        let header = reader.header().clone();
        let mut page = Page::start(dest.writer(), mask(&header), &title(&header))?;
        let drawn = draw_cassette(&mut page, reader, file, path.as_deref(), "recorded run")?;
        page.finish(&drawn.facts, &header.scenario.description)?;
        Ok(())
    })();
    let len = finish(drawn, dest)?;
    say_written(out, len);
    Ok(())
}

/// Put the page in place, or say why not; its size.
pub fn finish(drawn: Result<(), Failure>, dest: NewFile) -> Result<u64, CliError> {
    match drawn {
        Ok(()) => {}
        Err(Failure::Input(e)) => return Err(e),
        Err(Failure::Write(e)) => return Err(dest.write_error(&e)),
    }
    dest.commit()
}

/// The line on stdout that says where the page is.
pub fn say_written(out: &Path, len: u64) {
    let abs = std::path::absolute(out).unwrap_or_else(|_| out.to_path_buf());
    println!(
        "wrote {} ({len} bytes): open file://{} in a browser",
        out.display(),
        abs.display()
    );
}

/// `file` made absolute; `None` for stdin (`-`).
pub fn absolute(file: &Path) -> Option<PathBuf> {
    (file != Path::new("-"))
        .then(|| std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf()))
}

/// The mask for a cassette's page: its `never_in_argv` literals, and the values this
/// environment gives its variables.
pub fn mask(header: &Header) -> Mask {
    Mask::new(pi_cassette::matching::secret_values(
        &header.expect,
        &|name| std::env::var(name).ok(),
    ))
}

/// The page's title: the scenario, the CLI and its release.
pub fn title(header: &Header) -> String {
    format!(
        "{} · {} {}",
        header.scenario.name,
        header.agent().name(),
        header.pi.version
    )
}

/// Draw the cassette as a section of `page` named `section`, reading it once; its facts.
pub fn draw_cassette<R: BufRead, W: Write>(
    page: &mut Page<W>,
    reader: CassetteReader<R>,
    file: &Path,
    path: Option<&Path>,
    section: &str,
) -> Result<Drawn, Failure> {
    let header = reader.header().clone();
    page.section(section)?;
    let mut view = CassetteView::new(&header);
    let mut failed = None;
    let recording = Recording::from_reader(reader, |r| {
        if failed.is_none() {
            failed = view.record(page, r).err();
        }
    })
    .map_err(|e| Failure::Input(CliError::usage(e.to_string())))?;
    if let Some(e) = failed {
        return Err(Failure::Write(e));
    }
    let facts = facts(&recording, path).map_err(|what| {
        let name = path.map_or("<stdin>".to_string(), |_| file.display().to_string());
        Failure::Input(CliError::usage(format!("{name}:1: {what}")))
    })?;
    let summary = format!(
        "{} stdout lines, {} stderr bytes",
        recording.stdout_lines, recording.stderr_bytes
    );
    let ending = view.ending();
    page.end_section(view.end(summary))?;
    Ok(Drawn {
        facts: render_json(&facts),
        ending,
    })
}
