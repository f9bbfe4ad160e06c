//! `cassette show FILE --html OUT`: the cassette read once, each record drawn as it comes
//! ([`crate::timeline`]) while `show`'s facts are gathered, the page written to a new file
//! put in place at the end ([`crate::html_out`]).

use std::io::{BufRead, Write};
use std::path::Path;

use pi_cassette::{CassetteReader, Header};

use crate::html_out::NewFile;
use crate::timeline::{secrets, CassetteView, Mask, Page};
use crate::CliError;

use super::{facts, render_json, Recording};

/// Why a page was not drawn: the cassette, or the writing.
enum Failure {
    Input(CliError),
    Write(std::io::Error),
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Write(e)
    }
}

/// Write the page of the cassette `file` to `out`; one line on stdout says where it is.
pub fn write_page(file: &Path, out: &Path) -> Result<(), CliError> {
    let reader = Recording::open(file).map_err(|e| CliError::usage(e.to_string()))?;
    let path = (file != Path::new("-"))
        .then(|| std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf()));
    let inputs: Vec<&Path> = path.as_deref().into_iter().collect();
    let mut dest = NewFile::create(out, &inputs)?;
    match draw(reader, file, path.as_deref(), dest.writer()) {
        Ok(()) => {}
        Err(Failure::Input(e)) => return Err(e),
        Err(Failure::Write(e)) => return Err(dest.write_error(&e)),
    }
    let len = dest.commit()?;
    let abs = std::path::absolute(out).unwrap_or_else(|_| out.to_path_buf());
    println!(
        "wrote {} ({len} bytes): open file://{} in a browser",
        out.display(),
        abs.display()
    );
    Ok(())
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

/// Read the cassette once, drawing each record and gathering the facts, into `w`.
fn draw<R: BufRead>(
    reader: CassetteReader<R>,
    file: &Path,
    path: Option<&Path>,
    w: impl Write,
) -> Result<(), Failure> {
    let header = reader.header().clone();
    let mask = Mask::new(secrets(&header, |name| std::env::var(name).ok()));
    let mut page = Page::start(w, mask, &title(&header))?;
    page.section("recorded run")?;
    let mut view = CassetteView::new(&header);
    let mut failed = None;
    let recording = Recording::from_reader(reader, |r| {
        if failed.is_none() {
            failed = view.record(&mut page, r).err();
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
    page.end_section(view.end(summary))?;
    page.finish(&render_json(&facts), &header.scenario.description)?;
    Ok(())
}
