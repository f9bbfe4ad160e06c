//! Drift: do fresh recordings of real pi still say what the committed cassettes say?
//!
//! This module owns the comparison behind `pi-harness drift`. Each cassette is reduced to two
//! streams, diffed line by line:
//! - the wire ([`wire_stream`]): event types, assistant text and thinking, tool calls and
//!   results, stop reasons, retries, stderr, how the process ended, so a new or reshaped
//!   event shows even when the mapper would absorb it;
//! - the normalized stream ([`normalized_stream`]): what the reference provider's mapper makes
//!   of the same stdout and ending, so a change that alters what integrators receive shows.
//!
//! Timing and fields that vary run to run are left out of both.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use pi_cassette::{Action, Cassette, CassetteError};

/// Why two directories could not be compared.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DriftError {
    /// A directory could not be read.
    #[error("reading {}", path.display())]
    ReadDir {
        /// The directory.
        path: PathBuf,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// An entry of a directory could not be read.
    #[error(transparent)]
    DirEntry(std::io::Error),
    /// A directory holds one cassette twice, plain and gzip.
    #[error(
        "{} and {} are the same cassette twice (plain and gzip); keep one",
        first.display(),
        second.display()
    )]
    Twice {
        /// The file found first.
        first: PathBuf,
        /// The other one.
        second: PathBuf,
    },
    /// A cassette cannot be read (the message names the file and line).
    #[error(transparent)]
    Cassette(#[from] CassetteError),
}

/// The outcome of comparing two directories.
#[derive(Debug, Clone)]
pub struct Report {
    /// Human-readable: one line per cassette, a diff for each that drifted.
    pub text: String,
    /// True when every committed cassette has a fresh twin with the same stream, and no
    /// fresh cassette lacks a committed one.
    pub clean: bool,
}

/// Cassette files in `dir`, keyed by name without `.gz`.
fn cassettes_in(dir: &Path) -> Result<BTreeMap<String, PathBuf>, DriftError> {
    let mut out = BTreeMap::new();
    let entries = std::fs::read_dir(dir).map_err(|source| DriftError::ReadDir {
        path: dir.to_path_buf(),
        source,
    })?;
    for e in entries {
        let path = e.map_err(DriftError::DirEntry)?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let key = name.strip_suffix(".gz").unwrap_or(name);
        if key.ends_with(".cassette.jsonl") {
            if let Some(prev) = out.insert(key.to_string(), path.clone()) {
                return Err(DriftError::Twice {
                    first: prev,
                    second: path,
                });
            }
        }
    }
    Ok(out)
}

/// Compare every cassette of `committed` with its namesake in `fresh`.
pub fn compare_dirs(committed: &Path, fresh: &Path) -> Result<Report, DriftError> {
    let old = cassettes_in(committed)?;
    let new = cassettes_in(fresh)?;
    let mut text = String::new();
    let mut clean = true;
    let mut same = 0;
    for (name, old_path) in &old {
        let Some(new_path) = new.get(name) else {
            clean = false;
            let _ = writeln!(text, "MISSING  {name}: committed, but not recorded afresh");
            continue;
        };
        let a = normalize(&Cassette::load(old_path)?);
        let b = normalize(&Cassette::load(new_path)?);
        if a == b {
            same += 1;
            let _ = writeln!(text, "same     {name} ({} stream lines)", a.len());
        } else {
            clean = false;
            let _ = writeln!(
                text,
                "DRIFT    {name}: committed {} vs fresh {}",
                old_path.display(),
                new_path.display()
            );
            text.push_str(&diff(&a, &b, 3));
        }
    }
    for name in new.keys().filter(|n| !old.contains_key(*n)) {
        clean = false;
        let _ = writeln!(text, "NEW      {name}: recorded afresh, but not committed");
    }
    let _ = writeln!(
        text,
        "{}: {same} of {} cassettes unchanged",
        if clean { "no drift" } else { "DRIFT" },
        old.len()
    );
    Ok(Report { text, clean })
}

