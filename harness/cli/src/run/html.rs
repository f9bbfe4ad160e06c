//! `run --html OUT`: the normalized stream drawn as it comes, each message at the time it
//! arrived (ms since the run started), into one page like `map --html`'s, put in place when
//! the run ends. The file is checked and created before the run (never through a link); a
//! write that fails is said once on stderr and does not change the run's status.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Instant;

use pi_wire::message::Message;

use crate::html_out::NewFile;
use crate::timeline::{Mask, Page, SectionEnd, StreamSection};
use crate::CliError;

/// The page of a run being drawn.
pub(super) struct RunPage {
    dest: NewFile,
    out: PathBuf,
    page: Option<Page<BufWriter<File>>>,
    section: StreamSection,
    start: Instant,
    failed: Option<std::io::Error>,
}

impl RunPage {
    /// Create the page's file (refused: a link, a directory, a special file) and begin it.
    pub(super) fn create(out: &Path, title: &str) -> Result<RunPage, CliError> {
        let mut dest = NewFile::create(out, &[])?;
        let start = Instant::now();
        let page = Page::start(dest.take_writer(), Mask::default(), title)
            .and_then(|mut p| p.section("the normalized stream, as it came").map(|()| p))
            .map_err(|e| dest.write_error(&e))?;
        Ok(RunPage {
            dest,
            out: out.to_path_buf(),
            page: Some(page),
            section: StreamSection::default(),
            start,
            failed: None,
        })
    }

    /// Draw `m`, now.
    pub(super) fn message(&mut self, m: &Message) {
        let (Some(page), None) = (self.page.as_mut(), &self.failed) else {
            return;
        };
        let t = self.start.elapsed().as_secs_f64() * 1000.0;
        self.failed = self.section.message(page, t, m).err();
    }

    /// End the page and put it in place; one line on stderr says where (or why not).
    pub(super) fn finish(mut self) {
        let page = self.page.take().expect("finished once");
        let t = self.start.elapsed().as_secs_f64() * 1000.0;
        let end = SectionEnd {
            duration: t,
            summary: format!(
                "{} messages, each at the time it arrived",
                self.section.count()
            ),
            ..SectionEnd::default()
        };
        let written = match self.failed.take() {
            Some(e) => Err(e),
            None => (|| {
                let mut page = page;
                page.end_section(end)?;
                page.finish(
                    &serde_json::json!({}),
                    "pi-harness run: the normalized stream",
                )
            })(),
        };
        let done = match written {
            Ok(w) => self.dest.commit_writer(w),
            Err(e) => Err(self.dest.write_error(&e)),
        };
        match done {
            Ok(len) => eprintln!(
                "pi-harness: wrote {} ({len} bytes): the run's stream as a page",
                self.out.display()
            ),
            Err(e) => eprintln!("error: {}", e.message),
        }
    }
}
