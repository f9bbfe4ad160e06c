//! The walk over a transcript's entries, one line at a time: each entry becomes the
//! records it stands for (a client line, pi's output with the model request before it, the
//! tool children it starts and reaps), and [`Walk::finish`] gives the ending.

use std::collections::HashMap;
use std::path::Path;

use serde_json::value::RawValue;
use serde_json::Value;

use super::claude_tools::ClaudeTools;
use super::inputs::{input_err, TwoWayInputs, ANNOTATIONS};
use super::replies::ClientLines;
use crate::import::{parse_signal_name, split_lines, tool_start, Ending, ImportError};
use crate::import::{ImportOptions, SpawnAtTool};
use crate::two_way::Protocol;
use crate::{Action, ClientLine, Record, Spawn, CLIENT_SIGNALS};

/// A file of pi's stdout and its lines not read yet (each with whether a `\n` followed).
type RawLines<'a> = (&'a Path, std::vec::IntoIter<(&'a [u8], bool)>);

/// The records read so far and what the entries after them depend on.
pub(super) struct Walk<'a> {
    input: &'a Path,
    opts: &'a ImportOptions,
    protocol: Protocol,
    claude: bool,
    spawn_tools: bool,
    ending_option: Option<Ending>,
    /// pi's stdout, line by line, when given (`--raw-stdout`).
    raw_lines: Option<RawLines<'a>>,
    /// The model requests not placed yet.
    requests: std::vec::IntoIter<String>,
    records: Vec<Record>,
    /// The transcript's ending (its line and action), once read.
    ending: Option<(usize, Action)>,
    last_t: Option<f64>,
    timed: bool,
    client: ClientLines,
    /// The client sent SIGKILL.
    killed: bool,
    spawn_pending: Option<&'a SpawnAtTool>,
    /// Tool children spawned and not reaped yet, in order.
    running: Vec<String>,
    /// The last client action (`stdin`, `stdin_close`, `signal`).
    last_client: Option<&'static str>,
    claude_tools: ClaudeTools,
}

impl<'a> Walk<'a> {
    /// A walk over the transcript `input` with these options and model requests.
    pub(super) fn new(
        input: &'a Path,
        opts: &'a ImportOptions,
        more: &'a TwoWayInputs<'a>,
        requests: Vec<String>,
    ) -> Self {
        Walk {
            input,
            opts,
            protocol: more.protocol,
            claude: more.protocol == Protocol::StreamJson,
            spawn_tools: more.spawn_tools,
            ending_option: more.ending.clone(),
            raw_lines: more
                .raw_stdout
                .map(|(p, raw)| (p, split_lines(raw).into_iter())),
            requests: requests.into_iter(),
            records: Vec::new(),
            ending: None,
            last_t: None,
            timed: true,
            client: ClientLines::default(),
            killed: false,
            spawn_pending: opts.spawn_at_tool.as_ref(),
            running: Vec::new(),
            last_client: None,
            claude_tools: ClaudeTools::default(),
        }
    }

