//! Turning a two-way transcript (what a client logged while it drove `pi --mode rpc`)
//! into a version 2 cassette: `pi-harness cassette import --mode rpc`.
//!
//! A transcript has one JSON object per line, one entry each, in the order the client saw
//! them, with an optional `t_ms` (milliseconds since pi was started):
//!
//! | entry | meaning |
//! |---|---|
//! | `{"stdin": COMMAND}` | the client wrote this JSON line |
//! | `{"stdin_text": "..."}` (or `stdin_raw`) | the client wrote this line as is (not JSON, or not one value) |
//! | `{"stdin_close": true}` | the client closed stdin |
//! | `{"send_signal": "SIGTERM"}` | the client sent pi this signal |
//! | `{"stdout": RECORD}` | pi wrote this JSON line |
//! | `{"stdout_text": "..."}` (or `stdout_raw`) | pi wrote this line, not JSON |
//! | `{"stderr": "..."}` | pi wrote this on stderr |
//! | `{"exit": N}` / `{"signal": "SIGINT"}` | pi exited / died by a signal |
//! | `{"note"}`, `{"ps"}`, `{"final"}`, `{"stdout_eof"}` | annotations a client may log: skipped |
//!
//! A response (`"type":"response"`) is tied to the client line it answers (`reply`): the
//! latest line with the same `id`, or, for a response without `id`, the first unanswered
//! line without `id` whose `type` is the response's `command`. A client's SIGKILL is not
//! something pi answers: the cassette then ends with `hang`, and the replaying client's
//! own SIGKILL ends it.

use std::collections::HashSet;
use std::path::Path;

use serde_json::value::RawValue;
use serde_json::Value;

use crate::import::{
    parse_signal_name, split_lines, tool_start, Ending, ImportError, ImportOptions,
};
use crate::two_way::Protocol;
use crate::{
    Action, Cassette, ClientLine, FlagRule, Header, Origin, OriginKind, PiSource, Record, Scenario,
    Spawn, TimingKind, CLIENT_SIGNALS, FORMAT_NAME, FORMAT_VERSION_TWO_WAY,
};

/// Entries a client may log that say nothing about the protocol.
pub const ANNOTATIONS: &[&str] = &["note", "ps", "final", "stdout_eof"];

/// What a two-way import reads besides the transcript.
#[derive(Debug, Clone, Default)]
pub struct TwoWayInputs<'a> {
    /// pi's stdout byte for byte (`--raw-stdout`): each `stdout` entry must be the same
    /// JSON value as the next line, and the cassette keeps the line's exact bytes.
    pub raw_stdout: Option<(&'a Path, &'a [u8])>,
    /// The scripted server's request log (`--requests`), one JSON object per request.
    pub requests: Option<(&'a Path, &'a [u8])>,
    /// How pi ended, when the transcript does not say (`--exit`, `--signal`, `--hang`).
    pub ending: Option<Ending>,
    /// Model pi's bash tool processes (`--spawn-tools`): a `spawn` after each bash
    /// `tool_execution_start` (`/bin/bash -c COMMAND`, its own session), a `reap` when its
    /// `tool_execution_end` comes, and at an exit whose cause kills tools in this pi version
    /// (a signal pi handles; stdin closing on pi 0.87.1 and later). For Claude Code: a
    /// `spawn` where a Bash `tool_use` starts running (after the host's `allow` of its
    /// permission prompt; commands the CLI runs without asking are not modelled), a `reap`
    /// at its tool result and at an exit by a signal (the CLI kills its tools' trees).
    pub spawn_tools: bool,
    /// pi's RPC mode or Claude Code's stream-json (`--mode stream-json`).
    pub protocol: Protocol,
}

/// The files and choices of `cassette import --mode rpc|stream-json` besides the
/// transcript (see [`TwoWayInputs`] for what each means).
#[derive(Debug, Clone, Default)]
pub struct FileInputs<'a> {
    pub raw_stdout: Option<&'a Path>,
    pub requests: Option<&'a Path>,
    pub ending: Option<Ending>,
    pub spawn_tools: bool,
    pub protocol: Protocol,
}

fn input_err(file: &Path, line: usize, message: String) -> ImportError {
    ImportError::Input {
        file: file.to_path_buf(),
        line,
        message,
    }
}

