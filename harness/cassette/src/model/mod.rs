//! The data model of a cassette: the format's constants, [`Cassette`] (a header and its
//! records in replay order) and what a whole cassette says (the bytes it writes, how it
//! ends). The header's parts live in `header`, the records' in `record`; reading is the
//! `reader`'s job and writing the `write` module's.

mod header;
mod header_json;
mod record;

pub use header::{
    Dialect, EffectiveExpect, Expect, FlagRule, Header, Origin, OriginKind, PiSource,
    ProcessBehaviour, Scenario, Secret, SessionUse, SignalAction, StdinKind, TimingKind,
    Unverified,
};
pub use record::{
    is_verbatim_json, Action, ActionRef, Bytes, ClientLine, Form, Grandchild, Record, RecordRef,
    Spawn, CLIENT_SIGNALS, MAX_DT_MS, SIGNAL_NAMES,
};

/// The value of the header's `format` field.
pub const FORMAT_NAME: &str = "pi-cassette";
/// The format version this code reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// The two-way format (`pi --mode rpc`): version 1 plus what the client sends (see
/// `cassettes/FORMAT.md`, "Version 2").
pub const FORMAT_VERSION_TWO_WAY: u32 = 2;

/// The two-way protocols a version 2 cassette may hold (its header's `mode`): each agent's
/// that has one ([`two_way`](pi_grammar::AgentSpec::two_way): `rpc` for pi's `--mode rpc`,
/// `stream-json` for Claude Code's `--input-format stream-json --output-format stream-json`).
pub fn two_way_modes() -> Vec<&'static str> {
    pi_grammar::Agent::ALL
        .iter()
        .filter_map(|a| a.spec().two_way)
        .collect()
}

/// A whole cassette: header plus records in replay order.
#[derive(Debug, Clone, PartialEq)]
pub struct Cassette {
    /// The first line: which CLI, what the caller must send, how signals are answered.
    pub header: Header,
    /// The timed records after the header, the last one the ending.
    pub records: Vec<Record>,
}

impl Cassette {
    /// Every byte the cassette writes to stderr, in order.
    pub fn stderr_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for r in &self.records {
            if let Action::Stderr(b) = &r.action {
                out.extend_from_slice(&b.data);
            }
        }
        out
    }

    /// Every byte the cassette writes to stdout, in order.
    pub fn stdout_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for r in &self.records {
            if let Action::Stdout(b) = &r.action {
                out.extend_from_slice(&b.data);
            }
        }
        out
    }

    /// How the recorded process ends, as `(exit code, signal)`: `(Some(code), None)` for
    /// an exit, `(None, Some(name))` for a death by signal, `(None, None)` for a `hang`
    /// that a caller ends by cancelling. Feed it to `pi_wire::mapper::StreamEnd::recorded`.
    pub fn exit_status(&self) -> (Option<i32>, Option<&str>) {
        match self.ending() {
            Action::Exit(code) => (Some(*code), None),
            Action::Signal(sig) => (None, Some(sig.as_str())),
            _ => (None, None),
        }
    }

    /// How the recorded process ended.
    pub fn ending(&self) -> &Action {
        &self
            .records
            .last()
            .expect("a parsed cassette has a final record")
            .action
    }
}