    /// Line `n` of the transcript: its records, or nothing for a blank line or an
    /// annotation.
    pub(super) fn entry(&mut self, n: usize, line: &[u8]) -> Result<(), ImportError> {
        let input = self.input;
        let bad = |m: String| input_err(input, n, m);
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let text = std::str::from_utf8(line).map_err(|_| bad("not UTF-8".into()))?;
        let entry: serde_json::Map<String, Value> =
            serde_json::from_str(text).map_err(|e| bad(format!("not a JSON object: {e}")))?;
        let raw_entry: HashMap<String, &RawValue> =
            serde_json::from_str(text).map_err(|e| bad(format!("not a JSON object: {e}")))?;
        let keys: Vec<&str> = entry
            .keys()
            .map(String::as_str)
            .filter(|k| *k != "t_ms")
            .collect();
        if keys.iter().any(|k| ANNOTATIONS.contains(k)) {
            return Ok(());
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
        let dt = self.delay(entry.get("t_ms")).map_err(bad)?;
        if let Some((at, _)) = &self.ending {
            return Err(bad(format!(
                "`{key}` after pi ended (line {at}); nothing but annotations may follow"
            )));
        }
        let value = &entry[key];
        match key {
            "stdin" => {
                self.stdin(dt, value, raw_entry[key].get().to_string());
                Ok(())
            }
            "stdin_text" | "stdin_raw" | "stdin_close" | "send_signal" => {
                self.client_entry(key, dt, value).map_err(bad)
            }
            "stdout" | "stdout_text" | "stdout_raw" => self
                .stdout(n, key, dt, value, raw_entry[key].get())
                .map_err(bad),
            "stderr" => {
                let Value::String(t) = value else {
                    return Err(bad("`stderr` must be a string".into()));
                };
                self.records.push(Record::stderr_chunk(dt, t.as_bytes()));
                Ok(())
            }
            "exit" | "signal" => self.end(n, key, dt, value).map_err(bad),
            other => Err(bad(format!(
                "unknown entry `{other}`: expected stdin, stdin_text, stdin_close, send_signal, stdout, stdout_text, stderr, exit, signal (or an annotation: {})",
                ANNOTATIONS.join(", ")
            ))),
        }
    }

    /// The delay of an entry: the time since the previous one by `t_ms`, or the options'
    /// even spacing (then the cassette's timing is synthetic).
    fn delay(&mut self, t_ms: Option<&Value>) -> Result<f64, String> {
        match t_ms {
            Some(Value::Number(t)) => {
                let t = t.as_f64().unwrap_or(0.0);
                if !t.is_finite() || t < 0.0 {
                    return Err(format!("`t_ms` must be a non-negative number, found {t}"));
                }
                let dt = (t - self.last_t.unwrap_or(0.0)).max(0.0);
                self.last_t = Some(t.max(self.last_t.unwrap_or(0.0)));
                Ok((dt * 10.0).round() / 10.0)
            }
            Some(other) => Err(format!("`t_ms` must be a number, found {other}")),
            None => {
                self.timed = false;
                Ok(self.opts.spacing_ms)
            }
        }
    }

    /// A JSON line the client wrote; for Claude Code's host, its allow of a Bash call starts
    /// that call's process.
    fn stdin(&mut self, dt: f64, value: &Value, json: String) {
        self.client.json(self.protocol, value);
        self.last_client = Some("stdin");
        self.records.push(Record::new(
            dt,
            Action::Stdin(ClientLine { json, fields: None }),
        ));
        if self.claude && self.spawn_tools {
            if let Some(id) = self.claude_tools.allowed(value) {
                let child = bash_child(&id, &self.claude_tools.commands[&id]);
                self.records.push(Record::new(0.0, child));
                self.running.push(id);
            }
        }
    }

    /// The client's other actions: a line as is, closing stdin, a signal (its SIGKILL ends
    /// the cassette in `hang`).
    fn client_entry(&mut self, key: &str, dt: f64, value: &Value) -> Result<(), String> {
        let action = match key {
            "stdin_close" => {
                if value != &Value::Bool(true) {
                    return Err("`stdin_close` must be true".into());
                }
                self.last_client = Some("stdin_close");
                Action::StdinClose
            }
            "send_signal" => {
                let Value::String(s) = value else {
                    return Err("`send_signal` must be a signal name".into());
                };
                let name = parse_signal_name(s).map_err(|e| e.to_string())?;
                if name == "SIGKILL" {
                    self.killed = true;
                    return Ok(());
                }
                if !CLIENT_SIGNALS.contains(&name.as_str()) {
                    return Err(format!(
                        "`send_signal`: pi does not answer {name}; a cassette holds {}",
                        CLIENT_SIGNALS.join(", ")
                    ));
                }
                self.last_client = Some("signal");
                Action::ClientSignal(name)
            }
            _ => {
                let Value::String(t) = value else {
                    return Err(format!("`{key}` must be a string"));
                };
                let t = t.strip_suffix('\n').unwrap_or(t);
                if t.contains('\n') {
                    return Err(format!("`{key}` holds more than one line"));
                }
                self.client.text();
                self.last_client = Some("stdin");
                Action::StdinText(t.to_string())
            }
        };
        self.records.push(Record::new(dt, action));
        Ok(())
    }

    /// A line pi wrote: the model request before it when it starts a model call, its
    /// `reply`, and the tool children it ends or starts.
    fn stdout(
        &mut self,
        n: usize,
        key: &str,
        dt: f64,
        value: &Value,
        raw: &str,
    ) -> Result<(), String> {
        let (bytes, newline) = self.stdout_bytes(key, value, raw)?;
        let call_start = if self.claude {
            self.claude_tools.model_call_starts(value)
        } else {
            is_assistant_start(value)
        };
        if call_start {
            if let Some(r) = self.requests.next() {
                self.records.push(Record::new(0.0, Action::Request(r)));
            }
        }
        let mut record = Record::stdout_line(dt, &bytes, newline);
        if key == "stdout" {
            record.reply = self.client.reply_to(self.protocol, value);
        }
        if self.claude && self.spawn_tools {
            self.claude_tool_children(record, value);
        } else {
            self.pi_tool_children(n, record, value);
        }
        Ok(())
    }

    /// The bytes of a stdout entry and whether a `\n` followed them: the next line of the
    /// raw stdout when given (it must be the same value), else the entry's own.
    fn stdout_bytes(
        &mut self,
        key: &str,
        value: &Value,
        raw: &str,
    ) -> Result<(Vec<u8>, bool), String> {
        Ok(match &mut self.raw_lines {
            Some((path, lines)) => {
                let Some((raw, newline)) = lines.next() else {
                    return Err(format!(
                        "a stdout entry, but {} has no more lines",
                        path.display()
                    ));
                };
                let same = if key == "stdout" {
                    serde_json::from_slice::<Value>(raw).ok().as_ref() == Some(value)
                } else {
                    value.as_str().map(str::as_bytes) == Some(raw)
                };
                if !same {
                    return Err(format!(
                        "this stdout entry is not the next line of {}: {}",
                        path.display(),
                        crate::two_way::excerpt(raw)
                    ));
                }
                (raw.to_vec(), newline)
            }
            None if key == "stdout" => (raw.as_bytes().to_vec(), true),
            None => match value {
                Value::String(t) => (t.as_bytes().to_vec(), true),
                _ => return Err(format!("`{key}` must be a string")),
            },
        })
    }

    /// Claude Code's stdout `record`: the Bash calls whose result it is are reaped first
    /// (the first reap takes its delay).
    fn claude_tool_children(&mut self, mut record: Record, value: &Value) {
        let (ended, started) = self.claude_tools.stdout(value);
        for id in ended {
            if let Some(at) = self.running.iter().position(|r| *r == id) {
                self.running.remove(at);
                self.records
                    .push(Record::new(record.dt_ms, Action::Reap(id)));
                record.dt_ms = 0.0;
            }
        }
        self.records.push(record);
        for id in started {
            let child = bash_child(&id, &self.claude_tools.commands[&id]);
            self.records.push(Record::new(0.0, child));
            self.running.push(id);
        }
    }

    /// pi's stdout `record`: a `tool_execution_end` reaps its child first; a
    /// `tool_execution_start` spawns one after it (`--spawn-tools`, `--spawn-at-tool`).
    fn pi_tool_children(&mut self, n: usize, mut record: Record, value: &Value) {
        let ended = (value.get("type").and_then(Value::as_str) == Some("tool_execution_end"))
            .then(|| value["toolCallId"].as_str())
            .flatten();
        if let Some(at) = ended.and_then(|id| self.running.iter().position(|r| r == id)) {
            // The child goes when the end is written: the reap takes the end's delay.
            let id = self.running.remove(at);
            self.records
                .push(Record::new(record.dt_ms, Action::Reap(id)));
            record.dt_ms = 0.0;
        }
        self.records.push(record);
        if self.spawn_tools {
            if let Some((Some(id), Some(command))) = tool_start(value) {
                self.records
                    .push(Record::new(0.0, bash_child(&id, &command)));
                self.running.push(id);
            }
        }
        if let Some(spawn) = self.spawn_pending {
            if let Some((call_id, command)) = tool_start(value) {
                self.records.push(Record::new(
                    0.0,
                    Action::Spawn(Spawn {
                        id: spawn
                            .id
                            .clone()
                            .or(call_id)
                            .unwrap_or_else(|| format!("tool-line-{n}")),
                        own_session: spawn.own_session,
                        ignore_sigterm: spawn.ignore_sigterm,
                        hold_stdout: spawn.hold_stdout,
                        grandchild: spawn.grandchild.clone(),
                        lifetime_ms: None,
                        argv: command.map(|c| vec!["/bin/bash".into(), "-c".into(), c]),
                    }),
                ));
                self.spawn_pending = None;
            }
        }
    }

    /// pi exited or died by a signal (line `n`): a `hang` holds the place and the delay of
    /// the ending until [`Walk::finish`].
    fn end(&mut self, n: usize, key: &str, dt: f64, value: &Value) -> Result<(), String> {
        let action = if key == "exit" {
            let code = value
                .as_i64()
                .filter(|c| (0..=255).contains(c))
                .ok_or_else(|| format!("`exit` must be 0..=255, found {value}"))?;
            Action::Exit(code as i32)
        } else {
            let Value::String(s) = value else {
                return Err("`signal` must be a signal name".into());
            };
            Action::Signal(parse_signal_name(s).map_err(|e| e.to_string())?)
        };
        self.ending = Some((n, action));
        self.records.push(Record::new(dt, Action::Hang));
        Ok(())
    }

    /// The records with their ending (the transcript's, else the option's), after the
    /// requests no stdout line claimed and the reaps of the tool children an exit kills;
    /// and whether every entry was timed.
    pub(super) fn finish(mut self) -> Result<(Vec<Record>, bool), ImportError> {
        if let Some((path, mut lines)) = self.raw_lines.take() {
            if lines.next().is_some() {
                return Err(input_err(
                    path,
                    0,
                    "has more lines than the transcript has stdout entries".into(),
                ));
            }
        }
        if self.spawn_pending.is_some() {
            return Err(input_err(
                self.input,
                0,
                "--spawn-at-tool: no `tool_execution_start` in the transcript".into(),
            ));
        }
        // The ending: what the transcript says (its placeholder replaced), else the option.
        let end = match (self.ending.take(), &self.ending_option) {
            (Some((_, Action::Signal(s))), _) if self.killed && s == "SIGKILL" => Action::Hang,
            (Some((_, a)), _) => a,
            (None, Some(Ending::Exit(c))) => Action::Exit(*c),
            (None, Some(Ending::Signal(s))) => Action::Signal(parse_signal_name(s)?),
            (None, Some(Ending::Hang)) => Action::Hang,
            (None, None) if self.killed => Action::Hang,
            (None, None) => {
                return Err(input_err(
                    self.input,
                    0,
                    "the transcript does not say how pi ended: add an {\"exit\":N} or {\"signal\":\"SIG\"} entry, or give --exit, --signal or --hang".into(),
                ))
            }
        };
        let leftover: Vec<String> = self.requests.by_ref().collect();
        let end_dt = match self.records.last() {
            Some(Record {
                action: Action::Hang,
                dt_ms,
                ..
            }) => {
                let dt = *dt_ms;
                self.records.pop();
                dt
            }
            _ => self.opts.spacing_ms,
        };
        for r in leftover {
            self.records.push(Record::new(0.0, Action::Request(r)));
        }
        if matches!(end, Action::Exit(_)) && self.exit_kills_tools() {
            for id in self.running.drain(..) {
                self.records.push(Record::new(0.0, Action::Reap(id)));
            }
        }
        self.records.push(Record::new(end_dt, end));
        Ok((self.records, self.timed))
    }

    /// pi kills its tools when it exits on a signal it handles, and on stdin closing from
    /// the version that does so.
    fn exit_kills_tools(&self) -> bool {
        match self.last_client {
            // Claude Code lets a tool finish when stdin closes (its result is already reaped).
            Some("stdin_close") if self.claude => false,
            Some("stdin_close") => pi_grammar::Grammar::pinned_or_newer(&self.opts.pi_version)
                .is_some_and(|g| g.has(pi_grammar::Feature::RpcEofKillsTools)),
            _ => true,
        }
    }
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