/// Values pi writes that change from run to run of the same scenario (pi 1.x): a tool's
/// wall time in its result text and `structuredContent`, and `durationMs`.
fn scrub_volatile(s: &str) -> String {
    let mut out = s.to_string();
    for (before, after) in [
        ("Wall time ", " seconds"),
        ("\"wall_time_seconds\":", ""),
        ("\\\"wall_time_seconds\\\":", ""),
        ("\"durationMs\":", ""),
        ("\\\"durationMs\\\":", ""),
    ] {
        let mut result = String::with_capacity(out.len());
        let mut rest = out.as_str();
        while let Some(at) = rest.find(before) {
            let start = at + before.len();
            result.push_str(&rest[..start]);
            let tail = &rest[start..];
            let n = tail
                .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == '-'))
                .unwrap_or(tail.len());
            if n > 0 && tail[n..].starts_with(after) {
                result.push('N');
            } else {
                result.push_str(&tail[..n]);
            }
            rest = &tail[n..];
        }
        result.push_str(rest);
        out = result;
    }
    out
}

/// Show long strings by their start, length and a hash, so a diff line stays readable but
/// any change anywhere in the string still shows.
fn short(s: &str) -> String {
    let s = &scrub_volatile(s);
    const MAX: usize = 160;
    if s.chars().count() <= MAX {
        return format!("{s:?}");
    }
    let head: String = s.chars().take(80).collect();
    let mut h: u64 = 0xcbf29ce484222325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{head:?}… ({} chars, fnv {h:016x})", s.chars().count())
}

/// The text of a message's `content`: its `kind` blocks' `field`s joined, or the content
/// itself when it is a string.
fn text_of(content: &Value, kind: &str, field: &str) -> String {
    content
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|b| b["type"] == kind)
                .filter_map(|b| b[field].as_str())
                .collect::<Vec<_>>()
                .join("")
        })
        .unwrap_or_else(|| content.as_str().unwrap_or_default().to_string())
}

/// A message's coarse lines: role, stop reason, error and tool, then its thinking, text and
/// tool calls.
fn message_lines(prefix: &str, m: &Value, out: &mut Vec<String>) {
    let role = m["role"].as_str().unwrap_or("?");
    let mut head = format!("{prefix} role={role}");
    if let Some(s) = m["stopReason"].as_str() {
        let _ = write!(head, " stop={s}");
    }
    if let Some(e) = m["errorMessage"].as_str() {
        let _ = write!(head, " error={}", short(e));
    }
    if let Some(t) = m["toolName"].as_str() {
        let _ = write!(head, " tool={t} isError={}", m["isError"]);
    }
    out.push(head);
    let content = &m["content"];
    for (kind, field) in [("thinking", "thinking"), ("text", "text")] {
        let t = text_of(content, kind, field);
        if !t.is_empty() {
            out.push(format!("  {kind}: {}", short(&t)));
        }
    }
    for call in content
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "toolCall")
    {
        out.push(format!(
            "  toolCall {} {} {}",
            call["id"].as_str().unwrap_or("?"),
            call["name"].as_str().unwrap_or("?"),
            short(&call["arguments"].to_string())
        ));
    }
}

/// The coarse stream of a cassette: what must not change when pi is re-recorded.
/// Timing, usage, timestamps and redacted values are left out; consecutive
/// `message_update` lines collapse into one line with their count; `tool_execution_update`
/// lines (their number depends on timing) are dropped; consecutive `tool_execution_end` lines
/// are sorted (parallel tools finish in any order).
pub fn normalize(c: &Cassette) -> Vec<String> {
    let mut out = wire_stream(c);
    if c.header.mode.is_some() && !c.header.is_claude() {
        // An RPC session: the wire stream holds the client's actions and pi's answers;
        // the json-mode mapper's stream does not apply to it.
        return out;
    }
    out.push("--- normalized stream ---".into());
    out.extend(normalized_stream(c));
    out
}