/// Convert a transcript into a two-way cassette. `input` only names the source in errors.
pub fn import_transcript(
    input: &Path,
    transcript: &[u8],
    opts: &ImportOptions,
    more: &TwoWayInputs<'_>,
) -> Result<Cassette, ImportError> {
    let claude = more.protocol == Protocol::StreamJson;
    let dialect = if claude {
        if !crate::KNOWN_CLAUDE_VERSIONS.contains(&opts.pi_version.as_str()) {
            return Err(ImportError::Usage(format!(
                "--pi-version: pi-harness knows Claude Code {}, not {:?}",
                crate::KNOWN_CLAUDE_VERSIONS.join(", "),
                opts.pi_version
            )));
        }
        crate::Dialect::StreamJson
    } else {
        crate::import::dialect_of(opts)?
    };
    if opts.scenario.is_empty() {
        return Err(ImportError::Usage("--scenario is empty".into()));
    }
    let mut expect = opts.expect.clone();
    if claude {
        // fake-pi compares the call's options with these: a cassette without them refuses
        // every call, so say so now.
        if expect.flags.is_empty() {
            return Err(ImportError::Usage(
                "--mode stream-json: give the Claude Code options the transcript's host ran with, as --flag (long names: --flag print --flag input-format=stream-json --flag output-format=stream-json --flag verbose ...); fake-pi refuses a call whose options differ".into(),
            ));
        }
        if let Some(bad) = expect.flags.keys().find(|k| !pi_grammar::claude::knows(k)) {
            return Err(ImportError::Usage(format!(
                "--flag {bad}: Claude Code has no option --{bad} (give long names without dashes: print, not p)"
            )));
        }
        if !expect.env.iter().any(|v| v == "ANTHROPIC_API_KEY") {
            expect.env.push("ANTHROPIC_API_KEY".into());
        }
    }
    match expect.flags.get("mode") {
        _ if claude => {}
        None => {
            expect
                .flags
                .insert("mode".into(), FlagRule::Value("rpc".into()));
        }
        Some(FlagRule::Value(m)) if m == "rpc" => {}
        Some(other) => {
            return Err(ImportError::Usage(format!(
                "--mode rpc imports an RPC session, but --flag mode says {other:?}"
            )))
        }
    }
    let mut raw_lines = more
        .raw_stdout
        .map(|(p, raw)| (p, split_lines(raw).into_iter()));
    let mut requests: Vec<String> = Vec::new();
    if let Some((path, raw)) = more.requests {
        for (i, (line, _)) in split_lines(raw).into_iter().enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let text = std::str::from_utf8(line)
                .map_err(|_| input_err(path, i + 1, "not UTF-8".into()))?;
            match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(_)) => requests.push(text.trim().to_string()),
                _ => {
                    return Err(input_err(
                        path,
                        i + 1,
                        "not a JSON object (a request log has one object per line)".into(),
                    ))
                }
            }
        }
    }
    let mut requests = requests.into_iter();

    let mut records: Vec<Record> = Vec::new();
    let mut ending: Option<(usize, Action)> = None;
    let mut last_t: Option<f64> = None;
    let mut timed = true;
    // The `id` (JSON text) and `type` of each client line, and which were answered.
    let mut client: Vec<(Option<String>, Option<String>)> = Vec::new();
    let mut answered: HashSet<usize> = HashSet::new();
    let mut killed = false;
    let mut spawn_pending = opts.spawn_at_tool.as_ref();
    // Tool children spawned and not reaped yet, in order; the last client action.
    let mut running: Vec<String> = Vec::new();
    let mut last_client: Option<&'static str> = None;
    let mut claude_tools = ClaudeTools::default();

    for (idx, (line, _)) in split_lines(transcript).into_iter().enumerate() {
        let n = idx + 1;
        let bad = |m: String| input_err(input, n, m);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let text = std::str::from_utf8(line).map_err(|_| bad("not UTF-8".into()))?;
        let entry: serde_json::Map<String, Value> =
            serde_json::from_str(text).map_err(|e| bad(format!("not a JSON object: {e}")))?;
        let raw_entry: std::collections::HashMap<String, &RawValue> =
            serde_json::from_str(text).map_err(|e| bad(format!("not a JSON object: {e}")))?;
        let keys: Vec<&str> = entry
            .keys()
            .map(String::as_str)
            .filter(|k| *k != "t_ms")
            .collect();
        if keys.iter().any(|k| ANNOTATIONS.contains(k)) {
            continue;
        }
        let key = match keys.as_slice() {
            [one] => *one,
            [] => return Err(bad("an entry without an action".into())),
            many => {
                return Err(bad(format!(
                    "several actions in one entry ({}); one per line",
                    many.join(", ")
                )))
            }
        };
        let dt = match entry.get("t_ms") {
            Some(Value::Number(t)) => {
                let t = t.as_f64().unwrap_or(0.0);
                if !t.is_finite() || t < 0.0 {
                    return Err(bad(format!(
                        "`t_ms` must be a non-negative number, found {t}"
                    )));
                }
                let dt = (t - last_t.unwrap_or(0.0)).max(0.0);
                last_t = Some(t.max(last_t.unwrap_or(0.0)));
                (dt * 10.0).round() / 10.0
            }
            Some(other) => return Err(bad(format!("`t_ms` must be a number, found {other}"))),
            None => {
                timed = false;
                opts.spacing_ms
            }
        };
        if let Some((at, _)) = &ending {
            return Err(bad(format!(
                "`{key}` after pi ended (line {at}); nothing but annotations may follow"
            )));
        }
        let value = &entry[key];
        let record = match key {
            "stdin" => {
                let json = raw_entry[key].get().to_string();
                client.push((
                    client_id(more.protocol, value),
                    value.get("type").and_then(Value::as_str).map(str::to_string),
                ));
                last_client = Some("stdin");
                if claude && more.spawn_tools {
                    if let Some(id) = claude_tools.allowed(value) {
                        records.push(Record::new(dt, Action::Stdin(ClientLine { json, fields: None })));
                        records.push(Record::new(0.0, bash_child(&id, &claude_tools.commands[&id])));
                        running.push(id);
                        continue;
                    }
                }
                Record::new(dt, Action::Stdin(ClientLine { json, fields: None }))
            }
            "stdin_text" | "stdin_raw" => {
                let Value::String(t) = value else {
                    return Err(bad(format!("`{key}` must be a string")));
                };
                let t = t.strip_suffix('\n').unwrap_or(t);
                if t.contains('\n') {
                    return Err(bad(format!("`{key}` holds more than one line")));
                }
                client.push((None, None));
                last_client = Some("stdin");
                Record::new(dt, Action::StdinText(t.to_string()))
            }
            "stdin_close" => {
                if value != &Value::Bool(true) {
                    return Err(bad("`stdin_close` must be true".into()));
                }
                last_client = Some("stdin_close");
                Record::new(dt, Action::StdinClose)
            }
            "send_signal" => {
                let Value::String(s) = value else {
                    return Err(bad("`send_signal` must be a signal name".into()));
                };
                let name = parse_signal_name(s).map_err(|e| bad(e.to_string()))?;
                if name == "SIGKILL" {
                    killed = true;
                    continue;
                }
                if !CLIENT_SIGNALS.contains(&name.as_str()) {
                    return Err(bad(format!(
                        "`send_signal`: pi does not answer {name}; a cassette holds {}",
                        CLIENT_SIGNALS.join(", ")
                    )));
                }
                last_client = Some("signal");
                Record::new(dt, Action::ClientSignal(name))
            }
            "stdout" | "stdout_text" | "stdout_raw" => {
                let (bytes, newline) = match &mut raw_lines {
                    Some((path, lines)) => {
                        let Some((raw, newline)) = lines.next() else {
                            return Err(bad(format!(
                                "a stdout entry, but {} has no more lines",
                                path.display()
                            )));
                        };
                        let same = if key == "stdout" {
                            serde_json::from_slice::<Value>(raw).ok().as_ref() == Some(value)
                        } else {
                            value.as_str().map(str::as_bytes) == Some(raw)
                        };
                        if !same {
                            return Err(bad(format!(
                                "this stdout entry is not the next line of {}: {}",
                                path.display(),
                                crate::two_way::excerpt(raw)
                            )));
                        }
                        (raw.to_vec(), newline)
                    }
                    None if key == "stdout" => (raw_entry[key].get().as_bytes().to_vec(), true),
                    None => match value {
                        Value::String(t) => (t.as_bytes().to_vec(), true),
                        _ => return Err(bad(format!("`{key}` must be a string"))),
                    },
                };
                let call_start = if claude {
                    claude_tools.model_call_starts(value)
                } else {
                    is_assistant_start(value)
                };
                if call_start {
                    if let Some(r) = requests.next() {
                        records.push(Record::new(0.0, Action::Request(r)));
                    }
                }
                let mut record = Record::stdout_line(dt, &bytes, newline);
                if key == "stdout" {
                    record.reply = reply_to(more.protocol, value, &client, &mut answered);
                }
                if claude && more.spawn_tools {
                    let (ended, started) = claude_tools.stdout(value);
                    for id in ended {
                        if let Some(at) = running.iter().position(|r| *r == id) {
                            running.remove(at);
                            records.push(Record::new(record.dt_ms, Action::Reap(id)));
                            record.dt_ms = 0.0;
                        }
                    }
                    records.push(record);
                    for id in started {
                        records.push(Record::new(0.0, bash_child(&id, &claude_tools.commands[&id])));
                        running.push(id);
                    }
                    continue;
                }
                let ended = (value.get("type").and_then(Value::as_str)
                    == Some("tool_execution_end"))
                .then(|| value["toolCallId"].as_str())
                .flatten();
                if let Some(at) = ended.and_then(|id| running.iter().position(|r| r == id)) {
                    // The child goes when the end is written: the reap takes the end's delay.
                    let id = running.remove(at);
                    records.push(Record::new(record.dt_ms, Action::Reap(id)));
                    record.dt_ms = 0.0;
                }
                records.push(record);
                if more.spawn_tools {
                    if let Some((Some(id), Some(command))) = tool_start(value) {
                        records.push(Record::new(0.0, bash_child(&id, &command)));
                        running.push(id);
                    }
                }
                if let Some(spawn) = spawn_pending {
                    if let Some((call_id, command)) = tool_start(value) {
                        records.push(Record::new(
                            0.0,
                            Action::Spawn(Spawn {
                                id: spawn.id.clone().or(call_id).unwrap_or_else(|| format!("tool-line-{n}")),
                                own_session: spawn.own_session,
                                ignore_sigterm: spawn.ignore_sigterm,
                                hold_stdout: spawn.hold_stdout,
                                grandchild: spawn.grandchild.clone(),
                                lifetime_ms: None,
                                argv: command.map(|c| vec!["/bin/bash".into(), "-c".into(), c]),
                            }),
                        ));
                        spawn_pending = None;
                    }
                }
                continue;
            }
            "stderr" => {
                let Value::String(t) = value else {
                    return Err(bad("`stderr` must be a string".into()));
                };
                Record::stderr_chunk(dt, t.as_bytes())
            }
            "exit" => {
                let code = value
                    .as_i64()
                    .filter(|c| (0..=255).contains(c))
                    .ok_or_else(|| bad(format!("`exit` must be 0..=255, found {value}")))?;
                ending = Some((n, Action::Exit(code as i32)));
                records.push(Record::new(dt, Action::Hang));
                continue;
            }
            "signal" => {
                let Value::String(s) = value else {
                    return Err(bad("`signal` must be a signal name".into()));
                };
                let name = parse_signal_name(s).map_err(|e| bad(e.to_string()))?;
                ending = Some((n, Action::Signal(name)));
                records.push(Record::new(dt, Action::Hang));
                continue;
            }
            other => {
                return Err(bad(format!(
                    "unknown entry `{other}`: expected stdin, stdin_text, stdin_close, send_signal, stdout, stdout_text, stderr, exit, signal (or an annotation: {})",
                    ANNOTATIONS.join(", ")
                )))
            }
        };
        records.push(record);
    }
    if let Some((path, mut lines)) = raw_lines {
        if lines.next().is_some() {
            return Err(input_err(
                path,
                0,
                "has more lines than the transcript has stdout entries".into(),
            ));
        }
    }
    if spawn_pending.is_some() {
        return Err(input_err(
            input,
            0,
            "--spawn-at-tool: no `tool_execution_start` in the transcript".into(),
        ));
    }
    // The ending: what the transcript says (its placeholder replaced), else the option.
    let end = match (ending, &more.ending) {
        (Some((_, Action::Signal(s))), _) if killed && s == "SIGKILL" => Action::Hang,
        (Some((_, a)), _) => a,
        (None, Some(Ending::Exit(c))) => Action::Exit(*c),
        (None, Some(Ending::Signal(s))) => Action::Signal(parse_signal_name(s)?),
        (None, Some(Ending::Hang)) => Action::Hang,
        (None, None) if killed => Action::Hang,
        (None, None) => {
            return Err(input_err(
                input,
                0,
                "the transcript does not say how pi ended: add an {\"exit\":N} or {\"signal\":\"SIG\"} entry, or give --exit, --signal or --hang".into(),
            ))
        }
    };
    let leftover: Vec<String> = requests.collect();
    let end_dt = match records.last() {
        Some(Record {
            action: Action::Hang,
            dt_ms,
            ..
        }) => {
            let dt = *dt_ms;
            records.pop();
            dt
        }
        _ => opts.spacing_ms,
    };
    for r in leftover {
        records.push(Record::new(0.0, Action::Request(r)));
    }
    // pi kills its tools when it exits on a signal it handles, and on stdin closing from
    // the version that does so.
    let kills_tools = match last_client {
        // Claude Code lets a tool finish when stdin closes (its result is already reaped).
        Some("stdin_close") if claude => false,
        Some("stdin_close") => pi_grammar::Grammar::for_version(&opts.pi_version)
            .is_some_and(|g| g.has(pi_grammar::Feature::RpcEofKillsTools)),
        _ => true,
    };
    if matches!(end, Action::Exit(_)) && kills_tools {
        for id in running.drain(..) {
            records.push(Record::new(0.0, Action::Reap(id)));
        }
    }
    records.push(Record::new(end_dt, end));
    Ok(Cassette {
        header: Header {
            format: FORMAT_NAME.to_string(),
            version: FORMAT_VERSION_TWO_WAY,
            mode: Some(
                if claude {
                    crate::MODE_STREAM_JSON
                } else {
                    "rpc"
                }
                .into(),
            ),
            pi: PiSource {
                version: opts.pi_version.clone(),
                dialect,
            },
            scenario: Scenario {
                name: opts.scenario.clone(),
                description: opts.description.clone(),
                tags: opts.tags.clone(),
            },
            expect,
            process: {
                let mut p = opts.process.clone();
                // Claude Code answers SIGINT with an interrupt of the turn, then exit 0 (pi dies).
                if claude && p.on_sigint == crate::SignalAction::pi_sigint() {
                    p.on_sigint = crate::SignalAction::CleanupExit { code: 0 };
                }
                p
            },
            redactions: opts.redactions.clone(),
            origin: Origin {
                kind: OriginKind::Imported,
                source: opts.source.clone(),
                timing: if timed {
                    TimingKind::Measured
                } else {
                    TimingKind::Synthetic
                },
                notes: opts.notes.clone(),
            },
        },
        records,
    })
}

