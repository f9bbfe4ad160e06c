//! A json-mode run turned into a cassette (pure): what the run produced ([`JsonRun`]), its
//! timed captures redacted into records, the `spawn` records that reproduce pi's children
//! seen at signal time, what pi did with the signal, the notes, and the version 1 header.

use std::collections::BTreeSet;
use std::time::Duration;

use nix::sys::signal::Signal;
use pi_cassette::redact::Redactor;
use pi_cassette::{
    Action, Cassette, Dialect, Grandchild, Header, Origin, OriginKind, PiSource, ProcessBehaviour,
    Record, Scenario, SignalAction, Spawn, TimingKind, FORMAT_NAME, FORMAT_VERSION,
};
use pi_procs::ProcInfo;
use serde_json::Value;

use super::header::{description, expect_from_args, json_source, scenario_name, session_use};
use super::process::{ms, Captured, Ending};
use super::{RecordError, RecordOptions};

/// A process that lived under pi, as seen when the signal was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildFate {
    /// Its process id.
    pub pid: i32,
    /// Its parent's process id.
    pub ppid: i32,
    /// Its command line.
    pub command: String,
    /// Its own session (pi's bash tool uses `setsid`).
    pub own_session: bool,
    /// Still alive once pi had ended (it was then killed by the recorder).
    pub survived: bool,
}

/// The signal the recorder sent pi, and pi's process tree at that moment.
pub(crate) struct SentSignal {
    pub(crate) signal: Signal,
    pub(crate) event: String,
    /// The planned delay after the event.
    pub(crate) after_ms: f64,
    pub(crate) pi_pid: i32,
    pub(crate) pi_sid: i32,
    /// pi's descendants when the signal was sent.
    pub(crate) tree: Vec<ProcInfo>,
    /// Descendants whose stdout was pi's stdout.
    pub(crate) holds_stdout: BTreeSet<i32>,
    /// How long pi took to end after the signal.
    pub(crate) pi_gone_after_ms: f64,
}

/// What a json-mode run produced.
pub(crate) struct JsonRun {
    /// pi's output up to the signal (all of it when none was sent).
    pub(crate) captured: Vec<(Duration, Captured)>,
    pub(crate) ending: Ending,
    pub(crate) signalled: Option<SentSignal>,
    /// pi's descendants at the signal, and whether each outlived pi.
    pub(crate) children: Vec<ChildFate>,
    /// Output after the signal (not replayed).
    pub(crate) lines_after_signal: usize,
    pub(crate) stderr_after_signal: usize,
    /// That output itself (a CLI that ignored the signal finished its run: Gemini CLI's
    /// relaunch parent).
    pub(crate) after_signal: Vec<(Duration, Captured)>,
    /// Processes left after pi ended (killed by the recorder).
    pub(crate) leftovers: Vec<String>,
}

/// The JSON `type` of a stdout line, if it is a JSON object with one.
pub fn event_type(line: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(line).ok()?;
    v.get("type")?.as_str().map(str::to_string)
}

/// Build the records from timed captures (pure). `spawns` are inserted right after the
/// last `tool_execution_start` line (or at the end), and `end` closes the cassette.
pub fn build_records(
    captured: &[(Duration, Captured)],
    redactor: &mut Redactor,
    spawns: &[Spawn],
    end: Action,
) -> Vec<Record> {
    build_records_after(captured, redactor, spawns, end, &|l| {
        event_type(l).as_deref() == Some("tool_execution_start")
    })
}