/// The reference mapper's normalized stream of a cassette, one line per message:
/// consecutive `assistant` deltas are joined (their cut depends on SSE chunking), tool updates
/// and usage are dropped (as on the wire), runs of tool messages are sorted (parallel tools
/// finish in any order), and long strings are shortened with a hash.
pub fn normalized_stream(c: &Cassette) -> Vec<String> {
    use pi_wire::mapper::{map_all, MapperOptions, StreamEnd};
    use pi_wire::message::Message;
    let (code, signal) = c.exit_status();
    let end = StreamEnd::recorded(code, signal, &c.stderr_bytes());
    let msgs = if c.header.is_claude() {
        pi_wire::claude::map_all(&c.stdout_bytes(), end, MapperOptions::default())
    } else {
        map_all(&c.stdout_bytes(), end, MapperOptions::default())
    };
    let mut out = Vec::new();
    let mut text = String::new();
    for m in &msgs {
        if let Message::Assistant { text: t } = m {
            text.push_str(t);
            continue;
        }
        if !text.is_empty() {
            out.push(format!("assistant {}", short(&std::mem::take(&mut text))));
        }
        match m {
            // Usage is left out as on the wire; tool updates depend on timing.
            Message::ToolUpdate { .. } | Message::Usage(_) => {}
            // Claude Code's retry delays are jittered.
            Message::RetryScheduled {
                attempt,
                max_attempts,
                error,
                ..
            } if c.header.is_claude() => out.push(format!(
                "retry.scheduled attempt={attempt} max_attempts={max_attempts} error={}",
                short(error)
            )),
            Message::TerminalCompleted { stop_reason, .. } => {
                out.push(format!("terminal.completed stop_reason={stop_reason}"))
            }
            Message::TerminalFailed(f) => out.push(format!(
                "terminal.failed reason={:?} exit={:?} message={} invalid_lines={}",
                f.reason,
                f.exit,
                short(&f.message),
                f.invalid_lines.len()
            )),
            other => {
                let json = serde_json::to_string(other).unwrap_or_default();
                out.push(format!("{} {}", other.kind(), short(&json)));
            }
        }
    }
    if !text.is_empty() {
        out.push(format!("assistant {}", short(&text)));
    }
    sort_runs_of(&mut out, &["tool."]);
    out
}