/// A `spawn` for pi's bash tool running `command`: `/bin/bash -c COMMAND` in its own
/// session, as pi starts it.
fn bash_child(id: &str, command: &str) -> Action {
    Action::Spawn(Spawn {
        id: id.to_string(),
        own_session: true,
        ignore_sigterm: false,
        hold_stdout: false,
        grandchild: None,
        lifetime_ms: None,
        argv: Some(vec!["/bin/bash".into(), "-c".into(), command.to_string()]),
    })
}

/// `message_start` of an assistant message: the model was called just before.
fn is_assistant_start(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("message_start")
        && v["message"]["role"].as_str() == Some("assistant")
}

/// The id a client line carries under `protocol` (its JSON text).
fn client_id(protocol: Protocol, line: &Value) -> Option<String> {
    match protocol {
        Protocol::Rpc => line.get("id").map(Value::to_string),
        Protocol::StreamJson => (line.get("type").and_then(Value::as_str)
            == Some("control_request"))
        .then(|| line.get("request_id").map(Value::to_string))
        .flatten(),
    }
}

/// Claude Code's Bash tool calls as a transcript shows them: where each starts running and
/// ends (pure bookkeeping for `spawn_tools`).
#[derive(Debug, Default)]
struct ClaudeTools {
    /// Bash `tool_use` id -> its command.
    commands: std::collections::HashMap<String, String>,
    /// A `can_use_tool` request id (JSON text) -> the tool_use it asks about.
    asked: std::collections::HashMap<String, String>,
    /// The `message.id` of the last `assistant` record; whether `stream_event`s came.
    last_message: Option<String>,
    partial: bool,
}

