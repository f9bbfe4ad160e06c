//! What conform takes from a cassette, read in one pass and without its output: the header,
//! the client's steps (pi's RPC commands, a Claude Code host's lines) and whether the run ends
//! in a hang. Memory stays bounded whatever the cassette holds: at most [`MAX_STEPS`] steps
//! and [`MAX_STEP_BYTES`] of their text, past which the cassette is refused at the line.

use std::path::Path;

use pi_cassette::two_way::{ClientAction, ClientStep};
use pi_cassette::{Action, ActionRef, Cassette, CassetteReader, Header};

/// The most client steps one case may have.
pub const MAX_STEPS: usize = 10_000;
/// The most bytes of client text one case may have (its steps go into its request).
pub const MAX_STEP_BYTES: usize = 16 << 20;

/// What a case is derived from.
#[derive(Debug, Clone)]
pub struct Outline {
    /// The cassette's header.
    pub header: Header,
    /// The client's actions, in order (none for a json-mode cassette).
    pub steps: Vec<ClientStep>,
    /// The cassette ends in `hang`.
    pub hangs: bool,
}

impl Outline {
    /// Read the outline of the cassette at `path` (plain or gzip) through the one reader,
    /// holding one line at a time; its errors name the file and line.
    pub fn read(path: &Path) -> Result<Outline, String> {
        let mut reader = CassetteReader::open(path).map_err(|e| e.to_string())?;
        let header = reader.header().clone();
        let mut steps = Vec::new();
        let mut seen = 0;
        let mut bytes = 0;
        let mut hangs = false;
        while let Some(r) = reader.next_ref() {
            let r = r.map_err(|e| e.to_string())?;
            let action = match r.action {
                ActionRef::Stdout { .. } => {
                    seen += 1;
                    continue;
                }
                ActionRef::Hang => {
                    hangs = true;
                    continue;
                }
                ActionRef::Stdin(l) => ClientAction::Line(l.json),
                ActionRef::StdinText(t) => ClientAction::Raw(t),
                ActionRef::StdinClose => ClientAction::Close,
                ActionRef::ClientSignal(s) => ClientAction::Signal(s),
                _ => continue,
            };
            bytes += match &action {
                ClientAction::Line(t) | ClientAction::Raw(t) | ClientAction::Signal(t) => t.len(),
                ClientAction::Close => 0,
            };
            if steps.len() == MAX_STEPS || bytes > MAX_STEP_BYTES {
                return Err(format!(
                    "{}:{}: more client steps than conform takes in one case ({MAX_STEPS} steps, {MAX_STEP_BYTES} bytes of client text)",
                    path.display(),
                    r.line
                ));
            }
            steps.push(ClientStep {
                line: r.line,
                after_stdout_lines: seen,
                action,
            });
        }
        Ok(Outline {
            header,
            steps,
            hangs,
        })
    }

    /// The outline of a cassette already in memory.
    pub fn of(c: &Cassette) -> Outline {
        Outline {
            header: c.header.clone(),
            steps: pi_cassette::two_way::client_steps(&c.records),
            hangs: matches!(c.ending(), Action::Hang),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The outline read in one pass agrees with the one taken from the whole cassette, and a
    /// cassette with more client steps than a case takes is refused at the line past the cap.
    #[test]
    fn read_agrees_with_the_whole_cassette_and_caps_the_steps() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cassettes");
        for name in [
            "rpc/rpc_malformed.pi87.cassette.jsonl",
            "recorded/text_only.pi87.cassette.jsonl",
            "faults/hang_after_output.pi87.cassette.jsonl",
        ] {
            let path = root.join(name);
            if !path.exists() {
                panic!("{name}: not committed any more");
            }
            let streamed = Outline::read(&path).unwrap();
            let whole = Outline::of(&Cassette::load(&path).unwrap());
            assert_eq!(streamed.steps, whole.steps, "{name}");
            assert_eq!(streamed.hangs, whole.hangs, "{name}");
            assert_eq!(streamed.header, whole.header, "{name}");
        }
        let text =
            std::fs::read_to_string(root.join("rpc/rpc_malformed.pi87.cassette.jsonl")).unwrap();
        let header = text.lines().next().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("many.cassette.jsonl");
        let step = "{\"dt_ms\":0,\"stdin_text\":\"x\"}\n".repeat(MAX_STEPS + 1);
        std::fs::write(
            &path,
            format!("{header}\n{step}{{\"dt_ms\":0,\"exit\":0}}\n"),
        )
        .unwrap();
        let e = Outline::read(&path).unwrap_err();
        assert_eq!(
            e,
            format!(
                "{}:{}: more client steps than conform takes in one case (10000 steps, 16777216 bytes of client text)",
                path.display(),
                MAX_STEPS + 2
            )
        );
    }
}