/// The coarse wire stream of a cassette (see the module doc).
pub fn wire_stream(c: &Cassette) -> Vec<String> {
    let mut out = Vec::new();
    let mut updates = 0usize;
    let mut stderr = String::new();
    // pi's `message_update`s, or Claude Code's content_block_delta stream events.
    let label = if c.header.is_claude() {
        "content_block_delta"
    } else {
        "message_update"
    };
    let flush = |updates: &mut usize, out: &mut Vec<String>| {
        if *updates > 0 {
            out.push(format!("{label} x{updates}"));
            *updates = 0;
        }
    };
    for r in &c.records {
        match &r.action {
            Action::Stdout(b) => {
                let Ok(v) = serde_json::from_slice::<Value>(&b.data) else {
                    flush(&mut updates, &mut out);
                    out.push(format!(
                        "non-json stdout {}",
                        short(&String::from_utf8_lossy(&b.data))
                    ));
                    continue;
                };
                let ty = v["type"].as_str().unwrap_or("?").to_string();
                if ty == "message_update"
                    || (ty == "stream_event" && v["event"]["type"] == "content_block_delta")
                {
                    updates += 1;
                    continue;
                }
                if c.header.is_claude() {
                    if let Some(line) = claude_line(&ty, &v) {
                        flush(&mut updates, &mut out);
                        out.push(line);
                    }
                    continue;
                }
                flush(&mut updates, &mut out);
                pi_line(&ty, &v, &mut out);
            }
            Action::Stderr(b) => stderr.push_str(&String::from_utf8_lossy(&b.data)),
            Action::Spawn(s) => {
                flush(&mut updates, &mut out);
                out.push(format!(
                    "spawn own_session={} grandchild={}",
                    s.own_session,
                    s.grandchild
                        .as_ref()
                        .map_or("none".to_string(), |g| format!(
                            "own_session={}",
                            g.own_session
                        ))
                ));
            }
            Action::Exit(code) => {
                flush(&mut updates, &mut out);
                out.push(format!("exit {code}"));
            }
            Action::Signal(s) => {
                flush(&mut updates, &mut out);
                out.push(format!("signal {s}"));
            }
            Action::Stdin(line) => {
                flush(&mut updates, &mut out);
                let v: Value = serde_json::from_str(&line.json).unwrap_or(Value::Null);
                out.push(format!(
                    "client stdin {}",
                    v["type"].as_str().unwrap_or("(no type)")
                ));
            }
            Action::StdinText(t) => {
                flush(&mut updates, &mut out);
                out.push(format!("client stdin_text {}", short(t)));
            }
            Action::StdinClose => {
                flush(&mut updates, &mut out);
                out.push("client stdin_close".into());
            }
            Action::ClientSignal(sig) => {
                flush(&mut updates, &mut out);
                out.push(format!("client signal {sig}"));
            }
            Action::Request(_) => {
                flush(&mut updates, &mut out);
                out.push("model request".into());
            }
            Action::Reap(id) => {
                flush(&mut updates, &mut out);
                out.push(format!("reap {id}"));
            }
            Action::Hang => {
                flush(&mut updates, &mut out);
                let p = &c.header.process;
                out.push(format!(
                    "hang (on SIGTERM {:?}, on SIGINT {:?}, on SIGHUP {:?})",
                    p.on_sigterm, p.on_sigint, p.on_sighup
                ));
            }
        }
    }
    flush(&mut updates, &mut out);
    sort_runs(&mut out, "tool_execution_end ");
    let stderr = stderr.trim();
    if !stderr.is_empty() {
        out.push(format!("stderr {}", short(stderr)));
    }
    out
}

/// The coarse line(s) of one pi stdout event (none for `tool_execution_update`, whose
/// number depends on timing).
fn pi_line(ty: &str, v: &Value, out: &mut Vec<String>) {
    match ty {
        "message_start" | "message_end" => message_lines(ty, &v["message"], out),
        "turn_end" => out.push(format!(
            "turn_end toolResults={}",
            v["toolResults"].as_array().map_or(0, Vec::len)
        )),
        "agent_end" => out.push(format!(
            "agent_end messages={}{}",
            v["messages"].as_array().map_or(0, Vec::len),
            v.get("willRetry")
                .map(|w| format!(" willRetry={w}"))
                .unwrap_or_default()
        )),
        "tool_execution_start" => out.push(format!(
            "tool_execution_start {} {} {}",
            v["toolCallId"].as_str().unwrap_or("?"),
            v["toolName"].as_str().unwrap_or("?"),
            short(&v["args"].to_string())
        )),
        "tool_execution_update" => {}
        "tool_execution_end" => out.push(format!(
            "tool_execution_end {} {} isError={} {}",
            v["toolCallId"].as_str().unwrap_or("?"),
            v["toolName"].as_str().unwrap_or("?"),
            v["isError"],
            short(&text_of(&v["result"]["content"], "text", "text"))
        )),
        "auto_retry_start" => out.push(format!(
            "auto_retry_start attempt={} max={} delayMs={} error={}",
            v["attempt"],
            v["maxAttempts"],
            v["delayMs"],
            short(v["errorMessage"].as_str().unwrap_or(""))
        )),
        "auto_retry_end" => out.push(format!(
            "auto_retry_end success={} attempt={}{}",
            v["success"],
            v["attempt"],
            v["finalError"]
                .as_str()
                .map(|e| format!(" finalError={}", short(e)))
                .unwrap_or_default()
        )),
        "session" => out.push(format!("session version={}", v["version"])),
        "response" => out.push(format!(
            "response {} success={}",
            v["command"].as_str().unwrap_or("?"),
            v["success"]
        )),
        other => out.push(other.to_string()),
    }
}

