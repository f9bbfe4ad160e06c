//! A run as a picture: one self-contained HTML page with one time axis (`cassette show
//! --html`). Pure: records in, HTML out, written a piece at a time to any writer (the
//! command chooses the file), in memory that does not grow with the run.
//!
//! - `model`: what the page draws ([`Lane`], [`Proc`], [`Arrow`]);
//! - `kinds`: which row a stdout line goes in, per agent dialect ([`Classifier`]);
//! - `procs`: the processes and signals of a recorded run ([`Procs`]);
//! - `text`: what makes text safe to show ([`Mask`] for the header's secrets, [`shown`],
//!   [`script_json`]);
//! - `page`: the page itself ([`Page`]), its policy, style (`page.css`) and script
//!   (`page.js`);
//! - `replay`: a replay as it happened, as a section ([`Replay`]: fake-pi's starts, what it
//!   said, what was left over);
//! - `stream`: the normalized stream's messages in the same rows (`map --html`, `run --html`);
//! - this module: a cassette's records as a section of a page ([`CassetteView`]).

use std::io::{self, Write};

use pi_cassette::{ActionRef, Form, Header, RecordRef};

mod kinds;
mod model;
mod page;
mod procs;
mod replay;
mod stream;
mod text;

pub use kinds::{Classifier, Kind};
pub use model::{Arrow, Lane, Proc};
pub use page::{
    tenth, Page, SectionEnd, BULK_SIZE, MAX_ITEMS, PREVIEW_BUDGET, PREVIEW_BYTES, PREVIEW_SHORT,
};
pub use procs::{End, Procs};
pub use replay::{Ended, Received, Replay, Said, Start};
pub use stream::{lane_of as stream_lane, StreamSection};
pub use text::{escape_for_script, script_json, shown, Mask, MASKED};

/// A cassette's records drawn as one section of a page, one record at a time.
pub struct CassetteView {
    classifier: Classifier,
    procs: Procs,
    t: f64,
    ending: Option<(f64, End, usize)>,
}

impl CassetteView {
    /// For a cassette with this header.
    pub fn new(header: &Header) -> CassetteView {
        CassetteView {
            classifier: Classifier::new(header.agent()),
            procs: Procs::new(header),
            t: 0.0,
            ending: None,
        }
    }

    /// Draw one record (in the section `page` has open).
    pub fn record<W: Write>(&mut self, page: &mut Page<W>, r: &RecordRef) -> io::Result<()> {
        self.t += r.dt_ms;
        let t = tenth(self.t);
        let line = r.line;
        let (lane, kind, text): (Lane, String, std::borrow::Cow<[u8]>) = match &r.action {
            ActionRef::Stdout { body, form } => {
                let kind = match form {
                    Form::Json { .. } => self.classifier.json(body),
                    Form::Text { .. } => kinds::other("text line (not JSON)"),
                    Form::Base64 => kinds::other("bytes (not UTF-8)"),
                };
                (kind.lane, kind.label, body.as_ref().into())
            }
            ActionRef::Stderr { body, form } => {
                let kind = if *form == Form::Base64 {
                    "stderr (not UTF-8)"
                } else {
                    "stderr"
                };
                (Lane::Stderr, kind.into(), body.as_ref().into())
            }
            ActionRef::Spawn(s) => {
                self.procs.spawn(t, s, line, page.mask());
                let text = serde_json::to_vec(s).unwrap_or_default();
                (Lane::Process, format!("spawn {}", s.id), text.into())
            }
            ActionRef::Reap(id) => {
                self.procs.reap(t, id, line);
                (Lane::Process, format!("reap {id}"), id.as_bytes().into())
            }
            ActionRef::Stdin(l) => {
                let kind = self.classifier.json(l.json.as_bytes());
                (
                    Lane::Client,
                    format!("stdin · {}", kind.label),
                    l.json.as_bytes().into(),
                )
            }
            ActionRef::StdinText(s) => (Lane::Client, "stdin_text".into(), s.as_bytes().into()),
            ActionRef::StdinClose => (
                Lane::Client,
                "stdin_close".into(),
                b"closes stdin"[..].into(),
            ),
            ActionRef::ClientSignal(s) => {
                self.procs.client_signal(t, s, line);
                (
                    Lane::Client,
                    format!("client_signal {s}"),
                    s.as_bytes().into(),
                )
            }
            ActionRef::Request(req) => (Lane::Request, "request".into(), req.as_bytes().into()),
            ActionRef::Exit(code) => {
                self.ending = Some((t, End::Exit(*code), line));
                (
                    Lane::Ending,
                    format!("exit {code}"),
                    format!("exits {code}").into_bytes().into(),
                )
            }
            ActionRef::Signal(s) => {
                self.ending = Some((t, End::Signal(s.clone()), line));
                (
                    Lane::Ending,
                    format!("signal {s}"),
                    format!("dies by {s}").into_bytes().into(),
                )
            }
            ActionRef::Hang => {
                self.ending = Some((t, End::Hang, line));
                (
                    Lane::Ending,
                    "hang".into(),
                    b"hangs: alive and silent, stdout open, until a signal ends it"[..].into(),
                )
            }
        };
        page.item(t, lane, &kind, line, &text)
    }

    /// When and how the run ends, once its ending was drawn.
    pub fn ending(&self) -> Option<(f64, End)> {
        self.ending.as_ref().map(|(t, end, _)| (*t, end.clone()))
    }

    /// The section's end: its length, processes and signals.
    pub fn end(self, summary: String) -> SectionEnd {
        let (t, end, line) = self.ending.unwrap_or((tenth(self.t), End::Hang, 0));
        let (procs, arrows) = self.procs.finish(t, &end, line);
        SectionEnd {
            duration: t,
            procs,
            arrows,
            summary,
            order: 0,
        }
    }
}
