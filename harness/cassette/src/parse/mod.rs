//! Parsing a cassette's text, line by line and without I/O: the rules every line keeps
//! (UTF-8, no byte order mark, no `\r`, not empty), the header ([`header`]), one record
//! ([`record`]), and the rules across records of a two-way cassette (`Replies`). Every
//! reader goes through here: the streaming reader, `Cassette::parse` and lint.

mod header;
mod record;
#[cfg(test)]
mod tests;

use std::path::Path;

use serde::Deserialize;

use crate::{CassetteError, Record, Spawn, FORMAT_NAME};

pub(crate) use header::parse_header;
pub(crate) use record::{parse_record, parse_record_ref};

/// The text of line `lineno`, refused when it has a byte order mark (line 1), ends in
/// `\r`, is empty or is not UTF-8.
pub(crate) fn line_text<'a>(
    path: &Path,
    lineno: usize,
    line: &'a [u8],
) -> Result<&'a str, CassetteError> {
    if lineno == 1 && line.starts_with(b"\xEF\xBB\xBF") {
        return Err(CassetteError::invalid(
            path,
            lineno,
            "starts with a byte order mark (a cassette is plain UTF-8 JSON lines)",
        ));
    }
    if line.ends_with(b"\r") {
        return Err(CassetteError::invalid(
            path,
            lineno,
            "line ends with \\r (CRLF line endings): a cassette ends lines with \\n only",
        ));
    }
    if line.is_empty() {
        return Err(CassetteError::invalid(
            path,
            lineno,
            "empty line (every line is one JSON object)",
        ));
    }
    std::str::from_utf8(line).map_err(|e| {
        CassetteError::invalid(
            path,
            lineno,
            format!(
                "not UTF-8 at byte {} (binary data belongs in a *_b64 field)",
                e.valid_up_to()
            ),
        )
    })
}

/// Parse one record line (`lineno` is 1-based; `path` only names the source in errors) of
/// a cassette of format `version`.
pub fn parse_record_line(
    path: &Path,
    lineno: usize,
    text: &str,
    version: u32,
) -> Result<Record, CassetteError> {
    parse_record(path, lineno, text, version)
}

/// The rules across lines of a cassette: a `reply` names a client line that came before it,
/// a `reap` a `spawn` that came before it, and what a replay keeps alive is bounded. Every
/// reader applies them (the streaming reader, lint).
#[derive(Debug, Default)]
pub(crate) struct Replies {
    client_lines: u32,
    /// Per spawn id, its spawns in order: `true` while fake-pi has not reaped it (a `reap`
    /// reaps the latest spawn with its id, as fake-pi does).
    spawned: std::collections::HashMap<String, Vec<Spawned>>,
    /// Children spawned and not reaped, plus grandchildren that outlived their child's reap:
    /// what the replay keeps alive now.
    alive: usize,
    /// `spawn` records so far.
    spawns: usize,
}

/// One spawn, as the rules count it.
#[derive(Debug, Clone, Copy)]
struct Spawned {
    reaped: bool,
    /// Its grandchild lives on after a `reap` (see [`outlives_reap`]).
    leaves_grandchild: bool,
}

/// Whether a spawn's grandchild outlives the child's `reap`: fake-pi's reap kills the
/// child's process group (its own session), or the child alone (no session of its own), and
/// nothing when the child has ended by itself (`lifetime_ms`); a grandchild in a session of
/// its own, or one the kill does not reach, lives on, orphaned, as the recording says.
fn outlives_reap(spawn: &Spawn) -> bool {
    spawn
        .grandchild
        .as_ref()
        .is_some_and(|g| g.own_session || !spawn.own_session || spawn.lifetime_ms.is_some())
}

/// The most `spawn` records one cassette may hold: what a replay starts is bounded.
pub const MAX_SPAWNS: usize = 1024;
/// The most children alive at once in one replay: spawned and not yet reaped, and those
/// reaped whose grandchild lives on (it keeps the child's place); each may have a grandchild.
pub const MAX_LIVE_SPAWNS: usize = 32;

impl Replies {
    /// Check one record: `client_line` (a `stdin` or `stdin_text`), what it spawns or the id
    /// it reaps, and its `reply`.
    pub(crate) fn check(
        &mut self,
        client_line: bool,
        spawn: Option<&Spawn>,
        reap: Option<&str>,
        reply: Option<u32>,
    ) -> Result<(), String> {
        if client_line {
            self.client_lines += 1;
        }
        if let Some(spawn) = spawn {
            // Past the cap nothing more is kept: lint reads on, and its memory stays bounded.
            self.spawns += 1;
            if self.spawns > MAX_SPAWNS {
                return Err(format!(
                    "record field `spawn`: more than {MAX_SPAWNS} spawn records; a replay starts at most that many processes"
                ));
            }
            self.spawned
                .entry(spawn.id.clone())
                .or_default()
                .push(Spawned {
                    reaped: false,
                    leaves_grandchild: outlives_reap(spawn),
                });
            self.alive += 1;
            if self.alive > MAX_LIVE_SPAWNS {
                return Err(format!(
                    "record field `spawn`: more than {MAX_LIVE_SPAWNS} children alive at once (spawned and not reaped, or reaped with a grandchild that lives on); a replay keeps at most that many"
                ));
            }
        }
        if let Some(id) = reap {
            let Some(latest) = self.spawned.get_mut(id).and_then(|s| s.last_mut()) else {
                return Err(format!(
                    "record field `reap`: no `spawn` with the id {id:?} before it"
                ));
            };
            if !latest.reaped {
                latest.reaped = true;
                if !latest.leaves_grandchild {
                    self.alive -= 1;
                }
            }
        }
        match reply {
            Some(k) if k >= self.client_lines => Err(format!(
                "record field `reply`: {k} names no client line before it (client lines are counted from 0; {} came before)",
                self.client_lines
            )),
            _ => Ok(()),
        }
    }
}

/// True when `line` (one line, without its `\n`) looks like a cassette header: a JSON object
/// whose `format` is `"pi-cassette"`. Used to tell a cassette from raw pi stdout.
pub fn is_header_line(line: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Probe<'a> {
        #[serde(borrow)]
        format: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_slice::<Probe>(line).is_ok_and(|p| p.format.as_deref() == Some(FORMAT_NAME))
}
