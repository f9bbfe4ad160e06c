//! `pi-harness map CASSETTE --html OUT`: the normalized stream of a json-mode cassette drawn on
//! the recording's clock (each message at the time of the stdout record that produced it, the
//! terminal at the ending), one page like `cassette show --html`'s. A raw capture has no
//! times: it is refused, in one line.

use std::path::Path;

use pi_cassette::{ActionRef, CassetteReader};
use pi_wire::mapper::{EndCause, Mapper, MapperOptions, StreamEnd};
use pi_wire::message::{ExitInfo, Message};

use crate::html_out::NewFile;
use crate::show::html::{absolute, finish, mask, say_written, title, Failure};
use crate::show::Recording;
use crate::timeline::{tenth, Page, SectionEnd, StreamSection};
use crate::CliError;

/// Draw the normalized stream of `file` into `out`.
pub fn write_page(file: &Path, out: &Path, resumed: bool) -> Result<(), CliError> {
    let reader = Recording::open(file).map_err(|e| {
        CliError::usage(format!(
            "{e} (map --html draws a cassette: a raw capture has no times; `pi-harness cassette import` makes one)"
        ))
    })?;
    let header = reader.header().clone();
    if header.agent() != pi_grammar::Agent::Pi || header.mode.is_some() {
        return Err(CliError::usage(format!(
            "{}:1: map --html draws a pi json-mode cassette's stream; `cassette show --html` draws any cassette",
            file.display()
        )));
    }
    let path = absolute(file);
    let inputs: Vec<&Path> = path.as_deref().into_iter().collect();
    let mut dest = NewFile::create(out, &inputs)?;
    let drawn = (|| -> Result<(), Failure> {
        let mut page = Page::start(dest.writer(), mask(&header), &title(&header))?;
        let end = draw(&mut page, reader, resumed)?;
        page.end_section(end)?;
        let facts = serde_json::json!({"scenario": header.scenario, "origin": header.origin});
        page.finish(
            &facts,
            "the normalized stream (map --json), on the recording's clock",
        )?;
        Ok(())
    })();
    let len = finish(drawn, dest)?;
    say_written(out, len);
    Ok(())
}

/// The stream of `reader`'s records as the page's section.
fn draw<R: std::io::BufRead, W: std::io::Write>(
    page: &mut Page<W>,
    mut reader: CassetteReader<R>,
    resumed: bool,
) -> Result<SectionEnd, Failure> {
    page.section("the normalized stream")?;
    let mut mapper = Mapper::new(MapperOptions {
        resumed_session: resumed,
        ..MapperOptions::default()
    });
    let mut out: Vec<Message> = Vec::new();
    let (mut t, mut exit) = (0.0, None);
    let mut section = StreamSection::default();
    let mut emit = |page: &mut Page<W>, t: f64, out: &mut Vec<Message>| -> std::io::Result<()> {
        for m in out.drain(..) {
            section.message(page, t, &m)?;
        }
        Ok(())
    };
    while let Some(record) = reader.next_ref() {
        let record = record.map_err(|e| Failure::Input(CliError::usage(e.to_string())))?;
        t += record.dt_ms;
        match record.action {
            ActionRef::Stdout { body, form } => {
                let mut data = body.into_owned();
                if form.newline() {
                    data.push(b'\n');
                }
                mapper.push(&data, &mut out);
            }
            ActionRef::Exit(code) => {
                exit = Some(ExitInfo {
                    code: Some(code),
                    signal: None,
                })
            }
            ActionRef::Signal(sig) => {
                exit = Some(ExitInfo {
                    code: None,
                    signal: Some(sig),
                })
            }
            _ => {}
        }
        emit(page, tenth(t), &mut out)?;
    }
    mapper.finish(
        StreamEnd {
            exit,
            stderr_tail: None,
            cause: EndCause::Eof,
        },
        &mut out,
    );
    emit(page, tenth(t), &mut out)?;
    Ok(SectionEnd {
        duration: tenth(t),
        summary: format!(
            "{} messages, each at the time of the record it came from",
            section.count()
        ),
        ..SectionEnd::default()
    })
}
