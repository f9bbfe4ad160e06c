//! Which CLI wrote a capture: `cassette import` takes pi's `--mode json` stdout (and, with
//! `--mode rpc` or `stream-json`, transcripts of pi's RPC and Claude Code's stream-json); a
//! capture of another agent's stdout is refused by name, from the `type` of its lines, before
//! anything is written (before, a Codex or Gemini CLI capture became a pi cassette full of
//! their lines, exit 0).

/// The first lines of a capture looked at: another agent's output shows itself at once.
pub(crate) const LINES_LOOKED_AT: usize = 64;

/// The agent whose output `line` is, when it is not pi's json mode: `None` for pi's own lines,
/// anything that is not a JSON object with a `type`, and types no other agent writes.
pub(crate) fn foreign(line: &[u8]) -> Option<&'static str> {
    if !line.starts_with(b"{") {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(line).ok()?;
    let has = |k: &str| v.get(k).is_some();
    match v.get("type")?.as_str()? {
        "thread.started" | "turn.started" | "turn.completed" | "turn.failed" | "item.started"
        | "item.updated" | "item.completed" => Some("Codex CLI's `codex exec --json` output"),
        "init" if has("session_id") => Some("Gemini CLI's `--output-format stream-json` output"),
        "message" if has("role") && has("timestamp") => {
            Some("Gemini CLI's `--output-format stream-json` output")
        }
        "tool_use" | "tool_result" if has("tool_id") => {
            Some("Gemini CLI's `--output-format stream-json` output")
        }
        "result" if has("stats") => Some("Gemini CLI's `--output-format stream-json` output"),
        "system" if has("subtype") => Some("Claude Code's `--output-format stream-json` output"),
        "stream_event" => Some("Claude Code's `--output-format stream-json` output"),
        _ => None,
    }
}

/// The one-line refusal for a capture of `what`.
pub(crate) fn refusal(what: &str) -> String {
    format!(
        "is {what}, not pi's: cassette import takes pi's `--mode json` stdout (--mode json), a transcript of pi's `--mode rpc` (--mode rpc) or of Claude Code's stream-json (--mode stream-json); Codex CLI and Gemini CLI captures cannot be imported (record them with `pi-harness record --agent codex|gemini`)"
    )
}

#[cfg(test)]
mod tests {
    use super::foreign;

    #[test]
    fn each_agent_s_lines_are_named_and_pi_s_are_not() {
        for (line, who) in [
            (
                r#"{"type":"thread.started","thread_id":"x"}"#,
                Some("Codex"),
            ),
            (r#"{"type":"item.completed","item":{}}"#, Some("Codex")),
            (
                r#"{"type":"init","timestamp":"t","session_id":"s","model":"m"}"#,
                Some("Gemini"),
            ),
            (
                r#"{"type":"message","timestamp":"t","role":"assistant","content":"hi","delta":true}"#,
                Some("Gemini"),
            ),
            (
                r#"{"type":"result","status":"success","stats":{}}"#,
                Some("Gemini"),
            ),
            (r#"{"type":"system","subtype":"init"}"#, Some("Claude")),
            (r#"{"type":"session","version":3,"id":"x"}"#, None),
            (
                r#"{"type":"message_update","assistantMessageEvent":{}}"#,
                None,
            ),
            (r#"{"type":"agent_end","messages":[]}"#, None),
            (r#"not json"#, None),
        ] {
            let got = foreign(line.as_bytes());
            match who {
                Some(w) => assert!(got.is_some_and(|g| g.starts_with(w)), "{line}: {got:?}"),
                None => assert_eq!(got, None, "{line}"),
            }
        }
    }
}
