//! Capabilities: what a case needs ([`capabilities_of`], from its request, cassette and
//! expected stream), the names an implementation may claim ([`CAPABILITIES`], in the order
//! the report's table lists them), and which cases a claim skips ([`missing`]).

use serde_json::Value;

use pi_cassette::Header;

use crate::case::Case;

/// Every capability a case can need, in report order.
pub const CAPABILITIES: &[&str] = &[
    "text",
    "thinking",
    "tools",
    "retry",
    "session",
    "cancel",
    "errors",
    "diagnostics",
    "dialect.snapshot-only",
    "pi-0.73",
    "pi-0.87",
    "pi-1.5",
    "rpc",
    "claude",
    "claude-terminal",
    "claude-2.1",
    "codex",
    "codex-0.169",
    "gemini",
    "gemini-0.61",
];

/// The capabilities a case needs, from its request, its cassette's header and expected stream.
pub fn capabilities_of(case: &Case, header: &Header, messages: &[Value]) -> Vec<String> {
    let has = |t: &str| messages.iter().any(|m| m["type"] == t);
    let mut caps = vec!["text"];
    if has("assistant.thought") {
        caps.push("thinking");
    }
    if messages
        .iter()
        .any(|m| m["type"].as_str().is_some_and(|t| t.starts_with("tool.")))
    {
        caps.push("tools");
    }
    if has("retry.scheduled") {
        caps.push("retry");
    }
    if case.request.session.is_some() {
        caps.push("session");
    }
    if case.request.cancel_after_idle_ms.is_some() {
        caps.push("cancel");
    }
    let claude = case.request.agent.as_deref() == Some("claude");
    if case.request.rpc.is_some() && !claude {
        caps.push("rpc");
    }
    if claude {
        caps.push("claude");
    }
    if case.request.agent.as_deref() == Some("codex") {
        caps.push("codex");
    }
    if case.request.agent.as_deref() == Some("gemini") {
        caps.push("gemini");
    }
    if case.request.stdin.as_deref() == Some("terminal") {
        caps.push("claude-terminal");
    }
    if has("terminal.failed") {
        caps.push("errors");
    }
    if messages
        .iter()
        .any(|m| m.get("invalid_lines").is_some() || m.get("invalid_lines_dropped").is_some())
    {
        caps.push("diagnostics");
    }
    if header.pi.dialect == pi_cassette::Dialect::SnapshotOnly {
        caps.push("dialect.snapshot-only");
    }
    let mut caps: Vec<String> = caps.into_iter().map(str::to_string).collect();
    // One capability per pi (Claude Code, Codex, Gemini CLI) minor release the case was
    // recorded on (`pi-0.87`, `claude-2.1`, `codex-0.169`, `gemini-0.61`).
    // An unverified case (a release newer than every pinned one) needs what the release
    // whose grammar it borrows needs.
    let agent = header.agent_name();
    let named = header.pi.borrowed().unwrap_or(&header.pi.version);
    let version = pi_grammar::Version::parse(named);
    caps.push(version.map_or_else(
        || format!("{agent}-{named}"),
        |v| format!("{agent}-{}.{}", v.major, v.minor),
    ));
    caps
}

/// The cases a claim skips: capabilities needed but not claimed.
pub fn missing(needed: &[String], claimed: &[String]) -> Vec<String> {
    needed
        .iter()
        .filter(|c| !claimed.contains(c))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unclaimed_capabilities_skip() {
        let needed = vec!["text".to_string(), "thinking".to_string()];
        assert_eq!(
            missing(&needed, &["text".into()]),
            vec!["thinking".to_string()]
        );
        assert!(missing(&needed, &["text".into(), "thinking".into()]).is_empty());
    }
}
