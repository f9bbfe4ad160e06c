//! The reference mapper's normalized stream of a cassette (Claude Code's, Codex's and Gemini
//! CLI's mappers for theirs), one line per message, without what
//! varies run to run.

use pi_cassette::Cassette;

use super::lines::{short, sort_runs_of};

/// The reference mapper's normalized stream of a cassette, one line per message:
/// consecutive `assistant` deltas are joined (their cut depends on SSE chunking), tool updates
/// and usage are dropped (as on the wire), runs of tool messages are sorted (parallel tools
/// finish in any order), and long strings are shortened with a hash.
pub fn normalized_stream(c: &Cassette) -> Vec<String> {
    use pi_wire::mapper::{map_all, MapperOptions, StreamEnd};
    use pi_wire::message::Message;
    let (code, signal) = c.exit_status();
    let end = StreamEnd::recorded(code, signal, &c.stderr_bytes());
    let msgs = match c.header.agent() {
        pi_grammar::Agent::Pi => map_all(&c.stdout_bytes(), end, MapperOptions::default()),
        pi_grammar::Agent::Claude => {
            pi_wire::claude::map_all(&c.stdout_bytes(), end, MapperOptions::default())
        }
        pi_grammar::Agent::Codex => {
            pi_wire::codex::map_all(&c.stdout_bytes(), end, MapperOptions::default())
        }
        pi_grammar::Agent::Gemini => {
            pi_wire::gemini::map_all(&c.stdout_bytes(), end, MapperOptions::default())
        }
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
            } if c.header.agent() == pi_grammar::Agent::Claude => out.push(format!(
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
