//! The page itself: one self-contained HTML file written a piece at a time ([`Page`]), so
//! memory stays bounded whatever the run's size. Its head carries a Content-Security-Policy
//! of `default-src 'none'` that lets in only the page's own inline script and style, named
//! by their SHA-256; the data goes in `<script type="application/json">` elements
//! ([`super::text::script_json`]) that the script reads and draws with `textContent`
//! only. Nothing is ever fetched.
//!
//! A page holds one or more sections (the cassette's own run; a replay as it happened),
//! each a time axis of marks: one item per record (`[t, kind, line, preview, bytes]`),
//! streamed out as the records come. What bounds the file: a preview is at most
//! [`PREVIEW_BYTES`] of its record while the page's [`PREVIEW_BUDGET`] lasts, then
//! [`PREVIEW_SHORT`]; past [`MAX_ITEMS`] items a record is only counted, in a bulk of its
//! kind (at most [`BULK_SIZE`] records each) that the page draws as an aggregate.

use std::collections::HashMap;
use std::io::{self, Write};

use base64::Engine as _;
use serde_json::{json, Value};
use sha2::Digest as _;

use super::model::{Arrow, Lane, Proc};
use super::text::{escape_for_script, script_json, shown_str, Mask};

/// The page's script.
const SCRIPT: &str = include_str!("page.js");
/// The page's style.
const STYLE: &str = include_str!("page.css");

/// The most bytes of one record shown while the page's preview budget lasts.
pub const PREVIEW_BYTES: usize = 1024;
/// The preview bytes a page spends at [`PREVIEW_BYTES`] a record.
pub const PREVIEW_BUDGET: usize = 2 << 20;
/// The most bytes of one record shown once the budget is spent.
pub const PREVIEW_SHORT: usize = 96;
/// The most records a page draws one by one (with a preview); the others are counted.
pub const MAX_ITEMS: usize = 20_000;
/// The most records one bulk counts.
pub const BULK_SIZE: usize = 10_000;
/// The most kinds a section names; the others are named `(more kinds)` in their row.
const MAX_KINDS: usize = 500;

/// A timeline page being written to `out`.
pub struct Page<W: Write> {
    out: W,
    mask: Mask,
    title: String,
    sections: Vec<Value>,
    current: Option<Section>,
    budget: usize,
    items: usize,
}

/// The section being written: its kinds, counts and open bulks.
struct Section {
    title: String,
    kinds: Vec<(Lane, String)>,
    index: HashMap<(Lane, String), usize>,
    records: usize,
    per_lane: HashMap<Lane, usize>,
    open: HashMap<usize, Bulk>,
    bulks: Vec<Bulk>,
    first: bool,
}

/// Records of one kind counted, not drawn one by one.
#[derive(Debug, Clone, serde::Serialize)]
struct Bulk {
    t0: f64,
    t1: f64,
    kind: usize,
    line0: usize,
    line1: usize,
    count: usize,
}

/// What a section ends with: its length, its processes and signals, and anything else it
/// shows (a replay's notes).
#[derive(Debug, Default)]
pub struct SectionEnd {
    /// When the run ends (ms).
    pub duration: f64,
    /// The processes.
    pub procs: Vec<Proc>,
    /// The signals.
    pub arrows: Vec<Arrow>,
    /// A short line under the section's title.
    pub summary: String,
    /// Where the page draws the section: by this, then in the order written.
    pub order: i32,
}