/// One Claude Code stdout record in the coarse stream, or nothing for what depends on
/// timing (`system/task_*`, `tool_progress`, `system/thinking_tokens`) or races the
/// permission prompt (`content_block_stop`, `message_stop`: whether the CLI's
/// `can_use_tool` comes before or after them varies run to run).
fn claude_line(ty: &str, v: &Value) -> Option<String> {
    let s = |k: &Value| k.as_str().unwrap_or("?").to_string();
    Some(match ty {
        "system" => match v["subtype"].as_str().unwrap_or("?") {
            "init" => format!(
                "system init model={} permissionMode={} version={}",
                s(&v["model"]),
                s(&v["permissionMode"]),
                s(&v["claude_code_version"])
            ),
            "status" => format!("system status {}", s(&v["status"])),
            "api_retry" => format!(
                "system api_retry attempt={} max={} status={} error={}",
                v["attempt"],
                v["max_retries"],
                v["error_status"],
                s(&v["error"])
            ),
            "thinking_tokens" | "task_started" | "task_notification" => return None,
            other => format!("system {other}"),
        },
        "stream_event" => {
            let e = &v["event"];
            match e["type"].as_str().unwrap_or("?") {
                "content_block_stop" | "message_stop" => return None,
                "content_block_start" => format!(
                    "stream_event content_block_start {}",
                    s(&e["content_block"]["type"])
                ),
                "message_delta" => format!(
                    "stream_event message_delta stop_reason={}",
                    e["delta"]["stop_reason"]
                ),
                other => format!("stream_event {other}"),
            }
        }
        "assistant" => {
            let blocks: Vec<String> = v["message"]["content"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|b| match b["type"].as_str().unwrap_or("?") {
                    "text" => format!("text {}", short(b["text"].as_str().unwrap_or(""))),
                    "thinking" => {
                        format!("thinking {}", short(b["thinking"].as_str().unwrap_or("")))
                    }
                    "tool_use" => format!(
                        "tool_use {} {} {}",
                        s(&b["id"]),
                        s(&b["name"]),
                        short(&b["input"].to_string())
                    ),
                    other => other.to_string(),
                })
                .collect();
            format!(
                "assistant{} {}",
                if v["aborted"] == true { " aborted" } else { "" },
                blocks.join(" | ")
            )
        }
        "user" => {
            let content = &v["message"]["content"];
            match content.as_array() {
                Some(blocks) => {
                    let parts: Vec<String> = blocks
                        .iter()
                        .map(|b| match b["type"].as_str().unwrap_or("?") {
                            "tool_result" => format!(
                                "tool_result {} is_error={} {}",
                                s(&b["tool_use_id"]),
                                b["is_error"],
                                short(&b["content"].to_string())
                            ),
                            "text" => format!("text {}", short(b["text"].as_str().unwrap_or(""))),
                            other => other.to_string(),
                        })
                        .collect();
                    format!("user {}", parts.join(" | "))
                }
                None => format!("user text {}", short(content.as_str().unwrap_or(""))),
            }
        }
        "result" => format!(
            "result {} is_error={} terminal_reason={} stop_reason={} {}",
            s(&v["subtype"]),
            v["is_error"],
            s(&v["terminal_reason"]),
            v["stop_reason"],
            short(v["result"].as_str().unwrap_or(""))
        ),
        "control_request" => format!(
            "control_request {} {}",
            s(&v["request"]["subtype"]),
            v["request"]["tool_name"].as_str().unwrap_or("")
        ),
        "control_response" => format!("control_response {}", s(&v["response"]["subtype"])),
        "tool_progress" => return None,
        other => other.to_string(),
    })
}

