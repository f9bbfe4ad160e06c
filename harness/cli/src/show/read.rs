//! Reading a cassette for `show`: one record at a time through the one reader, keeping only
//! what `show` tells ([`Recording`]): the header, counts and times, the processes started,
//! the client's actions, the session line a replay seeds, the ending. Nothing grows with the
//! cassette past fixed bounds: at most [`MAX_LISTED`] processes and client actions, with at
//! most [`MAX_LISTED_BYTES`] of their command lines and lines, are kept to be listed; the
//! others are counted, and `show` says how many it did not list.

use std::path::Path;

use pi_cassette::two_way::{ClientAction, ClientStep};
use pi_cassette::{Action, ActionRef, CassetteError, CassetteReader, Header, SessionUse, Spawn};
use serde_json::Value;

/// The most processes, and the most client actions, `show` lists.
pub const MAX_LISTED: usize = 1000;
/// The most bytes of command lines (processes), and of lines (client actions), `show` lists.
pub const MAX_LISTED_BYTES: usize = 1 << 20;

/// What `show` keeps of a cassette read to its end.
#[derive(Debug, Clone)]
pub struct Recording {
    /// The header.
    pub header: Header,
    /// The last record's action: `exit`, `signal` or `hang`.
    pub ending: Action,
    /// From the start to the ending, in milliseconds to a tenth.
    pub duration_ms: f64,
    /// The processes started, each with when (milliseconds to a tenth), as listed.
    pub spawns: Listed<(f64, Spawn)>,
    /// Stdout lines (records).
    pub stdout_lines: usize,
    /// Bytes written to stdout.
    pub stdout_bytes: usize,
    /// Bytes written to stderr.
    pub stderr_bytes: usize,
    /// The first stdout line that is pi's `session` line, parsed, when the call continues a
    /// session (the replay seeds its session file from it).
    pub session_line: Option<Value>,
    /// A two-way cassette's client actions (`None` for a json-mode cassette).
    pub client: Option<Client>,
}

/// The first items of a list, within [`MAX_LISTED`] and [`MAX_LISTED_BYTES`], and how many
/// there are in all.
#[derive(Debug, Clone)]
pub struct Listed<T> {
    /// The items kept, in order.
    pub kept: Vec<T>,
    /// How many there are, kept or not.
    pub total: usize,
    bytes: usize,
}

impl<T> Default for Listed<T> {
    fn default() -> Self {
        Listed {
            kept: Vec::new(),
            total: 0,
            bytes: 0,
        }
    }
}

impl<T> Listed<T> {
    /// Count `item` (of `bytes` bytes), and keep it while the list is within its bounds and
    /// nothing was left out before it.
    fn push(&mut self, item: T, bytes: usize) {
        self.total += 1;
        let fits = self.kept.len() == self.total - 1
            && self.kept.len() < MAX_LISTED
            && self.bytes + bytes <= MAX_LISTED_BYTES;
        if fits {
            self.bytes += bytes;
            self.kept.push(item);
        }
    }

    /// How many were counted but not kept.
    pub fn left_out(&self) -> usize {
        self.total - self.kept.len()
    }
}

/// A two-way cassette's client: its actions as listed, and what `show` says of all of them.
#[derive(Debug, Clone, Default)]
pub struct Client {
    /// The actions, as listed.
    pub steps: Listed<ClientStep>,
    /// Some action sends a signal.
    pub signals: bool,
    /// The last action closes stdin.
    pub ends_with_close: bool,
}

impl Recording {
    /// Read the cassette at `file` (`-`: stdin, named `<stdin>`) to its end. A path that is
    /// not a regular file (a FIFO, a device) is refused at once.
    pub fn read(file: &Path) -> Result<Recording, CassetteError> {
        Recording::from_reader(Recording::open(file)?, |_| ())
    }

    /// The reader `show` reads `file` with (`-`: stdin, named `<stdin>`), its header read.
    /// A path that is not a regular file (a FIFO, a device) is refused at once.
    pub fn open(
        file: &Path,
    ) -> Result<CassetteReader<Box<dyn std::io::BufRead + Send>>, CassetteError> {
        if file == Path::new("-") {
            return CassetteReader::from_read(Path::new("<stdin>"), std::io::stdin());
        }
        pi_cassette::input::require_regular_file(file)?;
        CassetteReader::open(file)
    }

