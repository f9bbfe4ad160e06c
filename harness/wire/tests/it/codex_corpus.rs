//! The Codex cassettes of the corpus (`cassettes/codex/`) through Codex's mapper
//! (`pi_wire::codex`), for `mapper_snapshots`: each mapped with the end its recording
//! reached and `session.resumed` for `exec resume`, and the stream invariants checked on
//! the output, each read from the stdout independently of the mapper (serde_json).

use pi_cassette::{Action, Cassette, SessionUse, SignalAction};
use pi_wire::mapper::{MapperOptions, StreamEnd};
use pi_wire::message::{Message, Usage};
use serde_json::Value;

use pi_testkit::invariants::{check_structure, end_of};

/// The end a Codex recording reached. A run stopped mid-tool (`hang`) ended as the header's
/// `process` section says for the signal the recording sent (named in its notes): death by
/// the signal for `die`, the exit code for `cleanup_exit`, death by SIGKILL for SIGKILL of
/// the wrapper; the stderr is the recorded one.
pub fn codex_end(c: &Cassette) -> StreamEnd {
    if !matches!(c.ending(), Action::Hang) {
        return end_of(c);
    }
    let notes = c.header.origin.notes.as_deref().unwrap_or("");
    let signal = ["SIGINT", "SIGTERM", "SIGHUP", "SIGKILL"]
        .into_iter()
        .filter_map(|n| notes.find(n).map(|at| (at, n)))
        .min()
        .map(|(_, n)| n)
        .unwrap_or_else(|| panic!("a hanging Codex cassette's notes name no signal: {notes:?}"));
    let p = &c.header.process;
    let action = match signal {
        "SIGINT" => &p.on_sigint,
        "SIGHUP" => &p.on_sighup,
        "SIGTERM" => &p.on_sigterm,
        _ => &SignalAction::Die,
    };
    let stderr = c.stderr_bytes();
    match action {
        SignalAction::Die | SignalAction::CleanupDie | SignalAction::KillChildrenDie => {
            StreamEnd::recorded(None, Some(signal), &stderr)
        }
        SignalAction::CleanupExit { code } | SignalAction::Exit { code } => {
            StreamEnd::recorded(Some(*code), None, &stderr)
        }
        SignalAction::Ignore => panic!("{signal} ignored, yet the recording ended"),
    }
}

fn events(stdout: &[u8]) -> Vec<Value> {
    stdout
        .split(|&b| b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .collect()
}

/// A `turn.completed` usage as docs/normalized-stream.md says: Codex's `input_tokens`
/// count the cached reads and writes, the normalized `input_tokens` the rest.
fn usage(u: &Value) -> Usage {
    let n = |k: &str| u[k].as_u64().unwrap_or(0);
    Usage {
        input_tokens: n("input_tokens") - n("cached_input_tokens") - n("cache_write_input_tokens"),
        output_tokens: n("output_tokens"),
        cache_read_tokens: n("cached_input_tokens"),
        cache_write_tokens: n("cache_write_input_tokens"),
        total_tokens: n("input_tokens") + n("output_tokens"),
        cost_usd: 0.0,
    }
}

/// Map a Codex cassette with Codex's mapper and check the invariants: the structure
/// (`check_structure`), one `assistant` per `agent_message` item with its text, one `usage`
/// per `turn.completed` and their sum on `terminal.completed`, every tool call ended once in
/// a completed run, and the session message as the call was (`new` or `resumed`).
pub fn map_and_check_codex(c: &Cassette) -> Result<Vec<Message>, String> {
    let stdout = c.stdout_bytes();
    let resumed = c.header.expect.session == Some(SessionUse::Resumed);
    let opts = MapperOptions {
        resumed_session: resumed,
        ..MapperOptions::default()
    };
    let out = pi_wire::codex::map_all(&stdout, codex_end(c), opts);
    check_structure(&out)?;
    let evs = events(&stdout);
    let texts: Vec<&str> = evs
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "agent_message")
        .filter_map(|e| e["item"]["text"].as_str())
        .collect();
    let got: Vec<&str> = out
        .iter()
        .filter_map(|m| match m {
            Message::Assistant { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    if got != texts {
        return Err(format!(
            "assistant texts {got:?}, agent_message items {texts:?}"
        ));
    }
    let want: Vec<Usage> = evs
        .iter()
        .filter(|e| e["type"] == "turn.completed")
        .map(|e| usage(&e["usage"]))
        .collect();
    let got: Vec<Usage> = out
        .iter()
        .filter_map(|m| match m {
            Message::Usage(u) => Some(u.clone()),
            _ => None,
        })
        .collect();
    if got != want {
        return Err(format!("usage {got:?}, turn.completed says {want:?}"));
    }
    let sessions: Vec<&str> = out
        .iter()
        .filter(|m| {
            matches!(
                m,
                Message::SessionStarted { .. } | Message::SessionResumed { .. }
            )
        })
        .map(Message::kind)
        .collect();
    let session = if resumed {
        "session.resumed"
    } else {
        "session.started"
    };
    if sessions != [session] {
        return Err(format!(
            "session messages {sessions:?}, expected [{session}]"
        ));
    }
    if let Some(Message::TerminalCompleted { usage: total, .. }) = out.last() {
        let mut sum = Usage::default();
        want.iter().for_each(|u| sum.add(u));
        if *total != sum {
            return Err(format!("terminal usage {total:?}, the sum {sum:?}"));
        }
        for m in &out {
            if let Message::ToolCall { id, .. } = m {
                let ends = out
                    .iter()
                    .filter(|e| matches!(e, Message::ToolCompleted { id: i, .. } | Message::ToolFailed { id: i, .. } if i == id))
                    .count();
                if ends != 1 {
                    return Err(format!("tool call {id}: {ends} ends in a completed run"));
                }
            }
        }
    }
    Ok(out)
}