/// [`build_records`] for a CLI whose tool-start line `is_tool_start` tells (Codex's
/// `item.started` of a `command_execution`).
pub(crate) fn build_records_after(
    captured: &[(Duration, Captured)],
    redactor: &mut Redactor,
    spawns: &[Spawn],
    end: Action,
    is_tool_start: &dyn Fn(&[u8]) -> bool,
) -> Vec<Record> {
    let mut records = Vec::new();
    let mut prev = Duration::ZERO;
    let mut last_tool_start = None;
    for (at, c) in captured {
        let dt = ms(at.saturating_sub(prev));
        prev = *at;
        match c {
            Captured::Line(bytes, newline) => {
                let record = match std::str::from_utf8(bytes) {
                    Ok(text) => {
                        let red = redactor.apply(text);
                        if is_tool_start(red.as_bytes()) {
                            last_tool_start = Some(records.len());
                        }
                        Record::stdout_line(dt, red.as_bytes(), *newline)
                    }
                    Err(_) => Record::stdout_line(dt, bytes, *newline),
                };
                records.push(record);
            }
            Captured::Stderr(bytes) => {
                let record = match std::str::from_utf8(bytes) {
                    Ok(text) => Record::stderr_chunk(dt, redactor.apply(text).as_bytes()),
                    Err(_) => Record::stderr_chunk(dt, bytes),
                };
                records.push(record);
            }
        }
    }
    let at = last_tool_start.map_or(records.len(), |i| i + 1);
    for (k, s) in spawns.iter().enumerate() {
        // Command lines can hold the run's paths: redact them like everything else.
        let mut s = s.clone();
        if let Some(argv) = s.argv.as_mut() {
            argv.iter_mut().for_each(|a| *a = redactor.apply(a));
        }
        if let Some(argv) = s.grandchild.as_mut().and_then(|g| g.argv.as_mut()) {
            argv.iter_mut().for_each(|a| *a = redactor.apply(a));
        }
        records.insert(at + k, Record::new(0.0, Action::Spawn(s)));
    }
    records.push(Record::new(0.0, end));
    records
}

/// The `spawn` records that reproduce pi's tool children seen at signal time (pure):
/// one per direct child of pi, with a grandchild when that child had one.
/// `holds_stdout` lists the pids whose stdout was pi's stdout.
pub fn spawns_for(
    pi_pid: i32,
    pi_sid: i32,
    tree: &[ProcInfo],
    holds_stdout: &BTreeSet<i32>,
) -> Vec<Spawn> {
    tree.iter()
        .filter(|p| p.ppid == pi_pid)
        .enumerate()
        .map(|(i, child)| {
            let grandchild = tree
                .iter()
                .find(|g| g.ppid == child.pid)
                .map(|g| Grandchild {
                    own_session: g.sid != child.sid,
                    ignore_sigterm: false,
                    hold_stdout: holds_stdout.contains(&g.pid),
                    argv: shown_argv(g),
                });
            Spawn {
                id: format!("tool-{}", i + 1),
                own_session: child.sid != pi_sid,
                ignore_sigterm: false,
                hold_stdout: holds_stdout.contains(&child.pid),
                grandchild,
                lifetime_ms: None,
                argv: shown_argv(child),
            }
        })
        .collect()
}

/// A process's command line, when it has one (not a zombie's `[comm]`).
fn shown_argv(p: &ProcInfo) -> Option<Vec<String>> {
    let zombie = p.cmdline.len() == 1 && p.cmdline[0].starts_with('[');
    let real = !p.cmdline.is_empty() && !zombie;
    real.then(|| p.cmdline.clone())
}

/// The signal behaviour seen (pure): what pi did with `signal`, given its ending and whether
/// its children were killed.
pub fn behaviour_seen(signal: Signal, ending: Ending, children_died: bool) -> SignalAction {
    match ending {
        Ending::Signal(s) if s == signal => SignalAction::Die,
        Ending::Signal(_) => SignalAction::Die,
        Ending::Code(code) if children_died => SignalAction::CleanupExit { code },
        Ending::Code(code) => SignalAction::Exit { code },
    }
}

/// The session id pi announced (its `session` line).
fn session_id(captured: &[(Duration, Captured)]) -> Option<String> {
    captured.iter().find_map(|(_, c)| match c {
        Captured::Line(l, _) => {
            let v: Value = serde_json::from_slice(l).ok()?;
            (v["type"] == "session").then(|| v["id"].as_str().map(str::to_string))?
        }
        _ => None,
    })
}

/// The dialect of an unknown pi version, told from its output: partial snapshots in
/// `message_update` lines mean `snapshot+delta`.
fn guess_dialect(captured: &[(Duration, Captured)]) -> Dialect {
    let snapshot = captured.iter().any(|(_, c)| match c {
        Captured::Line(l, _) => {
            memchr::memmem::find(l, b"\"message_update\"").is_some()
                && memchr::memmem::find(l, b"\"partial\"").is_some()
        }
        _ => false,
    });
    if snapshot {
        Dialect::SnapshotDelta
    } else {
        Dialect::DeltaOnly
    }
}