    /// Every record of `reader`, in order, into what `show` keeps; each is also handed to
    /// `each` (`show --html` draws it), so the cassette is read once.
    pub fn from_reader<R: std::io::BufRead>(
        mut reader: CassetteReader<R>,
        mut each: impl FnMut(&pi_cassette::RecordRef<'_>),
    ) -> Result<Recording, CassetteError> {
        let header = reader.header().clone();
        let wants_session = header.expect.session == Some(SessionUse::Resumed);
        let mut r = Recording {
            client: header.mode.is_some().then(Client::default),
            header,
            ending: Action::Hang,
            duration_ms: 0.0,
            spawns: Listed::default(),
            stdout_lines: 0,
            stdout_bytes: 0,
            stderr_bytes: 0,
            session_line: None,
        };
        let mut t = 0.0;
        while let Some(record) = reader.next_ref() {
            let record = record?;
            each(&record);
            t += record.dt_ms;
            // To a tenth: no float noise such as 835.5999999999999.
            let at_ms = (t * 10.0).round() / 10.0;
            r.duration_ms = at_ms;
            let (line, after_stdout_lines) = (record.line, r.stdout_lines as u64);
            let step = move |action: ClientAction| ClientStep {
                line,
                after_stdout_lines,
                action,
            };
            let client_step = match record.action {
                ActionRef::Stdout { body, form } => {
                    r.stdout_lines += 1;
                    r.stdout_bytes += body.len() + usize::from(form.newline());
                    if wants_session && r.session_line.is_none() {
                        r.session_line = serde_json::from_slice::<Value>(body.trim_ascii_end())
                            .ok()
                            .filter(|v| v["type"] == "session");
                    }
                    None
                }
                ActionRef::Stderr { body, form } => {
                    r.stderr_bytes += body.len() + usize::from(form.newline());
                    None
                }
                ActionRef::Spawn(s) => {
                    let bytes = spawn_bytes(&s);
                    r.spawns.push((at_ms, s), bytes);
                    None
                }
                ActionRef::Stdin(l) => Some(step(ClientAction::Line(l.json))),
                ActionRef::StdinText(t) => Some(step(ClientAction::Raw(t))),
                ActionRef::StdinClose => Some(step(ClientAction::Close)),
                ActionRef::ClientSignal(s) => Some(step(ClientAction::Signal(s))),
                ActionRef::Exit(code) => {
                    r.ending = Action::Exit(code);
                    None
                }
                ActionRef::Signal(s) => {
                    r.ending = Action::Signal(s);
                    None
                }
                ActionRef::Hang => {
                    r.ending = Action::Hang;
                    None
                }
                ActionRef::Request(_) | ActionRef::Reap(_) => None,
            };
            if let (Some(client), Some(step)) = (&mut r.client, client_step) {
                client.signals |= matches!(step.action, ClientAction::Signal(_));
                client.ends_with_close = matches!(step.action, ClientAction::Close);
                let bytes = match &step.action {
                    ClientAction::Line(l) | ClientAction::Raw(l) => l.len(),
                    ClientAction::Signal(s) => s.len(),
                    ClientAction::Close => 0,
                };
                client.steps.push(step, bytes);
            }
        }
        Ok(r)
    }
}

/// The bytes of a process's names and command lines, as `show` lists them.
fn spawn_bytes(s: &Spawn) -> usize {
    let words = |argv: &Option<Vec<String>>| argv.iter().flatten().map(String::len).sum::<usize>();
    s.id.len() + words(&s.argv) + s.grandchild.as_ref().map_or(0, |g| words(&g.argv))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_keeps_its_first_items_within_its_bounds_and_counts_the_rest() {
        let mut l = Listed::default();
        for i in 0..MAX_LISTED + 5 {
            l.push(i, 1);
        }
        assert_eq!(
            (l.kept.len(), l.total, l.left_out()),
            (MAX_LISTED, MAX_LISTED + 5, 5)
        );
        let mut l = Listed::default();
        l.push("a", MAX_LISTED_BYTES - 1);
        l.push("too big", 2);
        // Nothing after a left-out item is kept, even when it would fit: the list is a prefix.
        l.push("b", 1);
        assert_eq!((l.kept, l.total), (vec!["a"], 3));
    }
}