/// Sort each run of consecutive lines starting with `prefix`: tools of one assistant message
/// run in parallel and pi reports their ends in completion order, which varies run to run.
fn sort_runs(lines: &mut [String], prefix: &str) {
    sort_runs_of(lines, &[prefix]);
}

/// Sort each run of consecutive lines that start with any of `prefixes`.
fn sort_runs_of(lines: &mut [String], prefixes: &[&str]) {
    let starts = |l: &String| prefixes.iter().any(|p| l.starts_with(p));
    let mut i = 0;
    while i < lines.len() {
        let mut j = i;
        while j < lines.len() && starts(&lines[j]) {
            j += 1;
        }
        if j > i + 1 {
            lines[i..j].sort();
        }
        i = j.max(i + 1);
    }
}

/// A line diff of `a` (committed) and `b` (fresh) with `context` lines around each change;
/// `-` lines are committed only, `+` lines fresh only. Empty when equal.
pub fn diff(a: &[String], b: &[String], context: usize) -> String {
    // Longest common subsequence table (streams are a few hundred lines at most).
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push((' ', &a[i]));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', &a[i]));
            i += 1;
        } else {
            ops.push(('+', &b[j]));
            j += 1;
        }
    }
    let changed: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, o)| o.0 != ' ')
        .map(|(k, _)| k)
        .collect();
    let mut out = String::new();
    let mut last_shown: Option<usize> = None;
    for (k, (op, line)) in ops.iter().enumerate() {
        let near = changed.iter().any(|&c| c.abs_diff(k) <= context);
        if !near {
            continue;
        }
        if last_shown.is_some_and(|l| l + 1 != k) || (last_shown.is_none() && k > 0) {
            out.push_str("    ...\n");
        }
        let _ = writeln!(out, "  {op} {line}");
        last_shown = Some(k);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn cassette(body: &str) -> Cassette {
        let header = r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"t","description":"d"},"origin":{"kind":"recorded","timing":"measured"}}"#;
        Cassette::parse(Path::new("t"), format!("{header}\n{body}").as_bytes()).unwrap()
    }

    /// A committed Claude Code cassette, as lines.
    fn claude_lines(name: &str) -> Vec<String> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../cassettes/claude")
            .join(name);
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn claude(lines: &[String]) -> Cassette {
        Cassette::parse(Path::new("t"), format!("{}\n", lines.join("\n")).as_bytes()).unwrap()
    }

    /// Two real recordings of one Claude Code scenario differ where the CLI races (the
    /// permission prompt against `message_stop`) and in its jittered retry delays: neither
    /// is drift. A different tool result is.
    #[test]
    fn claude_races_and_retry_jitter_are_no_drift_but_a_changed_result_is() {
        let lines = claude_lines("claude_tool_allowed.cc21330.cassette.jsonl");
        let base = normalize(&claude(&lines));
        let prompt = lines
            .iter()
            .position(|l| l.contains(r#""type":"control_request""#))
            .unwrap();
        let stop = lines
            .iter()
            .skip(prompt)
            .position(|l| l.contains(r#""type":"message_stop""#))
            .unwrap()
            + prompt;
        let mut raced = lines.clone();
        let moved = raced.remove(stop);
        raced.insert(prompt, moved);
        assert_eq!(normalize(&claude(&raced)), base);
        let changed: Vec<String> = lines
            .iter()
            .map(|l| l.replace("(Bash completed with no output)", "something else"))
            .collect();
        assert_ne!(normalize(&claude(&changed)), base);

        let lines = claude_lines("claude_retry_then_ok.cc21330.cassette.jsonl");
        let base = normalize(&claude(&lines));
        let jittered: Vec<String> = lines
            .iter()
            .map(|l| {
                let Some(at) = l.find(r#""retry_delay_ms":"#) else {
                    return l.clone();
                };
                let start = at + r#""retry_delay_ms":"#.len();
                let end = start + l[start..].find(|c: char| !c.is_ascii_digit()).unwrap();
                format!("{}{}{}", &l[..start], 1234, &l[end..])
            })
            .collect();
        assert_ne!(jittered, lines, "the recording has a retry delay");
        assert_eq!(normalize(&claude(&jittered)), base);
    }

    #[test]
    fn normalize_ignores_timing_usage_and_collapses_updates() {
        let a = cassette(concat!(
            r#"{"dt_ms":5,"stdout":{"type":"agent_start"}}"#,
            "\n",
            r#"{"dt_ms":1,"stdout":{"type":"message_update","delta":"a"}}"#,
            "\n",
            r#"{"dt_ms":1,"stdout":{"type":"message_update","delta":"b"}}"#,
            "\n",
            r#"{"dt_ms":1,"stdout":{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"ab"}],"stopReason":"stop","usage":{"input":1}}}}"#,
            "\n",
            r#"{"dt_ms":1,"exit":0}"#,
            "\n"
        ));
        let b = cassette(concat!(
            r#"{"dt_ms":50,"stdout":{"type":"agent_start"}}"#,
            "\n",
            r#"{"dt_ms":9,"stdout":{"type":"message_update","delta":"a"}}"#,
            "\n",
            r#"{"dt_ms":9,"stdout":{"type":"message_update","delta":"b"}}"#,
            "\n",
            r#"{"dt_ms":9,"stdout":{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"ab"}],"stopReason":"stop","usage":{"input":7}}}}"#,
            "\n",
            r#"{"dt_ms":1,"exit":0}"#,
            "\n"
        ));
        let na = normalize(&a);
        assert_eq!(na, normalize(&b));
        assert_eq!(
            wire_stream(&a),
            [
                "agent_start",
                "message_update x2",
                "message_end role=assistant stop=stop",
                "  text: \"ab\"",
                "exit 0"
            ]
        );
    }

    #[test]
    fn parallel_tool_ends_compare_in_any_order() {
        let end = |id: &str| {
            format!(
                r#"{{"dt_ms":1,"stdout":{{"type":"tool_execution_end","toolCallId":"{id}","toolName":"bash","result":{{"content":[]}},"isError":false}}}}"#
            )
        };
        let a = cassette(&format!(
            "{}\n{}\n{{\"dt_ms\":0,\"exit\":0}}\n",
            end("a"),
            end("b")
        ));
        let b = cassette(&format!(
            "{}\n{}\n{{\"dt_ms\":0,\"exit\":0}}\n",
            end("b"),
            end("a")
        ));
        assert_eq!(normalize(&a), normalize(&b));
        let c = cassette(&format!("{}\n{{\"dt_ms\":0,\"exit\":0}}\n", end("a")));
        assert_ne!(normalize(&a), normalize(&c));
    }

    #[test]
    fn diff_marks_changed_lines_with_context() {
        let a: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        let b: Vec<String> = ["a", "b", "X", "d"].map(String::from).to_vec();
        assert_eq!(diff(&a, &b, 1), "    ...\n    b\n  - c\n  + X\n    d\n");
        assert_eq!(diff(&a, &a, 3), "");
    }

    #[test]
    fn run_to_run_timings_are_not_drift() {
        let a = r#"Script completed\nWall time 0.3 seconds {"durationMs":211,"wall_time_seconds":0.25}"#;
        let b =
            r#"Script completed\nWall time 0.2 seconds {"durationMs":98.5,"wall_time_seconds":0}"#;
        assert_eq!(short(a), short(b));
        assert_ne!(
            short("Wall time 0.3 minutes"),
            short("Wall time 0.2 minutes")
        );
    }

    #[test]
    fn long_strings_keep_a_hash() {
        let x = "w ".repeat(200);
        let mut y = x.clone();
        y.replace_range(300..301, "Q");
        assert_ne!(short(&x), short(&y));
        assert!(short(&x).contains("400 chars"));
    }
}