impl<W: Write> Page<W> {
    /// Start the page: its head (the policy, the style), the body's frame. `title` names
    /// it (masked).
    pub fn start(mut out: W, mask: Mask, title: &str) -> io::Result<Page<W>> {
        let csp = format!(
            "default-src 'none'; script-src '{}'; style-src '{}'; img-src 'none'; base-uri 'none'; form-action 'none'",
            hash(SCRIPT),
            hash(STYLE)
        );
        write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n\
             <meta name=\"referrer\" content=\"no-referrer\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <title>pi-harness timeline</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
             <header class=\"top\"><h1 id=\"tl-title\">pi-harness timeline</h1><p id=\"tl-sub\"></p></header>\n\
             <noscript><p>This page draws its timeline with JavaScript. `pi-harness cassette show FILE` prints the same facts as text.</p></noscript>\n\
             <main id=\"tl-main\"><div id=\"tl-col\"><div id=\"tl-sections\"></div></div>\n\
             <aside id=\"tl-side\" tabindex=\"0\" aria-label=\"The selected record and what the caller must send\"><section id=\"tl-detail\" aria-labelledby=\"tl-detail-h\"><h2 id=\"tl-detail-h\">Selected</h2>\
             <div id=\"tl-detail-body\" aria-live=\"polite\"><p>Hover over a mark, or focus one and press Enter, to see its record.</p></div></section>\n\
             <section id=\"tl-facts\" aria-labelledby=\"tl-facts-h\"><h2 id=\"tl-facts-h\">What the caller must send</h2><div id=\"tl-facts-body\"></div></section></aside>\n\
             </main>\n"
        )?;
        Ok(Page {
            out,
            title: shown_str(&mask.apply(title)),
            mask,
            sections: Vec::new(),
            current: None,
            budget: PREVIEW_BUDGET,
            items: 0,
        })
    }

    /// The mask the page applies.
    pub fn mask(&self) -> &Mask {
        &self.mask
    }

    /// Open a section named `title`; its items follow.
    pub fn section(&mut self, title: &str) -> io::Result<()> {
        debug_assert!(self.current.is_none(), "a section is open");
        let n = self.sections.len();
        write!(
            self.out,
            "<script type=\"application/json\" id=\"tl-items-{n}\">["
        )?;
        self.current = Some(Section {
            title: shown_str(&self.mask.apply(title)),
            kinds: Vec::new(),
            index: HashMap::new(),
            records: 0,
            per_lane: HashMap::new(),
            open: HashMap::new(),
            bulks: Vec::new(),
            first: true,
        });
        Ok(())
    }

    /// One record of the open section: at `t` ms, in `lane`, of kind `kind`, from `line`,
    /// `bytes` its text (previewed, masked).
    pub fn item(
        &mut self,
        t: f64,
        lane: Lane,
        kind: &str,
        line: usize,
        bytes: &[u8],
    ) -> io::Result<()> {
        let s = self.current.as_mut().expect("an open section");
        s.records += 1;
        *s.per_lane.entry(lane).or_default() += 1;
        let k = s.kind(lane, kind, &self.mask);
        if self.items >= MAX_ITEMS {
            let full = {
                let b = s.open.entry(k).or_insert(Bulk {
                    t0: t,
                    t1: t,
                    kind: k,
                    line0: line,
                    line1: line,
                    count: 0,
                });
                b.t1 = t;
                b.line1 = line;
                b.count += 1;
                b.count >= BULK_SIZE
            };
            if full {
                let b = s.open.remove(&k).expect("the bulk just counted");
                s.bulks.push(b);
            }
            return Ok(());
        }
        self.items += 1;
        let cap = if self.budget >= PREVIEW_BYTES {
            PREVIEW_BYTES
        } else {
            PREVIEW_SHORT
        };
        let preview = self.mask.preview(bytes, cap);
        self.budget = self.budget.saturating_sub(preview.len());
        let sep = if s.first { "" } else { "," };
        s.first = false;
        let t = tenth(t);
        write!(
            self.out,
            "{sep}[{t},{k},{line},{},{}]",
            script_json(&preview),
            bytes.len()
        )
    }

    /// Close the open section with what it ends with.
    pub fn end_section(&mut self, end: SectionEnd) -> io::Result<()> {
        let mut s = self.current.take().expect("an open section");
        self.out.write_all(b"]</script>\n")?;
        let mut open: Vec<Bulk> = s.open.drain().map(|(_, b)| b).collect();
        open.sort_by_key(|b| b.line0);
        s.bulks.extend(open);
        let mut lanes: Vec<(Lane, usize)> = s.per_lane.into_iter().collect();
        lanes.sort();
        let lanes: Vec<Value> = lanes
            .into_iter()
            .map(|(l, n)| json!({"id": l, "label": l.label(), "count": n}))
            .collect();
        let kinds: Vec<Value> = s.kinds.iter().map(|(l, label)| json!([l, label])).collect();
        let procs: Vec<Proc> = end.procs;
        let arrows = end.arrows;
        let bulks: Vec<Value> = s
            .bulks
            .iter()
            .map(|b| json!([tenth(b.t0), tenth(b.t1), b.kind, b.line0, b.line1, b.count]))
            .collect();
        self.sections.push(json!({
            "title": s.title,
            "summary": self.mask.value(&Value::String(end.summary)),
            "duration": tenth(end.duration),
            "order": end.order,
            "records": s.records,
            "lanes": lanes,
            "kinds": kinds,
            "bulks": bulks,
            "procs": self.mask.value(&serde_json::to_value(procs).expect("processes serialize")),
            "arrows": self.mask.value(&serde_json::to_value(arrows).expect("arrows serialize")),
        }));
        Ok(())
    }

    /// Finish the page: the sections' data, `facts` (what the caller must send, masked),
    /// `subtitle`, the script. Returns the writer.
    pub fn finish(mut self, facts: &Value, subtitle: &str) -> io::Result<W> {
        debug_assert!(self.current.is_none(), "a section is still open");
        let meta = json!({
            "title": self.title,
            "subtitle": shown_str(&self.mask.apply(subtitle)),
            "sections": self.sections,
            "facts": self.mask.value(facts),
            "limits": {
                "preview_bytes": PREVIEW_BYTES,
                "preview_short": PREVIEW_SHORT,
                "max_items": MAX_ITEMS,
            },
        });
        let meta = escape_for_script(&meta.to_string());
        write!(
            self.out,
            "<script type=\"application/json\" id=\"tl-meta\">{meta}</script>\n<script>{SCRIPT}</script>\n</body>\n</html>\n"
        )?;
        self.out.flush()?;
        Ok(self.out)
    }
}

impl Section {
    /// The index of `(lane, kind)` in the section's kinds, added when new (past
    /// [`MAX_KINDS`], one `(more kinds)` per lane).
    fn kind(&mut self, lane: Lane, kind: &str, mask: &Mask) -> usize {
        if let Some(&k) = self.index.get(&(lane, kind.to_string())) {
            return k;
        }
        let label = if self.kinds.len() >= MAX_KINDS {
            "(more kinds)".to_string()
        } else {
            shown_str(&mask.apply(kind))
        };
        if let Some(&k) = self.index.get(&(lane, label.clone())) {
            return k;
        }
        let k = self.kinds.len();
        self.kinds.push((lane, label.clone()));
        self.index.insert((lane, label), k);
        if self.kinds.len() <= MAX_KINDS {
            self.index.insert((lane, kind.to_string()), k);
        }
        k
    }
}

/// `ms` to a tenth (no float noise such as 835.5999999999999).
pub fn tenth(ms: f64) -> f64 {
    (ms * 10.0).round() / 10.0
}

/// A CSP source for `text`: `sha256-` and its digest in base64.
fn hash(text: &str) -> String {
    let digest = sha2::Sha256::digest(text.as_bytes());
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}