/// The notes on a signalled run: when the signal went, how pi ended, what it wrote after,
/// and which of its children survived it.
fn signal_notes(run: &JsonRun, sent: &SentSignal, cli: &str) -> Vec<String> {
    let mut notes = vec![format!(
        "{} sent {:.0} ms after the first `{}`; {cli} then {} after {:.0} ms",
        sent.signal.as_str(),
        sent.after_ms,
        sent.event,
        match run.ending {
            Ending::Code(c) => format!("exited with code {c}"),
            Ending::Signal(s) => format!("died by {}", s.as_str()),
        },
        sent.pi_gone_after_ms
    )];
    if run.lines_after_signal > 0 || run.stderr_after_signal > 0 {
        notes.push(format!(
            "after the signal {cli} wrote {} stdout lines and {} stderr bytes (not replayed: header.process says what {cli} does)",
            run.lines_after_signal, run.stderr_after_signal
        ));
    }
    if run.children.is_empty() {
        notes.push(format!("{cli} had no child processes when the signal came"));
    } else {
        let list = |survived: bool| {
            let v: Vec<String> = run
                .children
                .iter()
                .filter(|c| c.survived == survived)
                .map(|c| {
                    format!(
                        "`{}`{}",
                        c.command,
                        if c.own_session { " (own session)" } else { "" }
                    )
                })
                .collect();
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        notes.push(format!(
            "{cli}'s children at the signal: survived {cli}: {}; died with {cli}: {}",
            list(true),
            list(false)
        ));
    }
    notes
}

/// Spawns, process behaviour, final action and notes for a finished run of pi (pure).
fn ending_shape(run: &JsonRun) -> (Vec<Spawn>, ProcessBehaviour, Action, Option<String>) {
    ending_shape_of(run, "pi", &|sent| {
        spawns_for(sent.pi_pid, sent.pi_sid, &sent.tree, &sent.holds_stdout)
    })
}

/// What [`ending_shape`] gives, for `cli` (named in the notes) whose tool processes at the
/// signal `spawns` tells.
pub(crate) type EndingShape = (Vec<Spawn>, ProcessBehaviour, Action, Option<String>);

/// [`ending_shape`] of any CLI (pure).
pub(crate) fn ending_shape_of(
    run: &JsonRun,
    cli: &str,
    spawns: &dyn Fn(&SentSignal) -> Vec<Spawn>,
) -> EndingShape {
    let mut notes = Vec::new();
    let mut process = ProcessBehaviour::default();
    let (spawns, end) = match &run.signalled {
        Some(sent) => {
            let children_died = run.children.iter().all(|c| !c.survived);
            let seen = behaviour_seen(sent.signal, run.ending, children_died);
            match sent.signal {
                Signal::SIGTERM => process.on_sigterm = seen.clone(),
                Signal::SIGINT => process.on_sigint = seen.clone(),
                Signal::SIGHUP => process.on_sighup = seen.clone(),
                _ => {}
            }
            notes.extend(signal_notes(run, sent, cli));
            (spawns(sent), Action::Hang)
        }
        None => (
            Vec::new(),
            match run.ending {
                Ending::Code(c) => Action::Exit(c),
                Ending::Signal(s) => Action::Signal(s.as_str().to_string()),
            },
        ),
    };
    if !run.leftovers.is_empty() {
        notes.push(format!(
            "Still running after {cli} ended, then killed by the recorder: {}",
            run.leftovers.join(", ")
        ));
    }
    let notes = (!notes.is_empty()).then(|| notes.join(". "));
    (spawns, process, end, notes)
}

/// The version 1 cassette of a json-mode run of pi `version` with `args`, redacted with
/// `redactor` (to which pi's session id is added); only the placeholders that appear in it
/// are listed in its header.
pub(crate) fn cassette(
    opts: &RecordOptions,
    version: &str,
    args: &[String],
    run: &JsonRun,
    mut redactor: Redactor,
    settings: &pi_grammar::AgentSettings,
) -> Result<Cassette, RecordError> {
    if let Some(id) = session_id(&run.captured) {
        if !args.iter().any(|a| a.contains(&id)) {
            let p = pi_grammar::Agent::Pi.spec().placeholders.session_id;
            redactor.literal(&id, p.text, p.means);
        }
    }
    let (spawns, process, end, notes) = ending_shape(run);
    let records = build_records(&run.captured, &mut redactor, &spawns, end);
    let dialect = Dialect::for_pi_version(version).unwrap_or_else(|| guess_dialect(&run.captured));
    let redacted_args: Vec<String> = args.iter().map(|a| redactor.apply(a)).collect();
    let header = Header {
        format: FORMAT_NAME.into(),
        version: FORMAT_VERSION,
        mode: None,
        pi: PiSource::new(version, dialect),
        scenario: Scenario {
            name: scenario_name(opts),
            description: description(opts, version),
            tags: opts.tags.clone(),
        },
        expect: expect_from_args(
            version,
            &redacted_args,
            opts.stdin.as_deref(),
            settings,
            session_use(opts, &redacted_args),
        )
        .map_err(RecordError::Expect)?,
        process,
        redactions: redactor.used().clone(),
        origin: Origin {
            kind: OriginKind::Recorded,
            source: Some(json_source(opts, &redacted_args)),
            timing: TimingKind::Measured,
            notes,
        },
    };
    let mut cassette = Cassette { header, records };
    // List only the placeholders that appear in the cassette (a redacted temp path can vanish
    // from it when the flag it was the value of is only required to be present).
    let body = {
        let mut probe = cassette.clone();
        probe.header.redactions.clear();
        probe.to_jsonl()
    };
    cassette
        .header
        .redactions
        .retain(|placeholder, _| body.contains(placeholder.as_str()));
    Ok(cassette)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_redacted_timed_and_spawns_follow_the_tool_start() {
        let line = |t: &str| Captured::Line(t.as_bytes().to_vec(), true);
        let captured = vec![
            (
                Duration::from_millis(5),
                line(r#"{"type":"session","id":"abcd-1234","cwd":"/tmp/x/work"}"#),
            ),
            (
                Duration::from_millis(7),
                line(r#"{"type":"tool_execution_start","toolName":"bash"}"#),
            ),
            (
                Duration::from_millis(9),
                Captured::Stderr(b"warn /tmp/x/work\n".to_vec()),
            ),
        ];
        let mut r = Redactor::new();
        r.literal("/tmp/x/work", "<CWD>", "cwd");
        r.literal("abcd-1234", "<SESSION_ID>", "session");
        let spawn = Spawn {
            id: "tool-1".into(),
            own_session: true,
            ignore_sigterm: false,
            hold_stdout: false,
            grandchild: None,
            lifetime_ms: None,
            argv: None,
        };
        let recs = build_records(&captured, &mut r, &[spawn], Action::Hang);
        let keys: Vec<&str> = recs.iter().map(|r| r.action.key()).collect();
        assert_eq!(keys, ["stdout", "stdout", "spawn", "stderr", "hang"]);
        assert_eq!(recs[0].dt_ms, 5.0);
        assert_eq!(recs[1].dt_ms, 2.0);
        let Action::Stdout(b) = &recs[0].action else {
            panic!()
        };
        assert_eq!(
            String::from_utf8(b.data.clone()).unwrap(),
            "{\"type\":\"session\",\"id\":\"<SESSION_ID>\",\"cwd\":\"<CWD>\"}\n"
        );
        let Action::Stderr(b) = &recs[3].action else {
            panic!()
        };
        assert_eq!(b.data, b"warn <CWD>\n");
    }

    #[test]
    fn spawns_mirror_the_tree_and_behaviour_follows_the_ending() {
        let p = |pid, ppid, sid| ProcInfo {
            pid,
            ppid,
            pgid: pid,
            sid,
            state: 'S',
            cmdline: vec![],
        };
        let tree = vec![p(20, 10, 20), p(21, 20, 20)];
        let sp = spawns_for(10, 10, &tree, &BTreeSet::from([21]));
        assert_eq!(sp.len(), 1);
        assert!(sp[0].own_session);
        assert!(!sp[0].hold_stdout);
        assert_eq!(sp[0].grandchild.as_ref().map(|g| g.hold_stdout), Some(true));
        assert_eq!(
            sp[0].grandchild.as_ref().map(|g| g.own_session),
            Some(false)
        );
        assert_eq!(
            behaviour_seen(Signal::SIGINT, Ending::Signal(Signal::SIGINT), false),
            SignalAction::Die
        );
        assert_eq!(
            behaviour_seen(Signal::SIGTERM, Ending::Code(143), true),
            SignalAction::CleanupExit { code: 143 }
        );
        assert_eq!(
            behaviour_seen(Signal::SIGTERM, Ending::Code(0), false),
            SignalAction::Exit { code: 0 }
        );
    }
}
