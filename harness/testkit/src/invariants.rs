//! The normalized stream's invariants, checked independently of the mapper (pi's stdout is
//! read with `serde_json::Value`), and this repository's committed cassettes.
//!
//! Used by the mapper tests and the conformance suite alike: one copy of each rule.
//! [`check_invariants`] checks a json-mode run's messages against its cassette,
//! [`check_rpc_invariants`] an RPC session's; [`map_and_check`] maps a cassette with the
//! reference mapper and checks it; the `check_*` functions are the single rules.
//!
//! ```
//! use pi_testkit::invariants::{check_invariants, map_and_check};
//! use pi_testkit::{messages, records, World};
//!
//! let world = World::new("invariants");
//! let text = world.cassette("hello").records(records::answer("Hello!")).text();
//! let cassette = pi_cassette::Cassette::parse(std::path::Path::new("hello"), text.as_bytes()).unwrap();
//! let msgs = map_and_check(&cassette).unwrap();
//! check_invariants(&cassette, &msgs).unwrap();
//! assert_eq!(messages::text_of(&msgs), "Hello!");
//! ```

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use pi_cassette::{Action, Cassette};
use pi_wire::mapper::StreamEnd;
use pi_wire::message::Message;
use serde_json::Value;

/// `cassettes/` at this repository's root (tests of this repository only).
pub fn cassettes_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../cassettes")
}