impl ClaudeTools {
    /// Does this stdout record show the CLI calling the model? A `message_start` stream
    /// event, or (without partial messages) an `assistant` record of a new message.
    fn model_call_starts(&mut self, v: &Value) -> bool {
        match v.get("type").and_then(Value::as_str) {
            Some("stream_event") => {
                self.partial = true;
                v["event"]["type"] == "message_start"
            }
            Some("assistant") if !self.partial => {
                let id = v["message"]["id"].as_str().map(str::to_string);
                let new = id.is_some() && id != self.last_message;
                self.last_message = id;
                new && v["message"]["model"] != "<synthetic>"
            }
            _ => false,
        }
    }

    /// A stdout record: the Bash calls that ended (their tool result), and (always none
    /// today) the ones that started running. A command the CLI runs without asking (`ls`,
    /// `echo`) is not modelled as a process: whether its permission check or the end of
    /// the model's message comes first is a race, so where it starts cannot be told from
    /// the stdout order alone.
    fn stdout(&mut self, v: &Value) -> (Vec<String>, Vec<String>) {
        match v.get("type").and_then(Value::as_str) {
            Some("assistant") => {
                for block in v["message"]["content"].as_array().into_iter().flatten() {
                    if block["type"] == "tool_use" && block["name"] == "Bash" {
                        if let (Some(id), Some(cmd)) =
                            (block["id"].as_str(), block["input"]["command"].as_str())
                        {
                            self.commands.insert(id.to_string(), cmd.to_string());
                        }
                    }
                }
                (Vec::new(), Vec::new())
            }
            Some("control_request") if v["request"]["subtype"] == "can_use_tool" => {
                if let (Some(tool), Some(rid)) =
                    (v["request"]["tool_use_id"].as_str(), v.get("request_id"))
                {
                    if self.commands.contains_key(tool) {
                        self.asked.insert(rid.to_string(), tool.to_string());
                    }
                }
                (Vec::new(), Vec::new())
            }
            Some("user") => {
                let ended = v["message"]["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|b| b["type"] == "tool_result")
                    .filter_map(|b| b["tool_use_id"].as_str().map(str::to_string))
                    .collect();
                (ended, Vec::new())
            }
            _ => (Vec::new(), Vec::new()),
        }
    }

    /// The host's line: the Bash call it allowed, if it answered a `can_use_tool` with
    /// `allow` (the command it runs is the host's `updatedInput` when it gave one).
    fn allowed(&mut self, v: &Value) -> Option<String> {
        if v.get("type").and_then(Value::as_str) != Some("control_response") {
            return None;
        }
        let r = &v["response"];
        if r["subtype"] != "success" || r["response"]["behavior"] != "allow" {
            return None;
        }
        let id = self.asked.remove(&r.get("request_id")?.to_string())?;
        if let Some(cmd) = r["response"]["updatedInput"]["command"].as_str() {
            self.commands.insert(id.clone(), cmd.to_string());
        }
        Some(id)
    }
}

/// Which client line a response answers (see the module doc).
fn reply_to(
    protocol: Protocol,
    response: &Value,
    client: &[(Option<String>, Option<String>)],
    answered: &mut HashSet<usize>,
) -> Option<u32> {
    if protocol == Protocol::StreamJson {
        // A control_response names the host's control_request by `request_id`.
        if response.get("type").and_then(Value::as_str) != Some("control_response") {
            return None;
        }
        let id = response["response"].get("request_id")?.to_string();
        let k = client
            .iter()
            .rposition(|(i, _)| i.as_deref() == Some(id.as_str()))?;
        answered.insert(k);
        return u32::try_from(k).ok();
    }
    if response.get("type").and_then(Value::as_str) != Some("response") {
        return None;
    }
    let k = match response.get("id") {
        Some(id) => {
            let id = id.to_string();
            client
                .iter()
                .rposition(|(i, _)| i.as_deref() == Some(id.as_str()))?
        }
        None => {
            let command = response.get("command")?.as_str()?;
            client.iter().enumerate().position(|(k, (id, ty))| {
                id.is_none() && ty.as_deref() == Some(command) && !answered.contains(&k)
            })?
        }
    };
    answered.insert(k);
    u32::try_from(k).ok()
}

/// Read the transcript (and the files `raw_stdout` / `requests` name), import it, write
/// `out` (gzip when it ends in `.gz`), reading it back first: it must be the cassette
/// built, and replay `--raw-stdout` byte for byte when given. On any failure nothing is
/// written.
pub fn import_transcript_file(
    transcript_path: &Path,
    out: &Path,
    opts: &ImportOptions,
    files: &FileInputs<'_>,
) -> Result<Cassette, ImportError> {
    let FileInputs {
        raw_stdout,
        requests,
        ref ending,
        spawn_tools,
        protocol,
    } = *files;
    let ending = ending.clone();
    if protocol == Protocol::Rpc && pi_grammar::Grammar::for_version(&opts.pi_version).is_none() {
        return Err(ImportError::Usage(format!(
            "--pi-version {}: not a pinned pi version ({})",
            opts.pi_version,
            pi_grammar::KNOWN_VERSIONS.join(", ")
        )));
    }
    let read = crate::import::read_input;
    let transcript = read(transcript_path)?;
    if transcript.is_empty() {
        return Err(input_err(transcript_path, 0, "is empty".into()));
    }
    let first = transcript
        .split(|&b| b == b'\n')
        .next()
        .unwrap_or(&transcript);
    if crate::is_header_line(first) {
        return Err(input_err(
            transcript_path,
            0,
            "is already a cassette (its first line is a cassette header); import takes a client's transcript".into(),
        ));
    }
    let raw = raw_stdout.map(read).transpose()?;
    let req = requests.map(read).transpose()?;
    let more = TwoWayInputs {
        raw_stdout: raw_stdout.zip(raw.as_deref()),
        requests: requests.zip(req.as_deref()),
        ending,
        spawn_tools,
        protocol,
    };
    let cassette = import_transcript(transcript_path, &transcript, opts, &more)?;
    let mut inputs: Vec<&Path> = vec![transcript_path];
    inputs.extend(raw_stdout);
    inputs.extend(requests);
    crate::import::write_verified(&cassette, out, &inputs, |back| match &raw {
        Some(raw) => crate::import::verify_round_trip(back, raw, Some(&cassette.stderr_bytes())),
        None => Ok(()),
    })?;
    Ok(cassette)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::Ending;

    fn opts() -> ImportOptions {
        ImportOptions::new("1.5.2", "t", "d", Ending::Exit(0))
    }

    const TRANSCRIPT: &str = r#"{"t_ms": 1, "note": "started"}
{"t_ms": 2.5, "stdin": {"id": "p1", "type": "prompt", "message": "hi"}}
{"t_ms": 600, "stdout": {"id": "p1", "type": "response", "command": "prompt", "success": true}}
{"t_ms": 601, "stdout": {"type": "message_start", "message": {"role": "assistant"}}}
{"t_ms": 602, "stdin": {"type": "get_state"}}
{"t_ms": 603, "stdout": {"type": "response", "command": "get_state", "success": true}}
{"t_ms": 604, "stdin_raw": "not json"}
{"t_ms": 605, "stdout": {"type": "response", "command": "parse", "success": false}}
{"t_ms": 700, "stdin_close": true}
{"t_ms": 730, "exit": 0}
{"t_ms": 731, "ps": []}
"#;

    #[test]
    fn a_transcript_becomes_a_two_way_cassette() {
        let requests = br#"{"index":1,"messages":[]}"#;
        let more = TwoWayInputs {
            requests: Some((Path::new("r"), requests)),
            ..TwoWayInputs::default()
        };
        let c = import_transcript(Path::new("t"), TRANSCRIPT.as_bytes(), &opts(), &more).unwrap();
        assert_eq!(c.header.version, 2);
        assert_eq!(c.header.mode.as_deref(), Some("rpc"));
        assert_eq!(c.header.origin.timing, TimingKind::Measured);
        let keys: Vec<&str> = c.records.iter().map(|r| r.action.key()).collect();
        assert_eq!(
            keys,
            [
                "stdin",
                "stdout",
                "request",
                "stdout",
                "stdin",
                "stdout",
                "stdin_text",
                "stdout",
                "stdin_close",
                "exit"
            ]
        );
        let replies: Vec<Option<u32>> = c.records.iter().map(|r| r.reply).collect();
        assert_eq!(
            replies[1],
            Some(0),
            "the prompt's response names line 0 by id"
        );
        assert_eq!(replies[5], Some(1), "get_state without id: by command");
        assert_eq!(replies[7], None, "a parse error answers no command");
        assert_eq!(c.records[1].dt_ms, 597.5);
        assert_eq!(c.records[9].dt_ms, 30.0);
        // Written and read back: the same cassette.
        let back = Cassette::parse(Path::new("x"), c.to_jsonl().as_bytes()).unwrap();
        assert_eq!(back.records.len(), c.records.len());
        assert_eq!(back.stdout_bytes(), c.stdout_bytes());
    }

    #[test]
    fn raw_stdout_keeps_pis_bytes_and_must_agree() {
        let t = "{\"stdin\": {\"type\": \"get_state\"}}\n{\"stdout\": {\"type\": \"response\", \"command\": \"get_state\"}}\n{\"exit\": 0}\n";
        let raw = b"{\"type\":\"response\",\"command\":\"get_state\"}\n";
        let more = TwoWayInputs {
            raw_stdout: Some((Path::new("raw"), raw)),
            ..TwoWayInputs::default()
        };
        let c = import_transcript(Path::new("t"), t.as_bytes(), &opts(), &more).unwrap();
        assert_eq!(c.stdout_bytes(), raw);
        let other = b"{\"type\":\"response\",\"command\":\"get_messages\"}\n";
        let more = TwoWayInputs {
            raw_stdout: Some((Path::new("raw"), other)),
            ..TwoWayInputs::default()
        };
        let e = import_transcript(Path::new("t"), t.as_bytes(), &opts(), &more).unwrap_err();
        assert!(e.to_string().contains("t:2:"), "{e}");
        assert!(e.to_string().contains("not the next line of raw"), "{e}");
    }

    #[test]
    fn bad_transcripts_name_the_line() {
        for (t, want) in [
            (
                "{\"stdin\": {}}\n{\"bogus\": 1}\n",
                "t:2: unknown entry `bogus`",
            ),
            ("{\"stdin\": {}, \"stdout\": {}}\n", "t:1: several actions"),
            ("[1]\n", "t:1: not a JSON object"),
            (
                "{\"send_signal\": \"SIGUSR1\"}\n",
                "does not answer SIGUSR1",
            ),
            (
                "{\"exit\": 0}\n{\"stdout\": {}}\n",
                "t:2: `stdout` after pi ended (line 1)",
            ),
            ("{\"stdin\": {}}\n", "does not say how pi ended"),
        ] {
            let more = TwoWayInputs::default();
            let e = import_transcript(Path::new("t"), t.as_bytes(), &opts(), &more).unwrap_err();
            assert!(e.to_string().contains(want), "{t}: {e}");
        }
    }

    #[test]
    fn a_client_sigkill_ends_in_hang() {
        let t = "{\"stdin\": {\"type\": \"prompt\", \"message\": \"x\"}}\n{\"send_signal\": \"SIGKILL\"}\n{\"signal\": \"SIGKILL\"}\n";
        let c = import_transcript(
            Path::new("t"),
            t.as_bytes(),
            &opts(),
            &TwoWayInputs::default(),
        )
        .unwrap();
        assert_eq!(c.ending(), &Action::Hang);
    }

    /// A Claude Code host's transcript (shortened from a real one): the CLI's permission
    /// prompt, the host's allow, the tool's run, an interrupt of the host's own.
    const CLAUDE: &str = r#"{"t_ms": 1, "stdin": {"type": "user", "session_id": "", "message": {"role": "user", "content": "touch x"}}}
{"t_ms": 700, "stdout": {"type": "system", "subtype": "init", "session_id": "s-1"}}
{"t_ms": 710, "stdout": {"type": "stream_event", "event": {"type": "message_start"}}}
{"t_ms": 720, "stdout": {"type": "assistant", "message": {"id": "msg_1", "content": [{"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": "touch x"}}]}}}
{"t_ms": 730, "stdout": {"type": "stream_event", "event": {"type": "message_stop"}}}
{"t_ms": 740, "stdout": {"type": "control_request", "request_id": "r-9", "request": {"subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": "touch x"}, "tool_use_id": "toolu_01"}}}
{"t_ms": 741, "stdin": {"type": "control_response", "response": {"subtype": "success", "request_id": "r-9", "response": {"behavior": "allow"}}}}
{"t_ms": 800, "stdout": {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "", "is_error": false}]}}}
{"t_ms": 810, "stdin": {"type": "control_request", "request_id": "int-1", "request": {"subtype": "interrupt"}}}
{"t_ms": 820, "stdout": {"type": "control_response", "response": {"subtype": "success", "request_id": "int-1", "response": {"still_queued": []}}}}
{"t_ms": 830, "stdin_close": true}
{"t_ms": 900, "exit": 0}
"#;

    #[test]
    fn a_claude_transcript_ties_answers_by_request_id_and_runs_the_allowed_tool() {
        let mut o = ImportOptions::new("2.1.330", "t", "d", Ending::Exit(0));
        let more = TwoWayInputs {
            spawn_tools: true,
            protocol: Protocol::StreamJson,
            ..TwoWayInputs::default()
        };
        // The options are required, by their long names.
        let e = import_transcript(Path::new("t"), CLAUDE.as_bytes(), &o, &more).unwrap_err();
        assert!(
            e.to_string().contains("give the Claude Code options"),
            "{e}"
        );
        o.expect.flags.insert("p".into(), FlagRule::Present(true));
        let e = import_transcript(Path::new("t"), CLAUDE.as_bytes(), &o, &more).unwrap_err();
        assert!(
            e.to_string()
                .contains("--flag p: Claude Code has no option --p"),
            "{e}"
        );
        o.expect.flags.clear();
        o.expect
            .flags
            .insert("print".into(), FlagRule::Present(true));
        o.expect
            .flags
            .insert("input-format".into(), FlagRule::Value("stream-json".into()));
        let more = TwoWayInputs {
            spawn_tools: true,
            protocol: Protocol::StreamJson,
            ..TwoWayInputs::default()
        };
        let c = import_transcript(Path::new("t"), CLAUDE.as_bytes(), &o, &more).unwrap();
        assert_eq!(c.header.mode.as_deref(), Some("stream-json"));
        assert_eq!(c.header.pi.dialect, crate::Dialect::StreamJson);
        assert_eq!(c.header.expect.env, ["ANTHROPIC_API_KEY"]);
        assert!(c
            .header
            .to_json()
            .contains(r#","claude":{"version":"2.1.330""#));
        let kinds: Vec<String> = c
            .records
            .iter()
            .map(|r| match &r.action {
                Action::Stdout(b) => {
                    let v: Value = serde_json::from_slice(&b.data).unwrap();
                    format!("out {}", v["type"].as_str().unwrap())
                }
                Action::Stdin(l) => {
                    let v: Value = serde_json::from_str(&l.json).unwrap();
                    format!("in {}", v["type"].as_str().unwrap())
                }
                Action::Spawn(s) => format!("spawn {}", s.id),
                Action::Reap(id) => format!("reap {id}"),
                Action::StdinClose => "close".into(),
                Action::Exit(c) => format!("exit {c}"),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "in user",
                "out system",
                "out stream_event",
                "out assistant",
                "out stream_event",
                "out control_request",
                "in control_response",
                // The tool runs from the host's allow to its result.
                "spawn toolu_01",
                "reap toolu_01",
                "out user",
                "in control_request",
                "out control_response",
                "close",
                "exit 0",
            ]
        );
        // The CLI's answer to the interrupt names the host's line (index 2 of the host's
        // lines) by its request_id; the CLI's own permission prompt is no reply.
        let replies: Vec<Option<u32>> = c.records.iter().map(|r| r.reply).collect();
        assert_eq!(replies[11], Some(2));
        assert!(replies[..11].iter().all(Option::is_none));
        // Round trip through the one reader.
        let back = crate::Cassette::parse(Path::new("t"), c.to_jsonl().as_bytes()).unwrap();
        assert_eq!(back.to_jsonl(), c.to_jsonl());
        // SIGINT interrupts the turn, then the CLI exits 0.
        assert_eq!(
            c.header.process.on_sigint,
            crate::SignalAction::CleanupExit { code: 0 }
        );
    }
}