/// Every committed cassette, sorted by path.
pub fn all_cassettes() -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![cassettes_dir()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("readable dir entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.contains(".cassette.jsonl"))
            {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// A committed cassette by its path under `cassettes/` (`recorded/hello.pi87.cassette.jsonl`);
/// panics with the reader's `file:line` message when it cannot be read.
pub fn load(name: &str) -> Cassette {
    let path = cassettes_dir().join(name);
    Cassette::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// The end a replay of the cassette reaches: pi's exit code or signal after EOF, with the
/// recorded stderr; a `hang` is what a caller ends by cancelling.
pub fn end_of(c: &Cassette) -> StreamEnd {
    let (code, signal) = c.exit_status();
    StreamEnd::recorded(code, signal, &c.stderr_bytes())
}

/// What an assistant `message_end` says, read with `serde_json::Value`.
#[derive(Debug, Clone, PartialEq)]
pub struct FinalMessage {
    /// Its text blocks, joined.
    pub text: String,
    /// Its non-empty thinking blocks, in order.
    pub thoughts: Vec<String>,
    /// Its `stopReason`.
    pub stop_reason: Option<String>,
    /// `usage` as the message says it (missing numbers as 0).
    pub usage: pi_wire::message::Usage,
    /// Text or thinking deltas were seen in the run up to here (so no replay stripping applies).
    pub had_deltas: bool,
}

/// The assistant `message_end`s of a stdout, in order (lines that do not parse are skipped).
pub fn final_messages(stdout: &[u8]) -> Vec<FinalMessage> {
    let mut out = Vec::new();
    // Deltas seen in the run so far: a producer that sends deltas never replays.
    let mut deltas = false;
    for line in stdout.split(|&b| b == b'\n') {
        let Ok(v) = serde_json::from_slice::<Value>(line.strip_suffix(b"\r").unwrap_or(line))
        else {
            continue;
        };
        match v["type"].as_str() {
            Some("message_update")
                if (v["assistantMessageEvent"]["type"] == "text_delta"
                    || v["assistantMessageEvent"]["type"] == "thinking_delta")
                    && v["assistantMessageEvent"]["delta"].is_string() =>
            {
                deltas = true
            }
            Some("message_end") if v["message"]["role"] == "assistant" => {
                let blocks = v["message"]["content"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                let of = |kind: &str, field: &str| -> Vec<String> {
                    blocks
                        .iter()
                        .filter(|b| b["type"] == kind)
                        .filter_map(|b| b[field].as_str().map(str::to_string))
                        .collect()
                };
                out.push(FinalMessage {
                    text: of("text", "text").concat(),
                    thoughts: of("thinking", "thinking")
                        .into_iter()
                        .filter(|t| !t.is_empty())
                        .collect(),
                    stop_reason: v["message"]["stopReason"].as_str().map(str::to_string),
                    usage: {
                        let u = &v["message"]["usage"];
                        let n = |k: &str| u[k].as_u64().unwrap_or(0);
                        pi_wire::message::Usage {
                            input_tokens: n("input"),
                            output_tokens: n("output"),
                            cache_read_tokens: n("cacheRead"),
                            cache_write_tokens: n("cacheWrite"),
                            total_tokens: n("totalTokens"),
                            cost_usd: u["cost"]["total"].as_f64().unwrap_or(0.0),
                        }
                    },
                    had_deltas: deltas,
                });
            }
            _ => {}
        }
    }
    out
}

/// The `assistant` texts between `usage` messages (one segment per closed assistant message).
pub fn text_segments(messages: &[Message]) -> Vec<String> {
    let mut segments = Vec::new();
    let mut current = String::new();
    for m in messages {
        match m {
            Message::Assistant { text } => current.push_str(text),
            Message::Usage(_) => segments.push(std::mem::take(&mut current)),
            _ => {}
        }
    }
    segments
}

/// Invariant 3 (with the documented replay rule for snapshot-only messages): the
/// concatenated `assistant` deltas of each assistant message equal its final text.
pub fn check_text_invariant(stdout: &[u8], messages: &[Message]) -> Result<(), String> {
    match text_mismatches(stdout, messages)?.as_slice() {
        [] => Ok(()),
        [first, ..] => Err(first.clone()),
    }
}

/// The assistant messages whose streamed text differs from their final text; an error
/// when the messages cannot even be paired (not one `usage` per `message_end`).
pub fn text_mismatches(stdout: &[u8], messages: &[Message]) -> Result<Vec<String>, String> {
    let finals = final_messages(stdout);
    let segments = text_segments(messages);
    if finals.len() != segments.len() {
        return Err(format!(
            "{} assistant message_end(s) but {} usage messages",
            finals.len(),
            segments.len()
        ));
    }
    let mut previous = String::new();
    let mut bad = Vec::new();
    for (i, (f, got)) in finals.iter().zip(&segments).enumerate() {
        let expected = match f.text.strip_prefix(previous.as_str()) {
            Some(rest) if !f.had_deltas && !previous.is_empty() => rest,
            _ => f.text.as_str(),
        };
        if got != expected {
            bad.push(format!(
                "assistant message {i}: streamed {got:?}, final text {expected:?}"
            ));
        }
        previous = f.text.clone();
    }
    Ok(bad)
}

/// Map a cassette and check every invariant on it. Text that cannot match its final text
/// (a fault cassette whose deltas were damaged) is allowed only when the mapper reported
/// exactly those messages as divergent, and only in cassettes tagged `fault`.
pub fn map_and_check(c: &Cassette) -> Result<Vec<Message>, String> {
    let stdout = c.stdout_bytes();
    let mut mapper = pi_wire::mapper::Mapper::new(pi_wire::mapper::MapperOptions::default());
    let mut out = Vec::new();
    mapper.push(&stdout, &mut out);
    mapper.finish(end_of(c), &mut out);
    check_structure(&out)?;
    check_thoughts(&stdout, &out)?;
    check_usage(&stdout, &out)?;
    let mismatches = text_mismatches(&stdout, &out)?;
    let reported = mapper.stats().text_divergences as usize;
    if mismatches.len() != reported {
        return Err(format!(
            "{} text mismatches but the mapper reported {reported} divergences: {mismatches:?}",
            mismatches.len()
        ));
    }
    if !mismatches.is_empty() && !c.header.scenario.tags.iter().any(|t| t == "fault") {
        return Err(format!(
            "text invariant broken on a clean cassette: {mismatches:?}"
        ));
    }
    Ok(out)
}

/// One `usage` per assistant `message_end`, equal to its usage; `terminal.completed`
/// carries their sum.
pub fn check_usage(stdout: &[u8], messages: &[Message]) -> Result<(), String> {
    let expected: Vec<pi_wire::message::Usage> = final_messages(stdout)
        .into_iter()
        .map(|f| f.usage)
        .collect();
    let got: Vec<pi_wire::message::Usage> = messages
        .iter()
        .filter_map(|m| match m {
            Message::Usage(u) => Some(u.clone()),
            _ => None,
        })
        .collect();
    if got != expected {
        return Err(format!("usage {got:?}, expected {expected:?}"));
    }
    if let Some(Message::TerminalCompleted { usage, .. }) = messages.last() {
        let mut sum = pi_wire::message::Usage::default();
        expected.iter().for_each(|u| sum.add(u));
        if *usage != sum {
            return Err(format!(
                "terminal usage {usage:?}, expected the sum {sum:?}"
            ));
        }
    }
    Ok(())
}

/// Thinking streamed by deltas in an assistant message that never got its `message_end`
/// (the stream was cut): one string per content index, in order.
fn unfinished_thinking(stdout: &[u8]) -> Vec<String> {
    let mut open: Option<Vec<(u64, String)>> = None;
    for line in stdout.split(|&b| b == b'\n') {
        let Ok(v) = serde_json::from_slice::<Value>(line.strip_suffix(b"\r").unwrap_or(line))
        else {
            continue;
        };
        let ame = &v["assistantMessageEvent"];
        match v["type"].as_str() {
            Some("message_start") if v["message"]["role"] == "assistant" => open = Some(Vec::new()),
            Some("message_end") if v["message"]["role"] == "assistant" => open = None,
            Some("message_update") if ame["type"] == "thinking_delta" => {
                let (Some(blocks), Some(i), Some(d)) = (
                    open.as_mut(),
                    ame["contentIndex"].as_u64(),
                    ame["delta"].as_str(),
                ) else {
                    continue;
                };
                match blocks.iter_mut().find(|b| b.0 == i) {
                    Some(b) => b.1.push_str(d),
                    None => blocks.push((i, d.to_string())),
                }
            }
            _ => {}
        }
    }
    open.unwrap_or_default()
        .into_iter()
        .map(|b| b.1)
        .filter(|t| !t.is_empty())
        .collect()
}

/// Thoughts: every thinking block of every `message_end`, once, in order, then the
/// thinking of a message the stream cut short.
pub fn check_thoughts(stdout: &[u8], messages: &[Message]) -> Result<(), String> {
    let mut expected: Vec<String> = final_messages(stdout)
        .into_iter()
        .flat_map(|f| f.thoughts)
        .collect();
    expected.extend(unfinished_thinking(stdout));
    let got: Vec<String> = messages
        .iter()
        .filter_map(|m| match m {
            Message::AssistantThought { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    if got != expected {
        return Err(format!("thoughts {got:?}, expected {expected:?}"));
    }
    Ok(())
}

/// Structural rules that hold for any input: exactly one terminal and it is last;
/// one `tool.call` per id before anything else about it; no repeated `tool.update`;
/// at most one end per id and nothing after it; at most one session message.
pub fn check_structure(messages: &[Message]) -> Result<(), String> {
    let terminals = messages.iter().filter(|m| m.is_terminal()).count();
    if terminals != 1 || !messages.last().is_some_and(|m| m.is_terminal()) {
        return Err(format!(
            "{terminals} terminals, last is {:?}",
            messages.last()
        ));
    }
    let sessions = messages
        .iter()
        .filter(|m| {
            matches!(
                m,
                Message::SessionStarted { .. } | Message::SessionResumed { .. }
            )
        })
        .count();
    if sessions > 1 {
        return Err(format!("{sessions} session messages"));
    }
    let mut called = HashSet::new();
    let mut ended = HashSet::new();
    let mut last_update: HashMap<&str, &pi_wire::message::Json> = HashMap::new();
    for m in messages {
        match m {
            Message::ToolCall { id, .. } if !called.insert(id.as_str()) => {
                return Err(format!("second tool.call for {id}"));
            }
            Message::ToolUpdate { id, partial } => {
                if !called.contains(id.as_str()) || ended.contains(id.as_str()) {
                    return Err(format!("tool.update for {id} outside call..end"));
                }
                if last_update.insert(id.as_str(), partial) == Some(partial) {
                    return Err(format!("repeated tool.update for {id}"));
                }
            }
            Message::ToolCompleted { id, .. } | Message::ToolFailed { id, .. }
                if !called.contains(id.as_str()) || !ended.insert(id.as_str()) =>
            {
                return Err(format!("tool end for {id} without call, or twice"));
            }
            Message::Assistant { text } | Message::AssistantThought { text } if text.is_empty() => {
                return Err("empty text message".into())
            }
            _ => {}
        }
    }
    Ok(())
}

/// Feed `data` cut at `cuts` (sorted or not) and finish with `end`.
pub fn map_chunked(
    data: &[u8],
    cuts: &[usize],
    end: StreamEnd,
    opts: pi_wire::mapper::MapperOptions,
) -> Vec<Message> {
    let mut cuts: Vec<usize> = cuts.iter().map(|&c| c.min(data.len())).collect();
    cuts.sort_unstable();
    let mut mapper = pi_wire::mapper::Mapper::new(opts);
    let mut out = Vec::new();
    let mut at = 0;
    for c in cuts {
        mapper.push(&data[at..c], &mut out);
        assert!(
            !out.iter().any(|m| m.is_terminal()),
            "push emitted a terminal"
        );
        at = c;
    }
    mapper.push(&data[at..], &mut out);
    mapper.finish(end.clone(), &mut out);
    let len = out.len();
    mapper.finish(end, &mut out);
    assert_eq!(out.len(), len, "a second finish appended messages");
    out
}

/// Every invariant of the normalized stream on the messages of one cassette's run, however
/// they were produced (the conformance suite checks other implementations with it):
/// structure (one terminal, last; tool call before its end, at most one end), the text
/// invariant per assistant message (broken only where the mapper itself reports a
/// divergence, in fault cassettes), thoughts (each once, none lost), usage per message and
/// summed, and on a completed run exactly one end per tool call.
pub fn check_invariants(c: &Cassette, msgs: &[Message]) -> Result<(), String> {
    let stdout = c.stdout_bytes();
    check_structure(msgs)?;
    check_thoughts(&stdout, msgs)?;
    check_usage(&stdout, msgs)?;
    let mismatches = text_mismatches(&stdout, msgs)?;
    if !mismatches.is_empty() {
        let mut mapper = pi_wire::mapper::Mapper::new(pi_wire::mapper::MapperOptions::default());
        let mut out = Vec::new();
        mapper.push(&stdout, &mut out);
        let reported = mapper.stats().text_divergences as usize;
        if reported != mismatches.len() || !c.header.scenario.tags.iter().any(|t| t == "fault") {
            return Err(format!(
                "text invariant broken ({} mismatches, {reported} reported divergences): {mismatches:?}",
                mismatches.len()
            ));
        }
    }
    if matches!(msgs.last(), Some(Message::TerminalCompleted { .. })) {
        for m in msgs {
            if let Message::ToolCall { id, .. } = m {
                let ends = msgs
                    .iter()
                    .filter(|e| {
                        matches!(e, Message::ToolCompleted { id: i, .. } | Message::ToolFailed { id: i, .. } if i == id)
                    })
                    .count();
                if ends != 1 {
                    return Err(format!(
                        "tool call {id} has {ends} completions in a completed run"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The rules for an RPC session's output (a two-way cassette): the messages are runs, one
/// per prompt pi started (a response `success: true` to a prompt sent without
/// `streamingBehavior`), each ending in exactly one terminal and each keeping the
/// structure rules of a json-mode run; nothing comes after the last terminal.
pub fn check_rpc_invariants(c: &Cassette, msgs: &[Message]) -> Result<(), String> {
    let mut lines: Vec<Option<Value>> = Vec::new();
    let mut started = 0;
    for r in &c.records {
        match &r.action {
            Action::Stdin(l) => lines.push(serde_json::from_str(&l.json).ok()),
            Action::StdinText(_) => lines.push(None),
            Action::Stdout(b) => {
                let Some(k) = r.reply else { continue };
                let Ok(resp) = serde_json::from_slice::<Value>(&b.data) else {
                    continue;
                };
                let asked = lines.get(k as usize).cloned().flatten().unwrap_or_default();
                if resp["command"] == "prompt"
                    && resp["success"] == true
                    && asked.get("streamingBehavior").is_none()
                {
                    started += 1;
                }
            }
            _ => {}
        }
    }
    let mut runs = 0;
    let mut run = Vec::new();
    for m in msgs {
        run.push(m.clone());
        if m.is_terminal() {
            check_structure(&run).map_err(|e| format!("run {}: {e}", runs + 1))?;
            runs += 1;
            run.clear();
        }
    }
    if !run.is_empty() {
        return Err(format!("{} messages after the last terminal", run.len()));
    }
    if runs != started {
        return Err(format!(
            "{runs} runs in the output, pi started {started} (prompts it accepted)"
        ));
    }
    Ok(())
}

/// Messages as JSON values (the form expected files hold).
pub fn values(msgs: &[Message]) -> Vec<Value> {
    msgs.iter()
        .map(|m| serde_json::to_value(m).expect("a message serializes"))
        .collect()
}

/// Long strings shortened for snapshots (a fault cassette carries a 4 MiB tool output).
pub fn shorten(v: &mut Value) {
    const KEEP: usize = 200;
    match v {
        Value::String(s) if s.len() > 2 * KEEP => {
            let mut end = KEEP;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            *s = format!("{}... <{} bytes in all>", &s[..end], s.len());
        }
        Value::Array(items) => items.iter_mut().for_each(shorten),
        Value::Object(map) => map.values_mut().for_each(shorten),
        _ => {}
    }
}

/// Replace a run-specific path inside every string.
pub fn redact_path(v: &mut Value, path: &Path, placeholder: &str) {
    let p = path.to_string_lossy().into_owned();
    match v {
        Value::String(s) if s.contains(&p) => *s = s.replace(&p, placeholder),
        Value::Array(items) => items
            .iter_mut()
            .for_each(|i| redact_path(i, path, placeholder)),
        Value::Object(map) => map
            .values_mut()
            .for_each(|i| redact_path(i, path, placeholder)),
        _ => {}
    }
}
